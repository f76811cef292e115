//! Pacing: when an engine thread sends, spins, sleeps or lingers, as pure
//! functions of the clock it reads. [`Spin`] and [`SpinTuner`], the
//! busy-wait slice before each intended send (fixed, or following the
//! measured lateness of the engine's own sleeps); [`pace`], the pacing
//! decision; [`spin_step`], the rule that keeps pacing from delaying
//! measurement; [`linger_ns`], how long to stay awake after the last send;
//! and [`SpinMeter`], the rule for what counts as busy-waiting.
//!
//! The send times themselves come from [`crate::schedule`]; this module
//! only decides how an engine waits for them.

/// The busy-wait slice before each intended send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spin {
    /// Always this long.
    Fixed {
        /// The slice, ns.
        ns: u64,
    },
    /// Follows the measured lateness of the engine's own sleeps during the
    /// run ([`SpinTuner`]), starting from `initial_ns`.
    Auto {
        /// The slice until enough wake-ups have been measured, ns.
        initial_ns: u64,
    },
}

impl Spin {
    /// The tuner an engine thread starts with.
    ///
    /// ```
    /// use metronome_core::pace::Spin;
    /// assert_eq!(Spin::Fixed { ns: 7 }.tuner().slice_ns(), 7);
    /// assert_eq!(Spin::Auto { initial_ns: 200_000 }.tuner().slice_ns(), 200_000);
    /// ```
    pub const fn tuner(self) -> SpinTuner {
        match self {
            Spin::Fixed { ns } => SpinTuner::fixed(ns),
            Spin::Auto { initial_ns } => SpinTuner::auto(initial_ns),
        }
    }
}

/// Bucket width of [`SpinTuner`]'s lateness counts.
const TUNER_STEP_NS: u64 = 4_000;
/// Lateness buckets: 4 us steps up to 2 ms; the last one counts everything later.
const TUNER_BUCKETS: usize = 512;
/// Wake-ups measured before the first adaptation, and between two.
const TUNER_EVERY: u32 = 32;
/// Counts are halved when they reach this many (older wake-ups fade).
const TUNER_WINDOW: u32 = 4_096;

/// The adaptive slice's bounds: never below [`SPIN_AUTO_MIN_NS`], never
/// above [`SPIN_AUTO_MAX_NS`].
pub const SPIN_AUTO_MIN_NS: u64 = 20_000;
/// See [`SPIN_AUTO_MIN_NS`].
pub const SPIN_AUTO_MAX_NS: u64 = 2_000_000;
/// Added to the measured p99 lateness.
pub const SPIN_AUTO_MARGIN_NS: u64 = 20_000;

/// The `--spin auto` rule: the busy-wait slice covers the p99 lateness of
/// the engine's own sleeps, as measured during the run, plus a margin, so a
/// late wake-up still lands before the intended send and the send is on
/// time; between wake-ups the thread sleeps instead of burning the CPU.
///
/// An engine reports each sleep's lateness (`now - wake target`, when the
/// wake was the pacing target) to [`SpinTuner::observe`]. Every
/// `TUNER_EVERY` samples the slice becomes the upper bound of the 4 us
/// bucket holding the p99, plus [`SPIN_AUTO_MARGIN_NS`], clamped to
/// [[`SPIN_AUTO_MIN_NS`], [`SPIN_AUTO_MAX_NS`]]; counts are halved every
/// `TUNER_WINDOW` samples so the slice follows the machine. A fixed tuner
/// ignores what it observes. No allocation, no clock: tested on a virtual one.
///
/// ```
/// use metronome_core::pace::SpinTuner;
/// let mut t = SpinTuner::auto(200_000);
/// for _ in 0..31 {
///     t.observe(9_000); // woke 9 us late
/// }
/// assert_eq!(t.slice_ns(), 200_000); // not enough samples yet
/// t.observe(9_000);
/// assert_eq!(t.slice_ns(), 12_000 + 20_000); // bucket [8, 12) us, plus the margin
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpinTuner {
    adaptive: bool,
    counts: [u32; TUNER_BUCKETS],
    total: u32,
    since_update: u32,
    slice_ns: u64,
}

