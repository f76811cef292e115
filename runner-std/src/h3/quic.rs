//! A connection's socket and handshake: a UDP socket connected to the
//! target, and [`H3Client`]'s handshake driven over it within the connect
//! timeout ([`open`], by `metronome_quic::handshake`, as the io_uring
//! engine does).

use super::*;

/// A connection through its QUIC handshake (its control stream opened).
pub(crate) struct Opening {
    pub(super) h3: H3Client<Job>,
    pub(super) sock: UdpSocket,
    pub(super) opened: Opened,
    /// Handed over in its handshake (0-RTT): when the handshake started,
    /// its time recorded once it completes.
    pub(super) shaking: Option<Instant>,
}

impl Opening {
    /// How it was opened.
    pub(crate) fn opened(&self) -> Opened {
        self.opened
    }
}

/// Opens an HTTP/3 connection to the plan's target: the QUIC handshake
/// (TLS 1.3, ALPN `h3`) within `timeout`, then the client's control stream
/// with its SETTINGS. A connection that holds 0-RTT keys
/// (`--http3-0rtt` and a ticket from an earlier connection) is handed
/// over at once, its first flight sent: its requests go in 0-RTT while
/// the reader completes the handshake (no handshake time is recorded for
/// it here: the reader records it once the handshake completes).
///
/// # Errors
/// A refused port (ICMP unreachable) as `ConnectionRefused`; a failed or
/// timed-out handshake as a [`crate::tls::TlsFailure`] of its kind.
pub(crate) fn open(plan: &Plan<'_>, timeout: Duration, tls: &Tls) -> io::Result<Opening> {
    let addr = plan.addr;
    let max_streams = plan.wire.streams().map_or(0, |h| h.max_streams);
    let cfg = Config::new(tls, addr, plan.protocol, max_streams)?.with_checks(plan.checks);
    let local: SocketAddr = if addr.is_ipv4() {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = UdpSocket::bind(local)?;
    sock.connect(addr)?;
    let started = Instant::now();
    let (h3, shaken) = metronome_quic::handshake(&sock, &cfg, timeout, true)?;
    let shaken_ns = shaken.map(|d| d.as_nanos() as u64);
    Ok(Opening {
        h3,
        sock,
        opened: Opened {
            // Handed over in its handshake (0-RTT): the time to here.
            connect_ns: shaken_ns.unwrap_or_else(|| started.elapsed().as_nanos() as u64),
            handshake_ns: shaken_ns,
            resumed: false,
            agreed: Some((true, Some(b"h3"))),
        },
        shaking: shaken_ns.is_none().then_some(started),
    })
}
