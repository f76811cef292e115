//! Defaults that hold at every rate (issue 18): with default flags (only
//! `--rate` and `--duration`) the pool does not grow past what the rate
//! needs when a server is slow to take its connections, a server that
//! closes its connections after N requests raises no false alarm, bytes
//! a server sends before any request are nobody's response, and a gentle
//! run against an instant server warns of nothing. And a pool that never
//! makes a run worse (issue 29): a saturated FIFO server gets no more
//! connections and the knee is named; a server that serves in parallel
//! and needs concurrency gets it; at a low rate the most recently used
//! connection carries the load, so a server's idle timeout costs nothing.
//!
//! Every server here is a small std::net server in this process on
//! 127.0.0.1:0, one thread per connection; every thread polls a stop flag
//! (reads and writes time out every [`SLICE`]) and ends by itself within
//! [`CONN_LIFE`], the listener within [`SERVER_LIFE`]. The runs measure
//! real time on a machine that may have two cores and other work: they
//! take [`serial`] so that two of them never compete for the CPU, and the
//! time bounds hold on a loaded 2-core machine.

use crate::{common, serial};

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use common::{assert_accounting, engines, plain, run_json, run_json_checked, server};
use metronome::report::Report;
use metronome::serve::ServeConfig;

/// The longest any connection thread lives, whatever the client does.
const CONN_LIFE: Duration = Duration::from_secs(20);
/// The longest a server accepts connections.
const SERVER_LIFE: Duration = Duration::from_secs(30);
/// Connections a server serves; later ones are closed at once.
const MAX_CONNS: u64 = 2048;
/// How often a connection thread looks at the stop flag.
const SLICE: Duration = Duration::from_millis(10);

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
const OK_CLOSE: &[u8] = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok";

// ---------------------------------------------------------------------------
// The server.

/// What a connection does, from accept to close (returning closes it).
type Script = Arc<dyn Fn(&mut Peer) + Send + Sync>;

/// A raw HTTP/1.1 server on 127.0.0.1 running a script per connection.
struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicU64>,
    requests: Arc<AtomicU64>,
    accept: Option<JoinHandle<()>>,
}

/// What a server saw once it stopped.
#[derive(Clone, Copy, Debug)]
struct Seen {
    accepted: u64,
    requests: u64,
}

