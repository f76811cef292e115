//! The paced floors (`--rate`): naive and best.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, squeue, types, IoUring, SubmissionQueue};

use crate::args::{Options, Paced, TaskRun};
use crate::bufring::{BufRing, BGID, PROVIDED_BUF};
use crate::conn::{connect_all, now_ns, parse_response, rusage, Conn, Parsed, RECV_BUF, TAG_SEND};
use crate::lag::LagHistogram;
use crate::output::{Outcome, PacedOutcome};

/// `user_data` bit that marks a timeout SQE (naive pacing).
pub(crate) const TAG_TIMEOUT: u64 = 1 << 33;

/// Longest gap between two clock reads of a busy-wait still counted as
/// spinning (core's `SPIN_GAP_NS`): longer, the thread was not running.
pub(crate) const SPIN_GAP_NS: u64 = 2_000;

/// The constant-rate schedule: request i is due at `start + i / rate`.
pub(crate) struct Schedule {
    pub(crate) start: u64,
    pub(crate) deadline: u64,
    pub(crate) period_ns: f64,
    /// Requests due so far: every one intended at or before the time last
    /// passed to `advance`.
    pub(crate) due: u64,
    /// Intended time of request `due`, `u64::MAX` once that falls at or
    /// after the deadline (no more requests).
    pub(crate) next_at: u64,
}

impl Schedule {
    pub(crate) fn new(start: u64, deadline: u64, rate: f64) -> Self {
        Self {
            start,
            deadline,
            period_ns: 1e9 / rate,
            due: 0,
            next_at: start,
        }
    }

    /// Intended send time of request `i`.
    pub(crate) fn at(&self, i: u64) -> u64 {
        self.start + (i as f64 * self.period_ns) as u64
    }

    pub(crate) fn advance(&mut self, now: u64) {
        while self.next_at <= now {
            self.due += 1;
            let next = self.at(self.due);
            self.next_at = if next < self.deadline { next } else { u64::MAX };
        }
    }
}

