//! The HPACK Huffman code (RFC 7541 section 5.2 and Appendix B): a decoder
//! that writes into a caller's buffer, and an encoder for tests and for
//! callers who want smaller request heads.
//!
//! The code is canonical (codes of one length are consecutive and follow
//! those of the shorter lengths, in symbol order; `tests::code_is_canonical`
//! checks it), so decoding needs only, per code length, the first code, how
//! many codes have that length and where their symbols start in the list
//! of symbols sorted by (length, symbol): three small tables computed at
//! compile time. Decoding walks the input a bit at a time; header strings
//! are short and this runs only for the server's response heads.

use super::HpackError;

/// The end-of-string symbol: 30 one-bits. Decoding it is an error.
const EOS: u16 = 256;

/// The code of each symbol (0..=255, and 256 = EOS), right-aligned.
pub(super) const CODES: [u32; 257] = [
    0x1ff8, 0x7fffd8, 0xfffffe2, 0xfffffe3, 0xfffffe4, 0xfffffe5, 0xfffffe6, 0xfffffe7, 0xfffffe8,
    0xffffea, 0x3ffffffc, 0xfffffe9, 0xfffffea, 0x3ffffffd, 0xfffffeb, 0xfffffec, 0xfffffed,
    0xfffffee, 0xfffffef, 0xffffff0, 0xffffff1, 0xffffff2, 0x3ffffffe, 0xffffff3, 0xffffff4,
    0xffffff5, 0xffffff6, 0xffffff7, 0xffffff8, 0xffffff9, 0xffffffa, 0xffffffb, 0x14, 0x3f8,
    0x3f9, 0xffa, 0x1ff9, 0x15, 0xf8, 0x7fa, 0x3fa, 0x3fb, 0xf9, 0x7fb, 0xfa, 0x16, 0x17, 0x18,
    0x0, 0x1, 0x2, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f, 0x5c, 0xfb, 0x7ffc, 0x20, 0xffb,
    0x3fc, 0x1ffa, 0x21, 0x5d, 0x5e, 0x5f, 0x60, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
    0x69, 0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x6f, 0x70, 0x71, 0x72, 0xfc, 0x73, 0xfd, 0x1ffb, 0x7fff0,
    0x1ffc, 0x3ffc, 0x22, 0x7ffd, 0x3, 0x23, 0x4, 0x24, 0x5, 0x25, 0x26, 0x27, 0x6, 0x74, 0x75,
    0x28, 0x29, 0x2a, 0x7, 0x2b, 0x76, 0x2c, 0x8, 0x9, 0x2d, 0x77, 0x78, 0x79, 0x7a, 0x7b, 0x7ffe,
    0x7fc, 0x3ffd, 0x1ffd, 0xffffffc, 0xfffe6, 0x3fffd2, 0xfffe7, 0xfffe8, 0x3fffd3, 0x3fffd4,
    0x3fffd5, 0x7fffd9, 0x3fffd6, 0x7fffda, 0x7fffdb, 0x7fffdc, 0x7fffdd, 0x7fffde, 0xffffeb,
    0x7fffdf, 0xffffec, 0xffffed, 0x3fffd7, 0x7fffe0, 0xffffee, 0x7fffe1, 0x7fffe2, 0x7fffe3,
    0x7fffe4, 0x1fffdc, 0x3fffd8, 0x7fffe5, 0x3fffd9, 0x7fffe6, 0x7fffe7, 0xffffef, 0x3fffda,
    0x1fffdd, 0xfffe9, 0x3fffdb, 0x3fffdc, 0x7fffe8, 0x7fffe9, 0x1fffde, 0x7fffea, 0x3fffdd,
    0x3fffde, 0xfffff0, 0x1fffdf, 0x3fffdf, 0x7fffeb, 0x7fffec, 0x1fffe0, 0x1fffe1, 0x3fffe0,
    0x1fffe2, 0x7fffed, 0x3fffe1, 0x7fffee, 0x7fffef, 0xfffea, 0x3fffe2, 0x3fffe3, 0x3fffe4,
    0x7ffff0, 0x3fffe5, 0x3fffe6, 0x7ffff1, 0x3ffffe0, 0x3ffffe1, 0xfffeb, 0x7fff1, 0x3fffe7,
    0x7ffff2, 0x3fffe8, 0x1ffffec, 0x3ffffe2, 0x3ffffe3, 0x3ffffe4, 0x7ffffde, 0x7ffffdf,
    0x3ffffe5, 0xfffff1, 0x1ffffed, 0x7fff2, 0x1fffe3, 0x3ffffe6, 0x7ffffe0, 0x7ffffe1, 0x3ffffe7,
    0x7ffffe2, 0xfffff2, 0x1fffe4, 0x1fffe5, 0x3ffffe8, 0x3ffffe9, 0xffffffd, 0x7ffffe3, 0x7ffffe4,
    0x7ffffe5, 0xfffec, 0xfffff3, 0xfffed, 0x1fffe6, 0x3fffe9, 0x1fffe7, 0x1fffe8, 0x7ffff3,
    0x3fffea, 0x3fffeb, 0x1ffffee, 0x1ffffef, 0xfffff4, 0xfffff5, 0x3ffffea, 0x7ffff4, 0x3ffffeb,
    0x7ffffe6, 0x3ffffec, 0x3ffffed, 0x7ffffe7, 0x7ffffe8, 0x7ffffe9, 0x7ffffea, 0x7ffffeb,
    0xffffffe, 0x7ffffec, 0x7ffffed, 0x7ffffee, 0x7ffffef, 0x7fffff0, 0x3ffffee, 0x3fffffff,
];
/// The length in bits of each symbol's code.
pub(super) const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5,
    5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6,
    6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22,
    23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22,
    21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20,
    22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19,
    21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22,
    22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
];

