//! The hostile scenarios over HTTP/3 (`--http3`, on each engine): a server that
//! goes silent behind a short idle timeout, breaks a response head in each
//! way a client must refuse (a section above the advertised size, a
//! dynamic-table reference, a bad Huffman string, an uppercase name, no or
//! a non-numeric `:status`) or sends a response's frames out of order,
//! breaks its control or QPACK streams, sends what must be ignored
//! (reserved frame, setting and stream types) or what is valid but rare
//! (a 103 head and trailers, a Retry), never ends a body, trickles a
//! response a byte per datagram, resets a stream after its head, allows
//! one stream at a time, opens thousands of streams, or sprays garbage
//! datagrams. Each run is short and bounded, with exact counts and kinds.
//!
//! The server is tests/h3_hostile.py, on aioquic's QUIC layer only: its
//! HTTP/3 frames and QPACK bytes are written there by hand from RFC 9114
//! and RFC 9204, not by core's code, so a shared misreading cannot make
//! both ends agree. Without aioquic the tests skip visibly, except under
//! CI (`CI=true`), where they fail.

use std::time::{Duration, Instant};

use crate::case::{Run, N, SHORT, SLOW, SPACED};
use crate::common::quic_peer::{aioquic, PyQuicServer, QuicCert};
use crate::common::{engines, run_url_json_checked};
use crate::script::Seen;

/// What the server said of one connection at its exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Conn {
    handshaken: bool,
    requests: u64,
    /// The connection's close code (the client's, unless the server
    /// closed first), when it was closed.
    close: Option<u64>,
    /// Unidirectional streams the server opened (or queued, past the
    /// client's limit).
    uni: u64,
    /// The client's last limit on the server's unidirectional streams.
    granted: u64,
}

/// One run against tests/h3_hostile.py: the report (as a [`Run`], with
/// the server's counts as its [`Seen`]) and the server's connections.
pub(crate) struct H3Run {
    pub(crate) run: Run,
    conns: Vec<Conn>,
}

impl H3Run {
    /// The close codes of the connections that carried a request.
    fn closes(&self) -> Vec<Option<u64>> {
        self.conns
            .iter()
            .filter(|c| c.requests > 0)
            .map(|c| c.close)
            .collect()
    }
}

/// [`run_on`] on each engine, one after the other.
fn runs(mode: &str, args: &[&str]) -> Vec<H3Run> {
    engines()
        .into_iter()
        .map(|engine| run_on(engine, mode, args))
        .collect()
}

/// Runs `metronome run --http3` on `engine` with `args` (and `--warm-up
/// off`: the server numbers every request) against a fresh
/// tests/h3_hostile.py in `mode`, then stops the server and reads its
/// connections.
fn run_on(engine: &'static str, mode: &str, args: &[&str]) -> H3Run {
    run_server(engine, &[mode, "60"], "", args)
}

/// [`run_on`] with the server's arguments `server` (MODE SECONDS and
/// more), on the URL's path `path` (after the `/`).
pub(crate) fn run_server(
    engine: &'static str,
    server: &[&str],
    path: &str,
    args: &[&str],
) -> H3Run {
    let mode = server[0];
    let cert = QuicCert::new(&format!("hostile-{mode}"));
    let mut server = PyQuicServer::start("h3_hostile.py", &cert, server);
    let mut all = vec!["--http3", "--cacert", cert.cacert(), "--warm-up", "off"];
    all.extend_from_slice(args);
    let t = Instant::now();
    let report = run_url_json_checked(&format!("{}{path}", server.url()), engine, &all);
    let elapsed = t.elapsed();
    // Every run ends, whatever the server does: a generous bound for a
    // loaded machine (the scenarios' own bounds are tighter).
    assert!(elapsed < Duration::from_secs(15), "{mode}: ran {elapsed:?}");
    let conns: Vec<Conn> = server
        .events()
        .iter()
        .filter_map(|l| conn_line(l))
        .collect();
    let seen = Seen {
        accepted: conns.iter().filter(|c| c.handshaken).count() as u64,
        used: conns.iter().filter(|c| c.requests > 0).count() as u64,
        requests: conns.iter().map(|c| c.requests).sum(),
        resets: 0,
    };
    H3Run {
        run: Run {
            engine,
            report,
            seen,
            elapsed,
        },
        conns,
    }
}

