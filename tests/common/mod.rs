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
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "report is not valid JSON ({e}): {}\nstderr: {stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// How many recorded values of `metric` are at least `at_least_ms`.
pub fn count_at_least(m: &metronome::report::Metric, at_least_ms: f64) -> u64 {
    m.count_at_least(at_least_ms)
}
