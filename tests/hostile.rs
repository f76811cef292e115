//! Hostile servers: raw TCP servers on loopback, scripted per connection,
//! that do everything a real server (or a wrong one) may do to a client,
//! against the real binary on every engine. The expected outcome of each
//! case comes from docs/report.md ("Error kinds", the connection-lifecycle
//! paragraph, "Accounting"); every report also passes `assert_accounting`.
//!
//! Each server binds `127.0.0.1:0`, runs one thread per connection (at most
//! [`MAX_CONNS`]), reads with a short timeout so every thread sees the stop
//! flag and ends by itself (at the latest after [`CONN_LIFE`]), and is
//! stopped and joined at the end of its run. Runs are short (`--rate 20
//! --duration 500ms`, ten requests) and use `--connections 1` where exact
//! counts depend on a single connection's story.

mod common;

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use common::{assert_exit_matches, engines, run_json_checked, run_tls_json_checked, TestCert};
use metronome::report::Report;

/// The longest any connection thread lives, whatever the client does.
const CONN_LIFE: Duration = Duration::from_secs(30);
/// The longest a server accepts connections.
const SERVER_LIFE: Duration = Duration::from_secs(60);
/// Connections a server serves; later ones are closed at once.
const MAX_CONNS: u64 = 256;
/// A connection thread's read and write timeout: how often it looks at the
/// stop flag.
const SLICE: Duration = Duration::from_millis(10);

/// The short run most cases use: ten requests 50 ms apart on one connection.
const SHORT: &[&str] = &[
    "--rate",
    "20",
    "--duration",
    "500ms",
    "--connections",
    "1",
    "--timeout",
    "500ms",
];
/// Requests in a [`SHORT`] run.
const N: u64 = 10;
/// Five requests 200 ms apart, a long timeout: for slow answers.
const SLOW: &[&str] = &[
    "--rate",
    "5",
    "--duration",
    "1s",
    "--connections",
    "1",
    "--timeout",
    "3s",
];
/// Ten requests 100 ms apart: room for a server to do something between two.
const SPACED: &[&str] = &[
    "--rate",
    "10",
    "--duration",
    "1s",
    "--connections",
    "1",
    "--timeout",
    "500ms",
];

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

// ---------------------------------------------------------------------------
// The scripted server.

/// What a server saw, over all its connections.
#[derive(Debug, Default)]
struct Counts {
    accepted: AtomicU64,
    /// Connections that carried at least one request.
    used: AtomicU64,
    requests: AtomicU64,
    resets: AtomicU64,
}

/// The counts once the server stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seen {
    accepted: u64,
    used: u64,
    requests: u64,
    resets: u64,
}

/// A connection's script: what the server does on it, from accept to close
/// (returning closes the connection).
type Script = Arc<dyn Fn(&mut Peer) + Send + Sync>;

fn script(f: impl Fn(&mut Peer) + Send + Sync + 'static) -> Script {
    Arc::new(f)
}

/// Answers every request of every connection with `bytes`, in one write.
fn answer(bytes: impl Into<Vec<u8>>) -> Script {
    let bytes = bytes.into();
    script(move |p| {
        while p.request().is_some() {
            if !p.send(&bytes) {
                break;
            }
        }
    })
}

/// Reads one request, answers it with `bytes` and closes the connection.
fn answer_once_then_close(bytes: impl Into<Vec<u8>>) -> Script {
    let bytes = bytes.into();
    script(move |p| {
        if p.request().is_some() {
            p.send(&bytes);
        }
    })
}

thread_local! {
    /// Servers started on this thread speak TLS (see [`over_tls`]).
    static OVER_TLS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `test` with every scripted server speaking TLS (a fresh
/// self-signed certificate each, trusted with `--cacert`): the same
/// scripts, the same expected outcomes, over HTTPS.
fn over_tls(test: fn()) {
    OVER_TLS.with(|t| t.set(true));
    test();
    OVER_TLS.with(|t| t.set(false));
}

/// A raw TCP server on 127.0.0.1 running `script` on each connection
/// (over TLS when [`over_tls`] says so).
struct Server {
    addr: SocketAddr,
    /// The certificate, when the server speaks TLS.
    cert: Option<Arc<TestCert>>,
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
    accept: Option<JoinHandle<()>>,
}

impl Server {
    fn start(script: Script) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(Counts::default());
        let cert = OVER_TLS
            .with(|t| t.get())
            .then(|| Arc::new(TestCert::new()));
        let accept = {
            let (stop, counts) = (stop.clone(), counts.clone());
            let tls = cert.as_ref().map(|c| c.tls.config.clone());
            thread::spawn(move || {
                let born = Instant::now();
                let mut conns = Vec::new();
                while !stop.load(Relaxed) && born.elapsed() < SERVER_LIFE {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let index = counts.accepted.fetch_add(1, Relaxed);
                            if index >= MAX_CONNS {
                                continue;
                            }
                            let mut peer = Peer::new(stream, stop.clone(), counts.clone());
                            peer.index = index;
                            if let Some(config) = &tls {
                                peer.secure(config.clone());
                            }
                            let script = script.clone();
                            conns.push(thread::spawn(move || script(&mut peer)));
                        }
                        Err(_) => thread::sleep(Duration::from_millis(1)),
                    }
                }
                drop(listener);
                for c in conns {
                    let _ = c.join();
                }
            })
        };
        Server {
            addr,
            cert,
            stop,
            counts,
            accept: Some(accept),
        }
    }

    /// Stops accepting, ends every connection thread and joins them.
    fn stop(mut self) -> Seen {
        self.halt();
        Seen {
            accepted: self.counts.accepted.load(Relaxed),
            used: self.counts.used.load(Relaxed),
            requests: self.counts.requests.load(Relaxed),
            resets: self.counts.resets.load(Relaxed),
        }
    }

    fn halt(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.halt();
    }
}

/// One request as the server read it.
#[derive(Debug)]
struct Request {
    method: String,
}

/// A connection's bytes: plain, or through a TLS server session.
enum Io {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ServerConnection, TcpStream>>),
}

impl Io {
    fn socket(&self) -> &TcpStream {
        match self {
            Io::Plain(s) => s,
            Io::Tls(t) => &t.sock,
        }
    }
}

impl Read for Io {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Io::Plain(s) => s.read(buf),
            Io::Tls(t) => t.read(buf),
        }
    }
}

impl Write for Io {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            Io::Plain(s) => s.write(bytes),
            // One TLS record per write, sent at once: a split write stays split.
            Io::Tls(t) => {
                let n = t.write(bytes)?;
                t.flush()?;
                Ok(n)
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Io::Plain(s) => s.flush(),
            Io::Tls(t) => t.flush(),
        }
    }
}

