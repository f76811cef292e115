//! [`Plan`]: everything an engine needs to run, and nothing of the CLI;
//! [`Plan::validate`] and its [`PlanError`]; [`pace`], the pacing decision
//! as a pure function of the clock; [`spin_step`], the rule that keeps
//! pacing from delaying measurement; and [`SpinMeter`], the rule for what
//! counts as busy-waiting.

use core::fmt;
use core::net::SocketAddr;

use crate::schedule::{Arrival, Schedule, ScheduleError, Shard, Stages, Trace};

/// The protocol spoken on each request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// Plain HTTP/1.1: one response per request.
    Http,
    /// OpenAI-style streaming chat completions: an HTTP/1.1 response whose
    /// body is a `text/event-stream` ending in `data: [DONE]`.
    OpenAiSse,
}

/// Open loop (the point of metronome) or closed loop (only to show the difference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// Requests leave on the schedule and never wait for earlier replies.
    Open,
    /// `workers` loops of send, wait, send. Latency is measured from the
    /// actual send; `expected_interval_ns`, when set, feeds the HdrHistogram
    /// coordinated-omission correction into a separate histogram.
    Closed {
        /// Number of workers, each with one connection and one request in flight.
        workers: u32,
        /// The expected interval between requests of one worker, for the correction.
        expected_interval_ns: Option<u64>,
    },
}

/// Service-level objectives: a request is *good* when it succeeded and met
/// every bound that is set. `None` means no bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Slo {
    /// Bound on latency (completion - intended; for streams this is E2E).
    pub latency_ns: Option<u64>,
    /// Bound on time to first token (streams only).
    pub ttft_ns: Option<u64>,
    /// Bound on every inter-token latency of the request (streams only).
    pub itl_ns: Option<u64>,
    /// Bound on time per output token (streams only).
    pub tpot_ns: Option<u64>,
}

impl Slo {
    /// True when no bound is set.
    ///
    /// ```
    /// assert!(metronome_core::plan::Slo::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.latency_ns.is_none()
            && self.ttft_ns.is_none()
            && self.itl_ns.is_none()
            && self.tpot_ns.is_none()
    }
}

/// How the offered rate evolves over a run.
///
/// ```
/// use metronome_core::plan::{example_plan, Profile};
/// use metronome_core::schedule::{Ramp, Stage, Stages, Shard};
/// let stages = [
///     Stage { duration_ns: 1_000_000_000, target_rps: 100.0 },
///     Stage { duration_ns: 1_000_000_000, target_rps: 300.0 },
/// ];
/// let plan = metronome_core::plan::Plan {
///     profile: Profile::Stages(Stages { start_rps: 0.0, stages: &stages, ramp: Ramp::Linear }),
///     rate: 300.0,
///     warmup_ns: 0,
///     duration_ns: 2_000_000_000,
///     ..example_plan()
/// };
/// // 50 + 200 requests, whatever the split.
/// assert_eq!(plan.schedule(Shard::WHOLE).unwrap().count(), 250);
/// let split: usize = (0..3)
///     .map(|index| plan.schedule(Shard { index, count: 3 }).unwrap().count())
///     .sum();
/// assert_eq!(split, 250);
/// assert_eq!(plan.stage_of(999_999_999), Some(0));
/// assert_eq!(plan.stage_of(1_000_000_000), Some(1));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Profile<'a> {
    /// [`Plan::rate`] throughout.
    Steady,
    /// The rate follows stages ([`Schedule::staged`]); [`Plan::rate`] is
    /// their peak (it sizes the connection pool). The stages span the
    /// warmup and the measured duration.
    Stages(Stages<'a>),
    /// The offsets of a trace ([`Schedule::trace`]); the arrival process
    /// is not used, and [`Plan::rate`] is the trace's mean rate.
    Trace(Trace<'a>),
}

/// What an engine needs to run: borrowed data only.
///
/// The schedule spans `warmup_ns + duration_ns`; requests intended before
/// `warmup_ns` are sent but not recorded, and the arrival exactly at
/// `warmup_ns + duration_ns` is not sent.
#[derive(Clone, Copy, Debug)]
pub struct Plan<'a> {
    /// The target address (already resolved by the caller).
    pub addr: SocketAddr,
    /// The encoded requests, complete HTTP/1.1 messages; arrival `j` of the
    /// schedule sends `requests[self.request_index(j)]`. Never empty.
    pub requests: &'a [&'a [u8]],
    /// Which request each arrival sends: in turn, or weighted by the seed
    /// ([`crate::mix`]).
    pub mix: crate::mix::Mix<'a>,
    /// The arrival process.
    pub arrival: Arrival,
    /// Offered rate in requests per second (across all shards); with
    /// stages, their peak; with a trace, its mean.
    pub rate: f64,
    /// Steady, staged or a trace replay.
    pub profile: Profile<'a>,
    /// Seed for every random choice of the run.
    pub seed: u64,
    /// The part of the schedule this engine (or machine) sends.
    pub shard: Shard,
    /// Measured duration, after the warmup.
    pub duration_ns: u64,
    /// Warmup before the measured duration: sent, not recorded.
    pub warmup_ns: u64,
    /// Connections opened before the clock starts.
    pub connections: u32,
    /// Connections may grow to this many when all are busy.
    pub max_connections: u32,
    /// Above this many requests in flight (sent or waiting for a connection),
    /// a due request is dropped and counted.
    pub max_in_flight: u32,
    /// At most this many requests at the server at once, the others
    /// waiting in order (vLLM bench's `--max-concurrency`): the engines keep
    /// it as [`Plan::max_connections`], which must not exceed it (one
    /// request per HTTP/1.1 connection), and a due request above it waits
    /// for a connection, its latency from its intended time, rather than
    /// being dropped (up to [`Plan::max_in_flight`] in flight and waiting).
    /// `None`: no cap but the connection and in-flight limits.
    pub max_concurrency: Option<u32>,
    /// A request unanswered this long after its send is a timeout; also how
    /// long the engine waits for replies in flight after the schedule ends.
    pub timeout_ns: u64,
    /// Plain HTTP or an OpenAI-style stream.
    pub protocol: Protocol,
    /// Open or closed loop.
    pub model: Model,
    /// Bounds that define a good request.
    pub slo: Slo,
    /// How long to busy-wait before each intended send (sleep before that).
    pub spin: Spin,
    /// Width of one report interval.
    pub interval_ns: u64,
    /// The largest response head accepted, in bytes (at most
    /// [`READ_BUF_BYTES`]); a larger one is [`crate::measure::ErrorKind::TooLarge`].
    pub max_head_bytes: usize,
    /// Retry non-idempotent requests (POST) too when their reused
    /// connection was found closed before any response byte.
    pub retry_non_idempotent: bool,
    /// What the engine does with each pre-opened connection before the
    /// clock starts.
    pub warm_up: WarmUp,
}

