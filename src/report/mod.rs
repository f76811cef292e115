//! The `metronome.report/v1` report: its schema (the types below, serialized
//! as the JSON documented in docs/report.md) and every form it takes.
//!
//! - [`build`]: a run's output and plan -> a [`Report`], with its warnings.
//! - [`behind`]: where an open-loop run fell behind its schedule, and why.
//! - `metric`: [`Metric`], one histogram summarised, and its
//!   [`ExactPercentiles`].
//! - [`num`]: numbers for people (every text, SVG and log line).
//! - [`text`]: the one-screen summary (`--format text`).
//! - [`hgrm`]: HdrHistogram's percentile distribution (`--hgrm`).
//! - [`hlog`]: HdrHistogram's compressed V2 encoding and interval log (`--hlog`).
//! - [`svg`]: the plots (`--svg`).
//! - [`html`]: the self-contained HTML page (`--html`).
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
//! call into it, never the other way.
//!
//! The numbers a report derives from its counts (error rate, goodput, CPU
//! per request) have one home, [`Report::derive`], which a run's report and
//! a merge both call; counters add up with the `add` methods of their types
//! ([`Requests::add`], [`Errors::add`], [`Window::add`],
//! [`IntervalReport::add`], [`Generator::add`]).

pub mod behind;
pub mod build;
pub mod compat;
pub mod hgrm;
pub mod hlog;
pub mod html;
pub mod merge;
mod metric;
pub mod num;
pub mod repeat;
pub mod show;
pub mod svg;
pub mod sweep;
pub mod text;
pub mod threshold;
pub mod workload;

use std::collections::BTreeMap;
use std::fmt;

use metronome_core::histogram::Histogram;
use metronome_core::measure::{ErrorKind, FramingCause, Recorder, Unsent};
use metronome_core::plan::WarmUp;
use serde::{Deserialize, Serialize};

pub use metric::{ms, ExactPercentiles, Method, Metric};

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
}

/// The protocol of a report in one line: the protocol, over TLS its
/// versions and ALPN, over HTTP/2 the streams per connection; `None` for a
/// report of an older version, which does not say. E.g. `h2; TLS TLSv1.3
/// x2; ALPN h2 x2; at most 7 streams at once on a connection (client cap
/// 100, server's SETTINGS_MAX_CONCURRENT_STREAMS 100)`.
pub fn protocol_line(r: &Report) -> Option<String> {
    let mut line = r.protocol.clone()?;
    let c = &r.connections;
    if !c.tls_versions.is_empty() {
        let list = |m: &BTreeMap<String, u64>| {
            m.iter()
                .map(|(k, n)| format!("{k} x{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        line += &format!("; TLS {}; ALPN {}", list(&c.tls_versions), list(&c.alpn));
    }
    if let Some(h) = c.h2 {
        let server = h
            .server_max_streams
            .map_or_else(|| "unlimited".to_string(), |n| n.to_string());
        line += &format!(
            "; at most {} at once on a connection (client cap {}, server's \
             SETTINGS_MAX_CONCURRENT_STREAMS {server})",
            counted(h.peak_streams.into(), "stream"),
            h.client_max_streams
        );
    }
    Some(line)
}

/// How the engine's connections were set up, over every connection it
/// opened (pre-opened ones, before the clock, included).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectionsReport {
    /// The target is `https://`.
    pub tls: bool,
    /// `--insecure`: the server's certificate was not verified.
    pub insecure: bool,
    /// `SSLKEYLOGFILE` was set: the TLS session keys were appended to the
    /// file it names. (Absent in reports of older versions.)
    #[serde(default)]
    pub keylog: bool,
    /// TCP connect time (socket to established), ms.
    pub connect: Option<Metric>,
    /// TLS handshake time (established to handshake done), ms; https only.
    pub tls_handshake: Option<Metric>,
    /// TLS handshakes that resumed an earlier session.
    pub tls_resumed: u64,
    /// TLS handshakes that failed, by kind (every kind listed on https):
    /// certificate, protocol, timeout.
    pub handshake_failures: BTreeMap<String, u64>,
    /// The warm start of the pre-opened connections (`--warm-up`), before
    /// the clock: never counted as load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_up: Option<WarmUpReport>,
    /// Completed TLS handshakes by the version agreed (`TLSv1.2`,
    /// `TLSv1.3`); https only. (Absent in reports of older versions.)
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tls_versions: BTreeMap<String, u64>,
    /// Completed TLS handshakes by the ALPN protocol the server chose
    /// (`http/1.1`, `h2`, or `none`); https only. (Absent in reports of
    /// older versions.)
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub alpn: BTreeMap<String, u64>,
    /// HTTP/2 runs: the streams carried per connection (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h2: Option<H2Streams>,
}

/// How many streams HTTP/2 connections carried at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct H2Streams {
    /// The most streams (requests) open at once on one connection.
    pub peak_streams: u32,
    /// The most the client would open on one (`--max-streams`, else 100).
    pub client_max_streams: u32,
    /// The server's `SETTINGS_MAX_CONCURRENT_STREAMS`, the smallest any
    /// connection was given; null when the server never set it (unlimited)
    /// or no stream started.
    pub server_max_streams: Option<u32>,
}

/// What the warm start before the clock did (`--warm-up`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WarmUpReport {
    /// `request` or `check`.
    pub mode: String,
    /// Warm-up requests sent, one per pre-opened connection (and one per
    /// connection opened again).
    pub requests: u64,
    /// Of them, answered with a complete response (any status).
    pub answered: u64,
    /// Of them, failed: the connection was opened again or left out.
    pub failed: u64,
    /// Connections that received bytes before any request: closed.
    pub unsolicited: u64,
    /// Median service time of the answered warm-up requests, ms: the
    /// pool's first estimate.
    pub service_p50_ms: Option<f64>,
}

