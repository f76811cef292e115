//! End-to-end tests of `metronome run --http2-prior-knowledge` (h2c) on
//! the std engine against the embedded server's HTTP/2 (`serve --http2`).
//! Real time: assertions are exact counts and loose bounds.

use crate::common;

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

/// Free stream slots count as idle connections for core's pool rule: at
/// 5 000 req/s against an instant server, `--connections 4` (400 stream
/// slots) carry the run without the pool growing. Before the slots were
/// counted continuously (only while a dispatcher waited), the same run at
/// 20k req/s opened 8 to 13 connections (docs/http2.md).
#[test]
fn h2c_pool_does_not_grow_while_streams_are_free() {
    for engine in engines() {
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
                "5000",
                "--duration",
                "1s",
                "--connections",
                "4",
            ],
            0,
        );
        srv.stop();
        assert_eq!(r.requests.ok, 5000, "{:?}", r.errors);
        assert_accounting(&r);
        // A run starved of CPU for 80 ms (400 requests due, none picked up)
        // may still grow the pool by core's rule; one connection is allowed.
        assert!(
            r.generator.peak_connections <= 5,
            "{engine}: peak {} connections, opened {}, {} requests waited for one",
            r.generator.peak_connections,
            r.generator.connections_opened,
            r.generator.waited_for_connection
        );
    }
}

/// What a hostile h2c server does once it has seen a request's HEADERS.
#[derive(Clone, Copy, Debug)]
enum Hostile {
    /// A DATA frame on stream 0 (a malformed frame: our `PROTOCOL_ERROR`).
    MalformedFrame,
    /// A header block HPACK cannot decode (our `COMPRESSION_ERROR`).
    MalformedHpack,
    /// GOAWAY `PROTOCOL_ERROR` letting every stream complete, then close.
    GoAwayProtocolError,
    /// Close the connection without a word.
    Close,
}

/// A tiny h2c server thread: SETTINGS on each connection, then `mode` at
/// the first request of the connection; stops with its listener's last
/// connection after `stop` is set.
fn hostile_h2_server(
    mode: Hostile,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    std::thread::spawn(move || {
        while !stopping.load(Ordering::Relaxed) {
            let mut sock = match listener.accept() {
                Ok((s, _)) => s,
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                }
            };
            std::thread::spawn(move || {
                sock.set_nonblocking(false).unwrap();
                sock.set_read_timeout(Some(Duration::from_secs(10)))
                    .unwrap();
                // Empty SETTINGS: the client is ready.
                if sock.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).is_err() {
                    return;
                }
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let mut at = 24; // the client's preface
                loop {
                    match sock.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                    while buf.len() >= at + 9 {
                        let len = usize::from(buf[at]) << 16
                            | usize::from(buf[at + 1]) << 8
                            | usize::from(buf[at + 2]);
                        let kind = buf[at + 3];
                        let stream = u32::from_be_bytes([
                            buf[at + 5],
                            buf[at + 6],
                            buf[at + 7],
                            buf[at + 8],
                        ]) & 0x7fff_ffff;
                        if buf.len() < at + 9 + len {
                            break;
                        }
                        at += 9 + len;
                        if kind != 1 {
                            continue;
                        }
                        let id = stream.to_be_bytes();
                        let reply: Vec<u8> = match mode {
                            Hostile::MalformedFrame => vec![0, 0, 1, 0, 0, 0, 0, 0, 0, b'x'],
                            // An indexed field past both tables (index 127+).
                            Hostile::MalformedHpack => {
                                vec![0, 0, 3, 1, 4, id[0], id[1], id[2], id[3], 0xff, 0xff, 0x7f]
                            }
                            Hostile::GoAwayProtocolError => vec![
                                0, 0, 8, 7, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1,
                            ],
                            Hostile::Close => Vec::new(),
                        };
                        let _ = sock.write_all(&reply);
                        std::thread::sleep(Duration::from_millis(20));
                        return;
                    }
                }
            });
        }
    });
    (addr, stop)
}

