//! `--metrics-compat vllm|guidellm`: the stream metrics as a peer defines
//! them, recorded by core ([`metronome_core::measure::Peers`]) beside
//! metronome's own, so a user can reproduce a number seen in vLLM's
//! `bench serve` or in guidellm. docs/metrics.md has one table per metric,
//! with the source file each definition was read from.

use std::collections::BTreeMap;

use metronome_core::measure::Recorder;
use serde::{Deserialize, Serialize};

use super::Metric;

/// A peer whose metric definitions a report reproduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// vLLM's `vllm bench serve` (vllm/benchmarks/serve.py).
    Vllm,
    /// guidellm (src/guidellm/schemas/request_stats.py).
    Guidellm,
}

/// The peer's view of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compat {
    /// `vllm` or `guidellm`.
    pub peer: String,
    /// The peer's files the definitions were read from.
    pub sources: Vec<String>,
    /// Successful requests / the real window (both peers divide by the wall
    /// time until the last request ended).
    pub request_throughput_rps: f64,
    /// Output tokens as the peer counts them / the real window.
    pub output_throughput_tokens_per_s: f64,
    /// The metrics under the peer's names, ms (guidellm's `itl` and `tpot`
    /// are weighted per token, as guidellm's distributions are).
    pub metrics: BTreeMap<String, Metric>,
    /// Where the reproduction is not exact.
    pub notes: Vec<String>,
}

impl Compat {
    /// The peer's metrics from a run's recorder.
    pub fn from_recorder(peer: Peer, rec: &Recorder) -> Compat {
        let window_s = rec.window_ns() as f64 / 1e9;
        let per_s = |n: u64| {
            if window_s > 0.0 {
                n as f64 / window_s
            } else {
                0.0
            }
        };
        let p = &rec.peers;
        let m = |name: &str, h| (name.to_string(), Metric::from_histogram(h));
        match peer {
            Peer::Vllm => Compat {
                peer: "vllm".into(),
                sources: vec![
                    "vllm-project/vllm: vllm/benchmarks/lib/endpoint_request_func.py".into(),
                    "vllm-project/vllm: vllm/benchmarks/serve.py (calculate_metrics)".into(),
                ],
                request_throughput_rps: per_s(rec.ok),
                output_throughput_tokens_per_s: per_s(rec.output_tokens),
                metrics: [
                    m("ttft", &p.vllm_ttft),
                    m("tpot", &p.vllm_tpot),
                    m("itl", &p.vllm_itl),
                    m("e2el", &p.vllm_e2e),
                ]
                .into_iter()
                .collect(),
                notes: vec![
                    "clock from the actual send, not the intended time".into(),
                    "tokens from usage; without usage vLLM re-tokenises the text, metronome \
                     counts token-bearing chunks"
                        .into(),
                    "percentiles are histogram buckets (at most 1/128 above); vLLM interpolates \
                     between samples (numpy)"
                        .into(),
                ],
            },
            Peer::Guidellm => Compat {
                peer: "guidellm".into(),
                sources: vec![
                    "vllm-project/guidellm: src/guidellm/schemas/request_stats.py".into(),
                    "vllm-project/guidellm: src/guidellm/backends/openai/http.py".into(),
                    "vllm-project/guidellm: src/guidellm/backends/openai/request_handlers.py"
                        .into(),
                    "vllm-project/guidellm: src/guidellm/benchmark/schemas/metrics.py".into(),
                ],
                request_throughput_rps: per_s(rec.ok),
                output_throughput_tokens_per_s: per_s(p.guidellm_tokens),
                metrics: [
                    m("time_to_first_token_ms", &p.guidellm_ttft),
                    m("time_to_first_output_token_ms", &p.guidellm_ttfot),
                    m("inter_token_latency_ms", &p.guidellm_itl),
                    m("time_per_output_token_ms", &p.guidellm_tpot),
                    m("request_latency", &rec.service_time),
                ]
                .into_iter()
                .collect(),
                notes: vec![
                    "clock from the actual send, not the intended time".into(),
                    "guidellm's per-second rates are the mean of a time-weighted rate \
                     distribution; metronome gives count / real window"
                        .into(),
                    "request_latency is metronome's service_time (end of stream - send)".into(),
                ],
            },
        }
    }
}