impl WarmUpReport {
    /// The warm-up an engine reported, for a plan's mode; `None` when off.
    pub fn from_warm(warm: &metronome_core::engine::Warm, mode: WarmUp) -> Option<Self> {
        let mode = match mode {
            WarmUp::Off => return None,
            WarmUp::Check => "check",
            WarmUp::Request => "request",
        };
        Some(WarmUpReport {
            mode: mode.to_string(),
            requests: warm.requests,
            answered: warm.answered,
            failed: warm.failed,
            unsolicited: warm.unsolicited,
            service_p50_ms: warm.median_service_ns().map(|ns| ns as f64 / 1e6),
        })
    }
}

impl ConnectionsReport {
    /// The set-up an engine measured, for a plain or TLS target.
    pub fn from_setup(setup: &metronome_core::engine::Setup, tls: bool, insecure: bool) -> Self {
        let metric = |h: &Histogram| (h.count() > 0).then(|| Metric::from_histogram(h));
        let mut tls_versions = BTreeMap::new();
        let mut alpn = BTreeMap::new();
        if tls {
            for (name, n) in ["TLSv1.2", "TLSv1.3"].into_iter().zip(setup.tls_versions) {
                if n > 0 {
                    tls_versions.insert(name.to_string(), n);
                }
            }
            for (name, n) in metronome_core::engine::Setup::ALPN
                .into_iter()
                .zip(setup.alpn)
            {
                if n > 0 {
                    let name = if name.is_empty() { "none" } else { name };
                    alpn.insert(name.to_string(), n);
                }
            }
        }
        ConnectionsReport {
            warm_up: None,
            tls_versions,
            alpn,
            h2: None,
            tls,
            insecure,
            keylog: false,
            connect: metric(&setup.connect),
            tls_handshake: metric(&setup.tls_handshake),
            tls_resumed: setup.resumed,
            handshake_failures: if tls {
                metronome_core::engine::HandshakeFailure::ALL
                    .iter()
                    .map(|k| (k.name().to_string(), setup.handshake_failures[k.index()]))
                    .collect()
            } else {
                BTreeMap::new()
            },
        }
    }
}

/// The real window of a run and the rates over it (docs/metrics.md,
/// "Throughput").
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Window {
    /// First send to last completion (success or failure) of a measured
    /// request, seconds.
    pub window_s: f64,
    /// Requests sent at or after the end of the schedule (they waited for
    /// a connection or a `--max-concurrency` slot into the drain);
    /// `achieved_rps` counts only the others. (Absent in reports of older
    /// versions: read as 0.)
    #[serde(default)]
    pub late_sent: u64,
    /// Successes that completed after the end of the schedule.
    pub late_ok: u64,
    /// Output tokens of those late successes.
    pub late_output_tokens: u64,
    /// Successes completed within the schedule per second of the measured
    /// duration (`duration_s`).
    pub in_schedule_throughput_rps: f64,
    /// Output tokens of successes completed within the schedule per second
    /// of the measured duration.
    pub in_schedule_output_tokens_per_s: f64,
    /// Good requests (met every SLO) per second of the real window.
    pub goodput_rps: f64,
}

/// The bytes a run moved: every read and write on its connections from
/// the end of the warmup to the end of the drain, by the time it
/// completed, response heads and bodies as on the wire (over TLS, the
/// plaintext after decryption; HTTP/2: frames, headers HPACK-encoded).
/// The sum of the interval rows' `bytes_received` and `bytes_sent`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Transfer {
    /// Bytes read.
    pub received_bytes: u64,
    /// Bytes written.
    pub sent_bytes: u64,
    /// `received_bytes` per second of the real window (`window.window_s`).
    pub received_per_s: f64,
    /// `sent_bytes` per second of the real window.
    pub sent_per_s: f64,
}

impl Transfer {
    /// The transfer of `received` and `sent` bytes over `window_s` seconds.
    pub fn new(received: u64, sent: u64, window_s: f64) -> Transfer {
        let per_s = |n: u64| {
            if window_s > 0.0 {
                n as f64 / window_s
            } else {
                0.0
            }
        };
        Transfer {
            received_bytes: received,
            sent_bytes: sent,
            received_per_s: per_s(received),
            sent_per_s: per_s(sent),
        }
    }

    /// Adds another shard's transfer: bytes and rates add up (shards run
    /// side by side).
    pub fn add(&mut self, other: &Transfer) {
        self.received_bytes += other.received_bytes;
        self.sent_bytes += other.sent_bytes;
        self.received_per_s += other.received_per_s;
        self.sent_per_s += other.sent_per_s;
    }
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

/// One stage of a `--stages` run. Every request is counted in the stage of
/// its intended time, so `scheduled = sent + dropped + unsent` and
/// `sent = ok + errors` hold row by row, and the rows add up to `requests`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageReport {
    /// Start of the stage, seconds from the schedule's zero (the start of
    /// the warmup, if any).
    pub from_s: f64,
    /// End of the stage, seconds from the schedule's zero.
    pub until_s: f64,
    /// The rate at the stage's start, requests per second (all shards).
    pub start_rps: f64,
    /// The rate at the stage's end, requests per second (all shards).
    pub target_rps: f64,
    /// Requests the stage offers by the integral of its rate, in the
    /// measured phase, this report's shards' share.
    pub offered: f64,
    /// Due requests intended in the stage (measured).
    pub scheduled: u64,
    /// Of them, sent.
    pub sent: u64,
    /// Of them, succeeded.
    pub ok: u64,
    /// Of them, sent and failed.
    pub errors: u64,
    /// Of them, dropped above `--max-in-flight`.
    pub dropped: u64,
    /// Of them, never sent otherwise.
    pub unsent: u64,
    /// Latency median of the stage's successes, ms.
    pub p50: f64,
    /// Latency p99 of the stage's successes, ms.
    pub p99: f64,
    /// The stage's latency histogram (merges exactly).
    pub latency: Metric,
}

