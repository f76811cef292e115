//! [`Pool`]: the connection pool's rules, decided once for both engines:
//! what happens to a due request ([`Pool::admit`]: send it, let it wait,
//! drop it), how many connections to open now ([`Pool::to_open`]) and which
//! to close ([`Pool::close_idle`], [`Pool::close_on_free`]).
//!
//! The rule: **grow only where more connections carry more load.** A
//! service time that rises because requests queue (at a saturated server,
//! or in a pacer that reaps late) is no reason to open connections: they
//! only move the queue from the client, where latency is measured from the
//! intended time anyway, into the server, and make both ends slower. So the
//! pool grows in two ways only, each tested on a virtual clock
//! (`tests/sim/pool.rs`):
//!
//! 1. **Toward the concurrency the no-queue service time needs** (Little's
//!    law): [`Pool::base_wanted`] = `ceil(rate x base x 1.5) + 2`, where
//!    `base` is the [`BASE_RANK`]-th smallest service time seen (or the
//!    warm-up requests' median, if smaller), the service time of a request that
//!    found no queue (TCP Vegas' BaseRTT). A server that takes 20 ms per
//!    request in parallel gets `rate x 20 ms x 1.5` at once (a request that
//!    takes the last idle connection below it opens a spare, so the next
//!    does not wait for a connect); a saturated server's queueing never
//!    raises a minimum.
//! 2. **By probes whose gain is measured.** While a quarter or more of the
//!    due requests of a window ([`WINDOW_NS`], at least [`WINDOW_COMPLETIONS`]
//!    completions) waited for a connection and what completed is below
//!    [`PROBE_BELOW_PCT`] of the offered rate (a server that completes what
//!    is offered is short of nothing), the pool measures what completes
//!    per second with `n` connections, opens a step more
//!    (`max(`[`MAX_CONNECTING`]`, n / 4)`), lets them settle and measures
//!    again. It keeps them only if completions rose by at least half of the
//!    step's proportional share ([`GAIN_PCT`]) or the waits stopped: a server
//!    that needs concurrency (throughput rising with connections) is given
//!    more, one that is saturated (throughput flat) is not. A refused probe
//!    records the **knee** ([`Knee`]: about `X` req/s with `n` connections),
//!    its connections are closed between requests ([`Pool::close_on_free`])
//!    and no probe starts again for [`HOLD_NS`].
//!
//! 3. **In a stall.** When requests wait and nothing at all has answered
//!    for [`STALL_MIN_NS`] (and [`STALL_FACTOR`] base service times; a
//!    saturated server still answers about once per base service time), the
//!    server is stalled or silent, not saturated: each waiting request may
//!    have a connection, so that it still reaches the server at its intended
//!    time; they age out once the stall is over ([`Pool::close_idle`]). A
//!    transient shorter than the stall's length grows nothing. Before the
//!    first answer of the run, nothing has answered since the first
//!    request: a server slower than the gap between requests (a stream of
//!    seconds on a user's `-c 4`) gives each request that finds every
//!    connection busy a connection at once, as a pre-opened pool of the
//!    default size would have had, not at the next due request.
//!
//! No probe starts while the pacing thread is itself the bottleneck
//! ([`Pool::pacer_load`] at or above [`PACER_BOUND_PCT`] of its time
//! working), since more connections cannot help it and cost it more.
//!
//! **Shrink:** a connection that stayed idle for [`QUIET_NS`] is closed
//! (between requests, [`Pool::close_idle`]) while more are open than the
//! pre-opened count and the base need; with the engines handing out the
//! most recently used idle connection first (LIFO), the ones a slow spell
//! opened sink to the bottom of the idle stack and age out, and at low rates
//! the same few connections carry the load.
//!
//! **After a GOAWAY** (HTTP/2 and HTTP/3): [`after_goaway`] says whether
//! the connection keeps its place until it drains or retires at once, with
//! the next one opening beside it ([`AfterGoaway`]; the reason is there).
//!
//! Also: above `max_in_flight` requests in flight (sent or waiting) a due
//! request is dropped; at most [`MAX_CONNECTING`] connects (with their TLS
//! handshakes) are in progress at once per pacing thread, never more than the
//! requests waiting for them, never above `max_connections`.
//!
//! ```
//! use metronome_core::pool::{Admit, Pool, PoolState};
//!
//! // 90k req/s on one pacer, 16 pre-opened, up to 1024, 50 us service.
//! let mut pool = Pool::new(90_000.0, 16, 1024, 10_000);
//! pool.seed(50_000);
//! assert_eq!(pool.wanted(), 16); // ceil(90k x 50 us x 1.5) + 2 = 9, the floor is 16
//! let busy = PoolState { idle: 0, open: 16, connecting: 0, waiting: 0, in_flight: 16 };
//! assert_eq!(pool.admit(0, busy), Admit::Wait { open: 0, full: false });
//! // Queueing at the server: every answer now takes 2 ms. The base (the
//! // no-queue service time) does not move, and neither does the pool.
//! for i in 1..=90_000u64 {
//!     pool.observe(i * 11_111, 2_000_000);
//! }
//! assert_eq!(pool.base_ns(), Some(50_000));
//! assert_eq!(pool.wanted(), 16);
//! ```

