//! TLS shared by both engines (feature `tls`): the target's client side,
//! the blocking handshake of a connection opened before it is used (timed,
//! bounded by a deadline), and the classification of a failed handshake by
//! [`HandshakeFailure`] with one line saying why and what to change (in
//! words: no library's debug text reaches the user). The engines move the
//! ciphertext; rustls does the protocol.

use std::fmt;
use std::format;
use std::io;
use std::net::TcpStream;
use std::string::{String, ToString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::client::ResolvesClientCert;
use rustls::pki_types::ServerName;
use rustls::sign::CertifiedKey;
use rustls::{
    AlertDescription, CertificateError, ClientConfig, ClientConnection, HandshakeKind,
    PeerIncompatible, ProtocolVersion, SignatureScheme,
};

use crate::engine::HandshakeFailure;

/// After the handshake of an `--http2` connection: `Ok` when the server
/// chose `h2` by ALPN, else the error that says what it chose and what to
/// change.
///
/// # Errors
/// `InvalidData` naming the protocol the server chose, or none.
pub fn expect_h2(conn: &ClientConnection) -> io::Result<()> {
    match conn.alpn_protocol() {
        Some(b"h2") => Ok(()),
        other => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "--http2: the server chose {} in the TLS handshake (ALPN), not h2: it does not \
                 speak HTTP/2 over TLS here; drop --http2",
                other.map_or("no protocol".into(), |p| String::from_utf8_lossy(p)
                    .into_owned())
            ),
        )),
    }
}

/// What a completed handshake agreed: TLS 1.3 (else 1.2), and the ALPN
/// protocol the server chose as one of [`Setup::ALPN`](crate::engine::Setup::ALPN)'s
/// names (`None`: none, or one this client never offers), for
/// [`Setup::negotiated`](crate::engine::Setup::negotiated).
pub fn agreed(conn: &ClientConnection) -> (bool, Option<&'static [u8]>) {
    let tls13 = conn.protocol_version() == Some(ProtocolVersion::TLSv1_3);
    let alpn = conn.alpn_protocol().and_then(|a| {
        crate::engine::Setup::ALPN
            .iter()
            .find(|n| !n.is_empty() && n.as_bytes() == a)
            .map(|n| n.as_bytes())
    });
    (tls13, alpn)
}

/// The TLS side of a target: the client configuration (trust, ALPN, the
/// session cache every connection shares) and the server name (SNI, and
/// the name the certificate must carry).
#[derive(Clone, Debug)]
pub struct Tls {
    /// The client configuration, shared by every connection of the run.
    pub config: Arc<ClientConfig>,
    /// The server name.
    pub server_name: ServerName<'static>,
    /// The client certificate (`--cert/--key`), if any, and what the
    /// server asked of it; the same resolver as `config`'s.
    pub client_cert: Arc<ClientCert>,
}

impl Tls {
    /// A target with `config` (whose client certificate resolver, if it
    /// needs one, is `client_cert`).
    pub fn new(
        config: Arc<ClientConfig>,
        server_name: ServerName<'static>,
        client_cert: Arc<ClientCert>,
    ) -> Tls {
        Tls {
            config,
            server_name,
            client_cert,
        }
    }
}

/// The client certificate of a run (`--cert FILE --key FILE`), or none,
/// as rustls asks for it; it remembers that a server asked, so a refusal
/// is worded as one ("the server asks for a client certificate") and the
/// first connection waits for the server's verdict (TLS 1.3 servers give
/// it after the client's handshake is done).
#[derive(Debug, Default)]
pub struct ClientCert {
    key: Option<Arc<CertifiedKey>>,
    asked: AtomicBool,
    accepted: AtomicBool,
}

impl ClientCert {
    /// The resolver for `key` (`None`: no client certificate).
    pub fn new(key: Option<Arc<CertifiedKey>>) -> ClientCert {
        ClientCert {
            key,
            asked: AtomicBool::new(false),
            accepted: AtomicBool::new(false),
        }
    }

