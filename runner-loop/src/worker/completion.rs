//! The ring's completions, demultiplexed to their slot, and the deadlines:
//! the periodic scan and the hard end.

use std::io;

use metronome_core::engine::HandshakeFailure;
use metronome_core::exchange::GAP_CAP;
use metronome_core::measure::{ErrorKind, Unsent};
use metronome_core::plan::{Model, WarmUp, FRESH_SETTLE_NS};

use crate::ring::{Completion, Ring};

use super::{State, Worker};

impl<R: Ring> Worker<'_, R> {
    pub(super) fn on_completion(&mut self, c: Completion) -> io::Result<()> {
        if let Completion::Send { slot, res } = c {
            self.conns[slot].tx_busy = false;
            // Plain bytes as they leave; over TLS the plaintext is counted
            // as rustls takes it (`tls_send`, `h2_flush`).
            if res > 0 && self.conns[slot].tls.is_none() {
                self.transferred(0, res as usize);
            }
        }
        if self.h2.is_some() {
            return self.h2_completion(c);
        }
        if self.h3.is_some() {
            return self.h3_completion(c);
        }
        // TLS: ciphertext becomes plaintext (or nothing) before the
        // handlers below, which see what plain HTTP would have given.
        let c = match c {
            Completion::Recv { slot, res } if self.conns[slot].tls.is_some() => {
                match self.tls_recv(slot, res)? {
                    Some(res) => Completion::Recv { slot, res },
                    None => return Ok(()),
                }
            }
            Completion::Send { slot, res } if self.conns[slot].tls.is_some() => {
                match self.tls_sent(slot, res)? {
                    Some(res) => Completion::Send { slot, res },
                    None => return Ok(()),
                }
            }
            other => other,
        };
        match c {
            Completion::Timer => {
                self.timer_fired();
                Ok(())
            }
            Completion::Closed { slot } => self.closed_now(slot),
            Completion::Connect { slot, res } => {
                if self.connected(slot, res)? {
                    return Ok(());
                }
                let now = self.clock.now_ns();
                if self.model == Model::Open && self.plan.warm_up != WarmUp::Off {
                    // Still "connecting" for the pool until it has settled.
                    let c = &mut self.conns[slot];
                    c.state = State::Fresh;
                    c.deadline_ns = now + FRESH_SETTLE_NS;
                    c.start = 0;
                    c.end = 0;
                    self.next_deadline_ns = self.next_deadline_ns.min(now + FRESH_SETTLE_NS);
                    return self.arm_recv(slot, 0);
                }
                self.settled(slot)
            }
            Completion::Send { slot, res } => {
                let len = self.plan.requests[self.conns[slot].job.request].len();
                let conn = &mut self.conns[slot];
                conn.sending = false;
                match conn.state {
                    // The connection failed under the send (the server
                    // closed or reset it): a response it sent first, such
                    // as an early error status before closing (RFC 9112
                    // section 9.5), still arrives through the armed recv,
                    // which then meets the close, as on the std engine.
                    State::Busy if res < 0 && self.ring.recv_pending(slot) => Ok(()),
                    State::Busy if res < 0 => self.fault(slot, errno_kind(-res)),
                    State::Busy => {
                        conn.sent_bytes += res as usize;
                        if conn.sent_bytes < len {
                            conn.sending = true;
                            let (request, off) = (conn.job.request, conn.sent_bytes);
                            self.ring.send(slot, request, off)?;
                        } else if conn.early {
                            // Sent whole: now the bytes that came before it.
                            conn.early = false;
                            return self.process(slot);
                        }
                        Ok(())
                    }
                    State::Settling if res < 0 || conn.sent_bytes + (res as usize) < len => {
                        self.close(slot)
                    }
                    State::Settling => self.ready(slot),
                    _ => Ok(()),
                }
            }
            Completion::Recv { slot, res } => {
                match self.conns[slot].state {
                    State::Busy => {}
                    State::Idle | State::Settling | State::Fresh => {
                        return self.idle_event(slot, res)
                    }
                    _ => return Ok(()),
                }
                if res > 0 {
                    self.transferred(res as usize, 0);
                    self.conns[slot].end += res as usize;
                    return self.process(slot);
                }
                if res == -libc::EINTR || res == -libc::EAGAIN {
                    let end = self.conns[slot].end;
                    return self.arm_recv(slot, end);
                }
                if res < 0 {
                    let kind = self.conns[slot].exchange.handle_fault(errno_kind(-res));
                    return self.fault(slot, kind);
                }
                // End of file: a read-until-close body ends here; anything else was cut.
                let now = self.clock.now_ns();
                let gaps = &mut self.gaps[slot * GAP_CAP..(slot + 1) * GAP_CAP];
                match self.conns[slot].exchange.handle_eof(now, gaps) {
                    Ok(()) => self.complete(slot, now, false),
                    Err(kind) => self.fault(slot, kind),
                }
            }
        }
    }

    /// A timer that ended the wait tells how late the ring's timers wake:
    /// the adaptive spin slice follows it.
    pub(super) fn timer_fired(&mut self) {
        let due = self.timer_due_ns.take();
        if let (Some(woke), Some(due)) = (self.woke_ns, due) {
            if woke >= due {
                self.tuner.observe(woke - due);
            }
        }
    }

    /// A connect of `slot` ended with `res`: a failure is counted and the
    /// pool regrows; over TLS the handshake starts. True when handled
    /// here; false: a plain connection is open (its connect time recorded).
    fn connected(&mut self, slot: usize, res: i32) -> io::Result<bool> {
        if res < 0 {
            self.connecting -= 1;
            self.ring.close(slot);
            self.conns[slot].state = State::Free;
            self.connect_failed(slot)?;
            self.grow()?;
            return Ok(true);
        }
        let now = self.clock.now_ns();
        let connect_ns = now.saturating_sub(self.conns[slot].connect_at_ns);
        if let Some(tls) = &self.opts.tls {
            // Still "connecting" until the handshake is done.
            self.out.setup.connect.record(connect_ns);
            self.tls_start(slot, tls, now)?;
            return Ok(true);
        }
        self.out.setup.opened(connect_ns, None, false);
        Ok(false)
    }

    /// HTTP/2: the completions of a slot go to `h2`'s handlers, TLS
    /// translated first as for HTTP/1.1.
    fn h2_completion(&mut self, c: Completion) -> io::Result<()> {
        match c {
            Completion::Timer => {
                self.timer_fired();
                Ok(())
            }
            Completion::Closed { slot } => self.closed_now(slot),
            Completion::Connect { slot, res } => {
                if self.connected(slot, res)? {
                    return Ok(());
                }
                // Still "connecting" until the server's SETTINGS.
                self.h2_greet(slot, 0)
            }
            Completion::Send { slot, res } => {
                if self.conns[slot].tls.is_some() {
                    match self.tls_sent(slot, res)? {
                        Some(res) => self.h2_sent(slot, res),
                        None => self.h2_sent(slot, 0),
                    }
                } else {
                    self.h2_sent(slot, res)
                }
            }
            Completion::Recv { slot, res } => {
                if self.conns[slot].tls.is_some() {
                    match self.tls_recv(slot, res)? {
                        Some(res) => self.h2_recv(slot, res),
                        None => Ok(()),
                    }
                } else {
                    self.h2_recv(slot, res)
                }
            }
        }
    }

    /// Timeouts of requests past their deadline; settling sends past it;
    /// closed-model reconnects due. Recomputes the earliest deadline.
    pub(super) fn scan(&mut self, now: u64) -> io::Result<()> {
        self.next_deadline_ns = u64::MAX;
        for slot in 0..self.conns.len() {
            let c = &self.conns[slot];
            match (c.state, c.retry_at_ns) {
                (State::Idle | State::Handshaking | State::Draining, _) if self.h3.is_some() => {
                    self.h3_due(slot, now, self.hard_end_ns)?
                }
                (State::Handshaking, _) if now >= c.deadline_ns => {
                    self.handshake_failed(slot, HandshakeFailure::Timeout)?
                }
                (State::Greeting, _) if now >= c.deadline_ns => self.h2_greet_failed(slot)?,
                (State::Handshaking | State::Fresh | State::Greeting, _) if now < c.deadline_ns => {
                    self.next_deadline_ns = self.next_deadline_ns.min(c.deadline_ns)
                }
                (State::Fresh, _) => self.settled(slot)?,
                (State::Idle, _) if self.h2.is_some() => self.h2_scan(slot, now)?,
                (State::Busy, _) if now >= c.deadline_ns => self.fault(slot, ErrorKind::Timeout)?,
                (State::Busy, _) => {
                    self.next_deadline_ns = self.next_deadline_ns.min(c.deadline_ns)
                }
                // A response that completed while its request was still
                // being sent (an early response): the send has until the
                // request's deadline, else the connection is dropped
                // (charged to no request; the response was recorded).
                (State::Settling, _) if now >= c.deadline_ns => self.close(slot)?,
                (State::Settling, _) => {
                    self.next_deadline_ns = self.next_deadline_ns.min(c.deadline_ns)
                }
                (State::Free, Some(t)) if now >= t => {
                    self.conns[slot].retry_at_ns = None;
                    if now < self.plan.end_ns() && !self.control.stopped() {
                        self.connect(slot)?;
                    }
                }
                (State::Free, Some(t)) => self.next_deadline_ns = self.next_deadline_ns.min(t),
                _ => {}
            }
        }
        Ok(())
    }

    /// The hard end: requests in flight time out, waiting ones were never sent.
    pub(super) fn expire_all(&mut self, now: u64) -> io::Result<()> {
        for slot in 0..self.conns.len() {
            match self.conns[slot].state {
                State::Idle if self.h2.is_some() => self.h2_expire(slot)?,
                State::Idle | State::Draining if self.h3.is_some() => self.h3_expire(slot)?,
                State::Busy => self.fault(slot, ErrorKind::Timeout)?,
                _ => {}
            }
        }
        while let Some(job) = self.waiting.pop_front() {
            self.in_flight -= 1;
            self.never_sent(job, now, Unsent::Timeout);
        }
        Ok(())
    }
}

/// The kind of an errno of an established connection (core's rule).
fn errno_kind(errno: i32) -> ErrorKind {
    ErrorKind::of_io(&io::Error::from_raw_os_error(errno))
}
