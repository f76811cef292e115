//! `metronome simulate`: every figure exact, each derived by hand.
//!
//! Scenario: FIFO server, 1 ms service, one 2 s stall taken by the first
//! request that starts service at or after t = 50 s, 100 s horizon (nothing
//! sent at or after 100 s). Values in nanoseconds.

use metronome::simulate::{admit, compute, corrected, exact_quantile, Row, SCENARIO};
use metronome_core::schedule::{Arrival, Schedule, Shard};

const MS: u64 = 1_000_000;

#[test]
fn closed_loop_hides_the_stall() {
    let o = compute();
    // One worker, back to back: request k is sent at k ms and done at k+1 ms
    // for k = 0..=49_999 (50_000 requests of 1 ms). The request sent at
    // exactly 50_000 ms is the first to start at or after 50 s: it takes
    // 2 s + 1 ms = 2001 ms and ends at 52_001 ms. Then requests at 52_001,
    // 52_002, ..., 99_999 ms: 99_999 - 52_001 + 1 = 47_999 more.
    // n = 50_000 + 1 + 47_999 = 98_000. Only one value is not 1 ms, so
    // p50 = p99 = 1 ms (rank 97_020 < 97_999), max = 2001 ms.
    assert_eq!(
        o.closed.0,
        Row {
            n: 98_000,
            p50: MS,
            p99: MS,
            max: 2_001 * MS
        }
    );
    // Histogram: 1_000_000 ns has e = 19, shift = 12, sub = 1_000_000 >> 12
    // = 244, bucket [244 * 4096, 245 * 4096 - 1] = [999_424, 1_003_519];
    // the quantile is the bucket's upper bound 1_003_519. The max is exact.
    assert_eq!(
        o.closed.1,
        Row {
            n: 98_000,
            p50: 1_003_519,
            p99: 1_003_519,
            max: 2_001 * MS
        }
    );
}

#[test]
fn open_loop_sees_the_stall() {
    let o = compute();
    // Sends at 0, 10, ..., 99_990 ms: 10_000 requests. The one at 50_000 ms
    // takes the stall and ends at 52_001 ms (latency 2001 ms). The j-th after
    // it (arrival 50_000 + 10j) queues while 52_001 + (j - 1) > 50_000 + 10j,
    // i.e. 9j < 2000, j <= 222; it ends at 52_001 + j, latency 2001 - 9j ms.
    // So 223 latencies 2001, 1992, ..., 3 ms (j = 0..=222) and 9_777 of 1 ms.
    // p99: rank ceil(0.99 * 10_000) = 9_900, the (9_900 - 9_777) = 123rd
    // smallest of 3, 12, 21, ...: 3 + 9 * 122 = 1_101 ms.
    assert_eq!(
        o.open.0,
        Row {
            n: 10_000,
            p50: MS,
            p99: 1_101 * MS,
            max: 2_001 * MS
        }
    );
    // 1_101_000_000 ns: e = 30, shift = 23, sub = 131 (131 * 2^23 =
    // 1_098_907_648), bucket upper 132 * 2^23 - 1 = 1_107_296_255.
    assert_eq!(
        o.open.1,
        Row {
            n: 10_000,
            p50: 1_003_519,
            p99: 1_107_296_255,
            max: 2_001 * MS
        }
    );
}

#[test]
fn correction_recovers_the_open_picture() {
    let o = compute();
    // record_corrected(2001 ms, 1 ms) adds 2000, 1999, ..., 1 ms (2000
    // values); 1 ms values add nothing. n = 98_000 + 2_000 = 100_000.
    // Sorted: 98_000 values of 1 ms (97_999 + the added 1 ms), then 2, 3,
    // ..., 2001 ms. p50 = 1 ms; p99 = rank 99_000, the 1_000th of 2..=2001:
    // 1_001 ms.
    assert_eq!(
        o.corrected.0,
        Row {
            n: 100_000,
            p50: MS,
            p99: 1_001 * MS,
            max: 2_001 * MS
        }
    );
    // 1_001_000_000 ns: e = 29, shift = 22, sub = 238 (238 * 2^22 =
    // 998_244_352), bucket upper 239 * 2^22 - 1 = 1_002_438_655.
    assert_eq!(
        o.corrected.1,
        Row {
            n: 100_000,
            p50: 1_003_519,
            p99: 1_002_438_655,
            max: 2_001 * MS
        }
    );
}

#[test]
fn poisson_mean_gap_matches_the_schedule_split_four_ways() {
    let o = compute();
    assert_eq!(o.poisson_arrivals, 1_000_000);
    // The millionth arrival (index 999,999) is the 250,000th of shard 3 of
    // 4: the same schedule split over four threads reaches the same point.
    let shard = Shard { index: 3, count: 4 };
    let last = Schedule::new(Arrival::Poisson, 1000.0, 42, u64::MAX, shard)
        .unwrap()
        .nth(249_999)
        .unwrap();
    let mean_ns = last as f64 / 1e6;
    assert_eq!(o.poisson_mean_gap_ns, mean_ns);
    // And it is a Poisson process at 1000/s: the mean gap of a million
    // exponential gaps is within 0.5% of 1 ms (the standard error is 0.1%).
    assert!((o.poisson_mean_gap_ns / 1e6 - 1.0).abs() < 0.005);
}

#[test]
fn fifo_and_correction_hand_examples() {
    let mut s = SCENARIO.server();
    // Three arrivals at 0 queue: done at 1, 2, 3 ms.
    assert_eq!(
        [admit(&mut s, 0), admit(&mut s, 0), admit(&mut s, 0)],
        [MS, 2 * MS, 3 * MS]
    );
    // HdrHistogram's correction of 5 ms at a 2 ms interval adds 5 - 2k ms
    // while that is at least 2 ms: only 3 ms (1 ms is below the interval).
    assert_eq!(corrected(&[5 * MS], 2 * MS), vec![5 * MS, 3 * MS]);
    assert_eq!(exact_quantile(&[1, 2, 3, 4], 0.5), 2);
    assert_eq!(exact_quantile(&[], 0.5), 0);
}

#[test]
fn simulate_prints_the_table() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_metronome"))
        .arg("simulate")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(" 1,101 "), "{text}");
    assert!(text.contains("98,000"), "{text}");
}
