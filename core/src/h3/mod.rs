//! HTTP/3 for the client side (and the server's reading of requests), sans-IO: the part above QUIC (RFC 9114,
//! RFC 9204). QUIC itself (streams, flow control, TLS) is not here.
//!
//! - [`varint`]: QUIC variable-length integers (RFC 9000 section 16),
//!   whole and incremental.
//! - [`frame`]: [`FrameReader`], the incremental frame reader of one
//!   request or control stream (a frame header split across reads, DATA
//!   handed out as slices of the input, unknown and reserved frame types
//!   skipped, every frame a server may not send refused with its code);
//!   the frame writers; unidirectional stream types ([`StreamType`],
//!   [`PeerStreams`]).
//! - [`qpack`]: field compression with the static table only (the client
//!   advertises a dynamic table capacity of 0): the request encoder, the
//!   response decoder, and the reader of the server's encoder stream.
//! - [`head`]: the server's decoding of a request's field section and
//!   trailers, with RFC 9114's rules for requests (section 4.3.1).
//! - [`response`]: the order of a response stream's frames (heads with
//!   `:status`, DATA, trailers without).
//! - [`error`]: [`ErrorCode`] (the `H3_*` and `QPACK_*` codes) and
//!   [`H3Error`].
//!
//! Nothing here allocates, reads a clock or touches a socket. `docs/http3.md`
//! says what is implemented, the golden vectors' provenance, and what is
//! not built yet.

pub mod error;
pub mod frame;
pub mod head;
pub mod qpack;
pub mod request;
pub mod response;
pub mod varint;

pub use error::{ErrorCode, H3Error};
pub use frame::{Frame, FrameReader, PeerStreams, Role, Settings, StreamType};
