//! The io_uring engine's threads allocate nothing between the start of the
//! clock and the end of the event loop over HTTP/2 either (h2c against
//! `serve --http2`, in this process): a counting global allocator, switched
//! on per thread by the engine's phase hook (as runner-uring's
//! `zero_alloc` test does for HTTP/1.1; the server's threads are not
//! counted).
#![cfg(target_os = "linux")]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use metronome::serve::ServeConfig;
use metronome_core::engine::{request_queue, Control};
use metronome_core::plan::{example_plan, EncodedRequest, Streams, Wire};
use metronome_testkit::{count_on_this_thread, Counting, ALLOCATIONS};
use metronome_uring::{run, Phase, UringOptions};

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

/// Both cases in one test function, so the counter belongs to one run at
/// a time: GETs on at most 2 streams per connection against a 5 ms server
/// (the pool grows, each new connection greeted during the run), then
/// POSTs with a body in DATA frames.
#[test]
fn uring_h2_threads_allocate_nothing_while_measuring() {
    if metronome_uring::probe().is_err() {
        eprintln!("SKIP uring_h2_threads_allocate_nothing_while_measuring: no io_uring here");
        return;
    }
    let opts = UringOptions {
        threads: Some(2),
        phase_hook: Some(hook),
        ..UringOptions::default()
    };
    let srv = common::server(ServeConfig {
        http2: true,
        service: Duration::from_millis(5),
        ..ServeConfig::default()
    });
    let get = format!("GET / HTTP/1.1\r\nHost: {}\r\n\r\n", srv.addr());
    let post = format!(
        "POST /p HTTP/1.1\r\nHost: {}\r\nContent-Length: 17\r\n\r\n{{\"hello\":\"world\"}}",
        srv.addr()
    );
    for (msg, max_streams) in [(&get, 2), (&post, 0)] {
        let mut block = vec![0u8; 512];
        let e =
            metronome_core::h2::request::from_http1(msg.as_bytes(), b"http", &mut block).unwrap();
        block.truncate(e.len);
        let h2 = [EncodedRequest {
            block: &block,
            body: &msg.as_bytes()[e.body_at..],
            list_size: e.list_size,
        }];
        let requests = [msg.as_bytes()];
        let mut p = example_plan();
        p.addr = srv.addr();
        p.requests = &requests;
        p.rate = 400.0;
        p.duration_ns = 500_000_000;
        p.warmup_ns = 100_000_000;
        p.connections = 2;
        p.max_connections = 32;
        p.wire = Wire::Http2(Streams {
            requests: &h2,
            max_streams,
        });
        // Every request's record into a queue (`--out-requests`).
        let (feed, drain) = request_queue(256);
        let control = Control {
            requests: Some(feed),
            ..Control::default()
        };
        let out = run(&p, &control, &opts).unwrap();
        assert_eq!(out.recorder.scheduled, 200);
        assert_eq!(std::iter::from_fn(|| drain.try_next()).count(), 200);
        assert_eq!(drain.dropped(), 0);
        assert_eq!(out.recorder.ok, 200, "max_streams {max_streams}");
        if max_streams == 2 {
            assert!(
                out.connections_opened > 2,
                "no growth: {}",
                out.connections_opened
            );
        }
        assert_eq!(MEASURING_THREADS.swap(0, Ordering::Relaxed), 2);
        assert_eq!(
            ALLOCATIONS.swap(0, Ordering::Relaxed),
            0,
            "allocations while measuring (max_streams {max_streams})"
        );
    }
    srv.stop();
}
