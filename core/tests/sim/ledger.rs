//! Simulation tests of [`Ledger`], the bookkeeping both engines share, on
//! a virtual clock with exact facts: the warmup boundary, intervals of
//! sends and completions (a completion after the end in the last one),
//! unsent requests as timeouts, drops, the closed model's correction, and
//! the accounting every report promises.

use metronome_core::exchange::Finish;
use metronome_core::histogram::Histogram;
use metronome_core::ledger::{Ledger, Tally};
use metronome_core::measure::Slo;
use metronome_core::measure::{ErrorKind, Interval, Recorder, StreamTiming, Unsent};
use metronome_core::plan::{example_plan, Plan};

const MS: u64 = 1_000_000;

/// The example plan (0.5 s warmup, 1 s measured, 2 s timeout) with 250 ms
/// intervals: four of them, covering 0.5-0.75-1.0-1.25-1.5 s.
fn plan() -> Plan<'static> {
    Plan {
        interval_ns: 250 * MS,
        ..example_plan()
    }
}

struct Books {
    recorder: Box<Recorder>,
    intervals: Vec<Interval>,
}

impl Books {
    fn new(plan: &Plan<'_>) -> Books {
        Books {
            recorder: Box::new(Recorder::new()),
            intervals: (0..plan.interval_count())
                .map(|_| Interval::new())
                .collect(),
        }
    }

    fn tally(&mut self) -> Tally<'_> {
        Tally {
            recorder: &mut self.recorder,
            intervals: &mut self.intervals,
            stages: &mut [],
            names: &mut [],
            samples: None,
            follow_ups: None,
            requests: None,
        }
    }

    fn column(&self, f: impl Fn(&Interval) -> u64) -> Vec<u64> {
        self.intervals.iter().map(f).collect()
    }
}

#[test]
fn warmup_boundary_is_exact() {
    let plan = plan();
    assert_eq!(plan.interval_count(), 4);
    let ledger = Ledger::new(&plan);
    let mut b = Books::new(&plan);
    let t = &mut b.tally();
    // One nanosecond before the warmup's end: sent and answered, never recorded.
    let early = 500 * MS - 1;
    assert!(!ledger.scheduled(t, early, 0));
    assert!(!ledger.sent(t, early, 0, early));
    assert_eq!(ledger.done(t, early, 0, early, 600 * MS, Finish::Ok), None);
    assert!(!ledger.dropped(t, early, 0));
    assert!(!ledger.unsent(t, early, 0, 600 * MS, Unsent::Connect));
    // Exactly at the end of the warmup: recorded.
    let first = 500 * MS;
    assert!(ledger.scheduled(t, first, 0));
    assert!(ledger.sent(t, first, 0, first + 3));
    assert_eq!(
        ledger.done(t, first, 0, first + 3, first + 7 * MS, Finish::Ok),
        Some(true)
    );
    let r = &b.recorder;
    assert_eq!((r.scheduled, r.sent, r.ok, r.dropped), (1, 1, 1, 0));
    assert_eq!(r.errors_total(), 0);
    assert_eq!(r.latency.max(), 7 * MS);
    assert_eq!(r.send_lag.max(), 3);
    assert_eq!(b.column(|iv| iv.sent), [1, 0, 0, 0]);
    assert_eq!(b.column(|iv| iv.ok), [1, 0, 0, 0]);
}

#[test]
fn sends_and_completions_count_in_their_own_intervals() {
    let plan = plan();
    let ledger = Ledger::new(&plan);
    let mut b = Books::new(&plan);
    let t = &mut b.tally();
    // Intended at 0.6 s, sent 2 ms late, answered at 0.9 s: the send in
    // interval 0, the completion in interval 1.
    assert!(ledger.sent(t, 600 * MS, 0, 602 * MS));
    assert_eq!(
        ledger.done(t, 600 * MS, 0, 602 * MS, 900 * MS, Finish::Ok),
        Some(true)
    );
    // Intended at 1.4 s, answered at 1.7 s, after the schedule's end (1.5 s):
    // counted in the last interval.
    assert!(ledger.sent(t, 1_400 * MS, 0, 1_400 * MS));
    assert_eq!(
        ledger.done(
            t,
            1_400 * MS,
            0,
            1_400 * MS,
            1_700 * MS,
            Finish::Status(503)
        ),
        Some(false)
    );
    // A request sent at 1.1 s times out at 3.1 s, long after the end.
    assert!(ledger.sent(t, 1_100 * MS, 0, 1_100 * MS));
    assert_eq!(
        ledger.done(
            t,
            1_100 * MS,
            0,
            1_100 * MS,
            3_100 * MS,
            Finish::Error(ErrorKind::Timeout)
        ),
        Some(false)
    );
    assert_eq!(b.column(|iv| iv.sent), [1, 0, 1, 1]);
    assert_eq!(b.column(|iv| iv.ok), [0, 1, 0, 0]);
    assert_eq!(b.column(|iv| iv.errors), [0, 0, 0, 2]);
    assert_eq!(b.intervals[0].send_lag.max(), 2 * MS);
    assert_eq!(b.intervals[1].latency.max(), 300 * MS);
    let r = &b.recorder;
    assert_eq!(r.status[503 - 100], 1);
    assert_eq!(r.errors[ErrorKind::Status.index()], 1);
    assert_eq!((r.timeouts, r.errors[ErrorKind::Timeout.index()]), (1, 1));
    // Failed requests enter no latency histogram.
    assert_eq!(r.latency.count(), 1);
    assert_eq!(r.service_time.max(), 298 * MS);
}