/// One name of a request mix: its counts (`scheduled = sent + dropped +
/// unsent`, `sent = ok + errors`, row by row; the rows add up to
/// `requests`), its errors by kind, and its metrics (histograms that merge
/// exactly).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestReport {
    /// The name (`--requests` "name", or "METHOD path").
    pub name: String,
    /// Due requests of this name (measured).
    pub scheduled: u64,
    /// Of them, sent.
    pub sent: u64,
    /// Of them, succeeded.
    pub ok: u64,
    /// Of them, sent and failed.
    pub errors: u64,
    /// Of them, dropped above `--max-in-flight`.
    pub dropped: u64,
    /// Of them, never sent otherwise.
    pub unsent: u64,
    /// The failures by kind (every kind listed).
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Latency (completion - intended) of the successes, ms.
    pub latency: Metric,
    /// Service time (completion - send) of the successes, ms.
    pub service_time: Metric,
    /// Send lag (send - intended) of every sent request, ms.
    pub send_lag: Metric,
    /// Time to first token (first content - intended) of the successful
    /// streams, ms; with `--dataset` conversations each row is a turn, so
    /// this is the turn's TTFT. Absent for plain HTTP (and in reports of
    /// older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft: Option<Metric>,
}

/// How a conversational run's sessions went, warm-up included (a session
/// is a unit of the workload; its turns are measured by their own intended
/// times): `started = completed + abandoned + cut + overflowed +
/// unfinished`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionsReport {
    /// Sessions opened by the schedule (first turns that came due).
    pub started: u64,
    /// Sessions whose every turn succeeded.
    pub completed: u64,
    /// Sessions ended by a failed, dropped or unsent turn.
    pub abandoned: u64,
    /// Sessions whose next turn would have been due after the schedule's end.
    pub cut: u64,
    /// Sessions whose next turn found no room in the engine's storage
    /// (reserved for every session the schedule opens: 0 unless the run
    /// was far above its plan).
    pub overflowed: u64,
    /// Sessions still going when the run ended (a turn in flight or
    /// waiting at a stop or at the hard end).
    pub unfinished: u64,
    /// Later turns (not first ones) that came due.
    pub follow_ups: u64,
    /// `--think-time`, ms.
    pub think_time_ms: f64,
    /// Every turn of the sessions the measured schedule opens: the
    /// requests the plan offers (a session the schedule opens
    /// `offered_rps` times a second brings all its turns). 0 in reports of
    /// older versions.
    #[serde(default)]
    pub planned_turns: u64,
    /// `planned_turns` per second of the measured duration: the offered
    /// rate in requests, the unit of `achieved_rps` (`offered_rps` counts
    /// sessions). 0 in reports of older versions.
    #[serde(default)]
    pub offered_turns_per_s: f64,
}

impl SessionsReport {
    /// The report's view of core's counts, with the plan's `planned_turns`
    /// over `duration_s` measured seconds.
    pub fn new(
        s: &metronome_core::turns::Sessions,
        think_ns: u64,
        planned_turns: u64,
        duration_s: f64,
    ) -> SessionsReport {
        SessionsReport {
            planned_turns,
            offered_turns_per_s: if duration_s > 0.0 {
                planned_turns as f64 / duration_s
            } else {
                0.0
            },
            started: s.started,
            completed: s.completed,
            abandoned: s.abandoned,
            cut: s.cut,
            overflowed: s.overflowed,
            unfinished: s.unfinished(),
            follow_ups: s.follow_ups,
            think_time_ms: think_ns as f64 / 1e6,
        }
    }

    /// Several shards' sessions as one: counts add.
    pub fn merge(all: &[&SessionsReport]) -> Option<SessionsReport> {
        let first = all.first()?;
        let sum = |f: fn(&SessionsReport) -> u64| all.iter().map(|x| f(x)).sum();
        Some(SessionsReport {
            started: sum(|x| x.started),
            completed: sum(|x| x.completed),
            abandoned: sum(|x| x.abandoned),
            cut: sum(|x| x.cut),
            overflowed: sum(|x| x.overflowed),
            unfinished: sum(|x| x.unfinished),
            follow_ups: sum(|x| x.follow_ups),
            think_time_ms: first.think_time_ms,
            planned_turns: sum(|x| x.planned_turns),
            offered_turns_per_s: all.iter().map(|x| x.offered_turns_per_s).sum(),
        })
    }
}

