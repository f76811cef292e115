//! Steering a running engine: [`Control`] (a stop, the live [`Progress`]
//! counters, `--start-at`) and the zero of the run's clock ([`Origin`]),
//! shared between the caller and the engine's threads.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::live::{LiveIntervals, Published};
use super::so_far::Recorded;
use crate::ledger::Ledger;
use crate::measure::IntervalSink;

/// Steering shared between the caller and a running engine.
#[derive(Debug, Default)]
pub struct Control {
    /// Set (e.g. on Ctrl-C) to stop scheduling; replies in flight are still
    /// awaited briefly and everything measured is returned.
    pub stop: AtomicBool,
    /// Live counters for a progress line.
    pub progress: Progress,
    /// Start the schedule's clock at this wall-clock instant (`--start-at`)
    /// instead of as soon as the connections are open: the engine opens its
    /// connections first, then waits. When the instant has passed by the
    /// time the engine is ready, the clock still starts at it: the requests
    /// already due leave at once and their lateness is send lag.
    pub start_at: Option<SystemTime>,
    /// Where each measured request's record goes (`--out-requests`), or
    /// `None`: every thread that records requests takes a clone into its
    /// [`RunOutput::requests`](super::RunOutput::requests) before its clock starts.
    pub requests: Option<super::RequestFeed>,
}

/// How far ahead of "now" a run's clock starts when no `start_at` is
/// given: 2 ms, more than a thread's wake-up on a loaded machine.
pub const START_LEAD: Duration = Duration::from_millis(2);

/// The zero of a run's clock: a monotonic instant and the wall-clock time
/// it stands for, in nanoseconds since the Unix epoch.
#[derive(Clone, Copy, Debug)]
pub struct Origin {
    /// The zero on the monotonic clock.
    pub instant: Instant,
    /// The same instant on the wall clock, ns since the Unix epoch.
    pub unix_ns: u64,
}

/// Nanoseconds since the Unix epoch of a wall-clock time (0 before it).
pub fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos().min(u128::from(u64::MAX)) as u64)
}

impl Origin {
    /// The origin of a run started by `control`: its `start_at`, or
    /// [`START_LEAD`] from now, so every pacing thread is already awake and
    /// busy-waiting (see [`Origin::wait_unless`]) when the first request is
    /// due: the first request of a run leaves on time, not after a thread's
    /// wake-up.
    pub fn for_run(control: &Control) -> Origin {
        let origin = match control.start_at {
            Some(t) => Origin::at(t),
            None => {
                let now = Origin::now();
                Origin {
                    instant: now.instant + START_LEAD,
                    unix_ns: now.unix_ns + START_LEAD.as_nanos() as u64,
                }
            }
        };
        control
            .progress
            .origin_unix_ns
            .store(origin.unix_ns, Ordering::Release);
        if let Some(feed) = &control.requests {
            feed.set_origin(origin.unix_ns);
        }
        origin
    }

    /// Now.
    pub fn now() -> Origin {
        let wall = SystemTime::now();
        Origin {
            instant: Instant::now(),
            unix_ns: unix_ns(wall),
        }
    }

    /// The monotonic instant that stands for the wall-clock time `at`
    /// (in the future or the past), read against one pair of clock
    /// readings taken back to back.
    pub fn at(at: SystemTime) -> Origin {
        let (wall, mono) = (SystemTime::now(), Instant::now());
        let instant = match at.duration_since(wall) {
            Ok(ahead) => mono + ahead,
            Err(e) => mono.checked_sub(e.duration()).unwrap_or(mono),
        };
        Origin {
            instant,
            unix_ns: unix_ns(at),
        }
    }

    /// Waits until the origin (sleeping, then busy-waiting the last 200 us
    /// so the wake-up is on time), and returns how late the caller really
    /// was there, ns: 0 to a few microseconds, or how long ago the origin
    /// passed when it had passed already.
    pub fn wait(&self) -> u64 {
        self.wait_unless(&AtomicBool::new(false))
    }

