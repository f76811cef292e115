//! The SSE decoder on arbitrary bytes: it never panics, never consumes more
//! than it was given, always makes progress, and yields the same events
//! however the bytes are split.
#![no_main]

use libfuzzer_sys::fuzz_target;
use metronome_core::sse::{SseDecoder, SseEvent};

fn decode(wire: &[u8], cuts: &[u8]) -> (Vec<SseEvent>, String) {
    let mut d = SseDecoder::new();
    let mut events = Vec::new();
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
        loop {
            let (used, ev) = d.feed(&buf);
            assert!(used <= buf.len());
            buf.drain(..used);
            match ev {
                Some(e) => events.push(e),
                None if used == 0 => break,
                None => {}
            }
        }
    }
    let mut tail = Vec::new();
    loop {
        match d.finish() {
            Ok(Some(e)) => events.push(e),
            Ok(None) => break,
            Err(e) => {
                tail.push(format!("{e:?}"));
                break;
            }
        }
    }
    (events, tail.join(","))
}

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let ncuts = usize::from(data[0] % 8).min(data.len() - 1);
    let (cuts, wire) = data[1..].split_at(ncuts);
    assert_eq!(decode(wire, &[]), decode(wire, cuts), "split {cuts:?}");
});
