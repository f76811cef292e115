//! The request-head rules: each decoded field of a header block by core's
//! rule for HTTP/2 and HTTP/3 ([`RequestFields`], RFC 9113 sections 8.2 and
//! 8.3), and the whole block, request or trailers.

use metronome_core::h2::frame::ErrorCode;
use metronome_core::head::RequestFields;

use super::conn::ConnError;
use super::{H2Connection, H2Stream, RECV_STREAM_WINDOW};
use crate::serve::request::{Method, Route};

/// What a request head says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Head {
    pub(super) method: Option<Method>,
    pub(super) route: Option<Route>,
    pub(super) grpc: bool,
    pub(super) content_length: Option<u64>,
    /// Core's rule for a request head's fields, shared with HTTP/3.
    rule: RequestFields,
    malformed: bool,
}

impl Head {
    /// One decoded field: core's rule ([`RequestFields`]), then what this
    /// server reads of it.
    fn field(&mut self, name: &[u8], value: &[u8]) {
        if self.rule.field(name, value).is_err() {
            self.malformed = true;
            return;
        }
        match name {
            b":method" => self.method = Some(Method::of(value)),
            b":path" => self.route = Some(Route::of(value)),
            b"content-type" => self.grpc = value.starts_with(b"application/grpc"),
            _ => {}
        }
        self.content_length = self.rule.content_length();
    }

    /// Any pseudo-header was seen (trailers must have none).
    fn pseudo(&self) -> bool {
        self.rule.pseudo()
    }

    /// A request needs `:method`, `:scheme` and `:path` (no CONNECT here).
    fn complete(&self) -> bool {
        !self.malformed && !self.rule.connect() && self.rule.complete()
    }
}

impl H2Connection<'_> {
    /// A whole header block: a request head, or trailers.
    pub(super) fn header_block(
        &mut self,
        stream: u32,
        end_stream: bool,
        block: &[u8],
    ) -> Result<(), ConnError> {
        let mut head = Head::default();
        let decoded = self
            .decoder
            .decode(block, |name, value| head.field(name, value))
            .map_err(|_| ConnError(ErrorCode::COMPRESSION_ERROR, "bad HPACK block"))?;
        if stream % 2 == 0 {
            return Err(ConnError(
                ErrorCode::PROTOCOL_ERROR,
                "HEADERS on an even stream id",
            ));
        }
        if let Some(s) = self.streams.get_mut(&stream) {
            // Trailers: they end the request, and carry no pseudo-header.
            if !s.receiving {
                self.reset(stream, ErrorCode::STREAM_CLOSED);
            } else if !end_stream || head.pseudo() || head.malformed {
                self.reset(stream, ErrorCode::PROTOCOL_ERROR);
            } else {
                self.complete(stream);
            }
            return Ok(());
        }
        if !self.idle(stream) {
            if head.pseudo() {
                return Err(ConnError(
                    ErrorCode::PROTOCOL_ERROR,
                    "a new stream id not above the last one",
                ));
            }
            // Trailers of a stream already reset or answered: the block
            // kept the HPACK table in step, nothing more.
            return Ok(());
        }
        self.last_stream = stream;
        let shared = self.shared;
        let config = &shared.config;
        if self.goaway_received || self.streams.len() >= config.max_streams as usize {
            self.reset(stream, ErrorCode::REFUSED_STREAM);
            return Ok(());
        }
        let oversize = decoded.oversize > 0;
        if !oversize && !head.complete() {
            self.reset(stream, ErrorCode::PROTOCOL_ERROR);
            return Ok(());
        }
        let keep_body = config.sse
            && !head.grpc
            && matches!(head.route, Some(Route::Chat | Route::Completions));
        self.streams.insert(
            stream,
            H2Stream {
                receiving: true,
                head,
                oversize,
                received: 0,
                body: Vec::new(),
                keep_body,
                too_large: false,
                recv_window: i64::from(RECV_STREAM_WINDOW),
                window_owed: 0,
                send_window: self.peer_initial_window,
                job: None,
                outbox: Vec::new(),
                sent: 0,
                finish: None,
                counted: false,
            },
        );
        if end_stream {
            self.complete(stream);
        }
        Ok(())
    }
}