/// Request counts: `scheduled = sent + dropped + unsent`,
/// `sent = ok + errors` (docs/report.md, "Accounting").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requests {
    /// Intended in the measured phase.
    pub scheduled: u64,
    /// Actually sent.
    pub sent: u64,
    /// Succeeded.
    pub ok: u64,
    /// Sent and failed, each with exactly one kind in `errors.by_kind`.
    pub errors: u64,
    /// Dropped above --max-in-flight (never sent).
    pub dropped: u64,
    /// Never sent otherwise: no connection could be opened, or none was free
    /// before the run's hard end (`errors.unsent_by_reason`).
    pub unsent: u64,
    /// Sent a second time on a fresh connection after the reused one was
    /// found closed before any response byte (each counted once in `sent`).
    pub retried: u64,
    /// Timed out (also counted in errors).
    pub timeouts: u64,
    /// Met every SLO.
    pub good: u64,
    /// Succeeded streams that ended after a `finish_reason` without
    /// `data: [DONE]` (counted in `ok`).
    #[serde(default)]
    pub ok_without_done: u64,
}

/// Errors by kind and status, and why requests were never sent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Errors {
    /// Sent requests that failed, by kind (every kind listed): reset, timeout, status,
    /// bad_framing, too_large, stream_cut, stream_error, no_content, not_event_stream,
    /// grpc_status.
    pub by_kind: BTreeMap<String, u64>,
    /// Non-success responses by status code (every code seen, 100..=999); they sum to
    /// `by_kind.status`.
    pub by_status: BTreeMap<String, u64>,
    /// `bad_framing` by cause (every cause listed): head, content_length, chunk_size,
    /// chunk_framing, upgrade, tls, http2, http2_protocol, no_grpc_status,
    /// unsolicited.
    pub bad_framing_by_cause: BTreeMap<String, u64>,
    /// Requests never sent, by reason (every reason listed): connect, timeout.
    pub unsent_by_reason: BTreeMap<String, u64>,
    /// `--grpc` runs only (absent otherwise): gRPC calls answered HTTP 200 that ended with
    /// a non-zero `grpc-status`, by code ("1" to "16", "other" above); they sum to
    /// `by_kind.grpc_status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_grpc_status: Option<BTreeMap<String, u64>>,
}

/// SLO bounds in ms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SloReport {
    /// Latency (E2E) bound.
    pub latency_ms: Option<f64>,
    /// Time-to-first-token bound.
    pub ttft_ms: Option<f64>,
    /// Inter-token latency bound (every gap of a request).
    pub itl_ms: Option<f64>,
    /// Time-per-output-token bound.
    pub tpot_ms: Option<f64>,
}

/// All histograms of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metrics {
    /// completion - intended send (E2E for streams).
    pub latency: Metric,
    /// completion - actual send.
    pub service_time: Metric,
    /// actual send - intended send.
    pub send_lag: Metric,
    /// first content chunk - intended send.
    pub ttft: Metric,
    /// per-token inter-token latency: each token-bearing chunk's gap spread over its tokens.
    pub itl: Metric,
    /// decode pace: (last token-bearing chunk - first) / (tokens - first chunk's tokens).
    pub tpot: Metric,
    /// gaps between consecutive token-bearing chunks, one per chunk.
    #[serde(default = "Metric::empty")]
    pub itl_chunk: Metric,
    /// first answer token (not reasoning) - intended send.
    #[serde(default = "Metric::empty")]
    pub ttfat: Metric,
    /// end of the stream - last token-bearing chunk.
    #[serde(default = "Metric::empty")]
    pub tail: Metric,
    /// Closed model with --expected-interval only: the HdrHistogram-corrected latency.
    pub latency_corrected: Option<Metric>,
}

/// One report interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntervalReport {
    /// Start of the interval, seconds after the warmup.
    pub start_s: f64,
    /// Requests sent in it.
    pub sent: u64,
    /// Requests that succeeded in it (by completion time).
    pub ok: u64,
    /// Requests that failed in it.
    pub errors: u64,
    /// Requests given up unsent in it.
    pub unsent: u64,
    /// Latency median of its successes, ms.
    pub p50: f64,
    /// Latency p99, ms.
    pub p99: f64,
    /// Latency max, ms.
    pub max: f64,
    /// Send-lag p99 of its sends, ms.
    pub send_lag_p99: f64,
    /// Due requests dropped above `--max-in-flight` in it.
    #[serde(default)]
    pub dropped: u64,
    /// Due requests that found every connection busy and waited for one.
    #[serde(default)]
    pub waited: u64,
    /// Of `waited`, those that found the pool at `--max-connections`.
    #[serde(default)]
    pub pool_full: u64,
    /// Due requests, by intended time.
    #[serde(default)]
    pub scheduled: u64,
    /// Requests sent more than 1 ms after their intended time (a wait for
    /// a connection included), by intended time.
    #[serde(default)]
    pub late: u64,
    /// Of `late`, those whose wait for a connection was the larger part of
    /// their lateness (the rest: the generator handled them late).
    #[serde(default)]
    pub late_waiting: u64,
    /// Share of the pacing threads' time spent working (CPU minus
    /// busy-wait, over the interval's length times the pacing threads),
    /// 0..1. Near 1: the generator was CPU-bound. In a merge, the busiest
    /// shard's.
    #[serde(default)]
    pub work_cpu: f64,
    /// Requests in flight at the interval's end: sent up to its end and
    /// not yet ended (`sent - ok - errors` summed over the rows so far).
    #[serde(default)]
    pub in_flight: u64,
    /// Bytes read in it (by the time each read completed; see
    /// [`Transfer`]).
    #[serde(default)]
    pub bytes_received: u64,
    /// Bytes written in it.
    #[serde(default)]
    pub bytes_sent: u64,
    /// Streams only: output tokens of the streams that succeeded in it
    /// (by completion time), per second of the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens_per_s: Option<f64>,
    /// Streams only: TTFT median of the streams whose first output came in
    /// it, ms (absent when none did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_p50_ms: Option<f64>,
    /// TTFT p99, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_p99_ms: Option<f64>,
    /// TTFT max, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_max_ms: Option<f64>,
    /// The interval's TTFT histogram (HdrHistogram V2, compressed, base64,
    /// as a metric's `hdr`): what `merge` adds to give the merged row's
    /// TTFT quantiles exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_hdr: Option<String>,
}