/// Connects (and TLS handshakes) in progress at once per pacing thread,
/// at most: a burst of waiting requests opens connections a few at a time.
pub const MAX_CONNECTING: u32 = 4;

/// Headroom over the base concurrency, percent: the pool aims at
/// 1.5 x rate x base service time ([`Pool::base_wanted`]).
pub const HEADROOM_PCT: u32 = 150;

/// Connections above the base need, so a request rarely waits for one.
pub const SPARE: u32 = 2;

/// The base service time is the `BASE_RANK`-th smallest seen, so that one
/// or two freak answers (an early response, a cached error) do not set it.
pub const BASE_RANK: usize = 3;

/// A measuring window lasts at least this long, ns: 100 ms.
pub const WINDOW_NS: u64 = 100_000_000;

/// ... and holds at least this many completions, unless it reaches
/// [`WINDOW_MAX_NS`].
pub const WINDOW_COMPLETIONS: u64 = 50;

/// The longest a measuring window lasts, ns: 1 s.
pub const WINDOW_MAX_NS: u64 = 1_000_000_000;

/// A probe is kept when completions per second rose by at least this share
/// (percent) of the step's proportional gain: from `n` to `n + k`
/// connections, at least `1 + 0.5 k / n` times what `n` completed.
pub const GAIN_PCT: u32 = 50;

/// No answer for this long (and for [`STALL_FACTOR`] average service
/// times) while requests wait is a stall, not a saturation, ns: 10 ms.
pub const STALL_MIN_NS: u64 = 10_000_000;

/// See [`STALL_MIN_NS`]. A saturated server still answers about once per
/// base service time (the average, queueing included, is `n` times that
/// with `n` requests queued), a stalled one never.
pub const STALL_FACTOR: u64 = 4;

/// A window from which a probe starts holds at least this many
/// completions: a window with none measured nothing.
pub const PROBE_MIN_COMPLETIONS: u64 = 8;

/// A probe starts only when what completes is below this share (percent)
/// of the offered rate: a server that completes what is offered is not
/// short of connections, whatever waits (a pacer that reaps in batches
/// makes connections look busy), and more connections could not raise
/// its completions: a probe there would report a knee that is not one.
pub const PROBE_BELOW_PCT: u32 = 95;

/// After a refused probe (the knee), no probe starts for this long, ns: 5 s.
pub const HOLD_NS: u64 = 5_000_000_000;

/// The longest a probe waits for its connections to open, ns: 1 s.
pub const PROBE_OPEN_LIMIT_NS: u64 = 1_000_000_000;

/// A connection idle this long is closed while more are open than needed,
/// ns: 1 s.
pub const QUIET_NS: u64 = 1_000_000_000;

/// The pacing thread counts as the bottleneck when it works (busy-waiting
/// excluded) at least this share of its time, percent.
pub const PACER_BOUND_PCT: u32 = 80;

/// Time constant of the service-time average ([`Pool::service_ns`], used
/// for lingering after the last send), ns: 100 ms.
pub const SERVICE_TAU_NS: u64 = 100_000_000;

/// The most one sample weighs, as time since the previous one, ns: after a
/// quiet spell of the run a single sample counts as 10 ms of them.
pub const SAMPLE_DT_CAP_NS: u64 = 10_000_000;

/// A service-time sample counts as at most this many times the average.
pub const SAMPLE_CLIP: f64 = 4.0;

/// Offered requests per second that one pre-opened connection is sized for
/// by default ([`default_connections`]).
pub const RATE_PER_CONNECTION: f64 = 1_500.0;

/// Default pre-opened connections at least, and at most.
pub const DEFAULT_CONNECTIONS_RANGE: (u32, u32) = (16, 256);

/// The default number of connections to pre-open for `rate` requests per
/// second (this machine's share): one per [`RATE_PER_CONNECTION`], within
/// [`DEFAULT_CONNECTIONS_RANGE`]. A fixed pool of 64 held 130k req/s
/// against an instant server (docs/benchmarks.md); this gives 60 at 90k.
///
/// ```
/// use metronome_core::pool::default_connections;
/// assert_eq!(default_connections(100.0), 16);
/// assert_eq!(default_connections(30_000.0), 20);
/// assert_eq!(default_connections(90_000.0), 60);
/// assert_eq!(default_connections(1e7), 256);
/// ```
pub fn default_connections(rate: f64) -> u32 {
    let (lo, hi) = DEFAULT_CONNECTIONS_RANGE;
    let n = libm::ceil(rate.max(0.0) / RATE_PER_CONNECTION);
    if n >= f64::from(hi) {
        hi
    } else {
        (n as u32).clamp(lo, hi)
    }
}

/// What an engine does with a connection after the server's GOAWAY, for
/// HTTP/2 and HTTP/3 alike ([`after_goaway`] decides).
///
/// Under both, the connection takes no new stream; the streams the GOAWAY
/// kept finish on it, those it refused are retried once on a fresh
/// connection (`h2::Flights`), and once none is left it closes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterGoaway {
    /// It keeps its place in the pool (counted open, no free stream) until
    /// its last stream ends; then it closes and a fresh connection replaces
    /// it. Requests due meanwhile wait for the pool's other connections.
    DrainThenReplace,
    /// It leaves the pool at once (no longer counted open) and drains in a
    /// spare socket; the next connection opens now, in its place. Drained,
    /// it closes and is not replaced.
    RetireAndReopen,
}

