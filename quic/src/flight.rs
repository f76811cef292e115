//! One request in flight on one bidirectional stream ([`Flight`]): the
//! bytes it still has to write, and its response read with core's
//! [`FrameReader`] and QPACK [`Decoder`] into the [`StreamExchange`]
//! HTTP/2 uses ([`Flight::feed`]), so `ok` by status, SSE's first token
//! and gaps, and gRPC's status rule are HTTP/2's.

use metronome_core::exchange::GAP_CAP;
use metronome_core::h3::frame::{encode_data_header, encode_header};
use metronome_core::h3::qpack::Decoder;
use metronome_core::h3::response::Response;
use metronome_core::h3::{Frame, FrameReader, H3Error, Role};
use metronome_core::head::ResponseFields;
use metronome_core::plan::Protocol;
use metronome_core::stream::StreamExchange;

/// The largest response field section accepted (advertised as
/// SETTINGS_MAX_FIELD_SECTION_SIZE).
pub const SECTION: usize = 16 * 1024;

/// HTTP/3 frame type HEADERS.
const HEADERS: u64 = 0x01;

/// One request in flight on one stream.
pub(crate) struct Flight<J> {
    pub(crate) job: J,
    pub(crate) sent_ns: u64,
    /// The stream's bytes (HEADERS, DATA) and how many are written.
    pub(crate) out: Vec<u8>,
    pub(crate) at: usize,
    pub(crate) reader: FrameReader<SECTION>,
    /// Where the response is in its frames' order (core's rule).
    pub(crate) response: Response,
    pub(crate) ex: StreamExchange,
    pub(crate) gaps: Vec<u64>,
    /// The response body, kept only for a client that asked
    /// ([`H3Client::keep_bodies`](crate::H3Client::keep_bodies)).
    pub(crate) body: Option<Vec<u8>>,
}

impl<J> Flight<J> {
    /// A flight for `job` (its storage from `spare` when there is one:
    /// no allocation once warm).
    pub(crate) fn take(
        spare: &mut Vec<Box<Flight<J>>>,
        protocol: Protocol,
        job: J,
        intended_ns: u64,
        sent_ns: u64,
    ) -> Box<Flight<J>> {
        let mut f = match spare.pop() {
            Some(mut f) => {
                f.job = job;
                f
            }
            None => Box::new(Flight {
                job,
                sent_ns,
                out: Vec::new(),
                at: 0,
                reader: FrameReader::new(Role::Request),
                response: Response::default(),
                ex: StreamExchange::for_protocol(protocol),
                gaps: vec![
                    0;
                    if matches!(protocol, Protocol::OpenAiSse) {
                        GAP_CAP
                    } else {
                        0
                    }
                ],
                body: None,
            }),
        };
        f.sent_ns = sent_ns;
        f.out.clear();
        f.at = 0;
        f.reader = FrameReader::new(Role::Request);
        f.response = Response::default();
        f.ex.begin(intended_ns, sent_ns);
        f
    }

    /// Puts the request's frames in `out`: HEADERS with the QPACK field
    /// section `block`, then `body` in one DATA frame when it has one.
    pub(crate) fn frame(&mut self, block: &[u8], body: &[u8]) {
        let mut head = [0u8; 16];
        let n = encode_header(HEADERS, block.len() as u64, &mut head).unwrap_or(0);
        self.out.extend_from_slice(&head[..n]);
        self.out.extend_from_slice(block);
        if !body.is_empty() {
            let n = encode_data_header(body.len() as u64, &mut head).unwrap_or(0);
            self.out.extend_from_slice(&head[..n]);
            self.out.extend_from_slice(body);
        }
    }

    /// Feeds the response stream's bytes at `now` (run clock ns): the
    /// head's `:status` and the body to the exchange.
    ///
    /// # Errors
    /// The response broke HTTP/3 (a frame error, a QPACK refusal, a
    /// malformed head): the stream's error.
    pub(crate) fn feed(
        &mut self,
        mut input: &[u8],
        decoder: &mut Decoder<SECTION>,
        now: u64,
    ) -> Result<(), H3Error> {
        let Flight {
            reader,
            response,
            ex,
            gaps,
            body,
            ..
        } = self;
        while !input.is_empty() {
            let (n, frame) = reader.read(input)?;
            match frame {
                Some(Frame::Headers(block)) => {
                    let mut fields = ResponseFields::default();
                    let section = decoder.decode(block, |name, value| {
                        ex.on_field(name, value);
                        fields.field(name, value)
                    })?;
                    match response.headers(&section)? {
                        Some(status) if status >= 200 => {
                            ex.on_head(now, status, fields.event_stream);
                            ex.on_grpc_status(fields.grpc_status);
                        }
                        Some(_) => {}
                        None => ex.on_grpc_status(fields.grpc_status),
                    }
                }
                Some(Frame::Data(d)) => {
                    response.data()?;
                    ex.on_data(now, d, gaps);
                    if let Some(b) = body.as_mut() {
                        b.extend_from_slice(d);
                    }
                }
                _ => {}
            }
            input = &input[n..];
        }
        Ok(())
    }
}
