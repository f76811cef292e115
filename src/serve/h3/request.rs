//! A request stream: its request read (head, body, trailers) and checked,
//! admitted into the model when its FIN arrives, refused when malformed or
//! too large, and its answer framed (HEADERS, DATA) and written when due,
//! then ended with FIN or a reset.

use std::sync::atomic::Ordering;
use std::time::Instant;

use quinn_proto::{StreamId, WriteError};

use metronome_core::h3::frame::{encode_data_header, encode_header, kind};
use metronome_core::h3::qpack::{encode_response, FIELD_OVERHEAD};
use metronome_core::h3::{ErrorCode, Frame, FrameReader, H3Error, Role};

use super::{code, ConnError, H3Conn, SECTION};
use crate::serve::admit::admit;
use crate::serve::job::{reply_fields, Job, MAX_STORED_BODIES, MAX_STORED_BODY, STREAM_FIELDS};
use crate::serve::reply::{Body, Status};
use crate::serve::request::{Method, Route};
use crate::serve::stream::StreamStep;
use crate::serve::Shared;

/// How a request stream's answer ends once its bytes are out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Finish {
    /// FIN.
    End,
    /// RESET_STREAM with this code (a cut SSE stream).
    Reset(ErrorCode),
}

/// One request stream: the request as it arrives, then its answer.
pub(super) struct Request {
    reader: Box<FrameReader<SECTION>>,
    /// The head arrived (well formed, or refused).
    head: bool,
    method: Method,
    route: Route,
    content_length: Option<u64>,
    /// Body bytes received.
    received: u64,
    /// The body, kept only for chat requests in SSE mode.
    body: Vec<u8>,
    keep_body: bool,
    /// The request side is still read (no FIN, not stopped).
    reading: bool,
    /// The answer, until all of it is framed.
    pub(super) job: Option<Job>,
    /// Framed answer bytes; `written` of them accepted by QUIC.
    out: Vec<u8>,
    written: usize,
    finish: Option<Finish>,
    /// Counts as served once finished.
    counted: bool,
}

impl Request {
    /// A stream just opened by the client.
    pub(super) fn new() -> Self {
        Self {
            reader: Box::new(FrameReader::new(Role::ClientRequest)),
            head: false,
            method: Method::Other,
            route: Route::Other,
            content_length: None,
            received: 0,
            body: Vec::new(),
            keep_body: false,
            reading: true,
            job: None,
            out: Vec::new(),
            written: 0,
            finish: None,
            counted: false,
        }
    }
}

impl H3Conn {
    /// Bytes of request stream `id`: its head, body and trailers.
    /// With `sse`, chat bodies are kept (for `max_tokens` and the prompt).
    pub(super) fn request_bytes(
        &mut self,
        id: StreamId,
        mut input: &[u8],
        sse: bool,
    ) -> Result<(), ConnError> {
        while !input.is_empty() {
            let Some(r) = self.requests.get_mut(&id) else {
                return Ok(());
            };
            if !r.reading {
                return Ok(());
            }
            let (n, frame) = match r.reader.read(input) {
                Ok(read) => read,
                Err(H3Error::TooLarge {
                    ty: kind::HEADERS, ..
                }) => {
                    self.refuse(id, Status::HeadersTooLarge, ErrorCode::NO_ERROR);
                    return Ok(());
                }
                Err(e) => return Err(e.into()),
            };
            input = &input[n..];
            let refusal = match frame {
                Some(Frame::Headers(block)) if !r.head => {
                    let mut method = Method::Other;
                    let mut route = Route::Other;
                    let decoded = self
                        .decoder
                        .decode_request(block, |name, value| match name {
                            b":method" => method = Method::of(value),
                            b":path" => route = Route::of(value),
                            _ => {}
                        });
                    r.head = true;
                    match decoded {
                        Ok(section) => {
                            r.method = method;
                            r.route = route;
                            r.content_length = section.content_length;
                            r.keep_body = sse && matches!(route, Route::Chat | Route::Completions);
                            None
                        }
                        Err(e) => refusal(e)?,
                    }
                }
                Some(Frame::Headers(block)) => {
                    // Trailers: checked, then forgotten.
                    self.decoder
                        .decode_trailers(block, |_, _| {})
                        .err()
                        .map(refusal)
                        .transpose()?
                        .flatten()
                }
                Some(Frame::Data(data)) => {
                    r.received += data.len() as u64;
                    if r.content_length.is_some_and(|n| r.received > n) {
                        Some((Status::BadRequest, ErrorCode::MESSAGE_ERROR))
                    } else if r.keep_body {
                        if r.body.len() + data.len() > MAX_STORED_BODY
                            || self.stored + data.len() > MAX_STORED_BODIES
                        {
                            Some((Status::PayloadTooLarge, ErrorCode::NO_ERROR))
                        } else {
                            r.body.extend_from_slice(data);
                            self.stored += data.len();
                            None
                        }
                    } else {
                        None
                    }
                }
                _ => None,
            };
            if let Some((status, why)) = refusal {
                self.refuse(id, status, why);
                return Ok(());
            }
        }
        Ok(())
    }

