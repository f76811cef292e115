//! What an engine returns, how the caller steers it, and the collector that
//! turns per-request facts into one [`Recorder`] and its intervals.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use metronome_core::measure::{ErrorKind, Interval, Recorder, StreamTiming};
use metronome_core::plan::Plan;

use crate::conn::Outcome;

/// Steering shared between the caller and a running engine.
#[derive(Debug, Default)]
pub struct Control {
    /// Set (e.g. on Ctrl-C) to stop scheduling; replies in flight are still
    /// awaited briefly and everything measured is returned.
    pub stop: AtomicBool,
    /// Live counters for a progress line.
    pub progress: Progress,
}

impl Control {
    /// True once a stop was requested.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Live counters of the measured phase, published by the engine for a
/// progress line; never used for the report itself.
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
}

/// The engine's own cost, per thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadStats {
    /// CPU time of the thread (user + system), ns.
    pub cpu_ns: u64,
    /// Time spent busy-waiting before intended sends, ns (part of `cpu_ns`).
    pub spin_ns: u64,
    /// Requests this thread sent.
    pub sent: u64,
}

/// Everything an engine measured.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// The merged recorder of all threads.
    pub recorder: Box<Recorder>,
    /// One entry per report interval of the measured phase (merged).
    pub intervals: Vec<Interval>,
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
    /// True when the run was stopped early.
    pub stopped: bool,
    /// Plain warnings found by the engine itself.
    pub warnings: Vec<String>,
}

impl RunOutput {
    /// An empty output sized for `plan`'s intervals.
    pub fn empty(plan: &Plan<'_>) -> RunOutput {
        RunOutput {
            recorder: Box::new(Recorder::new()),
            intervals: (0..plan.interval_count())
                .map(|_| Interval::new())
                .collect(),
            threads: Vec::new(),
            cpu_ns: 0,
            spin_ns: 0,
            measured_ns: 0,
            connections_opened: 0,
            peak_connections: 0,
            waited_for_connection: 0,
            stopped: false,
            warnings: Vec::new(),
        }
    }

    /// Merges another thread's or engine's output into this one (exact).
    pub fn merge(&mut self, other: &RunOutput) {
        self.recorder.merge(&other.recorder);
        if self.intervals.len() < other.intervals.len() {
            self.intervals
                .resize_with(other.intervals.len(), Interval::new);
        }
        for (a, b) in self.intervals.iter_mut().zip(&other.intervals) {
            a.merge(b);
        }
        self.threads.extend_from_slice(&other.threads);
        self.cpu_ns += other.cpu_ns;
        self.spin_ns += other.spin_ns;
        self.measured_ns = self.measured_ns.max(other.measured_ns);
        self.connections_opened += other.connections_opened;
        self.peak_connections += other.peak_connections;
        self.waited_for_connection += other.waited_for_connection;
        self.stopped |= other.stopped;
        self.warnings.extend(other.warnings.iter().cloned());
    }
}

/// Why an engine could not run.
#[derive(Debug)]
#[non_exhaustive]
pub enum EngineError {
    /// The plan is inconsistent; the message names the field to change.
    Plan(&'static str),
    /// Not even one connection could be opened before the clock started
    /// (refused, unreachable, timed out): check the URL and that the server runs.
    Connect(std::io::Error),
    /// A thread could not be started or the engine itself failed.
    Io(&'static str, std::io::Error),
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::Plan(m) => write!(f, "invalid plan: {m}"),
            EngineError::Connect(e) => write!(f, "cannot connect to the target: {e}"),
            EngineError::Io(what, e) => write!(f, "{what}: {e}"),
        }
    }
}

impl std::error::Error for EngineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EngineError::Connect(e) | EngineError::Io(_, e) => Some(e),
            EngineError::Plan(_) => None,
        }
    }
}

