//! Connection lifecycle: closes, half-closes, 408s, resets.

use std::time::Duration;

use crate::case::{run, with, N, OK, SHORT, SPACED};
use crate::common::engines;
use crate::script::{answer_once_then_close, script};

/// The server closes each connection 50 ms after answering its first
/// request; requests are 100 ms apart. The close is seen before the reuse
/// (idle) or, when the race is lost on a loaded machine, the request is
/// retried on a fresh connection: either way every request is ok and no
/// request is charged. Each of the requests after the first meets exactly
/// one closed connection, so closed_idle + retried is n - 1, or n when the
/// last connection's close is seen too (io_uring watches idle connections
/// until the run ends; the std engine looks only before a send).
#[test]
pub(crate) fn idle_close_by_the_server_is_charged_to_no_request() {
    #[derive(Clone, Copy)]
    enum End {
        Close,
        Reset,
        Timeout408,
    }
    let close_after = |end: End| {
        script(move |p| {
            if p.request().is_some() && p.send(OK) {
                p.pause(Duration::from_millis(50));
                match end {
                    End::Close => {}
                    End::Reset => p.reset(),
                    End::Timeout408 => {
                        p.send(
                            b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\
                              Content-Length: 0\r\n\r\n",
                        );
                    }
                }
            }
        })
    };
    for (case, s) in [
        ("idle close", close_after(End::Close)),
        ("idle reset", close_after(End::Reset)),
        ("408 then close", close_after(End::Timeout408)),
    ] {
        for engine in engines() {
            let r = run(engine, &s, "/", SPACED);
            r.expect(case, N, N, &[]);
            let g = r.generator();
            let ctx = r.ctx(case);
            assert!(g.connections_closed_idle >= 1, "{ctx}");
            let met = g.connections_closed_idle + r.requests().retried;
            assert!((N - 1..=N).contains(&met), "{ctx}");
            assert!(r.report.errors.by_status.is_empty(), "{ctx}");
            assert_eq!(g.connections_unsolicited, 0, "{ctx}");
        }
    }
}

/// The server closes a connection that carries no request within 30 ms
/// (a server's idle timeout for new connections), and closes each one
/// 50 ms after answering its request; requests are 100 ms apart and two
/// connections are opened before the start, so one waits unused. An
/// unused connection is idle too: its close is seen before its first use
/// and it is replaced, charged to no request. (A fresh connection's
/// request is never retried, so a close that went unseen would fail it as
/// a `reset`.) How many closes are seen depends on how often the engine
/// replaces them (io_uring at once, std at the next use): at least one.
#[test]
fn unused_connection_closed_by_the_server_is_charged_to_no_request() {
    let s = script(|p| {
        if p.request_within(Duration::from_millis(30)).is_some() && p.send(OK) {
            p.pause(Duration::from_millis(50));
        }
    });
    let args = [
        "--rate",
        "10",
        "--duration",
        "1s",
        "--connections",
        "2",
        "--timeout",
        "500ms",
    ];
    for engine in engines() {
        let case = "unused connection closed";
        let r = run(engine, &s, "/", &args);
        r.expect(case, N, N, &[]);
        let ctx = r.ctx(case);
        assert!(r.generator().connections_closed_idle >= 1, "{ctx}");
        assert_eq!(r.seen.requests, N + r.requests().retried, "{ctx}");
    }
}

/// A server that closes every connection as soon as it accepts it (an
/// overloaded server or a proxy with no backend): every request fails as a
/// `reset`, and the client does not storm the server with reconnects: an
/// unused connection that the server closes is replaced when a request
/// needs it, so connections stay within about two per request (the one
/// closed unused, the one used). Only a request on the one pre-opened
/// connection, which waited idle (its close may cross the request, the
/// idle-close race), is retried, once; a fresh connection's never is.
#[test]
fn closed_at_accept_fails_every_request_without_a_reconnect_storm() {
    let s = script(|_| {});
    for engine in engines() {
        let case = "closed at accept";
        let r = run(engine, &s, "/", SHORT);
        r.expect(case, N, 0, &[("reset", N)]);
        let ctx = r.ctx(case);
        assert!(r.requests().retried <= 1, "{ctx}");
        assert!(r.seen.accepted <= 2 * N + 2, "{ctx}");
    }
}

