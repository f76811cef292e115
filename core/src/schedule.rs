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
//! | [`Arrival::Poisson`] | windows of `4 / rate` s, each with a Poisson(4) count of uniform arrivals | arrivals `k, k + n, k + 2n, ...` of the whole sequence |
//! | [`Arrival::Burst`] | `size` copies of `round(j * size * 1e9 / rate)`, the first at 0 | request `m` of each burst goes to shard `m % n` |
//! | [`Arrival::Gamma`] | running sum of gamma gaps, mean `1 / rate` s, drawn in blocks of 16 arrivals | blocks `k, k + n, k + 2n, ...` (16 consecutive arrivals each) |
//! | any, through [`Stages`] ([`Schedule::staged`]) | the process at unit rate, time-changed: arrival at `L^-1(u)`, `L` the integral of the stages' rate | as the process at a steady rate |
//! | a [`Trace`] ([`Schedule::trace`]) | the trace's offsets, scaled by its speed | offsets `k, k + n, k + 2n, ...` |
//!
//! The schedule is a function of the arrival process, the rate, the seed and
//! the end only: for every process the shards are disjoint and their union
//! (as a multiset) is exactly the whole schedule, whatever the shard count. A
//! run split over threads and machines (the io_uring engine gives thread `t`
//! of `T` inside shard `k` of `n` the shard `k + n*t` of `n*T`) sends the same
//! offsets as one thread on one machine.
//!
//! What deciding the next offset costs per offset a shard keeps: constant and
//! burst O(1); Poisson O(1) plus one cheap count draw per 4 arrivals of the
//! whole run (a shard of `n` skips about `n / 4` windows per offset, never
//! placing their arrivals); gamma O(1) plus one gamma draw per 16 arrivals of
//! the whole run (a shard of `n` draws the length of each of the others'
//! blocks, about `n` draws per 16 offsets it keeps). `benches/shards.rs`
//! measures it.
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

mod gamma;
mod ramp;
mod ziggurat_tables;

use gamma::Gamma;
use ramp::Curve;
pub use ramp::{Ramp, Stage, Stages, Trace};

/// 2^-53: a 53-bit integer times this is a uniform in `[0, 1)`.
const UNIT: f64 = 1.0 / 9_007_199_254_740_992.0;

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

    /// Part `t` of this shard split over `threads` engine threads: the
    /// shard `index + count * t` of `count * threads`. The parts of every
    /// thread together are exactly this shard, for every arrival process
    /// (`tests/sim_shards.rs`), so a seed reproduces across machines of
    /// any core count.
    ///
    /// ```
    /// use metronome_core::schedule::Shard;
    /// let machine = Shard { index: 1, count: 3 };
    /// assert_eq!(machine.split(2, 4), Shard { index: 7, count: 12 });
    /// assert_eq!(Shard::WHOLE.split(0, 1), Shard::WHOLE);
    /// ```
    pub const fn split(self, t: u32, threads: u32) -> Shard {
        Shard {
            index: self.index + self.count * t,
            count: self.count * threads,
        }
    }
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
    /// [`Stages`] with no stage, a rate that is NaN, infinite or negative,
    /// durations that sum to 0 (or overflow), or no rate above 0 anywhere;
    /// give at least one stage of a positive duration reaching a positive rate.
    InvalidStages,
    /// An exponential [`Ramp`] with the start rate or a target at 0: a
    /// geometric ramp never leaves 0. Start from a positive rate (e.g. 1
    /// request per second) or use a linear ramp.
    ZeroExponentialRate,
    /// A [`Trace`] whose offsets go back; sort them.
    UnsortedTrace,
    /// A [`Trace`] speed that is NaN, infinite, zero or negative; give a
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

