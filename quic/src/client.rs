//! [`H3Client`]: one HTTP/3 client connection over `quinn-proto`,
//! sans-IO. The engine owns the socket and the clock: it feeds datagrams
//! ([`H3Client::datagram`]), sends what [`H3Client::poll_transmit`] gives,
//! fires timers ([`H3Client::poll_timeout`], [`H3Client::handle_timeout`]),
//! starts requests ([`H3Client::start`]) while [`H3Client::free`] allows,
//! times them out ([`H3Client::expire`]) and books each stream's end
//! ([`H3Client::poll_end`]). Every HTTP/3 rule is here, once for every
//! engine: the request frames, the responses, the server's control and
//! QPACK streams ([`Peer`]), GOAWAY (stop opening, retry the refused
//! requests once elsewhere, close when drained), connection errors closed
//! with their code, the server's stream limit, 0-RTT (requests started
//! before the handshake completes when a session ticket allows it; sent
//! again in 1-RTT when the server rejects them, [`H3Client::zero_rtt`]).

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use quinn_proto::{
    Connection, ConnectionError, ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig,
    Event, ReadError, StreamEvent, StreamId, VarInt,
};

use metronome_core::engine::ZeroRtt;
use metronome_core::exchange::Finish;
use metronome_core::flight::{End, FlightJob, How};
use metronome_core::h3::frame::encode_control_stream_start;
use metronome_core::h3::qpack::Decoder;
use metronome_core::h3::{varint, ErrorCode, H3Error};
use metronome_core::measure::{ErrorKind, FramingCause};
use metronome_core::plan::Protocol;

use crate::config::{describe, handshake_error, Config};
use crate::control::{News, Peer, UniStream};
use crate::flight::{Flight, SECTION};

/// A UDP datagram at most (what a receive buffer needs).
pub const DATAGRAM: usize = 64 * 1024;

/// The most section size (RFC 9114 section 4.2.2) one byte of an encoded
/// field section can stand for: a one-byte indexed line of the largest
/// static entry (name and value under 80 bytes, checked by a test) and
/// its 32. A literal's byte stands for less (Huffman: 8 / 5 at most).
const EXPANSION: usize = 80 + 32;

/// Transport parameter initial_max_streams_bidi (RFC 9000 section 18.2).
const INITIAL_MAX_STREAMS_BIDI: u64 = 0x08;

/// Where a connection is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// The QUIC handshake is under way.
    Handshaking,
    /// Requests may be started (while [`H3Client::free`] allows).
    Live,
    /// The server sent GOAWAY: no new request; the ones below its ID
    /// finish, then the connection closes itself.
    GoingAway,
    /// Closed: by the server, a timeout, a protocol error
    /// ([`H3Client::lost`] says which), or cleanly once drained (no
    /// [`Lost`]). Open a new connection.
    Closed,
}

/// Why a connection was lost during the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lost {
    /// One line for the report's warnings.
    pub text: String,
    /// How its streams ended.
    pub kind: ErrorKind,
}

/// A request stream's bytes as handed to [`H3Client::start`].
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// The QPACK-encoded field section (core's `h3::request::from_http1`).
    pub block: &'a [u8],
    /// The body (one DATA frame), empty for none.
    pub body: &'a [u8],
}

/// Why [`H3Client::start`] did not start a request (the job comes back).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused<J> {
    /// No stream now (none free, the server's limit, going away, closed):
    /// the job waits for another stream or connection.
    NoStream(J),
    /// The request's field section is larger than the server's
    /// SETTINGS_MAX_FIELD_SECTION_SIZE: it cannot be sent on this
    /// connection, nor on another to the same server.
    TooLarge {
        /// The job.
        job: J,
        /// The server's limit.
        limit: u64,
    },
}