/// Per code length (index 0..=30): the first code of that length.
const FIRST: [u32; 31] = canonical().0;
/// Per code length: how many codes have that length.
const COUNT: [u16; 31] = canonical().1;
/// Per code length: the index in [`SORTED`] of its first symbol.
const OFFSET: [u16; 31] = canonical().2;
/// The symbols sorted by (code length, symbol).
const SORTED: [u16; 257] = canonical().3;

/// Builds the canonical decoding tables from [`LENGTHS`].
const fn canonical() -> ([u32; 31], [u16; 31], [u16; 31], [u16; 257]) {
    let mut count = [0u16; 31];
    let mut s = 0;
    while s < 257 {
        count[LENGTHS[s] as usize] += 1;
        s += 1;
    }
    let mut first = [0u32; 31];
    let mut offset = [0u16; 31];
    let mut code = 0u32;
    let mut off = 0u16;
    let mut len = 1;
    while len <= 30 {
        first[len] = code;
        offset[len] = off;
        code = (code + count[len] as u32) << 1;
        off += count[len];
        len += 1;
    }
    let mut sorted = [0u16; 257];
    let mut next = offset;
    let mut s = 0;
    while s < 257 {
        let l = LENGTHS[s] as usize;
        sorted[next[l] as usize] = s as u16;
        next[l] += 1;
        s += 1;
    }
    (first, count, offset, sorted)
}

/// Decodes the Huffman-coded string `input` into `out` and returns the
/// decoded length. Bytes that do not fit in `out` are decoded and checked
/// but not written: the returned length is then larger than `out.len()`,
/// and the caller knows the string was cut (see
/// [`Decoder`](super::Decoder) for what it does with such strings).
///
/// # Errors
/// [`HpackError::HuffmanEos`] when the string contains the EOS symbol,
/// [`HpackError::HuffmanPadding`] when it ends in more than 7 bits of
/// padding or in padding that is not the most significant bits of EOS
/// (all ones) (RFC 7541 section 5.2).
///
/// # Example
/// ```
/// use metronome_core::h2::hpack::huffman;
/// // RFC 7541 C.4.1: "www.example.com"
/// let coded = [0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff];
/// let mut out = [0u8; 32];
/// let n = huffman::decode(&coded, &mut out).unwrap();
/// assert_eq!(&out[..n], b"www.example.com");
/// ```
pub fn decode(input: &[u8], out: &mut [u8]) -> Result<usize, HpackError> {
    let mut code = 0u32;
    let mut len = 0usize;
    let mut n = 0usize;
    for &byte in input {
        for shift in (0..8).rev() {
            code = (code << 1) | u32::from((byte >> shift) & 1);
            len += 1;
            let first = FIRST[len];
            if code >= first && code - first < u32::from(COUNT[len]) {
                let sym = SORTED[usize::from(OFFSET[len]) + (code - first) as usize];
                if sym == EOS {
                    return Err(HpackError::HuffmanEos);
                }
                if let Some(slot) = out.get_mut(n) {
                    *slot = sym as u8;
                }
                n += 1;
                code = 0;
                len = 0;
            } else if len >= 30 {
                // Unreachable with a complete canonical code of maximum
                // length 30, kept as a guard against a bad table.
                return Err(HpackError::HuffmanEos);
            }
        }
    }
    // Padding: at most 7 bits, all ones (a prefix of EOS).
    if len > 7 || code != (1u32 << len) - 1 {
        return Err(HpackError::HuffmanPadding);
    }
    Ok(n)
}