impl Server {
    fn start(script: impl Fn(&mut Peer) + Send + Sync + 'static) -> Server {
        let script: Script = Arc::new(script);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicU64::new(0));
        let requests = Arc::new(AtomicU64::new(0));
        let accept = {
            let (stop, accepted, requests) = (stop.clone(), accepted.clone(), requests.clone());
            thread::spawn(move || {
                let born = Instant::now();
                let mut conns: Vec<JoinHandle<()>> = Vec::new();
                while !stop.load(Relaxed) && born.elapsed() < SERVER_LIFE {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let index = accepted.fetch_add(1, Relaxed);
                            if index >= MAX_CONNS {
                                continue;
                            }
                            let mut peer = Peer::new(stream, stop.clone(), requests.clone());
                            peer.index = index;
                            let script = script.clone();
                            conns.push(thread::spawn(move || script(&mut peer)));
                            conns.retain(|c| !c.is_finished());
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
            stop,
            accepted,
            requests,
            accept: Some(accept),
        }
    }

    /// Stops accepting, ends every connection thread and joins them.
    fn stop(mut self) -> Seen {
        self.halt();
        Seen {
            accepted: self.accepted.load(Relaxed),
            requests: self.requests.load(Relaxed),
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

/// The server's side of one connection.
struct Peer {
    stream: TcpStream,
    buf: Vec<u8>,
    stop: Arc<AtomicBool>,
    requests: Arc<AtomicU64>,
    /// When the connection was accepted (within a millisecond of its
    /// connect: the accept loop polls every millisecond).
    born: Instant,
    /// This connection's place in accept order (0 for the first).
    index: u64,
}

impl Peer {
    fn new(stream: TcpStream, stop: Arc<AtomicBool>, requests: Arc<AtomicU64>) -> Peer {
        stream.set_nonblocking(false).unwrap();
        stream.set_nodelay(true).unwrap();
        stream.set_read_timeout(Some(SLICE)).unwrap();
        stream.set_write_timeout(Some(SLICE)).unwrap();
        Peer {
            stream,
            buf: Vec::new(),
            stop,
            requests,
            born: Instant::now(),
            index: 0,
        }
    }

    fn over(&self) -> bool {
        self.stop.load(Relaxed) || self.born.elapsed() > CONN_LIFE
    }

    /// Reads the next request head (the runs here send GETs without a
    /// body); false when the client closed, the connection failed or the
    /// server is stopping.
    fn request(&mut self) -> bool {
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                self.buf.drain(..end + 4);
                self.requests.fetch_add(1, Relaxed);
                return true;
            }
            if self.over() {
                return false;
            }
            match self.stream.read(&mut chunk) {
                Ok(0) => return false,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if transient(&e) => {}
                Err(_) => return false,
            }
        }
    }

    /// Writes all of `bytes`; false when the connection failed or the
    /// server is stopping.
    fn send(&mut self, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            if self.over() {
                return false;
            }
            match self.stream.write(bytes) {
                Ok(0) => return false,
                Ok(n) => bytes = &bytes[n..],
                Err(e) if transient(&e) => {}
                Err(_) => return false,
            }
        }
        true
    }

    /// Sleeps until `at` after the accept, waking every [`SLICE`] to look
    /// at the stop flag; false when the server is stopping.
    fn sleep_until(&self, at: Duration) -> bool {
        loop {
            if self.over() {
                return false;
            }
            let Some(left) = at.checked_sub(self.born.elapsed()) else {
                return true;
            };
            if left.is_zero() {
                return true;
            }
            thread::sleep(left.min(SLICE));
        }
    }
}

fn transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// A report's numbers in one line, for assertion messages.
fn story(engine: &str, r: &Report) -> String {
    let g = &r.generator;
    format!(
        "[{engine}] {:?} send-lag p99 {:.3} ms max {:.3} ms, service min {:.3} ms, \
         peak {} opened {} closed_idle {} unsolicited {}, warm-up {:?}, warnings {:?}, \
         behind {:?}, errors {:?}",
        r.requests,
        r.metrics.send_lag.p99,
        r.metrics.send_lag.max,
        r.metrics.service_time.min,
        g.peak_connections,
        g.connections_opened,
        g.connections_closed_idle,
        g.connections_unsolicited,
        r.connections.warm_up,
        g.warnings,
        g.behind,
        r.errors.by_kind,
    )
}

/// Runs `test` on every engine, each to its end whatever another one
/// did (a failure is printed as it happens); returns `case / engine` for
/// each that failed, so that one run of the file shows every engine's and
/// every case's numbers before [`assert_none_failed`].
fn on_each_engine(case: &str, test: impl Fn(&'static str)) -> Vec<String> {
    engines()
        .into_iter()
        .filter(|&engine| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| test(engine))).is_err()
        })
        .map(|engine| format!("{case} / {engine}"))
        .collect()
}

#[track_caller]
fn assert_none_failed(failed: Vec<String>) {
    assert!(failed.is_empty(), "failed: {failed:?}");
}

/// No warning and no stretch says the pool was exhausted.
#[track_caller]
fn assert_no_pool_alarm(r: &Report, ctx: &str) {
    for w in &r.generator.warnings {
        assert!(
            !w.contains("pool_exhausted") && !w.contains("connection pool was exhausted"),
            "a pool warning: {w}; {ctx}"
        );
    }
    assert!(
        r.generator
            .behind
            .iter()
            .all(|b| b.cause != "pool_exhausted"),
        "{ctx}"
    );
}

// ---------------------------------------------------------------------------
// The tests.

/// The pre-opened connections at 4000 req/s with default flags: one per
/// 1500 req/s, at least 16 (`--connections`' documented default).
const PRE_OPEN_AT_4000: u64 = 16;

