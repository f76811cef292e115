//! The HPACK encoder for request and response heads: static-table indices
//! and literals *without indexing* only, so the peer's decoder table is
//! never used and no encoder state exists. A request head is encoded once,
//! before the measured phase, and the same block is sent for every request
//! of that shape (RFC 7541 sections 6.1 and 6.2.2). Response heads and
//! trailers ([`encode_response`], [`encode_fields`]) serve `metronome serve
//! --http2`; [`encode_table_size_update`] lets an encoder that uses no
//! table say so after the peer changes `SETTINGS_HEADER_TABLE_SIZE`.

use super::huffman;
use super::table::STATIC_TABLE;
use crate::head::CONNECTION_SPECIFIC;

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
    n += encode_fields(headers, huffman, out.get_mut(n..)?)?;
    Some(n)
}

/// Encodes `headers` in order with [`encode_field`], skipping those HTTP/2
/// forbids (`connection`, `keep-alive`, `proxy-connection`,
/// `transfer-encoding`, `upgrade`, and `host`): a trailer block, or the
/// regular fields after the pseudo-headers. Returns the length written, or
/// `None` when `out` is too short.
///
/// ```
/// use metronome_core::h2::hpack::encode_fields;
/// let mut out = [0u8; 32];
/// let n = encode_fields(&[(b"grpc-status", b"0"), (b"Connection", b"close")], false, &mut out).unwrap();
/// assert_eq!(&out[..n], b"\x00\x0bgrpc-status\x010");
/// ```
pub fn encode_fields(headers: &[(&[u8], &[u8])], huffman: bool, out: &mut [u8]) -> Option<usize> {
    let mut n = 0;
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

/// Encodes a response head: `:status` (a static index for 200, 204, 206,
/// 304, 400, 404 and 500, else a literal with the static name), then
/// `headers` as [`encode_fields`] does. Returns the block's length, or
/// `None` when `status` is not three digits (100 to 999) or `out` is too
/// short.
///
/// ```
/// use metronome_core::h2::hpack::{encode_response, Decoder};
/// let mut block = [0u8; 64];
/// let n = encode_response(200, &[(b"content-type", b"text/plain")], false, &mut block).unwrap();
/// assert_eq!(&block[..n], b"\x88\x0f\x10\x0atext/plain"); // 8: ":status 200"; 31: content-type
/// let n = encode_response(429, &[], true, &mut block).unwrap();
/// let mut fields = Vec::new();
/// Decoder::<4096>::new().decode(&block[..n], |k, v| fields.push((k.to_vec(), v.to_vec()))).unwrap();
/// assert_eq!(fields, [(b":status".to_vec(), b"429".to_vec())]);
/// ```
pub fn encode_response(
    status: u16,
    headers: &[(&[u8], &[u8])],
    huffman: bool,
    out: &mut [u8],
) -> Option<usize> {
    if !(100..=999).contains(&status) {
        return None;
    }
    let digits = [
        b'0' + (status / 100) as u8,
        b'0' + (status / 10 % 10) as u8,
        b'0' + (status % 10) as u8,
    ];
    let mut n = encode_field(b":status", &digits, huffman, out)?;
    n += encode_fields(headers, huffman, out.get_mut(n..)?)?;
    Some(n)
}

/// Writes a dynamic table size update to `size` (RFC 7541 section 6.3):
/// it may only open a header block. An encoder that never indexes can
/// send `0` at the start of its first block after the peer changed
/// `SETTINGS_HEADER_TABLE_SIZE`. Returns the length, or `None` when `out`
/// is too short.
///
/// ```
/// use metronome_core::h2::hpack::encode_table_size_update;
/// let mut out = [0u8; 4];
/// assert_eq!(encode_table_size_update(0, &mut out), Some(1));
/// assert_eq!(out[0], 0x20);
/// assert_eq!(encode_table_size_update(4096, &mut out), Some(3));
/// assert_eq!(out[..3], [0x3f, 0xe1, 0x1f]);
/// ```
pub fn encode_table_size_update(size: usize, out: &mut [u8]) -> Option<usize> {
    encode_integer(size, 5, 0x20, out)
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

    #[test]
    fn response_status_static_or_literal() {
        let mut out = [0u8; 64];
        for (status, want) in [
            (200, &b"\x88"[..]),
            (204, b"\x89"),
            (206, b"\x8a"),
            (304, b"\x8b"),
            (400, b"\x8c"),
            (404, b"\x8d"),
            (500, b"\x8e"),
            (429, b"\x08\x03429"),
            (100, b"\x08\x03100"),
            (999, b"\x08\x03999"),
        ] {
            let n = encode_response(status, &[], false, &mut out).unwrap();
            assert_eq!(&out[..n], want, "status {status}");
        }
        assert_eq!(encode_response(99, &[], false, &mut out), None);
        assert_eq!(encode_response(1000, &[], false, &mut out), None);
        assert_eq!(encode_response(429, &[], false, &mut out[..4]), None);
    }

    #[test]
    fn response_fields_follow_status_without_forbidden_ones() {
        let mut out = [0u8; 64];
        let n = encode_response(
            200,
            &[
                (b"content-type", b"application/grpc"),
                (b"Transfer-Encoding", b"chunked"),
                (b"cache-control", b"no-cache"),
            ],
            false,
            &mut out,
        )
        .unwrap();
        // 31 content-type and 24 cache-control by static name index.
        assert_eq!(
            &out[..n],
            b"\x88\x0f\x10\x10application/grpc\x0f\x09\x08no-cache"
        );
    }

    #[test]
    fn table_size_update_prefix() {
        let mut out = [0u8; 4];
        assert_eq!(encode_table_size_update(30, &mut out), Some(1));
        assert_eq!(out[0], 0x3e);
        assert_eq!(encode_table_size_update(31, &mut out), Some(2));
        assert_eq!(out[..2], [0x3f, 0x00]);
        assert_eq!(encode_table_size_update(4096, &mut out[..2]), None);
    }
}
