//! End-to-end tests of `metronome run --grpc SERVICE/METHOD` (unary gRPC
//! over HTTP/2): against the embedded server's gRPC answers (`serve
//! --http2`, `--grpc-status-every`), and against a real gRPC server,
//! grpcio's health service (`tests/grpc_health_server.py`).
//!
//! The grpcio tests skip visibly when `import grpc, grpc_health` fails,
//! except under CI (`CI=true`), where `.ci/run` installs grpcio and a
//! missing package fails.
//!
//! Each test loops over the engines (std and io_uring).

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::{assert_accounting, decode_report, engines, metronome, server};
use metronome::report::Report;
use metronome::serve::{ServeConfig, TlsServer};

const CALL: &str = "grpc.health.v1.Health/Check";

/// A scratch directory for one test's files.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("metronome-grpc-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `bytes` to `dir/name`; its path as a string.
fn file(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_string()
}

/// `metronome run URL --grpc CALL --format json --quiet --engine ENGINE
/// ARGS`: exits with `code`; the report, schema-checked and its accounting
/// asserted.
fn grpc_run(url: &str, engine: &str, args: &[&str], code: i32) -> Report {
    let mut all = vec![
        "run", url, "--grpc", CALL, "--format", "json", "--quiet", "--engine", engine,
    ];
    all.extend_from_slice(args);
    let out = metronome(&all);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(code),
        "metronome {all:?}; stderr: {stderr}"
    );
    let r = decode_report(
        &String::from_utf8_lossy(&out.stdout),
        &format!("metronome {all:?} (stderr: {stderr})"),
    );
    if code == 1 {
        common::assert_exit_matches(&r, out.status.code(), &stderr);
    }
    r
}

/// `by_grpc_status` as (code, count) pairs.
fn by_grpc(r: &Report) -> Vec<(String, u64)> {
    r.errors
        .by_grpc_status
        .as_ref()
        .expect("a --grpc run reports by_grpc_status")
        .iter()
        .map(|(k, &v)| (k.clone(), v))
        .collect()
}

/// Against `serve --http2 --grpc-status-every 4:14`: 200 calls at
/// 200/s, every 4th ends UNAVAILABLE (14) in a trailers-only response:
/// exactly 150 ok and 50 counted by code.
#[test]
fn grpc_status_counted_by_code_against_serve() {
    for engine in engines() {
        let srv = server(ServeConfig {
            http2: true,
            service: Duration::from_micros(200),
            grpc_status_every: Some((4, 14)),
            ..ServeConfig::default()
        });
        let url = format!("http://{}", srv.addr());
        let r = grpc_run(
            &url,
            engine,
            &["--rate", "200", "--duration", "1s", "--connections", "2"],
            0,
        );
        srv.stop();
        let q = &r.requests;
        assert_eq!(
            (q.scheduled, q.sent, q.ok, q.errors),
            (200, 200, 150, 50),
            "{engine}: {:?}",
            r.errors
        );
        assert_eq!(r.errors.by_kind["grpc_status"], 50, "{engine}");
        assert_eq!(by_grpc(&r), [("14".to_string(), 50)], "{engine}");
        assert!(r.errors.by_status.is_empty(), "{engine}");
        assert_eq!(r.metrics.latency.count, 150, "{engine}");
        assert!(
            r.target.ends_with("/grpc.health.v1.Health/Check"),
            "{}",
            r.target
        );
    }
}

