//! Simulation test of the pacer on a virtual clock: pacing never delays
//! measurement. An engine that busy-waits the last slice before each send
//! and follows [`spin_step`] stamps every response when it arrives; one
//! that spins blindly to the send stamps it when the pacer is next free.
//!
//! The scripted server answers every request 30 us after it was sent; the
//! schedule sends every 100 us (10k req/s), inside a 200 us spin slice, so
//! every response arrives while the pacer spins.

use std::collections::VecDeque;

use metronome_core::pace::{pace, spin_step, Pace, SpinStep};

const US: u64 = 1_000;
const GAP: u64 = 100 * US;
const SERVICE: u64 = 30 * US;
const SPIN: u64 = 200 * US;
/// One poll of the spin loop advances the virtual clock this much.
const POLL: u64 = 1;

/// Runs 20 sends; returns (send times, latency of each response as
/// stamped: stamp - send).
fn run(reap_while_spinning: bool) -> (Vec<u64>, Vec<u64>) {
    run_with(reap_while_spinning, SERVICE)
}

fn run_with(reap_while_spinning: bool, service: u64) -> (Vec<u64>, Vec<u64>) {
    let schedule: Vec<u64> = (0..20).map(|i| 1_000 * US + i * GAP).collect();
    let mut now = 0u64;
    let mut next = 0usize;
    let mut sent = Vec::new();
    // (arrival time, send time) of responses in flight, in arrival order.
    let mut inflight: VecDeque<(u64, u64)> = VecDeque::new();
    let mut latencies = Vec::new();
    loop {
        // The top of the engine loop: reap every ready completion, stamped now.
        while inflight.front().is_some_and(|&(at, _)| at <= now) {
            let (_, sent_at) = inflight.pop_front().unwrap();
            latencies.push(now - sent_at);
        }
        match pace(now, schedule.get(next).copied(), SPIN) {
            Pace::Send => {
                while next < schedule.len() && schedule[next] <= now {
                    sent.push(now);
                    inflight.push_back((now + service, now));
                    next += 1;
                }
            }
            Pace::Spin => {
                let target = schedule[next];
                if reap_while_spinning {
                    loop {
                        let ready = inflight.front().is_some_and(|&(at, _)| at <= now);
                        match spin_step(now, target, ready) {
                            SpinStep::Spin => now += POLL,
                            SpinStep::Reap | SpinStep::Send => break,
                        }
                    }
                } else {
                    now = now.max(target);
                }
            }
            // The ring's wait ends at the timer or at a completion.
            Pace::Sleep { until_ns } => {
                let wake = inflight
                    .front()
                    .map_or(until_ns, |&(at, _)| at.min(until_ns));
                now = now.max(wake);
            }
            Pace::Done => match inflight.front() {
                Some(&(at, _)) => now = now.max(at),
                None => break,
            },
        }
    }
    (sent, latencies)
}

#[test]
fn responses_during_the_spin_are_stamped_when_they_arrive() {
    let expected_sends: Vec<u64> = (0..20).map(|i| 1_000 * US + i * GAP).collect();
    let (sent, latency) = run(true);
    assert_eq!(sent, expected_sends);
    assert_eq!(latency, vec![SERVICE; 20]);
}

#[test]
fn a_blind_spin_stamps_responses_at_the_next_send() {
    let (sent, latency) = run(false);
    assert_eq!(sent.len(), 20);
    // Every response but the last waits for the next send (100 us after its
    // own) to be seen: the measurement the rule exists to prevent.
    let mut expected = vec![GAP; 19];
    expected.push(SERVICE);
    assert_eq!(latency, expected);
}

/// A response that arrives within the reap guard of the next send is left
/// for after the send (which stays on time) and stamped then: at most the
/// guard late.
#[test]
fn responses_just_before_a_send_are_stamped_after_it() {
    use metronome_core::pace::REAP_GUARD_NS;
    let service = GAP - 10 * US; // arrives 10 us before the next send
    let (sent, latency) = run_with(true, service);
    let expected_sends: Vec<u64> = (0..20).map(|i| 1_000 * US + i * GAP).collect();
    assert_eq!(sent, expected_sends);
    let mut expected = vec![GAP; 19]; // stamped at the next send
    expected.push(service); // the last one: no send follows
    assert_eq!(latency, expected);
    assert!(GAP - service <= REAP_GUARD_NS);
}

