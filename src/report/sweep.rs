//! The `metronome.sweep/v1` document that `metronome sweep` writes: one
//! report per offered rate, the knee (the first step that did not keep
//! up), and its table. The command that runs a sweep is
//! [`crate::sweep`]; this is only the saved format and its rendering.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::enough::enough;
use super::num::{count, num, tick, unit};
use super::{Metric, Report};

/// The schema name of a sweep's JSON.
pub const SCHEMA: &str = "metronome.sweep/v1";

/// A whole sweep: one report per step, in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sweep {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The reports, one per offered rate.
    pub steps: Vec<Report>,
    /// Index of the first step that did not keep up (see [`fell_behind`]),
    /// if any.
    pub knee: Option<usize>,
    /// `sweep --auto`: the two probes that placed the steps (absent
    /// otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto: Option<AutoProbes>,
    /// `sweep --stages`: the one continuous run whose stages are the steps
    /// (then [`Sweep::steps`] is empty and [`Sweep::knee`] indexes the
    /// run's `stages`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuous: Option<Box<Report>>,
}

/// What `sweep --auto` measured before its steps, as guidellm's sweep
/// does: the rate one request at a time sustains and the rate as many as
/// the cap allows sustain; the steps are evenly spaced between them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AutoProbes {
    /// Successes per second of the `synchronous` profile.
    pub synchronous_rps: f64,
    /// Successes per second of the `throughput` profile.
    pub throughput_rps: f64,
    /// The workers of the throughput probe.
    pub throughput_workers: u32,
}

/// `n` rates evenly spaced from `lo` to `hi`, both included (one rate:
/// `hi`), rounded to 0.1 req/s and never below 0.1.
///
/// ```
/// use metronome::report::sweep::auto_rates;
/// assert_eq!(auto_rates(10.0, 100.0, 4), [10.0, 40.0, 70.0, 100.0]);
/// assert_eq!(auto_rates(10.0, 100.0, 1), [100.0]);
/// ```
pub fn auto_rates(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let r = |x: f64| ((x * 10.0).round() / 10.0).max(0.1);
    match n {
        0 => Vec::new(),
        1 => vec![r(hi)],
        _ => (0..n)
            .map(|i| r(lo + (hi - lo) * i as f64 / (n - 1) as f64))
            .collect(),
    }
}

/// Why a step did not keep up with its schedule, or `None` when it did:
/// the pool found the knee (more connections carried no more load:
/// [`saturated`]), achieved below 99% of offered, dropped requests, a stretch where
/// requests waited for a connection (`pool_exhausted`: the target is
/// slower than the connections allow) or the generator's CPU was saturated
/// (`cpu_saturated`), or a breached threshold (not one that was not
/// evaluated: too few samples show no breach). A `descheduled` stretch (the
/// host took the generator's CPU) is not the target's doing and does not
/// make a knee; [`render`] names it apart.
pub fn fell_behind(r: &Report) -> Option<String> {
    if let Some(why) = saturated(r) {
        return Some(why);
    }
    if r.achieved_rps < 0.99 * r.offered_rps {
        return Some(format!(
            "achieved {}, below 99% of offered",
            unit(r.achieved_rps, "req/s")
        ));
    }
    if r.requests.dropped > 0 {
        return Some(format!("{} requests dropped", count(r.requests.dropped)));
    }
    if let Some(b) = r
        .generator
        .behind
        .iter()
        .find(|b| b.cause == "pool_exhausted" || b.cause == "cpu_saturated")
    {
        return Some(format!(
            "behind its schedule from {} ({}): {}",
            unit(b.from_s, "s"),
            b.cause,
            b.detail
        ));
    }
    // A threshold not evaluated (too few samples) showed no breach.
    r.thresholds
        .iter()
        .find(|t| !t.passed && t.not_evaluated.is_none())
        .map(|t| format!("threshold {} breached", t.expr))
}

/// The knee the connection pool found in a run, in words: with requests
/// waiting, more connections carried no more load (`generator.pool.knee`,
/// the same fact the run's warning names).
pub fn saturated(r: &Report) -> Option<String> {
    r.generator.pool.knee.as_ref().map(|k| {
        format!(
            "saturated at about {} with {} connections ({} connections completed {}, no more)",
            unit(k.completions_per_s, "req/s"),
            count(k.connections.into()),
            count(k.probe_connections.into()),
            unit(k.probe_per_s, "req/s")
        )
    })
}

