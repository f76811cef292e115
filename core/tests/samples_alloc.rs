//! Keeping exact samples allocates nothing while the clock runs: the
//! ledger's path from a finished stream to the samples of metronome's own
//! metrics and of every peer's (`--metrics-compat`), into storage
//! [`RunOutput::empty`] reserved before, under a counting allocator. (The
//! engines' whole event loops are checked by the workspace's
//! tests/zero_alloc_loop.rs; this covers the peers' samples, which that test's plain HTTP
//! server does not exercise.)

#![cfg(feature = "std")]

use std::sync::atomic::Ordering;

use metronome_core::engine::RunOutput;
use metronome_core::exchange::Finish;
use metronome_core::ledger::Ledger;
use metronome_core::measure::{Exact, ExactSet, StreamTiming};
use metronome_core::plan::{example_plan, Plan};
use metronome_testkit::{count_on_this_thread, Counting, ALLOCATIONS};

// The counter is process-wide: this test is a binary of its own, so that
// no other test's threads allocate under it (metronome-testkit).
#[global_allocator]
static GLOBAL: Counting = Counting;

const MS: u64 = 1_000_000;

#[test]
fn peer_samples_allocate_nothing_while_measuring() {
    // 100 req/s for 1 s measured after 0.5 s of warmup: room for 174.
    let plan = Plan {
        peer_samples: ExactSet::of(&Exact::ALL),
        wire: metronome_core::plan::Wire::Http1,
        ..example_plan()
    };
    let ledger = Ledger::new(&plan);
    let mut out = RunOutput::empty(&plan);
    let n = 100u64;
    {
        let t = &mut out.tally();
        count_on_this_thread(true);
        for i in 0..n {
            let at = 500 * MS + i * 10 * MS;
            let mut timing = StreamTiming::new(at, at);
            let mut gaps = [0u64; 8];
            let mut kept = 0;
            // Four tokens, the last i ms late: distinct values.
            for k in 0..4 {
                let when = at + 20 * MS + k * 5 * MS + if k == 3 { i * MS } else { 0 };
                if let Some(slot) = timing.on_content(when) {
                    gaps[kept] = slot;
                    kept += 1;
                }
            }
            let end = at + 40 * MS + i * MS;
            timing.on_done(end);
            assert!(ledger.sent(t, at, 0, at));
            let finish = Finish::Stream {
                timing: &timing,
                gaps: &gaps[..kept],
            };
            assert_eq!(ledger.done(t, at, 0, at, end, finish), Some(true));
        }
        count_on_this_thread(false);
    }
    assert_eq!(ALLOCATIONS.load(Ordering::Relaxed), 0, "allocations");
    // Every sample kept, every peer metric's.
    let n = n as usize;
    for m in [
        Exact::Latency,
        Exact::VllmTtft,
        Exact::VllmTpot,
        Exact::VllmE2e,
        Exact::GuidellmTtft,
        Exact::GuidellmTtfot,
        Exact::AiperfTtst,
        Exact::AiperfLatency,
        Exact::AiperfItl,
        Exact::AiperfTpsUser,
        Exact::AiperfE2eTps,
    ] {
        let v = out.exact.sorted(m).unwrap_or_else(|| panic!("{m:?}"));
        assert_eq!(v.len(), n, "{m:?}");
    }
    let itl = out.exact.weighted(Exact::GuidellmItl).unwrap();
    assert_eq!(itl.len(), n);
    assert!(itl.iter().all(|&(_, w)| w == 3));
    // The histograms hold the same values: max (ns) equals the largest
    // sample.
    let r = &out.recorder;
    let e2e = out.exact.sorted(Exact::VllmE2e).unwrap();
    assert_eq!(*e2e.last().unwrap(), r.peers.vllm_e2e.max());
    assert_eq!(e2e[0], r.peers.vllm_e2e.min());
    // A plan without peers reserves none of them.
    let plain = RunOutput::empty(&example_plan());
    assert!(plain.exact.sorted(Exact::VllmTtft).is_none());
}
