//! SVG plots of a report: latency by percentile (HdrHistogram's plot: the
//! x axis is 1/(1-p) on a log scale, so the tail gets the room) and the
//! per-interval p50, p99 and max over time. Plain SVG, no dependency.

use std::fmt::Write as _;

use crate::report::enough::enough;
use crate::report::num::{tick, unit};
use crate::report::sweep::Sweep;
use crate::report::{Metric, Report};

const W: f64 = 900.0;
const H: f64 = 340.0;
const LEFT: f64 = 78.0;
const RIGHT: f64 = 45.0;
/// Room above a plot: the title, then the legend on its own row below it.
const TOP: f64 = 58.0;
/// Room below a plot: the tick labels, then the axis title.
const BOTTOM: f64 = 56.0;
/// The percentile axis ends at 99.9999% (1/(1-p) = 1e6) at most.
const MAX_DECADES: f64 = 6.0;
const PERCENT_LABELS: [&str; 7] = ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%"];

/// A named, coloured curve of (x, y) points.
type Curve<'a> = (&'a str, &'a str, Vec<(f64, f64)>);

/// The percentile curve of a metric: (log10(1/(1-p)), value ms) per bucket.
/// It stops at the highest percentile the count supports, 1 - 1/count
/// (x = log10(count)): the last bucket is drawn there, not at 100%.
pub fn percentile_curve(m: &Metric) -> Vec<(f64, f64)> {
    let total: u64 = m.buckets.iter().map(|b| b.1).sum();
    if total == 0 {
        return Vec::new();
    }
    let end = (total as f64).log10().min(MAX_DECADES);
    let mut out = vec![(0.0, m.min)];
    let mut cum = 0u64;
    for &(upper, count) in &m.buckets {
        cum += count;
        let p = cum as f64 / total as f64;
        let x = if cum == total {
            end
        } else {
            (1.0 / (1.0 - p)).log10().min(end)
        };
        out.push((x, upper.min(m.max)));
    }
    out
}

/// Decades of the percentile axis for these sample counts: enough for the
/// largest (log10 of it, rounded up), 1 to 6.
fn decades_for(counts: impl Iterator<Item = u64>) -> usize {
    let most = counts.max().unwrap_or(0).max(1) as f64;
    (most.log10().ceil() as usize).clamp(1, MAX_DECADES as usize)
}

fn nice_max(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
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

/// Maps (x, y) in data units, with `x` in [x0, x1] and `y` already in
/// [0, 1], to the plot area of the panel at `y0`.
fn to_px(x: f64, x0: f64, x1: f64, y_frac: f64, y0: f64) -> (f64, f64) {
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let span = if x1 > x0 { x1 - x0 } else { 1.0 };
    (
        LEFT + pw * ((x - x0) / span).clamp(0.0, 1.0),
        y0 + TOP + ph * (1.0 - y_frac.clamp(0.0, 1.0)),
    )
}

fn polyline(s: &mut String, pts: &[(f64, f64)], x_max: f64, y_max: f64, y0: f64, color: &str) {
    let px: Vec<(f64, f64)> = pts
        .iter()
        .map(|&(x, y)| to_px(x, 0.0, x_max, y / y_max, y0))
        .collect();
    draw(s, &px, color, false, false);
}

/// A curve through pixel points; `dashed`, and with a marker on each point
/// when `markers` (so a curve of one point still shows).
fn draw(s: &mut String, px: &[(f64, f64)], color: &str, dashed: bool, markers: bool) {
    let d: Vec<String> = px.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
    let dash = if dashed {
        r#" stroke-dasharray="7 5""#
    } else {
        ""
    };
    let _ = writeln!(
        s,
        r#"<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="{}"/>"#,
        d.join(" ")
    );
    if markers {
        for (x, y) in px {
            let _ = writeln!(
                s,
                r#"<circle cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{color}"/>"#
            );
        }
    }
}

/// Axis ticks: (fraction of the axis, label).
type Ticks = [(f64, String)];

/// A panel's title, frame, grid, tick labels and axis titles.
fn frame(
    s: &mut String,
    y0: f64,
    title: &str,
    y_ticks: &Ticks,
    x_ticks: &Ticks,
    axes: (&str, &str),
) {
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let (x_title, y_title) = axes;
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="{:.1}" font-size="15" font-weight="bold">{}</text>"#,
        y0 + 22.0,
        escape(title)
    );
    let _ = writeln!(
        s,
        r##"<rect x="{LEFT}" y="{:.1}" width="{pw:.1}" height="{ph:.1}" fill="none" stroke="#888"/>"##,
        y0 + TOP
    );
    for (frac, label) in y_ticks {
        let py = y0 + TOP + ph * (1.0 - frac);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{label}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            py + 4.0
        );
    }
    for (frac, label) in x_ticks {
        let px = LEFT + pw * frac;
        let _ = writeln!(
            s,
            r#"<text x="{px:.1}" y="{:.1}" font-size="11" text-anchor="middle">{label}</text>"#,
            y0 + TOP + ph + 16.0
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"#,
        LEFT + pw / 2.0,
        y0 + TOP + ph + 38.0,
        escape(x_title)
    );
    let cy = y0 + TOP + ph / 2.0;
    let _ = writeln!(
        s,
        r#"<text x="20" y="{cy:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 20 {cy:.1})">{}</text>"#,
        escape(y_title)
    );
}