impl SpinTuner {
    /// A slice that never changes.
    pub const fn fixed(slice_ns: u64) -> Self {
        Self {
            adaptive: false,
            counts: [0; TUNER_BUCKETS],
            total: 0,
            since_update: 0,
            slice_ns,
        }
    }

    /// An adaptive slice, `initial_ns` until the first adaptation.
    pub const fn auto(initial_ns: u64) -> Self {
        Self {
            adaptive: true,
            ..Self::fixed(initial_ns)
        }
    }

    /// The slice to use now, ns.
    pub const fn slice_ns(&self) -> u64 {
        self.slice_ns
    }

    /// A sleep meant to end at the pacing target woke `lateness_ns` after it.
    pub fn observe(&mut self, lateness_ns: u64) {
        if !self.adaptive {
            return;
        }
        let bucket = ((lateness_ns / TUNER_STEP_NS) as usize).min(TUNER_BUCKETS - 1);
        self.counts[bucket] += 1;
        self.total += 1;
        self.since_update += 1;
        if self.since_update >= TUNER_EVERY {
            self.since_update = 0;
            self.adapt();
        }
        if self.total >= TUNER_WINDOW {
            self.total = 0;
            for c in self.counts.iter_mut() {
                *c /= 2;
                self.total += *c;
            }
        }
    }

    fn adapt(&mut self) {
        // Nearest rank of the p99, as the histogram's quantile rule.
        let rank = (u64::from(self.total) * 99).div_ceil(100).max(1);
        let mut seen = 0u64;
        let mut p99_upper_ns = TUNER_BUCKETS as u64 * TUNER_STEP_NS;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += u64::from(c);
            if seen >= rank {
                p99_upper_ns = (i as u64 + 1) * TUNER_STEP_NS;
                break;
            }
        }
        self.slice_ns =
            (p99_upper_ns + SPIN_AUTO_MARGIN_NS).clamp(SPIN_AUTO_MIN_NS, SPIN_AUTO_MAX_NS);
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
/// use metronome_core::pace::{pace, Pace};
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

/// What a busy-waiting pacer does at one poll of its spin loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpinStep {
    /// A completion is ready: leave the spin and handle it now, so it is
    /// stamped when it arrived, not when the pacer is next free.
    Reap,
    /// The intended time has come: leave the spin and send.
    Send,
    /// Keep spinning.
    Spin,
}

/// While an engine sends a backlog of due requests in one batch (after a
/// stall of its thread), it looks at the stop flag every this many sends.
pub const BACKLOG_STOP_CHECK: u32 = 4096;

/// The longest an engine stays awake after its last send while responses
/// are in flight ([`linger_ns`]): 500 us.
pub const LINGER_MAX_NS: u64 = 500_000;

/// The share of a core lingering may cost at most, at the offered rate.
pub const LINGER_CPU_SHARE: f64 = 0.25;

/// How long an engine stays awake (busy-waiting, leaving as soon as a
/// completion is ready, counted as spin) after its last send while
/// responses are in flight, instead of sleeping until the next send: a
/// response that comes within it is stamped when it arrives, not when a
/// sleeping thread has been woken (tens of microseconds), so the latency
/// against a fast server does not depend on the rate. Twice the
/// service-time estimate plus 50 us (200 us before any estimate), within a
/// budget of [`LINGER_CPU_SHARE`] of a core at `rate` (requests per second
/// of this pacer); 0 when the expected response comes later than
/// [`LINGER_MAX_NS`] (lingering would not catch it).
///
/// ```
/// use metronome_core::pace::linger_ns;
/// assert_eq!(linger_ns(500.0, Some(30_000)), 110_000);
/// assert_eq!(linger_ns(500.0, None), 200_000);
/// assert_eq!(linger_ns(10_000.0, Some(30_000)), 25_000); // the CPU budget
/// assert_eq!(linger_ns(500.0, Some(5_000_000)), 0); // a slow server
/// ```
pub fn linger_ns(rate: f64, service_ns: Option<u64>) -> u64 {
    let by_service = service_ns.map_or(200_000, |s| s.saturating_mul(2).saturating_add(50_000));
    if by_service > LINGER_MAX_NS {
        return 0;
    }
    let by_budget = (LINGER_CPU_SHARE * 1e9 / rate.max(1.0)) as u64;
    by_service.min(by_budget)
}