#[test]
fn unsent_requests_are_neither_ok_nor_errors() {
    let plan = plan();
    let ledger = Ledger::new(&plan);
    let mut b = Books::new(&plan);
    let t = &mut b.tally();
    let hard_end = plan.hard_end_ns();
    assert_eq!(hard_end, 3_500 * MS);
    assert!(ledger.scheduled(t, 1_200 * MS, 0));
    assert!(ledger.unsent(t, 1_200 * MS, 0, hard_end, Unsent::Timeout));
    assert!(ledger.scheduled(t, 600 * MS, 0));
    assert!(ledger.unsent(t, 600 * MS, 0, 601 * MS, Unsent::Connect));
    let r = &b.recorder;
    assert_eq!((r.scheduled, r.sent, r.timeouts), (2, 0, 0));
    assert_eq!(r.unsent, [1, 1, 0]);
    assert_eq!((r.unsent_total(), r.errors_total()), (2, 0));
    assert_eq!(b.column(|iv| iv.unsent), [1, 0, 0, 1]);
    assert_eq!(b.column(|iv| iv.errors), [0, 0, 0, 0]);
}

/// The hard-end rule every engine asks (`Ledger::too_late`): a job taken
/// 1 ns before the hard end is sent; at it or after, it is never sent,
/// `Unsent::Timeout`; a retried one fails as the reset it retried.
#[test]
fn a_job_taken_at_the_hard_end_is_never_sent() {
    let plan = plan();
    let ledger = Ledger::new(&plan);
    let mut b = Books::new(&plan);
    let t = &mut b.tally();
    let end = plan.hard_end_ns();
    assert!(ledger.scheduled(t, 1_200 * MS, 0));
    assert_eq!(ledger.too_late(t, end - 1, end, 1_200 * MS, 0, false), None);
    assert_eq!(
        ledger.too_late(t, end, end, 1_200 * MS, 0, false),
        Some(None)
    );
    assert!(ledger.scheduled(t, 1_300 * MS, 0));
    assert_eq!(
        ledger.too_late(t, end + 7, end, 1_300 * MS, 0, false),
        Some(None)
    );
    assert!(ledger.scheduled(t, 1_400 * MS, 0));
    assert!(ledger.sent(t, 1_400 * MS, 0, 1_400 * MS));
    assert_eq!(
        ledger.too_late(t, end, end, 1_400 * MS, 0, true),
        Some(Some(false))
    );
    let r = &b.recorder;
    assert_eq!((r.scheduled, r.sent, r.timeouts), (3, 1, 0));
    assert_eq!(r.unsent, [0, 2, 0]);
    assert_eq!(r.errors[ErrorKind::Reset.index()], 1);
}

#[test]
fn retries_and_connection_events_are_counted_apart() {
    let plan = plan();
    let ledger = Ledger::new(&plan);
    let mut b = Books::new(&plan);
    let t = &mut b.tally();
    assert!(!ledger.retried(t, 400 * MS)); // warmup
    assert!(ledger.retried(t, 600 * MS));
    ledger.idle_closed(t, 400 * MS); // warmup: not counted
    ledger.idle_closed(t, 700 * MS);
    ledger.unsolicited(t, 800 * MS);
    let r = &b.recorder;
    assert_eq!((r.retried, r.idle_closed, r.unsolicited), (1, 1, 1));
    assert_eq!((r.errors_total(), r.sent, r.ok), (0, 0, 0));
}

