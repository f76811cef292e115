//! The open model: one pacer thread walks the schedule and hands each due
//! request to an idle connection thread; a collector thread records.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use metronome_core::engine::{
    warm_start, Control, EngineError, FollowUps, Origin, RunOutput, Setup, Warm,
};
use metronome_core::exchange::Exchange;
use metronome_core::ledger::{Ledger, Tally};
use metronome_core::measure::{NameTally, Recorder, StageTally, ThreadStats, Unsent};
use metronome_core::pace::{linger_ns, pace, Pace, Spin, SpinTuner, BACKLOG_STOP_CHECK};
use metronome_core::plan::{Plan, WarmUp, FRESH_SETTLE_NS};
use metronome_core::pool::{Admit, Pool, PoolOutcome, PoolState};
use metronome_core::turns::{earliest, next_due, Due, FollowUpSink};

use crate::clock::{process_cpu_ns, sleep_overshoot_ns, thread_cpu_ns, Clock};
use crate::collector::{Collector, Fact};
use crate::conn::{Conn, Exchanged, Health};
use crate::tls::Tls;

/// A due request waiting for a connection.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Job {
    /// Which of the plan's requests it sends (core's `Plan::request_index`).
    pub(crate) request: usize,
    pub(crate) intended_ns: u64,
    /// When it began to wait for a connection (run clock ns), if it did.
    pub(crate) waited_since: Option<u64>,
    /// Sent once already and refused (HTTP/2: a GOAWAY or REFUSED_STREAM):
    /// this is its one retry.
    pub(crate) retried: bool,
    /// Handed over before its intended time (run clock ns; 0: when due):
    /// the connection thread busy-waits to it and sends, so the hand-off
    /// (a thread wake-up, tens of microseconds) is not in the send lag.
    pub(crate) not_before_ns: u64,
}

pub(crate) struct Queue {
    pub(crate) jobs: VecDeque<Job>,
    /// Core's admission and growth rules, with the service-time estimate
    /// the connection threads feed.
    pub(crate) pool: Pool,
    /// Connection threads waiting for a job (HTTP/2: their free stream
    /// slots, a connection being idle while it has one).
    pub(crate) idle: usize,
    /// Connection threads started but not yet connected.
    pub(crate) connecting: usize,
    /// HTTP/2 connection threads that have had a connection (their free
    /// slots counted in `idle`): the start gate counts these.
    pub(crate) h2_linked: usize,
    /// The schedule is over: exit once the queue is empty.
    pub(crate) closing: bool,
    /// HTTP/1.1: the connection threads asleep waiting for a job, the
    /// most recently used on top (LIFO): the pacer wakes the top one, the
    /// pool closes from the bottom ([`Pool::close_idle`]).
    pub(crate) sleepers: Vec<Sleeper>,
    /// Connections the pool rules closed.
    pub(crate) pool_closed: u64,
}

/// A connection thread asleep on the idle stack.
pub(crate) struct Sleeper {
    thread: std::thread::Thread,
    signal: Arc<AtomicU8>,
    /// When it went to sleep (run clock ns).
    since_ns: u64,
}

/// [`Sleeper::signal`]: asleep.
const ASLEEP: u8 = 0;
/// [`Sleeper::signal`]: woken to look at the queue.
const WOKEN: u8 = 1;
/// [`Sleeper::signal`]: woken to close its connection and leave.
const RETIRE: u8 = 2;
/// [`Sleeper::signal`]: woken to leave, the schedule over.
const LEAVE: u8 = 3;

impl Sleeper {
    /// Wakes the thread with `signal`.
    fn wake(self, signal: u8) {
        self.signal.store(signal, Ordering::Release);
        self.thread.unpark();
    }
}

impl Queue {
    /// Takes the most recently used sleeping connection thread, if any,
    /// off the stack: a job is queued for it. Wake it ([`Sleeper::wake`]
    /// with [`WOKEN`]) once the queue's lock is released, so that it does
    /// not wake only to wait for that lock.
    fn take_top(&mut self) -> Option<Sleeper> {
        let s = self.sleepers.pop()?;
        self.idle -= 1;
        Some(s)
    }

    /// Wakes every sleeping connection thread to leave (the schedule is
    /// over): each job still queued has a thread woken for it already, or
    /// a busy or connecting one that takes it next, so a thread woken here
    /// takes none (it would take one from the thread woken for it, which
    /// sleeps on the warm connection).
    fn wake_all(&mut self) {
        while let Some(s) = self.take_top() {
            s.wake(LEAVE);
        }
    }

