//! The metronome CLI as a library: argument types, the report, the embedded
//! server, the demo and the virtual-time simulation. `main.rs` is thin.
#![deny(missing_docs)]

pub mod serve;
pub mod units;
