//! Connection set-up as an engine measured it ([`Setup`]): connect and TLS
//! handshake times, resumptions, what each handshake agreed, HTTP/2
//! streams per connection, HTTP/3's 0-RTT ([`ZeroRtt`]), and the kinds of
//! a failed handshake ([`HandshakeFailure`]).

use std::boxed::Box;

use crate::histogram::Histogram;

/// Why a TLS handshake failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandshakeFailure {
    /// The server's certificate was refused (unknown issuer, expired, wrong
    /// name): fix the server, or trust its CA with `--cacert`.
    Certificate,
    /// Anything else in the protocol: no common version or cipher, an
    /// alert, a server that does not speak TLS on this port.
    Protocol,
    /// The handshake did not complete within the connect timeout.
    Timeout,
}

impl HandshakeFailure {
    /// Every kind, in report order.
    pub const ALL: [HandshakeFailure; 3] = [
        HandshakeFailure::Certificate,
        HandshakeFailure::Protocol,
        HandshakeFailure::Timeout,
    ];

    /// Position in [`Setup::handshake_failures`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The name in the report: `certificate`, `protocol`, `timeout`.
    pub fn name(self) -> &'static str {
        match self {
            HandshakeFailure::Certificate => "certificate",
            HandshakeFailure::Protocol => "protocol",
            HandshakeFailure::Timeout => "timeout",
        }
    }
}

/// Connection set-up as measured by an engine, over every connection it
/// opened (pre-opened ones included): TCP connect time (socket to
/// established) and TLS handshake time (established to handshake done), ns.
#[derive(Clone, Debug)]
pub struct Setup {
    /// TCP connect times, ns.
    pub connect: Box<Histogram>,
    /// TLS handshake times, ns (empty for plain HTTP).
    pub tls_handshake: Box<Histogram>,
    /// TLS handshakes that resumed an earlier session.
    pub resumed: u64,
    /// TLS handshakes that failed, by [`HandshakeFailure::index`].
    pub handshake_failures: [u64; 3],
    /// TLS handshakes completed, by the version agreed: `[TLS 1.2, TLS 1.3]`.
    pub tls_versions: [u64; 2],
    /// TLS handshakes completed, by the ALPN protocol the server chose:
    /// `[none, http/1.1, h2, h3]` ([`Setup::ALPN`]); h3 by QUIC.
    pub alpn: [u64; 4],
    /// HTTP/2 and HTTP/3: the most streams open at once on one connection.
    pub peak_streams: u32,
    /// HTTP/2 and HTTP/3: the smallest and largest stream limit the server
    /// advertised on a connection (HTTP/2's `SETTINGS_MAX_CONCURRENT_STREAMS`,
    /// HTTP/3's initial_max_streams_bidi; `None` until one did; an HTTP/2
    /// server that never sets it allows unlimited streams).
    pub server_max_streams: Option<(u32, u32)>,
    /// HTTP/3: what the connections did with 0-RTT (`--http3-0rtt`).
    pub zero_rtt: ZeroRtt,
}

/// HTTP/3 0-RTT over a run's QUIC connections (or one connection's: each
/// count then 0 or 1, `requests` and `resent` its requests), exact.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZeroRtt {
    /// Connections opened with a session ticket that allowed early data:
    /// they tried 0-RTT.
    pub attempted: u64,
    /// Of them, the server accepted the early data.
    pub accepted: u64,
    /// Of them, the server refused it (a full handshake, or a resumption
    /// without early data); their early requests were sent again.
    pub rejected: u64,
    /// Requests sent in 0-RTT (before the handshake completed), on
    /// accepted and rejected connections.
    pub requests: u64,
    /// Of them, sent again in 1-RTT after a rejection.
    pub resent: u64,
}

