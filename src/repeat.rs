//! `metronome run --repeat N`: the same test N times in a row (run `i`
//! with seed `--seed + i`, so a random arrival process draws anew), then
//! the mean and 95% confidence interval of each headline number
//! ([`crate::report::repeat`]). Each run's `--hgrm`, `--hlog`, `--svg` and
//! `--html` go to `FILE-runK.EXT`; `--out` and `--format json` carry the
//! whole `metronome.repeat/v1` document. A signal stops after the run it
//! interrupted, and the runs done are summarised.

use anyhow::Context;

use crate::cli::{FormatArg, RunArgs};
use crate::report::repeat::{render, Repeat};

/// `path` with `-runK` before its extension.
///
/// ```
/// use std::path::Path;
/// assert_eq!(metronome::repeat::run_path(Path::new("/t/a.hlog"), 2), Path::new("/t/a-run2.hlog"));
/// ```
pub fn run_path(path: &std::path::Path, k: u32) -> std::path::PathBuf {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let name = match path.extension() {
        Some(ext) => format!("{stem}-run{k}.{}", ext.to_string_lossy()),
        None => format!("{stem}-run{k}"),
    };
    path.with_file_name(name)
}

/// Refuses `--out-intervals -` or `--out-requests -` where stdout holds `what`'s own output
/// (exit 2): give a file, written per run beside the path given.
///
/// # Errors
/// A [`crate::UsageError`] for `--out-intervals -` or `--out-requests -`.
pub fn refuse_stdout_lines(args: &RunArgs, what: &str) -> Result<(), crate::UsageError> {
    for (flag, on) in [
        ("--out-intervals", args.intervals_to_stdout()),
        ("--out-requests", crate::run::requests_out::to_stdout(args)),
    ] {
        if on {
            return Err(crate::UsageError(format!(
                "{flag} - is for one run: with {what} give a FILE (one per run, beside it)"
            )));
        }
    }
    Ok(())
}

/// Runs the test `args.repeat` times and prints the summary; returns the
/// exit code: that of the first run that did not exit 0, else 0.
///
/// # Errors
/// As [`crate::run::run`], for the first run that fails to run.
pub fn run(args: &RunArgs) -> anyhow::Result<i32> {
    // Every file of every run, before the first run.
    crate::run::check_outputs(args)?;
    refuse_stdout_lines(args, "--repeat")?;
    // One dashboard for every run: each draws on it in turn; at the end it
    // shows the last run's page.
    let dash = crate::run::dashboard::shared(args, "--repeat")?;
    let mut reports = Vec::new();
    let mut code = crate::EXIT_OK;
    for k in 1..=args.repeat {
        let mut a = args.clone();
        a.repeat = 1;
        a.seed = args.seed.wrapping_add(u64::from(k - 1));
        a.out = None;
        a.quiet = true;
        a.hgrm = args.hgrm.as_deref().map(|p| run_path(p, k));
        a.hlog = args.hlog.as_deref().map(|p| run_path(p, k));
        a.svg = args.svg.as_deref().map(|p| run_path(p, k));
        a.html = args.html.as_deref().map(|p| run_path(p, k));
        a.out_intervals = args.out_intervals.as_deref().map(|p| run_path(p, k));
        a.out_requests = args.out_requests.as_deref().map(|p| run_path(p, k));
        if !args.quiet {
            eprintln!("metronome: run {k} of {} (seed {})", args.repeat, a.seed);
        }
        a.dashboard = None;
        let shared = dash.as_ref().map(|d| crate::run::SharedDashboard {
            dashboard: d,
            label: format!("run {k} of {}", args.repeat),
        });
        let r = crate::run::run_on(&a, shared)?;
        if let Some(line) = &r.failure {
            eprintln!("metronome: run {k}: {line}");
        }
        if code == crate::EXIT_OK {
            code = r.exit_code;
        }
        let interrupted = r.report.interrupted;
        reports.push(r.report);
        if interrupted {
            break;
        }
    }
    if let (Some(d), Some(last)) = (dash, reports.last()) {
        let page =
            crate::report::html::render_report(last, Some(crate::report::argv::this_command()))?;
        d.finish(page);
    }
    let doc = Repeat::of(reports);
    if let Some(path) = &args.out {
        let json = serde_json::to_string_pretty(&doc)?;
        std::fs::write(path, json + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    match args.format {
        FormatArg::Text => print!("{}", render(&doc)),
        FormatArg::Json => println!("{}", serde_json::to_string_pretty(&doc)?),
    }
    Ok(code)
}
