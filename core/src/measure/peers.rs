//! [`Peers`]: vLLM bench's and guidellm's definitions of the stream
//! metrics, recorded beside metronome's (`src/report/compat.rs` reports
//! them).

use crate::histogram::Histogram;

use super::stream::StreamTiming;

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
