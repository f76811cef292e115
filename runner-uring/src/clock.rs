//! The run's monotonic clock and the busy-wait before a send.

use std::time::Instant;

use metronome_core::plan::SpinMeter;

/// Nanoseconds since the run start, on the monotonic clock.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    start: Instant,
}

impl Clock {
    /// A clock whose zero is `start` (the instant every thread was released).
    pub(crate) fn at(start: Instant) -> Clock {
        Clock { start }
    }

    /// Nanoseconds elapsed since the zero.
    pub(crate) fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Busy-waits until `target_ns`; returns the time then and how long this
    /// thread actually spun, by core's [`SpinMeter`] rule.
    pub(crate) fn spin_until(&self, target_ns: u64) -> (u64, u64) {
        let mut meter = SpinMeter::start(self.now_ns());
        while meter.now_ns() < target_ns {
            std::hint::spin_loop();
            meter.tick(self.now_ns());
        }
        (meter.now_ns(), meter.spun_ns())
    }
}
