//! Framing that is unusual but valid.

use std::time::Duration;

use crate::case::{run, with, N, OK, SHORT, SLOW};
use crate::common::engines;
use crate::script::{answer, answer_once_then_close, script, Script};

/// Valid responses a client must read right, each on its own row:
/// (case, server, args, ok, failures, connections that carried requests).
#[test]
pub(crate) fn unusual_but_valid_framing() {
    type Row = (
        &'static str,
        Script,
        Vec<&'static str>,
        u64,
        Vec<(&'static str, u64)>,
        u64,
    );
    let rows: Vec<Row> = vec![
        // A body delimited by the close: one connection per request.
        (
            "HTTP/1.0 until close",
            answer_once_then_close(
                b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nbody until the close".to_vec(),
            ),
            SHORT.to_vec(),
            N,
            vec![],
            N,
        ),
        // A HEAD response has no body whatever Content-Length says; the
        // connection is reused for the next one.
        (
            "HEAD with Content-Length: 100",
            script(|p| {
                while let Some(req) = p.request() {
                    let reply: &[u8] = if req.method == "HEAD" {
                        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"
                    } else {
                        b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n"
                    };
                    if !p.send(reply) {
                        break;
                    }
                }
            }),
            with(SHORT, &["-X", "HEAD"]),
            N,
            vec![],
            1,
        ),
        // Interim responses are skipped (one written apart from the final).
        (
            "100 and 103 before 200",
            script(|p| {
                while p.request().is_some() {
                    let interim = b"HTTP/1.1 100 Continue\r\n\r\n\
                                    HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n";
                    if !p.send(interim) {
                        break;
                    }
                    p.pause(Duration::from_millis(2));
                    if !p.send(OK) {
                        break;
                    }
                }
            }),
            SHORT.to_vec(),
            N,
            vec![],
            1,
        ),
        // 204 and 304 have no body whatever Content-Length says.
        (
            "204 with Content-Length",
            answer(b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n".to_vec()),
            SHORT.to_vec(),
            N,
            vec![],
            1,
        ),
        (
            "304 with Content-Length",
            answer(
                b"HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\nContent-Length: 5\r\n\r\n".to_vec(),
            ),
            SHORT.to_vec(),
            0,
            vec![("status", N)],
            1,
        ),
        // Chunk extensions and trailers are skipped; the connection is
        // reused.
        (
            "chunked, extensions and trailers",
            answer(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
                  2;name=\"v;x\"\r\nok\r\n0;last\r\nX-Trailer: t\r\n\r\n"
                    .to_vec(),
            ),
            SHORT.to_vec(),
            N,
            vec![],
            1,
        ),
        // HTTP/1.0 with keep-alive and a length: the connection is reused.
        (
            "HTTP/1.0 keep-alive",
            answer(
                b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok"
                    .to_vec(),
            ),
            SHORT.to_vec(),
            N,
            vec![],
            1,
        ),
        // A bare LF ends a line (RFC 9112 section 2.2).
        (
            "bare LF line ends",
            answer(b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok".to_vec()),
            SHORT.to_vec(),
            N,
            vec![],
            1,
        ),
        // A user agent must accept a folded header line in a response and
        // read it as spaces (RFC 9112 section 5.2).
        (
            "obs-fold header",
            answer(
                b"HTTP/1.1 200 OK\r\nX-Folded: a\r\n  b\r\nContent-Length: 2\r\n\r\nok".to_vec(),
            ),
            SHORT.to_vec(),
            N,
            vec![],
            1,
        ),
        // One byte per millisecond: slow is not wrong.
        (
            "trickle",
            script(|p| {
                while p.request().is_some() {
                    let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789";
                    if !p.trickle(reply, Duration::from_millis(1)) {
                        break;
                    }
                }
            }),
            SLOW.to_vec(),
            5,
            vec![],
            1,
        ),
    ];
    for (case, s, args, ok, kinds, conns) in rows {
        for engine in engines() {
            let r = run(engine, &s, "/", &args);
            let n = r.requests().scheduled;
            r.expect(case, n, ok, &kinds);
            let ctx = r.ctx(case);
            r.expect_connections(case, conns);
            assert_eq!(r.requests().retried, 0, "{ctx}");
            assert_eq!(r.generator().connections_unsolicited, 0, "{ctx}");
            if case.starts_with("304") {
                assert_eq!(r.report.errors.by_status.get("304"), Some(&N), "{ctx}");
            }
            if case == "trickle" {
                // 48 bytes, one per millisecond at least.
                assert!(r.report.metrics.latency.min >= 40.0, "{ctx}");
            }
        }
    }
}
