//! Simulation test of the pool rules ([`Pool`]) on a virtual clock: an
//! engine that admits each due request with [`Pool::admit`], starts the
//! connects it is told to, asks [`Pool::to_open`] again when a connect
//! ends, and feeds every service time to [`Pool::observe`], against a
//! server of many workers (each request served in its own time).
//!
//! Pinned: a 1 ms transient at 90k req/s does not grow the pool (the old
//! rule, one connection per waiting request, grew it by hundreds); a
//! generator descheduled for 100 ms does not either; a server that really
//! slowed down gets the connections its service time needs, a few connects
//! at a time; drops above `max_in_flight` are exact.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use metronome_core::pool::{Admit, Pool, PoolState, MAX_CONNECTING};

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

/// The server: each request's service time for a send at `t`; responses
/// are held until `hold_until` when sent before it (a stall).
struct Server {
    service: fn(u64) -> u64,
    stall: Option<(u64, u64)>,
}

impl Server {
    fn done(&self, sent: u64) -> u64 {
        let d = sent + (self.service)(sent);
        match self.stall {
            Some((from, until)) if d >= from && sent < until => d.max(until),
            _ => d,
        }
    }
}

#[derive(Debug, Default)]
struct Outcome {
    sent: u64,
    dropped: u64,
    waited: u64,
    full: u64,
    /// When the last request waited for a connection.
    last_wait: u64,
    /// Requests sent over 1 ms after they came due, and the last one's due time.
    late: u64,
    last_late: u64,
    peak_open: u32,
    peak_connecting: u32,
    /// (time, open connections) each time a connect completed.
    growth: Vec<(u64, u32)>,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A connection's response arrived (its index).
    Done(usize),
    /// A connect completed.
    Connected,
    /// Request `i` is due.
    Due(u64),
}

