//! [`Mix`]: which of a plan's requests each arrival of the schedule sends.
//!
//! Three rules, decided here once for both engines:
//!
//! - [`Mix::Cycle`]: arrival `j` sends request `j mod n` (round-robin, as
//!   vegeta sends its targets, and how prompts cycle);
//! - [`Mix::Weighted`]: arrival `j` sends request `i` with probability
//!   `w_i / sum(w)`, drawn from the seed and the arrival's index in the
//!   whole run alone: `u = (mix64(child_seed(seed, PURPOSE_MIX) + g) >> 11)
//!   / 2^53` for the arrival's global index `g`, then the first `i` whose
//!   cumulative weight exceeds `u x sum(w)`. No state is carried from one
//!   arrival to the next, so threads and shards that deal the arrivals by
//!   index (`g = shard.index + j x shard.count`, the rule of the constant,
//!   Poisson, staged and replayed schedules) choose exactly what one
//!   process would, and a seed reproduces its counts;
//! - [`Mix::Table`]: arrival `g` (its index in the whole run) sends
//!   `table[g]`: a trace whose lines name their request, or carry their
//!   own prompt, replays line `g` with its own request.
//!
//! The cumulative weights live in the caller's storage (built before the
//! clock, [`cumulate`]); a choice is one hash and a binary search over
//! them, with no allocation.
//!
//! ```
//! use metronome_core::mix::{cumulate, Mix};
//! let mut cum = [0.0; 3];
//! cumulate(&[1.0, 2.0, 1.0], &mut cum).unwrap();
//! assert_eq!(cum, [1.0, 3.0, 4.0]);
//! let mix = Mix::Weighted { cumulative: &cum };
//! let mut counts = [0u32; 3];
//! for g in 0..4000 {
//!     counts[mix.pick(42, g, 3)] += 1;
//! }
//! assert_eq!(counts.iter().sum::<u32>(), 4000);
//! assert!(counts[1] > counts[0] && counts[1] > counts[2]); // about 1000, 2000, 1000
//! assert_eq!(Mix::Cycle.pick(42, 7, 3), 1);
//! ```

use crate::rng::{child_seed, mix64};

/// The purpose of the hash that draws each arrival's request in a
/// weighted mix (see [`crate::rng`] for the others).
pub const PURPOSE_MIX: u64 = 7;

/// How arrivals choose among the plan's requests.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mix<'a> {
    /// Arrival `j` sends request `j mod n`.
    Cycle,
    /// Weighted by the seed: `cumulative[i]` is the sum of the weights of
    /// requests `0..=i` (strictly increasing, finite, one per request).
    Weighted {
        /// The running sums of the weights ([`cumulate`]).
        cumulative: &'a [f64],
    },
    /// Arrival `g` (global index) sends request `table[g]` (the last entry
    /// for arrivals beyond the table).
    Table {
        /// One request index per arrival of the whole run.
        table: &'a [u32],
    },
}

/// Why weights cannot make a [`Mix::Weighted`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightError {
    /// A weight is NaN, infinite, zero or negative: give every request a
    /// positive weight.
    NotPositive(usize),
    /// The storage is not one slot per weight.
    Length,
}

/// Writes the running sums of `weights` into `cumulative` (one slot per
/// weight).
///
/// # Errors
/// [`WeightError::NotPositive`] with the index of a weight that is not a
/// positive finite number (or whose sum overflows to infinity);
/// [`WeightError::Length`] when the slices differ in length.
pub fn cumulate(weights: &[f64], cumulative: &mut [f64]) -> Result<(), WeightError> {
    if weights.len() != cumulative.len() {
        return Err(WeightError::Length);
    }
    let mut sum = 0.0;
    for (i, (&w, c)) in weights.iter().zip(cumulative.iter_mut()).enumerate() {
        if !(w.is_finite() && w > 0.0 && (sum + w).is_finite()) {
            return Err(WeightError::NotPositive(i));
        }
        sum += w;
        *c = sum;
    }
    Ok(())
}

