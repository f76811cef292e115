//! metronome's HTTP/3 client connection, sans-IO, over `quinn-proto`:
//! one implementation of the protocol that every engine drives (the std
//! engine's threads, the io_uring engine's rings). No socket, no thread,
//! no clock read, no lock here: the engine passes the time in, feeds the
//! datagrams it receives, sends the ones it is given and fires the timers
//! it is asked for. The one exception, kept apart, is [`blocking`]: the
//! handshake driven over a socket the engine owns, before the clock.
//!
//! - [`config`]: [`Config`], how every connection of a run is opened (the
//!   run's rustls configuration with ALPN `h3`), and the wording of a
//!   failed handshake or a lost connection.
//! - [`client`]: [`H3Client`], one connection: requests out, responses in
//!   (core's frame reader and QPACK decoder into core's `StreamExchange`),
//!   timeouts, GOAWAY, connection errors closed with their code.
//! - [`control`]: the server's control and QPACK streams ([`Peer`]),
//!   without QUIC (unit-tested on bytes alone).
//! - `flight`: one request in flight.
//! - [`blocking`]: [`handshake`], a new connection's handshake over a
//!   connected UDP socket, blocking (both engines, before the clock).
//!
//! Allocation: once a connection is warm (its flights recycled) starting,
//! reading and ending a request allocates nothing here; `quinn-proto`
//! itself allocates per stream (its stream state, and a copy of each
//! request's bytes in its send buffer) and per packet it keeps for
//! retransmission. `docs/http3.md` has the whole picture.

pub mod blocking;
pub mod client;
pub mod config;
pub mod control;
mod flight;

pub use blocking::{fetch, handshake};
pub use client::{H3Client, Lost, Refused, Request, State, DATAGRAM};
pub use config::{describe, handshake_error, handshake_timeout, too_large, Config};
pub use control::{News, Peer, UniStream};
pub use flight::SECTION;
pub use metronome_core::flight::{End, FlightJob, How};
