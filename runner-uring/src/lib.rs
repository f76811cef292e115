//! metronome-uring: the Linux io_uring engine.
//!
//! It takes the same [`Plan`] as the portable engine (`metronome-std`) and
//! honours the same semantics rule for rule (DESIGN section 3), returning
//! the same [`RunOutput`]. What differs is the cost per request:
//!
//! - one thread per core (or [`UringOptions::threads`]), each pinned with
//!   `sched_setaffinity`, each with its own ring, its own share of the
//!   connections, its own shard of the schedule (thread `t` of `T` inside
//!   the plan's shard `k` of `n` sends `Shard { index: k + n*t, count: n*T }`)
//!   and its own recorder, merged at the end;
//! - every buffer (per-connection read buffer and stream-gap buffer, the
//!   connection slab, the waiting queue, the intervals) is allocated before
//!   the clock starts: no allocation, lock or syscall per request beyond the
//!   ring's batched submission;
//! - pacing sleeps in the ring (a `Timeout` sqe) until `spin_ns` before the
//!   next intended send, then busy-waits the monotonic clock (counted as
//!   spin time, not work) and submits every due send in one batch.
//!
//! `unsafe` is denied in the crate and allowed in two private modules only,
//! each behind a safe API: `ring` (the ring and the memory the kernel
//! touches) and `sys` (socket, affinity and CPU-clock calls). The protocol
//! (the per-request exchange, the bookkeeping) is core's, HTTP/3's is
//! `metronome-quic`'s (the sans-IO client both engines drive); this crate
//! never depends on the std engine.
//!
//! HTTP/3 ([`Wire::Http3`](metronome_core::plan::Wire::Http3)) is the
//! exception to "no allocation per request": `quinn-proto` allocates (about
//! 6 per request, measured by the workspace's `tests/alloc_h3_uring.rs`).
//!
//! Its modules: `threads` sets the engine up (pre-opened connections, each
//! thread's share, the start gate, the merge); `worker/` is one thread's
//! event loop, split by concept (slots, requests, completions, TLS,
//! HTTP/2, HTTP/3);
//! `clock` reads the monotonic clock.
//!
//! ```no_run
//! use metronome_core::engine::Control;
//! use metronome_core::plan::example_plan;
//! use metronome_uring::{probe, run, UringOptions};
//!
//! if probe().is_ok() {
//!     let out = run(&example_plan(), &Control::default(), &UringOptions::default()).unwrap();
//!     assert_eq!(out.recorder.scheduled, 100); // 100 req/s for 1 s measured
//! }
//! ```
#![deny(unsafe_code)]
#![deny(
    unsafe_op_in_unsafe_fn,
    clippy::undocumented_unsafe_blocks,
    clippy::missing_safety_doc
)]
#![deny(missing_docs)]

use std::fmt;

use metronome_core::engine::{Control, EngineError, RunOutput};
use metronome_core::plan::Plan;

#[cfg(target_os = "linux")]
mod clock;
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod ring;
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod sys;
#[cfg(target_os = "linux")]
mod threads;
#[cfg(target_os = "linux")]
mod worker;

/// Where an engine thread is, reported to [`UringOptions::phase_hook`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The clock has started: from here on the thread allocates nothing.
    Measuring,
    /// The schedule is over (or stopped): only replies in flight are awaited.
    Draining,
    /// The event loop is over: the thread builds its output (allocates again).
    Done,
}

/// Options of the io_uring engine beyond the [`Plan`].
#[derive(Clone, Debug, Default)]
pub struct UringOptions {
    /// Engine threads; default one per allowed CPU. Never more than the
    /// plan's connections (closed model: workers) or `max_in_flight`, so each
    /// thread gets at least one of each.
    pub threads: Option<u32>,
    /// CPUs to pin the threads to, round-robin (see [`parse_cpus`]); default
    /// the CPUs this process may run on.
    pub cpus: Option<Vec<usize>>,
    /// Test hook: called by each engine thread at each [`Phase`], on that
    /// thread (e.g. to count allocations made between `Measuring` and `Done`).
    pub phase_hook: Option<fn(Phase)>,
    /// Speak TLS to the target (an `https://` URL; HTTP/3 needs it).
    pub tls: Option<Tls>,
}

pub use metronome_core::engine::tls::Tls;

impl UringOptions {
    /// Checks the options.
    ///
    /// # Errors
    /// [`UringOptionsError`] naming the option to change.
    ///
    /// ```
    /// use metronome_uring::{UringOptions, UringOptionsError};
    /// assert_eq!(UringOptions::default().validate(), Ok(()));
    /// let opts = UringOptions { threads: Some(0), ..UringOptions::default() };
    /// assert_eq!(opts.validate(), Err(UringOptionsError::NoThreads));
    /// ```
    pub fn validate(&self) -> Result<(), UringOptionsError> {
        if self.threads == Some(0) {
            return Err(UringOptionsError::NoThreads);
        }
        if self.cpus.as_ref().is_some_and(Vec::is_empty) {
            return Err(UringOptionsError::NoCpus);
        }
        Ok(())
    }
}