/// A stretch of the run in which the open loop could not keep its
/// schedule, and why, read from the interval series: intervals where more
/// than 1% of the due requests were dropped, sent over 1 ms late or never
/// sent; consecutive intervals of one cause form one stretch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Behind {
    /// Start of the stretch, seconds after the warmup.
    pub from_s: f64,
    /// End of the stretch (the end of its last interval), seconds.
    pub until_s: f64,
    /// Intervals in the stretch.
    pub intervals: u64,
    /// `in_flight_limit` (requests dropped above `--max-in-flight`),
    /// `pool_exhausted` (every connection busy with the pool at
    /// `--max-connections`: the server is slower than the connections
    /// allow), `server_slower` (requests waited for a connection while the
    /// pool was below its limit: it grows only where more connections carry
    /// more load, [`PoolReport`]),
    /// `cpu_saturated` (the pacing threads worked at least 90% of the time,
    /// busy-wait excluded) or `descheduled` (they did not, yet sent late:
    /// the host took the CPU).
    pub cause: String,
    /// One sentence with the stretch's totals and what to change.
    pub detail: String,
}

/// The generator's cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Generator {
    /// Threads of the engine.
    pub threads: u32,
    /// CPU time of the engine, seconds (user + system).
    pub cpu_s: f64,
    /// Of which busy-waiting before intended sends, seconds.
    pub spin_s: f64,
    /// cpu_s / sent, microseconds.
    pub cpu_us_per_request: f64,
    /// (cpu_s - spin_s) / sent, microseconds.
    pub work_us_per_request: f64,
    /// Connections opened in all.
    pub connections_opened: u64,
    /// Most connections open at once.
    pub peak_connections: u64,
    /// Requests that waited for a free connection.
    pub waited_for_connection: u64,
    /// Connections the server closed while idle (a close, a half-close or a 408), replaced
    /// before reuse and charged to no request.
    pub connections_closed_idle: u64,
    /// Connections closed because bytes arrived that no request asked for (after a
    /// complete response, or while idle), charged to no request.
    pub connections_unsolicited: u64,
    /// True when the run was stopped early (Ctrl-C).
    pub stopped: bool,
    /// Plain warnings: when the numbers cannot be trusted.
    pub warnings: Vec<String>,
    /// Where and why the open loop fell behind its schedule; empty when it
    /// kept it (and for the closed model).
    #[serde(default)]
    pub behind: Vec<Behind>,
    /// What the connection pool's growth rule did (docs/connections.md).
    #[serde(default)]
    pub pool: PoolReport,
    /// With `--dashboard`: CPU time of the dashboard's thread up to the end
    /// of the run, seconds (not in `cpu_s`: it is not the engine's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dashboard_cpu_s: Option<f64>,
    /// With `--out-requests`: the per-request lines written, and the
    /// records dropped because the writer fell behind (docs/requests-out.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_requests: Option<OutRequests>,
}

/// What `--out-requests` wrote (docs/requests-out.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutRequests {
    /// Request lines written (the header line not counted).
    pub written: u64,
    /// Measured requests with no line: their records did not fit in the
    /// queue (the writer fell behind) or came after a write failed.
    pub dropped: u64,
}

/// What the connection pool's growth rule did: it grows toward what the
/// no-queue service time needs, and beyond only by probes whose
/// connections carried more load (core's `pool` module).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolReport {
    /// Where growth stopped because more connections did not carry more
    /// load (the server, or the generator, was saturated), if it did.
    pub knee: Option<KneeReport>,
    /// Probes whose connections carried more load, and were kept.
    pub probes_kept: u32,
    /// Probes that left completions flat (a knee each), closed again.
    pub probes_refused: u32,
    /// Connections the pool closed between requests: idle for 1 s above the
    /// pre-opened count, or a refused probe's.
    pub closed: u64,
}

/// The knee the pool found: with `connections` open (and requests waiting
/// for them) `completions_per_s` completed; with `probe_connections`,
/// `probe_per_s`: no more.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KneeReport {
    /// Completions per second with `connections` open.
    pub completions_per_s: f64,
    /// The connections open then.
    pub connections: u32,
    /// Completions per second with the probe's connections open.
    pub probe_per_s: f64,
    /// The connections the probe had open.
    pub probe_connections: u32,
    /// When the probe was refused, seconds after the clock's zero.
    pub at_s: f64,
}

impl PoolReport {
    /// The report of core's pool outcome.
    pub fn of(p: &metronome_core::pool::PoolOutcome) -> PoolReport {
        PoolReport {
            knee: p.knee.map(|k| KneeReport {
                completions_per_s: k.completions_per_s,
                connections: k.connections,
                probe_per_s: k.probe_per_s,
                probe_connections: k.probe_connections,
                at_s: k.at_ns as f64 / 1e9,
            }),
            probes_kept: p.probes.kept,
            probes_refused: p.probes.refused,
            closed: p.closed,
        }
    }

