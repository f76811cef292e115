//! HTTP/2 with prior knowledge (h2c) on the std engine: each connection
//! carries up to its stream limit of requests at once. Every protocol
//! decision is core's ([`Connection`] for the connection, [`StreamExchange`]
//! per stream); this file moves bytes, reads the clock and hands facts to
//! the collector.
//!
//! Two threads per connection: the *dispatcher* takes due requests from
//! the pacer's queue while its connection has a free stream slot (it counts
//! its free slots as idle for core's admission rule) and writes their
//! HEADERS and DATA; the *reader* blocks on the socket, stamps what arrives,
//! feeds it to the connection and ends streams (their response complete,
//! reset, or past their timeout). They share the connection under a mutex.
//! A GOAWAY's refused streams go back to the queue for one retry on a
//! fresh connection; the dispatcher reopens its connection once the old
//! one has no stream left.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use metronome_core::engine::{greet_h2, Greeted};
use metronome_core::exchange::{compact, Finish, GAP_CAP};
use metronome_core::h2::{Config, Connection, ErrorCode, Event, SendError, StreamExchange};
use metronome_core::measure::{ErrorKind, ThreadStats, Unsent};
use metronome_core::plan::{Plan, Protocol, H2_MAX_STREAMS, READ_BUF_BYTES};
use metronome_core::tls::expect_h2;

use crate::clock::{thread_cpu_ns, Clock};
use crate::collector::Fact;
use crate::conn::{Opened, Outcome};
use crate::queue::{Job, Shared};
use crate::tls::Tls;

/// Stream slots per connection (the most any plan may ask).
const SLOTS: usize = H2_MAX_STREAMS as usize;
/// The longest a blocking read waits before the reader looks at the
/// deadlines again.
const SLICE: Duration = Duration::from_millis(10);
/// Bytes of frames written at once (a request's HEADERS and DATA, or the
/// connection's own frames).
const OUT_BYTES: usize = 64 * 1024;

type H2 = Connection<SLOTS>;

/// A request in flight on one stream.
struct InFlight {
    stream: u32,
    job: Job,
    sent_ns: u64,
    /// Bytes of the body sent so far (a server window stopped the rest).
    body_at: usize,
}

/// One connection's state, shared by its dispatcher and its reader.
struct Link {
    h2: Box<H2>,
    sock: Option<TcpStream>,
    /// The TLS session (h2 over TLS, ALPN `h2`).
    tls: Option<Box<rustls::ClientConnection>>,
    /// Per slot: the request in flight, and its exchange and gap storage.
    flights: Vec<Option<InFlight>>,
    exchanges: Vec<StreamExchange>,
    gaps: Vec<Box<[u64]>>,
    out: Box<[u8]>,
    /// The connection failed or was closed: reopen it.
    dead: bool,
    /// The dispatcher is leaving: the reader ends with the last stream.
    leaving: bool,
    /// Inter-token gaps dropped (beyond each slot's storage).
    dropped_gaps: u64,
    /// The stream limit the plan sets (`--max-streams`, else [`SLOTS`]).
    cap: usize,
    /// This connection's free stream slots as counted in the queue's
    /// `idle` ([`Link::sync_idle`]).
    counted: usize,
    /// The code of this client's connection error (a malformed frame or
    /// header block from the server), if the connection failed on one.
    error: Option<ErrorCode>,
    /// The code of the server's last GOAWAY on this connection.
    goaway_code: Option<ErrorCode>,
    /// Bytes written and not yet counted in the run's traffic (whoever
    /// holds the link next with a clock reading counts them).
    written: usize,
}

impl Link {
    fn new(plan: &Plan<'_>, cap: usize) -> Link {
        let sse = matches!(plan.protocol, Protocol::OpenAiSse);
        let protocol = plan.protocol;
        Link {
            h2: Box::new(H2::new(Config::DEFAULT)),
            sock: None,
            tls: None,
            flights: (0..SLOTS).map(|_| None).collect(),
            exchanges: (0..SLOTS)
                .map(|_| StreamExchange::for_protocol(protocol))
                .collect(),
            gaps: (0..SLOTS)
                .map(|_| vec![0u64; if sse { GAP_CAP } else { 0 }].into_boxed_slice())
                .collect(),
            out: vec![0u8; OUT_BYTES].into_boxed_slice(),
            dead: true,
            leaving: false,
            dropped_gaps: 0,
            cap,
            counted: 0,
            error: None,
            goaway_code: None,
            written: 0,
        }
    }

