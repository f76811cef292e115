//! Command-line arguments (clap). Parsing only: each subcommand's work lives
//! in its own module.
//!
//! - this file: [`Cli`] and the [`Command`] it dispatches on.
//! - `run.rs`: [`RunArgs`], `metronome run`'s flags, and [`PrometheusArgs`].
//! - `serve.rs`: [`ServeArgs`], the embedded target's flags, with
//!   [`parse_grpc_status_every`].
//! - `commands.rs`: [`DemoArgs`], [`SimulateArgs`], [`ReportArgs`],
//!   [`MergeArgs`], [`SweepArgs`].
//! - `values.rs`: the values of flags ([`ArrivalArg`], [`EngineArg`],
//!   [`SpinArg`], ...) and their parsers, [`parse_listen`] among them.
//!
//! Every type is re-exported here (`cli::RunArgs`). The files import in one
//! direction: `values.rs` uses no sibling, `run.rs` and `serve.rs` use
//! `values.rs`, `commands.rs` uses `run.rs` and `values.rs`, this file uses
//! them.
// The doc comments below are clap's `--help` text, printed as written:
// `[DONE]` and `<RATE>` are what a user reads, not rustdoc links or tags.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

mod commands;
mod run;
mod serve;
mod values;

use clap::{Parser, Subcommand};

use commands::SWEEP_AFTER_HELP;
pub use commands::{DemoArgs, MergeArgs, ReportArgs, SimulateArgs, SweepArgs};
pub use run::{PrometheusArgs, RunArgs, DEFAULT_DURATION, DEFAULT_RATE};
pub use serve::{parse_grpc_status_every, ServeArgs};
pub use values::{
    parse_listen, ArrivalArg, CompatArg, EndpointArg, EngineArg, FormatArg, MaxTokensFieldArg,
    MixArg, ProfileArg, RampArg, ShapeArg, SpinArg, WarmUpArg, SPIN_AUTO_INITIAL,
    THROUGHPUT_WORKERS,
};

/// metronome: an open-loop load generator with honest latency.
///
/// Requests leave on a precomputed schedule of intended send times and never
/// wait for earlier replies; every latency is measured from the intended send
/// time, so a server stall shows up in every request it delayed.
#[derive(Debug, Parser)]
#[command(name = "metronome", version, about, long_about = None, max_term_width = 100)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a load test against URL (the main job).
    Run(Box<RunArgs>),
    /// Serve the embedded target: a FIFO server with stalls, errors and SSE.
    Serve(Box<ServeArgs>),
    /// The embedded default: closed vs open loop against a stalling server, side by side.
    Demo(DemoArgs),
    /// The virtual-time experiment: exact, instant, deterministic.
    Simulate(SimulateArgs),
    /// Print a saved JSON report as text (or re-emit it as JSON).
    Report(ReportArgs),
    /// Merge JSON reports of shards of one run (several machines) into one.
    Merge(MergeArgs),
    /// Run the same test at a series of rates and tabulate where latency bends.
    #[command(after_help = SWEEP_AFTER_HELP, after_long_help = SWEEP_AFTER_HELP)]
    Sweep(Box<SweepArgs>),
}
