//! Bytes no request asked for.

use std::time::Duration;

use crate::case::{run, with, N, OK, SPACED};
use crate::common::engines;
use crate::script::{answer, script};

/// An unsolicited extra response after each real one (in the same write,
/// or 20 ms later), and extra bytes after a Content-Length body: every real
/// request is ok, the connection is closed and counted as unsolicited, and
/// the extra bytes are never read as the next response. Each connection
/// carries one request and one unsolicited event; the last one is not
/// always seen (the std engine looks at an idle connection only before
/// reusing it; a split write can leave the extra bytes unread at the end).
#[test]
pub(crate) fn unsolicited_bytes_close_the_connection() {
    let extra_later = script(|p| {
        while p.request().is_some() {
            if !p.send(OK) {
                break;
            }
            p.pause(Duration::from_millis(20));
            if !p.send(OK) {
                break;
            }
        }
    });
    let head = with(SPACED, &["-X", "HEAD"]);
    let rows = [
        (
            "extra response, same write",
            answer([OK, OK].concat()),
            SPACED,
        ),
        ("extra response, later write", extra_later, SPACED),
        (
            "bytes after the body",
            answer(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloEXTRA".to_vec()),
            SPACED,
        ),
        // Buggy servers that send a body where there is none.
        (
            "HEAD answered with a body",
            answer(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".to_vec()),
            &head[..],
        ),
        (
            "204 with a body",
            answer(b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello".to_vec()),
            SPACED,
        ),
    ];
    for (case, s, args) in rows {
        for engine in engines() {
            let r = run(engine, &s, "/", args);
            r.expect(case, N, N, &[]);
            let ctx = r.ctx(case);
            let g = r.generator();
            assert!((N - 1..=N).contains(&g.connections_unsolicited), "{ctx}");
            // One connection per request.
            r.expect_connections(case, N);
            assert_eq!(r.requests().retried, 0, "{ctx}");
            assert_eq!(g.connections_closed_idle, 0, "{ctx}");
        }
    }
}
