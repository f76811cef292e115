//! What a connection is opened with ([`Config`]: the QUIC client
//! configuration made once per run from its rustls one, ALPN `h3`), and
//! how a connection's end is worded: a failed handshake as the TLS ones
//! are counted ([`handshake_error`]), a lost connection as one line for
//! the report's warnings ([`describe`]).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use quinn_proto::crypto::rustls::QuicClientConfig;
use quinn_proto::{ClientConfig, ConnectionError, TransportConfig, VarInt};

use metronome_core::engine::tls::{Tls, TlsFailure};
use metronome_core::engine::HandshakeFailure;
use metronome_core::plan::{Protocol, MAX_STREAMS};

/// Unidirectional streams the server may open at once: its control and
/// QPACK streams, and a few reserved ones (grease) to discard.
const PEER_UNI_STREAMS: u32 = 16;

/// How every connection of a run is opened.
#[derive(Clone)]
pub struct Config {
    pub(crate) quic: ClientConfig,
    pub(crate) server_name: String,
    pub(crate) remote: SocketAddr,
    pub(crate) protocol: Protocol,
    pub(crate) cap: usize,
    /// The plan's checks on the answers ([`Config::with_checks`]).
    pub(crate) checks: &'static [metronome_core::check::Check],
}

impl Config {
    /// Connections to `remote` with `tls`'s rustls configuration (the same
    /// roots, `--cacert`, `--insecure`, client certificate) and ALPN `h3`;
    /// `protocol` reads the responses (plain, SSE, gRPC); at most
    /// `max_streams` requests at once per connection (0: 100, the most any
    /// plan asks). The server may open no bidirectional stream (HTTP/3
    /// gives it none).
    ///
    /// Session resumption is `tls`'s: its rustls resumption store (shared
    /// by every clone of the configuration, so by all of the run's
    /// connections) keeps the server's tickets, and a later connection
    /// resumes with one. 0-RTT is tried only when `tls` has
    /// `enable_early_data` (`run --http3-0rtt`); rustls' default is off.
    ///
    /// # Errors
    /// The TLS configuration cannot carry QUIC (no TLS 1.3 suite): a
    /// [`TlsFailure`] of kind protocol.
    pub fn new(
        tls: &Tls,
        remote: SocketAddr,
        protocol: Protocol,
        max_streams: u32,
    ) -> io::Result<Config> {
        let mut c = (*tls.config).clone();
        c.alpn_protocols = vec![b"h3".to_vec()];
        let q = QuicClientConfig::try_from(c).map_err(|e| {
            TlsFailure::error(
                HandshakeFailure::Protocol,
                format!("the TLS configuration cannot carry QUIC: {e}"),
            )
        })?;
        let mut transport = TransportConfig::default();
        transport
            .max_concurrent_bidi_streams(VarInt::from_u32(0))
            .max_concurrent_uni_streams(VarInt::from_u32(PEER_UNI_STREAMS));
        let mut quic = ClientConfig::new(Arc::new(q));
        quic.transport_config(Arc::new(transport));
        let cap = match max_streams {
            0 => MAX_STREAMS,
            n => n.min(MAX_STREAMS),
        } as usize;
        Ok(Config {
            quic,
            server_name: server_name(tls),
            remote,
            protocol,
            cap,
            checks: &[],
        })
    }

    /// The checks on each request's answer (core's `Plan::checks`: request
    /// `i`'s by `Plan::check_of(i)`), fed the response's fields and DATA
    /// as they arrive.
    #[must_use]
    pub fn with_checks(mut self, checks: &'static [metronome_core::check::Check]) -> Config {
        self.checks = checks;
        self
    }

    /// The server's address.
    pub fn remote(&self) -> SocketAddr {
        self.remote
    }

    /// Requests at once per connection at most (before the server's limit).
    pub fn cap(&self) -> usize {
        self.cap
    }
}

/// The server name of `tls` as text (a DNS name or an IP address).
fn server_name(tls: &Tls) -> String {
    match &tls.server_name {
        rustls::pki_types::ServerName::DnsName(d) => d.as_ref().to_string(),
        rustls::pki_types::ServerName::IpAddress(ip) => std::net::IpAddr::from(*ip).to_string(),
        _ => "localhost".to_string(),
    }
}

