//! One blocking keep-alive connection and one request/response exchange on
//! it. Every protocol decision is core's [`Exchange`]; this file moves
//! bytes and reads the clock.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use metronome_core::engine::{warm_up, WarmConn, WarmReply};
use metronome_core::exchange::{compact, Exchange, Feed, Finish, Idle, GAP_CAP};
use metronome_core::measure::{ErrorKind, StreamTiming};
use metronome_core::plan::{Plan, READ_BUF_BYTES};

use crate::clock::Clock;
use crate::sys::{peek_now, recv_now, send_now, wait_readable_or_writable};
use crate::tls::{self, NowIo, Tls};
use crate::traffic::Traffic;

/// The longest a blocking read or write waits before the thread looks at
/// the run's hard end again (it moves earlier on a stop).
const SLICE: Duration = Duration::from_millis(50);
/// The longest single connect attempt during the run (see [`Conn::reopen_until`]).
const CONNECT_SLICE: Duration = Duration::from_millis(250);

/// How one request ended, owned: sent from a connection thread to the
/// collector, which records it through [`Outcome::as_finish`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Outcome {
    /// A 2xx response, fully read.
    Ok,
    /// A complete response with a non-2xx status.
    Status(u16),
    /// A failure that is not an HTTP status: a fault by kind, bad framing,
    /// a non-zero `grpc-status`.
    Failed(Finish<'static>),
    /// A streamed response (OpenAI-style SSE) that reached its end; the
    /// recorder decides whether it succeeded (it needs content and `[DONE]`).
    Stream {
        /// The stream's timing.
        timing: StreamTiming,
        /// Gaps between consecutive content chunks, ns.
        gaps: Vec<u64>,
    },
}

impl Outcome {
    pub(crate) fn from_finish(finish: Finish<'_>) -> Outcome {
        match finish {
            Finish::Ok => Outcome::Ok,
            Finish::Status(code) => Outcome::Status(code),
            Finish::GrpcStatus(code) => Outcome::Failed(Finish::GrpcStatus(code)),
            Finish::Error(kind) => Outcome::Failed(Finish::Error(kind)),
            Finish::Framing(cause) => Outcome::Failed(Finish::Framing(cause)),
            Finish::Check(which) => Outcome::Failed(Finish::Check(which)),
            Finish::Stream { timing, gaps } => Outcome::Stream {
                timing: *timing,
                gaps: gaps.to_vec(),
            },
        }
    }

    /// The borrowed form a ledger records.
    pub(crate) fn as_finish(&self) -> Finish<'_> {
        match self {
            Outcome::Ok => Finish::Ok,
            Outcome::Status(code) => Finish::Status(*code),
            Outcome::Failed(f) => *f,
            Outcome::Stream { timing, gaps } => Finish::Stream { timing, gaps },
        }
    }
}

/// What a connection was found to be before its reuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Health {
    /// Open and quiet: usable.
    Alive,
    /// No socket (closed earlier): reopen it.
    Closed,
    /// The server closed it while idle (a close, a half-close or a `408`):
    /// it was closed here too; reopen it.
    IdleClosed,
    /// Bytes no request asked for arrived while idle: it was closed; reopen it.
    Unsolicited,
}

/// How one exchange ended.
#[derive(Debug)]
// The stream timing makes `Done` some 200 bytes; it is moved once per
// request, and boxing it would allocate per request.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Exchanged {
    /// The request ended at `done_ns` with `outcome`; `unsolicited`: bytes
    /// followed the response (the connection was closed).
    Done {
        done_ns: u64,
        outcome: Outcome,
        unsolicited: bool,
    },
    /// The reused connection was closed before any response byte and the
    /// request may be sent again on a fresh one (the connection is closed).
    Retry,
}

/// How one connection was opened: its TCP connect time and, over TLS, its
/// handshake time and whether it resumed a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Opened {
    pub(crate) connect_ns: u64,
    pub(crate) handshake_ns: Option<u64>,
    pub(crate) resumed: bool,
    /// Over TLS: what the handshake agreed ([`crate::tls::agreed`]).
    pub(crate) agreed: Option<(bool, Option<&'static [u8]>)>,
}

impl Opened {
    /// Records this connection in the engine's set-up figures.
    pub(crate) fn record(&self, setup: &mut metronome_core::engine::Setup) {
        setup.opened(self.connect_ns, self.handshake_ns, self.resumed);
        if let Some((tls13, alpn)) = self.agreed {
            setup.negotiated(tls13, alpn);
        }
    }
}

