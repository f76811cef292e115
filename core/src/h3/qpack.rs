//! QPACK (RFC 9204) for a client that advertises a dynamic table capacity
//! of 0: the static table, literals and the HPACK Huffman code (RFC 7541
//! Appendix B, [`huffman`], shared with HPACK) are all a field section can
//! use, in both directions. Allocation-free.
//!
//! - [`STATIC_TABLE`]: RFC 9204 Appendix A, 99 entries, indexed from 0.
//! - [`encode_request`] (and [`encode_field`], [`encode_fields`],
//!   [`encode_response`]): a stateless encoder: Required Insert Count 0 and
//!   Base 0, an entry's index when name and value match exactly, else a
//!   literal with a static name reference, else a literal name; strings are
//!   Huffman-coded when the caller asks and that is shorter. The peer's
//!   dynamic table is never used, so the encoder stream carries nothing and
//!   no request is ever blocked.
//! - [`Decoder`]: a response's (or trailers') field section in, fields out
//!   through a callback, `:status` parsed, the size limit the client
//!   advertised (SETTINGS_MAX_FIELD_SECTION_SIZE, `N`) enforced; any
//!   reference to the dynamic table (a non-zero Required Insert Count,
//!   dynamic or post-base indices) is QPACK_DECOMPRESSION_FAILED, since the
//!   table's capacity is 0.
//! - [`EncoderStream`] and [`DecoderStream`]: the server's QPACK streams,
//!   checked: with a capacity of 0 the only instruction a server's encoder
//!   may send is Set Dynamic Table Capacity 0; its decoder may only cancel
//!   streams (it has nothing to acknowledge).

use super::error::H3Error;
pub use super::error::QpackError;
use crate::h2::hpack::{encode_integer, huffman};
use crate::head::CONNECTION_SPECIFIC;

impl core::error::Error for QpackError {}

