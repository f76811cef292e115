//! End-to-end tests of `metronome run --http3` (on each engine) against
//! aioquic's HTTP/3 server (tests/h3_server.py): every request answered,
//! every stream reset, the connection closed with a code, no answer at
//! all, an OpenAI-style stream. They skip visibly when python3 lacks aioquic, except under CI
//! (`CI=true`), where `.ci/run` installs it and a skip is a failure.
//! Real time: exact counts where the answer is exact, else relations.

use crate::common;

use common::quic_peer::{aioquic, PyQuicServer, QuicCert as Cert};
use common::{engines, metronome, run_url_json, run_url_json_checked};

/// tests/h3_server.py in `mode` (its name, and N for `close`), running
/// (killed on drop; it exits by itself when its stdin closes or after
/// 120 s).
fn h3_server(cert: &Cert, mode: &[&str]) -> PyQuicServer {
    let mut args = mode.to_vec();
    if mode.len() == 1 {
        args.push("0");
    }
    args.push("120");
    PyQuicServer::start("h3_server.py", cert, &args)
}

/// Stops `srv` and returns the close codes it saw, one per connection
/// ended ("0x105"), from its "closed 0xCODE" lines.
fn closes(srv: &mut PyQuicServer) -> Vec<String> {
    srv.events()
        .iter()
        .filter_map(|l| l.strip_prefix("closed ").map(str::to_string))
        .collect()
}

/// 1 000 requests at 500 req/s over HTTP/3, the certificate trusted with
/// --cacert: every one sent, answered 200 and counted once; the report
/// says h3 and its handshakes agreed ALPN h3.
#[test]
fn h3_every_request_ok() {
    if !aioquic() {
        return;
    }
    let cert = Cert::new("ok");
    let srv = h3_server(&cert, &["ok"]);
    for engine in engines() {
        eprintln!("HTTP/3 on the {engine} engine");
        let r = run_url_json(
            &srv.url(),
            engine,
            &[
                "--http3",
                "--cacert",
                cert.cacert(),
                "--rate",
                "500",
                "--duration",
                "2s",
                "--connections",
                "2",
                "--timeout",
                "5s",
            ],
            0,
        );
        assert_eq!(r.protocol.as_deref(), Some("h3"));
        assert_eq!(r.requests.scheduled, 1000);
        assert_eq!(r.requests.sent, 1000);
        assert_eq!(r.requests.ok, 1000, "{engine}: {:?}", r.errors);
        assert_eq!(r.requests.errors, 0);
        assert_eq!(r.metrics.latency.count, 1000);
        let opened = r.generator.connections_opened;
        assert!(opened >= 2, "{opened} connections opened");
        assert_eq!(r.connections.alpn.get("h3"), Some(&opened));
        // The server's stream limit is QUIC's: aioquic 1.7.2 allows 128.
        let h = r.connections.h2.expect("stream counts");
        assert_eq!(
            (h.client_max_streams, h.server_max_streams),
            (100, Some(128))
        );
        // Latency is charged from the intended time: never below the service time.
        assert!(r.metrics.latency.p50 >= r.metrics.service_time.p50);
    }
}

/// Every stream reset by the server (H3_REQUEST_CANCELLED) is a `reset`.
#[test]
fn h3_stream_reset_is_reset() {
    if !aioquic() {
        return;
    }
    let cert = Cert::new("reset");
    let srv = h3_server(&cert, &["reset"]);
    for engine in engines() {
        eprintln!("HTTP/3 on the {engine} engine");
        let r = run_url_json_checked(
            &srv.url(),
            engine,
            &[
                "--http3",
                "--cacert",
                cert.cacert(),
                "--rate",
                "200",
                "--duration",
                "1s",
                "--connections",
                "1",
            ],
        );
        assert_eq!(r.requests.sent, 200);
        assert_eq!(r.requests.ok, 0);
        assert_eq!(r.requests.errors, 200);
        assert_eq!(
            r.errors.by_kind.get("reset"),
            Some(&200),
            "{engine}: {:?}",
            r.errors
        );
    }
}

