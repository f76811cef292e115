//! An allocation-free decoder for OpenAI-style Server-Sent Events streams.
//!
//! [`SseDecoder`] is fed the de-chunked body of a `text/event-stream`
//! response in arbitrary slices and classifies each event:
//!
//! | event | [`SseKind`] | notes |
//! |---|---|---|
//! | `data: [DONE]` | [`Done`](SseKind::Done) | the end of the stream |
//! | `: ping` (a comment line) | [`Comment`](SseKind::Comment) | reported at the end of the line; not content |
//! | `event: error` (with or without data) | [`Error`](SseKind::Error) | |
//! | `data: {"error": ...}` (non-null), `data: {"object": "error", ...}` | [`Error`](SseKind::Error) | |
//! | any other event with data | [`Data`](SseKind::Data) | with `content` and `usage_tokens` |
//!
//! A data event is a **content chunk** (output) when `choices[0].delta.content`,
//! `choices[0].delta.reasoning_content`, `choices[0].delta.reasoning` or
//! `choices[0].text` (completions API) is a non-empty string, or
//! `choices[0].delta.tool_calls` is a non-empty array; a role-only
//! chunk, an empty or `null` content is not. [`SseDecoder::facts`] tells
//! more of each data event ([`ChunkFacts`]: non-empty `choices`, answer
//! versus reasoning, `finish_reason`). It carries **usage** when the
//! top-level `usage` is an object with an integer `completion_tokens` (a
//! `null` usage is not usage). One event can be both.
//!
//! # Design: a streaming classifier, no buffer
//! The decoder never copies the payload: a small resumable JSON scanner
//! (strings skipped with `memchr`, escapes honoured, nesting tracked) walks
//! the `data:` bytes as they arrive and records only the facts above, at the
//! right nesting. So an event may be split across any number of feeds and
//! chunks, and has **no size limit**. Several `data:` lines of one event are
//! joined with `\n` as the SSE specification says (for JSON that is
//! whitespace). Lines end in `\n`, `\r\n` or `\r`; `id:`, `retry:`, other
//! `event:` types and unknown fields are ignored. Keys that contain escape
//! sequences are not recognised (no real server escapes ASCII key names).
//! Invalid JSON never fails: it is classified on what could be seen.
//!
//! Deviations from a browser's `EventSource`, on purpose: `event: error`
//! without data is still dispatched (as an error), a leading byte-order
//! mark is not stripped, and [`SseDecoder::finish`] accepts a final
//! `data: [DONE]` that lacks its blank line.
//!
//! The line framing is this module's; the JSON classification of a data
//! event is its private `openai` module's.
//!
//! ```
//! use metronome_core::sse::{SseDecoder, SseEvent, SseKind};
//!
//! let body = b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n";
//! let mut sse = SseDecoder::new();
//! let (n, event) = sse.feed(body);
//! assert_eq!(n, 48);
//! assert_eq!(event, Some(SseEvent { kind: SseKind::Data, content: true, usage_tokens: None }));
//! assert_eq!(sse.feed(&body[48..]), (14, Some(SseEvent::DONE)));
//! assert_eq!(sse.finish(), Ok(None));
//! ```

use core::fmt;

mod openai;

pub use openai::ChunkFacts;
use openai::{DoneMatch, JsonScan, Small};

/// Why a stream could not be decoded.
///
/// # Example
/// ```
/// use metronome_core::sse::{SseDecoder, SseError};
/// let mut sse = SseDecoder::new();
/// sse.feed(b": ping\n\n");
/// assert_eq!(sse.finish(), Err(SseError::CutBeforeDone));
/// assert_eq!(SseError::CutBeforeDone.to_string(), "event stream ended before data: [DONE]");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SseError {
    /// The body ended before `data: [DONE]`: the server closed the stream
    /// early (crash, timeout, length limit on a proxy). Counted as a cut
    /// stream; the tokens seen so far are still valid.
    CutBeforeDone,
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SseError::CutBeforeDone => f.write_str("event stream ended before data: [DONE]"),
        }
    }
}

impl core::error::Error for SseError {}

