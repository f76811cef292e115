//! HTTP/3 frames (RFC 9114 section 7) over QUIC varints, and the types of
//! unidirectional streams (section 6.2).
//!
//! A frame is a varint type, a varint length and the payload. A
//! [`FrameReader`] reads the frames of one stream as its bytes arrive, in
//! reads of any size: a type or length split across reads is kept in a
//! [`varint::Reader`]; a DATA payload is handed out as slices of the input
//! as it arrives (never copied); the frames a client must read whole
//! (HEADERS, SETTINGS, GOAWAY) are gathered in the reader's fixed `N`-byte
//! buffer, so a HEADERS frame may be at most `N` bytes (advertise `N` as
//! SETTINGS_MAX_FIELD_SECTION_SIZE: an encoded field section is never
//! longer than its size as RFC 9114 section 4.2.2 counts it); frames of
//! unknown and reserved types are skipped without being kept (sections
//! 7.2.8 and 9). What a server may not send to a client that never allows a
//! push is refused with the RFC's code ([`H3Error::code`]).
//!
//! The writers put out what the client sends: its SETTINGS (a dynamic
//! table capacity of 0, no blocked streams, a maximum field section size),
//! HEADERS, a DATA frame's header (the body follows from the caller's own
//! buffer) and GOAWAY.

use super::error::H3Error;
use super::varint::{self, Reader};

/// Frame types (RFC 9114 section 11.2.1).
pub mod kind {
    /// DATA
    pub const DATA: u64 = 0x00;
    /// HEADERS
    pub const HEADERS: u64 = 0x01;
    /// CANCEL_PUSH
    pub const CANCEL_PUSH: u64 = 0x03;
    /// SETTINGS
    pub const SETTINGS: u64 = 0x04;
    /// PUSH_PROMISE
    pub const PUSH_PROMISE: u64 = 0x05;
    /// GOAWAY
    pub const GOAWAY: u64 = 0x07;
    /// MAX_PUSH_ID
    pub const MAX_PUSH_ID: u64 = 0x0d;
}

/// SETTINGS identifiers (RFC 9114 section 11.2.2, RFC 9204 section 8.2).
pub mod setting {
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY (default 0).
    pub const QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
    /// SETTINGS_MAX_FIELD_SECTION_SIZE (default unlimited).
    pub const MAX_FIELD_SECTION_SIZE: u64 = 0x06;
    /// SETTINGS_QPACK_BLOCKED_STREAMS (default 0).
    pub const QPACK_BLOCKED_STREAMS: u64 = 0x07;
}

/// True for the reserved frame types, stream types, settings and error
/// codes `0x1f * N + 0x21` (greasing: RFC 9114 sections 6.2.3, 7.2.8, 7.2.4.1).
///
/// ```
/// use metronome_core::h3::frame::is_reserved;
/// assert!(is_reserved(0x21) && is_reserved(0x40) && is_reserved(0x1f * 1000 + 0x21));
/// assert!(!is_reserved(0x20) && !is_reserved(0x22));
/// ```
pub const fn is_reserved(value: u64) -> bool {
    value >= 0x21 && (value - 0x21) % 0x1f == 0
}

/// HTTP/2's frame types with no HTTP/3 counterpart (PRIORITY, PING,
/// WINDOW_UPDATE, CONTINUATION): their receipt is H3_FRAME_UNEXPECTED.
const fn is_http2_only(ty: u64) -> bool {
    matches!(ty, 0x02 | 0x06 | 0x08 | 0x09)
}

/// The parameters of a SETTINGS frame, checked when made: whole varint
/// pairs, no identifier twice, none of HTTP/2's reserved 0x02 to 0x05.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings<'a>(&'a [u8]);