/// RFC 9204 Appendix A: the static table, index 0 first.
pub const STATIC_TABLE: [(&[u8], &[u8]); 99] = [
    (b":authority", b""),
    (b":path", b"/"),
    (b"age", b"0"),
    (b"content-disposition", b""),
    (b"content-length", b"0"),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"referer", b""),
    (b"set-cookie", b""),
    (b":method", b"CONNECT"),
    (b":method", b"DELETE"),
    (b":method", b"GET"),
    (b":method", b"HEAD"),
    (b":method", b"OPTIONS"),
    (b":method", b"POST"),
    (b":method", b"PUT"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"103"),
    (b":status", b"200"),
    (b":status", b"304"),
    (b":status", b"404"),
    (b":status", b"503"),
    (b"accept", b"*/*"),
    (b"accept", b"application/dns-message"),
    (b"accept-encoding", b"gzip, deflate, br"),
    (b"accept-ranges", b"bytes"),
    (b"access-control-allow-headers", b"cache-control"),
    (b"access-control-allow-headers", b"content-type"),
    (b"access-control-allow-origin", b"*"),
    (b"cache-control", b"max-age=0"),
    (b"cache-control", b"max-age=2592000"),
    (b"cache-control", b"max-age=604800"),
    (b"cache-control", b"no-cache"),
    (b"cache-control", b"no-store"),
    (b"cache-control", b"public, max-age=31536000"),
    (b"content-encoding", b"br"),
    (b"content-encoding", b"gzip"),
    (b"content-type", b"application/dns-message"),
    (b"content-type", b"application/javascript"),
    (b"content-type", b"application/json"),
    (b"content-type", b"application/x-www-form-urlencoded"),
    (b"content-type", b"image/gif"),
    (b"content-type", b"image/jpeg"),
    (b"content-type", b"image/png"),
    (b"content-type", b"text/css"),
    (b"content-type", b"text/html; charset=utf-8"),
    (b"content-type", b"text/plain"),
    (b"content-type", b"text/plain;charset=utf-8"),
    (b"range", b"bytes=0-"),
    (b"strict-transport-security", b"max-age=31536000"),
    (
        b"strict-transport-security",
        b"max-age=31536000; includesubdomains",
    ),
    (
        b"strict-transport-security",
        b"max-age=31536000; includesubdomains; preload",
    ),
    (b"vary", b"accept-encoding"),
    (b"vary", b"origin"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-xss-protection", b"1; mode=block"),
    (b":status", b"100"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"302"),
    (b":status", b"400"),
    (b":status", b"403"),
    (b":status", b"421"),
    (b":status", b"425"),
    (b":status", b"500"),
    (b"accept-language", b""),
    (b"access-control-allow-credentials", b"FALSE"),
    (b"access-control-allow-credentials", b"TRUE"),
    (b"access-control-allow-headers", b"*"),
    (b"access-control-allow-methods", b"get"),
    (b"access-control-allow-methods", b"get, post, options"),
    (b"access-control-allow-methods", b"options"),
    (b"access-control-expose-headers", b"content-length"),
    (b"access-control-request-headers", b"content-type"),
    (b"access-control-request-method", b"get"),
    (b"access-control-request-method", b"post"),
    (b"alt-svc", b"clear"),
    (b"authorization", b""),
    (
        b"content-security-policy",
        b"script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    (b"early-data", b"1"),
    (b"expect-ct", b""),
    (b"forwarded", b""),
    (b"if-range", b""),
    (b"origin", b""),
    (b"purpose", b"prefetch"),
    (b"server", b""),
    (b"timing-allow-origin", b"*"),
    (b"upgrade-insecure-requests", b"1"),
    (b"user-agent", b""),
    (b"x-forwarded-for", b""),
    (b"x-frame-options", b"deny"),
    (b"x-frame-options", b"sameorigin"),
];

/// RFC 9114 section 4.2.2's size of a field: name, value and 32.
pub const FIELD_OVERHEAD: usize = 32;

/// Writes a string literal whose length has an `n`-bit prefix with the
/// Huffman flag `h` just above it and `flags` above that; Huffman-coded
/// when `huffman` is set and that is shorter; lowercased when `lower`.
fn encode_string(
    s: &[u8],
    n: u32,
    flags: u8,
    huffman: bool,
    lower: bool,
    out: &mut [u8],
) -> Option<usize> {
    let h = 1u8 << n;
    let coded = huffman::encoded_len(s);
    if huffman && coded < s.len() && !(lower && s.iter().any(u8::is_ascii_uppercase)) {
        let m = encode_integer(coded, n, flags | h, out)?;
        let k = huffman::encode(s, out.get_mut(m..)?)?;
        return Some(m + k);
    }
    let m = encode_integer(s.len(), n, flags, out)?;
    let dst = out.get_mut(m..m + s.len())?;
    dst.copy_from_slice(s);
    if lower {
        dst.make_ascii_lowercase();
    }
    Some(m + s.len())
}

/// Writes the field section prefix of a section that uses no dynamic
/// table: Required Insert Count 0, Base 0 (two zero bytes).
pub fn encode_prefix(out: &mut [u8]) -> Option<usize> {
    out.get_mut(..2)?.copy_from_slice(&[0, 0]);
    Some(2)
}

/// Encodes one field line (no prefix): an indexed field line when a static
/// entry matches name and value exactly, else a literal with a static name
/// reference when the name is in the table, else a literal with a literal
/// name; names are matched and written lowercased. The N ("never index")
/// bit is left clear. Returns the length, or `None` when `out` is too short.
///
/// ```
/// use metronome_core::h3::qpack::encode_field;
/// let mut out = [0u8; 32];
/// assert_eq!(encode_field(b":method", b"GET", false, &mut out), Some(1));
/// assert_eq!(out[0], 0xc0 | 17);
/// let n = encode_field(b":path", b"/v1", false, &mut out).unwrap();
/// assert_eq!(&out[..n], b"\x51\x03/v1"); // name: static 1
/// let n = encode_field(b"X-Id", b"7", false, &mut out).unwrap();
/// assert_eq!(&out[..n], b"\x24x-id\x017");
/// ```
pub fn encode_field(name: &[u8], value: &[u8], huffman: bool, out: &mut [u8]) -> Option<usize> {
    let mut name_index = None;
    for (i, (n, v)) in STATIC_TABLE.iter().enumerate() {
        if n.eq_ignore_ascii_case(name) {
            if *v == value {
                // Indexed field line, T = 1 (static): 11xxxxxx.
                return encode_integer(i, 6, 0xc0, out);
            }
            name_index.get_or_insert(i);
        }
    }
    let n = match name_index {
        // Literal with name reference, N = 0, T = 1: 0101xxxx.
        Some(i) => encode_integer(i, 4, 0x50, out)?,
        // Literal with literal name, N = 0: 001 H xxx.
        None => encode_string(name, 3, 0x20, huffman, true, out)?,
    };
    Some(n + encode_string(value, 7, 0, huffman, false, out.get_mut(n..)?)?)
}

/// Encodes `headers` in order with [`encode_field`] (no prefix), skipping
/// the connection-specific fields HTTP/3 forbids as HTTP/2 does
/// (`connection`, `keep-alive`, `proxy-connection`, `transfer-encoding`,
/// `upgrade`) and `host` (`:authority` takes its place).
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

/// Encodes a request's field section: the prefix (Required Insert Count
/// 0, Base 0), the four pseudo-header fields, then `headers` as
/// [`encode_fields`] does. Returns its length, or `None` when `out` is too
/// short.
///
/// ```
/// use metronome_core::h3::qpack::encode_request;
/// let mut block = [0u8; 64];
/// let n = encode_request(b"GET", b"https", b"localhost:4433", b"/", &[(b"Host", b"x"), (b"accept", b"*/*")], false, &mut block).unwrap();
/// // Prefix; :method GET (17), :scheme https (23); :authority by name (0);
/// // :path / (1); accept */* (29); host dropped.
/// assert_eq!(&block[..n], b"\x00\x00\xd1\xd7\x50\x0elocalhost:4433\xc1\xdd");
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
    let mut n = encode_prefix(out)?;
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

/// Encodes a response's field section: the prefix, `:status` (an index
/// for the statuses the table has, else a literal with its name), then
/// `headers` as [`encode_fields`] does. Returns its length, or `None` when
/// `status` is not 100 to 999 or `out` is too short.
///
/// ```
/// use metronome_core::h3::qpack::encode_response;
/// let mut out = [0u8; 32];
/// let n = encode_response(200, &[], false, &mut out).unwrap();
/// assert_eq!(&out[..n], [0x00, 0x00, 0xd9]); // static 25
/// let n = encode_response(429, &[], false, &mut out).unwrap();
/// assert_eq!(&out[..n], b"\x00\x00\x5f\x09\x03429"); // name: static 24 (4-bit prefix: 15 + 9)
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
    let mut n = encode_prefix(out)?;
    n += encode_field(b":status", &digits, huffman, out.get_mut(n..)?)?;
    n += encode_fields(headers, huffman, out.get_mut(n..)?)?;
    Some(n)
}