/// "conn HANDSHAKEN REQUESTS CLOSE UNI GRANTED", as the server prints it.
fn conn_line(line: &str) -> Option<Conn> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let [_, handshaken, requests, close, uni, granted] = f[..] else {
        return None;
    };
    if f[0] != "conn" {
        return None;
    }
    Some(Conn {
        handshaken: handshaken == "1",
        requests: requests.parse().ok()?,
        close: close
            .strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok()),
        uni: uni.parse().ok()?,
        granted: granted.parse().ok()?,
    })
}

/// Every run here ends in a few seconds, whatever the server does.
#[track_caller]
fn bounded(r: &H3Run, case: &str, within: Duration) {
    assert!(r.run.elapsed < within, "not bounded: {}", r.run.ctx(case));
}

/// H3_NO_ERROR: the client's graceful close at the run's end.
const NO_ERROR: u64 = 0x100;

/// The baseline: the hand-built answers are valid HTTP/3 (so the broken
/// ones below differ from them in one thing only).
#[test]
fn h3_hand_built_answers_are_ok() {
    if !aioquic() {
        return;
    }
    for r in runs("ok", SHORT) {
        r.run.expect("h3 ok", N, N, &[]);
        r.run.expect_connections("h3 ok", 1);
        assert_eq!(r.closes(), [Some(NO_ERROR)], "{}", r.run.ctx("h3 ok"));
    }
}

/// A server that goes silent after the handshake (no answer, no ACK)
/// with a 300 ms max_idle_timeout: the requests in flight end when the
/// connection reaches its idle timeout, as timeouts, long before their
/// own 5 s --timeout; the warning says idle timeout, and the next
/// requests go on new connections.
#[test]
fn h3_idle_timeout_ends_requests_as_timeouts() {
    if !aioquic() {
        return;
    }
    let args = ["--timeout", "5s"];
    let spaced: Vec<&str> = SPACED
        .iter()
        .copied()
        .take_while(|a| *a != "--timeout")
        .chain(args)
        .collect();
    for r in runs("idle", &spaced) {
        let ctx = r.run.ctx("h3 idle");
        r.run.expect("h3 idle", N, 0, &[("timeout", N)]);
        assert_eq!(r.run.requests().timeouts, N, "{ctx}");
        // Ten requests over 900 ms, connections dying 300 ms (or three probe
        // timeouts, if longer on a loaded machine) after their last packet
        // from the server: more than one connection.
        assert!(r.run.generator().connections_opened >= 2, "{ctx}");
        assert!(r.conns.len() >= 2, "{ctx}");
        assert!(
            r.run
                .generator()
                .warnings
                .iter()
                .any(|w| w.contains("idle timeout")),
            "no idle-timeout warning: {:?}",
            r.run.generator().warnings
        );
        // Ended by the idle timeout, not by --timeout 5s (the run would last
        // 1 s + 5 s).
        bounded(&r, "h3 idle", Duration::from_millis(4500));
    }
}

/// Broken response heads, and frames out of a response's order (DATA or
/// HEADERS after the trailers, DATA after an informational head), every
/// other request: each broken one is
/// `bad_framing` with the cause `http3_protocol`, its stream reset, and
/// the others are answered on the same connection (for a dynamic-table
/// reference, a QPACK connection error in RFC 9204, on new connections
/// if the client closes the connection).
#[test]
fn h3_broken_heads_are_http3_protocol_and_the_rest_ok() {
    if !aioquic() {
        return;
    }
    for mode in [
        "big_headers",
        "dynamic_ref",
        "bad_huffman",
        "upper_name",
        "no_status",
        "status_abc",
        "data_after_trailers",
        "headers_after_trailers",
        "data_after_1xx",
    ] {
        for r in runs(mode, SHORT) {
            r.run.expect(mode, N, N / 2, &[("bad_framing", N / 2)]);
            r.run.expect_causes(mode, &[("http3_protocol", N / 2)]);
            if mode != "dynamic_ref" {
                r.run.expect_connections(mode, 1);
            }
            bounded(&r, mode, Duration::from_secs(5));
        }
    }
}