/// The iterator of intended send offsets (nanoseconds from the run start) of
/// one shard of a run. Allocation-free, with O(1) state (a few hundred bytes).
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
/// - **Poisson**: time is cut into windows of `W = 4 / rate` seconds. Window
///   `w` holds `N_w` arrivals, `N_w ~ Poisson(4)` by inversion of a fixed
///   table (`P(N <= j) * 2^53`, rounded) at the `w`-th 53-bit uniform
///   (the integer behind [`Pcg32::next_f64`]) of `stream(seed,
///   PURPOSE_ARRIVALS)`; its arrivals are at `(w + v / 2^53) * W`, for `N_w`
///   53-bit uniforms `v` from `stream(child_seed(seed, PURPOSE_ARRIVALS), w)`
///   in increasing order, each offset rounded to the nearest ns. Independent
///   Poisson counts on disjoint intervals, uniform positions given the
///   count: a Poisson process at `rate`. Arrivals are numbered in that order
///   over the whole run and shard `index` of `count` keeps numbers
///   `index, index + count, ...`; the counts alone number the arrivals, so a
///   shard draws the positions of only the windows that hold one of its own.
/// - **Gamma** `{ burstiness: k }`: gaps `g / k / rate` s with `g ~ Gamma(k, 1)`,
///   the first arrival one gap after 0, drawn in blocks of 16 arrivals so
///   that a shard need not place the others' arrivals. Block `b` lasts
///   `S_b ~ Gamma(16 k, 1)` units (the `b`-th draw of `stream(seed,
///   PURPOSE_ARRIVALS)`) from `T_b = S_0 + ... + S_(b-1)`; its arrivals are
///   at `T_b + S_b * c_j / c_15`, `c_j` the running sums of 16 `Gamma(k, 1)`
///   draws from `stream(child_seed(seed, PURPOSE_ARRIVALS), b)`, in units of
///   `1 / (k * rate)` s, each offset rounded to the nearest ns. Since the
///   proportions of 16 gamma draws to their sum are independent of the sum
///   (itself `Gamma(16 k)`), the gaps are independent `Gamma(k)` draws, as
///   a plain running sum would give. Gamma variates are Marsaglia-Tsang on
///   256-layer ziggurat normals (shapes below 1 boosted by `exp(-E / k)`,
///   `E` from an exponential ziggurat). Shard `index` of `count` keeps the
///   blocks `index, index + count, ...`: runs of 16 consecutive arrivals,
///   the others' blocks costing it one draw each.
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
pub struct Schedule<'a> {
    end_ns: u64,
    done: bool,
    kind: Kind<'a>,
}

#[derive(Clone, Debug)]
enum Kind<'a> {
    Grid(Grid),
    Poisson(Poisson),
    Gamma(Gamma),
    /// A time change of a unit-rate sequence through the stages' curve.
    Staged {
        unit: Unit,
        curve: Curve<'a>,
    },
    /// A trace's offsets `index, index + step, ...`.
    Trace {
        trace: Trace<'a>,
        index: usize,
        step: usize,
    },
}

/// The operational times of a staged schedule: the steady constructions at
/// one arrival per unit.
#[derive(Clone, Debug)]
enum Unit {
    /// Constant and burst: multiplier `a` of the unit grid, `copies` each.
    Grid {
        a: u64,
        step: u64,
        copies: u32,
        left: u32,
    },
    Poisson(Poisson),
    Gamma(Gamma),
}

impl Unit {
    #[inline]
    fn next(&mut self) -> Option<f64> {
        match self {
            Unit::Grid {
                a,
                step,
                copies,
                left,
            } => {
                if *copies == 0 {
                    return None;
                }
                let u = *a as f64;
                *left -= 1;
                if *left == 0 {
                    *left = *copies;
                    *a = a.checked_add(*step)?;
                }
                Some(u)
            }
            Unit::Poisson(p) => p.next_at(),
            Unit::Gamma(g) => Some(g.next_at()),
        }
    }
}

/// The checks every constructor makes on the arrival process and the shard.
fn check_process(arrival: Arrival, shard: Shard) -> Result<(), ScheduleError> {
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
    Ok(())
}

/// Requests `m` in `0..size` with `m % count == index`: a shard's copies of
/// each burst.
fn burst_copies(size: u32, index: u32, count: u32) -> u32 {
    if index < size {
        (size - 1 - index) / count + 1
    } else {
        0
    }
}

