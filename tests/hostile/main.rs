//! Hostile servers: raw TCP servers on loopback, scripted per connection,
//! that do everything a real server (or a wrong one) may do to a client,
//! against the real binary on every engine. The expected outcome of each
//! case comes from docs/report.md ("Error kinds", the connection-lifecycle
//! paragraph, "Accounting"); every report also passes `assert_accounting`.
//!
//! Each server binds `127.0.0.1:0` and runs a script per connection
//! (`script`); each case runs the binary against one (`case`). Runs are
//! short and start without warm-up (see `case::run`).

#[path = "../common/mod.rs"]
mod common;

// The scripted raw-TCP server: a script per connection, what it saw.
mod script;
// Running a case: the binary against a fresh server, the run's report,
// the short run arguments most cases use.
mod case;

// Connection lifecycle: closes, half-closes, 408s, resets.
mod lifecycle;
// Framing that is unusual but valid.
mod framing;
// Bytes no request asked for.
mod unsolicited;
// Broken responses: one kind (and cause) per failed request.
mod broken;
// Servers that do not answer: timeouts, and the run still ends.
mod silent;
// A 1 GiB body read in bounded memory.
mod huge;
// OpenAI-style streams.
mod openai;
// The same hostile servers over TLS.
mod tls;
// The scenarios that apply to HTTP/2 (h2c).
mod h2;
// The warm start against servers that break it.
mod warm;
// The hostile scenarios over HTTP/3 (aioquic's QUIC, hand-built HTTP/3).
mod h3;
// The golden table of response heads, over HTTP/1.1, HTTP/2 and HTTP/3.
mod heads;
#[path = "../../core/tests/data/heads.rs"]
mod heads_table;
