//! TLS shared by both engines (feature `tls`): the target's client side,
//! the blocking handshake of a connection opened before it is used (timed,
//! bounded by a deadline), and the classification of a failed handshake by
//! [`HandshakeFailure`] with one line saying why and what to change. The
//! engines move the ciphertext; rustls does the protocol.

use std::fmt;
use std::format;
use std::io;
use std::net::TcpStream;
use std::string::{String, ToString};
use std::sync::Arc;
use std::time::Instant;

use rustls::pki_types::ServerName;
use rustls::{AlertDescription, ClientConfig, ClientConnection, HandshakeKind};

use crate::engine::HandshakeFailure;

/// The TLS side of a target: the client configuration (trust, ALPN, the
/// session cache every connection shares) and the server name (SNI, and
/// the name the certificate must carry).
#[derive(Clone, Debug)]
pub struct Tls {
    /// The client configuration, shared by every connection of the run.
    pub config: Arc<ClientConfig>,
    /// The server name.
    pub server_name: ServerName<'static>,
}

/// A failed handshake: its kind and one line saying why and what to change.
#[derive(Debug)]
pub struct TlsFailure {
    /// What kind of failure it was.
    pub kind: HandshakeFailure,
    /// One line: why, and what to change.
    pub message: String,
}

impl fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TlsFailure {}

impl TlsFailure {
    /// An I/O error carrying a failure of `kind`.
    pub fn error(kind: HandshakeFailure, message: impl Into<String>) -> io::Error {
        io::Error::other(TlsFailure {
            kind,
            message: message.into(),
        })
    }

    /// The failure inside an I/O error, when it is one.
    pub fn of(e: &io::Error) -> Option<&TlsFailure> {
        e.get_ref()
            .and_then(|inner| inner.downcast_ref::<TlsFailure>())
    }
}

/// Classifies a handshake error; `first` holds the first bytes the server
/// sent (a plain HTTP server answers with `HTTP/`).
pub fn classify(e: &rustls::Error, first: &[u8]) -> io::Error {
    use rustls::Error as E;
    if first.starts_with(b"HTTP/") {
        return TlsFailure::error(
            HandshakeFailure::Protocol,
            "the server answered in plain HTTP, not TLS: use http:// for this port",
        );
    }
    let kind = match e {
        E::InvalidCertificate(_)
        | E::NoCertificatesPresented
        | E::InvalidCertRevocationList(_)
        | E::AlertReceived(
            AlertDescription::BadCertificate
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateUnknown
            | AlertDescription::CertificateExpired,
        ) => HandshakeFailure::Certificate,
        _ => HandshakeFailure::Protocol,
    };
    let hint = match kind {
        HandshakeFailure::Certificate => {
            " (trust the server's CA with --cacert FILE, or skip the check with --insecure)"
        }
        _ => "",
    };
    TlsFailure::error(kind, format!("{e}{hint}"))
}

/// Runs the client handshake on `stream` until done or `deadline`.
/// Returns whether the session was resumed.
///
/// # Errors
/// A [`TlsFailure`] inside the I/O error for a refused certificate, a
/// protocol failure, a close or a timeout; other I/O errors as they are.
pub fn handshake(
    conn: &mut ClientConnection,
    stream: &TcpStream,
    deadline: Instant,
) -> io::Result<bool> {
    shake(conn, stream, deadline).map_err(|e| {
        if TlsFailure::of(&e).is_some() {
            e
        } else {
            // A reset or a close under the handshake: the server does not
            // speak TLS here, or dropped the connection.
            TlsFailure::error(
                HandshakeFailure::Protocol,
                format!("the connection failed during the TLS handshake: {e}"),
            )
        }
    })
}

fn shake(
    conn: &mut ClientConnection,
    mut stream: &TcpStream,
    deadline: Instant,
) -> io::Result<bool> {
    let mut first = [0u8; 5];
    let mut first_len = 0;
    let timeout = || {
        TlsFailure::error(
            HandshakeFailure::Timeout,
            "the TLS handshake did not complete within the connect timeout",
        )
    };
    while conn.is_handshaking() {
        while conn.wants_write() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(timeout());
            }
            stream.set_write_timeout(Some(left))?;
            match conn.write_tls(&mut stream) {
                Ok(_) => {}
                Err(e) if is_timeout(&e) => return Err(timeout()),
                Err(e) => return Err(e),
            }
        }
        if !conn.is_handshaking() {
            break;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timeout());
        }
        stream.set_read_timeout(Some(left))?;
        if first_len == 0 {
            // What the server says first tells a plain HTTP server apart.
            match stream.peek(&mut first) {
                Ok(n) => first_len = n,
                Err(e) if is_timeout(&e) => return Err(timeout()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        match conn.read_tls(&mut stream) {
            Ok(0) => {
                return Err(TlsFailure::error(
                    HandshakeFailure::Protocol,
                    "the server closed the connection during the TLS handshake (does this port speak TLS?)",
                ))
            }
            Ok(_) => {}
            Err(e) if is_timeout(&e) => return Err(timeout()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        if let Err(e) = conn.process_new_packets() {
            // Send the alert that says why, best effort.
            let _ = conn.write_tls(&mut stream);
            return Err(classify(&e, &first[..first_len]));
        }
    }
    while conn.wants_write() {
        conn.write_tls(&mut stream)?;
    }
    stream.set_read_timeout(None)?;
    stream.set_write_timeout(None)?;
    Ok(conn.handshake_kind() == Some(HandshakeKind::Resumed))
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// A new client connection for `tls`, its plaintext buffer unbounded (a
/// request is handed over whole).
pub fn client(tls: &Tls) -> io::Result<ClientConnection> {
    let mut conn = ClientConnection::new(Arc::clone(&tls.config), tls.server_name.clone())
        .map_err(|e| TlsFailure::error(HandshakeFailure::Protocol, e.to_string()))?;
    conn.set_buffer_limit(None);
    Ok(conn)
}
