//! What both engines share that needs std (feature `std`): core's std
//! side, fenced here as smoltcp fences its host adapters in `phy/`. The
//! rest of core is `no_std` and imports nothing from this module.
//!
//! - The types an engine is steered by and returns: [`Control`],
//!   [`Progress`], [`Origin`], [`RunOutput`] with [`Setup`] and [`Warm`],
//!   and why one could not run ([`EngineError`]).
//! - The procedures before the clock starts, written once for both: the
//!   pre-open rule ([`pre_open`]), the warm start and warm-up over blocking
//!   I/O ([`warm_start`], [`warm_up`]: threads, sleeps, blocking reads),
//!   the HTTP/2 greeting ([`greet_h2`]).
//! - Storage reserved before the clock ([`ExactSamples`], [`FollowUps`])
//!   and the per-interval series at a bounded cost ([`Series`]).
//! - `tls` (feature `tls`, brings rustls): the TLS both engines share:
//!   the target's client side, the handshake, and the kind of a failed
//!   handshake.
//!
//! Both engines (`metronome-uring`, `metronome-std`) depend on this and on
//! nothing of each other. Nothing here is on a hot path: an engine fills its
//! recorder through a [`Ledger`] over
//! [`RunOutput::tally`], and builds the rest once, after its clock stops.

use std::boxed::Box;
use std::fmt;
use std::format;
use std::string::String;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use std::vec::Vec;

use crate::exchange::{compact, Exchange, Feed, GAP_CAP};
use crate::histogram::Histogram;
use crate::ledger::{Ledger, Tally};
use crate::measure::{IntervalSink, NameTally, Recorder, StageTally, ThreadStats};
use crate::plan::{Plan, PlanError};

mod greet;
mod live;
mod pre_open;
mod requests;
mod reserved;
mod series;
#[cfg(feature = "tls")]
pub mod tls;
pub use greet::{greet_h2, Greeted, ReadWrite};
pub use live::{LiveIntervals, LiveReader, Published};
pub use pre_open::pre_open;
pub use requests::{request_queue, RequestDrain, RequestFeed, REQUEST_QUEUE_CAPACITY};
pub use reserved::{ExactSamples, FollowUps};
pub use series::{Series, CHUNK_BYTES, RING_MAX};

/// Stack size of an engine thread that holds a [`Recorder`] (a few hundred
/// KiB of inline counters; debug builds copy it on the stack).
pub const RECORDER_STACK: usize = 64 << 20;

/// Steering shared between the caller and a running engine.
#[derive(Debug, Default)]
pub struct Control {
    /// Set (e.g. on Ctrl-C) to stop scheduling; replies in flight are still
    /// awaited briefly and everything measured is returned.
    pub stop: AtomicBool,
    /// Live counters for a progress line.
    pub progress: Progress,
    /// Start the schedule's clock at this wall-clock instant (`--start-at`)
    /// instead of as soon as the connections are open: the engine opens its
    /// connections first, then waits. When the instant has passed by the
    /// time the engine is ready, the clock still starts at it: the requests
    /// already due leave at once and their lateness is send lag.
    pub start_at: Option<SystemTime>,
    /// Where each measured request's record goes (`--out-requests`), or
    /// `None`: every thread that records requests takes a clone into its
    /// [`RunOutput::requests`] before its clock starts.
    pub requests: Option<RequestFeed>,
}

/// How far ahead of "now" a run's clock starts when no `start_at` is
/// given: 2 ms, more than a thread's wake-up on a loaded machine.
pub const START_LEAD: Duration = Duration::from_millis(2);

/// The zero of a run's clock: a monotonic instant and the wall-clock time
/// it stands for, in nanoseconds since the Unix epoch.
#[derive(Clone, Copy, Debug)]
pub struct Origin {
    /// The zero on the monotonic clock.
    pub instant: Instant,
    /// The same instant on the wall clock, ns since the Unix epoch.
    pub unix_ns: u64,
}

/// Nanoseconds since the Unix epoch of a wall-clock time (0 before it).
pub fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos().min(u128::from(u64::MAX)) as u64)
}

impl Origin {
    /// The origin of a run started by `control`: its `start_at`, or
    /// [`START_LEAD`] from now, so every pacing thread is already awake and
    /// busy-waiting (see [`Origin::wait_unless`]) when the first request is
    /// due: the first request of a run leaves on time, not after a thread's
    /// wake-up.
    pub fn for_run(control: &Control) -> Origin {
        let origin = match control.start_at {
            Some(t) => Origin::at(t),
            None => {
                let now = Origin::now();
                Origin {
                    instant: now.instant + START_LEAD,
                    unix_ns: now.unix_ns + START_LEAD.as_nanos() as u64,
                }
            }
        };
        control
            .progress
            .origin_unix_ns
            .store(origin.unix_ns, Ordering::Release);
        if let Some(feed) = &control.requests {
            feed.set_origin(origin.unix_ns);
        }
        origin
    }

    /// Now.
    pub fn now() -> Origin {
        let wall = SystemTime::now();
        Origin {
            instant: Instant::now(),
            unix_ns: unix_ns(wall),
        }
    }

    /// The monotonic instant that stands for the wall-clock time `at`
    /// (in the future or the past), read against one pair of clock
    /// readings taken back to back.
    pub fn at(at: SystemTime) -> Origin {
        let (wall, mono) = (SystemTime::now(), Instant::now());
        let instant = match at.duration_since(wall) {
            Ok(ahead) => mono + ahead,
            Err(e) => mono.checked_sub(e.duration()).unwrap_or(mono),
        };
        Origin {
            instant,
            unix_ns: unix_ns(at),
        }
    }

