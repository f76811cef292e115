//! The whole-run histograms recorded so far, copied live with each closed
//! interval for the Prometheus push (docs/prometheus.md): service time,
//! ITL and TPOT of the run, and latency, service time, send lag and TTFT of
//! each name of a request mix. Unlike latency, send lag and TTFT, these have
//! no per-interval histograms; the thread's own whole-run ones
//! ([`Recorder`], [`NameTally`]) are what there is.
//!
//! A thread's side ([`Recorded`], [`SoFarRoom`]): with each interval it
//! copies into its mailbox ([`LiveIntervals`](super::LiveIntervals)), it
//! also writes the sparse form of each of these histograms as it is at that
//! moment into room reserved before the clock, one slot of
//! [`SPARSE_MAX_LEN`] bytes per histogram; a histogram whose count did not
//! change since its last copy is not written again (its slot still holds it).
//! The watcher's side ([`SoFar`]): the sum over the threads of the copies
//! that came with interval `i` is everything recorded by the time each
//! thread copied interval `i` (a grace after the interval's end, see
//! [`LiveIntervals::grace_intervals`](super::LiveIntervals::grace_intervals)):
//! cumulative, so never smaller for a later interval, and exact (the merge
//! of sparse forms is).
//!
//! The slots: [`RUN_SLOTS`] for the run (service time, ITL, TPOT), then
//! [`NAME_SLOTS`] per name (latency, service time, send lag, TTFT), for at
//! most [`LIVE_NAMES_MAX`] names (a larger mix has no per-name slots: its
//! per-name histograms come at the end only). So a mailbox reserves
//! `(3 + 4 x names) x SPARSE_MAX_LEN` bytes (87 KiB a slot: 261 KiB for a
//! plain run, 5.7 MiB for 16 names), untouched (so not resident) beyond
//! what the copies write.

use std::boxed::Box;
use std::vec::Vec;

use crate::histogram::{Histogram, SPARSE_MAX_LEN};
use crate::measure::{NameTally, Recorder};
use crate::plan::Plan;

/// Slots for the run's own histograms: service time, ITL, TPOT.
pub const RUN_SLOTS: usize = 3;

/// Slots per name of a mix: latency, service time, send lag, TTFT.
pub const NAME_SLOTS: usize = 4;

/// The most names of a request mix whose histograms are copied live; a mix
/// of more names has its per-name histograms at the end only.
pub const LIVE_NAMES_MAX: usize = 16;

/// What an engine thread recorded over the whole run so far: the source of
/// the copies.
#[derive(Clone, Copy, Debug)]
pub struct Recorded<'a> {
    /// The thread's recorder.
    pub recorder: &'a Recorder,
    /// The thread's rows of a request mix (empty without one).
    pub names: &'a [NameTally],
}

impl<'a> Recorded<'a> {
    /// The histogram of slot `k` (`None` past the thread's names).
    fn slot(&self, k: usize) -> Option<&'a Histogram> {
        let r = self.recorder;
        match k {
            0 => Some(&r.service_time),
            1 => Some(&r.itl),
            2 => Some(&r.tpot),
            _ => {
                let n = self.names.get((k - RUN_SLOTS) / NAME_SLOTS)?;
                Some(match (k - RUN_SLOTS) % NAME_SLOTS {
                    0 => &n.latency,
                    1 => &n.service_time,
                    2 => &n.send_lag,
                    _ => &n.ttft,
                })
            }
        }
    }
}

/// The slots copied for `plan` when the so-far histograms are on: the
/// run's three and, for a mix of at most [`LIVE_NAMES_MAX`] names, four
/// per name.
///
/// ```
/// use metronome_core::engine::{so_far_slots, LIVE_NAMES_MAX};
/// use metronome_core::plan::example_plan;
/// let many: Vec<u32> = (0..=LIVE_NAMES_MAX as u32).collect();
/// let mut p = example_plan();
/// assert_eq!(so_far_slots(&p), 3);
/// p.names = &[0, 1, 1];
/// assert_eq!(so_far_slots(&p), 3 + 2 * 4);
/// p.names = &many[..LIVE_NAMES_MAX];
/// assert_eq!(so_far_slots(&p), 3 + 16 * 4);
/// p.names = &many; // 17 names: the run's three only
/// assert_eq!(so_far_slots(&p), 3);
/// ```
pub fn so_far_slots(plan: &Plan<'_>) -> usize {
    let names = plan.name_count();
    let names = if names <= LIVE_NAMES_MAX { names } else { 0 };
    RUN_SLOTS + NAME_SLOTS * names
}

