//! Command-line arguments (clap). Parsing only: each subcommand's work lives
//! in its own module.
// The doc comments below are clap's `--help` text, printed as written:
// `[DONE]` and `<RATE>` are what a user reads, not rustdoc links or tags.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::units::parse_duration;

/// `--spin`: adaptive, or a fixed busy-wait slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpinArg {
    /// Follow the measured lateness of the engine's sleeps.
    Auto,
    /// Always this long.
    Fixed(Duration),
}

/// The initial slice of `--spin auto`: the p99 lateness of an io_uring
/// timeout wake-up measured on a 2-core VM.
pub const SPIN_AUTO_INITIAL: Duration = Duration::from_micros(200);

fn parse_spin(text: &str) -> Result<SpinArg, String> {
    if text.trim() == "auto" {
        return Ok(SpinArg::Auto);
    }
    parse_duration(text)
        .map(SpinArg::Fixed)
        .map_err(|e| format!("{e}, or auto"))
}

/// `--profile`: a peer's load profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProfileArg {
    /// One request at a time (guidellm's synchronous).
    Synchronous,
    /// N requests in flight at all times.
    Concurrent(u32),
    /// As many in flight as the cap allows (guidellm's throughput).
    Throughput,
}

impl std::fmt::Display for ProfileArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProfileArg::Synchronous => f.write_str("synchronous"),
            ProfileArg::Concurrent(n) => write!(f, "concurrent:{n}"),
            ProfileArg::Throughput => f.write_str("throughput"),
        }
    }
}

/// The workers of guidellm's throughput profile when no
/// `--max-concurrency` is given (its default cap).
pub const THROUGHPUT_WORKERS: u32 = 512;

fn parse_profile(text: &str) -> Result<ProfileArg, String> {
    let t = text.trim();
    match t {
        "synchronous" => Ok(ProfileArg::Synchronous),
        "throughput" => Ok(ProfileArg::Throughput),
        _ => match t
            .strip_prefix("concurrent:")
            .map(|n| n.trim().parse::<u32>())
        {
            Some(Ok(n)) if n >= 1 => Ok(ProfileArg::Concurrent(n)),
            _ => Err(format!(
                "`{text}`: write synchronous, throughput or concurrent:N with N at least 1"
            )),
        },
    }
}

/// `--mix`: how arrivals choose among a mix's requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MixArg {
    /// By weight, drawn from --seed and the arrival's index.
    Weighted,
    /// In turn: arrival j sends request j mod n.
    RoundRobin,
}

/// A fraction in 0..=1 (`--prefix-share`).
fn parse_fraction(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!("`{text}` is not a fraction from 0 to 1")),
    }
}

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

/// What `--warm-up` does with each pre-opened connection before the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum WarmUpArg {
    /// `request` for safe methods (GET, HEAD, OPTIONS), else `check`.
    Auto,
    /// One unmeasured request per connection (after `check`).
    Request,
    /// Close connections that receive bytes before any request.
    Check,
    /// Use the connections as opened.
    Off,
}

/// How requests arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ArrivalArg {
    /// Evenly spaced.
    Constant,
    /// Exponential gaps (a Poisson process).
    Poisson,
    /// `--burst-size` requests at once, every burst-size/rate seconds.
    Burst,
    /// Gamma gaps with shape `--burstiness` (1 is Poisson).
    Gamma,
}

/// `--ramp`: how the rate moves within a stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RampArg {
    /// Linearly between the stage's endpoints (k6).
    Linear,
    /// Geometrically between the stage's endpoints (vLLM bench's exponential ramp-up).
    Exponential,
}

/// Which engine sends the requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    /// io_uring where the kernel allows it, else std (with a notice).
    Auto,
    /// The Linux io_uring engine.
    Uring,
    /// The portable engine (std threads, blocking sockets).
    Std,
}

/// `--endpoint`: the OpenAI endpoint requests go to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EndpointArg {
    /// /v1/chat/completions with `messages`.
    Chat,
    /// /v1/completions with `prompt`.
    Completions,
}

/// `--max-tokens-field`: the field of the output-length cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MaxTokensFieldArg {
    /// `max_completion_tokens` (OpenAI's current field).
    #[value(name = "max_completion_tokens")]
    MaxCompletionTokens,
    /// `max_tokens` (older servers).
    #[value(name = "max_tokens")]
    MaxTokens,
}

/// Output format on stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// A one-screen summary.
    Text,
    /// The `metronome.report/v1` JSON report.
    Json,
}

impl From<FormatArg> for crate::report::show::Format {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Text => Self::Text,
            FormatArg::Json => Self::Json,
        }
    }
}

/// A peer whose metric definitions `--metrics-compat` reproduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CompatArg {
    /// vLLM's `vllm bench serve` (vllm/benchmarks/serve.py).
    Vllm,
    /// guidellm (src/guidellm/schemas/request_stats.py).
    Guidellm,
    /// NVIDIA's aiperf 0.13.0 (aiperf/metrics/types/).
    Aiperf,
}

impl From<CompatArg> for crate::report::compat::Peer {
    fn from(p: CompatArg) -> Self {
        match p {
            CompatArg::Vllm => Self::Vllm,
            CompatArg::Guidellm => Self::Guidellm,
            CompatArg::Aiperf => Self::Aiperf,
        }
    }
}