/// The server's side of one connection.
struct Peer {
    /// `None` once reset.
    stream: Option<Io>,
    buf: Vec<u8>,
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
    born: Instant,
    /// Reads give up after this (see [`Peer::request_within`]).
    deadline: Option<Instant>,
    /// Requests read on this connection.
    served: u64,
    /// This connection's place in accept order (0 for the first).
    index: u64,
}

impl Peer {
    fn new(stream: TcpStream, stop: Arc<AtomicBool>, counts: Arc<Counts>) -> Peer {
        stream.set_nonblocking(false).unwrap();
        stream.set_nodelay(true).unwrap();
        stream.set_read_timeout(Some(SLICE)).unwrap();
        stream.set_write_timeout(Some(SLICE)).unwrap();
        Peer {
            stream: Some(Io::Plain(stream)),
            buf: Vec::new(),
            stop,
            counts,
            born: Instant::now(),
            deadline: None,
            served: 0,
            index: 0,
        }
    }

    /// Speaks TLS on this connection from now on (the handshake runs
    /// within the first read or write).
    fn secure(&mut self, config: Arc<rustls::ServerConfig>) {
        if let Some(Io::Plain(s)) = self.stream.take() {
            let conn = rustls::ServerConnection::new(config).expect("a TLS server session");
            self.stream = Some(Io::Tls(Box::new(rustls::StreamOwned::new(conn, s))));
        }
    }

    /// The server is stopping, or this connection lived long enough.
    fn over(&self) -> bool {
        self.stop.load(Relaxed)
            || self.born.elapsed() > CONN_LIFE
            || self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// The next request if it arrives within `wait`.
    fn request_within(&mut self, wait: Duration) -> Option<Request> {
        self.deadline = Some(Instant::now() + wait);
        let req = self.request();
        self.deadline = None;
        req
    }

    /// Reads the next request (its head and its Content-Length body);
    /// `None` when the client closed, the connection failed, or the server
    /// is stopping.
    fn request(&mut self) -> Option<Request> {
        loop {
            if let Some((len, method)) = parse_request(&self.buf) {
                if self.buf.len() >= len {
                    self.buf.drain(..len);
                    self.counted();
                    return Some(Request { method });
                }
            }
            if !self.fill() {
                return None;
            }
        }
    }

    /// Reads until a request head has arrived, not its body; false when
    /// the client closed first.
    fn head(&mut self) -> bool {
        while !self.buf.windows(4).any(|w| w == b"\r\n\r\n") {
            if !self.fill() {
                return false;
            }
        }
        self.counted();
        true
    }

    /// Counts a request read on this connection.
    fn counted(&mut self) {
        self.counts.requests.fetch_add(1, Relaxed);
        if self.served == 0 {
            self.counts.used.fetch_add(1, Relaxed);
        }
        self.served += 1;
    }

    /// One read into the buffer: false at the client's close, on an error
    /// or when the server is stopping.
    fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if self.over() {
                return false;
            }
            let Some(stream) = self.stream.as_mut() else {
                return false;
            };
            match stream.read(&mut chunk) {
                Ok(0) => return false,
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return true;
                }
                Err(e) if transient(&e) => {}
                Err(_) => return false,
            }
        }
    }

    /// Writes all of `bytes`; false when the connection failed (the client
    /// went away) or the server is stopping.
    fn send(&mut self, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            if self.over() {
                return false;
            }
            let Some(stream) = self.stream.as_mut() else {
                return false;
            };
            match stream.write(bytes) {
                Ok(0) => return false,
                Ok(n) => bytes = &bytes[n..],
                Err(e) if transient(&e) => {}
                Err(_) => return false,
            }
        }
        true
    }

    /// Writes `bytes` one byte per write, `gap` apart.
    fn trickle(&mut self, bytes: &[u8], gap: Duration) -> bool {
        for b in bytes {
            if !self.send(std::slice::from_ref(b)) {
                return false;
            }
            thread::sleep(gap);
        }
        true
    }

    fn pause(&self, d: Duration) {
        thread::sleep(d);
    }

    /// Resets the connection: `SO_LINGER` 0, then close, so the kernel
    /// sends a RST (and drops anything unsent).
    fn reset(&mut self) {
        if let Some(stream) = self.stream.take() {
            set_linger_zero(stream.socket());
            drop(stream);
            self.counts.resets.fetch_add(1, Relaxed);
        }
    }

    /// Half-closes: no more bytes from the server; it still reads.
    fn shutdown_write(&mut self) {
        if let Some(s) = self.stream.as_mut() {
            if let Io::Tls(t) = s {
                t.conn.send_close_notify();
                let _ = t.flush();
            }
            let _ = s.socket().shutdown(Shutdown::Write);
        }
    }

    /// Reads and discards until the client closes.
    fn drain(&mut self) {
        while self.fill() {
            self.buf.clear();
        }
    }

    /// Holds the connection without ever reading it, until the server stops.
    fn hold(&self) {
        while !self.over() {
            thread::sleep(SLICE);
        }
    }
}

fn transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// A complete request head at the front of `buf`: the length of the head
/// and its Content-Length body, and the method.
fn parse_request(buf: &[u8]) -> Option<(usize, String)> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&buf[..end]);
    let method = head.split(' ').next()?.to_string();
    let body = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    Some((end + body, method))
}

