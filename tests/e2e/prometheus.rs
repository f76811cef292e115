//! `--prometheus-rw` against a real Prometheus (Debian's `prometheus`
//! package, 2.42; `.ci/run` installs it): the test starts it on loopback
//! with the remote write receiver and native histograms, in its own temp
//! directory on a free port, and queries its HTTP API after a run.
//!
//! - the counters it stores equal the report's counts, at the end of the run
//!   and at an interval's end;
//! - `histogram_quantile(0.99, ...)` over the run's native histogram is the
//!   report's p99 within the documented bound (`prom::native`);
//! - the two shards of a run (`--shard 0/2`, `1/2`, one `--start-at`) share
//!   a `run_id`, and PromQL `sum` over them equals `metronome merge`;
//! - a saved report pushes with `metronome report FILE --prometheus-rw`.
//!
//! Where Prometheus is not installed the tests skip with a line, except
//! under CI (`CI` set), where they fail.

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{metronome, plain, server};
use metronome::prom::native::quantile_range;
use metronome::report::Report;

/// A Prometheus started by a test; stopped and its directory removed on drop.
pub(crate) struct Prometheus {
    child: Child,
    dir: PathBuf,
    port: u16,
}

fn prometheus_binary() -> Option<PathBuf> {
    let candidates = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    candidates
        .into_iter()
        .map(|d| d.join("prometheus"))
        .chain([PathBuf::from("/usr/bin/prometheus")])
        .find(|p| p.is_file())
}

impl Prometheus {
    /// Starts Prometheus, or returns `None` (after a SKIP line) where it is
    /// not installed; under CI a missing Prometheus fails the test.
    pub(crate) fn start(test: &str) -> Option<Prometheus> {
        Prometheus::start_with(test, true)
    }

    /// [`Prometheus::start`], with native histograms on or (as Prometheus
    /// 2.42 is by default) off.
    pub(crate) fn start_with(test: &str, native: bool) -> Option<Prometheus> {
        let Some(bin) = prometheus_binary() else {
            assert!(
                std::env::var_os("CI").is_none(),
                "prometheus is not installed (.ci/run installs Debian's prometheus)"
            );
            eprintln!("SKIP {test}: prometheus is not installed (apt-get install prometheus)");
            return None;
        };
        let dir =
            std::env::temp_dir().join(format!("metronome-prom-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("prometheus.yml");
        std::fs::write(&config, "global:\n  scrape_interval: 1h\n").unwrap();
        // A free port: bound and released (Prometheus binds it just after).
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let mut cmd = Command::new(bin);
        if native {
            cmd.arg("--enable-feature=native-histograms");
        }
        let child = cmd
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--web.enable-remote-write-receiver")
            .arg("--storage.tsdb.retention.size=64MB")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start prometheus");
        let p = Prometheus { child, dir, port };
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok((200, _)) = p.get("/-/ready") {
                return Some(p);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "prometheus not ready in 60 s: {}",
            std::fs::read_to_string(p.dir.join("prometheus.log")).unwrap_or_default()
        );
    }

    pub(crate) fn write_url(&self) -> String {
        format!("http://127.0.0.1:{}/api/v1/write", self.port)
    }

    /// A GET on loopback: status and body.
    fn get(&self, path_and_query: &str) -> std::io::Result<(u16, String)> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port))?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        write!(
            s,
            "GET {path_and_query} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )?;
        let mut reply = String::new();
        s.read_to_string(&mut reply)?;
        let status = reply
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let body = reply.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        // Chunked replies: the JSON is the one line that starts with '{'.
        let body = body
            .lines()
            .find(|l| l.starts_with('{'))
            .unwrap_or(body)
            .to_string();
        Ok((status, body))
    }

