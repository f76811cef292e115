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
//! - `--sse`: `POST /v1/chat/completions` answers an OpenAI-style
//!   `text/event-stream`; streams run concurrently (see [`Fifo::admit_stream`]
//!   for how the stall applies to them). `GET /v1/models` lists the one model;
//!   any other path is `404`.
//! - Waiting uses timers (`ppoll` on the connection, so a pipelined request is
//!   still stamped when it arrives); connections never hold each other up
//!   beyond the FIFO model. `--service 0` answers at once.
//!
//! The served count counts responses the model produced: `200` and injected
//! `429` replies, and in SSE mode streams that ended properly (including
//! injected error events). Rejections (`400`, `404`, `411`, `413`, `431`),
//! `/v1/models` and streams cut on purpose are not counted.
//!
//! Threads: one accept thread and one thread per connection; fine up to
//! thousands of connections. [`spawn`] runs it in-process (demo, tests);
//! [`run`] is the `metronome serve` command.

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::unix::io::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;

use crate::units::{format_duration, parse_duration};

/// The path of the OpenAI-style chat endpoint served in SSE mode.
pub const CHAT_PATH: &str = "/v1/chat/completions";

/// The largest request head accepted; a longer one is answered `431`.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// The largest request body accepted; a longer one is answered `413`.
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
/// Headers parsed per request; more is answered `431`.
const MAX_HEADERS: usize = 64;
/// Pipelined requests queued on one connection before it stops reading.
const MAX_QUEUED: usize = 1024;
/// Longest single timer wait: keeps the kernel's timer slack (0.1% of the
/// timeout for `poll`) at tens of microseconds even during a long stall.
const MAX_WAIT_SLICE: Duration = Duration::from_millis(50);
/// How long a closing connection drains the client's leftover bytes so the
/// kernel does not answer them with a reset that would destroy our response.
const LINGER: Duration = Duration::from_millis(500);
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
}

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
        }
    }
}

/// Run the embedded target server: one FIFO server over HTTP/1.1 keep-alive.
///
/// A request arriving at t completes at max(t, free_at) + SERVICE, and
/// free_at moves on. The first line printed is "metronome serve listening
/// on http://ADDR"; Ctrl-C (or SIGTERM) stops it and prints "served N
/// requests".
#[derive(Args, Clone, Debug, PartialEq, Eq)]
pub struct ServeArgs {
    /// Address to listen on (IP:PORT, HOST:PORT, or a bare PORT on 127.0.0.1).
    ///
    /// Port 0 picks a free port; the first line printed names the real one.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080", value_parser = parse_listen)]
    pub listen: SocketAddr,

    /// Service time of the single FIFO server (0 answers at once).
    ///
    /// A request arriving at t completes at max(t, free_at) + SERVICE, and
    /// free_at moves on to that completion.
    #[arg(long, value_name = "DURATION", default_value = "1ms", value_parser = parse_duration)]
    pub service: Duration,

    /// Stall the server once: the first request that starts service at or
    /// after this time (counted from the first request) is held --stall-for.
    ///
    /// Everything queued behind it waits too. In --sse mode the stream
    /// arriving first at or after this time gets its first token --stall-for
    /// later, and streams arriving during the stall start when it ends.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "stall_for")]
    pub stall_at: Option<Duration>,

    /// How long the stall lasts (needs --stall-at).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "stall_at")]
    pub stall_for: Option<Duration>,

    /// Answer 429 Too Many Requests to every K-th request (in arrival
    /// order), still at its FIFO time.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    pub error_every: Option<u64>,

    /// Serve OpenAI-style SSE streams on POST /v1/chat/completions.
    ///
    /// Each stream sends a role chunk at once, content token i at
    /// start + TTFT + i * ITL, a usage chunk with completion_tokens, then
    /// "data: [DONE]". Streams run concurrently. A "max_tokens" (or
    /// "max_completion_tokens") in the JSON body caps --tokens. Other paths
    /// answer 404 (GET /v1/models lists the model `metronome`).
    #[arg(long)]
    pub sse: bool,

    /// Content tokens per stream (--sse).
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub tokens: u32,

    /// Time to first token, from the stream's service start (--sse).
    #[arg(long, value_name = "DURATION", default_value = "50ms", value_parser = parse_duration)]
    pub ttft: Duration,

    /// Inter-token latency (--sse).
    #[arg(long, value_name = "DURATION", default_value = "10ms", value_parser = parse_duration)]
    pub itl: Duration,

    /// Cut every K-th stream after half its tokens: the connection closes
    /// with no [DONE] and no terminating chunk (--sse).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    pub cut_every: Option<u64>,

    /// Send an error event instead of the tokens on every K-th stream, then
    /// end the body properly without [DONE] (--sse).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    pub error_event_every: Option<u64>,

    /// Size in bytes of the plain 200 body.
    #[arg(long, value_name = "BYTES", default_value_t = 2)]
    pub body_bytes: usize,
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
        }
    }
}

/// Parses `--listen`: `IP:PORT`, `HOST:PORT` (first address), or a bare
/// `PORT` meaning `127.0.0.1:PORT`.
///
/// # Errors
/// A one-line message naming the bad text and the accepted forms.
pub fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    let t = text.trim();
    if let Ok(port) = t.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    if let Ok(addr) = t.parse::<SocketAddr>() {
        return Ok(addr);
    }
    t.to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or_else(|| {
            format!("invalid listen address '{text}': write IP:PORT, HOST:PORT or PORT, like 127.0.0.1:8080")
        })
}

// ---------------------------------------------------------------------------
// The model: pure FIFO arithmetic on virtual time.
// ---------------------------------------------------------------------------

