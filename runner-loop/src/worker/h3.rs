//! HTTP/3 on the ring (`--http3`): each connection slot is a connected UDP
//! socket carrying one QUIC connection, [`metronome_quic::H3Client`], the
//! sans-IO HTTP/3 client every engine drives. Every protocol decision is
//! that client's (QUIC, the request frames, the responses read into core's
//! `StreamExchange`, the server's control and QPACK streams, GOAWAY,
//! timeouts); this file moves datagrams between it and the ring, reads the
//! clock, fires the client's timers and books each stream's end with the
//! rules HTTP/2 uses (`streams`: admission by free stream slot, [`Ends`]).
//!
//! Datagrams arrive through a `RecvMsg` re-armed after each completion
//! (stamped when the completion is handled, as TCP reads are; a GRO run is
//! split into its datagrams) and leave through one `SendMsg` per slot at a
//! time, a GSO run of up to [`MAX_DATAGRAMS`] when the kernel has GSO.
//! QUIC's timers are folded into the worker's deadlines: the earliest of a
//! slot's timer and its streams' timeouts wakes the deadline scan.
//!
//! Connections are handshaken before the clock (`threads`) or, when one is
//! replaced during the run, here, through the ring (`Handshaking` until the
//! client is live; the connect timeout is the handshake's).

use std::io;
use std::net::UdpSocket;
use std::time::Instant;

use metronome_core::engine::tls::TlsFailure;
use metronome_core::engine::HandshakeFailure;
use metronome_core::measure::Unsent;
use metronome_core::plan::Plan;
use metronome_core::pool::AfterGoaway;
use metronome_quic::{Config, H3Client, Refused, Request, State as Quic};

use super::streams::{ends, Ends};
use super::{Job, State, Worker};
use crate::ring::{connected_udp, Ring, UdpCaps, GSO_MAX_SEGMENTS};

/// Each HTTP/3 slot's send buffer: one GSO run of datagrams.
pub(crate) const TX_BYTES: usize = 64 * 1024;
/// Datagrams per send at most: a GSO run that fits the send buffer with
/// datagrams of up to 1 500 bytes.
const MAX_DATAGRAMS: usize = if TX_BYTES / 1500 < GSO_MAX_SEGMENTS {
    TX_BYTES / 1500
} else {
    GSO_MAX_SEGMENTS
};

/// One HTTP/3 connection.
pub(crate) type H3 = H3Client<Job>;

/// A connection handshaken before the clock: its socket and its client.
pub(crate) type Opened = (UdpSocket, Box<H3>);

/// The worker's HTTP/3 state: a client per connection slot.
pub(super) struct H3State {
    cfg: Config,
    links: Vec<Option<Box<H3>>>,
    /// What each slot's socket can do (GSO, GRO).
    caps: Vec<UdpCaps>,
    /// When each slot's QUIC timer is due (clock ns; `u64::MAX`: none).
    timers: Vec<u64>,
    /// Datagrams from `poll_transmit`, copied into the ring's send buffer.
    scratch: Vec<u8>,
    /// SSE gaps dropped beyond a stream's storage by the connections
    /// closed so far.
    dropped_gaps: u64,
}

impl H3State {
    /// Everything for `slots` connections, when the run speaks HTTP/3
    /// (`cfg`, checked with the plan's HTTP/3 requests by `threads`).
    pub(super) fn new(plan: &Plan<'_>, cfg: Option<&Config>, slots: usize) -> Option<H3State> {
        let cfg = cfg.filter(|_| plan.wire.streams().is_some())?.clone();
        Some(H3State {
            cfg,
            links: (0..slots).map(|_| None).collect(),
            caps: vec![UdpCaps::default(); slots],
            timers: vec![u64::MAX; slots],
            scratch: Vec::with_capacity(TX_BYTES),
            dropped_gaps: 0,
        })
    }

    /// SSE gaps dropped over the run (closed connections and open ones).
    pub(super) fn dropped_gaps(&self) -> u64 {
        let open: u64 = self.links.iter().flatten().map(|c| c.dropped_gaps()).sum();
        self.dropped_gaps + open
    }
}