/// A server that answers each request with a DATA frame before any
/// HEADERS (RFC 9114 section 4.1 forbids it): every request is
/// `bad_framing` with the cause `http3_protocol`, not HTTP/2's.
#[test]
fn h3_malformed_response_is_http3_protocol() {
    if !aioquic() {
        return;
    }
    let cert = Cert::new("malformed");
    let srv = h3_server(&cert, &["malformed"]);
    for engine in engines() {
        eprintln!("HTTP/3 on the {engine} engine");
        let r = run_url_json_checked(
            &srv.url(),
            engine,
            &[
                "--http3",
                "--cacert",
                cert.cacert(),
                "--rate",
                "100",
                "--duration",
                "1s",
                "--connections",
                "1",
            ],
        );
        assert_eq!(
            (r.requests.sent, r.requests.ok),
            (100, 0),
            "{engine}: {:?}",
            r.errors
        );
        assert_eq!(
            r.errors.by_kind.get("bad_framing"),
            Some(&100),
            "{engine}: {:?}",
            r.errors
        );
        assert_eq!(
            r.errors.bad_framing_by_cause.get("http3_protocol"),
            Some(&100),
            "{engine}: {:?}",
            r.errors
        );
        assert_eq!(
            r.errors.bad_framing_by_cause.get("http2_protocol"),
            Some(&0)
        );
    }
}

/// A server that never answers: every request is a timeout.
#[test]
fn h3_silent_server_times_out() {
    if !aioquic() {
        return;
    }
    let cert = Cert::new("silent");
    let srv = h3_server(&cert, &["silent"]);
    for engine in engines() {
        eprintln!("HTTP/3 on the {engine} engine");
        let r = run_url_json_checked(
            &srv.url(),
            engine,
            &[
                "--http3",
                "--cacert",
                cert.cacert(),
                "--rate",
                "50",
                "--duration",
                "1s",
                "--connections",
                "1",
                "--timeout",
                "300ms",
            ],
        );
        assert_eq!(r.requests.sent, 50);
        assert_eq!(r.requests.ok, 0);
        assert_eq!(r.requests.timeouts, 50);
        assert_eq!(
            r.errors.by_kind.get("timeout"),
            Some(&50),
            "{engine}: {:?}",
            r.errors
        );
    }
}

/// The server closes each connection with H3_INTERNAL_ERROR (0x102) when
/// its 51st request arrives: each connection answers at most 50, the
/// requests a close cuts are `reset`, the code is in the report's
/// warnings, and the engine opens new connections to go on.
#[test]
fn h3_connection_close_counts() {
    if !aioquic() {
        return;
    }
    let cert = Cert::new("close");
    let srv = h3_server(&cert, &["close", "50"]);
    for engine in engines() {
        eprintln!("HTTP/3 on the {engine} engine");
        let r = run_url_json_checked(
            &srv.url(),
            engine,
            &[
                "--http3",
                "--cacert",
                cert.cacert(),
                "--rate",
                "100",
                "--duration",
                "2s",
                "--connections",
                "1",
            ],
        );
        assert_eq!(r.requests.sent, 200);
        let reset = r.errors.by_kind.get("reset").copied().unwrap_or(0);
        assert_eq!(r.requests.ok + reset, 200, "{engine}: {:?}", r.errors);
        let opened = r.generator.connections_opened;
        // At most 50 answers per connection, so at least 4 connections.
        assert!(
            r.requests.ok <= 50 * opened,
            "{} ok on {opened}",
            r.requests.ok
        );
        assert!(opened >= 4, "{opened} connections");
        // Each close (every connection but the last ones) cut at least its
        // 51st request.
        assert!(reset >= 1, "{engine}: {:?}", r.errors);
        let json = serde_json::to_string(&r).unwrap();
        assert!(
            json.contains("closed the connection with code 0x102"),
            "no close code in the warnings: {:?}",
            r.generator.warnings
        );
    }
}

