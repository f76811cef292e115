//! Checks of a report's page against its JSON: every chart drawn with as
//! many points as the report has values, one hover per chart equal to the
//! JSON's exact value, the zoom and the keyboard steps.

use super::*;

/// The number (as printed: digits, ',', '.', '-', '%') right after
/// `label` in `text`.
pub(super) fn after(text: &str, label: &str) -> String {
    let at = text
        .find(label)
        .unwrap_or_else(|| panic!("no '{label}' in hover text '{text}'"))
        + label.len();
    let t: String = text[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || ",.-%".contains(*c))
        .collect();
    t.trim_end_matches([',', '.']).to_string()
}

/// The point a percentile curve draws at `index`: the min first, then each
/// bucket's upper bound clamped to the max.
fn curve_value(m: &Metric, index: usize) -> f64 {
    if index == 0 {
        m.min
    } else {
        m.buckets[index - 1].0.min(m.max)
    }
}

pub(super) type Series = Vec<(String, usize)>;

/// The charts a report's page draws: id, and each series' name and points.
pub(super) fn expected_report_charts(r: &Report) -> Vec<(String, Series)> {
    let curve = |name: &str, m: &Metric| (name.to_string(), m.buckets.len() + 1);
    let pct = |ms: Vec<(&str, &Metric)>| -> Series {
        ms.into_iter()
            .filter(|(_, m)| m.count > 0)
            .map(|(n, m)| curve(n, m))
            .collect()
    };
    let m = &r.metrics;
    let mut core = vec![
        ("latency", &m.latency),
        ("service time", &m.service_time),
        ("send lag", &m.send_lag),
    ];
    if let Some(c) = &m.latency_corrected {
        core.push(("latency (CO-corrected)", c));
    }
    let mut out = vec![("pct-latency".to_string(), pct(core))];
    if !r.by_request.is_empty() {
        out.push((
            "pct-by-request".into(),
            pct(r
                .by_request
                .iter()
                .map(|q| (q.name.as_str(), &q.latency))
                .collect()),
        ));
    }
    if !r.stages.is_empty() {
        let offered: usize = r
            .stages
            .iter()
            .map(|s| {
                let ramped =
                    r.arrival.ramp.as_deref() == Some("exponential") && s.start_rps != s.target_rps;
                if ramped {
                    17
                } else {
                    2
                }
            })
            .sum();
        let n = r.intervals.len();
        out.push((
            "stages-rate".into(),
            vec![
                ("offered".into(), offered),
                ("achieved (sent/s)".into(), n),
                ("ok/s".into(), n),
            ],
        ));
    }
    if r.workload.is_some() || m.ttft.count > 0 {
        out.push((
            "pct-stream-first".into(),
            pct(vec![
                ("TTFT", &m.ttft),
                ("TTFAT", &m.ttfat),
                ("E2E latency", &m.latency),
            ]),
        ));
        out.push((
            "pct-stream-tokens".into(),
            pct(vec![
                ("ITL (per token)", &m.itl),
                ("ITL (per chunk)", &m.itl_chunk),
                ("TPOT", &m.tpot),
                ("tail", &m.tail),
            ]),
        ));
        if let Some(w) = &r.workload {
            for (id, d) in [
                ("dist-input", &w.input_tokens),
                ("dist-output", &w.output_tokens),
            ] {
                if d.count > 0 {
                    out.push((id.into(), vec![("requests".into(), d.buckets.len())]));
                }
            }
        }
        for c in &r.compat {
            for (suffix, tps) in [("", false), ("-tps", true)] {
                out.push((
                    format!("pct-compat-{}{suffix}", c.peer),
                    pct(c
                        .metrics
                        .iter()
                        .filter(|(k, _)| k.contains("throughput") == tps)
                        .map(|(k, m)| (k.as_str(), m))
                        .collect()),
                ));
            }
        }
    }
    let n = rows(r).len();
    let ts = |names: &[&str]| -> Series { names.iter().map(|s| (s.to_string(), n)).collect() };
    // Latency and send-lag quantiles only where the interval's values are
    // enough for them (the one rule).
    let enough = |q: f64, of: fn(&IntervalReport) -> u64| enough_rows(r, q, of).len();
    out.push((
        "ts-latency".into(),
        vec![
            ("p50".into(), enough(0.5, |v| v.ok)),
            ("p99".into(), enough(0.99, |v| v.ok)),
            ("max".into(), enough(0.0, |v| v.ok)),
        ],
    ));
    if r.stages.is_empty() && r.arrival.trace.is_none() {
        out.push(("ts-rate".into(), ts(&["sent/s", "ok/s"])));
    } else {
        out.push(("ts-rate".into(), ts(&["sent/s", "ok/s", "offered/s"])));
    }
    out.push((
        "ts-errors".into(),
        ts(&["errors", "dropped", "unsent", "waited"]),
    ));
    out.push((
        "ts-lag".into(),
        vec![("send lag p99".into(), enough(0.99, |v| v.sent))],
    ));
    out.push(("ts-cpu".into(), ts(&["work_cpu"])));
    out.extend(flow_charts(r));
    // A chart with nothing to draw is a sentence instead.
    out.retain(|(_, series)| series.iter().any(|(_, n)| *n > 0));
    out
}

