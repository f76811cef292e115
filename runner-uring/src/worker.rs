//! One engine thread's event loop: its ring, its connections, its share of
//! the schedule and its part of the output.
//!
//! One loop iteration: reap every completion without blocking (each is
//! stamped with the clock as it is handled), check deadlines when the
//! earliest one has passed (a linear scan of the connections, at most every
//! [`SCAN_NS`]), then ask core's [`pace`] what to do: send every due request
//! in one batch and submit, busy-wait the last slice (leaving it as soon as
//! a completion is ready, core's [`spin_step`], so a response that arrives
//! during the spin is stamped when it arrives), or arm the ring's
//! timer and sleep in `submit_and_wait` until it fires or a completion
//! arrives. Sleeps end at the next send's spin slice, the earliest deadline,
//! or after [`IDLE_WAKE_NS`] (to notice the stop flag and publish progress).
//!
//! Protocol is core's: each connection's [`Exchange`] turns bytes and times
//! into a [`Finish`], and the [`Ledger`] records it. This file moves bytes,
//! reads the clock and sleeps.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::Ordering;
use std::time::Instant;

use metronome_core::engine::{Control, HandshakeFailure, RunOutput};
use metronome_core::exchange::{compact, Exchange, Feed, Idle, GAP_CAP};
use metronome_core::ledger::{Finish, Ledger};
use metronome_core::measure::{ErrorKind, ThreadStats, Unsent};
use metronome_core::plan::{
    linger_ns, pace, spin_step, Model, Pace, Plan, SpinMeter, SpinStep, SpinTuner, WarmUp,
    BACKLOG_STOP_CHECK, FRESH_SETTLE_NS, READ_BUF_BYTES, REAP_GUARD_NS,
};
use metronome_core::pool::{Admit, Pool, PoolState};
use metronome_core::schedule::Schedule;
use rustls::ClientConnection;

use crate::clock::Clock;
use crate::engine::{Share, ThreadOut};
use crate::ring::{Completion, Ring};
use crate::sys::thread_cpu_ns;
use crate::{Phase, UringOptions};

mod tls;

/// Deadline scan period and longest sleep.
const SCAN_NS: u64 = 1_000_000;
/// Longest sleep: the stop flag is noticed within this.
const IDLE_WAKE_NS: u64 = 10_000_000;
/// Progress publication period per thread.
const PUBLISH_NS: u64 = 50_000_000;
/// Closed model: wait this long before reconnecting after a refused connect.
const RETRY_NS: u64 = 1_000_000;
/// Completions handled per reap batch.
const REAP_BATCH: usize = 256;
/// Each TLS connection's send buffer (ciphertext): two full records.
const TX_BYTES: usize = 2 * (16 * 1024 + 256);

/// A request's place in the schedule and its clock.
#[derive(Clone, Copy, Debug, Default)]
struct Job {
    /// Index into the plan's request list.
    request: usize,
    intended_ns: u64,
    /// Sent once already, on a connection found closed before any response
    /// byte: this is its retry (never another).
    retried: bool,
    /// When it began to wait for a connection (clock ns), if it did.
    waited_since: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// No socket.
    Free,
    /// An asynchronous connect is in flight.
    Connecting,
    /// Connected; the TLS handshake is in flight (https only).
    Handshaking,
    /// Connected during the run and watched for [`FRESH_SETTLE_NS`] before its
    /// first request: bytes that arrive now were asked for by no request
    /// (a server writing on accept); they close it, counted as unsolicited.
    Fresh,
    /// Open, no request.
    Idle,
    /// A request is in flight.
    Busy,
    /// The response is complete but its send completion has not arrived.
    Settling,
    /// Shut down; waiting for the ring's `Closed`.
    Closing,
}

/// One connection slot; the slot index is also the ring's slot.
#[derive(Debug)]
struct Conn {
    state: State,
    job: Job,
    sent_ns: u64,
    deadline_ns: u64,
    sent_bytes: usize,
    sending: bool,
    /// Unconsumed bytes of the read buffer are `start..end`.
    start: usize,
    end: usize,
    /// The request/response state machine (core's).
    exchange: Exchange,
    /// Closed model: the global worker index, and the next try of a refused connect.
    worker: u64,
    sends: u64,
    retry_at_ns: Option<u64>,
    /// Open and no request sent on it yet.
    unused: bool,
    /// Replace this connection only when a request needs it: the server
    /// closed it before its first use (replacing it at once could loop as
    /// fast as the server closes).
    on_demand: bool,
    /// The TLS session (https only).
    tls: Option<Box<ClientConnection>>,
    /// TLS: ciphertext in the ring's send buffer is `tx_off..tx_end`.
    tx_off: usize,
    tx_end: usize,
    /// TLS: where in the plaintext buffer the armed recv delivers.
    plain_at: usize,
    /// TLS: the armed "recv" is a `Nop` delivering plaintext rustls held back.
    held: bool,
    /// When the connect (then the handshake) started, clock ns.
    connect_at_ns: u64,
    shake_at_ns: u64,
}

