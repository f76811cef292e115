//! What both engines share that needs std (feature `std`): core's std
//! side, fenced here as smoltcp fences its host adapters in `phy/`. The
//! rest of core is `no_std` and imports nothing from this module.
//!
//! - This file: what an engine returns, [`RunOutput`], and why one could
//!   not run, [`EngineError`].
//! - `control.rs`: what an engine is steered by: [`Control`] (a stop,
//!   `--start-at`), the live [`Progress`] counters, the clock's [`Origin`].
//! - `setup.rs`: connection set-up as measured ([`Setup`]) and the kinds
//!   of a failed TLS handshake ([`HandshakeFailure`]).
//! - The procedures before the clock starts, written once for both: the
//!   pre-open rule ([`pre_open()`], `pre_open.rs`), the warm start and
//!   warm-up over blocking I/O ([`warm_start`], [`warm_up`], [`Warm`]:
//!   threads, sleeps, blocking reads; `warm.rs`), the HTTP/2 greeting
//!   ([`greet_h2`], `greet.rs`).
//! - Storage reserved before the clock ([`ExactSamples`], [`FollowUps`];
//!   `reserved.rs`), the per-interval series at a bounded cost ([`Series`];
//!   `series.rs`) and its closed intervals for a watcher
//!   ([`LiveIntervals`]; `live.rs`), with the whole-run histograms that
//!   have no per-interval ones, as recorded so far ([`SoFar`]; `so_far.rs`).
//! - `tls` (feature `tls`, brings rustls): the TLS both engines share:
//!   the target's client side, the handshake, and the kind of a failed
//!   handshake.
//!
//! The files import in one direction, no circle: `setup.rs`, `series.rs`
//! and `reserved.rs` use no sibling (nor does `so_far.rs`); `live.rs` uses
//! `series.rs` and `so_far.rs`, `control.rs` uses `live.rs` and `so_far.rs`,
//! `warm.rs` uses `control.rs`, `tls` uses
//! `setup.rs`; this file uses `setup.rs`, `warm.rs` and the storage; only
//! `pre_open.rs` uses this file (its [`EngineError`]).
//!
//! Both engines (`metronome-uring`, `metronome-std`) depend on this and on
//! nothing of each other. Nothing here is on a hot path: an engine fills its
//! recorder through a [`Ledger`](crate::ledger::Ledger) over
//! [`RunOutput::tally`], and builds the rest once, after its clock stops.

use std::boxed::Box;
use std::fmt;
use std::format;
use std::string::String;
use std::vec::Vec;

use crate::exchange::GAP_CAP;
use crate::ledger::Tally;
use crate::measure::{NameTally, Recorder, StageTally, ThreadStats};
use crate::plan::{Plan, PlanError};

mod control;
mod greet;
mod live;
mod pre_open;
mod requests;
mod reserved;
mod series;
mod setup;
mod so_far;
#[cfg(feature = "tls")]
pub mod tls;
mod warm;
pub use control::{unix_ns, Control, Origin, Progress, START_LEAD};
pub use greet::{greet_h2, Greeted, ReadWrite};
pub use live::{LiveIntervals, LiveReader, Published};
pub use pre_open::pre_open;
pub use requests::{request_queue, RequestDrain, RequestFeed, REQUEST_QUEUE_CAPACITY};
pub use reserved::{ExactSamples, FollowUps};
pub use series::{Series, CHUNK_BYTES, RING_MAX};
pub use setup::{HandshakeFailure, Setup, ZeroRtt};
pub use so_far::{so_far_slots, NameSoFar, Recorded, SoFar, LIVE_NAMES_MAX, NAME_SLOTS, RUN_SLOTS};
pub use warm::{warm_budget_ns, warm_start, warm_up, Warm, WarmConn, WarmReply, WARM_BUDGET_NS};

/// Stack size of an engine thread that holds a [`Recorder`] (a few hundred
/// KiB of inline counters; debug builds copy it on the stack).
pub const RECORDER_STACK: usize = 64 << 20;

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

    /// The storage a [`Ledger`](crate::ledger::Ledger) records into.
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

    /// What this output recorded over the whole run so far, for the live
    /// copies ([`SoFar`]).
    pub fn recorded(&self) -> Recorded<'_> {
        Recorded {
            recorder: &self.recorder,
            names: &self.names,
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
        // Each thread may say the same (a server's limit): once.
        for w in &other.warnings {
            if !self.warnings.contains(w) {
                self.warnings.push(w.clone());
            }
        }
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
