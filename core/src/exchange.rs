//! [`Exchange`]: one request and its response on one connection, as a
//! sans-IO state machine. Both engines drive it the same way, so they
//! record exactly the same thing for the same bytes at the same times; an
//! engine keeps only the socket, the clock and sleeping.
//!
//! The engine's side, in quinn-proto's shape (time is an argument):
//! - [`Exchange::begin`] when the request is written (a `HEAD` request
//!   expects no body; the method decides whether a retry is allowed);
//! - [`Exchange::handle_read`] with the unconsumed bytes of the connection
//!   buffer and the time they arrived; it answers [`Feed::NeedMore`] (drop
//!   `consumed` bytes, read again) or [`Feed::Complete`]; a failure is the
//!   request's [`Finish`] (bad framing with its cause, a head too large);
//! - [`Exchange::handle_eof`] when the peer closed (a body delimited by the
//!   close ends there), [`Exchange::handle_fault`] to classify a socket error,
//!   [`Exchange::may_retry`] to decide whether a request that met a closed
//!   connection is sent again on a fresh one;
//! - [`Exchange::finish`] once complete: the [`Finish`] to record;
//! - [`Exchange::handle_idle`] for bytes that arrive on an idle connection.
//!
//! The connection-lifecycle rules (RFC 9112 section 9.3, RFC 9110 section
//! 9.2.2): bytes after a complete response, or on an idle connection, were
//! asked for by no request: the connection is closed and they are counted
//! apart ([`Feed::Complete::unsolicited`], [`Idle::Unsolicited`]), never
//! charged to the next request; a `408` or a close on an idle connection is
//! the server timing it out ([`Idle::Closed`]); a request whose reused
//! connection turns out closed before any byte of its response arrived is
//! retried once on a fresh connection when its method is idempotent.
//!
//! Inter-token gaps go into a slice the caller owns (at most its length per
//! request, [`GAP_CAP`] in both engines; more are counted and dropped), so
//! nothing here allocates.
//!
//! ```
//! use metronome_core::exchange::{Exchange, Feed};
//! use metronome_core::exchange::Finish;
//!
//! let wire = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n\
//!     30\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n\r\n\
//!     30\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"yo\"}}]}\n\n\r\n\
//!     e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n";
//! let mut gaps = [0u64; 16];
//! let mut ex = Exchange::new(true);
//! ex.begin(1_000, 1_500, b"POST /v1/chat/completions HTTP/1.1\r\n\r\n"); // intended, sent
//! // The head, the first chunk and "30" arrive at 10 us: the partial
//! // chunk-size line is not consumed and stays at the front of the buffer.
//! assert_eq!(ex.handle_read(10_000, &wire[..136], &mut gaps), Ok(Feed::NeedMore { consumed: 134 }));
//! // The rest arrives at 25 us, after the two bytes kept.
//! assert_eq!(
//!     ex.handle_read(25_000, &wire[134..], &mut gaps),
//!     Ok(Feed::Complete { consumed: wire.len() - 134, keep_alive: true, unsolicited: false })
//! );
//! let Finish::Stream { timing, gaps } = ex.finish(&gaps) else { panic!() };
//! assert_eq!(timing.first_content_ns, Some(10_000));
//! assert_eq!(timing.done_ns, Some(25_000));
//! assert_eq!(gaps, [15_000]);
//! ```

use crate::check::{Check, CheckFailure};
use crate::http::ParseError;
use crate::measure::{ErrorKind, FramingCause, StreamTiming};
use crate::plan::{Plan, Protocol};
use crate::record::ResponseHead;
use crate::response::{ReadError, ReadEvent, Reader};

/// Inter-token gaps the engines keep per request (the length of the slice
/// they pass); more are counted ([`Exchange::dropped_gaps`]) and dropped.
pub const GAP_CAP: usize = 4096;

/// What [`Exchange::handle_read`] made of the bytes it was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feed {
    /// The response is not complete: drop `consumed` bytes from the front
    /// of the buffer and read more.
    NeedMore {
        /// Bytes of the input consumed.
        consumed: usize,
    },
    /// The response is complete: drop `consumed` bytes from the front of
    /// the buffer and call [`Exchange::finish`].
    Complete {
        /// Bytes of the input consumed.
        consumed: usize,
        /// Whether the connection may carry the next request: the server
        /// allows it and no unsolicited bytes followed.
        keep_alive: bool,
        /// Bytes followed the response that no request asked for: close the
        /// connection (never keep-alive) and count them apart.
        unsolicited: bool,
    },
}

