//! `metronome merge FILE...`: the reports of the shards of one run read,
//! merged into one report ([`crate::report::merge`]), written and printed.

use anyhow::Context;

use crate::cli::{FormatArg, MergeArgs};
use crate::report::merge::{merge_shards, skew_warning};
use crate::report::show::{load, print};
use crate::report::Report;

/// `metronome merge FILE...`.
///
/// # Errors
/// Bad input (exit 2: unreadable, not a report, or not the distinct shards of
/// one run, or an incomplete set without `--partial`) or an unwritable output.
pub fn run(args: &MergeArgs) -> anyhow::Result<i32> {
    crate::output::check_all([("--out", args.out.as_deref())])?;
    let reports = args
        .files
        .iter()
        .map(|f| load(f).map(|r| (f.display().to_string(), r)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let inputs: Vec<(&str, &Report)> = reports.iter().map(|(f, r)| (f.as_str(), r)).collect();
    let mut merged = merge_shards(&inputs, args.partial)?;
    let max_skew_ns = u64::try_from(args.max_skew.as_nanos()).unwrap_or(u64::MAX);
    if let Some(w) = skew_warning(&inputs, max_skew_ns) {
        eprintln!("metronome: warning: {w}");
        merged.generator.warnings.push(w);
    }
    if let Some(path) = &args.out {
        std::fs::write(path, serde_json::to_string_pretty(&merged)? + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if args.out.is_none() || args.format == FormatArg::Text {
        print(&merged, args.format.into())?;
    }
    Ok(0)
}
