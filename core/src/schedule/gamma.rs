//! The gamma schedule ([`Arrival::Gamma`](super::Arrival::Gamma)), in blocks
//! of 16 arrivals, and the gamma variates it draws: Marsaglia and Tsang's
//! method ("A Simple Method for Generating Gamma Variables", 2000) on
//! standard normals from a 256-layer ziggurat, and for shapes below 1 the
//! boost `Gamma(a) = Gamma(a + 1) * exp(-E / a)` with `E` a standard
//! exponential from a second ziggurat (the same as `U^(1/a)` for a uniform
//! `U`, without the `pow`).
//!
//! Both ziggurats take one 64-bit word per attempt, two [`Pcg32::next_u32`]
//! draws `(hi << 32) | lo`: bits 0..8 pick the layer `i`, bit 8 is the
//! normal's sign, and bits 11..64 are a 53-bit uniform `m`, so the candidate
//! is `x = m * 2^-53 * X[i]`. It is accepted at once when `x < X[i + 1]`
//! (about 99% of the time); layer 0 past `R` draws from the tail (normal:
//! Marsaglia's `-ln(1 - u1) / R`, `-ln(1 - u2)` pairs until `2 b >= a^2`,
//! giving `R + a`; exponential: `R - ln(1 - u)`), and the other layers test a
//! [`Pcg32::next_f64`] height `F[i] + (F[i + 1] - F[i]) * u` against the
//! density `f(x)`, retrying with a fresh word when it lies above.

use super::offset::{offset_ns_of, UNIT};
use super::ziggurat_tables::{EXP_F, EXP_R, EXP_X, NORMAL_F, NORMAL_R, NORMAL_X};
use crate::rng::{child_seed, stream, Pcg32, PURPOSE_ARRIVALS};

/// One ziggurat word: two 32-bit draws, the first in the high half.
#[inline]
fn word(rng: &mut Pcg32) -> u64 {
    let hi = u64::from(rng.next_u32());
    (hi << 32) | u64::from(rng.next_u32())
}

/// A standard normal deviate by the ziggurat (see the module docs).
#[inline]
fn normal(rng: &mut Pcg32) -> f64 {
    loop {
        let w = word(rng);
        let i = (w & 0xff) as usize;
        let negative = w & 0x100 != 0;
        let x = (w >> 11) as f64 * UNIT * NORMAL_X[i];
        let accepted = if x < NORMAL_X[i + 1] {
            Some(x)
        } else if i == 0 {
            Some(normal_tail(rng))
        } else {
            let height = NORMAL_F[i] + (NORMAL_F[i + 1] - NORMAL_F[i]) * rng.next_f64();
            (height < libm::exp(-0.5 * x * x)).then_some(x)
        };
        if let Some(x) = accepted {
            return if negative { -x } else { x };
        }
    }
}

/// A normal deviate beyond [`NORMAL_R`], given that it is there.
#[cold]
fn normal_tail(rng: &mut Pcg32) -> f64 {
    loop {
        // 1 - u is in (0, 1]: both logarithms are finite and <= 0.
        let a = -libm::log(1.0 - rng.next_f64()) / NORMAL_R;
        let b = -libm::log(1.0 - rng.next_f64());
        if b + b >= a * a {
            return NORMAL_R + a;
        }
    }
}

/// A standard exponential deviate by the ziggurat (see the module docs).
#[inline]
fn exponential(rng: &mut Pcg32) -> f64 {
    loop {
        let w = word(rng);
        let i = (w & 0xff) as usize;
        let x = (w >> 11) as f64 * UNIT * EXP_X[i];
        if x < EXP_X[i + 1] {
            return x;
        }
        if i == 0 {
            // Memoryless: the tail past R is R plus a standard exponential.
            return EXP_R - libm::log(1.0 - rng.next_f64());
        }
        if EXP_F[i] + (EXP_F[i + 1] - EXP_F[i]) * rng.next_f64() < libm::exp(-x) {
            return x;
        }
    }
}

/// `Gamma(shape, 1)`, shape finite and above 0.
#[derive(Clone, Copy, Debug)]
struct GammaDist {
    shape: f64,
    /// Marsaglia-Tsang's constants for the shape drawn (`shape`, or
    /// `shape + 1` when boosted).
    d: f64,
    c: f64,
    boost: bool,
}

impl GammaDist {
    fn new(shape: f64) -> GammaDist {
        let boost = shape < 1.0;
        let drawn = if boost { shape + 1.0 } else { shape };
        let d = drawn - 1.0 / 3.0;
        GammaDist {
            shape,
            d,
            c: 1.0 / libm::sqrt(9.0 * d),
            boost,
        }
    }

