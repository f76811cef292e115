//! The server's unidirectional streams, acted on: its control stream
//! (SETTINGS, GOAWAY), its QPACK encoder and decoder streams, and the
//! streams it may not open (a second control or QPACK stream, a push
//! stream). No QUIC here: [`Peer::feed`] takes a stream's bytes as they
//! arrive and says what is new, or the [`H3Error`] whose code closes the
//! connection (every error on these streams is a connection error, RFC
//! 9114 section 6.2.1 and RFC 9204 section 4.2). Each rule is core's
//! ([`PeerStreams`], [`FrameReader`] in [`Role::Control`],
//! [`EncoderStream`], [`DecoderStream`]); this file only routes the bytes.

use metronome_core::h3::qpack::{DecoderStream, EncoderStream};
use metronome_core::h3::varint;
use metronome_core::h3::{Frame, FrameReader, H3Error, PeerStreams, Role, StreamType};

/// The longest control frame kept whole (SETTINGS): a longer one is
/// H3_EXCESSIVE_LOAD.
pub const CONTROL_FRAME: usize = 4096;

/// SETTINGS_MAX_FIELD_SECTION_SIZE (RFC 9114 section 7.2.4.1).
const MAX_FIELD_SECTION_SIZE: u64 = 0x06;

/// What one server unidirectional stream is, once its type is read.
#[derive(Debug)]
enum Kind {
    /// The type's varint is still arriving.
    Typing(varint::Reader),
    /// The control stream.
    Control(Box<FrameReader<CONTROL_FRAME>>),
    /// The QPACK encoder stream.
    Encoder(EncoderStream),
    /// The QPACK decoder stream.
    Decoder(DecoderStream),
    /// A reserved or unknown type: its bytes are discarded (section 6.2).
    Ignored,
}

/// One unidirectional stream the server opened, read by [`Peer::feed`].
#[derive(Debug)]
pub struct UniStream {
    kind: Kind,
}

impl Default for UniStream {
    fn default() -> Self {
        Self::new()
    }
}

impl UniStream {
    /// A stream whose type has not arrived yet.
    pub fn new() -> Self {
        Self {
            kind: Kind::Typing(varint::Reader::new()),
        }
    }

    /// The stream is one whose end closes the connection (control,
    /// QPACK encoder or decoder).
    pub fn critical(&self) -> bool {
        matches!(
            self.kind,
            Kind::Control(_) | Kind::Encoder(_) | Kind::Decoder(_)
        )
    }
}

/// What a [`Peer::feed`] brought that the connection acts on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct News {
    /// The server's SETTINGS arrived (its values are in [`Peer`]).
    pub settings: bool,
    /// A GOAWAY with this stream ID: no request on a stream at or above
    /// it will be processed.
    pub goaway: Option<u64>,
}

/// The server's side of the connection as its unidirectional streams
/// tell it: which critical streams it opened, its SETTINGS, its GOAWAY.
#[derive(Clone, Copy, Debug, Default)]
pub struct Peer {
    streams: PeerStreams,
    settings: bool,
    max_field_section: Option<u64>,
    goaway: Option<u64>,
}

impl Peer {
    /// Nothing received yet.
    pub const fn new() -> Self {
        Self {
            streams: PeerStreams::new(),
            settings: false,
            max_field_section: None,
            goaway: None,
        }
    }

    /// The server's SETTINGS arrived.
    pub const fn has_settings(&self) -> bool {
        self.settings
    }

    /// The server's SETTINGS_MAX_FIELD_SECTION_SIZE, when it sent one: no
    /// request section larger than this may be sent.
    pub const fn max_field_section(&self) -> Option<u64> {
        self.max_field_section
    }

    /// The lowest GOAWAY stream ID received, if any.
    pub const fn goaway(&self) -> Option<u64> {
        self.goaway
    }

