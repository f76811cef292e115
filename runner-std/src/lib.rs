//! metronome-std: the portable engine, one event loop per core over
//! readiness I/O (mio: epoll on Linux, kqueue on the BSDs and macOS).
//!
//! It takes a [`Plan`] and honours the semantics of the io_uring engine rule
//! for rule (DESIGN section 3): connections pre-opened before the clock
//! starts; each request sent at its intended time on an idle connection,
//! never waiting for an earlier reply; more connections opened up to
//! `max_connections` when all are busy, after which a request waits for one
//! with its clock running from its intended time; above `max_in_flight` a
//! due request is dropped and counted; timeouts, resets, refused
//! connections and malformed replies counted by kind; the arrival exactly at
//! the end not sent; warmup requests sent but not recorded; the closed model
//! only to show the difference.
//!
//! HTTP/1.1 (plain and TLS, SSE), HTTP/2 and gRPC, HTTP/3 (QUIC over a
//! non-blocking UDP socket), open and closed, run on
//! the event loop of `metronome-loop` ([`run_on`]), the very loop the
//! io_uring engine runs: one pinned thread per core (`--threads`,
//! `--cpus`), each with its own connections, its own shard of the schedule
//! and its own recorder, no allocation per request. Only how bytes move
//! differs: `ready` is this engine's [`metronome_loop::Ring`], which does
//! each socket operation when mio reports the socket ready and hands the
//! loop the completion io_uring would have given.
//!
//! [`run_threaded`] is the older design, kept for `--http3-0rtt` (requests sent
//! in 0-RTT), which the loop does not have yet: one pacer thread and a
//! dispatcher and reader thread per QUIC connection with a channel to one
//! collector (`open`, `pacer`, `queue`, `h3`, `collector`; `h1` and `h2`
//! are that design's HTTP/1.1 and HTTP/2, no longer reached by [`run`]).
//!
//! It shares nothing with the io_uring engine but core and the loop. This
//! crate moves bytes, reads the clock and sleeps.
//!
//! `unsafe` is denied in the crate and allowed in one private module only,
//! `sys`: the socket, timer and CPU-clock calls, each behind a safe function.
#![deny(missing_docs)]
#![deny(unsafe_code)]

mod clock;
mod collector;
mod conn;
mod ended;
mod h1;
mod h2;
mod h3;
mod open;
mod pacer;
mod queue;
mod ready;
#[allow(unsafe_code)]
mod sys;
mod tls;
mod traffic;

pub use metronome_loop::{parse_cpus, Options, OptionsError, Phase};
pub use tls::Tls;

use metronome_core::engine::{Control, EngineError, RunOutput, RECORDER_STACK};
use metronome_core::plan::{Model, Plan, PlanError, Wire};

/// Runs `plan` to completion (or until `control.stop` is set) and returns
/// what was measured, on the event loop with its default options (one
/// thread per allowed CPU, plain TCP).
///
/// # Errors
/// [`EngineError`] when the plan is invalid or no connection can be opened
/// before the clock starts (for example the port refuses).
pub fn run(plan: &Plan<'_>, control: &Control) -> Result<RunOutput, EngineError> {
    run_on(plan, control, &Options::default())
}

/// [`run`], over TLS when `tls` is given (an `https://` target): every
/// connection's handshake is done before it carries a request, pre-opened
/// connections' before the clock starts; connections opened during the run
/// resume the session where the server allows it, and their handshake is
/// charged to the request that waits for them. The plan's
/// [`Wire`] says which HTTP: HTTP/1.1, HTTP/2
/// (h2c, or h2 over TLS) or HTTP/3 (QUIC, ALPN `h3`, TLS only; the QUIC
/// handshakes of the pre-opened connections are done before the clock).
///
/// # Errors
/// As [`run`]; [`EngineError::Handshake`] when the handshake of a
/// connection opened before the clock fails (a refused certificate, a
/// server that does not speak TLS); [`EngineError::Plan`] for HTTP/3
/// without `tls`.
pub fn run_with(
    plan: &Plan<'_>,
    control: &Control,
    tls: Option<&Tls>,
) -> Result<RunOutput, EngineError> {
    let opts = Options {
        tls: tls.cloned(),
        ..Options::default()
    };
    run_on(plan, control, &opts)
}

