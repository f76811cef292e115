//! Measurement: [`Recorder`] (one per engine thread, merged exactly),
//! [`StreamTiming`] for one streamed (SSE) response, [`ErrorKind`],
//! [`Interval`] for per-interval reporting, [`ThreadStats`], an engine
//! thread's own cost, and [`Slo`], the bounds that make a request good.
//!
//! Every latency is charged from the request's **intended** send time, so a
//! stall delays the measurement of every request it held back. Failed
//! requests are counted by kind and enter no latency histogram.
//!
//! ```
//! use metronome_core::measure::Recorder;
//! use metronome_core::measure::Slo;
//! let mut r = Recorder::new();
//! let slo = Slo { latency_ns: Some(5_000_000), ..Slo::default() };
//! r.record_scheduled();
//! r.record_sent(0, 1_000);
//! assert!(r.record_ok(0, 1_000, 4_000_000, &slo));
//! assert_eq!((r.ok, r.good), (1, 1));
//! assert_eq!(r.latency.max(), 4_000_000);
//! assert_eq!(r.service_time.max(), 3_999_000);
//! assert_eq!(r.send_lag.max(), 1_000);
//! ```

use core::fmt;

use crate::histogram::Histogram;
use crate::sse::ChunkFacts;

/// Why a sent request failed: every failed request has exactly one kind.
/// (Requests never sent are [`Unsent`], not errors.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorKind {
    /// The connection was reset or closed before the response completed
    /// (and the request could not be retried).
    Reset,
    /// No complete response within the timeout after the send.
    Timeout,
    /// The server answered with a non-success HTTP status.
    Status,
    /// The response's HTTP framing was bad; [`FramingCause`] says how.
    BadFraming,
    /// The response head was over the size or header-count limit
    /// (`--max-header-bytes`).
    TooLarge,
    /// A stream ended (connection closed or response ended) before `data: [DONE]`.
    StreamCut,
    /// The stream carried an error event or error object.
    StreamError,
    /// A stream reached `[DONE]` without a single content chunk.
    NoContent,
    /// A stream was asked for, and a 2xx response came without
    /// `Content-Type: text/event-stream` (a server that ignores `stream: true`).
    NotEventStream,
}

impl ErrorKind {
    /// Number of kinds.
    pub const COUNT: usize = 9;

    /// The kind of a socket error on an established connection, the same
    /// on both engines: a read or write that timed out (or would block
    /// past its deadline) is [`ErrorKind::Timeout`]; anything else (a
    /// reset, a broken pipe, an abort) is [`ErrorKind::Reset`].
    ///
    /// ```
    /// use metronome_core::measure::ErrorKind;
    /// use std::io;
    /// assert_eq!(ErrorKind::of_io(&io::Error::from(io::ErrorKind::TimedOut)), ErrorKind::Timeout);
    /// assert_eq!(ErrorKind::of_io(&io::Error::from_raw_os_error(104)), ErrorKind::Reset); // ECONNRESET
    /// assert_eq!(ErrorKind::of_io(&io::Error::from_raw_os_error(11)), ErrorKind::Timeout); // EAGAIN
    /// ```
    #[cfg(feature = "std")]
    pub fn of_io(e: &std::io::Error) -> ErrorKind {
        match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => ErrorKind::Timeout,
            _ => ErrorKind::Reset,
        }
    }

    /// Every kind, in [`ErrorKind::index`] order.
    pub const ALL: [ErrorKind; ErrorKind::COUNT] = [
        ErrorKind::Reset,
        ErrorKind::Timeout,
        ErrorKind::Status,
        ErrorKind::BadFraming,
        ErrorKind::TooLarge,
        ErrorKind::StreamCut,
        ErrorKind::StreamError,
        ErrorKind::NoContent,
        ErrorKind::NotEventStream,
    ];

    /// The kind's key in reports: `reset`, `timeout`, `status`,
    /// `bad_framing`, `too_large`, `stream_cut`, `stream_error`,
    /// `no_content`, `not_event_stream`.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::ErrorKind;
    /// assert_eq!(ErrorKind::StreamCut.name(), "stream_cut");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            ErrorKind::Reset => "reset",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Status => "status",
            ErrorKind::BadFraming => "bad_framing",
            ErrorKind::TooLarge => "too_large",
            ErrorKind::StreamCut => "stream_cut",
            ErrorKind::StreamError => "stream_error",
            ErrorKind::NoContent => "no_content",
            ErrorKind::NotEventStream => "not_event_stream",
        }
    }

    /// Position in [`ErrorKind::ALL`] and in [`Recorder::errors`].
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::ErrorKind;
    /// for (i, k) in ErrorKind::ALL.iter().enumerate() {
    ///     assert_eq!(k.index(), i);
    /// }
    /// assert_eq!(ErrorKind::NotEventStream.index(), 8);
    /// ```
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// Why a due request was never sent (it is neither ok nor an error).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Unsent {
    /// No connection could be opened for it (refused, unreachable, out of
    /// descriptors).
    Connect,
    /// It waited for a free connection until the run's hard end.
    Timeout,
}

impl Unsent {
    /// Number of reasons.
    pub const COUNT: usize = 2;
    /// Every reason, in index order.
    pub const ALL: [Unsent; Unsent::COUNT] = [Unsent::Connect, Unsent::Timeout];

    /// The reason's key in reports: `connect`, `timeout`.
    pub const fn name(self) -> &'static str {
        match self {
            Unsent::Connect => "connect",
            Unsent::Timeout => "timeout",
        }
    }

    /// Position in [`Unsent::ALL`] and in [`Recorder::unsent`].
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// How a response's HTTP framing was bad ([`ErrorKind::BadFraming`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FramingCause {
    /// The status line or a header was malformed.
    Head,
    /// `Content-Length` was invalid or conflicting.
    ContentLength,
    /// A chunk-size line was invalid.
    ChunkSize,
    /// A chunk's data was not followed by CRLF.
    ChunkFraming,
    /// The server switched protocols (101).
    Upgrade,
    /// The port speaks TLS: the URL needs `https://`.
    Tls,
    /// The port speaks HTTP/2 only.
    Http2,
}

impl FramingCause {
    /// Number of causes.
    pub const COUNT: usize = 7;
    /// Every cause, in index order.
    pub const ALL: [FramingCause; FramingCause::COUNT] = [
        FramingCause::Head,
        FramingCause::ContentLength,
        FramingCause::ChunkSize,
        FramingCause::ChunkFraming,
        FramingCause::Upgrade,
        FramingCause::Tls,
        FramingCause::Http2,
    ];