/// Decides what a connection does after the server's GOAWAY; `spare`: the
/// engine keeps a socket beyond the pool for a draining connection.
///
/// **Retire and reopen** wherever there is a spare. A GOAWAY says "no new
/// streams on this connection", not "slow down": nginx sends one every
/// `keepalive_requests` (1 000 by default) and a server sends one when it
/// restarts gracefully. So it is no reason for due requests to wait, and
/// under drain-then-replace a request that finds the pool's other
/// connections busy waits for the slowest stream the old connection kept
/// (up to `--timeout`, or a whole event stream), then for the new
/// connection's connect and handshake, all charged to it from its intended
/// time (with one connection, every request due meanwhile does). Retired,
/// the old connection drains while the next one connects. The cost is a
/// socket more than the pool counts for the drain's length (one per pool
/// place at most, so at most twice `--max-connections`), and the server
/// sees both at once.
///
/// **Drain, then replace** where there is no spare: then the only way to
/// stay within the pool's count is to keep the connection's place until it
/// drains. The HTTP/3 paths keep a spare (the io_uring worker has twice the
/// pool's ring slots; the std engine's dispatcher two links); the HTTP/2
/// paths do not (one ring slot, one link per pool place), so they drain
/// then replace; an engine that keeps a spare for HTTP/2 too passes `true`
/// and retires. (`e2e::h3::h3_goaway_opens_the_next_connection_while_draining`
/// pins the first on both engines: the server sees the next connection
/// open before the old one closes; `hostile::h2`'s GOAWAY scenarios run
/// the second.)
///
/// ```
/// use metronome_core::pool::{after_goaway, AfterGoaway};
/// assert_eq!(after_goaway(true), AfterGoaway::RetireAndReopen);
/// assert_eq!(after_goaway(false), AfterGoaway::DrainThenReplace);
/// ```
pub const fn after_goaway(spare: bool) -> AfterGoaway {
    if spare {
        AfterGoaway::RetireAndReopen
    } else {
        AfterGoaway::DrainThenReplace
    }
}

/// A pacing thread's pool, counted by the engine when it asks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolState {
    /// Open connections with no request.
    pub idle: u32,
    /// Open connections (idle or busy).
    pub open: u32,
    /// Connects (or TLS handshakes) in progress.
    pub connecting: u32,
    /// Due requests waiting for a connection.
    pub waiting: u32,
    /// Requests sent and not finished, plus those waiting.
    pub in_flight: u32,
}

/// What to do with a due request ([`Pool::admit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Above the in-flight limit: drop it and count it, and start `open`
    /// connects for the requests already waiting (in a stall, each may
    /// have one).
    Drop {
        /// Connects to start now ([`Pool::to_open`]).
        open: u32,
    },
    /// Send it now on an idle connection (the most recently used one),
    /// and start `open` connects now: a spare when it takes the last idle
    /// connection with the pool below [`Pool::base_need`], or before the run's
    /// first answer once nothing has answered for a stall's length (the
    /// next request then finds it open).
    Send {
        /// Connects to start now (0 or 1).
        open: u32,
    },
    /// Let it wait for a connection (its clock runs from its intended
    /// time), and start `open` connects now.
    Wait {
        /// Connects to start now ([`Pool::to_open`] with this request waiting).
        open: u32,
        /// The pool was at `max_connections`: it could not grow.
        full: bool,
    },
}

/// Where growth stopped because more connections did not carry more load:
/// a probe from `connections` to more connections left completions flat.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Knee {
    /// What completed per second with `connections` open, while requests
    /// waited for them (the server's, or the pacer's, capacity).
    pub completions_per_s: f64,
    /// The connections open then.
    pub connections: u32,
    /// What completed per second with the probe's connections open.
    pub probe_per_s: f64,
    /// The connections the probe had open.
    pub probe_connections: u32,
    /// When the probe was refused, run clock ns.
    pub at_ns: u64,
}

/// Counts of the pool's probes, for the report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Probes {
    /// Probes whose connections carried more load, and were kept.
    pub kept: u32,
    /// Probes that left completions flat (each a knee), refused.
    pub refused: u32,
}

/// One window's counts.
#[derive(Clone, Copy, Debug, Default)]
struct Window {
    start_ns: u64,
    completions: u64,
    admits: u64,
    waits: u64,
    /// The fewest and most connections open at an admission in it: a
    /// window measures `n` connections only when they did not change.
    open_min: u32,
    open_max: u32,
}

/// What a probe measured before its step.
#[derive(Clone, Copy, Debug)]
struct Before {
    per_s: f64,
    connections: u32,
}

/// Where the growth probe is.
#[derive(Clone, Copy, Debug)]
enum Probe {
    /// No probe: the window measures what completes.
    Idle,
    /// The step's connections are opening.
    Opening { before: Before, since_ns: u64 },
    /// Open; their first answers are on the way until `until_ns`.
    Settling { before: Before, until_ns: u64 },
    /// The window measures what completes with the step open.
    Measuring { before: Before },
}

