//! Storage an engine thread reserves before the clock and only fills
//! while it runs: the exact samples of the per-request metrics
//! ([`ExactSamples`]) and the conversations' next turns waiting for their
//! intended time ([`FollowUps`]).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::vec::Vec;

use crate::measure::{Exact, ExactSet, SampleSink};

/// The exact samples of one engine thread (or a whole run, merged): one
/// list per [`Exact`] metric, reserved before the clock and never grown
/// while it runs ([`SampleSink::record`] counts a sample that finds no
/// room as lost instead), so a metric's exact percentiles exist only when
/// none was lost. Weighted metrics ([`Exact::is_weighted`]) keep each
/// sample's weight beside it.
#[derive(Clone, Debug, Default)]
pub struct ExactSamples {
    values: [Vec<u64>; Exact::COUNT],
    weights: [Vec<u32>; Exact::COUNT],
    lost: [u64; Exact::COUNT],
}

impl ExactSamples {
    /// Room for `n` samples of each of metronome's own metrics
    /// ([`Exact::OWN`]; 0: keep none).
    pub fn with_capacity(n: usize) -> ExactSamples {
        ExactSamples::with_peers(n, ExactSet::EMPTY)
    }

    /// Room for `n` samples of each of metronome's own metrics and of each
    /// peer metric in `peers` (and their weights, for weighted ones).
    ///
    /// ```
    /// use metronome_core::engine::ExactSamples;
    /// use metronome_core::measure::{Exact, ExactSet, SampleSink};
    /// let mut s = ExactSamples::with_peers(2, ExactSet::of(&[Exact::GuidellmItl]));
    /// s.record_weighted(Exact::GuidellmItl, 30, 4);
    /// s.record_weighted(Exact::GuidellmItl, 10, 1);
    /// assert_eq!(s.weighted(Exact::GuidellmItl).as_deref(), Some(&[(10, 1), (30, 4)][..]));
    /// s.record(Exact::VllmTtft, 5); // not asked: no room
    /// assert_eq!(s.sorted(Exact::VllmTtft), None);
    /// ```
    pub fn with_peers(n: usize, peers: ExactSet) -> ExactSamples {
        let kept = |m: Exact| Exact::OWN.contains(&m) || peers.contains(m);
        ExactSamples {
            values: core::array::from_fn(|i| {
                Vec::with_capacity(if kept(Exact::ALL[i]) { n } else { 0 })
            }),
            weights: core::array::from_fn(|i| {
                let m = Exact::ALL[i];
                Vec::with_capacity(if kept(m) && m.is_weighted() { n } else { 0 })
            }),
            lost: [0; Exact::COUNT],
        }
    }

    /// Adds another thread's samples (after the clock: may allocate).
    pub fn merge(&mut self, other: &ExactSamples) {
        for i in 0..Exact::COUNT {
            self.values[i].extend_from_slice(&other.values[i]);
            self.weights[i].extend_from_slice(&other.weights[i]);
            self.lost[i] += other.lost[i];
        }
    }

    /// Every sample of `metric`, sorted, when none was lost and at least
    /// one was kept; `None` otherwise (the histogram is the answer then).
    ///
    /// ```
    /// use metronome_core::engine::ExactSamples;
    /// use metronome_core::measure::{Exact, SampleSink};
    /// let mut s = ExactSamples::with_capacity(2);
    /// s.record(Exact::Latency, 30);
    /// s.record(Exact::Latency, 10);
    /// assert_eq!(s.sorted(Exact::Latency).as_deref(), Some(&[10, 30][..]));
    /// s.record(Exact::Latency, 20); // no room: lost, and no exact answer
    /// assert_eq!(s.sorted(Exact::Latency), None);
    /// assert_eq!(s.sorted(Exact::Ttft), None);
    /// ```
    pub fn sorted(&self, metric: Exact) -> Option<Vec<u64>> {
        let v = &self.values[metric.index()];
        if self.lost[metric.index()] > 0 || v.is_empty() {
            return None;
        }
        let mut v = v.clone();
        v.sort_unstable();
        Some(v)
    }