impl Schedule<'static> {
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
    /// use metronome_core::schedule::{Arrival, Schedule, ScheduleError, Shard};
    ///
    /// // Three shards of a Poisson schedule hold exactly its arrivals.
    /// let end = 10_000_000_000;
    /// let whole: Vec<u64> = Schedule::new(Arrival::Poisson, 100.0, 7, end, Shard::WHOLE)?.collect();
    /// let mut union = Vec::new();
    /// for index in 0..3 {
    ///     union.extend(Schedule::new(Arrival::Poisson, 100.0, 7, end, Shard { index, count: 3 })?);
    /// }
    /// union.sort_unstable();
    /// assert_eq!(union, whole);
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
    ) -> Result<Schedule<'static>, ScheduleError> {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(ScheduleError::InvalidRate);
        }
        check_process(arrival, shard)?;
        let (k, n) = (shard.index, shard.count);
        let kind = match arrival {
            Arrival::Constant => Kind::Grid(Grid::new(rate, u128::from(k), u128::from(n), 1)),
            Arrival::Burst { size } => Kind::Grid(Grid::new(
                rate,
                0,
                u128::from(size),
                burst_copies(size, k, n),
            )),
            Arrival::Poisson => Kind::Poisson(Poisson::steady(seed, rate, end_ns, k, n)),
            Arrival::Gamma { burstiness } => Kind::Gamma(Gamma::new(
                seed,
                burstiness,
                1e9 / (burstiness * rate),
                k,
                n,
            )),
        };
        let done = matches!(&kind, Kind::Grid(g) if g.copies == 0);
        Ok(Schedule { end_ns, done, kind })
    }
}

