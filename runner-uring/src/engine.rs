//! The engine: threads, their share of the plan, and each thread's event loop.
//!
//! One loop iteration: reap every completion without blocking (each is
//! stamped with the clock as it is handled), check deadlines when the
//! earliest one has passed (a linear scan of the connections, at most every
//! [`SCAN_NS`]), then ask core's [`pace`] what to do: send every due request
//! in one batch and submit, busy-wait the last slice, or arm the ring's
//! timer and sleep in `submit_and_wait` until it fires or a completion
//! arrives. Sleeps end at the next send's spin slice, the earliest deadline,
//! or after [`IDLE_WAKE_NS`] (to notice the stop flag and publish progress).

use std::collections::VecDeque;
use std::io;
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use metronome_core::measure::{ErrorKind, StreamTiming};
use metronome_core::plan::{pace, Model, Pace, Plan, Protocol};
use metronome_core::response::{ReadEvent, Reader};
use metronome_core::schedule::{Schedule, Shard};
use metronome_std::{
    thread_cpu_ns, validate, Clock, Control, EngineError, Finish, Ledger, RunOutput, ThreadStats,
};

use crate::ring::{allowed_cpus, pin_to_cpu, Completion, Ring};
use crate::{Phase, UringOptions};

/// A connection's read buffer: a response head must fit in it.
pub(crate) const READ_BUF: usize = 64 * 1024;
/// Inter-token gaps kept per stream request; more are counted and dropped.
const GAP_CAP: usize = 4096;
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
/// Engine thread stack (the recorder is large and built on the thread).
const STACK: usize = 16 << 20;

/// A request's place in the schedule and its clock.
#[derive(Clone, Copy, Debug, Default)]
struct Job {
    /// Index into the plan's request list.
    request: usize,
    intended_ns: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// No socket.
    Free,
    /// An asynchronous connect is in flight.
    Connecting,
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
    reader: Reader,
    status: Option<u16>,
    stream_error: bool,
    timing: StreamTiming,
    gaps: usize,
    /// Closed model: the global worker index, and the next try of a refused connect.
    worker: u64,
    sends: u64,
    retry_at_ns: Option<u64>,
}

/// One thread's share of the plan.
struct Share {
    thread: usize,
    cpu: Option<usize>,
    shard: Shard,
    threads: usize,
    streams: Vec<TcpStream>,
    slots: usize,
    max_in_flight: usize,
    /// Closed model: the first global worker index of this thread.
    worker_base: u64,
}

/// What a thread returns.
struct ThreadOut {
    out: RunOutput,
    opened: u64,
    peak: u64,
    waited: u64,
    gap_overflow: u64,
    stopped_at: Option<u64>,
}

/// Splits `total` over `n` parts: part `i` gets `total / n` plus one of the remainder.
fn split(total: u64, n: usize, i: usize) -> u64 {
    let n = n as u64;
    total / n + u64::from((i as u64) < total % n)
}