    /// Waits until the origin (sleeping, then busy-waiting the last 200 us
    /// so the wake-up is on time), and returns how late the caller really
    /// was there, ns: 0 to a few microseconds, or how long ago the origin
    /// passed when it had passed already.
    pub fn wait(&self) -> u64 {
        self.wait_unless(&AtomicBool::new(false))
    }

    /// [`Origin::wait`], but returns early (within 20 ms) once `stop` is
    /// set, e.g. by Ctrl-C before a far `--start-at`.
    pub fn wait_unless(&self, stop: &AtomicBool) -> u64 {
        const SPIN: Duration = Duration::from_micros(200);
        const SLICE: Duration = Duration::from_millis(20);
        loop {
            let now = Instant::now();
            if now >= self.instant || stop.load(Ordering::Relaxed) {
                return now
                    .saturating_duration_since(self.instant)
                    .as_nanos()
                    .min(u128::from(u64::MAX)) as u64;
            }
            let left = self.instant - now;
            if left > SPIN {
                std::thread::sleep((left - SPIN).min(SLICE));
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

impl Control {
    /// True once a stop was requested.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Live counters of the measured phase, published by the engine for a
/// progress line, and its closed intervals for a watcher
/// ([`LiveIntervals`]); never used for the report itself.
#[derive(Debug, Default)]
pub struct Progress {
    /// Requests sent.
    pub sent: AtomicU64,
    /// Requests that succeeded.
    pub ok: AtomicU64,
    /// Requests that failed.
    pub errors: AtomicU64,
    /// p99 latency of the last complete interval, in ns.
    pub last_p99_ns: AtomicU64,
    /// p99 send lag of the last complete interval, in ns.
    pub last_send_lag_p99_ns: AtomicU64,
    /// Latency samples of the last complete interval (too few for a p99
    /// below 100).
    pub last_samples: AtomicU64,
    /// Send-lag samples of the last complete interval.
    pub last_send_lag_samples: AtomicU64,
    /// Connections open (established and not closed) over the engine's
    /// threads, as they last published it: every few milliseconds (uring,
    /// each worker adding the change of its own count since its last
    /// publish, with wrapping arithmetic) or every 50 ms (std's pacer).
    /// A gauge for the live push (docs/prometheus.md).
    pub connections_open: AtomicU64,
    /// Every closed interval, copied for a watcher when enabled.
    pub live: LiveIntervals,
    /// The run's origin ([`Origin::for_run`]), ns since the Unix epoch; 0
    /// until the engine set its clock.
    pub origin_unix_ns: AtomicU64,
}

impl Progress {
    /// A thread's publishing state for [`Progress::publish_interval`]:
    /// engines call it before their clock starts, once per thread that
    /// holds a series (with live intervals on, it reserves a mailbox).
    pub fn published(&self) -> Published {
        self.live.register()
    }

    /// Publishes the p99s of the last complete interval at `now_ns`, once
    /// per interval (`published` remembers which one was published last),
    /// and, with live intervals on, copies the closed intervals into the
    /// thread's mailbox ([`LiveIntervals`]).
    pub fn publish_interval(
        &self,
        ledger: &Ledger<'_>,
        intervals: &dyn IntervalSink,
        now_ns: u64,
        published: &mut Published,
    ) {
        published.copy_closed(ledger.plan(), intervals, now_ns);
        let Some((last, p99, lag_p99)) = ledger.last_complete(intervals, now_ns) else {
            return;
        };
        if published.last == Some(last) {
            return;
        }
        self.last_p99_ns.store(p99, Ordering::Relaxed);
        self.last_send_lag_p99_ns.store(lag_p99, Ordering::Relaxed);
        if let Some((latency, send_lag)) = intervals.samples(last) {
            self.last_samples.store(latency, Ordering::Relaxed);
            self.last_send_lag_samples
                .store(send_lag, Ordering::Relaxed);
        }
        published.last = Some(last);
    }
}

/// Everything an engine measured.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// The merged recorder of all threads.
    pub recorder: Box<Recorder>,
    /// The report intervals of the measured phase and of the drain after
    /// it (merged), held at a bounded cost per interval ([`Series`]).
    pub intervals: Series,
    /// One entry per stage of a staged run (merged; empty otherwise).
    pub stages: Vec<StageTally>,
    /// One entry per name of a request mix (merged; empty otherwise).
    pub names: Vec<NameTally>,
    /// Every success's exact per-request values, in storage reserved
    /// before the clock ([`Plan::exact_capacity`]).
    pub exact: ExactSamples,
    /// Conversations' next turns waiting for their intended time, in
    /// storage reserved before the clock; the engine's pacer takes them
    /// from here (empty after the run).
    pub follow_ups: FollowUps,
    /// The engine's threads and their cost.
    pub threads: Vec<ThreadStats>,
    /// CPU time of the whole engine (all its threads), ns.
    pub cpu_ns: u64,
    /// Busy-wait time of the whole engine, ns.
    pub spin_ns: u64,
    /// Wall time of the measured phase actually run (shorter than the plan's
    /// duration after a stop), ns.
    pub measured_ns: u64,
    /// Connections opened in all (pre-opened, grown and replacements).
    pub connections_opened: u64,
    /// The most connections open at once.
    pub peak_connections: u64,
    /// Measured requests that found no idle connection and waited for one.
    pub waited_for_connection: u64,
    /// Inter-token gaps beyond [`GAP_CAP`] per request, not recorded.
    pub dropped_gaps: u64,
    /// True when the run was stopped early.
    pub stopped: bool,
    /// Plain warnings found by the engine itself.
    pub warnings: Vec<String>,
    /// The wall-clock time of the schedule's zero (the clock's origin), ns
    /// since the Unix epoch: [`Control::start_at`] when given, else the
    /// instant the engine started its clock, connections open.
    pub start_unix_ns: u64,
    /// How long after the origin the engine really began pacing, ns (the
    /// latest of its pacing threads): microseconds when it waited for the
    /// origin, longer when the origin had passed before it was ready.
    pub start_late_ns: u64,
    /// Connection set-up: connect and TLS handshake times, resumptions,
    /// handshake failures.
    pub setup: Setup,
    /// The warm-up before the clock ([`crate::plan::WarmUp`]).
    pub warm: Warm,
    /// What the pool rules did: the knee, probes, connections closed.
    pub pool: crate::pool::PoolOutcome,
    /// Where this thread's measured requests' records go
    /// ([`Control::requests`]); never merged.
    pub requests: Option<RequestFeed>,
}

/// What the warm-up of the pre-opened connections found, before the clock
/// started: never counted as load, reported apart.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Warm {
    /// Warm-up requests sent (one per pre-opened connection).
    pub requests: u64,
    /// Of them, answered with a complete response the connection survived
    /// (any status: the connection is usable).
    pub answered: u64,
    /// Of them, failed (a fault, a timeout, a close): the connection was
    /// opened again, or dropped from the pool.
    pub failed: u64,
    /// Connections on which bytes arrived before any request (or after the
    /// warm-up response): closed, counted here, never matched to a request.
    pub unsolicited: u64,
    /// Connections opened again during the warm-up (after bytes before
    /// any request, a failed warm-up, or a close after its answer); they
    /// count in [`RunOutput::connections_opened`].
    pub reopened: u64,
    /// Service time of each answered warm-up request, ns.
    pub service_ns: Vec<u64>,
    /// The server wrote before any request on a connection and again on its
    /// replacement: it writes on accept. No connection of the warm start is
    /// kept, and every connection of the run distrusts its first response
    /// ([`Exchange::distrust_first_responses`]).
    pub writes_first: bool,
}

impl Warm {
    /// Adds another engine thread's warm-up.
    pub fn merge(&mut self, other: &Warm) {
        self.requests += other.requests;
        self.answered += other.answered;
        self.failed += other.failed;
        self.unsolicited += other.unsolicited;
        self.reopened += other.reopened;
        self.service_ns.extend_from_slice(&other.service_ns);
        self.writes_first |= other.writes_first;
    }

    /// The median service time of the answered warm-up requests, ns (the
    /// lower median; `None` when none was answered).
    ///
    /// ```
    /// use metronome_core::engine::Warm;
    /// let w = Warm { service_ns: vec![30, 10, 20, 90], ..Warm::default() };
    /// assert_eq!(w.median_service_ns(), Some(20));
    /// assert_eq!(Warm::default().median_service_ns(), None);
    /// ```
    pub fn median_service_ns(&self) -> Option<u64> {
        self.service_percentile(50)
    }

    /// The fastest answered warm-up request's service time, ns.
    ///
    /// ```
    /// use metronome_core::engine::Warm;
    /// let w = Warm { service_ns: vec![30, 10, 20, 90], ..Warm::default() };
    /// assert_eq!(w.min_service_ns(), Some(10));
    /// ```
    pub fn min_service_ns(&self) -> Option<u64> {
        self.service_ns.iter().copied().min()
    }

    /// The lower `pct`-th percentile of the warm-up service times.
    fn service_percentile(&self, pct: usize) -> Option<u64> {
        let pct = pct.min(100);
        let mut v = self.service_ns.clone();
        v.sort_unstable();
        v.get(v.len().saturating_sub(1) * pct / 100).copied()
    }
}

/// How one warm-up request ended ([`warm_up`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarmReply {
    /// A complete response after `service_ns`; `keep_alive` false when the
    /// server closes the connection after it (open another).
    Answered {
        /// Send to the end of the response, ns.
        service_ns: u64,
        /// The connection stays open for the run.
        keep_alive: bool,
    },
    /// No usable response: a fault, a close, a timeout, bad framing, or
    /// bytes after the response (unsolicited). The connection is not used.
    Failed,
}

/// A pre-opened connection as the warm start ([`warm_start`]) sees it:
/// the engine does the I/O, core decides what to do with the answers.
pub trait WarmConn: Send {
    /// True when bytes (or a close) already wait on the connection, before
    /// any request was sent on it.
    fn early_bytes(&mut self) -> bool;

    /// Sends the run's first request once and reads its answer (core's
    /// [`warm_up`]); `give_up` turns true once the warm-up's budget is
    /// spent or the run was stopped.
    fn warm(&mut self, plan: &Plan<'_>, give_up: &(dyn Fn() -> bool + Sync)) -> WarmReply;
}

/// The warm start of the pre-opened connections, the same for both engines
/// ([`crate::plan::WarmUp`]), all of it within [`warm_budget_ns`] (the
/// request timeout, at most [`WARM_BUDGET_NS`]) and never past a stop:
///
/// 1. After [`SETTLE_NS`](crate::plan::SETTLE_NS), a connection with bytes
///    (or a close) before any request is closed and replaced once by `open`
///    (counted as unsolicited); the replacement gets the same check. Bytes
///    on the replacement too: the server writes on accept
///    ([`Warm::writes_first`]), and no connection is kept.
/// 2. With [`WarmUp::Request`](crate::plan::WarmUp::Request) every
///    connection then answers the run's first request once, unmeasured, all
///    at once (a thread each), within the first half of the budget. One
///    whose warm-up got no answer (a fault, a timeout, bytes after the
///    answer) or that the server closed after its answer is replaced once,
///    within the rest of the budget, and used unwarmed: a pending answer
///    must never be read as a measured request's.
/// 3. Every connection kept (replacements included) is looked at once more
///    after another settle: bytes there (after a warm-up answer, or before
///    any request on a replacement) leave it out, counted as unsolicited.
///
/// `open(limit)` opens one connection within `limit` (its connect and TLS
/// handshake), or gives `None`. A connection that cannot be replaced in
/// time is left out: the pool opens connections during the run. Returns
/// the connections kept.
pub fn warm_start<C: WarmConn>(
    plan: &Plan<'_>,
    control: &Control,
    conns: Vec<C>,
    mut open: impl FnMut(Duration) -> Option<C>,
    warm: &mut Warm,
) -> Vec<C> {
    let started = Instant::now();
    let budget = Duration::from_nanos(warm_budget_ns(plan));
    let connect_limit = Duration::from_nanos(plan.connect_timeout_ns());
    let settle = Duration::from_nanos(crate::plan::SETTLE_NS);
    // Opens a replacement within what is left of the budget (and of the
    // connect timeout); none once it is spent or the run was stopped.
    let mut reopen = |warm: &mut Warm| {
        let left = budget.saturating_sub(started.elapsed()).min(connect_limit);
        if control.stopped() || left.is_zero() {
            return None;
        }
        let fresh = open(left);
        warm.reopened += u64::from(fresh.is_some());
        fresh
    };
    std::thread::sleep(settle);
    // 1. Bytes before any request: open once more, then look again.
    let mut checked = Vec::with_capacity(conns.len());
    let mut again = false;
    for mut c in conns {
        if !c.early_bytes() {
            checked.push((c, false));
            continue;
        }
        warm.unsolicited += 1;
        drop(c);
        if let Some(fresh) = reopen(warm) {
            checked.push((fresh, true));
            again = true;
        }
    }
    if again {
        std::thread::sleep(settle);
    }
    let mut kept = Vec::with_capacity(checked.len());
    for (mut c, again) in checked {
        if again && c.early_bytes() {
            warm.unsolicited += 1;
            warm.writes_first = true;
        } else {
            kept.push(c);
        }
    }
    if warm.writes_first {
        // A server that writes on accept: bytes may come after any check,
        // so no connection opened before now carries a measured request.
        return Vec::new();
    }
    if plan.warm_up != crate::plan::WarmUp::Request || kept.is_empty() {
        return kept;
    }
    // 2. One request on each, all at once, within half the budget.
    let answer_by = budget / 2;
    let give_up = || control.stopped() || started.elapsed() >= answer_by;
    let replies: Vec<WarmReply> = std::thread::scope(|scope| {
        let handles: Vec<_> = kept
            .iter_mut()
            .map(|c| {
                let give_up = &give_up;
                scope.spawn(move || c.warm(plan, give_up))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(WarmReply::Failed))
            .collect()
    });
    let mut out = Vec::with_capacity(kept.len());
    for (c, reply) in kept.into_iter().zip(replies) {
        warm.requests += 1;
        match reply {
            WarmReply::Answered {
                service_ns,
                keep_alive,
            } => {
                warm.answered += 1;
                warm.service_ns.push(service_ns);
                if keep_alive {
                    out.push(c);
                    continue;
                }
            }
            WarmReply::Failed => warm.failed += 1,
        }
        // Closed by the server after its answer, or no usable answer (its
        // answer may still come): open once more, unwarmed.
        drop(c);
        out.extend(reopen(warm));
    }
    // 3. Bytes after a warm-up answer, or before any request on a
    // replacement: not the run's either.
    std::thread::sleep(settle);
    out.retain_mut(|c| {
        let early = c.early_bytes();
        warm.unsolicited += u64::from(early);
        !early
    });
    out
}

/// The longest the warm start may take (its requests, its replacements),
/// all connections together: [`WARM_BUDGET_NS`], or the request timeout
/// when shorter. Its settles (three times [`SETTLE_NS`](crate::plan::SETTLE_NS)
/// at most) come on top.
///
/// ```
/// # use metronome_core::plan::*;
/// # use metronome_core::engine::warm_budget_ns;
/// let mut plan = example_plan();
/// plan.timeout_ns = 1_000_000_000;
/// assert_eq!(warm_budget_ns(&plan), 1_000_000_000);
/// plan.timeout_ns = 30_000_000_000;
/// assert_eq!(warm_budget_ns(&plan), 2_000_000_000);
/// ```
pub fn warm_budget_ns(plan: &Plan<'_>) -> u64 {
    plan.timeout_ns.min(WARM_BUDGET_NS)
}

/// The most the warm start may take: 2 s ([`warm_budget_ns`]). Its
/// requests get the first half; a connection not answered by then is
/// opened again (within the second half) and used unwarmed.
pub const WARM_BUDGET_NS: u64 = 2_000_000_000;

/// Sends `request` once on a connection before the clock starts and reads
/// its response with core's [`Exchange`] (blocking I/O through `io`, which
/// is the socket or a TLS stream over it, with short read timeouts set:
/// each timeout asks `give_up`, true once the warm-up's budget is spent or
/// the run was stopped). Any status counts as answered: it proves the
/// connection usable.
pub fn warm_up<S: std::io::Read + std::io::Write>(
    io: &mut S,
    exchange: &mut Exchange,
    request: &[u8],
    give_up: impl Fn() -> bool,
) -> WarmReply {
    let started = Instant::now();
    let ns = || started.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
    exchange.reset_connection();
    exchange.begin(0, 0, request);
    let mut written = 0;
    while written < request.len() {
        match io.write(&request[written..]) {
            Ok(0) => return WarmReply::Failed,
            Ok(n) => written += n,
            Err(e) if slice_ended(&e) && !give_up() => {}
            Err(_) => return WarmReply::Failed,
        }
    }
    loop {
        match io.flush() {
            Ok(()) => break,
            Err(e) if slice_ended(&e) && !give_up() => {}
            Err(_) => return WarmReply::Failed,
        }
    }
    let mut buf = std::vec![0u8; crate::plan::READ_BUF_BYTES];
    let mut gaps = std::vec![0u64; GAP_CAP];
    let (mut start, mut end) = (0usize, 0usize);
    let reply = loop {
        let n = match io.read(&mut buf[end..]) {
            Ok(0) => break WarmReply::Failed,
            Ok(n) => n,
            Err(e) if slice_ended(&e) && !give_up() => continue,
            Err(_) => break WarmReply::Failed,
        };
        end += n;
        match exchange.handle_read(ns(), &buf[start..end], &mut gaps) {
            Err(_) => break WarmReply::Failed,
            Ok(Feed::Complete {
                keep_alive,
                unsolicited,
                ..
            }) => {
                break if unsolicited {
                    WarmReply::Failed
                } else {
                    WarmReply::Answered {
                        service_ns: ns(),
                        keep_alive,
                    }
                }
            }
            Ok(Feed::NeedMore { consumed }) => {
                start += consumed;
                // Bytes that never complete a response (a 100 Continue
                // every few ms) must not hold the warm-up past its budget.
                if give_up() || compact(&mut buf, &mut start, &mut end).is_err() {
                    break WarmReply::Failed;
                }
            }
        }
    };
    exchange.reset_connection();
    reply
}

/// A read or write timed out (a slice of the warm-up's wait), or was interrupted.
fn slice_ended(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

/// Why a TLS handshake failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandshakeFailure {
    /// The server's certificate was refused (unknown issuer, expired, wrong
    /// name): fix the server, or trust its CA with `--cacert`.
    Certificate,
    /// Anything else in the protocol: no common version or cipher, an
    /// alert, a server that does not speak TLS on this port.
    Protocol,
    /// The handshake did not complete within the connect timeout.
    Timeout,
}

impl HandshakeFailure {
    /// Every kind, in report order.
    pub const ALL: [HandshakeFailure; 3] = [
        HandshakeFailure::Certificate,
        HandshakeFailure::Protocol,
        HandshakeFailure::Timeout,
    ];

    /// Position in [`Setup::handshake_failures`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The name in the report: `certificate`, `protocol`, `timeout`.
    pub fn name(self) -> &'static str {
        match self {
            HandshakeFailure::Certificate => "certificate",
            HandshakeFailure::Protocol => "protocol",
            HandshakeFailure::Timeout => "timeout",
        }
    }
}

/// Connection set-up as measured by an engine, over every connection it
/// opened (pre-opened ones included): TCP connect time (socket to
/// established) and TLS handshake time (established to handshake done), ns.
#[derive(Clone, Debug)]
pub struct Setup {
    /// TCP connect times, ns.
    pub connect: Box<Histogram>,
    /// TLS handshake times, ns (empty for plain HTTP).
    pub tls_handshake: Box<Histogram>,
    /// TLS handshakes that resumed an earlier session.
    pub resumed: u64,
    /// TLS handshakes that failed, by [`HandshakeFailure::index`].
    pub handshake_failures: [u64; 3],
    /// TLS handshakes completed, by the version agreed: `[TLS 1.2, TLS 1.3]`.
    pub tls_versions: [u64; 2],
    /// TLS handshakes completed, by the ALPN protocol the server chose:
    /// `[none, http/1.1, h2]` ([`Setup::ALPN`]).
    pub alpn: [u64; 3],
    /// HTTP/2: the most streams open at once on one connection.
    pub h2_peak_streams: u32,
    /// HTTP/2: the smallest and largest `SETTINGS_MAX_CONCURRENT_STREAMS`
    /// the server advertised on a connection (`None` until one did; a
    /// server that never sets it allows unlimited streams).
    pub h2_server_max_streams: Option<(u32, u32)>,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            connect: Box::new(Histogram::new()),
            tls_handshake: Box::new(Histogram::new()),
            resumed: 0,
            handshake_failures: [0; 3],
            tls_versions: [0; 2],
            alpn: [0; 3],
            h2_peak_streams: 0,
            h2_server_max_streams: None,
        }
    }
}

impl Setup {
    /// Records one connection: its connect time and, over TLS, its
    /// handshake time and whether it resumed a session.
    pub fn opened(&mut self, connect_ns: u64, handshake_ns: Option<u64>, resumed: bool) {
        self.connect.record(connect_ns);
        if let Some(h) = handshake_ns {
            self.tls_handshake.record(h);
        }
        self.resumed += u64::from(resumed);
    }

