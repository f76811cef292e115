//! Golden tests for the workload schedules: stages (`Schedule::staged`),
//! linear and exponential ramps, and trace replay (`Schedule::trace`).
//! Exact offsets for hand examples (worked out in 50-digit decimals), exact
//! counts per stage for constant arrivals, and for Poisson and gamma the
//! time change of the unit-rate sequence checked against the steady
//! schedule and against the expected count per stage.

use metronome_core::plan::{example_plan, Plan, Profile};
use metronome_core::rng::Pcg32;
use metronome_core::schedule::{
    Arrival, Ramp, Schedule, ScheduleError, Shard, Stage, Stages, Trace,
};

const S: u64 = 1_000_000_000;

fn stage(duration_ns: u64, target_rps: f64) -> Stage {
    Stage {
        duration_ns,
        target_rps,
    }
}

fn linear(start_rps: f64, stages: &[Stage]) -> Stages<'_> {
    Stages {
        start_rps,
        stages,
        ramp: Ramp::Linear,
    }
}

fn staged(arrival: Arrival, stages: Stages<'_>, seed: u64, shard: Shard) -> Vec<u64> {
    Schedule::staged(arrival, stages, seed, stages.total_ns(), shard)
        .expect("valid stages")
        .collect()
}

/// Offsets per stage, by `Stages::stage_of`.
fn per_stage(stages: &Stages<'_>, offsets: &[u64]) -> Vec<usize> {
    let mut counts = vec![0; stages.stages.len()];
    for &o in offsets {
        counts[stages.stage_of(o).expect("inside the stages")] += 1;
    }
    counts
}

/// The issue's own example: 0 -> 100 req/s over 1 s, then 100 -> 300 over
/// 1 s: L(1 s) = 50, L(2 s) = 250, so exactly 50 + 200 requests, the 51st
/// exactly at 1 s (the second stage's first), none at 2 s (the end).
#[test]
fn one_hundred_then_three_hundred_is_fifty_plus_two_hundred() {
    let st = [stage(S, 100.0), stage(S, 300.0)];
    let s = linear(0.0, &st);
    let all = staged(Arrival::Constant, s, 0, Shard::WHOLE);
    assert_eq!(all.len(), 250);
    assert_eq!(per_stage(&s, &all), [50, 200]);
    assert_eq!(all[0], 0);
    assert_eq!(all[50], S);
    // Arrival i of the first stage at sqrt(i / 50) s.
    assert_eq!(all[1], 141_421_356); // sqrt(0.02) = 0.1414213562...
    assert_eq!(all[49], 989_949_494); // sqrt(0.98) = 0.98994949366...
    assert!(all.windows(2).all(|w| w[0] < w[1]));
    // Whatever the split: every shard count up to 16.
    for n in 1..=16u32 {
        let mut union: Vec<u64> = (0..n)
            .flat_map(|index| staged(Arrival::Constant, s, 0, Shard { index, count: n }))
            .collect();
        union.sort_unstable();
        assert_eq!(union, all, "{n} shards");
    }
}

/// k6's example from the issue: 30s:1000, 1m:5000, 30s:5000 from 0 gives
/// 15 000 + 180 000 + 150 000 requests.
#[test]
fn k6_stages_count_exactly_per_stage() {
    let st = [
        stage(30 * S, 1000.0),
        stage(60 * S, 5000.0),
        stage(30 * S, 5000.0),
    ];
    let s = linear(0.0, &st);
    assert_eq!(s.total_ns(), 120 * S);
    let all = staged(Arrival::Constant, s, 0, Shard::WHOLE);
    assert_eq!(per_stage(&s, &all), [15_000, 180_000, 150_000]);
    assert_eq!(all[15_000], 30 * S);
    assert_eq!(all[195_000], 90 * S);
    // The flat last stage places arrival 195 000 + j at 90 s + j / 5000 s.
    assert_eq!(all[195_001], 90 * S + 200_000);
    assert_eq!(*all.last().unwrap(), 120 * S - 200_000);
}

