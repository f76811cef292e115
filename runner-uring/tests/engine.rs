//! The io_uring engine against a loopback server started by each test.
//! Each test probes io_uring first and skips visibly when it is refused.

mod common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::{plan, uring_available, Behaviour, Server};
use metronome_core::engine::{Control, EngineError};
use metronome_core::measure::ErrorKind;
use metronome_core::plan::Model;
use metronome_uring::{run, UringOptions};

const MS: u64 = 1_000_000;

fn one_thread() -> UringOptions {
    UringOptions {
        threads: Some(1),
        ..UringOptions::default()
    }
}

#[test]
fn constant_run_has_exact_counts_and_small_send_lag() {
    if !uring_available() {
        return;
    }
    let server = Server::start(Behaviour::default());
    let p = plan(server.addr, 200.0, Duration::from_secs(1));
    let out = run(&p, &Control::default(), &UringOptions::default()).unwrap();
    let r = &out.recorder;
    assert_eq!(
        (r.scheduled, r.sent, r.ok, r.errors_total(), r.dropped),
        (200, 200, 200, 0, 0)
    );
    assert_eq!(r.latency.count(), 200);
    // Four intervals of the schedule, then the drain's.
    assert_eq!(out.intervals.schedule_len(), 4);
    let ivs = out.intervals.to_vec();
    assert_eq!(ivs.iter().map(|i| i.sent).sum::<u64>(), 200);
    assert_eq!(ivs.iter().map(|i| i.ok).sum::<u64>(), 200);
    assert_eq!(server.requests.load(Ordering::Relaxed), 200);
    let lag_p99 = r.send_lag.quantile(0.99);
    eprintln!(
        "send lag p50 {} us, p99 {} us, max {} us; cpu {} us/request; spin {} ms; threads {}",
        r.send_lag.quantile(0.5) / 1000,
        lag_p99 / 1000,
        r.send_lag.max() / 1000,
        out.cpu_ns / 200 / 1000,
        out.spin_ns / MS,
        out.threads.len()
    );
    assert!(lag_p99 < 5 * MS, "send lag p99 {lag_p99} ns");
    assert!(out.cpu_ns > 0 && out.spin_ns <= out.cpu_ns + 10 * MS);
    assert!(!out.stopped);
    assert_eq!(out.measured_ns, 1_000_000_000);
}

#[test]
fn two_threads_split_the_schedule_exactly() {
    if !uring_available() {
        return;
    }
    let server = Server::start(Behaviour::default());
    let p = plan(server.addr, 300.0, Duration::from_millis(500));
    let opts = UringOptions {
        threads: Some(2),
        ..UringOptions::default()
    };
    let out = run(&p, &Control::default(), &opts).unwrap();
    let r = &out.recorder;
    assert_eq!((r.scheduled, r.sent, r.ok), (150, 150, 150));
    assert_eq!(out.threads.len(), 2);
    assert_eq!(out.threads.iter().map(|t| t.sent).sum::<u64>(), 150);
    assert_eq!(out.connections_opened, 4);
}

#[test]
fn silent_server_gives_timeouts() {
    if !uring_available() {
        return;
    }
    let server = Server::start(Behaviour {
        silent: true,
        ..Behaviour::default()
    });
    let mut p = plan(server.addr, 40.0, Duration::from_millis(500));
    p.timeout_ns = 200 * MS;
    let t0 = Instant::now();
    let out = run(&p, &Control::default(), &one_thread()).unwrap();
    let r = &out.recorder;
    assert_eq!((r.scheduled, r.sent, r.ok, r.timeouts), (20, 20, 0, 20));
    assert_eq!(r.errors[ErrorKind::Timeout as usize], 20);
    assert!(r.latency.count() == 0);
    // The run waits up to the timeout after the end, not longer.
    assert!(
        t0.elapsed() < Duration::from_millis(1500),
        "{:?}",
        t0.elapsed()
    );
    // Timed-out connections were replaced.
    assert!(out.connections_opened > 4);
}

