//! Ctrl-C (SIGINT) and SIGTERM as a flag that long-running commands poll.
//!
//! One handler for the whole CLI. `run` (and `demo` and `sweep`, through it)
//! installs it with [`install`]: the flag stays set, and a second signal
//! changes nothing, so the run can stop cleanly and still write its report.
//! `serve` installs it with [`install_exit_on_second`]: it has nothing to
//! lose, so a second Ctrl-C while it stops leaves at once.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the first SIGINT or SIGTERM.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// A signal arriving while [`INTERRUPTED`] is set exits the process (130).
static EXIT_ON_SECOND: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    // Only atomic loads and stores, and `_exit`: async-signal-safe.
    if INTERRUPTED.swap(true, Ordering::SeqCst) && EXIT_ON_SECOND.load(Ordering::SeqCst) {
        // A second Ctrl-C while stopping: leave at once.
        // SAFETY: `_exit` is async-signal-safe (POSIX.1 list); it does not
        // return and touches no Rust state.
        unsafe { libc::_exit(130) }
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
/// cleared: a command run after an interrupted one stops at once.
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
    EXIT_ON_SECOND.store(true, Ordering::SeqCst);
    set_handlers()
}

/// True once SIGINT or SIGTERM arrived since [`install`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}
