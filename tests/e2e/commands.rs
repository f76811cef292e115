//! End-to-end tests of the other commands: Ctrl-C during `run`, `report`,
//! `merge`, `--hgrm`, `--out`, and a short `demo`.

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{assert_valid, engines, metronome, plain, server};

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

/// `run --out` writes the report, `report` prints it, `--hgrm` writes
/// HdrHistogram's percentile format, and `merge` of two shards adds up.
#[test]
fn out_report_hgrm_and_merge() {
    let dir = std::env::temp_dir().join(format!("metronome-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let srv = server(plain(Duration::ZERO));
    let url = format!("http://{}/", srv.addr());
    let a = dir.join("a.json");
    let b = dir.join("b.json");
    let hgrm = dir.join("a.hgrm");
    for (shard, path) in [("0/2", &a), ("1/2", &b)] {
        let mut args = vec![
            "run",
            url.as_str(),
            "--rate",
            "100",
            "--duration",
            "1s",
            "--quiet",
            "--engine",
            "std",
            "--shard",
            shard,
            "--out",
        ];
        let p = path.to_str().unwrap();
        args.push(p);
        if shard == "0/2" {
            args.extend(["--hgrm", hgrm.to_str().unwrap()]);
        }
        let out = metronome(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    srv.stop();
    let ra = common::read_report(&a);
    let rb = common::read_report(&b);
    // Constant schedule at 100/s for 1 s split in two shards: 50 each.
    assert_eq!((ra.requests.scheduled, rb.requests.scheduled), (50, 50));
    assert_eq!(ra.offered_rps, 50.0);
    let text = std::fs::read_to_string(&hgrm).unwrap();
    assert!(
        text.contains("Percentile") && text.contains("Total count    =           50"),
        "{text}"
    );

    let svg = dir.join("a.svg");
    let out = metronome(&[
        "report",
        a.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("scheduled 50"));
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.matches("<polyline").count() == 5,
        "{svg}"
    );

    let merged = dir.join("m.json");
    let out = metronome(&[
        "merge",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = common::read_report(&merged);
    assert_eq!(m.requests.scheduled, 100);
    assert_eq!(m.requests.ok, ra.requests.ok + rb.requests.ok);
    assert_eq!(m.metrics.latency.count, 100);
    assert_eq!(m.offered_rps, 100.0);
    assert_eq!(
        m.metrics.latency.max,
        ra.metrics.latency.max.max(rb.metrics.latency.max)
    );
    let buckets: u64 = m.metrics.latency.buckets.iter().map(|b| b.1).sum();
    assert_eq!(buckets, 100);

    // A file that is not a report is bad input: exit 2.
    let out = metronome(&["report", hgrm.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).ok();
}

/// A short demo: the open loop's p99 is far above the closed loop's.
#[test]
fn short_demo_shows_the_difference() {
    let args = metronome::cli::DemoArgs {
        duration: Duration::from_secs(2),
        stall: Duration::from_millis(400),
        rate: 200.0,
        engine: metronome::cli::EngineArg::Std,
        out_dir: None,
    };
    let parts = metronome::demo::run_parts(&args, false).unwrap();
    assert_eq!(parts.len(), 4);
    let closed = &parts[0].1;
    let corrected = &parts[1].1;
    let open = &parts[2].1;
    assert_eq!(closed.model, "closed");
    assert!(corrected.metrics.latency_corrected.is_some());
    assert_eq!(open.requests.scheduled, 400);
    assert!(
        open.metrics.latency.p99 > 5.0 * closed.metrics.latency.p99,
        "open {} closed {}",
        open.metrics.latency.p99,
        closed.metrics.latency.p99
    );
    let text = metronome::demo::render(&args, &parts);
    assert!(text.contains("open, constant") && text.contains("closed + correction"));
}

/// `--hlog` writes an HdrHistogram interval log that the hdrhistogram
/// crate reads back: per interval, the same counts and max as the report;
/// service time over the whole run, tagged, with the report's count;
/// StartTime and BaseTime the report's `start_unix_ns`.
#[test]
fn hlog_is_read_by_the_hdrhistogram_crate() {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;

    let dir = std::env::temp_dir().join(format!("metronome-hlog-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log_path = dir.join("run.hlog");
    let srv = server(plain(Duration::from_millis(1)));
    let url = format!("http://{}/", srv.addr());
    let out = metronome(&[
        "run",
        &url,
        "--rate",
        "200",
        "--duration",
        "2s",
        "--quiet",
        "--engine",
        "std",
        "--format",
        "json",
        "--hlog",
        log_path.to_str().unwrap(),
    ]);
    srv.stop();
    assert_eq!(out.status.code(), Some(0));
    let report = common::decode_report(&String::from_utf8_lossy(&out.stdout), "the hlog run");
    let text = std::fs::read(&log_path).unwrap();
    let mut latency = Vec::new();
    let mut send_lag = Vec::new();
    let mut service_time = Vec::new();
    let mut times = Vec::new();
    for entry in IntervalLogIterator::new(&text) {
        let entry = entry.expect("a valid log line");
        if let LogEntry::StartTime(t) | LogEntry::BaseTime(t) = entry {
            times.push(t);
        }
        if let LogEntry::Interval(iv) = entry {
            let bytes = base64_decode(iv.encoded_histogram());
            let h: hdrhistogram::Histogram<u64> =
                Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
            match iv.tag().map(|t| t.as_str()) {
                None => latency.push((h, iv.max())),
                Some("send_lag") => send_lag.push(h),
                Some("service_time") => service_time.push(h),
                Some(other) => panic!("unexpected tag {other}"),
            }
        }
    }
    assert_eq!(times.len(), 2, "StartTime and BaseTime");
    for t in times {
        let ns = t.as_nanos() as u64;
        assert!(ns.abs_diff(report.start_unix_ns) < 1_000, "{ns}");
    }
    assert_eq!(service_time.len(), 1);
    assert_eq!(service_time[0].len(), report.metrics.service_time.count);
    // One histogram per interval row, the drain's after the schedule's.
    let rows: Vec<_> = report.intervals.iter().chain(&report.drain).collect();
    assert_eq!(latency.len(), rows.len());
    assert_eq!(send_lag.len(), rows.len());
    for ((h, max_ms), iv) in latency.iter().zip(rows) {
        assert_eq!(h.len(), iv.ok);
        assert!((max_ms - iv.max).abs() < 1e-3, "{max_ms} vs {}", iv.max);
    }
    let sent: u64 = send_lag.iter().map(|h| h.len()).sum();
    assert_eq!(sent, report.requests.sent);
    std::fs::remove_dir_all(&dir).ok();
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

/// A sweep (std engine, 1 s steps, JSON) against a FIFO server with a 5 ms
/// service time, which serves at most 200 req/s: the exit code and the
/// sweep, checked against the schema.
fn sweep_slow_server(
    rates: &str,
    extra: &[&str],
) -> (Option<i32>, metronome::report::sweep::Sweep) {
    let srv = server(plain(Duration::from_millis(5)));
    let url = format!("http://{}/", srv.addr());
    let mut args = vec![
        "sweep",
        &url,
        "--rates",
        rates,
        "--duration",
        "1s",
        "--quiet",
        "--engine",
        "std",
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let out = metronome(&args);
    srv.stop();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    common::assert_valid(&text, "the sweep");
    (out.status.code(), serde_json::from_str(&text).unwrap())
}

/// Without a threshold, the knee is where the target stops keeping up even
/// though every request was sent: at 400 req/s requests wait for a free
/// connection (`pool_exhausted`), many past the end of the schedule, so
/// the rate achieved on schedule falls below the offered one (it counted
/// those late sends before issue 30). The 50 req/s step keeps up.
#[test]
fn sweep_knee_where_requests_wait_for_connections() {
    let (code, s) = sweep_slow_server(
        "50,400",
        &[
            "--connections",
            "8",
            "--max-connections",
            "8",
            "--timeout",
            "10s",
        ],
    );
    assert_eq!(code, Some(0));
    let fast = &s.steps[1];
    assert_eq!(fast.requests.dropped, 0);
    assert!(
        fast.generator
            .behind
            .iter()
            .any(|b| b.cause == "pool_exhausted"),
        "{:?}",
        fast.generator.behind
    );
    assert_eq!(s.knee, Some(1), "{:?}", s.steps[0].generator.behind);
    let text = metronome::report::sweep::render(&s);
    assert!(text.contains("<- knee"), "{text}");
    assert!(
        text.contains("At 400.0 req/s the run stopped keeping up: achieved "),
        "{text}"
    );
}

/// `sweep` runs one step per rate and marks the knee: the first step that
/// breached its threshold (at 400 req/s the queue and p99 grow without
/// bound).
#[test]
fn sweep_finds_the_knee() {
    let (code, s) = sweep_slow_server(
        "50,100,400",
        &["--threshold", "latency.p99<100ms", "--timeout", "5s"],
    );
    assert_eq!(code, Some(3));
    assert_eq!(s.steps.len(), 3);
    assert_eq!(
        s.steps
            .iter()
            .map(|r| r.requests.scheduled)
            .collect::<Vec<_>>(),
        vec![50, 100, 400]
    );
    assert_eq!(s.knee, Some(2));
    assert!(s.steps[2].metrics.latency.p99 > 100.0);
    let text = metronome::report::sweep::render(&s);
    assert!(text.contains("<- knee"), "{text}");
}

/// `sweep --stages`: one continuous run whose stages are the steps, with
/// exact scheduled counts per stage (50 and 600 in the two held stages);
/// against a 5 ms FIFO server (200 req/s at most) the knee is the 600 req/s
/// stage, where requests waited while the latency grew. The document
/// validates, and --rates with --stages is refused.
#[test]
fn sweep_stages_is_one_continuous_run() {
    let srv = server(plain(Duration::from_millis(5)));
    let url = format!("http://{}/", srv.addr());
    let out = metronome(&[
        "sweep",
        &url,
        "--stages",
        "0s:50,1s:50,0s:600,1s:600",
        "--warmup",
        "0s",
        "--timeout",
        "5s",
        "--quiet",
        "--format",
        "json",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    common::assert_valid(&text, "a continuous sweep");
    let s: metronome::report::sweep::Sweep = serde_json::from_str(&text).unwrap();
    assert!(s.steps.is_empty());
    let r = s.continuous.as_ref().expect("the continuous run");
    let scheduled: Vec<u64> = r.stages.iter().map(|st| st.scheduled).collect();
    assert_eq!(scheduled, [0, 50, 0, 600]);
    assert_eq!(s.knee, Some(3), "{}", metronome::report::sweep::render(&s));
    let table = metronome::report::sweep::render(&s);
    assert!(table.contains("one continuous run"), "{table}");
    assert_eq!(table.matches("<- knee").count(), 1, "{table}");
    // Two held stages, two rows.
    assert_eq!(
        table
            .lines()
            .filter(|l| {
                let l = l.trim_start();
                l.starts_with("0-1 ") || l.starts_with("1-2 ")
            })
            .count(),
        2,
        "{table}"
    );
    let bad = metronome(&["sweep", &url, "--stages", "1s:10", "--rates", "10"]);
    assert_eq!(bad.status.code(), Some(2));
    srv.stop();
}

/// `run --repeat 3`: three runs with seeds 42, 43, 44, each a valid report
/// whose accounting holds; every summary row is the mean, sample sd and
/// Student-t 95% interval of the runs' own values; per-run files get
/// `-runK`.
#[test]
fn repeat_summarises_the_runs() {
    let srv = server(plain(std::time::Duration::from_millis(1)));
    let dir = std::env::temp_dir().join(format!("metronome-repeat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let hlog = dir.join("r.hlog");
    let url = format!("http://{}/", srv.addr());
    let out = metronome(&[
        "run",
        &url,
        "--rate",
        "100",
        "--duration",
        "500ms",
        "--arrival",
        "poisson",
        "--repeat",
        "3",
        "--format",
        "json",
        "--quiet",
        "--hlog",
        hlog.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: metronome::report::repeat::Repeat = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc.schema, "metronome.repeat/v1");
    assert_eq!(
        doc.runs.iter().map(|r| r.seed).collect::<Vec<_>>(),
        [42, 43, 44]
    );
    for r in &doc.runs {
        common::assert_accounting(r);
        assert_valid(&serde_json::to_string(r).unwrap(), "a repeat run");
    }
    // Poisson with three seeds: three schedules.
    let counts: Vec<u64> = doc.runs.iter().map(|r| r.requests.scheduled).collect();
    assert!(counts.windows(2).any(|w| w[0] != w[1]), "{counts:?}");
    for st in &doc.summary {
        let want: Vec<f64> = doc
            .runs
            .iter()
            .map(|r| {
                metronome::report::repeat::headline(r)
                    .into_iter()
                    .find(|(n, _)| *n == st.name)
                    .unwrap()
                    .1
            })
            .collect();
        assert_eq!(st.values, want, "{}", st.name);
        let mean = want.iter().sum::<f64>() / 3.0;
        let sd = (want.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
        assert!((st.mean - mean).abs() < 1e-9, "{}", st.name);
        assert!((st.sd - sd).abs() < 1e-9, "{}", st.name);
        assert!(
            (st.ci95 - 4.303 * sd / 3f64.sqrt()).abs() < 1e-9,
            "{}",
            st.name
        );
    }
    let names: Vec<&str> = doc.summary.iter().map(|s| s.name.as_str()).collect();
    for n in ["achieved_rps", "latency.p50", "latency.p99", "error_rate"] {
        assert!(names.contains(&n), "{names:?}");
    }
    for k in 1..=3 {
        assert!(
            dir.join(format!("r-run{k}.hlog")).exists(),
            "run {k}'s hlog"
        );
    }
}

/// `sweep --auto`: two probes (synchronous, then throughput with
/// --max-concurrency at a time) place --auto-steps rates evenly from the
/// one's sustained rate to the other's, as guidellm's sweep does.
#[test]
fn sweep_auto_places_its_steps_between_the_probes() {
    let srv = server(plain(std::time::Duration::from_millis(2)));
    let url = format!("http://{}/", srv.addr());
    let out = metronome(&[
        "sweep",
        &url,
        "--auto",
        "--auto-steps",
        "3",
        "--duration",
        "500ms",
        "--max-concurrency",
        "4",
        "--format",
        "json",
        "--quiet",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: metronome::report::sweep::Sweep = serde_json::from_slice(&out.stdout).unwrap();
    let a = s.auto.as_ref().expect("the probes");
    assert_eq!(a.throughput_workers, 4);
    assert!(a.synchronous_rps > 0.0 && a.throughput_rps > 0.0, "{a:?}");
    let hi = a.throughput_rps.max(a.synchronous_rps);
    let want = metronome::report::sweep::auto_rates(a.synchronous_rps, hi, 3);
    let got: Vec<f64> = s.steps.iter().map(|r| r.offered_rps).collect();
    assert_eq!(got, want);
    assert!(s
        .steps
        .iter()
        .all(|r| r.profile.is_none() && r.closed_workers == 0));
}

/// Every output path is checked before the run (issue 30 item 3): one that
/// cannot be written (a missing directory, a directory named as the file)
/// is a usage error, exit 2, one line naming the flag and the path, and
/// the target receives nothing; the same for `report`, `merge`, `sweep`
/// and `--repeat`.
#[test]
fn output_paths_are_checked_before_the_run() {
    let dir = std::env::temp_dir().join(format!("metronome-outputs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap();
    let missing = format!("{d}/no-such-dir/x.out");
    let srv = server(plain(Duration::from_millis(1)));
    let url = format!("http://{}/", srv.addr());
    let run = ["run", &url, "--rate", "10", "--duration", "5s", "--quiet"];
    let mut cases: Vec<(Vec<&str>, &str, &str)> = Vec::new();
    for flag in ["--out", "--html", "--hgrm", "--hlog", "--svg"] {
        let mut a = run.to_vec();
        a.extend([flag, missing.as_str()]);
        cases.push((a, flag, "does not exist"));
        let mut a = run.to_vec();
        a.extend([flag, d]);
        cases.push((a, flag, "is a directory"));
    }
    let mut a = run.to_vec();
    a.extend(["--repeat", "2", "--hlog", missing.as_str()]);
    cases.push((a, "--hlog", "does not exist"));
    let mut a = vec![
        "sweep",
        &url,
        "--rates",
        "10,20",
        "--duration",
        "5s",
        "--quiet",
    ];
    a.extend(["--out", missing.as_str()]);
    cases.push((a, "--out", "does not exist"));
    let saved = format!("{d}/saved.json");
    let shard = format!("{d}/shard.json");
    for (flag, path) in [("--svg", missing.as_str()), ("--html", d)] {
        cases.push((vec!["report", &saved, flag, path], flag, ""));
    }
    cases.push((vec!["merge", &shard, "--out", d], "--out", "is a directory"));
    for (args, flag, why) in &cases {
        let t = Instant::now();
        let out = metronome(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        let path = args[args.iter().position(|a| a == flag).unwrap() + 1];
        assert!(
            err.contains(&format!("{flag} {path}: ")) && err.contains(why),
            "{args:?}: {err}"
        );
        assert!(t.elapsed() < Duration::from_secs(4), "{args:?}: no run");
    }
    assert_eq!(srv.stop(), 0, "no request reached the target");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file that still cannot be written at the end (here /dev/full, which
/// opens but takes no byte) loses nothing: the text report is printed,
/// the JSON goes to `metronome-report-RUN_ID.json` in the current
/// directory, named on stderr in one line with the flag, and the run exits 1.
#[test]
fn an_unwritable_output_falls_back_to_a_named_file() {
    if !std::path::Path::new("/dev/full").exists() {
        eprintln!("SKIP: no /dev/full here");
        return;
    }
    let dir = std::env::temp_dir().join(format!("metronome-fallback-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let srv = server(plain(Duration::from_millis(1)));
    let url = format!("http://{}/", srv.addr());
    let out = Command::new(env!("CARGO_BIN_EXE_metronome"))
        .args([
            "run",
            &url,
            "--rate",
            "20",
            "--duration",
            "500ms",
            "--quiet",
        ])
        .args(["--engine", "std", "--html", "/dev/full"])
        .current_dir(&dir)
        .output()
        .unwrap();
    srv.stop();
    let err = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        text.contains("requests: scheduled 10  sent 10  ok 10"),
        "{text}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--html: cannot write /dev/full"), "{err}");
    let named = err
        .trim()
        .rsplit_once("the JSON report is in ")
        .map(|(_, p)| std::path::PathBuf::from(p))
        .unwrap_or_else(|| panic!("no fallback named: {err}"));
    assert_eq!(
        named.parent(),
        Some(std::fs::canonicalize(&dir).unwrap().as_path())
    );
    let r = common::read_report(&named);
    assert_eq!((r.requests.sent, r.requests.ok), (10, 10));
    assert!(named
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with(&format!("metronome-report-{}", r.run_id)));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every size a user can type has a limit, checked before anything is
/// reserved: one line naming the flag and the limit, exit 2, no
/// allocation failure (these aborted with "memory allocation of ...
/// failed" and exit 134 before). The target is never contacted.
#[test]
fn absurd_sizes_are_usage_errors() {
    let url = "http://127.0.0.1:9/";
    let cases: [(&[&str], &str); 9] = [
        (
            &["--duration", "10s", "--interval", "1us"],
            "above the limit of 200000",
        ),
        (
            &["--stages", "100000h:10"],
            "above the limit of 2592000s (30 days)",
        ),
        (
            &["--duration", "800h"],
            "above the limit of 2592000s (30 days)",
        ),
        (
            &["--timeout", "2h"],
            "--timeout 7200s is above the limit of 3600s",
        ),
        (
            &["--max-connections", "10000000"],
            "--max-connections 10000000 is above the limit of 65536",
        ),
        (
            &["--connections", "100000"],
            "--connections 100000 is above the limit of 65536",
        ),
        (
            &["--max-in-flight", "4000000000"],
            "--max-in-flight 4000000000 is above the limit of 1000000",
        ),
        (
            &["--max-concurrency", "70000"],
            "--max-concurrency 70000 is above the limit of 65536",
        ),
        (
            &[
                "--rate",
                "10000000",
                "--duration",
                "700h",
                "--interval",
                "1h",
            ],
            "requests (rate x duration), above the limit",
        ),
    ];
    for (args, want) in cases {
        let mut all = vec!["run", url];
        all.extend_from_slice(args);
        let out = metronome(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("memory allocation"),
            "{err}"
        );
    }
}

/// Runs the binary with `args` and the terminal width `columns` (COLUMNS).
fn help_at(columns: &str, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_metronome"))
        .args(args)
        .env("COLUMNS", columns)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The headings of `run --help`, in the order they print.
const HEADINGS: [&str; 10] = [
    "Target and request:",
    "Rate and schedule:",
    "Workloads:",
    "Connections:",
    "TLS:",
    "HTTP/2 and gRPC:",
    "LLM (OpenAI):",
    "Thresholds:",
    "Outputs:",
    "Engine:",
];

/// `run -h` is a newcomer's page: at most 60 lines of at most 100 columns
/// (also on a wider terminal), the URL and the ten most used flags under
/// their headings, then three examples (issue 31 item 6).
#[test]
fn run_short_help_is_one_screen_with_examples() {
    for columns in ["100", "250"] {
        let help = help_at(columns, &["run", "-h"]);
        let lines: Vec<&str> = help.lines().collect();
        assert!(lines.len() <= 60, "{} lines:\n{help}", lines.len());
        for l in &lines {
            assert!(
                l.chars().count() <= 100,
                "{} columns: {l}",
                l.chars().count()
            );
        }
        let flags = [
            "<URL>",
            "--header",
            "--body ",
            "--body-file",
            "--rate",
            "--duration",
            "--arrival",
            "--connections",
            "--openai",
            "--threshold",
            "--out",
        ];
        let mut at = 0;
        for f in flags {
            let i = help[at..]
                .find(f)
                .unwrap_or_else(|| panic!("{f} not after byte {at}:\n{help}"));
            at += i;
        }
        // Nothing else: the other flags are in --help.
        for hidden in [
            "--stages",
            "--max-connections",
            "--cacert",
            "--grpc",
            "--engine",
        ] {
            assert!(!help.contains(hidden), "{hidden} in -h:\n{help}");
        }
        let examples = help.split("Examples:\n").nth(1).expect("examples");
        assert_eq!(
            examples.matches("  metronome run http").count(),
            3,
            "{examples}"
        );
    }
}

/// `run --help` keeps every flag, grouped under the ten headings in order,
/// wrapped at 100 columns, and says which protocols the URL may speak.
#[test]
fn run_long_help_groups_every_flag_under_headings() {
    let help = help_at("100", &["run", "--help"]);
    let mut at = 0;
    for h in HEADINGS {
        let i = help[at..]
            .lines()
            .position(|l| l == h)
            .unwrap_or_else(|| panic!("heading {h} missing or out of order:\n{help}"));
        at += help[at..]
            .lines()
            .take(i + 1)
            .map(|l| l.len() + 1)
            .sum::<usize>();
    }
    for l in help.lines() {
        assert!(
            l.chars().count() <= 100,
            "{} columns: {l}",
            l.chars().count()
        );
    }
    // Flags of every heading, with their details.
    for f in [
        "--stages <STAGES>",
        "--requests <FILE>",
        "--max-connections",
        "--cacert <FILE>",
        "--grpc <SERVICE/METHOD>",
        "--max-tokens-field",
        "--slo <SLOS>",
        "--hlog <HLOG>",
        "--spin <SPIN>",
        "K counted from 0",
        "SSLKEYLOGFILE",
        "Examples:",
    ] {
        assert!(help.contains(f), "{f} missing:\n{help}");
    }
    for p in [
        "HTTP/1.1",
        "HTTPS",
        "HTTP/2 (h2c, h2)",
        "unary",
        "gRPC",
        "OpenAI-style SSE",
    ] {
        let url = help.split("Options:").next().unwrap();
        assert!(url.contains(p), "the URL help does not name {p}:\n{url}");
    }
    // README's first line names them too.
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let first = readme.split("\n\n").nth(1).unwrap();
    for p in [
        "HTTP/1.1",
        "HTTPS",
        "HTTP/2",
        "h2c",
        "h2",
        "unary gRPC",
        "OpenAI-style SSE",
    ] {
        assert!(
            first.contains(p),
            "README's first paragraph does not name {p}: {first}"
        );
    }
}

/// A misspelled flag or value gets clap's suggestion in its one line
/// (exit 2); so does `sweep`.
#[test]
fn a_misspelling_gets_a_did_you_mean() {
    for (args, want) in [
        (
            vec!["run", "http://127.0.0.1:1/", "--duraton", "3s"],
            "metronome: unexpected argument '--duraton' found; did you mean '--duration'? (see --help)\n",
        ),
        (
            vec!["run", "http://127.0.0.1:1/", "--arrival", "poison"],
            "metronome: invalid value 'poison' for '--arrival <ARRIVAL>'; did you mean 'poisson'? (see --help)\n",
        ),
        (
            vec!["sweep", "http://127.0.0.1:1/", "--rates", "1", "--conections", "4"],
            "metronome: unexpected argument '--conections' found; did you mean '--connections'? (see --help)\n",
        ),
    ] {
        let out = metronome(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), want, "{args:?}");
    }
}

/// `serve --grpc-status-every` answers gRPC calls over HTTP/2 only: without
/// `--http2` it is a usage error (one line, exit 2), not silently ignored.
#[test]
fn serve_grpc_status_every_needs_http2() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_metronome"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--grpc-status-every",
            "10:14",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve accepted --grpc-status-every without --http2");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--http2"), "{err}");
}
