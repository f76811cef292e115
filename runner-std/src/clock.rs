//! The monotonic clock of a run and per-thread CPU time.

use std::time::{Duration, Instant};

use metronome_core::pace::SpinMeter;

use crate::sys;

/// Nanoseconds since the run start, on the monotonic clock.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    start: Instant,
}

impl Clock {
    /// A clock whose zero is now.
    pub fn start() -> Clock {
        Clock {
            start: Instant::now(),
        }
    }

    /// A clock whose zero is `start`.
    pub fn at(start: Instant) -> Clock {
        Clock { start }
    }

    /// Nanoseconds elapsed since the zero.
    pub fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Busy-waits until `target_ns`; returns the time then and how long this
    /// thread actually spun, by core's [`SpinMeter`] rule.
    pub fn spin_until(&self, target_ns: u64) -> (u64, u64) {
        let mut meter = SpinMeter::start(self.now_ns());
        while meter.now_ns() < target_ns {
            std::hint::spin_loop();
            meter.tick(self.now_ns());
        }
        (meter.now_ns(), meter.spun_ns())
    }

    /// Sleeps until `until_ns` (returns at once when it has passed).
    pub fn sleep_until(&self, until_ns: u64) {
        let now = self.now_ns();
        if until_ns > now {
            std::thread::sleep(Duration::from_nanos(until_ns - now));
        }
    }
}

/// Measures how late `std::thread::sleep` wakes on this machine: the worst
/// of a few short sleeps, plus a margin, capped at 2 ms. The std engine
/// spins at least this long before each intended send, so a late wake-up
/// lands inside the busy-wait instead of after the send time.
pub fn sleep_overshoot_ns() -> u64 {
    let mut worst = 0u64;
    for _ in 0..16 {
        let t = Instant::now();
        std::thread::sleep(Duration::from_micros(200));
        let late = t.elapsed().as_nanos() as u64 - 200_000;
        worst = worst.max(late);
    }
    (worst + 20_000).min(2_000_000)
}

/// CPU time consumed by the calling thread, in nanoseconds
/// (`CLOCK_THREAD_CPUTIME_ID`); 0 where the platform has no such clock.
pub fn thread_cpu_ns() -> u64 {
    sys::cpu_clock_ns(sys::libc_clock::THREAD)
}

/// CPU time consumed by the whole process, in nanoseconds
/// (`CLOCK_PROCESS_CPUTIME_ID`); 0 where the platform has no such clock.
pub fn process_cpu_ns() -> u64 {
    sys::cpu_clock_ns(sys::libc_clock::PROCESS)
}
