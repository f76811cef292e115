//! [`Ledger`]: the bookkeeping rules every engine shares, turning facts
//! about one request ("intended at t, sent at s, finished at u like this")
//! into a [`Recorder`] and its per-interval series. How one request ended,
//! [`Finish`], comes from [`crate::exchange`].
//!
//! The rules, each tested on a virtual clock (`tests/sim/ledger.rs`):
//! - requests intended before the warmup's end are sent but not recorded;
//! - a send counts in the interval of its send time, a completion in the
//!   interval of its completion time; after the end of the schedule (in
//!   the drain) these are intervals of their own when the series has
//!   them ([`Plan::series_len`]), else the last interval;
//! - every measured completion extends the real window (first send to last
//!   completion); a success after the end of the schedule is also counted
//!   as late (`late_ok`, `late_tokens`), so rates can be given both over the
//!   real window and within the schedule;
//! - a due request is sent, dropped (too many in flight) or never sent
//!   ([`Unsent`]: no connection could be opened for it, or the run's hard
//!   end came before a free connection); a sent one is ok or fails with
//!   exactly one [`ErrorKind`]: `scheduled = sent + dropped + unsent` and
//!   `sent = ok + errors`;
//! - every measured request ends in exactly one [`RequestRecord`], handed
//!   to [`Tally::requests`] when there is one: ok or failed
//!   ([`Ledger::answered`] takes what the engine knows of the response's
//!   head), dropped, or never sent (`--out-requests`; `tests/sim/records.rs`);
//! - connection events charged to no request (a close or `408` on an idle
//!   connection, unsolicited bytes) and retries are counted apart;
//! - in the closed model the send is the intended time, and a success also
//!   enters the corrected histogram (with HdrHistogram's correction when an
//!   expected interval is given).
//!
//! It never allocates and never touches a clock or an atomic: the caller
//! owns the storage ([`Tally`]) and publishes progress as it likes.
//!
//! ```
//! use metronome_core::exchange::Finish;
//! use metronome_core::ledger::{Ledger, Tally};
//! use metronome_core::measure::{ErrorKind, Interval, NameTally, Recorder};
//! use metronome_core::plan::example_plan;
//!
//! let mut plan = example_plan(); // 0.5 s warmup, then one 1 s interval
//! plan.names = &[0]; // its one request is reported under name 0
//! let ledger = Ledger::new(&plan);
//! let mut recorder = Recorder::new();
//! let mut intervals = [Interval::new()];
//! let mut names = [NameTally::new()];
//! let mut tally = Tally {
//!     recorder: &mut recorder,
//!     intervals: &mut intervals,
//!     stages: &mut [],
//!     names: &mut names,
//!     samples: None,
//!     follow_ups: None,
//!     requests: None,
//! };
//! assert!(ledger.sent(&mut tally, 600_000_000, 0, 600_001_000));
//! assert_eq!(ledger.done(&mut tally, 600_000_000, 0, 600_001_000, 602_000_000, Finish::Ok), Some(true));
//! assert!(ledger.sent(&mut tally, 700_000_000, 0, 700_000_000));
//! let failed = ledger.done(&mut tally, 700_000_000, 0, 700_000_000, 700_000_001, Finish::Status(503));
//! assert_eq!(failed, Some(false));
//! assert!(!ledger.sent(&mut tally, 100_000_000, 0, 100_000_000)); // warmup
//! assert_eq!((recorder.sent, recorder.ok), (2, 1));
//! assert_eq!(recorder.latency.max(), 2_000_000);
//! assert_eq!(intervals[0].ok, 1);
//! // The name's row holds the same requests.
//! let n = &names[0];
//! assert_eq!((n.sent, n.ok, n.errors, n.by_kind[ErrorKind::Status.index()]), (2, 1, 1, 1));
//! assert_eq!((n.latency.max(), n.service_time.max(), n.send_lag.max()), (2_000_000, 1_999_000, 1_000));
//! ```

use crate::exchange::Finish;
use crate::measure::{
    Counts, ErrorKind, Exact, IntervalMetric, IntervalSink, NameTally, Recorder, SampleSink,
    StageTally, Unsent, LATE_NS,
};
use crate::plan::{Model, Plan};
use crate::record::{Outcome, RequestRecord, RequestSink, ResponseHead};
use crate::turns::{After, FollowUpSink};

