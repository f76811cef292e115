//! Property tests of core (proptest): any split of the bytes, any shard
//! count, any value gives the same answer as the whole. One binary, a module
//! per property.

#[path = "../h2_drive/mod.rs"]
mod h2_drive;
#[path = "../split_drive/mod.rs"]
mod split_drive;

// Property test of `Exchange`, the response reader both engines drive (the
// fuzz targets in `fuzz/` run the same check coverage-guided).
mod exchange;
// Mutations of the Python h2 server's bytes (`tests/data/h2/server.bin`).
mod h2;
// The server's side of core's HTTP/3 on mutated input, a cheap, deterministic
// stand-in for a fuzz target, run with the tests.
mod h3_server;
// Property tests for `metronome_core::histogram`.
mod histogram;
// Property tests for `metronome_core::schedule`.
mod schedule;
// Property tests.
mod split;
