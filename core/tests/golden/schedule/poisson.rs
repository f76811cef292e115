//! Poisson arrivals equal an independent oracle (PCG32 and the Poisson(4)
//! window table in exact integers), shard and add up, and have the
//! distribution they claim.

use super::*;

/// `P(N <= j) * 2^53` rounded to the nearest integer for `N ~ Poisson(4)`,
/// j = 0, 1, ... until it reaches 2^53, in exact integer arithmetic:
/// `P(N <= j) = sum_{i <= j} A_i / sum_i A_i` with `A_i = 4^i * 32! / i!`,
/// the sum over `i <= 32` (the terms past 32 change the ratio by less than
/// 2e-19, 0.0014 of the last place at 2^53, and every value is checked to be
/// farther than that from a rounding tie).
fn poisson4_thresholds() -> Vec<u64> {
    let fact32: u128 = (1..=32u128).product();
    let mut a = Vec::new();
    let mut term = fact32; // 4^0 * 32! / 0!
    for i in 0..=32u128 {
        a.push(term);
        if i < 32 {
            // 4^(i+1) * 32! / (i+1)! = term * 4 / (i + 1), exact.
            assert_eq!(term * 4 % (i + 1), 0);
            term = term * 4 / (i + 1);
        }
    }
    let total: u128 = a.iter().sum();
    let mut out = Vec::new();
    let mut partial = 0u128;
    for &ai in &a {
        partial += ai;
        // floor(partial * 2^70 / total) by long division (partial <= total < 2^124).
        let (mut q, mut r) = (0u128, partial);
        for _ in 0..70 {
            r <<= 1;
            q <<= 1;
            if r >= total {
                r -= total;
                q += 1;
            }
        }
        // q / 2^17 is the value at 2^53 scale, to 2^-17; at least 0.002 (the
        // truncation's 0.0014 and then some) from a rounding tie (the
        // closest, j = 9, is 0.0074 away).
        let frac = q % (1 << 17);
        assert!(
            frac.abs_diff(1 << 16) > 262,
            "threshold {} is near a tie",
            out.len()
        );
        let t = ((q + (1 << 16)) >> 17) as u64;
        out.push(t);
        if t >= 1 << 53 {
            break;
        }
    }
    out
}

/// The whole Poisson schedule from the oracle: windows of 4 / rate seconds;
/// window w's count by inversion of the table at the w-th 53-bit uniform of
/// `stream(seed, 0)` = `Pcg32::new(child(seed, 0), 0)`; its arrivals at
/// (w + v / 2^53) * window for the sorted uniforms v of
/// `stream(child(seed, 0), w)` = `Pcg32::new(child(child(seed, 0), w), w)`.
fn oracle_poisson(seed: u64, rate: f64, end_ns: u64) -> Vec<u64> {
    let table = poisson4_thresholds();
    let mut counts = Uniforms::new(child(seed, 0), 0);
    let window_ns = 4e9 / rate;
    let mut out = Vec::new();
    for w in 0u64.. {
        let u = counts.next_u53();
        let n = table.iter().filter(|&&t| t <= u).count();
        let mut positions = Uniforms::new(child(child(seed, 0), w), w);
        let mut v: Vec<u64> = (0..n).map(|_| positions.next_u53()).collect();
        v.sort_unstable();
        for x in v {
            let at = ((w as f64 + x as f64 / 9_007_199_254_740_992.0) * window_ns).round() as u64;
            if at >= end_ns {
                return out;
            }
            out.push(at);
        }
        if ((w + 1) as f64 * window_ns).round() as u64 >= end_ns {
            return out;
        }
    }
    unreachable!()
}

#[test]
fn poisson_windows_follow_the_table_and_the_window_streams() {
    for (seed, rate, end) in [
        (0u64, 1000.0, 5 * S),
        (42, 3.0, 2_000 * S),
        (u64::MAX, 12_345.6, S / 2),
    ] {
        let got = whole(Arrival::Poisson, rate, seed, end);
        let want = oracle_poisson(seed, rate, end);
        assert!(want.len() > 4_000, "{}", want.len());
        assert_eq!(got, want, "seed {seed} rate {rate}");
    }
}

