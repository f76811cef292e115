//! `--metrics-compat vllm,guidellm,aiperf` (any subset): the stream
//! metrics as each peer defines them, recorded by core
//! ([`metronome_core::measure::Peers`]) beside metronome's own, so a user
//! can reproduce a number seen in vLLM's `bench serve`, in guidellm or in
//! aiperf. docs/metrics.md has one table per metric, with the source file
//! each definition was read from.

use std::collections::BTreeMap;

use metronome_core::engine::ExactSamples;
use metronome_core::histogram::Histogram;
use metronome_core::measure::{Exact, ExactSet, Recorder};
use serde::{Deserialize, Deserializer, Serialize};

use super::{ExactPercentiles, Method, Metric};

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

impl Peer {
    /// The view's `peer`.
    pub fn name(self) -> &'static str {
        match self {
            Peer::Vllm => "vllm",
            Peer::Guidellm => "guidellm",
            Peer::Aiperf => "aiperf",
        }
    }

    /// The peer by its view's name.
    pub fn from_name(name: &str) -> Option<Peer> {
        [Peer::Vllm, Peer::Guidellm, Peer::Aiperf]
            .into_iter()
            .find(|p| p.name() == name)
    }

    /// How the peer takes percentiles from its samples: numpy's
    /// `percentile` (linear) in vLLM's bench (`calculate_metrics` in
    /// vllm/benchmarks/serve.py: `np.median`, `np.percentile`) and aiperf
    /// (`MetricArray.to_result` in aiperf/metrics/metric_dicts.py:
    /// `np.percentile`); guidellm's own weighted cumulative share
    /// (`Percentiles.from_pdf` in src/guidellm/schemas/statistics.py).
    pub fn method(self) -> Method {
        match self {
            Peer::Vllm | Peer::Aiperf => Method::Linear,
            Peer::Guidellm => Method::WeightedRank,
        }
    }

    /// The peer's per-request metrics whose exact samples a run keeps for
    /// this view (guidellm's `request_latency` is metronome's service
    /// time, always kept).
    ///
    /// ```
    /// use metronome::report::compat::Peer;
    /// use metronome_core::measure::Exact;
    /// assert_eq!(Peer::Vllm.exact_metrics().len(), 3);
    /// assert!(Peer::Aiperf.exact_metrics().contains(Exact::GuidellmTtft));
    /// ```
    pub fn exact_metrics(self) -> ExactSet {
        ExactSet::of(match self {
            Peer::Vllm => &[Exact::VllmTtft, Exact::VllmTpot, Exact::VllmE2e],
            Peer::Guidellm => &[
                Exact::GuidellmTtft,
                Exact::GuidellmTtfot,
                Exact::GuidellmItl,
                Exact::GuidellmTpot,
            ],
            Peer::Aiperf => &[
                Exact::GuidellmTtft,
                Exact::AiperfTtst,
                Exact::AiperfLatency,
                Exact::AiperfItl,
                Exact::AiperfTpsUser,
                Exact::AiperfE2eTps,
            ],
        })
    }

    /// The notes' line on percentiles: `kept` when the view's per-request
    /// metrics carry `exact` (the peer's own method over every sample).
    pub fn percentile_note(self, kept: bool) -> String {
        let (how, per_chunk) = match self {
            Peer::Vllm => (
                "numpy's linear percentile, as vLLM (its median is p50)",
                "; itl is per chunk and stays in its histogram",
            ),
            Peer::Aiperf => (
                "numpy's linear percentile, as aiperf (which reports p1..p99)",
                "; inter_chunk_latency is per chunk and stays in its histogram",
            ),
            Peer::Guidellm => (
                "guidellm's own: the first value whose cumulative weight share reaches q, \
                 inter_token_latency_ms and time_per_output_token_ms weighted by each \
                 request's tokens - 1 and tokens",
                "",
            ),
        };
        if kept {
            format!(
                "percentiles: each per-request metric's `exact` is {how}, over every sample; \
                 the p50..p999 beside it are histogram buckets (at most 1/128 above){per_chunk}"
            )
        } else {
            format!(
                "percentiles are histogram buckets (at most 1/128 above); {} takes them from \
                 the samples ({}), which were not kept here (a closed loop, over 500,000 \
                 requests per process, or a merge)",
                self.name(),
                self.method().as_str()
            )
        }
    }
}