/// Hand example: 0 -> 4 req/s over 1 s (L = 2 t^2: arrival i at sqrt(i/2)
/// s), then 4 req/s for 1 s (arrivals 2..6 at 1 + (i - 2) / 4 s).
#[test]
fn linear_ramp_hand_example_is_exact() {
    let st = [stage(S, 4.0), stage(S, 4.0)];
    let s = linear(0.0, &st);
    assert_eq!(
        staged(Arrival::Constant, s, 0, Shard::WHOLE),
        [
            0,
            707_106_781,
            S,
            1_250_000_000,
            1_500_000_000,
            1_750_000_000
        ]
    );
    // Down from 4 to 0 over 1 s: L = 4t - 2t^2, L(1) = 2; arrival 1 at
    // 1 - sqrt(2)/2 = 0.29289321881... s; arrival 2 would be at the end.
    let down = [stage(S, 0.0)];
    assert_eq!(
        staged(Arrival::Constant, linear(4.0, &down), 0, Shard::WHOLE),
        [0, 292_893_219]
    );
}

/// vLLM's exponential ramp: 1 -> 4 req/s over 2 s is the rate 2^t, whose
/// integral is (2^t - 1) / ln 2, so arrival i is at log2(1 + i ln 2) s.
/// In 50-digit decimals: 0.7597073881389, 1.2547720175235, 1.6226687411473
/// and 1.9155548298785 s; the 6th, at 2.1588 s, is past the end.
#[test]
fn exponential_ramp_hand_example_is_exact() {
    let st = [stage(2 * S, 4.0)];
    let s = Stages {
        start_rps: 1.0,
        stages: &st,
        ramp: Ramp::Exponential,
    };
    assert_eq!(
        staged(Arrival::Constant, s, 0, Shard::WHOLE),
        [0, 759_707_388, 1_254_772_018, 1_622_668_741, 1_915_554_830]
    );
    // The expected count is the integral: 3 / ln 2.
    assert!((s.expected_before(2 * S) - 3.0 / core::f64::consts::LN_2).abs() < 1e-12);
    // A geometric ramp between equal rates is the steady rate.
    let flat = [stage(S, 10.0)];
    let s = Stages {
        start_rps: 10.0,
        stages: &flat,
        ramp: Ramp::Exponential,
    };
    assert_eq!(
        staged(Arrival::Constant, s, 0, Shard::WHOLE),
        (0..10).map(|i| i * 100_000_000).collect::<Vec<_>>()
    );
}

/// An exponential ramp that would start from (or reach) 0 is refused, as
/// vLLM refuses it; so are stages without a positive rate or duration.
#[test]
fn bad_stages_are_refused() {
    let to_100 = [stage(S, 100.0)];
    let exp_from_0 = Stages {
        start_rps: 0.0,
        stages: &to_100,
        ramp: Ramp::Exponential,
    };
    let to_0 = [stage(S, 0.0)];
    let exp_to_0 = Stages {
        start_rps: 5.0,
        stages: &to_0,
        ramp: Ramp::Exponential,
    };
    let none: [Stage; 0] = [];
    let zero_len = [stage(0, 100.0)];
    let nan = [stage(S, f64::NAN)];
    let build = |s| Schedule::staged(Arrival::Constant, s, 0, S, Shard::WHOLE).err();
    assert_eq!(build(exp_from_0), Some(ScheduleError::ZeroExponentialRate));
    assert_eq!(build(exp_to_0), Some(ScheduleError::ZeroExponentialRate));
    assert_eq!(
        build(linear(0.0, &none)),
        Some(ScheduleError::InvalidStages)
    );
    assert_eq!(
        build(linear(0.0, &zero_len)),
        Some(ScheduleError::InvalidStages)
    );
    assert_eq!(
        build(linear(0.0, &to_0)),
        Some(ScheduleError::InvalidStages)
    );
    assert_eq!(build(linear(0.0, &nan)), Some(ScheduleError::InvalidStages));
    assert_eq!(
        build(linear(-1.0, &to_100)),
        Some(ScheduleError::InvalidStages)
    );
}

/// A 0 s stage jumps: 100 req/s for 1 s, then 400 req/s for 1 s.
#[test]
fn a_zero_second_stage_jumps() {
    let st = [
        stage(0, 100.0),
        stage(S, 100.0),
        stage(0, 400.0),
        stage(S, 400.0),
    ];
    let s = linear(0.0, &st);
    let all = staged(Arrival::Constant, s, 0, Shard::WHOLE);
    assert_eq!(per_stage(&s, &all), [0, 100, 0, 400]);
    assert_eq!(all[100], S);
    assert_eq!(all[101], S + 2_500_000);
}