impl<'a> Settings<'a> {
    /// Checks a SETTINGS payload.
    ///
    /// # Errors
    /// [`H3Error::Frame`] when it ends inside a pair, [`H3Error::Settings`]
    /// for an identifier twice or one reserved since HTTP/2.
    ///
    /// ```
    /// use metronome_core::h3::{H3Error, Settings};
    /// let s = Settings::parse(&[0x06, 0x44, 0x00, 0x21, 0x05]).unwrap();
    /// assert_eq!(s.get(0x06), Some(1024));
    /// assert_eq!(s.iter().count(), 2);
    /// assert_eq!(Settings::parse(&[0x06, 0x01, 0x06, 0x02]), Err(H3Error::Settings));
    /// assert_eq!(Settings::parse(&[0x04, 0x00]), Err(H3Error::Settings));
    /// assert_eq!(Settings::parse(&[0x06]), Err(H3Error::Frame { ty: 0x04 }));
    /// ```
    pub fn parse(payload: &'a [u8]) -> Result<Self, H3Error> {
        let mut pos = 0;
        while pos < payload.len() {
            let (id, n) =
                varint::decode(&payload[pos..]).ok_or(H3Error::Frame { ty: kind::SETTINGS })?;
            let (_, m) =
                varint::decode(&payload[pos + n..]).ok_or(H3Error::Frame { ty: kind::SETTINGS })?;
            if matches!(id, 0x02..=0x05) || Self(&payload[..pos]).get(id).is_some() {
                return Err(H3Error::Settings);
            }
            pos += n + m;
        }
        Ok(Self(payload))
    }

    /// The raw payload.
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.0
    }

    /// The `(identifier, value)` pairs, in order (unknown and reserved
    /// identifiers included: the caller ignores them).
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + 'a {
        let mut rest = self.0;
        core::iter::from_fn(move || {
            let (id, n) = varint::decode(rest)?;
            let (value, m) = varint::decode(&rest[n..])?;
            rest = &rest[n + m..];
            Some((id, value))
        })
    }

    /// The value of identifier `id`, if present.
    pub fn get(&self, id: u64) -> Option<u64> {
        self.iter().find(|&(i, _)| i == id).map(|(_, v)| v)
    }
}

/// One frame a client reads, its payload borrowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A piece of a DATA frame's payload as it arrived (a frame may come
    /// in several pieces; an empty DATA frame in none).
    Data(&'a [u8]),
    /// A HEADERS frame's encoded field section, whole (decode it with
    /// [`qpack::Decoder`](super::qpack::Decoder)).
    Headers(&'a [u8]),
    /// SETTINGS.
    Settings(Settings<'a>),
    /// GOAWAY: from a server, the first request stream ID it may not have
    /// processed.
    GoAway(u64),
    /// MAX_PUSH_ID (only clients send it).
    MaxPushId(u64),
    /// CANCEL_PUSH.
    CancelPush(u64),
    /// PUSH_PROMISE: a push ID and an encoded field section.
    PushPromise {
        /// The push ID.
        push_id: u64,
        /// The encoded field section of the promised request.
        block: &'a [u8],
    },
}

/// The payload of a frame of type `ty` that is exactly one varint.
fn single_varint(ty: u64, payload: &[u8]) -> Result<u64, H3Error> {
    match varint::decode(payload) {
        Some((v, n)) if n == payload.len() => Ok(v),
        _ => Err(H3Error::Frame { ty }),
    }
}

/// Decodes the whole payload of a frame of type `ty`, whoever sent it and
/// on whichever stream (those rules are [`FrameReader`]'s); `Ok(None)` for
/// the types a receiver ignores (unknown, reserved). DATA's payload comes
/// back whole as [`Frame::Data`].
///
/// # Errors
/// [`H3Error::Frame`] when the payload does not hold exactly the frame's
/// fields, [`H3Error::Settings`] as [`Settings::parse`],
/// [`H3Error::Unexpected`] for HTTP/2's reserved types.
///
/// ```
/// use metronome_core::h3::frame::{decode_payload, kind};
/// use metronome_core::h3::{Frame, H3Error};
/// assert_eq!(decode_payload(kind::GOAWAY, &[0x40, 0x08]), Ok(Some(Frame::GoAway(8))));
/// assert_eq!(decode_payload(kind::GOAWAY, &[0x08, 0x00]), Err(H3Error::Frame { ty: kind::GOAWAY }));
/// assert_eq!(decode_payload(0x21, b"grease"), Ok(None));
/// ```
pub fn decode_payload(ty: u64, payload: &[u8]) -> Result<Option<Frame<'_>>, H3Error> {
    Ok(Some(match ty {
        kind::DATA => Frame::Data(payload),
        kind::HEADERS => Frame::Headers(payload),
        kind::SETTINGS => Frame::Settings(Settings::parse(payload)?),
        kind::GOAWAY => Frame::GoAway(single_varint(ty, payload)?),
        kind::MAX_PUSH_ID => Frame::MaxPushId(single_varint(ty, payload)?),
        kind::CANCEL_PUSH => Frame::CancelPush(single_varint(ty, payload)?),
        kind::PUSH_PROMISE => {
            let (push_id, n) = varint::decode(payload).ok_or(H3Error::Frame { ty })?;
            Frame::PushPromise {
                push_id,
                block: &payload[n..],
            }
        }
        t if is_http2_only(t) => return Err(H3Error::Unexpected { ty }),
        _ => return Ok(None),
    }))
}

/// Which stream a [`FrameReader`] reads: the frames allowed differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A request stream (bidirectional, opened by the client): the
    /// server's response, HEADERS then DATA (then trailing HEADERS).
    Request,
    /// The server's control stream (its stream type already read): SETTINGS
    /// first, then GOAWAY and frames to ignore.
    Control,
    /// A request stream read by a server: the client's request, HEADERS,
    /// DATA, then optional trailing HEADERS (RFC 9114 section 4.1).
    ClientRequest,
    /// The client's control stream read by a server (its stream type
    /// already read): SETTINGS first, then GOAWAY, MAX_PUSH_ID,
    /// CANCEL_PUSH and frames to ignore.
    ClientControl,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Reading a frame type.
    Type,
    /// Reading a frame length.
    Length,
    /// In a DATA payload: handed out as it comes.
    Data,
    /// In a payload gathered whole in the buffer.
    Buffer,
    /// In the payload of a frame to ignore.
    Skip,
}

