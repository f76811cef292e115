//! [`Histogram`]: a fixed log-linear histogram of `u64` values (nanoseconds in
//! metronome) with 7424 inline counters, and HdrHistogram's V2 encoding.
//!
//! # Layout
//!
//! Values below 128 have a counter each. A value `v >= 128` with
//! `e = floor(log2 v)` and `shift = e - 7` goes to counter
//! `(shift + 1) * 128 + (v >> shift) - 128`, which covers
//! `[sub << shift, ((sub + 1) << shift) - 1]` with `sub = v >> shift`.
//! Every bucket is therefore at most 1/128 of its lower bound wide, and the
//! whole `u64` range fits in 58 x 128 = 7424 counters, with no allocation and
//! no range to configure.
//!
//! This is exactly HdrHistogram's layout with 2 significant digits and a unit
//! of 1 (`sub_bucket_count` 256, `sub_bucket_half_count` 128, lowest
//! discernible value 1): [`bucket_index`] is HdrHistogram's counts-array index
//! and [`bucket_bounds`] its `lowestEquivalentValue`/`highestEquivalentValue`,
//! so the V2 encoding is a straight walk over the counters.
//!
//! The V2 encoding lives in its own file (`histogram/v2.rs`): the plain
//! form ([`Histogram::encode_v2`], [`decode_v2`]) always, without
//! allocating; the zlib-compressed form of `.hlog` files
//! (`Histogram::encode_v2_compressed`, `decode_v2_compressed`) with the
//! `zlib` feature, which brings std and flate2. The CLI and the C API
//! (`metronome-capi`) both use that one implementation.
//!
//! Besides the counters, a histogram keeps the exact count, minimum, maximum
//! and sum (`u128`) of what was recorded, so [`Histogram::mean`],
//! [`Histogram::min`] and [`Histogram::max`] are exact.
//!
//! # Coordinated omission
//!
//! [`Histogram::record_corrected`] and [`Histogram::corrected`] are
//! HdrHistogram's corrections for *closed-loop* measurements (a client that
//! waits for each reply before sending the next request). metronome measures
//! open-loop latency from the **intended** send time, which already charges
//! every request for the time it waited; never apply the correction to
//! open-loop data, it would count the same stall twice.
//!
//! ```
//! use metronome_core::histogram::Histogram;
//! let mut h = Histogram::new();
//! for v in [1000, 1002, 1005, 2000] {
//!     h.record(v);
//! }
//! assert_eq!(h.quantile(0.5), 1003); // 1002 lies in the bucket [1000, 1003]
//! assert_eq!(h.quantile(1.0), 2000); // clamped to the true max
//! assert_eq!(h.mean(), 1251.75);
//! ```

use core::fmt;

mod sparse;
mod v2;

pub use sparse::SPARSE_MAX_LEN;

pub use v2::{
    decode_v2, DecodeError, EncodeError, V2_COMPRESSED_COOKIE, V2_COOKIE, V2_HEADER_LEN, V2_MAX_LEN,
};
#[cfg(feature = "zlib")]
pub use v2::{decode_v2_compressed, V2_INFLATE_LIMIT};

/// Number of counters in a [`Histogram`]: 58 x 128.
pub const BUCKET_COUNT: usize = 7424;

/// The histogram's counters (`BUCKET_COUNT` of them) and exact statistics.
///
/// `Clone` copies about 58 KiB; engines keep one per thread (inside a
/// [`crate::measure::Recorder`]) and merge them at the end.
#[derive(Clone, PartialEq, Eq)]
#[repr(C)]
pub struct Histogram {
    // The statistics come first (`repr(C)`) so the optimizer can see that a
    // store into `counts[i]` never aliases them and keep them in registers
    // across a loop of `record` calls.
    sum: u128,
    total: u64,
    /// `u64::MAX` when empty.
    min: u64,
    /// 0 when empty.
    max: u64,
    counts: [u64; BUCKET_COUNT],
}

/// One non-empty bucket, as yielded by [`Histogram::buckets`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucket {
    /// The smallest value the bucket holds.
    pub lower: u64,
    /// The largest value the bucket holds (inclusive).
    pub upper: u64,
    /// How many recorded values fall in `[lower, upper]`.
    pub count: u64,
}

