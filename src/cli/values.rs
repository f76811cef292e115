//! The values of flags: one enum per flag with a fixed set of choices
//! (`--arrival`, `--engine`, `--format`, `--shape`, ...), their parsers
//! (`--spin`, `--profile`, `--prefix-share`), and how `--format` and
//! `--metrics-compat` map onto the report's types. Arguments import no
//! command: `--shape` becomes serve's `Shape` in `serve/stream.rs`.
// The doc comments below are clap's `--help` text, printed as written:
// `[DONE]` and `<RATE>` are what a user reads, not rustdoc links or tags.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use clap::ValueEnum;

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

pub(super) fn parse_spin(text: &str) -> Result<SpinArg, String> {
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

pub(super) fn parse_profile(text: &str) -> Result<ProfileArg, String> {
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
pub(super) fn parse_fraction(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!("`{text}` is not a fraction from 0 to 1")),
    }
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
    /// The portable engine: the same event loop over readiness I/O (mio).
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

/// `--connect-to HOST:PORT:ADDR:PORT` (curl's and oha's): requests for
/// the first HOST and PORT connect to the second pair. An empty field
/// matches any host or port (the first pair) or keeps the URL's (the
/// second); an IPv6 address is written in brackets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectTo {
    /// The URL host this applies to (`None`: any).
    pub host: Option<String>,
    /// The URL port this applies to (`None`: any).
    pub port: Option<u16>,
    /// The host (name or address) to connect to (`None`: the URL's).
    pub to_host: Option<String>,
    /// The port to connect to (`None`: the URL's).
    pub to_port: Option<u16>,
}

/// `--resolve HOST:PORT:ADDR` (curl's and oha's): HOST at PORT resolves
/// to ADDR, without asking DNS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolve {
    /// The host name (or `*`: any).
    pub host: String,
    /// The port.
    pub port: u16,
    /// The address connected to.
    pub addr: std::net::IpAddr,
}

/// Splits `s` at its colons, keeping a bracketed IPv6 address whole (its
/// brackets removed).
fn colon_fields(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = s;
    loop {
        if let Some(inner) = rest.strip_prefix('[') {
            let end = inner.find(']').ok_or("an unclosed '['")?;
            out.push(inner[..end].to_string());
            rest = &inner[end + 1..];
            match rest.strip_prefix(':') {
                Some(r) => rest = r,
                None if rest.is_empty() => return Ok(out),
                None => return Err(format!("'{rest}' after ']'")),
            }
        } else {
            match rest.split_once(':') {
                Some((field, r)) => {
                    out.push(field.to_string());
                    rest = r;
                }
                None => {
                    out.push(rest.to_string());
                    return Ok(out);
                }
            }
        }
    }
}

/// A port field: empty is `None`.
fn port_field(p: &str) -> Result<Option<u16>, String> {
    if p.is_empty() {
        return Ok(None);
    }
    match p.parse::<u16>() {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(format!("'{p}' is not a port (1 to 65535)")),
    }
}

/// Parses `--connect-to HOST:PORT:ADDR:PORT`.
///
/// # Errors
/// A message saying what to write.
///
/// ```
/// use metronome::cli::{parse_connect_to, ConnectTo};
/// assert_eq!(
///     parse_connect_to("example.com:443:[::1]:8443").unwrap(),
///     ConnectTo { host: Some("example.com".into()), port: Some(443),
///                 to_host: Some("::1".into()), to_port: Some(8443) }
/// );
/// assert_eq!(parse_connect_to("::127.0.0.1:").unwrap().to_host.as_deref(), Some("127.0.0.1"));
/// assert!(parse_connect_to("a:1:b").is_err());
/// ```
pub fn parse_connect_to(s: &str) -> Result<ConnectTo, String> {
    let what = "write HOST:PORT:ADDR:PORT, like example.com:443:127.0.0.1:8443 (an empty field: \
                any, or the URL's)";
    let f = colon_fields(s).map_err(|e| format!("{e}; {what}"))?;
    let [host, port, to_host, to_port] = f.as_slice() else {
        return Err(format!("{} fields, not 4; {what}", f.len()));
    };
    let some = |h: &String| (!h.is_empty()).then(|| h.clone());
    Ok(ConnectTo {
        host: some(host),
        port: port_field(port).map_err(|e| format!("{e}; {what}"))?,
        to_host: some(to_host),
        to_port: port_field(to_port).map_err(|e| format!("{e}; {what}"))?,
    })
}

/// Parses `--resolve HOST:PORT:ADDR`.
///
/// # Errors
/// A message saying what to write.
///
/// ```
/// use metronome::cli::parse_resolve;
/// let r = parse_resolve("example.com:443:[::1]").unwrap();
/// assert_eq!((r.host.as_str(), r.port, r.addr.to_string()), ("example.com", 443, "::1".into()));
/// assert!(parse_resolve("example.com:443:not-an-address").is_err());
/// ```
pub fn parse_resolve(s: &str) -> Result<Resolve, String> {
    let what = "write HOST:PORT:ADDR, like example.com:443:127.0.0.1 (an IPv6 address in [])";
    let f = colon_fields(s).map_err(|e| format!("{e}; {what}"))?;
    let [host, port, addr] = f.as_slice() else {
        return Err(format!("{} fields, not 3; {what}", f.len()));
    };
    if host.is_empty() {
        return Err(format!("no host; {what}"));
    }
    let port = port_field(port)
        .and_then(|p| p.ok_or_else(|| "no port".to_string()))
        .map_err(|e| format!("{e}; {what}"))?;
    let addr = addr
        .parse()
        .map_err(|_| format!("'{addr}' is not an IP address; {what}"))?;
    Ok(Resolve {
        host: host.clone(),
        port,
        addr,
    })
}

/// Parses a listen address, the one parser of `serve --listen` and `run
/// --dashboard=ADDR`: `IP:PORT`, `HOST:PORT` (first address, e.g.
/// `localhost:0`), or a bare `PORT` meaning `127.0.0.1:PORT`.
///
/// ```
/// use metronome::cli::parse_listen;
/// assert_eq!(parse_listen("9000").unwrap().to_string(), "127.0.0.1:9000");
/// assert_eq!(parse_listen("[::1]:0").unwrap().to_string(), "[::1]:0");
/// assert!(parse_listen("http://127.0.0.1:9000/").is_err());
/// ```
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
