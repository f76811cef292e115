//! Golden tests of core: exact outputs against independent oracles (Python's
//! h2, hpack and hdrh, aioquic, NumPy, the openai package's types, aiperf's
//! and guidellm's code), each module one format or rule. One binary, a
//! module per concept, as `tests/e2e/main.rs` is laid out.

#[path = "../h2_drive/mod.rs"]
mod h2_drive;

// aiperf's (0.13.0) per-request definitions, `Peers::aiperf_*` (and the
// shared `guidellm_ttft`/`guidellm_tokens`), on hand-made timings.
mod aiperf;
// The HTTP/2 client connection against hand-built server bytes.
mod h2;
// Cross-checks against implementations nobody here wrote.
mod h2_python;
// Cross-checks of core's HTTP/3 framing and QPACK against implementations
// nobody here wrote.
mod h3;
// The golden table of a response head's fields (core/tests/data/heads.rs,
// shared with tests/hostile/heads.rs) against `head::ResponseFields`.
mod head;
#[path = "../data/heads.rs"]
mod heads;
// Golden tests for `metronome_core::histogram`.
mod histogram;
// RFC 7541 Appendix C, every example.
mod hpack;
// Golden tests for `metronome_core::http::ResponseParser`.
mod http;
// Golden tests for `metronome_core::measure`.
mod measure;
// `Recorder::output_len`.
mod output_len;
// Golden vectors for `metronome_core::rng`, cross-checked against
// `rand_pcg::Pcg32` (the oracle) and independent re-derivations of every
// formula in DESIGN.md section 2 "rng".
mod rng;
// Golden and statistical tests for `metronome_core::schedule`.
mod schedule;
// The golden streams of `tests/streams/` (built with the `openai` package's
// own types, see `tests/streams/make.py`) fed through `Exchange` on a
// virtual clock, and every metric checked against the tables of
// docs/metrics.md ("Reproduced on recorded streams").
mod shapes;
// Golden tests for `metronome_core::sse::SseDecoder` and for
// `metronome_core::response::Reader` on event streams.
mod sse;
// Golden tests for the workload schedules.
mod workloads;