/// How close to an intended send a ready completion is left for after the
/// send: handling it (and the ring entry that may come with it) takes a few
/// microseconds that would otherwise make the send late.
pub const REAP_GUARD_NS: u64 = 20_000;

/// The rule inside the spin slice: pacing delays neither measurement nor
/// the send. At each poll, the send goes when its intended time has come;
/// before that, a ready completion is handled at once (then the pacer
/// decides again), unless the send is due within [`REAP_GUARD_NS`]: then
/// it is handled right after the send, stamped at most that much late.
///
/// ```
/// use metronome_core::pace::{spin_step, SpinStep, REAP_GUARD_NS};
/// let t = 1_000_000;
/// assert_eq!(spin_step(t - 50_000, t, true), SpinStep::Reap);
/// assert_eq!(spin_step(t - REAP_GUARD_NS, t, true), SpinStep::Spin);
/// assert_eq!(spin_step(t, t, true), SpinStep::Send);
/// assert_eq!(spin_step(t, t, false), SpinStep::Send);
/// assert_eq!(spin_step(t - 50_000, t, false), SpinStep::Spin);
/// ```
pub fn spin_step(now_ns: u64, intended_ns: u64, completion_ready: bool) -> SpinStep {
    if now_ns >= intended_ns {
        SpinStep::Send
    } else if completion_ready && intended_ns - now_ns > REAP_GUARD_NS {
        SpinStep::Reap
    } else {
        SpinStep::Spin
    }
}

/// Longest gap between two clock reads of a busy-wait still counted as
/// spinning (a read takes tens of nanoseconds): a longer gap means the
/// thread was not running (preempted, or its virtual CPU stolen by the host).
pub const SPIN_GAP_NS: u64 = 2_000;

/// Accounts busy-waiting: fed every clock read of a spin loop, it sums the
/// steps of at most [`SPIN_GAP_NS`], so time the thread was not running is
/// not counted as spin and the CPU time the report calls work (CPU time
/// minus spin) is not understated. The engines keep only the loop:
///
/// ```
/// use metronome_core::pace::SpinMeter;
/// let reads = [100, 150, 1_150, 1_200, 9_000, 9_050]; // a 7.8 us gap: preempted
/// let mut m = SpinMeter::start(reads[0]);
/// for &t in &reads[1..] {
///     m.tick(t);
/// }
/// assert_eq!(m.now_ns(), 9_050);
/// assert_eq!(m.spun_ns(), 50 + 1_000 + 50 + 50);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpinMeter {
    now_ns: u64,
    spun_ns: u64,
}

impl SpinMeter {
    /// A meter whose first clock read is `now_ns`.
    pub const fn start(now_ns: u64) -> Self {
        Self { now_ns, spun_ns: 0 }
    }

    /// The next clock read of the loop. A clock that goes backwards adds nothing.
    pub fn tick(&mut self, now_ns: u64) {
        let step = now_ns.saturating_sub(self.now_ns);
        if step <= SPIN_GAP_NS {
            self.spun_ns += step;
        }
        self.now_ns = self.now_ns.max(now_ns);
    }

    /// The latest clock read.
    pub const fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// Time counted as spinning so far.
    pub const fn spun_ns(&self) -> u64 {
        self.spun_ns
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