/// The incremental frame reader of one stream a server writes to a
/// client, with a fixed `N`-byte buffer for the frames read whole.
///
/// Feed it each read with [`FrameReader::read`] until the read is used up,
/// and call [`FrameReader::finish`] when the stream ends.
///
/// On a request stream it refuses DATA before the first HEADERS
/// (H3_FRAME_UNEXPECTED), PUSH_PROMISE (H3_ID_ERROR: the client never sends
/// MAX_PUSH_ID, so no push ID is allowed), the control stream's frames and
/// HTTP/2's reserved types (H3_FRAME_UNEXPECTED). Whether a HEADERS after
/// DATA is trailers, and what may follow them, depends on the status
/// codes in the field sections: the caller's rule. On the control stream
/// it refuses any first frame but SETTINGS (H3_MISSING_SETTINGS), a second
/// SETTINGS, DATA, HEADERS, PUSH_PROMISE, MAX_PUSH_ID (only clients send
/// it) and HTTP/2's types (H3_FRAME_UNEXPECTED), CANCEL_PUSH (no push ID is
/// allowed: H3_ID_ERROR), and a GOAWAY whose stream ID is not a
/// client-initiated bidirectional one or exceeds an earlier GOAWAY's
/// (H3_ID_ERROR).
///
/// A server reads the client's streams with the `Client*` roles. On a
/// request stream ([`Role::ClientRequest`]): DATA before HEADERS, DATA or
/// HEADERS after the trailers, PUSH_PROMISE (clients never send it), the
/// control stream's frames and HTTP/2's types are H3_FRAME_UNEXPECTED. On
/// the client's control stream ([`Role::ClientControl`]), as on the
/// server's, except that GOAWAY carries a push ID (any value, never
/// raised), MAX_PUSH_ID is allowed but may not lower the maximum, and
/// CANCEL_PUSH must name a push ID within it (else H3_ID_ERROR).
///
/// # Example
/// ```
/// use metronome_core::h3::{Frame, FrameReader, Role};
/// // HEADERS (":status: 200", 3 bytes), then DATA "hello" in two reads.
/// let wire = [0x01, 0x03, 0x00, 0x00, 0xd9, 0x00, 0x05, b'h', b'e', b'l', b'l', b'o'];
/// let mut r = FrameReader::<64>::new(Role::Request);
/// let (n, f) = r.read(&wire[..9]).unwrap();
/// assert_eq!((n, f), (5, Some(Frame::Headers(&[0x00, 0x00, 0xd9]))));
/// let (m, f) = r.read(&wire[n..9]).unwrap();
/// assert_eq!((m, f), (4, Some(Frame::Data(b"he"))));
/// assert_eq!(r.read(&wire[9..]).unwrap(), (3, Some(Frame::Data(b"llo"))));
/// assert_eq!(r.finish(), Ok(()));
/// ```
#[derive(Clone, Debug)]
pub struct FrameReader<const N: usize> {
    role: Role,
    state: State,
    varint: Reader,
    ty: u64,
    left: u64,
    filled: usize,
    frames: u64,
    headers_seen: bool,
    trailers_seen: bool,
    goaway: Option<u64>,
    /// The client's last MAX_PUSH_ID ([`Role::ClientControl`]).
    max_push_id: Option<u64>,
    skipped: u64,
    buf: [u8; N],
}

