//! End-to-end tests of `metronome run --http2-prior-knowledge` (h2c) on
//! the std engine against the embedded server's HTTP/2 (`serve --http2`).
//! Real time: assertions are exact counts and loose bounds.

mod common;

use std::time::Duration;

use common::{assert_accounting, engines, metronome, run_json, server};
use metronome::serve::ServeConfig;

fn h2_server(cfg: ServeConfig) -> metronome::serve::ServerHandle {
    server(ServeConfig { http2: true, ..cfg })
}

/// At a constant rate every request is sent, answered and counted once.
#[test]
fn h2c_counts_exact_at_constant_rate() {
    for engine in engines() {
        eprintln!("-- engine {engine}");
        let srv = h2_server(ServeConfig {
            service: Duration::from_micros(200),
            ..ServeConfig::default()
        });
        let r = run_json(
            srv.addr(),
            "/",
            engine,
            &[
                "--http2-prior-knowledge",
                "--rate",
                "400",
                "--duration",
                "1s",
                "--connections",
                "2",
            ],
            0,
        );
        srv.stop();
        assert_eq!(r.requests.scheduled, 400);
        assert_eq!(r.requests.sent, 400);
        assert_eq!(r.requests.ok, 400, "{:?}", r.errors);
        assert_eq!(r.requests.errors, 0);
        assert_eq!(r.metrics.latency.count, 400);
        assert_accounting(&r);
    }
}

/// One connection carries many streams at once: against a server slower
/// than the rate (one FIFO server, 20 ms a request, 100 req/s offered),
/// every request still leaves on time on the single connection and none is
/// dropped; with `--max-streams 1` the same run queues at the client.
#[test]
fn h2c_many_streams_on_one_connection() {
    for engine in engines() {
        eprintln!("-- engine {engine}");
        let cfg = ServeConfig {
            service: Duration::from_millis(20),
            ..ServeConfig::default()
        };
        let args = |streams: Option<&'static str>| {
            let mut a = vec![
                "--http2-prior-knowledge",
                "--rate",
                "100",
                "--duration",
                "1s",
                "--connections",
                "1",
                "--max-connections",
                "1",
                "--timeout",
                "10s",
            ];
            if let Some(s) = streams {
                a.extend(["--max-streams", s]);
            }
            a
        };
        let srv = h2_server(cfg.clone());
        let r = run_json(srv.addr(), "/", engine, &args(None), 0);
        srv.stop();
        assert_eq!(r.requests.sent, 100);
        assert_eq!(r.requests.ok, 100, "{:?}", r.errors);
        assert_eq!(r.requests.dropped, 0);
        assert_eq!(r.generator.peak_connections, 1);
        // Queued at the server, not at the client: sent on time...
        assert!(
            r.metrics.send_lag.p99 < 10.0,
            "send lag {:?}",
            r.metrics.send_lag
        );
        // ... and waiting there: the last ones waited about 1 s (100 x 20 ms
        // of service for 1 s of arrivals).
        assert!(
            r.metrics.latency.max > 500.0,
            "latency {:?}",
            r.metrics.latency
        );
        assert_accounting(&r);

        let srv = h2_server(cfg);
        let r = run_json(srv.addr(), "/", engine, &args(Some("1")), 0);
        srv.stop();
        assert_eq!(r.requests.ok, 100, "{:?}", r.errors);
        assert!(
            r.metrics.send_lag.p99 > 300.0,
            "one stream: the requests wait at the client; send lag {:?}",
            r.metrics.send_lag
        );
    }
}

/// `--openai` over h2c: TTFT, ITL and E2E match the server's timing.
#[test]
fn h2c_openai_sse_ttft_itl() {
    for engine in engines() {
        eprintln!("-- engine {engine}");
        let srv = h2_server(ServeConfig {
            sse: true,
            tokens: 5,
            ttft: Duration::from_millis(60),
            itl: Duration::from_millis(20),
            ..ServeConfig::default()
        });
        let r = run_json(
            srv.addr(),
            "/",
            engine,
            &[
                "--http2-prior-knowledge",
                "--openai",
                "--rate",
                "20",
                "--duration",
                "1s",
                "--max-tokens",
                "5",
                "--connections",
                "1",
            ],
            0,
        );
        srv.stop();
        let tol = 15.0;
        assert_eq!(r.requests.ok, 20, "{:?}", r.errors);
        let m = &r.metrics;
        assert_eq!(m.ttft.count, 20);
        assert!(
            m.ttft.min >= 60.0 && m.ttft.p50 <= 60.0 + tol,
            "ttft {:?}",
            m.ttft
        );
        assert_eq!(m.itl.count, 20 * 4, "4 gaps per 5-token stream");
        assert!(
            m.itl.p50 >= 20.0 - tol && m.itl.p50 <= 20.0 + tol,
            "itl {:?}",
            m.itl
        );
        assert!(
            m.latency.min >= 138.0 && m.latency.p50 <= 140.0 + tol,
            "e2e {:?}",
            m.latency
        );
        let tokens = r.output_tokens_per_s * r.window.window_s;
        assert!((tokens - 100.0).abs() < 0.5, "{tokens} tokens");
        assert_accounting(&r);
    }
}