impl<'a> Schedule<'a> {
    /// The schedule of `shard` for `arrival` with the rate following
    /// `stages` (see the [`ramp` construction](Stages)), seeded with `seed`,
    /// producing offsets below `end_ns`.
    ///
    /// Arrival `i` of the whole run is at `L^-1(u_i)`, `L` the expected
    /// count (the integral of the rate) and `u_i` the steady construction's
    /// arrival `i` at one arrival per second, read in arrivals: constant
    /// `u_i = i` (so a stage at a steady `r` places them `1 / r` apart, the
    /// first at the stage's start); burst `size` copies of `j * size`;
    /// Poisson and gamma their windows and blocks at unit rate, each
    /// operational time unrounded. Shards split the unit-rate sequence as
    /// [`Schedule::new`] does. The offset of `u` in stage `j` is the
    /// stage's start `T_j` (exact, ns) plus the time into the stage at
    /// which `L - L(T_j) = u - L(T_j)`, in closed form, rounded to the ns
    /// (halves away from zero): the root `2c / (a + sqrt(a^2 + 2 s c))` of
    /// a linear ramp from `a` at slope `s`, `d ln(1 + c ln(b/a) / (a d)) /
    /// ln(b/a)` of an exponential ramp from `a` to `b` over `d` seconds.
    ///
    /// # Errors
    /// [`ScheduleError::InvalidStages`], [`ScheduleError::ZeroExponentialRate`]
    /// ([`Stages::validate`]), and those of the process and the shard as
    /// for [`Schedule::new`].
    ///
    /// # Example
    /// ```
    /// use metronome_core::schedule::{Arrival, Ramp, Schedule, Shard, Stage, Stages};
    /// // 0 -> 4 req/s over 1 s: L(t) = 2 t^2, arrival i at sqrt(i / 2) s.
    /// let stages = [Stage { duration_ns: 1_000_000_000, target_rps: 4.0 }];
    /// let ramp = Stages { start_rps: 0.0, stages: &stages, ramp: Ramp::Linear };
    /// let s = Schedule::staged(Arrival::Constant, ramp, 0, 1_000_000_000, Shard::WHOLE)?;
    /// assert!(s.eq([0, 707_106_781]));
    /// # Ok::<(), metronome_core::schedule::ScheduleError>(())
    /// ```
    pub fn staged(
        arrival: Arrival,
        stages: Stages<'a>,
        seed: u64,
        end_ns: u64,
        shard: Shard,
    ) -> Result<Schedule<'a>, ScheduleError> {
        stages.validate()?;
        check_process(arrival, shard)?;
        let (k, n) = (shard.index, shard.count);
        let unit = match arrival {
            Arrival::Constant => Unit::Grid {
                a: u64::from(k),
                step: u64::from(n),
                copies: 1,
                left: 1,
            },
            Arrival::Burst { size } => {
                let copies = burst_copies(size, k, n);
                Unit::Grid {
                    a: 0,
                    step: u64::from(size),
                    copies,
                    left: copies,
                }
            }
            Arrival::Poisson => {
                // Windows of 4 units; the first starting at or after the
                // end of the stages holds nothing.
                let windows = libm::ceil(Curve::total(&stages) / WINDOW_MEAN);
                let end_window = if windows >= 1.8e19 {
                    u64::MAX
                } else {
                    (windows as u64).max(1)
                };
                Unit::Poisson(Poisson::new(seed, WINDOW_MEAN, end_window, k, n))
            }
            Arrival::Gamma { burstiness } => {
                Unit::Gamma(Gamma::new(seed, burstiness, 1.0 / burstiness, k, n))
            }
        };
        let done = matches!(unit, Unit::Grid { copies: 0, .. });
        Ok(Schedule {
            end_ns,
            done,
            kind: Kind::Staged {
                unit,
                curve: Curve::new(stages),
            },
        })
    }

    /// The schedule of `shard` replaying `trace`: offset `i` of the trace
    /// (scaled by its speed, [`Trace::offset`]) for `i = index, index +
    /// count, ...`, those below `end_ns`.
    ///
    /// # Errors
    /// [`ScheduleError::UnsortedTrace`], [`ScheduleError::InvalidTraceSpeed`]
    /// ([`Trace::validate`]) and [`ScheduleError::InvalidShard`].
    ///
    /// # Example
    /// ```
    /// use metronome_core::schedule::{Schedule, Shard, Trace};
    /// let trace = Trace { offsets_ns: &[0, 5, 5, 9, 12], speed: 1.0 };
    /// let odd = Schedule::trace(trace, 10, Shard { index: 1, count: 2 })?;
    /// assert!(odd.eq([5, 9]));
    /// # Ok::<(), metronome_core::schedule::ScheduleError>(())
    /// ```
    pub fn trace(
        trace: Trace<'a>,
        end_ns: u64,
        shard: Shard,
    ) -> Result<Schedule<'a>, ScheduleError> {
        trace.validate()?;
        check_process(Arrival::Constant, shard)?;
        Ok(Schedule {
            end_ns,
            done: false,
            kind: Kind::Trace {
                trace,
                index: shard.index as usize,
                step: shard.count as usize,
            },
        })
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

impl Iterator for Schedule<'_> {
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
            Kind::Staged { unit, curve } => unit
                .next()
                .and_then(|u| curve.offset(u))
                .filter(|&t| t < self.end_ns),
            Kind::Trace { trace, index, step } => {
                let at = (*index < trace.offsets_ns.len()).then(|| trace.offset(*index));
                *index = index.saturating_add(*step);
                at.filter(|&t| t < self.end_ns)
            }
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
            Kind::Poisson(_) | Kind::Gamma(_) | Kind::Staged { .. } | Kind::Trace { .. } => {
                for _ in 0..n {
                    self.next()?;
                }
                self.next()
            }
        }
    }
}

impl FusedIterator for Schedule<'_> {}

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
#[cfg(test)]
fn offset_ns(t_s: f64, end_ns: u64) -> Option<u64> {
    offset_ns_of(t_s * 1e9, end_ns)
}