/// Progress counted since the last publication (published in batches).
#[derive(Clone, Copy, Debug, Default)]
struct Pending {
    sent: u64,
    ok: u64,
    errors: u64,
}

impl Pending {
    /// Counts a recorded end: `Some(ok)`, or `None` for a warmup request.
    fn count(&mut self, ok: Option<bool>) {
        match ok {
            Some(true) => self.ok += 1,
            Some(false) => self.errors += 1,
            None => {}
        }
    }
}

/// One engine thread: its ring, its connections, its part of the output.
pub(crate) struct Worker<'p> {
    plan: &'p Plan<'p>,
    control: &'p Control,
    opts: &'p UringOptions,
    ledger: Ledger<'p>,
    clock: Clock,
    ring: Ring,
    conns: Vec<Conn>,
    gaps: Box<[u64]>,
    /// TLS: each connection's plaintext buffer (`READ_BUF_BYTES` a slot);
    /// the ring's read buffer then holds ciphertext. Empty for plain HTTP.
    plain: Box<[u8]>,
    idle: Vec<usize>,
    waiting: VecDeque<Job>,
    schedule: Schedule<'p>,
    /// This thread's index and the thread count (for request indices).
    thread: u64,
    threads: u64,
    /// Open loop, or closed with its workers and expected interval.
    model: Model,
    workers_total: u64,
    /// Core's admission and growth rules, with the service-time estimate.
    pool: Pool,
    in_flight: usize,
    open: u64,
    connecting: u64,
    hard_end_ns: u64,
    /// The earliest deadline (request timeout or closed-model retry), or `u64::MAX`.
    next_deadline_ns: u64,
    /// False once the schedule is over or stopped.
    scheduling: bool,
    out: RunOutput,
    stats: ThreadStats,
    pending: Pending,
    published_interval: Option<usize>,
    /// The busy-wait slice, fixed or following the timer's lateness.
    tuner: SpinTuner,
    /// When the armed timer is due (clock ns), while one is armed.
    timer_due_ns: Option<u64>,
    /// When the thread last woke from a wait, until its completions are reaped.
    woke_ns: Option<u64>,
    /// Thread CPU and spin time at the last [`Worker::sample_cpu`] (ns).
    cpu_mark: (u64, u64),
    /// When the last batch of sends left (clock ns).
    last_send_ns: u64,
    /// This thread's share of the offered rate, requests per second.
    rate: f64,
}

