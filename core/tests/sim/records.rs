//! The per-request records the [`Ledger`] hands to a [`RequestSink`]
//! (`--out-requests`): a hand sequence of ledger calls gives exactly these
//! records, one per measured request however it ended, none for the
//! warm-up.

use metronome_core::exchange::Finish;
use metronome_core::ledger::{Ledger, Tally};
use metronome_core::measure::{ErrorKind, FramingCause, Interval, Recorder, StreamTiming, Unsent};
use metronome_core::plan::{example_plan, Model, Plan};
use metronome_core::record::{Outcome, RequestRecord, RequestSink, ResponseHead};

const MS: u64 = 1_000_000;

#[derive(Debug, Default)]
struct Kept(Vec<RequestRecord>);

impl RequestSink for Kept {
    fn record(&mut self, record: &RequestRecord) {
        self.0.push(*record);
    }
}

/// A record with nothing known but its intended time, request and outcome.
fn bare(intended_ns: u64, outcome: Outcome) -> RequestRecord {
    RequestRecord {
        intended_ns,
        sent_ns: None,
        first_byte_ns: None,
        first_token_ns: None,
        end_ns: None,
        outcome,
        status: None,
        request: 0,
        input_tokens: Some(12),
        output_tokens: None,
    }
}

fn tally<'a>(
    recorder: &'a mut Recorder,
    intervals: &'a mut [Interval; 1],
    kept: &'a mut Kept,
) -> Tally<'a> {
    Tally {
        recorder,
        intervals,
        stages: &mut [],
        names: &mut [],
        samples: None,
        follow_ups: None,
        requests: Some(kept),
    }
}

