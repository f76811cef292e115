//! Golden and statistical tests for `metronome_core::schedule`: exact offsets
//! where the answer is exact (constant, burst, sharding), offsets recomputed
//! from an independent PCG32 (`rand_pcg`) and std math for Poisson and gamma
//! (the Poisson(4) window-count table in exact integer arithmetic), and
//! distribution checks over long runs.

use metronome_core::schedule::{Arrival, Schedule, ScheduleError, Shard};
use rand_core::RngCore;

const S: u64 = 1_000_000_000;

fn all(arrival: Arrival, rate: f64, seed: u64, end_ns: u64, shard: Shard) -> Vec<u64> {
    Schedule::new(arrival, rate, seed, end_ns, shard)
        .expect("valid schedule")
        .collect()
}

fn whole(arrival: Arrival, rate: f64, seed: u64, end_ns: u64) -> Vec<u64> {
    all(arrival, rate, seed, end_ns, Shard::WHOLE)
}

fn shard(index: u32, count: u32) -> Shard {
    Shard { index, count }
}

/// round(a * 1e9 / rate), halves up, from the exact binary value of `rate`
/// (an integer rate R gives (2 a 1e9 + R) / 2R). Independent of the library.
fn exact_offset(a: u128, rate: f64) -> u128 {
    let bits = rate.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i64;
    let mantissa = if exp == 0 {
        bits & ((1 << 52) - 1)
    } else {
        (bits & ((1 << 52) - 1)) | (1 << 52)
    };
    let e = if exp == 0 { -1074 } else { exp - 1075 };
    // rate = mantissa * 2^e; value = a 1e9 2^-e / mantissa.
    let (num, den) = if e >= 0 {
        (a * 1_000_000_000, u128::from(mantissa) << e)
    } else {
        ((a * 1_000_000_000) << (-e), u128::from(mantissa))
    };
    (2 * num + den) / (2 * den)
}

// ---------------------------------------------------------------- constant

#[test]
fn constant_integer_rates_match_the_exact_formula() {
    for rate in [1000u64, 3, 7, 30_000, 1] {
        let end = 5_000 * S / rate; // about 5000 slots
        let got = whole(Arrival::Constant, rate as f64, 0, end);
        let want: Vec<u64> = (0u64..)
            .map(|i| {
                ((2 * u128::from(i) * 1_000_000_000 + u128::from(rate)) / (2 * u128::from(rate)))
                    as u64
            })
            .take_while(|&o| o < end)
            .collect();
        assert_eq!(got, want, "rate {rate}");
        assert_eq!(got[0], 0);
    }
}

#[test]
fn constant_rate_three_rounds_each_slot_from_the_base() {
    let got = whole(Arrival::Constant, 3.0, 0, 3 * S);
    // 1e9/3 = 333333333.33, 2e9/3 = 666666666.67: rounded, not accumulated.
    assert_eq!(
        got,
        [
            0,
            333_333_333,
            666_666_667,
            1_000_000_000,
            1_333_333_333,
            1_666_666_667,
            2_000_000_000,
            2_333_333_333,
            2_666_666_667
        ]
    );
}

#[test]
fn constant_half_per_second() {
    assert_eq!(
        whole(Arrival::Constant, 0.5, 0, 10 * S),
        [0, 2 * S, 4 * S, 6 * S, 8 * S]
    );
}

#[test]
fn constant_rounds_halves_up() {
    // rate 2e9/s: slot i at i/2 ns; 0.5 -> 1, 1.5 -> 2, 2.5 -> 3.
    assert_eq!(whole(Arrival::Constant, 2e9, 0, 4), [0, 1, 1, 2, 2, 3, 3]);
}

