//! [`DueLoop`]: the due loop every engine thread drives, written once.
//! It holds the thread's shard of the schedule and the arrival index, and
//! answers the two questions an engine asks between its waits: what to
//! pace for ([`DueLoop::pace`]: the earlier of the schedule's next intended
//! time and the earliest waiting conversation turn), and, once that is
//! due, which request to send next, intended when ([`DueLoop::next_due`]).
//! A backlog (after a stall of the thread) is yielded at once, never
//! skipped or shifted, but a stop is looked at every
//! [`BACKLOG_STOP_CHECK`] requests of one batch. The engine only waits and
//! sends.
//!
//! ```
//! use metronome_core::due::{DueLoop, Waiting};
//! use metronome_core::pace::Pace;
//! use metronome_core::plan::example_plan;
//!
//! struct NoTurns;
//! impl Waiting for NoTurns {
//!     fn next_ns(&self) -> Option<u64> { None }
//!     fn pop_due(&mut self, _now_ns: u64) -> Option<(u64, usize)> { None }
//! }
//!
//! let plan = example_plan(); // 100 req/s, constant
//! let mut due = DueLoop::new(plan.schedule(plan.shard).unwrap(), 0, 1, true);
//! // The first request is intended at 0, the next at 10 ms.
//! assert_eq!(due.next_due(&plan, &mut NoTurns, 0, || false), Some((0, 0)));
//! assert_eq!(due.next_due(&plan, &mut NoTurns, 0, || false), None);
//! assert_eq!(due.pace(1_000_000, &NoTurns, 50_000), Pace::Sleep { until_ns: 9_950_000 });
//! // Woken 25 ms late: the two due are yielded at once, in order.
//! due.batch();
//! assert_eq!(due.next_due(&plan, &mut NoTurns, 35_000_000, || false), Some((10_000_000, 0)));
//! assert_eq!(due.next_due(&plan, &mut NoTurns, 35_000_000, || false), Some((20_000_000, 0)));
//! assert_eq!(due.next_due(&plan, &mut NoTurns, 35_000_000, || false), Some((30_000_000, 0)));
//! assert_eq!(due.next_due(&plan, &mut NoTurns, 35_000_000, || false), None);
//! ```

use crate::pace::{pace, Pace, BACKLOG_STOP_CHECK};
use crate::plan::Plan;
use crate::schedule::{Schedule, Shard};
use crate::turns::{earliest, next_due, Due};

/// The conversation turns an engine thread keeps waiting (storage it
/// reserved before the clock): the earliest's intended time, and taking it
/// once due.
pub trait Waiting {
    /// The earliest waiting turn's intended time, if any.
    fn next_ns(&self) -> Option<u64>;
    /// Takes the earliest waiting turn if it is due by `now_ns`:
    /// `(intended_ns, request)`.
    fn pop_due(&mut self, now_ns: u64) -> Option<(u64, usize)>;
}

/// One engine thread's due loop (see the module's doc).
#[derive(Clone, Debug)]
pub struct DueLoop<'p> {
    schedule: Schedule<'p>,
    /// The schedule's next intended time; `None` once it is over.
    next: Option<u64>,
    /// Arrivals taken from this thread's shard so far.
    index: u64,
    thread: u64,
    threads: u64,
    /// Requests taken in the current batch ([`DueLoop::batch`]).
    taken: u32,
}

impl<'p> DueLoop<'p> {
    /// The due loop of thread `thread` of `threads` over its shard of the
    /// schedule; `open: false` (the closed model, whose workers send on
    /// their own) takes nothing from the schedule.
    pub fn new(mut schedule: Schedule<'p>, thread: u64, threads: u64, open: bool) -> DueLoop<'p> {
        let next = if open { schedule.next() } else { None };
        DueLoop {
            schedule,
            next,
            index: 0,
            thread,
            threads,
            taken: 0,
        }
    }

    /// True once the schedule has no request left (turns may still come).
    pub fn schedule_over(&self) -> bool {
        self.next.is_none()
    }

    /// What the thread paces for: the earlier of the schedule's next
    /// intended time and the earliest waiting turn's.
    pub fn first_due(&self, waiting: &impl Waiting) -> Option<u64> {
        earliest(self.next, waiting.next_ns())
    }

    /// Core's pacing decision ([`pace`]) for [`DueLoop::first_due`] at
    /// `now_ns` with a busy-wait slice of `slice_ns`.
    pub fn pace(&self, now_ns: u64, waiting: &impl Waiting, slice_ns: u64) -> Pace {
        pace(now_ns, self.first_due(waiting), slice_ns)
    }

    /// Starts a batch of sends (the backlog's count from zero).
    pub fn batch(&mut self) {
        self.taken = 0;
    }

    /// The next request due by `now_ns`, as `(intended_ns, request)`: the
    /// schedule's (its request by the plan's mix or conversations, from the
    /// arrival's global index) or a waiting turn, whichever is due first
    /// (the schedule's on a tie). `None` when neither is due, or when
    /// [`BACKLOG_STOP_CHECK`] requests of this batch have been taken and
    /// `stopped()` says the run was stopped.
    pub fn next_due(
        &mut self,
        plan: &Plan<'_>,
        waiting: &mut impl Waiting,
        now_ns: u64,
        stopped: impl FnOnce() -> bool,
    ) -> Option<(u64, usize)> {
        if self.taken > 0 && self.taken % BACKLOG_STOP_CHECK == 0 && stopped() {
            return None;
        }
        let job = match next_due(self.next, waiting.next_ns(), now_ns) {
            Due::Nothing => return None,
            Due::Schedule(t) => {
                let arrival = Shard::dealt(self.thread, self.threads, self.index);
                self.index += 1;
                self.next = self.schedule.next();
                (t, plan.request_index(arrival))
            }
            Due::Turn => waiting.pop_due(now_ns)?,
        };
        self.taken += 1;
        Some(job)
    }
}
