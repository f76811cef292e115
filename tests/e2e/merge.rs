//! End-to-end tests of `metronome merge`: real shards run by the binary
//! against the embedded server, then merged. The shards of one run merge to
//! exactly the single run's schedule (constant and Poisson, both engines,
//! engine threads or not); everything that is not the distinct shards of one
//! plan is refused with exit 2 and one line naming the two files and the
//! field; an incomplete set needs `--partial`, which marks the report.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{engines, metronome, plain, server};
use metronome::report::Report;
use metronome::serve::ServerHandle;

/// A fresh directory for one test's reports.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("metronome-merge-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `metronome run URL --quiet --out DIR/NAME --duration 300ms ARGS`
/// (without `--duration 300ms` when `ARGS` sets one) and returns the
/// report's path.
fn shard(srv: &ServerHandle, dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let url = format!("http://{}/", srv.addr());
    shard_at(&url, dir, name, args)
}

fn shard_at(url: &str, dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let path = dir.join(name);
    let mut all = vec!["run", url, "--quiet", "--out", path.to_str().unwrap()];
    if !args.contains(&"--duration") {
        all.extend(["--duration", "300ms"]);
    }
    all.extend_from_slice(args);
    let out = metronome(&all);
    assert_eq!(
        out.status.code(),
        Some(0),
        "metronome {all:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    path
}

fn read(path: &Path) -> Report {
    common::read_report(path)
}

/// `metronome merge FILES... --out DIR/merged.json EXTRA`: the merged report.
fn merge_ok(dir: &Path, files: &[&Path], extra: &[&str]) -> Report {
    let out_path = dir.join("merged.json");
    let mut args = vec!["merge"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    args.extend(["--out", out_path.to_str().unwrap()]);
    args.extend_from_slice(extra);
    let out = metronome(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "merge {files:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    read(&out_path)
}

/// `merge` refuses with exit 2 and one line on stderr that names `a`, `b`
/// (file names; the same twice for a file given twice) and `field`.
fn refused(files: &[&Path], a: &Path, b: &Path, field: &str) {
    let mut args = vec!["merge"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let out = metronome(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{files:?}: {stderr}");
    assert!(
        out.stdout.is_empty(),
        "{files:?}: a refused merge prints no report"
    );
    let line = stderr.trim_end();
    assert!(!line.contains('\n'), "one line: {stderr}");
    for want in [a.to_str().unwrap(), b.to_str().unwrap(), field] {
        assert!(line.contains(want), "{line:?} should name {want:?}");
    }
}

/// Constant shards merge to exactly the single run's schedule, on both
/// engines and across them (shard 0 on one engine, the others on the
/// other): scheduled, sent, latency count, offered rate.
#[test]
fn constant_shards_merge_to_exactly_the_single_run() {
    let dir = scratch("constant");
    let srv = server(plain(Duration::ZERO));
    let engines = engines();
    let other = |e: &str| *engines.iter().find(|&&x| x != e).unwrap_or(&"std");
    for engine in &engines {
        let args = ["--rate", "300", "--engine", engine];
        let whole = read(&shard(&srv, &dir, &format!("{engine}-whole.json"), &args));
        assert_eq!(whole.requests.scheduled, 90, "{engine}");
        let parts: Vec<PathBuf> = (0..3)
            .map(|k| {
                let spec = format!("{k}/3");
                let e = if k == 0 { other(engine) } else { engine };
                let name = format!("{engine}-{k}.json");
                shard(
                    &srv,
                    &dir,
                    &name,
                    &["--rate", "300", "--engine", e, "--shard", &spec],
                )
            })
            .collect();
        for (k, p) in parts.iter().enumerate() {
            assert_eq!(read(p).requests.scheduled, 30, "{engine} shard {k}");
        }
        // Any order.
        let files: Vec<&Path> = parts.iter().rev().map(PathBuf::as_path).collect();
        let m = merge_ok(&dir, &files, &[]);
        assert_eq!(m.requests.scheduled, whole.requests.scheduled, "{engine}");
        assert_eq!(m.requests.sent, whole.requests.sent, "{engine}");
        assert_eq!(m.requests.ok, 90, "{engine}");
        assert_eq!(m.metrics.latency.count, 90, "{engine}");
        assert!((m.offered_rps - 300.0).abs() < 1e-9, "{}", m.offered_rps);
        assert_eq!(m.shard, "merged 3");
        assert!(!m.partial);
        assert_eq!(m.planned_duration_s, 0.3);
        assert!(m.generator.warnings.iter().all(|w| !w.contains("partial")));
    }
    srv.stop();
    std::fs::remove_dir_all(&dir).ok();
}

/// Poisson shards, each split again over engine threads, merge to exactly
/// the single-thread run's scheduled count: the schedule depends on the seed
/// only, not on how the run is split.
#[test]
fn poisson_shards_over_threads_merge_to_the_single_thread_run() {
    let dir = scratch("poisson");
    let srv = server(plain(Duration::ZERO));
    let base = ["--arrival", "poisson", "--rate", "3000", "--seed", "11"];
    for engine in engines() {
        let mut one = base.to_vec();
        one.extend(["--engine", engine, "--threads", "1"]);
        let whole = read(&shard(&srv, &dir, &format!("{engine}-whole.json"), &one));
        // The same seed, split over 2 threads on one machine.
        let mut two = base.to_vec();
        two.extend(["--engine", engine, "--threads", "2"]);
        let split = read(&shard(&srv, &dir, &format!("{engine}-t2.json"), &two));
        assert_eq!(
            split.requests.scheduled, whole.requests.scheduled,
            "{engine}: --threads 2"
        );
        let parts: Vec<PathBuf> = (0..2)
            .map(|k| {
                let spec = format!("{k}/2");
                let mut a = base.to_vec();
                a.extend(["--engine", engine, "--threads", "2", "--shard", &spec]);
                shard(&srv, &dir, &format!("{engine}-{k}.json"), &a)
            })
            .collect();
        let m = merge_ok(&dir, &[&parts[0], &parts[1]], &[]);
        assert_eq!(
            m.requests.scheduled, whole.requests.scheduled,
            "{engine}: 2 shards x 2 threads"
        );
        assert_eq!(m.requests.ok, m.requests.scheduled, "{engine}");
    }
    srv.stop();
    std::fs::remove_dir_all(&dir).ok();
}

/// Runs of different plans are not shards of one run: each differing field
/// is refused, naming the first file, the odd one and the field.
#[test]
fn different_plans_are_refused() {
    let dir = scratch("plans");
    let srv = server(plain(Duration::ZERO));
    let url = format!("http://{}/", srv.addr());
    let engine = engines().last().copied().unwrap();
    // --rate 200 --seed 5 unless `extra` says otherwise.
    let run = |name: &str, shard_spec: &str, extra: &[&str]| {
        let mut a = vec!["--engine", engine, "--shard", shard_spec];
        for (flag, value) in [("--rate", "200"), ("--seed", "5")] {
            if !extra.contains(&flag) {
                a.extend([flag, value]);
            }
        }
        a.extend_from_slice(extra);
        shard_at(&url, &dir, name, &a)
    };
    let base = run("base.json", "0/2", &[]);
    let cases: [(&str, &str, Vec<&str>); 10] = [
        ("target", "other-target.json", vec![]),
        ("model", "closed.json", vec!["--closed", "2"]),
        ("arrival", "poisson.json", vec!["--arrival", "poisson"]),
        ("seed", "seed.json", vec!["--seed", "6"]),
        ("offered rate", "rate.json", vec!["--rate", "100"]),
        ("duration", "duration.json", vec!["--duration", "200ms"]),
        ("warmup", "warmup.json", vec!["--warmup", "100ms"]),
        ("slo", "slo.json", vec!["--slo", "latency=1s"]),
        ("shard count", "third.json", vec![]),
        ("arrival", "burst.json", vec!["--arrival", "burst"]),
    ];
    for (field, name, extra) in cases {
        let other = match name {
            // The same plan against another path of the server.
            "other-target.json" => {
                let u = format!("{url}other");
                let a = [
                    "--engine", engine, "--rate", "200", "--seed", "5", "--shard", "1/2",
                ];
                shard_at(&u, &dir, name, &a)
            }
            // 1/3 beside 0/2: the run's rate agrees (100/s per shard of 2,
            // 66.7/s per shard of 3), the shard count does not.
            "third.json" => run(name, "1/3", &[]),
            _ => run(name, "1/2", &extra),
        };
        refused(&[&base, &other], &base, &other, field);
    }
    // Arrival parameters: burst sizes and gamma burstiness.
    let b5 = run(
        "burst5.json",
        "0/2",
        &["--arrival", "burst", "--burst-size", "5"],
    );
    let b4 = run(
        "burst4.json",
        "1/2",
        &["--arrival", "burst", "--burst-size", "4"],
    );
    refused(&[&b5, &b4], &b5, &b4, "burst size");
    let g1 = run(
        "gamma1.json",
        "0/2",
        &["--arrival", "gamma", "--burstiness", "0.5"],
    );
    let g2 = run(
        "gamma2.json",
        "1/2",
        &["--arrival", "gamma", "--burstiness", "2"],
    );
    refused(&[&g1, &g2], &g1, &g2, "burstiness");
    // A shard of two beside a whole run at the same rate.
    let whole = shard_at(
        &url,
        &dir,
        "whole.json",
        &["--engine", engine, "--rate", "200", "--seed", "5"],
    );
    refused(&[&base, &whole], &base, &whole, "shard count");
    srv.stop();
    std::fs::remove_dir_all(&dir).ok();
}

/// The same shard twice (one file given twice, or two runs of the same
/// shard) would double the counts: refused.
#[test]
fn duplicate_shards_are_refused() {
    let dir = scratch("duplicate");
    let srv = server(plain(Duration::ZERO));
    let args = |k: &'static str| ["--rate", "200", "--engine", "std", "--shard", k];
    let a = shard(&srv, &dir, "a.json", &args("0/2"));
    let again = shard(&srv, &dir, "again.json", &args("0/2"));
    let b = shard(&srv, &dir, "b.json", &args("1/2"));
    srv.stop();
    refused(&[&a, &b, &a], &a, &a, "both are shard 0/2");
    refused(&[&a, &b, &again], &a, &again, "both are shard 0/2");
    // The complete set merges.
    let m = merge_ok(&dir, &[&a, &b], &[]);
    assert_eq!(m.requests.scheduled, 60);
    std::fs::remove_dir_all(&dir).ok();
}

/// One of two shards is an incomplete run: refused unless `--partial`,
/// which merges what is there and marks it; a merged report is not a shard.
#[test]
fn incomplete_sets_need_partial() {
    let dir = scratch("partial");
    let srv = server(plain(Duration::ZERO));
    let args = |k: &'static str| ["--rate", "300", "--engine", "std", "--shard", k];
    let s0 = shard(&srv, &dir, "s0.json", &args("0/3"));
    let s2 = shard(&srv, &dir, "s2.json", &args("2/3"));
    let s1 = shard(&srv, &dir, "s1.json", &args("1/3"));
    srv.stop();

    for files in [vec![&s0], vec![&s0, &s2]] {
        let mut a = vec!["merge"];
        a.extend(files.iter().map(|f| f.to_str().unwrap()));
        let out = metronome(&a);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        let line = stderr.trim_end();
        assert!(!line.contains('\n'), "{stderr}");
        assert!(
            line.contains("shard 1/3") && line.contains("missing") && line.contains("--partial"),
            "{line}"
        );
    }

    let m = merge_ok(&dir, &[&s0, &s2], &["--partial"]);
    assert!(m.partial);
    assert_eq!(m.shard, "merged 0,2 of 3");
    assert_eq!(m.requests.scheduled, 60);
    assert!(
        m.generator
            .warnings
            .iter()
            .any(|w| w.contains("partial merge") && w.contains("1 of 3")),
        "{:?}",
        m.generator.warnings
    );
    // The text form says so too.
    let out = metronome(&[
        "merge",
        s0.to_str().unwrap(),
        s2.to_str().unwrap(),
        "--partial",
        "--format",
        "text",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("partial (merged 0,2 of 3)"), "{text}");
    // --partial on a complete set changes nothing.
    let full = merge_ok(&dir, &[&s0, &s1, &s2], &["--partial"]);
    assert!(!full.partial);
    assert_eq!(full.shard, "merged 3");
    assert_eq!(full.requests.scheduled, 90);

    // A merged report cannot be merged again as if it were a shard.
    let merged = dir.join("merged-copy.json");
    std::fs::copy(dir.join("merged.json"), &merged).unwrap();
    refused(&[&s0, &merged], &merged, &merged, "already a merged report");
    std::fs::remove_dir_all(&dir).ok();
}
