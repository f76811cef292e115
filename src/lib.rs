//! The metronome CLI as a library; `main.rs` only parses, dispatches and maps
//! errors to exit codes.
//!
//! A run flows through it in one direction:
//!
//! ```text
//! cli args -> run::plan (a core Plan) -> run::engine (uring | std) -> RunOutput
//!          -> report::build -> report::{text, hgrm, hlog, svg} | JSON
//! ```
//!
//! [`serve`] is the embedded target; [`demo`], [`simulate`], [`sweep`],
//! [`show`] and [`merge`] are commands built from these pieces. The commands
//! depend on [`report`]; [`report`] depends on no command and no argument
//! type.
//!
//! - [`cli`]: the arguments of every subcommand (clap); parsing only
//!   (`cli/run.rs`, `cli/serve.rs`, `cli/commands.rs`; flag values in
//!   `cli/values.rs`).
//! - [`run`]: `metronome run`: arguments to a plan, the engine, then the
//!   report; the progress line.
//! - [`report`]: the `metronome.report/v1` schema (and the sweep's; its
//!   types one file per part: counts, metrics, rows, connections, the
//!   generator, and the accounts that derive and add them up), built
//!   from a run and rendered as text, `.hgrm`, `.hlog`, SVG and HTML;
//!   thresholds; reading saved reports back; merging shards.
//! - [`show`]: `metronome report FILE`: a saved report or sweep printed again.
//! - [`merge`]: `metronome merge`: the shards' reports merged into one.
//! - [`serve`]: `metronome serve`, the embedded target: one FIFO server with
//!   a stall, injected errors and SSE streams.
//! - [`demo`]: closed vs open loop against a stalling embedded server, side
//!   by side.
//! - [`simulate`]: the same experiment on a virtual clock, with exact numbers.
//! - [`sweep`]: one run per rate, tabulated to show where latency bends.
//! - [`manual`]: `metronome completions SHELL` and `metronome man`, generated
//!   from the clap definition.
//! - [`signal`]: Ctrl-C and SIGTERM as a flag the commands poll.
//! - [`output`]: output paths checked before the work, and the fallback file.
//! - [`units`]: durations as written on the command line and printed back.
//! - [`error`]: [`UsageError`] and the exit codes (re-exported here).
//! - [`tls`]: the TLS client configuration of `run` and the certificate of `serve --tls`.
//!
//! - [`background`]: the threads that watch a run give way to the pacer.
//!
//! Unsafe code is denied here and allowed in three modules only: [`signal`]
//! (installing the handler), `serve::wait` (the `poll` call) and
//! [`background`] (`setpriority`, the thread CPU clock). Each unsafe
//! block says why it is sound in a `// SAFETY:` comment.
#![deny(missing_docs)]
#![deny(unsafe_code)]

#[allow(unsafe_code)]
pub mod background;
pub mod cli;
pub mod demo;
pub mod error;
pub mod manual;
pub mod merge;
pub mod output;
pub mod prom;
pub mod repeat;
pub mod report;
pub mod run;
pub mod serve;
pub mod show;
#[allow(unsafe_code)]
pub mod signal;
pub mod simulate;
pub mod sweep;
pub mod tls;
pub mod units;

pub use error::{UsageError, EXIT_FAILED, EXIT_OK, EXIT_THRESHOLD, EXIT_USAGE};
