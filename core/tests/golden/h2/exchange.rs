//! The client's preface and requests, and the full exchange against
//! hand-built server bytes, the same at every split of them; cancels and early responses; DATA payloads without padding.

use super::*;

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