/// Why a stage of a continuous sweep (`sweep --stages`) did not keep up,
/// or `None` when it did or is no step (a 0 s jump, or wholly in the
/// warmup): fewer than 99% of the requests its rate offers were sent,
/// requests were dropped, or some were never sent.
///
/// ```
/// use metronome::report::sweep::stage_fell_behind;
/// use metronome::report::{Metric, StageReport};
/// let mut st = StageReport {
///     from_s: 0.0, until_s: 10.0, start_rps: 100.0, target_rps: 100.0, offered: 1000.0,
///     scheduled: 1000, sent: 1000, ok: 1000, errors: 0, dropped: 0, unsent: 0, p50: 1.0,
///     p99: 2.0, latency: Metric::from_histogram(&metronome_core::histogram::Histogram::new()),
/// };
/// assert_eq!(stage_fell_behind(&st), None);
/// st.sent = 900;
/// st.unsent = 100;
/// assert_eq!(stage_fell_behind(&st).unwrap(), "sent 90.00 req/s, below 99% of the 100.0 offered");
/// ```
pub fn stage_fell_behind(st: &super::StageReport) -> Option<String> {
    let span = st.until_s - st.from_s;
    if span <= 0.0 || st.offered <= 0.0 {
        return None;
    }
    if (st.sent as f64) < 0.99 * st.offered {
        return Some(format!(
            "sent {}, below 99% of the {} offered",
            unit(st.sent as f64 / span, "req/s"),
            num(st.offered / span)
        ));
    }
    if st.dropped > 0 {
        return Some(format!("{} requests dropped", count(st.dropped)));
    }
    (st.unsent > 0).then(|| format!("{} requests never sent", count(st.unsent)))
}

/// The knee of a continuous sweep (`sweep --stages`): the first stage that
/// is a step and did not keep up, by [`stage_fell_behind`], by the pool's
/// knee found in it ([`saturated`]), or by a stretch
/// of the run behind its schedule overlapping it whose cause is the
/// target's (`pool_exhausted`, `server_slower`: requests waited for
/// connections while the latency grew) or the generator's CPU
/// (`cpu_saturated`); with why.
pub fn stage_knee(r: &Report) -> Option<(usize, String)> {
    r.stages.iter().enumerate().find_map(|(i, st)| {
        if st.until_s <= st.from_s || st.offered <= 0.0 {
            return None;
        }
        if let Some(why) = stage_fell_behind(st) {
            return Some((i, why));
        }
        // The pool's knee, timed from the schedule's zero as stages are.
        if let Some(k) = &r.generator.pool.knee {
            if k.at_s >= st.from_s && k.at_s < st.until_s {
                return saturated(r).map(|why| (i, why));
            }
        }
        // Stretches are timed from the end of the warmup, stages from the
        // schedule's zero.
        let (from, until) = (st.from_s - r.warmup_s, st.until_s - r.warmup_s);
        r.generator
            .behind
            .iter()
            .find(|b| {
                matches!(
                    b.cause.as_str(),
                    "pool_exhausted" | "server_slower" | "cpu_saturated"
                ) && b.from_s < until
                    && b.until_s > from
            })
            .map(|b| {
                (
                    i,
                    format!("behind its schedule ({}): {}", b.cause, b.detail),
                )
            })
    })
}

/// True when a step kept up with its schedule and met its thresholds
/// ([`fell_behind`] found nothing).
pub fn kept_up(r: &Report) -> bool {
    fell_behind(r).is_none()
}

/// The file of one step for a sweep's `--hgrm`, `--hlog` or `--svg`
/// PATH: the step's rate inserted before the extension.
///
/// # Example
/// ```
/// use std::path::Path;
/// use metronome::report::sweep::step_path;
/// assert_eq!(step_path(Path::new("out/lat.hgrm"), 250.0), Path::new("out/lat-250rps.hgrm"));
/// assert_eq!(step_path(Path::new("lat"), 12.5), Path::new("lat-12.5rps"));
/// ```
pub fn step_path(path: &std::path::Path, rate: f64) -> std::path::PathBuf {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{rate}rps.{}", ext.to_string_lossy()),
        None => format!("{stem}-{rate}rps"),
    };
    path.with_file_name(name)
}

