//! [`Reader`]: one response, from bytes to measurement events.
//!
//! The reader combines the HTTP parser ([`crate::http::ResponseParser`]) and
//! the SSE decoder ([`crate::sse::SseDecoder`]) so that engines contain no
//! protocol logic: an engine feeds the unconsumed bytes of its connection
//! buffer, drops the consumed count from the front, and turns each
//! [`ReadEvent`] directly into a measurement (time of the first `Content`,
//! gaps between `Content`s, `Usage`, `Done`, `Complete`).
//!
//! The engine loop, for every read (and the same after end-of-file with
//! [`Reader::finish_eof`] in place of `feed`):
//! ```
//! use metronome_core::response::{ReadEvent, Reader};
//!
//! let wire: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
//!     Transfer-Encoding: chunked\r\n\r\n\
//!     30\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n\r\n\
//!     e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n";
//! let mut reader = Reader::new(true);
//! let mut buf = Vec::new();
//! let mut events = Vec::new();
//! for read in wire.chunks(7) {
//!     buf.extend_from_slice(read); // bytes arrive
//!     loop {
//!         let (consumed, event) = reader.feed(&buf).unwrap();
//!         buf.drain(..consumed); // keep the rest at the front
//!         match event {
//!             Some(e) => events.push(e),
//!             None if consumed == 0 => break, // need more bytes
//!             None => {}
//!         }
//!     }
//! }
//! assert_eq!(
//!     events,
//!     [
//!         ReadEvent::Head { status: 200 },
//!         ReadEvent::Content,
//!         ReadEvent::Done,
//!         ReadEvent::Complete { keep_alive: true, done_seen: true },
//!     ]
//! );
//! assert!(buf.is_empty());
//! ```

use core::fmt;

use crate::http::{Event, ParseError, ResponseParser, DEFAULT_MAX_HEAD};
use crate::sse::{SseDecoder, SseError, SseKind};

/// A measurement-level event of one response.
///
/// # Example
/// ```
/// use metronome_core::response::{ReadEvent, Reader};
/// let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 34\r\n\r\ndata: {\"choices\":[{\"text\":\"a\"}]}\n\n";
/// let mut r = Reader::new(true);
/// assert_eq!(r.feed(wire), Ok((39, Some(ReadEvent::Head { status: 200 }))));
/// assert_eq!(r.feed(&wire[39..]), Ok((34, Some(ReadEvent::Content))));
/// // No [DONE]: the engine counts a cut stream.
/// assert_eq!(r.feed(&[]), Ok((0, Some(ReadEvent::Complete { keep_alive: true, done_seen: false }))));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadEvent {
    /// The final response head arrived (the time to first byte of the
    /// response proper; interim 1xx heads are skipped).
    Head {
        /// The status code. Only 2xx bodies are decoded as streams.
        status: u16,
    },
    /// One content chunk of a stream: output (content, reasoning, tool
    /// call or text). [`Reader::facts`] tells more.
    Content,
    /// A data event with non-empty `choices` that carries no output
    /// (role-only, `content: ""`, finish-only). [`Reader::facts`] tells more.
    Chunk,
    /// The stream reported `usage.completion_tokens`.
    Usage(u32),
    /// The stream carried an error event or an error object.
    StreamError,
    /// `data: [DONE]` arrived (the E2E point of a stream).
    Done,
    /// The response was read completely. Call [`Reader::reset`] before the
    /// next response.
    Complete {
        /// Whether the connection may carry the next request.
        keep_alive: bool,
        /// Whether `data: [DONE]` was seen; `false` for a stream response
        /// means the stream was cut. Always `false` for a response whose
        /// body was not decoded as a stream.
        done_seen: bool,
    },
}

