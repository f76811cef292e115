//! The response reader behind both engines (core's `Exchange`) on arbitrary
//! bytes: it never panics, never consumes more than it was given, and gives
//! the same result however the bytes are split into reads (a differential
//! check of every split the fuzzer chooses against the whole input).
#![no_main]

use libfuzzer_sys::fuzz_target;
use metronome_core::exchange::{Exchange, Feed};
use metronome_core::ledger::Finish;
use metronome_core::measure::{ErrorKind, StreamTiming};

/// How a drive ended, owned so two drives compare.
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

/// Feeds `wire` cut at `cuts` (sizes), the way an engine does; then the end
/// of file. Every read happens at the same time, so timings compare.
fn drive(flags: u8, wire: &[u8], cuts: &[u8]) -> End {
    let expect_stream = flags & 1 != 0;
    let request: &[u8] = if flags & 2 != 0 {
        b"HEAD / HTTP/1.1\r\n\r\n"
    } else {
        b"GET / HTTP/1.1\r\n\r\n"
    };
    let max_head = 64 + usize::from(flags >> 2) * 256;
    let mut ex = Exchange::with_max_head(expect_stream, max_head);
    ex.begin(0, 0, request);
    let mut gaps = [0u64; 64];
    let mut buf: Vec<u8> = Vec::new();
    let mut at = 0;
    let mut cut = cuts.iter().cycle();
    while at < wire.len() {
        let n = if cuts.is_empty() {
            wire.len()
        } else {
            usize::from(*cut.next().unwrap()).max(1)
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
                // Unsolicited: bytes after the response, whether in this read or later.
                let extra = consumed < buf.len() || at < wire.len();
                assert!(!unsolicited || !keep_alive);
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

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let flags = data[0];
    let ncuts = usize::from(data[1] % 8).min(data.len() - 2);
    let (cuts, wire) = data[2..].split_at(ncuts);
    let whole = drive(flags, wire, &[]);
    let split = drive(flags, wire, cuts);
    assert_eq!(whole, split, "split {cuts:?} of {wire:?}");
});