    /// What a user reads: the cause and, where there is one, the fix.
    pub const fn describe(self) -> &'static str {
        match self {
            FramingCause::Head => "malformed status line or header",
            FramingCause::ContentLength => "invalid or conflicting Content-Length",
            FramingCause::ChunkSize => "invalid chunk-size line",
            FramingCause::ChunkFraming => "missing CRLF after chunk data",
            FramingCause::Upgrade => "unsupported 101 Switching Protocols",
            FramingCause::Tls => "the port speaks TLS: use https://",
            FramingCause::Http2 => "the port speaks HTTP/2 only: metronome speaks HTTP/1.1",
        }
    }

    /// The cause's key in reports.
    pub const fn name(self) -> &'static str {
        match self {
            FramingCause::Head => "head",
            FramingCause::ContentLength => "content_length",
            FramingCause::ChunkSize => "chunk_size",
            FramingCause::ChunkFraming => "chunk_framing",
            FramingCause::Upgrade => "upgrade",
            FramingCause::Tls => "tls",
            FramingCause::Http2 => "http2",
        }
    }

    /// Position in [`FramingCause::ALL`] and in [`Recorder::framing`].
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The slots a stream writes into the caller's gap slice: one per chunk
/// with non-empty `choices` after the first, each a `u64` packing the gap
/// since the previous such chunk, the tokens the chunk carried when the
/// server says so (per-chunk usage, 0 when unknown) and whether it was
/// token-bearing. A plain gap value (high bits clear) reads as a
/// token-bearing chunk of unknown tokens, so a slice of raw gaps is a valid
/// slice of slots.
///
/// ```
/// use metronome_core::measure::slot;
/// let s = slot::pack(30_000_000, 3, true);
/// assert_eq!((slot::gap_ns(s), slot::tokens(s), slot::is_token(s)), (30_000_000, 3, true));
/// assert!(!slot::is_token(slot::pack(5, 0, false)));
/// assert_eq!((slot::gap_ns(42), slot::tokens(42), slot::is_token(42)), (42, 0, true));
/// ```
pub mod slot {
    /// Bits of the gap: up to about 73 minutes (longer gaps saturate).
    pub const GAP_BITS: u32 = 42;
    const GAP_MASK: u64 = (1 << GAP_BITS) - 1;
    const TOKEN_BITS: u32 = 21;
    const TOKEN_MASK: u64 = (1 << TOKEN_BITS) - 1;
    const NOT_TOKEN: u64 = 1 << 63;

    /// Packs a gap, the chunk's tokens (0: unknown; saturates at 2^21 - 1)
    /// and whether the chunk was token-bearing.
    pub const fn pack(gap_ns: u64, tokens: u32, token_bearing: bool) -> u64 {
        let gap = if gap_ns > GAP_MASK { GAP_MASK } else { gap_ns };
        let t = if tokens as u64 > TOKEN_MASK {
            TOKEN_MASK
        } else {
            tokens as u64
        };
        gap | (t << GAP_BITS) | if token_bearing { 0 } else { NOT_TOKEN }
    }

    /// The gap since the previous chunk with `choices`, ns.
    pub const fn gap_ns(slot: u64) -> u64 {
        slot & GAP_MASK
    }

    /// The chunk's tokens, 0 when unknown.
    pub const fn tokens(slot: u64) -> u32 {
        ((slot >> GAP_BITS) & TOKEN_MASK) as u32
    }

    /// Whether the chunk was token-bearing.
    pub const fn is_token(slot: u64) -> bool {
        slot & NOT_TOKEN == 0
    }
}

/// Timing facts of one streamed response, fed by the engine as SSE events
/// arrive. All times are on the engine's clock, in nanoseconds.
///
/// A chunk is **token-bearing** when it carries output (content, reasoning,
/// tool call or text), or when the server reports usage on every chunk
/// (vLLM's `continuous_usage_stats`) and this chunk's
/// `usage.completion_tokens` grew (a `content: ""` chunk whose token the
/// detokenizer held back). docs/metrics.md defines every metric from these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamTiming {
    /// When the request was due on the schedule.
    pub intended_ns: u64,
    /// When the request was actually written.
    pub sent_ns: u64,
    /// Arrival of the first token-bearing chunk.
    pub first_content_ns: Option<u64>,
    /// Arrival of the latest token-bearing chunk (0 before the first).
    pub last_content_ns: u64,
    /// Token-bearing chunks seen so far.
    pub content_chunks: u32,
    /// `usage.completion_tokens`, the latest the server sent.
    pub usage_tokens: Option<u32>,
    /// Arrival of `data: [DONE]`.
    pub done_ns: Option<u64>,
    /// The largest gap between consecutive token-bearing chunks so far.
    pub max_itl_ns: u64,
    /// Arrival of the first answer chunk (content, text or tool call; not
    /// reasoning).
    pub first_answer_ns: Option<u64>,
    /// Arrival of the first chunk with non-empty `choices`.
    pub first_choices_ns: Option<u64>,
    /// Arrival of the latest chunk with non-empty `choices`.
    pub last_choices_ns: u64,
    /// The first chunk with `choices` was token-bearing.
    pub first_choices_token: bool,
    /// Arrival of the first output chunk (guidellm's first token iteration).
    pub first_output_ns: Option<u64>,
    /// Arrival of the latest output chunk.
    pub last_output_ns: u64,
    /// Output chunks (guidellm's token iterations).
    pub output_chunks: u32,
    /// Tokens of the first token-bearing chunk, when per-chunk usage says.
    pub first_tokens: Option<u32>,
    /// Every chunk with `choices` so far carried usage (per-chunk counts
    /// are known).
    pub continuous_usage: bool,
    /// A `finish_reason` arrived.
    pub finish_seen: bool,
    /// The response body ended (with or without `[DONE]`).
    pub end_ns: Option<u64>,
}

impl StreamTiming {
    /// A stream whose request was due at `intended_ns` and sent at `sent_ns`.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::StreamTiming;
    /// let t = StreamTiming::new(5, 7);
    /// assert_eq!((t.intended_ns, t.sent_ns, t.content_chunks), (5, 7, 0));
    /// ```
    pub const fn new(intended_ns: u64, sent_ns: u64) -> Self {
        Self {
            intended_ns,
            sent_ns,
            first_content_ns: None,
            last_content_ns: 0,
            content_chunks: 0,
            usage_tokens: None,
            done_ns: None,
            max_itl_ns: 0,
            first_answer_ns: None,
            first_choices_ns: None,
            last_choices_ns: 0,
            first_choices_token: false,
            first_output_ns: None,
            last_output_ns: 0,
            output_chunks: 0,
            first_tokens: None,
            continuous_usage: true,
            finish_seen: false,
            end_ns: None,
        }
    }

