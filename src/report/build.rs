//! Building the report of a run: the engine's output and the plan, summarised
//! into a [`Report`], with the warnings that say when its numbers cannot be
//! trusted as they stand.

use std::time::{SystemTime, UNIX_EPOCH};

use metronome_core::engine::RunOutput;

use super::behind::behind;
use super::num::{count, pct, unit};
use metronome_core::measure::{ErrorKind, Exact, NameTally, StageTally};
use metronome_core::plan::{Model as PlanModel, Plan, Profile as PlanProfile};
use metronome_core::rng;
use metronome_core::schedule::{Arrival, Ramp};

use super::{
    ms, ArrivalReport, ConnectionsReport, Errors, ExactPercentiles, Generator, IntervalReport,
    Metric, Metrics, Model, Report, RequestReport, Requests, SloReport, StageReport, TraceReport,
    WarmUpReport, Window, SCHEMA,
};
use crate::report::compat::{Compat, Peer, PhaseStart};

/// What a run's report takes from the command line besides the plan:
/// plain data, so that building a report needs no argument parser.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunMeta {
    /// The target URL, as given.
    pub url: String,
    /// `--trace`: the file the offsets were read from, as given.
    pub trace_file: Option<String>,
    /// `--start-at`: the instant the schedule's zero was set to.
    pub start_at: Option<SystemTime>,
    /// `--metrics-compat`: the peers whose definitions to reproduce, in
    /// order (each once).
    pub compat: Vec<Peer>,
    /// `--insecure`: the server's certificate was not verified.
    pub insecure: bool,
    /// A TLS key log was asked for (`SSLKEYLOGFILE`).
    pub keylog: bool,
    /// `--profile`: the peer's load profile the run followed, e.g.
    /// `concurrent:4`.
    pub profile: Option<String>,
    /// `--requests`/`--targets`: the name of each row of the plan's names
    /// (empty without a mix).
    pub request_names: Vec<String>,
    /// The protocol spoken: `http/1.1`, `h2c`, `h2` or `grpc` ([`Report::protocol`]).
    pub protocol: String,
    /// The command line, secrets masked ([`Report::argv`]).
    pub argv: Option<Vec<String>>,
    /// `--http3-0rtt` was given.
    pub zero_rtt: bool,
    /// `-n N`, as given.
    pub count: Option<u64>,
}

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
    /// evaluates them against the finished report. `engine` is the
    /// engine's name in the report, `pacers` how many of its threads paced
    /// (`run::engine::Engine` gives both).
    pub fn from_run(
        plan: &Plan<'_>,
        out: &RunOutput,
        engine: &str,
        pacers: u64,
        run_id: String,
        meta: &RunMeta,
    ) -> Report {
        let url = meta.url.as_str();
        let rec = &out.recorder;
        let closed = matches!(plan.model, PlanModel::Closed { .. });
        let secs = out.measured_ns as f64 / 1e9;
        let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        let window_s = rec.window_ns() as f64 / 1e9;
        let per_window = |n: u64| {
            if window_s > 0.0 {
                n as f64 / window_s
            } else {
                0.0
            }
        };
        let errors = rec.errors_total();
        let sent = rec.sent;
        let shards = f64::from(plan.shard.count.max(1));
        let offered = match plan.profile {
            _ if closed => 0.0,
            PlanProfile::Steady => plan.rate / shards,
            // The mean over the measured phase of what the stages or the
            // trace offer.
            _ if plan.duration_ns > 0 => {
                plan.offered_between(plan.warmup_ns, plan.end_ns())
                    / shards
                    / (plan.duration_ns as f64 / 1e9)
            }
            _ => 0.0,
        };
        let (intervals, drain, bytes) = interval_rows(plan, out, pacers);
        let mut report = Report {
            schema: SCHEMA.to_string(),
            run_id,
            target: url.to_string(),
            protocol: Some(meta.protocol.clone()),
            engine: engine.to_string(),
            argv: meta.argv.clone(),
            model: if closed { Model::Closed } else { Model::Open },
            arrival: ArrivalReport {
                process: process_name(plan).to_string(),
                burst_size: match plan.arrival {
                    Arrival::Burst { size } if !closed => Some(size),
                    _ => None,
                },
                burstiness: match plan.arrival {
                    Arrival::Gamma { burstiness } if !closed => Some(burstiness),
                    _ => None,
                },
                ramp: match plan.profile {
                    PlanProfile::Stages(s) => Some(
                        match s.ramp {
                            Ramp::Linear => "linear",
                            Ramp::Exponential => "exponential",
                        }
                        .to_string(),
                    ),
                    _ => None,
                },
                trace: match plan.profile {
                    PlanProfile::Trace(t) => Some(TraceReport {
                        file: meta.trace_file.clone().unwrap_or_default(),
                        offsets: t.offsets_ns.len() as u64,
                        speed: t.speed,
                    }),
                    _ => None,
                },
            },
            seed: plan.seed,
            shard: format!("{}/{}", plan.shard.index, plan.shard.count),
            max_concurrency: plan.max_concurrency,
            count: meta.count,
            profile: meta.profile.clone(),
            closed_workers: match plan.model {
                PlanModel::Closed { workers, .. } => workers,
                PlanModel::Open => 0,
            },
            offered_rps: offered,
            achieved_rps: per_s(sent.saturating_sub(rec.late_sent)),
            throughput_rps: per_window(rec.ok),
            duration_s: secs,
            planned_duration_s: plan.duration_ns as f64 / 1e9,
            warmup_s: plan.warmup_ns as f64 / 1e9,
            start_unix_ns: out.start_unix_ns,
            start_time: crate::units::rfc3339_ns(out.start_unix_ns),
            start_at: meta
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
                ok_without_done: rec.ok_without_done,
            },
            errors: Errors::from_recorder(
                rec,
                plan.protocol == metronome_core::plan::Protocol::Grpc,
                plan.checks.iter().any(|c| c.any()),
            ),
            // Ratios of the counts: set by `derive` below.
            error_rate: 0.0,
            goodput: 0.0,
            output_tokens_per_s: per_window(rec.output_tokens),
            transfer: Some(crate::report::Transfer::new(bytes.0, bytes.1, window_s)),
            window: Window {
                window_s,
                late_sent: rec.late_sent,
                late_ok: rec.late_ok,
                late_output_tokens: rec.late_tokens,
                in_schedule_throughput_rps: per_s(rec.ok.saturating_sub(rec.late_ok)),
                in_schedule_output_tokens_per_s: per_s(
                    rec.output_tokens.saturating_sub(rec.late_tokens),
                ),
                goodput_rps: per_window(rec.good),
            },
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
            drain,
            stages: stage_rows(plan, &out.stages),
            by_request: request_rows(&meta.request_names, &out.names),
            sessions: plan.turns.is_on().then(|| {
                crate::report::SessionsReport::new(
                    &out.recorder.sessions,
                    plan.turns.think_ns,
                    planned_turns(plan),
                    plan.duration_ns as f64 / 1e9,
                )
            }),
            generator: Generator {
                threads: out.threads.len() as u32,
                cpu_s: out.cpu_ns as f64 / 1e9,
                spin_s: out.spin_ns as f64 / 1e9,
                cpu_us_per_request: 0.0,
                work_us_per_request: 0.0,
                connections_opened: out.connections_opened,
                peak_connections: out.peak_connections,
                waited_for_connection: out.waited_for_connection,
                connections_closed_idle: rec.idle_closed,
                connections_unsolicited: rec.unsolicited,
                stopped: out.stopped,
                warnings: out.warnings.clone(),
                behind: Vec::new(),
                pool: crate::report::PoolReport::of(&out.pool),
                dashboard_cpu_s: None,
                out_requests: None,
            },
            thresholds: Vec::new(),
            compat: meta
                .compat
                .iter()
                .map(|&peer| {
                    Compat::from_recorder(peer, rec, Some(&out.exact), PhaseStart::of(plan))
                })
                .collect(),
            samples_needed: Default::default(),
            workload: None,
            interrupted: false,
            partial: false,
            connections: ConnectionsReport {
                keylog: url.starts_with("https://") && meta.keylog,
                ..ConnectionsReport::from_setup(
                    &out.setup,
                    url.starts_with("https://"),
                    meta.insecure && url.starts_with("https://"),
                )
            },
        };
        report.derive();
        // Exact percentiles where every sample was kept (and they are the
        // histogram's samples: the same count).
        for m in Exact::OWN {
            let metric = match m {
                Exact::Latency => &mut report.metrics.latency,
                Exact::ServiceTime => &mut report.metrics.service_time,
                Exact::Ttft => &mut report.metrics.ttft,
                Exact::Tpot => &mut report.metrics.tpot,
                _ => continue,
            };
            metric.exact = out
                .exact
                .sorted(m)
                .filter(|v| v.len() as u64 == metric.count)
                .and_then(|v| ExactPercentiles::of_sorted(&v));
        }
        report.connections.h2 = plan.wire.streams().map(|h| crate::report::H2Streams {
            peak_streams: out.setup.peak_streams,
            client_max_streams: match h.max_streams {
                0 => metronome_core::plan::MAX_STREAMS,
                n => n,
            },
            server_max_streams: out.setup.server_max_streams.map(|(lo, _)| lo),
        });
        report.connections.h3_0rtt = (meta.protocol == "h3")
            .then(|| crate::report::ZeroRttReport::new(meta.zero_rtt, &out.setup.zero_rtt));
        report.connections.warm_up = WarmUpReport::from_warm(&out.warm, plan.warm_up)
            .filter(|_| plan.model == PlanModel::Open);
        if report.model == Model::Open {
            report.generator.behind = behind(
                &report.intervals,
                Some(plan),
                plan.max_concurrency,
                report.duration_s,
            );
        }
        report.generator.warnings.extend(warnings(&report, plan));
        report
    }
}

