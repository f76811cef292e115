//! The `metronome.sweep/v1` document that `metronome sweep` writes: one
//! report per offered rate, the knee (the first step that did not keep
//! up), and its table. The command that runs a sweep is
//! [`crate::sweep`]; this is only the saved format and its rendering.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::Report;

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
}

/// Why a step did not keep up with its schedule, or `None` when it did:
/// achieved below 99% of offered, dropped requests, a stretch where
/// requests waited for a connection (`pool_exhausted`: the target is
/// slower than the connections allow) or the generator's CPU was saturated
/// (`cpu_saturated`), or a breached threshold. A `descheduled` stretch (the
/// host took the generator's CPU) is not the target's doing and does not
/// make a knee; [`render`] names it apart.
pub fn fell_behind(r: &Report) -> Option<String> {
    if r.achieved_rps < 0.99 * r.offered_rps {
        return Some(format!(
            "achieved {:.1} req/s, below 99% of offered",
            r.achieved_rps
        ));
    }
    if r.requests.dropped > 0 {
        return Some(format!("{} requests dropped", r.requests.dropped));
    }
    if let Some(b) = r
        .generator
        .behind
        .iter()
        .find(|b| b.cause == "pool_exhausted" || b.cause == "cpu_saturated")
    {
        return Some(format!(
            "behind its schedule from {:.0} s ({}): {}",
            b.from_s, b.cause, b.detail
        ));
    }
    r.thresholds
        .iter()
        .find(|t| !t.passed)
        .map(|t| format!("threshold {} breached", t.expr))
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

/// The sweep as a table, one row per step.
pub fn render(s: &Sweep) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{:>10} {:>10} {:>8} {:>8} {:>9} {:>9} {:>9} {:>9} {:>11}",
        "offered",
        "achieved",
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
            "{:>10.1} {:>10.1} {:>8} {:>8} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>11.3}{}",
            r.offered_rps,
            r.achieved_rps,
            r.requests.errors,
            r.requests.dropped,
            m.p50,
            m.p99,
            m.p999,
            m.max,
            r.metrics.send_lag.p99,
            if s.knee == Some(i) { "  <- knee" } else { "" }
        );
    }
    match s.knee {
        Some(i) => {
            let why = fell_behind(&s.steps[i]).unwrap_or_default();
            let _ = writeln!(
                t,
                "\nAt {:.1} req/s the run stopped keeping up: {why}.",
                s.steps[i].offered_rps
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
        .map(|r| format!("{:.1}", r.offered_rps))
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