/// A continuous sweep's table: one row per stage that is a step.
fn render_stages(s: &Sweep, r: &Report) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "one continuous run; each stage is a step\n{:>14} {:>16} {:>10} {:>8} {:>8} {:>9} {:>9} {:>9}",
        "stage s", "offered req/s", "sent/s", "errors", "dropped", "p50 ms", "p99 ms", "max ms"
    );
    for (i, st) in r.stages.iter().enumerate() {
        let span = st.until_s - st.from_s;
        if span <= 0.0 || st.offered <= 0.0 {
            continue;
        }
        // The stages' bounds as written (`0s:50,1s:50`): without padding.
        let offered = if st.start_rps == st.target_rps {
            tick(st.target_rps)
        } else {
            format!("{}->{}", tick(st.start_rps), tick(st.target_rps))
        };
        let _ = writeln!(
            t,
            "{:>14} {:>16} {:>10} {:>8} {:>8} {:>9} {:>9} {:>9}{}",
            format!("{}-{}", tick(st.from_s), tick(st.until_s)),
            offered,
            num(st.sent as f64 / span),
            count(st.errors),
            count(st.dropped),
            cell(&st.latency, 0.5, st.latency.p50),
            cell(&st.latency, 0.99, st.latency.p99),
            cell(&st.latency, 0.0, st.latency.max),
            if s.knee == Some(i) { "  <- knee" } else { "" }
        );
    }
    match s.knee.and_then(|i| r.stages.get(i)) {
        Some(st) => {
            let why = stage_knee(r).map(|(_, why)| why).unwrap_or_default();
            let _ = writeln!(
                t,
                "\nIn the stage from {} s to {} s the run stopped keeping up: {why}.",
                tick(st.from_s),
                tick(st.until_s)
            );
        }
        None => {
            let _ = writeln!(t, "\nEvery stage kept up with its schedule.");
        }
    }
    if r.generator.behind.iter().any(|b| b.cause == "descheduled") {
        let _ = writeln!(
            t,
            "The host took the generator's CPU (descheduled) during the run: see its report."
        );
    }
    t
}

/// The sweep as a table, one row per step (per stage for `sweep --stages`).
pub fn render(s: &Sweep) -> String {
    if let Some(r) = &s.continuous {
        return render_stages(s, r);
    }
    let mut t = String::new();
    if let Some(a) = &s.auto {
        let _ = writeln!(
            t,
            "auto: synchronous {}, throughput {} ({} at a time); steps between",
            unit(a.synchronous_rps, "ok/s"),
            unit(a.throughput_rps, "ok/s"),
            count(a.throughput_workers.into())
        );
    }
    let _ = writeln!(
        t,
        "{:>10} {:>10} {:>8} {:>8} {:>9} {:>9} {:>9} {:>9} {:>11}",
        "offered/s",
        "achieved/s",
        "errors",
        "dropped",
        "p50 ms",
        "p99 ms",
        "p99.9 ms",
        "max ms",
        "lag p99 ms"
    );
    for (i, r) in s.steps.iter().enumerate() {
        let m = &r.metrics.latency;
        let _ = writeln!(
            t,
            "{:>10} {:>10} {:>8} {:>8} {:>9} {:>9} {:>9} {:>9} {:>11}{}",
            num(r.offered_rps),
            num(r.achieved_rps),
            count(r.requests.errors),
            count(r.requests.dropped),
            cell(m, 0.5, m.p50),
            cell(m, 0.99, m.p99),
            cell(m, 0.999, m.p999),
            cell(m, 0.0, m.max),
            cell(&r.metrics.send_lag, 0.99, r.metrics.send_lag.p99),
            if s.knee == Some(i) { "  <- knee" } else { "" }
        );
    }
    render_streams(&mut t, s);
    match s.knee {
        Some(i) => {
            let why = fell_behind(&s.steps[i]).unwrap_or_default();
            let _ = writeln!(
                t,
                "\nAt {} the run stopped keeping up: {why}.",
                unit(s.steps[i].offered_rps, "req/s")
            );
        }
        None => {
            let _ = writeln!(t, "\nEvery step kept up with its schedule.");
        }
    }
    let host: Vec<String> = s
        .steps
        .iter()
        .filter(|r| r.generator.behind.iter().any(|b| b.cause == "descheduled"))
        .map(|r| num(r.offered_rps))
        .collect();
    if !host.is_empty() {
        let _ = writeln!(
            t,
            "The host took the generator's CPU (descheduled) at {} req/s: sends there were late by the host, not the target.",
            host.join(", ")
        );
    }
    t
}