/// The storage a [`Ledger`] writes into, owned by the caller: the
/// recorder, and the per-interval series of the measured phase.
#[derive(Debug)]
pub struct Tally<'a> {
    /// The run's (or thread's) recorder.
    pub recorder: &'a mut Recorder,
    /// The per-interval series: [`Plan::interval_count`] intervals of the
    /// schedule, and after them the drain's ([`Plan::series_len`] in all);
    /// a time past its last interval counts in the last one.
    pub intervals: &'a mut dyn IntervalSink,
    /// One row per stage of a staged run, [`Plan::stage_count`] long (empty
    /// otherwise), each request in the stage of its intended time.
    pub stages: &'a mut [StageTally],
    /// One row per name of a request mix, [`Plan::name_count`] long (empty
    /// otherwise), each request under its own name.
    pub names: &'a mut [NameTally],
    /// Where each success's exact per-request values go (storage reserved
    /// before the clock), or `None` to keep the histograms only.
    pub samples: Option<&'a mut dyn SampleSink>,
    /// Where the next turn of a conversation goes when its previous turn
    /// ends ([`crate::turns`]), or `None` for a run without conversations.
    pub follow_ups: Option<&'a mut dyn FollowUpSink>,
    /// Where each measured request's [`RequestRecord`] goes, once, as it
    /// ends (ok, failed, dropped or never sent), or `None` to keep none.
    pub requests: Option<&'a mut dyn RequestSink>,
}

impl Tally<'_> {
    /// Hands a measured request's record to the sink, if any.
    fn ended(&mut self, record: RequestRecord) {
        if let Some(sink) = self.requests.as_deref_mut() {
            sink.record(&record);
        }
    }

    fn stage(&mut self, plan: &Plan<'_>, intended_ns: u64) -> Option<&mut StageTally> {
        self.stages.get_mut(plan.stage_of(intended_ns)?)
    }

    fn named(&mut self, plan: &Plan<'_>, request: usize) -> Option<&mut NameTally> {
        self.names.get_mut(plan.name_of(request)?)
    }

    /// The interval of `t_ns`, clamped to the series (a time past its
    /// last interval counts in the last one).
    fn slot(&self, plan: &Plan<'_>, t_ns: u64) -> Option<usize> {
        let i = plan.interval_index(t_ns)?;
        let n = self.intervals.len();
        (n > 0).then(|| i.min(n - 1))
    }

    fn interval(&mut self, plan: &Plan<'_>, t_ns: u64) -> Option<&mut Counts> {
        let i = self.slot(plan, t_ns)?;
        self.intervals.counts(i)
    }

    fn record(&mut self, plan: &Plan<'_>, t_ns: u64, metric: IntervalMetric, v: u64) {
        if let Some(i) = self.slot(plan, t_ns) {
            self.intervals.record(i, metric, v);
        }
    }
}

/// The bookkeeping rules shared by every engine; see the [module docs](self).
#[derive(Clone, Copy, Debug)]
pub struct Ledger<'p> {
    plan: &'p Plan<'p>,
}