/// A connection, its read buffer and its exchange.
pub(crate) struct Conn {
    stream: Option<TcpStream>,
    /// The TLS target, when the URL is https.
    target: Option<Tls>,
    /// The TLS session of the open connection (https only).
    tls: Option<Box<rustls::ClientConnection>>,
    /// How the last (re)open went; taken by whoever records it.
    pub(crate) opened: Option<Opened>,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    exchange: Exchange,
    gaps: Box<[u64]>,
    /// The socket's current read and write timeouts (set only when they change).
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    /// How long after a send the response is polled without blocking
    /// (core's `linger_ns`), and until when for the current request.
    pub(crate) linger_ns: u64,
    linger_until_ns: u64,
}

/// A pre-opened connection during the warm start (core's [`WarmConn`]).
impl WarmConn for Conn {
    /// Bytes or a close while idle ([`Conn::health`]; closes it).
    fn early_bytes(&mut self) -> bool {
        !matches!(self.health(), Health::Alive)
    }

    /// The warm-up exchange through core's [`warm_up`], over the socket or
    /// its TLS session, with 20 ms read and write slices; a connection
    /// without a usable answer is closed.
    fn warm(&mut self, plan: &Plan<'_>, give_up: &(dyn Fn() -> bool + Sync)) -> WarmReply {
        let Some(sock) = self.stream.as_ref() else {
            return WarmReply::Failed;
        };
        let slice = Some(Duration::from_millis(20));
        if sock.set_read_timeout(slice).is_err() || sock.set_write_timeout(slice).is_err() {
            return WarmReply::Failed;
        }
        self.read_timeout = slice;
        self.write_timeout = slice;
        let request = plan.requests[0];
        let reply = match self.tls.as_deref_mut() {
            None => warm_up(&mut &*sock, &mut self.exchange, request, give_up),
            Some(tls) => {
                let mut io = sock;
                let mut stream = rustls::Stream::new(tls, &mut io);
                warm_up(&mut stream, &mut self.exchange, request, give_up)
            }
        };
        if !matches!(
            reply,
            WarmReply::Answered {
                keep_alive: true,
                ..
            }
        ) {
            self.close();
        }
        reply
    }
}

impl Conn {
    /// What is known of the last response's head (core's
    /// [`Exchange::head`]), until the next request begins.
    pub(crate) fn head(&self) -> metronome_core::record::ResponseHead {
        self.exchange.head()
    }

    /// A connection slot that is not open yet.
    pub(crate) fn new(exchange: Exchange, target: Option<Tls>) -> Conn {
        Conn {
            stream: None,
            target,
            tls: None,
            opened: None,
            buf: vec![0u8; READ_BUF_BYTES].into_boxed_slice(),
            start: 0,
            end: 0,
            exchange,
            gaps: vec![0u64; GAP_CAP].into_boxed_slice(),
            read_timeout: None,
            write_timeout: None,
            linger_ns: 0,
            linger_until_ns: 0,
        }
    }

    /// Opens a connection to `addr` within `timeout`.
    ///
    /// # Errors
    /// The connect error (refused, unreachable, timed out).
    pub(crate) fn connect(
        addr: SocketAddr,
        timeout: Duration,
        exchange: Exchange,
        target: Option<Tls>,
    ) -> io::Result<Conn> {
        let mut conn = Conn::new(exchange, target);
        conn.reopen(addr, timeout)?;
        Ok(conn)
    }

    /// True when the connection is open.
    pub(crate) fn is_open(&self) -> bool {
        self.stream.is_some()
    }

    /// Inter-token gaps that did not fit, over the life of this connection.
    pub(crate) fn dropped_gaps(&self) -> u64 {
        self.exchange.dropped_gaps()
    }

    /// Closes the connection (the next exchange needs [`Conn::reopen`]).
    pub(crate) fn close(&mut self) {
        if let Some(s) = self.stream.take() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        self.tls = None;
        self.start = 0;
        self.end = 0;
        self.read_timeout = None;
        self.write_timeout = None;
        self.exchange.reset_connection();
    }

    /// (Re)opens the connection.
    ///
    /// # Errors
    /// The connect error.
    /// Over TLS the handshake is part of it, bounded by the same timeout;
    /// [`Conn::opened`] says how long each took.
    pub(crate) fn reopen(&mut self, addr: SocketAddr, timeout: Duration) -> io::Result<()> {
        self.reopen_within(addr, timeout, timeout)
    }