/// A mailbox's room for the so-far histograms: one sparse form per slot,
/// with the count each had when written.
#[derive(Debug)]
pub(super) struct SoFarRoom {
    bytes: Box<[u8]>,
    lens: Box<[usize]>,
    counts: Box<[u64]>,
}

impl SoFarRoom {
    /// Room for `slots` histograms (none: `slots` 0), reserved now.
    pub(super) fn new(slots: usize) -> SoFarRoom {
        SoFarRoom {
            bytes: std::vec![0u8; slots * SPARSE_MAX_LEN].into_boxed_slice(),
            // An empty histogram's form is one byte: written on first use.
            lens: std::vec![0; slots].into_boxed_slice(),
            counts: std::vec![0; slots].into_boxed_slice(),
        }
    }

    /// Writes every slot whose histogram in `recorded` changed since it was
    /// last written; returns how many were written. Never allocates.
    pub(super) fn copy(&mut self, recorded: Recorded<'_>) -> usize {
        let mut written = 0;
        for (k, (len, count)) in self.lens.iter_mut().zip(self.counts.iter_mut()).enumerate() {
            let Some(h) = recorded.slot(k) else {
                continue;
            };
            // Values are only added during a run: an equal count is an
            // equal histogram.
            if h.count() == *count {
                continue;
            }
            let room = &mut self.bytes[k * SPARSE_MAX_LEN..(k + 1) * SPARSE_MAX_LEN];
            *len = h.encode_sparse(room);
            *count = h.count();
            written += 1;
        }
        written
    }

    /// Adds every slot into `to`, exactly.
    pub(super) fn merge_into(&self, to: &mut SoFar) {
        to.fit(self.lens.len());
        for (k, &len) in self.lens.iter().enumerate() {
            if len > 0 {
                let at = k * SPARSE_MAX_LEN;
                to.slot_mut(k).merge_sparse(&self.bytes[at..at + len]);
            }
        }
    }
}

/// One name's histograms recorded so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NameSoFar {
    /// Latency of the name's successes.
    pub latency: Histogram,
    /// Service time of the name's successes.
    pub service_time: Histogram,
    /// Send lag of the name's sends.
    pub send_lag: Histogram,
    /// TTFT of the name's successful streams.
    pub ttft: Histogram,
}

/// The whole-run histograms every engine thread had recorded when it
/// copied one live interval, merged over the threads (docs/prometheus.md
/// says what a pushed sample of them means).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SoFar {
    /// Service time of the successes.
    pub service_time: Histogram,
    /// Per-token ITL of the successful streams.
    pub itl: Histogram,
    /// TPOT of the successful streams.
    pub tpot: Histogram,
    /// Per name of the mix, in the plan's order (empty without a mix, or
    /// for a mix of more than [`LIVE_NAMES_MAX`] names).
    pub names: Vec<NameSoFar>,
}

impl SoFar {
    /// Holds room for `slots` slots' histograms.
    fn fit(&mut self, slots: usize) {
        let names = slots.saturating_sub(RUN_SLOTS) / NAME_SLOTS;
        if self.names.len() < names {
            self.names.resize_with(names, NameSoFar::default);
        }
    }

    fn slot_mut(&mut self, k: usize) -> &mut Histogram {
        match k {
            0 => &mut self.service_time,
            1 => &mut self.itl,
            2 => &mut self.tpot,
            _ => {
                let n = &mut self.names[(k - RUN_SLOTS) / NAME_SLOTS];
                match (k - RUN_SLOTS) % NAME_SLOTS {
                    0 => &mut n.latency,
                    1 => &mut n.service_time,
                    2 => &mut n.send_lag,
                    _ => &mut n.ttft,
                }
            }
        }
    }

