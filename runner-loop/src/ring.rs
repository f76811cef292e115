//! How bytes move, as the event loop sees it: a ring of socket
//! operations per thread, started by the loop and reported back as
//! [`Completion`]s. The io_uring engine's ring is the kernel's own
//! (`metronome-uring`); the portable engine's (`metronome-std`) performs
//! the same operations when mio reports the socket ready. The worker
//! ([`crate::worker`]) is written once against this trait.
//!
//! The contract every implementation keeps (the worker relies on it):
//!
//! 1. **One operation of a kind per slot.** A slot has at most one recv,
//!    one send and one connect started and not yet reaped; its read buffer
//!    ([`Ring::buf`]) is not handed out while a recv is started, its send
//!    buffer ([`Ring::tx`]) not while a send is.
//! 2. **A completion is reported once, by [`Ring::reap`]**, and the slot's
//!    operation counts as pending ([`Ring::recv_pending`],
//!    [`Ring::send_pending`]) until it is reaped.
//! 3. **Closing a busy slot** ([`Ring::close`] returning false) cuts its
//!    operations short; their completions are not reported, a
//!    [`Completion::Closed`] is, once the last has ended. A slot is reused
//!    only after that.
//! 4. **Nothing allocates after [`Ring::new`]**: every buffer is sized there.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, UdpSocket};

/// The kernel's limit of segments in one GSO send (`UDP_MAX_SEGMENTS`).
pub const GSO_MAX_SEGMENTS: usize = 64;

/// One completion, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completion {
    /// A recv into the slot's buffer ended: bytes read (0 = end of file) or `-errno`.
    Recv {
        /// The slot.
        slot: usize,
        /// Bytes read, or `-errno`.
        res: i32,
    },
    /// A send ended: bytes sent or `-errno`.
    Send {
        /// The slot.
        slot: usize,
        /// Bytes sent, or `-errno`.
        res: i32,
    },
    /// A connect ended: 0 or `-errno`.
    Connect {
        /// The slot.
        slot: usize,
        /// 0, or `-errno`.
        res: i32,
    },
    /// The pacing timer fired (or was cut short).
    Timer,
    /// A slot being closed has nothing in flight any more; its socket is closed.
    Closed {
        /// The slot.
        slot: usize,
    },
}

/// What a UDP socket of the kernel can do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdpCaps {
    /// Sends may carry several datagrams (`UDP_SEGMENT`).
    pub gso: bool,
    /// Receives may carry several datagrams (`UDP_GRO`).
    pub gro: bool,
}

/// A UDP socket connected to `addr` (bound to any local port); a ring
/// switches GRO on, where it can, when it adopts it
/// ([`Ring::adopt_udp`]), so that a plain `recv` before (a handshake
/// before the clock) gets one datagram.
///
/// # Errors
/// The socket could not be created or connected.
pub fn connected_udp(addr: SocketAddr) -> io::Result<UdpSocket> {
    let local: SocketAddr = if addr.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = UdpSocket::bind(local)?;
    sock.connect(addr)?;
    Ok(sock)
}

/// One thread's socket operations and the memory they use (see the
/// module's contract). Slots are numbered `0..slots`.
pub trait Ring: Sized {
    /// A ring for `slots` connections of `buf_len`-byte read buffers and
    /// `tx_len`-byte send buffers, sending copies of `requests` to `addr`.
    /// Everything it will use is allocated here.
    ///
    /// # Errors
    /// The ring could not be created (refused by the system, out of memory).
    fn new(
        slots: usize,
        buf_len: usize,
        tx_len: usize,
        requests: &[&[u8]],
        addr: SocketAddr,
    ) -> io::Result<Self>;

    /// The slot's read buffer (no recv into it may be pending).
    fn buf(&mut self, slot: usize) -> &mut [u8];

    /// The slot's send buffer, to fill before [`Ring::send_tx`] or
    /// [`Ring::send_dgrams`] (no send from it may be pending).
    fn tx(&mut self, slot: usize) -> &mut [u8];

    /// Starts a send of `tx(slot)[from..to]`.
    ///
    /// # Errors
    /// The operation could not be queued.
    fn send_tx(&mut self, slot: usize, from: usize, to: usize) -> io::Result<()>;