    /// The pool as core's rules see it; `open`: the connections open.
    fn pool_state(&self, open: u64, in_flight: u64) -> PoolState {
        PoolState {
            idle: self.idle.saturating_sub(self.jobs.len()) as u32,
            open: open.min(u64::from(u32::MAX)) as u32,
            connecting: self.connecting as u32,
            waiting: self.jobs.len().saturating_sub(self.idle) as u32,
            in_flight: in_flight.min(u64::from(u32::MAX)) as u32,
        }
    }

    /// Closes, least recently used first, the sleeping connections the
    /// pool rules say have been idle too long ([`Pool::close_idle`]).
    fn shrink_idle(&mut self, now: u64, shared: &Shared) {
        while let Some(since) = self.sleepers.first().map(|s| s.since_ns) {
            let state = self.pool_state(
                shared.open_connections.load(Ordering::Relaxed),
                shared.in_flight.load(Ordering::Relaxed),
            );
            if !self.pool.close_idle(now, state, since) {
                break;
            }
            let s = self.sleepers.remove(0);
            self.idle -= 1;
            self.pool_closed += 1;
            shared.open_connections.fetch_sub(1, Ordering::Relaxed);
            s.wake(RETIRE);
        }
    }
}

pub(crate) struct Shared {
    pub(crate) queue: Mutex<Queue>,
    pub(crate) ready: Condvar,
    pub(crate) in_flight: AtomicU64,
    pub(crate) open_connections: AtomicU64,
    pub(crate) peak_connections: AtomicU64,
    pub(crate) opened: AtomicU64,
    /// No request is sent, and no reply awaited, after this time (ns).
    pub(crate) hard_end_ns: AtomicU64,
    pub(crate) threads: AtomicUsize,
    /// Inter-token gaps beyond the per-request cap, summed by closing connections.
    pub(crate) dropped_gaps: AtomicU64,
    /// The warm start found a server that writes on accept
    /// ([`Warm::writes_first`]): connections opened during the run
    /// distrust their first response.
    pub(crate) writes_first: bool,
    /// Bytes read and written, per interval.
    pub(crate) traffic: crate::traffic::Traffic,
}

/// Conversations ([`metronome_core::turns`]): the next turns the collector
/// hands the pacer, and the turns not yet ended.
struct Talks {
    /// Next turns waiting for their intended time (room reserved before
    /// the clock).
    queue: Mutex<FollowUps>,
    /// Turns admitted by the pacer whose end the collector has not yet
    /// recorded: while any is open, a next turn may still come.
    open: AtomicU64,
    /// The pacer, unparked when a next turn arrives.
    pacer: OnceLock<std::thread::Thread>,
}

impl Talks {
    /// The collector recorded the end of a turn: its next turn (if any)
    /// moves from the collector's storage to the pacer's queue, and the
    /// pacer is woken to decide again.
    fn ended(&self, out: &mut RunOutput) {
        if !out.follow_ups.is_empty() {
            let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            while let Some((t, request)) = out.follow_ups.pop_due(u64::MAX) {
                if !q.push(t, request) {
                    out.recorder.sessions.overflowed += 1;
                }
            }
        }
        self.open.fetch_sub(1, Ordering::Relaxed);
        if let Some(p) = self.pacer.get() {
            p.unpark();
        }
    }

    /// The earliest next turn waiting, if any.
    fn next_ns(&self) -> Option<u64> {
        self.queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .next_ns()
    }
}

/// The pacer's offered rate (requests per second) at or below which a
/// request is handed to its connection thread before its intended time
/// (the thread busy-waits to it and sends): a wake-up of the connection
/// thread is then not in the send lag.
const EARLY_MAX_RATE: f64 = 1_000.0;

/// The longest a single sleep of the pacer lasts, so a stop is noticed.
const MAX_SLEEP_NS: u64 = 20_000_000;
/// How often the pacer charges its CPU time to the interval series.
const CPU_SAMPLE_NS: u64 = 50_000_000;
/// The longest the start gate waits for the pre-opened connections'
/// threads to wait for work.
const READY_LIMIT: Duration = Duration::from_secs(1);

