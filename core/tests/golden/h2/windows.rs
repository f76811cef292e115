//! Limits the server sets: MAX_CONCURRENT_STREAMS honoured,
//! MAX_HEADER_LIST_SIZE kept (a larger request is not sent), the server's
//! windows blocking sends (and reported), the receive windows returned
//! before they stall.

use super::*;

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

/// The server's MAX_HEADER_LIST_SIZE: a plan's request whose field list
/// (name + value + 32 per field) is larger is refused with the limit and
/// nothing is written; one at the limit goes, as HEADERS byte for byte.
#[test]
fn max_header_list_size_is_kept() {
    use metronome_core::h2::request::from_http1;
    use metronome_core::plan::EncodedRequest;
    let mut conn = Connection::<8>::new(Config::DEFAULT);
    let mut out = [0u8; 512];
    flush(&mut conn, &mut out, &mut Vec::new());
    let pad = "p".repeat(40);
    let long = format!("GET / HTTP/1.1\r\nHost: a\r\nx-pad: {pad}\r\n\r\n");
    let short = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    let mut blocks = [[0u8; 128]; 2];
    let [b0, b1] = &mut blocks;
    let l = from_http1(long.as_bytes(), b"http", b0).unwrap();
    let s = from_http1(short.as_bytes(), b"http", b1).unwrap();
    // :method GET 10+32, :scheme http 11+32, :authority a 11+32, :path / 6+32.
    assert_eq!(s.list_size, 38 + 4 * 32);
    assert_eq!(l.list_size, s.list_size + 5 + 40 + 32);
    let long = EncodedRequest {
        block: &b0[..l.len],
        body: b"",
        list_size: l.list_size,
    };
    let short = EncodedRequest {
        block: &b1[..s.len],
        body: b"",
        list_size: s.list_size,
    };
    // Before the server says: unlimited.
    assert_eq!(conn.server_max_header_list(), None);
    let limit = u32::try_from(s.list_size + 1).unwrap();
    let mut w = Vec::new();
    put(
        &mut w,
        Frame::Settings {
            ack: false,
            params: SettingsParams::new(&settings(&[(setting::MAX_HEADER_LIST_SIZE, limit)]))
                .unwrap(),
        },
    );
    // The SETTINGS frame as the server sends it.
    assert_eq!(
        w,
        [&[0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0][..], &[167]].concat()
    );
    drive(&mut conn, &w, &[]);
    assert_eq!(conn.server_max_header_list(), Some(limit));
    assert_eq!(
        conn.start_planned(&long, &mut out),
        Err(SendError::TooLarge { limit })
    );
    assert_eq!(conn.open_streams(), 0);
    assert_eq!(
        SendError::TooLarge { limit }.to_string(),
        "the request's header list is larger than the server's SETTINGS_MAX_HEADER_LIST_SIZE \
         (167 bytes)"
    );
    let (id, n) = conn.start_planned(&short, &mut out).unwrap();
    let mut headers = vec![0, 0, s.len as u8, 1, 5, 0, 0, 0, 1];
    headers.extend_from_slice(short.block);
    assert_eq!((id, &out[..n]), (1, &headers[..]));
    // A lower limit later: the short one is refused too.
    let mut w = Vec::new();
    put(
        &mut w,
        Frame::Settings {
            ack: false,
            params: SettingsParams::new(&settings(&[(setting::MAX_HEADER_LIST_SIZE, 100)]))
                .unwrap(),
        },
    );
    drive(&mut conn, &w, &[]);
    assert_eq!(
        conn.start_planned(&short, &mut out),
        Err(SendError::TooLarge { limit: 100 })
    );
    assert_eq!(conn.open_streams(), 1);
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
