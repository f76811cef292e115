//! `metronome run`: arguments to a [`Plan`], the engine, then the report.

use std::io::{IsTerminal, Write};
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use metronome_core::engine::{Control, RunOutput};
use metronome_core::plan::{Model, Plan, Protocol, Slo};
use metronome_core::rng;
use metronome_core::schedule::{Arrival, Shard};

use crate::cli::{ArrivalArg, FormatArg, RunArgs};
use crate::report::{
    self, ms, ArrivalReport, Errors, Generator, IntervalReport, Metrics, Report, Requests,
    SloReport,
};
use crate::request::{check_header, encode, openai_body, Target};
use crate::threshold::Threshold;
use crate::UsageError;

/// What `run` produced: the report and the exit code it calls for.
#[derive(Debug)]
pub struct RunResult {
    /// The report.
    pub report: Report,
    /// 0, or 3 when a threshold was breached.
    pub exit_code: i32,
}

/// Everything derived from the arguments before anything is sent.
struct Prepared {
    addr: std::net::SocketAddr,
    requests: Vec<Vec<u8>>,
    arrival: Arrival,
    shard: Shard,
    slo: Slo,
    thresholds: Vec<Threshold>,
}

fn prepare(args: &RunArgs) -> Result<Prepared, UsageError> {
    let target = Target::parse(&args.url)?;
    if !(args.rate.is_finite() && args.rate > 0.0) {
        return Err(UsageError(format!(
            "--rate {} must be a positive number of requests per second",
            args.rate
        )));
    }
    if args.duration.is_zero() {
        return Err(UsageError("--duration must be positive".into()));
    }
    if args.interval.is_zero() {
        return Err(UsageError("--interval must be positive".into()));
    }
    if args.connections == 0 {
        return Err(UsageError("--connections must be at least 1".into()));
    }
    if args.max_connections < args.connections {
        return Err(UsageError(format!(
            "--max-connections {} is below --connections {}",
            args.max_connections, args.connections
        )));
    }
    if args.max_in_flight == 0 {
        return Err(UsageError("--max-in-flight must be at least 1".into()));
    }
    if args.closed == Some(0) {
        return Err(UsageError("--closed needs at least 1 worker".into()));
    }
    let arrival = match args.arrival {
        ArrivalArg::Constant => Arrival::Constant,
        ArrivalArg::Poisson => Arrival::Poisson,
        ArrivalArg::Burst => {
            if args.burst_size == 0 {
                return Err(UsageError("--burst-size must be at least 1".into()));
            }
            Arrival::Burst {
                size: args.burst_size,
            }
        }
        ArrivalArg::Gamma => {
            if !(args.burstiness.is_finite() && args.burstiness > 0.0) {
                return Err(UsageError("--burstiness must be a positive number".into()));
            }
            Arrival::Gamma {
                burstiness: args.burstiness,
            }
        }
    };
    let shard = match &args.shard {
        None => Shard::WHOLE,
        Some(s) => parse_shard(s)?,
    };
    for h in &args.headers {
        check_header(h)?;
    }
    let mut slo = Slo::default();
    for s in &args.slos {
        let (name, value) = s.split_once('=').ok_or_else(|| {
            UsageError(format!(
                "bad --slo '{s}': write METRIC=DURATION, e.g. ttft=500ms"
            ))
        })?;
        let d = crate::units::parse_duration(value)
            .map_err(|e| UsageError(format!("bad --slo '{s}': {e}")))?;
        let ns = Some(d.as_nanos() as u64);
        match name.trim() {
            "latency" | "e2e" => slo.latency_ns = ns,
            "ttft" => slo.ttft_ns = ns,
            "itl" => slo.itl_ns = ns,
            "tpot" => slo.tpot_ns = ns,
            other => {
                return Err(UsageError(format!(
                    "bad --slo '{s}': unknown metric '{other}' (latency, ttft, itl, tpot)"
                )))
            }
        }
    }
    let thresholds = args
        .thresholds
        .iter()
        .map(|t| Threshold::parse(t))
        .collect::<Result<Vec<_>, _>>()?;

    let body: Option<Vec<u8>> = match (&args.body, &args.body_file) {
        (Some(b), _) => Some(b.clone().into_bytes()),
        (None, Some(f)) => Some(
            std::fs::read(f)
                .map_err(|e| UsageError(format!("cannot read --body-file {}: {e}", f.display())))?,
        ),
        (None, None) => None,
    };
    let requests = if args.openai {
        let mut target = target.clone();
        if target.path == "/" {
            target.path = "/v1/chat/completions".into();
        }
        let mut headers = vec![
            "Content-Type: application/json".to_string(),
            "Accept: text/event-stream".to_string(),
        ];
        if let Some(k) = &args.api_key {
            headers.push(format!("Authorization: Bearer {k}"));
        }
        headers.extend(args.headers.iter().cloned());
        let mut prompts: Vec<&str> = args.prompts.iter().map(String::as_str).collect();
        if prompts.is_empty() {
            prompts.push("Write a haiku about a metronome.");
        }
        // Requests cycle through the prompts in a seeded order.
        rng::stream(args.seed, rng::PURPOSE_REQUESTS).shuffle(&mut prompts);
        let method = args.method.as_deref().unwrap_or("POST");
        prompts
            .iter()
            .map(|p| {
                let b = openai_body(&args.model, p, args.max_tokens);
                encode(&target, method, &headers, Some(&b))
            })
            .collect()
    } else {
        let method = args
            .method
            .as_deref()
            .unwrap_or(if body.is_some() { "POST" } else { "GET" });
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(UsageError(format!(
                "bad method '{method}': write it in capitals, like GET or POST"
            )));
        }
        vec![encode(&target, method, &args.headers, body.as_deref())]
    };
    let addr = target.resolve()?;
    Ok(Prepared {
        addr,
        requests,
        arrival,
        shard,
        slo,
        thresholds,
    })
}