impl ZeroRtt {
    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &ZeroRtt) {
        self.attempted += other.attempted;
        self.accepted += other.accepted;
        self.rejected += other.rejected;
        self.requests += other.requests;
        self.resent += other.resent;
    }
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            connect: Box::new(Histogram::new()),
            tls_handshake: Box::new(Histogram::new()),
            resumed: 0,
            handshake_failures: [0; 3],
            tls_versions: [0; 2],
            alpn: [0; 4],
            peak_streams: 0,
            server_max_streams: None,
            zero_rtt: ZeroRtt::default(),
        }
    }
}

impl Setup {
    /// Records one connection: its connect time and, over TLS, its
    /// handshake time and whether it resumed a session.
    pub fn opened(&mut self, connect_ns: u64, handshake_ns: Option<u64>, resumed: bool) {
        self.connect.record(connect_ns);
        if let Some(h) = handshake_ns {
            self.tls_handshake.record(h);
        }
        self.resumed += u64::from(resumed);
    }

    /// Counts one failed handshake.
    pub fn failed(&mut self, kind: HandshakeFailure) {
        self.handshake_failures[kind.index()] += 1;
    }

    /// The names of [`Setup::alpn`]'s counts, in order (`""`: the server
    /// chose no protocol).
    pub const ALPN: [&'static str; 4] = ["", "http/1.1", "h2", "h3"];

    /// Counts one completed TLS handshake by what it agreed: TLS 1.3 (else
    /// 1.2) and the ALPN protocol chosen (`None`: none; one the client did
    /// not offer counts as none).
    ///
    /// ```
    /// let mut s = metronome_core::engine::Setup::default();
    /// s.negotiated(true, Some(b"h2"));
    /// s.negotiated(false, None);
    /// assert_eq!((s.tls_versions, s.alpn), ([1, 1], [1, 0, 1, 0]));
    /// ```
    pub fn negotiated(&mut self, tls13: bool, alpn: Option<&[u8]>) {
        self.tls_versions[usize::from(tls13)] += 1;
        let at = alpn
            .and_then(|a| {
                Self::ALPN
                    .iter()
                    .position(|n| !n.is_empty() && n.as_bytes() == a)
            })
            .unwrap_or(0);
        self.alpn[at] += 1;
    }

    /// Records an HTTP/2 or HTTP/3 connection's state after a stream
    /// started: the streams open on it and the server's stream limit
    /// (`None`: not sent, unlimited).
    ///
    /// ```
    /// let mut s = metronome_core::engine::Setup::default();
    /// s.streams(3, Some(100));
    /// s.streams(1, Some(8));
    /// assert_eq!((s.peak_streams, s.server_max_streams), (3, Some((8, 100))));
    /// ```
    pub fn streams(&mut self, open: usize, server_max: Option<u32>) {
        self.peak_streams = self
            .peak_streams
            .max(u32::try_from(open).unwrap_or(u32::MAX));
        if let Some(m) = server_max {
            self.server_max_streams = Some(match self.server_max_streams {
                Some((lo, hi)) => (lo.min(m), hi.max(m)),
                None => (m, m),
            });
        }
    }

    /// Adds another set-up's counts (exact).
    pub fn merge(&mut self, other: &Setup) {
        self.connect.merge(&other.connect);
        self.tls_handshake.merge(&other.tls_handshake);
        self.resumed += other.resumed;
        for (a, b) in self
            .handshake_failures
            .iter_mut()
            .zip(other.handshake_failures)
        {
            *a += b;
        }
        for (a, b) in self.tls_versions.iter_mut().zip(other.tls_versions) {
            *a += b;
        }
        for (a, b) in self.alpn.iter_mut().zip(other.alpn) {
            *a += b;
        }
        if let Some((lo, hi)) = other.server_max_streams {
            self.streams(0, Some(lo));
            self.streams(0, Some(hi));
        }
        self.peak_streams = self.peak_streams.max(other.peak_streams);
        self.zero_rtt.add(&other.zero_rtt);
    }
}
