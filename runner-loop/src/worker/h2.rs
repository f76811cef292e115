//! HTTP/2 on the ring (`--http2-prior-knowledge`, `--http2`): each
//! connection slot carries up to its stream limit of requests at once.
//! Every protocol decision is core's: [`Connection`] for the connection,
//! one [`StreamExchange`] per stream slot for the response and its timing
//! (so SSE works as over HTTP/1.1, and what core's `Finish` classifies is
//! classified alike); this file moves bytes, reads the clock and keeps the
//! books.
//!
//! Admission is by stream slot: a connection with a free stream slot (its
//! server's `MAX_CONCURRENT_STREAMS`, `--max-streams`, room in its output
//! buffer) is on the worker's idle list, so core's pool rule counts it as
//! idle; a due request waits, or the pool grows, only when every slot of
//! every connection is busy. Frames leave through a per-connection staging
//! buffer copied into the ring's send buffer (plain) or handed to rustls
//! (TLS) whenever no send is in flight. Everything here is allocated in
//! [`H2State::new`], before the clock.

use crate::ring::Ring;
use std::io::{self, Write};

use metronome_core::exchange::{compact, GAP_CAP};
use metronome_core::flight::{End, FlightJob};
use metronome_core::h2::{Config, Connection, Flights, SendError, Step};
use metronome_core::measure::Unsent;
use metronome_core::plan::{Plan, Protocol, MAX_STREAMS, READ_BUF_BYTES};
use metronome_core::pool::AfterGoaway;

use super::streams::{ends, Ends};
use super::{Job, State, Worker};

/// Stream slots per connection (the most any plan may ask).
pub(crate) const SLOTS: usize = MAX_STREAMS as usize;
/// Each connection's staging buffer for outgoing frames, and the ring's
/// send buffer of an h2c slot.
pub(crate) const OUT_BYTES: usize = 32 * 1024;

/// The client connection of one slot.
pub(crate) type H2 = Connection<SLOTS>;

/// A pre-opened connection greeted before the clock (core's greeting).
pub(crate) type Greeted = metronome_core::engine::Greeted<SLOTS>;

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

/// One connection slot's HTTP/2 state.
pub(super) struct Link {
    conn: Box<H2>,
    /// Its requests in flight and how each ends: core's rules.
    flights: Box<Flights<Job, SLOTS>>,
    /// Frames written, not yet handed to the ring (or rustls): `out[..out_len]`.
    out: Box<[u8]>,
    out_len: usize,
    /// A body was cut short by the buffer (not a window): push on the next send.
    body_pending: bool,
}

impl Link {
    fn new(plan: &Plan<'_>) -> Link {
        Link {
            conn: Box::new(H2::new(Config::DEFAULT)),
            flights: Box::new(Flights::for_plan(plan)),
            out: vec![0u8; OUT_BYTES].into_boxed_slice(),
            out_len: 0,
            body_pending: false,
        }
    }

    /// Pushes the bodies still owed into the staging buffer (core decides
    /// what the windows allow); notes a body cut short by the buffer.
    fn push_bodies(&mut self, plan_h2: &metronome_core::plan::Streams<'_>) {
        let pushed = self.flights.push_bodies(
            &mut self.conn,
            |r| plan_h2.requests[r].body,
            &mut self.out[self.out_len..],
        );
        self.out_len += pushed.written;
        self.body_pending |= pushed.buffer_full;
    }
}

/// The worker's HTTP/2 state: a [`Link`] per connection slot and the gap
/// storage of SSE streams (a pool: one buffer per request in flight).
pub(super) struct H2State {
    pub(super) links: Vec<Link>,
    gaps: Box<[u64]>,
    gap_free: Vec<u32>,
    /// Streams per connection at most (`--max-streams`, else all slots).
    cap: usize,
    /// Output room a new stream needs: the largest request's HEADERS.
    room: usize,
    /// A request was larger than a server's `SETTINGS_MAX_HEADER_LIST_SIZE`:
    /// core's error, for the run's warning (written after the clock).
    too_large: Option<SendError>,
}