/// The counter that holds `v`: HdrHistogram's counts-array index for 2
/// significant digits and unit 1. Always below [`BUCKET_COUNT`].
///
/// Branch-free: `shift = 56 - leading_zeros(v | 255)` is 0 for `v < 256` and
/// `floor(log2 v) - 7` above, and the index is `shift * 128 + (v >> shift)`,
/// which equals `(shift + 1) * 128 + (v >> shift) - 128`.
///
/// # Example
/// ```
/// use metronome_core::histogram::bucket_index;
/// assert_eq!(bucket_index(0), 0);
/// assert_eq!(bucket_index(127), 127);
/// assert_eq!(bucket_index(255), 255);
/// assert_eq!(bucket_index(256), 256);
/// assert_eq!(bucket_index(257), 256);
/// assert_eq!(bucket_index(1002), 2 * 128 + 250);
/// assert_eq!(bucket_index(u64::MAX), 7423);
/// ```
#[inline(always)]
pub const fn bucket_index(v: u64) -> usize {
    let shift = 56 - (v | 255).leading_zeros();
    ((shift as usize) << 7) + (v >> shift) as usize
}

/// The inclusive value range `(lower, upper)` of counter `index`: HdrHistogram's
/// `lowestEquivalentValue` and `highestEquivalentValue` for every value in it.
///
/// # Panics
/// When `index >= BUCKET_COUNT` (there is no such counter): a bug in the caller,
/// like an out-of-range slice index.
///
/// # Example
/// ```
/// use metronome_core::histogram::{bucket_bounds, bucket_index};
/// assert_eq!(bucket_bounds(5), (5, 5));
/// assert_eq!(bucket_bounds(256), (256, 257));
/// assert_eq!(bucket_bounds(bucket_index(1002)), (1000, 1003));
/// assert_eq!(bucket_bounds(7423), (255 << 56, u64::MAX));
/// ```
pub const fn bucket_bounds(index: usize) -> (u64, u64) {
    assert!(
        index < BUCKET_COUNT,
        "bucket_bounds: index must be below BUCKET_COUNT (7424)"
    );
    if index < 256 {
        return (index as u64, index as u64);
    }
    let shift = (index >> 7) - 1;
    let sub = ((index & 127) + 128) as u64;
    let lower = sub << shift;
    (lower, lower + ((1u64 << shift) - 1))
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Histogram {
    /// Short: the statistics, not 7424 counters.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.total)
            .field("min", &self.min())
            .field("max", &self.max)
            .field("mean", &self.mean())
            .field("buckets", &self.buckets().count())
            .finish()
    }
}

impl Histogram {
    /// An empty histogram.
    ///
    /// # Example
    /// ```
    /// use metronome_core::histogram::Histogram;
    /// const H: Histogram = Histogram::new();
    /// assert!(H.is_empty());
    /// assert_eq!(H.quantile(0.99), 0);
    /// ```
    pub const fn new() -> Self {
        Self {
            counts: [0; BUCKET_COUNT],
            total: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
        }
    }

    /// Records one value. Every `u64`, including 0 and `u64::MAX`, is recordable.
    ///
    /// # Example
    /// ```
    /// use metronome_core::histogram::Histogram;
    /// let mut h = Histogram::new();
    /// h.record(0);
    /// h.record(u64::MAX);
    /// assert_eq!((h.count(), h.min(), h.max()), (2, 0, u64::MAX));
    /// ```
    #[inline]
    pub fn record(&mut self, v: u64) {
        let i = bucket_index(v);
        if let Some(c) = self.counts.get_mut(i) {
            *c = c.saturating_add(1);
        }
        self.total = self.total.saturating_add(1);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum = self.sum.saturating_add(v as u128);
    }

