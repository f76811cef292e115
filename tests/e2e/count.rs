//! `-n N` (issue 41 item 1): a run of the schedule's first N requests,
//! exact for any thread and shard split, on both engines; the server counts
//! exactly N (plus nothing: no warm-up request), the report says it was a
//! count, and `--duration` cuts it when it ends first.

use std::time::Duration;

use crate::common::{assert_accounting, engines, metronome, plain, run_json, server};

/// N requests sent and answered, exactly, for constant, Poisson, burst and
/// gamma arrivals over 1 and 2 threads (io_uring) and over two `--shard`
/// halves; the server saw exactly N.
#[test]
fn a_count_sends_exactly_n() {
    for engine in engines() {
        let cases: [&[&str]; 5] = [
            &["--arrival", "constant"],
            &["--arrival", "poisson", "--seed", "3", "--threads", "2"],
            &["--arrival", "burst", "--burst-size", "7", "--threads", "2"],
            &["--arrival", "gamma", "--burstiness", "0.5"],
            &["--arrival", "poisson", "--warmup", "200ms"],
        ];
        for args in cases {
            let srv = server(plain(Duration::ZERO));
            let mut all = vec!["-n", "333", "--rps", "1000", "--warm-up", "off"];
            all.extend_from_slice(args);
            let r = run_json(srv.addr(), "/", engine, &all, 0);
            assert_eq!(r.count, Some(333), "{engine} {args:?}");
            assert_eq!(r.requests.scheduled, 333, "{engine} {args:?}");
            assert_eq!(r.requests.ok, 333, "{engine} {args:?}");
            assert_accounting(&r);
            let served = srv.stop();
            // The warmup's requests are sent too, not counted in N.
            if args.contains(&"--warmup") {
                assert!(served > 333, "{engine} {args:?}: served {served}");
            } else {
                assert_eq!(served, 333, "{engine} {args:?}");
            }
        }
        // Constant arrivals: the run lasts N / rate.
        let srv = server(plain(Duration::ZERO));
        let r = run_json(srv.addr(), "/", engine, &["-n", "50", "--rate", "100"], 0);
        assert_eq!(r.planned_duration_s, 0.5, "{engine}");
        assert_eq!(r.requests.ok, 50);
        srv.stop();
    }
}

/// Two shards of one count hold exactly N between them, whatever the
/// arrival process: 0/2 and 1/2 add up.
#[test]
fn shards_of_a_count_add_up_to_n() {
    for engine in engines() {
        for arrival in ["poisson", "gamma", "burst"] {
            let srv = server(plain(Duration::ZERO));
            let mut total = 0;
            for shard in ["0/2", "1/2"] {
                let args = [
                    "-n",
                    "201",
                    "--rate",
                    "2000",
                    "--arrival",
                    arrival,
                    "--shard",
                    shard,
                    "--warm-up",
                    "off",
                ];
                let r = run_json(srv.addr(), "/", engine, &args, 0);
                assert_eq!(r.count, Some(201));
                total += r.requests.ok;
            }
            assert_eq!(total, 201, "{engine} {arrival}");
            assert_eq!(srv.stop(), 201, "{engine} {arrival}");
        }
    }
}

/// With `--duration` too, whichever ends first: 1000 requests at 100 per
/// second over 0.5 s are 50; the text says the duration cut the count.
#[test]
fn the_duration_cuts_a_count_when_it_ends_first() {
    let srv = server(plain(Duration::ZERO));
    for engine in engines() {
        let args = ["-n", "1000", "--rate", "100", "-d", "500ms"];
        let r = run_json(srv.addr(), "/", engine, &args, 0);
        assert_eq!(r.count, Some(1000));
        assert_eq!(r.requests.scheduled, 50, "{engine}");
        let url = format!("http://{}/", srv.addr());
        let out = metronome(&[
            "run", &url, "--engine", engine, "--quiet", "-n", "7", "--rate", "100",
        ]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("a count (-n): the schedule's first 7 requests"),
            "{text}"
        );
        let out = metronome(&[
            "run", &url, "--engine", engine, "--quiet", "-n", "1000", "-d", "100ms",
        ]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("cut by the duration after 10"), "{text}");
    }
    srv.stop();
}

/// Bad counts are usage errors in one line, exit 2.
#[test]
fn bad_counts_exit_2() {
    for bad in [
        &["-n", "0"][..],
        &["-n", "x"],
        &["-n", "5", "--closed", "2"],
    ] {
        let mut args = vec!["run", "http://127.0.0.1:9/"];
        args.extend_from_slice(bad);
        let out = metronome(&args);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("-n") || err.contains("--count"),
            "{bad:?}: {err}"
        );
    }
}