/// What an engine does with each pre-opened connection before the clock
/// starts, so the first second is not a transient (the server accepting,
/// forking or warming its connections while the schedule runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarmUp {
    /// Nothing: the connections are used as opened.
    Off,
    /// Wait [`SETTLE_NS`] after the connects, then close (and open once
    /// more) every connection on which bytes arrived before any request:
    /// they are counted as unsolicited, never matched to a request.
    Check,
    /// [`WarmUp::Check`], then send the run's first request once on each
    /// connection and read its response: not measured, counted apart, its
    /// service time the pool's first estimate. The CLI chooses it for safe
    /// methods (GET, HEAD, OPTIONS) and never for a POST unless asked.
    Request,
}

/// How long the pre-opened connections are watched for bytes before their
/// first request (5 ms, before the clock): a server that writes on accept
/// is caught here.
pub const SETTLE_NS: u64 = 5_000_000;

/// How long a connection opened during the run is watched for bytes before
/// its first request (1 ms; requests may be waiting for it).
pub const FRESH_SETTLE_NS: u64 = 1_000_000;

/// The highest rate a plan may offer, requests per second. No engine
/// thread sends faster than about one request per microsecond (measured
/// 1.5-30 us of CPU per request, docs/benchmarks.md), so every request of a
/// higher rate is dropped at best; and above it even counting the overdue
/// requests as dropped outruns the std engine's pacer (measured about 4 M
/// per second), so the run could not end on time.
pub const MAX_RATE: f64 = 10_000_000.0;

/// Each engine connection's read buffer, in bytes: the largest response
/// head there can be ([`Plan::max_head_bytes`]).
pub const READ_BUF_BYTES: usize = 64 * 1024;

impl Plan<'_> {
    /// End of the schedule, from the run start: `warmup_ns + duration_ns`.
    ///
    /// ```
    /// # use metronome_core::plan::*;
    /// # let p = example_plan();
    /// assert_eq!(p.end_ns(), 1_500_000_000);
    /// ```
    pub fn end_ns(&self) -> u64 {
        self.warmup_ns.saturating_add(self.duration_ns)
    }

    /// True when a request intended at `intended_ns` is recorded (not warmup).
    ///
    /// ```
    /// # use metronome_core::plan::*;
    /// # let p = example_plan();
    /// assert!(!p.is_measured(499_999_999));
    /// assert!(p.is_measured(500_000_000));
    /// ```
    pub fn is_measured(&self, intended_ns: u64) -> bool {
        intended_ns >= self.warmup_ns
    }

    /// Index of the report interval that `t_ns` (from the run start) falls in,
    /// counted from the end of the warmup; `None` during the warmup.
    ///
    /// ```
    /// # use metronome_core::plan::*;
    /// # let p = example_plan();
    /// assert_eq!(p.interval_index(400_000_000), None);
    /// assert_eq!(p.interval_index(500_000_000), Some(0));
    /// assert_eq!(p.interval_index(1_250_000_000), Some(0));
    /// assert_eq!(p.interval_index(1_500_000_000), Some(1));
    /// ```
    pub fn interval_index(&self, t_ns: u64) -> Option<usize> {
        let since = t_ns.checked_sub(self.warmup_ns)?;
        Some((since / self.interval_ns.max(1)) as usize)
    }

    /// Number of report intervals covering the measured duration.
    ///
    /// ```
    /// # use metronome_core::plan::*;
    /// # let p = example_plan();
    /// assert_eq!(p.interval_count(), 1);
    /// ```
    pub fn interval_count(&self) -> usize {
        self.duration_ns.div_ceil(self.interval_ns.max(1)).max(1) as usize
    }
}

