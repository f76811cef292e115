//! Ctrl-C (SIGINT) and SIGTERM as a flag that long-running commands poll.
//!
//! One handler for the whole CLI: the first signal sets the flag (and
//! remembers which signal it was, for the exit status 128 + signal), and a
//! second one while the command stops exits at once.
//!
//! Copies of one signal that arrive together are one signal: a signal within
//! [`SAME_SIGNAL_WINDOW_NS`] (200 ms) of the first is ignored, and only a
//! later one is a second signal. `timeout(1)` (as CI jobs run commands)
//! sends its signal to its child and then to the child's process group, and
//! CI runners cancelling a job may signal both a process and its group:
//! without the window, a copy arriving after the handler ran for the first
//! exited at once, without a report. The handler reads `CLOCK_MONOTONIC`
//! with `clock_gettime`, which POSIX lists as async-signal-safe.
//!
//! `run` (and `demo` and `sweep`, through it) installs the handler with
//! [`install`]: the flag stays set, so a command run after an interrupted
//! one stops at once, and the run stops cleanly and still writes its
//! (partial) report. `serve` installs it with [`install_exit_on_second`],
//! which clears the flag first.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

/// Signals within this long (in nanoseconds) of the first are copies of it,
/// not a second signal: 200 ms, long enough for copies sent to a process
/// and to its group, short of a user's second Ctrl-C.
pub const SAME_SIGNAL_WINDOW_NS: u64 = 200_000_000;

/// Set by the first SIGINT or SIGTERM.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The first signal's number (0 before it).
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// The first signal's `CLOCK_MONOTONIC` time in nanoseconds, at least 1
/// (0 before it).
static FIRST_NS: AtomicU64 = AtomicU64::new(0);
/// A second signal (after [`SAME_SIGNAL_WINDOW_NS`]) exits the process
/// (128 + signal).
static EXIT_ON_SECOND: AtomicBool = AtomicBool::new(true);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only `clock_gettime`, atomic loads, stores and compare-exchanges, and
    // `_exit`: async-signal-safe.
    let now = monotonic_ns();
    let _ = SIGNAL.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    // The first signal claims FIRST_NS (now, or 1 without a clock); a later
    // one (on this thread or another) reads it.
    let first = FIRST_NS.compare_exchange(
        0,
        now.unwrap_or(1).max(1),
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    INTERRUPTED.store(true, Ordering::SeqCst);
    if let Err(first_ns) = first {
        // Without a clock every later signal is a second one, as before the window.
        let second = now.map_or(true, |now_ns| second_exits(first_ns, now_ns));
        if second && EXIT_ON_SECOND.load(Ordering::SeqCst) {
            // A second signal while stopping: leave at once.
            // SAFETY: `_exit` is async-signal-safe (POSIX.1 list); it does not
            // return and touches no Rust state.
            unsafe { libc::_exit(128 + sig) }
        }
    }
}

/// Whether a signal at `now_ns` after the first at `first_ns` (both
/// `CLOCK_MONOTONIC` nanoseconds) is a second signal, which exits: at
/// [`SAME_SIGNAL_WINDOW_NS`] or later. Within the window it is a copy of the
/// first; so is one read as earlier than the first (two handlers racing on
/// two threads).
fn second_exits(first_ns: u64, now_ns: u64) -> bool {
    now_ns.saturating_sub(first_ns) >= SAME_SIGNAL_WINDOW_NS
}

/// `CLOCK_MONOTONIC` in nanoseconds; `None` when the clock cannot be read.
/// Async-signal-safe: one `clock_gettime` call on a local.
fn monotonic_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` is async-signal-safe (POSIX.1-2008 list), and
    // `ts` is a valid, writable `timespec` that outlives the call;
    // CLOCK_MONOTONIC is a clock id every Linux and POSIX system supports.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    if rc != 0 {
        return None;
    }
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u64::try_from(ts.tv_nsec).ok()?;
    Some(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
}

/// Points SIGINT and SIGTERM at [`on_signal`]; tries both, returns the first
/// failure.
fn set_handlers() -> io::Result<()> {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    let mut result = Ok(());
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `on_signal` is a `'static` `extern "C" fn(c_int)`, the
        // signature `signal` expects, and it only performs async-signal-safe
        // work: `clock_gettime`, atomic loads, stores and compare-exchanges
        // on lock-free atomics (`AtomicU64` exists only where 64-bit atomics
        // are native), and `_exit`. `signal` has no other preconditions.
        let previous = unsafe { libc::signal(sig, handler) };
        if previous == libc::SIG_ERR && result.is_ok() {
            result = Err(io::Error::last_os_error());
        }
    }
    result
}

/// Installs the handler for SIGINT and SIGTERM (idempotent). The flag is not
/// cleared: a command run after an interrupted one stops at once. A second
/// signal (later than [`SAME_SIGNAL_WINDOW_NS`] after the first) exits at
/// once with 128 + its number.
pub fn install() {
    // `signal` only fails for an invalid signal number; without a handler
    // Ctrl-C still ends the process, as it would anyway.
    let _ = set_handlers();
}

/// Installs the handler for a command that stops at the first signal and
/// exits at once (status 130) at the second (later than
/// [`SAME_SIGNAL_WINDOW_NS`] after the first): clears the flag, then installs.
///
/// # Errors
/// A handler could not be installed.
pub fn install_exit_on_second() -> io::Result<()> {
    INTERRUPTED.store(false, Ordering::SeqCst);
    SIGNAL.store(0, Ordering::SeqCst);
    FIRST_NS.store(0, Ordering::SeqCst);
    set_handlers()
}

/// The exit status for the signal that interrupted the command: 130 for
/// SIGINT, 143 for SIGTERM (128 + the signal's number); `None` before one.
pub fn exit_status() -> Option<i32> {
    if !interrupted() {
        return None;
    }
    match SIGNAL.load(Ordering::SeqCst) {
        0 => Some(130),
        sig => Some(128 + sig),
    }
}

/// True once SIGINT or SIGTERM arrived since [`install`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_within_the_window_are_one_signal() {
        let first = 5_000_000_000;
        assert!(!second_exits(first, first));
        assert!(!second_exits(first, first + 1));
        assert!(!second_exits(first, first + SAME_SIGNAL_WINDOW_NS - 1));
        assert!(second_exits(first, first + SAME_SIGNAL_WINDOW_NS));
        assert!(second_exits(first, first + SAME_SIGNAL_WINDOW_NS + 1));
        assert!(second_exits(first, u64::MAX));
    }

    #[test]
    fn a_clock_read_before_the_first_is_a_copy() {
        // Two handlers on two threads: the second read the clock first.
        assert!(!second_exits(5_000_000_000, 4_999_999_000));
        assert!(!second_exits(u64::MAX, 0));
    }

    #[test]
    fn the_window_is_200_ms() {
        assert_eq!(SAME_SIGNAL_WINDOW_NS, 200_000_000);
    }

    #[test]
    fn the_monotonic_clock_reads_and_does_not_go_back() {
        let a = monotonic_ns().expect("CLOCK_MONOTONIC");
        let b = monotonic_ns().expect("CLOCK_MONOTONIC");
        assert!(a > 0 && b >= a, "{a} then {b}");
    }
}
