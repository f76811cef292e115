//! One HTTP/3 connection's events (its [`H3Conn`] is the parent's): the
//! server's control stream, the client's unidirectional streams (control,
//! QPACK) read and checked, and the connection's errors; each request
//! stream is [`request`](super::request)'s.

use std::collections::HashMap;
use std::time::Instant;

use bytes::Bytes;
use quinn_proto::{Connection, Dir, Event, ReadError, StreamEvent, StreamId, VarInt};

use metronome_core::h3::frame::{encode_control_stream_start, encode_goaway, setting};
use metronome_core::h3::qpack::{DecoderStream, EncoderStream};
use metronome_core::h3::varint;
use metronome_core::h3::{ErrorCode, Frame, FrameReader, H3Error, PeerStreams, Role, StreamType};

use super::request::Request;
use super::{code, ConnError, H3Conn, SECTION};
use crate::serve::Shared;

/// The client's control stream frames read whole (SETTINGS) at most.
const CONTROL: usize = 4096;
/// A unidirectional stream the client opened.
pub(super) enum Uni {
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

impl H3Conn {
    /// A connection just accepted.
    pub(super) fn new(conn: Connection) -> Self {
        Self {
            conn,
            control: None,
            control_owed: Vec::new(),
            peer: PeerStreams::new(),
            uni: HashMap::new(),
            requests: HashMap::new(),
            decoder: Box::default(),
            peer_max_section: None,
            stored: 0,
            unaccepted: 0,
            closed: false,
        }
    }

    /// The server is stopping: a GOAWAY on our control stream (RFC 9114
    /// section 5.2) with the first request stream ID it did not accept
    /// (the last accepted + 4; 0 before any), so the client knows which
    /// requests were processed. Written after the control stream's
    /// opening; the caller sends it before the CONNECTION_CLOSE
    /// ([`close_quietly`](Self::close_quietly)). Nothing when the control
    /// stream could not open or the connection is closed.
    pub(super) fn go_away(&mut self) {
        self.open_control();
        if self.closed || self.control.is_none() {
            return;
        }
        let mut frame = [0u8; 16];
        let n = encode_goaway(self.unaccepted, &mut frame).unwrap_or(0);
        self.control_owed.extend_from_slice(&frame[..n]);
        self.open_control();
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
                            self.unaccepted =
                                self.unaccepted.max(VarInt::from(id).into_inner() + 4);
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
        let id = match self.control {
            Some(id) => id,
            None => {
                let Some(id) = self.conn.streams().open(Dir::Uni) else {
                    return;
                };
                self.control = Some(id);
                let mut start = [0u8; 32];
                let n = encode_control_stream_start(SECTION as u64, &mut start).unwrap_or(0);
                self.control_owed.extend_from_slice(&start[..n]);
                id
            }
        };
        if !self.control_owed.is_empty() {
            if let Ok(n) = self.conn.send_stream(id).write(&self.control_owed) {
                self.control_owed.drain(..n);
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
}