    /// Records `n` occurrences of `v`. `n == 0` changes nothing (not even min
    /// or max). Counters saturate at `u64::MAX` instead of wrapping.
    ///
    /// # Example
    /// ```
    /// use metronome_core::histogram::Histogram;
    /// let mut h = Histogram::new();
    /// h.record_n(300, 3);
    /// h.record_n(7, 0);
    /// assert_eq!((h.count(), h.min(), h.sum()), (3, 300, 900));
    /// ```
    #[inline]
    pub fn record_n(&mut self, v: u64, n: u64) {
        if n == 0 {
            return;
        }
        let i = bucket_index(v);
        if let Some(c) = self.counts.get_mut(i) {
            *c = c.saturating_add(n);
        }
        self.total = self.total.saturating_add(n);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum = self.sum.saturating_add(v as u128 * n as u128);
    }

    /// Records `v` and, for closed-loop data, the samples a stalled client
    /// failed to take: HdrHistogram's `recordValueWithExpectedInterval`. When
    /// `expected_interval > 0` and `v > expected_interval`, it also records
    /// `v - k * expected_interval` for `k = 1, 2, ...` while that is at least
    /// `expected_interval`.
    ///
    /// **Closed-loop data only.** metronome's open-loop latency is measured from
    /// the intended send time and already contains what this adds; never apply
    /// it there. The work is bounded by the number of buckets the series
    /// crosses (never by `v / expected_interval`).
    ///
    /// # Example
    /// ```
    /// use metronome_core::histogram::Histogram;
    /// let mut h = Histogram::new();
    /// h.record_corrected(100, 30); // records 100, 70, 40
    /// assert_eq!(h.count(), 3);
    /// assert_eq!(h.sum(), 210);
    /// assert_eq!(h.min(), 40);
    /// ```
    pub fn record_corrected(&mut self, v: u64, expected_interval: u64) {
        self.record(v);
        self.record_missing(v, 1, expected_interval);
    }

    /// A copy with HdrHistogram's `copyCorrectedForCoordinatedOmission`
    /// applied: every recorded count stays in its bucket, and for each
    /// non-empty bucket the series of [`Histogram::record_corrected`] is added
    /// `count` times, starting from the bucket's **upper bound** (HdrHistogram's
    /// `valueIteratedTo`, the highest equivalent value, as both the Java and
    /// the Rust implementation use). Counters equal the `hdrhistogram` crate's
    /// `clone_correct` on the same data; min, max and sum stay exact for the
    /// recorded values and the added series. (One difference: for the top
    /// bucket `[255 << 56, u64::MAX]` the crate's highest equivalent value
    /// saturates to `u64::MAX - 1`; ours is `u64::MAX`.)
    ///
    /// **Closed-loop data only**; see [`Histogram::record_corrected`].
    ///
    /// # Example
    /// ```
    /// use metronome_core::histogram::Histogram;
    /// let mut h = Histogram::new();
    /// h.record(100);
    /// let c = h.corrected(30); // adds 70 and 40
    /// assert_eq!(c.count(), 3);
    /// assert_eq!(c.sum(), 210);
    /// assert_eq!(h.corrected(0), h);
    /// ```
    pub fn corrected(&self, expected_interval: u64) -> Histogram {
        let mut out = self.clone();
        if expected_interval == 0 || self.total == 0 {
            return out;
        }
        for i in bucket_index(self.min)..=bucket_index(self.max) {
            let n = self.counts[i];
            if n != 0 {
                out.record_missing(bucket_bounds(i).1, n, expected_interval);
            }
        }
        out
    }

    /// Adds `n` times the series `v - k * interval >= interval`, `k >= 1`,
    /// a bucket at a time.
    fn record_missing(&mut self, v: u64, n: u64, interval: u64) {
        if interval == 0 || v <= interval || n == 0 {
            return;
        }
        // Terms v - k*interval >= interval  <=>  k <= v/interval - 1.
        let k_max = v / interval - 1;
        if k_max == 0 {
            return;
        }
        let mut k = 1u64;
        while k <= k_max {
            // k * interval <= v - interval: no overflow.
            let first = v - k * interval;
            let i = bucket_index(first);
            let (lower, _) = bucket_bounds(i);
            // Terms first, first - interval, ... that are still >= lower.
            let terms = ((first - lower) / interval + 1).min(k_max - k + 1);
            let add = terms.saturating_mul(n);
            self.counts[i] = self.counts[i].saturating_add(add);
            self.total = self.total.saturating_add(add);
            // Sum of the arithmetic series: terms*first - interval*terms*(terms-1)/2,
            // below 2^128 since every term is below 2^64 and terms < 2^64.
            let t = terms as u128;
            let series = t * first as u128 - interval as u128 * (t * (t - 1) / 2);
            self.sum = self.sum.saturating_add(series.saturating_mul(n as u128));
            self.max = self.max.max(first);
            self.min = self.min.min(first - (terms - 1) * interval);
            k += terms;
        }
    }