/// Linear y ticks: 0, 1/4, .. of `y_max`.
fn linear_ticks(y_max: f64) -> Vec<(f64, String)> {
    (0..=4)
        .map(|i| {
            let f = f64::from(i) / 4.0;
            (f, tick(y_max * f))
        })
        .collect()
}

/// The legend, on its own row under the title, from the left.
fn legend(s: &mut String, y0: f64, items: &[(&str, &str)]) {
    let mut x = LEFT;
    for (name, color) in items {
        let _ = writeln!(
            s,
            r#"<rect x="{x:.1}" y="{:.1}" width="10" height="10" fill="{color}"/><text x="{:.1}" y="{:.1}" font-size="12">{}</text>"#,
            y0 + 33.0,
            x + 14.0,
            y0 + 42.0,
            escape(name)
        );
        x += 14.0 + 7.0 * name.len() as f64 + 18.0;
    }
}

fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Renders the plots of a report as one SVG document: latency by
/// percentile and latency per interval, and for a stream run (`--openai`,
/// TTFT recorded) a third, TTFT, ITL and TPOT by percentile.
///
/// # Example
/// ```
/// # let report: metronome::report::Report = serde_json::from_str(
/// #     &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/report.md"))
/// #         .unwrap().split("```json").nth(1).unwrap().split("```").next().unwrap()).unwrap();
/// let svg = metronome::report::svg::render_svg(&report);
/// assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
/// assert_eq!(svg.matches("<polyline").count(), 2 + 3); // latency, service time; p50, p99, max
/// let mut stream = report.clone();
/// stream.metrics.ttft = stream.metrics.latency.clone();
/// let svg = metronome::report::svg::render_svg(&stream);
/// assert_eq!(svg.matches("<polyline").count(), 2 + 3 + 3); // and TTFT, ITL, TPOT
/// assert!(svg.contains("time to first token"));
/// ```
pub fn render_svg(r: &Report) -> String {
    let mut s = String::new();
    let stream = r.metrics.ttft.count > 0;
    let panels = if stream { 3.0 } else { 2.0 };
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{:.0}" font-family="sans-serif">"#,
        panels * H
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    // 1. Latency by percentile.
    // Service time first, so latency (from the intended time) is drawn on top.
    let mut metrics: Vec<(&str, &str, &Metric)> = vec![
        ("service time", "#1f77b4", &r.metrics.service_time),
        ("latency", "#d62728", &r.metrics.latency),
    ];
    if let Some(c) = &r.metrics.latency_corrected {
        metrics.push(("corrected", "#2ca02c", c));
    }
    let decades = decades_for(metrics.iter().map(|m| m.2.count));
    let series: Vec<Curve<'_>> = metrics
        .iter()
        .map(|&(n, c, m)| (n, c, percentile_curve(m)))
        .collect();
    let y_max = nice_max(
        series
            .iter()
            .flat_map(|(_, _, p)| p.iter().map(|q| q.1))
            .fold(0.0, f64::max),
    );
    let labels: Vec<(f64, String)> = PERCENT_LABELS[..=decades]
        .iter()
        .enumerate()
        .map(|(i, l)| (i as f64 / decades as f64, (*l).to_string()))
        .collect();
    frame(
        &mut s,
        0.0,
        &format!("Latency by percentile — {} ({} model)", r.target, r.model),
        &linear_ticks(y_max),
        &labels,
        (
            "percentile (log scale of 1/(1-p); each curve ends at 1 - 1/count)",
            "latency (ms)",
        ),
    );
    for (_, color, pts) in &series {
        polyline(&mut s, pts, decades as f64, y_max, 0.0, color);
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
                format!("{} s", tick(x_max * f64::from(i) / 4.0)),
            )
        })
        .collect();
    frame(
        &mut s,
        H,
        "Latency per interval (by completion time)",
        &linear_ticks(y_max),
        &labels,
        ("seconds since the measured phase began", "latency (ms)"),
    );
    // p99 only where the interval's successes support it (100 or more).
    type Pick = fn(&crate::report::IntervalReport) -> Option<f64>;
    let picks: [(&str, &str, Pick); 3] = [
        ("p50", "#1f77b4", |i| Some(i.p50)),
        ("p99 (intervals of 100+ samples)", "#ff7f0e", |i| {
            enough(i.ok, 0.99).then_some(i.p99)
        }),
        ("max", "#d62728", |i| Some(i.max)),
    ];
    // A marker per interval when there are few (a single interval is a point).
    let markers = r.intervals.len() <= 60;
    for (_, color, pick) in picks {
        let px: Vec<(f64, f64)> = r
            .intervals
            .iter()
            .filter_map(|i| {
                let v = pick(i)?;
                Some(to_px(i.start_s + width / 2.0, 0.0, x_max, v / y_max, H))
            })
            .collect();
        draw(&mut s, &px, color, false, markers);
    }
    let items: Vec<(&str, &str)> = picks.iter().map(|(n, c, _)| (*n, *c)).collect();
    legend(&mut s, H, &items);
    if stream {
        stream_panel(&mut s, r, 2.0 * H);
    }
    let _ = writeln!(s, "</svg>");
    s
}

