//! [`StreamExchange`]: one request's response on one HTTP/2 stream, the
//! per-stream counterpart of [`Exchange`](crate::exchange::Exchange). An
//! engine keeps one per stream slot of each connection and feeds it the
//! events of its stream ([`Connection`](super::Connection) says which),
//! with the body bytes of each DATA frame
//! ([`Connection::data_of`](super::Connection::data_of)); an OpenAI-style
//! stream's body goes through the same SSE decoder and the same
//! [`StreamTiming`] as over HTTP/1.1, so both protocols record the same
//! facts for the same events at the same times.
//!
//! ```
//! use metronome_core::exchange::Finish;
//! use metronome_core::h2::StreamExchange;
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
use crate::measure::{ErrorKind, FramingCause, StreamTiming};
use crate::sse::{SseDecoder, SseEvent, SseKind};

use super::frame::ErrorCode;

/// One request's response on one stream; reused for every stream the slot
/// carries ([`StreamExchange::begin`]).
#[derive(Clone, Debug)]
pub struct StreamExchange {
    sse: SseDecoder,
    expect_stream: bool,
    status: Option<u16>,
    event_stream: bool,
    /// The body is decoded as SSE (a 2xx head of a stream request).
    decoding: bool,
    stream_error: bool,
    timing: StreamTiming,
    gaps: usize,
    dropped_gaps: u64,
}

impl StreamExchange {
    /// A stream slot's exchange; `expect_stream`: responses are
    /// OpenAI-style event streams (a 2xx body is decoded as SSE).
    pub const fn new(expect_stream: bool) -> Self {
        Self {
            sse: SseDecoder::new(),
            expect_stream,
            status: None,
            event_stream: false,
            decoding: false,
            stream_error: false,
            timing: StreamTiming::new(0, 0),
            gaps: 0,
            dropped_gaps: 0,
        }
    }

    /// The request intended at `intended_ns` left at `sent_ns` (its
    /// HEADERS written): forget the previous stream's facts.
    pub fn begin(&mut self, intended_ns: u64, sent_ns: u64) {
        self.sse.reset();
        self.status = None;
        self.event_stream = false;
        self.decoding = false;
        self.stream_error = false;
        self.timing = StreamTiming::new(intended_ns, sent_ns);
        self.gaps = 0;
    }

    /// The final response head arrived at `now_ns` ([`Event::Headers`](super::Event::Headers)).
    pub fn on_head(&mut self, _now_ns: u64, status: u16, event_stream: bool) {
        self.status = Some(status);
        self.event_stream = event_stream;
        self.decoding = self.expect_stream && (200..300).contains(&status);
    }

    /// True once the head arrived.
    pub fn has_head(&self) -> bool {
        self.status.is_some()
    }

    /// Body bytes of the stream arrived at `now_ns`; gaps between content
    /// chunks go into `gaps` (the caller's slice, as for
    /// [`Exchange`](crate::exchange::Exchange)).
    pub fn on_data(&mut self, now_ns: u64, mut data: &[u8], gaps: &mut [u64]) {
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

    /// How a stream reset by `code` ends: the server refusing it
    /// (`REFUSED_STREAM`, nothing processed) or resetting it before its
    /// head is a reset; after a stream's head, a cut stream.
    pub fn on_reset(&self, code: ErrorCode) -> ErrorKind {
        let _ = code;
        if self.expect_stream && self.status.is_some() {
            ErrorKind::StreamCut
        } else {
            ErrorKind::Reset
        }
    }

    /// How a stream reset by `code` ends, as a [`Finish`]: `remote` says
    /// the server sent the RST_STREAM ([`Event::StreamReset`]'s `remote`).
    /// A response this client reset as malformed (`remote` false,
    /// `PROTOCOL_ERROR`: DATA before its head, no `:status`, ...) is bad
    /// framing ([`FramingCause::Http2Protocol`]), as a malformed HTTP/1.1
    /// reply is; any other reset is [`on_reset`](Self::on_reset)'s kind.
    ///
    /// [`Event::StreamReset`]: super::Event::StreamReset
    ///
    /// ```
    /// use metronome_core::exchange::Finish;
    /// use metronome_core::h2::{ErrorCode, StreamExchange};
    /// use metronome_core::measure::{ErrorKind, FramingCause};
    /// let s = StreamExchange::new(false);
    /// assert_eq!(s.on_stream_reset(ErrorCode::PROTOCOL_ERROR, false), Finish::Framing(FramingCause::Http2Protocol));
    /// assert_eq!(s.on_stream_reset(ErrorCode::PROTOCOL_ERROR, true), Finish::Error(ErrorKind::Reset));
    /// assert_eq!(s.on_stream_reset(ErrorCode::CANCEL, false), Finish::Error(ErrorKind::Reset));
    /// ```
    pub fn on_stream_reset(&self, code: ErrorCode, remote: bool) -> Finish<'static> {
        if !remote && code == ErrorCode::PROTOCOL_ERROR {
            Finish::Framing(FramingCause::Http2Protocol)
        } else {
            Finish::Error(self.on_reset(code))
        }
    }

