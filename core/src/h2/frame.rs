//! HTTP/2 frames (RFC 9113 section 4 and 6): a reader that checks every
//! rule that can be checked on one frame alone, and a writer.
//!
//! [`read_frame`] takes the front of a connection's read buffer and
//! returns a whole frame, borrowing its payload, and how many bytes it
//! took; `Ok(None)` means the frame is not complete yet (keep the bytes,
//! read more). A frame longer than the maximum frame size is refused as
//! soon as its 9-byte header is in, so the read buffer never needs to be
//! larger than `9 + max_frame_size`. Rules that need the connection's state
//! (a frame on the wrong stream, a missing `CONTINUATION`) are
//! [`Connection`](super::Connection)'s.

use core::fmt;

/// Bytes of a frame header.
pub const HEADER_LEN: usize = 9;
/// The initial `SETTINGS_MAX_FRAME_SIZE` (RFC 9113 section 6.5.2), the
/// largest frame this crate's client accepts.
pub const DEFAULT_MAX_FRAME_SIZE: u32 = 16_384;
/// The largest `SETTINGS_MAX_FRAME_SIZE` a peer may advertise.
pub const MAX_FRAME_SIZE_LIMIT: u32 = (1 << 24) - 1;

/// Frame type codes (RFC 9113 section 11.2).
pub mod kind {
    /// DATA
    pub const DATA: u8 = 0x0;
    /// HEADERS
    pub const HEADERS: u8 = 0x1;
    /// PRIORITY
    pub const PRIORITY: u8 = 0x2;
    /// RST_STREAM
    pub const RST_STREAM: u8 = 0x3;
    /// SETTINGS
    pub const SETTINGS: u8 = 0x4;
    /// PUSH_PROMISE
    pub const PUSH_PROMISE: u8 = 0x5;
    /// PING
    pub const PING: u8 = 0x6;
    /// GOAWAY
    pub const GOAWAY: u8 = 0x7;
    /// WINDOW_UPDATE
    pub const WINDOW_UPDATE: u8 = 0x8;
    /// CONTINUATION
    pub const CONTINUATION: u8 = 0x9;
}

/// Frame flags.
pub mod flag {
    /// END_STREAM (DATA, HEADERS)
    pub const END_STREAM: u8 = 0x1;
    /// ACK (SETTINGS, PING)
    pub const ACK: u8 = 0x1;
    /// END_HEADERS (HEADERS, PUSH_PROMISE, CONTINUATION)
    pub const END_HEADERS: u8 = 0x4;
    /// PADDED (DATA, HEADERS, PUSH_PROMISE)
    pub const PADDED: u8 = 0x8;
    /// PRIORITY (HEADERS)
    pub const PRIORITY: u8 = 0x20;
}

/// SETTINGS parameter identifiers (RFC 9113 section 6.5.2).
pub mod setting {
    /// SETTINGS_HEADER_TABLE_SIZE
    pub const HEADER_TABLE_SIZE: u16 = 0x1;
    /// SETTINGS_ENABLE_PUSH
    pub const ENABLE_PUSH: u16 = 0x2;
    /// SETTINGS_MAX_CONCURRENT_STREAMS
    pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    /// SETTINGS_INITIAL_WINDOW_SIZE
    pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
    /// SETTINGS_MAX_FRAME_SIZE
    pub const MAX_FRAME_SIZE: u16 = 0x5;
    /// SETTINGS_MAX_HEADER_LIST_SIZE
    pub const MAX_HEADER_LIST_SIZE: u16 = 0x6;
}

/// An HTTP/2 error code (RFC 9113 section 7); unknown codes are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub u32);

