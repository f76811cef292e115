//! The open model's pacer: it walks the schedule (and the conversations'
//! next turns) on the run's clock and, at each intended time, asks core's
//! pool rules whether the due request is sent now, waits for a connection
//! or is dropped; it queues it for a connection thread and starts the
//! threads the pool asks for. The schedule is the single source of truth
//! for send times.

use std::sync::atomic::Ordering;
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::Duration;

use metronome_core::engine::{Control, Published, Recorded, Series};
use metronome_core::ledger::{Ledger, Tally};
use metronome_core::measure::{NameTally, Recorder, StageTally, ThreadStats};
use metronome_core::pace::{pace, Pace, SpinTuner, BACKLOG_STOP_CHECK};
use metronome_core::plan::Plan;
use metronome_core::pool::Admit;
use metronome_core::schedule::Schedule;
use metronome_core::turns::{earliest, next_due, Due};

use crate::clock::{thread_cpu_ns, Clock};
use crate::collector::Fact;
use crate::conn::Conn;
use crate::queue::{Job, Shared, Talks, WOKEN};
use crate::tls::Tls;

/// The pacer's offered rate (requests per second) at or below which a
/// request is handed to its connection thread before its intended time
/// (the thread busy-waits to it and sends): a wake-up of the connection
/// thread is then not in the send lag.
const EARLY_MAX_RATE: f64 = 1_000.0;

/// The longest a single sleep of the pacer lasts, so a stop is noticed.
const MAX_SLEEP_NS: u64 = 20_000_000;
/// How often the pacer charges its CPU time to the interval series.
const CPU_SAMPLE_NS: u64 = 50_000_000;

/// Starts connection threads in the run's thread scope: the pre-opened
/// connections' before the clock starts, and those the pool asks for
/// while it runs.
pub(crate) struct Threads<'scope, 'env, 'a> {
    pub(crate) scope: &'scope std::thread::Scope<'scope, 'env>,
    pub(crate) plan: &'a Plan<'a>,
    pub(crate) tls: Option<&'a Tls>,
    /// The run's clock, once started.
    pub(crate) origin: &'a OnceLock<Clock>,
    pub(crate) shared: &'a Shared,
    /// To the collector (dropped with this, once the pacer is done).
    pub(crate) tx: mpsc::Sender<Fact>,
    /// Each connection thread's counts, pushed as it leaves.
    pub(crate) stats: &'a Mutex<Vec<ThreadStats>>,
    /// HTTP/3 (`--http3`): the multiplexed connections are QUIC ones.
    pub(crate) h3: bool,
}

impl<'scope, 'a: 'scope> Threads<'scope, '_, 'a> {
    /// An HTTP/1.1 connection thread, on `conn` or (None) on a connection
    /// it opens itself.
    pub(crate) fn h1(&self, conn: Option<Conn>) {
        let (plan, tls, origin, shared, stats) =
            (self.plan, self.tls, self.origin, self.shared, self.stats);
        let tx = self.tx.clone();
        shared.threads.fetch_add(1, Ordering::Relaxed);
        self.scope
            .spawn(move || crate::h1::worker(plan, tls, origin, shared, tx, conn, stats));
    }

    /// An HTTP/2 connection thread, on `opening` or (None) on a
    /// connection it opens itself.
    pub(crate) fn h2(&self, opening: Option<crate::h2::Opening>) {
        let (plan, tls, origin, shared, stats) =
            (self.plan, self.tls, self.origin, self.shared, self.stats);
        let tx = self.tx.clone();
        shared.threads.fetch_add(1, Ordering::Relaxed);
        self.scope
            .spawn(move || crate::h2::worker(plan, tls, origin, shared, tx, opening, stats));
    }

    /// An HTTP/3 connection thread, on `opening` or (None) on a
    /// connection it opens itself.
    pub(crate) fn h3(&self, opening: Option<crate::h3::Opening>) {
        let (plan, tls, origin, shared, stats) =
            (self.plan, self.tls, self.origin, self.shared, self.stats);
        let tx = self.tx.clone();
        shared.threads.fetch_add(1, Ordering::Relaxed);
        self.scope
            .spawn(move || crate::h3::worker(plan, tls, origin, shared, tx, opening, stats));
    }