impl<'a> Plan<'a> {
    /// The schedule of `shard` (the plan's own shard, or a part of it for
    /// one engine thread) over the whole run, warmup included: steady,
    /// staged or a trace, as [`Plan::profile`] says.
    ///
    /// # Errors
    /// [`PlanError::Schedule`] when the arrival process, rate, stages,
    /// trace or shard is invalid.
    ///
    /// ```
    /// # use metronome_core::plan::*;
    /// # use metronome_core::schedule::Shard;
    /// let p = example_plan(); // 100 req/s constant over 1.5 s
    /// assert_eq!(p.schedule(Shard::WHOLE).unwrap().count(), 150);
    /// assert_eq!(p.schedule(Shard { index: 1, count: 2 }).unwrap().count(), 75);
    /// ```
    pub fn schedule(&self, shard: Shard) -> Result<Schedule<'a>, PlanError> {
        let end = self.end_ns();
        Ok(match self.profile {
            Profile::Steady => Schedule::new(self.arrival, self.rate, self.seed, end, shard)?,
            Profile::Stages(stages) => {
                Schedule::staged(self.arrival, stages, self.seed, end, shard)?
            }
            Profile::Trace(trace) => Schedule::trace(trace, end, shard)?,
        })
    }

    /// How many stages the report has a row for (0 unless staged).
    ///
    /// ```
    /// assert_eq!(metronome_core::plan::example_plan().stage_count(), 0);
    /// ```
    pub fn stage_count(&self) -> usize {
        match self.profile {
            Profile::Stages(s) => s.stages.len(),
            _ => 0,
        }
    }

    /// The stage a request intended at `intended_ns` belongs to (by its
    /// intended time); `None` unless staged.
    pub fn stage_of(&self, intended_ns: u64) -> Option<usize> {
        match self.profile {
            Profile::Stages(s) => s.stage_of(intended_ns),
            _ => None,
        }
    }

    /// The requests the schedule offers in `[from_ns, until_ns)` over all
    /// shards, as expected (steady and staged: the integral of the rate) or
    /// counted (a trace).
    ///
    /// ```
    /// # use metronome_core::plan::*;
    /// let p = example_plan(); // 100 req/s
    /// assert_eq!(p.offered_between(500_000_000, 1_500_000_000), 100.0);
    /// ```
    pub fn offered_between(&self, from_ns: u64, until_ns: u64) -> f64 {
        let until_ns = until_ns.max(from_ns);
        match self.profile {
            Profile::Steady => self.rate * (until_ns - from_ns) as f64 / 1e9,
            Profile::Stages(s) => s.expected_before(until_ns) - s.expected_before(from_ns),
            Profile::Trace(t) => t.count_between(from_ns, until_ns) as f64,
        }
    }
}

/// Why a [`Plan`] cannot be run: one variant per rule of
/// [`Plan::validate`], each naming its cause and its fix. Engines return it
/// inside their error; the CLI maps each variant to the flag to change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PlanError {
    /// [`Plan::requests`] is empty: give at least one encoded request.
    NoRequests,
    /// A weighted [`Plan::mix`] without one running sum per request:
    /// build it with [`crate::mix::cumulate`] over the requests' weights.
    MixWeights,
    /// [`Plan::connections`] is 0: pre-open at least one connection.
    NoConnections,
    /// [`Plan::max_connections`] is below [`Plan::connections`]: raise it
    /// to at least the pre-opened count.
    MaxConnectionsBelowConnections,
    /// [`Plan::max_in_flight`] is 0: allow at least one request in flight.
    MaxInFlightZero,
    /// [`Plan::max_concurrency`] is 0, below [`Plan::max_connections`], or
    /// set for a closed loop: give a cap of at least one, at least the
    /// connection limit, for an open loop.
    MaxConcurrency,
    /// [`Plan::duration_ns`] is 0: give a positive measured duration.
    ZeroDuration,
    /// [`Plan::interval_ns`] is 0: give a positive report interval.
    ZeroInterval,
    /// [`Model::Closed`] with 0 workers: give at least one worker.
    ClosedWithoutWorkers,
    /// [`Plan::max_head_bytes`] is below 64 or above [`READ_BUF_BYTES`]:
    /// give a head limit in that range.
    MaxHeadBytes,
    /// [`Plan::rate`] is above [`MAX_RATE`]: no engine can keep even the
    /// count of such a schedule; give a lower rate (or more shards).
    RateTooHigh,
    /// The schedule cannot be built (rate, burst size, burstiness or
    /// shard); see [`ScheduleError`] for the cause and fix.
    Schedule(ScheduleError),
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PlanError::NoRequests => "there is no request to send",
            PlanError::MixWeights => "a weighted mix needs one weight per request",
            PlanError::NoConnections => "at least one connection must be pre-opened",
            PlanError::MaxConnectionsBelowConnections => {
                "the connection limit must be at least the number of pre-opened connections"
            }
            PlanError::MaxInFlightZero => "at least one request must be allowed in flight",
            PlanError::MaxConcurrency => {
                "the concurrency cap must be at least 1 and at least the connection limit, \
                 in an open loop"
            }
            PlanError::ZeroDuration => "the measured duration must be positive",
            PlanError::ZeroInterval => "the report interval must be positive",
            PlanError::ClosedWithoutWorkers => "a closed loop needs at least one worker",
            PlanError::MaxHeadBytes => "the response head limit must be 64 bytes to 64 KiB",
            PlanError::RateTooHigh => "the rate is above 10,000,000 requests per second",
            PlanError::Schedule(e) => return fmt::Display::fmt(e, f),
        })
    }
}

