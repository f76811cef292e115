//! Building the report of a run: the engine's output and the plan, summarised
//! into a [`Report`], with the warnings that say when its numbers cannot be
//! trusted as they stand.

use std::time::{SystemTime, UNIX_EPOCH};

use metronome_core::engine::RunOutput;
use metronome_core::plan::{Model as PlanModel, Plan};
use metronome_core::rng;

use super::{
    ms, ArrivalReport, Errors, Generator, IntervalReport, Metrics, Model, Report, Requests,
    SloReport, SCHEMA,
};
use crate::cli::{ArrivalArg, RunArgs};

/// A unique id of a run: its start in Unix seconds, then 32 bits mixed from
/// the start time and the seed.
pub fn run_id(started: SystemTime, seed: u64) -> String {
    let t = started.duration_since(UNIX_EPOCH).unwrap_or_default();
    let tag = rng::mix64(t.as_nanos() as u64 ^ seed) & 0xffff_ffff;
    format!("{}-{tag:08x}", t.as_secs())
}

impl Report {
    /// Builds the report of a run from the engine's output: counts, rates,
    /// metrics, intervals, the generator's cost and the warnings that say when
    /// the numbers cannot be trusted. Thresholds are left empty: the caller
    /// evaluates them against the finished report.
    pub fn from_run(
        plan: &Plan<'_>,
        out: &RunOutput,
        engine: &str,
        run_id: String,
        args: &RunArgs,
    ) -> Report {
        let arrival = args.arrival;
        let url = args.url.as_str();
        let rec = &out.recorder;
        let closed = matches!(plan.model, PlanModel::Closed { .. });
        let secs = out.measured_ns as f64 / 1e9;
        let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        let errors = rec.errors_total();
        let completed = rec.ok + errors;
        let sent = rec.sent;
        let cpu_s = out.cpu_ns as f64 / 1e9;
        let spin_s = out.spin_ns as f64 / 1e9;
        let per_req = |s: f64| if sent > 0 { s * 1e6 / sent as f64 } else { 0.0 };
        let offered = if closed {
            0.0
        } else {
            plan.rate / f64::from(plan.shard.count)
        };
        let goodput = if rec.scheduled > 0 {
            rec.good as f64 / rec.scheduled as f64
        } else {
            0.0
        };
        let intervals = out
            .intervals
            .iter()
            .enumerate()
            .map(|(i, iv)| IntervalReport {
                start_s: i as f64 * plan.interval_ns as f64 / 1e9,
                sent: iv.sent,
                ok: iv.ok,
                errors: iv.errors,
                unsent: iv.unsent,
                p50: ms(iv.latency.quantile(0.5)),
                p99: ms(iv.latency.quantile(0.99)),
                max: ms(iv.latency.max()),
                send_lag_p99: ms(iv.send_lag.quantile(0.99)),
            })
            .collect();
        let mut report = Report {
            schema: SCHEMA.to_string(),
            run_id,
            target: url.to_string(),
            engine: engine.to_string(),
            model: if closed { Model::Closed } else { Model::Open },
            arrival: ArrivalReport {
                process: if closed {
                    "closed".to_string()
                } else {
                    format!("{arrival:?}").to_lowercase()
                },
                burst_size: (arrival == ArrivalArg::Burst && !closed).then_some(args.burst_size),
                burstiness: (arrival == ArrivalArg::Gamma && !closed).then_some(args.burstiness),
            },
            seed: plan.seed,
            shard: format!("{}/{}", plan.shard.index, plan.shard.count),
            closed_workers: match plan.model {
                PlanModel::Closed { workers, .. } => workers,
                PlanModel::Open => 0,
            },
            offered_rps: offered,
            achieved_rps: per_s(sent),
            throughput_rps: per_s(rec.ok),
            duration_s: secs,
            planned_duration_s: plan.duration_ns as f64 / 1e9,
            warmup_s: plan.warmup_ns as f64 / 1e9,
            start_unix_ns: out.start_unix_ns,
            start_time: crate::units::rfc3339_ns(out.start_unix_ns),
            start_at: args
                .start_at
                .map(|t| crate::units::rfc3339_ns(metronome_core::engine::unix_ns(t))),
            start_offset_ns: out.start_late_ns,
            shard_starts: Vec::new(),
            requests: Requests {
                scheduled: rec.scheduled,
                sent,
                ok: rec.ok,
                errors,
                dropped: rec.dropped,
                unsent: rec.unsent_total(),
                retried: rec.retried,
                timeouts: rec.timeouts,
                good: rec.good,
            },
            errors: Errors::from_recorder(rec),
            error_rate: if completed > 0 {
                errors as f64 / completed as f64
            } else {
                0.0
            },
            goodput,
            output_tokens_per_s: per_s(rec.output_tokens),
            slo: SloReport {
                latency_ms: plan.slo.latency_ns.map(ms),
                ttft_ms: plan.slo.ttft_ns.map(ms),
                itl_ms: plan.slo.itl_ns.map(ms),
                tpot_ms: plan.slo.tpot_ns.map(ms),
            },
            metrics: Metrics::from_recorder(
                rec,
                matches!(
                    plan.model,
                    PlanModel::Closed {
                        expected_interval_ns: Some(_),
                        ..
                    }
                ),
            ),
            intervals,
            generator: Generator {
                threads: out.threads.len() as u32,
                cpu_s,
                spin_s,
                cpu_us_per_request: per_req(cpu_s),
                work_us_per_request: per_req((cpu_s - spin_s).max(0.0)),
                connections_opened: out.connections_opened,
                peak_connections: out.peak_connections,
                waited_for_connection: out.waited_for_connection,
                connections_closed_idle: rec.idle_closed,
                connections_unsolicited: rec.unsolicited,
                stopped: out.stopped,
                warnings: out.warnings.clone(),
            },
            thresholds: Vec::new(),
            interrupted: false,
            partial: false,
        };
        report.generator.warnings.extend(warnings(&report, plan));
        report
    }
}

