//! One engine thread's event loop: its ring, its connections, its share of
//! the schedule and its part of the output.
//!
//! One loop iteration: reap every completion without blocking (each is
//! stamped with the clock as it is handled), check deadlines when the
//! earliest one has passed (a linear scan of the connections, at most every
//! [`SCAN_NS`]), then ask core's due loop
//! ([`DueLoop`]) what to do: send every due request
//! in one batch and submit, busy-wait the last slice (leaving it as soon as
//! a completion is ready, core's [`spin_step`], so a response that arrives
//! during the spin is stamped when it arrives), or arm the ring's
//! timer and sleep in `submit_and_wait` until it fires or a completion
//! arrives. Sleeps end at the next send's spin slice, the earliest deadline,
//! or after [`IDLE_WAKE_NS`] (to notice the stop flag and publish progress).
//!
//! Protocol is core's: each connection's
//! [`Exchange`](metronome_core::exchange::Exchange) turns bytes and times
//! into a [`Finish`](metronome_core::exchange::Finish), and the [`Ledger`]
//! records it. This module moves bytes, reads the clock and sleeps.
//!
//! One `impl Worker` split by concept, as smoltcp splits its interface:
//!
//! - this file: the worker's state, its setup, the event loop and progress;
//! - `slot`: connection slots, opened, made ready, closed and replaced;
//! - `request`: admission of a due request, its send, its response and end;
//! - `completion`: the ring's completions and the deadlines;
//! - `tls`: rustls driven over the ring's buffers;
//! - `streams`: admission by free stream slot and the books of a
//!   stream's end, shared by `h2` and `h3`;
//! - `h2`: HTTP/2, many streams per connection slot;
//! - `h3`: HTTP/3, a QUIC connection per slot over a UDP socket;
//! - `share`: what the set-up hands each thread ([`Share`]) and gets back
//!   ([`ThreadOut`]).

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::Ordering;
use std::time::Instant;

use metronome_core::due::DueLoop;
use metronome_core::engine::{Control, RunOutput};
use metronome_core::exchange::{Exchange, GAP_CAP};
use metronome_core::ledger::Ledger;
use metronome_core::measure::ThreadStats;
use metronome_core::pace::{
    linger_ns, spin_step, Pace, SpinMeter, SpinStep, SpinTuner, REAP_GUARD_NS,
};
use metronome_core::plan::{Model, Plan, READ_BUF_BYTES};
use metronome_core::pool::{after_goaway, AfterGoaway, Pool, PoolOutcome};

use crate::clock::Clock;
use crate::ring::{Completion, Ring};
use crate::sys::thread_cpu_ns;
use crate::{Options, Phase};

use h2::H2State;
use h3::H3State;
use request::Job;
use slot::{Conn, State};

pub(crate) use h2::{Greeted, OUT_BYTES as H2_OUT_BYTES};
pub(crate) use h3::Opened as H3Opened;
pub(crate) use share::{Share, Stream, ThreadOut};

mod completion;
mod h2;
mod h3;
mod request;
mod share;
mod slot;
mod streams;
mod tls;

/// Deadline scan period and longest sleep.
const SCAN_NS: u64 = 1_000_000;
/// Longest sleep: the stop flag is noticed within this.
const IDLE_WAKE_NS: u64 = 10_000_000;
/// Progress publication period per thread.
const PUBLISH_NS: u64 = 50_000_000;
/// Completions handled per reap batch.
const REAP_BATCH: usize = 256;
/// Each TLS connection's send buffer (ciphertext): two full records.
const TX_BYTES: usize = 2 * (16 * 1024 + 256);

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

