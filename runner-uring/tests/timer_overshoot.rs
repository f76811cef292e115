//! How late an io_uring timeout wakes the thread: the measurement behind
//! the default `--spin` slice. A measurement, not a check: run by hand with
//! `cargo test --release -p metronome-uring --test timer_overshoot -- --ignored --nocapture`.

#[cfg(target_os = "linux")]
#[test]
#[ignore = "a measurement, not a check"]
fn ring_timeout_overshoot() {
    use io_uring::{opcode, types, IoUring};
    use std::time::{Duration, Instant};

    if metronome_uring::probe().is_err() {
        eprintln!("SKIP: io_uring unavailable");
        return;
    }
    let mut ring = IoUring::new(8).unwrap();
    let mut late = Vec::new();
    for sleep_us in [50u64, 100, 500] {
        late.clear();
        for _ in 0..2_000 {
            let ts = types::Timespec::new().nsec((sleep_us * 1_000) as u32);
            let e = opcode::Timeout::new(&ts).build().user_data(1);
            let t = Instant::now();
            // SAFETY: `ts` outlives the operation: we wait for its completion
            // below before `ts` goes out of scope.
            unsafe { ring.submission().push(&e).unwrap() };
            ring.submit_and_wait(1).unwrap();
            let elapsed = t.elapsed();
            ring.completion().for_each(drop);
            late.push(
                elapsed
                    .saturating_sub(Duration::from_micros(sleep_us))
                    .as_nanos() as u64,
            );
        }
        late.sort_unstable();
        let q = |p: f64| late[((p * late.len() as f64) as usize).min(late.len() - 1)] / 1_000;
        println!(
            "timeout {sleep_us} us: late by p50 {} us, p90 {} us, p99 {} us, max {} us",
            q(0.5),
            q(0.9),
            q(0.99),
            late[late.len() - 1] / 1_000
        );
    }
}