/// Checks what an engine relies on (shared by both engines).
///
/// # Errors
/// [`EngineError::Plan`] naming the field to change.
pub fn validate(plan: &Plan<'_>) -> Result<(), EngineError> {
    if plan.requests.is_empty() {
        return Err(EngineError::Plan("no request to send"));
    }
    if !(plan.rate.is_finite() && plan.rate > 0.0) {
        return Err(EngineError::Plan("the rate must be a positive number"));
    }
    if plan.connections == 0 {
        return Err(EngineError::Plan("--connections must be at least 1"));
    }
    if plan.max_connections < plan.connections {
        return Err(EngineError::Plan(
            "--max-connections must be at least --connections",
        ));
    }
    if plan.max_in_flight == 0 {
        return Err(EngineError::Plan("--max-in-flight must be at least 1"));
    }
    if plan.duration_ns == 0 {
        return Err(EngineError::Plan("--duration must be positive"));
    }
    if plan.interval_ns == 0 {
        return Err(EngineError::Plan("--interval must be positive"));
    }
    Ok(())
}

/// One fact about one request, sent by connection threads to the collector.
#[derive(Debug)]
pub(crate) enum Fact {
    /// Request intended at `intended_ns` left at `sent_ns`.
    Sent { intended_ns: u64, sent_ns: u64 },
    /// Request finished (or failed) at `done_ns`.
    Done {
        intended_ns: u64,
        sent_ns: u64,
        done_ns: u64,
        outcome: Outcome,
    },
    /// Request intended at `intended_ns` was never sent: the run's hard end
    /// came first. It counts as a timeout.
    Unsent { intended_ns: u64, at_ns: u64 },
    /// A closed-loop completion, also fed to the corrected histogram.
    ClosedDone {
        sent_ns: u64,
        done_ns: u64,
        outcome: Outcome,
        expected_interval_ns: Option<u64>,
    },
}

/// How one request ended, borrowed: what a [`Ledger`] needs to record it.
/// Engines with fixed buffers (io_uring) build it without allocating.
#[derive(Clone, Copy, Debug)]
pub enum Finish<'a> {
    /// A 2xx response, fully read.
    Ok,
    /// A complete response with a non-2xx status.
    Status(u16),
    /// A fault, by kind.
    Error(ErrorKind),
    /// A streamed response that reached its end; the recorder decides
    /// whether it succeeded.
    Stream {
        /// The stream's timing.
        timing: &'a StreamTiming,
        /// Gaps between consecutive content chunks, ns.
        gaps: &'a [u64],
    },
}

impl Finish<'static> {
    /// How a complete response ended, the rule both engines share: a
    /// non-2xx status is `Status`, an error event in a 2xx stream is a
    /// stream error, any other 2xx plain response is `Ok`. `None` means a
    /// 2xx stream without an error event: record it as [`Finish::Stream`]
    /// from its timing (the recorder then checks content and `[DONE]`).
    ///
    /// ```
    /// use metronome_std::Finish;
    /// assert!(matches!(Finish::for_response(Some(429), false, true), Some(Finish::Status(429))));
    /// assert!(matches!(Finish::for_response(Some(200), false, false), Some(Finish::Ok)));
    /// assert!(Finish::for_response(Some(200), false, true).is_none());
    /// ```
    pub fn for_response(
        status: Option<u16>,
        stream_error: bool,
        expect_stream: bool,
    ) -> Option<Finish<'static>> {
        let code = status.unwrap_or(0);
        if !(200..300).contains(&code) {
            Some(Finish::Status(code))
        } else if stream_error {
            Some(Finish::Error(ErrorKind::StreamError))
        } else if expect_stream {
            None
        } else {
            Some(Finish::Ok)
        }
    }
}

impl Outcome {
    /// The borrowed form a [`Ledger`] records.
    pub fn as_finish(&self) -> Finish<'_> {
        match self {
            Outcome::Ok => Finish::Ok,
            Outcome::Status(code) => Finish::Status(*code),
            Outcome::Error(kind) => Finish::Error(*kind),
            Outcome::Stream { timing, gaps } => Finish::Stream { timing, gaps },
        }
    }
}