/// Decodes a QPACK integer with an `n`-bit prefix at `block[*pos..]`
/// (RFC 9204 section 4.1.1, RFC 7541 section 5.1), advancing `pos`; up to
/// 62 bits.
fn integer(block: &[u8], pos: &mut usize, n: u32) -> Result<u64, QpackError> {
    let mask = ((1u16 << n) - 1) as u8;
    let first = *block.get(*pos).ok_or(QpackError::Truncated)?;
    *pos += 1;
    let mut value = u64::from(first & mask);
    if value < u64::from(mask) {
        return Ok(value);
    }
    let mut shift = 0u32;
    loop {
        let b = *block.get(*pos).ok_or(QpackError::Truncated)?;
        *pos += 1;
        let add = u64::from(b & 0x7f)
            .checked_shl(shift)
            .filter(|a| shift < 63 && a >> shift == u64::from(b & 0x7f))
            .ok_or(QpackError::Integer)?;
        value = value.checked_add(add).ok_or(QpackError::Integer)?;
        if value >= 1 << 62 {
            return Err(QpackError::Integer);
        }
        if b & 0x80 == 0 {
            return Ok(value);
        }
        shift += 7;
    }
}

/// Decodes a string literal whose length has an `n`-bit prefix (the
/// Huffman flag just above it) at `block[*pos..]` into `dst`, advancing
/// `pos`; returns its decoded length, which may exceed `dst.len()` (then
/// only a prefix was written).
fn string(block: &[u8], pos: &mut usize, n: u32, dst: &mut [u8]) -> Result<usize, QpackError> {
    let huff = block.get(*pos).ok_or(QpackError::Truncated)? & (1 << n) != 0;
    let len = integer(block, pos, n)?;
    let len = usize::try_from(len).map_err(|_| QpackError::Truncated)?;
    let end = pos.checked_add(len).ok_or(QpackError::Truncated)?;
    let raw = block.get(*pos..end).ok_or(QpackError::Truncated)?;
    *pos = end;
    if huff {
        huffman::decode(raw, dst).map_err(|_| QpackError::Huffman)
    } else {
        let k = len.min(dst.len());
        dst[..k].copy_from_slice(&raw[..k]);
        Ok(len)
    }
}

/// What a decoded field section held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Section {
    /// Fields passed to the callback.
    pub fields: usize,
    /// The section's size as RFC 9114 section 4.2.2 counts it (each
    /// field's name, value and 32).
    pub size: usize,
    /// `:status`, when the section had it (a response head; trailers have none).
    pub status: Option<u16>,
}