/// The stream shape `serve --sse --shape` sends (docs/metrics.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ShapeArg {
    /// Generated: role chunk, content chunks, usage, [DONE].
    Default,
    /// OpenAI: role-only first chunk, finish chunk, usage chunk with empty choices.
    Openai,
    /// vLLM: several tokens per chunk, usage last.
    Vllm,
    /// vLLM with continuous_usage_stats: usage on every chunk.
    Continuous,
    /// llama.cpp: no usage, a timings object.
    Llamacpp,
    /// Reasoning deltas before the answer.
    Reasoning,
    /// Tool-call deltas only.
    Tools,
    /// `content: ""` chunks between the tokens.
    #[value(name = "empty_content")]
    EmptyContent,
    /// The openai shape without data: [DONE].
    #[value(name = "no_done")]
    NoDone,
    /// Two tokens, then an error object.
    Error,
    /// The /v1/completions stream (choices[].text).
    Completions,
    /// A plain JSON answer (application/json), no stream.
    Json,
}

impl From<ShapeArg> for crate::serve::Shape {
    fn from(arg: ShapeArg) -> Self {
        match arg {
            ShapeArg::Default => Self::Default,
            ShapeArg::Openai => Self::Openai,
            ShapeArg::Vllm => Self::Vllm,
            ShapeArg::Continuous => Self::Continuous,
            ShapeArg::Llamacpp => Self::Llamacpp,
            ShapeArg::Reasoning => Self::Reasoning,
            ShapeArg::Tools => Self::Tools,
            ShapeArg::EmptyContent => Self::EmptyContent,
            ShapeArg::NoDone => Self::NoDone,
            ShapeArg::Error => Self::Error,
            ShapeArg::Completions => Self::Completions,
            ShapeArg::Json => Self::Json,
        }
    }
}

/// `--rate` when not given.
pub const DEFAULT_RATE: f64 = 100.0;
/// `--duration` when not given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);

impl RunArgs {
    /// Whether `--out-intervals -` writes the interval lines to stdout.
    pub fn intervals_to_stdout(&self) -> bool {
        self.out_intervals.as_deref() == Some(std::path::Path::new("-"))
    }

    /// `--rate`, or its default.
    pub fn rate(&self) -> f64 {
        self.rate.unwrap_or(DEFAULT_RATE)
    }

    /// `--duration`, or its default.
    pub fn duration(&self) -> Duration {
        self.duration.unwrap_or(DEFAULT_DURATION)
    }
}

/// `run --help` headings, in the order they print.
const TARGET: &str = "Target and request";
/// Heading: when requests leave.
const SCHEDULE: &str = "Rate and schedule";
/// Heading: request mixes from files.
const WORKLOADS: &str = "Workloads";
/// Heading: the connection pool and its limits.
const CONNECTIONS: &str = "Connections";
/// Heading: https options.
const TLS: &str = "TLS";
/// Heading: HTTP/2 and unary gRPC.
const HTTP2: &str = "HTTP/2 and gRPC";
/// Heading: OpenAI-style streaming completions.
const LLM: &str = "LLM (OpenAI)";
/// Heading: pass/fail checks and SLOs.
const THRESHOLDS: &str = "Thresholds";
/// Heading: what is written where.
const OUTPUTS: &str = "Outputs";
/// Heading: the engine and its threads.
const ENGINE: &str = "Engine";

/// Three examples, the end of `run -h` and `run --help`.
macro_rules! run_examples {
    () => {
        "Examples:
  metronome run http://127.0.0.1:8080/ --rate 1000 --duration 30s --threshold 'latency.p99<50ms'
  metronome run https://api.example.com/items -X POST -H 'Content-Type: application/json' \\
      --body '{\"id\":1}' --arrival poisson --rate 200 --out report.json --html report.html
  metronome run http://127.0.0.1:8000/v1 --openai --rate 2 --duration 1m --input-len 512"
    };
}

/// The end of `run -h`: where the other flags are, then the examples.
const RUN_AFTER_SHORT_HELP: &str = concat!(
    "`metronome run --help` shows every flag, grouped: target and request, rate and schedule,
workloads, connections, TLS, HTTP/2 and gRPC, LLM (OpenAI), thresholds, outputs, engine.

",
    run_examples!()
);

/// The end of `run --help`: the environment, then the examples.
const RUN_AFTER_LONG_HELP: &str = concat!(
    "Environment: SSLKEYLOGFILE=FILE appends the TLS session keys of an https run to FILE (NSS key log
format, for Wireshark); the report says it was on.

",
    run_examples!()
);

/// The end of `sweep -h` and `sweep --help`.
const SWEEP_AFTER_HELP: &str = "\
Every `run` flag applies to each step (`metronome run --help` explains them).

Examples:
  metronome sweep http://127.0.0.1:8080/ --rates 100,200,400,800 --duration 10s --stop-at-knee
  metronome sweep http://127.0.0.1:8000/v1 --openai --auto --auto-steps 6 --html sweep.html";

