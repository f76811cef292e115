//! `metronome run`: arguments to a [`Plan`](metronome_core::plan::Plan), the
//! engine, then the report.
//!
//! - `plan`: the arguments checked and turned into a core `Plan`.
//! - [`request`]: the target URL and the encoded HTTP requests; OpenAI bodies.
//! - [`workload`]: `--openai` prompts: `--prompt`, `--dataset`, synthetic.
//! - [`discover`]: `--model` from `GET /v1/models` when not given.
//! - [`engine`]: the engine chosen (`uring` or `std`) and run.
//! - `grpc`: `--grpc SERVICE/METHOD`, the call as an HTTP/2 request.
//! - `progress`: the progress line on stderr, and Ctrl-C into the stop flag.
//!
//! The report itself is built and rendered in [`crate::report`].

pub mod check;
pub mod conversation;
pub(crate) mod dashboard;
pub mod discover;
mod encoded;
pub mod engine;
mod grpc;
pub mod lengths;
pub mod limits;
mod live;
pub(crate) use live::SharedDashboard;
pub mod mix;
pub mod mooncake;
mod openai;
mod plan;
mod profile;
mod progress;
pub mod refused;
pub mod request;
pub mod requests_out;
pub mod tokens;
pub mod workload;

use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

use metronome_core::engine::Control;

use crate::cli::RunArgs;
use crate::report::build::RunMeta;
use crate::report::{self, Report};
use crate::{EXIT_FAILED, EXIT_OK, EXIT_THRESHOLD};

/// What `run` produced: the report and the exit code it calls for.
#[derive(Debug)]
pub struct RunResult {
    /// The report.
    pub report: Report,
    /// 0; 1 when no request succeeded; 3 when a threshold was breached;
    /// 130 (SIGINT) or 143 (SIGTERM) when a signal stopped the run.
    pub exit_code: i32,
    /// Why the run failed (exit code 1), one line: the dominant error kind
    /// and an example status or message.
    pub failure: Option<String>,
}

/// Runs a load test as the arguments say, printing progress on stderr when
/// it is a terminal (and not `--quiet`).
///
/// # Errors
/// A [`UsageError`](crate::UsageError) for bad input (exit 2); any other error (exit 1) when the
/// run could not be done, e.g. the target refuses connections.
pub fn run(args: &RunArgs) -> anyhow::Result<RunResult> {
    run_on(args, None)
}

