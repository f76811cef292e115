//! `metronome demo`: the embedded default. One command shows why open loop
//! matters: the same stalling server measured closed loop, closed loop with
//! the HdrHistogram correction, open loop constant and open loop Poisson.

use std::fmt::Write as _;
use std::io::Write as _;
use std::time::Duration;

use clap::Parser;

use crate::cli::{Cli, Command, DemoArgs, EngineArg};
use crate::report::num::{count, num, tick, unit};
use crate::report::Report;
use crate::serve::{self, ServeConfig};

/// One part of the demo.
struct Part {
    label: &'static str,
    args: Vec<String>,
}

/// Runs the demo and prints the comparison table.
///
/// # Errors
/// When the embedded server cannot start or a run fails.
pub fn run(args: &DemoArgs) -> anyhow::Result<()> {
    let reports = run_parts(args, true)?;
    print!("{}", render(args, &reports));
    Ok(())
}

/// The four runs of the demo, each against a fresh embedded server;
/// returns (label, report) pairs.
///
/// # Errors
/// When the embedded server cannot start or a run fails.
pub fn run_parts(args: &DemoArgs, progress: bool) -> anyhow::Result<Vec<(&'static str, Report)>> {
    if args.stall >= args.duration {
        return Err(crate::UsageError("--stall must be shorter than --duration".into()).into());
    }
    if let Some(dir) = &args.out_dir {
        // Before the first run: a directory that cannot be made or written
        // loses nothing.
        std::fs::create_dir_all(dir).map_err(|e| {
            crate::UsageError(format!(
                "--out-dir {}: cannot create it ({e})",
                dir.display()
            ))
        })?;
        crate::output::check("--out-dir", &dir.join("demo-1.json"))?;
    }
    let secs = |d: Duration| format!("{}ms", d.as_millis());
    let workers = 10u32;
    let service = Duration::from_millis(1);
    // Each closed worker sends about every workers * service under load.
    let expected_interval = service * workers;
    let engine = match args.engine {
        EngineArg::Auto => "auto",
        EngineArg::Uring => "uring",
        EngineArg::Std => "std",
    };
    let common = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = vec![
            "--duration".into(),
            secs(args.duration),
            "--engine".into(),
            engine.into(),
            "--quiet".into(),
            "--timeout".into(),
            "5s".into(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let rate = format!("{}", args.rate);
    let parts = [
        Part {
            label: "closed, 10 workers",
            args: common(&["--closed", "10"]),
        },
        Part {
            label: "closed + correction",
            args: common(&[
                "--closed",
                "10",
                "--expected-interval",
                &secs(expected_interval),
            ]),
        },
        Part {
            label: "open, constant",
            args: common(&[
                "--rate",
                &rate,
                "--arrival",
                "constant",
                "--connections",
                "32",
            ]),
        },
        Part {
            label: "open, Poisson",
            args: common(&[
                "--rate",
                &rate,
                "--arrival",
                "poisson",
                "--connections",
                "32",
            ]),
        },
    ];
    let stall_at = (args.duration - args.stall) / 2;
    let mut out = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        if progress {
            eprint!(
                "[{}/{}] {:<22} {} against a fresh server (1 ms service, {} stall at {}) ... ",
                i + 1,
                parts.len(),
                part.label,
                unit(args.duration.as_secs_f64(), "s"),
                unit(args.stall.as_secs_f64() * 1e3, "ms"),
                unit(stall_at.as_secs_f64(), "s")
            );
            let _ = std::io::stderr().flush();
        }
        let server = serve::spawn(ServeConfig {
            listen: "127.0.0.1:0".parse()?,
            service,
            stall_at: Some(stall_at),
            stall_for: args.stall,
            ..ServeConfig::default()
        })?;
        let url = format!("http://{}/", server.addr());
        let mut argv = vec!["metronome".to_string(), "run".to_string(), url];
        argv.extend(part.args.iter().cloned());
        let cli = Cli::try_parse_from(&argv)?;
        let Command::Run(run_args) = cli.command else {
            unreachable!("the demo builds run arguments")
        };
        let result = crate::run::run(&run_args);
        server.stop();
        let result = result?;
        if let Some(dir) = &args.out_dir {
            let name = format!("demo-{}.json", i + 1);
            std::fs::write(
                dir.join(name),
                serde_json::to_string_pretty(&result.report)?,
            )?;
        }
        if progress {
            eprintln!("{} sent", count(result.report.requests.sent));
        }
        out.push((part.label, result.report));
    }
    Ok(out)
}

/// The side-by-side table and what it means.
pub fn render(args: &DemoArgs, reports: &[(&'static str, Report)]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nThe same server (FIFO, 1 ms service, one {} ms stall) measured four ways, {} s each:\n",
        tick(args.stall.as_secs_f64() * 1e3),
        tick(args.duration.as_secs_f64())
    );
    let _ = writeln!(
        s,
        "{:<22} {:>8} {:>10} {:>9} {:>9} {:>9} {:>9}",
        "", "sent", "req/s", "p50 ms", "p99 ms", "p99.9 ms", "max ms"
    );
    for (label, r) in reports {
        let m = r
            .metrics
            .latency_corrected
            .as_ref()
            .unwrap_or(&r.metrics.latency);
        let _ = writeln!(
            s,
            "{:<22} {:>8} {:>10} {:>9} {:>9} {:>9} {:>9}",
            label,
            count(r.requests.sent),
            num(r.achieved_rps),
            num(m.p50),
            num(m.p99),
            num(m.p999),
            num(m.max)
        );
    }
    let closed = reports.first().map(|(_, r)| r);
    let open = reports.get(2).map(|(_, r)| r);
    if let (Some(c), Some(o)) = (closed, open) {
        let half_stall_ms = args.stall.as_secs_f64() * 500.0;
        let _ = writeln!(
            s,
            "\nThe closed loop stopped sending while the server stalled, so only {} of its {} requests \
             waited more than half the stall and its p99 ({}) looks healthy.\n\
             The open loop kept its schedule and measured every request from its intended send time: \
             {} requests waited more than half the stall, and its p99 is {}.",
            count(c.metrics.latency.count_at_least(half_stall_ms)),
            count(c.requests.sent),
            unit(c.metrics.latency.p99, "ms"),
            count(o.metrics.latency.count_at_least(half_stall_ms)),
            unit(o.metrics.latency.p99, "ms")
        );
    }
    s.push_str(&warnings(reports));
    s
}

/// The runs' own warnings (their reports' `generator.warnings`), each text
/// once with the runs that gave it: a demo on a starved host says that
/// the generator fell behind, as the run would. Empty when none warned.
fn warnings(reports: &[(&'static str, Report)]) -> String {
    let mut seen: Vec<(&str, Vec<&str>)> = Vec::new();
    for (label, r) in reports {
        for w in &r.generator.warnings {
            match seen.iter_mut().find(|(text, _)| text == w) {
                Some((_, labels)) => labels.push(label),
                None => seen.push((w, vec![label])),
            }
        }
    }
    let mut s = String::new();
    if !seen.is_empty() {
        s.push_str("\nWarnings of the runs above:\n");
    }
    for (text, labels) in seen {
        let _ = writeln!(s, "  {}: {text}", labels.join("; "));
    }
    s
}
