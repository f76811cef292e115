//! A connection's socket and handshake: a UDP socket connected to the
//! target, and [`H3Client`]'s handshake driven over it within the connect
//! timeout ([`open`]).

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
    let max_streams = plan.http2.map_or(0, |h| h.max_streams);
    let cfg = Config::new(tls, addr, plan.protocol, max_streams)?;
    let timeout = timeout.max(Duration::from_millis(1));
    let started = Instant::now();
    let deadline = started + timeout;
    let local: SocketAddr = if addr.is_ipv4() {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = UdpSocket::bind(local)?;
    sock.connect(addr)?;
    let mut h3 = H3Client::connect(&cfg, started)?;
    let mut tx = Vec::with_capacity(DATAGRAM);
    let mut buf = vec![0u8; DATAGRAM];
    loop {
        let now = Instant::now();
        h3.handle_timeout(now, 0);
        while let Some((len, segment)) = h3.poll_transmit(now, 1, &mut tx) {
            for d in tx[..len].chunks(segment.max(1)) {
                match sock.send(d) {
                    Ok(_) => {}
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                        ) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        match h3.state() {
            State::Handshaking if h3.free() > 0 => {
                return Ok(Opening {
                    h3,
                    sock,
                    opened: Opened {
                        connect_ns: started.elapsed().as_nanos() as u64,
                        handshake_ns: None,
                        resumed: false,
                        agreed: Some((true, Some(b"h3"))),
                    },
                    shaking: Some(started),
                });
            }
            State::Handshaking => {}
            State::Closed => {
                return Err(h3
                    .handshake_error()
                    .unwrap_or_else(|| io::Error::other("the QUIC connection closed")));
            }
            State::Live | State::GoingAway => {
                let shaken_ns = started.elapsed().as_nanos() as u64;
                return Ok(Opening {
                    h3,
                    sock,
                    opened: Opened {
                        connect_ns: shaken_ns,
                        handshake_ns: Some(shaken_ns),
                        resumed: false,
                        agreed: Some((true, Some(b"h3"))),
                    },
                    shaking: None,
                });
            }
        }
        if now >= deadline {
            return Err(metronome_quic::handshake_timeout(addr, timeout.as_millis()));
        }
        let until = h3.poll_timeout().unwrap_or(deadline).min(deadline);
        let wait = until
            .saturating_duration_since(now)
            .max(Duration::from_micros(50));
        sock.set_read_timeout(Some(wait))?;
        match sock.recv(&mut buf) {
            Ok(n) => h3.datagram(Instant::now(), 0, &buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
}
