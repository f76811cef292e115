//! Series over time: [`Interval`], one report interval of one engine
//! thread, and [`StageTally`], one stage of a staged run.

use crate::histogram::Histogram;

/// A send this much after its intended time is late (1 ms): counted in
/// [`Interval::late`], the measure of whether an interval kept its schedule.
pub const LATE_NS: u64 = 1_000_000;

/// One report interval (`--interval`) of one engine thread: counters and the
/// two histograms the interval rows need. Engines keep one per interval
/// (a `Vec<Interval>` per thread, sized before the clock starts) and merge
/// them across threads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Interval {
    /// Requests sent in the interval.
    pub sent: u64,
    /// Successful requests in the interval.
    pub ok: u64,
    /// Failed requests in the interval.
    pub errors: u64,
    /// Requests never sent, counted in the interval they were given up.
    pub unsent: u64,
    /// Due requests dropped above the in-flight limit, by intended time.
    pub dropped: u64,
    /// Due requests that found no idle connection and waited for one, by
    /// intended time.
    pub waited: u64,
    /// Of `waited`, those that found the pool at its limit
    /// (`max_connections` open or opening): it could not grow for them.
    pub pool_full: u64,
    /// Due requests (scheduled), by intended time.
    pub scheduled: u64,
    /// Requests sent more than [`LATE_NS`] after their intended time, by
    /// intended time (a wait for a connection included).
    pub late: u64,
    /// Of `late`, those whose wait for a connection was the larger part of
    /// their lateness (`Ledger::waited_for`); the rest were late because
    /// the engine itself handled them late.
    pub late_waiting: u64,
    /// CPU time the engine's pacing threads used in the interval (ns),
    /// spin included; sampled about every 50 ms, so a sample straddling a
    /// boundary counts in the interval it was taken in.
    pub cpu_ns: u64,
    /// Of `cpu_ns`, the time spent busy-waiting before sends (ns).
    pub spin_ns: u64,
    /// Latency (completion - intended) of the interval's successful requests.
    pub latency: Histogram,
    /// Send lag (send - intended) of the interval's sent requests.
    pub send_lag: Histogram,
}

impl Interval {
    /// An empty interval.
    ///
    /// # Example
    /// ```
    /// let i = metronome_core::measure::Interval::new();
    /// assert_eq!((i.sent, i.ok, i.errors), (0, 0, 0));
    /// ```
    pub const fn new() -> Self {
        Self {
            sent: 0,
            ok: 0,
            errors: 0,
            unsent: 0,
            dropped: 0,
            waited: 0,
            pool_full: 0,
            scheduled: 0,
            late: 0,
            late_waiting: 0,
            cpu_ns: 0,
            spin_ns: 0,
            latency: Histogram::new(),
            send_lag: Histogram::new(),
        }
    }

    /// Adds the other interval's counters and histograms, exactly.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::Interval;
    /// let (mut a, mut b) = (Interval::new(), Interval::new());
    /// a.ok = 1;
    /// a.latency.record(10);
    /// b.ok = 2;
    /// b.errors = 1;
    /// b.latency.record(30);
    /// a.merge(&b);
    /// assert_eq!((a.ok, a.errors, a.latency.count(), a.latency.max()), (3, 1, 2, 30));
    /// ```
    pub fn merge(&mut self, other: &Interval) {
        self.sent = self.sent.saturating_add(other.sent);
        self.ok = self.ok.saturating_add(other.ok);
        self.errors = self.errors.saturating_add(other.errors);
        self.unsent = self.unsent.saturating_add(other.unsent);
        self.dropped = self.dropped.saturating_add(other.dropped);
        self.waited = self.waited.saturating_add(other.waited);
        self.pool_full = self.pool_full.saturating_add(other.pool_full);
        self.scheduled = self.scheduled.saturating_add(other.scheduled);
        self.late = self.late.saturating_add(other.late);
        self.late_waiting = self.late_waiting.saturating_add(other.late_waiting);
        self.cpu_ns = self.cpu_ns.saturating_add(other.cpu_ns);
        self.spin_ns = self.spin_ns.saturating_add(other.spin_ns);
        self.latency.merge(&other.latency);
        self.send_lag.merge(&other.send_lag);
    }
}

/// One stage of a staged run ([`crate::plan::Profile::Stages`]) of one
/// engine thread: every request counted in the stage of its **intended**
/// time (not its send or completion), so a stage's row holds exactly the
/// requests its part of the schedule offered: `scheduled = sent + dropped +
/// unsent` and `sent = ok + errors`, stage by stage. Merges exactly.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StageTally {
    /// Due requests intended in the stage (measured ones).
    pub scheduled: u64,
    /// Of them, sent.
    pub sent: u64,
    /// Of them, dropped above the in-flight limit.
    pub dropped: u64,
    /// Of them, never sent otherwise.
    pub unsent: u64,
    /// Sent and succeeded.
    pub ok: u64,
    /// Sent and failed.
    pub errors: u64,
    /// Latency (completion - intended) of the successes.
    pub latency: Histogram,
}

impl StageTally {
    /// An empty stage.
    ///
    /// # Example
    /// ```
    /// let s = metronome_core::measure::StageTally::new();
    /// assert_eq!((s.scheduled, s.ok, s.latency.count()), (0, 0, 0));
    /// ```
    pub const fn new() -> Self {
        Self {
            scheduled: 0,
            sent: 0,
            dropped: 0,
            unsent: 0,
            ok: 0,
            errors: 0,
            latency: Histogram::new(),
        }
    }

    /// Adds the other stage's counters and histogram, exactly.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::StageTally;
    /// let (mut a, mut b) = (StageTally::new(), StageTally::new());
    /// a.ok = 1;
    /// a.latency.record(10);
    /// b.ok = 2;
    /// b.latency.record(30);
    /// a.merge(&b);
    /// assert_eq!((a.ok, a.latency.count(), a.latency.max()), (3, 2, 30));
    /// ```
    pub fn merge(&mut self, other: &StageTally) {
        self.scheduled = self.scheduled.saturating_add(other.scheduled);
        self.sent = self.sent.saturating_add(other.sent);
        self.dropped = self.dropped.saturating_add(other.dropped);
        self.unsent = self.unsent.saturating_add(other.unsent);
        self.ok = self.ok.saturating_add(other.ok);
        self.errors = self.errors.saturating_add(other.errors);
        self.latency.merge(&other.latency);
    }
}
