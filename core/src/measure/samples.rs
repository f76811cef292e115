//! Exact samples of the per-request metrics, for percentiles a user can
//! compare with a peer's: guidellm, aiperf and vLLM's bench report
//! percentiles of the samples themselves, where the histogram's are within
//! 1/128 of the value (a bucket's top, clamped to the maximum). When the
//! number of requests is bounded in advance (every open-loop run has a
//! schedule), the engine reserves storage for every sample before the
//! clock starts and the ledger writes each success's values into it
//! ([`SampleSink`]); nothing allocates while the clock runs. The report
//! then gives nearest-rank percentiles ([`nearest_rank`]) beside the
//! histogram's, and in each `--metrics-compat` view the peer's own method
//! over its per-request metrics' samples: numpy's interpolation
//! ([`linear`]) for vLLM and aiperf, guidellm's weighted rank
//! ([`weighted_rank`]).

use core::fmt;

/// The per-request metrics kept exactly (the per-token ones, ITL and the
/// per-chunk gaps, are many per request and stay in their histograms):
/// metronome's own four, then the peers' per-request definitions
/// ([`crate::measure::Peers`]), kept only when `--metrics-compat` asks
/// ([`ExactSet`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exact {
    /// Completion - intended.
    Latency,
    /// Completion - send.
    ServiceTime,
    /// First token - intended (streams).
    Ttft,
    /// Time per output token after the first (streams).
    Tpot,
    /// vLLM's `ttft` ([`crate::measure::Peers::vllm_ttft`]).
    VllmTtft,
    /// vLLM's `tpot` ([`crate::measure::Peers::vllm_tpot`]).
    VllmTpot,
    /// vLLM's `e2el` ([`crate::measure::Peers::vllm_e2e`]).
    VllmE2e,
    /// guidellm's `time_to_first_token_ms`, also aiperf's
    /// `time_to_first_token` ([`crate::measure::Peers::guidellm_ttft`]).
    GuidellmTtft,
    /// guidellm's `time_to_first_output_token_ms`
    /// ([`crate::measure::Peers::guidellm_ttfot`]).
    GuidellmTtfot,
    /// guidellm's `inter_token_latency_ms`, one value per request weighted
    /// by its tokens - 1 ([`SampleSink::record_weighted`]).
    GuidellmItl,
    /// guidellm's `time_per_output_token_ms`, one value per request
    /// weighted by its tokens.
    GuidellmTpot,
    /// aiperf's `time_to_second_token`.
    AiperfTtst,
    /// aiperf's `request_latency`.
    AiperfLatency,
    /// aiperf's `inter_token_latency`.
    AiperfItl,
    /// aiperf's `output_token_throughput_per_user` (micro-tokens/s, as
    /// [`crate::measure::Peers::aiperf_tps_user`]).
    AiperfTpsUser,
    /// aiperf's `e2e_output_token_throughput` (micro-tokens/s, as
    /// [`crate::measure::Peers::aiperf_e2e_tps`]).
    AiperfE2eTps,
}

impl Exact {
    /// How many metrics there are.
    pub const COUNT: usize = 16;
    /// Every metric, in [`Exact::index`] order.
    pub const ALL: [Exact; Exact::COUNT] = [
        Exact::Latency,
        Exact::ServiceTime,
        Exact::Ttft,
        Exact::Tpot,
        Exact::VllmTtft,
        Exact::VllmTpot,
        Exact::VllmE2e,
        Exact::GuidellmTtft,
        Exact::GuidellmTtfot,
        Exact::GuidellmItl,
        Exact::GuidellmTpot,
        Exact::AiperfTtst,
        Exact::AiperfLatency,
        Exact::AiperfItl,
        Exact::AiperfTpsUser,
        Exact::AiperfE2eTps,
    ];
    /// metronome's own metrics, kept in every bounded run.
    pub const OWN: [Exact; 4] = [Exact::Latency, Exact::ServiceTime, Exact::Ttft, Exact::Tpot];

    /// The index of this metric in `0..COUNT`.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Whether its samples carry a weight (guidellm's per-token
    /// distributions).
    pub const fn is_weighted(self) -> bool {
        matches!(self, Exact::GuidellmItl | Exact::GuidellmTpot)
    }