#[test]
fn closed_model_corrects_successes_only() {
    let plan = plan();
    let ledger = Ledger::new(&plan);
    let mut b = Books::new(&plan);
    let t = &mut b.tally();
    // A success of 100 ms with an expected interval of 10 ms: HdrHistogram's
    // correction adds the values 90, 80, ..., 10 ms (10 in all).
    assert_eq!(
        ledger.closed_done(t, 0, 600 * MS, 700 * MS, Finish::Ok, Some(10 * MS)),
        Some(true)
    );
    let mut expected = Histogram::new();
    expected.record_corrected(100 * MS, 10 * MS);
    assert_eq!(expected.count(), 10);
    // A failure enters neither histogram; a success without an interval
    // enters the corrected one once, uncorrected.
    assert_eq!(
        ledger.closed_done(t, 0, 800 * MS, 900 * MS, Finish::Status(500), Some(10 * MS)),
        Some(false)
    );
    assert_eq!(
        ledger.closed_done(t, 0, 800 * MS, 805 * MS, Finish::Ok, None),
        Some(true)
    );
    expected.record(5 * MS);
    // Warmup: not recorded.
    assert_eq!(
        ledger.closed_done(t, 0, 100 * MS, 900 * MS, Finish::Ok, Some(10 * MS)),
        None
    );
    let r = &b.recorder;
    assert_eq!(r.corrected, expected);
    assert_eq!(r.corrected.count(), 11);
    assert_eq!(r.latency.count(), 2);
    assert_eq!(r.latency.max(), 100 * MS);
    assert_eq!(r.ok, 2);
    assert_eq!(r.errors_total(), 1);
}

#[test]
fn streams_are_judged_by_the_recorder() {
    let plan = Plan {
        slo: Slo {
            ttft_ns: Some(150 * MS),
            ..Slo::default()
        },
        ..plan()
    };
    let ledger = Ledger::new(&plan);
    let mut b = Books::new(&plan);
    let t = &mut b.tally();
    let mut timing = StreamTiming::new(600 * MS, 600 * MS);
    timing.on_content(720 * MS);
    timing.on_content(750 * MS);
    timing.on_done(760 * MS);
    let gaps = [30 * MS];
    let finish = Finish::Stream {
        timing: &timing,
        gaps: &gaps,
    };
    assert_eq!(
        ledger.done(t, 600 * MS, 0, 600 * MS, 760 * MS, finish),
        Some(true)
    );
    // Cut before [DONE]: an error, counted as a stream cut.
    let mut cut = StreamTiming::new(700 * MS, 700 * MS);
    cut.on_content(720 * MS);
    let finish = Finish::Stream {
        timing: &cut,
        gaps: &[],
    };
    assert_eq!(
        ledger.done(t, 700 * MS, 0, 700 * MS, 730 * MS, finish),
        Some(false)
    );
    let r = &b.recorder;
    assert_eq!((r.ok, r.good, r.output_tokens), (1, 1, 2));
    assert_eq!(r.ttft.max(), 120 * MS);
    assert_eq!(r.itl.max(), 30 * MS);
    assert_eq!(r.errors[ErrorKind::StreamCut.index()], 1);
    // Done at 760 ms (interval 1), cut at 730 ms (interval 0).
    assert_eq!(b.column(|iv| iv.ok), [0, 1, 0, 0]);
    assert_eq!(b.column(|iv| iv.errors), [1, 0, 0, 0]);
}

/// A scripted run on a virtual clock, as an engine would report it: a
/// constant schedule of 8 requests per 250 ms interval (32 per second), a
/// server answering in 4 ms, a pool that drops every 5th request, the last
/// three caught unsent by a stop, and the accounting the report promises.
#[test]
fn scripted_run_keeps_the_accounting() {
    let plan = Plan {
        rate: 32.0,
        ..plan()
    };
    let ledger = Ledger::new(&plan);
    let mut b = Books::new(&plan);
    let t = &mut b.tally();
    let schedule = plan.schedule(plan.shard).unwrap();
    let (mut sent, mut dropped, mut unsent, mut ok) = (0u64, 0u64, 0u64, 0u64);
    let mut measured = 0u64;
    let mut i = 0u64;
    for at in schedule {
        i += 1;
        let m = ledger.scheduled(t, at, 0);
        measured += u64::from(m);
        if i % 5 == 0 {
            dropped += u64::from(ledger.dropped(t, at, 0));
        } else if at >= 1_400 * MS {
            unsent += u64::from(ledger.unsent(t, at, 0, 1_450 * MS, Unsent::Timeout));
        } else if ledger.sent(t, at, 0, at + 1_000) {
            sent += 1;
            let done = ledger.done(t, at, 0, at + 1_000, at + 4 * MS, Finish::Ok);
            ok += u64::from(done == Some(true));
        } else {
            // Warmup: sent, not recorded.
            assert_eq!(
                ledger.done(t, at, 0, at + 1_000, at + 4 * MS, Finish::Ok),
                None
            );
        }
    }
    assert_eq!(i, 48); // 1.5 s at 32/s
    let r = &b.recorder;
    assert_eq!(r.scheduled, measured);
    assert_eq!(measured, 32);
    // scheduled = sent + dropped + unsent; sent = ok + errors.
    assert_eq!(r.scheduled, r.sent + r.dropped + r.unsent_total());
    assert_eq!(r.sent, r.ok + r.errors_total());
    assert_eq!(
        (r.sent, r.dropped, r.unsent_total(), r.ok),
        (sent, dropped, unsent, ok)
    );
    assert_eq!(r.errors_total(), 0);
    assert_eq!((sent, dropped, unsent), (23, 6, 3));
    assert_eq!(b.column(|iv| iv.sent).iter().sum::<u64>(), sent);
    assert_eq!(b.column(|iv| iv.ok).iter().sum::<u64>(), ok);
    assert_eq!(r.latency.max(), 4 * MS);
    assert_eq!(r.send_lag.max(), 1_000);
}