    /// A client certificate was given.
    pub fn given(&self) -> bool {
        self.key.is_some()
    }

    /// A server asked for a client certificate during this run.
    pub fn asked(&self) -> bool {
        self.asked.load(Ordering::Relaxed)
    }
}

impl ResolvesClientCert for ClientCert {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        self.asked.store(true, Ordering::Relaxed);
        self.key.clone()
    }

    fn has_certs(&self) -> bool {
        self.key.is_some()
    }
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

/// The fix every certificate refusal ends with.
const OR_INSECURE: &str = "or skip the check with --insecure";

/// Classifies a handshake error; `first` holds the first bytes the server
/// sent (a plain HTTP server answers with `HTTP/`).
pub fn classify(e: &rustls::Error, first: &[u8]) -> io::Error {
    classify_with(e, first, None)
}

/// [`classify`], knowing the run's client certificate: a refusal after
/// the server asked for one is worded as such.
pub fn classify_with(e: &rustls::Error, first: &[u8], client: Option<&ClientCert>) -> io::Error {
    if first.starts_with(b"HTTP/") {
        return TlsFailure::error(
            HandshakeFailure::Protocol,
            "the server answered in plain HTTP, not TLS: use http:// for this port",
        );
    }
    let (kind, message) = describe(e, client);
    TlsFailure::error(kind, message)
}

/// The kind of a handshake error and its one line, in words.
///
/// # Example
/// ```
/// use metronome_core::engine::HandshakeFailure;
/// use rustls::CertificateError;
/// let (kind, line) =
///     metronome_core::engine::tls::describe(&CertificateError::UnknownIssuer.into(), None);
/// assert_eq!(kind, HandshakeFailure::Certificate);
/// assert!(line.starts_with("the server's certificate has an unknown issuer"));
/// ```
pub fn describe(e: &rustls::Error, client: Option<&ClientCert>) -> (HandshakeFailure, String) {
    use rustls::Error as E;
    let asked = client.is_some_and(ClientCert::asked);
    let given = client.is_some_and(ClientCert::given);
    let cert = |m: String| (HandshakeFailure::Certificate, m);
    let proto = |m: String| (HandshakeFailure::Protocol, m);
    match e {
        E::InvalidCertificate(c) => cert(certificate(c)),
        E::NoCertificatesPresented => cert(format!(
            "the server presented no certificate: configure one on the server, {OR_INSECURE}"
        )),
        E::AlertReceived(AlertDescription::CertificateRequired) => cert(NO_CLIENT_CERT.to_string()),
        E::AlertReceived(a) if asked && !given && refuses_certificate(*a) => {
            cert(NO_CLIENT_CERT.to_string())
        }
        E::AlertReceived(a) if asked && given && refuses_certificate(*a) => cert(format!(
            "the server refused the client certificate of --cert (alert {}): give one signed by a CA the server trusts",
            alert_name(*a)
        )),
        E::AlertReceived(AlertDescription::ProtocolVersion)
        | E::PeerIncompatible(
            PeerIncompatible::ServerDoesNotSupportTls12Or13
            | PeerIncompatible::ServerTlsVersionIsDisabledByOurConfig
            | PeerIncompatible::SupportedVersionsExtensionRequired
            | PeerIncompatible::Tls12NotOffered
            | PeerIncompatible::Tls12NotOfferedOrEnabled,
        ) => proto(NO_VERSION.to_string()),
        E::AlertReceived(AlertDescription::HandshakeFailure | AlertDescription::InsufficientSecurity)
        | E::PeerIncompatible(
            PeerIncompatible::NoCipherSuitesInCommon
            | PeerIncompatible::NoKxGroupsInCommon
            | PeerIncompatible::NoSignatureSchemesInCommon
            | PeerIncompatible::NoEcPointFormatsInCommon,
        ) => proto(NO_CIPHER.to_string()),
        E::AlertReceived(
            a @ (AlertDescription::BadCertificate
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateUnknown
            | AlertDescription::CertificateExpired
            | AlertDescription::UnsupportedCertificate),
        ) => cert(format!(
            "the server refused the handshake over a certificate (alert {})",
            alert_name(*a)
        )),
        E::AlertReceived(a) => proto(format!(
            "the server ended the TLS handshake with alert {}",
            alert_name(*a)
        )),
        E::PeerIncompatible(_) => proto(
            "the server's TLS handshake lacks something TLS 1.2 and 1.3 require (the server is too old or not standard)"
                .to_string(),
        ),
        E::InvalidMessage(_) | E::InappropriateMessage { .. } | E::InappropriateHandshakeMessage { .. } => {
            proto("the server sent bytes that are not a valid TLS handshake (does this port speak TLS?)".to_string())
        }
        E::DecryptError => proto(
            "the server's handshake failed to decrypt (its key does not match its certificate, or the bytes were altered)"
                .to_string(),
        ),
        _ => proto("the server broke the TLS protocol during the handshake".to_string()),
    }
}

