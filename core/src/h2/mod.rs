//! HTTP/2 for the client side, sans-IO (RFC 9113, RFC 7541).
//!
//! - [`frame`]: the frame reader and writer, with every per-frame check.
//! - [`hpack`]: header compression: Huffman, the static table, a dynamic
//!   table in a fixed `N`-byte buffer, a decoder and a stateless encoder.
//! - [`conn`]: [`Connection`], the client connection: preface and
//!   SETTINGS, streams in a fixed slot array, both levels of flow control,
//!   PING, RST_STREAM and GOAWAY, events out.
//! - [`error`]: its errors: the server's [`Violation`]s, the connection
//!   error [`H2Error`] (with its GOAWAY code) and [`SendError`].
//! - [`stream`]: what a reset stream's or a dead connection's error code
//!   means for core's [`StreamExchange`](crate::stream::StreamExchange).
//! - [`flights`]: [`Flights`], the requests in flight on one connection
//!   and how each ends (answered, retried once, failed, timed out), for
//!   both engines.
//!
//! Nothing here allocates, reads a clock or touches a socket; memory per
//! connection is fixed by three const parameters (see [`Connection`]).
//! `docs/http2.md` says what is implemented and why it is hand-written.

pub mod conn;
pub mod error;
pub mod flights;
pub mod frame;
pub mod hpack;
pub mod request;
pub mod stream;

pub use conn::{Blocked, Config, Connection, Event, H2Error, SendError, Sent, Violation};
pub use flights::{Flights, Pushed, Step};
pub use frame::ErrorCode;
