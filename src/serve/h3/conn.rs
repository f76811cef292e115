//! One HTTP/3 connection: its QUIC [`Connection`], the client's
//! unidirectional streams (control, QPACK) read and checked, each request
//! stream read into a request and admitted when its FIN arrives, and each
//! answer written when due (HEADERS, DATA, FIN or a reset).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Instant;

use bytes::Bytes;
use quinn_proto::{Connection, Dir, Event, ReadError, StreamEvent, StreamId, VarInt, WriteError};

use metronome_core::h3::frame::{
    encode_control_stream_start, encode_data_header, encode_header, kind, setting,
};
use metronome_core::h3::qpack::{encode_response, DecoderStream, EncoderStream, FIELD_OVERHEAD};
use metronome_core::h3::varint;
use metronome_core::h3::{ErrorCode, Frame, FrameReader, H3Error, PeerStreams, Role, StreamType};

use super::super::admit::admit;
use super::super::h2::{reply_fields, Job, MAX_STORED_BODIES, MAX_STORED_BODY, STREAM_FIELDS};
use super::super::reply::{Body, Status};
use super::super::request::{Method, Route};
use super::super::stream::StreamStep;
use super::super::Shared;
use super::SECTION;

/// The client's control stream frames read whole (SETTINGS) at most.
const CONTROL: usize = 4096;

/// How a request stream's answer ends once its bytes are out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Finish {
    /// FIN.
    End,
    /// RESET_STREAM with this code (a cut SSE stream).
    Reset(ErrorCode),
}

/// One request stream: the request as it arrives, then its answer.
struct Request {
    reader: Box<FrameReader<SECTION>>,
    /// The head arrived (and was well formed, or `reject` says why not).
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
    job: Option<Job>,
    /// Framed answer bytes; `written` of them accepted by QUIC.
    out: Vec<u8>,
    written: usize,
    finish: Option<Finish>,
    /// Counts as served once finished.
    counted: bool,
}