/// The stream panel at `y0`: TTFT, ITL (per token) and TPOT by percentile.
fn stream_panel(s: &mut String, r: &Report, y0: f64) {
    let m = &r.metrics;
    let metrics: [(&str, &str, &Metric); 3] = [
        ("TTFT", "#9467bd", &m.ttft),
        ("ITL (per token)", "#ff7f0e", &m.itl),
        ("TPOT", "#2ca02c", &m.tpot),
    ];
    let decades = decades_for(metrics.iter().map(|m| m.2.count));
    let series: Vec<Curve<'_>> = metrics
        .iter()
        .map(|&(n, c, m)| (n, c, percentile_curve(m)))
        .collect();
    let y_max = nice_max(
        series
            .iter()
            .flat_map(|(_, _, p)| p.iter().map(|q| q.1))
            .fold(0.0, f64::max),
    );
    let labels: Vec<(f64, String)> = PERCENT_LABELS[..=decades]
        .iter()
        .enumerate()
        .map(|(i, l)| (i as f64 / decades as f64, (*l).to_string()))
        .collect();
    frame(
        s,
        y0,
        "Streams by percentile: time to first token, inter-token latency, time per output token",
        &linear_ticks(y_max),
        &labels,
        (
            "percentile (log scale of 1/(1-p); each curve ends at 1 - 1/count)",
            "ms",
        ),
    );
    for (_, color, pts) in &series {
        polyline(s, pts, decades as f64, y_max, y0, color);
    }
    let items: Vec<(&str, &str)> = series.iter().map(|(n, c, _)| (*n, *c)).collect();
    legend(s, y0, &items);
}