/// `metronome run URL`.
#[derive(Clone, Debug, Args)]
#[command(after_help = RUN_AFTER_SHORT_HELP, after_long_help = RUN_AFTER_LONG_HELP)]
pub struct RunArgs {
    /// Target URL, http:// or https://: HTTP/1.1, HTTPS (TLS 1.2/1.3), HTTP/2 (h2c, h2), unary gRPC,
    /// OpenAI-style SSE streams
    ///
    /// HTTP/1.1 by default, over TLS 1.2 or 1.3 for https://; HTTP/2 with
    /// --http2-prior-knowledge (h2c, http://) or --http2 (h2, https://); unary gRPC with
    /// --grpc; OpenAI-style streaming completions (server-sent events) with --openai.
    /// E.g. http://127.0.0.1:8080/.
    pub url: String,
    /// HTTP method (default GET, or POST with a body or --openai).
    #[arg(help_heading = TARGET, hide_short_help = true, short = 'X', long)]
    pub method: Option<String>,
    /// A request header, "Name: value" (repeatable).
    #[arg(help_heading = TARGET, short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// Request body
    ///
    /// With --openai: a JSON object merged into every request body, as --extra-body.
    #[arg(help_heading = TARGET, long, conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Request body read from a file
    ///
    /// With --openai: merged into every request body, as --body.
    #[arg(help_heading = TARGET, long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,
    /// A request unanswered this long after its send is a timeout (above 0).
    #[arg(help_heading = TARGET, hide_short_help = true, long, default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// The largest response head (status line and headers) accepted, in bytes, at most
    /// 65536; a larger one (or more than 256 headers) is counted as `too_large`.
    #[arg(help_heading = TARGET, hide_short_help = true, long, default_value_t = 32 * 1024)]
    pub max_header_bytes: usize,
    /// Offered rate, requests per second [default: 100]
    ///
    /// Across all threads. With --stages: the rate the first stage starts from [default: 0].
    #[arg(help_heading = SCHEDULE, short, long)]
    pub rate: Option<f64>,
    /// Measured duration, like 30s or 2m [default: 10s]
    ///
    /// After the --warmup. With --trace: cuts the replay (default: up to the last offset).
    #[arg(help_heading = SCHEDULE, short, long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Arrival process of the schedule
    #[arg(help_heading = SCHEDULE, long, value_enum, default_value_t = ArrivalArg::Constant)]
    pub arrival: ArrivalArg,
    /// A ramp, DURATION:RATE,... as k6's ramping-arrival-rate: the rate moves from the
    /// previous target (the first stage: from --rate, else 0) to each stage's target over
    /// its duration, e.g. 30s:1000,1m:5000,30s:5000. The run lasts the sum of the stages
    /// (--warmup is its first part); --arrival applies, time-changed. A 0s stage jumps.
    #[arg(help_heading = SCHEDULE, hide_short_help = true, long, value_name = "STAGES", conflicts_with_all = ["duration", "closed"])]
    pub stages: Option<String>,
    /// How the rate moves within each stage of --stages: linear, or exponential
    /// (geometric, as vLLM bench's --ramp-up-strategy exponential; every endpoint,
    /// --rate included, must be above 0).
    #[arg(help_heading = SCHEDULE, hide_short_help = true, long, value_enum, default_value_t = RampArg::Linear, requires = "stages")]
    pub ramp: RampArg,
    /// Replay the intended offsets of a trace: JSON Lines, each with `timestamp` (ms from
    /// the run start, fractions allowed) or `offset_ns` (integer ns), sorted; a line may
    /// name its --requests request or carry Mooncake's input_length (docs/requests.md).
    /// The run lasts to the last offset (--duration cuts it).
    #[arg(help_heading = SCHEDULE, hide_short_help = true, long, value_name = "FILE",
          conflicts_with_all = ["stages", "closed", "rate", "arrival"])]
    pub trace: Option<PathBuf>,
    /// With --trace: replay this many times faster (2: every offset halved).
    #[arg(help_heading = SCHEDULE, hide_short_help = true, long, value_name = "X", default_value_t = 1.0, requires = "trace")]
    pub trace_speed: f64,
    /// Requests per burst with --arrival burst.
    #[arg(help_heading = SCHEDULE, hide_short_help = true, long, default_value_t = 10)]
    pub burst_size: u32,
    /// Gamma shape with --arrival gamma: 1 is Poisson, larger is smoother, smaller burstier.
    #[arg(help_heading = SCHEDULE, hide_short_help = true, long, default_value_t = 1.0)]
    pub burstiness: f64,
    /// Seed for every random choice (arrivals, prompt choice).
    #[arg(help_heading = SCHEDULE, hide_short_help = true, long, default_value_t = 42)]
    pub seed: u64,
    /// Warmup before the measured duration: sent, not recorded.
    #[arg(help_heading = SCHEDULE, hide_short_help = true, long, default_value = "0s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// Closed loop with N workers (send, wait, send) — only to show the difference.
    #[arg(help_heading = SCHEDULE, hide_short_help = true, long, value_name = "N")]
    pub closed: Option<u32>,
    /// A peer's load profile instead of a rate: synchronous (one request at a time),
    /// concurrent:N (N requests in flight at all times, guidellm's concurrent, aiperf's
    /// --concurrency) or throughput (as many as --max-concurrency allows, 512 by default).
    /// Latency is from each request's send, which is its intended time in such a loop.
    #[arg(help_heading = SCHEDULE, hide_short_help = true, long, value_name = "PROFILE", value_parser = parse_profile,
          conflicts_with_all = ["closed", "rate", "stages", "trace", "arrival", "ramp"])]
    pub profile: Option<ProfileArg>,
    /// With --closed: apply HdrHistogram's coordinated-omission correction at this interval
    /// into a separate histogram.
    #[arg(help_heading = SCHEDULE, hide_short_help = true, long, value_parser = parse_duration, requires = "closed")]
    pub expected_interval: Option<Duration>,
    /// Send only shard K of N of the schedule, "K/N" with K counted from 0 (0/2 and 1/2 are
    /// the two halves; for several machines, merge the reports).
    #[arg(help_heading = SCHEDULE, hide_short_help = true, long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Start the schedule's clock at this wall-clock instant: RFC 3339 (2026-12-01T10:00:00Z,
    /// or with an offset like +01:00) or Unix milliseconds. Connections open before it; give
    /// every shard the same instant (clocks synced, docs/distributed.md). An instant already
    /// past is refused.
    #[arg(help_heading = SCHEDULE, hide_short_help = true, long, value_name = "INSTANT", value_parser = crate::units::parse_instant)]
    pub start_at: Option<std::time::SystemTime>,
    /// Run the test N times (run i with seed --seed + i) and report each
    /// headline number's mean and 95% confidence interval; per-run files
    /// get -runK before their extension, --out the whole repeat document.
    #[arg(help_heading = SCHEDULE, hide_short_help = true, long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// A request mix from FILE, JSON Lines: {"name", "method", "path" or "url", "headers",
    /// "body" or "body_file", "weight"} per request; chosen per arrival by weight and
    /// --seed (or --mix round-robin), reported per name (`by_request`). Every field and
    /// error: docs/requests.md.
    #[arg(help_heading = WORKLOADS, hide_short_help = true, long, value_name = "FILE",
          conflicts_with_all = ["openai", "method", "body", "body_file", "targets", "closed"])]
    pub requests: Option<PathBuf>,
    /// A request mix from vegeta's targets FILE (its HTTP or JSON format), sent in turn
    /// as vegeta does (or --mix weighted, every target weighing 1; docs/requests.md).
    #[arg(help_heading = WORKLOADS, hide_short_help = true, long, value_name = "FILE",
          conflicts_with_all = ["openai", "method", "body", "body_file", "closed"])]
    pub targets: Option<PathBuf>,
    /// How arrivals choose among --requests or --targets: by weight and --seed
    /// (default for --requests) or in turn (default for --targets).
    #[arg(help_heading = WORKLOADS, hide_short_help = true, long, value_enum)]
    pub mix: Option<MixArg>,
    /// Connections opened before the clock [default: from the rate, 16 to 256]
    ///
    /// Opened (and warmed, --warm-up) before the clock starts. Default: one per 1500 req/s
    /// of this machine's rate, 16 to 256, at most --max-connections.
    #[arg(help_heading = CONNECTIONS, short, long)]
    pub connections: Option<u32>,
    /// Connections may grow to this many, a few at a time: toward what the
    /// no-queue service time needs (1.5 x rate x the fastest service
    /// times), and beyond only while more connections carry more load.
    #[arg(help_heading = CONNECTIONS, hide_short_help = true, long, default_value_t = 1024)]
    pub max_connections: u32,
    /// Requests in flight (sent or waiting for a connection) above which a
    /// due request is dropped [default: 10000; with --max-concurrency, the
    /// whole schedule (at most 1,000,000), so nothing is dropped].
    #[arg(help_heading = CONNECTIONS, hide_short_help = true, long)]
    pub max_in_flight: Option<u32>,
    /// At most N requests at the server at once: a due request above the
    /// cap waits in order for a slot (vLLM bench's --max-concurrency),
    /// its latency still from its intended time, the wait reported as
    /// `waited`; --max-in-flight drops instead. Sets --max-connections.
    #[arg(help_heading = CONNECTIONS, hide_short_help = true, long, value_name = "N", conflicts_with_all = ["max_connections", "closed"])]
    pub max_concurrency: Option<u32>,
    /// Before the clock: `request` sends the run's first request once on
    /// each pre-opened connection (unmeasured, reported apart), after
    /// `check` (connections that receive bytes before any request are
    /// closed and opened again); `auto` is `request` for GET, HEAD and
    /// OPTIONS and `check` otherwise (never a POST unless asked).
    #[arg(help_heading = CONNECTIONS, hide_short_help = true, long, value_enum, default_value_t = WarmUpArg::Auto)]
    pub warm_up: WarmUpArg,
    /// Also retry non-idempotent requests (POST, PATCH) once when their reused connection
    /// turns out closed by the server before any response byte. Idempotent ones (GET, HEAD,
    /// PUT, DELETE, OPTIONS, TRACE) always are (RFC 9110 section 9.2.2).
    #[arg(help_heading = CONNECTIONS, hide_short_help = true, long)]
    pub retry_non_idempotent: bool,
    /// https: also trust the certificate(s) in this PEM file (beside the system trust
    /// store): CA certificates, or the server's own self-signed one, e.g. the one
    /// `metronome serve --tls --cert-out` wrote. A server whose certificate is one of them
    /// byte for byte is accepted as it is (its name and dates are still checked), as curl does.
    #[arg(help_heading = TLS, hide_short_help = true, long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// https: do not verify the server's certificate (the report warns).
    #[arg(help_heading = TLS, hide_short_help = true, long)]
    pub insecure: bool,
    /// https: the client certificate (PEM chain, the client's own first) for servers that
    /// require one (mutual TLS); needs --key.
    #[arg(help_heading = TLS, hide_short_help = true, long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// https: the private key of --cert (PEM: PKCS#8, PKCS#1 RSA or SEC1 EC; RSA, ECDSA
    /// P-256/P-384 or Ed25519).
    #[arg(help_heading = TLS, hide_short_help = true, long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// Speak HTTP/2 with prior knowledge (h2c) to an http:// URL: the connection opens with
    /// the HTTP/2 preface, no Upgrade. Each connection carries several requests at once (up
    /// to --max-streams). Both engines.
    #[arg(help_heading = HTTP2, hide_short_help = true, long, conflicts_with = "http2")]
    pub http2_prior_knowledge: bool,
    /// Speak HTTP/2 to an https:// URL (TLS offering ALPN h2 only; a server that picks
    /// http/1.1 is an error). Each connection carries several requests at once (up to
    /// --max-streams). Both engines.
    #[arg(help_heading = HTTP2, hide_short_help = true, long)]
    pub http2: bool,
    /// With HTTP/2: the most requests in flight on one connection [default: the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS, at most 100].
    #[arg(help_heading = HTTP2, hide_short_help = true, long, value_name = "N")]
    pub max_streams: Option<u32>,
    /// Unary gRPC: call SERVICE/METHOD (like grpc.health.v1.Health/Check) on the URL's
    /// server (no path in the URL): POST /SERVICE/METHOD, content-type application/grpc,
    /// te: trailers, the message from --body-file (protobuf, already encoded; none or an
    /// empty file: an empty message) behind gRPC's 5-byte prefix. Implies HTTP/2 (h2c for
    /// http://, ALPN h2 for https://). A call succeeds on HTTP 200 with grpc-status 0;
    /// other codes are counted in errors.by_grpc_status (docs/http2.md).
    #[arg(help_heading = HTTP2, hide_short_help = true, long, value_name = "SERVICE/METHOD",
          conflicts_with_all = ["openai", "requests", "targets", "method", "body"])]
    pub grpc: Option<String>,
    /// Speak OpenAI-style streaming completions: TTFT, ITL, TPOT, E2E (docs/openai.md)
    ///
    /// POST, text/event-stream.
    /// A URL of a bare host or ending in /v1 is completed to the endpoint (docs/openai.md).
    #[arg(help_heading = LLM, long)]
    pub openai: bool,
    /// Model name sent with --openai (default: the first id of GET /v1/models on the target).
    #[arg(help_heading = LLM, hide_short_help = true, long, requires = "openai")]
    pub model: Option<String>,
    /// The OpenAI endpoint: chat (/v1/chat/completions, messages) or completions
    /// (/v1/completions, prompt). Default: what the URL's path names, else chat.
    #[arg(help_heading = LLM, hide_short_help = true, long, value_enum, requires = "openai")]
    pub endpoint: Option<EndpointArg>,
    /// A prompt for --openai (repeatable; requests cycle through them in a seeded order).
    #[arg(help_heading = LLM, hide_short_help = true, long = "prompt", requires = "openai", conflicts_with_all = ["dataset", "input_len"])]
    pub prompts: Vec<String>,
    /// Prompts from FILE for --openai: JSON Lines ({"prompt": ...} or {"messages": [...]},
    /// optional "output_len"/"max_tokens"), ShareGPT JSON, aiperf's single_turn/multi_turn
    /// or guidellm's JSON/JSONL (docs/openai.md); shuffled by --seed, cycled.
    /// Lines with {"turns": [...]} are conversations (see --think-time).
    #[arg(help_heading = LLM, hide_short_help = true,
        long,
        value_name = "FILE",
        requires = "openai",
        conflicts_with = "input_len"
    )]
    pub dataset: Option<PathBuf>,
    /// Read a ShareGPT --dataset as whole conversations: every human turn is a request
    /// carrying the history (earlier turns with the dataset's answers), sent when the
    /// previous turn's answer has ended plus --think-time. (JSON Lines entries with
    /// "turns" are conversations without this flag.)
    #[arg(help_heading = LLM, hide_short_help = true, long, requires = "dataset")]
    pub multi_turn: bool,
    /// With conversations: the time between the end of an answer and the next turn
    /// (its intended send time) [default: 0s].
    #[arg(help_heading = LLM, hide_short_help = true, long, value_name = "DURATION", requires = "dataset", value_parser = crate::units::parse_duration)]
    pub think_time: Option<std::time::Duration>,
    /// Synthetic prompts of N words (the token proxy), drawn from a fixed vocabulary by
    /// --seed; or lengths drawn per prompt: normal:MEAN,SD or uniform:LO..HI.
    #[arg(help_heading = LLM, hide_short_help = true, long, value_name = "N", requires = "openai")]
    pub input_len: Option<crate::run::lengths::Length>,
    /// A prefix of N words shared by --prefix-share of the synthetic prompts (in front of
    /// their own --input-len words), so a server's prefix cache can serve it.
    #[arg(help_heading = LLM, hide_short_help = true, long, value_name = "N", requires = "input_len", conflicts_with = "cache_bust",
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub prefix_len: Option<u32>,
    /// The fraction of synthetic prompts that carry the --prefix-len prefix [default: 1].
    #[arg(help_heading = LLM, hide_short_help = true, long, value_name = "F", requires = "prefix_len", value_parser = parse_fraction)]
    pub prefix_share: Option<f64>,
    /// Count prompt tokens with a Hugging Face tokenizer.json (the model's own) instead of
    /// words: synthetic lengths, dataset filtering and the report's input tokens.
    #[arg(help_heading = LLM, hide_short_help = true, long, value_name = "FILE", requires = "openai")]
    pub tokenizer: Option<PathBuf>,
    /// Put a word unique to each prompt and to this run in front of every prompt, so no
    /// prefix cache (not even a previous run's) serves any of it.
    #[arg(help_heading = LLM, hide_short_help = true, long, requires = "openai")]
    pub cache_bust: bool,
    /// Output length of every request (its max-tokens field), over a dataset's own lengths;
    /// or drawn per prompt: normal:MEAN,SD or uniform:LO..HI.
    #[arg(help_heading = LLM, hide_short_help = true,
        long,
        value_name = "M",
        requires = "openai",
        conflicts_with = "max_tokens"
    )]
    pub output_len: Option<crate::run::lengths::Length>,
    /// Output-length cap sent with --openai when the prompt gives none.
    #[arg(help_heading = LLM, hide_short_help = true, long, default_value_t = 128, requires = "openai")]
    pub max_tokens: u32,
    /// The field the cap is sent in on the chat endpoint: max_completion_tokens (OpenAI's
    /// current field, what vLLM's bench sends), or max_tokens for servers that read only the
    /// older field (the completions endpoint always uses max_tokens).
    #[arg(help_heading = LLM, hide_short_help = true, long, value_enum, default_value_t = MaxTokensFieldArg::MaxCompletionTokens, requires = "openai")]
    pub max_tokens_field: MaxTokensFieldArg,
    /// Send "ignore_eos": true (vLLM, SGLang): generate up to the cap, so output lengths
    /// are pinned.
    #[arg(help_heading = LLM, hide_short_help = true, long, requires = "openai")]
    pub ignore_eos: bool,
    /// A JSON object merged into every --openai request body (JSON merge patch, RFC 7396:
    /// objects merge key by key, null removes a key), after --body, e.g.
    /// '{"temperature":0,"min_tokens":128}'.
    #[arg(help_heading = LLM, hide_short_help = true, long, value_name = "JSON", requires = "openai")]
    pub extra_body: Option<String>,
    /// Bearer token sent with --openai (Authorization header).
    #[arg(help_heading = LLM, hide_short_help = true, long, env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// With --openai (refused without it): also report the stream metrics as vLLM's `bench serve`, guidellm or
    /// aiperf define them, side by side: a list, e.g. 'vllm,guidellm,aiperf' (also repeatable),
    /// one view per peer in the order given (JSON `compat`; docs/metrics.md has one table per
    /// metric).
    #[arg(help_heading = LLM, hide_short_help = true, long, value_enum, value_name = "PEER[,PEER...]", value_delimiter = ',')]
    pub metrics_compat: Vec<CompatArg>,
    /// A pass/fail check, e.g. 'latency.p99<50ms' (repeatable; exit 3 when breached)
    ///
    /// More: 'error_rate<0.01', 'send_lag.p99<1ms', 'achieved_ratio>0.99', 'dropped==0'. A metric the run
    /// cannot have is refused before it (ttft, itl, tpot... need --openai); one with no samples
    /// fails ("no samples").
    #[arg(help_heading = THRESHOLDS, long = "threshold", value_name = "CHECK")]
    pub thresholds: Vec<String>,
    /// A service-level objective, METRIC=DURATION with METRIC one of latency, ttft, itl, tpot (repeatable;
    /// ttft, itl and tpot need --openai). Goodput = requests meeting every bound / all scheduled requests.
    #[arg(help_heading = THRESHOLDS, hide_short_help = true, long = "slo")]
    pub slos: Vec<String>,
    /// Write the JSON report to FILE
    ///
    /// Every output file's directory is checked before the run; a write that still fails at the end puts the JSON in metronome-report-RUN_ID.json.
    #[arg(help_heading = OUTPUTS, short, long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Output format on stdout.
    #[arg(help_heading = OUTPUTS, hide_short_help = true, long, value_enum, default_value_t = FormatArg::Text)]
    pub format: FormatArg,
    /// Write the report as one self-contained HTML page to FILE (opens offline; docs/html.md).
    #[arg(help_heading = OUTPUTS, hide_short_help = true, long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write the latency histogram in HdrHistogram's percentile-distribution (.hgrm) format to FILE.
    #[arg(help_heading = OUTPUTS, hide_short_help = true, long)]
    pub hgrm: Option<PathBuf>,
    /// Write SVG plots (latency by percentile, latency per interval) to FILE.
    #[arg(help_heading = OUTPUTS, hide_short_help = true, long)]
    pub svg: Option<PathBuf>,
    /// Write the interval histograms (latency untagged, send lag tagged `send_lag`) as an
    /// HdrHistogram interval log (.hlog) to FILE.
    #[arg(help_heading = OUTPUTS, hide_short_help = true, long)]
    pub hlog: Option<PathBuf>,
    /// Prometheus remote write (docs/prometheus.md).
    #[command(flatten)]
    pub prometheus: PrometheusArgs,
    /// Write each interval's row (the report's `intervals[i]`) as one JSON line to FILE, or to
    /// stdout with `-`, as the run goes (docs/live.md).
    ///
    /// An interval is written about a second after its end, once every engine thread closed it.
    /// With `-` the summary goes to stderr (with `--format json`, the JSON report follows the lines).
    #[arg(help_heading = OUTPUTS, hide_short_help = true, long = "out-intervals", value_name = "FILE|-")]
    pub out_intervals: Option<PathBuf>,
    /// Write one JSON line per measured request to FILE, or to stdout with `-`: its intended
    /// time, send, first byte, end, outcome, name and tokens (docs/requests-out.md).
    ///
    /// Written off the pacing threads through a bounded queue: records that do not fit (the
    /// writer fell behind) are dropped and counted in `generator.out_requests`.
    #[arg(help_heading = OUTPUTS, hide_short_help = true, long = "out-requests", value_name = "FILE|-")]
    pub out_requests: Option<PathBuf>,
    /// With --prometheus-rw: push the intervals while the run goes, every DURATION (rounded up
    /// to whole intervals; default: each interval as it closes). docs/live.md.
    #[arg(help_heading = OUTPUTS, hide_short_help = true, long = "prometheus-interval", value_name = "DURATION", value_parser = parse_duration, requires = "prometheus_rw")]
    pub prometheus_interval: Option<Duration>,
    /// Serve a live page of the run on ADDR (default 127.0.0.1 with a free port; printed first
    /// on stderr), updated each interval; at the end it is the --html page. docs/live.md.
    #[arg(help_heading = OUTPUTS, hide_short_help = true, long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:0")]
    pub dashboard: Option<std::net::SocketAddr>,
    /// Width of one report interval.
    #[arg(help_heading = OUTPUTS, hide_short_help = true, long, default_value = "1s", value_parser = parse_duration)]
    pub interval: Duration,
    /// No progress line on stderr.
    #[arg(help_heading = OUTPUTS, hide_short_help = true, short, long)]
    pub quiet: bool,
    /// Engine: auto picks io_uring where the kernel allows it.
    #[arg(help_heading = ENGINE, hide_short_help = true, long, value_enum, default_value_t = EngineArg::Auto)]
    pub engine: EngineArg,
    /// Generator threads (io_uring engine; default one per core).
    #[arg(help_heading = ENGINE, hide_short_help = true, long)]
    pub threads: Option<u32>,
    /// CPUs to pin generator threads to, e.g. 0,1 or 2-5 (io_uring engine).
    #[arg(help_heading = ENGINE, hide_short_help = true, long)]
    pub cpus: Option<String>,
    /// Busy-wait before each intended send (sleep before that): a duration, or `auto`.
    ///
    /// The default, 200 us, covers the p99 lateness of an io_uring timeout wake-up measured
    /// on a 2-core VM (runner-uring/tests/timer_overshoot.rs). `auto` starts there, then
    /// follows the p99 lateness of the engine's own sleeps during the run, plus 20 us, within
    /// 20 us..2 ms: every send on time, at the price of spinning longer where the machine's
    /// timers are late (measured on a loaded VM: more CPU than the default at 1k req/s).
    /// The time spent spinning is reported apart from work. The std engine spins at least
    /// its own measured sleep lateness.
    #[arg(help_heading = ENGINE, hide_short_help = true, long, default_value = "200us", value_parser = parse_spin)]
    pub spin: SpinArg,
}

