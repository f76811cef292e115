//! Allocation on a warm connection (a binary of its own: the counting
//! allocator is process-wide). `metronome-quic`'s own per-request work
//! allocates nothing once its flights are recycled: handing out the ends,
//! expiring, `free()`, `state()`. What `start`, the datagrams and the
//! timers allocate is `quinn-proto`'s (its stream state, the copy of the
//! request in its send buffer, its frames and ACK ranges; and, rarely, a
//! new 64 KiB receive buffer of ours while quinn holds the old one):
//! counted and printed here, for the io_uring engine's zero-allocation
//! promise.

mod common;

use common::*;
use metronome_testkit::{count_on_this_thread, Counting, ALLOCATIONS};
use std::sync::atomic::Ordering;

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn a_warm_connection_allocates_nothing_of_its_own() {
    let mut p = Pair::new(100, 16_384);
    let mut block = [0u8; 64];
    let n = encode_request(b"GET", b"https", b"localhost", b"/", &[], false, &mut block).unwrap();
    let req = Request {
        block: &block[..n],
        body: &[],
    };
    const BATCH: u64 = 20;
    for round in 0..4u64 {
        // Rounds 0 to 2 warm the flights, maps and buffers; round 3 counts.
        let measured = round == 3;
        p.counting = measured;
        ALLOCATIONS.swap(0, Ordering::Relaxed);
        for i in 0..BATCH {
            let job = Job {
                id: round * BATCH + i,
                retried: false,
            };
            let stamp = p.stamp;
            counted(measured, || p.client.start(job, req, stamp)).unwrap();
        }
        p.pump();
        let ids: Vec<_> = p.server.requests.drain(..).collect();
        assert_eq!(ids.len() as u64, BATCH);
        for id in ids {
            p.answer(id, 200);
        }
        p.counting = false;
        let quinn = ALLOCATIONS.swap(0, Ordering::Relaxed);
        count_on_this_thread(true);
        let mut answered = 0;
        while let Some(end) = p.client.poll_end() {
            if matches!(end.how, How::Answered(Finish::Ok)) {
                answered += 1;
            }
        }
        let next = p.client.expire(p.stamp, 1_000_000_000, u64::MAX);
        let free = p.client.free();
        let state = p.client.state();
        count_on_this_thread(false);
        let ours = ALLOCATIONS.swap(0, Ordering::Relaxed);
        assert_eq!(
            (answered, next, free, state),
            (BATCH, u64::MAX, 100, State::Live)
        );
        if measured {
            assert_eq!(ours, 0, "poll_end, expire, free, state allocated");
            eprintln!(
                "{quinn} allocations for {BATCH} warm requests in start, datagram, \
                 poll_transmit and handle_timeout (quinn-proto's): {:.1} per request",
                quinn as f64 / BATCH as f64
            );
        }
    }
}