    /// The metric's name: the report's for metronome's own, `peer.name`
    /// for the peers'.
    pub const fn name(self) -> &'static str {
        match self {
            Exact::Latency => "latency",
            Exact::ServiceTime => "service_time",
            Exact::Ttft => "ttft",
            Exact::Tpot => "tpot",
            Exact::VllmTtft => "vllm.ttft",
            Exact::VllmTpot => "vllm.tpot",
            Exact::VllmE2e => "vllm.e2el",
            Exact::GuidellmTtft => "guidellm.time_to_first_token_ms",
            Exact::GuidellmTtfot => "guidellm.time_to_first_output_token_ms",
            Exact::GuidellmItl => "guidellm.inter_token_latency_ms",
            Exact::GuidellmTpot => "guidellm.time_per_output_token_ms",
            Exact::AiperfTtst => "aiperf.time_to_second_token",
            Exact::AiperfLatency => "aiperf.request_latency",
            Exact::AiperfItl => "aiperf.inter_token_latency",
            Exact::AiperfTpsUser => "aiperf.output_token_throughput_per_user",
            Exact::AiperfE2eTps => "aiperf.e2e_output_token_throughput",
        }
    }
}

/// A set of [`Exact`] metrics: the peers' metrics a run keeps samples of
/// (`Plan::peer_samples`), so a run without `--metrics-compat` reserves
/// nothing for them.
///
/// ```
/// use metronome_core::measure::{Exact, ExactSet};
/// let s = ExactSet::EMPTY.with(Exact::VllmTtft).with(Exact::AiperfItl);
/// assert!(s.contains(Exact::VllmTtft) && !s.contains(Exact::VllmTpot));
/// assert!(!s.is_empty() && ExactSet::EMPTY.is_empty());
/// assert_eq!(s.union(ExactSet::of(&[Exact::VllmTpot])).len(), 3);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExactSet(u32);

impl ExactSet {
    /// No metric.
    pub const EMPTY: ExactSet = ExactSet(0);

    /// The set of `metrics`.
    pub const fn of(metrics: &[Exact]) -> ExactSet {
        let mut s = ExactSet::EMPTY;
        let mut i = 0;
        while i < metrics.len() {
            s = s.with(metrics[i]);
            i += 1;
        }
        s
    }

    /// This set and `m`.
    pub const fn with(self, m: Exact) -> ExactSet {
        ExactSet(self.0 | 1 << m.index())
    }

    /// Both sets.
    pub const fn union(self, o: ExactSet) -> ExactSet {
        ExactSet(self.0 | o.0)
    }

    /// Whether `m` is in the set.
    pub const fn contains(self, m: Exact) -> bool {
        self.0 & (1 << m.index()) != 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// How many metrics are in the set.
    pub const fn len(self) -> usize {
        self.0.count_ones() as usize
    }
}

/// Where the ledger writes exact samples: storage the caller reserved
/// before the clock. An implementation must not allocate: when its room is
/// full it counts the sample as lost, and the report falls back to the
/// histogram for that metric.
pub trait SampleSink: fmt::Debug {
    /// One value of `metric`, ns.
    fn record(&mut self, metric: Exact, value_ns: u64);

    /// One value of a weighted metric ([`Exact::is_weighted`]) that counts
    /// `weight` times in its distribution. A sink that keeps no weights
    /// records the value once (the default).
    fn record_weighted(&mut self, metric: Exact, value_ns: u64, weight: u32) {
        let _ = weight;
        self.record(metric, value_ns);
    }
}

/// The `q` quantile (in `(0, 1]`) of `sorted` by nearest rank: the
/// `ceil(q x n)`-th smallest value (the smallest for `q` at or below
/// `1/n`); `None` for no samples.
///
/// ```
/// use metronome_core::measure::nearest_rank;
/// let v = [10, 20, 30, 40];
/// assert_eq!(nearest_rank(&v, 0.5), Some(20));
/// assert_eq!(nearest_rank(&v, 0.51), Some(30));
/// assert_eq!(nearest_rank(&v, 0.99), Some(40));
/// assert_eq!(nearest_rank(&v, 0.0), Some(10));
/// assert_eq!(nearest_rank(&[], 0.5), None);
/// ```
pub fn nearest_rank(sorted: &[u64], q: f64) -> Option<u64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let rank = libm::ceil(q.clamp(0.0, 1.0) * n as f64 - 1e-9) as usize;
    Some(sorted[rank.clamp(1, n) - 1])
}

