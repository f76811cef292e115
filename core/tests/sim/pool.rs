//! Simulation test of the pool rules ([`Pool`]) on a virtual clock: an
//! engine that admits each due request with [`Pool::admit`], starts the
//! connects it is told to, asks [`Pool::to_open`] again when a connect
//! ends, feeds every answer to [`Pool::observe`] and its own load to
//! [`Pool::pacer_load`], hands out the most recently used idle connection
//! (LIFO), closes what [`Pool::close_on_free`] and [`Pool::close_idle`]
//! say; against a server that serves in parallel (each request in its own
//! time) or a FIFO server of fixed capacity (one request at a time).
//!
//! Pinned, one test per regime:
//! - a saturated FIFO server offered 1.1 x its capacity never grows the
//!   pool past the pre-opened count plus one probe step, the knee is its
//!   capacity, and the probe's connections close again;
//! - a parallel server that needs concurrency (20 ms each at 5k req/s)
//!   gets rate x service x 1.5 + 2 at once and holds it; one whose warm-up
//!   said less gets it by probes;
//! - a server that has not answered yet (820 ms streams at 10 req/s on 4
//!   pre-opened connections) gives each request a connection at once;
//! - a 5 ms stall of an instant server at 110k req/s grows nothing, and a
//!   slow spell's connections close after it;
//! - a pacer that is itself the bottleneck (late reaping) grows nothing;
//! - transients (1 ms, a descheduled generator) grow nothing; drops above
//!   `max_in_flight` are exact.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use metronome_core::pool::{Admit, Pool, PoolState, MAX_CONNECTING, QUIET_NS};

const US: u64 = 1_000;
const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// How the server serves.
#[derive(Clone, Copy)]
enum Serving {
    /// Every request in its own time (unlimited parallelism): its service
    /// time for a send at `t`.
    Parallel(fn(u64) -> u64),
    /// In parallel too; the n-th request sent takes `fast` when n is a
    /// multiple of `every`, else `slow`.
    Mixed { every: u64, fast: u64, slow: u64 },
    /// One request at a time, first come first served, each taking this
    /// long (capacity 1 / service).
    Fifo(u64),
}

