//! Rates that change over the run ([`Stages`]) and replayed offsets
//! ([`Trace`]): the two workload profiles beside a steady rate.
//!
//! A staged schedule is a time change of the steady one. The rate `r(t)`
//! follows the stages; `L(t)`, the integral of `r` from 0 to `t`, is the
//! expected number of arrivals before `t`. The arrival process first draws
//! *operational times* `u_0 <= u_1 <= ...` at unit rate (constant:
//! `u_i = i`; burst: `size` copies of `j * size`; Poisson and gamma: the
//! steady schedule's own construction at 1 arrival per unit), and arrival
//! `i` is at `t_i = L^-1(u_i)`, the first time after which `L` exceeds
//! `u_i` (so a stretch at rate 0 holds no arrival: one due at its start
//! waits for its end). Sharding happens on the unit-rate
//! sequence, exactly as for a steady rate, so every split gives the same
//! union. `L^-1` is computed in closed form on each stage (a quadratic
//! root for a linear ramp, a logarithm for an exponential one) from the
//! stage's exact start in nanoseconds, so no error accumulates across
//! stages; the time into the stage is rounded to the nanosecond.

use super::error::ScheduleError;
use super::offset::round_ns;

/// One stage: the rate moves from the previous stage's target (the first
/// stage: from [`Stages::start_rps`]) to `target_rps` over `duration_ns`.
/// A stage of 0 ns jumps to its target at once.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stage {
    /// How long the stage lasts, ns.
    pub duration_ns: u64,
    /// The rate at the stage's end, requests per second.
    pub target_rps: f64,
}

/// How the rate moves between two stage endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ramp {
    /// Linearly, as k6's `ramping-arrival-rate` and vLLM bench's
    /// `--ramp-up-strategy linear`: `r = a + (b - a) * x` at the fraction
    /// `x` of the stage.
    Linear,
    /// Geometrically, as vLLM bench's `--ramp-up-strategy exponential`:
    /// `r = a * (b / a)^x`. Every endpoint must be above 0 (a geometric
    /// ramp never leaves 0): [`ScheduleError::ZeroExponentialRate`].
    Exponential,
}

/// A rate that follows stages, from `start_rps` at offset 0; the run lasts
/// the sum of the stages' durations.
///
/// # Example
/// ```
/// use metronome_core::schedule::{Ramp, Stage, Stages};
/// // 0 -> 100 req/s over 1 s, then 100 -> 300 over 1 s: 50 + 200 expected.
/// let stages = [
///     Stage { duration_ns: 1_000_000_000, target_rps: 100.0 },
///     Stage { duration_ns: 1_000_000_000, target_rps: 300.0 },
/// ];
/// let s = Stages { start_rps: 0.0, stages: &stages, ramp: Ramp::Linear };
/// assert_eq!(s.total_ns(), 2_000_000_000);
/// assert_eq!(s.expected_before(1_000_000_000), 50.0);
/// assert_eq!(s.expected_before(2_000_000_000), 250.0);
/// assert_eq!(s.stage_of(1_000_000_000), Some(1));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stages<'a> {
    /// The rate at offset 0, requests per second.
    pub start_rps: f64,
    /// The stages, in order; at least one.
    pub stages: &'a [Stage],
    /// How the rate moves within each stage.
    pub ramp: Ramp,
}

