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

/// Number of counters in a [`Histogram`]: 58 x 128.
pub const BUCKET_COUNT: usize = 7424;

/// The largest number of bytes [`Histogram::encode_v2`] can write: the
/// 40-byte header plus at most 9 bytes per counter. A buffer this long always
/// suffices; [`Histogram::encoded_len`] gives the exact length for one histogram.
pub const V2_MAX_LEN: usize = V2_HEADER_LEN + BUCKET_COUNT * 9;

/// Length of the V2 header in bytes.
pub const V2_HEADER_LEN: usize = 40;

/// Cookie of HdrHistogram's uncompressed V2 encoding (as Java and the
/// `hdrhistogram` crate write it).
pub const V2_COOKIE: u32 = 0x1c84_9313;

/// Cookie of HdrHistogram's zlib-compressed V2 encoding. [`decode_v2`]
/// rejects it with [`DecodeError::Compressed`]; the CLI inflates it.
pub const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;

/// Java marks the word size in bits 4..8 of the cookie; readers mask it off.
const COOKIE_WORD_SIZE_MASK: u32 = 0xf0;

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
        *self = Self::new();
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

    /// Exact number of bytes [`Histogram::encode_v2`] writes for this histogram.
    ///
    /// # Example
    /// ```
    /// use metronome_core::histogram::Histogram;
    /// let mut h = Histogram::new();
    /// assert_eq!(h.encoded_len(), 41);
    /// h.record(3); // counts [0, 0, 0, 1]: a run of 3 zeros, then 1
    /// assert_eq!(h.encoded_len(), 42);
    /// ```
    pub fn encoded_len(&self) -> usize {
        let mut len = V2_HEADER_LEN;
        self.for_each_encoded(|zz| {
            len += varint_len(zz);
            Ok(())
        })
        .map_or(V2_MAX_LEN, |()| len)
    }

    /// Calls `f` with each ZigZag-encoded entry of the V2 counts array:
    /// counters `0..=bucket_index(max)` with runs of two or more zeros as
    /// one negative length (as Java and the `hdrhistogram` crate write them).
    fn for_each_encoded(
        &self,
        mut f: impl FnMut(u64) -> Result<(), EncodeError>,
    ) -> Result<(), EncodeError> {
        let last = if self.total == 0 {
            0
        } else {
            bucket_index(self.max)
        };
        let counts = &self.counts[..=last];
        let mut i = 0;
        while i < counts.len() {
            let c = counts[i];
            i += 1;
            let entry: i64 = if c == 0 {
                let mut zeros = 1i64;
                while i < counts.len() && counts[i] == 0 {
                    zeros += 1;
                    i += 1;
                }
                if zeros > 1 {
                    -zeros
                } else {
                    0
                }
            } else {
                i64::try_from(c).map_err(|_| EncodeError::CountTooLarge)?
            };
            f(((entry << 1) ^ (entry >> 63)) as u64)?;
        }
        Ok(())
    }

    /// Writes HdrHistogram's uncompressed V2 encoding into `buf` and returns
    /// its length. Header (40 bytes, big-endian): cookie `0x1c849313`, payload
    /// length, normalizing index offset 0, 2 significant digits, lowest
    /// trackable value 1, highest trackable value `2^63 - 1` (so Java readers
    /// accept it), integer-to-double ratio 1.0; then the counters in
    /// HdrHistogram's index order up to the max's bucket as ZigZag LEB128-9
    /// varints, runs of zeros as negative lengths. The bytes equal the
    /// `hdrhistogram` crate's `V2Serializer` output for a
    /// `Histogram::new_with_bounds(1, i64::MAX as u64, 2)` holding the same
    /// values.
    ///
    /// A histogram holding a value above `i64::MAX` (about 292 years of
    /// nanoseconds) is written with highest trackable value `u64::MAX`
    /// instead: the Rust crate and [`decode_v2`] read it, Java cannot hold it.
    ///
    /// # Errors
    /// - [`EncodeError::BufferTooSmall`] when `buf` is shorter than the encoding
    ///   (nothing useful is left in `buf`; [`V2_MAX_LEN`] always suffices).
    /// - [`EncodeError::CountTooLarge`] when a counter exceeds `i64::MAX`.
    ///
    /// # Example
    /// ```
    /// use metronome_core::histogram::{decode_v2, Histogram, V2_MAX_LEN};
    /// let mut h = Histogram::new();
    /// h.record(3);
    /// let mut buf = [0u8; V2_MAX_LEN];
    /// let len = h.encode_v2(&mut buf).unwrap();
    /// assert_eq!(len, 42);
    /// assert_eq!(buf[..8], [0x1c, 0x84, 0x93, 0x13, 0, 0, 0, 2]);
    /// assert_eq!(buf[40..42], [5, 2]); // zigzag(-3) = 5, zigzag(1) = 2
    /// assert_eq!(decode_v2(&buf[..len]).unwrap(), h);
    /// ```
    pub fn encode_v2(&self, buf: &mut [u8]) -> Result<usize, EncodeError> {
        let mut pos = V2_HEADER_LEN;
        self.for_each_encoded(|zz| {
            let mut tmp = [0u8; 9];
            let n = varint_write(zz, &mut tmp);
            if let Some(dst) = buf.get_mut(pos..pos + n) {
                dst.copy_from_slice(&tmp[..n]);
            }
            pos += n;
            Ok(())
        })?;
        if pos > buf.len() {
            return Err(EncodeError::BufferTooSmall { needed: pos });
        }
        let payload = (pos - V2_HEADER_LEN) as u32; // at most 7424 * 9
        let highest: u64 = if self.max > i64::MAX as u64 {
            u64::MAX
        } else {
            i64::MAX as u64
        };
        let header = &mut buf[..V2_HEADER_LEN];
        header[0..4].copy_from_slice(&V2_COOKIE.to_be_bytes());
        header[4..8].copy_from_slice(&payload.to_be_bytes());
        header[8..12].copy_from_slice(&0u32.to_be_bytes());
        header[12..16].copy_from_slice(&2u32.to_be_bytes());
        header[16..24].copy_from_slice(&1u64.to_be_bytes());
        header[24..32].copy_from_slice(&highest.to_be_bytes());
        header[32..40].copy_from_slice(&1.0f64.to_be_bytes());
        Ok(pos)
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

/// Length of the LEB128-9 encoding of `v`.
fn varint_len(v: u64) -> usize {
    let bits = 64 - v.leading_zeros() as usize;
    if bits > 56 {
        9
    } else {
        bits.div_ceil(7).max(1)
    }
}

/// LEB128-9: 7 bits a byte, low first, high bit = more; the 9th byte holds 8 bits.
fn varint_write(mut v: u64, out: &mut [u8; 9]) -> usize {
    for (i, b) in out.iter_mut().enumerate().take(8) {
        if v < 0x80 {
            *b = v as u8;
            return i + 1;
        }
        *b = (v as u8 & 0x7f) | 0x80;
        v >>= 7;
    }
    out[8] = v as u8;
    9
}

/// Why [`Histogram::encode_v2`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// The buffer is shorter than the encoding, which takes `needed` bytes.
    /// Pass a buffer of at least `needed` bytes ([`V2_MAX_LEN`] always fits).
    BufferTooSmall {
        /// The exact length of the encoding.
        needed: usize,
    },
    /// A counter exceeds `i64::MAX`, which HdrHistogram's signed ZigZag counts
    /// cannot carry. Split the data over several histograms (intervals).
    CountTooLarge,
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BufferTooSmall { needed } => write!(
                f,
                "the buffer is too small for the HdrHistogram V2 encoding: {needed} bytes needed"
            ),
            Self::CountTooLarge => f.write_str(
                "a histogram counter exceeds i64::MAX and cannot be written in HdrHistogram V2",
            ),
        }
    }
}

