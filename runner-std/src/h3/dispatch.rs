//! A connection's dispatcher: keeps its connection open (reopening it
//! when it dies, with a fresh [`read`] thread each time; at once when the
//! server sends GOAWAY, the old connection draining beside the new one:
//! core's [`after_goaway`] with a spare link),
//! takes due requests from the pacer's queue while the connection has a
//! free stream slot, and starts each on a new bidirectional stream.

use super::*;

/// A connection's dispatcher (and, in a scope, its readers): keeps its
/// connection open, takes due requests while it has a free stream slot
/// and writes each on a new stream.
pub(crate) fn worker(
    plan: &Plan<'_>,
    tls: Option<&Tls>,
    origin: &OnceLock<Clock>,
    shared: &Shared,
    tx: mpsc::Sender<Fact>,
    first: Option<Opening>,
    all_stats: &Mutex<Vec<ThreadStats>>,
) {
    let Some(tls) = tls else {
        return;
    };
    let connect_timeout = Duration::from_nanos(plan.connect_timeout_ns());
    let new_link = || {
        Mutex::new(Link {
            h3: None,
            sock: None,
            tx: Vec::with_capacity(DATAGRAM),
            written: 0,
            dead: true,
            leaving: false,
            counted: 0,
            shaking: None,
        })
    };
    // The connection in use, and one a GOAWAY retired, draining.
    let links = [new_link(), new_link()];
    let mut cur = 0;
    let changed = Condvar::new();
    let mut stats = ThreadStats::default();
    let mut streams = Box::new(metronome_core::engine::Setup::default());
    let grown = first.is_none();
    std::thread::scope(|s| {
        let mut readers: [Option<std::thread::ScopedJoinHandle<'_, ()>>; 2] = [None, None];
        let mut pending = first;
        let mut connected_once = false;
        let mut linked = false;
        loop {
            if wait_for_slot(&links[cur], &changed, shared) {
                // Going away: it drains with its reader; the next
                // connection goes in the other link (once an older one
                // drained there).
                if !lock(&links[cur]).dead {
                    cur = 1 - cur;
                }
                if let Some(r) = readers[cur].take() {
                    let _ = r.join();
                }
                let opening = match pending.take() {
                    Some(o) => Ok(o),
                    None => {
                        let clock = origin.get_or_init(Clock::start);
                        if shared.closing_and_empty() {
                            break;
                        }
                        if clock.now_ns() >= shared.hard_end_ns.load(Ordering::Relaxed) {
                            break;
                        }
                        let r = open(plan, connect_timeout, tls);
                        match &r {
                            Ok(o) => {
                                let _ = tx.send(Fact::Opened(o.opened()));
                            }
                            Err(e) => {
                                if let Some(kind) = crate::handshake_failure(e) {
                                    let _ = tx.send(Fact::HandshakeFailed(kind));
                                }
                            }
                        }
                        r
                    }
                };
                if grown && !connected_once {
                    lock(&shared.queue).connecting -= 1;
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
                let Ok(read_sock) = o.sock.try_clone() else {
                    continue;
                };
                {
                    let mut l = lock(&links[cur]);
                    l.h3 = Some(o.h3);
                    l.sock = Some(o.sock);
                    l.shaking = o.shaking;
                    l.dead = false;
                    l.sync_idle(shared);
                }
                if !linked {
                    linked = true;
                    lock(&shared.queue).linked += 1;
                }
                let (link, changed, tx) = (&links[cur], &changed, tx.clone());
                readers[cur] =
                    Some(s.spawn(move || {
                        read_loop(plan, origin, shared, link, changed, tx, read_sock)
                    }));
                continue;
            }
            if lock(&links[cur]).free() == 0 {
                if shared.closing_and_empty() {
                    break;
                }
                continue;
            }
            let Some(job) = shared.take_job() else { break };
            let clock = origin.get_or_init(Clock::start);
            if let Some(sent_ns) =
                start_stream(&links[cur], plan, clock, shared, &tx, job, &mut streams)
            {
                // A retried job was counted sent the first time.
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
        for link in &links {
            leave(link, &changed, shared);
        }
        for r in &mut readers {
            if let Some(r) = r.take() {
                let _ = r.join();
            }
        }
    });
    stats.cpu_ns = thread_cpu_ns();
    for link in links {
        let l = link.into_inner().unwrap_or_else(|e| e.into_inner());
        if let Some(h3) = l.h3 {
            retire(&h3, shared, &tx);
        }
    }
    lock(all_stats).push(stats);
    let _ = tx.send(Fact::Setup(streams));
}

/// What a connection does after the server's GOAWAY: core's
/// [`after_goaway`] for a dispatcher with a spare link (it has two).
const GOAWAY: AfterGoaway = after_goaway(true);

/// Waits until the connection has a free stream slot, is dead or retired
/// after a GOAWAY (`true`: open a new one) or the queue closes.
fn wait_for_slot(link: &Mutex<Link>, changed: &Condvar, shared: &Shared) -> bool {
    let retires = matches!(GOAWAY, AfterGoaway::RetireAndReopen);
    let mut l = lock(link);
    loop {
        let going = l.h3.as_ref().is_some_and(|h| h.state() == State::GoingAway);
        if l.dead || (retires && going && !l.leaving) {
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

/// Sends `job` on a new bidirectional stream: HEADERS, DATA, FIN. Returns
/// when it left; `None`: not sent (the run's hard end came first, a fact
/// already; or no stream could be opened, back to the queue's front).
fn start_stream(
    link: &Mutex<Link>,
    plan: &Plan<'_>,
    clock: &Clock,
    shared: &Shared,
    tx: &mpsc::Sender<Fact>,
    job: Job,
    streams: &mut metronome_core::engine::Setup,
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
    let sent_ns = clock.now_ns();
    let req = Request {
        block: request.block,
        body: request.body,
    };
    let free = l.free();
    let started = match l.h3.as_mut() {
        Some(h3) if free > 0 => h3.start(job, req, sent_ns),
        _ => Err(Refused::NoStream(job)),
    };
    match started {
        Ok(()) => {}
        Err(Refused::NoStream(job)) => {
            drop(l);
            lock(&shared.queue).jobs.push_front(job);
            shared.ready.notify_one();
            return None;
        }
        Err(Refused::TooLarge { job, limit }) => {
            drop(l);
            let _ = tx.send(Fact::Note(metronome_quic::too_large(limit)));
            let _ = tx.send(Fact::NotSent {
                intended_ns: job.intended_ns,
                request: job.request,
                at_ns: sent_ns,
                reason: Unsent::TooLarge,
                retried: job.retried,
            });
            shared.in_flight.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
    }
    let _ = l.flush(Instant::now());
    if let Some(h3) = l.h3.as_ref() {
        let server = h3
            .server_max_streams()
            .map(|m| u32::try_from(m).unwrap_or(u32::MAX));
        streams.streams(h3.in_flight(), server);
    }
    l.count_written(shared, sent_ns);
    l.sync_idle(shared);
    Some(sent_ns)
}

/// Leaving: the streams in flight end (answered, or at their deadline,
/// which the reader watches), then the connection closes.
fn leave(link: &Mutex<Link>, changed: &Condvar, shared: &Shared) {
    let mut l = lock(link);
    l.leaving = true;
    l.sync_idle(shared);
    while !l.dead && l.h3.as_ref().is_some_and(|h3| h3.in_flight() > 0) {
        l = changed
            .wait_timeout(l, Duration::from_millis(20))
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}