impl H2State {
    /// Everything for `slots` connections and `max_in_flight` requests.
    pub(super) fn new(plan: &Plan<'_>, slots: usize, max_in_flight: usize) -> Option<H2State> {
        let h2 = plan.wire.streams()?;
        let sse = matches!(plan.protocol, Protocol::OpenAiSse);
        let pool = if sse {
            (slots * SLOTS).min(max_in_flight.max(1))
        } else {
            0
        };
        let room = h2
            .requests
            .iter()
            .map(|r| r.block.len() + 9 * (1 + r.block.len() / 16_384))
            .max()
            .unwrap_or(0)
            + 64;
        Some(H2State {
            links: (0..slots).map(|_| Link::new(plan)).collect(),
            gaps: vec![0u64; pool * GAP_CAP].into_boxed_slice(),
            gap_free: (0..pool as u32).rev().collect(),
            cap: match h2.max_streams {
                0 => SLOTS,
                n => (n as usize).min(SLOTS),
            },
            room: room.min(OUT_BYTES),
            too_large: None,
        })
    }

    /// Inter-token gaps dropped over the run.
    pub(super) fn dropped_gaps(&self) -> u64 {
        self.links.iter().map(|l| l.flights.dropped_gaps()).sum()
    }

    /// The run's warning when a request was too large for the server.
    pub(super) fn warning(&self) -> Option<String> {
        self.too_large.map(|e| format!("HTTP/2: {e}: not sent"))
    }
}

