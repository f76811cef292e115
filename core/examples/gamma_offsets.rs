//! Prints the offsets (ns, one per line, sorted) of a gamma schedule split
//! into shards and merged again, for checking the process against a
//! statistics library we did not write (`core/tools/gamma_scipy_ks.py`).
//!
//! `cargo run --release -p metronome-core --example gamma_offsets -- K SHARDS [COUNT]`:
//! burstiness K, the union of SHARDS shards, the first COUNT offsets
//! (default 200,000) at 0.01 req/s (gaps of 100 s, so whole-ns rounding
//! does not show), seed 77.

use metronome_core::schedule::{Arrival, Schedule, Shard};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parse = |i: usize, default: &str| args.get(i).map_or(default, String::as_str).to_owned();
    let (Ok(k), Ok(shards), Ok(count)) = (
        parse(0, "1").parse::<f64>(),
        parse(1, "1").parse::<u32>(),
        parse(2, "200000").parse::<usize>(),
    ) else {
        eprintln!("usage: gamma_offsets K SHARDS [COUNT]");
        std::process::exit(2);
    };
    let rate = 0.01;
    // No end: each shard stops after COUNT offsets.
    let end = u64::MAX;
    let mut all: Vec<u64> = Vec::new();
    for index in 0..shards.max(1) {
        let shard = Shard {
            index,
            count: shards.max(1),
        };
        match Schedule::new(Arrival::Gamma { burstiness: k }, rate, 77, end, shard) {
            Ok(s) => all.extend(s.take(count)),
            Err(e) => {
                eprintln!("gamma_offsets: {e}");
                std::process::exit(2);
            }
        }
    }
    all.sort_unstable();
    for o in all.iter().take(count) {
        println!("{o}");
    }
}
