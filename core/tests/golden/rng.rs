//! Golden vectors for `metronome_core::rng`, cross-checked against
//! `rand_pcg::Pcg32` (the oracle) and independent re-derivations of every
//! formula in DESIGN.md section 2 "rng".

use metronome_core::rng::{
    child_seed, mix64, stream, Pcg32, PURPOSE_ARRIVALS, PURPOSE_JITTER, PURPOSE_REQUESTS,
};
use rand_core::RngCore;

type Oracle = rand_pcg::Pcg32;

/// (seed, seq) pairs used throughout: the reference demo, zeros, and all ones.
const SEEDS: [(u64, u64); 3] = [(42, 54), (0, 0), (u64::MAX, 0x1234_5678_9abc_def0)];

#[test]
fn reference_vector_new_42_54() {
    let expected = [
        0xa15c02b7u32,
        0x7b47f409,
        0xba1d3330,
        0x83d2f293,
        0xbfa4784b,
        0xcbed606e,
    ];
    let mut ours = Pcg32::new(42, 54);
    let mut oracle = Oracle::new(42, 54);
    for (i, &want) in expected.iter().enumerate() {
        assert_eq!(ours.next_u32(), want, "output {i}");
        // rand_pcg's new(state, stream) has pcg32_srandom_r's (seed, seq) semantics.
        assert_eq!(oracle.next_u32(), want, "oracle output {i}");
    }
}

#[test]
fn seeded_zero_state_and_first_output() {
    let mut rng = Pcg32::seeded(0);
    assert_eq!(rng.state(), 0x9AE4_F749_9BA7_2696);
    assert_eq!(rng.next_u32(), 0x47C2_8B93);
    assert_eq!(Pcg32::seeded(0), Pcg32::new(0, 54));
}

#[test]
fn seeding_matches_pcg32_srandom_r_by_hand() {
    // pcg32_srandom_r: state = 0, inc = 2 seq + 1; step; state += seed; step.
    const MUL: u64 = 6364136223846793005;
    for (seed, seq) in SEEDS {
        let inc = seq.wrapping_mul(2).wrapping_add(1);
        let mut state: u64 = 0;
        state = state.wrapping_mul(MUL).wrapping_add(inc);
        state = state.wrapping_add(seed);
        state = state.wrapping_mul(MUL).wrapping_add(inc);
        assert_eq!(
            Pcg32::new(seed, seq).state(),
            state,
            "seed {seed} seq {seq}"
        );
    }
}

#[test]
fn next_u32_matches_rand_pcg_for_4096_draws() {
    for (seed, seq) in SEEDS {
        let mut ours = Pcg32::new(seed, seq);
        let mut oracle = Oracle::new(seed, seq);
        for i in 0..4096 {
            assert_eq!(
                ours.next_u32(),
                oracle.next_u32(),
                "seed {seed} seq {seq} draw {i}"
            );
        }
    }
}

#[test]
fn next_f64_is_res53_of_two_oracle_draws() {
    for (seed, seq) in SEEDS {
        let mut ours = Pcg32::new(seed, seq);
        let mut oracle = Oracle::new(seed, seq);
        for i in 0..64 {
            let a = f64::from(oracle.next_u32() >> 5);
            let b = f64::from(oracle.next_u32() >> 6);
            let want = (a * 67_108_864.0 + b) / 9_007_199_254_740_992.0;
            let got = ours.next_f64();
            assert_eq!(got, want, "seed {seed} draw {i}");
            assert!((0.0..1.0).contains(&got));
        }
    }
}

/// Box-Muller from two oracle uniforms, with std math.
fn oracle_normals(oracle: &mut Oracle) -> (f64, f64) {
    let mut uniform = || {
        let a = f64::from(oracle.next_u32() >> 5);
        let b = f64::from(oracle.next_u32() >> 6);
        (a * 67_108_864.0 + b) / 9_007_199_254_740_992.0
    };
    let u1 = uniform();
    let u2 = uniform();
    let r = (-2.0 * (1.0 - u1).ln()).sqrt();
    let theta = 2.0 * std::f64::consts::PI * u2;
    (r * theta.cos(), r * theta.sin())
}

#[test]
fn normal_is_box_muller_with_spare_from_oracle_uniforms() {
    for (seed, seq) in SEEDS {
        let mut ours = Pcg32::new(seed, seq);
        let mut oracle = Oracle::new(seed, seq);
        for i in 0..32 {
            let (z0, z1) = oracle_normals(&mut oracle);
            // libm and the platform's libm may differ in the last bit.
            let (g0, g1) = (ours.normal(), ours.normal());
            assert!(
                (g0 - z0).abs() <= 1e-13,
                "seed {seed} pair {i}: {g0} vs {z0}"
            );
            assert!(
                (g1 - z1).abs() <= 1e-13,
                "seed {seed} pair {i}: {g1} vs {z1}"
            );
        }
        // 64 normals = 32 pairs = 128 u32 draws: the streams are still in step.
        assert_eq!(ours.next_u32(), oracle.next_u32());
    }
}

