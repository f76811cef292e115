//! HTTP/2 with prior knowledge (h2c) on the std engine: each connection
//! carries up to its stream limit of requests at once. Every protocol
//! decision is core's ([`Connection`] for the connection, [`StreamExchange`]
//! per stream); this file moves bytes, reads the clock and hands facts to
//! the collector.
//!
//! Two threads per connection: the *dispatcher* ([`dispatch`]) takes due
//! requests from the pacer's queue while its connection has a free stream
//! slot (it counts its free slots as idle for core's admission rule) and
//! writes their HEADERS and DATA; the *reader* ([`read`]) blocks on the
//! socket, stamps what arrives and feeds it to the connection and to
//! core's [`Flights`], which ends streams (their response complete, reset,
//! refused, or past their timeout). They share the connection under a
//! mutex. A refused stream goes back to the queue for one retry on a fresh
//! connection; the dispatcher reopens its connection once the old one has
//! no stream left.

mod dispatch;
mod read;

pub(crate) use dispatch::worker;

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use metronome_core::engine::tls::expect_h2;
use metronome_core::engine::{greet_h2, Greeted};
use metronome_core::exchange::GAP_CAP;
use metronome_core::flight::FlightJob;
use metronome_core::h2::{Config, Connection, Flights};
use metronome_core::plan::{Plan, Protocol, MAX_STREAMS};

use crate::conn::Opened;
use crate::queue::{lock, Job, Shared};
use crate::tls::Tls;

/// Stream slots per connection (the most any plan may ask).
const SLOTS: usize = MAX_STREAMS as usize;
/// Bytes of frames written at once (a request's HEADERS and DATA, or the
/// connection's own frames).
const OUT_BYTES: usize = 64 * 1024;

type H2 = Connection<SLOTS>;

impl FlightJob for Job {
    fn request(&self) -> usize {
        self.request
    }
    fn intended_ns(&self) -> u64 {
        self.intended_ns
    }
    fn retried(&self) -> bool {
        self.retried
    }
}

/// One connection's state, shared by its dispatcher and its reader.
struct Link {
    h2: Box<H2>,
    sock: Option<TcpStream>,
    /// The TLS session (h2 over TLS, ALPN `h2`).
    tls: Option<Box<rustls::ClientConnection>>,
    /// Its requests in flight and how each ends: core's rules.
    flights: Box<Flights<Job, SLOTS>>,
    /// Gap storage: [`GAP_CAP`] per stream slot for SSE, else none.
    gaps: Box<[u64]>,
    sse: bool,
    out: Box<[u8]>,
    /// The connection failed or was closed: reopen it.
    dead: bool,
    /// The dispatcher is leaving: the reader ends with the last stream.
    leaving: bool,
    /// The stream limit the plan sets (`--max-streams`, else [`SLOTS`]).
    cap: usize,
    /// This connection's free stream slots as counted in the queue's
    /// `idle` ([`Link::sync_idle`]).
    counted: usize,
    /// Bytes written and not yet counted in the run's traffic (whoever
    /// holds the link next with a clock reading counts them).
    written: usize,
}

impl Link {
    fn new(plan: &Plan<'_>, cap: usize) -> Link {
        let sse = matches!(plan.protocol, Protocol::OpenAiSse);
        Link {
            h2: Box::new(H2::new(Config::DEFAULT)),
            sock: None,
            tls: None,
            flights: Box::new(Flights::for_plan(plan)),
            gaps: vec![0u64; if sse { SLOTS * GAP_CAP } else { 0 }].into_boxed_slice(),
            sse,
            out: vec![0u8; OUT_BYTES].into_boxed_slice(),
            dead: true,
            leaving: false,
            cap,
            counted: 0,
            written: 0,
        }
    }

    fn in_flight(&self) -> usize {
        self.flights.open()
    }

    /// Streams this connection may still open now.
    fn free(&self) -> usize {
        if self.dead || self.leaving || !self.h2.can_start() {
            return 0;
        }
        let limit = self.h2.max_streams().min(self.cap);
        limit.saturating_sub(self.in_flight())
    }

    /// Brings this connection's share of the queue's `idle` count to its
    /// free stream slots now, so core's pool rule sees every free slot of
    /// every connection as an idle connection: called by the dispatcher
    /// when it opens a connection or starts a stream, and by the reader
    /// after each read (streams ended, SETTINGS, GOAWAY, a failure). The
    /// link's lock is held (the lock order is link, then queue).
    fn sync_idle(&mut self, shared: &Shared) {
        let free = self.free();
        if free != self.counted {
            let mut q = lock(&shared.queue);
            q.idle = (q.idle + free).saturating_sub(self.counted);
            self.counted = free;
        }
    }

    /// Writes whatever the connection owes (acks, window updates, resets).
    fn flush(&mut self) -> io::Result<()> {
        while self.h2.wants_transmit() {
            let n = self.h2.poll_transmit(&mut self.out);
            if n == 0 {
                break;
            }
            self.write_out(n)?;
        }
        Ok(())
    }