impl<R: Ring> Worker<'_, R> {
    /// The pre-opened, greeted connection `greeted` in `slot`.
    pub(super) fn h2_adopt(&mut self, slot: usize, greeted: Greeted) {
        let tls = self.conns[slot].tls.is_some();
        let n = greeted.rest.len().min(READ_BUF_BYTES - 1);
        let buf = if tls {
            &mut self.plain[slot * READ_BUF_BYTES..(slot + 1) * READ_BUF_BYTES]
        } else {
            self.ring.buf(slot)
        };
        buf[..n].copy_from_slice(&greeted.rest[..n]);
        self.conns[slot].start = 0;
        self.conns[slot].end = n;
        if let Some(s) = self.conns[slot].tls.as_mut() {
            // Plaintext rustls still holds goes through the first "recv".
            self.conns[slot].held = s
                .process_new_packets()
                .is_ok_and(|st| st.plaintext_bytes_to_read() > 0);
        }
        if let Some(h2) = self.h2.as_mut() {
            h2.links[slot].conn = greeted.conn;
            h2.links[slot].flights.reset();
        }
        self.conns[slot].listed = true;
    }

    /// Whether `slot` can open one more stream now.
    pub(super) fn h2_free(&self, slot: usize) -> bool {
        let Some(h2) = self.h2.as_ref() else {
            return false;
        };
        let l = &h2.links[slot];
        self.conns[slot].state == State::Idle
            && l.conn.can_start()
            && l.flights.open() < l.conn.max_streams().min(h2.cap)
            && OUT_BYTES - l.out_len >= h2.room
    }

    /// Sends `job` on a new stream of `slot` (taken off the idle list by
    /// the caller, listed again here while it has a free stream slot).
    pub(super) fn h2_start(&mut self, slot: usize, job: Job) -> io::Result<()> {
        let now = self.clock.now_ns();
        self.conns[slot].listed = false;
        if self.too_late(&job, now) {
            self.relist(slot);
            return Ok(());
        }
        let Some(plan_h2) = self.plan.wire.streams() else {
            return Ok(());
        };
        let request = plan_h2.requests[job.request];
        let Some(h2) = self.h2.as_mut() else {
            return Ok(());
        };
        let l = &mut h2.links[slot];
        l.conn.watch_fields(self.plan.checks);
        let started = match l.flights.free_slot() {
            Some(fi) => l
                .conn
                .start_planned(&request, &mut l.out[l.out_len..])
                .map(|r| (fi, r)),
            None => Err(SendError::StreamLimit),
        };
        if let Err(e @ SendError::TooLarge { .. }) = started {
            // No connection to this server takes it: never sent.
            h2.too_large = Some(e);
            self.in_flight -= 1;
            self.never_sent(job, now, Unsent::TooLarge);
            self.relist(slot);
            return Ok(());
        }
        let Ok((fi, (stream, written))) = started else {
            // The connection cannot take it after all: back to the front.
            self.waiting.push_front(job);
            self.relist(slot);
            return Ok(());
        };
        l.out_len += written;
        self.out
            .setup
            .streams(l.conn.open_streams(), l.conn.server_max_streams());
        let gap = h2.gap_free.pop();
        let l = &mut h2.links[slot];
        let deadline = l
            .flights
            .start(fi, stream, job, now, self.plan.timeout_ns, gap)
            .min(self.hard_end_ns);
        if !request.body.is_empty() {
            l.push_bodies(&plan_h2);
        }
        self.conns[slot].unused = false;
        self.next_deadline_ns = self.next_deadline_ns.min(deadline);
        self.count_sent(&job, now);
        self.h2_flush(slot)?;
        self.relist(slot);
        Ok(())
    }

    /// Writes what the connection owes, then hands the staged frames to
    /// the ring (or rustls) unless a send is in flight.
    pub(super) fn h2_flush(&mut self, slot: usize) -> io::Result<()> {
        let busy = self.tx_pending(slot);
        let Some(h2) = self.h2.as_mut() else {
            return Ok(());
        };
        let l = &mut h2.links[slot];
        while l.conn.wants_transmit() {
            let n = l.conn.poll_transmit(&mut l.out[l.out_len..]);
            if n == 0 {
                break;
            }
            l.out_len += n;
        }
        if l.out_len == 0 {
            return Ok(());
        }
        let c = &mut self.conns[slot];
        if let Some(session) = c.tls.as_mut() {
            let n = session.writer().write(&l.out[..l.out_len]).unwrap_or(0);
            l.out.copy_within(n..l.out_len, 0);
            l.out_len -= n;
            self.transferred(0, n);
            return self.tls_flush(slot);
        }
        if busy {
            return Ok(());
        }
        let tx = self.ring.tx(slot);
        let n = l.out_len.min(tx.len());
        tx[..n].copy_from_slice(&l.out[..n]);
        l.out.copy_within(n..l.out_len, 0);
        l.out_len -= n;
        c.tx_off = 0;
        c.tx_end = n;
        self.start_tx(slot, 0, n)
    }

    /// A send of `slot` completed with `res` (plain: bytes of the ring's
    /// send buffer; TLS: translated by `tls_sent`).
    pub(super) fn h2_sent(&mut self, slot: usize, res: i32) -> io::Result<()> {
        if !matches!(self.conns[slot].state, State::Idle | State::Greeting) {
            return Ok(());
        }
        if res < 0 {
            if self.conns[slot].state == State::Greeting {
                return self.h2_greet_failed(slot);
            }
            return self.h2_conn_failed(slot);
        }
        if self.conns[slot].tls.is_none() {
            let c = &mut self.conns[slot];
            c.tx_off += res as usize;
            if c.tx_off < c.tx_end {
                let (from, to) = (c.tx_off, c.tx_end);
                return self.start_tx(slot, from, to);
            }
        } else if self.tx_pending(slot) {
            return Ok(());
        }
        // Room again: bodies cut short by the buffer, then staged frames.
        if let (Some(h2), Some(plan_h2)) = (self.h2.as_mut(), self.plan.wire.streams()) {
            let l = &mut h2.links[slot];
            if std::mem::take(&mut l.body_pending) {
                l.push_bodies(&plan_h2);
            }
        }
        self.h2_flush(slot)?;
        if self.conns[slot].state == State::Idle {
            self.streams_ready(slot)?;
        }
        Ok(())
    }

    /// Starts the HTTP/2 greeting on the connected (and, over TLS,
    /// handshaken) `slot`: the preface and SETTINGS; it is usable once the
    /// server's SETTINGS arrive. `filled`: plaintext already read (TLS).
    pub(super) fn h2_greet(&mut self, slot: usize, filled: usize) -> io::Result<()> {
        if let Some(tls) = self.conns[slot].tls.as_ref() {
            if tls.alpn_protocol() != Some(&b"h2"[..]) {
                // The server does not speak HTTP/2 here (checked before the
                // clock for the first connections, with the message).
                return self
                    .handshake_failed(slot, metronome_core::engine::HandshakeFailure::Protocol);
            }
        }
        let now = self.clock.now_ns();
        let deadline = now.saturating_add(self.plan.connect_timeout_ns());
        let Some(h2) = self.h2.as_mut() else {
            return Ok(());
        };
        let l = &mut h2.links[slot];
        *l.conn = H2::new(Config::DEFAULT);
        l.flights.reset();
        l.out_len = 0;
        l.body_pending = false;
        let c = &mut self.conns[slot];
        c.state = State::Greeting;
        c.deadline_ns = deadline;
        c.start = 0;
        c.end = filled;
        c.unused = true;
        self.next_deadline_ns = self.next_deadline_ns.min(deadline);
        self.h2_flush(slot)?;
        self.h2_process(slot)
    }

    /// The greeting of `slot` failed (closed, timed out, not HTTP/2): as a
    /// refused connect, and replaced only when a request needs it.
    pub(super) fn h2_greet_failed(&mut self, slot: usize) -> io::Result<()> {
        self.conns[slot].on_demand = true;
        self.connect_failed(slot)?;
        self.close(slot)?;
        self.grow()
    }

    /// A recv of `slot` completed with `res` (plaintext over TLS).
    pub(super) fn h2_recv(&mut self, slot: usize, res: i32) -> io::Result<()> {
        let state = self.conns[slot].state;
        if !matches!(state, State::Idle | State::Greeting) {
            return Ok(());
        }
        if res == -libc::EINTR || res == -libc::EAGAIN {
            let end = self.conns[slot].end;
            return self.arm_recv(slot, end);
        }
        if res <= 0 {
            if state == State::Greeting {
                return self.h2_greet_failed(slot);
            }
            return self.h2_conn_failed(slot);
        }
        self.transferred(res as usize, 0);
        self.conns[slot].end += res as usize;
        self.h2_process(slot)
    }

    /// Feeds the buffered bytes of `slot` to its connection, one frame at a
    /// time, and each stream event to its exchange; then writes what is
    /// owed, re-arms the recv and hands out free stream slots.
    pub(super) fn h2_process(&mut self, slot: usize) -> io::Result<()> {
        let now = self.clock.now_ns();
        let Some(h2) = self.h2.as_mut() else {
            return Ok(());
        };
        let tls = self.conns[slot].tls.is_some();
        let buf = if tls {
            &mut self.plain[slot * READ_BUF_BYTES..(slot + 1) * READ_BUF_BYTES]
        } else {
            self.ring.buf(slot)
        };
        let c = &mut self.conns[slot];
        let H2State {
            links,
            gaps,
            gap_free,
            ..
        } = h2;
        let l = &mut links[slot];
        let mut ready = false;
        let mut unblocked = false;
        let mut failed = false;
        let mut retries = 0usize;
        let mut ends = ends!(self, gap_free, &mut retries);
        loop {
            let input = &buf[c.start..c.end];
            let (used, event) = match l.conn.handle_read(input) {
                Ok(r) => r,
                Err(_) => {
                    failed = true;
                    break;
                }
            };
            let frame = &input[..used];
            c.start += used;
            let Some(event) = event else {
                if used == 0 {
                    break;
                }
                continue;
            };
            let sink = &mut |end: End<'_, Job>| ends.book(end, now);
            match l
                .flights
                .on_event(now, event, frame, &mut l.conn, gaps, sink)
            {
                Step::Ready => ready = true,
                Step::Unblocked => unblocked = true,
                Step::None => {}
            }
        }
        if unblocked {
            if let Some(plan_h2) = self.plan.wire.streams() {
                l.push_bodies(&plan_h2);
            }
        }
        if !failed && compact(buf, &mut c.start, &mut c.end).is_err() {
            failed = true;
        }
        let (goaway, drained) = (l.conn.goaway().is_some(), l.flights.drained(&l.conn));
        let end = c.end;
        let state = c.state;
        if failed {
            return match state {
                State::Greeting => self.h2_greet_failed(slot),
                _ => self.h2_conn_failed(slot),
            };
        }
        self.h2_flush(slot)?;
        if drained {
            // Every stream it kept is done: replaced by a fresh connection.
            // It kept its place in the pool until now: core's
            // `after_goaway` without a spare slot (HTTP/2 has none here)
            // is `DrainThenReplace`.
            debug_assert_eq!(self.goaway, AfterGoaway::DrainThenReplace);
            self.unlist(slot);
            return self.close(slot).and_then(|()| self.drain_waiting());
        }
        if !self.ring.recv_pending(slot) {
            self.arm_recv(slot, end)?;
        }
        if state == State::Greeting {
            if ready {
                // Counted open, then it takes waiting requests.
                return self.settled(slot);
            }
            return Ok(());
        }
        self.streams_ready(slot)?;
        if retries > 0 || goaway {
            self.drain_waiting()?;
        }
        Ok(())
    }

    /// The connection of `slot` failed (closed, reset, a protocol error):
    /// its streams end as core's `Flights::connection_end` says; it is
    /// closed and replaced.
    pub(super) fn h2_conn_failed(&mut self, slot: usize) -> io::Result<()> {
        let now = self.clock.now_ns();
        if let Some(h2) = self.h2.as_mut() {
            let l = &mut h2.links[slot];
            let mut retries = 0;
            let mut ends = ends!(self, &mut h2.gap_free, &mut retries);
            l.flights
                .connection_end(&l.conn, &mut |end| ends.book(end, now));
        }
        self.unlist(slot);
        self.close(slot)?;
        self.drain_waiting()
    }

    /// Streams of `slot` due at `now` (their deadline, or the run's end at
    /// `hard_end_ns`) are cancelled (`RST_STREAM CANCEL`) and counted as
    /// timeouts (core's `Flights::expire`); the earliest deadline left is
    /// noted.
    fn h2_due(&mut self, slot: usize, now: u64, hard_end_ns: u64) -> io::Result<()> {
        let Some(h2) = self.h2.as_mut() else {
            return Ok(());
        };
        let l = &mut h2.links[slot];
        if l.flights.open() == 0 {
            return Ok(());
        }
        let mut retries = 0;
        let mut ends = ends!(self, &mut h2.gap_free, &mut retries);
        let before = l.flights.open();
        let next = l.flights.expire(now, hard_end_ns, &mut l.conn, &mut |end| {
            ends.book(end, now)
        });
        let expired = l.flights.open() < before;
        self.next_deadline_ns = self.next_deadline_ns.min(next);
        if expired {
            self.h2_flush(slot)?;
            if self.conns[slot].state == State::Idle {
                self.streams_ready(slot)?;
            }
        }
        Ok(())
    }

    /// Streams of `slot` past their deadline time out.
    pub(super) fn h2_scan(&mut self, slot: usize, now: u64) -> io::Result<()> {
        self.h2_due(slot, now, self.hard_end_ns)
    }

    /// The hard end: every stream of `slot` is cancelled, a timeout.
    pub(super) fn h2_expire(&mut self, slot: usize) -> io::Result<()> {
        let now = self.clock.now_ns();
        self.h2_due(slot, now, now)
    }
}