pub(crate) fn run(
    plan: &Plan<'_>,
    control: &Control,
    tls: Option<&Tls>,
) -> Result<RunOutput, EngineError> {
    let connect_timeout = Duration::from_nanos(plan.connect_timeout_ns());
    let schedule = plan.schedule(plan.shard)?;

    // 1. Pre-open the connections before the clock starts.
    let mut pre = Vec::with_capacity(plan.connections as usize);

    let mut warnings = Vec::new();
    let mut setup = Setup::default();
    // HTTP/2: connections through their SETTINGS exchange.
    let mut pre_h2 = Vec::new();
    let h2_count = if plan.http2.is_some() {
        plan.connections
    } else {
        0
    };
    for _ in 0..h2_count {
        match crate::h2::open(plan.addr, connect_timeout, tls) {
            Ok(o) => {
                o.opened().record(&mut setup);
                pre_h2.push(o);
            }
            Err(e) if pre_h2.is_empty() => return Err(crate::connect_error(e)),
            Err(e) => {
                warnings.push(format!(
                    "only {} of {} connections could be pre-opened: {e}",
                    pre_h2.len(),
                    plan.connections
                ));
                break;
            }
        }
    }
    let h1_count = if plan.http2.is_some() {
        0
    } else {
        plan.connections
    };
    for _ in 0..h1_count {
        match Conn::connect(
            plan.addr,
            connect_timeout,
            Exchange::for_plan(plan),
            tls.cloned(),
        ) {
            Ok(mut c) => {
                if let Some(o) = c.opened.take() {
                    o.record(&mut setup);
                }
                pre.push(c)
            }
            // A refused certificate fails every connection alike.
            Err(e) if pre.is_empty() || crate::handshake_failure(&e).is_some() => {
                return Err(crate::connect_error(e))
            }
            Err(e) => {
                warnings.push(format!(
                    "only {} of {} connections could be pre-opened: {e}",
                    pre.len(),
                    plan.connections
                ));
                break;
            }
        }
    }

    let mut warm = Warm::default();
    let opened_first = (pre.len() + pre_h2.len()) as u64;
    if plan.warm_up != WarmUp::Off && !pre.is_empty() {
        // Core's warm start over this engine's connections.
        let open = |limit: Duration| {
            let mut c =
                Conn::connect(plan.addr, limit, Exchange::for_plan(plan), tls.cloned()).ok()?;
            if let Some(o) = c.opened.take() {
                o.record(&mut setup);
            }
            Some(c)
        };
        pre = warm_start(plan, control, pre, open, &mut warm);
    }
    let warm_service_ns = warm.median_service_ns().zip(warm.min_service_ns());
    // The pacer's share of the offered rate: its shard's.
    let rate = plan.rate / f64::from(plan.shard.count.max(1));
    let mut pool = Pool::new(
        rate,
        (pre.len() + pre_h2.len()) as u32,
        plan.max_connections,
        plan.max_in_flight,
    );
    if let Some((median, fastest)) = warm_service_ns {
        pool.seed(median);
        pool.seed_base(fastest);
    }
    let shared = Shared {
        queue: Mutex::new(Queue {
            jobs: VecDeque::new(),
            pool,
            idle: 0,
            connecting: 0,
            h2_linked: 0,
            closing: false,
            sleepers: Vec::with_capacity(
                plan.max_connections.max((pre.len() + pre_h2.len()) as u32) as usize,
            ),
            pool_closed: 0,
        }),
        ready: Condvar::new(),
        in_flight: AtomicU64::new(0),
        open_connections: AtomicU64::new((pre.len() + pre_h2.len()) as u64),
        peak_connections: AtomicU64::new((pre.len() + pre_h2.len()) as u64),
        // Every connect made so far: the first ones (kept or not) and the warm-up's.
        opened: AtomicU64::new(opened_first + warm.reopened),
        hard_end_ns: AtomicU64::new(u64::MAX),
        threads: AtomicUsize::new(0),
        dropped_gaps: AtomicU64::new(0),
        writes_first: warm.writes_first,
        traffic: crate::traffic::Traffic::new(plan),
    };
    let talks = Talks {
        queue: Mutex::new(FollowUps::with_capacity(plan.follow_up_capacity())),
        open: AtomicU64::new(0),
        pacer: OnceLock::new(),
    };
    let turns_on = plan.turns.is_on();
    let (tx, rx) = mpsc::channel::<Fact>();
    // A thread sleep wakes late by tens of microseconds or more: spin at
    // least that long so the send itself is on time.
    let overshoot_ns = sleep_overshoot_ns();
    let mut tuner = match plan.spin {
        Spin::Fixed { ns } => SpinTuner::fixed(ns.max(overshoot_ns)),
        Spin::Auto { initial_ns } => SpinTuner::auto(initial_ns.max(overshoot_ns)),
    };
    let worker_stats = Mutex::new(Vec::new());
    // The run's clock, started at the start gate below; a connection
    // thread reads it once it has a job (queued only after the start).
    let origin = OnceLock::new();
    let cpu_start = process_cpu_ns();

    let mut start = None::<(Origin, u64)>;
    // Live intervals: the collector's and the pacer's, before the clock.
    let collector_published = control.progress.published();
    let mut pacer_published = control.progress.published();
    // Intervals whose bytes moved to the pacer's series (live intervals).
    let mut settled = 0usize;
    let (mut out, pacer_stats, pacer_rec, waited, stopped, stop_ns) = std::thread::scope(|s| {
        let collector = crate::spawn_big(s, || {
            let mut c = Collector::new(plan, collector_published);
            for fact in rx {
                let ends_turn =
                    turns_on && matches!(fact, Fact::Done { .. } | Fact::NotSent { .. });
                c.handle(fact, &control.progress);
                if ends_turn {
                    talks.ended(&mut c.out);
                }
            }
            let mut out = c.out;
            out.threads.push(ThreadStats {
                cpu_ns: thread_cpu_ns(),
                ..ThreadStats::default()
            });
            out
        })?;
        let pre_count = pre.len() + pre_h2.len();
        for opening in pre_h2 {
            let tx = tx.clone();
            let shared = &shared;
            let origin = &origin;
            let stats = &worker_stats;
            shared.threads.fetch_add(1, Ordering::Relaxed);
            s.spawn(move || crate::h2::worker(plan, tls, origin, shared, tx, Some(opening), stats));
        }
        for conn in pre {
            let tx = tx.clone();
            let shared = &shared;
            let origin = &origin;
            let stats = &worker_stats;
            shared.threads.fetch_add(1, Ordering::Relaxed);
            s.spawn(move || worker(plan, tls, origin, shared, tx, Some(conn), stats));
        }
        // The start gate: the clock starts once every pre-opened
        // connection's thread waits for a job, so the first sends are
        // neither charged the threads' start-up nor handed to a connection
        // opened because no thread was waiting yet.
        wait_idle(&shared, pre_count, plan.http2.is_some(), control);
        // The clock's zero: now, or `--start-at` (waited for here).
        let zero = Origin::for_run(control);
        let late_ns = zero.wait_unless(&control.stop);
        start = Some((zero, late_ns));
        let clock = *origin.get_or_init(|| Clock::at(zero.instant));
        shared
            .hard_end_ns
            .store(plan.hard_end_ns(), Ordering::Relaxed);

        // 2. The pacer: the schedule is the single source of truth for send times.
        let ledger = Ledger::new(plan);
        let mut rec = Recorder::new();
        // The pacer's share of the series: drops, waits and its CPU.
        let mut pacer_intervals = metronome_core::engine::Series::for_plan(plan);
        let mut pacer_stages: Vec<StageTally> =
            (0..plan.stage_count()).map(|_| StageTally::new()).collect();
        let mut pacer_names: Vec<NameTally> =
            (0..plan.name_count()).map(|_| NameTally::new()).collect();
        let tally = &mut Tally {
            recorder: &mut rec,
            intervals: &mut pacer_intervals,
            stages: &mut pacer_stages,
            names: &mut pacer_names,
            samples: None,
            follow_ups: None,
        };
        let mut cpu_mark = (thread_cpu_ns(), 0u64);
        let mut load_mark = 0u64;
        // The intended time of the last request handed over early.
        let mut early_mark = 0u64;
        let early_ok = plan.http2.is_none() && !turns_on && rate <= EARLY_MAX_RATE;
        let mut next_sample = CPU_SAMPLE_NS;
        let mut stats = ThreadStats::default();
        let mut waited = 0u64;
        let mut schedule = schedule;
        let mut next = schedule.next();
        let mut index = 0u64;
        let mut stopped = false;
        let _ = talks.pacer.set(std::thread::current());
        let end_ns = plan.end_ns();
        loop {
            if control.stopped() {
                stopped = true;
                break;
            }
            let now = clock.now_ns();
            if now >= next_sample {
                // The pacer's CPU per interval: a saturated pacer told
                // from a descheduled one.
                let cpu = thread_cpu_ns();
                let (cpu_then, spin_then) = cpu_mark;
                let spin = stats.spin_ns.saturating_sub(spin_then);
                let busy = cpu.saturating_sub(cpu_then);
                ledger.busy(tally, now, busy, spin);
                shared
                    .traffic
                    .settle(plan, tally.intervals, now, &mut settled);
                control.progress.publish_interval(
                    &ledger,
                    tally.intervals,
                    now,
                    &mut pacer_published,
                );
                // The pool grows nothing while the pacer is the bottleneck.
                shared
                    .queue
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .pool
                    .pacer_load(busy.saturating_sub(spin), now.saturating_sub(load_mark));
                load_mark = now;
                cpu_mark = (cpu, stats.spin_ns);
                next_sample = now + CPU_SAMPLE_NS;
            }
            // The schedule's next request, or a conversation's next turn,
            // whichever is due first.
            let turn_next = if turns_on { talks.next_ns() } else { None };
            let first_due = earliest(next, turn_next);
            let mut paced = pace(now, first_due, tuner.slice_ns());
            // HTTP/1.1 without conversations, at low rates: the request due
            // within the busy-wait slice is handed over now, and its
            // connection thread busy-waits to its intended time and sends
            // (one such at a time: the last one's time has passed), instead
            // of this thread busy-waiting and then waking the connection
            // thread. Only at EARLY_MAX_RATE or below: the std engine's
            // threads may share one core, and at higher rates a connection
            // thread busy-waiting takes it from the pacer and the readers
            // (at 10k req/s on one core the latency p50 went from 75 us to
            // 309 us; at 500 it fell from 79 to 70 us: benches/wakeup.sh).
            let early = matches!(paced, Pace::Spin) && early_ok && now >= early_mark;
            if early {
                paced = Pace::Send;
            }
            match paced {
                Pace::Done => {
                    // A turn not yet ended may still bring a next one.
                    if turns_on && talks.open.load(Ordering::Relaxed) > 0 && now < end_ns {
                        std::thread::park_timeout(Duration::from_nanos(
                            (end_ns - now).min(MAX_SLEEP_NS),
                        ));
                        continue;
                    }
                    break;
                }
                Pace::Spin => {
                    let (_, spun) = clock.spin_until(first_due.unwrap_or(now));
                    stats.spin_ns += spun;
                }
                Pace::Sleep { until_ns } => {
                    let target = until_ns.min(now + MAX_SLEEP_NS);
                    if turns_on {
                        // A next turn that arrives meanwhile unparks it.
                        std::thread::park_timeout(Duration::from_nanos(target - now));
                        let woke = clock.now_ns();
                        if woke >= target {
                            tuner.observe(woke - target);
                        }
                    } else {
                        clock.sleep_until(target);
                        // How late the sleep woke: the adaptive slice follows it.
                        tuner.observe(clock.now_ns().saturating_sub(target));
                    }
                }
                Pace::Send => {
                    // Early: what is due by the next request's time.
                    let at = if early {
                        first_due.unwrap_or(now).max(now)
                    } else {
                        now
                    };
                    if early {
                        early_mark = at;
                    }
                    let mut due = 0u32;
                    loop {
                        // A backlog is sent or dropped at once, but a stop is seen.
                        due += 1;
                        if due % BACKLOG_STOP_CHECK == 0 && control.stopped() {
                            break;
                        }
                        let turn_next = if turns_on { talks.next_ns() } else { None };
                        let (t, request) = match next_due(next, turn_next, at) {
                            Due::Nothing => break,
                            Due::Schedule(t) => {
                                let request = plan.request_index(index);
                                index += 1;
                                next = schedule.next();
                                (t, request)
                            }
                            Due::Turn => talks
                                .queue
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .pop_due(now)
                                .expect("a due turn was seen"),
                        };
                        let measured = ledger.scheduled(tally, t, request);
                        let in_flight = shared.in_flight.load(Ordering::Relaxed);
                        let (admit, grow, top) = {
                            let mut q = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
                            if plan.http2.is_none() {
                                q.shrink_idle(now, &shared);
                            }
                            let state = q.pool_state(
                                shared.open_connections.load(Ordering::Relaxed),
                                in_flight,
                            );
                            let admit = q.pool.admit(now, state);
                            let grow = match admit {
                                Admit::Drop { open } => open,
                                Admit::Send | Admit::Wait { .. } => {
                                    q.jobs.push_back(Job {
                                        request,
                                        intended_ns: t,
                                        waited_since: matches!(admit, Admit::Wait { .. })
                                            .then_some(now),
                                        retried: false,
                                        not_before_ns: if early { t } else { 0 },
                                    });
                                    match admit {
                                        Admit::Wait { open, .. } => open,
                                        _ => 0,
                                    }
                                }
                            };
                            q.connecting += grow as usize;
                            let top =
                                if !matches!(admit, Admit::Drop { .. }) && plan.http2.is_none() {
                                    q.take_top()
                                } else {
                                    None
                                };
                            (admit, grow, top)
                        };
                        if let Some(top) = top {
                            top.wake(WOKEN);
                        }
                        match admit {
                            Admit::Drop { .. } => {
                                ledger.dropped(tally, t, request);
                            }
                            Admit::Send | Admit::Wait { .. } => {
                                if turns_on {
                                    talks.open.fetch_add(1, Ordering::Relaxed);
                                }
                                shared.in_flight.fetch_add(1, Ordering::Relaxed);
                                if let Admit::Wait { full, .. } = admit {
                                    if measured {
                                        waited += 1;
                                        ledger.waited(tally, t, full);
                                    }
                                }
                                if plan.http2.is_some() {
                                    shared.ready.notify_one();
                                }
                                stats.sent += 1;
                            }
                        }
                        // Connects the pool asked for: one thread each.
                        for _ in 0..grow {
                            let tx = tx.clone();
                            let shared = &shared;
                            let origin = &origin;
                            let stats = &worker_stats;
                            shared.threads.fetch_add(1, Ordering::Relaxed);
                            if plan.http2.is_some() {
                                s.spawn(move || {
                                    crate::h2::worker(plan, tls, origin, shared, tx, None, stats)
                                });
                            } else {
                                s.spawn(move || worker(plan, tls, origin, shared, tx, None, stats));
                            }
                        }
                    }
                }
            }
        }
        let stop_ns = clock.now_ns();
        let cpu = thread_cpu_ns();
        ledger.busy(
            tally,
            stop_ns,
            cpu.saturating_sub(cpu_mark.0),
            stats.spin_ns.saturating_sub(cpu_mark.1),
        );
        if stopped {
            shared
                .hard_end_ns
                .fetch_min(plan.stopped_hard_end_ns(stop_ns), Ordering::Relaxed);
        }
        {
            let mut q = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
            q.closing = true;
            q.wake_all();
        }
        shared.ready.notify_all();
        drop(tx);
        stats.cpu_ns = thread_cpu_ns();
        let mut out = collector.join().unwrap_or_else(|_| RunOutput::empty(plan));
        out.intervals.merge(&pacer_intervals);
        for (st, pacer) in out.stages.iter_mut().zip(&pacer_stages) {
            st.merge(pacer);
        }
        for (n, pacer) in out.names.iter_mut().zip(&pacer_names) {
            n.merge(pacer);
        }
        Ok::<_, EngineError>((out, stats, rec, waited, stopped, stop_ns))
    })?;

    // The pacer's own counts: scheduled and dropped.
    out.recorder.merge(&pacer_rec);
    // Requests still queued when every connection thread has left (none
    // could be opened, or all failed): never sent, or, for one sent once
    // already and waiting for its retry, failed as the reset that made it
    // retry (it is counted sent).
    let left: Vec<Job> = shared
        .queue
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .jobs
        .drain(..)
        .collect();
    let ledger = Ledger::new(plan);
    for job in left {
        ledger.not_sent(
            &mut out.tally(),
            job.intended_ns,
            job.request,
            stop_ns,
            Unsent::Timeout,
            job.retried,
        );
    }
    out.threads.insert(0, pacer_stats);
    out.threads
        .extend(worker_stats.into_inner().unwrap_or_else(|e| e.into_inner()));
    // The pacer's busy-wait, and the connection threads' before sends
    // handed over early.
    out.spin_ns = out.threads.iter().map(|t| t.spin_ns).sum();
    out.cpu_ns = process_cpu_ns().saturating_sub(cpu_start);
    out.measured_ns = plan.measured_ns(stopped.then_some(stop_ns));
    out.stopped = stopped;
    out.connections_opened = shared.opened.load(Ordering::Relaxed);
    out.peak_connections = shared.peak_connections.load(Ordering::Relaxed);
    out.waited_for_connection = waited;
    out.dropped_gaps = shared.dropped_gaps.load(Ordering::Relaxed);
    out.warnings.extend(warnings);
    out.setup.merge(&setup);
    shared.traffic.add_to(&mut out);
    out.warm = warm;
    {
        let q = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
        out.pool = PoolOutcome::of(&q.pool, q.pool_closed);
    }
    if let Some((zero, late_ns)) = start {
        out.start_unix_ns = zero.unix_ns;
        out.start_late_ns = late_ns;
    }
    out.finalize(plan);
    Ok(out)
}