/// Why a response could not be read. The connection must be closed.
///
/// # Example
/// ```
/// use metronome_core::http::ParseError;
/// use metronome_core::response::{ReadError, Reader};
/// let e = Reader::new(false).feed(b"HTTP/1.1 101 Switching Protocols\r\n\r\n").unwrap_err();
/// assert_eq!(e, ReadError::Http(ParseError::Upgrade));
/// assert_eq!(e.to_string(), "bad HTTP response: unsupported 101 Switching Protocols response");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadError {
    /// The HTTP framing was bad; see [`ParseError`] for the cause and fix.
    Http(ParseError),
    /// The event stream was bad. Not produced by this version: the SSE
    /// decoder accepts any bytes, and a stream cut before `[DONE]` is
    /// reported as [`ReadEvent::Complete`] with `done_seen: false`, not as
    /// an error. Kept so engines handle one stable error type.
    Sse(SseError),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Http(e) => write!(f, "bad HTTP response: {e}"),
            ReadError::Sse(e) => write!(f, "bad event stream: {e}"),
        }
    }
}

impl core::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            ReadError::Http(e) => Some(e),
            ReadError::Sse(e) => Some(e),
        }
    }
}

impl From<ParseError> for ReadError {
    fn from(e: ParseError) -> Self {
        ReadError::Http(e)
    }
}

impl From<SseError> for ReadError {
    fn from(e: SseError) -> Self {
        ReadError::Sse(e)
    }
}

/// Reads one response at a time from a connection. See the
/// [module docs](self).
///
/// # Example
/// ```
/// use metronome_core::response::{ReadEvent, Reader};
/// let mut r = Reader::new(false);
/// assert_eq!(r.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"), Ok((38, Some(ReadEvent::Head { status: 200 }))));
/// assert_eq!(r.feed(b"ok"), Ok((2, Some(ReadEvent::Complete { keep_alive: true, done_seen: false }))));
/// ```
#[derive(Clone, Debug)]
pub struct Reader {
    http: ResponseParser,
    sse: SseDecoder,
    expect_stream: bool,
    /// The current body goes through the SSE decoder.
    stream: bool,
    /// The current head declared `Content-Type: text/event-stream`.
    event_stream: bool,
    keep_alive: bool,
    /// Body bytes at the front of the next input that the HTTP parser has
    /// already consumed but the SSE decoder has not.
    pending: usize,
    /// An event due before anything else (the second half of a pair).
    queued: Option<ReadEvent>,
    /// `Complete` was produced.
    complete: bool,
    /// The current request's checks ([`Reader::set_check`]).
    check: Option<&'static crate::check::Check>,
    /// What the current response showed them.
    check_state: crate::check::CheckState,
}

impl Reader {
    /// A reader; `expect_stream`: the request asked for an event stream, so
    /// a 2xx body is decoded as SSE (whatever its `Content-Type` says).
    /// Other bodies are skipped. The head limit is
    /// [`DEFAULT_MAX_HEAD`].
    ///
    /// # Example
    /// ```
    /// use metronome_core::response::{ReadEvent, Reader};
    /// let wire = b"HTTP/1.1 429 Too Many Requests\r\nContent-Length: 4\r\n\r\nslow";
    /// let mut r = Reader::new(true);
    /// assert_eq!(r.feed(wire), Ok((53, Some(ReadEvent::Head { status: 429 }))));
    /// assert_eq!(
    ///     r.feed(&wire[53..]),
    ///     Ok((4, Some(ReadEvent::Complete { keep_alive: true, done_seen: false })))
    /// );
    /// ```
    #[must_use]
    pub const fn new(expect_stream: bool) -> Self {
        Self::with_max_head(expect_stream, DEFAULT_MAX_HEAD)
    }

