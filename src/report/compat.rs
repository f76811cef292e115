//! `--metrics-compat vllm,guidellm,aiperf` (any subset): the stream
//! metrics as each peer defines them, recorded by core
//! ([`metronome_core::measure::Peers`]) beside metronome's own, so a user
//! can reproduce a number seen in vLLM's `bench serve`, in guidellm or in
//! aiperf. docs/metrics.md has one table per metric, with the source file
//! each definition was read from.

use std::collections::BTreeMap;

use metronome_core::measure::Recorder;
use serde::{Deserialize, Deserializer, Serialize};

use super::Metric;

/// A peer whose metric definitions a report reproduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// vLLM's `vllm bench serve` (vllm/benchmarks/serve.py).
    Vllm,
    /// guidellm (src/guidellm/schemas/request_stats.py).
    Guidellm,
    /// NVIDIA's aiperf 0.13.0 (aiperf/metrics/types/).
    Aiperf,
}

/// The peers asked, in order, each once (a repeated peer keeps its first
/// place).
///
/// ```
/// use metronome::report::compat::{peers_once, Peer};
/// let p = peers_once([Peer::Aiperf, Peer::Vllm, Peer::Aiperf]);
/// assert_eq!(p, vec![Peer::Aiperf, Peer::Vllm]);
/// ```
pub fn peers_once(asked: impl IntoIterator<Item = Peer>) -> Vec<Peer> {
    let mut out = Vec::new();
    for p in asked {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// Reads the report's `compat`: a list of views (this version), or, from
/// reports of older versions, one view or null.
///
/// # Errors
/// A value that is none of those.
pub fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Compat>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        Many(Vec<Compat>),
        One(Box<Compat>),
    }
    Ok(match Option::<OneOrMany>::deserialize(d)? {
        None => Vec::new(),
        Some(OneOrMany::Many(v)) => v,
        Some(OneOrMany::One(c)) => vec![*c],
    })
}

