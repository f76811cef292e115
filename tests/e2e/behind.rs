//! When the open loop cannot keep its schedule, the report says from which
//! second and why (`generator.behind`, from the interval series).

use crate::common;

use std::time::Duration;

use common::{engines, run_json, server};
use metronome::serve::ServeConfig;

/// A 1 s stall 1.2 s after the first request, against 4 connections at 200
/// req/s: the 4 connections fill at once and every later request waits for
/// one, so the interval series shows the pool exhausted over the second
/// interval (1.0-2.0 s), and the warning names it.
#[test]
fn a_stall_on_few_connections_is_reported_as_pool_exhausted_in_its_second() {
    for engine in engines() {
        let srv = server(ServeConfig {
            service: Duration::from_millis(1),
            stall_at: Some(Duration::from_millis(1200)),
            stall_for: Duration::from_millis(1000),
            ..ServeConfig::default()
        });
        let r = run_json(
            srv.addr(),
            "/",
            engine,
            &[
                "--rate",
                "200",
                "--duration",
                "4s",
                "--connections",
                "4",
                "--max-connections",
                "4",
            ],
            0,
        );
        srv.stop();
        assert_eq!(r.intervals.len(), 4, "{engine}");
        // During the stall almost every request intended after the 4
        // connections filled waited (before it, at most a few behind a
        // hiccup of a loaded machine).
        assert!(r.intervals[1].waited >= 100, "{engine}: {:?}", r.intervals);
        let pool: Vec<_> = r
            .generator
            .behind
            .iter()
            .filter(|b| b.cause == "pool_exhausted")
            .collect();
        assert!(
            pool.iter().any(|b| b.from_s <= 1.0 && b.until_s >= 2.0),
            "{engine}: {:?}",
            r.generator.behind
        );
        assert!(
            r.generator
                .warnings
                .iter()
                .any(|w| w.starts_with("behind schedule from")
                    && w.contains("(pool_exhausted)")
                    && w.contains("with the pool at its limit (4 connections)")),
            "{engine}: {:?}",
            r.generator.warnings
        );
        // The pacing threads' CPU is in the series and is a share.
        assert!(
            r.intervals
                .iter()
                .all(|i| (0.0..=1.0).contains(&i.work_cpu)),
            "{engine}: {:?}",
            r.intervals
        );
        assert!(r.intervals.iter().any(|i| i.work_cpu > 0.0), "{engine}");
    }
}

/// A stream server that takes 820 ms per request, every time
/// (`serve --sse --tokens 20 --ttft 200ms --itl 30ms`), at 10 req/s on a
/// user's `-c 4`: the 5th request finds the 4 connections busy before any
/// has answered, and the pool gives it (and each after it) a connection at
/// once, as the default pool's pre-opened ones would have: no request
/// waits for a connection (the send lag was 101 ms on std, 201 ms on
/// io_uring, all of it waits), and no stretch is behind for connections (a
/// loaded host may still deschedule the pacer: that stretch is the
/// host's, and named so).
#[test]
fn a_user_pool_grows_for_a_stream_server_on_time() {
    for engine in engines() {
        let srv = server(ServeConfig {
            sse: true,
            tokens: 20,
            ttft: Duration::from_millis(200),
            itl: Duration::from_millis(30),
            ..ServeConfig::default()
        });
        let r = run_json(
            srv.addr(),
            "/",
            engine,
            &["--openai", "--rate", "10", "--duration", "3s", "-c", "4"],
            0,
        );
        srv.stop();
        common::assert_accounting(&r);
        assert_eq!((r.requests.sent, r.requests.ok), (30, 30), "{engine}");
        // More connections than the 4 were needed (8.2 in flight).
        assert!(
            r.generator.connections_opened > 4,
            "{engine}: {:?}",
            r.generator
        );
        // No request waited for a connection: each found the spare the
        // one before it opened (before, the 5th to 9th waited up to the next
        // admission, 100 ms). What send lag is left is the host's (a loaded
        // 2-core host deschedules a pacer for tens of ms): none of it is a
        // wait (`late_waiting`).
        let waited: u64 = r.intervals.iter().map(|i| i.waited).sum();
        let late_waiting: u64 = r.intervals.iter().map(|i| i.late_waiting).sum();
        assert_eq!(
            (waited, late_waiting),
            (0, 0),
            "{engine}: {:?}",
            r.intervals
        );
        let waits = ["waited", "server_slower", "pool_exhausted"];
        assert!(
            !r.generator
                .behind
                .iter()
                .any(|b| waits.contains(&b.cause.as_str())),
            "{engine}: {:?}",
            r.generator.behind
        );
    }
}
