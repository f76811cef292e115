//! Property test of [`Exchange`], the response reader both engines drive
//! (the fuzz targets in `fuzz/` run the same check coverage-guided): on
//! arbitrary bytes, and on valid responses with random bytes flipped, it
//! never panics, never consumes more than it was given, and gives the same
//! result however the bytes are split into reads.

use metronome_core::exchange::{Exchange, Feed};
use metronome_core::ledger::Finish;
use metronome_core::measure::{ErrorKind, StreamTiming};
use proptest::prelude::*;

#[derive(Debug, PartialEq)]
enum End {
    Complete {
        keep_alive: bool,
        unsolicited: bool,
        finish: Owned,
    },
    Failed(Owned),
    Eof(Result<Owned, ErrorKind>),
}

#[derive(Debug, PartialEq)]
enum Owned {
    Finish(String),
    Stream(StreamTiming, Vec<u64>),
}

fn own(f: Finish<'_>) -> Owned {
    match f {
        Finish::Stream { timing, gaps } => Owned::Stream(*timing, gaps.to_vec()),
        other => Owned::Finish(format!("{other:?}")),
    }
}

fn drive(expect_stream: bool, head: bool, wire: &[u8], cuts: &[usize]) -> End {
    let request: &[u8] = if head {
        b"HEAD / HTTP/1.1\r\n\r\n"
    } else {
        b"GET / HTTP/1.1\r\n\r\n"
    };
    let mut ex = Exchange::with_max_head(expect_stream, 512);
    ex.begin(0, 0, request);
    let mut gaps = [0u64; 16];
    let mut buf: Vec<u8> = Vec::new();
    let mut at = 0;
    let mut cut = cuts.iter().cycle();
    while at < wire.len() {
        let n = if cuts.is_empty() {
            wire.len()
        } else {
            (*cut.next().unwrap()).max(1)
        };
        let end = (at + n).min(wire.len());
        buf.extend_from_slice(&wire[at..end]);
        at = end;
        match ex.handle_read(7, &buf, &mut gaps) {
            Ok(Feed::NeedMore { consumed }) => {
                assert!(consumed <= buf.len());
                buf.drain(..consumed);
            }
            Ok(Feed::Complete {
                consumed,
                keep_alive,
                unsolicited,
            }) => {
                assert!(consumed <= buf.len());
                assert!(!unsolicited || !keep_alive);
                let extra = consumed < buf.len() || at < wire.len();
                return End::Complete {
                    keep_alive: keep_alive && !extra,
                    unsolicited: unsolicited || extra,
                    finish: own(ex.finish(&gaps)),
                };
            }
            Err(f) => return End::Failed(own(f)),
        }
    }
    End::Eof(ex.handle_eof(9, &mut gaps).map(|()| own(ex.finish(&gaps))))
}

const VALID: &[&[u8]] = &[
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n\
      30\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n\r\ne\r\ndata: [DONE]\n\n\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]\n\n",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 429 Busy\r\nContent-Length: 2\r\n\r\nno",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_any_split_same_result(
        wire in prop::collection::vec(any::<u8>(), 0..400),
        cuts in prop::collection::vec(1usize..40, 0..6),
        stream in any::<bool>(),
        head in any::<bool>(),
    ) {
        prop_assert_eq!(drive(stream, head, &wire, &[]), drive(stream, head, &wire, &cuts));
    }

    #[test]
    fn mutated_responses_any_split_same_result(
        which in 0..VALID.len(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        cuts in prop::collection::vec(1usize..40, 0..6),
        stream in any::<bool>(),
    ) {
        let mut wire = VALID[which].to_vec();
        for (at, byte) in flips {
            let i = at.index(wire.len());
            wire[i] = byte;
        }
        prop_assert_eq!(drive(stream, false, &wire, &[]), drive(stream, false, &wire, &cuts));
    }
}
