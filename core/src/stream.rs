//! [`StreamExchange`]: one request's response on one HTTP/2 or HTTP/3
//! stream, the per-stream counterpart of [`Exchange`](crate::exchange::Exchange).
//! HTTP/2's [`Flights`](crate::h2::Flights) keep one per stream slot of a
//! connection, HTTP/3's client one per flight, and feed it the events of
//! its stream with the body bytes of each DATA frame; an OpenAI-style
//! stream's body goes through the same SSE decoder and the same
//! [`StreamTiming`] as over HTTP/1.1, so the three protocols record the
//! same facts for the same events at the same times.
//!
//! A unary gRPC call ([`StreamExchange::for_protocol`] with
//! [`Protocol::Grpc`]) also takes the `grpc-status` of its trailers (or
//! of a trailers-only head) through [`StreamExchange::on_grpc_status`],
//! and ends as [`Finish::for_grpc`] says: ok only on `:status 200` with
//! `grpc-status: 0`.
//!
//! ```
//! use metronome_core::exchange::Finish;
//! use metronome_core::stream::StreamExchange;
//! let mut gaps = [0u64; 8];
//! let mut s = StreamExchange::new(true);
//! s.begin(1_000, 1_500); // intended, sent
//! s.on_head(2_000, 200, true);
//! s.on_data(10_000, b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n", &mut gaps);
//! s.on_data(25_000, b"data: {\"choices\":[{\"delta\":{\"content\":\"yo\"}}]}\n\ndata: [DONE]\n\n", &mut gaps);
//! s.on_end(25_000, &mut gaps);
//! let Finish::Stream { timing, gaps } = s.finish(&gaps) else { panic!() };
//! assert_eq!(timing.first_content_ns, Some(10_000));
//! assert_eq!(timing.done_ns, Some(25_000));
//! assert_eq!(gaps.len(), 1);
//! ```

use crate::exchange::Finish;
use crate::measure::{ErrorKind, StreamTiming};
use crate::plan::Protocol;
use crate::record::ResponseHead;
use crate::sse::{SseDecoder, SseEvent, SseKind};

/// One request's response on one stream; reused for every stream the slot
/// carries ([`StreamExchange::begin`]).
#[derive(Clone, Debug)]
pub struct StreamExchange {
    sse: SseDecoder,
    expect_stream: bool,
    /// Unary gRPC: [`Finish::for_grpc`] decides.
    grpc: bool,
    grpc_status: Option<u32>,
    status: Option<u16>,
    /// When the final response head arrived.
    head_ns: Option<u64>,
    event_stream: bool,
    /// The body is decoded as SSE (a 2xx head of a stream request).
    decoding: bool,
    stream_error: bool,
    timing: StreamTiming,
    gaps: usize,
    dropped_gaps: u64,
    /// The current request's checks ([`StreamExchange::set_check`]).
    check: Option<&'static crate::check::Check>,
    /// What its response showed them so far.
    check_state: crate::check::CheckState,
}

impl StreamExchange {
    /// A stream slot's exchange; `expect_stream`: responses are
    /// OpenAI-style event streams (a 2xx body is decoded as SSE).
    pub const fn new(expect_stream: bool) -> Self {
        Self {
            sse: SseDecoder::new(),
            expect_stream,
            grpc: false,
            grpc_status: None,
            status: None,
            head_ns: None,
            event_stream: false,
            decoding: false,
            stream_error: false,
            timing: StreamTiming::new(0, 0),
            gaps: 0,
            dropped_gaps: 0,
            check: None,
            check_state: crate::check::CheckState::new(),
        }
    }

