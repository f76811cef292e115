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
//! One file per arrival process: `grid.rs` (constant and burst), `poisson.rs`,
//! `gamma.rs` (with its generated `ziggurat_tables.rs`); `ramp.rs` holds
//! stages, ramps and traces, `offset.rs` the rounding they all share and
//! `error.rs` [`ScheduleError`]. This file holds [`Arrival`], [`Shard`] and
//! the [`Schedule`] iterator that dispatches to them.
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

use core::iter::FusedIterator;

mod error;
mod gamma;
mod grid;
mod offset;
mod poisson;
mod ramp;
mod ziggurat_tables;

pub use error::ScheduleError;
use gamma::Gamma;
use grid::Grid;
use poisson::{Poisson, WINDOW_MEAN};
use ramp::Curve;
pub use ramp::{Ramp, Stage, Stages, Trace};

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
    /// (`tests/sim/shards.rs`), so a seed reproduces across machines of
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

    /// Arrival `k` of this shard (its own count, from 0) numbered in the
    /// whole run: `index + k * count`, wrapping. A weighted mix picks each
    /// arrival's request by this number, so a seed reproduces across
    /// machines ([`Plan::request_index`](crate::plan::Plan::request_index)).
    ///
    /// ```
    /// use metronome_core::schedule::Shard;
    /// assert_eq!(Shard { index: 1, count: 3 }.global(4), 13);
    /// assert_eq!(Shard::WHOLE.global(4), 4);
    /// ```
    pub const fn global(self, k: u64) -> u64 {
        (self.index as u64).wrapping_add(k.wrapping_mul(self.count as u64))
    }

    /// Arrival `k` of part `part`, when `parts` parts deal a shard's
    /// arrivals in turn (as [`Shard::split`] deals them over engine
    /// threads, and the closed model over its workers), numbered in the
    /// shard's own count: `part + k * parts`, wrapping. For the threads of
    /// a split, `shard.split(t, n).global(k) ==
    /// shard.global(Shard::dealt(t, n, k))`.
    ///
    /// ```
    /// use metronome_core::schedule::Shard;
    /// let machine = Shard { index: 1, count: 3 };
    /// assert_eq!(Shard::dealt(2, 4, 5), 22);
    /// assert_eq!(machine.split(2, 4).global(5), machine.global(22));
    /// ```
    pub const fn dealt(part: u64, parts: u64, k: u64) -> u64 {
        part.wrapping_add(k.wrapping_mul(parts))
    }
}

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
///   (the integer behind [`Pcg32::next_f64`](crate::rng::Pcg32::next_f64))
///   of `stream(seed, PURPOSE_ARRIVALS)`; its arrivals are at
///   `(w + v / 2^53) * W`, for `N_w`
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
    /// The first arrivals of the whole run kept ([`Schedule::first`]):
    /// `u64::MAX` for all of them.
    limit: u64,
    /// How this shard's arrivals are numbered in the whole run.
    numbering: Numbering,
    /// This shard's arrivals produced so far.
    taken: u64,
}

/// How arrival `k` of a shard is numbered among the arrivals of the whole
/// run, in the order of their offsets (ties in the order the whole
/// schedule produces them).
#[derive(Clone, Copy, Debug)]
enum Numbering {
    /// `index + k * count` (constant, Poisson, traces).
    Dealt(Shard),
    /// `copies` of each burst of `size`: request `index + r * count` of
    /// burst `k / copies`, `r = k % copies`.
    Burst {
        shard: Shard,
        size: u64,
        copies: u64,
    },
    /// Blocks `index, index + count, ...` of `len` consecutive arrivals
    /// (gamma).
    Blocks { shard: Shard, len: u64 },
}

impl Numbering {
    /// The number of this shard's arrival `k` in the whole run (saturating).
    fn global(self, k: u64) -> u64 {
        match self {
            Numbering::Dealt(shard) => {
                u64::from(shard.index).saturating_add(k.saturating_mul(u64::from(shard.count)))
            }
            Numbering::Burst {
                shard,
                size,
                copies,
            } => (k / copies.max(1))
                .saturating_mul(size)
                .saturating_add(u64::from(shard.index))
                .saturating_add((k % copies.max(1)).saturating_mul(u64::from(shard.count))),
            Numbering::Blocks { shard, len } => u64::from(shard.index)
                .saturating_add((k / len).saturating_mul(u64::from(shard.count)))
                .saturating_mul(len)
                .saturating_add(k % len),
        }
    }