    /// The request on `id` ended (FIN) at `at`: admit it.
    pub(super) fn request_end(
        &mut self,
        shared: &Shared,
        id: StreamId,
        at: Instant,
    ) -> Result<(), ConnError> {
        let Some(r) = self.requests.get_mut(&id) else {
            return Ok(());
        };
        if !r.reading {
            return Ok(());
        }
        r.reading = false;
        r.reader.finish()?;
        if !r.head {
            self.requests.remove(&id);
            let _ = self
                .conn
                .send_stream(id)
                .reset(code(ErrorCode::REQUEST_INCOMPLETE));
            return Ok(());
        }
        if r.content_length.is_some_and(|n| n != r.received) {
            self.refuse(id, Status::BadRequest, ErrorCode::MESSAGE_ERROR);
            return Ok(());
        }
        let job = Job::admitted(admit(shared, at, r.method, r.route, &r.body), r.method);
        self.stored -= r.body.len();
        r.body = Vec::new();
        r.job = Some(job);
        Ok(())
    }

    /// Refuses the request on `id` with `status` at once, and stops its
    /// request side with `why` if it is still being sent.
    fn refuse(&mut self, id: StreamId, status: Status, why: ErrorCode) {
        let Some(r) = self.requests.get_mut(&id) else {
            return;
        };
        if r.reading {
            r.reading = false;
            let _ = self.conn.recv_stream(id).stop(code(why));
        }
        self.stored -= r.body.len();
        r.body = Vec::new();
        r.job = Some(Job::Reply {
            due: Instant::now(),
            status,
            body: Body::Text(status.line()),
            head_only: false,
            counted: false,
        });
    }

    /// Runs every answer due at `now`.
    pub(super) fn run_due(&mut self, shared: &Shared, now: Instant) {
        let max_section = self.peer_max_section;
        for r in self.requests.values_mut() {
            while r.job.as_ref().is_some_and(|job| job.due(shared) <= now) {
                let Some(job) = r.job.take() else { break };
                run_job(shared, r, job, max_section);
            }
        }
    }

    /// Writes what stream `id` owes; ends it once all is out.
    pub(super) fn write(&mut self, shared: &Shared, id: StreamId) {
        let Some(r) = self.requests.get_mut(&id) else {
            return;
        };
        let mut s = self.conn.send_stream(id);
        while r.written < r.out.len() {
            match s.write(&r.out[r.written..]) {
                Ok(n) => r.written += n,
                Err(WriteError::Blocked) => return,
                Err(_) => {
                    self.requests.remove(&id);
                    return;
                }
            }
        }
        r.out.clear();
        r.written = 0;
        if r.job.is_some() {
            return;
        }
        let Some(finish) = r.finish else {
            return;
        };
        let done = match finish {
            Finish::End => s.finish().is_ok(),
            Finish::Reset(c) => {
                let _ = s.reset(code(c));
                false
            }
        };
        if r.reading {
            let _ = self.conn.recv_stream(id).stop(code(ErrorCode::NO_ERROR));
        }
        if done && r.counted {
            shared.served.fetch_add(1, Ordering::SeqCst);
        }
        self.requests.remove(&id);
    }
}

/// The refusal a request head or trailers error asks for: `Some` for a
/// stream error (malformed: `400`; too large: `431`), `Err` for a
/// connection error (a QPACK failure).
fn refusal(e: H3Error) -> Result<Option<(Status, ErrorCode)>, ConnError> {
    match e {
        H3Error::Message => Ok(Some((Status::BadRequest, ErrorCode::MESSAGE_ERROR))),
        H3Error::FieldSectionTooLarge => Ok(Some((Status::HeadersTooLarge, ErrorCode::NO_ERROR))),
        e => Err(e.into()),
    }
}

