//! `metronome sweep`: the same open-loop test at a series of offered rates,
//! one report per step and a table of where latency bends (the knee).

use std::fmt::Write as _;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::cli::{FormatArg, SweepArgs};
use crate::report::Report;
use crate::UsageError;

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

/// Runs the sweep; returns it and the exit code (3 when any step breached
/// a threshold).
///
/// # Errors
/// Bad input (exit 2) or a step that could not run (exit 1).
pub fn sweep(args: &SweepArgs) -> anyhow::Result<(Sweep, i32)> {
    if args.rates.is_empty() || args.rates.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
        return Err(UsageError("--rates must be positive numbers, e.g. 100,200,400".into()).into());
    }
    if args.run.start_at.is_some() {
        return Err(UsageError(
            "sweep does not take --start-at: each step starts when the previous one ends \
             (run the steps with `run --start-at` to start them together on several machines)"
                .into(),
        )
        .into());
    }
    if args.run.closed.is_some() {
        return Err(UsageError(
            "sweep varies the offered rate: it does not combine with --closed".into(),
        )
        .into());
    }
    if args.run.stages.is_some() || args.run.trace.is_some() {
        return Err(UsageError(
            "sweep varies a steady offered rate: it does not combine with --stages or --trace \
             (a --stages run is itself a ramp)"
                .into(),
        )
        .into());
    }
    let mut steps = Vec::new();
    let mut knee = None;
    let mut code = 0;
    for (i, &rate) in args.rates.iter().enumerate() {
        if !args.run.quiet {
            eprintln!("sweep step {}/{}: {rate} req/s", i + 1, args.rates.len());
        }
        let mut step = args.run.clone();
        step.rate = Some(rate);
        step.out = None;
        step.hgrm = args.run.hgrm.as_deref().map(|p| step_path(p, rate));
        step.hlog = args.run.hlog.as_deref().map(|p| step_path(p, rate));
        step.svg = args.run.svg.as_deref().map(|p| step_path(p, rate));
        step.html = None;
        let r = crate::run::run(&step)?;
        if r.exit_code != 0 {
            code = r.exit_code;
        }
        let ok = kept_up(&r.report);
        steps.push(r.report);
        if !ok && knee.is_none() {
            knee = Some(i);
            if args.stop_at_knee {
                break;
            }
        }
        if crate::signal::interrupted() {
            break;
        }
    }
    Ok((
        Sweep {
            schema: SCHEMA.to_string(),
            steps,
            knee,
        },
        code,
    ))
}

/// The file of one step for a sweep's `--hgrm`, `--hlog` or `--svg`
/// PATH: the step's rate inserted before the extension.
///
/// # Example
/// ```
/// use std::path::Path;
/// use metronome::sweep::step_path;
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

/// `metronome sweep`: runs, prints the table (or JSON), writes `--out`,
/// and with `--svg` the sweep's plot of latency against offered rate
/// (each step's own outputs are written by its run, see [`step_path`]).
///
/// # Errors
/// As [`sweep`], or an unwritable `--out` or `--svg`.
pub fn run(args: &SweepArgs) -> anyhow::Result<i32> {
    let (s, code) = sweep(args)?;
    if let Some(path) = &args.run.out {
        std::fs::write(path, serde_json::to_string_pretty(&s)? + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.run.svg {
        std::fs::write(path, crate::report::svg::render_sweep_svg(&s))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.run.html {
        crate::report::html::write_sweep(path, &s, Some(crate::report::html::this_command()))?;
    }
    match args.run.format {
        FormatArg::Text => print!("{}", render(&s)),
        FormatArg::Json => println!("{}", serde_json::to_string_pretty(&s)?),
    }
    Ok(code)
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