/// Nanoseconds rounded half away from zero; `None` at or after `end_ns`, and
/// for NaN.
#[inline]
fn offset_ns_of(ns: f64, end_ns: u64) -> Option<u64> {
    let offset = round_ns(ns);
    if ns.is_nan() || offset >= end_ns {
        None
    } else {
        Some(offset)
    }
}

/// Expected arrivals per Poisson window: a window lasts `WINDOW_MEAN / rate`
/// seconds. 4 balances what a shard of `n` pays per offset it keeps: about
/// `n / 4` count draws for the windows it skips, and the positions of one
/// window (about 5 draws, sorted by an 8-value network).
const WINDOW_MEAN: f64 = 4.0;

/// `P(N <= j) * 2^53` rounded to the nearest integer for `N ~ Poisson(4)`,
/// computed once to 80 significant digits (Python's `decimal`; the golden
/// tests recompute it in exact integer arithmetic); the last
/// entry is `2^53`, so a 53-bit uniform always finds its count and a window
/// holds at most `POISSON_CDF.len() - 1 = 30` arrivals (the tail beyond has
/// probability below 2^-54). Fixed numbers rather than a run-time `exp`: the
/// schedule cannot change with a math library.
const POISSON_CDF: [u64; 31] = [
    164_972_608_948_712,
    824_863_044_743_558,
    2_144_643_916_333_251,
    3_904_351_745_119_509,
    5_664_059_573_905_766,
    7_071_825_836_934_772,
    8_010_336_678_954_110,
    8_546_628_588_679_445,
    8_814_774_543_542_113,
    8_933_950_523_481_077,
    8_981_620_915_456_662,
    8_998_955_603_447_784,
    9_004_733_832_778_158,
    9_006_511_749_495_196,
    9_007_019_725_700_064,
    9_007_155_186_021_362,
    9_007_189_051_101_687,
    9_007_197_019_355_881,
    9_007_198_790_079_035,
    9_007_199_162_862_857,
    9_007_199_237_419_621,
    9_007_199_251_620_910,
    9_007_199_254_202_962,
    9_007_199_254_652_015,
    9_007_199_254_726_857,
    9_007_199_254_738_832,
    9_007_199_254_740_674,
    9_007_199_254_740_947,
    9_007_199_254_740_986,
    9_007_199_254_740_991,
    1 << 53,
];

/// `GUIDE[b]` is the number of [`POISSON_CDF`] thresholds at or below
/// `b * 2^45`, the smallest 53-bit uniform whose top 8 bits are `b`.
const GUIDE: [u8; 256] = guide();

const fn guide() -> [u8; 256] {
    let mut out = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let u = (b as u64) << 45;
        let mut len = 0;
        while POISSON_CDF[len] <= u {
            len += 1;
        }
        // len <= WINDOW_CAP = 30.
        out[b] = len as u8;
        b += 1;
    }
    out
}

/// Sorts 8 values with a 19-comparator network (Batcher's odd-even merge
/// sort, checked on every 0-1 input by the unit tests), branch-free.
#[inline]
fn sort_8(a: &mut [u64; 8]) {
    macro_rules! cx {
        ($($i:literal $j:literal),*) => {$(
            let (x, y) = (a[$i], a[$j]);
            a[$i] = x.min(y);
            a[$j] = x.max(y);
        )*};
    }
    cx!(0 2, 1 3, 4 6, 5 7, 0 4, 1 5, 2 6, 3 7, 0 1, 2 3);
    cx!(4 5, 6 7, 2 4, 3 5, 1 4, 3 6, 1 2, 3 4, 5 6);
}

/// The most arrivals a Poisson window can hold.
const WINDOW_CAP: usize = POISSON_CDF.len() - 1;

/// The 53-bit integer behind [`Pcg32::next_f64`]: `(x1 >> 5) * 2^26 + (x2 >> 6)`.
#[inline]
fn next_u53(rng: &mut Pcg32) -> u64 {
    let a = u64::from(rng.next_u32() >> 5);
    let b = u64::from(rng.next_u32() >> 6);
    (a << 26) | b
}

