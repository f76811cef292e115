//! A report shown: saved reports and sweeps read back ([`load`],
//! [`load_any`]) and either printed on stdout as text or JSON ([`print()`],
//! [`print_sweep`]). `metronome run`, `sweep`, `report` and `merge` all
//! print through here.

use std::io::Write as _;

use crate::report::sweep::{self, Sweep};
use crate::report::{text, Report, SCHEMA};
use crate::UsageError;

/// How a report or sweep is printed on stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The one-screen summary ([`text`]), or a sweep's table.
    Text,
    /// The JSON document, pretty-printed.
    Json,
}

/// Prints the report on stdout in the chosen format.
///
/// # Errors
/// Stdout cannot be written.
pub fn print(report: &Report, format: Format) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match format {
        Format::Text => out.write_all(text::render_text(report).as_bytes())?,
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, report)?;
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}

/// Prints a sweep on stdout: its table ([`sweep::render`]) or its JSON.
///
/// # Errors
/// The sweep cannot be serialized.
pub fn print_sweep(s: &Sweep, format: Format) -> anyhow::Result<()> {
    match format {
        Format::Text => print!("{}", sweep::render(s)),
        Format::Json => println!("{}", serde_json::to_string_pretty(s)?),
    }
    Ok(())
}

/// A saved JSON document: a run's (or merge's) report, or a sweep.
#[derive(Clone, Debug)]
pub enum Saved {
    /// `metronome.report/v1`.
    Report(Box<Report>),
    /// `metronome.sweep/v1`.
    Sweep(Sweep),
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
    if head.and_then(|h| h.schema).as_deref() == Some(sweep::SCHEMA) {
        let s: Sweep = serde_json::from_str(&text).map_err(|e| {
            UsageError(format!(
                "{} is not a {} sweep: {e}",
                path.display(),
                sweep::SCHEMA
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
