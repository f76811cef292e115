//! One blocking keep-alive connection and one request/response exchange on
//! it. Every protocol decision is core's [`Exchange`]; this file moves
//! bytes and reads the clock.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use metronome_core::exchange::{Exchange, Feed, GAP_CAP};
use metronome_core::ledger::Finish;
use metronome_core::measure::{ErrorKind, StreamTiming};

use crate::clock::Clock;

/// Size of a connection's read buffer: a response head must fit in it.
pub(crate) const READ_BUF: usize = 64 * 1024;

/// How one request ended, owned: sent from a connection thread to the
/// collector, which records it through [`Outcome::as_finish`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Outcome {
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

impl Outcome {
    fn from_finish(finish: Finish<'_>) -> Outcome {
        match finish {
            Finish::Ok => Outcome::Ok,
            Finish::Status(code) => Outcome::Status(code),
            Finish::Error(kind) => Outcome::Error(kind),
            Finish::Stream { timing, gaps } => Outcome::Stream {
                timing: *timing,
                gaps: gaps.to_vec(),
            },
        }
    }

    /// The borrowed form a ledger records.
    pub(crate) fn as_finish(&self) -> Finish<'_> {
        match self {
            Outcome::Ok => Finish::Ok,
            Outcome::Status(code) => Finish::Status(*code),
            Outcome::Error(kind) => Finish::Error(*kind),
            Outcome::Stream { timing, gaps } => Finish::Stream { timing, gaps },
        }
    }
}

/// A connection, its read buffer and its exchange.
pub(crate) struct Conn {
    stream: Option<TcpStream>,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    exchange: Exchange,
    gaps: Box<[u64]>,
}

impl Conn {
    /// Opens a connection to `addr` within `timeout`.
    ///
    /// # Errors
    /// The connect error (refused, unreachable, timed out).
    pub(crate) fn connect(
        addr: SocketAddr,
        timeout: Duration,
        expect_stream: bool,
    ) -> io::Result<Conn> {
        let mut conn = Conn {
            stream: None,
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            start: 0,
            end: 0,
            exchange: Exchange::new(expect_stream),
            gaps: vec![0u64; GAP_CAP].into_boxed_slice(),
        };
        conn.reopen(addr, timeout)?;
        Ok(conn)
    }

    /// True when the connection is open and usable for the next request.
    pub(crate) fn is_open(&self) -> bool {
        self.stream.is_some()
    }

    /// Inter-token gaps that did not fit, over the life of this connection.
    pub(crate) fn dropped_gaps(&self) -> u64 {
        self.exchange.dropped_gaps()
    }

    /// Closes the connection (the next exchange needs [`Conn::reopen`]).
    fn close(&mut self) {
        if let Some(s) = self.stream.take() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        self.start = 0;
        self.end = 0;
        self.exchange.reset_connection();
    }

    /// (Re)opens the connection.
    ///
    /// # Errors
    /// The connect error.
    pub(crate) fn reopen(&mut self, addr: SocketAddr, timeout: Duration) -> io::Result<()> {
        self.close();
        let s = TcpStream::connect_timeout(&addr, timeout.max(Duration::from_millis(1)))?;
        s.set_nodelay(true)?;
        self.stream = Some(s);
        Ok(())
    }

    /// Sends `request` now and reads its response until it completes, fails
    /// or `deadline_ns` (on `clock`) passes. Returns when it ended and how.
    /// The connection is closed after any fault or a `Connection: close`.
    pub(crate) fn exchange(
        &mut self,
        clock: &Clock,
        request: &[u8],
        intended_ns: u64,
        sent_ns: u64,
        deadline_ns: u64,
    ) -> (u64, Outcome) {
        self.exchange.begin(intended_ns, sent_ns);
        let result = self.exchange_inner(clock, request, deadline_ns);
        let done = clock.now_ns();
        match result {
            Ok(keep_alive) => {
                let outcome = Outcome::from_finish(self.exchange.finish(&self.gaps));
                if !keep_alive {
                    self.close();
                }
                (done, outcome)
            }
            Err(kind) => {
                self.close();
                (done, Outcome::Error(kind))
            }
        }
    }

    /// Moves bytes until the response is complete (`Ok(keep_alive)`) or failed.
    fn exchange_inner(
        &mut self,
        clock: &Clock,
        request: &[u8],
        deadline_ns: u64,
    ) -> Result<bool, ErrorKind> {
        let Some(stream) = self.stream.as_mut() else {
            return Err(ErrorKind::Connect);
        };
        stream.write_all(request).map_err(|e| io_kind(&e))?;
        loop {
            // Hand every buffered byte to the exchange first.
            let input = &self.buf[self.start..self.end];
            match self
                .exchange
                .handle_read(clock.now_ns(), input, &mut self.gaps)?
            {
                Feed::Complete {
                    consumed,
                    keep_alive,
                } => {
                    self.start += consumed;
                    return Ok(keep_alive);
                }
                Feed::NeedMore { consumed } => self.start += consumed,
            }
            // Keep what was not consumed at the front of the buffer.
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                return Err(ErrorKind::Malformed);
            }
            let now = clock.now_ns();
            if now >= deadline_ns {
                return Err(ErrorKind::Timeout);
            }
            let Some(stream) = self.stream.as_mut() else {
                return Err(ErrorKind::Reset);
            };
            let wait = Duration::from_nanos((deadline_ns - now).max(1_000));
            if stream.set_read_timeout(Some(wait)).is_err() {
                return Err(ErrorKind::Reset);
            }
            match stream.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    // EOF: a read-until-close body ends here; anything else was cut.
                    self.exchange.handle_eof(clock.now_ns(), &mut self.gaps)?;
                    return Ok(false);
                }
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.exchange.handle_fault(io_kind(&e))),
            }
        }
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
