//! One blocking keep-alive connection and one request/response exchange on
//! it. All protocol decisions are core's [`Reader`]; this file moves bytes
//! and reads the clock.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use metronome_core::measure::{ErrorKind, StreamTiming};
use metronome_core::response::{ReadEvent, Reader};

use crate::clock::Clock;
use crate::output::Finish;

/// Size of a connection's read buffer: a response head must fit in it.
pub(crate) const READ_BUF: usize = 64 * 1024;

/// How one request ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// A 2xx response, fully read.
    Ok,
    /// A complete response with a non-2xx status.
    Status(u16),
    /// A fault, by kind.
    Error(ErrorKind),
    /// A streamed response (OpenAI-style SSE) that reached its end; the
    /// recorder decides whether it succeeded (it needs content and `[DONE]`).
    Stream {
        /// The stream's timing.
        timing: StreamTiming,
        /// Gaps between consecutive content chunks, ns.
        gaps: Vec<u64>,
    },
}

/// A connection and what an exchange on it needs.
pub struct Exchange {
    stream: Option<TcpStream>,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    reader: Reader,
    expect_stream: bool,
}

impl Exchange {
    /// Opens a connection to `addr` within `timeout`.
    ///
    /// # Errors
    /// The connect error (refused, unreachable, timed out).
    pub fn connect(
        addr: SocketAddr,
        timeout: Duration,
        expect_stream: bool,
    ) -> io::Result<Exchange> {
        let mut ex = Exchange {
            stream: None,
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            start: 0,
            end: 0,
            reader: Reader::new(expect_stream),
            expect_stream,
        };
        ex.reopen(addr, timeout)?;
        Ok(ex)
    }

    /// True when the connection is open and usable for the next request.
    pub fn is_open(&self) -> bool {
        self.stream.is_some()
    }

    /// Closes the connection (the next exchange needs [`Exchange::reopen`]).
    pub fn close(&mut self) {
        if let Some(s) = self.stream.take() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        self.start = 0;
        self.end = 0;
        self.reader = Reader::new(self.expect_stream);
    }

    /// (Re)opens the connection.
    ///
    /// # Errors
    /// The connect error.
    pub fn reopen(&mut self, addr: SocketAddr, timeout: Duration) -> io::Result<()> {
        self.close();
        let s = TcpStream::connect_timeout(&addr, timeout.max(Duration::from_millis(1)))?;
        s.set_nodelay(true)?;
        self.stream = Some(s);
        Ok(())
    }

    /// Sends `request` now and reads its response until it completes, fails
    /// or `deadline_ns` (on `clock`) passes. Returns when it ended and how.
    /// The connection is closed after any fault or a `Connection: close`.
    pub fn exchange(
        &mut self,
        clock: &Clock,
        request: &[u8],
        intended_ns: u64,
        sent_ns: u64,
        deadline_ns: u64,
    ) -> (u64, Outcome) {
        let outcome = self.exchange_inner(clock, request, intended_ns, sent_ns, deadline_ns);
        let done = clock.now_ns();
        if !matches!(
            outcome,
            Step::Complete {
                keep_alive: true,
                ..
            }
        ) {
            self.close();
        } else {
            self.reader.reset();
        }
        let outcome = match outcome {
            Step::Complete { outcome, .. } => outcome,
            Step::Fault(kind) => Outcome::Error(kind),
        };
        (done, outcome)
    }