/// Runs `count` requests at `rate` (constant) on one pacing thread with
/// `pre` connections, at most `max`, `max_in_flight`, connects taking
/// `connect_ns`; `late`: the engine reaps nothing in that window (it is
/// descheduled) and handles everything due at its end.
#[allow(clippy::too_many_arguments)]
fn simulate(
    rate: f64,
    count: u64,
    pre: u32,
    max: u32,
    max_in_flight: u32,
    seed_ns: Option<u64>,
    server: &Server,
    late: Option<(u64, u64)>,
) -> Outcome {
    let connect_ns = 100 * US;
    let mut pool = Pool::new(rate, pre, max, max_in_flight);
    if let Some(s) = seed_ns {
        pool.seed(s);
    }
    let gap = (1e9 / rate) as u64;
    let mut heap = BinaryHeap::new();
    for i in 0..count {
        heap.push(Reverse((i * gap, Ev::Due(i))));
    }
    // sent_at of each busy connection.
    let mut busy: Vec<Option<u64>> = Vec::new();
    let mut idle: Vec<usize> = Vec::new();
    for c in 0..pre as usize {
        busy.push(None);
        idle.push(c);
    }
    let mut connecting = 0u32;
    let mut waiting: VecDeque<u64> = VecDeque::new();
    let mut in_flight = 0u32;
    let mut out = Outcome {
        peak_open: pre,
        ..Outcome::default()
    };
    let state = |idle: &Vec<usize>,
                 busy: &Vec<Option<u64>>,
                 connecting,
                 waiting: &VecDeque<u64>,
                 in_flight| PoolState {
        idle: idle.len() as u32,
        open: busy.len() as u32,
        connecting,
        waiting: waiting.len() as u32,
        in_flight,
    };
    let send = |c: usize,
                now: u64,
                busy: &mut Vec<Option<u64>>,
                heap: &mut BinaryHeap<Reverse<(u64, Ev)>>| {
        busy[c] = Some(now);
        heap.push(Reverse((server.done(now), Ev::Done(c))));
    };
    while let Some(Reverse((t, ev))) = heap.pop() {
        // A descheduled engine handles what happened in the window at its end.
        let now = match late {
            Some((from, until)) if t >= from && t < until => until,
            _ => t,
        };
        match ev {
            Ev::Due(_) => {
                if idle.is_empty() {
                    // As the engines do: the oldest request in flight is a
                    // lower bound of the service time.
                    if let Some(oldest) = busy.iter().flatten().min() {
                        pool.observe_in_flight(now, now - oldest);
                    }
                }
                match pool.admit(state(&idle, &busy, connecting, &waiting, in_flight)) {
                    Admit::Drop => out.dropped += 1,
                    Admit::Send => {
                        in_flight += 1;
                        out.sent += 1;
                        let c = idle.pop().unwrap();
                        send(c, now, &mut busy, &mut heap);
                    }
                    Admit::Wait { open, full } => {
                        in_flight += 1;
                        out.sent += 1;
                        out.waited += 1;
                        out.full += u64::from(full);
                        out.last_wait = now;
                        waiting.push_back(now);
                        for _ in 0..open {
                            connecting += 1;
                            heap.push(Reverse((now + connect_ns, Ev::Connected)));
                        }
                        out.peak_connecting = out.peak_connecting.max(connecting);
                    }
                }
            }
            Ev::Done(c) => {
                let sent = busy[c].take().unwrap();
                pool.observe(now, now - sent);
                in_flight -= 1;
                match waiting.pop_front() {
                    Some(due) => {
                        if now - due > MS {
                            out.late += 1;
                            out.last_late = due;
                        }
                        send(c, now, &mut busy, &mut heap)
                    }
                    None => idle.push(c),
                }
            }
            Ev::Connected => {
                connecting -= 1;
                busy.push(None);
                let c = busy.len() - 1;
                out.peak_open = out.peak_open.max(busy.len() as u32);
                out.growth.push((now, busy.len() as u32));
                match waiting.pop_front() {
                    Some(due) => {
                        if now - due > MS {
                            out.late += 1;
                            out.last_late = due;
                        }
                        send(c, now, &mut busy, &mut heap)
                    }
                    None => idle.push(c),
                }
                let n = pool.to_open(state(&idle, &busy, connecting, &waiting, in_flight));
                for _ in 0..n {
                    connecting += 1;
                    heap.push(Reverse((now + connect_ns, Ev::Connected)));
                }
                out.peak_connecting = out.peak_connecting.max(connecting);
            }
        }
    }
    out
}

fn instant(_: u64) -> u64 {
    50 * US
}

/// 90k req/s for 1 s, 16 connections pre-opened (the default at this rate
/// is 60), the server holds every response for 1 ms at 0.5 s: ~90 requests
/// wait, and the pool does not grow at all (the estimate moves by a few
/// percent: 90k x ~52 us x 1.5 + 2 = 10 < 16).
#[test]
fn a_millisecond_transient_does_not_grow_the_pool() {
    let server = Server {
        service: instant,
        stall: Some((500 * MS, 501 * MS)),
    };
    let o = simulate(
        90_000.0,
        90_000,
        16,
        1024,
        10_000,
        Some(50 * US),
        &server,
        None,
    );
    assert_eq!((o.sent, o.dropped), (90_000, 0));
    assert!(o.waited > 50, "{o:?}");
    assert_eq!(o.peak_open, 16, "{:?}", o.growth);
    assert_eq!(o.full, 0);
}

/// The same run with the generator descheduled for 100 ms at 0.5 s: 9000
/// requests come due at once and every completion is reaped 100 ms late,
/// and the pool still does not spiral (a few connections at most).
#[test]
fn a_descheduled_generator_does_not_spiral() {
    let server = Server {
        service: instant,
        stall: None,
    };
    let o = simulate(
        90_000.0,
        90_000,
        16,
        1024,
        100_000,
        Some(50 * US),
        &server,
        Some((500 * MS, 600 * MS)),
    );
    assert_eq!((o.sent, o.dropped), (90_000, 0));
    assert!(o.waited > 8_000, "{o:?}");
    assert!(
        o.peak_open <= 24,
        "{} {:?}",
        o.peak_open,
        &o.growth[..o.growth.len().min(20)]
    );
}

