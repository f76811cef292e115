//! What a multiplexed connection's reader (HTTP/2, HTTP/3) does with each
//! stream that ends ([`Ended`]): a stream its connection refused (a
//! GOAWAY, REFUSED_STREAM, H3_REQUEST_REJECTED) goes back to the front of
//! the queue for one more try on a fresh connection; any other becomes a
//! ledger fact, and an answer's service time a sample for the pool. The
//! retries and the sample are handed to the queue once the connection's
//! lock is released ([`Ended::hand_over`]).

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::mpsc;

use metronome_core::flight::{End, How};

use crate::collector::Fact;
use crate::conn::Outcome;
use crate::queue::{lock, Job, Shared};

/// A reader's streams ended and not yet handed to the queue.
pub(crate) struct Ended {
    /// The last (done, service) times, for the pool's estimate.
    sample: Option<(u64, u64)>,
    /// Requests refused, to send again on a fresh connection.
    retry: VecDeque<Job>,
}

impl Ended {
    /// Room for `streams` retries at once (no allocation once warm).
    pub(crate) fn new(streams: usize) -> Ended {
        Ended {
            sample: None,
            retry: VecDeque::with_capacity(streams),
        }
    }

    /// A stream ended at `now` as the connection says.
    pub(crate) fn book(
        &mut self,
        end: End<'_, Job>,
        shared: &Shared,
        tx: &mpsc::Sender<Fact>,
        now: u64,
    ) {
        let finish = match end.how {
            How::Retry => {
                let _ = tx.send(Fact::Retried {
                    intended_ns: end.job.intended_ns,
                });
                self.retry.push_back(Job {
                    retried: true,
                    ..end.job
                });
                return;
            }
            How::Answered(finish) => {
                // A failure is no answer: it says nothing of the service time.
                self.sample = Some((now, now.saturating_sub(end.sent_ns)));
                finish
            }
            How::Failed(finish) => finish,
        };
        let _ = tx.send(Fact::Done {
            intended_ns: end.job.intended_ns,
            request: end.job.request,
            sent_ns: end.sent_ns,
            done_ns: now,
            outcome: Outcome::from_finish(finish),
            head: end.head,
        });
        shared.in_flight.fetch_sub(1, Ordering::Relaxed);
    }

    /// Hands the pool's sample and the retries (at the queue's front, in
    /// their order) to the queue; call without the connection's lock.
    pub(crate) fn hand_over(&mut self, shared: &Shared) {
        if self.sample.is_none() && self.retry.is_empty() {
            return;
        }
        let mut q = lock(&shared.queue);
        if let Some((done, service)) = self.sample.take() {
            q.pool.observe(done, service);
        }
        let n = self.retry.len();
        while let Some(job) = self.retry.pop_back() {
            q.jobs.push_front(job);
        }
        drop(q);
        for _ in 0..n {
            shared.ready.notify_one();
        }
    }
}
