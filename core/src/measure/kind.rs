//! The error taxonomy: [`ErrorKind`], why a sent request failed;
//! [`FramingCause`], how a response's framing was bad; [`Unsent`], why a
//! due request was never sent.

use core::fmt;

/// Why a sent request failed: every failed request has exactly one kind.
/// (Requests never sent are [`Unsent`], not errors.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorKind {
    /// The connection was reset or closed before the response completed
    /// (and the request could not be retried).
    Reset,
    /// No complete response within the timeout after the send.
    Timeout,
    /// The server answered with a non-success HTTP status.
    Status,
    /// The response's HTTP framing was bad; [`FramingCause`] says how.
    BadFraming,
    /// The response head was over the size or header-count limit
    /// (`--max-header-bytes`).
    TooLarge,
    /// A stream ended (connection closed or response ended) before `data: [DONE]`.
    StreamCut,
    /// The stream carried an error event or error object.
    StreamError,
    /// A stream reached `[DONE]` without a single content chunk.
    NoContent,
    /// A stream was asked for, and a 2xx response came without
    /// `Content-Type: text/event-stream` (a server that ignores `stream: true`).
    NotEventStream,
    /// A gRPC call answered HTTP `200` ended with a `grpc-status` other
    /// than 0 (`OK`); [`Recorder::grpc`](super::Recorder::grpc) counts
    /// them by code.
    GrpcStatus,
    /// A complete response failed one of the request's checks
    /// (`--check-*`); [`Recorder::checks`](super::Recorder::checks)
    /// counts them by [`CheckFailure`](crate::check::CheckFailure).
    Check,
}

impl ErrorKind {
    /// Number of kinds.
    pub const COUNT: usize = 11;

    /// The kind of a socket error on an established connection, the same
    /// on both engines: a read or write that timed out (or would block
    /// past its deadline) is [`ErrorKind::Timeout`]; anything else (a
    /// reset, a broken pipe, an abort) is [`ErrorKind::Reset`].
    ///
    /// ```
    /// use metronome_core::measure::ErrorKind;
    /// use std::io;
    /// assert_eq!(ErrorKind::of_io(&io::Error::from(io::ErrorKind::TimedOut)), ErrorKind::Timeout);
    /// assert_eq!(ErrorKind::of_io(&io::Error::from_raw_os_error(104)), ErrorKind::Reset); // ECONNRESET
    /// assert_eq!(ErrorKind::of_io(&io::Error::from_raw_os_error(11)), ErrorKind::Timeout); // EAGAIN
    /// ```
    #[cfg(feature = "std")]
    pub fn of_io(e: &std::io::Error) -> ErrorKind {
        match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => ErrorKind::Timeout,
            _ => ErrorKind::Reset,
        }
    }

    /// Every kind, in [`ErrorKind::index`] order.
    pub const ALL: [ErrorKind; ErrorKind::COUNT] = [
        ErrorKind::Reset,
        ErrorKind::Timeout,
        ErrorKind::Status,
        ErrorKind::BadFraming,
        ErrorKind::TooLarge,
        ErrorKind::StreamCut,
        ErrorKind::StreamError,
        ErrorKind::NoContent,
        ErrorKind::NotEventStream,
        ErrorKind::GrpcStatus,
        ErrorKind::Check,
    ];

    /// The kind's key in reports: `reset`, `timeout`, `status`,
    /// `bad_framing`, `too_large`, `stream_cut`, `stream_error`,
    /// `no_content`, `not_event_stream`, `grpc_status`, `check`.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::ErrorKind;
    /// assert_eq!(ErrorKind::StreamCut.name(), "stream_cut");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            ErrorKind::Reset => "reset",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Status => "status",
            ErrorKind::BadFraming => "bad_framing",
            ErrorKind::TooLarge => "too_large",
            ErrorKind::StreamCut => "stream_cut",
            ErrorKind::StreamError => "stream_error",
            ErrorKind::NoContent => "no_content",
            ErrorKind::NotEventStream => "not_event_stream",
            ErrorKind::GrpcStatus => "grpc_status",
            ErrorKind::Check => "check",
        }
    }

    /// Position in [`ErrorKind::ALL`] and in [`Recorder::errors`](super::Recorder::errors).
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::ErrorKind;
    /// for (i, k) in ErrorKind::ALL.iter().enumerate() {
    ///     assert_eq!(k.index(), i);
    /// }
    /// assert_eq!(ErrorKind::NotEventStream.index(), 8);
    /// ```
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// Why a due request was never sent (it is neither ok nor an error).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Unsent {
    /// No connection could be opened for it (refused, unreachable, out of
    /// descriptors).
    Connect,
    /// It waited for a free connection until the run's hard end.
    Timeout,
    /// Its field section is larger than the server allows (HTTP/3
    /// `SETTINGS_MAX_FIELD_SECTION_SIZE`, HTTP/2
    /// `SETTINGS_MAX_HEADER_LIST_SIZE`; name + value + 32 bytes per field):
    /// no connection to that server would take it.
    TooLarge,
}

impl Unsent {
    /// Number of reasons.
    pub const COUNT: usize = 3;
    /// Every reason, in index order.
    pub const ALL: [Unsent; Unsent::COUNT] = [Unsent::Connect, Unsent::Timeout, Unsent::TooLarge];