    /// Every sample of `metric` with its weight (1 for an unweighted
    /// metric), sorted, under the same rule as [`ExactSamples::sorted`].
    pub fn weighted(&self, metric: Exact) -> Option<Vec<(u64, u64)>> {
        let i = metric.index();
        let v = &self.values[i];
        if self.lost[i] > 0 || v.is_empty() {
            return None;
        }
        let mut p: Vec<(u64, u64)> = if metric.is_weighted() {
            if self.weights[i].len() != v.len() {
                return None;
            }
            v.iter()
                .zip(&self.weights[i])
                .map(|(&x, &w)| (x, u64::from(w)))
                .collect()
        } else {
            v.iter().map(|&x| (x, 1)).collect()
        };
        p.sort_unstable();
        Some(p)
    }
}

impl SampleSink for ExactSamples {
    fn record(&mut self, metric: Exact, value_ns: u64) {
        if metric.is_weighted() {
            return self.record_weighted(metric, value_ns, 1);
        }
        let v = &mut self.values[metric.index()];
        if v.len() < v.capacity() {
            v.push(value_ns);
        } else {
            self.lost[metric.index()] += 1;
        }
    }

    fn record_weighted(&mut self, metric: Exact, value_ns: u64, weight: u32) {
        let i = metric.index();
        let (v, w) = (&mut self.values[i], &mut self.weights[i]);
        if v.len() < v.capacity() && w.len() < w.capacity() {
            v.push(value_ns);
            w.push(weight);
        } else {
            self.lost[i] += 1;
        }
    }
}

/// The next turns of conversations waiting for their intended time
/// ([`crate::turns`]), earliest first: room reserved before the clock
/// ([`Plan::follow_up_capacity`](crate::plan::Plan::follow_up_capacity)) and never grown while it runs (a push
/// that finds no room is refused, and the ledger counts the session as
/// overflowed).
///
/// ```
/// use metronome_core::engine::FollowUps;
/// use metronome_core::turns::FollowUpSink;
/// let mut q = FollowUps::with_capacity(2);
/// assert!(q.push(300, 7) && q.push(100, 4));
/// assert!(!q.push(200, 5)); // full
/// assert_eq!(q.next_ns(), Some(100));
/// assert_eq!(q.pop_due(99), None);
/// assert_eq!(q.pop_due(150), Some((100, 4)));
/// assert_eq!(q.pop_due(u64::MAX), Some((300, 7)));
/// assert!(q.is_empty());
/// ```
#[derive(Clone, Debug, Default)]
pub struct FollowUps {
    heap: BinaryHeap<Reverse<(u64, u32)>>,
}

/// The due loop's waiting turns ([`crate::due::DueLoop`]).
impl crate::due::Waiting for FollowUps {
    fn next_ns(&self) -> Option<u64> {
        FollowUps::next_ns(self)
    }

    fn pop_due(&mut self, now_ns: u64) -> Option<(u64, usize)> {
        FollowUps::pop_due(self, now_ns)
    }
}

impl FollowUps {
    /// Room for `n` waiting turns (0: a run without conversations).
    pub fn with_capacity(n: usize) -> FollowUps {
        FollowUps {
            heap: BinaryHeap::with_capacity(n),
        }
    }

    /// The earliest intended time waiting, if any.
    pub fn next_ns(&self) -> Option<u64> {
        self.heap.peek().map(|r| r.0 .0)
    }

    /// The earliest waiting turn, `(intended_ns, request)`, when it is due
    /// by `now_ns`.
    pub fn pop_due(&mut self, now_ns: u64) -> Option<(u64, usize)> {
        if self.next_ns()? > now_ns {
            return None;
        }
        self.heap.pop().map(|Reverse((t, r))| (t, r as usize))
    }

    /// No turn is waiting.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// How many turns are waiting.
    pub fn len(&self) -> usize {
        self.heap.len()
    }
}

impl crate::turns::FollowUpSink for FollowUps {
    fn push(&mut self, intended_ns: u64, request: usize) -> bool {
        if self.heap.len() >= self.heap.capacity() {
            return false;
        }
        self.heap.push(Reverse((intended_ns, request as u32)));
        true
    }
}
