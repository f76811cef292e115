//! The `metronome.report/v1` report: its schema (the types here, serialized
//! as the JSON documented in docs/report.md) and every form it takes.
//!
//! The types of the schema are spread by concept, each file re-exported
//! here (`report::Requests` and so on):
//!
//! - this file: [`Report`] itself, the run's [`Model`], its
//!   [`ArrivalReport`], each shard's start ([`ShardStart`]) and each
//!   threshold's outcome ([`ThresholdReport`]).
//! - `counts.rs`: [`Requests`], [`Errors`], [`Window`], [`Transfer`],
//!   [`SloReport`].
//! - `metric.rs`: [`Metric`], one histogram summarised, its
//!   [`ExactPercentiles`], and [`Metrics`], all of a run's.
//! - `rows.rs`: the rows: [`IntervalReport`], [`StageReport`],
//!   [`RequestReport`], [`SessionsReport`].
//! - `connections.rs`: [`ConnectionsReport`], with [`H2Streams`] and
//!   [`WarmUpReport`].
//! - `generator.rs`: [`Generator`], with [`Behind`], [`PoolReport`] and
//!   [`KneeReport`].
//! - `accounts.rs`: the numbers derived from the counts and how counts
//!   add up (below).
//!
//! Built, rendered and read back by the modules:
//!
//! - [`build`]: a run's output and plan -> a [`Report`], with its warnings.
//! - [`behind`]: where an open-loop run fell behind its schedule, and why.
//! - [`num`]: numbers for people (every text, SVG and log line).
//! - [`text`]: the one-screen summary (`--format text`).
//! - [`hgrm`]: HdrHistogram's percentile distribution (`--hgrm`).
//! - [`hlog`]: HdrHistogram's compressed V2 encoding and interval log (`--hlog`).
//! - [`svg`]: the plots (`--svg`).
//! - [`html`]: the self-contained HTML page (`--html`).
//! - [`argv`]: the command line a report records, secrets masked, and
//!   shell-quoted for the text summary and the page.
//! - [`threshold`]: `--threshold` expressions, checked against a report.
//! - [`show`]: a saved report or sweep read back; either printed as text or
//!   JSON (every command prints through it).
//! - [`merge`]: the reports of a run's shards checked and combined.
//! - [`sweep`]: the `metronome.sweep/v1` document: one report per rate, the
//!   knee, the table.
//! - [`workload`]: what `--openai` requests asked; input and output tokens.
//! - [`compat`]: `--metrics-compat`: the stream metrics as vLLM, guidellm
//!   or aiperf define them.
//! - [`repeat`]: `run --repeat N`: the runs and each headline number's mean
//!   and 95% confidence interval.
//!
//! This layer imports no command and no argument type: a run's report is
//! built from the plan, the engine's output and a [`build::RunMeta`]; the
//! commands (`crate::run`, `crate::sweep`, `crate::show`, `crate::merge`)
//! call into it, never the other way. Inside it the type files import in
//! one direction: `counts.rs` and `generator.rs` use no sibling,
//! `metric.rs` uses [`hlog`], `rows.rs` and `connections.rs` use
//! `metric.rs`, this file uses them all (and [`workload`], [`compat`]),
//! and `accounts.rs` uses this file and the others; none of them uses a
//! renderer.
//!
//! The numbers a report derives from its counts (error rate, goodput, CPU
//! per request) have one home, [`Report::derive`], which a run's report and
//! a merge both call; counters add up with the `add` methods of their types
//! ([`Requests::add`], [`Errors::add`], [`Window::add`],
//! [`IntervalReport::add`], [`Generator::add`]).

mod accounts;
pub mod argv;
pub mod behind;
pub mod build;
pub mod compat;
mod connections;
mod counts;
pub mod enough;
mod generator;
pub mod hgrm;
pub mod hlog;
pub mod html;
pub mod merge;
mod metric;
pub mod num;
pub mod repeat;
mod rows;
pub mod show;
pub mod svg;
pub mod sweep;
pub mod text;
pub mod threshold;
pub mod workload;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use connections::{ConnectionsReport, H2Streams, WarmUpReport, ZeroRttReport};
pub use counts::{grpc_code_name, Errors, Requests, SloReport, Transfer, Window};
pub use generator::{Behind, Generator, KneeReport, OutRequests, PoolReport};
pub use metric::{ms, ExactPercentiles, Method, Metric, Metrics};
pub use rows::{IntervalReport, Phase, RequestReport, SessionsReport, StageReport};

/// The schema name written in every report.
pub const SCHEMA: &str = "metronome.report/v1";

