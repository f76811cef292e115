//! `run --http3-0rtt` end to end: against aioquic (tests/h3_server.py in
//! mode `recycle`, a GOAWAY after N answers on every connection, so the
//! run opens new connections all along) keeping its session tickets
//! (0-RTT accepted: the client's count equals the server's), forgetting
//! them (0-RTT rejected: the early requests sent again, every one
//! answered), and without the flag (no 0-RTT, zeros reported); against
//! `serve --http3`, whose pool grows under load (0-RTT accepted).
//!
//! The aioquic tests skip visibly when python3 lacks aioquic, except under
//! CI (`CI=true`), where a skip is a failure. Real time: exact counts
//! where the answer is exact (every request answered, accepted equals the
//! server's count), relations where it depends on timing (how many
//! requests a handshake had time to carry).

use std::time::Duration;

use metronome::report::{Report, ZeroRttReport};
use metronome::serve::ServeConfig;

use crate::common::quic_peer::{aioquic, PyQuicServer, QuicCert as Cert};
use crate::common::run_url_json;
use crate::serve_h3::H3Serve;

/// Answers per connection before its GOAWAY.
const RECYCLE: u64 = 50;

/// tests/h3_server.py in mode `recycle` with session tickets `tickets`
/// (`keep`, `forget`).
fn recycling(cert: &Cert, tickets: &str) -> PyQuicServer {
    let n = RECYCLE.to_string();
    PyQuicServer::start("h3_server.py", cert, &["recycle", &n, "120", tickets])
}

/// 400 requests at 200 req/s (`--http3`, one pre-opened connection,
/// `extra` flags) against `srv`; every one must be answered 200, once.
fn run_recycled(srv: &PyQuicServer, cert: &Cert, extra: &[&str]) -> Report {
    let mut args = vec![
        "--http3",
        "--cacert",
        cert.cacert(),
        "--rate",
        "200",
        "--duration",
        "2s",
        "--connections",
        "1",
        "--timeout",
        "10s",
    ];
    args.extend_from_slice(extra);
    let r = run_url_json(&srv.url(), "std", &args, 0);
    assert_eq!(r.requests.scheduled, 400);
    assert_eq!(r.requests.sent, 400, "{:?}", r.requests);
    assert_eq!(r.requests.ok, 400, "{:?} {:?}", r.requests, r.errors);
    assert_eq!(r.errors.by_kind.values().sum::<u64>(), 0);
    // Every GOAWAY leaves room for what the client sent: nothing refused.
    assert_eq!(r.requests.retried, 0);
    r
}

/// The report's 0-RTT counts (present on every h3 run).
fn zero_rtt(r: &Report) -> ZeroRttReport {
    r.connections
        .h3_0rtt
        .expect("connections.h3_0rtt on an h3 run")
}

/// Tickets kept: every connection after the first resumes and its 0-RTT
/// is accepted (the client's count equals the server's "early" lines),
/// some requests leave in 0-RTT, none is sent again; an accepted 0-RTT
/// counts as a resumption.
#[test]
fn h3_0rtt_accepted_by_aioquic() {
    if !aioquic() {
        return;
    }
    let cert = Cert::new("0rtt-keep");
    let mut srv = recycling(&cert, "keep");
    let r = run_recycled(&srv, &cert, &["--http3-0rtt"]);
    let z = zero_rtt(&r);
    let early = srv.events().iter().filter(|l| *l == "early").count() as u64;
    assert!(z.enabled);
    // 400 requests, a GOAWAY every 50 answers: about 8 connections.
    let opened = r.generator.connections_opened;
    assert!(opened >= 400 / RECYCLE, "{opened} connections");
    assert!(z.attempted >= opened / 2, "{z:?} of {opened}");
    assert!(z.attempted < opened, "the first connection holds no ticket");
    assert_eq!(z.accepted, z.attempted, "{z:?}");
    assert_eq!(z.rejected, 0);
    assert_eq!(z.accepted, early, "the server's count");
    assert!(z.requests > 0, "{z:?}");
    assert_eq!(z.resent, 0);
    assert_eq!(r.connections.tls_resumed, z.accepted);
    // Every handshake timed, those completed under 0-RTT load included.
    let shaken = r.connections.tls_handshake.as_ref().map(|m| m.count);
    assert_eq!(shaken, Some(opened));
}

