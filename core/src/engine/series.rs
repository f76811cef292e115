//! [`Series`]: the per-interval series of one engine thread (or of a
//! merged run) at a memory that does not grow with the planned duration
//! beyond a small cost per interval.
//!
//! - The [`Counts`] of every interval (136 bytes each), sized before the
//!   clock from [`Plan::series_len`]: the counters keyed by intended time
//!   (scheduled, late, waited...) can come long after it, so each interval
//!   keeps its own for the whole run.
//! - The three histograms (latency, send lag, TTFT) of the few **live**
//!   intervals in full, in a ring of [`Series::ring_len`] slots (about
//!   177 KB each): interval `i` lives in
//!   slot `i % ring_len` until a later interval needs the slot. Values
//!   enter by the time of their own event (a send, a completion), which an
//!   engine records as it happens, so they reach the newest intervals.
//! - A closed interval's histograms, compacted into their non-empty buckets
//!   ([`Histogram::encode_sparse`], about two bytes a bucket plus a header)
//!   in byte chunks of [`CHUNK_BYTES`], the first reserved before the
//!   clock: closing an interval allocates only when a chunk is full (one
//!   allocation per megabyte of compacted intervals). A value for an
//!   interval whose slot was already taken by a later one is compacted on
//!   its own, as a one-value record: rare, and still exact.
//!
//! Nothing is lost or approximated: [`Series::for_each`] gives every
//! interval exactly as a `Vec<Interval>` would have held it, and
//! [`Series::merge`] adds another series exactly.

use std::boxed::Box;
use std::vec::Vec;

use crate::histogram::Histogram;
use crate::measure::{Counts, Interval, IntervalMetric, IntervalSink, RecordsAt};
use crate::plan::Plan;

/// Bytes per chunk of compacted intervals (1 MiB): more than one record's
/// largest size ([`crate::histogram::SPARSE_MAX_LEN`] and its header).
pub const CHUNK_BYTES: usize = 1 << 20;

/// The most live intervals a series keeps in full.
pub const RING_MAX: usize = 16;

/// Header of a record: the interval index (varint, at most 10 bytes) and
/// the metric (1 byte).
const RECORD_HEADER_MAX: usize = 11;

/// One live slot of the ring: an interval's three histograms in full.
#[derive(Clone, Debug)]
struct Live {
    /// The interval it holds; `usize::MAX` when free.
    index: usize,
    latency: Histogram,
    send_lag: Histogram,
    ttft: Histogram,
}

impl Live {
    fn histogram_mut(&mut self, metric: IntervalMetric) -> &mut Histogram {
        match metric {
            IntervalMetric::Latency => &mut self.latency,
            IntervalMetric::SendLag => &mut self.send_lag,
            IntervalMetric::Ttft => &mut self.ttft,
        }
    }
}

/// The per-interval series of one engine thread: counters for every
/// interval, full histograms for the live ones, a closed one's buckets kept
/// sparse (see this file's module docs).
#[derive(Clone, Debug)]
pub struct Series {
    counts: Vec<Counts>,
    schedule: usize,
    live: Vec<Live>,
    /// Records: interval (varint), metric (0 latency, 1 send lag, 2 TTFT),
    /// the sparse histogram.
    chunks: Vec<Vec<u8>>,
    /// The newest interval a live slot was taken by (0 before any;
    /// `usize::MAX` once merged): no interval `j` has a record while
    /// `newest < j + ring` (its slot was never taken by a later one).
    newest: usize,
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn get_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..70).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

impl Series {
    /// A series of `len` intervals, the first `schedule` of them the
    /// schedule's, keeping `ring` intervals live (at least 1, at most
    /// [`RING_MAX`], at most `len`).
    ///
    /// ```
    /// use metronome_core::engine::Series;
    /// use metronome_core::measure::{IntervalMetric, IntervalSink};
    /// let mut s = Series::new(5, 4, 2);
    /// for i in 0..5 {
    ///     s.record(i, IntervalMetric::Latency, 1000 * (i as u64 + 1));
    ///     s.counts(i).unwrap().ok += 1;
    /// }
    /// s.record(0, IntervalMetric::Latency, 7); // its slot went to interval 4
    /// let mut seen = Vec::new();
    /// s.for_each(|i, iv| seen.push((i, iv.ok, iv.latency.count(), iv.latency.max())));
    /// assert_eq!(seen[0], (0, 1, 2, 1000));
    /// assert_eq!(seen[4], (4, 1, 1, 5000));
    /// ```
    pub fn new(len: usize, schedule: usize, ring: usize) -> Series {
        let ring = ring.clamp(1, RING_MAX).min(len.max(1));
        Series {
            counts: std::vec![Counts::new(); len],
            schedule: schedule.min(len),
            live: (0..ring)
                .map(|_| Live {
                    index: usize::MAX,
                    latency: Histogram::new(),
                    send_lag: Histogram::new(),
                    ttft: Histogram::new(),
                })
                .collect(),
            chunks: std::vec![Vec::with_capacity(CHUNK_BYTES)],
            newest: 0,
        }
    }

