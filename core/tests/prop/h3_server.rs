//! The server's side of core's HTTP/3 on mutated input, a cheap,
//! deterministic stand-in for a fuzz target, run with the tests: request
//! field sections with bytes replaced, removed, inserted or cut never
//! panic `decode_request` or `decode_trailers`; a section accepted as a
//! request re-encodes (raw and Huffman) to one accepted the same; mutated
//! client streams give the frame reader the same frames and end whole and
//! byte by byte, in both server roles.

use metronome_core::h3::qpack::{encode_field, encode_prefix, encode_request, Decoder};
use metronome_core::h3::{FrameReader, H3Error, Role};
use metronome_core::rng::Pcg32;

/// `base` mutated 1 to 4 times by `rng`.
fn mutate(base: &[u8], rng: &mut Pcg32) -> Vec<u8> {
    let mut wire = base.to_vec();
    for _ in 0..1 + rng.below(4) {
        if wire.is_empty() {
            break;
        }
        let i = rng.below(wire.len() as u64) as usize;
        match rng.below(4) {
            0 => wire[i] = rng.next_u32() as u8,
            1 => {
                wire.remove(i);
            }
            2 => wire.insert(i, rng.next_u32() as u8),
            _ => wire.truncate(i),
        }
    }
    wire
}

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

fn request(block: &[u8]) -> Option<(Fields, metronome_core::h3::head::RequestSection)> {
    let mut fields = Vec::new();
    let r = Decoder::<512>::new()
        .decode_request(block, |n, v| fields.push((n.to_vec(), v.to_vec())))
        .ok()?;
    assert_eq!(r.fields, fields.len());
    Some((fields, r))
}

#[test]
fn mutated_request_sections_never_panic_and_round_trip() {
    let mut block = [0u8; 256];
    let n = encode_request(
        b"POST",
        b"https",
        b"example.com",
        b"/v1/chat/completions",
        &[
            (b"content-type", b"application/json"),
            (b"content-length", b"42"),
        ],
        true,
        &mut block,
    )
    .unwrap();
    let base = &block[..n];
    assert!(request(base).is_some());
    let mut rng = Pcg32::seeded(34);
    let mut accepted = 0;
    for _ in 0..5000 {
        let wire = mutate(base, &mut rng);
        let _ = Decoder::<512>::new().decode_trailers(&wire, |n, _| {
            assert!(n.first() != Some(&b':'), "a pseudo-header in trailers");
        });
        let Some((fields, section)) = request(&wire) else {
            continue;
        };
        accepted += 1;
        for huffman in [false, true] {
            let mut out = vec![0u8; 4 * wire.len() + 16];
            let mut k = encode_prefix(&mut out).unwrap();
            for (name, value) in &fields {
                k += encode_field(name, value, huffman, &mut out[k..]).unwrap();
            }
            assert_eq!(request(&out[..k]), Some((fields.clone(), section)));
        }
    }
    // Some mutations keep the head valid (a changed value, a cut field).
    assert!(accepted > 0);
}

/// The frames and end of `wire` read by a server in `role`, in reads of
/// `step` bytes.
fn frames(role: Role, wire: &[u8], step: usize) -> (Vec<String>, Result<(), H3Error>) {
    let mut r = FrameReader::<64>::new(role);
    let mut out = Vec::new();
    for chunk in wire.chunks(step) {
        let mut rest = chunk;
        while !rest.is_empty() {
            match r.read(rest) {
                Ok((n, f)) => {
                    assert!(n > 0 && n <= rest.len());
                    rest = &rest[n..];
                    if let Some(f) = f {
                        out.push(format!("{f:?}"));
                    }
                }
                Err(e) => return (out, Err(e)),
            }
        }
    }
    (out, r.finish())
}

#[test]
fn mutated_client_streams_read_the_same_whole_and_byte_by_byte() {
    // A request stream (HEADERS, DATA, trailers) and a control stream
    // (SETTINGS, MAX_PUSH_ID, CANCEL_PUSH, GOAWAY).
    let request: &[u8] = &[
        0x01, 0x03, 0x00, 0x00, 0xd1, 0x00, 0x02, b'o', b'k', 0x21, 0x00, 0x01, 0x02, 0x00, 0x00,
    ];
    let control: &[u8] = &[
        0x04, 0x04, 0x01, 0x00, 0x06, 0x20, 0x0d, 0x01, 0x05, 0x03, 0x01, 0x02, 0x07, 0x01, 0x04,
    ];
    let mut rng = Pcg32::seeded(9114);
    for (role, base) in [
        (Role::ClientRequest, request),
        (Role::ClientControl, control),
    ] {
        for _ in 0..2000 {
            let wire = mutate(base, &mut rng);
            // DATA pieces differ by read size; compare without them.
            let strip = |(f, e): (Vec<String>, Result<(), H3Error>)| {
                let f: Vec<String> = f.into_iter().filter(|s| !s.starts_with("Data")).collect();
                (f, e)
            };
            let whole = strip(frames(role, &wire, wire.len().max(1)));
            assert_eq!(whole, strip(frames(role, &wire, 1)), "{role:?} {wire:02x?}");
        }
    }
}
