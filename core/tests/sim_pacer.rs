//! Simulation test of the pacer on a virtual clock: pacing never delays
//! measurement. An engine that busy-waits the last slice before each send
//! and follows [`spin_step`] stamps every response when it arrives; one
//! that spins blindly to the send stamps it when the pacer is next free.
//!
//! The scripted server answers every request 30 us after it was sent; the
//! schedule sends every 100 us (10k req/s), inside a 200 us spin slice, so
//! every response arrives while the pacer spins.

use std::collections::VecDeque;

use metronome_core::plan::{pace, spin_step, Pace, SpinStep};

const US: u64 = 1_000;
const GAP: u64 = 100 * US;
const SERVICE: u64 = 30 * US;
const SPIN: u64 = 200 * US;
/// One poll of the spin loop advances the virtual clock this much.
const POLL: u64 = 1;

/// Runs 20 sends; returns (send times, latency of each response as
/// stamped: stamp - send).
fn run(reap_while_spinning: bool) -> (Vec<u64>, Vec<u64>) {
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
                    inflight.push_back((now + SERVICE, now));
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
