//! The frame reader's tests, every role, reads of every size.

use super::*;
use std::vec::Vec;

/// What a reader made of `wire` fed in reads of `step` bytes: DATA
/// pieces joined per frame run, other frames as debug strings.
fn run<const N: usize>(
    role: Role,
    wire: &[u8],
    step: usize,
) -> (Vec<std::string::String>, Result<(), H3Error>) {
    let mut r = FrameReader::<N>::new(role);
    let mut out = Vec::new();
    let mut data = Vec::new();
    for chunk in wire.chunks(step.max(1)) {
        let mut rest = chunk;
        while !rest.is_empty() {
            match r.read(rest) {
                Ok((n, f)) => {
                    assert!(n > 0 && n <= rest.len());
                    rest = &rest[n..];
                    match f {
                        Some(Frame::Data(d)) => data.extend_from_slice(d),
                        Some(f) => {
                            if !data.is_empty() {
                                out.push(std::format!(
                                    "Data({:?})",
                                    std::string::String::from_utf8_lossy(&data)
                                ));
                                data.clear();
                            }
                            out.push(std::format!("{f:?}"));
                        }
                        None => assert!(rest.is_empty()),
                    }
                }
                Err(e) => return (out, Err(e)),
            }
        }
    }
    if !data.is_empty() {
        out.push(std::format!(
            "Data({:?})",
            std::string::String::from_utf8_lossy(&data)
        ));
    }
    (out, r.finish())
}

#[test]
fn response_split_at_every_byte() {
    let mut wire = Vec::new();
    // HEADERS, a reserved frame (0x21, 3 bytes), an unknown type with
    // a 2-byte varint (0x4041), DATA split over two frames with a
    // 2-byte length, an empty DATA, trailing HEADERS.
    wire.extend_from_slice(&[0x01, 0x03, 0x00, 0x00, 0xd9]);
    wire.extend_from_slice(&[0x21, 0x03, 1, 2, 3]);
    wire.extend_from_slice(&[0x40, 0x41, 0x00]);
    wire.extend_from_slice(&[0x00, 0x40, 0x05]);
    wire.extend_from_slice(b"hello");
    wire.extend_from_slice(&[0x00, 0x00]);
    wire.extend_from_slice(&[0x00, 0x06]);
    wire.extend_from_slice(b" world");
    wire.extend_from_slice(&[0x01, 0x02, 0x00, 0x00]);
    let expected = [
        "Headers([0, 0, 217])",
        "Data(\"hello world\")",
        "Headers([0, 0])",
    ];
    for step in 1..=wire.len() {
        let (frames, end) = run::<16>(Role::Request, &wire, step);
        assert_eq!(frames, expected, "step {step}");
        assert_eq!(end, Ok(()));
    }
    let mut r = FrameReader::<16>::new(Role::Request);
    let mut rest = &wire[..];
    while let Ok((n, _)) = r.read(rest) {
        if n == 0 {
            break;
        }
        rest = &rest[n..];
    }
    assert_eq!((r.frames(), r.skipped()), (7, 2));
    // Cut anywhere inside a frame: the end is a frame error.
    for cut in 1..wire.len() {
        let (_, end) = run::<16>(Role::Request, &wire[..cut], cut);
        let boundary = [5, 10, 13, 21, 23, 31, 35].contains(&cut);
        assert_eq!(end.is_ok(), boundary, "cut {cut}");
    }
    assert_eq!(
        run::<16>(Role::Request, &[0x40], 1).1,
        Err(H3Error::Frame { ty: u64::MAX })
    );
    assert_eq!(
        run::<16>(Role::Request, &[0x01, 0x02, 0x00], 1).1,
        Err(H3Error::Frame { ty: 1 })
    );
}

#[test]
fn request_stream_refusals() {
    let cases: [(&[u8], H3Error); 8] = [
        (&[0x00, 0x01, b'x'], H3Error::Unexpected { ty: 0 }),
        (&[0x05, 0x02, 0x00, 0x00], H3Error::Id),
        (&[0x01, 0x00, 0x04, 0x00], H3Error::Unexpected { ty: 4 }),
        (
            &[0x01, 0x00, 0x07, 0x01, 0x00],
            H3Error::Unexpected { ty: 7 },
        ),
        (
            &[0x01, 0x00, 0x0d, 0x01, 0x00],
            H3Error::Unexpected { ty: 0x0d },
        ),
        (
            &[0x01, 0x00, 0x03, 0x01, 0x00],
            H3Error::Unexpected { ty: 3 },
        ),
        (&[0x01, 0x00, 0x09, 0x00], H3Error::Unexpected { ty: 9 }),
        // HEADERS longer than the buffer, refused before its payload.
        (&[0x01, 0x11], H3Error::TooLarge { ty: 1, len: 17 }),
    ];
    for (wire, err) in cases {
        assert_eq!(run::<16>(Role::Request, wire, 1).1, Err(err), "{wire:?}");
        assert!(err.code().name().unwrap().starts_with("H3_"));
    }
    assert_eq!(H3Error::TooLarge { ty: 1, len: 17 }.code().0, 0x107);
    // Exactly N bytes is fine; a huge unknown frame is skipped unseen.
    let mut wire = std::vec![0x01, 0x10];
    wire.extend_from_slice(&[0x00, 0x00]);
    wire.extend_from_slice(&[0xd9; 14]);
    wire.extend_from_slice(&[0x21, 0x80, 0x01, 0x00, 0x00]);
    wire.extend_from_slice(&[7u8; 65536]);
    let (frames, end) = run::<16>(Role::Request, &wire, 1000);
    assert_eq!(frames.len(), 1);
    assert_eq!(end, Ok(()));
}