#[test]
fn refused_port_is_a_connect_error() {
    if !uring_available() {
        return;
    }
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let p = plan(addr, 100.0, Duration::from_millis(100));
    match run(&p, &Control::default(), &UringOptions::default()) {
        Err(EngineError::Connect(_)) => {}
        other => panic!("expected a connect error, got {other:?}"),
    }
}

#[test]
fn above_max_in_flight_requests_are_dropped() {
    if !uring_available() {
        return;
    }
    let server = Server::start(Behaviour {
        silent: true,
        ..Behaviour::default()
    });
    let mut p = plan(server.addr, 100.0, Duration::from_millis(500));
    p.max_in_flight = 5;
    p.timeout_ns = 800 * MS;
    let out = run(&p, &Control::default(), &one_thread()).unwrap();
    let r = &out.recorder;
    assert_eq!((r.scheduled, r.sent, r.dropped, r.timeouts), (50, 5, 45, 5));
    // 4 pre-opened, one more for the fifth request: the fourth took the
    // last idle connection with nothing answered for a stall's length, so
    // core's pool opened a spare then (none for a sixth, which
    // max_in_flight drops). The fifth waits only if that loopback connect
    // is not done 10 ms later.
    assert_eq!(out.peak_connections, 5);
    assert!(
        out.waited_for_connection <= 1,
        "{}",
        out.waited_for_connection
    );
}

#[test]
fn warmup_is_sent_but_not_recorded() {
    if !uring_available() {
        return;
    }
    let server = Server::start(Behaviour::default());
    let mut p = plan(server.addr, 100.0, Duration::from_millis(500));
    p.warmup_ns = 300 * MS;
    let out = run(&p, &Control::default(), &one_thread()).unwrap();
    let r = &out.recorder;
    assert_eq!((r.scheduled, r.sent, r.ok), (50, 50, 50));
    assert_eq!(server.requests.load(Ordering::Relaxed), 80);
    assert_eq!(out.intervals.schedule_len(), 2);
    let sent: u64 = out.intervals.to_vec().iter().map(|i| i.sent).sum();
    assert_eq!(sent, 50);
}

#[test]
fn the_arrival_exactly_at_the_end_is_not_sent() {
    if !uring_available() {
        return;
    }
    let server = Server::start(Behaviour::default());
    // Offsets 0 and 250 ms; 500 ms is exactly the end.
    let p = plan(server.addr, 4.0, Duration::from_millis(500));
    let out = run(&p, &Control::default(), &one_thread()).unwrap();
    assert_eq!((out.recorder.scheduled, out.recorder.ok), (2, 2));
    assert_eq!(server.requests.load(Ordering::Relaxed), 2);
}

#[test]
fn a_stall_does_not_delay_sends() {
    if !uring_available() {
        return;
    }
    // The server answers nothing between 300 and 600 ms.
    let stall = Duration::from_millis(300);
    let server = Server::start(Behaviour {
        stall: Some((Duration::from_millis(300), stall)),
        ..Behaviour::default()
    });
    let mut p = plan(server.addr, 200.0, Duration::from_millis(1000));
    p.connections = 2;
    p.max_connections = 200;
    let out = run(&p, &Control::default(), &one_thread()).unwrap();
    let r = &out.recorder;
    assert_eq!((r.scheduled, r.sent, r.ok), (200, 200, 200));
    // Requests intended inside the stall (30% of them) were still sent on
    // time, on new connections: had they waited for the stalled ones, the
    // p90 send lag would be tens of ms and the max most of the stall.
    let (p90, max) = (r.send_lag.quantile(0.90), r.send_lag.max());
    assert!(p90 < 5 * MS, "send lag p90 {p90}");
    assert!(max < 50 * MS, "send lag max {max}");
    assert!(out.peak_connections >= 50, "peak {}", out.peak_connections);
    assert!(out.waited_for_connection >= 50);
    // ...and the first of them waited for (nearly) the whole stall.
    assert!(
        r.latency.max() >= stall.as_nanos() as u64 - 30 * MS,
        "max {}",
        r.latency.max()
    );
    // 58 of the 200 requests were intended more than 10 ms before the stall's end.
    assert!(
        r.latency.quantile(0.75) > 10 * MS,
        "p75 {}",
        r.latency.quantile(0.75)
    );
}

