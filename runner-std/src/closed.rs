//! The closed model, only to show the difference: `workers` loops of send,
//! wait, send, each on its own connection. Latency runs from the actual
//! send, so a stall hides in the requests that were never sent.

use std::sync::atomic::AtomicU64;
use std::sync::mpsc;
use std::time::Duration;

use metronome_core::engine::{pre_open, Control, EngineError, Origin, RunOutput, Setup};
use metronome_core::exchange::Exchange;
use metronome_core::measure::{ThreadStats, Unsent};
use metronome_core::plan::Plan;
use metronome_core::schedule::Shard;

use crate::clock::{process_cpu_ns, thread_cpu_ns, Clock};
use crate::collector::{Collector, Fact};
use crate::conn::{Conn, Exchanged, Health};
use crate::tls::Tls;

pub(crate) fn run(
    plan: &Plan<'_>,
    control: &Control,
    tls: Option<&Tls>,
    workers: u32,
) -> Result<RunOutput, EngineError> {
    let connect_timeout = Duration::from_nanos(plan.connect_timeout_ns());
    let mut setup = Setup::default();
    // Core's pre-open rule, every worker needing its connection.
    let open = || {
        let mut conn = Conn::connect(
            plan.addr,
            connect_timeout,
            Exchange::for_plan(plan),
            tls.cloned(),
        )?;
        if let Some(o) = conn.opened.take() {
            o.record(&mut setup);
        }
        Ok(conn)
    };
    let conns = pre_open(workers, true, open, &mut Vec::new())?;
    let (tx, rx) = mpsc::channel::<Fact>();
    let published = control.progress.published(plan);
    // One connection per worker for the whole run (as the report counts).
    control
        .progress
        .connections_open
        .store(u64::from(workers), std::sync::atomic::Ordering::Relaxed);
    // The clock's zero: now, or `--start-at` (waited for here).
    let zero = Origin::for_run(control);
    let start_late_ns = zero.wait_unless(&control.stop);
    let clock = Clock::at(zero.instant);
    let cpu_start = process_cpu_ns();
    let end_ns = plan.end_ns();
    let hard_end_ns = AtomicU64::new(plan.hard_end_ns());
    let traffic = crate::traffic::Traffic::new(plan);

    let (mut out, worker_stats) = std::thread::scope(|s| {
        let collector = crate::spawn_big(s, || {
            let mut c = Collector::new(plan, control, published);
            let mut settled = 0usize;
            for fact in rx {
                // Bytes of the closed intervals first, for their live copy.
                traffic.settle(plan, &mut c.out.intervals, clock.now_ns(), &mut settled);
                c.handle(fact, &control.progress);
            }
            c.out
        })?;
        let handles: Vec<_> = conns
            .into_iter()
            .enumerate()
            .map(|(w, mut conn)| {
                let tx = tx.clone();
                let clock = &clock;
                let hard_end_ns = &hard_end_ns;
                let traffic = &traffic;
                s.spawn(move || {
                    let mut stats = ThreadStats::default();
                    // This worker's requests, counted from 0: arrival
                    // `Shard::dealt(w, workers, k)` of the run.
                    let mut k = 0u64;
                    let mut retried = false;
                    loop {
                        let now = clock.now_ns();
                        if !retried && (now >= end_ns || control.stopped()) {
                            break;
                        }
                        match conn.health() {
                            Health::Alive | Health::Closed => {}
                            Health::IdleClosed => {
                                let _ = tx.send(Fact::IdleClosed { at_ns: now });
                            }
                            Health::Unsolicited => {
                                let _ = tx.send(Fact::Unsolicited { at_ns: now });
                            }
                        }
                        let reopened = if conn.is_open() {
                            Ok(())
                        } else {
                            let r =
                                conn.reopen_until(plan.addr, connect_timeout, clock, hard_end_ns);
                            if let Some(o) = conn.opened.take() {
                                let _ = tx.send(Fact::Opened(o));
                            }
                            if let Some(kind) = r.as_ref().err().and_then(crate::handshake_failure)
                            {
                                let _ = tx.send(Fact::HandshakeFailed(kind));
                            }
                            r
                        };
                        if reopened.is_err() {
                            let at_ns = clock.now_ns();
                            if retried {
                                // Sent once already: its worker moves on.
                                k += 1;
                            }
                            let _ = tx.send(Fact::NotSent {
                                intended_ns: now,
                                request: plan.request_index(Shard::dealt(
                                    w as u64,
                                    u64::from(workers),
                                    k,
                                )),
                                at_ns,
                                reason: Unsent::Connect,
                                retried,
                            });
                            retried = false;
                            // A refusing server must not turn the loop into a spin.
                            std::thread::sleep(Duration::from_millis(1));
                            continue;
                        }
                        let index =
                            plan.request_index(Shard::dealt(w as u64, u64::from(workers), k));
                        let request = plan.requests[index];
                        let sent_ns = clock.now_ns();
                        if !retried {
                            stats.sent += 1;
                            let _ = tx.send(Fact::Sent {
                                intended_ns: sent_ns,
                                request: index,
                                sent_ns,
                                waited_since: None,
                            });
                        }
                        conn.set_check(plan.check_of(index));
                        let ended = conn.exchange(
                            clock,
                            request,
                            sent_ns,
                            sent_ns,
                            plan.timeout_ns,
                            hard_end_ns,
                            (retried, plan.retry_non_idempotent),
                            traffic,
                        );
                        match ended {
                            Exchanged::Retry => {
                                retried = true;
                                let _ = tx.send(Fact::Retried {
                                    intended_ns: sent_ns,
                                });
                            }
                            Exchanged::Done {
                                done_ns,
                                outcome,
                                unsolicited,
                            } => {
                                retried = false;
                                k += 1;
                                if unsolicited {
                                    let _ = tx.send(Fact::Unsolicited { at_ns: done_ns });
                                }
                                let _ = tx.send(Fact::Done {
                                    intended_ns: sent_ns,
                                    request: index,
                                    sent_ns,
                                    done_ns,
                                    outcome,
                                    head: conn.head(),
                                });
                            }
                        }
                    }
                    stats.cpu_ns = thread_cpu_ns();
                    (stats, conn.dropped_gaps())
                })
            })
            .collect();
        drop(tx);
        // A stop moves the hard end to its grace, so workers waiting for a
        // reply (or a connection) give up within it.
        while !handles.iter().all(|h| h.is_finished()) {
            if control.stopped() {
                let grace_end = plan.stopped_hard_end_ns(clock.now_ns());
                hard_end_ns.fetch_min(grace_end, std::sync::atomic::Ordering::Relaxed);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let stats: Vec<(ThreadStats, u64)> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect();
        let out = collector.join().unwrap_or_else(|_| RunOutput::empty(plan));
        Ok::<_, EngineError>((out, stats))
    })?;
    let stop_ns = clock.now_ns();
    out.threads = worker_stats.iter().map(|&(s, _)| s).collect();
    out.dropped_gaps = worker_stats.iter().map(|&(_, d)| d).sum();
    out.cpu_ns = process_cpu_ns().saturating_sub(cpu_start);
    out.stopped = control.stopped();
    out.measured_ns = plan.measured_ns(Some(stop_ns));
    out.setup.merge(&setup);
    traffic.add_to(&mut out);
    out.connections_opened = u64::from(workers);
    out.peak_connections = u64::from(workers);
    out.start_unix_ns = zero.unix_ns;
    out.start_late_ns = start_late_ns;
    out.finalize(plan);
    Ok(out)
}