#[test]
fn normal_moments_are_standard() {
    let mut rng = Pcg32::seeded(2024);
    let n = 200_000;
    let (mut sum, mut sum2) = (0.0, 0.0);
    for _ in 0..n {
        let z = rng.normal();
        sum += z;
        sum2 += z * z;
    }
    let mean = sum / f64::from(n);
    let var = sum2 / f64::from(n) - mean * mean;
    assert!(mean.abs() < 0.01, "mean {mean}");
    assert!((var - 1.0).abs() < 0.015, "variance {var}");
}

/// pcg32_boundedrand_r over the oracle, written from the C source (u32 arithmetic).
fn oracle_below(oracle: &mut Oracle, n: u64) -> (u64, u32) {
    let mut rejected = 0;
    if n == 1 << 32 {
        return (u64::from(oracle.next_u32()), 0);
    }
    let bound = n as u32;
    let threshold = bound.wrapping_neg() % bound;
    loop {
        let r = oracle.next_u32();
        if r >= threshold {
            return (u64::from(r % bound), rejected);
        }
        rejected += 1;
    }
}

#[test]
fn below_matches_boundedrand_for_several_bounds() {
    for (seed, seq) in SEEDS {
        for n in [10u64, 3 << 30, 1 << 32, 1, 7, (1 << 32) - 1] {
            let mut ours = Pcg32::new(seed, seq);
            let mut oracle = Oracle::new(seed, seq);
            for i in 0..256 {
                let (want, _) = oracle_below(&mut oracle, n);
                let got = ours.below(n);
                assert_eq!(got, want, "seed {seed} n {n} draw {i}");
                assert!(got < n);
            }
            assert_eq!(
                ours.next_u32(),
                oracle.next_u32(),
                "same number of draws, n {n}"
            );
        }
    }
}

#[test]
fn below_one_consumes_one_draw_and_two_pow_32_is_the_raw_draw() {
    let mut rng = Pcg32::new(42, 54);
    assert_eq!(rng.below(1), 0);
    assert_eq!(rng.below(1 << 32), 0x7b47f409);
    assert_eq!(rng.next_u32(), 0xba1d3330);
}

#[test]
fn below_rejects_the_low_zone_for_three_quarters_of_two_pow_32() {
    let n = 3u64 << 30;
    // threshold = (2^32 - n) mod n = 2^30: draws below 2^30 are rejected.
    assert_eq!(((1u64 << 32) - n) % n, 1 << 30);
    // Find a seed whose first draw falls in the rejected zone.
    let seed = (0..1000u64)
        .find(|&s| Oracle::new(s, 54).next_u32() < 1 << 30)
        .expect("a quarter of seeds reject their first draw");
    let mut oracle = Oracle::new(seed, 54);
    let first = oracle.next_u32();
    assert!(first < 1 << 30);
    let mut ours = Pcg32::seeded(seed);
    let got = ours.below(n);
    // The first draw was rejected: the result comes from a later draw.
    let mut replay = Oracle::new(seed, 54);
    let (want, rejected) = oracle_below(&mut replay, n);
    assert!(rejected >= 1);
    assert_eq!(got, want);
    let mut accepted = first;
    for _ in 0..rejected {
        accepted = oracle.next_u32();
    }
    assert!(accepted >= 1 << 30);
    assert_eq!(got, u64::from(accepted) % n);
    assert_eq!(ours.next_u32(), replay.next_u32());
}

#[test]
fn below_is_uniform_enough_for_ten() {
    let mut rng = Pcg32::seeded(77);
    let mut counts = [0u32; 10];
    for _ in 0..100_000 {
        counts[rng.below(10) as usize] += 1;
    }
    for (digit, &c) in counts.iter().enumerate() {
        assert!((9_500..=10_500).contains(&c), "digit {digit}: {c}");
    }
}

#[test]
#[should_panic(expected = "Pcg32::below: n must be in 1..=2^32")]
fn below_zero_panics_with_a_clear_message() {
    Pcg32::seeded(1).below(0);
}

#[test]
#[should_panic(expected = "Pcg32::below: n must be in 1..=2^32")]
fn below_above_two_pow_32_panics_with_a_clear_message() {
    Pcg32::seeded(1).below(u64::MAX);
}

