//! metronome-core: the sans-IO heart of metronome.
//!
//! **No clock, no sockets, no allocation, no unsafe.** Time enters as
//! nanosecond values, bytes enter as slices, results leave as small `Copy`
//! values. Engines (io_uring, std) own the clock and the sockets and feed this
//! crate with facts; everything that can be decided without I/O is decided
//! here and tested with exact numbers.
//!
//! The modules, bottom-up: each uses only those listed before it.
//!
//! - [`rng`]: PCG32 (O'Neill's pcg32, XSH-RR 64/32), SplitMix64 seeding.
//! - [`histogram`]: a fixed 7424-counter log-linear histogram, HdrHistogram V2 encoding
//!   (plain always; zlib-compressed with the `zlib` feature).
//! - [`head`]: what a head's fields mean, once for HTTP/1.1, HTTP/2 and HTTP/3: the
//!   client's reading of a response head ([`head::ResponseFields`]: an event stream,
//!   `grpc-status`, the content length) and the server's rule for a request head's
//!   fields ([`head::RequestFields`]).
//! - [`http`]: an incremental HTTP/1.1 response parser.
//! - [`sse`]: an OpenAI-style Server-Sent Events decoder.
//! - [`h2`]: a sans-IO HTTP/2 client: frames, HPACK, the connection state machine
//!   (`frame`, `hpack`, `conn`, `error`, `request` use nothing outside `h2/` but
//!   [`head`]); its `stream.rs` and `flights.rs` sit higher, after [`flight`].
//! - [`h3`]: HTTP/3 above QUIC, sans-IO: QUIC varints, frames and stream types
//!   (`varint`, `frame`, `error`), QPACK with the static table only (`qpack`, which
//!   reuses [`h2`]'s HPACK Huffman code and integer writer); QUIC itself is not here.
//! - [`pace`]: how an engine waits for each send: the pacing decision, the
//!   busy-wait slice and its tuner, lingering for replies, what counts as spin.
//! - [`mix`]: [`mix::Mix`], which request each arrival sends (in turn, or weighted by the seed).
//! - [`pool`]: [`pool::Pool`], admission of a due request and growth of the connection pool.
//! - [`schedule`]: intended send offsets (constant, Poisson, burst, gamma; steady, through
//!   stages and ramps, or replayed from a trace), sharded exactly; one file per arrival
//!   process under `schedule/`.
//! - [`turns`]: conversations, each later turn due when the previous answer ended plus a
//!   think time ([`turns::Turns::after`]), and the sessions' counts.
//! - [`check`]: checks on the answer (status, a header, a body substring or
//!   regular expression), fed the body as it arrives, never copied.
//! - [`response`]: [`response::Reader`], HTTP + SSE to measurement events.
//! - [`measure`]: the per-thread [`measure::Recorder`] (`measure/mod.rs`), error kinds
//!   (`kind.rs`), stream timing (`stream.rs`), the peers' metric definitions
//!   (`peers.rs`), intervals and stages (`interval.rs`), and the SLO.
//! - [`record`]: [`record::RequestRecord`], one measured request as it ended, and the
//!   [`record::RequestSink`] the ledger hands it to (`--out-requests`).
//! - [`plan`]: what an engine needs to run, and its validation.
//! - [`due`]: [`due::DueLoop`], the due loop every engine thread drives: what to pace
//!   for, which request is due next and intended when, and when a backlog looks at a stop.
//! - [`exchange`]: [`exchange::Exchange`], one request/response on one connection, for the
//!   engines, and [`exchange::Finish`], how it ended.
//! - [`stream`]: [`stream::StreamExchange`], one HTTP/2 or HTTP/3 stream's response to
//!   a [`exchange::Finish`].
//! - [`flight`]: the stream vocabulary HTTP/2 and HTTP/3 share: [`flight::FlightJob`],
//!   [`flight::How`], [`flight::End`], and the refused-stream rule [`flight::How::refused`].
//! - `h2/stream.rs` and `h2/flights.rs`: HTTP/2's reading of a reset and a connection's
//!   end, and [`h2::Flights`], the requests in flight on one HTTP/2 connection.
//! - [`ledger`]: [`ledger::Ledger`], the bookkeeping rules that turn request facts into a recorder.
//! - `engine` (feature `std`, off by default): core's std side, fenced in one
//!   place: what both engines share that needs std (the types they are
//!   steered by, `engine/control.rs`, and return, `engine/mod.rs` and
//!   `engine/setup.rs`; the procedures before the clock, the pre-open rule
//!   `engine/pre_open.rs` and the warm start `engine/warm.rs`; storage
//!   reserved before the clock, `engine/reserved.rs` and `engine/series.rs`),
//!   and `engine::tls` (feature `tls`, implies `std`, brings rustls): the
//!   TLS both engines share. With default features this
//!   crate stays `no_std` with no allocator, for anyone embedding the histogram.
//! - feature `zlib` (implies `std`, brings flate2): HdrHistogram's
//!   zlib-compressed V2 encoding (`Histogram::encode_v2_compressed`,
//!   `histogram::decode_v2_compressed`), the form of `.hlog` files, written
//!   once here for the CLI and the C API. The plain V2 encoding needs no
//!   feature and never allocates.
//!
//! ```
//! use metronome_core::rng::Pcg32;
//! assert_eq!(Pcg32::new(42, 54).next_u32(), 0xa15c02b7);
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(any(test, feature = "std"))]
extern crate std;

pub mod check;
pub mod due;
#[cfg(feature = "std")]
pub mod engine;
pub mod exchange;
pub mod flight;
pub mod h2;
pub mod h3;
pub mod head;
pub mod histogram;
pub mod http;
pub mod ledger;
pub mod measure;
pub mod mix;
pub mod pace;
pub mod plan;
pub mod pool;
pub mod record;
pub mod response;
pub mod rng;
pub mod schedule;
pub mod sse;
pub mod stream;
pub mod turns;