/// A connection thread: takes due requests from the queue, one at a time.
#[allow(clippy::too_many_arguments)]
fn worker(
    plan: &Plan<'_>,
    tls: Option<&Tls>,
    origin: &OnceLock<Clock>,
    shared: &Shared,
    tx: mpsc::Sender<Fact>,
    conn: Option<Conn>,
    all_stats: &Mutex<Vec<ThreadStats>>,
) {
    let connect_timeout = Duration::from_nanos(plan.connect_timeout_ns());
    let rate = plan.rate / f64::from(plan.shard.count.max(1));
    let mut stats = ThreadStats::default();
    let mut conn = match conn {
        Some(c) => c,
        None => {
            // Grown by the pacer, after the clock started.
            let clock = origin.get_or_init(Clock::start);
            let mut exchange = Exchange::for_plan(plan);
            if shared.writes_first {
                exchange.distrust_first_responses();
            }
            let mut c = Conn::new(exchange, tls.cloned());
            let r = c.reopen_until(plan.addr, connect_timeout, clock, &shared.hard_end_ns);
            report_open(&mut c, &r, &tx);
            if r.is_ok() {
                if !shared.writes_first {
                    settle(plan);
                }
                count_open(shared);
            }
            let mut q = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
            q.connecting -= 1;
            c
        }
    };
    // The last request's (done, service) times, for the pool's estimate.
    let mut sample: Option<(u64, u64)> = None;
    // Asleep on the idle stack, this thread is woken through this.
    let signal = Arc::new(AtomicU8::new(ASLEEP));
    loop {
        let job = {
            let mut q = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((done_ns, service_ns)) = sample.take() {
                q.pool.observe(done_ns, service_ns);
            }
            conn.linger_ns = linger_ns(rate, q.pool.service_ns());
            if stats.sent > 0 && !q.closing {
                let state = q.pool_state(
                    shared.open_connections.load(Ordering::Relaxed),
                    shared.in_flight.load(Ordering::Relaxed),
                );
                if q.pool.close_on_free(state) {
                    // More open than the pool aims at (a refused probe's):
                    // closed between requests, not replaced.
                    q.pool_closed += 1;
                    shared.open_connections.fetch_sub(1, Ordering::Relaxed);
                    break;
                }
            }
            loop {
                if let Some(j) = q.jobs.pop_front() {
                    break Some(j);
                }
                if q.closing {
                    break None;
                }
                // Asleep on top of the idle stack, until the pacer wakes
                // this thread for a job (or to close).
                conn.mark_idle();
                signal.store(ASLEEP, Ordering::Relaxed);
                q.idle += 1;
                q.sleepers.push(Sleeper {
                    thread: std::thread::current(),
                    signal: Arc::clone(&signal),
                    since_ns: origin.get().map_or(0, Clock::now_ns),
                });
                drop(q);
                while signal.load(Ordering::Acquire) == ASLEEP {
                    std::thread::park();
                }
                if matches!(signal.load(Ordering::Acquire), RETIRE | LEAVE) {
                    q = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
                    break None;
                }
                q = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
            }
        };
        let Some(job) = job else { break };
        // Jobs are queued only after the clock started.
        let clock = origin.get_or_init(Clock::start);
        let request = plan.requests[job.request];
        let mut retried = false;
        loop {
            let now = clock.now_ns();
            if now >= shared.hard_end_ns.load(Ordering::Relaxed) {
                let _ = tx.send(never_sent_or_failed(job, retried, now, Unsent::Timeout));
                break;
            }
            // A connection the server closed, or wrote to, while idle is
            // replaced before the send; no request is charged. Not for a
            // server that writes on accept (the warm start saw it): there
            // every connection carries one request, whose response is
            // refused (core's `Exchange::distrust_first_responses`), and
            // closing it for its early bytes would open one after another.
            let health = if shared.writes_first {
                Health::Alive
            } else {
                conn.health()
            };
            match health {
                Health::Alive | Health::Closed => {}
                Health::IdleClosed => {
                    let _ = tx.send(Fact::IdleClosed { at_ns: now });
                }
                Health::Unsolicited => {
                    let _ = tx.send(Fact::Unsolicited { at_ns: now });
                }
            }
            if !conn.is_open() {
                let r = conn.reopen_until(plan.addr, connect_timeout, clock, &shared.hard_end_ns);
                report_open(&mut conn, &r, &tx);
                if r.is_err() {
                    // Refused or unreachable: never sent.
                    let at = clock.now_ns();
                    let _ = tx.send(never_sent_or_failed(job, retried, at, Unsent::Connect));
                    break;
                }
                shared.opened.fetch_add(1, Ordering::Relaxed);
                if plan.warm_up != WarmUp::Off && !shared.writes_first {
                    // Watched before its first request, then looked at again.
                    settle(plan);
                    continue;
                }
            }
            if job.not_before_ns > clock.now_ns() {
                // Handed over early: the send waits for its intended time.
                let (_, spun) = clock.spin_until(job.not_before_ns);
                stats.spin_ns += spun;
            }
            let sent_ns = clock.now_ns();
            if !retried {
                stats.sent += 1;
                let _ = tx.send(Fact::Sent {
                    intended_ns: job.intended_ns,
                    request: job.request,
                    sent_ns,
                    waited_since: job.waited_since,
                });
            }
            let ended = conn.exchange(
                clock,
                request,
                job.intended_ns,
                sent_ns,
                plan.timeout_ns,
                &shared.hard_end_ns,
                (retried, plan.retry_non_idempotent),
                &shared.traffic,
            );
            match ended {
                Exchanged::Retry => {
                    retried = true;
                    let _ = tx.send(Fact::Retried {
                        intended_ns: job.intended_ns,
                    });
                }
                Exchanged::Done {
                    done_ns,
                    outcome,
                    unsolicited,
                } => {
                    if unsolicited {
                        let _ = tx.send(Fact::Unsolicited { at_ns: done_ns });
                    }
                    // A failure is no answer: it says nothing of the
                    // service time.
                    if !matches!(outcome, crate::conn::Outcome::Failed(_)) {
                        sample = Some((done_ns, done_ns.saturating_sub(sent_ns)));
                    }
                    let _ = tx.send(Fact::Done {
                        intended_ns: job.intended_ns,
                        request: job.request,
                        sent_ns,
                        done_ns,
                        outcome,
                    });
                    break;
                }
            }
        }
        shared.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
    stats.cpu_ns = thread_cpu_ns();
    shared
        .dropped_gaps
        .fetch_add(conn.dropped_gaps(), Ordering::Relaxed);
    all_stats
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(stats);
}

/// Waits, at most [`READY_LIMIT`] and not past a stop, until `n`
/// connection threads wait for a job (HTTP/2: have their connection,
/// whose free stream slots then count as idle).
fn wait_idle(shared: &Shared, n: usize, h2: bool, control: &Control) {
    let start = Instant::now();
    let ready = |q: &Queue| if h2 { q.h2_linked } else { q.idle };
    while ready(&shared.queue.lock().unwrap_or_else(|e| e.into_inner())) < n
        && start.elapsed() < READY_LIMIT
        && !control.stopped()
    {
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// A request that cannot go out at `at_ns` (core's `Ledger::not_sent`).
fn never_sent_or_failed(job: Job, retried: bool, at_ns: u64, reason: Unsent) -> Fact {
    Fact::NotSent {
        intended_ns: job.intended_ns,
        request: job.request,
        at_ns,
        reason,
        retried,
    }
}

/// Tells the collector how a connect during the run went: its set-up
/// times, or its handshake failure.
fn report_open(conn: &mut Conn, r: &std::io::Result<()>, tx: &mpsc::Sender<Fact>) {
    if let Some(o) = conn.opened.take() {
        let _ = tx.send(Fact::Opened(o));
    }
    if let Some(kind) = r.as_ref().err().and_then(crate::handshake_failure) {
        let _ = tx.send(Fact::HandshakeFailed(kind));
    }
}

fn count_open(shared: &Shared) {
    shared.opened.fetch_add(1, Ordering::Relaxed);
    let now = shared.open_connections.fetch_add(1, Ordering::Relaxed) + 1;
    shared.peak_connections.fetch_max(now, Ordering::Relaxed);
}

/// A connection opened during the run waits [`FRESH_SETTLE_NS`] before its first
/// request (unless `--warm-up off`), so bytes a server writes on accept are
/// seen by the health check as unsolicited, never taken for a response.
fn settle(plan: &Plan<'_>) {
    if plan.warm_up != WarmUp::Off {
        std::thread::sleep(Duration::from_nanos(FRESH_SETTLE_NS));
    }
}