/// Why [`UringOptions`] cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UringOptionsError {
    /// [`UringOptions::threads`] is 0: give at least one thread, or none
    /// for one per allowed CPU.
    NoThreads,
    /// [`UringOptions::cpus`] is an empty list: name at least one CPU, or
    /// none for the CPUs this process may run on.
    NoCpus,
}

impl fmt::Display for UringOptionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UringOptionsError::NoThreads => "the engine needs at least one thread",
            UringOptionsError::NoCpus => "the CPU list names no CPU",
        })
    }
}

impl std::error::Error for UringOptionsError {}

/// Why io_uring cannot be used here.
#[derive(Debug)]
#[non_exhaustive]
pub enum ProbeError {
    /// Not Linux, or a kernel without io_uring (ENOSYS): use `--engine std`.
    Unsupported,
    /// io_uring is disabled or forbidden (EPERM: `kernel.io_uring_disabled`,
    /// a seccomp profile such as Docker's default): allow it, or use `--engine std`.
    Denied(std::io::Error),
    /// The kernel lacks an operation the engine needs (it names the opcode):
    /// use a newer kernel (5.6+) or `--engine std`.
    MissingOp(&'static str),
    /// Creating a ring failed otherwise (e.g. ENOMEM from a low `RLIMIT_MEMLOCK`).
    Io(std::io::Error),
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeError::Unsupported => write!(f, "io_uring is not supported on this system"),
            ProbeError::Denied(e) => write!(
                f,
                "io_uring is disabled or not permitted here ({e}; see kernel.io_uring_disabled or the seccomp profile)"
            ),
            ProbeError::MissingOp(op) => write!(f, "the kernel's io_uring lacks {op} (needs Linux 5.6+)"),
            ProbeError::Io(e) => write!(f, "cannot create an io_uring: {e}"),
        }
    }
}

impl std::error::Error for ProbeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProbeError::Denied(e) | ProbeError::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// Checks that io_uring works here: creates a tiny ring and checks the
/// opcodes the engine uses.
///
/// # Errors
/// [`ProbeError`] naming why (unsupported, denied, an opcode missing).
pub fn probe() -> Result<(), ProbeError> {
    #[cfg(target_os = "linux")]
    {
        ring::probe_ring().map_err(|e| match e {
            Ok(io) => match io.raw_os_error() {
                Some(libc::ENOSYS) => ProbeError::Unsupported,
                Some(libc::EPERM) | Some(libc::EACCES) => ProbeError::Denied(io),
                _ => ProbeError::Io(io),
            },
            Err(op) => ProbeError::MissingOp(op),
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(ProbeError::Unsupported)
    }
}

/// Parses a CPU list such as `0,2-3` into `[0, 2, 3]` (sorted, deduplicated).
///
/// # Errors
/// A message naming the bad part (empty list, not a number, a reversed range).
///
/// # Example
/// ```
/// assert_eq!(metronome_uring::parse_cpus("0,2-3"), Ok(vec![0, 2, 3]));
/// assert_eq!(metronome_uring::parse_cpus(" 5 , 1 "), Ok(vec![1, 5]));
/// assert!(metronome_uring::parse_cpus("3-1").is_err());
/// assert!(metronome_uring::parse_cpus("").is_err());
/// ```
pub fn parse_cpus(list: &str) -> Result<Vec<usize>, String> {
    const LIMIT: usize = 1 << 16;
    let mut cpus = Vec::new();
    for part in list.split(',').map(str::trim) {
        if part.is_empty() {
            return Err(format!("empty entry in CPU list {list:?}"));
        }
        let num = |s: &str| -> Result<usize, String> {
            s.trim()
                .parse::<usize>()
                .ok()
                .filter(|&c| c < LIMIT)
                .ok_or_else(|| format!("{s:?} is not a CPU number (in {list:?})"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(format!("reversed CPU range {part:?} (write {b}-{a})"));
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(num(part)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Runs `plan` to completion (or until `control.stop` is set) and returns
/// what was measured, with the same semantics as the portable engine.
///
/// # Errors
/// [`EngineError::Plan`] for an invalid plan, [`EngineError::Io`] with a
/// [`UringOptionsError`] inside for invalid options,
/// [`EngineError::Connect`] when no connection can be opened before the
/// clock starts, [`EngineError::Io`] when a ring or thread cannot be set up
/// (call [`probe`] first to tell io_uring's absence apart).
pub fn run(
    plan: &Plan<'_>,
    control: &Control,
    opts: &UringOptions,
) -> Result<RunOutput, EngineError> {
    #[cfg(target_os = "linux")]
    {
        threads::run(plan, control, opts)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (plan, control, opts);
        Err(EngineError::Io(
            "io_uring",
            std::io::Error::from(std::io::ErrorKind::Unsupported),
        ))
    }
}
