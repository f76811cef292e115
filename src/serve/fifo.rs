//! The model: pure FIFO arithmetic on virtual time.
//!
//! [`Fifo`] is the whole contract of `metronome serve` as a function of
//! arrival times; the connections only stamp arrivals and write replies when
//! the model says they are due. `metronome simulate` drives the same model.

use std::time::Duration;

use super::ServeConfig;

/// One FIFO server on a virtual clock: times are offsets from an origin the
/// caller picks (the server uses its start). No clock is read here.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use metronome::serve::fifo::Fifo;
/// let ms = Duration::from_millis;
/// let mut fifo = Fifo::new(ms(1), None, Duration::ZERO);
/// let done: Vec<_> = (0..3).map(|_| fifo.admit(ms(0)).completion).collect();
/// assert_eq!(done, [ms(1), ms(2), ms(3)]);
/// assert_eq!(fifo.admit(ms(10)).completion, ms(11)); // idle server: no queue
/// ```
#[derive(Clone, Debug)]
pub struct Fifo {
    service: Duration,
    stall_at: Option<Duration>,
    stall_for: Duration,
    free_at: Duration,
    first_arrival: Option<Duration>,
    admitted: u64,
    stall: StallState,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StallState {
    /// Not yet hit (or never: `stall_at` is `None`).
    Pending,
    /// Streams: the stall holds every stream arriving before `until`.
    Holding { until: Duration },
    /// Spent.
    Done,
}

/// What [`Fifo::admit`] decided for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Admission {
    /// 1-based position in arrival order (counts every admitted request).
    pub index: u64,
    /// When service starts: `max(arrival, free_at)`.
    pub start: Duration,
    /// When the response is due: `start + service`, plus the stall if held.
    pub completion: Duration,
    /// This request took the stall.
    pub stalled: bool,
}

/// What [`Fifo::admit_stream`] decided for one SSE stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamAdmission {
    /// 1-based position in arrival order (shared with [`Fifo::admit`]).
    pub index: u64,
    /// The stream's service start `t0`: token i is due at
    /// `t0 + ttft + i * itl`.
    pub start: Duration,
    /// The stall delayed this stream.
    pub stalled: bool,
}

impl Fifo {
    /// A server that is free at time zero, with `service` per request and
    /// one optional stall of `stall_for` at `stall_at` after the first
    /// arrival.
    #[must_use]
    pub fn new(service: Duration, stall_at: Option<Duration>, stall_for: Duration) -> Self {
        Self {
            service,
            stall_at,
            stall_for,
            free_at: Duration::ZERO,
            first_arrival: None,
            admitted: 0,
            stall: StallState::Pending,
        }
    }

    /// The FIFO model of `config`.
    #[must_use]
    pub fn from_config(config: &ServeConfig) -> Self {
        Self::new(config.service, config.stall_at, config.stall_for)
    }

    /// When the server is next free: the last admitted completion.
    #[must_use]
    pub fn free_at(&self) -> Duration {
        self.free_at
    }

    /// Queues a request that arrived at `arrival`: it starts at
    /// `max(arrival, free_at)`; if the stall is pending and that start is at
    /// least `stall_at` after the first arrival, it is held `stall_for`
    /// more (once); it completes `service` later, and the server is busy
    /// until then.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// use metronome::serve::fifo::Fifo;
    /// let ms = Duration::from_millis;
    /// let mut fifo = Fifo::new(ms(1), Some(ms(2)), ms(10));
    /// assert_eq!(fifo.admit(ms(0)).completion, ms(1));
    /// let held = fifo.admit(ms(3)); // starts 3 ms after the first: stalled
    /// assert!(held.stalled);
    /// assert_eq!(held.completion, ms(14));
    /// assert_eq!(fifo.admit(ms(4)).completion, ms(15)); // queued behind it
    /// ```
    pub fn admit(&mut self, arrival: Duration) -> Admission {
        let first = *self.first_arrival.get_or_insert(arrival);
        self.admitted += 1;
        let start = arrival.max(self.free_at);
        let stalled = self.stall == StallState::Pending
            && self
                .stall_at
                .is_some_and(|at| start.saturating_sub(first) >= at);
        let mut completion = start + self.service;
        if stalled {
            completion += self.stall_for;
            self.stall = StallState::Done;
        }
        self.free_at = completion;
        Admission {
            index: self.admitted,
            start,
            completion,
            stalled,
        }
    }

    /// Admits an SSE stream that arrived at `arrival`. Streams are not
    /// serialised: each starts at its arrival, with one exception, the
    /// stall. The first stream arriving at least `stall_at` after the first
    /// arrival opens a stall window `[arrival, arrival + stall_for)` and
    /// starts at its end (its first token comes `stall_for` later); every
    /// stream arriving inside the window also starts at its end, as if the
    /// whole server had paused. Streams already running are not paused.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// use metronome::serve::fifo::Fifo;
    /// let ms = Duration::from_millis;
    /// let mut fifo = Fifo::new(ms(1), Some(ms(5)), ms(100));
    /// assert_eq!(fifo.admit_stream(ms(0)).start, ms(0));
    /// assert_eq!(fifo.admit_stream(ms(0)).start, ms(0)); // concurrent, not queued
    /// assert_eq!(fifo.admit_stream(ms(7)).start, ms(107)); // opens the stall
    /// assert_eq!(fifo.admit_stream(ms(50)).start, ms(107)); // inside it
    /// assert_eq!(fifo.admit_stream(ms(107)).start, ms(107)); // after it
    /// ```
    pub fn admit_stream(&mut self, arrival: Duration) -> StreamAdmission {
        let first = *self.first_arrival.get_or_insert(arrival);
        self.admitted += 1;
        let (start, stalled) = match self.stall {
            StallState::Pending
                if self
                    .stall_at
                    .is_some_and(|at| arrival.saturating_sub(first) >= at) =>
            {
                let until = arrival + self.stall_for;
                self.stall = StallState::Holding { until };
                (until, true)
            }
            StallState::Holding { until } if arrival < until => (until, true),
            StallState::Holding { .. } => {
                self.stall = StallState::Done;
                (arrival, false)
            }
            _ => (arrival, false),
        };
        StreamAdmission {
            index: self.admitted,
            start,
            stalled,
        }
    }
}