/// What bytes on an idle connection mean ([`Exchange::handle_idle`]). Either
/// way the connection is closed and replaced; no request is charged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Idle {
    /// A `408 Request Timeout`: the server timed the idle connection out.
    Closed,
    /// Anything else: bytes no request asked for.
    Unsolicited,
}

/// How one request ended, borrowed: what a [`Ledger`](crate::ledger::Ledger)
/// needs to record it. Engines with fixed buffers build it without
/// allocating.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finish<'a> {
    /// A 2xx response, fully read.
    Ok,
    /// A complete response with a non-2xx status.
    Status(u16),
    /// A gRPC call answered HTTP `200` that ended with this non-zero
    /// `grpc-status` ([`ErrorKind::GrpcStatus`]; see [`Finish::for_grpc`]).
    GrpcStatus(u32),
    /// A fault, by kind.
    Error(ErrorKind),
    /// A response with bad HTTP framing, by cause
    /// ([`ErrorKind::BadFraming`]).
    Framing(FramingCause),
    /// A complete response that failed one of its checks
    /// ([`ErrorKind::Check`], [`crate::check`]).
    Check(CheckFailure),
    /// A streamed response that reached its end; the recorder decides
    /// whether it succeeded (it needs content and `[DONE]`).
    Stream {
        /// The stream's timing.
        timing: &'a StreamTiming,
        /// Gaps between consecutive content chunks, ns.
        gaps: &'a [u64],
    },
}

impl<'a> Finish<'a> {
    /// This finish of a complete response, judged by its checks
    /// ([`crate::check::judge`]): `status` its status, `verdict` its header
    /// and body checks' verdict. Failures of the exchange itself (not a
    /// complete response) are kept as they are. The rule of every protocol.
    ///
    /// ```
    /// use metronome_core::check::{Check, CheckFailure};
    /// use metronome_core::exchange::Finish;
    /// let created: &'static Check = Box::leak(Box::new(Check { status: Some((201, 201)), ..Check::NONE }));
    /// assert_eq!(Finish::Status(201).checked(Some(created), Some(201), None), Finish::Ok);
    /// assert_eq!(Finish::Ok.checked(Some(created), Some(200), None), Finish::Check(CheckFailure::Status));
    /// assert_eq!(Finish::Ok.checked(None, Some(200), Some(CheckFailure::Body)), Finish::Ok);
    /// ```
    pub fn checked(
        self,
        check: Option<&Check>,
        status: Option<u16>,
        verdict: Option<CheckFailure>,
    ) -> Finish<'a> {
        let Some(check) = check else { return self };
        let success = matches!(self, Finish::Ok | Finish::Stream { .. });
        if !(success || matches!(self, Finish::Status(_))) {
            return self;
        }
        match crate::check::judge(check, status, verdict, success) {
            None => self,
            Some(Ok(())) => Finish::Ok,
            Some(Err(f)) => Finish::Check(f),
        }
    }
}

