//! Errors as the server causes them: an HTTP/1 answer to the preface
//! named, connection errors answered with GOAWAY, stream errors resetting
//! only their stream.

use super::*;

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
