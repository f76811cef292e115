//! metronome-std: the portable engine, std threads and blocking sockets.
#![deny(missing_docs)]