/// The pool rules of one pacing thread; see the [module docs](self).
#[derive(Clone, Copy, Debug)]
pub struct Pool {
    /// This pacing thread's offered rate, requests per second.
    rate: f64,
    /// Never aim below this many connections (the pre-opened ones).
    floor: u32,
    /// `max_connections` of this thread.
    max: u32,
    /// `max_in_flight` of this thread.
    max_in_flight: u32,
    /// The service-time average, ns; `None` before the first sample.
    service_ns: Option<f64>,
    /// When the last sample was taken, ns.
    last_ns: u64,
    /// The smallest service times seen, ascending (`u64::MAX`: none yet).
    smallest: [u64; BASE_RANK],
    /// The connections accepted probes reached.
    level: u32,
    window: Window,
    probe: Probe,
    /// No probe starts before this, ns.
    hold_until_ns: u64,
    /// The pacing thread was the bottleneck at its last sample.
    pacer_bound: bool,
    /// When the last answer came, ns.
    last_answer_ns: Option<u64>,
    /// Since when due requests have waited (`None` when the last one
    /// admitted did not), ns.
    waits_since_ns: Option<u64>,
    /// When the first request was admitted, ns: before the first answer,
    /// the requests in flight have gone unanswered since then.
    first_admit_ns: Option<u64>,
    /// Requests wait and nothing has answered for a stall's length.
    stalled: bool,
    /// The connections carry streams (HTTP/2, HTTP/3): a request never
    /// takes a connection whole, so no spare opens for the next one.
    multiplexed: bool,
    /// Stalls that grew the pool (each counted once).
    stalls: u32,
    /// A refused probe's connections still to close when they free.
    shed: u32,
    knee: Option<Knee>,
    probes: Probes,
}

impl Pool {
    /// The rules for a pacing thread offering `rate` requests per second
    /// with `floor` pre-opened connections, at most `max` connections and
    /// `max_in_flight` requests in flight.
    pub fn new(rate: f64, floor: u32, max: u32, max_in_flight: u32) -> Pool {
        Pool {
            rate: rate.max(0.0),
            floor,
            max: max.max(floor),
            max_in_flight,
            service_ns: None,
            last_ns: 0,
            smallest: [u64::MAX; BASE_RANK],
            level: floor,
            window: Window::default(),
            probe: Probe::Idle,
            hold_until_ns: 0,
            pacer_bound: false,
            last_answer_ns: None,
            waits_since_ns: None,
            first_admit_ns: None,
            multiplexed: false,
            stalled: false,
            stalls: 0,
            shed: 0,
            knee: None,
            probes: Probes::default(),
        }
    }

    /// The same rules for connections that carry streams (HTTP/2,
    /// HTTP/3): a request takes a stream, not the connection, so taking
    /// the "last idle" one opens no spare ([`Admit::Send`] with `open: 0`);
    /// the pool still grows when requests wait, as for HTTP/1.1.
    ///
    /// ```
    /// use metronome_core::pool::{Admit, Pool, PoolState};
    /// let s = PoolState { idle: 1, open: 1, connecting: 0, waiting: 0, in_flight: 0 };
    /// let mut h1 = Pool::new(10.0, 1, 16, 100);
    /// h1.seed(800_000_000); // 800 ms a request: 12 connections needed
    /// assert_eq!(h1.admit(0, s), Admit::Send { open: 1 });
    /// let mut h2 = Pool::new(10.0, 1, 16, 100).multiplexed();
    /// h2.seed(800_000_000);
    /// assert_eq!(h2.admit(0, s), Admit::Send { open: 0 });
    /// ```
    pub fn multiplexed(mut self) -> Pool {
        self.multiplexed = true;
        self
    }

    /// Sets the service time before the clock starts, ns: the average's
    /// start (the warm-up requests' median), and the base until a shorter
    /// answer comes.
    pub fn seed(&mut self, service_ns: u64) {
        self.service_ns = Some(service_ns as f64);
        self.seed_base(service_ns);
    }

    /// Sets the base before the clock starts, ns: the fastest warm-up
    /// answer (the warm-up requests go out together, so the later ones
    /// may queue behind the first at the server; the fastest did not).
    ///
    /// ```
    /// use metronome_core::pool::Pool;
    /// let mut p = Pool::new(2000.0, 16, 1024, 10_000);
    /// p.seed(8_000_000); // 16 warm-up requests queued at a 1 ms FIFO server
    /// p.seed_base(1_000_000); // the first of them did not
    /// assert_eq!(p.service_ns(), Some(8_000_000));
    /// assert_eq!(p.base_ns(), Some(1_000_000));
    /// assert_eq!(p.wanted(), 16); // ceil(2000 x 1 ms x 1.5) + 2 = 5
    /// ```
    pub fn seed_base(&mut self, fastest_ns: u64) {
        for _ in 0..BASE_RANK {
            self.note_smallest(fastest_ns);
        }
    }

