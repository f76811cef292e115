//! Live intervals: every closed interval of every engine thread, copied
//! for a watcher while the run goes ([`LiveIntervals`]).
//!
//! Each thread that holds a [`Series`](super::Series) (a uring worker; std's
//! pacer and collector) gets a mailbox of its own before the clock
//! ([`Progress::published`](super::Progress::published)): its counters and
//! room for its three histograms in sparse form
//! ([`Histogram::encode_sparse`], at most [`SPARSE_MAX_LEN`] bytes each),
//! reserved once. [`Progress::publish_interval`](super::Progress::publish_interval),
//! the hook both engines already call, copies the next closed interval
//! into it: without blocking (a `try_lock`; when the watcher holds the
//! mailbox or has not yet taken the previous interval, the copy waits for
//! the next call) and without allocating. The watcher
//! ([`LiveReader::poll`]) takes interval `i` from every mailbox, merges
//! them exactly and hands the merged [`Interval`] on, in order.
//!
//! An interval is closed [`LiveIntervals::grace_intervals`] intervals
//! after its end (at least one second, at most what the live ring still
//! holds in full): a value that lands in it later still (a request sent
//! more than that late, counted by its intended time) is in the final
//! report but not in the live copy. Only the schedule's intervals are
//! published live, not the drain's.
//!
//! With [`LiveIntervals::enable_so_far`] (the Prometheus push), each copy
//! also carries the thread's whole-run histograms that have no
//! per-interval ones, as they are at the copy (`so_far.rs`): the watcher
//! hands their sum over the threads on with the interval ([`SoFar`]).

use std::boxed::Box;
use std::sync::{Arc, Mutex, PoisonError};
use std::vec::Vec;

use crate::histogram::{Histogram, SPARSE_MAX_LEN};
use crate::measure::{Counts, Interval, IntervalSink};
use crate::plan::Plan;

use super::so_far::{so_far_slots, Recorded, SoFar, SoFarRoom};
use super::RING_MAX;

/// What a mailbox holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Held {
    /// Nothing the watcher has not taken.
    Empty,
    /// Interval `index`, to take.
    Filled,
    /// Interval `index` could not be copied (its histograms were compacted
    /// already): the live stream stops there.
    Lost,
}

/// One thread's mailbox: one interval at a time.
#[derive(Debug)]
struct Mailbox {
    held: Held,
    index: usize,
    counts: Counts,
    /// Bytes of each histogram's sparse form in `bytes`.
    lens: [usize; 3],
    /// Room for three sparse histograms, reserved once.
    bytes: Box<[u8]>,
    /// The thread's whole-run histograms as of the copy of `index` (no
    /// slots unless [`LiveIntervals::enable_so_far`]).
    so_far: SoFarRoom,
}

type Shared = Arc<Mutex<Mailbox>>;

/// The mailboxes of a run's engine threads: off unless
/// [`LiveIntervals::enable`] was called before the run.
#[derive(Debug, Default)]
pub struct LiveIntervals {
    on: std::sync::atomic::AtomicBool,
    so_far: std::sync::atomic::AtomicBool,
    boxes: Mutex<Vec<Shared>>,
}

/// A thread's side of the live intervals and of the progress line: which
/// interval it published last, and its mailbox when live intervals are on.
#[derive(Debug, Default)]
pub struct Published {
    /// The last interval whose p99s went to the progress line.
    pub(super) last: Option<usize>,
    mailbox: Option<Shared>,
    /// The next interval to copy into the mailbox.
    next: usize,
}