/// The charts of the per-interval stream series, in-flight counts and
/// bytes (issue 31), after the others of "Over time": TTFT over the rows
/// that have one, the rest over every row.
fn flow_charts(r: &Report) -> Vec<(String, Series)> {
    let n = rows(r).len();
    let ts =
        |names: &[&str], n: usize| -> Series { names.iter().map(|s| (s.to_string(), n)).collect() };
    let mut out = Vec::new();
    if n > 0 && (r.workload.is_some() || r.metrics.ttft.count > 0) {
        let with = ttft_rows(r).len();
        if with > 0 {
            out.push(("ts-ttft".into(), ts(&["TTFT p50", "TTFT p99"], with)));
        }
        if rows(r)[0].output_tokens_per_s.is_some() {
            out.push(("ts-tokens".into(), ts(&["tokens/s"], n)));
        }
    }
    if n > 0 {
        out.push(("ts-inflight".into(), ts(&["in flight"], n)));
        if r.transfer.is_some() {
            out.push(("ts-transfer".into(), ts(&["received/s", "sent/s"], n)));
        }
    }
    out
}

/// The rows series `si` of the time-series chart `id` draws where not every
/// row: the latency quantiles' and the send lag's, by the one rule.
fn series_rows(r: &Report, id: &str, si: usize) -> Option<Vec<usize>> {
    match (id, si) {
        ("ts-latency", 0) => Some(enough_rows(r, 0.5, |v| v.ok)),
        ("ts-latency", 1) => Some(enough_rows(r, 0.99, |v| v.ok)),
        ("ts-latency", _) => Some(enough_rows(r, 0.0, |v| v.ok)),
        ("ts-lag", 0) => Some(enough_rows(r, 0.99, |v| v.sent)),
        ("ts-lag", _) => Some(Vec::new()),
        _ => None,
    }
}

/// The rows whose values (`of`: `ok` for latency, `sent` for send lag) are
/// enough for the quantile `q`: the points of its series.
fn enough_rows(r: &Report, q: f64, of: fn(&IntervalReport) -> u64) -> Vec<usize> {
    let rows = rows(r);
    (0..rows.len())
        .filter(|&i| metronome::report::enough::enough(of(rows[i]), q))
        .collect()
}

/// The rows the time series draw: the schedule's, then the drain's
/// (issue 38: page.js charts both).
fn rows(r: &Report) -> Vec<&metronome::report::IntervalReport> {
    r.intervals.iter().chain(&r.drain).collect()
}

/// The rows with a TTFT, the points of the TTFT chart.
fn ttft_rows(r: &Report) -> Vec<usize> {
    (0..rows(r).len())
        .filter(|&i| rows(r)[i].ttft_p50_ms.is_some())
        .collect()
}