/// `d` in ns, saturating at `u64::MAX` (the plan's times).
pub(super) fn ns(d: std::time::Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

/// [`run`], drawing on a dashboard several runs share (a sweep's steps,
/// `--repeat`'s runs) when `shared` is given.
///
/// # Errors
/// As [`run`].
pub(crate) fn run_on(
    args: &RunArgs,
    shared: Option<SharedDashboard<'_>>,
) -> anyhow::Result<RunResult> {
    let protocol = protocol(args);
    let profiled;
    let args = match args.profile {
        Some(profile) => {
            profiled = with_profile(args, profile);
            &profiled
        }
        None => args,
    };
    let called;
    let args = match grpc::args(args)? {
        Some(a) => {
            called = a;
            &called
        }
        None => args,
    };
    check_outputs(args)?;
    if args.http3_0rtt && !args.http3 {
        return Err(crate::UsageError("--http3-0rtt needs --http3".into()).into());
    }
    if args.http3_0rtt && args.engine == crate::cli::EngineArg::Uring {
        return Err(crate::UsageError(
            "--http3-0rtt runs on the std engine for now (--engine std, or auto)".into(),
        )
        .into());
    }
    let mut p = plan::prepare(args)?;
    if args.http3_0rtt {
        // QUIC connections after the first send their requests in 0-RTT.
        if let Some(t) = p.tls.as_mut() {
            t.enable_early_data();
        }
    }
    if args.http2 {
        // The engine's connections offer h2 only (discovery, before, spoke h2 too).
        if let Some(t) = p.tls.as_mut() {
            t.offer_h2_only();
        }
    }
    let request_refs: Vec<&[u8]> = p.requests.iter().map(Vec::as_slice).collect();
    let encoded = encoded::requests(args, &p.requests)?;
    let encoded_refs: Option<Vec<metronome_core::plan::EncodedRequest<'_>>> =
        encoded.as_ref().map(|h| {
            h.blocks
                .iter()
                .zip(&h.body_at)
                .zip(&h.list_size)
                .zip(&p.requests)
                .map(
                    |(((block, &at), &list_size), r)| metronome_core::plan::EncodedRequest {
                        block,
                        body: &r[at..],
                        list_size,
                    },
                )
                .collect()
        });
    let plan = plan::build(args, &p, &request_refs, encoded_refs.as_deref());
    plan.validate().map_err(|e| plan::usage(e, args))?;
    let started = SystemTime::now();
    let run_id = report::build::run_id(started, args.seed);
    let names = p.mix.as_ref().map_or_else(Vec::new, |m| m.names.clone());
    let requests_out = requests_out::RequestsOut::open(args, &plan, &names, &run_id)?;
    let control = Control {
        start_at: args.start_at,
        requests: requests_out.as_ref().map(requests_out::RequestsOut::feed),
        ..Control::default()
    };
    // The watching threads (live streamer, dashboard, pusher, writer) keep
    // off the CPUs the pacing threads are pinned to, when another is allowed.
    #[cfg(target_os = "linux")]
    if let Some(Ok(cpus)) = args.cpus.as_deref().map(metronome_std::parse_cpus) {
        crate::background::keep_off(&cpus);
    }
    let mut live = live::Live::open(
        args,
        &plan,
        &names,
        engine::chosen(engine_arg(args)),
        started,
        shared,
    )?;
    if live.pushes_prometheus() {
        // The push carries the whole-run histograms so far with each interval.
        control.progress.live.enable_so_far();
    } else if live.is_on() {
        control.progress.live.enable();
    }
    if let Some(at) = args.start_at {
        check_start_at(at)?;
    }
    crate::signal::install();
    let show_progress = !args.quiet && std::io::stderr().is_terminal();
    let done = std::sync::atomic::AtomicBool::new(false);
    let result = std::thread::scope(|s| {
        let watcher = s.spawn(|| progress::watch(&control, &done, show_progress, plan.end_ns()));
        let streamer = s.spawn(|| {
            crate::background::give_way();
            live.stream(&control, &plan, &done)
        });
        let result = engine::run(
            args.engine,
            &plan,
            &control,
            args.threads,
            args.cpus.as_deref(),
            p.tls.as_ref(),
        );
        done.store(true, Ordering::Release);
        let _ = watcher.join();
        let _ = streamer.join();
        result.map_err(|e| {
            if args.http2 && format!("{e:#}").contains("no_application_protocol") {
                anyhow::anyhow!(
                    "{e:#}: the server does not offer h2 in ALPN (an HTTP/1.1-only TLS \
                     server); drop --http2"
                )
            } else if format!("{e:#}").contains("no_application_protocol") {
                anyhow::anyhow!(
                    "{e:#}: the server speaks none of the protocols offered by ALPN \
                     (http/1.1): if it speaks HTTP/2 only, add --http2"
                )
            } else {
                e
            }
        })
    });
    // A target that refused every connection before the clock still gets
    // its report: every request unsent for want of a connection (exit 1).
    let mut refused = None;
    let (engine, output) = match result {
        Ok(r) => r,
        Err(e) => match e.downcast_ref::<metronome_core::engine::EngineError>() {
            Some(metronome_core::engine::EngineError::Connect(_)) => {
                let zero = args.start_at.map_or_else(
                    || metronome_core::engine::unix_ns(SystemTime::now()),
                    metronome_core::engine::unix_ns,
                );
                let why = e.to_string();
                let feed = requests_out.as_ref().map(requests_out::RequestsOut::feed);
                let out = refused::unconnected(&plan, zero, &why, feed)
                    .map_err(|pe| anyhow::anyhow!("invalid plan: {pe}"))?;
                refused = Some(why);
                (engine::chosen(engine_arg(args)), out)
            }
            _ => return Err(e),
        },
    };
    // Every record is in: the writer writes what is left.
    let out_requests = requests_out.map(requests_out::RequestsOut::finish);
    let meta = RunMeta {
        url: args.url.clone(),
        trace_file: args.trace.as_deref().map(|p| p.display().to_string()),
        start_at: args.start_at,
        compat: crate::report::compat::peers_once(args.metrics_compat.iter().map(|&p| p.into())),
        insecure: args.insecure,
        keylog: crate::tls::keylog_requested(),
        profile: args.profile.map(|p| p.to_string()),
        request_names: names,
        protocol: protocol.to_string(),
        argv: Some(report::argv::this_argv()),
        zero_rtt: args.http3_0rtt,
        count: args.count,
    };
    let pacers = engine.pacers(output.threads.len(), args.http3_0rtt);
    let mut report = Report::from_run(&plan, &output, engine.as_str(), pacers, run_id, &meta);
    report.workload = p.workload.as_ref().map(|w| w.report(&output.recorder));
    if refused.is_some() {
        refused::tidy(&mut report);
    }
    let signalled = crate::signal::exit_status();
    report.interrupted = signalled.is_some();
    let mut breached = false;
    for t in &p.thresholds {
        let tr = t.evaluate(&report);
        breached |= !tr.passed;
        report.thresholds.push(tr);
    }
    // The intervals not streamed live, from the report itself.
    // A push that fails is a warning with its counts, never a failed run.
    report.generator.dashboard_cpu_s = live.dashboard_cpu_s();
    let pushed_live = live.pushes_prometheus();
    // The request lines' counts and warning are the report's; a file that
    // failed is a failed output (exit 1), as for --out below.
    let mut unwritten: Vec<String> = Vec::new();
    if let Some((counts, warning, failed)) = out_requests {
        report.generator.out_requests = Some(counts);
        if let Some(w) = warning {
            if failed {
                unwritten.push(w.clone());
            }
            report.generator.warnings.push(w);
        }
    }
    let mut warnings = live.finish(&report, &output.intervals);
    if !pushed_live {
        warnings.extend(crate::prom::push_report(&report, &args.prometheus));
    }
    for warning in warnings {
        eprintln!("metronome: warning: {warning}");
    }
    // Every file asked for; one that cannot be written (its path was
    // checked before the run) loses nothing: the report is still printed,
    // the JSON goes to a fallback file, and the run exits 1.
    let mut wrote = |flag: &str, path: &std::path::Path, r: anyhow::Result<()>| {
        if let Err(e) = r {
            let e = e.context(format!("cannot write {}", path.display()));
            unwritten.push(format!("{flag}: {e:#}"));
        }
    };
    let json = serde_json::to_string_pretty(&report)? + "\n";
    let mut json_saved = false;
    if let Some(path) = &args.out {
        let r = std::fs::write(path, &json);
        json_saved = r.is_ok();
        wrote("--out", path, r.map_err(Into::into));
    }
    if let Some(path) = &args.hlog {
        let log = report::hlog::render_run_hlog(
            output.start_unix_ns,
            &plan,
            &output.intervals,
            report.intervals.len() + report.drain.len(),
            &output.recorder,
            output.measured_ns,
            report.metrics.latency_corrected.is_some(),
            &p.mix
                .as_ref()
                .map(|m| {
                    m.names
                        .iter()
                        .map(String::as_str)
                        .zip(&output.names)
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default(),
        );
        wrote(
            "--hlog",
            path,
            std::fs::write(path, log).map_err(Into::into),
        );
    }
    if let Some(path) = &args.svg {
        let svg = report::svg::render_svg(&report);
        wrote("--svg", path, std::fs::write(path, svg).map_err(Into::into));
    }
    if let Some(path) = &args.html {
        let page = report::html::render_report(&report, Some(report::argv::this_command()));
        let r = page.and_then(|page| std::fs::write(path, page).map_err(Into::into));
        wrote("--html", path, r);
    }
    if let Some(path) = &args.hgrm {
        let hgrm = report::hgrm::render_hgrm(&output.recorder.latency);
        wrote(
            "--hgrm",
            path,
            std::fs::write(path, hgrm).map_err(Into::into),
        );
    }
    // The JSON goes to a fallback file unless --out holds it.
    let unwritten = (!unwritten.is_empty()).then(|| {
        if json_saved {
            return unwritten.join("; ");
        }
        let saved = match crate::output::write_fallback(&report.run_id, &json) {
            Ok(at) => format!("the JSON report is in {}", at.display()),
            Err(why) => why,
        };
        format!("{}; {saved}", unwritten.join("; "))
    });
    let failure = report::build::no_success_line(&report).map(|line| match &refused {
        Some(why) => format!("{line} ({why})"),
        None => line,
    });
    let exit_code = match signalled {
        Some(status) => status,
        None if failure.is_some() || unwritten.is_some() => EXIT_FAILED,
        None if breached => EXIT_THRESHOLD,
        None => EXIT_OK,
    };
    let failure = match (failure, unwritten) {
        (Some(f), Some(u)) => Some(format!("{f}; {u}")),
        (f, u) => f.or(u),
    };
    Ok(RunResult {
        exit_code,
        failure,
        report,
    })
}

/// The engine asked for, `auto` resolved to std for `--http3` (the one
/// engine that speaks it).
fn engine_arg(args: &RunArgs) -> crate::cli::EngineArg {
    if args.http3 && args.engine == crate::cli::EngineArg::Auto {
        // `auto` runs HTTP/3 on the std engine (see `engine::run`).
        crate::cli::EngineArg::Std
    } else {
        args.engine
    }
}

/// The protocol a run's requests are sent in ([`Report::protocol`]).
fn protocol(args: &RunArgs) -> &'static str {
    if args.grpc.is_some() {
        "grpc"
    } else if args.http3 {
        "h3"
    } else if args.http2 {
        "h2"
    } else if args.http2_prior_knowledge {
        "h2c"
    } else {
        "http/1.1"
    }
}

/// Checks every output file of a run before it starts ([`crate::output::check`]).
///
/// # Errors
/// A [`UsageError`](crate::UsageError) naming the first flag whose path cannot be written.
pub fn check_outputs(args: &RunArgs) -> Result<(), crate::UsageError> {
    crate::output::check_all([
        ("--out", args.out.as_deref()),
        ("--hgrm", args.hgrm.as_deref()),
        ("--hlog", args.hlog.as_deref()),
        ("--svg", args.svg.as_deref()),
        ("--html", args.html.as_deref()),
        (
            "--out-intervals",
            args.out_intervals
                .as_deref()
                .filter(|_| !args.intervals_to_stdout()),
        ),
        (
            "--out-requests",
            args.out_requests
                .as_deref()
                .filter(|_| !requests_out::to_stdout(args)),
        ),
    ])?;
    if args.intervals_to_stdout() && requests_out::to_stdout(args) {
        return Err(crate::UsageError(
            "--out-intervals - and --out-requests - cannot both write to stdout: give one a FILE"
                .to_string(),
        ));
    }
    Ok(())
}

/// The arguments of a `--profile` run: its loop of workers as `--closed`
/// (synchronous: 1; concurrent:N: N; throughput: `--max-concurrency`, else
/// 512), each sending its next request when its last one ended, so the
/// send is the intended time and latency from the send is the honest
/// one for this load (the offered rate is what the workers sustain).
fn with_profile(args: &RunArgs, profile: crate::cli::ProfileArg) -> RunArgs {
    use crate::cli::{ProfileArg, THROUGHPUT_WORKERS};
    let workers = match profile {
        ProfileArg::Synchronous => 1,
        ProfileArg::Concurrent(n) => n,
        ProfileArg::Throughput => args.max_concurrency.unwrap_or(THROUGHPUT_WORKERS),
    };
    let mut a = args.clone();
    a.closed = Some(workers);
    a.max_concurrency = None;
    a.connections = Some(workers);
    a.max_connections = a.max_connections.max(workers);
    a
}

/// Refuses a `--start-at` already past (exit 2): the schedule's zero would
/// be behind the clock before a connection is open.
fn check_start_at(at: SystemTime) -> Result<(), crate::UsageError> {
    let now = SystemTime::now();
    match at.duration_since(now) {
        Ok(_) => Ok(()),
        Err(e) => Err(crate::UsageError(format!(
            "--start-at {} is {} in the past (now is {}): give an instant in the future, leaving time to open the connections",
            crate::units::rfc3339_ns(metronome_core::engine::unix_ns(at)),
            crate::report::num::unit(e.duration().as_secs_f64(), "s"),
            crate::units::rfc3339_ns(metronome_core::engine::unix_ns(now)),
        ))),
    }
}