    /// Counts one failed handshake.
    pub fn failed(&mut self, kind: HandshakeFailure) {
        self.handshake_failures[kind.index()] += 1;
    }

    /// The names of [`Setup::alpn`]'s counts, in order (`""`: the server
    /// chose no protocol).
    pub const ALPN: [&'static str; 3] = ["", "http/1.1", "h2"];

    /// Counts one completed TLS handshake by what it agreed: TLS 1.3 (else
    /// 1.2) and the ALPN protocol chosen (`None`: none; one the client did
    /// not offer counts as none).
    ///
    /// ```
    /// let mut s = metronome_core::engine::Setup::default();
    /// s.negotiated(true, Some(b"h2"));
    /// s.negotiated(false, None);
    /// assert_eq!((s.tls_versions, s.alpn), ([1, 1], [1, 0, 1]));
    /// ```
    pub fn negotiated(&mut self, tls13: bool, alpn: Option<&[u8]>) {
        self.tls_versions[usize::from(tls13)] += 1;
        let at = alpn
            .and_then(|a| {
                Self::ALPN
                    .iter()
                    .position(|n| !n.is_empty() && n.as_bytes() == a)
            })
            .unwrap_or(0);
        self.alpn[at] += 1;
    }

    /// Records an HTTP/2 connection's state after a stream started: the
    /// streams open on it and the server's `SETTINGS_MAX_CONCURRENT_STREAMS`
    /// (`None`: not sent, unlimited).
    ///
    /// ```
    /// let mut s = metronome_core::engine::Setup::default();
    /// s.h2_streams(3, Some(100));
    /// s.h2_streams(1, Some(8));
    /// assert_eq!((s.h2_peak_streams, s.h2_server_max_streams), (3, Some((8, 100))));
    /// ```
    pub fn h2_streams(&mut self, open: usize, server_max: Option<u32>) {
        self.h2_peak_streams = self
            .h2_peak_streams
            .max(u32::try_from(open).unwrap_or(u32::MAX));
        if let Some(m) = server_max {
            self.h2_server_max_streams = Some(match self.h2_server_max_streams {
                Some((lo, hi)) => (lo.min(m), hi.max(m)),
                None => (m, m),
            });
        }
    }

    /// Adds another set-up's counts (exact).
    pub fn merge(&mut self, other: &Setup) {
        self.connect.merge(&other.connect);
        self.tls_handshake.merge(&other.tls_handshake);
        self.resumed += other.resumed;
        for (a, b) in self
            .handshake_failures
            .iter_mut()
            .zip(other.handshake_failures)
        {
            *a += b;
        }
        for (a, b) in self.tls_versions.iter_mut().zip(other.tls_versions) {
            *a += b;
        }
        for (a, b) in self.alpn.iter_mut().zip(other.alpn) {
            *a += b;
        }
        if let Some((lo, hi)) = other.h2_server_max_streams {
            self.h2_streams(0, Some(lo));
            self.h2_streams(0, Some(hi));
        }
        self.h2_peak_streams = self.h2_peak_streams.max(other.h2_peak_streams);
    }
}

impl RunOutput {
    /// An empty output sized for `plan`'s intervals.
    pub fn empty(plan: &Plan<'_>) -> RunOutput {
        RunOutput {
            recorder: Box::new(Recorder::new()),
            intervals: Series::for_plan(plan),
            stages: (0..plan.stage_count()).map(|_| StageTally::new()).collect(),
            names: (0..plan.name_count()).map(|_| NameTally::new()).collect(),
            exact: ExactSamples::with_peers(plan.exact_capacity(), plan.peer_samples),
            follow_ups: FollowUps::with_capacity(plan.follow_up_capacity()),
            threads: Vec::new(),
            cpu_ns: 0,
            spin_ns: 0,
            measured_ns: 0,
            connections_opened: 0,
            peak_connections: 0,
            waited_for_connection: 0,
            dropped_gaps: 0,
            stopped: false,
            warnings: Vec::new(),
            setup: Setup::default(),
            start_unix_ns: 0,
            start_late_ns: 0,
            warm: Warm::default(),
            pool: crate::pool::PoolOutcome::default(),
            requests: None,
        }
    }

