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
//! The event loop itself (the set-up, each thread's worker, the merge) is
//! `metronome-loop`'s, written once for both engines; this crate is its
//! io_uring [`Ring`](metronome_loop::Ring): `ring` (the ring and the memory
//! the kernel touches, UDP in `ring/udp`) and `sys` (socket calls), and the
//! [`probe`] that tells whether the kernel allows it.
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
#[allow(unsafe_code)]
mod ring;
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod sys;

/// Options of the io_uring engine beyond the [`Plan`]: the event loop's.
pub use metronome_loop::Options as UringOptions;
/// Why [`UringOptions`] cannot be used.
pub use metronome_loop::OptionsError as UringOptionsError;
pub use metronome_loop::{parse_cpus, Phase, Tls};

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
        metronome_loop::run::<ring::Ring>(plan, control, opts, "metronome-uring")
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
