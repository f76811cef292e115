//! The HTTP/2 frame reader and the client connection on arbitrary server
//! bytes: never a panic, never more consumed than given; every frame read
//! is written back to the same bytes' meaning (encode then read gives the
//! same frame); and the connection reports the same events and writes the
//! same bytes however the input is split into reads.
#![no_main]

use libfuzzer_sys::fuzz_target;
use metronome_core::h2::frame::{read_frame, DEFAULT_MAX_FRAME_SIZE};
use metronome_core::h2::{Config, Connection};

#[path = "../../core/tests/h2_drive/mod.rs"]
mod h2_drive;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, wire)) = data.split_first() else {
        return;
    };
    // The frame reader alone.
    let mut rest = wire;
    while let Ok(Some((frame, n))) = read_frame(rest, DEFAULT_MAX_FRAME_SIZE) {
        assert!(n <= rest.len());
        let mut out = vec![0u8; n + 16];
        let m = frame.encode(&mut out).expect("a frame read fits where it came from");
        assert_eq!(read_frame(&out[..m], DEFAULT_MAX_FRAME_SIZE), Ok(Some((frame, m))));
        rest = &rest[n..];
    }
    // The connection, with a few streams open, whole and split.
    let run = |cuts: &[usize]| {
        let mut conn = Connection::<4>::new(Config { stream_window: 1 << 16, ..Config::DEFAULT });
        let mut out = [0u8; 128];
        h2_drive::flush(&mut conn, &mut out, &mut Vec::new());
        // Streams can start only after the preface; before SETTINGS too.
        for body in [None, Some(&b"body"[..]), None] {
            if let Ok((id, _)) = conn.start_request(b"\x82\x86\x84", body.is_none(), &mut out) {
                if let Some(b) = body {
                    let _ = conn.send_data(id, b, true, &mut out);
                }
            }
        }
        h2_drive::drive(&mut conn, wire, cuts)
    };
    let whole = run(&[]);
    let cut = usize::from(cut) * wire.len() / 255;
    assert_eq!(whole, run(&[cut]), "split at {cut}");
});