    /// The checks of the request begun (`None`: none); its DATA flows
    /// through them as it arrives, frame by frame, never copied.
    ///
    /// ```
    /// use metronome_core::check::{Check, CheckFailure, Substring};
    /// use metronome_core::exchange::Finish;
    /// use metronome_core::stream::StreamExchange;
    /// static TABLE: [u32; 4] = Substring::table_of(b"done");
    /// let check: &'static Check = Box::leak(Box::new(Check {
    ///     body: Some(Substring::new(b"done", &TABLE)),
    ///     ..Check::NONE
    /// }));
    /// let mut s = StreamExchange::new(false);
    /// s.begin(0, 1);
    /// s.set_check(Some(check));
    /// s.on_head(2, 200, false);
    /// s.on_data(3, b"all do", &mut []); // "done" across two DATA frames
    /// s.on_data(4, b"ne", &mut []);
    /// s.on_end(5, &mut []);
    /// assert_eq!(s.finish(&[]), Finish::Ok);
    /// s.begin(6, 7);
    /// s.on_head(8, 200, false);
    /// s.on_data(9, b"all do", &mut []);
    /// s.on_end(10, &mut []);
    /// assert_eq!(s.finish(&[]), Finish::Check(CheckFailure::Body));
    /// ```
    pub fn set_check(&mut self, check: Option<&'static crate::check::Check>) {
        self.check = check;
        self.check_state = crate::check::CheckState::new();
    }

    /// A field of the response head passed its header check (HTTP/2: the
    /// connection compared them as it decoded the head,
    /// `Connection::watch_fields`).
    pub fn header_passed(&mut self) {
        self.check_state.header_passed();
    }

    /// One field of the response head or trailers, for a header check.
    pub fn on_field(&mut self, name: &[u8], value: &[u8]) {
        if let Some(c) = self.check {
            self.check_state.field(c, name, value);
        }
    }

    /// A stream slot's exchange for `protocol`: OpenAI-style event streams
    /// for [`Protocol::OpenAiSse`], unary gRPC calls for
    /// [`Protocol::Grpc`], plain responses for [`Protocol::Http`].
    ///
    /// ```
    /// use metronome_core::exchange::Finish;
    /// use metronome_core::stream::StreamExchange;
    /// use metronome_core::plan::Protocol;
    /// let mut s = StreamExchange::for_protocol(Protocol::Grpc);
    /// s.begin(0, 1);
    /// s.on_head(5, 200, false);
    /// s.on_grpc_status(None); // the head of a response with a body
    /// s.on_data(6, b"\0\0\0\0\0", &mut []);
    /// s.on_grpc_status(Some(14)); // its trailers
    /// s.on_end(7, &mut []);
    /// assert_eq!(s.finish(&[]), Finish::GrpcStatus(14));
    /// ```
    pub const fn for_protocol(protocol: Protocol) -> Self {
        let mut s = Self::new(matches!(protocol, Protocol::OpenAiSse));
        s.grpc = matches!(protocol, Protocol::Grpc);
        s
    }

    /// The request intended at `intended_ns` left at `sent_ns` (its
    /// HEADERS written): forget the previous stream's facts.
    pub fn begin(&mut self, intended_ns: u64, sent_ns: u64) {
        self.sse.reset();
        self.status = None;
        self.head_ns = None;
        self.grpc_status = None;
        self.event_stream = false;
        self.decoding = false;
        self.stream_error = false;
        self.timing = StreamTiming::new(intended_ns, sent_ns);
        self.gaps = 0;
        self.check_state = crate::check::CheckState::new();
    }

    /// The final response head arrived at `now_ns` ([`Event::Headers`](crate::h2::Event::Headers)).
    pub fn on_head(&mut self, now_ns: u64, status: u16, event_stream: bool) {
        self.status = Some(status);
        self.head_ns = Some(now_ns);
        self.event_stream = event_stream;
        self.decoding = self.expect_stream && (200..300).contains(&status);
    }

    /// What is known of the current stream's response head, for
    /// `--out-requests`: its status and when it arrived (the stream's first
    /// response frame: HTTP/2 has no byte of a response before its head).
    ///
    /// ```
    /// use metronome_core::stream::StreamExchange;
    /// use metronome_core::record::ResponseHead;
    /// let mut s = StreamExchange::new(false);
    /// s.begin(0, 1);
    /// assert_eq!(s.head(), ResponseHead::default());
    /// s.on_head(5, 404, false);
    /// assert_eq!(s.head(), ResponseHead { first_byte_ns: Some(5), status: Some(404) });
    /// ```
    pub fn head(&self) -> ResponseHead {
        ResponseHead {
            first_byte_ns: self.head_ns,
            status: self.status,
        }
    }