    /// Number of recorded values (saturating at `u64::MAX`).
    ///
    /// # Example
    /// ```
    /// let mut h = metronome_core::histogram::Histogram::new();
    /// h.record(5);
    /// assert_eq!(h.count(), 1);
    /// ```
    pub fn count(&self) -> u64 {
        self.total
    }

    /// True when nothing was recorded.
    ///
    /// # Example
    /// ```
    /// assert!(metronome_core::histogram::Histogram::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The smallest recorded value, exact; 0 when empty.
    ///
    /// # Example
    /// ```
    /// let mut h = metronome_core::histogram::Histogram::new();
    /// assert_eq!(h.min(), 0);
    /// h.record(1001);
    /// assert_eq!(h.min(), 1001);
    /// ```
    pub fn min(&self) -> u64 {
        if self.total == 0 {
            0
        } else {
            self.min
        }
    }

    /// The largest recorded value, exact; 0 when empty.
    ///
    /// # Example
    /// ```
    /// let mut h = metronome_core::histogram::Histogram::new();
    /// h.record(1001);
    /// assert_eq!(h.max(), 1001);
    /// ```
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The exact sum of the recorded values (saturating at `u128::MAX`, which
    /// takes more than 2^64 values of `u64::MAX`).
    ///
    /// # Example
    /// ```
    /// let mut h = metronome_core::histogram::Histogram::new();
    /// h.record(u64::MAX);
    /// h.record(u64::MAX);
    /// assert_eq!(h.sum(), 2 * u64::MAX as u128);
    /// ```
    pub fn sum(&self) -> u128 {
        self.sum
    }

    /// The mean: exact sum / count, rounded once to `f64`; 0.0 when empty.
    ///
    /// # Example
    /// ```
    /// let mut h = metronome_core::histogram::Histogram::new();
    /// assert_eq!(h.mean(), 0.0);
    /// h.record(1);
    /// h.record(2);
    /// assert_eq!(h.mean(), 1.5);
    /// ```
    pub fn mean(&self) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let n = self.total as u128;
        let whole = self.sum / n;
        let rest = self.sum % n;
        whole as f64 + rest as f64 / n as f64
    }

    /// The value at quantile `q` (`0.0..=1.0`): with `n` values, the nearest
    /// rank `r = ceil(q * n - 1e-9)` clamped to `[1, n]` (the `1e-9` keeps
    /// `0.07 * 100` at rank 7), and the result is the upper bound of the
    /// bucket holding the `r`-th smallest value, clamped to the true max. It is
    /// never below the exact nearest-rank value and at most 1/128 above it.
    /// 0 when empty; `q` outside `0..=1` (or NaN) behaves as the nearest end.
    ///
    /// # Example
    /// ```
    /// use metronome_core::histogram::Histogram;
    /// let mut h = Histogram::new();
    /// for v in 1..=100 {
    ///     h.record(v);
    /// }
    /// assert_eq!(h.quantile(0.07), 7);
    /// assert_eq!(h.quantile(0.55), 55);
    /// assert_eq!(h.quantile(0.0), 1);
    /// assert_eq!(h.quantile(1.0), 100);
    /// ```
    pub fn quantile(&self, q: f64) -> u64 {
        let n = self.total;
        if n == 0 {
            return 0;
        }
        let x = libm::ceil(q * n as f64 - 1e-9);
        // NaN fails both comparisons and lands on rank 1.
        let rank = if x >= n as f64 {
            n
        } else if x >= 1.0 {
            x as u64
        } else {
            1
        };
        match self.rank_index(rank) {
            Some(i) => bucket_bounds(i).1.min(self.max),
            None => self.max,
        }
    }