    /// `n` connection threads, each opening its connection (the pool grows).
    fn grow(&self, n: u32) {
        for _ in 0..n {
            if self.h3 {
                self.h3(None);
            } else if self.plan.wire.streams().is_some() {
                self.h2(None);
            } else {
                self.h1(None);
            }
        }
    }
}

/// What the pacer counted, for the run's output.
pub(crate) struct Paced {
    /// Its own thread's counts (its CPU time is read by the caller, after
    /// the connection threads are told to leave).
    pub(crate) stats: ThreadStats,
    /// Scheduled and dropped requests.
    pub(crate) recorder: Recorder,
    /// Its share of the series: drops, waits and its CPU.
    pub(crate) intervals: Series,
    pub(crate) stages: Vec<StageTally>,
    pub(crate) names: Vec<NameTally>,
    /// Measured requests that waited for a connection.
    pub(crate) waited: u64,
    /// The run was stopped (not run to its end).
    pub(crate) stopped: bool,
    /// When the pacer stopped (run clock ns).
    pub(crate) stop_ns: u64,
}

/// Paces `schedule` on `clock` until it ends (or a stop), as the
/// [module docs](self) say; the connection threads the pool asks for are
/// started through `threads`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run<'scope, 'a: 'scope>(
    plan: &Plan<'_>,
    control: &Control,
    clock: Clock,
    schedule: Schedule<'_>,
    mut tuner: SpinTuner,
    shared: &Shared,
    talks: &Talks,
    threads: &Threads<'scope, '_, 'a>,
    published: Published,
) -> Paced {
    let turns_on = plan.turns.is_on();
    // The pacer's share of the offered rate: its shard's.
    let rate = plan.rate / f64::from(plan.shard.count.max(1));
    let ledger = Ledger::new(plan);
    let mut rec = Recorder::new();
    // The pacer's share of the series: drops, waits and its CPU.
    let mut pacer_intervals = Series::for_plan(plan);
    let mut pacer_stages: Vec<StageTally> =
        (0..plan.stage_count()).map(|_| StageTally::new()).collect();
    let mut pacer_names: Vec<NameTally> =
        (0..plan.name_count()).map(|_| NameTally::new()).collect();
    // Its drops' records, when they are written out.
    let mut requests = control.requests.clone();
    let tally = &mut Tally {
        recorder: &mut rec,
        intervals: &mut pacer_intervals,
        stages: &mut pacer_stages,
        names: &mut pacer_names,
        samples: None,
        follow_ups: None,
        requests: requests
            .as_mut()
            .map(|f| f as &mut dyn metronome_core::record::RequestSink),
    };
    let mut cpu = CpuSample {
        mark: (thread_cpu_ns(), 0),
        load_mark: 0,
        next_ns: CPU_SAMPLE_NS,
        published,
        settled: 0,
    };
    // The intended time of the last request handed over early.
    let mut early_mark = 0u64;
    let early_ok = plan.wire.streams().is_none() && !turns_on && rate <= EARLY_MAX_RATE;
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
        if now >= cpu.next_ns {
            cpu.sample(now, stats.spin_ns, control, &ledger, tally, shared);
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
                    let (admit, grow) = queue_due(plan, shared, now, t, request, early);
                    // Scheduled, and dropped or waiting: core's bookkeeping.
                    if ledger.admitted(tally, t, request, admit) {
                        waited += 1;
                    }
                    if !matches!(admit, Admit::Drop { .. }) {
                        if turns_on {
                            talks.open.fetch_add(1, Ordering::Relaxed);
                        }
                        shared.in_flight.fetch_add(1, Ordering::Relaxed);
                        if plan.wire.streams().is_some() {
                            shared.ready.notify_one();
                        }
                        stats.sent += 1;
                    }
                    // Connects the pool asked for: one thread each.
                    threads.grow(grow);
                }
            }
        }
    }
    let stop_ns = clock.now_ns();
    let cpu_ns = thread_cpu_ns();
    ledger.busy(
        tally,
        stop_ns,
        cpu_ns.saturating_sub(cpu.mark.0),
        stats.spin_ns.saturating_sub(cpu.mark.1),
    );

    Paced {
        stats,
        recorder: rec,
        intervals: pacer_intervals,
        stages: pacer_stages,
        names: pacer_names,
        waited,
        stopped,
        stop_ns,
    }
}