    /// The series of a run of `plan`: [`Plan::series_len`] intervals (the
    /// schedule's [`Plan::interval_count`], then the drain's), and
    /// [`Series::ring_len`] live ones.
    pub fn for_plan(plan: &Plan<'_>) -> Series {
        Series::new(
            plan.series_len(),
            plan.interval_count(),
            Series::ring_len(plan),
        )
    }

    /// How many intervals a series of `plan` keeps live: those a value can
    /// still reach while an engine records as events happen, two seconds
    /// of them (a busy thread's delay), plus the current and the previous
    /// one for the progress line, between 2 and [`RING_MAX`].
    ///
    /// ```
    /// use metronome_core::engine::Series;
    /// use metronome_core::plan::example_plan;
    /// let mut p = example_plan(); // 1 s intervals
    /// assert_eq!(Series::ring_len(&p), 4);
    /// p.interval_ns = 1_000_000; // 1 ms
    /// assert_eq!(Series::ring_len(&p), 16);
    /// ```
    pub fn ring_len(plan: &Plan<'_>) -> usize {
        let behind = 2_000_000_000u64.div_ceil(plan.interval_ns.max(1));
        (behind.saturating_add(2) as usize).clamp(2, RING_MAX)
    }

    /// The bytes this series holds, reserved or used: the counters, the
    /// live ring and the chunks' capacity (what a plan's size costs; see
    /// docs/report.md, "Memory").
    pub fn reserved_bytes(&self) -> usize {
        self.counts.capacity() * core::mem::size_of::<Counts>()
            + self.live.capacity() * core::mem::size_of::<Live>()
            + self.chunks.iter().map(Vec::capacity).sum::<usize>()
    }

    /// The bytes of compacted intervals written so far.
    pub fn compacted_bytes(&self) -> usize {
        self.chunks.iter().map(Vec::len).sum()
    }

    /// Number of intervals of the schedule (the rest are the drain's).
    pub fn schedule_len(&self) -> usize {
        self.schedule
    }

    /// Compacts the live slot `s` and frees it.
    fn close(&mut self, s: usize) {
        let slot = &mut self.live[s];
        if slot.index != usize::MAX {
            push_slot(&mut self.chunks, slot);
        }
        slot.latency.reset();
        slot.send_lag.reset();
        slot.ttft.reset();
        slot.index = usize::MAX;
    }

    /// Calls `f` with every interval in order, each exactly as recorded
    /// (counters, latency, send lag and TTFT), decoded one at a time into one
    /// scratch interval.
    pub fn for_each(&self, mut f: impl FnMut(usize, &Interval)) {
        // Where each interval's records are: (interval, chunk, offset).
        let mut index: Vec<(usize, IntervalMetric, usize, usize)> = Vec::new();
        for (c, chunk) in self.chunks.iter().enumerate() {
            let mut at = 0;
            while let Some(r) = record_at(chunk, at) {
                index.push((r.interval, r.metric, c, r.body.start));
                at = r.body.end;
            }
        }
        index.sort_by_key(|&(i, ..)| i);
        let mut scratch = Box::new(Interval::new());
        let mut next = 0;
        for (i, counts) in self.counts.iter().enumerate() {
            scratch.counts = *counts;
            scratch.latency.reset();
            scratch.send_lag.reset();
            scratch.ttft.reset();
            while next < index.len() && index[next].0 < i {
                next += 1;
            }
            while next < index.len() && index[next].0 == i {
                let (_, metric, c, at) = index[next];
                scratch
                    .histogram_mut(metric)
                    .merge_sparse(&self.chunks[c][at..]);
                next += 1;
            }
            for slot in self.live.iter().filter(|s| s.index == i) {
                scratch.latency.merge(&slot.latency);
                scratch.send_lag.merge(&slot.send_lag);
                scratch.ttft.merge(&slot.ttft);
            }
            f(i, &scratch);
        }
    }