pub(crate) fn run(
    plan: &Plan<'_>,
    control: &Control,
    opts: &UringOptions,
) -> Result<RunOutput, EngineError> {
    validate(plan)?;
    let workers = match plan.model {
        Model::Closed { workers: 0, .. } => {
            return Err(EngineError::Plan("--closed needs at least 1 worker"))
        }
        Model::Closed { workers, .. } => Some(workers),
        Model::Open => None,
    };
    if plan.shard.count == 0 || plan.shard.index >= plan.shard.count {
        return Err(EngineError::Plan(
            "the shard index must be below the shard count",
        ));
    }
    let cpus = match &opts.cpus {
        Some(c) if c.is_empty() => return Err(EngineError::Plan("--cpus lists no CPU")),
        Some(c) => c.clone(),
        None => allowed_cpus(),
    };
    let mut threads = match opts.threads {
        Some(0) => return Err(EngineError::Plan("--threads must be at least 1")),
        Some(t) => t as usize,
        None => cpus.len().max(1),
    };
    let connect_timeout = Duration::from_nanos(plan.timeout_ns.clamp(1_000_000, 5_000_000_000));

    // Pre-open the connections before the clock starts.
    let wanted = workers.unwrap_or(plan.connections) as usize;
    let mut streams = Vec::with_capacity(wanted);
    let mut warnings = Vec::new();
    for _ in 0..wanted {
        match TcpStream::connect_timeout(&plan.addr, connect_timeout)
            .and_then(|s| s.set_nodelay(true).map(|()| s))
        {
            Ok(s) => streams.push(s),
            Err(e) if streams.is_empty() || workers.is_some() => {
                return Err(EngineError::Connect(e))
            }
            Err(e) => {
                warnings.push(format!(
                    "only {} of {} connections could be pre-opened: {e}",
                    streams.len(),
                    plan.connections
                ));
                break;
            }
        }
    }
    threads = threads.min(streams.len()).max(1);
    if workers.is_none() {
        threads = threads.min(plan.max_in_flight as usize);
    }

    // Each thread's share.
    let (k, n) = (plan.shard.index, plan.shard.count);
    let mut shares: Vec<Share> = (0..threads)
        .map(|t| Share {
            thread: t,
            cpu: (!cpus.is_empty()).then(|| cpus[t % cpus.len()]),
            shard: Shard {
                index: k + n * t as u32,
                count: n * threads as u32,
            },
            threads,
            streams: Vec::new(),
            slots: 0,
            max_in_flight: split(u64::from(plan.max_in_flight), threads, t).max(1) as usize,
            worker_base: 0,
        })
        .collect();
    for (i, s) in streams.into_iter().enumerate() {
        shares[i % threads].streams.push(s);
    }
    let mut base = 0u64;
    for (t, share) in shares.iter_mut().enumerate() {
        let pre = share.streams.len();
        share.slots = match workers {
            Some(_) => pre,
            None => (split(u64::from(plan.max_connections), threads, t) as usize).max(pre),
        };
        share.worker_base = base;
        base += pre as u64;
    }

    let gate = Gate::default();
    let results: Vec<io::Result<ThreadOut>> = std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(threads);
        let mut spawn_error = None;
        for share in shares {
            let gate = &gate;
            let h = std::thread::Builder::new()
                .name(format!("metronome-uring-{}", share.thread))
                .stack_size(STACK)
                .spawn_scoped(s, move || thread_main(plan, control, opts, share, gate));
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    spawn_error = Some(e);
                    break;
                }
            }
        }
        // Every thread has allocated everything: the clock starts now (or never).
        let abort = spawn_error.is_some();
        gate.open(handles.len(), abort);
        let mut results: Vec<io::Result<ThreadOut>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("an engine thread panicked")))
            })
            .collect();
        if let Some(e) = spawn_error {
            results.push(Err(e));
        }
        results
    });

    let mut out = RunOutput::empty(plan);
    let (mut opened, mut peak, mut waited, mut overflow) = (0, 0, 0, 0);
    let mut stopped_at: Option<u64> = None;
    for r in results {
        let t = r.map_err(|e| EngineError::Io("io_uring engine thread", e))?;
        out.merge(&t.out);
        opened += t.opened;
        peak += t.peak;
        waited += t.waited;
        overflow += t.gap_overflow;
        if let Some(at) = t.stopped_at {
            stopped_at = Some(stopped_at.map_or(at, |s| s.min(at)));
        }
    }
    if workers.is_some() {
        // In a closed loop a request is "scheduled" when a worker sends it.
        out.recorder.scheduled = out.recorder.sent;
    }
    out.connections_opened = opened;
    out.peak_connections = peak;
    out.waited_for_connection = waited;
    out.stopped = stopped_at.is_some();
    out.measured_ns = match stopped_at {
        Some(at) => at.saturating_sub(plan.warmup_ns).min(plan.duration_ns),
        None => plan.duration_ns,
    };
    if overflow > 0 {
        warnings.push(format!(
            "{overflow} inter-token gaps beyond {GAP_CAP} per request were not recorded in the ITL histogram"
        ));
    }
    out.warnings.extend(warnings);
    Ok(out)
}

/// The start line: threads report ready (or failed); the caller starts the
/// clock once all are ready, or aborts the run.
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Default)]
struct GateState {
    arrived: usize,
    failed: bool,
    /// `Some(Some(origin))`: go; `Some(None)`: abort.
    go: Option<Option<Instant>>,
}

