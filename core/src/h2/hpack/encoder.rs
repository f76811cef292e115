//! The HPACK encoder for request heads: static-table indices and literals
//! *without indexing* only, so the server's decoder table is never used
//! and no encoder state exists. A request head is encoded once, before the
//! measured phase, and the same block is sent for every request of that
//! shape (RFC 7541 sections 6.1 and 6.2.2).

use super::huffman;
use super::table::STATIC_TABLE;

/// Headers that HTTP/2 forbids in a request (RFC 9113 section 8.2.2); the
/// encoder drops them, and `host` (replaced by `:authority`).
const CONNECTION_SPECIFIC: [&[u8]; 6] = [
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"transfer-encoding",
    b"upgrade",
    b"host",
];

/// Writes `value` as an HPACK integer with an `n`-bit prefix, the bits
/// above the prefix in the first byte taken from `flags`. Returns the
/// length, or `None` when `out` is too short.
pub fn encode_integer(value: usize, n: u32, flags: u8, out: &mut [u8]) -> Option<usize> {
    let mask = (1usize << n) - 1;
    if value < mask {
        *out.first_mut()? = flags | value as u8;
        return Some(1);
    }
    *out.first_mut()? = flags | mask as u8;
    let mut rest = value - mask;
    let mut i = 1;
    while rest >= 0x80 {
        *out.get_mut(i)? = (rest as u8 & 0x7f) | 0x80;
        rest >>= 7;
        i += 1;
    }
    *out.get_mut(i)? = rest as u8;
    Some(i + 1)
}

/// Writes a string literal, Huffman-coded when `huffman` is set and that
/// is shorter; names are lowercased when written raw.
fn encode_string(s: &[u8], huffman: bool, lower: bool, out: &mut [u8]) -> Option<usize> {
    let coded = huffman::encoded_len(s);
    if huffman && coded < s.len() && !(lower && s.iter().any(u8::is_ascii_uppercase)) {
        let n = encode_integer(coded, 7, 0x80, out)?;
        let m = huffman::encode(s, out.get_mut(n..)?)?;
        return Some(n + m);
    }
    let n = encode_integer(s.len(), 7, 0, out)?;
    let dst = out.get_mut(n..n + s.len())?;
    dst.copy_from_slice(s);
    if lower {
        dst.make_ascii_lowercase();
    }
    Some(n + s.len())
}

/// Encodes one field: the static table's index when name and value match
/// an entry exactly, else a literal without indexing, its name by static
/// index when the table has it. Names are matched and written lowercased.
/// Returns the length written, or `None` when `out` is too short.
///
/// ```
/// use metronome_core::h2::hpack::encode_field;
/// let mut out = [0u8; 32];
/// assert_eq!(encode_field(b":method", b"GET", false, &mut out), Some(1));
/// assert_eq!(out[0], 0x82);
/// let n = encode_field(b":path", b"/v1", false, &mut out).unwrap();
/// assert_eq!(&out[..n], b"\x04\x03/v1"); // literal, name index 4
/// ```
pub fn encode_field(name: &[u8], value: &[u8], huffman: bool, out: &mut [u8]) -> Option<usize> {
    let mut name_index = 0;
    for (i, (n, v)) in STATIC_TABLE.iter().enumerate() {
        if n.eq_ignore_ascii_case(name) {
            if *v == value {
                return encode_integer(i + 1, 7, 0x80, out);
            }
            if name_index == 0 {
                name_index = i + 1;
            }
        }
    }
    let mut n = encode_integer(name_index, 4, 0x00, out)?;
    if name_index == 0 {
        n += encode_string(name, huffman, true, out.get_mut(n..)?)?;
    }
    n += encode_string(value, huffman, false, out.get_mut(n..)?)?;
    Some(n)
}

/// Encodes a request head: the four pseudo-headers, then `headers` in
/// order, skipping those HTTP/2 forbids (`connection`, `keep-alive`,
/// `proxy-connection`, `transfer-encoding`, `upgrade`, and `host`, whose
/// place `:authority` takes). Returns the block's length, or `None` when
/// `out` is too short.
///
/// ```
/// use metronome_core::h2::hpack::{encode_request, Decoder};
/// let mut block = [0u8; 128];
/// let n = encode_request(b"GET", b"http", b"localhost:8080", b"/", &[(b"Host", b"x"), (b"Accept", b"*/*")], true, &mut block).unwrap();
/// let mut fields = Vec::new();
/// Decoder::<4096>::new().decode(&block[..n], |k, v| fields.push((k.to_vec(), v.to_vec()))).unwrap();
/// assert_eq!(fields.len(), 5);
/// assert_eq!(fields[4], (b"accept".to_vec(), b"*/*".to_vec()));
/// ```
#[allow(clippy::too_many_arguments)]
pub fn encode_request(
    method: &[u8],
    scheme: &[u8],
    authority: &[u8],
    path: &[u8],
    headers: &[(&[u8], &[u8])],
    huffman: bool,
    out: &mut [u8],
) -> Option<usize> {
    let mut n = 0;
    for (name, value) in [
        (&b":method"[..], method),
        (b":scheme", scheme),
        (b":authority", authority),
        (b":path", path),
    ] {
        n += encode_field(name, value, huffman, out.get_mut(n..)?)?;
    }
    for (name, value) in headers {
        if CONNECTION_SPECIFIC
            .iter()
            .any(|c| c.eq_ignore_ascii_case(name))
        {
            continue;
        }
        n += encode_field(name, value, huffman, out.get_mut(n..)?)?;
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_rfc_c1() {
        let mut out = [0u8; 8];
        assert_eq!(encode_integer(10, 5, 0, &mut out), Some(1));
        assert_eq!(out[0], 0x0a);
        assert_eq!(encode_integer(1337, 5, 0, &mut out), Some(3));
        assert_eq!(&out[..3], [0x1f, 0x9a, 0x0a]);
        assert_eq!(encode_integer(42, 8, 0, &mut out), Some(1));
        assert_eq!(encode_integer(1337, 5, 0, &mut out[..2]), None);
    }

    #[test]
    fn literal_new_name_lowercased() {
        let mut out = [0u8; 32];
        let n = encode_field(b"X-Key", b"v", false, &mut out).unwrap();
        assert_eq!(&out[..n], b"\x00\x05x-key\x01v");
        assert_eq!(encode_field(b"X-Key", b"v", false, &mut out[..4]), None);
    }
}