    /// An answer-content chunk arrived at `now_ns` ([`ChunkFacts::CONTENT`]):
    /// see [`on_chunk`](Self::on_chunk). A clock that goes backwards gives
    /// a gap of 0.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::StreamTiming;
    /// let mut t = StreamTiming::new(0, 0);
    /// assert_eq!(t.on_content(120), None);
    /// assert_eq!(t.on_content(150), Some(30));
    /// assert_eq!(t.on_content(190), Some(40));
    /// assert_eq!((t.content_chunks, t.max_itl_ns), (3, 40));
    /// ```
    pub fn on_content(&mut self, now_ns: u64) -> Option<u64> {
        self.on_chunk(now_ns, &ChunkFacts::CONTENT)
    }

    /// A data event with the facts `f` arrived at `now_ns`. Returns the
    /// [`slot`] to keep for it: every chunk with `choices` after the first
    /// one has a slot (the gap since the previous such chunk, its tokens
    /// when known, whether it was token-bearing). The usage it carries is
    /// taken as the latest usage.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::{slot, StreamTiming};
    /// use metronome_core::sse::ChunkFacts;
    /// let role = ChunkFacts { choices: true, ..ChunkFacts::default() };
    /// let mut t = StreamTiming::new(0, 0);
    /// assert_eq!(t.on_chunk(100, &role), None);
    /// let s = t.on_chunk(130, &ChunkFacts::CONTENT).unwrap();
    /// assert_eq!((slot::gap_ns(s), slot::is_token(s)), (30, true));
    /// assert_eq!((t.first_choices_ns, t.first_content_ns), (Some(100), Some(130)));
    /// ```
    pub fn on_chunk(&mut self, now_ns: u64, f: &ChunkFacts) -> Option<u64> {
        let before = self.usage_tokens.unwrap_or(0);
        if f.choices && f.usage_tokens.is_none() {
            self.continuous_usage = false;
        }
        let grew = match f.usage_tokens {
            Some(u) if f.choices && self.continuous_usage => u.saturating_sub(before),
            _ => 0,
        };
        if let Some(u) = f.usage_tokens {
            self.usage_tokens = Some(u);
        }
        let token = f.output || grew > 0;
        if f.output {
            self.output_chunks = self.output_chunks.saturating_add(1);
            self.first_output_ns.get_or_insert(now_ns);
            self.last_output_ns = now_ns;
        }
        if f.answer {
            self.first_answer_ns.get_or_insert(now_ns);
        }
        self.finish_seen |= f.finish;
        if token {
            self.content_chunks = self.content_chunks.saturating_add(1);
            match self.first_content_ns {
                None => {
                    self.first_content_ns = Some(now_ns);
                    self.first_tokens = (grew > 0).then_some(grew);
                }
                Some(_) => {
                    let gap = now_ns.saturating_sub(self.last_content_ns);
                    self.max_itl_ns = self.max_itl_ns.max(gap);
                }
            }
            self.last_content_ns = now_ns;
        }
        if !(f.choices || token) {
            return None;
        }
        let slot = match self.first_choices_ns {
            None => {
                self.first_choices_ns = Some(now_ns);
                self.first_choices_token = token;
                None
            }
            Some(_) => Some(slot::pack(
                now_ns.saturating_sub(self.last_choices_ns),
                grew,
                token,
            )),
        };
        self.last_choices_ns = now_ns;
        slot
    }

    /// The usage chunk reported `completion_tokens`; it takes precedence over
    /// the token-bearing chunk count.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::StreamTiming;
    /// let mut t = StreamTiming::new(0, 0);
    /// t.on_usage(7);
    /// assert_eq!(t.usage_tokens, Some(7));
    /// ```
    pub fn on_usage(&mut self, completion_tokens: u32) {
        self.usage_tokens = Some(completion_tokens);
    }

    /// `data: [DONE]` arrived at `now_ns`.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::StreamTiming;
    /// let mut t = StreamTiming::new(0, 0);
    /// t.on_done(200);
    /// assert_eq!(t.done_ns, Some(200));
    /// ```
    pub fn on_done(&mut self, now_ns: u64) {
        self.done_ns = Some(now_ns);
    }

    /// The response body ended cleanly at `now_ns` (the last chunk of a
    /// chunked body, the `Content-Length`, or the close of a body read
    /// until close). A stream that ends so after a `finish_reason`, without
    /// `[DONE]`, is complete (vLLM's bench, guidellm and the openai SDK
    /// accept it).
    pub fn on_end(&mut self, now_ns: u64) {
        self.end_ns.get_or_insert(now_ns);
    }

    /// The output tokens: `usage.completion_tokens` when sent, else the
    /// token-bearing chunks.
    pub fn tokens(&self) -> u32 {
        self.usage_tokens.unwrap_or(self.content_chunks)
    }

    /// The per-request stream metrics (docs/metrics.md):
    /// - end `D` = `[DONE]`, or the end of the body after a `finish_reason`;
    /// - TTFT = first token-bearing chunk - intended; E2E = `D` - intended;
    /// - tokens = usage when sent, else token-bearing chunks;
    /// - TPOT = (last token-bearing chunk - first) / (tokens - k1), where
    ///   k1 is the first chunk's tokens (per-chunk usage, else 1), for at
    ///   least two token-bearing chunks and tokens > k1; in integer
    ///   nanoseconds rounded down: the decode pace, without the tail;
    /// - tail = `D` - last token-bearing chunk;
    /// - time to first answer = first answer chunk - intended.
    ///
    /// Differences saturate at 0.
    ///
    /// # Errors
    /// - [`ErrorKind::StreamCut`] when neither `[DONE]` nor a `finish_reason`
    ///   and the body's end arrived (checked first).
    /// - [`ErrorKind::NoContent`] when no token-bearing chunk arrived.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::{ErrorKind, StreamSummary, StreamTiming};
    /// const MS: u64 = 1_000_000;
    /// let mut t = StreamTiming::new(0, 0);
    /// assert_eq!(t.summary(), Err(ErrorKind::StreamCut));
    /// for at in [120, 150, 190] {
    ///     t.on_content(at * MS);
    /// }
    /// t.on_usage(3);
    /// t.on_done(200 * MS);
    /// assert_eq!(t.summary(), Ok(StreamSummary {
    ///     ttft_ns: 120 * MS, e2e_ns: 200 * MS, tokens: 3, tpot_ns: Some(35 * MS),
    ///     tail_ns: 10 * MS, ttfat_ns: Some(120 * MS), done: true,
    /// }));
    /// ```
    pub fn summary(&self) -> Result<StreamSummary, ErrorKind> {
        let (end, done) = match (self.done_ns, self.end_ns) {
            (Some(d), _) => (d, true),
            (None, Some(e)) if self.finish_seen => (e, false),
            _ => return Err(ErrorKind::StreamCut),
        };
        let first = self.first_content_ns.ok_or(ErrorKind::NoContent)?;
        let tokens = self.tokens();
        let rest = tokens.saturating_sub(self.first_tokens.unwrap_or(1));
        let tpot_ns = (self.content_chunks >= 2 && rest >= 1)
            .then(|| self.last_content_ns.saturating_sub(first) / u64::from(rest));
        Ok(StreamSummary {
            ttft_ns: first.saturating_sub(self.intended_ns),
            e2e_ns: end.saturating_sub(self.intended_ns),
            tokens,
            tpot_ns,
            tail_ns: end.saturating_sub(self.last_content_ns),
            ttfat_ns: self
                .first_answer_ns
                .map(|a| a.saturating_sub(self.intended_ns)),
            done,
        })
    }
}

