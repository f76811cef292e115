//! [`Plan`]: everything an engine needs to run, and nothing of the CLI; and
//! [`pace`], the pacing decision as a pure function of the clock.

use core::net::SocketAddr;

use crate::schedule::{Arrival, Shard};

/// The protocol spoken on each request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// Plain HTTP/1.1: one response per request.
    Http,
    /// OpenAI-style streaming chat completions: an HTTP/1.1 response whose
    /// body is a `text/event-stream` ending in `data: [DONE]`.
    OpenAiSse,
}

/// Open loop (the point of metronome) or closed loop (only to show the difference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// Requests leave on the schedule and never wait for earlier replies.
    Open,
    /// `workers` loops of send, wait, send. Latency is measured from the
    /// actual send; `expected_interval_ns`, when set, feeds the HdrHistogram
    /// coordinated-omission correction into a separate histogram.
    Closed {
        /// Number of workers, each with one connection and one request in flight.
        workers: u32,
        /// The expected interval between requests of one worker, for the correction.
        expected_interval_ns: Option<u64>,
    },
}

/// Service-level objectives: a request is *good* when it succeeded and met
/// every bound that is set. `None` means no bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Slo {
    /// Bound on latency (completion - intended; for streams this is E2E).
    pub latency_ns: Option<u64>,
    /// Bound on time to first token (streams only).
    pub ttft_ns: Option<u64>,
    /// Bound on every inter-token latency of the request (streams only).
    pub itl_ns: Option<u64>,
    /// Bound on time per output token (streams only).
    pub tpot_ns: Option<u64>,
}

impl Slo {
    /// True when no bound is set.
    ///
    /// ```
    /// assert!(metronome_core::plan::Slo::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.latency_ns.is_none()
            && self.ttft_ns.is_none()
            && self.itl_ns.is_none()
            && self.tpot_ns.is_none()
    }
}

/// What an engine needs to run: borrowed data only.
///
/// The schedule spans `warmup_ns + duration_ns`; requests intended before
/// `warmup_ns` are sent but not recorded, and the arrival exactly at
/// `warmup_ns + duration_ns` is not sent.
#[derive(Clone, Copy, Debug)]
pub struct Plan<'a> {
    /// The target address (already resolved by the caller).
    pub addr: SocketAddr,
    /// The encoded requests, complete HTTP/1.1 messages; request `i` of the
    /// schedule sends `requests[i % requests.len()]`. Never empty.
    pub requests: &'a [&'a [u8]],
    /// The arrival process.
    pub arrival: Arrival,
    /// Offered rate in requests per second (across all shards).
    pub rate: f64,
    /// Seed for every random choice of the run.
    pub seed: u64,
    /// The part of the schedule this engine (or machine) sends.
    pub shard: Shard,
    /// Measured duration, after the warmup.
    pub duration_ns: u64,
    /// Warmup before the measured duration: sent, not recorded.
    pub warmup_ns: u64,
    /// Connections opened before the clock starts.
    pub connections: u32,
    /// Connections may grow to this many when all are busy.
    pub max_connections: u32,
    /// Above this many requests in flight (sent or waiting for a connection),
    /// a due request is dropped and counted.
    pub max_in_flight: u32,
    /// A request unanswered this long after its send is a timeout; also how
    /// long the engine waits for replies in flight after the schedule ends.
    pub timeout_ns: u64,
    /// Plain HTTP or an OpenAI-style stream.
    pub protocol: Protocol,
    /// Open or closed loop.
    pub model: Model,
    /// Bounds that define a good request.
    pub slo: Slo,
    /// Busy-wait this long before each intended send; sleep before that.
    pub spin_ns: u64,
    /// Width of one report interval.
    pub interval_ns: u64,
}

impl Plan<'_> {
    /// End of the schedule, from the run start: `warmup_ns + duration_ns`.
    ///
    /// ```
    /// # use metronome_core::plan::*;
    /// # let p = example_plan();
    /// assert_eq!(p.end_ns(), 1_500_000_000);
    /// ```
    pub fn end_ns(&self) -> u64 {
        self.warmup_ns.saturating_add(self.duration_ns)
    }

    /// True when a request intended at `intended_ns` is recorded (not warmup).
    ///
    /// ```
    /// # use metronome_core::plan::*;
    /// # let p = example_plan();
    /// assert!(!p.is_measured(499_999_999));
    /// assert!(p.is_measured(500_000_000));
    /// ```
    pub fn is_measured(&self, intended_ns: u64) -> bool {
        intended_ns >= self.warmup_ns
    }

    /// Index of the report interval that `t_ns` (from the run start) falls in,
    /// counted from the end of the warmup; `None` during the warmup.
    ///
    /// ```
    /// # use metronome_core::plan::*;
    /// # let p = example_plan();
    /// assert_eq!(p.interval_index(400_000_000), None);
    /// assert_eq!(p.interval_index(500_000_000), Some(0));
    /// assert_eq!(p.interval_index(1_250_000_000), Some(0));
    /// assert_eq!(p.interval_index(1_500_000_000), Some(1));
    /// ```
    pub fn interval_index(&self, t_ns: u64) -> Option<usize> {
        let since = t_ns.checked_sub(self.warmup_ns)?;
        Some((since / self.interval_ns.max(1)) as usize)
    }

    /// Number of report intervals covering the measured duration.
    ///
    /// ```
    /// # use metronome_core::plan::*;
    /// # let p = example_plan();
    /// assert_eq!(p.interval_count(), 1);
    /// ```
    pub fn interval_count(&self) -> usize {
        self.duration_ns.div_ceil(self.interval_ns.max(1)).max(1) as usize
    }
}

