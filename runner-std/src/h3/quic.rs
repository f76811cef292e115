//! The QUIC side of a connection: the client configuration from the run's
//! rustls one (ALPN `h3`), the UDP socket and `quinn-proto`'s endpoint and
//! connection ([`Quic`]), and the handshake with the control stream's
//! SETTINGS ([`open`]).

use super::*;

/// The QUIC client configuration for `tls`: its rustls configuration (the
/// same roots, `--cacert`, `--insecure`, client certificate) with ALPN
/// `h3`.
///
/// # Errors
/// The configuration cannot do QUIC (no TLS 1.3 suite).
fn quic_config(tls: &Tls) -> io::Result<ClientConfig> {
    let mut c = (*tls.config).clone();
    c.alpn_protocols = vec![b"h3".to_vec()];
    let q = QuicClientConfig::try_from(c).map_err(|e| {
        TlsFailure::error(
            HandshakeFailure::Protocol,
            format!("the TLS configuration cannot carry QUIC: {e}"),
        )
    })?;
    Ok(ClientConfig::new(Arc::new(q)))
}

/// The server name of `tls` as text (a DNS name or an IP address).
fn server_name(tls: &Tls) -> String {
    match &tls.server_name {
        rustls::pki_types::ServerName::DnsName(d) => d.as_ref().to_string(),
        rustls::pki_types::ServerName::IpAddress(ip) => std::net::IpAddr::from(*ip).to_string(),
        _ => "localhost".to_string(),
    }
}

/// One QUIC connection and its UDP socket (connected to the target).
pub(super) struct Quic {
    pub(super) sock: UdpSocket,
    pub(super) endpoint: Endpoint,
    pub(super) conn: Connection,
    pub(super) handle: ConnectionHandle,
    pub(super) remote: SocketAddr,
    pub(super) tx: Vec<u8>,
    /// Bytes sent and not yet counted in the run's traffic.
    pub(super) written: usize,
}

impl Quic {
    /// Sends every datagram the connection owes now; hands its endpoint
    /// events over.
    pub(super) fn flush(&mut self, now: Instant) -> io::Result<()> {
        loop {
            self.tx.clear();
            let Some(t) = self.conn.poll_transmit(now, 1, &mut self.tx) else {
                break;
            };
            match self.sock.send(&self.tx[..t.size]) {
                Ok(_) => self.written += t.size,
                // A datagram the kernel cannot take is a lost packet: QUIC
                // sends it again.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => return Err(e),
            }
        }
        while let Some(ev) = self.conn.poll_endpoint_events() {
            if let Some(ce) = self.endpoint.handle_event(self.handle, ev) {
                self.conn.handle_event(ce);
            }
        }
        Ok(())
    }

    /// A datagram from the server, received at `now`.
    pub(super) fn datagram(&mut self, now: Instant, data: &[u8]) {
        self.tx.clear();
        match self.endpoint.handle(
            now,
            self.remote,
            None,
            None,
            BytesMut::from(data),
            &mut self.tx,
        ) {
            Some(DatagramEvent::ConnectionEvent(h, ev)) if h == self.handle => {
                self.conn.handle_event(ev);
            }
            Some(DatagramEvent::Response(t)) => {
                let _ = self.sock.send(&self.tx[..t.size]);
            }
            _ => {}
        }
    }

    /// Fires the connection's timers due at `now`.
    pub(super) fn timers(&mut self, now: Instant) {
        if self.conn.poll_timeout().is_some_and(|t| t <= now) {
            self.conn.handle_timeout(now);
        }
    }

    /// How long to block for the next datagram: until the next timer, at
    /// most `slice`.
    pub(super) fn wait(&mut self, now: Instant, slice: Duration) -> Duration {
        let until = self
            .conn
            .poll_timeout()
            .map_or(slice, |t| t.saturating_duration_since(now).min(slice));
        until.max(Duration::from_micros(50))
    }
}