impl<'p> Ledger<'p> {
    /// A ledger for `plan`.
    pub const fn new(plan: &'p Plan<'p>) -> Ledger<'p> {
        Ledger { plan }
    }

    /// The plan this ledger records for.
    pub const fn plan(&self) -> &'p Plan<'p> {
        self.plan
    }

    /// A request intended at `intended_ns` came due, to send request
    /// `request` of the plan: counted as scheduled (not during warmup).
    /// Returns whether it is measured.
    ///
    /// With conversations, a first turn opens a session and a later one
    /// counts as a follow-up ([`crate::turns::Sessions`], warm-up included).
    pub fn scheduled(&self, tally: &mut Tally<'_>, intended_ns: u64, request: usize) -> bool {
        let turns = &self.plan.turns;
        if turns.is_on() {
            let s = &mut tally.recorder.sessions;
            if turns.is_first(request) {
                s.started += 1;
            } else {
                s.follow_ups += 1;
            }
        }
        let measured = self.plan.is_measured(intended_ns);
        if measured {
            tally.recorder.record_scheduled();
            if let Some(iv) = tally.interval(self.plan, intended_ns) {
                iv.scheduled += 1;
            }
            if let Some(st) = tally.stage(self.plan, intended_ns) {
                st.scheduled += 1;
            }
            if let Some(n) = tally.named(self.plan, request) {
                n.scheduled += 1;
            }
        }
        measured
    }

    /// A due request was dropped (too many in flight). Returns whether it
    /// was recorded (not warmup).
    pub fn dropped(&self, tally: &mut Tally<'_>, intended_ns: u64, request: usize) -> bool {
        self.turn_ended(tally, request, false, intended_ns);
        let measured = self.plan.is_measured(intended_ns);
        if measured {
            tally.ended(self.record(intended_ns, request, None, Outcome::Dropped));
            tally.recorder.record_dropped();
            if let Some(iv) = tally.interval(self.plan, intended_ns) {
                iv.dropped += 1;
                iv.settled += 1;
            }
            if let Some(st) = tally.stage(self.plan, intended_ns) {
                st.dropped += 1;
            }
            if let Some(n) = tally.named(self.plan, request) {
                n.dropped += 1;
            }
        }
        measured
    }

    /// The bookkeeping of one due request around [`Pool::admit`](crate::pool::Pool::admit),
    /// both engines' one step: counted [scheduled](Ledger::scheduled); if
    /// `admit` dropped it, [dropped](Ledger::dropped); if it waits for a
    /// connection, a [wait](Ledger::waited). Returns whether it is a measured
    /// wait: the engine adds it to its `waited_for_connection`.
    ///
    /// ```
    /// use metronome_core::ledger::{Ledger, Tally};
    /// use metronome_core::measure::{Interval, Recorder};
    /// use metronome_core::plan::example_plan;
    /// use metronome_core::pool::Admit;
    ///
    /// let plan = example_plan(); // 0.5 s warmup, then one 1 s interval
    /// let ledger = Ledger::new(&plan);
    /// let (mut recorder, mut intervals) = (Recorder::new(), [Interval::new()]);
    /// let mut tally = Tally {
    ///     recorder: &mut recorder,
    ///     intervals: &mut intervals,
    ///     stages: &mut [],
    ///     names: &mut [],
    ///     samples: None,
    ///     follow_ups: None,
    ///     requests: None,
    /// };
    /// let t = &mut tally;
    /// assert!(!ledger.admitted(t, 600_000_000, 0, Admit::Send { open: 0 }));
    /// assert!(ledger.admitted(t, 700_000_000, 0, Admit::Wait { open: 1, full: true }));
    /// assert!(!ledger.admitted(t, 100_000_000, 0, Admit::Wait { open: 0, full: false })); // warmup
    /// assert!(!ledger.admitted(t, 800_000_000, 0, Admit::Drop { open: 0 }));
    /// assert_eq!((recorder.scheduled, recorder.dropped), (3, 1));
    /// assert_eq!((intervals[0].waited, intervals[0].pool_full), (1, 1));
    /// ```
    pub fn admitted(
        &self,
        tally: &mut Tally<'_>,
        intended_ns: u64,
        request: usize,
        admit: crate::pool::Admit,
    ) -> bool {
        use crate::pool::Admit;
        let measured = self.scheduled(tally, intended_ns, request);
        match admit {
            Admit::Send { .. } => false,
            Admit::Drop { .. } => {
                self.dropped(tally, intended_ns, request);
                false
            }
            Admit::Wait { full, .. } => measured && self.waited(tally, intended_ns, full),
        }
    }

    /// A due request intended at `intended_ns` found no idle connection and
    /// waits for one; `full`: the pool was at its limit and could not grow
    /// for it ([`crate::pool::Admit::Wait`]). Returns whether it was
    /// recorded (not warmup); the run's total is the engine's
    /// `waited_for_connection`.
    pub fn waited(&self, tally: &mut Tally<'_>, intended_ns: u64, full: bool) -> bool {
        let measured = self.plan.is_measured(intended_ns);
        if measured {
            if let Some(iv) = tally.interval(self.plan, intended_ns) {
                iv.waited += 1;
                iv.pool_full += u64::from(full);
            }
        }
        measured
    }

    /// A request intended at `intended_ns` that waited for a connection
    /// from `admitted_ns` (when the engine handled it) was sent at
    /// `sent_ns`. When it left more than [`LATE_NS`] late and the wait for
    /// the connection was the larger part of that (more than the engine's
    /// own lateness, `admitted_ns - intended_ns`), it counts in the
    /// interval's `late_waiting` (by intended time): the pool, not the
    /// generator, made it late.
    pub fn waited_for(
        &self,
        tally: &mut Tally<'_>,
        intended_ns: u64,
        admitted_ns: u64,
        sent_ns: u64,
    ) {
        if !self.plan.is_measured(intended_ns) {
            return;
        }
        let lag = sent_ns.saturating_sub(intended_ns);
        let wait = sent_ns.saturating_sub(admitted_ns);
        if lag > LATE_NS && 2 * wait > lag {
            if let Some(iv) = tally.interval(self.plan, intended_ns) {
                iv.late_waiting += 1;
            }
        }
    }

    /// A pacing thread used `cpu_ns` of CPU, `spin_ns` of it busy-waiting,
    /// in the sample ending at `at_ns`. Counted in the interval of `at_ns`
    /// while the measured phase lasts (not during the warmup or the drain
    /// after the end).
    pub fn busy(&self, tally: &mut Tally<'_>, at_ns: u64, cpu_ns: u64, spin_ns: u64) {
        let Some(i) = self.plan.interval_index(at_ns) else {
            return;
        };
        if i >= self.plan.interval_count() {
            return;
        }
        if let Some(iv) = tally.intervals.counts(i) {
            iv.cpu_ns = iv.cpu_ns.saturating_add(cpu_ns);
            iv.spin_ns = iv.spin_ns.saturating_add(spin_ns);
        }
    }

    /// At `at_ns` a read brought `received` bytes and a write took `sent`
    /// bytes of a connection (either may be 0): counted in the interval of
    /// `at_ns` from the end of the warmup (the drain's after the schedule),
    /// whatever request they belong to.
    ///
    /// ```
    /// use metronome_core::ledger::{Ledger, Tally};
    /// use metronome_core::measure::{Interval, Recorder};
    /// use metronome_core::plan::example_plan;
    /// let plan = example_plan(); // 0.5 s warmup, then one 1 s interval
    /// let (mut recorder, mut intervals) = (Recorder::new(), [Interval::new()]);
    /// let mut tally = Tally {
    ///     recorder: &mut recorder,
    ///     intervals: &mut intervals,
    ///     stages: &mut [],
    ///     names: &mut [],
    ///     samples: None,
    ///     follow_ups: None,
    ///     requests: None,
    /// };
    /// let ledger = Ledger::new(&plan);
    /// ledger.transferred(&mut tally, 100_000_000, 500, 80); // warmup: not counted
    /// ledger.transferred(&mut tally, 600_000_000, 300, 0);
    /// ledger.transferred(&mut tally, 700_000_000, 0, 90);
    /// assert_eq!((intervals[0].bytes_received, intervals[0].bytes_sent), (300, 90));
    /// ```
    pub fn transferred(&self, tally: &mut Tally<'_>, at_ns: u64, received: u64, sent: u64) {
        if let Some(iv) = tally.interval(self.plan, at_ns) {
            iv.bytes_received = iv.bytes_received.saturating_add(received);
            iv.bytes_sent = iv.bytes_sent.saturating_add(sent);
        }
    }

    /// Request intended at `intended_ns` (request `request` of the plan)
    /// left at `sent_ns`. Returns true when it was recorded (not warmup).
    pub fn sent(
        &self,
        tally: &mut Tally<'_>,
        intended_ns: u64,
        request: usize,
        sent_ns: u64,
    ) -> bool {
        if !self.plan.is_measured(intended_ns) {
            return false;
        }
        tally.recorder.record_sent(intended_ns, sent_ns);
        if let Some(&tokens) = self.plan.input_tokens.get(request) {
            tally.recorder.input_len.record(u64::from(tokens));
        }
        if sent_ns >= self.plan.end_ns() {
            tally.recorder.late_sent += 1;
        }
        if let Some(st) = tally.stage(self.plan, intended_ns) {
            st.sent += 1;
        }
        let lag = sent_ns.saturating_sub(intended_ns);
        if let Some(n) = tally.named(self.plan, request) {
            n.sent += 1;
            n.send_lag.record(lag);
        }
        if let Some(iv) = tally.interval(self.plan, sent_ns) {
            iv.sent += 1;
        }
        tally.record(self.plan, sent_ns, IntervalMetric::SendLag, lag);
        if let Some(iv) = tally.interval(self.plan, intended_ns) {
            iv.settled += 1;
            if lag > LATE_NS {
                iv.late += 1;
            }
        }
        true
    }

    /// Request intended at `intended_ns` was never sent, for `reason`, at
    /// `at_ns`. Returns true when recorded (not warmup).
    pub fn unsent(
        &self,
        tally: &mut Tally<'_>,
        intended_ns: u64,
        request: usize,
        at_ns: u64,
        reason: Unsent,
    ) -> bool {
        self.turn_ended(tally, request, false, at_ns);
        if !self.plan.is_measured(intended_ns) {
            return false;
        }
        tally.ended(self.record(intended_ns, request, Some(at_ns), Outcome::Unsent(reason)));
        tally.recorder.record_unsent(reason);
        if let Some(iv) = tally.interval(self.plan, at_ns) {
            iv.unsent += 1;
        }
        if let Some(iv) = tally.interval(self.plan, intended_ns) {
            iv.settled += 1;
        }
        if let Some(st) = tally.stage(self.plan, intended_ns) {
            st.unsent += 1;
        }
        if let Some(n) = tally.named(self.plan, request) {
            n.unsent += 1;
        }
        true
    }

    /// Request intended at `intended_ns` is sent a second time, on a fresh
    /// connection ([`crate::exchange::Exchange::may_retry`]). Returns true
    /// when recorded (not warmup).
    pub fn retried(&self, tally: &mut Tally<'_>, intended_ns: u64) -> bool {
        let measured = self.plan.is_measured(intended_ns);
        if measured {
            tally.recorder.retried += 1;
        }
        measured
    }

    /// At `at_ns` a connection was closed by the server while idle (a close,
    /// a half-close or a `408`): charged to no request. Counted from the
    /// end of the warmup.
    pub fn idle_closed(&self, tally: &mut Tally<'_>, at_ns: u64) {
        if self.plan.is_measured(at_ns) {
            tally.recorder.idle_closed += 1;
        }
    }

    /// At `at_ns` a connection was closed because bytes no request asked
    /// for arrived: charged to no request. Counted from the end of the warmup.
    pub fn unsolicited(&self, tally: &mut Tally<'_>, at_ns: u64) {
        if self.plan.is_measured(at_ns) {
            tally.recorder.unsolicited += 1;
        }
    }

    /// Request intended at `intended_ns`, sent at `sent_ns`, finished (or
    /// failed) at `done_ns`. Returns `None` for a warmup request, else
    /// whether it succeeded.
    pub fn done(
        &self,
        tally: &mut Tally<'_>,
        intended_ns: u64,
        request: usize,
        sent_ns: u64,
        done_ns: u64,
        finish: Finish<'_>,
    ) -> Option<bool> {
        let head = ResponseHead::default();
        self.done_with(tally, intended_ns, request, sent_ns, done_ns, finish, head)
    }

    /// [`Ledger::done`], with what the engine knows of the response's head.
    #[allow(clippy::too_many_arguments)]
    fn done_with(
        &self,
        tally: &mut Tally<'_>,
        intended_ns: u64,
        request: usize,
        sent_ns: u64,
        done_ns: u64,
        finish: Finish<'_>,
        head: ResponseHead,
    ) -> Option<bool> {
        let ok = if self.plan.is_measured(intended_ns) {
            let times = (intended_ns, sent_ns, done_ns);
            Some(self.finish(tally, times, request, finish, head))
        } else {
            None
        };
        if self.plan.turns.is_on() {
            // A warm-up turn's session goes on as a measured one's would.
            let went_well = ok.unwrap_or(match finish {
                Finish::Ok => true,
                Finish::Stream { timing, .. } => timing.summary().is_ok(),
                _ => false,
            });
            self.turn_ended(tally, request, went_well, done_ns);
        }
        ok
    }

    /// The turn `request` of a conversation ended at `end_ns` (`ok`: it
    /// succeeded): core's rule ([`crate::turns::Turns::after`]) decides what
    /// follows, the next turn goes to [`Tally::follow_ups`] and the session
    /// is counted. Nothing happens without conversations.
    fn turn_ended(&self, tally: &mut Tally<'_>, request: usize, ok: bool, end_ns: u64) {
        let s = &mut tally.recorder.sessions;
        match self
            .plan
            .turns
            .after(request, ok, end_ns, self.plan.end_ns())
        {
            After::Nothing => {}
            After::Completed => s.completed += 1,
            After::Abandoned => s.abandoned += 1,
            After::Cut => s.cut += 1,
            After::Next {
                intended_ns,
                request,
            } => {
                let kept = tally
                    .follow_ups
                    .as_deref_mut()
                    .is_some_and(|q| q.push(intended_ns, request));
                if !kept {
                    tally.recorder.sessions.overflowed += 1;
                }
            }
        }
    }

    /// A closed-loop request sent at `sent_ns` finished at `done_ns`: as
    /// [`Ledger::done`] with the send as the intended time, and a success
    /// also enters the corrected histogram (with the HdrHistogram correction
    /// when `expected_interval_ns` is set).
    pub fn closed_done(
        &self,
        tally: &mut Tally<'_>,
        request: usize,
        sent_ns: u64,
        done_ns: u64,
        finish: Finish<'_>,
        expected_interval_ns: Option<u64>,
    ) -> Option<bool> {
        let head = ResponseHead::default();
        let times = (sent_ns, sent_ns, done_ns);
        self.closed_with(tally, request, times, finish, expected_interval_ns, head)
    }

    /// [`Ledger::closed_done`], with what the engine knows of the
    /// response's head; `times`: (intended = sent, sent, done).
    fn closed_with(
        &self,
        tally: &mut Tally<'_>,
        request: usize,
        times: (u64, u64, u64),
        finish: Finish<'_>,
        expected_interval_ns: Option<u64>,
        head: ResponseHead,
    ) -> Option<bool> {
        let (_, sent_ns, done_ns) = times;
        if !self.plan.is_measured(sent_ns) {
            return None;
        }
        let ok = self.finish(tally, times, request, finish, head);
        if ok {
            let v = done_ns.saturating_sub(sent_ns);
            match expected_interval_ns {
                Some(ei) => tally.recorder.corrected.record_corrected(v, ei),
                None => tally.recorder.corrected.record(v),
            }
        }
        Some(ok)
    }

    /// A request intended at `intended_ns`, sent at `sent_ns`, ended at
    /// `done_ns`, recorded as the plan's model says: [`Ledger::done`] in the
    /// open model; [`Ledger::closed_done`] in the closed one (the send is
    /// the intended time; the plan's expected interval feeds the
    /// correction). Returns `None` for a warmup request, else whether it
    /// succeeded.
    pub fn finished(
        &self,
        tally: &mut Tally<'_>,
        intended_ns: u64,
        request: usize,
        sent_ns: u64,
        done_ns: u64,
        finish: Finish<'_>,
    ) -> Option<bool> {
        let head = ResponseHead::default();
        self.answered(tally, intended_ns, request, sent_ns, done_ns, finish, head)
    }

    /// [`Ledger::finished`], with what the engine knows of the response's
    /// `head` (its first byte's arrival and status, for the request's
    /// [`RequestRecord`]; [`crate::exchange::Exchange::head`]).
    #[allow(clippy::too_many_arguments)]
    pub fn answered(
        &self,
        tally: &mut Tally<'_>,
        intended_ns: u64,
        request: usize,
        sent_ns: u64,
        done_ns: u64,
        finish: Finish<'_>,
        head: ResponseHead,
    ) -> Option<bool> {
        match self.plan.model {
            Model::Open => {
                self.done_with(tally, intended_ns, request, sent_ns, done_ns, finish, head)
            }
            Model::Closed {
                expected_interval_ns,
                ..
            } => self.closed_with(
                tally,
                request,
                (sent_ns, sent_ns, done_ns),
                finish,
                expected_interval_ns,
                head,
            ),
        }
    }

    /// A due request that cannot go out at `at_ns`: never sent, for
    /// `reason`; or, when it is a `retried` one (sent once already, its
    /// connection found closed), failed as the [`ErrorKind::Reset`] that
    /// made it retry (sent and ended at `at_ns`). Returns what
    /// [`Ledger::finished`] returns for a failed retry, `None` otherwise.
    pub fn not_sent(
        &self,
        tally: &mut Tally<'_>,
        intended_ns: u64,
        request: usize,
        at_ns: u64,
        reason: Unsent,
        retried: bool,
    ) -> Option<bool> {
        if retried {
            self.finished(
                tally,
                intended_ns,
                request,
                at_ns,
                at_ns,
                Finish::Error(ErrorKind::Reset),
            )
        } else {
            self.unsent(tally, intended_ns, request, at_ns, reason);
            None
        }
    }

    /// The run's hard-end rule, the same on every engine and protocol: a
    /// job taken at `now_ns` at or after the run's hard end (`hard_end_ns`)
    /// is never sent ([`Unsent::Timeout`]; a `retried` one fails as
    /// [`Ledger::not_sent`] says). `None`: not too late, send it; else
    /// booked, and `Some` of what [`Ledger::not_sent`] returned.
    pub fn too_late(
        &self,
        tally: &mut Tally<'_>,
        now_ns: u64,
        hard_end_ns: u64,
        intended_ns: u64,
        request: usize,
        retried: bool,
    ) -> Option<Option<bool>> {
        (now_ns >= hard_end_ns).then(|| {
            self.not_sent(
                tally,
                intended_ns,
                request,
                now_ns,
                Unsent::Timeout,
                retried,
            )
        })
    }

    /// A record of request `request` intended at `intended_ns`, ended at
    /// `end_ns` as `outcome`, with its input tokens; nothing else known.
    fn record(
        &self,
        intended_ns: u64,
        request: usize,
        end_ns: Option<u64>,
        outcome: Outcome,
    ) -> RequestRecord {
        RequestRecord {
            intended_ns,
            sent_ns: None,
            first_byte_ns: None,
            first_token_ns: None,
            end_ns,
            outcome,
            status: None,
            request,
            input_tokens: self.plan.input_tokens.get(request).copied(),
            output_tokens: None,
        }
    }

    /// Records one finished request, `times` = (intended, sent, done);
    /// returns true when it succeeded.
    fn finish(
        &self,
        tally: &mut Tally<'_>,
        times: (u64, u64, u64),
        request: usize,
        finish: Finish<'_>,
        head: ResponseHead,
    ) -> bool {
        let (intended_ns, sent_ns, done_ns) = times;
        let slo = self.plan.slo;
        let rec = &mut *tally.recorder;
        let tokens_before = rec.output_tokens;
        rec.record_done_at(done_ns);
        // Whether it succeeded, else the kind of its failure.
        let failed = match finish {
            Finish::Ok => {
                rec.record_ok(intended_ns, sent_ns, done_ns, &slo);
                None
            }
            Finish::Status(code) => {
                rec.record_status(code);
                Some(ErrorKind::Status)
            }
            Finish::GrpcStatus(code) => {
                rec.record_grpc_status(code);
                Some(ErrorKind::GrpcStatus)
            }
            Finish::Error(kind) => {
                rec.record_error(kind);
                Some(kind)
            }
            Finish::Framing(cause) => {
                rec.record_framing(cause);
                Some(ErrorKind::BadFraming)
            }
            Finish::Check(which) => {
                rec.record_check(which);
                Some(ErrorKind::Check)
            }
            Finish::Stream { timing, gaps } => rec.record_stream(timing, gaps, &slo).err(),
        };
        let ok = failed.is_none();
        if let (true, Some(sink)) = (ok, tally.samples.as_deref_mut()) {
            match finish {
                Finish::Stream { timing, gaps } => {
                    if let Ok(s) = timing.summary() {
                        if !self.plan.peer_samples.is_empty() {
                            crate::measure::record_peer_samples(sink, timing, gaps, s.tokens);
                        }
                        // As the recorder takes them (`Recorder::record_stream`).
                        let end = timing.intended_ns.saturating_add(s.e2e_ns);
                        sink.record(Exact::Latency, s.e2e_ns);
                        sink.record(Exact::ServiceTime, end.saturating_sub(timing.sent_ns));
                        sink.record(Exact::Ttft, s.ttft_ns);
                        if let Some(tpot) = s.tpot_ns {
                            sink.record(Exact::Tpot, tpot);
                        }
                    }
                }
                _ => {
                    sink.record(Exact::Latency, done_ns.saturating_sub(intended_ns));
                    sink.record(Exact::ServiceTime, done_ns.saturating_sub(sent_ns));
                }
            }
        }
        if let Some(n) = tally.named(self.plan, request) {
            match failed {
                None => {
                    n.ok += 1;
                    n.latency.record(done_ns.saturating_sub(intended_ns));
                    n.service_time.record(done_ns.saturating_sub(sent_ns));
                    if let Finish::Stream { timing, .. } = finish {
                        if let Ok(s) = timing.summary() {
                            n.ttft.record(s.ttft_ns);
                        }
                    }
                }
                Some(kind) => n.record_error(kind),
            }
        }
        let rec = &mut *tally.recorder;
        if ok && done_ns > self.plan.end_ns() {
            rec.late_ok += 1;
            rec.late_tokens += rec.output_tokens - tokens_before;
        }
        let tokens = if ok {
            tally.recorder.output_tokens - tokens_before
        } else {
            0
        };
        if tally.requests.is_some() {
            let outcome = match (finish, failed) {
                (_, None) => Outcome::Ok,
                (Finish::Status(code), _) => Outcome::Status(code),
                (Finish::GrpcStatus(code), _) => Outcome::GrpcStatus(code),
                (Finish::Framing(cause), _) => Outcome::Framing(cause),
                (Finish::Check(which), _) => Outcome::Check(which),
                (_, Some(kind)) => Outcome::Error(kind),
            };
            let mut r = self.record(intended_ns, request, Some(done_ns), outcome);
            r.sent_ns = Some(sent_ns);
            r.first_byte_ns = head.first_byte_ns;
            r.status = match finish {
                Finish::Status(code) => Some(code),
                _ => head.status,
            };
            if let (true, Finish::Stream { timing, .. }) = (ok, finish) {
                r.output_tokens = Some(tokens);
                r.first_token_ns = timing
                    .summary()
                    .ok()
                    .map(|s| timing.intended_ns.saturating_add(s.ttft_ns));
            }
            tally.ended(r);
        }
        if let Some(iv) = tally.interval(self.plan, done_ns) {
            if ok {
                iv.ok += 1;
                iv.output_tokens = iv.output_tokens.saturating_add(tokens);
                iv.service_ns = iv
                    .service_ns
                    .saturating_add(done_ns.saturating_sub(sent_ns));
            } else {
                iv.errors += 1;
            }
        }
        if ok {
            let v = done_ns.saturating_sub(intended_ns);
            tally.record(self.plan, done_ns, IntervalMetric::Latency, v);
            if let Finish::Stream { timing, .. } = finish {
                if let Ok(s) = timing.summary() {
                    // In the interval of the first output's own time.
                    let first = timing.intended_ns.saturating_add(s.ttft_ns);
                    tally.record(self.plan, first, IntervalMetric::Ttft, s.ttft_ns);
                }
            }
        }
        if let Some(st) = tally.stage(self.plan, intended_ns) {
            if ok {
                st.ok += 1;
                st.latency.record(done_ns.saturating_sub(intended_ns));
            } else {
                st.errors += 1;
            }
        }
        ok
    }

    /// The last complete interval at `now_ns`: its index, its p99 latency
    /// and its p99 send lag (ns), for a progress line.
    pub fn last_complete(
        &self,
        intervals: &dyn IntervalSink,
        now_ns: u64,
    ) -> Option<(usize, u64, u64)> {
        let current = self.plan.interval_index(now_ns)?;
        let last = current.checked_sub(1)?;
        let (p99, lag_p99) = intervals.p99s(last)?;
        Some((last, p99, lag_p99))
    }
}