/// Run the embedded target server: one FIFO server over HTTP/1.1 keep-alive.
///
/// A request arriving at t completes at max(t, free_at) + SERVICE, and
/// free_at moves on. The first line printed is "metronome serve listening
/// on http://ADDR"; Ctrl-C (or SIGTERM) stops it and prints "served N
/// requests".
#[derive(Args, Clone, Debug, PartialEq, Eq)]
pub struct ServeArgs {
    /// Address to listen on (IP:PORT, HOST:PORT, or a bare PORT on 127.0.0.1).
    ///
    /// Port 0 picks a free port; the first line printed names the real one.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080", value_parser = parse_listen)]
    pub listen: SocketAddr,

    /// Service time of the single FIFO server (0 answers at once).
    ///
    /// A request arriving at t completes at max(t, free_at) + SERVICE, and
    /// free_at moves on to that completion.
    #[arg(long, value_name = "DURATION", default_value = "1ms", value_parser = parse_duration)]
    pub service: Duration,

    /// Stall the server once: the first request that starts service at or
    /// after this time (counted from the first request) is held --stall-for.
    ///
    /// Everything queued behind it waits too. In --sse mode the stream
    /// arriving first at or after this time gets its first token --stall-for
    /// later, and streams arriving during the stall start when it ends.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "stall_for")]
    pub stall_at: Option<Duration>,

