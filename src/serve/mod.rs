//! `metronome serve`: the embedded target server.
//!
//! The contract: HTTP/1.1 keep-alive on one address, behaving as **one FIFO
//! server** with a fixed service time, so a load generator's numbers can be
//! checked against a model that is known exactly.
//!
//! - A request whose head and body are complete at `t` (the time the read that
//!   completed it returned) starts service at `start = max(t, free_at)` and
//!   completes at `start + service`; `free_at` moves on to that completion. The
//!   response is written at the completion time, not before. [`Fifo`] is that
//!   arithmetic as a pure function of virtual time.
//! - `--stall-at D --stall-for S`: the first request that starts service at or
//!   after `D` (counted from the first request's arrival) is held `S` longer,
//!   so everything queued behind it waits too. One stall per server.
//! - `--error-every K`: every K-th request (1-based, in arrival order) is
//!   answered `429 Too Many Requests`, still at its FIFO completion time.
//! - `--sse`: `POST /v1/chat/completions` (and `POST /v1/completions`)
//!   answers an OpenAI-style `text/event-stream`; streams run concurrently
//!   (see [`Fifo::admit_stream`] for how the stall applies to them).
//!   `GET /v1/models` lists the one model (`--model`) in OpenAI's shape,
//!   `GET /health` answers `200` with no body (as vLLM does; guidellm checks
//!   it before a run); any other path is `404`. `--shape NAME` replays a golden stream of
//!   `tests/streams/` (OpenAI, vLLM, llama.cpp, reasoning, tool calls, ...)
//!   event by event instead of the generated one, or answers plain JSON.
//! - Waiting uses timers (`ppoll` on the connection, so a pipelined request is
//!   still stamped when it arrives); connections never hold each other up
//!   beyond the FIFO model. `--service 0` answers at once.
//!
//! The served count counts responses the model produced: `200` and injected
//! `429` replies, and in SSE mode streams that ended properly (including
//! injected error events). Rejections (`400`, `404`, `411`, `413`, `431`),
//! `/v1/models`, `/health` and streams cut on purpose are not counted.
//!
//! - `--http2`: a connection that opens with the HTTP/2 preface (h2c with
//!   prior knowledge, or h2 by ALPN with `--tls`) is served as HTTP/2 on
//!   the same model, one request per stream (`--max-streams` per
//!   connection); `application/grpc` requests get a unary gRPC answer
//!   (`--grpc-status-every`). docs/http2.md, "serve --http2", has the rest.
//! - `--http3` (with `--tls`): HTTP/3 over QUIC on UDP, on the TCP port's
//!   number, one thread for every QUIC connection (`h3`); same model,
//!   no gRPC. docs/http3.md, "serve --http3", has the rest.
//!
//! Threads: one accept thread and one thread per connection; fine up to
//! thousands of connections. [`spawn`] runs it in-process (demo, tests);
//! [`run`] is the `metronome serve` command.
//!
//! The pieces: [`fifo`] is the model, pure; `admit` decides each
//! request's answer for both protocols; `request` parses request heads
//! and chat bodies; `reply` writes status lines, headers and bodies;
//! `h2` sniffs the preface and serves HTTP/2 connections; `h3` serves
//! HTTP/3 on UDP;
//! `job` is what an HTTP/2 or HTTP/3 stream answers with;
//! `stream` holds the jobs a connection owes, SSE streams included;
//! `connection` serves one connection; `wait` is the one `poll`, the only
//! unsafe code of the server. This file binds, accepts and stops.

mod admit;
mod connection;
pub mod fifo;
mod h2;
mod h3;
mod job;
mod reply;
mod request;
mod stream;
mod transport;
#[allow(unsafe_code)]
mod wait;

