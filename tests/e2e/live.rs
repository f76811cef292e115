//! Live intervals (issue 33, docs/live.md): `--out-intervals` writes each
//! interval's row as it closes, made by the report's own code from the
//! engines' closed intervals merged over their threads; every line equals
//! the final report's `intervals[i]` exactly, and the first ones arrive
//! while the run still goes.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{engines, plain, server};

/// The measured duration of the runs below.
const RUN: Duration = Duration::from_secs(3);

/// Runs `metronome run ... --out-intervals - --out FILE` on `engine`,
/// reading stdout as it comes: the lines with how long after the spawn
/// each arrived, the report (as JSON) and stderr.
fn live_run(engine: &str, extra: &[&str]) -> (Vec<(Duration, String)>, serde_json::Value, String) {
    live_run_with(engine, "500ms", extra, None)
}

/// [`live_run`] at `--interval interval`; with `stall`, stdout is a pipe
/// of one page that is not read for `stall` after the first line (a slow
/// sink: the live writer blocks on it).
fn live_run_with(
    engine: &str,
    interval: &str,
    extra: &[&str],
    stall: Option<Duration>,
) -> (Vec<(Duration, String)>, serde_json::Value, String) {
    let srv = server(plain(Duration::from_millis(2)));
    let url = format!("http://{}/", srv.addr());
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let out = std::env::temp_dir().join(format!(
        "metronome-live-{}-{engine}-{}.json",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let mut args = vec![
        "run",
        &url,
        "--engine",
        engine,
        "--rate",
        "200",
        "--duration",
        "3s",
        "--interval",
        interval,
        "--quiet",
        "--out-intervals",
        "-",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let spawned = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_metronome"))
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the metronome binary");
    let stdout = child.stdout.take().unwrap();
    // One page: Linux's F_SETPIPE_SZ (elsewhere a pipe's size is fixed, and
    // the one test that stalls is Linux's only).
    #[cfg(target_os = "linux")]
    if stall.is_some() {
        use std::os::fd::AsRawFd;
        // SAFETY: F_SETPIPE_SZ on a pipe this process holds open; it
        // touches no memory.
        let page = unsafe { libc::fcntl(stdout.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) };
        assert!(
            page >= 4096,
            "F_SETPIPE_SZ: {}",
            std::io::Error::last_os_error()
        );
    }
    let mut lines = Vec::new();
    for line in BufReader::new(stdout).lines() {
        lines.push((spawned.elapsed(), line.expect("a line of stdout")));
        if let (Some(stall), 1) = (stall, lines.len()) {
            std::thread::sleep(stall);
        }
    }
    let done = child.wait_with_output().expect("wait for metronome");
    let stderr = String::from_utf8_lossy(&done.stderr).into_owned();
    assert_eq!(done.status.code(), Some(0), "{args:?}: {stderr}");
    let text = std::fs::read_to_string(&out).expect("the --out report");
    let _ = std::fs::remove_file(&out);
    (
        lines,
        serde_json::from_str(&text).expect("a JSON report"),
        stderr,
    )
}

/// The report's rows, the lines' counterparts: its `intervals`, then its
/// `drain` (`"phase": "drain"`, issue 38).
fn all_rows(report: &serde_json::Value) -> Vec<serde_json::Value> {
    let mut rows = report["intervals"].as_array().cloned().unwrap_or_default();
    rows.extend(report["drain"].as_array().cloned().unwrap_or_default());
    rows
}

/// Every line equals the report's `intervals[i]`, all of them in order;
/// those that arrived before the engine could have finished (sooner than
/// the run's duration after the spawn) were streamed live.
#[test]
fn live_intervals_equal_the_final_report() {
    for engine in engines() {
        let (lines, report, stderr) = live_run(engine, &[]);
        let rows = report["intervals"].as_array().expect("intervals");
        assert_eq!(rows.len(), 6, "{engine}");
        let all = all_rows(&report);
        assert_eq!(lines.len(), all.len(), "{engine}: {lines:?}");
        for (i, ((_, line), row)) in lines.iter().zip(&all).enumerate() {
            let live: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            assert_eq!(&live, row, "{engine}: interval {i}");
        }
        let live = lines.iter().filter(|(at, _)| *at < RUN).count();
        eprintln!(
            "{engine}: {live} of {} lines before {RUN:?} after the spawn; arrivals {:?}",
            lines.len(),
            lines.iter().map(|(at, _)| at).collect::<Vec<_>>()
        );
        assert!(live >= 1, "{engine}: no line while the run went");
        // The lines were numbers of a run that went: requests in each.
        assert!(rows.iter().all(|r| r["ok"].as_u64() > Some(0)), "{engine}");
        // The summary went to stderr, not among the lines.
        assert!(stderr.contains("ok"), "{engine}: {stderr}");
    }
}

/// The closed model and two io_uring threads (their mailboxes merged):
/// the lines still equal the report's intervals, and some came live; a
/// 1 s warmup moves nothing.
#[test]
fn closed_loops_threads_and_warmup_too() {
    for engine in engines() {
        let mut configs: Vec<Vec<&str>> = vec![vec!["--closed", "4"], vec!["--warmup", "1s"]];
        if engine == "uring" {
            configs.push(vec!["--threads", "2"]);
        }
        for extra in configs {
            let (lines, report, _) = live_run(engine, &extra);
            let got: Vec<serde_json::Value> = lines
                .iter()
                .map(|(_, l)| serde_json::from_str(l).expect("a JSON line"))
                .collect();
            assert_eq!(got, all_rows(&report), "{engine} {extra:?}");
            let live = lines.iter().filter(|(at, _)| *at < RUN).count();
            assert!(live >= 1, "{engine} {extra:?}: no line while the run went");
        }
    }
}

/// A slow sink at `--interval 20ms` (issue 33): stdout, a pipe of one page,
/// is not read for 500 ms after the first line, so the live writer blocks
/// and the engine threads compact the intervals it has not taken (they keep
/// 16 in full, closed after 14). Before, the stream stopped there and the
/// rest came at the end from the report; now every interval's line comes,
/// in order, equal to the report's row, the later ones while the run still
/// goes, and a warning counts those that came late. Linux only: the pipe
/// of one page is `F_SETPIPE_SZ`'s.
#[cfg(target_os = "linux")]
#[test]
fn a_late_watcher_loses_no_interval() {
    for engine in engines() {
        let stall = Duration::from_millis(500);
        let (lines, report, stderr) = live_run_with(engine, "20ms", &[], Some(stall));
        let rows = report["intervals"].as_array().expect("intervals");
        assert_eq!(rows.len(), 150, "{engine}");
        let all = all_rows(&report);
        assert_eq!(lines.len(), all.len(), "{engine}");
        for (i, ((_, line), row)) in lines.iter().zip(&all).enumerate() {
            let live: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            assert_eq!(&live, row, "{engine}: interval {i}");
        }
        // The line of [1.5, 1.52) s came live: well before the last ones,
        // written at the end (3 s of schedule; its line is due at about 1.8 s).
        let (mid, end) = (lines[75].0, lines[149].0);
        eprintln!("{engine}: line 75 at {mid:?}, line 149 at {end:?}; {stderr}");
        assert!(
            mid + Duration::from_millis(300) < end,
            "{engine}: line 75 at {mid:?}, the last at {end:?}"
        );
        let warned = stderr
            .lines()
            .find(|l| l.contains("the watcher fell behind"))
            .unwrap_or_else(|| panic!("{engine}: no warning: {stderr}"));
        let late: usize = warned
            .split("behind; ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{engine}: {warned}"));
        assert!((1..150).contains(&late), "{engine}: {warned}");
        assert!(warned.contains("of 150 intervals came late"), "{warned}");
    }
}

/// `--repeat` and `sweep` print their own output on stdout: `-` is refused.
#[test]
fn stdout_lines_are_for_one_run() {
    for args in [
        &[
            "run",
            "http://127.0.0.1:9/",
            "-r",
            "1",
            "-d",
            "1s",
            "--repeat",
            "2",
        ][..],
        &["sweep", "http://127.0.0.1:9/", "--rates", "1,2", "-d", "1s"][..],
    ] {
        let mut all = args.to_vec();
        all.extend(["--out-intervals", "-"]);
        let out = common::metronome(&all);
        assert_eq!(out.status.code(), Some(2), "{all:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("--out-intervals - is for one run"),
            "{stderr}"
        );
    }
}

/// `--format json` with `--out-intervals -`: the lines, then the report.
#[test]
fn json_format_follows_the_lines() {
    let (lines, report, _) = live_run("std", &["--format", "json"]);
    let n = all_rows(&report).len();
    assert!(lines.len() > n, "{lines:?}");
    let rest: String = lines[n..].iter().map(|(_, l)| l.as_str()).collect();
    let printed: serde_json::Value = serde_json::from_str(&rest).expect("the JSON report");
    assert_eq!(printed["intervals"], report["intervals"]);
}

/// A bad `--out-intervals` path is a usage error before the run.
#[test]
fn an_unwritable_path_is_refused() {
    let out = common::metronome(&[
        "run",
        "http://127.0.0.1:9/",
        "--rate",
        "1",
        "--duration",
        "1s",
        "--out-intervals",
        "/nonexistent-dir/x.jsonl",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--out-intervals"), "{stderr}");
}
