//! Property tests for `metronome_core::schedule`: the exact grid against a
//! big-rational oracle for arbitrary rates, O(1) skips against stepping, and
//! shard unions for arbitrary shard counts, for every arrival process.

use metronome_core::schedule::{Arrival, Schedule, Shard};
use proptest::prelude::*;

/// round(a * 1e9 / rate), halves up, from the exact binary value of `rate`,
/// or None when it does not fit in u64. Written for the test only.
fn exact_offset(a: u128, rate: f64) -> Option<u64> {
    let bits = rate.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i64;
    let frac = bits & ((1 << 52) - 1);
    let mantissa = u128::from(if exp == 0 { frac } else { frac | (1 << 52) });
    let e = if exp == 0 { -1074 } else { exp - 1075 };
    let c = a * 1_000_000_000;
    let value = if e >= 0 {
        // Rates in these tests stay far below 2^70, so the shift fits.
        let den = mantissa << e;
        (2 * c + den) / (2 * den)
    } else {
        let shift = (-e) as u32;
        if c != 0 && c.leading_zeros() <= shift + 1 {
            return None;
        }
        ((c << shift) * 2 + mantissa) / (2 * mantissa)
    };
    u64::try_from(value).ok()
}

fn rate() -> impl Strategy<Value = f64> {
    prop_oneof![
        (1u32..=1_000_000).prop_map(f64::from),
        1e-6f64..1e7,
        Just(0.1),
        Just(1.0 / 3.0),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn constant_nth_is_the_exact_rounding(rate in rate(), i in 0u64..1_000_000_000_000) {
        let got = Schedule::new(Arrival::Constant, rate, 0, u64::MAX, Shard::WHOLE)
            .unwrap()
            .nth(i as usize);
        let want = exact_offset(u128::from(i), rate).filter(|&o| o < u64::MAX);
        prop_assert_eq!(got, want);
    }

    #[test]
    fn constant_stepping_matches_the_exact_rounding(rate in rate(), start in 0u64..1_000_000_000, n in 1u32..10) {
        let mut s = Schedule::new(Arrival::Constant, rate, 0, u64::MAX, Shard { index: 0, count: n }).unwrap();
        // Jump to slot start * n, then step 50 shard slots.
        let first = s.nth(start as usize);
        prop_assert_eq!(first, exact_offset(u128::from(start) * u128::from(n), rate));
        for j in 1..50u64 {
            let want = exact_offset(u128::from(start + j) * u128::from(n), rate);
            prop_assert_eq!(s.next(), want, "slot {}", (start + j) * u64::from(n));
        }
    }

    #[test]
    fn grid_shards_partition_the_whole(
        rate in 1.0f64..5_000.0,
        size in 1u32..9,
        n in 1u32..12,
        burst in any::<bool>(),
        end in 0u64..2_000_000_000,
    ) {
        let arrival = if burst { Arrival::Burst { size } } else { Arrival::Constant };
        let whole: Vec<u64> = Schedule::new(arrival, rate, 0, end, Shard::WHOLE).unwrap().collect();
        let mut union: Vec<u64> = (0..n)
            .flat_map(|k| Schedule::new(arrival, rate, 0, end, Shard { index: k, count: n }).unwrap())
            .collect();
        union.sort_unstable();
        prop_assert_eq!(union, whole);
    }

    #[test]
    fn random_kinds_stay_ordered_below_the_end_and_shard_exactly(
        rate in 1.0f64..10_000.0,
        seed in any::<u64>(),
        k in 0.05f64..20.0,
        gamma in any::<bool>(),
        end in 0u64..500_000_000,
        n in 1u32..12,
    ) {
        let arrival = if gamma { Arrival::Gamma { burstiness: k } } else { Arrival::Poisson };
        let whole: Vec<u64> = Schedule::new(arrival, rate, seed, end, Shard::WHOLE).unwrap().collect();
        let mut union = Vec::new();
        for index in 0..n {
            let list: Vec<u64> = Schedule::new(arrival, rate, seed, end, Shard { index, count: n }).unwrap().collect();
            prop_assert!(list.windows(2).all(|w| w[0] <= w[1]));
            prop_assert!(list.iter().all(|&o| o < end));
            // Poisson: arrivals index, index + n, ... of the whole sequence;
            // gamma: its blocks of 16 arrivals index, index + n, ...
            let block = if gamma { 16 } else { 1 };
            let want: Vec<u64> = whole
                .iter()
                .enumerate()
                .filter(|&(j, _)| (j / block) % n as usize == index as usize)
                .map(|(_, &o)| o)
                .collect();
            prop_assert_eq!(&list, &want);
            union.extend(list);
        }
        union.sort_unstable();
        prop_assert_eq!(union, whole);
    }
}

fn stages_strategy() -> impl Strategy<Value = (f64, Vec<(u64, f64)>)> {
    (
        0.0f64..3000.0,
        proptest::collection::vec((0u64..1_500_000_000, 0.0f64..3000.0), 1..5),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any stages, any process, any shard count: offsets ordered, below the
    /// end, each shard the unit-rate sequence's own part, and the union the
    /// whole; a constant process's count is the integers below the
    /// integral (up to one at a boundary rounded to the end).
    #[test]
    fn staged_schedules_shard_exactly(
        (start, raw) in stages_strategy(),
        exponential in any::<bool>(),
        kind in 0u8..4,
        k in 0.2f64..8.0,
        seed in any::<u64>(),
        n in 1u32..9,
    ) {
        use metronome_core::schedule::{Ramp, Stage, Stages};
        let stages: Vec<Stage> = raw
            .iter()
            .map(|&(d, r)| Stage { duration_ns: d, target_rps: if exponential { r + 1.0 } else { r } })
            .collect();
        let s = Stages {
            start_rps: if exponential { start + 1.0 } else { start },
            stages: &stages,
            ramp: if exponential { Ramp::Exponential } else { Ramp::Linear },
        };
        prop_assume!(s.validate().is_ok());
        let arrival = match kind {
            0 => Arrival::Constant,
            1 => Arrival::Burst { size: 3 },
            2 => Arrival::Poisson,
            _ => Arrival::Gamma { burstiness: k },
        };
        let end = s.total_ns();
        let whole: Vec<u64> = Schedule::staged(arrival, s, seed, end, Shard::WHOLE).unwrap().collect();
        prop_assert!(whole.windows(2).all(|w| w[0] <= w[1]));
        prop_assert!(whole.iter().all(|&o| o < end));
        if arrival == Arrival::Constant {
            let total = s.expected_before(end);
            let below = total.ceil() as usize;
            prop_assert!(whole.len() == below || whole.len() + 1 == below, "{} vs {total}", whole.len());
        }
        let mut union = Vec::new();
        for index in 0..n {
            let list: Vec<u64> = Schedule::staged(arrival, s, seed, end, Shard { index, count: n }).unwrap().collect();
            prop_assert!(list.windows(2).all(|w| w[0] <= w[1]));
            union.extend(list);
        }
        union.sort_unstable();
        prop_assert_eq!(union, whole);
    }
}
