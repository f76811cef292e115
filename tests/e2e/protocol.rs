//! The report's `argv` (the command line as given, secrets masked) and
//! `protocol` (with TLS versions, ALPN and HTTP/2 streams), in JSON, text
//! and on the page; the hints for a client and server that speak different
//! HTTP versions. Against the embedded server, on every engine.

use crate::common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{engines, metronome, read_report, server, TestCert};
use metronome::serve::{ServeConfig, TlsServer};

const BIN: &str = env!("CARGO_BIN_EXE_metronome");

fn tmp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("metronome-protocol-{}-{name}", std::process::id()))
}

/// The JSON element `id` of a page.
fn embedded<'a>(html: &'a str, id: &str) -> &'a str {
    let open = format!("<script type=\"application/json\" id=\"{id}\">");
    let from = html.find(&open).unwrap() + open.len();
    let len = html[from..].find("</script>").unwrap();
    &html[from..from + len]
}

/// The report keeps the command line word by word with the credential
/// header's value masked; the text report and the page show it (the page
/// from the report's own argv, also when drawn again from the saved file);
/// a saved report without argv gets the reconstruction, labelled so.
#[test]
fn argv_is_kept_masked_and_shown() {
    let srv = server(ServeConfig::default());
    let url = format!("http://{}/", srv.addr());
    let (out, html) = (tmp("argv.json"), tmp("argv.html"));
    let args = [
        "run",
        &url,
        "-H",
        "Authorization: Bearer x",
        "--header=X-Api-Key: k1",
        "-H",
        "Accept: text/plain",
        "--rate",
        "20",
        "--duration",
        "200ms",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ];
    let run = metronome(&args);
    srv.stop();
    assert_eq!(run.status.code(), Some(0), "{run:?}");
    let r = read_report(&out);
    let mut want: Vec<String> = vec![BIN.to_string()];
    want.extend(args.iter().map(|a| a.to_string()));
    want[4] = "Authorization: REDACTED".into();
    want[5] = "--header=X-Api-Key: REDACTED".into();
    assert_eq!(r.argv.as_ref(), Some(&want));
    assert_eq!(r.protocol.as_deref(), Some("http/1.1"));
    assert!(r.connections.tls_versions.is_empty() && r.connections.h2.is_none());

    let json = std::fs::read_to_string(&out).unwrap();
    // (Not a bare "k1": base64 histograms may hold it.)
    assert!(
        !json.contains("Bearer x") && !json.contains("X-Api-Key: k1"),
        "{json}"
    );
    let text = String::from_utf8_lossy(&run.stdout).to_string();
    let line = format!(
        "  command: {BIN} run {url} -H 'Authorization: REDACTED' '--header=X-Api-Key: REDACTED' \
         -H 'Accept: text/plain' --rate 20 --duration 200ms --quiet --out {} --html {}\n",
        out.display(),
        html.display()
    );
    assert!(text.contains(&line), "{text}");
    assert!(text.contains("\n  protocol: http/1.1\n"), "{text}");

    // The page: its meta command is the report's argv.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(!page.contains("Bearer x"));
    let meta: serde_json::Value = serde_json::from_str(embedded(&page, "page-meta")).unwrap();
    assert_eq!(
        meta["command"],
        line.trim_start().trim_start_matches("command: ").trim_end()
    );
    assert!(page.contains(": ['command line' + (r.shard_starts && r.shard_starts.length"));
    // Drawn again from the saved report: the same command.
    let again = tmp("again.html");
    let show = metronome(&[
        "report",
        out.to_str().unwrap(),
        "--html",
        again.to_str().unwrap(),
    ]);
    assert_eq!(show.status.code(), Some(0), "{show:?}");
    let page = std::fs::read_to_string(&again).unwrap();
    let meta2: serde_json::Value = serde_json::from_str(embedded(&page, "page-meta")).unwrap();
    assert_eq!(meta2["command"], meta["command"]);
    // A report of an older version (no argv): no command, the page labels
    // its reconstruction.
    let mut old: serde_json::Value = serde_json::from_str(&json).unwrap();
    old.as_object_mut().unwrap().remove("argv");
    old.as_object_mut().unwrap().remove("protocol");
    std::fs::write(&out, old.to_string()).unwrap();
    let show = metronome(&[
        "report",
        out.to_str().unwrap(),
        "--html",
        again.to_str().unwrap(),
    ]);
    assert_eq!(show.status.code(), Some(0), "{show:?}");
    let page = std::fs::read_to_string(&again).unwrap();
    let meta3: serde_json::Value = serde_json::from_str(embedded(&page, "page-meta")).unwrap();
    assert!(meta3["command"].is_null(), "{meta3}");
    assert!(meta3["runs"][0]["equivalent"]
        .as_str()
        .unwrap()
        .starts_with("metronome run "));
    assert!(page.contains("['command line (reconstructed)', el('code', null, rm.equivalent)]"));
    let text = metronome(&["report", out.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        !text.contains("  command: ") && !text.contains("  protocol: "),
        "{text}"
    );
    for f in [out, html, again] {
        let _ = std::fs::remove_file(f);
    }
}

/// A merged report keeps the first shard's argv (in the order given);
/// each shard's own is in `shard_starts`.
#[test]
fn merge_keeps_the_first_shards_argv() {
    let srv = server(ServeConfig::default());
    let url = format!("http://{}/", srv.addr());
    let files = [tmp("shard0.json"), tmp("shard1.json")];
    let mut argvs = Vec::new();
    for (k, f) in files.iter().enumerate() {
        let shard = format!("{k}/2");
        let args = [
            "run",
            &url,
            "--rate",
            "20",
            "--duration",
            "200ms",
            "--shard",
            &shard,
            "--quiet",
            "--out",
            f.to_str().unwrap(),
        ];
        let out = metronome(&args);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let mut a = vec![BIN.to_string()];
        a.extend(args.iter().map(|s| s.to_string()));
        argvs.push(a);
    }
    srv.stop();
    let merged = tmp("merged.json");
    // Given in the order shard 1, shard 0.
    let out = metronome(&[
        "merge",
        files[1].to_str().unwrap(),
        files[0].to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let m = read_report(&merged);
    assert_eq!(m.argv.as_ref(), Some(&argvs[1]));
    assert_eq!(m.protocol.as_deref(), Some("http/1.1"));
    let each: Vec<_> = m.shard_starts.iter().map(|s| s.argv.clone()).collect();
    assert_eq!(each, [Some(argvs[1].clone()), Some(argvs[0].clone())]);
    let text = metronome(&["report", merged.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&text.stdout);
    let line = format!(
        "\n  command (shard 1/2's): {BIN} run {url} --rate 20 --duration 200ms --shard 1/2 \
         --quiet --out {}\n",
        files[1].display()
    );
    assert!(text.contains(&line), "{text}");
    for f in files.iter().chain([&merged]) {
        let _ = std::fs::remove_file(f);
    }
}

fn h2_server(cfg: ServeConfig) -> metronome::serve::ServerHandle {
    server(ServeConfig { http2: true, ..cfg })
}

/// `run URL ARGS --format json` on `engine`, exit 0, and its text report
/// from the same JSON (`metronome report`).
fn run_both(url: &str, engine: &str, args: &[&str]) -> (metronome::report::Report, String) {
    let file = tmp(&format!("{engine}-{}.json", args.len()));
    let mut all = vec![
        "run",
        url,
        "--quiet",
        "--engine",
        engine,
        "--out",
        file.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let out = metronome(&all);
    assert_eq!(out.status.code(), Some(0), "{engine} {args:?}: {out:?}");
    let r = read_report(&file);
    let _ = std::fs::remove_file(&file);
    (r, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// h2c: the protocol, and the streams per connection against the server's
/// SETTINGS_MAX_CONCURRENT_STREAMS: one connection, a server 10x slower
/// than the rate, so its 8 streams are all in use.
#[test]
fn h2c_protocol_and_streams() {
    for engine in engines() {
        let srv = h2_server(ServeConfig {
            service: Duration::from_millis(20),
            max_streams: 8,
            ..ServeConfig::default()
        });
        let url = format!("http://{}/", srv.addr());
        let (r, text) = run_both(
            &url,
            engine,
            &[
                "--http2-prior-knowledge",
                "--rate",
                "200",
                "--duration",
                "200ms",
                "--connections",
                "1",
                "--max-connections",
                "1",
            ],
        );
        srv.stop();
        assert_eq!(r.protocol.as_deref(), Some("h2c"), "{engine}");
        let h2 = r.connections.h2.expect("h2 streams");
        assert_eq!(
            (
                h2.peak_streams,
                h2.client_max_streams,
                h2.server_max_streams
            ),
            (8, 100, Some(8)),
            "{engine}"
        );
        assert!(r.connections.tls_versions.is_empty(), "{engine}");
        assert!(
            text.contains(
                "\n  protocol: h2c; at most 8 streams at once on a connection (client cap 100, \
                 server's SETTINGS_MAX_CONCURRENT_STREAMS 8)\n"
            ),
            "{engine}: {text}"
        );
    }
}

/// Unary gRPC over h2c: `grpc`, with its streams; `--max-streams` is the
/// client's cap.
#[test]
fn grpc_protocol() {
    for engine in engines() {
        let srv = h2_server(ServeConfig::default());
        let url = format!("http://{}", srv.addr());
        let (r, _) = run_both(
            &url,
            engine,
            &[
                "--grpc",
                "grpc.health.v1.Health/Check",
                "--rate",
                "50",
                "--duration",
                "200ms",
                "--max-streams",
                "4",
            ],
        );
        srv.stop();
        assert_eq!(r.requests.ok, 10, "{engine}: {:?}", r.errors);
        assert_eq!(r.protocol.as_deref(), Some("grpc"), "{engine}");
        let h2 = r.connections.h2.expect("h2 streams");
        assert_eq!(h2.client_max_streams, 4, "{engine}");
        assert_eq!(h2.server_max_streams, Some(100), "{engine}");
        assert!((1..=4).contains(&h2.peak_streams), "{engine}: {h2:?}");
    }
}

/// Over TLS: h2 with ALPN h2, and HTTP/1.1 with ALPN http/1.1, TLS 1.3
/// (the embedded server's rustls prefers it), every handshake counted.
#[test]
fn tls_protocols_name_version_and_alpn() {
    let cert = TestCert::new();
    let map = |pairs: &[(&str, u64)]| -> BTreeMap<String, u64> {
        pairs.iter().map(|&(k, n)| (k.to_string(), n)).collect()
    };
    for engine in engines() {
        for (h2, want, alpn) in [(true, "h2", "h2"), (false, "http/1.1", "http/1.1")] {
            let srv = server(ServeConfig {
                http2: h2,
                tls: Some(TlsServer(Arc::clone(&cert.tls.config))),
                ..ServeConfig::default()
            });
            let url = format!("https://{}/", srv.addr());
            let mut args = vec![
                "--cacert",
                cert.path.to_str().unwrap(),
                "--rate",
                "50",
                "--duration",
                "200ms",
                "--connections",
                "2",
            ];
            if h2 {
                args.push("--http2");
            }
            let (r, text) = run_both(&url, engine, &args);
            srv.stop();
            assert_eq!(r.protocol.as_deref(), Some(want), "{engine}");
            let shakes = r.connections.tls_handshake.as_ref().map_or(0, |m| m.count);
            assert!(shakes >= 2, "{engine}: {:?}", r.connections);
            assert_eq!(
                r.connections.tls_versions,
                map(&[("TLSv1.3", shakes)]),
                "{engine}"
            );
            assert_eq!(r.connections.alpn, map(&[(alpn, shakes)]), "{engine}");
            assert_eq!(r.connections.h2.is_some(), h2, "{engine}");
            let line =
                format!("\n  protocol: {want}; TLS TLSv1.3 x{shakes}; ALPN {alpn} x{shakes}");
            assert!(text.contains(&line), "{engine}: {text}");
        }
    }
}

/// A port that speaks HTTP/2 only (as nginx's `listen ... http2` without
/// TLS before 1.25, or a gRPC server): its SETTINGS on accept, then GOAWAY
/// and close at the first bytes that are not the HTTP/2 preface.
fn h2_only_server() -> (std::net::SocketAddr, Arc<AtomicBool>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    std::thread::spawn(move || {
        while !stopping.load(Ordering::Relaxed) {
            let Ok((mut sock, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(2));
                continue;
            };
            std::thread::spawn(move || {
                sock.set_nonblocking(false).unwrap();
                sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let _ = sock.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
                let mut buf = [0u8; 4096];
                if matches!(sock.read(&mut buf), Ok(n) if n > 0) {
                    // GOAWAY, last stream 0, PROTOCOL_ERROR.
                    let _ = sock.write_all(&[0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
                }
            });
        }
    });
    (addr, stop)
}

/// HTTP/1.1 against an HTTP/2-only port: the hint names the flags that
/// speak HTTP/2; the old "metronome speaks HTTP/1.1" is gone.
#[test]
fn http1_against_h2_only_port_names_the_flags() {
    let (addr, stop) = h2_only_server();
    for engine in engines() {
        let url = format!("http://{addr}/");
        let out = metronome(&[
            "run",
            &url,
            "--engine",
            engine,
            "--rate",
            "20",
            "--duration",
            "200ms",
            "--quiet",
            "--connections",
            "1",
            "--warm-up",
            "off",
        ]);
        assert_eq!(out.status.code(), Some(1), "{engine}: {out:?}");
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let hint = "the port speaks HTTP/2 only: add --http2-prior-knowledge (h2c, for an \
                    http:// URL) or --http2 (for an https:// URL)";
        assert!(
            all.contains(&format!("bad framing (4): {hint}")),
            "{engine}: {all}"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(hint), "{engine}: {stderr}");
        assert!(
            !all.contains("metronome speaks HTTP/1.1"),
            "{engine}: {all}"
        );
    }
    stop.store(true, Ordering::Relaxed);
}

/// `--http2-prior-knowledge` against an HTTP/1.1-only server: the hint
/// says the server answered HTTP/1.1, not that a 4.7 MB frame came.
#[test]
fn h2c_against_http1_server_says_it_answered_http1() {
    for engine in engines() {
        let srv = server(ServeConfig::default());
        let url = format!("http://{}/", srv.addr());
        let out = metronome(&[
            "run",
            &url,
            "--http2-prior-knowledge",
            "--engine",
            engine,
            "--rate",
            "20",
            "--duration",
            "200ms",
            "--quiet",
        ]);
        srv.stop();
        assert_eq!(out.status.code(), Some(1), "{engine}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(
                "the server answered HTTP/1.1, not HTTP/2: it does not speak HTTP/2 with prior \
                 knowledge (h2c) on this port; drop --http2-prior-knowledge"
            ),
            "{engine}: {stderr}"
        );
        assert!(
            !stderr.contains("exceeds the maximum frame size"),
            "{engine}: {stderr}"
        );
        assert!(!stderr.contains("frame of"), "{engine}: {stderr}");
    }
}

/// A TLS server that refuses every ClientHello as one whose ALPN offers
/// none of its protocols does (Go's crypto/tls for an h2-only gRPC
/// server): the fatal alert `no_application_protocol` (120).
fn alpn_refusing_server() -> (std::net::SocketAddr, Arc<AtomicBool>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    std::thread::spawn(move || {
        while !stopping.load(Ordering::Relaxed) {
            let Ok((mut sock, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(2));
                continue;
            };
            std::thread::spawn(move || {
                sock.set_nonblocking(false).unwrap();
                sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let mut buf = [0u8; 4096];
                if matches!(sock.read(&mut buf), Ok(n) if n > 0) {
                    let _ = sock.write_all(&[0x15, 3, 3, 0, 2, 2, 120]);
                }
            });
        }
    });
    (addr, stop)
}

/// HTTP/1.1 over TLS refused by ALPN (`no_application_protocol`): the line
/// says to add `--http2` when the server speaks HTTP/2 only; with
/// `--http2` it says the server offers no h2 (drop it), as before.
#[test]
fn alpn_refusal_names_the_flag() {
    let (addr, stop) = alpn_refusing_server();
    let url = format!("https://{addr}/");
    for engine in engines() {
        for (extra, want) in [
            (
                None,
                "the server speaks none of the protocols offered by ALPN (http/1.1): if it \
                 speaks HTTP/2 only, add --http2",
            ),
            (Some("--http2"), "drop --http2"),
        ] {
            let mut args = vec![
                "run",
                &url,
                "--insecure",
                "--engine",
                engine,
                "--rate",
                "20",
                "--duration",
                "200ms",
                "--quiet",
            ];
            args.extend(extra);
            let out = metronome(&args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{engine} {extra:?}: {stderr}");
            assert!(
                stderr.contains("no_application_protocol"),
                "{engine}: {stderr}"
            );
            assert!(stderr.contains(want), "{engine} {extra:?}: {stderr}");
            assert_eq!(
                stderr.contains("add --http2"),
                extra.is_none(),
                "{engine} {extra:?}: {stderr}"
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
}

/// A word of the command line that is not UTF-8 (a file name) is kept in
/// `argv` with U+FFFD for its invalid bytes: no panic, the run is reported.
#[test]
fn a_non_utf8_word_is_kept_lossily() {
    use std::os::unix::ffi::OsStrExt;
    let srv = server(ServeConfig::default());
    let url = format!("http://{}/", srv.addr());
    let dir = tmp("nonutf8");
    std::fs::create_dir_all(&dir).unwrap();
    let html = dir.join(std::ffi::OsStr::from_bytes(b"r\xff.html"));
    let out = dir.join("r.json");
    let run = std::process::Command::new(BIN)
        .args([
            "run",
            &url,
            "--rate",
            "10",
            "--duration",
            "200ms",
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    srv.stop();
    assert_eq!(run.status.code(), Some(0), "{run:?}");
    let r = read_report(&out);
    let argv = r.argv.unwrap();
    assert_eq!(
        argv.last().unwrap(),
        &format!("{}/r\u{FFFD}.html", dir.display())
    );
    assert!(html.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
