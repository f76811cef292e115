//! TLS for the io_uring engine: the handshake of the connections pre-opened
//! before the clock starts, the classification of a failed handshake (also
//! used for the handshakes the event loop drives) and the client
//! connections are core's (`metronome_core::tls`). The event loop drives
//! rustls's buffered API with the ring's own buffers (see `worker`).

pub(crate) use metronome_core::tls::{classify, client, handshake, TlsFailure};
