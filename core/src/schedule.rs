//! Intended send offsets, in nanoseconds from the run start.
//!
//! A [`Schedule`] is an allocation-free iterator over the intended send
//! offsets of one [`Shard`] of a run: non-decreasing, all below the end of the
//! run (an offset exactly at the end is not produced). It is the single source
//! of truth for send times; engines only sleep until the next offset.
//!
//! | arrival | offsets | shard `k` of `n` |
//! |---|---|---|
//! | [`Arrival::Constant`] | slot `i` at `round(i * 1e9 / rate)`, the first at 0 | slots `k, k + n, k + 2n, ...` |
//! | [`Arrival::Poisson`] | running sum of gaps `-ln(1 - u) / rate` s | an independent stream at `rate / n` |
//! | [`Arrival::Burst`] | `size` copies of `round(j * size * 1e9 / rate)`, the first at 0 | request `m` of each burst goes to shard `m % n` |
//! | [`Arrival::Gamma`] | running sum of gamma gaps, mean `1 / rate` s | arrivals `k, k + n, k + 2n, ...` of the whole sequence |
//!
//! For constant, burst and gamma schedules the shards are disjoint and their
//! union (as a multiset) is exactly the whole schedule. Poisson shards are
//! independent Poisson processes at `rate / n`, whose superposition is a
//! Poisson process at `rate` (in distribution, not offset for offset).
//!
//! ```
//! use metronome_core::schedule::{Arrival, Schedule, Shard};
//!
//! // 10 requests per second for one second: 0 ms, 100 ms, ..., 900 ms (not 1 s).
//! let s = Schedule::new(Arrival::Constant, 10.0, 0, 1_000_000_000, Shard::WHOLE)?;
//! let mut expected = (0..10).map(|i| i * 100_000_000);
//! assert!(s.eq(&mut expected));
//!
//! // Two shards split the slots between them.
//! let odd = Schedule::new(Arrival::Constant, 10.0, 0, 1_000_000_000, Shard { index: 1, count: 2 })?;
//! assert!(odd.eq([100_000_000, 300_000_000, 500_000_000, 700_000_000, 900_000_000]));
//! # Ok::<(), metronome_core::schedule::ScheduleError>(())
//! ```

use core::fmt;
use core::iter::FusedIterator;

use crate::rng::{child_seed, stream, Pcg32, PURPOSE_ARRIVALS};

/// How requests arrive.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arrival {
    /// Evenly spaced: offset_i = round(i * 1e9 / rate).
    Constant,
    /// Exponential gaps with mean 1/rate.
    Poisson,
    /// `size` requests at once, every size/rate seconds; the first burst at offset 0.
    Burst {
        /// Requests per burst (at least 1).
        size: u32,
    },
    /// Gamma-distributed gaps with shape `burstiness` and mean 1/rate (1.0 is Poisson).
    Gamma {
        /// The gamma shape k: larger is smoother, smaller is burstier.
        burstiness: f64,
    },
}

/// One shard `index` of `count` of a schedule (for several threads or machines).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard, in `0..count`.
    pub index: u32,
    /// How many shards share the schedule (at least 1).
    pub count: u32,
}

impl Shard {
    /// The whole schedule: shard 0 of 1.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };
}

/// Why a [`Schedule`] could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScheduleError {
    /// The rate was NaN, infinite, zero or negative; give a finite rate above
    /// 0 requests per second.
    InvalidRate,
    /// [`Arrival::Burst`] with `size` 0; a burst holds at least one request.
    EmptyBurst,
    /// [`Arrival::Gamma`] with a `burstiness` that is NaN, infinite, zero or
    /// negative; give a finite shape above 0 (1.0 is Poisson).
    InvalidBurstiness,
    /// The shard `count` was 0 or its `index` was not below `count`; shards
    /// are numbered `0..count`.
    InvalidShard,
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ScheduleError::InvalidRate => {
                "the rate must be a finite number of requests per second above 0"
            }
            ScheduleError::EmptyBurst => "a burst must hold at least one request",
            ScheduleError::InvalidBurstiness => {
                "the gamma burstiness must be a finite number above 0 (1 is Poisson)"
            }
            ScheduleError::InvalidShard => {
                "the shard index must be below the shard count, and the count at least 1"
            }
        })
    }
}

impl core::error::Error for ScheduleError {}