/// A server that takes its connections late: nothing on a connection is
/// read or answered until 50 ms after its connect (to the client this is
/// an `accept` 50 ms late: the kernel completes the handshake and holds
/// the request either way), then each request is answered at once. At
/// 4000 req/s with default flags the warm start absorbs the wait before
/// the clock: every pre-opened connection answers its warm-up request,
/// every request is ok, the pool does not grow past what the rate needs
/// (the default 16, at most twice that), the sends keep their schedule
/// (send-lag p99 under 5 ms on a loaded 2-core machine) and nothing warns
/// of an exhausted pool.
#[test]
fn late_accept_grows_no_pool_and_raises_no_alarm() {
    assert_eq!(
        u64::from(metronome_core::pool::default_connections(4000.0)),
        PRE_OPEN_AT_4000
    );
    let _serial = serial();
    assert_none_failed(on_each_engine("late accept", |engine| {
        let srv = Server::start(|p| {
            if !p.sleep_until(Duration::from_millis(50)) {
                return;
            }
            while p.request() {
                if !p.send(OK) {
                    break;
                }
            }
        });
        let r = run_json(
            srv.addr,
            "/",
            engine,
            &["--rate", "4000", "--duration", "2s"],
            0,
        );
        let seen = srv.stop();
        let ctx = format!("{} server {seen:?}", story(engine, &r));
        assert_accounting(&r);
        let q = &r.requests;
        assert_eq!(q.scheduled, 8000, "{ctx}");
        assert_eq!(q.sent, q.scheduled, "{ctx}");
        assert_eq!(q.ok, q.scheduled, "every request ok; {ctx}");
        assert!(
            r.generator.peak_connections <= 2 * PRE_OPEN_AT_4000,
            "{ctx}"
        );
        assert!(r.metrics.send_lag.p99 < 5.0, "{ctx}");
        assert_no_pool_alarm(&r, &ctx);
        let warm = r.connections.warm_up.as_ref().expect("a warm start");
        assert_eq!(warm.mode, "request", "{ctx}");
        assert_eq!(warm.requests, PRE_OPEN_AT_4000, "{ctx}");
        assert_eq!(warm.answered, PRE_OPEN_AT_4000, "{ctx}");
        assert_eq!(warm.unsolicited, 0, "{ctx}");
        assert_eq!(r.generator.connections_unsolicited, 0, "{ctx}");
        eprintln!("ok: {ctx}");
    }));
}

/// A server that closes every connection after its 10th response (nginx's
/// `keepalive_requests`), with `Connection: close` on the last response
/// and without it (a bare close right after the 10th response, which a
/// reuse may race: such a GET is retried on a fresh connection). At
/// 1000 req/s with default flags every request is ok, and the replacements
/// raise no alarm: no pool warning and no stretch behind schedule, except
/// one the report puts on the host (`descheduled`: a loaded machine took
/// the pacer's CPU; on a quiet one there is none).
#[test]
fn close_after_ten_requests_raises_no_false_alarm() {
    let _serial = serial();
    let mut failed = Vec::new();
    for announced in [true, false] {
        let case = format!("Connection: close {announced}");
        failed.extend(on_each_engine(&case, |engine| {
            let srv = Server::start(move |p| {
                for n in 1..=10 {
                    if !p.request() {
                        return;
                    }
                    let last = n == 10;
                    if !p.send(if last && announced { OK_CLOSE } else { OK }) {
                        return;
                    }
                }
            });
            let r = run_json(
                srv.addr,
                "/",
                engine,
                &["--rate", "1000", "--duration", "2s"],
                0,
            );
            let seen = srv.stop();
            let ctx = format!(
                "Connection: close {announced}; {} server {seen:?}",
                story(engine, &r)
            );
            assert_accounting(&r);
            let q = &r.requests;
            assert_eq!(q.scheduled, 2000, "{ctx}");
            assert_eq!(q.sent, q.scheduled, "{ctx}");
            assert_eq!(q.ok, q.scheduled, "every request ok; {ctx}");
            // The closes happened: 2000 requests, at most 10 a connection.
            assert!(seen.requests >= 2000, "{ctx}");
            assert!(seen.accepted >= 200, "{ctx}");
            assert_no_pool_alarm(&r, &ctx);
            assert!(
                r.generator.behind.iter().all(|b| b.cause == "descheduled"),
                "{ctx}"
            );
            eprintln!("ok: {ctx}");
        }));
    }
    assert_none_failed(failed);
}