/// `SO_LINGER` with a zero timeout: `close` then sends a RST.
fn set_linger_zero(stream: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: the descriptor is the open socket `stream` owns (borrowed for
    // the call); the option value points at a live `linger` of the size given.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "SO_LINGER: {}", io::Error::last_os_error());
}

// ---------------------------------------------------------------------------
// Running a case.

/// One run of the binary against a fresh server.
struct Run {
    engine: &'static str,
    report: Report,
    seen: Seen,
    elapsed: Duration,
}

impl Run {
    fn requests(&self) -> &metronome::report::Requests {
        &self.report.requests
    }

    fn generator(&self) -> &metronome::report::Generator {
        &self.report.generator
    }

    /// A one-line account for assertion messages.
    fn ctx(&self, case: &str) -> String {
        let r = &self.report;
        let g = &r.generator;
        format!(
            "[{case} / {}] {:?} kinds {:?} status {:?} causes {:?} unsent {:?} \
             opened {} closed_idle {} unsolicited {} server {:?} in {:?}",
            self.engine,
            r.requests,
            nonzero(&r.errors.by_kind),
            r.errors.by_status,
            nonzero(&r.errors.bad_framing_by_cause),
            nonzero(&r.errors.unsent_by_reason),
            g.connections_opened,
            g.connections_closed_idle,
            g.connections_unsolicited,
            self.seen,
            self.elapsed,
        )
    }

    /// Exactly `n` requests scheduled and sent, `ok` of them ok, and the
    /// failures exactly `kinds` (every other kind zero).
    #[track_caller]
    fn expect(&self, case: &str, n: u64, ok: u64, kinds: &[(&str, u64)]) {
        let ctx = self.ctx(case);
        let q = self.requests();
        assert_eq!(q.scheduled, n, "scheduled; {ctx}");
        assert_eq!(q.sent, n, "sent; {ctx}");
        assert_eq!(q.ok, ok, "ok; {ctx}");
        let want: BTreeMap<&str, u64> = kinds.iter().copied().filter(|&(_, c)| c > 0).collect();
        assert_eq!(nonzero(&self.report.errors.by_kind), want, "kinds; {ctx}");
    }

    /// Exactly `used` connections carried requests. The io_uring engine
    /// replaces a closed connection at once while the schedule runs, so
    /// the server may see one more that no request used (opened as the
    /// last request ended); the std engine opens one only for a request.
    #[track_caller]
    fn expect_connections(&self, case: &str, used: u64) {
        let ctx = self.ctx(case);
        assert_eq!(self.seen.used, used, "connections used; {ctx}");
        assert!(
            (used..=used + 1).contains(&self.seen.accepted),
            "connections accepted; {ctx}"
        );
    }

    /// The bad-framing causes are exactly `causes`.
    #[track_caller]
    fn expect_causes(&self, case: &str, causes: &[(&str, u64)]) {
        let want: BTreeMap<&str, u64> = causes.iter().copied().collect();
        assert_eq!(
            nonzero(&self.report.errors.bad_framing_by_cause),
            want,
            "causes; {}",
            self.ctx(case)
        );
    }
}

/// The non-zero entries of a count map.
fn nonzero(m: &BTreeMap<String, u64>) -> BTreeMap<&str, u64> {
    m.iter()
        .filter(|(_, &c)| c > 0)
        .map(|(k, &c)| (k.as_str(), c))
        .collect()
}

/// Runs `metronome run http://ADDR{path} ARGS` on `engine` against a fresh
/// server running `script`, then stops the server. The scripts count each
/// connection's requests from the run's first, so the warm start's request
/// is left out (`--warm-up off`, unless `args` name another); the warm
/// start is tested in e2e_defaults.rs.
fn run(engine: &'static str, script: &Script, path: &str, args: &[&str]) -> Run {
    let server = Server::start(script.clone());
    let t = Instant::now();
    let mut args = args.to_vec();
    if !args.contains(&"--warm-up") {
        args.extend(["--warm-up", "off"]);
    }
    let args = &args[..];
    let report = match &server.cert {
        Some(cert) => run_tls_json_checked(server.addr, path, engine, args, &cert.path),
        None => run_json_checked(server.addr, path, engine, args),
    };
    let elapsed = t.elapsed();
    let seen = server.stop();
    Run {
        engine,
        report,
        seen,
        elapsed,
    }
}

/// `args` followed by `more`.
fn with<'a>(args: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    let mut v = args.to_vec();
    v.extend_from_slice(more);
    v
}

// ---------------------------------------------------------------------------
// Connection lifecycle: closes, half-closes, 408s, resets.

/// The server closes each connection 50 ms after answering its first
/// request; requests are 100 ms apart. The close is seen before the reuse
/// (idle) or, when the race is lost on a loaded machine, the request is
/// retried on a fresh connection: either way every request is ok and no
/// request is charged. Each of the requests after the first meets exactly
/// one closed connection, so closed_idle + retried is n - 1, or n when the
/// last connection's close is seen too (io_uring watches idle connections
/// until the run ends; the std engine looks only before a send).
#[test]
fn idle_close_by_the_server_is_charged_to_no_request() {
    #[derive(Clone, Copy)]
    enum End {
        Close,
        Reset,
        Timeout408,
    }
    let close_after = |end: End| {
        script(move |p| {
            if p.request().is_some() && p.send(OK) {
                p.pause(Duration::from_millis(50));
                match end {
                    End::Close => {}
                    End::Reset => p.reset(),
                    End::Timeout408 => {
                        p.send(
                            b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\
                              Content-Length: 0\r\n\r\n",
                        );
                    }
                }
            }
        })
    };
    for (case, s) in [
        ("idle close", close_after(End::Close)),
        ("idle reset", close_after(End::Reset)),
        ("408 then close", close_after(End::Timeout408)),
    ] {
        for engine in engines() {
            let r = run(engine, &s, "/", SPACED);
            r.expect(case, N, N, &[]);
            let g = r.generator();
            let ctx = r.ctx(case);
            assert!(g.connections_closed_idle >= 1, "{ctx}");
            let met = g.connections_closed_idle + r.requests().retried;
            assert!((N - 1..=N).contains(&met), "{ctx}");
            assert!(r.report.errors.by_status.is_empty(), "{ctx}");
            assert_eq!(g.connections_unsolicited, 0, "{ctx}");
        }
    }
}

/// The server closes a connection that carries no request within 30 ms
/// (a server's idle timeout for new connections), and closes each one
/// 50 ms after answering its request; requests are 100 ms apart and two
/// connections are opened before the start, so one waits unused. An
/// unused connection is idle too: its close is seen before its first use
/// and it is replaced, charged to no request. (A fresh connection's
/// request is never retried, so a close that went unseen would fail it as
/// a `reset`.) How many closes are seen depends on how often the engine
/// replaces them (io_uring at once, std at the next use): at least one.
#[test]
fn unused_connection_closed_by_the_server_is_charged_to_no_request() {
    let s = script(|p| {
        if p.request_within(Duration::from_millis(30)).is_some() && p.send(OK) {
            p.pause(Duration::from_millis(50));
        }
    });
    let args = [
        "--rate",
        "10",
        "--duration",
        "1s",
        "--connections",
        "2",
        "--timeout",
        "500ms",
    ];
    for engine in engines() {
        let case = "unused connection closed";
        let r = run(engine, &s, "/", &args);
        r.expect(case, N, N, &[]);
        let ctx = r.ctx(case);
        assert!(r.generator().connections_closed_idle >= 1, "{ctx}");
        assert_eq!(r.seen.requests, N + r.requests().retried, "{ctx}");
    }
}

