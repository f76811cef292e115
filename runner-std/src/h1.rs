//! An HTTP/1.1 connection thread of the open model: it takes due requests
//! from the [`Queue`](crate::queue::Queue), one at a time, and sleeps on the
//! idle stack between them.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::Duration;

use metronome_core::exchange::Exchange;
use metronome_core::measure::{ThreadStats, Unsent};
use metronome_core::pace::linger_ns;
use metronome_core::plan::{Plan, WarmUp, FRESH_SETTLE_NS};

use crate::clock::{thread_cpu_ns, Clock};
use crate::collector::Fact;
use crate::conn::{Conn, Exchanged, Health};
use crate::queue::{Job, Shared, Sleeper, ASLEEP, LEAVE, RETIRE};
use crate::tls::Tls;

/// A connection thread: takes due requests from the queue, one at a time.
#[allow(clippy::too_many_arguments)]
pub(crate) fn worker(
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
    // Opened during the run and not yet used: bytes on it now were asked
    // for by no request.
    let mut fresh = conn.is_none();
    let mut conn = match conn {
        Some(c) => c,
        None => {
            // Grown by the pacer, after the clock started.
            let clock = origin.get_or_init(Clock::start);
            let mut exchange = Exchange::for_plan(plan);
            if shared.writes_first.load(Ordering::Relaxed) {
                exchange.distrust_first_responses();
            }
            let mut c = Conn::new(exchange, tls.cloned());
            let r = c.reopen_until(plan.addr, connect_timeout, clock, &shared.hard_end_ns);
            report_open(&mut c, &r, &tx);
            if r.is_ok() {
                if !shared.writes_first.load(Ordering::Relaxed) {
                    settle(plan);
                }
                shared.count_open();
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
            let writes_first = shared.writes_first.load(Ordering::Relaxed);
            if writes_first {
                conn.distrust_first_responses();
            }
            let health = if writes_first {
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
                    if fresh {
                        // Bytes on a connection opened during the run,
                        // before its first request: the server writes on
                        // accept, which the warm start's settle missed
                        // (a loaded host). From now on, as when it saw it.
                        shared.writes_first.store(true, Ordering::Relaxed);
                        conn.distrust_first_responses();
                    }
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
                fresh = true;
                if plan.warm_up != WarmUp::Off && !shared.writes_first.load(Ordering::Relaxed) {
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
            fresh = false;
            if !retried {
                stats.sent += 1;
                let _ = tx.send(Fact::Sent {
                    intended_ns: job.intended_ns,
                    request: job.request,
                    sent_ns,
                    waited_since: job.waited_since,
                });
            }
            conn.set_check(plan.check_of(job.request));
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
                        head: conn.head(),
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

/// A connection opened during the run waits [`FRESH_SETTLE_NS`] before its first
/// request (unless `--warm-up off`), so bytes a server writes on accept are
/// seen by the health check as unsolicited, never taken for a response.
fn settle(plan: &Plan<'_>) {
    if plan.warm_up != WarmUp::Off {
        std::thread::sleep(Duration::from_nanos(FRESH_SETTLE_NS));
    }
}
