//! The limits on every size a user can type for `run`, checked before
//! anything is reserved: each one a constant here, documented in
//! docs/report.md ("Limits"), and broken with a one-line [`UsageError`]
//! naming the flag and the limit (exit 2), never an allocation failure.

use std::path::Path;
use std::time::Duration;

use crate::cli::RunArgs;
use crate::UsageError;

use super::profile::Load;

/// The longest run: `--warmup` plus the measured duration (`--duration`,
/// the stages' sum or the trace's span), 30 days.
pub const MAX_RUN: Duration = Duration::from_secs(30 * 24 * 3600);

/// The longest `--timeout`: one hour.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);

/// The most report intervals of a run: the measured duration plus the
/// drain (`--timeout`) over `--interval`. 200,000 is a day at 1 s intervals
/// twice over; each costs 136 bytes per engine thread whatever happens in it
/// (docs/report.md, "Memory").
pub const MAX_INTERVALS: u64 = 200_000;

/// The most requests a run may plan: its rate times its duration.
pub const MAX_REQUESTS: f64 = 1e12;

/// The most connections (`--connections`, `--max-connections`,
/// `--max-concurrency`, `--closed` workers): a port range's worth; each
/// has a 64 KiB read buffer reserved before the clock.
pub const MAX_CONNECTIONS: u32 = 65_536;

/// The most requests in flight (`--max-in-flight`): the engines reserve
/// their queue for it before the clock, 40 bytes a request.
pub const MAX_IN_FLIGHT: u32 = 1_000_000;

/// The most requests in one burst (`--burst-size`).
pub const MAX_BURST: u32 = 1_000_000;

/// The most engine threads (`--threads`).
pub const MAX_THREADS: u32 = 1024;

/// The largest input file (`--body-file`, `--dataset`, `--trace`,
/// `--requests`, `--targets`, `--tokenizer`), read whole before the clock:
/// 1 GiB.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

fn secs(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

/// Checks every size in `args` (and the parsed `load`) against its limit.
///
/// # Errors
/// A one-line [`UsageError`] naming the flag and the limit.
pub(super) fn check(args: &RunArgs, load: &Load) -> Result<(), UsageError> {
    let run = args
        .warmup
        .saturating_add(Duration::from_nanos(load.duration_ns));
    if run > MAX_RUN {
        return Err(UsageError(format!(
            "the run is {} long (--warmup plus --duration, --stages or --trace), above the \
             limit of {} (30 days)",
            secs(run),
            secs(MAX_RUN)
        )));
    }
    if args.timeout > MAX_TIMEOUT {
        return Err(UsageError(format!(
            "--timeout {} is above the limit of {} (1 hour)",
            secs(args.timeout),
            secs(MAX_TIMEOUT)
        )));
    }
    let width = args.interval.as_nanos().max(1);
    let span = u128::from(load.duration_ns) + args.timeout.as_nanos();
    let intervals = span.div_ceil(width) + 1;
    if intervals > u128::from(MAX_INTERVALS) {
        return Err(UsageError(format!(
            "--interval {} makes {intervals} report intervals over the run and its --timeout \
             drain ({}), above the limit of {MAX_INTERVALS}: use a longer --interval",
            secs(args.interval),
            secs(Duration::from_nanos(span.min(u128::from(u64::MAX)) as u64)),
        )));
    }
    let requests = load.rate * load.duration_ns as f64 / 1e9;
    if requests > MAX_REQUESTS {
        return Err(UsageError(format!(
            "the run plans {requests:.3e} requests (rate x duration), above the limit of \
             {MAX_REQUESTS:.0e}"
        )));
    }
    let counts = [
        ("--connections", args.connections, MAX_CONNECTIONS),
        (
            "--max-connections",
            Some(args.max_connections),
            MAX_CONNECTIONS,
        ),
        ("--max-concurrency", args.max_concurrency, MAX_CONNECTIONS),
        ("--closed", args.closed, MAX_CONNECTIONS),
        ("--max-in-flight", args.max_in_flight, MAX_IN_FLIGHT),
        ("--burst-size", Some(args.burst_size), MAX_BURST),
        ("--threads", args.threads, MAX_THREADS),
    ];
    for (flag, value, limit) in counts {
        if let Some(v) = value.filter(|&v| v > limit) {
            return Err(UsageError(format!(
                "{flag} {v} is above the limit of {limit}"
            )));
        }
    }
    let files = [
        ("--body-file", args.body_file.as_deref()),
        ("--dataset", args.dataset.as_deref()),
        ("--trace", args.trace.as_deref()),
        ("--requests", args.requests.as_deref()),
        ("--targets", args.targets.as_deref()),
        ("--tokenizer", args.tokenizer.as_deref()),
    ];
    for (flag, path) in files {
        check_file(flag, path)?;
    }
    Ok(())
}

fn check_file(flag: &str, path: Option<&Path>) -> Result<(), UsageError> {
    let Some(path) = path else {
        return Ok(());
    };
    // A file that cannot be read is reported where it is read.
    if let Ok(m) = std::fs::metadata(path) {
        if m.is_file() && m.len() > MAX_FILE_BYTES {
            return Err(UsageError(format!(
                "{flag} {} is {} bytes, above the limit of {MAX_FILE_BYTES} (1 GiB)",
                path.display(),
                m.len()
            )));
        }
    }
    Ok(())
}
