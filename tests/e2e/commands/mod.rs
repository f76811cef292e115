//! End-to-end tests of the other commands: Ctrl-C during `run`, `report`,
//! `merge`, `--hgrm`, `--out`, a short `demo`, `sweep`, `--repeat`, and the
//! help and usage errors.

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{assert_valid, engines, metronome, plain, server};

// Ctrl-C and SIGTERM during `run`: the partial report, at once.
mod signals;
// `--out`, `report`, `--hgrm`, `merge`, `demo`, `.hlog`; output paths checked.
mod outputs;
// `sweep` and `--repeat`: the knee, stages, auto steps, the runs summarised.
mod sweep;
// Help on one screen, grouped flags, did-you-mean, usage errors.
mod usage;