/// One HTTP/3 client connection (see the [module](self)).
pub struct H3Client<J> {
    endpoint: Endpoint,
    conn: Connection,
    handle: ConnectionHandle,
    remote: SocketAddr,
    protocol: Protocol,
    cap: usize,
    /// The plan's checks on the answers.
    checks: &'static [metronome_core::check::Check],
    flights: HashMap<StreamId, Box<Flight<J>>>,
    spare: Vec<Box<Flight<J>>>,
    ended: VecDeque<(Box<Flight<J>>, Option<How<'static>>)>,
    /// The flight last handed out by `poll_end`, recycled by the next call.
    current: Option<Box<Flight<J>>>,
    decoder: Box<Decoder<SECTION>>,
    peer: Peer,
    uni: HashMap<StreamId, UniStream>,
    connected: bool,
    /// The handshake failed: why.
    refused: Option<ConnectionError>,
    lost: Option<Lost>,
    closed: bool,
    /// QUIC refused a new stream (the server's MAX_STREAMS): none until
    /// it allows more.
    blocked: bool,
    server_streams: Option<u64>,
    /// Streams timed out by `expire` (kept: no allocation per call).
    late: Vec<StreamId>,
    /// The datagram buffer handed to quinn, reclaimed when it lets go.
    rx: BytesMut,
    /// A datagram the endpoint answers with (a stateless reset), to send.
    reply: Vec<u8>,
    /// The connection holds 0-RTT keys (a session ticket allowing early
    /// data): requests may start before the handshake completes.
    early: bool,
    /// What this connection did with 0-RTT.
    zero_rtt: ZeroRtt,
    /// Keep each response's body ([`H3Client::keep_bodies`]).
    keep: bool,
}

impl<J: FlightJob> H3Client<J> {
    /// Starts the handshake at `now`: drive it with
    /// [`poll_transmit`](Self::poll_transmit), [`datagram`](Self::datagram)
    /// and the timers until [`state`](Self::state) leaves
    /// [`State::Handshaking`] (or [`handshake_error`](Self::handshake_error)
    /// says why not). Once connected, the client's control stream opens
    /// with its SETTINGS (QPACK capacity 0, MAX_FIELD_SECTION_SIZE 16 384).
    ///
    /// With 0-RTT keys (the configuration's rustls `enable_early_data` and
    /// a session ticket from the server that allows early data),
    /// [`free`](Self::free) allows requests at once, in 0-RTT, within the
    /// stream limit the ticket remembers; see [`zero_rtt`](Self::zero_rtt).
    ///
    /// # Errors
    /// quinn refuses the connection (a server name it cannot use).
    pub fn connect(cfg: &Config, now: Instant) -> io::Result<Self> {
        let mut endpoint = Endpoint::new(Arc::new(EndpointConfig::default()), None, true, None);
        let (handle, conn) = endpoint
            .connect(now, cfg.quic.clone(), cfg.remote, &cfg.server_name)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        Ok(H3Client {
            endpoint,
            conn,
            handle,
            remote: cfg.remote,
            protocol: cfg.protocol,
            cap: cfg.cap,
            checks: cfg.checks,
            flights: HashMap::with_capacity(cfg.cap),
            spare: Vec::with_capacity(cfg.cap),
            ended: VecDeque::with_capacity(cfg.cap),
            current: None,
            decoder: Box::new(Decoder::new()),
            peer: Peer::new(),
            uni: HashMap::with_capacity(8),
            connected: false,
            refused: None,
            lost: None,
            closed: false,
            blocked: false,
            server_streams: None,
            late: Vec::with_capacity(cfg.cap),
            rx: BytesMut::with_capacity(DATAGRAM),
            reply: Vec::new(),
            early: false,
            zero_rtt: ZeroRtt::default(),
            keep: false,
        }
        .with_early())
    }

    /// Notes whether the connection may start in 0-RTT, and then the
    /// server's stream limit as its ticket remembers it.
    fn with_early(mut self) -> Self {
        self.early = self.conn.has_0rtt();
        if self.early {
            self.zero_rtt.attempted = 1;
            self.server_streams = initial_max_streams_bidi(&self.conn);
        }
        self
    }

    /// What this connection did with 0-RTT: attempted (it held a ticket
    /// allowing early data), accepted or rejected once the handshake
    /// completed (neither before), the requests it sent in 0-RTT and,
    /// rejected, those it sent again in 1-RTT. Add it to the run's counts
    /// when the connection is dropped.
    pub fn zero_rtt(&self) -> ZeroRtt {
        self.zero_rtt
    }

    /// Where the connection is.
    pub fn state(&self) -> State {
        if self.closed || self.refused.is_some() || self.lost.is_some() || self.conn.is_closed() {
            State::Closed
        } else if !self.connected {
            State::Handshaking
        } else if self.peer.goaway().is_some() {
            State::GoingAway
        } else {
            State::Live
        }
    }

