//! `metronome sweep`: the same open-loop test at a series of offered rates,
//! one report per step and a table of where latency bends (the knee). The
//! sweep's document (`metronome.sweep/v1`) and its table are
//! [`crate::report::sweep`].

use anyhow::Context;

use crate::cli::SweepArgs;
use crate::report::show::print_sweep;
use crate::report::sweep::{auto_rates, kept_up, stage_knee, step_path, AutoProbes, Sweep, SCHEMA};
use crate::UsageError;

/// Runs the sweep; returns it and the exit code (3 when any step breached
/// a threshold).
///
/// # Errors
/// Bad input (exit 2) or a step that could not run (exit 1).
pub fn sweep(args: &SweepArgs) -> anyhow::Result<(Sweep, i32)> {
    // Every output's directory, before the first step (each step's file
    // sits beside the path given).
    crate::run::check_outputs(&args.run)?;
    crate::repeat::refuse_stdout_lines(&args.run, "sweep")?;
    if args.run.stages.is_some() {
        return continuous(args);
    }
    if !args.auto
        && (args.rates.is_empty() || args.rates.iter().any(|r| !(r.is_finite() && *r > 0.0)))
    {
        return Err(UsageError("--rates must be positive numbers, e.g. 100,200,400".into()).into());
    }
    if args.run.start_at.is_some() {
        return Err(UsageError(
            "sweep does not take --start-at: each step starts when the previous one ends \
             (run the steps with `run --start-at` to start them together on several machines)"
                .into(),
        )
        .into());
    }
    if args.run.closed.is_some() {
        return Err(UsageError(
            "sweep varies the offered rate: it does not combine with --closed".into(),
        )
        .into());
    }
    if args.run.trace.is_some() {
        return Err(UsageError(
            "sweep varies the offered rate: it does not combine with --trace (a trace sets \
             its own times)"
                .into(),
        )
        .into());
    }
    // One dashboard for every step (and probe): each draws on it in turn;
    // at the end it shows the sweep's page.
    let dash = crate::run::dashboard::shared(&args.run, "sweep")?;
    let (rates, auto) = if args.auto {
        let (rates, probes) = probe(args, dash.as_ref())?;
        (rates, Some(probes))
    } else {
        (args.rates.clone(), None)
    };
    let mut steps = Vec::new();
    let mut knee = None;
    let mut code = 0;
    for (i, &rate) in rates.iter().enumerate() {
        if crate::signal::interrupted() {
            break;
        }
        if !args.run.quiet {
            eprintln!(
                "sweep step {}/{}: {}",
                i + 1,
                rates.len(),
                crate::report::num::unit(rate, "req/s")
            );
        }
        let mut step = args.run.clone();
        step.rate = Some(rate);
        step.out = None;
        step.hgrm = args.run.hgrm.as_deref().map(|p| step_path(p, rate));
        step.hlog = args.run.hlog.as_deref().map(|p| step_path(p, rate));
        step.svg = args.run.svg.as_deref().map(|p| step_path(p, rate));
        step.out_intervals = args
            .run
            .out_intervals
            .as_deref()
            .map(|p| step_path(p, rate));
        step.out_requests = args.run.out_requests.as_deref().map(|p| step_path(p, rate));
        step.html = None;
        step.dashboard = None;
        let shared = dash.as_ref().map(|d| crate::run::SharedDashboard {
            dashboard: d,
            label: format!(
                "sweep step {}/{}: {}",
                i + 1,
                rates.len(),
                crate::report::num::unit(rate, "req/s")
            ),
        });
        let r = crate::run::run_on(&step, shared)?;
        if r.exit_code != 0 {
            code = r.exit_code;
        }
        let ok = kept_up(&r.report);
        steps.push(r.report);
        if !ok && knee.is_none() {
            knee = Some(i);
            if args.stop_at_knee {
                break;
            }
        }
        if crate::signal::interrupted() {
            break;
        }
    }
    let sweep = Sweep {
        schema: SCHEMA.to_string(),
        steps,
        knee,
        auto,
        continuous: None,
    };
    if let Some(d) = dash {
        let page =
            crate::report::html::render_sweep(&sweep, Some(crate::report::argv::this_command()))?;
        d.finish(page);
    }
    Ok((sweep, code))
}

