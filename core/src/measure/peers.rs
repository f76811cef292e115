//! [`Peers`]: vLLM bench's, guidellm's and aiperf's definitions of the
//! stream metrics, recorded beside metronome's (`src/report/compat.rs`
//! reports them).

use crate::histogram::Histogram;

use super::samples::{Exact, SampleSink};
use super::stream::{slot, StreamTiming};

/// vLLM bench's, guidellm's and aiperf's definitions of the stream
/// metrics, recorded beside metronome's for every successful stream
/// (docs/metrics.md has a table per metric with the source file each was
/// read from). Every peer starts the clock at the actual send `S`, not the
/// intended time.
///
/// aiperf (0.13.0) times its "content responses": the chunks with output
/// (content, `reasoning_content`/`reasoning`, tool call or text), which are
/// guidellm's output chunks. So aiperf's `time_to_first_token` is
/// [`guidellm_ttft`](Self::guidellm_ttft), its valid requests are that
/// histogram's count, and its output sequence lengths (usage, else output
/// chunks) add up to [`guidellm_tokens`](Self::guidellm_tokens); the
/// `aiperf_*` fields hold the rest.
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
    /// guidellm's output tokens: usage, else output chunks (also aiperf's
    /// total output sequence length).
    pub guidellm_tokens: u64,
    /// aiperf `time_to_second_token`: second output chunk - first, for
    /// streams with at least two output chunks (the first of the stream's
    /// gaps between output chunks, recorded from the slots by the
    /// recorder).
    pub aiperf_ttst: Histogram,
    /// aiperf `request_latency`: last output chunk - S (not the end of the
    /// stream).
    pub aiperf_latency: Histogram,
    /// aiperf `inter_token_latency`: (last output chunk - first) / (OSL -
    /// 1) per request, integer ns rounded down, once per request with OSL
    /// >= 2 (OSL: usage, else output chunks).
    pub aiperf_itl: Histogram,
    /// aiperf `output_token_throughput_per_user`: 1 / ITL in seconds per
    /// request, recorded **scaled by 10^6** (micro-tokens/s, rounded down),
    /// so that the report's ns-to-ms division (by 10^6) reads tokens/s;
    /// none when the ITL is 0 (as aiperf).
    pub aiperf_tps_user: Histogram,
    /// aiperf `e2e_output_token_throughput` ("E2E Output Token Throughput",
    /// per user): OSL / `request_latency` in seconds per request, in
    /// micro-tokens/s as `aiperf_tps_user`; none when the latency is 0 (as
    /// aiperf/metrics/types/e2e_output_throughput_metric.py).
    pub aiperf_e2e_tps: Histogram,
    /// aiperf `inter_chunk_latency`: every gap between consecutive output
    /// chunks, all requests pooled (recorded from the slots by the
    /// recorder).
    pub aiperf_icl: Histogram,
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
            aiperf_ttst: Histogram::new(),
            aiperf_latency: Histogram::new(),
            aiperf_itl: Histogram::new(),
            aiperf_tps_user: Histogram::new(),
            aiperf_e2e_tps: Histogram::new(),
            aiperf_icl: Histogram::new(),
        }
    }

    /// Records one successful stream of `tokens` output tokens (usage,
    /// else token-bearing chunks: vLLM re-tokenises the text when there is
    /// no usage, which metronome cannot). vLLM's and aiperf's per-chunk
    /// gaps (and aiperf's time to second token, the first of them) are
    /// recorded from the slots by the recorder.
    ///
    /// # Example
    /// aiperf's values of a stream sent at 2 ms: a role chunk at 10 ms,
    /// reasoning at 50 ms, content at 60 and 70 ms, an empty-content chunk
    /// at 80 ms, then a usage-only chunk (4 tokens) at 90 ms.
    /// ```
    /// use metronome_core::measure::{Peers, Recorder, Slo, StreamTiming};
    /// use metronome_core::sse::ChunkFacts;
    /// const MS: u64 = 1_000_000;
    /// let role = ChunkFacts { choices: true, ..ChunkFacts::default() };
    /// let think = ChunkFacts { answer: false, ..ChunkFacts::CONTENT };
    /// let mut t = StreamTiming::new(0, 2 * MS);
    /// let mut slots = Vec::new();
    /// for (at, f) in [(10, role), (50, think), (60, ChunkFacts::CONTENT), (70, ChunkFacts::CONTENT), (80, role)] {
    ///     slots.extend(t.on_chunk(at * MS, &f));
    /// }
    /// t.on_usage(4);
    /// t.on_done(100 * MS);
    /// let mut r = Box::new(Recorder::new());
    /// r.record_stream(&t, &slots, &Slo::default()).unwrap();
    /// let p: &Peers = &r.peers;
    /// assert_eq!(p.guidellm_ttft.max(), 48 * MS); // time_to_first_token
    /// assert_eq!(p.aiperf_ttst.max(), 10 * MS);
    /// assert_eq!(p.aiperf_latency.max(), 68 * MS); // not the [DONE] at 100
    /// assert_eq!(p.aiperf_itl.max(), 20 * MS / 3); // (70 - 50) / (4 - 1)
    /// assert_eq!(p.aiperf_tps_user.max(), 150_000_000); // 150 tokens/s
    /// // e2e_output_token_throughput: 4 tokens / 68 ms = 58.82 tokens/s.
    /// assert_eq!(p.aiperf_e2e_tps.max(), 58_823_529);
    /// assert_eq!((p.aiperf_icl.count(), p.aiperf_icl.max()), (2, 10 * MS));
    /// ```
    pub(super) fn record(&mut self, t: &StreamTiming, tokens: u32) {
        let v = PeerValues::of(t, tokens);
        let put = |h: &mut Histogram, x: Option<u64>| {
            if let Some(x) = x {
                h.record(x);
            }
        };
        put(&mut self.vllm_ttft, v.vllm_ttft);
        put(&mut self.vllm_e2e, v.vllm_e2e);
        put(&mut self.vllm_tpot, v.vllm_tpot);
        if t.first_output_ns.is_some() {
            self.guidellm_tokens = self.guidellm_tokens.saturating_add(u64::from(v.osl));
        }
        put(&mut self.guidellm_ttft, v.guidellm_ttft);
        if let Some((x, w)) = v.guidellm_itl {
            self.guidellm_itl.record_n(x, u64::from(w));
        }
        if let Some((x, w)) = v.guidellm_tpot {
            self.guidellm_tpot.record_n(x, u64::from(w));
        }
        put(&mut self.guidellm_ttfot, v.guidellm_ttfot);
        put(&mut self.aiperf_latency, v.aiperf_latency);
        put(&mut self.aiperf_itl, v.aiperf_itl);
        put(&mut self.aiperf_tps_user, v.aiperf_tps_user);
        put(&mut self.aiperf_e2e_tps, v.aiperf_e2e_tps);
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
        self.aiperf_ttst.merge(&o.aiperf_ttst);
        self.aiperf_latency.merge(&o.aiperf_latency);
        self.aiperf_itl.merge(&o.aiperf_itl);
        self.aiperf_tps_user.merge(&o.aiperf_tps_user);
        self.aiperf_e2e_tps.merge(&o.aiperf_e2e_tps);
        self.aiperf_icl.merge(&o.aiperf_icl);
    }
}