/// Tickets forgotten (as a server restarted with a new key): every
/// attempt is rejected, the requests sent in 0-RTT are sent again in
/// 1-RTT (all of them: none timed out before its handshake completed)
/// and every request is answered once.
#[test]
fn h3_0rtt_rejected_requests_sent_again() {
    if !aioquic() {
        return;
    }
    let cert = Cert::new("0rtt-forget");
    let mut srv = recycling(&cert, "forget");
    let r = run_recycled(&srv, &cert, &["--http3-0rtt"]);
    let z = zero_rtt(&r);
    let early = srv.events().iter().filter(|l| *l == "early").count();
    assert!(z.enabled);
    assert!(z.attempted >= r.generator.connections_opened / 2, "{z:?}");
    assert_eq!(z.accepted, 0);
    assert_eq!(z.rejected, z.attempted);
    assert_eq!(early, 0);
    assert!(z.requests > 0, "{z:?}");
    assert_eq!(z.resent, z.requests);
    assert_eq!(r.connections.tls_resumed, 0);
}

/// Without `--http3-0rtt`, a server that keeps tickets sees no early
/// data: zeros reported, `enabled` false, the server counts none; the
/// connections after the first still resume their TLS session (the
/// server says so; quinn does not tell the client).
#[test]
fn h3_0rtt_off_by_default() {
    if !aioquic() {
        return;
    }
    let cert = Cert::new("0rtt-off");
    let mut srv = recycling(&cert, "keep");
    let r = run_recycled(&srv, &cert, &[]);
    let events = srv.events();
    let count = |what: &str| events.iter().filter(|l| *l == what).count() as u64;
    let opened = r.generator.connections_opened;
    assert!(opened >= 400 / RECYCLE);
    assert_eq!(zero_rtt(&r), ZeroRttReport::default());
    assert_eq!(count("early"), 0);
    assert!(count("resumed") >= opened / 2, "{events:?}");
    assert!(count("resumed") < opened, "the first connection cannot");
}

/// `serve --http3` accepts 0-RTT: a FIFO server at 30 ms a request
/// driven at 60 req/s, one stream per connection, so the pool grows
/// during the run and its new connections resume with the first one's
/// ticket; every request is answered, every attempt accepted.
#[test]
fn h3_0rtt_accepted_by_serve() {
    let mut srv = H3Serve::start(
        "0rtt",
        ServeConfig {
            service: Duration::from_millis(30),
            ..ServeConfig::default()
        },
    );
    let r = srv.run(
        "/",
        &[
            "--http3-0rtt",
            "--rate",
            "60",
            "--duration",
            "1s",
            "--connections",
            "1",
            "--max-connections",
            "6",
            "--max-streams",
            "1",
            "--timeout",
            "30s",
        ],
    );
    assert_eq!(r.requests.ok, 60, "{:?} {:?}", r.requests, r.errors);
    let z = zero_rtt(&r);
    assert!(r.generator.connections_opened > 1);
    assert!(z.attempted > 0, "{z:?}");
    assert_eq!(z.accepted, z.attempted, "{z:?}");
    assert_eq!(z.rejected + z.resent, 0, "{z:?}");
    assert_eq!(srv.stop(), 60);
}

/// `--http3-0rtt` alone is a usage error naming `--http3`, and with
/// `--engine uring` one naming the std engine (exit 2, the target never
/// contacted).
#[test]
fn h3_0rtt_needs_http3() {
    let out = crate::common::metronome(&["run", "https://127.0.0.1:9/", "--http3-0rtt"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--http3-0rtt needs --http3"), "{stderr}");
    let out = crate::common::metronome(&[
        "run",
        "https://127.0.0.1:9/",
        "--http3",
        "--http3-0rtt",
        "--engine",
        "uring",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("runs on the std engine"), "{stderr}");
}
