//! One driver of core's response reader for the split-equivalence checks,
//! shared by `core/tests/prop/exchange.rs` and the fuzz target
//! `fuzz/fuzz_targets/exchange.rs` (which includes this file by path):
//! feed a response the way an engine does, cut into reads of given sizes,
//! then the end of file, and describe how it ended in owned, comparable form.

use metronome_core::exchange::{Exchange, Feed, Finish};
use metronome_core::measure::{ErrorKind, StreamTiming};

/// How one drive ended.
#[derive(Debug, PartialEq)]
pub enum End {
    /// The response completed. `keep_alive` and `unsolicited` as an engine
    /// sees them: bytes after the response, in the same read or a later
    /// one, are unsolicited and end keep-alive.
    Complete {
        keep_alive: bool,
        unsolicited: bool,
        finish: Owned,
    },
    /// The reader refused the response.
    Failed(Owned),
    /// Every byte was fed; then the end of file.
    Eof(Result<Owned, ErrorKind>),
}

/// A [`Finish`], owned.
#[derive(Debug, PartialEq)]
pub enum Owned {
    Finish(String),
    Stream(StreamTiming, Vec<u64>),
}

fn own(f: Finish<'_>) -> Owned {
    match f {
        Finish::Stream { timing, gaps } => Owned::Stream(*timing, gaps.to_vec()),
        other => Owned::Finish(format!("{other:?}")),
    }
}

/// Feeds `wire` to a fresh exchange in reads of the sizes in `cuts` (used
/// in turn, repeated; empty: one read), every read at the same time so the
/// timings compare, then the end of file. `head`: the request was `HEAD`.
pub fn drive(expect_stream: bool, head: bool, max_head: usize, wire: &[u8], cuts: &[usize]) -> End {
    let request: &[u8] = if head {
        b"HEAD / HTTP/1.1\r\n\r\n"
    } else {
        b"GET / HTTP/1.1\r\n\r\n"
    };
    let mut ex = Exchange::with_max_head(expect_stream, max_head);
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
