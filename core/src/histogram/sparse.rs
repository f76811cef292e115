//! A compact, exact form of a [`Histogram`] for storage, not exchange:
//! only its non-empty buckets, as LEB128 varints. [`Histogram::sparse_len`],
//! [`Histogram::encode_sparse`] and [`Histogram::merge_sparse`]; it costs
//! about two bytes per non-empty bucket plus a header of at most 41 bytes,
//! and keeps the count, minimum, maximum and sum exact, so a histogram
//! merged back from it equals the original.
//!
//! Layout: `n` (non-empty buckets); when `n > 0`: `min`, `max`, the low and
//! high 64 bits of `sum`, then `n` pairs (bucket index minus the previous
//! pair's index, or the index itself for the first; count). Every number
//! is an unsigned LEB128 varint (at most 10 bytes).

use super::{bucket_index, Histogram, BUCKET_COUNT};

/// The most bytes [`Histogram::encode_sparse`] writes for any histogram.
pub const SPARSE_MAX_LEN: usize = 10 * 5 + BUCKET_COUNT * (2 + 10);

fn len_of(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

fn put(buf: &mut [u8], at: &mut usize, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            buf[*at] = byte;
            *at += 1;
            return;
        }
        buf[*at] = byte | 0x80;
        *at += 1;
    }
}

fn get(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..70).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        if shift == 63 && b > 1 {
            return None;
        }
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

impl Histogram {
    /// The non-empty buckets as (index, count), lowest first.
    fn nonzero(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        let (lo, hi) = if self.total == 0 {
            (0, 0)
        } else {
            (bucket_index(self.min), bucket_index(self.max) + 1)
        };
        self.counts[lo..hi]
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(move |(j, &c)| (lo + j, c))
    }

    /// Exact number of bytes [`Histogram::encode_sparse`] writes.
    ///
    /// ```
    /// use metronome_core::histogram::Histogram;
    /// let mut h = Histogram::new();
    /// assert_eq!(h.sparse_len(), 1);
    /// h.record(3);
    /// assert_eq!(h.sparse_len(), 1 + 4 + 2);
    /// ```
    pub fn sparse_len(&self) -> usize {
        if self.total == 0 {
            return 1;
        }
        let mut n = 0usize;
        let mut len = 0usize;
        let mut prev = 0usize;
        for (i, c) in self.nonzero() {
            len += len_of((i - prev) as u64) + len_of(c);
            prev = i;
            n += 1;
        }
        len + len_of(n as u64)
            + len_of(self.min)
            + len_of(self.max)
            + len_of(self.sum as u64)
            + len_of((self.sum >> 64) as u64)
    }

    /// Writes the sparse form into `buf` and returns its length
    /// ([`Histogram::sparse_len`]).
    ///
    /// # Panics
    /// When `buf` is shorter than [`Histogram::sparse_len`] (a bug in the
    /// caller, like an out-of-range slice index).
    ///
    /// ```
    /// use metronome_core::histogram::Histogram;
    /// let mut h = Histogram::new();
    /// for v in [3, 1000, 1002, 70_000_000] {
    ///     h.record(v);
    /// }
    /// let mut buf = [0u8; 64];
    /// let n = h.encode_sparse(&mut buf);
    /// assert_eq!(n, h.sparse_len());
    /// let mut back = Histogram::new();
    /// assert_eq!(back.merge_sparse(&buf[..n]), Some(n));
    /// assert_eq!(back, h);
    /// ```
    pub fn encode_sparse(&self, buf: &mut [u8]) -> usize {
        let mut at = 0;
        let n = self.nonzero().count();
        put(buf, &mut at, n as u64);
        if n == 0 {
            return at;
        }
        put(buf, &mut at, self.min);
        put(buf, &mut at, self.max);
        put(buf, &mut at, self.sum as u64);
        put(buf, &mut at, (self.sum >> 64) as u64);
        let mut prev = 0usize;
        for (i, c) in self.nonzero() {
            put(buf, &mut at, (i - prev) as u64);
            put(buf, &mut at, c);
            prev = i;
        }
        at
    }

    /// Adds a sparse form read from the start of `bytes` into this
    /// histogram, exactly (as [`Histogram::merge`] would add the original),
    /// and returns the bytes it took; `None` when they are not a valid
    /// sparse form (nothing is added then).
    ///
    /// ```
    /// use metronome_core::histogram::Histogram;
    /// let mut h = Histogram::new();
    /// assert_eq!(h.merge_sparse(&[0x02, 0x00]), None); // cut short
    /// assert_eq!(h.merge_sparse(&[0x00, 0xff]), Some(1)); // empty
    /// assert!(h.is_empty());
    /// ```
    pub fn merge_sparse(&mut self, bytes: &[u8]) -> Option<usize> {
        let mut at = 0;
        let n = get(bytes, &mut at)?;
        if n == 0 {
            return Some(at);
        }
        if n > BUCKET_COUNT as u64 {
            return None;
        }
        let min = get(bytes, &mut at)?;
        let max = get(bytes, &mut at)?;
        let sum = u128::from(get(bytes, &mut at)?) | u128::from(get(bytes, &mut at)?) << 64;
        // Check the whole form before adding anything.
        let start = at;
        let mut index = 0u64;
        let mut total = 0u64;
        for k in 0..n {
            let d = get(bytes, &mut at)?;
            if k > 0 && d == 0 {
                return None;
            }
            index = index.checked_add(d)?;
            if index >= BUCKET_COUNT as u64 {
                return None;
            }
            total = total.saturating_add(get(bytes, &mut at)?);
        }
        let end = at;
        at = start;
        let mut index = 0usize;
        for _ in 0..n {
            index += get(bytes, &mut at)? as usize;
            let c = get(bytes, &mut at)?;
            self.counts[index] = self.counts[index].saturating_add(c);
        }
        self.total = self.total.saturating_add(total);
        self.min = self.min.min(min);
        self.max = self.max.max(max);
        self.sum = self.sum.saturating_add(sum);
        Some(end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_exactly_and_adds() {
        let mut h = Histogram::new();
        for v in [0, 1, 127, 128, 1_000_000, u64::MAX, u64::MAX] {
            h.record(v);
        }
        let mut buf = [0u8; SPARSE_MAX_LEN];
        let n = h.encode_sparse(&mut buf);
        assert_eq!(n, h.sparse_len());
        let mut twice = h.clone();
        assert_eq!(twice.merge_sparse(&buf[..n]), Some(n));
        let mut want = h.clone();
        want.merge(&h);
        assert_eq!(twice, want);
        assert_eq!(twice.sum(), want.sum());
    }

    #[test]
    fn rejects_an_index_past_the_counters() {
        let mut h = Histogram::new();
        // One bucket at index 7424.
        let bytes = [1, 5, 5, 5, 0, 0x80, 0x3a, 1];
        assert_eq!(h.merge_sparse(&bytes), None);
        assert!(h.is_empty());
    }
}
