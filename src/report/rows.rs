//! A report's rows: one per report interval ([`IntervalReport`]), per
//! `--stages` stage ([`StageReport`]), per request name of a mix
//! ([`RequestReport`]), and the sessions of a conversational run
//! ([`SessionsReport`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::metric::Metric;

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
    /// Mean service time (completion - actual send) of its successes, ms:
    /// whether the server answered slower than before (`behind`). Absent
    /// when none succeeded, and in reports of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_mean_ms: Option<f64>,
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
    /// [`Transfer`](super::Transfer)).
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
    /// Which part of the run the row is of: absent for the schedule's
    /// rows (`intervals`), `"drain"` for the rows after the end of the
    /// schedule (`drain`), so that a row read alone (a line of
    /// `--out-intervals`) says which it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// Live rows only (`--out-intervals`, the dashboard): `Some(false)`
    /// for a row published before every request due in it was sent,
    /// dropped or given up (its by-intended-time counts may still grow;
    /// `scheduled` is the schedule's), `Some(true)` for the complete row
    /// published again in its place; absent for a row complete when first
    /// published, and in a report (whose rows are all complete). See
    /// docs/live.md, "Provisional rows".
    #[serde(default, rename = "final", skip_serializing_if = "Option::is_none")]
    pub complete: Option<bool>,
}

/// The part of a run an interval row is of (its `phase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// After the end of the schedule (or the stop): replies still in
    /// flight, and sends of a backlog (the report's `drain`).
    Drain,
}

impl IntervalReport {
    /// Whether the row is provisional: published live before it was
    /// complete (`"final": false`), to be published again complete.
    pub fn is_provisional(&self) -> bool {
        self.complete == Some(false)
    }
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