#[test]
fn constant_is_exact_at_large_slot_numbers() {
    let at = |rate: f64, i: usize| {
        Schedule::new(Arrival::Constant, rate, 0, u64::MAX, Shard::WHOLE)
            .unwrap()
            .nth(i)
    };
    // round(10^18 / 3), which an f64 cannot even represent.
    assert_eq!(at(3.0, 1_000_000_000), Some(333_333_333_333_333_333));
    assert_eq!(at(7.0, 10_000_000_000), Some(1_428_571_428_571_428_571));
    assert_eq!(
        at(30_000.0, 1_000_000_000_000),
        Some(33_333_333_333_333_333)
    );
    assert_eq!(
        at(1000.0, 1_000_000_000_000),
        Some(1_000_000_000_000_000_000)
    );
    assert_eq!(at(0.5, 9_000_000_000), Some(18_000_000_000_000_000_000));
    // 0.1 is not 1/10 in binary: the offset follows the binary value exactly.
    assert_eq!(
        at(0.1, 10_000_000),
        Some(exact_offset(10_000_000, 0.1) as u64)
    );
    assert_eq!(at(0.1, 10_000_000), Some(99_999_999_999_999_994));
    assert_eq!(
        at(123.456, 987_654_321),
        Some(exact_offset(987_654_321, 123.456) as u64)
    );
    // Past u64 nanoseconds: the schedule ends instead of wrapping.
    assert_eq!(at(7.0, 1_000_000_000_000), None);
}

#[test]
fn constant_iteration_does_not_drift_over_millions_of_slots() {
    for rate in [3.0, 7.0, 0.1, 123.456, 30_000.0] {
        let mut s = Schedule::new(Arrival::Constant, rate, 0, u64::MAX, Shard::WHOLE).unwrap();
        let mut last = 0;
        for i in 0..2_000_000u64 {
            last = s.next().unwrap();
            if i % 250_000 == 0 {
                assert_eq!(
                    u128::from(last),
                    exact_offset(u128::from(i), rate),
                    "rate {rate} slot {i}"
                );
            }
        }
        assert_eq!(
            u128::from(last),
            exact_offset(1_999_999, rate),
            "rate {rate}"
        );
    }
}

#[test]
fn nth_equals_stepping_for_grids() {
    for arrival in [
        Arrival::Constant,
        Arrival::Burst { size: 3 },
        Arrival::Burst { size: 7 },
    ] {
        for sh in [Shard::WHOLE, shard(1, 3), shard(2, 5)] {
            let list = all(arrival, 123.456, 0, 20 * S, sh);
            assert!(list.len() > 100, "{arrival:?} {sh:?}");
            for skip in [0usize, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89] {
                let mut s = Schedule::new(arrival, 123.456, 0, 20 * S, sh).unwrap();
                assert_eq!(
                    s.nth(skip),
                    list.get(skip).copied(),
                    "{arrival:?} {sh:?} skip {skip}"
                );
                // And after a skip the iteration carries on in step.
                assert_eq!(
                    s.next(),
                    list.get(skip + 1).copied(),
                    "{arrival:?} {sh:?} after {skip}"
                );
                // Two skips in a row.
                assert_eq!(s.nth(skip), list.get(2 * skip + 2).copied());
            }
            let mut s = Schedule::new(arrival, 123.456, 0, 20 * S, sh).unwrap();
            assert_eq!(s.nth(list.len()), None);
            assert_eq!(s.next(), None);
        }
    }
}

// ------------------------------------------------------------------ the end

#[test]
fn the_offset_exactly_at_the_end_is_not_produced() {
    let ten = whole(Arrival::Constant, 10.0, 0, S);
    assert_eq!(ten, (0..10).map(|i| i * 100_000_000).collect::<Vec<_>>());
    assert_eq!(ten.last(), Some(&900_000_000));
    assert_eq!(whole(Arrival::Constant, 10.0, 0, S + 1).len(), 11);
    assert_eq!(whole(Arrival::Constant, 10.0, 0, 0), Vec::<u64>::new());
    assert_eq!(whole(Arrival::Constant, 10.0, 0, 1), [0]);
    assert_eq!(
        whole(Arrival::Burst { size: 2 }, 10.0, 0, 200_000_000),
        [0, 0]
    );
}

#[test]
fn every_kind_is_non_decreasing_below_the_end_and_fused() {
    let kinds = [
        Arrival::Constant,
        Arrival::Poisson,
        Arrival::Burst { size: 4 },
        Arrival::Gamma { burstiness: 0.3 },
        Arrival::Gamma { burstiness: 5.0 },
    ];
    for arrival in kinds {
        for sh in [Shard::WHOLE, shard(2, 3)] {
            let end = 2 * S + 12_345;
            let mut s = Schedule::new(arrival, 500.0, 11, end, sh).unwrap();
            let list: Vec<u64> = s.by_ref().collect();
            assert!(!list.is_empty(), "{arrival:?}");
            assert!(list.windows(2).all(|w| w[0] <= w[1]), "{arrival:?} {sh:?}");
            assert!(list.iter().all(|&o| o < end), "{arrival:?} {sh:?}");
            assert_eq!(s.next(), None);
            assert_eq!(s.next(), None);
        }
    }
}

