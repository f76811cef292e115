//! Measurement: [`Recorder`] (one per engine thread, merged exactly),
//! [`StreamTiming`] for one streamed (SSE) response, [`ErrorKind`],
//! [`Interval`] for per-interval reporting, and [`ThreadStats`], an engine
//! thread's own cost.
//!
//! Every latency is charged from the request's **intended** send time, so a
//! stall delays the measurement of every request it held back. Failed
//! requests are counted by kind and enter no latency histogram.
//!
//! ```
//! use metronome_core::measure::Recorder;
//! use metronome_core::plan::Slo;
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
use crate::plan::Slo;

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

/// Timing facts of one streamed response, fed by the engine as SSE events
/// arrive. All times are on the engine's clock, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamTiming {
    /// When the request was due on the schedule.
    pub intended_ns: u64,
    /// When the request was actually written.
    pub sent_ns: u64,
    /// Arrival of the first content chunk.
    pub first_content_ns: Option<u64>,
    /// Arrival of the latest content chunk (0 before the first).
    pub last_content_ns: u64,
    /// Content chunks seen so far.
    pub content_chunks: u32,
    /// `usage.completion_tokens`, when the server sent a usage chunk.
    pub usage_tokens: Option<u32>,
    /// Arrival of `data: [DONE]`.
    pub done_ns: Option<u64>,
    /// The largest gap between consecutive content chunks so far.
    pub max_itl_ns: u64,
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
        }
    }

    /// A content chunk arrived at `now_ns`. Returns the inter-token gap since
    /// the previous content chunk, or `None` for the first one. A clock that
    /// goes backwards gives a gap of 0.
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
        self.content_chunks = self.content_chunks.saturating_add(1);
        let gap = match self.first_content_ns {
            None => {
                self.first_content_ns = Some(now_ns);
                None
            }
            Some(_) => {
                let gap = now_ns.saturating_sub(self.last_content_ns);
                self.max_itl_ns = self.max_itl_ns.max(gap);
                Some(gap)
            }
        };
        self.last_content_ns = now_ns;
        gap
    }

    /// The usage chunk reported `completion_tokens`; it takes precedence over
    /// the content-chunk count.
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

    /// The per-request stream metrics. TTFT = first content - intended;
    /// E2E = `[DONE]` - intended; tokens = usage when sent, else content
    /// chunks; TPOT = (E2E - TTFT) / (tokens - 1) for tokens >= 2, in integer
    /// nanoseconds rounded down. Differences saturate at 0.
    ///
    /// # Errors
    /// - [`ErrorKind::StreamCut`] when `[DONE]` never arrived (checked first).
    /// - [`ErrorKind::NoContent`] when no content chunk arrived.
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
    ///     ttft_ns: 120 * MS, e2e_ns: 200 * MS, tokens: 3, tpot_ns: Some(40 * MS),
    /// }));
    /// ```
    pub fn summary(&self) -> Result<StreamSummary, ErrorKind> {
        let done = self.done_ns.ok_or(ErrorKind::StreamCut)?;
        let first = self.first_content_ns.ok_or(ErrorKind::NoContent)?;
        let ttft_ns = first.saturating_sub(self.intended_ns);
        let e2e_ns = done.saturating_sub(self.intended_ns);
        let tokens = self.usage_tokens.unwrap_or(self.content_chunks);
        let tpot_ns = if tokens >= 2 {
            Some(e2e_ns.saturating_sub(ttft_ns) / u64::from(tokens - 1))
        } else {
            None
        };
        Ok(StreamSummary {
            ttft_ns,
            e2e_ns,
            tokens,
            tpot_ns,
        })
    }
}

/// The metrics of one completed stream, from [`StreamTiming::summary`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamSummary {
    /// Time to first token: first content chunk - intended.
    pub ttft_ns: u64,
    /// End to end: `[DONE]` - intended.
    pub e2e_ns: u64,
    /// Output tokens: `usage.completion_tokens` when sent, else content chunks.
    pub tokens: u32,
    /// Time per output token after the first: (E2E - TTFT) / (tokens - 1),
    /// rounded down; `None` for fewer than 2 tokens.
    pub tpot_ns: Option<u64>,
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
/// About 480 KiB (eight histograms): engines keep it in a `Box` or in their
/// thread state, not in a short-lived stack frame.
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
    /// Every gap between consecutive content chunks of successful streams.
    pub itl: Histogram,
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
        self.send_lag.record(sent_ns.saturating_sub(intended_ns));
        self.sent = self.sent.saturating_add(1);
    }

    /// A plain request completed at `done_ns`: records latency (`done -
    /// intended`) and service time (`done - sent`), counts it ok, and counts
    /// it good when it meets `slo.latency_ns`. Returns whether it was good.
    ///
    /// # Example
    /// ```
    /// use metronome_core::{measure::Recorder, plan::Slo};
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

    /// A streamed request ended. On success (`[DONE]` after content) records
    /// latency (= E2E), service time (`[DONE]` - sent), TTFT, every gap of
    /// `itl_gaps_ns` (the values [`StreamTiming::on_content`] returned), TPOT
    /// when defined, adds the tokens and counts it ok; it is good when it
    /// meets every bound that is set: TTFT, every gap (the largest of
    /// `t.max_itl_ns` and `itl_gaps_ns`), TPOT (met when undefined) and
    /// latency. Returns whether it was good.
    ///
    /// # Errors
    /// The failure of [`StreamTiming::summary`] (`StreamCut` or `NoContent`),
    /// after counting it in `errors`; no histogram is touched.
    ///
    /// # Example
    /// ```
    /// use metronome_core::{measure::{ErrorKind, Recorder, StreamTiming}, plan::Slo};
    /// let mut r = Recorder::new();
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
        itl_gaps_ns: &[u64],
        slo: &Slo,
    ) -> Result<bool, ErrorKind> {
        let s = match t.summary() {
            Ok(s) => s,
            Err(kind) => {
                self.record_error(kind);
                return Err(kind);
            }
        };
        self.latency.record(s.e2e_ns);
        let done = t.done_ns.unwrap_or(t.sent_ns);
        self.service_time.record(done.saturating_sub(t.sent_ns));
        self.ttft.record(s.ttft_ns);
        let mut max_gap = t.max_itl_ns;
        for &g in itl_gaps_ns {
            self.itl.record(g);
            max_gap = max_gap.max(g);
        }
        if let Some(tpot) = s.tpot_ns {
            self.tpot.record(tpot);
        }
        self.output_tokens = self.output_tokens.saturating_add(u64::from(s.tokens));
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
    /// let (mut a, mut b) = (Recorder::new(), Recorder::new());
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
        ] {
            *a = a.saturating_add(b);
        }
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
    /// intended time (the pool was exhausted).
    pub waited: u64,
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
        self.cpu_ns = self.cpu_ns.saturating_add(other.cpu_ns);
        self.spin_ns = self.spin_ns.saturating_add(other.spin_ns);
        self.latency.merge(&other.latency);
        self.send_lag.merge(&other.send_lag);
    }
}
