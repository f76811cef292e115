//! HTTP/2 on one connection (`serve --http2`), the server side of RFC 9113
//! built from core's pieces: [`read_frame`] and [`write_header`] for frames,
//! the HPACK [`Decoder`] for request heads, and the stateless encoder
//! ([`encode_response`], [`encode_fields`]) for response heads and
//! trailers.
//!
//! Each stream is one request. When its END_STREAM arrives (stamped with
//! the time of the read that completed it) it is admitted into the same
//! model as an HTTP/1.1 request ([`admit`], [`admit_grpc`]): FIFO service
//! across every stream of every connection, the stall, `--error-every`
//! 429s, SSE streams with `/health` and `/v1/models`. Its answer is written
//! when due: HEADERS, then DATA as far as the client's windows allow (the
//! rest waits for its WINDOW_UPDATEs), then END_STREAM, gRPC trailers or,
//! for a cut SSE stream, RST_STREAM `INTERNAL_ERROR`.
//!
//! What the server advertises: `MAX_CONCURRENT_STREAMS` (`--max-streams`;
//! a stream beyond it is refused with `REFUSED_STREAM`), a 1 MiB stream
//! window and a 16 MiB connection window, both returned with WINDOW_UPDATE
//! as DATA arrives. The response encoder never indexes, and opens its first
//! block (and the first after any `HEADER_TABLE_SIZE` change) with a table
//! size update to 0.
//!
//! Robustness: a frame or header block that breaks a connection rule ends
//! the connection with GOAWAY and the matching code; a malformed request
//! (missing or repeated pseudo-headers, uppercase or connection-specific
//! names, a wrong `content-length`) is reset with `PROTOCOL_ERROR`. Memory
//! per connection is bounded: one frame of input (16 KiB), header blocks
//! up to 64 KiB, streams up to `--max-streams`, a chat body kept up to
//! 1 MiB per stream and 16 MiB per connection (beyond: `413`), other bodies
//! counted, not kept.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::io::AsRawFd;
use std::sync::atomic::Ordering;
use std::time::Instant;

use metronome_core::h2::conn::{MAX_WINDOW, PREFACE};
use metronome_core::h2::frame::{
    flag, kind, read_frame, setting, write_header, ErrorCode, Frame, DEFAULT_MAX_FRAME_SIZE,
    HEADER_LEN, MAX_FRAME_SIZE_LIMIT,
};
use metronome_core::h2::hpack::{
    encode_fields, encode_response, encode_table_size_update, Decoder,
};

use super::admit::{admit, admit_grpc, Admitted, GrpcAnswer};
use super::connection::{linger, End};
use super::reply::{Body, ConnectionHeader, Status};
use super::request::{Method, Route};
use super::stream::{Framing, Stream, StreamStep};
use super::transport::Transport;
use super::wait::{wait, Woken};
use super::Shared;

/// `SETTINGS_INITIAL_WINDOW_SIZE` advertised: each stream's receive window.
const RECV_STREAM_WINDOW: u32 = 1 << 20;
/// The connection's receive window (raised from 65 535 at once).
const RECV_CONNECTION_WINDOW: u32 = 16 << 20;
/// The initial connection window of RFC 9113.
const DEFAULT_WINDOW: u32 = 65_535;
/// A header block (HEADERS and its CONTINUATIONs) longer than this ends
/// the connection (`ENHANCE_YOUR_CALM`).
const MAX_HEADER_BLOCK: usize = 64 * 1024;
/// A chat body kept for `max_tokens` and the prompt size; longer is `413`.
const MAX_STORED_BODY: usize = 1 << 20;
/// Chat bodies kept at once on one connection; beyond, `413`.
const MAX_STORED_BODIES: usize = 16 << 20;
/// The HPACK dynamic table the decoder keeps (the protocol's default, so
/// it is not advertised).
const TABLE: usize = 4096;
/// The message of a gRPC call answered with an injected status.
const GRPC_MESSAGE: &[u8] = b"injected by metronome serve";

