//! HTTP/3 over QUIC on the std engine (`--http3`): QUIC from `quinn-proto`
//! (sans-IO, rustls underneath with the run's certificate handling), the
//! HTTP/3 framing and QPACK from core ([`metronome_core::h3`]), each
//! stream's response turned into core's `Finish` by the same
//! [`StreamExchange`] HTTP/2 uses. This file moves datagrams, reads the
//! clock and hands facts to the collector.
//!
//! Two threads per connection, as for HTTP/2: the *dispatcher*
//! ([`worker`]) takes due requests from the pacer's queue while its
//! connection has a free stream slot and writes each on a new
//! bidirectional stream (HEADERS, DATA, FIN); the *reader* ([`read_loop`])
//! blocks on the UDP socket, stamps each datagram, feeds it to the QUIC
//! connection, reads the response streams and ends them (answered, reset,
//! past their timeout, or with the connection). They share the connection
//! under a mutex. A dead connection (closed by the server, idle timeout)
//! ends its streams and the dispatcher opens a new one.
//!
//! Not here yet: the server's control and QPACK streams are drained
//! unread (its SETTINGS and GOAWAY are not acted on), no 0-RTT, no retry
//! of a request on a fresh connection.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use quinn_proto::crypto::rustls::QuicClientConfig;
use quinn_proto::{
    ClientConfig, Connection, ConnectionError, ConnectionHandle, DatagramEvent, Dir, Endpoint,
    EndpointConfig, Event, ReadError, StreamEvent, StreamId, VarInt,
};

use metronome_core::engine::HandshakeFailure;
use metronome_core::exchange::{Finish, GAP_CAP};
use metronome_core::h2::StreamExchange;
use metronome_core::h3::frame::{encode_control_stream_start, encode_data_header, encode_header};
use metronome_core::h3::qpack::Decoder;
use metronome_core::h3::{ErrorCode, Frame, FrameReader, H3Error, Role};
use metronome_core::measure::{ErrorKind, FramingCause, ThreadStats, Unsent};
use metronome_core::plan::{Plan, Protocol, H2_MAX_STREAMS};

use crate::clock::{thread_cpu_ns, Clock};
use crate::collector::Fact;
use crate::conn::{Opened, Outcome};
use crate::queue::{Job, Shared};
use crate::tls::{Tls, TlsFailure};

/// Streams per connection at most (the most any plan may ask).
const SLOTS: usize = H2_MAX_STREAMS as usize;
/// The largest response field section accepted (advertised as
/// SETTINGS_MAX_FIELD_SECTION_SIZE).
const SECTION: usize = 16 * 1024;
/// The longest the reader blocks before it looks at deadlines and timers.
const SLICE: Duration = Duration::from_millis(2);
/// A UDP datagram at most.
const DATAGRAM: usize = 64 * 1024;
/// HTTP/3 frame type HEADERS.
const HEADERS: u64 = 0x01;

/// The QUIC client configuration for `tls`: its rustls configuration (the
/// same roots, `--cacert`, `--insecure`, client certificate) with ALPN
/// `h3`.
///
/// # Errors
/// The configuration cannot do QUIC (no TLS 1.3 suite).
fn quic_config(tls: &Tls) -> io::Result<ClientConfig> {
    let mut c = (*tls.config).clone();
    c.alpn_protocols = vec![b"h3".to_vec()];
    let q = QuicClientConfig::try_from(c).map_err(|e| {
        TlsFailure::error(
            HandshakeFailure::Protocol,
            format!("the TLS configuration cannot carry QUIC: {e}"),
        )
    })?;
    Ok(ClientConfig::new(Arc::new(q)))
}

/// The server name of `tls` as text (a DNS name or an IP address).
fn server_name(tls: &Tls) -> String {
    match &tls.server_name {
        rustls::pki_types::ServerName::DnsName(d) => d.as_ref().to_string(),
        rustls::pki_types::ServerName::IpAddress(ip) => std::net::IpAddr::from(*ip).to_string(),
        _ => "localhost".to_string(),
    }
}