    /// A request sent on one of this thread's connections was answered
    /// `service_ns` after its send, at `now_ns`. Transport failures
    /// (resets, timeouts) are not answers: they say nothing of the
    /// service time and are not counted.
    ///
    /// ```
    /// use metronome_core::pool::Pool;
    /// let mut p = Pool::new(1000.0, 4, 64, 100);
    /// assert_eq!(p.service_ns(), None);
    /// p.observe(1_000_000, 2_000_000);
    /// assert_eq!(p.service_ns(), Some(2_000_000)); // the first sample is the average
    /// p.observe(11_000_000, 10_000_000_000); // clipped to 4x, weighted 10 ms of 100
    /// assert_eq!(p.service_ns(), Some(2_600_000));
    /// assert_eq!(p.base_ns(), None); // fewer than BASE_RANK samples
    /// p.observe(12_000_000, 3_000_000);
    /// assert_eq!(p.base_ns(), Some(10_000_000_000)); // the 3rd smallest
    /// p.observe(13_000_000, 1_000_000);
    /// assert_eq!(p.base_ns(), Some(3_000_000));
    /// ```
    pub fn observe(&mut self, now_ns: u64, service_ns: u64) {
        let sample = service_ns as f64;
        let est = match self.service_ns {
            None => sample,
            Some(est) => {
                let dt = now_ns.saturating_sub(self.last_ns).min(SAMPLE_DT_CAP_NS);
                let w = (dt as f64 / SERVICE_TAU_NS as f64).min(1.0);
                est + (sample.min(est * SAMPLE_CLIP) - est) * w
            }
        };
        self.service_ns = Some(est);
        self.last_ns = self.last_ns.max(now_ns);
        self.note_smallest(service_ns);
        self.window.completions += 1;
        self.last_answer_ns = Some(self.last_answer_ns.map_or(now_ns, |t| t.max(now_ns)));
        self.stalled = false;
    }

    /// Keeps `v` among the [`BASE_RANK`] smallest service times.
    fn note_smallest(&mut self, v: u64) {
        let mut v = v;
        for s in &mut self.smallest {
            if v < *s {
                core::mem::swap(s, &mut v);
            }
        }
    }

    /// The pacing thread worked (busy-waiting excluded) `work_ns` of the
    /// last `wall_ns`: at or above [`PACER_BOUND_PCT`] it is the bottleneck,
    /// and no probe starts until a sample below.
    ///
    /// ```
    /// use metronome_core::pool::Pool;
    /// let mut p = Pool::new(1000.0, 4, 64, 100);
    /// p.pacer_load(45_000_000, 50_000_000);
    /// assert!(p.pacer_bound());
    /// p.pacer_load(20_000_000, 50_000_000);
    /// assert!(!p.pacer_bound());
    /// ```
    pub fn pacer_load(&mut self, work_ns: u64, wall_ns: u64) {
        if wall_ns > 0 {
            self.pacer_bound =
                u128::from(work_ns) * 100 >= u128::from(wall_ns) * u128::from(PACER_BOUND_PCT);
        }
    }

    /// Whether the pacing thread was the bottleneck at its last sample.
    pub fn pacer_bound(&self) -> bool {
        self.pacer_bound
    }

    /// The service-time average, ns (`None` before any sample or seed):
    /// it includes any queueing, so it sizes how long to linger for
    /// answers, never the pool.
    pub fn service_ns(&self) -> Option<u64> {
        self.service_ns.map(|s| libm::round(s) as u64)
    }

    /// The base service time, ns: the [`BASE_RANK`]-th smallest seen, or
    /// the warm-up's median ([`Pool::seed`]) if smaller; `None` before
    /// either.
    pub fn base_ns(&self) -> Option<u64> {
        let b = self.smallest[BASE_RANK - 1];
        (b != u64::MAX).then_some(b)
    }

    /// The connections the base service time needs (Little's law):
    /// `ceil(rate x base x 1.5) + 2`; before the base is known, none.
    pub fn base_wanted(&self) -> u32 {
        match self.base_need() {
            None => 0,
            Some(need) if need >= self.max => self.max,
            Some(need) => need.saturating_add(SPARE),
        }
    }

    /// The connections the no-queue service time needs at the offered
    /// rate, with headroom but without [`SPARE`]: `ceil(rate x base x
    /// 1.5)`, at most `max_connections`; `None` before any service time.
    /// Below it, a request that takes the last idle connection opens a
    /// spare ([`Admit::Send`]); a server whose requests one connection
    /// carries (`need` 1) never gets one that way.
    pub fn base_need(&self) -> Option<u32> {
        let base = self.base_ns()?;
        let need =
            libm::ceil(self.rate * base as f64 * 1e-9 * f64::from(HEADROOM_PCT) / 100.0 - 1e-9);
        Some(if need >= f64::from(self.max) {
            self.max
        } else {
            need.max(0.0) as u32
        })
    }

    /// The connections the pool aims at: the most of the pre-opened count
    /// (at least one), [`Pool::base_wanted`] and what kept probes reached,
    /// at most `max_connections`.
    pub fn wanted(&self) -> u32 {
        self.level
            .max(self.base_wanted())
            .clamp(self.floor.max(1), self.max)
    }

    /// Where growth stopped because more connections did not carry more
    /// load, the last time it did.
    pub fn knee(&self) -> Option<Knee> {
        self.knee
    }

    /// The probes kept and refused so far.
    pub fn probes(&self) -> Probes {
        self.probes
    }

    /// Stalls that grew the pool so far.
    pub fn stalls(&self) -> u32 {
        self.stalls
    }

    /// True when the pool is at `max_connections` (open or opening).
    pub fn is_full(&self, s: PoolState) -> bool {
        s.open + s.connecting >= self.max
    }