    fn write_out(&mut self, n: usize) -> io::Result<()> {
        match self.sock.as_ref() {
            Some(s) => {
                send(s, self.tls.as_deref_mut(), &self.out[..n]).inspect(|()| self.written += n)
            }
            None => Err(io::Error::from(io::ErrorKind::NotConnected)),
        }
    }

    /// Counts the bytes written since the last call at `now`.
    fn count_written(&mut self, traffic: &crate::traffic::Traffic, now: u64) {
        traffic.sent(now, std::mem::take(&mut self.written));
    }

    /// Sends what the server's windows allow of the bodies still owed
    /// (core's [`Flights::push_bodies`]), one output buffer at a time: each
    /// write is whole (blocking) when it returns, so the buffer is free
    /// again and the bodies go on until all are sent or windows stop them.
    /// A window stop ends with core's `Step::Unblocked` once the window
    /// grows, which calls this again; a full buffer never waits for an
    /// event.
    fn push_bodies(&mut self, plan: &Plan<'_>) -> io::Result<()> {
        let Some(h2plan) = plan.wire.streams() else {
            return Ok(());
        };
        loop {
            let pushed =
                self.flights
                    .push_bodies(&mut self.h2, |r| h2plan.requests[r].body, &mut self.out);
            if pushed.written > 0 {
                self.write_out(pushed.written)?;
            }
            if !pushed.buffer_full || pushed.written == 0 {
                return Ok(());
            }
        }
    }
}

/// A connection opened and through its SETTINGS exchange; bytes read after
/// the server's SETTINGS are kept for the reader.
pub(crate) struct Opening {
    sock: TcpStream,
    tls: Option<Box<rustls::ClientConnection>>,
    h2: Box<H2>,
    rest: Vec<u8>,
    opened: Opened,
}

impl Opening {
    /// How it was opened.
    pub(crate) fn opened(&self) -> Opened {
        self.opened
    }
}

/// Opens an h2c connection: the TCP connect, the preface and SETTINGS, and
/// the server's SETTINGS read, all within `timeout`.
///
/// # Errors
/// The connect error, or a protocol error as `InvalidData`.
pub(crate) fn open(
    addr: SocketAddr,
    timeout: Duration,
    target: Option<&Tls>,
) -> io::Result<Opening> {
    let timeout = timeout.max(Duration::from_millis(1));
    let started = Instant::now();
    let sock = TcpStream::connect_timeout(&addr, timeout)?;
    let connect_ns = started.elapsed().as_nanos() as u64;
    sock.set_nodelay(true)?;
    let mut handshake_ns = None;
    let mut resumed = false;
    let mut agreed = None;
    let mut tls = match target {
        None => None,
        Some(target) => {
            let shaking = Instant::now();
            let mut conn = crate::tls::client(target)?;
            resumed = crate::tls::handshake(target, &mut conn, &sock, started + timeout)?;
            handshake_ns = Some(shaking.elapsed().as_nanos() as u64);
            agreed = Some(crate::tls::agreed(&conn));
            expect_h2(&conn)?;
            Some(Box::new(conn))
        }
    };
    let deadline = started + timeout;
    let Greeted { conn: h2, rest } = match tls.as_deref_mut() {
        None => greet_h2(&mut &sock, &sock, deadline)?,
        Some(t) => greet_h2(&mut rustls::Stream::new(t, &mut &sock), &sock, deadline)?,
    };
    Ok(Opening {
        sock,
        tls,
        h2,
        rest,
        opened: Opened {
            connect_ns,
            handshake_ns,
            resumed,
            agreed,
        },
    })
}

/// Writes `bytes` whole: on the socket, or through the TLS session.
fn send(
    sock: &TcpStream,
    tls: Option<&mut rustls::ClientConnection>,
    bytes: &[u8],
) -> io::Result<()> {
    let Some(conn) = tls else {
        return (&*sock).write_all(bytes);
    };
    conn.writer().write_all(bytes)?;
    while conn.wants_write() {
        conn.write_tls(&mut &*sock)?;
    }
    Ok(())
}

/// Reads plaintext through the TLS session into `dst`: `Ok(0)` is the
/// close; `WouldBlock` (not `blocking`) when no whole record is there.
fn tls_read(
    conn: &mut rustls::ClientConnection,
    sock: &TcpStream,
    dst: &mut [u8],
    blocking: bool,
) -> io::Result<usize> {
    loop {
        match conn.reader().read(dst) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
            Err(e) => return Err(e),
        }
        let n = if blocking {
            conn.read_tls(&mut &*sock)?
        } else {
            conn.read_tls(&mut crate::tls::NowIo(sock))?
        };
        if n == 0 {
            return Ok(0);
        }
        let processed = conn.process_new_packets();
        while conn.wants_write() {
            if conn.write_tls(&mut crate::tls::NowIo(sock)).is_err() {
                break;
            }
        }
        processed.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    }
}
