//! An incremental, allocation-free HTTP/1.1 response parser.
//!
//! [`ResponseParser`] is a sans-IO push parser in the style of `httparse`:
//! the engine keeps a per-connection read buffer and, after each read, calls
//! [`ResponseParser::feed`] on the unconsumed bytes until it returns
//! `(0, None)`. Every call reports exactly how many bytes it consumed; the
//! engine drops that many from the front of its buffer and keeps the rest (a
//! partial head or a partial chunk-size line is simply offered again, with
//! more bytes appended, after the next read). `(0, None)` means "need more
//! bytes": a partial message is a status, not an error.
//!
//! Supported: the status line and up to [`MAX_HEADERS`] headers (parsed by
//! `httparse`; a folded header line is read as spaces, RFC 9112 section
//! 5.2), bodies delimited by `Content-Length`, by
//! `Transfer-Encoding: chunked` (chunk extensions and trailers are accepted
//! and skipped) or by the end of the connection ("read until close", finished
//! by [`ResponseParser::finish_eof`]); interim `1xx` responses are skipped;
//! `204`, `304` and responses to `HEAD` ([`ResponseParser::expect_no_body`])
//! have no body; keep-alive follows HTTP/1.1 (persistent unless
//! `Connection: close`) and HTTP/1.0 (closed unless `Connection: keep-alive`).
//!
//! Body bytes are returned zero-copy, de-chunked, as sub-slices of the input.
//! A [`Event::Body`] slice always ends exactly at the consumed count:
//! `body == &input[consumed - body.len()..consumed]`. Any split of a response
//! into slices yields the same event sequence and the same concatenated body.
//!
//! ```
//! use metronome_core::http::{Event, ResponseParser};
//!
//! let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
//! let mut parser = ResponseParser::new();
//! assert_eq!(
//!     parser.feed(wire),
//!     Ok((38, Some(Event::Head { status: 200, keep_alive: true, event_stream: false })))
//! );
//! assert_eq!(parser.feed(&wire[38..]), Ok((5, Some(Event::Body(b"hello")))));
//! assert_eq!(parser.feed(&[]), Ok((0, Some(Event::End))));
//! assert_eq!(parser.feed(&[]), Ok((0, None)));
//! ```

use core::fmt;
use core::mem::MaybeUninit;

use crate::head::{trim, ResponseFields};

/// The largest number of headers a response head may carry; more gives
/// [`ParseError::HeadTooLarge`].
pub const MAX_HEADERS: usize = 256;

/// The default largest response head (status line, headers and the blank
/// line), in bytes: 32 KiB (`--max-header-bytes` changes it).
pub const DEFAULT_MAX_HEAD: usize = 32 * 1024;

/// Why a response could not be decoded. Every variant ends the connection:
/// the engine counts the response as malformed and replaces the connection.
///
/// # Example
/// ```
/// use metronome_core::http::{ParseError, ResponseParser};
/// let e = ResponseParser::new().feed(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").unwrap_err();
/// assert_eq!(e, ParseError::ContentLength);
/// assert_eq!(e.to_string(), "invalid or conflicting Content-Length");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseError {
    /// The status line or a header was malformed (bad version, status code,
    /// header name or value, line ending). The target does not speak
    /// HTTP/1.x on this port (TLS? HTTP/2 prior knowledge?): check the URL.
    Http(httparse::Error),
    /// The response head was larger than the configured maximum
    /// ([`ResponseParser::with_max_head`]) or had more than [`MAX_HEADERS`]
    /// headers; a trailer line was longer than the same maximum. Raise the
    /// maximum if the target legitimately sends huge heads.
    HeadTooLarge,
    /// A chunk-size line was not valid: no hexadecimal digits, a size that
    /// does not fit in 64 bits, a bad character after the size, or a line
    /// longer than the head maximum. The body is not valid chunked encoding.
    ChunkSize,
    /// The CRLF after a chunk's data was missing: the chunk was longer than
    /// its announced size. The body is not valid chunked encoding.
    ChunkFraming,
    /// `Content-Length` was not a decimal number, or several values
    /// disagreed. The target sent an ambiguous body length.
    ContentLength,
    /// The connection ended before the response was complete (inside the
    /// head, a `Content-Length` body or a chunked body). The target closed
    /// the connection early or crashed.
    UnexpectedEof,
    /// The target answered `101 Switching Protocols`; protocol upgrades are
    /// not supported. Do not send `Upgrade` headers.
    Upgrade,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Http(e) => write!(f, "malformed HTTP response head: {e}"),
            ParseError::HeadTooLarge => f.write_str("HTTP response head too large"),
            ParseError::ChunkSize => f.write_str("invalid chunk-size line in chunked body"),
            ParseError::ChunkFraming => f.write_str("missing CRLF after chunk data"),
            ParseError::ContentLength => f.write_str("invalid or conflicting Content-Length"),
            ParseError::UnexpectedEof => {
                f.write_str("connection closed before the response was complete")
            }
            ParseError::Upgrade => f.write_str("unsupported 101 Switching Protocols response"),
        }
    }
}

