//! PCG32 (O'Neill's pcg32, XSH-RR 64/32) and SplitMix64 seed derivation.
//!
//! Every random choice in metronome comes from a [`Pcg32`] stream derived
//! from the run's seed with [`stream`]: one independent stream per purpose
//! ([`PURPOSE_ARRIVALS`], [`PURPOSE_REQUESTS`], [`PURPOSE_JITTER`],
//! [`PURPOSE_PROMPTS`]), so adding
//! a new use of randomness never shifts an existing one, and a seed always
//! reproduces the same schedule.
//!
//! The generator is bit-for-bit the reference `pcg32_random_r` with
//! `pcg32_srandom_r` seeding (and therefore equal to `rand_pcg::Pcg32::new`).
//!
//! ```
//! use metronome_core::rng::{child_seed, stream, Pcg32, PURPOSE_ARRIVALS};
//!
//! let mut rng = Pcg32::new(42, 54);
//! assert_eq!(rng.next_u32(), 0xa15c02b7);
//! assert_eq!(rng.next_u32(), 0x7b47f409);
//!
//! // The arrivals stream of seed 7 is a PCG32 seeded from a SplitMix64 output.
//! let mut arrivals = stream(7, PURPOSE_ARRIVALS);
//! let mut same = Pcg32::new(child_seed(7, PURPOSE_ARRIVALS), PURPOSE_ARRIVALS);
//! assert_eq!(arrivals.next_u32(), same.next_u32());
//! ```

/// The purpose of the stream that draws arrival gaps (Poisson and gamma schedules).
pub const PURPOSE_ARRIVALS: u64 = 0;
/// The purpose of the stream that chooses among several request bodies or prompts.
pub const PURPOSE_REQUESTS: u64 = 1;
/// The purpose of the stream that draws jitter (for example, connection-open or retry spreading).
pub const PURPOSE_JITTER: u64 = 2;
/// The purpose of the stream that draws the words of synthetic prompts.
pub const PURPOSE_PROMPTS: u64 = 3;
/// The purpose of the stream that draws synthetic prompts' input lengths.
pub const PURPOSE_LENGTHS: u64 = 4;
/// The purpose of the stream that draws the output length each prompt asks for.
pub const PURPOSE_OUTPUT_LENGTHS: u64 = 5;
/// The purpose of the stream that draws a shared prefix's words and which
/// prompts carry it.
pub const PURPOSE_PREFIX: u64 = 6;
// 7 is `mix::PURPOSE_MIX`, the hash of each arrival's weighted choice.

/// The LCG multiplier of PCG32 (the 64-bit MMIX/Knuth multiplier).
const MULTIPLIER: u64 = 6_364_136_223_846_793_005;
/// The sequence used by [`Pcg32::seeded`].
const DEFAULT_SEQ: u64 = 54;
/// The SplitMix64 increment (the golden-ratio constant 2^64 / phi).
const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// O'Neill's PCG32 (XSH-RR 64/32): a 64-bit LCG whose old state is permuted
/// into each 32-bit output.
///
/// It also keeps the spare normal of [`Pcg32::normal`]'s Box-Muller pair.
/// Two generators compare equal when their state, increment and spare match.
///
/// # Example
/// ```
/// use metronome_core::rng::Pcg32;
/// let mut rng = Pcg32::seeded(0);
/// assert_eq!(rng.state(), 0x9AE4F7499BA72696);
/// assert_eq!(rng.next_u32(), 0x47C28B93);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Pcg32 {
    state: u64,
    inc: u64,
    spare: Option<f64>,
}

impl Pcg32 {
    /// A generator seeded like `pcg32_srandom_r(seed, seq)`: the increment is
    /// `2*seq + 1`; the state starts at 0, steps once, adds `seed` and steps again.
    ///
    /// Different `seq` values give independent streams for the same `seed`.
    ///
    /// # Example
    /// ```
    /// use metronome_core::rng::Pcg32;
    /// let mut rng = Pcg32::new(42, 54);
    /// let first: [u32; 6] = core::array::from_fn(|_| rng.next_u32());
    /// assert_eq!(first, [0xa15c02b7, 0x7b47f409, 0xba1d3330, 0x83d2f293, 0xbfa4784b, 0xcbed606e]);
    /// ```
    #[must_use]
    pub const fn new(seed: u64, seq: u64) -> Pcg32 {
        let inc = (seq << 1) | 1;
        // state = 0; step; state += seed; step.
        let state = inc; // 0 * MULTIPLIER + inc
        let state = state.wrapping_add(seed);
        let state = state.wrapping_mul(MULTIPLIER).wrapping_add(inc);
        Pcg32 {
            state,
            inc,
            spare: None,
        }
    }

    /// `Pcg32::new(seed, 54)`, the sequence of the reference demo program.
    ///
    /// # Example
    /// ```
    /// use metronome_core::rng::Pcg32;
    /// assert_eq!(Pcg32::seeded(0), Pcg32::new(0, 54));
    /// assert_eq!(Pcg32::seeded(0).state(), 0x9AE4F7499BA72696);
    /// ```
    #[must_use]
    pub const fn seeded(seed: u64) -> Pcg32 {
        Pcg32::new(seed, DEFAULT_SEQ)
    }