impl Finish<'static> {
    /// How a unary gRPC call ended, from its response's `:status` and the
    /// `grpc-status` of its trailers (or of a trailers-only head): the
    /// rule both engines share.
    ///
    /// - `:status` other than `200` (or none): [`Finish::Status`], counted
    ///   by HTTP status whatever `grpc-status` says;
    /// - `200` and `grpc-status: 0`: [`Finish::Ok`];
    /// - `200` and another code: [`Finish::GrpcStatus`], counted by code;
    /// - `200` and no `grpc-status` (or one that is not a number): bad
    ///   framing, [`FramingCause::NoGrpcStatus`].
    ///
    /// ```
    /// use metronome_core::exchange::Finish;
    /// use metronome_core::measure::FramingCause;
    /// assert_eq!(Finish::for_grpc(Some(200), Some(0)), Finish::Ok);
    /// assert_eq!(Finish::for_grpc(Some(200), Some(14)), Finish::GrpcStatus(14));
    /// assert_eq!(Finish::for_grpc(Some(200), None), Finish::Framing(FramingCause::NoGrpcStatus));
    /// assert_eq!(Finish::for_grpc(Some(503), Some(14)), Finish::Status(503));
    /// ```
    pub fn for_grpc(status: Option<u16>, grpc_status: Option<u32>) -> Finish<'static> {
        match (status, grpc_status) {
            (Some(200), Some(0)) => Finish::Ok,
            (Some(200), Some(code)) => Finish::GrpcStatus(code),
            (Some(200), None) => Finish::Framing(FramingCause::NoGrpcStatus),
            (other, _) => Finish::Status(other.unwrap_or(0)),
        }
    }

    /// How a complete response ended: a non-2xx status is `Status`, an
    /// error event in a 2xx stream is a stream error, any other 2xx plain
    /// response is `Ok`. `None` means a 2xx stream without an error event:
    /// record it as [`Finish::Stream`] from its timing (the recorder then
    /// checks content and `[DONE]`).
    ///
    /// ```
    /// use metronome_core::exchange::Finish;
    /// assert_eq!(Finish::for_response(Some(429), false, true), Some(Finish::Status(429)));
    /// assert_eq!(Finish::for_response(Some(200), false, false), Some(Finish::Ok));
    /// assert_eq!(Finish::for_response(Some(200), false, true), None);
    /// ```
    pub fn for_response(
        status: Option<u16>,
        stream_error: bool,
        expect_stream: bool,
    ) -> Option<Finish<'static>> {
        let code = status.unwrap_or(0);
        if !(200..300).contains(&code) {
            Some(Finish::Status(code))
        } else if stream_error {
            Some(Finish::Error(ErrorKind::StreamError))
        } else if expect_stream {
            None
        } else {
            Some(Finish::Ok)
        }
    }

    /// How a complete response ended, from what its exchange saw: the
    /// status, whether the head declared an event stream, whether the
    /// stream carried an error event, and (for a stream) its timing and
    /// gaps. The rule of [`Exchange::finish`] and of
    /// [`StreamExchange::finish`](crate::stream::StreamExchange::finish) alike.
    pub(crate) fn for_ended<'a>(
        status: Option<u16>,
        event_stream: bool,
        stream_error: bool,
        expect_stream: bool,
        timing: &'a StreamTiming,
        gaps: &'a [u64],
    ) -> Finish<'a> {
        if expect_stream && status.is_some_and(|s| (200..300).contains(&s)) && !event_stream {
            return Finish::Error(ErrorKind::NotEventStream);
        }
        Finish::for_response(status, stream_error, expect_stream)
            .unwrap_or(Finish::Stream { timing, gaps })
    }
}

/// One request/response exchange on one connection; see the
/// [module docs](self). Reused for every request of the connection.
#[derive(Clone, Debug)]
pub struct Exchange {
    reader: Reader,
    expect_stream: bool,
    status: Option<u16>,
    /// The head declared `Content-Type: text/event-stream`.
    event_stream: bool,
    stream_error: bool,
    timing: StreamTiming,
    /// Gaps written into the caller's slice for the current request.
    gaps: usize,
    /// Some byte of the current response arrived.
    response_bytes: bool,
    /// When the first byte of the current response arrived.
    first_byte_ns: Option<u64>,
    /// The current request's method is idempotent (RFC 9110 section 9.2.2).
    idempotent: bool,
    /// Requests begun on this connection (the current one included).
    served: u64,
    /// The connection waited idle in the pool before its first request
    /// ([`Exchange::mark_idle`]): it was not opened for that request.
    idled: bool,
    /// Gaps that did not fit, over the life of this exchange.
    dropped_gaps: u64,
    /// The first response of every connection is refused
    /// ([`Exchange::distrust_first_responses`]).
    distrust_first: bool,
    /// The current request's checks ([`Exchange::set_check`]).
    check: Option<&'static Check>,
    /// The header and body checks' verdict on the complete response.
    check_verdict: Option<CheckFailure>,
}

impl Exchange {
    /// An exchange for a connection; `expect_stream`: responses are
    /// OpenAI-style event streams (a 2xx body is decoded as SSE).
    pub const fn new(expect_stream: bool) -> Self {
        Self::with_max_head(expect_stream, crate::http::DEFAULT_MAX_HEAD)
    }