/// One successful stream's per-request values under each peer's
/// definition ([`Peers`] records them into its histograms; the ledger
/// hands them to a [`SampleSink`] when `--metrics-compat` asks for exact
/// samples), ns except `aiperf_tps_user`. `None` where the peer defines
/// no value for this stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeerValues {
    /// vLLM `ttft`.
    pub vllm_ttft: Option<u64>,
    /// vLLM `e2el`.
    pub vllm_e2e: Option<u64>,
    /// vLLM `tpot` (tokens > 1).
    pub vllm_tpot: Option<u64>,
    /// guidellm `time_to_first_token_ms` (aiperf `time_to_first_token`).
    pub guidellm_ttft: Option<u64>,
    /// guidellm `time_to_first_output_token_ms`.
    pub guidellm_ttfot: Option<u64>,
    /// guidellm `inter_token_latency_ms` and its weight, tokens - 1.
    pub guidellm_itl: Option<(u64, u32)>,
    /// guidellm `time_per_output_token_ms` and its weight, tokens.
    pub guidellm_tpot: Option<(u64, u32)>,
    /// Output tokens as guidellm and aiperf count them (usage, else output
    /// chunks).
    pub osl: u32,
    /// aiperf `request_latency`.
    pub aiperf_latency: Option<u64>,
    /// aiperf `inter_token_latency`.
    pub aiperf_itl: Option<u64>,
    /// aiperf `output_token_throughput_per_user`, micro-tokens/s.
    pub aiperf_tps_user: Option<u64>,
    /// aiperf `e2e_output_token_throughput`, micro-tokens/s.
    pub aiperf_e2e_tps: Option<u64>,
}

