//! The closed model, only to show the difference: `workers` loops of send,
//! wait, send, each on its own connection. Latency runs from the actual
//! send, so a stall hides in the requests that were never sent.

use std::sync::mpsc;
use std::time::Duration;

use metronome_core::engine::{Control, EngineError, RunOutput};
use metronome_core::measure::{ErrorKind, ThreadStats};
use metronome_core::plan::Plan;

use crate::clock::{process_cpu_ns, thread_cpu_ns, Clock};
use crate::collector::{Collector, Fact};
use crate::conn::{Conn, Outcome};

pub(crate) fn run(
    plan: &Plan<'_>,
    control: &Control,
    workers: u32,
    expected_interval_ns: Option<u64>,
) -> Result<RunOutput, EngineError> {
    let expect_stream = plan.expect_stream();
    let connect_timeout = Duration::from_nanos(plan.connect_timeout_ns());
    let mut conns = Vec::with_capacity(workers as usize);
    for _ in 0..workers {
        conns.push(
            Conn::connect(plan.addr, connect_timeout, expect_stream)
                .map_err(EngineError::Connect)?,
        );
    }
    let (tx, rx) = mpsc::channel::<Fact>();
    let clock = Clock::start();
    let cpu_start = process_cpu_ns();
    let end_ns = plan.end_ns();
    let hard_end_ns = plan.hard_end_ns();

    let (mut out, worker_stats) = std::thread::scope(|s| {
        let collector = crate::spawn_big(s, || {
            let mut c = Collector::new(plan);
            for fact in rx {
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
                s.spawn(move || {
                    let mut stats = ThreadStats::default();
                    let mut i = w as u64;
                    loop {
                        let sent_ns = clock.now_ns();
                        if sent_ns >= end_ns || control.stopped() {
                            break;
                        }
                        if !conn.is_open() && conn.reopen(plan.addr, connect_timeout).is_err() {
                            let _ = tx.send(Fact::ClosedDone {
                                sent_ns,
                                done_ns: clock.now_ns(),
                                outcome: Outcome::Error(ErrorKind::Connect),
                                expected_interval_ns,
                            });
                            // A refusing server must not turn the loop into a spin.
                            std::thread::sleep(Duration::from_millis(1));
                            continue;
                        }
                        let request = plan.request(i);
                        i += u64::from(workers);
                        let _ = tx.send(Fact::Sent {
                            intended_ns: sent_ns,
                            sent_ns,
                        });
                        let deadline = sent_ns.saturating_add(plan.timeout_ns).min(hard_end_ns);
                        let (done_ns, outcome) =
                            conn.exchange(clock, request, sent_ns, sent_ns, deadline);
                        stats.sent += 1;
                        let _ = tx.send(Fact::ClosedDone {
                            sent_ns,
                            done_ns,
                            outcome,
                            expected_interval_ns,
                        });
                    }
                    stats.cpu_ns = thread_cpu_ns();
                    (stats, conn.dropped_gaps())
                })
            })
            .collect();
        drop(tx);
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
    out.connections_opened = u64::from(workers);
    out.peak_connections = u64::from(workers);
    out.finalize(plan);
    Ok(out)
}
