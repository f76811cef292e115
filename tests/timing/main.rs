//! End-to-end runs whose real-time bounds need the machine to themselves:
//! two paced runs on a 2-core machine make each other late. A binary of
//! their own (the test harness runs the binaries one after the other), in
//! which every test takes [`serial`]: one run at a time, and no other test
//! competing for the CPU.

use std::sync::{Mutex, MutexGuard};

#[path = "../common/mod.rs"]
mod common;

// Defaults that hold at every rate, and a pool that never makes a run worse.
mod defaults;
// Pacing never bends measurement: responses stamped when they arrive.
mod pacing;

/// One timed run at a time in this binary (the test harness runs tests in
/// parallel): every test here holds it for its whole run.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}