impl core::error::Error for PlanError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            PlanError::Schedule(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ScheduleError> for PlanError {
    fn from(e: ScheduleError) -> Self {
        PlanError::Schedule(e)
    }
}

/// The shortest and longest time allowed for opening one connection:
/// [`Plan::connect_timeout_ns`] clamps the request timeout to this range.
pub const CONNECT_TIMEOUT_RANGE_NS: (u64, u64) = (1_000_000, 5_000_000_000);

/// The longest grace period for replies in flight after a stop.
pub const STOP_GRACE_MAX_NS: u64 = 1_000_000_000;

impl Plan<'_> {
    /// Checks every rule an engine relies on, in the order of the
    /// [`PlanError`] variants (the schedule last).
    ///
    /// # Errors
    /// The first [`PlanError`] found.
    ///
    /// ```
    /// use metronome_core::plan::{example_plan, PlanError};
    /// use metronome_core::schedule::ScheduleError;
    /// let mut p = example_plan();
    /// assert_eq!(p.validate(), Ok(()));
    /// p.max_connections = 3;
    /// assert_eq!(p.validate(), Err(PlanError::MaxConnectionsBelowConnections));
    /// p.max_connections = 4;
    /// p.max_concurrency = Some(3); // the cap is the connections' limit
    /// assert_eq!(p.validate(), Err(PlanError::MaxConcurrency));
    /// p.max_concurrency = Some(4);
    /// assert_eq!(p.validate(), Ok(()));
    /// p.rate = 0.0;
    /// assert_eq!(p.validate(), Err(PlanError::Schedule(ScheduleError::InvalidRate)));
    /// ```
    pub fn validate(&self) -> Result<(), PlanError> {
        if self.requests.is_empty() {
            return Err(PlanError::NoRequests);
        }
        if let crate::mix::Mix::Weighted { cumulative } = self.mix {
            if cumulative.len() != self.requests.len() {
                return Err(PlanError::MixWeights);
            }
        }
        if self.connections == 0 {
            return Err(PlanError::NoConnections);
        }
        if self.max_connections < self.connections {
            return Err(PlanError::MaxConnectionsBelowConnections);
        }
        if self.max_in_flight == 0 {
            return Err(PlanError::MaxInFlightZero);
        }
        if let Some(cap) = self.max_concurrency {
            if cap == 0 || self.max_connections > cap || self.model != Model::Open {
                return Err(PlanError::MaxConcurrency);
            }
        }
        if self.duration_ns == 0 {
            return Err(PlanError::ZeroDuration);
        }
        if self.interval_ns == 0 {
            return Err(PlanError::ZeroInterval);
        }
        if let Model::Closed { workers: 0, .. } = self.model {
            return Err(PlanError::ClosedWithoutWorkers);
        }
        if !(64..=READ_BUF_BYTES).contains(&self.max_head_bytes) {
            return Err(PlanError::MaxHeadBytes);
        }
        if self.rate > MAX_RATE {
            return Err(PlanError::RateTooHigh);
        }
        self.schedule(self.shard).map(|_| ())
    }

    /// The encoded request sent for schedule index `index`:
    /// `requests[index % requests.len()]`.
    ///
    /// # Panics
    /// When [`Plan::requests`] is empty (rejected by [`Plan::validate`]).
    ///
    /// ```
    /// # use metronome_core::plan::*;
    /// # let p = example_plan();
    /// assert_eq!(p.request(7), p.requests[0]);
    /// ```
    pub fn request(&self, index: u64) -> &[u8] {
        self.requests[self.request_index(index)]
    }

    /// Which of [`Plan::requests`] schedule index `index` (this process's
    /// count) sends: `index % requests.len()` for [`Mix::Cycle`](crate::mix::Mix::Cycle);
    /// for a weighted mix the seed's choice for the arrival's index in the
    /// whole run, `shard.index + index x shard.count`.
    ///
    /// # Panics
    /// When [`Plan::requests`] is empty (rejected by [`Plan::validate`]).
    ///
    /// ```
    /// # use metronome_core::plan::*;
    /// let mut p = example_plan();
    /// let two: [&[u8]; 2] = [b"a", b"b"];
    /// p.requests = &two;
    /// assert_eq!((p.request_index(6), p.request_index(7)), (0, 1));
    /// ```
    pub fn request_index(&self, index: u64) -> usize {
        match self.mix {
            crate::mix::Mix::Cycle => (index % self.requests.len() as u64) as usize,
            weighted => {
                let global = u64::from(self.shard.index)
                    .wrapping_add(index.wrapping_mul(u64::from(self.shard.count)));
                weighted
                    .pick_global(self.seed, global)
                    .min(self.requests.len() - 1)
            }
        }
    }

    /// The exchange state machine for one connection of this plan.
    pub const fn exchange(&self) -> crate::exchange::Exchange {
        crate::exchange::Exchange::with_max_head(
            matches!(self.protocol, Protocol::OpenAiSse),
            self.max_head_bytes,
        )
    }

    /// Whether responses are decoded as OpenAI-style event streams.
    ///
    /// ```
    /// # use metronome_core::plan::*;
    /// assert!(!example_plan().expect_stream());
    /// ```
    pub fn expect_stream(&self) -> bool {
        self.protocol == Protocol::OpenAiSse
    }

    /// How long opening one connection may take: the request timeout,
    /// clamped to [`CONNECT_TIMEOUT_RANGE_NS`].
    ///
    /// ```
    /// # use metronome_core::plan::*;
    /// let mut p = example_plan();
    /// assert_eq!(p.connect_timeout_ns(), 2_000_000_000);
    /// p.timeout_ns = 10;
    /// assert_eq!(p.connect_timeout_ns(), 1_000_000);
    /// ```
    pub fn connect_timeout_ns(&self) -> u64 {
        let (lo, hi) = CONNECT_TIMEOUT_RANGE_NS;
        self.timeout_ns.clamp(lo, hi)
    }

    /// The hard end of a run that was not stopped: the end of the schedule
    /// plus the timeout. Nothing is sent, and no reply awaited, after it.
    ///
    /// ```
    /// # use metronome_core::plan::*;
    /// assert_eq!(example_plan().hard_end_ns(), 3_500_000_000);
    /// ```
    pub fn hard_end_ns(&self) -> u64 {
        self.end_ns().saturating_add(self.timeout_ns)
    }

    /// The hard end of a run stopped at `stopped_ns`: replies in flight get
    /// the timeout, but at most [`STOP_GRACE_MAX_NS`], and never beyond
    /// [`Plan::hard_end_ns`].
    ///
    /// ```
    /// # use metronome_core::plan::*;
    /// let p = example_plan(); // timeout 2 s
    /// assert_eq!(p.stopped_hard_end_ns(700_000_000), 1_700_000_000);
    /// assert_eq!(p.stopped_hard_end_ns(3_000_000_000), 3_500_000_000);
    /// ```
    pub fn stopped_hard_end_ns(&self, stopped_ns: u64) -> u64 {
        let grace = self.timeout_ns.min(STOP_GRACE_MAX_NS);
        stopped_ns.saturating_add(grace).min(self.hard_end_ns())
    }

    /// The measured time actually run: the duration, or up to the stop
    /// (`stopped_ns`, from the run start) when the run ended early.
    ///
    /// ```
    /// # use metronome_core::plan::*;
    /// let p = example_plan(); // 0.5 s warmup, 1 s measured
    /// assert_eq!(p.measured_ns(None), 1_000_000_000);
    /// assert_eq!(p.measured_ns(Some(800_000_000)), 300_000_000);
    /// assert_eq!(p.measured_ns(Some(100_000_000)), 0);
    /// assert_eq!(p.measured_ns(Some(9_000_000_000)), 1_000_000_000);
    /// ```
    pub fn measured_ns(&self, stopped_ns: Option<u64>) -> u64 {
        match stopped_ns {
            None => self.duration_ns,
            Some(at) => at
                .min(self.end_ns())
                .saturating_sub(self.warmup_ns)
                .min(self.duration_ns),
        }
    }
}

