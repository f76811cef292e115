//! End-to-end tests: the real binary (and the library's server, pusher and
//! simulator) against servers on loopback, on every engine. One binary, one
//! module per concept, each named for what it proves. Servers bind port 0,
//! files go to the temporary directory under names with the process id and
//! the module's own prefix (the modules share one process), and nothing
//! here changes the process's environment, working directory or signal
//! dispositions (the signals go to child processes).
//!
//! Not here, each for a reason:
//! - `tests/hostile/`: the hostile servers, a table of contents of its own;
//! - `tests/timing/`: runs whose real-time bounds need the machine to
//!   themselves, one at a time (here they would compete with this binary's
//!   other tests for the CPU);
//! - `tests/zero_alloc_h2.rs`: a counting `#[global_allocator]`, which must
//!   count no other test's threads.

#[path = "../common/mod.rs"]
mod common;

// The run.
//
// `run` against the embedded server: counts, latency, errors, bounds.
mod run;
// When the open loop falls behind, the report says from which second and why.
mod behind;
// Signals as `timeout(1)` and CI runners deliver them: copies are one.
mod signals;
// A common start (`--start-at`): shards start their clocks at one instant.
mod start;
// `--stages`, `--ramp`, `--trace`: exact counts per stage, a trace in full.
mod workloads;
// `-n N`: the schedule's first N requests, exact for any split.
mod count;
// The per-interval stream series and the bytes on the wire (curl's count).
mod intervals;
// `--out-intervals`: each row written as it closes, equal to the report's.
mod live;
// `--out-requests`: one line per measured request, equal to the report's counts.
mod out_requests;
// One truth in every view: the lines, the request lines and the page say
// what the report says, on a matrix of runs (issue 38).
mod views;
// The report's `argv` and `protocol`, and the protocol-mismatch hints.
mod protocol;
// The engine a container gets: `auto` under a seccomp filter refusing
// io_uring falls back to std once, and `--engine uring` says why not.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod fallback;

// Protocols.
//
// HTTPS against the embedded server: set-up in the report, one-line errors.
mod tls;
// TLS against a stack metronome did not write (Python's ssl, OpenSSL).
mod tls_peer;
// HTTP/2 (h2c and h2) against the embedded server and nginx.
mod h2;
// `--connect-to` and `--resolve`: an nginx vhost by name at 127.0.0.1.
mod connect_to;
// Checks on the answer: nginx chunks and SSE, serve over h1, h2 and h3.
mod checks;
// Unary gRPC against the embedded server and grpcio's health service.
mod grpc;
// HTTP/3 (--http3, std engine) against aioquic: ok, reset, close, silent, SSE.
mod h3;
// `--http3-0rtt` against aioquic (accepted, rejected, off) and serve --http3.
mod h3_0rtt;

// OpenAI-style streams.
//
// `--openai` requests: discovery, the bytes sent, workloads, bad input.
mod openai;
// Every `--openai` body uses only fields of OpenAI's request schema.
mod openai_schema;
// Every golden stream shape served and measured on both engines.
mod shapes;
// Conversations and trace lines as requests: turns in order, with history.
mod conversations;
// aiperf's and guidellm's dataset files read as those tools read them.
mod peer_datasets;

// Reports and the other commands.
//
// Ctrl-C during `run`, `report`, `merge`, `--hgrm`, `--out`, `demo`,
// `sweep`, `--repeat`, help and usage errors.
mod commands;
// `--rps`/`--qps`, shell completions and man pages from the CLI definition.
mod habits;
// `merge`: the shards of one run merge to the single run exactly.
mod merge;
// Lossless reports: histograms another implementation decodes exactly.
mod report_lossless;
// The HTML report in headless Chromium, offline, checked against the JSON.
mod html;
// `--dashboard` in headless Chromium while a run goes.
mod dashboard;
// `simulate`: every figure exact, each derived by hand.
mod simulate;

// The embedded server.
//
// `serve`: the FIFO model, admission, replies, over plain TcpStreams.
mod serve;
// `serve --http2` against Python's h2 and core's client; mutated bytes.
mod serve_h2;
// `serve --http3` against aioquic and `run --http3`: the model over QUIC.
mod serve_h3;

// Prometheus remote write.
//
// The pusher against a scripted receiver: headers, body, retries, drops.
mod prom_push;
// A native histogram's quantile within the documented bound.
mod prom_quantile;
// `--prometheus-rw` against a real Prometheus.
mod prometheus;
// `run --prometheus-rw` while the run goes: the live pushes' series.
mod prom_live;

// The docs' and deploy recipes' examples, run for real.
//
// docs/requests.md: every example file equals its block and runs.
mod docs_requests;
// deploy/k8s/: the Indexed Job's manifests and every pod's command.
mod k8s_manifest;
// deploy/ssh/run.sh with stand-ins for ssh and scp.
mod ssh_recipe;