impl core::error::Error for ParseError {}

/// One step of a response, borrowed from the input.
///
/// # Example
/// ```
/// use metronome_core::http::{Event, ResponseParser};
/// let wire = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 2\r\n\r\nhi";
/// let mut p = ResponseParser::new();
/// let (n, head) = p.feed(wire).unwrap();
/// assert_eq!(head, Some(Event::Head { status: 200, keep_alive: true, event_stream: true }));
/// assert_eq!(p.feed(&wire[n..]), Ok((2, Some(Event::Body(b"hi")))));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// The final (non-1xx) response head was parsed.
    Head {
        /// The status code, e.g. 200.
        status: u16,
        /// Whether the connection may carry another request after this
        /// response (HTTP version, `Connection` header, and a body that is
        /// not delimited by the end of the connection).
        keep_alive: bool,
        /// Whether `Content-Type` is `text/event-stream`.
        event_stream: bool,
    },
    /// Body bytes, de-chunked: a sub-slice of the input that ends exactly at
    /// the consumed count. Never empty.
    Body(&'a [u8]),
    /// The response is complete. Call [`ResponseParser::reset`] before
    /// parsing the next response on the same connection.
    End,
}

/// Where the parser is inside a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Waiting for a complete status line and headers.
    Head,
    /// A `Content-Length` body (or no body) with this many bytes left;
    /// 0 means `End` is due.
    Length(u64),
    /// Waiting for a chunk-size line.
    ChunkSize,
    /// Inside a chunk with this many data bytes left (never 0).
    ChunkData(u64),
    /// Waiting for the CRLF after a chunk's data.
    ChunkCrlf,
    /// Inside the trailer section after the last chunk.
    Trailers,
    /// The body runs until the connection closes.
    UntilClose,
    /// `End` was returned; waiting for `reset`.
    Done,
    /// An error was returned; it is returned again.
    Failed(ParseError),
}

/// How the body of a response is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    Length(u64),
    Chunked,
    UntilClose,
}

/// An incremental HTTP/1.1 response parser. See the [module docs](self).
///
/// # Example
/// ```
/// use metronome_core::http::{Event, ResponseParser};
/// // The head arrives in two reads; the first is not consumed.
/// let wire = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
/// let mut p = ResponseParser::new();
/// assert_eq!(p.feed(&wire[..10]), Ok((0, None)));
/// assert_eq!(p.feed(wire), Ok((45, Some(Event::Head { status: 404, keep_alive: true, event_stream: false }))));
/// assert_eq!(p.feed(&[]), Ok((0, Some(Event::End))));
/// ```
#[derive(Clone, Debug)]
pub struct ResponseParser {
    state: State,
    max_head: usize,
    no_body: bool,
    /// `--check-header`: the field the head is scanned for.
    header_check: Option<crate::check::HeaderCheck>,
    /// The last final head held a field [`ResponseParser::header_check`]
    /// accepts.
    header_ok: bool,
}

