//! The constant and burst schedules: [`Grid`], slots on an exact rational
//! grid, with [`Ratio`], `a * 1e9 / rate` as an exact fraction.

/// A cap on integer offsets: anything at or above it is past every `end_ns`.
const CAP: u128 = 1 << 64;
const NS_PER_S: u128 = 1_000_000_000;

/// `a * 1e9 / rate` as an exact fraction `q + r / den`, where the rate
/// `m * 2^e` is the exact binary value of the `f64`.
#[derive(Clone, Copy, Debug)]
struct Ratio {
    /// Left shift of the numerator `a * 1e9` (`-e` when `e < 0`).
    shift: u32,
    /// `m << e` (`e >= 0`) or `m` (`e < 0`); below 2^127, at least 1.
    den: u128,
    /// The rate is so high (at least 2^127 per second) that every value this
    /// schedule can reach is below half a nanosecond.
    tiny: bool,
}

impl Ratio {
    fn new(rate: f64) -> Ratio {
        let bits = rate.to_bits();
        // Sign is clear (rate > 0); the exponent field is 11 bits.
        let exp_field = ((bits >> 52) & 0x7ff) as i32;
        let fraction = bits & ((1 << 52) - 1);
        let (mut m, mut e) = if exp_field == 0 {
            (fraction, -1074)
        } else {
            (fraction | (1 << 52), exp_field - 1075)
        };
        // m != 0 because rate > 0.
        let tz = m.trailing_zeros();
        m >>= tz;
        e += tz as i32;
        if e >= 0 {
            let e = e.unsigned_abs();
            let m_bits = 64 - m.leading_zeros();
            if m_bits + e > 127 {
                // rate >= 2^127 while a * 1e9 < 2^126 for every multiplier
                // a < 2^96 (a slot count < 2^64 times a step < 2^32), so
                // every value is below 1/2 and rounds to 0.
                Ratio {
                    shift: 0,
                    den: 1,
                    tiny: true,
                }
            } else {
                Ratio {
                    shift: 0,
                    den: u128::from(m) << e,
                    tiny: false,
                }
            }
        } else {
            Ratio {
                shift: e.unsigned_abs(),
                den: u128::from(m),
                tiny: false,
            }
        }
    }

    /// `(q, r)` with `a * 1e9 / rate = q + r / den`, `r < den`; `(CAP, 0)` when
    /// the value is 2^64 or more.
    fn split(&self, a: u128) -> (u128, u128) {
        if self.tiny || a == 0 {
            return (0, 0);
        }
        let Some(c) = a.checked_mul(NS_PER_S) else {
            return (CAP, 0);
        };
        // c << shift must stay below 2^127 (so r + r' < 2^128 later); if it
        // does not, the value is at least 2^127 / 2^53 > CAP.
        if c.leading_zeros() <= self.shift {
            return (CAP, 0);
        }
        let num = c << self.shift;
        let q = num / self.den;
        if q >= CAP {
            (CAP, 0)
        } else {
            (q, num % self.den)
        }
    }
}

/// The constant and burst schedules: slots on the exact grid
/// `round(a * 1e9 / rate)` with `a = start, start + step, ...`, each slot
/// yielded `copies` times.
#[derive(Clone, Debug)]
pub(super) struct Grid {
    ratio: Ratio,
    /// The multiplier of the current slot.
    a: u128,
    step_a: u128,
    /// The current slot's exact value `q + r / den`.
    q: u128,
    r: u128,
    /// The step's exact value `step_q + step_r / den`.
    step_q: u128,
    step_r: u128,
    pub(super) copies: u32,
    /// Copies of the current slot not yet yielded (at least 1 unless copies is 0).
    left: u32,
}

impl Grid {
    pub(super) fn new(rate: f64, start_a: u128, step_a: u128, copies: u32) -> Grid {
        let ratio = Ratio::new(rate);
        let (q, r) = ratio.split(start_a);
        let (step_q, step_r) = ratio.split(step_a);
        Grid {
            ratio,
            a: start_a,
            step_a,
            q,
            r,
            step_q,
            step_r,
            copies,
            left: copies,
        }
    }

    #[inline]
    pub(super) fn next(&mut self, end_ns: u64) -> Option<u64> {
        // Round half up: the fraction r / den is >= 1/2.
        let offset = self.q + u128::from(self.r >= self.ratio.den - self.r);
        if offset >= u128::from(end_ns) {
            return None;
        }
        self.left -= 1;
        if self.left == 0 {
            self.left = self.copies;
            self.a = self.a.saturating_add(self.step_a);
            self.q = (self.q + self.step_q).min(CAP);
            self.r += self.step_r;
            if self.r >= self.ratio.den {
                self.r -= self.ratio.den;
                self.q = (self.q + 1).min(CAP);
            }
        }
        // offset < end_ns <= u64::MAX.
        Some(offset as u64)
    }

    /// Skips `n` offsets, recomputing the slot from the base.
    pub(super) fn skip(&mut self, n: u64) {
        if n < u64::from(self.left) {
            // n < left <= u32::MAX.
            self.left -= n as u32;
            return;
        }
        let rest = n - u64::from(self.left);
        let copies = u64::from(self.copies);
        let slots = u128::from(rest / copies) + 1;
        self.a = self.a.saturating_add(slots.saturating_mul(self.step_a));
        (self.q, self.r) = self.ratio.split(self.a);
        // rest % copies < copies <= u32::MAX.
        self.left = self.copies - (rest % copies) as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_of_three_is_exact() {
        let r = Ratio::new(3.0);
        assert_eq!(r.shift, 0);
        assert_eq!(r.den, 3);
        assert_eq!(r.split(1), (333_333_333, 1));
    }

    #[test]
    fn ratio_of_a_half_shifts() {
        let r = Ratio::new(0.5);
        assert_eq!((r.shift, r.den, r.tiny), (1, 1, false));
        assert_eq!(r.split(3), (6_000_000_000, 0));
    }

    #[test]
    fn ratio_caps_huge_values() {
        let r = Ratio::new(f64::from_bits(1)); // the smallest subnormal
        assert_eq!(r.split(1), (CAP, 0));
        assert_eq!(r.split(0), (0, 0));
        let fast = Ratio::new(1e40);
        assert!(fast.tiny);
        assert_eq!(fast.split(u128::from(u64::MAX)), (0, 0));
    }
}
