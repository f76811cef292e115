//! Choosing the engine: `auto` (io_uring where the kernel allows it, else
//! std with a one-line notice), `uring` or `std`.

use metronome_core::engine::{Control, RunOutput};
use metronome_core::plan::{Plan, Wire};

use crate::cli::EngineArg;
use crate::tls::ClientTls;
use crate::UsageError;

/// The engine that ran, as the report names it (`engine`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// The Linux io_uring engine: every thread paces.
    Uring,
    /// The portable std engine: one pacer thread.
    Std,
}

impl Engine {
    /// The name in the report: `uring` or `std`.
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Uring => "uring",
            Engine::Std => "std",
        }
    }

    /// The threads that paced, of the `threads` the engine ran: every
    /// io_uring thread; the std engine's one pacer.
    pub fn pacers(self, threads: usize) -> u64 {
        match self {
            Engine::Uring => threads.max(1) as u64,
            Engine::Std => 1,
        }
    }
}

/// Runs `plan` on the chosen engine; returns the engine that ran and its output.
///
/// # Errors
/// The engine's error (e.g. the target refuses connections), io_uring
/// requested where the kernel refuses it (exit 1), or a bad `--cpus` list
/// (a [`UsageError`], exit 2).
pub fn run(
    choice: EngineArg,
    plan: &Plan<'_>,
    control: &Control,
    threads: Option<u32>,
    cpus: Option<&str>,
    tls: Option<&ClientTls>,
) -> anyhow::Result<(Engine, RunOutput)> {
    if let Wire::Http3(_) = plan.wire {
        if tls.is_none() {
            return Err(
                UsageError("--http3 is HTTP/3 over QUIC, for an https:// URL only".into()).into(),
            );
        }
        // `--engine uring` runs HTTP/3 through the ring; `auto` keeps the
        // std engine for it (docs/http3.md, "Engines").
        if choice == EngineArg::Uring {
            if let Err(why) = uring_probe() {
                anyhow::bail!(
                    "--engine uring: io_uring is not available here ({why}); use --engine std"
                );
            }
            return run_uring(plan, control, threads, cpus, tls).map(|out| (Engine::Uring, out));
        }
        let tls = tls.map(ClientTls::engine);
        return Ok((
            Engine::Std,
            metronome_std::run_with(plan, control, tls.as_ref())?,
        ));
    }
    let use_uring = match choice {
        EngineArg::Std => false,
        EngineArg::Uring => match uring_probe() {
            Ok(()) => true,
            Err(why) => anyhow::bail!(
                "--engine uring: io_uring is not available here ({why}); use --engine std"
            ),
        },
        EngineArg::Auto => match uring_probe() {
            Ok(()) => true,
            Err(why) => {
                eprintln!("metronome: notice: io_uring unavailable ({why}); using the std engine");
                false
            }
        },
    };
    if !use_uring {
        if threads.is_some() || cpus.is_some() {
            eprintln!("metronome: notice: --threads and --cpus apply to the io_uring engine only");
        }
        let tls = tls.map(ClientTls::engine);
        return Ok((
            Engine::Std,
            metronome_std::run_with(plan, control, tls.as_ref())?,
        ));
    }
    run_uring(plan, control, threads, cpus, tls).map(|out| (Engine::Uring, out))
}

#[cfg(target_os = "linux")]
fn uring_probe() -> Result<(), String> {
    metronome_uring::probe().map_err(|e| e.to_string())
}

#[cfg(not(target_os = "linux"))]
fn uring_probe() -> Result<(), String> {
    Err("io_uring exists on Linux only".into())
}

#[cfg(target_os = "linux")]
fn run_uring(
    plan: &Plan<'_>,
    control: &Control,
    threads: Option<u32>,
    cpus: Option<&str>,
    tls: Option<&ClientTls>,
) -> anyhow::Result<RunOutput> {
    let cpus = cpus
        .map(metronome_uring::parse_cpus)
        .transpose()
        .map_err(|e| UsageError(format!("bad --cpus: {e}")))?;
    let opts = metronome_uring::UringOptions {
        threads,
        cpus,
        phase_hook: None,
        tls: tls.map(ClientTls::engine),
    };
    opts.validate().map_err(|e| {
        UsageError(match e {
            metronome_uring::UringOptionsError::NoThreads => "--threads must be at least 1".into(),
            metronome_uring::UringOptionsError::NoCpus => "--cpus lists no CPU".into(),
            other => format!("bad io_uring options: {other}"),
        })
    })?;
    // The engine builds its merged output on this thread: give it a stack
    // that fits the recorders (a few hundred KiB each).
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("metronome-uring".into())
            .stack_size(metronome_core::engine::RECORDER_STACK)
            .spawn_scoped(s, || metronome_uring::run(plan, control, &opts))?
            .join()
            .map_err(|_| anyhow::anyhow!("the io_uring engine panicked"))?
            .map_err(anyhow::Error::from)
    })
}

#[cfg(not(target_os = "linux"))]
fn run_uring(
    _plan: &Plan<'_>,
    _control: &Control,
    _threads: Option<u32>,
    _cpus: Option<&str>,
    _tls: Option<&ClientTls>,
) -> anyhow::Result<RunOutput> {
    anyhow::bail!("io_uring exists on Linux only")
}

/// True when the io_uring engine can run here (built in, and the kernel allows it).
pub fn uring_available() -> bool {
    uring_probe().is_ok()
}

/// The engine `choice` stands for without running it: `auto` is io_uring
/// where the kernel allows it, else std (the report of a run that could
/// not start names it).
pub fn chosen(choice: EngineArg) -> Engine {
    match choice {
        EngineArg::Std => Engine::Std,
        EngineArg::Uring => Engine::Uring,
        EngineArg::Auto if uring_available() => Engine::Uring,
        EngineArg::Auto => Engine::Std,
    }
}
