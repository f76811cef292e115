//! metronome-uring: the Linux io_uring engine.
#![deny(missing_docs)]
