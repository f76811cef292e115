//! Connection slots: their states, and how a slot is opened, made ready,
//! closed and replaced. The slot index is also the ring's slot.

use crate::ring::Ring;
use std::io;

use metronome_core::exchange::{Exchange, Idle};
use metronome_core::measure::Unsent;
use metronome_core::plan::{Model, READ_BUF_BYTES};
use rustls::ClientConnection;

use super::{Job, Worker};

/// Closed model: wait this long before reconnecting after a refused connect.
const RETRY_NS: u64 = 1_000_000;

/// Where a connection slot is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    /// No socket.
    Free,
    /// An asynchronous connect is in flight.
    Connecting,
    /// Connected; the TLS handshake is in flight (https only).
    Handshaking,
    /// Connected during the run and watched for
    /// [`FRESH_SETTLE_NS`](metronome_core::plan::FRESH_SETTLE_NS) before its
    /// first request: bytes that arrive now were asked for by no request
    /// (a server writing on accept); they close it, counted as unsolicited.
    Fresh,
    /// HTTP/2: connected (and handshaken), the preface and SETTINGS sent;
    /// usable once the server's SETTINGS arrive.
    Greeting,
    /// Open, no request (HTTP/2: open, whatever its streams).
    Idle,
    /// A request is in flight.
    Busy,
    /// The response is complete but its send completion has not arrived.
    Settling,
    /// Shut down; waiting for the ring's `Closed`.
    Closing,
    /// HTTP/3: a GOAWAY retired it. Its streams below the GOAWAY's ID
    /// finish; it is neither counted open nor given requests (the next
    /// connection opens beside it, in a spare slot), and is closed, not
    /// replaced, once drained.
    Draining,
}

/// One connection slot; the slot index is also the ring's slot.
#[derive(Debug)]
pub(super) struct Conn {
    pub(super) state: State,
    pub(super) job: Job,
    pub(super) sent_ns: u64,
    pub(super) deadline_ns: u64,
    pub(super) sent_bytes: usize,
    pub(super) sending: bool,
    /// Unconsumed bytes of the read buffer are `start..end`.
    pub(super) start: usize,
    pub(super) end: usize,
    /// The request/response state machine (core's).
    pub(super) exchange: Exchange,
    /// Closed model: the global worker index, and the next try of a refused connect.
    pub(super) worker: u64,
    pub(super) sends: u64,
    pub(super) retry_at_ns: Option<u64>,
    /// Open and no request sent on it yet.
    pub(super) unused: bool,
    /// Bytes that came before the first request are kept in the buffer,
    /// to be read (and refused) as its response once it is sent: a server
    /// that writes on accept (core's `Exchange::distrust_first_responses`).
    pub(super) early: bool,
    /// Replace this connection only when a request needs it: the server
    /// closed it before its first use (replacing it at once could loop as
    /// fast as the server closes).
    pub(super) on_demand: bool,
    /// The TLS session (https only).
    pub(super) tls: Option<Box<ClientConnection>>,
    /// TLS: ciphertext in the ring's send buffer is `tx_off..tx_end`.
    pub(super) tx_off: usize,
    pub(super) tx_end: usize,
    /// A send from the send buffer is in flight or its completion not yet
    /// handled ([`Worker::tx_pending`]).
    pub(super) tx_busy: bool,
    /// TLS: where in the plaintext buffer the armed recv delivers.
    pub(super) plain_at: usize,
    /// TLS: the armed "recv" is a `Nop` delivering plaintext rustls held back.
    pub(super) held: bool,
    /// When the connect (then the handshake) started, clock ns.
    pub(super) connect_at_ns: u64,
    pub(super) shake_at_ns: u64,
    /// When it last joined the idle stack, clock ns.
    pub(super) idle_since_ns: u64,
    /// Closed by the pool rules: not replaced once closed.
    pub(super) retire: bool,
    /// HTTP/2 and HTTP/3: on the worker's idle list (a free stream slot).
    pub(super) listed: bool,
}