    /// Every interval in full (tests and small series: 177 KB each).
    pub fn to_vec(&self) -> Vec<Interval> {
        let mut v = Vec::new();
        self.for_each(|_, iv| v.push(iv.clone()));
        v
    }

    /// Adds another series exactly: counters interval by interval (growing
    /// to the longer series), and its histograms as records.
    pub fn merge(&mut self, other: &Series) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), Counts::new());
        }
        self.schedule = self.schedule.max(other.schedule);
        // Records of any interval now: a compacted read starts at the first.
        self.newest = usize::MAX;
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            a.merge(b);
        }
        for chunk in other.chunks.iter().filter(|c| !c.is_empty()) {
            // Keep the current chunk last: its spare room is for closes.
            let at = self.chunks.len() - 1;
            self.chunks.insert(at, chunk.clone());
        }
        for slot in other.live.iter().filter(|s| s.index != usize::MAX) {
            push_slot(&mut self.chunks, slot);
        }
    }
}

/// Compacts the histograms of a live slot into the chunks.
fn push_slot(chunks: &mut Vec<Vec<u8>>, slot: &Live) {
    push(chunks, slot.index, IntervalMetric::Latency, &slot.latency);
    push(chunks, slot.index, IntervalMetric::SendLag, &slot.send_lag);
    push(chunks, slot.index, IntervalMetric::Ttft, &slot.ttft);
}

/// Room in the last chunk for `need` bytes: a new chunk when it is full
/// (the only allocation while the clock runs).
fn room(chunks: &mut Vec<Vec<u8>>, need: usize) -> &mut Vec<u8> {
    let full = !matches!(chunks.last(), Some(c) if c.capacity() - c.len() >= need);
    if full {
        chunks.push(Vec::with_capacity(CHUNK_BYTES.max(need)));
    }
    chunks.last_mut().expect("a chunk")
}

fn metric_byte(metric: IntervalMetric) -> u8 {
    match metric {
        IntervalMetric::Latency => 0,
        IntervalMetric::SendLag => 1,
        IntervalMetric::Ttft => 2,
    }
}

/// One record of a chunk, read in place.
struct Record {
    interval: usize,
    metric: IntervalMetric,
    /// Where its sparse histogram is in the chunk.
    body: core::ops::Range<usize>,
}

/// The record at byte `at` of `chunk`, if one starts there.
fn record_at(chunk: &[u8], mut at: usize) -> Option<Record> {
    let interval = get_varint(chunk, &mut at)? as usize;
    let metric = match *chunk.get(at)? {
        0 => IntervalMetric::Latency,
        1 => IntervalMetric::SendLag,
        _ => IntervalMetric::Ttft,
    };
    at += 1;
    let len = sparse_len_at(chunk.get(at..)?)?;
    Some(Record {
        interval,
        metric,
        body: at..at + len,
    })
}

/// Appends one record: interval `i`, `metric`, the sparse form of `h`.
fn push(chunks: &mut Vec<Vec<u8>>, i: usize, metric: IntervalMetric, h: &Histogram) {
    if h.is_empty() {
        return;
    }
    let len = h.sparse_len();
    let chunk = room(chunks, RECORD_HEADER_MAX + len);
    put_varint(chunk, i as u64);
    chunk.push(metric_byte(metric));
    let at = chunk.len();
    chunk.resize(at + len, 0);
    h.encode_sparse(&mut chunk[at..]);
}

/// Appends a record of the one value `v` (the sparse form of a histogram
/// holding only `v`), without a 58 KiB histogram to encode it from.
fn push_one(chunks: &mut Vec<Vec<u8>>, i: usize, metric: IntervalMetric, v: u64) {
    let chunk = room(chunks, RECORD_HEADER_MAX + 7 * 10);
    put_varint(chunk, i as u64);
    chunk.push(metric_byte(metric));
    for x in [1, v, v, v, 0, crate::histogram::bucket_index(v) as u64, 1] {
        put_varint(chunk, x);
    }
}