// ------------------------------------------------------------------- burst

#[test]
fn burst_offsets_are_exact_and_the_first_burst_is_at_zero() {
    // 4 requests every 4/3 s: bursts at round(j * 4e9 / 3).
    let got = whole(Arrival::Burst { size: 4 }, 3.0, 0, 5 * S);
    let mut want = Vec::new();
    for at in [0u64, 1_333_333_333, 2_666_666_667, 4_000_000_000] {
        want.extend([at; 4]);
    }
    assert_eq!(got, want);
}

#[test]
fn burst_of_one_is_constant() {
    for rate in [3.0, 7.0, 0.5, 1000.0] {
        assert_eq!(
            whole(Arrival::Burst { size: 1 }, rate, 0, 20 * S),
            whole(Arrival::Constant, rate, 0, 20 * S)
        );
    }
}

#[test]
fn burst_large_slot_numbers_are_exact() {
    // Burst j = 10^9 of size 3 at 7/s: round(3e18 / 7) = 428571428571428571.43.
    let mut s = Schedule::new(Arrival::Burst { size: 3 }, 7.0, 0, u64::MAX, Shard::WHOLE).unwrap();
    assert_eq!(s.nth(3_000_000_000), Some(428_571_428_571_428_571));
    assert_eq!(s.next(), Some(428_571_428_571_428_571));
    assert_eq!(s.next(), Some(428_571_428_571_428_571));
    assert_eq!(s.next(), Some(428_571_428_571_428_571 + 428_571_429));
}

// ---------------------------------------------------------------- sharding

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v
}