/// `--openai` over HTTP/3: the stream goes through the exchange HTTP/2
/// uses: TTFT at the first content chunk (the server waits 60 ms), four
/// gaps of about 20 ms per 5-token stream, every stream complete.
#[test]
fn h3_openai_sse_ttft_itl() {
    if !aioquic() {
        return;
    }
    let cert = Cert::new("sse");
    let srv = h3_server(&cert, &["sse"]);
    for engine in engines() {
        eprintln!("HTTP/3 on the {engine} engine");
        let r = run_url_json(
            &srv.url(),
            engine,
            &[
                "--http3",
                "--cacert",
                cert.cacert(),
                "--openai",
                "--model",
                "m",
                "--max-tokens",
                "5",
                "--rate",
                "20",
                "--duration",
                "1s",
                "--connections",
                "1",
            ],
            0,
        );
        let tol = 40.0;
        assert_eq!(r.requests.ok, 20, "{engine}: {:?}", r.errors);
        let m = &r.metrics;
        assert_eq!(m.ttft.count, 20);
        assert!(
            m.ttft.min >= 60.0 && m.ttft.p50 <= 60.0 + tol,
            "ttft {:?}",
            m.ttft
        );
        assert_eq!(m.itl.count, 20 * 4, "4 gaps per 5-token stream");
        assert!(
            m.itl.p50 >= 20.0 - 15.0 && m.itl.p50 <= 20.0 + 15.0,
            "itl {:?}",
            m.itl
        );
        assert!(m.latency.min >= 140.0, "e2e {:?}", m.latency);
    }
}