/// The metric behind series `si` of a percentile chart.
fn pct_metric<'a>(r: &'a Report, chart: &str, si: usize) -> &'a Metric {
    let m = &r.metrics;
    let all: Vec<&Metric> = match chart {
        "pct-latency" => {
            let mut v = vec![&m.latency, &m.service_time, &m.send_lag];
            v.extend(m.latency_corrected.as_ref());
            v
        }
        "pct-stream-first" => vec![&m.ttft, &m.ttfat, &m.latency],
        "pct-stream-tokens" => vec![&m.itl, &m.itl_chunk, &m.tpot, &m.tail],
        "pct-by-request" => r.by_request.iter().map(|q| &q.latency).collect(),
        other => match other.strip_prefix("pct-compat-") {
            Some(peer) => {
                let (peer, tps) = match peer.strip_suffix("-tps") {
                    Some(p) => (p, true),
                    None => (peer, false),
                };
                r.compat
                    .iter()
                    .find(|c| c.peer == peer)
                    .unwrap()
                    .metrics
                    .iter()
                    .filter(|(k, _)| k.contains("throughput") == tps)
                    .map(|(_, m)| m)
                    .collect()
            }
            None => panic!("not a percentile chart: {other}"),
        },
    };
    all.into_iter().filter(|m| m.count > 0).nth(si).unwrap()
}

/// The stages' offered rate at each stage's ends (and 15 points within an
/// exponential ramp): (seconds since the measured phase, req/s), this
/// shard's share, computed from the JSON as the page must.
pub(super) fn stage_points(r: &Report) -> Vec<(f64, f64)> {
    let n = shard_count(r);
    let exp = r.arrival.ramp.as_deref() == Some("exponential");
    let mut out = Vec::new();
    for s in &r.stages {
        let k = if exp && s.start_rps != s.target_rps {
            16
        } else {
            1
        };
        for j in 0..=k {
            let f = j as f64 / k as f64;
            let t = s.from_s + (s.until_s - s.from_s) * f;
            let rate = if s.start_rps == s.target_rps {
                s.start_rps
            } else if exp && s.start_rps > 0.0 && s.target_rps > 0.0 {
                s.start_rps * (s.target_rps / s.start_rps).powf(f)
            } else {
                s.start_rps + (s.target_rps - s.start_rps) * f
            };
            out.push((t - r.warmup_s, rate / n));
        }
    }
    out
}

/// N of a shard "K/N" report, else 1.
fn shard_count(r: &Report) -> f64 {
    match r.shard.split_once('/') {
        Some((k, n)) if k.parse::<u32>().is_ok() => n.parse().unwrap_or(1.0),
        _ => 1.0,
    }
}

/// The offered rate of interval `i` for a run whose rate moves: the mean
/// of the stages' linear ramps over the interval (a trace: its due
/// requests per second); `None` for a steady rate.
pub(super) fn offered_in_interval(r: &Report, i: usize, width: f64) -> Option<f64> {
    let v = &rows(r)[i];
    if r.arrival.trace.is_some() && r.stages.is_empty() {
        return Some(v.scheduled as f64 / width);
    }
    if r.stages.is_empty() {
        return None;
    }
    assert_ne!(
        r.arrival.ramp.as_deref(),
        Some("exponential"),
        "linear only here"
    );
    let (a, b) = (r.warmup_s + v.start_s, r.warmup_s + v.start_s + width);
    let mut sum = 0.0;
    for s in &r.stages {
        let (x, y) = (a.max(s.from_s), b.min(s.until_s));
        if y <= x {
            continue;
        }
        let rate = |t: f64| {
            let f = ((t - s.from_s) / (s.until_s - s.from_s)).clamp(0.0, 1.0);
            s.start_rps + (s.target_rps - s.start_rps) * f
        };
        sum += (y - x) * (rate(x) + rate(y)) / 2.0;
    }
    Some(sum / width / shard_count(r))
}