/// The warning of one stretch behind schedule (`generator.behind`).
pub(crate) fn stretch_warning(b: &super::Behind) -> String {
    format!(
        "behind schedule from {} to {} ({}): {}",
        unit(b.from_s, "s"),
        unit(b.until_s, "s"),
        b.cause,
        b.detail
    )
}

/// The name of an arrival process in the report's `arrival.process`.
/// Every turn of the sessions this process's measured schedule opens
/// (arrival `j` opens the session of request `plan.request_index(j)`, as
/// both engines send it); 0 for a closed loop, which has no schedule.
fn planned_turns(plan: &Plan<'_>) -> u64 {
    if !matches!(plan.model, PlanModel::Open) {
        return 0;
    }
    let Ok(schedule) = plan.schedule(plan.shard) else {
        return 0;
    };
    schedule
        .enumerate()
        .filter(|&(_, t)| plan.is_measured(t))
        .map(|(j, _)| plan.turns.session_turns(plan.request_index(j as u64)))
        .sum()
}

/// The report's `arrival.process` of `plan`: `closed`, `trace`, or the
/// arrival process's name.
pub(crate) fn process_name(plan: &Plan<'_>) -> &'static str {
    if matches!(plan.model, PlanModel::Closed { .. }) {
        "closed"
    } else if matches!(plan.profile, PlanProfile::Trace(_)) {
        "trace"
    } else {
        arrival_name(plan.arrival)
    }
}

fn arrival_name(a: Arrival) -> &'static str {
    match a {
        Arrival::Constant => "constant",
        Arrival::Poisson => "poisson",
        Arrival::Burst { .. } => "burst",
        Arrival::Gamma { .. } => "gamma",
    }
}