    /// Empties every histogram (the names stay).
    pub(super) fn reset(&mut self) {
        self.service_time.reset();
        self.itl.reset();
        self.tpot.reset();
        for n in &mut self.names {
            n.latency.reset();
            n.service_time.reset();
            n.send_lag.reset();
            n.ttft.reset();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec<'a>(r: &'a Recorder, names: &'a [NameTally]) -> Recorded<'a> {
        Recorded { recorder: r, names }
    }

    /// The cost of one copy on the calling thread (what a pacing thread
    /// pays once per interval): a recorder whose service time, ITL and
    /// TPOT each fill 1,500 buckets and four names whose four histograms
    /// fill 600 each; all changed, then one changed, then none. Prints
    /// the times; asserts the copies are exact. Timing only: run it by
    /// hand (`cargo test -p metronome-core --features std [--release]
    /// --lib so_far_copy_cost -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn so_far_copy_cost() {
        let spread = |h: &mut Histogram, buckets: u64, from: u64| {
            // Values 1/128 apart at ~`from` ns and up: one bucket each.
            let mut v = from;
            for _ in 0..buckets {
                h.record_n(v, 3);
                v += v / 100;
            }
        };
        let mut r = Recorder::new();
        spread(&mut r.service_time, 1_500, 100_000);
        spread(&mut r.itl, 1_500, 1_000);
        spread(&mut r.tpot, 1_500, 10_000);
        let mut names: Vec<NameTally> = (0..4).map(|_| NameTally::new()).collect();
        for n in &mut names {
            spread(&mut n.latency, 600, 100_000);
            spread(&mut n.service_time, 600, 90_000);
            spread(&mut n.send_lag, 600, 100);
            spread(&mut n.ttft, 600, 1_000_000);
        }
        let mut room = SoFarRoom::new(RUN_SLOTS + 4 * NAME_SLOTS);
        let runs = 50u32;
        let mut all = std::time::Duration::ZERO;
        let mut one = std::time::Duration::ZERO;
        let mut none = std::time::Duration::ZERO;
        for k in 0..runs {
            room.counts.iter_mut().for_each(|c| *c = u64::MAX);
            let t = std::time::Instant::now();
            assert_eq!(room.copy(rec(&r, &names)), 19);
            all += t.elapsed();
            r.service_time.record(200_000 + u64::from(k));
            let t = std::time::Instant::now();
            assert_eq!(room.copy(rec(&r, &names)), 1);
            one += t.elapsed();
            let t = std::time::Instant::now();
            assert_eq!(room.copy(rec(&r, &names)), 0);
            none += t.elapsed();
        }
        let mut to = SoFar::default();
        room.merge_into(&mut to);
        assert_eq!(to.service_time, r.service_time);
        assert_eq!(to.names[3].ttft, names[3].ttft);
        std::println!(
            "so-far copy: 19 changed {:?}, 1 changed {:?}, none {:?} (mean of {runs})",
            all / runs,
            one / runs,
            none / runs
        );
    }

    /// A room copies what changed only, and merges back exactly; the
    /// slots past the thread's names stay empty.
    #[test]
    fn a_room_copies_changes_and_merges_exactly() {
        let mut r = Recorder::new();
        let mut names = [NameTally::new(), NameTally::new()];
        let mut room = SoFarRoom::new(RUN_SLOTS + 3 * NAME_SLOTS);
        assert_eq!(room.copy(rec(&r, &names)), 0);
        r.service_time.record(1_000);
        r.tpot.record_n(7_000_000, 3);
        names[1].ttft.record(42_000);
        assert_eq!(room.copy(rec(&r, &names)), 3);
        assert_eq!(room.copy(rec(&r, &names)), 0);
        r.service_time.record(2_000_000);
        assert_eq!(room.copy(rec(&r, &names)), 1);
        let mut to = SoFar::default();
        room.merge_into(&mut to);
        assert_eq!(to.names.len(), 3);
        assert_eq!(to.service_time, r.service_time);
        assert_eq!(to.tpot, r.tpot);
        assert!(to.itl.is_empty());
        assert_eq!(to.names[1].ttft, names[1].ttft);
        assert_eq!(to.names[1].ttft.count(), 1);
        assert!(to.names[2] == NameSoFar::default());
        // Twice merged is twice the counts.
        room.merge_into(&mut to);
        assert_eq!(to.tpot.count(), 6);
        to.reset();
        assert_eq!((to.tpot.count(), to.names.len()), (0, 3));
    }
}