    /// An exchange whose response heads may be at most `max_head` bytes
    /// (more is [`ErrorKind::TooLarge`]).
    pub const fn with_max_head(expect_stream: bool, max_head: usize) -> Self {
        Self {
            reader: Reader::with_max_head(expect_stream, max_head),
            expect_stream,
            status: None,
            event_stream: false,
            stream_error: false,
            timing: StreamTiming::new(0, 0),
            gaps: 0,
            response_bytes: false,
            first_byte_ns: None,
            idempotent: true,
            served: 0,
            idled: false,
            dropped_gaps: 0,
            distrust_first: false,
            check: None,
            check_verdict: None,
        }
    }

    /// The checks of the request begun (or about to be): `None` checks
    /// nothing. Kept for the next requests until changed; the engines set
    /// it for every request from [`Plan::check_of`].
    ///
    /// ```
    /// use metronome_core::check::{Check, CheckFailure, Substring};
    /// use metronome_core::exchange::{Exchange, Finish};
    /// static TABLE: [u32; 6] = Substring::table_of(b"a blue");
    /// let check: &'static Check = Box::leak(Box::new(Check {
    ///     body: Some(Substring::new(b"a blue", &TABLE)),
    ///     ..Check::NONE
    /// }));
    /// // "a blue" straddles two chunks.
    /// let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nin a\r\n7\r\n blue x\r\n0\r\n\r\n";
    /// let mut ex = Exchange::new(false);
    /// ex.set_check(Some(check));
    /// ex.begin(0, 0, b"GET / HTTP/1.1\r\n\r\n");
    /// ex.handle_read(1, wire, &mut []).unwrap();
    /// assert_eq!(ex.finish(&[]), Finish::Ok);
    /// // "a red" fails it: an error of kind `check`, by `body`.
    /// let red = b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nin a red";
    /// ex.begin(2, 2, b"GET / HTTP/1.1\r\n\r\n");
    /// ex.handle_read(3, red, &mut []).unwrap();
    /// assert_eq!(ex.finish(&[]), Finish::Check(CheckFailure::Body));
    /// ```
    pub fn set_check(&mut self, check: Option<&'static Check>) {
        self.check = check;
        self.reader.set_check(check);
    }

    /// From now on, on every connection of this exchange (it survives
    /// [`Exchange::reset_connection`]), the response completed for the
    /// connection's first request is not taken for its response: it ends as
    /// [`FramingCause::Unsolicited`] bad framing and the connection must be
    /// closed. For a server known to write before any request (core's
    /// [`warm_start`](crate::engine::warm_start) saw it on a connection and
    /// on its replacement): such bytes may arrive after any check, and a
    /// response to a connection's first request cannot be told from them.
    ///
    /// ```
    /// use metronome_core::exchange::{Exchange, Feed, Finish};
    /// use metronome_core::measure::FramingCause;
    /// let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    /// let mut ex = Exchange::new(false);
    /// ex.distrust_first_responses();
    /// ex.begin(0, 0, b"GET / HTTP/1.1\r\n\r\n");
    /// assert_eq!(ex.handle_read(1, ok, &mut []), Err(Finish::Framing(FramingCause::Unsolicited)));
    /// // A second request on the same connection is trusted.
    /// ex.begin(2, 2, b"GET / HTTP/1.1\r\n\r\n");
    /// assert!(matches!(ex.handle_read(3, ok, &mut []), Ok(Feed::Complete { .. })));
    /// // A new connection: its first response is refused again.
    /// ex.reset_connection();
    /// ex.begin(4, 4, b"GET / HTTP/1.1\r\n\r\n");
    /// assert_eq!(ex.handle_read(5, ok, &mut []), Err(Finish::Framing(FramingCause::Unsolicited)));
    /// ```
    pub fn distrust_first_responses(&mut self) {
        self.distrust_first = true;
    }

    /// Whether [`Exchange::distrust_first_responses`] was called: bytes
    /// that come before a connection's first request are then left to be
    /// read as its (refused) first response, not a reason to close it (a
    /// server that writes on every accept would otherwise make the engine
    /// open connection after connection).
    pub fn distrusts_first_responses(&self) -> bool {
        self.distrust_first
    }

    /// The exchange state machine for one connection of `plan`: responses
    /// are event streams for [`Protocol::OpenAiSse`], and heads may be at
    /// most [`Plan::max_head_bytes`].
    pub const fn for_plan(plan: &Plan<'_>) -> Self {
        Self::with_max_head(
            matches!(plan.protocol, Protocol::OpenAiSse),
            plan.max_head_bytes,
        )
    }

