//! The response reader behind both engines (core's `Exchange`) on arbitrary
//! bytes: it never panics, never consumes more than it was given, and gives
//! the same result however the bytes are split into reads (a differential
//! check of every split the fuzzer chooses against the whole input).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../core/tests/split_drive/mod.rs"]
mod split_drive;

use split_drive::drive;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let flags = data[0];
    let ncuts = usize::from(data[1] % 8).min(data.len() - 2);
    let (cuts, wire) = data[2..].split_at(ncuts);
    let cuts: Vec<usize> = cuts.iter().map(|&c| usize::from(c)).collect();
    let (stream, head) = (flags & 1 != 0, flags & 2 != 0);
    let max_head = 64 + usize::from(flags >> 2) * 256;
    let whole = drive(stream, head, max_head, wire, &[]);
    let split = drive(stream, head, max_head, wire, &cuts);
    assert_eq!(whole, split, "split {cuts:?} of {wire:?}");
});