    /// The reason's key in reports: `connect`, `timeout`, `too_large`.
    ///
    /// ```
    /// use metronome_core::measure::Unsent;
    /// let names: Vec<_> = Unsent::ALL.iter().map(|u| u.name()).collect();
    /// assert_eq!(names, ["connect", "timeout", "too_large"]);
    /// assert_eq!(Unsent::TooLarge.index(), 2);
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            Unsent::Connect => "connect",
            Unsent::Timeout => "timeout",
            Unsent::TooLarge => "too_large",
        }
    }

    /// Position in [`Unsent::ALL`] and in [`Recorder::unsent`](super::Recorder::unsent).
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// How a response's HTTP framing was bad ([`ErrorKind::BadFraming`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FramingCause {
    /// The status line or a header was malformed.
    Head,
    /// `Content-Length` was invalid or conflicting.
    ContentLength,
    /// A chunk-size line was invalid.
    ChunkSize,
    /// A chunk's data was not followed by CRLF.
    ChunkFraming,
    /// The server switched protocols (101).
    Upgrade,
    /// The port speaks TLS: the URL needs `https://`.
    Tls,
    /// The port speaks HTTP/2 only.
    Http2,
    /// An HTTP/2 connection failed on malformed bytes: a frame or header
    /// block from the server that broke the protocol, or the server's
    /// GOAWAY saying so (`PROTOCOL_ERROR`, `FRAME_SIZE_ERROR`,
    /// `COMPRESSION_ERROR`; see `StreamExchange::on_connection_end` in `h2/stream.rs`),
    /// or a response this client reset as malformed (`PROTOCOL_ERROR`).
    Http2Protocol,
    /// A gRPC response (HTTP `200`) that ended without a `grpc-status`
    /// (in its trailers or a trailers-only head), or with one that is not
    /// a number: not a gRPC server, or a broken one.
    NoGrpcStatus,
    /// The server wrote before any request on a connection and on its
    /// replacement (bytes on accept): on its connections no response can be
    /// told from one that no request asked for, so the first response of
    /// each connection is not taken for its request's
    /// ([`Exchange::distrust_first_responses`](crate::exchange::Exchange::distrust_first_responses)).
    Unsolicited,
    /// An HTTP/3 response that broke the protocol: a frame where RFC 9114
    /// allows none (DATA before HEADERS, a frame the server may not send), a
    /// field section QPACK refuses, or a stream that ended inside a frame.
    Http3Protocol,
}

impl FramingCause {
    /// Number of causes.
    pub const COUNT: usize = 11;
    /// Every cause, in index order.
    pub const ALL: [FramingCause; FramingCause::COUNT] = [
        FramingCause::Head,
        FramingCause::ContentLength,
        FramingCause::ChunkSize,
        FramingCause::ChunkFraming,
        FramingCause::Upgrade,
        FramingCause::Tls,
        FramingCause::Http2,
        FramingCause::Http2Protocol,
        FramingCause::NoGrpcStatus,
        FramingCause::Unsolicited,
        FramingCause::Http3Protocol,
    ];

    /// What a user reads: the cause and, where there is one, the fix.
    pub const fn describe(self) -> &'static str {
        match self {
            FramingCause::Head => "malformed status line or header",
            FramingCause::ContentLength => "invalid or conflicting Content-Length",
            FramingCause::ChunkSize => "invalid chunk-size line",
            FramingCause::ChunkFraming => "missing CRLF after chunk data",
            FramingCause::Upgrade => "unsupported 101 Switching Protocols",
            FramingCause::Tls => "the port speaks TLS: use https://",
            FramingCause::Http2 => {
                "the port speaks HTTP/2 only: add --http2-prior-knowledge (h2c, for an http:// \
                 URL) or --http2 (for an https:// URL)"
            }
            FramingCause::Http2Protocol => {
                "HTTP/2 protocol error: a malformed frame, header block or response from \
                 the server, or its GOAWAY with a protocol error"
            }
            FramingCause::NoGrpcStatus => {
                "a gRPC response without grpc-status: is the target a gRPC server?"
            }
            FramingCause::Unsolicited => {
                "the server writes before any request on its connections: no response can be \
                 matched to its request"
            }
            FramingCause::Http3Protocol => {
                "HTTP/3 protocol error: a frame out of place, a field section QPACK refuses, \
                 or a stream cut inside a frame"
            }
        }
    }

    /// The cause's key in reports.
    pub const fn name(self) -> &'static str {
        match self {
            FramingCause::Head => "head",
            FramingCause::ContentLength => "content_length",
            FramingCause::ChunkSize => "chunk_size",
            FramingCause::ChunkFraming => "chunk_framing",
            FramingCause::Upgrade => "upgrade",
            FramingCause::Tls => "tls",
            FramingCause::Http2 => "http2",
            FramingCause::Http2Protocol => "http2_protocol",
            FramingCause::NoGrpcStatus => "no_grpc_status",
            FramingCause::Unsolicited => "unsolicited",
            FramingCause::Http3Protocol => "http3_protocol",
        }
    }

    /// Position in [`FramingCause::ALL`] and in [`Recorder::framing`](super::Recorder::framing).
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