/// A server that closes every connection as soon as it accepts it (an
/// overloaded server or a proxy with no backend): every request fails as a
/// `reset` (a fresh connection's request is never retried), and the client
/// does not storm the server with reconnects: an unused connection that the
/// server closes is replaced when a request needs it, so connections stay
/// within about two per request (the one closed unused, the one used).
#[test]
fn closed_at_accept_fails_every_request_without_a_reconnect_storm() {
    let s = script(|_| {});
    for engine in engines() {
        let case = "closed at accept";
        let r = run(engine, &s, "/", SHORT);
        r.expect(case, N, 0, &[("reset", N)]);
        let ctx = r.ctx(case);
        assert_eq!(r.requests().retried, 0, "{ctx}");
        assert!(r.seen.accepted <= 2 * N + 2, "{ctx}");
    }
}

/// A half-close after each response, and `Connection: close` on each
/// response: every request is ok on a connection of its own.
#[test]
fn half_close_and_connection_close_are_clean_ends() {
    let half_close = script(|p| {
        if p.request().is_some() && p.send(OK) {
            p.shutdown_write();
            p.drain();
        }
    });
    let close = answer_once_then_close(
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok".to_vec(),
    );
    for (case, s) in [("half-close", half_close), ("Connection: close", close)] {
        for engine in engines() {
            let r = run(engine, &s, "/", SHORT);
            r.expect(case, N, N, &[]);
            let ctx = r.ctx(case);
            // One connection per request (a half-closed one is replaced
            // at its next use, or retried if that race is lost).
            r.expect_connections(case, N + r.requests().retried);
            assert_eq!(r.generator().connections_unsolicited, 0, "{ctx}");
        }
    }
}

/// The server answers the first request of each connection and, when the
/// second one arrives, resets the connection (RST) or closes it (FIN)
/// before any byte of its response: the race of a server closing an idle
/// connection as the client reuses it. A GET is retried once on a fresh
/// connection, where it is the first request and is answered: every
/// request ok, one retry per cut. A POST is not retried (it may have had an
/// effect) and fails as a reset, unless `--retry-non-idempotent`.
#[test]
fn cut_before_the_response_on_a_reused_connection() {
    let cut = |rst: bool| {
        script(move |p| {
            // Without `rst` the connection is closed by returning: a FIN.
            if p.request().is_some() && p.send(OK) && p.request().is_some() && rst {
                p.reset();
            }
        })
    };
    let post = with(SHORT, &["-X", "POST", "--body", "x"]);
    let retry_post = with(&post, &["--retry-non-idempotent"]);
    for (how, s) in [("RST", cut(true)), ("FIN", cut(false))] {
        for engine in engines() {
            for (method, args, retried) in [
                ("GET", SHORT, true),
                ("POST", &post[..], false),
                ("POST --retry-non-idempotent", &retry_post[..], true),
            ] {
                let case = format!("{how}, {method}");
                let r = run(engine, &s, "/", args);
                let ctx = r.ctx(&case);
                if retried {
                    // Requests 2..N each meet the cut on their reused
                    // connection, and are sent again.
                    r.expect(&case, N, N, &[]);
                    assert_eq!(r.requests().retried, N - 1, "{ctx}");
                    assert_eq!(r.seen.requests, N + N - 1, "{ctx}");
                } else {
                    // Odd requests open a connection and are ok; even
                    // ones meet the cut.
                    r.expect(&case, N, N / 2, &[("reset", N / 2)]);
                    assert_eq!(r.requests().retried, 0, "{ctx}");
                    assert_eq!(r.seen.requests, N, "{ctx}");
                }
                let resets = if how == "RST" {
                    N - r.requests().ok + r.requests().retried
                } else {
                    0
                };
                assert_eq!(r.seen.resets, resets, "{ctx}");
            }
        }
    }
}