fn parse_shard(s: &str) -> Result<Shard, UsageError> {
    let bad = || UsageError(format!("bad --shard '{s}': write K/N with 0 <= K < N"));
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let index: u32 = k.trim().parse().map_err(|_| bad())?;
    let count: u32 = n.trim().parse().map_err(|_| bad())?;
    if count == 0 || index >= count {
        return Err(bad());
    }
    Ok(Shard { index, count })
}

fn ns(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

/// Runs a load test as the arguments say, printing progress on stderr when
/// it is a terminal (and not `--quiet`).
///
/// # Errors
/// A [`UsageError`] for bad input (exit 2); any other error (exit 1) when the
/// run could not be done, e.g. the target refuses connections.
pub fn run(args: &RunArgs) -> anyhow::Result<RunResult> {
    let p = prepare(args)?;
    let request_refs: Vec<&[u8]> = p.requests.iter().map(Vec::as_slice).collect();
    let model = match args.closed {
        Some(workers) => Model::Closed {
            workers,
            expected_interval_ns: args.expected_interval.map(ns),
        },
        None => Model::Open,
    };
    let plan = Plan {
        addr: p.addr,
        requests: &request_refs,
        arrival: p.arrival,
        rate: args.rate,
        seed: args.seed,
        shard: p.shard,
        duration_ns: ns(args.duration),
        warmup_ns: ns(args.warmup),
        connections: args.connections,
        max_connections: args.max_connections,
        max_in_flight: args.max_in_flight,
        timeout_ns: ns(args.timeout),
        protocol: if args.openai {
            Protocol::OpenAiSse
        } else {
            Protocol::Http
        },
        model,
        slo: p.slo,
        spin: metronome_core::plan::Spin::Fixed { ns: ns(args.spin) },
        interval_ns: ns(args.interval),
    };
    let control = Control::default();
    crate::signal::install();
    let show_progress = !args.quiet && std::io::stderr().is_terminal();
    let started = SystemTime::now();
    let done = std::sync::atomic::AtomicBool::new(false);
    let (engine, output) = std::thread::scope(|s| {
        let watcher = s.spawn(|| watch(&control, &done, show_progress, plan.end_ns()));
        let result = crate::engine::run(
            args.engine,
            &plan,
            &control,
            args.threads,
            args.cpus.as_deref(),
        );
        done.store(true, Ordering::Relaxed);
        let _ = watcher.join();
        result
    })?;
    let run_id = run_id(started, args.seed);
    let mut report = build_report(&plan, &output, &engine, run_id, args);
    let mut breached = false;
    for t in &p.thresholds {
        let tr = t.evaluate(&report);
        breached |= !tr.passed;
        report.thresholds.push(tr);
    }
    if let Some(path) = &args.out {
        let json = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, json + "\n")
            .with_context(|| format!("cannot write the report to {}", path.display()))?;
    }
    if let Some(path) = &args.hlog {
        let start = started
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64()
            + plan.warmup_ns as f64 / 1e9;
        let width = plan.interval_ns as f64 / 1e9;
        let series = |tag,
                      pick: fn(
            &metronome_core::measure::Interval,
        ) -> &metronome_core::histogram::Histogram| crate::hlog::Series {
            tag,
            intervals: output
                .intervals
                .iter()
                .enumerate()
                .map(|(i, iv)| (i as f64 * width, width, pick(iv)))
                .collect(),
        };
        let log = crate::hlog::render_hlog(
            start,
            &[
                series(None, |iv| &iv.latency),
                series(Some("send_lag"), |iv| &iv.send_lag),
            ],
        );
        std::fs::write(path, log).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.svg {
        std::fs::write(path, crate::plot::render_svg(&report))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.hgrm {
        std::fs::write(path, report::render_hgrm(&output.recorder.latency))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(RunResult {
        report,
        exit_code: if breached { 3 } else { 0 },
    })
}

/// Prints the report on stdout in the chosen format.
pub fn print(report: &Report, format: FormatArg) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match format {
        FormatArg::Text => out.write_all(report::render_text(report).as_bytes())?,
        FormatArg::Json => {
            serde_json::to_writer_pretty(&mut out, report)?;
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}

/// Polls Ctrl-C into the engine's stop flag and draws the progress line.
fn watch(control: &Control, done: &std::sync::atomic::AtomicBool, show: bool, end_ns: u64) {
    let start = std::time::Instant::now();
    let mut last_draw = start;
    while !done.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
        if crate::signal::interrupted() {
            control.stop.store(true, Ordering::Relaxed);
        }
        if show && last_draw.elapsed() >= Duration::from_millis(500) {
            last_draw = std::time::Instant::now();
            let p = &control.progress;
            let elapsed = start.elapsed().as_secs_f64();
            eprint!(
                "\r\x1b[2K  {elapsed:>5.1}s/{:.0}s  sent {}  ok {}  errors {}  p99 {:.2}ms  send lag p99 {:.3}ms",
                end_ns as f64 / 1e9,
                p.sent.load(Ordering::Relaxed),
                p.ok.load(Ordering::Relaxed),
                p.errors.load(Ordering::Relaxed),
                ms(p.last_p99_ns.load(Ordering::Relaxed)),
                ms(p.last_send_lag_p99_ns.load(Ordering::Relaxed)),
            );
        }
    }
    if show {
        eprint!("\r\x1b[2K");
    }
}

fn run_id(started: SystemTime, seed: u64) -> String {
    let t = started.duration_since(UNIX_EPOCH).unwrap_or_default();
    let tag = rng::mix64(t.as_nanos() as u64 ^ seed) & 0xffff_ffff;
    format!("{}-{tag:08x}", t.as_secs())
}

/// Builds the report of a run.
fn build_report(
    plan: &Plan<'_>,
    out: &RunOutput,
    engine: &str,
    run_id: String,
    args: &RunArgs,
) -> Report {
    let arrival = args.arrival;
    let url = args.url.as_str();
    let rec = &out.recorder;
    let closed = matches!(plan.model, Model::Closed { .. });
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
            p50: ms(iv.latency.quantile(0.5)),
            p99: ms(iv.latency.quantile(0.99)),
            max: ms(iv.latency.max()),
            send_lag_p99: ms(iv.send_lag.quantile(0.99)),
        })
        .collect();
    let mut report = Report {
        schema: report::SCHEMA.to_string(),
        run_id,
        target: url.to_string(),
        engine: engine.to_string(),
        model: if closed { "closed" } else { "open" }.to_string(),
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
            Model::Closed { workers, .. } => workers,
            Model::Open => 0,
        },
        offered_rps: offered,
        achieved_rps: per_s(sent),
        throughput_rps: per_s(rec.ok),
        duration_s: secs,
        requests: Requests {
            scheduled: rec.scheduled,
            sent,
            ok: rec.ok,
            errors,
            dropped: rec.dropped,
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
                Model::Closed {
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
            stopped: out.stopped,
            warnings: out.warnings.clone(),
        },
        thresholds: Vec::new(),
    };
    report.generator.warnings.extend(warnings(&report, plan));
    report
}

/// Plain warnings when the numbers cannot be trusted as they stand.
fn warnings(r: &Report, plan: &Plan<'_>) -> Vec<String> {
    let mut w = Vec::new();
    if r.model == "closed" {
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
    let exhausted = plan.model == Model::Open
        && r.generator.waited_for_connection > 0
        && r.generator.peak_connections >= u64::from(plan.max_connections);
    if exhausted {
        w.push(format!(
            "the connection pool was exhausted ({} connections): {} requests waited for a free \
             connection; their latency includes the wait (raise --max-connections to send on time)",
            plan.max_connections, r.generator.waited_for_connection
        ));
    } else if r.model == "open" && lag_p99 > 1.0 {
        w.push(format!(
            "the generator fell behind its schedule: send lag p99 is {lag_p99:.3} ms (max {:.3} ms); \
             latency is still measured from the intended time",
            r.metrics.send_lag.max
        ));
    }
    if r.model == "open"
        && r.offered_rps > 0.0
        && r.achieved_rps < 0.99 * r.offered_rps
        && !r.generator.stopped
    {
        w.push(format!(
            "achieved {:.1} req/s is below the offered {:.1} req/s",
            r.achieved_rps, r.offered_rps
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