    /// The current 64-bit LCG state (the next output is its XSH-RR permutation).
    ///
    /// # Example
    /// ```
    /// use metronome_core::rng::Pcg32;
    /// let mut rng = Pcg32::seeded(0);
    /// assert_eq!(rng.state(), 0x9AE4F7499BA72696);
    /// rng.next_u32();
    /// assert_eq!(
    ///     rng.state(),
    ///     0x9AE4F7499BA72696u64.wrapping_mul(6364136223846793005).wrapping_add(2 * 54 + 1)
    /// );
    /// ```
    #[must_use]
    pub const fn state(&self) -> u64 {
        self.state
    }

    /// The next 32-bit output: steps the LCG and returns the XSH-RR
    /// permutation of the old state.
    ///
    /// # Example
    /// ```
    /// use metronome_core::rng::Pcg32;
    /// let mut rng = Pcg32::new(42, 54);
    /// assert_eq!(rng.next_u32(), 0xa15c02b7);
    /// assert_eq!(rng.next_u32(), 0x7b47f409);
    /// ```
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        let old = self.state;
        self.state = old.wrapping_mul(MULTIPLIER).wrapping_add(self.inc);
        // Truncation to 32 bits is the XSH step of the permutation.
        let xorshifted = (((old >> 18) ^ old) >> 27) as u32;
        let rot = (old >> 59) as u32;
        xorshifted.rotate_right(rot)
    }

    /// A uniform `f64` in `[0, 1)` from two draws, like Python's `random()`
    /// (res53): `a = x1 >> 5`, `b = x2 >> 6`, `(a * 2^26 + b) / 2^53`.
    ///
    /// # Example
    /// ```
    /// use metronome_core::rng::Pcg32;
    /// let mut rng = Pcg32::new(42, 54);
    /// let (a, b) = (0xa15c02b7u64 >> 5, 0x7b47f409u64 >> 6);
    /// let expected = (a * (1 << 26) + b) as f64 / (1u64 << 53) as f64;
    /// assert_eq!(rng.next_f64(), expected);
    /// ```
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        let a = u64::from(self.next_u32() >> 5);
        let b = u64::from(self.next_u32() >> 6);
        // a < 2^27, b < 2^26: the 53-bit integer is exact in an f64, and so
        // is the division by a power of two.
        ((a << 26) | b) as f64 * (1.0 / 9_007_199_254_740_992.0)
    }

    /// A standard normal deviate (mean 0, variance 1) by Box-Muller.
    ///
    /// With `u1`, `u2` two [`next_f64`](Pcg32::next_f64) draws,
    /// `r = sqrt(-2 ln(1 - u1))`; returns `r * cos(2 pi u2)` and keeps
    /// `r * sin(2 pi u2)`, which the next call returns without drawing.
    ///
    /// # Example
    /// ```
    /// use metronome_core::rng::Pcg32;
    /// let mut rng = Pcg32::new(42, 54);
    /// let mut oracle = rng.clone();
    /// let (u1, u2) = (oracle.next_f64(), oracle.next_f64());
    /// let r = (-2.0 * (1.0 - u1).ln()).sqrt();
    /// let theta = 2.0 * core::f64::consts::PI * u2;
    /// assert!((rng.normal() - r * theta.cos()).abs() < 1e-12);
    /// assert!((rng.normal() - r * theta.sin()).abs() < 1e-12);
    /// // The pair used exactly four 32-bit draws.
    /// assert_eq!(rng.next_u32(), oracle.next_u32());
    /// ```
    pub fn normal(&mut self) -> f64 {
        if let Some(spare) = self.spare.take() {
            return spare;
        }
        let u1 = self.next_f64();
        let u2 = self.next_f64();
        // 1 - u1 is in (0, 1]: the log is finite and <= 0.
        let r = libm::sqrt(-2.0 * libm::log(1.0 - u1));
        let theta = 2.0 * core::f64::consts::PI * u2;
        self.spare = Some(r * libm::sin(theta));
        r * libm::cos(theta)
    }

    /// A uniform integer in `0..n`, without modulo bias, for `1 <= n <= 2^32`
    /// (`pcg32_boundedrand_r`): with `threshold = (2^32 - n) mod n`, draw
    /// until `x >= threshold` and return `x mod n`.
    ///
    /// # Panics
    /// When `n` is 0 or greater than 2^32: there is no uniform choice to make
    /// (0) or a 32-bit draw cannot cover the range (above 2^32).
    ///
    /// # Example
    /// ```
    /// use metronome_core::rng::Pcg32;
    /// let mut rng = Pcg32::new(42, 54);
    /// // 0xa15c02b7 is above the threshold (2^32 - 10) mod 10 = 6.
    /// assert_eq!(rng.below(10), 0xa15c02b7 % 10);
    /// assert_eq!(rng.below(1), 0);
    /// assert_eq!(rng.below(1 << 32), 0xba1d3330);
    /// ```
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(
            (1..=1 << 32).contains(&n),
            "Pcg32::below: n must be in 1..=2^32, got {n}"
        );
        let threshold = ((1u64 << 32) - n) % n;
        loop {
            let x = u64::from(self.next_u32());
            if x >= threshold {
                return x % n;
            }
        }
    }

    /// Shuffles `items` in place by Fisher-Yates from the end: for `i` from
    /// `len - 1` down to 1, `j = below(i + 1)`, swap items `i` and `j`.
    ///
    /// # Panics
    /// When `items` has more than 2^32 elements (beyond the range of
    /// [`below`](Pcg32::below)).
    ///
    /// # Example
    /// ```
    /// use metronome_core::rng::Pcg32;
    /// let mut items = [0, 1, 2];
    /// let mut rng = Pcg32::new(42, 54);
    /// let mut oracle = rng.clone();
    /// rng.shuffle(&mut items);
    /// let mut expected = [0, 1, 2];
    /// let j = oracle.below(3) as usize;
    /// expected.swap(2, j);
    /// let j = oracle.below(2) as usize;
    /// expected.swap(1, j);
    /// assert_eq!(items, expected);
    /// ```
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            // i + 1 <= len fits in u64 (usize is at most 64 bits), and the
            // result is < i + 1, so it converts back losslessly.
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// The SplitMix64 output function (a bijective 64-bit finaliser):
/// `z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9; z = (z ^ (z >> 27)) * 0x94D049BB133111EB; z ^ (z >> 31)`.
///
/// # Example
/// ```
/// use metronome_core::rng::mix64;
/// assert_eq!(mix64(0), 0);
/// // The first output of SplitMix64 seeded with 0.
/// assert_eq!(mix64(0x9E3779B97F4A7C15), 0xE220A8397B1DCDAF);
/// ```
#[must_use]
#[inline]
pub const fn mix64(z: u64) -> u64 {
    let z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The seed of the stream for `purpose`: the `(purpose + 1)`-th SplitMix64
/// output from state `seed`, i.e.
/// `mix64(seed + (purpose + 1) * 0x9E3779B97F4A7C15)` (wrapping).
///
/// # Example
/// ```
/// use metronome_core::rng::{child_seed, mix64};
/// assert_eq!(child_seed(0, 0), 0xE220A8397B1DCDAF);
/// assert_eq!(child_seed(0, 1), 0x6E789E6AA1B965F4);
/// assert_eq!(child_seed(5, 2), mix64(5u64.wrapping_add(3u64.wrapping_mul(0x9E3779B97F4A7C15))));
/// ```
#[must_use]
#[inline]
pub const fn child_seed(seed: u64, purpose: u64) -> u64 {
    mix64(seed.wrapping_add(purpose.wrapping_add(1).wrapping_mul(GOLDEN_GAMMA)))
}

/// The generator for `purpose` under the run seed `seed`:
/// `Pcg32::new(child_seed(seed, purpose), purpose)`.
///
/// # Example
/// ```
/// use metronome_core::rng::{child_seed, stream, Pcg32, PURPOSE_REQUESTS};
/// assert_eq!(
///     stream(42, PURPOSE_REQUESTS),
///     Pcg32::new(child_seed(42, PURPOSE_REQUESTS), PURPOSE_REQUESTS)
/// );
/// ```
#[must_use]
pub const fn stream(seed: u64, purpose: u64) -> Pcg32 {
    Pcg32::new(child_seed(seed, purpose), purpose)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_new_42_54() {
        let mut rng = Pcg32::new(42, 54);
        let got: [u32; 6] = core::array::from_fn(|_| rng.next_u32());
        assert_eq!(
            got,
            [0xa15c02b7, 0x7b47f409, 0xba1d3330, 0x83d2f293, 0xbfa4784b, 0xcbed606e]
        );
    }

    #[test]
    fn below_edges() {
        let mut rng = Pcg32::seeded(3);
        for _ in 0..100 {
            assert_eq!(rng.below(1), 0);
        }
    }

    #[test]
    #[should_panic(expected = "n must be in 1..=2^32, got 0")]
    fn below_zero_panics() {
        Pcg32::seeded(0).below(0);
    }

    #[test]
    #[should_panic(expected = "n must be in 1..=2^32, got 4294967297")]
    fn below_too_large_panics() {
        Pcg32::seeded(0).below((1 << 32) + 1);
    }

    #[test]
    fn shuffle_short_slices_draw_nothing() {
        let mut rng = Pcg32::seeded(9);
        let before = rng.clone();
        let mut empty: [u8; 0] = [];
        rng.shuffle(&mut empty);
        let mut one = [7u8];
        rng.shuffle(&mut one);
        assert_eq!(one, [7]);
        assert_eq!(rng, before);
    }

    #[test]
    fn normal_spare_is_consumed_once() {
        let mut rng = Pcg32::seeded(1);
        let mut oracle = rng.clone();
        rng.normal();
        rng.normal();
        rng.normal();
        // Three normals: two Box-Muller pairs, eight u32 draws.
        for _ in 0..8 {
            oracle.next_u32();
        }
        assert_eq!(rng.state(), oracle.state());
    }
}
