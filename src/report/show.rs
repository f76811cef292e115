//! `metronome report`: print a saved report (a run's or a merge's) or
//! sweep, and write its `.hgrm`, SVG or HTML.

use anyhow::Context;

use crate::cli::{FormatArg, ReportArgs};
use crate::report::{Report, SCHEMA};
use crate::UsageError;

/// A saved JSON document: a run's (or merge's) report, or a sweep.
#[derive(Clone, Debug)]
pub enum Saved {
    /// `metronome.report/v1`.
    Report(Box<Report>),
    /// `metronome.sweep/v1`.
    Sweep(crate::sweep::Sweep),
}

/// Reads a saved report or sweep, by its `schema`.
///
/// # Errors
/// A [`UsageError`] when the file cannot be read or is neither.
pub fn load_any(path: &std::path::Path) -> anyhow::Result<Saved> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("cannot read {}: {e}", path.display())))?;
    #[derive(serde::Deserialize)]
    struct Head {
        schema: Option<String>,
    }
    let head: Option<Head> = serde_json::from_str(&text).ok();
    if head.and_then(|h| h.schema).as_deref() == Some(crate::sweep::SCHEMA) {
        let s: crate::sweep::Sweep = serde_json::from_str(&text).map_err(|e| {
            UsageError(format!(
                "{} is not a {} sweep: {e}",
                path.display(),
                crate::sweep::SCHEMA
            ))
        })?;
        return Ok(Saved::Sweep(s));
    }
    parse(path, &text).map(|r| Saved::Report(Box::new(r)))
}

/// Reads and checks a JSON report.
///
/// # Errors
/// A [`UsageError`] when the file cannot be read or is not a v1 report.
pub fn load(path: &std::path::Path) -> anyhow::Result<Report> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("cannot read {}: {e}", path.display())))?;
    parse(path, &text)
}

fn parse(path: &std::path::Path, text: &str) -> anyhow::Result<Report> {
    let r: Report = serde_json::from_str(text)
        .map_err(|e| UsageError(format!("{} is not a {SCHEMA} report: {e}", path.display())))?;
    if r.schema != SCHEMA {
        return Err(UsageError(format!(
            "{}: schema '{}' is not {SCHEMA}",
            path.display(),
            r.schema
        ))
        .into());
    }
    Ok(r)
}

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
fn report_sweep(args: &ReportArgs, s: &crate::sweep::Sweep) -> anyhow::Result<i32> {
    if let Some(path) = &args.hgrm {
        for r in &s.steps {
            write_hgrm(
                &args.file,
                r,
                &crate::sweep::step_path(path, r.offered_rps * shard_count(r)),
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
    match args.format {
        FormatArg::Text => print!("{}", crate::sweep::render(s)),
        FormatArg::Json => println!("{}", serde_json::to_string_pretty(s)?),
    }
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
pub fn report(args: &ReportArgs) -> anyhow::Result<i32> {
    let r = match load_any(&args.file)? {
        Saved::Report(r) => r,
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
    crate::run::print(&r, args.format)?;
    Ok(if r.thresholds.iter().all(|t| t.passed) {
        0
    } else {
        crate::EXIT_THRESHOLD
    })
}