impl PeerValues {
    /// The values of a successful stream of `tokens` output tokens (usage,
    /// else token-bearing chunks), as the fields of [`Peers`] define them.
    pub fn of(t: &StreamTiming, tokens: u32) -> PeerValues {
        let s = t.sent_ns;
        let mut v = PeerValues::default();
        if let Some(first) = t.first_choices_ns {
            let ttft = first.saturating_sub(s);
            let e2e = t.last_choices_ns.saturating_sub(s);
            v.vllm_ttft = Some(ttft);
            v.vllm_e2e = Some(e2e);
            if tokens > 1 {
                v.vllm_tpot = Some(e2e.saturating_sub(ttft) / u64::from(tokens - 1));
            }
        }
        if let Some(first) = t.first_output_ns {
            let n = t.usage_tokens.unwrap_or(t.output_chunks);
            let last = t.last_output_ns;
            v.osl = n;
            v.guidellm_ttft = Some(first.saturating_sub(s));
            if n > 1 {
                let itl = last.saturating_sub(first) / u64::from(n - 1);
                v.guidellm_itl = Some((itl, n - 1));
            }
            if n > 0 {
                v.guidellm_tpot = Some((last.saturating_sub(s) / u64::from(n), n));
            }
            let latency = last.saturating_sub(s);
            v.aiperf_latency = Some(latency);
            if latency > 0 {
                // osl / (latency / 1e9) tokens/s, times 1e6.
                let micro = u128::from(n) * 1_000_000_000_000_000 / u128::from(latency);
                v.aiperf_e2e_tps = Some(u64::try_from(micro).unwrap_or(u64::MAX));
            }
            if n >= 2 {
                let decode = last.saturating_sub(first);
                let rest = u64::from(n - 1);
                v.aiperf_itl = Some(decode / rest);
                if decode > 0 {
                    // (osl - 1) / (decode / 1e9) tokens/s, times 1e6.
                    let micro = u128::from(rest) * 1_000_000_000_000_000 / u128::from(decode);
                    v.aiperf_tps_user = Some(u64::try_from(micro).unwrap_or(u64::MAX));
                }
            }
        }
        if let Some(a) = t.first_answer_ns {
            v.guidellm_ttfot = Some(a.saturating_sub(s));
        }
        v
    }

    /// Hands every value to `sink` under its [`Exact`] metric (guidellm's
    /// per-token ones with their weights).
    pub fn record_into(&self, sink: &mut dyn SampleSink) {
        for (m, x) in [
            (Exact::VllmTtft, self.vllm_ttft),
            (Exact::VllmE2e, self.vllm_e2e),
            (Exact::VllmTpot, self.vllm_tpot),
            (Exact::GuidellmTtft, self.guidellm_ttft),
            (Exact::GuidellmTtfot, self.guidellm_ttfot),
            (Exact::AiperfLatency, self.aiperf_latency),
            (Exact::AiperfItl, self.aiperf_itl),
            (Exact::AiperfTpsUser, self.aiperf_tps_user),
            (Exact::AiperfE2eTps, self.aiperf_e2e_tps),
        ] {
            if let Some(x) = x {
                sink.record(m, x);
            }
        }
        for (m, x) in [
            (Exact::GuidellmItl, self.guidellm_itl),
            (Exact::GuidellmTpot, self.guidellm_tpot),
        ] {
            if let Some((x, w)) = x {
                sink.record_weighted(m, x, w);
            }
        }
    }
}

/// aiperf's `time_to_second_token` of a stream from its slots (see
/// [`slot`]): the time from the first output chunk to the second, `None`
/// with fewer than two. The recorder takes the same value
/// ([`Peers::aiperf_ttst`]).
///
/// ```
/// use metronome_core::measure::{slot, time_to_second_output, StreamTiming};
/// // The first chunk with `choices` (before the slots) was a role chunk.
/// let t = StreamTiming::new(0, 0);
/// let slots = [
///     slot::pack(5, 0, true, true), // first output
///     slot::pack(3, 0, false, false), // a chunk without output
///     slot::pack(4, 0, true, true), // second output: 3 + 4 after the first
/// ];
/// assert_eq!(time_to_second_output(&t, &slots), Some(7));
/// assert_eq!(time_to_second_output(&t, &slots[..2]), None);
/// ```
pub fn time_to_second_output(t: &StreamTiming, slots: &[u64]) -> Option<u64> {
    let (mut seen, mut acc) = (t.first_choices_output, 0u64);
    for &x in slots {
        acc = acc.saturating_add(slot::gap_ns(x));
        if slot::is_output(x) {
            if seen {
                return Some(acc);
            }
            seen = true;
            acc = 0;
        }
    }
    None
}

/// Hands a successful stream's per-request values under every peer's
/// definition to `sink` ([`PeerValues::record_into`], and aiperf's time
/// to second token from the slots).
pub fn record_peer_samples(
    sink: &mut dyn SampleSink,
    t: &StreamTiming,
    slots: &[u64],
    tokens: u32,
) {
    PeerValues::of(t, tokens).record_into(sink);
    if let Some(v) = time_to_second_output(t, slots) {
        sink.record(Exact::AiperfTtst, v);
    }
}
