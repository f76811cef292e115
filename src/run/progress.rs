//! The progress line on stderr while a run goes, and Ctrl-C into the
//! engine's stop flag.

use std::sync::atomic::Ordering;
use std::time::Duration;

use metronome_core::engine::Control;

use crate::report::enough::enough;
use crate::report::ms;
use crate::report::num::{count, num, unit};

/// Polls Ctrl-C into the engine's stop flag and draws the progress line.
pub(super) fn watch(
    control: &Control,
    done: &std::sync::atomic::AtomicBool,
    show: bool,
    end_ns: u64,
) {
    let start = std::time::Instant::now();
    let mut last_draw = start;
    while !done.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(10));
        if crate::signal::interrupted() {
            control.stop.store(true, Ordering::Relaxed);
        }
        if show && last_draw.elapsed() >= Duration::from_millis(500) {
            last_draw = std::time::Instant::now();
            let p = &control.progress;
            let elapsed = start.elapsed().as_secs_f64();
            eprint!(
                "\r\x1b[2K  {}/{}  sent {}  ok {}  errors {}  {}",
                num(elapsed),
                unit(end_ns as f64 / 1e9, "s"),
                count(p.sent.load(Ordering::Relaxed)),
                count(p.ok.load(Ordering::Relaxed)),
                count(p.errors.load(Ordering::Relaxed)),
                p99s(p),
            );
        }
    }
    if show {
        eprint!("\r\x1b[2K");
    }
}

/// The progress line's p99s of the last complete interval: `-` for one
/// with fewer than 100 samples (a p99 needs them).
fn p99s(p: &metronome_core::engine::Progress) -> String {
    let enough = |samples: u64| enough(samples, 0.99);
    let latency = if enough(p.last_samples.load(Ordering::Relaxed)) {
        unit(ms(p.last_p99_ns.load(Ordering::Relaxed)), "ms")
    } else {
        "-".to_string()
    };
    let lag = if enough(p.last_send_lag_samples.load(Ordering::Relaxed)) {
        unit(ms(p.last_send_lag_p99_ns.load(Ordering::Relaxed)), "ms")
    } else {
        "-".to_string()
    };
    format!("p99 {latency}  send lag p99 {lag}")
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use metronome_core::engine::Progress;

    use super::p99s;

    /// A p99 of fewer than 100 samples prints `-`, not 0.00ms.
    #[test]
    fn p99_needs_100_samples() {
        let p = Progress::default();
        assert_eq!(p99s(&p), "p99 -  send lag p99 -");
        p.last_p99_ns.store(2_500_000, Ordering::Relaxed);
        p.last_send_lag_p99_ns.store(40_000, Ordering::Relaxed);
        p.last_samples.store(99, Ordering::Relaxed);
        p.last_send_lag_samples.store(100, Ordering::Relaxed);
        assert_eq!(p99s(&p), "p99 -  send lag p99 0.04000 ms");
        p.last_samples.store(100, Ordering::Relaxed);
        assert_eq!(p99s(&p), "p99 2.500 ms  send lag p99 0.04000 ms");
    }
}