/// What kind of event was dispatched.
///
/// # Example
/// ```
/// use metronome_core::sse::{SseDecoder, SseKind};
/// let mut sse = SseDecoder::new();
/// let (_, event) = sse.feed(b"event: error\ndata: {\"message\":\"overloaded\"}\n\n");
/// assert_eq!(event.map(|e| e.kind), Some(SseKind::Error));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SseKind {
    /// A data event: a JSON chunk (content, role-only, usage, ...).
    Data,
    /// `data: [DONE]`: the stream is complete.
    Done,
    /// `event: error`, or a JSON error object.
    Error,
    /// A comment line such as `: ping` (keep-alive); never content.
    Comment,
}

/// One classified event.
///
/// # Example
/// ```
/// use metronome_core::sse::{SseDecoder, SseEvent, SseKind};
/// let chunk = b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3}}\n\n";
/// assert_eq!(
///     SseDecoder::new().feed(chunk),
///     (chunk.len(), Some(SseEvent { kind: SseKind::Data, content: false, usage_tokens: Some(3) }))
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SseEvent {
    /// The kind of event.
    pub kind: SseKind,
    /// A content chunk: a non-empty `choices[0].delta.content` (or `text`,
    /// `reasoning_content`, `reasoning`). Only ever true for
    /// [`SseKind::Data`].
    pub content: bool,
    /// `usage.completion_tokens`, when the chunk carries usage. Only ever
    /// set for [`SseKind::Data`].
    pub usage_tokens: Option<u32>,
}

impl SseEvent {
    /// The `data: [DONE]` event.
    pub const DONE: SseEvent = SseEvent {
        kind: SseKind::Done,
        content: false,
        usage_tokens: None,
    };
    /// A comment line.
    pub const COMMENT: SseEvent = SseEvent {
        kind: SseKind::Comment,
        content: false,
        usage_tokens: None,
    };
    /// An error event.
    pub const ERROR: SseEvent = SseEvent {
        kind: SseKind::Error,
        content: false,
        usage_tokens: None,
    };
    /// A content chunk without usage.
    pub const CONTENT: SseEvent = SseEvent {
        kind: SseKind::Data,
        content: true,
        usage_tokens: None,
    };
    /// A data event that is neither content nor usage (e.g. role-only).
    pub const OTHER: SseEvent = SseEvent {
        kind: SseKind::Data,
        content: false,
        usage_tokens: None,
    };
}

/// Where the decoder is inside the current line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Line {
    /// At the first byte of a line.
    Start,
    /// Reading a field name.
    Name,
    /// Reading the value of this field.
    Value(Field),
}

/// The fields that matter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Data,
    Event,
    Comment,
    Ignored,
}

/// A streaming classifier of an OpenAI-style event stream. See the
/// [module docs](self).
///
/// # Example
/// ```
/// use metronome_core::sse::{SseDecoder, SseEvent};
/// // An event split across two feeds (e.g. two HTTP chunks).
/// let mut sse = SseDecoder::new();
/// assert_eq!(sse.feed(b"data: {\"choices\":[{\"delta\":{\"cont"), (33, None));
/// assert_eq!(sse.feed(b"ent\":\"Hi\"}}]}\r\n\r\n"), (16, Some(SseEvent::CONTENT)));
/// // The event is dispatched at the blank line's CR; its LF is left over.
/// assert_eq!(sse.feed(b"\n"), (1, None));
/// ```
#[derive(Clone, Debug)]
pub struct SseDecoder {
    line: Line,
    /// The previous line ended in `\r`: a following `\n` belongs to it.
    after_cr: bool,
    /// Skip one space at the start of the value.
    skip_space: bool,
    name: Small<8>,
    event_name: Small<8>,
    /// The current event has at least one `data` line.
    has_data: bool,
    /// The current event has `event: error`.
    event_error: bool,
    done: DoneMatch,
    json: JsonScan,
    done_seen: bool,
    facts: ChunkFacts,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    ///
    /// # Example
    /// ```
    /// use metronome_core::sse::SseDecoder;
    /// assert!(!SseDecoder::new().done_seen());
    /// ```
    #[must_use]
    pub const fn new() -> Self {
        Self {
            line: Line::Start,
            after_cr: false,
            skip_space: false,
            name: Small::EMPTY,
            event_name: Small::EMPTY,
            has_data: false,
            event_error: false,
            done: DoneMatch::Matching(0),
            json: JsonScan::NEW,
            done_seen: false,
            facts: ChunkFacts {
                choices: false,
                output: false,
                answer: false,
                finish: false,
                usage_tokens: None,
            },
        }
    }

