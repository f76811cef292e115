//! `metronome report FILE`: a saved report (a run's or a merge's), sweep or
//! `--repeat` document printed again, and its `.hgrm`, SVG or HTML written. Reading and
//! printing are [`crate::report::show`].

use anyhow::Context;

use crate::cli::ReportArgs;
use crate::report::repeat::Repeat;
use crate::report::show::{load_any, print, print_sweep, Format, Saved};
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
/// of latency against offered rate, `--hgrm` per step, and with
/// `--prometheus-rw` each step's report pushed.
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
    if push_failed(&s.steps, args) {
        return Ok(crate::EXIT_FAILED);
    }
    Ok(exit_of(&s.steps))
}

/// N of a report's shard "K/N" (1 otherwise): its `offered_rps` times N is
/// the run's `--rate`.
fn shard_count(r: &Report) -> f64 {
    r.shard
        .split_once('/')
        .and_then(|(_, n)| n.parse::<u32>().ok())
        .map_or(1.0, f64::from)
}

/// `metronome report FILE`: a run's or merge's report, a sweep, or a
/// `--repeat` document.
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
        Saved::Sweep(s) => return report_sweep(args, &s),
        Saved::Repeat(d) => return report_repeat(args, &d),
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
    if push_failed(std::slice::from_ref(&*r), args) {
        return Ok(crate::EXIT_FAILED);
    }
    Ok(exit_of(std::slice::from_ref(&*r)))
}

/// With `--prometheus-rw`: pushes each report (a sweep's steps, a repeat's
/// runs: each under its own `run_id`) and says what was not stored;
/// whether any push failed.
fn push_failed(reports: &[Report], args: &ReportArgs) -> bool {
    let mut failed = false;
    for r in reports {
        if let Some(warning) = crate::prom::push_report(r, &args.prometheus) {
            eprintln!("metronome: {warning}");
            failed = true;
        }
    }
    failed
}

/// 3 when a saved threshold of any of `reports` was breached, else 0.
fn exit_of(reports: &[Report]) -> i32 {
    if reports
        .iter()
        .all(|r| r.thresholds.iter().all(|t| t.passed))
    {
        crate::EXIT_OK
    } else {
        crate::EXIT_THRESHOLD
    }
}

/// `metronome report FILE` for the runs of `run --repeat N`: the summary
/// (or the JSON), `--html` of the whole document, and `--hgrm` and `--svg`
/// per run (`FILE-runK.EXT`, as `run --repeat` writes them).
fn report_repeat(args: &ReportArgs, d: &Repeat) -> anyhow::Result<i32> {
    for (k, r) in (1..).zip(&d.runs) {
        if let Some(path) = &args.hgrm {
            write_hgrm(&args.file, r, &crate::repeat::run_path(path, k))?;
        }
        if let Some(path) = &args.svg {
            let path = crate::repeat::run_path(path, k);
            std::fs::write(&path, crate::report::svg::render_svg(r))
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    if let Some(path) = &args.html {
        crate::report::html::write_repeat(path, d, None)?;
    }
    match args.format.into() {
        Format::Text => print!("{}", crate::report::repeat::render(d)),
        Format::Json => println!("{}", serde_json::to_string_pretty(d)?),
    }
    if push_failed(&d.runs, args) {
        return Ok(crate::EXIT_FAILED);
    }
    Ok(exit_of(&d.runs))
}