/// The hover text of one point of a report chart equals the JSON's values.
pub(super) fn check_report_hover(r: &Report, chart: &str, si: usize, i: usize, text: &str) {
    // A figure (the shared rule) and a count (thousands separated).
    let eq = |label: &str, want: f64| {
        let got = after(text, label);
        assert_eq!(got, fnum(want), "{chart} point {i}: '{label}' in '{text}'");
    };
    let eqn = |label: &str, want: u64| {
        let got = after(text, label);
        assert_eq!(
            got,
            fcount(want),
            "{chart} point {i}: '{label}' in '{text}'"
        );
    };
    let width = if r.intervals.len() > 1 {
        r.intervals[1].start_s - r.intervals[0].start_s
    } else {
        r.duration_s
    };
    match chart {
        c if c.starts_with("pct-") => {
            let m = pct_metric(r, c, si);
            let label = if i == 0 { "min " } else { ": " };
            eq(label, curve_value(m, i));
        }
        "ts-latency" => {
            let q = [0.5, 0.99, 0.0][si];
            let v = &rows(r)[enough_rows(r, q, |v| v.ok)[i]];
            eq("interval ", v.start_s);
            let shown = |label: &str, q: f64, want: f64| {
                assert_eq!(
                    after(text, label),
                    fq(v.ok, q, want),
                    "{chart} point {i}: '{label}' in '{text}'"
                );
            };
            shown("p50 ", 0.5, v.p50);
            shown("p99 ", 0.99, v.p99);
            shown("max ", 0.0, v.max);
            eqn("ok ", v.ok);
        }
        "ts-rate" => {
            let v = &rows(r)[i];
            eqn("sent ", v.sent);
            eqn("ok ", v.ok);
            eq("sent/s ", v.sent as f64 / width);
            eq("ok/s ", v.ok as f64 / width);
            if let Some(o) = offered_in_interval(r, i, width) {
                eq("offered ", o);
            }
        }
        "stages-rate" => {
            // Series 0 is the offered rate at the stages' ends; 1 and 2
            // the intervals' sent/s and ok/s.
            if si == 0 {
                let (x, y) = stage_points(r)[i];
                eq(" · offered ", y);
                assert!(text.contains(&format!("{} s", fnum(x))), "{text}");
            } else {
                let v = &r.intervals[i];
                let n = if si == 1 { v.sent } else { v.ok };
                let label = if si == 1 {
                    "achieved (sent/s) "
                } else {
                    "ok/s "
                };
                eq(label, n as f64 / width);
            }
        }
        "ts-errors" => {
            let v = &rows(r)[i];
            eqn("errors ", v.errors);
            eqn("dropped ", v.dropped);
            eqn("unsent ", v.unsent);
            eqn("waited ", v.waited);
        }
        "ts-lag" => eq(
            "send lag p99 ",
            rows(r)[enough_rows(r, 0.99, |v| v.sent)[i]].send_lag_p99,
        ),
        "ts-ttft" => {
            let v = &rows(r)[ttft_rows(r)[i]];
            eq("interval ", v.start_s);
            eq("TTFT p50 ", v.ttft_p50_ms.unwrap());
            eq("p99 ", v.ttft_p99_ms.unwrap());
            eq("max ", v.ttft_max_ms.unwrap());
        }
        "ts-tokens" => eq("tokens/s ", rows(r)[i].output_tokens_per_s.unwrap()),
        "ts-inflight" => eqn("in flight at its end ", rows(r)[i].in_flight),
        "ts-transfer" => {
            // Byte counts by the library's formatter: "received 3.080 KiB".
            use metronome::report::num::bytes;
            let v = &rows(r)[i];
            for (label, n) in [("received ", v.bytes_received), ("sent ", v.bytes_sent)] {
                let want = format!("{label}{}", bytes(n));
                assert!(
                    text.contains(&want),
                    "{chart} point {i}: '{want}' in '{text}'"
                );
            }
        }
        "ts-cpu" => eq("work_cpu ", rows(r)[i].work_cpu),
        "dist-input" | "dist-output" => {
            let w = r.workload.as_ref().unwrap();
            let d = if chart == "dist-input" {
                &w.input_tokens
            } else {
                &w.output_tokens
            };
            eqn("tokens ≤ ", d.buckets[i].0);
            eqn(": ", d.buckets[i].1);
        }
        other => panic!("no hover check for {other}"),
    }
}

pub(super) fn chart_list(check: &Value) -> Vec<(String, Series)> {
    check["charts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let series = c["series"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    (
                        s["name"].as_str().unwrap().to_string(),
                        s["points"].as_u64().unwrap() as usize,
                    )
                })
                .collect();
            (c["id"].as_str().unwrap().to_string(), series)
        })
        .collect()
}

/// What every page must show: no error, no request, a self-check.
pub(super) fn check_clean(check: &Value, page: &Path) {
    assert_eq!(check["ok"], true, "{}: {check}", page.display());
    assert_eq!(
        check["errors"].as_array().unwrap().len(),
        0,
        "{}: {}",
        page.display(),
        check["errors"]
    );
    assert_eq!(
        check["csp"].as_array().unwrap().len(),
        0,
        "{}: {}",
        page.display(),
        check["csp"]
    );
    assert_eq!(check["resources"], 0, "{}: requests made", page.display());
}

