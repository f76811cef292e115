//! One schedule, however the run is split: for every arrival process, every
//! split into 1..=5 engine threads inside 1..=3 plan shards (the io_uring
//! engine gives thread `t` of `T` the part [`Shard::split`] of its shard,
//! the rule tested here) sends exactly the whole schedule's offsets, compared
//! as sorted multisets, offset for offset. Each machine's threads together
//! send exactly that machine's shard. Constant and Poisson split the whole
//! sequence by arrival index, so no thread gets more than one arrival more
//! than another; gamma splits it by blocks of 16 arrivals, so no thread gets
//! more than one block (16 arrivals) more than another.

use metronome_core::schedule::{Arrival, Ramp, Schedule, Shard, Stage, Stages, Trace};

const S: u64 = 1_000_000_000;

fn offsets(arrival: Arrival, rate: f64, seed: u64, end_ns: u64, shard: Shard) -> Vec<u64> {
    let list: Vec<u64> = Schedule::new(arrival, rate, seed, end_ns, shard)
        .expect("valid schedule")
        .collect();
    assert!(
        list.windows(2).all(|w| w[0] <= w[1]),
        "{arrival:?} {shard:?}: offsets go back"
    );
    assert!(list.iter().all(|&o| o < end_ns), "{arrival:?} {shard:?}");
    list
}

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v
}

/// Every split of `arrival` into threads x shards against the whole.
fn check(arrival: Arrival, rate: f64, seed: u64, end_ns: u64) {
    let whole = offsets(arrival, rate, seed, end_ns, Shard::WHOLE);
    assert!(whole.len() > 1_000, "{arrival:?}: {} offsets", whole.len());
    // The most arrivals one thread may hold beyond another: burst splits
    // each burst (tested apart), gamma deals whole blocks of 16.
    let slack = match arrival {
        Arrival::Burst { .. } => None,
        Arrival::Gamma { .. } => Some(16),
        _ => Some(1),
    };
    for shards in 1..=3u32 {
        let mut run = Vec::new();
        for k in 0..shards {
            let machine = offsets(
                arrival,
                rate,
                seed,
                end_ns,
                Shard {
                    index: k,
                    count: shards,
                },
            );
            for threads in 1..=5u32 {
                let parts: Vec<Vec<u64>> = (0..threads)
                    .map(|t| {
                        let machine = Shard {
                            index: k,
                            count: shards,
                        };
                        offsets(arrival, rate, seed, end_ns, machine.split(t, threads))
                    })
                    .collect();
                if let Some(slack) = slack {
                    let sizes: Vec<usize> = parts.iter().map(Vec::len).collect();
                    let (lo, hi) = (sizes.iter().min(), sizes.iter().max());
                    assert!(
                        hi.unwrap() - lo.unwrap() <= slack,
                        "{arrival:?} shard {k}/{shards}, {threads} threads: {sizes:?}"
                    );
                }
                let union = sorted(parts.concat());
                assert_eq!(
                    union, machine,
                    "{arrival:?} shard {k}/{shards} split over {threads} threads"
                );
            }
            run.extend(machine);
        }
        assert_eq!(sorted(run), whole, "{arrival:?} over {shards} shards");
        // And every thread of every machine at once, shard by shard.
        for threads in 1..=5u32 {
            let n = shards * threads;
            let all: Vec<u64> = (0..n)
                .flat_map(|index| offsets(arrival, rate, seed, end_ns, Shard { index, count: n }))
                .collect();
            assert_eq!(
                sorted(all),
                whole,
                "{arrival:?}: {shards} shards x {threads} threads"
            );
        }
    }
}

#[test]
fn constant_splits_exactly() {
    check(Arrival::Constant, 3_000.0, 0, 2 * S);
    check(Arrival::Constant, 1_234.5, 0, 2 * S + 7);
}

#[test]
fn poisson_splits_exactly() {
    for seed in [0, 7, u64::MAX] {
        check(Arrival::Poisson, 3_000.0, seed, 2 * S);
    }
    check(Arrival::Poisson, 1_234.5, 42, 2 * S + 7);
}