/// The metrics of one completed stream, from [`StreamTiming::summary`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamSummary {
    /// Time to first token: first token-bearing chunk - intended.
    pub ttft_ns: u64,
    /// End to end: the end (`[DONE]`, or the body's end after a
    /// `finish_reason`) - intended.
    pub e2e_ns: u64,
    /// Output tokens: `usage.completion_tokens` when sent, else token-bearing chunks.
    pub tokens: u32,
    /// Time per output token after the first chunk: (last token-bearing
    /// chunk - first) / (tokens - first chunk's tokens), rounded down;
    /// `None` for fewer than two token-bearing chunks or no tokens after the
    /// first chunk.
    pub tpot_ns: Option<u64>,
    /// The end - the last token-bearing chunk.
    pub tail_ns: u64,
    /// Time to first answer token (not reasoning) - intended; `None` when
    /// only reasoning came.
    pub ttfat_ns: Option<u64>,
    /// The stream ended with `[DONE]` (false: the body ended after a
    /// `finish_reason`).
    pub done: bool,
}

/// vLLM bench's and guidellm's definitions of the stream metrics, recorded
/// beside metronome's for every successful stream (docs/metrics.md has a
/// table per metric with the source file each was read from). Both peers
/// start the clock at the actual send `S`, not the intended time.
#[derive(Clone, Debug, PartialEq)]
pub struct Peers {
    /// vLLM: first chunk with non-empty `choices` (role-only included) - S.
    pub vllm_ttft: Histogram,
    /// vLLM: every gap between consecutive chunks with non-empty `choices`.
    pub vllm_itl: Histogram,
    /// vLLM: (E2E - TTFT) / (tokens - 1), for tokens > 1.
    pub vllm_tpot: Histogram,
    /// vLLM: last chunk with non-empty `choices` - S (its "E2EL").
    pub vllm_e2e: Histogram,
    /// guidellm: first output chunk (content, reasoning or tool call) - S.
    pub guidellm_ttft: Histogram,
    /// guidellm: first answer chunk - S (its "TTFOT").
    pub guidellm_ttfot: Histogram,
    /// guidellm: (last output chunk - first) / (tokens - 1) per request,
    /// recorded tokens - 1 times (its distribution is weighted so).
    pub guidellm_itl: Histogram,
    /// guidellm: (last output chunk - S) / tokens per request, recorded
    /// tokens times.
    pub guidellm_tpot: Histogram,
    /// guidellm's output tokens: usage, else output chunks.
    pub guidellm_tokens: u64,
}

impl Default for Peers {
    fn default() -> Self {
        Self::new()
    }
}

impl Peers {
    /// Empty histograms.
    pub const fn new() -> Self {
        Self {
            vllm_ttft: Histogram::new(),
            vllm_itl: Histogram::new(),
            vllm_tpot: Histogram::new(),
            vllm_e2e: Histogram::new(),
            guidellm_ttft: Histogram::new(),
            guidellm_ttfot: Histogram::new(),
            guidellm_itl: Histogram::new(),
            guidellm_tpot: Histogram::new(),
            guidellm_tokens: 0,
        }
    }

    /// Records one successful stream of `tokens` output tokens (usage,
    /// else token-bearing chunks: vLLM re-tokenises the text when there is
    /// no usage, which metronome cannot). vLLM's
    /// per-chunk gaps are recorded from the slots by the recorder.
    fn record(&mut self, t: &StreamTiming, tokens: u32) {
        let s = t.sent_ns;
        if let Some(first) = t.first_choices_ns {
            let ttft = first.saturating_sub(s);
            let e2e = t.last_choices_ns.saturating_sub(s);
            self.vllm_ttft.record(ttft);
            self.vllm_e2e.record(e2e);
            if tokens > 1 {
                self.vllm_tpot
                    .record(e2e.saturating_sub(ttft) / u64::from(tokens - 1));
            }
        }
        if let Some(first) = t.first_output_ns {
            let n = t.usage_tokens.unwrap_or(t.output_chunks);
            self.guidellm_tokens = self.guidellm_tokens.saturating_add(u64::from(n));
            self.guidellm_ttft.record(first.saturating_sub(s));
            if n > 1 {
                let itl = t.last_output_ns.saturating_sub(first) / u64::from(n - 1);
                self.guidellm_itl.record_n(itl, u64::from(n - 1));
            }
            if n > 0 {
                let tpot = t.last_output_ns.saturating_sub(s) / u64::from(n);
                self.guidellm_tpot.record_n(tpot, u64::from(n));
            }
        }
        if let Some(a) = t.first_answer_ns {
            self.guidellm_ttfot.record(a.saturating_sub(s));
        }
    }

    /// Adds another recorder's peers, exactly.
    pub fn merge(&mut self, o: &Peers) {
        self.vllm_ttft.merge(&o.vllm_ttft);
        self.vllm_itl.merge(&o.vllm_itl);
        self.vllm_tpot.merge(&o.vllm_tpot);
        self.vllm_e2e.merge(&o.vllm_e2e);
        self.guidellm_ttft.merge(&o.guidellm_ttft);
        self.guidellm_ttfot.merge(&o.guidellm_ttfot);
        self.guidellm_itl.merge(&o.guidellm_itl);
        self.guidellm_tpot.merge(&o.guidellm_tpot);
        self.guidellm_tokens = self.guidellm_tokens.saturating_add(o.guidellm_tokens);
    }
}

/// Service-level objectives: a request is *good* when it succeeded and met
/// every bound that is set. `None` means no bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Slo {
    /// Bound on latency (completion - intended; for streams this is E2E).
    pub latency_ns: Option<u64>,
    /// Bound on time to first token (streams only).
    pub ttft_ns: Option<u64>,
    /// Bound on every inter-token latency of the request (streams only).
    pub itl_ns: Option<u64>,
    /// Bound on time per output token (streams only).
    pub tpot_ns: Option<u64>,
}

impl Slo {
    /// True when no bound is set.
    ///
    /// ```
    /// assert!(metronome_core::measure::Slo::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.latency_ns.is_none()
            && self.ttft_ns.is_none()
            && self.itl_ns.is_none()
            && self.tpot_ns.is_none()
    }
}

