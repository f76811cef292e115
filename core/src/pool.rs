//! [`Pool`]: the connection pool's rules, decided once for both engines:
//! what happens to a due request ([`Pool::admit`]: send it, let it wait,
//! drop it) and how many connections to open now ([`Pool::to_open`]).
//!
//! The rules, each tested on a virtual clock (`tests/sim_pool.rs`):
//! - above `max_in_flight` requests in flight (sent or waiting) a due
//!   request is dropped; otherwise it goes out on an idle connection, or
//!   waits for one, its clock running from its intended time;
//! - the pool grows only toward what the measured concurrency needs,
//!   [`Pool::wanted`]: `ceil(rate x service time x 1.5) + 2` connections
//!   (Little's law with [`HEADROOM_PCT`] and [`SPARE`]), never below the
//!   pre-opened count nor above `max_connections`;
//! - at most [`MAX_CONNECTING`] connects (with their TLS handshakes) are in
//!   progress at once per pacing thread, and never more than the requests
//!   waiting for them;
//! - the service time is a time-weighted moving average
//!   ([`SERVICE_TAU_NS`]) of the observed service times (completion minus
//!   actual send) and, when every connection is busy, of the age of the
//!   oldest request in flight (a lower bound, [`IN_FLIGHT_TAU_NS`]), each
//!   sample clipped to [`SAMPLE_CLIP`] times the current estimate: a transient (the server not yet accepting, the generator
//!   descheduled for 100 ms) that makes every connection busy for a moment
//!   moves it by a few percent, a server that really slowed down moves it
//!   within a few hundred milliseconds.
//!
//! A pool of 16 connections whose server stalls for 1 ms at 90k req/s does
//! not grow at all; the old rule (one more connection per waiting request)
//! opened one per request that waited, and its connects on the pacing
//! thread made the next wait longer: the spiral to 1024 connections.
//!
//! ```
//! use metronome_core::pool::{Admit, Pool, PoolState};
//!
//! // 90k req/s on one pacer, 16 pre-opened, up to 1024, 50 us service.
//! let mut pool = Pool::new(90_000.0, 16, 1024, 10_000);
//! pool.seed(50_000);
//! assert_eq!(pool.wanted(), 16); // ceil(90k x 50 us x 1.5) + 2 = 9, the floor is 16
//! let busy = PoolState { idle: 0, open: 16, connecting: 0, waiting: 0, in_flight: 16 };
//! assert_eq!(pool.admit(busy), Admit::Wait { open: 0, full: false });
//! // The server really is slower now: 2 ms for a second.
//! for i in 1..=90_000u64 {
//!     pool.observe(i * 11_111, 2_000_000);
//! }
//! assert_eq!(pool.wanted(), 272); // ceil(90k x 2 ms x 1.5) + 2
//! assert_eq!(pool.admit(busy), Admit::Wait { open: 1, full: false });
//! ```

/// Connects (and TLS handshakes) in progress at once per pacing thread,
/// at most: a burst of waiting requests opens connections a few at a time.
pub const MAX_CONNECTING: u32 = 4;

/// Headroom over the measured concurrency, percent: the pool aims at
/// 1.5 x rate x service time.
pub const HEADROOM_PCT: u32 = 150;

/// Connections above the measured need, so a request rarely waits for one.
pub const SPARE: u32 = 2;

/// Time constant of the service-time average, ns: 100 ms.
pub const SERVICE_TAU_NS: u64 = 100_000_000;

/// Time constant for the age of the oldest request in flight when every
/// connection is busy ([`Pool::observe_in_flight`]), ns: 20 ms. That age is
/// a certain lower bound of a service time, not a noisy sample, so it is
/// followed faster: a stalled server gets connections within tens of
/// milliseconds.
pub const IN_FLIGHT_TAU_NS: u64 = 20_000_000;

/// The most one sample weighs, as time since the previous one, ns: after a
/// quiet spell of the run a single sample counts as 10 ms of them.
pub const SAMPLE_DT_CAP_NS: u64 = 10_000_000;