    /// The `grpc-status` field of a head or of trailers
    /// ([`Event::Headers`](crate::h2::Event::Headers) and
    /// [`Event::Trailers`](crate::h2::Event::Trailers) carry it): engines pass
    /// it on for both events; `None` (no such field) changes nothing, a
    /// later value replaces an earlier one. Only a gRPC exchange uses it.
    pub fn on_grpc_status(&mut self, grpc_status: Option<u32>) {
        if grpc_status.is_some() {
            self.grpc_status = grpc_status;
        }
    }

    /// True once the head arrived.
    pub fn has_head(&self) -> bool {
        self.status.is_some()
    }

    /// Body bytes of the stream arrived at `now_ns`; gaps between content
    /// chunks go into `gaps` (the caller's slice, as for
    /// [`Exchange`](crate::exchange::Exchange)).
    pub fn on_data(&mut self, now_ns: u64, mut data: &[u8], gaps: &mut [u64]) {
        if let Some(c) = self.check {
            self.check_state.body(c, data);
        }
        if !self.decoding {
            return;
        }
        while !data.is_empty() {
            let (n, event) = self.sse.feed(data);
            data = &data[n..];
            if let Some(e) = event {
                self.apply(now_ns, e, gaps);
            }
            if n == 0 && event.is_none() {
                break;
            }
        }
    }

    /// The stream ended cleanly at `now_ns` (END_STREAM on a head, DATA or
    /// trailers): a final event without its blank line is dispatched.
    pub fn on_end(&mut self, now_ns: u64, gaps: &mut [u64]) {
        if self.decoding {
            if let Ok(Some(e)) = self.sse.finish() {
                self.apply(now_ns, e, gaps);
            }
        }
        self.timing.on_end(now_ns);
    }

    /// How a reset stream ends, whatever the code: reset by the server
    /// (refused, nothing processed) or cancelled before its head is a
    /// reset; after an event stream's head, a cut stream.
    pub fn on_reset(&self) -> ErrorKind {
        if self.expect_stream && self.status.is_some() {
            ErrorKind::StreamCut
        } else {
            ErrorKind::Reset
        }
    }

    /// How the ended stream went, borrowing its timing and the gaps written
    /// into `gaps`: the same rules as [`Exchange::finish`](crate::exchange::Exchange::finish).
    /// A gRPC exchange ends as [`Finish::for_grpc`] says.
    pub fn finish<'a>(&'a self, gaps: &'a [u64]) -> Finish<'a> {
        let verdict = self.check.and_then(|c| self.check_state.verdict(c));
        if self.grpc {
            return Finish::for_grpc(self.status, self.grpc_status).checked(
                self.check,
                self.status,
                verdict,
            );
        }
        Finish::for_ended(
            self.status,
            self.event_stream,
            self.stream_error,
            self.expect_stream,
            &self.timing,
            &gaps[..self.gaps.min(gaps.len())],
        )
        .checked(self.check, self.status, verdict)
    }

    /// Gaps that did not fit in the caller's slice, over this slot's life.
    pub fn dropped_gaps(&self) -> u64 {
        self.dropped_gaps
    }