/// The whole report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// A unique id of this run (time and seed).
    pub run_id: String,
    /// The target URL.
    pub target: String,
    /// The protocol the requests were sent in: `http/1.1` (over TLS for
    /// an https:// target), `h2c` (HTTP/2 with prior knowledge), `h2`
    /// (HTTP/2 over TLS, ALPN h2) or `grpc` (unary gRPC over HTTP/2, h2c or
    /// h2 by the target's scheme). TLS version and ALPN are in
    /// `connections`. (Absent in reports of older versions.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// `uring` or `std`.
    pub engine: String,
    /// The command line that produced the report, word by word as given,
    /// with secrets masked (`REDACTED`: the values of `--api-key` and of
    /// credential headers such as `Authorization`, and a URL's password).
    /// A merged report keeps the first shard's (in the order given; each
    /// shard's is in `shard_starts`). (Absent in reports of older versions.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    /// `open` or `closed`.
    pub model: Model,
    /// The arrival process.
    pub arrival: ArrivalReport,
    /// The seed of every random choice.
    pub seed: u64,
    /// The shard this report covers, "K/N" ("0/1" for the whole run).
    pub shard: String,
    /// Closed-loop workers (0 for the open model).
    pub closed_workers: u32,
    /// `--profile`: the peer's load profile the run followed
    /// (`synchronous`, `concurrent:N`, `throughput`), absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// `--max-concurrency`: at most this many requests at the server at
    /// once, the others waiting in order (absent without the cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<u32>,
    /// Offered rate, requests per second (0 for the closed model).
    pub offered_rps: f64,
    /// Requests sent within the schedule (`requests.sent -
    /// window.late_sent`) per second of the measured duration: the rate
    /// the schedule was kept at.
    pub achieved_rps: f64,
    /// Successful responses per second of the real window (first send to
    /// last completion, `window.window_s`).
    pub throughput_rps: f64,
    /// Measured duration actually run, seconds.
    pub duration_s: f64,
    /// `-n N`: the run was a count, the schedule's first N measured
    /// requests (the whole run's, over every shard); absent for a run
    /// timed by its duration alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// Measured duration planned (`--duration`), seconds: the same in every
    /// shard of a run, whatever each actually ran. (Absent in reports of
    /// older versions: read as 0.)
    #[serde(default)]
    pub planned_duration_s: f64,
    /// Warmup planned before the measured phase (`--warmup`), seconds.
    #[serde(default)]
    pub warmup_s: f64,
    /// The wall-clock time of the schedule's zero (the start of the warmup,
    /// or of the measured phase without one), ns since the Unix epoch, by
    /// this machine's clock: `--start-at` when given, else the instant the
    /// clock started, connections open. (0 in reports of older versions.)
    #[serde(default)]
    pub start_unix_ns: u64,
    /// The same instant in RFC 3339, UTC, nine fractional digits.
    #[serde(default)]
    pub start_time: String,
    /// The instant requested with `--start-at` (RFC 3339, UTC, nine
    /// fractional digits), or null.
    #[serde(default)]
    pub start_at: Option<String>,
    /// How long after the schedule's zero this run really began pacing, ns
    /// (by this machine's clocks): microseconds when it waited for the zero,
    /// more when its connections were not open by then.
    #[serde(default)]
    pub start_offset_ns: u64,
    /// Merged reports only: each shard's start, in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shard_starts: Vec<ShardStart>,
    /// Request counts.
    pub requests: Requests,
    /// Errors by kind and by HTTP status code.
    pub errors: Errors,
    /// errors / (ok + errors); 0 when nothing completed.
    pub error_rate: f64,
    /// Requests that met every SLO / all scheduled requests (ok / scheduled when no SLO is set).
    pub goodput: f64,
    /// Output tokens per second of the real window (streams only).
    pub output_tokens_per_s: f64,
    /// The real window rates are divided by, the rates within the schedule,
    /// and the share of completions after it. (Absent in reports of older
    /// versions.)
    #[serde(default)]
    pub window: Window,
    /// Bytes received and sent, and their rates over the real window.
    /// (Absent in reports of older versions.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer: Option<Transfer>,
    /// The SLO bounds, ms (absent bounds are null).
    pub slo: SloReport,
    /// Latency and friends, ms.
    pub metrics: Metrics,
    /// One entry per report interval of the schedule (up to the stop, for
    /// a run stopped early).
    pub intervals: Vec<IntervalReport>,
    /// The drain: one entry per report interval after the end of the
    /// schedule (or the stop) in which requests were still sent or
    /// completed, numbered on from `intervals` (absent when nothing
    /// happened after the end). `intervals` and `drain` together hold
    /// every send and completion: their `ok` sum to `requests.ok`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drain: Vec<IntervalReport>,
    /// `--stages` runs: one row per stage, each request counted in the
    /// stage of its intended time (absent otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageReport>,
    /// `--requests`/`--targets` runs: one row per request name, each
    /// request counted under the name it sent (absent otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_request: Vec<RequestReport>,
    /// Conversations: how the sessions went (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionsReport>,
    /// The generator's own cost and warnings.
    pub generator: Generator,
    /// True when a signal (Ctrl-C, SIGTERM) stopped the run: the report
    /// covers what was measured until then.
    pub interrupted: bool,
    /// True for `merge --partial` of only some of a run's shards: counts,
    /// rates and histograms cover those shards only.
    #[serde(default)]
    pub partial: bool,
    /// Every `--threshold` and whether it held.
    pub thresholds: Vec<ThresholdReport>,
    /// Connection set-up: connect and TLS handshake times, resumptions and
    /// handshake failures. (Absent in reports of older versions.)
    #[serde(default)]
    pub connections: ConnectionsReport,
    /// `--openai` runs: endpoint, model, prompts, input and output tokens
    /// (null otherwise; absent in reports of older versions).
    #[serde(default)]
    pub workload: Option<workload::Workload>,
    /// `--metrics-compat`: the stream metrics as each peer asked defines
    /// them, one view per peer in the order given (empty without the flag;
    /// reports of older versions, which hold one view or null, read as a
    /// list of one or none).
    #[serde(default, deserialize_with = "compat::one_or_many")]
    pub compat: Vec<compat::Compat>,
    /// The one rule for "enough samples" ([`enough::SamplesNeeded`]): the
    /// values each statistic of a metric needs before the views show it
    /// and a threshold is evaluated on it. Always the current rule (absent
    /// in reports of older versions, which read as it).
    #[serde(default)]
    pub samples_needed: enough::SamplesNeeded,
}

