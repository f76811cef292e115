//! What the set-up ([`crate::threads`]) hands each engine thread, and what
//! the thread hands back.

use std::net::TcpStream;

use metronome_core::engine::RunOutput;
use metronome_core::schedule::Shard;
use rustls::ClientConnection;

use super::{Greeted, H3Opened};

/// A pre-opened connection: its socket, and its TLS session on https.
pub(crate) type Stream = (TcpStream, Option<Box<ClientConnection>>);

/// One thread's share of the plan.
pub(crate) struct Share {
    pub(crate) thread: usize,
    pub(crate) cpu: Option<usize>,
    pub(crate) shard: Shard,
    pub(crate) threads: usize,
    /// Pre-opened connections, with their TLS session on https and, for
    /// HTTP/2, their state after the SETTINGS exchange.
    pub(crate) streams: Vec<(Stream, Option<Greeted>)>,
    /// HTTP/3: how connections are opened, and those opened before the
    /// clock (their handshake done).
    pub(crate) h3: Option<metronome_quic::Config>,
    pub(crate) quic: Vec<H3Opened>,
    pub(crate) slots: usize,
    pub(crate) max_in_flight: usize,
    /// Closed model: the first global worker index of this thread.
    pub(crate) worker_base: u64,
    /// The median and the fastest service time of the warm-up requests,
    /// ns, if any were answered.
    pub(crate) warm_service_ns: Option<(u64, u64)>,
    /// The warm start found a server that writes on accept
    /// ([`Warm::writes_first`](metronome_core::engine::Warm::writes_first)): every connection distrusts its first
    /// response.
    pub(crate) writes_first: bool,
}

/// What a thread returns: its output, and when it saw the stop (if it did).
pub(crate) struct ThreadOut {
    pub(crate) out: RunOutput,
    pub(crate) stopped_at: Option<u64>,
}