#[test]
fn every_measured_request_ends_in_exactly_one_record() {
    // 0.5 s warm-up, 1 s measured; request 0 has a 12-token prompt.
    let plan = Plan {
        input_tokens: &[12],
        ..example_plan()
    };
    let ledger = Ledger::new(&plan);
    let mut recorder = Recorder::new();
    let mut kept = Kept::default();
    let mut intervals = [Interval::new()];
    let t = &mut tally(&mut recorder, &mut intervals, &mut kept);

    // Warm-up: answered, dropped, never sent: no record.
    let early = 500 * MS - 1;
    assert_eq!(ledger.done(t, early, 0, early, 600 * MS, Finish::Ok), None);
    assert!(!ledger.dropped(t, early, 0));
    assert!(!ledger.unsent(t, early, 0, early, Unsent::Connect));

    // 1. Answered 200: first byte at +5 ms, ended at +7 ms.
    let a = 500 * MS;
    let head = ResponseHead {
        first_byte_ns: Some(a + 5 * MS),
        status: Some(200),
    };
    assert!(ledger.sent(t, a, 0, a + 3));
    assert_eq!(
        ledger.answered(t, a, 0, a + 3, a + 7 * MS, Finish::Ok, head),
        Some(true)
    );
    // 2. A 503, its head known.
    let b = 600 * MS;
    let head = ResponseHead {
        first_byte_ns: Some(b + MS),
        status: Some(503),
    };
    assert_eq!(
        ledger.answered(t, b, 0, b, b + 2 * MS, Finish::Status(503), head),
        Some(false)
    );
    // 3. Dropped when due.
    assert!(ledger.dropped(t, 700 * MS, 0));
    // 4. Never sent: no connection, found at 0.9 s.
    assert!(ledger.unsent(t, 800 * MS, 0, 900 * MS, Unsent::Connect));
    // 5. A retried request that could not go out again: the reset that
    //    made it retry, sent and ended then; an unretried one is unsent.
    let e = 900 * MS;
    assert_eq!(
        ledger.not_sent(t, e, 0, e + MS, Unsent::Timeout, true),
        Some(false)
    );
    assert_eq!(
        ledger.not_sent(t, e, 0, e + MS, Unsent::Timeout, false),
        None
    );
    // 6. Bad framing, with no head known (`finished`).
    let f = 1_000 * MS;
    let framing = Finish::Framing(FramingCause::ChunkSize);
    assert_eq!(ledger.finished(t, f, 0, f, f + MS, framing), Some(false));
    // 7. A stream: first output at +50 ms, 7 tokens by usage, [DONE] at +90 ms.
    let g = 1_100 * MS;
    let mut s = StreamTiming::new(g, g + 1);
    s.on_content(g + 50 * MS);
    s.on_usage(7);
    s.on_done(g + 90 * MS);
    let stream = Finish::Stream {
        timing: &s,
        gaps: &[],
    };
    let head = ResponseHead {
        first_byte_ns: Some(g + 10 * MS),
        status: Some(200),
    };
    assert_eq!(
        ledger.answered(t, g, 0, g + 1, g + 90 * MS, stream, head),
        Some(true)
    );
    // 8. A stream cut after its first output: an error, no tokens.
    let h = 1_200 * MS;
    let mut cut = StreamTiming::new(h, h);
    cut.on_content(h + 5 * MS);
    let stream = Finish::Stream {
        timing: &cut,
        gaps: &[],
    };
    assert_eq!(
        ledger.answered(t, h, 0, h, h + 9 * MS, stream, ResponseHead::default()),
        Some(false)
    );
    // 9. A timeout, nothing of a response.
    let i = 1_300 * MS;
    let timeout = Finish::Error(ErrorKind::Timeout);
    assert_eq!(ledger.done(t, i, 0, i, i + 20 * MS, timeout), Some(false));

    let want = vec![
        RequestRecord {
            sent_ns: Some(a + 3),
            first_byte_ns: Some(a + 5 * MS),
            end_ns: Some(a + 7 * MS),
            status: Some(200),
            ..bare(a, Outcome::Ok)
        },
        RequestRecord {
            sent_ns: Some(b),
            first_byte_ns: Some(b + MS),
            end_ns: Some(b + 2 * MS),
            status: Some(503),
            ..bare(b, Outcome::Status(503))
        },
        bare(700 * MS, Outcome::Dropped),
        RequestRecord {
            end_ns: Some(900 * MS),
            ..bare(800 * MS, Outcome::Unsent(Unsent::Connect))
        },
        RequestRecord {
            sent_ns: Some(e + MS),
            end_ns: Some(e + MS),
            ..bare(e, Outcome::Error(ErrorKind::Reset))
        },
        RequestRecord {
            end_ns: Some(e + MS),
            ..bare(e, Outcome::Unsent(Unsent::Timeout))
        },
        RequestRecord {
            sent_ns: Some(f),
            end_ns: Some(f + MS),
            ..bare(f, Outcome::Framing(FramingCause::ChunkSize))
        },
        RequestRecord {
            sent_ns: Some(g + 1),
            first_byte_ns: Some(g + 10 * MS),
            first_token_ns: Some(g + 50 * MS),
            end_ns: Some(g + 90 * MS),
            status: Some(200),
            output_tokens: Some(7),
            ..bare(g, Outcome::Ok)
        },
        RequestRecord {
            sent_ns: Some(h),
            end_ns: Some(h + 9 * MS),
            ..bare(h, Outcome::Error(ErrorKind::StreamCut))
        },
        RequestRecord {
            sent_ns: Some(i),
            end_ns: Some(i + 20 * MS),
            ..bare(i, Outcome::Error(ErrorKind::Timeout))
        },
    ];
    assert_eq!(kept.0, want);
    // As many records as the recorder's scheduled requests would be, each
    // in exactly one of its columns.
    let r = &recorder;
    let unsent: u64 = r.unsent_total();
    let errors: u64 = r.errors.iter().sum();
    assert_eq!(r.ok + errors + r.dropped + unsent, want.len() as u64);
}

#[test]
fn a_closed_loop_request_is_intended_at_its_send() {
    let plan = Plan {
        model: Model::Closed {
            workers: 1,
            expected_interval_ns: None,
        },
        ..example_plan()
    };
    let ledger = Ledger::new(&plan);
    let mut recorder = Recorder::new();
    let mut kept = Kept::default();
    let mut intervals = [Interval::new()];
    let t = &mut tally(&mut recorder, &mut intervals, &mut kept);
    let s = 700 * MS;
    let head = ResponseHead {
        first_byte_ns: Some(s + 4),
        status: Some(204),
    };
    // The intended time given is ignored: the send is the intended time.
    assert_eq!(
        ledger.answered(t, 0, 0, s, s + 9, Finish::Ok, head),
        Some(true)
    );
    assert_eq!(
        kept.0,
        vec![RequestRecord {
            intended_ns: s,
            sent_ns: Some(s),
            first_byte_ns: Some(s + 4),
            end_ns: Some(s + 9),
            status: Some(204),
            input_tokens: None,
            ..bare(s, Outcome::Ok)
        }]
    );
}