/// The length of the sparse histogram at the start of `bytes`.
fn sparse_len_at(bytes: &[u8]) -> Option<usize> {
    let mut at = 0;
    let n = get_varint(bytes, &mut at)?;
    if n == 0 {
        return Some(at);
    }
    for _ in 0..4 + 2 * n {
        get_varint(bytes, &mut at)?;
    }
    Some(at)
}

impl IntervalSink for Series {
    fn len(&self) -> usize {
        self.counts.len()
    }

    fn counts(&mut self, i: usize) -> Option<&mut Counts> {
        self.counts.get_mut(i)
    }

    fn record(&mut self, i: usize, metric: IntervalMetric, v: u64) {
        if i >= self.counts.len() {
            return;
        }
        let s = i % self.live.len();
        let held = self.live[s].index;
        if held != i {
            if held == usize::MAX || held < i {
                self.close(s);
                self.live[s].index = i;
                self.newest = self.newest.max(i);
            } else {
                // Older than the ring: one value, compacted on its own.
                push_one(&mut self.chunks, i, metric, v);
                return;
            }
        }
        self.live[s].histogram_mut(metric).record(v);
    }

    fn p99s(&self, i: usize) -> Option<(u64, u64)> {
        let slot = self.live.get(i % self.live.len())?;
        (slot.index == i).then(|| (slot.latency.quantile(0.99), slot.send_lag.quantile(0.99)))
    }
    fn samples(&self, i: usize) -> Option<(u64, u64)> {
        let slot = self.live.get(i % self.live.len())?;
        (slot.index == i).then(|| (slot.latency.count(), slot.send_lag.count()))
    }
    fn counts_at(&self, i: usize) -> Option<Counts> {
        self.counts.get(i).copied()
    }

    fn view(&self, i: usize) -> Option<(&Counts, [Option<&Histogram>; 3])> {
        let counts = self.counts.get(i)?;
        let slot = self.live.get(i % self.live.len())?;
        if slot.index == i {
            Some((
                counts,
                [Some(&slot.latency), Some(&slot.send_lag), Some(&slot.ttft)],
            ))
        } else if slot.index == usize::MAX || slot.index < i {
            // No value of interval `i` yet: a slot is taken by its first.
            Some((counts, [None; 3]))
        } else {
            // Compacted already.
            None
        }
    }

    fn records_end(&self, from: usize) -> Option<RecordsAt> {
        // A record of `j` is written only once a later interval took its
        // slot: `j + ring` or later.
        (self.newest < from.saturating_add(self.live.len())).then(|| self.end())
    }

    fn compacted(
        &self,
        i: usize,
        from: RecordsAt,
        f: &mut dyn FnMut(IntervalMetric, &[u8]),
    ) -> Option<(&Counts, RecordsAt)> {
        let counts = self.counts.get(i)?;
        // The first record of a later interval: the next read's start.
        let mut later = None;
        for (c, chunk) in self.chunks.iter().enumerate().skip(from.chunk) {
            let mut at = if c == from.chunk { from.at } else { 0 };
            while let Some(r) = record_at(chunk, at) {
                if r.interval == i {
                    f(r.metric, &chunk[r.body.clone()]);
                } else if r.interval > i && later.is_none() {
                    later = Some(RecordsAt { chunk: c, at });
                }
                at = r.body.end;
            }
        }
        Some((counts, later.unwrap_or_else(|| self.end())))
    }
}

