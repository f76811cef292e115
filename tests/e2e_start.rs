//! End-to-end tests of a common start (`run --start-at`): shards given the
//! same instant start their schedules' clocks at it, record it, and measure
//! how late they really began; an instant already past is refused; `merge`
//! warns when shards began more than `--max-skew` apart.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{engines, metronome, plain, server};
use metronome::report::Report;

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("metronome-start-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn read(path: &Path) -> Report {
    common::read_report(path)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Two shards started at once as separate processes with the same
/// `--start-at` 1.5 s ahead: each records exactly the requested instant as
/// its schedule's zero (report and hlog), each began pacing within 50 ms of
/// it (a loaded 2-core machine; microseconds when idle), so within 50 ms of
/// each other, and `merge` lists both starts.
#[test]
fn shards_given_one_start_at_start_together() {
    let dir = scratch("together");
    let srv = server(plain(Duration::ZERO));
    let url = format!("http://{}/", srv.addr());
    for engine in engines() {
        let at_ms = now_ms() + 1500;
        let at = at_ms.to_string();
        let children: Vec<(PathBuf, PathBuf, std::process::Child)> = (0..2)
            .map(|k| {
                let out = dir.join(format!("{engine}-{k}.json"));
                let hlog = dir.join(format!("{engine}-{k}.hlog"));
                let child = Command::new(env!("CARGO_BIN_EXE_metronome"))
                    .args(["run", &url, "--quiet", "--engine", engine])
                    .args(["--rate", "200", "--duration", "300ms"])
                    .args(["--shard", &format!("{k}/2"), "--start-at", &at])
                    .arg("--out")
                    .arg(&out)
                    .arg("--hlog")
                    .arg(&hlog)
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                (out, hlog, child)
            })
            .collect();
        let mut files = Vec::new();
        for (out, hlog, child) in children {
            let o = child.wait_with_output().unwrap();
            assert_eq!(
                o.status.code(),
                Some(0),
                "{engine}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let r = read(&out);
            let want_ns = at_ms * 1_000_000;
            assert_eq!(
                r.start_unix_ns, want_ns,
                "{engine}: the zero is the instant"
            );
            assert_eq!(r.start_at.as_deref(), Some(r.start_time.as_str()));
            assert_eq!(
                r.start_time,
                metronome::units::rfc3339_ns(want_ns),
                "{engine}"
            );
            assert!(
                r.start_offset_ns < 50_000_000,
                "{engine}: began {} ns after the instant",
                r.start_offset_ns
            );
            assert_eq!(r.requests.scheduled, 30, "{engine}");
            let log = std::fs::read_to_string(&hlog).unwrap();
            let secs = format!("{}.{:03}000", at_ms / 1000, at_ms % 1000);
            assert!(
                log.contains(&format!("#[StartTime: {secs} (seconds since epoch)]")),
                "{engine}: {log}"
            );
            assert!(log.contains(&format!("#[BaseTime: {secs} (seconds since epoch)]")));
            files.push(out);
        }
        let (a, b) = (read(&files[0]), read(&files[1]));
        let began = |r: &Report| r.start_unix_ns + r.start_offset_ns;
        assert!(
            began(&a).abs_diff(began(&b)) < 50_000_000,
            "{engine}: {} vs {}",
            began(&a),
            began(&b)
        );
        let merged_path = dir.join(format!("{engine}-merged.json"));
        let out = metronome(&[
            "merge",
            files[0].to_str().unwrap(),
            files[1].to_str().unwrap(),
            "--max-skew",
            "100ms",
            "--out",
            merged_path.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0));
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("apart"),
            "no skew warning within 100ms"
        );
        let m = read(&merged_path);
        assert_eq!(m.start_unix_ns, at_ms * 1_000_000);
        assert_eq!(m.shard_starts.len(), 2);
        assert_eq!(m.shard_starts[0].shard, "0/2");
        assert_eq!(m.shard_starts[1].start_offset_ns, b.start_offset_ns);
        assert_eq!(
            m.start_offset_ns,
            a.start_offset_ns.max(b.start_offset_ns),
            "the merged offset is the last shard's"
        );
    }
}

/// An instant already past is refused before anything is sent: exit 2,
/// one line naming the flag and how far in the past it is.
#[test]
fn a_start_at_in_the_past_is_refused() {
    let srv = server(plain(Duration::ZERO));
    let url = format!("http://{}/", srv.addr());
    for at in ["2020-01-01T00:00:00Z", &(now_ms() - 1000).to_string()] {
        let out = metronome(&["run", &url, "--quiet", "--start-at", at]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("--start-at") && stderr.contains("in the past"),
            "{stderr}"
        );
        assert!(out.stdout.is_empty());
    }
    let out = metronome(&["run", &url, "--quiet", "--start-at", "next tuesday"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("RFC 3339"));
    assert_eq!(srv.served(), 0, "nothing was sent");
}

/// `merge` warns (stderr and the merged report's warnings) when shards
/// began more than `--max-skew` apart, saying by how much and naming the
/// first and last files; within the bound it says nothing.
#[test]
fn merge_warns_when_shards_began_apart() {
    let dir = scratch("skew");
    let srv = server(plain(Duration::ZERO));
    let url = format!("http://{}/", srv.addr());
    let mut paths = Vec::new();
    for k in 0..3 {
        let path = dir.join(format!("shard-{k}.json"));
        let out = metronome(&[
            "run",
            &url,
            "--quiet",
            "--engine",
            "std",
            "--rate",
            "300",
            "--duration",
            "100ms",
            "--shard",
            &format!("{k}/3"),
            "--out",
            path.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0));
        // The same zero; offsets of 0.1 ms, 2.6 ms and 0.6 ms.
        let mut r = read(&path);
        r.start_unix_ns = 1_796_119_200_000_000_000;
        r.start_offset_ns = [100_000, 2_600_000, 600_000][k];
        std::fs::write(&path, serde_json::to_string_pretty(&r).unwrap()).unwrap();
        paths.push(path);
    }
    let files: Vec<&str> = paths.iter().map(|p| p.to_str().unwrap()).collect();
    let merged = dir.join("merged.json");
    let mut args = vec!["merge"];
    args.extend(&files);
    args.extend(["--out", merged.to_str().unwrap()]);
    let out = metronome(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "a warning, not a refusal");
    let line = stderr.trim_end();
    assert_eq!(line.lines().count(), 1, "{stderr}");
    for want in [
        "shards began 2.500 ms apart",
        "--max-skew 1.00ms",
        files[1],
        files[0],
        "2026-12-01T10:00:00.002600000Z",
        "2026-12-01T10:00:00.000100000Z",
    ] {
        assert!(line.contains(want), "{line} should say {want}");
    }
    let m = read(&merged);
    assert!(
        m.generator
            .warnings
            .iter()
            .any(|w| w.starts_with("shards began 2.500 ms apart")),
        "{:?}",
        m.generator.warnings
    );
    assert_eq!(m.start_offset_ns, 2_600_000);
    let offsets: Vec<u64> = m.shard_starts.iter().map(|s| s.start_offset_ns).collect();
    assert_eq!(offsets, [100_000, 2_600_000, 600_000]);
    // Within --max-skew: no warning.
    args.extend(["--max-skew", "2.5ms"]);
    let out = metronome(&args);
    assert_eq!(out.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("apart"));
    assert!(!read(&merged)
        .generator
        .warnings
        .iter()
        .any(|w| w.contains("apart")));
}

/// Ctrl-C while waiting for a far `--start-at` stops the run at once
/// (within the 20 ms slices of the wait, bounded here by 2 s on a loaded
/// machine): exit 130, an interrupted report with nothing scheduled.
#[test]
fn a_signal_before_the_start_at_stops_the_wait() {
    let srv = server(plain(Duration::ZERO));
    let url = format!("http://{}/", srv.addr());
    let mut warmed = 0;
    for engine in engines() {
        let at = (now_ms() + 60_000).to_string();
        let child = Command::new(env!("CARGO_BIN_EXE_metronome"))
            .args([
                "run", &url, "--quiet", "--engine", engine, "--format", "json",
            ])
            .args(["--start-at", &at])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(700));
        let sent = std::time::Instant::now();
        // SAFETY: `child.id()` is the pid of the child this test spawned and
        // has not reaped; SIGINT is a valid signal number.
        let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        assert_eq!(rc, 0);
        let out = child.wait_with_output().unwrap();
        let took = sent.elapsed();
        assert_eq!(out.status.code(), Some(130), "{engine}");
        assert!(took < Duration::from_secs(2), "{engine}: took {took:?}");
        let r = common::decode_report(&String::from_utf8_lossy(&out.stdout), engine);
        assert!(r.interrupted, "{engine}");
        assert_eq!(r.requests.scheduled, 0, "{engine}");
        assert_eq!(r.start_unix_ns, at.parse::<u64>().unwrap() * 1_000_000);
        // The connections were warmed before the wait (one request each).
        let warm = r.connections.warm_up.as_ref().expect("a warm-up");
        assert_eq!((warm.requests, warm.answered), (16, 16), "{engine}");
        warmed += warm.requests;
    }
    // Only the warm-up requests reached the server: none of the run's.
    assert_eq!(srv.served(), warmed);
}