/// A server's connection-level protocol error ends the requests it hit
/// as `bad_framing` (cause `http2_protocol`), as a malformed HTTP/1.1
/// reply is: a malformed frame or header block (our connection error) or
/// its GOAWAY `PROTOCOL_ERROR`. A connection closed without a word is a
/// `reset`.
#[test]
fn h2c_server_protocol_error_is_bad_framing() {
    for (engine, mode) in engines().into_iter().flat_map(|e| {
        [
            Hostile::MalformedFrame,
            Hostile::MalformedHpack,
            Hostile::GoAwayProtocolError,
            Hostile::Close,
        ]
        .map(|m| (e, m))
    }) {
        let (addr, stop) = hostile_h2_server(mode);
        let r = common::run_json_checked(
            addr,
            "/",
            engine,
            &[
                "--http2-prior-knowledge",
                "--rate",
                "20",
                "--duration",
                "500ms",
                "--connections",
                "1",
                "--timeout",
                "2s",
            ],
        );
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert_accounting(&r);
        assert_eq!(r.requests.sent, 10, "{engine} {mode:?}: {:?}", r.requests);
        assert_eq!(r.requests.ok, 0, "{engine} {mode:?}");
        let kind = |k: &str| r.errors.by_kind.get(k).copied().unwrap_or(0);
        let cause = r.errors.bad_framing_by_cause.get("http2_protocol").copied();
        match mode {
            Hostile::Close => {
                assert_eq!(kind("reset"), 10, "{engine} {mode:?}: {:?}", r.errors);
                assert_eq!(cause, Some(0), "{engine} {mode:?}: {:?}", r.errors);
            }
            _ => {
                assert_eq!(kind("bad_framing"), 10, "{engine} {mode:?}: {:?}", r.errors);
                assert_eq!(cause, Some(10), "{engine} {mode:?}: {:?}", r.errors);
                assert_eq!(kind("reset"), 0, "{engine} {mode:?}: {:?}", r.errors);
            }
        }
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
/// Every path answers `ok`, but `/v1/models`: a one-model OpenAI list.
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
             http {{\n log_format proto '$server_protocol';\n \
             access_log {d}/access.log proto;\n client_body_temp_path {d}/body;\n\
             proxy_temp_path {d}/proxy;\n fastcgi_temp_path {d}/fastcgi;\n\
             uwsgi_temp_path {d}/uwsgi;\n scgi_temp_path {d}/scgi;\n\
             server {{\n  {listen}\n\
             location / {{ return 200 \"ok\\n\"; }}\n\
             location = /v1/models {{ default_type application/json; \
             return 200 '{{\"object\":\"list\",\"data\":[{{\"id\":\"nginx-model\"}}]}}'; }}\n }}\n}}\n"
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

impl Nginx {
    /// The protocol of every request nginx logged so far
    /// (`$server_protocol`, one line each: `HTTP/2.0`, `HTTP/1.1`).
    fn protocols(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("access.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
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
/// request: the streams it refused are retried once on a fresh connection.
#[test]
fn h2c_against_nginx_goaway_loses_nothing() {
    let Some(bin) = nginx_binary() else {
        skip_outside_ci("h2c_against_nginx_goaway_loses_nothing: nginx is not installed");
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
        // The protocol the report names is the one nginx logged, and its
        // SETTINGS_MAX_CONCURRENT_STREAMS (http2_max_concurrent_streams,
        // 128 by default) is the server's limit reported.
        assert_eq!(r.protocol.as_deref(), Some("h2c"));
        let logged = ngx.protocols();
        assert!(logged.len() >= 500, "{} requests logged", logged.len());
        assert!(logged.iter().all(|p| p == "HTTP/2.0"), "{logged:?}");
        let h2 = r.connections.h2.expect("h2 streams");
        assert_eq!(h2.server_max_streams, Some(128), "{h2:?}");
        assert!((1..=100).contains(&h2.peak_streams), "{h2:?}");

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
        skip_outside_ci("h2_over_tls_against_nginx: nginx is not installed");
        return;
    };
    let Some(certs) = tls_files() else {
        skip_outside_ci("h2_over_tls_against_nginx: openssl is not installed");
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
        let logged = ngx.protocols();
        drop(ngx);
        assert_eq!(r.requests.sent, 3000);
        assert_eq!(r.requests.ok, 3000, "{:?}", r.errors);
        assert!(r.connections.tls);
        assert_accounting(&r);
        // h2 by ALPN on every handshake, as nginx logged it.
        assert_eq!(r.protocol.as_deref(), Some("h2"));
        assert!(logged.len() >= 3000, "{} requests logged", logged.len());
        assert!(logged.iter().all(|p| p == "HTTP/2.0"), "{logged:?}");
        let shakes = r.connections.tls_handshake.as_ref().map_or(0, |m| m.count);
        assert_eq!(
            r.connections.alpn,
            [("h2".to_string(), shakes)].into_iter().collect(),
            "{:?}",
            r.connections
        );
        assert_eq!(r.connections.tls_versions.values().sum::<u64>(), shakes);

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

/// A visible skip when a peer server is missing; under CI (`CI=true`),
/// where `.ci/run` installs nginx and openssl, a failure.
fn skip_outside_ci(why: &str) {
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI must install it (apt-get install nginx openssl): {why}"
    );
    eprintln!("SKIP {why}");
}

/// A 3 MB POST body: beyond the server's 1 MiB stream window (sent as
/// its WINDOW_UPDATEs come) and far beyond one write buffer (each engine
/// goes on with the body once its buffer is written out, not only when a
/// window grows).
#[test]
fn h2c_post_body_beyond_windows() {
    let dir = std::env::temp_dir().join(format!("metronome-h2-body-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("body");
    std::fs::write(&file, vec![b'a'; 3_000_000]).unwrap();
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
        assert_eq!(r.requests.ok, 20, "{engine}: {:?}", r.errors);
        assert_accounting(&r);
    }
    let _ = std::fs::remove_dir_all(&dir);
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

/// `--openai` discovers its model in the run's protocol, with its TLS
/// settings: against nginx over h2c (prior knowledge only: an HTTP/1.1
/// request is not answered) and over TLS with ALPN h2, on both engines,
/// nginx logs every request, the `GET /v1/models` included, as HTTP/2.0.
/// (Before: discovery spoke HTTP/1.1 whatever the run's protocol: refused
/// by the h2c server, and logged as HTTP/1.1 over TLS.) nginx answers the
/// completions `ok`, not a stream: the run's own requests fail; only the
/// discovery and the protocol are checked here.
#[test]
fn openai_discovery_speaks_the_runs_http2() {
    let Some(bin) = nginx_binary() else {
        skip_outside_ci("openai_discovery_speaks_the_runs_http2: nginx is not installed");
        return;
    };
    let certs = tls_files();
    for engine in engines() {
        let mut cases: Vec<(Nginx, Vec<String>)> =
            vec![(Nginx::start(&bin), vec!["--http2-prior-knowledge".into()])];
        if let Some(certs) = &certs {
            let cacert = certs.join("cert.pem").display().to_string();
            cases.push((
                Nginx::start_with(&bin, Some((certs, true))),
                vec!["--http2".into(), "--cacert".into(), cacert],
            ));
        } else {
            skip_outside_ci("the h2 (TLS) half: openssl is not installed");
        }
        for (ngx, flags) in cases {
            let scheme = if flags[0] == "--http2" {
                "https"
            } else {
                "http"
            };
            let url = format!("{scheme}://127.0.0.1:{}/v1/chat/completions", ngx.port);
            let mut args = vec![
                "run",
                url.as_str(),
                "--openai",
                "--rate",
                "4",
                "--duration",
                "500ms",
            ];
            args.extend(flags.iter().map(String::as_str));
            args.extend(["--quiet", "--engine", engine]);
            let out = metronome(&args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("metronome: model: nginx-model (from /v1/models)"),
                "{engine} {args:?}: {err}"
            );
            let protocols = ngx.protocols();
            // The discovery and the run's 2 requests (at least).
            assert!(protocols.len() > 2, "{engine}: {protocols:?}");
            assert!(
                protocols.iter().all(|p| p == "HTTP/2.0"),
                "{engine} {scheme}: {protocols:?}"
            );
        }
    }
}