const NO_CLIENT_CERT: &str =
    "the server asks for a client certificate: give one with --cert FILE --key FILE (PEM)";
const NO_VERSION: &str =
    "the server and metronome share no TLS version (metronome speaks TLS 1.2 and 1.3): enable one of them on the server";
const NO_CIPHER: &str = "the server refused the handshake: no cipher suite, key exchange group or signature scheme in common (metronome offers TLS 1.3 and TLS 1.2 ECDHE suites with AES-GCM or ChaCha20-Poly1305): enable one on the server";

/// An alert a server sends when it refuses or misses a client certificate.
fn refuses_certificate(a: AlertDescription) -> bool {
    matches!(
        a,
        AlertDescription::HandshakeFailure
            | AlertDescription::BadCertificate
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateUnknown
            | AlertDescription::CertificateExpired
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::AccessDenied
            | AlertDescription::DecryptError
    )
}

/// The alert's name as RFC 8446 spells it (its number when it has none).
fn alert_name(a: AlertDescription) -> String {
    use AlertDescription as A;
    let name = match a {
        A::CloseNotify => "close_notify",
        A::UnexpectedMessage => "unexpected_message",
        A::BadRecordMac => "bad_record_mac",
        A::RecordOverflow => "record_overflow",
        A::HandshakeFailure => "handshake_failure",
        A::BadCertificate => "bad_certificate",
        A::UnsupportedCertificate => "unsupported_certificate",
        A::CertificateRevoked => "certificate_revoked",
        A::CertificateExpired => "certificate_expired",
        A::CertificateUnknown => "certificate_unknown",
        A::IllegalParameter => "illegal_parameter",
        A::UnknownCA => "unknown_ca",
        A::AccessDenied => "access_denied",
        A::DecodeError => "decode_error",
        A::DecryptError => "decrypt_error",
        A::ProtocolVersion => "protocol_version",
        A::InsufficientSecurity => "insufficient_security",
        A::InternalError => "internal_error",
        A::InappropriateFallback => "inappropriate_fallback",
        A::UserCanceled => "user_canceled",
        A::MissingExtension => "missing_extension",
        A::UnsupportedExtension => "unsupported_extension",
        A::UnrecognisedName => "unrecognized_name",
        A::BadCertificateStatusResponse => "bad_certificate_status_response",
        A::UnknownPSKIdentity => "unknown_psk_identity",
        A::CertificateRequired => "certificate_required",
        A::NoApplicationProtocol => "no_application_protocol",
        _ => "",
    };
    if name.is_empty() {
        format!("number {}", u8::from(a))
    } else {
        name.to_string()
    }
}