/// One engine thread: its ring (`R`: how its bytes move), its
/// connections, its part of the output.
pub(crate) struct Worker<'p, R> {
    plan: &'p Plan<'p>,
    control: &'p Control,
    opts: &'p Options,
    ledger: Ledger<'p>,
    clock: Clock,
    ring: R,
    conns: Vec<Conn>,
    /// HTTP/2 (`Plan::http2`): each slot's connection and streams.
    h2: Option<H2State>,
    /// HTTP/3 (`Wire::Http3`): each slot's QUIC connection.
    h3: Option<H3State>,
    gaps: Box<[u64]>,
    /// TLS: each connection's plaintext buffer (`READ_BUF_BYTES` a slot);
    /// the ring's read buffer then holds ciphertext. Empty for plain HTTP.
    plain: Box<[u8]>,
    idle: Vec<usize>,
    waiting: VecDeque<Job>,
    /// Core's due loop over this thread's shard of the schedule.
    due: DueLoop<'p>,
    /// Open loop, or closed with its workers and expected interval.
    model: Model,
    workers_total: u64,
    /// Core's admission and growth rules, with the service-time estimate.
    pool: Pool,
    in_flight: usize,
    open: u64,
    /// `open` as last added to `Progress::connections_open`.
    open_published: u64,
    connecting: u64,
    hard_end_ns: u64,
    /// The earliest deadline (request timeout or closed-model retry), or `u64::MAX`.
    next_deadline_ns: u64,
    /// False once the schedule is over or stopped.
    scheduling: bool,
    out: RunOutput,
    stats: ThreadStats,
    pending: Pending,
    published_interval: metronome_core::engine::Published,
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
    /// Connections the pool rules closed (idle too long, a refused probe's).
    pool_closed: u64,
    /// When the pacing thread's load was last given to the pool (clock ns).
    load_mark_ns: u64,
    /// What a connection does after the server's GOAWAY, as core decides
    /// it for this worker's slots ([`after_goaway`]: a spare ring slot per
    /// pool place, as HTTP/3 has, retires it at once).
    goaway: AfterGoaway,
}