    /// What to do with a request due at `now_ns`, given the pool before it
    /// (`s.waiting` and `s.in_flight` do not count it). Also moves the
    /// growth probe along ([module docs](self)).
    ///
    /// ```
    /// use metronome_core::pool::{Admit, Pool, PoolState};
    /// let mut p = Pool::new(1000.0, 2, 2, 3);
    /// let s = PoolState { idle: 1, open: 2, connecting: 0, waiting: 0, in_flight: 1 };
    /// assert_eq!(p.admit(0, s), Admit::Send { open: 0 });
    /// let s = PoolState { idle: 0, open: 2, connecting: 0, waiting: 0, in_flight: 2 };
    /// assert_eq!(p.admit(1_000_000, s), Admit::Wait { open: 0, full: true });
    /// let s = PoolState { in_flight: 3, ..s };
    /// assert_eq!(p.admit(2_000_000, s), Admit::Drop { open: 0 });
    /// ```
    pub fn admit(&mut self, now_ns: u64, s: PoolState) -> Admit {
        let waits = !(s.idle > 0 && s.waiting == 0);
        if s.in_flight < self.max_in_flight {
            self.window.admits += 1;
            self.window.waits += u64::from(waits);
        }
        if self.window.admits <= 1 {
            self.window.open_min = s.open;
            self.window.open_max = s.open;
        }
        self.window.open_min = self.window.open_min.min(s.open);
        self.window.open_max = self.window.open_max.max(s.open);
        // A stall: requests have waited, and nothing answered, for the
        // stall's length. Before the first answer, nothing has answered
        // since the first admission: a request that then finds every
        // connection busy gets one at once once that is a stall's length
        // ago (a server that has not yet answered its first requests is
        // not saturated by them; the default pre-opened pool would have
        // had the connection).
        let first = *self.first_admit_ns.get_or_insert(now_ns);
        if waits {
            self.waits_since_ns.get_or_insert(now_ns);
        } else {
            self.waits_since_ns = None;
        }
        let since = match self.last_answer_ns {
            Some(answer) => self.waits_since_ns.unwrap_or(now_ns).max(answer),
            None => first,
        };
        let stall_ns =
            STALL_MIN_NS.max(self.service_ns().unwrap_or(0).saturating_mul(STALL_FACTOR));
        let unanswered = !self.pacer_bound && now_ns.saturating_sub(since) >= stall_ns;
        let stalled = waits && unanswered;
        if stalled && !self.stalled {
            self.stalls += 1;
        }
        self.stalled = stalled;
        self.step(now_ns, s);
        if s.in_flight >= self.max_in_flight {
            return Admit::Drop {
                open: self.to_open(s),
            };
        }
        if !waits {
            // The last idle connection, with the pool below the base's need
            // (not counting the spare growth keeps: one connection that
            // carries the load stays one) or, before any answer, nothing
            // answered for a stall's length: a spare for the next request,
            // so that it does not wait for a connect.
            let below = self
                .base_need()
                .is_some_and(|need| s.open + s.connecting < need);
            // Silence counts only while requests are out: a server whose
            // every answer so far was an error has answered. No spare for
            // a next request that `max_in_flight` would drop anyway.
            let silent = unanswered && self.last_answer_ns.is_none() && s.in_flight > 0;
            let spare = s.idle == 1
                && !self.multiplexed
                && (below || silent)
                && s.connecting == 0
                && !self.is_full(s)
                && s.in_flight + 1 < self.max_in_flight;
            return Admit::Send {
                open: u32::from(spare),
            };
        }
        let waiting = PoolState {
            waiting: s.waiting + 1,
            in_flight: s.in_flight + 1,
            ..s
        };
        Admit::Wait {
            open: self.to_open(waiting),
            full: self.is_full(s),
        }
    }

    /// Restarts the measuring window at `now_ns`.
    fn restart(&mut self, now_ns: u64) {
        self.window = Window {
            start_ns: now_ns,
            ..Window::default()
        };
    }

    /// The window's completions per second, once it is complete at `now_ns`.
    fn window_done(&self, now_ns: u64) -> Option<f64> {
        let w = &self.window;
        let len = now_ns.saturating_sub(w.start_ns);
        let full =
            (len >= WINDOW_NS && w.completions >= WINDOW_COMPLETIONS) || len >= WINDOW_MAX_NS;
        (full && len > 0).then(|| w.completions as f64 * 1e9 / len as f64)
    }

    /// A quarter or more of the window's due requests waited.
    fn short(&self) -> bool {
        self.window.admits > 0 && self.window.waits * 4 >= self.window.admits
    }

    /// Opens a step more than the `open` connections that completed
    /// `per_s` a second: `max(MAX_CONNECTING, open / 4)`.
    fn start_probe(&mut self, now_ns: u64, per_s: f64, open: u32) {
        let step = MAX_CONNECTING.max(open.div_ceil(4));
        self.level = open.saturating_add(step).min(self.max);
        self.probe = Probe::Opening {
            before: Before {
                per_s,
                connections: open,
            },
            since_ns: now_ns,
        };
    }