    /// A reader with a head limit of `max_head` bytes (see
    /// [`ResponseParser::with_max_head`]).
    ///
    /// # Example
    /// ```
    /// use metronome_core::http::ParseError;
    /// use metronome_core::response::{ReadError, Reader};
    /// let mut r = Reader::with_max_head(false, 20);
    /// assert_eq!(
    ///     r.feed(b"HTTP/1.1 200 OK\r\nServer: metronome\r\n"),
    ///     Err(ReadError::Http(ParseError::HeadTooLarge))
    /// );
    /// ```
    #[must_use]
    pub const fn with_max_head(expect_stream: bool, max_head: usize) -> Self {
        Self {
            http: ResponseParser::with_max_head(max_head),
            sse: SseDecoder::new(),
            expect_stream,
            stream: false,
            event_stream: false,
            keep_alive: false,
            pending: 0,
            queued: None,
            complete: false,
            check: None,
            check_state: crate::check::CheckState::new(),
        }
    }

    /// The checks of the request whose response comes next (`None`: no
    /// check), kept until changed: its body flows through them as it is
    /// read, never copied ([`crate::check`]).
    pub fn set_check(&mut self, check: Option<&'static crate::check::Check>) {
        self.check = check;
        self.check_state = crate::check::CheckState::new();
        self.http.set_header_check(check.and_then(|c| c.header));
    }

    /// The first header or body check the response read so far failed
    /// (the status is judged apart, [`crate::check::judge`]).
    pub fn check_verdict(&self) -> Option<crate::check::CheckFailure> {
        let check = self.check?;
        let mut state = self.check_state;
        if self.http.header_ok() {
            state.header_passed();
        }
        state.verdict(check)
    }

    /// Declares that the current response has no body: the request was
    /// `HEAD`. Cleared by [`reset`](Self::reset).
    ///
    /// # Example
    /// ```
    /// use metronome_core::response::{ReadEvent, Reader};
    /// let mut r = Reader::new(false);
    /// r.expect_no_body();
    /// assert_eq!(r.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n").unwrap().0, 38);
    /// assert_eq!(r.feed(&[]), Ok((0, Some(ReadEvent::Complete { keep_alive: true, done_seen: false }))));
    /// ```
    pub fn expect_no_body(&mut self) {
        self.http.expect_no_body();
    }

    /// Makes the reader ready for the next response on the same
    /// connection (keeps `expect_stream` and the head limit).
    ///
    /// # Example
    /// ```
    /// use metronome_core::response::{ReadEvent, Reader};
    /// let two = b"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n";
    /// let mut r = Reader::new(false);
    /// assert_eq!(r.feed(two), Ok((27, Some(ReadEvent::Head { status: 204 }))));
    /// assert_eq!(r.feed(&two[27..]), Ok((0, Some(ReadEvent::Complete { keep_alive: true, done_seen: false }))));
    /// assert_eq!(r.feed(&two[27..]), Ok((0, None)));
    /// r.reset();
    /// assert_eq!(r.feed(&two[27..]), Ok((40, Some(ReadEvent::Head { status: 503 }))));
    /// ```
    pub fn reset(&mut self) {
        self.http.reset();
        self.sse.reset();
        self.stream = false;
        self.event_stream = false;
        self.keep_alive = false;
        self.pending = 0;
        self.queued = None;
        self.complete = false;
        self.check_state = crate::check::CheckState::new();
    }

    /// Whether the current response's head declared
    /// `Content-Type: text/event-stream` (false before the head).
    ///
    /// # Example
    /// ```
    /// use metronome_core::response::Reader;
    /// let mut r = Reader::new(true);
    /// r.feed(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n").unwrap();
    /// assert!(!r.event_stream());
    /// ```
    pub fn event_stream(&self) -> bool {
        self.event_stream
    }