/// A service-time sample counts as at most this many times the estimate.
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
    /// Above the in-flight limit: drop it and count it.
    Drop,
    /// Send it now on an idle connection.
    Send,
    /// Let it wait for a connection (its clock runs from its intended
    /// time), and start `open` connects now.
    Wait {
        /// Connects to start now ([`Pool::to_open`] with this request waiting).
        open: u32,
        /// The pool was at `max_connections`: it could not grow.
        full: bool,
    },
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
    /// The service-time estimate, ns; `None` before the first sample.
    service_ns: Option<f64>,
    /// When the last sample was taken, ns.
    last_ns: u64,
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
        }
    }

    /// Sets the service-time estimate before the clock starts (from the
    /// warm-up requests), ns.
    pub fn seed(&mut self, service_ns: u64) {
        self.service_ns = Some(service_ns as f64);
    }

    /// A request sent on one of this thread's connections was answered
    /// (or failed) `service_ns` after its send, at `now_ns`.
    ///
    /// ```
    /// use metronome_core::pool::Pool;
    /// let mut p = Pool::new(1000.0, 4, 64, 100);
    /// assert_eq!(p.service_ns(), None);
    /// p.observe(1_000_000, 2_000_000);
    /// assert_eq!(p.service_ns(), Some(2_000_000)); // the first sample is the estimate
    /// p.observe(11_000_000, 10_000_000_000); // clipped to 4x, weighted 10 ms of 100
    /// assert_eq!(p.service_ns(), Some(2_600_000));
    /// ```
    pub fn observe(&mut self, now_ns: u64, service_ns: u64) {
        self.sample(now_ns, service_ns, SERVICE_TAU_NS);
    }

    /// One sample of `service_ns` at `now_ns`, averaged with time constant `tau_ns`.
    fn sample(&mut self, now_ns: u64, service_ns: u64, tau_ns: u64) {
        let sample = service_ns as f64;
        let est = match self.service_ns {
            None => sample,
            Some(est) => {
                let dt = now_ns.saturating_sub(self.last_ns).min(SAMPLE_DT_CAP_NS);
                let w = (dt as f64 / tau_ns as f64).min(1.0);
                est + (sample.min(est * SAMPLE_CLIP) - est) * w
            }
        };
        self.service_ns = Some(est);
        self.last_ns = self.last_ns.max(now_ns);
    }

    /// Every connection is busy and the oldest request in flight was sent
    /// `age_ns` ago, at `now_ns`: its service time is at least that. It
    /// counts as a sample (weighted and clipped like any other) when it is
    /// longer than the estimate, so a server that stalls grows the pool
    /// before its first late answer arrives; a 1 ms transient weighs
    /// nothing.
    ///
    /// ```
    /// use metronome_core::pool::Pool;
    /// let mut p = Pool::new(200.0, 8, 1024, 10_000);
    /// p.seed(1_000_000);
    /// p.observe_in_flight(5_000_000, 500_000); // shorter: says nothing
    /// assert_eq!(p.service_ns(), Some(1_000_000));
    /// p.observe_in_flight(10_000_000, 50_000_000); // 4 ms clipped, 5 ms of 20
    /// assert_eq!(p.service_ns(), Some(1_750_000));
    /// ```
    pub fn observe_in_flight(&mut self, now_ns: u64, age_ns: u64) {
        if self.service_ns.map_or(true, |est| age_ns as f64 > est) {
            self.sample(now_ns, age_ns, IN_FLIGHT_TAU_NS);
        } else {
            self.last_ns = self.last_ns.max(now_ns);
        }
    }

    /// The service-time estimate, ns (`None` before any sample or seed).
    pub fn service_ns(&self) -> Option<u64> {
        self.service_ns.map(|s| libm::round(s) as u64)
    }

    /// The connections the measured concurrency needs:
    /// `ceil(rate x service x 1.5) + 2`, within the pre-opened count (at
    /// least one) and `max_connections`. Before any sample: the pre-opened
    /// count (at least one).
    pub fn wanted(&self) -> u32 {
        let Some(service) = self.service_ns else {
            return self.floor.max(1).min(self.max);
        };
        let need = libm::ceil(self.rate * service * 1e-9 * f64::from(HEADROOM_PCT) / 100.0 - 1e-9);
        let need = if need >= f64::from(self.max) {
            self.max
        } else {
            (need.max(0.0) as u32).saturating_add(SPARE)
        };
        need.clamp(self.floor.max(1), self.max)
    }

    /// True when the pool is at `max_connections` (open or opening).
    pub fn is_full(&self, s: PoolState) -> bool {
        s.open + s.connecting >= self.max
    }

    /// What to do with a due request, given the pool before it
    /// (`s.waiting` and `s.in_flight` do not count it).
    ///
    /// ```
    /// use metronome_core::pool::{Admit, Pool, PoolState};
    /// let p = Pool::new(1000.0, 2, 2, 3);
    /// let s = PoolState { idle: 1, open: 2, connecting: 0, waiting: 0, in_flight: 1 };
    /// assert_eq!(p.admit(s), Admit::Send);
    /// let s = PoolState { idle: 0, open: 2, connecting: 0, waiting: 0, in_flight: 2 };
    /// assert_eq!(p.admit(s), Admit::Wait { open: 0, full: true });
    /// let s = PoolState { in_flight: 3, ..s };
    /// assert_eq!(p.admit(s), Admit::Drop);
    /// ```
    pub fn admit(&self, s: PoolState) -> Admit {
        if s.in_flight >= self.max_in_flight {
            return Admit::Drop;
        }
        if s.idle > 0 && s.waiting == 0 {
            return Admit::Send;
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

    /// How many connects to start now: toward [`Pool::wanted`], at most
    /// [`MAX_CONNECTING`] in progress, never more than the requests waiting
    /// for them, never above `max_connections`. Ask again when a connect
    /// ends (it may have failed) or a connection closes while requests wait.
    pub fn to_open(&self, s: PoolState) -> u32 {
        let total = s.open + s.connecting;
        let by_need = self.wanted().saturating_sub(total);
        let by_pace = MAX_CONNECTING.saturating_sub(s.connecting);
        let by_demand = s.waiting.saturating_sub(s.connecting);
        by_need.min(by_pace).min(by_demand)
    }
}