/// A server that breaks its control stream right after each connection's
/// first answer (in later datagrams; five requests 200 ms apart): the
/// client closes the connection with the code RFC 9114 names, every
/// request is still answered, each on a connection of its own.
#[test]
// Today the client drains the server's control stream unread: the
// violations pass unseen and one connection carries every request. The
// branch h3conn acts on the control stream: merged with it (at 4b781c6)
// this test passes; drop the ignore then.
fn h3_control_stream_violations_close_with_their_code() {
    if !aioquic() {
        return;
    }
    for (mode, code) in [
        ("ctl_not_settings", 0x10a),   // H3_MISSING_SETTINGS
        ("ctl_settings_twice", 0x105), // H3_FRAME_UNEXPECTED
        ("ctl_data", 0x105),           // H3_FRAME_UNEXPECTED
        ("ctl_closed", 0x104),         // H3_CLOSED_CRITICAL_STREAM
        ("ctl_second", 0x103),         // H3_STREAM_CREATION_ERROR
        ("push_stream", 0x108),        // H3_ID_ERROR (no MAX_PUSH_ID sent)
        ("qpack_capacity", 0x201),     // QPACK_ENCODER_STREAM_ERROR
    ] {
        for r in runs(mode, SLOW) {
            let ctx = r.run.ctx(mode);
            r.run.expect(mode, 5, 5, &[]);
            // Each request on a connection of its own (a dead connection is
            // replaced at once, so some may carry none).
            assert_eq!(r.run.seen.used, 5, "connections used; {ctx}");
            // The connection of the last request may end with the run
            // (H3_NO_ERROR) before its violation arrives.
            let closes = r.closes();
            let coded = closes.iter().filter(|&&c| c == Some(code)).count();
            let graceful = closes.iter().filter(|&&c| c == Some(NO_ERROR)).count();
            assert!(
                coded >= 4 && coded + graceful == 5,
                "close codes {closes:x?}; {ctx}"
            );
            bounded(&r, mode, Duration::from_secs(6));
        }
    }
}

/// A server that allows one request stream at a time (MAX_STREAMS 1,
/// raised by one as each ends) and answers each after 150 ms, with one
/// connection at most: every request answered, waiting at the client for
/// a stream (send lag) without spinning meanwhile.
#[test]
fn h3_one_stream_at_a_time_waits_without_spinning() {
    if !aioquic() {
        return;
    }
    const PACED: &[&str] = &[
        "--rate",
        "20",
        "--duration",
        "500ms",
        "--connections",
        "1",
        "--max-connections",
        "1",
        "--timeout",
        "3s",
    ];
    for r in runs("one_stream", PACED) {
        let ctx = r.run.ctx("h3 one stream");
        r.run.expect("h3 one stream", N, N, &[]);
        r.run.expect_connections("h3 one stream", 1);
        // 150 ms each, one after another: the last, due at 450 ms, cannot be
        // sent before 1 350 ms.
        let lag = &r.run.report.metrics.send_lag;
        assert!(lag.max >= 500.0, "send lag {lag:?}; {ctx}");
        // Waiting on a condition, not a loop: the engine's CPU over the ~1.8 s
        // run stays far below a core (a dispatcher spinning on the refused
        // stream took 1.6 s of it).
        let cpu = r.run.generator().cpu_s;
        assert!(cpu < 0.6, "engine CPU {cpu} s; {ctx}");
    }
}

/// A server that validates every client's address with a Retry packet
/// first: the handshake follows it, every request `ok` on one connection.
#[test]
fn h3_retry_is_followed() {
    if !aioquic() {
        return;
    }
    for r in runs("retry", SHORT) {
        r.run.expect("h3 retry", N, N, &[]);
        r.run.expect_connections("h3 retry", 1);
    }
}

/// An informational (103) head, the final head, DATA and trailers: a
/// valid answer, every request `ok`.
#[test]
fn h3_informational_head_and_trailers_are_ok() {
    if !aioquic() {
        return;
    }
    for r in runs("informational", SHORT) {
        r.run.expect("h3 103 and trailers", N, N, &[]);
        r.run.expect_connections("h3 103 and trailers", 1);
    }
}

