//! End-to-end tests of `metronome run https://...` against the embedded
//! server with TLS (`serve --tls`: a fresh self-signed certificate, trusted
//! with `--cacert`) on loopback, for every engine: the scenarios of
//! tests/e2e/run.rs over TLS, the connection set-up in the report, and the
//! one-line errors (untrusted certificate, plain HTTP on an https URL, a
//! handshake that never completes). The hostile servers run over TLS in
//! tests/hostile/tls.rs.

use crate::common;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use common::{count_at_least, engines, metronome, run_json, run_tls_json, server, TestCert};
use metronome::report::Report;
use metronome::serve::{ServeConfig, ServerHandle, TlsServer};

/// The embedded server over TLS with `cert`.
fn tls_server(cfg: ServeConfig, cert: &TestCert) -> ServerHandle {
    server(ServeConfig {
        tls: Some(TlsServer(Arc::clone(&cert.tls.config))),
        ..cfg
    })
}

/// Runs against a fresh TLS server with `cfg` on `engine`.
fn run(cfg: ServeConfig, engine: &str, args: &[&str]) -> Report {
    run_exit(cfg, engine, args, 0)
}

/// [`run`] of a run in which no request succeeds: exit 1.
fn run_code(cfg: ServeConfig, engine: &str, args: &[&str]) -> Report {
    run_exit(cfg, engine, args, 1)
}

fn run_exit(cfg: ServeConfig, engine: &str, args: &[&str], code: i32) -> Report {
    let cert = TestCert::new();
    let srv = tls_server(cfg, &cert);
    let r = run_tls_json(srv.addr(), "/", engine, args, code, &cert.path);
    srv.stop();
    assert!(r.connections.tls, "{engine}");
    assert!(!r.connections.insecure, "{engine}");
    r
}

/// Every connection opened is in the connect and handshake histograms;
/// no handshake failed.
fn assert_setup(r: &Report) {
    let c = &r.connections;
    let opened = r.generator.connections_opened;
    assert_eq!(
        c.connect.as_ref().map(|m| m.count),
        Some(opened),
        "{}: {c:?}",
        r.engine
    );
    assert_eq!(
        c.tls_handshake.as_ref().map(|m| m.count),
        Some(opened),
        "{}: {c:?}",
        r.engine
    );
    assert_eq!(
        c.handshake_failures.values().sum::<u64>(),
        0,
        "{}: {c:?}",
        r.engine
    );
    assert_eq!(
        c.handshake_failures.keys().collect::<Vec<_>>(),
        ["certificate", "protocol", "timeout"]
    );
}

/// The stall over TLS: every request is sent on time and the ones intended
/// inside the stall wait for it (as tests/e2e/run.rs over plain HTTP).
#[test]
fn stall_over_tls() {
    for engine in engines() {
        let cfg = ServeConfig {
            service: Duration::from_millis(1),
            stall_at: Some(Duration::from_millis(300)),
            stall_for: Duration::from_millis(400),
            ..ServeConfig::default()
        };
        // Enough connections pre-opened (handshakes before the clock) for
        // the stall's backlog: a handshake during the run costs the engine
        // thread its crypto (milliseconds in a debug build), which would
        // show as send lag; growth over TLS is tested below.
        let r = run(
            cfg,
            engine,
            &["--rate", "200", "--duration", "1s", "--connections", "100"],
        );
        assert_eq!(r.requests.scheduled, 200, "{engine}");
        assert_eq!(r.requests.ok, 200, "{engine}: {:?}", r.errors);
        assert!(
            r.metrics.send_lag.p99 < 50.0,
            "{engine}: send lag p99 {}",
            r.metrics.send_lag.p99
        );
        // About 40 requests were intended in the first half of the stall;
        // each waited at least its second half.
        let waited = count_at_least(&r.metrics.latency, 200.0);
        assert!(waited >= 30, "{engine}: only {waited} waited >= 200 ms");
        assert!(r.metrics.latency.max >= 400.0 * 0.95, "{engine}");
        assert_setup(&r);
    }
}

/// 429s over TLS are errors by status and enter no histogram.
#[test]
fn status_429_over_tls() {
    for engine in engines() {
        let cfg = ServeConfig {
            service: Duration::ZERO,
            error_every: Some(5),
            ..ServeConfig::default()
        };
        let r = run(cfg, engine, &["--rate", "100", "--duration", "1s"]);
        assert_eq!(r.requests.sent, 100, "{engine}");
        assert_eq!(r.errors.by_status.get("429"), Some(&20), "{engine}");
        assert_eq!(r.requests.ok, 80, "{engine}");
        assert_eq!(r.metrics.latency.count, 80, "{engine}");
        assert_setup(&r);
    }
}

