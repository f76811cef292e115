//! `metronome run URL`: [`RunArgs`], every flag of a run grouped under its
//! `--help` heading, their defaults ([`DEFAULT_RATE`], [`DEFAULT_DURATION`]),
//! the help's examples, and [`PrometheusArgs`], the remote-write flags a
//! run shares with `report`.
// The doc comments below are clap's `--help` text, printed as written:
// `[DONE]` and `<RATE>` are what a user reads, not rustdoc links or tags.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::values::{
    parse_connect_to, parse_fraction, parse_listen, parse_profile, parse_resolve, parse_spin,
    ArrivalArg, CompatArg, ConnectTo, EndpointArg, EngineArg, FormatArg, MaxTokensFieldArg, MixArg,
    ProfileArg, RampArg, Resolve, SpinArg, WarmUpArg,
};
use crate::units::parse_duration;

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
/// Heading: checks on each response.
const CHECKS: &str = "Checks on the answer";
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
workloads, connections, TLS, HTTP/2 and gRPC, LLM (OpenAI), checks on the answer, thresholds,
outputs, engine.

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

/// `metronome run URL`.
#[derive(Clone, Debug, Args)]
#[command(after_help = RUN_AFTER_SHORT_HELP, after_long_help = RUN_AFTER_LONG_HELP)]
pub struct RunArgs {
    /// Target URL, http:// or https://: HTTP/1.1, HTTPS (TLS 1.2/1.3), HTTP/2 (h2c, h2), HTTP/3,
    /// unary gRPC, OpenAI-style SSE streams
    ///
    /// HTTP/1.1 by default, over TLS 1.2 or 1.3 for https://; HTTP/2 with
    /// --http2-prior-knowledge (h2c, http://) or --http2 (h2, https://); HTTP/3 over QUIC with
    /// --http3 (https://; on both engines, auto picking std); unary gRPC with
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
    /// Also spelled --rps or --qps.
    #[arg(help_heading = SCHEDULE, short, long, visible_aliases = ["rps", "qps"])]
    pub rate: Option<f64>,
    /// Send the first N requests of the schedule, then stop (as oha, hey, ab -n)
    ///
    /// The schedule's first N intended send times after the --warmup, at --rate and
    /// --arrival: exact for any thread and --shard split. Without --duration the run lasts
    /// until the N-th (N / rate for --arrival constant); with --duration, --stages or
    /// --trace too, whichever ends first. The report says it was a count (`count`).
    #[arg(help_heading = SCHEDULE, short = 'n', long = "count", value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..), conflicts_with_all = ["closed", "profile"])]
    pub count: Option<u64>,
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
    /// Requests for HOST:PORT connect to ADDR:PORT instead (curl's and oha's --connect-to);
    /// the URL's host stays in Host, TLS SNI and the certificate check (repeatable: the first
    /// that matches the URL applies; an empty field is any host or port, or keeps the URL's;
    /// IPv6 in []).
    #[arg(help_heading = CONNECTIONS, hide_short_help = true, long = "connect-to",
          value_name = "HOST:PORT:ADDR:PORT", value_parser = parse_connect_to)]
    pub connect_to: Vec<ConnectTo>,
    /// HOST at PORT resolves to ADDR, without DNS (curl's and oha's --resolve); the URL's
    /// host stays in Host, TLS SNI and the certificate check (repeatable; HOST `*`: any).
    #[arg(help_heading = CONNECTIONS, hide_short_help = true, long = "resolve",
          value_name = "HOST:PORT:ADDR", value_parser = parse_resolve)]
    pub resolve: Vec<Resolve>,
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
    /// Speak HTTP/3 to an https:// URL: QUIC (UDP) with TLS 1.3 offering ALPN h3, the same
    /// certificate handling as HTTPS (--cacert, --insecure). Each connection carries several
    /// requests at once (up to --max-streams). Both engines; auto picks std (docs/http3.md).
    #[arg(help_heading = HTTP2, hide_short_help = true, long,
          conflicts_with_all = ["http2", "http2_prior_knowledge", "grpc"])]
    pub http3: bool,
    /// With --http3: send requests in 0-RTT (TLS early data) on connections opened with a
    /// session ticket from an earlier one of the run (the first connection never can); a
    /// server that rejects it gets them again in 1-RTT. Counted in the report
    /// (connections.h3_0rtt). 0-RTT requests can be replayed by an attacker (RFC 8470):
    /// use it for idempotent requests only; metronome sends what you ask. Off by default
    /// (connections still resume their TLS session, without early data).
    #[arg(help_heading = HTTP2, hide_short_help = true, long = "http3-0rtt")]
    pub http3_0rtt: bool,
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
    /// The status every response must have: 200, 2xx or 200-204 (one that does not is an
    /// error of kind `check`). A status it accepts is a success even outside 2xx.
    #[arg(help_heading = CHECKS, long, value_name = "STATUS")]
    pub check_status: Option<String>,
    /// A header every response must carry, "Name: value" (the value exact, without the
    /// surrounding blanks), or "Name" for any value.
    #[arg(help_heading = CHECKS, hide_short_help = true, long, value_name = "NAME[: VALUE]")]
    pub check_header: Option<String>,
    /// A text every response body must contain (found across reads, chunks, frames and
    /// events, never copying the body; docs/requests.md).
    #[arg(help_heading = CHECKS, long, value_name = "TEXT")]
    pub check_body: Option<String>,
    /// A regular expression (Rust's regex syntax) every response body must match somewhere,
    /// as a DFA of at most 4 MiB walked across reads (docs/requests.md).
    #[arg(help_heading = CHECKS, hide_short_help = true, long, value_name = "REGEX")]
    pub check_regex: Option<String>,
    /// A pass/fail check, e.g. 'latency.p99<50ms' (repeatable; exit 3 when breached)
    ///
    /// More: 'error_rate<0.01', 'send_lag.p99<1ms', 'achieved_ratio>0.99', 'dropped==0'. A metric the run
    /// cannot have is refused before it (ttft, itl, tpot... need --openai); one whose metric has
    /// too few values for its statistic (p99 needs 100, p50 2) is not evaluated and fails.
    #[arg(help_heading = THRESHOLDS, long = "threshold", value_name = "CHECK")]
    pub thresholds: Vec<String>,
    /// A service-level objective, METRIC=DURATION with METRIC one of latency, ttft, itl, tpot (repeatable;
    /// ttft, itl and tpot need --openai). Goodput = requests meeting every bound / all scheduled requests.
    #[arg(help_heading = THRESHOLDS, hide_short_help = true, long = "slo")]
    pub slos: Vec<String>,
    /// Write the JSON report to FILE
    ///
    /// Every output file's directory is checked before the run (two outputs may not name one file); a write that still fails at the end puts the JSON in metronome-report-RUN_ID.json.
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
    /// Serve a live page of the run, updated each interval; at the end it is the --html page
    /// (docs/live.md). On 127.0.0.1 with a free port (printed first on stderr), or on ADDR
    /// given as --dashboard=ADDR: IP:PORT, HOST:PORT or a bare PORT, as serve --listen
    /// (the `=` keeps a URL after the flag the run's URL).
    #[arg(help_heading = OUTPUTS, hide_short_help = true, long, value_name = "ADDR", num_args = 0..=1,
          require_equals = true, default_missing_value = "127.0.0.1:0", value_parser = parse_listen)]
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
    /// for servers without native histograms (a server that refuses them gets summaries
    /// anyway, after a one-line warning).
    #[arg(help_heading = OUTPUTS, hide_short_help = true, long = "prometheus-summaries", requires = "prometheus_rw")]
    pub prometheus_summaries: bool,
    /// How long the final flush may take before what is left is given up (a strict bound;
    /// a flush that waits says so).
    #[arg(help_heading = OUTPUTS, hide_short_help = true, long = "prometheus-timeout", default_value = "10s", value_parser = parse_duration, requires = "prometheus_rw")]
    pub prometheus_timeout: Duration,
}
