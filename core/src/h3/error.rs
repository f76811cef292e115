//! HTTP/3's error codes (RFC 9114 section 8.1, RFC 9204 section 6) and
//! [`H3Error`], why a server's bytes were refused, each with its code.

use core::fmt;

/// An HTTP/3 application error code, as carried by QUIC's
/// CONNECTION_CLOSE, RESET_STREAM and STOP_SENDING; unknown codes are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub u64);

impl ErrorCode {
    /// H3_NO_ERROR: no error (a graceful close, or a stream no longer needed).
    pub const NO_ERROR: Self = Self(0x100);
    /// H3_GENERAL_PROTOCOL_ERROR: a violation with no more specific code.
    pub const GENERAL_PROTOCOL_ERROR: Self = Self(0x101);
    /// H3_INTERNAL_ERROR: an internal error.
    pub const INTERNAL_ERROR: Self = Self(0x102);
    /// H3_STREAM_CREATION_ERROR: a stream the peer may not create, or of
    /// an unknown type.
    pub const STREAM_CREATION_ERROR: Self = Self(0x103);
    /// H3_CLOSED_CRITICAL_STREAM: a control or QPACK stream was closed.
    pub const CLOSED_CRITICAL_STREAM: Self = Self(0x104);
    /// H3_FRAME_UNEXPECTED: a frame not permitted in the current state or
    /// on the current stream.
    pub const FRAME_UNEXPECTED: Self = Self(0x105);
    /// H3_FRAME_ERROR: a frame whose layout or size is wrong.
    pub const FRAME_ERROR: Self = Self(0x106);
    /// H3_EXCESSIVE_LOAD: the peer generates excessive load.
    pub const EXCESSIVE_LOAD: Self = Self(0x107);
    /// H3_ID_ERROR: a stream or push ID used incorrectly.
    pub const ID_ERROR: Self = Self(0x108);
    /// H3_SETTINGS_ERROR: an error in the payload of SETTINGS.
    pub const SETTINGS_ERROR: Self = Self(0x109);
    /// H3_MISSING_SETTINGS: the control stream did not open with SETTINGS.
    pub const MISSING_SETTINGS: Self = Self(0x10a);
    /// H3_REQUEST_REJECTED: the request was not processed: safe to retry.
    pub const REQUEST_REJECTED: Self = Self(0x10b);
    /// H3_REQUEST_CANCELLED: the request or its response was cancelled.
    pub const REQUEST_CANCELLED: Self = Self(0x10c);
    /// H3_REQUEST_INCOMPLETE: the stream ended before the request was complete.
    pub const REQUEST_INCOMPLETE: Self = Self(0x10d);
    /// H3_MESSAGE_ERROR: a malformed request or response.
    pub const MESSAGE_ERROR: Self = Self(0x10e);
    /// H3_CONNECT_ERROR: a CONNECT tunnel failed.
    pub const CONNECT_ERROR: Self = Self(0x10f);
    /// H3_VERSION_FALLBACK: retry over HTTP/1.1.
    pub const VERSION_FALLBACK: Self = Self(0x110);
    /// QPACK_DECOMPRESSION_FAILED: a field section could not be decoded.
    pub const QPACK_DECOMPRESSION_FAILED: Self = Self(0x200);
    /// QPACK_ENCODER_STREAM_ERROR: an encoder stream instruction could not be applied.
    pub const QPACK_ENCODER_STREAM_ERROR: Self = Self(0x201);
    /// QPACK_DECODER_STREAM_ERROR: a decoder stream instruction could not be applied.
    pub const QPACK_DECODER_STREAM_ERROR: Self = Self(0x202);