impl Stages<'_> {
    /// Checks the stages.
    ///
    /// # Errors
    /// - [`ScheduleError::InvalidStages`]: no stage, a rate (start or
    ///   target) that is NaN, infinite or negative, durations that sum to 0
    ///   or overflow, or no rate above 0 anywhere.
    /// - [`ScheduleError::ZeroExponentialRate`]: an exponential ramp with
    ///   the start or a target at 0.
    pub fn validate(&self) -> Result<(), ScheduleError> {
        let ok_rate = |r: f64| r.is_finite() && r >= 0.0;
        if self.stages.is_empty()
            || !ok_rate(self.start_rps)
            || self.stages.iter().any(|s| !ok_rate(s.target_rps))
        {
            return Err(ScheduleError::InvalidStages);
        }
        let mut total = 0u64;
        for s in self.stages {
            total = total
                .checked_add(s.duration_ns)
                .ok_or(ScheduleError::InvalidStages)?;
        }
        if total == 0 || self.peak_rps() <= 0.0 {
            return Err(ScheduleError::InvalidStages);
        }
        if self.ramp == Ramp::Exponential
            && (self.start_rps <= 0.0 || self.stages.iter().any(|s| s.target_rps <= 0.0))
        {
            return Err(ScheduleError::ZeroExponentialRate);
        }
        Ok(())
    }

    /// The sum of the stages' durations, ns (saturating).
    #[must_use]
    pub fn total_ns(&self) -> u64 {
        self.stages
            .iter()
            .fold(0u64, |t, s| t.saturating_add(s.duration_ns))
    }

    /// The highest rate reached, requests per second.
    #[must_use]
    pub fn peak_rps(&self) -> f64 {
        self.stages
            .iter()
            .fold(self.start_rps, |m, s| m.max(s.target_rps))
    }

    /// Stage `index`'s span `[from, until)`, ns from the run start.
    ///
    /// # Panics
    /// When `index` is not below the number of stages.
    #[must_use]
    pub fn bounds_ns(&self, index: usize) -> (u64, u64) {
        let from = self.stages[..index]
            .iter()
            .fold(0u64, |t, s| t.saturating_add(s.duration_ns));
        (from, from.saturating_add(self.stages[index].duration_ns))
    }

    /// The stage an offset falls in (`from <= t_ns < until`); `None` at or
    /// after the end. A stage of 0 ns holds no offset.
    #[must_use]
    pub fn stage_of(&self, t_ns: u64) -> Option<usize> {
        let mut until = 0u64;
        for (i, s) in self.stages.iter().enumerate() {
            until = until.saturating_add(s.duration_ns);
            if t_ns < until {
                return Some(i);
            }
        }
        None
    }

    /// `L(t)`: the expected number of arrivals before `t_ns` (the integral
    /// of the rate), computed segment by segment as the schedule does.
    #[must_use]
    pub fn expected_before(&self, t_ns: u64) -> f64 {
        let mut sum = 0.0;
        let mut from = 0u64;
        let mut rate = self.start_rps;
        for s in self.stages {
            let seg = Segment::new(rate, s.target_rps, s.duration_ns, self.ramp);
            if t_ns >= from.saturating_add(s.duration_ns) {
                sum += seg.area;
            } else {
                sum += seg.area_until((t_ns - from) as f64 / 1e9);
                return sum;
            }
            from = from.saturating_add(s.duration_ns);
            rate = s.target_rps;
        }
        sum
    }
}

/// One stage's rate from `a` to `b` over `d` seconds, and its area.
#[derive(Clone, Copy, Debug)]
struct Segment {
    a: f64,
    b: f64,
    d: f64,
    /// Exponential: `ln(b / a)`; linear: unused.
    log_ratio: f64,
    ramp: Ramp,
    /// The expected arrivals in the whole stage.
    area: f64,
}

impl Segment {
    fn new(a: f64, b: f64, duration_ns: u64, ramp: Ramp) -> Segment {
        let d = duration_ns as f64 / 1e9;
        let mut seg = Segment {
            a,
            b,
            d,
            log_ratio: 0.0,
            ramp,
            area: 0.0,
        };
        seg.area = match ramp {
            Ramp::Linear => (a + b) * 0.5 * d,
            Ramp::Exponential if a == b || d == 0.0 => a * d,
            Ramp::Exponential => {
                seg.log_ratio = libm::log1p((b - a) / a);
                (b - a) * d / seg.log_ratio
            }
        };
        seg
    }

    /// Expected arrivals in the first `tau` seconds of the stage.
    fn area_until(&self, tau: f64) -> f64 {
        match self.ramp {
            Ramp::Linear => {
                let slope = if self.d > 0.0 {
                    (self.b - self.a) / self.d
                } else {
                    0.0
                };
                self.a * tau + 0.5 * slope * tau * tau
            }
            Ramp::Exponential if self.log_ratio == 0.0 => self.a * tau,
            Ramp::Exponential => {
                self.a * self.d / self.log_ratio * libm::expm1(self.log_ratio * tau / self.d)
            }
        }
    }

    /// The time into the stage, seconds, at which `c` (in `[0, area)`)
    /// arrivals are expected: the inverse of [`Segment::area_until`].
    fn time_of(&self, c: f64) -> f64 {
        if c <= 0.0 {
            return 0.0;
        }
        match self.ramp {
            Ramp::Linear => {
                // a tau + s tau^2 / 2 = c, the root that is the rate's own:
                // tau = 2c / (a + sqrt(a^2 + 2 s c)), free of cancellation.
                let slope = (self.b - self.a) / self.d;
                let disc = (self.a * self.a + 2.0 * slope * c).max(0.0);
                let den = self.a + libm::sqrt(disc);
                if den > 0.0 {
                    2.0 * c / den
                } else {
                    self.d
                }
            }
            Ramp::Exponential if self.log_ratio == 0.0 => c / self.a,
            Ramp::Exponential => {
                self.d * libm::log1p(c * self.log_ratio / (self.a * self.d)) / self.log_ratio
            }
        }
    }
}