impl Gate {
    /// A thread is set up (`ok`) or failed; waits for the start. Returns
    /// the clock origin, or `None` when the run is aborted.
    fn arrive(&self, ok: bool) -> Option<Instant> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.arrived += 1;
        st.failed |= !ok;
        self.changed.notify_all();
        loop {
            if let Some(go) = st.go {
                return go;
            }
            st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Waits until `threads` have arrived, then starts the clock (or aborts).
    fn open(&self, threads: usize, abort: bool) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while st.arrived < threads {
            st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.go = Some((!abort && !st.failed).then(Instant::now));
        self.changed.notify_all();
    }
}

fn thread_main(
    plan: &Plan<'_>,
    control: &Control,
    opts: &UringOptions,
    share: Share,
    gate: &Gate,
) -> io::Result<ThreadOut> {
    // Everything is allocated here, before the clock starts.
    let mut warning = None;
    if let Some(cpu) = share.cpu {
        if let Err(e) = pin_to_cpu(cpu) {
            warning = Some(format!(
                "thread {} not pinned to CPU {cpu}: {e}",
                share.thread
            ));
        }
    }
    let setup = Worker::new(plan, control, opts, share, warning);
    let origin = gate.arrive(setup.is_ok());
    let mut worker = setup?;
    let origin = origin.ok_or_else(|| io::Error::other("another engine thread failed to start"))?;
    worker.clock = Clock::at(origin);
    worker.run()
}

/// One engine thread: its ring, its connections, its part of the output.
struct Worker<'p> {
    plan: &'p Plan<'p>,
    control: &'p Control,
    opts: &'p UringOptions,
    ledger: Ledger<'p>,
    clock: Clock,
    ring: Ring,
    conns: Vec<Conn>,
    gaps: Box<[u64]>,
    idle: Vec<usize>,
    waiting: VecDeque<Job>,
    schedule: Schedule,
    /// This thread's index and the thread count (for request indices).
    thread: u64,
    threads: u64,
    closed: Option<Option<u64>>,
    workers_total: u64,
    max_in_flight: usize,
    in_flight: usize,
    open: u64,
    connecting: u64,
    opened: u64,
    peak: u64,
    waited: u64,
    gap_overflow: u64,
    hard_end_ns: u64,
    /// The earliest deadline (request timeout or closed-model retry), or `u64::MAX`.
    next_deadline_ns: u64,
    /// False once the schedule is over or stopped.
    scheduling: bool,
    out: RunOutput,
    stats: ThreadStats,
    progress: [u64; 3],
    published_interval: Option<usize>,
}

