//! `--out-requests FILE|-` (issue 33, docs/requests-out.md): one JSON line
//! per measured request, after a header line. On both engines the lines
//! hold exactly the report's requests: one per scheduled request, the
//! intended times exactly the constant schedule's, as many successes and
//! errors of each kind as the report counts, and a stream run's tokens
//! summing to the report's.

use crate::common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use common::{engines, metronome, plain, run_url_json, server};
use metronome::report::{OutRequests, Report};
use metronome::serve::ServeConfig;
use serde_json::Value;

/// A fresh path in the temporary directory.
fn temp(tag: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    std::env::temp_dir().join(format!(
        "metronome-outreq-{}-{tag}-{}.jsonl",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ))
}

/// The header and the request lines of `text`.
fn parse(text: &str) -> (Value, Vec<Value>) {
    let mut lines = text.lines().map(|l| {
        serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("a JSON line: {e}: {l}"))
    });
    let header = lines.next().expect("a header line");
    (header, lines.collect())
}

/// Runs `metronome run URL --out-requests FILE ARGS` on `engine`, exiting
/// `code`; returns the report and the file's header and lines.
fn run(url: &str, engine: &str, args: &[&str], code: i32) -> (Report, Value, Vec<Value>) {
    run_then(engine, args, |all| run_url_json(url, engine, all, code))
}

/// As [`run`], with the report from `report` given the full arguments.
fn run_then(
    engine: &str,
    args: &[&str],
    report: impl FnOnce(&[&str]) -> Report,
) -> (Report, Value, Vec<Value>) {
    let path = temp(engine);
    let mut all = vec!["--out-requests", path.to_str().unwrap()];
    all.extend_from_slice(args);
    let report = report(&all);
    let text = std::fs::read_to_string(&path).expect("the --out-requests file");
    let _ = std::fs::remove_file(&path);
    let (header, lines) = parse(&text);
    assert_eq!(header["schema"], "metronome.requests/v1");
    assert_eq!(header["run_id"], report.run_id.as_str(), "{engine}");
    assert_eq!(header["start_unix_ns"], report.start_unix_ns, "{engine}");
    (report, header, lines)
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("an integer: {v}"))
}

/// Lines counted by a key's value.
fn count_by(lines: &[Value], key: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for l in lines {
        if let Some(v) = l[key].as_str() {
            *m.entry(v.to_string()).or_insert(0) += 1;
        }
    }
    m
}

/// A run with some 429s: one line per scheduled request, intended at
/// exactly i * 5 ms (200 req/s, constant); the successes are the report's
/// `ok`, each a 200 with its first byte between send and end; the errors
/// are the report's by kind and by status.
#[test]
fn every_request_has_its_line_and_the_counts_are_the_reports() {
    let srv = server(ServeConfig {
        error_every: Some(7),
        ..plain(Duration::from_micros(200))
    });
    let url = format!("http://{}/", srv.addr());
    for engine in engines() {
        let args = ["--rate", "200", "--duration", "2s"];
        let (r, _, lines) = run(&url, engine, &args, 0);
        let ctx = format!("{engine}: {:?}", r.errors);
        let q = &r.requests;
        assert_eq!(q.scheduled, 400, "{ctx}");
        assert_eq!(lines.len() as u64, q.scheduled, "{ctx}");
        assert_eq!(
            r.generator.out_requests,
            Some(OutRequests {
                written: 400,
                dropped: 0
            }),
            "{ctx}"
        );
        let mut intended: Vec<u64> = lines.iter().map(|l| u(&l["intended_ns"])).collect();
        intended.sort_unstable();
        let want: Vec<u64> = (0..400).map(|i| i * 5_000_000).collect();
        assert_eq!(intended, want, "{ctx}");

        let results = count_by(&lines, "result");
        assert_eq!(results.get("ok").copied().unwrap_or(0), q.ok, "{ctx}");
        assert_eq!(
            results.get("error").copied().unwrap_or(0),
            q.errors,
            "{ctx}"
        );
        assert_eq!(
            results.get("dropped").copied().unwrap_or(0),
            q.dropped,
            "{ctx}"
        );
        assert_eq!(
            results.get("unsent").copied().unwrap_or(0),
            q.unsent,
            "{ctx}"
        );
        assert!(q.errors >= 400 / 7 - 1, "{ctx}: every 7th is a 429");
        let errors: Vec<Value> = lines
            .iter()
            .filter(|l| l["result"] == "error")
            .cloned()
            .collect();
        let by_kind: BTreeMap<String, u64> = r
            .errors
            .by_kind
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(k, &n)| (k.clone(), n))
            .collect();
        assert_eq!(count_by(&errors, "kind"), by_kind, "{ctx}");
        let mut by_status: BTreeMap<String, u64> = BTreeMap::new();
        for l in &errors {
            if let Some(s) = l["status"].as_u64() {
                *by_status.entry(s.to_string()).or_insert(0) += 1;
            }
        }
        let want: BTreeMap<String, u64> = r
            .errors
            .by_status
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(k, &n)| (k.clone(), n))
            .collect();
        assert_eq!(by_status, want, "{ctx}");
        for l in &lines {
            if l["result"] != "ok" {
                continue;
            }
            assert_eq!(l["status"], 200, "{ctx}: {l}");
            assert_eq!(l["request"], 0, "{ctx}: {l}");
            let (i, s, f, e) = (
                u(&l["intended_ns"]),
                u(&l["sent_ns"]),
                u(&l["first_byte_ns"]),
                u(&l["end_ns"]),
            );
            assert!(i <= s && s <= f && f <= e, "{ctx}: {l}");
        }
    }
}