impl Default for ResponseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl ResponseParser {
    /// A parser with the default head limit, [`DEFAULT_MAX_HEAD`].
    ///
    /// # Example
    /// ```
    /// use metronome_core::http::{Event, ResponseParser};
    /// let mut p = ResponseParser::new();
    /// assert_eq!(p.feed(b"HTTP/1.1 204 No Content\r\n"), Ok((0, None)));
    /// ```
    #[must_use]
    pub const fn new() -> Self {
        Self::with_max_head(DEFAULT_MAX_HEAD)
    }

    /// A parser that rejects response heads (and trailer lines, and
    /// chunk-size lines) longer than `max_head` bytes with
    /// [`ParseError::HeadTooLarge`] (resp. [`ParseError::ChunkSize`]). The
    /// engine's read buffer must be larger than `max_head`, or a legitimate
    /// head could never be offered whole.
    ///
    /// # Example
    /// ```
    /// use metronome_core::http::{ParseError, ResponseParser};
    /// let mut p = ResponseParser::with_max_head(16);
    /// assert_eq!(p.feed(b"HTTP/1.1 200 OK\r\nServer: x\r\n"), Err(ParseError::HeadTooLarge));
    /// ```
    #[must_use]
    pub const fn with_max_head(max_head: usize) -> Self {
        Self {
            state: State::Head,
            max_head,
            no_body: false,
            header_check: None,
            header_ok: false,
        }
    }

    /// Scans every final head for a field `check` accepts (or for none):
    /// [`ResponseParser::header_ok`] tells. Kept across
    /// [`reset`](Self::reset).
    pub fn set_header_check(&mut self, check: Option<crate::check::HeaderCheck>) {
        self.header_check = check;
    }

    /// Whether the last final head held a field the header check accepts.
    ///
    /// ```
    /// use metronome_core::check::HeaderCheck;
    /// use metronome_core::http::ResponseParser;
    /// let mut p = ResponseParser::new();
    /// p.set_header_check(Some(HeaderCheck { name: b"x-served-by", value: Some(b"b") }));
    /// p.feed(b"HTTP/1.1 200 OK\r\nX-Served-By: a\r\nX-Served-By:  b\r\n\r\n").unwrap();
    /// assert!(p.header_ok());
    /// ```
    pub fn header_ok(&self) -> bool {
        self.header_ok
    }

    /// Declares that the current response has no body whatever its headers
    /// say: the request was `HEAD`. Cleared by [`reset`](Self::reset).
    ///
    /// # Example
    /// ```
    /// use metronome_core::http::{Event, ResponseParser};
    /// let mut p = ResponseParser::new();
    /// p.expect_no_body();
    /// let (n, _) = p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n").unwrap();
    /// assert_eq!(n, 39);
    /// assert_eq!(p.feed(&[]), Ok((0, Some(Event::End))));
    /// ```
    pub fn expect_no_body(&mut self) {
        self.no_body = true;
    }

    /// Makes the parser ready for the next response on a keep-alive
    /// connection (also after an error). Keeps the head limit; clears
    /// [`expect_no_body`](Self::expect_no_body).
    ///
    /// # Example
    /// ```
    /// use metronome_core::http::{Event, ResponseParser};
    /// let two = b"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";
    /// let mut p = ResponseParser::new();
    /// assert_eq!(p.feed(two).unwrap().0, 27);
    /// assert_eq!(p.feed(&two[27..]), Ok((0, Some(Event::End))));
    /// p.reset();
    /// assert_eq!(p.feed(&two[27..]).unwrap().0, 27);
    /// ```
    pub fn reset(&mut self) {
        self.state = State::Head;
        self.no_body = false;
        self.header_ok = false;
    }

    /// Whether the parser is waiting for a response head (no final head
    /// has been parsed since the last [`reset`](Self::reset)).
    ///
    /// # Example
    /// ```
    /// use metronome_core::http::ResponseParser;
    /// let mut p = ResponseParser::new();
    /// assert!(p.is_idle());
    /// p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n").unwrap();
    /// assert!(!p.is_idle());
    /// ```
    #[must_use]
    pub fn is_idle(&self) -> bool {
        self.state == State::Head
    }