/// An engine thread's own cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadStats {
    /// CPU time of the thread (user + system), ns.
    pub cpu_ns: u64,
    /// Time spent busy-waiting before intended sends, ns (part of `cpu_ns`).
    pub spin_ns: u64,
    /// Requests this thread sent.
    pub sent: u64,
}

/// Number of HTTP status codes tracked in [`Recorder::status`]: every
/// three-digit code, 100..=999.
pub const STATUS_CODES: usize = 900;

/// One engine thread's measurements. Merges exactly ([`Recorder::merge`]).
///
/// About 1.1 MiB (nineteen histograms, eight of them the peers'
/// definitions): engines keep it in a `Box` or in their thread state, not in
/// a short-lived stack frame.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorder {
    /// Completion - intended, for every successful request (E2E for streams).
    pub latency: Histogram,
    /// Completion - actual send, for every successful request.
    pub service_time: Histogram,
    /// Actual send - intended, for every sent request.
    pub send_lag: Histogram,
    /// Time to first token, for successful streams.
    pub ttft: Histogram,
    /// Per-token inter-token latency of successful streams: each
    /// token-bearing chunk's gap spread over its tokens
    /// ([`Recorder::record_stream`]).
    pub itl: Histogram,
    /// Every gap between consecutive token-bearing chunks of successful
    /// streams, one value per chunk.
    pub itl_chunk: Histogram,
    /// Time to first answer token (content, text or tool call; reasoning
    /// excluded) - intended, for successful streams that answered.
    pub ttfat: Histogram,
    /// The end of the stream - its last token-bearing chunk.
    pub tail: Histogram,
    /// vLLM bench's and guidellm's definitions, for `--metrics-compat`.
    pub peers: Peers,
    /// Successful streams that ended after a `finish_reason` without
    /// `data: [DONE]`.
    pub ok_without_done: u64,
    /// Time per output token, for successful streams with at least 2 tokens.
    pub tpot: Histogram,
    /// Closed-loop model only: latency with HdrHistogram's coordinated-omission
    /// correction, filled by the engine with
    /// `recorder.corrected.record_corrected(latency_ns, expected_interval_ns)`.
    /// Never filled for open-loop runs.
    pub corrected: Histogram,
    /// Requests due on the schedule (in the measured period).
    pub scheduled: u64,
    /// Requests written to a connection.
    pub sent: u64,
    /// Successful requests (complete responses; for streams, `[DONE]` with content).
    pub ok: u64,
    /// Requests dropped above the in-flight limit.
    pub dropped: u64,
    /// Requests never sent, by [`Unsent::index`] (neither ok nor errors).
    pub unsent: [u64; Unsent::COUNT],
    /// Requests sent a second time on a fresh connection after the reused
    /// one was found closed before any response byte (counted once per
    /// request; the retry is the request's only send in `sent`).
    pub retried: u64,
    /// Connections the server closed while they were idle (a close, a
    /// half-close or a `408`), detected before reuse: charged to no request.
    pub idle_closed: u64,
    /// Connections closed because bytes arrived that no request asked for
    /// (after a complete response, or while idle): charged to no request.
    pub unsolicited: u64,
    /// Requests that timed out (also counted in `errors[Timeout]`).
    pub timeouts: u64,
    /// Successful requests that met every SLO bound that is set.
    pub good: u64,
    /// Output tokens of successful streams.
    pub output_tokens: u64,
    /// The earliest send of a measured request (engine clock, ns from the
    /// run start); `u64::MAX` before the first. Merged by minimum.
    pub first_sent_ns: u64,
    /// The latest completion (success or failure) of a measured request;
    /// 0 before the first. Merged by maximum. With `first_sent_ns` it spans
    /// the real window that rates are divided by.
    pub last_done_ns: u64,
    /// Successful requests that completed after the end of the schedule
    /// (in the grace period), a subset of `ok`.
    pub late_ok: u64,
    /// Output tokens of those late successes, a subset of `output_tokens`.
    pub late_tokens: u64,
    /// Output tokens per successful stream (usage or content chunks, as
    /// [`StreamSummary::tokens`]): the output length distribution.
    pub output_len: Histogram,
    /// Failed requests by kind, indexed by [`ErrorKind::index`].
    pub errors: [u64; ErrorKind::COUNT],
    /// [`ErrorKind::BadFraming`] errors by [`FramingCause::index`].
    pub framing: [u64; FramingCause::COUNT],
    /// Non-success HTTP responses by status code: `status[code - 100]` for
    /// codes 100..=999.
    pub status: [u64; STATUS_CODES],
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

/// `v` meets the bound `b` (no bound is always met).
fn meets(v: u64, b: Option<u64>) -> bool {
    b.map_or(true, |b| v <= b)
}

impl Recorder {
    /// An empty recorder.
    ///
    /// # Example
    /// ```
    /// let r = metronome_core::measure::Recorder::new();
    /// assert_eq!((r.sent, r.errors_total()), (0, 0));
    /// assert!(r.latency.is_empty());
    /// ```
    pub const fn new() -> Self {
        Self {
            latency: Histogram::new(),
            service_time: Histogram::new(),
            send_lag: Histogram::new(),
            ttft: Histogram::new(),
            itl: Histogram::new(),
            tpot: Histogram::new(),
            itl_chunk: Histogram::new(),
            ttfat: Histogram::new(),
            tail: Histogram::new(),
            peers: Peers::new(),
            ok_without_done: 0,
            corrected: Histogram::new(),
            scheduled: 0,
            sent: 0,
            ok: 0,
            dropped: 0,
            unsent: [0; Unsent::COUNT],
            retried: 0,
            idle_closed: 0,
            unsolicited: 0,
            timeouts: 0,
            good: 0,
            output_tokens: 0,
            first_sent_ns: u64::MAX,
            last_done_ns: 0,
            late_ok: 0,
            late_tokens: 0,
            output_len: Histogram::new(),
            errors: [0; ErrorKind::COUNT],
            framing: [0; FramingCause::COUNT],
            status: [0; STATUS_CODES],
        }
    }

    /// A request came due on the schedule.
    ///
    /// # Example
    /// ```
    /// let mut r = metronome_core::measure::Recorder::new();
    /// r.record_scheduled();
    /// assert_eq!(r.scheduled, 1);
    /// ```
    pub fn record_scheduled(&mut self) {
        self.scheduled = self.scheduled.saturating_add(1);
    }