    /// The code's name, for the defined ones.
    ///
    /// ```
    /// use metronome_core::h3::ErrorCode;
    /// assert_eq!(ErrorCode::FRAME_UNEXPECTED.name(), Some("H3_FRAME_UNEXPECTED"));
    /// assert_eq!(ErrorCode(0x21).name(), None);
    /// ```
    pub const fn name(self) -> Option<&'static str> {
        const H3: [&str; 17] = [
            "H3_NO_ERROR",
            "H3_GENERAL_PROTOCOL_ERROR",
            "H3_INTERNAL_ERROR",
            "H3_STREAM_CREATION_ERROR",
            "H3_CLOSED_CRITICAL_STREAM",
            "H3_FRAME_UNEXPECTED",
            "H3_FRAME_ERROR",
            "H3_EXCESSIVE_LOAD",
            "H3_ID_ERROR",
            "H3_SETTINGS_ERROR",
            "H3_MISSING_SETTINGS",
            "H3_REQUEST_REJECTED",
            "H3_REQUEST_CANCELLED",
            "H3_REQUEST_INCOMPLETE",
            "H3_MESSAGE_ERROR",
            "H3_CONNECT_ERROR",
            "H3_VERSION_FALLBACK",
        ];
        match self.0 {
            0x100..=0x110 => Some(H3[(self.0 - 0x100) as usize]),
            0x200 => Some("QPACK_DECOMPRESSION_FAILED"),
            0x201 => Some("QPACK_ENCODER_STREAM_ERROR"),
            0x202 => Some("QPACK_DECODER_STREAM_ERROR"),
            _ => None,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "error code {:#x}", self.0),
        }
    }
}

/// Why the server's bytes on a stream were refused; [`H3Error::code`]
/// gives the code to close the connection (or, for
/// [`H3Error::FieldSectionTooLarge`] and [`H3Error::Message`], to reset
/// the request stream) with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum H3Error {
    /// A frame's payload did not hold exactly its fields, or the stream
    /// ended inside a frame (H3_FRAME_ERROR).
    Frame {
        /// The frame type.
        ty: u64,
    },
    /// A frame type not allowed on this stream or at this point: DATA
    /// before HEADERS, anything but SETTINGS first on the control stream,
    /// a second SETTINGS, HTTP/2's reserved types, MAX_PUSH_ID from a
    /// server (H3_FRAME_UNEXPECTED).
    Unexpected {
        /// The frame type.
        ty: u64,
    },
    /// The control stream's first frame was not SETTINGS (H3_MISSING_SETTINGS).
    MissingSettings,
    /// A SETTINGS identifier twice, or one of HTTP/2's reserved
    /// identifiers 0x02 to 0x05 (H3_SETTINGS_ERROR).
    Settings,
    /// A frame buffered whole (HEADERS, SETTINGS) longer than the
    /// reader's buffer (H3_EXCESSIVE_LOAD).
    TooLarge {
        /// The frame type.
        ty: u64,
        /// The length declared.
        len: u64,
    },
    /// A PUSH_PROMISE, CANCEL_PUSH or push stream, though the client
    /// never allowed a push (no MAX_PUSH_ID sent), or a GOAWAY whose ID is
    /// not a client-initiated bidirectional stream or is larger than an
    /// earlier GOAWAY's (H3_ID_ERROR).
    Id,
    /// A second control, QPACK encoder or QPACK decoder stream
    /// (H3_STREAM_CREATION_ERROR).
    StreamCreation,
    /// The control stream or a QPACK stream ended (H3_CLOSED_CRITICAL_STREAM).
    ClosedCriticalStream,
    /// A field section that could not be decoded (QPACK_DECOMPRESSION_FAILED),
    /// or an encoder stream instruction a zero-capacity table cannot apply
    /// (QPACK_ENCODER_STREAM_ERROR).
    Qpack(QpackError),
    /// A field section larger than the advertised
    /// SETTINGS_MAX_FIELD_SECTION_SIZE (H3_EXCESSIVE_LOAD; a stream error).
    FieldSectionTooLarge,
    /// A malformed message head: an uppercase field name, a pseudo-header
    /// after a regular field, one the message may not carry, twice, or a
    /// `:status` that is not three digits; in a request, any rule of
    /// [`head`](super::head) (H3_MESSAGE_ERROR; a stream error).
    Message,
}