use std::collections::HashMap;
use std::io::{self, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::io::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::cli::ServeArgs;
use crate::signal;
use crate::units::format_duration;
use connection::Connection;
use fifo::Fifo;
use h2::H2Connection;
use reply::{models_json, plain_body, Body};
pub use stream::Shape;
use transport::Transport;
use wait::{wait, Woken};

/// The path of the OpenAI-style chat endpoint served in SSE mode.
pub const CHAT_PATH: &str = "/v1/chat/completions";
/// The path of the OpenAI-style text completions endpoint served in SSE mode.
pub const COMPLETIONS_PATH: &str = "/v1/completions";
/// Stack of a connection thread; parsing needs little, serde_json is bounded.
const CONNECTION_STACK_BYTES: usize = 256 * 1024;

/// Everything that shapes the server's behaviour. Build one by hand (tests,
/// demo) or from [`ServeArgs`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeConfig {
    /// Address to listen on; port 0 picks a free port ([`ServerHandle::addr`]).
    pub listen: SocketAddr,
    /// Service time of the one FIFO server; zero answers at once.
    pub service: Duration,
    /// When the stall hits, counted from the first request's arrival; `None`: never.
    pub stall_at: Option<Duration>,
    /// How long the stalled request is held on top of its service time.
    pub stall_for: Duration,
    /// Answer `429 Too Many Requests` to every K-th request (1-based).
    pub error_every: Option<u64>,
    /// Serve OpenAI-style SSE streams on `POST /v1/chat/completions`.
    pub sse: bool,
    /// Content tokens per stream (capped by the request's `max_tokens`).
    pub tokens: u32,
    /// Time from a stream's service start to its first content token.
    pub ttft: Duration,
    /// Time between consecutive content tokens of a stream.
    pub itl: Duration,
    /// SSE: on every K-th request, close the connection after half the
    /// tokens (no `[DONE]`, no terminating chunk).
    pub cut_every: Option<u64>,
    /// SSE: on every K-th request, send an error event instead of the
    /// tokens, then end the body properly without `[DONE]`.
    pub error_event_every: Option<u64>,
    /// Size of the plain `200` body (`ok` repeated and truncated).
    pub body_bytes: usize,
    /// Serve HTTPS with this configuration (`serve --tls`); `None`: plain HTTP.
    pub tls: Option<TlsServer>,
    /// SSE: the stream shape (`--shape`): generated, or a golden stream.
    pub shape: Shape,
    /// SSE: the model id `GET /v1/models` lists.
    pub model: String,
    /// Also speak HTTP/2 (`serve --http2`): a connection that opens with
    /// the HTTP/2 preface (h2c with prior knowledge, or h2 after TLS with
    /// ALPN `h2`) is served by the HTTP/2 side, any other as HTTP/1.1.
    pub http2: bool,
    /// HTTP/2: the `SETTINGS_MAX_CONCURRENT_STREAMS` advertised (and
    /// enforced with `REFUSED_STREAM`).
    pub max_streams: u32,
    /// HTTP/2 gRPC: every K-th request (1-based, in arrival order) ends
    /// with `grpc-status: CODE` instead of 0, as `(K, CODE)`.
    pub grpc_status_every: Option<(u64, u32)>,
    /// Also serve HTTP/3 over QUIC on UDP, on the TCP port's number
    /// (`serve --http3`); needs `tls` (its certificate, ALPN `h3`).
    /// `max_streams` is each connection's QUIC bidirectional stream limit.
    pub http3: bool,
}

/// A TLS server configuration, compared by identity (two configs are
/// equal when they are the same one).
#[derive(Clone, Debug)]
pub struct TlsServer(pub Arc<rustls::ServerConfig>);

impl PartialEq for TlsServer {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for TlsServer {}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            service: Duration::from_millis(1),
            stall_at: None,
            stall_for: Duration::ZERO,
            error_every: None,
            sse: false,
            tokens: 16,
            ttft: Duration::from_millis(50),
            itl: Duration::from_millis(10),
            cut_every: None,
            error_event_every: None,
            body_bytes: 2,
            tls: None,
            shape: Shape::Default,
            model: "metronome".to_string(),
            http2: false,
            max_streams: 100,
            grpc_status_every: None,
            http3: false,
        }
    }
}