    /// An empty output sized for `plan`'s intervals that hands its
    /// requests' records to `control`'s queue, if it has one: for a thread
    /// that records requests.
    pub fn recording(plan: &Plan<'_>, control: &Control) -> RunOutput {
        RunOutput {
            requests: control.requests.clone(),
            ..RunOutput::empty(plan)
        }
    }

    /// The storage a [`Ledger`] records into.
    pub fn tally(&mut self) -> Tally<'_> {
        Tally {
            recorder: &mut self.recorder,
            intervals: &mut self.intervals,
            stages: &mut self.stages,
            names: &mut self.names,
            samples: Some(&mut self.exact),
            follow_ups: Some(&mut self.follow_ups),
            requests: self
                .requests
                .as_mut()
                .map(|f| f as &mut dyn crate::record::RequestSink),
        }
    }

    /// Merges another thread's or engine's output into this one (exact).
    pub fn merge(&mut self, other: &RunOutput) {
        self.recorder.merge(&other.recorder);
        self.intervals.merge(&other.intervals);
        if self.stages.len() < other.stages.len() {
            self.stages.resize_with(other.stages.len(), StageTally::new);
        }
        for (a, b) in self.stages.iter_mut().zip(&other.stages) {
            a.merge(b);
        }
        if self.names.len() < other.names.len() {
            self.names.resize_with(other.names.len(), NameTally::new);
        }
        for (a, b) in self.names.iter_mut().zip(&other.names) {
            a.merge(b);
        }
        self.exact.merge(&other.exact);
        self.threads.extend_from_slice(&other.threads);
        self.cpu_ns += other.cpu_ns;
        self.spin_ns += other.spin_ns;
        self.measured_ns = self.measured_ns.max(other.measured_ns);
        self.connections_opened += other.connections_opened;
        self.peak_connections += other.peak_connections;
        self.waited_for_connection += other.waited_for_connection;
        self.dropped_gaps += other.dropped_gaps;
        self.stopped |= other.stopped;
        self.warnings.extend(other.warnings.iter().cloned());
        self.setup.merge(&other.setup);
        self.warm.merge(&other.warm);
        self.pool.merge(&other.pool);
        if self.start_unix_ns == 0 {
            self.start_unix_ns = other.start_unix_ns;
        }
        self.start_late_ns = self.start_late_ns.max(other.start_late_ns);
    }