#[test]
fn poisson_shards_keep_every_nth_arrival_and_union_to_the_whole() {
    let w = whole(Arrival::Poisson, 800.0, 5, 5 * S);
    assert!((3_700..=4_300).contains(&w.len()), "{}", w.len());
    for n in [1u32, 2, 3, 7, 64] {
        let mut union = Vec::new();
        for k in 0..n {
            let part = all(Arrival::Poisson, 800.0, 5, 5 * S, shard(k, n));
            let want: Vec<u64> = w
                .iter()
                .copied()
                .skip(k as usize)
                .step_by(n as usize)
                .collect();
            assert_eq!(part, want, "shard {k} of {n}");
            union.extend(part);
        }
        assert_eq!(sorted(union), w, "{n} shards");
    }
}

#[test]
fn poisson_window_counts_are_poisson_4_and_intervals_poisson() {
    // Counts per window: mean 4, variance 4, P(0) = e^-4, from the
    // offsets themselves (window w is [w, w + 1) * 4 ms at 1000/s).
    let offsets = whole(Arrival::Poisson, 1000.0, 31, 400 * S);
    let windows = 100_000usize;
    let mut per = vec![0u32; windows];
    for &o in &offsets {
        per[(o / 4_000_000) as usize] += 1;
    }
    let mean = per.iter().map(|&c| f64::from(c)).sum::<f64>() / windows as f64;
    let var = per
        .iter()
        .map(|&c| (f64::from(c) - mean).powi(2))
        .sum::<f64>()
        / windows as f64;
    let zeros = per.iter().filter(|&&c| c == 0).count() as f64 / windows as f64;
    // Standard errors: mean 0.006, variance 0.02, P(0) 0.0004.
    assert!((mean - 4.0).abs() < 0.03, "mean {mean}");
    assert!((var - 4.0).abs() < 0.12, "variance {var}");
    assert!((zeros - (-4.0f64).exp()).abs() < 0.002, "P(0) {zeros}");
    // Intervals that straddle window boundaries (7 ms from 1.5 ms) are
    // Poisson too: index of dispersion 1.
    let len = 7_000_000u64;
    let bins = ((400 * S - 1_500_000) / len) as usize;
    let mut per = vec![0u32; bins];
    for &o in &offsets {
        if o >= 1_500_000 {
            let b = ((o - 1_500_000) / len) as usize;
            if b < bins {
                per[b] += 1;
            }
        }
    }
    let mean = per.iter().map(|&c| f64::from(c)).sum::<f64>() / bins as f64;
    let var = per
        .iter()
        .map(|&c| (f64::from(c) - mean).powi(2))
        .sum::<f64>()
        / bins as f64;
    assert!((mean - 7.0).abs() < 0.06, "mean {mean}");
    assert!((var / mean - 1.0).abs() < 0.04, "dispersion {}", var / mean);
}

#[test]
fn poisson_sharded_rates_add_up() {
    let n = 8;
    let total: usize = (0..n)
        .map(|k| {
            Schedule::new(Arrival::Poisson, 1000.0, 77, 100 * S, shard(k, n))
                .unwrap()
                .count()
        })
        .sum();
    // Expected 100000, sd about 316.
    assert!((98_000..=102_000).contains(&total), "{total}");
}

#[test]
fn poisson_gaps_have_the_exponential_mean_and_shape() {
    let rate = 1000.0;
    let offsets: Vec<u64> = Schedule::new(Arrival::Poisson, rate, 2024, u64::MAX, Shard::WHOLE)
        .unwrap()
        .take(20_000)
        .collect();
    let mut prev = 0;
    let gaps: Vec<f64> = offsets
        .iter()
        .map(|&o| {
            let g = (o - prev) as f64;
            prev = o;
            g
        })
        .collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let want = 1e9 / rate;
    assert!((mean - want).abs() / want < 0.02, "mean gap {mean} ns");
    // P(gap < mean) = 1 - 1/e = 0.632 for an exponential.
    let below = gaps.iter().filter(|&&g| g < want).count() as f64 / gaps.len() as f64;
    assert!(
        (below - 0.632).abs() < 0.015,
        "fraction below the mean {below}"
    );
}

#[test]
fn poisson_depends_on_the_seed_only() {
    let a = whole(Arrival::Poisson, 100.0, 1, 10 * S);
    assert_eq!(a, whole(Arrival::Poisson, 100.0, 1, 10 * S));
    assert_ne!(a, whole(Arrival::Poisson, 100.0, 2, 10 * S));
}