/// SSE over TLS: TTFT, ITL and E2E follow the server's timing; cut streams
/// and error events are errors.
#[test]
fn sse_over_tls() {
    for engine in engines() {
        let cfg = ServeConfig {
            sse: true,
            tokens: 5,
            ttft: Duration::from_millis(60),
            itl: Duration::from_millis(20),
            ..ServeConfig::default()
        };
        let r = run(
            cfg,
            engine,
            &[
                "--openai",
                "--rate",
                "20",
                "--duration",
                "1s",
                "--max-tokens",
                "5",
            ],
        );
        let tol = 15.0;
        assert_eq!(r.requests.ok, 20, "{engine}: {:?}", r.errors);
        let m = &r.metrics;
        assert!(
            m.ttft.min >= 60.0 && m.ttft.p50 <= 60.0 + tol,
            "{engine}: ttft {:?}",
            m.ttft
        );
        assert_eq!(m.itl.count, 20 * 4, "{engine}");
        assert!(
            m.latency.min >= 138.0 && m.latency.p50 <= 140.0 + tol,
            "{engine}: e2e {:?}",
            m.latency
        );

        let cfg = ServeConfig {
            sse: true,
            tokens: 4,
            ttft: Duration::from_millis(5),
            itl: Duration::from_millis(2),
            cut_every: Some(2),
            ..ServeConfig::default()
        };
        let r = run(
            cfg,
            engine,
            &["--openai", "--rate", "20", "--duration", "1s"],
        );
        assert_eq!(r.errors.by_kind.get("stream_cut"), Some(&10), "{engine}");
        assert_eq!(r.requests.ok, 10, "{engine}: {:?}", r.errors);
    }
}

/// A server slower than --timeout gives timeouts over TLS too (and, as no
/// request succeeded, exit 1 with the report).
#[test]
fn timeouts_over_tls() {
    for engine in engines() {
        let cfg = ServeConfig {
            service: Duration::from_secs(2),
            ..ServeConfig::default()
        };
        let r = run_code(
            cfg,
            engine,
            &[
                "--rate",
                "10",
                "--duration",
                "500ms",
                "--timeout",
                "300ms",
                "--connections",
                "2",
            ],
        );
        assert_eq!(r.requests.scheduled, 5, "{engine}");
        assert_eq!(r.requests.timeouts, 5, "{engine}: {:?}", r.errors);
        assert_eq!(r.metrics.latency.count, 0, "{engine}");
    }
}

/// Connections opened during the run (a `Connection: close` on every
/// reply: one replacement per request) resume the session the server
/// issued, and their handshakes are in the histogram.
#[test]
fn replacements_resume_sessions() {
    for engine in engines() {
        let r = run(
            ServeConfig {
                service: Duration::ZERO,
                ..ServeConfig::default()
            },
            engine,
            &[
                "--rate",
                "50",
                "--duration",
                "1s",
                "--connections",
                "2",
                "-H",
                "Connection: close",
            ],
        );
        assert_eq!(r.requests.ok, 50, "{engine}: {:?}", r.errors);
        assert!(
            r.generator.connections_opened >= 50,
            "{engine}: {} connections",
            r.generator.connections_opened
        );
        assert_setup(&r);
        // Every connection after the first few finds a ticket (TLS 1.3
        // tickets arrive after the handshake, read with the first reply).
        assert!(
            r.connections.tls_resumed * 2 >= r.generator.connections_opened,
            "{engine}: {} of {} resumed",
            r.connections.tls_resumed,
            r.generator.connections_opened
        );
    }
}