/// A QPACK decoder for a client that advertised
/// SETTINGS_QPACK_MAX_TABLE_CAPACITY 0 and SETTINGS_MAX_FIELD_SECTION_SIZE
/// `N`: it keeps no state between sections (there is no table) but an
/// `N`-byte scratch space, where each field is materialised
/// (Huffman-decoded, or copied from the static table) before the callback
/// sees it. A section larger than `N` is refused, so no field ever
/// outgrows the scratch space.
///
/// # Example
/// ```
/// use metronome_core::h3::qpack::Decoder;
/// // pylsqpack's encoding of [(":status", "200"), ("content-type", "text/plain"), ("x-foo", "bar baz")].
/// let block = b"\x00\x00\xd9\xf5\x2c\xf2\xb4\xa7\x3f\x86\x8c\x76\x29\x18\xfd\xff";
/// let mut seen = Vec::new();
/// let s = Decoder::<1024>::new().decode(block, |n, v| seen.push((n.to_vec(), v.to_vec()))).unwrap();
/// assert_eq!(s.status, Some(200));
/// assert_eq!(seen[2], (b"x-foo".to_vec(), b"bar baz".to_vec()));
/// assert_eq!(s.size, 7 + 3 + 12 + 10 + 5 + 7 + 3 * 32);
/// ```
#[derive(Clone, Debug)]
pub struct Decoder<const N: usize> {
    scratch: [u8; N],
}

impl<const N: usize> Default for Decoder<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Decoder<N> {
    /// The SETTINGS_MAX_FIELD_SECTION_SIZE to advertise.
    pub const MAX_FIELD_SECTION_SIZE: usize = N;

    /// A decoder.
    pub const fn new() -> Self {
        Self { scratch: [0; N] }
    }

    /// Decodes one whole encoded field section (a HEADERS frame's
    /// payload), calling `emit(name, value)` for each field in order,
    /// `:status` included.
    ///
    /// # Errors
    /// [`H3Error::Qpack`] when the section cannot be decoded (a dynamic
    /// reference among them: QPACK_DECOMPRESSION_FAILED, a connection
    /// error); [`H3Error::FieldSectionTooLarge`] above `N`
    /// (H3_EXCESSIVE_LOAD); [`H3Error::Message`] for an uppercase name, a
    /// pseudo-header after a regular field, one other than `:status`,
    /// `:status` twice or not three digits (H3_MESSAGE_ERROR). The last two
    /// are the stream's errors: the connection (which keeps no QPACK state
    /// for it) can go on. Fields may have been emitted before an error.
    pub fn decode<F: FnMut(&[u8], &[u8])>(
        &mut self,
        block: &[u8],
        emit: F,
    ) -> Result<Section, H3Error> {
        self.walk(block, true, emit)
    }

    /// The size (section 4.2.2: each field's name, value and 32) of a
    /// field section the client encoded, a request's, to hold against the
    /// server's SETTINGS_MAX_FIELD_SECTION_SIZE. Its fields are not checked
    /// as a response head (a request has its own pseudo-headers).
    ///
    /// # Errors
    /// [`H3Error::FieldSectionTooLarge`] above `N` (so above any limit of
    /// `N` or less); [`H3Error::Qpack`] for a section that does not decode.
    ///
    /// ```
    /// use metronome_core::h3::qpack::{encode_request, Decoder};
    /// let mut block = [0u8; 128];
    /// let n = encode_request(b"GET", b"https", b"a.example", b"/x", &[], false, &mut block).unwrap();
    /// // :method GET, :scheme https, :authority a.example, :path /x.
    /// let size = (7 + 3) + (7 + 5) + (10 + 9) + (5 + 2) + 4 * 32;
    /// assert_eq!(Decoder::<1024>::new().section_size(&block[..n]), Ok(size));
    /// ```
    pub fn section_size(&mut self, block: &[u8]) -> Result<usize, H3Error> {
        self.walk(block, false, |_, _| {}).map(|s| s.size)
    }

    /// Decodes `block`, each field to `emit`; `response`: the fields are
    /// checked as a response head's.
    fn walk<F: FnMut(&[u8], &[u8])>(
        &mut self,
        block: &[u8],
        response: bool,
        mut emit: F,
    ) -> Result<Section, H3Error> {
        let mut status = None;
        let mut regular = false;
        let (fields, size) = self.lines(block, |name, value| {
            if !response {
                return Ok(());
            }
            if name.first() == Some(&b':') {
                if regular || name != b":status" || status.is_some() {
                    return Err(H3Error::Message);
                }
                status = Some(parse_status(value).ok_or(H3Error::Message)?);
            } else {
                regular = true;
            }
            emit(name, value);
            Ok(())
        })?;
        Ok(Section {
            fields,
            size,
            status,
        })
    }