impl<R: Ring> Worker<'_, R> {
    /// Starts core's count of connects when requests still wait
    /// ([`Pool::to_open`](metronome_core::pool::Pool::to_open)): after a
    /// connect failed or a connection closed.
    pub(super) fn grow(&mut self) -> io::Result<()> {
        let n = self.pool.to_open(self.pool_state());
        self.open_more(n)
    }

    /// Starts `n` connects on free slots (fewer when none is free).
    pub(super) fn open_more(&mut self, n: u32) -> io::Result<()> {
        for _ in 0..n {
            match self.conns.iter().position(|c| c.state == State::Free) {
                Some(slot) => self.connect(slot)?,
                None => break,
            }
        }
        Ok(())
    }

    pub(super) fn connect(&mut self, slot: usize) -> io::Result<()> {
        if self.h3.is_some() {
            return self.h3_connect(slot);
        }
        self.conns[slot].on_demand = false;
        match self.ring.connect(slot) {
            Ok(()) => {
                self.conns[slot].connect_at_ns = self.clock.now_ns();
                self.conns[slot].state = State::Connecting;
                self.conns[slot].unused = true;
                self.connecting += 1;
                Ok(())
            }
            // No socket (e.g. out of descriptors): as a refused connect.
            Err(_) => {
                self.conns[slot].state = State::Free;
                self.connect_failed(slot)
            }
        }
    }

    pub(super) fn connect_failed(&mut self, slot: usize) -> io::Result<()> {
        let now = self.clock.now_ns();
        match self.model {
            Model::Closed { .. } => {
                let c = &mut self.conns[slot];
                c.retry_at_ns = Some(now + RETRY_NS);
                self.next_deadline_ns = self.next_deadline_ns.min(now + RETRY_NS);
                // The worker's next request finds no connection: never sent
                // (a closed loop has no request mix, so it has no name).
                self.ledger
                    .unsent(&mut self.out.tally(), now, usize::MAX, now, Unsent::Connect);
            }
            Model::Open => {
                // The request that would have used this connection is never sent.
                if let Some(job) = self.waiting.pop_front() {
                    self.in_flight -= 1;
                    self.never_sent(job, now, Unsent::Connect);
                }
            }
        }
        Ok(())
    }

    /// A recv on the idle (or settling) connection `slot` completed with
    /// `res`: the server closed it, timed it out (`408`) or sent bytes no
    /// request asked for. The connection is replaced; no request is charged.
    pub(super) fn idle_event(&mut self, slot: usize, res: i32) -> io::Result<()> {
        if res == -libc::EINTR || res == -libc::EAGAIN {
            return self.arm_recv(slot, 0);
        }
        let c = &self.conns[slot];
        if res > 0
            && c.state == State::Fresh
            && c.tls.is_none()
            && !c.exchange.distrusts_first_responses()
            && Exchange::handle_idle(&self.ring.buf(slot)[..res as usize]) == Idle::Unsolicited
        {
            // Bytes on a connection opened during the run, before its first
            // request: the server writes on accept, which the warm start's
            // settle missed (a loaded host). From now on, on every
            // connection of this thread, as when it saw it.
            self.ledger
                .unsolicited(&mut self.out.tally(), self.clock.now_ns());
            for c in &mut self.conns {
                c.exchange.distrust_first_responses();
            }
        }
        let c = &mut self.conns[slot];
        if res > 0 && c.unused && c.tls.is_none() && c.exchange.distrusts_first_responses() {
            // A server that writes on accept (core's warm start saw it):
            // the bytes stay in the buffer, to be read, and refused, as
            // the first request's response; the recv is armed again then.
            c.start = 0;
            c.end = res as usize;
            c.early = true;
            return Ok(());
        }
        let now = self.clock.now_ns();
        let idle = if res > 0 {
            let bytes = if self.conns[slot].tls.is_some() {
                &self.plain[slot * READ_BUF_BYTES..slot * READ_BUF_BYTES + res as usize]
            } else {
                &self.ring.buf(slot)[..res as usize]
            };
            Exchange::handle_idle(bytes)
        } else {
            Idle::Closed
        };
        match idle {
            Idle::Closed => self.ledger.idle_closed(&mut self.out.tally(), now),
            Idle::Unsolicited => self.ledger.unsolicited(&mut self.out.tally(), now),
        }
        // Closed (or written to) before its first use: replaced when a
        // request needs it, not at once.
        self.conns[slot].on_demand = self.conns[slot].unused;
        if self.conns[slot].state == State::Idle {
            self.idle.retain(|&s| s != slot);
        }
        self.close(slot)
    }

    /// `slot` is open and free: the next waiting request, the next closed-loop
    /// send, or the idle list.
    pub(super) fn ready(&mut self, slot: usize) -> io::Result<()> {
        if self.h2.is_some() || self.h3.is_some() {
            return self.streams_ready(slot);
        }
        self.conns[slot].state = State::Idle;
        // Watch the idle connection, a fresh one too: a close, a half-close,
        // a 408 or stray bytes are seen at once, before its (first) use.
        // A request sent on it gets its response through this recv.
        // Bytes kept before the first request (see `idle_event`) wait for it.
        if !self.ring.recv_pending(slot) && !self.conns[slot].early {
            let c = &mut self.conns[slot];
            c.start = 0;
            c.end = 0;
            self.arm_recv(slot, 0)?;
        }
        match self.model {
            Model::Closed { .. } => {
                let now = self.clock.now_ns();
                if now < self.plan.end_ns() && !self.control.stopped() {
                    self.closed_send(slot);
                }
                Ok(())
            }
            Model::Open => {
                if self.pool.close_on_free(self.pool_state()) {
                    // More open than the pool aims at (a refused probe's).
                    return self.retire(slot);
                }
                match self.waiting.pop_front() {
                    Some(job) => self.start(slot, job),
                    None => {
                        // On top of the idle stack: the next request takes
                        // the most recently used connection.
                        let c = &mut self.conns[slot];
                        c.idle_since_ns = self.clock.now_ns();
                        c.exchange.mark_idle();
                        self.idle.push(slot);
                        Ok(())
                    }
                }
            }
        }
    }

    /// Closes `slot`'s connection; it is replaced once closed.
    pub(super) fn close(&mut self, slot: usize) -> io::Result<()> {
        let c = &mut self.conns[slot];
        if matches!(c.state, State::Free | State::Closing | State::Connecting) {
            return Ok(());
        }
        if matches!(c.state, State::Handshaking | State::Fresh | State::Greeting) {
            self.connecting -= 1;
        }
        if matches!(c.state, State::Idle | State::Busy | State::Settling) {
            self.open -= 1;
        }
        c.start = 0;
        c.end = 0;
        c.early = false;
        c.sending = false;
        c.exchange.reset_connection();
        c.tls = None;
        if std::mem::take(&mut c.listed) {
            self.idle.retain(|&s| s != slot);
        }
        self.h3_drop(slot);
        let c = &mut self.conns[slot];
        c.tx_off = 0;
        c.tx_end = 0;
        // The ring reports no completion of a closing slot.
        c.tx_busy = false;
        c.held = false;
        if self.ring.close(slot) {
            self.closed_now(slot)
        } else {
            self.conns[slot].state = State::Closing;
            Ok(())
        }
    }

    /// Closes `slot` for the pool rules ([`Pool::close_on_free`],
    /// [`Pool::close_idle`]): between requests, and not replaced.
    ///
    /// [`Pool::close_on_free`]: metronome_core::pool::Pool::close_on_free
    /// [`Pool::close_idle`]: metronome_core::pool::Pool::close_idle
    pub(super) fn retire(&mut self, slot: usize) -> io::Result<()> {
        self.conns[slot].retire = true;
        self.pool_closed += 1;
        self.close(slot)
    }

    /// Closes the idle connections the pool rules say have been idle too
    /// long ([`Pool::close_idle`](metronome_core::pool::Pool::close_idle)),
    /// the least recently used (the bottom of the idle stack) first.
    pub(super) fn shrink_idle(&mut self, now: u64) -> io::Result<()> {
        while let Some(&lru) = self.idle.first() {
            let since = self.conns[lru].idle_since_ns;
            if !self.pool.close_idle(now, self.pool_state(), since) {
                break;
            }
            self.idle.remove(0);
            self.retire(lru)?;
        }
        Ok(())
    }

    /// `slot` has no socket any more: reconnect while there is work for it.
    pub(super) fn closed_now(&mut self, slot: usize) -> io::Result<()> {
        self.conns[slot].state = State::Free;
        if std::mem::take(&mut self.conns[slot].retire) {
            // Not replaced. HTTP/3: a drained connection's spare slot is
            // free again for the requests that wait.
            if self.h3.is_some() && !self.waiting.is_empty() {
                return self.grow();
            }
            return Ok(());
        }
        let wanted = match self.model {
            // A retry already planned (a failed handshake) waits its turn.
            Model::Closed { .. } => {
                self.clock.now_ns() < self.plan.end_ns()
                    && !self.control.stopped()
                    && self.conns[slot].retry_at_ns.is_none()
            }
            Model::Open => {
                !self.waiting.is_empty() || (self.scheduling && !self.conns[slot].on_demand)
            }
        };
        if wanted && self.clock.now_ns() < self.hard_end_ns {
            self.connect(slot)?;
        }
        Ok(())
    }

    /// A fresh connection is usable: counted open, then ready.
    pub(super) fn settled(&mut self, slot: usize) -> io::Result<()> {
        self.connecting -= 1;
        self.out.connections_opened += 1;
        self.open += 1;
        self.out.peak_connections = self.out.peak_connections.max(self.open);
        self.ready(slot)
    }
}
