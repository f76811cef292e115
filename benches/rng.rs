//! PCG32 draws and schedule iteration.
//!
//! Run: `cargo bench --bench rng -- --warm-up-time 1 --measurement-time 3`.
//! Each measured closure asserts on its result, so a broken fast path cannot
//! be timed.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use metronome_core::rng::Pcg32;
use metronome_core::schedule::{Arrival, Schedule, Shard};

const N: u64 = 1024;

fn rng(c: &mut Criterion) {
    let mut group = c.benchmark_group("rng");
    group.throughput(Throughput::Elements(N));

    group.bench_function("next_u32", |b| {
        let mut rng = Pcg32::seeded(black_box(42));
        b.iter(|| {
            let mut acc = 0u32;
            for _ in 0..N {
                acc ^= rng.next_u32();
            }
            // 1024 draws xor to 0 with probability 2^-32; the stream is fixed.
            assert_ne!(black_box(acc), 0);
            acc
        });
    });

    group.bench_function("next_f64", |b| {
        let mut rng = Pcg32::seeded(black_box(42));
        b.iter(|| {
            let mut sum = 0.0f64;
            for _ in 0..N {
                sum += rng.next_f64();
            }
            // The mean of 1024 uniforms is 0.5 +- 0.009 (sd); 10 sd margin.
            assert!((sum / N as f64 - 0.5).abs() < 0.1, "{sum}");
            black_box(sum)
        });
    });

    group.bench_function("normal", |b| {
        let mut rng = Pcg32::seeded(black_box(42));
        b.iter(|| {
            let mut sum = 0.0f64;
            for _ in 0..N {
                sum += rng.normal();
            }
            // The mean of 1024 normals has sd 0.031; 10 sd margin.
            assert!((sum / N as f64).abs() < 0.31, "{sum}");
            black_box(sum)
        });
    });
    group.finish();
}

fn schedule(c: &mut Criterion) {
    let mut group = c.benchmark_group("schedule");
    group.throughput(Throughput::Elements(N));
    let cases = [
        ("poisson_offsets", Arrival::Poisson),
        ("constant_offsets", Arrival::Constant),
        ("gamma_0.5_offsets", Arrival::Gamma { burstiness: 0.5 }),
    ];
    for (name, arrival) in cases {
        // 1e6/s: 1024 offsets span about 1 ms, far below the end.
        let fresh = Schedule::new(arrival, 1e6, 7, u64::MAX, Shard::WHOLE).expect("valid schedule");
        group.bench_function(name, |b| {
            b.iter_batched_ref(
                || fresh.clone(),
                |s| {
                    let mut last = 0u64;
                    for _ in 0..N {
                        let o = s.next().expect("the schedule runs for centuries");
                        assert!(o >= last);
                        last = o;
                    }
                    // 1024 arrivals at 1e6/s take about 1.02 ms.
                    assert!((500_000..2_000_000).contains(&last), "{last}");
                    black_box(last)
                },
                criterion::BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, rng, schedule);
criterion_main!(benches);