/// `--http3 --openai` without `--model` discovers it over HTTP/3, with
/// the run's `--cacert`, on both engines: aioquic listens on UDP only.
/// (Before: discovery spoke HTTP/1.1 over TCP, "cannot discover the model
/// ... Connection refused ... is the server up?", exit 1.)
#[test]
fn h3_openai_discovers_the_model_over_http3() {
    if !aioquic() {
        return;
    }
    let cert = Cert::new("discover");
    let srv = h3_server(&cert, &["sse"]);
    for engine in engines() {
        let out = metronome(&[
            "run",
            &srv.url(),
            "--http3",
            "--cacert",
            cert.cacert(),
            "--openai",
            "--max-tokens",
            "5",
            "--rate",
            "10",
            "--duration",
            "500ms",
            "--quiet",
            "--engine",
            engine,
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{engine}: {err}");
        assert!(
            err.contains("metronome: model: aioquic-model (from /v1/models)"),
            "{engine}: {err}"
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("requests: scheduled 5  sent 5  ok 5"),
            "{engine}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

/// A certificate not trusted (no --cacert): exit 1, one line naming the
/// refused certificate and the flags; `--insecure` runs. On each engine.
#[test]
fn h3_untrusted_certificate_exits_1_with_one_line() {
    if !aioquic() {
        return;
    }
    let cert = Cert::new("untrusted");
    let srv = h3_server(&cert, &["ok"]);
    let url = srv.url();
    for engine in engines() {
        let base = [
            "run",
            &url,
            "--http3",
            "--engine",
            engine,
            "--rate",
            "10",
            "--duration",
            "200ms",
        ];
        let out = metronome(&[&base[..], &["--quiet"]].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{engine}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{engine}: {stderr}");
        assert!(
            stderr.contains("QUIC handshake failed")
                && stderr.contains("certificate")
                && stderr.contains("--cacert"),
            "{engine}: {stderr}"
        );
        let r = run_url_json(
            &url,
            engine,
            &[
                "--http3",
                "--insecure",
                "--rate",
                "10",
                "--duration",
                "200ms",
            ],
            0,
        );
        assert_eq!(r.requests.ok, 2, "{engine}: {:?}", r.errors);
    }
}

/// `--http3` is refused, one line and exit 2, on an http:// URL, on
/// every engine choice.
#[test]
fn h3_refusals() {
    for engine in ["std", "uring", "auto"] {
        let args = [
            "run",
            "http://127.0.0.1:9/",
            "--http3",
            "--engine",
            engine,
            "--duration",
            "1s",
        ];
        let want = "--http3 is HTTP/3 over QUIC, for an https:// URL only";
        let out = metronome(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(want),
            "{args:?}: want '{want}' in: {stderr}"
        );
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
    }
}

/// A server that sends GOAWAY when the 51st request of a connection
/// arrives (its stream ID: that request and any later one unprocessed;
/// once per server run, so a retried request is never refused again,
/// which would fail it as `reset`): every request is still answered `ok`
/// (the refused ones sent once more on a fresh connection, counted once in
/// `sent`, and in `retried`), on at least 2 connections, each closed by the
/// client with H3_NO_ERROR.
#[test]
fn h3_goaway_retries_on_a_fresh_connection() {
    if !aioquic() {
        return;
    }
    let cert = Cert::new("goaway");
    for engine in engines() {
        eprintln!("HTTP/3 on the {engine} engine");
        let mut srv = h3_server(&cert, &["goaway", "50"]);
        let r = run_url_json_checked(
            &srv.url(),
            engine,
            &[
                "--http3",
                "--cacert",
                cert.cacert(),
                "--rate",
                "100",
                "--duration",
                "2s",
                "--connections",
                "1",
            ],
        );
        assert_eq!(
            (r.requests.sent, r.requests.ok),
            (200, 200),
            "{engine}: {:?}",
            r.errors
        );
        let opened = r.generator.connections_opened;
        assert!(
            opened >= 2,
            "{opened} connections for 200 requests, 50 each"
        );
        assert!(r.requests.retried >= 1, "{} retried", r.requests.retried);
        let closes = closes(&mut srv);
        assert!(
            !closes.is_empty() && closes.iter().all(|c| c == "0x100"),
            "every connection is closed with H3_NO_ERROR: {closes:?}"
        );
    }
}

/// The server's SETTINGS carry MAX_FIELD_SECTION_SIZE (large enough for
/// the requests) and a reserved setting: every request is answered.
#[test]
fn h3_server_settings_are_read() {
    if !aioquic() {
        return;
    }
    let cert = Cert::new("settings");
    for engine in engines() {
        eprintln!("HTTP/3 on the {engine} engine");
        let srv = h3_server(&cert, &["settings", "4096"]);
        let r = run_url_json_checked(
            &srv.url(),
            engine,
            &[
                "--http3",
                "--cacert",
                cert.cacert(),
                "--rate",
                "100",
                "--duration",
                "1s",
                "--connections",
                "1",
            ],
        );
        assert_eq!(
            (r.requests.sent, r.requests.ok),
            (100, 100),
            "{engine}: {:?}",
            r.errors
        );
    }
}

/// A server that sends a second SETTINGS on its control stream when the
/// 21st request of a connection arrives: the client closes each such
/// connection with H3_FRAME_UNEXPECTED (0x105, seen by the server); the
/// requests caught in it (at least the 21st) are bad framing
/// (`http3_protocol`), the rest `ok`; the warning names the code.
#[test]
fn h3_control_stream_violation_closes_with_its_code() {
    if !aioquic() {
        return;
    }
    let cert = Cert::new("violate");
    for engine in engines() {
        eprintln!("HTTP/3 on the {engine} engine");
        let mut srv = h3_server(&cert, &["violate", "20"]);
        let r = run_url_json_checked(
            &srv.url(),
            engine,
            &[
                "--http3",
                "--cacert",
                cert.cacert(),
                "--rate",
                "50",
                "--duration",
                "2s",
                "--connections",
                "1",
            ],
        );
        assert_eq!(r.requests.sent, 100);
        let bad = r.errors.by_kind.get("bad_framing").copied().unwrap_or(0);
        assert_eq!(r.requests.ok + bad, 100, "{engine}: {:?}", r.errors);
        assert_eq!(
            r.errors.bad_framing_by_cause.get("http3_protocol").copied(),
            Some(bad)
        );
        let opened = r.generator.connections_opened;
        assert!(
            r.requests.ok <= 20 * opened,
            "{} ok on {opened}",
            r.requests.ok
        );
        assert!(opened >= 2, "{opened} connections for 100 requests");
        let closes = closes(&mut srv);
        let violated = closes.iter().filter(|c| *c == "0x105").count() as u64;
        // Each violation ends at least its 21st request as bad framing.
        assert!(
            violated >= 1 && violated <= bad,
            "{bad} bad framing, the server saw these closes: {closes:?}"
        );
        assert!(
            closes.iter().all(|c| c == "0x105" || c == "0x100"),
            "{closes:?}"
        );
        let json = serde_json::to_string(&r).unwrap();
        assert!(
            json.contains("H3_FRAME_UNEXPECTED (0x105)"),
            "no code in the warnings: {:?}",
            r.generator.warnings
        );
    }
}

/// The server's SETTINGS_MAX_FIELD_SECTION_SIZE is 100 bytes, below the
/// requests' sections (four pseudo-headers alone count 4 x 32 and their
/// names and values): no request is sent once the SETTINGS are in (a
/// request sent before them may be answered); the ones not sent are
/// `unsent` (reason `too_large`: this server cannot take them, none is
/// blamed on the connection) and the warning names the limit.
#[test]
fn h3_server_section_limit_is_kept() {
    if !aioquic() {
        return;
    }
    let cert = Cert::new("section");
    for engine in engines() {
        eprintln!("HTTP/3 on the {engine} engine");
        let srv = h3_server(&cert, &["settings", "100"]);
        let r = run_url_json_checked(
            &srv.url(),
            engine,
            &[
                "--http3",
                "--cacert",
                cert.cacert(),
                "--rate",
                "100",
                "--duration",
                "1s",
                "--connections",
                "1",
            ],
        );
        assert_eq!(r.requests.scheduled, 100);
        assert_eq!(
            r.requests.ok + r.requests.unsent,
            100,
            "{engine}: {:?}",
            r.errors
        );
        assert_eq!(r.requests.sent, r.requests.ok, "{engine}: {:?}", r.errors);
        // The connection was opened before the clock: its SETTINGS came first.
        assert!(r.requests.unsent >= 90, "{:?}", r.requests);
        assert_eq!(
            r.errors.unsent_by_reason.get("too_large").copied(),
            Some(r.requests.unsent),
            "{engine}"
        );
        assert_eq!(r.errors.unsent_by_reason.get("connect").copied(), Some(0));
        let json = serde_json::to_string(&r).unwrap();
        assert!(
            json.contains("SETTINGS_MAX_FIELD_SECTION_SIZE (100 bytes)"),
            "{:?}",
            r.generator.warnings
        );
    }
}

/// A server that sends GOAWAY at its first connection's 21st request and
/// answers every request 1 s after it arrives, so a connection drains for
/// up to 1 s after its GOAWAY: with one connection allowed, the next
/// connection still opens at once, beside the draining one (the server
/// sees a second "open" before the first connection's close), and every
/// request is `ok`, and the median latency stays below 1.5 s. On each
/// engine (the io_uring engine drains a retired connection in a spare
/// slot).
#[test]
fn h3_goaway_opens_the_next_connection_while_draining() {
    if !aioquic() {
        return;
    }
    let cert = Cert::new("goaway-slow");
    for engine in engines() {
        eprintln!("HTTP/3 on the {engine} engine");
        let mut srv = h3_server(&cert, &["goaway-slow", "20"]);
        let r = run_url_json_checked(
            &srv.url(),
            engine,
            &[
                "--http3",
                "--cacert",
                cert.cacert(),
                "--rate",
                "50",
                "--duration",
                "1s",
                "--connections",
                "1",
                "--max-connections",
                "1",
                "--timeout",
                "10s",
            ],
        );
        assert_eq!(
            (r.requests.sent, r.requests.ok),
            (50, 50),
            "{engine}: {:?}",
            r.errors
        );
        assert!(r.requests.retried >= 1, "{} retried", r.requests.retried);
        // The requests after the GOAWAY do not wait for the drain (up to
        // 1 s more): the median stays near the server's 1 s.
        assert!(
            r.metrics.latency.p50 < 1500.0,
            "{engine}: latency {:?}",
            r.metrics.latency
        );
        let events = srv.events();
        let first_close = events.iter().position(|e| e.starts_with("closed"));
        let second_open = events
            .iter()
            .enumerate()
            .filter(|(_, e)| *e == "open")
            .nth(1)
            .map(|(i, _)| i);
        assert!(
            matches!((second_open, first_close), (Some(o), Some(c)) if o < c),
            "the second connection opened after the first closed: {events:?}"
        );
    }
}