    /// The handshake failed: the error as the TLS ones are counted (a
    /// [`metronome_core::engine::tls::TlsFailure`] inside).
    pub fn handshake_error(&self) -> Option<io::Error> {
        self.refused.as_ref().map(handshake_error)
    }

    /// Why the connection was lost during the run (after its handshake).
    pub fn lost(&self) -> Option<&Lost> {
        self.lost.as_ref()
    }

    /// The server's initial limit of concurrent request streams (its
    /// initial_max_streams_bidi), once connected.
    pub fn server_max_streams(&self) -> Option<u64> {
        self.server_streams
    }

    /// The server's SETTINGS_MAX_FIELD_SECTION_SIZE, once its SETTINGS
    /// arrived with one.
    pub fn max_field_section(&self) -> Option<u64> {
        self.peer.max_field_section()
    }

    /// Inter-token gaps (SSE) dropped beyond a stream's gap storage over
    /// this connection's life: add it to the run's count before dropping
    /// the connection.
    pub fn dropped_gaps(&self) -> u64 {
        let flights = self.flights.values().chain(self.spare.iter());
        flights
            .chain(self.ended.iter().map(|(f, _)| f))
            .chain(self.current.iter())
            .map(|f| f.ex.dropped_gaps())
            .sum()
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.flights.len()
    }

    /// Requests that may be started now: none unless live; else the
    /// stream cap, within the server's limit, less those in flight.
    pub fn free(&self) -> usize {
        let open = match self.state() {
            State::Live => true,
            State::Handshaking => self.early,
            State::GoingAway | State::Closed => false,
        };
        if self.blocked || !open {
            return 0;
        }
        let limit = self.server_streams.map_or(self.cap, |s| {
            self.cap.min(usize::try_from(s).unwrap_or(usize::MAX))
        });
        limit.saturating_sub(self.flights.len())
    }

    /// A datagram from the server, received at `now` (`stamp_ns` on the
    /// run's clock): fed to QUIC, and whatever it makes readable read.
    pub fn datagram(&mut self, now: Instant, stamp_ns: u64, data: &[u8]) {
        // Each datagram takes a slice of a 64 KiB buffer, reclaimed once
        // quinn let go of every slice: a new buffer only when it is spent
        // while quinn still holds one (stream data not yet read).
        self.rx.clear();
        if self.rx.capacity() < data.len() {
            self.rx.reserve(DATAGRAM.max(data.len()));
        }
        self.rx.extend_from_slice(data);
        let datagram = self.rx.split();
        self.reply.clear();
        match self
            .endpoint
            .handle(now, self.remote, None, None, datagram, &mut self.reply)
        {
            Some(DatagramEvent::ConnectionEvent(h, ev)) if h == self.handle => {
                self.conn.handle_event(ev);
            }
            Some(DatagramEvent::Response(t)) => self.reply.truncate(t.size),
            _ => self.reply.clear(),
        }
        self.process(now, stamp_ns);
    }

    /// When [`handle_timeout`](Self::handle_timeout) is next due.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        self.conn.poll_timeout()
    }

    /// Fires QUIC's timers due at `now` (`stamp_ns` on the run's clock).
    pub fn handle_timeout(&mut self, now: Instant, stamp_ns: u64) {
        if self.conn.poll_timeout().is_some_and(|t| t <= now) {
            self.conn.handle_timeout(now);
        }
        self.process(now, stamp_ns);
    }

    /// The next datagrams to send at `now`, into `buf` (cleared first):
    /// `Some((len, segment))`, `len` bytes of datagrams `segment` bytes
    /// each (the last may be shorter; GSO), at most `max_datagrams` of
    /// them; `None`: nothing to send now.
    pub fn poll_transmit(
        &mut self,
        now: Instant,
        max_datagrams: usize,
        buf: &mut Vec<u8>,
    ) -> Option<(usize, usize)> {
        buf.clear();
        if !self.reply.is_empty() {
            buf.extend_from_slice(&self.reply);
            self.reply.clear();
            return Some((buf.len(), buf.len()));
        }
        let t = self.conn.poll_transmit(now, max_datagrams.max(1), buf);
        while let Some(ev) = self.conn.poll_endpoint_events() {
            if let Some(ce) = self.endpoint.handle_event(self.handle, ev) {
                self.conn.handle_event(ce);
            }
        }
        t.map(|t| (t.size, t.segment_size.unwrap_or(t.size)))
    }