    /// How long the stall lasts (needs --stall-at).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "stall_at")]
    pub stall_for: Option<Duration>,

    /// Answer 429 Too Many Requests to every K-th request (in arrival
    /// order), still at its FIFO time.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    pub error_every: Option<u64>,

    /// Serve OpenAI-style SSE streams on POST /v1/chat/completions (and /v1/completions).
    ///
    /// Each stream sends a role chunk at once, content token i at
    /// start + TTFT + i * ITL, a usage chunk with completion_tokens, then
    /// "data: [DONE]". Streams run concurrently. A "max_tokens" (or
    /// "max_completion_tokens") in the JSON body caps --tokens. Other paths
    /// answer 404 (GET /v1/models lists the one model, --model).
    #[arg(long)]
    pub sse: bool,

    /// Content tokens per stream (--sse).
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub tokens: u32,

    /// Time to first token, from the stream's service start (--sse).
    #[arg(long, value_name = "DURATION", default_value = "50ms", value_parser = parse_duration)]
    pub ttft: Duration,

    /// Inter-token latency (--sse).
    #[arg(long, value_name = "DURATION", default_value = "10ms", value_parser = parse_duration)]
    pub itl: Duration,

    /// Cut every K-th stream after half its tokens: the connection closes
    /// with no [DONE] and no terminating chunk (--sse).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    pub cut_every: Option<u64>,