impl H3Error {
    /// The error code to close (or reset) with.
    ///
    /// ```
    /// use metronome_core::h3::{ErrorCode, H3Error};
    /// assert_eq!(H3Error::MissingSettings.code(), ErrorCode::MISSING_SETTINGS);
    /// assert_eq!(H3Error::Id.code().0, 0x108);
    /// ```
    pub const fn code(&self) -> ErrorCode {
        match self {
            H3Error::Frame { .. } => ErrorCode::FRAME_ERROR,
            H3Error::Unexpected { .. } => ErrorCode::FRAME_UNEXPECTED,
            H3Error::MissingSettings => ErrorCode::MISSING_SETTINGS,
            H3Error::Settings => ErrorCode::SETTINGS_ERROR,
            H3Error::TooLarge { .. } | H3Error::FieldSectionTooLarge => ErrorCode::EXCESSIVE_LOAD,
            H3Error::Id => ErrorCode::ID_ERROR,
            H3Error::StreamCreation => ErrorCode::STREAM_CREATION_ERROR,
            H3Error::ClosedCriticalStream => ErrorCode::CLOSED_CRITICAL_STREAM,
            H3Error::Qpack(e) => e.code(),
            H3Error::Message => ErrorCode::MESSAGE_ERROR,
        }
    }
}

impl From<QpackError> for H3Error {
    fn from(e: QpackError) -> Self {
        H3Error::Qpack(e)
    }
}

impl fmt::Display for H3Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            H3Error::Frame { ty } => write!(f, "HTTP/3 frame of type {ty:#x} malformed or cut"),
            H3Error::Unexpected { ty } => {
                write!(f, "HTTP/3 frame of type {ty:#x} not allowed here")
            }
            H3Error::MissingSettings => f.write_str("HTTP/3 control stream without SETTINGS first"),
            H3Error::Settings => f.write_str("HTTP/3 SETTINGS duplicated or reserved"),
            H3Error::TooLarge { ty, len } => {
                write!(f, "HTTP/3 frame of type {ty:#x} too large ({len} bytes)")
            }
            H3Error::Id => f.write_str("HTTP/3 push or stream ID not allowed"),
            H3Error::StreamCreation => f.write_str("HTTP/3 critical stream opened twice"),
            H3Error::ClosedCriticalStream => f.write_str("HTTP/3 critical stream closed"),
            H3Error::Qpack(e) => e.fmt(f),
            H3Error::FieldSectionTooLarge => {
                f.write_str("HTTP/3 field section above the advertised maximum")
            }
            H3Error::Message => f.write_str("HTTP/3 malformed message head"),
        }
    }
}

impl core::error::Error for H3Error {}

/// Why a field section or a QPACK stream instruction was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum QpackError {
    /// The section ended inside a prefix or a field line.
    Truncated,
    /// An integer longer than 62 bits.
    Integer,
    /// A reference to the dynamic table (whose capacity is 0): a non-zero
    /// Required Insert Count, a dynamic or post-base index.
    DynamicReference,
    /// A negative Base (sign bit set with a Required Insert Count of 0).
    Base,
    /// A static index beyond the 99 entries.
    StaticIndex,
    /// A Huffman string with EOS or bad padding.
    Huffman,
    /// An encoder stream instruction other than Set Dynamic Table
    /// Capacity 0 (QPACK_ENCODER_STREAM_ERROR).
    EncoderStream,
    /// A decoder stream Section Acknowledgment or Insert Count Increment:
    /// nothing the client sent needs one (QPACK_DECODER_STREAM_ERROR).
    DecoderStream,
}

impl QpackError {
    /// The error code: QPACK_ENCODER_STREAM_ERROR, QPACK_DECODER_STREAM_ERROR,
    /// or QPACK_DECOMPRESSION_FAILED for the rest.
    pub const fn code(&self) -> ErrorCode {
        match self {
            QpackError::EncoderStream => ErrorCode::QPACK_ENCODER_STREAM_ERROR,
            QpackError::DecoderStream => ErrorCode::QPACK_DECODER_STREAM_ERROR,
            _ => ErrorCode::QPACK_DECOMPRESSION_FAILED,
        }
    }
}

impl fmt::Display for QpackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QpackError::Truncated => "QPACK field section ends inside a field line",
            QpackError::Integer => "QPACK integer longer than 62 bits",
            QpackError::DynamicReference => {
                "QPACK reference to the dynamic table, whose capacity is 0"
            }
            QpackError::Base => "QPACK negative Base",
            QpackError::StaticIndex => "QPACK static index beyond the table",
            QpackError::Huffman => "QPACK Huffman string with EOS or bad padding",
            QpackError::EncoderStream => "QPACK encoder stream instruction beyond capacity 0",
            QpackError::DecoderStream => "QPACK decoder stream acknowledges nothing sent",
        })
    }
}