impl<const N: usize> FrameReader<N> {
    /// A reader at the start of a stream.
    pub const fn new(role: Role) -> Self {
        Self {
            role,
            state: State::Type,
            varint: Reader::new(),
            ty: 0,
            left: 0,
            filled: 0,
            frames: 0,
            headers_seen: false,
            trailers_seen: false,
            goaway: None,
            max_push_id: None,
            skipped: 0,
            buf: [0; N],
        }
    }

    /// The stream this reader reads.
    pub const fn role(&self) -> Role {
        self.role
    }

    /// Frames whose type and length have been read.
    pub const fn frames(&self) -> u64 {
        self.frames
    }

    /// Frames of unknown or reserved types skipped.
    pub const fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The last GOAWAY's stream ID (control stream).
    pub const fn goaway(&self) -> Option<u64> {
        self.goaway
    }

    /// True between frames (nothing of a frame read yet).
    pub const fn at_boundary(&self) -> bool {
        matches!(self.state, State::Type) && !self.varint.is_partial()
    }

    /// Reads from the front of `input`: returns how many bytes were taken
    /// and the frame (or piece of DATA) completed, if any. Call again with
    /// the rest of the input until all is taken; `(input.len(), None)`
    /// means everything was kept for a frame still incomplete. An empty
    /// `input` takes nothing.
    ///
    /// # Errors
    /// A frame not allowed on this stream or malformed (see the type's
    /// docs), or a frame to read whole longer than `N` bytes
    /// ([`H3Error::TooLarge`], H3_EXCESSIVE_LOAD). After an error the
    /// stream (for the codes that close the connection, the connection)
    /// is done.
    pub fn read<'a>(&'a mut self, input: &'a [u8]) -> Result<(usize, Option<Frame<'a>>), H3Error> {
        let mut pos = 0;
        loop {
            let rest = &input[pos..];
            if rest.is_empty() && !(self.state == State::Buffer && self.left == 0) {
                return Ok((pos, None));
            }
            match self.state {
                State::Type | State::Length => {
                    let (n, v) = self.varint.feed(rest);
                    pos += n;
                    if let Some(v) = v {
                        if self.state == State::Type {
                            self.ty = v;
                            self.state = State::Length;
                        } else {
                            self.start(v)?;
                        }
                    }
                }
                State::Data => {
                    let k = rest
                        .len()
                        .min(usize::try_from(self.left).unwrap_or(usize::MAX));
                    self.left -= k as u64;
                    if self.left == 0 {
                        self.state = State::Type;
                    }
                    return Ok((pos + k, Some(Frame::Data(&rest[..k]))));
                }
                State::Buffer | State::Skip => {
                    let k = rest
                        .len()
                        .min(usize::try_from(self.left).unwrap_or(usize::MAX));
                    if self.state == State::Buffer {
                        self.buf[self.filled..self.filled + k].copy_from_slice(&rest[..k]);
                        self.filled += k;
                    }
                    self.left -= k as u64;
                    pos += k;
                    if self.left == 0 {
                        let buffered = self.state == State::Buffer;
                        self.state = State::Type;
                        if buffered {
                            let frame = self.complete()?;
                            return Ok((pos, Some(frame)));
                        }
                    }
                }
            }
        }
    }

    /// A frame's type and length are in: decides what to do with it.
    fn start(&mut self, len: u64) -> Result<(), H3Error> {
        let ty = self.ty;
        let first = self.frames == 0;
        self.frames += 1;
        self.left = len;
        self.filled = 0;
        let next = match self.role {
            Role::Request => match ty {
                kind::DATA if !self.headers_seen => return Err(H3Error::Unexpected { ty }),
                kind::DATA => State::Data,
                kind::HEADERS => {
                    self.headers_seen = true;
                    State::Buffer
                }
                kind::PUSH_PROMISE => return Err(H3Error::Id),
                kind::SETTINGS | kind::GOAWAY | kind::MAX_PUSH_ID | kind::CANCEL_PUSH => {
                    return Err(H3Error::Unexpected { ty })
                }
                t if is_http2_only(t) => return Err(H3Error::Unexpected { ty }),
                _ => State::Skip,
            },
            Role::ClientRequest => match ty {
                // After the trailers nothing but frames to ignore.
                kind::DATA | kind::HEADERS if self.trailers_seen => {
                    return Err(H3Error::Unexpected { ty })
                }
                kind::DATA if !self.headers_seen => return Err(H3Error::Unexpected { ty }),
                kind::DATA => State::Data,
                kind::HEADERS => {
                    self.trailers_seen = self.headers_seen;
                    self.headers_seen = true;
                    State::Buffer
                }
                kind::PUSH_PROMISE
                | kind::SETTINGS
                | kind::GOAWAY
                | kind::MAX_PUSH_ID
                | kind::CANCEL_PUSH => return Err(H3Error::Unexpected { ty }),
                t if is_http2_only(t) => return Err(H3Error::Unexpected { ty }),
                _ => State::Skip,
            },
            Role::Control | Role::ClientControl => match ty {
                kind::SETTINGS if first => State::Buffer,
                _ if first => return Err(H3Error::MissingSettings),
                kind::GOAWAY | kind::MAX_PUSH_ID | kind::CANCEL_PUSH if len > 8 => {
                    return Err(H3Error::Frame { ty })
                }
                kind::GOAWAY | kind::MAX_PUSH_ID | kind::CANCEL_PUSH => State::Buffer,
                kind::SETTINGS | kind::DATA | kind::HEADERS | kind::PUSH_PROMISE => {
                    return Err(H3Error::Unexpected { ty })
                }
                t if is_http2_only(t) => return Err(H3Error::Unexpected { ty }),
                _ => State::Skip,
            },
        };
        if next == State::Buffer && len > N as u64 {
            return Err(H3Error::TooLarge { ty, len });
        }
        if next == State::Skip {
            self.skipped += 1;
        }
        // An empty DATA or skipped frame is done; an empty frame to buffer
        // completes on the next turn of `read`'s loop.
        self.state = if len == 0 && next != State::Buffer {
            State::Type
        } else {
            next
        };
        Ok(())
    }

    /// A buffered frame is whole: checks and returns it.
    fn complete(&mut self) -> Result<Frame<'_>, H3Error> {
        let ty = self.ty;
        let payload = &self.buf[..self.filled];
        let client = self.role == Role::ClientControl;
        match ty {
            kind::GOAWAY if client => {
                // A client's GOAWAY carries a push ID; it may only lower it.
                let id = single_varint(ty, payload)?;
                if self.goaway.is_some_and(|prev| id > prev) {
                    return Err(H3Error::Id);
                }
                self.goaway = Some(id);
                Ok(Frame::GoAway(id))
            }
            kind::MAX_PUSH_ID if client => {
                // It may not lower the maximum (section 7.2.7).
                let id = single_varint(ty, payload)?;
                if self.max_push_id.is_some_and(|prev| id < prev) {
                    return Err(H3Error::Id);
                }
                self.max_push_id = Some(id);
                Ok(Frame::MaxPushId(id))
            }
            kind::CANCEL_PUSH if client => {
                // A push ID above the maximum allowed is H3_ID_ERROR
                // (section 7.2.3); one within it names a push never made.
                let id = single_varint(ty, payload)?;
                if !self.max_push_id.is_some_and(|max| id <= max) {
                    return Err(H3Error::Id);
                }
                Ok(Frame::CancelPush(id))
            }
            kind::GOAWAY => {
                let id = single_varint(ty, payload)?;
                // Client-initiated bidirectional stream IDs are 0 mod 4;
                // a later GOAWAY may only lower the ID (section 5.2).
                if id % 4 != 0 || self.goaway.is_some_and(|prev| id > prev) {
                    return Err(H3Error::Id);
                }
                self.goaway = Some(id);
                Ok(Frame::GoAway(id))
            }
            kind::MAX_PUSH_ID => {
                single_varint(ty, payload)?;
                Err(H3Error::Unexpected { ty })
            }
            kind::CANCEL_PUSH => {
                single_varint(ty, payload)?;
                Err(H3Error::Id)
            }
            _ => match decode_payload(ty, payload)? {
                Some(frame) => Ok(frame),
                None => Err(H3Error::Frame { ty }),
            },
        }
    }

    /// The stream ended (its FIN read).
    ///
    /// # Errors
    /// [`H3Error::ClosedCriticalStream`] for the control stream;
    /// [`H3Error::Frame`] when a request stream ends inside a frame (its
    /// type is `u64::MAX` when it ended inside the type itself).
    pub fn finish(&self) -> Result<(), H3Error> {
        match self.role {
            Role::Control | Role::ClientControl => Err(H3Error::ClosedCriticalStream),
            Role::Request | Role::ClientRequest if self.at_boundary() => Ok(()),
            Role::Request | Role::ClientRequest if self.state == State::Type => {
                Err(H3Error::Frame { ty: u64::MAX })
            }
            Role::Request | Role::ClientRequest => Err(H3Error::Frame { ty: self.ty }),
        }
    }
}