    /// Decodes the field lines of `block` (after its prefix, which must
    /// name no dynamic table), refusing uppercase names
    /// ([`H3Error::Message`]) and a section above `N`, and hands each
    /// field to `check`, which may refuse it. Returns the number of fields
    /// and the section's size.
    pub(super) fn lines<F: FnMut(&[u8], &[u8]) -> Result<(), H3Error>>(
        &mut self,
        block: &[u8],
        mut check: F,
    ) -> Result<(usize, usize), H3Error> {
        let mut pos = 0;
        // Encoded Required Insert Count, then the sign bit and Delta Base.
        if integer(block, &mut pos, 8)? != 0 {
            return Err(QpackError::DynamicReference.into());
        }
        let sign = block.get(pos).ok_or(QpackError::Truncated)? & 0x80 != 0;
        integer(block, &mut pos, 7)?;
        if sign {
            // Base = 0 - Delta Base - 1 < 0.
            return Err(QpackError::Base.into());
        }
        let (mut fields, mut size) = (0, 0);
        while pos < block.len() {
            let b = block[pos];
            let (nl, vl) = if b & 0x80 != 0 {
                // Indexed field line: 1 T index(6).
                if b & 0x40 == 0 {
                    return Err(QpackError::DynamicReference.into());
                }
                let (name, value) = static_entry(integer(block, &mut pos, 6)?)?;
                self.check_size(size, name.len() + value.len())?;
                let (s_name, s_value) = self.scratch.split_at_mut(name.len());
                s_name.copy_from_slice(name);
                s_value[..value.len()].copy_from_slice(value);
                (name.len(), value.len())
            } else if b & 0xc0 == 0x40 {
                // Literal with name reference: 01 N T index(4).
                if b & 0x10 == 0 {
                    return Err(QpackError::DynamicReference.into());
                }
                let (name, _) = static_entry(integer(block, &mut pos, 4)?)?;
                let nl = name.len();
                self.check_size(size, nl)?;
                self.scratch[..nl].copy_from_slice(name);
                let vl = string(block, &mut pos, 7, &mut self.scratch[nl..])?;
                (nl, vl)
            } else if b & 0xe0 == 0x20 {
                // Literal with literal name: 001 N H len(3).
                let nl = string(block, &mut pos, 3, &mut self.scratch)?;
                self.check_size(size, nl)?;
                let vl = string(block, &mut pos, 7, &mut self.scratch[nl..])?;
                (nl, vl)
            } else {
                // 0001: indexed with post-base index; 0000: literal with
                // post-base name reference. Both name dynamic entries.
                return Err(QpackError::DynamicReference.into());
            };
            size = self.check_size(size, nl + vl)?;
            let (name, value) = self.scratch[..nl + vl].split_at(nl);
            if name.iter().any(u8::is_ascii_uppercase) {
                return Err(H3Error::Message);
            }
            check(name, value)?;
            fields += 1;
        }
        Ok((fields, size))
    }

    /// The section's size once a field of `len` bytes (name and value) is
    /// added to `size`, or the error when that is above `N`.
    fn check_size(&self, size: usize, len: usize) -> Result<usize, H3Error> {
        size.checked_add(len)
            .and_then(|s| s.checked_add(FIELD_OVERHEAD))
            .filter(|&s| s <= N)
            .ok_or(H3Error::FieldSectionTooLarge)
    }
}

/// Static table entry `index`.
fn static_entry(index: u64) -> Result<(&'static [u8], &'static [u8]), QpackError> {
    usize::try_from(index)
        .ok()
        .and_then(|i| STATIC_TABLE.get(i))
        .copied()
        .ok_or(QpackError::StaticIndex)
}

/// A status code of three ASCII digits, 100 to 999.
fn parse_status(v: &[u8]) -> Option<u16> {
    match *v {
        [a @ b'1'..=b'9', b @ b'0'..=b'9', c @ b'0'..=b'9'] => {
            Some(u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'))
        }
        _ => None,
    }
}

/// The server's QPACK encoder stream (after its type, 0x02), for a client
/// that advertised a table capacity of 0: the only instruction that fits
/// is Set Dynamic Table Capacity 0 (the byte 0x20); any insert, duplicate
/// or larger capacity is QPACK_ENCODER_STREAM_ERROR.
///
/// ```
/// use metronome_core::h3::qpack::EncoderStream;
/// use metronome_core::h3::H3Error;
/// let mut s = EncoderStream::new();
/// assert_eq!(s.feed(&[0x20, 0x20]), Ok(()));
/// assert_eq!(s.feed(&[0x3f, 0xe1, 0x1f]).unwrap_err().code().0, 0x201); // capacity 4096
/// assert_eq!(s.finish(), Err(H3Error::ClosedCriticalStream));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EncoderStream {
    instructions: u64,
}

