//! Golden tests for `metronome_core::measure`: the stream hand example,
//! error paths, goodput against SLO bounds, and exact merges.

use metronome_core::measure::Slo;
use metronome_core::measure::{ErrorKind, Interval, Recorder, StreamSummary, StreamTiming};

const MS: u64 = 1_000_000;

/// Feeds content chunks at `content_ms`, returning the ITL gaps.
fn feed(t: &mut StreamTiming, content_ms: &[u64]) -> Vec<u64> {
    content_ms
        .iter()
        .filter_map(|&at| t.on_content(at * MS))
        .collect()
}

/// The hand example: intended 0, content at 120, 150, 190 ms, usage 3
/// tokens, [DONE] at 200 ms.
fn hand_example() -> (StreamTiming, Vec<u64>) {
    let mut t = StreamTiming::new(0, 2 * MS);
    let gaps = feed(&mut t, &[120, 150, 190]);
    t.on_usage(3);
    t.on_done(200 * MS);
    (t, gaps)
}

#[test]
fn stream_hand_example() {
    let (t, gaps) = hand_example();
    assert_eq!(gaps, [30 * MS, 40 * MS]);
    assert_eq!(t.max_itl_ns, 40 * MS);
    assert_eq!(t.content_chunks, 3);
    assert_eq!(
        t.summary(),
        Ok(StreamSummary {
            ttft_ns: 120 * MS,
            e2e_ns: 200 * MS,
            tokens: 3,
            // (190 - 120) / (3 - 1) = 35 ms: the decode pace, without the
            // 10 ms tail to [DONE].
            tpot_ns: Some(35 * MS),
            tail_ns: 10 * MS,
            ttfat_ns: Some(120 * MS),
            done: true,
        })
    );

    let mut r = Box::new(Recorder::new());
    assert_eq!(r.record_stream(&t, &gaps, &Slo::default()), Ok(true));
    assert_eq!(r.ttft.min(), 120 * MS);
    assert_eq!(r.latency.min(), 200 * MS);
    assert_eq!(r.service_time.min(), 198 * MS);
    assert_eq!(
        (r.itl.count(), r.itl.min(), r.itl.max()),
        (2, 30 * MS, 40 * MS)
    );
    assert_eq!(r.itl.sum(), 70 * MS as u128);
    assert_eq!(
        (r.itl_chunk.count(), r.itl_chunk.min(), r.itl_chunk.max()),
        (2, 30 * MS, 40 * MS)
    );
    assert_eq!((r.tpot.count(), r.tpot.max()), (1, 35 * MS));
    assert_eq!((r.tail.count(), r.tail.max()), (1, 10 * MS));
    assert_eq!((r.ok, r.good, r.output_tokens), (1, 1, 3));
    assert_eq!(r.errors_total(), 0);
}

#[test]
fn usage_preferred_over_chunk_count() {
    let mut t = StreamTiming::new(0, 0);
    feed(&mut t, &[120, 150, 190]);
    t.on_usage(7);
    t.on_done(200 * MS);
    let s = t.summary().unwrap();
    assert_eq!(s.tokens, 7);
    // (190 - 120) ms / 6 = 11_666_666.67 ns, rounded down.
    assert_eq!(s.tpot_ns, Some(11_666_666));
    assert_eq!(s.tpot_ns, Some(70 * MS / 6));
    // Per-token ITL: the 6 tokens after the first spread over the two
    // gaps, 3 each: 30/3 = 10 ms three times, 40/3 ms three times.
    let mut r = Box::new(Recorder::new());
    let gaps = [30 * MS, 40 * MS];
    assert_eq!(r.record_stream(&t, &gaps, &Slo::default()), Ok(true));
    assert_eq!((r.itl.count(), r.itl.min()), (6, 10 * MS));
    assert_eq!(r.itl.sum(), 3 * 10 * MS as u128 + 3 * (40 * MS / 3) as u128);
    assert_eq!(r.itl_chunk.count(), 2);

    // Without usage: the chunk count.
    let mut t = StreamTiming::new(0, 0);
    feed(&mut t, &[120, 150, 190]);
    t.on_done(200 * MS);
    assert_eq!(t.summary().unwrap().tokens, 3);

    // One token: no TPOT, and no TPOT recorded.
    let mut t = StreamTiming::new(10 * MS, 10 * MS);
    feed(&mut t, &[120]);
    t.on_done(130 * MS);
    assert_eq!(
        t.summary(),
        Ok(StreamSummary {
            ttft_ns: 110 * MS,
            e2e_ns: 120 * MS,
            tokens: 1,
            tpot_ns: None,
            tail_ns: 10 * MS,
            ttfat_ns: Some(110 * MS),
            done: true,
        })
    );
    let mut r = Box::new(Recorder::new());
    let slo = Slo {
        tpot_ns: Some(1),
        ..Slo::default()
    };
    assert_eq!(r.record_stream(&t, &[], &slo), Ok(true)); // an undefined TPOT meets the bound
    assert!(r.tpot.is_empty());
    assert_eq!(r.output_tokens, 1);
}