    fn exchange_inner(
        &mut self,
        clock: &Clock,
        request: &[u8],
        intended_ns: u64,
        sent_ns: u64,
        deadline_ns: u64,
    ) -> Step {
        let Some(stream) = self.stream.as_mut() else {
            return Step::Fault(ErrorKind::Connect);
        };
        if let Err(e) = stream.write_all(request) {
            return Step::Fault(io_kind(&e));
        }
        let mut resp = Response::new(intended_ns, sent_ns, self.expect_stream);
        loop {
            // Hand every buffered byte to the reader first.
            loop {
                let input = &self.buf[self.start..self.end];
                match self.reader.feed(input) {
                    Err(_) => return Step::Fault(ErrorKind::Malformed),
                    Ok((used, event)) => {
                        self.start += used;
                        match event {
                            None if used == 0 => break,
                            None => {}
                            Some(ev) => {
                                if let Some(step) = resp.apply(ev, clock) {
                                    return step;
                                }
                            }
                        }
                    }
                }
            }
            // Keep what was not consumed at the front of the buffer.
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                return Step::Fault(ErrorKind::Malformed);
            }
            let now = clock.now_ns();
            if now >= deadline_ns {
                return Step::Fault(ErrorKind::Timeout);
            }
            let Some(stream) = self.stream.as_mut() else {
                return Step::Fault(ErrorKind::Reset);
            };
            let wait = Duration::from_nanos((deadline_ns - now).max(1_000));
            if stream.set_read_timeout(Some(wait)).is_err() {
                return Step::Fault(ErrorKind::Reset);
            }
            match stream.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    // EOF: a read-until-close body ends here; anything else was cut.
                    return match self.reader.finish_eof() {
                        Ok(Some(ev)) => resp
                            .apply(ev, clock)
                            .unwrap_or(Step::Fault(ErrorKind::Reset)),
                        Ok(None) | Err(_) => {
                            if self.expect_stream && resp.status.is_some() {
                                Step::Fault(ErrorKind::StreamCut)
                            } else {
                                Step::Fault(ErrorKind::Reset)
                            }
                        }
                    };
                }
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let kind = io_kind(&e);
                    if kind == ErrorKind::Reset && self.expect_stream && resp.status.is_some() {
                        return Step::Fault(ErrorKind::StreamCut);
                    }
                    return Step::Fault(kind);
                }
            }
        }
    }
}

enum Step {
    Complete { keep_alive: bool, outcome: Outcome },
    Fault(ErrorKind),
}

/// What one exchange has seen of its response so far.
struct Response {
    status: Option<u16>,
    timing: StreamTiming,
    gaps: Vec<u64>,
    stream_error: bool,
    expect_stream: bool,
}

impl Response {
    fn new(intended_ns: u64, sent_ns: u64, expect_stream: bool) -> Response {
        Response {
            status: None,
            timing: StreamTiming::new(intended_ns, sent_ns),
            gaps: Vec::new(),
            stream_error: false,
            expect_stream,
        }
    }

    /// Applies one reader event; returns the end of the exchange when it ended.
    fn apply(&mut self, ev: ReadEvent, clock: &Clock) -> Option<Step> {
        match ev {
            ReadEvent::Head { status } => self.status = Some(status),
            ReadEvent::Content => {
                if let Some(gap) = self.timing.on_content(clock.now_ns()) {
                    self.gaps.push(gap);
                }
            }
            ReadEvent::Usage(n) => self.timing.on_usage(n),
            ReadEvent::StreamError => self.stream_error = true,
            ReadEvent::Done => self.timing.on_done(clock.now_ns()),
            ReadEvent::Complete { keep_alive, .. } => {
                let outcome = match Finish::for_response(
                    self.status,
                    self.stream_error,
                    self.expect_stream,
                ) {
                    Some(Finish::Status(code)) => Outcome::Status(code),
                    Some(Finish::Error(kind)) => Outcome::Error(kind),
                    Some(_) => Outcome::Ok,
                    None => Outcome::Stream {
                        timing: self.timing,
                        gaps: std::mem::take(&mut self.gaps),
                    },
                };
                return Some(Step::Complete {
                    keep_alive,
                    outcome,
                });
            }
        }
        None
    }
}

/// Classifies an I/O error of an established connection.
pub(crate) fn io_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => ErrorKind::Timeout,
        io::ErrorKind::ConnectionRefused => ErrorKind::Connect,
        _ => ErrorKind::Reset,
    }
}