    /// Starts `job` on a new stream: HEADERS (and DATA), FIN. `sent_ns`:
    /// now on the run's clock, its exchange's send time.
    ///
    /// # Errors
    /// [`Refused::NoStream`]: no stream now; [`Refused::TooLarge`]: the
    /// request's section is above the server's limit.
    pub fn start(&mut self, job: J, req: Request<'_>, sent_ns: u64) -> Result<(), Refused<J>> {
        if self.free() == 0 {
            return Err(Refused::NoStream(job));
        }
        if let Some(limit) = self.peer.max_field_section() {
            if self.too_large(req.block, limit) {
                return Err(Refused::TooLarge { job, limit });
            }
        }
        let Some(id) = self.conn.streams().open(Dir::Bi) else {
            self.blocked = true;
            return Err(Refused::NoStream(job));
        };
        let mut f = Flight::take(
            &mut self.spare,
            self.protocol,
            job,
            job.intended_ns(),
            sent_ns,
        );
        f.ex.set_check(metronome_core::plan::check_in(self.checks, job.request()));
        f.frame(req.block, req.body);
        f.body = self.keep.then(Vec::new);
        // A stream that cannot be written is ended by its reset or the
        // connection's end.
        let _ = push(&mut self.conn, id, &mut f);
        self.flights.insert(id, f);
        if !self.connected {
            self.zero_rtt.requests += 1;
        }
        Ok(())
    }

    /// The request section `block` is larger than the server's `limit`
    /// (RFC 9114 section 4.2.2). Decoded only when its length times the
    /// most one byte can stand for ([`EXPANSION`]) is above the limit, so
    /// only a small limit costs a decoding per request.
    fn too_large(&mut self, block: &[u8], limit: u64) -> bool {
        let bound = block.len().saturating_mul(EXPANSION);
        if u64::try_from(bound).is_ok_and(|b| b <= limit) {
            return false;
        }
        match self.decoder.section_size(block) {
            Ok(size) => u64::try_from(size).map_or(true, |s| s > limit),
            // Above SECTION: above the limit when the limit is below it;
            // else unknown, and sent (the limit is advisory, section 4.2.2).
            Err(H3Error::FieldSectionTooLarge) => limit < SECTION as u64,
            Err(_) => false,
        }
    }

    /// Ends the streams due at `now_ns`: unanswered `timeout_ns` after
    /// their send, or at the run's `hard_end_ns`; each is cancelled
    /// (STOP_SENDING and RESET_STREAM with H3_REQUEST_CANCELLED) and fails
    /// as a timeout. Returns the earliest deadline left (`u64::MAX`: none).
    pub fn expire(&mut self, now_ns: u64, timeout_ns: u64, hard_end_ns: u64) -> u64 {
        let mut next = u64::MAX;
        self.late.clear();
        for (id, f) in &self.flights {
            let due = f.sent_ns.saturating_add(timeout_ns).min(hard_end_ns);
            if now_ns >= due {
                self.late.push(*id);
            } else {
                next = next.min(due);
            }
        }
        for i in 0..self.late.len() {
            let id = self.late[i];
            self.end_stream(
                id,
                ErrorCode::REQUEST_CANCELLED,
                Some(How::Failed(Finish::Error(ErrorKind::Timeout))),
            );
        }
        next
    }

    /// Keeps the body of every response from now on, for
    /// [`H3Client::body`]: a one-off request before a run (the model
    /// discovery of `--openai`), never a run's.
    pub fn keep_bodies(&mut self) {
        self.keep = true;
    }

    /// The body of the response whose end [`H3Client::poll_end`] gave
    /// last, when bodies are kept (else empty).
    pub fn body(&self) -> &[u8] {
        self.current
            .as_ref()
            .and_then(|f| f.body.as_deref())
            .unwrap_or(&[])
    }

