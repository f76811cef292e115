//! Live intervals: every closed interval of every engine thread, copied
//! for a watcher while the run goes ([`LiveIntervals`]).
//!
//! Each thread that holds a [`Series`](super::Series) (a uring worker; std's
//! pacer and collector) gets a mailbox of its own before the clock
//! ([`Progress::published`](super::Progress::published)): room for a batch
//! of [`LiveIntervals::batch_len`] intervals' counters and for three
//! histograms in sparse form ([`Histogram::encode_sparse`], at most
//! [`SPARSE_MAX_LEN`] bytes each: one interval whatever it holds, more when
//! they are small), reserved once.
//! [`Progress::publish_interval`](super::Progress::publish_interval), the
//! hook both engines already call (every 50 ms or so), copies the intervals
//! closed since into it at once: without blocking (a `try_lock`; when the
//! watcher holds the mailbox or has not yet taken the last batch, the copy
//! waits for the next call) and without allocating. The watcher
//! ([`LiveReader::poll`]) takes interval `i` from every mailbox, merges
//! them exactly and hands the merged [`Interval`] on, in order.
//!
//! A watcher that falls behind (a busy machine, a slow sink) delays the
//! copies, never the engine, and loses nothing: an interval whose
//! histograms the series compacted meanwhile (it keeps [`RING_MAX`] in
//! full) is rebuilt from its compacted records
//! ([`IntervalSink::compacted`]) into a histogram reserved with the
//! mailbox, read from where the records of the intervals not yet copied
//! begin, so each record is read about once. It is exact as of its copy
//! (every value recorded in it until then, a late value included), and
//! counted ([`LiveReader::late`]).
//!
//! An interval is closed [`LiveIntervals::grace_intervals`] intervals
//! after its end (at least one second, at most what the live ring still
//! holds in full): a value that lands in it later still (a request sent
//! more than that late, counted by its intended time) is in the final
//! report but not in the live copy. Only the schedule's intervals are
//! published live, not the drain's. A watcher that handed an interval on
//! before it was complete (its due requests not all settled: a pacer, or
//! requests, more than the grace behind) takes a second look at its
//! counters ([`LiveReader::recheck`]): each thread answers at its next
//! tick, without blocking or allocating.
//!
//! With [`LiveIntervals::enable_so_far`] (the Prometheus push), each copy
//! also carries the thread's whole-run histograms that have no
//! per-interval ones, as they are at the copy (`so_far.rs`): the watcher
//! hands their sum over the threads on with the interval ([`SoFar`]).

use std::boxed::Box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::vec::Vec;

use crate::histogram::{Histogram, SPARSE_MAX_LEN};
use crate::measure::{Counts, Interval, IntervalMetric, IntervalSink, RecordsAt};
use crate::plan::Plan;

use super::so_far::{so_far_slots, Recorded, SoFar, SoFarRoom};
use super::RING_MAX;

/// One interval of a mailbox's batch.
#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    index: usize,
    /// Rebuilt from the series' compacted records while the thread was
    /// behind because of the watcher: it came late.
    late: bool,
    counts: Counts,
    /// Where each histogram's sparse form is in the mailbox's bytes
    /// (start, length; length 0 for an empty one).
    spans: [(usize, usize); 3],
}

/// One thread's mailbox: a batch of consecutive intervals, copied at once
/// into an empty mailbox, taken one by one.
#[derive(Debug)]
struct Mailbox {
    /// Room for [`LiveIntervals::batch_len`] intervals, reserved once.
    entries: Box<[Entry]>,
    /// Intervals in the batch.
    held: usize,
    /// Intervals of the batch the watcher took.
    taken: usize,
    /// Room for three sparse histograms (at least one interval's, whatever
    /// it holds), reserved once; the batch's histograms one after another.
    bytes: Box<[u8]>,
    /// The thread's whole-run histograms as of the batch's copy (no slots
    /// unless [`LiveIntervals::enable_so_far`]).
    so_far: SoFarRoom,
    /// The watcher's question ([`LiveReader::recheck`]): the counters of
    /// this interval again.
    want: Option<usize>,
    /// The thread's answer: an interval and its counters as they stood.
    answer: Option<(usize, Counts)>,
}