/// True when `every` is set and the 1-based `index` is a multiple of it.
pub(super) fn hits(every: Option<u64>, index: u64) -> bool {
    every.is_some_and(|k| k > 0 && index % k == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn fifo_queues_simultaneous_arrivals() {
        let mut fifo = Fifo::new(ms(1), None, Duration::ZERO);
        let got: Vec<_> = (0..3).map(|_| fifo.admit(ms(0))).collect();
        assert_eq!(
            got.iter().map(|a| a.completion).collect::<Vec<_>>(),
            [ms(1), ms(2), ms(3)]
        );
        assert_eq!(
            got.iter().map(|a| a.start).collect::<Vec<_>>(),
            [ms(0), ms(1), ms(2)]
        );
        assert_eq!(got.iter().map(|a| a.index).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(got.iter().all(|a| !a.stalled));
    }

    #[test]
    fn fifo_idle_server_answers_after_service() {
        let mut fifo = Fifo::new(us(1500), None, Duration::ZERO);
        assert_eq!(fifo.admit(ms(0)).completion, us(1500));
        assert_eq!(fifo.admit(ms(1)).completion, ms(3));
        assert_eq!(fifo.admit(ms(10)).completion, us(11_500));
        assert_eq!(fifo.free_at(), us(11_500));
    }

    #[test]
    fn fifo_zero_service_answers_at_arrival() {
        let mut fifo = Fifo::new(Duration::ZERO, None, Duration::ZERO);
        assert_eq!(fifo.admit(ms(5)).completion, ms(5));
        assert_eq!(fifo.admit(ms(5)).completion, ms(5));
        assert_eq!(fifo.admit(ms(7)).completion, ms(7));
    }

    #[test]
    fn fifo_stall_holds_the_first_start_at_or_after_stall_at_once() {
        // service 1 ms, stall 10 ms at 2 ms after the first arrival (t=0).
        let mut fifo = Fifo::new(ms(1), Some(ms(2)), ms(10));
        let a = fifo.admit(ms(0));
        assert_eq!((a.start, a.completion, a.stalled), (ms(0), ms(1), false));
        let b = fifo.admit(us(500)); // starts at 1 ms < 2 ms
        assert_eq!((b.start, b.completion, b.stalled), (ms(1), ms(2), false));
        let c = fifo.admit(us(2500)); // starts at 2.5 ms >= 2 ms: held
        assert_eq!(
            (c.start, c.completion, c.stalled),
            (us(2500), us(13_500), true)
        );
        let d = fifo.admit(ms(3)); // queued behind the stall
        assert_eq!(
            (d.start, d.completion, d.stalled),
            (us(13_500), us(14_500), false)
        );
        let e = fifo.admit(ms(20)); // the stall is spent
        assert_eq!((e.completion, e.stalled), (ms(21), false));
    }

    #[test]
    fn fifo_stall_counts_from_the_first_arrival_and_uses_start_time() {
        // First arrival at 100 ms; stall_at 5 ms -> the first start >= 105 ms.
        let mut fifo = Fifo::new(ms(3), Some(ms(5)), ms(50));
        assert_eq!(fifo.admit(ms(100)).completion, ms(103));
        // Arrives at 101 but starts at 103 (< 105): not held.
        assert_eq!(fifo.admit(ms(101)).completion, ms(106));
        // Arrives at 102 but starts at 106 (>= 105): held.
        let held = fifo.admit(ms(102));
        assert!(held.stalled);
        assert_eq!(held.completion, ms(159));
    }

    #[test]
    fn fifo_stall_at_zero_holds_the_very_first_request() {
        let mut fifo = Fifo::new(ms(1), Some(Duration::ZERO), ms(200));
        assert_eq!(fifo.admit(ms(0)).completion, ms(201));
        assert_eq!(fifo.admit(ms(1)).completion, ms(202));
    }

    #[test]
    fn streams_run_concurrently_and_the_stall_pauses_a_window() {
        let mut fifo = Fifo::new(ms(1), Some(ms(10)), ms(100));
        let starts: Vec<_> = [0, 0, 5, 12, 50, 111, 112, 300]
            .into_iter()
            .map(|t| fifo.admit_stream(ms(t)))
            .map(|s| (s.index, s.start.as_millis(), s.stalled))
            .collect();
        assert_eq!(
            starts,
            [
                (1, 0, false),
                (2, 0, false),
                (3, 5, false),
                (4, 112, true), // opens the window [12, 112)
                (5, 112, true), // inside it
                (6, 112, true), // inside it
                (7, 112, false),
                (8, 300, false),
            ]
        );
    }

    #[test]
    fn hits_every_kth() {
        let hit: Vec<u64> = (1..=7).filter(|&k| hits(Some(3), k)).collect();
        assert_eq!(hit, [3, 6]);
        assert!(!hits(None, 3));
        assert!(!hits(Some(0), 3));
    }
}