impl From<ServeArgs> for ServeConfig {
    fn from(args: ServeArgs) -> Self {
        Self {
            listen: args.listen,
            service: args.service,
            stall_at: args.stall_at,
            stall_for: args.stall_for.unwrap_or(Duration::ZERO),
            error_every: args.error_every,
            sse: args.sse,
            tokens: args.tokens,
            ttft: args.ttft,
            itl: args.itl,
            cut_every: args.cut_every,
            error_event_every: args.error_event_every,
            body_bytes: args.body_bytes,
            tls: None,
            shape: args.shape.into(),
            model: args.model,
            http2: args.http2,
            max_streams: args.max_streams,
            grpc_status_every: args.grpc_status_every,
            http3: args.http3,
        }
    }
}

/// Runs `metronome serve`: binds, prints `metronome serve listening on
/// http://ADDR` on stdout (flushed), serves until SIGINT or SIGTERM, then
/// prints `served N requests` and returns. A second Ctrl-C (later than
/// 200 ms after the first) exits at once.
///
/// # Errors
/// The address cannot be bound, a signal handler cannot be installed, or
/// stdout is closed.
pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let tls = serve_tls(&args)?;
    let mut config = ServeConfig::from(args);
    config.tls = tls.as_ref().map(|t| TlsServer(Arc::clone(&t.config)));
    signal::install_exit_on_second().context("cannot install the Ctrl-C handler")?;
    let server = spawn(config.clone()).with_context(|| {
        format!(
            "cannot listen on {}: pick another address with --listen",
            config.listen
        )
    })?;
    {
        let mut out = io::stdout().lock();
        let scheme = if tls.is_some() { "https" } else { "http" };
        writeln!(
            out,
            "metronome serve listening on {scheme}://{}",
            server.addr()
        )
        .and_then(|()| out.flush())
        .context("cannot write to stdout")?;
        if let Some(t) = &tls {
            writeln!(out, "certificate sha256 fingerprint {}", t.fingerprint)
                .and_then(|()| out.flush())
                .context("cannot write to stdout")?;
        }
    }
    eprintln!("{}; Ctrl-C stops", describe(&config));
    while !signal::interrupted() {
        thread::sleep(Duration::from_millis(25));
    }
    let served = server.stop();
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "served {}",
        crate::report::num::counted(served, "request")
    )
    .and_then(|()| out.flush())
    .context("cannot write to stdout")?;
    Ok(())
}

/// The TLS side of `serve --tls`: `--cert/--key`, or a fresh self-signed
/// certificate; written to `--cert-out` when asked.
fn serve_tls(args: &ServeArgs) -> anyhow::Result<Option<crate::tls::ServerTls>> {
    if !args.tls {
        return Ok(None);
    }
    let tls = match (&args.cert, &args.key) {
        (Some(cert), Some(key)) => {
            crate::tls::ServerTls::from_pem_files(cert, key, args.client_ca.as_deref())?
        }
        _ => crate::tls::ServerTls::self_signed_for(args.client_ca.as_deref())?,
    };
    if let Some(path) = &args.cert_out {
        std::fs::write(path, &tls.cert_pem)
            .with_context(|| format!("cannot write --cert-out {}", path.display()))?;
    }
    Ok(Some(tls))
}

/// One line describing the model, for humans (stderr).
fn describe(config: &ServeConfig) -> String {
    let mut text = if config.sse && config.shape != Shape::Default {
        format!(
            "SSE streams on POST {CHAT_PATH}: the golden {:?} shape, first event at once, then ttft {}, itl {}",
            config.shape,
            format_duration(config.ttft),
            format_duration(config.itl)
        )
    } else if config.sse {
        format!(
            "SSE streams on POST {CHAT_PATH}: {} tokens, ttft {}, itl {}",
            config.tokens,
            format_duration(config.ttft),
            format_duration(config.itl)
        )
    } else {
        format!(
            "one FIFO server, service {}",
            format_duration(config.service)
        )
    };
    if let Some(at) = config.stall_at {
        text += &format!(
            ", stall {} at {}",
            format_duration(config.stall_for),
            format_duration(at)
        );
    }
    for (name, every) in [
        ("429", config.error_every),
        ("cut stream", config.cut_every.filter(|_| config.sse)),
        (
            "error event",
            config.error_event_every.filter(|_| config.sse),
        ),
    ] {
        if let Some(k) = every {
            text += &format!(", {name} every {k}");
        }
    }
    if config.http2 {
        text += &format!(
            "; HTTP/2 (h2c prior knowledge{}) and HTTP/1.1, max {} streams per connection",
            if config.tls.is_some() {
                ", h2 by ALPN"
            } else {
                ""
            },
            config.max_streams
        );
        if let Some((k, code)) = config.grpc_status_every {
            text += &format!(", grpc-status {code} every {k}");
        }
    }
    if config.http3 {
        text += &format!(
            "; HTTP/3 on UDP (same port), max {} streams per connection",
            config.max_streams
        );
    }
    text
}