impl core::error::Error for EncodeError {}

/// Why [`decode_v2`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ends before the 40-byte header, before the payload length it
    /// declares, or inside a count. Pass the whole encoding.
    Truncated,
    /// The cookie is HdrHistogram's compressed V2 cookie `0x1c849314`: inflate
    /// the zlib payload first (the CLI does) and decode the inner bytes.
    Compressed,
    /// The first four bytes are not an HdrHistogram V2 cookie (the value read
    /// is carried). Base64 text must be decoded first; V0/V1 encodings are not
    /// supported.
    Cookie(u32),
    /// The normalizing index offset is not 0 (a shifted histogram); not
    /// supported. Write the histogram unshifted.
    NormalizingOffset,
    /// The integer-to-double conversion ratio is not 1.0 (a `DoubleHistogram`);
    /// only integer histograms are supported.
    ConversionRatio,
    /// The header's parameters describe no valid histogram: lowest trackable
    /// value below 1, more than 5 significant digits, or a layout whose values
    /// would not fit 64 bits.
    Parameters,
    /// A non-empty counter covers values above `u64::MAX`; this histogram
    /// cannot hold them.
    OutOfRange,
    /// A non-empty counter covers values that span more than one of this
    /// histogram's buckets (the source is coarser: fewer than 2 significant
    /// digits or a lowest trackable value above 1), so it cannot be
    /// re-bucketed exactly. Record the source with 2 or more digits and unit 1.
    Coarser,
    /// The counts add up to more than `u64::MAX`.
    CountOverflow,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated => f.write_str("HdrHistogram V2 input is truncated"),
            Self::Compressed => f.write_str(
                "HdrHistogram V2 input is compressed (cookie 0x1c849314): inflate it with zlib first",
            ),
            Self::Cookie(c) => write!(f, "not an HdrHistogram V2 encoding (cookie {c:#010x})"),
            Self::NormalizingOffset => {
                f.write_str("HdrHistogram V2 input has a non-zero normalizing index offset")
            }
            Self::ConversionRatio => f.write_str(
                "HdrHistogram V2 input is a DoubleHistogram (conversion ratio is not 1.0)",
            ),
            Self::Parameters => {
                f.write_str("HdrHistogram V2 header has invalid lowest value or significant digits")
            }
            Self::OutOfRange => f.write_str("HdrHistogram V2 input holds values above u64::MAX"),
            Self::Coarser => f.write_str(
                "HdrHistogram V2 input is coarser than 2 significant digits with unit 1 \
                 and cannot be re-bucketed exactly",
            ),
            Self::CountOverflow => {
                f.write_str("HdrHistogram V2 input counts add up to more than u64::MAX")
            }
        }
    }
}