/// A small plan for examples and tests: 100 req/s constant to
/// 127.0.0.1:8080, 1 s measured after 0.5 s of warmup, 1 s intervals.
///
/// ```
/// let p = metronome_core::plan::example_plan();
/// assert_eq!(p.rate, 100.0);
/// ```
pub fn example_plan() -> Plan<'static> {
    const REQ: &[u8] = b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";
    Plan {
        addr: SocketAddr::V4(core::net::SocketAddrV4::new(
            core::net::Ipv4Addr::LOCALHOST,
            8080,
        )),
        requests: &[REQ],
        arrival: Arrival::Constant,
        rate: 100.0,
        seed: 42,
        shard: Shard::WHOLE,
        duration_ns: 1_000_000_000,
        warmup_ns: 500_000_000,
        connections: 4,
        max_connections: 64,
        max_in_flight: 1024,
        timeout_ns: 2_000_000_000,
        protocol: Protocol::Http,
        model: Model::Open,
        slo: Slo::default(),
        spin_ns: 50_000,
        interval_ns: 1_000_000_000,
    }
}

/// What a pacer should do now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// The next send is due (or overdue): send it now, and every other due one.
    Send,
    /// The next send is within the spin slice: busy-wait the clock.
    Spin,
    /// The next send is further away: sleep until `until_ns`, then decide again.
    Sleep {
        /// When to wake: the intended time minus the spin slice.
        until_ns: u64,
    },
    /// Nothing is left to send.
    Done,
}

/// The pacing decision: given the clock `now_ns`, the next intended send
/// time (or `None` when the schedule is exhausted) and the spin slice,
/// decide whether to send, spin or sleep. Times are on the same clock.
///
/// ```
/// use metronome_core::plan::{pace, Pace};
/// assert_eq!(pace(1_000, Some(1_000), 50), Pace::Send);
/// assert_eq!(pace(1_001, Some(1_000), 50), Pace::Send);
/// assert_eq!(pace(960, Some(1_000), 50), Pace::Spin);
/// assert_eq!(pace(950, Some(1_000), 50), Pace::Spin);
/// assert_eq!(pace(900, Some(1_000), 50), Pace::Sleep { until_ns: 950 });
/// assert_eq!(pace(900, None, 50), Pace::Done);
/// ```
pub fn pace(now_ns: u64, next_intended_ns: Option<u64>, spin_ns: u64) -> Pace {
    match next_intended_ns {
        None => Pace::Done,
        Some(t) if t <= now_ns => Pace::Send,
        Some(t) if t - now_ns <= spin_ns => Pace::Spin,
        Some(t) => Pace::Sleep {
            until_ns: t - spin_ns,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A virtual clock: a sleeper that overshoots each wake by a fixed
    /// amount and a spinner that advances 1 ns a poll never sends late by
    /// more than one poll, and never early.
    #[test]
    fn virtual_clock_pacer_sends_on_time_despite_sleep_overshoot() {
        let schedule = [0u64, 1_000_000, 1_000_000, 2_500_000, 10_000_000];
        let spin = 50_000;
        let overshoot = 30_000; // the sleep wakes 30 us late, inside the slice
        let mut now = 0u64;
        let mut sent = [0u64; 5];
        let mut next = 0usize;
        let mut spins = 0u64;
        loop {
            match pace(now, schedule.get(next).copied(), spin) {
                Pace::Done => break,
                Pace::Send => {
                    while next < schedule.len() && schedule[next] <= now {
                        sent[next] = now;
                        next += 1;
                    }
                }
                Pace::Spin => {
                    spins += 1;
                    now += 1;
                }
                Pace::Sleep { until_ns } => {
                    assert!(until_ns > now);
                    now = until_ns + overshoot;
                }
            }
        }
        // Every send is exactly on time: the overshoot is absorbed by the slice.
        assert_eq!(sent, schedule);
        // Each sleep woke 30 us into the 50 us slice, leaving 20 us of spin
        // before each distinct time after the first: 1, 2.5 and 10 ms.
        assert_eq!(spins, 3 * 20_000);
    }

    /// A sleep that overshoots past the intended time sends late but never
    /// shifts the schedule: later sends stay on their own times.
    #[test]
    fn late_wake_sends_all_due_at_once_without_shifting() {
        let schedule = [100u64, 200, 300, 1_000];
        let mut now = 0u64;
        let mut sent = [0u64; 4];
        let mut next = 0;
        let mut first_sleep = true;
        loop {
            match pace(now, schedule.get(next).copied(), 10) {
                Pace::Done => break,
                Pace::Send => {
                    while next < schedule.len() && schedule[next] <= now {
                        sent[next] = now;
                        next += 1;
                    }
                }
                Pace::Spin => now += 1,
                Pace::Sleep { until_ns } => {
                    // The first sleep overshoots to 350: three sends are due.
                    now = if first_sleep { 350 } else { until_ns };
                    first_sleep = false;
                }
            }
        }
        assert_eq!(sent, [350, 350, 350, 1_000]);
    }
}