    /// Feeds the unconsumed bytes of the connection's read buffer. Returns
    /// how many bytes were consumed and at most one event. Call again (with
    /// the input advanced by the consumed count) until it returns
    /// `(0, None)`, which means "need more bytes" (or, after [`Event::End`],
    /// "call [`reset`](Self::reset)").
    ///
    /// The consumed count never exceeds `input.len()`; a [`Event::Body`]
    /// slice is `&input[consumed - body.len()..consumed]`.
    ///
    /// # Errors
    /// A [`ParseError`] for a malformed or oversized head, a bad
    /// `Content-Length`, bad chunked framing, or a `101` response. Once an
    /// error is returned, every later call returns it again until
    /// [`reset`](Self::reset).
    ///
    /// # Example
    /// ```
    /// use metronome_core::http::{Event, ResponseParser};
    /// let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\n\r\n";
    /// let mut p = ResponseParser::new();
    /// let (n, _) = p.feed(wire).unwrap();
    /// assert_eq!(n, 47);
    /// assert_eq!(p.feed(&wire[47..]), Ok((10, Some(Event::Body(b"abc")))));
    /// assert_eq!(p.feed(&wire[57..]), Ok((7, Some(Event::End))));
    /// ```
    pub fn feed<'a>(&mut self, input: &'a [u8]) -> Result<(usize, Option<Event<'a>>), ParseError> {
        let mut pos = 0;
        loop {
            let rest = &input[pos..];
            match self.state {
                State::Head => match self.parse_head(rest) {
                    Err(e) => return Err(self.fail(e)),
                    Ok(None) => return Ok((pos, None)),
                    Ok(Some((n, None))) => pos += n,
                    Ok(Some((n, Some(event)))) => return Ok((pos + n, Some(event))),
                },
                State::Length(0) => {
                    self.state = State::Done;
                    return Ok((pos, Some(Event::End)));
                }
                State::Length(left) => {
                    if rest.is_empty() {
                        return Ok((pos, None));
                    }
                    let take = take_len(left, rest.len());
                    self.state = State::Length(left - take as u64);
                    return Ok((pos + take, Some(Event::Body(&rest[..take]))));
                }
                State::ChunkSize => match self.parse_chunk_size(rest) {
                    Err(e) => return Err(self.fail(e)),
                    Ok(None) => return Ok((pos, None)),
                    Ok(Some((n, size))) => {
                        pos += n;
                        self.state = if size == 0 {
                            State::Trailers
                        } else {
                            State::ChunkData(size)
                        };
                    }
                },
                State::ChunkData(left) => {
                    if rest.is_empty() {
                        return Ok((pos, None));
                    }
                    let take = take_len(left, rest.len());
                    let left = left - take as u64;
                    self.state = if left == 0 {
                        State::ChunkCrlf
                    } else {
                        State::ChunkData(left)
                    };
                    return Ok((pos + take, Some(Event::Body(&rest[..take]))));
                }
                State::ChunkCrlf => match rest {
                    [b'\r', b'\n', ..] => {
                        pos += 2;
                        self.state = State::ChunkSize;
                    }
                    [b'\n', ..] => {
                        pos += 1;
                        self.state = State::ChunkSize;
                    }
                    [] | [b'\r'] => return Ok((pos, None)),
                    _ => return Err(self.fail(ParseError::ChunkFraming)),
                },
                State::Trailers => match memchr::memchr(b'\n', rest) {
                    None if rest.len() > self.max_head => {
                        return Err(self.fail(ParseError::HeadTooLarge))
                    }
                    None => return Ok((pos, None)),
                    Some(i) => {
                        pos += i + 1;
                        if i == 0 || (i == 1 && rest[0] == b'\r') {
                            self.state = State::Done;
                            return Ok((pos, Some(Event::End)));
                        }
                    }
                },
                State::UntilClose => {
                    if rest.is_empty() {
                        return Ok((pos, None));
                    }
                    return Ok((input.len(), Some(Event::Body(rest))));
                }
                State::Done => return Ok((pos, None)),
                State::Failed(e) => return Err(e),
            }
        }
    }

    /// Tells the parser the connection reached end-of-file (after every
    /// buffered byte was fed). A read-until-close body ends here with
    /// [`Event::End`]; after `End` (or an `End` that is due) nothing is
    /// missing. Call until it returns `Ok(None)`.
    ///
    /// # Errors
    /// [`ParseError::UnexpectedEof`] if the response was incomplete (inside
    /// the head, a `Content-Length` or chunked body, or before any byte).
    /// A previous error is returned again.
    ///
    /// # Example
    /// ```
    /// use metronome_core::http::{Event, ParseError, ResponseParser};
    /// let wire = b"HTTP/1.1 200 OK\r\n\r\nall of it";
    /// let mut p = ResponseParser::new();
    /// assert_eq!(p.feed(wire).unwrap().0, 19);
    /// assert_eq!(p.feed(&wire[19..]), Ok((9, Some(Event::Body(b"all of it")))));
    /// assert_eq!(p.finish_eof(), Ok(Some(Event::End)));
    /// assert_eq!(p.finish_eof(), Ok(None));
    ///
    /// let mut q = ResponseParser::new();
    /// q.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nab").unwrap();
    /// assert_eq!(q.finish_eof(), Err(ParseError::UnexpectedEof));
    /// ```
    pub fn finish_eof(&mut self) -> Result<Option<Event<'static>>, ParseError> {
        match self.state {
            State::UntilClose | State::Length(0) => {
                self.state = State::Done;
                Ok(Some(Event::End))
            }
            State::Done => Ok(None),
            State::Failed(e) => Err(e),
            State::Head
            | State::Length(_)
            | State::ChunkSize
            | State::ChunkData(_)
            | State::ChunkCrlf
            | State::Trailers => Err(self.fail(ParseError::UnexpectedEof)),
        }
    }

    fn fail(&mut self, e: ParseError) -> ParseError {
        self.state = State::Failed(e);
        e
    }

    /// Parses one response head from the front of `rest`.
    /// `Ok(None)`: incomplete. `Ok(Some((n, None)))`: an interim 1xx head of
    /// `n` bytes was skipped. `Ok(Some((n, Some(head))))`: the final head.
    fn parse_head<'a>(
        &mut self,
        rest: &[u8],
    ) -> Result<Option<(usize, Option<Event<'a>>)>, ParseError> {
        // Uninitialised header slots: no 2 KiB memset per call.
        let mut headers = [const { MaybeUninit::uninit() }; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut []);
        // A user agent accepts a folded header line (obs-fold) in a response
        // and reads it as spaces (RFC 9112 section 5.2): the value keeps the
        // fold's CR, LF and blanks, which `trim` and the value scans below
        // treat as blanks.
        let mut config = httparse::ParserConfig::default();
        config.allow_obsolete_multiline_headers_in_responses(true);
        // Only the first `max_head` bytes can hold the head: parsing just
        // them makes the verdict (a bad header, or a head too large) the
        // same however the bytes arrived.
        let view = &rest[..rest.len().min(self.max_head)];
        let n = match config.parse_response_with_uninit_headers(&mut response, view, &mut headers) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => {
                return if rest.len() >= self.max_head {
                    Err(ParseError::HeadTooLarge)
                } else {
                    Ok(None)
                };
            }
            Err(httparse::Error::TooManyHeaders) => return Err(ParseError::HeadTooLarge),
            Err(e) => return Err(ParseError::Http(e)),
        };
        let (Some(version), Some(status)) = (response.version, response.code) else {
            return Err(ParseError::Http(httparse::Error::Status));
        };
        if status == 101 {
            return Err(ParseError::Upgrade);
        }
        if (100..200).contains(&status) {
            return Ok(Some((n, None)));
        }
        let head = HeadFacts::scan(response.headers)?;
        if let Some(check) = &self.header_check {
            self.header_ok = response
                .headers
                .iter()
                .any(|h| check.accepts(h.name.as_bytes(), h.value));
        }
        let framing = if self.no_body || status == 204 || status == 304 {
            Framing::Length(0)
        } else if let Some(chunked) = head.transfer_chunked {
            // Transfer-Encoding overrides Content-Length (RFC 9112 6.3);
            // a final coding other than chunked is delimited by close.
            if chunked {
                Framing::Chunked
            } else {
                Framing::UntilClose
            }
        } else if let Some(len) = head.content_length {
            Framing::Length(len)
        } else {
            Framing::UntilClose
        };
        let persistent = if head.close {
            false
        } else if version >= 1 {
            true
        } else {
            head.keep_alive
        };
        let keep_alive = persistent && framing != Framing::UntilClose;
        self.state = match framing {
            Framing::Length(len) => State::Length(len),
            Framing::Chunked => State::ChunkSize,
            Framing::UntilClose => State::UntilClose,
        };
        Ok(Some((
            n,
            Some(Event::Head {
                status,
                keep_alive,
                event_stream: head.event_stream,
            }),
        )))
    }

    /// Parses a chunk-size line `hex [BWS] [; ext] CRLF` from the front of
    /// `rest`. `Ok(None)`: incomplete. `Ok(Some((line_len, size)))`.
    fn parse_chunk_size(&self, rest: &[u8]) -> Result<Option<(usize, u64)>, ParseError> {
        let Some(&first) = rest.first() else {
            return Ok(None);
        };
        if hex_value(first).is_none() {
            return Err(ParseError::ChunkSize);
        }
        let Some(nl) = memchr::memchr(b'\n', rest) else {
            return if rest.len() > self.max_head {
                Err(ParseError::ChunkSize)
            } else {
                Ok(None)
            };
        };
        let line = &rest[..nl];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let mut size: u64 = 0;
        let mut i = 0;
        while let Some(d) = line.get(i).copied().and_then(hex_value) {
            size = size
                .checked_mul(16)
                .and_then(|s| s.checked_add(u64::from(d)))
                .ok_or(ParseError::ChunkSize)?;
            i += 1;
        }
        while matches!(line.get(i), Some(b' ' | b'\t')) {
            i += 1;
        }
        match line.get(i) {
            None | Some(b';') => Ok(Some((nl + 1, size))),
            Some(_) => Err(ParseError::ChunkSize),
        }
    }
}

