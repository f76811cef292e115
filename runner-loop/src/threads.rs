//! Setting the engine up: the connections pre-opened before the clock
//! starts, each thread's share of the plan, the start gate that releases
//! every thread on one clock origin, and the merge of their outputs. Each
//! thread's event loop is [`crate::worker`].

use std::io;
use std::net::TcpStream;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use rustls::ClientConnection;

use metronome_core::engine::tls::expect_h2;
use metronome_core::engine::{
    greet_h2, pre_open, warm_start, warm_up, Control, EngineError, Origin, RunOutput, Setup, Warm,
    WarmConn, WarmReply,
};
use metronome_core::exchange::Exchange;
use metronome_core::plan::{Model, Plan, PlanError, WarmUp, Wire};
use metronome_quic::Config as QuicConfig;

use crate::clock::Clock;
use crate::ring::{connected_udp, Ring};
use crate::sys::{allowed_cpus, pin_to_cpu};
use crate::worker::{Greeted, H3Opened, Share, Stream, ThreadOut, Worker};
use crate::Options;

/// Engine thread stack (the recorder is large and built on the thread).
const STACK: usize = 16 << 20;

/// A thread's output and how late after the clock's origin it began pacing.
struct Started {
    out: io::Result<ThreadOut>,
    late_ns: u64,
}

/// Splits `total` over `n` parts: part `i` gets `total / n` plus one of the remainder.
fn split(total: u64, n: usize, i: usize) -> u64 {
    let n = n as u64;
    total / n + u64::from((i as u64) < total % n)
}