/// Writes a frame header (type and length); returns its length, or `None`
/// when `out` is too short or a value is above [`varint::MAX`].
///
/// ```
/// use metronome_core::h3::frame::{encode_header, kind};
/// let mut out = [0u8; 16];
/// assert_eq!(encode_header(kind::DATA, 1000, &mut out), Some(3));
/// assert_eq!(out[..3], [0x00, 0x43, 0xe8]);
/// ```
pub fn encode_header(ty: u64, len: u64, out: &mut [u8]) -> Option<usize> {
    let n = varint::encode(ty, out)?;
    Some(n + varint::encode(len, out.get_mut(n..)?)?)
}

/// Writes the header of a DATA frame of `len` bytes: the body follows it
/// on the stream from the caller's own buffer.
pub fn encode_data_header(len: u64, out: &mut [u8]) -> Option<usize> {
    encode_header(kind::DATA, len, out)
}

/// Writes a HEADERS frame carrying the encoded field section `block`
/// (made by [`qpack::encode_request`](super::qpack::encode_request)).
pub fn encode_headers(block: &[u8], out: &mut [u8]) -> Option<usize> {
    let n = encode_header(kind::HEADERS, block.len() as u64, out)?;
    out.get_mut(n..n + block.len())?.copy_from_slice(block);
    Some(n + block.len())
}