    /// An instant query (at `at_ms` when given): the result vector.
    pub(crate) fn query(&self, promql: &str, at_ms: Option<i64>) -> Vec<serde_json::Value> {
        let mut q = format!("/api/v1/query?query={}", encode(promql));
        if let Some(t) = at_ms {
            q.push_str(&format!("&time={}.{:03}", t / 1000, t % 1000));
        }
        let (status, body) = self.get(&q).expect("query prometheus");
        assert_eq!(status, 200, "{promql}: {body}");
        let v: serde_json::Value = serde_json::from_str(&body).expect(&body);
        v["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    /// The single float value of an instant query.
    pub(crate) fn value(&self, promql: &str, at_ms: Option<i64>) -> f64 {
        let r = self.query(promql, at_ms);
        assert_eq!(r.len(), 1, "{promql}: expected one series, got {r:?}");
        r[0]["value"][1]
            .as_str()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{promql}: {r:?}"))
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Percent-encodes a query parameter.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

pub(crate) fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("metronome-promrun-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `metronome ARGS`, which must exit 0 without a push warning.
fn run_ok(args: &[&str]) -> Report {
    let out = metronome(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "metronome {args:?}: {stderr}");
    assert!(
        !stderr.contains("prometheus-rw"),
        "metronome {args:?} warned: {stderr}"
    );
    let i = args.iter().position(|a| *a == "--out").unwrap();
    common::read_report(Path::new(args[i + 1]))
}

/// The p99 of a report's latency, seconds, from its histogram.
pub(crate) fn p99_s(r: &Report) -> f64 {
    r.metrics.latency.to_histogram().quantile(0.99) as f64 * 1e-9
}

pub(crate) fn assert_within_bound(prom: f64, ours: f64, what: &str) {
    let (lo, hi) = quantile_range(ours);
    assert!(
        lo * (1.0 - 1e-9) < prom && prom < hi * (1.0 + 1e-9),
        "{what}: Prometheus {prom} s, metronome {ours} s, bound ({lo}, {hi})"
    );
}

#[test]
fn counters_and_p99_of_a_run_match_its_report() {
    let Some(prom) = Prometheus::start("run") else {
        return;
    };
    let srv = server(plain(Duration::from_millis(1)));
    let dir = scratch("run");
    let out = dir.join("run.json");
    let url = format!("http://{}/", srv.addr());
    let w = prom.write_url();
    let r = run_ok(&[
        "run",
        &url,
        "--quiet",
        "--engine",
        "std",
        "--rate",
        "300",
        "--duration",
        "1s",
        "--interval",
        "250ms",
        "--out",
        out.to_str().unwrap(),
        "--prometheus-rw",
        &w,
        "--prometheus-label",
        "suite=run",
    ]);
    let run_id = metronome::prom::series::run_id_label(&r);
    assert_eq!(
        run_id, r.run_id,
        "without --start-at the report's own run_id"
    );
    let sel = format!("{{run_id=\"{run_id}\",suite=\"run\",shard=\"0/1\",job=\"metronome\"}}");
    let q = &r.requests;
    for (name, want) in [
        ("scheduled", q.scheduled),
        ("sent", q.sent),
        ("ok", q.ok),
        ("errors", q.errors),
        ("dropped", q.dropped),
        ("timeouts", q.timeouts),
    ] {
        let got = prom.value(&format!("metronome_requests_{name}_total{sel}"), None);
        assert_eq!(got, want as f64, "{name}");
    }
    assert!(q.ok >= 100, "a 1 s run at 300/s: {} ok", q.ok);
    // The first interval's counter, at its end.
    let width = r.intervals[1].start_s - r.intervals[0].start_s;
    let t1 = metronome::prom::series::measured_ms(&r, r.intervals[0].start_s + width);
    let sent1 = prom.value(&format!("metronome_requests_sent_total{sel}"), Some(t1));
    assert_eq!(sent1, r.intervals[0].sent.min(q.sent) as f64);
    // The run's native histogram: exact count, sum to the ns, p99 in bound.
    let h = r.metrics.latency.to_histogram();
    let count = prom.value(
        &format!("histogram_count(metronome_latency_seconds{sel})"),
        None,
    );
    assert_eq!(count, h.count() as f64);
    let sum = prom.value(
        &format!("histogram_sum(metronome_latency_seconds{sel})"),
        None,
    );
    assert!((sum - h.sum() as f64 * 1e-9).abs() < 1e-9 * h.count() as f64);
    let p99 = prom.value(
        &format!("histogram_quantile(0.99, sum(metronome_latency_seconds{sel}))"),
        None,
    );
    assert_within_bound(p99, p99_s(&r), "p99");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_shards_sum_to_their_merge_and_a_saved_report_pushes() {
    let Some(prom) = Prometheus::start("shards") else {
        return;
    };
    let srv = server(plain(Duration::from_millis(1)));
    let dir = scratch("shards");
    let url = format!("http://{}/", srv.addr());
    let w = prom.write_url();
    let at = SystemTime::now() + Duration::from_millis(3000);
    let at = at
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
        .to_string();
    let paths: Vec<PathBuf> = (0..2)
        .map(|k| dir.join(format!("shard-{k}.json")))
        .collect();
    let shards: Vec<Report> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|k| {
                let (url, w, at, path) = (&url, &w, &at, &paths[k]);
                s.spawn(move || {
                    let shard = format!("{k}/2");
                    run_ok(&[
                        "run",
                        url,
                        "--quiet",
                        "--engine",
                        "std",
                        "--rate",
                        "400",
                        "--duration",
                        "700ms",
                        "--shard",
                        &shard,
                        "--start-at",
                        at,
                        "--out",
                        path.to_str().unwrap(),
                        "--prometheus-rw",
                        w,
                    ])
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let run_id = metronome::prom::series::run_id_label(&shards[0]);
    assert_eq!(run_id, metronome::prom::series::run_id_label(&shards[1]));
    let merged_path = dir.join("merged.json");
    let out = metronome(&[
        "merge",
        paths[0].to_str().unwrap(),
        paths[1].to_str().unwrap(),
        "--out",
        merged_path.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let merged = common::read_report(&merged_path);
    assert_eq!(metronome::prom::series::run_id_label(&merged), run_id);
    let sel = format!("{{run_id=\"{run_id}\"}}");
    // Two series per counter, one per shard.
    assert_eq!(
        prom.query(&format!("metronome_requests_ok_total{sel}"), None)
            .len(),
        2
    );
    let q = &merged.requests;
    for (name, want) in [("scheduled", q.scheduled), ("sent", q.sent), ("ok", q.ok)] {
        let got = prom.value(&format!("sum(metronome_requests_{name}_total{sel})"), None);
        assert_eq!(got, want as f64, "sum of {name} over the shards");
    }
    let h = merged.metrics.latency.to_histogram();
    let count = prom.value(
        &format!("histogram_count(sum(metronome_latency_seconds{sel}))"),
        None,
    );
    assert_eq!(count, h.count() as f64);
    let p99 = prom.value(
        &format!("histogram_quantile(0.99, sum(metronome_latency_seconds{sel}))"),
        None,
    );
    assert_within_bound(p99, p99_s(&merged), "p99 of the merge");

    // The merged report pushed as a saved report, under its own label.
    let out = metronome(&[
        "report",
        merged_path.to_str().unwrap(),
        "--format",
        "json",
        "--prometheus-rw",
        &w,
        "--prometheus-label",
        "source=saved",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let saved = "{source=\"saved\"}";
    let ok = prom.value(&format!("metronome_requests_ok_total{saved}"), None);
    assert_eq!(ok, q.ok as f64);
    let p99_saved = prom.value(
        &format!("histogram_quantile(0.99, metronome_latency_seconds{saved})"),
        None,
    );
    assert_eq!(
        p99_saved, p99,
        "the merge's histogram equals the shards' sum"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_refused_push_is_a_warning_and_the_run_succeeds() {
    // A port nobody listens on: connection refused, retried, then given up
    // at --prometheus-timeout; the run still exits 0 with its report.
    let srv = server(plain(Duration::from_millis(1)));
    let dir = scratch("refused");
    let out_path = dir.join("r.json");
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://{}/", srv.addr());
    let w = format!("http://127.0.0.1:{port}/api/v1/write");
    let out = metronome(&[
        "run",
        &url,
        "--quiet",
        "--engine",
        "std",
        "--rate",
        "50",
        "--duration",
        "200ms",
        "--out",
        out_path.to_str().unwrap(),
        "--prometheus-rw",
        &w,
        "--prometheus-timeout",
        "300ms",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("warning: --prometheus-rw:") && stderr.contains("not stored"),
        "{stderr}"
    );
    assert!(out_path.is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_prometheus_flags_exit_2_with_the_reason() {
    for (args, says) in [
        (
            vec![
                "run",
                "http://127.0.0.1:1/",
                "--prometheus-rw",
                "https://p/api/v1/write",
            ],
            "https is not supported",
        ),
        (
            vec!["run", "http://127.0.0.1:1/", "--prometheus-rw", "p:9090"],
            "not an http:// URL",
        ),
        (
            vec![
                "run",
                "http://127.0.0.1:1/",
                "--prometheus-rw",
                "http://p/",
                "--prometheus-label",
                "a-b=1",
            ],
            "not a Prometheus label name",
        ),
        (
            vec!["run", "http://127.0.0.1:1/", "--prometheus-label", "a=1"],
            "--prometheus-rw",
        ),
    ] {
        let out = metronome(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}

/// The live path's API (`Run::interval` through `Pusher::push_interval`):
/// three intervals, each with its own latency histogram, arrive in
/// Prometheus as cumulative counters and cumulative native histograms at
/// each interval's end.
#[test]
fn live_intervals_arrive_as_cumulative_series() {
    use metronome::prom::push::{Endpoint, Pusher};
    use metronome::prom::series::{Options, Run};
    use metronome::report::IntervalReport;
    use metronome_core::histogram::Histogram;

    let Some(prom) = Prometheus::start("live") else {
        return;
    };
    let mut run = Run::with_identity("live-1", "0/1", "std", &Options::default());
    let pusher = Pusher::start(Endpoint::parse(&prom.write_url()).unwrap()).unwrap();
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let mut all = Histogram::new();
    let mut ends = Vec::new();
    for i in 0..3u64 {
        let mut h = Histogram::new();
        for k in 1..=100 * (i + 1) {
            h.record(k * 10_000 * (i + 1)); // up to 3 ms, 6 ms, 9 ms
        }
        all.merge(&h);
        let iv: IntervalReport = serde_json::from_value(serde_json::json!({
            "start_s": i as f64, "sent": 100 * (i + 1), "ok": 100 * (i + 1), "errors": 0,
            "unsent": 0, "p50": 0.0, "p99": 0.0, "max": 0.0, "send_lag_p99": 0.0
        }))
        .unwrap();
        let end = now_ms - 3000 + 1000 * i as i64;
        pusher.push_interval(&mut run, &iv, end, 1.0, &[("latency", &h)]);
        ends.push((end, all.count(), all.quantile(0.99)));
    }
    let stats = pusher.finish(Duration::from_secs(10));
    assert_eq!((stats.sent, stats.warning()), (3, None));
    let sel = "{run_id=\"live-1\"}";
    for (end, count, p99_ns) in ends {
        let sent = prom.value(&format!("metronome_requests_sent_total{sel}"), Some(end));
        assert_eq!(sent, count as f64);
        let c = prom.value(
            &format!("histogram_count(metronome_latency_seconds{sel})"),
            Some(end),
        );
        assert_eq!(c, count as f64);
        let p99 = prom.value(
            &format!("histogram_quantile(0.99, metronome_latency_seconds{sel})"),
            Some(end),
        );
        assert_within_bound(p99, p99_ns as f64 * 1e-9, "cumulative p99");
    }
}

/// `report --prometheus-rw` of a sweep pushes each step's report, and of a
/// `--repeat` document each run's, each under its own `run_id` (before: a
/// sweep was refused with advice to push "each step's run report", which
/// sweep never writes; a repeat document could not be read at all).
#[test]
fn a_saved_sweep_and_repeat_push_each_run() {
    let Some(prom) = Prometheus::start("docs") else {
        return;
    };
    let srv = server(plain(Duration::from_millis(1)));
    let dir = scratch("docs");
    let url = format!("http://{}/", srv.addr());
    let w = prom.write_url();
    let sweep = dir.join("sweep.json");
    let repeat = dir.join("repeat.json");
    let common = ["--duration", "500ms", "--quiet", "--engine", "std"];
    let mut a = vec![
        "sweep",
        &url,
        "--rates",
        "20,40",
        "--out",
        sweep.to_str().unwrap(),
    ];
    a.extend(common);
    let out = metronome(&a);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut a = vec![
        "run",
        &url,
        "--rate",
        "30",
        "--repeat",
        "2",
        "--out",
        repeat.to_str().unwrap(),
    ];
    a.extend(common);
    let out = metronome(&a);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sw: metronome::report::sweep::Sweep =
        serde_json::from_str(&std::fs::read_to_string(&sweep).unwrap()).unwrap();
    let rp: metronome::report::repeat::Repeat =
        serde_json::from_str(&std::fs::read_to_string(&repeat).unwrap()).unwrap();
    for (file, source, runs) in [(&sweep, "sweep", &sw.steps), (&repeat, "repeat", &rp.runs)] {
        let label = format!("source={source}");
        let out = metronome(&[
            "report",
            file.to_str().unwrap(),
            "--prometheus-rw",
            &w,
            "--prometheus-label",
            &label,
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{source}: {stderr}");
        assert!(stderr.is_empty(), "{source}: {stderr}");
        for r in runs.iter() {
            let sel = format!("{{source=\"{source}\",run_id=\"{}\"}}", r.run_id);
            let ok = prom.value(&format!("metronome_requests_ok_total{sel}"), None);
            assert_eq!(ok, r.requests.ok as f64, "{source} {}", r.run_id);
        }
        let series = prom.query(
            &format!("metronome_requests_ok_total{{source=\"{source}\"}}"),
            None,
        );
        assert_eq!(series.len(), runs.len(), "{source}: one series per run");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A receiver that is down costs at most `--prometheus-timeout` after the
/// run, and says so while it waits: a closed loopback port (refused at
/// once, retried), and a listener that accepts and never answers (each
/// POST waits for its reply; before, the one under way at the deadline
/// held the run up to its 5 s I/O timeout beyond it, and nothing was
/// printed while the flush waited).
#[test]
fn a_receiver_that_is_down_costs_at_most_the_timeout_and_says_so() {
    let srv = server(plain(Duration::from_millis(1)));
    let url = format!("http://{}/", srv.addr());
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Accepts, reads nothing, answers nothing; connections kept open.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in silent.incoming().take(64) {
            match c {
                Ok(c) => held.push(c),
                Err(_) => return,
            }
        }
    });
    for (what, port) in [("closed", closed), ("silent", silent_port)] {
        let w = format!("http://127.0.0.1:{port}/api/v1/write");
        let t = Instant::now();
        let out = metronome(&[
            "run",
            &url,
            "--quiet",
            "--engine",
            "std",
            "--rate",
            "50",
            "--duration",
            "1500ms",
            "--prometheus-rw",
            &w,
            "--prometheus-timeout",
            "1s",
        ]);
        let took = t.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{what}: {stderr}");
        assert!(
            stderr.contains(
                "metronome: --prometheus-rw: waiting up to 1.000 s (--prometheus-timeout) to push "
            ),
            "{what}: {stderr}"
        );
        assert!(stderr.contains("not stored"), "{what}: {stderr}");
        // The run (1.5 s), its set-up and the flush's 1 s, with room for a
        // loaded machine; the I/O timeout alone is 5 s.
        assert!(
            took < Duration::from_millis(1500 + 1000 + 2000),
            "{what}: {took:?}: {stderr}"
        );
    }
}

/// A Prometheus without native histograms (2.42's default) answers every
/// push that carries one `HTTP 500: native histograms are disabled` and
/// stores nothing of it, not even its counters. The run says so once,
/// naming both remedies, and falls back to classic summaries by itself:
/// the counters and the totals' summaries are stored, live and from a
/// saved report. (Before: every push was retried as if the 500 were
/// transient, and nothing at all was stored.)
#[test]
fn without_native_histograms_the_push_falls_back_to_summaries() {
    let Some(prom) = Prometheus::start_with("nonative", false) else {
        return;
    };
    let srv = server(plain(Duration::from_millis(1)));
    let dir = scratch("nonative");
    let out_path = dir.join("r.json");
    let url = format!("http://{}/", srv.addr());
    let w = prom.write_url();
    let out = metronome(&[
        "run",
        &url,
        "--quiet",
        "--engine",
        "std",
        "--rate",
        "200",
        "--duration",
        "2s",
        "--interval",
        "500ms",
        "--out",
        out_path.to_str().unwrap(),
        "--prometheus-rw",
        &w,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("refused native histograms"))
        .collect();
    assert_eq!(said.len(), 1, "said once: {stderr}");
    for remedy in [
        "HTTP 500: native histograms are disabled",
        "--prometheus-summaries",
        "--enable-feature=native-histograms",
    ] {
        assert!(said[0].contains(remedy), "{remedy}: {}", said[0]);
    }
    assert!(!stderr.contains("not stored"), "{stderr}");
    let r = common::read_report(&out_path);
    let check = |sel: &str| {
        let q = &r.requests;
        for (name, want) in [("scheduled", q.scheduled), ("sent", q.sent), ("ok", q.ok)] {
            let got = prom.value(&format!("metronome_requests_{name}_total{sel}"), None);
            assert_eq!(got, want as f64, "{sel} {name}");
        }
        let m = &r.metrics.latency;
        let count = prom.value(&format!("metronome_latency_seconds_count{sel}"), None);
        assert_eq!(count, m.count as f64, "{sel}");
        let inner = sel.trim_start_matches('{').trim_end_matches('}');
        let p99 = prom.value(
            &format!("metronome_latency_seconds{{{inner},quantile=\"0.99\"}}"),
            None,
        );
        assert_eq!(p99, m.p99 / 1e3, "{sel}: the report's own p99");
    };
    check(&format!("{{run_id=\"{}\"}}", r.run_id));
    // A saved report: its totals carry their summaries as the fallback.
    let out = metronome(&[
        "report",
        out_path.to_str().unwrap(),
        "--format",
        "json",
        "--prometheus-rw",
        &w,
        "--prometheus-label",
        "source=saved",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr.matches("refused native histograms").count(),
        1,
        "{stderr}"
    );
    check("{source=\"saved\"}");
    let _ = std::fs::remove_dir_all(&dir);
}