#[test]
fn no_content_and_no_done_are_errors_that_enter_no_histogram() {
    let mut r = Box::new(Recorder::new());

    let mut empty = StreamTiming::new(0, 0);
    empty.on_usage(0);
    empty.on_done(50 * MS);
    assert_eq!(empty.summary(), Err(ErrorKind::NoContent));
    assert_eq!(
        r.record_stream(&empty, &[], &Slo::default()),
        Err(ErrorKind::NoContent)
    );

    let mut cut = StreamTiming::new(0, 0);
    let gaps = feed(&mut cut, &[10, 20, 30]);
    assert_eq!(cut.summary(), Err(ErrorKind::StreamCut));
    assert_eq!(
        r.record_stream(&cut, &gaps, &Slo::default()),
        Err(ErrorKind::StreamCut)
    );

    // Neither content nor done: the cut is reported.
    assert_eq!(StreamTiming::new(0, 0).summary(), Err(ErrorKind::StreamCut));

    r.record_error(ErrorKind::Timeout);
    r.record_status(503);
    for h in [
        &r.latency,
        &r.service_time,
        &r.ttft,
        &r.itl,
        &r.tpot,
        &r.corrected,
    ] {
        assert!(h.is_empty());
    }
    assert_eq!((r.ok, r.good, r.output_tokens), (0, 0, 0));
    // reset, timeout, status, bad_framing, too_large, stream_cut,
    // stream_error, no_content, not_event_stream, grpc_status
    assert_eq!(r.errors, [0, 1, 1, 0, 0, 1, 0, 1, 0, 0, 0]);
    assert_eq!(r.timeouts, 1);
    assert_eq!(r.status[403], 1);
    assert_eq!(r.errors_total(), 4);
}

#[test]
fn goodput_against_slo_bounds() {
    let (t, gaps) = hand_example();
    // (slo, good?) for the hand example: TTFT 120, max ITL 40, TPOT 35, E2E 200 ms.
    let cases = [
        (Slo::default(), true),
        (
            Slo {
                ttft_ns: Some(120 * MS),
                ..Slo::default()
            },
            true,
        ),
        (
            Slo {
                ttft_ns: Some(120 * MS - 1),
                ..Slo::default()
            },
            false,
        ),
        (
            Slo {
                itl_ns: Some(40 * MS),
                ..Slo::default()
            },
            true,
        ),
        (
            Slo {
                itl_ns: Some(39 * MS),
                ..Slo::default()
            },
            false,
        ),
        (
            Slo {
                tpot_ns: Some(35 * MS),
                ..Slo::default()
            },
            true,
        ),
        (
            Slo {
                tpot_ns: Some(35 * MS - 1),
                ..Slo::default()
            },
            false,
        ),
        (
            Slo {
                latency_ns: Some(200 * MS),
                ..Slo::default()
            },
            true,
        ),
        (
            Slo {
                latency_ns: Some(199 * MS),
                ..Slo::default()
            },
            false,
        ),
        (
            Slo {
                latency_ns: Some(200 * MS),
                ttft_ns: Some(120 * MS),
                itl_ns: Some(40 * MS),
                tpot_ns: Some(40 * MS),
            },
            true,
        ),
    ];
    let mut r = Box::new(Recorder::new());
    for (slo, good) in cases {
        assert_eq!(r.record_stream(&t, &gaps, &slo), Ok(good), "{slo:?}");
    }
    assert_eq!((r.ok, r.good), (10, 6));
    // Failures are never good, whatever the SLO.
    let cut = StreamTiming::new(0, 0);
    assert_eq!(
        r.record_stream(&cut, &[], &Slo::default()),
        Err(ErrorKind::StreamCut)
    );
    assert_eq!((r.ok, r.good), (10, 6));

    // Plain requests: only the latency bound applies.
    let mut p = Box::new(Recorder::new());
    let slo = Slo {
        latency_ns: Some(10 * MS),
        ttft_ns: Some(1),
        ..Slo::default()
    };
    for done in [5, 10, 11, 40] {
        p.record_ok(0, MS, done * MS, &slo);
    }
    assert_eq!((p.ok, p.good), (4, 2));
    assert_eq!(p.latency.max(), 40 * MS);
    assert_eq!(p.service_time.min(), 4 * MS);
}

