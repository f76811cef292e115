//! The run's monotonic clock.

use std::time::Instant;

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
}

impl Clock {
    /// The clock's reading at `t` (0 before the zero).
    pub(crate) fn ns_at(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.start).as_nanos() as u64
    }
}
