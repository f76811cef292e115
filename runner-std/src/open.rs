//! The open model: one pacer thread walks the schedule and hands each due
//! request to an idle connection thread; a collector thread records.
//!
//! This file sets the run up and ends it, in named steps: the connections
//! pre-opened ([`pre_open`]) and warmed ([`warm`]) before the clock, the
//! state the threads share ([`shared_for`]), the collector ([`collect`]),
//! the start gate ([`start_gate`]), then the pacer ([`crate::pacer`]), its
//! close ([`close`]) and the run's output ([`output`]). The queue the
//! threads share is [`crate::queue`]; the connection threads are
//! [`crate::h1`] and [`crate::h2`].

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use metronome_core::engine::{
    warm_start, Control, EngineError, Origin, Published, RunOutput, Setup, Warm,
};
use metronome_core::exchange::Exchange;
use metronome_core::ledger::Ledger;
use metronome_core::measure::{ThreadStats, Unsent};
use metronome_core::pace::{Spin, SpinTuner};
use metronome_core::plan::{Plan, WarmUp, Wire};
use metronome_core::pool::{Pool, PoolOutcome};

use crate::clock::{process_cpu_ns, sleep_overshoot_ns, thread_cpu_ns, Clock};
use crate::collector::{Collector, Fact};
use crate::conn::Conn;
use crate::pacer::{Paced, Threads};
use crate::queue::{Job, Queue, Shared, Talks};
use crate::tls::Tls;

/// The longest the start gate waits for the pre-opened connections'
/// threads to wait for work.
const READY_LIMIT: Duration = Duration::from_secs(1);

/// The connections opened before the clock starts: HTTP/1.1 ones, or
/// HTTP/2 ones through their SETTINGS exchange.
struct Pre {
    h1: Vec<Conn>,
    h2: Vec<crate::h2::Opening>,
    /// HTTP/3 ones through their QUIC handshake.
    h3: Vec<crate::h3::Opening>,
}

impl Pre {
    fn len(&self) -> usize {
        self.h1.len() + self.h2.len() + self.h3.len()
    }
}

/// What the run's start gate saw: the clock's zero and how late after it
/// the pacer began.
type Start = (Origin, u64);

pub(crate) fn run(
    plan: &Plan<'_>,
    control: &Control,
    tls: Option<&Tls>,
) -> Result<RunOutput, EngineError> {
    let h3 = matches!(plan.wire, Wire::Http3(_));
    let schedule = plan.schedule(plan.shard)?;

    // 1. Before the clock: the connections, pre-opened and warmed.
    let mut warnings = Vec::new();
    let mut setup = Setup::default();
    let pre = pre_open(plan, tls, h3, &mut setup, &mut warnings)?;
    let opened_first = pre.len() as u64;
    let mut warm = Warm::default();
    let pre = self::warm(plan, control, tls, pre, &mut setup, &mut warm);
    let shared = shared_for(plan, pre.len(), opened_first, &warm);
    let talks = Talks::new(plan);
    let tuner = tuner(plan);
    let (tx, rx) = mpsc::channel::<Fact>();
    let worker_stats = Mutex::new(Vec::new());
    // The run's clock, started at the start gate; a connection thread
    // reads it once it has a job (queued only after the start).
    let origin = OnceLock::new();
    let cpu_start = process_cpu_ns();
    // Live intervals: the collector's and the pacer's mailboxes, before
    // the clock.
    let collector_published = control.progress.published(plan);
    let pacer_published = control.progress.published(plan);

    let (mut out, paced, start) = std::thread::scope(|s| {
        let collector = crate::spawn_big(s, || {
            collect(plan, control, rx, &talks, collector_published)
        })?;
        let threads = Threads {
            scope: s,
            plan,
            tls,
            origin: &origin,
            shared: &shared,
            tx,
            stats: &worker_stats,
            h3,
        };
        let pre_count = pre.len();
        for opening in pre.h2 {
            threads.h2(Some(opening));
        }
        for opening in pre.h3 {
            threads.h3(Some(opening));
        }
        for conn in pre.h1 {
            threads.h1(Some(conn));
        }
        // 2. The start gate, then 3. the pacer.
        let (clock, start) = start_gate(plan, control, &shared, pre_count, &origin);
        let mut paced = crate::pacer::run(
            plan,
            control,
            clock,
            schedule,
            tuner,
            &shared,
            &talks,
            &threads,
            pacer_published,
        );
        // 4. The end: the connection threads leave, the collector ends.
        close(plan, &shared, &paced);
        drop(threads);
        paced.stats.cpu_ns = thread_cpu_ns();
        let mut out = collector.join().unwrap_or_else(|_| RunOutput::empty(plan));
        out.intervals.merge(&paced.intervals);
        for (st, pacer) in out.stages.iter_mut().zip(&paced.stages) {
            st.merge(pacer);
        }
        for (n, pacer) in out.names.iter_mut().zip(&paced.names) {
            n.merge(pacer);
        }
        Ok::<_, EngineError>((out, paced, start))
    })?;
    let worker_stats = worker_stats.into_inner().unwrap_or_else(|e| e.into_inner());
    output(plan, &mut out, &shared, paced, worker_stats, cpu_start);
    out.warnings.extend(warnings);
    out.setup.merge(&setup);
    out.warm = warm;
    let (zero, late_ns) = start;
    out.start_unix_ns = zero.unix_ns;
    out.start_late_ns = late_ns;
    out.finalize(plan);
    Ok(out)
}

