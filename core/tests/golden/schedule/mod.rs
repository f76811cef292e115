//! Golden and statistical tests for `metronome_core::schedule`: exact offsets
//! where the answer is exact (constant, burst, sharding), offsets recomputed
//! from an independent PCG32 (`rand_pcg`) and std math for Poisson and gamma
//! (the Poisson(4) window-count table in exact integer arithmetic), and
//! distribution checks over long runs.

use metronome_core::schedule::{Arrival, Schedule, ScheduleError, Shard};
use rand_core::RngCore;

// Constant and burst offsets, exact; the end never produced.
mod grids;
// Shards take their share and union to the whole run.
mod sharding;
// Poisson against an independent oracle and its distribution.
mod poisson;
// Gamma against an independent oracle and its distribution.
mod gamma;
// Typed errors, their messages, and extreme rates.
mod errors;

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

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v
}

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