    /// Index of the bucket holding the `rank`-th smallest value (1-based),
    /// scanning from whichever end is nearer, between the buckets of min and max.
    fn rank_index(&self, rank: u64) -> Option<usize> {
        let lo = bucket_index(self.min);
        let hi = bucket_index(self.max);
        let span = self.counts.get(lo..=hi)?;
        if rank <= self.total / 2 {
            let mut seen = 0u64;
            let mut base = lo;
            for chunk in span.chunks(16) {
                let s = chunk.iter().fold(0u64, |a, &c| a.wrapping_add(c));
                if seen.wrapping_add(s) >= rank {
                    for (j, &c) in chunk.iter().enumerate() {
                        seen = seen.wrapping_add(c);
                        if seen >= rank {
                            return Some(base + j);
                        }
                    }
                }
                seen = seen.wrapping_add(s);
                base += chunk.len();
            }
        } else {
            // The rank-th smallest is the (n - rank + 1)-th largest.
            let want = self.total - rank + 1;
            let mut seen = 0u64;
            let mut top = hi + 1;
            for chunk in span.rchunks(16) {
                let s = chunk.iter().fold(0u64, |a, &c| a.wrapping_add(c));
                let base = top - chunk.len();
                if seen.wrapping_add(s) >= want {
                    for (j, &c) in chunk.iter().enumerate().rev() {
                        seen = seen.wrapping_add(c);
                        if seen >= want {
                            return Some(base + j);
                        }
                    }
                }
                seen = seen.wrapping_add(s);
                top = base;
            }
        }
        None
    }

    /// Adds every count of `other` into `self`; count, min, max and sum stay
    /// exact (counters saturate rather than wrap).
    ///
    /// # Example
    /// ```
    /// use metronome_core::histogram::Histogram;
    /// let (mut a, mut b) = (Histogram::new(), Histogram::new());
    /// a.record(10);
    /// b.record(1000);
    /// b.record(3);
    /// a.merge(&b);
    /// assert_eq!((a.count(), a.min(), a.max(), a.sum()), (3, 3, 1000, 1013));
    /// ```
    pub fn merge(&mut self, other: &Histogram) {
        if other.total == 0 {
            return;
        }
        let lo = bucket_index(other.min);
        let hi = bucket_index(other.max);
        if let (Some(dst), Some(src)) = (self.counts.get_mut(lo..=hi), other.counts.get(lo..=hi)) {
            for (d, &s) in dst.iter_mut().zip(src) {
                *d = d.saturating_add(s);
            }
        }
        self.total = self.total.saturating_add(other.total);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum = self.sum.saturating_add(other.sum);
    }

    /// Forgets everything recorded.
    ///
    /// # Example
    /// ```
    /// use metronome_core::histogram::Histogram;
    /// let mut h = Histogram::new();
    /// h.record(42);
    /// h.reset();
    /// assert_eq!(h, Histogram::new());
    /// ```
    pub fn reset(&mut self) {
        // Only the counters between min and max can be non-zero: clearing
        // them costs what the histogram held, not 58 KiB.
        if self.total > 0 {
            let (lo, hi) = (bucket_index(self.min), bucket_index(self.max));
            if let Some(span) = self.counts.get_mut(lo..=hi) {
                span.fill(0);
            }
        }
        self.total = 0;
        self.min = u64::MAX;
        self.max = 0;
        self.sum = 0;
    }

    /// The raw counter at `index` (0 for an index at or past [`BUCKET_COUNT`]).
    ///
    /// # Example
    /// ```
    /// use metronome_core::histogram::{bucket_index, Histogram};
    /// let mut h = Histogram::new();
    /// h.record(1002);
    /// assert_eq!(h.count_at_index(bucket_index(1000)), 1);
    /// assert_eq!(h.count_at_index(99_999), 0);
    /// ```
    pub fn count_at_index(&self, index: usize) -> u64 {
        self.counts.get(index).copied().unwrap_or(0)
    }