/// Connections the runs at 200 req/s open before the clock (the default,
/// 16, at any rate up to 24k req/s).
const PRE_OPEN_AT_200: u64 = 16;

/// A server that writes a complete `200` on accept, before any request,
/// then answers each request after 30 ms. The early bytes are nobody's
/// response: a connection that got them is closed and counted as
/// unsolicited. Three servers:
/// - early bytes on the pre-opened connections only (the first 16): the
///   warm start closes each (counted in `connections.warm_up.unsolicited`)
///   and opens it again, so no request is counted ok faster than the
///   server answers it (service time at least 25 ms: 30 ms less a loaded
///   machine's slack) — the pipeline shift of issue 18 is gone;
/// - early bytes on every connection: the warm start closes every
///   pre-opened connection twice and drops it: the server writes on
///   accept, so on every connection of the run the first response is
///   refused (`bad_framing`, cause `unsolicited`): 0 ok (issue 30);
/// - early bytes on connections opened during the run only (the server
///   closes every connection after its 5th response, so the run opens
///   some).
///
/// Of connections opened during the run, one whose early bytes arrive
/// after its 1 ms watch, just as its first request leaves, cannot be told
/// from a fast answer by any client (the server accepted it late): those
/// cases are counted, not bounded. In every case accounting holds, the
/// early bytes are counted as unsolicited, and no pool alarm is raised
/// (issue 18: "the same happens when every connection is closed for
/// unsolicited bytes").
#[test]
fn a_response_on_accept_is_no_requests_response() {
    assert_eq!(
        u64::from(metronome_core::pool::default_connections(200.0)),
        PRE_OPEN_AT_200
    );
    let _serial = serial();
    let mut failed = Vec::new();
    for which in [
        "on the pre-opened connections",
        "on every connection",
        "on connections opened during the run",
    ] {
        let case = format!("early 200 {which}");
        failed.extend(on_each_engine(&case, |engine| {
            let srv = Server::start(move |p| {
                let pre = p.index < PRE_OPEN_AT_200;
                let early = match which {
                    "on the pre-opened connections" => pre,
                    "on every connection" => true,
                    _ => !pre,
                };
                let closing = which == "on connections opened during the run";
                if early && !p.send(OK) {
                    return;
                }
                for n in 1.. {
                    if !p.request() {
                        return;
                    }
                    let last = closing && n == 5;
                    if !p.sleep_until(p.born.elapsed() + Duration::from_millis(30))
                        || !p.send(if last { OK_CLOSE } else { OK })
                        || last
                    {
                        return;
                    }
                }
            });
            let r = run_json_checked(
                srv.addr,
                "/",
                engine,
                &["--rate", "200", "--duration", "2s"],
            );
            let seen = srv.stop();
            let ctx = format!("{case}; {} server {seen:?}", story(engine, &r));
            assert_accounting(&r);
            let q = &r.requests;
            assert_eq!(q.scheduled, 400, "{ctx}");
            let fast = q.ok - common::count_at_least(&r.metrics.service_time, 25.0);
            let early = r.connections.warm_up.as_ref().map_or(0, |w| w.unsolicited);
            match which {
                "on the pre-opened connections" => {
                    assert_eq!(early, PRE_OPEN_AT_200, "{ctx}");
                    assert_eq!(q.ok, 400, "{ctx}");
                    assert_eq!(fast, 0, "every answer is its request's own; {ctx}");
                }
                "on every connection" => {
                    // Each pre-opened connection, and its second try.
                    assert_eq!(early, 2 * PRE_OPEN_AT_200, "{ctx}");
                    assert_eq!((q.sent, q.ok), (400, 0), "{ctx}");
                    assert_eq!(r.errors.by_kind.get("bad_framing"), Some(&400), "{ctx}");
                    assert_eq!(
                        r.errors.bad_framing_by_cause.get("unsolicited"),
                        Some(&400),
                        "{ctx}"
                    );
                }
                _ => {
                    assert_eq!(early, 0, "{ctx}");
                    assert!(seen.accepted > PRE_OPEN_AT_200, "{ctx}");
                    assert!(
                        r.generator.connections_unsolicited > 0,
                        "early bytes counted as unsolicited; {ctx}"
                    );
                }
            }
            assert_no_pool_alarm(&r, &ctx);
            eprintln!("ok ({fast} answers under 25 ms): {ctx}");
        }));
    }
    assert_none_failed(failed);
}

