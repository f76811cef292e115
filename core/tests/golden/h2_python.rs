//! Cross-checks against implementations nobody here wrote: Python's
//! `hpack` and `h2` packages made the bytes in `tests/data/h2/` (the script
//! that made them, `gen.py`, is beside them, with the versions in the JSON).
//!
//! - `hpack_blocks.bin`: header blocks from hpack's encoder (Huffman,
//!   indexing, evictions, table size updates): the fields and the dynamic
//!   table's size and length after each must match hpack's decoder.
//! - `server.bin`: an h2 server connection's bytes to a client with
//!   streams 1, 3, 5, 7 and 9 open (a header block over HEADERS +
//!   CONTINUATION, padded DATA, gRPC trailers, RST_STREAM, PING,
//!   WINDOW_UPDATE, GOAWAY): the events in `server.json`, at many splits.

use crate::h2_drive::{drive, flush};
use metronome_core::h2::frame::read_frame;
use metronome_core::h2::hpack::Decoder;
use metronome_core::h2::{Config, Connection, Event};
use serde_json::{json, Value};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/h2/");

fn load(name: &str) -> Vec<u8> {
    std::fs::read(format!("{DATA}{name}")).unwrap()
}

#[test]
fn hpack_blocks_from_python_hpack() {
    let bytes = load("hpack_blocks.bin");
    let meta: Value = serde_json::from_slice(&load("hpack_blocks.json")).unwrap();
    let mut dec = Decoder::<4096>::new();
    let blocks = meta["blocks"].as_array().unwrap();
    assert_eq!(blocks.len(), 5);
    for b in blocks {
        let (at, len) = (
            b["offset"].as_u64().unwrap() as usize,
            b["len"].as_u64().unwrap() as usize,
        );
        let mut fields = Vec::new();
        dec.decode(&bytes[at..at + len], |n, v| {
            fields.push(json!([
                String::from_utf8_lossy(n),
                String::from_utf8_lossy(v)
            ]))
        })
        .unwrap();
        assert_eq!(Value::Array(fields), b["fields"]);
        assert_eq!(dec.table().size() as u64, b["table_size"].as_u64().unwrap());
        assert_eq!(dec.table().len() as u64, b["table_len"].as_u64().unwrap());
    }
}

fn to_json(e: &Event) -> Value {
    match *e {
        Event::Ready => json!({"Ready": null}),
        Event::Headers {
            stream,
            status,
            event_stream,
            grpc_status,
            end_stream,
        } => {
            json!({"Headers": {"stream": stream, "status": status, "event_stream": event_stream, "grpc_status": grpc_status, "end_stream": end_stream}})
        }
        Event::Data {
            stream,
            len,
            end_stream,
        } => json!({"Data": {"stream": stream, "len": len, "end_stream": end_stream}}),
        Event::Trailers {
            stream,
            grpc_status,
        } => json!({"Trailers": {"stream": stream, "grpc_status": grpc_status}}),
        Event::StreamReset {
            stream,
            code,
            remote,
        } => json!({"StreamReset": {"stream": stream, "code": code.0, "remote": remote}}),
        Event::GoAway {
            last_stream,
            code,
            refused,
        } => json!({"GoAway": {"last_stream": last_stream, "code": code.0, "refused": refused}}),
        other => json!(format!("{other:?}")),
    }
}

/// The client: five GETs open, as the Python client had.
fn client() -> Connection<16, 4096, 32768> {
    let mut conn = Connection::<16, 4096, 32768>::new(Config::DEFAULT);
    let mut out = [0u8; 256];
    flush(&mut conn, &mut out, &mut Vec::new());
    for id in [1, 3, 5, 7, 9] {
        assert_eq!(
            conn.start_request(b"\x82\x86\x84\x41\x09localhost", true, &mut out)
                .unwrap()
                .0,
            id
        );
    }
    conn
}

#[test]
fn server_bytes_from_python_h2() {
    let wire = load("server.bin");
    let expected: Value = serde_json::from_slice(&load("server.json")).unwrap();
    let mut conn = client();
    let whole = drive(&mut conn, &wire, &[]);
    assert_eq!(whole.error, None);
    assert_eq!(
        Value::Array(whole.events.iter().map(to_json).collect()),
        expected["events"]
    );
    assert_eq!(json!(whole.refused), expected["refused"]);
    assert_eq!(conn.open_streams(), 0);
    assert!(conn.settings_acked());
    assert_eq!(conn.max_streams(), 16); // the server allows 50

    // Every split outside the 21 kB header block, every 97th inside it,
    // and every frame boundary plus or minus one.
    let mut frame_ends = Vec::new();
    let mut at = 0;
    while at < wire.len() {
        let (_, n) = read_frame(&wire[at..], 16_384).unwrap().unwrap();
        at += n;
        frame_ends.push(at);
    }
    let (big_from, big_to) = (frame_ends[2], frame_ends[4]);
    let cuts = (0..=wire.len()).filter(|&c| {
        c <= big_from
            || c >= big_to
            || (c - big_from) % 97 == 0
            || frame_ends.iter().any(|&e| c.abs_diff(e) <= 1)
    });
    for cut in cuts {
        let mut conn = client();
        assert_eq!(
            drive(&mut conn, &wire, &[cut]),
            whole,
            "split at byte {cut}"
        );
    }
}

#[test]
fn our_encoder_decodes_in_python_hpack() {
    // gen.py checked that hpack decodes these blocks to `request`; here the
    // Rust encoder must still write exactly them.
    use metronome_core::h2::hpack::encode_request;
    let meta: Value = serde_json::from_slice(&load("our_encoder.json")).unwrap();
    let headers: [(&[u8], &[u8]); 5] = [
        (b"Content-Type", b"application/json"),
        (b"Authorization", b"Bearer sk-0123456789"),
        (b"TE", b"trailers"),
        (b"Connection", b"keep-alive"),
        (b"x-custom-header", b"Mixed Case Value!"),
    ];
    for (huffman, expected) in [false, true]
        .into_iter()
        .zip(meta["blocks"].as_array().unwrap())
    {
        let mut b = [0u8; 512];
        let n = encode_request(
            b"POST",
            b"https",
            b"api.example.com:8443",
            b"/v1/chat/completions?stream=true",
            &headers,
            huffman,
            &mut b,
        )
        .unwrap();
        let hex: String = b[..n].iter().map(|x| format!("{x:02x}")).collect();
        assert_eq!(hex, expected.as_str().unwrap());
        let mut fields = Vec::new();
        Decoder::<4096>::new()
            .decode(&b[..n], |k, v| {
                fields.push(json!([
                    String::from_utf8_lossy(k),
                    String::from_utf8_lossy(v)
                ]))
            })
            .unwrap();
        assert_eq!(Value::Array(fields), meta["request"]);
    }
}