    /// Send an error event instead of the tokens on every K-th stream, then
    /// end the body properly without [DONE] (--sse).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    pub error_event_every: Option<u64>,

    /// Size in bytes of the plain 200 body.
    #[arg(long, value_name = "BYTES", default_value_t = 2)]
    pub body_bytes: usize,
    /// Serve HTTPS: a self-signed certificate for localhost, 127.0.0.1 and ::1
    /// is generated at start (its SHA-256 fingerprint is printed), unless
    /// --cert and --key name your own.
    #[arg(long)]
    pub tls: bool,
    /// With --tls: the certificate chain, PEM (needs --key).
    #[arg(long, requires = "tls", requires = "key")]
    pub cert: Option<PathBuf>,
    /// With --tls: the private key, PEM (needs --cert).
    #[arg(long, requires = "tls", requires = "cert")]
    pub key: Option<PathBuf>,
    /// With --tls: write the served certificate (PEM) here, e.g. for
    /// `metronome run --cacert FILE`.
    #[arg(long, value_name = "FILE", requires = "tls")]
    pub cert_out: Option<PathBuf>,
    /// With --tls: require a client certificate signed by one of the CA
    /// certificates of this PEM file (mutual TLS), e.g. for `run --cert --key`.
    #[arg(long, value_name = "FILE", requires = "tls")]
    pub client_ca: Option<PathBuf>,

