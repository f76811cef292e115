//! The HTTP/2 client connection against hand-built server bytes: preface
//! and SETTINGS, HEADERS + CONTINUATION with the dynamic table, padded
//! DATA, trailers, RST_STREAM, PING both ways, WINDOW_UPDATE both ways,
//! GOAWAY with a refused stream, unknown and PRIORITY frames. The same
//! events and the same client bytes at every split of the server's bytes.

use crate::h2_drive::{drive, flush, frames, Run};
use metronome_core::h2::conn::{Config, PREFACE};
use metronome_core::h2::frame::{setting, ErrorCode, Frame, Priority, SettingsParams};
use metronome_core::h2::hpack::{encode_field, encode_request};
use metronome_core::h2::{Blocked, Connection, Event, H2Error, SendError, Sent, Violation};

// The full exchange, at every split; cancels, early responses, DATA payloads.
mod exchange;
// Connection errors send GOAWAY; stream errors reset the stream only.
mod errors;
// Concurrent streams and flow-control windows, both ways.
mod windows;

fn settings(params: &[(u16, u32)]) -> Vec<u8> {
    params
        .iter()
        .flat_map(|&(id, v)| id.to_be_bytes().into_iter().chain(v.to_be_bytes()))
        .collect()
}

fn put(wire: &mut Vec<u8>, f: Frame<'_>) {
    let mut b = [0u8; 1024];
    let n = f.encode(&mut b).unwrap();
    wire.extend_from_slice(&b[..n]);
}

/// A client with four requests in flight (1: GET, 3: POST with a body,
/// 5 and 7: GET) and a PING out; returns it and what it wrote.
fn client() -> (Connection<8>, Vec<u8>) {
    let mut conn = Connection::<8>::new(Config {
        stream_window: 32,
        ..Config::DEFAULT
    });
    let mut out = [0u8; 512];
    let mut written = Vec::new();
    flush(&mut conn, &mut out, &mut written);
    let mut block = [0u8; 128];
    let get = encode_request(b"GET", b"http", b"localhost", b"/", &[], true, &mut block).unwrap();
    let get = block[..get].to_vec();
    let post = encode_request(
        b"POST",
        b"http",
        b"localhost",
        b"/echo",
        &[(b"content-type", b"text/plain")],
        true,
        &mut block,
    )
    .unwrap();
    let post = block[..post].to_vec();
    for (block, body) in [
        (&get, None),
        (&post, Some(&b"hello"[..])),
        (&get, None),
        (&get, None),
    ] {
        let (id, n) = conn.start_request(block, body.is_none(), &mut out).unwrap();
        written.extend_from_slice(&out[..n]);
        if let Some(body) = body {
            let sent = conn.send_data(id, body, true, &mut out).unwrap();
            assert_eq!(
                sent,
                Sent {
                    consumed: 5,
                    written: 14,
                    blocked: None
                }
            );
            written.extend_from_slice(&out[..sent.written]);
        }
    }
    let n = conn.ping(123_456_789, &mut out).unwrap();
    written.extend_from_slice(&out[..n]);
    assert_eq!(conn.open_streams(), 4);
    (conn, written)
}