impl EncoderStream {
    /// A stream just opened.
    pub const fn new() -> Self {
        Self { instructions: 0 }
    }

    /// Instructions read (each a Set Dynamic Table Capacity 0).
    pub const fn instructions(&self) -> u64 {
        self.instructions
    }

    /// Reads the stream's next bytes.
    ///
    /// # Errors
    /// [`QpackError::EncoderStream`] for any byte but 0x20.
    pub fn feed(&mut self, input: &[u8]) -> Result<(), H3Error> {
        for &b in input {
            // 001 + a 5-bit prefix integer: only 0 is within capacity 0;
            // a continued integer is at least 31.
            if b != 0x20 {
                return Err(QpackError::EncoderStream.into());
            }
            self.instructions += 1;
        }
        Ok(())
    }

    /// The stream ended: a critical stream may not (H3_CLOSED_CRITICAL_STREAM).
    pub const fn finish(&self) -> Result<(), H3Error> {
        Err(H3Error::ClosedCriticalStream)
    }
}

/// The server's QPACK decoder stream (after its type, 0x03), for a client
/// whose encoder never uses the dynamic table: Stream Cancellation is read
/// and ignored; a Section Acknowledgment (every section the client sent
/// had a Required Insert Count of 0) or an Insert Count Increment (it
/// inserted nothing) is QPACK_DECODER_STREAM_ERROR.
///
/// ```
/// use metronome_core::h3::qpack::DecoderStream;
/// let mut s = DecoderStream::new();
/// assert_eq!(s.feed(&[0x44, 0x7f]), Ok(())); // cancel stream 4; a continued integer...
/// assert_eq!(s.feed(&[0x81, 0x01]), Ok(())); // ...split across reads
/// assert_eq!(s.feed(&[0x80]).unwrap_err().code().0, 0x202); // acknowledge stream 0
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecoderStream {
    in_integer: bool,
}

impl DecoderStream {
    /// A stream just opened.
    pub const fn new() -> Self {
        Self { in_integer: false }
    }

    /// Reads the stream's next bytes.
    ///
    /// # Errors
    /// [`QpackError::DecoderStream`] for a Section Acknowledgment or an
    /// Insert Count Increment.
    pub fn feed(&mut self, input: &[u8]) -> Result<(), H3Error> {
        for &b in input {
            if self.in_integer {
                self.in_integer = b & 0x80 != 0;
            } else if b & 0xc0 == 0x40 {
                // Stream Cancellation: 01 + a 6-bit prefix stream ID.
                self.in_integer = b & 0x3f == 0x3f;
            } else {
                return Err(QpackError::DecoderStream.into());
            }
        }
        Ok(())
    }

