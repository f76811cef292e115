//! The report files and the commands that read them: `--out`, `report`,
//! `--hgrm`, `merge`, a short `demo`, the `.hlog` read by the hdrhistogram
//! crate; output paths checked before the run, an unwritable one replaced
//! by a named file.

use super::*;

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
    // Every run's warnings are shown, with the run's label (before, a
    // demo on a starved host gave no word that the generator fell behind).
    let mut parts = parts;
    let behind = "the generator fell behind its schedule from 0.5 s (test)";
    parts[3].1.generator.warnings.push(behind.to_string());
    let text = metronome::demo::render(&args, &parts);
    assert!(
        text.contains(&format!("  open, Poisson: {behind}\n")),
        "{text}"
    );
    for (_, r) in &parts {
        for w in &r.generator.warnings {
            assert!(text.contains(w.as_str()), "{w}: {text}");
        }
    }
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

/// Two outputs naming one file (the same path, or `x` and `./x`) are
/// refused before the run, exit 2, in one line naming both flags; so is
/// `-` (stdout) given twice. The target receives nothing. (Before: exit
/// 0, and one output silently overwrote the other.)
#[test]
fn two_outputs_naming_one_file_are_refused() {
    let dir = std::env::temp_dir().join(format!("metronome-same-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let x = dir.join("x");
    let x = x.to_str().unwrap();
    let dotted = dir.join(".").join("x");
    let dotted = dotted.to_str().unwrap();
    let srv = server(plain(Duration::from_millis(1)));
    let url = format!("http://{}/", srv.addr());
    let run = ["run", &url, "--rate", "10", "--duration", "5s", "--quiet"];
    let with = |more: &[&'static str], paths: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = run.iter().map(|s| s.to_string()).collect();
        for (flag, p) in more.iter().zip(paths) {
            a.push(flag.to_string());
            a.push(p.to_string());
        }
        a
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            with(&["--out", "--out-intervals", "--html"], &[x, x, x]),
            "--out and --html both name",
        ),
        (
            with(&["--out", "--out-requests"], &[x, dotted]),
            "--out and --out-requests both name",
        ),
        (
            with(&["--hgrm", "--svg"], &[dotted, x]),
            "--hgrm and --svg both name",
        ),
        (
            with(&["--out-intervals", "--out-requests"], &["-", "-"]),
            "cannot both write to stdout",
        ),
        (
            vec![
                "report".into(),
                dir.join("saved.json").display().to_string(),
                "--svg".into(),
                x.into(),
                "--html".into(),
                x.into(),
            ],
            "--svg and --html both name",
        ),
    ];
    for (args, says) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let t = Instant::now();
        let out = metronome(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(t.elapsed() < Duration::from_secs(4), "{args:?}: no run");
    }
    assert_eq!(srv.stop(), 0, "no request reached the target");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `report` and `merge` refuse a file that is not theirs in one line that
/// says what the file is and what they read (before: a serde message of
/// about 1,000 characters listing the report's 40 field names).
#[test]
fn a_file_that_is_not_a_report_is_named_in_one_line() {
    let dir = std::env::temp_dir().join(format!("metronome-notreport-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let not_json = file("a.hgrm", "       Value     Percentile TotalCount\n");
    let no_schema = file("b.json", "{\"steps\": []}");
    let other = file(
        "c.json",
        "{\"schema\": \"metronome.requests/v1\", \"run_id\": \"x\"}",
    );
    let cut = file(
        "d.json",
        "{\"schema\": \"metronome.report/v1\", \"run_idd\": 1}",
    );
    let repeat = file(
        "e.json",
        "{\"schema\": \"metronome.repeat/v1\", \"runs\": [], \"summary\": []}",
    );
    let reads = "report reads a run's or merge's report (metronome.report/v1), a sweep \
                 (metronome.sweep/v1) or a --repeat document (metronome.repeat/v1)";
    for (args, says) in [
        (
            vec!["report", &not_json],
            format!("{not_json} is not JSON ("),
        ),
        (
            vec!["report", &no_schema],
            format!("{no_schema} is JSON without a \"schema\" field"),
        ),
        (
            vec!["report", &other],
            format!("{other} is a metronome.requests/v1 document; {reads}"),
        ),
        (
            vec!["report", &cut],
            format!("{cut} is a report that does not decode (unknown field `run_idd` at line 1"),
        ),
        (
            vec!["merge", &repeat, &repeat],
            format!(
                "{repeat} is a --repeat document (metronome.repeat/v1); a run's or merge's report"
            ),
        ),
    ] {
        let out = metronome(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(&says), "{args:?}: {err}");
        assert!(err.len() < 400, "{args:?}: {} characters: {err}", err.len());
    }
    // An empty --repeat document is one: its summary is printed.
    let out = metronome(&["report", &repeat]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