/// A half-close after each response, and `Connection: close` on each
/// response: every request is ok on a connection of its own.
#[test]
pub(crate) fn half_close_and_connection_close_are_clean_ends() {
    let half_close = script(|p| {
        if p.request().is_some() && p.send(OK) {
            p.shutdown_write();
            p.drain();
        }
    });
    let close = answer_once_then_close(
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok".to_vec(),
    );
    for (case, s) in [("half-close", half_close), ("Connection: close", close)] {
        for engine in engines() {
            let r = run(engine, &s, "/", SHORT);
            r.expect(case, N, N, &[]);
            let ctx = r.ctx(case);
            // One connection per request (a half-closed one is replaced
            // at its next use, or retried if that race is lost).
            r.expect_connections(case, N + r.requests().retried);
            assert_eq!(r.generator().connections_unsolicited, 0, "{ctx}");
        }
    }
}

/// The server answers the first request of each connection and, when the
/// second one arrives, resets the connection (RST) or closes it (FIN)
/// before any byte of its response: the race of a server closing an idle
/// connection as the client reuses it. A GET is retried once on a fresh
/// connection, where it is the first request and is answered: every
/// request ok, one retry per cut. A POST is not retried (it may have had an
/// effect) and fails as a reset, unless `--retry-non-idempotent`.
#[test]
pub(crate) fn cut_before_the_response_on_a_reused_connection() {
    let cut = |rst: bool| {
        script(move |p| {
            // Without `rst` the connection is closed by returning: a FIN.
            if p.request().is_some() && p.send(OK) && p.request().is_some() && rst {
                p.reset();
            }
        })
    };
    let post = with(SHORT, &["-X", "POST", "--body", "x"]);
    let retry_post = with(&post, &["--retry-non-idempotent"]);
    for (how, s) in [("RST", cut(true)), ("FIN", cut(false))] {
        for engine in engines() {
            for (method, args, retried) in [
                ("GET", SHORT, true),
                ("POST", &post[..], false),
                ("POST --retry-non-idempotent", &retry_post[..], true),
            ] {
                let case = format!("{how}, {method}");
                let r = run(engine, &s, "/", args);
                let ctx = r.ctx(&case);
                if retried {
                    // Requests 2..N each meet the cut on their reused
                    // connection, and are sent again.
                    r.expect(&case, N, N, &[]);
                    assert_eq!(r.requests().retried, N - 1, "{ctx}");
                    assert_eq!(r.seen.requests, N + N - 1, "{ctx}");
                } else {
                    // A request on a fresh connection is ok; one on a
                    // reused connection meets the cut. Which requests find
                    // a fresh one depends on when the engine sees the cut
                    // (under load a due request may open a connection
                    // before the previous one's cut is seen): every
                    // connection answers exactly its first request, and
                    // every other request is a reset.
                    let ok = r.requests().ok;
                    assert_eq!(ok, r.seen.used, "{ctx}");
                    assert!(ok >= N / 2, "{ctx}");
                    r.expect(&case, N, ok, &[("reset", N - ok)]);
                    assert_eq!(r.requests().retried, 0, "{ctx}");
                    assert_eq!(r.seen.requests, N, "{ctx}");
                }
                let resets = if how == "RST" {
                    N - r.requests().ok + r.requests().retried
                } else {
                    0
                };
                assert_eq!(r.seen.resets, resets, "{ctx}");
            }
        }
    }
}

/// A reset after the first byte of the response (here on the second request
/// of each connection) is a `reset`, never retried: the server may have
/// acted on the request. Requests 100 ms apart, so that the 20 ms wait
/// before the reset ends well before the next one is due on the same
/// connection, even on a loaded machine.
#[test]
fn reset_after_the_first_response_byte_is_not_retried() {
    let s = script(|p| {
        if p.request().is_some() && p.send(OK) && p.request().is_some() {
            p.send(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nab");
            // Let the partial response reach the client before the RST.
            p.pause(Duration::from_millis(20));
            p.reset();
        }
    });
    for engine in engines() {
        let case = "reset after a byte";
        let r = run(engine, &s, "/", SPACED);
        r.expect(case, N, N / 2, &[("reset", N / 2)]);
        assert_eq!(r.requests().retried, 0, "{}", r.ctx(case));
        assert_eq!(r.seen.resets, N / 2, "{}", r.ctx(case));
    }
}