#[test]
fn last_complete_interval_for_progress() {
    let plan = plan();
    let ledger = Ledger::new(&plan);
    let mut b = Books::new(&plan);
    let t = &mut b.tally();
    assert!(ledger.sent(t, 600 * MS, 0, 600 * MS));
    ledger.done(t, 600 * MS, 0, 600 * MS, 640 * MS, Finish::Ok);
    assert_eq!(ledger.last_complete(&b.intervals, 700 * MS), None);
    assert_eq!(ledger.last_complete(&b.intervals, 100 * MS), None);
    let (i, p99, lag) = ledger.last_complete(&b.intervals, 760 * MS).unwrap();
    assert_eq!(i, 0);
    assert_eq!(p99, b.intervals[0].latency.quantile(0.99));
    assert!((40 * MS..=40 * MS + 40 * MS / 128).contains(&p99));
    assert_eq!(lag, 0);
}

/// The real window spans the first measured send to the last measured
/// completion (a failure included); successes after the schedule's end
/// (1.5 s) are late, with their tokens.
#[test]
fn real_window_and_late_completions() {
    let plan = plan();
    let ledger = Ledger::new(&plan);
    let mut b = Books::new(&plan);
    let t = &mut b.tally();
    // Warmup traffic never enters the window.
    assert!(!ledger.sent(t, 100 * MS, 0, 100 * MS));
    assert_eq!(
        ledger.done(t, 100 * MS, 0, 100 * MS, 1_900 * MS, Finish::Ok),
        None
    );
    assert!(ledger.sent(t, 600 * MS, 0, 601 * MS));
    assert!(ledger.sent(t, 1_400 * MS, 0, 1_400 * MS));
    assert!(ledger.sent(t, 1_450 * MS, 0, 1_450 * MS));
    // In the schedule: a plain success.
    assert_eq!(
        ledger.done(t, 600 * MS, 0, 601 * MS, 700 * MS, Finish::Ok),
        Some(true)
    );
    // After the end: a stream of 7 tokens (late), then a failure later still.
    let mut s = StreamTiming::new(1_400 * MS, 1_400 * MS);
    s.on_content(1_450 * MS);
    s.on_usage(7);
    s.on_done(1_600 * MS);
    let finish = Finish::Stream {
        timing: &s,
        gaps: &[],
    };
    assert_eq!(
        ledger.done(t, 1_400 * MS, 0, 1_400 * MS, 1_600 * MS, finish),
        Some(true)
    );
    assert_eq!(
        ledger.done(
            t,
            1_450 * MS,
            0,
            1_450 * MS,
            2_101 * MS,
            Finish::Status(503)
        ),
        Some(false)
    );
    let r = &b.recorder;
    assert_eq!((r.first_sent_ns, r.last_done_ns), (601 * MS, 2_101 * MS));
    assert_eq!(r.window_ns(), 1_500 * MS);
    assert_eq!(
        (r.ok, r.late_ok, r.output_tokens, r.late_tokens),
        (2, 1, 7, 7)
    );
    // Merging keeps the widest window.
    let mut other = Box::new(Recorder::new());
    other.record_sent(550 * MS, 550 * MS);
    other.record_done_at(900 * MS);
    let mut merged = b.recorder.clone();
    merged.merge(&other);
    assert_eq!(merged.window_ns(), 2_101 * MS - 550 * MS);
}