/// 429s over h2c are counted by status and enter no histogram.
#[test]
fn h2c_status_429_counted() {
    for engine in engines() {
        eprintln!("-- engine {engine}");
        let srv = h2_server(ServeConfig {
            service: Duration::ZERO,
            error_every: Some(5),
            ..ServeConfig::default()
        });
        let r = run_json(
            srv.addr(),
            "/",
            engine,
            &[
                "--http2-prior-knowledge",
                "--rate",
                "100",
                "--duration",
                "1s",
            ],
            0,
        );
        srv.stop();
        assert_eq!(r.requests.sent, 100);
        assert_eq!(r.requests.errors, 20);
        assert_eq!(r.errors.by_status.get("429"), Some(&20));
        assert_eq!(r.requests.ok, 80);
        assert_eq!(r.metrics.latency.count, 80);
        assert_accounting(&r);
    }
}

/// A POST body goes out in DATA frames (the server counts it: a chat
/// request needs its JSON body).
#[test]
fn h2c_post_body_sent() {
    for engine in engines() {
        eprintln!("-- engine {engine}");
        let srv = h2_server(ServeConfig {
            service: Duration::ZERO,
            ..ServeConfig::default()
        });
        let r = run_json(
            srv.addr(),
            "/",
            engine,
            &[
                "--http2-prior-knowledge",
                "--rate",
                "50",
                "--duration",
                "1s",
                "--method",
                "POST",
                "--body",
                "{\"hello\": \"world\"}",
            ],
            0,
        );
        srv.stop();
        assert_eq!(r.requests.ok, 50, "{:?}", r.errors);
    }
}