/// One QUIC connection and its UDP socket (connected to the target).
struct Quic {
    sock: UdpSocket,
    endpoint: Endpoint,
    conn: Connection,
    handle: ConnectionHandle,
    remote: SocketAddr,
    tx: Vec<u8>,
    /// Bytes sent and not yet counted in the run's traffic.
    written: usize,
}

impl Quic {
    /// Sends every datagram the connection owes now; hands its endpoint
    /// events over.
    fn flush(&mut self, now: Instant) -> io::Result<()> {
        loop {
            self.tx.clear();
            let Some(t) = self.conn.poll_transmit(now, 1, &mut self.tx) else {
                break;
            };
            match self.sock.send(&self.tx[..t.size]) {
                Ok(_) => self.written += t.size,
                // A datagram the kernel cannot take is a lost packet: QUIC
                // sends it again.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => return Err(e),
            }
        }
        while let Some(ev) = self.conn.poll_endpoint_events() {
            if let Some(ce) = self.endpoint.handle_event(self.handle, ev) {
                self.conn.handle_event(ce);
            }
        }
        Ok(())
    }

    /// A datagram from the server, received at `now`.
    fn datagram(&mut self, now: Instant, data: &[u8]) {
        self.tx.clear();
        match self.endpoint.handle(
            now,
            self.remote,
            None,
            None,
            BytesMut::from(data),
            &mut self.tx,
        ) {
            Some(DatagramEvent::ConnectionEvent(h, ev)) if h == self.handle => {
                self.conn.handle_event(ev);
            }
            Some(DatagramEvent::Response(t)) => {
                let _ = self.sock.send(&self.tx[..t.size]);
            }
            _ => {}
        }
    }

    /// Fires the connection's timers due at `now`.
    fn timers(&mut self, now: Instant) {
        if self.conn.poll_timeout().is_some_and(|t| t <= now) {
            self.conn.handle_timeout(now);
        }
    }

    /// How long to block for the next datagram: until the next timer, at
    /// most `slice`.
    fn wait(&mut self, now: Instant, slice: Duration) -> Duration {
        let until = self
            .conn
            .poll_timeout()
            .map_or(slice, |t| t.saturating_duration_since(now).min(slice));
        until.max(Duration::from_micros(50))
    }
}

/// A connection through its QUIC handshake, its control stream opened.
pub(crate) struct Opening {
    quic: Quic,
    opened: Opened,
}

impl Opening {
    /// How it was opened.
    pub(crate) fn opened(&self) -> Opened {
        self.opened
    }
}