/// One FIFO server on a virtual clock: times are offsets from an origin the
/// caller picks (the server uses its start). No clock is read here.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use metronome::serve::Fifo;
/// let ms = Duration::from_millis;
/// let mut fifo = Fifo::new(ms(1), None, Duration::ZERO);
/// let done: Vec<_> = (0..3).map(|_| fifo.admit(ms(0)).completion).collect();
/// assert_eq!(done, [ms(1), ms(2), ms(3)]);
/// assert_eq!(fifo.admit(ms(10)).completion, ms(11)); // idle server: no queue
/// ```
#[derive(Clone, Debug)]
pub struct Fifo {
    service: Duration,
    stall_at: Option<Duration>,
    stall_for: Duration,
    free_at: Duration,
    first_arrival: Option<Duration>,
    admitted: u64,
    stall: StallState,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StallState {
    /// Not yet hit (or never: `stall_at` is `None`).
    Pending,
    /// Streams: the stall holds every stream arriving before `until`.
    Holding { until: Duration },
    /// Spent.
    Done,
}

/// What [`Fifo::admit`] decided for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Admission {
    /// 1-based position in arrival order (counts every admitted request).
    pub index: u64,
    /// When service starts: `max(arrival, free_at)`.
    pub start: Duration,
    /// When the response is due: `start + service`, plus the stall if held.
    pub completion: Duration,
    /// This request took the stall.
    pub stalled: bool,
}

/// What [`Fifo::admit_stream`] decided for one SSE stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamAdmission {
    /// 1-based position in arrival order (shared with [`Fifo::admit`]).
    pub index: u64,
    /// The stream's service start `t0`: token i is due at
    /// `t0 + ttft + i * itl`.
    pub start: Duration,
    /// The stall delayed this stream.
    pub stalled: bool,
}

impl Fifo {
    /// A server that is free at time zero, with `service` per request and
    /// one optional stall of `stall_for` at `stall_at` after the first
    /// arrival.
    #[must_use]
    pub fn new(service: Duration, stall_at: Option<Duration>, stall_for: Duration) -> Self {
        Self {
            service,
            stall_at,
            stall_for,
            free_at: Duration::ZERO,
            first_arrival: None,
            admitted: 0,
            stall: StallState::Pending,
        }
    }

    /// The FIFO model of `config`.
    #[must_use]
    pub fn from_config(config: &ServeConfig) -> Self {
        Self::new(config.service, config.stall_at, config.stall_for)
    }

    /// When the server is next free: the last admitted completion.
    #[must_use]
    pub fn free_at(&self) -> Duration {
        self.free_at
    }

    /// Queues a request that arrived at `arrival`: it starts at
    /// `max(arrival, free_at)`; if the stall is pending and that start is at
    /// least `stall_at` after the first arrival, it is held `stall_for`
    /// more (once); it completes `service` later, and the server is busy
    /// until then.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// use metronome::serve::Fifo;
    /// let ms = Duration::from_millis;
    /// let mut fifo = Fifo::new(ms(1), Some(ms(2)), ms(10));
    /// assert_eq!(fifo.admit(ms(0)).completion, ms(1));
    /// let held = fifo.admit(ms(3)); // starts 3 ms after the first: stalled
    /// assert!(held.stalled);
    /// assert_eq!(held.completion, ms(14));
    /// assert_eq!(fifo.admit(ms(4)).completion, ms(15)); // queued behind it
    /// ```
    pub fn admit(&mut self, arrival: Duration) -> Admission {
        let first = *self.first_arrival.get_or_insert(arrival);
        self.admitted += 1;
        let start = arrival.max(self.free_at);
        let stalled = self.stall == StallState::Pending
            && self
                .stall_at
                .is_some_and(|at| start.saturating_sub(first) >= at);
        let mut completion = start + self.service;
        if stalled {
            completion += self.stall_for;
            self.stall = StallState::Done;
        }
        self.free_at = completion;
        Admission {
            index: self.admitted,
            start,
            completion,
            stalled,
        }
    }

    /// Admits an SSE stream that arrived at `arrival`. Streams are not
    /// serialised: each starts at its arrival, with one exception, the
    /// stall. The first stream arriving at least `stall_at` after the first
    /// arrival opens a stall window `[arrival, arrival + stall_for)` and
    /// starts at its end (its first token comes `stall_for` later); every
    /// stream arriving inside the window also starts at its end, as if the
    /// whole server had paused. Streams already running are not paused.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// use metronome::serve::Fifo;
    /// let ms = Duration::from_millis;
    /// let mut fifo = Fifo::new(ms(1), Some(ms(5)), ms(100));
    /// assert_eq!(fifo.admit_stream(ms(0)).start, ms(0));
    /// assert_eq!(fifo.admit_stream(ms(0)).start, ms(0)); // concurrent, not queued
    /// assert_eq!(fifo.admit_stream(ms(7)).start, ms(107)); // opens the stall
    /// assert_eq!(fifo.admit_stream(ms(50)).start, ms(107)); // inside it
    /// assert_eq!(fifo.admit_stream(ms(107)).start, ms(107)); // after it
    /// ```
    pub fn admit_stream(&mut self, arrival: Duration) -> StreamAdmission {
        let first = *self.first_arrival.get_or_insert(arrival);
        self.admitted += 1;
        let (start, stalled) = match self.stall {
            StallState::Pending
                if self
                    .stall_at
                    .is_some_and(|at| arrival.saturating_sub(first) >= at) =>
            {
                let until = arrival + self.stall_for;
                self.stall = StallState::Holding { until };
                (until, true)
            }
            StallState::Holding { until } if arrival < until => (until, true),
            StallState::Holding { .. } => {
                self.stall = StallState::Done;
                (arrival, false)
            }
            _ => (arrival, false),
        };
        StreamAdmission {
            index: self.admitted,
            start,
            stalled,
        }
    }
}

/// True when `every` is set and the 1-based `index` is a multiple of it.
fn hits(every: Option<u64>, index: u64) -> bool {
    every.is_some_and(|k| k > 0 && index % k == 0)
}

// ---------------------------------------------------------------------------
// The command.
// ---------------------------------------------------------------------------

/// Set by SIGINT/SIGTERM while [`run`] serves.
static SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_signum: libc::c_int) {
    if SIGNALLED.swap(true, Ordering::SeqCst) {
        // A second Ctrl-C while stopping: leave at once.
        // SAFETY: `_exit` is async-signal-safe (POSIX.1 list); it does not
        // return and touches no Rust state.
        unsafe { libc::_exit(130) }
    }
}

fn install_signal_handlers() -> anyhow::Result<()> {
    SIGNALLED.store(false, Ordering::SeqCst);
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `on_signal` is a `'static` `extern "C" fn(c_int)`, the
        // signature `signal` expects, and it only performs async-signal-safe
        // work: a store to a lock-free atomic and `_exit`.
        let previous = unsafe { libc::signal(signal, handler) };
        if previous == libc::SIG_ERR {
            return Err(io::Error::last_os_error()).context("cannot install the Ctrl-C handler");
        }
    }
    Ok(())
}