/// The report's row of each name of a request mix, from the engine's
/// per-name tallies (`names[i]` is row `i`'s name).
pub fn request_rows(names: &[String], tallies: &[NameTally]) -> Vec<RequestReport> {
    names
        .iter()
        .zip(tallies)
        .map(|(name, t)| RequestReport {
            name: name.clone(),
            scheduled: t.scheduled,
            sent: t.sent,
            ok: t.ok,
            errors: t.errors,
            dropped: t.dropped,
            unsent: t.unsent,
            errors_by_kind: ErrorKind::ALL
                .iter()
                .map(|k| (k.name().to_string(), t.by_kind[k.index()]))
                .collect(),
            latency: Metric::from_histogram(&t.latency),
            service_time: Metric::from_histogram(&t.service_time),
            send_lag: Metric::from_histogram(&t.send_lag),
            ttft: (t.ttft.count() > 0).then(|| Metric::from_histogram(&t.ttft)),
        })
        .collect()
}

/// The report's row of each stage of a `--stages` plan, from the
/// engine's per-stage tallies (by intended time).
pub fn stage_rows(plan: &Plan<'_>, tallies: &[StageTally]) -> Vec<StageReport> {
    let PlanProfile::Stages(stages) = plan.profile else {
        return Vec::new();
    };
    let shards = f64::from(plan.shard.count.max(1));
    let empty = StageTally::new();
    let mut start_rps = stages.start_rps;
    (0..stages.stages.len())
        .map(|i| {
            let t = tallies.get(i).unwrap_or(&empty);
            let (from, until) = stages.bounds_ns(i);
            let target = stages.stages[i].target_rps;
            let row = StageReport {
                from_s: from as f64 / 1e9,
                until_s: until as f64 / 1e9,
                start_rps,
                target_rps: target,
                offered: plan.offered_between(from.max(plan.warmup_ns), until.max(plan.warmup_ns))
                    / shards,
                scheduled: t.scheduled,
                sent: t.sent,
                ok: t.ok,
                errors: t.errors,
                dropped: t.dropped,
                unsent: t.unsent,
                p50: ms(t.latency.quantile(0.5)),
                p99: ms(t.latency.quantile(0.99)),
                latency: Metric::from_histogram(&t.latency),
            };
            start_rps = target;
            row
        })
        .collect()
}