impl Request {
    fn new() -> Self {
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

/// A unidirectional stream the client opened.
enum Uni {
    /// Its type is still arriving.
    Type(varint::Reader),
    Control(Box<FrameReader<CONTROL>>),
    Encoder(EncoderStream),
    Decoder(DecoderStream),
    /// Reserved or unknown: stopped, whatever still comes is dropped.
    Ignored,
}

/// What a read of one stream found.
enum End {
    /// More may come.
    Open,
    /// FIN.
    Fin,
    /// The client reset it.
    Reset,
}

/// An error that closes the connection: its code and why (the
/// CONNECTION_CLOSE's reason phrase).
struct ConnError(ErrorCode, H3Error);

impl From<H3Error> for ConnError {
    fn from(e: H3Error) -> Self {
        ConnError(e.code(), e)
    }
}

/// One connection's HTTP/3 state.
pub(super) struct H3Conn {
    pub(super) conn: Connection,
    /// Our control stream's opening (type, SETTINGS), until all written.
    control: Option<(StreamId, Vec<u8>)>,
    control_opened: bool,
    peer: PeerStreams,
    uni: HashMap<StreamId, Uni>,
    requests: HashMap<StreamId, Request>,
    decoder: Box<metronome_core::h3::qpack::Decoder<SECTION>>,
    /// The client's SETTINGS_MAX_FIELD_SECTION_SIZE (unlimited until its
    /// SETTINGS arrive).
    peer_max_section: Option<u64>,
    /// Chat bodies kept, in bytes, over all streams.
    stored: usize,
    closed: bool,
}

impl H3Conn {
    /// A connection just accepted.
    pub(super) fn new(conn: Connection) -> Self {
        Self {
            conn,
            control: None,
            control_opened: false,
            peer: PeerStreams::new(),
            uni: HashMap::new(),
            requests: HashMap::new(),
            decoder: Box::default(),
            peer_max_section: None,
            stored: 0,
            closed: false,
        }
    }

    /// Closes the connection with H3_NO_ERROR (the server is stopping).
    pub(super) fn close_quietly(&mut self, now: Instant) {
        if !self.closed {
            self.closed = true;
            self.conn
                .close(now, code(ErrorCode::NO_ERROR), Bytes::from_static(b""));
        }
    }

    fn close(&mut self, now: Instant, e: ConnError) {
        if !self.closed {
            self.closed = true;
            self.requests.clear();
            self.conn
                .close(now, code(e.0), Bytes::from(e.1.to_string()));
        }
    }

    /// When this connection next needs a turn: its QUIC timer or its
    /// first answer due.
    pub(super) fn next_wake(&mut self, shared: &Shared) -> Option<Instant> {
        let due = self
            .requests
            .values()
            .filter_map(|r| r.job.as_ref())
            .map(|job| job.due(shared))
            .min();
        super::earliest(self.conn.poll_timeout(), due)
    }

    /// A turn at `now`: timers, events, the answers due, our control
    /// stream.
    pub(super) fn drive(&mut self, shared: &Shared, now: Instant) {
        if self.conn.poll_timeout().is_some_and(|t| t <= now) {
            self.conn.handle_timeout(now);
        }
        self.events(shared, now);
        if self.closed {
            return;
        }
        self.run_due(shared, now);
        let ids: Vec<StreamId> = self.requests.keys().copied().collect();
        for id in ids {
            self.write(shared, id);
        }
        self.open_control();
    }

    /// Handles the connection's events; requests completed now are
    /// stamped `at` (when the datagram that completed them was read).
    pub(super) fn events(&mut self, shared: &Shared, at: Instant) {
        while let Some(event) = self.conn.poll() {
            let result = match event {
                Event::Connected => {
                    self.open_control();
                    Ok(())
                }
                Event::ConnectionLost { .. } => {
                    self.closed = true;
                    self.requests.clear();
                    Ok(())
                }
                Event::Stream(StreamEvent::Opened { dir }) => {
                    let mut result = Ok(());
                    while let Some(id) = self.conn.streams().accept(dir) {
                        if dir == Dir::Bi {
                            self.requests.insert(id, Request::new());
                        } else {
                            self.uni.insert(id, Uni::Type(varint::Reader::new()));
                        }
                        result = result.and_then(|()| self.read(shared, id, at));
                    }
                    result
                }
                Event::Stream(StreamEvent::Readable { id }) => self.read(shared, id, at),
                Event::Stream(StreamEvent::Writable { id }) => {
                    self.write(shared, id);
                    Ok(())
                }
                Event::Stream(StreamEvent::Stopped { id, error_code }) => {
                    // The client no longer wants the answer.
                    if self.requests.remove(&id).is_some() {
                        let _ = self.conn.send_stream(id).reset(error_code);
                    }
                    Ok(())
                }
                _ => Ok(()),
            };
            if let Err(e) = result {
                self.close(at, e);
            }
        }
    }

    /// Opens our control stream (type and SETTINGS) once QUIC allows it,
    /// and writes what is left of it.
    fn open_control(&mut self) {
        if self.closed {
            return;
        }
        if !self.control_opened {
            let Some(id) = self.conn.streams().open(Dir::Uni) else {
                return;
            };
            self.control_opened = true;
            let mut start = [0u8; 32];
            let n = encode_control_stream_start(SECTION as u64, &mut start).unwrap_or(0);
            self.control = Some((id, start[..n].to_vec()));
        }
        if let Some((id, bytes)) = &mut self.control {
            if let Ok(n) = self.conn.send_stream(*id).write(bytes) {
                bytes.drain(..n);
            }
            if bytes.is_empty() {
                self.control = None;
            }
        }
    }

    /// Reads what stream `id` has (a request or one of the client's
    /// unidirectional streams).
    fn read(&mut self, shared: &Shared, id: StreamId, at: Instant) -> Result<(), ConnError> {
        let mut pieces: Vec<Bytes> = Vec::new();
        let mut end = End::Open;
        {
            let mut rs = self.conn.recv_stream(id);
            let Ok(mut chunks) = rs.read(true) else {
                return Ok(());
            };
            loop {
                match chunks.next(usize::MAX) {
                    Ok(Some(chunk)) => pieces.push(chunk.bytes),
                    Ok(None) => {
                        end = End::Fin;
                        break;
                    }
                    Err(ReadError::Blocked) => break,
                    Err(ReadError::Reset(_)) => {
                        end = End::Reset;
                        break;
                    }
                }
            }
            let _ = chunks.finalize();
        }
        if id.dir() == Dir::Uni {
            return self.read_uni(id, &pieces, &end);
        }
        for piece in &pieces {
            self.request_bytes(id, piece, shared.config.sse)?;
        }
        match end {
            End::Open => Ok(()),
            End::Fin => self.request_end(shared, id, at),
            End::Reset => {
                // Cancelled before it was complete: nothing is owed.
                if self.requests.get(&id).is_some_and(|r| r.job.is_none()) {
                    self.requests.remove(&id);
                    let _ = self
                        .conn
                        .send_stream(id)
                        .reset(code(ErrorCode::REQUEST_CANCELLED));
                }
                Ok(())
            }
        }
    }

    /// The bytes of one of the client's unidirectional streams.
    fn read_uni(&mut self, id: StreamId, pieces: &[Bytes], end: &End) -> Result<(), ConnError> {
        for piece in pieces {
            let mut input = &piece[..];
            while !input.is_empty() {
                let Some(uni) = self.uni.get_mut(&id) else {
                    return Ok(());
                };
                match uni {
                    Uni::Type(reader) => {
                        let (n, ty) = reader.feed(input);
                        input = &input[n..];
                        if let Some(ty) = ty {
                            let next = self.open_uni(id, StreamType::from_u64(ty))?;
                            self.uni.insert(id, next);
                        }
                    }
                    Uni::Control(reader) => {
                        let (n, frame) = reader.read(input)?;
                        if let Some(Frame::Settings(s)) = frame {
                            self.peer_max_section = s.get(setting::MAX_FIELD_SECTION_SIZE);
                        }
                        input = &input[n..];
                    }
                    Uni::Encoder(s) => {
                        s.feed(input)?;
                        input = &[];
                    }
                    Uni::Decoder(s) => {
                        s.feed(input)?;
                        input = &[];
                    }
                    Uni::Ignored => input = &[],
                }
            }
        }
        match (end, self.uni.get(&id)) {
            (End::Open, _) | (_, Some(Uni::Ignored | Uni::Type(_)) | None) => Ok(()),
            // The control and QPACK streams may not end.
            _ => Err(H3Error::ClosedCriticalStream.into()),
        }
    }

    /// A client's unidirectional stream said its type.
    fn open_uni(&mut self, id: StreamId, ty: StreamType) -> Result<Uni, ConnError> {
        if ty == StreamType::Push {
            // Only servers push (RFC 9114 section 6.2.2).
            return Err(H3Error::StreamCreation.into());
        }
        Ok(match self.peer.open(ty)? {
            StreamType::Control => Uni::Control(Box::new(FrameReader::new(Role::ClientControl))),
            StreamType::QpackEncoder => Uni::Encoder(EncoderStream::new()),
            StreamType::QpackDecoder => Uni::Decoder(DecoderStream::new()),
            _ => {
                let _ = self
                    .conn
                    .recv_stream(id)
                    .stop(code(ErrorCode::STREAM_CREATION_ERROR));
                Uni::Ignored
            }
        })
    }

    /// Bytes of request stream `id`: its head, body and trailers.
    /// With `sse`, chat bodies are kept (for `max_tokens` and the prompt).
    fn request_bytes(
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
    fn request_end(&mut self, shared: &Shared, id: StreamId, at: Instant) -> Result<(), ConnError> {
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
    fn run_due(&mut self, shared: &Shared, now: Instant) {
        let max_section = self.peer_max_section;
        for r in self.requests.values_mut() {
            while r.job.as_ref().is_some_and(|job| job.due(shared) <= now) {
                let Some(job) = r.job.take() else { break };
                run_job(shared, r, job, max_section);
            }
        }
    }

    /// Writes what stream `id` owes; ends it once all is out.
    fn write(&mut self, shared: &Shared, id: StreamId) {
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

/// An HTTP/3 error code as QUIC's varint.
fn code(c: ErrorCode) -> VarInt {
    VarInt::from_u64(c.0).unwrap_or(VarInt::from_u32(0x102))
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
        assert_eq!(code(ErrorCode::NO_ERROR), VarInt::from_u32(0x100));
    }
}