    /// The last step of every engine: in a closed loop a request is
    /// "scheduled" when a worker sends it or finds no connection for it;
    /// gaps that did not fit become a warning.
    pub fn finalize(&mut self, plan: &Plan<'_>) {
        if matches!(plan.model, crate::plan::Model::Closed { .. }) {
            self.recorder.scheduled = self.recorder.sent + self.recorder.unsent_total();
        }
        if self.dropped_gaps > 0 {
            self.warnings.push(format!(
                "{} inter-token gaps beyond {GAP_CAP} per request were not recorded in the ITL histogram",
                self.dropped_gaps
            ));
        }
    }
}

/// Why an engine could not run.
#[derive(Debug)]
#[non_exhaustive]
pub enum EngineError {
    /// The plan breaks a rule; see [`PlanError`] for the cause and fix.
    Plan(PlanError),
    /// Not even one connection could be opened before the clock started
    /// (refused, unreachable, timed out): check the URL and that the server runs.
    Connect(std::io::Error),
    /// A thread could not be started or the engine itself failed.
    Io(&'static str, std::io::Error),
    /// The TLS handshake of a connection opened before the clock started
    /// failed; the message says why and what to change.
    Handshake(HandshakeFailure, String),
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::Plan(e) => write!(f, "invalid plan: {e}"),
            EngineError::Connect(e) => write!(f, "cannot connect to the target: {e}"),
            EngineError::Io(what, e) => write!(f, "{what}: {e}"),
            EngineError::Handshake(_, why) => {
                write!(f, "TLS handshake with the target failed: {why}")
            }
        }
    }
}