/// A small plan for examples and tests: 100 req/s constant to
/// 127.0.0.1:8080, 1 s measured after 0.5 s of warmup, 1 s intervals.
///
/// ```
/// let p = metronome_core::plan::example_plan();
/// assert_eq!(p.rate, 100.0);
/// ```
pub fn example_plan() -> Plan<'static> {
    const REQ: &[u8] = b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";
    Plan {
        addr: SocketAddr::V4(core::net::SocketAddrV4::new(
            core::net::Ipv4Addr::LOCALHOST,
            8080,
        )),
        requests: &[REQ],
        mix: crate::mix::Mix::Cycle,
        arrival: Arrival::Constant,
        rate: 100.0,
        profile: Profile::Steady,
        seed: 42,
        shard: Shard::WHOLE,
        duration_ns: 1_000_000_000,
        warmup_ns: 500_000_000,
        connections: 4,
        max_connections: 64,
        max_in_flight: 1024,
        max_concurrency: None,
        timeout_ns: 2_000_000_000,
        protocol: Protocol::Http,
        model: Model::Open,
        slo: Slo::default(),
        spin: Spin::Fixed { ns: 50_000 },
        interval_ns: 1_000_000_000,
        max_head_bytes: crate::http::DEFAULT_MAX_HEAD,
        retry_non_idempotent: false,
        warm_up: WarmUp::Off,
    }
}

