//! [`Connection`]: the client side of one HTTP/2 connection as a sans-IO
//! state machine (RFC 9113), in the shape of the HTTP/1.1
//! [`Exchange`](crate::exchange::Exchange): bytes in, events out, every
//! buffer owned by the caller or fixed inside the value.
//!
//! The engine's side:
//! - [`Connection::poll_transmit`] writes what the connection owes the
//!   server: first the preface, our SETTINGS and the connection window;
//!   then SETTINGS and PING acknowledgements, RST_STREAMs, WINDOW_UPDATEs
//!   and, after a connection error, a GOAWAY. Call it after every read.
//! - [`Connection::start_request`] opens a stream with a pre-encoded
//!   header block ([`encode_request`](super::hpack::encode_request), once
//!   per request shape, before the clock starts); engines call
//!   [`Connection::start_planned`] with a plan's request, which first keeps
//!   the server's `SETTINGS_MAX_HEADER_LIST_SIZE` ([`SendError::TooLarge`]);
//!   [`Connection::send_data`]
//!   sends a body as far as the server's windows allow and says when they
//!   blocked it ([`Blocked`]).
//! - [`Connection::handle_read`] takes the unconsumed front of the read
//!   buffer, handles **one** frame and returns how many bytes it took and
//!   at most one [`Event`]; `(0, None)` means "read more". The buffer must
//!   hold `9 + 16384` bytes (the maximum frame size this client advertises).
//! - After [`Event::GoAway`], [`Connection::take_refused`] hands back each
//!   stream the server will not process: retry it once on a fresh
//!   connection, like a request that met an idle close.
//!
//! Flow control: the client advertises the windows of its [`Config`]
//! (by default the maximum, 2^31 - 1, for every stream and for the
//! connection) and returns what it received with a WINDOW_UPDATE once half
//! a window is used, so a response never waits on the client. The
//! server's windows limit the bodies the client sends; a send they cut
//! short says so ([`Sent::blocked`]) and is counted
//! ([`Connection::blocked_sends`]); [`Event::Unblocked`] tells when to try
//! again.

pub use super::error::{H2Error, SendError, Violation};
use super::frame::{
    self, flag, kind, read_frame, setting, write_header, ErrorCode, Frame, DEFAULT_MAX_FRAME_SIZE,
    HEADER_LEN,
};
use super::hpack::{Decoder, HpackError};
use crate::head::ResponseFields;

mod recv;

/// The client connection preface (RFC 9113 section 3.4).
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The largest flow-control window (RFC 9113 section 6.9.1).
pub const MAX_WINDOW: u32 = (1 << 31) - 1;

/// The initial window of every stream and of the connection before SETTINGS.
pub const DEFAULT_WINDOW: u32 = 65_535;

/// PING acknowledgements that may wait for [`Connection::poll_transmit`];
/// a server that sends more PINGs than that between two calls is flooding
/// ([`H2Error::PingFlood`]).
pub const PONG_CAP: usize = 8;

/// What the client advertises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// `SETTINGS_INITIAL_WINDOW_SIZE`: each stream's receive window.
    pub stream_window: u32,
    /// The connection's receive window (raised from 65 535 with a
    /// WINDOW_UPDATE right after the preface).
    pub connection_window: u32,
    /// `SETTINGS_MAX_HEADER_LIST_SIZE`, when set.
    pub max_header_list: Option<u32>,
}

impl Config {
    /// Windows at their maximum: a response never waits on the client.
    pub const DEFAULT: Config = Config {
        stream_window: MAX_WINDOW,
        connection_window: MAX_WINDOW,
        max_header_list: None,
    };
}

