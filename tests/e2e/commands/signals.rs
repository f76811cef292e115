//! Ctrl-C and SIGTERM lose no data and do not wait out the timeout: the
//! partial report, marked `interrupted`, with the signal's exit code.

use super::*;

/// Ctrl-C and SIGTERM lose no data: scheduling stops at once, replies in
/// flight get a bounded grace, and the partial report is printed, marked
/// `interrupted`, with exit 130 (SIGINT) or 143 (SIGTERM), within 2 s.
#[test]
fn signals_still_report_what_was_measured() {
    for engine in engines() {
        for (signal, code) in [("INT", 130), ("TERM", 143)] {
            let srv = server(plain(Duration::from_millis(1)));
            let url = format!("http://{}/", srv.addr());
            let (out, took) = run_then_signal(&url, engine, signal, &[]);
            srv.stop();
            let ctx = format!("{engine} SIG{signal}");
            assert!(
                took < Duration::from_secs(2),
                "{ctx}: stopping took {took:?}"
            );
            assert_eq!(
                out.status.code(),
                Some(code),
                "{ctx}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let r = common::decode_report(&String::from_utf8_lossy(&out.stdout), &ctx);
            assert!(r.interrupted && r.generator.stopped, "{ctx}");
            assert!(
                r.requests.sent >= 50 && r.requests.sent <= 250,
                "{ctx}: sent {}",
                r.requests.sent
            );
            assert_eq!(
                r.requests.ok, r.requests.sent,
                "{ctx}: replies in flight were awaited"
            );
            assert!(
                r.duration_s > 0.5 && r.duration_s < 5.0,
                "{ctx}: {}",
                r.duration_s
            );
            // The achieved rate is over the time actually run, not the planned 30 s.
            assert!(r.achieved_rps > 80.0, "{ctx}: {}", r.achieved_rps);
            assert!(r
                .generator
                .warnings
                .iter()
                .any(|w| w.contains("stopped early")));
        }
    }
}

/// Against a server that never answers (and a 10 s timeout), a stop still
/// ends the run within 2 s: requests in flight get at most 1 s of grace and
/// are counted as timeouts.
#[test]
fn a_stop_does_not_wait_out_the_timeout() {
    for engine in engines() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        // Accepts (the kernel does, from the backlog) and never reads or answers.
        let (out, took) = run_then_signal(
            &url,
            engine,
            "INT",
            // No warm-up request: this server answers none (it would
            // take the warm-up's 2 s budget, and the stop would come
            // before any request of the run was sent).
            &[
                "--timeout",
                "10s",
                "--connections",
                "4",
                "--warm-up",
                "check",
            ],
        );
        drop(listener);
        assert!(
            took < Duration::from_secs(2),
            "{engine}: stopping took {took:?}"
        );
        assert_eq!(out.status.code(), Some(130), "{engine}");
        let r = common::decode_report(&String::from_utf8_lossy(&out.stdout), engine);
        assert!(r.interrupted, "{engine}");
        assert_eq!(r.requests.ok, 0, "{engine}");
        assert!(r.requests.timeouts > 0, "{engine}: {:?}", r.requests);
    }
}

/// Starts `metronome run URL` (100 req/s for 30 s), sends SIG`signal`
/// after 1.5 s and returns its output and how long it took to end after
/// the signal.
fn run_then_signal(
    url: &str,
    engine: &str,
    signal: &str,
    extra: &[&str],
) -> (std::process::Output, Duration) {
    let child = Command::new(env!("CARGO_BIN_EXE_metronome"))
        .args([
            "run",
            url,
            "--rate",
            "100",
            "--duration",
            "30s",
            "--format",
            "json",
            "--quiet",
            "--engine",
            engine,
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let t = Instant::now();
    let out = child.wait_with_output().unwrap();
    (out, t.elapsed())
}