    /// The request `request` (its encoded bytes), intended at
    /// `intended_ns`, was written at `sent_ns`: forget the previous
    /// response's facts. A `HEAD` request's response has no body.
    ///
    /// ```
    /// use metronome_core::exchange::{Exchange, Feed};
    /// let mut ex = Exchange::new(false);
    /// ex.begin(0, 0, b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n");
    /// let head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
    /// assert_eq!(
    ///     ex.handle_read(1, head, &mut []),
    ///     Ok(Feed::Complete { consumed: head.len(), keep_alive: true, unsolicited: false })
    /// );
    /// ```
    pub fn begin(&mut self, intended_ns: u64, sent_ns: u64, request: &[u8]) {
        self.status = None;
        self.event_stream = false;
        self.stream_error = false;
        self.timing = StreamTiming::new(intended_ns, sent_ns);
        self.gaps = 0;
        self.response_bytes = false;
        self.first_byte_ns = None;
        self.check_verdict = None;
        let method = method(request);
        self.idempotent = is_idempotent(method);
        self.served += 1;
        if method == b"HEAD" {
            self.reader.expect_no_body();
        }
    }

    /// The connection was closed or replaced: the next bytes start a new
    /// response on a new connection.
    pub fn reset_connection(&mut self) {
        self.reader.reset();
        self.served = 0;
        self.idled = false;
    }

    /// The connection is open and waits, idle, for a request (the engines
    /// call this when it joins the idle pool, pre-opened ones included): a
    /// server may close it meanwhile, so a reset before any byte of the
    /// next response is the idle-close race ([`Exchange::may_retry`]),
    /// even on its first request.
    pub fn mark_idle(&mut self) {
        self.idled = true;
    }