impl ErrorCode {
    /// Graceful shutdown, or no error.
    pub const NO_ERROR: Self = Self(0x0);
    /// A protocol error.
    pub const PROTOCOL_ERROR: Self = Self(0x1);
    /// An internal error of the peer.
    pub const INTERNAL_ERROR: Self = Self(0x2);
    /// Flow control was violated.
    pub const FLOW_CONTROL_ERROR: Self = Self(0x3);
    /// SETTINGS were not acknowledged in time.
    pub const SETTINGS_TIMEOUT: Self = Self(0x4);
    /// A frame arrived on a half-closed stream.
    pub const STREAM_CLOSED: Self = Self(0x5);
    /// A frame had an invalid size.
    pub const FRAME_SIZE_ERROR: Self = Self(0x6);
    /// The stream was refused before any processing: safe to retry.
    pub const REFUSED_STREAM: Self = Self(0x7);
    /// The stream is no longer needed.
    pub const CANCEL: Self = Self(0x8);
    /// The header compression context could not be kept.
    pub const COMPRESSION_ERROR: Self = Self(0x9);
    /// A CONNECT tunnel failed.
    pub const CONNECT_ERROR: Self = Self(0xa);
    /// The peer is generating excessive load.
    pub const ENHANCE_YOUR_CALM: Self = Self(0xb);
    /// The transport's security is inadequate.
    pub const INADEQUATE_SECURITY: Self = Self(0xc);
    /// Use HTTP/1.1 for this request.
    pub const HTTP_1_1_REQUIRED: Self = Self(0xd);

    /// True for the codes that say the bytes on the connection were
    /// malformed: `PROTOCOL_ERROR`, `FRAME_SIZE_ERROR` and
    /// `COMPRESSION_ERROR`. A connection (or a response) ended by one is
    /// bad framing, as a malformed HTTP/1.1 reply is; every other code (a
    /// close, `NO_ERROR`, `INTERNAL_ERROR`, `FLOW_CONTROL_ERROR`, ...) is
    /// not.
    ///
    /// ```
    /// use metronome_core::h2::ErrorCode;
    /// assert!(ErrorCode::PROTOCOL_ERROR.is_malformed());
    /// assert!(ErrorCode::COMPRESSION_ERROR.is_malformed());
    /// assert!(!ErrorCode::NO_ERROR.is_malformed());
    /// assert!(!ErrorCode::CANCEL.is_malformed());
    /// ```
    pub const fn is_malformed(self) -> bool {
        matches!(self.0, 0x1 | 0x6 | 0x9)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NAMES: [&str; 14] = [
            "NO_ERROR",
            "PROTOCOL_ERROR",
            "INTERNAL_ERROR",
            "FLOW_CONTROL_ERROR",
            "SETTINGS_TIMEOUT",
            "STREAM_CLOSED",
            "FRAME_SIZE_ERROR",
            "REFUSED_STREAM",
            "CANCEL",
            "COMPRESSION_ERROR",
            "CONNECT_ERROR",
            "ENHANCE_YOUR_CALM",
            "INADEQUATE_SECURITY",
            "HTTP_1_1_REQUIRED",
        ];
        match NAMES.get(self.0 as usize) {
            Some(name) => f.write_str(name),
            None => write!(f, "error code {:#x}", self.0),
        }
    }
}

/// The priority fields of HEADERS and PRIORITY (deprecated by RFC 9113,
/// parsed and otherwise ignored).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Priority {
    /// The exclusive bit.
    pub exclusive: bool,
    /// The stream this one depends on.
    pub dependency: u32,
    /// The weight minus one.
    pub weight: u8,
}

/// The parameters of a SETTINGS frame: a whole number of 6-byte entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SettingsParams<'a>(&'a [u8]);

impl<'a> SettingsParams<'a> {
    /// No parameters (a SETTINGS ACK, or an empty SETTINGS).
    pub const EMPTY: SettingsParams<'static> = SettingsParams(&[]);

    /// Wraps the raw parameters; `None` unless the length is a multiple of 6.
    pub fn new(raw: &'a [u8]) -> Option<Self> {
        (raw.len() % 6 == 0).then_some(Self(raw))
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.0
    }

    /// The `(identifier, value)` pairs, in order.
    pub fn iter(&self) -> impl Iterator<Item = (u16, u32)> + 'a {
        self.0.chunks_exact(6).map(|c| {
            (
                u16::from_be_bytes([c[0], c[1]]),
                u32::from_be_bytes([c[2], c[3], c[4], c[5]]),
            )
        })
    }
}

