//! The event loop's threads allocate nothing between the start of the
//! clock and the end of the loop, on both engines (the loop is one,
//! `metronome-loop`; the std engine's readiness ring and the io_uring ring
//! are what differ): a counting global allocator, switched on per thread by
//! the engine's phase hook.

#[path = "../runner-uring/tests/common/mod.rs"]
mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[cfg(target_os = "linux")]
use common::uring_available;
use common::{plan, Behaviour, Server, TlsServer};
use metronome_core::engine::{request_queue, Control, EngineError, LiveReader, RunOutput};
use metronome_core::plan::{Model, Plan};
use metronome_std::{Options, Phase};
use metronome_testkit::{count_on_this_thread, Counting, ALLOCATIONS};

/// An engine's entry point on the event loop.
type Engine = fn(&Plan<'_>, &Control, &Options) -> Result<RunOutput, EngineError>;

static MEASURING_THREADS: AtomicU64 = AtomicU64::new(0);

// The counter is process-wide: this test is a binary of its own, so that
// no other test's threads allocate under it (metronome-testkit).
#[global_allocator]
static GLOBAL: Counting = Counting;

fn hook(phase: Phase) {
    match phase {
        Phase::Measuring => {
            MEASURING_THREADS.fetch_add(1, Ordering::Relaxed);
            count_on_this_thread(true);
        }
        Phase::Draining => {}
        Phase::Done => count_on_this_thread(false),
    }
}

/// A regex-automata dense DFA as core's body matcher (the CLI's, in
/// src/run/check.rs, is the same walk).
#[derive(Debug)]
struct Dfa(regex_automata::dfa::dense::DFA<Vec<u32>>, u32);

impl metronome_core::check::BodyMatcher for Dfa {
    fn start(&self) -> u32 {
        self.1
    }
    fn step(&self, state: u32, bytes: &[u8]) -> u32 {
        use regex_automata::dfa::Automaton;
        let mut s = regex_automata::util::primitives::StateID::new_unchecked(state as usize);
        for &b in bytes {
            s = self.0.next_state(s, b);
        }
        s.as_u32()
    }
    fn matched_at_end(&self, state: u32) -> bool {
        use regex_automata::dfa::Automaton;
        let s = regex_automata::util::primitives::StateID::new_unchecked(state as usize);
        self.0.is_match_state(s) || self.0.is_match_state(self.0.next_eoi_state(s))
    }
    fn matched(&self, _: u32) -> bool {
        false
    }
}

/// Request 0: status 200, `content-length: 2`, body "ok" and /^o+k$/;
/// request 1: also a body "nope" it fails.
fn checks() -> &'static [metronome_core::check::Check] {
    use metronome_core::check::{Check, HeaderCheck, Substring};
    use regex_automata::dfa::Automaton;
    static OK: [u32; 2] = Substring::table_of(b"ok");
    static NOPE: [u32; 4] = Substring::table_of(b"nope");
    let dfa = regex_automata::dfa::dense::DFA::new("^o+k$").unwrap();
    let start = dfa
        .start_state(&regex_automata::util::start::Config::new())
        .unwrap()
        .as_u32();
    let re: &'static Dfa = Box::leak(Box::new(Dfa(dfa, start)));
    let good = Check {
        status: Some((200, 200)),
        header: Some(HeaderCheck {
            name: b"content-length",
            value: Some(b"2"),
        }),
        body: Some(Substring::new(b"ok", &OK)),
        regex: Some(re),
    };
    let bad = Check {
        body: Some(Substring::new(b"nope", &NOPE)),
        ..good.clone()
    };
    Box::leak(vec![good, bad].into_boxed_slice())
}

/// One test function runs every case on each engine one after the
/// other, so the global counter belongs to one run at a time.
#[test]
fn engine_threads_allocate_nothing_while_measuring() {
    eprintln!("engine std");
    cases(metronome_std::run_on);
    #[cfg(target_os = "linux")]
    if uring_available() {
        eprintln!("engine uring");
        cases(metronome_uring::run);
    }
}

