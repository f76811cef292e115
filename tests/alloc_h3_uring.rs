//! What the io_uring engine's threads allocate while measuring over
//! HTTP/3 (against aioquic's server, tests/h3_server.py): the engine's own
//! path allocates nothing per request, but `quinn-proto` does (its stream
//! state, a copy of each request in its send buffer, each packet kept for
//! retransmission, the received datagrams it holds): the count per request
//! is measured and bounded here, so that a change that adds to it is seen.
//! A counting global allocator, switched on per thread by the engine's
//! phase hook (as `zero_alloc_h2` does for HTTP/2). Skips visibly when
//! python3 lacks aioquic, except under CI (`CI=true`).
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use metronome_core::engine::Control;
use metronome_core::plan::{example_plan, EncodedRequest, Streams, Wire};
use metronome_testkit::{count_on_this_thread, Counting, ALLOCATIONS};
use metronome_uring::{run, Phase, Tls, UringOptions};

static MEASURING_THREADS: AtomicU64 = AtomicU64::new(0);

// The counter is process-wide: this test is a binary of its own.
#[global_allocator]
static GLOBAL: Counting = Counting;

fn hook(phase: Phase) {
    match phase {
        Phase::Measuring => {
            MEASURING_THREADS.fetch_add(1, Ordering::Relaxed);
            count_on_this_thread(true);
        }
        Phase::Draining => {}
        Phase::Done => count_on_this_thread(false),
    }
}

/// 400 GETs at 400 req/s on 2 pre-opened HTTP/3 connections (one per
/// thread): all answered, none opened during the run, and fewer than 12
/// allocations per request on the engine threads, all of them quinn's
/// (measured: 6.1 to 6.2 per request on Linux 6.18 with aioquic 1.7.2).
#[test]
fn uring_h3_allocations_per_request_are_bounded() {
    if metronome_uring::probe().is_err() {
        eprintln!("SKIP uring_h3_allocations_per_request_are_bounded: no io_uring here");
        return;
    }
    let aioquic = Command::new("python3")
        .args(["-c", "import aioquic"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !aioquic {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI must install aioquic (pip install aioquic==1.7.2)"
        );
        eprintln!("SKIP: aioquic is not installed (pip install aioquic==1.7.2)");
        return;
    }
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let dir = std::env::temp_dir();
    let cert = dir.join(format!(
        "metronome-alloc-h3-{}.cert.pem",
        std::process::id()
    ));
    let key = dir.join(format!("metronome-alloc-h3-{}.key.pem", std::process::id()));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/h3_server.py");
    let mut child = Command::new("python3")
        .args([script, cert.to_str().unwrap(), key.to_str().unwrap()])
        .args(["ok", "0", "60"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run python3");
    // The reader stays open for the run: the server prints a line per
    // connection, and a closed pipe would stop it.
    let mut lines = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    lines.read_line(&mut line).unwrap();
    let port: u16 = line.trim().parse().expect("the server prints its port");

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ck.cert.der().clone()).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tls = Tls::new(
        Arc::new(client),
        rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap(),
        Arc::default(),
    );
    let opts = UringOptions {
        threads: Some(2),
        phase_hook: Some(hook),
        tls: Some(tls),
        ..UringOptions::default()
    };
    let msg = format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    let mut block = vec![0u8; 512];
    let e = metronome_core::h3::request::from_http1(msg.as_bytes(), b"https", &mut block).unwrap();
    block.truncate(e.len);
    let h3 = [EncodedRequest {
        block: &block,
        body: &msg.as_bytes()[e.body_at..],
        list_size: e.list_size,
    }];
    let requests = [msg.as_bytes()];
    let mut p = example_plan();
    p.addr = ([127, 0, 0, 1], port).into();
    p.requests = &requests;
    p.rate = 400.0;
    p.duration_ns = 1_000_000_000;
    p.connections = 2;
    p.max_connections = 2;
    p.wire = Wire::Http3(Streams {
        requests: &h3,
        max_streams: 0,
    });
    let out = run(&p, &Control::default(), &opts);
    let _ = child.kill();
    let _ = child.wait();
    drop(lines);
    let _ = std::fs::remove_file(&cert);
    let _ = std::fs::remove_file(&key);
    let out = out.unwrap();
    assert_eq!(out.recorder.scheduled, 400);
    assert_eq!(
        out.recorder.ok, 400,
        "{:?} {:?}",
        out.recorder, out.warnings
    );
    assert_eq!(
        out.connections_opened, 2,
        "no connection may be opened during the run"
    );
    assert_eq!(MEASURING_THREADS.swap(0, Ordering::Relaxed), 2);
    let allocations = ALLOCATIONS.swap(0, Ordering::Relaxed);
    eprintln!(
        "HTTP/3 on io_uring: {allocations} allocations for {} requests ({:.1} per request)",
        out.recorder.ok,
        allocations as f64 / out.recorder.ok as f64
    );
    assert!(
        allocations < 12 * out.recorder.ok,
        "{allocations} allocations for {} requests",
        out.recorder.ok
    );
}