/// One frame, its payload borrowed from the read buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// DATA.
    Data {
        /// Stream.
        stream: u32,
        /// END_STREAM.
        end_stream: bool,
        /// The data, without padding.
        data: &'a [u8],
        /// The pad length when PADDED.
        pad: Option<u8>,
    },
    /// HEADERS.
    Headers {
        /// Stream.
        stream: u32,
        /// END_STREAM.
        end_stream: bool,
        /// END_HEADERS: no CONTINUATION follows.
        end_headers: bool,
        /// The priority fields when PRIORITY.
        priority: Option<Priority>,
        /// The header block fragment.
        block: &'a [u8],
        /// The pad length when PADDED.
        pad: Option<u8>,
    },
    /// PRIORITY.
    Priority {
        /// Stream.
        stream: u32,
        /// The priority fields.
        priority: Priority,
    },
    /// RST_STREAM.
    RstStream {
        /// Stream.
        stream: u32,
        /// Why.
        code: ErrorCode,
    },
    /// SETTINGS.
    Settings {
        /// ACK: an acknowledgement, no parameters.
        ack: bool,
        /// The parameters.
        params: SettingsParams<'a>,
    },
    /// PUSH_PROMISE.
    PushPromise {
        /// Stream.
        stream: u32,
        /// END_HEADERS.
        end_headers: bool,
        /// The promised stream.
        promised: u32,
        /// The header block fragment.
        block: &'a [u8],
        /// The pad length when PADDED.
        pad: Option<u8>,
    },
    /// PING.
    Ping {
        /// ACK: a reply.
        ack: bool,
        /// The opaque data.
        data: [u8; 8],
    },
    /// GOAWAY.
    GoAway {
        /// The last stream the sender may have processed.
        last_stream: u32,
        /// Why.
        code: ErrorCode,
        /// Additional debug data.
        debug: &'a [u8],
    },
    /// WINDOW_UPDATE (an increment of 0 is passed on: whether it is a
    /// stream or a connection error depends on the stream).
    WindowUpdate {
        /// Stream (0: the connection).
        stream: u32,
        /// The window size increment.
        increment: u32,
    },
    /// CONTINUATION.
    Continuation {
        /// Stream.
        stream: u32,
        /// END_HEADERS.
        end_headers: bool,
        /// The header block fragment.
        block: &'a [u8],
    },
    /// A frame of an unknown type: ignored by receivers (RFC 9113 section 4.1).
    Unknown {
        /// Its type.
        kind: u8,
        /// Its flags.
        flags: u8,
        /// Stream.
        stream: u32,
        /// Its payload.
        payload: &'a [u8],
    },
}

/// Why a frame is malformed. Each is a connection error; [`FrameError::code`]
/// gives the code for the GOAWAY.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameError {
    /// The frame's length exceeds the maximum frame size.
    TooLarge {
        /// The length declared.
        len: u32,
    },
    /// A frame type that needs a stream came on stream 0.
    StreamZero {
        /// The frame type.
        kind: u8,
    },
    /// A connection-level frame type came on a stream.
    StreamNonZero {
        /// The frame type.
        kind: u8,
    },
    /// The payload length is wrong for the frame type.
    Length {
        /// The frame type.
        kind: u8,
    },
    /// The padding is as long as the payload, or longer.
    Padding {
        /// The frame type.
        kind: u8,
    },
}

