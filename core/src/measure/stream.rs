//! One streamed (SSE) response: [`StreamTiming`], its timing facts as the
//! chunks arrive; [`StreamSummary`], the metrics of a completed stream; and
//! [`slot`], the packing of each chunk's gap into the caller's slice.

use crate::sse::ChunkFacts;

use super::kind::ErrorKind;

/// The slots a stream writes into the caller's gap slice: one per chunk
/// with non-empty `choices` after the first, each a `u64` packing the gap
/// since the previous such chunk, the tokens the chunk carried when the
/// server says so (per-chunk usage, 0 when unknown), whether it was
/// token-bearing and whether it was output (content, reasoning, tool call
/// or text: aiperf's "content response"). A plain gap value (high bits
/// clear) reads as an output chunk of unknown tokens, so a slice of raw
/// gaps is a valid slice of slots.
///
/// ```
/// use metronome_core::measure::slot;
/// let s = slot::pack(30_000_000, 3, true, true);
/// assert_eq!((slot::gap_ns(s), slot::tokens(s), slot::is_token(s)), (30_000_000, 3, true));
/// assert!(slot::is_output(s));
/// assert!(!slot::is_token(slot::pack(5, 0, false, false)));
/// // A `content: ""` chunk whose per-chunk usage grew: a token, not output.
/// let held = slot::pack(5, 1, true, false);
/// assert!(slot::is_token(held) && !slot::is_output(held));
/// assert_eq!((slot::gap_ns(42), slot::tokens(42), slot::is_token(42)), (42, 0, true));
/// assert!(slot::is_output(42));
/// ```
pub mod slot {
    /// Bits of the gap: up to about 73 minutes (longer gaps saturate).
    pub const GAP_BITS: u32 = 42;
    const GAP_MASK: u64 = (1 << GAP_BITS) - 1;
    const TOKEN_BITS: u32 = 20;
    const TOKEN_MASK: u64 = (1 << TOKEN_BITS) - 1;
    const NOT_OUTPUT: u64 = 1 << 62;
    const NOT_TOKEN: u64 = 1 << 63;

    /// Packs a gap, the chunk's tokens (0: unknown; saturates at 2^20 - 1),
    /// whether the chunk was token-bearing and whether it was output
    /// (output implies token-bearing: `output` is ignored when
    /// `token_bearing` is false).
    pub const fn pack(gap_ns: u64, tokens: u32, token_bearing: bool, output: bool) -> u64 {
        let gap = if gap_ns > GAP_MASK { GAP_MASK } else { gap_ns };
        let t = if tokens as u64 > TOKEN_MASK {
            TOKEN_MASK
        } else {
            tokens as u64
        };
        let flags = match (token_bearing, output) {
            (false, _) => NOT_TOKEN | NOT_OUTPUT,
            (true, false) => NOT_OUTPUT,
            (true, true) => 0,
        };
        gap | (t << GAP_BITS) | flags
    }

    /// Whether the chunk was output (content, reasoning, tool call or
    /// text), the chunks aiperf times.
    pub const fn is_output(slot: u64) -> bool {
        slot & NOT_OUTPUT == 0
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
    /// Output chunks (guidellm's token iterations, aiperf's content
    /// responses).
    pub output_chunks: u32,
    /// The first chunk with `choices` was output.
    pub first_choices_output: bool,
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
            first_choices_output: false,
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
                self.first_choices_output = f.output;
                None
            }
            Some(_) => Some(slot::pack(
                now_ns.saturating_sub(self.last_choices_ns),
                grew,
                token,
                f.output,
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
