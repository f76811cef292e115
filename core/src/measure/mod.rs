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
//!
//! The files, by concept: `kind.rs` (the error taxonomy), `stream.rs`
//! (stream timing and the gap slots), `peers.rs` (the peers' metric
//! definitions), `interval.rs` (intervals and stages), `named.rs` (one
//! name of a request mix), `samples.rs` (exact samples and their
//! percentiles); the recorder, the
//! thread's own cost and the SLO are here. Everything is re-exported, so
//! each item's path is `metronome_core::measure::Item`.

use crate::histogram::Histogram;

mod interval;
mod kind;
mod named;
mod peers;
mod samples;
mod stream;

pub use interval::{
    Counts, Interval, IntervalMetric, IntervalSink, RecordsAt, StageTally, LATE_NS,
};
pub use kind::{ErrorKind, FramingCause, Unsent};
pub use named::NameTally;
pub use peers::{record_peer_samples, time_to_second_output, PeerValues, Peers};
pub use samples::{linear, nearest_rank, weighted_rank, Exact, ExactSet, SampleSink};
pub use stream::{slot, StreamSummary, StreamTiming};

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

/// Number of `grpc-status` counters in [`Recorder::grpc`]: codes 1 to 16
/// (`CANCELLED` to `UNAUTHENTICATED`) by code, and one for any code above
/// 16 (index 0 is unused: `grpc-status: 0` is a success).
pub const GRPC_CODES: usize = 18;

/// The index in [`Recorder::grpc`] of a code above 16.
pub const GRPC_OTHER: usize = 17;