/// `--spin auto` on a virtual clock: a pacer whose sleeps wake late by a
/// scripted amount (mostly 10 us, every 50th wake-up 150 us) starts with a
/// 200 us slice, then spins just long enough to cover the p99 lateness:
/// every send stays on time while the spin time drops.
#[test]
fn adaptive_slice_covers_the_lateness_and_spins_less() {
    use metronome_core::pace::{Spin, SPIN_AUTO_MARGIN_NS};

    fn run(spin: Spin) -> (u64, (u64, u64), u64) {
        let gap = 1_000 * US; // 1k req/s
        let schedule: Vec<u64> = (1..=2_000).map(|i| i * gap).collect();
        let mut tuner = spin.tuner();
        let (mut now, mut next, mut wakes) = (0u64, 0usize, 0u64);
        let (mut spun, mut worst_lag, mut late_sends) = (0u64, 0u64, 0u64);
        loop {
            match pace(now, schedule.get(next).copied(), tuner.slice_ns()) {
                Pace::Done => break,
                Pace::Send => {
                    while next < schedule.len() && schedule[next] <= now {
                        worst_lag = worst_lag.max(now - schedule[next]);
                        late_sends += u64::from(now > schedule[next]);
                        next += 1;
                    }
                }
                Pace::Spin => {
                    spun += schedule[next] - now;
                    now = schedule[next];
                }
                Pace::Sleep { until_ns } => {
                    wakes += 1;
                    let late = if wakes % 50 == 0 { 150 * US } else { 10 * US };
                    now = until_ns + late;
                    tuner.observe(late);
                }
            }
        }
        (spun, (late_sends, worst_lag), tuner.slice_ns())
    }

    let (fixed_spun, fixed_lag, fixed_slice) = run(Spin::Fixed { ns: 200 * US });
    let (auto_spun, auto_lag, auto_slice) = run(Spin::Auto {
        initial_ns: 200 * US,
    });
    // The fixed 200 us slice covers every wake-up: no send is late.
    assert_eq!(fixed_lag, (0, 0));
    assert_eq!(fixed_slice, 200 * US);
    // The adaptive slice first fits the punctual wake-ups (32 us after 32
    // samples), so the first 150 us spike (wake-up 50) sends 118 us late;
    // from the next adaptation (wake-up 64) on, the spike is covered.
    assert_eq!(auto_lag, (1, 118 * US));
    // The p99 of the lateness is the 150 us spike (2% of wake-ups): its
    // bucket [148, 152) us, plus the margin.
    assert_eq!(auto_slice, 152 * US + SPIN_AUTO_MARGIN_NS);
    // A fixed slice spins 200 - 10 us before most sends; the adaptive one
    // 172 - 10 us once adapted (after 32 wake-ups).
    assert_eq!(fixed_spun, 1_960 * 190 * US + 40 * 50 * US);
    assert!(auto_spun < fixed_spun, "{auto_spun} vs {fixed_spun}");
}

/// The tuner forgets: after a burst of late wake-ups, punctual ones bring
/// the slice down again (counts halve every 4096 samples), and it never
/// goes below its floor or above its ceiling.
#[test]
fn adaptive_slice_follows_the_machine_within_bounds() {
    use metronome_core::pace::{
        SpinTuner, SPIN_AUTO_MARGIN_NS, SPIN_AUTO_MAX_NS, SPIN_AUTO_MIN_NS,
    };
    let mut t = SpinTuner::auto(200 * US);
    for _ in 0..4_096 {
        t.observe(5_000 * US);
    }
    assert_eq!(t.slice_ns(), SPIN_AUTO_MAX_NS);
    for _ in 0..40_000 {
        t.observe(0);
    }
    assert_eq!(t.slice_ns(), 4 * US + SPIN_AUTO_MARGIN_NS);
    assert!(t.slice_ns() >= SPIN_AUTO_MIN_NS);
    let mut fixed = SpinTuner::fixed(123);
    fixed.observe(1_000_000);
    assert_eq!(fixed.slice_ns(), 123);
}