/// The iterator of intended send offsets (nanoseconds from the run start) of
/// one shard of a run. Allocation-free, with O(1) state.
///
/// The offsets are non-decreasing and all below `end_ns`. Every offset comes
/// from the seed and the arrival model alone, so engines on different threads
/// or machines that build the same schedule with different shards send
/// disjoint parts of one run.
///
/// - **Constant**: slot `i` is at `round(i * 1e9 / rate)` ns, computed exactly
///   in integer arithmetic from the binary value of `rate` (halves round up),
///   never by adding rounded gaps: no drift, however long the run.
/// - **Burst** `{ size }`: burst `j` is at `round(j * size * 1e9 / rate)` ns
///   (exact, as above), `size` requests each; the first burst is at 0.
/// - **Poisson**: with `u` the successive [`Pcg32::next_f64`] draws of
///   `stream(seed, PURPOSE_ARRIVALS)`, the arrival time is the running sum,
///   in `f64` seconds, of the gaps `(-ln(1 - u) * n) / rate` (`n` the shard
///   count), and each offset is that sum times 1e9 rounded to the nearest ns.
///   The first arrival is one gap after 0. Shard `k` of `n > 1` uses the
///   independent stream `stream(child_seed(seed, PURPOSE_ARRIVALS), k)` at
///   `rate / n`; one shard (`n = 1`) is exactly the unsharded schedule.
/// - **Gamma** `{ burstiness: k }`: gaps `g / k / rate` s with `g ~ Gamma(k, 1)`
///   drawn by Marsaglia-Tsang from the same arrivals stream (normals from
///   [`Pcg32::normal`], then one `next_f64` per attempt; for `k < 1` a
///   `Gamma(k + 1)` draw times `u^(1/k)` with one more `next_f64` draw `u`);
///   offsets are the running sum as for Poisson, the first one gap after 0.
///   Every shard generates the whole sequence and keeps arrivals
///   `index, index + count, ...`.
///
/// Absurdly high rates (where whole runs of slots round to the same
/// nanosecond) give correspondingly many offsets; validating a sensible rate
/// range is the caller's job.
///
/// # Example
/// ```
/// use metronome_core::schedule::{Arrival, Schedule, Shard};
/// // Bursts of 3 at 30 requests per second: one burst every 100 ms.
/// let s = Schedule::new(Arrival::Burst { size: 3 }, 30.0, 0, 250_000_000, Shard::WHOLE)?;
/// assert!(s.eq([0, 0, 0, 100_000_000, 100_000_000, 100_000_000, 200_000_000, 200_000_000, 200_000_000]));
/// # Ok::<(), metronome_core::schedule::ScheduleError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Schedule {
    end_ns: u64,
    done: bool,
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Kind {
    Grid(Grid),
    Poisson(Poisson),
    Gamma(Gamma),
}

impl Schedule {
    /// The schedule of `shard` for `arrival` at `rate` requests per second
    /// (over all shards), seeded with `seed`, producing offsets below `end_ns`.
    ///
    /// `seed` only matters for Poisson and gamma arrivals.
    ///
    /// # Errors
    /// - [`ScheduleError::InvalidRate`] when `rate` is not finite or not above 0.
    /// - [`ScheduleError::EmptyBurst`] for `Arrival::Burst { size: 0 }`.
    /// - [`ScheduleError::InvalidBurstiness`] when a gamma `burstiness` is not
    ///   finite or not above 0.
    /// - [`ScheduleError::InvalidShard`] when `shard.count` is 0 or
    ///   `shard.index >= shard.count`.
    ///
    /// # Example
    /// ```
    /// use metronome_core::rng::{stream, PURPOSE_ARRIVALS};
    /// use metronome_core::schedule::{Arrival, Schedule, ScheduleError, Shard};
    ///
    /// let mut s = Schedule::new(Arrival::Poisson, 100.0, 7, 60_000_000_000, Shard::WHOLE)?;
    /// let u = stream(7, PURPOSE_ARRIVALS).next_f64();
    /// let first = (-(1.0 - u).ln() / 100.0 * 1e9).round() as u64;
    /// assert_eq!(s.next(), Some(first));
    ///
    /// assert_eq!(
    ///     Schedule::new(Arrival::Constant, 0.0, 7, 1, Shard::WHOLE).err(),
    ///     Some(ScheduleError::InvalidRate)
    /// );
    /// assert_eq!(
    ///     Schedule::new(Arrival::Constant, 1.0, 7, 1, Shard { index: 2, count: 2 }).err(),
    ///     Some(ScheduleError::InvalidShard)
    /// );
    /// # Ok::<(), ScheduleError>(())
    /// ```
    pub fn new(
        arrival: Arrival,
        rate: f64,
        seed: u64,
        end_ns: u64,
        shard: Shard,
    ) -> Result<Schedule, ScheduleError> {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(ScheduleError::InvalidRate);
        }
        match arrival {
            Arrival::Burst { size: 0 } => return Err(ScheduleError::EmptyBurst),
            Arrival::Gamma { burstiness } if !(burstiness.is_finite() && burstiness > 0.0) => {
                return Err(ScheduleError::InvalidBurstiness)
            }
            _ => {}
        }
        if shard.count == 0 || shard.index >= shard.count {
            return Err(ScheduleError::InvalidShard);
        }
        let (k, n) = (shard.index, shard.count);
        let kind = match arrival {
            Arrival::Constant => Kind::Grid(Grid::new(rate, u128::from(k), u128::from(n), 1)),
            Arrival::Burst { size } => {
                // Requests m in 0..size with m % n == k.
                let copies = if k < size { (size - 1 - k) / n + 1 } else { 0 };
                Kind::Grid(Grid::new(rate, 0, u128::from(size), copies))
            }
            Arrival::Poisson => {
                let rng = if n == 1 {
                    stream(seed, PURPOSE_ARRIVALS)
                } else {
                    stream(child_seed(seed, PURPOSE_ARRIVALS), u64::from(k))
                };
                Kind::Poisson(Poisson {
                    rng,
                    rate,
                    shards: f64::from(n),
                    t_s: 0.0,
                })
            }
            Arrival::Gamma { burstiness } => Kind::Gamma(Gamma::new(
                stream(seed, PURPOSE_ARRIVALS),
                burstiness,
                rate,
                k,
                n,
            )),
        };
        let done = matches!(&kind, Kind::Grid(g) if g.copies == 0);
        Ok(Schedule { end_ns, done, kind })
    }

    /// The end of the schedule: every offset is below it.
    ///
    /// # Example
    /// ```
    /// use metronome_core::schedule::{Arrival, Schedule, Shard};
    /// let s = Schedule::new(Arrival::Poisson, 5.0, 1, 2_000_000_000, Shard::WHOLE)?;
    /// assert_eq!(s.end_ns(), 2_000_000_000);
    /// # Ok::<(), metronome_core::schedule::ScheduleError>(())
    /// ```
    #[must_use]
    pub const fn end_ns(&self) -> u64 {
        self.end_ns
    }
}