/// The length in bytes of `input` once Huffman-coded.
///
/// ```
/// use metronome_core::h2::hpack::huffman;
/// assert_eq!(huffman::encoded_len(b"www.example.com"), 12);
/// ```
pub fn encoded_len(input: &[u8]) -> usize {
    let bits: usize = input
        .iter()
        .map(|&b| usize::from(LENGTHS[usize::from(b)]))
        .sum();
    bits.div_ceil(8)
}

/// Huffman-codes `input` into `out`, padded with ones to a byte boundary,
/// and returns the length written, or `None` when `out` is shorter than
/// [`encoded_len`].
///
/// ```
/// use metronome_core::h2::hpack::huffman;
/// let mut out = [0u8; 16];
/// let n = huffman::encode(b"no-cache", &mut out).unwrap();
/// assert_eq!(&out[..n], [0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf]); // RFC 7541 C.4.2
/// ```
pub fn encode(input: &[u8], out: &mut [u8]) -> Option<usize> {
    let total = encoded_len(input);
    let out = out.get_mut(..total)?;
    let mut acc = 0u64;
    let mut bits = 0u32;
    let mut n = 0;
    for &b in input {
        let len = u32::from(LENGTHS[usize::from(b)]);
        acc = (acc << len) | u64::from(CODES[usize::from(b)]);
        bits += len;
        while bits >= 8 {
            bits -= 8;
            out[n] = (acc >> bits) as u8;
            n += 1;
        }
        acc &= (1u64 << bits) - 1;
    }
    if bits > 0 {
        out[n] = ((acc << (8 - bits)) as u8) | (0xff >> bits);
        n += 1;
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_is_canonical() {
        // Rebuild every code from the decoding tables: it must equal the
        // RFC's code for that symbol.
        for len in 1..=30 {
            for i in 0..COUNT[len] {
                let sym = SORTED[usize::from(OFFSET[len] + i)];
                assert_eq!(usize::from(LENGTHS[usize::from(sym)]), len);
                assert_eq!(
                    CODES[usize::from(sym)],
                    FIRST[len] + u32::from(i),
                    "symbol {sym}"
                );
            }
        }
        assert_eq!(COUNT.iter().map(|&c| usize::from(c)).sum::<usize>(), 257);
        assert_eq!(CODES[256], 0x3fff_ffff);
        assert_eq!(LENGTHS[256], 30);
    }

    #[test]
    fn every_byte_round_trips() {
        let all: [u8; 256] = core::array::from_fn(|i| i as u8);
        let mut coded = [0u8; 1200];
        let n = encode(&all, &mut coded).unwrap();
        let mut back = [0u8; 256];
        assert_eq!(decode(&coded[..n], &mut back), Ok(256));
        assert_eq!(back, all);
        for len in 0..all.len() {
            let s = &all[len..];
            let n = encode(s, &mut coded).unwrap();
            assert_eq!(n, encoded_len(s));
            assert_eq!(decode(&coded[..n], &mut back), Ok(s.len()));
            assert_eq!(&back[..s.len()], s);
        }
    }

    #[test]
    fn padding_and_eos_errors() {
        let mut out = [0u8; 8];
        // Empty string: fine.
        assert_eq!(decode(&[], &mut out), Ok(0));
        // '0' is 00000 (5 bits) + 3 padding ones: fine.
        assert_eq!(decode(&[0b0000_0111], &mut out), Ok(1));
        assert_eq!(out[0], b'0');
        // Padding that is not all ones.
        assert_eq!(
            decode(&[0b0000_0101], &mut out),
            Err(HpackError::HuffmanPadding)
        );
        // A whole byte of ones is 8 bits of padding: too long.
        assert_eq!(decode(&[0xff], &mut out), Err(HpackError::HuffmanPadding));
        assert_eq!(
            decode(&[0b0000_0111, 0xff], &mut out),
            Err(HpackError::HuffmanPadding)
        );
        // EOS itself (30 ones) padded to 32 bits.
        assert_eq!(
            decode(&[0xff, 0xff, 0xff, 0xff], &mut out),
            Err(HpackError::HuffmanEos)
        );
        // A code cut short: 'a' is 00011 (5 bits); "0001" + "1111" ends
        // with 4 bits that are not all ones before the padding.
        assert_eq!(
            decode(&[0b0001_0000], &mut out),
            Err(HpackError::HuffmanPadding)
        );
    }

    #[test]
    fn output_too_small_is_counted_not_written() {
        let mut coded = [0u8; 32];
        let n = encode(b"www.example.com", &mut coded).unwrap();
        let mut out = [0u8; 4];
        assert_eq!(decode(&coded[..n], &mut out), Ok(15));
        assert_eq!(&out, b"www.");
    }
}