/// The bookkeeping rules shared by both engines: turns one fact about one
/// request into the [`RunOutput`]'s recorder and intervals. Sends count in
/// the interval of their send time, completions in the interval of their
/// completion time (after the end: the last interval); warmup requests are
/// not recorded. It never allocates and never touches a clock or an atomic:
/// the caller publishes progress as it likes.
#[derive(Clone, Copy, Debug)]
pub struct Ledger<'p> {
    plan: &'p Plan<'p>,
}

impl<'p> Ledger<'p> {
    /// A ledger for `plan`.
    pub fn new(plan: &'p Plan<'p>) -> Ledger<'p> {
        Ledger { plan }
    }

    fn interval<'o>(&self, out: &'o mut RunOutput, t_ns: u64) -> Option<&'o mut Interval> {
        let i = self.plan.interval_index(t_ns)?;
        // A completion after the end (in the grace period) counts in the last interval.
        let i = i.min(out.intervals.len().saturating_sub(1));
        out.intervals.get_mut(i)
    }

    /// Request intended at `intended_ns` left at `sent_ns`. Returns true when
    /// it was recorded (not warmup).
    pub fn sent(&self, out: &mut RunOutput, intended_ns: u64, sent_ns: u64) -> bool {
        if !self.plan.is_measured(intended_ns) {
            return false;
        }
        out.recorder.record_sent(intended_ns, sent_ns);
        if let Some(iv) = self.interval(out, sent_ns) {
            iv.sent += 1;
            iv.send_lag.record(sent_ns.saturating_sub(intended_ns));
        }
        true
    }

    /// Request intended at `intended_ns` was never sent: the run's hard end
    /// came first (`at_ns`). It counts as a timeout. Returns true when recorded.
    pub fn unsent(&self, out: &mut RunOutput, intended_ns: u64, at_ns: u64) -> bool {
        if !self.plan.is_measured(intended_ns) {
            return false;
        }
        out.recorder.record_error(ErrorKind::Timeout);
        if let Some(iv) = self.interval(out, at_ns) {
            iv.errors += 1;
        }
        true
    }

    /// Request intended at `intended_ns`, sent at `sent_ns`, finished (or
    /// failed) at `done_ns`. Returns `None` for a warmup request, else
    /// whether it succeeded.
    pub fn done(
        &self,
        out: &mut RunOutput,
        intended_ns: u64,
        sent_ns: u64,
        done_ns: u64,
        finish: Finish<'_>,
    ) -> Option<bool> {
        if !self.plan.is_measured(intended_ns) {
            return None;
        }
        Some(self.finish(out, intended_ns, sent_ns, done_ns, finish))
    }

    /// A closed-loop request sent at `sent_ns` finished at `done_ns`: as
    /// [`Ledger::done`] with the send as the intended time, and a success
    /// also enters the corrected histogram (with the HdrHistogram correction
    /// when `expected_interval_ns` is set).
    pub fn closed_done(
        &self,
        out: &mut RunOutput,
        sent_ns: u64,
        done_ns: u64,
        finish: Finish<'_>,
        expected_interval_ns: Option<u64>,
    ) -> Option<bool> {
        if !self.plan.is_measured(sent_ns) {
            return None;
        }
        let ok = self.finish(out, sent_ns, sent_ns, done_ns, finish);
        if ok {
            let v = done_ns.saturating_sub(sent_ns);
            match expected_interval_ns {
                Some(ei) => out.recorder.corrected.record_corrected(v, ei),
                None => out.recorder.corrected.record(v),
            }
        }
        Some(ok)
    }

    /// Records one finished request; returns true when it succeeded.
    fn finish(
        &self,
        out: &mut RunOutput,
        intended_ns: u64,
        sent_ns: u64,
        done_ns: u64,
        finish: Finish<'_>,
    ) -> bool {
        let slo = self.plan.slo;
        let rec = &mut out.recorder;
        let ok = match finish {
            Finish::Ok => {
                rec.record_ok(intended_ns, sent_ns, done_ns, &slo);
                true
            }
            Finish::Status(code) => {
                rec.record_status(code);
                false
            }
            Finish::Error(kind) => {
                rec.record_error(kind);
                false
            }
            Finish::Stream { timing, gaps } => rec.record_stream(timing, gaps, &slo).is_ok(),
        };
        if let Some(iv) = self.interval(out, done_ns) {
            if ok {
                iv.ok += 1;
                iv.latency.record(done_ns.saturating_sub(intended_ns));
            } else {
                iv.errors += 1;
            }
        }
        ok
    }

    /// The last complete interval at `now_ns` (its index and its p99
    /// latency and p99 send lag, ns), for a progress line.
    pub fn last_complete(&self, out: &RunOutput, now_ns: u64) -> Option<(usize, u64, u64)> {
        let current = self.plan.interval_index(now_ns)?;
        let last = current.checked_sub(1)?;
        let iv = out.intervals.get(last)?;
        Some((last, iv.latency.quantile(0.99), iv.send_lag.quantile(0.99)))
    }
}