    /// The stream shape of --sse: `default` (generated: role chunk, --tokens
    /// content chunks, usage, [DONE]) or a golden stream of tests/streams/
    /// replayed event by event (the first event with the head, event k at
    /// TTFT + (k-1) * ITL): openai, vllm, continuous, llamacpp, reasoning,
    /// tools, empty_content, no_done, error, completions; `json` answers a
    /// plain JSON completion (a server that ignores `stream: true`).
    #[arg(long, value_enum, value_name = "SHAPE", default_value_t = ShapeArg::Default)]
    pub shape: ShapeArg,
    /// The model id GET /v1/models lists (--sse).
    #[arg(long, value_name = "NAME", default_value = "metronome")]
    pub model: String,

    /// Also speak HTTP/2 on the same port, with the same model (FIFO
    /// service, stall, 429s, SSE streams).
    ///
    /// A connection that opens with the HTTP/2 preface is served as HTTP/2:
    /// h2c with prior knowledge on a plain port (curl
    /// --http2-prior-knowledge), h2 with --tls (ALPN offers h2 and
    /// http/1.1). Any other connection is HTTP/1.1. Each stream is one
    /// request; a request with content-type application/grpc (any path) is
    /// answered as a unary gRPC call: one empty message and trailers with
    /// grpc-status 0. A cut SSE stream (--cut-every) is reset
    /// (RST_STREAM INTERNAL_ERROR); malformed input ends the connection
    /// with GOAWAY.
    #[arg(long)]
    pub http2: bool,