    /// The facts of the last dispatched [`SseKind::Data`] event (all false
    /// before the first).
    #[must_use]
    pub fn facts(&self) -> ChunkFacts {
        self.facts
    }

    /// Makes the decoder ready for a new stream.
    ///
    /// # Example
    /// ```
    /// use metronome_core::sse::{SseDecoder, SseEvent};
    /// let mut sse = SseDecoder::new();
    /// assert_eq!(sse.feed(b"data: [DONE]\n\n"), (14, Some(SseEvent::DONE)));
    /// sse.reset();
    /// assert!(!sse.done_seen());
    /// ```
    pub fn reset(&mut self) {
        *self = Self::new();
    }

    /// Whether `data: [DONE]` was dispatched.
    ///
    /// # Example
    /// ```
    /// use metronome_core::sse::SseDecoder;
    /// let mut sse = SseDecoder::new();
    /// sse.feed(b"data: [DONE]\n\n");
    /// assert!(sse.done_seen());
    /// ```
    #[must_use]
    pub fn done_seen(&self) -> bool {
        self.done_seen
    }

    /// Feeds the next body bytes. Returns how many were consumed and at
    /// most one event. Without an event everything is consumed (the decoder
    /// keeps its own state, nothing needs to be offered again); with an
    /// event, the bytes after the line that dispatched it are left for the
    /// next call. Call until it returns `(0, None)` (an empty input).
    ///
    /// # Example
    /// ```
    /// use metronome_core::sse::{SseDecoder, SseEvent};
    /// let body = b": ping\n\ndata: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n";
    /// let mut sse = SseDecoder::new();
    /// assert_eq!(sse.feed(body), (7, Some(SseEvent::COMMENT)));
    /// assert_eq!(sse.feed(&body[7..]), (53, Some(SseEvent::OTHER)));
    /// assert_eq!(sse.feed(&body[60..]), (0, None));
    /// // Split anywhere: the same events.
    /// let mut sse = SseDecoder::new();
    /// assert_eq!(sse.feed(&body[..30]), (7, Some(SseEvent::COMMENT)));
    /// assert_eq!(sse.feed(&body[7..30]), (23, None));
    /// assert_eq!(sse.feed(&body[30..]), (30, Some(SseEvent::OTHER)));
    /// ```
    pub fn feed(&mut self, input: &[u8]) -> (usize, Option<SseEvent>) {
        let mut pos = 0;
        while let Some(&b) = input.get(pos) {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    pos += 1;
                    continue;
                }
            }
            match self.line {
                Line::Start => match b {
                    b'\n' | b'\r' => {
                        pos += 1;
                        self.after_cr = b == b'\r';
                        if let Some(event) = self.dispatch() {
                            return (pos, Some(event));
                        }
                    }
                    b':' => {
                        pos += 1;
                        self.line = Line::Value(Field::Comment);
                        self.skip_space = false;
                    }
                    _ => {
                        self.name.clear();
                        self.line = Line::Name;
                    }
                },
                Line::Name => {
                    let rest = &input[pos..];
                    match memchr::memchr3(b':', b'\r', b'\n', rest) {
                        None => {
                            self.name.push(rest);
                            pos = input.len();
                        }
                        Some(i) => {
                            self.name.push(&rest[..i]);
                            let field = match self.name.get() {
                                Some(b"data") => Field::Data,
                                Some(b"event") => Field::Event,
                                _ => Field::Ignored,
                            };
                            self.begin_value(field);
                            self.line = Line::Value(field);
                            // A line without a colon is a field with an
                            // empty value: leave its end for `Value`.
                            self.skip_space = rest[i] == b':';
                            pos += i + usize::from(self.skip_space);
                        }
                    }
                }
                Line::Value(field) => {
                    if self.skip_space {
                        self.skip_space = false;
                        if b == b' ' {
                            pos += 1;
                            continue;
                        }
                    }
                    let rest = &input[pos..];
                    match memchr::memchr2(b'\n', b'\r', rest) {
                        None => {
                            self.value_bytes(field, rest);
                            pos = input.len();
                        }
                        Some(i) => {
                            self.value_bytes(field, &rest[..i]);
                            pos += i + 1;
                            self.after_cr = rest[i] == b'\r';
                            self.line = Line::Start;
                            if let Some(event) = self.end_line(field) {
                                return (pos, Some(event));
                            }
                        }
                    }
                }
            }
        }
        (pos, None)
    }

    /// Ends the stream (the response body is complete). Returns a final
    /// `data: [DONE]` that lacked its blank line, if any; a partial event of
    /// any other kind is discarded. Call until it returns `Ok(None)`.
    ///
    /// # Errors
    /// [`SseError::CutBeforeDone`] if `data: [DONE]` was never seen.
    ///
    /// # Example
    /// ```
    /// use metronome_core::sse::{SseDecoder, SseError, SseEvent};
    /// let mut sse = SseDecoder::new();
    /// assert_eq!(sse.feed(b"data: [DONE]"), (12, None));
    /// assert_eq!(sse.finish(), Ok(Some(SseEvent::DONE)));
    /// assert_eq!(sse.finish(), Ok(None));
    ///
    /// let mut cut = SseDecoder::new();
    /// cut.feed(b"data: {\"choices\":[]}\n\n");
    /// assert_eq!(cut.finish(), Err(SseError::CutBeforeDone));
    /// ```
    pub fn finish(&mut self) -> Result<Option<SseEvent>, SseError> {
        let pending = if self.has_data {
            Some(self.classify())
        } else {
            None
        };
        self.clear_event();
        self.line = Line::Start;
        self.after_cr = false;
        self.skip_space = false;
        match pending {
            Some(event) if event.kind == SseKind::Done => Ok(Some(event)),
            _ if self.done_seen => Ok(None),
            _ => Err(SseError::CutBeforeDone),
        }
    }

    fn begin_value(&mut self, field: Field) {
        match field {
            Field::Data => {
                if self.has_data {
                    self.data_bytes(b"\n");
                }
                self.has_data = true;
            }
            Field::Event => self.event_name.clear(),
            Field::Comment | Field::Ignored => {}
        }
    }

    fn value_bytes(&mut self, field: Field, bytes: &[u8]) {
        match field {
            Field::Data => self.data_bytes(bytes),
            Field::Event => self.event_name.push(bytes),
            Field::Comment | Field::Ignored => {}
        }
    }

    fn data_bytes(&mut self, bytes: &[u8]) {
        if self.done != DoneMatch::Failed {
            self.done.feed(bytes);
        }
        self.json.scan(bytes);
    }

    fn end_line(&mut self, field: Field) -> Option<SseEvent> {
        match field {
            Field::Event => {
                self.event_error = self.event_name.is(b"error");
                None
            }
            Field::Comment => Some(SseEvent::COMMENT),
            Field::Data | Field::Ignored => None,
        }
    }

    /// A blank line: dispatch the current event, if any.
    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = if self.has_data || self.event_error {
            Some(self.classify())
        } else {
            None
        };
        self.clear_event();
        event
    }

    fn classify(&mut self) -> SseEvent {
        self.json.finish();
        if self.event_error || self.json.error {
            SseEvent::ERROR
        } else if self.done == DoneMatch::Matched {
            self.done_seen = true;
            SseEvent::DONE
        } else {
            self.facts = ChunkFacts {
                choices: self.json.choices,
                output: self.json.content,
                answer: self.json.answer,
                finish: self.json.finish,
                usage_tokens: self.json.usage,
            };
            SseEvent {
                kind: SseKind::Data,
                content: self.json.content,
                usage_tokens: self.json.usage,
            }
        }
    }

    fn clear_event(&mut self) {
        self.has_data = false;
        self.event_error = false;
        self.done = DoneMatch::Matching(0);
        self.json = JsonScan::NEW;
    }
}
