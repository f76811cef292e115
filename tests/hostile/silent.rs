//! Servers that do not answer.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use crate::case::{run, with, Run, N, OK, SHORT};
use crate::common::{engines, run_json_checked};
use crate::script::{script, Seen};

/// A server that accepts and never reads (the request is a 16 MiB body, so
/// the send blocks), a listener that never accepts, and a server that reads
/// but never answers: every sent request is a timeout, and the run ends by
/// its hard end (duration + timeout) plus a margin for starting the process
/// on a loaded machine.
#[test]
fn silent_servers_give_timeouts_and_the_run_ends() {
    let body = std::env::temp_dir().join(format!("metronome-hostile-{}.body", std::process::id()));
    std::fs::write(&body, vec![b'x'; 16 << 20]).unwrap();
    let body_arg = body.to_str().unwrap().to_string();
    let never_reads = script(|p| p.hold());
    let never_answers = script(|p| p.drain());
    let post = with(SHORT, &["-X", "POST", "--body-file", &body_arg]);
    let hard_end = Duration::from_millis(500 + 500);
    let margin = Duration::from_secs(3);
    for engine in engines() {
        for (case, s, args) in [
            ("never reads", &never_reads, &post[..]),
            ("never answers", &never_answers, SHORT),
        ] {
            let r = run(engine, s, "/", args);
            r.expect(case, N, 0, &[("timeout", N)]);
            assert!(r.elapsed < hard_end + margin, "{}", r.ctx(case));
        }

        // Connections wait in the listener's accept queue: the connect
        // and the send succeed, no answer ever comes.
        let case = "never accepts";
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let t = Instant::now();
        let report = run_json_checked(listener.local_addr().unwrap(), "/", engine, SHORT);
        let r = Run {
            engine,
            report,
            seen: Seen {
                accepted: 0,
                used: 0,
                requests: 0,
                resets: 0,
            },
            elapsed: t.elapsed(),
        };
        drop(listener);
        r.expect(case, N, 0, &[("timeout", N)]);
        assert!(r.elapsed < hard_end + margin, "{}", r.ctx(case));
    }
    let _ = std::fs::remove_file(&body);
}

/// A server that answers `413 Content Too Large` and closes as soon as the
/// head of a 16 MiB POST arrives, without reading the body: its close with
/// unread bytes is a RST, which cuts the client's send short. The response
/// came first and is the request's outcome (RFC 9112 section 9.5: a client
/// sending a body monitors the connection for an error response), a status
/// error, the same on both engines.
#[test]
fn an_early_response_to_a_body_being_sent_is_read() {
    let body =
        std::env::temp_dir().join(format!("metronome-hostile-413-{}.body", std::process::id()));
    std::fs::write(&body, vec![b'x'; 16 << 20]).unwrap();
    let s = script(|p| {
        if p.head() {
            p.send(
                b"HTTP/1.1 413 Content Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            );
            p.pause(Duration::from_millis(20));
        }
    });
    let args = with(
        SHORT,
        &["-X", "POST", "--body-file", body.to_str().unwrap()],
    );
    for engine in engines() {
        let case = "413 before the body was read";
        let r = run(engine, &s, "/", &args);
        r.expect(case, N, 0, &[("status", N)]);
        assert_eq!(
            r.report.errors.by_status.get("413"),
            Some(&N),
            "{}",
            r.ctx(case)
        );
    }
    let _ = std::fs::remove_file(&body);
}

/// A server that answers `200 OK` (keep-alive) as soon as the head of a
/// 16 MiB POST arrives and never reads the body: the complete response is
/// the request's outcome (ok), and the connection, whose request was never
/// sent whole, is not reused. With `--max-connections 1` every request
/// still gets a connection in time, so the send that cannot finish is
/// given up at once, not held until the timeout.
#[test]
fn an_early_response_to_a_body_never_read_is_read() {
    let body =
        std::env::temp_dir().join(format!("metronome-hostile-200-{}.body", std::process::id()));
    std::fs::write(&body, vec![b'x'; 16 << 20]).unwrap();
    let early = script(|p| {
        if p.head() && p.send(OK) {
            p.hold();
        }
    });
    // An interim response while the body is being sent is no early
    // answer: the client keeps sending, the server reads the body and
    // answers, and the connection carries the next request.
    let interim = script(|p| {
        while p.head() && p.send(b"HTTP/1.1 100 Continue\r\n\r\n") {
            if p.request().is_none() || !p.send(OK) {
                break;
            }
        }
    });
    let args = with(
        SHORT,
        &["-X", "POST", "--body-file", body.to_str().unwrap()],
    );
    let one = with(&args, &["--max-connections", "1"]);
    for engine in engines() {
        for (case, s, args, conns) in [
            ("200 before the body", &early, &args, N),
            ("same, one connection", &early, &one, N),
            ("100 Continue during the body", &interim, &one, 1),
        ] {
            let r = run(engine, s, "/", args);
            r.expect(case, N, N, &[]);
            r.expect_connections(case, conns);
        }
    }
    let _ = std::fs::remove_file(&body);
}