impl Mix<'_> {
    /// The request (in `0..n`) that arrival `j` sends, with `g` its index
    /// in the whole run: [`Mix::Cycle`] uses `j` (this process's own
    /// count), [`Mix::Weighted`] the seed and `g` (see the module docs).
    /// `n` is the number of requests (at least 1).
    ///
    /// ```
    /// use metronome_core::mix::Mix;
    /// let cum = [1.0, 2.0];
    /// let w = Mix::Weighted { cumulative: &cum };
    /// // Global index 5 of seed 1 draws the same request whatever the split.
    /// assert_eq!(w.pick_global(1, 5), w.pick_global(1, 5));
    /// assert_eq!(Mix::Cycle.pick(1, 5, 2), 1);
    /// ```
    pub fn pick(&self, seed: u64, j: u64, n: usize) -> usize {
        match self {
            Mix::Cycle => (j % n.max(1) as u64) as usize,
            Mix::Weighted { .. } | Mix::Table { .. } => self.pick_global(seed, j),
        }
    }

    /// The choice for global index `g`: weighted by the seed, or the
    /// table's entry (for [`Mix::Cycle`]: 0).
    ///
    /// ```
    /// use metronome_core::mix::Mix;
    /// let t = Mix::Table { table: &[2, 0, 1] };
    /// assert_eq!((t.pick_global(9, 0), t.pick_global(9, 2), t.pick_global(9, 7)), (2, 1, 1));
    /// ```
    pub fn pick_global(&self, seed: u64, g: u64) -> usize {
        if let Mix::Table { table } = self {
            let i = (g as usize).min(table.len().saturating_sub(1));
            return table.get(i).map_or(0, |&r| r as usize);
        }
        let Mix::Weighted { cumulative } = self else {
            return 0;
        };
        let Some(&total) = cumulative.last() else {
            return 0;
        };
        let u = unit(seed, g) * total;
        // The first running sum above u (u < total, so one exists).
        cumulative
            .partition_point(|&c| c <= u)
            .min(cumulative.len() - 1)
    }
}

/// The uniform in `[0, 1)` of global index `g` under `seed`: the top 53
/// bits of `mix64(child_seed(seed, PURPOSE_MIX) + g)`.
pub fn unit(seed: u64, g: u64) -> f64 {
    let bits = mix64(child_seed(seed, PURPOSE_MIX).wrapping_add(g)) >> 11;
    bits as f64 * (1.0 / 9_007_199_254_740_992.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The choice for a seed is golden: `unit` is SplitMix64's finalizer of
    /// the child seed plus the index, as an independent implementation
    /// computes it.
    #[test]
    fn weighted_choice_is_golden_for_a_seed() {
        // An independent SplitMix64 (Vigna's constants).
        fn splitmix(z: u64) -> u64 {
            let z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        let base = splitmix(42u64.wrapping_add(8u64.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        for g in [0u64, 1, 2, 1000, u64::MAX] {
            let want = (splitmix(base.wrapping_add(g)) >> 11) as f64 / (1u64 << 53) as f64;
            assert_eq!(unit(42, g), want, "g = {g}");
        }
        let cum = [5.0, 7.0, 10.0];
        let mix = Mix::Weighted { cumulative: &cum };
        for g in 0..1000 {
            let u = unit(42, g) * 10.0;
            let want = if u < 5.0 {
                0
            } else if u < 7.0 {
                1
            } else {
                2
            };
            assert_eq!(mix.pick(42, g, 3), want);
        }
    }

    /// Over many arrivals the shares approach the weights.
    #[test]
    fn shares_follow_the_weights() {
        let mut cum = [0.0; 3];
        cumulate(&[0.5, 0.3, 0.2], &mut cum).unwrap();
        let mix = Mix::Weighted { cumulative: &cum };
        let mut counts = [0u32; 3];
        for g in 0..100_000 {
            counts[mix.pick(7, g, 3)] += 1;
        }
        for (c, w) in counts.iter().zip([0.5, 0.3, 0.2]) {
            let share = f64::from(*c) / 100_000.0;
            assert!((share - w).abs() < 0.01, "{counts:?}");
        }
    }

    #[test]
    fn bad_weights_are_refused_with_their_index() {
        let mut c = [0.0; 2];
        assert_eq!(
            cumulate(&[1.0, 0.0], &mut c),
            Err(WeightError::NotPositive(1))
        );
        assert_eq!(
            cumulate(&[f64::NAN, 1.0], &mut c),
            Err(WeightError::NotPositive(0))
        );
        assert_eq!(cumulate(&[1.0], &mut c), Err(WeightError::Length));
        assert_eq!(
            cumulate(&[f64::MAX, f64::MAX], &mut c),
            Err(WeightError::NotPositive(1))
        );
    }
}