/// A flat stage from its own rate is the steady schedule, to the ns (the
/// steady constant is exact in integers, the staged one a float division;
/// Poisson and gamma are the same unit-rate draws scaled).
#[test]
fn a_flat_stage_is_the_steady_schedule() {
    for arrival in [
        Arrival::Constant,
        Arrival::Burst { size: 5 },
        Arrival::Poisson,
        Arrival::Gamma { burstiness: 0.5 },
        Arrival::Gamma { burstiness: 4.0 },
    ] {
        let st = [stage(3 * S, 1234.5)];
        let s = linear(1234.5, &st);
        let ramped = staged(arrival, s, 7, Shard::WHOLE);
        let steady: Vec<u64> = Schedule::new(arrival, 1234.5, 7, 3 * S, Shard::WHOLE)
            .unwrap()
            .collect();
        assert!(ramped.len().abs_diff(steady.len()) <= 1, "{arrival:?}");
        for (a, b) in ramped.iter().zip(&steady) {
            assert!(a.abs_diff(*b) <= 1, "{arrival:?}: {a} vs {b}");
        }
    }
}

/// Poisson and gamma through a ramp: each stage holds about its expected
/// count (the integral of the rate), within 4 standard deviations (for
/// gamma, the renewal variance: L / k).
#[test]
fn random_processes_follow_the_ramp() {
    let st = [
        stage(10 * S, 2000.0),
        stage(10 * S, 500.0),
        stage(10 * S, 500.0),
    ];
    for ramp in [Ramp::Linear, Ramp::Exponential] {
        let s = Stages {
            start_rps: 100.0,
            stages: &st,
            ramp,
        };
        for (arrival, k) in [
            (Arrival::Poisson, 1.0),
            (Arrival::Gamma { burstiness: 0.5 }, 0.5),
            (Arrival::Gamma { burstiness: 4.0 }, 4.0),
        ] {
            let all = staged(arrival, s, 11, Shard::WHOLE);
            assert!(all.windows(2).all(|w| w[0] <= w[1]));
            let counts = per_stage(&s, &all);
            for (i, &got) in counts.iter().enumerate() {
                let (from, until) = s.bounds_ns(i);
                let want = s.expected_before(until) - s.expected_before(from);
                let sd = (want / k).sqrt();
                assert!(
                    (got as f64 - want).abs() < 4.0 * sd + 16.0,
                    "{ramp:?} {arrival:?} stage {i}: {got} vs {want:.0}"
                );
            }
        }
    }
}

/// A thousand offsets replayed exactly, shard by shard (offset i to shard
/// i mod n), cut at the end, and scaled by a speed.
#[test]
fn trace_offsets_are_replayed_exactly() {
    let mut rng = Pcg32::seeded(21);
    let mut offsets = Vec::with_capacity(1000);
    let mut t = 0u64;
    for _ in 0..1000 {
        t += u64::from(rng.next_u32() % 3_000_000); // gaps of 0 to 3 ms, ties included
        offsets.push(t);
    }
    let trace = Trace {
        offsets_ns: &offsets,
        speed: 1.0,
    };
    assert_eq!(trace.validate(), Ok(()));
    let end = trace.end_ns();
    assert_eq!(end, offsets[999] + 1);
    let whole: Vec<u64> = Schedule::trace(trace, end, Shard::WHOLE).unwrap().collect();
    assert_eq!(whole, offsets);
    for n in 1..=7u32 {
        for index in 0..n {
            let part: Vec<u64> = Schedule::trace(trace, end, Shard { index, count: n })
                .unwrap()
                .collect();
            let want: Vec<u64> = offsets
                .iter()
                .copied()
                .skip(index as usize)
                .step_by(n as usize)
                .collect();
            assert_eq!(part, want, "shard {index}/{n}");
        }
    }
    // A shorter run keeps the offsets below its end.
    let cut = offsets[500];
    let kept: Vec<u64> = Schedule::trace(trace, cut, Shard::WHOLE).unwrap().collect();
    assert_eq!(
        kept,
        offsets
            .iter()
            .copied()
            .take_while(|&o| o < cut)
            .collect::<Vec<_>>()
    );
    // Twice as fast: every offset halved, halves rounded away from zero.
    let fast = Trace {
        offsets_ns: &offsets,
        speed: 2.0,
    };
    let got: Vec<u64> = Schedule::trace(fast, fast.end_ns(), Shard::WHOLE)
        .unwrap()
        .collect();
    assert_eq!(
        got,
        offsets.iter().map(|o| o.div_ceil(2)).collect::<Vec<_>>()
    );
    assert_eq!(fast.count_between(0, fast.end_ns()), 1000);
}