/// Drops above `--max-in-flight` (the std engine's pacer records them, the
/// io_uring threads theirs) and timeouts: each has its line, counted as the
/// report counts them; a drop has neither send nor end.
#[test]
fn drops_and_timeouts_have_their_lines() {
    // Each request holds the FIFO server 100 ms: at 50/s the queue grows.
    let srv = server(plain(Duration::from_millis(100)));
    let url = format!("http://{}/", srv.addr());
    for engine in engines() {
        let args = [
            "--rate",
            "50",
            "--duration",
            "1s",
            "--max-in-flight",
            "5",
            "--timeout",
            "250ms",
        ];
        let (r, _, lines) = run_then(engine, &args, |all| {
            common::run_url_json_checked(&url, engine, all)
        });
        let q = &r.requests;
        let ctx = format!("{engine}: {q:?} {:?}", r.errors.by_kind);
        assert_eq!(lines.len() as u64, q.scheduled, "{ctx}");
        assert!(q.dropped > 0 && r.errors.by_kind["timeout"] > 0, "{ctx}");
        let results = count_by(&lines, "result");
        for (key, want) in [("ok", q.ok), ("error", q.errors), ("dropped", q.dropped)] {
            assert_eq!(results.get(key).copied().unwrap_or(0), want, "{ctx}: {key}");
        }
        let errors: Vec<Value> = lines
            .iter()
            .filter(|l| l["result"] == "error")
            .cloned()
            .collect();
        let kinds = count_by(&errors, "kind");
        for (kind, &n) in &r.errors.by_kind {
            assert_eq!(kinds.get(kind).copied().unwrap_or(0), n, "{ctx}: {kind}");
        }
        for l in lines.iter().filter(|l| l["result"] == "dropped") {
            assert_eq!(
                (&l["sent_ns"], &l["end_ns"]),
                (&Value::Null, &Value::Null),
                "{l}"
            );
        }
    }
}

/// A stream run: every line a success with its tokens, which sum to the
/// report's output tokens; the first token comes between the first byte
/// and the end.
#[test]
fn a_stream_runs_tokens_sum_to_the_reports() {
    let srv = server(ServeConfig {
        sse: true,
        tokens: 5,
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        ..ServeConfig::default()
    });
    let url = format!("http://{}/", srv.addr());
    for engine in engines() {
        let args = ["--openai", "--rate", "20", "--duration", "1s"];
        let (r, _, lines) = run(&url, engine, &args, 0);
        let ctx = format!("{engine}: {:?}", r.errors);
        assert_eq!((r.requests.scheduled, r.requests.ok), (20, 20), "{ctx}");
        assert_eq!(lines.len(), 20, "{ctx}");
        let w = r.workload.as_ref().expect("an --openai run has a workload");
        let out: u64 = lines.iter().map(|l| u(&l["output_tokens"])).sum();
        let input: u64 = lines.iter().map(|l| u(&l["input_tokens"])).sum();
        assert_eq!(out, w.output_tokens.total, "{ctx}");
        assert_eq!(out, 100, "{ctx}");
        assert_eq!(input, w.input_tokens.total, "{ctx}");
        for l in &lines {
            let (f, t, e) = (
                u(&l["first_byte_ns"]),
                u(&l["first_token_ns"]),
                u(&l["end_ns"]),
            );
            assert!(f <= t && t <= e, "{ctx}: {l}");
        }
    }
}

/// HTTP/2 (h2c) on both engines: a line per request, each success with
/// its status and its head's arrival between send and end.
#[test]
fn h2_lines_have_their_status_and_head() {
    let srv = server(ServeConfig {
        http2: true,
        ..plain(Duration::from_micros(200))
    });
    let url = format!("http://{}/", srv.addr());
    for engine in engines() {
        let args = [
            "--http2-prior-knowledge",
            "--rate",
            "200",
            "--duration",
            "1s",
        ];
        let (r, _, lines) = run(&url, engine, &args, 0);
        let ctx = format!("{engine}: {:?}", r.errors);
        assert_eq!((r.requests.scheduled, r.requests.ok), (200, 200), "{ctx}");
        assert_eq!(lines.len(), 200, "{ctx}");
        for l in &lines {
            assert_eq!(
                (&l["result"], &l["status"]),
                (&"ok".into(), &200.into()),
                "{ctx}: {l}"
            );
            let (s, f, e) = (u(&l["sent_ns"]), u(&l["first_byte_ns"]), u(&l["end_ns"]));
            assert!(s <= f && f <= e, "{ctx}: {l}");
        }
    }
}

