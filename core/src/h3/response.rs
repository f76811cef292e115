//! The order of a response stream's frames (RFC 9114 section 4.1): zero
//! or more informational (1xx) heads, the final head, DATA, then at most
//! one trailer section, after which nothing but unknown frames. A head
//! must carry `:status` and trailers must not (section 4.3): a breach of
//! those is a malformed response ([`H3Error::Message`]), a frame out of
//! that order H3_FRAME_UNEXPECTED. [`FrameReader`](super::FrameReader)
//! already refuses DATA before any HEADERS; [`Response`] is the rest of
//! the rule, the one both engines apply to every frame a server sends on
//! a request stream.

use super::frame::kind;
use super::qpack::Section;
use super::H3Error;

/// Where a response stream is in its sequence of frames.
///
/// ```
/// use metronome_core::h3::qpack::Section;
/// use metronome_core::h3::response::Response;
/// use metronome_core::h3::H3Error;
/// let head = |status| Section { fields: 1, size: 42, status };
/// let mut r = Response::default();
/// assert_eq!(r.headers(&head(Some(103))), Ok(Some(103)));
/// assert_eq!(r.data(), Err(H3Error::Unexpected { ty: 0x00 }));
/// assert_eq!(r.headers(&head(Some(200))), Ok(Some(200)));
/// assert_eq!(r.data(), Ok(()));
/// assert_eq!(r.headers(&head(None)), Ok(None));
/// assert_eq!(r, Response::Done);
/// assert_eq!(r.data(), Err(H3Error::Unexpected { ty: 0x00 }));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Response {
    /// No final head yet (informational ones may have come).
    #[default]
    Head,
    /// The final head read: DATA, then trailers, may follow.
    Body,
    /// The trailers read: no DATA or HEADERS may follow.
    Done,
}

impl Response {
    /// A HEADERS frame's decoded `section` arrived: its `:status` when it
    /// is a head (informational or final), `None` when it is the
    /// trailers.
    ///
    /// # Errors
    /// [`H3Error::Message`]: a head without `:status`, or trailers with
    /// one; [`H3Error::Unexpected`]: a HEADERS frame after the trailers.
    pub fn headers(&mut self, section: &Section) -> Result<Option<u16>, H3Error> {
        match (*self, section.status) {
            (Response::Head, Some(status)) => {
                if status >= 200 {
                    *self = Response::Body;
                }
                Ok(Some(status))
            }
            (Response::Body, None) => {
                *self = Response::Done;
                Ok(None)
            }
            (Response::Done, _) => Err(H3Error::Unexpected { ty: kind::HEADERS }),
            _ => Err(H3Error::Message),
        }
    }

    /// A DATA frame (or a piece of one) arrived.
    ///
    /// # Errors
    /// [`H3Error::Unexpected`]: DATA before the final head (after an
    /// informational one) or after the trailers.
    pub fn data(&self) -> Result<(), H3Error> {
        match self {
            Response::Body => Ok(()),
            _ => Err(H3Error::Unexpected { ty: kind::DATA }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h3::qpack::Decoder;

    /// Sections decoded from the bytes a server sends: a 103 and a 200
    /// are heads, a `:status`-less section is refused as a head and taken
    /// as trailers after the final one; nothing may follow the trailers.
    #[test]
    fn heads_body_trailers() {
        let mut d = Decoder::<256>::new();
        // Indexed static 24 (":status 103"), 25 (":status 200"); a literal
        // with static name 4 ("content-length") and value "2".
        let early = d.decode(b"\x00\x00\xd8", |_, _| {}).unwrap();
        let ok = d.decode(b"\x00\x00\xd9", |_, _| {}).unwrap();
        let bare = d.decode(b"\x00\x00\x54\x012", |_, _| {}).unwrap();

        let mut r = Response::default();
        assert_eq!(r.headers(&early), Ok(Some(103)));
        assert_eq!(r, Response::Head);
        assert_eq!(r.headers(&ok), Ok(Some(200)));
        assert_eq!(r.data(), Ok(()));
        assert_eq!(
            r.headers(&ok),
            Err(H3Error::Message),
            "trailers with :status"
        );
        assert_eq!(r.headers(&bare), Ok(None));
        let unexpected = |ty| H3Error::Unexpected { ty };
        assert_eq!(r.headers(&bare), Err(unexpected(kind::HEADERS)));
        assert_eq!(r.data(), Err(unexpected(kind::DATA)));

        let mut r = Response::default();
        assert_eq!(
            r.headers(&bare),
            Err(H3Error::Message),
            "a head without :status"
        );
        let mut r = Response::default();
        assert_eq!(r.headers(&early), Ok(Some(103)));
        assert_eq!(
            r.data(),
            Err(unexpected(kind::DATA)),
            "DATA after a 1xx head"
        );
    }
}