impl Series {
    /// Where the next record will be written (or a new chunk after it).
    fn end(&self) -> RecordsAt {
        let chunk = self.chunks.len().saturating_sub(1);
        RecordsAt {
            chunk,
            at: self.chunks.get(chunk).map_or(0, Vec::len),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::example_plan;
    use crate::rng::Pcg32;

    /// Random values into random intervals, mostly the newest ones and
    /// sometimes far behind: the series holds exactly what a `Vec` of full
    /// intervals holds, before and after a merge.
    #[test]
    fn holds_exactly_what_full_intervals_hold() {
        let (len, ring) = (40, 3);
        let mut series = Series::new(len, 30, ring);
        let mut full = std::vec![Interval::new(); len];
        let mut rng = Pcg32::seeded(7);
        for step in 0..20_000u32 {
            let now = (step / 500) as usize;
            let back = if rng.below(50) == 0 {
                rng.below(10)
            } else {
                rng.below(2)
            };
            let i = now.saturating_sub(back as usize);
            let v = u64::from(rng.next_u32()) >> rng.below(32);
            let metric = match rng.below(3) {
                0 => IntervalMetric::Latency,
                1 => IntervalMetric::SendLag,
                _ => IntervalMetric::Ttft,
            };
            series.record(i, metric, v);
            full.record(i, metric, v);
            series.counts(i).unwrap().ok += 1;
            full.counts(i).unwrap().ok += 1;
        }
        assert_eq!(series.to_vec(), full);
        let mut twice = series.clone();
        twice.merge(&series);
        let doubled: Vec<Interval> = full
            .iter()
            .map(|iv| {
                let mut d = iv.clone();
                d.merge(iv);
                d
            })
            .collect();
        assert_eq!(twice.to_vec(), doubled);
    }

    /// Through the ledger: a completion after the schedule's end counts in
    /// an interval of the drain, not in the schedule's last one (before
    /// issue 30 it was folded into it); past the series it counts in the
    /// last interval.
    #[test]
    fn completions_after_the_end_are_the_drains() {
        use crate::exchange::Finish;
        use crate::ledger::{Ledger, Tally};
        use crate::measure::Recorder;
        let plan = example_plan(); // 0.5 s warmup, 1 s measured, timeout 2 s
        let ledger = Ledger::new(&plan);
        let mut rec = Recorder::new();
        let mut series = Series::for_plan(&plan);
        assert_eq!((series.len(), series.schedule_len()), (3, 1));
        let mut tally = Tally {
            recorder: &mut rec,
            intervals: &mut series,
            stages: &mut [],
            names: &mut [],
            samples: None,
            follow_ups: None,
            requests: None,
        };
        const MS: u64 = 1_000_000;
        for (intended, sent, done) in [
            (600, 600, 700),    // within the schedule
            (1400, 1400, 1600), // done 0.1 s after the end: drain interval 1
            (1450, 1550, 2600), // sent after the end, done in drain interval 2
            (1460, 1460, 9000), // done past the hard end: the last interval
        ] {
            ledger.sent(&mut tally, intended * MS, 0, sent * MS);
            ledger.done(
                &mut tally,
                intended * MS,
                0,
                sent * MS,
                done * MS,
                Finish::Ok,
            );
        }
        let ivs = series.to_vec();
        let col = |f: fn(&Interval) -> u64| ivs.iter().map(f).collect::<Vec<_>>();
        assert_eq!(col(|i| i.ok), [1, 1, 2]);
        assert_eq!(col(|i| i.sent), [3, 1, 0]);
        assert_eq!(col(|i| i.latency.max()), [100 * MS, 200 * MS, 7540 * MS]);
        assert_eq!(rec.late_sent, 1);
    }

    /// A 24 h plan at one-second intervals reserves a bounded amount before
    /// the clock: its counters (136 bytes an interval), a ring of a few live
    /// intervals and one chunk; the same for 2 h but for the counters.
    #[test]
    fn a_day_long_plan_reserves_a_bounded_amount() {
        let day = crate::plan::Plan {
            duration_ns: 86_400_000_000_000,
            ..example_plan()
        };
        let s = Series::for_plan(&day);
        assert_eq!(s.len(), 86_400 + 2);
        assert_eq!(core::mem::size_of::<Counts>(), 136);
        let live = Series::ring_len(&day) * core::mem::size_of::<Live>();
        assert_eq!(s.reserved_bytes(), (86_400 + 2) * 136 + live + CHUNK_BYTES);
        // About 13 MB: a day of full intervals would cost 86,402 x 177 KB (15 GB).
        assert!(s.reserved_bytes() < 13 << 20, "{}", s.reserved_bytes());
        // Compacted, a closed interval of 50 requests costs a few hundred
        // bytes: 50 latencies over ~30 buckets and 50 send lags.
        let mut s = Series::new(3, 3, 2);
        let mut rng = Pcg32::seeded(1);
        for i in 0..3 {
            for _ in 0..50 {
                s.record(i, IntervalMetric::Latency, 1_000_000 + rng.below(9_000_000));
                s.record(i, IntervalMetric::SendLag, rng.below(100_000));
            }
        }
        // Interval 0 closed when interval 2 took its slot.
        assert!(
            s.compacted_bytes() > 0 && s.compacted_bytes() < 400,
            "{}",
            s.compacted_bytes()
        );
    }
}
