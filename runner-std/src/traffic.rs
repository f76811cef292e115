//! [`Traffic`]: the bytes the connection threads read and write, counted
//! per report interval in counters sized before the clock (a relaxed add
//! per read or write, no allocation, no message), added to the run's
//! series when its threads are done.

use std::sync::atomic::{AtomicU64, Ordering};

use metronome_core::engine::RunOutput;
use metronome_core::measure::IntervalSink;
use metronome_core::plan::Plan;

/// Bytes received and sent, per interval of the run's series.
pub(crate) struct Traffic {
    warmup_ns: u64,
    interval_ns: u64,
    received: Box<[AtomicU64]>,
    sent: Box<[AtomicU64]>,
}

impl Traffic {
    /// Counters for every interval of `plan`'s series (schedule and drain).
    pub(crate) fn new(plan: &Plan<'_>) -> Traffic {
        let len = plan.series_len().max(1);
        let cells = || (0..len).map(|_| AtomicU64::new(0)).collect();
        Traffic {
            warmup_ns: plan.warmup_ns,
            interval_ns: plan.interval_ns.max(1),
            received: cells(),
            sent: cells(),
        }
    }

    /// The interval of `at_ns` as core's `Plan::interval_index` gives it,
    /// clamped to the series; `None` during the warmup.
    fn slot(&self, at_ns: u64) -> Option<usize> {
        let since = at_ns.checked_sub(self.warmup_ns)?;
        let i = (since / self.interval_ns) as usize;
        Some(i.min(self.received.len() - 1))
    }

    /// `n` bytes read at `at_ns`.
    pub(crate) fn received(&self, at_ns: u64, n: usize) {
        if let (Some(i), true) = (self.slot(at_ns), n > 0) {
            self.received[i].fetch_add(n as u64, Ordering::Relaxed);
        }
    }

    /// `n` bytes written at `at_ns`.
    pub(crate) fn sent(&self, at_ns: u64, n: usize) {
        if let (Some(i), true) = (self.slot(at_ns), n > 0) {
            self.sent[i].fetch_add(n as u64, Ordering::Relaxed);
        }
    }

    /// Moves the counts of the intervals closed by `now_ns` (core's
    /// `LiveIntervals::closed`) into `intervals`, from `*next` on, so the
    /// live copy of an interval has its bytes; [`Traffic::add_to`] adds
    /// what is left (a move: nothing counts twice).
    pub(crate) fn settle(
        &self,
        plan: &Plan<'_>,
        intervals: &mut dyn IntervalSink,
        now_ns: u64,
        next: &mut usize,
    ) {
        let closed = metronome_core::engine::LiveIntervals::closed(plan, now_ns);
        while *next < closed.min(self.received.len()) {
            let i = *next;
            if let Some(c) = intervals.counts(i) {
                c.bytes_received += self.received[i].swap(0, Ordering::Relaxed);
                c.bytes_sent += self.sent[i].swap(0, Ordering::Relaxed);
            }
            *next += 1;
        }
    }

    /// Adds the counts to `out`'s intervals.
    pub(crate) fn add_to(&self, out: &mut RunOutput) {
        for (i, (r, s)) in self.received.iter().zip(&*self.sent).enumerate() {
            if let Some(c) = out.intervals.counts(i) {
                c.bytes_received += r.load(Ordering::Relaxed);
                c.bytes_sent += s.load(Ordering::Relaxed);
            }
        }
    }
}