pub(crate) fn run<R: Ring>(
    plan: &Plan<'_>,
    control: &Control,
    opts: &Options,
    name: &str,
) -> Result<RunOutput, EngineError> {
    plan.validate()?;
    opts.validate().map_err(|e| {
        EngineError::Io(
            "invalid engine options",
            io::Error::new(io::ErrorKind::InvalidInput, e),
        )
    })?;
    let workers = match plan.model {
        Model::Closed { workers, .. } => Some(workers),
        Model::Open => None,
    };
    let cpus = opts.cpus.clone().unwrap_or_else(allowed_cpus);
    let mut threads = match opts.threads {
        Some(t) => t as usize,
        None => cpus.len().max(1),
    };
    let connect_timeout = Duration::from_nanos(plan.connect_timeout_ns());
    let h3 = h3_config(plan, opts)?;

    // Pre-open the connections before the clock starts.
    // Core's rule: a refused handshake or the first failure fails the
    // run (closed model: any, one connection per worker); a later one warns.
    let wanted = workers.unwrap_or(plan.connections);
    let mut warnings = Vec::new();
    let mut setup = Setup::default();
    let mut quic = Vec::new();
    let mut streams = match &h3 {
        Some(cfg) => {
            let open = || open_h3(cfg, connect_timeout, &mut setup);
            quic = pre_open(wanted, false, open, &mut warnings)?;
            Vec::new()
        }
        None => pre_open(
            wanted,
            workers.is_some(),
            || {
                open_one(plan, opts, connect_timeout, &mut setup)
                    .and_then(|s| greet_if_h2(plan, s, connect_timeout))
            },
            &mut warnings,
        )?,
    };
    let mut warm = Warm::default();
    let opened_first = (streams.len() + quic.len()) as u64;
    // HTTP/2 connections are usable once greeted (no warm-up request).
    let http2 = plan.wire.streams().is_some();
    if workers.is_none() && plan.warm_up != WarmUp::Off && !streams.is_empty() && !http2 {
        // Core's warm start over this engine's blocking pre-clock I/O.
        let pre: Vec<Pre> = streams.into_iter().map(|(s, _)| Pre(s)).collect();
        let open = |limit: Duration| open_one(plan, opts, limit, &mut setup).ok().map(Pre);
        streams = warm_start(plan, control, pre, open, &mut warm)
            .into_iter()
            .map(|p| (p.0, None))
            .collect();
    }
    let kept = (streams.len() + quic.len()) as u64;
    threads = threads.min(kept as usize).max(1);
    if workers.is_none() {
        threads = threads.min(plan.max_in_flight as usize);
    }

    // Each thread's share.
    let mut shares: Vec<Share> = (0..threads)
        .map(|t| Share {
            thread: t,
            cpu: (!cpus.is_empty()).then(|| cpus[t % cpus.len()]),
            shard: plan.shard.split(t as u32, threads as u32),
            threads,
            streams: Vec::new(),
            h3: h3.clone(),
            quic: Vec::new(),
            slots: 0,
            max_in_flight: split(u64::from(plan.max_in_flight), threads, t).max(1) as usize,
            worker_base: 0,
            warm_service_ns: None,
            writes_first: warm.writes_first,
        })
        .collect();
    for (i, s) in streams.into_iter().enumerate() {
        shares[i % threads].streams.push(s);
    }
    for (i, q) in quic.into_iter().enumerate() {
        shares[i % threads].quic.push(q);
    }
    let mut base = 0u64;
    let warm_service_ns = warm.median_service_ns().zip(warm.min_service_ns());
    for (t, share) in shares.iter_mut().enumerate() {
        share.warm_service_ns = warm_service_ns;
        let pre = share.streams.len() + share.quic.len();
        share.slots = match workers {
            Some(_) => pre,
            None => (split(u64::from(plan.max_connections), threads, t) as usize).max(pre),
        };
        share.worker_base = base;
        base += pre as u64;
    }

    let gate = Gate::default();
    let results: Vec<Started> = std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(threads);
        let mut spawn_error = None;
        for share in shares {
            let gate = &gate;
            let h = std::thread::Builder::new()
                .name(format!("{name}-{}", share.thread))
                .stack_size(STACK)
                .spawn_scoped(s, move || {
                    thread_main::<R>(plan, control, opts, share, gate)
                });
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    spawn_error = Some(e);
                    break;
                }
            }
        }
        // Every thread has allocated everything: the clock starts now, or at
        // `--start-at` (or never).
        let abort = spawn_error.is_some();
        gate.open(handles.len(), abort, || Origin::for_run(control));
        let mut results: Vec<Started> = handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| Started {
                    out: Err(io::Error::other("an engine thread panicked")),
                    late_ns: 0,
                })
            })
            .collect();
        if let Some(e) = spawn_error {
            results.push(Started {
                out: Err(e),
                late_ns: 0,
            });
        }
        results
    });

    let mut out = RunOutput::empty(plan);
    let mut stopped_at: Option<u64> = None;
    out.start_unix_ns = gate.origin().map_or(0, |o| o.unix_ns);
    for r in results {
        out.start_late_ns = out.start_late_ns.max(r.late_ns);
        let t = r.out.map_err(|e| EngineError::Io("engine thread", e))?;
        out.merge(&t.out);
        if let Some(at) = t.stopped_at {
            stopped_at = Some(stopped_at.map_or(at, |s| s.min(at)));
        }
    }
    out.stopped = stopped_at.is_some();
    out.measured_ns = plan.measured_ns(stopped_at);
    out.warnings.extend(warnings);
    // A note each thread made once (an HTTP/3 connection's end) is said once.
    let mut seen = std::collections::HashSet::new();
    out.warnings.retain(|w| seen.insert(w.clone()));
    out.setup.merge(&setup);
    // Every connect made: the first ones (kept or not) and the warm-up's
    // (the threads counted those they were handed, `kept`).
    out.connections_opened += opened_first.saturating_sub(kept) + warm.reopened;
    out.warm = warm;
    out.finalize(plan);
    Ok(out)
}

/// A pre-opened connection during the warm start (core's [`WarmConn`]).
struct Pre(Stream);