    fn in_flight(&self) -> usize {
        self.flights.iter().filter(|f| f.is_some()).count()
    }

    /// Streams this connection may still open now.
    fn free(&self) -> usize {
        if self.dead || self.leaving || !self.h2.can_start() {
            return 0;
        }
        let limit = self.h2.max_streams().min(self.cap);
        limit.saturating_sub(self.in_flight())
    }

    /// Brings this connection's share of the queue's `idle` count to its
    /// free stream slots now, so core's pool rule sees every free slot of
    /// every connection as an idle connection: called by the dispatcher
    /// when it opens a connection or starts a stream, and by the reader
    /// after each read (streams ended, SETTINGS, GOAWAY, a failure). The
    /// link's lock is held (the lock order is link, then queue).
    fn sync_idle(&mut self, shared: &Shared) {
        let free = self.free();
        if free != self.counted {
            let mut q = lock(&shared.queue);
            q.idle = (q.idle + free).saturating_sub(self.counted);
            self.counted = free;
        }
    }

    /// Writes whatever the connection owes (acks, window updates, resets).
    fn flush(&mut self) -> io::Result<()> {
        while self.h2.wants_transmit() {
            let n = self.h2.poll_transmit(&mut self.out);
            if n == 0 {
                break;
            }
            self.write_out(n)?;
        }
        Ok(())
    }

    fn write_out(&mut self, n: usize) -> io::Result<()> {
        match self.sock.as_ref() {
            Some(s) => {
                send(s, self.tls.as_deref_mut(), &self.out[..n]).inspect(|()| self.written += n)
            }
            None => Err(io::Error::from(io::ErrorKind::NotConnected)),
        }
    }

    /// Counts the bytes written since the last call at `now`.
    fn count_written(&mut self, traffic: &crate::traffic::Traffic, now: u64) {
        traffic.sent(now, std::mem::take(&mut self.written));
    }

    /// Sends what the server's windows allow of the body of the request in
    /// `slot`, one output buffer at a time: each write is whole (blocking)
    /// when it returns, so the buffer is free again and the body goes on
    /// until it is all sent or a window stops it. A window stop ends with
    /// core's [`Event::Unblocked`] once the window grows, which calls this
    /// again; a full buffer never waits for an event.
    fn push_body(&mut self, slot: usize, body: &[u8]) -> Result<(), SendError> {
        let Some(f) = self.flights[slot].as_ref() else {
            return Ok(());
        };
        let (stream, mut at) = (f.stream, f.body_at);
        while at < body.len() {
            let sent = self
                .h2
                .send_data(stream, &body[at..], true, &mut self.out)?;
            if sent.written > 0 {
                self.write_out(sent.written)
                    .map_err(|_| SendError::Closed)?;
            }
            at += sent.consumed;
            if let Some(f) = self.flights[slot].as_mut() {
                f.body_at = at;
            }
            if sent.blocked.is_some() || sent.consumed == 0 {
                // A window stopped it (or nothing fits): wait for the
                // window, not for the buffer.
                break;
            }
        }
        Ok(())
    }

    fn slot_of(&self, stream: u32) -> Option<usize> {
        self.flights
            .iter()
            .position(|f| f.as_ref().is_some_and(|f| f.stream == stream))
    }
}

/// A connection opened and through its SETTINGS exchange; bytes read after
/// the server's SETTINGS are kept for the reader.
pub(crate) struct Opening {
    sock: TcpStream,
    tls: Option<Box<rustls::ClientConnection>>,
    h2: Box<H2>,
    rest: Vec<u8>,
    opened: Opened,
}

impl Opening {
    /// How it was opened.
    pub(crate) fn opened(&self) -> Opened {
        self.opened
    }
}