/// Puts the bytes of `job` (due now) in the request's outbox: the head,
/// DATA, and how the stream ends.
fn run_job(shared: &Shared, r: &mut Request, job: Job, max_section: Option<u64>) {
    match job {
        Job::Reply {
            status,
            body,
            head_only,
            counted,
            ..
        } => {
            let (content_type, bytes) = shared.body(body);
            let length = bytes.len().to_string();
            if !head(
                r,
                status.code(),
                &reply_fields(content_type, &length),
                max_section,
            ) {
                return;
            }
            if !head_only {
                data(&mut r.out, bytes);
            }
            r.finish = Some(Finish::End);
            r.counted = counted;
        }
        Job::Stream(mut sse) => {
            if sse.step == 0 && !head(r, 200, &STREAM_FIELDS, max_section) {
                return;
            }
            let mut bytes = Vec::new();
            let mut event = Vec::new();
            let step = sse.step(&mut bytes, &mut event);
            data(&mut r.out, &bytes);
            match step {
                StreamStep::More => r.job = Some(Job::Stream(sse)),
                StreamStep::Done => {
                    r.finish = Some(Finish::End);
                    r.counted = true;
                }
                StreamStep::Cut => r.finish = Some(Finish::Reset(ErrorCode::INTERNAL_ERROR)),
            }
        }
        // HTTP/3 serves no gRPC.
        Job::Grpc { .. } => r.finish = Some(Finish::Reset(ErrorCode::INTERNAL_ERROR)),
    }
}

/// Appends a HEADERS frame with `:status` and `fields`; `false` (the
/// stream reset instead) when the head is above the client's
/// SETTINGS_MAX_FIELD_SECTION_SIZE or cannot be encoded.
fn head(r: &mut Request, status: u16, fields: &[(&[u8], &[u8])], max: Option<u64>) -> bool {
    let size: usize = b":status".len()
        + 3
        + FIELD_OVERHEAD
        + fields
            .iter()
            .map(|(n, v)| n.len() + v.len() + FIELD_OVERHEAD)
            .sum::<usize>();
    let mut block = vec![0u8; size + 16];
    let encoded = encode_response(status, fields, true, &mut block);
    match encoded {
        Some(n) if !max.is_some_and(|m| size as u64 > m) => {
            let mut frame = [0u8; 16];
            let h = encode_header(kind::HEADERS, n as u64, &mut frame).unwrap_or(0);
            r.out.extend_from_slice(&frame[..h]);
            r.out.extend_from_slice(&block[..n]);
            true
        }
        _ => {
            r.job = None;
            r.finish = Some(Finish::Reset(ErrorCode::INTERNAL_ERROR));
            false
        }
    }
}

/// Appends `bytes` as one DATA frame (nothing when empty).
fn data(out: &mut Vec<u8>, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    let mut frame = [0u8; 16];
    let h = encode_data_header(bytes.len() as u64, &mut frame).unwrap_or(0);
    out.extend_from_slice(&frame[..h]);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_within_the_clients_limit_is_framed_else_the_stream_reset() {
        let fields = reply_fields("text/plain", "2");
        // :status 200 (7 + 3 + 32), content-type (12 + 10 + 32),
        // content-length (14 + 1 + 32): 143 bytes as RFC 9114 counts.
        let mut r = Request::new();
        assert!(head(&mut r, 200, &fields, Some(143)));
        assert_eq!(r.out[0], 0x01, "a HEADERS frame");
        assert_eq!(usize::from(r.out[1]), r.out.len() - 2);
        assert_eq!(&r.out[2..5], [0x00, 0x00, 0xd9], "prefix, :status 200");
        assert_eq!(r.finish, None);
        let mut r = Request::new();
        assert!(!head(&mut r, 200, &fields, Some(142)));
        assert!(r.out.is_empty());
        assert_eq!(r.finish, Some(Finish::Reset(ErrorCode::INTERNAL_ERROR)));
        // No SETTINGS yet: no limit.
        assert!(head(&mut Request::new(), 429, &fields, None));
    }

    #[test]
    fn head_errors_map_to_answers_or_connection_errors() {
        assert_eq!(
            refusal(H3Error::Message).ok(),
            Some(Some((Status::BadRequest, ErrorCode::MESSAGE_ERROR)))
        );
        assert_eq!(
            refusal(H3Error::FieldSectionTooLarge).ok(),
            Some(Some((Status::HeadersTooLarge, ErrorCode::NO_ERROR)))
        );
        let qpack = H3Error::Qpack(metronome_core::h3::qpack::QpackError::DynamicReference);
        let Err(ConnError(code, why)) = refusal(qpack) else {
            panic!("a QPACK failure closes the connection");
        };
        assert_eq!(code, ErrorCode::QPACK_DECOMPRESSION_FAILED);
        assert_eq!(why, qpack);
    }

    #[test]
    fn data_frames_wrap_each_piece() {
        let mut out = Vec::new();
        data(&mut out, b"");
        assert!(out.is_empty());
        data(&mut out, b"ok");
        assert_eq!(out, [0x00, 0x02, b'o', b'k']);
        assert_eq!(
            code(ErrorCode::NO_ERROR),
            quinn_proto::VarInt::from_u32(0x100)
        );
    }
}