#[test]
fn control_stream() {
    let mut settings = [0u8; 32];
    let n = encode_settings(4096, &mut settings).unwrap();
    let mut wire = settings[..n].to_vec();
    wire.extend_from_slice(&[0x21, 0x00]); // reserved, empty
    wire.extend_from_slice(&[0x07, 0x01, 0x08]); // GOAWAY 8
    wire.extend_from_slice(&[0x07, 0x01, 0x04]); // GOAWAY 4
    for step in 1..=wire.len() {
        let (frames, end) = run::<64>(Role::Control, &wire, step);
        assert_eq!(
            frames,
            [
                "Settings(Settings([1, 0, 7, 0, 6, 80, 0]))",
                "GoAway(8)",
                "GoAway(4)"
            ]
        );
        assert_eq!(end, Err(H3Error::ClosedCriticalStream));
    }
    let s = Settings::parse(&settings[2..n]).unwrap();
    assert_eq!(s.iter().collect::<Vec<_>>(), [(1, 0), (7, 0), (6, 4096)]);
    let cases: [(&[u8], H3Error); 10] = [
        (&[0x07, 0x01, 0x00], H3Error::MissingSettings),
        (&[0x21, 0x00], H3Error::MissingSettings),
        (&[0x04, 0x00, 0x04, 0x00], H3Error::Unexpected { ty: 4 }),
        (&[0x04, 0x00, 0x00, 0x00], H3Error::Unexpected { ty: 0 }),
        (&[0x04, 0x00, 0x01, 0x00], H3Error::Unexpected { ty: 1 }),
        (
            &[0x04, 0x00, 0x0d, 0x01, 0x00],
            H3Error::Unexpected { ty: 0x0d },
        ),
        (&[0x04, 0x00, 0x03, 0x01, 0x00], H3Error::Id),
        (&[0x04, 0x00, 0x07, 0x01, 0x02], H3Error::Id),
        (
            &[0x04, 0x00, 0x07, 0x01, 0x04, 0x07, 0x01, 0x08],
            H3Error::Id,
        ),
        (
            &[0x04, 0x00, 0x07, 0x02, 0x04, 0x00],
            H3Error::Frame { ty: 7 },
        ),
    ];
    for (wire, err) in cases {
        assert_eq!(run::<16>(Role::Control, wire, 1).1, Err(err), "{wire:?}");
    }
    assert_eq!(
        run::<16>(Role::Control, &[0x04, 0x02, 0x02, 0x00], 4).1,
        Err(H3Error::Settings)
    );
    assert_eq!(
        run::<16>(Role::Control, &[0x04, 0x01, 0x06], 4).1,
        Err(H3Error::Frame { ty: 4 })
    );
    assert_eq!(
        run::<16>(Role::Control, &[0x04, 0x00, 0x07, 0x09], 4).1,
        Err(H3Error::Frame { ty: 7 })
    );
}

#[test]
fn writers() {
    let mut out = [0u8; 32];
    let n = encode_control_stream_start(100, &mut out).unwrap();
    assert_eq!(
        &out[..n],
        [0x00, 0x04, 0x07, 0x01, 0x00, 0x07, 0x00, 0x06, 0x40, 0x64]
    );
    let n = encode_headers(&[0x00, 0x00, 0xd1], &mut out).unwrap();
    assert_eq!(&out[..n], [0x01, 0x03, 0x00, 0x00, 0xd1]);
    assert_eq!(encode_headers(&[0; 31], &mut out), None);
    assert_eq!(encode_data_header(1 << 30, &mut out), Some(9));
    assert_eq!(&out[..9], [0x00, 0xc0, 0, 0, 0, 0x40, 0, 0, 0]);
    assert_eq!(encode_settings(0, &mut out[..8]), Some(8));
    assert_eq!(encode_settings(0, &mut out[..7]), None);
    assert_eq!(
        StreamType::from_u64(0x1f * 3 + 0x21),
        StreamType::Reserved(0x1f * 3 + 0x21)
    );
    assert_eq!(StreamType::from_u64(0x54), StreamType::Unknown(0x54));
    for v in [0, 1, 2, 3, 0x21, 0x54] {
        assert_eq!(StreamType::from_u64(v).to_u64(), v);
    }
}

