//! Choosing the engine: `auto` (io_uring where the kernel allows it, else
//! std with a one-line notice), `uring` or `std`.

use metronome_core::plan::Plan;
use metronome_std::{Control, RunOutput};

use crate::cli::EngineArg;

/// Runs `plan` on the chosen engine; returns the engine's name and output.
///
/// # Errors
/// The engine's error (e.g. the target refuses connections), or io_uring
/// requested where the kernel refuses it.
pub fn run(
    choice: EngineArg,
    plan: &Plan<'_>,
    control: &Control,
    threads: Option<u32>,
    cpus: Option<&str>,
) -> anyhow::Result<(String, RunOutput)> {
    let _ = (threads, cpus);
    match choice {
        EngineArg::Std | EngineArg::Auto => Ok(("std".into(), metronome_std::run(plan, control)?)),
        EngineArg::Uring => anyhow::bail!("the io_uring engine is not available in this build"),
    }
}

/// True when the io_uring engine can run here (built in, and the kernel allows it).
pub fn uring_available() -> bool {
    false
}
