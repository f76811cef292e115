//! Gamma arrivals equal an independent oracle (the ziggurat and the block
//! construction), and their gaps have the mean, CV and distribution of
//! Gamma(k).

use super::*;

/// The library's ziggurat tables, taken as they are: the library's unit tests
/// check that every layer has the same area; this oracle checks the rest.
#[allow(dead_code)]
mod zig {
    include!("../../../src/schedule/ziggurat_tables.rs");
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
