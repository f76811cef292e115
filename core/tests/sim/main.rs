//! Simulations of core on a virtual clock: the engines' rules (pacing,
//! the pool, the ledger, HTTP/2 flights, conversations) fed timed facts, with
//! exact outcomes. One binary, a module per rule.

#[path = "../h2_drive/mod.rs"]
mod h2_drive;

// Simulation tests of `Exchange`, the per-request state machine both
// engines drive.
mod exchange;
// Core's `h2::Flights` on a virtual clock, fed server frames built as in
// `golden_h2/`.
mod h2_flights;
// Simulation tests of `Ledger`, the bookkeeping both engines share, on a
// virtual clock with exact facts.
mod ledger;
// Simulation test of the pacer on a virtual clock.
mod pacer;
// Simulation test of the pool rules (`Pool`) on a virtual clock.
mod pool;
// The per-request records the `Ledger` hands to a `RequestSink`
// (`--out-requests`).
mod records;
// One schedule, however the run is split.
mod shards;
// Simulation test of conversations through the `Ledger`, on a virtual
// clock.
mod turns;