impl<R: Ring> Worker<'_, R> {
    /// The connection `opened` before the clock, in `slot` (its recv is
    /// armed when the event loop starts).
    pub(super) fn h3_adopt(&mut self, slot: usize, (sock, client): Opened) {
        let caps = self.ring.adopt_udp(slot, sock);
        if let Some(h3) = self.h3.as_mut() {
            h3.links[slot] = Some(client);
            h3.caps[slot] = caps;
        }
        self.conns[slot].listed = true;
    }

    /// Whether `slot` can open one more stream now.
    pub(super) fn h3_free(&self, slot: usize) -> bool {
        self.conns[slot].state == State::Idle
            && self
                .h3
                .as_ref()
                .and_then(|h3| h3.links[slot].as_ref())
                .is_some_and(|c| c.free() > 0)
    }

    /// Opens a new connection in the free `slot`: a connected UDP socket
    /// and a client whose handshake starts now, through the ring.
    pub(super) fn h3_connect(&mut self, slot: usize) -> io::Result<()> {
        self.conns[slot].on_demand = false;
        let Some(h3) = self.h3.as_mut() else {
            return Ok(());
        };
        let opened = connected_udp(h3.cfg.remote())
            .and_then(|sock| H3::connect(&h3.cfg, Instant::now()).map(|c| (sock, c)));
        let (sock, client) = match opened {
            Ok(o) => o,
            // No socket (e.g. out of descriptors): as a refused connect.
            Err(_) => {
                self.conns[slot].state = State::Free;
                return self.connect_failed(slot);
            }
        };
        h3.caps[slot] = self.ring.adopt_udp(slot, sock);
        h3.links[slot] = Some(Box::new(client));
        self.ring.recv_dgram(slot)?;
        let now = self.clock.now_ns();
        let deadline = now.saturating_add(self.plan.connect_timeout_ns());
        let c = &mut self.conns[slot];
        c.state = State::Handshaking;
        c.connect_at_ns = now;
        c.shake_at_ns = now;
        c.deadline_ns = deadline;
        c.unused = true;
        self.connecting += 1;
        self.next_deadline_ns = self.next_deadline_ns.min(deadline);
        self.h3_drive(slot)
    }

    /// Sends `job` on a new stream of `slot` (taken off the idle list by
    /// the caller, listed again while it has a free stream slot).
    pub(super) fn h3_start(&mut self, slot: usize, job: Job) -> io::Result<()> {
        let now = self.clock.now_ns();
        self.conns[slot].listed = false;
        if self.too_late(&job, now) {
            self.relist(slot);
            return Ok(());
        }
        let (Some(streams), Some(h3)) = (self.plan.wire.streams(), self.h3.as_mut()) else {
            return Ok(());
        };
        let Some(client) = h3.links[slot].as_mut() else {
            self.waiting.push_front(job);
            return Ok(());
        };
        let r = streams.requests[job.request];
        let request = Request {
            block: r.block,
            body: r.body,
        };
        match client.start(job, request, now) {
            Ok(()) => {
                let max = client.server_max_streams();
                self.out.setup.streams(
                    client.in_flight(),
                    max.map(|m| u32::try_from(m).unwrap_or(u32::MAX)),
                );
            }
            Err(Refused::NoStream(job)) => {
                // The connection cannot take it after all: back to the front.
                self.waiting.push_front(job);
                self.relist(slot);
                return Ok(());
            }
            Err(Refused::TooLarge { job, limit }) => {
                // Larger than the server takes, on any connection to it.
                self.note(metronome_quic::too_large(limit));
                self.in_flight -= 1;
                self.never_sent(job, now, Unsent::TooLarge);
                self.relist(slot);
                return Ok(());
            }
        }
        let deadline = now
            .saturating_add(self.plan.timeout_ns)
            .min(self.hard_end_ns);
        self.conns[slot].unused = false;
        self.next_deadline_ns = self.next_deadline_ns.min(deadline);
        self.count_sent(&job, now);
        self.h3_flush(slot)?;
        self.relist(slot);
        Ok(())
    }

    /// Hands the client's next datagrams to the ring, unless a send of
    /// the slot is in flight (its completion sends the next).
    fn h3_flush(&mut self, slot: usize) -> io::Result<()> {
        if self.tx_pending(slot) {
            return Ok(());
        }
        let Some(h3) = self.h3.as_mut() else {
            return Ok(());
        };
        let Some(client) = h3.links[slot].as_mut() else {
            return Ok(());
        };
        let most = if h3.caps[slot].gso { MAX_DATAGRAMS } else { 1 };
        let Some((len, segment)) = client.poll_transmit(Instant::now(), most, &mut h3.scratch)
        else {
            return Ok(());
        };
        let len = len.min(TX_BYTES);
        self.ring.tx(slot)[..len].copy_from_slice(&h3.scratch[..len]);
        self.conns[slot].tx_busy = true;
        self.ring
            .send_dgrams(slot, 0, len, (segment < len).then_some(segment))
    }

    /// HTTP/3: the completions of a slot.
    pub(super) fn h3_completion(&mut self, c: crate::ring::Completion) -> io::Result<()> {
        use crate::ring::Completion;
        match c {
            Completion::Timer => {
                self.timer_fired();
                Ok(())
            }
            Completion::Closed { slot } => self.closed_now(slot),
            // HTTP/3 slots never connect through the ring.
            Completion::Connect { .. } => Ok(()),
            Completion::Send { slot, res } => match self.conns[slot].state {
                // An ICMP refusal reported to the send rather than the recv.
                State::Idle | State::Handshaking | State::Draining
                    if res == -libc::ECONNREFUSED =>
                {
                    self.h3_socket_failed(slot, res)
                }
                // Else a datagram the kernel refused is a lost packet:
                // QUIC sends it again. The next ones go out.
                State::Idle | State::Handshaking | State::Draining => self.h3_drive(slot),
                _ => Ok(()),
            },
            Completion::Recv { slot, res } => self.h3_recv(slot, res),
        }
    }

    /// A recv of `slot` completed with `res`: its datagrams go to the
    /// client, stamped now.
    fn h3_recv(&mut self, slot: usize, res: i32) -> io::Result<()> {
        let state = self.conns[slot].state;
        if !matches!(state, State::Idle | State::Handshaking | State::Draining) {
            return Ok(());
        }
        if res == -libc::EINTR || res == -libc::EAGAIN || res == -libc::ENOMEM {
            return self.ring.recv_dgram(slot);
        }
        if res < 0 {
            // The socket failed (an ICMP refusal: nothing on that port).
            return self.h3_socket_failed(slot, res);
        }
        let now = self.clock.now_ns();
        let instant = Instant::now();
        self.transferred(res as usize, 0);
        let segment = self.ring.gro_segment(slot).unwrap_or(res as usize).max(1);
        if let Some(h3) = self.h3.as_mut() {
            if let Some(client) = h3.links[slot].as_mut() {
                for d in self.ring.buf(slot)[..res as usize].chunks(segment) {
                    client.datagram(instant, now, d);
                }
            }
        }
        self.ring.recv_dgram(slot)?;
        self.h3_drive(slot)
    }

    /// The socket of `slot` failed with `-errno`: a handshake fails as a
    /// refused connect; a live connection ends its streams (reset).
    fn h3_socket_failed(&mut self, slot: usize, res: i32) -> io::Result<()> {
        if self.conns[slot].state == State::Handshaking {
            self.conns[slot].on_demand = true;
            self.connect_failed(slot)?;
            self.close(slot)?;
            return self.grow();
        }
        // Worded as the std engine's reader says it.
        let note = format!(
            "HTTP/3: the UDP socket failed: {}",
            io::Error::from_raw_os_error(-res)
        );
        self.note(note);
        if let Some(client) = self.h3_client(slot) {
            client.close(Instant::now());
        }
        self.h3_drive(slot)
    }

    /// The slot's connection is closed: its client goes (its streams were
    /// booked).
    pub(super) fn h3_drop(&mut self, slot: usize) {
        if let Some(h3) = self.h3.as_mut() {
            if let Some(client) = h3.links[slot].take() {
                h3.dropped_gaps += client.dropped_gaps();
            }
            h3.timers[slot] = u64::MAX;
        }
    }

    fn h3_client(&mut self, slot: usize) -> Option<&mut H3> {
        self.h3.as_mut()?.links[slot].as_deref_mut()
    }

    /// After the client of `slot` was fed, fired or its send completed:
    /// book its streams' ends, follow its state (live, going away, failed,
    /// closed), send what it owes and note its next timer.
    pub(super) fn h3_drive(&mut self, slot: usize) -> io::Result<()> {
        let now = self.clock.now_ns();
        let retries = self.h3_book(slot, now);
        let state = self.conns[slot].state;
        let Some(client) = self.h3_client(slot) else {
            return Ok(());
        };
        let quic = client.state();
        match (state, quic) {
            (State::Handshaking, Quic::Handshaking) => {}
            (State::Handshaking, Quic::Live | Quic::GoingAway) => {
                let shake = now.saturating_sub(self.conns[slot].shake_at_ns);
                self.out.setup.opened(shake, Some(shake), false);
                self.out.setup.negotiated(true, Some(b"h3"));
                self.h3_flush(slot)?;
                self.h3_keep(slot)?;
                // Counted open, then it takes waiting requests.
                return self.settled(slot);
            }
            (State::Handshaking, Quic::Closed) => {
                let kind = client
                    .handshake_error()
                    .and_then(|e| TlsFailure::of(&e).map(|f| f.kind))
                    .unwrap_or(HandshakeFailure::Protocol);
                return self.handshake_failed(slot, kind);
            }
            (_, Quic::Closed) => {
                if let Some(lost) = client.lost() {
                    let text = lost.text.clone();
                    self.note(text);
                }
                self.unlist(slot);
                // Its last datagrams (a CONNECTION_CLOSE) leave first: the
                // slot closes once no send is in flight.
                self.h3_flush(slot)?;
                if self.tx_pending(slot) {
                    return Ok(());
                }
                self.close(slot)?;
                return self.drain_waiting();
            }
            (State::Idle, Quic::GoingAway) if self.goaway == AfterGoaway::RetireAndReopen => {
                // Retired (core's `after_goaway`): it drains beside the
                // next connection, which opens now in a spare slot.
                // (Draining then replaced, it would stay `Idle` with no
                // free stream until the client closes it: `Quic::Closed`.)
                self.unlist(slot);
                self.open -= 1;
                let c = &mut self.conns[slot];
                c.state = State::Draining;
                c.retire = true;
                self.h3_flush(slot)?;
                self.h3_keep(slot)?;
                return self.drain_waiting();
            }
            (_, Quic::Live | Quic::GoingAway) => {}
            (_, Quic::Handshaking) => {}
        }
        self.h3_flush(slot)?;
        self.h3_keep(slot)?;
        if self.conns[slot].state == State::Idle {
            self.streams_ready(slot)?;
            if retries > 0 || quic == Quic::GoingAway {
                self.drain_waiting()?;
            }
        }
        Ok(())
    }

    /// Keeps the next timer of `slot` among the worker's deadlines. (Its
    /// recv is re-armed by `h3_recv` alone, once the datagrams are fed: a
    /// recv completion reaped but not yet handled still owns the buffer.)
    fn h3_keep(&mut self, slot: usize) -> io::Result<()> {
        let clock = self.clock;
        if let Some(h3) = self.h3.as_mut() {
            let due = h3.links[slot]
                .as_mut()
                .and_then(|c| c.poll_timeout())
                .map_or(u64::MAX, |t| clock.ns_at(t));
            h3.timers[slot] = due;
            self.next_deadline_ns = self.next_deadline_ns.min(due);
        }
        Ok(())
    }

    /// Books every stream end the client of `slot` has, as HTTP/2's are
    /// booked; returns how many went back to the queue to retry.
    fn h3_book(&mut self, slot: usize, now: u64) -> usize {
        let mut retries = 0;
        let Some(h3) = self.h3.as_mut() else {
            return 0;
        };
        let Some(client) = h3.links[slot].as_mut() else {
            return 0;
        };
        // HTTP/3 keeps its streams' gaps itself: no gap slot comes back.
        let mut ends = ends!(self, &mut Vec::new(), &mut retries);
        while let Some(e) = client.poll_end() {
            ends.book(e, now);
        }
        retries
    }

    /// The deadline scan's visit of `slot`: a handshake past the connect
    /// timeout fails; QUIC's timers due fire; streams past their timeout
    /// (or the run's hard end at `hard_end_ns`) end as timeouts.
    pub(super) fn h3_due(&mut self, slot: usize, now: u64, hard_end_ns: u64) -> io::Result<()> {
        let c = &self.conns[slot];
        if c.state == State::Handshaking {
            if now >= c.deadline_ns {
                return self.handshake_failed(slot, HandshakeFailure::Timeout);
            }
            self.next_deadline_ns = self.next_deadline_ns.min(c.deadline_ns);
        }
        let timeout_ns = self.plan.timeout_ns;
        let Some(h3) = self.h3.as_mut() else {
            return Ok(());
        };
        let due = h3.timers[slot];
        let Some(client) = h3.links[slot].as_mut() else {
            return Ok(());
        };
        if now >= due {
            client.handle_timeout(Instant::now(), now);
        }
        let next = client.expire(now, timeout_ns, hard_end_ns);
        self.next_deadline_ns = self.next_deadline_ns.min(next);
        self.h3_drive(slot)
    }

    /// The hard end: every stream of `slot` ends as a timeout.
    pub(super) fn h3_expire(&mut self, slot: usize) -> io::Result<()> {
        let now = self.clock.now_ns();
        self.h3_due(slot, now, now)
    }

    /// The run is over: every open connection is closed (H3_NO_ERROR),
    /// its CONNECTION_CLOSE handed to the ring.
    pub(super) fn h3_leave(&mut self) -> io::Result<()> {
        for slot in 0..self.conns.len() {
            if !matches!(
                self.conns[slot].state,
                State::Idle | State::Handshaking | State::Draining
            ) {
                continue;
            }
            if let Some(client) = self.h3_client(slot) {
                client.close(Instant::now());
            }
            let now = self.clock.now_ns();
            self.h3_book(slot, now);
            self.h3_flush(slot)?;
        }
        self.ring.submit()
    }

    /// One line for the report's warnings, once.
    fn note(&mut self, line: String) {
        if !self.out.warnings.contains(&line) {
            self.out.warnings.push(line);
        }
    }
}