    /// The numbering of `arrival` for `shard`.
    fn of(arrival: Arrival, shard: Shard) -> Numbering {
        match arrival {
            Arrival::Constant | Arrival::Poisson => Numbering::Dealt(shard),
            Arrival::Burst { size } => Numbering::Burst {
                shard,
                size: u64::from(size),
                copies: u64::from(burst_copies(size, shard.index, shard.count)),
            },
            Arrival::Gamma { .. } => Numbering::Blocks {
                shard,
                len: gamma::BLOCK as u64,
            },
        }
    }
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
        Ok(Schedule {
            end_ns,
            done,
            kind,
            limit: u64::MAX,
            numbering: Numbering::of(arrival, shard),
            taken: 0,
        })
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
            limit: u64::MAX,
            numbering: Numbering::of(arrival, shard),
            taken: 0,
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
            limit: u64::MAX,
            numbering: Numbering::Dealt(shard),
            taken: 0,
        })
    }

    /// Keeps only the first `count` arrivals of the whole run (`-n`): this
    /// shard's arrivals numbered below `count` among all the run's
    /// arrivals, in the order of their offsets. The shards of a run limited
    /// alike hold exactly the first `count` offsets of the whole schedule
    /// (those below the end), whatever the shard and thread split.
    ///
    /// ```
    /// use metronome_core::schedule::{Arrival, Schedule, Shard};
    /// // Bursts of 3 every 100 ms, the first 5 arrivals: 3 at 0, 2 at 100 ms.
    /// let burst = Arrival::Burst { size: 3 };
    /// let s = Schedule::new(burst, 30.0, 0, 1_000_000_000, Shard::WHOLE)?.first(5);
    /// assert!(s.eq([0, 0, 0, 100_000_000, 100_000_000]));
    /// // Shard 1 of 2 holds request 1 of each burst: 1 and 4 of the first 5.
    /// let half = Schedule::new(burst, 30.0, 0, 1_000_000_000, Shard { index: 1, count: 2 })?;
    /// assert!(half.first(5).eq([0, 100_000_000]));
    /// # Ok::<(), metronome_core::schedule::ScheduleError>(())
    /// ```
    #[must_use]
    pub fn first(mut self, count: u64) -> Self {
        self.limit = count;
        self.done |= self.numbering.global(self.taken) >= count;
        self
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
        self.taken += 1;
        self.done = next.is_none() || self.numbering.global(self.taken) >= self.limit;
        next
    }

    /// Constant and burst schedules skip ahead in O(1), computing the offset
    /// from the base exactly as `next` would have produced it.
    fn nth(&mut self, n: usize) -> Option<u64> {
        if self.done {
            return None;
        }
        match &mut self.kind {
            Kind::Grid(g) if self.limit == u64::MAX => {
                // usize is at most 64 bits on every supported target.
                g.skip(n as u64);
                self.taken = self.taken.saturating_add(n as u64);
                self.next()
            }
            Kind::Grid(_) => {
                for _ in 0..n {
                    self.next()?;
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The arrival numbering the engines use: thread `t`'s `k`-th arrival
    /// is the shard's `Shard::dealt(t, n, k)`-th, at the same time, and
    /// the parts together number every arrival of the shard once.
    #[test]
    fn dealt_arrivals_are_the_shards() {
        let machine = Shard { index: 1, count: 3 };
        let end = 1_000_000_000;
        let whole: std::vec::Vec<u64> = Schedule::new(Arrival::Constant, 90.0, 7, end, machine)
            .unwrap()
            .collect();
        let n = 4u32;
        let mut seen = std::vec![false; whole.len()];
        for t in 0..n {
            let part = Schedule::new(Arrival::Constant, 90.0, 7, end, machine.split(t, n)).unwrap();
            for (k, at) in part.enumerate() {
                let i = Shard::dealt(u64::from(t), u64::from(n), k as u64);
                assert_eq!(machine.split(t, n).global(k as u64), machine.global(i));
                assert_eq!(whole[i as usize], at, "thread {t}, arrival {k}");
                assert!(!seen[i as usize]);
                seen[i as usize] = true;
            }
        }
        assert_eq!(whole.len(), 30);
        assert!(seen.iter().all(|&s| s));
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
}