/// Opens an HTTP/3 connection to `addr`: the QUIC handshake (TLS 1.3,
/// ALPN `h3`) within `timeout`, then the client's control stream with its
/// SETTINGS (QPACK capacity 0).
///
/// # Errors
/// A refused port (ICMP unreachable) as `ConnectionRefused`; a failed or
/// timed-out handshake as a [`TlsFailure`] of its kind.
pub(crate) fn open(addr: SocketAddr, timeout: Duration, tls: &Tls) -> io::Result<Opening> {
    let timeout = timeout.max(Duration::from_millis(1));
    let started = Instant::now();
    let deadline = started + timeout;
    let local: SocketAddr = if addr.is_ipv4() {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = UdpSocket::bind(local)?;
    sock.connect(addr)?;
    let mut endpoint = Endpoint::new(Arc::new(EndpointConfig::default()), None, true, None);
    let (handle, conn) = endpoint
        .connect(started, quic_config(tls)?, addr, &server_name(tls))
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let mut q = Quic {
        sock,
        endpoint,
        conn,
        handle,
        remote: addr,
        tx: Vec::with_capacity(DATAGRAM),
        written: 0,
    };
    let mut buf = vec![0u8; DATAGRAM];
    loop {
        let now = Instant::now();
        q.timers(now);
        while let Some(ev) = q.conn.poll() {
            match ev {
                Event::Connected => return connected(q, started),
                Event::ConnectionLost { reason } => return Err(handshake_error(&reason)),
                _ => {}
            }
        }
        q.flush(now)?;
        if now >= deadline {
            return Err(TlsFailure::error(
                HandshakeFailure::Timeout,
                format!(
                    "the QUIC handshake did not complete within {} ms (no HTTP/3 server on UDP {addr}?)",
                    timeout.as_millis()
                ),
            ));
        }
        let wait = q.wait(now, deadline.saturating_duration_since(now));
        q.sock.set_read_timeout(Some(wait))?;
        match q.sock.recv(&mut buf) {
            Ok(n) => q.datagram(Instant::now(), &buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The handshake is done: the control stream opens with the SETTINGS.
fn connected(mut q: Quic, started: Instant) -> io::Result<Opening> {
    let shaken_ns = started.elapsed().as_nanos() as u64;
    let id = q
        .conn
        .streams()
        .open(Dir::Uni)
        .ok_or_else(|| io::Error::other("the server allows no unidirectional stream"))?;
    let mut control = [0u8; 64];
    let n = encode_control_stream_start(SECTION as u64, &mut control)
        .ok_or_else(|| io::Error::other("SETTINGS do not fit"))?;
    q.conn
        .send_stream(id)
        .write(&control[..n])
        .map_err(|e| io::Error::other(e.to_string()))?;
    q.flush(Instant::now())?;
    Ok(Opening {
        quic: q,
        opened: Opened {
            connect_ns: shaken_ns,
            handshake_ns: Some(shaken_ns),
            resumed: false,
            agreed: Some((true, Some(b"h3"))),
        },
    })
}

/// A handshake that failed as the TLS ones are counted: a refused
/// certificate, or anything else in the protocol.
fn handshake_error(reason: &ConnectionError) -> io::Error {
    let text = reason.to_string();
    let kind = if text.contains("certificate") || text.contains("Certificate") {
        HandshakeFailure::Certificate
    } else {
        HandshakeFailure::Protocol
    };
    if matches!(reason, ConnectionError::TimedOut) {
        return TlsFailure::error(
            HandshakeFailure::Timeout,
            "the QUIC handshake timed out (no HTTP/3 server on this UDP port?)",
        );
    }
    TlsFailure::error(kind, format!("the QUIC handshake failed: {text}"))
}

/// One request in flight on one stream.
struct Flight {
    job: Job,
    sent_ns: u64,
    /// The stream's bytes (HEADERS, DATA) and how many are written.
    out: Vec<u8>,
    at: usize,
    reader: FrameReader<SECTION>,
    ex: StreamExchange,
    gaps: Vec<u64>,
}

/// One connection's state, shared by its dispatcher and its reader.
struct Link {
    quic: Option<Quic>,
    flights: HashMap<StreamId, Box<Flight>>,
    /// Flights ended, kept for the next streams (no allocation per request
    /// once warm).
    spare: Vec<Box<Flight>>,
    decoder: Box<Decoder<SECTION>>,
    protocol: Protocol,
    dead: bool,
    leaving: bool,
    cap: usize,
    counted: usize,
}

impl Link {
    /// Streams this connection may still open now.
    fn free(&self) -> usize {
        if self.dead || self.leaving || self.quic.is_none() {
            return 0;
        }
        self.cap.saturating_sub(self.flights.len())
    }

    /// Brings this connection's share of the queue's `idle` count to its
    /// free stream slots (as HTTP/2's `Link::sync_idle`).
    fn sync_idle(&mut self, shared: &Shared) {
        let free = self.free();
        if free != self.counted {
            let mut q = lock(&shared.queue);
            q.idle = (q.idle + free).saturating_sub(self.counted);
            self.counted = free;
        }
    }

    fn count_written(&mut self, shared: &Shared, now: u64) {
        if let Some(q) = self.quic.as_mut() {
            shared.traffic.sent(now, std::mem::take(&mut q.written));
        }
    }

    fn flight(&mut self, job: Job, sent_ns: u64) -> Box<Flight> {
        let sse = matches!(self.protocol, Protocol::OpenAiSse);
        let mut f = self.spare.pop().unwrap_or_else(|| {
            Box::new(Flight {
                job,
                sent_ns,
                out: Vec::new(),
                at: 0,
                reader: FrameReader::new(Role::Request),
                ex: StreamExchange::for_protocol(self.protocol),
                gaps: vec![0; if sse { GAP_CAP } else { 0 }],
            })
        });
        f.job = job;
        f.sent_ns = sent_ns;
        f.out.clear();
        f.at = 0;
        f.reader = FrameReader::new(Role::Request);
        f.ex.begin(job.intended_ns, sent_ns);
        f
    }
}

/// Writes what is left of `f`'s bytes on stream `id`, and its FIN once all
/// are written. `Err`: the stream cannot be written (stopped, closed).
fn push(conn: &mut Connection, id: StreamId, f: &mut Flight) -> Result<(), ()> {
    let mut s = conn.send_stream(id);
    while f.at < f.out.len() {
        match s.write(&f.out[f.at..]) {
            Ok(n) => f.at += n,
            Err(quinn_proto::WriteError::Blocked) => return Ok(()),
            Err(_) => return Err(()),
        }
    }
    s.finish().map_err(|_| ())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn queue_closing(shared: &Shared) -> bool {
    let q = lock(&shared.queue);
    q.closing && q.jobs.is_empty()
}

/// A connection's dispatcher (and, in a scope, its readers): keeps its
/// connection open, takes due requests while it has a free stream slot
/// and writes each on a new stream.
pub(crate) fn worker(
    plan: &Plan<'_>,
    tls: Option<&Tls>,
    origin: &OnceLock<Clock>,
    shared: &Shared,
    tx: mpsc::Sender<Fact>,
    first: Option<Opening>,
    all_stats: &Mutex<Vec<ThreadStats>>,
) {
    let (Some(h2plan), Some(tls)) = (plan.http2, tls) else {
        return;
    };
    let cap = match h2plan.max_streams {
        0 => SLOTS,
        n => n as usize,
    };
    let connect_timeout = Duration::from_nanos(plan.connect_timeout_ns());
    let link = Mutex::new(Link {
        quic: None,
        flights: HashMap::with_capacity(cap),
        spare: Vec::with_capacity(cap),
        decoder: Box::new(Decoder::new()),
        protocol: plan.protocol,
        dead: true,
        leaving: false,
        cap,
        counted: 0,
    });
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
            if wait_for_slot(&link, &changed, shared) {
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
                        if clock.now_ns() >= shared.hard_end_ns.load(Ordering::Relaxed) {
                            break;
                        }
                        let r = open(plan.addr, connect_timeout, tls);
                        match &r {
                            Ok(o) => {
                                let _ = tx.send(Fact::Opened(o.opened()));
                            }
                            Err(e) => {
                                if let Some(kind) = crate::handshake_failure(e) {
                                    let _ = tx.send(Fact::HandshakeFailed(kind));
                                }
                            }
                        }
                        r
                    }
                };
                if grown && !connected_once {
                    lock(&shared.queue).connecting -= 1;
                }
                let Ok(o) = opening else {
                    connected_once = true;
                    not_connected(origin, shared, &tx);
                    continue;
                };
                if grown && !connected_once {
                    count_open(shared);
                } else if connected_once {
                    shared.opened.fetch_add(1, Ordering::Relaxed);
                }
                connected_once = true;
                let Ok(read_sock) = o.quic.sock.try_clone() else {
                    continue;
                };
                {
                    let mut l = lock(&link);
                    l.quic = Some(o.quic);
                    l.dead = false;
                    l.sync_idle(shared);
                }
                if !linked {
                    linked = true;
                    lock(&shared.queue).h2_linked += 1;
                }
                let (link, changed, tx) = (&link, &changed, tx.clone());
                reader =
                    Some(s.spawn(move || {
                        read_loop(plan, origin, shared, link, changed, tx, read_sock)
                    }));
                continue;
            }
            if lock(&link).free() == 0 {
                if queue_closing(shared) {
                    break;
                }
                continue;
            }
            let Some(job) = take_job(shared) else { break };
            let clock = origin.get_or_init(Clock::start);
            if let Some(sent_ns) = start_stream(&link, plan, clock, shared, &tx, job, &mut streams)
            {
                stats.sent += 1;
                let _ = tx.send(Fact::Sent {
                    intended_ns: job.intended_ns,
                    request: job.request,
                    sent_ns,
                    waited_since: job.waited_since,
                });
            }
        }
        leave(&link, &changed, shared);
        if let Some(r) = reader.take() {
            let _ = r.join();
        }
    });
    stats.cpu_ns = thread_cpu_ns();
    lock(all_stats).push(stats);
    let _ = tx.send(Fact::H2Streams(streams));
}

fn count_open(shared: &Shared) {
    shared.opened.fetch_add(1, Ordering::Relaxed);
    let now = shared.open_connections.fetch_add(1, Ordering::Relaxed) + 1;
    shared.peak_connections.fetch_max(now, Ordering::Relaxed);
}

/// Waits until the connection has a free stream slot, is dead (`true`:
/// open a new one) or the queue closes.
fn wait_for_slot(link: &Mutex<Link>, changed: &Condvar, shared: &Shared) -> bool {
    let mut l = lock(link);
    loop {
        if l.dead {
            return true;
        }
        if l.free() > 0 || queue_closing(shared) {
            return false;
        }
        l = changed
            .wait_timeout(l, Duration::from_millis(20))
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

/// No connection: a waiting request is not sent.
fn not_connected(origin: &OnceLock<Clock>, shared: &Shared, tx: &mpsc::Sender<Fact>) {
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

/// The next due request; `None` once the queue is closed and empty.
fn take_job(shared: &Shared) -> Option<Job> {
    let mut q = lock(&shared.queue);
    loop {
        if let Some(j) = q.jobs.pop_front() {
            return Some(j);
        }
        if q.closing {
            return None;
        }
        q = shared.ready.wait(q).unwrap_or_else(|e| e.into_inner());
    }
}

/// Sends `job` on a new bidirectional stream: HEADERS, DATA, FIN. Returns
/// when it left; `None`: not sent (the run's hard end came first, a fact
/// already; or no stream could be opened, back to the queue's front).
fn start_stream(
    link: &Mutex<Link>,
    plan: &Plan<'_>,
    clock: &Clock,
    shared: &Shared,
    tx: &mpsc::Sender<Fact>,
    job: Job,
    streams: &mut metronome_core::engine::Setup,
) -> Option<u64> {
    let request = plan.http2?.requests[job.request];
    let mut l = lock(link);
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
        return None;
    }
    let id = match (l.free() > 0, l.quic.as_mut()) {
        (true, Some(q)) => q.conn.streams().open(Dir::Bi),
        _ => None,
    };
    let Some(id) = id else {
        drop(l);
        lock(&shared.queue).jobs.push_front(job);
        shared.ready.notify_one();
        return None;
    };
    let sent_ns = clock.now_ns();
    let mut f = l.flight(job, sent_ns);
    let mut head = [0u8; 16];
    let n = encode_header(HEADERS, request.block.len() as u64, &mut head).unwrap_or(0);
    f.out.extend_from_slice(&head[..n]);
    f.out.extend_from_slice(request.block);
    if !request.body.is_empty() {
        let n = encode_data_header(request.body.len() as u64, &mut head).unwrap_or(0);
        f.out.extend_from_slice(&head[..n]);
        f.out.extend_from_slice(request.body);
    }
    let Link { quic, flights, .. } = &mut *l;
    if let Some(q) = quic.as_mut() {
        let _ = push(&mut q.conn, id, &mut f);
        flights.insert(id, f);
        let _ = q.flush(Instant::now());
        // The server's stream limit is QUIC's MAX_STREAMS: not reported.
        streams.h2_streams(flights.len(), None);
    }
    l.count_written(shared, sent_ns);
    l.sync_idle(shared);
    Some(sent_ns)
}

/// Leaving: the streams in flight end (answered, or at their deadline,
/// which the reader watches), then the connection closes.
fn leave(link: &Mutex<Link>, changed: &Condvar, shared: &Shared) {
    let mut l = lock(link);
    l.leaving = true;
    l.sync_idle(shared);
    while !l.dead && !l.flights.is_empty() {
        l = changed
            .wait_timeout(l, Duration::from_millis(20))
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

/// What the reader hands the queue once the link's lock is released.
#[derive(Default)]
struct After {
    /// The last (done, service) times, for the pool's estimate.
    sample: Option<(u64, u64)>,
}

/// A connection's reader: receives, stamps and feeds datagrams until the
/// connection dies or the dispatcher leaves with no stream in flight.
fn read_loop(
    plan: &Plan<'_>,
    origin: &OnceLock<Clock>,
    shared: &Shared,
    link: &Mutex<Link>,
    changed: &Condvar,
    tx: mpsc::Sender<Fact>,
    sock: UdpSocket,
) {
    let clock = origin.get_or_init(Clock::start);
    let mut buf = vec![0u8; DATAGRAM].into_boxed_slice();
    let mut after = After::default();
    let mut ended: Vec<(Box<Flight>, Finish<'static>, bool)> = Vec::with_capacity(SLOTS);
    loop {
        let wait = match lock(link).quic.as_mut() {
            Some(q) => q.wait(Instant::now(), SLICE),
            None => return,
        };
        let _ = sock.set_read_timeout(Some(wait));
        let got = match sock.recv(&mut buf) {
            Ok(n) => Ok(n),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                Ok(0)
            }
            Err(e) => Err(e),
        };
        let now = clock.now_ns();
        let instant = Instant::now();
        let mut l = lock(link);
        let mut lost: Option<String> = None;
        let mut lost_kind = ErrorKind::Reset;
        let Link {
            quic,
            flights,
            decoder,
            spare,
            ..
        } = &mut *l;
        let Some(q) = quic.as_mut() else { return };
        match got {
            Ok(0) => {}
            Ok(n) => {
                shared.traffic.received(now, n);
                q.datagram(instant, &buf[..n]);
            }
            Err(e) => lost = Some(format!("the UDP socket failed: {e}")),
        }
        q.timers(instant);
        while let Some(ev) = q.conn.poll() {
            match ev {
                Event::Stream(StreamEvent::Readable { id }) => {
                    read_stream(q, id, flights, decoder, now, &mut ended);
                }
                Event::Stream(StreamEvent::Writable { id }) => {
                    if let Some(f) = flights.get_mut(&id) {
                        let _ = push(&mut q.conn, id, f);
                    }
                }
                Event::Stream(StreamEvent::Opened { dir }) => {
                    while let Some(id) = q.conn.streams().accept(dir) {
                        read_stream(q, id, flights, decoder, now, &mut ended);
                    }
                }
                Event::ConnectionLost { reason } => {
                    if matches!(reason, ConnectionError::TimedOut) {
                        lost_kind = ErrorKind::Timeout;
                    }
                    lost = Some(describe(&reason));
                }
                _ => {}
            }
        }
        // Deadlines: a stream unanswered past its timeout, or the run's end.
        let hard = shared.hard_end_ns.load(Ordering::Relaxed);
        let late: Vec<StreamId> = flights
            .iter()
            .filter(|(_, f)| now >= f.sent_ns.saturating_add(plan.timeout_ns) || now >= hard)
            .map(|(id, _)| *id)
            .collect();
        for id in late {
            if let Some(f) = flights.remove(&id) {
                let cancel = VarInt::from_u32(ErrorCode::REQUEST_CANCELLED.0 as u32);
                let _ = q.conn.recv_stream(id).stop(cancel);
                let _ = q.conn.send_stream(id).reset(cancel);
                ended.push((f, Finish::Error(ErrorKind::Timeout), false));
            }
        }
        if q.flush(instant).is_err() && lost.is_none() {
            lost = Some("the UDP socket failed".into());
        }
        if let Some(why) = &lost {
            for (_, f) in flights.drain() {
                let kind = if lost_kind == ErrorKind::Timeout {
                    ErrorKind::Timeout
                } else {
                    f.ex.on_reset(metronome_core::h2::ErrorCode::CANCEL)
                };
                ended.push((f, Finish::Error(kind), false));
            }
            let _ = tx.send(Fact::Note(why.clone()));
        }
        for (f, finish, answered) in ended.drain(..) {
            book(&f, finish, answered, shared, &tx, now, &mut after);
            spare.push(f);
        }
        let leaving = l.leaving && l.flights.is_empty();
        if lost.is_some() {
            l.dead = true;
            l.quic = None;
        } else if leaving {
            if let Some(q) = l.quic.as_mut() {
                q.conn
                    .close(Instant::now(), VarInt::from_u32(0x100), bytes::Bytes::new());
                let _ = q.flush(Instant::now());
            }
        }
        l.count_written(shared, now);
        l.sync_idle(shared);
        let dead = l.dead;
        drop(l);
        changed.notify_all();
        if let Some((done, service)) = after.sample.take() {
            lock(&shared.queue).pool.observe(done, service);
        }
        if dead || leaving {
            return;
        }
    }
}

/// The connection's end, in one line for the report's warnings.
fn describe(reason: &ConnectionError) -> String {
    match reason {
        ConnectionError::ApplicationClosed(c) => format!(
            "HTTP/3: the server closed the connection with code {:#x}{}",
            c.error_code.into_inner(),
            reason_text(&c.reason)
        ),
        ConnectionError::ConnectionClosed(c) => format!(
            "HTTP/3: the server closed the connection with QUIC code {}{}",
            c.error_code,
            reason_text(&c.reason)
        ),
        ConnectionError::TimedOut => "HTTP/3: a connection reached its idle timeout".into(),
        ConnectionError::Reset => "HTTP/3: the server reset a connection (stateless reset)".into(),
        other => format!("HTTP/3: a connection ended: {other}"),
    }
}

fn reason_text(reason: &[u8]) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(" ({})", String::from_utf8_lossy(reason))
    }
}

/// Reads what stream `id` has: a response stream's frames into its flight
/// (ended ones into `ended`); the server's unidirectional streams (control,
/// QPACK) are drained unread.
fn read_stream(
    q: &mut Quic,
    id: StreamId,
    flights: &mut HashMap<StreamId, Box<Flight>>,
    decoder: &mut Decoder<SECTION>,
    now: u64,
    ended: &mut Vec<(Box<Flight>, Finish<'static>, bool)>,
) {
    let mut rs = q.conn.recv_stream(id);
    let Ok(mut chunks) = rs.read(true) else {
        return;
    };
    let mut end: Option<Result<(), Finish<'static>>> = None;
    loop {
        match chunks.next(usize::MAX) {
            Ok(Some(chunk)) => {
                let Some(f) = flights.get_mut(&id) else {
                    continue;
                };
                if end.is_none() {
                    if let Err(e) = feed(f, &chunk.bytes, decoder, now) {
                        let _ = e;
                        end = Some(Err(Finish::Framing(FramingCause::Http2Protocol)));
                    }
                }
            }
            Ok(None) => {
                end.get_or_insert(Ok(()));
                break;
            }
            Err(ReadError::Blocked) => break,
            Err(ReadError::Reset(_)) => {
                if let Some(f) = flights.get(&id) {
                    let kind = f.ex.on_reset(metronome_core::h2::ErrorCode::CANCEL);
                    end = Some(Err(Finish::Error(kind)));
                }
                break;
            }
        }
    }
    let _ = chunks.finalize();
    let Some(end) = end else { return };
    let Some(mut f) = flights.remove(&id) else {
        return;
    };
    match end {
        Ok(()) => {
            if f.reader.finish().is_err() {
                ended.push((f, Finish::Framing(FramingCause::Http2Protocol), false));
                return;
            }
            let Flight { ex, gaps, .. } = &mut *f;
            ex.on_end(now, gaps);
            let finish = own(ex.finish(gaps));
            ended.push((f, finish, true));
        }
        Err(finish) => {
            let cancel = VarInt::from_u32(ErrorCode::REQUEST_CANCELLED.0 as u32);
            let _ = q.conn.send_stream(id).reset(cancel);
            let _ = q.conn.recv_stream(id).stop(cancel);
            ended.push((f, finish, false));
        }
    }
}

/// A finish that borrows nothing: a stream's timing and gaps are taken
/// again from its flight when it is booked.
fn own(finish: Finish<'_>) -> Finish<'static> {
    match finish {
        Finish::Ok => Finish::Ok,
        Finish::Status(c) => Finish::Status(c),
        Finish::GrpcStatus(c) => Finish::GrpcStatus(c),
        Finish::Error(k) => Finish::Error(k),
        Finish::Framing(c) => Finish::Framing(c),
        // Re-read from the flight in `book`.
        Finish::Stream { .. } => Finish::Ok,
    }
}

/// Feeds a response stream's bytes to its frame reader: the head's
/// `:status` and the body to the exchange.
fn feed(
    f: &mut Flight,
    mut input: &[u8],
    decoder: &mut Decoder<SECTION>,
    now: u64,
) -> Result<(), H3Error> {
    let Flight {
        reader, ex, gaps, ..
    } = f;
    while !input.is_empty() {
        let (n, frame) = reader.read(input)?;
        match frame {
            Some(Frame::Headers(block)) => {
                let mut event_stream = false;
                let mut grpc: Option<u32> = None;
                let section = decoder.decode(block, |name, value| {
                    if name == b"content-type" {
                        event_stream = value.starts_with(b"text/event-stream");
                    } else if name == b"grpc-status" {
                        grpc = core::str::from_utf8(value)
                            .ok()
                            .and_then(|v| v.parse().ok());
                    }
                })?;
                match section.status {
                    Some(status) if status >= 200 && !ex.has_head() => {
                        ex.on_head(now, status, event_stream);
                        ex.on_grpc_status(grpc);
                    }
                    Some(_) => {}
                    None => ex.on_grpc_status(grpc),
                }
            }
            Some(Frame::Data(d)) => ex.on_data(now, d, gaps),
            _ => {}
        }
        input = &input[n..];
    }
    Ok(())
}

/// A stream ended at `now`: a ledger fact, and an answer's service time a
/// sample for the pool.
fn book(
    f: &Flight,
    finish: Finish<'static>,
    answered: bool,
    shared: &Shared,
    tx: &mpsc::Sender<Fact>,
    now: u64,
    after: &mut After,
) {
    let outcome = if answered {
        after.sample = Some((now, now.saturating_sub(f.sent_ns)));
        Outcome::from_finish(f.ex.finish(&f.gaps))
    } else {
        Outcome::from_finish(finish)
    };
    let _ = tx.send(Fact::Done {
        intended_ns: f.job.intended_ns,
        request: f.job.request,
        sent_ns: f.sent_ns,
        done_ns: now,
        outcome,
        head: f.ex.head(),
    });
    shared.in_flight.fetch_sub(1, Ordering::Relaxed);
}