/// Runs `plan` on the event loop of `metronome-loop` (one pinned thread
/// per core, readiness I/O through mio: epoll, kqueue) with `opts`
/// (threads, CPUs, TLS, HTTP/3, the test hook), as the io_uring engine
/// runs it on its ring.
///
/// # Errors
/// As [`run_with`]; [`EngineError::Io`] with an [`OptionsError`] inside
/// for invalid options.
pub fn run_on(
    plan: &Plan<'_>,
    control: &Control,
    opts: &Options,
) -> Result<RunOutput, EngineError> {
    metronome_loop::run::<ready::Ready>(plan, control, opts, "metronome-std")
}

/// Runs `plan` on the engine's older design: one pacer thread, a thread
/// per connection and a channel to one collector (open model; a closed
/// plan runs on the loop, as [`run_with`]). It alone sends HTTP/3 requests
/// in 0-RTT (`--http3-0rtt`, a `tls` with early data on), which the loop
/// does not have yet.
///
/// # Errors
/// As [`run_with`].
pub fn run_threaded(
    plan: &Plan<'_>,
    control: &Control,
    tls: Option<&Tls>,
) -> Result<RunOutput, EngineError> {
    if plan.model != Model::Open {
        return run_with(plan, control, tls);
    }
    plan.validate()?;
    if matches!(plan.wire, Wire::Http3(_)) && tls.is_none() {
        return Err(EngineError::Plan(PlanError::Http3));
    }
    // Recorders are a few hundred KiB of inline counters: the threads that
    // hold them get a stack to match (debug builds copy them on the stack).
    std::thread::scope(|s| {
        spawn_big(s, || open::run(plan, control, tls))?
            .join()
            .map_err(|_| {
                EngineError::Io("the engine thread panicked", std::io::Error::other("panic"))
            })?
    })
}

/// One GET before a run, over HTTP/3 to the https target `tls` at `addr`:
/// the request's QPACK field section `block` (core's
/// `h3::request::from_http1`), and the answer's status and whole body,
/// within `timeout` (`--openai`'s model discovery speaks the run's
/// protocol).
///
/// # Errors
/// The connection or the handshake failed (the engines' words), the
/// stream failed, or no answer came within `timeout`.
pub fn fetch_h3(
    addr: std::net::SocketAddr,
    tls: &Tls,
    block: &[u8],
    timeout: std::time::Duration,
) -> std::io::Result<(u16, Vec<u8>)> {
    let cfg = metronome_quic::Config::new(tls, addr, metronome_core::plan::Protocol::Http, 1)?;
    let local: std::net::SocketAddr = if addr.is_ipv4() {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = std::net::UdpSocket::bind(local)?;
    sock.connect(addr)?;
    metronome_quic::fetch(&sock, &cfg, block, timeout)
}

/// The kind of handshake failure a failed (re)open was, if it was one.
pub(crate) fn handshake_failure(
    e: &std::io::Error,
) -> Option<metronome_core::engine::HandshakeFailure> {
    tls::TlsFailure::of(e).map(|f| f.kind)
}

/// Spawns a scoped thread with a [`RECORDER_STACK`]-sized stack (it holds a
/// [`metronome_core::measure::Recorder`]).
pub(crate) fn spawn_big<'scope, 'env, T: Send + 'scope>(
    s: &'scope std::thread::Scope<'scope, 'env>,
    f: impl FnOnce() -> T + Send + 'scope,
) -> Result<std::thread::ScopedJoinHandle<'scope, T>, EngineError> {
    std::thread::Builder::new()
        .name("metronome-engine".into())
        .stack_size(RECORDER_STACK)
        .spawn_scoped(s, f)
        .map_err(|e| EngineError::Io("cannot start an engine thread", e))
}