/// Opens an h2c connection: the TCP connect, the preface and SETTINGS, and
/// the server's SETTINGS read, all within `timeout`.
///
/// # Errors
/// The connect error, or a protocol error as `InvalidData`.
pub(crate) fn open(
    addr: SocketAddr,
    timeout: Duration,
    target: Option<&Tls>,
) -> io::Result<Opening> {
    let timeout = timeout.max(Duration::from_millis(1));
    let started = Instant::now();
    let sock = TcpStream::connect_timeout(&addr, timeout)?;
    let connect_ns = started.elapsed().as_nanos() as u64;
    sock.set_nodelay(true)?;
    let mut handshake_ns = None;
    let mut resumed = false;
    let mut agreed = None;
    let mut tls = match target {
        None => None,
        Some(target) => {
            let shaking = Instant::now();
            let mut conn = crate::tls::client(target)?;
            resumed = crate::tls::handshake(target, &mut conn, &sock, started + timeout)?;
            handshake_ns = Some(shaking.elapsed().as_nanos() as u64);
            agreed = Some(crate::tls::agreed(&conn));
            expect_h2(&conn)?;
            Some(Box::new(conn))
        }
    };
    let deadline = started + timeout;
    let Greeted { conn: h2, rest } = match tls.as_deref_mut() {
        None => greet_h2(&mut &sock, &sock, deadline)?,
        Some(t) => greet_h2(&mut rustls::Stream::new(t, &mut &sock), &sock, deadline)?,
    };
    Ok(Opening {
        sock,
        tls,
        h2,
        rest,
        opened: Opened {
            connect_ns,
            handshake_ns,
            resumed,
            agreed,
        },
    })
}