impl Iterator for Schedule {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.done {
            return None;
        }
        let next = match &mut self.kind {
            Kind::Grid(g) => g.next(self.end_ns),
            Kind::Poisson(p) => p.next(self.end_ns),
            Kind::Gamma(g) => g.next(self.end_ns),
        };
        self.done = next.is_none();
        next
    }

    /// Constant and burst schedules skip ahead in O(1), computing the offset
    /// from the base exactly as `next` would have produced it.
    fn nth(&mut self, n: usize) -> Option<u64> {
        if self.done {
            return None;
        }
        match &mut self.kind {
            Kind::Grid(g) => {
                // usize is at most 64 bits on every supported target.
                g.skip(n as u64);
                self.next()
            }
            Kind::Poisson(_) | Kind::Gamma(_) => {
                for _ in 0..n {
                    self.next()?;
                }
                self.next()
            }
        }
    }
}

impl FusedIterator for Schedule {}

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
struct Grid {
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
    copies: u32,
    /// Copies of the current slot not yet yielded (at least 1 unless copies is 0).
    left: u32,
}

impl Grid {
    fn new(rate: f64, start_a: u128, step_a: u128, copies: u32) -> Grid {
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
    fn next(&mut self, end_ns: u64) -> Option<u64> {
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
    fn skip(&mut self, n: u64) {
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

/// Rounds `ns >= 0` half away from zero (like `f64::round`), saturating at
/// `u64::MAX` (for +inf too).
#[inline]
fn round_ns(ns: f64) -> u64 {
    // `as` truncates and saturates. Below 2^53 the fraction `ns - whole` is
    // exact; at or above it ns is an integer and the fraction is 0 (or
    // >= 0.5 only past u64::MAX, where the sum saturates).
    let whole = ns as u64;
    if ns - whole as f64 >= 0.5 {
        whole.saturating_add(1)
    } else {
        whole
    }
}

/// Seconds to nanoseconds, rounded half away from zero; `None` at or after
/// `end_ns`.
#[inline]
fn offset_ns(t_s: f64, end_ns: u64) -> Option<u64> {
    let ns = t_s * 1e9;
    let offset = round_ns(ns);
    // t_s is never NaN (gaps are >= 0 and finite or +inf); the check keeps
    // that a local fact.
    if ns.is_nan() || offset >= end_ns {
        None
    } else {
        Some(offset)
    }
}

#[derive(Clone, Debug)]
struct Poisson {
    rng: Pcg32,
    rate: f64,
    shards: f64,
    t_s: f64,
}

impl Poisson {
    #[inline]
    fn next(&mut self, end_ns: u64) -> Option<u64> {
        let u = self.rng.next_f64();
        // 1 - u is in (0, 1]: the gap is finite and >= 0 before the division,
        // and never NaN after it (rate > 0).
        self.t_s += (-libm::log(1.0 - u) * self.shards) / self.rate;
        offset_ns(self.t_s, end_ns)
    }
}

#[derive(Clone, Debug)]
struct Gamma {
    rng: Pcg32,
    /// The shape k.
    k: f64,
    rate: f64,
    /// Marsaglia-Tsang constants for the shape drawn (k, or k + 1 when k < 1).
    d: f64,
    c: f64,
    boost: bool,
    t_s: f64,
    /// Index, modulo `count`, of the next arrival of the whole sequence.
    phase: u32,
    index: u32,
    count: u32,
}

impl Gamma {
    fn new(rng: Pcg32, k: f64, rate: f64, index: u32, count: u32) -> Gamma {
        let boost = k < 1.0;
        let shape = if boost { k + 1.0 } else { k };
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / libm::sqrt(9.0 * d);
        Gamma {
            rng,
            k,
            rate,
            d,
            c,
            boost,
            t_s: 0.0,
            phase: 0,
            index,
            count,
        }
    }

    /// One Gamma(k, 1) variate.
    fn draw(&mut self) -> f64 {
        let g = loop {
            let x = self.rng.normal();
            let v = 1.0 + self.c * x;
            if v <= 0.0 {
                continue;
            }
            let v = v * v * v;
            let u = self.rng.next_f64();
            let x2 = x * x;
            if u < 1.0 - 0.0331 * x2 * x2
                || libm::log(u) < 0.5 * x2 + self.d * (1.0 - v + libm::log(v))
            {
                break self.d * v;
            }
        };
        if self.boost {
            // pow(u, 1/k) is in [0, 1] (0 when 1/k overflows): never NaN.
            g * libm::pow(self.rng.next_f64(), 1.0 / self.k)
        } else {
            g
        }
    }

    fn next(&mut self, end_ns: u64) -> Option<u64> {
        loop {
            let g = self.draw();
            // g is finite and >= 0, k and rate finite and > 0: never NaN.
            self.t_s += g / self.k / self.rate;
            let offset = offset_ns(self.t_s, end_ns)?;
            let mine = self.phase == self.index;
            self.phase += 1;
            if self.phase == self.count {
                self.phase = 0;
            }
            if mine {
                return Some(offset);
            }
        }
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

    #[test]
    fn tiny_rate_yields_only_slot_zero() {
        let s = Schedule::new(Arrival::Constant, 1e-300, 0, u64::MAX, Shard::WHOLE).unwrap();
        assert!(s.eq([0]));
        let s = Schedule::new(Arrival::Poisson, 1e-300, 0, u64::MAX, Shard::WHOLE).unwrap();
        assert_eq!(s.count(), 0);
        let s = Schedule::new(
            Arrival::Gamma { burstiness: 0.5 },
            f64::from_bits(1),
            0,
            u64::MAX,
            Shard { index: 1, count: 3 },
        )
        .unwrap();
        // Gaps of 0 or +inf, never NaN: the sequence ends.
        assert!(s.count() < 100);
    }

    #[test]
    fn offset_rounding_matches_f64_round() {
        let end = u64::MAX;
        let two52 = (1u64 << 52) as f64;
        let cases = [
            0.0,
            0.4,
            0.5,
            1.5,
            2.5,
            0.5 - f64::EPSILON / 4.0, // the largest f64 below 0.5
            two52 - 0.5,
            two52 + 1.0,
            2.0 * two52 + 2.0,
            1e19,
        ];
        for ns in cases {
            let want = libm::round(ns) as u64;
            // offset_ns rounds t_s * 1e9 exactly as f64::round would.
            assert_eq!(
                offset_ns(ns / 1e9, end),
                Some(libm::round(ns / 1e9 * 1e9) as u64),
                "{ns}"
            );
            assert_eq!(round_ns(ns), want, "{ns}");
        }
        assert_eq!(round_ns(0.5 - f64::EPSILON / 4.0), 0);
        assert_eq!(round_ns(two52 - 0.5), 1 << 52);
        assert_eq!(round_ns(f64::INFINITY), u64::MAX);
        assert_eq!(round_ns(2e19), u64::MAX);
        assert_eq!(offset_ns(f64::INFINITY, end), None);
        assert_eq!(offset_ns(1e300, end), None);
        assert_eq!(offset_ns(1.0, 1_000_000_000), None);
        assert_eq!(offset_ns(0.999_999_999_4, 1_000_000_000), Some(999_999_999));
    }

    #[test]
    fn empty_burst_shard_is_empty() {
        let s = Schedule::new(
            Arrival::Burst { size: 2 },
            1.0,
            0,
            u64::MAX,
            Shard { index: 2, count: 3 },
        )
        .unwrap();
        assert_eq!(s.count(), 0);
    }

    #[test]
    fn display_names_the_fix() {
        extern crate std;
        use std::string::ToString;
        assert_eq!(
            ScheduleError::EmptyBurst.to_string(),
            "a burst must hold at least one request"
        );
    }
}