/// Core's pool rules on one due request (intended at `t`, to send
/// `request`) under the queue's lock: a sent or waiting one is queued for
/// a connection thread (`early`: handed over before `t`, the thread waits
/// to it), and the top sleeping HTTP/1.1 thread is woken for it once the
/// lock is released. Returns the decision and the connects to start.
#[inline]
fn queue_due(
    plan: &Plan<'_>,
    shared: &Shared,
    now: u64,
    t: u64,
    request: usize,
    early: bool,
) -> (Admit, u32) {
    let in_flight = shared.in_flight.load(Ordering::Relaxed);
    let (admit, grow, top) = {
        let mut q = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
        if plan.wire.streams().is_none() {
            q.shrink_idle(now, shared);
        }
        let state = q.pool_state(shared.open_connections.load(Ordering::Relaxed), in_flight);
        let admit = q.pool.admit(now, state);
        let grow = match admit {
            Admit::Drop { open } => open,
            Admit::Send { .. } | Admit::Wait { .. } => {
                q.jobs.push_back(Job {
                    request,
                    intended_ns: t,
                    waited_since: matches!(admit, Admit::Wait { .. }).then_some(now),
                    retried: false,
                    not_before_ns: if early { t } else { 0 },
                });
                match admit {
                    Admit::Wait { open, .. } | Admit::Send { open } => open,
                    Admit::Drop { .. } => 0,
                }
            }
        };
        q.connecting += grow as usize;
        let top = if !matches!(admit, Admit::Drop { .. }) && plan.wire.streams().is_none() {
            q.take_top()
        } else {
            None
        };
        (admit, grow, top)
    };
    if let Some(top) = top {
        top.wake(WOKEN);
    }
    (admit, grow)
}

/// The pacer's CPU sampling, every [`CPU_SAMPLE_NS`].
struct CpuSample {
    /// Its CPU time and busy-wait at the last sample (ns).
    mark: (u64, u64),
    /// When its load was last told to the pool (run clock ns).
    load_mark: u64,
    /// When the next sample is due (run clock ns).
    next_ns: u64,
    /// The pacer's live-interval mailbox, reserved before the clock.
    published: Published,
    /// Intervals whose bytes moved to the pacer's series (live intervals).
    settled: usize,
}

impl CpuSample {
    /// The pacer's CPU in the interval series, a saturated pacer told from
    /// a descheduled one; its closed intervals (with the bytes moved in)
    /// published live; and its load to the pool, which grows nothing
    /// while the pacer is the bottleneck. `spin_ns`: its busy-wait so far.
    fn sample(
        &mut self,
        now: u64,
        spin_ns: u64,
        control: &Control,
        ledger: &Ledger<'_>,
        tally: &mut Tally<'_>,
        shared: &Shared,
    ) {
        let cpu = thread_cpu_ns();
        let (cpu_then, spin_then) = self.mark;
        let spin = spin_ns.saturating_sub(spin_then);
        let busy = cpu.saturating_sub(cpu_then);
        ledger.busy(tally, now, busy, spin);
        shared
            .traffic
            .settle(ledger.plan(), tally.intervals, now, &mut self.settled);
        let recorded = Recorded {
            recorder: tally.recorder,
            names: tally.names,
        };
        control.progress.publish_interval(
            ledger,
            tally.intervals,
            recorded,
            now,
            &mut self.published,
        );
        control.progress.connections_open.store(
            shared.open_connections.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        shared
            .queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pool
            .pacer_load(
                busy.saturating_sub(spin),
                now.saturating_sub(self.load_mark),
            );
        self.load_mark = now;
        self.mark = (cpu, spin_ns);
        self.next_ns = now + CPU_SAMPLE_NS;
    }
}