/// The Poisson schedule, cut into windows of `WINDOW_MEAN / rate` seconds.
///
/// Window `w` holds `N_w ~ Poisson(WINDOW_MEAN)` arrivals (the `w`-th draw of
/// the counts stream, by inversion of [`POISSON_CDF`]) at `(w + v) * window`
/// for `N_w` uniforms `v` from the window's own stream, taken in increasing
/// order. This is the textbook construction of a Poisson process (the counts
/// of disjoint intervals are independent Poisson variates, and given its
/// count an interval's arrivals are independent uniforms), and it lets a shard
/// number every arrival of the run without placing it: the counts alone give
/// the global index of each window's first arrival, and only the windows that
/// hold one of the shard's arrivals are drawn.
#[derive(Clone, Debug)]
struct Poisson {
    /// One draw per window, in order: `stream(seed, PURPOSE_ARRIVALS)`.
    counts: Pcg32,
    /// Window `w`'s positions come from `stream(windows, w)`.
    windows: u64,
    /// The window length in nanoseconds.
    window_ns: f64,
    /// The first window that starts at or after the end (rounded as offsets are).
    end_window: u64,
    /// The current window.
    window: u64,
    /// Its arrival count.
    len: u32,
    /// The rank (0-based, in time order, counted from the current window's
    /// first arrival) of this shard's next arrival: at or past `len` when it
    /// lies in a later window.
    until: u64,
    count: u64,
    /// The current window's positions in increasing order (the first `len`),
    /// filled only when the window holds one of this shard's arrivals.
    sorted: [u64; WINDOW_CAP],
}

