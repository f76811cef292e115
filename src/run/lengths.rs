//! Prompt and output lengths drawn from a distribution (`--input-len`,
//! `--output-len`), as aiperf's and guidellm's synthetic data draw them:
//! `512` (every request), `normal:512,64` (mean, standard deviation;
//! rounded, at least 1) or `uniform:128..1024` (integers, both ends
//! included). Each draw uses the seeded generator, so a seed gives the
//! same lengths on every machine.

use std::fmt;
use std::str::FromStr;

use metronome_core::rng::Pcg32;

/// The longest length a distribution may draw: 1,000,000 (words or
/// tokens), the bound `--input-len` always had.
pub const MAX_LEN: u32 = 1_000_000;

/// A length, fixed or drawn per prompt.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Length {
    /// Always this many.
    Fixed(u32),
    /// Normal with this mean and standard deviation, rounded to the
    /// nearest integer and clamped to `1..=MAX_LEN`.
    Normal {
        /// The mean.
        mean: f64,
        /// The standard deviation (0 is the fixed mean).
        sd: f64,
    },
    /// Uniform over the integers `lo..=hi`.
    Uniform {
        /// The shortest.
        lo: u32,
        /// The longest (included).
        hi: u32,
    },
}

impl Length {
    /// One length drawn with `rng`: a fixed length draws nothing, a normal
    /// one draw of [`Pcg32::normal`], a uniform one [`Pcg32::below`].
    ///
    /// ```
    /// use metronome::run::lengths::Length;
    /// use metronome_core::rng::Pcg32;
    /// let mut r = Pcg32::seeded(1);
    /// assert_eq!(Length::Fixed(7).draw(&mut r), 7);
    /// let u: Length = "uniform:3..5".parse().unwrap();
    /// assert!((0..100).all(|_| (3..=5).contains(&u.draw(&mut r))));
    /// ```
    pub fn draw(&self, rng: &mut Pcg32) -> u32 {
        match *self {
            Length::Fixed(n) => n,
            Length::Normal { mean, sd } => {
                let x = (mean + sd * rng.normal()).round();
                x.clamp(1.0, f64::from(MAX_LEN)) as u32
            }
            Length::Uniform { lo, hi } => lo + rng.below(u64::from(hi - lo) + 1) as u32,
        }
    }

    /// The mean length (of the unclamped law), for sizing storage.
    pub fn mean(&self) -> f64 {
        match *self {
            Length::Fixed(n) => f64::from(n),
            Length::Normal { mean, .. } => mean,
            Length::Uniform { lo, hi } => (f64::from(lo) + f64::from(hi)) / 2.0,
        }
    }

    /// Whether every draw is the same length.
    pub fn is_fixed(&self) -> bool {
        matches!(self, Length::Fixed(_))
    }
}

impl fmt::Display for Length {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Length::Fixed(n) => write!(f, "{n}"),
            Length::Normal { mean, sd } => write!(f, "normal:{mean},{sd}"),
            Length::Uniform { lo, hi } => write!(f, "uniform:{lo}..{hi}"),
        }
    }
}

impl FromStr for Length {
    type Err = String;

    /// `N`, `normal:MEAN,SD` or `uniform:LO..HI`; every length in
    /// `1..=1,000,000`.
    ///
    /// ```
    /// use metronome::run::lengths::Length;
    /// assert_eq!("512".parse(), Ok(Length::Fixed(512)));
    /// assert_eq!("normal:512,64".parse(), Ok(Length::Normal { mean: 512.0, sd: 64.0 }));
    /// assert_eq!("uniform:128..1024".parse(), Ok(Length::Uniform { lo: 128, hi: 1024 }));
    /// assert!("uniform:9..3".parse::<Length>().is_err());
    /// assert!("0".parse::<Length>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Length, String> {
        let int = |t: &str| -> Result<u32, String> {
            match t.trim().parse::<u32>() {
                Ok(n) if (1..=MAX_LEN).contains(&n) => Ok(n),
                _ => Err(format!("`{t}` is not a length in 1..={MAX_LEN}")),
            }
        };
        let s = s.trim();
        if let Some(rest) = s.strip_prefix("normal:") {
            let (m, d) = rest
                .split_once(',')
                .ok_or_else(|| format!("`{s}`: write normal:MEAN,SD, e.g. normal:512,64"))?;
            let num = |t: &str| t.trim().parse::<f64>().ok().filter(|x| x.is_finite());
            match (num(m), num(d)) {
                (Some(mean), Some(sd))
                    if (1.0..=f64::from(MAX_LEN)).contains(&mean) && sd >= 0.0 =>
                {
                    Ok(Length::Normal { mean, sd })
                }
                _ => Err(format!(
                    "`{s}`: the mean must be in 1..={MAX_LEN} and the deviation at least 0"
                )),
            }
        } else if let Some(rest) = s.strip_prefix("uniform:") {
            let (lo, hi) = rest
                .split_once("..")
                .ok_or_else(|| format!("`{s}`: write uniform:LO..HI, e.g. uniform:128..1024"))?;
            let (lo, hi) = (int(lo)?, int(hi)?);
            if lo > hi {
                return Err(format!("`{s}`: LO must not be above HI"));
            }
            Ok(Length::Uniform { lo, hi })
        } else {
            int(s)
                .map(Length::Fixed)
                .map_err(|e| format!("{e} (or a distribution: normal:MEAN,SD or uniform:LO..HI)"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seed's draws are golden: the same on every machine.
    #[test]
    fn draws_are_golden_for_a_seed() {
        let mut r = metronome_core::rng::stream(42, metronome_core::rng::PURPOSE_LENGTHS);
        let u = Length::Uniform { lo: 1, hi: 10 };
        let got: Vec<u32> = (0..8).map(|_| u.draw(&mut r)).collect();
        let mut o = metronome_core::rng::stream(42, metronome_core::rng::PURPOSE_LENGTHS);
        let want: Vec<u32> = (0..8).map(|_| 1 + o.below(10) as u32).collect();
        assert_eq!(got, want);
        let n = Length::Normal {
            mean: 100.0,
            sd: 0.0,
        };
        assert!((0..10).all(|_| n.draw(&mut r) == 100));
    }

    /// Many draws have the law's mean and spread, and never leave 1..=MAX.
    #[test]
    fn normal_draws_have_the_laws_moments() {
        let mut r = Pcg32::seeded(7);
        let n = Length::Normal {
            mean: 512.0,
            sd: 64.0,
        };
        let xs: Vec<f64> = (0..20_000).map(|_| f64::from(n.draw(&mut r))).collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
        assert!((mean - 512.0).abs() < 2.0, "{mean}");
        assert!((var.sqrt() - 64.0).abs() < 2.0, "{}", var.sqrt());
        let wide = Length::Normal {
            mean: 2.0,
            sd: 100.0,
        };
        assert!((0..1000).all(|_| wide.draw(&mut r) >= 1));
    }

    #[test]
    fn bad_lengths_say_what_to_write() {
        for bad in [
            "",
            "x",
            "normal:5",
            "normal:0,1",
            "normal:5,-1",
            "uniform:5",
            "uniform:0..3",
        ] {
            assert!(bad.parse::<Length>().is_err(), "{bad}");
        }
        assert_eq!(Length::Uniform { lo: 1, hi: 2 }.to_string(), "uniform:1..2");
        assert_eq!(
            "normal:5,1".parse::<Length>().unwrap().to_string(),
            "normal:5,1"
        );
    }
}