    /// Feeds the unconsumed bytes of the connection buffer: `input` must
    /// start with the bytes the previous call did not consume. Returns the
    /// consumed count (`<= input.len()`) and at most one event. Call again
    /// until it returns `(0, None)` ("need more bytes", or after
    /// [`ReadEvent::Complete`], "call [`reset`](Self::reset)").
    ///
    /// # Errors
    /// [`ReadError::Http`] when the response is malformed; the connection
    /// must be closed.
    ///
    /// # Example
    /// ```
    /// use metronome_core::response::{ReadEvent, Reader};
    /// let body = "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}],\"usage\":{\"completion_tokens\":1}}\n\n";
    /// let wire = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len());
    /// let mut r = Reader::new(true);
    /// let (n, head) = r.feed(wire.as_bytes()).unwrap();
    /// assert_eq!(head, Some(ReadEvent::Head { status: 200 }));
    /// let rest = &wire.as_bytes()[n..];
    /// assert_eq!(r.feed(rest), Ok((rest.len(), Some(ReadEvent::Content))));
    /// assert_eq!(r.feed(&[]), Ok((0, Some(ReadEvent::Usage(1)))));
    /// assert_eq!(r.feed(&[]), Ok((0, Some(ReadEvent::Complete { keep_alive: true, done_seen: false }))));
    /// ```
    pub fn feed(&mut self, input: &[u8]) -> Result<(usize, Option<ReadEvent>), ReadError> {
        if let Some(event) = self.queued.take() {
            return Ok((0, Some(event)));
        }
        let mut pos = 0;
        loop {
            if self.pending > 0 {
                let available = self.pending.min(input.len() - pos);
                if available == 0 {
                    return Ok((pos, None));
                }
                let (n, sse) = self.sse.feed(&input[pos..pos + available]);
                pos += n;
                self.pending -= n;
                if let Some(event) = sse.and_then(|e| self.on_sse(e)) {
                    return Ok((pos, Some(event)));
                }
                if n == 0 {
                    return Ok((pos, None));
                }
                continue;
            }
            if self.complete {
                return Ok((pos, None));
            }
            let (n, event) = self.http.feed(&input[pos..])?;
            match event {
                None if n == 0 => return Ok((pos, None)),
                None => pos += n,
                Some(Event::Head {
                    status,
                    keep_alive,
                    event_stream,
                }) => {
                    self.keep_alive = keep_alive;
                    self.event_stream = event_stream;
                    self.stream = self.expect_stream && (200..300).contains(&status);
                    return Ok((pos + n, Some(ReadEvent::Head { status })));
                }
                Some(Event::Body(body)) if self.check.is_some() && self.stream => {
                    if let Some(c) = self.check {
                        self.check_state.body(c, body);
                    }
                    pos += n - body.len();
                    self.pending = body.len();
                }
                Some(Event::Body(body)) if self.check.is_some() => {
                    if let Some(c) = self.check {
                        self.check_state.body(c, body);
                    }
                    pos += n;
                }
                Some(Event::Body(body)) if self.stream => {
                    // The body is the tail of the consumed bytes: hand it
                    // to the SSE decoder from where it starts.
                    pos += n - body.len();
                    self.pending = body.len();
                }
                Some(Event::Body(_)) => pos += n,
                Some(Event::End) => return Ok((pos + n, Some(self.end()))),
            }
        }
    }

    /// The connection reached end-of-file, after `feed` returned
    /// `(0, None)` on the last bytes. Ends a read-until-close body. Call
    /// until it returns `Ok(None)`.
    ///
    /// # Errors
    /// [`ReadError::Http`] with [`ParseError::UnexpectedEof`] when the
    /// response was incomplete.
    ///
    /// # Example
    /// ```
    /// use metronome_core::response::{ReadEvent, Reader};
    /// let wire = b"HTTP/1.0 200 OK\r\n\r\ndata: [DONE]\n";
    /// let mut r = Reader::new(true);
    /// assert_eq!(r.feed(wire), Ok((19, Some(ReadEvent::Head { status: 200 }))));
    /// assert_eq!(r.feed(&wire[19..]), Ok((13, None)));
    /// assert_eq!(r.finish_eof(), Ok(Some(ReadEvent::Done)));
    /// assert_eq!(r.finish_eof(), Ok(Some(ReadEvent::Complete { keep_alive: false, done_seen: true })));
    /// assert_eq!(r.finish_eof(), Ok(None));
    /// ```
    pub fn finish_eof(&mut self) -> Result<Option<ReadEvent>, ReadError> {
        if let Some(event) = self.queued.take() {
            return Ok(Some(event));
        }
        if self.complete {
            return Ok(None);
        }
        self.pending = 0;
        match self.http.finish_eof()? {
            Some(Event::End) => Ok(Some(self.end())),
            _ => Ok(None),
        }
    }