/// The server; responses ready before `hold_until` of a stall `(from,
/// until)` are held until its end.
struct Server {
    serving: Serving,
    stall: Option<(u64, u64)>,
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
    /// The longest any request waited for a connection (its send lag), ns.
    max_lag: u64,
    last_late: u64,
    /// Completions, and when the last one came.
    done: u64,
    last_done: u64,
    peak_open: u32,
    peak_connecting: u32,
    /// Open connections at the end.
    final_open: u32,
    closed: u32,
    /// Connections that carried at least one request.
    used: usize,
    /// (time, open connections) each time a connect completed.
    growth: Vec<(u64, u32)>,
    knee: Option<metronome_core::pool::Knee>,
    probes: metronome_core::pool::Probes,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Ev {
    /// A connection's response arrived (its index).
    Done(usize),
    /// A connect completed.
    Connected,
    /// Request `i` is due.
    Due(u64),
}

/// The run's knobs.
#[derive(Clone, Copy)]
struct Run {
    rate: f64,
    duration_ns: u64,
    pre: u32,
    max: u32,
    max_in_flight: u32,
    seed_ns: Option<u64>,
    /// The engine reaps nothing in this window (it is descheduled) and
    /// handles everything due at its end.
    late: Option<(u64, u64)>,
    /// The engine's own cost per event (a send, an answer), ns: it handles
    /// events one at a time, so above its capacity it reaps late.
    cost_ns: u64,
    /// Simulated time after the schedule (answers still arrive), ns.
    tail_ns: u64,
}

impl Run {
    fn new(rate: f64, duration_ns: u64, pre: u32) -> Run {
        Run {
            rate,
            duration_ns,
            pre,
            max: 1024,
            max_in_flight: 100_000,
            seed_ns: None,
            late: None,
            cost_ns: 0,
            tail_ns: 0,
        }
    }
}

/// Runs the schedule (constant rate) on one pacing thread.
fn simulate(run: Run, server: &Server) -> Outcome {
    let connect_ns = 100 * US;
    let mut pool = Pool::new(run.rate, run.pre, run.max, run.max_in_flight);
    if let Some(s) = run.seed_ns {
        pool.seed(s);
    }
    let gap = 1e9 / run.rate;
    let count = (run.duration_ns as f64 * run.rate / 1e9 - 1e-9).ceil() as u64;
    let mut heap = BinaryHeap::new();
    for i in 0..count {
        heap.push(Reverse(((i as f64 * gap).round() as u64, Ev::Due(i))));
    }
    // Per connection: open, sent_at of its request, idle since, ever used.
    let mut open: Vec<bool> = vec![true; run.pre as usize];
    let mut busy: Vec<Option<u64>> = vec![None; run.pre as usize];
    let mut idle_since: Vec<u64> = vec![0; run.pre as usize];
    let mut used: Vec<bool> = vec![false; run.pre as usize];
    // The idle stack: the most recently used on top.
    let mut idle: Vec<usize> = (0..run.pre as usize).rev().collect();
    let mut connecting = 0u32;
    let mut waiting: VecDeque<u64> = VecDeque::new();
    let mut in_flight = 0u32;
    let mut fifo_free = 0u64;
    let mut sends = 0u64;
    // The engine: free again at `engine_free`; its work since the last load sample.
    let mut engine_free = 0u64;
    let (mut work, mut sample_at) = (0u64, 50 * MS);
    let mut out = Outcome {
        peak_open: run.pre,
        ..Outcome::default()
    };
    let end = run.duration_ns + run.tail_ns;
    while let Some(Reverse((t, ev))) = heap.pop() {
        if t > end {
            break;
        }
        // A descheduled engine handles what happened in the window at its end.
        let mut now = match run.late {
            Some((from, until)) if t >= from && t < until => until,
            _ => t,
        };
        if run.cost_ns > 0 {
            now = now.max(engine_free);
            engine_free = now + run.cost_ns;
            work += run.cost_ns;
            while now >= sample_at {
                pool.pacer_load(work, 50 * MS);
                work = 0;
                sample_at += 50 * MS;
            }
        }
        let n_open = open.iter().filter(|o| **o).count() as u32;
        let state = PoolState {
            idle: idle.len() as u32,
            open: n_open,
            connecting,
            waiting: waiting.len() as u32,
            in_flight,
        };
        let mut send = |c: usize, now: u64, busy: &mut Vec<Option<u64>>, used: &mut Vec<bool>| {
            busy[c] = Some(now);
            used[c] = true;
            sends += 1;
            let ready = match server.serving {
                Serving::Parallel(f) => now + f(now),
                Serving::Mixed { every, fast, slow } => {
                    now + if sends % every == 0 { fast } else { slow }
                }
                Serving::Fifo(service) => {
                    fifo_free = fifo_free.max(now) + service;
                    fifo_free
                }
            };
            let done = match server.stall {
                Some((from, until)) if ready >= from && now < until => ready.max(until),
                _ => ready,
            };
            heap.push(Reverse((done, Ev::Done(c))));
        };
        let late_check = |due: u64, now: u64, out: &mut Outcome| {
            out.max_lag = out.max_lag.max(now - due);
            if now - due > MS {
                out.late += 1;
                out.last_late = due;
            }
        };
        match ev {
            Ev::Due(_) => {
                // Shrink: the least recently used idle connection first.
                while let Some(&lru) = idle.first() {
                    let n_open = open.iter().filter(|o| **o).count() as u32;
                    let s = PoolState {
                        idle: idle.len() as u32,
                        open: n_open,
                        ..state
                    };
                    if !pool.close_idle(now, s, idle_since[lru]) {
                        break;
                    }
                    idle.remove(0);
                    open[lru] = false;
                    out.closed += 1;
                }
                let n_open = open.iter().filter(|o| **o).count() as u32;
                let s = PoolState {
                    idle: idle.len() as u32,
                    open: n_open,
                    ..state
                };
                let a = pool.admit(now, s);
                match a {
                    Admit::Drop { open: k } => {
                        out.dropped += 1;
                        for _ in 0..k {
                            connecting += 1;
                            heap.push(Reverse((now + connect_ns, Ev::Connected)));
                        }
                    }
                    Admit::Send { open: k } => {
                        in_flight += 1;
                        out.sent += 1;
                        let c = idle.pop().unwrap();
                        send(c, now, &mut busy, &mut used);
                        for _ in 0..k {
                            connecting += 1;
                            heap.push(Reverse((now + connect_ns, Ev::Connected)));
                        }
                    }
                    Admit::Wait { open: k, full } => {
                        in_flight += 1;
                        out.sent += 1;
                        out.waited += 1;
                        out.full += u64::from(full);
                        out.last_wait = now;
                        waiting.push_back(now);
                        for _ in 0..k {
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
                out.done += 1;
                out.last_done = now;
                if pool.close_on_free(state) {
                    open[c] = false;
                    out.closed += 1;
                    continue;
                }
                match waiting.pop_front() {
                    Some(due) => {
                        late_check(due, now, &mut out);
                        send(c, now, &mut busy, &mut used)
                    }
                    None => {
                        idle_since[c] = now;
                        idle.push(c);
                    }
                }
            }
            Ev::Connected => {
                connecting -= 1;
                open.push(true);
                busy.push(None);
                idle_since.push(now);
                used.push(false);
                let c = open.len() - 1;
                let n_open = open.iter().filter(|o| **o).count() as u32;
                out.peak_open = out.peak_open.max(n_open);
                out.growth.push((now, n_open));
                match waiting.pop_front() {
                    Some(due) => {
                        late_check(due, now, &mut out);
                        send(c, now, &mut busy, &mut used)
                    }
                    None => idle.push(c),
                }
                let s = PoolState {
                    idle: idle.len() as u32,
                    open: n_open,
                    connecting,
                    waiting: waiting.len() as u32,
                    in_flight,
                };
                let k = pool.to_open(s);
                for _ in 0..k {
                    connecting += 1;
                    heap.push(Reverse((now + connect_ns, Ev::Connected)));
                }
                out.peak_connecting = out.peak_connecting.max(connecting);
            }
        }
    }
    out.final_open = open.iter().filter(|o| **o).count() as u32;
    out.used = used.iter().filter(|u| **u).count();
    out.knee = pool.knee();
    out.probes = pool.probes();
    out
}

fn instant(_: u64) -> u64 {
    50 * US
}

fn twenty_ms(_: u64) -> u64 {
    20 * MS
}

/// A saturated FIFO server (1 ms each: capacity 1000 req/s) offered 1100
/// req/s for 10 s on 16 pre-opened connections. The base is 1 ms (the
/// warm-up's), so Little's law wants 1100 x 1 ms x 1.5 + 2 = 4: nothing.
/// Every request waits, so the pool probes: 16 -> 20 connections leave
/// completions at 1000/s, the probe is refused, the knee is 1000/s with 16
/// connections, the 4 close between requests, and no probe comes back for
/// 5 s: the peak is 20 and the run ends with 16.
#[test]
fn a_saturated_fifo_server_never_grows_the_pool() {
    let server = Server {
        serving: Serving::Fifo(MS),
        stall: None,
    };
    let run = Run {
        seed_ns: Some(MS),
        ..Run::new(1100.0, 10 * S, 16)
    };
    let o = simulate(run, &server);
    assert_eq!((o.sent, o.dropped), (11_000, 0));
    assert!(o.peak_open <= 16 + MAX_CONNECTING, "{o:?}");
    assert_eq!(o.final_open, 16, "{:?}", o.growth);
    let knee = o.knee.expect("a knee");
    assert_eq!(knee.connections, 16);
    assert!((knee.completions_per_s - 1000.0).abs() < 20.0, "{knee:?}");
    assert!(knee.probe_per_s < 1020.0, "{knee:?}");
    assert_eq!(o.probes.kept, 0, "{o:?}");
    assert!(o.probes.refused >= 1, "{o:?}");
}

/// The same at high rate: a FIFO server of capacity 100k req/s (10 us)
/// offered 110k on the 74 connections the default pre-opens there: never
/// above one probe step (74 / 4 = 19) over the pre-opened count.
#[test]
fn a_saturated_fast_server_never_grows_the_pool() {
    let server = Server {
        serving: Serving::Fifo(10 * US),
        stall: None,
    };
    let run = Run {
        seed_ns: Some(40 * US),
        ..Run::new(110_000.0, 5 * S, 74)
    };
    let o = simulate(run, &server);
    assert_eq!(o.sent + o.dropped, 550_000);
    assert!(o.peak_open <= 74 + 19, "{} {:?}", o.peak_open, o.growth);
    assert_eq!(o.final_open, 74);
    let knee = o.knee.expect("a knee");
    assert!(
        (knee.completions_per_s - 100_000.0).abs() < 2_000.0,
        "{knee:?}"
    );
}

/// A parallel server, 20 ms per request, at 5k req/s: 100 in flight. The
/// warm-up measured 20 ms, so the pool goes at once toward 5k x 20 ms x
/// 1.5 + 2 = 152 connections, a few connects at a time, and holds them:
/// no probe is needed, no connection closes, and after the first 200 ms no
/// request waits.
#[test]
fn a_server_that_needs_concurrency_gets_it_at_once() {
    let server = Server {
        serving: Serving::Parallel(twenty_ms),
        stall: None,
    };
    let run = Run {
        seed_ns: Some(20 * MS),
        ..Run::new(5_000.0, 5 * S, 16)
    };
    let o = simulate(run, &server);
    assert_eq!((o.sent, o.dropped), (25_000, 0));
    assert!(o.peak_connecting <= MAX_CONNECTING);
    assert!((100..=152).contains(&o.peak_open), "{o:?}");
    assert_eq!(o.closed, 0);
    assert!(o.last_wait < 200 * MS, "waited until {} ns", o.last_wait);
    assert!(o.knee.is_none());
}

/// A parallel server where one request in 5 takes 1 ms and the rest 20
/// ms (a cache in front of it): the base, a minimum, says
/// 5k x 1 ms x 1.5 + 2 = 10, below the 16 pre-opened, yet requests wait (81 in flight are
/// needed), and answers keep coming (no stall). Probes find that each step
/// carries proportionally more (completions rise with connections), keep
/// them, and stop once completions reach 95% of the offered rate (the
/// backlog then drains): the pool ends above the 81 in flight the server
/// needs, every request is sent, and requests stop waiting
/// within 3 s. (At the start 10 ms pass with no answer while requests
/// wait, a stall: the pool grows for those requests first.)
#[test]
fn a_server_that_needs_concurrency_gets_it_by_probes() {
    let server = Server {
        serving: Serving::Mixed {
            every: 5,
            fast: MS,
            slow: 20 * MS,
        },
        stall: None,
    };
    let run = Run {
        seed_ns: Some(MS),
        ..Run::new(5_000.0, 6 * S, 16)
    };
    let o = simulate(run, &server);
    assert_eq!((o.sent, o.dropped), (30_000, 0));
    assert!(o.probes.kept >= 2, "{o:?}");
    assert!(o.peak_open >= 81, "{} {:?}", o.peak_open, o.growth);
    assert!(o.peak_open <= 400, "{} {:?}", o.peak_open, o.growth);
    assert!(o.last_wait < 3 * S, "waited until {} ns", o.last_wait);
    assert!(o.knee.is_none(), "{:?}", o.knee);
}

/// An instant server (50 us) that holds every answer for 5 ms at 1 s, at
/// 110k req/s on 74 connections: 550 requests come due in the stall. The
/// base does not move and nothing completes during it, so the pool does
/// not grow (at most one probe step, refused or closed after), and by the
/// end nothing a slow spell opened is left.
#[test]
fn a_five_ms_stall_grows_nothing() {
    let server = Server {
        serving: Serving::Parallel(instant),
        stall: Some((S, S + 5 * MS)),
    };
    let run = Run {
        seed_ns: Some(50 * US),
        ..Run::new(110_000.0, 3 * S, 74)
    };
    let o = simulate(run, &server);
    assert_eq!((o.sent, o.dropped), (330_000, 0));
    assert!(o.waited > 400, "{o:?}");
    assert!(o.peak_open <= 74 + 19, "{} {:?}", o.peak_open, o.growth);
    assert_eq!(o.final_open, 74);
}

fn slow_spell(t: u64) -> u64 {
    if (S..2 * S).contains(&t) {
        20 * MS
    } else {
        50 * US
    }
}

/// A parallel server slow (20 ms) for one second in a 5 s run at 2k req/s
/// (40 in flight needed then) on 16 connections: probes grow the pool
/// during the spell; a second after it ends the connections it opened have
/// been idle for [`QUIET_NS`] and close, least recently used first, back
/// to the 16 pre-opened.
#[test]
fn a_slow_spell_connections_close_after_it() {
    let server = Server {
        serving: Serving::Parallel(slow_spell),
        stall: None,
    };
    let run = Run {
        seed_ns: Some(50 * US),
        ..Run::new(2_000.0, 5 * S, 16)
    };
    let o = simulate(run, &server);
    assert_eq!((o.sent, o.dropped), (10_000, 0));
    assert!(o.peak_open >= 40, "{} {:?}", o.peak_open, o.growth);
    assert!(o.closed as u64 >= u64::from(o.peak_open - 16), "{o:?}");
    assert_eq!(o.final_open, 16, "{o:?}");
    assert!(o.last_wait < 2 * S + 100 * MS, "{o:?}");
}

/// A pacer that is itself the bottleneck: each event (a send, an answer)
/// costs it 4.6 us, so at 110k req/s it needs 1.01 s a second and reaps
/// every answer later and later. The observed service time rises without
/// bound, requests wait, but it reports itself bound (over 80% busy) and
/// no probe starts: the pool stays at its 74.
#[test]
fn a_pacer_that_is_the_bottleneck_grows_nothing() {
    let server = Server {
        serving: Serving::Parallel(instant),
        stall: None,
    };
    let run = Run {
        seed_ns: Some(50 * US),
        cost_ns: 4_600,
        ..Run::new(110_000.0, 2 * S, 74)
    };
    let o = simulate(run, &server);
    assert!(o.waited > 1_000, "{o:?}");
    assert_eq!(o.peak_open, 74, "{:?}", o.growth);
    assert_eq!(o.probes.kept + o.probes.refused, 0);
}

/// At 1 req/s the most recently used connection carries every request
/// (LIFO): of 16 pre-opened, one is used, the others stay idle for the
/// server to time out without anyone waiting on them.
#[test]
fn at_a_low_rate_one_connection_carries_the_load() {
    let server = Server {
        serving: Serving::Parallel(instant),
        stall: None,
    };
    let o = simulate(Run::new(1.0, 15 * S, 16), &server);
    assert_eq!(o.sent, 15);
    assert_eq!(o.used, 1);
    assert_eq!(o.final_open, 16);
}

/// 90k req/s for 1 s, 16 connections pre-opened, the server holds every
/// response for 1 ms at 0.5 s: ~90 requests wait, and the pool does not
/// grow at all.
#[test]
fn a_millisecond_transient_does_not_grow_the_pool() {
    let server = Server {
        serving: Serving::Parallel(instant),
        stall: Some((500 * MS, 501 * MS)),
    };
    let run = Run {
        seed_ns: Some(50 * US),
        max_in_flight: 10_000,
        ..Run::new(90_000.0, S, 16)
    };
    let o = simulate(run, &server);
    assert_eq!((o.sent, o.dropped), (90_000, 0));
    assert!(o.waited > 50, "{o:?}");
    assert_eq!(o.peak_open, 16, "{:?}", o.growth);
    assert_eq!(o.full, 0);
}

/// The same run with the generator descheduled for 100 ms at 0.5 s: 9000
/// requests come due at once and every completion is reaped 100 ms late,
/// and the pool still does not spiral (one probe step at most).
#[test]
fn a_descheduled_generator_does_not_spiral() {
    let server = Server {
        serving: Serving::Parallel(instant),
        stall: None,
    };
    let run = Run {
        seed_ns: Some(50 * US),
        late: Some((500 * MS, 600 * MS)),
        ..Run::new(90_000.0, S, 16)
    };
    let o = simulate(run, &server);
    assert_eq!((o.sent, o.dropped), (90_000, 0));
    assert!(o.waited > 8_000, "{o:?}");
    assert!(
        o.peak_open <= 16 + MAX_CONNECTING,
        "{} {:?}",
        o.peak_open,
        &o.growth[..o.growth.len().min(20)]
    );
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
        serving: Serving::Parallel(ten),
        stall: None,
    };
    let run = Run {
        max: 2,
        max_in_flight: 12,
        ..Run::new(1000.0, 100 * MS, 2)
    };
    let o = simulate(run, &server);
    assert_eq!(o.peak_open, 2);
    assert_eq!(o.sent + o.dropped, 100);
    // 2 sent at once, then 10 waiting; each 10 ms two leave and two of the
    // next ten due get in: 12 + 2 x (99 ms / 10 ms) = 30 admitted.
    assert_eq!(o.sent, 30, "{o:?}");
    assert_eq!(o.waited, 28);
    assert_eq!(o.full, 28);
}

/// QUIET_NS is what the docs say: one second.
#[test]
fn quiet_interval_is_one_second() {
    assert_eq!(QUIET_NS, S);
}

fn one_ms(_: u64) -> u64 {
    MS
}

/// A 600 ms stall of a 1 ms server at 200 req/s on 8 connections: nothing
/// answers during it, which no saturated server does, so once requests
/// have waited 10 ms with no answer each waiting request gets a connection
/// (a few connects at a time) and reaches the server near its intended
/// time: the pool grows toward the stall's backlog (120 requests), and
/// a second after the stall the connections it opened have aged out.
#[test]
fn a_stall_grows_for_its_backlog_and_shrinks_after() {
    let server = Server {
        serving: Serving::Parallel(one_ms),
        stall: Some((300 * MS, 900 * MS)),
    };
    let run = Run {
        seed_ns: Some(MS),
        ..Run::new(200.0, 3 * S, 8)
    };
    let o = simulate(run, &server);
    assert_eq!((o.sent, o.dropped), (600, 0));
    let first = o.growth.first().unwrap().0;
    assert!((340 * MS..360 * MS).contains(&first), "{first}");
    assert!(
        (100..=130).contains(&o.peak_open),
        "{} {:?}",
        o.peak_open,
        o.growth
    );
    // Only requests due in the first ~15 ms of waiting were late.
    assert!(o.late <= 8, "{} late", o.late);
    assert_eq!(o.final_open, 8, "{o:?}");
    assert!(o.knee.is_none());
}

/// A server that never answers, at 40 req/s for 0.5 s on 4 connections:
/// every request still goes out on time, as a fixed pool of 4 could not:
/// the 4th (75 ms) takes the last idle connection with nothing answered
/// for a stall's length, so a spare opens for the next, and so on (the
/// last request's spare is the 21st connection).
#[test]
fn a_silent_server_gets_every_request_on_time() {
    fn never(_: u64) -> u64 {
        100 * S
    }
    let server = Server {
        serving: Serving::Parallel(never),
        stall: None,
    };
    let o = simulate(Run::new(40.0, S / 2, 4), &server);
    assert_eq!((o.sent, o.dropped), (20, 0));
    assert_eq!(o.peak_open, 21, "{:?}", o.growth);
    assert_eq!((o.waited, o.late), (0, 0), "{o:?}");
}

/// A server that completes what is offered is short of nothing: a pacing
/// thread at 110k req/s whose due requests all find every one of its 74
/// connections busy (a pacer that reaps in batches makes them look busy)
/// while answers come back at the offered rate. More connections could not
/// raise what completes, so no probe starts and no knee is named (a probe
/// could only be refused there, and would call the offered rate a knee).
/// The same at 80% of the offered rate does probe.
#[test]
fn a_server_that_keeps_up_gets_no_probe_and_no_knee() {
    let run = |completed_share: f64| {
        let mut pool = Pool::new(110_000.0, 74, 1024, 100_000);
        pool.seed(50 * US);
        let busy = PoolState {
            idle: 0,
            open: 74,
            connecting: 0,
            waiting: 3,
            in_flight: 77,
        };
        let gap = 1e9 / 110_000.0;
        let mut next_answer = 0.0;
        let mut most_wanted = 0;
        for i in 0..220_000u64 {
            let now = (i as f64 * gap) as u64;
            while next_answer <= now as f64 {
                pool.observe(next_answer as u64, 60 * US);
                next_answer += gap / completed_share;
            }
            pool.admit(now, busy);
            most_wanted = most_wanted.max(pool.wanted());
        }
        (pool, most_wanted)
    };
    let (keeps_up, most) = run(1.0);
    assert_eq!(keeps_up.probes().kept + keeps_up.probes().refused, 0);
    assert!(keeps_up.knee().is_none());
    assert_eq!(most, 74);
    // Completing 80% of the offer, the same pool probes (a step of 19).
    let (_, most) = run(0.8);
    assert_eq!(most, 74 + 19);
}

fn stream_820_ms(_: u64) -> u64 {
    820 * MS
}

/// A stream server that takes 820 ms per request, every time, in
/// parallel (`serve --sse --tokens 20 --ttft 200ms --itl 30ms`), at 10
/// req/s on 4 pre-opened connections (a user's `-c 4`) with no warm-up
/// measure. The 4th request (at 300 ms) takes the last idle connection
/// when nothing has answered for 300 ms, a stall's length: a spare opens,
/// and the 5th finds it, and so on until the first answer (820 ms) frees
/// a connection for the 9th: no request waits, the send lag stays 0, and
/// the pool holds the 10 the start needed (Little's law: 8.2 in flight),
/// with no probe. (Before, the 5th request waited, and the stall was seen
/// only at the next admission: 100 ms of send lag.) The same when a warm-up
/// measured the 820 ms: the pool aims at 10 x 0.82 x 1.5 + 2 = 15, and a
/// request that takes the last idle connection below that opens the
/// spare (before, each 5th to 9th request waited for its connect).
#[test]
fn a_server_that_has_not_answered_yet_gets_connections_at_once() {
    let server = Server {
        serving: Serving::Parallel(stream_820_ms),
        stall: None,
    };
    for seed_ns in [None, Some(820 * MS)] {
        let run = Run {
            seed_ns,
            ..Run::new(10.0, 3 * S, 4)
        };
        let o = simulate(run, &server);
        assert_eq!((o.sent, o.dropped, o.waited), (30, 0, 0), "{o:?}");
        assert_eq!((o.late, o.max_lag), (0, 0), "{o:?}");
        assert_eq!((o.peak_open, o.final_open), (10, 10), "{:?}", o.growth);
        assert_eq!(o.probes, metronome_core::pool::Probes::default());
        assert!(o.knee.is_none());
    }
}