impl FrameError {
    /// The error code RFC 9113 assigns.
    pub const fn code(&self) -> ErrorCode {
        match self {
            FrameError::TooLarge { .. } | FrameError::Length { .. } => ErrorCode::FRAME_SIZE_ERROR,
            _ => ErrorCode::PROTOCOL_ERROR,
        }
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::TooLarge { len } => write!(
                f,
                "HTTP/2 frame of {len} bytes exceeds the maximum frame size"
            ),
            FrameError::StreamZero { kind } => write!(f, "HTTP/2 frame of type {kind} on stream 0"),
            FrameError::StreamNonZero { kind } => write!(
                f,
                "HTTP/2 frame of type {kind} on a stream, not the connection"
            ),
            FrameError::Length { kind } => {
                write!(f, "HTTP/2 frame of type {kind} has a wrong length")
            }
            FrameError::Padding { kind } => write!(
                f,
                "HTTP/2 frame of type {kind} has padding longer than its payload"
            ),
        }
    }
}

impl core::error::Error for FrameError {}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Splits off the padding of a PADDED payload: `(pad length, rest without padding)`.
fn unpad(kind: u8, flags: u8, payload: &[u8]) -> Result<(Option<u8>, &[u8]), FrameError> {
    if flags & flag::PADDED == 0 {
        return Ok((None, payload));
    }
    let (&pad, rest) = payload.split_first().ok_or(FrameError::Length { kind })?;
    if usize::from(pad) > rest.len() {
        return Err(FrameError::Padding { kind });
    }
    Ok((Some(pad), &rest[..rest.len() - usize::from(pad)]))
}

fn priority(b: &[u8]) -> Priority {
    let dep = be32(b);
    Priority {
        exclusive: dep & 0x8000_0000 != 0,
        dependency: dep & 0x7fff_ffff,
        weight: b[4],
    }
}

/// Reads one frame from the front of `input`: `Ok(Some((frame, consumed)))`,
/// or `Ok(None)` when `input` does not hold a whole frame yet.
///
/// # Errors
/// A [`FrameError`] when the frame breaks a rule of RFC 9113 section 6 that
/// needs no connection state: too long for `max_frame_size`, on stream 0
/// or not as its type requires, a wrong fixed length, padding too long.
///
/// # Example
/// ```
/// use metronome_core::h2::frame::{read_frame, Frame};
/// let ping = [0, 0, 8, 6, 1, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
/// assert_eq!(read_frame(&ping[..12], 16_384), Ok(None));
/// assert_eq!(
///     read_frame(&ping, 16_384),
///     Ok(Some((Frame::Ping { ack: true, data: [1, 2, 3, 4, 5, 6, 7, 8] }, 17)))
/// );
/// ```
pub fn read_frame(
    input: &[u8],
    max_frame_size: u32,
) -> Result<Option<(Frame<'_>, usize)>, FrameError> {
    let Some(head) = input.get(..HEADER_LEN) else {
        return Ok(None);
    };
    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]);
    if len > max_frame_size {
        return Err(FrameError::TooLarge { len });
    }
    let (kind, flags) = (head[3], head[4]);
    let stream = be32(&head[5..9]) & 0x7fff_ffff;
    let total = HEADER_LEN + len as usize;
    let Some(payload) = input.get(HEADER_LEN..total) else {
        return Ok(None);
    };
    let on_stream = |ok: bool| {
        if ok {
            Ok(())
        } else {
            Err(FrameError::StreamZero { kind })
        }
    };
    let on_conn = |ok: bool| {
        if ok {
            Ok(())
        } else {
            Err(FrameError::StreamNonZero { kind })
        }
    };
    let exact = |n: usize| {
        if payload.len() == n {
            Ok(())
        } else {
            Err(FrameError::Length { kind })
        }
    };
    let frame = match kind {
        kind::DATA => {
            on_stream(stream != 0)?;
            let (pad, data) = unpad(kind, flags, payload)?;
            Frame::Data {
                stream,
                end_stream: flags & flag::END_STREAM != 0,
                data,
                pad,
            }
        }
        kind::HEADERS => {
            on_stream(stream != 0)?;
            let (pad, mut block) = unpad(kind, flags, payload)?;
            let mut prio = None;
            if flags & flag::PRIORITY != 0 {
                if block.len() < 5 {
                    return Err(FrameError::Length { kind });
                }
                prio = Some(priority(block));
                block = &block[5..];
            }
            Frame::Headers {
                stream,
                end_stream: flags & flag::END_STREAM != 0,
                end_headers: flags & flag::END_HEADERS != 0,
                priority: prio,
                block,
                pad,
            }
        }
        kind::PRIORITY => {
            on_stream(stream != 0)?;
            exact(5)?;
            Frame::Priority {
                stream,
                priority: priority(payload),
            }
        }
        kind::RST_STREAM => {
            on_stream(stream != 0)?;
            exact(4)?;
            Frame::RstStream {
                stream,
                code: ErrorCode(be32(payload)),
            }
        }
        kind::SETTINGS => {
            on_conn(stream == 0)?;
            let ack = flags & flag::ACK != 0;
            if ack && !payload.is_empty() {
                return Err(FrameError::Length { kind });
            }
            let params = SettingsParams::new(payload).ok_or(FrameError::Length { kind })?;
            Frame::Settings { ack, params }
        }
        kind::PUSH_PROMISE => {
            on_stream(stream != 0)?;
            let (pad, rest) = unpad(kind, flags, payload)?;
            if rest.len() < 4 {
                return Err(FrameError::Length { kind });
            }
            Frame::PushPromise {
                stream,
                end_headers: flags & flag::END_HEADERS != 0,
                promised: be32(rest) & 0x7fff_ffff,
                block: &rest[4..],
                pad,
            }
        }
        kind::PING => {
            on_conn(stream == 0)?;
            exact(8)?;
            let mut data = [0; 8];
            data.copy_from_slice(payload);
            Frame::Ping {
                ack: flags & flag::ACK != 0,
                data,
            }
        }
        kind::GOAWAY => {
            on_conn(stream == 0)?;
            if payload.len() < 8 {
                return Err(FrameError::Length { kind });
            }
            Frame::GoAway {
                last_stream: be32(payload) & 0x7fff_ffff,
                code: ErrorCode(be32(&payload[4..])),
                debug: &payload[8..],
            }
        }
        kind::WINDOW_UPDATE => {
            exact(4)?;
            Frame::WindowUpdate {
                stream,
                increment: be32(payload) & 0x7fff_ffff,
            }
        }
        kind::CONTINUATION => {
            on_stream(stream != 0)?;
            Frame::Continuation {
                stream,
                end_headers: flags & flag::END_HEADERS != 0,
                block: payload,
            }
        }
        _ => Frame::Unknown {
            kind,
            flags,
            stream,
            payload,
        },
    };
    Ok(Some((frame, total)))
}

