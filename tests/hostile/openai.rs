//! OpenAI-style streams.

use std::time::Duration;

use crate::case::{run, with, N, SHORT, SLOW};
use crate::common::engines;
use crate::script::{answer, answer_once_then_close, script, Script};

/// A content chunk of a chat completion stream.
fn content(text: &str) -> String {
    format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n")
}

const DONE: &str = "data: [DONE]\n\n";
const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n";

/// An event-stream response, each event in a chunk of its own.
fn sse_chunked(events: &[&str]) -> Vec<u8> {
    let mut v = format!("{SSE_HEAD}Transfer-Encoding: chunked\r\n\r\n").into_bytes();
    for e in events {
        v.extend_from_slice(format!("{:x}\r\n", e.len()).as_bytes());
        v.extend_from_slice(e.as_bytes());
        v.extend_from_slice(b"\r\n");
    }
    v.extend_from_slice(b"0\r\n\r\n");
    v
}

/// An event-stream response with a Content-Length body.
fn sse_length(body: &str) -> Vec<u8> {
    format!("{SSE_HEAD}Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

/// `--openai` streams, each with its exact outcome (core/src/sse/ and
/// core/src/exchange.rs): a stream is ok with at least one content chunk
/// and `data: [DONE]`; without `[DONE]` it is `stream_cut`; `[DONE]`
/// alone is `no_content`; an error event is `stream_error`; a 2xx that is
/// not `text/event-stream` is `not_event_stream`.
#[test]
pub(crate) fn openai_streams() {
    let hi = content("Hi");
    let yo = content("yo");
    let ping = ": ping\n\n";
    let crlf = |s: &str| s.replace('\n', "\r\n");
    let one_by_one = {
        let wire = sse_chunked(&[ping, &hi, &yo, DONE]);
        script(move |p| {
            while p.request().is_some() {
                if !p.trickle(&wire, Duration::from_micros(100)) {
                    break;
                }
            }
        })
    };
    let cut_by_close = {
        let wire = format!("{SSE_HEAD}Connection: close\r\n\r\n{hi}{yo}");
        answer_once_then_close(wire.into_bytes())
    };
    let reset_mid_stream = {
        let head = format!("{SSE_HEAD}Transfer-Encoding: chunked\r\n\r\n");
        let first = sse_chunked(&[&hi]);
        // One chunk, without the last-chunk terminator.
        let first = first[head.len()..first.len() - 5].to_vec();
        script(move |p| {
            if p.request().is_some() && p.send(head.as_bytes()) && p.send(&first) {
                p.pause(Duration::from_millis(20));
                p.reset();
            }
        })
    };
    // The head and a first token, then nothing until the timeout: a
    // timeout, not a cut (the connection was not closed).
    let stall_mid_stream = {
        let wire = format!("{SSE_HEAD}Content-Length: 1000\r\n\r\n{hi}");
        script(move |p| {
            if p.request().is_some() && p.send(wire.as_bytes()) {
                p.drain();
            }
        })
    };
    let huge_wire = sse_chunked(&[&content(&"x".repeat(10 << 20)), DONE]);
    // The same bytes in writes of odd sizes (over TLS: records of odd
    // sizes), every 64th after a pause: chunk framing, lines and records
    // split at ever other points of the client's read buffer.
    let huge_in_pieces = {
        let wire = huge_wire.clone();
        script(move |p| {
            while p.request().is_some() {
                let (mut at, mut i) = (0, 0usize);
                while at < wire.len() {
                    let piece = (1 + i * 7919 % 17_011).min(wire.len() - at);
                    if !p.send(&wire[at..at + piece]) {
                        return;
                    }
                    if i % 64 == 63 {
                        p.pause(Duration::from_millis(1));
                    }
                    (at, i) = (at + piece, i + 1);
                }
            }
        })
    };
    let huge = answer(huge_wire);
    // JSON split over two data lines of one event: joined with "\n" it is
    // one chunk with content; line by line neither half would be.
    let multi_line = "data: {\"choices\":[{\"delta\":\n\
                      data: {\"content\":\"Hi\"}}]}\n\n";
    let garbage = "garbage without a colon\n\
                   retry: 10\nid: 7\nunknown: field\n\n\
                   data: this is not json\n\n\
                   data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n\
                   \u{7f}\u{1}binary-ish\n\n";
    type Row = (
        &'static str,
        Script,
        &'static [&'static str],
        u64,
        Vec<(&'static str, u64)>,
    );
    let rows: Vec<Row> = vec![
        (
            "comments",
            answer(sse_chunked(&[ping, &hi, ping, &yo, ping, DONE])),
            SHORT,
            N,
            vec![],
        ),
        (
            "CRLF line ends",
            answer(sse_chunked(&[
                &crlf(ping),
                &crlf(&hi),
                &crlf(&yo),
                &crlf(DONE),
            ])),
            SHORT,
            N,
            vec![],
        ),
        (
            "multi-line data",
            answer(sse_length(&format!("{multi_line}{DONE}"))),
            SHORT,
            N,
            vec![],
        ),
        ("one byte per write", one_by_one, SLOW, 5, vec![]),
        (
            "garbage lines",
            answer(sse_length(&format!("{garbage}{hi}{garbage}{DONE}"))),
            SHORT,
            N,
            vec![],
        ),
        (
            "10 MiB data line then [DONE]",
            huge,
            &[
                "--rate",
                "4",
                "--duration",
                "500ms",
                "--connections",
                "1",
                "--timeout",
                "5s",
            ],
            2,
            vec![],
        ),
        (
            "10 MiB data line in odd pieces then [DONE]",
            huge_in_pieces,
            &[
                "--rate",
                "4",
                "--duration",
                "500ms",
                "--connections",
                "1",
                "--timeout",
                "5s",
            ],
            2,
            vec![],
        ),
        (
            "no [DONE], body complete",
            answer(sse_chunked(&[&hi, &yo])),
            SHORT,
            0,
            vec![("stream_cut", N)],
        ),
        (
            "final [DONE] without its blank line",
            answer(sse_length(&format!("{hi}data: [DONE]"))),
            SHORT,
            N,
            vec![],
        ),
        (
            "reset mid-stream",
            reset_mid_stream,
            SHORT,
            0,
            vec![("stream_cut", N)],
        ),
        (
            "stall mid-stream",
            stall_mid_stream,
            SHORT,
            0,
            vec![("timeout", N)],
        ),
        (
            "no [DONE], connection closed",
            cut_by_close,
            SHORT,
            0,
            vec![("stream_cut", N)],
        ),
        (
            "[DONE] without content",
            answer(sse_chunked(&[ping, DONE])),
            SHORT,
            0,
            vec![("no_content", N)],
        ),
        (
            "error event",
            answer(sse_chunked(&[
                &hi,
                "event: error\ndata: {\"message\":\"overloaded\"}\n\n",
                DONE,
            ])),
            SHORT,
            0,
            vec![("stream_error", N)],
        ),
        (
            "plain JSON",
            answer({
                let json = r#"{"choices":[{"message":{"content":"Hi"}}]}"#;
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                     Content-Length: {}\r\n\r\n{json}",
                    json.len()
                )
                .into_bytes()
            }),
            SHORT,
            0,
            vec![("not_event_stream", N)],
        ),
    ];
    for (case, s, args, ok, kinds) in rows {
        for engine in engines() {
            let args = with(args, &["--openai", "--model", "m"]);
            let r = run(engine, &s, "/v1/chat/completions", &args);
            let n = r.requests().scheduled;
            r.expect(case, n, ok, &kinds);
            let ctx = r.ctx(case);
            assert_eq!(r.report.metrics.ttft.count, ok, "ttft; {ctx}");
            assert_eq!(r.requests().retried, 0, "{ctx}");
        }
    }
}
