//! Simulation test of conversations through the [`Ledger`], on a virtual
//! clock: the schedule opens sessions, each turn's end (as the ledger
//! records it) brings the next turn at end + think time into the engine's
//! storage, and every way a session ends is counted exactly: completed,
//! abandoned (a failed, dropped or unsent turn), cut by the schedule's end,
//! overflowed (no room), unfinished.

use metronome_core::exchange::Finish;
use metronome_core::ledger::{Ledger, Tally};
use metronome_core::measure::{ErrorKind, Interval, Recorder, Unsent};
use metronome_core::plan::{example_plan, Plan};
use metronome_core::turns::{FollowUpSink, Turns, NO_TURN};

const MS: u64 = 1_000_000;

/// A sink with room for `room` next turns.
#[derive(Debug, Default)]
struct Sink {
    room: usize,
    got: Vec<(u64, usize)>,
}

impl FollowUpSink for Sink {
    fn push(&mut self, intended_ns: u64, request: usize) -> bool {
        if self.got.len() >= self.room {
            return false;
        }
        self.got.push((intended_ns, request));
        true
    }
}

/// Sessions: request 0 -> 2 -> 3 (three turns), request 1 (one turn).
const NEXT: [u32; 4] = [2, NO_TURN, 3, NO_TURN];

fn plan() -> Plan<'static> {
    const R: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    static REQS: [&[u8]; 4] = [R, R, R, R];
    Plan {
        requests: &REQS,
        warmup_ns: 0,
        turns: Turns {
            sessions: 2,
            next: &NEXT,
            think_ns: 100 * MS,
        },
        ..example_plan()
    }
}

fn tally<'a>(rec: &'a mut Recorder, ivs: &'a mut Vec<Interval>, sink: &'a mut Sink) -> Tally<'a> {
    Tally {
        recorder: rec,
        intervals: ivs,
        stages: &mut [],
        names: &mut [],
        samples: None,
        follow_ups: Some(sink),
        requests: None,
    }
}

#[test]
fn each_end_brings_the_next_turn_or_ends_the_session() {
    let plan = plan();
    assert_eq!(plan.validate(), Ok(()));
    // The schedule cycles through the sessions' first turns.
    assert_eq!(
        (0..5).map(|j| plan.request_index(j)).collect::<Vec<_>>(),
        [0, 1, 0, 1, 0]
    );
    let ledger = Ledger::new(&plan);
    let mut rec = Box::new(Recorder::new());
    let mut ivs: Vec<Interval> = (0..plan.interval_count())
        .map(|_| Interval::new())
        .collect();
    let mut sink = Sink {
        room: 2,
        got: Vec::new(),
    };
    let mut t = tally(&mut rec, &mut ivs, &mut sink);
    // Session A (0 -> 2 -> 3): every turn succeeds.
    ledger.scheduled(&mut t, 0, 0);
    ledger.finished(&mut t, 0, 0, 0, 30 * MS, Finish::Ok);
    ledger.scheduled(&mut t, 130 * MS, 2);
    ledger.finished(&mut t, 130 * MS, 2, 131 * MS, 170 * MS, Finish::Ok);
    ledger.scheduled(&mut t, 270 * MS, 3);
    ledger.finished(&mut t, 270 * MS, 3, 270 * MS, 290 * MS, Finish::Ok);
    // Session B (1): one turn, completed.
    ledger.scheduled(&mut t, 10 * MS, 1);
    ledger.finished(&mut t, 10 * MS, 1, 10 * MS, 20 * MS, Finish::Ok);
    // Session C (0 ...): its first turn fails: abandoned, no next turn.
    ledger.scheduled(&mut t, 300 * MS, 0);
    ledger.finished(&mut t, 300 * MS, 0, 300 * MS, 310 * MS, Finish::Status(500));
    // Session D: dropped; session E: never sent. Both abandoned.
    ledger.scheduled(&mut t, 400 * MS, 0);
    ledger.dropped(&mut t, 400 * MS, 0);
    ledger.scheduled(&mut t, 500 * MS, 0);
    ledger.unsent(&mut t, 500 * MS, 0, 600 * MS, Unsent::Timeout);
    // Session F: its next turn would be due at 1.45 s, after the
    // schedule's end (1 s): cut.
    ledger.scheduled(&mut t, 900 * MS, 0);
    ledger.finished(&mut t, 900 * MS, 0, 900 * MS, 1_350 * MS, Finish::Ok);
    // Session G: a next turn with no room left (A took both places):
    // overflowed.
    ledger.scheduled(&mut t, 600 * MS, 0);
    ledger.finished(&mut t, 600 * MS, 0, 600 * MS, 610 * MS, Finish::Ok);
    // Session H: a retried first turn that fails as the reset: abandoned.
    ledger.scheduled(&mut t, 700 * MS, 0);
    ledger.not_sent(&mut t, 700 * MS, 0, 720 * MS, Unsent::Timeout, true);
    // Session I: still in flight at the end: unfinished.
    ledger.scheduled(&mut t, 800 * MS, 0);
    assert_eq!(sink.got, [(130 * MS, 2), (270 * MS, 3)]);
    let s = rec.sessions;
    assert_eq!(s.started, 9);
    assert_eq!(s.follow_ups, 2);
    assert_eq!(
        (
            s.completed,
            s.abandoned,
            s.cut,
            s.overflowed,
            s.unfinished()
        ),
        (2, 4, 1, 1, 1)
    );
    // Every turn is also an ordinary request in the books.
    assert_eq!(rec.scheduled, 11);
    assert_eq!(rec.dropped, 1);
    assert_eq!(rec.errors[ErrorKind::Status.index()], 1);
}

#[test]
fn a_warm_up_turn_brings_its_next_turn_too() {
    let plan = Plan {
        warmup_ns: 500 * MS,
        ..plan()
    };
    let ledger = Ledger::new(&plan);
    let mut rec = Box::new(Recorder::new());
    let mut ivs: Vec<Interval> = (0..plan.interval_count())
        .map(|_| Interval::new())
        .collect();
    let mut sink = Sink {
        room: 4,
        got: Vec::new(),
    };
    let mut t = tally(&mut rec, &mut ivs, &mut sink);
    ledger.scheduled(&mut t, 0, 0);
    assert_eq!(ledger.finished(&mut t, 0, 0, 0, 450 * MS, Finish::Ok), None);
    ledger.scheduled(&mut t, 300 * MS, 0);
    ledger.finished(
        &mut t,
        300 * MS,
        0,
        300 * MS,
        310 * MS,
        Finish::Error(ErrorKind::Reset),
    );
    // The next turn is measured: due at 550 ms, after the warmup.
    assert_eq!(sink.got, [(550 * MS, 2)]);
    assert_eq!((rec.sessions.started, rec.sessions.abandoned), (2, 1));
    assert_eq!(rec.scheduled, 0);
}

#[test]
fn inconsistent_turns_are_refused() {
    let looped = [1, 0, NO_TURN, NO_TURN];
    let p = Plan {
        turns: Turns {
            sessions: 1,
            next: &looped,
            think_ns: 0,
        },
        ..plan()
    };
    assert_eq!(p.validate(), Err(metronome_core::plan::PlanError::Turns));
    let closed = Plan {
        model: metronome_core::plan::Model::Closed {
            workers: 2,
            expected_interval_ns: None,
        },
        ..plan()
    };
    assert_eq!(
        closed.validate(),
        Err(metronome_core::plan::PlanError::Turns)
    );
}