/// Runs `metronome serve`: binds, prints `metronome serve listening on
/// http://ADDR` on stdout (flushed), serves until SIGINT or SIGTERM, then
/// prints `served N requests` and returns. A second Ctrl-C exits at once.
///
/// # Errors
/// The address cannot be bound, a signal handler cannot be installed, or
/// stdout is closed.
pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let config = ServeConfig::from(args);
    install_signal_handlers()?;
    let server = spawn(config.clone()).with_context(|| {
        format!(
            "cannot listen on {}: pick another address with --listen",
            config.listen
        )
    })?;
    {
        let mut out = io::stdout().lock();
        writeln!(out, "metronome serve listening on http://{}", server.addr())
            .and_then(|()| out.flush())
            .context("cannot write to stdout")?;
    }
    eprintln!("{}; Ctrl-C stops", describe(&config));
    while !SIGNALLED.load(Ordering::SeqCst) {
        thread::sleep(Duration::from_millis(25));
    }
    let served = server.stop();
    let mut out = io::stdout().lock();
    writeln!(out, "served {served} requests")
        .and_then(|()| out.flush())
        .context("cannot write to stdout")?;
    Ok(())
}

/// One line describing the model, for humans (stderr).
fn describe(config: &ServeConfig) -> String {
    let mut text = if config.sse {
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
    text
}

// ---------------------------------------------------------------------------
// The server: accept thread, connection threads, stop.
// ---------------------------------------------------------------------------

/// A running server started by [`spawn`]. Dropping it stops it too.
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// Writing a byte here makes `shared.wake` readable forever: every
    /// thread's wait returns.
    wake: UnixStream,
    accept: Option<JoinHandle<()>>,
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
/// Binding the address, creating the wake-up socket pair or spawning the
/// accept thread failed.
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
    let shared = Arc::new(Shared {
        fifo: Mutex::new(Fifo::from_config(&config)),
        plain_body: plain_body(config.body_bytes),
        config,
        epoch: Instant::now(),
        served: AtomicU64::new(0),
        stopping: AtomicBool::new(false),
        conns: Mutex::new(Connections::default()),
        wake: wake_rx,
    });
    let accept = {
        let shared = Arc::clone(&shared);
        thread::Builder::new()
            .name("serve-accept".into())
            .spawn(move || accept_loop(&shared, &listener))?
    };
    Ok(ServerHandle {
        addr,
        shared,
        wake: wake_tx,
        accept: Some(accept),
    })
}

#[derive(Debug)]
struct Shared {
    config: ServeConfig,
    plain_body: Vec<u8>,
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
            Connection::new(&worker, stream).serve();
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

// ---------------------------------------------------------------------------
// Waiting: one poll on the connection and the wake-up socket, with a deadline.
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Woken {
    /// The server is stopping.
    Stop,
    /// The watched socket is readable (data, EOF or an error to read).
    Readable,
    /// The deadline (or a slice of it) passed, or a signal interrupted.
    Timeout,
}

/// Waits until `fd` (if any) is readable, the server stops, or `deadline`
/// passes; waits at most [`MAX_WAIT_SLICE`] when there is a deadline.
fn wait(fd: Option<RawFd>, wake: RawFd, deadline: Option<Instant>) -> io::Result<Woken> {
    let mut fds = [
        libc::pollfd {
            fd: wake,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            // A negative descriptor is ignored by poll.
            fd: fd.unwrap_or(-1),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let timeout = deadline.map(|d| {
        d.saturating_duration_since(Instant::now())
            .min(MAX_WAIT_SLICE)
    });
    if sys_poll(&mut fds, timeout) < 0 {
        let error = io::Error::last_os_error();
        if error.kind() == io::ErrorKind::Interrupted {
            return Ok(Woken::Timeout);
        }
        return Err(error);
    }
    if fds[0].revents != 0 {
        Ok(Woken::Stop)
    } else if fds[1].revents != 0 {
        Ok(Woken::Readable)
    } else {
        Ok(Woken::Timeout)
    }
}

/// `ppoll` with a nanosecond timeout (`None`: forever).
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
fn sys_poll(fds: &mut [libc::pollfd], timeout: Option<Duration>) -> libc::c_int {
    let spec = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as _,
    });
    let spec_ptr = spec
        .as_ref()
        .map_or(std::ptr::null(), |s| s as *const libc::timespec);
    // SAFETY: `fds` is an exclusively borrowed slice of initialised
    // `pollfd`s that outlives the call, and its exact length is passed;
    // `spec_ptr` is null (wait forever) or points to `spec`, alive on this
    // frame for the whole call; a null sigmask leaves the mask unchanged.
    unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            spec_ptr,
            std::ptr::null(),
        )
    }
}

/// `poll` with the timeout rounded up to whole milliseconds (`None`: forever).
#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
fn sys_poll(fds: &mut [libc::pollfd], timeout: Option<Duration>) -> libc::c_int {
    let ms = timeout.map_or(-1, |d| {
        libc::c_int::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(libc::c_int::MAX)
    });
    // SAFETY: `fds` is an exclusively borrowed slice of initialised
    // `pollfd`s that outlives the call, and its exact length is passed.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) }
}

// ---------------------------------------------------------------------------
// Requests.
// ---------------------------------------------------------------------------

/// What the server needs from a request head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RequestHead {
    head_len: usize,
    body_len: usize,
    method: Method,
    route: Route,
    http10: bool,
    keep_alive: bool,
    expect_continue: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    Head,
    Get,
    Post,
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Chat,
    Models,
    Other,
}

/// A request the server refuses, answered with a status and then closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reject {
    /// 400: not HTTP, or a bad Content-Length.
    Malformed,
    /// 411: a chunked (or otherwise encoded) request body.
    Encoded,
    /// 413: body above [`MAX_BODY_BYTES`].
    BodyTooLarge,
    /// 431: head above [`MAX_HEAD_BYTES`] or [`MAX_HEADERS`].
    HeadTooLarge,
}

