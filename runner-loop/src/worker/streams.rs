//! Streams on a connection slot, for HTTP/2 and HTTP/3 alike: admission
//! by free stream slot and the books a stream's end touches. A connection
//! with a free stream slot (its protocol says: `h2_free`, `h3_free`) is on
//! the worker's idle list, so core's pool rule counts it as idle; a due
//! request waits, or the pool grows, only when every slot of every
//! connection is busy. A stream's end, whichever protocol carried it, is
//! core's [`End`] booked by [`Ends::book`].

use crate::ring::Ring;
use std::io;

use metronome_core::flight::{End, How};

use super::{Job, State, Worker};

impl<R: Ring> Worker<'_, R> {
    /// Whether `slot` can open one more stream now (its protocol's rule).
    fn stream_free(&self, slot: usize) -> bool {
        if self.h3.is_some() {
            self.h3_free(slot)
        } else {
            self.h2_free(slot)
        }
    }

    /// Sends `job` on a new stream of `slot` (its protocol's way).
    pub(super) fn stream_start(&mut self, slot: usize, job: Job) -> io::Result<()> {
        if self.h3.is_some() {
            self.h3_start(slot, job)
        } else {
            self.h2_start(slot, job)
        }
    }

    /// Puts `slot` on the idle list when it has a free stream slot, takes
    /// it off when it has none.
    pub(super) fn relist(&mut self, slot: usize) {
        let free = self.stream_free(slot);
        let c = &mut self.conns[slot];
        if free && !c.listed {
            c.listed = true;
            self.idle.push(slot);
        } else if !free && c.listed {
            c.listed = false;
            self.idle.retain(|&s| s != slot);
        }
    }

    /// `slot` is open (or has a free stream again): it takes waiting
    /// requests while it has free stream slots, then goes on the idle list.
    pub(super) fn streams_ready(&mut self, slot: usize) -> io::Result<()> {
        self.conns[slot].state = State::Idle;
        while !self.waiting.is_empty() && self.stream_free(slot) {
            let Some(job) = self.waiting.pop_front() else {
                break;
            };
            let before = self.waiting.len();
            self.unlist(slot);
            self.stream_start(slot, job)?;
            if self.waiting.len() > before {
                // Put back: the connection could not take it after all.
                break;
            }
        }
        self.relist(slot);
        Ok(())
    }

    /// Takes `slot` off the idle list.
    pub(super) fn unlist(&mut self, slot: usize) {
        if self.conns[slot].listed {
            self.conns[slot].listed = false;
            self.idle.retain(|&s| s != slot);
        }
    }

    /// Waiting requests go to any connection with a free stream slot; the
    /// pool grows by core's rule when none has one.
    pub(super) fn drain_waiting(&mut self) -> io::Result<()> {
        while !self.waiting.is_empty() {
            let Some(&slot) = self.idle.last() else {
                return self.grow();
            };
            let before = self.waiting.len();
            self.streams_ready(slot)?;
            if self.waiting.len() == before {
                // Listed but unable to take it: off the list, try the next.
                self.unlist(slot);
            }
        }
        Ok(())
    }
}

/// [`Ends`] borrowed from the worker `$w` (apart from its `h2` or `h3`), with the
/// gap pool's free list `$free` and the pass's retry count `$retries`.
macro_rules! ends {
    ($w:ident, $free:expr, $retries:expr) => {
        Ends {
            ledger: &$w.ledger,
            out: &mut $w.out,
            pool: &mut $w.pool,
            pending: &mut $w.pending,
            in_flight: &mut $w.in_flight,
            waiting: &mut $w.waiting,
            gap_free: $free,
            retries: $retries,
        }
    };
}
pub(super) use ends;

/// The books a stream's end touches, borrowed apart from the connection.
pub(super) struct Ends<'a, 'p> {
    pub(super) ledger: &'a metronome_core::ledger::Ledger<'p>,
    pub(super) out: &'a mut metronome_core::engine::RunOutput,
    pub(super) pool: &'a mut metronome_core::pool::Pool,
    pub(super) pending: &'a mut super::Pending,
    pub(super) in_flight: &'a mut usize,
    pub(super) waiting: &'a mut std::collections::VecDeque<Job>,
    pub(super) gap_free: &'a mut Vec<u32>,
    /// Retries queued by this pass (kept in order at the queue's front).
    pub(super) retries: &'a mut usize,
}

impl Ends<'_, '_> {
    /// A stream ended at `now` as core's `Flights` says: a ledger fact, or
    /// (a refused stream) back to the front of the queue, counted retried.
    pub(super) fn book(&mut self, end: End<'_, Job>, now: u64) {
        let finish = match end.how {
            How::Retry => {
                self.ledger
                    .retried(&mut self.out.tally(), end.job.intended_ns);
                let at = (*self.retries).min(self.waiting.len());
                self.waiting.insert(
                    at,
                    Job {
                        retried: true,
                        ..end.job
                    },
                );
                *self.retries += 1;
                None
            }
            How::Answered(finish) => {
                // An answer: a failure says nothing of the service time.
                self.pool.observe(now, now.saturating_sub(end.sent_ns));
                Some(finish)
            }
            How::Failed(finish) => Some(finish),
        };
        if let Some(finish) = finish {
            let ok = self.ledger.answered(
                &mut self.out.tally(),
                end.job.intended_ns,
                end.job.request,
                end.sent_ns,
                now,
                finish,
                end.head,
            );
            self.pending.count(ok);
            *self.in_flight -= 1;
        }
        if let Some(gap) = end.gap {
            self.gap_free.push(gap);
        }
    }
}