    /// A request due at `intended_ns` was written at `sent_ns`: records the
    /// send lag (`sent - intended`, 0 if the send was early) and counts it.
    ///
    /// # Example
    /// ```
    /// let mut r = metronome_core::measure::Recorder::new();
    /// r.record_sent(1_000, 1_250);
    /// assert_eq!((r.sent, r.send_lag.max()), (1, 250));
    /// ```
    pub fn record_sent(&mut self, intended_ns: u64, sent_ns: u64) {
        self.first_sent_ns = self.first_sent_ns.min(sent_ns);
        self.send_lag.record(sent_ns.saturating_sub(intended_ns));
        self.sent = self.sent.saturating_add(1);
    }

    /// A plain request completed at `done_ns`: records latency (`done -
    /// intended`) and service time (`done - sent`), counts it ok, and counts
    /// it good when it meets `slo.latency_ns`. Returns whether it was good.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::{Recorder, Slo};
    /// let mut r = Recorder::new();
    /// let slo = Slo { latency_ns: Some(100), ..Slo::default() };
    /// assert!(r.record_ok(0, 10, 100, &slo));
    /// assert!(!r.record_ok(0, 10, 101, &slo));
    /// assert_eq!((r.ok, r.good), (2, 1));
    /// ```
    pub fn record_ok(&mut self, intended_ns: u64, sent_ns: u64, done_ns: u64, slo: &Slo) -> bool {
        let latency = done_ns.saturating_sub(intended_ns);
        self.latency.record(latency);
        self.service_time.record(done_ns.saturating_sub(sent_ns));
        self.ok = self.ok.saturating_add(1);
        let good = meets(latency, slo.latency_ns);
        if good {
            self.good = self.good.saturating_add(1);
        }
        good
    }

    /// A streamed request ended. On success ([`StreamTiming::summary`] is
    /// `Ok`) records latency (= E2E), service time (end - sent), TTFT,
    /// time to first answer, the per-token ITL and the per-chunk gaps from
    /// `slots` (the values [`StreamTiming::on_chunk`] returned, see
    /// [`slot`]), TPOT when defined, the tail, the peers' definitions
    /// ([`Peers`]), adds the tokens and counts it ok (and `ok_without_done`
    /// when it ended after a `finish_reason` without `[DONE]`); it is good
    /// when it meets every bound that is set: TTFT, every per-chunk gap
    /// (the largest of `t.max_itl_ns` and the slots), TPOT (met when
    /// undefined) and latency. Returns whether it was good.
    ///
    /// Per-token ITL: each token-bearing chunk after the first contributes
    /// its gap (since the previous token-bearing chunk) spread over its k
    /// tokens: k values of gap / k (rounded down). k is the chunk's
    /// per-chunk usage when every later chunk has one; otherwise the tokens
    /// after the first chunk (tokens - k1) are spread evenly over the
    /// chunks: chunk j of m gets floor(j r / m) - floor((j - 1) r / m) of
    /// the r tokens, and a chunk given none passes its gap on to the next.
    ///
    /// # Errors
    /// The failure of [`StreamTiming::summary`] (`StreamCut` or `NoContent`),
    /// after counting it in `errors`; no histogram is touched.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::{ErrorKind, Recorder, Slo, StreamTiming};
    /// let mut r = Box::new(Recorder::new());
    /// let mut t = StreamTiming::new(0, 0);
    /// let gap = t.on_content(100);
    /// assert_eq!(r.record_stream(&t, &[], &Slo::default()), Err(ErrorKind::StreamCut));
    /// t.on_done(150);
    /// assert_eq!(gap, None);
    /// assert_eq!(r.record_stream(&t, &[], &Slo::default()), Ok(true));
    /// assert_eq!((r.ok, r.output_tokens, r.errors_total()), (1, 1, 1));
    /// assert_eq!(r.ttft.max(), 100);
    /// ```
    pub fn record_stream(
        &mut self,
        t: &StreamTiming,
        slots: &[u64],
        slo: &Slo,
    ) -> Result<bool, ErrorKind> {
        let s = match t.summary() {
            Ok(s) => s,
            Err(kind) => {
                self.record_error(kind);
                return Err(kind);
            }
        };
        let end = t.intended_ns.saturating_add(s.e2e_ns);
        self.latency.record(s.e2e_ns);
        self.service_time.record(end.saturating_sub(t.sent_ns));
        self.ttft.record(s.ttft_ns);
        if let Some(a) = s.ttfat_ns {
            self.ttfat.record(a);
        }
        self.tail.record(s.tail_ns);
        let max_gap = self.record_gaps(t, &s, slots).max(t.max_itl_ns);
        if let Some(tpot) = s.tpot_ns {
            self.tpot.record(tpot);
        }
        self.peers.record(t, s.tokens);
        self.output_tokens = self.output_tokens.saturating_add(u64::from(s.tokens));
        if !s.done {
            self.ok_without_done = self.ok_without_done.saturating_add(1);
        }
        self.output_len.record(u64::from(s.tokens));
        self.ok = self.ok.saturating_add(1);
        let good = meets(s.ttft_ns, slo.ttft_ns)
            && meets(max_gap, slo.itl_ns)
            && s.tpot_ns.map_or(true, |v| meets(v, slo.tpot_ns))
            && meets(s.e2e_ns, slo.latency_ns);
        if good {
            self.good = self.good.saturating_add(1);
        }
        Ok(good)
    }

    /// Records the per-chunk gaps (`itl_chunk`), the per-token ITL (`itl`)
    /// and vLLM's per-chunk gaps from the slots; returns the largest
    /// per-chunk gap.
    fn record_gaps(&mut self, t: &StreamTiming, s: &StreamSummary, slots: &[u64]) -> u64 {
        // Token-bearing gaps: how many, and whether each knows its tokens.
        let (mut m, mut known) = (0u64, true);
        let mut seen = t.first_choices_token;
        for &x in slots {
            if slot::is_token(x) {
                if seen {
                    m += 1;
                    known &= slot::tokens(x) > 0;
                }
                seen = true;
            }
        }
        let mut r = u64::from(s.tokens.saturating_sub(t.first_tokens.unwrap_or(1)));
        // Slots beyond the caller's buffer were dropped (and counted): the
        // kept gaps get their share of the tokens only.
        let all_gaps = u64::from(t.content_chunks.saturating_sub(1));
        if m < all_gaps {
            r = r.saturating_mul(m) / all_gaps;
        }
        let (mut seen, mut acc, mut carry, mut j, mut max_gap) =
            (t.first_choices_token, 0u64, 0u64, 0u64, 0u64);
        for &x in slots {
            let gap = slot::gap_ns(x);
            self.peers.vllm_itl.record(gap);
            acc = acc.saturating_add(gap);
            if !slot::is_token(x) {
                continue;
            }
            if seen {
                self.itl_chunk.record(acc);
                max_gap = max_gap.max(acc);
                j += 1;
                let k = if known {
                    u64::from(slot::tokens(x))
                } else {
                    let share = |i: u64| i.saturating_mul(r).checked_div(m).unwrap_or(0);
                    share(j) - share(j - 1)
                };
                carry = carry.saturating_add(acc);
                if let Some(per_token) = carry.checked_div(k) {
                    self.itl.record_n(per_token, k);
                    carry = 0;
                }
            }
            seen = true;
            acc = 0;
        }
        max_gap
    }

