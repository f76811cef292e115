//! A connection's dispatcher: keeps its connection open (reopening it when
//! it dies or drains after a GOAWAY, with a fresh [`read`](super::read)
//! thread each time), takes due requests from the pacer's queue while the
//! connection has a free stream slot, and writes their HEADERS and bodies.

use std::sync::atomic::Ordering;
use std::sync::{mpsc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use metronome_core::engine::Setup;
use metronome_core::h2::SendError;
use metronome_core::measure::{ThreadStats, Unsent};
use metronome_core::plan::Plan;

use super::read::{read_loop, Io};
use super::{lock, open, Job, Link, Opening, Shared, SLOTS};
use crate::clock::{thread_cpu_ns, Clock};
use crate::collector::Fact;
use crate::tls::Tls;

/// A connection's dispatcher (and, in a scope, its readers): takes due
/// requests while the connection has a free stream slot.
pub(crate) fn worker(
    plan: &Plan<'_>,
    tls: Option<&Tls>,
    origin: &OnceLock<Clock>,
    shared: &Shared,
    tx: mpsc::Sender<Fact>,
    first: Option<Opening>,
    all_stats: &Mutex<Vec<ThreadStats>>,
) {
    let Some(h2plan) = plan.wire.streams() else {
        return;
    };
    let cap = match h2plan.max_streams {
        0 => SLOTS,
        n => n as usize,
    };
    let connect_timeout = Duration::from_nanos(plan.connect_timeout_ns());
    let link = Mutex::new(Link::new(plan, cap));
    let changed = Condvar::new();
    let mut stats = ThreadStats::default();
    let mut streams = Box::new(Setup::default());
    let grown = first.is_none();
    std::thread::scope(|s| {
        let mut reader: Option<std::thread::ScopedJoinHandle<'_, ()>> = None;
        let mut pending = first;
        let mut connected_once = false;
        let mut linked = false;
        loop {
            // 1. A usable connection with a free stream slot.
            if wait_for_slot(&link, &changed, shared) {
                if let Some(r) = reader.take() {
                    let _ = r.join();
                }
                let opening = match pending.take() {
                    Some(o) => Ok(o),
                    None => {
                        let clock = origin.get_or_init(Clock::start);
                        if shared.closing_and_empty() {
                            break;
                        }
                        let hard = shared.hard_end_ns.load(Ordering::Relaxed);
                        if clock.now_ns() >= hard {
                            break;
                        }
                        let r = open(plan.addr, connect_timeout, tls);
                        if let Ok(o) = &r {
                            let _ = tx.send(Fact::Opened(o.opened()));
                        }
                        r
                    }
                };
                if grown && !connected_once {
                    let mut q = lock(&shared.queue);
                    q.connecting -= 1;
                }
                let Ok(o) = opening else {
                    connected_once = true;
                    shared.not_connected(origin, &tx);
                    continue;
                };
                if grown && !connected_once {
                    shared.count_open();
                } else if connected_once {
                    shared.opened.fetch_add(1, Ordering::Relaxed);
                }
                connected_once = true;
                let Some(io) = attach(&link, o, plan, tls.is_some(), shared, &mut linked) else {
                    continue;
                };
                let (link, changed, tx) = (&link, &changed, tx.clone());
                reader =
                    Some(s.spawn(move || read_loop(plan, origin, shared, link, changed, tx, io)));
                continue;
            }
            // 2. A due request (the link's free slots are counted as idle
            // in the queue all along: `Link::sync_idle`).
            if lock(&link).free() == 0 {
                if shared.closing_and_empty() {
                    break;
                }
                continue;
            }
            let Some(job) = shared.take_job() else { break };
            // 3. Its HEADERS (and body) on a new stream.
            let clock = origin.get_or_init(Clock::start);
            if let Some(sent_ns) = start_stream(&link, plan, clock, shared, &tx, job, &mut streams)
            {
                if !job.retried {
                    stats.sent += 1;
                    let _ = tx.send(Fact::Sent {
                        intended_ns: job.intended_ns,
                        request: job.request,
                        sent_ns,
                        waited_since: job.waited_since,
                    });
                }
            }
        }
        leave(&link, &changed, shared);
        if let Some(r) = reader.take() {
            let _ = r.join();
        }
    });
    stats.cpu_ns = thread_cpu_ns();
    let l = link.into_inner().unwrap_or_else(|e| e.into_inner());
    shared
        .dropped_gaps
        .fetch_add(l.flights.dropped_gaps(), Ordering::Relaxed);
    lock(all_stats).push(stats);
    let _ = tx.send(Fact::Setup(streams));
}

/// Waits until the connection has a free stream slot, is dead (`true`:
/// open a new one) or the queue closes.
fn wait_for_slot(link: &Mutex<Link>, changed: &Condvar, shared: &Shared) -> bool {
    let mut l = lock(link);
    loop {
        if l.dead {
            return true;
        }
        if l.free() > 0 || shared.closing_and_empty() {
            return false;
        }
        l = changed
            .wait_timeout(l, Duration::from_millis(20))
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

/// The opened connection `o` becomes the link's; returns its reader's
/// socket (`None`: the socket could not be cloned).
fn attach(
    link: &Mutex<Link>,
    o: Opening,
    plan: &Plan<'_>,
    tls: bool,
    shared: &Shared,
    linked: &mut bool,
) -> Option<Io> {
    // A server that stops reading blocks a write at most one request
    // timeout: the write fails, the connection with it (its streams end),
    // and the link's lock is free again for the reader.
    let _ = o.sock.set_write_timeout(Some(
        Duration::from_nanos(plan.timeout_ns).max(Duration::from_millis(1)),
    ));
    let read_sock = o.sock.try_clone().ok()?;
    let mut l = lock(link);
    l.h2 = o.h2;
    l.sock = Some(o.sock);
    l.tls = o.tls;
    l.dead = false;
    l.flights.reset();
    l.sync_idle(shared);
    if !*linked {
        *linked = true;
        lock(&shared.queue).linked += 1;
    }
    Some(Io {
        sock: read_sock,
        rest: o.rest,
        tls,
    })
}

/// Sends `job` on a new stream: its HEADERS, then what the windows allow
/// of its body. Returns when it left; `None`: not sent (the run's hard end
/// came first, a fact already; or the connection could not take it after
/// all, back to the queue's front).
fn start_stream(
    link: &Mutex<Link>,
    plan: &Plan<'_>,
    clock: &Clock,
    shared: &Shared,
    tx: &mpsc::Sender<Fact>,
    job: Job,
    streams: &mut Setup,
) -> Option<u64> {
    let request = plan.wire.streams()?.requests[job.request];
    let mut l = lock(link);
    let now = clock.now_ns();
    if now >= shared.hard_end_ns.load(Ordering::Relaxed) {
        drop(l);
        let _ = tx.send(Fact::NotSent {
            intended_ns: job.intended_ns,
            request: job.request,
            at_ns: now,
            reason: Unsent::Timeout,
            retried: job.retried,
        });
        shared.in_flight.fetch_sub(1, Ordering::Relaxed);
        return None;
    }
    let slot = l.flights.free_slot();
    let started = match (slot, l.free() > 0) {
        (Some(slot), true) => {
            let Link { h2, out, .. } = &mut *l;
            h2.watch_fields(plan.checks);
            h2.start_planned(&request, out).map(|r| (slot, r))
        }
        _ => Err(SendError::StreamLimit),
    };
    if let Err(e @ SendError::TooLarge { .. }) = started {
        // No connection to this server takes it: never sent.
        drop(l);
        let _ = tx.send(Fact::Note(format!("HTTP/2: {e}: not sent")));
        let _ = tx.send(Fact::NotSent {
            intended_ns: job.intended_ns,
            request: job.request,
            at_ns: now,
            reason: Unsent::TooLarge,
            retried: job.retried,
        });
        shared.in_flight.fetch_sub(1, Ordering::Relaxed);
        return None;
    }
    let Ok((slot, (stream, written))) = started else {
        // The connection cannot take it after all: back to the front.
        drop(l);
        lock(&shared.queue).jobs.push_front(job);
        shared.ready.notify_one();
        return None;
    };
    let sent_ns = clock.now_ns();
    streams.streams(l.h2.open_streams(), l.h2.server_max_streams());
    let wrote = l.write_out(written);
    let gap = l.sse.then_some(slot as u32);
    l.flights
        .start(slot, stream, job, sent_ns, plan.timeout_ns, gap);
    if wrote.is_ok() && !request.body.is_empty() {
        let _ = l.push_bodies(plan);
    }
    l.count_written(&shared.traffic, sent_ns);
    l.sync_idle(shared);
    Some(sent_ns)
}

/// Leaving: the streams in flight end (answered, or at their deadline,
/// which the reader watches), then the socket closes.
fn leave(link: &Mutex<Link>, changed: &Condvar, shared: &Shared) {
    let mut l = lock(link);
    l.leaving = true;
    l.sync_idle(shared);
    while !l.dead && l.in_flight() > 0 {
        l = changed
            .wait_timeout(l, Duration::from_millis(20))
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    if let Some(sock) = l.sock.as_ref() {
        let _ = sock.shutdown(std::net::Shutdown::Both);
    }
}