/// Drops and waits for a connection count in the interval of their intended
/// time (never in the warmup); pacing CPU counts in the interval of its
/// sample, during the measured phase only (not in the warmup, not in the
/// drain after the end).
#[test]
fn drops_waits_and_cpu_per_interval() {
    let plan = plan();
    let ledger = Ledger::new(&plan);
    let mut b = Books::new(&plan);
    let t = &mut b.tally();
    assert!(!ledger.dropped(t, 499 * MS, 0));
    assert!(!ledger.waited(t, 499 * MS, true));
    assert!(ledger.dropped(t, 500 * MS, 0));
    assert!(ledger.dropped(t, 1_499 * MS, 0));
    assert!(ledger.waited(t, 760 * MS, false));
    assert!(ledger.waited(t, 999 * MS, true));
    assert!(ledger.waited(t, 1_000 * MS, true));
    // Sends later than 1 ms count as late, in the interval of their
    // intended time; due requests count there too.
    assert!(ledger.sent(t, 600 * MS, 0, 600 * MS + 1_000_000));
    assert!(ledger.sent(t, 600 * MS, 0, 600 * MS + 1_000_001));
    assert!(ledger.sent(t, 1_200 * MS, 0, 1_300 * MS));
    assert!(ledger.sent(t, 740 * MS, 0, 800 * MS));
    assert!(ledger.scheduled(t, 740 * MS, 0));
    assert!(ledger.scheduled(t, 1_499 * MS, 0));
    assert!(!ledger.scheduled(t, 499 * MS, 0));
    ledger.busy(t, 400 * MS, 7 * MS, MS); // warmup: not counted
    ledger.busy(t, 600 * MS, 50 * MS, 20 * MS);
    ledger.busy(t, 700 * MS, 40 * MS, 30 * MS);
    ledger.busy(t, 1_300 * MS, 10 * MS, 0);
    ledger.busy(t, 1_600 * MS, 9 * MS, 9 * MS); // after the end: not counted
    assert_eq!(b.column(|i| i.dropped), [1, 0, 0, 1]);
    assert_eq!(b.column(|i| i.waited), [0, 2, 1, 0]);
    assert_eq!(b.column(|i| i.pool_full), [0, 1, 1, 0]);
    assert_eq!(b.column(|i| i.late), [2, 0, 1, 0]);
    assert_eq!(b.column(|i| i.scheduled), [1, 0, 0, 1]);
    // A late send counts as late because of its wait when the wait was the
    // larger part: 3 ms late after waiting 2.5 ms yes, after 1 ms no; 0.9
    // ms late: not late at all.
    let t = &mut b.tally();
    ledger.waited_for(t, 800 * MS, 800 * MS + 500_000, 803 * MS);
    ledger.waited_for(t, 800 * MS, 802 * MS, 803 * MS);
    ledger.waited_for(t, 800 * MS, 800 * MS, 800 * MS + 900_000);
    ledger.waited_for(t, 400 * MS, 400 * MS, 500 * MS); // warmup
    assert_eq!(b.column(|i| i.late_waiting), [0, 1, 0, 0]);
    assert_eq!(b.column(|i| i.cpu_ns), [90 * MS, 0, 0, 10 * MS]);
    assert_eq!(b.column(|i| i.spin_ns), [50 * MS, 0, 0, 0]);
    assert_eq!(b.recorder.dropped, 2);
    // Merging intervals adds the new counters too.
    let mut sum = Interval::new();
    for iv in &b.intervals {
        sum.merge(iv);
    }
    assert_eq!(
        (
            sum.dropped,
            sum.waited,
            sum.pool_full,
            sum.late,
            sum.scheduled
        ),
        (2, 3, 2, 3, 2)
    );
    assert_eq!((sum.cpu_ns, sum.spin_ns), (100 * MS, 50 * MS));
}