impl Poisson {
    /// The steady schedule at `rate`: windows of `4 / rate` s, in ns, up to
    /// the first window that starts at or after `end_ns` (rounded as
    /// offsets are).
    fn steady(seed: u64, rate: f64, end_ns: u64, index: u32, count: u32) -> Poisson {
        let window_ns = WINDOW_MEAN * 1e9 / rate;
        // The first w >= 1 whose start rounds to end_ns or later (offsets of
        // window w are at least its start's); the start is monotone in w.
        let starts_late = |w: u64| round_ns(w as f64 * window_ns) >= end_ns;
        let (mut lo, mut hi) = (1u64, u64::MAX);
        if starts_late(hi) {
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if starts_late(mid) {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
        }
        Poisson::new(seed, window_ns, hi, index, count)
    }

    /// Windows of `window` (in the caller's unit: ns, or arrivals), the
    /// windows from `end_window` on left out.
    fn new(seed: u64, window_ns: f64, end_window: u64, index: u32, count: u32) -> Poisson {
        let mut p = Poisson {
            counts: stream(seed, PURPOSE_ARRIVALS),
            windows: child_seed(seed, PURPOSE_ARRIVALS),
            window_ns,
            end_window,
            window: 0,
            len: 0,
            until: u64::from(index),
            count: u64::from(count),
            sorted: [0; WINDOW_CAP],
        };
        p.len = p.draw_len();
        if p.until < u64::from(p.len) {
            p.fill();
        }
        p
    }

    /// The next window's arrival count, by inversion: the number of
    /// thresholds at or below a 53-bit uniform `u`. [`GUIDE`] gives that
    /// number at the start of `u`'s 1/256 of the range; at most a step or two
    /// is left.
    #[inline]
    fn draw_len(&mut self) -> u32 {
        let u = next_u53(&mut self.counts);
        // u >> 45 < 256.
        let mut len = usize::from(GUIDE[(u >> 45) as usize]);
        // The last threshold, 2^53, is above every u: the walk stops by
        // WINDOW_CAP.
        while POISSON_CDF[len] <= u {
            len += 1;
        }
        len as u32
    }

    /// Draws the current window's positions into `sorted`, in increasing
    /// order.
    fn fill(&mut self) {
        let mut rng = stream(self.windows, self.window);
        let len = self.len as usize;
        if len <= 8 {
            // Pad to 8 and sort with a branch-free network: a window holds
            // 4 on average, and 95% hold at most 7.
            let mut a = [u64::MAX; 8];
            for slot in &mut a[..len] {
                *slot = next_u53(&mut rng);
            }
            sort_8(&mut a);
            self.sorted[..8].copy_from_slice(&a);
        } else {
            let slots = &mut self.sorted[..len];
            for slot in slots.iter_mut() {
                *slot = next_u53(&mut rng);
            }
            slots.sort_unstable();
        }
    }

    #[inline]
    fn next(&mut self, end_ns: u64) -> Option<u64> {
        offset_ns_of(self.next_at()?, end_ns)
    }

    /// The next arrival's position, unrounded (in the window's unit).
    #[inline]
    fn next_at(&mut self) -> Option<f64> {
        if self.until >= u64::from(self.len) {
            // Skip windows by their counts alone.
            loop {
                self.until -= u64::from(self.len);
                self.window += 1;
                if self.window >= self.end_window {
                    return None;
                }
                self.len = self.draw_len();
                if self.until < u64::from(self.len) {
                    break;
                }
            }
            self.fill();
        }
        // until < len <= 30.
        let v = self.sorted[self.until as usize];
        self.until += self.count;
        // v < 2^53: exact, and w + v / 2^53 <= w + 1 after rounding, so the
        // offsets never decrease from one window to the next.
        Some((self.window as f64 + v as f64 * UNIT) * self.window_ns)
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
    fn sort_8_sorts_every_0_1_input_and_random_ones() {
        // The 0-1 principle: a comparator network that sorts every 0-1
        // input sorts every input.
        for bits in 0u32..256 {
            let mut a: [u64; 8] = core::array::from_fn(|i| u64::from(bits >> i & 1));
            sort_8(&mut a);
            assert!(a.windows(2).all(|w| w[0] <= w[1]), "{bits:08b}");
            assert_eq!(a.iter().sum::<u64>(), u64::from(bits.count_ones()));
        }
        let mut rng = Pcg32::seeded(3);
        for _ in 0..1000 {
            let mut a: [u64; 8] = core::array::from_fn(|_| u64::from(rng.next_u32() % 5));
            let mut want = a;
            want.sort_unstable();
            sort_8(&mut a);
            assert_eq!(a, want);
        }
    }

    #[test]
    fn poisson_table_and_guide_agree() {
        assert!(POISSON_CDF.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(POISSON_CDF[WINDOW_CAP], 1 << 53);
        // P(N = 0) = e^-4 and the mean is 4, to the table's precision.
        let two53 = 9_007_199_254_740_992.0;
        assert!((POISSON_CDF[0] as f64 / two53 - libm::exp(-4.0)).abs() < 1e-15);
        let mean: f64 = (0..WINDOW_CAP)
            .map(|j| 1.0 - POISSON_CDF[j] as f64 / two53)
            .sum();
        assert!((mean - 4.0).abs() < 1e-12, "{mean}");
        for b in 0..256u64 {
            let u = b << 45;
            let want = POISSON_CDF.iter().filter(|&&c| c <= u).count();
            assert_eq!(usize::from(GUIDE[b as usize]), want, "bucket {b}");
        }
        // The inversion at every threshold and either side of it.
        let mut p = Poisson::steady(0, 1.0, u64::MAX, 0, 1);
        for (j, &c) in POISSON_CDF[..WINDOW_CAP].iter().enumerate() {
            for (u, want) in [(c - 1, j), (c, j + 1), (c + 1, j + 1)] {
                if u >= 1 << 53 {
                    continue;
                }
                let mut len = usize::from(GUIDE[(u >> 45) as usize]);
                while POISSON_CDF[len] <= u {
                    len += 1;
                }
                assert_eq!(len, want, "u {u}");
            }
        }
        // draw_len is that inversion of the counts stream's next_f64.
        let mut oracle = p.counts.clone();
        for _ in 0..10_000 {
            let u = (oracle.next_f64() * two53) as u64;
            let want = POISSON_CDF.iter().filter(|&&c| c <= u).count();
            assert_eq!(p.draw_len() as usize, want);
        }
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