impl Reject {
    fn status(self) -> Status {
        match self {
            Self::Malformed => Status::BadRequest,
            Self::Encoded => Status::LengthRequired,
            Self::BodyTooLarge => Status::PayloadTooLarge,
            Self::HeadTooLarge => Status::HeadersTooLarge,
        }
    }
}

/// Parses the head at the front of `buf`; `Ok(None)` while incomplete.
fn parse_head(buf: &[u8]) -> Result<Option<RequestHead>, Reject> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let head_len = match request.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD_BYTES => {
            return Err(Reject::HeadTooLarge)
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(Reject::HeadTooLarge),
        Err(_) => return Err(Reject::Malformed),
    };
    let http10 = request.version == Some(0);
    let method = match request.method.unwrap_or("") {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        _ => Method::Other,
    };
    let path = request.path.unwrap_or("/");
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    let route = match path {
        CHAT_PATH => Route::Chat,
        "/v1/models" => Route::Models,
        _ => Route::Other,
    };
    let (mut close, mut keep_alive, mut expect_continue) = (false, false, false);
    let mut body_len: Option<usize> = None;
    for header in request.headers.iter() {
        let name = header.name;
        if name.eq_ignore_ascii_case("content-length") {
            let len = std::str::from_utf8(header.value)
                .ok()
                .map(str::trim)
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<usize>().ok())
                .ok_or(Reject::Malformed)?;
            if body_len.is_some_and(|previous| previous != len) {
                return Err(Reject::Malformed);
            }
            body_len = Some(len);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(Reject::Encoded);
        } else if name.eq_ignore_ascii_case("connection") {
            for token in header.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                close |= token.eq_ignore_ascii_case(b"close");
                keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name.eq_ignore_ascii_case("expect") {
            expect_continue |= header
                .value
                .trim_ascii()
                .eq_ignore_ascii_case(b"100-continue");
        }
    }
    let body_len = body_len.unwrap_or(0);
    if body_len > MAX_BODY_BYTES {
        return Err(Reject::BodyTooLarge);
    }
    Ok(Some(RequestHead {
        head_len,
        body_len,
        method,
        route,
        http10,
        keep_alive: !close && (!http10 || keep_alive),
        expect_continue: expect_continue && !http10,
    }))
}

/// What an SSE request body asks for: the token cap and a prompt size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct ChatRequest {
    /// `max_tokens` or `max_completion_tokens`, if present.
    max_tokens: Option<u64>,
    /// Whitespace-separated words in the messages' text (or `prompt`),
    /// reported as `usage.prompt_tokens`.
    prompt_tokens: u64,
}

/// Reads what it can from a chat request body; anything unreadable is
/// ignored (the stream is served with the defaults).
fn parse_chat_request(body: &[u8]) -> ChatRequest {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return ChatRequest::default();
    };
    let max_tokens = ["max_tokens", "max_completion_tokens"]
        .iter()
        .find_map(|key| value.get(key).and_then(serde_json::Value::as_u64));
    let words = |v: &serde_json::Value| -> u64 {
        match v {
            serde_json::Value::String(s) => s.split_whitespace().count() as u64,
            // Content parts: [{"type":"text","text":"..."}].
            serde_json::Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(serde_json::Value::as_str))
                .map(|s| s.split_whitespace().count() as u64)
                .sum(),
            _ => 0,
        }
    };
    let mut prompt_tokens = value.get("prompt").map_or(0, words);
    if let Some(messages) = value.get("messages").and_then(serde_json::Value::as_array) {
        prompt_tokens += messages
            .iter()
            .filter_map(|m| m.get("content"))
            .map(words)
            .sum::<u64>();
    }
    ChatRequest {
        max_tokens,
        prompt_tokens,
    }
}

// ---------------------------------------------------------------------------
// Responses.
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Ok,
    BadRequest,
    NotFound,
    MethodNotAllowed,
    LengthRequired,
    PayloadTooLarge,
    TooManyRequests,
    HeadersTooLarge,
}

impl Status {
    fn line(self) -> &'static str {
        match self {
            Self::Ok => "200 OK",
            Self::BadRequest => "400 Bad Request",
            Self::NotFound => "404 Not Found",
            Self::MethodNotAllowed => "405 Method Not Allowed",
            Self::LengthRequired => "411 Length Required",
            Self::PayloadTooLarge => "413 Payload Too Large",
            Self::TooManyRequests => "429 Too Many Requests",
            Self::HeadersTooLarge => "431 Request Header Fields Too Large",
        }
    }
}

/// The `Connection` header a response carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ConnectionHeader {
    /// HTTP/1.1 keep-alive: no header.
    None,
    /// The connection closes after this response.
    Close,
    /// HTTP/1.0 keep-alive, echoed.
    KeepAlive,
}

impl ConnectionHeader {
    fn for_request(head: &RequestHead, close: bool) -> Self {
        if close || !head.keep_alive {
            Self::Close
        } else if head.http10 {
            Self::KeepAlive
        } else {
            Self::None
        }
    }

    fn line(self) -> &'static str {
        match self {
            Self::None => "",
            Self::Close => "Connection: close\r\n",
            Self::KeepAlive => "Connection: keep-alive\r\n",
        }
    }
}

