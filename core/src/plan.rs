//! [`Plan`]: everything an engine needs to run, and nothing of the CLI;
//! [`Plan::validate`] and its [`PlanError`]. How an engine waits for each
//! send is in [`crate::pace`].

use core::fmt;
use core::net::SocketAddr;

use crate::measure::{ExactSet, Slo};
use crate::pace::Spin;
use crate::schedule::{Arrival, Schedule, ScheduleError, Shard, Stages, Trace};

/// The protocol spoken on each request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// Plain HTTP/1.1: one response per request.
    Http,
    /// OpenAI-style streaming chat completions: an HTTP/1.1 response whose
    /// body is a `text/event-stream` ending in `data: [DONE]`.
    OpenAiSse,
    /// Unary gRPC over HTTP/2 ([`Wire::Http2`] is required): a call
    /// succeeds on `:status 200` with `grpc-status: 0`
    /// ([`Finish::for_grpc`](crate::exchange::Finish::for_grpc) has the rule).
    Grpc,
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
/// The checks of request `request` among a plan's `checks`
/// ([`Plan::check_of`]): none, one for all, or one each.
#[inline]
pub fn check_in(
    checks: &'static [crate::check::Check],
    request: usize,
) -> Option<&'static crate::check::Check> {
    let c = checks.get(check_slot(checks, request)?)?;
    c.any().then_some(c)
}

/// Where request `request`'s checks are in a plan's `checks`: none when
/// empty, 0 when one serves all, else `request`.
#[inline]
pub fn check_slot(checks: &[crate::check::Check], request: usize) -> Option<usize> {
    match checks.len() {
        0 => None,
        1 => Some(0),
        _ => Some(request),
    }
}

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
    /// The name each request is reported under: `names[i]` is the row of
    /// request `i` ([`crate::measure::NameTally`], one per distinct value,
    /// `0..name_count()`); empty: no per-name rows.
    pub names: &'a [u32],
    /// The input tokens of each request as the report counts them:
    /// `input_tokens[i]` for request `i`, recorded at each measured send
    /// into [`crate::measure::Recorder::input_len`], so the distribution
    /// covers exactly the requests sent (every turn of a conversation, each
    /// arrival of a mix). Empty: not counted.
    pub input_tokens: &'a [u32],
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
    /// Checks on the answer ([`crate::check`]): none when empty; one: for
    /// every request; else `checks[i]` for request `i` (as `requests`).
    /// Built before the run and kept for the process (`'static`).
    pub checks: &'static [crate::check::Check],
    /// `-n N`: only the first N arrivals of the whole schedule (over every
    /// shard, the warmup's included), and those before the end
    /// ([`Schedule::first`]); `None`: every arrival before the end.
    pub count: Option<u64>,
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
    /// Conversations ([`crate::turns`]): the schedule opens sessions, and
    /// each later turn is due when the previous answer ended plus the
    /// think time; [`Turns::NONE`](crate::turns::Turns::NONE) otherwise.
    pub turns: crate::turns::Turns<'a>,
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
    /// The peers' per-request metrics (`--metrics-compat`) whose exact
    /// samples an open-loop run keeps besides metronome's own, each in
    /// [`Plan::exact_capacity`] reserved before the clock; empty: none.
    pub peer_samples: ExactSet,
    /// Which HTTP the run speaks ([`Wire`]): HTTP/1.1, or HTTP/2 or
    /// HTTP/3 with each request encoded for it.
    pub wire: Wire<'a>,
}

/// The most streams an engine carries at once on one HTTP/2 or HTTP/3
/// connection ([`Streams::max_streams`]); each has a slot allocated before
/// the clock.
pub const MAX_STREAMS: u32 = 100;