/// Every peer metric the views of `peers` keep exact samples of
/// (`Plan::peer_samples`).
pub fn exact_metrics(peers: &[Peer]) -> ExactSet {
    peers
        .iter()
        .fold(ExactSet::EMPTY, |s, p| s.union(p.exact_metrics()))
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

/// Where aiperf's profiling phase starts on the recorder's clock, for the
/// window aiperf divides its throughputs by.
///
/// aiperf 0.13.0 divides `request_throughput` and `output_token_throughput`
/// by `MetricResultsDict.observation_duration` (aiperf/metrics/metric_dicts.py),
/// which for the final summary is the phase's `requests_end_ns - start_ns`
/// (`_summarize_metric_record_accumulators` in
/// aiperf/records/records_manager.py passes the phase stats' window):
/// `start_ns` is when the phase starts (`PhaseLifecycle.start`,
/// aiperf/timing/phase/lifecycle.py) and `requests_end_ns` when its last
/// credit returned (`mark_complete`). A rate run sends its first request one
/// inter-arrival gap after the phase start (`RequestRateStrategy.execute_phase`
/// in aiperf/timing/strategies/request_rate.py: `perf_start +
/// next_interval()`). metronome's random processes also begin one gap after
/// the schedule's zero, but its constant schedule sends at the zero: aiperf's
/// phase start is then one period earlier.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseStart {
    /// The measured phase's zero on the recorder's clock (the end of the
    /// warmup), ns.
    pub zero_ns: u64,
    /// How long before that zero aiperf's phase would have started: one
    /// period (1 / rate) for a steady constant schedule, else 0, ns.
    pub lead_ns: u64,
}

impl PhaseStart {
    /// The phase start of `plan`'s measured phase.
    ///
    /// ```
    /// use metronome::report::compat::PhaseStart;
    /// use metronome_core::plan::example_plan; // 100/s constant, 0.5 s warmup
    /// let p = PhaseStart::of(&example_plan());
    /// assert_eq!((p.zero_ns, p.lead_ns), (500_000_000, 10_000_000));
    /// ```
    pub fn of(plan: &metronome_core::plan::Plan<'_>) -> PhaseStart {
        use metronome_core::plan::{Model, Profile};
        use metronome_core::schedule::Arrival;
        let steady_constant = matches!(plan.model, Model::Open)
            && matches!(plan.profile, Profile::Steady)
            && matches!(plan.arrival, Arrival::Constant)
            && plan.rate > 0.0;
        PhaseStart {
            zero_ns: plan.warmup_ns,
            lead_ns: if steady_constant {
                (1e9 / plan.rate).round() as u64
            } else {
                0
            },
        }
    }

    /// aiperf's window over `rec`: from the phase start to the last
    /// completion, ns (0 before any send).
    ///
    /// ```
    /// use metronome::report::compat::PhaseStart;
    /// let mut r = Box::new(metronome_core::measure::Recorder::new());
    /// let p = PhaseStart { zero_ns: 0, lead_ns: 250 };
    /// assert_eq!(p.window_ns(&r), 0);
    /// r.record_sent(0, 5);
    /// r.record_done_at(905);
    /// assert_eq!((r.window_ns(), p.window_ns(&r)), (900, 1155));
    /// ```
    pub fn window_ns(&self, rec: &Recorder) -> u64 {
        if rec.first_sent_ns == u64::MAX {
            return 0;
        }
        (rec.last_done_ns + self.lead_ns).saturating_sub(self.zero_ns)
    }
}

/// The peer's view of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compat {
    /// `vllm`, `guidellm` or `aiperf`.
    pub peer: String,
    /// The peer's files the definitions were read from.
    pub sources: Vec<String>,
    /// Successful requests / `window_s` (vLLM and guidellm: the real
    /// window, until the last request ended; aiperf: its phase window,
    /// [`PhaseStart`]). For aiperf, the successful streams with an output
    /// chunk (its valid requests).
    pub request_throughput_rps: f64,
    /// Output tokens as the peer counts them / `window_s`.
    pub output_throughput_tokens_per_s: f64,
    /// The window the rates divide by, seconds: the real window (first
    /// send to the last completion) for vLLM and guidellm; aiperf's phase
    /// window ([`PhaseStart::window_ns`]) for aiperf. 0 in reports of older
    /// versions; after `merge`, the longest shard's.
    #[serde(default)]
    pub window_s: f64,
    /// The metrics under the peer's names, ms (guidellm's `itl` and `tpot`
    /// are weighted per token, as guidellm's distributions are), except
    /// aiperf's `output_token_throughput_per_user`, in tokens/s. Each
    /// per-request metric carries `exact`, the peer's own percentiles of
    /// every sample ([`Peer::method`]), when the run kept them.
    pub metrics: BTreeMap<String, Metric>,
    /// Where the reproduction is not exact.
    pub notes: Vec<String>,
}

