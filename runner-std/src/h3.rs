//! HTTP/3 over QUIC on the std engine (`--http3`). Every protocol decision
//! is `metronome-quic`'s [`H3Client`] (QUIC from `quinn-proto`, the
//! framing and QPACK from core, the server's control stream, GOAWAY,
//! errors closed with their code), the same connection the io_uring
//! engine drives; this module owns the UDP socket, the threads, the clock
//! and the queue: [`quic`] the socket and the handshake, [`dispatch`] the
//! requests out, [`read`] the datagrams in and the streams' ends; here,
//! the state they share ([`Link`]). The submodules take this module's
//! imports whole (`use super::*`).
//!
//! Two threads per connection, as for HTTP/2: the *dispatcher*
//! ([`worker`]) takes due requests from the pacer's queue while its
//! connection has a free stream slot and starts each on a new stream; the
//! *reader* ([`read_loop`]) blocks on the UDP socket, stamps each
//! datagram, feeds it to the connection and books the streams that ended
//! (answered, reset, past their timeout, refused by a GOAWAY: sent again
//! once on a fresh connection, or with the connection). They share the
//! connection under a mutex. A connection closed (by the server, an idle
//! timeout, a protocol error, or drained after a GOAWAY) ends its streams
//! and the dispatcher opens a new one; at a GOAWAY it opens the new one at
//! once, the old one draining beside it with its reader.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use metronome_core::measure::{ThreadStats, Unsent};
use metronome_core::plan::Plan;
use metronome_core::pool::{after_goaway, AfterGoaway};
use metronome_quic::{Config, H3Client, Refused, Request, State, DATAGRAM};

use crate::clock::{thread_cpu_ns, Clock};
use crate::collector::Fact;
use crate::conn::Opened;
use crate::queue::{lock, Job, Shared};
use crate::tls::Tls;

/// The longest the reader blocks before it looks at deadlines and timers.
const SLICE: Duration = Duration::from_millis(2);

mod dispatch;
mod quic;
mod read;

pub(crate) use dispatch::worker;
pub(crate) use quic::{open, Opening};
use read::read_loop;

/// One connection's state, shared by its dispatcher and its reader.
struct Link {
    h3: Option<H3Client<Job>>,
    sock: Option<UdpSocket>,
    /// Datagrams to send, one at a time.
    tx: Vec<u8>,
    /// Bytes sent and not yet counted in the run's traffic.
    written: usize,
    /// The connection is closed: reopen it.
    dead: bool,
    /// The dispatcher is leaving: the reader ends with the last stream.
    leaving: bool,
    /// This connection's free stream slots as counted in the queue's
    /// `idle` ([`Link::sync_idle`]).
    counted: usize,
    /// Its handshake, under way when it was handed over in 0-RTT, started
    /// at this instant ([`Opening::shaking`]).
    shaking: Option<Instant>,
}

impl Link {
    /// Streams this connection may still open now.
    fn free(&self) -> usize {
        match &self.h3 {
            Some(h3) if !self.dead && !self.leaving => h3.free(),
            _ => 0,
        }
    }

    /// Brings this connection's share of the queue's `idle` count to its
    /// free stream slots (as HTTP/2's `Link::sync_idle`).
    fn sync_idle(&mut self, shared: &Shared) {
        let free = self.free();
        if free != self.counted {
            let mut q = lock(&shared.queue);
            q.idle = (q.idle + free).saturating_sub(self.counted);
            self.counted = free;
        }
    }

    /// Sends every datagram the connection owes at `now`.
    ///
    /// # Errors
    /// The socket failed (other than a datagram the kernel cannot take:
    /// a lost packet, which QUIC sends again).
    fn flush(&mut self, now: Instant) -> io::Result<()> {
        let (Some(h3), Some(sock)) = (self.h3.as_mut(), self.sock.as_ref()) else {
            return Ok(());
        };
        while let Some((len, segment)) = h3.poll_transmit(now, 1, &mut self.tx) {
            for d in self.tx[..len].chunks(segment.max(1)) {
                match sock.send(d) {
                    Ok(_) => self.written += d.len(),
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                        ) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }

    fn count_written(&mut self, shared: &Shared, now: u64) {
        shared.traffic.sent(now, std::mem::take(&mut self.written));
    }
}

/// A connection dropped: what it counted that outlives it (SSE gaps
/// dropped, its 0-RTT, a 0-RTT accepted counted as a resumption) goes to
/// the run.
fn retire(h3: &H3Client<Job>, shared: &Shared, tx: &mpsc::Sender<Fact>) {
    shared
        .dropped_gaps
        .fetch_add(h3.dropped_gaps(), Ordering::Relaxed);
    // A handshake that failed after its 0-RTT hand-over (the others
    // failed in `open`, and were counted there).
    if let Some(kind) = h3
        .handshake_error()
        .and_then(|e| crate::handshake_failure(&e))
    {
        let _ = tx.send(Fact::HandshakeFailed(kind));
    }
    let zero_rtt = h3.zero_rtt();
    if zero_rtt.attempted > 0 {
        let mut setup = Box::<metronome_core::engine::Setup>::default();
        setup.zero_rtt = zero_rtt;
        setup.resumed = zero_rtt.accepted;
        let _ = tx.send(Fact::Setup(setup));
    }
}