    /// With --http2: the SETTINGS_MAX_CONCURRENT_STREAMS advertised per
    /// connection; a stream beyond it is refused (REFUSED_STREAM).
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_streams: u32,

    /// With --http2: answer the K-th, 2K-th, ... request (in arrival order,
    /// every request counted, as for --error-every), when it is a gRPC
    /// call, with grpc-status CODE (1 to 16) in a trailers-only response,
    /// e.g. 10:14 (UNAVAILABLE).
    #[arg(long, value_name = "K:CODE", value_parser = parse_grpc_status_every, requires = "http2")]
    pub grpc_status_every: Option<(u64, u32)>,
}

/// Parses `--grpc-status-every K:CODE`: K at least 1, CODE a gRPC status
/// from 1 to 16.
///
/// # Errors
/// A one-line message naming the bad text and the accepted form.
pub fn parse_grpc_status_every(text: &str) -> Result<(u64, u32), String> {
    let bad = || {
        format!("invalid --grpc-status-every '{text}': write K:CODE, K >= 1 and CODE a gRPC status 1..16, like 10:14")
    };
    let (k, code) = text.trim().split_once(':').ok_or_else(bad)?;
    let k: u64 = k.trim().parse().map_err(|_| bad())?;
    let code: u32 = code.trim().parse().map_err(|_| bad())?;
    if k == 0 || !(1..=16).contains(&code) {
        return Err(bad());
    }
    Ok((k, code))
}

/// Parses `--listen`: `IP:PORT`, `HOST:PORT` (first address), or a bare
/// `PORT` meaning `127.0.0.1:PORT`.
///
/// # Errors
/// A one-line message naming the bad text and the accepted forms.
pub fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    let t = text.trim();
    if let Ok(port) = t.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    if let Ok(addr) = t.parse::<SocketAddr>() {
        return Ok(addr);
    }
    t.to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or_else(|| {
            format!("invalid listen address '{text}': write IP:PORT, HOST:PORT or PORT, like 127.0.0.1:8080")
        })
}

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

/// `--prometheus-rw` and its options, on `run` and `report`.
#[derive(Clone, Debug, Default, Args)]
pub struct PrometheusArgs {
    /// Push counters, gauges and native latency histograms to this Prometheus remote write URL
    /// (http://HOST:PORT/api/v1/write): every interval, then the totals; a run pushes each
    /// interval as it closes (docs/live.md), the totals at its end.
    /// A push that fails is a warning, not a failed run. docs/prometheus.md.
    #[arg(help_heading = OUTPUTS, hide_short_help = true, long = "prometheus-rw", value_name = "URL", value_parser = crate::prom::push::Endpoint::parse)]
    pub prometheus_rw: Option<crate::prom::push::Endpoint>,
    /// A label NAME=VALUE on every pushed series (repeatable; may override job, run_id,
    /// shard, engine).
    #[arg(help_heading = OUTPUTS, hide_short_help = true, long = "prometheus-label", value_name = "NAME=VALUE", value_parser = crate::prom::series::parse_label, requires = "prometheus_rw")]
    pub prometheus_labels: Vec<(String, String)>,
    /// Push classic summaries (quantile labels, _sum, _count) instead of native histograms,
    /// for servers without native histograms.
    #[arg(help_heading = OUTPUTS, hide_short_help = true, long = "prometheus-summaries", requires = "prometheus_rw")]
    pub prometheus_summaries: bool,
    /// How long the final flush may take before what is left is given up.
    #[arg(help_heading = OUTPUTS, hide_short_help = true, long = "prometheus-timeout", default_value = "10s", value_parser = parse_duration, requires = "prometheus_rw")]
    pub prometheus_timeout: Duration,
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