/// An untrusted certificate: exit 1, one line naming it and the flags.
/// `--insecure` runs, and the report warns.
#[test]
fn untrusted_certificate_exits_1_with_one_line() {
    for engine in engines() {
        let cert = TestCert::new();
        let srv = tls_server(ServeConfig::default(), &cert);
        let url = format!("https://{}/", srv.addr());
        let out = metronome(&[
            "run",
            &url,
            "--engine",
            engine,
            "--rate",
            "10",
            "--duration",
            "200ms",
            "--quiet",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{engine}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{engine}: {stderr}");
        assert!(
            stderr.contains("certificate") && stderr.contains("--cacert"),
            "{engine}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{engine}");

        let out = metronome(&[
            "run",
            &url,
            "--engine",
            engine,
            "--rate",
            "10",
            "--duration",
            "200ms",
            "--quiet",
            "--insecure",
            "--format",
            "json",
        ]);
        srv.stop();
        assert_eq!(out.status.code(), Some(0), "{engine}");
        let r: Report = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(r.requests.ok, 2, "{engine}");
        assert!(r.connections.insecure, "{engine}");
        assert!(
            r.generator
                .warnings
                .iter()
                .any(|w| w.contains("--insecure")),
            "{engine}: {:?}",
            r.generator.warnings
        );
    }
}

/// A plain HTTP server on an https URL: exit 1, one line; a TLS server on
/// an http URL: every request is bad framing with cause `tls` (and, as no
/// request succeeded, exit 1).
#[test]
fn wrong_scheme_is_one_clear_line() {
    for engine in engines() {
        let srv = server(ServeConfig::default());
        let url = format!("https://{}/", srv.addr());
        let out = metronome(&[
            "run",
            &url,
            "--engine",
            engine,
            "--rate",
            "10",
            "--duration",
            "200ms",
            "--quiet",
        ]);
        srv.stop();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{engine}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{engine}: {stderr}");
        assert!(stderr.contains("plain HTTP"), "{engine}: {stderr}");

        let cert = TestCert::new();
        let srv = tls_server(ServeConfig::default(), &cert);
        // No request succeeded: exit 1 (with the report on stdout).
        let r = run_json(
            srv.addr(),
            "/",
            engine,
            &["--rate", "10", "--duration", "500ms", "--connections", "1"],
            1,
        );
        srv.stop();
        assert_eq!(r.requests.sent, 5, "{engine}");
        assert_eq!(
            r.errors.bad_framing_by_cause.get("tls"),
            Some(&5),
            "{engine}: {:?}",
            r.errors
        );
        assert!(!r.connections.tls);
    }
}

/// A server that accepts and never answers the handshake: exit 1 within
/// the connect timeout, one line.
#[test]
fn silent_handshake_is_a_timeout() {
    for engine in engines() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("https://{}/", listener.local_addr().unwrap());
        let started = std::time::Instant::now();
        let out = metronome(&[
            "run",
            &url,
            "--engine",
            engine,
            "--rate",
            "10",
            "--duration",
            "200ms",
            "--timeout",
            "300ms",
            "--quiet",
        ]);
        drop(listener);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{engine}: {stderr}");
        assert!(stderr.contains("did not complete"), "{engine}: {stderr}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{engine}: took {:?}",
            started.elapsed()
        );
    }
}

/// `metronome serve --tls --cert-out FILE` prints its https address and
/// the SHA-256 fingerprint of the certificate it wrote; `run --cacert
/// FILE` trusts it; `serve --tls --cert --key` serves a given certificate.
#[test]
fn serve_tls_binary_prints_fingerprint_and_writes_cert() {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let given = TestCert::new();
    let key = given.path.with_extension("key.pem");
    // The key of `given` is not kept by ServerTls: a fresh pair from rcgen.
    let pair = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let cert_in = given.path.with_extension("cert.pem");
    std::fs::write(&cert_in, pair.cert.pem()).unwrap();
    std::fs::write(&key, pair.signing_key.serialize_pem()).unwrap();
    let out_file = given.path.with_extension("out.pem");
    for own in [false, true] {
        let mut args = vec![
            "serve".to_string(),
            "--tls".into(),
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--service".into(),
            "0ms".into(),
            "--cert-out".into(),
            out_file.to_str().unwrap().into(),
        ];
        if own {
            args.extend([
                "--cert".into(),
                cert_in.to_str().unwrap().into(),
                "--key".into(),
                key.to_str().unwrap().into(),
            ]);
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_metronome"))
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let listening = lines.next().unwrap().unwrap();
        let fingerprint = lines.next().unwrap().unwrap();
        let url = listening
            .strip_prefix("metronome serve listening on ")
            .unwrap_or_else(|| panic!("{listening}"))
            .to_string();
        assert!(url.starts_with("https://127.0.0.1:"), "{url}");
        let written = CertificateDer::from_pem_file(&out_file).unwrap();
        assert_eq!(
            fingerprint,
            format!(
                "certificate sha256 fingerprint {}",
                metronome::tls::fingerprint(&written)
            )
        );
        if own {
            assert_eq!(written.as_ref(), pair.cert.der().as_ref());
        }
        let r = metronome(&[
            "run",
            &format!("{url}/"),
            "--cacert",
            out_file.to_str().unwrap(),
            "--rate",
            "20",
            "--duration",
            "500ms",
            "--format",
            "json",
            "--quiet",
        ]);
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        let _ = child.wait();
        assert_eq!(
            r.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&r.stderr)
        );
        let report: Report = serde_json::from_slice(&r.stdout).unwrap();
        assert_eq!(report.requests.ok, 10);
    }
    for f in [key, cert_in, out_file] {
        let _ = std::fs::remove_file(f);
    }
}