    /// Bytes of `stream`, as they arrive: its type first, then what that
    /// type carries.
    ///
    /// # Errors
    /// The connection error the bytes are (close the connection with its
    /// [`code`](H3Error::code)): a second control or QPACK stream
    /// (H3_STREAM_CREATION_ERROR), a push stream (H3_ID_ERROR), anything the
    /// control stream may not carry (see `docs/http3.md`), a QPACK
    /// instruction a zero-capacity table cannot take.
    pub fn feed(&mut self, stream: &mut UniStream, mut input: &[u8]) -> Result<News, H3Error> {
        let mut news = News::default();
        while !input.is_empty() {
            match &mut stream.kind {
                Kind::Typing(r) => {
                    let (n, ty) = r.feed(input);
                    input = &input[n..];
                    if let Some(ty) = ty {
                        stream.kind = match self.streams.open(StreamType::from_u64(ty))? {
                            StreamType::Control => {
                                Kind::Control(Box::new(FrameReader::new(Role::Control)))
                            }
                            StreamType::QpackEncoder => Kind::Encoder(EncoderStream::new()),
                            StreamType::QpackDecoder => Kind::Decoder(DecoderStream::new()),
                            _ => Kind::Ignored,
                        };
                    }
                }
                Kind::Control(reader) => {
                    let (n, frame) = reader.read(input)?;
                    input = &input[n..];
                    match frame {
                        Some(Frame::Settings(s)) => {
                            self.settings = true;
                            self.max_field_section = s.get(MAX_FIELD_SECTION_SIZE);
                            news.settings = true;
                        }
                        Some(Frame::GoAway(id)) => {
                            // The reader refuses an ID above an earlier one.
                            self.goaway = Some(id);
                            news.goaway = Some(id);
                        }
                        _ => {}
                    }
                }
                Kind::Encoder(e) => {
                    e.feed(input)?;
                    input = &[];
                }
                Kind::Decoder(d) => {
                    d.feed(input)?;
                    input = &[];
                }
                Kind::Ignored => input = &[],
            }
        }
        Ok(news)
    }

    /// `stream` ended (its FIN, or reset by the server).
    ///
    /// # Errors
    /// H3_CLOSED_CRITICAL_STREAM when it is the control or a QPACK stream.
    pub fn end(&self, stream: &UniStream) -> Result<(), H3Error> {
        if stream.critical() {
            Err(H3Error::ClosedCriticalStream)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metronome_core::h3::frame::{encode_goaway, encode_settings};
    use metronome_core::h3::ErrorCode;

    /// A control stream's bytes: its type, SETTINGS with
    /// MAX_FIELD_SECTION_SIZE `max`, then `more`.
    fn control(max: u64, more: &[u8]) -> Vec<u8> {
        let mut out = vec![0u8; 64];
        let n = encode_settings(max, &mut out[1..]).unwrap();
        out.truncate(1 + n);
        out.extend_from_slice(more);
        out
    }

    fn goaway(id: u64) -> Vec<u8> {
        let mut out = [0u8; 16];
        let n = encode_goaway(id, &mut out).unwrap();
        out[..n].to_vec()
    }

    /// Feeds `wire` to a fresh stream in reads of `step` bytes; the news
    /// merged, or the first error.
    fn run(peer: &mut Peer, wire: &[u8], step: usize) -> Result<News, H3Error> {
        let mut s = UniStream::new();
        let mut all = News::default();
        for chunk in wire.chunks(step) {
            let n = peer.feed(&mut s, chunk)?;
            all.settings |= n.settings;
            all.goaway = n.goaway.or(all.goaway);
        }
        Ok(all)
    }

    #[test]
    fn settings_and_goaway_are_read_at_every_split() {
        let mut more = goaway(8);
        more.extend_from_slice(&[0x21, 0x00]); // a reserved frame, empty
        more.extend(goaway(4));
        let wire = control(1000, &more);
        for step in 1..=wire.len() {
            let mut peer = Peer::new();
            let news = run(&mut peer, &wire, step).unwrap();
            assert!(news.settings, "step {step}");
            assert_eq!(peer.max_field_section(), Some(1000));
            assert_eq!(peer.goaway(), Some(4), "step {step}");
        }
    }

    #[test]
    fn a_second_settings_is_frame_unexpected() {
        let mut second = vec![0u8; 32];
        let n = encode_settings(50, &mut second).unwrap();
        second.truncate(n);
        let wire = control(1000, &second);
        let e = run(&mut Peer::new(), &wire, 1).unwrap_err();
        assert_eq!(e.code(), ErrorCode::FRAME_UNEXPECTED);
    }

    #[test]
    fn a_goaway_above_an_earlier_one_is_an_id_error() {
        let mut more = goaway(4);
        more.extend(goaway(8));
        let e = run(&mut Peer::new(), &control(10, &more), 3).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ID_ERROR);
        // Not a client-initiated bidirectional stream ID (1 mod 4).
        let e = run(&mut Peer::new(), &control(10, &goaway(5)), 64).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ID_ERROR);
    }