/// One engine thread's measurements. Merges exactly ([`Recorder::merge`]).
///
/// About 1.4 MiB (twenty-four histograms, thirteen of them the peers'
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
    /// vLLM bench's, guidellm's and aiperf's definitions, for
    /// `--metrics-compat`.
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
    /// Conversations ([`crate::turns`]): how the sessions went.
    pub sessions: crate::turns::Sessions,
    /// Output tokens of those late successes, a subset of `output_tokens`.
    pub late_tokens: u64,
    /// Requests sent at or after the end of the schedule (they waited for
    /// a connection or a `--max-concurrency` slot into the drain), a subset
    /// of `sent`: `sent - late_sent` went out within the schedule.
    pub late_sent: u64,
    /// Output tokens per successful stream (usage or content chunks, as
    /// [`StreamSummary::tokens`]): the output length distribution.
    pub output_len: Histogram,
    /// Input tokens of each measured request sent, from
    /// [`crate::plan::Plan::input_tokens`] (empty when the plan has none):
    /// the input length distribution, one value per send.
    pub input_len: Histogram,
    /// Failed requests by kind, indexed by [`ErrorKind::index`].
    pub errors: [u64; ErrorKind::COUNT],
    /// [`ErrorKind::BadFraming`] errors by [`FramingCause::index`].
    pub framing: [u64; FramingCause::COUNT],
    /// [`ErrorKind::Check`] errors by which check failed
    /// ([`CheckFailure::index`](crate::check::CheckFailure::index)).
    pub checks: [u64; crate::check::CheckFailure::COUNT],
    /// Non-success HTTP responses by status code: `status[code - 100]` for
    /// codes 100..=999.
    pub status: [u64; STATUS_CODES],
    /// gRPC calls answered HTTP `200` that ended with a non-zero
    /// `grpc-status`, by code: `grpc[code]` for 1..=16, `grpc[GRPC_OTHER]`
    /// for any larger code. They sum to `errors[GrpcStatus]`.
    pub grpc: [u64; GRPC_CODES],
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
            sessions: crate::turns::Sessions::new(),
            late_tokens: 0,
            late_sent: 0,
            output_len: Histogram::new(),
            input_len: Histogram::new(),
            errors: [0; ErrorKind::COUNT],
            framing: [0; FramingCause::COUNT],
            checks: [0; crate::check::CheckFailure::COUNT],
            status: [0; STATUS_CODES],
            grpc: [0; GRPC_CODES],
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

    /// Records the per-chunk gaps (`itl_chunk`), the per-token ITL (`itl`),
    /// vLLM's per-chunk gaps and aiperf's gaps between output chunks (the
    /// first of them is aiperf's time to second token) from the slots;
    /// returns the largest per-chunk gap.
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
        let (mut out_seen, mut out_acc) = (t.first_choices_output, 0u64);
        if let Some(v) = peers::time_to_second_output(t, slots) {
            self.peers.aiperf_ttst.record(v);
        }
        for &x in slots {
            let gap = slot::gap_ns(x);
            self.peers.vllm_itl.record(gap);
            out_acc = out_acc.saturating_add(gap);
            if slot::is_output(x) {
                if out_seen {
                    self.peers.aiperf_icl.record(out_acc);
                }
                out_seen = true;
                out_acc = 0;
            }
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

    /// A gRPC call answered HTTP `200` ended with `grpc-status: code`,
    /// not 0: counts `errors[GrpcStatus]` and `grpc[code]` (or
    /// `grpc[GRPC_OTHER]` above 16). A code of 0 is a success, not an
    /// error: the caller records it with [`Recorder::record_ok`]; here it
    /// counts as `GRPC_OTHER` so no error goes uncounted.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::{ErrorKind, Recorder, GRPC_OTHER};
    /// let mut r = Recorder::new();
    /// r.record_grpc_status(14);
    /// r.record_grpc_status(99);
    /// assert_eq!(r.errors[ErrorKind::GrpcStatus.index()], 2);
    /// assert_eq!((r.grpc[14], r.grpc[GRPC_OTHER]), (1, 1));
    /// ```
    pub fn record_grpc_status(&mut self, code: u32) {
        self.record_error(ErrorKind::GrpcStatus);
        let i = match code {
            1..=16 => code as usize,
            _ => GRPC_OTHER,
        };
        self.grpc[i] = self.grpc[i].saturating_add(1);
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

    /// A response that failed a check, `which`: counts `errors[Check]`
    /// and `checks[which]`.
    ///
    /// ```
    /// use metronome_core::check::CheckFailure;
    /// use metronome_core::measure::{ErrorKind, Recorder};
    /// let mut r = Recorder::new();
    /// r.record_check(CheckFailure::Body);
    /// assert_eq!(r.errors[ErrorKind::Check.index()], 1);
    /// assert_eq!(r.checks[CheckFailure::Body.index()], 1);
    /// ```
    pub fn record_check(&mut self, which: crate::check::CheckFailure) {
        self.record_error(ErrorKind::Check);
        let f = &mut self.checks[which.index()];
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
        self.input_len.merge(&other.input_len);
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
            (&mut self.late_sent, other.late_sent),
        ] {
            *a = a.saturating_add(b);
        }
        self.sessions.merge(&other.sessions);
        self.first_sent_ns = self.first_sent_ns.min(other.first_sent_ns);
        self.last_done_ns = self.last_done_ns.max(other.last_done_ns);
        for (a, &b) in self.unsent.iter_mut().zip(&other.unsent) {
            *a = a.saturating_add(b);
        }
        for (a, &b) in self.framing.iter_mut().zip(&other.framing) {
            *a = a.saturating_add(b);
        }
        for (a, &b) in self.checks.iter_mut().zip(&other.checks) {
            *a = a.saturating_add(b);
        }
        for (a, &b) in self.errors.iter_mut().zip(&other.errors) {
            *a = a.saturating_add(b);
        }
        for (a, &b) in self.status.iter_mut().zip(&other.status) {
            *a = a.saturating_add(b);
        }
        for (a, &b) in self.grpc.iter_mut().zip(&other.grpc) {
            *a = a.saturating_add(b);
        }
    }
}
