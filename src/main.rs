//! metronome: an open-loop load generator with honest latency.

fn main() {
    println!("metronome {}", env!("CARGO_PKG_VERSION"));
}