/// `--rate 20 --duration 1s` against an instant server: the first request
/// leaves on time and nothing warns (three runs per engine).
///
/// One allowance, because the host is shared: a round whose only warnings
/// say the host took the pacing thread's CPU (a `descheduled` stretch, the
/// pacer having worked near 0% of the time) is honest, not a false alarm;
/// CI saw one such round (32 ms of lag on 3 of 20 requests) on a 2-core
/// machine. At most one such round per engine passes: an engine that
/// overslept by its own fault would show it in every round.
#[test]
fn a_quiet_low_rate_run_warns_of_nothing() {
    let _serial = serial();
    let mut failed = Vec::new();
    let descheduled: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::default();
    for round in 1..=3 {
        let case = format!("round {round}");
        failed.extend(on_each_engine(&case, |engine| {
            let srv = server(plain(Duration::ZERO));
            let r = run_json(
                srv.addr(),
                "/",
                engine,
                &["--rate", "20", "--duration", "1s"],
                0,
            );
            srv.stop();
            let ctx = format!("{case}; {}", story(engine, &r));
            assert_eq!(r.requests.scheduled, 20, "{ctx}");
            assert_eq!(r.requests.ok, 20, "{ctx}");
            let g = &r.generator;
            let host_took_cpu = !g.behind.is_empty()
                && g.behind.iter().all(|b| b.cause == "descheduled")
                && g.warnings.iter().all(|w| {
                    w.contains("(descheduled)") || w.starts_with("the generator fell behind")
                });
            if host_took_cpu {
                let mut seen = descheduled.lock().unwrap();
                assert!(
                    !seen.contains(&engine),
                    "a second descheduled round on {engine}; {ctx}"
                );
                seen.push(engine);
                eprintln!("allowed once per engine (the host took the CPU): {ctx}");
                return;
            }
            assert!(g.warnings.is_empty(), "{ctx}");
            assert!(g.behind.is_empty(), "{ctx}");
            eprintln!("ok: {ctx}");
        }));
    }
    assert_none_failed(failed);
}

/// A saturated FIFO server: `serve --service 1ms` (capacity 1000 req/s)
/// offered 1200 req/s for 3 s with default flags. More connections cannot
/// carry more load, so the pool does not grow past twice the 16 it
/// pre-opens (a probe of a few more is refused and closed again), every
/// request is still ok (the queue is at the client, charged from the
/// intended time), and the report names the knee: about 1000 req/s with
/// 16 connections, in the JSON and in a warning.
#[test]
fn a_saturated_fifo_server_gets_no_more_connections() {
    let _serial = serial();
    assert_none_failed(on_each_engine("saturated FIFO", |engine| {
        let srv = server(plain(Duration::from_millis(1)));
        let r = run_json(
            srv.addr(),
            "/",
            engine,
            &["--rate", "1200", "--duration", "3s"],
            0,
        );
        srv.stop();
        let ctx = format!("{}; pool {:?}", story(engine, &r), r.generator.pool);
        assert_accounting(&r);
        assert_eq!(r.requests.scheduled, 3600, "{ctx}");
        assert_eq!(r.requests.ok, 3600, "{ctx}");
        assert!(r.generator.peak_connections <= 32, "{ctx}");
        let knee = r.generator.pool.knee.as_ref().expect("a knee");
        // The knee is the run's: the sum of the event loop's per-core
        // threads' (either engine: 8 of the 16 connections each on two
        // cores), scaled to both when only one found it (on a loaded
        // machine one thread may keep a probe that seemed to gain: a CI
        // run had one thread's 411 req/s with 8 connections; core's
        // `PoolOutcome::merge`).
        assert_eq!(knee.connections, 16, "{ctx}");
        assert!((700.0..=1100.0).contains(&knee.completions_per_s), "{ctx}");
        assert!(knee.probe_connections > knee.connections, "{ctx}");
        assert!(r.generator.pool.probes_refused >= 1, "{ctx}");
        assert!(
            r.generator
                .warnings
                .iter()
                .any(|w| w.starts_with("saturated at about") && w.contains("with 16 connections")),
            "{ctx}"
        );
        assert_no_pool_alarm(&r, &ctx);
        eprintln!("ok: {ctx}");
    }));
}

