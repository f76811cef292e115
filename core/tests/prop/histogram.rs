//! Property tests for `metronome_core::histogram`: the histogram against an
//! exact sort, merge against recording everything, and the V2 encoding
//! against the `hdrhistogram` crate.

use hdrhistogram::serialization::Deserializer;
use metronome_core::histogram::{bucket_bounds, bucket_index, decode_v2, Histogram, V2_MAX_LEN};
use proptest::prelude::*;

/// Log-uniform values over six decades: 1 us to 1 s in nanoseconds.
fn log_uniform() -> impl Strategy<Value = u64> {
    (3.0f64..9.0).prop_map(|e| 10f64.powf(e) as u64)
}

/// Any u64, biased towards small values and the edges.
fn any_value() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..300,
        log_uniform(),
        (0u32..64, any::<u64>()).prop_map(|(s, x)| x >> s),
        Just(u64::MAX),
        Just(i64::MAX as u64),
    ]
}

/// The exact nearest-rank value, with the same rank rule as the histogram.
fn exact_quantile(sorted: &[u64], q: f64) -> u64 {
    let n = sorted.len() as u64;
    let x = (q * n as f64 - 1e-9).ceil();
    let rank = if x >= n as f64 {
        n
    } else if x >= 1.0 {
        x as u64
    } else {
        1
    };
    sorted[(rank - 1) as usize]
}

fn counts(h: &Histogram) -> Vec<(u64, u64)> {
    h.buckets().map(|b| (b.lower, b.count)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn quantiles_within_one_128th_of_exact(
        values in prop::collection::vec(log_uniform(), 1..2000),
        extra_q in prop::collection::vec(0.0f64..=1.0, 0..20),
    ) {
        let mut h = Histogram::new();
        for &v in &values {
            h.record(v);
        }
        let mut sorted = values.clone();
        sorted.sort_unstable();
        let fixed = [0.0, 0.01, 0.07, 0.1, 0.25, 0.5, 0.55, 0.9, 0.95, 0.99, 0.999, 0.9999, 1.0];
        for q in fixed.into_iter().chain(extra_q) {
            let exact = exact_quantile(&sorted, q);
            let got = h.quantile(q);
            prop_assert!(got >= exact, "q {} got {} < exact {}", q, got, exact);
            prop_assert!(got <= exact + exact / 128, "q {} got {} > exact {} + 1/128", q, got, exact);
            let (lo, hi) = bucket_bounds(bucket_index(exact));
            prop_assert!(lo <= got && got <= hi);
        }
        prop_assert_eq!(h.count(), values.len() as u64);
        prop_assert_eq!(h.min(), sorted[0]);
        prop_assert_eq!(h.max(), *sorted.last().unwrap());
        prop_assert_eq!(h.sum(), values.iter().map(|&v| v as u128).sum::<u128>());
        prop_assert_eq!(h.buckets().map(|b| b.count).sum::<u64>(), values.len() as u64);
    }

    #[test]
    fn merge_equals_recording_everything(
        a in prop::collection::vec(any_value(), 0..500),
        b in prop::collection::vec(any_value(), 0..500),
    ) {
        let mut ha = Histogram::new();
        let mut hb = Histogram::new();
        let mut all = Histogram::new();
        for &v in &a {
            ha.record(v);
            all.record(v);
        }
        for &v in &b {
            hb.record(v);
            all.record(v);
        }
        ha.merge(&hb);
        prop_assert_eq!(ha, all);
    }

    #[test]
    fn round_trip_and_crate_decode_agree(values in prop::collection::vec(any_value(), 0..500)) {
        let mut h = Histogram::new();
        for &v in &values {
            h.record(v);
        }
        let mut buf = vec![0u8; V2_MAX_LEN];
        let len = h.encode_v2(&mut buf).unwrap();
        prop_assert_eq!(len, h.encoded_len());
        let bytes = &buf[..len];
        let back = decode_v2(bytes).unwrap();
        prop_assert_eq!(counts(&back), counts(&h));
        prop_assert_eq!(back.count(), h.count());
        for q in [0.0, 0.5, 0.9, 0.99, 1.0] {
            prop_assert!(back.quantile(q) >= h.quantile(q));
        }
        if values.iter().all(|&v| v < 256) {
            prop_assert_eq!(&back, &h);
        }
        let hdr: hdrhistogram::Histogram<u64> =
            Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
        let hdr_counts: Vec<(u64, u64)> = hdr
            .iter_recorded()
            .map(|v| (hdr.lowest_equivalent(v.value_iterated_to()), v.count_at_value()))
            .collect();
        prop_assert_eq!(hdr_counts, counts(&h));
        prop_assert_eq!(hdr.len(), h.count());
    }

    #[test]
    fn record_corrected_equals_the_naive_loop(
        values in prop::collection::vec(0u64..100_000, 0..50),
        interval in 0u64..5_000,
    ) {
        let mut fast = Histogram::new();
        let mut naive = Histogram::new();
        for &v in &values {
            fast.record_corrected(v, interval);
            naive.record(v);
            if interval > 0 && v > interval {
                let mut m = v - interval;
                while m >= interval {
                    naive.record(m);
                    m -= interval;
                }
            }
        }
        prop_assert_eq!(fast, naive);
    }
}
