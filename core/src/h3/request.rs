//! A request for HTTP/3 from its HTTP/1.1 encoding, as
//! [`h2::request`](crate::h2::request) does for HTTP/2: the same parsing and
//! checks, the field section encoded with QPACK ([`encode_request`]).

use super::qpack::encode_request;
use crate::h2::request::{from_http1_with, RequestError};

/// Encodes the HTTP/1.1 request `message` for HTTP/3 with `scheme`
/// (`https`): its QPACK field section into `out`. Returns the section's
/// length and where the body starts in `message`.
///
/// # Errors
/// A [`RequestError`] (its wording names HTTP/2; the rules are the same).
///
/// ```
/// use metronome_core::h3::request::from_http1;
/// let msg = b"GET / HTTP/1.1\r\nHost: localhost:4433\r\naccept: */*\r\n\r\n";
/// let mut out = [0u8; 64];
/// let (n, body) = from_http1(msg, b"https", &mut out).unwrap();
/// assert_eq!(body, msg.len());
/// // Prefix; :method GET, :scheme https, :authority by name, :path /, accept */*.
/// assert_eq!(&out[..2], b"\x00\x00");
/// assert!(n > 5);
/// ```
pub fn from_http1(
    message: &[u8],
    scheme: &[u8],
    out: &mut [u8],
) -> Result<(usize, usize), RequestError> {
    from_http1_with(message, scheme, out, encode_request)
}