/// Owns the recorder and intervals of a run; fed [`Fact`]s one at a time.
pub(crate) struct Collector<'p> {
    ledger: Ledger<'p>,
    pub(crate) out: RunOutput,
    published_interval: Option<usize>,
}

impl<'p> Collector<'p> {
    pub(crate) fn new(plan: &'p Plan<'p>) -> Collector<'p> {
        Collector {
            ledger: Ledger::new(plan),
            out: RunOutput::empty(plan),
            published_interval: None,
        }
    }

    pub(crate) fn handle(&mut self, fact: Fact, progress: &Progress) {
        let plan = self.ledger.plan;
        let ok = match fact {
            Fact::Sent {
                intended_ns,
                sent_ns,
            } => {
                if self.ledger.sent(&mut self.out, intended_ns, sent_ns) {
                    progress.sent.fetch_add(1, Ordering::Relaxed);
                }
                return;
            }
            Fact::Unsent { intended_ns, at_ns } => {
                if self.ledger.unsent(&mut self.out, intended_ns, at_ns) {
                    progress.errors.fetch_add(1, Ordering::Relaxed);
                }
                return;
            }
            Fact::Done {
                intended_ns,
                sent_ns,
                done_ns,
                outcome,
            } => {
                if !plan.is_measured(intended_ns) {
                    return;
                }
                self.publish(done_ns, progress);
                self.ledger.done(
                    &mut self.out,
                    intended_ns,
                    sent_ns,
                    done_ns,
                    outcome.as_finish(),
                )
            }
            Fact::ClosedDone {
                sent_ns,
                done_ns,
                outcome,
                expected_interval_ns,
            } => {
                if !plan.is_measured(sent_ns) {
                    return;
                }
                self.publish(done_ns, progress);
                self.ledger.closed_done(
                    &mut self.out,
                    sent_ns,
                    done_ns,
                    outcome.as_finish(),
                    expected_interval_ns,
                )
            }
        };
        match ok {
            Some(true) => progress.ok.fetch_add(1, Ordering::Relaxed),
            Some(false) => progress.errors.fetch_add(1, Ordering::Relaxed),
            None => 0,
        };
    }

    /// Publishes the last complete interval's p99 for the progress line.
    fn publish(&mut self, now_ns: u64, progress: &Progress) {
        let Some((last, p99, lag_p99)) = self.ledger.last_complete(&self.out, now_ns) else {
            return;
        };
        if self.published_interval == Some(last) {
            return;
        }
        progress.last_p99_ns.store(p99, Ordering::Relaxed);
        progress
            .last_send_lag_p99_ns
            .store(lag_p99, Ordering::Relaxed);
        self.published_interval = Some(last);
    }
}
