//! [`Exchange`]: one request and its response on one connection, as a
//! sans-IO state machine. Both engines drive it the same way, so they
//! record exactly the same thing for the same bytes at the same times; an
//! engine keeps only the socket, the clock and sleeping.
//!
//! The engine's side, in quinn-proto's shape (time is an argument):
//! - [`Exchange::begin`] when the request is written;
//! - [`Exchange::handle_read`] with the unconsumed bytes of the connection
//!   buffer and the time they arrived; it answers [`Feed::NeedMore`] (drop
//!   `consumed` bytes, read again) or [`Feed::Complete`];
//! - [`Exchange::handle_eof`] when the peer closed (a body delimited by the
//!   close ends there), [`Exchange::handle_fault`] to classify a socket error;
//! - [`Exchange::finish`] once complete: the [`Finish`] to record.
//!
//! Inter-token gaps go into a slice the caller owns (at most its length per
//! request, [`GAP_CAP`] in both engines; more are counted and dropped), so
//! nothing here allocates.
//!
//! ```
//! use metronome_core::exchange::{Exchange, Feed};
//! use metronome_core::ledger::Finish;
//!
//! let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
//!     30\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n\r\n\
//!     30\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"yo\"}}]}\n\n\r\n\
//!     e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n";
//! let mut gaps = [0u64; 16];
//! let mut ex = Exchange::new(true);
//! ex.begin(1_000, 1_500); // intended, sent
//! // The head, the first chunk and "30" arrive at 10 us: the partial
//! // chunk-size line is not consumed and stays at the front of the buffer.
//! assert_eq!(ex.handle_read(10_000, &wire[..103], &mut gaps), Ok(Feed::NeedMore { consumed: 101 }));
//! // The rest arrives at 25 us, after the two bytes kept.
//! assert_eq!(
//!     ex.handle_read(25_000, &wire[101..], &mut gaps),
//!     Ok(Feed::Complete { consumed: wire.len() - 101, keep_alive: true })
//! );
//! let Finish::Stream { timing, gaps } = ex.finish(&gaps) else { panic!() };
//! assert_eq!(timing.first_content_ns, Some(10_000));
//! assert_eq!(timing.done_ns, Some(25_000));
//! assert_eq!(gaps, [15_000]);
//! ```

use crate::ledger::Finish;
use crate::measure::{ErrorKind, StreamTiming};
use crate::response::{ReadEvent, Reader};

/// Inter-token gaps the engines keep per request (the length of the slice
/// they pass); more are counted ([`Exchange::dropped_gaps`]) and dropped.
pub const GAP_CAP: usize = 4096;

/// What [`Exchange::handle_read`] made of the bytes it was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feed {
    /// The response is not complete: drop `consumed` bytes from the front
    /// of the buffer and read more.
    NeedMore {
        /// Bytes of the input consumed.
        consumed: usize,
    },
    /// The response is complete: drop `consumed` bytes from the front of
    /// the buffer and call [`Exchange::finish`].
    Complete {
        /// Bytes of the input consumed (bytes after them are not this
        /// response's).
        consumed: usize,
        /// Whether the connection may carry the next request.
        keep_alive: bool,
    },
}

/// One request/response exchange on one connection; see the
/// [module docs](self). Reused for every request of the connection.
#[derive(Clone, Debug)]
pub struct Exchange {
    reader: Reader,
    expect_stream: bool,
    status: Option<u16>,
    stream_error: bool,
    timing: StreamTiming,
    /// Gaps written into the caller's slice for the current request.
    gaps: usize,
    /// Gaps that did not fit, over the life of this exchange.
    dropped_gaps: u64,
}

impl Exchange {
    /// An exchange for a connection; `expect_stream`: responses are
    /// OpenAI-style event streams (a 2xx body is decoded as SSE).
    pub const fn new(expect_stream: bool) -> Self {
        Self {
            reader: Reader::new(expect_stream),
            expect_stream,
            status: None,
            stream_error: false,
            timing: StreamTiming::new(0, 0),
            gaps: 0,
            dropped_gaps: 0,
        }
    }

    /// The request intended at `intended_ns` was written at `sent_ns`:
    /// forget the previous response's facts.
    pub fn begin(&mut self, intended_ns: u64, sent_ns: u64) {
        self.status = None;
        self.stream_error = false;
        self.timing = StreamTiming::new(intended_ns, sent_ns);
        self.gaps = 0;
    }

    /// The connection was closed or replaced: the next bytes start a new
    /// response.
    pub fn reset_connection(&mut self) {
        self.reader.reset();
    }