impl core::error::Error for DecodeError {}

/// Reads a big-endian `u32` at `at`; the caller checked the length.
fn be_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(a)
}

/// Reads a big-endian `u64` at `at`; the caller checked the length.
fn be_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

/// Reads one LEB128-9 varint from the front of `b`: (value, bytes used).
fn varint_read(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for i in 0..8 {
        let byte = *b.get(i)?;
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    v |= u64::from(*b.get(8)?) << 56;
    Some((v, 9))
}

/// Decodes HdrHistogram's uncompressed V2 encoding (as written by
/// [`Histogram::encode_v2`], Java's `encodeIntoByteBuffer` or the
/// `hdrhistogram` crate's `V2Serializer`). Bytes after the declared payload
/// are ignored; the highest trackable value in the header is not checked.
///
/// Sources with another layout are **re-bucketed exactly**: every non-empty
/// source counter must cover a value range inside one of this histogram's
/// buckets. That holds for 2 or more significant digits with a lowest
/// trackable value of 1 (a finer or equal layout); coarser sources fail with
/// [`DecodeError::Coarser`] as soon as a non-empty counter straddles buckets.
///
/// The encoding has counts only, so the decoded minimum and maximum are the
/// lower bound of the first and the upper bound of the last non-empty
/// (source) bucket, and the sum counts each value at its bucket's midpoint
/// (HdrHistogram's `medianEquivalentValue`). Quantiles stay never below the
/// exact value; [`Histogram::mean`] is then approximate (exact when every
/// value was below 256).
///
/// # Errors
/// Each [`DecodeError`] variant names its cause: truncated input, a
/// compressed or unknown cookie, an unsupported normalizing offset or
/// conversion ratio, invalid header parameters, values above `u64::MAX`, a
/// coarser layout, or counts that overflow `u64`.
///
/// # Example
/// ```
/// use metronome_core::histogram::{decode_v2, DecodeError, Histogram};
/// let mut h = Histogram::new();
/// h.record(1002);
/// let mut buf = [0u8; 64];
/// let len = h.encode_v2(&mut buf).unwrap();
/// let d = decode_v2(&buf[..len]).unwrap();
/// assert_eq!((d.count(), d.min(), d.max()), (1, 1000, 1003));
/// assert_eq!(d.quantile(0.5), 1003);
/// assert_eq!(decode_v2(&buf[..10]), Err(DecodeError::Truncated));
/// buf[3] = 0x14;
/// assert_eq!(decode_v2(&buf[..len]), Err(DecodeError::Compressed));
/// ```
pub fn decode_v2(bytes: &[u8]) -> Result<Histogram, DecodeError> {
    if bytes.len() < 4 {
        return Err(DecodeError::Truncated);
    }
    let cookie = be_u32(bytes, 0);
    match cookie & !COOKIE_WORD_SIZE_MASK {
        c if c == V2_COOKIE & !COOKIE_WORD_SIZE_MASK => {}
        c if c == V2_COMPRESSED_COOKIE & !COOKIE_WORD_SIZE_MASK => {
            return Err(DecodeError::Compressed)
        }
        _ => return Err(DecodeError::Cookie(cookie)),
    }
    if bytes.len() < V2_HEADER_LEN {
        return Err(DecodeError::Truncated);
    }
    let payload_len = be_u32(bytes, 4) as usize;
    if be_u32(bytes, 8) != 0 {
        return Err(DecodeError::NormalizingOffset);
    }
    let digits = be_u32(bytes, 12);
    let lowest = be_u64(bytes, 16);
    let ratio = f64::from_bits(be_u64(bytes, 32));
    if ratio != 1.0 {
        return Err(DecodeError::ConversionRatio);
    }
    if digits > 5 || lowest == 0 || lowest > i64::MAX as u64 {
        return Err(DecodeError::Parameters);
    }
    let unit = 63 - lowest.leading_zeros(); // floor(log2 lowest)
    let largest = 2 * 10u32.pow(digits); // single-unit resolution up to here
    let sub_magnitude = 32 - (largest - 1).leading_zeros(); // ceil(log2 largest)
    if unit + sub_magnitude > 63 {
        return Err(DecodeError::Parameters);
    }
    let half_magnitude = sub_magnitude - 1;
    let half = 1u64 << half_magnitude;

    let payload = bytes
        .get(V2_HEADER_LEN..V2_HEADER_LEN + payload_len)
        .ok_or(DecodeError::Truncated)?;

    let mut h = Histogram::new();
    let mut first: Option<u64> = None;
    let mut last = 0u64;
    let mut src_index: u64 = 0;
    let mut pos = 0;
    while pos < payload.len() {
        let (zz, used) = varint_read(&payload[pos..]).ok_or(DecodeError::Truncated)?;
        pos += used;
        let entry = ((zz >> 1) as i64) ^ -((zz & 1) as i64);
        if entry < 0 {
            src_index = src_index.saturating_add(entry.unsigned_abs());
            continue;
        }
        let count = entry as u64;
        let index = src_index;
        src_index = src_index.saturating_add(1);
        if count == 0 {
            continue;
        }
        // HdrHistogram's valueFromIndex for the source layout.
        let bucket = (index >> half_magnitude).saturating_sub(1);
        let sub = if index < half << 1 {
            index
        } else {
            (index & (half - 1)) + half
        };
        let shift = bucket + u64::from(unit);
        if shift >= 64 {
            return Err(DecodeError::OutOfRange);
        }
        let lower = u128::from(sub) << shift;
        let upper = lower + (1u128 << shift) - 1;
        let (Ok(lower), Ok(upper)) = (u64::try_from(lower), u64::try_from(upper)) else {
            return Err(DecodeError::OutOfRange);
        };
        let i = bucket_index(lower);
        if bucket_index(upper) != i {
            return Err(DecodeError::Coarser);
        }
        h.counts[i] = h.counts[i]
            .checked_add(count)
            .ok_or(DecodeError::CountOverflow)?;
        h.total = h
            .total
            .checked_add(count)
            .ok_or(DecodeError::CountOverflow)?;
        let mid = lower + ((upper - lower + 1) >> 1);
        h.sum = h.sum.saturating_add(u128::from(mid) * u128::from(count));
        first.get_or_insert(lower);
        last = upper;
    }
    if let Some(min) = first {
        h.min = min;
        h.max = last;
    }
    Ok(h)
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
    fn varint_len_matches_writer() {
        for v in [
            0u64,
            1,
            127,
            128,
            16_383,
            16_384,
            1 << 49,
            1 << 56,
            u64::MAX,
        ] {
            let mut out = [0u8; 9];
            let n = varint_write(v, &mut out);
            assert_eq!(varint_len(v), n, "v = {v}");
            assert_eq!(varint_read(&out[..n]), Some((v, n)));
        }
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