    /// Moves the probe along at `now_ns`.
    fn step(&mut self, now_ns: u64, s: PoolState) {
        match self.probe {
            Probe::Idle => {
                let Some(per_s) = self.window_done(now_ns) else {
                    return;
                };
                let can = self.short()
                    && self.window.completions >= PROBE_MIN_COMPLETIONS
                    && per_s * 100.0 < self.rate * f64::from(PROBE_BELOW_PCT)
                    && self.window.open_min == self.window.open_max
                    && !self.pacer_bound
                    && now_ns >= self.hold_until_ns
                    && s.connecting == 0
                    && s.open >= self.wanted()
                    && s.open < self.max;
                if can {
                    self.start_probe(now_ns, per_s, s.open);
                }
                self.restart(now_ns);
            }
            Probe::Opening { before, since_ns } => {
                if s.open >= self.level || now_ns.saturating_sub(since_ns) >= PROBE_OPEN_LIMIT_NS {
                    // The new connections' first answers take a service
                    // time to come: measure after it.
                    let settle = self.service_ns().unwrap_or(0).min(WINDOW_MAX_NS);
                    self.probe = Probe::Settling {
                        before,
                        until_ns: now_ns + settle,
                    };
                }
            }
            Probe::Settling { before, until_ns } => {
                if now_ns >= until_ns {
                    self.probe = Probe::Measuring { before };
                    self.restart(now_ns);
                }
            }
            Probe::Measuring { before } => {
                let Some(per_s) = self.window_done(now_ns) else {
                    return;
                };
                let added = s.open.saturating_sub(before.connections);
                let need = before.per_s
                    * (1.0
                        + f64::from(GAIN_PCT) / 100.0 * f64::from(added)
                            / f64::from(before.connections.max(1)));
                // Kept when completions rose, or when the waits stopped
                // (what was due is served: no measure of more is needed).
                if added > 0 && (per_s >= need || !self.short() || s.waiting == 0) {
                    self.probes.kept += 1;
                    self.level = self.level.max(s.open);
                    if self.short()
                        && s.waiting > 0
                        && !self.pacer_bound
                        && s.open < self.max
                        && per_s * 100.0 < self.rate * f64::from(PROBE_BELOW_PCT)
                    {
                        // Still short: the next step at once, measured
                        // against this window (its connections did not change).
                        self.start_probe(now_ns, per_s, s.open);
                        self.restart(now_ns);
                        return;
                    }
                } else {
                    if added > 0 {
                        self.probes.refused += 1;
                        self.knee = Some(Knee {
                            completions_per_s: before.per_s,
                            connections: before.connections,
                            probe_per_s: per_s,
                            probe_connections: s.open,
                            at_ns: now_ns,
                        });
                    }
                    self.level = before.connections.max(self.floor);
                    self.shed = s.open.saturating_sub(self.level);
                    self.hold_until_ns = now_ns.saturating_add(HOLD_NS);
                }
                self.probe = Probe::Idle;
                self.restart(now_ns);
            }
        }
    }

    /// A connection finished its request and is free: close it instead
    /// (between requests) while a refused probe's connections are still
    /// open (more than the pool aims at).
    ///
    /// ```
    /// use metronome_core::pool::{Pool, PoolState};
    /// let mut p = Pool::new(1000.0, 4, 64, 100);
    /// let s = PoolState { idle: 0, open: 6, connecting: 0, waiting: 3, in_flight: 9 };
    /// assert!(!p.close_on_free(s)); // no probe was refused
    /// ```
    pub fn close_on_free(&mut self, s: PoolState) -> bool {
        let close = self.shed > 0 && s.open > self.wanted();
        if close {
            self.shed -= 1;
        } else if s.open <= self.wanted() {
            self.shed = 0;
        }
        close
    }

    /// The least recently used idle connection has been idle since
    /// `idle_since_ns`: close it now, at `now_ns`, when it has been idle
    /// for [`QUIET_NS`] and more are open than the pre-opened count and
    /// the base need. Ask again after each close (the next one may be due).
    ///
    /// ```
    /// use metronome_core::pool::{Pool, PoolState, QUIET_NS};
    /// let mut p = Pool::new(1000.0, 4, 64, 100);
    /// let s = PoolState { idle: 3, open: 6, connecting: 0, waiting: 0, in_flight: 3 };
    /// assert!(!p.close_idle(QUIET_NS, s, 1)); // idle for less than QUIET_NS
    /// assert!(p.close_idle(QUIET_NS + 1, s, 1));
    /// let s = PoolState { idle: 1, open: 4, ..s };
    /// assert!(!p.close_idle(10 * QUIET_NS, s, 1)); // the pre-opened count stays
    /// ```
    pub fn close_idle(&mut self, now_ns: u64, s: PoolState, idle_since_ns: u64) -> bool {
        let keep = self.floor.max(self.base_wanted()).max(1);
        let close = s.idle > 0
            && s.waiting == 0
            && s.open > keep
            && matches!(self.probe, Probe::Idle)
            && now_ns.saturating_sub(idle_since_ns) >= QUIET_NS;
        if close {
            self.level = self.level.min(s.open - 1);
        }
        close
    }

    /// How many connects to start now: toward [`Pool::wanted`], at most
    /// [`MAX_CONNECTING`] in progress, never more than the requests waiting
    /// for them, never above `max_connections`. Ask again when a connect
    /// ends (it may have failed) or a connection closes while requests wait.
    pub fn to_open(&self, s: PoolState) -> u32 {
        let total = s.open + s.connecting;
        // In a stall every waiting request may have its connection (up to
        // max_connections), so that it reaches the server on time.
        let aim = if self.stalled {
            self.max
        } else {
            self.wanted()
        };
        let by_need = aim.saturating_sub(total);
        let by_pace = MAX_CONNECTING.saturating_sub(s.connecting);
        let by_demand = s.waiting.saturating_sub(s.connecting);
        by_need.min(by_pace).min(by_demand)
    }
}