impl Mailbox {
    /// The next interval for the watcher, if any.
    fn front(&self) -> Option<&Entry> {
        self.entries[..self.held].get(self.taken)
    }
}

type Shared = Arc<Mutex<Mailbox>>;

/// The span of a mailbox's batch: five times the engines' publishing
/// period (50 ms).
const BATCH_SPAN_NS: u64 = 250_000_000;

/// The most intervals in a mailbox's batch.
const BATCH_MAX: usize = 64;

/// The mailboxes of a run's engine threads: off unless
/// [`LiveIntervals::enable`] was called before the run.
#[derive(Debug, Default)]
pub struct LiveIntervals {
    on: std::sync::atomic::AtomicBool,
    so_far: std::sync::atomic::AtomicBool,
    boxes: Mutex<Vec<Shared>>,
    /// Questions the watcher asked ([`LiveReader::recheck`]): a thread
    /// looks at its mailbox for one only when this moved.
    asks: Arc<AtomicU64>,
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
    /// Where the series' compacted records of `next` and later begin, as
    /// far as known (a copy of one not held in full reads from there).
    records: RecordsAt,
    /// A histogram to rebuild one of those from its records in (reserved
    /// with the mailbox).
    scratch: Option<Box<Histogram>>,
    /// Behind because of the watcher: a call found the last batch not yet
    /// taken, and the thread has not copied every closed interval since.
    behind: bool,
    /// The watcher's count of questions ([`LiveIntervals`]'s `asks`), and
    /// the last value of it this thread answered.
    asks: Option<Arc<AtomicU64>>,
    answered: u64,
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
                entries: std::vec![Entry::default(); LiveIntervals::batch_len(plan)]
                    .into_boxed_slice(),
                held: 0,
                taken: 0,
                bytes: std::vec![0u8; 3 * SPARSE_MAX_LEN].into_boxed_slice(),
                so_far: SoFarRoom::new(slots),
                want: None,
                answer: None,
            }));
            self.boxes
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Arc::clone(&mailbox));
            p.mailbox = Some(mailbox);
            p.scratch = Some(Box::new(Histogram::new()));
            p.asks = Some(Arc::clone(&self.asks));
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

    /// How many intervals of `plan` a mailbox holds: those that close in
    /// 250 ms (five times the period at which the engines publish, 50
    /// ms), between 2 and 64; a thread copies all
    /// the closed intervals it has room for at once, so that it keeps up
    /// with short intervals.
    ///
    /// ```
    /// use metronome_core::engine::LiveIntervals;
    /// use metronome_core::plan::example_plan;
    /// let mut p = example_plan(); // 1 s intervals
    /// assert_eq!(LiveIntervals::batch_len(&p), 2);
    /// p.interval_ns = 20_000_000;
    /// assert_eq!(LiveIntervals::batch_len(&p), 13);
    /// p.interval_ns = 1_000_000;
    /// assert_eq!(LiveIntervals::batch_len(&p), 64);
    /// ```
    pub fn batch_len(plan: &Plan<'_>) -> usize {
        let n = BATCH_SPAN_NS.div_ceil(plan.interval_ns.max(1));
        usize::try_from(n).unwrap_or(BATCH_MAX).clamp(2, BATCH_MAX)
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
    /// the mailbox, when the watcher took the last batch: as many as it has
    /// room for, with the whole-run histograms `recorded` holds now when
    /// the mailbox has room for them. Never blocks, never allocates. An
    /// interval the series no longer holds in full (the watcher or this
    /// call came late) is rebuilt from its compacted records, exactly:
    /// every value recorded in it so far.
    pub(super) fn copy_closed(
        &mut self,
        plan: &Plan<'_>,
        intervals: &dyn IntervalSink,
        recorded: Recorded<'_>,
        now_ns: u64,
    ) {
        self.answer(intervals);
        let Some(mailbox) = &self.mailbox else {
            return;
        };
        let last = LiveIntervals::closed(plan, now_ns).min(intervals.len());
        if self.next >= last {
            return;
        }
        if let Some(at) = intervals.records_end(self.next) {
            self.records = at;
        }
        let Ok(mut m) = mailbox.try_lock() else {
            return;
        };
        if m.taken < m.held {
            self.behind = true;
            return;
        }
        let Mailbox {
            entries,
            held,
            taken,
            bytes,
            so_far,
            ..
        } = &mut *m;
        (*held, *taken) = (0, 0);
        let mut used = 0;
        while self.next < last && *held < entries.len() {
            let i = self.next;
            let entry = &mut entries[*held];
            let copied = if let Some((counts, hists)) = intervals.view(i) {
                entry.counts = *counts;
                entry.late = false;
                hists
                    .iter()
                    .zip(&mut entry.spans)
                    .all(|(h, span)| put(*h, bytes, &mut used, span))
            } else {
                let Some(scratch) = self.scratch.as_deref_mut() else {
                    break;
                };
                entry.late = self.behind;
                rebuild(intervals, i, &mut self.records, scratch, |counts, k, h| {
                    entry.counts = *counts;
                    put(Some(h), bytes, &mut used, &mut entry.spans[k])
                })
            };
            if !copied {
                break;
            }
            entry.index = i;
            *held += 1;
            self.next += 1;
        }
        if *held > 0 {
            so_far.copy(recorded);
        }
        self.behind &= self.next < last;
    }
}