/// The busy-wait slice before each intended send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spin {
    /// Always this long.
    Fixed {
        /// The slice, ns.
        ns: u64,
    },
    /// Follows the measured lateness of the engine's own sleeps during the
    /// run ([`SpinTuner`]), starting from `initial_ns`.
    Auto {
        /// The slice until enough wake-ups have been measured, ns.
        initial_ns: u64,
    },
}

impl Spin {
    /// The tuner an engine thread starts with.
    ///
    /// ```
    /// use metronome_core::plan::Spin;
    /// assert_eq!(Spin::Fixed { ns: 7 }.tuner().slice_ns(), 7);
    /// assert_eq!(Spin::Auto { initial_ns: 200_000 }.tuner().slice_ns(), 200_000);
    /// ```
    pub const fn tuner(self) -> SpinTuner {
        match self {
            Spin::Fixed { ns } => SpinTuner::fixed(ns),
            Spin::Auto { initial_ns } => SpinTuner::auto(initial_ns),
        }
    }
}

/// Bucket width of [`SpinTuner`]'s lateness counts.
const TUNER_STEP_NS: u64 = 4_000;
/// Lateness buckets: 4 us steps up to 2 ms; the last one counts everything later.
const TUNER_BUCKETS: usize = 512;
/// Wake-ups measured before the first adaptation, and between two.
const TUNER_EVERY: u32 = 32;
/// Counts are halved when they reach this many (older wake-ups fade).
const TUNER_WINDOW: u32 = 4_096;

/// The adaptive slice's bounds: never below [`SPIN_AUTO_MIN_NS`], never
/// above [`SPIN_AUTO_MAX_NS`].
pub const SPIN_AUTO_MIN_NS: u64 = 20_000;
/// See [`SPIN_AUTO_MIN_NS`].
pub const SPIN_AUTO_MAX_NS: u64 = 2_000_000;
/// Added to the measured p99 lateness.
pub const SPIN_AUTO_MARGIN_NS: u64 = 20_000;

/// The `--spin auto` rule: the busy-wait slice covers the p99 lateness of
/// the engine's own sleeps, as measured during the run, plus a margin, so a
/// late wake-up still lands before the intended send and the send is on
/// time; between wake-ups the thread sleeps instead of burning the CPU.
///
/// An engine reports each sleep's lateness (`now - wake target`, when the
/// wake was the pacing target) to [`SpinTuner::observe`]. Every
/// `TUNER_EVERY` samples the slice becomes the upper bound of the 4 us
/// bucket holding the p99, plus [`SPIN_AUTO_MARGIN_NS`], clamped to
/// [[`SPIN_AUTO_MIN_NS`], [`SPIN_AUTO_MAX_NS`]]; counts are halved every
/// `TUNER_WINDOW` samples so the slice follows the machine. A fixed tuner
/// ignores what it observes. No allocation, no clock: tested on a virtual one.
///
/// ```
/// use metronome_core::plan::SpinTuner;
/// let mut t = SpinTuner::auto(200_000);
/// for _ in 0..31 {
///     t.observe(9_000); // woke 9 us late
/// }
/// assert_eq!(t.slice_ns(), 200_000); // not enough samples yet
/// t.observe(9_000);
/// assert_eq!(t.slice_ns(), 12_000 + 20_000); // bucket [8, 12) us, plus the margin
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpinTuner {
    adaptive: bool,
    counts: [u32; TUNER_BUCKETS],
    total: u32,
    since_update: u32,
    slice_ns: u64,
}

impl SpinTuner {
    /// A slice that never changes.
    pub const fn fixed(slice_ns: u64) -> Self {
        Self {
            adaptive: false,
            counts: [0; TUNER_BUCKETS],
            total: 0,
            since_update: 0,
            slice_ns,
        }
    }

    /// An adaptive slice, `initial_ns` until the first adaptation.
    pub const fn auto(initial_ns: u64) -> Self {
        Self {
            adaptive: true,
            ..Self::fixed(initial_ns)
        }
    }

    /// The slice to use now, ns.
    pub const fn slice_ns(&self) -> u64 {
        self.slice_ns
    }

    /// A sleep meant to end at the pacing target woke `lateness_ns` after it.
    pub fn observe(&mut self, lateness_ns: u64) {
        if !self.adaptive {
            return;
        }
        let bucket = ((lateness_ns / TUNER_STEP_NS) as usize).min(TUNER_BUCKETS - 1);
        self.counts[bucket] += 1;
        self.total += 1;
        self.since_update += 1;
        if self.since_update >= TUNER_EVERY {
            self.since_update = 0;
            self.adapt();
        }
        if self.total >= TUNER_WINDOW {
            self.total = 0;
            for c in self.counts.iter_mut() {
                *c /= 2;
                self.total += *c;
            }
        }
    }