    /// The next stream's end, if any (the previous one's storage is
    /// recycled by this call).
    pub fn poll_end(&mut self) -> Option<End<'_, J>> {
        if let Some(f) = self.current.take() {
            self.spare.push(f);
        }
        let (f, ended) = self.ended.pop_front()?;
        let f = self.current.insert(f);
        let how = ended.unwrap_or_else(|| How::Answered(f.ex.finish(&f.gaps)));
        Some(End {
            job: f.job,
            sent_ns: f.sent_ns,
            gap: None,
            how,
            head: f.ex.head(),
        })
    }

    /// Closes the connection at `now` with H3_NO_ERROR (the engine is
    /// done with it); streams still in flight end as the connection's end.
    pub fn close(&mut self, now: Instant) {
        if !self.conn.is_closed() {
            self.conn
                .close(now, code(ErrorCode::NO_ERROR), bytes::Bytes::new());
        }
        self.closed = true;
        self.end_all(Finish::Error(ErrorKind::Reset));
    }

    /// Acts on every event QUIC has.
    fn process(&mut self, now: Instant, stamp_ns: u64) {
        while let Some(ev) = self.conn.poll() {
            match ev {
                Event::Connected => self.on_connected(now),
                Event::ConnectionLost { reason } => self.on_lost(reason),
                Event::Stream(StreamEvent::Readable { id }) => self.read(now, id, stamp_ns),
                Event::Stream(StreamEvent::Writable { id }) => {
                    if let Some(f) = self.flights.get_mut(&id) {
                        let _ = push(&mut self.conn, id, f);
                    }
                }
                Event::Stream(StreamEvent::Opened { dir }) => {
                    while let Some(id) = self.conn.streams().accept(dir) {
                        if dir == Dir::Uni {
                            self.uni.insert(id, UniStream::new());
                        }
                        self.read(now, id, stamp_ns);
                    }
                }
                Event::Stream(StreamEvent::Available { dir: Dir::Bi }) => self.blocked = false,
                _ => {}
            }
        }
        // A server that went away is left once its last answer is in.
        if self.peer.goaway().is_some() && self.flights.is_empty() && !self.closed {
            self.close(now);
        }
    }

    /// The handshake is done: the control stream opens with the SETTINGS;
    /// the server's stream limit is read from its transport parameters.
    fn on_connected(&mut self, now: Instant) {
        self.connected = true;
        self.blocked = false;
        self.server_streams = initial_max_streams_bidi(&self.conn);
        if self.early {
            if self.conn.accepted_0rtt() {
                self.zero_rtt.accepted = 1;
            } else {
                self.zero_rtt.rejected = 1;
                self.resend_rejected();
            }
        }
        let Some(id) = self.conn.streams().open(Dir::Uni) else {
            self.fail(
                now,
                "the server allows no unidirectional stream",
                H3Error::StreamCreation,
            );
            return;
        };
        let mut control = [0u8; 64];
        let n = encode_control_stream_start(SECTION as u64, &mut control).unwrap_or(0);
        let _ = self.conn.send_stream(id).write(&control[..n]);
    }

    /// The server rejected 0-RTT: quinn forgot every stream opened in it
    /// (their IDs are used again from 0), so each request still in flight
    /// is written again, whole, on a new stream (its send time kept: the
    /// rejection is part of its latency); one the server's limit leaves
    /// no stream for is retried once elsewhere.
    fn resend_rejected(&mut self) {
        let early: Vec<_> = self.flights.drain().map(|(_, f)| f).collect();
        for mut f in early {
            f.at = 0;
            match self.conn.streams().open(Dir::Bi) {
                Some(id) => {
                    let _ = push(&mut self.conn, id, &mut f);
                    self.flights.insert(id, f);
                    self.zero_rtt.resent += 1;
                }
                None => {
                    self.blocked = true;
                    let how = How::refused(&f.job);
                    self.ended.push_back((f, Some(how)));
                }
            }
        }
    }

    /// QUIC lost the connection: in the handshake, its refusal (and the
    /// requests started in 0-RTT end as it did); after, its streams end
    /// as the connection did.
    fn on_lost(&mut self, reason: ConnectionError) {
        if !self.connected {
            if self.closed {
                // Closed by the engine in its handshake: no refusal.
                return;
            }
            if !self.flights.is_empty() && self.lost.is_none() {
                let kind = if matches!(reason, ConnectionError::TimedOut) {
                    ErrorKind::Timeout
                } else {
                    ErrorKind::Reset
                };
                self.lost = Some(Lost {
                    text: format!("HTTP/3: {}", handshake_error(&reason)),
                    kind,
                });
                self.end_all(Finish::Error(kind));
            }
            self.refused = Some(reason);
            return;
        }
        if self.lost.is_some() || self.closed {
            return;
        }
        let kind = if matches!(reason, ConnectionError::TimedOut) {
            ErrorKind::Timeout
        } else {
            ErrorKind::Reset
        };
        self.lost = Some(Lost {
            text: describe(&reason),
            kind,
        });
        if kind == ErrorKind::Timeout {
            self.end_all(Finish::Error(ErrorKind::Timeout));
        } else {
            self.end_all_reset();
        }
    }

    /// The server broke HTTP/3 on its control or QPACK streams: the
    /// connection closes with the error's code; its requests fail as bad
    /// framing (`http3_protocol`).
    fn fail(&mut self, now: Instant, what: &str, e: H3Error) {
        if self.lost.is_some() || self.closed {
            return;
        }
        let c = e.code();
        self.conn.close(now, code(c), bytes::Bytes::new());
        self.lost = Some(Lost {
            text: format!(
                "HTTP/3: {what} ({e}): the connection was closed with {c} ({:#x})",
                c.0
            ),
            kind: ErrorKind::BadFraming,
        });
        self.end_all(Finish::Framing(FramingCause::Http3Protocol));
    }

    /// Every stream in flight ends as `finish`.
    fn end_all(&mut self, finish: Finish<'static>) {
        for (_, f) in self.flights.drain() {
            self.ended.push_back((f, Some(How::Failed(finish))));
        }
    }

    /// Every stream in flight ends as reset (after an SSE head: cut).
    fn end_all_reset(&mut self) {
        for (_, f) in self.flights.drain() {
            let kind = f.ex.on_reset();
            self.ended
                .push_back((f, Some(How::Failed(Finish::Error(kind)))));
        }
    }

    /// Ends request stream `id` as `how`, cancelling both its directions
    /// with `c` (nothing more is read or written on it).
    fn end_stream(&mut self, id: StreamId, c: ErrorCode, how: Option<How<'static>>) {
        if let Some(f) = self.flights.remove(&id) {
            let _ = self.conn.recv_stream(id).stop(code(c));
            let _ = self.conn.send_stream(id).reset(code(c));
            self.ended.push_back((f, how));
        }
    }

    /// Reads what stream `id` has: a response into its flight, the
    /// server's unidirectional streams into [`Peer`].
    fn read(&mut self, now: Instant, id: StreamId, stamp_ns: u64) {
        if self.flights.contains_key(&id) {
            self.read_response(id, stamp_ns);
        } else if self.uni.contains_key(&id) {
            self.read_uni(now, id);
        }
    }

    /// A response stream's bytes, fed to its flight; its end, reset or
    /// malformed response ends it.
    fn read_response(&mut self, id: StreamId, now: u64) {
        let Some(f) = self.flights.get_mut(&id) else {
            return;
        };
        let mut rs = self.conn.recv_stream(id);
        let Ok(mut chunks) = rs.read(true) else {
            return;
        };
        let mut end: Option<Result<(), (ErrorCode, Option<How<'static>>)>> = None;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => {
                    if end.is_none() {
                        if let Err(e) = f.feed(&chunk.bytes, &mut self.decoder, now) {
                            end = Some(Err((
                                e.code(),
                                Some(How::Failed(Finish::Framing(FramingCause::Http3Protocol))),
                            )));
                        }
                    }
                }
                Ok(None) => {
                    end.get_or_insert(Ok(()));
                    break;
                }
                Err(ReadError::Blocked) => break,
                Err(ReadError::Reset(c)) => {
                    // H3_REQUEST_REJECTED before any answer: not processed.
                    let rejected = c.into_inner() == ErrorCode::REQUEST_REJECTED.0;
                    let how = if rejected && !f.ex.has_head() {
                        Some(How::refused(&f.job))
                    } else {
                        Some(How::Failed(Finish::Error(f.ex.on_reset())))
                    };
                    end = Some(Err((ErrorCode::REQUEST_CANCELLED, how)));
                    break;
                }
            }
        }
        let _ = chunks.finalize();
        match end {
            None => {}
            Some(Ok(())) => {
                if f.reader.finish().is_err() {
                    let c = ErrorCode::FRAME_ERROR;
                    self.end_stream(
                        id,
                        c,
                        Some(How::Failed(Finish::Framing(FramingCause::Http3Protocol))),
                    );
                    return;
                }
                let Flight { ex, gaps, .. } = &mut **f;
                ex.on_end(now, gaps);
                if let Some(f) = self.flights.remove(&id) {
                    self.ended.push_back((f, None));
                }
            }
            Some(Err((c, how))) => self.end_stream(id, c, how),
        }
    }

    /// One of the server's unidirectional streams: fed to [`Peer`]; what
    /// it says acted on, a violation closes the connection with its code.
    fn read_uni(&mut self, now: Instant, id: StreamId) {
        let Some(s) = self.uni.get_mut(&id) else {
            return;
        };
        let mut rs = self.conn.recv_stream(id);
        let Ok(mut chunks) = rs.read(true) else {
            return;
        };
        let mut news = News::default();
        let mut failed: Option<H3Error> = None;
        let mut ended = false;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => {
                    if failed.is_none() {
                        match self.peer.feed(s, &chunk.bytes) {
                            Ok(n) => {
                                news.settings |= n.settings;
                                news.goaway = n.goaway.or(news.goaway);
                            }
                            Err(e) => failed = Some(e),
                        }
                    }
                }
                Ok(None) | Err(ReadError::Reset(_)) => {
                    if let Err(e) = self.peer.end(s) {
                        failed.get_or_insert(e);
                    }
                    ended = true;
                    break;
                }
                Err(ReadError::Blocked) => break,
            }
        }
        let _ = chunks.finalize();
        if let Some(e) = failed {
            self.fail(
                now,
                "the server broke the protocol on its control or QPACK streams",
                e,
            );
            return;
        }
        if ended {
            // A discarded (reserved, unknown) stream that ended.
            self.uni.remove(&id);
        }
        if let Some(last) = news.goaway {
            self.on_goaway(last);
        }
    }

    /// A GOAWAY with stream ID `last`: the requests on streams at or above
    /// it were not processed: each is retried once on another connection
    /// (a retried one fails as reset); the ones below finish here.
    fn on_goaway(&mut self, last: u64) {
        self.late.clear();
        self.late.extend(
            self.flights
                .keys()
                .filter(|id| VarInt::from(**id).into_inner() >= last),
        );
        for i in 0..self.late.len() {
            let id = self.late[i];
            if let Some(f) = self.flights.get(&id) {
                let how = How::refused(&f.job);
                self.end_stream(id, ErrorCode::REQUEST_CANCELLED, Some(how));
            }
        }
    }
}