#[test]
fn bad_traces_are_refused() {
    let back = Trace {
        offsets_ns: &[0, 5, 4],
        speed: 1.0,
    };
    assert_eq!(
        Schedule::trace(back, 10, Shard::WHOLE).err(),
        Some(ScheduleError::UnsortedTrace)
    );
    for speed in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let t = Trace {
            offsets_ns: &[0],
            speed,
        };
        assert_eq!(
            Schedule::trace(t, 10, Shard::WHOLE).err(),
            Some(ScheduleError::InvalidTraceSpeed)
        );
    }
}

/// The plan's profile: the schedule, the stage of an intended time, and
/// what the measured phase offers.
#[test]
fn plan_profiles_schedule_and_attribute() {
    let st = [stage(S, 100.0), stage(S, 300.0)];
    let plan = Plan {
        profile: Profile::Stages(linear(0.0, &st)),
        rate: 300.0,
        warmup_ns: 500_000_000,
        duration_ns: 1_500_000_000,
        ..example_plan()
    };
    assert_eq!(plan.validate(), Ok(()));
    assert_eq!(plan.stage_count(), 2);
    assert_eq!(plan.schedule(Shard::WHOLE).unwrap().count(), 250);
    // L(2) - L(0.5) = 250 - 12.5.
    assert_eq!(plan.offered_between(plan.warmup_ns, plan.end_ns()), 237.5);
    assert_eq!(plan.stage_of(0), Some(0));
    assert_eq!(plan.stage_of(2 * S), None);
    let offsets = [1, 2, 3];
    let replay = Plan {
        profile: Profile::Trace(Trace {
            offsets_ns: &offsets,
            speed: 1.0,
        }),
        ..example_plan()
    };
    assert!(replay.schedule(Shard::WHOLE).unwrap().eq([1, 2, 3]));
    assert_eq!(replay.stage_count(), 0);
    assert_eq!(replay.offered_between(0, 3), 2.0);
}

/// The ledger counts each request in the stage of its intended time, not
/// of its send or completion: a request intended just before a boundary
/// and answered after it stays in the first stage; warmup requests in none.
#[test]
fn the_ledger_attributes_by_intended_time() {
    use metronome_core::exchange::Finish;
    use metronome_core::ledger::{Ledger, Tally};
    use metronome_core::measure::{ErrorKind, Interval, Recorder, StageTally};
    let st = [stage(S, 100.0), stage(S, 300.0)];
    let plan = Plan {
        profile: Profile::Stages(linear(0.0, &st)),
        rate: 300.0,
        warmup_ns: 100_000_000,
        duration_ns: 1_900_000_000,
        ..example_plan()
    };
    let ledger = Ledger::new(&plan);
    let mut rec = Recorder::new();
    let mut intervals = vec![Interval::new(); plan.interval_count()];
    let mut stages = vec![StageTally::new(); plan.stage_count()];
    let mut tally = Tally {
        recorder: &mut rec,
        intervals: &mut intervals,
        stages: &mut stages,
        names: &mut [],
        samples: None,
        follow_ups: None,
        requests: None,
    };
    // Warmup: nothing counted.
    assert!(!ledger.scheduled(&mut tally, 50_000_000, 0));
    // Intended 999 ms, sent 1001 ms, answered 1005 ms: stage 0.
    let t = S - 1_000_000;
    assert!(ledger.scheduled(&mut tally, t, 0));
    assert!(ledger.sent(&mut tally, t, 0, S + 1_000_000));
    let done = ledger.done(&mut tally, t, 0, S + 1_000_000, S + 5_000_000, Finish::Ok);
    assert_eq!(done, Some(true));
    // Intended at 1 s exactly: stage 1, failed.
    assert!(ledger.scheduled(&mut tally, S, 0));
    assert!(ledger.sent(&mut tally, S, 0, S));
    let failed = ledger.done(&mut tally, S, 0, S, S + 1, Finish::Error(ErrorKind::Reset));
    assert_eq!(failed, Some(false));
    // Intended at 1.5 s: dropped.
    assert!(ledger.scheduled(&mut tally, 1_500_000_000, 0));
    assert!(ledger.dropped(&mut tally, 1_500_000_000, 0));
    let row = |s: &StageTally| (s.scheduled, s.sent, s.ok, s.errors, s.dropped);
    assert_eq!(row(&stages[0]), (1, 1, 1, 0, 0));
    assert_eq!(stages[0].latency.max(), 6_000_000);
    assert_eq!(row(&stages[1]), (2, 1, 0, 1, 1));
}
