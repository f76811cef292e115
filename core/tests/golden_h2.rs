//! The HTTP/2 client connection against hand-built server bytes: preface
//! and SETTINGS, HEADERS + CONTINUATION with the dynamic table, padded
//! DATA, trailers, RST_STREAM, PING both ways, WINDOW_UPDATE both ways,
//! GOAWAY with a refused stream, unknown and PRIORITY frames. The same
//! events and the same client bytes at every split of the server's bytes.

mod h2_drive;

use h2_drive::{drive, flush, frames, Run};
use metronome_core::h2::conn::{Config, PREFACE};
use metronome_core::h2::frame::{setting, ErrorCode, Frame, Priority, SettingsParams};
use metronome_core::h2::hpack::{encode_field, encode_request};
use metronome_core::h2::{Blocked, Connection, Event, H2Error, SendError, Sent, Violation};

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

#[test]
fn client_preface_and_requests() {
    let (_, written) = client();
    assert!(written.starts_with(PREFACE));
    let f = frames(&written[PREFACE.len()..]);
    assert_eq!(f[0], "SETTINGS ack=false [(2, 0), (1, 4096), (4, 32)]");
    assert_eq!(f[1], "WindowUpdate { stream: 0, increment: 2147418112 }");
    assert!(f[2].starts_with("Headers { stream: 1, end_stream: true, end_headers: true"));
    assert!(f[3].starts_with("Headers { stream: 3, end_stream: false, end_headers: true"));
    assert_eq!(
        f[4],
        r#"Data { stream: 3, end_stream: true, data: [104, 101, 108, 108, 111], pad: None }"#
    );
    assert!(f[6].starts_with("Headers { stream: 7"));
    assert_eq!(
        f[7],
        "Ping { ack: false, data: [0, 0, 0, 0, 7, 91, 205, 21] }"
    );
    assert_eq!(f.len(), 8);
}

#[test]
fn full_exchange() {
    let (mut conn, _) = client();
    let run = drive(&mut conn, &server(), &[]);
    assert_eq!(run.error, None);
    assert_eq!(run.events, expected_events());
    assert_eq!(run.refused, [7]);
    assert_eq!(conn.open_streams(), 0);
    assert_eq!(conn.max_streams(), 8);
    assert!(conn.settings_acked());
    assert_eq!(
        conn.start_request(b"\x82", true, &mut [0u8; 64]),
        Err(SendError::GoingAway)
    );
    assert_eq!(
        frames(&run.written),
        [
            "SETTINGS ack=true []",
            "Ping { ack: true, data: [97, 98, 99, 100, 101, 102, 103, 104] }",
            // Stream 1 received 16 bytes of its 32-byte window (10 of data, 6 of padding).
            "WindowUpdate { stream: 1, increment: 16 }",
        ]
    );
}