/// Reads until the connection's first bytes tell HTTP/2 (the 24-byte
/// preface) from anything else. Returns the bytes read, when the last read
/// returned, and whether they open HTTP/2; `None` when the client left
/// before saying, or the server is stopping.
///
/// # Errors
/// Reading or waiting failed.
pub(super) fn sniff(
    shared: &Shared,
    transport: &mut Transport,
) -> io::Result<Option<(Vec<u8>, Instant, bool)>> {
    let wake = shared.wake.as_raw_fd();
    let mut buf = Vec::new();
    let mut scratch = [0u8; 4096];
    let mut at = Instant::now();
    loop {
        let n = buf.len().min(PREFACE.len());
        if buf[..n] != PREFACE[..n] {
            return Ok(Some((buf, at, false)));
        }
        if n == PREFACE.len() {
            return Ok(Some((buf, at, true)));
        }
        match wait(Some(transport.raw_fd()), wake, None)? {
            Woken::Stop => return Ok(None),
            Woken::Timeout => {}
            Woken::Readable => match transport.read_into(&mut buf, &mut scratch) {
                Ok(None) => return Ok(None),
                Ok(Some(0)) => {}
                Ok(Some(_)) => at = Instant::now(),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            },
        }
    }
}

/// An error that ends the connection: the GOAWAY's code and debug text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ConnError(ErrorCode, &'static str);

/// What a stream owes once its queued DATA is out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Finish {
    /// END_STREAM on the last DATA (or an empty one).
    End,
    /// Trailers with this `grpc-status`, END_STREAM.
    Trailers(u32),
    /// RST_STREAM with this code (a cut SSE stream).
    Reset(ErrorCode),
}

/// An answer not yet fully written.
#[derive(Debug)]
enum Job {
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
    fn due(&self, shared: &Shared) -> Instant {
        match self {
            Job::Reply { due, .. } | Job::Grpc { due, .. } => *due,
            Job::Stream(stream) => stream.due(&shared.config),
        }
    }
}

/// What a request head says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Head {
    method: Option<Method>,
    route: Option<Route>,
    scheme: bool,
    authority: bool,
    grpc: bool,
    content_length: Option<u64>,
    /// A regular field was seen (pseudo-headers must come first).
    regular: bool,
    /// Any pseudo-header was seen (trailers must have none).
    pseudo: bool,
    malformed: bool,
}

impl Head {
    /// One decoded field (RFC 9113 section 8.2 and 8.3).
    fn field(&mut self, name: &[u8], value: &[u8]) {
        if let Some(pseudo) = name.strip_prefix(b":") {
            self.pseudo = true;
            let seen = match pseudo {
                b"method" => self.method.replace(Method::of(value)).is_some(),
                b"path" => value.is_empty() || self.route.replace(Route::of(value)).is_some(),
                b"scheme" => std::mem::replace(&mut self.scheme, true),
                b"authority" => std::mem::replace(&mut self.authority, true),
                _ => true,
            };
            self.malformed |= seen || self.regular;
            return;
        }
        self.regular = true;
        if name.iter().any(u8::is_ascii_uppercase) {
            self.malformed = true;
            return;
        }
        match name {
            b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding"
            | b"upgrade" => self.malformed = true,
            b"te" => self.malformed |= value != b"trailers",
            b"content-type" => self.grpc = value.starts_with(b"application/grpc"),
            b"content-length" => {
                let len = std::str::from_utf8(value)
                    .ok()
                    .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|v| v.parse::<u64>().ok());
                match (len, self.content_length) {
                    (Some(n), None) => self.content_length = Some(n),
                    (Some(n), Some(m)) if n == m => {}
                    _ => self.malformed = true,
                }
            }
            _ => {}
        }
    }

    /// A request needs `:method`, `:scheme` and `:path` (no CONNECT here).
    fn complete(&self) -> bool {
        !self.malformed && self.method.is_some() && self.route.is_some() && self.scheme
    }
}

/// One stream: its request as it arrives, then its answer as it leaves.
#[derive(Debug)]
struct H2Stream {
    /// The request has not ended yet (no END_STREAM).
    receiving: bool,
    head: Head,
    /// A field was too long for the decoder's scratch (answered `431`).
    oversize: bool,
    /// Body bytes received.
    received: u64,
    /// The body, kept only for chat requests in SSE mode.
    body: Vec<u8>,
    keep_body: bool,
    /// The body was longer than what is kept (answered `413`).
    too_large: bool,
    recv_window: i64,
    /// Received bytes not yet returned with a WINDOW_UPDATE.
    window_owed: u32,
    send_window: i64,
    job: Option<Job>,
    /// DATA bytes waiting for the windows; `sent` of them are out.
    outbox: Vec<u8>,
    sent: usize,
    finish: Option<Finish>,
    /// Counts as served once finished.
    counted: bool,
}