/// A request mix: every fact lands in the row of its request's name, the
/// rows balance (`scheduled = sent + dropped + unsent`, `sent = ok +
/// errors`) and add up to the run's counts; warmup facts are in no row.
#[test]
fn named_rows_balance_and_add_up() {
    use metronome_core::measure::NameTally;
    const A: &[u8] = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
    const B: &[u8] = b"GET /b HTTP/1.1\r\nHost: x\r\n\r\n";
    let requests: [&[u8]; 3] = [A, B, A];
    let plan = Plan {
        requests: &requests,
        names: &[0, 1, 0],
        ..plan()
    };
    assert_eq!(plan.name_count(), 2);
    let ledger = Ledger::new(&plan);
    let mut b = Books::new(&plan);
    let mut names = [NameTally::new(), NameTally::new()];
    let t = &mut Tally {
        recorder: &mut b.recorder,
        intervals: &mut b.intervals,
        stages: &mut [],
        names: &mut names,
        samples: None,
        follow_ups: None,
        requests: None,
    };
    // Warmup: nothing anywhere.
    assert!(!ledger.scheduled(t, 100 * MS, 1));
    assert!(!ledger.sent(t, 100 * MS, 1, 100 * MS));
    // Request 0 (a): ok in 3 ms after 1 ms of lag; request 2 (a): a 503.
    for (at, req) in [(600 * MS, 0), (700 * MS, 2)] {
        assert!(ledger.scheduled(t, at, req));
        assert!(ledger.sent(t, at, req, at + MS));
    }
    assert_eq!(
        ledger.done(t, 600 * MS, 0, 601 * MS, 604 * MS, Finish::Ok),
        Some(true)
    );
    let failed = ledger.done(t, 700 * MS, 2, 701 * MS, 702 * MS, Finish::Status(503));
    assert_eq!(failed, Some(false));
    // Request 1 (b): one dropped, one never sent, one a failed retry.
    assert!(ledger.scheduled(t, 800 * MS, 1));
    assert!(ledger.dropped(t, 800 * MS, 1));
    assert!(ledger.scheduled(t, 900 * MS, 1));
    assert!(ledger.unsent(t, 900 * MS, 1, 950 * MS, Unsent::Connect));
    assert!(ledger.scheduled(t, MS * 1000, 1));
    assert!(ledger.sent(t, MS * 1000, 1, MS * 1000));
    let retry = ledger.not_sent(t, MS * 1000, 1, MS * 1001, Unsent::Connect, true);
    assert_eq!(retry, Some(false));
    let [a, b_row] = &names;
    assert_eq!(
        (a.scheduled, a.sent, a.ok, a.errors, a.dropped, a.unsent),
        (2, 2, 1, 1, 0, 0)
    );
    assert_eq!(
        (
            b_row.scheduled,
            b_row.sent,
            b_row.ok,
            b_row.errors,
            b_row.dropped,
            b_row.unsent
        ),
        (3, 1, 0, 1, 1, 1)
    );
    assert_eq!(a.by_kind[ErrorKind::Status.index()], 1);
    assert_eq!(b_row.by_kind[ErrorKind::Reset.index()], 1);
    assert_eq!((a.latency.max(), a.service_time.max()), (4 * MS, 3 * MS));
    assert_eq!((a.send_lag.count(), a.send_lag.max()), (2, MS));
    let r = &b.recorder;
    assert_eq!(a.scheduled + b_row.scheduled, r.scheduled);
    assert_eq!(a.sent + b_row.sent, r.sent);
    assert_eq!(a.ok + b_row.ok, r.ok);
    assert_eq!(a.dropped + b_row.dropped, r.dropped);
}

/// The done-when on a virtual clock: every E2E value of a run falls
/// in one histogram bucket, so the histogram's p50, p99 and max agree; the
/// exact samples the ledger hands to the caller's sink give the true
/// median, and only successes enter them.
#[test]
fn exact_samples_give_the_sample_median() {
    use metronome_core::measure::{linear, nearest_rank, Exact, SampleSink};
    #[derive(Debug, Default)]
    struct Sink(Vec<(Exact, u64)>);
    impl SampleSink for Sink {
        fn record(&mut self, metric: Exact, value_ns: u64) {
            self.0.push((metric, value_ns));
        }
    }
    let plan = plan();
    let ledger = Ledger::new(&plan);
    let mut b = Books::new(&plan);
    let mut sink = Sink::default();
    let t = &mut Tally {
        recorder: &mut b.recorder,
        intervals: &mut b.intervals,
        stages: &mut [],
        names: &mut [],
        samples: Some(&mut sink),
        follow_ups: None,
        requests: None,
    };
    // Five E2E values within 3 ms of 2.74 s (one 16.8 ms bucket there).
    let e2e_ms = [2_741.26, 2_740.30, 2_742.90, 2_739.95, 2_743.47];
    for (i, ms) in e2e_ms.iter().enumerate() {
        let at = 600 * MS + i as u64 * MS;
        let e2e = (ms * 1e6) as u64;
        assert!(ledger.sent(t, at, 0, at + 1_000));
        assert_eq!(
            ledger.done(t, at, 0, at + 1_000, at + e2e, Finish::Ok),
            Some(true)
        );
    }
    // A failure is no sample.
    assert!(ledger.sent(t, 700 * MS, 0, 700 * MS));
    let failed = ledger.done(t, 700 * MS, 0, 700 * MS, 701 * MS, Finish::Status(500));
    assert_eq!(failed, Some(false));
    let h = &b.recorder.latency;
    assert_eq!(h.quantile(0.5), h.quantile(0.99)); // one bucket
    let mut lat: Vec<u64> = sink
        .0
        .iter()
        .filter(|(m, _)| *m == Exact::Latency)
        .map(|&(_, v)| v)
        .collect();
    lat.sort_unstable();
    assert_eq!(lat.len(), 5);
    assert_eq!(nearest_rank(&lat, 0.5), Some(2_741_260_000));
    assert_eq!(linear(&lat, 0.5), Some(2_741_260_000.0));
    assert!(h.quantile(0.5) > 2_741_260_000);
    let services = sink
        .0
        .iter()
        .filter(|(m, _)| *m == Exact::ServiceTime)
        .count();
    assert_eq!(services, 5);
}

