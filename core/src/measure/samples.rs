//! Exact samples of the per-request metrics, for percentiles a user can
//! compare with a peer's: guidellm, aiperf and vLLM's bench report
//! percentiles of the samples themselves, where the histogram's are within
//! 1/128 of the value (a bucket's top, clamped to the maximum). When the
//! number of requests is bounded in advance (every open-loop run has a
//! schedule), the engine reserves storage for every sample before the
//! clock starts and the ledger writes each success's values into it
//! ([`SampleSink`]); nothing allocates while the clock runs. The report
//! then gives nearest-rank percentiles ([`nearest_rank`]) beside the
//! histogram's, and the peers' interpolation ([`linear`]) where a view
//! asks for it.

use core::fmt;

/// The per-request metrics kept exactly (the per-token ones, ITL and the
/// per-chunk gaps, are many per request and stay in their histograms).
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
}

impl Exact {
    /// How many metrics are kept.
    pub const COUNT: usize = 4;
    /// Every metric, in [`Exact::index`] order.
    pub const ALL: [Exact; Exact::COUNT] =
        [Exact::Latency, Exact::ServiceTime, Exact::Ttft, Exact::Tpot];

    /// The index of this metric in `0..COUNT`.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The report's name of the metric.
    pub const fn name(self) -> &'static str {
        match self {
            Exact::Latency => "latency",
            Exact::ServiceTime => "service_time",
            Exact::Ttft => "ttft",
            Exact::Tpot => "tpot",
        }
    }
}

/// Where the ledger writes exact samples: storage the caller reserved
/// before the clock. An implementation must not allocate: when its room is
/// full it counts the sample as lost, and the report falls back to the
/// histogram for that metric.
pub trait SampleSink: fmt::Debug {
    /// One value of `metric`, ns.
    fn record(&mut self, metric: Exact, value_ns: u64);
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
