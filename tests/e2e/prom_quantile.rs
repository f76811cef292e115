//! The documented error bound of a native histogram's quantile
//! (`metronome::prom::native`): for random histograms, the quantile that
//! Prometheus' `histogram_quantile` computes from the native histogram that
//! `to_native` sends (its algorithm ported below from promql/quantile.go of
//! Prometheus v2.42, with `getBound` of model/histogram/generic.go) lies
//! within the bound of metronome's own quantile at the same rank; and the
//! mapping is exact in count, zero count and under addition (a `sum` over
//! shards equals the merge).

use metronome::prom::native::{
    bucket_upper, positive_buckets, quantile_range, to_native, QUANTILE_BOUND,
};
use metronome::prom::proto;
use metronome_core::histogram::{bucket_bounds, bucket_index, Histogram};
use proptest::prelude::*;

/// One bucket as Prometheus' `allFloatBucketIterator` yields it.
struct PromBucket {
    lower: f64,
    upper: f64,
    count: f64,
}

/// Prometheus' `histogramQuantile(q, h)` for a histogram with positive
/// buckets and a zero bucket only (what `to_native` sends); also returns
/// the rank it used, as the cumulative count it stopped at.
fn prom_histogram_quantile(q: f64, n: &proto::Histogram) -> f64 {
    let total = match n.count {
        Some(proto::Count::CountInt(c)) => c as f64,
        Some(proto::Count::CountFloat(c)) => c,
        None => 0.0,
    };
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    if total == 0.0 || q.is_nan() {
        return f64::NAN;
    }
    let zt = n.zero_threshold;
    let mut buckets = Vec::new();
    let zero = match n.zero_count {
        Some(proto::ZeroCount::ZeroCountInt(c)) => c as f64,
        Some(proto::ZeroCount::ZeroCountFloat(c)) => c,
        None => 0.0,
    };
    if zero > 0.0 {
        buckets.push(PromBucket {
            lower: -zt,
            upper: zt,
            count: zero,
        });
    }
    for (key, c) in positive_buckets(n) {
        let mut lower = bucket_upper(key - 1, n.schema);
        if lower < zt {
            lower = zt;
        }
        buckets.push(PromBucket {
            lower,
            upper: bucket_upper(key, n.schema),
            count: c as f64,
        });
    }
    let rank = q * total;
    let mut count = 0.0;
    let mut bucket = None;
    for b in &buckets {
        count += b.count;
        bucket = Some(b);
        if count >= rank {
            break;
        }
    }
    let b = bucket.expect("a histogram with a count has a bucket");
    let (mut lower, upper) = (b.lower, b.upper);
    if lower < 0.0 && upper > 0.0 && n.negative_spans.is_empty() && !n.positive_spans.is_empty() {
        lower = 0.0;
    }
    if count > total {
        count = total;
    }
    if count < rank {
        return upper;
    }
    let rank = rank - (count - b.count);
    lower + (upper - lower) * (rank / b.count)
}

/// The rank Prometheus' loop stops at: the smallest `r >= 1` with `r >= q * n`.
fn prom_rank(q: f64, n: u64) -> u64 {
    ((q * n as f64).ceil() as u64).clamp(1, n)
}

/// Values (ns) with their counts: exact small values, zeros, typical
/// latencies and the far end of the range.
fn values() -> impl Strategy<Value = Vec<(u64, u64)>> {
    let value = prop_oneof![
        Just(0u64),
        0u64..300,
        1_000u64..10_000_000,
        1_000_000u64..10_000_000_000,
        any::<u64>(),
    ];
    prop::collection::vec((value, 1u64..20), 1..200)
}

fn histogram(vs: &[(u64, u64)]) -> Histogram {
    let mut h = Histogram::new();
    for &(v, n) in vs {
        h.record_n(v, n);
    }
    h
}