/// The server's certificate was refused: why, in words, and the fix.
fn certificate(c: &CertificateError) -> String {
    use CertificateError as C;
    match c {
        C::UnknownIssuer | C::BadSignature => format!(
            "the server's certificate has an unknown issuer (no CA this machine trusts signed it): pass the server's certificate or its CA with --cacert FILE (PEM), {OR_INSECURE}"
        ),
        C::ExpiredContext { not_after, .. } => format!(
            "the server's certificate expired on {}: renew it on the server (or set this machine's clock right), {OR_INSECURE}",
            utc(not_after.as_secs())
        ),
        C::Expired => format!("the server's certificate has expired: renew it on the server, {OR_INSECURE}"),
        C::NotValidYetContext { not_before, .. } => format!(
            "the server's certificate is not valid before {}: set this machine's clock right (or wait), {OR_INSECURE}",
            utc(not_before.as_secs())
        ),
        C::NotValidYet => format!("the server's certificate is not valid yet: check this machine's clock, {OR_INSECURE}"),
        C::NotValidForNameContext { expected, presented } => {
            let names = if presented.is_empty() {
                "no host name (no subjectAltName)".to_string()
            } else {
                presented.join(", ")
            };
            format!(
                "the server's certificate is for {names}, not for {}: use one of its names in the URL, {OR_INSECURE}",
                server_name(expected)
            )
        }
        C::NotValidForName => format!(
            "the server's certificate is not for the URL's host: use one of its names in the URL, {OR_INSECURE}"
        ),
        C::InvalidPurpose | C::InvalidPurposeContext { .. } => format!(
            "the server's certificate is not for TLS servers (its extended key usage lacks serverAuth): {OR_INSECURE}"
        ),
        C::BadEncoding => format!("the server's certificate is not valid DER: {OR_INSECURE}"),
        #[allow(deprecated)]
        C::UnsupportedSignatureAlgorithm
        | C::UnsupportedSignatureAlgorithmContext { .. }
        | C::UnsupportedSignatureAlgorithmForPublicKeyContext { .. } => format!(
            "the server's certificate is signed with an algorithm metronome does not support (it verifies RSA, ECDSA P-256/P-384 and Ed25519): {OR_INSECURE}"
        ),
        C::Revoked => format!("the server's certificate is revoked: {OR_INSECURE}"),
        C::Other(other) if ca_as_end_entity(other) => CA_AS_END_ENTITY.to_string(),
        _ => format!(
            "the server's certificate chain does not pass path validation (a CA constraint, a key usage or an extension is violated): fix the chain on the server, {OR_INSECURE}"
        ),
    }
}

const CA_AS_END_ENTITY: &str = "the server presents a CA certificate (basicConstraints CA:TRUE) as its own: pass that very certificate with --cacert FILE to trust it as it is, or give the server a certificate with CA:FALSE";

fn ca_as_end_entity(other: &rustls::OtherError) -> bool {
    matches!(
        other.0.downcast_ref::<webpki::Error>(),
        Some(webpki::Error::CaUsedAsEndEntity)
    )
}

/// The refusal is webpki's "a CA certificate used as an end-entity one".
pub fn is_ca_used_as_end_entity(e: &CertificateError) -> bool {
    matches!(e, CertificateError::Other(o) if ca_as_end_entity(o))
}

/// A server name as the user wrote it.
fn server_name(name: &ServerName<'_>) -> String {
    match name {
        ServerName::DnsName(d) => d.as_ref().to_string(),
        ServerName::IpAddress(ip) => std::net::IpAddr::from(*ip).to_string(),
        _ => "the URL's host".to_string(),
    }
}

/// Seconds since the Unix epoch as `YYYY-MM-DD HH:MM:SS UTC` (proleptic
/// Gregorian; Howard Hinnant's `civil_from_days`).
///
/// # Example
/// ```
/// assert_eq!(metronome_core::engine::tls::utc(0), "1970-01-01 00:00:00 UTC");
/// assert_eq!(metronome_core::engine::tls::utc(1_700_000_000), "2023-11-14 22:13:20 UTC");
/// ```
pub fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// How long the first connection of a run waits, after a TLS 1.3
/// handshake in which the server asked for a client certificate, for the
/// server's verdict on it (an alert, or its session tickets): TLS 1.3
/// servers check the client's certificate after the client has finished.
pub const VERDICT_WAIT: Duration = Duration::from_millis(500);