    /// The non-empty buckets, from the lowest values up.
    ///
    /// # Example
    /// ```
    /// use metronome_core::histogram::{Bucket, Histogram};
    /// let mut h = Histogram::new();
    /// h.record(1002);
    /// h.record(1001);
    /// h.record(3);
    /// let b: Vec<Bucket> = h.buckets().collect();
    /// assert_eq!(b, [
    ///     Bucket { lower: 3, upper: 3, count: 1 },
    ///     Bucket { lower: 1000, upper: 1003, count: 2 },
    /// ]);
    /// ```
    pub fn buckets(&self) -> Buckets<'_> {
        let (next, end) = if self.total == 0 {
            (0, 0)
        } else {
            (bucket_index(self.min), bucket_index(self.max) + 1)
        };
        Buckets {
            counts: &self.counts,
            next,
            end,
        }
    }
}

/// Iterator over the non-empty buckets of a [`Histogram`], from
/// [`Histogram::buckets`].
#[derive(Clone, Debug)]
pub struct Buckets<'a> {
    counts: &'a [u64; BUCKET_COUNT],
    next: usize,
    end: usize,
}

impl Iterator for Buckets<'_> {
    type Item = Bucket;

    fn next(&mut self) -> Option<Bucket> {
        while self.next < self.end {
            let i = self.next;
            self.next += 1;
            let count = self.counts[i];
            if count != 0 {
                let (lower, upper) = bucket_bounds(i);
                return Some(Bucket {
                    lower,
                    upper,
                    count,
                });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The naive layout of DESIGN.md, as an oracle for the branch-free index.
    fn naive_index(v: u64) -> usize {
        if v < 128 {
            return v as usize;
        }
        let e = 63 - v.leading_zeros() as u64;
        let shift = e - 7;
        ((shift + 1) * 128 + (v >> shift) - 128) as usize
    }

    #[test]
    fn index_matches_naive_layout_at_every_power_of_two_edge() {
        for e in 0..64 {
            let p = 1u64 << e;
            for v in [p.saturating_sub(1), p, p + 1, p | (p >> 1), p | (p - 1)] {
                assert_eq!(bucket_index(v), naive_index(v), "v = {v}");
                let (lo, hi) = bucket_bounds(bucket_index(v));
                assert!(lo <= v && v <= hi, "v = {v} in [{lo}, {hi}]");
            }
        }
    }

    #[test]
    fn bounds_tile_the_whole_range() {
        let mut next = 0u64;
        for i in 0..BUCKET_COUNT {
            let (lo, hi) = bucket_bounds(i);
            assert_eq!(lo, next, "bucket {i}");
            assert_eq!(bucket_index(lo), i);
            assert_eq!(bucket_index(hi), i);
            // Width at most 1/128 of the lower bound.
            assert!(lo < 128 || (hi - lo) <= lo / 128, "bucket {i}");
            next = hi.wrapping_add(1);
        }
        assert_eq!(next, 0, "the last bucket ends at u64::MAX");
    }

    #[test]
    fn quantile_scans_from_both_ends_alike() {
        let mut h = Histogram::new();
        for v in [5u64, 5, 900, 70_000, 70_001, 1 << 40] {
            h.record(v);
        }
        let expect = [5u64, 5, 903, 70_143, 70_143, 1 << 40];
        for (r, &e) in expect.iter().enumerate() {
            let idx = h.rank_index(r as u64 + 1).unwrap();
            assert_eq!(bucket_bounds(idx).1.min(h.max()), e, "rank {}", r + 1);
        }
    }

    #[test]
    fn huge_correction_is_bounded_and_exact() {
        let mut h = Histogram::new();
        h.record_corrected(u64::MAX, 1);
        // u64::MAX, then u64::MAX - 1 down to 1: every value 1..=u64::MAX once.
        assert_eq!(h.count(), u64::MAX);
        assert_eq!(h.min(), 1);
        assert_eq!(h.max(), u64::MAX);
        assert_eq!(
            h.sum(),
            u128::from(u64::MAX) * (u128::from(u64::MAX) + 1) / 2
        );
        assert_eq!(h.count_at_index(0), 0);
        assert_eq!(h.count_at_index(1), 1);
        assert_eq!(h.count_at_index(7423), 1 << 56);
    }
}