/// `min(left, available)` as a `usize`.
fn take_len(left: u64, available: usize) -> usize {
    usize::try_from(left).map_or(available, |left| left.min(available))
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// What the headers say about framing and the connection.
#[derive(Default)]
struct HeadFacts {
    content_length: Option<u64>,
    /// `Some(true)` if the final transfer coding is chunked, `Some(false)`
    /// for another final coding, `None` without `Transfer-Encoding`.
    transfer_chunked: Option<bool>,
    close: bool,
    keep_alive: bool,
    event_stream: bool,
}

impl HeadFacts {
    fn scan(headers: &[httparse::Header<'_>]) -> Result<Self, ParseError> {
        let mut facts = HeadFacts::default();
        let mut fields = ResponseFields::default();
        for h in headers {
            let name = h.name.as_bytes();
            fields.field(name, h.value);
            if name.eq_ignore_ascii_case(b"transfer-encoding") {
                // The last non-empty coding of the last header counts.
                if let Some(last) = h
                    .value
                    .split(|&b| b == b',')
                    .map(trim)
                    .rfind(|t| !t.is_empty())
                {
                    facts.transfer_chunked = Some(last.eq_ignore_ascii_case(b"chunked"));
                }
            } else if name.eq_ignore_ascii_case(b"connection") {
                for token in h.value.split(|&b| b == b',').map(trim) {
                    if token.eq_ignore_ascii_case(b"close") {
                        facts.close = true;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") {
                        facts.keep_alive = true;
                    }
                }
            }
        }
        if fields.bad_length {
            return Err(ParseError::ContentLength);
        }
        facts.content_length = fields.content_length;
        facts.event_stream = fields.event_stream;
        Ok(facts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_and_decimal() {
        assert_eq!(trim(b" \tab c\t "), b"ab c");
        assert_eq!(trim(b"   "), b"");
        assert_eq!(trim(b"\r\n  close"), b"close");
        assert_eq!(crate::head::digits(b"0"), Some(0));
        assert_eq!(crate::head::digits(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(crate::head::digits(b"18446744073709551616"), None);
        assert_eq!(crate::head::digits(b""), None);
        assert_eq!(crate::head::digits(b"+5"), None);
        assert_eq!(crate::head::digits(b"5 "), None);
    }

    #[test]
    fn chunk_size_lines() {
        let p = ResponseParser::new();
        type Case = (&'static [u8], Result<Option<(usize, u64)>, ParseError>);
        let table: &[Case] = &[
            (b"", Ok(None)),
            (b"a", Ok(None)),
            (b"a\r\n", Ok(Some((3, 10)))),
            (b"A\n", Ok(Some((2, 10)))),
            (b"ff ; name=\"quoted;value\"\r\n", Ok(Some((26, 255)))),
            (b"10;a;b=c\r\nxyz", Ok(Some((10, 16)))),
            (b"0\r\n", Ok(Some((3, 0)))),
            (b"ffffffffffffffff\r\n", Ok(Some((18, u64::MAX)))),
            (b"10000000000000000\r\n", Err(ParseError::ChunkSize)),
            (b"g\r\n", Err(ParseError::ChunkSize)),
            (b";\r\n", Err(ParseError::ChunkSize)),
            (b" 5\r\n", Err(ParseError::ChunkSize)),
            (b"5x\r\n", Err(ParseError::ChunkSize)),
            (b"5\rx\n", Err(ParseError::ChunkSize)),
        ];
        for (line, want) in table {
            assert_eq!(
                p.parse_chunk_size(line),
                *want,
                "{:?}",
                core::str::from_utf8(line)
            );
        }
    }

    #[test]
    fn connection_tokens() {
        let cases: &[(&[u8], bool)] = &[
            (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true),
            (
                b"HTTP/1.1 200 OK\r\nConnection: Upgrade, CLOSE\r\nContent-Length: 0\r\n\r\n",
                false,
            ),
            (
                b"HTTP/1.1 200 OK\r\nConnection: closed\r\nContent-Length: 0\r\n\r\n",
                true,
            ),
            (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false),
            (
                b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n",
                true,
            ),
            (
                b"HTTP/1.0 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n",
                false,
            ),
        ];
        for (wire, want) in cases {
            let mut p = ResponseParser::new();
            match p.feed(wire) {
                Ok((n, Some(Event::Head { keep_alive, .. }))) => {
                    assert_eq!(n, wire.len());
                    assert_eq!(keep_alive, *want, "{:?}", core::str::from_utf8(wire));
                }
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    #[test]
    fn folded_header_lines_are_read_as_spaces() {
        let wire = b"HTTP/1.1 200 OK\r\nX-Folded: a\r\n  b\r\nConnection: keep-alive,\r\n close\r\n\
                     Content-Type: text/event-stream;\r\n\tcharset=utf-8\r\nContent-Length:\r\n 2\r\n\r\nok";
        let mut p = ResponseParser::new();
        let (n, head) = p.feed(wire).unwrap();
        assert_eq!(
            head,
            Some(Event::Head {
                status: 200,
                keep_alive: false,
                event_stream: true
            })
        );
        assert_eq!(p.feed(&wire[n..]), Ok((2, Some(Event::Body(b"ok")))));
        let mut p = ResponseParser::new();
        assert_eq!(
            p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n 3\r\n\r\n"),
            Err(ParseError::ContentLength)
        );
    }

    #[test]
    fn errors_are_sticky_until_reset() {
        let mut p = ResponseParser::new();
        assert_eq!(
            p.feed(b"HTTX/1.1 200 OK\r\n\r\n"),
            Err(ParseError::Http(httparse::Error::Version))
        );
        assert_eq!(
            p.feed(b"HTTP/1.1 200 OK\r\n\r\n"),
            Err(ParseError::Http(httparse::Error::Version))
        );
        assert_eq!(
            p.finish_eof(),
            Err(ParseError::Http(httparse::Error::Version))
        );
        p.reset();
        assert_eq!(p.feed(b"HTTP/1.1 204 OK\r\n\r\n").map(|(n, _)| n), Ok(19));
    }
}