/// Runs the client handshake of `tls` on `stream` until done or `deadline`.
/// Returns whether the session was resumed.
///
/// When the server asked for a client certificate over TLS 1.3, the first
/// connection to get that far also waits (at most [`VERDICT_WAIT`]) for the
/// server to accept or refuse it, so a refusal ends the run before it
/// starts, in one line, like a refused server certificate.
///
/// # Errors
/// A [`TlsFailure`] inside the I/O error for a refused certificate, a
/// protocol failure, a close or a timeout; other I/O errors as they are.
pub fn handshake(
    tls: &Tls,
    conn: &mut ClientConnection,
    stream: &TcpStream,
    deadline: Instant,
) -> io::Result<bool> {
    shake(tls, conn, stream, deadline).map_err(|e| {
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
    tls: &Tls,
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
    let client = Some(&*tls.client_cert);
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
            return Err(classify_with(&e, &first[..first_len], client));
        }
    }
    while conn.wants_write() {
        conn.write_tls(&mut stream)?;
    }
    let auth = &tls.client_cert;
    if auth.asked()
        && !auth.accepted.load(Ordering::Relaxed)
        && conn.protocol_version() == Some(ProtocolVersion::TLSv1_3)
    {
        verdict(
            conn,
            stream,
            deadline.min(Instant::now() + VERDICT_WAIT),
            auth,
        )?;
    }
    stream.set_read_timeout(None)?;
    stream.set_write_timeout(None)?;
    Ok(conn.handshake_kind() == Some(HandshakeKind::Resumed))
}

