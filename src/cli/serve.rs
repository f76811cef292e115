//! `metronome serve`: [`ServeArgs`], the embedded target's flags, and the
//! parser of `--grpc-status-every` (`--listen`'s, [`parse_listen`], is
//! shared with `run --dashboard` in `values.rs`).
// The doc comments below are clap's `--help` text, printed as written:
// `[DONE]` and `<RATE>` are what a user reads, not rustdoc links or tags.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::values::{parse_listen, ShapeArg};
use crate::units::parse_duration;

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
    /// connection; a stream beyond it is refused (REFUSED_STREAM). With
    /// --http3: QUIC's limit of concurrent request streams per connection.
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_streams: u32,

    /// With --http2: answer the K-th, 2K-th, ... request (in arrival order,
    /// every request counted, as for --error-every), when it is a gRPC
    /// call, with grpc-status CODE (1 to 16) in a trailers-only response,
    /// e.g. 10:14 (UNAVAILABLE).
    #[arg(long, value_name = "K:CODE", value_parser = parse_grpc_status_every, requires = "http2")]
    pub grpc_status_every: Option<(u64, u32)>,

    /// Also serve HTTP/3 over QUIC on UDP, on the same port number as TCP
    /// (needs --tls: the same certificate, ALPN h3), with the same model
    /// (FIFO service, stall, 429s, SSE streams; no gRPC). The served count
    /// includes HTTP/3 requests. A cut SSE stream is reset
    /// (H3_INTERNAL_ERROR); stopping closes every connection with
    /// H3_NO_ERROR.
    #[arg(long, requires = "tls")]
    pub http3: bool,
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