fn server() -> Vec<u8> {
    let mut w = Vec::new();
    let s = settings(&[
        (setting::MAX_CONCURRENT_STREAMS, 100),
        (setting::INITIAL_WINDOW_SIZE, 1 << 20),
        (0xf0, 7),
    ]);
    put(
        &mut w,
        Frame::Settings {
            ack: false,
            params: SettingsParams::new(&s).unwrap(),
        },
    );
    put(
        &mut w,
        Frame::Settings {
            ack: true,
            params: SettingsParams::EMPTY,
        },
    );
    put(
        &mut w,
        Frame::Ping {
            ack: false,
            data: *b"abcdefgh",
        },
    );
    // Stream 1's head over HEADERS + two CONTINUATIONs: a 103 first (skipped),
    // then :status 200 and content-type added to the dynamic table.
    let mut info = [0u8; 16];
    let k = encode_field(b":status", b"103", false, &mut info).unwrap();
    put(
        &mut w,
        Frame::Headers {
            stream: 1,
            end_stream: false,
            end_headers: true,
            priority: None,
            block: &info[..k],
            pad: None,
        },
    );
    let mut block = vec![0x88, 0x5f, 0x11]; // :status 200; content-type (31), incremental, 17 bytes
    block.extend_from_slice(b"text/event-stream");
    block.extend_from_slice(b"\x40\x06x-trip\x03yes");
    let prio = Priority {
        exclusive: false,
        dependency: 0,
        weight: 15,
    };
    put(
        &mut w,
        Frame::Headers {
            stream: 1,
            end_stream: false,
            end_headers: false,
            priority: Some(prio),
            block: &block[..2],
            pad: Some(3),
        },
    );
    put(
        &mut w,
        Frame::Continuation {
            stream: 1,
            end_headers: false,
            block: &block[2..10],
        },
    );
    put(
        &mut w,
        Frame::Continuation {
            stream: 1,
            end_headers: true,
            block: &block[10..],
        },
    );
    put(
        &mut w,
        Frame::Data {
            stream: 1,
            end_stream: false,
            data: b"data: hi\n\n",
            pad: Some(5),
        },
    );
    // Stream 3: a 404 whose content-type comes from the dynamic table (63).
    put(
        &mut w,
        Frame::Headers {
            stream: 3,
            end_stream: false,
            end_headers: true,
            priority: None,
            block: b"\x8d\xbf",
            pad: None,
        },
    );
    put(
        &mut w,
        Frame::WindowUpdate {
            stream: 0,
            increment: 1000,
        },
    );
    put(
        &mut w,
        Frame::WindowUpdate {
            stream: 3,
            increment: 10,
        },
    );
    put(
        &mut w,
        Frame::Priority {
            stream: 5,
            priority: prio,
        },
    );
    put(
        &mut w,
        Frame::Unknown {
            kind: 0xbb,
            flags: 0xff,
            stream: 1,
            payload: b"ignored",
        },
    );
    // Stream 1's trailers.
    put(
        &mut w,
        Frame::Headers {
            stream: 1,
            end_stream: true,
            end_headers: true,
            priority: None,
            block: b"\x00\x0bgrpc-status\x010",
            pad: None,
        },
    );
    put(
        &mut w,
        Frame::Data {
            stream: 3,
            end_stream: true,
            data: b"nope",
            pad: None,
        },
    );
    put(
        &mut w,
        Frame::RstStream {
            stream: 5,
            code: ErrorCode::REFUSED_STREAM,
        },
    );
    put(
        &mut w,
        Frame::Ping {
            ack: true,
            data: 123_456_789u64.to_be_bytes(),
        },
    );
    // Frames on closed streams are ignored.
    put(
        &mut w,
        Frame::Data {
            stream: 1,
            end_stream: false,
            data: b"late",
            pad: None,
        },
    );
    put(
        &mut w,
        Frame::GoAway {
            last_stream: 5,
            code: ErrorCode::NO_ERROR,
            debug: b"bye",
        },
    );
    w
}

fn expected_events() -> Vec<Event> {
    vec![
        Event::Ready,
        Event::Headers {
            stream: 1,
            status: 200,
            event_stream: true,
            grpc_status: None,
            end_stream: false,
        },
        Event::Data {
            stream: 1,
            len: 10,
            end_stream: false,
        },
        Event::Headers {
            stream: 3,
            status: 404,
            event_stream: true,
            grpc_status: None,
            end_stream: false,
        },
        Event::Trailers {
            stream: 1,
            grpc_status: Some(0),
        },
        Event::Data {
            stream: 3,
            len: 4,
            end_stream: true,
        },
        Event::StreamReset {
            stream: 5,
            code: ErrorCode::REFUSED_STREAM,
            remote: true,
        },
        Event::Pong {
            sent_ns: 123_456_789,
        },
        Event::GoAway {
            last_stream: 5,
            code: ErrorCode::NO_ERROR,
            refused: 1,
        },
    ]
}

fn ready() -> Connection<8> {
    let mut conn = Connection::<8>::new(Config::DEFAULT);
    flush(&mut conn, &mut [0u8; 256], &mut Vec::new());
    assert_eq!(
        conn.handle_read(&[0, 0, 0, 4, 0, 0, 0, 0, 0]),
        Ok((9, Some(Event::Ready)))
    );
    let mut ack = Vec::new();
    flush(&mut conn, &mut [0u8; 256], &mut ack);
    assert_eq!(frames(&ack), ["SETTINGS ack=true []"]);
    conn
}

fn error_of(conn: &mut Connection<8>, f: Frame<'_>) -> Option<H2Error> {
    let mut w = Vec::new();
    put(&mut w, f);
    drive(conn, &w, &[]).error
}

fn put_big(wire: &mut Vec<u8>, f: Frame<'_>) {
    let mut b = vec![0u8; 20_000];
    let n = f.encode(&mut b).unwrap();
    wire.extend_from_slice(&b[..n]);
}