    /// Feeds the unconsumed bytes of the connection buffer, read at
    /// `now_ns`; `input` must start with the bytes the previous call did
    /// not consume. Gaps between content chunks go into `gaps`.
    ///
    /// # Errors
    /// The request's [`Finish`] when the response cannot be read: bad
    /// framing (with its cause: a TLS or HTTP/2 server is told apart) or
    /// a head over the limit. The connection must be closed.
    ///
    /// ```
    /// use metronome_core::exchange::Exchange;
    /// use metronome_core::exchange::Finish;
    /// use metronome_core::measure::{ErrorKind, FramingCause};
    /// let mut ex = Exchange::new(false);
    /// ex.begin(0, 0, b"GET / HTTP/1.1\r\n\r\n");
    /// // A TLS server's alert, answering plain HTTP.
    /// assert_eq!(ex.handle_read(1, b"\x15\x03\x03\x00\x02\x02\x46", &mut []), Err(Finish::Framing(FramingCause::Tls)));
    /// let mut ex = Exchange::with_max_head(false, 24);
    /// ex.begin(0, 0, b"GET / HTTP/1.1\r\n\r\n");
    /// assert_eq!(
    ///     ex.handle_read(1, b"HTTP/1.1 200 OK\r\nServer: a-long-name\r\n", &mut []),
    ///     Err(Finish::Error(ErrorKind::TooLarge))
    /// );
    /// ```
    pub fn handle_read(
        &mut self,
        now_ns: u64,
        input: &[u8],
        gaps: &mut [u64],
    ) -> Result<Feed, Finish<'static>> {
        let first = !self.response_bytes;
        self.response_bytes |= !input.is_empty();
        if first && !input.is_empty() {
            self.first_byte_ns = Some(now_ns);
        }
        let mut pos = 0;
        loop {
            let (used, event) = match self.reader.feed(&input[pos..]) {
                Ok(r) => r,
                Err(e) => return Err(read_failure(e, first.then_some(input))),
            };
            pos += used;
            match event {
                None if used == 0 => return Ok(Feed::NeedMore { consumed: pos }),
                None => {}
                Some(ev) => {
                    if let Some(keep_alive) = self.apply(now_ns, ev, gaps) {
                        if self.distrust_first && self.served <= 1 {
                            return Err(Finish::Framing(FramingCause::Unsolicited));
                        }
                        let unsolicited = pos < input.len();
                        return Ok(Feed::Complete {
                            consumed: pos,
                            keep_alive: keep_alive && !unsolicited,
                            unsolicited,
                        });
                    }
                }
            }
        }
    }

    /// The peer closed the connection at `now_ns` (every byte before the
    /// close was fed). A body delimited by the close ends here: `Ok(())`,
    /// the response is complete and the connection is not reusable.
    /// Anything else was cut.
    ///
    /// # Errors
    /// [`ErrorKind::StreamCut`] when a stream's head had arrived, else
    /// [`ErrorKind::Reset`] (see [`Exchange::may_retry`]).
    ///
    /// ```
    /// use metronome_core::exchange::{Exchange, Feed};
    /// use metronome_core::exchange::Finish;
    /// use metronome_core::measure::ErrorKind;
    /// let mut ex = Exchange::new(false);
    /// ex.begin(0, 0, b"GET / HTTP/1.0\r\n\r\n");
    /// let head = b"HTTP/1.0 200 OK\r\n\r\nbody until close";
    /// assert_eq!(ex.handle_read(7, head, &mut []), Ok(Feed::NeedMore { consumed: head.len() }));
    /// assert_eq!(ex.handle_eof(9, &mut []), Ok(()));
    /// assert_eq!(ex.finish(&[]), Finish::Ok);
    /// // A Content-Length body cut short is a reset.
    /// let mut ex = Exchange::new(false);
    /// ex.begin(0, 0, b"GET / HTTP/1.1\r\n\r\n");
    /// ex.handle_read(7, b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nab", &mut []).unwrap();
    /// assert_eq!(ex.handle_eof(9, &mut []), Err(ErrorKind::Reset));
    /// ```
    pub fn handle_eof(&mut self, now_ns: u64, gaps: &mut [u64]) -> Result<(), ErrorKind> {
        loop {
            match self.reader.finish_eof() {
                Ok(Some(ev)) => {
                    if self.apply(now_ns, ev, gaps).is_some() {
                        return Ok(());
                    }
                }
                Ok(None) | Err(_) => return Err(self.handle_fault(ErrorKind::Reset)),
            }
        }
    }

    /// Classifies a fault of the connection during this exchange: a reset
    /// after a stream's head arrived is a cut stream; anything else keeps
    /// its kind.
    ///
    /// ```
    /// use metronome_core::exchange::Exchange;
    /// use metronome_core::measure::ErrorKind;
    /// let mut ex = Exchange::new(true);
    /// ex.begin(0, 0, b"POST / HTTP/1.1\r\n\r\n");
    /// assert_eq!(ex.handle_fault(ErrorKind::Reset), ErrorKind::Reset);
    /// ex.handle_read(5, b"HTTP/1.1 200 OK\r\n\r\n", &mut []).unwrap();
    /// assert_eq!(ex.handle_fault(ErrorKind::Reset), ErrorKind::StreamCut);
    /// assert_eq!(ex.handle_fault(ErrorKind::Timeout), ErrorKind::Timeout);
    /// ```
    pub fn handle_fault(&self, kind: ErrorKind) -> ErrorKind {
        if kind == ErrorKind::Reset && self.streaming() {
            ErrorKind::StreamCut
        } else {
            kind
        }
    }

    /// Whether a request that failed with `kind` is sent again, once, on a
    /// fresh connection (its clock still running from its intended time):
    /// the connection was reused or waited idle before this request
    /// ([`Exchange::mark_idle`]: the server may have closed it while idle,
    /// a race no client can avoid), it was closed or reset before any byte
    /// of the response arrived, the request was not retried already, and
    /// its method is idempotent (RFC 9110 section 9.2.2) or
    /// `allow_non_idempotent` (`--retry-non-idempotent`).
    ///
    /// ```
    /// use metronome_core::exchange::Exchange;
    /// use metronome_core::measure::ErrorKind;
    /// let mut ex = Exchange::new(false);
    /// ex.begin(0, 0, b"GET / HTTP/1.1\r\n\r\n");
    /// assert!(!ex.may_retry(ErrorKind::Reset, false, false)); // a fresh connection
    /// let mut pre = Exchange::new(false);
    /// pre.mark_idle(); // pre-opened: it waited idle in the pool
    /// pre.begin(0, 0, b"GET / HTTP/1.1\r\n\r\n");
    /// assert!(pre.may_retry(ErrorKind::Reset, false, false));
    /// ex.begin(0, 0, b"GET / HTTP/1.1\r\n\r\n"); // the second request on it
    /// assert!(ex.may_retry(ErrorKind::Reset, false, false));
    /// assert!(!ex.may_retry(ErrorKind::Reset, true, false)); // once
    /// assert!(!ex.may_retry(ErrorKind::Timeout, false, false));
    /// ex.begin(0, 0, b"POST / HTTP/1.1\r\n\r\n");
    /// assert!(!ex.may_retry(ErrorKind::Reset, false, false));
    /// assert!(ex.may_retry(ErrorKind::Reset, false, true));
    /// ```
    pub fn may_retry(
        &self,
        kind: ErrorKind,
        already_retried: bool,
        allow_non_idempotent: bool,
    ) -> bool {
        kind == ErrorKind::Reset
            && !self.response_bytes
            && (self.served > 1 || self.idled)
            && !already_retried
            && (self.idempotent || allow_non_idempotent)
    }

    /// How the complete response ended, borrowing its timing and the gaps
    /// written into `gaps` (the slice given to [`Exchange::handle_read`]).
    pub fn finish<'a>(&'a self, gaps: &'a [u64]) -> Finish<'a> {
        Finish::for_ended(
            self.status,
            self.event_stream,
            self.stream_error,
            self.expect_stream,
            &self.timing,
            &gaps[..self.gaps.min(gaps.len())],
        )
        .checked(self.check, self.status, self.check_verdict)
    }

    /// What is known of the current response's head: when its first byte
    /// arrived and its status, once read (for `--out-requests`).
    ///
    /// ```
    /// use metronome_core::exchange::Exchange;
    /// use metronome_core::record::ResponseHead;
    /// let mut ex = Exchange::new(false);
    /// ex.begin(0, 0, b"GET / HTTP/1.1\r\n\r\n");
    /// assert_eq!(ex.head(), ResponseHead::default());
    /// let wire = b"HTTP/1.1 204 No Content\r\n\r\n";
    /// // The first bytes at 7, the rest (given again, unconsumed) at 9.
    /// ex.handle_read(7, &wire[..11], &mut []).unwrap();
    /// ex.handle_read(9, wire, &mut []).unwrap();
    /// assert_eq!(ex.head(), ResponseHead { first_byte_ns: Some(7), status: Some(204) });
    /// ```
    pub fn head(&self) -> ResponseHead {
        ResponseHead {
            first_byte_ns: self.first_byte_ns,
            status: self.status,
        }
    }

    /// Bytes arrived on an idle connection (no request in flight): a `408`
    /// is the server timing the connection out, anything else is
    /// unsolicited. Either way the caller closes the connection.
    ///
    /// ```
    /// use metronome_core::exchange::{Exchange, Idle};
    /// assert_eq!(Exchange::handle_idle(b"HTTP/1.1 408 Request Timeout\r\n"), Idle::Closed);
    /// assert_eq!(Exchange::handle_idle(b"HTTP/1.1 200 OK\r\n\r\n"), Idle::Unsolicited);
    /// ```
    pub fn handle_idle(input: &[u8]) -> Idle {
        let timed_out =
            input.len() >= 12 && input.starts_with(b"HTTP/1.") && &input[8..12] == b" 408";
        if timed_out {
            Idle::Closed
        } else {
            Idle::Unsolicited
        }
    }

    /// True once a stream's response head has arrived.
    pub fn streaming(&self) -> bool {
        self.expect_stream && self.status.is_some()
    }

    /// Gaps that did not fit in the caller's slice, over the life of this
    /// exchange.
    pub fn dropped_gaps(&self) -> u64 {
        self.dropped_gaps
    }

    /// Applies one reader event; `Some(keep_alive)` when the response is complete.
    fn apply(&mut self, now_ns: u64, ev: ReadEvent, gaps: &mut [u64]) -> Option<bool> {
        match ev {
            ReadEvent::Head { status } => {
                self.status = Some(status);
                self.event_stream = self.reader.event_stream();
            }
            ReadEvent::Content | ReadEvent::Chunk => {
                let facts = self.reader.facts();
                if let Some(gap) = self.timing.on_chunk(now_ns, &facts) {
                    match gaps.get_mut(self.gaps) {
                        Some(slot) => {
                            *slot = gap;
                            self.gaps += 1;
                        }
                        None => self.dropped_gaps += 1,
                    }
                }
            }
            ReadEvent::Usage(n) => self.timing.on_usage(n),
            ReadEvent::StreamError => self.stream_error = true,
            ReadEvent::Done => self.timing.on_done(now_ns),
            ReadEvent::Complete { keep_alive, .. } => {
                self.timing.on_end(now_ns);
                self.check_verdict = self.reader.check_verdict();
                self.reader.reset();
                return Some(keep_alive);
            }
        }
        None
    }
}