    /// Feeds the unconsumed bytes of the connection buffer, read at
    /// `now_ns`; `input` must start with the bytes the previous call did
    /// not consume. Gaps between content chunks go into `gaps`.
    ///
    /// # Errors
    /// [`ErrorKind::Malformed`] when the response cannot be parsed; the
    /// connection must be closed.
    pub fn handle_read(
        &mut self,
        now_ns: u64,
        input: &[u8],
        gaps: &mut [u64],
    ) -> Result<Feed, ErrorKind> {
        let mut pos = 0;
        loop {
            let (used, event) = self
                .reader
                .feed(&input[pos..])
                .map_err(|_| ErrorKind::Malformed)?;
            pos += used;
            match event {
                None if used == 0 => return Ok(Feed::NeedMore { consumed: pos }),
                None => {}
                Some(ev) => {
                    if let Some(keep_alive) = self.apply(now_ns, ev, gaps) {
                        return Ok(Feed::Complete {
                            consumed: pos,
                            keep_alive,
                        });
                    }
                }
            }
        }
    }

    /// The peer closed the connection at `now_ns` (every byte before the
    /// close was fed). A body delimited by the close ends here: `Ok(())`,
    /// the response is complete and the connection is not reusable.
    /// Anything else was cut.
    ///
    /// # Errors
    /// [`ErrorKind::StreamCut`] when a stream's head had arrived, else
    /// [`ErrorKind::Reset`].
    ///
    /// ```
    /// use metronome_core::exchange::{Exchange, Feed};
    /// use metronome_core::ledger::Finish;
    /// use metronome_core::measure::ErrorKind;
    /// let mut ex = Exchange::new(false);
    /// ex.begin(0, 0);
    /// let head = b"HTTP/1.0 200 OK\r\n\r\nbody until close";
    /// assert_eq!(ex.handle_read(7, head, &mut []), Ok(Feed::NeedMore { consumed: head.len() }));
    /// assert_eq!(ex.handle_eof(9, &mut []), Ok(()));
    /// assert_eq!(ex.finish(&[]), Finish::Ok);
    /// // A Content-Length body cut short is a reset.
    /// let mut ex = Exchange::new(false);
    /// ex.begin(0, 0);
    /// ex.handle_read(7, b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nab", &mut []).unwrap();
    /// assert_eq!(ex.handle_eof(9, &mut []), Err(ErrorKind::Reset));
    /// ```
    pub fn handle_eof(&mut self, now_ns: u64, gaps: &mut [u64]) -> Result<(), ErrorKind> {
        loop {
            match self.reader.finish_eof() {
                Ok(Some(ev)) => {
                    if self.apply(now_ns, ev, gaps).is_some() {
                        return Ok(());
                    }
                }
                Ok(None) | Err(_) => return Err(self.handle_fault(ErrorKind::Reset)),
            }
        }
    }

    /// Classifies a fault of the connection during this exchange: a reset
    /// after a stream's head arrived is a cut stream; anything else keeps
    /// its kind.
    ///
    /// ```
    /// use metronome_core::exchange::Exchange;
    /// use metronome_core::measure::ErrorKind;
    /// let mut ex = Exchange::new(true);
    /// ex.begin(0, 0);
    /// assert_eq!(ex.handle_fault(ErrorKind::Reset), ErrorKind::Reset);
    /// ex.handle_read(5, b"HTTP/1.1 200 OK\r\n\r\n", &mut []).unwrap();
    /// assert_eq!(ex.handle_fault(ErrorKind::Reset), ErrorKind::StreamCut);
    /// assert_eq!(ex.handle_fault(ErrorKind::Timeout), ErrorKind::Timeout);
    /// ```
    pub fn handle_fault(&self, kind: ErrorKind) -> ErrorKind {
        if kind == ErrorKind::Reset && self.streaming() {
            ErrorKind::StreamCut
        } else {
            kind
        }
    }

    /// How the complete response ended, borrowing its timing and the gaps
    /// written into `gaps` (the slice given to [`Exchange::handle_read`]).
    pub fn finish<'a>(&'a self, gaps: &'a [u64]) -> Finish<'a> {
        Finish::for_response(self.status, self.stream_error, self.expect_stream).unwrap_or(
            Finish::Stream {
                timing: &self.timing,
                gaps: &gaps[..self.gaps.min(gaps.len())],
            },
        )
    }

    /// True once a stream's response head has arrived.
    pub fn streaming(&self) -> bool {
        self.expect_stream && self.status.is_some()
    }

    /// Gaps that did not fit in the caller's slice, over the life of this
    /// exchange.
    pub fn dropped_gaps(&self) -> u64 {
        self.dropped_gaps
    }

    /// Applies one reader event; `Some(keep_alive)` when the response is complete.
    fn apply(&mut self, now_ns: u64, ev: ReadEvent, gaps: &mut [u64]) -> Option<bool> {
        match ev {
            ReadEvent::Head { status } => self.status = Some(status),
            ReadEvent::Content => {
                if let Some(gap) = self.timing.on_content(now_ns) {
                    match gaps.get_mut(self.gaps) {
                        Some(slot) => {
                            *slot = gap;
                            self.gaps += 1;
                        }
                        None => self.dropped_gaps += 1,
                    }
                }
            }
            ReadEvent::Usage(n) => self.timing.on_usage(n),
            ReadEvent::StreamError => self.stream_error = true,
            ReadEvent::Done => self.timing.on_done(now_ns),
            ReadEvent::Complete { keep_alive, .. } => {
                self.reader.reset();
                return Some(keep_alive);
            }
        }
        None
    }
}