#[test]
fn send_lag_and_counters() {
    let mut r = Box::new(Recorder::new());
    for _ in 0..3 {
        r.record_scheduled();
    }
    r.record_sent(1_000, 1_500);
    r.record_sent(2_000, 1_999); // early: lag 0
    r.record_dropped();
    assert_eq!((r.scheduled, r.sent, r.dropped), (3, 2, 1));
    assert_eq!(
        (r.send_lag.min(), r.send_lag.max(), r.send_lag.sum()),
        (0, 500, 500)
    );
    // Every three-digit code is in the table (600 and 999 too); a code the
    // parser would never give (99) counts only as an error.
    r.record_status(99);
    r.record_status(600);
    r.record_status(100);
    r.record_status(999);
    assert_eq!(r.errors[ErrorKind::Status.index()], 4);
    assert_eq!((r.status[0], r.status[500], r.status[899]), (1, 1, 1));
    assert_eq!(r.status.iter().sum::<u64>(), 3);
}

#[test]
fn error_kind_names_and_indices() {
    let names: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(
        names,
        [
            "reset",
            "timeout",
            "status",
            "bad_framing",
            "too_large",
            "stream_cut",
            "stream_error",
            "no_content",
            "not_event_stream",
            "grpc_status",
            "check"
        ]
    );
    assert_eq!(ErrorKind::COUNT, 11);
    for (i, k) in ErrorKind::ALL.into_iter().enumerate() {
        assert_eq!(k.index(), i);
        assert_eq!(k.to_string(), k.name());
    }
}

/// Builds a recorder from a small deterministic script, offset by `seed`.
fn scripted(seed: u64) -> Box<Recorder> {
    let mut r = Box::new(Recorder::new());
    let slo = Slo {
        latency_ns: Some(50 * MS),
        ..Slo::default()
    };
    for i in 0..20u64 {
        let intended = (seed * 100 + i) * MS;
        r.record_scheduled();
        match (i + seed) % 5 {
            0 => r.record_error(ErrorKind::ALL[(i % 8) as usize]),
            1 => r.record_status(400 + (i % 100) as u16),
            2 if i % 3 == 0 => r.record_grpc_status((i + seed) as u32 % 20),
            2 => r.record_dropped(),
            _ => {
                r.record_sent(intended, intended + i * 1_000);
                r.record_ok(
                    intended,
                    intended + i * 1_000,
                    intended + (i * 7 + seed) * MS,
                    &slo,
                );
            }
        }
    }
    let (t, gaps) = hand_example();
    r.record_stream(&t, &gaps, &slo).unwrap();
    r.corrected.record_corrected(seed * 3 * MS + 1, MS);
    r
}