    fn adapt(&mut self) {
        // Nearest rank of the p99, as the histogram's quantile rule.
        let rank = (u64::from(self.total) * 99).div_ceil(100).max(1);
        let mut seen = 0u64;
        let mut p99_upper_ns = TUNER_BUCKETS as u64 * TUNER_STEP_NS;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += u64::from(c);
            if seen >= rank {
                p99_upper_ns = (i as u64 + 1) * TUNER_STEP_NS;
                break;
            }
        }
        self.slice_ns =
            (p99_upper_ns + SPIN_AUTO_MARGIN_NS).clamp(SPIN_AUTO_MIN_NS, SPIN_AUTO_MAX_NS);
    }
}

/// What a pacer should do now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// The next send is due (or overdue): send it now, and every other due one.
    Send,
    /// The next send is within the spin slice: busy-wait the clock.
    Spin,
    /// The next send is further away: sleep until `until_ns`, then decide again.
    Sleep {
        /// When to wake: the intended time minus the spin slice.
        until_ns: u64,
    },
    /// Nothing is left to send.
    Done,
}

/// The pacing decision: given the clock `now_ns`, the next intended send
/// time (or `None` when the schedule is exhausted) and the spin slice,
/// decide whether to send, spin or sleep. Times are on the same clock.
///
/// ```
/// use metronome_core::plan::{pace, Pace};
/// assert_eq!(pace(1_000, Some(1_000), 50), Pace::Send);
/// assert_eq!(pace(1_001, Some(1_000), 50), Pace::Send);
/// assert_eq!(pace(960, Some(1_000), 50), Pace::Spin);
/// assert_eq!(pace(950, Some(1_000), 50), Pace::Spin);
/// assert_eq!(pace(900, Some(1_000), 50), Pace::Sleep { until_ns: 950 });
/// assert_eq!(pace(900, None, 50), Pace::Done);
/// ```
pub fn pace(now_ns: u64, next_intended_ns: Option<u64>, spin_ns: u64) -> Pace {
    match next_intended_ns {
        None => Pace::Done,
        Some(t) if t <= now_ns => Pace::Send,
        Some(t) if t - now_ns <= spin_ns => Pace::Spin,
        Some(t) => Pace::Sleep {
            until_ns: t - spin_ns,
        },
    }
}

/// What a busy-waiting pacer does at one poll of its spin loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpinStep {
    /// A completion is ready: leave the spin and handle it now, so it is
    /// stamped when it arrived, not when the pacer is next free.
    Reap,
    /// The intended time has come: leave the spin and send.
    Send,
    /// Keep spinning.
    Spin,
}

/// While an engine sends a backlog of due requests in one batch (after a
/// stall of its thread), it looks at the stop flag every this many sends.
pub const BACKLOG_STOP_CHECK: u32 = 4096;

/// The longest an engine stays awake after its last send while responses
/// are in flight ([`linger_ns`]): 500 us.
pub const LINGER_MAX_NS: u64 = 500_000;

/// The share of a core lingering may cost at most, at the offered rate.
pub const LINGER_CPU_SHARE: f64 = 0.25;

/// How long an engine stays awake (busy-waiting, leaving as soon as a
/// completion is ready, counted as spin) after its last send while
/// responses are in flight, instead of sleeping until the next send: a
/// response that comes within it is stamped when it arrives, not when a
/// sleeping thread has been woken (tens of microseconds), so the latency
/// against a fast server does not depend on the rate. Twice the
/// service-time estimate plus 50 us (200 us before any estimate), within a
/// budget of [`LINGER_CPU_SHARE`] of a core at `rate` (requests per second
/// of this pacer); 0 when the expected response comes later than
/// [`LINGER_MAX_NS`] (lingering would not catch it).
///
/// ```
/// use metronome_core::plan::linger_ns;
/// assert_eq!(linger_ns(500.0, Some(30_000)), 110_000);
/// assert_eq!(linger_ns(500.0, None), 200_000);
/// assert_eq!(linger_ns(10_000.0, Some(30_000)), 25_000); // the CPU budget
/// assert_eq!(linger_ns(500.0, Some(5_000_000)), 0); // a slow server
/// ```
pub fn linger_ns(rate: f64, service_ns: Option<u64>) -> u64 {
    let by_service = service_ns.map_or(200_000, |s| s.saturating_mul(2).saturating_add(50_000));
    if by_service > LINGER_MAX_NS {
        return 0;
    }
    let by_budget = (LINGER_CPU_SHARE * 1e9 / rate.max(1.0)) as u64;
    by_service.min(by_budget)
}

/// How close to an intended send a ready completion is left for after the
/// send: handling it (and the ring entry that may come with it) takes a few
/// microseconds that would otherwise make the send late.
pub const REAP_GUARD_NS: u64 = 20_000;