/// Plain warnings when the numbers cannot be trusted as they stand.
fn warnings(r: &Report, plan: &Plan<'_>) -> Vec<String> {
    let mut w = Vec::new();
    if r.model == Model::Closed {
        w.push(
            "closed loop: each worker waits for its reply before sending again, so a stall \
             hides in the requests that were never sent (coordinated omission); \
             use the open model to measure"
                .to_string(),
        );
    }
    if r.generator.stopped {
        w.push(format!(
            "the run was stopped early after {:.2}s; the report covers what was measured",
            r.duration_s
        ));
    }
    let lag_p99 = r.metrics.send_lag.p99;
    let exhausted = plan.model == PlanModel::Open
        && r.generator.waited_for_connection > 0
        && r.generator.peak_connections >= u64::from(plan.max_connections);
    if exhausted {
        w.push(format!(
            "the connection pool was exhausted ({} connections): {} requests waited for a free \
             connection; their latency includes the wait (raise --max-connections to send on time)",
            plan.max_connections, r.generator.waited_for_connection
        ));
    } else if r.model == Model::Open && lag_p99 > 1.0 {
        w.push(format!(
            "the generator fell behind its schedule: send lag p99 is {lag_p99:.3} ms (max {:.3} ms); \
             latency is still measured from the intended time",
            r.metrics.send_lag.max
        ));
    }
    if r.model == Model::Open
        && r.offered_rps > 0.0
        && r.achieved_rps < 0.99 * r.offered_rps
        && !r.generator.stopped
    {
        w.push(format!(
            "achieved {:.1} req/s is below the offered {:.1} req/s",
            r.achieved_rps, r.offered_rps
        ));
    }
    if r.requests.unsent > 0 {
        let by = &r.errors.unsent_by_reason;
        w.push(format!(
            "{} requests were never sent: {} found no connection (refused or unreachable), {} \
             waited for a free connection until the end",
            r.requests.unsent,
            by.get("connect").copied().unwrap_or(0),
            by.get("timeout").copied().unwrap_or(0),
        ));
    }
    if r.requests.dropped > 0 {
        w.push(format!(
            "{} requests were dropped above --max-in-flight {} and never sent",
            r.requests.dropped, plan.max_in_flight
        ));
    }
    if r.error_rate > 0.5 {
        w.push(format!(
            "errors dominate: {:.1}% of completed requests failed; latency covers successes only",
            100.0 * r.error_rate
        ));
    }
    w
}