impl Published {
    /// Answers the watcher's question, if it asked one since the last
    /// answer ([`LiveReader::recheck`]): the counters of the interval it
    /// names, as they stand now. An atomic load when there is none; never
    /// blocks (a `try_lock`: when the watcher holds the mailbox, the next
    /// call answers), never allocates.
    fn answer(&mut self, intervals: &dyn IntervalSink) {
        let (Some(mailbox), Some(asks)) = (&self.mailbox, &self.asks) else {
            return;
        };
        let n = asks.load(Ordering::Acquire);
        if n == self.answered {
            return;
        }
        let Ok(mut m) = mailbox.try_lock() else {
            return;
        };
        if let Some(i) = m.want.take() {
            m.answer = Some((i, intervals.counts_at(i).unwrap_or_default()));
        }
        self.answered = n;
    }
}

/// Interval `i` rebuilt from `intervals`' compacted records (read from
/// `*records`, which moves past them when it is done), one histogram at a
/// time in `scratch`: `put` gets its counters, the histogram's place in
/// [`METRICS`] and the histogram; whether `put` took all three (`false`
/// also for an interval with no records).
fn rebuild(
    intervals: &dyn IntervalSink,
    i: usize,
    records: &mut RecordsAt,
    scratch: &mut Histogram,
    mut put: impl FnMut(&Counts, usize, &Histogram) -> bool,
) -> bool {
    let mut after = *records;
    for (k, metric) in METRICS.into_iter().enumerate() {
        scratch.reset();
        let mut add = |m: IntervalMetric, sparse: &[u8]| {
            if m == metric {
                scratch.merge_sparse(sparse);
            }
        };
        // Never `None` for an interval within the series.
        let Some((counts, at)) = intervals.compacted(i, *records, &mut add) else {
            return false;
        };
        if !put(counts, k, scratch) {
            return false;
        }
        after = at;
    }
    *records = after;
    true
}

/// Writes `h`'s sparse form at `*used` in `bytes` when it has room for it
/// (always in an empty mailbox) and sets `span` to where it is: nothing
/// for no or an empty histogram.
fn put(
    h: Option<&Histogram>,
    bytes: &mut [u8],
    used: &mut usize,
    span: &mut (usize, usize),
) -> bool {
    let Some(h) = h.filter(|h| !h.is_empty()) else {
        *span = (*used, 0);
        return true;
    };
    let room = &mut bytes[*used..];
    if room.len() < SPARSE_MAX_LEN && h.sparse_len() > room.len() {
        return false;
    }
    let len = h.encode_sparse(room);
    *span = (*used, len);
    *used += len;
    true
}

/// The metrics of a mailbox's histograms, in their order.
const METRICS: [IntervalMetric; 3] = [
    IntervalMetric::Latency,
    IntervalMetric::SendLag,
    IntervalMetric::Ttft,
];

