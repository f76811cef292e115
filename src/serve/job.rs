//! What an HTTP/2 or HTTP/3 stream of `serve` answers with, whichever
//! protocol carries it: a [`Job`] (a reply, a gRPC answer, an SSE stream)
//! written when due, the head fields of its replies and streams, and the
//! bounds on the chat bodies a connection keeps.

use std::time::Instant;

use crate::serve::admit::{Admitted, GrpcAnswer};
use crate::serve::reply::{Body, ConnectionHeader, Status};
use crate::serve::request::Method;
use crate::serve::stream::{Framing, Stream};
use crate::serve::Shared;

/// A chat body kept for `max_tokens` and the prompt size; longer is `413`.
pub(super) const MAX_STORED_BODY: usize = 1 << 20;
/// Chat bodies kept at once on one connection; beyond, `413`.
pub(super) const MAX_STORED_BODIES: usize = 16 << 20;

/// An answer not yet fully written (HTTP/3 makes the same ones, never
/// [`Job::Grpc`]).
#[derive(Debug)]
pub(super) enum Job {
    /// One response written whole at `due`.
    Reply {
        due: Instant,
        status: Status,
        body: Body,
        head_only: bool,
        counted: bool,
    },
    /// A unary gRPC answer at `due`.
    Grpc { due: Instant, answer: GrpcAnswer },
    /// An SSE stream, event by event.
    Stream(Stream),
}

impl Job {
    /// When the job's next bytes are due.
    pub(super) fn due(&self, shared: &Shared) -> Instant {
        match self {
            Job::Reply { due, .. } | Job::Grpc { due, .. } => *due,
            Job::Stream(stream) => stream.due(&shared.config),
        }
    }

    /// The job of the model's answer to a request with `method`, for a
    /// protocol that frames the head and ends the body itself (an SSE
    /// stream's events go out bare).
    pub(super) fn admitted(answer: Admitted, method: Method) -> Job {
        match answer {
            Admitted::Reply {
                due,
                status,
                body,
                counted,
            } => Job::Reply {
                due,
                status,
                body,
                head_only: method == Method::Head,
                counted,
            },
            Admitted::Stream {
                arrival,
                start,
                tokens,
                prompt_tokens,
                kind,
            } => Job::Stream(Stream {
                arrival,
                start,
                tokens,
                prompt_tokens,
                kind,
                connection: ConnectionHeader::None,
                framing: Framing::Bare,
                step: 0,
            }),
        }
    }
}

/// The head fields of an SSE stream.
pub(super) const STREAM_FIELDS: [(&[u8], &[u8]); 2] = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
];

/// The head fields of a reply with a body of `length` bytes (its decimal
/// text) of `content_type`.
pub(super) fn reply_fields<'a>(
    content_type: &'a str,
    length: &'a str,
) -> [(&'a [u8], &'a [u8]); 2] {
    [
        (b"content-type", content_type.as_bytes()),
        (b"content-length", length.as_bytes()),
    ]
}