#[test]
fn constant_shards_take_every_nth_slot_and_union_to_the_whole() {
    let w = whole(Arrival::Constant, 7.0, 0, 100 * S);
    assert_eq!(w.len(), 700);
    for n in [1u32, 2, 3, 8, 1000] {
        let mut union = Vec::new();
        for k in 0..n {
            let part = all(Arrival::Constant, 7.0, 0, 100 * S, shard(k, n));
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
fn burst_shards_split_each_burst_by_request_index() {
    for size in [1u32, 4, 5, 10] {
        let w = whole(Arrival::Burst { size }, 40.0, 0, 10 * S);
        for n in [1u32, 2, 3, 5, 7] {
            let mut union = Vec::new();
            for k in 0..n {
                let part = all(Arrival::Burst { size }, 40.0, 0, 10 * S, shard(k, n));
                // Request m of each burst goes to shard m % n.
                let copies = (0..size).filter(|m| m % n == k).count();
                let want: Vec<u64> = w
                    .iter()
                    .copied()
                    .step_by(size as usize)
                    .flat_map(|at| std::iter::repeat(at).take(copies))
                    .collect();
                assert_eq!(part, want, "size {size}, shard {k} of {n}");
                union.extend(part);
            }
            assert_eq!(sorted(union), w, "size {size}, {n} shards");
        }
    }
}

#[test]
fn gamma_shards_keep_whole_blocks_of_16_and_union_to_the_whole() {
    for k in [0.5, 2.0] {
        let arrival = Arrival::Gamma { burstiness: k };
        let w = whole(arrival, 300.0, 9, 10 * S);
        assert!(w.len() > 2_500, "{}", w.len());
        for n in [1u32, 2, 3, 4, 7] {
            let mut union = Vec::new();
            for i in 0..n {
                let part = all(arrival, 300.0, 9, 10 * S, shard(i, n));
                // Arrival j of the whole run is in block j / 16, which goes
                // to shard (j / 16) mod n.
                let want: Vec<u64> = w
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| (j / 16) % n as usize == i as usize)
                    .map(|(_, &o)| o)
                    .collect();
                assert_eq!(part, want, "k {k}, shard {i} of {n}");
                union.extend(part);
            }
            assert_eq!(sorted(union), w, "k {k}, {n} shards");
        }
    }
}

// ----------------------------------------------------------------- Poisson

const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The SplitMix64 output for state `z`, written independently of the library.
fn splitmix(z: u64) -> u64 {
    let mut z = z;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn child(seed: u64, purpose: u64) -> u64 {
    splitmix(seed.wrapping_add((purpose + 1).wrapping_mul(GOLDEN_GAMMA)))
}

/// Uniforms [0, 1) by res53 from rand_pcg's PCG32.
struct Uniforms {
    pcg: rand_pcg::Pcg32,
}

impl Uniforms {
    fn new(seed: u64, seq: u64) -> Self {
        Uniforms {
            pcg: rand_pcg::Pcg32::new(seed, seq),
        }
    }
    fn next(&mut self) -> f64 {
        let a = f64::from(self.pcg.next_u32() >> 5);
        let b = f64::from(self.pcg.next_u32() >> 6);
        (a * 67_108_864.0 + b) / 9_007_199_254_740_992.0
    }
}

impl Uniforms {
    /// The 53-bit integer behind `next`.
    fn next_u53(&mut self) -> u64 {
        let a = u64::from(self.pcg.next_u32() >> 5);
        let b = u64::from(self.pcg.next_u32() >> 6);
        (a << 26) | b
    }
}

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

// ------------------------------------------------------------------- gamma

/// The library's ziggurat tables, taken as they are: the library's unit tests
/// check that every layer has the same area; this oracle checks the rest.
#[allow(dead_code)]
mod zig {
    include!("../src/schedule/ziggurat_tables.rs");
}

impl Uniforms {
    /// Two 32-bit draws, the first in the high half.
    fn word(&mut self) -> u64 {
        (u64::from(self.pcg.next_u32()) << 32) | u64::from(self.pcg.next_u32())
    }

    /// A normal by the 256-layer ziggurat as the schedule docs state it:
    /// layer from bits 0..8, sign from bit 8, a 53-bit uniform from the top.
    fn zig_normal(&mut self) -> f64 {
        loop {
            let w = self.word();
            let i = (w & 0xff) as usize;
            let sign = if w & 0x100 != 0 { -1.0 } else { 1.0 };
            let x = (w >> 11) as f64 / 9_007_199_254_740_992.0 * zig::NORMAL_X[i];
            if x < zig::NORMAL_X[i + 1] {
                return sign * x;
            }
            if i == 0 {
                loop {
                    let a = -(1.0 - self.next()).ln() / zig::NORMAL_R;
                    let b = -(1.0 - self.next()).ln();
                    if 2.0 * b >= a * a {
                        return sign * (zig::NORMAL_R + a);
                    }
                }
            }
            let y = zig::NORMAL_F[i] + (zig::NORMAL_F[i + 1] - zig::NORMAL_F[i]) * self.next();
            if y < (-x * x / 2.0).exp() {
                return sign * x;
            }
        }
    }

    /// An exponential by the 256-layer ziggurat.
    fn zig_exp(&mut self) -> f64 {
        loop {
            let w = self.word();
            let i = (w & 0xff) as usize;
            let x = (w >> 11) as f64 / 9_007_199_254_740_992.0 * zig::EXP_X[i];
            if x < zig::EXP_X[i + 1] {
                return x;
            }
            if i == 0 {
                return zig::EXP_R - (1.0 - self.next()).ln();
            }
            let y = zig::EXP_F[i] + (zig::EXP_F[i + 1] - zig::EXP_F[i]) * self.next();
            if y < (-x).exp() {
                return x;
            }
        }
    }
}

/// Marsaglia-Tsang Gamma(k, 1) on the oracle's ziggurat normals, std math;
/// below 1, Gamma(k + 1) times exp(-E / k).
fn oracle_gamma(u: &mut Uniforms, k: f64) -> f64 {
    let shape = if k < 1.0 { k + 1.0 } else { k };
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    let g = loop {
        let x = u.zig_normal();
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let w = u.next();
        if w < 1.0 - 0.0331 * x.powi(4) || w.ln() < 0.5 * x * x + d * (1.0 - v + v.ln()) {
            break d * v;
        }
    };
    if k < 1.0 {
        g * (-u.zig_exp() / k).exp()
    } else {
        g
    }
}

/// The first `count` offsets of the gamma schedule, as its docs define
/// them: block b lasts S_b ~ Gamma(16k) (the b-th draw of `stream(seed, 0)`
/// = `Pcg32::new(child(seed, 0), 0)`), its 16 arrivals at T_b + S_b c_j / c_15
/// for the running sums c_j of 16 Gamma(k) draws from `stream(child(seed, 0),
/// b)`, in units of 1 / (k rate) s.
fn oracle_gamma_offsets(k: f64, rate: f64, seed: u64, count: usize) -> Vec<u64> {
    let mut sums = Uniforms::new(child(seed, 0), 0);
    let blocks = child(seed, 0);
    let ns_per_unit = 1e9 / (k * rate);
    let mut out = Vec::with_capacity(count);
    let mut start = 0.0f64;
    for b in 0u64.. {
        let len = oracle_gamma(&mut sums, 16.0 * k);
        let mut u = Uniforms::new(child(blocks, b), b);
        let mut c = [0.0f64; 16];
        let mut total = 0.0;
        for cj in &mut c {
            total += oracle_gamma(&mut u, k);
            *cj = total;
        }
        for cj in c {
            if out.len() == count {
                return out;
            }
            out.push(((start + len * (cj / total)) * ns_per_unit).round() as u64);
        }
        start += len;
    }
    out
}

#[test]
fn gamma_offsets_follow_the_block_construction() {
    // 0.05: the block length's shape 0.8 is boosted too.
    for (k, seed) in [(0.05, 2u64), (0.25, 3), (1.0, 4), (4.0, 5)] {
        let rate = 250.0;
        let got: Vec<u64> = Schedule::new(
            Arrival::Gamma { burstiness: k },
            rate,
            seed,
            u64::MAX,
            Shard::WHOLE,
        )
        .unwrap()
        .take(20_000)
        .collect();
        let want = oracle_gamma_offsets(k, rate, seed, 20_000);
        assert_eq!(got.len(), want.len());
        for (i, (&o, &w)) in got.iter().zip(&want).enumerate() {
            // std and libm may differ in the last bit of ln/exp: allow 1 ns.
            assert!(o.abs_diff(w) <= 1, "k {k} arrival {i}: {o} vs {w}");
        }
    }
}

/// Gaps (ns) of the first `count` arrivals of the whole gamma schedule.
fn gamma_gaps(k: f64, rate: f64, seed: u64, count: usize) -> Vec<f64> {
    let mut prev = 0u64;
    Schedule::new(
        Arrival::Gamma { burstiness: k },
        rate,
        seed,
        u64::MAX,
        Shard::WHOLE,
    )
    .unwrap()
    .take(count)
    .map(|o| {
        let g = (o - prev) as f64;
        prev = o;
        g
    })
    .collect()
}

fn gamma_gap_stats(k: f64, rate: f64, seed: u64, count: usize) -> (f64, f64) {
    let gaps = gamma_gaps(k, rate, seed, count);
    let n = gaps.len() as f64;
    let mean = gaps.iter().sum::<f64>() / n;
    let var = gaps.iter().map(|g| g * g).sum::<f64>() / n - mean * mean;
    (mean, var.sqrt() / mean)
}

#[test]
fn gamma_gaps_have_mean_one_over_rate_and_cv_one_over_sqrt_k() {
    let rate = 1000.0;
    for (k, seed) in [(0.25, 10u64), (1.0, 11), (4.0, 12)] {
        let (mean, cv) = gamma_gap_stats(k, rate, seed, 100_000);
        let want_mean = 1e9 / rate;
        let want_cv = 1.0 / f64::sqrt(k);
        assert!(
            (mean - want_mean).abs() / want_mean < 0.03,
            "k {k}: mean {mean}"
        );
        assert!(
            (cv - want_cv).abs() / want_cv < 0.03,
            "k {k}: cv {cv}, want {want_cv}"
        );
    }
}

/// ln Gamma(a) for a > 0 by Lanczos (g = 7, 9 terms; 1e-15 relative).
fn ln_gamma(a: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if a < 0.5 {
        // Reflection: Gamma(a) Gamma(1 - a) = pi / sin(pi a).
        return (std::f64::consts::PI / (std::f64::consts::PI * a).sin()).ln() - ln_gamma(1.0 - a);
    }
    let a = a - 1.0;
    let mut x = C[0];
    for (i, &c) in C.iter().enumerate().skip(1) {
        x += c / (a + i as f64);
    }
    let t = a + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (a + 0.5) * t.ln() - t + x.ln()
}

/// The regularized lower incomplete gamma P(a, x): the Gamma(a, 1) CDF.
/// Series below a + 1, Lentz's continued fraction for the complement above.
fn gamma_cdf(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    let front = (-x + a * x.ln() - ln_gamma(a)).exp();
    if x < a + 1.0 {
        let (mut term, mut sum, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..10_000 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * 1e-16 {
                break;
            }
        }
        sum * front
    } else {
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..10_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let delta = d * c;
            h *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        1.0 - front * h
    }
}

#[test]
fn gamma_cdf_matches_closed_forms() {
    for x in [0.01, 0.5, 1.0, 2.0, 7.5, 30.0] {
        // Shape 1 is the exponential; shape 2 is 1 - e^-x (1 + x).
        assert!(
            (gamma_cdf(1.0, x) - (1.0 - (-x).exp())).abs() < 1e-13,
            "{x}"
        );
        assert!(
            (gamma_cdf(2.0, x) - (1.0 - (-x).exp() * (1.0 + x))).abs() < 1e-13,
            "{x}"
        );
        // Shape 1/2 is erf(sqrt x); erf from its own series here.
        let z: f64 = x.sqrt();
        let mut erf = 0.0;
        let mut term = z;
        for n in 0..200 {
            erf += term / (2 * n + 1) as f64;
            term *= -z * z / (n + 1) as f64;
        }
        let erf = erf * 2.0 / std::f64::consts::PI.sqrt();
        if x < 8.0 {
            assert!(
                (gamma_cdf(0.5, x) - erf).abs() < 1e-10,
                "{x}: {} vs {erf}",
                gamma_cdf(0.5, x)
            );
        }
    }
    assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-13);
    assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-13);
}

/// The Kolmogorov-Smirnov distance between `gaps` (ns) and Gamma(k) gaps of
/// mean 1e9 / rate.
fn ks_distance(gaps: &mut [f64], k: f64, rate: f64) -> f64 {
    gaps.sort_by(f64::total_cmp);
    let n = gaps.len() as f64;
    let scale = 1e9 / rate / k;
    gaps.iter()
        .enumerate()
        .map(|(i, &g)| {
            let f = gamma_cdf(k, g / scale);
            (f - i as f64 / n).abs().max((f - (i + 1) as f64 / n).abs())
        })
        .fold(0.0, f64::max)
}

/// The blocks change nothing about the process: the gaps are Gamma(k)
/// (Kolmogorov-Smirnov against the CDF, all gaps and the gaps that cross a
/// block boundary on their own), uncorrelated with their neighbours, and a
/// gap's position in its block does not move its mean.
#[test]
fn gamma_gaps_are_gamma_distributed_and_independent_across_blocks() {
    // One request per 100 s: gaps are whole ns, so at 1000/s 1% of
    // Gamma(0.3) gaps (those under half a ns) would round to 0 and move the
    // CDF by 0.01 at 0; at 0.01/s the offsets (up to 1.6e16 ns, f64 steps
    // of 2 ns) place gaps within 8 ns of exact, which moves the CDF by at
    // most 7e-4 (the Gamma(0.3) mass below 8 ns in units of 3.3e11 ns).
    let rate = 0.01;
    for (k, seed) in [(0.3, 21u64), (1.0, 22), (4.0, 23)] {
        let gaps = gamma_gaps(k, rate, seed, 160_000);
        let d = ks_distance(&mut gaps.clone(), k, rate);
        // The 0.1% critical value is 1.95 / sqrt(n) = 0.0049.
        assert!(d < 1.95 / (gaps.len() as f64).sqrt(), "k {k}: KS {d}");
        // Gap j ends arrival j: j % 16 == 0 crosses from one block into the next.
        let mut crossing: Vec<f64> = gaps.iter().copied().step_by(16).skip(1).collect();
        let d = ks_distance(&mut crossing, k, rate);
        assert!(
            d < 1.95 / (crossing.len() as f64).sqrt(),
            "k {k}: crossing KS {d}"
        );
        // Lag-1 correlation: standard error 1 / sqrt(n) = 0.0025.
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>();
        let cov: f64 = gaps.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
        assert!(
            (cov / var).abs() < 0.01,
            "k {k}: lag-1 correlation {}",
            cov / var
        );
        // Mean gap by position in the block: 10,000 gaps each.
        for pos in 0..16 {
            let at: Vec<f64> = gaps.iter().copied().skip(pos).step_by(16).collect();
            let m = at.iter().sum::<f64>() / at.len() as f64;
            // Standard error: the gap's sd (1e9 / rate / sqrt(k)) / 100,
            // 1% / sqrt(k) of the mean.
            let tolerance = 0.045 / k.sqrt();
            assert!(
                (m / (1e9 / rate) - 1.0).abs() < tolerance,
                "k {k}: position {pos}, mean {m}"
            );
        }
    }
}

#[test]
fn gamma_first_arrival_is_one_gap_after_zero() {
    let first = Schedule::new(
        Arrival::Gamma { burstiness: 2.0 },
        10.0,
        1,
        u64::MAX,
        Shard::WHOLE,
    )
    .unwrap()
    .next()
    .unwrap();
    assert!(first > 0);
}

// ------------------------------------------------------------------ errors

#[test]
fn bad_inputs_give_typed_errors() {
    let new = |arrival, rate, sh| Schedule::new(arrival, rate, 0, S, sh).err();
    for rate in [0.0, -0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        for arrival in [
            Arrival::Constant,
            Arrival::Poisson,
            Arrival::Burst { size: 2 },
            Arrival::Gamma { burstiness: 1.0 },
        ] {
            assert_eq!(
                new(arrival, rate, Shard::WHOLE),
                Some(ScheduleError::InvalidRate),
                "{arrival:?} {rate}"
            );
        }
    }
    assert_eq!(
        new(Arrival::Burst { size: 0 }, 1.0, Shard::WHOLE),
        Some(ScheduleError::EmptyBurst)
    );
    for k in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert_eq!(
            new(Arrival::Gamma { burstiness: k }, 1.0, Shard::WHOLE),
            Some(ScheduleError::InvalidBurstiness),
            "burstiness {k}"
        );
    }
    for sh in [
        shard(0, 0),
        shard(1, 1),
        shard(5, 3),
        shard(u32::MAX, u32::MAX),
    ] {
        assert_eq!(
            new(Arrival::Constant, 1.0, sh),
            Some(ScheduleError::InvalidShard),
            "{sh:?}"
        );
    }
    // The smallest valid inputs are accepted.
    assert!(Schedule::new(
        Arrival::Constant,
        f64::MIN_POSITIVE,
        0,
        S,
        shard(u32::MAX - 1, u32::MAX)
    )
    .is_ok());
    assert!(Schedule::new(
        Arrival::Gamma {
            burstiness: f64::MIN_POSITIVE
        },
        f64::MAX,
        0,
        0,
        Shard::WHOLE
    )
    .is_ok());
}

#[test]
fn errors_display_what_to_change() {
    assert_eq!(
        ScheduleError::InvalidRate.to_string(),
        "the rate must be a finite number of requests per second above 0"
    );
    assert_eq!(
        ScheduleError::InvalidShard.to_string(),
        "the shard index must be below the shard count, and the count at least 1"
    );
    let e: &dyn std::error::Error = &ScheduleError::InvalidBurstiness;
    assert_eq!(
        e.to_string(),
        "the gamma burstiness must be a finite number above 0 (1 is Poisson)"
    );
}

#[test]
fn extreme_rates_end_or_stay_exact() {
    // One request per ~3e299 s: only slot 0 fits.
    assert_eq!(whole(Arrival::Constant, 1e-300, 0, u64::MAX), [0]);
    assert_eq!(
        all(Arrival::Constant, 1e-300, 0, u64::MAX, shard(1, 2)),
        Vec::<u64>::new()
    );
    // A billion per second, exactly one per ns.
    assert_eq!(whole(Arrival::Constant, 1e9, 0, 5), [0, 1, 2, 3, 4]);
    // Ten billion per second: ten slots per ns, rounded half up.
    assert_eq!(whole(Arrival::Constant, 1e10, 0, 1), [0, 0, 0, 0, 0]);
}