/// A reset after the first byte of the response (here on the second request
/// of each connection) is a `reset`, never retried: the server may have
/// acted on the request. Requests 100 ms apart, so that the 20 ms wait
/// before the reset ends well before the next one is due on the same
/// connection, even on a loaded machine.
#[test]
fn reset_after_the_first_response_byte_is_not_retried() {
    let s = script(|p| {
        if p.request().is_some() && p.send(OK) && p.request().is_some() {
            p.send(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nab");
            // Let the partial response reach the client before the RST.
            p.pause(Duration::from_millis(20));
            p.reset();
        }
    });
    for engine in engines() {
        let case = "reset after a byte";
        let r = run(engine, &s, "/", SPACED);
        r.expect(case, N, N / 2, &[("reset", N / 2)]);
        assert_eq!(r.requests().retried, 0, "{}", r.ctx(case));
        assert_eq!(r.seen.resets, N / 2, "{}", r.ctx(case));
    }
}

// ---------------------------------------------------------------------------
// Framing that is unusual but valid.

/// Valid responses a client must read right, each on its own row:
/// (case, server, args, ok, failures, connections that carried requests).
#[test]
fn unusual_but_valid_framing() {
    type Row = (
        &'static str,
        Script,
        Vec<&'static str>,
        u64,
        Vec<(&'static str, u64)>,
        u64,
    );
    let rows: Vec<Row> = vec![
        // A body delimited by the close: one connection per request.
        (
            "HTTP/1.0 until close",
            answer_once_then_close(
                b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nbody until the close".to_vec(),
            ),
            SHORT.to_vec(),
            N,
            vec![],
            N,
        ),
        // A HEAD response has no body whatever Content-Length says; the
        // connection is reused for the next one.
        (
            "HEAD with Content-Length: 100",
            script(|p| {
                while let Some(req) = p.request() {
                    let reply: &[u8] = if req.method == "HEAD" {
                        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"
                    } else {
                        b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n"
                    };
                    if !p.send(reply) {
                        break;
                    }
                }
            }),
            with(SHORT, &["-X", "HEAD"]),
            N,
            vec![],
            1,
        ),
        // Interim responses are skipped (one written apart from the final).
        (
            "100 and 103 before 200",
            script(|p| {
                while p.request().is_some() {
                    let interim = b"HTTP/1.1 100 Continue\r\n\r\n\
                                    HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n";
                    if !p.send(interim) {
                        break;
                    }
                    p.pause(Duration::from_millis(2));
                    if !p.send(OK) {
                        break;
                    }
                }
            }),
            SHORT.to_vec(),
            N,
            vec![],
            1,
        ),
        // 204 and 304 have no body whatever Content-Length says.
        (
            "204 with Content-Length",
            answer(b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n".to_vec()),
            SHORT.to_vec(),
            N,
            vec![],
            1,
        ),
        (
            "304 with Content-Length",
            answer(
                b"HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\nContent-Length: 5\r\n\r\n".to_vec(),
            ),
            SHORT.to_vec(),
            0,
            vec![("status", N)],
            1,
        ),
        // Chunk extensions and trailers are skipped; the connection is
        // reused.
        (
            "chunked, extensions and trailers",
            answer(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
                  2;name=\"v;x\"\r\nok\r\n0;last\r\nX-Trailer: t\r\n\r\n"
                    .to_vec(),
            ),
            SHORT.to_vec(),
            N,
            vec![],
            1,
        ),
        // HTTP/1.0 with keep-alive and a length: the connection is reused.
        (
            "HTTP/1.0 keep-alive",
            answer(
                b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok"
                    .to_vec(),
            ),
            SHORT.to_vec(),
            N,
            vec![],
            1,
        ),
        // A bare LF ends a line (RFC 9112 section 2.2).
        (
            "bare LF line ends",
            answer(b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok".to_vec()),
            SHORT.to_vec(),
            N,
            vec![],
            1,
        ),
        // A user agent must accept a folded header line in a response and
        // read it as spaces (RFC 9112 section 5.2).
        (
            "obs-fold header",
            answer(
                b"HTTP/1.1 200 OK\r\nX-Folded: a\r\n  b\r\nContent-Length: 2\r\n\r\nok".to_vec(),
            ),
            SHORT.to_vec(),
            N,
            vec![],
            1,
        ),
        // One byte per millisecond: slow is not wrong.
        (
            "trickle",
            script(|p| {
                while p.request().is_some() {
                    let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789";
                    if !p.trickle(reply, Duration::from_millis(1)) {
                        break;
                    }
                }
            }),
            SLOW.to_vec(),
            5,
            vec![],
            1,
        ),
    ];
    for (case, s, args, ok, kinds, conns) in rows {
        for engine in engines() {
            let r = run(engine, &s, "/", &args);
            let n = r.requests().scheduled;
            r.expect(case, n, ok, &kinds);
            let ctx = r.ctx(case);
            r.expect_connections(case, conns);
            assert_eq!(r.requests().retried, 0, "{ctx}");
            assert_eq!(r.generator().connections_unsolicited, 0, "{ctx}");
            if case.starts_with("304") {
                assert_eq!(r.report.errors.by_status.get("304"), Some(&N), "{ctx}");
            }
            if case == "trickle" {
                // 48 bytes, one per millisecond at least.
                assert!(r.report.metrics.latency.min >= 40.0, "{ctx}");
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Bytes no request asked for.

/// An unsolicited extra response after each real one (in the same write,
/// or 20 ms later), and extra bytes after a Content-Length body: every real
/// request is ok, the connection is closed and counted as unsolicited, and
/// the extra bytes are never read as the next response. Each connection
/// carries one request and one unsolicited event; the last one is not
/// always seen (the std engine looks at an idle connection only before
/// reusing it; a split write can leave the extra bytes unread at the end).
#[test]
fn unsolicited_bytes_close_the_connection() {
    let extra_later = script(|p| {
        while p.request().is_some() {
            if !p.send(OK) {
                break;
            }
            p.pause(Duration::from_millis(20));
            if !p.send(OK) {
                break;
            }
        }
    });
    let head = with(SPACED, &["-X", "HEAD"]);
    let rows = [
        (
            "extra response, same write",
            answer([OK, OK].concat()),
            SPACED,
        ),
        ("extra response, later write", extra_later, SPACED),
        (
            "bytes after the body",
            answer(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloEXTRA".to_vec()),
            SPACED,
        ),
        // Buggy servers that send a body where there is none.
        (
            "HEAD answered with a body",
            answer(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".to_vec()),
            &head[..],
        ),
        (
            "204 with a body",
            answer(b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello".to_vec()),
            SPACED,
        ),
    ];
    for (case, s, args) in rows {
        for engine in engines() {
            let r = run(engine, &s, "/", args);
            r.expect(case, N, N, &[]);
            let ctx = r.ctx(case);
            let g = r.generator();
            assert!((N - 1..=N).contains(&g.connections_unsolicited), "{ctx}");
            // One connection per request.
            r.expect_connections(case, N);
            assert_eq!(r.requests().retried, 0, "{ctx}");
            assert_eq!(g.connections_closed_idle, 0, "{ctx}");
        }
    }
}

// ---------------------------------------------------------------------------
// Broken responses.

/// Responses that cannot be read: each request fails with one kind (and,
/// for bad framing, one cause), and its connection is replaced.
#[test]
fn broken_responses_have_one_kind_and_cause() {
    let big_head = {
        let mut h = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
        h.extend_from_slice(&[b'a'; 40 * 1024]);
        h.extend_from_slice(b"\r\nContent-Length: 2\r\n\r\nok");
        h
    };
    let many_headers = {
        let mut h = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..300 {
            h.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
        }
        h.extend_from_slice(b"Content-Length: 2\r\n\r\nok");
        h
    };
    // An HTTP/2 server's first frame: SETTINGS (type 4) on stream 0 with
    // one setting, MAX_CONCURRENT_STREAMS = 100.
    let settings = b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64".to_vec();
    // A TLS server's fatal alert (protocol_version) to a plaintext hello.
    let tls_alert = b"\x15\x03\x03\x00\x02\x02\x46".to_vec();
    type Row = (
        &'static str,
        Script,
        Vec<&'static str>,
        u64,
        &'static str,
        Option<&'static str>,
    );
    let rows: Vec<Row> = vec![
        (
            "short body then close",
            answer_once_then_close(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort".to_vec()),
            SHORT.to_vec(),
            0,
            "reset",
            None,
        ),
        (
            "bad Content-Length",
            answer(b"HTTP/1.1 200 OK\r\nContent-Length: 12abc\r\n\r\nok".to_vec()),
            SHORT.to_vec(),
            0,
            "bad_framing",
            Some("content_length"),
        ),
        (
            "conflicting Content-Lengths",
            answer(
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!".to_vec(),
            ),
            SHORT.to_vec(),
            0,
            "bad_framing",
            Some("content_length"),
        ),
        (
            "bad chunk size",
            answer(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n"
                    .to_vec(),
            ),
            SHORT.to_vec(),
            0,
            "bad_framing",
            Some("chunk_size"),
        ),
        (
            "TLS alert",
            answer(tls_alert),
            SHORT.to_vec(),
            0,
            "bad_framing",
            Some("tls"),
        ),
        (
            "HTTP/2 SETTINGS",
            answer(settings),
            SHORT.to_vec(),
            0,
            "bad_framing",
            Some("http2"),
        ),
        (
            "40 KiB head",
            answer(big_head.clone()),
            SHORT.to_vec(),
            0,
            "too_large",
            None,
        ),
        (
            "40 KiB head, --max-header-bytes 65536",
            answer(big_head),
            with(SHORT, &["--max-header-bytes", "65536"]),
            N,
            "",
            None,
        ),
        (
            "300 headers",
            answer(many_headers),
            SHORT.to_vec(),
            0,
            "too_large",
            None,
        ),
        ("head of 32 KiB", answer(head_of(32 * 1024)), SHORT.to_vec(), N, "", None),
        (
            "head of 32 KiB + 1",
            answer(head_of(32 * 1024 + 1)),
            SHORT.to_vec(),
            0,
            "too_large",
            None,
        ),
        (
            "101 Switching Protocols",
            answer(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n".to_vec()),
            SHORT.to_vec(),
            0,
            "bad_framing",
            Some("upgrade"),
        ),
        (
            "bad status line",
            answer(b"HTTP/1.1 2OO OK\r\nContent-Length: 2\r\n\r\nok".to_vec()),
            SHORT.to_vec(),
            0,
            "bad_framing",
            Some("head"),
        ),
    ];
    for (case, s, args, ok, kind, cause) in rows {
        for engine in engines() {
            let r = run(engine, &s, "/", &args);
            let failed = N - ok;
            r.expect(case, N, ok, &[(kind, failed)]);
            r.expect_causes(case, &cause.map(|c| vec![(c, failed)]).unwrap_or_default());
            let ctx = r.ctx(case);
            assert_eq!(r.requests().retried, 0, "{ctx}");
            // A failed request's connection is never reused.
            let conns = if ok == N { 1 } else { N };
            r.expect_connections(case, conns);
        }
    }
}

/// A 200 response whose head (status line, headers, blank line) is exactly
/// `len` bytes, with a 2-byte body.
fn head_of(len: usize) -> Vec<u8> {
    let start = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Pad: ";
    let end = b"\r\n\r\n";
    let mut h = start.to_vec();
    h.resize(len - end.len(), b'p');
    h.extend_from_slice(end);
    assert_eq!(h.len(), len);
    h.extend_from_slice(b"ok");
    h
}

// ---------------------------------------------------------------------------
// Servers that do not answer.

/// A server that accepts and never reads (the request is a 16 MiB body, so
/// the send blocks), a listener that never accepts, and a server that reads
/// but never answers: every sent request is a timeout, and the run ends by
/// its hard end (duration + timeout) plus a margin for starting the process
/// on a loaded machine.
#[test]
fn silent_servers_give_timeouts_and_the_run_ends() {
    let body = std::env::temp_dir().join(format!("metronome-hostile-{}.body", std::process::id()));
    std::fs::write(&body, vec![b'x'; 16 << 20]).unwrap();
    let body_arg = body.to_str().unwrap().to_string();
    let never_reads = script(|p| p.hold());
    let never_answers = script(|p| p.drain());
    let post = with(SHORT, &["-X", "POST", "--body-file", &body_arg]);
    let hard_end = Duration::from_millis(500 + 500);
    let margin = Duration::from_secs(3);
    for engine in engines() {
        for (case, s, args) in [
            ("never reads", &never_reads, &post[..]),
            ("never answers", &never_answers, SHORT),
        ] {
            let r = run(engine, s, "/", args);
            r.expect(case, N, 0, &[("timeout", N)]);
            assert!(r.elapsed < hard_end + margin, "{}", r.ctx(case));
        }

        // Connections wait in the listener's accept queue: the connect
        // and the send succeed, no answer ever comes.
        let case = "never accepts";
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let t = Instant::now();
        let report = run_json_checked(listener.local_addr().unwrap(), "/", engine, SHORT);
        let r = Run {
            engine,
            report,
            seen: Seen {
                accepted: 0,
                used: 0,
                requests: 0,
                resets: 0,
            },
            elapsed: t.elapsed(),
        };
        drop(listener);
        r.expect(case, N, 0, &[("timeout", N)]);
        assert!(r.elapsed < hard_end + margin, "{}", r.ctx(case));
    }
    let _ = std::fs::remove_file(&body);
}

/// A server that answers `413 Content Too Large` and closes as soon as the
/// head of a 16 MiB POST arrives, without reading the body: its close with
/// unread bytes is a RST, which cuts the client's send short. The response
/// came first and is the request's outcome (RFC 9112 section 9.5: a client
/// sending a body monitors the connection for an error response), a status
/// error, the same on both engines.
#[test]
fn an_early_response_to_a_body_being_sent_is_read() {
    let body =
        std::env::temp_dir().join(format!("metronome-hostile-413-{}.body", std::process::id()));
    std::fs::write(&body, vec![b'x'; 16 << 20]).unwrap();
    let s = script(|p| {
        if p.head() {
            p.send(
                b"HTTP/1.1 413 Content Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            );
            p.pause(Duration::from_millis(20));
        }
    });
    let args = with(
        SHORT,
        &["-X", "POST", "--body-file", body.to_str().unwrap()],
    );
    for engine in engines() {
        let case = "413 before the body was read";
        let r = run(engine, &s, "/", &args);
        r.expect(case, N, 0, &[("status", N)]);
        assert_eq!(
            r.report.errors.by_status.get("413"),
            Some(&N),
            "{}",
            r.ctx(case)
        );
    }
    let _ = std::fs::remove_file(&body);
}

/// A server that answers `200 OK` (keep-alive) as soon as the head of a
/// 16 MiB POST arrives and never reads the body: the complete response is
/// the request's outcome (ok), and the connection, whose request was never
/// sent whole, is not reused. With `--max-connections 1` every request
/// still gets a connection in time, so the send that cannot finish is
/// given up at once, not held until the timeout.
#[test]
fn an_early_response_to_a_body_never_read_is_read() {
    let body =
        std::env::temp_dir().join(format!("metronome-hostile-200-{}.body", std::process::id()));
    std::fs::write(&body, vec![b'x'; 16 << 20]).unwrap();
    let early = script(|p| {
        if p.head() && p.send(OK) {
            p.hold();
        }
    });
    // An interim response while the body is being sent is no early
    // answer: the client keeps sending, the server reads the body and
    // answers, and the connection carries the next request.
    let interim = script(|p| {
        while p.head() && p.send(b"HTTP/1.1 100 Continue\r\n\r\n") {
            if p.request().is_none() || !p.send(OK) {
                break;
            }
        }
    });
    let args = with(
        SHORT,
        &["-X", "POST", "--body-file", body.to_str().unwrap()],
    );
    let one = with(&args, &["--max-connections", "1"]);
    for engine in engines() {
        for (case, s, args, conns) in [
            ("200 before the body", &early, &args, N),
            ("same, one connection", &early, &one, N),
            ("100 Continue during the body", &interim, &one, 1),
        ] {
            let r = run(engine, s, "/", args);
            r.expect(case, N, N, &[]);
            r.expect_connections(case, conns);
        }
    }
    let _ = std::fs::remove_file(&body);
}

// ---------------------------------------------------------------------------
// A huge body.

/// A 1 GiB body streamed as fast as loopback goes: the run ends with the
/// request ok, and the client's peak memory stays far below the body (it
/// reads into a fixed buffer). The peak is the child's own `ru_maxrss`,
/// from `wait4(2)` on its pid: exact for that process alone, whatever else
/// runs (RUSAGE_CHILDREN would be the largest of every child this test
/// binary reaped, and sampling /proc/PID/status can miss the peak).
#[test]
fn a_1_gib_body_is_read_in_bounded_memory() {
    const GIB: usize = 1 << 30;
    let s = script(|p| {
        while p.request().is_some() {
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {GIB}\r\n\r\n");
            if !p.send(head.as_bytes()) {
                return;
            }
            let block = vec![b'z'; 256 * 1024];
            let mut left = GIB;
            while left > 0 {
                let n = left.min(block.len());
                if !p.send(&block[..n]) {
                    return;
                }
                left -= n;
            }
        }
    });
    for engine in engines() {
        let case = "1 GiB body";
        let server = Server::start(s.clone());
        let args = [
            "--rate",
            "1",
            "--duration",
            "1s",
            "--connections",
            "1",
            "--timeout",
            "60s",
        ];
        let (report, maxrss_kib, elapsed) = run_measured(server.addr, "/", engine, &args);
        let seen = server.stop();
        let r = Run {
            engine,
            report,
            seen,
            elapsed,
        };
        r.expect(case, 1, 1, &[]);
        eprintln!(
            "{case} / {engine}: peak RSS {} MiB, run {:?}",
            maxrss_kib / 1024,
            r.elapsed
        );
        // The process itself (code, the histograms, the buffers) is 8 to
        // 14 MiB here; holding the body would be 1 GiB.
        assert!(
            maxrss_kib < 64 * 1024,
            "peak RSS {maxrss_kib} KiB; {}",
            r.ctx(case)
        );
    }
}

/// Runs the binary like `run_json`, but reaps it with `wait4(2)` to read
/// its own peak resident set: (report, ru_maxrss in KiB, elapsed).
// The child is reaped by wait4(2), which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn run_measured(
    addr: SocketAddr,
    path: &str,
    engine: &str,
    args: &[&str],
) -> (Report, u64, Duration) {
    let url = format!("http://{addr}{path}");
    let t = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_metronome"))
        .args([
            "run", &url, "--format", "json", "--quiet", "--engine", engine,
        ])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the metronome binary");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut v = Vec::new();
            let _ = pipe.read_to_end(&mut v);
            v
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is plain integers; all zeros is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not reaped yet (std's `Child` waits
    // only when asked to); both out-pointers are live locals of the right
    // types for the duration of the call.
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(got, pid, "wait4: {}", io::Error::last_os_error());
    let elapsed = t.elapsed();
    let stdout = stdout.join().unwrap();
    let stderr = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
    assert!(
        libc::WIFEXITED(status),
        "metronome exited with status {status:#x}; stderr: {stderr}"
    );
    let report = common::decode_report(
        &String::from_utf8_lossy(&stdout),
        &format!("the report (stderr: {stderr})"),
    );
    assert_exit_matches(&report, Some(libc::WEXITSTATUS(status)), &stderr);
    (report, usage.ru_maxrss as u64, elapsed)
}

// ---------------------------------------------------------------------------
// OpenAI-style streams.

/// A content chunk of a chat completion stream.
fn content(text: &str) -> String {
    format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n")
}

const DONE: &str = "data: [DONE]\n\n";
const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n";

/// An event-stream response, each event in a chunk of its own.
fn sse_chunked(events: &[&str]) -> Vec<u8> {
    let mut v = format!("{SSE_HEAD}Transfer-Encoding: chunked\r\n\r\n").into_bytes();
    for e in events {
        v.extend_from_slice(format!("{:x}\r\n", e.len()).as_bytes());
        v.extend_from_slice(e.as_bytes());
        v.extend_from_slice(b"\r\n");
    }
    v.extend_from_slice(b"0\r\n\r\n");
    v
}

/// An event-stream response with a Content-Length body.
fn sse_length(body: &str) -> Vec<u8> {
    format!("{SSE_HEAD}Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

/// `--openai` streams, each with its exact outcome (core/src/sse.rs and
/// core/src/exchange.rs): a stream is ok with at least one content chunk
/// and `data: [DONE]`; without `[DONE]` it is `stream_cut`; `[DONE]`
/// alone is `no_content`; an error event is `stream_error`; a 2xx that is
/// not `text/event-stream` is `not_event_stream`.
#[test]
fn openai_streams() {
    let hi = content("Hi");
    let yo = content("yo");
    let ping = ": ping\n\n";
    let crlf = |s: &str| s.replace('\n', "\r\n");
    let one_by_one = {
        let wire = sse_chunked(&[ping, &hi, &yo, DONE]);
        script(move |p| {
            while p.request().is_some() {
                if !p.trickle(&wire, Duration::from_micros(100)) {
                    break;
                }
            }
        })
    };
    let cut_by_close = {
        let wire = format!("{SSE_HEAD}Connection: close\r\n\r\n{hi}{yo}");
        answer_once_then_close(wire.into_bytes())
    };
    let reset_mid_stream = {
        let head = format!("{SSE_HEAD}Transfer-Encoding: chunked\r\n\r\n");
        let first = sse_chunked(&[&hi]);
        // One chunk, without the last-chunk terminator.
        let first = first[head.len()..first.len() - 5].to_vec();
        script(move |p| {
            if p.request().is_some() && p.send(head.as_bytes()) && p.send(&first) {
                p.pause(Duration::from_millis(20));
                p.reset();
            }
        })
    };
    // The head and a first token, then nothing until the timeout: a
    // timeout, not a cut (the connection was not closed).
    let stall_mid_stream = {
        let wire = format!("{SSE_HEAD}Content-Length: 1000\r\n\r\n{hi}");
        script(move |p| {
            if p.request().is_some() && p.send(wire.as_bytes()) {
                p.drain();
            }
        })
    };
    let huge = {
        let line = content(&"x".repeat(10 << 20));
        answer(sse_chunked(&[&line, DONE]))
    };
    // JSON split over two data lines of one event: joined with "\n" it is
    // one chunk with content; line by line neither half would be.
    let multi_line = "data: {\"choices\":[{\"delta\":\n\
                      data: {\"content\":\"Hi\"}}]}\n\n";
    let garbage = "garbage without a colon\n\
                   retry: 10\nid: 7\nunknown: field\n\n\
                   data: this is not json\n\n\
                   data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n\
                   \u{7f}\u{1}binary-ish\n\n";
    type Row = (
        &'static str,
        Script,
        &'static [&'static str],
        u64,
        Vec<(&'static str, u64)>,
    );
    let rows: Vec<Row> = vec![
        (
            "comments",
            answer(sse_chunked(&[ping, &hi, ping, &yo, ping, DONE])),
            SHORT,
            N,
            vec![],
        ),
        (
            "CRLF line ends",
            answer(sse_chunked(&[
                &crlf(ping),
                &crlf(&hi),
                &crlf(&yo),
                &crlf(DONE),
            ])),
            SHORT,
            N,
            vec![],
        ),
        (
            "multi-line data",
            answer(sse_length(&format!("{multi_line}{DONE}"))),
            SHORT,
            N,
            vec![],
        ),
        ("one byte per write", one_by_one, SLOW, 5, vec![]),
        (
            "garbage lines",
            answer(sse_length(&format!("{garbage}{hi}{garbage}{DONE}"))),
            SHORT,
            N,
            vec![],
        ),
        (
            "10 MiB data line then [DONE]",
            huge,
            &[
                "--rate",
                "4",
                "--duration",
                "500ms",
                "--connections",
                "1",
                "--timeout",
                "5s",
            ],
            2,
            vec![],
        ),
        (
            "no [DONE], body complete",
            answer(sse_chunked(&[&hi, &yo])),
            SHORT,
            0,
            vec![("stream_cut", N)],
        ),
        (
            "final [DONE] without its blank line",
            answer(sse_length(&format!("{hi}data: [DONE]"))),
            SHORT,
            N,
            vec![],
        ),
        (
            "reset mid-stream",
            reset_mid_stream,
            SHORT,
            0,
            vec![("stream_cut", N)],
        ),
        (
            "stall mid-stream",
            stall_mid_stream,
            SHORT,
            0,
            vec![("timeout", N)],
        ),
        (
            "no [DONE], connection closed",
            cut_by_close,
            SHORT,
            0,
            vec![("stream_cut", N)],
        ),
        (
            "[DONE] without content",
            answer(sse_chunked(&[ping, DONE])),
            SHORT,
            0,
            vec![("no_content", N)],
        ),
        (
            "error event",
            answer(sse_chunked(&[
                &hi,
                "event: error\ndata: {\"message\":\"overloaded\"}\n\n",
                DONE,
            ])),
            SHORT,
            0,
            vec![("stream_error", N)],
        ),
        (
            "plain JSON",
            answer({
                let json = r#"{"choices":[{"message":{"content":"Hi"}}]}"#;
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                     Content-Length: {}\r\n\r\n{json}",
                    json.len()
                )
                .into_bytes()
            }),
            SHORT,
            0,
            vec![("not_event_stream", N)],
        ),
    ];
    for (case, s, args, ok, kinds) in rows {
        for engine in engines() {
            let args = with(args, &["--openai", "--model", "m"]);
            let r = run(engine, &s, "/v1/chat/completions", &args);
            let n = r.requests().scheduled;
            r.expect(case, n, ok, &kinds);
            let ctx = r.ctx(case);
            assert_eq!(r.report.metrics.ttft.count, ok, "ttft; {ctx}");
            assert_eq!(r.requests().retried, 0, "{ctx}");
        }
    }
}

// ---------------------------------------------------------------------------
// The same hostile servers over TLS: every script runs inside a TLS session
// (each write one record, so splits stay splits), the client trusts the
// server's fresh certificate with --cacert; the expected outcomes are the
// same as over plain HTTP. (A silent server that never reads cannot
// complete a handshake: over TLS that is a handshake timeout before the
// clock, exit 1, tested in tests/e2e_tls.rs.)

#[test]
fn over_tls_idle_close_by_the_server_is_charged_to_no_request() {
    over_tls(idle_close_by_the_server_is_charged_to_no_request);
}

#[test]
fn over_tls_half_close_and_connection_close_are_clean_ends() {
    over_tls(half_close_and_connection_close_are_clean_ends);
}

#[test]
fn over_tls_cut_before_the_response_on_a_reused_connection() {
    over_tls(cut_before_the_response_on_a_reused_connection);
}

#[test]
fn over_tls_unusual_but_valid_framing() {
    over_tls(unusual_but_valid_framing);
}

#[test]
fn over_tls_unsolicited_bytes_close_the_connection() {
    over_tls(unsolicited_bytes_close_the_connection);
}

#[test]
fn over_tls_broken_responses_have_one_kind_and_cause() {
    over_tls(broken_responses_have_one_kind_and_cause);
}

#[test]
fn over_tls_openai_streams() {
    over_tls(openai_streams);
}

/// Over TLS, the first connection answers one request and closes
/// (`Connection: close`); every later one is dropped before its handshake.
/// Each request after the first needs a new connection whose handshake
/// fails: it is never sent (`unsent_by_reason.connect`), and the failure is
/// counted as `protocol`; nothing else fails.
#[test]
fn over_tls_handshake_failures_during_the_run_are_counted() {
    over_tls(|| {
        let s = script(|p| {
            if p.index == 0 && p.request().is_some() {
                p.send(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
            }
        });
        for engine in engines() {
            let r = run(engine, &s, "/", SHORT);
            let q = &r.report.requests;
            let c = &r.report.connections;
            assert_eq!(
                (q.scheduled, q.sent, q.ok),
                (N, 1, 1),
                "{}",
                r.ctx("drop at handshake")
            );
            assert_eq!(q.unsent, N - 1, "{}", r.ctx("drop at handshake"));
            assert_eq!(r.report.errors.unsent_by_reason["connect"], N - 1);
            let protocol = c.handshake_failures["protocol"];
            // The io_uring engine also replaces the closed connection at
            // once, before a request needs it: one more failure.
            assert!(
                (N - 1..=N).contains(&protocol),
                "{engine}: {protocol} protocol failures; {c:?}"
            );
            assert_eq!(c.handshake_failures["certificate"], 0, "{engine}");
            assert!(
                r.report
                    .generator
                    .warnings
                    .iter()
                    .any(|w| w.contains("TLS handshakes failed")),
                "{engine}: {:?}",
                r.report.generator.warnings
            );
        }
    });
}