#[test]
fn burst_splits_exactly() {
    // 7 per burst: every split into up to 15 parts, some larger than a burst.
    check(Arrival::Burst { size: 7 }, 3_000.0, 0, 2 * S);
    check(Arrival::Burst { size: 1 }, 1_234.5, 0, 2 * S + 7);
}

#[test]
fn gamma_splits_exactly() {
    check(Arrival::Gamma { burstiness: 0.5 }, 3_000.0, 9, 2 * S);
    check(Arrival::Gamma { burstiness: 3.0 }, 1_234.5, 10, 2 * S + 7);
}

/// `--threads 1` and `--threads N` schedule the same count (they did not
/// while each Poisson shard was an independent stream at rate / n).
#[test]
fn thread_count_does_not_change_the_count() {
    let end = S;
    let one = offsets(Arrival::Poisson, 3_000.0, 1, end, Shard::WHOLE).len();
    for threads in 2..=8u32 {
        let many: usize = (0..threads)
            .map(|index| {
                offsets(
                    Arrival::Poisson,
                    3_000.0,
                    1,
                    end,
                    Shard {
                        index,
                        count: threads,
                    },
                )
                .len()
            })
            .sum();
        assert_eq!(many, one, "{threads} threads");
    }
}

/// The staged schedule of `arrival` for `shard`, checked as [`offsets`] checks.
fn staged_offsets(arrival: Arrival, stages: Stages<'_>, seed: u64, shard: Shard) -> Vec<u64> {
    let end = stages.total_ns();
    let list: Vec<u64> = Schedule::staged(arrival, stages, seed, end, shard)
        .expect("valid stages")
        .collect();
    assert!(
        list.windows(2).all(|w| w[0] <= w[1]),
        "{arrival:?} {shard:?}: offsets go back"
    );
    assert!(list.iter().all(|&o| o < end), "{arrival:?} {shard:?}");
    list
}

/// Every split into 1..=5 threads inside 1..=3 shards of a staged schedule
/// gives exactly the whole one: the split is on the unit-rate sequence.
fn check_staged(arrival: Arrival, stages: Stages<'_>, seed: u64) -> Vec<u64> {
    let whole = staged_offsets(arrival, stages, seed, Shard::WHOLE);
    for shards in 1..=3u32 {
        for threads in 1..=5u32 {
            let n = shards * threads;
            let mut run: Vec<u64> = Vec::new();
            for k in 0..shards {
                let mut machine: Vec<u64> = (0..threads)
                    .flat_map(|t| {
                        let shard = Shard {
                            index: k + shards * t,
                            count: n,
                        };
                        staged_offsets(arrival, stages, seed, shard)
                    })
                    .collect();
                machine.sort_unstable();
                let alone = staged_offsets(
                    arrival,
                    stages,
                    seed,
                    Shard {
                        index: k,
                        count: shards,
                    },
                );
                assert_eq!(machine, alone, "{arrival:?} shard {k}/{shards} x {threads}");
                run.extend(machine);
            }
            assert_eq!(
                sorted(run),
                whole,
                "{arrival:?}: {shards} shards x {threads} threads"
            );
        }
    }
    whole
}

/// The done-when: `--stages 1s:100,1s:300` schedules exactly 250
/// requests (50 + 200) whatever the thread and shard split; and every
/// process through linear and exponential ramps splits exactly.
#[test]
fn stages_split_exactly() {
    let st = [
        Stage {
            duration_ns: S,
            target_rps: 100.0,
        },
        Stage {
            duration_ns: S,
            target_rps: 300.0,
        },
    ];
    let linear = Stages {
        start_rps: 0.0,
        stages: &st,
        ramp: Ramp::Linear,
    };
    let whole = check_staged(Arrival::Constant, linear, 0);
    assert_eq!(whole.len(), 250);
    assert_eq!(whole.iter().filter(|&&o| o < S).count(), 50);
    let exponential = Stages {
        start_rps: 20.0,
        ..linear
    };
    let exponential = Stages {
        ramp: Ramp::Exponential,
        ..exponential
    };
    for stages in [linear, exponential] {
        for arrival in [
            Arrival::Constant,
            Arrival::Burst { size: 7 },
            Arrival::Poisson,
            Arrival::Gamma { burstiness: 0.5 },
            Arrival::Gamma { burstiness: 3.0 },
        ] {
            for seed in [0, 42] {
                let whole = check_staged(arrival, stages, seed);
                assert!(whole.len() > 100, "{arrival:?}: {}", whole.len());
            }
        }
    }
}