/// The `q` quantile (in `[0, 1]`) of `sorted` by linear interpolation
/// between the two nearest ranks: numpy's default `percentile` (`method =
/// "linear"`), which vLLM's bench, guidellm and aiperf use. `None` for no
/// samples.
///
/// ```
/// use metronome_core::measure::linear;
/// let v = [10, 20, 30, 40];
/// assert_eq!(linear(&v, 0.5), Some(25.0)); // index 1.5
/// assert!((linear(&v, 0.99).unwrap() - 39.7).abs() < 1e-9); // index 2.97
/// assert_eq!(linear(&v, 1.0), Some(40.0));
/// ```
pub fn linear(sorted: &[u64], q: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = libm::floor(pos) as usize;
    let hi = (lo + 1).min(n - 1);
    let frac = pos - lo as f64;
    let (a, b) = (sorted[lo] as f64, sorted[hi] as f64);
    Some(a + frac * (b - a))
}

/// The `q` quantile of weighted samples as guidellm computes it
/// (`Percentiles.from_pdf` in src/guidellm/schemas/statistics.py): equal
/// values merged with their weights summed, zero weights dropped, each
/// weight divided by the total, and the first value whose running sum of
/// those shares (added in order, in `f64`, as numpy's `cumsum`) reaches
/// `q` (`searchsorted(cdf, q, side="left")`); the largest when rounding
/// leaves every share below `q`. `pairs` are `(value, weight)` sorted by
/// value. With every weight 1 this is nearest rank, up to the rounding of
/// the running sum, which guidellm has too. `None` when no weight is
/// positive.
///
/// ```
/// use metronome_core::measure::weighted_rank;
/// // 10 ms for one request of 4 tokens (weight 3), 50 ms for one of 2.
/// let v = [(10, 3), (50, 1)];
/// assert_eq!(weighted_rank(&v, 0.5), Some(10));
/// assert_eq!(weighted_rank(&v, 0.75), Some(10)); // 3/4 reaches 0.75
/// assert_eq!(weighted_rank(&v, 0.76), Some(50));
/// assert_eq!(weighted_rank(&[(7, 0)], 0.5), None);
/// ```
pub fn weighted_rank(pairs: &[(u64, u64)], q: f64) -> Option<u64> {
    let total = pairs.iter().fold(0u64, |a, &(_, w)| a.saturating_add(w));
    if total == 0 {
        return None;
    }
    let total = total as f64;
    let (mut cdf, mut last, mut i) = (0.0f64, None, 0);
    while i < pairs.len() {
        // One value, its weights summed (numpy.unique + add.at).
        let v = pairs[i].0;
        let mut w = 0u64;
        while i < pairs.len() && pairs[i].0 == v {
            w = w.saturating_add(pairs[i].1);
            i += 1;
        }
        if w == 0 {
            continue;
        }
        cdf += w as f64 / total;
        last = Some(v);
        if cdf >= q {
            return last;
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nearest rank against its definition on every rank of a small set,
    /// and linear interpolation against numpy's values for the same set.
    #[test]
    fn ranks_match_their_definitions() {
        let v: [u64; 5] = [1, 2, 3, 4, 100];
        for (q, want) in [
            (0.2, 1),
            (0.21, 2),
            (0.4, 2),
            (0.5, 3),
            (0.8, 4),
            (0.81, 100),
            (1.0, 100),
        ] {
            assert_eq!(nearest_rank(&v, q), Some(want), "q = {q}");
        }
        // numpy.percentile([1, 2, 3, 4, 100], [50, 90, 99]) = 3, 61.6, 96.16
        assert_eq!(linear(&v, 0.5), Some(3.0));
        assert!((linear(&v, 0.9).unwrap() - 61.6).abs() < 1e-9);
        assert!((linear(&v, 0.99).unwrap() - 96.16).abs() < 1e-9);
        assert_eq!(linear(&[7], 0.3), Some(7.0));
    }
}
