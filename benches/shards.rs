//! What deciding the next send costs per request when the schedule is split
//! into 1, 8, 16 and 64 shards (threads times machines), for every arrival
//! process: the time to produce the next offset of one shard, per offset
//! that shard keeps.
//!
//! Run: `cargo bench --bench shards -- --warm-up-time 1 --measurement-time 3`.
//! Each measured closure asserts on its result (non-decreasing offsets that
//! span about `KEPT * shards / rate` seconds), so a broken shortcut cannot be
//! timed.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use metronome_core::rng::{stream, PURPOSE_ARRIVALS};
use metronome_core::schedule::{Arrival, Schedule, Shard};

/// Offsets taken from one shard per iteration.
const KEPT: u64 = 1024;
/// The whole run's rate: 1e6/s, so 1024 offsets of 64 shards span about 66 ms.
const RATE: f64 = 1e6;

fn shards(c: &mut Criterion) {
    let mut group = c.benchmark_group("shard_next");
    group.throughput(Throughput::Elements(KEPT));
    let cases = [
        ("constant", Arrival::Constant),
        ("poisson", Arrival::Poisson),
        // 64 per burst, so even 64 shards keep one request of every burst.
        ("burst_64", Arrival::Burst { size: 64 }),
        ("gamma_0.5", Arrival::Gamma { burstiness: 0.5 }),
        ("gamma_4", Arrival::Gamma { burstiness: 4.0 }),
    ];
    for (name, arrival) in cases {
        for count in [1u32, 8, 16, 64] {
            // The last shard: for burst and the index splits it is the one
            // that waits longest for its first arrival.
            let shard = Shard {
                index: count - 1,
                count,
            };
            let fresh = Schedule::new(arrival, RATE, 7, u64::MAX, shard).expect("valid schedule");
            // The whole run's arrivals behind KEPT of this shard's, in ns.
            let span = KEPT as f64 * f64::from(count) / RATE * 1e9;
            group.bench_with_input(BenchmarkId::new(name, count), &count, |b, _| {
                b.iter_batched_ref(
                    || fresh.clone(),
                    |s| {
                        let mut last = 0u64;
                        for _ in 0..KEPT {
                            let o = s.next().expect("the schedule runs for centuries");
                            assert!(o >= last, "{o} < {last}");
                            last = o;
                        }
                        // Random processes wander around the mean; 1024 gaps
                        // of 64 shards are within a few percent of it, of one
                        // shard within 20% (gamma 0.5 has a CV of 1.4).
                        assert!(
                            (0.6 * span..1.4 * span).contains(&(last as f64)),
                            "{name} {count}: {last} ns, expected about {span}"
                        );
                        black_box(last)
                    },
                    criterion::BatchSize::SmallInput,
                );
            });
        }
    }
    // For reference, what an index split of the previous Poisson sequence
    // (an f64 running sum of -ln(1 - u) / rate over one stream) would cost:
    // every shard must take the logarithm of every draw to place its own.
    for count in [1u64, 8, 16, 64] {
        let span = KEPT as f64 * count as f64 / RATE * 1e9;
        group.bench_with_input(
            BenchmarkId::new("poisson_running_sum_split", count),
            &count,
            |b, &count| {
                b.iter(|| {
                    let mut rng = stream(black_box(7), PURPOSE_ARRIVALS);
                    let (mut t_s, mut last, mut kept, mut i) = (0.0f64, 0u64, 0u64, 0u64);
                    while kept < KEPT {
                        t_s += -(1.0 - rng.next_f64()).ln() / RATE;
                        if i % count == count - 1 {
                            let o = (t_s * 1e9).round() as u64;
                            assert!(o >= last);
                            last = o;
                            kept += 1;
                        }
                        i += 1;
                    }
                    assert!((0.6 * span..1.4 * span).contains(&(last as f64)));
                    black_box(last)
                });
            },
        );
    }
    group.finish();
}

criterion_group!(benches, shards);
criterion_main!(benches);