/// A handshake that failed, as the TLS ones are counted: a refused
/// certificate, a timeout, or anything else in the protocol (a
/// [`TlsFailure`] inside the error).
pub fn handshake_error(reason: &ConnectionError) -> io::Error {
    if matches!(reason, ConnectionError::TimedOut) {
        return TlsFailure::error(
            HandshakeFailure::Timeout,
            "the QUIC handshake timed out (no HTTP/3 server on this UDP port?)",
        );
    }
    let text = reason.to_string();
    let kind = if text.contains("certificate") || text.contains("Certificate") {
        HandshakeFailure::Certificate
    } else {
        HandshakeFailure::Protocol
    };
    let hint = match kind {
        HandshakeFailure::Certificate => {
            ": the server's certificate was refused; pass it or its CA with --cacert FILE \
             (PEM), or skip the check with --insecure"
        }
        _ => "",
    };
    TlsFailure::error(kind, format!("the QUIC handshake failed: {text}{hint}"))
}

/// A handshake that did not complete within `timeout_ms` (the engine
/// keeps the time).
pub fn handshake_timeout(remote: SocketAddr, timeout_ms: u128) -> io::Error {
    TlsFailure::error(
        HandshakeFailure::Timeout,
        format!(
            "the QUIC handshake did not complete within {timeout_ms} ms (no HTTP/3 server on UDP {remote}?)"
        ),
    )
}

/// The warning for a request whose field section is larger than the
/// server's SETTINGS_MAX_FIELD_SECTION_SIZE `limit`
/// ([`Refused::TooLarge`](crate::Refused::TooLarge)): every engine counts
/// it `unsent` (reason `too_large`: no connection to this server can
/// take it) with this line.
pub fn too_large(limit: u64) -> String {
    format!(
        "HTTP/3: a request's field section is larger than the server's \
         SETTINGS_MAX_FIELD_SECTION_SIZE ({limit} bytes): not sent"
    )
}

/// The connection's end, in one line for the report's warnings.
pub fn describe(reason: &ConnectionError) -> String {
    match reason {
        ConnectionError::ApplicationClosed(c) => format!(
            "HTTP/3: the server closed the connection with code {:#x}{}",
            c.error_code.into_inner(),
            reason_text(&c.reason)
        ),
        ConnectionError::ConnectionClosed(c) => format!(
            "HTTP/3: the server closed the connection with QUIC code {}{}",
            c.error_code,
            reason_text(&c.reason)
        ),
        ConnectionError::TimedOut => "HTTP/3: a connection reached its idle timeout".into(),
        ConnectionError::Reset => "HTTP/3: the server reset a connection (stateless reset)".into(),
        other => format!("HTTP/3: a connection ended: {other}"),
    }
}

fn reason_text(reason: &[u8]) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(" ({})", String::from_utf8_lossy(reason))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quinn_proto::{ApplicationClose, TransportError, TransportErrorCode};

    #[test]
    fn a_close_is_worded_with_its_code() {
        let close = ConnectionError::ApplicationClosed(ApplicationClose {
            error_code: VarInt::from_u32(0x102),
            reason: bytes::Bytes::from_static(b"close mode"),
        });
        assert_eq!(
            describe(&close),
            "HTTP/3: the server closed the connection with code 0x102 (close mode)"
        );
        let bare = ConnectionError::ApplicationClosed(ApplicationClose {
            error_code: VarInt::from_u32(0x100),
            reason: bytes::Bytes::new(),
        });
        assert_eq!(
            describe(&bare),
            "HTTP/3: the server closed the connection with code 0x100"
        );
        assert_eq!(
            describe(&ConnectionError::TimedOut),
            "HTTP/3: a connection reached its idle timeout"
        );
    }

    #[test]
    fn handshake_failures_are_counted_by_kind() {
        let kind = |e: &ConnectionError| TlsFailure::of(&handshake_error(e)).map(|f| f.kind);
        assert_eq!(
            kind(&ConnectionError::TimedOut),
            Some(HandshakeFailure::Timeout)
        );
        let cert = ConnectionError::TransportError(TransportError {
            code: TransportErrorCode::crypto(42),
            frame: None,
            reason: "invalid peer certificate: UnknownIssuer".into(),
        });
        assert_eq!(kind(&cert), Some(HandshakeFailure::Certificate));
        let alpn = ConnectionError::TransportError(TransportError {
            code: TransportErrorCode::crypto(120),
            frame: None,
            reason: "peer doesn't support any known protocol".into(),
        });
        assert_eq!(kind(&alpn), Some(HandshakeFailure::Protocol));
    }
}