    /// Completes a "recv" of the slot at once with 0 bytes (TLS: plaintext
    /// rustls still holds is delivered through it, as a recv would).
    ///
    /// # Errors
    /// The operation could not be queued.
    fn recv_nop(&mut self, slot: usize) -> io::Result<()>;

    /// Takes ownership of an already connected socket for `slot`.
    fn adopt(&mut self, slot: usize, stream: TcpStream);

    /// Opens a TCP socket (`TCP_NODELAY`) in `slot` and starts a connect
    /// to the target; its end is a [`Completion::Connect`].
    ///
    /// # Errors
    /// The socket could not be created (e.g. out of descriptors).
    fn connect(&mut self, slot: usize) -> io::Result<()>;

    /// True when a send from the slot is pending (started, not reaped).
    fn send_pending(&self, slot: usize) -> bool;

    /// True when a recv into the slot's buffer is pending (started, not reaped).
    fn recv_pending(&self, slot: usize) -> bool;

    /// Starts a recv into `buf(slot)[filled..]`.
    ///
    /// # Errors
    /// The operation could not be queued.
    fn recv(&mut self, slot: usize, filled: usize) -> io::Result<()>;

    /// Starts a send of `requests[request][offset..]`.
    ///
    /// # Errors
    /// The operation could not be queued.
    fn send(&mut self, slot: usize, request: usize, offset: usize) -> io::Result<()>;

    /// Cuts the slot's pending send short: its completion follows,
    /// `-ECANCELED` when it was cut, its own result when it had ended.
    ///
    /// # Errors
    /// The cancel could not be queued.
    fn cancel_send(&mut self, slot: usize) -> io::Result<()>;

    /// Arms the pacing timer to fire in `after_ns`, unless it is already
    /// armed. Returns whether it was armed now.
    ///
    /// # Errors
    /// The timer could not be armed.
    fn timer(&mut self, after_ns: u64) -> io::Result<bool>;

    /// Moves the armed pacing timer to fire in `after_ns` (from now)
    /// instead. Returns whether it was moved (false: none armed, or a move
    /// is already under way).
    ///
    /// # Errors
    /// The timer could not be moved.
    fn timer_sooner(&mut self, after_ns: u64) -> io::Result<bool>;

    /// Closes the slot's socket. True when it is closed now; false when
    /// operations are pending: they are cut short and a
    /// [`Completion::Closed`] follows.
    fn close(&mut self, slot: usize) -> bool;

    /// Starts what was queued, without waiting.
    ///
    /// # Errors
    /// The system refused the submission.
    fn submit(&mut self) -> io::Result<()>;

    /// Starts what was queued and sleeps until at least one completion is
    /// ready (the pacing timer's included).
    ///
    /// # Errors
    /// The system refused the wait.
    fn submit_and_wait(&mut self) -> io::Result<()>;

    /// True when a completion is ready to reap, without blocking.
    ///
    /// # Errors
    /// The system refused the check.
    fn completion_ready(&mut self) -> io::Result<bool>;

    /// Takes up to `out.len()` completions without blocking; returns how many.
    fn reap(&mut self, out: &mut [Completion]) -> usize;

    /// Takes ownership of a connected UDP socket (see [`connected_udp`])
    /// for `slot`; returns what the socket can do.
    fn adopt_udp(&mut self, slot: usize, sock: UdpSocket) -> UdpCaps;

    /// Starts a receive of one datagram (with GRO, of a run of them) into
    /// the slot's whole read buffer.
    ///
    /// # Errors
    /// The operation could not be queued.
    fn recv_dgram(&mut self, slot: usize) -> io::Result<()>;

    /// The size of each datagram the last completed recv of `slot` holds
    /// when GRO joined several; `None`: one datagram.
    fn gro_segment(&self, slot: usize) -> Option<usize>;

    /// Starts a send of `tx(slot)[from..to]`: one datagram, or with
    /// `segment` (GSO, only where [`UdpCaps::gso`]) datagrams of `segment`
    /// bytes each.
    ///
    /// # Errors
    /// The operation could not be queued.
    fn send_dgrams(
        &mut self,
        slot: usize,
        from: usize,
        to: usize,
        segment: Option<usize>,
    ) -> io::Result<()>;
}