/// The rule inside the spin slice: pacing delays neither measurement nor
/// the send. At each poll, the send goes when its intended time has come;
/// before that, a ready completion is handled at once (then the pacer
/// decides again), unless the send is due within [`REAP_GUARD_NS`]: then
/// it is handled right after the send, stamped at most that much late.
///
/// ```
/// use metronome_core::plan::{spin_step, SpinStep, REAP_GUARD_NS};
/// let t = 1_000_000;
/// assert_eq!(spin_step(t - 50_000, t, true), SpinStep::Reap);
/// assert_eq!(spin_step(t - REAP_GUARD_NS, t, true), SpinStep::Spin);
/// assert_eq!(spin_step(t, t, true), SpinStep::Send);
/// assert_eq!(spin_step(t, t, false), SpinStep::Send);
/// assert_eq!(spin_step(t - 50_000, t, false), SpinStep::Spin);
/// ```
pub fn spin_step(now_ns: u64, intended_ns: u64, completion_ready: bool) -> SpinStep {
    if now_ns >= intended_ns {
        SpinStep::Send
    } else if completion_ready && intended_ns - now_ns > REAP_GUARD_NS {
        SpinStep::Reap
    } else {
        SpinStep::Spin
    }
}

/// Longest gap between two clock reads of a busy-wait still counted as
/// spinning (a read takes tens of nanoseconds): a longer gap means the
/// thread was not running (preempted, or its virtual CPU stolen by the host).
pub const SPIN_GAP_NS: u64 = 2_000;

/// Accounts busy-waiting: fed every clock read of a spin loop, it sums the
/// steps of at most [`SPIN_GAP_NS`], so time the thread was not running is
/// not counted as spin and the CPU time the report calls work (CPU time
/// minus spin) is not understated. The engines keep only the loop:
///
/// ```
/// use metronome_core::plan::SpinMeter;
/// let reads = [100, 150, 1_150, 1_200, 9_000, 9_050]; // a 7.8 us gap: preempted
/// let mut m = SpinMeter::start(reads[0]);
/// for &t in &reads[1..] {
///     m.tick(t);
/// }
/// assert_eq!(m.now_ns(), 9_050);
/// assert_eq!(m.spun_ns(), 50 + 1_000 + 50 + 50);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpinMeter {
    now_ns: u64,
    spun_ns: u64,
}

impl SpinMeter {
    /// A meter whose first clock read is `now_ns`.
    pub const fn start(now_ns: u64) -> Self {
        Self { now_ns, spun_ns: 0 }
    }

    /// The next clock read of the loop. A clock that goes backwards adds nothing.
    pub fn tick(&mut self, now_ns: u64) {
        let step = now_ns.saturating_sub(self.now_ns);
        if step <= SPIN_GAP_NS {
            self.spun_ns += step;
        }
        self.now_ns = self.now_ns.max(now_ns);
    }

    /// The latest clock read.
    pub const fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// Time counted as spinning so far.
    pub const fn spun_ns(&self) -> u64 {
        self.spun_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A virtual clock: a sleeper that overshoots each wake by a fixed
    /// amount and a spinner that advances 1 ns a poll never sends late by
    /// more than one poll, and never early.
    #[test]
    fn virtual_clock_pacer_sends_on_time_despite_sleep_overshoot() {
        let schedule = [0u64, 1_000_000, 1_000_000, 2_500_000, 10_000_000];
        let spin = 50_000;
        let overshoot = 30_000; // the sleep wakes 30 us late, inside the slice
        let mut now = 0u64;
        let mut sent = [0u64; 5];
        let mut next = 0usize;
        let mut spins = 0u64;
        loop {
            match pace(now, schedule.get(next).copied(), spin) {
                Pace::Done => break,
                Pace::Send => {
                    while next < schedule.len() && schedule[next] <= now {
                        sent[next] = now;
                        next += 1;
                    }
                }
                Pace::Spin => {
                    spins += 1;
                    now += 1;
                }
                Pace::Sleep { until_ns } => {
                    assert!(until_ns > now);
                    now = until_ns + overshoot;
                }
            }
        }
        // Every send is exactly on time: the overshoot is absorbed by the slice.
        assert_eq!(sent, schedule);
        // Each sleep woke 30 us into the 50 us slice, leaving 20 us of spin
        // before each distinct time after the first: 1, 2.5 and 10 ms.
        assert_eq!(spins, 3 * 20_000);
    }

    /// A sleep that overshoots past the intended time sends late but never
    /// shifts the schedule: later sends stay on their own times.
    #[test]
    fn late_wake_sends_all_due_at_once_without_shifting() {
        let schedule = [100u64, 200, 300, 1_000];
        let mut now = 0u64;
        let mut sent = [0u64; 4];
        let mut next = 0;
        let mut first_sleep = true;
        loop {
            match pace(now, schedule.get(next).copied(), 10) {
                Pace::Done => break,
                Pace::Send => {
                    while next < schedule.len() && schedule[next] <= now {
                        sent[next] = now;
                        next += 1;
                    }
                }
                Pace::Spin => now += 1,
                Pace::Sleep { until_ns } => {
                    // The first sleep overshoots to 350: three sends are due.
                    now = if first_sleep { 350 } else { until_ns };
                    first_sleep = false;
                }
            }
        }
        assert_eq!(sent, [350, 350, 350, 1_000]);
    }
}