/// Renders a sweep: latency p50, p99 and p99.9 against offered rate (y on
/// a log scale: latency past the knee is orders of magnitude higher), one
/// marker per step, the knee marked by a dashed line.
///
/// # Example
/// ```
/// # let report: metronome::report::Report = serde_json::from_str(
/// #     &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/report.md"))
/// #         .unwrap().split("```json").nth(1).unwrap().split("```").next().unwrap()).unwrap();
/// use metronome::report::sweep::{Sweep, SCHEMA};
/// let mut fast = report.clone();
/// fast.offered_rps = 100.0;
/// let s = Sweep { schema: SCHEMA.into(), steps: vec![fast, report], knee: Some(1), auto: None, continuous: None };
/// let svg = metronome::report::svg::render_sweep_svg(&s);
/// assert_eq!(svg.matches("<polyline").count(), 3);
/// assert!(svg.contains(">knee: "));
/// ```
pub fn render_sweep_svg(sw: &Sweep) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H:.0}" font-family="sans-serif">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    // Each quantile only where the step's count supports it: p99 from 100
    // samples, p99.9 from 1000 (HdrHistogram's 1 - 1/count rule).
    // (name, colour, quantile, its value)
    type Pick = (&'static str, &'static str, f64, fn(&Metric) -> f64);
    let picks: [Pick; 3] = [
        ("p50", "#1f77b4", 0.5, |m| m.p50),
        ("p99 (steps of 100+ samples)", "#ff7f0e", 0.99, |m| m.p99),
        ("p99.9 (1000+ samples)", "#d62728", 0.999, |m| m.p999),
    ];
    let supported = |m: &Metric, q: f64| enough(m.count, q);
    let values: Vec<f64> = sw
        .steps
        .iter()
        .flat_map(|r| {
            picks
                .iter()
                .filter(|p| supported(&r.metrics.latency, p.2))
                .map(move |p| (p.3)(&r.metrics.latency))
        })
        .filter(|v| *v > 0.0)
        .collect();
    let lo = values
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .log10()
        .floor();
    let hi = values
        .iter()
        .copied()
        .fold(0.0, f64::max)
        .log10()
        .ceil()
        .max(lo + 1.0);
    let (lo, hi) = if values.is_empty() {
        (-1.0, 0.0)
    } else {
        (lo, hi)
    };
    let y_frac = |v: f64| (v.max(10f64.powf(lo)).log10() - lo) / (hi - lo);
    let x_max = nice_max(sw.steps.iter().map(|r| r.offered_rps).fold(0.0, f64::max));
    let decades = (hi - lo) as i32;
    let y_ticks: Vec<(f64, String)> = (0..=decades)
        .map(|i| {
            let v = 10f64.powi(lo as i32 + i);
            (f64::from(i) / f64::from(decades), tick(v))
        })
        .collect();
    let x_ticks: Vec<(f64, String)> = (0..=4)
        .map(|i| {
            let f = f64::from(i) / 4.0;
            (f, tick(x_max * f))
        })
        .collect();
    frame(
        &mut s,
        0.0,
        "Latency against offered rate (sweep)",
        &y_ticks,
        &x_ticks,
        ("offered rate (requests/s)", "latency (ms, log scale)"),
    );
    for (i, &(_, color, q, pick)) in picks.iter().enumerate() {
        let px: Vec<(f64, f64)> = sw
            .steps
            .iter()
            .filter(|r| supported(&r.metrics.latency, q))
            .map(|r| {
                let y = y_frac(pick(&r.metrics.latency));
                to_px(r.offered_rps, 0.0, x_max, y, 0.0)
            })
            .collect();
        // p99.9 dashed: where it equals p99 (few samples), both show.
        draw(&mut s, &px, color, i == 2, true);
    }
    if let Some(r) = sw.knee.and_then(|k| sw.steps.get(k)) {
        let (x, top) = to_px(r.offered_rps, 0.0, x_max, 1.0, 0.0);
        let (_, bottom) = to_px(r.offered_rps, 0.0, x_max, 0.0, 0.0);
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{bottom:.1}" stroke="#555" stroke-width="1.5" stroke-dasharray="6 4"/><text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end">knee: {}</text>"##,
            x - 4.0,
            top + 14.0,
            unit(r.offered_rps, "req/s")
        );
    }
    let items: Vec<(&str, &str)> = picks.iter().map(|(n, c, _, _)| (*n, *c)).collect();
    legend(&mut s, 0.0, &items);
    let _ = writeln!(s, "</svg>");
    s
}

#[cfg(test)]
mod tests {
    use crate::report::sweep::{Sweep, SCHEMA};
    use crate::report::Report;

    /// The sample report of docs/report.md.
    fn sample() -> Report {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/report.md"))
            .expect("read docs/report.md");
        let json = doc
            .split("```json")
            .nth(1)
            .and_then(|t| t.split("```").next());
        serde_json::from_str(json.expect("a json block")).expect("the sample report")
    }

    /// The sweep plot's labels go through the shared formatter: ticks
    /// thousands-separated without trailing zeros, the knee with its unit.
    #[test]
    fn sweep_labels_are_numbers_for_people() {
        let mut slow = sample();
        slow.offered_rps = 1000.0;
        let mut fast = sample();
        fast.offered_rps = 2000.0;
        let s = Sweep {
            schema: SCHEMA.into(),
            steps: vec![slow, fast],
            knee: Some(1),
            auto: None,
            continuous: None,
        };
        let svg = super::render_sweep_svg(&s);
        for label in ["0", "500", "1,000", "1,500", "2,000"] {
            assert!(
                svg.contains(&format!(">{label}</text>")),
                "tick {label}: {svg}"
            );
        }
        assert!(svg.contains(">knee: 2,000 req/s</text>"), "{svg}");
        assert!(!svg.contains(">1000<") && !svg.contains(">2000<"), "{svg}");
    }
}