/// Writes the client's SETTINGS frame: SETTINGS_QPACK_MAX_TABLE_CAPACITY 0
/// and SETTINGS_QPACK_BLOCKED_STREAMS 0 (no dynamic table: every field
/// section the server sends must use the static table and literals), and
/// SETTINGS_MAX_FIELD_SECTION_SIZE `max_field_section_size` (the `N` of
/// the [`qpack::Decoder`](super::qpack::Decoder) and [`FrameReader`]).
///
/// ```
/// use metronome_core::h3::frame::encode_settings;
/// let mut out = [0u8; 16];
/// let n = encode_settings(16_384, &mut out).unwrap();
/// assert_eq!(&out[..n], [0x04, 0x09, 0x01, 0x00, 0x07, 0x00, 0x06, 0x80, 0x00, 0x40, 0x00]);
/// ```
pub fn encode_settings(max_field_section_size: u64, out: &mut [u8]) -> Option<usize> {
    let mut params = [0u8; 16];
    let mut p = 0;
    for (id, value) in [
        (setting::QPACK_MAX_TABLE_CAPACITY, 0),
        (setting::QPACK_BLOCKED_STREAMS, 0),
        (setting::MAX_FIELD_SECTION_SIZE, max_field_section_size),
    ] {
        p += varint::encode(id, &mut params[p..])?;
        p += varint::encode(value, &mut params[p..])?;
    }
    let n = encode_header(kind::SETTINGS, p as u64, out)?;
    out.get_mut(n..n + p)?.copy_from_slice(&params[..p]);
    Some(n + p)
}

/// Writes the opening of the client's control stream: its stream type
/// (0x00) and its SETTINGS ([`encode_settings`]).
pub fn encode_control_stream_start(max_field_section_size: u64, out: &mut [u8]) -> Option<usize> {
    let n = varint::encode(StreamType::Control.to_u64(), out)?;
    Some(n + encode_settings(max_field_section_size, out.get_mut(n..)?)?)
}

