//! The QPACK decoder on arbitrary field sections: never a panic; a section
//! it accepts is within its limit, its fields add up to its size, and
//! core's encoder writes them back to a section that decodes to the same
//! fields; the readers of the server's QPACK streams never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use metronome_core::h3::qpack::{
    encode_field, encode_prefix, Decoder, DecoderStream, EncoderStream, FIELD_OVERHEAD,
};

fn decode(block: &[u8]) -> Option<(Vec<(Vec<u8>, Vec<u8>)>, usize, Option<u16>)> {
    let mut fields = Vec::new();
    let s = Decoder::<256>::new()
        .decode(block, |n, v| fields.push((n.to_vec(), v.to_vec())))
        .ok()?;
    assert_eq!(s.fields, fields.len());
    Some((fields, s.size, s.status))
}

fuzz_target!(|data: &[u8]| {
    if let Some((fields, size, status)) = decode(data) {
        assert!(size <= 256);
        let sum: usize = fields
            .iter()
            .map(|(n, v)| n.len() + v.len() + FIELD_OVERHEAD)
            .sum();
        assert_eq!(sum, size);
        for huffman in [false, true] {
            let mut out = vec![0u8; 4 * data.len() + 16];
            let mut n = encode_prefix(&mut out).unwrap();
            for (name, value) in &fields {
                n += encode_field(name, value, huffman, &mut out[n..]).unwrap();
            }
            assert_eq!(decode(&out[..n]), Some((fields.clone(), size, status)));
        }
    }
    let _ = EncoderStream::new().feed(data);
    let _ = DecoderStream::new().feed(data);
});