    #[test]
    fn a_control_stream_without_settings_first_is_missing_settings() {
        let mut wire = vec![0x00];
        wire.extend(goaway(0));
        let e = run(&mut Peer::new(), &wire, 1).unwrap_err();
        assert_eq!(e.code(), ErrorCode::MISSING_SETTINGS);
    }

    #[test]
    fn settings_without_a_section_limit_leave_none() {
        // SETTINGS with only a reserved identifier (0x21 = 5).
        let wire = [0x00, 0x04, 0x02, 0x21, 0x05];
        let mut peer = Peer::new();
        assert!(run(&mut peer, &wire, 1).unwrap().settings);
        assert!(peer.has_settings());
        assert_eq!(peer.max_field_section(), None);
    }

    #[test]
    fn second_critical_streams_and_push_streams_are_refused() {
        let mut peer = Peer::new();
        run(&mut peer, &control(10, &[]), 64).unwrap();
        let e = run(&mut peer, &[0x00], 1).unwrap_err();
        assert_eq!(e.code(), ErrorCode::STREAM_CREATION_ERROR);
        run(&mut peer, &[0x02, 0x20], 1).unwrap();
        let e = run(&mut peer, &[0x02], 1).unwrap_err();
        assert_eq!(e.code(), ErrorCode::STREAM_CREATION_ERROR);
        run(&mut peer, &[0x03], 1).unwrap();
        let e = run(&mut peer, &[0x03], 1).unwrap_err();
        assert_eq!(e.code(), ErrorCode::STREAM_CREATION_ERROR);
        let e = run(&mut peer, &[0x01, 0x00], 1).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ID_ERROR);
    }

    #[test]
    fn qpack_streams_are_checked() {
        // An insert on the encoder stream: the table's capacity is 0.
        let e = run(&mut Peer::new(), &[0x02, 0x3f, 0xe1, 0x1f], 1).unwrap_err();
        assert_eq!(e.code(), ErrorCode::QPACK_ENCODER_STREAM_ERROR);
        // A Section Acknowledgment on the decoder stream (stream 4).
        let e = run(&mut Peer::new(), &[0x03, 0x84], 1).unwrap_err();
        assert_eq!(e.code(), ErrorCode::QPACK_DECODER_STREAM_ERROR);
        // Stream Cancellation is read and ignored.
        assert_eq!(run(&mut Peer::new(), &[0x03, 0x44], 1), Ok(News::default()));
    }

    #[test]
    fn unknown_and_reserved_streams_are_discarded_and_may_end() {
        let mut peer = Peer::new();
        let mut s = UniStream::new();
        // Type 0x21 (reserved) as a 2-byte varint, then anything.
        assert_eq!(
            peer.feed(&mut s, &[0x40, 0x21, 0xff, 0x00, 0x01]),
            Ok(News::default())
        );
        assert!(!s.critical());
        assert_eq!(peer.end(&s), Ok(()));
        // A stream that ends before its type: nothing lost.
        assert_eq!(peer.end(&UniStream::new()), Ok(()));
    }

    #[test]
    fn a_critical_stream_ending_is_closed_critical_stream() {
        let mut peer = Peer::new();
        for ty in [0x00u8, 0x02, 0x03] {
            let mut s = UniStream::new();
            peer.feed(&mut s, &[ty]).unwrap();
            assert_eq!(
                peer.end(&s).unwrap_err().code(),
                ErrorCode::CLOSED_CRITICAL_STREAM
            );
        }
    }
}
