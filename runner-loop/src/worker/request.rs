//! Requests: admission of a due request, its send, the bytes of its
//! response fed to the exchange, and how it ends (completed, failed,
//! retried or never sent).

use crate::ring::Ring;
use std::io;

use metronome_core::exchange::{compact, Feed, Finish, GAP_CAP};
use metronome_core::measure::{ErrorKind, Unsent};
use metronome_core::plan::{Model, READ_BUF_BYTES};
use metronome_core::pool::{Admit, PoolState};
use metronome_core::schedule::Shard;

use super::{State, Worker};

/// A request's place in the schedule and its clock.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Job {
    /// Index into the plan's request list.
    pub(super) request: usize,
    pub(super) intended_ns: u64,
    /// Sent once already, on a connection found closed before any response
    /// byte: this is its retry (never another).
    pub(super) retried: bool,
    /// When it began to wait for a connection (clock ns), if it did.
    pub(super) waited_since: Option<u64>,
}

impl<R: Ring> Worker<'_, R> {
    /// The pool as core's [`Pool`](metronome_core::pool::Pool) rules see it.
    pub(super) fn pool_state(&self) -> PoolState {
        PoolState {
            idle: self.idle.len() as u32,
            open: self.open as u32,
            connecting: self.connecting as u32,
            waiting: self.waiting.len() as u32,
            in_flight: self.in_flight as u32,
        }
    }

    /// A due request: on an idle connection now, else waiting (opening
    /// connections as core's growth rule allows), or dropped above
    /// `max_in_flight` ([`Pool::admit`](metronome_core::pool::Pool::admit)).
    pub(super) fn dispatch(&mut self, job: Job) -> io::Result<()> {
        let now = self.clock.now_ns();
        if self.h2.is_none() && self.h3.is_none() {
            self.shrink_idle(now)?;
        }
        let admit = self.pool.admit(now, self.pool_state());
        let (intended_ns, request) = (job.intended_ns, job.request);
        if self
            .ledger
            .admitted(&mut self.out.tally(), intended_ns, request, admit)
        {
            self.out.waited_for_connection += 1;
        }
        match admit {
            Admit::Drop { open } => self.open_more(open),
            Admit::Send { open } => {
                self.in_flight += 1;
                self.stats.sent += 1;
                let slot = self.idle.pop().expect("admitted on an idle connection");
                self.start(slot, job)?;
                self.open_more(open)
            }
            Admit::Wait { open, .. } => {
                self.in_flight += 1;
                self.stats.sent += 1;
                self.waiting.push_back(Job {
                    waited_since: Some(self.clock.now_ns()),
                    ..job
                });
                self.open_more(open)
            }
        }
    }

    /// Sends `job` on the idle connection `slot`.
    pub(super) fn start(&mut self, slot: usize, job: Job) -> io::Result<()> {
        if self.h2.is_some() || self.h3.is_some() {
            return self.stream_start(slot, job);
        }
        let now = self.clock.now_ns();
        if self.too_late(&job, now) {
            self.idle.push(slot);
            return Ok(());
        }
        let deadline = now
            .saturating_add(self.plan.timeout_ns)
            .min(self.hard_end_ns);
        let c = &mut self.conns[slot];
        c.state = State::Busy;
        c.job = job;
        c.sent_ns = now;
        c.deadline_ns = deadline;
        c.sent_bytes = 0;
        c.sending = true;
        c.exchange
            .begin(job.intended_ns, now, self.plan.requests[job.request]);
        c.exchange.set_check(self.plan.check_of(job.request));
        c.sends += 1;
        c.unused = false;
        self.next_deadline_ns = self.next_deadline_ns.min(deadline);
        self.count_sent(&job, now);
        if self.conns[slot].tls.is_some() {
            self.tls_send(slot, job.request)?;
        } else {
            self.ring.send(slot, job.request, 0)?;
        }
        // An idle connection keeps a recv armed (to see a close or stray
        // bytes while idle): the response arrives through it. Bytes kept
        // from before the request are read once it is sent.
        if self.ring.recv_pending(slot) || self.conns[slot].early {
            return Ok(());
        }
        self.process(slot)
    }

    /// Core's hard-end rule ([`Ledger::too_late`]): true when `job`, taken
    /// at `now`, came at or after the run's hard end, and was booked as
    /// never sent (no longer in flight).
    ///
    /// [`Ledger::too_late`]: metronome_core::ledger::Ledger::too_late
    pub(super) fn too_late(&mut self, job: &Job, now: u64) -> bool {
        let Some(ok) = self.ledger.too_late(
            &mut self.out.tally(),
            now,
            self.hard_end_ns,
            job.intended_ns,
            job.request,
            job.retried,
        ) else {
            return false;
        };
        self.pending.count(ok);
        self.in_flight -= 1;
        true
    }

    /// A due request that cannot go out at `at_ns` (core's
    /// [`Ledger::not_sent`](metronome_core::ledger::Ledger::not_sent)).
    pub(super) fn never_sent(&mut self, job: Job, at_ns: u64, reason: Unsent) {
        let ok = self.ledger.not_sent(
            &mut self.out.tally(),
            job.intended_ns,
            job.request,
            at_ns,
            reason,
            job.retried,
        );
        self.pending.count(ok);
    }

    /// Closed model: the worker on `slot` sends its next request now.
    pub(super) fn closed_send(&mut self, slot: usize) {
        let c = &self.conns[slot];
        let i = Shard::dealt(c.worker, self.workers_total.max(1), c.sends);
        let request = self.plan.request_index(i);
        let now = self.clock.now_ns();
        self.in_flight += 1;
        self.stats.sent += 1;
        let _ = self.start(
            slot,
            Job {
                request,
                intended_ns: now,
                retried: false,
                waited_since: None,
            },
        );
    }

    /// Feeds the buffered bytes of `slot` to its exchange; on "need more",
    /// starts the next recv.
    pub(super) fn process(&mut self, slot: usize) -> io::Result<()> {
        let now = self.clock.now_ns();
        let c = &mut self.conns[slot];
        let buf = if c.tls.is_some() {
            &mut self.plain[slot * READ_BUF_BYTES..(slot + 1) * READ_BUF_BYTES]
        } else {
            self.ring.buf(slot)
        };
        let gaps = &mut self.gaps[slot * GAP_CAP..(slot + 1) * GAP_CAP];
        match c.exchange.handle_read(now, &buf[c.start..c.end], gaps) {
            Err(failure) => return self.fail(slot, failure),
            Ok(Feed::Complete {
                consumed,
                keep_alive,
                unsolicited,
            }) => {
                c.start += consumed;
                if unsolicited {
                    self.ledger.unsolicited(&mut self.out.tally(), now);
                }
                return self.complete(slot, now, keep_alive);
            }
            Ok(Feed::NeedMore { consumed }) => c.start += consumed,
        }
        // Keep what was not consumed at the front of the buffer.
        if let Err(kind) = compact(buf, &mut c.start, &mut c.end) {
            return self.fault(slot, kind);
        }
        let end = c.end;
        self.arm_recv(slot, end)
    }

    /// The response on `slot` completed at `now`: record it and reuse or
    /// replace the connection.
    pub(super) fn complete(&mut self, slot: usize, now: u64, keep_alive: bool) -> io::Result<()> {
        let c = &self.conns[slot];
        self.pool.observe(now, now.saturating_sub(c.sent_ns));
        let finish = c
            .exchange
            .finish(&self.gaps[slot * GAP_CAP..(slot + 1) * GAP_CAP]);
        let ok = self.ledger.answered(
            &mut self.out.tally(),
            c.job.intended_ns,
            c.job.request,
            c.sent_ns,
            now,
            finish,
            c.exchange.head(),
        );
        self.pending.count(ok);
        self.in_flight -= 1;
        let c = &mut self.conns[slot];
        if !keep_alive {
            return self.close(slot);
        }
        // Watch the idle connection: a close, a half-close, a 408 or stray
        // bytes are seen at once, before the connection is reused.
        c.start = 0;
        c.end = 0;
        self.arm_recv(slot, 0)?;
        if self.conns[slot].sending {
            // The response completed while its request was still being
            // sent (an early response, the server not reading the rest):
            // stop sending. The send's completion decides: sent whole, the
            // connection is reused; cut short, it is closed (as on the std
            // engine, which stops a blocked send when the response is in).
            self.conns[slot].state = State::Settling;
            return self.ring.cancel_send(slot);
        }
        self.ready(slot)
    }

    /// The request on `slot` failed with `kind`: retry it on a fresh
    /// connection when core's rule allows it, else record it; close and
    /// replace the connection.
    pub(super) fn fault(&mut self, slot: usize, kind: ErrorKind) -> io::Result<()> {
        let c = &self.conns[slot];
        if c.state == State::Busy
            && c.exchange
                .may_retry(kind, c.job.retried, self.plan.retry_non_idempotent)
        {
            let mut job = c.job;
            job.retried = true;
            self.ledger.retried(&mut self.out.tally(), job.intended_ns);
            match self.model {
                // Its clock still runs from its intended time.
                Model::Open => self.waiting.push_front(job),
                // The worker sends its next request on the fresh connection.
                Model::Closed { .. } => self.in_flight -= 1,
            }
            return self.close(slot);
        }
        self.fail(slot, Finish::Error(kind))
    }

    /// The request on `slot` failed as `failure`: record it, close and
    /// replace the connection.
    pub(super) fn fail(&mut self, slot: usize, failure: Finish<'static>) -> io::Result<()> {
        if self.conns[slot].state == State::Busy {
            let now = self.clock.now_ns();
            // A failure is no answer: it says nothing of the service time.
            let c = &self.conns[slot];
            let ok = self.ledger.answered(
                &mut self.out.tally(),
                c.job.intended_ns,
                c.job.request,
                c.sent_ns,
                now,
                failure,
                c.exchange.head(),
            );
            self.pending.count(ok);
            self.in_flight -= 1;
        }
        self.close(slot)
    }
}

impl<R: Ring> Worker<'_, R> {
    /// `job` went out at `now`: counted sent (a retry was counted the first
    /// time), with the time it waited for a connection, if it did. Both
    /// protocols' sends end here.
    pub(super) fn count_sent(&mut self, job: &Job, now: u64) {
        if !job.retried
            && self
                .ledger
                .sent(&mut self.out.tally(), job.intended_ns, job.request, now)
        {
            self.pending.sent += 1;
            if let Some(since) = job.waited_since {
                self.ledger
                    .waited_for(&mut self.out.tally(), job.intended_ns, since, now);
            }
        }
    }
}