/// The HTTP/2 side of one connection.
pub(super) struct H2Connection<'a> {
    shared: &'a Shared,
    transport: Transport,
    /// Bytes read and not yet consumed as frames.
    buf: Vec<u8>,
    fresh: bool,
    last_read: Instant,
    reading: bool,
    out: Vec<u8>,
    event: Vec<u8>,
    decoder: Box<Decoder<TABLE>>,
    preface_seen: bool,
    settings_seen: bool,
    /// The client's `SETTINGS_MAX_FRAME_SIZE`.
    peer_max_frame: u32,
    /// The client's `SETTINGS_INITIAL_WINDOW_SIZE`.
    peer_initial_window: i64,
    send_window: i64,
    recv_window: i64,
    window_owed: u32,
    /// Open the next header block with a table size update to 0.
    table_update: bool,
    /// The highest stream id the client opened.
    last_stream: u32,
    /// HEADERS without END_HEADERS: (stream, END_STREAM, block so far).
    continuation: Option<(u32, bool, Vec<u8>)>,
    streams: BTreeMap<u32, H2Stream>,
    /// Chat bodies kept, in bytes, over all streams.
    stored: usize,
    goaway_received: bool,
}

impl<'a> H2Connection<'a> {
    /// A connection whose first `bytes` (the preface, maybe more) were read
    /// at `read_at`.
    pub(super) fn new(
        shared: &'a Shared,
        transport: Transport,
        bytes: Vec<u8>,
        read_at: Instant,
    ) -> Self {
        Self {
            shared,
            transport,
            fresh: !bytes.is_empty(),
            buf: bytes,
            last_read: read_at,
            reading: true,
            out: Vec::with_capacity(16 * 1024),
            event: Vec::with_capacity(512),
            decoder: Box::default(),
            preface_seen: false,
            settings_seen: false,
            peer_max_frame: DEFAULT_MAX_FRAME_SIZE,
            peer_initial_window: i64::from(DEFAULT_WINDOW),
            send_window: i64::from(DEFAULT_WINDOW),
            recv_window: i64::from(RECV_CONNECTION_WINDOW),
            window_owed: 0,
            table_update: true,
            last_stream: 0,
            continuation: None,
            streams: BTreeMap::new(),
            stored: 0,
            goaway_received: false,
        }
    }

    /// Serves until the client leaves, an error ends the connection, or the
    /// server stops.
    pub(super) fn serve(mut self) {
        match self.serve_inner() {
            Ok(End::Graceful) => linger(self.shared, &mut self.transport),
            Ok(End::Abrupt) | Err(_) => {}
        }
        let _ = self.transport.socket().shutdown(std::net::Shutdown::Both);
    }