    fn apply(&mut self, now_ns: u64, e: SseEvent, gaps: &mut [u64]) {
        match e.kind {
            SseKind::Data => {
                let facts = self.sse.facts();
                if e.content || facts.choices {
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
                if let Some(n) = e.usage_tokens {
                    self.timing.on_usage(n);
                }
            }
            SseKind::Done => self.timing.on_done(now_ns),
            SseKind::Error => self.stream_error = true,
            SseKind::Comment => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_statuses() {
        let mut s = StreamExchange::new(false);
        s.begin(0, 1);
        s.on_head(5, 200, false);
        s.on_data(6, b"hello", &mut []);
        s.on_end(7, &mut []);
        assert_eq!(s.finish(&[]), Finish::Ok);
        s.begin(10, 11);
        s.on_head(15, 429, false);
        s.on_end(15, &mut []);
        assert_eq!(s.finish(&[]), Finish::Status(429));
        assert_eq!(s.on_reset(), ErrorKind::Reset);
    }

    /// The gRPC rule, exactly: every combination of a status and a
    /// grpc-status given by head, trailers, both or neither.
    #[test]
    fn grpc_classification() {
        use crate::measure::FramingCause;
        let run = |status: u16, head: Option<u32>, trailers: Option<Option<u32>>| {
            let mut s = StreamExchange::for_protocol(Protocol::Grpc);
            s.begin(0, 1);
            s.on_head(2, status, false);
            s.on_grpc_status(head);
            if let Some(t) = trailers {
                s.on_data(3, &[0, 0, 0, 0, 0], &mut []);
                s.on_grpc_status(t);
            }
            s.on_end(4, &mut []);
            match s.finish(&[]) {
                Finish::Ok => Finish::Ok,
                Finish::Status(c) => Finish::Status(c),
                Finish::GrpcStatus(c) => Finish::GrpcStatus(c),
                Finish::Framing(c) => Finish::Framing(c),
                Finish::Error(k) => Finish::Error(k),
                Finish::Check(c) => Finish::Check(c),
                Finish::Stream { .. } => panic!("a gRPC call is no event stream"),
            }
        };
        // Trailers-only responses.
        assert_eq!(run(200, Some(0), None), Finish::Ok);
        assert_eq!(run(200, Some(5), None), Finish::GrpcStatus(5));
        assert_eq!(run(200, Some(16), None), Finish::GrpcStatus(16));
        assert_eq!(run(200, Some(99), None), Finish::GrpcStatus(99));
        // Head, message, trailers.
        assert_eq!(run(200, None, Some(Some(0))), Finish::Ok);
        assert_eq!(run(200, None, Some(Some(14))), Finish::GrpcStatus(14));
        // The trailers' status is the call's.
        assert_eq!(run(200, Some(0), Some(Some(2))), Finish::GrpcStatus(2));
        assert_eq!(run(200, Some(2), Some(None)), Finish::GrpcStatus(2));
        // No grpc-status at all (or none that parsed): not a gRPC answer.
        let no_status = Finish::Framing(FramingCause::NoGrpcStatus);
        assert_eq!(run(200, None, None), no_status);
        assert_eq!(run(200, None, Some(None)), no_status);
        // Not 200: the HTTP status counts, whatever grpc-status says.
        assert_eq!(run(503, Some(14), None), Finish::Status(503));
        assert_eq!(run(429, None, None), Finish::Status(429));
        assert_eq!(run(204, Some(0), None), Finish::Status(204));
        assert_eq!(run(404, None, Some(Some(0))), Finish::Status(404));
        // The next stream on the slot forgets the previous one's status.
        let mut s = StreamExchange::for_protocol(Protocol::Grpc);
        s.begin(0, 1);
        s.on_head(2, 200, false);
        s.on_grpc_status(Some(0));
        assert_eq!(s.finish(&[]), Finish::Ok);
        s.begin(10, 11);
        s.on_head(12, 200, false);
        s.on_end(13, &mut []);
        assert_eq!(s.finish(&[]), no_status);
        // A reset stream is a reset, as for any request.
        assert_eq!(s.on_reset(), ErrorKind::Reset);
        // Other protocols ignore grpc-status.
        let mut s = StreamExchange::for_protocol(Protocol::Http);
        s.begin(0, 1);
        s.on_head(2, 200, false);
        s.on_grpc_status(Some(14));
        s.on_end(3, &mut []);
        assert_eq!(s.finish(&[]), Finish::Ok);
    }

    #[test]
    fn sse_split_anywhere_and_cut() {
        let body = b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\ndata: [DONE]\n\n";
        for cut in 0..body.len() {
            let mut gaps = [0u64; 4];
            let mut s = StreamExchange::new(true);
            s.begin(0, 0);
            s.on_head(1, 200, true);
            s.on_data(10, &body[..cut], &mut gaps);
            s.on_data(20, &body[cut..], &mut gaps);
            s.on_end(20, &mut gaps);
            let Finish::Stream { timing, .. } = s.finish(&gaps) else {
                panic!()
            };
            assert_eq!(timing.done_ns, Some(20), "cut {cut}");
            assert_eq!(timing.content_chunks, 2);
        }
        let mut s = StreamExchange::new(true);
        s.begin(0, 0);
        s.on_head(1, 200, true);
        assert_eq!(s.on_reset(), ErrorKind::StreamCut);
        let mut s = StreamExchange::new(true);
        s.begin(0, 0);
        s.on_head(1, 200, false);
        assert_eq!(s.finish(&[]), Finish::Error(ErrorKind::NotEventStream));
    }
}