fn slower(t: u64) -> u64 {
    if t < 200 * MS {
        50 * US
    } else {
        2 * MS
    }
}

/// The server slows from 50 us to 2 ms at 0.2 s, at 20k req/s (40
/// requests in flight needed): the pool grows toward what the service time
/// needs, on demand (only while requests wait), never with more than 4
/// connects at once and never above 20k x 2 ms x 1.5 + 2 = 62; within
/// half a second of the change no request waits any more.
#[test]
fn a_server_that_slowed_down_gets_the_connections_it_needs() {
    let server = Server {
        service: slower,
        stall: None,
    };
    let o = simulate(
        20_000.0,
        20_000,
        16,
        1024,
        10_000,
        Some(50 * US),
        &server,
        None,
    );
    assert_eq!((o.sent, o.dropped), (20_000, 0));
    assert!(o.peak_connecting <= MAX_CONNECTING);
    assert!(
        (41..=62).contains(&o.peak_open),
        "{} {:?}",
        o.peak_open,
        o.growth
    );
    let first = o.growth.first().unwrap().0;
    assert!(first >= 200 * MS, "{first}");
    assert!(o.last_wait < 700 * MS, "waited until {} ns", o.last_wait);
    assert_eq!(o.full, 0);
}

/// At the limit: 2 connections, a 10 ms server, 1000 req/s, in-flight
/// limit 12: the pool is full, every wait says so, and the drops are exact
/// (10 ms x 1000 req/s = 10 needed in flight, 2 connections serve 200
/// req/s: the queue fills to 12 and stays there).
#[test]
fn at_the_limit_waits_are_full_and_drops_exact() {
    fn ten(_: u64) -> u64 {
        10 * MS
    }
    let server = Server {
        service: ten,
        stall: None,
    };
    let o = simulate(1000.0, 100, 2, 2, 12, None, &server, None);
    assert_eq!(o.peak_open, 2);
    assert_eq!(o.sent + o.dropped, 100);
    // 2 sent at once, then 10 waiting; each 10 ms two leave and two of the
    // next ten due get in: 12 + 2 x (99 ms / 10 ms) = 30 admitted.
    assert_eq!(o.sent, 30, "{o:?}");
    assert_eq!(o.waited, 28);
    assert_eq!(o.full, 28);
}

fn one_ms(_: u64) -> u64 {
    MS
}

/// A 600 ms stall at 200 req/s on 8 connections (1 ms service): no answer
/// comes during it, but the age of the oldest request in flight does. The
/// 8 connections fill in 40 ms; the estimate passes the 20 ms that 8
/// connections serve at 200 req/s about 25 ms later (x1.75 per 5 ms, the
/// 4x clip at a 5 ms weight of 20), so the pool starts growing within 80 ms
/// of the stall and grows toward the stall's concurrency: requests stop
/// waiting long before it ends.
#[test]
fn a_stall_grows_the_pool_from_the_ages_in_flight() {
    let server = Server {
        service: one_ms,
        stall: Some((300 * MS, 900 * MS)),
    };
    let o = simulate(200.0, 300, 8, 1024, 10_000, Some(MS), &server, None);
    assert_eq!((o.sent, o.dropped), (300, 0));
    let first = o.growth.first().unwrap().0;
    assert!((340 * MS..380 * MS).contains(&first), "{first}");
    assert!(o.peak_open >= 100, "{} {:?}", o.peak_open, o.growth);
    // Only requests due in the first ~70 ms of the stall waited long.
    assert!(o.last_late < 380 * MS, "late until {} ns", o.last_late);
    assert!(o.late <= 16, "{} late", o.late);
}