/// Writes a GOAWAY frame. From a client its ID is a push ID: with push
/// never allowed, `0`.
///
/// ```
/// use metronome_core::h3::frame::encode_goaway;
/// let mut out = [0u8; 16];
/// assert_eq!(encode_goaway(0, &mut out), Some(3));
/// assert_eq!(out[..3], [0x07, 0x01, 0x00]);
/// ```
pub fn encode_goaway(id: u64, out: &mut [u8]) -> Option<usize> {
    let len = varint::len(id)?;
    let n = encode_header(kind::GOAWAY, len as u64, out)?;
    Some(n + varint::encode(id, out.get_mut(n..)?)?)
}

/// The type of a unidirectional stream: the varint it opens with (RFC
/// 9114 section 6.2, RFC 9204 section 4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamType {
    /// 0x00: the control stream.
    Control,
    /// 0x01: a push stream.
    Push,
    /// 0x02: the QPACK encoder stream.
    QpackEncoder,
    /// 0x03: the QPACK decoder stream.
    QpackDecoder,
    /// `0x1f * N + 0x21`: reserved, to be ignored.
    Reserved(u64),
    /// Any other type: unknown, to be ignored.
    Unknown(u64),
}

impl StreamType {
    /// The type a stream opened with.
    pub const fn from_u64(v: u64) -> Self {
        match v {
            0x00 => StreamType::Control,
            0x01 => StreamType::Push,
            0x02 => StreamType::QpackEncoder,
            0x03 => StreamType::QpackDecoder,
            v if is_reserved(v) => StreamType::Reserved(v),
            v => StreamType::Unknown(v),
        }
    }

    /// The varint value.
    pub const fn to_u64(self) -> u64 {
        match self {
            StreamType::Control => 0x00,
            StreamType::Push => 0x01,
            StreamType::QpackEncoder => 0x02,
            StreamType::QpackDecoder => 0x03,
            StreamType::Reserved(v) | StreamType::Unknown(v) => v,
        }
    }
}

/// The unidirectional streams a server opened, checked as each one's
/// type arrives (read the type with a [`varint::Reader`]: it may be split
/// across reads too).
///
/// ```
/// use metronome_core::h3::{H3Error, PeerStreams, StreamType};
/// let mut peer = PeerStreams::new();
/// assert_eq!(peer.open(StreamType::from_u64(0x00)), Ok(StreamType::Control));
/// assert_eq!(peer.open(StreamType::from_u64(0x21)), Ok(StreamType::Reserved(0x21)));
/// assert_eq!(peer.open(StreamType::Control), Err(H3Error::StreamCreation));
/// assert_eq!(peer.open(StreamType::Push), Err(H3Error::Id));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeerStreams {
    control: bool,
    encoder: bool,
    decoder: bool,
}

impl PeerStreams {
    /// No stream opened yet.
    pub const fn new() -> Self {
        Self {
            control: false,
            encoder: false,
            decoder: false,
        }
    }

    /// A server's unidirectional stream opened with type `ty`: returns it
    /// when it may be read (control: with a [`FrameReader`] in
    /// [`Role::Control`]; QPACK encoder: with a
    /// [`qpack::EncoderStream`](super::qpack::EncoderStream); QPACK
    /// decoder: its instructions need no action from a decoder that never
    /// references the server's table, and are discarded). Reserved and
    /// unknown types come back as they are: discard the stream's data, or
    /// stop reading it with H3_STREAM_CREATION_ERROR (section 6.2).
    ///
    /// # Errors
    /// [`H3Error::StreamCreation`] for a second control, encoder or
    /// decoder stream; [`H3Error::Id`] for a push stream (its push ID
    /// cannot be allowed: the client sends no MAX_PUSH_ID).
    pub fn open(&mut self, ty: StreamType) -> Result<StreamType, H3Error> {
        let seen = match ty {
            StreamType::Control => &mut self.control,
            StreamType::QpackEncoder => &mut self.encoder,
            StreamType::QpackDecoder => &mut self.decoder,
            StreamType::Push => return Err(H3Error::Id),
            StreamType::Reserved(_) | StreamType::Unknown(_) => return Ok(ty),
        };
        if *seen {
            return Err(H3Error::StreamCreation);
        }
        *seen = true;
        Ok(ty)
    }
}

#[cfg(test)]
mod tests;