/// A body chosen when the request is admitted, written when due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Body {
    /// The configured plain body.
    Plain,
    Text(&'static str),
    Json(&'static str),
}

const MODELS_JSON: &str =
    r#"{"object":"list","data":[{"id":"metronome","object":"model","owned_by":"metronome"}]}"#;
const RATE_LIMIT_JSON: &str = r#"{"error":{"message":"injected 429","type":"rate_limit_error","code":"rate_limit_exceeded"}}"#;
/// Every chunk of a stream starts with this (then `"choices":...`).
const CHUNK_PREFIX: &str =
    r#"{"id":"chatcmpl-metronome","object":"chat.completion.chunk","model":"metronome","#;
const ERROR_EVENT: &[u8] =
    b"event: error\ndata: {\"error\":{\"message\":\"injected error\",\"type\":\"server_error\"}}\n\n";

/// `ok` repeated and truncated to `len` bytes.
fn plain_body(len: usize) -> Vec<u8> {
    b"ok".iter().copied().cycle().take(len).collect()
}

/// Appends a complete response with a `Content-Length` body.
fn write_reply(
    out: &mut Vec<u8>,
    status: Status,
    connection: ConnectionHeader,
    content_type: &str,
    body: &[u8],
    head_only: bool,
) {
    // Writing into a Vec cannot fail.
    let _ = write!(
        out,
        "HTTP/1.1 {}\r\nContent-Length: {}\r\nContent-Type: {content_type}\r\n{}\r\n",
        status.line(),
        body.len(),
        connection.line()
    );
    if !head_only {
        out.extend_from_slice(body);
    }
}

/// Appends `event` as one chunk of a chunked body (or raw, for HTTP/1.0).
fn push_chunk(out: &mut Vec<u8>, event: &[u8], chunked: bool) {
    if chunked {
        let _ = write!(out, "{:x}\r\n", event.len());
        out.extend_from_slice(event);
        out.extend_from_slice(b"\r\n");
    } else {
        out.extend_from_slice(event);
    }
}

// ---------------------------------------------------------------------------
// Jobs: what a connection owes the client, in order.
// ---------------------------------------------------------------------------

#[derive(Debug)]
enum Job {
    /// One response with a body, written whole at `due`.
    Reply {
        due: Instant,
        status: Status,
        body: Body,
        connection: ConnectionHeader,
        head_only: bool,
        /// Counts as served.
        counted: bool,
    },
    /// An SSE stream, written event by event.
    Stream(Stream),
}

impl Job {
    fn due(&self, config: &ServeConfig) -> Instant {
        match self {
            Self::Reply { due, .. } => *due,
            Self::Stream(stream) => stream.due(config),
        }
    }

    fn closes(&self) -> bool {
        match self {
            Self::Reply { connection, .. } => *connection == ConnectionHeader::Close,
            Self::Stream(stream) => stream.connection == ConnectionHeader::Close,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StreamKind {
    Normal,
    /// Close the connection after half the tokens.
    Cut,
    /// An error event instead of the tokens.
    ErrorEvent,
}

#[derive(Debug)]
struct Stream {
    /// When the request arrived: the head and the role chunk go out then.
    arrival: Instant,
    /// Service start `t0` (after any stall).
    start: Instant,
    tokens: u32,
    prompt_tokens: u64,
    kind: StreamKind,
    connection: ConnectionHeader,
    /// Chunked framing (HTTP/1.1) or raw events until close (HTTP/1.0).
    chunked: bool,
    /// Steps done: 0 = nothing sent yet; then one per token; then the end.
    step: u32,
}

/// What a stream step asks of the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StreamStep {
    More,
    Done,
    Cut,
}

impl Stream {
    fn token_due(&self, config: &ServeConfig, i: u32) -> Instant {
        self.start + config.ttft + config.itl * i
    }

    /// Tokens sent before the end (or the cut).
    fn token_count(&self) -> u32 {
        match self.kind {
            StreamKind::Normal => self.tokens,
            StreamKind::Cut => self.tokens / 2,
            StreamKind::ErrorEvent => 0,
        }
    }

    fn due(&self, config: &ServeConfig) -> Instant {
        let sent = self.token_count();
        match self.step {
            0 => self.arrival,
            s if s <= sent => self.token_due(config, s - 1),
            // The end: right after the last token, or when the first token
            // (or the token at the cut) would have been due.
            _ => match self.kind {
                StreamKind::Normal if sent > 0 => self.token_due(config, sent - 1),
                _ => self.token_due(config, sent),
            },
        }
    }

    /// Appends the bytes of the next step to `out`.
    fn step(&mut self, out: &mut Vec<u8>, event: &mut Vec<u8>) -> StreamStep {
        let sent = self.token_count();
        event.clear();
        let step = self.step;
        self.step += 1;
        if step == 0 {
            let _ = write!(
                out,
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n{}{}\r\n",
                if self.chunked { "Transfer-Encoding: chunked\r\n" } else { "" },
                self.connection.line()
            );
            let _ = write!(
                event,
                "data: {CHUNK_PREFIX}\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\"}},\"finish_reason\":null}}]}}\n\n"
            );
            push_chunk(out, event, self.chunked);
            return StreamStep::More;
        }
        if step <= sent {
            let i = step - 1;
            let finish = if self.kind == StreamKind::Normal && step == self.tokens {
                "\"stop\""
            } else {
                "null"
            };
            let _ = write!(
                event,
                "data: {CHUNK_PREFIX}\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"tok{i} \"}},\"finish_reason\":{finish}}}]}}\n\n"
            );
            push_chunk(out, event, self.chunked);
            return StreamStep::More;
        }
        match self.kind {
            StreamKind::Cut => return StreamStep::Cut,
            StreamKind::ErrorEvent => push_chunk(out, ERROR_EVENT, self.chunked),
            StreamKind::Normal => {
                let n = u64::from(self.tokens);
                let p = self.prompt_tokens;
                let _ = write!(
                    event,
                    "data: {CHUNK_PREFIX}\"choices\":[],\"usage\":{{\"prompt_tokens\":{p},\"completion_tokens\":{n},\"total_tokens\":{}}}}}\n\n",
                    p + n
                );
                push_chunk(out, event, self.chunked);
                push_chunk(out, b"data: [DONE]\n\n", self.chunked);
            }
        }
        if self.chunked {
            out.extend_from_slice(b"0\r\n\r\n");
        }
        StreamStep::Done
    }
}

// ---------------------------------------------------------------------------
// One connection.
// ---------------------------------------------------------------------------

struct Connection<'a> {
    shared: &'a Shared,
    stream: TcpStream,
    /// Bytes read and not yet consumed as requests.
    buf: Vec<u8>,
    /// New bytes since the last parse.
    fresh: bool,
    /// When the last read returned: the arrival stamp of what it completed.
    last_read: Instant,
    /// The head of the request being received, once complete.
    head: Option<RequestHead>,
    continue_sent: bool,
    /// Still reading requests (false after EOF, `Connection: close` or a
    /// rejection).
    reading: bool,
    jobs: VecDeque<Job>,
    out: Vec<u8>,
    event: Vec<u8>,
}

impl<'a> Connection<'a> {
    fn new(shared: &'a Shared, stream: TcpStream) -> Self {
        Self {
            shared,
            stream,
            buf: Vec::with_capacity(4096),
            fresh: false,
            last_read: Instant::now(),
            head: None,
            continue_sent: false,
            reading: true,
            jobs: VecDeque::new(),
            out: Vec::with_capacity(4096),
            event: Vec::with_capacity(512),
        }
    }

    /// Serves until the client leaves, a response closes, or the server stops.
    fn serve(mut self) {
        match self.serve_inner() {
            Ok(End::Graceful) => self.linger(),
            Ok(End::Abrupt) | Err(_) => {}
        }
        let _ = self.stream.shutdown(Shutdown::Both);
    }

    fn serve_inner(&mut self) -> io::Result<End> {
        let wake = self.shared.wake.as_raw_fd();
        let mut scratch = [0u8; 16 * 1024];
        loop {
            if self.fresh {
                self.fresh = false;
                self.parse_requests()?;
            }
            let config = &self.shared.config;
            let due = self.jobs.front().map(|job| job.due(config));
            if let Some(due) = due {
                if due <= Instant::now() {
                    match self.run_front()? {
                        Some(end) => return Ok(end),
                        None => continue,
                    }
                }
            } else if !self.reading {
                return Ok(End::Graceful);
            }
            let watch =
                (self.reading && self.jobs.len() < MAX_QUEUED).then(|| self.stream.as_raw_fd());
            match wait(watch, wake, due)? {
                Woken::Stop => return Ok(End::Abrupt),
                Woken::Timeout => {}
                Woken::Readable => match self.stream.read(&mut scratch) {
                    Ok(0) => self.reading = false,
                    Ok(n) => {
                        self.last_read = Instant::now();
                        self.buf.extend_from_slice(&scratch[..n]);
                        self.fresh = true;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                },
            }
        }
    }

    /// Turns every complete request in the buffer into a job, stamped with
    /// the time of the read that completed it.
    fn parse_requests(&mut self) -> io::Result<()> {
        let mut consumed = 0;
        while self.reading {
            let rest = &self.buf[consumed..];
            let head = match self.head {
                Some(head) => head,
                None => match parse_head(rest) {
                    Ok(Some(head)) => {
                        self.head = Some(head);
                        head
                    }
                    Ok(None) => break,
                    Err(reject) => {
                        self.reject(reject.status());
                        break;
                    }
                },
            };
            let total = head.head_len + head.body_len;
            if rest.len() < total {
                if head.expect_continue && !self.continue_sent && self.jobs.is_empty() {
                    self.continue_sent = true;
                    self.stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
                }
                break;
            }
            let job = self.admit(&head, &rest[head.head_len..total]);
            if job.closes() {
                self.reading = false;
            }
            self.jobs.push_back(job);
            self.head = None;
            self.continue_sent = false;
            consumed += total;
        }
        if self.reading {
            self.buf.drain(..consumed);
        } else {
            self.buf.clear();
        }
        Ok(())
    }

    /// Queues a refusal after whatever is already owed, then stops reading.
    fn reject(&mut self, status: Status) {
        self.jobs.push_back(Job::Reply {
            due: self.last_read,
            status,
            body: Body::Text(status.line()),
            connection: ConnectionHeader::Close,
            head_only: false,
            counted: false,
        });
        self.reading = false;
    }

    /// Decides the response to one complete request that arrived at
    /// `self.last_read`.
    fn admit(&self, head: &RequestHead, body: &[u8]) -> Job {
        let shared = self.shared;
        let config = &shared.config;
        let arrival = self.last_read;
        let connection = ConnectionHeader::for_request(head, false);
        let head_only = head.method == Method::Head;
        let reply = |due, status, body, counted| Job::Reply {
            due,
            status,
            body,
            connection,
            head_only,
            counted,
        };
        if !config.sse {
            let admission = shared.fifo().admit(shared.since_epoch(arrival));
            let due = shared.epoch + admission.completion;
            return if hits(config.error_every, admission.index) {
                reply(
                    due,
                    Status::TooManyRequests,
                    Body::Text("too many requests\n"),
                    true,
                )
            } else {
                reply(due, Status::Ok, Body::Plain, true)
            };
        }
        match (head.route, head.method) {
            (Route::Chat, Method::Post) => {}
            (Route::Models, Method::Get | Method::Head) => {
                return reply(arrival, Status::Ok, Body::Json(MODELS_JSON), false)
            }
            (Route::Chat | Route::Models, _) => {
                return reply(
                    arrival,
                    Status::MethodNotAllowed,
                    Body::Text("method not allowed\n"),
                    false,
                )
            }
            (Route::Other, _) => {
                return reply(arrival, Status::NotFound, Body::Text("not found\n"), false)
            }
        }
        let chat = parse_chat_request(body);
        let admission = shared.fifo().admit_stream(shared.since_epoch(arrival));
        let start = shared.epoch + admission.start;
        if hits(config.error_every, admission.index) {
            return reply(
                start,
                Status::TooManyRequests,
                Body::Json(RATE_LIMIT_JSON),
                true,
            );
        }
        let kind = if hits(config.error_event_every, admission.index) {
            StreamKind::ErrorEvent
        } else if hits(config.cut_every, admission.index) {
            StreamKind::Cut
        } else {
            StreamKind::Normal
        };
        let tokens = chat.max_tokens.map_or(config.tokens, |cap| {
            config.tokens.min(u32::try_from(cap).unwrap_or(u32::MAX))
        });
        Job::Stream(Stream {
            arrival,
            start,
            tokens,
            prompt_tokens: chat.prompt_tokens,
            kind,
            // HTTP/1.0 has no chunked framing: the body ends at close.
            connection: ConnectionHeader::for_request(head, head.http10),
            chunked: !head.http10,
            step: 0,
        })
    }

    /// Writes the front job's next bytes; `Some(end)` when the connection
    /// must end.
    fn run_front(&mut self) -> io::Result<Option<End>> {
        self.out.clear();
        let Some(job) = self.jobs.front_mut() else {
            return Ok(None);
        };
        let (finished, counted, closes) = match job {
            Job::Reply {
                status,
                body,
                connection,
                head_only,
                counted,
                ..
            } => {
                let (content_type, bytes): (_, &[u8]) = match *body {
                    Body::Plain => ("text/plain", &self.shared.plain_body),
                    Body::Text(text) => ("text/plain", text.as_bytes()),
                    Body::Json(json) => ("application/json", json.as_bytes()),
                };
                write_reply(
                    &mut self.out,
                    *status,
                    *connection,
                    content_type,
                    bytes,
                    *head_only,
                );
                (true, *counted, *connection == ConnectionHeader::Close)
            }
            Job::Stream(stream) => match stream.step(&mut self.out, &mut self.event) {
                StreamStep::More => (false, false, false),
                StreamStep::Done => (true, true, stream.connection == ConnectionHeader::Close),
                StreamStep::Cut => return Ok(Some(End::Abrupt)),
            },
        };
        self.stream.write_all(&self.out)?;
        if finished {
            self.jobs.pop_front();
            if counted {
                self.shared.served.fetch_add(1, Ordering::SeqCst);
            }
            if closes {
                return Ok(Some(End::Graceful));
            }
        }
        Ok(None)
    }

    /// Sends FIN, then drains what the client still sends for a moment, so
    /// unread bytes do not make the kernel reset the connection (which could
    /// destroy the response before the client reads it).
    fn linger(&mut self) {
        if self.stream.shutdown(Shutdown::Write).is_err() {
            return;
        }
        let wake = self.shared.wake.as_raw_fd();
        let deadline = Instant::now() + LINGER;
        let mut scratch = [0u8; 4096];
        while Instant::now() < deadline {
            match wait(Some(self.stream.as_raw_fd()), wake, Some(deadline)) {
                Ok(Woken::Readable) => match self.stream.read(&mut scratch) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                },
                Ok(Woken::Timeout) => {}
                Ok(Woken::Stop) | Err(_) => return,
            }
        }
    }
}

/// How a connection ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// Send FIN and drain the client's leftovers.
    Graceful,
    /// Close at once (cut stream, server stopping).
    Abrupt,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn fifo_queues_simultaneous_arrivals() {
        let mut fifo = Fifo::new(ms(1), None, Duration::ZERO);
        let got: Vec<_> = (0..3).map(|_| fifo.admit(ms(0))).collect();
        assert_eq!(
            got.iter().map(|a| a.completion).collect::<Vec<_>>(),
            [ms(1), ms(2), ms(3)]
        );
        assert_eq!(
            got.iter().map(|a| a.start).collect::<Vec<_>>(),
            [ms(0), ms(1), ms(2)]
        );
        assert_eq!(got.iter().map(|a| a.index).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(got.iter().all(|a| !a.stalled));
    }

    #[test]
    fn fifo_idle_server_answers_after_service() {
        let mut fifo = Fifo::new(us(1500), None, Duration::ZERO);
        assert_eq!(fifo.admit(ms(0)).completion, us(1500));
        assert_eq!(fifo.admit(ms(1)).completion, ms(3));
        assert_eq!(fifo.admit(ms(10)).completion, us(11_500));
        assert_eq!(fifo.free_at(), us(11_500));
    }

    #[test]
    fn fifo_zero_service_answers_at_arrival() {
        let mut fifo = Fifo::new(Duration::ZERO, None, Duration::ZERO);
        assert_eq!(fifo.admit(ms(5)).completion, ms(5));
        assert_eq!(fifo.admit(ms(5)).completion, ms(5));
        assert_eq!(fifo.admit(ms(7)).completion, ms(7));
    }

    #[test]
    fn fifo_stall_holds_the_first_start_at_or_after_stall_at_once() {
        // service 1 ms, stall 10 ms at 2 ms after the first arrival (t=0).
        let mut fifo = Fifo::new(ms(1), Some(ms(2)), ms(10));
        let a = fifo.admit(ms(0));
        assert_eq!((a.start, a.completion, a.stalled), (ms(0), ms(1), false));
        let b = fifo.admit(us(500)); // starts at 1 ms < 2 ms
        assert_eq!((b.start, b.completion, b.stalled), (ms(1), ms(2), false));
        let c = fifo.admit(us(2500)); // starts at 2.5 ms >= 2 ms: held
        assert_eq!(
            (c.start, c.completion, c.stalled),
            (us(2500), us(13_500), true)
        );
        let d = fifo.admit(ms(3)); // queued behind the stall
        assert_eq!(
            (d.start, d.completion, d.stalled),
            (us(13_500), us(14_500), false)
        );
        let e = fifo.admit(ms(20)); // the stall is spent
        assert_eq!((e.completion, e.stalled), (ms(21), false));
    }

    #[test]
    fn fifo_stall_counts_from_the_first_arrival_and_uses_start_time() {
        // First arrival at 100 ms; stall_at 5 ms -> the first start >= 105 ms.
        let mut fifo = Fifo::new(ms(3), Some(ms(5)), ms(50));
        assert_eq!(fifo.admit(ms(100)).completion, ms(103));
        // Arrives at 101 but starts at 103 (< 105): not held.
        assert_eq!(fifo.admit(ms(101)).completion, ms(106));
        // Arrives at 102 but starts at 106 (>= 105): held.
        let held = fifo.admit(ms(102));
        assert!(held.stalled);
        assert_eq!(held.completion, ms(159));
    }

    #[test]
    fn fifo_stall_at_zero_holds_the_very_first_request() {
        let mut fifo = Fifo::new(ms(1), Some(Duration::ZERO), ms(200));
        assert_eq!(fifo.admit(ms(0)).completion, ms(201));
        assert_eq!(fifo.admit(ms(1)).completion, ms(202));
    }

    #[test]
    fn streams_run_concurrently_and_the_stall_pauses_a_window() {
        let mut fifo = Fifo::new(ms(1), Some(ms(10)), ms(100));
        let starts: Vec<_> = [0, 0, 5, 12, 50, 111, 112, 300]
            .into_iter()
            .map(|t| fifo.admit_stream(ms(t)))
            .map(|s| (s.index, s.start.as_millis(), s.stalled))
            .collect();
        assert_eq!(
            starts,
            [
                (1, 0, false),
                (2, 0, false),
                (3, 5, false),
                (4, 112, true), // opens the window [12, 112)
                (5, 112, true), // inside it
                (6, 112, true), // inside it
                (7, 112, false),
                (8, 300, false),
            ]
        );
    }

    #[test]
    fn hits_every_kth() {
        let hit: Vec<u64> = (1..=7).filter(|&k| hits(Some(3), k)).collect();
        assert_eq!(hit, [3, 6]);
        assert!(!hits(None, 3));
        assert!(!hits(Some(0), 3));
    }

    #[test]
    fn parse_head_reads_length_connection_and_route() {
        let req = b"POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nConnection: Keep-Alive, Close\r\n\r\nhello";
        let head = parse_head(req).unwrap().unwrap();
        assert_eq!(head.head_len, req.len() - 5);
        assert_eq!(head.body_len, 5);
        assert_eq!(head.route, Route::Chat);
        assert_eq!(head.method, Method::Post);
        assert!(!head.keep_alive);
        assert!(!head.http10);
    }

    #[test]
    fn parse_head_http10_keep_alive_only_when_asked() {
        let plain = parse_head(b"GET / HTTP/1.0\r\n\r\n").unwrap().unwrap();
        assert!(plain.http10 && !plain.keep_alive);
        let kept = parse_head(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(kept.http10 && kept.keep_alive);
        let v11 = parse_head(b"GET / HTTP/1.1\r\n\r\n").unwrap().unwrap();
        assert!(!v11.http10 && v11.keep_alive && v11.body_len == 0);
    }

    #[test]
    fn parse_head_partial_and_rejects() {
        assert_eq!(parse_head(b"GET / HTTP/1.1\r\nHost:"), Ok(None));
        assert_eq!(parse_head(b""), Ok(None));
        assert_eq!(parse_head(b"GARBAGE\r\n\r\n"), Err(Reject::Malformed));
        assert_eq!(
            parse_head(b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n"),
            Err(Reject::Malformed)
        );
        assert_eq!(
            parse_head(b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
            Err(Reject::Malformed)
        );
        assert_eq!(
            parse_head(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Err(Reject::Encoded)
        );
        assert_eq!(
            parse_head(b"POST / HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n"),
            Err(Reject::BodyTooLarge)
        );
        let mut huge = b"GET / HTTP/1.1\r\nX: ".to_vec();
        huge.resize(MAX_HEAD_BYTES + 10, b'a');
        assert_eq!(parse_head(&huge), Err(Reject::HeadTooLarge));
    }

    #[test]
    fn chat_request_caps_and_counts_prompt_words() {
        let body = br#"{"model":"m","max_tokens":3,"messages":[{"role":"user","content":"one two three"},{"role":"user","content":[{"type":"text","text":"four five"}]}]}"#;
        assert_eq!(
            parse_chat_request(body),
            ChatRequest {
                max_tokens: Some(3),
                prompt_tokens: 5
            }
        );
        assert_eq!(
            parse_chat_request(br#"{"max_completion_tokens":7,"prompt":"a b"}"#),
            ChatRequest {
                max_tokens: Some(7),
                prompt_tokens: 2
            }
        );
        assert_eq!(parse_chat_request(b"not json"), ChatRequest::default());
    }

    #[test]
    fn plain_body_repeats_ok() {
        assert_eq!(plain_body(0), b"");
        assert_eq!(plain_body(2), b"ok");
        assert_eq!(plain_body(5), b"okoko");
    }

    #[test]
    fn reply_bytes_match_the_contract() {
        let mut out = Vec::new();
        write_reply(
            &mut out,
            Status::Ok,
            ConnectionHeader::None,
            "text/plain",
            b"ok",
            false,
        );
        assert_eq!(
            out,
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"
        );
        out.clear();
        write_reply(
            &mut out,
            Status::TooManyRequests,
            ConnectionHeader::Close,
            "text/plain",
            b"x",
            true,
        );
        assert_eq!(
            out,
            b"HTTP/1.1 429 Too Many Requests\r\nContent-Length: 1\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn stream_steps_and_times() {
        let config = ServeConfig {
            ttft: ms(50),
            itl: ms(10),
            ..ServeConfig::default()
        };
        let t = Instant::now();
        let mut stream = Stream {
            arrival: t,
            start: t + ms(5),
            tokens: 2,
            prompt_tokens: 4,
            kind: StreamKind::Normal,
            connection: ConnectionHeader::None,
            chunked: true,
            step: 0,
        };
        let (mut out, mut event) = (Vec::new(), Vec::new());
        let mut dues = Vec::new();
        let mut text = String::new();
        loop {
            dues.push(stream.due(&config) - t);
            out.clear();
            let step = stream.step(&mut out, &mut event);
            text += std::str::from_utf8(&out).unwrap();
            if step == StreamStep::Done {
                break;
            }
        }
        assert_eq!(dues, [ms(0), ms(55), ms(65), ms(65)]);
        assert!(text.starts_with("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"));
        assert!(text.contains(r#""delta":{"content":"tok0 "},"finish_reason":null"#));
        assert!(text.contains(r#""delta":{"content":"tok1 "},"finish_reason":"stop""#));
        assert!(
            text.contains(r#""usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}"#)
        );
        assert!(text.ends_with("e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"));
    }

    #[test]
    fn cut_stream_stops_when_the_middle_token_is_due() {
        let config = ServeConfig {
            ttft: ms(50),
            itl: ms(10),
            ..ServeConfig::default()
        };
        let t = Instant::now();
        let mut stream = Stream {
            arrival: t,
            start: t,
            tokens: 5,
            prompt_tokens: 0,
            kind: StreamKind::Cut,
            connection: ConnectionHeader::None,
            chunked: true,
            step: 0,
        };
        let (mut out, mut event) = (Vec::new(), Vec::new());
        let mut steps = Vec::new();
        loop {
            let due = stream.due(&config) - t;
            let step = stream.step(&mut out, &mut event);
            steps.push((due, step));
            if step != StreamStep::More {
                break;
            }
        }
        assert_eq!(
            steps,
            [
                (ms(0), StreamStep::More),
                (ms(50), StreamStep::More),
                (ms(60), StreamStep::More),
                (ms(70), StreamStep::Cut),
            ]
        );
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
            }
        );
    }

    #[test]
    fn args_reject_nonsense() {
        assert!(Cli::try_parse_from(["serve", "--error-every", "0"]).is_err());
        assert!(Cli::try_parse_from(["serve", "--stall-at", "1s"]).is_err());
        assert!(Cli::try_parse_from(["serve", "--service", "10"]).is_err());
        assert!(Cli::try_parse_from(["serve", "--listen", "nowhere:port"]).is_err());
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