/// The interval rows of a run: the schedule's (up to the stop, for a run
/// stopped early), then the drain's after the end of the schedule, up to
/// the last one in which anything happened. Each row comes from the
/// interval's exact histograms, decoded one at a time. Also the bytes
/// received and sent over every interval (rows kept or not).
fn interval_rows(
    plan: &Plan<'_>,
    out: &RunOutput,
    pacers: u64,
) -> (Vec<IntervalReport>, Vec<IntervalReport>, (u64, u64)) {
    let width = plan.interval_ns.max(1);
    let schedule = if out.stopped {
        (out.measured_ns.div_ceil(width) as usize).clamp(1, plan.interval_count())
    } else {
        plan.interval_count()
    };
    let mut maker = RowMaker::new(plan, pacers);
    let mut bytes = (0u64, 0u64);
    let mut rows = Vec::new();
    out.intervals.for_each(|i, iv| {
        bytes.0 += iv.bytes_received;
        bytes.1 += iv.bytes_sent;
        rows.push(maker.row(i, iv));
    });
    let busy = |r: &IntervalReport| r.sent + r.ok + r.errors + r.unsent + r.scheduled > 0;
    let last = rows.iter().rposition(busy).map_or(0, |i| i + 1);
    rows.truncate(last.max(schedule.min(rows.len())));
    let mut drain = rows.split_off(schedule.min(rows.len()));
    for row in &mut drain {
        row.phase = Some(super::Phase::Drain);
    }
    (rows, drain, bytes)
}

/// Makes the interval rows of a run one at a time, in order from the
/// first (`in_flight` runs over them): the final report's and the live
/// ones (`--out-intervals`, docs/live.md) are made by this same code.
#[derive(Clone, Debug)]
pub struct RowMaker {
    /// Sent up to the end of the last row made and not yet ended.
    in_flight: u64,
    stream: bool,
    interval_ns: u64,
    pacers: u64,
}

impl RowMaker {
    /// Rows of `plan`'s intervals, paced by `pacers` threads
    /// (`run::engine::Engine::pacers`).
    pub fn new(plan: &Plan<'_>, pacers: u64) -> RowMaker {
        RowMaker {
            in_flight: 0,
            stream: plan.protocol == metronome_core::plan::Protocol::OpenAiSse,
            interval_ns: plan.interval_ns,
            pacers,
        }
    }

    /// The width of an interval, seconds.
    pub fn width_s(&self) -> f64 {
        self.interval_ns.max(1) as f64 / 1e9
    }

    /// Sets the pacing threads (known once the engine's threads started).
    pub fn set_pacers(&mut self, pacers: u64) {
        self.pacers = pacers;
    }

    /// The row of interval `i` (the next one after the last row made).
    pub fn row(&mut self, i: usize, iv: &metronome_core::measure::Interval) -> IntervalReport {
        let width_s = self.interval_ns.max(1) as f64 / 1e9;
        self.in_flight = (self.in_flight + iv.sent).saturating_sub(iv.ok + iv.errors);
        let ttft = (!iv.ttft.is_empty()).then_some(&iv.ttft);
        IntervalReport {
            in_flight: self.in_flight,
            bytes_received: iv.bytes_received,
            bytes_sent: iv.bytes_sent,
            output_tokens_per_s: self.stream.then(|| iv.output_tokens as f64 / width_s),
            ttft_p50_ms: ttft.map(|h| ms(h.quantile(0.5))),
            ttft_p99_ms: ttft.map(|h| ms(h.quantile(0.99))),
            ttft_max_ms: ttft.map(|h| ms(h.max())),
            ttft_hdr: ttft.map(super::hlog::base64_v2),
            dropped: iv.dropped,
            waited: iv.waited,
            pool_full: iv.pool_full,
            scheduled: iv.scheduled,
            late: iv.late,
            late_waiting: iv.late_waiting,
            work_cpu: work_share(iv, self.interval_ns, self.pacers),
            start_s: i as f64 * self.interval_ns as f64 / 1e9,
            sent: iv.sent,
            ok: iv.ok,
            errors: iv.errors,
            unsent: iv.unsent,
            p50: ms(iv.latency.quantile(0.5)),
            p99: ms(iv.latency.quantile(0.99)),
            max: ms(iv.latency.max()),
            send_lag_p99: ms(iv.send_lag.quantile(0.99)),
            service_mean_ms: (iv.ok > 0).then(|| iv.service_ns as f64 / iv.ok as f64 / 1e6),
            phase: None,
            complete: None,
        }
    }
}