/// `sweep --stages`: one continuous run through the stages, each stage a
/// step of the table (hold a rate with a stage of that target after a 0 s
/// jump: `0s:100,10s:100,0s:200,10s:200`); the knee is the first stage
/// that did not keep up ([`stage_knee`]).
fn continuous(args: &SweepArgs) -> anyhow::Result<(Sweep, i32)> {
    if !args.rates.is_empty() || args.auto {
        return Err(UsageError(
            "sweep --stages is one continuous run whose stages are the steps: give --stages \
             or --rates/--auto, not both"
                .into(),
        )
        .into());
    }
    if args.run.closed.is_some() || args.run.start_at.is_some() || args.run.trace.is_some() {
        return Err(UsageError(
            "sweep --stages does not combine with --closed, --start-at or --trace".into(),
        )
        .into());
    }
    // The run writes its own --svg, --html, --hgrm and --hlog (its plots
    // show offered against achieved through the stages); --out is the sweep.
    let mut run = args.run.clone();
    run.out = None;
    let r = crate::run::run(&run)?;
    let knee = stage_knee(&r.report).map(|(i, _)| i);
    Ok((
        Sweep {
            schema: SCHEMA.to_string(),
            steps: Vec::new(),
            knee,
            auto: None,
            continuous: Some(Box::new(r.report)),
        },
        r.exit_code,
    ))
}

/// `sweep --auto`'s two probes, each a run of the step's arguments with a
/// `--profile`: synchronous, then throughput; the rates are
/// [`auto_rates`] between their successes per second.
fn probe(
    args: &SweepArgs,
    dash: Option<&crate::run::dashboard::Dashboard>,
) -> anyhow::Result<(Vec<f64>, AutoProbes)> {
    use crate::cli::{ProfileArg, THROUGHPUT_WORKERS};
    let mut sustained = Vec::new();
    for profile in [ProfileArg::Synchronous, ProfileArg::Throughput] {
        if !args.run.quiet {
            eprintln!("sweep --auto: probing the {profile} rate");
        }
        let mut a = args.run.clone();
        a.profile = Some(profile);
        a.rate = None;
        a.arrival = crate::cli::ArrivalArg::Constant;
        a.out = None;
        a.hgrm = None;
        a.hlog = None;
        a.svg = None;
        a.html = None;
        a.out_intervals = None;
        a.out_requests = None;
        a.thresholds = Vec::new();
        a.dashboard = None;
        let shared = dash.map(|d| crate::run::SharedDashboard {
            dashboard: d,
            label: format!("sweep --auto: the {profile} probe"),
        });
        let r = crate::run::run_on(&a, shared)?;
        if r.report.requests.ok == 0 {
            return Err(UsageError(format!(
                "sweep --auto: the {profile} probe had no success ({}), so there is no rate to \
                 sweep from",
                r.failure.unwrap_or_default()
            ))
            .into());
        }
        sustained.push(r.report.throughput_rps);
    }
    let (lo, hi) = (sustained[0], sustained[1].max(sustained[0]));
    let probes = AutoProbes {
        synchronous_rps: lo,
        throughput_rps: sustained[1],
        throughput_workers: args.run.max_concurrency.unwrap_or(THROUGHPUT_WORKERS),
    };
    Ok((auto_rates(lo, hi, args.auto_steps as usize), probes))
}

/// `metronome sweep`: runs, prints the table (or JSON), writes `--out`,
/// and with `--svg` the sweep's plot of latency against offered rate
/// (each step's own outputs are written by its run, see [`step_path`]).
///
/// # Errors
/// As [`sweep`], or an unwritable `--out` or `--svg`.
pub fn run(args: &SweepArgs) -> anyhow::Result<i32> {
    let (s, code) = sweep(args)?;
    if let Some(path) = &args.run.out {
        std::fs::write(path, serde_json::to_string_pretty(&s)? + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if s.continuous.is_some() {
        // The continuous run wrote its own plots and page.
        print_sweep(&s, args.run.format.into())?;
        return Ok(code);
    }
    if let Some(path) = &args.run.svg {
        std::fs::write(path, crate::report::svg::render_sweep_svg(&s))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.run.html {
        crate::report::html::write_sweep(path, &s, Some(crate::report::argv::this_command()))?;
    }
    print_sweep(&s, args.run.format.into())?;
    Ok(code)
}
