//! The progress line on stderr while a run goes, and Ctrl-C into the
//! engine's stop flag.

use std::sync::atomic::Ordering;
use std::time::Duration;

use metronome_core::engine::Control;

use crate::report::ms;

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
                "\r\x1b[2K  {elapsed:>5.1}s/{:.0}s  sent {}  ok {}  errors {}  p99 {:.2}ms  send lag p99 {:.3}ms",
                end_ns as f64 / 1e9,
                p.sent.load(Ordering::Relaxed),
                p.ok.load(Ordering::Relaxed),
                p.errors.load(Ordering::Relaxed),
                ms(p.last_p99_ns.load(Ordering::Relaxed)),
                ms(p.last_send_lag_p99_ns.load(Ordering::Relaxed)),
            );
        }
    }
    if show {
        eprint!("\r\x1b[2K");
    }
}