    /// The stream ended: a critical stream may not (H3_CLOSED_CRITICAL_STREAM).
    pub const fn finish(&self) -> Result<(), H3Error> {
        Err(H3Error::ClosedCriticalStream)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h3::error::ErrorCode;
    use std::vec::Vec;

    type Fields = Vec<(Vec<u8>, Vec<u8>)>;

    fn decode<const N: usize>(block: &[u8]) -> Result<(Section, Fields), H3Error> {
        let mut fields = Vec::new();
        let s = Decoder::<N>::new().decode(block, |n, v| fields.push((n.to_vec(), v.to_vec())))?;
        assert_eq!(s.fields, fields.len());
        Ok((s, fields))
    }

    #[test]
    fn every_static_entry_round_trips() {
        let mut out = [0u8; 128];
        for (i, (name, value)) in STATIC_TABLE.iter().enumerate() {
            let n = encode_field(name, value, false, &mut out[2..]).unwrap();
            assert_eq!(n, if i < 63 { 1 } else { 2 }, "{i}");
            let mut block = [0u8; 130];
            block[2..2 + n].copy_from_slice(&out[2..2 + n]);
            if name.first() == Some(&b':') && *name != b":status" {
                assert_eq!(
                    decode::<256>(&block[..2 + n]).map(|_| ()),
                    Err(H3Error::Message)
                );
                continue;
            }
            let (_, fields) = decode::<256>(&block[..2 + n]).unwrap();
            assert_eq!(fields, [(name.to_vec(), value.to_vec())]);
        }
    }

    #[test]
    fn integers_up_to_62_bits() {
        let mut p = 0;
        assert_eq!(integer(&[0x1f, 0x9a, 0x0a], &mut p, 5), Ok(1337));
        assert_eq!(p, 3);
        p = 0;
        assert_eq!(integer(&[0xff, 0x00], &mut p, 8), Ok(255));
        // 2^62 - 1 with an 8-bit prefix: 255 + the rest in 9 bytes.
        let mut b = [0u8; 10];
        let n = encode_integer((1 << 62) - 1, 8, 0, &mut b).unwrap();
        p = 0;
        assert_eq!(integer(&b[..n], &mut p, 8), Ok((1 << 62) - 1));
        let n = encode_integer(1 << 62, 8, 0, &mut b).unwrap();
        p = 0;
        assert_eq!(integer(&b[..n], &mut p, 8), Err(QpackError::Integer));
        p = 0;
        assert_eq!(
            integer(
                &[0x1f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80],
                &mut p,
                5
            ),
            Err(QpackError::Integer)
        );
        p = 0;
        assert_eq!(
            integer(&[0x1f, 0x9a], &mut p, 5),
            Err(QpackError::Truncated)
        );
    }

    #[test]
    fn dynamic_references_refused() {
        for block in [
            &[0x01, 0x00][..],         // Required Insert Count 1
            &[0x00, 0x80],             // negative Base
            &[0x00, 0x00, 0x80],       // indexed, dynamic 0
            &[0x00, 0x00, 0x10],       // indexed post-base 0
            &[0x00, 0x00, 0x40, 0x00], // literal, dynamic name 0
            &[0x00, 0x00, 0x00, 0x00], // literal, post-base name 0
            &[0x00, 0x00, 0xff, 0x24], // static 99: beyond
        ] {
            let err = decode::<256>(block).unwrap_err();
            assert_eq!(
                err.code(),
                ErrorCode::QPACK_DECOMPRESSION_FAILED,
                "{block:?}"
            );
        }
        assert_eq!(
            decode::<256>(&[0x01, 0x00]).unwrap_err(),
            H3Error::Qpack(QpackError::DynamicReference)
        );
        assert_eq!(
            decode::<256>(&[0x00, 0x80]).unwrap_err(),
            H3Error::Qpack(QpackError::Base)
        );
        assert_eq!(
            decode::<256>(&[0x00, 0x00, 0xff, 0x24]).unwrap_err(),
            H3Error::Qpack(QpackError::StaticIndex)
        );
        // Truncations.
        for block in [
            &[][..],
            &[0x00],
            &[0x00, 0x00, 0x51],
            &[0x00, 0x00, 0x51, 0x03, b'/'],
            &[0x00, 0x00, 0x23, b'a', b'b'],
        ] {
            assert_eq!(
                decode::<256>(block).unwrap_err(),
                H3Error::Qpack(QpackError::Truncated),
                "{block:?}"
            );
        }
        // Huffman: a byte of padding alone is too long.
        assert_eq!(
            decode::<256>(&[0x00, 0x00, 0x51, 0x81, 0xff]).unwrap_err(),
            H3Error::Qpack(QpackError::Huffman)
        );
    }

    #[test]
    fn section_size_limit_and_messages() {
        // ":status 200" is 7 + 3 + 32 = 42 bytes.
        assert_eq!(
            decode::<42>(&[0x00, 0x00, 0xd9]).unwrap().0,
            Section {
                fields: 1,
                size: 42,
                status: Some(200)
            }
        );
        assert_eq!(
            decode::<41>(&[0x00, 0x00, 0xd9]).unwrap_err(),
            H3Error::FieldSectionTooLarge
        );
        // A literal name longer than the scratch space: refused, not cut.
        let mut block = std::vec![0x00, 0x00, 0x27, 100 - 7];
        block.extend_from_slice(&[b'a'; 100]);
        block.push(0);
        assert_eq!(
            decode::<64>(&block).unwrap_err(),
            H3Error::FieldSectionTooLarge
        );
        assert_eq!(
            decode::<64>(&block).unwrap_err().code(),
            ErrorCode::EXCESSIVE_LOAD
        );
        let (s, _) = decode::<132>(&block).unwrap();
        assert_eq!(s.size, 132);
        for block in [
            &b"\x00\x00\x23Abc\x00"[..], // uppercase name
            b"\x00\x00\x23abc\x00\xd9",  // :status after a regular field
            b"\x00\x00\xd9\xd9",         // :status twice
            b"\x00\x00\xd1",             // :method in a response
            b"\x00\x00\x5f\x09\x0220",   // :status "20"
            b"\x00\x00\x5f\x09\x03099",  // :status "099"
        ] {
            assert_eq!(
                decode::<256>(block).unwrap_err(),
                H3Error::Message,
                "{block:?}"
            );
        }
        // Trailers: no status.
        let (s, f) = decode::<256>(b"\x00\x00\x27\x04grpc-status\x010").unwrap();
        assert_eq!(
            s,
            Section {
                fields: 1,
                size: 44,
                status: None
            }
        );
        assert_eq!(f, [(b"grpc-status".to_vec(), b"0".to_vec())]);
    }

    #[test]
    fn encoder_forms() {
        let mut out = [0u8; 256];
        let n = encode_request(
            b"POST",
            b"https",
            b"example.com",
            b"/v1/chat/completions",
            &[
                (b"Content-Type", b"application/json"),
                (b"connection", b"keep-alive"),
                (b"X-Trace", b"abc"),
                (b"te", b"trailers"),
            ],
            false,
            &mut out,
        )
        .unwrap();
        let want: &[u8] = b"\x00\x00\xd4\xd7\x50\x0bexample.com\x51\x14/v1/chat/completions\xee\x27\x00x-trace\x03abc\x22te\x08trailers";
        assert_eq!(&out[..n], want);
        for cut in 0..n {
            assert_eq!(
                encode_request(
                    b"POST",
                    b"https",
                    b"example.com",
                    b"/v1/chat/completions",
                    &[
                        (b"Content-Type", b"application/json"),
                        (b"connection", b"keep-alive"),
                        (b"X-Trace", b"abc"),
                        (b"te", b"trailers")
                    ],
                    false,
                    &mut out[..cut]
                ),
                None
            );
        }
        // Huffman when shorter; raw when not (or an uppercase name).
        let n = encode_field(b"x-long-name", b"aaaaaaaa", true, &mut out).unwrap();
        assert_eq!(out[0] & 0xf8, 0x28);
        let (_, f) = decode::<256>(&[&[0u8, 0][..], &out[..n]].concat()).unwrap();
        assert_eq!(f, [(b"x-long-name".to_vec(), b"aaaaaaaa".to_vec())]);
        let n = encode_field(b"X-Long-Name", b"\xff", true, &mut out).unwrap();
        assert_eq!(&out[..n], b"\x27\x04x-long-name\x01\xff");
        assert_eq!(encode_response(99, &[], false, &mut out), None);
    }

    #[test]
    fn qpack_streams() {
        let mut e = EncoderStream::new();
        assert_eq!(e.feed(&[0x20]), Ok(()));
        assert_eq!(e.instructions(), 1);
        for bad in [0x21, 0x3f, 0x80, 0x40, 0x00] {
            assert_eq!(
                EncoderStream::new().feed(&[bad]),
                Err(H3Error::Qpack(QpackError::EncoderStream))
            );
        }
        let mut d = DecoderStream::new();
        assert_eq!(d.feed(&[0x7f, 0xff, 0xff, 0x01, 0x40]), Ok(()));
        assert_eq!(
            d.feed(&[0x01]),
            Err(H3Error::Qpack(QpackError::DecoderStream))
        );
        assert_eq!(
            DecoderStream::new().feed(&[0x00]),
            Err(H3Error::Qpack(QpackError::DecoderStream))
        );
    }

    #[test]
    fn a_request_section_size_is_counted_raw_or_huffman_up_to_n() {
        let headers: [(&[u8], &[u8]); 2] = [(b"accept", b"*/*"), (b"x-long", &[b'a'; 100])];
        // Each field's name, value and 32 (RFC 9114 section 4.2.2).
        let want = (7 + 4) + (7 + 5) + (10 + 9) + (5 + 1) + (6 + 3) + (6 + 100) + 6 * 32;
        for huffman in [false, true] {
            let mut block = [0u8; 256];
            let n = encode_request(
                b"POST",
                b"https",
                b"a.example",
                b"/",
                &headers,
                huffman,
                &mut block,
            )
            .unwrap();
            assert_eq!(Decoder::<1024>::new().section_size(&block[..n]), Ok(want));
            assert_eq!(
                Decoder::<{ 7 + 4 + 7 + 5 + 10 + 9 + 5 + 1 + 6 + 3 + 6 + 100 + 6 * 32 }>::new()
                    .section_size(&block[..n]),
                Ok(want)
            );
            assert_eq!(
                Decoder::<{ 7 + 4 + 7 + 5 + 10 + 9 + 5 + 1 + 6 + 3 + 6 + 100 + 6 * 32 - 1 }>::new()
                    .section_size(&block[..n]),
                Err(H3Error::FieldSectionTooLarge)
            );
            // As a response head it is refused (:method is no response's).
            assert_eq!(
                Decoder::<1024>::new().decode(&block[..n], |_, _| {}),
                Err(H3Error::Message)
            );
        }
    }
}
