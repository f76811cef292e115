//! The arguments of the smaller subcommands: `demo`, `simulate`, `report`,
//! `merge`, and `sweep` (every `run` flag, flattened, plus the rates).
// The doc comments below are clap's `--help` text, printed as written:
// `[DONE]` and `<RATE>` are what a user reads, not rustdoc links or tags.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::run::{PrometheusArgs, RunArgs};
use super::values::{EngineArg, FormatArg};
use crate::units::parse_duration;

/// The end of `sweep -h` and `sweep --help`.
pub(super) const SWEEP_AFTER_HELP: &str = "\
Every `run` flag applies to each step (`metronome run --help` explains them).

Examples:
  metronome sweep http://127.0.0.1:8080/ --rates 100,200,400,800 --duration 10s --stop-at-knee
  metronome sweep http://127.0.0.1:8000/v1 --openai --auto --auto-steps 6 --html sweep.html";

/// `metronome demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Length of each of the four runs.
    #[arg(long, default_value = "6s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Length of the server's stall, held from the middle of each run.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub stall: Duration,
    /// Open-loop rate.
    #[arg(long, default_value_t = 500.0)]
    pub rate: f64,
    /// Engine for the runs.
    #[arg(long, value_enum, default_value_t = EngineArg::Auto)]
    pub engine: EngineArg,
    /// Also write the four JSON reports into this directory.
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
}

/// `metronome simulate`.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `metronome report FILE`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A JSON report written by `run --out` or `merge --out`, or a sweep's (`sweep --out`).
    pub file: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = FormatArg::Text)]
    pub format: FormatArg,
    /// Write the latency histogram as .hgrm to FILE, as the run's own --hgrm did (for a
    /// sweep: one file per step, FILE-<RATE>rps.hgrm).
    #[arg(long)]
    pub hgrm: Option<PathBuf>,
    /// Write SVG plots (latency by percentile, latency per interval) to FILE (for a sweep:
    /// p50, p99 and p99.9 against offered rate, the knee marked).
    #[arg(long)]
    pub svg: Option<PathBuf>,
    /// Write the report (run, merge or sweep) as one self-contained HTML page to FILE
    /// (opens offline; docs/html.md).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Prometheus remote write of the saved report (docs/prometheus.md).
    #[command(flatten)]
    pub prometheus: PrometheusArgs,
}

/// `metronome merge FILE...`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// JSON reports of the shards of one run (`run --shard K/N`), one per shard.
    #[arg(required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    /// Write the merged JSON report to FILE (default: stdout as JSON).
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = FormatArg::Json)]
    pub format: FormatArg,
    /// Merge an incomplete set of shards: the merged report is marked `partial`
    /// (without it, a missing shard is an error).
    #[arg(long)]
    pub partial: bool,
    /// Warn when the shards began pacing more than this far apart (by their reports'
    /// start_unix_ns + start_offset_ns, each by its own machine's clock).
    #[arg(long, default_value = "1ms", value_parser = parse_duration)]
    pub max_skew: Duration,
}

/// `metronome sweep URL --rates ...`: every `run` flag applies to each step.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Offered rates, in order, comma-separated (e.g. 100,200,400,800).
    #[arg(long, value_delimiter = ',', required_unless_present_any = ["auto", "stages"], num_args = 1..)]
    pub rates: Vec<f64>,
    /// Place the rates as guidellm's sweep does: measure the synchronous rate (one request
    /// at a time) and the throughput rate (--max-concurrency at a time, 512 by default)
    /// first, then --auto-steps rates evenly spaced from the one to the other.
    #[arg(long, conflicts_with = "rates")]
    pub auto: bool,
    /// The steps of --auto.
    #[arg(long, default_value_t = 8, requires = "auto",
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub auto_steps: u32,
    /// Stop after the first step whose achieved rate is below 99% of offered, that dropped
    /// requests, or that breached a --threshold.
    #[arg(long)]
    pub stop_at_knee: bool,
    /// The run arguments of each step (`--rate` is replaced by each of --rates; `--out`
    /// receives the whole sweep as JSON; `--hgrm`, `--hlog` and `--svg` FILE are written per
    /// step as FILE-<RATE>rps.EXT, and `--svg` FILE also gets the sweep's plot of latency
    /// against offered rate; `--html` FILE gets the sweep's page; `--start-at` is refused).
    #[command(flatten)]
    pub run: RunArgs,
}