    /// The facts of the data event behind the last [`ReadEvent::Content`],
    /// [`ReadEvent::Chunk`] or [`ReadEvent::Usage`] (valid until the next
    /// call of `feed`).
    ///
    /// # Example
    /// ```
    /// use metronome_core::response::{ReadEvent, Reader};
    /// let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 65\r\n\r\ndata: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
    /// let mut r = Reader::new(true);
    /// let (n, _) = r.feed(wire).unwrap();
    /// assert_eq!(r.feed(&wire[n..]), Ok((65, Some(ReadEvent::Chunk))));
    /// assert!(r.facts().choices && !r.facts().output);
    /// ```
    pub fn facts(&self) -> crate::sse::ChunkFacts {
        self.sse.facts()
    }

    /// Maps one SSE event; a second event (usage after content) is queued.
    fn on_sse(&mut self, event: crate::sse::SseEvent) -> Option<ReadEvent> {
        match event.kind {
            SseKind::Data => match (event.content, event.usage_tokens) {
                (true, usage) => {
                    self.queued = usage.map(ReadEvent::Usage);
                    Some(ReadEvent::Content)
                }
                (false, usage) if self.sse.facts().choices => {
                    self.queued = usage.map(ReadEvent::Usage);
                    Some(ReadEvent::Chunk)
                }
                (false, usage) => usage.map(ReadEvent::Usage),
            },
            SseKind::Done => Some(ReadEvent::Done),
            SseKind::Error => Some(ReadEvent::StreamError),
            SseKind::Comment => None,
        }
    }

    /// The body ended: flush the stream and produce `Complete` (possibly
    /// after a final `Done`).
    fn end(&mut self) -> ReadEvent {
        self.complete = true;
        let first = if self.stream {
            self.sse
                .finish()
                .ok()
                .flatten()
                .and_then(|e| self.on_sse(e))
        } else {
            None
        };
        let complete = ReadEvent::Complete {
            keep_alive: self.keep_alive,
            done_seen: self.stream && self.sse.done_seen(),
        };
        match first {
            Some(event) => {
                self.queued = Some(complete);
                event
            }
            None => complete,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_done_without_blank_line_in_chunked_body() {
        let wire =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nc\r\ndata: [DONE]\r\n0\r\n\r\n";
        let mut r = Reader::new(true);
        assert_eq!(
            r.feed(wire),
            Ok((47, Some(ReadEvent::Head { status: 200 })))
        );
        assert_eq!(wire.len(), 69);
        assert_eq!(r.feed(&wire[47..]), Ok((22, Some(ReadEvent::Done))));
        assert_eq!(
            r.feed(&[]),
            Ok((
                0,
                Some(ReadEvent::Complete {
                    keep_alive: true,
                    done_seen: true
                })
            ))
        );
        assert_eq!(r.feed(&[]), Ok((0, None)));
        assert_eq!(r.finish_eof(), Ok(None));
    }

    #[test]
    fn stream_not_expected_is_skipped() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 14\r\n\r\ndata: [DONE]\n\n";
        let mut r = Reader::new(false);
        let (n, head) = r.feed(wire).unwrap();
        assert_eq!(head, Some(ReadEvent::Head { status: 200 }));
        assert_eq!(
            r.feed(&wire[n..]),
            Ok((
                14,
                Some(ReadEvent::Complete {
                    keep_alive: true,
                    done_seen: false
                })
            ))
        );
    }

    #[test]
    fn eof_before_head_is_an_error() {
        let mut r = Reader::new(true);
        assert_eq!(
            r.finish_eof(),
            Err(ReadError::Http(ParseError::UnexpectedEof))
        );
    }
}