    /// A request failed with `kind`; a `Timeout` also counts in `timeouts`.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::{ErrorKind, Recorder};
    /// let mut r = Recorder::new();
    /// r.record_error(ErrorKind::Timeout);
    /// r.record_error(ErrorKind::Reset);
    /// assert_eq!((r.timeouts, r.errors_total()), (1, 2));
    /// assert_eq!(r.errors[ErrorKind::Reset.index()], 1);
    /// ```
    pub fn record_error(&mut self, kind: ErrorKind) {
        let e = &mut self.errors[kind.index()];
        *e = e.saturating_add(1);
        if kind == ErrorKind::Timeout {
            self.timeouts = self.timeouts.saturating_add(1);
        }
    }

    /// A non-success HTTP status `code`: counts `errors[Status]` and
    /// `status[code - 100]` (every three-digit code; the parser accepts no other).
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::{ErrorKind, Recorder};
    /// let mut r = Recorder::new();
    /// r.record_status(503);
    /// r.record_status(999);
    /// assert_eq!(r.errors[ErrorKind::Status.index()], 2);
    /// assert_eq!((r.status[403], r.status[899]), (1, 1));
    /// ```
    pub fn record_status(&mut self, code: u16) {
        self.record_error(ErrorKind::Status);
        if let Some(s) = usize::from(code)
            .checked_sub(100)
            .and_then(|i| self.status.get_mut(i))
        {
            *s = s.saturating_add(1);
        }
    }

    /// A due request was dropped above the in-flight limit.
    ///
    /// # Example
    /// ```
    /// let mut r = metronome_core::measure::Recorder::new();
    /// r.record_dropped();
    /// assert_eq!(r.dropped, 1);
    /// ```
    pub fn record_dropped(&mut self) {
        self.dropped = self.dropped.saturating_add(1);
    }

    /// A due request was never sent, for `reason`.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::{Recorder, Unsent};
    /// let mut r = Recorder::new();
    /// r.record_unsent(Unsent::Connect);
    /// assert_eq!((r.unsent_total(), r.errors_total()), (1, 0));
    /// ```
    pub fn record_unsent(&mut self, reason: Unsent) {
        let u = &mut self.unsent[reason.index()];
        *u = u.saturating_add(1);
    }

    /// The real window in ns: from the first send to the last completion
    /// (0 when nothing was sent or nothing completed). Throughput is divided
    /// by it, as vLLM's bench and guidellm divide by the wall time until the
    /// last request ended.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::Recorder;
    /// let mut r = Recorder::new();
    /// assert_eq!(r.window_ns(), 0);
    /// r.record_sent(0, 5);
    /// r.record_done_at(905);
    /// assert_eq!(r.window_ns(), 900);
    /// ```
    pub fn window_ns(&self) -> u64 {
        if self.first_sent_ns == u64::MAX {
            0
        } else {
            self.last_done_ns.saturating_sub(self.first_sent_ns)
        }
    }

    /// A measured request completed (or failed) at `done_ns`: extends the
    /// real window.
    pub fn record_done_at(&mut self, done_ns: u64) {
        self.last_done_ns = self.last_done_ns.max(done_ns);
    }

    /// All requests never sent, over every reason.
    pub fn unsent_total(&self) -> u64 {
        self.unsent.iter().fold(0u64, |a, &e| a.saturating_add(e))
    }

    /// A response with bad framing, for `cause`: counts
    /// `errors[BadFraming]` and `framing[cause]`.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::{ErrorKind, FramingCause, Recorder};
    /// let mut r = Recorder::new();
    /// r.record_framing(FramingCause::Tls);
    /// assert_eq!(r.errors[ErrorKind::BadFraming.index()], 1);
    /// assert_eq!(r.framing[FramingCause::Tls.index()], 1);
    /// ```
    pub fn record_framing(&mut self, cause: FramingCause) {
        self.record_error(ErrorKind::BadFraming);
        let f = &mut self.framing[cause.index()];
        *f = f.saturating_add(1);
    }

    /// All failed requests, over every kind.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::{ErrorKind, Recorder};
    /// let mut r = Recorder::new();
    /// r.record_error(ErrorKind::Reset);
    /// r.record_status(500);
    /// assert_eq!(r.errors_total(), 2);
    /// ```
    pub fn errors_total(&self) -> u64 {
        self.errors.iter().fold(0u64, |a, &e| a.saturating_add(e))
    }

    /// Adds everything `other` recorded: histograms and counters, exactly.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::Recorder;
    /// // About 1 MiB each: on the heap, as engines keep them.
    /// let (mut a, mut b) = (Box::new(Recorder::new()), Box::new(Recorder::new()));
    /// a.record_sent(0, 5);
    /// b.record_sent(0, 7);
    /// a.merge(&b);
    /// assert_eq!((a.sent, a.send_lag.count(), a.send_lag.max()), (2, 2, 7));
    /// ```
    pub fn merge(&mut self, other: &Recorder) {
        self.latency.merge(&other.latency);
        self.service_time.merge(&other.service_time);
        self.send_lag.merge(&other.send_lag);
        self.ttft.merge(&other.ttft);
        self.itl.merge(&other.itl);
        self.tpot.merge(&other.tpot);
        self.itl_chunk.merge(&other.itl_chunk);
        self.ttfat.merge(&other.ttfat);
        self.tail.merge(&other.tail);
        self.peers.merge(&other.peers);
        self.ok_without_done = self.ok_without_done.saturating_add(other.ok_without_done);
        self.corrected.merge(&other.corrected);
        self.output_len.merge(&other.output_len);
        for (a, b) in [
            (&mut self.scheduled, other.scheduled),
            (&mut self.sent, other.sent),
            (&mut self.ok, other.ok),
            (&mut self.dropped, other.dropped),
            (&mut self.retried, other.retried),
            (&mut self.idle_closed, other.idle_closed),
            (&mut self.unsolicited, other.unsolicited),
            (&mut self.timeouts, other.timeouts),
            (&mut self.good, other.good),
            (&mut self.output_tokens, other.output_tokens),
            (&mut self.late_ok, other.late_ok),
            (&mut self.late_tokens, other.late_tokens),
        ] {
            *a = a.saturating_add(b);
        }
        self.first_sent_ns = self.first_sent_ns.min(other.first_sent_ns);
        self.last_done_ns = self.last_done_ns.max(other.last_done_ns);
        for (a, &b) in self.unsent.iter_mut().zip(&other.unsent) {
            *a = a.saturating_add(b);
        }
        for (a, &b) in self.framing.iter_mut().zip(&other.framing) {
            *a = a.saturating_add(b);
        }
        for (a, &b) in self.errors.iter_mut().zip(&other.errors) {
            *a = a.saturating_add(b);
        }
        for (a, &b) in self.status.iter_mut().zip(&other.status) {
            *a = a.saturating_add(b);
        }
    }
}