/// One threshold and its outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThresholdReport {
    /// As written on the command line.
    pub expr: String,
    /// The measured value (ms for durations); 0 when the metric has no
    /// samples.
    pub value: f64,
    /// True when it held. A threshold that was not evaluated
    /// (`not_evaluated`) fails: a run too short to measure what the gate
    /// asks for does not pass it.
    pub passed: bool,
    /// Why the threshold was not evaluated, when it was not: its metric
    /// holds too few values for the statistic by the one rule
    /// (`samples_needed`): "no samples", or "too few samples: 5; a p99
    /// needs 100". Absent when it was evaluated (and in reports of older
    /// versions, where a metric with no samples failed as "no samples").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_evaluated: Option<String>,
    /// For a threshold on a metric (`latency.p99`, ...): how many values
    /// the metric holds; 0 is "no samples" (absent for scalars such as
    /// `error_rate`, and in reports of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<u64>,
}

/// When one shard of a merged run started.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardStart {
    /// The shard, "K/N".
    pub shard: String,
    /// Its `start_unix_ns`.
    pub start_unix_ns: u64,
    /// Its `start_offset_ns`.
    pub start_offset_ns: u64,
    /// Its command line ([`Report::argv`]); absent when its report had none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
}

impl ShardStart {
    /// When the shard really began pacing: its zero plus its offset, ns
    /// since the Unix epoch.
    pub fn began_unix_ns(&self) -> u64 {
        self.start_unix_ns.saturating_add(self.start_offset_ns)
    }
}

/// The load model of a run, written `"open"` or `"closed"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Model {
    /// Requests leave on the schedule, whether or not earlier ones were answered.
    Open,
    /// Each worker waits for its reply before sending again.
    Closed,
}

impl Model {
    /// The name written in the report: `open` or `closed`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Closed => "closed",
        }
    }
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Compares with the name written in the report, so `report.model == "closed"`
/// reads as the JSON does.
impl PartialEq<&str> for Model {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// The arrival process of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArrivalReport {
    /// constant, poisson, burst, gamma, trace (or closed).
    pub process: String,
    /// Requests per burst (burst only).
    pub burst_size: Option<u32>,
    /// Gamma shape (gamma only).
    pub burstiness: Option<f64>,
    /// `--stages`: how the rate moves within a stage, `linear` or
    /// `exponential` (absent for a steady rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<String>,
    /// `--trace`: the replayed file (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceReport>,
}

/// The trace a run replayed (`--trace`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceReport {
    /// The file, as given.
    pub file: String,
    /// Offsets in the file (all shards).
    pub offsets: u64,
    /// `--trace-speed`.
    pub speed: f64,
}
