//! [`Peers`]: vLLM bench's, guidellm's and aiperf's definitions of the
//! stream metrics, recorded beside metronome's (`src/report/compat.rs`
//! reports them).

use crate::histogram::Histogram;

use super::stream::StreamTiming;

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
    /// assert_eq!((p.aiperf_icl.count(), p.aiperf_icl.max()), (2, 10 * MS));
    /// ```
    pub(super) fn record(&mut self, t: &StreamTiming, tokens: u32) {
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
        if let Some(first) = t.first_output_ns {
            self.record_aiperf(t, first);
        }
    }

    /// aiperf's per-request values of a stream whose first output chunk
    /// arrived at `first` (its TTFT is guidellm's).
    fn record_aiperf(&mut self, t: &StreamTiming, first: u64) {
        let last = t.last_output_ns;
        self.aiperf_latency.record(last.saturating_sub(t.sent_ns));
        let osl = t.usage_tokens.unwrap_or(t.output_chunks);
        if osl < 2 {
            return;
        }
        let decode = last.saturating_sub(first);
        let rest = u64::from(osl - 1);
        self.aiperf_itl.record(decode / rest);
        if decode > 0 {
            // (osl - 1) / (decode / 1e9) tokens/s, times 1e6.
            let micro = u128::from(rest) * 1_000_000_000_000_000 / u128::from(decode);
            self.aiperf_tps_user
                .record(u64::try_from(micro).unwrap_or(u64::MAX));
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
        self.aiperf_ttst.merge(&o.aiperf_ttst);
        self.aiperf_latency.merge(&o.aiperf_latency);
        self.aiperf_itl.merge(&o.aiperf_itl);
        self.aiperf_tps_user.merge(&o.aiperf_tps_user);
        self.aiperf_icl.merge(&o.aiperf_icl);
    }
}