    /// Adds another shard's: knees add up (completions and connections),
    /// as do the counts.
    pub fn add(&mut self, other: &PoolReport) {
        self.knee = match (self.knee.take(), other.knee.clone()) {
            (Some(a), Some(b)) => Some(KneeReport {
                completions_per_s: a.completions_per_s + b.completions_per_s,
                connections: a.connections + b.connections,
                probe_per_s: a.probe_per_s + b.probe_per_s,
                probe_connections: a.probe_connections + b.probe_connections,
                at_s: a.at_s.max(b.at_s),
            }),
            (a, b) => a.or(b),
        };
        self.probes_kept += other.probes_kept;
        self.probes_refused += other.probes_refused;
        self.closed += other.closed;
    }
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
    /// True when it held. A threshold on a metric with no samples (every
    /// request failed, say) fails: there is nothing to hold.
    pub passed: bool,
    /// For a threshold on a metric (`latency.p99`, ...): how many values
    /// the metric holds; 0 is "no samples" (absent for scalars such as
    /// `error_rate`, and in reports of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<u64>,
}

impl Metrics {
    /// Every metric's name, in the report's order: its key under `metrics`
    /// in the JSON, and what [`Metrics::get`] reads (`latency_corrected`
    /// is null outside the closed model). The one list merge, thresholds
    /// and the tests check against.
    pub const NAMES: [&'static str; 10] = [
        "latency",
        "service_time",
        "send_lag",
        "ttft",
        "itl",
        "tpot",
        "itl_chunk",
        "ttfat",
        "tail",
        "latency_corrected",
    ];

    /// The metric called `name`, one of [`Metrics::NAMES`] (or `e2e`,
    /// latency's other name).
    pub fn get(&self, name: &str) -> Option<&Metric> {
        match name {
            "latency" | "e2e" => Some(&self.latency),
            "service_time" => Some(&self.service_time),
            "send_lag" => Some(&self.send_lag),
            "ttft" => Some(&self.ttft),
            "itl" => Some(&self.itl),
            "tpot" => Some(&self.tpot),
            "itl_chunk" => Some(&self.itl_chunk),
            "ttfat" => Some(&self.ttfat),
            "tail" => Some(&self.tail),
            "latency_corrected" => self.latency_corrected.as_ref(),
            _ => None,
        }
    }

    /// Summarises a recorder; `corrected` adds the closed-loop correction.
    pub fn from_recorder(rec: &Recorder, corrected: bool) -> Metrics {
        Metrics {
            latency: Metric::from_histogram(&rec.latency),
            service_time: Metric::from_histogram(&rec.service_time),
            send_lag: Metric::from_histogram(&rec.send_lag),
            ttft: Metric::from_histogram(&rec.ttft),
            itl: Metric::from_histogram(&rec.itl),
            tpot: Metric::from_histogram(&rec.tpot),
            itl_chunk: Metric::from_histogram(&rec.itl_chunk),
            ttfat: Metric::from_histogram(&rec.ttfat),
            tail: Metric::from_histogram(&rec.tail),
            latency_corrected: corrected.then(|| Metric::from_histogram(&rec.corrected)),
        }
    }
}

impl Errors {
    /// Errors of a recorder by kind (all kinds listed) and status code;
    /// `grpc`: a gRPC run, whose errors also go by `grpc-status`.
    pub fn from_recorder(rec: &Recorder, grpc: bool) -> Errors {
        let by_kind = ErrorKind::ALL
            .iter()
            .map(|k| (k.name().to_string(), rec.errors[k.index()]))
            .collect();
        let by_status = rec
            .status
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, &n)| ((i + 100).to_string(), n))
            .collect();
        let bad_framing_by_cause = FramingCause::ALL
            .iter()
            .map(|c| (c.name().to_string(), rec.framing[c.index()]))
            .collect();
        let unsent_by_reason = Unsent::ALL
            .iter()
            .map(|u| (u.name().to_string(), rec.unsent[u.index()]))
            .collect();
        let by_grpc_status = grpc.then(|| {
            rec.grpc
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(i, &n)| (grpc_code_key(i), n))
                .collect()
        });
        Errors {
            by_kind,
            by_status,
            bad_framing_by_cause,
            unsent_by_reason,
            by_grpc_status,
        }
    }
}

/// The report key of [`Recorder::grpc`]'s index `i`: the code, or
/// `other` for [`GRPC_OTHER`](metronome_core::measure::GRPC_OTHER).
fn grpc_code_key(i: usize) -> String {
    if i == metronome_core::measure::GRPC_OTHER {
        "other".to_string()
    } else {
        i.to_string()
    }
}

/// `n` and a noun, singular for 1: `counted(1, "worker")` is "1 worker",
/// `counted(2, "worker")` "2 workers", `counted(1500, "request")` "1,500 requests".
pub fn counted(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{} {noun}s", num::count(n))
    }
}

/// The name of gRPC status `code` (as `grpc-status` carries it), or
/// `None` for a code the gRPC spec does not define.
///
/// ```
/// assert_eq!(metronome::report::grpc_code_name("14"), Some("UNAVAILABLE"));
/// assert_eq!(metronome::report::grpc_code_name("other"), None);
/// ```
pub fn grpc_code_name(code: &str) -> Option<&'static str> {
    const NAMES: [&str; 17] = [
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];
    NAMES.get(code.parse::<usize>().ok()?).copied()
}

// The numbers a report derives from its counts, and how counts add up. A
// run's report ([`build`]) and a merge of shards ([`merge`]) both end in
// [`Report::derive`]; a merge adds its shards' counters with the `add`
// methods below, so a new counter is one edit in its type.