/// A trace splits by index: every split gives back the file's offsets.
#[test]
fn traces_split_exactly() {
    let offsets: Vec<u64> = (0..1000u64)
        .map(|i| i * i * 997 % 1_000_003 + i * 1000)
        .collect();
    let mut offsets = offsets;
    offsets.sort_unstable();
    let trace = Trace {
        offsets_ns: &offsets,
        speed: 1.0,
    };
    for n in 1..=15u32 {
        let mut union: Vec<u64> = (0..n)
            .flat_map(|index| {
                Schedule::trace(trace, trace.end_ns(), Shard { index, count: n })
                    .unwrap()
                    .collect::<Vec<_>>()
            })
            .collect();
        union.sort_unstable();
        assert_eq!(union, offsets, "{n} parts");
    }
}

/// `-n N` ([`Schedule::first`]): for every arrival process, steady, staged
/// and replayed, every split into 1..=5 threads inside 1..=3 shards sends
/// exactly the first N offsets of the whole schedule, for N cutting inside
/// a burst, a gamma block and a Poisson window, and for N beyond the end
/// (then the end cuts first).
#[test]
fn first_n_is_exact_for_every_split() {
    let stages = [
        Stage {
            duration_ns: S,
            target_rps: 3000.0,
        },
        Stage {
            duration_ns: S,
            target_rps: 500.0,
        },
    ];
    let trace_offsets: Vec<u64> = (0..4000u64).map(|i| i * 997 % 3 + i * 250_000).collect();
    let mut trace_sorted = trace_offsets.clone();
    trace_sorted.sort_unstable();
    let arrivals = [
        Arrival::Constant,
        Arrival::Poisson,
        Arrival::Burst { size: 1 },
        Arrival::Burst { size: 7 },
        Arrival::Gamma { burstiness: 0.5 },
        Arrival::Gamma { burstiness: 3.0 },
    ];
    type Make<'a> = Box<dyn Fn(Shard) -> Schedule<'a> + 'a>;
    let mut makers: Vec<(String, Make<'_>)> = Vec::new();
    for arrival in arrivals {
        makers.push((
            format!("{arrival:?} steady"),
            Box::new(move |shard| Schedule::new(arrival, 2000.0, 9, 2 * S, shard).unwrap()),
        ));
        let st = &stages;
        makers.push((
            format!("{arrival:?} staged"),
            Box::new(move |shard| {
                let ramp = Stages {
                    start_rps: 100.0,
                    stages: st,
                    ramp: Ramp::Linear,
                };
                Schedule::staged(arrival, ramp, 9, 2 * S, shard).unwrap()
            }),
        ));
    }
    let tr = &trace_sorted;
    makers.push((
        "trace".into(),
        Box::new(move |shard| {
            let trace = Trace {
                offsets_ns: tr,
                speed: 1.0,
            };
            Schedule::trace(trace, 2 * S, shard).unwrap()
        }),
    ));
    for (what, make) in &makers {
        let whole: Vec<u64> = make(Shard::WHOLE).collect();
        assert!(whole.len() > 1_000, "{what}: {} offsets", whole.len());
        for n in [0u64, 1, 5, 17, 1_001, whole.len() as u64, 10_000_000] {
            let expected: Vec<u64> = whole.iter().copied().take(n as usize).collect();
            for shards in 1..=3u32 {
                for threads in 1..=5u32 {
                    let mut union = Vec::new();
                    for k in 0..shards {
                        for t in 0..threads {
                            let part = Shard {
                                index: k,
                                count: shards,
                            }
                            .split(t, threads);
                            union.extend(make(part).first(n));
                        }
                    }
                    assert_eq!(
                        sorted(union),
                        expected,
                        "{what}: first {n} over {shards} shards x {threads} threads"
                    );
                }
            }
        }
    }
}