/// A send this much after its intended time is late (1 ms): counted in
/// [`Interval::late`], the measure of whether an interval kept its schedule.
pub const LATE_NS: u64 = 1_000_000;

/// One report interval (`--interval`) of one engine thread: counters and the
/// two histograms the interval rows need. Engines keep one per interval
/// (a `Vec<Interval>` per thread, sized before the clock starts) and merge
/// them across threads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Interval {
    /// Requests sent in the interval.
    pub sent: u64,
    /// Successful requests in the interval.
    pub ok: u64,
    /// Failed requests in the interval.
    pub errors: u64,
    /// Requests never sent, counted in the interval they were given up.
    pub unsent: u64,
    /// Due requests dropped above the in-flight limit, by intended time.
    pub dropped: u64,
    /// Due requests that found no idle connection and waited for one, by
    /// intended time.
    pub waited: u64,
    /// Of `waited`, those that found the pool at its limit
    /// (`max_connections` open or opening): it could not grow for them.
    pub pool_full: u64,
    /// Due requests (scheduled), by intended time.
    pub scheduled: u64,
    /// Requests sent more than [`LATE_NS`] after their intended time, by
    /// intended time (a wait for a connection included).
    pub late: u64,
    /// Of `late`, those whose wait for a connection was the larger part of
    /// their lateness (`Ledger::waited_for`); the rest were late because
    /// the engine itself handled them late.
    pub late_waiting: u64,
    /// CPU time the engine's pacing threads used in the interval (ns),
    /// spin included; sampled about every 50 ms, so a sample straddling a
    /// boundary counts in the interval it was taken in.
    pub cpu_ns: u64,
    /// Of `cpu_ns`, the time spent busy-waiting before sends (ns).
    pub spin_ns: u64,
    /// Latency (completion - intended) of the interval's successful requests.
    pub latency: Histogram,
    /// Send lag (send - intended) of the interval's sent requests.
    pub send_lag: Histogram,
}

impl Interval {
    /// An empty interval.
    ///
    /// # Example
    /// ```
    /// let i = metronome_core::measure::Interval::new();
    /// assert_eq!((i.sent, i.ok, i.errors), (0, 0, 0));
    /// ```
    pub const fn new() -> Self {
        Self {
            sent: 0,
            ok: 0,
            errors: 0,
            unsent: 0,
            dropped: 0,
            waited: 0,
            pool_full: 0,
            scheduled: 0,
            late: 0,
            late_waiting: 0,
            cpu_ns: 0,
            spin_ns: 0,
            latency: Histogram::new(),
            send_lag: Histogram::new(),
        }
    }

    /// Adds the other interval's counters and histograms, exactly.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::Interval;
    /// let (mut a, mut b) = (Interval::new(), Interval::new());
    /// a.ok = 1;
    /// a.latency.record(10);
    /// b.ok = 2;
    /// b.errors = 1;
    /// b.latency.record(30);
    /// a.merge(&b);
    /// assert_eq!((a.ok, a.errors, a.latency.count(), a.latency.max()), (3, 1, 2, 30));
    /// ```
    pub fn merge(&mut self, other: &Interval) {
        self.sent = self.sent.saturating_add(other.sent);
        self.ok = self.ok.saturating_add(other.ok);
        self.errors = self.errors.saturating_add(other.errors);
        self.unsent = self.unsent.saturating_add(other.unsent);
        self.dropped = self.dropped.saturating_add(other.dropped);
        self.waited = self.waited.saturating_add(other.waited);
        self.pool_full = self.pool_full.saturating_add(other.pool_full);
        self.scheduled = self.scheduled.saturating_add(other.scheduled);
        self.late = self.late.saturating_add(other.late);
        self.late_waiting = self.late_waiting.saturating_add(other.late_waiting);
        self.cpu_ns = self.cpu_ns.saturating_add(other.cpu_ns);
        self.spin_ns = self.spin_ns.saturating_add(other.spin_ns);
        self.latency.merge(&other.latency);
        self.send_lag.merge(&other.send_lag);
    }
}

/// One stage of a staged run ([`crate::plan::Profile::Stages`]) of one
/// engine thread: every request counted in the stage of its **intended**
/// time (not its send or completion), so a stage's row holds exactly the
/// requests its part of the schedule offered: `scheduled = sent + dropped +
/// unsent` and `sent = ok + errors`, stage by stage. Merges exactly.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StageTally {
    /// Due requests intended in the stage (measured ones).
    pub scheduled: u64,
    /// Of them, sent.
    pub sent: u64,
    /// Of them, dropped above the in-flight limit.
    pub dropped: u64,
    /// Of them, never sent otherwise.
    pub unsent: u64,
    /// Sent and succeeded.
    pub ok: u64,
    /// Sent and failed.
    pub errors: u64,
    /// Latency (completion - intended) of the successes.
    pub latency: Histogram,
}

impl StageTally {
    /// An empty stage.
    ///
    /// # Example
    /// ```
    /// let s = metronome_core::measure::StageTally::new();
    /// assert_eq!((s.scheduled, s.ok, s.latency.count()), (0, 0, 0));
    /// ```
    pub const fn new() -> Self {
        Self {
            scheduled: 0,
            sent: 0,
            dropped: 0,
            unsent: 0,
            ok: 0,
            errors: 0,
            latency: Histogram::new(),
        }
    }

    /// Adds the other stage's counters and histogram, exactly.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::StageTally;
    /// let (mut a, mut b) = (StageTally::new(), StageTally::new());
    /// a.ok = 1;
    /// a.latency.record(10);
    /// b.ok = 2;
    /// b.latency.record(30);
    /// a.merge(&b);
    /// assert_eq!((a.ok, a.latency.count(), a.latency.max()), (3, 2, 30));
    /// ```
    pub fn merge(&mut self, other: &StageTally) {
        self.scheduled = self.scheduled.saturating_add(other.scheduled);
        self.sent = self.sent.saturating_add(other.sent);
        self.dropped = self.dropped.saturating_add(other.dropped);
        self.unsent = self.unsent.saturating_add(other.unsent);
        self.ok = self.ok.saturating_add(other.ok);
        self.errors = self.errors.saturating_add(other.errors);
        self.latency.merge(&other.latency);
    }
}