impl Default for Config {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What one frame from the server meant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The server's first SETTINGS arrived: the connection is usable and
    /// [`Connection::max_streams`] is known.
    Ready,
    /// A final response head (1xx heads are skipped).
    Headers {
        /// Stream.
        stream: u32,
        /// `:status`.
        status: u16,
        /// `content-type: text/event-stream`.
        event_stream: bool,
        /// `grpc-status`, in a trailers-only gRPC response.
        grpc_status: Option<u32>,
        /// The stream ended with this head (no body).
        end_stream: bool,
    },
    /// Body bytes.
    Data {
        /// Stream.
        stream: u32,
        /// Bytes of data (padding excluded).
        len: usize,
        /// The stream ended with this frame.
        end_stream: bool,
    },
    /// Trailers: the stream ended.
    Trailers {
        /// Stream.
        stream: u32,
        /// `grpc-status`, when present.
        grpc_status: Option<u32>,
    },
    /// The stream was reset and is gone.
    StreamReset {
        /// Stream.
        stream: u32,
        /// Why.
        code: ErrorCode,
        /// The server reset it (`true`), or the client did on a malformed
        /// response (`false`, and a RST_STREAM is on its way). A server's
        /// `REFUSED_STREAM` means the request was not processed: safe to
        /// retry.
        remote: bool,
    },
    /// The server is going away: streams up to `last_stream` may complete;
    /// the `refused` streams above it are handed back by
    /// [`Connection::take_refused`]. No new stream may start.
    GoAway {
        /// The last stream the server may process.
        last_stream: u32,
        /// Why.
        code: ErrorCode,
        /// Open streams above `last_stream`.
        refused: usize,
    },
    /// The reply to [`Connection::ping`].
    Pong {
        /// The `now_ns` given to `ping`.
        sent_ns: u64,
    },
    /// A window a send was blocked on grew: try the blocked bodies again.
    Unblocked,
}

/// Which window stopped a body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blocked {
    /// The stream's send window.
    Stream,
    /// The connection's send window.
    Connection,
}

/// What [`Connection::send_data`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sent {
    /// Bytes of the data sent; the rest waits.
    pub consumed: usize,
    /// Bytes written into the output.
    pub written: usize,
    /// The server's window stopped the send (not the output buffer).
    pub blocked: Option<Blocked>,
}

/// Where a stream is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// The slot is free.
    Free,
    /// Waiting for the final response head.
    AwaitHead,
    /// The head arrived: DATA or trailers next.
    Body,
    /// Reset by the client: a RST_STREAM with this code is owed.
    Reset(ErrorCode),
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    id: u32,
    phase: Phase,
    /// The request side is complete (END_STREAM sent).
    local_done: bool,
    send_window: i64,
    recv_window: i64,
    /// Received and not yet returned with a WINDOW_UPDATE.
    recv_unacked: u32,
    blocked: bool,
}

const FREE: Slot = Slot {
    id: 0,
    phase: Phase::Free,
    local_done: false,
    send_window: 0,
    recv_window: 0,
    recv_unacked: 0,
    blocked: false,
};

/// The facts of a header block the client needs.
#[derive(Clone, Copy, Debug, Default)]
struct Head {
    status: Option<u16>,
    event_stream: bool,
    grpc_status: Option<u32>,
    /// Malformed: a bad or repeated `:status`, another pseudo-header, a
    /// pseudo-header after a regular one.
    malformed: bool,
    pseudo: bool,
    regular: bool,
    /// Bit `i`: a field `watched[i]`'s header check accepts.
    fields: u64,
}

/// A header block being received over CONTINUATION frames.
#[derive(Clone, Copy, Debug)]
struct Continuing {
    stream: u32,
    end_stream: bool,
    len: usize,
}

