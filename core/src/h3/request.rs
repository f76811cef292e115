//! A request for HTTP/3 from its HTTP/1.1 encoding, as
//! [`h2::request`](crate::h2::request) does for HTTP/2: the same parsing and
//! checks, the field section encoded with QPACK ([`encode_request`]).

use super::qpack::encode_request;
use crate::h2::request::{from_http1_with, Encoded, RequestError};

/// Encodes the HTTP/1.1 request `message` for HTTP/3 with `scheme`
/// (`https`): its QPACK field section into `out`. Returns the section's
/// length, where the body starts in `message` and the section's size as
/// `SETTINGS_MAX_FIELD_SECTION_SIZE` counts it ([`Encoded`]).
///
/// # Errors
/// A [`RequestError`] (its wording names HTTP/2; the rules are the same).
///
/// ```
/// use metronome_core::h3::request::from_http1;
/// let msg = b"GET / HTTP/1.1\r\nHost: localhost:4433\r\naccept: */*\r\n\r\n";
/// let mut out = [0u8; 64];
/// let e = from_http1(msg, b"https", &mut out).unwrap();
/// assert_eq!(e.body_at, msg.len());
/// // Prefix; :method GET, :scheme https, :authority by name, :path /, accept */*.
/// assert_eq!(&out[..2], b"\x00\x00");
/// assert!(e.len > 5);
/// // (7+3) + (7+5) + (10+14) + (5+1) + (6+3), plus 32 per field.
/// assert_eq!(e.list_size, 61 + 5 * 32);
/// ```
pub fn from_http1(message: &[u8], scheme: &[u8], out: &mut [u8]) -> Result<Encoded, RequestError> {
    from_http1_with(message, scheme, out, encode_request)
}