/// `part / whole`, 0 when `whole` is 0.
fn ratio(part: u64, whole: u64) -> f64 {
    if whole > 0 {
        part as f64 / whole as f64
    } else {
        0.0
    }
}

/// `seconds` of CPU per request in microseconds, 0 when none was sent.
fn us_per_request(seconds: f64, sent: u64) -> f64 {
    if sent > 0 {
        seconds * 1e6 / sent as f64
    } else {
        0.0
    }
}

impl Report {
    /// Sets every ratio the report derives from its counts: `error_rate`
    /// (errors / (ok + errors)), `goodput` (good / scheduled) and the
    /// generator's `cpu_us_per_request` and `work_us_per_request` (CPU, and
    /// CPU minus busy-wait, per request sent); each is 0 when its
    /// denominator is. A run's report and a merge of shards both call it,
    /// so the two agree on every such number.
    ///
    /// Rates are not derived here: a run divides its counts by its own
    /// durations, and a merge adds its shards' rates (the shards run side
    /// by side, over windows the counts alone do not give).
    ///
    /// # Example
    /// ```
    /// # let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/report.md")).unwrap();
    /// # let mut r: metronome::report::Report =
    /// #     serde_json::from_str(doc.split("```json").nth(1).unwrap().split("```").next().unwrap()).unwrap();
    /// r.requests.sent = 0;
    /// r.generator.cpu_s = 1.5;
    /// r.derive();
    /// assert_eq!(r.generator.cpu_us_per_request, 0.0);
    /// ```
    pub fn derive(&mut self) {
        let q = &self.requests;
        self.error_rate = ratio(q.errors, q.ok + q.errors);
        self.goodput = ratio(q.good, q.scheduled);
        let g = &mut self.generator;
        g.cpu_us_per_request = us_per_request(g.cpu_s, q.sent);
        g.work_us_per_request = us_per_request((g.cpu_s - g.spin_s).max(0.0), q.sent);
    }
}

impl Requests {
    /// Adds another shard's (or interval's) counts to these.
    pub fn add(&mut self, other: &Requests) {
        self.scheduled += other.scheduled;
        self.sent += other.sent;
        self.ok += other.ok;
        self.errors += other.errors;
        self.dropped += other.dropped;
        self.unsent += other.unsent;
        self.retried += other.retried;
        self.timeouts += other.timeouts;
        self.good += other.good;
        self.ok_without_done += other.ok_without_done;
    }
}

impl Errors {
    /// Adds another shard's counts to these, key by key (a key present in
    /// either is present in the sum).
    pub fn add(&mut self, other: &Errors) {
        for (into, from) in [
            (&mut self.by_kind, &other.by_kind),
            (&mut self.by_status, &other.by_status),
            (&mut self.bad_framing_by_cause, &other.bad_framing_by_cause),
            (&mut self.unsent_by_reason, &other.unsent_by_reason),
        ] {
            for (k, v) in from {
                *into.entry(k.clone()).or_default() += v;
            }
        }
        // Present in the sum when present in either (a gRPC shard's).
        if let Some(from) = &other.by_grpc_status {
            let into = self.by_grpc_status.get_or_insert_with(BTreeMap::new);
            for (k, v) in from {
                *into.entry(k.clone()).or_default() += v;
            }
        }
    }
}

impl Window {
    /// Adds another shard's window, run side by side with this one: the
    /// window is the longer of the two, counts and rates add up.
    pub fn add(&mut self, other: &Window) {
        self.window_s = self.window_s.max(other.window_s);
        self.late_ok += other.late_ok;
        self.late_sent += other.late_sent;
        self.late_output_tokens += other.late_output_tokens;
        self.in_schedule_throughput_rps += other.in_schedule_throughput_rps;
        self.in_schedule_output_tokens_per_s += other.in_schedule_output_tokens_per_s;
        self.goodput_rps += other.goodput_rps;
    }
}

impl IntervalReport {
    /// Adds another interval (the same interval of another shard, or the
    /// next one of a stretch): counts add; quantiles cannot be merged from
    /// summaries, so each percentile, the max and the work share are the
    /// larger of the two (an upper bound).
    pub fn add(&mut self, other: &IntervalReport) {
        self.sent += other.sent;
        self.ok += other.ok;
        self.errors += other.errors;
        self.unsent += other.unsent;
        self.dropped += other.dropped;
        self.waited += other.waited;
        self.pool_full += other.pool_full;
        self.late += other.late;
        self.late_waiting += other.late_waiting;
        self.scheduled += other.scheduled;
        self.p50 = self.p50.max(other.p50);
        self.p99 = self.p99.max(other.p99);
        self.max = self.max.max(other.max);
        self.send_lag_p99 = self.send_lag_p99.max(other.send_lag_p99);
        self.work_cpu = self.work_cpu.max(other.work_cpu);
        self.in_flight += other.in_flight;
        self.bytes_received += other.bytes_received;
        self.bytes_sent += other.bytes_sent;
        self.output_tokens_per_s = match (self.output_tokens_per_s, other.output_tokens_per_s) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.add_ttft(other);
    }