/// The client side of one HTTP/2 connection; see the [module docs](self).
///
/// Storage is fixed and inside the value: `S` stream slots (the most
/// streams open at once, whatever the server allows), an HPACK decoder of
/// `T` bytes of table plus `T` of scratch (`T` is the
/// `SETTINGS_HEADER_TABLE_SIZE` advertised), and `B` bytes to reassemble a
/// header block split over CONTINUATION frames. Nothing allocates, ever.
///
/// # Example
/// ```
/// use metronome_core::h2::conn::{Connection, Event, PREFACE};
/// use metronome_core::h2::hpack::encode_request;
///
/// let mut conn = Connection::<8>::new(Default::default());
/// let mut out = [0u8; 256];
/// let n = conn.poll_transmit(&mut out);
/// assert!(out[..n].starts_with(PREFACE));
/// // The server's SETTINGS (empty): the connection is ready.
/// assert_eq!(conn.handle_read(&[0, 0, 0, 4, 0, 0, 0, 0, 0]), Ok((9, Some(Event::Ready))));
/// let mut block = [0u8; 64];
/// let len = encode_request(b"GET", b"http", b"example.com", b"/", &[], false, &mut block).unwrap();
/// let (stream, written) = conn.start_request(&block[..len], true, &mut out).unwrap();
/// assert_eq!((stream, written), (1, 9 + len));
/// // HEADERS :status 200 (static index 8) with END_STREAM.
/// let reply = [0, 0, 1, 1, 5, 0, 0, 0, 1, 0x88];
/// assert_eq!(
///     conn.handle_read(&reply),
///     Ok((10, Some(Event::Headers { stream: 1, status: 200, event_stream: false, grpc_status: None, end_stream: true })))
/// );
/// assert_eq!(conn.open_streams(), 0);
/// ```
#[derive(Clone, Debug)]
pub struct Connection<const S: usize, const T: usize = 4096, const B: usize = 4096> {
    config: Config,
    decoder: Decoder<T>,
    block: [u8; B],
    continuing: Option<Continuing>,
    slots: [Slot; S],
    open: usize,
    next_id: u32,
    started: bool,
    ready: bool,
    settings_acked: bool,
    acks_owed: u32,
    pongs: [[u8; 8]; PONG_CAP],
    pongs_owed: usize,
    failed: Option<H2Error>,
    goaway_sent: bool,
    goaway: Option<u32>,
    peer_max_streams: u32,
    peer_window: i64,
    peer_max_frame: u32,
    /// The server's `SETTINGS_MAX_HEADER_LIST_SIZE` (`u32::MAX`: not said).
    peer_max_list: u32,
    send_window: i64,
    conn_blocked: bool,
    recv_window: i64,
    recv_unacked: u32,
    blocked_sends: u64,
    /// Where the payload of the last [`Event::Data`] starts in the input
    /// of the [`handle_read`](Self::handle_read) that returned it.
    data_at: usize,
    /// Checks whose header check each head is scanned for
    /// ([`Connection::watch_fields`]).
    watched: &'static [crate::check::Check],
    /// Bit `i`: the last head decoded held a field `watched[i]`'s header
    /// check accepts.
    fields: u64,
}

impl<const S: usize, const T: usize, const B: usize> Connection<S, T, B> {
    /// Scans every response head (and trailers) for the fields the
    /// header checks of `checks` accept (the first 64):
    /// [`Connection::head_fields`] tells, after each head. The engines
    /// call it with the plan's checks before each request starts.
    pub fn watch_fields(&mut self, checks: &'static [crate::check::Check]) {
        self.watched = checks;
    }

    /// Bit `i`: the last head decoded held a field the header check of
    /// the `i`-th watched check accepts ([`Connection::watch_fields`]).
    pub fn head_fields(&self) -> u64 {
        self.fields
    }

    /// A connection not yet started: the first [`poll_transmit`](Self::poll_transmit)
    /// writes the preface.
    pub fn new(config: Config) -> Self {
        Self {
            config,
            decoder: Decoder::new(),
            block: [0; B],
            continuing: None,
            slots: [FREE; S],
            open: 0,
            next_id: 1,
            started: false,
            ready: false,
            settings_acked: false,
            acks_owed: 0,
            pongs: [[0; 8]; PONG_CAP],
            pongs_owed: 0,
            failed: None,
            goaway_sent: false,
            goaway: None,
            peer_max_streams: u32::MAX,
            peer_window: i64::from(DEFAULT_WINDOW),
            peer_max_frame: DEFAULT_MAX_FRAME_SIZE,
            peer_max_list: u32::MAX,
            send_window: i64::from(DEFAULT_WINDOW),
            conn_blocked: false,
            recv_window: i64::from(DEFAULT_WINDOW),
            recv_unacked: 0,
            blocked_sends: 0,
            data_at: 0,
            watched: &[],
            fields: 0,
        }
    }