#[test]
fn connection_close_replies_replace_the_connection() {
    if !uring_available() {
        return;
    }
    let server = Server::start(Behaviour {
        close: true,
        ..Behaviour::default()
    });
    let p = plan(server.addr, 100.0, Duration::from_millis(300));
    let out = run(&p, &Control::default(), &one_thread()).unwrap();
    let r = &out.recorder;
    assert_eq!((r.scheduled, r.ok, r.errors_total()), (30, 30, 0));
    assert!(
        out.connections_opened >= 30,
        "opened {}",
        out.connections_opened
    );
}

#[test]
fn closed_model_sends_after_each_reply() {
    if !uring_available() {
        return;
    }
    let server = Server::start(Behaviour {
        delay: Duration::from_millis(2),
        ..Behaviour::default()
    });
    let mut p = plan(server.addr, 1.0, Duration::from_millis(300));
    p.model = Model::Closed {
        workers: 2,
        expected_interval_ns: Some(MS),
    };
    let out = run(&p, &Control::default(), &UringOptions::default()).unwrap();
    let r = &out.recorder;
    assert!(r.ok > 20, "ok {}", r.ok);
    assert_eq!(r.scheduled, r.sent);
    assert!(r.ok + 2 >= r.sent && r.ok <= r.sent);
    assert!(r.corrected.count() >= r.ok);
    assert!(r.latency.min() >= 2 * MS);
    assert_eq!(out.connections_opened, 2);
}

#[test]
fn stop_flag_ends_the_run_early() {
    if !uring_available() {
        return;
    }
    let server = Server::start(Behaviour::default());
    let p = plan(server.addr, 100.0, Duration::from_secs(10));
    let control = Control::default();
    let t0 = Instant::now();
    let out = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(300));
            control.stop.store(true, Ordering::Relaxed);
        });
        run(&p, &control, &UringOptions::default()).unwrap()
    });
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert!(out.stopped);
    let r = &out.recorder;
    assert!(
        (25..=35).contains(&r.scheduled),
        "scheduled {}",
        r.scheduled
    );
    assert_eq!(r.ok, r.sent);
    assert!(out.measured_ns < 1_000_000_000);
    assert_eq!(control.progress.sent.load(Ordering::Relaxed), r.sent);
    assert_eq!(control.progress.ok.load(Ordering::Relaxed), r.ok);
}

/// By hand: `cargo test --release -p metronome-uring --test engine -- --ignored --nocapture`.
/// Prints the engine's own cost against the loopback server.
#[test]
#[ignore = "a measurement, not a check"]
fn measure_cost_per_request() {
    if !uring_available() {
        return;
    }
    let server = Server::start(Behaviour::default());
    for rate in [1_000.0, 5_000.0, 10_000.0] {
        let mut p = plan(server.addr, rate, Duration::from_secs(2));
        p.connections = 32;
        p.max_connections = 256;
        let out = run(&p, &Control::default(), &UringOptions::default()).unwrap();
        let r = &out.recorder;
        let work = out.cpu_ns.saturating_sub(out.spin_ns);
        eprintln!(
            "{rate} req/s: sent {} ok {} | cpu {:.1} us/req, work (spin excluded) {:.1} us/req | send lag p50 {} us p99 {} us max {} us | latency p50 {} us p99 {} us | threads {}",
            r.sent,
            r.ok,
            out.cpu_ns as f64 / r.sent.max(1) as f64 / 1e3,
            work as f64 / r.sent.max(1) as f64 / 1e3,
            r.send_lag.quantile(0.5) / 1000,
            r.send_lag.quantile(0.99) / 1000,
            r.send_lag.max() / 1000,
            r.latency.quantile(0.5) / 1000,
            r.latency.quantile(0.99) / 1000,
            out.threads.len(),
        );
    }
}
