//! What the pacer and the connection threads share: the queue of due
//! requests ([`Job`], [`Queue`]) with core's pool rules, the idle stack of
//! sleeping connection threads ([`Sleeper`]), the run's counters
//! ([`Shared`]), and the conversations' next turns ([`Talks`]).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use metronome_core::engine::{FollowUps, RunOutput};
use metronome_core::pool::{Pool, PoolState};
use metronome_core::turns::FollowUpSink;

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
    /// HTTP/2 and HTTP/3 connection threads that have had a connection (their free
    /// slots counted in `idle`): the start gate counts these.
    pub(crate) linked: usize,
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
    pub(crate) thread: std::thread::Thread,
    pub(crate) signal: Arc<AtomicU8>,
    /// When it went to sleep (run clock ns).
    pub(crate) since_ns: u64,
}

/// [`Sleeper::signal`]: asleep.
pub(crate) const ASLEEP: u8 = 0;
/// [`Sleeper::signal`]: woken to look at the queue.
pub(crate) const WOKEN: u8 = 1;
/// [`Sleeper::signal`]: woken to close its connection and leave.
pub(crate) const RETIRE: u8 = 2;
/// [`Sleeper::signal`]: woken to leave, the schedule over.
pub(crate) const LEAVE: u8 = 3;

impl Sleeper {
    /// Wakes the thread with `signal`.
    pub(crate) fn wake(self, signal: u8) {
        self.signal.store(signal, Ordering::Release);
        self.thread.unpark();
    }
}

impl Queue {
    /// Takes the most recently used sleeping connection thread, if any,
    /// off the stack: a job is queued for it. Wake it ([`Sleeper::wake`]
    /// with [`WOKEN`]) once the queue's lock is released, so that it does
    /// not wake only to wait for that lock.
    pub(crate) fn take_top(&mut self) -> Option<Sleeper> {
        let s = self.sleepers.pop()?;
        self.idle -= 1;
        Some(s)
    }

    /// Wakes every sleeping connection thread to leave (the schedule is
    /// over): each job still queued has a thread woken for it already, or
    /// a busy or connecting one that takes it next, so a thread woken here
    /// takes none (it would take one from the thread woken for it, which
    /// sleeps on the warm connection).
    pub(crate) fn wake_all(&mut self) {
        while let Some(s) = self.take_top() {
            s.wake(LEAVE);
        }
    }

    /// The pool as core's rules see it; `open`: the connections open.
    pub(crate) fn pool_state(&self, open: u64, in_flight: u64) -> PoolState {
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
    pub(crate) fn shrink_idle(&mut self, now: u64, shared: &Shared) {
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
    /// The server writes on accept: the warm start found it
    /// ([`Warm::writes_first`](metronome_core::engine::Warm::writes_first)),
    /// or a connection opened during the run had bytes before its first
    /// request (set then, by its thread). Every connection distrusts its
    /// first response from then on.
    pub(crate) writes_first: AtomicBool,
    /// Bytes read and written, per interval.
    pub(crate) traffic: crate::traffic::Traffic,
}

/// Locks `m`, poisoned or not (a panicked thread's state is still the
/// run's: the counts must go on).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        lock(&self.queue)
    }

    /// A connection opened during the run: counted opened and open, and
    /// the peak raised.
    pub(crate) fn count_open(&self) {
        self.opened.fetch_add(1, Ordering::Relaxed);
        let now = self.open_connections.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak_connections.fetch_max(now, Ordering::Relaxed);
    }

    /// The queue is closing and holds no job: a connection thread may leave.
    pub(crate) fn closing_and_empty(&self) -> bool {
        let q = self.queue();
        q.closing && q.jobs.is_empty()
    }

    /// The next due request, waiting for one; `None` once the queue is
    /// closed and empty.
    pub(crate) fn take_job(&self) -> Option<Job> {
        let mut q = self.queue();
        loop {
            if let Some(j) = q.jobs.pop_front() {
                return Some(j);
            }
            if q.closing {
                return None;
            }
            q = self.ready.wait(q).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// A stream connection thread without a connection: the next waiting
    /// request is not sent (unsent, `connect`), and the thread pauses 10 ms
    /// before it tries to connect again.
    pub(crate) fn not_connected(
        &self,
        origin: &OnceLock<crate::clock::Clock>,
        tx: &std::sync::mpsc::Sender<crate::collector::Fact>,
    ) {
        let job = self.queue().jobs.pop_front();
        let clock = origin.get_or_init(crate::clock::Clock::start);
        if let Some(job) = job {
            let _ = tx.send(crate::collector::Fact::NotSent {
                intended_ns: job.intended_ns,
                request: job.request,
                at_ns: clock.now_ns(),
                reason: metronome_core::measure::Unsent::Connect,
                retried: job.retried,
            });
            self.in_flight.fetch_sub(1, Ordering::Relaxed);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Conversations ([`metronome_core::turns`]): the next turns the collector
/// hands the pacer, and the turns not yet ended.
pub(crate) struct Talks {
    /// Next turns waiting for their intended time (room reserved before
    /// the clock).
    pub(crate) queue: Mutex<FollowUps>,
    /// Turns admitted by the pacer whose end the collector has not yet
    /// recorded: while any is open, a next turn may still come.
    pub(crate) open: AtomicU64,
    /// The pacer, unparked when a next turn arrives.
    pub(crate) pacer: OnceLock<std::thread::Thread>,
}

impl Talks {
    /// Room for `plan`'s next turns, none open yet.
    pub(crate) fn new(plan: &metronome_core::plan::Plan<'_>) -> Talks {
        Talks {
            queue: Mutex::new(FollowUps::with_capacity(plan.follow_up_capacity())),
            open: AtomicU64::new(0),
            pacer: OnceLock::new(),
        }
    }

    /// The collector recorded the end of a turn: its next turn (if any)
    /// moves from the collector's storage to the pacer's queue, and the
    /// pacer is woken to decide again.
    pub(crate) fn ended(&self, out: &mut RunOutput) {
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
    pub(crate) fn next_ns(&self) -> Option<u64> {
        self.queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .next_ns()
    }
}
