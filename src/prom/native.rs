//! A metronome [`Histogram`] (values in ns) as a Prometheus native histogram
//! (values in **seconds**, the Prometheus convention).
//!
//! # The schema
//!
//! Native schema `s` splits each power of two into `2^s` exponential
//! buckets: bucket `i` is `(2^((i-1)/2^s), 2^(i/2^s)]`, its upper bound
//! `2^(2^-s)` times its lower. Our histogram splits each power of two into
//! 128 linear sub-buckets (values below 256 ns exact), so two different
//! upper bounds of ours are always more than a factor `1 + 1/256` apart.
//! [`schema_for`] picks the coarsest schema whose bucket ratio is below
//! that spacing: for 128 sub-buckets, `2^(1/256) = 1.0027 < 1.0039`, so
//! schema 8 (also Prometheus' finest). At schema 8 no two of our buckets
//! below a recorded maximum share a native bucket: the mapping loses
//! nothing but the position inside the bucket.
//!
//! # The mapping
//!
//! Each of our non-empty buckets `[L, U]` goes **whole** into the native
//! bucket that holds its upper bound `U` (the value our own quantiles
//! report); a bucket that straddles a native boundary is not split. Zeros go
//! to the zero bucket (`zero_threshold` 0: it holds exactly 0). Count and
//! sum are exact (the sum rounded once to `f64` seconds). The mapping is
//! bucket-wise, so it commutes with addition: the native histograms of the
//! shards of a run sum (PromQL `sum`) to exactly the native histogram of
//! their merge.
//!
//! # The error bound
//!
//! Let `x` be the exact sample value at the nearest rank of `q`, `[L, U]`
//! our bucket that holds it, `Q = min(U, max)` metronome's quantile, and
//! `p` what Prometheus' `histogram_quantile(q, ...)` computes from the
//! native histogram at the same rank. Prometheus interpolates inside the
//! native bucket where the cumulative count reaches the rank, which is the
//! one holding `U`: `U / 2^(1/256) < p <= U * 2^(1/256)`. Since `x` and `Q`
//! both lie in `[L, U]` and `U < L * (1 + 1/128)`:
//!
//! - `|p / Q - 1| < 2^(1/256) - 1 = 0.271%` ([`QUANTILE_BOUND`]) whenever
//!   `Q = U` (every quantile not clamped to the recorded maximum);
//! - always, for `Q` and for `x` alike: `2^(-1/256) < p / Q < (129/128) *
//!   2^(1/256)`, i.e. from -0.271% to +1.06% ([`quantile_range`]).
//!
//! A quantile at 0 (zeros only up to the rank) is 0 in both.

use metronome_core::histogram::Histogram;

use super::proto;

/// The schema metronome's histograms are sent with: [`schema_for`] of 128
/// sub-buckets per power of two.
pub const SCHEMA: i32 = 8;

/// Relative bound between Prometheus' `histogram_quantile` over a native
/// histogram sent by [`to_native`] and metronome's own quantile at the same
/// rank, when that is a bucket's upper bound: `2^(1/256) - 1` (see the
/// module docs).
pub const QUANTILE_BOUND: f64 = 0.002_711_275_050_203_3;

/// The open range that Prometheus' quantile lies in, given metronome's
/// quantile `q_ours` at the same rank (any unit): `(q_ours / 2^(1/256),
/// q_ours * (129/128) * 2^(1/256))` (see the module docs).
///
/// ```
/// let (lo, hi) = metronome::prom::native::quantile_range(1.0);
/// assert!((lo - 0.997296).abs() < 1e-6 && (hi - 1.010545).abs() < 1e-6);
/// ```
pub fn quantile_range(q_ours: f64) -> (f64, f64) {
    let ratio = 1.0 + QUANTILE_BOUND;
    (q_ours / ratio, q_ours * (129.0 / 128.0) * ratio)
}

/// The coarsest native schema (-4..=8) whose bucket ratio `2^(2^-s)` is
/// below `1 + 1 / (2 * sub_buckets)`, the smallest spacing of two upper
/// bounds of a log-linear histogram with `sub_buckets` linear sub-buckets
/// per power of two; 8 (the finest schema) when none is.
///
/// ```
/// use metronome::prom::native::{schema_for, SCHEMA};
/// assert_eq!(schema_for(128), SCHEMA);
/// assert_eq!(schema_for(64), 7);
/// assert_eq!(schema_for(1), 1);
/// assert_eq!(schema_for(1 << 20), 8);
/// ```
pub fn schema_for(sub_buckets: u32) -> i32 {
    let spacing = 1.0 / (2.0 * f64::from(sub_buckets.max(1)));
    (-4..=8)
        .find(|&s| 2f64.powf(2f64.powi(-s)) - 1.0 < spacing)
        .unwrap_or(8)
}

/// The upper bound of native bucket `index` at `schema` (0..=8):
/// `2^(index / 2^schema)`, as Prometheus' `getBound` computes it.
pub fn bucket_upper(index: i32, schema: i32) -> f64 {
    let per = 1i32 << schema;
    let exp = index.div_euclid(per);
    let frac = index.rem_euclid(per);
    2f64.powf(f64::from(frac) / f64::from(per)) * 2f64.powi(exp)
}

/// The native bucket at `schema` (0..=8) holding `v > 0`: the `i` with
/// `bucket_upper(i - 1) < v <= bucket_upper(i)`.
pub fn bucket_key(v: f64, schema: i32) -> i32 {
    let per = f64::from(1i32 << schema);
    let mut i = (v.log2() * per).ceil() as i32;
    // The logarithm can be an ulp off at a boundary; settle on the bounds.
    while bucket_upper(i, schema) < v {
        i += 1;
    }
    while bucket_upper(i - 1, schema) >= v {
        i -= 1;
    }
    i
}