/// Every case on the engine `run`.
fn cases(run: Engine) {
    let opts = Options {
        threads: Some(2),
        phase_hook: Some(hook),
        ..Options::default()
    };

    // Open model with connection growth (1 pre-opened per thread, a 5 ms
    // server: several requests in flight), a timeout or two, and warmup.
    let server = Server::start(Behaviour {
        delay: Duration::from_millis(5),
        ..Behaviour::default()
    });
    let mut p = plan(server.addr, 1000.0, Duration::from_millis(500));
    p.connections = 2;
    p.max_connections = 64;
    p.warmup_ns = 100_000_000;
    // Every request's record into a queue (`--out-requests`) with room for all.
    let (feed, drain) = request_queue(1024);
    let control = Control {
        requests: Some(feed),
        ..Control::default()
    };
    let out = run(&p, &control, &opts).unwrap();
    assert_eq!(out.recorder.scheduled, 500);
    assert_eq!(std::iter::from_fn(|| drain.try_next()).count(), 500);
    assert_eq!(drain.dropped(), 0);
    assert_eq!(out.recorder.ok, 500);
    assert!(
        out.connections_opened > 2,
        "no growth: {}",
        out.connections_opened
    );
    assert_eq!(MEASURING_THREADS.swap(0, Ordering::Relaxed), 2);
    assert_eq!(
        ALLOCATIONS.swap(0, Ordering::Relaxed),
        0,
        "allocations in the open run"
    );

    // Intervals of 20 ms: dozens close (compacted into the series' chunk
    // reserved before the clock) while measuring, and the drain's follow.
    let server = Server::start(Behaviour::default());
    let mut p = plan(server.addr, 500.0, Duration::from_millis(600));
    p.interval_ns = 20_000_000;
    // A queue of 16 records that nobody drains: the rest are dropped and
    // counted, without allocating either.
    let (feed, drain) = request_queue(16);
    let control = Control {
        requests: Some(feed),
        ..Control::default()
    };
    let out = run(&p, &control, &opts).unwrap();
    assert_eq!(out.recorder.ok, 300);
    assert_eq!(std::iter::from_fn(|| drain.try_next()).count(), 16);
    assert_eq!(drain.dropped(), 300 - 16);
    assert!(out.intervals.compacted_bytes() > 0, "no interval closed");
    assert_eq!(MEASURING_THREADS.swap(0, Ordering::Relaxed), 2);
    assert_eq!(
        ALLOCATIONS.swap(0, Ordering::Relaxed),
        0,
        "allocations while intervals close"
    );

    // Live intervals with the whole-run histograms so far (one name's
    // too), for a watcher that takes them as they come: 100 ms intervals
    // close a second after their end, from 1.1 s on.
    let server = Server::start(Behaviour::default());
    let mut p = plan(server.addr, 300.0, Duration::from_millis(1600));
    p.interval_ns = 100_000_000;
    p.names = &[0];
    let control = Control::default();
    control.progress.live.enable_so_far();
    let done = std::sync::atomic::AtomicBool::new(false);
    let (out, (handed, most)) = std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let mut reader = LiveReader::default();
            let mut most = 0;
            while !done.load(Ordering::Acquire) {
                reader.poll(&control.progress.live, |_, _, so_far| {
                    let so_far = so_far.expect("so-far histograms on");
                    most = most.max(so_far.names[0].latency.count());
                });
                std::thread::sleep(Duration::from_millis(5));
            }
            (reader.next(), most)
        });
        let out = run(&p, &control, &opts).unwrap();
        done.store(true, Ordering::Release);
        (out, watcher.join().unwrap())
    });
    assert_eq!(out.recorder.ok, 480);
    // Up to 6 close in time; a loaded machine may stall the watcher.
    assert!(handed >= 2 && most > 0, "{handed} live, {most} so far");
    assert!(most <= out.names[0].latency.count());
    assert_eq!(MEASURING_THREADS.swap(0, Ordering::Relaxed), 2);
    assert_eq!(
        ALLOCATIONS.swap(0, Ordering::Relaxed),
        0,
        "allocations while copying live intervals so far"
    );

    // Live intervals of 20 ms for a watcher that takes nothing for the
    // first 600 ms (issue 33): the threads copy batches of closed
    // intervals, rebuild those their series compacted meanwhile from the
    // compacted records, and the watcher catches up.
    let server = Server::start(Behaviour::default());
    let mut p = plan(server.addr, 300.0, Duration::from_millis(1200));
    p.interval_ns = 20_000_000;
    let control = Control::default();
    control.progress.live.enable();
    let done = std::sync::atomic::AtomicBool::new(false);
    let (out, (handed, late)) = std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let mut reader = LiveReader::default();
            std::thread::sleep(Duration::from_millis(600));
            while !done.load(Ordering::Acquire) {
                reader.poll(&control.progress.live, |_, _, _| {});
                std::thread::sleep(Duration::from_millis(5));
            }
            (reader.next(), reader.late())
        });
        let out = run(&p, &control, &opts).unwrap();
        done.store(true, Ordering::Release);
        (out, watcher.join().unwrap())
    });
    assert_eq!(out.recorder.ok, 360);
    // 46 close before the end; the first 16 or so were compacted while
    // the watcher slept.
    eprintln!("late watcher: {handed} live, {late} late");
    assert!(handed >= 20 && late >= 1, "{handed} live, {late} late");
    assert_eq!(MEASURING_THREADS.swap(0, Ordering::Relaxed), 2);
    assert_eq!(
        ALLOCATIONS.swap(0, Ordering::Relaxed),
        0,
        "allocations while copying live intervals for a late watcher"
    );

    // Checks on every answer: the status, a header, a body substring and
    // a body regex (a regex-automata DFA, as the CLI builds it), decided
    // as the bytes arrive, without allocating; half the requests of a mix
    // fail theirs.
    static REQS2: [&[u8]; 2] = [common::REQ, common::REQ];
    let server = Server::start(Behaviour::default());
    let mut p = plan(server.addr, 500.0, Duration::from_millis(400));
    p.requests = &REQS2;
    p.checks = checks();
    let out = run(&p, &Control::default(), &opts).unwrap();
    assert_eq!(out.recorder.ok, 100);
    assert_eq!(
        out.recorder.checks[metronome_core::check::CheckFailure::Body.index()],
        100
    );
    assert_eq!(MEASURING_THREADS.swap(0, Ordering::Relaxed), 2);
    assert_eq!(
        ALLOCATIONS.swap(0, Ordering::Relaxed),
        0,
        "allocations with checks"
    );

    // Connection: close on every reply: a replacement connect per request.
    let server = Server::start(Behaviour {
        close: true,
        ..Behaviour::default()
    });
    let p = plan(server.addr, 200.0, Duration::from_millis(300));
    let out = run(&p, &Control::default(), &opts).unwrap();
    assert_eq!(out.recorder.ok, 60);
    assert_eq!(MEASURING_THREADS.swap(0, Ordering::Relaxed), 2);
    assert_eq!(
        ALLOCATIONS.swap(0, Ordering::Relaxed),
        0,
        "allocations with replacements"
    );

    // Conversations: each turn's end hands the next turn to the thread's
    // storage (reserved before the clock) and the pacer sends it after the
    // think time. Sessions 0 -> 2 -> 3 and 1, 200 sessions/s for 0.3 s.
    static REQS4: [&[u8]; 4] = [common::REQ, common::REQ, common::REQ, common::REQ];
    static NEXT: [u32; 4] = [
        2,
        metronome_core::turns::NO_TURN,
        3,
        metronome_core::turns::NO_TURN,
    ];
    let server = Server::start(Behaviour::default());
    let mut p = plan(server.addr, 200.0, Duration::from_millis(300));
    p.requests = &REQS4;
    p.turns = metronome_core::turns::Turns {
        sessions: 2,
        next: &NEXT,
        think_ns: 5_000_000,
    };
    let out = run(&p, &Control::default(), &opts).unwrap();
    let s = out.recorder.sessions;
    assert_eq!(s.started, 60);
    assert!(s.follow_ups >= 50, "{s:?}");
    assert_eq!(out.recorder.ok, out.recorder.scheduled);
    assert_eq!(MEASURING_THREADS.swap(0, Ordering::Relaxed), 2);
    assert_eq!(
        ALLOCATIONS.swap(0, Ordering::Relaxed),
        0,
        "allocations with conversations"
    );

    // Closed model.
    let server = Server::start(Behaviour::default());
    let mut p = plan(server.addr, 1.0, Duration::from_millis(200));
    p.model = Model::Closed {
        workers: 2,
        expected_interval_ns: Some(1_000_000),
    };
    let out = run(&p, &Control::default(), &opts).unwrap();
    assert!(out.recorder.ok > 10);
    assert_eq!(MEASURING_THREADS.swap(0, Ordering::Relaxed), 2);
    assert_eq!(
        ALLOCATIONS.swap(0, Ordering::Relaxed),
        0,
        "allocations in the closed run"
    );

    // HTTPS on pre-opened keep-alive connections (no growth). rustls 0.23
    // allocates one buffer per TLS record it encrypts and one per
    // application-data record it decrypts (in its buffered and unbuffered
    // APIs alike: docs/tls.md), and each connection stores the session
    // tickets of its first read once (measured: 2 per request plus 66 for
    // the 4 connections, the same 66 at 200 and 400 requests). Small
    // requests and responses are one record each.
    let server = TlsServer::start();
    let mut p = plan(server.addr, 500.0, Duration::from_millis(400));
    p.connections = 4;
    p.max_connections = 4;
    let tls_opts = Options {
        tls: Some(server.client.clone()),
        ..opts.clone()
    };
    let out = run(&p, &Control::default(), &tls_opts).unwrap();
    assert_eq!(out.recorder.ok, 200);
    assert_eq!(
        out.connections_opened, 4,
        "no connection may be opened during the run"
    );
    assert_eq!(out.setup.tls_handshake.count(), 4);
    assert_eq!(MEASURING_THREADS.swap(0, Ordering::Relaxed), 2);
    let allocations = ALLOCATIONS.swap(0, Ordering::Relaxed);
    eprintln!(
        "https: {allocations} allocations for {} requests",
        out.recorder.ok
    );
    assert!(
        allocations <= 2 * out.recorder.ok + 32 * 4,
        "https: {allocations} allocations for {} requests",
        out.recorder.ok
    );
}