impl Compat {
    /// The peer's metrics from a run's recorder, with the peer's own
    /// percentiles over the run's exact samples where it kept every one
    /// (`None`: histograms only).
    /// The rates divide by the real window, aiperf's by its phase window
    /// from `phase`.
    pub fn from_recorder(
        peer: Peer,
        rec: &Recorder,
        samples: Option<&ExactSamples>,
        phase: PhaseStart,
    ) -> Compat {
        let window_s = match peer {
            Peer::Aiperf => phase.window_ns(rec),
            Peer::Vllm | Peer::Guidellm => rec.window_ns(),
        } as f64
            / 1e9;
        let per_s = |n: u64| {
            if window_s > 0.0 {
                n as f64 / window_s
            } else {
                0.0
            }
        };
        let p = &rec.peers;
        // Per-chunk metrics: histogram only.
        let m = |name: &str, h| (name.to_string(), Metric::from_histogram(h));
        // Per-request metrics: with the peer's percentiles of the samples.
        let r = |name: &str, h: &Histogram, e: Exact| {
            let mut metric = Metric::from_histogram(h);
            metric.exact = samples.and_then(|s| exact_of(peer.method(), s, e, metric.count));
            (name.to_string(), metric)
        };
        let mut view = match peer {
            Peer::Vllm => Compat {
                peer: "vllm".into(),
                sources: vec![
                    "vllm-project/vllm: vllm/benchmarks/lib/endpoint_request_func.py".into(),
                    "vllm-project/vllm: vllm/benchmarks/serve.py (calculate_metrics)".into(),
                ],
                request_throughput_rps: per_s(rec.ok),
                output_throughput_tokens_per_s: per_s(rec.output_tokens),
                window_s,
                metrics: [
                    r("ttft", &p.vllm_ttft, Exact::VllmTtft),
                    r("tpot", &p.vllm_tpot, Exact::VllmTpot),
                    m("itl", &p.vllm_itl),
                    r("e2el", &p.vllm_e2e, Exact::VllmE2e),
                ]
                .into_iter()
                .collect(),
                notes: vec![
                    "clock from the actual send, not the intended time".into(),
                    "tokens from usage; without usage vLLM re-tokenises the text, metronome \
                     counts token-bearing chunks"
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
                window_s,
                metrics: [
                    r(
                        "time_to_first_token_ms",
                        &p.guidellm_ttft,
                        Exact::GuidellmTtft,
                    ),
                    r(
                        "time_to_first_output_token_ms",
                        &p.guidellm_ttfot,
                        Exact::GuidellmTtfot,
                    ),
                    r(
                        "inter_token_latency_ms",
                        &p.guidellm_itl,
                        Exact::GuidellmItl,
                    ),
                    r(
                        "time_per_output_token_ms",
                        &p.guidellm_tpot,
                        Exact::GuidellmTpot,
                    ),
                    r("request_latency", &rec.service_time, Exact::ServiceTime),
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
                    "aiperf/metrics/types/e2e_output_throughput_metric.py",
                    "aiperf/metrics/types/benchmark_duration_metric.py",
                    "aiperf/records/records_manager.py (_summarize_metric_record_accumulators: the phase window)",
                    "aiperf/timing/strategies/request_rate.py (execute_phase: the first request one gap after the phase start)",
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
                window_s,
                metrics: [
                    r("time_to_first_token", &p.guidellm_ttft, Exact::GuidellmTtft),
                    r("time_to_second_token", &p.aiperf_ttst, Exact::AiperfTtst),
                    r("request_latency", &p.aiperf_latency, Exact::AiperfLatency),
                    r("inter_token_latency", &p.aiperf_itl, Exact::AiperfItl),
                    m("inter_chunk_latency", &p.aiperf_icl),
                    r(
                        "output_token_throughput_per_user",
                        &p.aiperf_tps_user,
                        Exact::AiperfTpsUser,
                    ),
                    r(
                        "e2e_output_token_throughput",
                        &p.aiperf_e2e_tps,
                        Exact::AiperfE2eTps,
                    ),
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
                    "output_token_throughput_per_user (1 / ITL per request) and \
                     e2e_output_token_throughput (OSL / request_latency per request) are in \
                     tokens/s, not ms"
                        .into(),
                    "rates are over aiperf's phase window (window_s): from the phase start (the \
                     end of the warmup, one period earlier for a constant schedule, as aiperf \
                     sends its first request one gap after its phase starts) to the last \
                     completion; aiperf ends it when the last credit has returned to its timing \
                     service, a few ms later"
                        .into(),
                    "valid requests are metronome's successful streams with a content \
                     response; aiperf also keeps a stream cut after content (metronome: \
                     stream_cut)"
                        .into(),
                    "per-chunk gaps after the first 4096 of a stream are not kept (as \
                     vLLM's itl)"
                        .into(),
                ],
            },
        };
        let kept = view.per_request_exact();
        view.notes.push(peer.percentile_note(kept));
        view
    }

    /// True when every per-request metric with values carries `exact` (and
    /// at least one does).
    fn per_request_exact(&self) -> bool {
        let chunked = ["itl", "inter_chunk_latency"];
        let mut any = false;
        for (name, m) in &self.metrics {
            if chunked.contains(&name.as_str()) || m.count == 0 {
                continue;
            }
            if m.exact.is_none() {
                return false;
            }
            any = true;
        }
        any
    }

    /// The view after its metrics lost `exact` (a merge): the notes' line
    /// on percentiles says so.
    pub fn without_exact(mut self) -> Compat {
        for m in self.metrics.values_mut() {
            m.exact = None;
        }
        if let Some(peer) = Peer::from_name(&self.peer) {
            let note = peer.percentile_note(false);
            self.notes.retain(|n| !n.starts_with("percentiles"));
            self.notes.push(note);
        }
        self
    }
}

/// The peer's percentiles (`method`) of `metric`'s samples, when every
/// one was kept: as many as the histogram holds (weights summed for a
/// weighted metric).
fn exact_of(
    method: Method,
    samples: &ExactSamples,
    metric: Exact,
    count: u64,
) -> Option<ExactPercentiles> {
    match method {
        Method::WeightedRank => samples
            .weighted(metric)
            .filter(|v| v.iter().map(|&(_, w)| w).sum::<u64>() == count)
            .and_then(|v| ExactPercentiles::weighted_of_sorted(&v)),
        Method::Linear => samples
            .sorted(metric)
            .filter(|v| v.len() as u64 == count)
            .and_then(|v| ExactPercentiles::linear_of_sorted(&v)),
        Method::NearestRank => samples
            .sorted(metric)
            .filter(|v| v.len() as u64 == count)
            .and_then(|v| ExactPercentiles::of_sorted(&v)),
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
            window_s: 1.0,
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
        let v = Compat::from_recorder(Peer::Aiperf, &rec, None, PhaseStart::default());
        assert_eq!(v.peer, "aiperf");
        // 1 request, 3 tokens over 0.1 s.
        assert_eq!(v.request_throughput_rps, 10.0);
        assert_eq!(v.output_throughput_tokens_per_s, 30.0);
        assert_eq!(v.window_s, 0.1);
        let keys: Vec<&str> = v.metrics.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "e2e_output_token_throughput",
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
        // 3 tokens / 50 ms, in tokens/s.
        assert_eq!(v.metrics["e2e_output_token_throughput"].max, 60.0);
    }

    /// aiperf 0.13.0's throughput window, by hand from four records.
    /// `RequestThroughputMetric` and `OutputTokenThroughputMetric`
    /// (aiperf/metrics/types/request_throughput_metric.py,
    /// output_token_throughput_metrics.py) divide by
    /// `MetricResultsDict.observation_duration` (aiperf/metrics/metric_dicts.py):
    /// the phase window `requests_end_ns - start_ns` that
    /// `_summarize_metric_record_accumulators` (aiperf/records/records_manager.py)
    /// passes; `RequestRateStrategy.execute_phase`
    /// (aiperf/timing/strategies/request_rate.py) sends the first request
    /// `next_interval()` after the phase start, 1 / rate for a constant rate.
    #[test]
    fn aiperf_rates_divide_by_its_phase_window() {
        use metronome_core::measure::{Slo, StreamTiming};
        use metronome_core::plan::{example_plan, Plan};
        use metronome_core::schedule::Arrival;
        const MS: u64 = 1_000_000;
        // 4/s constant, no warmup: requests due at 0, 250, 500, 750 ms,
        // each sent 1 ms late, 3 content chunks at +100, +200, +400 ms of
        // its send, [DONE] at +410 ms: the last completion at 1161 ms.
        let mut rec = Box::new(Recorder::new());
        for k in 0..4u64 {
            let sent = k * 250 * MS + MS;
            rec.record_sent(k * 250 * MS, sent);
            let mut t = StreamTiming::new(k * 250 * MS, sent);
            let mut slots = Vec::new();
            for at in [100, 200, 400] {
                slots.extend(t.on_content(sent + at * MS));
            }
            t.on_done(sent + 410 * MS);
            rec.record_stream(&t, &slots, &Slo::default()).unwrap();
            rec.record_done_at(sent + 410 * MS);
        }
        let plan = Plan {
            rate: 4.0,
            warmup_ns: 0,
            ..example_plan()
        };
        let phase = PhaseStart::of(&plan);
        assert_eq!(
            phase,
            PhaseStart {
                zero_ns: 0,
                lead_ns: 250 * MS
            }
        );
        let a = Compat::from_recorder(Peer::Aiperf, &rec, None, phase);
        // aiperf's clock: the phase starts at 0, the requests go at 250,
        // 500, 750 and 1000 ms, the last ends at 1000 + 1 + 410 = 1411 ms.
        assert_eq!(a.window_s, 1.411);
        assert_eq!(a.request_throughput_rps, 4.0 / 1.411);
        assert_eq!(a.output_throughput_tokens_per_s, 12.0 / 1.411);
        // E2E output token throughput: 3 tokens / 400 ms per request.
        let e2e = &a.metrics["e2e_output_token_throughput"];
        assert_eq!((e2e.count, e2e.min, e2e.max), (4, 7.5, 7.5));
        // vLLM and guidellm: the real window, first send (1 ms) to the
        // last completion (1161 ms).
        let v = Compat::from_recorder(Peer::Vllm, &rec, None, phase);
        assert_eq!(v.window_s, 1.16);
        assert_eq!(v.request_throughput_rps, 4.0 / 1.16);
        // A Poisson schedule already starts one gap after its zero; a
        // warmup moves the zero to its end.
        let poisson = Plan {
            arrival: Arrival::Poisson,
            warmup_ns: 100 * MS,
            ..plan
        };
        let p = PhaseStart::of(&poisson);
        assert_eq!(
            p,
            PhaseStart {
                zero_ns: 100 * MS,
                lead_ns: 0
            }
        );
        assert_eq!(p.window_ns(&rec), 1061 * MS);
    }

    /// Five streams recorded as the ledger records them (the recorder's
    /// histograms, the exact samples through `record_peer_samples`): each
    /// view's `exact` is the peer's own method over the per-request values.
    /// The expected values are numpy's (numpy 2.4), from
    /// `python3 -c 'import numpy as np; print(np.percentile([20, 10, 35, 5, 25], [50, 90, 95, 99, 99.9]))'`
    /// and likewise for each list below; guidellm's by its
    /// `Percentiles.from_pdf` (np.unique, np.cumsum, np.searchsorted
    /// side="left") run on the (value, weight) pairs.
    #[test]
    fn views_take_the_peers_percentiles_of_the_samples() {
        use metronome_core::measure::{record_peer_samples, Exact, SampleSink, Slo, StreamTiming};
        const MS: u64 = 1_000_000;
        let mut rec = Box::new(Recorder::new());
        let mut samples = ExactSamples::with_peers(
            8,
            exact_metrics(&[Peer::Vllm, Peer::Guidellm, Peer::Aiperf]),
        );
        // (content chunk arrivals ms, usage tokens, end of stream ms), all
        // sent at 0.
        let streams: [(&[u64], Option<u32>, u64); 5] = [
            (&[20, 30, 50], None, 60),
            (&[10, 40], None, 45),
            (&[35, 36, 37, 38, 90], None, 95),
            (&[5], None, 8),
            (&[25, 45, 65], Some(7), 70),
        ];
        for (chunks, usage, end) in streams {
            let mut t = StreamTiming::new(0, 0);
            rec.record_sent(0, 0);
            let mut slots = Vec::new();
            for &at in chunks {
                slots.extend(t.on_content(at * MS));
            }
            if let Some(u) = usage {
                t.on_usage(u);
            }
            t.on_done(end * MS);
            rec.record_stream(&t, &slots, &Slo::default()).unwrap();
            rec.record_done_at(end * MS);
            let s = t.summary().unwrap();
            samples.record(Exact::ServiceTime, end * MS);
            record_peer_samples(&mut samples, &t, &slots, s.tokens);
        }
        let close = |got: f64, want: f64| (got - want).abs() < 1e-9;
        let check = |v: &Compat, name: &str, method: Method, want: [f64; 5]| {
            let e = v.metrics[name]
                .exact
                .as_ref()
                .unwrap_or_else(|| panic!("{name}"));
            assert_eq!(e.method, method, "{name}");
            let got = [e.p50, e.p90, e.p95, e.p99, e.p999];
            assert!(
                got.iter().zip(want).all(|(&g, w)| close(g, w)),
                "{}.{name}: {got:?}, numpy {want:?}",
                v.peer
            );
        };
        let all = Some(&samples);
        let v = Compat::from_recorder(Peer::Vllm, &rec, all, PhaseStart::default());
        check(&v, "ttft", Method::Linear, [20.0, 31.0, 33.0, 34.6, 34.96]);
        // 15, 30, 13.75 and 40 / 6 ms (6.666666, ns rounded down).
        check(
            &v,
            "tpot",
            Method::Linear,
            [14.375, 25.5, 27.75, 29.55, 29.955],
        );
        check(&v, "e2el", Method::Linear, [50.0, 80.0, 85.0, 89.0, 89.9]);
        assert!(v.metrics["itl"].exact.is_none());
        assert!(v
            .notes
            .last()
            .unwrap()
            .contains("numpy's linear percentile, as vLLM"));
        let a = Compat::from_recorder(Peer::Aiperf, &rec, all, PhaseStart::default());
        check(
            &a,
            "time_to_first_token",
            Method::Linear,
            [20.0, 31.0, 33.0, 34.6, 34.96],
        );
        check(
            &a,
            "time_to_second_token",
            Method::Linear,
            [15.0, 27.0, 28.5, 29.7, 29.97],
        );
        check(
            &a,
            "request_latency",
            Method::Linear,
            [50.0, 80.0, 85.0, 89.0, 89.9],
        );
        check(
            &a,
            "inter_token_latency",
            Method::Linear,
            [14.375, 25.5, 27.75, 29.55, 29.955],
        );
        // 66.666666, 33.333333, 72.727272 and 150 tokens/s.
        check(
            &a,
            "output_token_throughput_per_user",
            Method::Linear,
            [
                69.696969,
                126.8181816,
                138.4090908,
                147.68181816,
                149.768181816,
            ],
        );
        assert!(a.metrics["inter_chunk_latency"].exact.is_none());
        let g = Compat::from_recorder(Peer::Guidellm, &rec, all, PhaseStart::default());
        let w = Method::WeightedRank;
        check(
            &g,
            "time_to_first_token_ms",
            w,
            [20.0, 35.0, 35.0, 35.0, 35.0],
        );
        // (15, 2), (30, 1), (13.75, 4), (6.666666, 6).
        check(
            &g,
            "inter_token_latency_ms",
            w,
            [13.75, 15.0, 30.0, 30.0, 30.0],
        );
        // (16.666666, 3), (20, 2), (18, 5), (5, 1), (9.285714, 7).
        check(
            &g,
            "time_per_output_token_ms",
            w,
            [16.666666, 20.0, 20.0, 20.0, 20.0],
        );
        check(&g, "request_latency", w, [60.0, 95.0, 95.0, 95.0, 95.0]);
        assert_eq!(
            g.metrics["time_per_output_token_ms"]
                .exact
                .as_ref()
                .unwrap()
                .count,
            18
        );
        // Without the samples (or after a merge): histograms, and the note
        // says so.
        let h = Compat::from_recorder(Peer::Vllm, &rec, None, PhaseStart::default());
        assert!(h.metrics.values().all(|m| m.exact.is_none()));
        assert!(h
            .notes
            .last()
            .unwrap()
            .starts_with("percentiles are histogram buckets"));
        let merged = v.clone().without_exact();
        assert_eq!(merged.notes, h.notes);
        // A plain run's samples hold no peer metric: histograms.
        let mut plain = ExactSamples::with_capacity(8);
        plain.record(Exact::ServiceTime, 60 * MS);
        assert!(
            Compat::from_recorder(Peer::Guidellm, &rec, Some(&plain), PhaseStart::default())
                .metrics
                .values()
                .all(|m| m.exact.is_none())
        );
    }

    #[test]
    fn each_peer_once_in_order() {
        assert_eq!(
            peers_once([Peer::Guidellm, Peer::Guidellm, Peer::Vllm]),
            vec![Peer::Guidellm, Peer::Vllm]
        );
    }
}