impl<'p> Worker<'p> {
    /// Sets the thread up: everything it will use is allocated here,
    /// before the clock starts.
    pub(crate) fn new(
        plan: &'p Plan<'p>,
        control: &'p Control,
        opts: &'p UringOptions,
        share: Share,
        warning: Option<String>,
    ) -> io::Result<Worker<'p>> {
        let slots = share.slots.max(1);
        let tls = opts.tls.is_some();
        let tx_len = if tls { TX_BYTES } else { 0 };
        let mut ring = Ring::new(slots, READ_BUF_BYTES, tx_len, plan.requests, plan.addr)?;
        let mut conns: Vec<Conn> = (0..slots)
            .map(|i| Conn {
                state: State::Free,
                job: Job::default(),
                sent_ns: 0,
                deadline_ns: 0,
                sent_bytes: 0,
                sending: false,
                start: 0,
                end: 0,
                exchange: plan.exchange(),
                worker: share.worker_base + i as u64,
                sends: 0,
                retry_at_ns: None,
                unused: false,
                on_demand: false,
                tls: None,
                tx_off: 0,
                tx_end: 0,
                plain_at: 0,
                held: false,
                connect_at_ns: 0,
                shake_at_ns: 0,
            })
            .collect();
        let pre = share.streams.len() as u64;
        let mut idle = Vec::with_capacity(slots);
        for (i, (s, session)) in share.streams.into_iter().enumerate() {
            ring.adopt(i, s);
            conns[i].tls = session;
            conns[i].state = State::Idle;
            conns[i].unused = true;
            idle.push(i);
        }
        idle.reverse();
        // The plan was validated, and a thread's part of a valid shard is valid.
        let schedule = plan
            .schedule(share.shard)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let mut out = RunOutput::empty(plan);
        out.warnings.extend(warning);
        out.connections_opened = pre;
        out.peak_connections = pre;
        // This thread's share of the offered rate: its sub-shard's.
        let rate = plan.rate / f64::from(share.shard.count.max(1));
        let mut pool = Pool::new(rate, pre as u32, slots as u32, share.max_in_flight as u32);
        if let Some(service) = share.warm_service_ns {
            pool.seed(service);
        }
        let workers_total = match plan.model {
            Model::Closed { workers, .. } => u64::from(workers),
            Model::Open => 0,
        };
        Ok(Worker {
            plan,
            control,
            opts,
            ledger: Ledger::new(plan),
            clock: Clock::at(Instant::now()),
            ring,
            conns,
            gaps: vec![0u64; slots * GAP_CAP].into_boxed_slice(),
            plain: vec![0u8; if tls { slots * READ_BUF_BYTES } else { 0 }].into_boxed_slice(),
            idle,
            waiting: VecDeque::with_capacity(share.max_in_flight),
            schedule,
            thread: share.thread as u64,
            threads: share.threads as u64,
            model: plan.model,
            workers_total,
            pool,
            in_flight: 0,
            open: pre,
            connecting: 0,
            hard_end_ns: plan.hard_end_ns(),
            scheduling: true,
            next_deadline_ns: u64::MAX,
            out,
            stats: ThreadStats::default(),
            pending: Pending::default(),
            published_interval: None,
            tuner: plan.spin.tuner(),
            timer_due_ns: None,
            woke_ns: None,
            cpu_mark: (0, 0),
            last_send_ns: 0,
            rate,
        })
    }

    fn is_closed(&self) -> bool {
        matches!(self.model, Model::Closed { .. })
    }

    fn hook(&self, phase: Phase) {
        if let Some(h) = self.opts.phase_hook {
            h(phase);
        }
    }

    /// Runs the event loop on the clock released by the start gate.
    pub(crate) fn run(mut self, clock: Clock) -> io::Result<ThreadOut> {
        self.clock = clock;
        let cpu_start = thread_cpu_ns();
        self.cpu_mark = (cpu_start, 0);
        self.hook(Phase::Measuring);
        let result = self.event_loop();
        self.sample_cpu(self.clock.now_ns());
        self.hook(Phase::Done);
        self.publish(self.clock.now_ns(), true);
        let stopped_at = result?;
        self.stats.cpu_ns = thread_cpu_ns().saturating_sub(cpu_start);
        self.out.threads.push(self.stats);
        self.out.cpu_ns = self.stats.cpu_ns;
        self.out.spin_ns = self.stats.spin_ns;
        self.out.dropped_gaps = self.conns.iter().map(|c| c.exchange.dropped_gaps()).sum();
        Ok(ThreadOut {
            out: self.out,
            stopped_at,
        })
    }

    /// The event loop; returns the stop time when stopped early.
    fn event_loop(&mut self) -> io::Result<Option<u64>> {
        let end_ns = self.plan.end_ns();
        let mut batch = [Completion::Timer; REAP_BATCH];
        let mut next = if self.is_closed() {
            None
        } else {
            self.schedule.next()
        };
        let mut index = 0u64;
        let mut stopped_at = None;
        let mut next_scan = 0u64;
        let mut next_publish = PUBLISH_NS;
        // The pre-opened connections are watched while idle, as every
        // idle connection is (see `ready`).
        for slot in 0..self.conns.len() {
            if self.conns[slot].state == State::Idle && !self.ring.recv_pending(slot) {
                self.arm_recv(slot, 0)?;
            }
        }
        if self.is_closed() {
            for slot in 0..self.conns.len() {
                self.closed_send(slot);
            }
            self.ring.submit()?;
        }
        loop {
            // 1. Completions, without blocking.
            loop {
                let n = self.ring.reap(&mut batch);
                for &c in &batch[..n] {
                    self.on_completion(c)?;
                }
                if n < batch.len() {
                    break;
                }
            }
            self.woke_ns = None;
            let now = self.clock.now_ns();
            // 2. Deadlines, retries and progress, about every millisecond.
            if now >= next_scan && now >= self.next_deadline_ns {
                self.scan(now)?;
                next_scan = now + SCAN_NS;
            }
            if now >= next_publish {
                self.sample_cpu(now);
                self.publish(now, false);
                next_publish = now + PUBLISH_NS;
            }
            // 3. The end of scheduling: the schedule, the stop flag, or (closed) the end time.
            if self.scheduling {
                let stop = self.control.stopped();
                let over = match self.model {
                    Model::Closed { .. } => now >= end_ns,
                    Model::Open => next.is_none(),
                };
                if stop || over {
                    self.scheduling = false;
                    if stop {
                        stopped_at = Some(now);
                        self.hard_end_ns = self.plan.stopped_hard_end_ns(now);
                        for c in self.conns.iter_mut() {
                            c.deadline_ns = c.deadline_ns.min(self.hard_end_ns);
                        }
                        self.next_deadline_ns = self.next_deadline_ns.min(self.hard_end_ns);
                    }
                    self.hook(Phase::Draining);
                }
            }
            let mut wake = (now + IDLE_WAKE_NS)
                .min(next_publish)
                .min(self.next_deadline_ns.max(next_scan));
            if self.scheduling && !self.is_closed() {
                match pace(now, next, self.tuner.slice_ns()) {
                    Pace::Send => {
                        let mut due = 0u32;
                        while let Some(t) = next.filter(|&t| t <= now) {
                            let request =
                                self.plan.request_index(self.thread + index * self.threads);
                            self.dispatch(Job {
                                request,
                                intended_ns: t,
                                retried: false,
                                waited_since: None,
                            })?;
                            index += 1;
                            next = self.schedule.next();
                            // A backlog (after a stall of this thread) is
                            // sent or dropped at once, but a stop is seen.
                            due += 1;
                            if due % BACKLOG_STOP_CHECK == 0 && self.control.stopped() {
                                break;
                            }
                        }
                        self.ring.submit()?;
                        self.last_send_ns = now;
                        continue;
                    }
                    Pace::Spin => {
                        // Busy-wait to the send, but leave at once when a
                        // completion is ready (and the send is not about to
                        // be due): it is reaped (and stamped) at the top of
                        // the loop, then the spin resumes.
                        let target = next.unwrap_or(now);
                        let mut meter = SpinMeter::start(now);
                        loop {
                            let t = meter.now_ns();
                            let ready = target.saturating_sub(t) > REAP_GUARD_NS
                                && self.ring.completion_ready()?;
                            if spin_step(t, target, ready) != SpinStep::Spin {
                                break;
                            }
                            std::hint::spin_loop();
                            meter.tick(self.clock.now_ns());
                        }
                        self.stats.spin_ns += meter.spun_ns();
                        continue;
                    }
                    Pace::Sleep { until_ns } => wake = wake.min(until_ns),
                    Pace::Done => continue,
                }
            }
            if !self.scheduling {
                if self.in_flight == 0 {
                    break;
                }
                if now >= self.hard_end_ns {
                    self.expire_all(now)?;
                    break;
                }
                wake = wake.min(self.hard_end_ns);
            }
            if self.scheduling && self.is_closed() {
                wake = wake.min(end_ns);
            }
            // Stay awake a little after the last send while responses are
            // in flight (core's `linger_ns`): a fast response is stamped
            // when it arrives, not when the sleeping thread is woken.
            let linger_end = self.last_send_ns.saturating_add(self.linger());
            if self.in_flight > 0 && now < linger_end.min(wake) {
                let target = linger_end.min(wake);
                let mut meter = SpinMeter::start(now);
                while meter.now_ns() < target && !self.ring.completion_ready()? {
                    std::hint::spin_loop();
                    meter.tick(self.clock.now_ns());
                }
                self.stats.spin_ns += meter.spun_ns();
                continue;
            }
            let after = wake.saturating_sub(now).max(1);
            if self.ring.timer(after)? {
                self.timer_due_ns = Some(now + after);
            }
            self.ring.submit_and_wait()?;
            self.woke_ns = Some(self.clock.now_ns());
        }
        Ok(stopped_at)
    }

    /// Charges the CPU (and spin) used since the last sample to the
    /// interval of `now`: the per-interval series then tells a saturated
    /// generator from a descheduled one.
    fn sample_cpu(&mut self, now: u64) {
        let cpu = thread_cpu_ns();
        let (cpu_then, spin_then) = self.cpu_mark;
        self.ledger.busy(
            &mut self.out.tally(),
            now,
            cpu.saturating_sub(cpu_then),
            self.stats.spin_ns.saturating_sub(spin_then),
        );
        self.cpu_mark = (cpu, self.stats.spin_ns);
    }

    /// How long to stay awake after the last send (core's [`linger_ns`]);
    /// the open model only.
    fn linger(&self) -> u64 {
        match self.model {
            Model::Open => linger_ns(self.rate, self.pool.service_ns()),
            Model::Closed { .. } => 0,
        }
    }

    /// The pool as core's [`Pool`] rules see it.
    fn pool_state(&self) -> PoolState {
        PoolState {
            idle: self.idle.len() as u32,
            open: self.open as u32,
            connecting: self.connecting as u32,
            waiting: self.waiting.len() as u32,
            in_flight: self.in_flight as u32,
        }
    }

    /// A due request: on an idle connection now, else waiting (opening
    /// connections as core's growth rule allows), or dropped above
    /// `max_in_flight` ([`Pool::admit`]).
    fn dispatch(&mut self, job: Job) -> io::Result<()> {
        let measured = self
            .ledger
            .scheduled(&mut self.out.tally(), job.intended_ns);
        if self.idle.is_empty() {
            // Every connection is busy: the oldest request in flight tells
            // a lower bound of the service time (a stalled server).
            let oldest = self
                .conns
                .iter()
                .filter(|c| c.state == State::Busy)
                .map(|c| c.sent_ns)
                .min();
            if let Some(sent) = oldest {
                let now = self.clock.now_ns();
                self.pool.observe_in_flight(now, now.saturating_sub(sent));
            }
        }
        match self.pool.admit(self.pool_state()) {
            Admit::Drop => {
                self.ledger.dropped(&mut self.out.tally(), job.intended_ns);
                Ok(())
            }
            Admit::Send => {
                self.in_flight += 1;
                self.stats.sent += 1;
                let slot = self.idle.pop().expect("admitted on an idle connection");
                self.start(slot, job)
            }
            Admit::Wait { open, full } => {
                self.in_flight += 1;
                self.stats.sent += 1;
                let job = Job {
                    waited_since: Some(self.clock.now_ns()),
                    ..job
                };
                self.waiting.push_back(job);
                if measured {
                    self.out.waited_for_connection += 1;
                    self.ledger
                        .waited(&mut self.out.tally(), job.intended_ns, full);
                }
                self.open_more(open)
            }
        }
    }

    /// Starts core's count of connects when requests still wait
    /// ([`Pool::to_open`]): after a connect failed or a connection closed.
    fn grow(&mut self) -> io::Result<()> {
        let n = self.pool.to_open(self.pool_state());
        self.open_more(n)
    }

    /// Starts `n` connects on free slots (fewer when none is free).
    fn open_more(&mut self, n: u32) -> io::Result<()> {
        for _ in 0..n {
            match self.conns.iter().position(|c| c.state == State::Free) {
                Some(slot) => self.connect(slot)?,
                None => break,
            }
        }
        Ok(())
    }

    fn connect(&mut self, slot: usize) -> io::Result<()> {
        self.conns[slot].on_demand = false;
        match self.ring.connect(slot) {
            Ok(()) => {
                self.conns[slot].connect_at_ns = self.clock.now_ns();
                self.conns[slot].state = State::Connecting;
                self.conns[slot].unused = true;
                self.connecting += 1;
                Ok(())
            }
            // No socket (e.g. out of descriptors): as a refused connect.
            Err(_) => {
                self.conns[slot].state = State::Free;
                self.connect_failed(slot)
            }
        }
    }

    fn connect_failed(&mut self, slot: usize) -> io::Result<()> {
        let now = self.clock.now_ns();
        match self.model {
            Model::Closed { .. } => {
                let c = &mut self.conns[slot];
                c.retry_at_ns = Some(now + RETRY_NS);
                self.next_deadline_ns = self.next_deadline_ns.min(now + RETRY_NS);
                // The worker's next request finds no connection: never sent.
                self.ledger
                    .unsent(&mut self.out.tally(), now, now, Unsent::Connect);
            }
            Model::Open => {
                // The request that would have used this connection is never sent.
                if let Some(job) = self.waiting.pop_front() {
                    self.in_flight -= 1;
                    self.never_sent(job, now, Unsent::Connect);
                }
            }
        }
        Ok(())
    }

    /// Sends `job` on the idle connection `slot`.
    fn start(&mut self, slot: usize, job: Job) -> io::Result<()> {
        let now = self.clock.now_ns();
        if now >= self.hard_end_ns {
            // The run's hard end came first: never sent.
            self.in_flight -= 1;
            self.never_sent(job, now, Unsent::Timeout);
            self.idle.push(slot);
            return Ok(());
        }
        let deadline = now
            .saturating_add(self.plan.timeout_ns)
            .min(self.hard_end_ns);
        let c = &mut self.conns[slot];
        c.state = State::Busy;
        c.job = job;
        c.sent_ns = now;
        c.deadline_ns = deadline;
        c.sent_bytes = 0;
        c.sending = true;
        c.exchange
            .begin(job.intended_ns, now, self.plan.requests[job.request]);
        c.sends += 1;
        c.unused = false;
        self.next_deadline_ns = self.next_deadline_ns.min(deadline);
        // A retry was counted as sent the first time.
        if !job.retried
            && self
                .ledger
                .sent(&mut self.out.tally(), job.intended_ns, now)
        {
            self.pending.sent += 1;
            if let Some(since) = job.waited_since {
                self.ledger
                    .waited_for(&mut self.out.tally(), job.intended_ns, since, now);
            }
        }
        if self.conns[slot].tls.is_some() {
            self.tls_send(slot, job.request)?;
        } else {
            self.ring.send(slot, job.request, 0)?;
        }
        // An idle connection keeps a recv armed (to see a close or stray
        // bytes while idle): the response arrives through it.
        if self.ring.recv_pending(slot) {
            return Ok(());
        }
        self.process(slot)
    }

    /// A due request that cannot go out at `at_ns` (core's
    /// [`Ledger::not_sent`]).
    fn never_sent(&mut self, job: Job, at_ns: u64, reason: Unsent) {
        let ok = self.ledger.not_sent(
            &mut self.out.tally(),
            job.intended_ns,
            at_ns,
            reason,
            job.retried,
        );
        self.pending.count(ok);
    }

    /// Closed model: the worker on `slot` sends its next request now.
    fn closed_send(&mut self, slot: usize) {
        let c = &self.conns[slot];
        let i = c.worker + c.sends * self.workers_total.max(1);
        let request = self.plan.request_index(i);
        let now = self.clock.now_ns();
        self.in_flight += 1;
        self.stats.sent += 1;
        let _ = self.start(
            slot,
            Job {
                request,
                intended_ns: now,
                retried: false,
                waited_since: None,
            },
        );
    }

    /// Feeds the buffered bytes of `slot` to its exchange; on "need more",
    /// starts the next recv.
    fn process(&mut self, slot: usize) -> io::Result<()> {
        let now = self.clock.now_ns();
        let c = &mut self.conns[slot];
        let buf = if c.tls.is_some() {
            &mut self.plain[slot * READ_BUF_BYTES..(slot + 1) * READ_BUF_BYTES]
        } else {
            self.ring.buf(slot)
        };
        let gaps = &mut self.gaps[slot * GAP_CAP..(slot + 1) * GAP_CAP];
        match c.exchange.handle_read(now, &buf[c.start..c.end], gaps) {
            Err(failure) => return self.fail(slot, failure),
            Ok(Feed::Complete {
                consumed,
                keep_alive,
                unsolicited,
            }) => {
                c.start += consumed;
                if unsolicited {
                    self.ledger.unsolicited(&mut self.out.tally(), now);
                }
                return self.complete(slot, now, keep_alive);
            }
            Ok(Feed::NeedMore { consumed }) => c.start += consumed,
        }
        // Keep what was not consumed at the front of the buffer.
        if let Err(kind) = compact(buf, &mut c.start, &mut c.end) {
            return self.fault(slot, kind);
        }
        let end = c.end;
        self.arm_recv(slot, end)
    }

    /// The response on `slot` completed at `now`: record it and reuse or
    /// replace the connection.
    fn complete(&mut self, slot: usize, now: u64, keep_alive: bool) -> io::Result<()> {
        let c = &self.conns[slot];
        self.pool.observe(now, now.saturating_sub(c.sent_ns));
        let finish = c
            .exchange
            .finish(&self.gaps[slot * GAP_CAP..(slot + 1) * GAP_CAP]);
        let ok = self.ledger.finished(
            &mut self.out.tally(),
            c.job.intended_ns,
            c.sent_ns,
            now,
            finish,
        );
        self.pending.count(ok);
        self.in_flight -= 1;
        let c = &mut self.conns[slot];
        if !keep_alive {
            return self.close(slot);
        }
        // Watch the idle connection: a close, a half-close, a 408 or stray
        // bytes are seen at once, before the connection is reused.
        c.start = 0;
        c.end = 0;
        self.arm_recv(slot, 0)?;
        if self.conns[slot].sending {
            // The response completed while its request was still being
            // sent (an early response, the server not reading the rest):
            // stop sending. The send's completion decides: sent whole, the
            // connection is reused; cut short, it is closed (as on the std
            // engine, which stops a blocked send when the response is in).
            self.conns[slot].state = State::Settling;
            return self.ring.cancel_send(slot);
        }
        self.ready(slot)
    }

    /// A recv on the idle (or settling) connection `slot` completed with
    /// `res`: the server closed it, timed it out (`408`) or sent bytes no
    /// request asked for. The connection is replaced; no request is charged.
    fn idle_event(&mut self, slot: usize, res: i32) -> io::Result<()> {
        if res == -libc::EINTR || res == -libc::EAGAIN {
            return self.arm_recv(slot, 0);
        }
        let now = self.clock.now_ns();
        let idle = if res > 0 {
            let bytes = if self.conns[slot].tls.is_some() {
                &self.plain[slot * READ_BUF_BYTES..slot * READ_BUF_BYTES + res as usize]
            } else {
                &self.ring.buf(slot)[..res as usize]
            };
            Exchange::handle_idle(bytes)
        } else {
            Idle::Closed
        };
        match idle {
            Idle::Closed => self.ledger.idle_closed(&mut self.out.tally(), now),
            Idle::Unsolicited => self.ledger.unsolicited(&mut self.out.tally(), now),
        }
        // Closed (or written to) before its first use: replaced when a
        // request needs it, not at once.
        self.conns[slot].on_demand = self.conns[slot].unused;
        if self.conns[slot].state == State::Idle {
            self.idle.retain(|&s| s != slot);
        }
        self.close(slot)
    }

    /// `slot` is open and free: the next waiting request, the next closed-loop
    /// send, or the idle list.
    fn ready(&mut self, slot: usize) -> io::Result<()> {
        self.conns[slot].state = State::Idle;
        // Watch the idle connection, a fresh one too: a close, a half-close,
        // a 408 or stray bytes are seen at once, before its (first) use.
        // A request sent on it gets its response through this recv.
        if !self.ring.recv_pending(slot) {
            let c = &mut self.conns[slot];
            c.start = 0;
            c.end = 0;
            self.arm_recv(slot, 0)?;
        }
        match self.model {
            Model::Closed { .. } => {
                let now = self.clock.now_ns();
                if now < self.plan.end_ns() && !self.control.stopped() {
                    self.closed_send(slot);
                }
                Ok(())
            }
            Model::Open => match self.waiting.pop_front() {
                Some(job) => self.start(slot, job),
                None => {
                    self.idle.push(slot);
                    Ok(())
                }
            },
        }
    }

    /// The request on `slot` failed with `kind`: retry it on a fresh
    /// connection when core's rule allows it, else record it; close and
    /// replace the connection.
    fn fault(&mut self, slot: usize, kind: ErrorKind) -> io::Result<()> {
        let c = &self.conns[slot];
        if c.state == State::Busy
            && c.exchange
                .may_retry(kind, c.job.retried, self.plan.retry_non_idempotent)
        {
            let mut job = c.job;
            job.retried = true;
            self.ledger.retried(&mut self.out.tally(), job.intended_ns);
            match self.model {
                // Its clock still runs from its intended time.
                Model::Open => self.waiting.push_front(job),
                // The worker sends its next request on the fresh connection.
                Model::Closed { .. } => self.in_flight -= 1,
            }
            return self.close(slot);
        }
        self.fail(slot, Finish::Error(kind))
    }

    /// The request on `slot` failed as `failure`: record it, close and
    /// replace the connection.
    fn fail(&mut self, slot: usize, failure: Finish<'static>) -> io::Result<()> {
        if self.conns[slot].state == State::Busy {
            let now = self.clock.now_ns();
            let c = &self.conns[slot];
            self.pool.observe(now, now.saturating_sub(c.sent_ns));
            let ok = self.ledger.finished(
                &mut self.out.tally(),
                c.job.intended_ns,
                c.sent_ns,
                now,
                failure,
            );
            self.pending.count(ok);
            self.in_flight -= 1;
        }
        self.close(slot)
    }

    /// Closes `slot`'s connection; it is replaced once closed.
    fn close(&mut self, slot: usize) -> io::Result<()> {
        let c = &mut self.conns[slot];
        if matches!(c.state, State::Free | State::Closing | State::Connecting) {
            return Ok(());
        }
        if matches!(c.state, State::Handshaking | State::Fresh) {
            self.connecting -= 1;
        }
        if matches!(c.state, State::Idle | State::Busy | State::Settling) {
            self.open -= 1;
        }
        c.start = 0;
        c.end = 0;
        c.sending = false;
        c.exchange.reset_connection();
        c.tls = None;
        c.tx_off = 0;
        c.tx_end = 0;
        c.held = false;
        if self.ring.close(slot) {
            self.closed_now(slot)
        } else {
            self.conns[slot].state = State::Closing;
            Ok(())
        }
    }

    /// `slot` has no socket any more: reconnect while there is work for it.
    fn closed_now(&mut self, slot: usize) -> io::Result<()> {
        self.conns[slot].state = State::Free;
        let wanted = match self.model {
            // A retry already planned (a failed handshake) waits its turn.
            Model::Closed { .. } => {
                self.clock.now_ns() < self.plan.end_ns()
                    && !self.control.stopped()
                    && self.conns[slot].retry_at_ns.is_none()
            }
            Model::Open => {
                !self.waiting.is_empty() || (self.scheduling && !self.conns[slot].on_demand)
            }
        };
        if wanted && self.clock.now_ns() < self.hard_end_ns {
            self.connect(slot)?;
        }
        Ok(())
    }

    fn on_completion(&mut self, c: Completion) -> io::Result<()> {
        // TLS: ciphertext becomes plaintext (or nothing) before the
        // handlers below, which see what plain HTTP would have given.
        let c = match c {
            Completion::Recv { slot, res } if self.conns[slot].tls.is_some() => {
                match self.tls_recv(slot, res)? {
                    Some(res) => Completion::Recv { slot, res },
                    None => return Ok(()),
                }
            }
            Completion::Send { slot, res } if self.conns[slot].tls.is_some() => {
                match self.tls_sent(slot, res)? {
                    Some(res) => Completion::Send { slot, res },
                    None => return Ok(()),
                }
            }
            other => other,
        };
        match c {
            Completion::Timer => {
                // A timer that ended the wait tells how late the ring's
                // timers wake: the adaptive spin slice follows it.
                let due = self.timer_due_ns.take();
                if let (Some(woke), Some(due)) = (self.woke_ns, due) {
                    if woke >= due {
                        self.tuner.observe(woke - due);
                    }
                }
                Ok(())
            }
            Completion::Closed { slot } => self.closed_now(slot),
            Completion::Connect { slot, res } => {
                if res < 0 {
                    self.connecting -= 1;
                    self.ring.close(slot);
                    self.conns[slot].state = State::Free;
                    self.connect_failed(slot)?;
                    return self.grow();
                }
                let now = self.clock.now_ns();
                let connect_ns = now.saturating_sub(self.conns[slot].connect_at_ns);
                if let Some(tls) = &self.opts.tls {
                    // Still "connecting" until the handshake is done.
                    self.out.setup.connect.record(connect_ns);
                    return self.tls_start(slot, tls, now);
                }
                self.out.setup.opened(connect_ns, None, false);
                if self.model == Model::Open && self.plan.warm_up != WarmUp::Off {
                    // Still "connecting" for the pool until it has settled.
                    let c = &mut self.conns[slot];
                    c.state = State::Fresh;
                    c.deadline_ns = now + FRESH_SETTLE_NS;
                    c.start = 0;
                    c.end = 0;
                    self.next_deadline_ns = self.next_deadline_ns.min(now + FRESH_SETTLE_NS);
                    return self.arm_recv(slot, 0);
                }
                self.settled(slot)
            }
            Completion::Send { slot, res } => {
                let len = self.plan.requests[self.conns[slot].job.request].len();
                let conn = &mut self.conns[slot];
                conn.sending = false;
                match conn.state {
                    // The connection failed under the send (the server
                    // closed or reset it): a response it sent first, such
                    // as an early error status before closing (RFC 9112
                    // section 9.5), still arrives through the armed recv,
                    // which then meets the close, as on the std engine.
                    State::Busy if res < 0 && self.ring.recv_pending(slot) => Ok(()),
                    State::Busy if res < 0 => self.fault(slot, errno_kind(-res)),
                    State::Busy => {
                        conn.sent_bytes += res as usize;
                        if conn.sent_bytes < len {
                            conn.sending = true;
                            let (request, off) = (conn.job.request, conn.sent_bytes);
                            self.ring.send(slot, request, off)?;
                        }
                        Ok(())
                    }
                    State::Settling if res < 0 || conn.sent_bytes + (res as usize) < len => {
                        self.close(slot)
                    }
                    State::Settling => self.ready(slot),
                    _ => Ok(()),
                }
            }
            Completion::Recv { slot, res } => {
                match self.conns[slot].state {
                    State::Busy => {}
                    State::Idle | State::Settling | State::Fresh => {
                        return self.idle_event(slot, res)
                    }
                    _ => return Ok(()),
                }
                if res > 0 {
                    self.conns[slot].end += res as usize;
                    return self.process(slot);
                }
                if res == -libc::EINTR || res == -libc::EAGAIN {
                    let end = self.conns[slot].end;
                    return self.arm_recv(slot, end);
                }
                if res < 0 {
                    let kind = self.conns[slot].exchange.handle_fault(errno_kind(-res));
                    return self.fault(slot, kind);
                }
                // End of file: a read-until-close body ends here; anything else was cut.
                let now = self.clock.now_ns();
                let gaps = &mut self.gaps[slot * GAP_CAP..(slot + 1) * GAP_CAP];
                match self.conns[slot].exchange.handle_eof(now, gaps) {
                    Ok(()) => self.complete(slot, now, false),
                    Err(kind) => self.fault(slot, kind),
                }
            }
        }
    }

    /// A fresh connection is usable: counted open, then ready.
    fn settled(&mut self, slot: usize) -> io::Result<()> {
        self.connecting -= 1;
        self.out.connections_opened += 1;
        self.open += 1;
        self.out.peak_connections = self.out.peak_connections.max(self.open);
        self.ready(slot)
    }

    /// Timeouts of requests past their deadline; settling sends past it;
    /// closed-model reconnects due. Recomputes the earliest deadline.
    fn scan(&mut self, now: u64) -> io::Result<()> {
        self.next_deadline_ns = u64::MAX;
        for slot in 0..self.conns.len() {
            let c = &self.conns[slot];
            match (c.state, c.retry_at_ns) {
                (State::Handshaking, _) if now >= c.deadline_ns => {
                    self.handshake_failed(slot, HandshakeFailure::Timeout)?
                }
                (State::Handshaking | State::Fresh, _) if now < c.deadline_ns => {
                    self.next_deadline_ns = self.next_deadline_ns.min(c.deadline_ns)
                }
                (State::Fresh, _) => self.settled(slot)?,
                (State::Busy, _) if now >= c.deadline_ns => self.fault(slot, ErrorKind::Timeout)?,
                (State::Busy, _) => {
                    self.next_deadline_ns = self.next_deadline_ns.min(c.deadline_ns)
                }
                // A response that completed while its request was still
                // being sent (an early response): the send has until the
                // request's deadline, else the connection is dropped
                // (charged to no request; the response was recorded).
                (State::Settling, _) if now >= c.deadline_ns => self.close(slot)?,
                (State::Settling, _) => {
                    self.next_deadline_ns = self.next_deadline_ns.min(c.deadline_ns)
                }
                (State::Free, Some(t)) if now >= t => {
                    self.conns[slot].retry_at_ns = None;
                    if now < self.plan.end_ns() && !self.control.stopped() {
                        self.connect(slot)?;
                    }
                }
                (State::Free, Some(t)) => self.next_deadline_ns = self.next_deadline_ns.min(t),
                _ => {}
            }
        }
        Ok(())
    }

    /// The hard end: requests in flight time out, waiting ones were never sent.
    fn expire_all(&mut self, now: u64) -> io::Result<()> {
        for slot in 0..self.conns.len() {
            if self.conns[slot].state == State::Busy {
                self.fault(slot, ErrorKind::Timeout)?;
            }
        }
        while let Some(job) = self.waiting.pop_front() {
            self.in_flight -= 1;
            self.never_sent(job, now, Unsent::Timeout);
        }
        Ok(())
    }

    /// Publishes progress in batches: counters, and the last complete interval's p99.
    fn publish(&mut self, now: u64, force: bool) {
        let p = &self.control.progress;
        let pending = std::mem::take(&mut self.pending);
        if force || pending.sent + pending.ok + pending.errors > 0 {
            p.sent.fetch_add(pending.sent, Ordering::Relaxed);
            p.ok.fetch_add(pending.ok, Ordering::Relaxed);
            p.errors.fetch_add(pending.errors, Ordering::Relaxed);
        }
        p.publish_interval(
            &self.ledger,
            &self.out.intervals,
            now,
            &mut self.published_interval,
        );
    }
}

/// The kind of an errno of an established connection (core's rule).
fn errno_kind(errno: i32) -> ErrorKind {
    ErrorKind::of_io(&io::Error::from_raw_os_error(errno))
}