/// Builds the paced ring with the strongest task-run setup the kernel
/// accepts, at most `want`. Declined setups are noted on stderr.
pub(crate) fn build_paced_ring(
    want: TaskRun,
    entries: u32,
) -> Result<(IoUring, TaskRun, &'static str), String> {
    let setups: [(TaskRun, &'static str); 4] = [
        (
            TaskRun::Defer,
            "SINGLE_ISSUER|DEFER_TASKRUN|TASKRUN_FLAG|NO_SQARRAY",
        ),
        (TaskRun::Defer, "SINGLE_ISSUER|DEFER_TASKRUN|TASKRUN_FLAG"),
        (TaskRun::Coop, "COOP_TASKRUN|TASKRUN_FLAG"),
        (TaskRun::Plain, "plain"),
    ];
    let mut declined: Option<(&str, io::Error)> = None;
    for (number, (level, name)) in setups.into_iter().enumerate() {
        if level > want {
            continue;
        }
        let mut builder = IoUring::builder();
        match number {
            0 => {
                builder
                    .setup_single_issuer()
                    .setup_defer_taskrun()
                    .setup_taskrun_flag()
                    .setup_no_sqarray();
            }
            1 => {
                builder
                    .setup_single_issuer()
                    .setup_defer_taskrun()
                    .setup_taskrun_flag();
            }
            2 => {
                builder.setup_coop_taskrun().setup_taskrun_flag();
            }
            _ => {}
        }
        if let Some((previous, err)) = declined.take() {
            eprintln!("floor: the kernel declined ring setup {previous} ({err}); trying {name}");
        }
        match builder.build(entries) {
            Ok(ring) => return Ok((ring, level, name)),
            Err(err) => declined = Some((name, err)),
        }
    }
    let (name, err) = declined.expect("the plain setup is always tried");
    Err(format!("io_uring setup ({name}): {err}"))
}

/// Absolute or relative `Timespec` of `ns` nanoseconds.
pub(crate) fn timespec(ns: u64) -> types::Timespec {
    types::Timespec::new()
        .sec(ns / 1_000_000_000)
        .nsec((ns % 1_000_000_000) as u32)
}

/// Errors of `io_uring_enter` that only say the wait ended early or
/// timed out: the loop reaps and decides again.
pub(crate) fn benign(err: &io::Error) -> bool {
    matches!(
        err.raw_os_error(),
        Some(libc::ETIME | libc::EINTR | libc::EAGAIN | libc::EBUSY)
    )
}

/// Builds the SQEs of the paced modes; owns the request bytes the sends
/// point at.
pub(crate) struct Sockets {
    pub(crate) fds: Vec<RawFd>,
    pub(crate) fixed: bool,
    pub(crate) request: Vec<u8>,
    pub(crate) request_len: u32,
    pub(crate) send_flags: squeue::Flags,
}

impl Sockets {
    pub(crate) fn send(&self, index: usize) -> squeue::Entry {
        let (ptr, len) = (self.request.as_ptr(), self.request_len);
        let op = if self.fixed {
            // Connection indices are < 65536 (checked by parse_args).
            opcode::Send::new(types::Fixed(index as u32), ptr, len)
        } else {
            opcode::Send::new(types::Fd(self.fds[index]), ptr, len)
        };
        // All or an error: a short send never passes as a success.
        op.flags(libc::MSG_WAITALL)
            .build()
            .flags(self.send_flags)
            .user_data(TAG_SEND | index as u64)
    }

    /// One recv into the free tail of the connection's own buffer.
    pub(crate) fn recv(&self, conn: &mut Conn, index: usize) -> squeue::Entry {
        let free = &mut conn.buf[conn.filled..];
        // At most RECV_BUF, which fits in u32.
        let (ptr, len) = (free.as_mut_ptr(), free.len() as u32);
        if self.fixed {
            opcode::Recv::new(types::Fixed(index as u32), ptr, len)
                .build()
                .user_data(index as u64)
        } else {
            opcode::Recv::new(types::Fd(self.fds[index]), ptr, len)
                .build()
                .user_data(index as u64)
        }
    }

    /// The connection's multishot recv on the buffer ring.
    pub(crate) fn recv_multi(&self, index: usize) -> squeue::Entry {
        if self.fixed {
            opcode::RecvMulti::new(types::Fixed(index as u32), BGID)
                .build()
                .user_data(index as u64)
        } else {
            opcode::RecvMulti::new(types::Fd(self.fds[index]), BGID)
                .build()
                .user_data(index as u64)
        }
    }
}

/// What completions change in a paced run.
pub(crate) struct Flow {
    /// Idle connections (a stack; capacity for all of them).
    pub(crate) idle: Vec<u32>,
    /// Responses completed.
    pub(crate) requests: u64,
    pub(crate) failure: Option<String>,
    /// Recvs (single or multishot) the kernel still holds.
    pub(crate) recvs_in_flight: usize,
    /// A timeout SQE is armed (naive pacing).
    pub(crate) timeout_pending: bool,
}

/// What a connection's buffer holds after new bytes.
pub(crate) enum Received {
    /// Its response completed: the connection is idle again.
    Complete,
    /// More bytes are needed.
    Partial,
    /// The run failed (recorded in `flow.failure`).
    Failed,
}

/// Frames the response in a connection's buffer after new bytes arrived.
pub(crate) fn on_bytes(conn: &mut Conn, index: usize, flow: &mut Flow) -> Received {
    match parse_response(&conn.buf[..conn.filled]) {
        Ok(Parsed::Complete(len)) => {
            conn.buf.copy_within(len..conn.filled, 0);
            conn.filled -= len;
            if !conn.busy {
                flow.failure
                    .get_or_insert_with(|| "a response arrived with no request in flight".into());
                return Received::Failed;
            }
            conn.busy = false;
            flow.requests += 1;
            // At most one push per request sent: never beyond capacity.
            flow.idle.push(index as u32);
            Received::Complete
        }
        Ok(Parsed::Partial) => Received::Partial,
        Err(message) => {
            flow.failure.get_or_insert(message);
            Received::Failed
        }
    }
}

/// Handles every completion in the CQ. `draining`: the run is over; only
/// account for recvs that ended and give buffers back.
pub(crate) fn reap(
    cq: &mut io_uring::CompletionQueue<'_>,
    sq: &mut SubmissionQueue<'_>,
    conns: &mut [Conn],
    mut bufs: Option<&mut BufRing>,
    sockets: &Sockets,
    flow: &mut Flow,
    draining: bool,
) -> Result<(), String> {
    cq.sync();
    for cqe in cq.by_ref() {
        let (user_data, result, flags) = (cqe.user_data(), cqe.result(), cqe.flags());
        if user_data & TAG_TIMEOUT != 0 {
            flow.timeout_pending = false;
            continue;
        }
        let index = (user_data & 0xffff_ffff) as usize;
        if user_data & TAG_SEND != 0 {
            // Only failed sends report when SKIP_SUCCESS is on.
            if result < 0 {
                flow.failure.get_or_insert_with(|| {
                    format!("send: {}", io::Error::from_raw_os_error(-result))
                });
            } else if result as u32 != sockets.request_len {
                flow.failure
                    .get_or_insert_with(|| format!("short send of {result} bytes"));
            }
            continue;
        }
        let conn = &mut conns[index];
        if let Some(ring) = bufs.as_deref_mut() {
            // Multishot: the recv goes on while the MORE flag is set.
            let more = cqueue::more(flags);
            if !more {
                flow.recvs_in_flight -= 1;
            }
            if result > 0 {
                let Some(bid) = cqueue::buffer_select(flags) else {
                    flow.failure
                        .get_or_insert_with(|| "recv completion without a buffer".into());
                    continue;
                };
                let len = result as usize;
                let copied = match ring.buffer(bid, len) {
                    Some(data) if !draining && conn.filled + len <= RECV_BUF => {
                        conn.buf[conn.filled..conn.filled + len].copy_from_slice(data);
                        conn.filled += len;
                        true
                    }
                    _ => false,
                };
                if bid < ring.entries {
                    ring.give(bid);
                }
                if draining {
                    continue;
                }
                if !copied {
                    flow.failure
                        .get_or_insert_with(|| "response larger than the receive buffer".into());
                    continue;
                }
                if let Received::Failed = on_bytes(conn, index, flow) {
                    continue;
                }
            } else if draining {
                continue;
            } else if result == 0 {
                flow.failure
                    .get_or_insert_with(|| "the server closed a connection".into());
                continue;
            } else if result != -libc::ENOBUFS {
                flow.failure.get_or_insert_with(|| {
                    format!("recv: {}", io::Error::from_raw_os_error(-result))
                });
                continue;
            }
            // Ended (out of buffers, or the kernel stopped it): re-arm.
            if !more && flow.failure.is_none() {
                // SAFETY: the recv points at no memory of this
                // function's: it picks buffers from the registered ring,
                // which outlives the io_uring. The SQ has room for two
                // entries per connection and a connection queues at most
                // two between enters.
                unsafe { sq.push(&sockets.recv_multi(index)) }
                    .map_err(|_| "submission queue full")?;
                flow.recvs_in_flight += 1;
            }
        } else {
            flow.recvs_in_flight -= 1;
            if draining {
                continue;
            }
            if result <= 0 {
                flow.failure.get_or_insert_with(|| {
                    if result == 0 {
                        "the server closed a connection".to_string()
                    } else {
                        format!("recv: {}", io::Error::from_raw_os_error(-result))
                    }
                });
                continue;
            }
            conn.filled += result as usize;
            if let Received::Partial = on_bytes(conn, index, flow) {
                let recv = sockets.recv(conn, index);
                // SAFETY: the connection buffers are owned by a local
                // declared before the ring, so they outlive every
                // operation in it; this connection has no recv in flight
                // (its completion is the one being handled), so the
                // kernel gets the only live pointer to the buffer's free
                // tail. SQ room: as above.
                unsafe { sq.push(&recv) }.map_err(|_| "submission queue full")?;
                flow.recvs_in_flight += 1;
            }
        }
    }
    if let Some(ring) = bufs {
        ring.publish();
    }
    sq.sync();
    Ok(())
}

/// Busy-waits the clock to `target`; returns the ns spent spinning
/// (steps longer than [`SPIN_GAP_NS`] are time not running: not counted).
pub(crate) fn spin_until(target: u64) -> u64 {
    let mut last = now_ns();
    let mut spun = 0;
    while last < target {
        std::hint::spin_loop();
        let now = now_ns();
        if now - last <= SPIN_GAP_NS {
            spun += now - last;
        }
        last = now;
    }
    spun
}

/// The paced floors (see the crate doc in main.rs).
pub(crate) fn run_paced(options: &Options, paced: &Paced) -> Result<PacedOutcome, String> {
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: floor\r\n\r\n",
        options.path, options.host
    )
    .into_bytes();
    let request_len = u32::try_from(request.len()).map_err(|_| "request too long")?;
    let n = options.connections;
    let mut want = paced.techniques;

    // Everything the kernel may point into first, the ring last: locals
    // drop in reverse order, so the ring (and every operation still in
    // it) goes before that memory.
    let mut conns = connect_all(options)?;
    let buf_entries = u16::try_from((n * 2).next_power_of_two().clamp(8, 32_768))
        .map_err(|_| "buffer ring too large")?;
    let mut bufs = if want.multishot {
        Some(BufRing::new(buf_entries)?)
    } else {
        None
    };
    // The naive sleep's time: the kernel copies it when the timeout SQE
    // is submitted.
    let mut timeout_ts = types::Timespec::new();
    let mut sockets = Sockets {
        fds: conns.iter().map(|c| c.stream.as_raw_fd()).collect(),
        fixed: false,
        request,
        request_len,
        send_flags: squeue::Flags::empty(),
    };

    // Between two enters a connection queues at most two entries, plus
    // one timeout.
    let sq_entries = u32::try_from(n * 2 + 2)
        .map_err(|_| "too many connections")?
        .next_power_of_two();
    let (mut ring, task_run, setup) = build_paced_ring(want.task_run, sq_entries)?;
    want.task_run = task_run;
    let mut used: Vec<String> = vec![setup.to_string()];
    let params = ring.params();
    if want.skip_success && !params.is_feature_skip_cqe_on_success() {
        eprintln!("floor: the kernel lacks IOSQE_CQE_SKIP_SUCCESS; every send posts a completion");
        want.skip_success = false;
    }
    if want.enter_timeout && !params.is_feature_ext_arg() {
        eprintln!("floor: the kernel lacks IORING_FEAT_EXT_ARG; sleeping on a timeout SQE");
        want.enter_timeout = false;
        want.abs_timer = false;
    }
    let (mut submitter, mut sq, mut cq) = ring.split();
    if want.ring_fd {
        if let Err(err) = submitter.register_ring_fd() {
            eprintln!("floor: registering the ring fd failed ({err}); entering by plain fd");
            want.ring_fd = false;
        }
    }
    if want.fixed_files {
        match submitter.register_files(&sockets.fds) {
            Ok(()) => sockets.fixed = true,
            Err(err) => {
                eprintln!("floor: registering the sockets failed ({err}); using plain fds");
                want.fixed_files = false;
            }
        }
    }
    if let Some(ring_mem) = &bufs {
        // SAFETY: the ring memory is owned by `bufs`, a local declared
        // before `ring`: it stays valid until the io_uring is gone (or
        // is leaked with the connections when the drain fails).
        let registered = unsafe {
            submitter.register_buf_ring_with_flags(ring_mem.ring as u64, ring_mem.entries, BGID, 0)
        };
        if let Err(err) = registered {
            eprintln!(
                "floor: registering a provided buffer ring failed ({err}); one recv per request"
            );
            want.multishot = false;
        }
    }
    if !want.multishot {
        // Never registered: the kernel holds no pointer into it.
        bufs = None;
    }
    if want.abs_timer {
        // An unknown enter flag fails before anything is submitted.
        let probe = types::SubmitArgs::new().timespec(&timeout_ts);
        if let Err(err) =
            submitter.submit_with_args_and_flags(0, &probe, io_uring::EnterFlags::ABS_TIMER)
        {
            eprintln!(
                "floor: the kernel lacks IORING_ENTER_ABS_TIMER ({err}); relative wait timeouts"
            );
            want.abs_timer = false;
        }
    }
    if want.skip_success {
        sockets.send_flags = squeue::Flags::SKIP_SUCCESS;
    }
    if want.multishot {
        used.push(format!(
            "multishot recv + buf ring {buf_entries}x{PROVIDED_BUF}"
        ));
    } else {
        used.push("recv per request".into());
    }
    if want.skip_success {
        used.push("send SKIP_SUCCESS".into());
    }
    if want.fixed_files {
        used.push("fixed files".into());
    }
    if want.ring_fd {
        used.push("registered ring fd".into());
    }
    used.push(match (want.enter_timeout, want.abs_timer) {
        (true, true) => "enter timeout (absolute), timer-only wake".into(),
        (true, false) => "enter timeout (relative), timer-only wake".into(),
        _ => "timeout SQE, wake on any completion".into(),
    });
    let techniques = used.join(", ");

    let mut flow = Flow {
        idle: (0..n as u32).rev().collect(),
        requests: 0,
        failure: None,
        recvs_in_flight: 0,
        timeout_pending: false,
    };
    if want.multishot {
        for index in 0..n {
            // SAFETY: the multishot recv picks buffers from the registered
            // ring, which outlives the io_uring; the SQ holds at least
            // two entries per connection.
            unsafe { sq.push(&sockets.recv_multi(index)) }.map_err(|_| "submission queue full")?;
            flow.recvs_in_flight += 1;
        }
        sq.sync();
        submitter
            .submit()
            .map_err(|e| format!("io_uring enter: {e}"))?;
        sq.sync();
    }
    // The largest wait: a sleep woken by its timer only.
    let timer_only = cq.capacity();
    let multishot = want.multishot;

    let mut lag = LagHistogram::new();
    let (mut sent, mut waited, mut waited_mark) = (0u64, 0u64, 0u64);
    let (mut enters, mut spun) = (0u64, 0u64);
    let duration_ns = u64::try_from(options.duration.as_nanos()).unwrap_or(u64::MAX / 4);
    let start_usage = rusage();
    let start = now_ns();
    let deadline = start.saturating_add(duration_ns);
    let mut schedule = Schedule::new(start, deadline, paced.rate);
    // An error leaves this block, not the function, so the drain below
    // runs before any memory the kernel may point into is freed.
    let run: Result<(), String> = 'run: loop {
        let now = now_ns();
        if now >= deadline || flow.failure.is_some() {
            break 'run Ok(());
        }
        schedule.advance(now);
        let batch_from = sent;
        while sent < schedule.due {
            let Some(index) = flow.idle.pop() else {
                break;
            };
            let index = index as usize;
            let conn = &mut conns[index];
            conn.busy = true;
            let pushed = if multishot {
                // SAFETY: the send reads the request bytes owned by
                // `sockets`, a local declared before the ring. SQ room:
                // see `sq_entries`.
                unsafe { sq.push(&sockets.send(index)) }
            } else {
                let entries = [sockets.send(index), sockets.recv(conn, index)];
                // SAFETY: as above; and the connection is idle, so it has
                // no recv in flight: the kernel gets the only live
                // pointer to its buffer's free tail, which outlives the
                // ring like the request bytes.
                unsafe { sq.push_multiple(&entries) }
            };
            if pushed.is_err() {
                break 'run Err("submission queue full".into());
            }
            if !multishot {
                flow.recvs_in_flight += 1;
            }
            sent += 1;
        }
        if sent < schedule.due {
            // These found no idle connection: they wait, oldest first.
            waited += schedule.due - waited_mark.max(sent);
            waited_mark = schedule.due;
        }
        let backlog = sent < schedule.due;
        let target = schedule.next_at.min(deadline);
        let wake = target.saturating_sub(paced.spin_ns);
        let sleep = backlog || wake > now;
        if sleep && !backlog && !want.enter_timeout && !flow.timeout_pending {
            // Wake targets never decrease, so the armed timeout never
            // fires later than the sleep that armed it wanted.
            timeout_ts = timespec(wake);
            let entry = opcode::Timeout::new(&timeout_ts)
                .flags(types::TimeoutFlags::ABS)
                .build()
                .user_data(TAG_TIMEOUT);
            // SAFETY: `timeout_ts` is a local declared before the ring and
            // is not written again before the enter just below submits
            // this entry (the kernel copies the time at submission).
            if unsafe { sq.push(&entry) }.is_err() {
                break 'run Err("submission queue full".into());
            }
            flow.timeout_pending = true;
        }
        sq.sync();
        if sent > batch_from {
            // Send time: just before the enter that submits the batch.
            let submit_at = now_ns();
            for i in batch_from..sent {
                lag.record(submit_at - schedule.at(i));
            }
        }
        let entered = if sleep {
            enters += 1;
            if want.enter_timeout {
                // Woken by the timer only, unless a request waits for a
                // connection: then by the first completion.
                let (min, until) = if backlog {
                    (1, deadline)
                } else {
                    (timer_only, wake)
                };
                let ts = if want.abs_timer {
                    timespec(until)
                } else {
                    timespec(until.saturating_sub(now_ns()))
                };
                let args = types::SubmitArgs::new().timespec(&ts);
                let flags = if want.abs_timer {
                    io_uring::EnterFlags::ABS_TIMER
                } else {
                    io_uring::EnterFlags::empty()
                };
                submitter.submit_with_args_and_flags(min, &args, flags)
            } else {
                submitter.submit_and_wait(1)
            }
        } else if !sq.is_empty() || sq.taskrun() {
            // Inside the spin slice: submit, and run pending completion
            // work (GETEVENTS when TASKRUN says there is some), no wait.
            enters += 1;
            submitter.submit_and_wait(0)
        } else {
            Ok(0)
        };
        if let Err(err) = entered {
            if !benign(&err) {
                break 'run Err(format!("io_uring enter: {err}"));
            }
        }
        sq.sync();
        let reaped = reap(
            &mut cq,
            &mut sq,
            &mut conns,
            bufs.as_mut(),
            &sockets,
            &mut flow,
            false,
        );
        if let Err(message) = reaped {
            break 'run Err(message);
        }
        if !sleep {
            spun += spin_until(target);
        }
    };
    // Completions that arrived by now count.
    let run = run.and_then(|()| {
        if sq.taskrun() {
            enters += 1;
            if let Err(err) = submitter.submit_and_wait(0) {
                if !benign(&err) {
                    return Err(format!("io_uring enter: {err}"));
                }
            }
        }
        reap(
            &mut cq,
            &mut sq,
            &mut conns,
            bufs.as_mut(),
            &sockets,
            &mut flow,
            false,
        )
    });
    let end = now_ns();
    let end_usage = rusage();

    // Drain: shut every socket so its recv ends, then reap until no recv
    // points into a buffer.
    for conn in &conns {
        let _ = conn.stream.shutdown(std::net::Shutdown::Both);
    }
    let drain_deadline = Instant::now() + Duration::from_secs(5);
    while flow.recvs_in_flight > 0 && Instant::now() < drain_deadline {
        match submitter.submit_and_wait(1) {
            Ok(_) => {}
            Err(err) if benign(&err) => {}
            Err(_) => break,
        }
        if reap(
            &mut cq,
            &mut sq,
            &mut conns,
            bufs.as_mut(),
            &sockets,
            &mut flow,
            true,
        )
        .is_err()
        {
            break;
        }
    }
    if flow.recvs_in_flight > 0 {
        // The kernel may still hold pointers into the buffers: never free them.
        std::mem::forget(conns);
        std::mem::forget(bufs);
    }

    run?;
    if let Some(message) = flow.failure {
        return Err(message);
    }
    Ok(PacedOutcome {
        base: Outcome {
            requests: flow.requests,
            seconds: (end - start) as f64 / 1e9,
            cpu_user_s: end_usage.0 - start_usage.0,
            cpu_sys_s: end_usage.1 - start_usage.1,
        },
        sent,
        waited,
        lag,
        enters,
        spin_s: spun as f64 / 1e9,
        techniques,
    })
}
