//! The send-lag histogram: fixed log-linear counters.

/// Counters of a log-linear histogram: 64 rows (powers of two) of 16
/// linear buckets.
pub(crate) const LAG_BUCKETS: usize = 64 * 16;

/// Send lag in ns: fixed counters, no allocation per record.
pub(crate) struct LagHistogram {
    pub(crate) counts: Box<[u64; LAG_BUCKETS]>,
    pub(crate) total: u64,
    pub(crate) max: u64,
}

impl LagHistogram {
    pub(crate) fn new() -> Self {
        Self {
            counts: Box::new([0; LAG_BUCKETS]),
            total: 0,
            max: 0,
        }
    }

    /// Values below 16 are exact; above, 16 buckets per power of two.
    pub(crate) fn index(value: u64) -> usize {
        if value < 16 {
            return value as usize;
        }
        let exponent = 63 - value.leading_zeros(); // 4..=63
        let sub = (value >> (exponent - 4)) & 15;
        (exponent as usize - 3) * 16 + sub as usize
    }

    /// The largest value that falls in bucket `index`.
    pub(crate) fn upper(index: usize) -> u64 {
        if index < 16 {
            return index as u64;
        }
        let exponent = (index / 16 + 3) as u32;
        let sub = (index % 16) as u128;
        u64::try_from(((16 + sub + 1) << (exponent - 4)) - 1).unwrap_or(u64::MAX)
    }

    pub(crate) fn record(&mut self, value: u64) {
        self.counts[Self::index(value)] += 1;
        self.total += 1;
        self.max = self.max.max(value);
    }

    /// Upper bound of the bucket holding quantile `q` (never above the max).
    pub(crate) fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (index, &count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Self::upper(index).min(self.max);
            }
        }
        self.max
    }
}