/// The cause is part of the message (one line, as a user reads it), so it
/// is not repeated as a `source` (a `{:#}` chain would print it twice).
impl std::error::Error for EngineError {}

impl From<PlanError> for EngineError {
    fn from(e: PlanError) -> Self {
        EngineError::Plan(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;

    /// A stream that answers every read with another `100 Continue` and
    /// takes every write (a server that never sends a final response).
    struct Continues;

    impl std::io::Read for Continues {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let b = b"HTTP/1.1 100 Continue\r\n\r\n";
            buf[..b.len()].copy_from_slice(b);
            Ok(b.len())
        }
    }

    impl std::io::Write for Continues {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Bytes that keep coming and never complete a response do not hold
    /// the warm-up past its budget: it fails once `give_up` is true.
    #[test]
    fn a_warm_up_answered_by_endless_interim_responses_gives_up() {
        let plan = crate::plan::example_plan();
        let mut exchange = Exchange::for_plan(&plan);
        let asked = std::cell::Cell::new(0u32);
        let give_up = || {
            asked.set(asked.get() + 1);
            asked.get() > 50
        };
        let reply = warm_up(&mut Continues, &mut exchange, plan.requests[0], give_up);
        assert_eq!(reply, WarmReply::Failed);
        assert_eq!(asked.get(), 51);
    }

    /// A pre-opened connection for [`warm_start`]: bytes before any request
    /// when `early`, and a warm-up that waits until it is given up on
    /// (`silent`) or is answered at once.
    struct Fake {
        early: bool,
        silent: bool,
    }

    impl WarmConn for Fake {
        fn early_bytes(&mut self) -> bool {
            self.early
        }

        fn warm(&mut self, _: &Plan<'_>, give_up: &(dyn Fn() -> bool + Sync)) -> WarmReply {
            if !self.silent {
                return WarmReply::Answered {
                    service_ns: 1,
                    keep_alive: true,
                };
            }
            while !give_up() {
                std::thread::sleep(Duration::from_millis(1));
            }
            WarmReply::Failed
        }
    }

    /// The warm start of a server that never answers ends within its
    /// budget (the timeout, 200 ms here): the warm-ups are given up after
    /// half of it, each connection is replaced within the rest (the
    /// connect limit given to `open` never exceeds what is left), and the
    /// replacements are kept, unwarmed.
    #[test]
    fn the_warm_start_keeps_to_its_budget() {
        let plan = Plan {
            timeout_ns: 200_000_000,
            warm_up: crate::plan::WarmUp::Request,
            ..crate::plan::example_plan()
        };
        let control = Control::default();
        let conns = (0..4)
            .map(|_| Fake {
                early: false,
                silent: true,
            })
            .collect();
        let mut limits = Vec::new();
        let mut warm = Warm::default();
        let t = Instant::now();
        let open = |limit: Duration| {
            limits.push(limit);
            Some(Fake {
                early: false,
                silent: true,
            })
        };
        let kept = warm_start(&plan, &control, conns, open, &mut warm);
        let took = t.elapsed();
        assert_eq!(kept.len(), 4);
        assert_eq!((warm.requests, warm.failed, warm.reopened), (4, 4, 4));
        assert!(took >= Duration::from_millis(100), "{took:?}");
        assert!(took < Duration::from_millis(200 + 3 * 5 + 100), "{took:?}");
        assert_eq!(limits.len(), 4);
        assert!(
            limits.iter().all(|l| *l <= Duration::from_millis(100)),
            "{limits:?}"
        );
        assert_eq!(warm_budget_ns(&plan), 200_000_000);
    }

    /// A connection whose replacement has bytes before any request too is
    /// left out; so is a replacement (after a failed warm-up) with bytes
    /// at the last look, and a connection that cannot be replaced in time.
    #[test]
    fn replacements_get_the_same_check() {
        let plan = Plan {
            timeout_ns: 100_000_000,
            warm_up: crate::plan::WarmUp::Request,
            ..crate::plan::example_plan()
        };
        let control = Control::default();
        let mut warm = Warm::default();
        let conns = vec![Fake {
            early: true,
            silent: false,
        }];
        let open = |_| {
            Some(Fake {
                early: true,
                silent: false,
            })
        };
        assert!(warm_start(&plan, &control, conns, open, &mut warm).is_empty());
        assert_eq!((warm.unsolicited, warm.reopened, warm.requests), (2, 1, 0));
        assert!(warm.writes_first);
        // One such pair: the other connections are not kept either.
        let mut warm = Warm::default();
        let mut conns = vec![Fake {
            early: true,
            silent: false,
        }];
        conns.extend((0..3).map(|_| Fake {
            early: false,
            silent: false,
        }));
        let open = |_| {
            Some(Fake {
                early: true,
                silent: false,
            })
        };
        assert!(warm_start(&plan, &control, conns, open, &mut warm).is_empty());
        assert_eq!(
            (warm.unsolicited, warm.requests, warm.writes_first),
            (2, 0, true)
        );

        let mut warm = Warm::default();
        let conns = vec![Fake {
            early: false,
            silent: true,
        }];
        let open = |_| {
            Some(Fake {
                early: true,
                silent: false,
            })
        };
        assert!(warm_start(&plan, &control, conns, open, &mut warm).is_empty());
        assert_eq!((warm.failed, warm.reopened, warm.unsolicited), (1, 1, 1));
        assert!(!warm.writes_first);

        // Stopped: nothing is replaced.
        control.stop.store(true, Ordering::Relaxed);
        let mut warm = Warm::default();
        let conns = vec![Fake {
            early: true,
            silent: false,
        }];
        let open = |_| -> Option<Fake> { panic!("opened after a stop") };
        assert!(warm_start(&plan, &control, conns, open, &mut warm).is_empty());
        assert_eq!((warm.unsolicited, warm.reopened), (1, 0));
    }

    /// An origin ahead: its wall-clock time is kept exactly, and `wait`
    /// returns at it (not before), late by a bound a loaded machine keeps.
    #[test]
    fn an_origin_ahead_is_waited_for() {
        let at = SystemTime::now() + Duration::from_millis(30);
        let o = Origin::at(at);
        assert_eq!(o.unix_ns, unix_ns(at));
        let late = o.wait();
        let now = Instant::now();
        assert!(now >= o.instant);
        assert!(late < 500_000_000, "late by {late} ns");
    }

    /// An origin already past: `wait` returns at once with how long ago it
    /// passed.
    #[test]
    fn an_origin_past_returns_how_late() {
        let at = SystemTime::now() - Duration::from_millis(50);
        let o = Origin::at(at);
        let t = Instant::now();
        let late = o.wait();
        assert!(t.elapsed() < Duration::from_millis(500));
        assert!((50_000_000..550_000_000).contains(&late), "{late}");
        assert_eq!(unix_ns(UNIX_EPOCH + Duration::from_nanos(7)), 7);
        assert_eq!(unix_ns(UNIX_EPOCH - Duration::from_secs(1)), 0);
    }

    /// A run without `start_at` starts now; with it, at it.
    #[test]
    fn for_run_follows_start_at() {
        let c = Control::default();
        let before = unix_ns(SystemTime::now());
        let o = Origin::for_run(&c);
        assert!(o.unix_ns >= before && o.unix_ns - before < 1_000_000_000);
        let at = UNIX_EPOCH + Duration::from_nanos(1_796_119_200_000_000_123);
        let c = Control {
            start_at: Some(at),
            ..Control::default()
        };
        assert_eq!(Origin::for_run(&c).unix_ns, 1_796_119_200_000_000_123);
    }
}
