//! The errors of the client [`Connection`](super::conn::Connection): a
//! server that broke a rule ([`Violation`]), a connection error that ends
//! the connection ([`H2Error`], with the GOAWAY code it sends) and a send
//! that could not start ([`SendError`]).

use core::fmt;

use super::frame;
use super::frame::ErrorCode;
use super::hpack::HpackError;

/// A rule of RFC 9113 the server broke that needs the connection's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Violation {
    /// The server's first frame was not SETTINGS.
    FirstFrameNotSettings,
    /// A SETTINGS value out of range (ENABLE_PUSH not 0, MAX_FRAME_SIZE
    /// outside 16 384 ..= 2^24 - 1).
    SettingsValue,
    /// A frame other than the CONTINUATION the open header block needs.
    ContinuationExpected,
    /// A CONTINUATION with no open header block.
    UnexpectedContinuation,
    /// A PUSH_PROMISE, though the client disabled push.
    PushPromise,
    /// A frame on a stream the client never opened.
    IdleStream,
    /// A WINDOW_UPDATE of 0 for the connection.
    ZeroWindowIncrement,
}

/// A connection error: the connection is done (a GOAWAY with
/// [`H2Error::code`] is written by the next [`Connection::poll_transmit`](super::conn::Connection::poll_transmit)),
/// and every stream still open failed with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum H2Error {
    /// A malformed frame.
    Frame(frame::FrameError),
    /// A malformed header block.
    Hpack(HpackError),
    /// A rule of the protocol broken.
    Protocol(Violation),
    /// The server sent beyond the connection window, or grew a window past
    /// 2^31 - 1.
    FlowControl,
    /// A header block split over CONTINUATION frames outgrew the
    /// connection's block buffer (`B`); raise it.
    HeaderBlockTooLarge,
    /// More than [`PONG_CAP`](super::conn::PONG_CAP) PINGs between two `poll_transmit` calls.
    PingFlood,
    /// The server's first bytes were an HTTP/1.x response (`HTTP/`), not
    /// its SETTINGS: it does not speak HTTP/2 on this connection.
    Http1Answer,
}

impl H2Error {
    /// The code of the GOAWAY this error sends.
    pub const fn code(&self) -> ErrorCode {
        match self {
            H2Error::Frame(e) => e.code(),
            H2Error::Hpack(_) => ErrorCode::COMPRESSION_ERROR,
            H2Error::Protocol(_) | H2Error::Http1Answer => ErrorCode::PROTOCOL_ERROR,
            H2Error::FlowControl => ErrorCode::FLOW_CONTROL_ERROR,
            H2Error::HeaderBlockTooLarge => ErrorCode::INTERNAL_ERROR,
            H2Error::PingFlood => ErrorCode::ENHANCE_YOUR_CALM,
        }
    }
}

impl fmt::Display for H2Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            H2Error::Frame(e) => e.fmt(f),
            H2Error::Hpack(e) => e.fmt(f),
            H2Error::Protocol(v) => write!(f, "HTTP/2 protocol violation by the server: {v:?}"),
            H2Error::FlowControl => f.write_str("HTTP/2 flow-control violation by the server"),
            H2Error::HeaderBlockTooLarge => {
                f.write_str("HTTP/2 header block larger than the connection's block buffer")
            }
            H2Error::PingFlood => f.write_str("HTTP/2 PING flood"),
            H2Error::Http1Answer => f.write_str(
                "the server answered HTTP/1.1, not HTTP/2: it does not speak HTTP/2 with prior \
                 knowledge (h2c) on this port; drop --http2-prior-knowledge",
            ),
        }
    }
}

impl core::error::Error for H2Error {}

impl From<frame::FrameError> for H2Error {
    fn from(e: frame::FrameError) -> Self {
        H2Error::Frame(e)
    }
}

impl From<HpackError> for H2Error {
    fn from(e: HpackError) -> Self {
        H2Error::Hpack(e)
    }
}

/// Why a send could not start or go on. Nothing was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SendError {
    /// [`Connection::poll_transmit`](super::conn::Connection::poll_transmit) has not written the preface yet.
    NotStarted,
    /// Every stream the server allows (`MAX_CONCURRENT_STREAMS`), or every
    /// slot of the connection, is in use: the request waits or goes to
    /// another connection.
    StreamLimit,
    /// The server sent GOAWAY: use a fresh connection.
    GoingAway,
    /// The connection failed with an [`H2Error`].
    Closed,
    /// Stream ids are used up (2^31): use a fresh connection.
    IdsExhausted,
    /// The output buffer cannot hold the frames: flush it and try again.
    BufferFull,
    /// No such open stream, or its request side is already complete.
    UnknownStream,
    /// The request's field list is larger than the server's
    /// `SETTINGS_MAX_HEADER_LIST_SIZE`, `limit` bytes: no connection to
    /// this server takes it ([`Connection::start_planned`](super::Connection::start_planned)).
    TooLarge {
        /// The server's limit.
        limit: u32,
    },
}

/// [`SendError::TooLarge`]'s text, before the limit.
const TOO_LARGE: &str =
    "the request's header list is larger than the server's SETTINGS_MAX_HEADER_LIST_SIZE";

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SendError::NotStarted => "HTTP/2 connection preface not written yet",
            SendError::StreamLimit => "no HTTP/2 stream free on this connection",
            SendError::GoingAway => "HTTP/2 connection going away",
            SendError::Closed => "HTTP/2 connection failed",
            SendError::IdsExhausted => "HTTP/2 stream ids exhausted",
            SendError::BufferFull => "output buffer full",
            SendError::UnknownStream => "no such open HTTP/2 stream",
            SendError::TooLarge { limit } => {
                return write!(f, "{} ({limit} bytes)", TOO_LARGE);
            }
        })
    }
}

impl core::error::Error for SendError {}