/// Reserved and unknown frame types in every response and on the control
/// stream, a reserved setting, reserved and unknown stream types: all
/// ignored, every request answered on one connection closed gracefully.
#[test]
fn h3_reserved_and_unknown_types_are_ignored() {
    if !aioquic() {
        return;
    }
    for r in runs("unknown", SHORT) {
        r.run.expect("h3 unknown", N, N, &[]);
        r.run.expect_connections("h3 unknown", 1);
        assert_eq!(r.closes(), [Some(NO_ERROR)], "{}", r.run.ctx("h3 unknown"));
    }
}

/// A body that never ends (a DATA frame every 10 ms): each request ends
/// at its --timeout (500 ms) as a timeout; the run ends.
#[test]
fn h3_endless_body_times_out() {
    if !aioquic() {
        return;
    }
    for r in runs("endless", SHORT) {
        r.run.expect("h3 endless", N, 0, &[("timeout", N)]);
        r.run.expect_connections("h3 endless", 1);
        bounded(&r, "h3 endless", Duration::from_secs(5));
    }
}

/// Every answer trickled a byte per datagram, 10 ms apart (11 bytes:
/// HEADERS 7, DATA 4): all answered, none faster than the 100 ms the
/// trickle takes.
#[test]
fn h3_trickled_answers_are_ok_and_slow() {
    if !aioquic() {
        return;
    }
    for r in runs("trickle", SLOW) {
        let ctx = r.run.ctx("h3 trickle");
        r.run.expect("h3 trickle", 5, 5, &[]);
        r.run.expect_connections("h3 trickle", 1);
        let m = &r.run.report.metrics;
        assert_eq!(m.latency.count, 5, "{ctx}");
        assert!(m.latency.min >= 100.0, "latency {:?}; {ctx}", m.latency);
        assert!(
            m.service_time.min >= 100.0,
            "service time {:?}; {ctx}",
            m.service_time
        );
    }
}

/// The head, then RESET_STREAM (H3_REQUEST_CANCELLED) 20 ms later: every
/// request is `reset`, the connection lives on.
#[test]
fn h3_reset_after_head_is_reset() {
    if !aioquic() {
        return;
    }
    for r in runs("reset_headers", SHORT) {
        r.run.expect("h3 reset after head", N, 0, &[("reset", N)]);
        r.run.expect_connections("h3 reset after head", 1);
    }
}

/// 3000 unidirectional streams opened by the server on one connection:
/// the client lets them in as its stream limit allows, reads and drops
/// them, and every request is answered on that connection.
#[test]
fn h3_stream_flood_is_bounded_and_harmless() {
    if !aioquic() {
        return;
    }
    for r in runs("uni_flood", SHORT) {
        r.run.expect("h3 uni flood", N, N, &[]);
        r.run.expect_connections("h3 uni flood", 1);
        let c = r.conns[0];
        assert_eq!(c.uni, 3001, "the control stream and the flood: {c:?}");
        // quinn lets 100 in at a time and raises the limit by one per stream
        // read to its end (the control stream stays open): more than 100 means
        // the flood was read on, at most 100 + 3000 that it stayed bounded.
        assert!(
            c.granted > 100 && c.granted <= 100 + 3000,
            "MAX_STREAMS ({}): {c:?}",
            r.run.engine
        );
        assert_eq!(
            r.closes(),
            [Some(NO_ERROR)],
            "{}",
            r.run.ctx("h3 uni flood")
        );
        bounded(&r, "h3 uni flood", Duration::from_secs(5));
    }
}

/// Garbage datagrams (random bytes, a short-header lookalike, a long
/// header of an unknown version, one byte) sent to the client's port
/// before every answer: ignored, every request answered on one connection.
#[test]
fn h3_garbage_datagrams_are_ignored() {
    if !aioquic() {
        return;
    }
    for r in runs("garbage", SHORT) {
        r.run.expect("h3 garbage", N, N, &[]);
        r.run.expect_connections("h3 garbage", 1);
        assert_eq!(r.closes(), [Some(NO_ERROR)], "{}", r.run.ctx("h3 garbage"));
    }
}