/// Share of `pacers` threads' time over `interval_ns` spent working (CPU
/// minus spin), 0..1.
fn work_share(iv: &metronome_core::measure::Interval, interval_ns: u64, pacers: u64) -> f64 {
    let span = interval_ns.max(1) as f64 * pacers.max(1) as f64;
    (iv.cpu_ns.saturating_sub(iv.spin_ns) as f64 / span).min(1.0)
}

/// Plain warnings when the numbers cannot be trusted as they stand.
fn warnings(r: &Report, plan: &Plan<'_>) -> Vec<String> {
    let mut w = Vec::new();
    if r.connections.insecure {
        w.push(
            "--insecure: the server's certificate was not verified; anyone on the path could \
             have answered"
                .to_string(),
        );
    }
    if r.connections.keylog {
        w.push(
            "SSLKEYLOGFILE: the TLS session keys of this run were appended to the file it names; \
             anyone with that file can decrypt a capture of the traffic"
                .to_string(),
        );
    }
    let failed: u64 = r.connections.handshake_failures.values().sum();
    if failed > 0 {
        w.push(format!(
            "{failed} TLS handshakes failed during the run (connections.handshake_failures); \
             the requests that waited for them were never sent"
        ));
    }
    if let Some(p) = &r.profile {
        w.push(format!(
            "profile {p}: {} requests in flight at all times, each sent when one ended, so \
             latency is from the send (its intended time in this loop); the rate is what they \
             sustained, not an offered one (an open-loop --rate shows how the service copes \
             with arrivals that do not wait)",
            r.closed_workers
        ));
    } else if r.model == Model::Closed {
        w.push(
            "closed loop: each worker waits for its reply before sending again, so a stall \
             hides in the requests that were never sent (coordinated omission); \
             use the open model to measure"
                .to_string(),
        );
    }
    if r.generator.stopped {
        w.push(format!(
            "the run was stopped early after {}; the report covers what was measured",
            unit(r.duration_s, "s")
        ));
    }
    let lag = &r.metrics.send_lag;
    let lag_p99 = lag.p99;
    // The send lag by the one rule: its p99 where the sends are enough for
    // one, else its max.
    let (lag_over_1ms, lag_words) = if super::enough::enough(lag.count, 0.99) {
        (
            lag.p99 > 1.0,
            format!(
                "send lag p99 is {} (max {})",
                unit(lag.p99, "ms"),
                unit(lag.max, "ms")
            ),
        )
    } else {
        (
            lag.max > 1.0,
            format!(
                "send lag max is {} ({} sends, too few for a p99)",
                unit(lag.max, "ms"),
                count(lag.count)
            ),
        )
    };
    // Waits with the pool at its limit, in the stretches they made late.
    let at_limit: u64 = r
        .generator
        .behind
        .iter()
        .filter(|b| b.cause == "pool_exhausted")
        .map(|b| {
            r.intervals
                .iter()
                .filter(|iv| iv.start_s >= b.from_s && iv.start_s < b.until_s)
                .map(|iv| iv.pool_full)
                .sum::<u64>()
        })
        .sum();
    let capped: u64 = r
        .generator
        .behind
        .iter()
        .filter(|b| b.cause == "concurrency_limit")
        .map(|b| b.intervals)
        .sum();
    let queued = r.max_concurrency.filter(|_| capped > 0);
    if let Some(cap) = queued {
        // The send lag is the queue's: said here once, not again as the
        // generator falling behind.
        w.push(format!(
            "requests waited for one of the --max-concurrency {cap} slots (queued, as asked): \
             the send lag (p99 {}, max {}) is that queue's, not the \
             generator's; their latency from the intended time includes the wait, the service \
             time excludes it",
            unit(lag_p99, "ms"),
            unit(r.metrics.send_lag.max, "ms")
        ));
    }
    if plan.model == PlanModel::Open && at_limit > 0 {
        w.push(format!(
            "the connection pool was exhausted ({} connections): {} requests waited for \
             a free connection with the pool at its limit; their latency includes the wait \
             (raise --max-connections to send on time)",
            count(plan.max_connections.into()),
            count(at_limit)
        ));
    } else if r.model == Model::Open
        && queued.is_none()
        && lag_over_1ms
        && r.generator
            .behind
            .iter()
            .any(|b| b.cause != "concurrency_limit")
    {
        // Only when it was material: some stretch is behind (above).
        w.push(format!(
            "the generator fell behind its schedule: {}; latency is still measured from the \
             intended time",
            lag_words
        ));
    }
    // At most three stretches in the warnings; the JSON has them all.
    for b in r.generator.behind.iter().take(3) {
        w.push(stretch_warning(b));
    }
    if r.generator.behind.len() > 3 {
        w.push(format!(
            "behind schedule in {} more stretches (generator.behind in the JSON)",
            r.generator.behind.len() - 3
        ));
    }
    if let (Model::Open, Some(k)) = (r.model, &r.generator.pool.knee) {
        w.push(format!(
            "saturated at about {} with {} connections (the knee): {} connections \
             completed {}, no more, so the pool did not grow (more connections only \
             move the queue into the server); requests waited for a connection, and their \
             latency from the intended time includes the wait",
            unit(k.completions_per_s, "req/s"),
            count(k.connections.into()),
            count(k.probe_connections.into()),
            unit(k.probe_per_s, "req/s")
        ));
    }
    // Conversations offer sessions; their turns are the requests. Turns
    // of sessions cut by the end or ended by a failure are planned but
    // never due: the sessions line says so, and the comparison would blame
    // the generator.
    let offered = r.sessions.map_or(r.offered_rps, |s| {
        if s.cut + s.abandoned > 0 {
            0.0
        } else {
            s.offered_turns_per_s
        }
    });
    if r.model == Model::Open
        && offered > 0.0
        && r.achieved_rps < 0.99 * offered
        && !r.generator.stopped
    {
        w.push(match r.sessions {
            Some(_) => format!(
                "achieved {} is below the {} of the planned turns",
                unit(r.achieved_rps, "req/s"),
                unit(offered, "req/s")
            ),
            None => format!(
                "achieved {} is below the offered {}",
                unit(r.achieved_rps, "req/s"),
                unit(offered, "req/s")
            ),
        });
    }
    if r.requests.unsent > 0 {
        let by = &r.errors.unsent_by_reason;
        let too_large = by.get("too_large").copied().unwrap_or(0);
        let larger = if too_large > 0 {
            format!(", {} {TOO_LARGE}", count(too_large))
        } else {
            String::new()
        };
        w.push(format!(
            "{} requests were never sent: {} found no connection (refused or unreachable), {} \
             waited for a free connection until the end{larger}",
            count(r.requests.unsent),
            count(by.get("connect").copied().unwrap_or(0)),
            count(by.get("timeout").copied().unwrap_or(0)),
        ));
    }
    if r.requests.dropped > 0 {
        w.push(format!(
            "{} requests were dropped above --max-in-flight {} and never sent",
            count(r.requests.dropped),
            count(plan.max_in_flight as u64)
        ));
    }
    if r.requests.ok_without_done > 0 {
        w.push(format!(
            "{} streams ended after a finish_reason without data: [DONE]; counted as ok \
             (vLLM's bench, guidellm and the openai SDK accept such streams)",
            count(r.requests.ok_without_done)
        ));
    }
    if let Some(line) = late_warning(r) {
        w.push(line);
    }
    if r.error_rate > 0.5 {
        w.push(format!(
            "errors dominate: {} of completed requests failed; latency covers successes only",
            pct(r.error_rate)
        ));
    }
    w
}