/// A target that refuses every connection: the run still writes a line
/// per scheduled request, each never sent for want of a connection.
#[test]
fn a_refused_target_gets_its_unsent_lines() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/");
    for engine in engines() {
        let args = ["--rate", "50", "--duration", "1s"];
        let (r, _, lines) = run(&url, engine, &args, 1);
        assert_eq!(r.requests.scheduled, 50, "{engine}");
        assert_eq!(r.requests.unsent, 50, "{engine}");
        assert_eq!(lines.len(), 50, "{engine}");
        for l in &lines {
            assert_eq!(
                (&l["result"], &l["kind"]),
                (&"unsent".into(), &"connect".into())
            );
            assert_eq!(l["sent_ns"], Value::Null, "{engine}: {l}");
        }
    }
}

/// `-` writes the lines to stdout and the summary to stderr; a path that
/// cannot be created, or both line outputs on stdout, fail before the run
/// (exit 2).
#[test]
fn stdout_and_bad_paths() {
    let srv = server(plain(Duration::ZERO));
    let url = format!("http://{}/", srv.addr());
    let out = metronome(&[
        "run",
        &url,
        "--engine",
        "std",
        "--rate",
        "50",
        "--duration",
        "1s",
        "--quiet",
        "--out-requests",
        "-",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let (header, lines) = parse(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(header["schema"], "metronome.requests/v1");
    assert_eq!(lines.len(), 50);
    assert!(
        stderr.contains("requests"),
        "the summary on stderr: {stderr}"
    );

    let bad = metronome(&[
        "run",
        &url,
        "--rate",
        "50",
        "--duration",
        "1s",
        "--out-requests",
        "/nonexistent-dir/x.jsonl",
    ]);
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--out-requests"), "{stderr}");
    let both = metronome(&[
        "run",
        &url,
        "--rate",
        "50",
        "--duration",
        "1s",
        "--out-requests",
        "-",
        "--out-intervals",
        "-",
    ]);
    let stderr = String::from_utf8_lossy(&both.stderr);
    assert_eq!(both.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot both write to stdout"), "{stderr}");
    let repeated = metronome(&[
        "run",
        &url,
        "--rate",
        "50",
        "--duration",
        "1s",
        "--repeat",
        "2",
        "--out-requests",
        "-",
    ]);
    let stderr = String::from_utf8_lossy(&repeated.stderr);
    assert_eq!(repeated.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--out-requests - is for one run"),
        "{stderr}"
    );
}

/// A file that takes no line (`/dev/full`: it opens, every write fails)
/// is a failed output, as `--out` is: exit 1, the counts true (`written`
/// 0, every request `dropped`: without its line), the warning among the
/// report's warnings and in the one failure line; the `--out` report is
/// still written. (Before: exit 0 and `written: 1`, the warning only on
/// stderr.)
#[test]
fn a_file_that_fails_is_a_failed_output() {
    if !std::path::Path::new("/dev/full").exists() {
        eprintln!("SKIP: no /dev/full here");
        return;
    }
    let srv = server(plain(Duration::ZERO));
    let url = format!("http://{}/", srv.addr());
    let out_path = temp("full-report");
    let out = metronome(&[
        "run",
        &url,
        "--engine",
        "std",
        "--rate",
        "50",
        "--duration",
        "1s",
        "--quiet",
        "--out-requests",
        "/dev/full",
        "--out",
        out_path.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let r = common::read_report(&out_path);
    let _ = std::fs::remove_file(&out_path);
    assert_eq!(r.requests.ok, 50);
    assert_eq!(
        r.generator.out_requests,
        Some(OutRequests {
            written: 0,
            dropped: 50
        })
    );
    let warned: Vec<&String> = r
        .generator
        .warnings
        .iter()
        .filter(|w| w.starts_with("--out-requests: cannot write /dev/full"))
        .collect();
    assert_eq!(warned.len(), 1, "{:?}", r.generator.warnings);
    assert!(
        warned[0].contains("0 lines written, 50 requests without one"),
        "{}",
        warned[0]
    );
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.starts_with("metronome: --out-requests: cannot write /dev/full"))
            .count(),
        1,
        "{stderr}"
    );
    assert!(
        !stderr.contains("the JSON report is in"),
        "--out holds it: {stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("warning: --out-requests: cannot write"));
}