/// gRPC outcomes: `grpc-status 0` is ok, another code an error by code,
/// none bad framing; every one counted once, the accounting exact.
#[test]
fn grpc_outcomes_counted_by_code() {
    use metronome_core::measure::{FramingCause, GRPC_OTHER};
    let plan = plan();
    let ledger = Ledger::new(&plan);
    let mut b = Books::new(&plan);
    let t = &mut b.tally();
    let outcomes = [
        Finish::for_grpc(Some(200), Some(0)),
        Finish::for_grpc(Some(200), Some(14)),
        Finish::for_grpc(Some(200), Some(14)),
        Finish::for_grpc(Some(200), Some(5)),
        Finish::for_grpc(Some(200), Some(40)),
        Finish::for_grpc(Some(200), None),
        Finish::for_grpc(Some(429), Some(14)),
    ];
    for (i, f) in outcomes.into_iter().enumerate() {
        let at = 600 * MS + i as u64 * MS;
        assert!(ledger.scheduled(t, at, 0));
        assert!(ledger.sent(t, at, 0, at));
        let ok = ledger.done(t, at, 0, at, at + MS, f);
        assert_eq!(ok, Some(i == 0), "{f:?}");
    }
    let r = &b.recorder;
    assert_eq!((r.sent, r.ok, r.errors_total()), (7, 1, 6));
    assert_eq!(r.errors[ErrorKind::GrpcStatus.index()], 4);
    assert_eq!((r.grpc[14], r.grpc[5], r.grpc[GRPC_OTHER]), (2, 1, 1));
    assert_eq!(r.grpc.iter().sum::<u64>(), 4);
    assert_eq!(r.errors[ErrorKind::BadFraming.index()], 1);
    assert_eq!(r.framing[FramingCause::NoGrpcStatus.index()], 1);
    assert_eq!((r.errors[ErrorKind::Status.index()], r.status[329]), (1, 1));
    assert_eq!(b.column(|iv| iv.errors).iter().sum::<u64>(), 6);
}

/// The stream series of an interval (issue 31): a stream's TTFT enters the
/// interval of its first output (not of its completion), its tokens the
/// interval of its completion (as `ok`); a failed stream adds neither;
/// bytes count in the interval of their read or write, none in the warmup.
/// In flight at an interval's end is sent so far minus ended so far.
#[test]
fn stream_series_per_interval() {
    let plan = plan(); // intervals 0.5-0.75-1.0-1.25-1.5 s
    let ledger = Ledger::new(&plan);
    let mut b = Books::new(&plan);
    let t = &mut b.tally();
    // Intended 0.6 s, first output 0.7 s (interval 0), done 1.1 s (interval 2).
    let mut long = StreamTiming::new(600 * MS, 600 * MS);
    long.on_content(700 * MS);
    long.on_content(1_000 * MS);
    long.on_usage(9);
    long.on_done(1_100 * MS);
    // Intended 0.8 s, first output 0.9 s, done 0.95 s (both interval 1).
    let mut short = StreamTiming::new(800 * MS, 800 * MS);
    short.on_content(900 * MS);
    short.on_usage(4);
    short.on_done(950 * MS);
    // Intended 0.8 s, cut after its first output at 0.85 s: an error.
    let mut cut = StreamTiming::new(800 * MS, 800 * MS);
    cut.on_content(850 * MS);
    assert!(ledger.sent(t, 600 * MS, 0, 600 * MS));
    assert!(ledger.sent(t, 800 * MS, 0, 800 * MS));
    assert!(ledger.sent(t, 800 * MS, 0, 800 * MS));
    let stream = |timing| Finish::Stream { timing, gaps: &[] };
    assert_eq!(
        ledger.done(t, 800 * MS, 0, 800 * MS, 950 * MS, stream(&short)),
        Some(true)
    );
    assert_eq!(
        ledger.done(t, 800 * MS, 0, 800 * MS, 960 * MS, stream(&cut)),
        Some(false)
    );
    assert_eq!(
        ledger.done(t, 600 * MS, 0, 600 * MS, 1_100 * MS, stream(&long)),
        Some(true)
    );
    ledger.transferred(t, 400 * MS, 1_000, 1_000); // warmup: not counted
    ledger.transferred(t, 600 * MS, 0, 120);
    ledger.transferred(t, 700 * MS, 300, 0);
    ledger.transferred(t, 1_100 * MS, 50, 0);
    ledger.transferred(t, 9_000 * MS, 7, 0); // past the series: the last interval
    assert_eq!(b.column(|i| i.ttft.count()), [1, 1, 0, 0]);
    assert_eq!(b.column(|i| i.ttft.max()), [100 * MS, 100 * MS, 0, 0]);
    assert_eq!(b.column(|i| i.output_tokens), [0, 4, 9, 0]);
    assert_eq!(b.column(|i| i.bytes_received), [300, 0, 50, 7]);
    assert_eq!(b.column(|i| i.bytes_sent), [120, 0, 0, 0]);
    let mut in_flight = 0;
    let ends: Vec<u64> = b
        .intervals
        .iter()
        .map(|i| {
            in_flight = in_flight + i.sent - i.ok - i.errors;
            in_flight
        })
        .collect();
    assert_eq!(ends, [1, 1, 0, 0]);
    assert_eq!(b.recorder.output_tokens, 13);
}