/// The method of an encoded request: the bytes before the first space.
fn method(request: &[u8]) -> &[u8] {
    let end = memchr::memchr(b' ', request).unwrap_or(request.len());
    &request[..end]
}

/// RFC 9110 section 9.2.2: GET, HEAD, OPTIONS, TRACE, PUT and DELETE are
/// idempotent.
fn is_idempotent(method: &[u8]) -> bool {
    matches!(
        method,
        b"GET" | b"HEAD" | b"OPTIONS" | b"TRACE" | b"PUT" | b"DELETE"
    )
}

/// The request's finish for a response that cannot be read. `first`: the
/// first bytes of the response, when they are at the front of the input
/// (to tell a TLS or HTTP/2 server apart from a broken HTTP/1.1 one).
fn read_failure(e: ReadError, first: Option<&[u8]>) -> Finish<'static> {
    let cause = match e {
        ReadError::Http(ParseError::HeadTooLarge) => return Finish::Error(ErrorKind::TooLarge),
        ReadError::Http(ParseError::Http(httparse::Error::TooManyHeaders)) => {
            return Finish::Error(ErrorKind::TooLarge)
        }
        ReadError::Http(ParseError::Http(_)) => match first.and_then(sniff) {
            Some(cause) => cause,
            None => FramingCause::Head,
        },
        ReadError::Http(ParseError::ContentLength) => FramingCause::ContentLength,
        ReadError::Http(ParseError::ChunkSize) => FramingCause::ChunkSize,
        ReadError::Http(ParseError::ChunkFraming) => FramingCause::ChunkFraming,
        ReadError::Http(ParseError::Upgrade) => FramingCause::Upgrade,
        _ => FramingCause::Head,
    };
    Finish::Framing(cause)
}