#[test]
fn shuffle_is_fisher_yates_from_the_end() {
    let mut items: [u32; 10] = core::array::from_fn(|i| i as u32);
    let mut rng = Pcg32::new(42, 54);
    rng.shuffle(&mut items);

    // Cross-derived from the oracle's bounded draws.
    let mut want: [u32; 10] = core::array::from_fn(|i| i as u32);
    let mut oracle = Oracle::new(42, 54);
    for i in (1..10usize).rev() {
        let (j, _) = oracle_below(&mut oracle, i as u64 + 1);
        want.swap(i, j as usize);
    }
    assert_eq!(items, want);
    assert_eq!(items, [8, 2, 6, 4, 5, 1, 7, 0, 9, 3]);
    assert_eq!(rng.next_u32(), oracle.next_u32());
}

#[test]
fn shuffle_is_a_permutation() {
    let mut rng = Pcg32::seeded(5);
    let mut items: Vec<u32> = (0..1000).collect();
    rng.shuffle(&mut items);
    assert_ne!(items, (0..1000).collect::<Vec<_>>());
    items.sort_unstable();
    assert_eq!(items, (0..1000).collect::<Vec<_>>());
}

/// SplitMix64 written as the reference generator: a state stepped by the
/// golden gamma, each output mixed.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z ^= z >> 30;
        z = z.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z ^= z >> 27;
        z = z.wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        z
    }
}

#[test]
fn splitmix64_seed_zero_vector() {
    let mut sm = SplitMix64(0);
    let got = [sm.next(), sm.next(), sm.next()];
    assert_eq!(
        got,
        [
            0xE220_A839_7B1D_CDAF,
            0x6E78_9E6A_A1B9_65F4,
            0x06C4_5D18_8009_454F
        ]
    );
    assert_eq!(child_seed(0, 0), got[0]);
    assert_eq!(child_seed(0, 1), got[1]);
    assert_eq!(child_seed(0, 2), got[2]);
}

#[test]
fn child_seed_is_the_purpose_plus_first_splitmix_output() {
    for seed in [0u64, 1, 42, u64::MAX, 0x0123_4567_89AB_CDEF] {
        let mut sm = SplitMix64(seed);
        for purpose in 0..20u64 {
            let out = sm.next();
            assert_eq!(
                child_seed(seed, purpose),
                out,
                "seed {seed} purpose {purpose}"
            );
        }
    }
    // Wrapping for huge purposes: (u64::MAX + 1) wraps to 0, so the state is the seed.
    assert_eq!(child_seed(9, u64::MAX), mix64(9));
}

#[test]
fn mix64_is_a_bijection_on_a_sample() {
    let mut outs: Vec<u64> = (0..10_000u64).map(mix64).collect();
    outs.sort_unstable();
    outs.dedup();
    assert_eq!(outs.len(), 10_000);
}

#[test]
fn stream_is_pcg32_seeded_from_child_seed_with_purpose_as_sequence() {
    for seed in [0u64, 7, u64::MAX] {
        for purpose in [PURPOSE_ARRIVALS, PURPOSE_REQUESTS, PURPOSE_JITTER, 1000] {
            let mut sm = SplitMix64(seed);
            let mut child = 0;
            for _ in 0..=purpose {
                child = sm.next();
            }
            let mut ours = stream(seed, purpose);
            let mut oracle = Oracle::new(child, purpose);
            for i in 0..64 {
                assert_eq!(
                    ours.next_u32(),
                    oracle.next_u32(),
                    "seed {seed} purpose {purpose} draw {i}"
                );
            }
        }
    }
}

#[test]
fn purposes_are_distinct_and_documented_values() {
    assert_eq!(
        (PURPOSE_ARRIVALS, PURPOSE_REQUESTS, PURPOSE_JITTER),
        (0, 1, 2)
    );
    let a = stream(1, PURPOSE_ARRIVALS).next_u32();
    let r = stream(1, PURPOSE_REQUESTS).next_u32();
    let j = stream(1, PURPOSE_JITTER).next_u32();
    assert!(a != r && r != j && a != j);
}

#[test]
fn stream_golden_values() {
    // child_seed(0, 0) = 0xE220A8397B1DCDAF; the stream is Pcg32::new(that, 0).
    let mut s = stream(0, PURPOSE_ARRIVALS);
    let mut o = Oracle::new(0xE220_A839_7B1D_CDAF, 0);
    let first = [s.next_u32(), s.next_u32()];
    assert_eq!(first, [o.next_u32(), o.next_u32()]);
    assert_eq!(first, [0xc0c7_e2c5, 0x750c_892a]);

    assert_eq!(child_seed(42, PURPOSE_REQUESTS), 0x28ef_e333_b266_f103);
    let mut r = stream(42, PURPOSE_REQUESTS);
    assert_eq!(
        r.next_u32(),
        Oracle::new(0x28ef_e333_b266_f103, 1).next_u32()
    );
    assert_eq!(stream(42, PURPOSE_REQUESTS).next_u32(), 0xa5a5_f539);
}