/// The text report names the codes; `--error-every` 429s stay HTTP
/// statuses; with no error at all `by_grpc_status` is present and empty,
/// and a plain run has none.
#[test]
fn grpc_text_http_statuses_and_absence() {
    let srv = server(ServeConfig {
        http2: true,
        grpc_status_every: Some((5, 5)),
        error_every: Some(4),
        ..ServeConfig::default()
    });
    let url = format!("http://{}", srv.addr());
    let out = metronome(&[
        "run",
        &url,
        "--grpc",
        CALL,
        "--rate",
        "100",
        "--duration",
        "400ms",
        "--engine",
        "std",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    // 40 calls: the 4th, 8th, ... are 429 (10); of the 5th, 10th, ...
    // (8), those that are not also a 4th (20 and 40 are 429) end
    // NOT_FOUND: 6. The next 40 on the same server (41 to 80) alike.
    assert!(
        text.contains(
            "errors by kind: grpc_status 6, status 10, HTTP 429: 10, grpc-status 5 NOT_FOUND: 6"
        ),
        "{text}"
    );
    let r = grpc_run(&url, "std", &["--rate", "100", "--duration", "400ms"], 0);
    assert_eq!(
        (r.requests.ok, r.requests.errors),
        (24, 16),
        "{:?}",
        r.errors
    );
    assert_eq!(r.errors.by_status.get("429"), Some(&10));
    assert_eq!(by_grpc(&r), [("5".to_string(), 6)]);
    srv.stop();

    let srv = server(ServeConfig {
        http2: true,
        ..ServeConfig::default()
    });
    let url = format!("http://{}", srv.addr());
    let r = grpc_run(&url, "std", &["--rate", "100", "--duration", "200ms"], 0);
    assert_eq!(r.requests.ok, 20);
    assert_eq!(by_grpc(&r), []);
    // The same server over HTTP/2 without --grpc: no such key.
    let r = common::run_url_json(
        &format!("{url}/"),
        "std",
        &[
            "--http2-prior-knowledge",
            "--rate",
            "100",
            "--duration",
            "200ms",
        ],
        0,
    );
    srv.stop();
    assert_eq!(r.requests.ok, 20);
    assert_eq!(r.errors.by_grpc_status, None);
    assert_eq!(r.errors.by_kind["grpc_status"], 0);
}

/// Two shards of a gRPC run merge their codes exactly.
#[test]
fn grpc_shards_merge_by_code() {
    let dir = scratch("merge");
    let srv = server(ServeConfig {
        http2: true,
        grpc_status_every: Some((4, 14)),
        ..ServeConfig::default()
    });
    let url = format!("http://{}", srv.addr());
    let mut parts = Vec::new();
    for k in 0..2 {
        let path = dir.join(format!("{k}.json"));
        let spec = format!("{k}/2");
        let out = metronome(&[
            "run",
            &url,
            "--grpc",
            CALL,
            "--rate",
            "200",
            "--duration",
            "500ms",
            "--shard",
            &spec,
            "--engine",
            "std",
            "--quiet",
            "--out",
            path.to_str().unwrap(),
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        parts.push(common::read_report(&path));
    }
    srv.stop();
    let merged = dir.join("merged.json");
    let out = metronome(&[
        "merge",
        dir.join("0.json").to_str().unwrap(),
        dir.join("1.json").to_str().unwrap(),
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
    let sum: u64 = parts.iter().map(|r| by_grpc(r)[0].1).sum();
    // One server counts every 4th call of both shards: 25 of 100 in all.
    assert_eq!(sum, 25);
    assert_eq!(by_grpc(&m), [("14".to_string(), 25)]);
    assert_eq!((m.requests.ok, m.requests.errors), (75, 25));
    assert_accounting(&m);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--grpc` over TLS: h2 by ALPN against `serve --http2 --tls`.
#[test]
fn grpc_over_tls_alpn() {
    let cert = common::TestCert::new();
    for engine in engines() {
        let srv = server(ServeConfig {
            http2: true,
            tls: Some(TlsServer(Arc::clone(&cert.tls.config))),
            grpc_status_every: Some((10, 8)),
            ..ServeConfig::default()
        });
        let url = format!("https://{}", srv.addr());
        let cacert = cert.path.to_str().unwrap();
        let r = grpc_run(
            &url,
            engine,
            &["--cacert", cacert, "--rate", "100", "--duration", "1s"],
            0,
        );
        srv.stop();
        assert_eq!(
            (r.requests.ok, r.requests.errors),
            (90, 10),
            "{engine}: {:?}",
            r.errors
        );
        assert_eq!(by_grpc(&r), [("8".to_string(), 10)], "{engine}");
    }
}

/// Bad input: one clear line and exit 2, never a panic.
#[test]
fn grpc_usage_errors() {
    let dir = scratch("usage");
    let msg = file(&dir, "m.bin", b"");
    let cases: &[(&[&str], &str)] = &[
        (
            &["http://127.0.0.1:9", "--grpc", "Health"],
            "bad --grpc 'Health': no '/'",
        ),
        (&["http://127.0.0.1:9", "--grpc", "/Check"], "no service"),
        (&["http://127.0.0.1:9", "--grpc", "a.Health/"], "no method"),
        (&["http://127.0.0.1:9", "--grpc", "a b/C"], "protobuf name"),
        (
            &["http://127.0.0.1:9", "--grpc", "a/b/c"],
            "the method must be a name",
        ),
        (&["http://127.0.0.1:9/x", "--grpc", CALL], "without a path"),
        (
            &["http://127.0.0.1:9", "--grpc", CALL, "--openai"],
            "--openai",
        ),
        (
            &["http://127.0.0.1:9", "--grpc", CALL, "--body", "x"],
            "--body",
        ),
        (
            &["http://127.0.0.1:9", "--grpc", CALL, "-X", "GET"],
            "--method",
        ),
        (
            &["http://127.0.0.1:9", "--grpc", CALL, "-H", "te: gzip"],
            "te: trailers",
        ),
        (
            &[
                "http://127.0.0.1:9",
                "--grpc",
                CALL,
                "-H",
                "content-type: text/plain",
            ],
            "application/grpc",
        ),
        (
            &["http://127.0.0.1:9", "--grpc", CALL, "--http2"],
            "for http:// use --http2-prior-knowledge",
        ),
        (
            &[
                "https://127.0.0.1:9",
                "--grpc",
                CALL,
                "--http2-prior-knowledge",
            ],
            "for https:// use --http2",
        ),
        (
            &[
                "http://127.0.0.1:9",
                "--grpc",
                CALL,
                "--body-file",
                "/nonexistent/m.bin",
            ],
            "cannot read --body-file",
        ),
        (
            &["http://127.0.0.1:9", "--grpc", CALL, "--closed", "2"],
            "open loop",
        ),
    ];
    for (args, want) in cases {
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        if !all.contains(&"--body-file") && !all.contains(&"--body") {
            all.extend(["--body-file", msg.as_str()]);
        }
        let out = metronome(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {stderr}");
        assert!(stderr.contains(want), "{all:?}: want '{want}' in: {stderr}");
        assert!(!stderr.contains("panicked"), "{all:?}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// grpcio imports; else a visible skip (a failure under CI).
fn grpcio() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import grpc, grpc_health.v1.health"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI must install grpcio (pip install grpcio==1.85.3 grpcio-health-checking==1.85.1)"
        );
        eprintln!(
            "SKIP: grpcio is not installed (pip install grpcio==1.85.3 \
             grpcio-health-checking==1.85.1)"
        );
    }
    ok
}

/// tests/grpc_health_server.py, running: killed on drop (and it exits by
/// itself when its stdin closes or after 120 s).
struct HealthServer {
    child: Child,
    port: u16,
}

impl HealthServer {
    fn start() -> HealthServer {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/grpc_health_server.py");
        let mut child = Command::new("python3")
            .args([script, "120"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("run python3");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("the server prints its port");
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("the server printed '{line}', not a port"));
        HealthServer { child, port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for HealthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A real gRPC server: grpcio's health service answers Check with an empty
/// HealthCheckRequest (service "") SERVING: every call at a fixed rate is
/// ok, with grpc-status 0 in trailers after a message.
#[test]
fn grpcio_health_check_every_call_ok() {
    if !grpcio() {
        return;
    }
    let dir = scratch("grpcio-ok");
    // An empty HealthCheckRequest encodes to no bytes.
    let empty = file(&dir, "empty.bin", b"");
    for engine in engines() {
        let srv = HealthServer::start();
        let r = grpc_run(
            &srv.url(),
            engine,
            &[
                "--body-file",
                &empty,
                "--rate",
                "200",
                "--duration",
                "2s",
                "--connections",
                "2",
                "--timeout",
                "5s",
            ],
            0,
        );
        let q = &r.requests;
        assert_eq!(
            (q.scheduled, q.sent, q.ok, q.errors, q.dropped, q.unsent),
            (400, 400, 400, 0, 0, 0),
            "{engine}: {:?}",
            r.errors
        );
        assert_eq!(by_grpc(&r), [], "{engine}");
        assert_eq!(r.metrics.latency.count, 400, "{engine}");
        assert_eq!(r.metrics.service_time.count, 400, "{engine}");
        assert_eq!(r.metrics.send_lag.count, 400, "{engine}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Check for a service grpcio's health servicer does not know ends
/// NOT_FOUND (grpc-status 5, trailers-only): every call an error, counted
/// by code; the run exits 1 naming it.
#[test]
fn grpcio_unknown_service_is_not_found() {
    if !grpcio() {
        return;
    }
    let dir = scratch("grpcio-not-found");
    // HealthCheckRequest { service: "no.such.Service" }: field 1, a string.
    let name = b"no.such.Service";
    let mut msg = vec![0x0a, name.len() as u8];
    msg.extend_from_slice(name);
    let unknown = file(&dir, "unknown.bin", &msg);
    for engine in engines() {
        let srv = HealthServer::start();
        let r = grpc_run(
            &srv.url(),
            engine,
            &["--body-file", &unknown, "--rate", "100", "--duration", "1s"],
            1,
        );
        let q = &r.requests;
        assert_eq!(
            (q.sent, q.ok, q.errors),
            (100, 0, 100),
            "{engine}: {:?}",
            r.errors
        );
        assert_eq!(r.errors.by_kind["grpc_status"], 100, "{engine}");
        assert_eq!(by_grpc(&r), [("5".to_string(), 100)], "{engine}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