/// A connection through its QUIC handshake, its control stream opened.
pub(crate) struct Opening {
    pub(super) quic: Quic,
    pub(super) opened: Opened,
}

impl Opening {
    /// How it was opened.
    pub(crate) fn opened(&self) -> Opened {
        self.opened
    }
}

/// Opens an HTTP/3 connection to `addr`: the QUIC handshake (TLS 1.3,
/// ALPN `h3`) within `timeout`, then the client's control stream with its
/// SETTINGS (QPACK capacity 0).
///
/// # Errors
/// A refused port (ICMP unreachable) as `ConnectionRefused`; a failed or
/// timed-out handshake as a [`TlsFailure`] of its kind.
pub(crate) fn open(addr: SocketAddr, timeout: Duration, tls: &Tls) -> io::Result<Opening> {
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
    let mut endpoint = Endpoint::new(Arc::new(EndpointConfig::default()), None, true, None);
    let (handle, conn) = endpoint
        .connect(started, quic_config(tls)?, addr, &server_name(tls))
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let mut q = Quic {
        sock,
        endpoint,
        conn,
        handle,
        remote: addr,
        tx: Vec::with_capacity(DATAGRAM),
        written: 0,
    };
    let mut buf = vec![0u8; DATAGRAM];
    loop {
        let now = Instant::now();
        q.timers(now);
        while let Some(ev) = q.conn.poll() {
            match ev {
                Event::Connected => return connected(q, started),
                Event::ConnectionLost { reason } => return Err(handshake_error(&reason)),
                _ => {}
            }
        }
        q.flush(now)?;
        if now >= deadline {
            return Err(TlsFailure::error(
                HandshakeFailure::Timeout,
                format!(
                    "the QUIC handshake did not complete within {} ms (no HTTP/3 server on UDP {addr}?)",
                    timeout.as_millis()
                ),
            ));
        }
        let wait = q.wait(now, deadline.saturating_duration_since(now));
        q.sock.set_read_timeout(Some(wait))?;
        match q.sock.recv(&mut buf) {
            Ok(n) => q.datagram(Instant::now(), &buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The handshake is done: the control stream opens with the SETTINGS.
fn connected(mut q: Quic, started: Instant) -> io::Result<Opening> {
    let shaken_ns = started.elapsed().as_nanos() as u64;
    let id = q
        .conn
        .streams()
        .open(Dir::Uni)
        .ok_or_else(|| io::Error::other("the server allows no unidirectional stream"))?;
    let mut control = [0u8; 64];
    let n = encode_control_stream_start(SECTION as u64, &mut control)
        .ok_or_else(|| io::Error::other("SETTINGS do not fit"))?;
    q.conn
        .send_stream(id)
        .write(&control[..n])
        .map_err(|e| io::Error::other(e.to_string()))?;
    q.flush(Instant::now())?;
    Ok(Opening {
        quic: q,
        opened: Opened {
            connect_ns: shaken_ns,
            handshake_ns: Some(shaken_ns),
            resumed: false,
            agreed: Some((true, Some(b"h3"))),
        },
    })
}

/// A handshake that failed as the TLS ones are counted: a refused
/// certificate, or anything else in the protocol.
pub(super) fn handshake_error(reason: &ConnectionError) -> io::Error {
    let text = reason.to_string();
    let kind = if text.contains("certificate") || text.contains("Certificate") {
        HandshakeFailure::Certificate
    } else {
        HandshakeFailure::Protocol
    };
    if matches!(reason, ConnectionError::TimedOut) {
        return TlsFailure::error(
            HandshakeFailure::Timeout,
            "the QUIC handshake timed out (no HTTP/3 server on this UDP port?)",
        );
    }
    let hint = match kind {
        HandshakeFailure::Certificate => {
            ": the server's certificate was refused; pass it or its CA with --cacert FILE \
             (PEM), or skip the check with --insecure"
        }
        _ => "",
    };
    TlsFailure::error(kind, format!("the QUIC handshake failed: {text}{hint}"))
}
