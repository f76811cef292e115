//! TLS over the ring: rustls's buffered API, fed from and drained into the
//! ring's own buffers. Ciphertext arrives in the slot's read buffer and
//! leaves from its send buffer; plaintext goes to the slot's part of
//! `plain`. (rustls 0.23 allocates one buffer per record it encrypts and
//! per application-data record it decrypts, in either API: see docs/tls.md.)

use crate::ring::Ring;
use std::io::{self, Read, Write};

use metronome_core::engine::HandshakeFailure;
use metronome_core::measure::ErrorKind;
use metronome_core::plan::READ_BUF_BYTES;
use rustls::HandshakeKind;

use super::{State, Worker};
use crate::Tls;

impl<R: Ring> Worker<'_, R> {
    /// A connect completed on `slot` at `now`: start the TLS handshake.
    pub(super) fn tls_start(&mut self, slot: usize, tls: &Tls, now: u64) -> io::Result<()> {
        let session = match metronome_core::engine::tls::client(tls) {
            Ok(s) => s,
            Err(_) => return self.handshake_failed(slot, HandshakeFailure::Protocol),
        };
        let deadline = now.saturating_add(self.plan.connect_timeout_ns());
        let c = &mut self.conns[slot];
        c.tls = Some(Box::new(session));
        c.state = State::Handshaking;
        c.shake_at_ns = now;
        c.deadline_ns = deadline;
        c.start = 0;
        c.end = 0;
        self.next_deadline_ns = self.next_deadline_ns.min(deadline);
        self.tls_flush(slot)?;
        self.arm_recv(slot, 0)
    }

    /// The handshake on `slot` failed as `kind`: counted, closed; the
    /// request that waited for it is never sent (as after a refused connect).
    pub(super) fn handshake_failed(
        &mut self,
        slot: usize,
        kind: HandshakeFailure,
    ) -> io::Result<()> {
        self.out.setup.failed(kind);
        // Replaced only when a request needs it: a server that fails every
        // handshake must not turn the loop into a reconnect storm.
        self.conns[slot].on_demand = true;
        // As after a refused connect: the waiting request is never sent
        // (open), or the worker retries after a pause (closed).
        self.connect_failed(slot)?;
        self.close(slot)?;
        self.grow()
    }

    /// Arms the recv of `slot`; plaintext (TLS) will land at `filled`.
    pub(super) fn arm_recv(&mut self, slot: usize, filled: usize) -> io::Result<()> {
        let c = &mut self.conns[slot];
        if c.tls.is_none() {
            return self.ring.recv(slot, filled);
        }
        c.plain_at = filled;
        if c.held {
            // rustls holds plaintext that did not fit: deliver it first.
            return self.ring.recv_nop(slot);
        }
        self.ring.recv(slot, filled)
    }

    /// Hands the request to rustls and starts sending its records.
    pub(super) fn tls_send(&mut self, slot: usize, request: usize) -> io::Result<()> {
        let bytes = self.plan.requests[request];
        let Some(session) = self.conns[slot].tls.as_mut() else {
            return Ok(());
        };
        if session.writer().write_all(bytes).is_err() {
            return self.fault(slot, ErrorKind::Reset);
        }
        self.transferred(0, bytes.len());
        self.tls_flush(slot)
    }

    /// True while a send from `slot`'s send buffer is in flight or its
    /// completion has not been handled yet (a completion reaped in the same
    /// batch as an earlier one is not handled yet: the buffer and
    /// `tx_off..tx_end` still belong to it).
    pub(super) fn tx_pending(&self, slot: usize) -> bool {
        self.ring.send_pending(slot) || self.conns[slot].tx_busy
    }

    /// Starts a send of `tx(slot)[from..to]`; busy until its completion is handled.
    pub(super) fn start_tx(&mut self, slot: usize, from: usize, to: usize) -> io::Result<()> {
        self.conns[slot].tx_busy = true;
        self.ring.send_tx(slot, from, to)
    }

    /// Starts a send of what rustls has queued, unless one is in flight.
    pub(super) fn tls_flush(&mut self, slot: usize) -> io::Result<()> {
        if self.tx_pending(slot) {
            return Ok(());
        }
        let c = &mut self.conns[slot];
        let Some(session) = c.tls.as_mut() else {
            return Ok(());
        };
        let tx = self.ring.tx(slot);
        let mut end = 0;
        while session.wants_write() && end < tx.len() {
            match session.write_tls(&mut &mut tx[end..]) {
                Ok(0) | Err(_) => break,
                Ok(n) => end += n,
            }
        }
        c.tx_off = 0;
        c.tx_end = end;
        if end > 0 {
            self.start_tx(slot, 0, end)?;
        }
        Ok(())
    }

    /// A send of TLS records on `slot` ended with `res`. Returns what the
    /// plain-HTTP handler should see: an error as it is; once the whole
    /// request has left, the rest of its length; `None` meanwhile.
    pub(super) fn tls_sent(&mut self, slot: usize, res: i32) -> io::Result<Option<i32>> {
        if res < 0 {
            return Ok(Some(res));
        }
        let c = &mut self.conns[slot];
        c.tx_off += res as usize;
        if c.tx_off < c.tx_end {
            let (from, to) = (c.tx_off, c.tx_end);
            self.start_tx(slot, from, to)?;
            return Ok(None);
        }
        let more = c.tls.as_ref().is_some_and(|t| t.wants_write());
        if more {
            self.tls_flush(slot)?;
            return Ok(None);
        }
        let c = &self.conns[slot];
        if matches!(c.state, State::Busy | State::Settling) && c.sending {
            let len = self.plan.requests[c.job.request].len();
            return Ok(Some(len.saturating_sub(c.sent_bytes) as i32));
        }
        Ok(None)
    }

    /// A recv of ciphertext on `slot` ended with `res`. Returns what the
    /// plain-HTTP handler should see: plaintext bytes delivered at
    /// `plain_at`, 0 for the end (a close or `close_notify`), an error; or
    /// `None` when the records carried nothing for the application (the
    /// recv is armed again). The ciphertext was received at `plain_at` of
    /// the read buffer, into as much room as the plaintext buffer has left
    /// (plaintext is never longer than its records).
    pub(super) fn tls_recv(&mut self, slot: usize, res: i32) -> io::Result<Option<i32>> {
        let c = &mut self.conns[slot];
        let held = std::mem::take(&mut c.held);
        if c.state == State::Handshaking && (res == -libc::EINTR || res == -libc::EAGAIN) {
            self.arm_recv(slot, 0)?;
            return Ok(None);
        }
        if c.state == State::Handshaking && res <= 0 {
            // Reset or closed under the handshake.
            self.handshake_failed(slot, HandshakeFailure::Protocol)?;
            return Ok(None);
        }
        if res < 0 && !held {
            return Ok(Some(res));
        }
        let at = c.plain_at;
        let base = slot * READ_BUF_BYTES;
        let n = if held { 0 } else { res as usize };
        let mut closed = !held && n == 0;
        let mut got = 0usize;
        let Some(session) = c.tls.as_mut() else {
            return Ok(Some(res));
        };
        let cipher = self.ring.buf(slot);
        let mut input = &cipher[at..at + n];
        loop {
            let dst = &mut self.plain[base + at + got..base + READ_BUF_BYTES];
            let room = !dst.is_empty();
            if room {
                match session.reader().read(dst) {
                    Ok(0) => closed = true,
                    Ok(k) => got += k,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    // The peer closed without close_notify.
                    Err(_) => closed = true,
                }
            }
            if input.is_empty() {
                break;
            }
            if session.read_tls(&mut input).is_err() {
                // rustls holds plaintext that has no room: the response
                // outgrew the buffer.
                return Ok(Some(-libc::ENOBUFS));
            }
            match session.process_new_packets() {
                Ok(state) => closed |= state.peer_has_closed(),
                Err(e) => {
                    let _ = self.tls_flush(slot);
                    return self.tls_error(slot, &e);
                }
            }
        }
        // Plaintext that did not fit is delivered through the next recv.
        let more = session
            .process_new_packets()
            .is_ok_and(|s| s.plaintext_bytes_to_read() > 0);
        let handshaking = session.is_handshaking();
        let resumed = session.handshake_kind() == Some(HandshakeKind::Resumed);
        let (tls13, alpn) = metronome_core::engine::tls::agreed(session);
        self.conns[slot].held = more;
        // Handshake replies, key updates, alerts.
        self.tls_flush(slot)?;
        if self.conns[slot].state == State::Handshaking {
            if handshaking {
                if closed {
                    self.handshake_failed(slot, HandshakeFailure::Protocol)?;
                } else {
                    self.arm_recv(slot, 0)?;
                }
                return Ok(None);
            }
            let now = self.clock.now_ns();
            let shake = now.saturating_sub(self.conns[slot].shake_at_ns);
            self.out.setup.tls_handshake.record(shake);
            self.out.setup.resumed += u64::from(resumed);
            self.out.setup.negotiated(tls13, alpn);
            if self.h2.is_some() {
                // HTTP/2 (ALPN h2): still connecting until its SETTINGS.
                self.h2_greet(slot, got)?;
                return Ok(None);
            }
            self.connecting -= 1;
            self.out.connections_opened += 1;
            self.open += 1;
            self.out.peak_connections = self.out.peak_connections.max(self.open);
            self.ready(slot)?;
            return Ok(None);
        }
        if got > 0 {
            return Ok(Some(got as i32));
        }
        if closed {
            return Ok(Some(0));
        }
        // Session tickets and the like: nothing for the application.
        self.arm_recv(slot, at)?;
        Ok(None)
    }

    /// A TLS error on an established connection (or during its handshake).
    pub(super) fn tls_error(&mut self, slot: usize, e: &rustls::Error) -> io::Result<Option<i32>> {
        if self.conns[slot].state == State::Handshaking {
            let kind = metronome_core::engine::tls::TlsFailure::of(
                &metronome_core::engine::tls::classify(e, &[]),
            )
            .map_or(HandshakeFailure::Protocol, |f| f.kind);
            self.handshake_failed(slot, kind)?;
            return Ok(None);
        }
        Ok(Some(-libc::ECONNRESET))
    }
}