    /// [`Conn::reopen`] with its own bound on the TLS handshake.
    fn reopen_within(
        &mut self,
        addr: SocketAddr,
        timeout: Duration,
        handshake_timeout: Duration,
    ) -> io::Result<()> {
        self.close();
        let timeout = timeout.max(Duration::from_millis(1));
        let started = Instant::now();
        let s = TcpStream::connect_timeout(&addr, timeout)?;
        let connect_ns = started.elapsed().as_nanos() as u64;
        s.set_nodelay(true)?;
        let mut opened = Opened {
            connect_ns,
            handshake_ns: None,
            resumed: false,
            agreed: None,
        };
        // The connect counts even when the handshake then fails.
        self.opened = Some(opened);
        if let Some(target) = &self.target {
            let shaking = Instant::now();
            let mut conn = tls::client(target)?;
            opened.resumed =
                tls::handshake(target, &mut conn, &s, Instant::now() + handshake_timeout)?;
            opened.handshake_ns = Some(shaking.elapsed().as_nanos() as u64);
            opened.agreed = Some(tls::agreed(&conn));
            self.tls = Some(Box::new(conn));
        }
        self.opened = Some(opened);
        self.stream = Some(s);
        Ok(())
    }

    /// Reads what there is into `buf[end..]`: plain bytes, or over TLS the
    /// plaintext of the records that arrived. `blocking`: waits per the
    /// socket's read timeout; else `WouldBlock` when nothing is there.
    /// `Ok(0)`: the peer closed (with or without a TLS `close_notify`).
    fn fill(&mut self, blocking: bool) -> io::Result<usize> {
        let Some(stream) = self.stream.as_ref() else {
            return Ok(0);
        };
        let dst = &mut self.buf[self.end..];
        let Some(conn) = self.tls.as_mut() else {
            return if blocking {
                (&*stream).read(dst)
            } else {
                recv_now(stream, dst)
            };
        };
        loop {
            match conn.reader().read(dst) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) => return Err(e),
            }
            if blocking {
                conn.read_tls(&mut &*stream)?;
            } else {
                conn.read_tls(&mut NowIo(stream))?;
            }
            let processed = conn.process_new_packets();
            // Whatever rustls answers (an alert, a key update) goes out now.
            while conn.wants_write() {
                if conn.write_tls(&mut NowIo(stream)).is_err() {
                    break;
                }
            }
            processed.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        }
    }

    /// (Re)opens the connection during the run: attempts of at most
    /// [`CONNECT_SLICE`] each, until one succeeds, `timeout` has passed or
    /// the run's hard end (which a stop moves earlier) comes, so a server
    /// whose accept queue is full cannot hold a stop for the whole timeout.
    ///
    /// # Errors
    /// The last connect error (a timeout when the time ran out).
    pub(crate) fn reopen_until(
        &mut self,
        addr: SocketAddr,
        timeout: Duration,
        clock: &Clock,
        hard_end_ns: &AtomicU64,
    ) -> io::Result<()> {
        let give_up = clock.now_ns().saturating_add(timeout.as_nanos() as u64);
        loop {
            let now = clock.now_ns();
            let end = give_up.min(hard_end_ns.load(Ordering::Relaxed));
            if now >= end {
                return Err(io::Error::from(io::ErrorKind::TimedOut));
            }
            let left = Duration::from_nanos(end - now);
            // A handshake runs within what is left, not within the slice.
            match self.reopen_within(addr, left.min(CONNECT_SLICE), left) {
                Err(e) if e.kind() == io::ErrorKind::TimedOut => {}
                other => return other,
            }
        }
    }

    /// The connection waits idle for a request (core's
    /// [`Exchange::mark_idle`]): a reset before any byte of the next
    /// response is the idle-close race, retried once.
    pub(crate) fn mark_idle(&mut self) {
        self.exchange.mark_idle();
    }

    /// From now on the first response on every connection of this slot is
    /// refused (core's [`Exchange::distrust_first_responses`]).
    pub(crate) fn distrust_first_responses(&mut self) {
        self.exchange.distrust_first_responses();
    }

    /// Looks at an idle connection before reusing it: a close or bytes
    /// while idle mean the server closed it or sent what no request asked
    /// for (core's [`Exchange::handle_idle`]); either way it is closed here.
    pub(crate) fn health(&mut self) -> Health {
        let Some(stream) = self.stream.as_mut() else {
            return Health::Closed;
        };
        if self.end > self.start {
            let idle = Exchange::handle_idle(&self.buf[self.start..self.end]);
            self.close();
            return idle_health(idle);
        }
        if self.tls.is_some() {
            // Over TLS, records may arrive while idle that carry nothing
            // for the application (session tickets): only plaintext or a
            // close counts.
            let health = match self.fill(false) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Health::Alive,
                Ok(n) if n > 0 => {
                    idle_health(Exchange::handle_idle(&self.buf[self.end..self.end + n]))
                }
                Ok(_) | Err(_) => Health::IdleClosed,
            };
            self.close();
            return health;
        }
        let mut peek = [0u8; 16];
        let health = match peek_now(stream, &mut peek) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Health::Alive,
            Ok(n) if n > 0 => idle_health(Exchange::handle_idle(&peek[..n])),
            Ok(_) | Err(_) => Health::IdleClosed,
        };
        self.close();
        health
    }

    /// Sends `request` now and reads its response until it completes, fails
    /// or the deadline passes: `sent_ns + timeout_ns`, or the run's hard end
    /// (read again every [`SLICE`]: a stop moves it earlier), whichever
    /// comes first. The connection is closed after any fault, a
    /// `Connection: close` or unsolicited bytes.
    /// The checks of the next request (core's `Plan::check_of`).
    pub(crate) fn set_check(&mut self, check: Option<&'static metronome_core::check::Check>) {
        self.exchange.set_check(check);
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn exchange(
        &mut self,
        clock: &Clock,
        request: &[u8],
        intended_ns: u64,
        sent_ns: u64,
        timeout_ns: u64,
        hard_end_ns: &AtomicU64,
        retry: (bool, bool),
        traffic: &Traffic,
    ) -> Exchanged {
        self.exchange.begin(intended_ns, sent_ns, request);
        self.linger_until_ns = sent_ns.saturating_add(self.linger_ns);
        let deadline = || {
            sent_ns
                .saturating_add(timeout_ns)
                .min(hard_end_ns.load(Ordering::Relaxed))
        };
        let result = self.exchange_inner(clock, request, deadline, traffic);
        let done_ns = clock.now_ns();
        match result {
            Ok((keep_alive, unsolicited)) => {
                let outcome = Outcome::from_finish(self.exchange.finish(&self.gaps));
                if !keep_alive {
                    self.close();
                }
                Exchanged::Done {
                    done_ns,
                    outcome,
                    unsolicited,
                }
            }
            Err(Finish::Error(kind)) if self.exchange.may_retry(kind, retry.0, retry.1) => {
                self.close();
                Exchanged::Retry
            }
            Err(failure) => {
                self.close();
                Exchanged::Done {
                    done_ns,
                    outcome: Outcome::Failed(failure),
                    unsolicited: false,
                }
            }
        }
    }

    /// Moves bytes until the response is complete (`Ok((keep_alive,
    /// unsolicited))`) or failed.
    fn exchange_inner(
        &mut self,
        clock: &Clock,
        request: &[u8],
        deadline: impl Fn() -> u64,
        traffic: &Traffic,
    ) -> Result<(bool, bool), Finish<'static>> {
        let fault = |kind| Finish::Error(kind);
        // The send, bounded by the deadline (a server that stops reading).
        let mut written = 0;
        while written < request.len() || self.tls.as_ref().is_some_and(|c| c.wants_write()) {
            let now = clock.now_ns();
            let end = deadline();
            if now >= end {
                return Err(fault(ErrorKind::Timeout));
            }
            let Some(stream) = self.stream.as_ref() else {
                return Err(fault(ErrorKind::Reset));
            };
            let wait = Duration::from_nanos((end - now).max(1_000)).min(SLICE);
            let sent = match self.tls.as_mut() {
                None => send_now(stream, &request[written..], wait, &mut self.write_timeout)
                    .inspect(|&n| {
                        written += n;
                        traffic.sent(now, n);
                    }),
                // The whole request is encrypted at once; its records
                // leave as the socket takes them.
                Some(conn) => {
                    if written < request.len() {
                        if conn.writer().write_all(&request[written..]).is_err() {
                            return Err(fault(ErrorKind::Reset));
                        }
                        traffic.sent(now, request.len() - written);
                        written = request.len();
                    }
                    conn.write_tls(&mut NowIo(stream))
                }
            };
            match sent {
                Ok(n) if n > 0 => continue,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if io_kind(&e) == ErrorKind::Timeout => {}
                // The connection failed under the send (the server closed
                // or reset it): a response it sent first, such as an early
                // error status before closing, is still read below;
                // without one the read meets the close.
                Ok(_) | Err(_) => break,
            }
            // The socket takes no more bytes (the server reads slowly, or
            // not at all): wait, a slice at most, until it takes more or
            // the server sends something. The server may have answered
            // without reading the rest (an early response, RFC 9112
            // section 9.5): that is read at once, as the io_uring engine's
            // armed recv does.
            if wait_readable_or_writable(stream, wait) {
                match self.read_early(clock, traffic)? {
                    Early::Nothing => {}
                    // The request was not sent whole: the connection
                    // cannot carry another one.
                    Early::Complete { unsolicited } => return Ok((false, unsolicited)),
                    Early::Closed => break,
                }
            }
        }
        loop {
            if let Some(done) = self.feed(clock)? {
                return Ok(done);
            }
            let now = clock.now_ns();
            let end = deadline();
            if now >= end {
                return Err(fault(ErrorKind::Timeout));
            }
            let Some(stream) = self.stream.as_mut() else {
                return Err(fault(ErrorKind::Reset));
            };
            let wait = Duration::from_nanos((end - now).max(1_000)).min(SLICE);
            if self.read_timeout != Some(wait) {
                if stream.set_read_timeout(Some(wait)).is_err() {
                    return Err(fault(ErrorKind::Reset));
                }
                self.read_timeout = Some(wait);
            }
            // Shortly after the send, poll instead of blocking: a fast
            // response is stamped when it arrives, not when this thread
            // has been woken.
            let lingering = now < self.linger_until_ns;
            match self.fill(!lingering) {
                Err(e) if lingering && e.kind() == io::ErrorKind::WouldBlock => {
                    std::hint::spin_loop();
                }
                Ok(0) => {
                    // EOF: a read-until-close body ends here; anything else was cut.
                    self.exchange
                        .handle_eof(clock.now_ns(), &mut self.gaps)
                        .map_err(fault)?;
                    return Ok((false, false));
                }
                Ok(n) => {
                    traffic.received(clock.now_ns(), n);
                    self.end += n;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // A slice ended: look at the deadline again.
                Err(e) if io_kind(&e) == ErrorKind::Timeout => {}
                Err(e) => return Err(fault(self.exchange.handle_fault(io_kind(&e)))),
            }
        }
    }

    /// Hands every buffered byte to the exchange: `Some((keep_alive,
    /// unsolicited))` once the response is complete, `None` when it needs
    /// more (what was not consumed is kept at the front of the buffer).
    fn feed(&mut self, clock: &Clock) -> Result<Option<(bool, bool)>, Finish<'static>> {
        let input = &self.buf[self.start..self.end];
        match self
            .exchange
            .handle_read(clock.now_ns(), input, &mut self.gaps)?
        {
            Feed::Complete {
                consumed,
                keep_alive,
                unsolicited,
            } => {
                self.start += consumed;
                return Ok(Some((keep_alive, unsolicited)));
            }
            Feed::NeedMore { consumed } => self.start += consumed,
        }
        compact(&mut self.buf, &mut self.start, &mut self.end).map_err(Finish::Error)?;
        Ok(None)
    }

    /// While the send is blocked: reads, without blocking, what the server
    /// sent so far and hands it to the exchange.
    fn read_early(&mut self, clock: &Clock, traffic: &Traffic) -> Result<Early, Finish<'static>> {
        if self.stream.is_none() {
            return Ok(Early::Closed);
        }
        match self.fill(false) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(Early::Nothing),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(Early::Nothing),
            // The close or the error is met again by the read that follows.
            Ok(0) | Err(_) => Ok(Early::Closed),
            Ok(n) => {
                traffic.received(clock.now_ns(), n);
                self.end += n;
                Ok(match self.feed(clock)? {
                    Some((_, unsolicited)) => Early::Complete { unsolicited },
                    None => Early::Nothing,
                })
            }
        }
    }
}

/// What [`Conn::read_early`] found while a send was blocked.
enum Early {
    /// No complete response: keep sending.
    Nothing,
    /// The response is complete.
    Complete { unsolicited: bool },
    /// The server closed the connection, or it failed: stop sending.
    Closed,
}

fn idle_health(idle: Idle) -> Health {
    match idle {
        Idle::Closed => Health::IdleClosed,
        Idle::Unsolicited => Health::Unsolicited,
    }
}

/// Classifies an I/O error of an established connection (core's rule).
pub(crate) fn io_kind(e: &io::Error) -> ErrorKind {
    ErrorKind::of_io(e)
}