/// Which HTTP a run speaks ([`Plan::wire`]); each engine's `run` matches
/// on it.
///
/// ```
/// use metronome_core::plan::{example_plan, EncodedRequest, PlanError, Streams, Wire};
/// let reqs = [EncodedRequest { block: b"\x82", body: b"", list_size: 42 }];
/// let plan = metronome_core::plan::Plan {
///     wire: Wire::Http2(Streams { requests: &reqs, max_streams: 0 }),
///     ..example_plan()
/// };
/// assert_eq!(plan.validate(), Ok(()));
/// let bad = metronome_core::plan::Plan {
///     wire: Wire::Http3(Streams { requests: &reqs, max_streams: 101 }),
///     ..example_plan()
/// };
/// assert_eq!(bad.validate(), Err(PlanError::Http3));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire<'a> {
    /// HTTP/1.1: [`Plan::requests`] as they are.
    Http1,
    /// HTTP/2: h2c with prior knowledge on a plain connection, h2 (ALPN)
    /// over TLS; each request's HPACK header block (core's
    /// [`from_http1`](crate::h2::request::from_http1)).
    Http2(Streams<'a>),
    /// HTTP/3 over QUIC (ALPN `h3`, TLS only); each request's QPACK field
    /// section (core's [`from_http1`](crate::h3::request::from_http1)).
    Http3(Streams<'a>),
}

impl<'a> Wire<'a> {
    /// The streams of HTTP/2 or HTTP/3 (each request in a stream of a
    /// shared connection); `None` for HTTP/1.1.
    pub fn streams(&self) -> Option<Streams<'a>> {
        match *self {
            Wire::Http1 => None,
            Wire::Http2(s) | Wire::Http3(s) => Some(s),
        }
    }
}

/// A run over HTTP/2 or HTTP/3 ([`Wire`]): each of [`Plan::requests`]
/// encoded once, before the clock, and the streams per connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Streams<'a> {
    /// `requests[i]` is [`Plan::requests`]`[i]` encoded (same length).
    pub requests: &'a [EncodedRequest<'a>],
    /// Streams per connection at most: 0 takes the server's limit
    /// (HTTP/2's `SETTINGS_MAX_CONCURRENT_STREAMS`, HTTP/3's
    /// initial_max_streams_bidi); either way at most [`MAX_STREAMS`].
    pub max_streams: u32,
}

/// One request for HTTP/2 or HTTP/3, encoded before the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EncodedRequest<'a> {
    /// The header block: HPACK for HTTP/2, a QPACK field section for
    /// HTTP/3 (stateless both: valid on every connection).
    pub block: &'a [u8],
    /// The body, sent in DATA frames (empty: the head ends the stream).
    pub body: &'a [u8],
    /// The size of its field list as the server's limit counts it (name +
    /// value + 32 per field; [`Encoded::list_size`](crate::h2::request::Encoded::list_size)):
    /// over HTTP/2 a request above the server's
    /// `SETTINGS_MAX_HEADER_LIST_SIZE` is not sent
    /// ([`Connection::start_planned`](crate::h2::Connection::start_planned)).
    pub list_size: usize,
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
/// first request (20 ms, before the clock): a server that writes on accept
/// is caught here. Long enough for a server starved of the CPU by the
/// pacing threads of a 2-core host to accept and write (5 ms was not, in
/// CI); it is spent once, or three times at most, before the clock.
pub const SETTLE_NS: u64 = 20_000_000;

/// How long a connection opened during the run is watched for bytes before
/// its first request (1 ms; requests may be waiting for it).
pub const FRESH_SETTLE_NS: u64 = 1_000_000;

/// The most exact samples per metric an engine thread keeps
/// ([`Plan::exact_capacity`]): 500,000, so 4 MB a metric; a run with more
/// measured requests per process reports its histograms' percentiles only.
pub const EXACT_MAX: usize = 500_000;