/// What the pool rules did in a run, over all pacing threads: for the
/// report.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PoolOutcome {
    /// Stalls (no answer while requests waited) that grew the pool.
    pub stalls: u32,
    /// Where growth stopped because more connections did not carry more
    /// load, for the run: the knees of the threads that found one summed
    /// (their completions per second and connections add up), scaled to
    /// all the pacing threads when only some found one (each carries an
    /// equal share of the schedule, and the server they share is what
    /// saturates; a CI run had one io_uring thread of two refuse its probe
    /// at 411 req/s with 8 connections, against a server of about 1000
    /// req/s: the run's knee is then 822 with 16, not 411 with 8).
    pub knee: Option<Knee>,
    /// Probes kept and refused.
    pub probes: Probes,
    /// Connections the pool closed: idle for [`QUIET_NS`], or a refused
    /// probe's.
    pub closed: u64,
    /// The pacing threads merged here.
    pub threads: u32,
    /// Of them, the threads whose pool found a knee.
    pub knee_threads: u32,
    /// The knees found, summed and not scaled.
    found: Option<Knee>,
}

impl PoolOutcome {
    /// One pacing thread's outcome: its pool's knee and probes, and the
    /// connections it closed.
    pub fn of(pool: &Pool, closed: u64) -> PoolOutcome {
        PoolOutcome::thread(pool.stalls(), pool.knee(), pool.probes(), closed)
    }

    /// One pacing thread's outcome from its parts.
    pub fn thread(stalls: u32, knee: Option<Knee>, probes: Probes, closed: u64) -> PoolOutcome {
        PoolOutcome {
            stalls,
            knee,
            probes,
            closed,
            threads: 1,
            knee_threads: u32::from(knee.is_some()),
            found: knee,
        }
    }

    /// Adds another pacing thread's outcome (or several threads' merged).
    ///
    /// ```
    /// use metronome_core::pool::{Knee, PoolOutcome, Probes};
    /// let k = |per_s, n| Some(Knee { completions_per_s: per_s, connections: n,
    ///     probe_per_s: per_s, probe_connections: n + 4, at_ns: 5 });
    /// let mut a = PoolOutcome::thread(1, k(1000.0, 16), Probes { kept: 1, refused: 1 }, 4);
    /// a.merge(&PoolOutcome::thread(0, k(900.0, 16), Probes { kept: 0, refused: 2 }, 8));
    /// assert_eq!(a.knee.unwrap().completions_per_s, 1900.0);
    /// assert_eq!(a.knee.unwrap().connections, 32);
    /// assert_eq!(a.knee.unwrap().probe_connections, 40);
    /// assert_eq!(a.probes, Probes { kept: 1, refused: 3 });
    /// assert_eq!((a.closed, a.stalls, a.threads, a.knee_threads), (12, 1, 2, 2));
    /// // One thread of two found a knee: scaled to both.
    /// let mut b = PoolOutcome::thread(0, k(411.0, 8), Probes { kept: 0, refused: 1 }, 0);
    /// b.merge(&PoolOutcome::thread(0, None, Probes { kept: 1, refused: 0 }, 0));
    /// assert_eq!(b.knee.unwrap().completions_per_s, 822.0);
    /// assert_eq!(b.knee.unwrap().connections, 16);
    /// assert_eq!(b.knee.unwrap().probe_connections, 24);
    /// assert_eq!((b.threads, b.knee_threads), (2, 1));
    /// // Merged from nothing (an engine's empty output), nothing changes.
    /// let mut c = PoolOutcome::default();
    /// c.merge(&b);
    /// assert_eq!(c, b);
    /// ```
    pub fn merge(&mut self, other: &PoolOutcome) {
        self.found = match (self.found, other.found) {
            (Some(a), Some(b)) => Some(Knee {
                completions_per_s: a.completions_per_s + b.completions_per_s,
                connections: a.connections + b.connections,
                probe_per_s: a.probe_per_s + b.probe_per_s,
                probe_connections: a.probe_connections + b.probe_connections,
                at_ns: a.at_ns.max(b.at_ns),
            }),
            (a, b) => a.or(b),
        };
        self.stalls += other.stalls;
        self.probes.kept += other.probes.kept;
        self.probes.refused += other.probes.refused;
        self.closed += other.closed;
        self.threads += other.threads;
        self.knee_threads += other.knee_threads;
        self.knee = self.found.map(|k| {
            if self.knee_threads == 0 || self.knee_threads >= self.threads {
                return k;
            }
            let f = f64::from(self.threads) / f64::from(self.knee_threads);
            let n = |c: u32| libm::round(f64::from(c) * f) as u32;
            Knee {
                completions_per_s: k.completions_per_s * f,
                connections: n(k.connections),
                probe_per_s: k.probe_per_s * f,
                probe_connections: n(k.probe_connections),
                at_ns: k.at_ns,
            }
        });
    }
}
