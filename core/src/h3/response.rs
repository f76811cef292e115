//! What a decoded field section is on a response stream (RFC 9114 section
//! 4.1): before the final head, a head, which must carry `:status` (1xx
//! ones informational, more may follow); after it, trailers, which must
//! carry none (section 4.3). Anything else is a malformed response
//! ([`H3Error::Message`], a stream error): the rule both engines apply to
//! every HEADERS frame a server sends on a request stream.

use super::qpack::Section;
use super::H3Error;

/// The `:status` of `section` as a response head, or `None` for trailers,
/// on a stream whose final (non-1xx) head was already read or not
/// (`final_seen`).
///
/// # Errors
/// [`H3Error::Message`]: a head without `:status`, or trailers with one.
///
/// ```
/// use metronome_core::h3::qpack::Section;
/// use metronome_core::h3::response::status;
/// use metronome_core::h3::H3Error;
/// let head = Section { fields: 1, size: 42, status: Some(200) };
/// let bare = Section { fields: 1, size: 50, status: None };
/// assert_eq!(status(&head, false), Ok(Some(200)));
/// assert_eq!(status(&bare, true), Ok(None));
/// assert_eq!(status(&bare, false), Err(H3Error::Message));
/// assert_eq!(status(&head, true), Err(H3Error::Message));
/// ```
pub fn status(section: &Section, final_seen: bool) -> Result<Option<u16>, H3Error> {
    match (section.status, final_seen) {
        (Some(s), false) => Ok(Some(s)),
        (None, true) => Ok(None),
        _ => Err(H3Error::Message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h3::qpack::Decoder;

    /// Sections decoded from the bytes a server sends: a 103 then a 200
    /// are heads, a `:status`-less section is refused first and taken as
    /// trailers after the final head.
    #[test]
    fn heads_then_trailers() {
        let mut d = Decoder::<256>::new();
        // Indexed static 24 (":status 103"), 25 (":status 200"); a literal
        // with static name 4 ("content-length") and value "2".
        let early = d.decode(b"\x00\x00\xd8", |_, _| {}).unwrap();
        let ok = d.decode(b"\x00\x00\xd9", |_, _| {}).unwrap();
        let bare = d.decode(b"\x00\x00\x54\x012", |_, _| {}).unwrap();
        assert_eq!(status(&early, false), Ok(Some(103)));
        assert_eq!(status(&ok, false), Ok(Some(200)));
        assert_eq!(status(&bare, false), Err(H3Error::Message));
        assert_eq!(status(&bare, true), Ok(None));
        assert_eq!(status(&ok, true), Err(H3Error::Message));
    }
}