impl<'p> Worker<'p> {
    fn new(
        plan: &'p Plan<'p>,
        control: &'p Control,
        opts: &'p UringOptions,
        share: Share,
        warning: Option<String>,
    ) -> io::Result<Worker<'p>> {
        let slots = share.slots.max(1);
        let mut ring = Ring::new(slots, READ_BUF, plan.requests, plan.addr)?;
        let expect_stream = plan.protocol == Protocol::OpenAiSse;
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
                reader: Reader::new(expect_stream),
                status: None,
                stream_error: false,
                timing: StreamTiming::new(0, 0),
                gaps: 0,
                worker: share.worker_base + i as u64,
                sends: 0,
                retry_at_ns: None,
            })
            .collect();
        let pre = share.streams.len() as u64;
        let mut idle = Vec::with_capacity(slots);
        for (i, s) in share.streams.into_iter().enumerate() {
            ring.adopt(i, s);
            conns[i].state = State::Idle;
            idle.push(i);
        }
        idle.reverse();
        let schedule = Schedule::new(
            plan.arrival,
            plan.rate,
            plan.seed,
            plan.end_ns(),
            share.shard,
        )
        .map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "the arrival process is invalid",
            )
        })?;
        let mut out = RunOutput::empty(plan);
        out.warnings.extend(warning);
        let (closed, workers_total) = match plan.model {
            Model::Closed {
                workers,
                expected_interval_ns,
            } => (Some(expected_interval_ns), u64::from(workers)),
            Model::Open => (None, 0),
        };
        Ok(Worker {
            plan,
            control,
            opts,
            ledger: Ledger::new(plan),
            clock: Clock::start(),
            ring,
            conns,
            gaps: vec![0u64; slots * GAP_CAP].into_boxed_slice(),
            idle,
            waiting: VecDeque::with_capacity(share.max_in_flight),
            schedule,
            thread: share.thread as u64,
            threads: share.threads as u64,
            closed,
            workers_total,
            max_in_flight: share.max_in_flight,
            in_flight: 0,
            open: pre,
            connecting: 0,
            opened: pre,
            peak: pre,
            waited: 0,
            gap_overflow: 0,
            hard_end_ns: plan.end_ns().saturating_add(plan.timeout_ns),
            scheduling: true,
            next_deadline_ns: u64::MAX,
            out,
            stats: ThreadStats::default(),
            progress: [0; 3],
            published_interval: None,
        })
    }

    fn hook(&self, phase: Phase) {
        if let Some(h) = self.opts.phase_hook {
            h(phase);
        }
    }

    fn run(mut self) -> io::Result<ThreadOut> {
        let cpu_start = thread_cpu_ns();
        self.hook(Phase::Measuring);
        let result = self.event_loop();
        self.hook(Phase::Done);
        self.publish(self.clock.now_ns(), true);
        let stopped_at = result?;
        self.stats.cpu_ns = thread_cpu_ns().saturating_sub(cpu_start);
        self.out.threads.push(self.stats);
        self.out.cpu_ns = self.stats.cpu_ns;
        self.out.spin_ns = self.stats.spin_ns;
        Ok(ThreadOut {
            out: self.out,
            opened: self.opened,
            peak: self.peak,
            waited: self.waited,
            gap_overflow: self.gap_overflow,
            stopped_at,
        })
    }

    /// The event loop; returns the stop time when stopped early.
    fn event_loop(&mut self) -> io::Result<Option<u64>> {
        let spin_ns = self.plan.spin_ns;
        let end_ns = self.plan.end_ns();
        let mut batch = [Completion::Timer; REAP_BATCH];
        let mut next = if self.closed.is_some() {
            None
        } else {
            self.schedule.next()
        };
        let mut index = 0u64;
        let mut stopped_at = None;
        let mut next_scan = 0u64;
        let mut next_publish = PUBLISH_NS;
        if self.closed.is_some() {
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
            let now = self.clock.now_ns();
            // 2. Deadlines, retries and progress, about every millisecond.
            if now >= next_scan && now >= self.next_deadline_ns {
                self.scan(now)?;
                next_scan = now + SCAN_NS;
            }
            if now >= next_publish {
                self.publish(now, false);
                next_publish = now + PUBLISH_NS;
            }
            // 3. The end of scheduling: the schedule, the stop flag, or (closed) the end time.
            if self.scheduling {
                let stop = self.control.stopped();
                let over = match self.closed {
                    Some(_) => now >= end_ns,
                    None => next.is_none(),
                };
                if stop || over {
                    self.scheduling = false;
                    if stop {
                        stopped_at = Some(now);
                        let grace = self.plan.timeout_ns.min(1_000_000_000);
                        self.hard_end_ns = self.hard_end_ns.min(now.saturating_add(grace));
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
            if self.scheduling && self.closed.is_none() {
                match pace(now, next, spin_ns) {
                    Pace::Send => {
                        while let Some(t) = next.filter(|&t| t <= now) {
                            let request = (self.thread + index * self.threads)
                                % self.plan.requests.len() as u64;
                            self.dispatch(Job {
                                request: request as usize,
                                intended_ns: t,
                            })?;
                            index += 1;
                            next = self.schedule.next();
                        }
                        self.ring.submit()?;
                        continue;
                    }
                    Pace::Spin => {
                        let (_, spun) = self.clock.spin_until(next.unwrap_or(now));
                        self.stats.spin_ns += spun;
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
            if self.scheduling && self.closed.is_some() {
                wake = wake.min(end_ns);
            }
            self.ring.timer(wake.saturating_sub(now).max(1))?;
            self.ring.submit_and_wait()?;
        }
        Ok(stopped_at)
    }

    /// A due request: on an idle connection now, else waiting (opening one
    /// more connection when allowed), or dropped above `max_in_flight`.
    fn dispatch(&mut self, job: Job) -> io::Result<()> {
        let measured = self.plan.is_measured(job.intended_ns);
        if measured {
            self.out.recorder.record_scheduled();
        }
        if self.in_flight >= self.max_in_flight {
            if measured {
                self.out.recorder.record_dropped();
            }
            return Ok(());
        }
        self.in_flight += 1;
        self.stats.sent += 1;
        match self.idle.pop() {
            Some(slot) => self.start(slot, job),
            None => {
                self.waiting.push_back(job);
                if measured {
                    self.waited += 1;
                }
                self.grow()
            }
        }
    }

    /// Opens one more connection when requests wait and the limit allows.
    fn grow(&mut self) -> io::Result<()> {
        if self.waiting.len() as u64 <= self.connecting {
            return Ok(());
        }
        if self.open + self.connecting >= self.conns.len() as u64 {
            return Ok(());
        }
        if let Some(slot) = self.conns.iter().position(|c| c.state == State::Free) {
            self.connect(slot)?;
        }
        Ok(())
    }

    fn connect(&mut self, slot: usize) -> io::Result<()> {
        match self.ring.connect(slot) {
            Ok(()) => {
                self.conns[slot].state = State::Connecting;
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
        match self.closed {
            Some(ei) => {
                let c = &mut self.conns[slot];
                c.retry_at_ns = Some(now + RETRY_NS);
                self.next_deadline_ns = self.next_deadline_ns.min(now + RETRY_NS);
                if self.plan.is_measured(now) {
                    let ok = self.ledger.closed_done(
                        &mut self.out,
                        now,
                        now,
                        Finish::Error(ErrorKind::Connect),
                        ei,
                    );
                    self.count(ok);
                }
            }
            None => {
                // The request that would have used this connection fails.
                if let Some(job) = self.waiting.pop_front() {
                    self.in_flight -= 1;
                    let ok = self.ledger.done(
                        &mut self.out,
                        job.intended_ns,
                        now,
                        now,
                        Finish::Error(ErrorKind::Connect),
                    );
                    self.count(ok);
                }
            }
        }
        Ok(())
    }

    /// Sends `job` on the idle connection `slot`.
    fn start(&mut self, slot: usize, job: Job) -> io::Result<()> {
        let now = self.clock.now_ns();
        if now >= self.hard_end_ns {
            // The run's hard end came first: never sent, a timeout.
            self.in_flight -= 1;
            if self.ledger.unsent(&mut self.out, job.intended_ns, now) {
                self.progress[2] += 1;
            }
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
        c.status = None;
        c.stream_error = false;
        c.timing = StreamTiming::new(job.intended_ns, now);
        c.gaps = 0;
        c.sends += 1;
        self.next_deadline_ns = self.next_deadline_ns.min(deadline);
        if self.ledger.sent(&mut self.out, job.intended_ns, now) {
            self.progress[0] += 1;
        }
        self.ring.send(slot, job.request, 0)?;
        self.process(slot)
    }

    /// Closed model: the worker on `slot` sends its next request now.
    fn closed_send(&mut self, slot: usize) {
        let c = &self.conns[slot];
        let i = c.worker + c.sends * self.workers_total.max(1);
        let request = (i % self.plan.requests.len() as u64) as usize;
        let now = self.clock.now_ns();
        self.in_flight += 1;
        self.stats.sent += 1;
        let _ = self.start(
            slot,
            Job {
                request,
                intended_ns: now,
            },
        );
    }

    /// Feeds the buffered bytes of `slot` to its reader; on "need more",
    /// starts the next recv.
    fn process(&mut self, slot: usize) -> io::Result<()> {
        let expect_stream = self.plan.protocol == Protocol::OpenAiSse;
        loop {
            let c = &mut self.conns[slot];
            let buf = self.ring.buf(slot);
            let (used, event) = match c.reader.feed(&buf[c.start..c.end]) {
                Ok(r) => r,
                Err(_) => return self.fault(slot, ErrorKind::Malformed),
            };
            c.start += used;
            match event {
                None if used == 0 => break,
                None => {}
                Some(ev) => {
                    if let Some(keep_alive) = self.on_event(slot, ev) {
                        return self.complete(slot, keep_alive, expect_stream);
                    }
                }
            }
        }
        // Keep what was not consumed at the front of the buffer.
        let c = &mut self.conns[slot];
        if c.start > 0 {
            let buf = self.ring.buf(slot);
            buf.copy_within(c.start..c.end, 0);
            c.end -= c.start;
            c.start = 0;
        }
        if c.end == READ_BUF {
            return self.fault(slot, ErrorKind::Malformed);
        }
        let end = c.end;
        self.ring.recv(slot, end)
    }

    /// Applies one reader event; returns `Some(keep_alive)` when the response is complete.
    fn on_event(&mut self, slot: usize, ev: ReadEvent) -> Option<bool> {
        let c = &mut self.conns[slot];
        match ev {
            ReadEvent::Head { status } => c.status = Some(status),
            ReadEvent::Content => {
                if let Some(gap) = c.timing.on_content(self.clock.now_ns()) {
                    if c.gaps < GAP_CAP {
                        self.gaps[slot * GAP_CAP + c.gaps] = gap;
                        c.gaps += 1;
                    } else {
                        self.gap_overflow += 1;
                    }
                }
            }
            ReadEvent::Usage(n) => c.timing.on_usage(n),
            ReadEvent::StreamError => c.stream_error = true,
            ReadEvent::Done => c.timing.on_done(self.clock.now_ns()),
            ReadEvent::Complete { keep_alive, .. } => return Some(keep_alive),
        }
        None
    }

    /// The response on `slot` is complete: record it and reuse or replace the connection.
    fn complete(&mut self, slot: usize, keep_alive: bool, expect_stream: bool) -> io::Result<()> {
        let now = self.clock.now_ns();
        let c = &self.conns[slot];
        let finish = Finish::for_response(c.status, c.stream_error, expect_stream).unwrap_or(
            Finish::Stream {
                timing: &c.timing,
                gaps: &self.gaps[slot * GAP_CAP..slot * GAP_CAP + c.gaps],
            },
        );
        let ok = record(self.ledger, &mut self.out, self.closed, c, now, finish);
        self.count(ok);
        self.in_flight -= 1;
        let c = &mut self.conns[slot];
        c.reader.reset();
        if !keep_alive {
            return self.close(slot);
        }
        if c.sending {
            c.state = State::Settling;
            return Ok(());
        }
        self.ready(slot)
    }

    fn count(&mut self, ok: Option<bool>) {
        match ok {
            Some(true) => self.progress[1] += 1,
            Some(false) => self.progress[2] += 1,
            None => {}
        }
    }

    /// `slot` is open and free: the next waiting request, the next closed-loop
    /// send, or the idle list.
    fn ready(&mut self, slot: usize) -> io::Result<()> {
        self.conns[slot].state = State::Idle;
        match self.closed {
            Some(_) => {
                let now = self.clock.now_ns();
                if now < self.plan.end_ns() && !self.control.stopped() {
                    self.closed_send(slot);
                }
                Ok(())
            }
            None => match self.waiting.pop_front() {
                Some(job) => self.start(slot, job),
                None => {
                    self.idle.push(slot);
                    Ok(())
                }
            },
        }
    }

    /// The request on `slot` failed with `kind`: record it, close and replace the connection.
    fn fault(&mut self, slot: usize, kind: ErrorKind) -> io::Result<()> {
        if self.conns[slot].state == State::Busy {
            let now = self.clock.now_ns();
            let c = &self.conns[slot];
            let ok = record(
                self.ledger,
                &mut self.out,
                self.closed,
                c,
                now,
                Finish::Error(kind),
            );
            self.count(ok);
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
        if matches!(c.state, State::Idle | State::Busy | State::Settling) {
            self.open -= 1;
        }
        c.start = 0;
        c.end = 0;
        c.sending = false;
        c.reader.reset();
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
        let wanted = match self.closed {
            Some(_) => self.clock.now_ns() < self.plan.end_ns() && !self.control.stopped(),
            None => !self.waiting.is_empty() || self.scheduling,
        };
        if wanted && self.clock.now_ns() < self.hard_end_ns {
            self.connect(slot)?;
        }
        Ok(())
    }

    fn on_completion(&mut self, c: Completion) -> io::Result<()> {
        match c {
            Completion::Timer => Ok(()),
            Completion::Closed { slot } => self.closed_now(slot),
            Completion::Connect { slot, res } => {
                self.connecting -= 1;
                if res < 0 {
                    self.ring.close(slot);
                    self.conns[slot].state = State::Free;
                    self.connect_failed(slot)?;
                    return self.grow();
                }
                self.opened += 1;
                self.open += 1;
                self.peak = self.peak.max(self.open);
                self.ready(slot)
            }
            Completion::Send { slot, res } => {
                let len = self.plan.requests[self.conns[slot].job.request].len();
                let conn = &mut self.conns[slot];
                conn.sending = false;
                match conn.state {
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
                if self.conns[slot].state != State::Busy {
                    return Ok(());
                }
                let expect_stream = self.plan.protocol == Protocol::OpenAiSse;
                if res > 0 {
                    self.conns[slot].end += res as usize;
                    return self.process(slot);
                }
                if res == -libc::EINTR || res == -libc::EAGAIN {
                    let end = self.conns[slot].end;
                    return self.ring.recv(slot, end);
                }
                let streaming = expect_stream && self.conns[slot].status.is_some();
                if res < 0 {
                    let kind = errno_kind(-res);
                    let kind = if kind == ErrorKind::Reset && streaming {
                        ErrorKind::StreamCut
                    } else {
                        kind
                    };
                    return self.fault(slot, kind);
                }
                // End of file: a read-until-close body ends here; anything else was cut.
                match self.conns[slot].reader.finish_eof() {
                    Ok(Some(ev)) => {
                        if let Some(keep_alive) = self.on_event(slot, ev) {
                            let _ = keep_alive;
                            return self.complete(slot, false, expect_stream);
                        }
                        self.fault(slot, ErrorKind::Reset)
                    }
                    Ok(None) | Err(_) => {
                        let kind = if streaming {
                            ErrorKind::StreamCut
                        } else {
                            ErrorKind::Reset
                        };
                        self.fault(slot, kind)
                    }
                }
            }
        }
    }

    /// Timeouts of requests past their deadline; closed-model reconnects due.
    /// Recomputes the earliest deadline.
    fn scan(&mut self, now: u64) -> io::Result<()> {
        self.next_deadline_ns = u64::MAX;
        for slot in 0..self.conns.len() {
            let c = &self.conns[slot];
            match (c.state, c.retry_at_ns) {
                (State::Busy, _) if now >= c.deadline_ns => self.fault(slot, ErrorKind::Timeout)?,
                (State::Busy, _) => {
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
            if self.ledger.unsent(&mut self.out, job.intended_ns, now) {
                self.progress[2] += 1;
            }
        }
        Ok(())
    }

    /// Publishes progress in batches: counters, and the last complete interval's p99.
    fn publish(&mut self, now: u64, force: bool) {
        let p = &self.control.progress;
        if force || self.progress.iter().any(|&v| v > 0) {
            let [sent, ok, errors] = std::mem::take(&mut self.progress);
            p.sent.fetch_add(sent, Ordering::Relaxed);
            p.ok.fetch_add(ok, Ordering::Relaxed);
            p.errors.fetch_add(errors, Ordering::Relaxed);
        }
        if let Some((last, p99, lag)) = self.ledger.last_complete(&self.out, now) {
            if self.published_interval != Some(last) {
                p.last_p99_ns.store(p99, Ordering::Relaxed);
                p.last_send_lag_p99_ns.store(lag, Ordering::Relaxed);
                self.published_interval = Some(last);
            }
        }
    }
}

/// Records the end of the request on connection `c` (open or closed model).
fn record(
    ledger: Ledger<'_>,
    out: &mut RunOutput,
    closed: Option<Option<u64>>,
    c: &Conn,
    now: u64,
    finish: Finish<'_>,
) -> Option<bool> {
    match closed {
        Some(ei) => ledger.closed_done(out, c.sent_ns, now, finish, ei),
        None => ledger.done(out, c.job.intended_ns, c.sent_ns, now, finish),
    }
}

/// Classifies an errno of an established connection, as the std engine does.
fn errno_kind(errno: i32) -> ErrorKind {
    match errno {
        libc::EAGAIN | libc::ETIMEDOUT => ErrorKind::Timeout,
        libc::ECONNREFUSED => ErrorKind::Connect,
        _ => ErrorKind::Reset,
    }
}