/// A 3 MB POST body: beyond the server's 1 MiB stream window (sent as
/// its WINDOW_UPDATEs come) and far beyond one write buffer. io_uring
/// only for now: the std engine sends the part that fits its 64 KiB
/// buffer and then waits for an `Unblocked` that a full buffer never
/// brings (every request times out; its fix belongs to runner-std).
#[test]
fn h2c_post_body_beyond_windows() {
    if !engines().contains(&"uring") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("metronome-h2-body-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("body");
    std::fs::write(&file, vec![b'a'; 3_000_000]).unwrap();
    let srv = h2_server(ServeConfig {
        service: Duration::ZERO,
        ..ServeConfig::default()
    });
    let r = run_json(
        srv.addr(),
        "/",
        "uring",
        &[
            "--http2-prior-knowledge",
            "--rate",
            "20",
            "--duration",
            "1s",
            "--connections",
            "1",
            "--method",
            "POST",
            "--body-file",
            file.to_str().unwrap(),
        ],
        0,
    );
    srv.stop();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(r.requests.ok, 20, "{:?}", r.errors);
    assert_accounting(&r);
}

/// A stream past `--timeout` is cancelled (`RST_STREAM CANCEL`) and
/// counted a timeout; the connection lives on for the next ones.
#[test]
fn h2c_timeout_cancels_streams() {
    for engine in engines() {
        eprintln!("-- engine {engine}");
        let srv = h2_server(ServeConfig {
            service: Duration::from_millis(100),
            ..ServeConfig::default()
        });
        let r = run_json(
            srv.addr(),
            "/",
            engine,
            &[
                "--http2-prior-knowledge",
                "--rate",
                "50",
                "--duration",
                "1s",
                "--timeout",
                "30ms",
                "--connections",
                "1",
            ],
            1,
        );
        srv.stop();
        assert_eq!(r.requests.sent, 50);
        assert_eq!(r.requests.timeouts, 50, "{:?}", r.errors);
        assert_eq!(r.requests.ok, 0);
        assert_eq!(r.metrics.latency.count, 0);
        assert_accounting(&r);
    }
}

/// Both engines take the HTTP/2 flags (a closed port is a connect
/// failure, exit 1, not a usage error); each flag refuses the other
/// scheme; `--max-streams` needs HTTP/2.
#[test]
fn h2_flags_refused_where_not_implemented() {
    for engine in engines() {
        let out = metronome(&[
            "run",
            "http://127.0.0.1:9/",
            "--http2-prior-knowledge",
            "--engine",
            engine,
            "--duration",
            "1s",
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{engine}: {err}");
        assert!(!err.contains("--engine std"), "{engine}: {err}");
    }

    // --http2 is for https://, --http2-prior-knowledge for http://.
    let out = metronome(&["run", "http://127.0.0.1:9/", "--http2", "--duration", "1s"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--http2-prior-knowledge"), "{err}");
    let out = metronome(&[
        "run",
        "https://127.0.0.1:9/",
        "--http2-prior-knowledge",
        "--duration",
        "1s",
    ]);
    assert_eq!(out.status.code(), Some(2));

    let out = metronome(&["run", "http://127.0.0.1:9/", "--max-streams", "4"]);
    assert_eq!(out.status.code(), Some(2));
}

/// nginx, found on PATH or in /usr/sbin; `None` (the test skips visibly)
/// when it is not installed.
fn nginx_binary() -> Option<std::path::PathBuf> {
    let mut dirs: Vec<std::path::PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.push("/usr/sbin".into());
    dirs.into_iter()
        .map(|d| d.join("nginx"))
        .find(|p| p.is_file())
}

/// An nginx serving h2c (`listen ... http2` without TLS: prior knowledge)
/// from a temporary prefix; killed (by its own child handle) on drop.
struct Nginx {
    child: std::process::Child,
    dir: std::path::PathBuf,
    port: u16,
}

impl Nginx {
    /// h2c on a plain port.
    fn start(bin: &std::path::Path) -> Nginx {
        Nginx::start_with(bin, None)
    }

    /// With `tls`: TLS with the certificate and key PEM files `(cert,
    /// key)` (made by `tls_files`), offering h2 when `http2`, else
    /// HTTP/1.1 only.
    fn start_with(bin: &std::path::Path, tls: Option<(&std::path::Path, bool)>) -> Nginx {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir =
            std::env::temp_dir().join(format!("metronome-nginx-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let d = dir.display();
        let listen = match tls {
            None => format!("listen 127.0.0.1:{port} http2;"),
            Some((certs, http2)) => format!(
                "listen 127.0.0.1:{port} ssl{};\n  ssl_certificate {c}/cert.pem;\n  \
                 ssl_certificate_key {c}/key.pem;",
                if http2 { " http2" } else { "" },
                c = certs.display()
            ),
        };
        // nginx 1.22 (Debian 12) spells HTTP/2 as a listen parameter; 1.25+
        // also accepts it (with a deprecation warning).
        let conf = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
             error_log {d}/error.log warn;\nevents {{ worker_connections 256; }}\n\
             http {{\n access_log off;\n client_body_temp_path {d}/body;\n\
             proxy_temp_path {d}/proxy;\n fastcgi_temp_path {d}/fastcgi;\n\
             uwsgi_temp_path {d}/uwsgi;\n scgi_temp_path {d}/scgi;\n\
             server {{\n  {listen}\n\
             location / {{ return 200 \"ok\\n\"; }}\n }}\n}}\n"
        );
        let path = dir.join("nginx.conf");
        std::fs::write(&path, conf).unwrap();
        let child = std::process::Command::new(bin)
            .arg("-c")
            .arg(&path)
            .arg("-p")
            .arg(&dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start nginx");
        // Ready once it accepts.
        let until = std::time::Instant::now() + Duration::from_secs(5);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < until,
                "nginx did not start: see {d}/error.log"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Nginx { child, dir, port }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Against nginx over h2c, a server nobody here wrote: every request ok at
/// a fixed rate; and on one connection past nginx's 1 000 requests per
/// connection (`http2_max_requests`, 1.19.7+), its GOAWAY loses no
/// request: the streams it refused are retried once on a fresh connection,
/// at 2 000 and at 10 000 req/s.
#[test]
fn h2c_against_nginx_goaway_loses_nothing() {
    let Some(bin) = nginx_binary() else {
        eprintln!("SKIP h2c_against_nginx_goaway_loses_nothing: nginx is not installed");
        return;
    };
    for engine in engines() {
        eprintln!("-- engine {engine}");
        let ngx = Nginx::start(&bin);
        let url = format!("http://127.0.0.1:{}/", ngx.port);
        let r = common::run_url_json(
            &url,
            engine,
            &[
                "--http2-prior-knowledge",
                "--rate",
                "500",
                "--duration",
                "1s",
                "--connections",
                "2",
            ],
            0,
        );
        assert_eq!(r.requests.sent, 500);
        assert_eq!(r.requests.ok, 500, "{:?}", r.errors);
        assert_accounting(&r);

        let r = common::run_url_json(
            &url,
            engine,
            &[
                "--http2-prior-knowledge",
                "--rate",
                "2000",
                "--duration",
                "1.5s",
                "--connections",
                "1",
                "--max-connections",
                "1",
            ],
            0,
        );
        assert_eq!(r.requests.sent, 3000);
        assert_eq!(r.requests.ok, 3000, "{:?}", r.errors);
        assert_eq!(r.requests.errors, 0);
        assert_accounting(&r);
        assert!(
            r.connections.connect.as_ref().map_or(0, |c| c.count) >= 3,
            "nginx closes each connection after 1000 requests: {:?}",
            r.connections.connect
        );

        // Faster: streams are in flight when each GOAWAY comes (those above
        // its last id are retried), and sends are in flight when each
        // connection closes.
        let r = common::run_url_json(
            &url,
            engine,
            &[
                "--http2-prior-knowledge",
                "--rate",
                "10000",
                "--duration",
                "1s",
                "--connections",
                "1",
                "--max-connections",
                "1",
            ],
            0,
        );
        assert_eq!(r.requests.sent, 10_000);
        assert_eq!(r.requests.ok, 10_000, "{:?}", r.errors);
        assert_eq!(r.requests.errors, 0);
        assert_accounting(&r);
        assert!(
            r.connections.connect.as_ref().map_or(0, |c| c.count) >= 10,
            "{:?}",
            r.connections.connect
        );
    }
}

/// h2 over TLS (`--http2`, ALPN h2) against `serve --http2 --tls`; an
/// HTTP/1.1-only TLS server is refused in one clear line.
#[test]
fn h2_over_tls_alpn() {
    for engine in engines() {
        eprintln!("-- engine {engine}");
        use metronome::serve::TlsServer;
        use std::sync::Arc;
        let cert = common::TestCert::new();
        let srv = h2_server(ServeConfig {
            service: Duration::from_micros(500),
            tls: Some(TlsServer(Arc::clone(&cert.tls.config))),
            ..ServeConfig::default()
        });
        let r = common::run_tls_json(
            srv.addr(),
            "/",
            engine,
            &[
                "--http2",
                "--rate",
                "200",
                "--duration",
                "1s",
                "--connections",
                "2",
            ],
            0,
            &cert.path,
        );
        srv.stop();
        assert_eq!(r.requests.sent, 200);
        assert_eq!(r.requests.ok, 200, "{:?}", r.errors);
        assert!(r.connections.tls, "a TLS run");
        assert_accounting(&r);

        // HTTP/1.1 only over TLS: no h2 in ALPN.
        let srv = server(ServeConfig {
            tls: Some(TlsServer(Arc::clone(&cert.tls.config))),
            ..ServeConfig::default()
        });
        let url = format!("https://{}/", srv.addr());
        let out = metronome(&[
            "run",
            &url,
            "--http2",
            "--cacert",
            cert.path.to_str().unwrap(),
            "--duration",
            "1s",
            "--engine",
            engine,
        ]);
        srv.stop();
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("h2") && err.contains("drop --http2"), "{err}");
    }
}

/// A self-signed certificate for 127.0.0.1 and its key, as `cert.pem` and
/// `key.pem` in a fresh directory, by the `openssl` command; `None` when
/// it is not installed.
fn tls_files() -> Option<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("metronome-nginx-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let ok = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ])
        .arg("-keyout")
        .arg(dir.join("key.pem"))
        .arg("-out")
        .arg(dir.join("cert.pem"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .ok()?
        .success();
    ok.then_some(dir)
}

/// nginx with `ssl http2` (h2 by ALPN): 3 000 requests at 2 000 req/s on
/// one connection, across its GOAWAYs, all ok; nginx over TLS without
/// http2 is refused in one line naming the protocol it chose.
#[test]
fn h2_over_tls_against_nginx() {
    let Some(bin) = nginx_binary() else {
        eprintln!("SKIP h2_over_tls_against_nginx: nginx is not installed");
        return;
    };
    let Some(certs) = tls_files() else {
        eprintln!("SKIP h2_over_tls_against_nginx: openssl is not installed");
        return;
    };
    for engine in engines() {
        eprintln!("-- engine {engine}");
        let cacert = certs.join("cert.pem");
        let ngx = Nginx::start_with(&bin, Some((&certs, true)));
        let r = common::run_url_json(
            &format!("https://127.0.0.1:{}/", ngx.port),
            engine,
            &[
                "--http2",
                "--cacert",
                cacert.to_str().unwrap(),
                "--rate",
                "2000",
                "--duration",
                "1.5s",
                "--connections",
                "1",
                "--max-connections",
                "1",
            ],
            0,
        );
        drop(ngx);
        assert_eq!(r.requests.sent, 3000);
        assert_eq!(r.requests.ok, 3000, "{:?}", r.errors);
        assert!(r.connections.tls);
        assert_accounting(&r);

        let ngx = Nginx::start_with(&bin, Some((&certs, false)));
        let out = metronome(&[
            "run",
            &format!("https://127.0.0.1:{}/", ngx.port),
            "--http2",
            "--cacert",
            cacert.to_str().unwrap(),
            "--duration",
            "1s",
            "--engine",
            engine,
        ]);
        drop(ngx);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("drop --http2"), "{err}");
    }
    let _ = std::fs::remove_dir_all(&certs);
}