impl<'p, R: Ring> Worker<'p, R> {
    /// Sets the thread up: everything it will use is allocated here,
    /// before the clock starts.
    pub(crate) fn new(
        plan: &'p Plan<'p>,
        control: &'p Control,
        opts: &'p Options,
        share: Share,
        warning: Option<String>,
    ) -> io::Result<Worker<'p, R>> {
        // The pool's connections at most; the ring's slots (HTTP/3: twice
        // as many, a spare for each connection a GOAWAY retires, draining).
        let slots = share.slots.max(1);
        let http3 = share.h3.is_some();
        let ring_slots = if http3 { 2 * slots } else { slots };
        let tls = opts.tls.is_some();
        let tls = tls && !http3;
        let http2 = plan.wire.streams().is_some() && !http3;
        let tx_len = match (http3, tls, http2) {
            (true, _, _) => h3::TX_BYTES,
            (false, true, _) => TX_BYTES,
            (false, false, true) => H2_OUT_BYTES,
            (false, false, false) => 0,
        };
        let mut ring = R::new(ring_slots, READ_BUF_BYTES, tx_len, plan.requests, plan.addr)?;
        let mut conns: Vec<Conn> = (0..ring_slots)
            .map(|i| Conn {
                state: State::Free,
                job: Job::default(),
                sent_ns: 0,
                deadline_ns: 0,
                sent_bytes: 0,
                sending: false,
                start: 0,
                end: 0,
                exchange: {
                    let mut exchange = Exchange::for_plan(plan);
                    if share.writes_first {
                        exchange.distrust_first_responses();
                    }
                    exchange
                },
                worker: share.worker_base + i as u64,
                sends: 0,
                retry_at_ns: None,
                unused: false,
                early: false,
                on_demand: false,
                tls: None,
                tx_off: 0,
                tx_end: 0,
                tx_busy: false,
                plain_at: 0,
                held: false,
                connect_at_ns: 0,
                shake_at_ns: 0,
                idle_since_ns: 0,
                retire: false,
                listed: false,
            })
            .collect();
        let pre = (share.streams.len() + share.quic.len()) as u64;
        let mut idle = Vec::with_capacity(ring_slots);
        let mut greeted = Vec::with_capacity(share.streams.len());
        for (i, ((s, session), greeting)) in share.streams.into_iter().enumerate() {
            ring.adopt(i, s);
            conns[i].tls = session;
            conns[i].state = State::Idle;
            conns[i].unused = true;
            // It waits idle for its first request: the server may close it
            // meanwhile (core's retry rule).
            conns[i].exchange.mark_idle();
            idle.push(i);
            greeted.push(greeting);
        }
        idle.reverse();
        // The plan was validated, and a thread's part of a valid shard is valid.
        let schedule = plan
            .schedule(share.shard)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let mut out = RunOutput::recording(plan, control);
        out.warnings.extend(warning);
        out.connections_opened = pre;
        out.peak_connections = pre;
        // This thread's share of the offered rate: its sub-shard's.
        let rate = plan.rate / f64::from(share.shard.count.max(1));
        let mut pool = Pool::new(rate, pre as u32, slots as u32, share.max_in_flight as u32);
        if plan.wire.streams().is_some() {
            pool = pool.multiplexed();
        }
        if let Some((median, fastest)) = share.warm_service_ns {
            pool.seed(median);
            pool.seed_base(fastest);
        }
        let workers_total = match plan.model {
            Model::Closed { workers, .. } => u64::from(workers),
            Model::Open => 0,
        };
        let h3 = H3State::new(plan, share.h3.as_ref(), ring_slots);
        let h2 = if h3.is_some() {
            None
        } else {
            H2State::new(plan, slots, share.max_in_flight)
        };
        let quic = share.quic;
        for (i, c) in conns.iter_mut().take(quic.len()).enumerate() {
            c.state = State::Idle;
            c.unused = true;
            idle.push(i);
        }
        if !quic.is_empty() {
            idle.reverse();
        }
        let mut worker = Worker {
            plan,
            control,
            opts,
            ledger: Ledger::new(plan),
            clock: Clock::at(Instant::now()),
            ring,
            conns,
            h2,
            h3,
            gaps: vec![0u64; ring_slots * GAP_CAP].into_boxed_slice(),
            plain: vec![0u8; if tls { slots * READ_BUF_BYTES } else { 0 }].into_boxed_slice(),
            idle,
            waiting: VecDeque::with_capacity(share.max_in_flight),
            due: DueLoop::new(
                schedule,
                share.thread as u64,
                share.threads as u64,
                plan.model == Model::Open,
            ),
            model: plan.model,
            workers_total,
            pool,
            in_flight: 0,
            open: pre,
            open_published: 0,
            connecting: 0,
            hard_end_ns: plan.hard_end_ns(),
            scheduling: true,
            next_deadline_ns: u64::MAX,
            out,
            stats: ThreadStats::default(),
            pending: Pending::default(),
            published_interval: control.progress.published(plan),
            tuner: plan.spin.tuner(),
            timer_due_ns: None,
            woke_ns: None,
            cpu_mark: (0, 0),
            last_send_ns: 0,
            rate,
            pool_closed: 0,
            load_mark_ns: 0,
            goaway: after_goaway(ring_slots > slots),
        };
        for (i, g) in greeted.into_iter().enumerate() {
            if let Some(g) = g {
                worker.h2_adopt(i, g);
            }
        }
        for (i, opened) in quic.into_iter().enumerate() {
            worker.h3_adopt(i, opened);
        }
        Ok(worker)
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
        if self.h3.is_some() {
            // Every connection closed (H3_NO_ERROR), as the std engine
            // does; a failure here loses nothing measured.
            let _ = self.h3_leave();
        }
        self.publish(self.clock.now_ns(), true);
        let stopped_at = result?;
        self.stats.cpu_ns = thread_cpu_ns().saturating_sub(cpu_start);
        self.out.threads.push(self.stats);
        self.out.cpu_ns = self.stats.cpu_ns;
        self.out.spin_ns = self.stats.spin_ns;
        self.out.dropped_gaps = self.conns.iter().map(|c| c.exchange.dropped_gaps()).sum();
        self.out.dropped_gaps += self.h2.as_ref().map_or(0, H2State::dropped_gaps);
        self.out.dropped_gaps += self.h3.as_ref().map_or(0, H3State::dropped_gaps);
        if let Some(w) = self.h2.as_ref().and_then(H2State::warning) {
            if !self.out.warnings.contains(&w) {
                self.out.warnings.push(w);
            }
        }
        self.out.pool = PoolOutcome::of(&self.pool, self.pool_closed);
        Ok(ThreadOut {
            out: self.out,
            stopped_at,
        })
    }

    /// The event loop; returns the stop time when stopped early.
    fn event_loop(&mut self) -> io::Result<Option<u64>> {
        let end_ns = self.plan.end_ns();
        let mut batch = [Completion::Timer; REAP_BATCH];
        let mut stopped_at = None;
        let mut next_scan = 0u64;
        let mut next_publish = PUBLISH_NS;
        // The pre-opened connections are watched while idle, as every
        // idle connection is (see `ready`).
        for slot in 0..self.conns.len() {
            if self.conns[slot].state == State::Idle && !self.ring.recv_pending(slot) {
                if self.h3.is_some() {
                    // The recv, then datagrams owed since the handshake.
                    self.ring.recv_dgram(slot)?;
                    self.h3_drive(slot)?;
                } else if self.h2.is_some() {
                    // Frames read after the server's SETTINGS, then the recv.
                    self.h2_process(slot)?;
                } else {
                    self.arm_recv(slot, 0)?;
                }
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
                    // With conversations, a turn in flight before the end
                    // may still bring a next one.
                    Model::Open => {
                        self.due.schedule_over()
                            && self.out.follow_ups.is_empty()
                            && !(self.plan.turns.is_on() && self.in_flight > 0 && now < end_ns)
                    }
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
                // The schedule's next request, or a conversation's next
                // turn, whichever is due first (core's due loop).
                let first_due = self.due.first_due(&self.out.follow_ups);
                match self
                    .due
                    .pace(now, &self.out.follow_ups, self.tuner.slice_ns())
                {
                    Pace::Send => {
                        // A backlog (after a stall of this thread) is sent
                        // or dropped at once, but a stop is seen.
                        self.due.batch();
                        let control = self.control;
                        while let Some((intended_ns, request)) =
                            self.due
                                .next_due(self.plan, &mut self.out.follow_ups, now, || {
                                    control.stopped()
                                })
                        {
                            self.dispatch(Job {
                                request,
                                intended_ns,
                                retried: false,
                                waited_since: None,
                            })?;
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
                        let target = first_due.unwrap_or(now);
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
                    // Nothing due yet, but a turn in flight may bring a
                    // next one: wait for completions.
                    Pace::Done if self.plan.turns.is_on() => {}
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
            } else if self.timer_due_ns.is_some_and(|due| due > now + after)
                && self.ring.timer_sooner(after)?
            {
                // The wake came sooner than the armed timer (a
                // conversation's next turn, due before the next send).
                self.timer_due_ns = Some(now + after);
            }
            self.ring.submit_and_wait()?;
            self.woke_ns = Some(self.clock.now_ns());
        }
        Ok(stopped_at)
    }

    /// Counts `received` bytes read and `sent` bytes written now, in the
    /// interval of the clock's reading (core's `Ledger::transferred`).
    pub(super) fn transferred(&mut self, received: usize, sent: usize) {
        let now = self.clock.now_ns();
        self.ledger
            .transferred(&mut self.out.tally(), now, received as u64, sent as u64);
    }

    /// Charges the CPU (and spin) used since the last sample to the
    /// interval of `now`: the per-interval series then tells a saturated
    /// generator from a descheduled one.
    fn sample_cpu(&mut self, now: u64) {
        let cpu = thread_cpu_ns();
        let (cpu_then, spin_then) = self.cpu_mark;
        let (busy, spin) = (
            cpu.saturating_sub(cpu_then),
            self.stats.spin_ns.saturating_sub(spin_then),
        );
        self.ledger.busy(&mut self.out.tally(), now, busy, spin);
        // The pool grows nothing while this thread is the bottleneck.
        self.pool.pacer_load(
            busy.saturating_sub(spin),
            now.saturating_sub(self.load_mark_ns),
        );
        self.load_mark_ns = now;
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

    /// Publishes progress in batches: counters, and the last complete interval's p99.
    fn publish(&mut self, now: u64, force: bool) {
        let p = &self.control.progress;
        let pending = std::mem::take(&mut self.pending);
        if force || pending.sent + pending.ok + pending.errors > 0 {
            p.sent.fetch_add(pending.sent, Ordering::Relaxed);
            p.ok.fetch_add(pending.ok, Ordering::Relaxed);
            p.errors.fetch_add(pending.errors, Ordering::Relaxed);
        }
        if self.open != self.open_published {
            // This worker's change since its last publish (the sum over
            // the workers is the count open; wrapping both ways).
            p.connections_open.fetch_add(
                self.open.wrapping_sub(self.open_published),
                Ordering::Relaxed,
            );
            self.open_published = self.open;
        }
        p.publish_interval(
            &self.ledger,
            &self.out.intervals,
            self.out.recorded(),
            now,
            &mut self.published_interval,
        );
    }
}