    fn serve_inner(&mut self) -> io::Result<End> {
        let wake = self.shared.wake.as_raw_fd();
        let mut scratch = [0u8; 16 * 1024];
        self.server_preface();
        self.flush()?;
        loop {
            if self.fresh {
                self.fresh = false;
                if let Err(ConnError(code, why)) = self.read_frames() {
                    self.goaway(code, why.as_bytes());
                    self.flush()?;
                    return Ok(End::Graceful);
                }
            }
            self.run_due(Instant::now());
            self.send_data();
            self.return_windows();
            self.flush()?;
            if self.goaway_received && self.streams.is_empty() {
                self.goaway(ErrorCode::NO_ERROR, b"");
                self.flush()?;
                return Ok(End::Graceful);
            }
            let due = self.next_due();
            if !self.reading && due.is_none() {
                return Ok(End::Graceful);
            }
            let watch = self.reading.then(|| self.transport.raw_fd());
            match wait(watch, wake, due)? {
                Woken::Stop => {
                    self.goaway(ErrorCode::NO_ERROR, b"server stopping");
                    let _ = self.flush();
                    return Ok(End::Abrupt);
                }
                Woken::Timeout => {}
                Woken::Readable => match self.transport.read_into(&mut self.buf, &mut scratch) {
                    Ok(None) => self.reading = false,
                    Ok(Some(0)) => {}
                    Ok(Some(_)) => {
                        self.last_read = Instant::now();
                        self.fresh = true;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                },
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.out.is_empty() {
            self.transport.write_all(&self.out)?;
            self.out.clear();
        }
        Ok(())
    }

    /// SETTINGS (`MAX_CONCURRENT_STREAMS`, `INITIAL_WINDOW_SIZE`) and the
    /// connection window raised.
    fn server_preface(&mut self) {
        let mut params = Vec::with_capacity(12);
        for (id, value) in [
            (
                setting::MAX_CONCURRENT_STREAMS,
                self.shared.config.max_streams,
            ),
            (setting::INITIAL_WINDOW_SIZE, RECV_STREAM_WINDOW),
        ] {
            params.extend_from_slice(&id.to_be_bytes());
            params.extend_from_slice(&value.to_be_bytes());
        }
        put_frame(&mut self.out, kind::SETTINGS, 0, 0, &params);
        window_update(&mut self.out, 0, RECV_CONNECTION_WINDOW - DEFAULT_WINDOW);
    }

    fn goaway(&mut self, code: ErrorCode, debug: &[u8]) {
        let mut payload = Vec::with_capacity(8 + debug.len());
        payload.extend_from_slice(&self.last_stream.to_be_bytes());
        payload.extend_from_slice(&code.0.to_be_bytes());
        payload.extend_from_slice(debug);
        put_frame(&mut self.out, kind::GOAWAY, 0, 0, &payload);
    }

    /// Handles every whole frame in the buffer.
    fn read_frames(&mut self) -> Result<(), ConnError> {
        let buf = std::mem::take(&mut self.buf);
        let mut pos = 0;
        let result = loop {
            let rest = &buf[pos..];
            if !self.preface_seen {
                let n = rest.len().min(PREFACE.len());
                if rest[..n] != PREFACE[..n] {
                    break Err(ConnError(
                        ErrorCode::PROTOCOL_ERROR,
                        "bad connection preface",
                    ));
                }
                if n < PREFACE.len() {
                    break Ok(());
                }
                self.preface_seen = true;
                pos += PREFACE.len();
                continue;
            }
            match read_frame(rest, DEFAULT_MAX_FRAME_SIZE) {
                Ok(None) => break Ok(()),
                Err(e) => break Err(ConnError(e.code(), "malformed frame")),
                Ok(Some((frame, n))) => {
                    pos += n;
                    if let Err(e) = self.frame(frame) {
                        break Err(e);
                    }
                }
            }
        };
        self.buf = buf;
        self.buf.drain(..pos);
        result
    }

    fn frame(&mut self, frame: Frame<'_>) -> Result<(), ConnError> {
        let protocol = |why| Err(ConnError(ErrorCode::PROTOCOL_ERROR, why));
        if let Some((stream, _, _)) = &self.continuation {
            if !matches!(frame, Frame::Continuation { stream: s, .. } if s == *stream) {
                return protocol("a frame interrupted a header block");
            }
        }
        if !self.settings_seen {
            if !matches!(frame, Frame::Settings { ack: false, .. }) {
                return protocol("the first frame was not SETTINGS");
            }
            self.settings_seen = true;
        }
        match frame {
            Frame::Data {
                stream,
                end_stream,
                data,
                ..
            } => self.data(stream, end_stream, data, frame.flow_len()),
            Frame::Headers {
                stream,
                end_stream,
                end_headers,
                block,
                ..
            } => {
                if end_headers {
                    self.header_block(stream, end_stream, block)
                } else {
                    if block.len() > MAX_HEADER_BLOCK {
                        return Err(ConnError(
                            ErrorCode::ENHANCE_YOUR_CALM,
                            "header block too large",
                        ));
                    }
                    self.continuation = Some((stream, end_stream, block.to_vec()));
                    Ok(())
                }
            }
            Frame::Continuation {
                end_headers, block, ..
            } => {
                let Some((stream, end_stream, mut whole)) = self.continuation.take() else {
                    return protocol("CONTINUATION without HEADERS");
                };
                if whole.len() + block.len() > MAX_HEADER_BLOCK {
                    return Err(ConnError(
                        ErrorCode::ENHANCE_YOUR_CALM,
                        "header block too large",
                    ));
                }
                whole.extend_from_slice(block);
                if end_headers {
                    self.header_block(stream, end_stream, &whole)
                } else {
                    self.continuation = Some((stream, end_stream, whole));
                    Ok(())
                }
            }
            Frame::Priority { stream, priority } => {
                if priority.dependency == stream {
                    self.reset(stream, ErrorCode::PROTOCOL_ERROR);
                }
                Ok(())
            }
            Frame::RstStream { stream, .. } => {
                if self.idle(stream) {
                    return protocol("RST_STREAM on an idle stream");
                }
                self.remove(stream, false);
                Ok(())
            }
            Frame::Settings { ack, params } => {
                if ack {
                    return Ok(());
                }
                for (id, value) in params.iter() {
                    self.setting(id, value)?;
                }
                put_frame(&mut self.out, kind::SETTINGS, flag::ACK, 0, &[]);
                Ok(())
            }
            Frame::PushPromise { .. } => protocol("PUSH_PROMISE from a client"),
            Frame::Ping { ack, data } => {
                if !ack {
                    put_frame(&mut self.out, kind::PING, flag::ACK, 0, &data);
                }
                Ok(())
            }
            Frame::GoAway { .. } => {
                self.goaway_received = true;
                Ok(())
            }
            Frame::WindowUpdate { stream, increment } => self.window_update(stream, increment),
            Frame::Unknown { .. } => Ok(()),
        }
    }

    /// A stream the client has not opened yet.
    fn idle(&self, stream: u32) -> bool {
        stream > self.last_stream
    }

    fn setting(&mut self, id: u16, value: u32) -> Result<(), ConnError> {
        match id {
            setting::HEADER_TABLE_SIZE => self.table_update = true,
            setting::ENABLE_PUSH if value > 1 => {
                return Err(ConnError(ErrorCode::PROTOCOL_ERROR, "ENABLE_PUSH above 1"))
            }
            setting::INITIAL_WINDOW_SIZE => {
                if value > MAX_WINDOW {
                    return Err(ConnError(
                        ErrorCode::FLOW_CONTROL_ERROR,
                        "INITIAL_WINDOW_SIZE above 2^31-1",
                    ));
                }
                let delta = i64::from(value) - self.peer_initial_window;
                self.peer_initial_window = i64::from(value);
                for s in self.streams.values_mut() {
                    s.send_window += delta;
                    if s.send_window > i64::from(MAX_WINDOW) {
                        return Err(ConnError(
                            ErrorCode::FLOW_CONTROL_ERROR,
                            "a stream window above 2^31-1",
                        ));
                    }
                }
            }
            setting::MAX_FRAME_SIZE => {
                if !(DEFAULT_MAX_FRAME_SIZE..=MAX_FRAME_SIZE_LIMIT).contains(&value) {
                    return Err(ConnError(
                        ErrorCode::PROTOCOL_ERROR,
                        "MAX_FRAME_SIZE out of range",
                    ));
                }
                self.peer_max_frame = value;
            }
            _ => {}
        }
        Ok(())
    }

    fn window_update(&mut self, stream: u32, increment: u32) -> Result<(), ConnError> {
        if stream == 0 {
            if increment == 0 {
                return Err(ConnError(
                    ErrorCode::PROTOCOL_ERROR,
                    "WINDOW_UPDATE of 0 on the connection",
                ));
            }
            self.send_window += i64::from(increment);
            if self.send_window > i64::from(MAX_WINDOW) {
                return Err(ConnError(
                    ErrorCode::FLOW_CONTROL_ERROR,
                    "connection window above 2^31-1",
                ));
            }
            return Ok(());
        }
        if self.idle(stream) {
            return Err(ConnError(
                ErrorCode::PROTOCOL_ERROR,
                "WINDOW_UPDATE on an idle stream",
            ));
        }
        let Some(s) = self.streams.get_mut(&stream) else {
            return Ok(()); // closed: ignored
        };
        if increment == 0 {
            self.reset(stream, ErrorCode::PROTOCOL_ERROR);
            return Ok(());
        }
        s.send_window += i64::from(increment);
        if s.send_window > i64::from(MAX_WINDOW) {
            self.reset(stream, ErrorCode::FLOW_CONTROL_ERROR);
        }
        Ok(())
    }

    fn data(
        &mut self,
        stream: u32,
        end_stream: bool,
        data: &[u8],
        flow: usize,
    ) -> Result<(), ConnError> {
        // `flow` is at most a frame (16 KiB): it fits every integer type.
        let flow32 = u32::try_from(flow).unwrap_or(u32::MAX);
        self.recv_window -= i64::from(flow32);
        if self.recv_window < 0 {
            return Err(ConnError(
                ErrorCode::FLOW_CONTROL_ERROR,
                "DATA beyond the connection window",
            ));
        }
        self.window_owed += flow32;
        if self.idle(stream) {
            return Err(ConnError(
                ErrorCode::PROTOCOL_ERROR,
                "DATA on an idle stream",
            ));
        }
        let Some(s) = self.streams.get_mut(&stream) else {
            return Ok(()); // closed (reset or answered): ignored
        };
        if !s.receiving {
            self.reset(stream, ErrorCode::STREAM_CLOSED);
            return Ok(());
        }
        s.recv_window -= i64::from(flow32);
        if s.recv_window < 0 {
            self.reset(stream, ErrorCode::FLOW_CONTROL_ERROR);
            return Ok(());
        }
        s.window_owed += flow32;
        s.received += data.len() as u64;
        if s.keep_body && !s.too_large {
            if s.body.len() + data.len() > MAX_STORED_BODY
                || self.stored + data.len() > MAX_STORED_BODIES
            {
                s.too_large = true;
                self.stored -= s.body.len();
                s.body = Vec::new();
            } else {
                s.body.extend_from_slice(data);
                self.stored += data.len();
            }
        }
        if end_stream {
            self.complete(stream);
        }
        Ok(())
    }

    /// A whole header block: a request head, or trailers.
    fn header_block(
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
            } else if !end_stream || head.pseudo || head.malformed {
                self.reset(stream, ErrorCode::PROTOCOL_ERROR);
            } else {
                self.complete(stream);
            }
            return Ok(());
        }
        if !self.idle(stream) {
            if head.pseudo {
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

    /// The request on `stream` ended at `self.last_read`: admit it.
    fn complete(&mut self, stream: u32) {
        let shared = self.shared;
        let arrival = self.last_read;
        let Some(s) = self.streams.get_mut(&stream) else {
            return;
        };
        s.receiving = false;
        if s.head.content_length.is_some_and(|n| n != s.received) {
            self.reset(stream, ErrorCode::PROTOCOL_ERROR);
            return;
        }
        let method = s.head.method.unwrap_or(Method::Other);
        let route = s.head.route.unwrap_or(Route::Other);
        let reject = |status| Job::Reply {
            due: arrival,
            status,
            body: Body::Text(status.line()),
            head_only: false,
            counted: false,
        };
        let job = if s.oversize {
            reject(Status::HeadersTooLarge)
        } else if s.too_large {
            reject(Status::PayloadTooLarge)
        } else if s.head.grpc {
            let (due, answer) = admit_grpc(shared, arrival);
            Job::Grpc { due, answer }
        } else {
            match admit(shared, arrival, method, route, &s.body) {
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
        };
        self.stored -= s.body.len();
        s.body = Vec::new();
        s.job = Some(job);
    }

    /// Sends RST_STREAM and forgets the stream (not served).
    fn reset(&mut self, stream: u32, code: ErrorCode) {
        put_frame(
            &mut self.out,
            kind::RST_STREAM,
            0,
            stream,
            &code.0.to_be_bytes(),
        );
        self.remove(stream, false);
    }

    /// Forgets a stream; counts it as served when it finished properly.
    fn remove(&mut self, stream: u32, finished: bool) {
        if let Some(s) = self.streams.remove(&stream) {
            self.stored -= s.body.len();
            if finished && s.counted {
                self.shared.served.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    fn next_due(&self) -> Option<Instant> {
        self.streams
            .values()
            .filter_map(|s| s.job.as_ref())
            .map(|job| job.due(self.shared))
            .min()
    }

    /// Runs every job due at `now`, earliest first.
    fn run_due(&mut self, now: Instant) {
        loop {
            let next = self
                .streams
                .iter()
                .filter_map(|(&id, s)| Some((s.job.as_ref()?.due(self.shared), id)))
                .filter(|&(due, _)| due <= now)
                .min();
            let Some((_, id)) = next else {
                return;
            };
            self.run_job(id);
        }
    }

    /// Writes what the job of `stream` owes now: HEADERS at once, DATA into
    /// the outbox, the end as its `finish`.
    fn run_job(&mut self, stream: u32) {
        let shared = self.shared;
        let Some(job) = self.streams.get_mut(&stream).and_then(|s| s.job.take()) else {
            return;
        };
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
                let fields: [(&[u8], &[u8]); 2] = [
                    (b"content-type", content_type.as_bytes()),
                    (b"content-length", length.as_bytes()),
                ];
                let end = head_only || bytes.is_empty();
                self.headers(stream, status.code(), &fields, end, counted);
                if !end {
                    self.queue(stream, bytes, Finish::End, counted);
                }
            }
            Job::Grpc {
                answer: GrpcAnswer::Status(0),
                ..
            } => {
                let fields: [(&[u8], &[u8]); 1] = [(b"content-type", b"application/grpc")];
                self.headers(stream, 200, &fields, false, true);
                // One empty message: not compressed, length 0.
                self.queue(stream, &[0; 5], Finish::Trailers(0), true);
            }
            Job::Grpc {
                answer: GrpcAnswer::Status(code),
                ..
            } => {
                let code = code.to_string();
                let fields: [(&[u8], &[u8]); 3] = [
                    (b"content-type", b"application/grpc"),
                    (b"grpc-status", code.as_bytes()),
                    (b"grpc-message", GRPC_MESSAGE),
                ];
                self.headers(stream, 200, &fields, true, true);
            }
            Job::Grpc {
                answer: GrpcAnswer::TooManyRequests,
                ..
            } => {
                let body = b"too many requests\n";
                let length = body.len().to_string();
                let fields: [(&[u8], &[u8]); 2] = [
                    (b"content-type", b"text/plain"),
                    (b"content-length", length.as_bytes()),
                ];
                self.headers(stream, 429, &fields, false, true);
                self.queue(stream, body, Finish::End, true);
            }
            Job::Stream(mut sse) => {
                if sse.step == 0 {
                    let fields: [(&[u8], &[u8]); 2] = [
                        (b"content-type", b"text/event-stream"),
                        (b"cache-control", b"no-cache"),
                    ];
                    self.headers(stream, 200, &fields, false, false);
                }
                let mut bytes = Vec::new();
                let step = sse.step(&mut bytes, &mut self.event);
                let Some(s) = self.streams.get_mut(&stream) else {
                    return;
                };
                s.outbox.extend_from_slice(&bytes);
                match step {
                    StreamStep::More => s.job = Some(Job::Stream(sse)),
                    StreamStep::Done => {
                        s.finish = Some(Finish::End);
                        s.counted = true;
                    }
                    StreamStep::Cut => s.finish = Some(Finish::Reset(ErrorCode::INTERNAL_ERROR)),
                }
            }
        }
    }

    /// Queues `bytes` as the last DATA of `stream`, then `finish`.
    fn queue(&mut self, stream: u32, bytes: &[u8], finish: Finish, counted: bool) {
        if let Some(s) = self.streams.get_mut(&stream) {
            s.outbox.extend_from_slice(bytes);
            s.finish = Some(finish);
            s.counted = counted;
        }
    }

    /// Writes a response HEADERS; with `end`, the stream is finished.
    fn headers(
        &mut self,
        stream: u32,
        status: u16,
        fields: &[(&[u8], &[u8])],
        end: bool,
        counted: bool,
    ) {
        let Some(block) = self.block(Some(status), fields) else {
            self.reset(stream, ErrorCode::INTERNAL_ERROR);
            return;
        };
        let flags = flag::END_HEADERS | if end { flag::END_STREAM } else { 0 };
        put_frame(&mut self.out, kind::HEADERS, flags, stream, &block);
        if end {
            if let Some(s) = self.streams.get_mut(&stream) {
                s.counted = counted;
            }
            self.remove(stream, true);
        }
    }

    /// A header block: the table size update when owed, `:status` when
    /// given, then `fields`. `None` only if encoding failed.
    fn block(&mut self, status: Option<u16>, fields: &[(&[u8], &[u8])]) -> Option<Vec<u8>> {
        let room = 16
            + fields
                .iter()
                .map(|(n, v)| n.len() + v.len() + 10)
                .sum::<usize>();
        let mut block = vec![0u8; room];
        let mut n = 0;
        if self.table_update {
            n += encode_table_size_update(0, &mut block)?;
        }
        n += match status {
            Some(status) => encode_response(status, fields, true, &mut block[n..])?,
            None => encode_fields(fields, true, &mut block[n..])?,
        };
        self.table_update = false;
        block.truncate(n);
        Some(block)
    }

    /// Sends queued DATA as far as the windows and the client's frame size
    /// allow; then each stream's end once its DATA is out.
    fn send_data(&mut self) {
        let max_frame = self.peer_max_frame as usize;
        let mut done = Vec::new();
        let mut ends = Vec::new();
        for (&id, s) in &mut self.streams {
            while s.sent < s.outbox.len() {
                let left = s.outbox.len() - s.sent;
                let window = s.send_window.min(self.send_window).max(0);
                let n = left
                    .min(max_frame)
                    .min(usize::try_from(window).unwrap_or(0));
                if n == 0 {
                    break;
                }
                let last = n == left && s.job.is_none() && s.finish == Some(Finish::End);
                let flags = if last { flag::END_STREAM } else { 0 };
                put_frame(
                    &mut self.out,
                    kind::DATA,
                    flags,
                    id,
                    &s.outbox[s.sent..s.sent + n],
                );
                s.sent += n;
                s.send_window -= n as i64;
                self.send_window -= n as i64;
                if last {
                    s.finish = None;
                    done.push(id);
                }
            }
            if s.sent < s.outbox.len() {
                continue;
            }
            s.outbox.clear();
            s.sent = 0;
            if s.job.is_some() {
                continue;
            }
            if let Some(finish) = s.finish.take() {
                ends.push((id, finish));
            }
        }
        for (id, finish) in ends {
            match finish {
                Finish::End => {
                    put_frame(&mut self.out, kind::DATA, flag::END_STREAM, id, &[]);
                    done.push(id);
                }
                Finish::Trailers(code) => {
                    let code = code.to_string();
                    let fields: [(&[u8], &[u8]); 1] = [(b"grpc-status", code.as_bytes())];
                    match self.block(None, &fields) {
                        Some(block) => {
                            let flags = flag::END_HEADERS | flag::END_STREAM;
                            put_frame(&mut self.out, kind::HEADERS, flags, id, &block);
                            done.push(id);
                        }
                        None => self.reset(id, ErrorCode::INTERNAL_ERROR),
                    }
                }
                Finish::Reset(code) => self.reset(id, code),
            }
        }
        for id in done {
            self.remove(id, true);
        }
    }

    /// Returns received DATA to the client's windows.
    fn return_windows(&mut self) {
        if self.window_owed > 0 {
            window_update(&mut self.out, 0, self.window_owed);
            self.recv_window += i64::from(self.window_owed);
            self.window_owed = 0;
        }
        for (&id, s) in &mut self.streams {
            if s.receiving && s.window_owed > 0 {
                window_update(&mut self.out, id, s.window_owed);
                s.recv_window += i64::from(s.window_owed);
                s.window_owed = 0;
            }
        }
    }
}

/// Appends a frame (core's header writer, then the payload).
fn put_frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let mut head = [0u8; HEADER_LEN];
    // Payloads here are at most the client's max frame size (< 2^24).
    if write_header(&mut head, payload.len(), kind, flags, stream).is_some() {
        out.extend_from_slice(&head);
        out.extend_from_slice(payload);
    }
}

fn window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_frame(
        out,
        kind::WINDOW_UPDATE,
        0,
        stream,
        &increment.to_be_bytes(),
    );
}