/// A running server started by [`spawn`]. Dropping it stops it too.
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// Writing a byte here makes `shared.wake` readable forever: every
    /// thread's wait returns.
    wake: UnixStream,
    accept: Option<JoinHandle<()>>,
    /// The HTTP/3 thread (`--http3`).
    h3: Option<JoinHandle<()>>,
}

impl ServerHandle {
    /// The bound address (with the real port when `listen` had port 0).
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Responses served so far (see the module docs for what counts).
    #[must_use]
    pub fn served(&self) -> u64 {
        self.shared.served.load(Ordering::SeqCst)
    }

    /// Stops accepting, closes every connection (including ones blocked in
    /// a read, a write or a long stall), joins all threads and returns the
    /// served count. Responses not yet due are not sent.
    pub fn stop(mut self) -> u64 {
        self.shutdown();
        self.served()
    }

    fn shutdown(&mut self) {
        let Some(accept) = self.accept.take() else {
            return;
        };
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Wake every waiter; if this write failed the sockets' shutdown below
        // still ends the connections, and the accept thread checks `stopping`.
        let _ = (&self.wake).write_all(&[1]);
        let _ = accept.join();
        if let Some(h3) = self.h3.take() {
            let _ = h3.join();
        }
        let open: Vec<_> = {
            let mut conns = self.shared.connections();
            conns.closed = true;
            conns.open.drain().map(|(_, entry)| entry).collect()
        };
        for (stream, _) in &open {
            let _ = stream.shutdown(Shutdown::Both);
        }
        for (_, handle) in open {
            if let Some(handle) = handle {
                let _ = handle.join();
            }
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Starts the server on `config.listen` in background threads and returns
/// at once; the listener is bound before this returns.
///
/// # Errors
/// Binding the address (with `http3`, its UDP port too), creating the
/// wake-up socket pair or spawning a thread failed; `http3` without
/// `tls`, or with a TLS configuration that cannot carry QUIC.
///
/// # Example
/// ```
/// use std::io::{Read, Write};
/// use metronome::serve::{spawn, ServeConfig};
/// let server = spawn(ServeConfig { listen: "127.0.0.1:0".parse().unwrap(), ..ServeConfig::default() }).unwrap();
/// let mut conn = std::net::TcpStream::connect(server.addr()).unwrap();
/// conn.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
/// let mut reply = String::new();
/// conn.read_to_string(&mut reply).unwrap();
/// assert!(reply.starts_with("HTTP/1.1 200 OK\r\n") && reply.ends_with("\r\n\r\nok"));
/// assert_eq!(server.stop(), 1);
/// ```
pub fn spawn(config: ServeConfig) -> io::Result<ServerHandle> {
    let listener = TcpListener::bind(config.listen)?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let (wake_rx, wake_tx) = UnixStream::pair()?;
    let tls = config.tls.as_ref().map(|t| {
        if config.http2 {
            // ALPN: h2 first, HTTP/1.1 still served.
            let mut server = (*t.0).clone();
            server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            Arc::new(server)
        } else {
            Arc::clone(&t.0)
        }
    });
    let shared = Arc::new(Shared {
        fifo: Mutex::new(Fifo::from_config(&config)),
        tls,
        plain_body: plain_body(config.body_bytes),
        models_json: models_json(&config.model),
        config,
        epoch: Instant::now(),
        served: AtomicU64::new(0),
        stopping: AtomicBool::new(false),
        conns: Mutex::new(Connections::default()),
        wake: wake_rx,
    });
    let h3 = if shared.config.http3 {
        Some(h3::spawn(&shared, addr)?)
    } else {
        None
    };
    let accept = {
        let shared = Arc::clone(&shared);
        thread::Builder::new()
            .name("serve-accept".into())
            .spawn(move || accept_loop(&shared, &listener))
    };
    let accept = match accept {
        Ok(accept) => accept,
        Err(e) => {
            let _ = (&wake_tx).write_all(&[1]);
            if let Some(h3) = h3 {
                let _ = h3.join();
            }
            return Err(e);
        }
    };
    Ok(ServerHandle {
        addr,
        shared,
        wake: wake_tx,
        accept: Some(accept),
        h3,
    })
}

#[derive(Debug)]
struct Shared {
    config: ServeConfig,
    /// The TLS configuration connections use (ALPN `h2` added with
    /// `--http2`).
    tls: Option<Arc<rustls::ServerConfig>>,
    plain_body: Vec<u8>,
    /// The answer to `GET /v1/models`.
    models_json: Vec<u8>,
    /// Time origin of the FIFO's virtual clock.
    epoch: Instant,
    fifo: Mutex<Fifo>,
    served: AtomicU64,
    stopping: AtomicBool,
    conns: Mutex<Connections>,
    /// Readable once the server is stopping.
    wake: UnixStream,
}

impl Shared {
    fn connections(&self) -> MutexGuard<'_, Connections> {
        self.conns.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn fifo(&self) -> MutexGuard<'_, Fifo> {
        self.fifo.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The content type and bytes of `body`.
    fn body(&self, body: Body) -> (&'static str, &[u8]) {
        match body {
            Body::Plain => ("text/plain", &self.plain_body),
            Body::Text(text) => ("text/plain", text.as_bytes()),
            Body::Json(json) => ("application/json", json.as_bytes()),
            Body::Models => ("application/json", &self.models_json),
        }
    }

    fn since_epoch(&self, at: Instant) -> Duration {
        at.saturating_duration_since(self.epoch)
    }
}

/// Open connections: a clone of each socket (to shut it down on stop) and
/// its thread.
#[derive(Debug, Default)]
struct Connections {
    next_id: u64,
    open: HashMap<u64, (TcpStream, Option<JoinHandle<()>>)>,
    closed: bool,
}

fn accept_loop(shared: &Arc<Shared>, listener: &TcpListener) {
    let wake = shared.wake.as_raw_fd();
    while !shared.stopping.load(Ordering::SeqCst) {
        match wait(Some(listener.as_raw_fd()), wake, None) {
            Ok(Woken::Stop) => return,
            Ok(_) => {}
            Err(_) => thread::sleep(Duration::from_millis(10)),
        }
        loop {
            match listener.accept() {
                Ok((stream, _)) => start_connection(shared, stream),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // Out of descriptors or memory: back off, keep serving.
                    eprintln!("metronome serve: accept failed: {e}");
                    thread::sleep(Duration::from_millis(100));
                    break;
                }
            }
        }
    }
}

fn start_connection(shared: &Arc<Shared>, stream: TcpStream) {
    // Accepted sockets inherit O_NONBLOCK on some systems; we want blocking
    // reads after `poll` says readable, and blocking writes.
    if stream.set_nonblocking(false).is_err() {
        return;
    }
    let _ = stream.set_nodelay(true);
    let Ok(clone) = stream.try_clone() else {
        return;
    };
    let id = {
        let mut conns = shared.connections();
        if conns.closed {
            return;
        }
        conns.next_id += 1;
        let id = conns.next_id;
        conns.open.insert(id, (clone, None));
        id
    };
    let worker = Arc::clone(shared);
    let spawned = thread::Builder::new()
        .name("serve-conn".into())
        .stack_size(CONNECTION_STACK_BYTES)
        .spawn(move || {
            if let Ok(mut transport) = Transport::new(stream, worker.tls.as_ref()) {
                if !worker.config.http2 {
                    Connection::new(&worker, transport).serve();
                } else {
                    match h2::sniff(&worker, &mut transport) {
                        Ok(Some((bytes, at, true))) => {
                            H2Connection::new(&worker, transport, bytes, at).serve();
                        }
                        Ok(Some((bytes, at, false))) => {
                            Connection::with_bytes(&worker, transport, bytes, at).serve();
                        }
                        Ok(None) | Err(_) => {
                            let _ = transport.socket().shutdown(Shutdown::Both);
                        }
                    }
                }
            }
            worker.connections().open.remove(&id);
        });
    let mut conns = shared.connections();
    match spawned {
        Ok(handle) => {
            if let Some(entry) = conns.open.get_mut(&id) {
                entry.1 = Some(handle);
            }
        }
        Err(e) => {
            conns.open.remove(&id);
            eprintln!("metronome serve: cannot start a connection thread: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    #[test]
    fn args_defaults_match_config_default() {
        let args = Cli::try_parse_from(["serve"]).unwrap().serve;
        assert_eq!(ServeConfig::from(args), ServeConfig::default());
    }

    #[test]
    fn args_map_to_config() {
        let args = Cli::try_parse_from([
            "serve",
            "--listen",
            "9000",
            "--service",
            "250us",
            "--stall-at",
            "2s",
            "--stall-for",
            "500ms",
            "--error-every",
            "10",
            "--sse",
            "--tokens",
            "8",
            "--ttft",
            "100ms",
            "--itl",
            "5ms",
            "--cut-every",
            "7",
            "--error-event-every",
            "9",
            "--body-bytes",
            "64",
            "--model",
            "org/Model-7B",
            "--http2",
            "--max-streams",
            "8",
            "--grpc-status-every",
            "3:14",
        ])
        .unwrap()
        .serve;
        let config = ServeConfig::from(args);
        assert_eq!(
            config,
            ServeConfig {
                listen: "127.0.0.1:9000".parse().unwrap(),
                service: us(250),
                stall_at: Some(ms(2000)),
                stall_for: ms(500),
                error_every: Some(10),
                sse: true,
                tokens: 8,
                ttft: ms(100),
                itl: ms(5),
                cut_every: Some(7),
                error_event_every: Some(9),
                body_bytes: 64,
                tls: None,
                shape: Shape::Default,
                model: "org/Model-7B".into(),
                http2: true,
                max_streams: 8,
                grpc_status_every: Some((3, 14)),
                http3: false,
            }
        );
    }

    #[test]
    fn args_reject_nonsense() {
        assert!(Cli::try_parse_from(["serve", "--error-every", "0"]).is_err());
        assert!(Cli::try_parse_from(["serve", "--stall-at", "1s"]).is_err());
        assert!(Cli::try_parse_from(["serve", "--service", "10"]).is_err());
        assert!(Cli::try_parse_from(["serve", "--listen", "nowhere:port"]).is_err());
        assert!(Cli::try_parse_from(["serve", "--max-streams", "0"]).is_err());
        for bad in ["3", "0:14", "3:", "x:1", "3:17"] {
            assert!(
                Cli::try_parse_from(["serve", "--grpc-status-every", bad]).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn http3_needs_tls() {
        let args = Cli::try_parse_from(["serve", "--tls", "--http3", "--max-streams", "4"])
            .unwrap()
            .serve;
        let config = ServeConfig::from(args);
        assert!(config.http3);
        assert_eq!(config.max_streams, 4);
        assert!(describe(&config)
            .ends_with("; HTTP/3 on UDP (same port), max 4 streams per connection"));
        assert!(Cli::try_parse_from(["serve", "--http3"]).is_err());
        // The library refuses it too, with a reason.
        let err = spawn(ServeConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            http3: true,
            ..ServeConfig::default()
        })
        .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(err.to_string(), "HTTP/3 needs --tls");
    }

    #[test]
    fn describe_names_the_model() {
        let config = ServeConfig {
            stall_at: Some(ms(2000)),
            stall_for: ms(500),
            error_every: Some(10),
            ..ServeConfig::default()
        };
        assert_eq!(
            describe(&config),
            "one FIFO server, service 1.00ms, stall 500.00ms at 2.000s, 429 every 10"
        );
    }
}
