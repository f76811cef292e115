//! The vocabulary every command shares for ending: bad usage or input
//! ([`UsageError`], exit 2) and the process's exit codes. A leaf: it
//! imports nothing of the crate. `main.rs` maps errors to these codes.

/// Bad usage or input: the message names what to change; exit code 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Exit code for success.
pub const EXIT_OK: i32 = 0;
/// Exit code when the run failed.
pub const EXIT_FAILED: i32 = 1;
/// Exit code for bad usage or input.
pub const EXIT_USAGE: i32 = 2;
/// Exit code when a `--threshold` was breached.
pub const EXIT_THRESHOLD: i32 = 3;