    /// Adds the other row's TTFT histogram to this one's and sets the
    /// quantiles from the sum: exact, as one histogram of both would give
    /// (the max is the larger max; a quantile is its bucket's upper bound
    /// clamped to it). A row whose `ttft_hdr` does not decode keeps the
    /// larger of each quantile (an upper bound).
    fn add_ttft(&mut self, other: &IntervalReport) {
        let max = match (self.ttft_max_ms, other.ttft_max_ms) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let decode = |r: &IntervalReport| match &r.ttft_hdr {
            None => Ok(None),
            Some(t) => hlog::decode_base64_v2(t).map(Some),
        };
        match (decode(self), decode(other), max) {
            (Ok(a), Ok(b), Some(max)) => {
                let mut h = a.unwrap_or_default();
                if let Some(b) = b {
                    h.merge(&b);
                }
                let max_ns = (max * 1e6).round() as u64;
                let q = |q: f64| ms(h.quantile(q).min(max_ns));
                self.ttft_p50_ms = Some(q(0.5));
                self.ttft_p99_ms = Some(q(0.99));
                self.ttft_max_ms = Some(max);
                self.ttft_hdr = Some(hlog::base64_v2(&h));
            }
            _ => {
                let up = |a: Option<f64>, b: Option<f64>| match (a, b) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
                self.ttft_p50_ms = up(self.ttft_p50_ms, other.ttft_p50_ms);
                self.ttft_p99_ms = up(self.ttft_p99_ms, other.ttft_p99_ms);
                self.ttft_max_ms = max;
                self.ttft_hdr = None;
            }
        }
    }
}

impl Generator {
    /// Adds another shard's generator: threads, CPU times and connection
    /// counts add up, `stopped` holds when either was stopped. The
    /// per-request figures are left to [`Report::derive`]; `warnings` and
    /// `behind` are left to the caller (a merge prefixes each warning with
    /// its shard and finds the stretches again from the merged intervals).
    pub fn add(&mut self, other: &Generator) {
        self.threads += other.threads;
        self.cpu_s += other.cpu_s;
        self.spin_s += other.spin_s;
        self.connections_opened += other.connections_opened;
        self.peak_connections += other.peak_connections;
        self.waited_for_connection += other.waited_for_connection;
        self.connections_closed_idle += other.connections_closed_idle;
        self.connections_unsolicited += other.connections_unsolicited;
        self.stopped |= other.stopped;
        self.pool.add(&other.pool);
        if let Some(b) = other.out_requests {
            let a = self.out_requests.get_or_insert_with(OutRequests::default);
            a.written += b.written;
            a.dropped += b.dropped;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::counted;

    /// `Metrics::NAMES` is the report's own list: the JSON keys under
    /// `metrics`, in order, and each one readable by `get`.
    #[test]
    fn metric_names_are_the_report_keys() {
        use super::{Metric, Metrics};
        let mut m = Metrics {
            latency: Metric::empty(),
            service_time: Metric::empty(),
            send_lag: Metric::empty(),
            ttft: Metric::empty(),
            itl: Metric::empty(),
            tpot: Metric::empty(),
            itl_chunk: Metric::empty(),
            ttfat: Metric::empty(),
            tail: Metric::empty(),
            latency_corrected: Some(Metric::empty()),
        };
        let json = serde_json::to_value(&m).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut names = Metrics::NAMES.to_vec();
        names.sort_unstable();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, names);
        assert!(Metrics::NAMES.iter().all(|n| m.get(n).is_some()));
        assert_eq!(m.get("e2e"), Some(&m.latency));
        m.latency_corrected = None;
        assert_eq!(m.get("latency_corrected"), None);
        assert_eq!(m.get("nope"), None);
    }

    /// Two shards' rows of one interval: the TTFT quantiles of the sum
    /// are those of one histogram of every value (not the larger of the
    /// two: here the p50 of the sum is below shard B's), the max clamps
    /// them; a row whose `ttft_hdr` is unreadable keeps an upper bound.
    #[test]
    fn interval_rows_add_ttft_exactly() {
        use super::{hlog, ms, IntervalReport};
        use metronome_core::histogram::Histogram;
        let row = |values: &[u64]| {
            let mut h = Histogram::new();
            values.iter().for_each(|&v| h.record(v));
            IntervalReport {
                in_flight: 2,
                bytes_received: 100,
                ttft_p50_ms: Some(ms(h.quantile(0.5))),
                ttft_p99_ms: Some(ms(h.quantile(0.99))),
                ttft_max_ms: Some(ms(h.max())),
                ttft_hdr: Some(hlog::base64_v2(&h)),
                ..IntervalReport::default()
            }
        };
        let (a, b) = (&[10_000_000, 11_000_000, 12_000_000][..], &[50_000_003][..]);
        let mut sum = row(a);
        sum.add(&row(b));
        let all: Vec<u64> = a.iter().chain(b).copied().collect();
        let want = row(&all);
        assert_eq!(
            (sum.ttft_p50_ms, sum.ttft_p99_ms, sum.ttft_max_ms),
            (want.ttft_p50_ms, want.ttft_p99_ms, want.ttft_max_ms)
        );
        // The 2nd of 4 values, 11 ms: its bucket's upper bound.
        assert_eq!(sum.ttft_p50_ms, Some(11.010047));
        assert_eq!(sum.ttft_p99_ms, Some(50.000003));
        assert_eq!((sum.in_flight, sum.bytes_received), (4, 200));
        let mut bad = row(b);
        bad.ttft_hdr = Some("not base64!".into());
        let mut upper = row(a);
        upper.add(&bad);
        assert_eq!(upper.ttft_p50_ms, Some(50.000003));
        assert_eq!(upper.ttft_hdr, None);
    }

    /// "1 worker", never "1 workers".
    #[test]
    fn counted_is_singular_for_one() {
        assert_eq!(counted(0, "worker"), "0 workers");
        assert_eq!(counted(1, "worker"), "1 worker");
        assert_eq!(counted(2, "thread"), "2 threads");
    }
}