/// Writes a frame header. Returns `None` when `out` is shorter than 9
/// bytes or `len` does not fit in 24 bits.
pub fn write_header(out: &mut [u8], len: usize, kind: u8, flags: u8, stream: u32) -> Option<usize> {
    if len > MAX_FRAME_SIZE_LIMIT as usize {
        return None;
    }
    let head = out.get_mut(..HEADER_LEN)?;
    head[..3].copy_from_slice(&(len as u32).to_be_bytes()[1..]);
    head[3] = kind;
    head[4] = flags;
    head[5..].copy_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    Some(HEADER_LEN)
}

/// A payload written in parts, for [`Frame::encode`].
struct Writer<'o> {
    out: &'o mut [u8],
    n: usize,
}

impl Writer<'_> {
    fn put(&mut self, bytes: &[u8]) -> Option<()> {
        self.out
            .get_mut(self.n..self.n + bytes.len())?
            .copy_from_slice(bytes);
        self.n += bytes.len();
        Some(())
    }
    fn zeros(&mut self, k: usize) -> Option<()> {
        self.out.get_mut(self.n..self.n + k)?.fill(0);
        self.n += k;
        Some(())
    }
}

impl Frame<'_> {
    /// What a DATA frame charges to the flow-control windows (RFC 9113
    /// 6.9.1): its whole payload, padding and the pad-length byte
    /// included; 0 for any other frame.
    ///
    /// ```
    /// use metronome_core::h2::frame::Frame;
    /// let f = Frame::Data { stream: 1, end_stream: false, data: b"abc", pad: Some(4) };
    /// assert_eq!(f.flow_len(), 3 + 4 + 1);
    /// ```
    pub fn flow_len(&self) -> usize {
        match self {
            Frame::Data { data, pad, .. } => data.len() + pad.map_or(0, |p| usize::from(p) + 1),
            _ => 0,
        }
    }

    /// Writes the frame (padding as zeros) into `out` and returns its
    /// length, or `None` when `out` is too short. [`read_frame`] reads back
    /// an equal frame.
    ///
    /// ```
    /// use metronome_core::h2::frame::{read_frame, Frame};
    /// let f = Frame::Data { stream: 1, end_stream: true, data: b"hi", pad: Some(3) };
    /// let mut out = [0u8; 32];
    /// let n = f.encode(&mut out).unwrap();
    /// assert_eq!(n, 9 + 1 + 2 + 3);
    /// assert_eq!(read_frame(&out[..n], 16_384), Ok(Some((f, n))));
    /// ```
    pub fn encode(&self, out: &mut [u8]) -> Option<usize> {
        let (head, body) = out.split_at_mut_checked(HEADER_LEN)?;
        let mut w = Writer { out: body, n: 0 };
        let pad_flag = |pad: Option<u8>| if pad.is_some() { flag::PADDED } else { 0 };
        let bit = |b: bool, f: u8| if b { f } else { 0 };
        let prio = |w: &mut Writer, p: &Priority| {
            let dep = p.dependency | if p.exclusive { 0x8000_0000 } else { 0 };
            w.put(&dep.to_be_bytes())?;
            w.put(&[p.weight])
        };
        let (kind, flags, stream) = match *self {
            Frame::Data {
                stream,
                end_stream,
                data,
                pad,
            } => {
                if let Some(p) = pad {
                    w.put(&[p])?;
                }
                w.put(data)?;
                w.zeros(usize::from(pad.unwrap_or(0)))?;
                (
                    kind::DATA,
                    bit(end_stream, flag::END_STREAM) | pad_flag(pad),
                    stream,
                )
            }
            Frame::Headers {
                stream,
                end_stream,
                end_headers,
                priority,
                block,
                pad,
            } => {
                if let Some(p) = pad {
                    w.put(&[p])?;
                }
                if let Some(p) = &priority {
                    prio(&mut w, p)?;
                }
                w.put(block)?;
                w.zeros(usize::from(pad.unwrap_or(0)))?;
                let flags = bit(end_stream, flag::END_STREAM)
                    | bit(end_headers, flag::END_HEADERS)
                    | bit(priority.is_some(), flag::PRIORITY)
                    | pad_flag(pad);
                (kind::HEADERS, flags, stream)
            }
            Frame::Priority { stream, priority } => {
                prio(&mut w, &priority)?;
                (kind::PRIORITY, 0, stream)
            }
            Frame::RstStream { stream, code } => {
                w.put(&code.0.to_be_bytes())?;
                (kind::RST_STREAM, 0, stream)
            }
            Frame::Settings { ack, params } => {
                w.put(params.as_bytes())?;
                (kind::SETTINGS, bit(ack, flag::ACK), 0)
            }
            Frame::PushPromise {
                stream,
                end_headers,
                promised,
                block,
                pad,
            } => {
                if let Some(p) = pad {
                    w.put(&[p])?;
                }
                w.put(&promised.to_be_bytes())?;
                w.put(block)?;
                w.zeros(usize::from(pad.unwrap_or(0)))?;
                (
                    kind::PUSH_PROMISE,
                    bit(end_headers, flag::END_HEADERS) | pad_flag(pad),
                    stream,
                )
            }
            Frame::Ping { ack, data } => {
                w.put(&data)?;
                (kind::PING, bit(ack, flag::ACK), 0)
            }
            Frame::GoAway {
                last_stream,
                code,
                debug,
            } => {
                w.put(&last_stream.to_be_bytes())?;
                w.put(&code.0.to_be_bytes())?;
                w.put(debug)?;
                (kind::GOAWAY, 0, 0)
            }
            Frame::WindowUpdate { stream, increment } => {
                w.put(&increment.to_be_bytes())?;
                (kind::WINDOW_UPDATE, 0, stream)
            }
            Frame::Continuation {
                stream,
                end_headers,
                block,
            } => {
                w.put(block)?;
                (
                    kind::CONTINUATION,
                    bit(end_headers, flag::END_HEADERS),
                    stream,
                )
            }
            Frame::Unknown {
                kind,
                flags,
                stream,
                payload,
            } => {
                w.put(payload)?;
                (kind, flags, stream)
            }
        };
        let len = w.n;
        write_header(head, len, kind, flags, stream)?;
        Some(HEADER_LEN + len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(len: u32, kind: u8, flags: u8, stream: u32, payload: &[u8]) -> std::vec::Vec<u8> {
        let mut v = std::vec![0u8; 9];
        v[..3].copy_from_slice(&len.to_be_bytes()[1..]);
        v[3] = kind;
        v[4] = flags;
        v[5..9].copy_from_slice(&stream.to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    fn read(b: &[u8]) -> Result<Option<(Frame<'_>, usize)>, FrameError> {
        read_frame(b, DEFAULT_MAX_FRAME_SIZE)
    }

    #[test]
    fn every_type_round_trips_at_every_cut() {
        let prio = Priority {
            exclusive: true,
            dependency: 3,
            weight: 15,
        };
        let settings = [0, 3, 0, 0, 0, 100, 0, 4, 0, 1, 0, 0];
        let frames = [
            Frame::Data {
                stream: 1,
                end_stream: false,
                data: b"abc",
                pad: None,
            },
            Frame::Data {
                stream: 3,
                end_stream: true,
                data: b"",
                pad: Some(0),
            },
            Frame::Headers {
                stream: 5,
                end_stream: true,
                end_headers: false,
                priority: Some(prio),
                block: b"\x88",
                pad: Some(2),
            },
            Frame::Priority {
                stream: 7,
                priority: prio,
            },
            Frame::RstStream {
                stream: 9,
                code: ErrorCode::CANCEL,
            },
            Frame::Settings {
                ack: false,
                params: SettingsParams::new(&settings).unwrap(),
            },
            Frame::Settings {
                ack: true,
                params: SettingsParams::new(&[]).unwrap(),
            },
            Frame::PushPromise {
                stream: 1,
                end_headers: true,
                promised: 2,
                block: b"\x82",
                pad: Some(1),
            },
            Frame::Ping {
                ack: false,
                data: *b"12345678",
            },
            Frame::GoAway {
                last_stream: 7,
                code: ErrorCode::ENHANCE_YOUR_CALM,
                debug: b"calm",
            },
            Frame::WindowUpdate {
                stream: 0,
                increment: 1 << 30,
            },
            Frame::Continuation {
                stream: 5,
                end_headers: true,
                block: b"\x89",
            },
            Frame::Unknown {
                kind: 0xfa,
                flags: 0x5,
                stream: 11,
                payload: b"x",
            },
        ];
        for f in frames {
            let mut out = [0u8; 64];
            let n = f.encode(&mut out).unwrap();
            for cut in 0..n {
                assert_eq!(read(&out[..cut]), Ok(None), "{f:?} cut at {cut}");
            }
            assert_eq!(read(&out[..n]), Ok(Some((f, n))));
            let mut longer = out;
            longer[n] = 0xee;
            assert_eq!(read(&longer[..n + 1]), Ok(Some((f, n))));
            assert_eq!(f.encode(&mut out[..n - 1]), None);
        }
        let p = SettingsParams::new(&settings).unwrap();
        assert_eq!(
            p.iter().collect::<std::vec::Vec<_>>(),
            [(3, 100), (4, 65536)]
        );
    }

    #[test]
    fn reserved_bit_is_ignored() {
        let b = raw(4, kind::WINDOW_UPDATE, 0, 0x8000_0001, &[0x80, 0, 0, 5]);
        assert_eq!(
            read(&b),
            Ok(Some((
                Frame::WindowUpdate {
                    stream: 1,
                    increment: 5
                },
                13
            )))
        );
    }

    #[test]
    fn malformed_frames() {
        use FrameError::*;
        let cases: [(std::vec::Vec<u8>, FrameError); 20] = [
            (raw(16_385, kind::DATA, 0, 1, &[]), TooLarge { len: 16_385 }),
            (raw(3, kind::DATA, 0, 0, b"abc"), StreamZero { kind: 0 }),
            (raw(1, kind::HEADERS, 0, 0, b"\x88"), StreamZero { kind: 1 }),
            (
                raw(0, kind::CONTINUATION, 4, 0, b""),
                StreamZero { kind: 9 },
            ),
            (
                raw(4, kind::RST_STREAM, 0, 0, &[0; 4]),
                StreamZero { kind: 3 },
            ),
            (
                raw(5, kind::PRIORITY, 0, 0, &[0; 5]),
                StreamZero { kind: 2 },
            ),
            (
                raw(5, kind::PUSH_PROMISE, 4, 0, &[0; 5]),
                StreamZero { kind: 5 },
            ),
            (raw(0, kind::SETTINGS, 0, 1, &[]), StreamNonZero { kind: 4 }),
            (raw(8, kind::PING, 0, 1, &[0; 8]), StreamNonZero { kind: 6 }),
            (
                raw(8, kind::GOAWAY, 0, 3, &[0; 8]),
                StreamNonZero { kind: 7 },
            ),
            (raw(5, kind::SETTINGS, 0, 0, &[0; 5]), Length { kind: 4 }),
            (raw(6, kind::SETTINGS, 1, 0, &[0; 6]), Length { kind: 4 }),
            (raw(7, kind::PING, 0, 0, &[0; 7]), Length { kind: 6 }),
            (raw(7, kind::GOAWAY, 0, 0, &[0; 7]), Length { kind: 7 }),
            (
                raw(3, kind::WINDOW_UPDATE, 0, 0, &[0; 3]),
                Length { kind: 8 },
            ),
            (raw(5, kind::RST_STREAM, 0, 1, &[0; 5]), Length { kind: 3 }),
            (raw(4, kind::PRIORITY, 0, 1, &[0; 4]), Length { kind: 2 }),
            (
                raw(3, kind::DATA, flag::PADDED, 1, &[3, 0, 0]),
                Padding { kind: 0 },
            ),
            (raw(0, kind::DATA, flag::PADDED, 1, &[]), Length { kind: 0 }),
            (
                raw(
                    5,
                    kind::HEADERS,
                    flag::PRIORITY | flag::PADDED,
                    1,
                    &[0, 0, 0, 0, 1],
                ),
                Length { kind: 1 },
            ),
        ];
        for (bytes, err) in cases {
            assert_eq!(read(&bytes), Err(err), "{bytes:?}");
            assert!(matches!(
                err.code(),
                ErrorCode::FRAME_SIZE_ERROR | ErrorCode::PROTOCOL_ERROR
            ));
        }
        // Too large is refused from the header alone.
        assert_eq!(
            read(&raw(20_000, kind::DATA, 0, 1, &[])[..9]),
            Err(TooLarge { len: 20_000 })
        );
        // A larger maximum accepts it.
        assert_eq!(
            read_frame(&raw(16_385, kind::DATA, 0, 1, &[])[..9], 1 << 20),
            Ok(None)
        );
        // Padding exactly the rest is fine: no data.
        assert_eq!(
            read(&raw(3, kind::DATA, flag::PADDED, 1, &[2, 0, 0])),
            Ok(Some((
                Frame::Data {
                    stream: 1,
                    end_stream: false,
                    data: b"",
                    pad: Some(2)
                },
                12
            )))
        );
        assert_eq!(std::format!("{}", ErrorCode(0x7)), "REFUSED_STREAM");
        assert_eq!(std::format!("{}", ErrorCode(0x77)), "error code 0x77");
    }
}
