//! Shared helpers for the end-to-end tests: start the embedded server
//! in-process on loopback, run the real binary, decode its JSON report.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::process::{Command, Output};
use std::time::Duration;

use metronome::report::Report;
use metronome::serve::{self, ServeConfig, ServerHandle};

/// The engines every end-to-end test runs against. io_uring is skipped
/// visibly when the kernel refuses it.
pub fn engines() -> Vec<&'static str> {
    let mut v = vec!["std"];
    if uring_available() {
        v.push("uring");
    } else {
        eprintln!(
            "SKIP uring: io_uring is not available on this kernel; testing the std engine only"
        );
    }
    v
}

fn uring_available() -> bool {
    metronome::run::engine::uring_available()
}

/// Starts the embedded server on 127.0.0.1 with a free port.
pub fn server(cfg: ServeConfig) -> ServerHandle {
    serve::spawn(ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..cfg
    })
    .expect("start the embedded server")
}

/// A plain config: the given service time, everything else default.
pub fn plain(service: Duration) -> ServeConfig {
    ServeConfig {
        service,
        ..ServeConfig::default()
    }
}

/// Runs the real binary with `args`.
pub fn metronome(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_metronome"))
        .args(args)
        .output()
        .expect("run the metronome binary")
}

/// Runs `metronome run URL --format json --quiet ARGS` on `engine` and
/// decodes the report; panics with stderr when it did not exit with `code`.
pub fn run_json(addr: SocketAddr, path: &str, engine: &str, args: &[&str], code: i32) -> Report {
    let url = format!("http://{addr}{path}");
    let mut all = vec![
        "run",
        url.as_str(),
        "--format",
        "json",
        "--quiet",
        "--engine",
        engine,
    ];
    all.extend_from_slice(args);
    let out = metronome(&all);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(code),
        "metronome {all:?} exited {:?}; stderr: {stderr}",
        out.status.code()
    );
    let report: Report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "report is not valid JSON ({e}): {}\nstderr: {stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert_accounting(&report);
    report
}

/// The accounting every report promises (docs/report.md, "Accounting"),
/// asserted on every report an end-to-end test decodes.
pub fn assert_accounting(r: &Report) {
    let q = &r.requests;
    let e = &r.errors;
    let sum = |m: &std::collections::BTreeMap<String, u64>| m.values().sum::<u64>();
    let ctx = format!("{}: {:?} {:?}", r.engine, q, e);
    assert_eq!(
        q.scheduled,
        q.sent + q.dropped + q.unsent,
        "scheduled = sent + dropped + unsent; {ctx}"
    );
    assert_eq!(q.sent, q.ok + q.errors, "sent = ok + errors; {ctx}");
    assert_eq!(q.errors, sum(&e.by_kind), "errors = sum(by_kind); {ctx}");
    assert_eq!(
        q.unsent,
        sum(&e.unsent_by_reason),
        "unsent = sum(unsent_by_reason); {ctx}"
    );
    assert_eq!(
        e.by_kind["status"],
        sum(&e.by_status),
        "status = sum(by_status); {ctx}"
    );
    assert_eq!(
        e.by_kind["bad_framing"],
        sum(&e.bad_framing_by_cause),
        "bad_framing = sum(by cause); {ctx}"
    );
    assert_eq!(
        q.timeouts, e.by_kind["timeout"],
        "timeouts = by_kind.timeout; {ctx}"
    );
    assert!(q.good <= q.ok, "good <= ok; {ctx}");
    let per_interval =
        |f: fn(&metronome::report::IntervalReport) -> u64| r.intervals.iter().map(f).sum::<u64>();
    assert_eq!(
        q.dropped,
        per_interval(|i| i.dropped),
        "dropped = sum(intervals.dropped); {ctx}"
    );
    assert_eq!(
        r.generator.waited_for_connection,
        per_interval(|i| i.waited),
        "waited_for_connection = sum(intervals.waited); {ctx}"
    );
}

/// How many recorded values of `metric` are at least `at_least_ms`.
pub fn count_at_least(m: &metronome::report::Metric, at_least_ms: f64) -> u64 {
    m.count_at_least(at_least_ms)
}

/// Reads a JSON report written by the binary (`--out`), checks it, and
/// decodes it.
pub fn read_report(path: &std::path::Path) -> Report {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let r: Report = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not a report ({e})", path.display()));
    assert_accounting(&r);
    r
}