impl WarmConn for Pre {
    /// Bytes (or a close) on the socket. Over TLS only plaintext counts (a
    /// session ticket is not a response), so the check is left to the
    /// warm-up request and the run.
    fn early_bytes(&mut self) -> bool {
        let (sock, tls) = &self.0;
        if tls.is_some() {
            return false;
        }
        let mut b = [0u8; 1];
        if sock.set_nonblocking(true).is_err() {
            return true;
        }
        let seen =
            !matches!(sock.peek(&mut b), Err(ref e) if e.kind() == io::ErrorKind::WouldBlock);
        let _ = sock.set_nonblocking(false);
        seen
    }

    /// The warm-up exchange through core's [`warm_up`], over the socket or
    /// its TLS session, with 20 ms read and write slices.
    fn warm(&mut self, plan: &Plan<'_>, give_up: &(dyn Fn() -> bool + Sync)) -> WarmReply {
        let (sock, tls) = &mut self.0;
        let slice = Duration::from_millis(20);
        let mut exchange = Exchange::for_plan(plan);
        let _ = sock.set_read_timeout(Some(slice));
        let _ = sock.set_write_timeout(Some(slice));
        let request = plan.requests[0];
        let reply = match tls.as_deref_mut() {
            None => warm_up(&mut &*sock, &mut exchange, request, give_up),
            Some(tls) => {
                let mut io = &*sock;
                let mut stream = rustls::Stream::new(tls, &mut io);
                warm_up(&mut stream, &mut exchange, request, give_up)
            }
        };
        let _ = sock.set_read_timeout(None);
        let _ = sock.set_write_timeout(None);
        reply
    }
}

/// Opens one connection before the clock starts, with its TLS handshake
/// on https; records its set-up times.
fn open_one(
    plan: &Plan<'_>,
    opts: &Options,
    timeout: Duration,
    setup: &mut Setup,
) -> io::Result<(TcpStream, Option<Box<ClientConnection>>)> {
    let started = Instant::now();
    let s = TcpStream::connect_timeout(&plan.addr, timeout)?;
    let connect_ns = started.elapsed().as_nanos() as u64;
    s.set_nodelay(true)?;
    let Some(tls) = &opts.tls else {
        setup.opened(connect_ns, None, false);
        return Ok((s, None));
    };
    let shaking = Instant::now();
    let mut conn = metronome_core::engine::tls::client(tls)?;
    let resumed = metronome_core::engine::tls::handshake(tls, &mut conn, &s, started + timeout)?;
    setup.opened(
        connect_ns,
        Some(shaking.elapsed().as_nanos() as u64),
        resumed,
    );
    let (tls13, alpn) = metronome_core::engine::tls::agreed(&conn);
    setup.negotiated(tls13, alpn);
    Ok((s, Some(Box::new(conn))))
}

/// HTTP/3 ([`Wire::Http3`]): how its connections are opened, from the
/// https target's TLS; `None` for TCP (HTTP/1.1 and HTTP/2).
///
/// # Errors
/// [`EngineError::Plan`] ([`PlanError::Http3`]) for an HTTP/3 plan
/// without TLS; a TLS configuration that cannot carry QUIC, as a refused
/// handshake.
fn h3_config(plan: &Plan<'_>, opts: &Options) -> Result<Option<QuicConfig>, EngineError> {
    let Wire::Http3(streams) = plan.wire else {
        return Ok(None);
    };
    let Some(tls) = opts.tls.as_ref() else {
        return Err(EngineError::Plan(PlanError::Http3));
    };
    QuicConfig::new(tls, plan.addr, plan.protocol, streams.max_streams)
        .map(|c| Some(c.with_checks(plan.checks)))
        .map_err(EngineError::connect)
}