/// `h` (ns) as a native histogram sample in seconds at `timestamp_ms`, at
/// [`SCHEMA`], integer counts (see the module docs for the mapping).
pub fn to_native(h: &Histogram, timestamp_ms: i64) -> proto::Histogram {
    let mut zero = 0u64;
    let mut keys: Vec<(i32, u64)> = Vec::new();
    for b in h.buckets() {
        if b.upper == 0 {
            zero += b.count;
            continue;
        }
        let key = bucket_key(b.upper as f64 * 1e-9, SCHEMA);
        match keys.last_mut() {
            Some((k, c)) if *k == key => *c += b.count,
            _ => keys.push((key, b.count)),
        }
    }
    let mut spans: Vec<proto::BucketSpan> = Vec::new();
    let mut deltas = Vec::with_capacity(keys.len());
    let mut prev_key = None;
    let mut prev_count = 0i64;
    for &(key, count) in &keys {
        match prev_key {
            Some(p) if key == p + 1 => {
                if let Some(last) = spans.last_mut() {
                    last.length += 1;
                }
            }
            Some(p) => spans.push(proto::BucketSpan {
                offset: key - p - 1,
                length: 1,
            }),
            None => spans.push(proto::BucketSpan {
                offset: key,
                length: 1,
            }),
        }
        let count = count as i64;
        deltas.push(count - prev_count);
        prev_count = count;
        prev_key = Some(key);
    }
    // u128 ns to f64 seconds: one rounding to f64, then the scale.
    let sum = h.sum() as f64 * 1e-9;
    proto::Histogram {
        count: Some(proto::Count::CountInt(h.count())),
        sum,
        schema: SCHEMA,
        zero_threshold: 0.0,
        zero_count: Some(proto::ZeroCount::ZeroCountInt(zero)),
        positive_spans: spans,
        positive_deltas: deltas,
        timestamp: timestamp_ms,
        ..Default::default()
    }
}

/// The native buckets of a histogram sent by [`to_native`]: `(key, count)`
/// in ascending key order, read back from its spans and deltas.
pub fn positive_buckets(n: &proto::Histogram) -> Vec<(i32, u64)> {
    let mut out = Vec::with_capacity(n.positive_deltas.len());
    let mut deltas = n.positive_deltas.iter();
    let mut key = 0i32;
    let mut count = 0i64;
    for (i, span) in n.positive_spans.iter().enumerate() {
        key = if i == 0 {
            span.offset
        } else {
            key + span.offset
        };
        for _ in 0..span.length {
            count += deltas.next().copied().unwrap_or(0);
            out.push((key, count.max(0) as u64));
            key += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bound_constant_is_the_schema_ratio() {
        assert!((QUANTILE_BOUND - (2f64.powf(1.0 / 256.0) - 1.0)).abs() < 1e-15);
    }

    #[test]
    fn keys_follow_the_definition() {
        assert_eq!(bucket_key(1.0, 8), 0);
        assert_eq!(bucket_key(2.0, 8), 256);
        assert_eq!(bucket_key(0.5, 8), -256);
        assert_eq!(bucket_key(1.001, 8), 1);
        assert_eq!(bucket_key(2.0, 0), 1);
        assert_eq!(bucket_key(3.0, 0), 2);
        for &v in &[1e-9, 3.7e-6, 0.25, 1.0, 17.3, 1e6] {
            let k = bucket_key(v, 8);
            assert!(bucket_upper(k - 1, 8) < v && v <= bucket_upper(k, 8), "{v}");
        }
    }

    #[test]
    fn spans_and_deltas_encode_the_buckets() {
        let mut h = Histogram::new();
        h.record_n(0, 2);
        h.record_n(1_000_000, 3); // our bucket [999424, 1003519] ns
        h.record_n(1_010_000, 1); // our bucket [1007616, 1011711] ns
        h.record_n(1_000_000_000, 4); // [998244352, 1002438655]: key 1
        let n = to_native(&h, 7);
        assert_eq!(n.count, Some(proto::Count::CountInt(10)));
        assert_eq!(n.zero_count, Some(proto::ZeroCount::ZeroCountInt(2)));
        assert_eq!((n.schema, n.zero_threshold, n.timestamp), (8, 0.0, 7));
        assert!((n.sum - (0.003 + 0.00101 + 4.0)).abs() < 1e-12);
        assert_eq!(bucket_key(1_002_438_655e-9, 8), 1);
        // ceil(256 * log2(1003519e-9)) = -2549, ceil(256 * log2(1011711e-9)) = -2546.
        assert_eq!(bucket_key(1_003_519e-9, 8), -2549);
        assert_eq!(bucket_key(1_011_711e-9, 8), -2546);
        assert_eq!(positive_buckets(&n), vec![(-2549, 3), (-2546, 1), (1, 4)]);
        assert_eq!(
            n.positive_spans,
            vec![
                proto::BucketSpan {
                    offset: -2549,
                    length: 1
                },
                proto::BucketSpan {
                    offset: 2,
                    length: 1
                },
                proto::BucketSpan {
                    offset: 2546,
                    length: 1
                },
            ]
        );
        assert_eq!(n.positive_deltas, vec![3, -2, 3]);
    }

    #[test]
    fn empty_histogram_is_an_empty_native_one() {
        let n = to_native(&Histogram::new(), 0);
        assert_eq!(n.count, Some(proto::Count::CountInt(0)));
        assert!(n.positive_spans.is_empty() && n.positive_deltas.is_empty());
    }
}