/// Writes what is left of `f`'s bytes on stream `id`, and its FIN once all
/// are written. `Err`: the stream cannot be written (stopped, closed).
fn push<J>(conn: &mut Connection, id: StreamId, f: &mut Flight<J>) -> Result<(), ()> {
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

/// An HTTP/3 error code as QUIC's.
fn code(c: ErrorCode) -> VarInt {
    VarInt::from_u64(c.0).unwrap_or(VarInt::from_u32(0x102))
}

/// The server's initial_max_streams_bidi from its transport parameters
/// (quinn keeps the value to itself; its encoding is public).
fn initial_max_streams_bidi(conn: &Connection) -> Option<u64> {
    let params = conn.crypto_session().transport_parameters().ok()??;
    let mut wire = Vec::new();
    params.write(&mut wire);
    let mut rest = &wire[..];
    while !rest.is_empty() {
        let (id, n) = varint::decode(rest)?;
        let (len, m) = varint::decode(&rest[n..])?;
        let end = usize::try_from(len).ok()?.checked_add(n + m)?;
        let value = rest.get(n + m..end)?;
        if id == INITIAL_MAX_STREAMS_BIDI {
            return varint::decode(value).map(|(v, _)| v);
        }
        rest = rest.get(end..)?;
    }
    Some(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use metronome_core::h3::qpack::STATIC_TABLE;

    #[test]
    fn expansion_bounds_every_static_entry() {
        let most = STATIC_TABLE.iter().map(|(n, v)| n.len() + v.len()).max();
        assert!(most.is_some_and(|m| m + 32 <= EXPANSION), "{most:?}");
    }
}