/// Opens one HTTP/3 connection before the clock starts: a connected UDP
/// socket and the QUIC handshake, blocking, within `timeout`; records its
/// set-up time. The ring takes the socket over once the clock starts.
///
/// # Errors
/// A refused port (ICMP unreachable) as `ConnectionRefused`; a failed or
/// timed-out handshake as a refused handshake of its kind.
fn open_h3(cfg: &QuicConfig, timeout: Duration, setup: &mut Setup) -> io::Result<H3Opened> {
    let sock = connected_udp(cfg.remote())?;
    // Not early: this engine sends no 0-RTT (`--http3-0rtt` is std's), so
    // the handshake time is always there.
    let (client, shaken) = metronome_quic::handshake(&sock, cfg, timeout, false)?;
    let shake = shaken.unwrap_or_default().as_nanos() as u64;
    setup.opened(shake, Some(shake), false);
    setup.negotiated(true, Some(b"h3"));
    Ok((sock, Box::new(client)))
}

/// For HTTP/2: the SETTINGS exchange on a pre-opened connection, before
/// the clock (over TLS, after checking that the server chose h2 by ALPN).
fn greet_if_h2(
    plan: &Plan<'_>,
    (sock, mut tls): Stream,
    timeout: Duration,
) -> io::Result<(Stream, Option<Greeted>)> {
    if plan.wire.streams().is_none() {
        return Ok(((sock, tls), None));
    }
    let deadline = Instant::now() + timeout.max(Duration::from_millis(1));
    let greeted = match tls.as_deref_mut() {
        None => greet_h2(&mut &sock, &sock, deadline)?,
        Some(t) => {
            expect_h2(t)?;
            greet_h2(&mut rustls::Stream::new(t, &mut &sock), &sock, deadline)?
        }
    };
    Ok(((sock, tls), Some(greeted)))
}

/// The start line: threads report ready (or failed); the caller starts the
/// clock once all are ready, or aborts the run.
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Default)]
struct GateState {
    arrived: usize,
    failed: bool,
    /// `Some(Some(origin))`: go; `Some(None)`: abort.
    go: Option<Option<Origin>>,
}

impl Gate {
    /// A thread is set up (`ok`) or failed; waits for the start. Returns
    /// the clock origin, or `None` when the run is aborted.
    fn arrive(&self, ok: bool) -> Option<Origin> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.arrived += 1;
        st.failed |= !ok;
        self.changed.notify_all();
        loop {
            if let Some(go) = st.go {
                return go;
            }
            st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Waits until `threads` have arrived, then hands them the clock's
    /// origin, taken then (now, or `--start-at`), or aborts; each thread
    /// waits for the origin itself.
    fn open(&self, threads: usize, abort: bool, origin: impl FnOnce() -> Origin) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while st.arrived < threads {
            st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.go = Some((!abort && !st.failed).then(origin));
        self.changed.notify_all();
    }

    /// The origin handed out, if the run started.
    fn origin(&self) -> Option<Origin> {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.go.flatten()
    }
}

fn thread_main<R: Ring>(
    plan: &Plan<'_>,
    control: &Control,
    opts: &Options,
    share: Share,
    gate: &Gate,
) -> Started {
    // Everything is allocated here, before the clock starts.
    let mut warning = None;
    if let Some(cpu) = share.cpu {
        if let Err(e) = pin_to_cpu(cpu) {
            warning = Some(format!(
                "thread {} not pinned to CPU {cpu}: {e}",
                share.thread
            ));
        }
    }
    let setup = Worker::<R>::new(plan, control, opts, share, warning);
    let origin = gate.arrive(setup.is_ok());
    let worker = match setup {
        Ok(w) => w,
        Err(e) => {
            return Started {
                out: Err(e),
                late_ns: 0,
            }
        }
    };
    let Some(origin) = origin else {
        return Started {
            out: Err(io::Error::other("another engine thread failed to start")),
            late_ns: 0,
        };
    };
    // Pacing begins at the origin (now, or `--start-at`), not before.
    let late_ns = origin.wait_unless(&control.stop);
    Started {
        out: worker.run(Clock::at(origin.instant)),
        late_ns,
    }
}