    /// How a stream still open ends when its connection does, as a
    /// [`Finish`]. `error` is the connection error behind the end, if any:
    /// this client's ([`H2Error::code`] of the error `handle_read`
    /// returned) or else the code of the server's last GOAWAY. A code for
    /// malformed bytes ([`ErrorCode::is_malformed`]: `PROTOCOL_ERROR`,
    /// `FRAME_SIZE_ERROR`, `COMPRESSION_ERROR`) is bad framing
    /// ([`FramingCause::Http2Protocol`]); `None` (the transport closed or
    /// failed) or any other code is a reset, or a cut stream after an SSE
    /// head ([`on_reset`](Self::on_reset)). Both engines end a dead
    /// connection's streams with it.
    ///
    /// [`H2Error::code`]: super::H2Error::code
    ///
    /// ```
    /// use metronome_core::exchange::Finish;
    /// use metronome_core::h2::{ErrorCode, StreamExchange};
    /// use metronome_core::measure::{ErrorKind, FramingCause};
    /// let s = StreamExchange::new(false);
    /// let bad = Finish::Framing(FramingCause::Http2Protocol);
    /// assert_eq!(s.on_connection_end(Some(ErrorCode::PROTOCOL_ERROR)), bad);
    /// assert_eq!(s.on_connection_end(Some(ErrorCode::COMPRESSION_ERROR)), bad);
    /// assert_eq!(s.on_connection_end(Some(ErrorCode::NO_ERROR)), Finish::Error(ErrorKind::Reset));
    /// assert_eq!(s.on_connection_end(None), Finish::Error(ErrorKind::Reset));
    /// ```
    pub fn on_connection_end(&self, error: Option<ErrorCode>) -> Finish<'static> {
        match error {
            Some(code) if code.is_malformed() => Finish::Framing(FramingCause::Http2Protocol),
            _ => Finish::Error(self.on_reset(error.unwrap_or(ErrorCode::CANCEL))),
        }
    }

    /// How the ended stream went, borrowing its timing and the gaps written
    /// into `gaps`: the same rules as [`Exchange::finish`](crate::exchange::Exchange::finish).
    pub fn finish<'a>(&'a self, gaps: &'a [u64]) -> Finish<'a> {
        if self.expect_stream
            && self.status.is_some_and(|s| (200..300).contains(&s))
            && !self.event_stream
        {
            return Finish::Error(ErrorKind::NotEventStream);
        }
        Finish::for_response(self.status, self.stream_error, self.expect_stream).unwrap_or(
            Finish::Stream {
                timing: &self.timing,
                gaps: &gaps[..self.gaps.min(gaps.len())],
            },
        )
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
        assert_eq!(s.on_reset(ErrorCode::CANCEL), ErrorKind::Reset);
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
        assert_eq!(s.on_reset(ErrorCode::INTERNAL_ERROR), ErrorKind::StreamCut);
        let mut s = StreamExchange::new(true);
        s.begin(0, 0);
        s.on_head(1, 200, false);
        assert_eq!(s.finish(&[]), Finish::Error(ErrorKind::NotEventStream));
    }

    #[test]
    fn connection_end_malformed_is_bad_framing() {
        let bad = Finish::Framing(FramingCause::Http2Protocol);
        let mut s = StreamExchange::new(true);
        s.begin(0, 0);
        for code in [
            ErrorCode::PROTOCOL_ERROR,
            ErrorCode::FRAME_SIZE_ERROR,
            ErrorCode::COMPRESSION_ERROR,
        ] {
            assert_eq!(s.on_connection_end(Some(code)), bad);
        }
        for code in [
            ErrorCode::NO_ERROR,
            ErrorCode::INTERNAL_ERROR,
            ErrorCode::FLOW_CONTROL_ERROR,
            ErrorCode::ENHANCE_YOUR_CALM,
            ErrorCode(0xff),
        ] {
            assert_eq!(
                s.on_connection_end(Some(code)),
                Finish::Error(ErrorKind::Reset)
            );
        }
        // After an SSE head: malformed bytes still bad framing, else cut.
        s.on_head(1, 200, true);
        assert_eq!(s.on_connection_end(Some(ErrorCode::PROTOCOL_ERROR)), bad);
        assert_eq!(
            s.on_connection_end(None),
            Finish::Error(ErrorKind::StreamCut)
        );
        assert_eq!(s.on_stream_reset(ErrorCode::PROTOCOL_ERROR, false), bad);
        assert_eq!(
            s.on_stream_reset(ErrorCode::INTERNAL_ERROR, true),
            Finish::Error(ErrorKind::StreamCut)
        );
    }
}