/// The inverse of `L`, walked forward: operational times in, offsets out.
/// Each call's `u` must be at least the previous one's.
#[derive(Clone, Debug)]
pub(super) struct Curve<'a> {
    stages: Stages<'a>,
    /// The current stage.
    index: usize,
    seg: Segment,
    /// The stage's start, ns, and `L` there.
    from_ns: u64,
    before: f64,
}

impl<'a> Curve<'a> {
    pub(super) fn new(stages: Stages<'a>) -> Curve<'a> {
        let first = stages.stages[0];
        Curve {
            stages,
            index: 0,
            seg: Segment::new(
                stages.start_rps,
                first.target_rps,
                first.duration_ns,
                stages.ramp,
            ),
            from_ns: 0,
            before: 0.0,
        }
    }

    /// `L` at the end of the stages.
    pub(super) fn total(stages: &Stages<'_>) -> f64 {
        stages.expected_before(u64::MAX)
    }

    /// The offset of operational time `u`: its stage's start plus the time
    /// into the stage rounded to the ns; `None` when `u` is at or past the
    /// end of the stages.
    pub(super) fn offset(&mut self, u: f64) -> Option<u64> {
        if u.is_nan() {
            return None;
        }
        // Stages whose expected count ends at or before u hold no arrival
        // at u: move on (never back).
        while u >= self.before + self.seg.area {
            let next = self.stages.stages.get(self.index + 1)?;
            self.before += self.seg.area;
            self.from_ns = self
                .from_ns
                .saturating_add(self.stages.stages[self.index].duration_ns);
            let a = self.stages.stages[self.index].target_rps;
            self.index += 1;
            self.seg = Segment::new(a, next.target_rps, next.duration_ns, self.stages.ramp);
        }
        let tau = self.seg.time_of(u - self.before);
        Some(self.from_ns.saturating_add(round_ns(tau * 1e9)))
    }
}

/// Offsets replayed as given (a trace), scaled by `speed`.
///
/// # Example
/// ```
/// use metronome_core::schedule::Trace;
/// let t = Trace { offsets_ns: &[0, 10, 31], speed: 2.0 };
/// assert_eq!(t.offset(2), 16); // 31 / 2 = 15.5, rounded half away from zero
/// assert_eq!(t.end_ns(), 16 + 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Trace<'a> {
    /// Intended offsets, ns from the run start, non-decreasing.
    pub offsets_ns: &'a [u64],
    /// Time runs this many times faster than in the trace (2: twice as
    /// fast); 1 replays the offsets exactly.
    pub speed: f64,
}

impl Trace<'_> {
    /// Checks the trace.
    ///
    /// # Errors
    /// - [`ScheduleError::InvalidTraceSpeed`]: a speed that is NaN,
    ///   infinite, zero or negative.
    /// - [`ScheduleError::UnsortedTrace`]: an offset below the one before.
    pub fn validate(&self) -> Result<(), ScheduleError> {
        if !(self.speed.is_finite() && self.speed > 0.0) {
            return Err(ScheduleError::InvalidTraceSpeed);
        }
        if self.offsets_ns.windows(2).any(|w| w[1] < w[0]) {
            return Err(ScheduleError::UnsortedTrace);
        }
        Ok(())
    }

    /// Offset `i` as replayed: exactly the trace's at speed 1, else
    /// `round(offset / speed)` (halves away from zero).
    ///
    /// # Panics
    /// When `i` is not below the number of offsets.
    #[must_use]
    pub fn offset(&self, i: usize) -> u64 {
        let o = self.offsets_ns[i];
        if self.speed == 1.0 {
            o
        } else {
            round_ns(o as f64 / self.speed)
        }
    }

    /// The end of a replay that keeps every offset: the last one plus 1 ns
    /// (1 for an empty trace).
    #[must_use]
    pub fn end_ns(&self) -> u64 {
        match self.offsets_ns.len() {
            0 => 1,
            n => self.offset(n - 1).saturating_add(1),
        }
    }

    /// How many replayed offsets fall in `[from_ns, until_ns)`.
    #[must_use]
    pub fn count_between(&self, from_ns: u64, until_ns: u64) -> u64 {
        let first = self.partition(from_ns);
        let end = self.partition(until_ns);
        end.saturating_sub(first) as u64
    }

    /// The number of replayed offsets below `t_ns` (they are sorted).
    fn partition(&self, t_ns: u64) -> usize {
        let (mut lo, mut hi) = (0usize, self.offsets_ns.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.offset(mid) < t_ns {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}