#[test]
fn client_request_stream() {
    // HEADERS, DATA "ab" + "c", a reserved frame, trailers, then a frame to skip.
    let wire: &[u8] = &[
        0x01, 0x01, 0x00, 0x00, 0x02, b'a', b'b', 0x00, 0x01, b'c', 0x21, 0x01, 0x09, 0x01, 0x02,
        0x00, 0x00, 0x21, 0x00,
    ];
    for step in 1..=wire.len() {
        let (frames, end) = run::<16>(Role::ClientRequest, wire, step);
        assert_eq!(
            frames,
            ["Headers([0])", "Data(\"abc\")", "Headers([0, 0])"],
            "step {step}"
        );
        assert_eq!(end, Ok(()));
    }
    let cases: [(&[u8], H3Error); 9] = [
        (&[0x00, 0x01, b'x'], H3Error::Unexpected { ty: 0 }),
        // A client never sends PUSH_PROMISE.
        (
            &[0x01, 0x00, 0x05, 0x02, 0x00, 0x00],
            H3Error::Unexpected { ty: 5 },
        ),
        (&[0x01, 0x00, 0x04, 0x00], H3Error::Unexpected { ty: 4 }),
        (
            &[0x01, 0x00, 0x07, 0x01, 0x00],
            H3Error::Unexpected { ty: 7 },
        ),
        (
            &[0x01, 0x00, 0x0d, 0x01, 0x00],
            H3Error::Unexpected { ty: 0x0d },
        ),
        (
            &[0x01, 0x00, 0x03, 0x01, 0x00],
            H3Error::Unexpected { ty: 3 },
        ),
        (&[0x01, 0x00, 0x06, 0x00], H3Error::Unexpected { ty: 6 }),
        // DATA or HEADERS after the trailers.
        (
            &[0x01, 0x00, 0x01, 0x00, 0x00, 0x00],
            H3Error::Unexpected { ty: 0 },
        ),
        (
            &[0x01, 0x00, 0x01, 0x00, 0x01, 0x00],
            H3Error::Unexpected { ty: 1 },
        ),
    ];
    for (wire, err) in cases {
        assert_eq!(
            run::<16>(Role::ClientRequest, wire, 1).1,
            Err(err),
            "{wire:?}"
        );
    }
    // Ended inside a frame.
    assert_eq!(
        run::<16>(Role::ClientRequest, &[0x01, 0x00, 0x00, 0x03, b'a'], 2).1,
        Err(H3Error::Frame { ty: 0 })
    );
}

#[test]
fn client_control_stream() {
    let mut settings = [0u8; 32];
    let n = encode_settings(4096, &mut settings).unwrap();
    let mut wire = settings[..n].to_vec();
    wire.extend_from_slice(&[0x0d, 0x01, 0x03]); // MAX_PUSH_ID 3
    wire.extend_from_slice(&[0x03, 0x01, 0x02]); // CANCEL_PUSH 2
    wire.extend_from_slice(&[0x0d, 0x01, 0x05]); // MAX_PUSH_ID 5
    wire.extend_from_slice(&[0x07, 0x01, 0x07]); // GOAWAY push ID 7
    wire.extend_from_slice(&[0x07, 0x01, 0x01]); // GOAWAY push ID 1
    for step in 1..=wire.len() {
        let (frames, end) = run::<64>(Role::ClientControl, &wire, step);
        assert_eq!(
            frames,
            [
                "Settings(Settings([1, 0, 7, 0, 6, 80, 0]))",
                "MaxPushId(3)",
                "CancelPush(2)",
                "MaxPushId(5)",
                "GoAway(7)",
                "GoAway(1)"
            ]
        );
        assert_eq!(end, Err(H3Error::ClosedCriticalStream));
    }
    let cases: [(&[u8], H3Error); 7] = [
        (&[0x0d, 0x01, 0x00], H3Error::MissingSettings),
        (&[0x04, 0x00, 0x04, 0x00], H3Error::Unexpected { ty: 4 }),
        (&[0x04, 0x00, 0x01, 0x00], H3Error::Unexpected { ty: 1 }),
        (
            &[0x04, 0x00, 0x05, 0x01, 0x00],
            H3Error::Unexpected { ty: 5 },
        ),
        // MAX_PUSH_ID lowered; CANCEL_PUSH with no or above the maximum;
        // GOAWAY raised.
        (
            &[0x04, 0x00, 0x0d, 0x01, 0x04, 0x0d, 0x01, 0x03],
            H3Error::Id,
        ),
        (&[0x04, 0x00, 0x03, 0x01, 0x00], H3Error::Id),
        (
            &[0x04, 0x00, 0x07, 0x01, 0x01, 0x07, 0x01, 0x02],
            H3Error::Id,
        ),
    ];
    for (wire, err) in cases {
        assert_eq!(
            run::<16>(Role::ClientControl, wire, 1).1,
            Err(err),
            "{wire:?}"
        );
    }
    assert_eq!(
        run::<16>(
            Role::ClientControl,
            &[0x04, 0x00, 0x0d, 0x01, 0x01, 0x03, 0x01, 0x02],
            1
        )
        .1,
        Err(H3Error::Id)
    );
}
