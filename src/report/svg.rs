//! SVG plots of a report: latency by percentile (HdrHistogram's plot: the
//! x axis is 1/(1-p) on a log scale, so the tail gets the room) and the
//! per-interval p50, p99 and max over time. Plain SVG, no dependency.

use std::fmt::Write as _;

use crate::report::{Metric, Report};

const W: f64 = 900.0;
const H: f64 = 320.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 45.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
/// The percentile axis ends at 99.9999% (1/(1-p) = 1e6).
const MAX_DECADES: f64 = 6.0;

/// A named, coloured curve of (x, y) points.
type Curve<'a> = (&'a str, &'a str, Vec<(f64, f64)>);

/// The percentile curve of a metric: (log10(1/(1-p)), value ms) per bucket.
pub fn percentile_curve(m: &Metric) -> Vec<(f64, f64)> {
    let total: u64 = m.buckets.iter().map(|b| b.1).sum();
    if total == 0 {
        return Vec::new();
    }
    let mut out = vec![(0.0, m.min)];
    let mut cum = 0u64;
    for &(upper, count) in &m.buckets {
        cum += count;
        let p = cum as f64 / total as f64;
        let x = if cum == total {
            MAX_DECADES
        } else {
            (1.0 / (1.0 - p)).log10().min(MAX_DECADES)
        };
        out.push((x, upper.min(m.max)));
    }
    out
}

fn nice_max(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let mag = 10f64.powf(v.log10().floor());
    for step in [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0] {
        if v <= step * mag {
            return step * mag;
        }
    }
    10.0 * mag
}

fn polyline(s: &mut String, pts: &[(f64, f64)], x_max: f64, y_max: f64, y0: f64, color: &str) {
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let mut d = String::new();
    for &(x, y) in pts {
        let px = LEFT + pw * (x / x_max).clamp(0.0, 1.0);
        let py = y0 + TOP + ph * (1.0 - (y / y_max).clamp(0.0, 1.0));
        let _ = write!(d, "{px:.1},{py:.1} ");
    }
    let _ = writeln!(
        s,
        r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
        d.trim_end()
    );
}

fn frame(s: &mut String, y0: f64, title: &str, y_max: f64, x_labels: &[(f64, String)]) {
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="{:.1}" font-size="15" font-weight="bold">{title}</text>"#,
        y0 + 24.0
    );
    let _ = writeln!(
        s,
        r##"<rect x="{LEFT}" y="{:.1}" width="{pw:.1}" height="{ph:.1}" fill="none" stroke="#888"/>"##,
        y0 + TOP
    );
    for i in 0..=4 {
        let v = y_max * f64::from(i) / 4.0;
        let py = y0 + TOP + ph * (1.0 - f64::from(i) / 4.0);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{v:.3}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            py + 4.0
        );
    }
    for (frac, label) in x_labels {
        let px = LEFT + pw * frac;
        let _ = writeln!(
            s,
            r#"<text x="{px:.1}" y="{:.1}" font-size="11" text-anchor="middle">{label}</text>"#,
            y0 + TOP + ph + 16.0
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="16" y="{:.1}" font-size="11" transform="rotate(-90 16 {:.1})">ms</text>"#,
        y0 + TOP + ph / 2.0,
        y0 + TOP + ph / 2.0
    );
}

fn legend(s: &mut String, y0: f64, items: &[(&str, &str)]) {
    let item_width = |name: &str| 14.0 + 7.5 * name.len() as f64 + 14.0;
    let mut x = W - RIGHT - items.iter().map(|(n, _)| item_width(n)).sum::<f64>();
    for (name, color) in items {
        let _ = writeln!(
            s,
            r#"<rect x="{x:.1}" y="{:.1}" width="10" height="10" fill="{color}"/><text x="{:.1}" y="{:.1}" font-size="12">{name}</text>"#,
            y0 + 14.0,
            x + 14.0,
            y0 + 23.0
        );
        x += item_width(name);
    }
}

/// Renders the two plots of a report as one SVG document.
///
/// # Example
/// ```
/// # let report: metronome::report::Report = serde_json::from_str(
/// #     &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/report.md"))
/// #         .unwrap().split("```json").nth(1).unwrap().split("```").next().unwrap()).unwrap();
/// let svg = metronome::report::svg::render_svg(&report);
/// assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
/// assert_eq!(svg.matches("<polyline").count(), 2 + 3); // latency, service time; p50, p99, max
/// ```
pub fn render_svg(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{:.0}" font-family="sans-serif">"#,
        2.0 * H
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    // 1. Latency by percentile.
    // Service time first, so latency (from the intended time) is drawn on top.
    let mut series: Vec<Curve<'_>> = vec![
        (
            "service time",
            "#1f77b4",
            percentile_curve(&r.metrics.service_time),
        ),
        ("latency", "#d62728", percentile_curve(&r.metrics.latency)),
    ];
    if let Some(c) = &r.metrics.latency_corrected {
        series.push(("corrected", "#2ca02c", percentile_curve(c)));
    }
    let y_max = nice_max(
        series
            .iter()
            .flat_map(|(_, _, p)| p.iter().map(|q| q.1))
            .fold(0.0, f64::max),
    );
    let labels: Vec<(f64, String)> = ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%"]
        .iter()
        .enumerate()
        .map(|(i, l)| (i as f64 / MAX_DECADES, (*l).to_string()))
        .collect();
    frame(
        &mut s,
        0.0,
        &format!("Latency by percentile — {} ({} model)", r.target, r.model),
        y_max,
        &labels,
    );
    for (_, color, pts) in &series {
        polyline(&mut s, pts, MAX_DECADES, y_max, 0.0, color);
    }
    let items: Vec<(&str, &str)> = series.iter().map(|(n, c, _)| (*n, *c)).collect();
    legend(&mut s, 0.0, &items);
    // 2. Per interval over time.
    let n = r.intervals.len().max(1) as f64;
    let width = r
        .intervals
        .get(1)
        .map_or(1.0, |b| b.start_s - r.intervals[0].start_s);
    let x_max = n * width;
    let y_max = nice_max(r.intervals.iter().map(|i| i.max).fold(0.0, f64::max));
    let labels: Vec<(f64, String)> = (0..=4)
        .map(|i| {
            (
                f64::from(i) / 4.0,
                format!("{:.1}s", x_max * f64::from(i) / 4.0),
            )
        })
        .collect();
    frame(
        &mut s,
        H,
        "Latency per interval (by completion time)",
        y_max,
        &labels,
    );
    for (name, color, pick) in [
        (
            "p50",
            "#1f77b4",
            (|i: &crate::report::IntervalReport| i.p50) as fn(&_) -> f64,
        ),
        ("p99", "#ff7f0e", |i| i.p99),
        ("max", "#d62728", |i| i.max),
    ] {
        let pts: Vec<(f64, f64)> = r
            .intervals
            .iter()
            .map(|i| (i.start_s + width / 2.0, pick(i)))
            .collect();
        polyline(&mut s, &pts, x_max, y_max, H, color);
        let _ = name;
    }
    legend(
        &mut s,
        H,
        &[("p50", "#1f77b4"), ("p99", "#ff7f0e"), ("max", "#d62728")],
    );
    let _ = writeln!(s, "</svg>");
    s
}
