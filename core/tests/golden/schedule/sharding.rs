//! Sharding: constant shards take every nth slot, burst shards split each
//! burst by request index, gamma shards keep whole blocks of 16, and the
//! shards' union is the whole run.

use super::*;

#[test]
fn constant_shards_take_every_nth_slot_and_union_to_the_whole() {
    let w = whole(Arrival::Constant, 7.0, 0, 100 * S);
    assert_eq!(w.len(), 700);
    for n in [1u32, 2, 3, 8, 1000] {
        let mut union = Vec::new();
        for k in 0..n {
            let part = all(Arrival::Constant, 7.0, 0, 100 * S, shard(k, n));
            let want: Vec<u64> = w
                .iter()
                .copied()
                .skip(k as usize)
                .step_by(n as usize)
                .collect();
            assert_eq!(part, want, "shard {k} of {n}");
            union.extend(part);
        }
        assert_eq!(sorted(union), w, "{n} shards");
    }
}

#[test]
fn burst_shards_split_each_burst_by_request_index() {
    for size in [1u32, 4, 5, 10] {
        let w = whole(Arrival::Burst { size }, 40.0, 0, 10 * S);
        for n in [1u32, 2, 3, 5, 7] {
            let mut union = Vec::new();
            for k in 0..n {
                let part = all(Arrival::Burst { size }, 40.0, 0, 10 * S, shard(k, n));
                // Request m of each burst goes to shard m % n.
                let copies = (0..size).filter(|m| m % n == k).count();
                let want: Vec<u64> = w
                    .iter()
                    .copied()
                    .step_by(size as usize)
                    .flat_map(|at| std::iter::repeat(at).take(copies))
                    .collect();
                assert_eq!(part, want, "size {size}, shard {k} of {n}");
                union.extend(part);
            }
            assert_eq!(sorted(union), w, "size {size}, {n} shards");
        }
    }
}

#[test]
fn gamma_shards_keep_whole_blocks_of_16_and_union_to_the_whole() {
    for k in [0.5, 2.0] {
        let arrival = Arrival::Gamma { burstiness: k };
        let w = whole(arrival, 300.0, 9, 10 * S);
        assert!(w.len() > 2_500, "{}", w.len());
        for n in [1u32, 2, 3, 4, 7] {
            let mut union = Vec::new();
            for i in 0..n {
                let part = all(arrival, 300.0, 9, 10 * S, shard(i, n));
                // Arrival j of the whole run is in block j / 16, which goes
                // to shard (j / 16) mod n.
                let want: Vec<u64> = w
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| (j / 16) % n as usize == i as usize)
                    .map(|(_, &o)| o)
                    .collect();
                assert_eq!(part, want, "k {k}, shard {i} of {n}");
                union.extend(part);
            }
            assert_eq!(sorted(union), w, "k {k}, {n} shards");
        }
    }
}