/// A connection's dispatcher (and, in a scope, its readers): takes due
/// requests while the connection has a free stream slot.
pub(crate) fn worker(
    plan: &Plan<'_>,
    tls: Option<&Tls>,
    origin: &OnceLock<Clock>,
    shared: &Shared,
    tx: mpsc::Sender<Fact>,
    first: Option<Opening>,
    all_stats: &Mutex<Vec<ThreadStats>>,
) {
    let Some(h2plan) = plan.http2 else { return };
    let cap = match h2plan.max_streams {
        0 => SLOTS,
        n => n as usize,
    };
    let connect_timeout = Duration::from_nanos(plan.connect_timeout_ns());
    let link = Mutex::new(Link::new(plan, cap));
    let changed = Condvar::new();
    let mut stats = ThreadStats::default();
    let mut streams = Box::new(metronome_core::engine::Setup::default());
    let grown = first.is_none();
    std::thread::scope(|s| {
        let mut reader: Option<std::thread::ScopedJoinHandle<'_, ()>> = None;
        let mut pending = first;
        let mut connected_once = false;
        let mut linked = false;
        loop {
            // 1. A usable connection with a free stream slot.
            let need_open = {
                let mut l = lock(&link);
                loop {
                    if l.dead {
                        break true;
                    }
                    if l.free() > 0 {
                        break false;
                    }
                    if queue_closing(shared) {
                        break false;
                    }
                    l = changed
                        .wait_timeout(l, Duration::from_millis(20))
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            };
            if need_open {
                if let Some(r) = reader.take() {
                    let _ = r.join();
                }
                let opening = match pending.take() {
                    Some(o) => Ok(o),
                    None => {
                        let clock = origin.get_or_init(Clock::start);
                        if queue_closing(shared) {
                            break;
                        }
                        let hard = shared.hard_end_ns.load(Ordering::Relaxed);
                        if clock.now_ns() >= hard {
                            break;
                        }
                        let r = open(plan.addr, connect_timeout, tls);
                        if let Ok(o) = &r {
                            let _ = tx.send(Fact::Opened(o.opened()));
                        }
                        r
                    }
                };
                if grown && !connected_once {
                    let mut q = lock(&shared.queue);
                    q.connecting -= 1;
                }
                match opening {
                    Ok(o) => {
                        if grown && !connected_once {
                            count_open(shared);
                        } else if connected_once {
                            shared.opened.fetch_add(1, Ordering::Relaxed);
                        }
                        connected_once = true;
                        // A server that stops reading blocks a write at
                        // most one request timeout: the write fails, the
                        // connection with it (its streams end), and the
                        // link's lock is free again for the reader.
                        let _ = o.sock.set_write_timeout(Some(
                            Duration::from_nanos(plan.timeout_ns).max(Duration::from_millis(1)),
                        ));
                        let read_sock = match o.sock.try_clone() {
                            Ok(r) => r,
                            Err(_) => continue,
                        };
                        {
                            let mut l = lock(&link);
                            l.h2 = o.h2;
                            l.sock = Some(o.sock);
                            l.tls = o.tls;
                            l.dead = false;
                            l.error = None;
                            l.goaway_code = None;
                            l.sync_idle(shared);
                            if !linked {
                                linked = true;
                                lock(&shared.queue).h2_linked += 1;
                            }
                        }
                        let (link, changed, tx) = (&link, &changed, tx.clone());
                        let rest = o.rest;
                        let over_tls = tls.is_some();
                        reader = Some(s.spawn(move || {
                            let io = Io {
                                sock: read_sock,
                                rest,
                                tls: over_tls,
                            };
                            read_loop(plan, origin, shared, link, changed, tx, io)
                        }));
                    }
                    Err(_) => {
                        connected_once = true;
                        // No connection: a waiting request is not sent.
                        let job = lock(&shared.queue).jobs.pop_front();
                        let clock = origin.get_or_init(Clock::start);
                        if let Some(job) = job {
                            let _ = tx.send(Fact::NotSent {
                                intended_ns: job.intended_ns,
                                request: job.request,
                                at_ns: clock.now_ns(),
                                reason: Unsent::Connect,
                                retried: job.retried,
                            });
                            shared.in_flight.fetch_sub(1, Ordering::Relaxed);
                        }
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
                continue;
            }
            // 2. A due request (the link's free slots are counted as idle
            // in the queue all along: `Link::sync_idle`).
            let free = lock(&link).free();
            if free == 0 {
                if queue_closing(shared) {
                    break;
                }
                continue;
            }
            let job = {
                let mut q = lock(&shared.queue);
                loop {
                    if let Some(j) = q.jobs.pop_front() {
                        break Some(j);
                    }
                    if q.closing {
                        break None;
                    }
                    q = shared.ready.wait(q).unwrap_or_else(|e| e.into_inner());
                }
            };
            let Some(job) = job else { break };
            // 3. Its HEADERS (and body) on a new stream.
            let clock = origin.get_or_init(Clock::start);
            let request = h2plan.requests[job.request];
            let mut l = lock(&link);
            let now = clock.now_ns();
            if now >= shared.hard_end_ns.load(Ordering::Relaxed) {
                drop(l);
                let _ = tx.send(Fact::NotSent {
                    intended_ns: job.intended_ns,
                    request: job.request,
                    at_ns: now,
                    reason: Unsent::Timeout,
                    retried: job.retried,
                });
                shared.in_flight.fetch_sub(1, Ordering::Relaxed);
                continue;
            }
            let slot = l.flights.iter().position(Option::is_none);
            let started = match (slot, l.free() > 0) {
                (Some(slot), true) => {
                    let Link { h2, out, .. } = &mut *l;
                    h2.start_request(request.block, request.body.is_empty(), out)
                        .map(|r| (slot, r))
                }
                _ => Err(SendError::StreamLimit),
            };
            let Ok((slot, (stream, written))) = started else {
                // The connection cannot take it after all: back to the front.
                drop(l);
                lock(&shared.queue).jobs.push_front(job);
                shared.ready.notify_one();
                continue;
            };
            let sent_ns = clock.now_ns();
            streams.h2_streams(l.h2.open_streams(), l.h2.server_max_streams());
            let wrote = l.write_out(written);
            l.exchanges[slot].begin(job.intended_ns, sent_ns);
            l.flights[slot] = Some(InFlight {
                stream,
                job,
                sent_ns,
                body_at: 0,
            });
            if wrote.is_ok() && !request.body.is_empty() {
                let _ = l.push_body(slot, request.body);
            }
            l.count_written(&shared.traffic, sent_ns);
            l.sync_idle(shared);
            drop(l);
            if !job.retried {
                stats.sent += 1;
                let _ = tx.send(Fact::Sent {
                    intended_ns: job.intended_ns,
                    request: job.request,
                    sent_ns,
                    waited_since: job.waited_since,
                });
            }
        }
        // Leaving: the streams in flight end (answered, or at their
        // deadline, which the reader watches), then the socket closes.
        {
            let mut l = lock(&link);
            l.leaving = true;
            l.sync_idle(shared);
            while !l.dead && l.in_flight() > 0 {
                l = changed
                    .wait_timeout(l, Duration::from_millis(20))
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            if let Some(sock) = l.sock.as_ref() {
                let _ = sock.shutdown(Shutdown::Both);
            }
        }
        if let Some(r) = reader.take() {
            let _ = r.join();
        }
    });
    stats.cpu_ns = thread_cpu_ns();
    let l = link.into_inner().unwrap_or_else(|e| e.into_inner());
    let dropped: u64 = l.exchanges.iter().map(StreamExchange::dropped_gaps).sum();
    shared
        .dropped_gaps
        .fetch_add(dropped + l.dropped_gaps, Ordering::Relaxed);
    lock(all_stats).push(stats);
    let _ = tx.send(Fact::H2Streams(streams));
}

/// Writes `bytes` whole: on the socket, or through the TLS session.
fn send(
    sock: &TcpStream,
    tls: Option<&mut rustls::ClientConnection>,
    bytes: &[u8],
) -> io::Result<()> {
    let Some(conn) = tls else {
        return (&*sock).write_all(bytes);
    };
    conn.writer().write_all(bytes)?;
    while conn.wants_write() {
        conn.write_tls(&mut &*sock)?;
    }
    Ok(())
}

/// Reads plaintext through the TLS session into `dst`: `Ok(0)` is the
/// close; `WouldBlock` (not `blocking`) when no whole record is there.
fn tls_read(
    conn: &mut rustls::ClientConnection,
    sock: &TcpStream,
    dst: &mut [u8],
    blocking: bool,
) -> io::Result<usize> {
    loop {
        match conn.reader().read(dst) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
            Err(e) => return Err(e),
        }
        let n = if blocking {
            conn.read_tls(&mut &*sock)?
        } else {
            conn.read_tls(&mut crate::tls::NowIo(sock))?
        };
        if n == 0 {
            return Ok(0);
        }
        let processed = conn.process_new_packets();
        while conn.wants_write() {
            if conn.write_tls(&mut crate::tls::NowIo(sock)).is_err() {
                break;
            }
        }
        processed.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn queue_closing(shared: &Shared) -> bool {
    let q = lock(&shared.queue);
    q.closing && q.jobs.is_empty()
}

fn count_open(shared: &Shared) {
    shared.opened.fetch_add(1, Ordering::Relaxed);
    let now = shared.open_connections.fetch_add(1, Ordering::Relaxed) + 1;
    shared.peak_connections.fetch_max(now, Ordering::Relaxed);
}

/// What the reader hands the queue once the connection's lock is released.
#[derive(Default)]
struct After {
    /// The last (done, service) times, for the pool's estimate.
    sample: Option<(u64, u64)>,
    /// Requests refused by a GOAWAY, to send again on a fresh connection.
    retry: VecDeque<Job>,
}

/// A reader's socket and the bytes read before it started.
struct Io {
    sock: TcpStream,
    rest: Vec<u8>,
    /// The link's TLS session carries the bytes: the socket is only
    /// watched (peeked) here, and read under the link's lock.
    tls: bool,
}

/// A connection's reader: reads, stamps and feeds the connection until it
/// fails, the server closes it or the dispatcher leaves.
fn read_loop(
    plan: &Plan<'_>,
    origin: &OnceLock<Clock>,
    shared: &Shared,
    link: &Mutex<Link>,
    changed: &Condvar,
    tx: mpsc::Sender<Fact>,
    io: Io,
) {
    let Io { sock, rest, tls } = io;
    let clock = origin.get_or_init(Clock::start);
    let mut buf = vec![0u8; READ_BUF_BYTES].into_boxed_slice();
    let (mut start, mut end) = (0, rest.len());
    buf[..end].copy_from_slice(&rest);
    let _ = sock.set_read_timeout(Some(SLICE));
    let mut after = After {
        sample: None,
        retry: VecDeque::with_capacity(SLOTS),
    };
    let mut first = end > 0;
    loop {
        let read = if first {
            first = false;
            Ok(0usize)
        } else if tls {
            // Wait for bytes without taking them; rustls reads them below.
            let mut one = [0u8; 1];
            match sock.peek(&mut one) {
                Ok(0) => Err(ErrorKind::Reset),
                Ok(_) => Ok(0),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
                Err(e) if ErrorKind::of_io(&e) == ErrorKind::Timeout => Ok(0),
                Err(_) => Err(ErrorKind::Reset),
            }
        } else {
            match (&sock).read(&mut buf[end..]) {
                Ok(0) => Err(ErrorKind::Reset),
                Ok(n) => Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
                Err(e) if ErrorKind::of_io(&e) == ErrorKind::Timeout => Ok(0),
                Err(_) => Err(ErrorKind::Reset),
            }
        };
        let now = clock.now_ns();
        let mut l = lock(link);
        let read = match (read, l.tls.as_deref_mut()) {
            (Ok(_), Some(conn)) if tls => match tls_read(conn, &sock, &mut buf[end..], false) {
                Ok(0) => Err(ErrorKind::Reset),
                Ok(n) => Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
                Err(_) => Err(ErrorKind::Reset),
            },
            (r, _) => r,
        };
        let mut fault = None;
        match read {
            Ok(n) => {
                shared.traffic.received(now, n);
                end += n;
                if let Err(kind) = feed(
                    &mut l,
                    plan,
                    shared,
                    &tx,
                    &buf[start..end],
                    now,
                    &mut start,
                    &mut after,
                ) {
                    fault = Some(kind);
                }
                l.count_written(&shared.traffic, now);
                if fault.is_none() {
                    if let Err(kind) = compact(&mut buf, &mut start, &mut end) {
                        fault = Some(kind);
                    }
                }
            }
            Err(kind) => fault = Some(kind),
        }
        // Deadlines: a stream unanswered past its timeout, or the run's end.
        let hard = shared.hard_end_ns.load(Ordering::Relaxed);
        for slot in 0..SLOTS {
            let due = l.flights[slot]
                .as_ref()
                .is_some_and(|f| now >= f.sent_ns.saturating_add(plan.timeout_ns) || now >= hard);
            if due {
                let stream = l.flights[slot].as_ref().map_or(0, |f| f.stream);
                l.h2.cancel(stream);
                end_stream(
                    &mut l,
                    slot,
                    shared,
                    &tx,
                    now,
                    Err(Finish::Error(ErrorKind::Timeout)),
                    &mut after,
                );
            }
        }
        if fault.is_none() && l.flush().is_err() {
            fault = Some(ErrorKind::Reset);
        } else if fault.is_some() && l.error.is_some() {
            // Our GOAWAY with the error's code, on a best-effort basis.
            let _ = l.flush();
        }
        let goaway_drained = l.h2.goaway().is_some() && l.in_flight() == 0;
        let leaving = l.leaving && l.in_flight() == 0;
        if fault.is_some() || goaway_drained {
            // The connection is gone: its streams end with it, as bad
            // framing when it died of malformed bytes (ours or the
            // server's GOAWAY says so), else reset or cut.
            let error = l.error.or(l.goaway_code);
            for slot in 0..SLOTS {
                if l.flights[slot].is_some() {
                    let finish = l.exchanges[slot].on_connection_end(error);
                    end_stream(&mut l, slot, shared, &tx, now, Err(finish), &mut after);
                }
            }
            l.dead = true;
            if let Some(s) = l.sock.take() {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
        l.sync_idle(shared);
        let dead = l.dead;
        drop(l);
        changed.notify_all();
        hand_over(shared, &mut after);
        if dead || leaving {
            return;
        }
    }
}

/// Pool samples and retries, given to the queue without the link's lock.
fn hand_over(shared: &Shared, after: &mut After) {
    if after.sample.is_none() && after.retry.is_empty() {
        return;
    }
    let mut q = lock(&shared.queue);
    if let Some((done, service)) = after.sample.take() {
        q.pool.observe(done, service);
    }
    let n = after.retry.len();
    while let Some(job) = after.retry.pop_back() {
        q.jobs.push_front(job);
    }
    drop(q);
    for _ in 0..n {
        shared.ready.notify_one();
    }
}

/// Hands the buffered frames to the connection; stream events go to their
/// exchanges. `Err`: the connection failed.
#[allow(clippy::too_many_arguments)]
fn feed(
    l: &mut Link,
    plan: &Plan<'_>,
    shared: &Shared,
    tx: &mpsc::Sender<Fact>,
    input: &[u8],
    now: u64,
    start: &mut usize,
    after: &mut After,
) -> Result<(), ErrorKind> {
    let mut pos = 0;
    loop {
        let (used, event) = match l.h2.handle_read(&input[pos..]) {
            Ok(r) => r,
            Err(e) => {
                l.error = Some(e.code());
                return Err(ErrorKind::BadFraming);
            }
        };
        let frame = &input[pos..pos + used];
        pos += used;
        *start += used;
        let Some(event) = event else {
            if used == 0 {
                return Ok(());
            }
            continue;
        };
        match event {
            Event::Headers {
                stream,
                status,
                event_stream,
                grpc_status,
                end_stream: ended,
            } => {
                if let Some(slot) = l.slot_of(stream) {
                    l.exchanges[slot].on_head(now, status, event_stream);
                    l.exchanges[slot].on_grpc_status(grpc_status);
                    if ended {
                        finish_ok(l, slot, shared, tx, now, after);
                    }
                }
            }
            Event::Data {
                stream,
                len,
                end_stream: ended,
            } => {
                if let Some(slot) = l.slot_of(stream) {
                    let data = l.h2.data_of(frame, len);
                    let Link {
                        exchanges, gaps, ..
                    } = &mut *l;
                    exchanges[slot].on_data(now, data, &mut gaps[slot]);
                    if ended {
                        finish_ok(l, slot, shared, tx, now, after);
                    }
                }
            }
            Event::Trailers {
                stream,
                grpc_status,
            } => {
                if let Some(slot) = l.slot_of(stream) {
                    l.exchanges[slot].on_grpc_status(grpc_status);
                    finish_ok(l, slot, shared, tx, now, after);
                }
            }
            Event::StreamReset {
                stream,
                code,
                remote,
            } => {
                if let Some(slot) = l.slot_of(stream) {
                    let retry = code == ErrorCode::REFUSED_STREAM;
                    let retried = l.flights[slot].as_ref().is_some_and(|f| f.job.retried);
                    if retry && !retried {
                        requeue(l, slot, tx, after);
                    } else {
                        let finish = l.exchanges[slot].on_stream_reset(code, remote);
                        end_stream(l, slot, shared, tx, now, Err(finish), after);
                    }
                }
            }
            Event::GoAway { code, .. } => {
                l.goaway_code = Some(code);
                while let Some(stream) = l.h2.take_refused() {
                    if let Some(slot) = l.slot_of(stream) {
                        if l.flights[slot].as_ref().is_some_and(|f| f.job.retried) {
                            let reset = Finish::Error(ErrorKind::Reset);
                            end_stream(l, slot, shared, tx, now, Err(reset), after);
                        } else {
                            requeue(l, slot, tx, after);
                        }
                    }
                }
            }
            Event::Unblocked => {
                for slot in 0..SLOTS {
                    let Some(f) = l.flights[slot].as_ref() else {
                        continue;
                    };
                    let body = plan
                        .http2
                        .map_or(&[][..], |h| h.requests[f.job.request].body);
                    if f.body_at < body.len() {
                        let _ = l.push_body(slot, body);
                    }
                }
            }
            Event::Ready | Event::Pong { .. } => {}
        }
    }
}

/// A stream refused before the server processed it: its request goes back
/// to the front of the queue, to be sent once more on a fresh connection.
fn requeue(l: &mut Link, slot: usize, tx: &mpsc::Sender<Fact>, after: &mut After) {
    if let Some(f) = l.flights[slot].take() {
        let _ = tx.send(Fact::Retried {
            intended_ns: f.job.intended_ns,
        });
        after.retry.push_back(Job {
            retried: true,
            ..f.job
        });
    }
}

fn finish_ok(
    l: &mut Link,
    slot: usize,
    shared: &Shared,
    tx: &mpsc::Sender<Fact>,
    now: u64,
    after: &mut After,
) {
    let Link {
        exchanges, gaps, ..
    } = &mut *l;
    exchanges[slot].on_end(now, &mut gaps[slot]);
    end_stream(l, slot, shared, tx, now, Ok(()), after);
}

/// The stream in `slot` ended at `now`: answered (`Ok`, its exchange says
/// how) or failed (`Err`, how). Its request becomes a ledger fact.
fn end_stream(
    l: &mut Link,
    slot: usize,
    shared: &Shared,
    tx: &mpsc::Sender<Fact>,
    now: u64,
    how: Result<(), Finish<'static>>,
    after: &mut After,
) {
    let Some(f) = l.flights[slot].take() else {
        return;
    };
    let answered = how.is_ok();
    let outcome = match how {
        Ok(()) => Outcome::from_finish(l.exchanges[slot].finish(&l.gaps[slot])),
        Err(finish) => Outcome::from_finish(finish),
    };
    let _ = tx.send(Fact::Done {
        intended_ns: f.job.intended_ns,
        request: f.job.request,
        sent_ns: f.sent_ns,
        done_ns: now,
        outcome,
    });
    if answered {
        // A failure is no answer: it says nothing of the service time.
        after.sample = Some((now, now.saturating_sub(f.sent_ns)));
    }
    shared.in_flight.fetch_sub(1, Ordering::Relaxed);
}