    /// The payload of the [`Event::Data`] the last
    /// [`handle_read`](Self::handle_read) returned, as a slice of the
    /// `input` given to it (`len` from the event): the body bytes of one
    /// stream, for its decoder (an SSE stream's events). Padding excluded.
    ///
    /// ```
    /// use metronome_core::h2::Connection;
    /// // Bytes as the server sent them are tested in tests/golden/h2/;
    /// // here: a slice of the input, never longer than it.
    /// let c: Connection<1> = Connection::new(Default::default());
    /// assert_eq!(c.data_of(b"abc", 0), b"");
    /// ```
    pub fn data_of<'i>(&self, input: &'i [u8], len: usize) -> &'i [u8] {
        let start = self.data_at.min(input.len());
        &input[start..(start + len).min(input.len())]
    }

    /// Streams open (requests in flight).
    pub const fn open_streams(&self) -> usize {
        self.open
    }

    /// The most streams that may be open at once: the server's
    /// `MAX_CONCURRENT_STREAMS` (unlimited until it says), at most `S`.
    pub fn max_streams(&self) -> usize {
        (self.peer_max_streams as usize).min(S)
    }

    /// The server's `SETTINGS_MAX_CONCURRENT_STREAMS`, as it said it
    /// (`None`: not said, unlimited).
    pub const fn server_max_streams(&self) -> Option<u32> {
        if self.peer_max_streams == u32::MAX {
            None
        } else {
            Some(self.peer_max_streams)
        }
    }

    /// The server's `SETTINGS_MAX_HEADER_LIST_SIZE`, as it said it
    /// (`None`: not said, unlimited).
    pub const fn server_max_header_list(&self) -> Option<u32> {
        if self.peer_max_list == u32::MAX {
            None
        } else {
            Some(self.peer_max_list)
        }
    }

    /// Whether [`start_request`](Self::start_request) would find a stream.
    pub fn can_start(&self) -> bool {
        self.started
            && self.failed.is_none()
            && self.goaway.is_none()
            && self.open < self.max_streams()
            && self.next_id <= MAX_WINDOW
    }

    /// The server's SETTINGS arrived.
    pub const fn is_ready(&self) -> bool {
        self.ready
    }

    /// The server acknowledged the client's SETTINGS.
    pub const fn settings_acked(&self) -> bool {
        self.settings_acked
    }

    /// The connection error, once one happened.
    pub const fn error(&self) -> Option<H2Error> {
        self.failed
    }

    /// Sends the server's windows cut short, over the connection's life.
    pub const fn blocked_sends(&self) -> u64 {
        self.blocked_sends
    }

    /// The server's last GOAWAY's last stream id.
    pub const fn goaway(&self) -> Option<u32> {
        self.goaway
    }

    /// The ids of the open streams, in slot order.
    pub fn streams(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots
            .iter()
            .filter(|s| matches!(s.phase, Phase::AwaitHead | Phase::Body))
            .map(|s| s.id)
    }

    /// After [`Event::GoAway`]: the next open stream the server will not
    /// process (its id is above the GOAWAY's last stream id), its slot
    /// freed. Retry its request once on a fresh connection. `None` when
    /// there is none left.
    pub fn take_refused(&mut self) -> Option<u32> {
        let last = self.goaway?;
        let slot = self
            .slots
            .iter_mut()
            .find(|s| s.id > last && matches!(s.phase, Phase::AwaitHead | Phase::Body))?;
        let id = slot.id;
        *slot = FREE;
        self.open -= 1;
        Some(id)
    }

    fn slot(&mut self, id: u32) -> Option<&mut Slot> {
        self.slots
            .iter_mut()
            .find(|s| s.id == id && s.phase != Phase::Free)
    }

    /// The slot of an open stream (waiting for its head or in its body):
    /// the ones [`open_streams`](Self::open_streams) counts.
    fn active(&mut self, id: u32) -> Option<&mut Slot> {
        self.slots
            .iter_mut()
            .find(|s| s.id == id && matches!(s.phase, Phase::AwaitHead | Phase::Body))
    }

    /// A stream id the client never opened (RFC 9113 section 5.1: idle).
    fn is_idle(&self, id: u32) -> bool {
        id % 2 == 0 || id >= self.next_id
    }

    /// Whether anything waits for [`poll_transmit`](Self::poll_transmit).
    pub fn wants_transmit(&self) -> bool {
        !self.started
            || self.acks_owed > 0
            || self.pongs_owed > 0
            || (self.failed.is_some() && !self.goaway_sent)
            || self.conn_update_due()
            || self
                .slots
                .iter()
                .any(|s| matches!(s.phase, Phase::Reset(_)) || self.stream_update_due(s))
    }

    /// The connection's receive window target: what [`Config`] asks, and
    /// never below the initial 65 535 (a window cannot shrink).
    fn conn_target(&self) -> u32 {
        self.config.connection_window.max(DEFAULT_WINDOW)
    }

    fn conn_update_due(&self) -> bool {
        self.recv_unacked > 0 && self.recv_window <= i64::from(self.conn_target() / 2)
    }

    fn stream_update_due(&self, s: &Slot) -> bool {
        s.phase == Phase::Body
            && s.recv_unacked > 0
            && s.recv_window <= i64::from(self.config.stream_window / 2)
    }

    /// Writes the frames the connection owes the server into `out`, as
    /// many as fit whole, and returns the bytes written; call again after
    /// flushing while [`wants_transmit`](Self::wants_transmit).
    pub fn poll_transmit(&mut self, out: &mut [u8]) -> usize {
        let mut n = 0;
        if !self.started {
            let mut settings = [0u8; 24];
            let mut k = 0;
            let mut put = |id: u16, v: u32| {
                settings[k..k + 2].copy_from_slice(&id.to_be_bytes());
                settings[k + 2..k + 6].copy_from_slice(&v.to_be_bytes());
                k += 6;
            };
            put(setting::ENABLE_PUSH, 0);
            put(setting::HEADER_TABLE_SIZE, T as u32);
            put(setting::INITIAL_WINDOW_SIZE, self.config.stream_window);
            if let Some(max) = self.config.max_header_list {
                put(setting::MAX_HEADER_LIST_SIZE, max);
            }
            let raise = self.conn_target() - DEFAULT_WINDOW;
            let need = PREFACE.len() + HEADER_LEN + k + if raise > 0 { HEADER_LEN + 4 } else { 0 };
            let Some(dst) = out.get_mut(..need) else {
                return 0;
            };
            dst[..24].copy_from_slice(PREFACE);
            let params =
                frame::SettingsParams::new(&settings[..k]).unwrap_or(frame::SettingsParams::EMPTY);
            let mut m = 24;
            m += Frame::Settings { ack: false, params }
                .encode(&mut dst[m..])
                .unwrap_or(0);
            if raise > 0 {
                m += Frame::WindowUpdate {
                    stream: 0,
                    increment: raise,
                }
                .encode(&mut dst[m..])
                .unwrap_or(0);
                self.recv_window += i64::from(raise);
            }
            debug_assert_eq!(m, need);
            n = need;
            self.started = true;
        }
        while self.acks_owed > 0 {
            match (Frame::Settings {
                ack: true,
                params: frame::SettingsParams::EMPTY,
            })
            .encode(&mut out[n..])
            {
                Some(m) => {
                    n += m;
                    self.acks_owed -= 1;
                }
                None => return n,
            }
        }
        while self.pongs_owed > 0 {
            match (Frame::Ping {
                ack: true,
                data: self.pongs[0],
            })
            .encode(&mut out[n..])
            {
                Some(m) => {
                    n += m;
                    self.pongs.copy_within(1.., 0);
                    self.pongs_owed -= 1;
                }
                None => return n,
            }
        }
        for i in 0..S {
            let s = self.slots[i];
            if let Phase::Reset(code) = s.phase {
                match (Frame::RstStream { stream: s.id, code }).encode(&mut out[n..]) {
                    Some(m) => {
                        n += m;
                        self.slots[i] = FREE;
                    }
                    None => return n,
                }
            } else if self.stream_update_due(&s) {
                match (Frame::WindowUpdate {
                    stream: s.id,
                    increment: s.recv_unacked,
                })
                .encode(&mut out[n..])
                {
                    Some(m) => {
                        n += m;
                        self.slots[i].recv_window += i64::from(s.recv_unacked);
                        self.slots[i].recv_unacked = 0;
                    }
                    None => return n,
                }
            }
        }
        if self.conn_update_due() {
            match (Frame::WindowUpdate {
                stream: 0,
                increment: self.recv_unacked,
            })
            .encode(&mut out[n..])
            {
                Some(m) => {
                    n += m;
                    self.recv_window += i64::from(self.recv_unacked);
                    self.recv_unacked = 0;
                }
                None => return n,
            }
        }
        if let (Some(e), false) = (self.failed, self.goaway_sent) {
            // The client processes no server-initiated stream: last id 0.
            if let Some(m) = (Frame::GoAway {
                last_stream: 0,
                code: e.code(),
                debug: b"",
            })
            .encode(&mut out[n..])
            {
                n += m;
                self.goaway_sent = true;
            }
        }
        n
    }

    /// Writes a PING whose opaque data is `now_ns`; its [`Event::Pong`]
    /// carries it back (the round trip is the engine's clock minus it).
    /// Returns the bytes written, or `None` when `out` is too short.
    pub fn ping(&mut self, now_ns: u64, out: &mut [u8]) -> Option<usize> {
        (Frame::Ping {
            ack: false,
            data: now_ns.to_be_bytes(),
        })
        .encode(out)
    }

    /// Opens the next stream for one of a plan's requests, as
    /// [`start_request`](Self::start_request) does with its header block
    /// (`end_stream` when it has no body), unless its field list is larger
    /// than the server's `SETTINGS_MAX_HEADER_LIST_SIZE`: that limit is
    /// advisory (RFC 9113 section 6.5.2), but a server that states it
    /// answers a larger request with an error, and no connection to it
    /// would take it; the engines count it unsent
    /// ([`Unsent::TooLarge`](crate::measure::Unsent::TooLarge)).
    ///
    /// # Errors
    /// [`SendError::TooLarge`] with the server's limit, or what
    /// [`start_request`](Self::start_request) returns; nothing was written.
    ///
    /// ```
    /// use metronome_core::h2::{Connection, SendError};
    /// use metronome_core::plan::EncodedRequest;
    /// let mut conn = Connection::<4>::new(Default::default());
    /// let mut out = [0u8; 256];
    /// conn.poll_transmit(&mut out);
    /// // The server's SETTINGS: MAX_HEADER_LIST_SIZE (0x6) = 100.
    /// conn.handle_read(&[0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 100]).unwrap();
    /// assert_eq!(conn.server_max_header_list(), Some(100));
    /// let big = EncodedRequest { block: b"\x82", body: b"", list_size: 101 };
    /// assert_eq!(conn.start_planned(&big, &mut out), Err(SendError::TooLarge { limit: 100 }));
    /// let fits = EncodedRequest { list_size: 100, ..big };
    /// assert_eq!(conn.start_planned(&fits, &mut out), Ok((1, 10)));
    /// ```
    pub fn start_planned(
        &mut self,
        request: &crate::plan::EncodedRequest<'_>,
        out: &mut [u8],
    ) -> Result<(u32, usize), SendError> {
        if request.list_size > self.peer_max_list as usize {
            return Err(SendError::TooLarge {
                limit: self.peer_max_list,
            });
        }
        self.start_request(request.block, request.body.is_empty(), out)
    }

    /// Opens the next stream with the header block `block` (HEADERS, and
    /// CONTINUATION frames when the block is larger than the server's
    /// maximum frame size); `end_stream` when the request has no body.
    /// Returns the stream id and the bytes written.
    ///
    /// # Errors
    /// A [`SendError`]; nothing was written.
    pub fn start_request(
        &mut self,
        block: &[u8],
        end_stream: bool,
        out: &mut [u8],
    ) -> Result<(u32, usize), SendError> {
        if !self.started {
            return Err(SendError::NotStarted);
        }
        if self.failed.is_some() {
            return Err(SendError::Closed);
        }
        if self.goaway.is_some() {
            return Err(SendError::GoingAway);
        }
        if self.next_id > MAX_WINDOW {
            return Err(SendError::IdsExhausted);
        }
        if self.open >= self.max_streams() {
            return Err(SendError::StreamLimit);
        }
        let Some(i) = self.slots.iter().position(|s| s.phase == Phase::Free) else {
            return Err(SendError::StreamLimit);
        };
        let max = self.peer_max_frame as usize;
        let frames = block.len().div_ceil(max).max(1);
        if out.len() < frames * HEADER_LEN + block.len() {
            return Err(SendError::BufferFull);
        }
        let id = self.next_id;
        let mut n = 0;
        let mut chunks = block.chunks(max);
        let first = chunks.next().unwrap_or(&[]);
        let mut flags = if end_stream { flag::END_STREAM } else { 0 };
        if frames == 1 {
            flags |= flag::END_HEADERS;
        }
        for (k, chunk) in core::iter::once(first).chain(chunks).enumerate() {
            let (kind, fl) = if k == 0 {
                (kind::HEADERS, flags)
            } else {
                (
                    kind::CONTINUATION,
                    if k + 1 == frames {
                        flag::END_HEADERS
                    } else {
                        0
                    },
                )
            };
            n += write_header(&mut out[n..], chunk.len(), kind, fl, id)
                .ok_or(SendError::BufferFull)?;
            out[n..n + chunk.len()].copy_from_slice(chunk);
            n += chunk.len();
        }
        self.next_id += 2;
        self.open += 1;
        self.slots[i] = Slot {
            id,
            phase: Phase::AwaitHead,
            local_done: end_stream,
            send_window: self.peer_window,
            recv_window: i64::from(self.config.stream_window),
            recv_unacked: 0,
            blocked: false,
        };
        Ok((id, n))
    }

    /// Sends as much of a request body as the server's windows, its
    /// maximum frame size and `out` allow, in DATA frames; the last one
    /// carries END_STREAM when `end_stream` and all of `data` went (an
    /// empty `data` with `end_stream` writes an empty DATA frame that ends
    /// the request). The caller keeps the rest and calls again after
    /// [`Event::Unblocked`] (a window) or a flush (the output).
    ///
    /// # Errors
    /// [`SendError::UnknownStream`] for a stream not open or already ended
    /// on the client's side; [`SendError::Closed`] after a connection error.
    pub fn send_data(
        &mut self,
        stream: u32,
        data: &[u8],
        end_stream: bool,
        out: &mut [u8],
    ) -> Result<Sent, SendError> {
        if self.failed.is_some() {
            return Err(SendError::Closed);
        }
        let max_frame = self.peer_max_frame as usize;
        let conn_window = self.send_window;
        let slot = self
            .slots
            .iter_mut()
            .find(|s| {
                s.id == stream && matches!(s.phase, Phase::AwaitHead | Phase::Body) && !s.local_done
            })
            .ok_or(SendError::UnknownStream)?;
        let mut sent = Sent {
            consumed: 0,
            written: 0,
            blocked: None,
        };
        let mut window = conn_window.min(slot.send_window);
        loop {
            let rest = &data[sent.consumed..];
            if rest.is_empty() && !end_stream {
                break;
            }
            let room = out.len().saturating_sub(sent.written + HEADER_LEN);
            if out.len() < sent.written + HEADER_LEN {
                break;
            }
            let take = rest
                .len()
                .min(max_frame)
                .min(room)
                .min(window.max(0) as usize);
            if take == 0 && !rest.is_empty() {
                if window <= 0 {
                    // The stream's own window first: a WINDOW_UPDATE for
                    // the connection alone would not unblock it.
                    sent.blocked = Some(if slot.send_window <= 0 {
                        Blocked::Stream
                    } else {
                        Blocked::Connection
                    });
                }
                break;
            }
            let last = take == rest.len() && end_stream;
            let w = sent.written;
            write_header(
                &mut out[w..],
                take,
                kind::DATA,
                if last { flag::END_STREAM } else { 0 },
                stream,
            )
            .ok_or(SendError::BufferFull)?;
            out[w + HEADER_LEN..w + HEADER_LEN + take].copy_from_slice(&rest[..take]);
            sent.written += HEADER_LEN + take;
            sent.consumed += take;
            window -= take as i64;
            slot.send_window -= take as i64;
            if last {
                slot.local_done = true;
                break;
            }
        }
        self.send_window -= sent.consumed as i64;
        if let Some(b) = sent.blocked {
            self.blocked_sends += 1;
            match b {
                Blocked::Stream => slot.blocked = true,
                Blocked::Connection => self.conn_blocked = true,
            }
        }
        Ok(sent)
    }

    /// Cancels a stream (RST_STREAM CANCEL, written by the next
    /// [`poll_transmit`](Self::poll_transmit)), e.g. on a request timeout.
    /// Returns whether the stream was open.
    pub fn cancel(&mut self, stream: u32) -> bool {
        match self
            .slots
            .iter_mut()
            .find(|s| s.id == stream && matches!(s.phase, Phase::AwaitHead | Phase::Body))
        {
            Some(s) => {
                s.phase = Phase::Reset(ErrorCode::CANCEL);
                self.open -= 1;
                true
            }
            None => false,
        }
    }

    fn fail(&mut self, e: H2Error) -> H2Error {
        self.failed = Some(e);
        e
    }
}