/// The share of successes (or of output tokens) completed after the end of
/// the schedule above which a run is warned about: 10%. Below it the rates
/// over the real window and within the schedule differ by less than a
/// tenth; above it the server was still working off a backlog when the
/// schedule ended, and the in-schedule rate overstates what it sustains.
pub const LATE_SHARE_WARNING: f64 = 0.10;

/// A warning when completions after the schedule's end carry a material
/// share ([`LATE_SHARE_WARNING`]) of the successes or of the output tokens.
pub fn late_warning(r: &Report) -> Option<String> {
    let share = |part: u64, whole: u64| {
        if whole > 0 {
            part as f64 / whole as f64
        } else {
            0.0
        }
    };
    let w = &r.window;
    let tokens = (r.output_tokens_per_s * w.window_s).round() as u64;
    let by_ok = share(w.late_ok, r.requests.ok);
    let by_tokens = share(w.late_output_tokens, tokens);
    let worst = by_ok.max(by_tokens);
    (worst > LATE_SHARE_WARNING).then(|| {
        format!(
            "{} of successes ({} of output tokens) completed after the schedule ended \
             (requests outlasting it, or a server behind the offered rate): rates are over the \
             real window of {}; within the schedule {}, {} over {}",
            pct(by_ok),
            pct(by_tokens),
            unit(w.window_s, "s"),
            unit(w.in_schedule_throughput_rps, "ok/s"),
            unit(w.in_schedule_output_tokens_per_s, "tokens/s"),
            unit(r.duration_s, "s")
        )
    })
}

