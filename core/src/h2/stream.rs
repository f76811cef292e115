//! HTTP/2's reading of a stream's reset and of its connection's end: the
//! error codes ([`ErrorCode`]) that say the bytes were malformed, added to
//! core's [`StreamExchange`] (one stream's response, for HTTP/2 and HTTP/3).

use crate::exchange::Finish;
use crate::measure::FramingCause;
use crate::stream::StreamExchange;

use super::frame::ErrorCode;

impl StreamExchange {
    /// How a stream reset by `code` ends, as a [`Finish`]: `remote` says
    /// the server sent the RST_STREAM ([`Event::StreamReset`]'s `remote`).
    /// A response this client reset as malformed (`remote` false,
    /// `PROTOCOL_ERROR`: DATA before its head, no `:status`, ...) is bad
    /// framing ([`FramingCause::Http2Protocol`]), as a malformed HTTP/1.1
    /// reply is; any other reset is [`StreamExchange::on_reset`]'s kind.
    ///
    /// [`Event::StreamReset`]: super::Event::StreamReset
    ///
    /// ```
    /// use metronome_core::exchange::Finish;
    /// use metronome_core::h2::ErrorCode;
    /// use metronome_core::stream::StreamExchange;
    /// use metronome_core::measure::{ErrorKind, FramingCause};
    /// let s = StreamExchange::new(false);
    /// assert_eq!(s.on_stream_reset(ErrorCode::PROTOCOL_ERROR, false), Finish::Framing(FramingCause::Http2Protocol));
    /// assert_eq!(s.on_stream_reset(ErrorCode::PROTOCOL_ERROR, true), Finish::Error(ErrorKind::Reset));
    /// assert_eq!(s.on_stream_reset(ErrorCode::CANCEL, false), Finish::Error(ErrorKind::Reset));
    /// ```
    pub fn on_stream_reset(&self, code: ErrorCode, remote: bool) -> Finish<'static> {
        if !remote && code == ErrorCode::PROTOCOL_ERROR {
            Finish::Framing(FramingCause::Http2Protocol)
        } else {
            Finish::Error(self.on_reset())
        }
    }

    /// How a stream still open ends when its connection does, as a
    /// [`Finish`]. `error` is the connection error behind the end, if any:
    /// this client's ([`H2Error::code`] of the error `handle_read`
    /// returned) or else the code of the server's last GOAWAY. A code for
    /// malformed bytes ([`ErrorCode::is_malformed`]: `PROTOCOL_ERROR`,
    /// `FRAME_SIZE_ERROR`, `COMPRESSION_ERROR`) is bad framing
    /// ([`FramingCause::Http2Protocol`]); `None` (the transport closed or
    /// failed) or any other code is a reset, or a cut stream after an SSE
    /// head ([`StreamExchange::on_reset`]). Both engines end a dead
    /// connection's streams with it.
    ///
    /// [`H2Error::code`]: super::H2Error::code
    ///
    /// ```
    /// use metronome_core::exchange::Finish;
    /// use metronome_core::h2::ErrorCode;
    /// use metronome_core::stream::StreamExchange;
    /// use metronome_core::measure::{ErrorKind, FramingCause};
    /// let s = StreamExchange::new(false);
    /// let bad = Finish::Framing(FramingCause::Http2Protocol);
    /// assert_eq!(s.on_connection_end(Some(ErrorCode::PROTOCOL_ERROR)), bad);
    /// assert_eq!(s.on_connection_end(Some(ErrorCode::COMPRESSION_ERROR)), bad);
    /// assert_eq!(s.on_connection_end(Some(ErrorCode::NO_ERROR)), Finish::Error(ErrorKind::Reset));
    /// assert_eq!(s.on_connection_end(None), Finish::Error(ErrorKind::Reset));
    /// ```
    pub fn on_connection_end(&self, error: Option<ErrorCode>) -> Finish<'static> {
        match error {
            Some(code) if code.is_malformed() => Finish::Framing(FramingCause::Http2Protocol),
            _ => Finish::Error(self.on_reset()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::ErrorKind;

    #[test]
    fn connection_end_malformed_is_bad_framing() {
        let bad = Finish::Framing(FramingCause::Http2Protocol);
        let mut s = StreamExchange::new(true);
        s.begin(0, 0);
        for code in [
            ErrorCode::PROTOCOL_ERROR,
            ErrorCode::FRAME_SIZE_ERROR,
            ErrorCode::COMPRESSION_ERROR,
        ] {
            assert_eq!(s.on_connection_end(Some(code)), bad);
        }
        for code in [
            ErrorCode::NO_ERROR,
            ErrorCode::INTERNAL_ERROR,
            ErrorCode::FLOW_CONTROL_ERROR,
            ErrorCode::ENHANCE_YOUR_CALM,
            ErrorCode(0xff),
        ] {
            assert_eq!(
                s.on_connection_end(Some(code)),
                Finish::Error(ErrorKind::Reset)
            );
        }
        // After an SSE head: malformed bytes still bad framing, else cut.
        s.on_head(1, 200, true);
        assert_eq!(s.on_connection_end(Some(ErrorCode::PROTOCOL_ERROR)), bad);
        assert_eq!(
            s.on_connection_end(None),
            Finish::Error(ErrorKind::StreamCut)
        );
        assert_eq!(s.on_stream_reset(ErrorCode::PROTOCOL_ERROR, false), bad);
        assert_eq!(
            s.on_stream_reset(ErrorCode::INTERNAL_ERROR, true),
            Finish::Error(ErrorKind::StreamCut)
        );
    }
}
