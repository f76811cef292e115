//! [`ScheduleError`]: why a schedule could not be built, each variant with
//! its fix.

use core::fmt;

/// Why a [`Schedule`](super::Schedule) could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScheduleError {
    /// The rate was NaN, infinite, zero or negative; give a finite rate above
    /// 0 requests per second.
    InvalidRate,
    /// [`Arrival::Burst`](super::Arrival::Burst) with `size` 0; a burst
    /// holds at least one request.
    EmptyBurst,
    /// [`Arrival::Gamma`](super::Arrival::Gamma) with a `burstiness` that is
    /// NaN, infinite, zero or negative; give a finite shape above 0 (1.0 is
    /// Poisson).
    InvalidBurstiness,
    /// The shard `count` was 0 or its `index` was not below `count`; shards
    /// are numbered `0..count`.
    InvalidShard,
    /// [`Stages`](super::Stages) with no stage, a rate that is NaN, infinite or negative,
    /// durations that sum to 0 (or overflow), or no rate above 0 anywhere;
    /// give at least one stage of a positive duration reaching a positive rate.
    InvalidStages,
    /// An exponential [`Ramp`](super::Ramp) with the start rate or a target at 0: a
    /// geometric ramp never leaves 0. Start from a positive rate (e.g. 1
    /// request per second) or use a linear ramp.
    ZeroExponentialRate,
    /// A [`Trace`](super::Trace) whose offsets go back; sort them.
    UnsortedTrace,
    /// A [`Trace`](super::Trace) speed that is NaN, infinite, zero or negative; give a
    /// finite factor above 0 (2 replays twice as fast).
    InvalidTraceSpeed,
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
            ScheduleError::InvalidStages => {
                "the stages must be at least one, with finite rates of 0 or more, a positive \
                 total duration and a rate above 0 somewhere"
            }
            ScheduleError::ZeroExponentialRate => {
                "an exponential ramp cannot start from or reach 0 requests per second"
            }
            ScheduleError::UnsortedTrace => "the trace's offsets must not go back",
            ScheduleError::InvalidTraceSpeed => "the trace speed must be a finite number above 0",
        })
    }
}

impl core::error::Error for ScheduleError {}

#[cfg(test)]
mod tests {
    use super::*;

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
