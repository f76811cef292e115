//! `metronome report FILE`: a saved report (a run's or a merge's) or sweep
//! printed again, and its `.hgrm`, SVG or HTML written. Reading and
//! printing are [`crate::report::show`].

use anyhow::Context;

use crate::cli::ReportArgs;
use crate::report::show::{load_any, print, print_sweep, Saved};
use crate::report::sweep::{step_path, Sweep};
use crate::report::Report;
use crate::UsageError;

/// The `.hgrm` of a report's latency, as the run's own `--hgrm` wrote it.
fn write_hgrm(file: &std::path::Path, r: &Report, path: &std::path::Path) -> anyhow::Result<()> {
    let m = &r.metrics.latency;
    let h = m.try_histogram().map_err(|e| {
        UsageError(format!(
            "{}: metrics.latency.hdr is unreadable: {e}",
            file.display()
        ))
    })?;
    std::fs::write(path, crate::report::hgrm::render_hgrm_with_mean(&h, m.mean))
        .with_context(|| format!("cannot write {}", path.display()))
}

/// `metronome report FILE` for a sweep: the table (or the JSON), `--svg`
/// of latency against offered rate, `--hgrm` per step.
fn report_sweep(args: &ReportArgs, s: &Sweep) -> anyhow::Result<i32> {
    if let Some(path) = &args.hgrm {
        for r in &s.steps {
            write_hgrm(
                &args.file,
                r,
                &step_path(path, r.offered_rps * shard_count(r)),
            )?;
        }
    }
    if let Some(path) = &args.svg {
        std::fs::write(path, crate::report::svg::render_sweep_svg(s))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.html {
        crate::report::html::write_sweep(path, s, None)?;
    }
    print_sweep(s, args.format.into())?;
    let passed = s
        .steps
        .iter()
        .all(|r| r.thresholds.iter().all(|t| t.passed));
    Ok(if passed { 0 } else { crate::EXIT_THRESHOLD })
}

/// N of a report's shard "K/N" (1 otherwise): its `offered_rps` times N is
/// the run's `--rate`.
fn shard_count(r: &Report) -> f64 {
    r.shard
        .split_once('/')
        .and_then(|(_, n)| n.parse::<u32>().ok())
        .map_or(1.0, f64::from)
}

/// `metronome report FILE`: a run's or merge's report, or a sweep.
///
/// # Errors
/// Bad input (exit 2) or an unwritable output.
pub fn run(args: &ReportArgs) -> anyhow::Result<i32> {
    crate::output::check_all([
        ("--hgrm", args.hgrm.as_deref()),
        ("--svg", args.svg.as_deref()),
        ("--html", args.html.as_deref()),
    ])?;
    let r = match load_any(&args.file)? {
        Saved::Report(r) => r,
        Saved::Sweep(_) if args.prometheus.prometheus_rw.is_some() => {
            return Err(crate::UsageError(format!(
                "{}: a sweep cannot be pushed with --prometheus-rw; push each step's run report",
                args.file.display()
            ))
            .into())
        }
        Saved::Sweep(s) => return report_sweep(args, &s),
    };
    if let Some(path) = &args.hgrm {
        write_hgrm(&args.file, &r, path)?;
    }
    if let Some(path) = &args.svg {
        std::fs::write(path, crate::report::svg::render_svg(&r))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.html {
        crate::report::html::write_report(path, &r, None)?;
    }
    print(&r, args.format.into())?;
    // Pushing is this command's job when asked: what was not stored fails it.
    if let Some(warning) = crate::prom::push_report(&r, &args.prometheus) {
        eprintln!("metronome: {warning}");
        return Ok(crate::EXIT_FAILED);
    }
    Ok(if r.thresholds.iter().all(|t| t.passed) {
        0
    } else {
        crate::EXIT_THRESHOLD
    })
}
