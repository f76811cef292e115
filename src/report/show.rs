//! A report shown: saved reports, sweeps and `--repeat` documents read
//! back ([`load`], [`load_any`]) and either printed on stdout as text or JSON ([`print()`],
//! [`print_sweep`]). `metronome run`, `sweep`, `report` and `merge` all
//! print through here.

use std::io::Write as _;

use crate::report::repeat::{self, Repeat};
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

/// A saved JSON document: a run's (or merge's) report, a sweep, or the
/// runs of `run --repeat N`.
#[derive(Clone, Debug)]
pub enum Saved {
    /// `metronome.report/v1`.
    Report(Box<Report>),
    /// `metronome.sweep/v1`.
    Sweep(Sweep),
    /// `metronome.repeat/v1`.
    Repeat(Repeat),
}

/// What `metronome report` reads, for its refusals.
pub const REPORT_READS: &str = "report reads a run's or merge's report (metronome.report/v1), \
     a sweep (metronome.sweep/v1) or a --repeat document (metronome.repeat/v1)";

/// Reads a saved report, sweep or repeat document, by its `schema`.
///
/// # Errors
/// A [`UsageError`], one line: the file cannot be read, or it is not one
/// of the three (what it is, then [`REPORT_READS`]).
pub fn load_any(path: &std::path::Path) -> anyhow::Result<Saved> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("cannot read {}: {e}", path.display())))?;
    let schema =
        schema_of(path, &text).map_err(|what| UsageError(format!("{what}; {REPORT_READS}")))?;
    match schema.as_str() {
        sweep::SCHEMA => decode(path, &text, "a sweep").map(Saved::Sweep),
        repeat::SCHEMA => decode(path, &text, "a --repeat document").map(Saved::Repeat),
        SCHEMA => decode(path, &text, "a report").map(|r| Saved::Report(Box::new(r))),
        other => Err(UsageError(format!(
            "{} is a {other} document; {REPORT_READS}",
            path.display()
        ))
        .into()),
    }
}

/// The `schema` of a JSON document, or what the file is instead (one line).
fn schema_of(path: &std::path::Path, text: &str) -> Result<String, String> {
    let shown = path.display();
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| format!("{shown} is not JSON ({})", serde_line(&e)))?;
    match v.get("schema").and_then(serde_json::Value::as_str) {
        Some(s) => Ok(s.to_string()),
        None if v.is_object() => Err(format!(
            "{shown} is JSON without a \"schema\" field, not a metronome document"
        )),
        None => Err(format!(
            "{shown} is JSON but not an object, not a metronome document"
        )),
    }
}

/// A document of a known schema decoded, or one line: it is `what` (with
/// its schema) that does not decode, and why.
fn decode<T: serde::de::DeserializeOwned>(
    path: &std::path::Path,
    text: &str,
    what: &str,
) -> anyhow::Result<T> {
    serde_json::from_str(text).map_err(|e| {
        UsageError(format!(
            "{} is {what} that does not decode ({}): edited, cut, or written by another version?",
            path.display(),
            serde_line(&e)
        ))
        .into()
    })
}

/// A serde error in one short line: its list of expected fields left out.
fn serde_line(e: &serde_json::Error) -> String {
    let s = e.to_string();
    let cut = match (s.find(", expected one of"), s.rfind(" at line ")) {
        (Some(i), Some(j)) if j > i => format!("{}{}", &s[..i], &s[j..]),
        (Some(i), _) => s[..i].to_string(),
        _ => s,
    };
    cut.chars().take(200).collect()
}

/// Reads and checks a JSON report (a run's or a merge's).
///
/// # Errors
/// A [`UsageError`] when the file cannot be read or is not a v1 report
/// (one line saying what it is).
pub fn load(path: &std::path::Path) -> anyhow::Result<Report> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("cannot read {}: {e}", path.display())))?;
    let reads = "a run's or merge's report (metronome.report/v1) is read here";
    let schema = schema_of(path, &text).map_err(|what| UsageError(format!("{what}; {reads}")))?;
    match schema.as_str() {
        SCHEMA => decode(path, &text, "a report"),
        sweep::SCHEMA => Err(UsageError(format!(
            "{} is a sweep (metronome.sweep/v1); {reads}: merge the shards' reports of one step",
            path.display()
        ))
        .into()),
        repeat::SCHEMA => Err(UsageError(format!(
            "{} is a --repeat document (metronome.repeat/v1); {reads}",
            path.display()
        ))
        .into()),
        other => {
            Err(UsageError(format!("{} is a {other} document; {reads}", path.display())).into())
        }
    }
}