/// A table cell of a metric's statistic (ms): `-` where its samples are
/// too few for percentile `q` ([`enough`]: the one rule), else [`num`].
fn cell(m: &Metric, q: f64, v: f64) -> String {
    if !enough(m.count, q) {
        "-".to_string()
    } else {
        num(v)
    }
}

/// A stream (LLM) sweep's view, as guidellm's main table: each step's
/// TTFT and ITL (per token) p50 and p99 and its output tokens/s against
/// the offered rate. Nothing when no step streamed.
fn render_streams(t: &mut String, s: &Sweep) {
    if !s.steps.iter().any(|r| r.metrics.ttft.count > 0) {
        return;
    }
    let _ = writeln!(
        t,
        "\n{:>10} {:>10} {:>10} {:>10} {:>10} {:>13}",
        "offered/s", "ttft p50", "ttft p99", "itl p50", "itl p99", "out tokens/s"
    );
    for r in &s.steps {
        let (ttft, itl) = (&r.metrics.ttft, &r.metrics.itl);
        let _ = writeln!(
            t,
            "{:>10} {:>10} {:>10} {:>10} {:>10} {:>13}",
            num(r.offered_rps),
            ms_cell(ttft, 0.5, ttft.p50),
            ms_cell(ttft, 0.99, ttft.p99),
            ms_cell(itl, 0.5, itl.p50),
            ms_cell(itl, 0.99, itl.p99),
            num(r.output_tokens_per_s)
        );
    }
}

/// [`cell`] with its unit, `ms`, for a table whose header names none.
fn ms_cell(m: &Metric, q: f64, v: f64) -> String {
    match cell(m, q, v).as_str() {
        "-" => "-".to_string(),
        text => format!("{text} ms"),
    }
}

#[cfg(test)]
mod tests {
    use super::{render, Sweep, SCHEMA};
    use crate::report::num::num;
    use crate::report::Report;

    /// The sample report of docs/report.md (400 requests, no stream).
    fn sample() -> Report {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/report.md"))
            .expect("read docs/report.md");
        let json = doc
            .split("```json")
            .nth(1)
            .and_then(|t| t.split("```").next());
        serde_json::from_str(json.expect("a json block")).expect("the sample report")
    }

    fn sweep(steps: Vec<Report>) -> Sweep {
        Sweep {
            schema: SCHEMA.into(),
            steps,
            knee: None,
            auto: None,
            continuous: None,
        }
    }

    /// Each cell of a step's row is the report's number through the shared
    /// formatter; p99.9 of 392 samples is `-`; no stream table without
    /// streams.
    #[test]
    fn rows_are_the_reports_numbers() {
        let r = sample();
        let text = render(&sweep(vec![r.clone()]));
        let row: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
        let m = &r.metrics.latency;
        assert_eq!(
            row,
            [
                num(r.offered_rps),
                num(r.achieved_rps),
                "8".into(),
                "0".into(),
                num(m.p50),
                num(m.p99),
                "-".into(),
                num(m.max),
                num(r.metrics.send_lag.p99),
            ],
            "{text}"
        );
        assert!(!text.contains("ttft"), "{text}");
    }

    /// A stream step adds the TTFT/ITL/tokens table, one row per step,
    /// `-` where a percentile's samples are too few (the ITL p99 of 50).
    #[test]
    fn streams_add_ttft_itl_and_tokens() {
        let mut r = sample();
        r.metrics.ttft = r.metrics.latency.clone();
        r.metrics.itl = r.metrics.service_time.clone();
        r.metrics.itl.count = 50;
        r.output_tokens_per_s = 1234.56;
        let text = render(&sweep(vec![sample(), r.clone()]));
        let lines: Vec<&str> = text.lines().collect();
        let head = lines.iter().position(|l| l.contains("ttft p50")).unwrap();
        let cells = |i: usize| lines[head + i].split_whitespace().collect::<Vec<_>>();
        let ms = |v: f64| format!("{} ms", num(v));
        let (t, i) = (&r.metrics.ttft, &r.metrics.itl);
        let want = [
            num(r.offered_rps),
            ms(t.p50),
            ms(t.p99),
            ms(i.p50),
            "-".into(),
            "1,235".into(),
        ]
        .join(" ");
        assert_eq!(
            cells(2),
            want.split_whitespace().collect::<Vec<_>>(),
            "{text}"
        );
        // The step without streams: every cell `-` but its rate and 0 tokens/s.
        assert_eq!(cells(1)[1..], ["-", "-", "-", "-", "0"], "{text}");
    }
}