/// The most next turns an engine thread holds waiting
/// ([`Plan::follow_up_capacity`]): 1,048,576, 16 MB; a session whose next
/// turn finds no room ends as `overflowed`, counted.
pub const FOLLOW_UP_MAX: usize = 1 << 20;

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

    /// The checks of request `request` (its index in `requests`), or
    /// `None` ([`Plan::checks`]).
    ///
    /// ```
    /// use metronome_core::check::Check;
    /// let p = metronome_core::plan::example_plan();
    /// assert!(p.check_of(0).is_none());
    /// static ONE: [Check; 1] = [Check { status: Some((200, 200)), ..Check::NONE }];
    /// let p = metronome_core::plan::Plan { checks: &ONE, ..p };
    /// assert!(p.check_of(3).is_some());
    /// ```
    #[inline]
    pub fn check_of(&self, request: usize) -> Option<&'static crate::check::Check> {
        check_in(self.checks, request)
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

    /// Number of report intervals a run's series holds: the
    /// [`Plan::interval_count`] intervals of the schedule, then the drain's
    /// up to [`Plan::hard_end_ns`] (replies still in flight after the end
    /// of the schedule count in intervals of their own, not in the
    /// schedule's last one).
    ///
    /// ```
    /// # use metronome_core::plan::*;
    /// let p = example_plan(); // 1 s measured after 0.5 s, timeout 2 s
    /// assert_eq!(p.series_len(), 3); // [0.5, 1.5) s, then the drain to 3.5 s
    /// ```
    pub fn series_len(&self) -> usize {
        let last = self
            .interval_index(self.hard_end_ns().saturating_sub(1))
            .unwrap_or(0);
        (last + 1).max(self.interval_count())
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
    /// // -n 101: the first 101 of them, 51 and 50 in the two halves.
    /// let n = Plan { count: Some(101), ..p };
    /// assert_eq!(n.schedule(Shard::WHOLE).unwrap().count(), 101);
    /// assert_eq!(n.schedule(Shard { index: 0, count: 2 }).unwrap().count(), 51);
    /// ```
    pub fn schedule(&self, shard: Shard) -> Result<Schedule<'a>, PlanError> {
        let end = self.end_ns();
        let all = match self.profile {
            Profile::Steady => Schedule::new(self.arrival, self.rate, self.seed, end, shard)?,
            Profile::Stages(stages) => {
                Schedule::staged(self.arrival, stages, self.seed, end, shard)?
            }
            Profile::Trace(trace) => Schedule::trace(trace, end, shard)?,
        };
        Ok(match self.count {
            Some(n) => all.first(n),
            None => all,
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
    /// A weighted [`Plan::mix`] without one running sum per request, a
    /// table naming a request that does not exist (or empty), or
    /// [`Plan::names`] (or [`Plan::input_tokens`]) without one entry per
    /// request: build the sums with
    /// [`crate::mix::cumulate`] over the requests' weights.
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
    /// [`Plan::turns`] is inconsistent with the requests (an index out of
    /// range, a session that loops), or set for a closed loop: sessions
    /// need the open loop's schedule.
    Turns,
    /// HTTP/2 requests that do not match the plan's requests, more than
    /// [`MAX_STREAMS`] streams, or with a closed loop, a warm-up request
    /// or conversations (not supported over HTTP/2 yet); or
    /// [`Protocol::Grpc`] without HTTP/2.
    Http2,
    /// The same for HTTP/3: its requests do not match the plan's, more
    /// than [`MAX_STREAMS`] streams, or with a closed loop, a warm-up
    /// request or conversations (not supported over HTTP/3 yet); or (from
    /// an engine) HTTP/3 without TLS.
    Http3,
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PlanError::NoRequests => "there is no request to send",
            PlanError::MixWeights => "a mix needs one weight and one name per request",
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
            PlanError::Turns => {
                "conversations need consistent turns and the open loop (not a closed one)"
            }
            PlanError::Http2 => {
                "HTTP/2 needs one encoded request per request, at most 100 streams, the open \
                 loop, no warm-up request and no conversations; gRPC needs HTTP/2"
            }
            PlanError::Http3 => {
                "HTTP/3 needs TLS (an https:// target), one encoded request per request, at \
                 most 100 streams, the open loop, no warm-up request and no conversations"
            }
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

/// The schedule's due requests in each report interval of the measured
/// phase, in order from interval 0 ([`Plan::interval_offers`]): what each
/// interval's `scheduled` is once every due request was handled, known
/// before the run. It walks the schedule once, as a pacer does.
#[derive(Clone, Debug)]
pub struct IntervalOffers<'a> {
    schedule: Schedule<'a>,
    /// The first offset not yet counted.
    next: Option<u64>,
    warmup_ns: u64,
    interval_ns: u64,
    /// The interval the next call counts.
    index: u64,
    intervals: u64,
}

impl Iterator for IntervalOffers<'_> {
    type Item = u64;

    /// The due requests of the next interval (none after the last).
    fn next(&mut self) -> Option<u64> {
        if self.index >= self.intervals {
            return None;
        }
        let until = self
            .warmup_ns
            .saturating_add((self.index + 1).saturating_mul(self.interval_ns));
        let mut n = 0;
        while let Some(t) = self.next.filter(|&t| t < until) {
            n += u64::from(t >= self.warmup_ns);
            self.next = self.schedule.next();
        }
        self.index += 1;
        Some(n)
    }
}

impl<'a> Plan<'a> {
    /// The due requests of each report interval of this plan's shard
    /// (`shard`), from the schedule alone; `None` when the schedule does
    /// not say them all: a closed loop (no schedule), or conversations
    /// (later turns come due when earlier ones end).
    ///
    /// ```
    /// use metronome_core::plan::example_plan;
    /// let mut p = example_plan(); // 100 req/s over 0.5 s warmup + 1 s
    /// p.interval_ns = 250_000_000;
    /// let per: Vec<u64> = p.interval_offers().unwrap().collect();
    /// assert_eq!(per, [25, 25, 25, 25]);
    /// p.model = metronome_core::plan::Model::Closed { workers: 1, expected_interval_ns: None };
    /// assert!(p.interval_offers().is_none());
    /// ```
    pub fn interval_offers(&self) -> Option<IntervalOffers<'a>> {
        if self.model != Model::Open || self.turns.is_on() {
            return None;
        }
        let mut schedule = self.schedule(self.shard).ok()?;
        let next = schedule.next();
        Some(IntervalOffers {
            schedule,
            next,
            warmup_ns: self.warmup_ns,
            interval_ns: self.interval_ns.max(1),
            index: 0,
            intervals: self.interval_count() as u64,
        })
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
        if let crate::mix::Mix::Table { table } = self.mix {
            if table.is_empty() || table.iter().any(|&r| r as usize >= self.requests.len()) {
                return Err(PlanError::MixWeights);
            }
        }
        if !self.names.is_empty() && self.names.len() != self.requests.len() {
            return Err(PlanError::MixWeights);
        }
        if !self.input_tokens.is_empty() && self.input_tokens.len() != self.requests.len() {
            return Err(PlanError::MixWeights);
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
        if !self.turns.is_valid(self.requests.len())
            || (self.turns.is_on() && self.model != Model::Open)
        {
            return Err(PlanError::Turns);
        }
        if let Some(streams) = self.wire.streams() {
            if streams.requests.len() != self.requests.len()
                || streams.max_streams > MAX_STREAMS
                || self.model != Model::Open
                || self.warm_up == WarmUp::Request
                || self.turns.is_on()
            {
                return Err(match self.wire {
                    Wire::Http3(_) => PlanError::Http3,
                    _ => PlanError::Http2,
                });
            }
        } else if self.protocol == Protocol::Grpc {
            return Err(PlanError::Http2);
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
        if self.turns.is_on() {
            return self.turns.first(index);
        }
        match self.mix {
            crate::mix::Mix::Cycle => (index % self.requests.len() as u64) as usize,
            weighted => weighted
                .pick_global(self.seed, self.shard.global(index))
                .min(self.requests.len() - 1),
        }
    }

    /// How many exact samples of each per-request metric an engine thread
    /// reserves before the clock ([`crate::measure::SampleSink`]): the
    /// measured requests this shard's schedule offers, plus a tenth and 64
    /// for a random process's spread; 0 (histograms only) for a closed
    /// loop, whose count is not bounded in advance, and above
    /// [`EXACT_MAX`] (the memory rule: 8 bytes per sample and metric).
    ///
    /// ```
    /// # use metronome_core::plan::*;
    /// let p = example_plan(); // 100 req/s, 1 s measured
    /// assert_eq!(p.exact_capacity(), 174); // 100 x 1.1 + 64
    /// let fast = Plan { rate: 1_000_000.0, ..p };
    /// assert_eq!(fast.exact_capacity(), 0); // over EXACT_MAX
    /// ```
    pub fn exact_capacity(&self) -> usize {
        if self.model != Model::Open {
            return 0;
        }
        let whole = self.offered_between(self.warmup_ns, self.end_ns());
        // Each scheduled request of a conversation brings its later turns.
        let share = whole / f64::from(self.shard.count.max(1)) * self.turns.mean_turns();
        let n = libm::ceil(share * 1.1 - 1e-9) + 64.0;
        if n > EXACT_MAX as f64 {
            0
        } else {
            n as usize
        }
    }

    /// How many next turns an engine thread can hold waiting for their
    /// intended time ([`crate::turns::FollowUpSink`]): one per session this
    /// shard's schedule opens (warm-up included), plus a tenth and 64, at
    /// most [`FOLLOW_UP_MAX`] (16 bytes each); 0 without conversations.
    ///
    /// ```
    /// # use metronome_core::plan::*;
    /// use metronome_core::turns::{Turns, NO_TURN};
    /// let p = example_plan(); // 100 req/s, 1.5 s with the warmup
    /// assert_eq!(p.follow_up_capacity(), 0);
    /// let talk = Plan { turns: Turns { sessions: 1, next: &[NO_TURN], think_ns: 0 }, ..p };
    /// assert_eq!(talk.follow_up_capacity(), 229); // 150 x 1.1 + 64
    /// ```
    pub fn follow_up_capacity(&self) -> usize {
        if !self.turns.is_on() {
            return 0;
        }
        let whole = self.offered_between(0, self.end_ns());
        let share = whole / f64::from(self.shard.count.max(1));
        let n = libm::ceil(share * 1.1 - 1e-9) + 64.0;
        n.min(FOLLOW_UP_MAX as f64) as usize
    }

    /// The per-name rows this plan reports: one more than the largest of
    /// [`Plan::names`] (0 without names).
    ///
    /// ```
    /// # use metronome_core::plan::*;
    /// let mut p = example_plan();
    /// assert_eq!(p.name_count(), 0);
    /// p.names = &[0, 1, 0];
    /// assert_eq!((p.name_count(), p.name_of(2)), (2, Some(0)));
    /// ```
    pub fn name_count(&self) -> usize {
        self.names.iter().max().map_or(0, |&m| m as usize + 1)
    }

    /// The row of request `request` (an index into [`Plan::requests`]), if
    /// the plan has names.
    pub fn name_of(&self, request: usize) -> Option<usize> {
        self.names.get(request).map(|&n| n as usize)
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
        names: &[],
        input_tokens: &[],
        arrival: Arrival::Constant,
        rate: 100.0,
        profile: Profile::Steady,
        seed: 42,
        shard: Shard::WHOLE,
        duration_ns: 1_000_000_000,
        count: None,
        checks: &[],
        warmup_ns: 500_000_000,
        connections: 4,
        max_connections: 64,
        max_in_flight: 1024,
        max_concurrency: None,
        turns: crate::turns::Turns::NONE,
        timeout_ns: 2_000_000_000,
        protocol: Protocol::Http,
        model: Model::Open,
        slo: Slo::default(),
        spin: Spin::Fixed { ns: 50_000 },
        interval_ns: 1_000_000_000,
        max_head_bytes: crate::http::DEFAULT_MAX_HEAD,
        retry_non_idempotent: false,
        warm_up: WarmUp::Off,
        peer_samples: ExactSet::EMPTY,
        wire: Wire::Http1,
    }
}