    /// [`Origin::wait`], but returns early (within 20 ms) once `stop` is
    /// set, e.g. by Ctrl-C before a far `--start-at`.
    pub fn wait_unless(&self, stop: &AtomicBool) -> u64 {
        const SPIN: Duration = Duration::from_micros(200);
        const SLICE: Duration = Duration::from_millis(20);
        loop {
            let now = Instant::now();
            if now >= self.instant || stop.load(Ordering::Relaxed) {
                return now
                    .saturating_duration_since(self.instant)
                    .as_nanos()
                    .min(u128::from(u64::MAX)) as u64;
            }
            let left = self.instant - now;
            if left > SPIN {
                std::thread::sleep((left - SPIN).min(SLICE));
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

impl Control {
    /// True once a stop was requested.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Live counters of the measured phase, published by the engine for a
/// progress line, and its closed intervals for a watcher
/// ([`LiveIntervals`]); never used for the report itself.
#[derive(Debug, Default)]
pub struct Progress {
    /// Requests sent.
    pub sent: AtomicU64,
    /// Requests that succeeded.
    pub ok: AtomicU64,
    /// Requests that failed.
    pub errors: AtomicU64,
    /// p99 latency of the last complete interval, in ns.
    pub last_p99_ns: AtomicU64,
    /// p99 send lag of the last complete interval, in ns.
    pub last_send_lag_p99_ns: AtomicU64,
    /// Latency samples of the last complete interval (too few for a p99
    /// below 100).
    pub last_samples: AtomicU64,
    /// Send-lag samples of the last complete interval.
    pub last_send_lag_samples: AtomicU64,
    /// Connections open (established and not closed) over the engine's
    /// threads, as they last published it: every few milliseconds (uring,
    /// each worker adding the change of its own count since its last
    /// publish, with wrapping arithmetic) or every 50 ms (std's pacer).
    /// A gauge for the live push (docs/prometheus.md).
    pub connections_open: AtomicU64,
    /// Every closed interval, copied for a watcher when enabled.
    pub live: LiveIntervals,
    /// The run's origin ([`Origin::for_run`]), ns since the Unix epoch; 0
    /// until the engine set its clock.
    pub origin_unix_ns: AtomicU64,
}

impl Progress {
    /// A thread's publishing state for [`Progress::publish_interval`]:
    /// engines call it before their clock starts, once per thread that
    /// holds a series (with live intervals on, it reserves a mailbox, with
    /// room for `plan`'s whole-run histograms when they are copied too).
    pub fn published(&self, plan: &crate::plan::Plan<'_>) -> Published {
        self.live.register(plan)
    }

    /// Publishes the p99s of the last complete interval at `now_ns`, once
    /// per interval (`published` remembers which one was published last),
    /// and, with live intervals on, copies the closed intervals into the
    /// thread's mailbox ([`LiveIntervals`]), with the whole-run histograms
    /// `recorded` holds when they are copied too ([`super::SoFar`]).
    pub fn publish_interval(
        &self,
        ledger: &Ledger<'_>,
        intervals: &dyn IntervalSink,
        recorded: Recorded<'_>,
        now_ns: u64,
        published: &mut Published,
    ) {
        published.copy_closed(ledger.plan(), intervals, recorded, now_ns);
        let Some((last, p99, lag_p99)) = ledger.last_complete(intervals, now_ns) else {
            return;
        };
        if published.last == Some(last) {
            return;
        }
        self.last_p99_ns.store(p99, Ordering::Relaxed);
        self.last_send_lag_p99_ns.store(lag_p99, Ordering::Relaxed);
        if let Some((latency, send_lag)) = intervals.samples(last) {
            self.last_samples.store(latency, Ordering::Relaxed);
            self.last_send_lag_samples
                .store(send_lag, Ordering::Relaxed);
        }
        published.last = Some(last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An origin ahead: its wall-clock time is kept exactly, and `wait`
    /// returns at it (not before), late by a bound a loaded machine keeps.
    #[test]
    fn an_origin_ahead_is_waited_for() {
        let at = SystemTime::now() + Duration::from_millis(30);
        let o = Origin::at(at);
        assert_eq!(o.unix_ns, unix_ns(at));
        let late = o.wait();
        let now = Instant::now();
        assert!(now >= o.instant);
        assert!(late < 500_000_000, "late by {late} ns");
    }

    /// An origin already past: `wait` returns at once with how long ago it
    /// passed.
    #[test]
    fn an_origin_past_returns_how_late() {
        let at = SystemTime::now() - Duration::from_millis(50);
        let o = Origin::at(at);
        let t = Instant::now();
        let late = o.wait();
        assert!(t.elapsed() < Duration::from_millis(500));
        assert!((50_000_000..550_000_000).contains(&late), "{late}");
        assert_eq!(unix_ns(UNIX_EPOCH + Duration::from_nanos(7)), 7);
        assert_eq!(unix_ns(UNIX_EPOCH - Duration::from_secs(1)), 0);
    }

    /// A run without `start_at` starts now; with it, at it.
    #[test]
    fn for_run_follows_start_at() {
        let c = Control::default();
        let before = unix_ns(SystemTime::now());
        let o = Origin::for_run(&c);
        assert!(o.unix_ns >= before && o.unix_ns - before < 1_000_000_000);
        let at = UNIX_EPOCH + Duration::from_nanos(1_796_119_200_000_000_123);
        let c = Control {
            start_at: Some(at),
            ..Control::default()
        };
        assert_eq!(Origin::for_run(&c).unix_ns, 1_796_119_200_000_000_123);
    }
}