    /// One variate: finite and at least 0 (0 only when a boost underflows).
    #[inline]
    fn sample(&self, rng: &mut Pcg32) -> f64 {
        let g = loop {
            let x = normal(rng);
            let v = 1.0 + self.c * x;
            if v <= 0.0 {
                continue;
            }
            let v = v * v * v;
            let u = rng.next_f64();
            let x2 = x * x;
            if u < 1.0 - 0.0331 * x2 * x2
                || libm::log(u) < 0.5 * x2 + self.d * (1.0 - v + libm::log(v))
            {
                break self.d * v;
            }
        };
        if self.boost {
            // E / shape is in [0, +inf] (never NaN: E is finite, shape > 0),
            // so the factor is in [0, 1].
            g * libm::exp(-exponential(rng) / self.shape)
        } else {
            g
        }
    }
}

/// Arrivals per gamma block: a shard keeps whole blocks, so the others'
/// blocks cost it one draw each (their length), and a block of its own costs
/// 16 gap draws for 16 offsets.
pub(super) const BLOCK: usize = 16;

/// The gamma schedule, cut into blocks of [`BLOCK`] consecutive arrivals.
///
/// Block `b` lasts `S_b ~ Gamma(16 k)` units (the `b`-th draw of the sums
/// stream) and starts where the previous one ends, `T_b = S_0 + ... +
/// S_(b-1)`; its 16 arrivals are at `T_b + S_b * c_j / c_15` for the running
/// sums `c_j = g_0 + ... + g_j` of 16 `Gamma(k)` draws from the block's own
/// stream. For independent `g_j ~ Gamma(k)`, the proportions `g_j / c_15`
/// (Dirichlet) are independent of their total `c_15 ~ Gamma(16 k)`, so
/// replacing the total by an independent `S_b` of the same law leaves the
/// gaps `S_b * g_j / c_15` independent `Gamma(k)` draws: the same renewal
/// process as a running sum of gamma gaps, with block lengths that a shard
/// can draw without placing the block's arrivals. A unit is `1 / (k * rate)`
/// seconds, so gaps have mean `1 / rate`.
#[derive(Clone, Debug)]
pub(super) struct Gamma {
    /// One block length per block, in order: `stream(seed, PURPOSE_ARRIVALS)`.
    sums: Pcg32,
    /// Block `b`'s gaps come from `stream(blocks, b)`.
    blocks: u64,
    gap: GammaDist,
    sum: GammaDist,
    /// Output units (ns, or arrivals of a staged schedule) per gamma unit:
    /// `1e9 / (k * rate)`, or `1 / k`.
    ns_per_unit: f64,
    /// The current block (one of this shard's: `block % count == index`).
    block: u64,
    /// Its start `T_b` and length `S_b`, in units.
    start: f64,
    len: f64,
    count: u64,
    /// The next arrival's position in the block; `BLOCK` when all are sent.
    pos: usize,
    /// `c_j / c_15` for the current block: non-decreasing, the last exactly 1.
    frac: [f64; BLOCK],
}

impl Gamma {
    /// Shape `k`, `ns_per_unit` output units per gamma unit.
    pub(super) fn new(seed: u64, k: f64, ns_per_unit: f64, index: u32, count: u32) -> Gamma {
        let mut g = Gamma {
            sums: stream(seed, PURPOSE_ARRIVALS),
            blocks: child_seed(seed, PURPOSE_ARRIVALS),
            gap: GammaDist::new(k),
            sum: GammaDist::new(BLOCK as f64 * k),
            ns_per_unit,
            block: 0,
            start: 0.0,
            len: 0.0,
            count: u64::from(count),
            pos: 0,
            frac: [0.0; BLOCK],
        };
        g.len = g.sum.sample(&mut g.sums);
        for _ in 0..index {
            g.step();
        }
        g.fill();
        g
    }

    /// Moves to the next block, drawing its length.
    #[inline]
    fn step(&mut self) {
        self.start += self.len;
        self.block += 1;
        self.len = self.sum.sample(&mut self.sums);
    }

    /// Draws the current block's positions.
    fn fill(&mut self) {
        let mut rng = stream(self.blocks, self.block);
        let mut c = 0.0;
        for f in &mut self.frac {
            c += self.gap.sample(&mut rng);
            *f = c;
        }
        if c > 0.0 && c.is_finite() {
            // x / c is monotone in x and c / c is exactly 1: the block's
            // last arrival is at T_b + S_b, the next block's start.
            for f in &mut self.frac {
                *f /= c;
            }
        } else {
            // Every gap underflowed to 0 (or their sum overflowed): the
            // arrivals gather at the block's end.
            self.frac = [1.0; BLOCK];
        }
        self.pos = 0;
    }

    #[inline]
    pub(super) fn next(&mut self, end_ns: u64) -> Option<u64> {
        // NaN (0 units times an infinite unit) ends the schedule too.
        offset_ns_of(self.next_at(), end_ns)
    }

    /// The next arrival's position, unrounded (in output units).
    #[inline]
    pub(super) fn next_at(&mut self) -> f64 {
        if self.pos == BLOCK {
            // The others' blocks in between cost one length draw each.
            for _ in 0..self.count {
                self.step();
            }
            self.fill();
        }
        let at = (self.start + self.len * self.frac[self.pos]) * self.ns_per_unit;
        self.pos += 1;
        at
    }
}

