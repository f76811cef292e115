//! metronome's fixed histogram side by side with the `hdrhistogram` crate
//! configured to the same layout (2 significant digits, unit 1, full u64
//! range): record, quantile over a filled histogram, merge.
//!
//! Run by hand: `cargo bench --bench histogram -- --warm-up-time 1 --measurement-time 3`.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use metronome_core::histogram::Histogram;

type Hdr = hdrhistogram::Histogram<u64>;

fn hdr() -> Hdr {
    Hdr::new_with_bounds(1, u64::MAX, 2).expect("valid bounds")
}

/// `n` log-uniform values from 1 us to 10 s (ns), from a fixed xorshift stream.
fn log_uniform(n: usize) -> Vec<u64> {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            10f64.powf(3.0 + 7.0 * u) as u64
        })
        .collect()
}

fn record(c: &mut Criterion) {
    let values = log_uniform(4096);
    let n = values.len() as u64;
    let mut g = c.benchmark_group("record");
    g.throughput(Throughput::Elements(n));
    g.bench_function("metronome", |b| {
        let mut h = Box::new(Histogram::new());
        b.iter(|| {
            let before = h.count();
            for &v in &values {
                h.record(black_box(v));
            }
            assert_eq!(h.count(), before + n);
        })
    });
    g.bench_function("hdrhistogram", |b| {
        let mut h = hdr();
        b.iter(|| {
            let before = h.len();
            for &v in &values {
                h.record(black_box(v)).expect("in range");
            }
            assert_eq!(h.len(), before + n);
        })
    });
    g.finish();
}

fn quantile(c: &mut Criterion) {
    // Fill many buckets: 1M log-uniform values cover ~900 buckets over 7 decades.
    let values = log_uniform(1 << 20);
    let mut ours = Box::new(Histogram::new());
    let mut theirs = hdr();
    for &v in &values {
        ours.record(v);
        theirs.record(v).expect("in range");
    }
    let filled = ours.buckets().count();
    assert!(filled > 800, "only {filled} buckets filled");
    let mut g = c.benchmark_group("quantile");
    for q in [0.5, 0.99, 0.999] {
        g.bench_with_input(BenchmarkId::new("metronome", q), &q, |b, &q| {
            b.iter(|| {
                let v = ours.quantile(black_box(q));
                assert!(v >= 1_000);
                v
            })
        });
        g.bench_with_input(BenchmarkId::new("hdrhistogram", q), &q, |b, &q| {
            b.iter(|| {
                let v = theirs.value_at_quantile(black_box(q));
                assert!(v >= 1_000);
                v
            })
        });
    }
    g.finish();
}

fn merge(c: &mut Criterion) {
    let values = log_uniform(1 << 16);
    let mut ours = Box::new(Histogram::new());
    let mut theirs = hdr();
    for &v in &values {
        ours.record(v);
        theirs.record(v).expect("in range");
    }
    let mut g = c.benchmark_group("merge");
    g.bench_function("metronome", |b| {
        let mut acc = Box::new(Histogram::new());
        b.iter(|| {
            acc.merge(black_box(&ours));
            assert!(acc.count() >= ours.count());
        })
    });
    g.bench_function("hdrhistogram", |b| {
        let mut acc = hdr();
        b.iter(|| {
            acc.add(black_box(&theirs)).expect("same layout");
            assert!(acc.len() >= theirs.len());
        })
    });
    g.finish();
}

criterion_group!(benches, record, quantile, merge);
criterion_main!(benches);