fn quantile() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.5),
        Just(0.9),
        Just(0.99),
        Just(0.999),
        Just(1.0),
        0.000_001f64..=1.0,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn prometheus_quantile_is_within_the_bound(vs in values(), q in quantile()) {
        let h = histogram(&vs);
        let n = h.count();
        let native = to_native(&h, 0);
        let p = prom_histogram_quantile(q, &native);
        // Ours at Prometheus' rank. Our own rank is ceil(q * n - 1e-9): the
        // two differ only where q * n is a whole number up to rounding.
        let rank = prom_rank(q, n);
        let ours_rank = ((q * n as f64 - 1e-9).ceil() as u64).clamp(1, n);
        if ((q * n as f64) - (q * n as f64).round()).abs() > 1e-9 {
            prop_assert_eq!(rank, ours_rank);
        }
        let ours_ns = h.quantile(rank as f64 / n as f64);
        if rank == ours_rank {
            prop_assert_eq!(ours_ns, h.quantile(q));
        }
        if ours_ns == 0 {
            prop_assert_eq!(p, 0.0);
            return Ok(());
        }
        let ours = ours_ns as f64 * 1e-9;
        let (lo, hi) = quantile_range(ours);
        prop_assert!(
            lo * (1.0 - 1e-12) < p && p < hi * (1.0 + 1e-12),
            "q {} rank {} of {}: Prometheus {} s, ours {} s, range ({}, {})", q, rank, n, p, ours, lo, hi
        );
        // Not clamped to the max: within 2^(1/256) - 1 either way.
        if bucket_bounds(bucket_index(ours_ns)).1 == ours_ns {
            prop_assert!(
                (p / ours - 1.0).abs() <= QUANTILE_BOUND * (1.0 + 1e-9),
                "q {}: Prometheus {} s, ours {} s, off by {}", q, p, ours, p / ours - 1.0
            );
        }
    }

    #[test]
    fn counts_are_exact_and_the_mapping_adds(a in values(), b in values()) {
        let (ha, hb) = (histogram(&a), histogram(&b));
        let mut merged = ha.clone();
        merged.merge(&hb);
        let (na, nb, nm) = (to_native(&ha, 0), to_native(&hb, 0), to_native(&merged, 0));
        for (h, n) in [(&ha, &na), (&hb, &nb), (&merged, &nm)] {
            let zeros = h.buckets().filter(|b| b.upper == 0).map(|b| b.count).sum::<u64>();
            prop_assert_eq!(n.zero_count, Some(proto::ZeroCount::ZeroCountInt(zeros)));
            let in_buckets: u64 = positive_buckets(n).iter().map(|&(_, c)| c).sum();
            prop_assert_eq!(n.count, Some(proto::Count::CountInt(h.count())));
            prop_assert_eq!(in_buckets + zeros, h.count());
        }
        // PromQL's sum of the two equals the native histogram of the merge.
        let mut sum = std::collections::BTreeMap::new();
        for (k, c) in positive_buckets(&na).into_iter().chain(positive_buckets(&nb)) {
            *sum.entry(k).or_insert(0u64) += c;
        }
        prop_assert_eq!(sum.into_iter().collect::<Vec<_>>(), positive_buckets(&nm));
    }
}

#[test]
fn a_known_case() {
    // 100 values 1..=100 ms: p99 is the 99th, 99 ms, in our bucket
    // [98566144, 99090431] ns; Prometheus interpolates in the native bucket
    // holding 99.090431 ms.
    let mut h = Histogram::new();
    for ms in 1..=100u64 {
        h.record(ms * 1_000_000);
    }
    assert_eq!(h.quantile(0.99), 99_090_431);
    let p = prom_histogram_quantile(0.99, &to_native(&h, 0));
    let ours = 99_090_431e-9;
    assert!((p / ours - 1.0).abs() < QUANTILE_BOUND, "{p}");
    assert!(prom_histogram_quantile(0.5, &to_native(&Histogram::new(), 0)).is_nan());
}