/// Issue 38, item 2: a pacer stalled past an interval's end leaves the
/// interval incomplete by the one rule every live view uses
/// ([`Counts::is_complete`] against the schedule's count,
/// [`Plan::interval_offers`]), whatever its counts so far say; so do
/// requests still waiting for a connection. Once every due request of the
/// interval was handled and settled (sent, dropped or never sent) it is
/// complete, and `scheduled` equals the schedule's count exactly.
///
/// [`Counts::is_complete`]: metronome_core::measure::Counts::is_complete
#[test]
fn a_stalled_pacer_leaves_its_intervals_incomplete() {
    let plan = plan(); // 100 req/s, 250 ms intervals: 25 due in each
    let offers: Vec<u64> = plan.interval_offers().unwrap().collect();
    assert_eq!(offers, [25, 25, 25, 25]);
    let all: Vec<u64> = plan.schedule(plan.shard).unwrap().collect();
    let ledger = Ledger::new(&plan);
    let mut b = Books::new(&plan);
    // The pacer handled the requests due up to 600 ms, then stalled: 10
    // of interval 0's 25, sent on time.
    let handled = |t: u64| (500 * MS..600 * MS).contains(&t);
    for &t in all.iter().filter(|&&t| handled(t)) {
        assert!(ledger.scheduled(&mut b.tally(), t, 0));
        assert!(ledger.sent(&mut b.tally(), t, 0, t));
    }
    let iv0 = &b.intervals[0].counts;
    assert_eq!((iv0.scheduled, iv0.settled), (10, 10));
    // Its counts agree with each other, but not with the schedule.
    assert!(iv0.is_complete(None));
    assert!(!iv0.is_complete(Some(offers[0])));
    // The pacer wakes at 900 ms: interval 0's other 15 are due at once;
    // 5 of them wait for a connection (and 3 are dropped).
    let rest: Vec<u64> = all
        .iter()
        .copied()
        .filter(|&t| (600 * MS..750 * MS).contains(&t))
        .collect();
    assert_eq!(rest.len(), 15);
    for (k, &t) in rest.iter().enumerate() {
        let t_ = &mut b.tally();
        assert!(ledger.scheduled(t_, t, 0));
        match k {
            0..=2 => {
                assert!(ledger.dropped(t_, t, 0));
            }
            3..=7 => {
                assert!(ledger.waited(t_, t, false));
            }
            _ => {
                assert!(ledger.sent(t_, t, 0, 900 * MS));
            }
        }
    }
    let iv0 = b.intervals[0].counts;
    assert_eq!((iv0.scheduled, iv0.settled, iv0.late), (25, 20, 7));
    assert!(!iv0.is_complete(Some(offers[0])), "5 still wait");
    // A connection frees at 1.3 s: the 5 that waited leave, late; one of
    // them (the last) is never sent.
    for &t in &rest[3..7] {
        assert!(ledger.sent(&mut b.tally(), t, 0, 1_300 * MS));
    }
    assert!(ledger.unsent(&mut b.tally(), rest[7], 0, 1_400 * MS, Unsent::Connect));
    let iv0 = b.intervals[0].counts;
    assert!(iv0.is_complete(Some(offers[0])));
    assert_eq!(
        (
            iv0.scheduled,
            iv0.settled,
            iv0.dropped,
            iv0.waited,
            iv0.late
        ),
        (25, 25, 3, 5, 11)
    );
    // Interval 1 was never reached: incomplete against its 25.
    assert!(!b.intervals[1].counts.is_complete(Some(offers[1])));
}
