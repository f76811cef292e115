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
    /// The portable std engine: the same event loop over readiness (mio),
    /// every thread pacing; with `--http3-0rtt` still one pacer thread.
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
    /// thread of the event loop (either engine); with `--http3-0rtt`
    /// (`zero_rtt`) the std engine's one pacer (its older dispatcher).
    pub fn pacers(self, threads: usize, zero_rtt: bool) -> u64 {
        match self {
            Engine::Std if zero_rtt => 1,
            Engine::Uring | Engine::Std => threads.max(1) as u64,
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
        // std engine for it (docs/http3.md, "Engines"): its event loop,
        // or with `--http3-0rtt` its older dispatcher, which alone sends
        // requests in 0-RTT.
        if choice == EngineArg::Uring {
            if let Err(why) = uring_probe() {
                anyhow::bail!(
                    "--engine uring: io_uring is not available here ({why}); use --engine std"
                );
            }
            let opts = loop_options(threads, cpus, tls)?;
            return run_uring(plan, control, &opts).map(|out| (Engine::Uring, out));
        }
        if !tls.is_some_and(ClientTls::early_data) {
            let opts = loop_options(threads, cpus, tls)?;
            let out = on_big_stack("metronome-std", || {
                metronome_std::run_on(plan, control, &opts)
            })?;
            return Ok((Engine::Std, out));
        }
        let tls = tls.map(ClientTls::engine);
        return Ok((
            Engine::Std,
            metronome_std::run_threaded(plan, control, tls.as_ref())?,
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
    let opts = loop_options(threads, cpus, tls)?;
    if !use_uring {
        return Ok((
            Engine::Std,
            on_big_stack("metronome-std", || {
                metronome_std::run_on(plan, control, &opts)
            })?,
        ));
    }
    run_uring(plan, control, &opts).map(|out| (Engine::Uring, out))
}

/// The event loop's options from the command line (both engines run it).
///
/// # Errors
/// A bad `--cpus` list or `--threads 0` (a [`UsageError`], exit 2).
fn loop_options(
    threads: Option<u32>,
    cpus: Option<&str>,
    tls: Option<&ClientTls>,
) -> anyhow::Result<metronome_std::Options> {
    let cpus = cpus
        .map(metronome_std::parse_cpus)
        .transpose()
        .map_err(|e| UsageError(format!("bad --cpus: {e}")))?;
    let opts = metronome_std::Options {
        threads,
        cpus,
        phase_hook: None,
        tls: tls.map(ClientTls::engine),
    };
    opts.validate().map_err(|e| {
        UsageError(match e {
            metronome_std::OptionsError::NoThreads => "--threads must be at least 1".into(),
            metronome_std::OptionsError::NoCpus => "--cpus lists no CPU".into(),
            other => format!("bad engine options: {other}"),
        })
    })?;
    Ok(opts)
}

/// Runs an engine on a thread of its own whose stack fits the recorders
/// (a few hundred KiB each): the engine builds its merged output there.
fn on_big_stack(
    name: &str,
    f: impl FnOnce() -> Result<RunOutput, metronome_core::engine::EngineError> + Send,
) -> anyhow::Result<RunOutput> {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name(name.into())
            .stack_size(metronome_core::engine::RECORDER_STACK)
            .spawn_scoped(s, f)?
            .join()
            .map_err(|_| anyhow::anyhow!("the {name} engine panicked"))?
            .map_err(anyhow::Error::from)
    })
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
    opts: &metronome_std::Options,
) -> anyhow::Result<RunOutput> {
    on_big_stack("metronome-uring", || {
        metronome_uring::run(plan, control, opts)
    })
}

#[cfg(not(target_os = "linux"))]
fn run_uring(
    _plan: &Plan<'_>,
    _control: &Control,
    _opts: &metronome_std::Options,
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
