//! A request for HTTP/2 from its HTTP/1.1 encoding: the plan's requests are
//! complete HTTP/1.1 messages (every request source of the CLI builds
//! them), and [`from_http1`] turns one, once and before the clock, into the
//! HPACK header block [`Connection::start_request`](super::Connection::start_request)
//! sends, the body its DATA frames carry and the size of its field list
//! the server's limit applies to ([`Encoded::list_size`]).

use super::hpack::encode_request;
use crate::head::CONNECTION_SPECIFIC;

/// What [`from_http1`] made of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Encoded {
    /// The length of the header block (field section) written.
    pub len: usize,
    /// Where the body starts in the HTTP/1.1 message.
    pub body_at: usize,
    /// The size of the field list sent, as HTTP/2's
    /// `SETTINGS_MAX_HEADER_LIST_SIZE` (RFC 9113 section 6.5.2) and
    /// HTTP/3's `SETTINGS_MAX_FIELD_SECTION_SIZE` (RFC 9114 section 4.2.2)
    /// count it: each field's name and value lengths, uncompressed, plus
    /// 32; pseudo-headers included.
    pub list_size: usize,
}

/// The size of a field list as the server's limit counts it: name + value
/// + 32 per field ([`Encoded::list_size`]).
fn field_size(name: &[u8], value: &[u8]) -> usize {
    name.len() + value.len() + 32
}

/// Why an HTTP/1.1 request cannot be sent over HTTP/2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestError {
    /// Not a complete HTTP/1.1 request head.
    Head,
    /// No `Host` header to make `:authority` from.
    NoHost,
    /// A chunked body (HTTP/2 frames the body itself; give a length).
    Chunked,
    /// More body bytes than `Content-Length` says, or fewer.
    BodyLength,
    /// The header block does not fit the output.
    TooLarge,
}

impl core::fmt::Display for RequestError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            RequestError::Head => "not a complete HTTP/1.1 request head",
            RequestError::NoHost => "no Host header for :authority",
            RequestError::Chunked => "a chunked request body cannot be sent over HTTP/2",
            RequestError::BodyLength => "the body does not match its Content-Length",
            RequestError::TooLarge => "the HTTP/2 header block is too large",
        })
    }
}

/// Encodes the HTTP/1.1 request `message` for HTTP/2 with `scheme`
/// (`http` for h2c, `https` for h2): its header block (`:method`,
/// `:scheme`, `:authority` from `Host`, `:path`, then the other headers,
/// the ones HTTP/2 forbids dropped; Huffman-coded) into `out`. Returns the
/// block's length, where the body starts in `message` and the field
/// list's size ([`Encoded`]).
///
/// # Errors
/// A [`RequestError`].
///
/// ```
/// use metronome_core::h2::hpack::Decoder;
/// use metronome_core::h2::request::from_http1;
/// let msg = b"POST /v1/x HTTP/1.1\r\nHost: a:1\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nhi";
/// let mut out = [0u8; 256];
/// let e = from_http1(msg, b"http", &mut out).unwrap();
/// assert_eq!(&msg[e.body_at..], b"hi");
/// let mut fields = Vec::new();
/// Decoder::<4096>::new().decode(&out[..e.len], |k, v| fields.push((k.to_vec(), v.to_vec()))).unwrap();
/// assert_eq!(fields[0], (b":method".to_vec(), b"POST".to_vec()));
/// assert_eq!(fields[2], (b":authority".to_vec(), b"a:1".to_vec()));
/// assert_eq!(fields[3], (b":path".to_vec(), b"/v1/x".to_vec()));
/// assert_eq!(fields.len(), 5); // content-length kept, connection dropped
/// // (7+4) + (7+4) + (10+3) + (5+5) + (14+1), plus 32 per field.
/// assert_eq!(e.list_size, 60 + 5 * 32);
/// ```
pub fn from_http1(message: &[u8], scheme: &[u8], out: &mut [u8]) -> Result<Encoded, RequestError> {
    from_http1_with(message, scheme, out, encode_request)
}

/// The signature of a request's field-section encoder: HPACK's
/// ([`encode_request`]) or QPACK's ([`crate::h3::qpack::encode_request`]).
pub type EncodeRequest =
    fn(&[u8], &[u8], &[u8], &[u8], &[(&[u8], &[u8])], bool, &mut [u8]) -> Option<usize>;

/// [`from_http1`] with the field-section encoder `encode` (HTTP/3 passes
/// QPACK's): the same parsing, checks and dropped fields.
///
/// # Errors
/// A [`RequestError`].
pub fn from_http1_with(
    message: &[u8],
    scheme: &[u8],
    out: &mut [u8],
    encode: EncodeRequest,
) -> Result<Encoded, RequestError> {
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut req = httparse::Request::new(&mut headers);
    let head = match req.parse(message) {
        Ok(httparse::Status::Complete(n)) => n,
        _ => return Err(RequestError::Head),
    };
    let method = req.method.ok_or(RequestError::Head)?.as_bytes();
    let path = req.path.ok_or(RequestError::Head)?.as_bytes();
    let mut authority: Option<&[u8]> = None;
    let mut length: Option<usize> = None;
    let mut fields: [(&[u8], &[u8]); 128] = [(&[], &[]); 128];
    let mut count = 0;
    for h in req.headers.iter() {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"host") {
            authority = Some(h.value);
            continue;
        }
        if name.eq_ignore_ascii_case(b"transfer-encoding")
            && h.value
                .windows(7)
                .any(|w| w.eq_ignore_ascii_case(b"chunked"))
        {
            return Err(RequestError::Chunked);
        }
        if name.eq_ignore_ascii_case(b"content-length") {
            length = core::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse().ok());
        }
        fields[count] = (name, h.value);
        count += 1;
    }
    let authority = authority.ok_or(RequestError::NoHost)?;
    if length.unwrap_or(0) != message.len() - head {
        return Err(RequestError::BodyLength);
    }
    let n = encode(method, scheme, authority, path, &fields[..count], true, out)
        .ok_or(RequestError::TooLarge)?;
    // The fields sent: both encoders drop the connection-specific ones.
    let sent = fields[..count].iter().filter(|(name, _)| {
        !CONNECTION_SPECIFIC
            .iter()
            .any(|c| c.eq_ignore_ascii_case(name))
    });
    let list_size = [
        (&b":method"[..], method),
        (b":scheme", scheme),
        (b":authority", authority),
        (b":path", path),
    ]
    .iter()
    .chain(sent)
    .map(|(name, value)| field_size(name, value))
    .sum();
    Ok(Encoded {
        len: n,
        body_at: head,
        list_size,
    })
}