/// What the requests never sent as `too_large` were, after their count:
/// the limit they broke, by its name in each protocol (its value is in
/// the run's warning from the engine).
const TOO_LARGE: &str = "were larger than the server's limit on a request's header fields \
                         (HTTP/3 SETTINGS_MAX_FIELD_SECTION_SIZE, HTTP/2 \
                         SETTINGS_MAX_HEADER_LIST_SIZE: shorten the headers)";

/// When no request succeeded: one line naming the dominant error kind (or
/// why nothing was sent) with an example status or message, for the exit
/// code 1. `None` when a request succeeded or none was due.
pub fn no_success_line(r: &Report) -> Option<String> {
    let q = &r.requests;
    if q.ok > 0 || q.sent + q.unsent + q.dropped == 0 {
        return None;
    }
    let kind = r
        .errors
        .by_kind
        .iter()
        .filter(|(_, &n)| n > 0)
        .max_by_key(|(k, &n)| (n, std::cmp::Reverse(k.as_str())));
    let Some((kind, &n)) = kind else {
        // Nothing sent completed with an error: nothing was sent.
        let by = &r.errors.unsent_by_reason;
        let connect = by.get("connect").copied().unwrap_or(0);
        let too_large = by.get("too_large").copied().unwrap_or(0);
        let why = if q.dropped > q.unsent {
            format!("{} were dropped above --max-in-flight", q.dropped)
        } else if too_large >= connect && too_large > 0 {
            format!("{too_large} {TOO_LARGE}")
        } else if connect > 0 {
            format!("{connect} found no connection (refused or unreachable: check the URL)")
        } else {
            format!(
                "{} waited for a free connection until the end (raise --max-connections)",
                q.unsent
            )
        };
        return Some(format!("no request succeeded: none was sent; {why}"));
    };
    let example = match kind.as_str() {
        "status" => r
            .errors
            .by_status
            .iter()
            .max_by_key(|(_, &c)| c)
            .map_or_else(String::new, |(code, c)| format!("HTTP {code} on {c}")),
        "bad_framing" => metronome_core::measure::FramingCause::ALL
            .iter()
            .filter(|c| {
                r.errors
                    .bad_framing_by_cause
                    .get(c.name())
                    .copied()
                    .unwrap_or(0)
                    > 0
            })
            .max_by_key(|c| r.errors.bad_framing_by_cause[c.name()])
            .map_or_else(String::new, |c| c.describe().to_string()),
        "grpc_status" => r
            .errors
            .by_grpc_status
            .iter()
            .flatten()
            .max_by_key(|(_, &c)| c)
            .map_or_else(String::new, |(code, c)| {
                let name = super::grpc_code_name(code).map_or(String::new(), |n| format!(" {n}"));
                format!("grpc-status {code}{name} on {c}")
            }),
        "check" => r
            .errors
            .by_check
            .iter()
            .flatten()
            .max_by_key(|(_, &c)| c)
            .map_or_else(String::new, |(which, c)| {
                format!("the {which} check (--check-{which}) on {c}")
            }),
        "timeout" => "no complete response within --timeout".to_string(),
        "reset" => "the connection was reset or closed before the response completed".to_string(),
        "too_large" => "the response head was over --max-header-bytes".to_string(),
        "stream_cut" => {
            "the stream ended before data: [DONE] and without a finish_reason".to_string()
        }
        "stream_error" => "the stream carried an error event or error object".to_string(),
        "no_content" => {
            "the stream ended without any content, reasoning or tool-call token".to_string()
        }
        "not_event_stream" => {
            "a 2xx answer without Content-Type: text/event-stream (the server ignored stream: true)"
                .to_string()
        }
        _ => String::new(),
    };
    Some(format!(
        "no request succeeded: {n} of {} sent failed with {kind} (e.g. {example})",
        q.sent
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example report of docs/report.md.
    fn example() -> Report {
        let doc = include_str!("../../docs/report.md");
        let start = doc.find("```json").unwrap() + 7;
        let end = start + doc[start..].find("```").unwrap();
        serde_json::from_str(&doc[start..end]).unwrap()
    }

    #[test]
    fn no_success_line_names_the_dominant_kind() {
        let mut r = example();
        assert_eq!(no_success_line(&r), None);
        r.requests.ok = 0;
        r.requests.sent = 5;
        r.requests.errors = 5;
        r.errors.by_kind.insert("status".into(), 3);
        r.errors.by_kind.insert("timeout".into(), 2);
        r.errors.by_status.clear();
        r.errors.by_status.insert("404".into(), 2);
        r.errors.by_status.insert("503".into(), 1);
        assert_eq!(
            no_success_line(&r).unwrap(),
            "no request succeeded: 3 of 5 sent failed with status (e.g. HTTP 404 on 2)"
        );
        r.errors.by_kind.insert("status".into(), 0);
        r.errors.by_kind.insert("not_event_stream".into(), 3);
        assert_eq!(
            no_success_line(&r).unwrap(),
            "no request succeeded: 3 of 5 sent failed with not_event_stream (e.g. a 2xx answer \
             without Content-Type: text/event-stream (the server ignored stream: true))"
        );
        r.errors.by_kind.insert("not_event_stream".into(), 0);
        r.errors.by_kind.insert("grpc_status".into(), 3);
        r.errors.by_grpc_status = Some([("5".into(), 1), ("14".into(), 2)].into());
        assert_eq!(
            no_success_line(&r).unwrap(),
            "no request succeeded: 3 of 5 sent failed with grpc_status (e.g. grpc-status 14 \
             UNAVAILABLE on 2)"
        );
        for v in r.errors.by_kind.values_mut() {
            *v = 0;
        }
        r.requests.sent = 0;
        r.requests.unsent = 4;
        r.errors.unsent_by_reason.insert("connect".into(), 4);
        assert_eq!(
            no_success_line(&r).unwrap(),
            "no request succeeded: none was sent; 4 found no connection (refused or \
             unreachable: check the URL)"
        );
        r.requests.unsent = 7;
        r.errors.unsent_by_reason.insert("too_large".into(), 3);
        assert!(
            no_success_line(&r)
                .unwrap()
                .contains("4 found no connection"),
            "more refused than too large"
        );
        r.errors.unsent_by_reason.insert("connect".into(), 0);
        r.requests.unsent = 3;
        let line = no_success_line(&r).unwrap();
        assert_eq!(
            line,
            format!("no request succeeded: none was sent; 3 {TOO_LARGE}"),
            "too large, not refused"
        );
        assert!(!line.contains("refused or unreachable"), "{line}");
        assert!(line.contains("SETTINGS_MAX_HEADER_LIST_SIZE"), "{line}");
        let plan = metronome_core::plan::example_plan();
        let never: Vec<_> = warnings(&r, &plan)
            .into_iter()
            .filter(|w| w.contains("never sent"))
            .collect();
        assert_eq!(
            never,
            [format!(
                "3 requests were never sent: 0 found no connection (refused or unreachable), 0 \
                 waited for a free connection until the end, 3 {TOO_LARGE}"
            )]
        );
        r.requests.unsent = 0;
        assert_eq!(no_success_line(&r), None, "nothing was due");
    }

    /// Conversations: the sent requests compare with the planned turns,
    /// not with the sessions per second; cut or abandoned sessions never
    /// bring their later turns, so then no comparison.
    #[test]
    fn conversations_compare_requests_with_planned_turns() {
        let plan = metronome_core::plan::example_plan();
        let below = |r: &Report| {
            warnings(r, &plan)
                .into_iter()
                .filter(|w| w.contains(" is below the "))
                .collect::<Vec<_>>()
        };
        let mut r = example();
        r.offered_rps = 3.0;
        r.achieved_rps = 6.0;
        r.sessions = Some(crate::report::SessionsReport {
            started: 12,
            completed: 12,
            follow_ups: 12,
            planned_turns: 24,
            offered_turns_per_s: 6.0,
            ..Default::default()
        });
        assert!(below(&r).is_empty());
        r.achieved_rps = 5.0;
        assert_eq!(
            below(&r),
            ["achieved 5.000 req/s is below the 6.000 req/s of the planned turns"]
        );
        if let Some(s) = r.sessions.as_mut() {
            s.cut = 1;
        }
        assert!(below(&r).is_empty());
    }
}