#[test]
fn full_exchange_at_every_split() {
    let wire = server();
    let (mut conn, _) = client();
    let whole = drive(&mut conn, &wire, &[]);
    for cut in 0..=wire.len() {
        let (mut conn, _) = client();
        assert_eq!(
            drive(&mut conn, &wire, &[cut]),
            whole,
            "split at byte {cut}"
        );
    }
    let (mut conn, _) = client();
    let every: Vec<usize> = (0..wire.len()).collect();
    assert_eq!(drive(&mut conn, &wire, &every), whole, "one byte per read");
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

/// An HTTP/1.1 server answers the preface with a status line: the
/// connection error says so (not "a frame of 4 740 180 bytes", which is what
/// `HTT` reads as), at any split of the bytes, and the GOAWAY is
/// PROTOCOL_ERROR. After the server's SETTINGS the same bytes are a frame.
#[test]
fn http1_answer_to_the_preface_is_named() {
    let answer = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    for cut in 0..=answer.len() {
        let mut conn = Connection::<8>::new(Config::DEFAULT);
        flush(&mut conn, &mut [0u8; 256], &mut Vec::new());
        let run = drive(&mut conn, answer, &[cut]);
        assert_eq!(run.error, Some(H2Error::Http1Answer), "cut {cut}");
        assert_eq!(
            frames(&run.written),
            ["GoAway { last_stream: 0, code: ErrorCode(1), debug: [] }"]
        );
    }
    assert!(H2Error::Http1Answer
        .to_string()
        .starts_with("the server answered HTTP/1.1, not HTTP/2"));
    let mut conn = ready();
    assert!(matches!(conn.handle_read(answer), Err(H2Error::Frame(_))));
}

#[test]
fn connection_errors_send_goaway() {
    let mut conn = Connection::<8>::new(Config::DEFAULT);
    flush(&mut conn, &mut [0u8; 256], &mut Vec::new());
    let mut w = Vec::new();
    put(
        &mut w,
        Frame::Ping {
            ack: false,
            data: [0; 8],
        },
    );
    let run = drive(&mut conn, &w, &[]);
    assert_eq!(
        run.error,
        Some(H2Error::Protocol(Violation::FirstFrameNotSettings))
    );
    assert_eq!(
        frames(&run.written),
        ["GoAway { last_stream: 0, code: ErrorCode(1), debug: [] }"]
    );
    assert!(!conn.wants_transmit());
    // Later calls give the same error.
    assert_eq!(
        conn.handle_read(&[0; 9]),
        Err(H2Error::Protocol(Violation::FirstFrameNotSettings))
    );
    assert_eq!(
        conn.start_request(b"\x82", true, &mut [0u8; 64]),
        Err(SendError::Closed)
    );

    let cases: Vec<(Frame<'static>, H2Error)> = vec![
        (
            Frame::PushPromise {
                stream: 1,
                end_headers: true,
                promised: 2,
                block: b"",
                pad: None,
            },
            H2Error::Protocol(Violation::PushPromise),
        ),
        (
            Frame::Continuation {
                stream: 1,
                end_headers: true,
                block: b"",
            },
            H2Error::Protocol(Violation::UnexpectedContinuation),
        ),
        (
            Frame::Data {
                stream: 9,
                end_stream: false,
                data: b"x",
                pad: None,
            },
            H2Error::Protocol(Violation::IdleStream),
        ),
        (
            Frame::Headers {
                stream: 2,
                end_stream: false,
                end_headers: true,
                priority: None,
                block: b"\x88",
                pad: None,
            },
            H2Error::Protocol(Violation::IdleStream),
        ),
        (
            Frame::WindowUpdate {
                stream: 0,
                increment: 0,
            },
            H2Error::Protocol(Violation::ZeroWindowIncrement),
        ),
        (
            Frame::WindowUpdate {
                stream: 0,
                increment: 0x7fff_ffff,
            },
            H2Error::FlowControl,
        ),
        (
            Frame::Settings {
                ack: false,
                params: SettingsParams::new(&[0, 2, 0, 0, 0, 1]).unwrap(),
            },
            H2Error::Protocol(Violation::SettingsValue),
        ),
        (
            Frame::Settings {
                ack: false,
                params: SettingsParams::new(&[0, 5, 0, 0, 0x3f, 0xff]).unwrap(),
            },
            H2Error::Protocol(Violation::SettingsValue),
        ),
        (
            Frame::Settings {
                ack: false,
                params: SettingsParams::new(&[0, 4, 0x80, 0, 0, 0]).unwrap(),
            },
            H2Error::FlowControl,
        ),
    ];
    for (f, err) in cases {
        let mut conn = ready();
        conn.start_request(b"\x82", true, &mut [0u8; 64]).unwrap();
        assert_eq!(error_of(&mut conn, f), Some(err), "{f:?}");
    }
    // A malformed frame and a bad HPACK block.
    let mut conn = ready();
    assert!(matches!(
        conn.handle_read(&[0, 0, 1, 6, 0, 0, 0, 0, 0, 0]),
        Err(H2Error::Frame(_))
    ));
    let mut conn = ready();
    conn.start_request(b"\x82", true, &mut [0u8; 64]).unwrap();
    let e = error_of(
        &mut conn,
        Frame::Headers {
            stream: 1,
            end_stream: true,
            end_headers: true,
            priority: None,
            block: b"\xbe",
            pad: None,
        },
    );
    assert!(matches!(e, Some(H2Error::Hpack(_))));
    assert_eq!(e.unwrap().code(), ErrorCode::COMPRESSION_ERROR);
    // A frame between HEADERS and its CONTINUATION.
    let mut conn = ready();
    conn.start_request(b"\x82", true, &mut [0u8; 64]).unwrap();
    let mut w = Vec::new();
    put(
        &mut w,
        Frame::Headers {
            stream: 1,
            end_stream: true,
            end_headers: false,
            priority: None,
            block: b"\x88",
            pad: None,
        },
    );
    put(
        &mut w,
        Frame::Ping {
            ack: false,
            data: [0; 8],
        },
    );
    assert_eq!(
        drive(&mut conn, &w, &[]).error,
        Some(H2Error::Protocol(Violation::ContinuationExpected))
    );
    // A PING flood.
    let mut conn = ready();
    let mut w = Vec::new();
    for _ in 0..9 {
        put(
            &mut w,
            Frame::Ping {
                ack: false,
                data: [0; 8],
            },
        );
    }
    let mut errors = None;
    let mut buf = &w[..];
    while let Ok((n, _)) = conn.handle_read(buf).map_err(|e| errors = Some(e)) {
        buf = &buf[n..];
    }
    assert_eq!(errors, Some(H2Error::PingFlood));
}

#[test]
fn stream_errors_reset_the_stream_only() {
    let mut conn = ready();
    for _ in 0..3 {
        conn.start_request(b"\x82", true, &mut [0u8; 64]).unwrap();
    }
    let mut w = Vec::new();
    // DATA before any head; a head without :status; trailers without END_STREAM.
    put(
        &mut w,
        Frame::Data {
            stream: 1,
            end_stream: false,
            data: b"x",
            pad: None,
        },
    );
    put(
        &mut w,
        Frame::Headers {
            stream: 3,
            end_stream: false,
            end_headers: true,
            priority: None,
            block: b"\x5f\x00",
            pad: None,
        },
    );
    put(
        &mut w,
        Frame::Headers {
            stream: 5,
            end_stream: false,
            end_headers: true,
            priority: None,
            block: b"\x88",
            pad: None,
        },
    );
    put(
        &mut w,
        Frame::Headers {
            stream: 5,
            end_stream: false,
            end_headers: true,
            priority: None,
            block: b"\x00\x01a\x01b",
            pad: None,
        },
    );
    let run = drive(&mut conn, &w, &[]);
    assert_eq!(run.error, None);
    let reset = |stream| Event::StreamReset {
        stream,
        code: ErrorCode::PROTOCOL_ERROR,
        remote: false,
    };
    assert_eq!(
        run.events,
        [
            reset(1),
            reset(3),
            Event::Headers {
                stream: 5,
                status: 200,
                event_stream: false,
                grpc_status: None,
                end_stream: false
            },
            reset(5)
        ]
    );
    assert_eq!(
        frames(&run.written),
        [
            "RstStream { stream: 1, code: ErrorCode(1) }",
            "RstStream { stream: 3, code: ErrorCode(1) }",
            "RstStream { stream: 5, code: ErrorCode(1) }",
        ]
    );
    assert_eq!(conn.open_streams(), 0);
}

#[test]
fn max_concurrent_streams_is_honoured() {
    let mut conn = Connection::<8>::new(Config::DEFAULT);
    let mut out = [0u8; 256];
    assert_eq!(
        conn.start_request(b"\x82", true, &mut out),
        Err(SendError::NotStarted)
    );
    flush(&mut conn, &mut out, &mut Vec::new());
    let mut w = Vec::new();
    put(
        &mut w,
        Frame::Settings {
            ack: false,
            params: SettingsParams::new(&settings(&[(setting::MAX_CONCURRENT_STREAMS, 2)]))
                .unwrap(),
        },
    );
    assert_eq!(conn.server_max_streams(), None);
    drive(&mut conn, &w, &[]);
    assert_eq!(conn.max_streams(), 2);
    assert_eq!(conn.server_max_streams(), Some(2));
    assert_eq!(
        conn.start_request(b"\x82", true, &mut out).map(|r| r.0),
        Ok(1)
    );
    assert_eq!(
        conn.start_request(b"\x82", true, &mut out).map(|r| r.0),
        Ok(3)
    );
    assert!(!conn.can_start());
    assert_eq!(
        conn.start_request(b"\x82", true, &mut out),
        Err(SendError::StreamLimit)
    );
    let mut w = Vec::new();
    put(
        &mut w,
        Frame::Headers {
            stream: 1,
            end_stream: true,
            end_headers: true,
            priority: None,
            block: b"\x88",
            pad: None,
        },
    );
    drive(&mut conn, &w, &[]);
    assert!(conn.can_start());
    assert_eq!(
        conn.start_request(b"\x82", true, &mut out).map(|r| r.0),
        Ok(5)
    );
    // Slots bound it too: Connection<8> never opens a ninth stream.
    let mut conn = ready();
    for _ in 0..8 {
        conn.start_request(b"\x82", true, &mut out).unwrap();
    }
    assert_eq!(conn.max_streams(), 8);
    assert_eq!(
        conn.start_request(b"\x82", true, &mut out),
        Err(SendError::StreamLimit)
    );
    assert_eq!(
        conn.start_request(b"\x82", true, &mut [0u8; 4]),
        Err(SendError::StreamLimit)
    );
}

#[test]
fn server_windows_block_sends_and_report_it() {
    let mut conn = Connection::<8>::new(Config::DEFAULT);
    let mut out = [0u8; 256];
    flush(&mut conn, &mut out, &mut Vec::new());
    let mut w = Vec::new();
    put(
        &mut w,
        Frame::Settings {
            ack: false,
            params: SettingsParams::new(&settings(&[(setting::INITIAL_WINDOW_SIZE, 10)])).unwrap(),
        },
    );
    drive(&mut conn, &w, &[]);
    let (id, _) = conn.start_request(b"\x83", false, &mut out).unwrap();
    let body = [7u8; 30];
    let sent = conn.send_data(id, &body, true, &mut out).unwrap();
    assert_eq!(
        sent,
        Sent {
            consumed: 10,
            written: 19,
            blocked: Some(Blocked::Stream)
        }
    );
    assert_eq!(conn.blocked_sends(), 1);
    // The stream's window opens: the engine is told, and sends the rest.
    let mut w = Vec::new();
    put(
        &mut w,
        Frame::WindowUpdate {
            stream: id,
            increment: 100,
        },
    );
    assert_eq!(drive(&mut conn, &w, &[]).events, [Event::Unblocked]);
    let sent = conn.send_data(id, &body[10..], true, &mut out).unwrap();
    assert_eq!(
        sent,
        Sent {
            consumed: 20,
            written: 29,
            blocked: None
        }
    );
    assert_eq!(
        conn.send_data(id, b"", true, &mut out),
        Err(SendError::UnknownStream)
    );
    // The connection window (65 535 - 30 left) blocks a second stream.
    let (id, _) = conn.start_request(b"\x83", false, &mut out).unwrap();
    let mut w = Vec::new();
    put(
        &mut w,
        Frame::WindowUpdate {
            stream: id,
            increment: 1 << 20,
        },
    );
    drive(&mut conn, &w, &[]);
    let big = vec![1u8; 70_000];
    let mut big_out = vec![0u8; 80_000];
    let sent = conn.send_data(id, &big, true, &mut big_out).unwrap();
    assert_eq!(sent.consumed, 65_535 - 30);
    assert_eq!(sent.blocked, Some(Blocked::Connection));
    // Frames are cut at the server's maximum frame size (16 384).
    assert_eq!(sent.written, sent.consumed + 4 * 9);
    let mut w = Vec::new();
    put(
        &mut w,
        Frame::WindowUpdate {
            stream: 0,
            increment: 100_000,
        },
    );
    assert_eq!(drive(&mut conn, &w, &[]).events, [Event::Unblocked]);
    // An output buffer too short cuts the send without blaming the server.
    let sent = conn.send_data(id, &big[65_505..], true, &mut out).unwrap();
    assert_eq!(
        sent,
        Sent {
            consumed: 256 - 9,
            written: 256,
            blocked: None
        }
    );
}

#[test]
fn receive_windows_are_returned_before_they_stall() {
    // A connection window of 65 535 (no raise): after 32 768 bytes the client returns them.
    let mut conn = Connection::<8>::new(Config {
        stream_window: 1 << 20,
        connection_window: 65_535,
        max_header_list: None,
    });
    let mut out = [0u8; 256];
    let mut first = Vec::new();
    flush(&mut conn, &mut out, &mut first);
    assert_eq!(
        frames(&first[PREFACE.len()..]).len(),
        1,
        "no connection WINDOW_UPDATE"
    );
    let mut w = Vec::new();
    put(
        &mut w,
        Frame::Settings {
            ack: false,
            params: SettingsParams::EMPTY,
        },
    );
    drive(&mut conn, &w, &[]);
    conn.start_request(b"\x82", true, &mut out).unwrap();
    let mut w = Vec::new();
    put(
        &mut w,
        Frame::Headers {
            stream: 1,
            end_stream: false,
            end_headers: true,
            priority: None,
            block: b"\x88",
            pad: None,
        },
    );
    let chunk = vec![0u8; 16_000];
    for _ in 0..4 {
        put_big(
            &mut w,
            Frame::Data {
                stream: 1,
                end_stream: false,
                data: &chunk,
                pad: None,
            },
        );
    }
    let run = drive(&mut conn, &w, &[]);
    assert_eq!(run.error, None);
    assert_eq!(
        frames(&run.written),
        ["WindowUpdate { stream: 0, increment: 48000 }"]
    );
    // More than the window (no WINDOW_UPDATE written in between) is a
    // connection error.
    let mut w = Vec::new();
    put_big(
        &mut w,
        Frame::Data {
            stream: 1,
            end_stream: false,
            data: &chunk,
            pad: None,
        },
    );
    let mut results = Vec::new();
    for _ in 0..4 {
        results.push(conn.handle_read(&w).map(|(n, _)| n));
    }
    assert_eq!(
        results,
        [
            Ok(16_009),
            Ok(16_009),
            Ok(16_009),
            Err(H2Error::FlowControl)
        ]
    );
}

fn put_big(wire: &mut Vec<u8>, f: Frame<'_>) {
    let mut b = vec![0u8; 20_000];
    let n = f.encode(&mut b).unwrap();
    wire.extend_from_slice(&b[..n]);
}

#[test]
fn cancel_and_early_response() {
    let mut conn = ready();
    let mut out = [0u8; 256];
    let (a, _) = conn.start_request(b"\x82", true, &mut out).unwrap();
    let (b, _) = conn.start_request(b"\x83", false, &mut out).unwrap();
    assert!(conn.cancel(a));
    assert!(!conn.cancel(a));
    // The server answers the POST before its body was sent: the client stops.
    let mut w = Vec::new();
    put(
        &mut w,
        Frame::Headers {
            stream: b,
            end_stream: true,
            end_headers: true,
            priority: None,
            block: b"\x88",
            pad: None,
        },
    );
    let run = drive(&mut conn, &w, &[]);
    assert_eq!(
        frames(&run.written),
        [
            "RstStream { stream: 1, code: ErrorCode(8) }",
            "RstStream { stream: 3, code: ErrorCode(8) }"
        ]
    );
    assert_eq!(
        conn.send_data(b, b"x", true, &mut out),
        Err(SendError::UnknownStream)
    );
    assert_eq!(conn.open_streams(), 0);
    let _: Run = run;
}

/// `data_of` hands each DATA event's payload, padding excluded, as a slice
/// of the input given to `handle_read` (what a per-stream SSE decoder reads).
#[test]
fn data_of_gives_each_payload_without_padding() {
    let (mut conn, _) = client();
    let wire = server();
    let mut pos = 0;
    let mut payloads: Vec<(u32, Vec<u8>)> = Vec::new();
    while let Ok((used, event)) = conn.handle_read(&wire[pos..]) {
        if let Some(Event::Data { stream, len, .. }) = event {
            let data = conn.data_of(&wire[pos..], len);
            assert_eq!(data.len(), len);
            payloads.push((stream, data.to_vec()));
        }
        if used == 0 {
            break;
        }
        pos += used;
    }
    assert!(!payloads.is_empty());
    assert_eq!(payloads[0], (1, b"data: hi\n\n".to_vec()));
}