/// The hovers of the self-check: (chart, series, index, text); each landed
/// on a point.
pub(super) fn hovers(check: &Value) -> Vec<(String, usize, usize, String)> {
    check["hovers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let (si, i) = (h["series"].as_i64().unwrap(), h["index"].as_i64().unwrap());
            assert!(si >= 0 && i >= 0, "a hover that found no point: {h}");
            (
                h["chart"].as_str().unwrap().to_string(),
                si as usize,
                i as usize,
                h["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The self-check's drag across the middle third of the time series:
/// every chart of the group zoomed to that third, drawing the intervals
/// inside it and one neighbour each side; Reset draws them all again.
pub(super) fn check_zoom(r: &Report, check: &Value) {
    let z = &check["zoom"];
    let iv = rows(r);
    let width = if iv.len() > 1 {
        iv[1].start_s - iv[0].start_s
    } else {
        r.duration_s
    };
    let end = iv.last().unwrap().start_s + width;
    let f = |v: &Value| v.as_f64().unwrap();
    let (d0, d1) = (f(&z["domain"][0]), f(&z["domain"][1]));
    assert_eq!(f(&z["full"][1]), end, "{z}");
    // Mouse events carry whole CSS pixels: within a few of the thirds.
    for (got, want) in [(d0, end / 3.0), (d1, 2.0 * end / 3.0)] {
        assert!(
            (got - want).abs() <= 0.005 * end,
            "zoomed to {d0}..{d1} of {end}"
        );
    }
    // The points drawn of rows `of`: those inside the domain, and one
    // neighbour each side.
    let visible = |of: &[usize]| {
        let xs: Vec<f64> = of.iter().map(|&i| iv[i].start_s + width / 2.0).collect();
        (0..xs.len())
            .filter(|&i| {
                let x = xs[i];
                let inside = x >= d0 && x <= d1;
                let before = i + 1 < xs.len() && xs[i + 1] >= d0 && x < d0;
                let after = i > 0 && xs[i - 1] <= d1 && x > d1;
                inside || before || after
            })
            .count()
    };
    let all: Vec<usize> = (0..iv.len()).collect();
    // A chart whose series have no row with enough values is a sentence.
    let mut ts: Vec<&str> = ["ts-latency", "ts-rate", "ts-errors", "ts-lag", "ts-cpu"]
        .into_iter()
        .filter(|id| (0..3).any(|si| series_rows(r, id, si).map_or(true, |rows| !rows.is_empty())))
        .collect();
    let flow = flow_charts(r);
    ts.extend(flow.iter().map(|(id, _)| id.as_str()));
    // The TTFT chart draws the rows that have one (a drain's row may not).
    let ttft = ttft_rows(r);
    for key in ["charts", "reset"] {
        let charts = z[key].as_array().unwrap();
        let ids: Vec<&str> = charts.iter().map(|c| c["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ts);
        for c in charts {
            let id = c["id"].as_str().unwrap();
            for (si, n) in c["points"].as_array().unwrap().iter().enumerate() {
                // The latency and send-lag series: the rows with enough
                // values (the one rule); TTFT: the rows with one.
                let of = match series_rows(r, id, si) {
                    Some(rows) => rows,
                    None if id == "ts-ttft" => ttft.clone(),
                    None => all.clone(),
                };
                let want = if key == "charts" {
                    visible(&of)
                } else {
                    of.len()
                };
                assert_eq!(n.as_u64().unwrap() as usize, want, "{key}: {c}");
            }
        }
    }
}

/// ArrowRight on the focused time series moves the read-out from the
/// hovered interval to the next one (or stays on the last), with its exact
/// values.
pub(super) fn check_keyboard(r: &Report, check: &Value, hs: &[(String, usize, usize, String)]) {
    let k = &check["keyboard"];
    let chart = k["chart"].as_str().unwrap();
    let (_, _, from, _) = hs.iter().find(|h| h.0 == chart).unwrap();
    let i = k["index"].as_u64().unwrap() as usize;
    let n = series_rows(r, chart, 0).map_or(rows(r).len(), |rows| rows.len());
    assert_eq!(i, (from + 1).min(n - 1), "{k}");
    check_report_hover(r, chart, 0, i, k["text"].as_str().unwrap());
}