/// Opens `plan.connections` connections before the clock starts (HTTP/2:
/// through their SETTINGS exchange), by core's pre-open rule
/// ([`metronome_core::engine::pre_open`]); records their set-up times.
fn pre_open(
    plan: &Plan<'_>,
    tls: Option<&Tls>,
    h3: bool,
    setup: &mut Setup,
    warnings: &mut Vec<String>,
) -> Result<Pre, EngineError> {
    let connect_timeout = Duration::from_nanos(plan.connect_timeout_ns());
    let wanted = plan.connections;
    if let (true, Some(tls)) = (h3, tls) {
        let open = || {
            let o = crate::h3::open(plan, connect_timeout, tls)?;
            o.opened().record(setup);
            Ok(o)
        };
        let h3 = metronome_core::engine::pre_open(wanted, false, open, warnings)?;
        return Ok(Pre {
            h1: Vec::new(),
            h2: Vec::new(),
            h3,
        });
    }
    if plan.wire.streams().is_some() {
        let open = || {
            let o = crate::h2::open(plan.addr, connect_timeout, tls)?;
            o.opened().record(setup);
            Ok(o)
        };
        let h2 = metronome_core::engine::pre_open(wanted, false, open, warnings)?;
        return Ok(Pre {
            h1: Vec::new(),
            h2,
            h3: Vec::new(),
        });
    }
    let open = || {
        let mut c = Conn::connect(
            plan.addr,
            connect_timeout,
            Exchange::for_plan(plan),
            tls.cloned(),
        )?;
        if let Some(o) = c.opened.take() {
            o.record(setup);
        }
        Ok(c)
    };
    let h1 = metronome_core::engine::pre_open(wanted, false, open, warnings)?;
    Ok(Pre {
        h1,
        h2: Vec::new(),
        h3: Vec::new(),
    })
}

/// Core's warm start over this engine's HTTP/1.1 connections (HTTP/2 ones
/// are usable once greeted), unless `--warm-up off`.
fn warm(
    plan: &Plan<'_>,
    control: &Control,
    tls: Option<&Tls>,
    mut pre: Pre,
    setup: &mut Setup,
    warm: &mut Warm,
) -> Pre {
    if plan.warm_up != WarmUp::Off && !pre.h1.is_empty() {
        let open = |limit: Duration| {
            let mut c =
                Conn::connect(plan.addr, limit, Exchange::for_plan(plan), tls.cloned()).ok()?;
            if let Some(o) = c.opened.take() {
                o.record(setup);
            }
            Some(c)
        };
        pre.h1 = warm_start(plan, control, pre.h1, open, warm);
    }
    pre
}

/// The state the pacer and the connection threads share, with `pre`
/// connections open (`opened_first` were, before the warm start) and core's
/// pool seeded with the warm start's service times.
fn shared_for(plan: &Plan<'_>, pre: usize, opened_first: u64, warm: &Warm) -> Shared {
    let warm_service_ns = warm.median_service_ns().zip(warm.min_service_ns());
    // The pacer's share of the offered rate: its shard's.
    let rate = plan.rate / f64::from(plan.shard.count.max(1));
    let mut pool = Pool::new(rate, pre as u32, plan.max_connections, plan.max_in_flight);
    if let Some((median, fastest)) = warm_service_ns {
        pool.seed(median);
        pool.seed_base(fastest);
    }
    Shared {
        queue: Mutex::new(Queue {
            jobs: VecDeque::new(),
            pool,
            idle: 0,
            connecting: 0,
            linked: 0,
            closing: false,
            sleepers: Vec::with_capacity(plan.max_connections.max(pre as u32) as usize),
            pool_closed: 0,
        }),
        ready: Condvar::new(),
        in_flight: AtomicU64::new(0),
        open_connections: AtomicU64::new(pre as u64),
        peak_connections: AtomicU64::new(pre as u64),
        // Every connect made so far: the first ones (kept or not) and the warm-up's.
        opened: AtomicU64::new(opened_first + warm.reopened),
        hard_end_ns: AtomicU64::new(u64::MAX),
        threads: AtomicUsize::new(0),
        dropped_gaps: AtomicU64::new(0),
        writes_first: AtomicBool::new(warm.writes_first),
        traffic: crate::traffic::Traffic::new(plan),
    }
}