#[cfg(test)]
mod tests {
    use super::super::ziggurat_tables::{EXP_V, NORMAL_V};
    use super::*;

    /// Every layer of both ziggurats has the area V, the widths fall and the
    /// heights are the density at them; the normal's base strip holds the
    /// tail's area `sqrt(pi / 2) erfc(R / sqrt 2)`.
    #[test]
    fn ziggurat_layers_have_equal_areas() {
        let n = (NORMAL_X.as_slice(), NORMAL_F.as_slice(), NORMAL_V);
        let e = (EXP_X.as_slice(), EXP_F.as_slice(), EXP_V);
        let normal_f = |x: f64| libm::exp(-0.5 * x * x);
        let exp_f = |x: f64| libm::exp(-x);
        for (name, (x, f, v), density) in [
            ("normal", n, &normal_f as &dyn Fn(f64) -> f64),
            ("exp", e, &exp_f as &dyn Fn(f64) -> f64),
        ] {
            assert_eq!(x.len(), 257);
            assert_eq!((x[256], f[256]), (0.0, 1.0), "{name}");
            for i in 0..256 {
                assert!(x[i] > x[i + 1], "{name} {i}");
                let fx = density(x[i]);
                assert!((f[i] - fx).abs() <= 1e-15 * fx, "{name} F[{i}]");
            }
            // Layer 0: the base strip X[0] * f(R).
            assert!((x[0] * f[1] - v).abs() < 1e-15 * v, "{name} base");
            for i in 1..256 {
                let area = x[i] * (f[i + 1] - f[i]);
                assert!((area - v).abs() < 1e-12 * v, "{name} layer {i}: {area}");
            }
        }
        assert_eq!(NORMAL_X[1], NORMAL_R);
        assert_eq!(EXP_X[1], EXP_R);
        let normal_tail = libm::sqrt(core::f64::consts::FRAC_PI_2)
            * libm::erfc(NORMAL_R / core::f64::consts::SQRT_2);
        assert!((NORMAL_R * normal_f(NORMAL_R) + normal_tail - NORMAL_V).abs() < 1e-15);
        assert!((EXP_R * exp_f(EXP_R) + exp_f(EXP_R) - EXP_V).abs() < 1e-15);
    }

    /// Moments of the samplers over a million draws: normal mean 0,
    /// variance 1, fourth moment 3; exponential mean 1, variance 1; gamma
    /// mean and variance the shape, for shapes below and above 1.
    #[test]
    fn samplers_have_their_moments() {
        let n = 1_000_000;
        let mut rng = Pcg32::seeded(5);
        let (mut s1, mut s2, mut s4, mut tail) = (0.0, 0.0, 0.0, 0u32);
        for _ in 0..n {
            let x = normal(&mut rng);
            s1 += x;
            s2 += x * x;
            s4 += x * x * x * x;
            tail += u32::from(x.abs() > NORMAL_R);
        }
        let n_f = f64::from(n);
        assert!((s1 / n_f).abs() < 0.005, "normal mean {}", s1 / n_f);
        assert!(
            (s2 / n_f - 1.0).abs() < 0.005,
            "normal variance {}",
            s2 / n_f
        );
        assert!(
            (s4 / n_f - 3.0).abs() < 0.05,
            "normal 4th moment {}",
            s4 / n_f
        );
        // P(|Z| > R) = 2.58e-4: about 258 of a million.
        assert!((180..340).contains(&tail), "normal tail {tail}");
        let (mut e1, mut e2, mut etail) = (0.0, 0.0, 0u32);
        for _ in 0..n {
            let x = exponential(&mut rng);
            assert!(x >= 0.0);
            e1 += x;
            e2 += x * x;
            etail += u32::from(x > EXP_R);
        }
        assert!((e1 / n_f - 1.0).abs() < 0.005, "exp mean {}", e1 / n_f);
        assert!((e2 / n_f - 2.0).abs() < 0.03, "exp 2nd moment {}", e2 / n_f);
        // P(E > R) = e^-R = 4.54e-4.
        assert!((350..560).contains(&etail), "exp tail {etail}");
        for shape in [0.05, 0.5, 1.0, 4.0, 64.0] {
            let d = GammaDist::new(shape);
            let (mut g1, mut g2) = (0.0, 0.0);
            for _ in 0..n {
                let g = d.sample(&mut rng);
                assert!(g >= 0.0 && g.is_finite());
                g1 += g;
                g2 += g * g;
            }
            let mean = g1 / n_f;
            let var = g2 / n_f - mean * mean;
            assert!(
                (mean / shape - 1.0).abs() < 0.015,
                "shape {shape}: mean {mean}"
            );
            assert!(
                (var / shape - 1.0).abs() < 0.05,
                "shape {shape}: variance {var}"
            );
        }
    }
}