#[test]
fn merge_is_exact() {
    let a = scripted(1);
    let b = scripted(2);
    let mut m = a.clone();
    m.merge(&b);
    assert_eq!(m.scheduled, a.scheduled + b.scheduled);
    assert_eq!(m.sent, a.sent + b.sent);
    assert_eq!(m.ok, a.ok + b.ok);
    assert_eq!(m.good, a.good + b.good);
    assert_eq!(m.dropped, a.dropped + b.dropped);
    assert_eq!(m.timeouts, a.timeouts + b.timeouts);
    assert_eq!(m.output_tokens, 6);
    assert_eq!(m.errors_total(), a.errors_total() + b.errors_total());
    for i in 0..ErrorKind::COUNT {
        assert_eq!(m.errors[i], a.errors[i] + b.errors[i]);
    }
    for i in 0..500 {
        assert_eq!(m.status[i], a.status[i] + b.status[i]);
    }
    assert!(a.grpc.iter().sum::<u64>() > 0 && b.grpc.iter().sum::<u64>() > 0);
    for i in 0..metronome_core::measure::GRPC_CODES {
        assert_eq!(m.grpc[i], a.grpc[i] + b.grpc[i]);
    }
    let mut lat = a.latency.clone();
    lat.merge(&b.latency);
    assert_eq!(m.latency, lat);
    assert_eq!(m.latency.count(), a.latency.count() + b.latency.count());
    assert_eq!(
        m.corrected.count(),
        a.corrected.count() + b.corrected.count()
    );
    // Merging in the other order gives the same recorder.
    let mut n = b.clone();
    n.merge(&a);
    assert_eq!(m, n);
    // Exact numbers of the script: seed 1 has 8 plain ok of 20 plus the stream,
    // 4 errors by kind, 4 statuses, 1 grpc-status (7) and 3 drops.
    assert_eq!((a.ok, a.errors_total(), a.dropped), (9, 9, 3));
    assert_eq!(a.status.iter().sum::<u64>(), 4);
    assert_eq!((a.grpc[7], a.grpc.iter().sum::<u64>()), (1, 1));
}

#[test]
fn interval_merge_is_exact() {
    let mut a = Interval::new();
    let mut b = Interval::default();
    a.sent = 3;
    a.ok = 2;
    a.errors = 1;
    a.latency.record(5 * MS);
    a.send_lag.record(10);
    b.sent = 4;
    b.ok = 4;
    b.latency.record(7 * MS);
    b.latency.record(MS);
    a.merge(&b);
    assert_eq!((a.sent, a.ok, a.errors), (7, 6, 1));
    assert_eq!(
        (a.latency.count(), a.latency.min(), a.latency.max()),
        (3, MS, 7 * MS)
    );
    assert_eq!(a.latency.sum(), 13 * MS as u128);
    assert_eq!(a.send_lag.count(), 1);
}

/// Per-token ITL: per-chunk usage gives each chunk its tokens exactly;
/// slots dropped beyond the caller's buffer take their tokens with them.
#[test]
fn per_token_itl_known_counts_and_dropped_slots() {
    use metronome_core::measure::slot;
    // Known per-chunk tokens: 3 then 1 after the first chunk.
    let mut t = StreamTiming::new(0, 0);
    t.on_content(10 * MS);
    t.on_content(40 * MS);
    t.on_content(50 * MS);
    t.on_usage(5);
    t.on_done(60 * MS);
    let slots = [
        slot::pack(30 * MS, 3, true, true),
        slot::pack(10 * MS, 1, true, true),
    ];
    let mut r = Box::new(Recorder::new());
    r.record_stream(&t, &slots, &Slo::default()).unwrap();
    assert_eq!(
        (r.itl.count(), r.itl.min(), r.itl.max()),
        (4, 10 * MS, 10 * MS)
    );
    // Five chunks, 9 tokens, only the first two of four gaps kept: they
    // carry 8 * 2 / 4 = 4 tokens, 2 each.
    let mut t = StreamTiming::new(0, 0);
    for at in [10, 20, 30, 40, 50] {
        t.on_content(at * MS);
    }
    t.on_usage(9);
    t.on_done(60 * MS);
    let mut r = Box::new(Recorder::new());
    r.record_stream(&t, &[10 * MS, 10 * MS], &Slo::default())
        .unwrap();
    assert_eq!((r.itl.count(), r.itl.max()), (4, 5 * MS));
    assert_eq!(r.tpot.max(), 40 * MS / 8);
}
