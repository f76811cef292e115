//! Ctrl-C (SIGINT) and SIGTERM as a flag that long-running commands poll.
//!
//! One handler for the whole CLI: the first signal sets the flag (and
//! remembers which signal it was, for the exit status 128 + signal), and a
//! second one while the command stops exits at once. `run` (and `demo` and
//! `sweep`, through it) installs it with [`install`]: the flag stays set, so
//! a command run after an interrupted one stops at once, and the run stops
//! cleanly and still writes its (partial) report. `serve` installs it with
//! [`install_exit_on_second`], which clears the flag first.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// Set by the first SIGINT or SIGTERM.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The first signal's number (0 before it).
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// A signal arriving while [`INTERRUPTED`] is set exits the process (128 + signal).
static EXIT_ON_SECOND: AtomicBool = AtomicBool::new(true);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only atomic loads and stores, and `_exit`: async-signal-safe.
    let _ = SIGNAL.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    if INTERRUPTED.swap(true, Ordering::SeqCst) && EXIT_ON_SECOND.load(Ordering::SeqCst) {
        // A second signal while stopping: leave at once.
        // SAFETY: `_exit` is async-signal-safe (POSIX.1 list); it does not
        // return and touches no Rust state.
        unsafe { libc::_exit(128 + sig) }
    }
}

/// Points SIGINT and SIGTERM at [`on_signal`]; tries both, returns the first
/// failure.
fn set_handlers() -> io::Result<()> {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    let mut result = Ok(());
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `on_signal` is a `'static` `extern "C" fn(c_int)`, the
        // signature `signal` expects, and it only performs async-signal-safe
        // work: atomic loads and stores on lock-free atomics, and `_exit`.
        // `signal` has no other preconditions.
        let previous = unsafe { libc::signal(sig, handler) };
        if previous == libc::SIG_ERR && result.is_ok() {
            result = Err(io::Error::last_os_error());
        }
    }
    result
}

/// Installs the handler for SIGINT and SIGTERM (idempotent). The flag is not
/// cleared: a command run after an interrupted one stops at once. A second
/// signal exits at once with 128 + its number.
pub fn install() {
    // `signal` only fails for an invalid signal number; without a handler
    // Ctrl-C still ends the process, as it would anyway.
    let _ = set_handlers();
}

/// Installs the handler for a command that stops at the first signal and
/// exits at once (status 130) at the second: clears the flag, then installs.
///
/// # Errors
/// A handler could not be installed.
pub fn install_exit_on_second() -> io::Result<()> {
    INTERRUPTED.store(false, Ordering::SeqCst);
    SIGNAL.store(0, Ordering::SeqCst);
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