/// Another protocol on an HTTP/1.1 port, told by the first byte alone (so
/// the verdict does not depend on how the bytes were split into reads; an
/// HTTP/1.x response starts with `H`): a TLS record (content type 20-23:
/// an alert or a handshake), or an HTTP/2 frame (a length below 64 KiB
/// starts with 0, as the SETTINGS frame an HTTP/2-only server sends first).
fn sniff(first: &[u8]) -> Option<FramingCause> {
    match first.first()? {
        20..=23 => Some(FramingCause::Tls),
        0 => Some(FramingCause::Http2),
        _ => None,
    }
}

/// The read-window rule both engines share, over the caller's read buffer:
/// after a response needed more bytes, the unconsumed `start..end` moves to
/// the front (`start` becomes 0) so the next read appends at `end`; a
/// buffer that is full of one unfinished response head is
/// [`ErrorKind::TooLarge`].
///
/// ```
/// use metronome_core::exchange::compact;
/// use metronome_core::measure::ErrorKind;
/// let mut buf = *b"HTTP/1.1 200";
/// let (mut start, mut end) = (9, 12);
/// assert_eq!(compact(&mut buf, &mut start, &mut end), Ok(()));
/// assert_eq!((&buf[..end], start), (&b"200"[..], 0));
/// let (mut start, mut end) = (0, buf.len());
/// assert_eq!(compact(&mut buf, &mut start, &mut end), Err(ErrorKind::TooLarge));
/// ```
///
/// # Errors
/// [`ErrorKind::TooLarge`] when no byte of the buffer is free.
pub fn compact(buf: &mut [u8], start: &mut usize, end: &mut usize) -> Result<(), ErrorKind> {
    if *start > 0 {
        buf.copy_within(*start..*end, 0);
        *end -= *start;
        *start = 0;
    }
    if *end >= buf.len() {
        return Err(ErrorKind::TooLarge);
    }
    Ok(())
}