/// The peer's view of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compat {
    /// `vllm`, `guidellm` or `aiperf`.
    pub peer: String,
    /// The peer's files the definitions were read from.
    pub sources: Vec<String>,
    /// Successful requests / the real window (vLLM and guidellm divide by
    /// the wall time until the last request ended; aiperf by its phase
    /// window, slightly wider). For aiperf, the successful streams with an
    /// output chunk (its valid requests).
    pub request_throughput_rps: f64,
    /// Output tokens as the peer counts them / the real window.
    pub output_throughput_tokens_per_s: f64,
    /// The metrics under the peer's names, ms (guidellm's `itl` and `tpot`
    /// are weighted per token, as guidellm's distributions are), except
    /// aiperf's `output_token_throughput_per_user`, in tokens/s.
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
            Peer::Aiperf => Compat {
                peer: "aiperf".into(),
                sources: [
                    "aiperf/metrics/types/ttft_metric.py",
                    "aiperf/metrics/types/ttst_metric.py",
                    "aiperf/metrics/types/request_latency_metric.py",
                    "aiperf/metrics/types/inter_token_latency_metric.py",
                    "aiperf/metrics/types/inter_chunk_latency_metric.py",
                    "aiperf/metrics/types/output_token_throughput_metrics.py",
                    "aiperf/metrics/types/request_throughput_metric.py",
                    "aiperf/metrics/types/output_sequence_length_metric.py",
                    "aiperf/common/models/record_models.py (content_responses)",
                    "aiperf/endpoints/openai_chat.py (extract_chat_response_data)",
                    "aiperf/records/inference_result_parser.py (token counts)",
                    "aiperf/metrics/metric_dicts.py (observation_duration, percentiles)",
                ]
                .iter()
                .map(|f| format!("ai-dynamo/aiperf 0.13.0: {f}"))
                .collect(),
                request_throughput_rps: per_s(p.guidellm_ttft.count()),
                output_throughput_tokens_per_s: per_s(p.guidellm_tokens),
                metrics: [
                    m("time_to_first_token", &p.guidellm_ttft),
                    m("time_to_second_token", &p.aiperf_ttst),
                    m("request_latency", &p.aiperf_latency),
                    m("inter_token_latency", &p.aiperf_itl),
                    m("inter_chunk_latency", &p.aiperf_icl),
                    m("output_token_throughput_per_user", &p.aiperf_tps_user),
                ]
                .into_iter()
                .collect(),
                notes: vec![
                    "clock from the actual send, not the intended time".into(),
                    "times are of aiperf's content responses: chunks with content, \
                     reasoning_content/reasoning, tool calls or text (metronome takes any \
                     non-empty tool_calls array; aiperf needs name or arguments text)"
                        .into(),
                    "OSL = usage.completion_tokens when the server sent usage (aiperf's \
                     --use-server-token-count view); without usage metronome counts content \
                     chunks, where aiperf by default re-tokenises the text with the model's \
                     tokenizer"
                        .into(),
                    "output_token_throughput_per_user is in tokens/s (1 / ITL per request), \
                     not ms"
                        .into(),
                    "rates are over metronome's real window (first send to the last end of \
                     stream); aiperf divides by its phase window (phase start to the last \
                     credit's return), slightly wider"
                        .into(),
                    "valid requests are metronome's successful streams with a content \
                     response; aiperf also keeps a stream cut after content (metronome: \
                     stream_cut)"
                        .into(),
                    "percentiles are histogram buckets (at most 1/128 above); aiperf \
                     interpolates between samples (numpy linear)"
                        .into(),
                    "per-chunk gaps after the first 4096 of a stream are not kept (as \
                     vLLM's itl)"
                        .into(),
                ],
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(peer: &str) -> Compat {
        Compat {
            peer: peer.into(),
            sources: vec![format!("{peer}: a file")],
            request_throughput_rps: 2.0,
            output_throughput_tokens_per_s: 10.0,
            metrics: BTreeMap::new(),
            notes: vec![],
        }
    }

    #[derive(Deserialize)]
    struct Holder {
        #[serde(default, deserialize_with = "one_or_many")]
        compat: Vec<Compat>,
    }

    fn read(json: &str) -> Vec<Compat> {
        serde_json::from_str::<Holder>(json).unwrap().compat
    }

    /// This version writes a list; older versions wrote one view or null,
    /// and reports before `compat` existed have no key.
    #[test]
    fn reads_a_list_one_view_null_or_nothing() {
        let two = vec![view("vllm"), view("aiperf")];
        let json = serde_json::to_string(&two).unwrap();
        assert_eq!(read(&format!(r#"{{"compat":{json}}}"#)), two);
        let one = serde_json::to_string(&view("guidellm")).unwrap();
        assert_eq!(
            read(&format!(r#"{{"compat":{one}}}"#)),
            vec![view("guidellm")]
        );
        assert!(read(r#"{"compat":null}"#).is_empty());
        assert!(read(r#"{"compat":[]}"#).is_empty());
        assert!(read("{}").is_empty());
        assert!(serde_json::from_str::<Holder>(r#"{"compat":3}"#).is_err());
        assert!(serde_json::from_str::<Holder>(r#"{"compat":{"peer":"x"}}"#).is_err());
    }

    /// Every peer's view from one recorder: aiperf's rates and names.
    #[test]
    fn the_aiperf_view_of_a_recorder() {
        use metronome_core::measure::{Slo, StreamTiming};
        const MS: u64 = 1_000_000;
        let mut rec = Box::new(Recorder::new());
        let mut t = StreamTiming::new(0, 0);
        rec.record_sent(0, 0);
        let mut slots = Vec::new();
        for at in [20, 30, 50] {
            slots.extend(t.on_content(at * MS));
        }
        t.on_done(60 * MS);
        rec.record_stream(&t, &slots, &Slo::default()).unwrap();
        rec.record_done_at(100 * MS);
        let v = Compat::from_recorder(Peer::Aiperf, &rec);
        assert_eq!(v.peer, "aiperf");
        // 1 request, 3 tokens over 0.1 s.
        assert_eq!(v.request_throughput_rps, 10.0);
        assert_eq!(v.output_throughput_tokens_per_s, 30.0);
        let keys: Vec<&str> = v.metrics.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "inter_chunk_latency",
                "inter_token_latency",
                "output_token_throughput_per_user",
                "request_latency",
                "time_to_first_token",
                "time_to_second_token",
            ]
        );
        assert_eq!(v.metrics["time_to_first_token"].max, 20.0);
        assert_eq!(v.metrics["time_to_second_token"].max, 10.0);
        assert_eq!(v.metrics["request_latency"].max, 50.0);
        assert_eq!(v.metrics["inter_token_latency"].max, 15.0);
        assert_eq!(v.metrics["inter_chunk_latency"].count, 2);
        // 1 / 15 ms, in tokens/s.
        assert_eq!(v.metrics["output_token_throughput_per_user"].max, 66.666666);
    }

    #[test]
    fn each_peer_once_in_order() {
        assert_eq!(
            peers_once([Peer::Guidellm, Peer::Guidellm, Peer::Vllm]),
            vec![Peer::Guidellm, Peer::Vllm]
        );
    }
}
