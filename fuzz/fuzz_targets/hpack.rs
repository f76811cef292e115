//! The HPACK decoder on arbitrary header blocks, several in a row on one
//! table (so table state carries over): never a panic, the table never
//! above its maximum; and the Huffman decoder alone, whose output length
//! must match a re-encoding of what it decoded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use metronome_core::h2::hpack::{huffman, Decoder};

fuzz_target!(|data: &[u8]| {
    let mut dec = Decoder::<256>::new();
    // The first byte splits the input into blocks of (byte % 64 + 1) bytes.
    let Some((&len, blocks)) = data.split_first() else {
        return;
    };
    for block in blocks.chunks(usize::from(len % 64) + 1) {
        let mut fields = 0;
        match dec.decode(block, |name, value| {
            assert!(name.len() + value.len() <= 256);
            fields += 1;
        }) {
            Ok(b) => assert_eq!(b.fields, fields),
            Err(_) => dec = Decoder::new(),
        }
        assert!(dec.table().size() <= dec.table().max_size());
        assert!(dec.table().max_size() <= 256);
    }
    let mut out = [0u8; 512];
    if let Ok(n) = huffman::decode(data, &mut out) {
        if n <= out.len() {
            let mut again = [0u8; 1024];
            let m = huffman::encode(&out[..n], &mut again).unwrap();
            // Re-encoding gives the input back (padding is always ones).
            assert_eq!(&again[..m], data);
        }
    }
});
