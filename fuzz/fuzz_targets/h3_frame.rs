//! The HTTP/3 frame reader on arbitrary server bytes, as a request stream
//! or a control stream: never a panic, never more consumed than given, the
//! same frames (DATA pieces joined) and the same end however the input is
//! split into reads; every whole frame read decodes the same from its
//! re-encoding; and QUIC varints round-trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use metronome_core::h3::frame::{decode_payload, encode_header, kind};
use metronome_core::h3::{varint, Frame, FrameReader, H3Error, Role};

/// What the reader made of `wire` split at `cuts`: frames as debug
/// strings (DATA joined between other frames), and how it ended.
fn run(role: Role, wire: &[u8], cuts: &[usize]) -> (Vec<String>, Result<(), H3Error>) {
    let mut reader = FrameReader::<256>::new(role);
    let mut out = Vec::new();
    let mut data = Vec::new();
    let mut at = 0;
    for end in cuts.iter().copied().chain([wire.len()]) {
        let mut rest = &wire[at..end.max(at)];
        at = end.max(at);
        while !rest.is_empty() {
            match reader.read(rest) {
                Ok((n, frame)) => {
                    assert!(n > 0 && n <= rest.len());
                    rest = &rest[n..];
                    match frame {
                        Some(Frame::Data(d)) => {
                            assert!(!d.is_empty());
                            data.extend_from_slice(d);
                        }
                        Some(f) => {
                            if !data.is_empty() {
                                out.push(format!("Data({data:?})"));
                                data.clear();
                            }
                            check_reencode(&f);
                            out.push(format!("{f:?}"));
                        }
                        None => assert!(rest.is_empty()),
                    }
                }
                Err(e) => {
                    if !data.is_empty() {
                        out.push(format!("Data({data:?})"));
                    }
                    return (out, Err(e));
                }
            }
        }
    }
    if !data.is_empty() {
        out.push(format!("Data({data:?})"));
    }
    (out, reader.finish())
}

/// A whole frame, written back as type + length + payload, decodes the same.
fn check_reencode(f: &Frame<'_>) {
    let (ty, payload): (u64, Vec<u8>) = match *f {
        Frame::Headers(b) => (kind::HEADERS, b.to_vec()),
        Frame::Settings(s) => (kind::SETTINGS, s.as_bytes().to_vec()),
        Frame::GoAway(id) => {
            let mut p = [0u8; 8];
            let n = varint::encode(id, &mut p).unwrap();
            (kind::GOAWAY, p[..n].to_vec())
        }
        ref other => panic!("a client never gets {other:?}"),
    };
    let mut head = [0u8; 16];
    let n = encode_header(ty, payload.len() as u64, &mut head).unwrap();
    let (t, m) = varint::decode(&head[..n]).unwrap();
    let (len, k) = varint::decode(&head[m..n]).unwrap();
    assert_eq!((t, len as usize, m + k), (ty, payload.len(), n));
    assert_eq!(decode_payload(ty, &payload), Ok(Some(*f)));
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, wire)) = data.split_first() else {
        return;
    };
    let role = if first & 0x80 != 0 {
        Role::Control
    } else {
        Role::Request
    };
    let whole = run(role, wire, &[]);
    let cut = usize::from(first & 0x7f) * wire.len() / 127;
    assert_eq!(whole, run(role, wire, &[cut]), "split at {cut}");
    let ones: Vec<usize> = (1..wire.len()).collect();
    if wire.len() <= 64 {
        assert_eq!(whole, run(role, wire, &ones), "byte by byte");
    }
    // Varints: whatever decodes re-encodes (shortest form) to the value.
    if let Some((v, n)) = varint::decode(wire) {
        let mut out = [0u8; 8];
        let m = varint::encode(v, &mut out).unwrap();
        assert!(m <= n);
        assert_eq!(varint::decode(&out[..m]), Some((v, m)));
    }
});