/// The pacer's busy-wait slice: a thread sleep wakes late by tens of
/// microseconds or more, so it spins at least that long and the send
/// itself is on time.
fn tuner(plan: &Plan<'_>) -> SpinTuner {
    let overshoot_ns = sleep_overshoot_ns();
    match plan.spin {
        Spin::Fixed { ns } => SpinTuner::fixed(ns.max(overshoot_ns)),
        Spin::Auto { initial_ns } => SpinTuner::auto(initial_ns.max(overshoot_ns)),
    }
}

/// The collector thread: records every fact until the last sender leaves;
/// with conversations, a turn's end hands its next turn to the pacer.
fn collect(
    plan: &Plan<'_>,
    control: &Control,
    rx: mpsc::Receiver<Fact>,
    talks: &Talks,
    published: Published,
) -> RunOutput {
    let turns_on = plan.turns.is_on();
    let mut c = Collector::new(plan, control, published);
    for fact in rx {
        let ends_turn = turns_on && matches!(fact, Fact::Done { .. } | Fact::NotSent { .. });
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
}

/// The start gate: the clock starts once every pre-opened connection's
/// thread waits for a job, so the first sends are neither charged the
/// threads' start-up nor handed to a connection opened because no thread
/// was waiting yet. The clock's zero is now, or `--start-at` (waited for
/// here).
fn start_gate(
    plan: &Plan<'_>,
    control: &Control,
    shared: &Shared,
    pre: usize,
    origin: &OnceLock<Clock>,
) -> (Clock, Start) {
    wait_idle(shared, pre, plan.wire.streams().is_some(), control);
    let zero = Origin::for_run(control);
    let late_ns = zero.wait_unless(&control.stop);
    let clock = *origin.get_or_init(|| Clock::at(zero.instant));
    shared
        .hard_end_ns
        .store(plan.hard_end_ns(), Ordering::Relaxed);
    (clock, (zero, late_ns))
}

/// The pacer is done: a stop moves the hard end to its grace, and every
/// connection thread is told the schedule is over.
fn close(plan: &Plan<'_>, shared: &Shared, paced: &Paced) {
    if paced.stopped {
        shared
            .hard_end_ns
            .fetch_min(plan.stopped_hard_end_ns(paced.stop_ns), Ordering::Relaxed);
    }
    {
        let mut q = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.closing = true;
        q.wake_all();
    }
    shared.ready.notify_all();
}

/// The run's output from the collector's `out`: the pacer's counts, the
/// requests left queued, the threads' counts and the shared counters.
fn output(
    plan: &Plan<'_>,
    out: &mut RunOutput,
    shared: &Shared,
    paced: Paced,
    worker_stats: Vec<ThreadStats>,
    cpu_start: u64,
) {
    // The pacer's own counts: scheduled and dropped.
    out.recorder.merge(&paced.recorder);
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
            paced.stop_ns,
            Unsent::Timeout,
            job.retried,
        );
    }
    out.threads.insert(0, paced.stats);
    out.threads.extend(worker_stats);
    // The pacer's busy-wait, and the connection threads' before sends
    // handed over early.
    out.spin_ns = out.threads.iter().map(|t| t.spin_ns).sum();
    out.cpu_ns = process_cpu_ns().saturating_sub(cpu_start);
    out.measured_ns = plan.measured_ns(paced.stopped.then_some(paced.stop_ns));
    out.stopped = paced.stopped;
    out.connections_opened = shared.opened.load(Ordering::Relaxed);
    out.peak_connections = shared.peak_connections.load(Ordering::Relaxed);
    out.waited_for_connection = paced.waited;
    out.dropped_gaps = shared.dropped_gaps.load(Ordering::Relaxed);
    shared.traffic.add_to(out);
    let q = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
    out.pool = PoolOutcome::of(&q.pool, q.pool_closed);
}

/// Waits, at most [`READY_LIMIT`] and not past a stop, until `n`
/// connection threads wait for a job (HTTP/2 and HTTP/3: have their
/// connection, whose free stream slots then count as idle).
fn wait_idle(shared: &Shared, n: usize, streams: bool, control: &Control) {
    let start = Instant::now();
    let ready = |q: &Queue| if streams { q.linked } else { q.idle };
    while ready(&shared.queue.lock().unwrap_or_else(|e| e.into_inner())) < n
        && start.elapsed() < READY_LIMIT
        && !control.stopped()
    {
        std::thread::sleep(Duration::from_micros(100));
    }
}
