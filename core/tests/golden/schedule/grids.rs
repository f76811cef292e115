//! Constant and burst schedules are exact: offsets equal the exact formula
//! at any slot number without drift, and no kind produces the offset at the
//! end or anything after it.

use super::*;

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
