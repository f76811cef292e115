//! The golden table of response heads (core/tests/data/heads.rs) end to
//! end: each row's field served in a response head over HTTP/1.1 (the
//! scripted server), HTTP/2 (h2c, frames written by hand in h2.rs) and
//! HTTP/3 (tests/h3_hostile.py's `field` mode), on every engine, and what
//! metronome made of it read from the report:
//! - `content-type`: `--openai` streams, ok when it names an event stream,
//!   else every request `not_event_stream`; over all three protocols;
//! - `grpc-status`: `--grpc` calls answered trailers-only, counted by code,
//!   or `no_grpc_status` for a value that is not one; over HTTP/2 (the CLI
//!   runs gRPC over HTTP/2 only);
//! - `content-length`: a body of that length, ok, or `content_length` bad
//!   framing; over HTTP/1.1 (HTTP/2 and HTTP/3 frame bodies by DATA and
//!   their stream's end, and the client reads no length).

use crate::case::{run, with, Run, N, SHORT};
use crate::common::engines;
use crate::heads_table::{Reads, Row, HEADS};
use crate::script::answer;

/// The event stream every `content-type` row answers with.
const SSE: &str = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n";
/// The `content-length` rows' body: 12 bytes.
const BODY12: &str = "abcdefghijkl";
const CHAT: &str = "v1/chat/completions";

/// An HPACK literal field without indexing, its name a literal too.
fn literal(name: &str, value: &str) -> Vec<u8> {
    let mut v = vec![0x00, name.len() as u8];
    v.extend_from_slice(name.as_bytes());
    v.push(value.len() as u8);
    v.extend_from_slice(value.as_bytes());
    v
}

/// An h2c server answering each request with `:status 200`, `fields` and,
/// when given, `body` (else the head ends the stream: trailers-only).
fn h2_answer(fields: Vec<u8>, body: Option<&'static str>) -> crate::script::Script {
    use crate::h2::{frame, h2, DATA, END_HEADERS, END_STREAM, HEADERS, STATUS_200};
    h2(None, move |c| {
        while let Some(stream) = c.request() {
            let mut block = STATUS_200.to_vec();
            block.extend_from_slice(&fields);
            let out = match body {
                Some(b) => {
                    let mut out = frame(HEADERS, END_HEADERS, stream, &block);
                    out.extend(frame(DATA, END_STREAM, stream, b.as_bytes()));
                    out
                }
                None => frame(HEADERS, END_HEADERS | END_STREAM, stream, &block),
            };
            if !c.send(&out) {
                return;
            }
        }
    })
}

/// Counts by name, as the report keeps them.
type Counts = Vec<(&'static str, u64)>;

/// What a run of `row` must show: ok count, error kinds, bad-framing
/// causes and (a `grpc-status` row) the gRPC codes counted.
fn expect(r: &Run, row: &Row, protocol: &str) {
    let case = format!("{protocol} {}: {}", row.name, row.value);
    let (ok, kinds, causes): (u64, Counts, Counts) = match row.reads {
        Reads::EventStream(true) | Reads::ContentLength(Some(_)) => (N, vec![], vec![]),
        Reads::EventStream(false) => (0, vec![("not_event_stream", N)], vec![]),
        Reads::GrpcStatus(Some(_)) => (0, vec![("grpc_status", N)], vec![]),
        Reads::GrpcStatus(None) => (0, vec![("bad_framing", N)], vec![("no_grpc_status", N)]),
        Reads::ContentLength(None) => (0, vec![("bad_framing", N)], vec![("content_length", N)]),
    };
    r.expect(&case, N, ok, &kinds);
    r.expect_causes(&case, &causes);
    if let Reads::GrpcStatus(code) = row.reads {
        let by = r.report.errors.by_grpc_status.clone().unwrap_or_default();
        let by: Vec<(String, u64)> = by.into_iter().filter(|&(_, n)| n > 0).collect();
        let want: Vec<(String, u64)> = code.map(|c| (c.to_string(), N)).into_iter().collect();
        assert_eq!(by, want, "by_grpc_status; {}", r.ctx(&case));
    }
}

/// Every row over HTTP/1.1 and HTTP/2 (h2c), on every engine.
#[test]
fn response_heads_read_alike_over_http1_and_http2() {
    let openai = with(SHORT, &["--openai", "--model", "m"]);
    let grpc = with(SHORT, &["--grpc", "grpc.health.v1.Health/Check"]);
    for row in HEADS {
        for engine in engines() {
            match row.reads {
                Reads::EventStream(_) => {
                    let h1 = format!(
                        "HTTP/1.1 200 OK\r\n{}: {}\r\nContent-Length: {}\r\n\r\n{SSE}",
                        row.name,
                        row.value,
                        SSE.len()
                    );
                    let r = run(
                        engine,
                        &answer(h1.into_bytes()),
                        &format!("/{CHAT}"),
                        &openai,
                    );
                    expect(&r, row, "HTTP/1.1");
                    let h2 = h2_answer(literal(row.name, row.value), Some(SSE));
                    let args = with(&openai, &["--http2-prior-knowledge"]);
                    let r = run(engine, &h2, &format!("/{CHAT}"), &args);
                    expect(&r, row, "HTTP/2");
                }
                Reads::GrpcStatus(_) => {
                    let mut fields = literal("content-type", "application/grpc");
                    fields.extend(literal(row.name, row.value));
                    let r = run(engine, &h2_answer(fields, None), "", &grpc);
                    expect(&r, row, "HTTP/2");
                }
                Reads::ContentLength(_) => {
                    let h1 = format!(
                        "HTTP/1.1 200 OK\r\n{}: {}\r\n\r\n{BODY12}",
                        row.name, row.value
                    );
                    let r = run(engine, &answer(h1.into_bytes()), "/", SHORT);
                    expect(&r, row, "HTTP/1.1");
                }
            }
        }
    }
}

/// Every `content-type` row over HTTP/3, on every engine.
#[test]
fn response_heads_read_alike_over_http3() {
    if !crate::common::quic_peer::aioquic() {
        return;
    }
    let openai = with(SHORT, &["--openai", "--model", "m"]);
    for row in HEADS {
        if let Reads::EventStream(_) = row.reads {
            for engine in engines() {
                let r = crate::h3::run_server(
                    engine,
                    &["field", "60", row.name, row.value],
                    CHAT,
                    &openai,
                );
                expect(&r.run, row, "HTTP/3");
            }
        }
    }
}
