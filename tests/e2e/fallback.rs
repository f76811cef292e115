//! The engine a container gets: `metronome run` under a seccomp filter that
//! refuses `io_uring_setup`, `io_uring_enter` and `io_uring_register` with
//! `EPERM`, as Docker's and containerd's default profiles do
//! (`metronome_testkit::seccomp`). The filter is installed in the child
//! process only; the embedded server runs in this process, on loopback.
//!
//! - `--engine auto` picks the std engine, says so once on stderr, and the
//!   run is right (every request scheduled, sent and ok; the report's
//!   `engine` is `std`); the same command without the filter picks
//!   io_uring where this kernel allows it, so the filter is what decided.
//! - `--engine uring` refuses to run: one line on stderr, exit 1.

use crate::common;

use std::process::{Command, Output};
use std::time::Duration;

use common::{assert_accounting, decode_report, plain, server};
use metronome_testkit::seccomp::refuse_io_uring;

/// The notice `--engine auto` prints when it falls back.
const NOTICE: &str = "metronome: notice: io_uring unavailable";

/// Runs the binary with `args`, under the filter when `filtered`.
fn metronome(args: &[&str], filtered: bool) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_metronome"));
    cmd.args(args);
    if filtered {
        refuse_io_uring(&mut cmd);
    }
    cmd.output().expect("run the metronome binary")
}

/// The lines of `stderr` that contain `needle`.
fn lines_with<'a>(stderr: &'a str, needle: &str) -> Vec<&'a str> {
    stderr.lines().filter(|l| l.contains(needle)).collect()
}

/// `--engine auto` under the filter: the std engine, one notice naming the
/// refusal, and a complete run.
#[test]
fn auto_falls_back_to_std_once_and_runs_right() {
    let srv = server(plain(Duration::ZERO));
    let url = format!("http://{}/", srv.addr());
    let args = [
        "run",
        &url,
        "--rate",
        "200",
        "--duration",
        "1s",
        "--engine",
        "auto",
        "--format",
        "json",
    ];
    let out = metronome(&args, true);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    let notices = lines_with(&stderr, NOTICE);
    assert_eq!(notices.len(), 1, "one notice; stderr: {stderr}");
    let notice = notices[0];
    assert!(
        notice.contains("not permitted") && notice.ends_with("; using the std engine"),
        "the notice names the refusal and the engine: {notice}"
    );
    assert_eq!(
        lines_with(&stderr, "io_uring").len(),
        1,
        "nothing else about io_uring; stderr: {stderr}"
    );
    let r = decode_report(&String::from_utf8_lossy(&out.stdout), "the filtered run");
    assert_accounting(&r);
    assert_eq!(r.engine, "std");
    assert_eq!(r.requests.scheduled, 200);
    assert_eq!(r.requests.sent, 200);
    assert_eq!(r.requests.ok, 200);
    assert_eq!(r.requests.errors, 0);
    assert_eq!(r.requests.dropped, 0);
    assert_eq!(r.metrics.latency.count, 200);
    // The server also answered the warm start's requests (one or more per
    // pre-opened connection, before the clock starts).
    let served = srv.stop();
    assert!(served >= 200, "the server answered every request: {served}");

    // The control: the same run unfiltered takes io_uring where the kernel
    // allows it here, silently.
    if metronome::run::engine::uring_available() {
        let srv = server(plain(Duration::ZERO));
        let url = format!("http://{}/", srv.addr());
        let mut unfiltered = args;
        unfiltered[1] = &url;
        let out = metronome(&unfiltered, false);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
        assert!(lines_with(&stderr, NOTICE).is_empty(), "stderr: {stderr}");
        let r = decode_report(&String::from_utf8_lossy(&out.stdout), "the unfiltered run");
        assert_eq!(r.engine, "uring");
        assert_eq!(r.requests.ok, 200);
        srv.stop();
    } else {
        eprintln!("SKIP the unfiltered control: io_uring is not available on this kernel");
    }
}

/// `--engine uring` under the filter: no run, one line naming the refusal
/// and the way out, exit 1 (the run failed; the arguments were right). The
/// same for `--http3`, whose engine choice is its own branch.
#[test]
fn uring_refused_with_one_line() {
    let srv = server(plain(Duration::ZERO));
    let http = format!("http://{}/", srv.addr());
    let cert = common::TestCert::new();
    let cacert = cert.path.to_str().expect("a UTF-8 temporary path");
    // Nothing listens for QUIC here: the refusal comes before any packet.
    let https = format!("https://{}/", srv.addr());
    let runs: [&[&str]; 2] = [
        &["run", &http, "--rate", "50", "--duration", "1s"],
        &[
            "run",
            &https,
            "--http3",
            "--cacert",
            cacert,
            "--rate",
            "50",
            "--duration",
            "1s",
        ],
    ];
    for run in runs {
        let mut args = run.to_vec();
        args.extend_from_slice(&["--engine", "uring", "--format", "json"]);
        let out = metronome(&args, true);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: stderr: {stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: one line; stderr: {stderr}");
        assert!(
            lines[0].starts_with("metronome: --engine uring: io_uring is not available here")
                && lines[0].contains("not permitted")
                && lines[0].ends_with("; use --engine std"),
            "{args:?}: {}",
            lines[0]
        );
        assert!(
            out.stdout.is_empty(),
            "{args:?}: no report of a run not made"
        );
    }
    assert_eq!(srv.stop(), 0, "no request reached the server");
}
