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
    parse_connect_to, parse_listen, parse_resolve, ArrivalArg, CompatArg, ConnectTo, EndpointArg,
    EngineArg, FormatArg, MaxTokensFieldArg, MixArg, ProfileArg, RampArg, Resolve, ShapeArg,
    SpinArg, WarmUpArg, SPIN_AUTO_INITIAL, THROUGHPUT_WORKERS,
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
    /// Print a shell completion script for SHELL (bash, zsh, fish, elvish, powershell).
    #[command(after_help = COMPLETIONS_AFTER_HELP)]
    Completions(CompletionsArgs),
    /// Print the man page (roff) of metronome and its subcommands.
    #[command(after_help = "Example:\n  metronome man > ~/.local/share/man/man1/metronome.1")]
    Man(ManArgs),
}

/// The end of `completions --help`: where each shell looks.
const COMPLETIONS_AFTER_HELP: &str = "\
Install (then open a new shell):
  bash:  metronome completions bash > ~/.local/share/bash-completion/completions/metronome
  zsh:   metronome completions zsh > ~/.zfunc/_metronome  (with fpath+=~/.zfunc before compinit)
  fish:  metronome completions fish > ~/.config/fish/completions/metronome.fish";

/// `metronome completions SHELL`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `metronome man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write one page per command into DIR (metronome.1, metronome-run.1, ...) instead of
    /// printing the top page.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<std::path::PathBuf>,
}