/// The watcher's side: takes the closed intervals from every mailbox and
/// merges them, in order.
#[derive(Debug)]
pub struct LiveReader {
    next: usize,
    merged: Box<Interval>,
    so_far: Box<SoFar>,
    taken: Vec<bool>,
    /// Whether a thread copied interval `next` late.
    next_late: bool,
    late: usize,
    /// The interval asked about ([`LiveReader::recheck`]), until every
    /// thread answered.
    asking: Option<usize>,
}

impl Default for LiveReader {
    fn default() -> Self {
        LiveReader {
            next: 0,
            merged: Box::new(Interval::new()),
            so_far: Box::default(),
            taken: Vec::new(),
            next_late: false,
            late: 0,
            asking: None,
        }
    }
}

impl LiveReader {
    /// The next interval to come (all before it were handed on).
    pub fn next(&self) -> usize {
        self.next
    }

    /// How many of the intervals handed on came late: a thread had
    /// compacted the interval's histograms before the watcher took the
    /// one before it (the watcher fell behind), and rebuilt them from the
    /// compacted records for the copy. Each is still exact: every value
    /// recorded in it up to its copy, later than its grace.
    pub fn late(&self) -> usize {
        self.late
    }

    /// A second look at interval `i`, handed on before (by
    /// [`LiveReader::poll`]) when it was not yet complete: the first call
    /// asks every thread of `live` for the interval's counters as they
    /// stand; a later one returns their sum once every thread answered (at
    /// its next publishing tick, within about 50 ms), `None` until then.
    /// Ask again for a newer look. A thread that no longer publishes (its
    /// part of the run is over) never answers.
    pub fn recheck(&mut self, live: &LiveIntervals, i: usize) -> Option<Counts> {
        let boxes: Vec<Shared> = live
            .boxes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if boxes.is_empty() {
            return None;
        }
        fn lock(b: &Shared) -> std::sync::MutexGuard<'_, Mailbox> {
            b.lock().unwrap_or_else(PoisonError::into_inner)
        }
        if self.asking != Some(i) {
            for b in &boxes {
                let mut m = lock(b);
                (m.want, m.answer) = (Some(i), None);
            }
            self.asking = Some(i);
            live.asks.fetch_add(1, Ordering::Release);
            return None;
        }
        let mut sum = Counts::new();
        for b in &boxes {
            match lock(b).answer {
                Some((k, c)) if k == i => sum.merge(&c),
                _ => return None,
            }
        }
        for b in &boxes {
            lock(b).answer = None;
        }
        self.asking = None;
        Some(sum)
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
        loop {
            for (k, b) in boxes.iter().enumerate() {
                if self.taken[k] {
                    continue;
                }
                let mut m = b.lock().unwrap_or_else(PoisonError::into_inner);
                let Some(&entry) = m.front().filter(|e| e.index == self.next) else {
                    continue;
                };
                self.next_late |= entry.late;
                self.merged.counts.merge(&entry.counts);
                for (metric, (at, len)) in METRICS.into_iter().zip(entry.spans) {
                    if len > 0 {
                        self.merged
                            .histogram_mut(metric)
                            .merge_sparse(&m.bytes[at..at + len]);
                    }
                }
                m.so_far.merge_into(&mut self.so_far);
                m.taken += 1;
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
            self.late += usize::from(self.next_late);
            self.next_late = false;
            self.next += 1;
            self.taken.iter_mut().for_each(|t| *t = false);
            self.merged.counts = Counts::new();
            self.merged.latency.reset();
            self.merged.send_lag.reset();
            self.merged.ttft.reset();
            self.so_far.reset();
        }
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

    /// Issue 38: an interval handed on before it was complete is looked
    /// at again ([`LiveReader::recheck`]): the first call asks, each thread
    /// answers at its next tick with the interval's counters as they stand
    /// then (a late booking included, even once compacted), and the next
    /// call returns their sum, exactly; a thread that has not ticked yet
    /// holds the answer back. No question, no lock: a tick without one
    /// leaves the mailbox alone.
    #[test]
    fn a_second_look_at_an_interval_sums_the_threads_as_they_stand() {
        let mut plan = example_plan();
        plan.warmup_ns = 0;
        plan.interval_ns = 20_000_000;
        plan.duration_ns = 1_000_000_000;
        let live = LiveIntervals::default();
        live.enable();
        let mut pubs = [live.register(&plan), live.register(&plan)];
        let rec = Recorder::new();
        let mut series = [Series::for_plan(&plan), Series::for_plan(&plan)];
        for (t, s) in series.iter_mut().enumerate() {
            let c = s.counts(2).unwrap();
            (c.scheduled, c.settled, c.late) = (10, 4 + t as u64, 1);
        }
        let mut reader = LiveReader::default();
        // Nothing asked: a tick answers nothing.
        for (p, s) in pubs.iter_mut().zip(&series) {
            p.copy_closed(&plan, s, recorded(&rec, &[]), 0);
        }
        assert_eq!(reader.recheck(&live, 2), None, "the first call asks");
        assert_eq!(reader.recheck(&live, 2), None, "no thread answered yet");
        // Interval 2 goes on: far behind (the series compacted it), one
        // thread settles the rest of its due requests, late.
        for step in 3..40 {
            for s in &mut series {
                s.record(step, IntervalMetric::Latency, 1_000);
            }
        }
        let c = series[0].counts(2).unwrap();
        (c.settled, c.late) = (10, 7);
        pubs[0].copy_closed(&plan, &series[0], recorded(&rec, &[]), 0);
        assert_eq!(reader.recheck(&live, 2), None, "thread 1 did not answer");
        pubs[1].copy_closed(&plan, &series[1], recorded(&rec, &[]), 0);
        let sum = reader.recheck(&live, 2).expect("both answered");
        assert_eq!((sum.scheduled, sum.settled, sum.late), (20, 15, 8));
        assert!(!sum.is_complete(Some(20)));
        // Asked again: a newer look.
        let c = series[1].counts(2).unwrap();
        (c.settled, c.late) = (10, 2);
        assert_eq!(reader.recheck(&live, 2), None);
        for (p, s) in pubs.iter_mut().zip(&series) {
            p.copy_closed(&plan, s, recorded(&rec, &[]), 0);
        }
        let sum = reader.recheck(&live, 2).unwrap();
        assert_eq!((sum.scheduled, sum.settled, sum.late), (20, 20, 9));
        assert!(sum.is_complete(Some(20)));
    }

    /// A watcher that takes nothing for 30 intervals of 20 ms (the series
    /// keeps 16 in full, the grace is 14), then catches up (the threads
    /// copy up to 13 at once): every interval arrives, in order, each
    /// exactly as the threads held it when they copied it (rebuilt from the
    /// compacted records when they had compacted it, a value that landed
    /// after the compaction included), and those are counted late.
    #[test]
    fn a_late_watcher_gets_every_interval_exactly() {
        use crate::rng::Pcg32;
        let mut plan = example_plan();
        plan.warmup_ns = 0;
        plan.interval_ns = 20_000_000;
        plan.duration_ns = 1_200_000_000;
        let n = plan.interval_count();
        assert_eq!(n, 60);
        let grace = LiveIntervals::grace_intervals(&plan);
        let ring = Series::ring_len(&plan);
        let batch = LiveIntervals::batch_len(&plan);
        assert_eq!((grace, ring, batch), (14, 16, 13));
        let live = LiveIntervals::default();
        live.enable();
        let mut pubs = [live.register(&plan), live.register(&plan)];
        let mut series = [Series::for_plan(&plan), Series::for_plan(&plan)];
        let rec = Recorder::new();
        let mut reader = LiveReader::default();
        let mut rng = Pcg32::seeded(33);
        // Each thread's interval j as it held it when it copied it.
        let mut copied: [Vec<Option<Interval>>; 2] = [std::vec![None; n], std::vec![None; n]];
        let mut late = std::vec![false; n];
        // A value landed in j after its histograms were compacted, before
        // its copy.
        let mut after_compaction = std::vec![false; n];
        let mut seen: Vec<(usize, Interval)> = Vec::new();
        let stall = 10..40;
        for step in 0..(n + grace + 40) {
            for (t, s) in series.iter_mut().enumerate() {
                if step >= n {
                    break;
                }
                let v = (step as u64 + 1) * 1000 * (t as u64 + 1);
                s.record(step, IntervalMetric::Latency, v);
                s.record(step, IntervalMetric::SendLag, v / 3);
                if step % 4 == 0 {
                    s.record(step, IntervalMetric::Ttft, v / 2);
                }
                s.counts(step).unwrap().ok += 1 + t as u64;
                // A late one, sometimes older than the ring.
                let back = rng.below(26) as usize;
                if let Some(j) = step.checked_sub(back) {
                    let metric = [IntervalMetric::Latency, IntervalMetric::Ttft][step % 2];
                    s.record(j, metric, 7 + rng.below(1 << 20));
                    s.counts(j).unwrap().late += 1;
                    if back >= ring && pubs[t].next <= j {
                        after_compaction[j] = true;
                    }
                }
            }
            let now = step as u64 * plan.interval_ns;
            for (t, (p, s)) in pubs.iter_mut().zip(&series).enumerate() {
                let from = p.next;
                let behind = p.behind;
                p.copy_closed(&plan, s, recorded(&rec, &[]), now);
                assert!(p.next - from <= batch, "{from} {}", p.next);
                for j in from..p.next {
                    // Compacted before a copy behind the watcher.
                    late[j] |= behind && s.view(j).is_none();
                    s.for_each(|i, iv| {
                        if i == j {
                            copied[t][j] = Some(iv.clone());
                        }
                    });
                }
            }
            if !stall.contains(&step) {
                reader.poll(&live, |i, iv, _| seen.push((i, iv.clone())));
            }
        }
        assert_eq!(seen.len(), n);
        for (k, (i, iv)) in seen.iter().enumerate() {
            assert_eq!(*i, k);
            let mut want = copied[0][k].clone().expect("copied");
            want.merge(copied[1][k].as_ref().expect("copied"));
            assert_eq!(iv, &want, "interval {k}");
            assert!(iv.ok == 3 && iv.latency.count() >= 2, "interval {k}");
        }
        let n_late = late.iter().filter(|&&l| l).count();
        assert_eq!(reader.late(), n_late);
        assert!(n_late >= 20, "{n_late}");
        // The late copies read values compacted on their own, too.
        assert!(
            (0..n).any(|j| late[j] && after_compaction[j]),
            "{after_compaction:?}"
        );
        // Caught up: the last intervals were copied in time.
        assert!(!late[n - 1]);
    }

    /// A mailbox not yet taken holds its batch: the thread copies the next
    /// closed intervals (two at most with 1 s intervals) only after the
    /// watcher took it.
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
        assert_eq!(LiveIntervals::batch_len(&plan), 2);
        // Three intervals closed at 4.5 s: a batch of two.
        p.copy_closed(&plan, &s, rec, 4_500_000_000);
        assert_eq!((p.next, p.behind), (2, false));
        p.copy_closed(&plan, &s, rec, 4_500_000_000);
        assert_eq!((p.next, p.behind), (2, true));
        let mut reader = LiveReader::default();
        assert_eq!(reader.poll(&live, |_, _, _| {}), 2);
        p.copy_closed(&plan, &s, rec, 4_500_000_000);
        p.copy_closed(&plan, &s, rec, 4_500_000_000);
        assert_eq!((p.next, p.behind), (3, false));
        assert_eq!(reader.poll(&live, |_, _, _| {}), 1);
        assert_eq!(reader.next(), 3);
        // All five closed: the last two at once.
        p.copy_closed(&plan, &s, rec, 10_000_000_000);
        assert_eq!((p.next, p.behind), (5, false));
        assert_eq!(reader.poll(&live, |_, _, _| {}), 2);
        assert_eq!(reader.late(), 0);
        // Off: no mailbox, nothing copied.
        let off = LiveIntervals::default();
        let mut q = off.register(&plan);
        q.copy_closed(&plan, &s, rec, 4_500_000_000);
        assert_eq!((q.next, off.mailboxes()), (0, 0));
    }
}