impl LiveIntervals {
    /// Turns live intervals on: the threads of a run started after this
    /// get a mailbox each.
    pub fn enable(&self) {
        self.on.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether live intervals are on.
    pub fn is_on(&self) -> bool {
        self.on.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Turns live intervals on, each copy carrying the thread's whole-run
    /// histograms so far ([`SoFar`]): the threads of a run started after
    /// this reserve room for them.
    pub fn enable_so_far(&self) {
        self.enable();
        self.so_far
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the copies carry the whole-run histograms so far.
    pub fn so_far_on(&self) -> bool {
        self.so_far.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many mailboxes (engine threads that publish) there are.
    pub fn mailboxes(&self) -> usize {
        self.boxes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// A thread's publishing state, with a mailbox of its own when live
    /// intervals are on (with room for `plan`'s whole-run histograms when
    /// [`LiveIntervals::so_far_on`]). Engines call it before their clock
    /// starts, one per thread that holds a series (it allocates the
    /// mailbox).
    pub fn register(&self, plan: &Plan<'_>) -> Published {
        let mut p = Published::default();
        if self.is_on() {
            let slots = if self.so_far_on() {
                so_far_slots(plan)
            } else {
                0
            };
            let mailbox = Arc::new(Mutex::new(Mailbox {
                held: Held::Empty,
                index: 0,
                counts: Counts::new(),
                lens: [0; 3],
                bytes: std::vec![0u8; 3 * SPARSE_MAX_LEN].into_boxed_slice(),
                so_far: SoFarRoom::new(slots),
            }));
            self.boxes
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Arc::clone(&mailbox));
            p.mailbox = Some(mailbox);
        }
        p
    }

    /// How many intervals after its end an interval of `plan` is closed:
    /// one second of them (at least one interval), at most what a
    /// [`Series`](super::Series) keeps in full ([`RING_MAX`] less two).
    ///
    /// ```
    /// use metronome_core::engine::LiveIntervals;
    /// use metronome_core::plan::example_plan;
    /// let mut p = example_plan(); // 1 s intervals
    /// assert_eq!(LiveIntervals::grace_intervals(&p), 1);
    /// p.interval_ns = 250_000_000;
    /// assert_eq!(LiveIntervals::grace_intervals(&p), 4);
    /// p.interval_ns = 1_000_000;
    /// assert_eq!(LiveIntervals::grace_intervals(&p), 14);
    /// ```
    pub fn grace_intervals(plan: &Plan<'_>) -> usize {
        let per_second = 1_000_000_000u64.div_ceil(plan.interval_ns.max(1));
        (per_second as usize).clamp(1, RING_MAX - 2)
    }
}

impl LiveIntervals {
    /// How many of `plan`'s schedule intervals are closed at `now_ns`: those
    /// that ended [`LiveIntervals::grace_intervals`] or more ago.
    ///
    /// ```
    /// use metronome_core::engine::LiveIntervals;
    /// use metronome_core::plan::example_plan;
    /// let p = example_plan(); // 0.5 s warmup, one 1 s interval
    /// assert_eq!(LiveIntervals::closed(&p, 2_400_000_000), 0);
    /// assert_eq!(LiveIntervals::closed(&p, 2_500_000_000), 1);
    /// ```
    pub fn closed(plan: &Plan<'_>, now_ns: u64) -> usize {
        let Some(current) = plan.interval_index(now_ns) else {
            return 0;
        };
        let grace = LiveIntervals::grace_intervals(plan);
        current.saturating_sub(grace).min(plan.interval_count())
    }
}

impl Published {
    /// Copies the intervals of `plan`'s schedule closed by `now_ns` into
    /// the mailbox, as far as the watcher has taken the previous ones, each
    /// with the histograms `recorded` holds now when the mailbox has room
    /// for them. Never blocks, never allocates.
    pub(super) fn copy_closed(
        &mut self,
        plan: &Plan<'_>,
        intervals: &dyn IntervalSink,
        recorded: Recorded<'_>,
        now_ns: u64,
    ) {
        let Some(mailbox) = &self.mailbox else {
            return;
        };
        let last = LiveIntervals::closed(plan, now_ns).min(intervals.len());
        while self.next < last {
            let Ok(mut m) = mailbox.try_lock() else {
                return;
            };
            if m.held != Held::Empty {
                return;
            }
            let i = self.next;
            m.index = i;
            match intervals.view(i) {
                Some((counts, hists)) => {
                    m.counts = *counts;
                    let Mailbox { lens, bytes, .. } = &mut *m;
                    for (k, h) in hists.iter().enumerate() {
                        let room = &mut bytes[k * SPARSE_MAX_LEN..(k + 1) * SPARSE_MAX_LEN];
                        lens[k] = h.map_or(0, |h| h.encode_sparse(room));
                    }
                    m.so_far.copy(recorded);
                    m.held = Held::Filled;
                    self.next += 1;
                }
                None => {
                    m.held = Held::Lost;
                    self.next = usize::MAX;
                    return;
                }
            }
        }
    }
}

/// The watcher's side: takes the closed intervals from every mailbox and
/// merges them, in order.
#[derive(Debug)]
pub struct LiveReader {
    next: usize,
    merged: Box<Interval>,
    so_far: Box<SoFar>,
    taken: Vec<bool>,
    stalled: bool,
}

impl Default for LiveReader {
    fn default() -> Self {
        LiveReader {
            next: 0,
            merged: Box::new(Interval::new()),
            so_far: Box::default(),
            taken: Vec::new(),
            stalled: false,
        }
    }
}

impl LiveReader {
    /// The next interval to come (all before it were handed on).
    pub fn next(&self) -> usize {
        self.next
    }

    /// Whether an interval could not be copied live: none after it comes.
    pub fn stalled(&self) -> bool {
        self.stalled
    }

    /// Calls `f` with every interval all mailboxes of `live` hold, merged
    /// exactly over the threads, in order (interval 0 first), and, when
    /// [`LiveIntervals::so_far_on`], the whole-run histograms the threads
    /// copied with it, merged exactly; returns how many. Nothing comes
    /// while a thread has not published the next one.
    pub fn poll(
        &mut self,
        live: &LiveIntervals,
        mut f: impl FnMut(usize, &Interval, Option<&SoFar>),
    ) -> usize {
        let boxes: Vec<Shared> = live
            .boxes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if boxes.is_empty() {
            return 0;
        }
        self.taken.resize(boxes.len(), false);
        let mut handed = 0;
        while !self.stalled {
            for (k, b) in boxes.iter().enumerate() {
                if self.taken[k] {
                    continue;
                }
                let mut m = b.lock().unwrap_or_else(PoisonError::into_inner);
                if m.index != self.next || m.held == Held::Empty {
                    continue;
                }
                if m.held == Held::Lost {
                    self.stalled = true;
                    return handed;
                }
                self.merged.counts.merge(&m.counts);
                let hists: [&mut Histogram; 3] = [
                    &mut self.merged.latency,
                    &mut self.merged.send_lag,
                    &mut self.merged.ttft,
                ];
                for (k, h) in hists.into_iter().enumerate() {
                    if m.lens[k] > 0 {
                        let at = k * SPARSE_MAX_LEN;
                        h.merge_sparse(&m.bytes[at..at + m.lens[k]]);
                    }
                }
                m.so_far.merge_into(&mut self.so_far);
                m.held = Held::Empty;
                self.taken[k] = true;
            }
            if !self.taken.iter().all(|&t| t) {
                return handed;
            }
            f(
                self.next,
                &self.merged,
                live.so_far_on().then_some(&*self.so_far),
            );
            handed += 1;
            self.next += 1;
            self.taken.iter_mut().for_each(|t| *t = false);
            self.merged.counts = Counts::new();
            self.merged.latency.reset();
            self.merged.send_lag.reset();
            self.merged.ttft.reset();
            self.so_far.reset();
        }
        handed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{NameSoFar, Series};
    use crate::measure::{IntervalMetric, NameTally, Recorder};
    use crate::plan::example_plan;

    fn recorded<'a>(r: &'a Recorder, names: &'a [NameTally]) -> Recorded<'a> {
        Recorded { recorder: r, names }
    }

    /// Two threads of a two-name mix, each recording whole-run histograms
    /// as it goes: with each interval the watcher gets their sum as the
    /// threads held it when they copied that interval, exactly, never
    /// smaller than the last; the last equals the merged recorders.
    #[test]
    fn so_far_histograms_come_with_each_interval_exactly() {
        let mut plan = example_plan();
        plan.warmup_ns = 0;
        plan.interval_ns = 100_000_000;
        plan.duration_ns = 1_000_000_000;
        plan.names = &[0, 1];
        let n = plan.interval_count();
        let live = LiveIntervals::default();
        live.enable_so_far();
        assert!(live.is_on() && live.so_far_on());
        let mut pubs = [live.register(&plan), live.register(&plan)];
        let series = [Series::for_plan(&plan), Series::for_plan(&plan)];
        let mut recs = [Recorder::new(), Recorder::new()];
        let mut names = [
            [NameTally::new(), NameTally::new()],
            [NameTally::new(), NameTally::new()],
        ];
        let mut reader = LiveReader::default();
        let mut seen: Vec<(usize, SoFar)> = Vec::new();
        // What the threads held when they copied each interval, summed.
        let mut want: Vec<SoFar> = Vec::new();
        let grace = LiveIntervals::grace_intervals(&plan);
        for step in 0..(n + grace + 2) {
            // Recording stops with the last copy (interval n - 1 at step
            // n + grace).
            for t in (0..2).filter(|_| step <= n + grace) {
                let v = (step as u64 + 1) * 1_000 * (t as u64 + 1);
                if step % 3 != 2 {
                    // Some steps record nothing: their copies are skipped.
                    recs[t].service_time.record(v);
                    recs[t].itl.record_n(v / 7, 3);
                    names[t][step % 2].latency.record(v + 5);
                    names[t][1].ttft.record(v / 2);
                }
                if t == 1 {
                    recs[t].tpot.record(v * 11);
                    names[t][0].send_lag.record(v / 9);
                }
            }
            let now = step as u64 * plan.interval_ns;
            let before = pubs[0].next;
            for ((p, s), (r, nm)) in pubs.iter_mut().zip(&series).zip(recs.iter().zip(&names)) {
                p.copy_closed(&plan, s, recorded(r, nm), now);
            }
            if pubs[0].next > before {
                let mut w = SoFar::default();
                for (r, nm) in recs.iter().zip(&names) {
                    w.service_time.merge(&r.service_time);
                    w.itl.merge(&r.itl);
                    w.tpot.merge(&r.tpot);
                    w.names.resize_with(2, NameSoFar::default);
                    for (a, b) in w.names.iter_mut().zip(nm) {
                        a.latency.merge(&b.latency);
                        a.service_time.merge(&b.service_time);
                        a.send_lag.merge(&b.send_lag);
                        a.ttft.merge(&b.ttft);
                    }
                }
                want.push(w);
            }
            reader.poll(&live, |i, _, so_far| {
                seen.push((i, so_far.unwrap().clone()))
            });
        }
        assert_eq!(seen.len(), n);
        assert_eq!(want.len(), n);
        for (i, got) in &seen {
            assert_eq!(got, &want[*i], "interval {i}");
            if *i > 0 {
                let last = &seen[i - 1].1;
                assert!(got.service_time.count() >= last.service_time.count());
                assert!(got.names[1].ttft.count() >= last.names[1].ttft.count());
            }
        }
        let last = &seen[n - 1].1;
        let mut all = recs[0].clone();
        all.merge(&recs[1]);
        assert_eq!(last.service_time, all.service_time);
        assert_eq!(last.itl, all.itl);
        assert_eq!(last.tpot, all.tpot);
        assert_eq!(last.tpot.count(), (n + grace + 1) as u64);
        assert_eq!(last.names[0].send_lag.count(), (n + grace + 1) as u64);
        assert_eq!(last.names[1].latency, {
            let mut h = names[0][1].latency.clone();
            h.merge(&names[1][1].latency);
            h
        });
    }

    /// Two threads' series, published as they close, come out merged
    /// exactly as the merged series holds them; nothing before its grace.
    #[test]
    fn live_intervals_equal_the_merged_series() {
        let mut plan = example_plan();
        plan.warmup_ns = 0;
        plan.interval_ns = 100_000_000;
        plan.duration_ns = 1_000_000_000;
        let n = plan.interval_count();
        let live = LiveIntervals::default();
        live.enable();
        let mut pubs = [live.register(&plan), live.register(&plan)];
        let rec = Recorder::new();
        let mut series = [Series::for_plan(&plan), Series::for_plan(&plan)];
        let mut reader = LiveReader::default();
        let mut seen = Vec::new();
        let grace = LiveIntervals::grace_intervals(&plan);
        assert_eq!(grace, 10);
        for step in 0..(n + grace + 2) {
            for (t, s) in series.iter_mut().enumerate() {
                if step < n {
                    let v = (step as u64 + 1) * 1000 * (t as u64 + 1);
                    s.record(step, IntervalMetric::Latency, v);
                    s.record(step, IntervalMetric::SendLag, v / 3);
                    s.counts(step).unwrap().ok += t as u64 + step as u64;
                }
            }
            let now = step as u64 * plan.interval_ns;
            for (p, s) in pubs.iter_mut().zip(&series) {
                p.copy_closed(&plan, s, recorded(&rec, &[]), now);
            }
            reader.poll(&live, |i, iv, so_far| {
                assert!(so_far.is_none());
                seen.push((i, iv.clone()));
            });
            // Closed a grace after its end: interval i at step i + 1 + grace.
            assert_eq!(seen.len(), (step + 1).saturating_sub(1 + grace).min(n));
        }
        let mut all = series[0].clone();
        all.merge(&series[1]);
        let full = all.to_vec();
        assert_eq!(seen.len(), n);
        for (i, iv) in &seen {
            assert_eq!(iv, &full[*i], "interval {i}");
        }
        assert!(seen[3].1.latency.count() == 2 && seen[3].1.ok == 7);
    }

    /// A mailbox not yet taken holds its interval: the thread copies the
    /// next one only after the watcher took it.
    #[test]
    fn a_full_mailbox_waits_for_the_watcher() {
        let mut plan = example_plan();
        plan.warmup_ns = 0;
        plan.interval_ns = 1_000_000_000;
        plan.duration_ns = 5_000_000_000;
        let live = LiveIntervals::default();
        live.enable();
        let mut p = live.register(&plan);
        let s = Series::for_plan(&plan);
        let r = Recorder::new();
        let rec = recorded(&r, &[]);
        p.copy_closed(&plan, &s, rec, 4_500_000_000);
        assert_eq!(p.next, 1);
        let mut reader = LiveReader::default();
        assert_eq!(reader.poll(&live, |_, _, _| {}), 1);
        p.copy_closed(&plan, &s, rec, 4_500_000_000);
        p.copy_closed(&plan, &s, rec, 4_500_000_000);
        assert_eq!(p.next, 2);
        assert_eq!(reader.poll(&live, |_, _, _| {}), 1);
        assert_eq!(reader.next(), 2);
        // Off: no mailbox, nothing copied.
        let off = LiveIntervals::default();
        let mut q = off.register(&plan);
        q.copy_closed(&plan, &s, rec, 4_500_000_000);
        assert_eq!((q.next, off.mailboxes()), (0, 0));
    }
}