/// A server that serves in parallel and needs concurrency: `serve --sse`
/// streams of 2 tokens 500 ms apart (about 1 s each, all at once) at 200
/// req/s need about 200 connections. The warm-up's streams tell the pool
/// their 1 s, so it grows from the 16 it pre-opens to what the rate
/// needs, every request is ok, and nothing warns of the pool or a knee.
#[test]
fn a_server_that_needs_concurrency_gets_it() {
    let _serial = serial();
    assert_none_failed(on_each_engine("needs concurrency", |engine| {
        let srv = server(ServeConfig {
            sse: true,
            tokens: 2,
            ttft: Duration::from_millis(500),
            itl: Duration::from_millis(500),
            ..plain(Duration::ZERO)
        });
        let r = run_json(
            srv.addr(),
            "/v1/chat/completions",
            engine,
            &["--openai", "--rate", "200", "--duration", "3s"],
            0,
        );
        srv.stop();
        let ctx = format!("{}; pool {:?}", story(engine, &r), r.generator.pool);
        assert_accounting(&r);
        assert_eq!(r.requests.scheduled, 600, "{ctx}");
        assert_eq!(r.requests.ok, 600, "{ctx}");
        assert!(r.generator.peak_connections >= 150, "{ctx}");
        assert!(r.generator.pool.knee.is_none(), "{ctx}");
        assert_no_pool_alarm(&r, &ctx);
        assert!(
            !r.generator.warnings.iter().any(|w| w.contains("saturated")),
            "{ctx}"
        );
        eprintln!("ok: {ctx}");
    }));
}

/// A server with a 2 s keep-alive idle timeout (lighttpd's is 5 s): it
/// closes a connection that brings no request for 2 s. At 2 req/s for 6 s
/// with the 16 connections the default pre-opens, the most recently used
/// connection carries every request (LIFO), so the others idle out
/// without anyone waiting on them: every request is ok, none is retried
/// or reset, and no connection is opened again. (Handed out in turn, each
/// connection would idle 8 s between requests, meet the server's close
/// and be opened again.)
#[test]
fn at_a_low_rate_the_warm_connection_carries_the_load() {
    let _serial = serial();
    assert_none_failed(on_each_engine("idle timeout", |engine| {
        let srv = Server::start(|p| {
            let mut last = Instant::now();
            loop {
                let before = p.requests.load(Relaxed);
                let got = {
                    // One request, or a close after 2 s of silence.
                    let mut chunk = [0u8; 4096];
                    loop {
                        if let Some(end) = p.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            p.buf.drain(..end + 4);
                            p.requests.fetch_add(1, Relaxed);
                            break true;
                        }
                        if p.over() || last.elapsed() > Duration::from_secs(2) {
                            break false;
                        }
                        match p.stream.read(&mut chunk) {
                            Ok(0) => break false,
                            Ok(n) => p.buf.extend_from_slice(&chunk[..n]),
                            Err(e) if transient(&e) => {}
                            Err(_) => break false,
                        }
                    }
                };
                if !got || p.requests.load(Relaxed) == before || !p.send(OK) {
                    return;
                }
                last = Instant::now();
            }
        });
        let r = run_json(
            srv.addr,
            "/",
            engine,
            &["--rate", "2", "--duration", "6s"],
            0,
        );
        let seen = srv.stop();
        let ctx = format!("{} server {seen:?}", story(engine, &r));
        assert_accounting(&r);
        assert_eq!(r.requests.scheduled, 12, "{ctx}");
        assert_eq!(r.requests.ok, 12, "{ctx}");
        assert_eq!(r.requests.errors, 0, "{ctx}");
        assert_eq!(r.requests.retried, 0, "{ctx}");
        assert_eq!(r.generator.connections_opened, 16, "{ctx}");
        eprintln!("ok: {ctx}");
    }));
}