/// Waits until `until` for the server's first records after a TLS 1.3
/// handshake in which it asked for a client certificate: an alert refuses
/// it; a session ticket, or silence, accepts it (for the whole run).
fn verdict(
    conn: &mut ClientConnection,
    mut stream: &TcpStream,
    until: Instant,
    auth: &ClientCert,
) -> io::Result<()> {
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        stream.set_read_timeout(Some(left))?;
        match conn.read_tls(&mut stream) {
            Ok(0) => {
                let message = if auth.given() {
                    "the server closed the connection after the TLS handshake, having asked for a client certificate: check that --cert is one it accepts"
                } else {
                    NO_CLIENT_CERT
                };
                return Err(TlsFailure::error(HandshakeFailure::Certificate, message));
            }
            Ok(_) => {}
            Err(e) if is_timeout(&e) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        match conn.process_new_packets() {
            Ok(_) => break,
            Err(e) => return Err(classify_with(&e, b"", Some(auth))),
        }
    }
    auth.accepted.store(true, Ordering::Relaxed);
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::UnixTime;
    use rustls::OtherError;

    fn at(secs: u64) -> UnixTime {
        UnixTime::since_unix_epoch(Duration::from_secs(secs))
    }

    fn line(e: rustls::Error) -> (HandshakeFailure, String) {
        describe(&e, None)
    }

    #[test]
    fn certificate_refusals_in_words() {
        use HandshakeFailure::Certificate as C;
        let unknown = "the server's certificate has an unknown issuer (no CA this machine trusts signed it): pass the server's certificate or its CA with --cacert FILE (PEM), or skip the check with --insecure";
        assert_eq!(
            line(CertificateError::UnknownIssuer.into()),
            (C, unknown.into())
        );
        // webpki's "a root of that name did not sign it" is an unknown issuer too.
        assert_eq!(
            line(CertificateError::BadSignature.into()),
            (C, unknown.into())
        );
        assert_eq!(
            line(
                CertificateError::ExpiredContext {
                    time: at(1_800_000_000),
                    not_after: at(1_609_545_600),
                }
                .into()
            ),
            (C, "the server's certificate expired on 2021-01-02 00:00:00 UTC: renew it on the server (or set this machine's clock right), or skip the check with --insecure".into())
        );
        assert_eq!(
            line(
                CertificateError::NotValidYetContext {
                    time: at(0),
                    not_before: at(4_070_908_800),
                }
                .into()
            ),
            (C, "the server's certificate is not valid before 2099-01-01 00:00:00 UTC: set this machine's clock right (or wait), or skip the check with --insecure".into())
        );
        let expected = ServerName::try_from("127.0.0.1").unwrap();
        assert_eq!(
            line(
                CertificateError::NotValidForNameContext {
                    expected: expected.clone(),
                    presented: std::vec!["example.com".into(), "10.0.0.1".into()],
                }
                .into()
            ),
            (C, "the server's certificate is for example.com, 10.0.0.1, not for 127.0.0.1: use one of its names in the URL, or skip the check with --insecure".into())
        );
        assert_eq!(
            line(
                CertificateError::NotValidForNameContext {
                    expected,
                    presented: std::vec![],
                }
                .into()
            ),
            (C, "the server's certificate is for no host name (no subjectAltName), not for 127.0.0.1: use one of its names in the URL, or skip the check with --insecure".into())
        );
        let ca = CertificateError::Other(OtherError(Arc::new(webpki::Error::CaUsedAsEndEntity)));
        assert!(is_ca_used_as_end_entity(&ca));
        assert_eq!(line(ca.into()), (C, CA_AS_END_ENTITY.into()));
        // Another webpki error: words, not its debug name.
        let (kind, text) = line(
            CertificateError::Other(OtherError(Arc::new(
                webpki::Error::PathLenConstraintViolated,
            )))
            .into(),
        );
        assert_eq!(kind, C);
        assert!(!text.contains("PathLen"), "{text}");
    }

    #[test]
    fn protocol_refusals_in_words() {
        use HandshakeFailure::Protocol as P;
        assert_eq!(
            line(rustls::Error::AlertReceived(
                AlertDescription::ProtocolVersion
            )),
            (P, NO_VERSION.into())
        );
        assert_eq!(
            line(PeerIncompatible::ServerDoesNotSupportTls12Or13.into()),
            (P, NO_VERSION.into())
        );
        assert_eq!(
            line(rustls::Error::AlertReceived(
                AlertDescription::HandshakeFailure
            )),
            (P, NO_CIPHER.into())
        );
        assert_eq!(
            line(PeerIncompatible::NoCipherSuitesInCommon.into()),
            (P, NO_CIPHER.into())
        );
        assert_eq!(
            line(rustls::Error::AlertReceived(
                AlertDescription::InternalError
            )),
            (
                P,
                "the server ended the TLS handshake with alert internal_error".into()
            )
        );
        assert_eq!(
            line(rustls::Error::AlertReceived(AlertDescription::Unknown(200))),
            (
                P,
                "the server ended the TLS handshake with alert number 200".into()
            )
        );
    }

    #[test]
    fn client_certificate_refusals_in_words() {
        use HandshakeFailure::Certificate as C;
        let required = rustls::Error::AlertReceived(AlertDescription::CertificateRequired);
        assert_eq!(describe(&required, None), (C, NO_CLIENT_CERT.into()));
        // TLS 1.2 servers send handshake_failure: after they asked, it is
        // about the client certificate.
        let failure = rustls::Error::AlertReceived(AlertDescription::HandshakeFailure);
        let none = ClientCert::new(None);
        assert_eq!(
            describe(&failure, Some(&none)).1,
            NO_CIPHER,
            "not asked: a cipher mismatch"
        );
        let _ = none.resolve(&[], &[]);
        assert!(none.asked());
        assert_eq!(describe(&failure, Some(&none)), (C, NO_CLIENT_CERT.into()));
    }

    #[test]
    fn plain_http_is_named() {
        let e = classify(&rustls::Error::DecryptError, b"HTTP/1.1 400");
        assert_eq!(
            e.to_string(),
            "the server answered in plain HTTP, not TLS: use http:// for this port"
        );
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_609_545_600), "2021-01-02 00:00:00 UTC");
        assert_eq!(utc(4_070_908_799), "2098-12-31 23:59:59 UTC");
        assert_eq!(utc(253_402_300_799), "9999-12-31 23:59:59 UTC");
    }
}
