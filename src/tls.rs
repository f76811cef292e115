//! TLS for the CLI (core knows nothing of it): the client configuration
//! `run` hands to the engines, and the certificate and server configuration
//! of `serve --tls`.
//!
//! - Client: rustls with the `ring` provider (docs/tls.md says why), TLS 1.2
//!   and 1.3, ALPN `http/1.1`, the server name (SNI and the name checked in
//!   the certificate) from the URL's host, an in-memory session cache shared
//!   by every connection of the run (so connections opened during the run
//!   resume where the server allows it). Certificates are verified against
//!   the system trust store (`rustls-native-certs`: the same roots curl and
//!   the OS use), plus `--cacert FILE`, whose certificates are also trusted
//!   as they are: a server whose own certificate is byte for byte one of
//!   them is accepted whatever its basic constraints (the name and the
//!   validity dates must still fit), as curl does. `--insecure` skips the
//!   check (the handshake signatures are still verified) and the report
//!   says so. `--cert/--key` give a client certificate; `SSLKEYLOGFILE`
//!   names a file the session keys are appended to.
//! - Server: a self-signed certificate for `localhost`, `127.0.0.1` and
//!   `::1` generated at start (rcgen), or `--cert/--key` PEM files; its
//!   SHA-256 fingerprint is printed so a client can pin it; `--client-ca`
//!   requires a client certificate signed by one of its certificates.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use metronome_core::engine::tls::ClientCert;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::{ParsedCertificate, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, KeyLogFile, RootCertStore, ServerConfig,
    SignatureScheme,
};

use crate::UsageError;

/// The one ALPN protocol offered and served.
pub const ALPN_HTTP11: &[u8] = b"http/1.1";

/// The environment variable naming the file TLS session keys are appended
/// to (NSS key log format, as curl, Firefox and Chrome write it).
pub const SSLKEYLOGFILE: &str = "SSLKEYLOGFILE";

/// The crypto provider of every TLS connection metronome makes or serves.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// What the user asked of the client side of TLS (`run`'s flags).
#[derive(Clone, Copy, Debug, Default)]
pub struct ClientOptions<'a> {
    /// `--cacert FILE`: more certificates to trust (PEM).
    pub cacert: Option<&'a Path>,
    /// `--insecure`: no certificate check.
    pub insecure: bool,
    /// `--cert FILE`: the client certificate chain (PEM).
    pub cert: Option<&'a Path>,
    /// `--key FILE`: the client certificate's private key (PEM).
    pub key: Option<&'a Path>,
}

/// What the engines need to speak TLS to the target.
#[derive(Clone, Debug)]
pub struct ClientTls {
    /// The client configuration, shared by every connection (and its session cache).
    pub config: Arc<ClientConfig>,
    /// The server name from the URL's host: SNI, and the name the certificate must carry.
    pub server_name: ServerName<'static>,
    /// Certificates are not verified (`--insecure`).
    pub insecure: bool,
    /// Session keys are appended to the file `SSLKEYLOGFILE` names.
    pub keylog: bool,
    /// The client certificate (`--cert/--key`) and what the server asked of it.
    pub client_cert: Arc<ClientCert>,
}

impl ClientTls {
    /// What both engines take: the configuration and the server name.
    pub fn engine(&self) -> metronome_core::engine::tls::Tls {
        metronome_core::engine::tls::Tls::new(
            Arc::clone(&self.config),
            self.server_name.clone(),
            Arc::clone(&self.client_cert),
        )
    }

    /// `--http2`: the connections offer ALPN `h2` only (a server that
    /// answers without it, or with `http/1.1`, is refused by the engine).
    pub fn offer_h2_only(&mut self) {
        let mut config = (*self.config).clone();
        config.alpn_protocols = vec![b"h2".to_vec()];
        self.config = Arc::new(config);
    }

    /// `--http3-0rtt`: a connection that holds a session ticket allowing
    /// early data sends its first requests in 0-RTT (rustls' default is
    /// off: resumption without early data).
    pub fn enable_early_data(&mut self) {
        let mut config = (*self.config).clone();
        config.enable_early_data = true;
        self.config = Arc::new(config);
    }

    /// True when `--http3-0rtt` switched early data on.
    pub fn early_data(&self) -> bool {
        self.config.enable_early_data
    }

    /// The client side for `host`: the system trust store plus `--cacert`,
    /// or no verification with `--insecure`; the client certificate of
    /// `--cert/--key`; key logging when `SSLKEYLOGFILE` is set.
    ///
    /// # Errors
    /// A [`UsageError`] when `host` is no valid server name, a file cannot
    /// be read or holds nothing usable, the key does not belong to the
    /// certificate, `SSLKEYLOGFILE` cannot be opened, or no trusted root
    /// was found at all.
    pub fn new(host: &str, opts: &ClientOptions<'_>) -> anyhow::Result<ClientTls> {
        let server_name = ServerName::try_from(host.to_string())
            .map_err(|e| UsageError(format!("'{host}' is not a TLS server name: {e}")))?;
        let client_cert = Arc::new(ClientCert::new(client_key(opts.cert, opts.key)?));
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .context("the TLS provider supports no protocol version")?;
        let verifier: Arc<dyn ServerCertVerifier> = if opts.insecure {
            Arc::new(NoVerification(provider()))
        } else {
            Arc::new(Verifier::new(opts.cacert)?)
        };
        let mut config = builder
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_client_cert_resolver(Arc::clone(&client_cert) as _);
        config.alpn_protocols = vec![ALPN_HTTP11.to_vec()];
        let keylog = keylog_file()?;
        if keylog {
            config.key_log = Arc::new(KeyLogFile::new());
        }
        Ok(ClientTls {
            config: Arc::new(config),
            server_name,
            insecure: opts.insecure,
            keylog,
            client_cert,
        })
    }
}

/// `SSLKEYLOGFILE` is set (and not empty): TLS session keys are logged.
pub fn keylog_requested() -> bool {
    std::env::var_os(SSLKEYLOGFILE).is_some_and(|p| !p.is_empty())
}

/// Whether `SSLKEYLOGFILE` names a file; it must open for appending (rustls
/// would otherwise drop the keys silently).
fn keylog_file() -> anyhow::Result<bool> {
    let Some(path) = std::env::var_os(SSLKEYLOGFILE).filter(|p| !p.is_empty()) else {
        return Ok(false);
    };
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .map_err(|e| {
            UsageError(format!(
                "{SSLKEYLOGFILE}={}: cannot open it to append the TLS keys: {e}",
                Path::new(&path).display()
            ))
        })?;
    Ok(true)
}

/// The client certificate of `--cert` and `--key` (both or neither).
fn client_key(
    cert: Option<&Path>,
    key: Option<&Path>,
) -> anyhow::Result<Option<Arc<CertifiedKey>>> {
    let (cert, key) = match (cert, key) {
        (None, None) => return Ok(None),
        (Some(c), Some(k)) => (c, k),
        (Some(_), None) => {
            return Err(UsageError("--cert needs --key FILE (its private key, PEM)".into()).into())
        }
        (None, Some(_)) => {
            return Err(UsageError("--key needs --cert FILE (its certificate, PEM)".into()).into())
        }
    };
    let certs = read_certs(cert, "--cert")?;
    let der = read_key(key)?;
    let signer = provider().key_provider.load_private_key(der).map_err(|_| {
        UsageError(format!(
            "--key {}: not a key metronome can sign with (RSA, ECDSA P-256/P-384 or Ed25519)",
            key.display()
        ))
    })?;
    let certified = CertifiedKey::new(certs, signer);
    match key_matches(&certified) {
        Some(true) => {}
        Some(false) => {
            return Err(UsageError(format!(
            "--key {} does not belong to the certificate of --cert {} (their public keys differ)",
            key.display(),
            cert.display()
        ))
            .into())
        }
        None => eprintln!(
            "metronome: notice: could not compare --key {} with the certificate of --cert {}; \
             the server will judge the pair",
            key.display(),
            cert.display()
        ),
    }
    Ok(Some(Arc::new(certified)))
}

/// Whether the key's public half is the one in the end-entity certificate:
/// `Some(true)` or `Some(false)` when both could be read, `None` when one
/// could not (never a mismatch that was not seen). The certificate is read
/// with x509-parser, which takes X.509 v1 as well as v3 (OpenSSL's
/// `x509 -req` without an extensions file makes v1; rustls' own
/// `keys_match` refuses those as badly encoded). The keys are compared as
/// algorithm and key bits, not as DER bytes.
fn key_matches(certified: &CertifiedKey) -> Option<bool> {
    use x509_parser::prelude::FromDer as _;
    use x509_parser::x509::SubjectPublicKeyInfo;
    let key_spki = certified.key.public_key()?;
    let (_, key) = SubjectPublicKeyInfo::from_der(key_spki.as_ref()).ok()?;
    let end_entity = certified.end_entity_cert().ok()?;
    let (_, cert) = x509_parser::parse_x509_certificate(end_entity).ok()?;
    let theirs = cert.public_key();
    Some(
        key.algorithm.algorithm == theirs.algorithm.algorithm
            && key.subject_public_key.data == theirs.subject_public_key.data,
    )
}

/// The private key of a PEM file (PKCS#8, PKCS#1 RSA or SEC1 EC).
fn read_key(path: &Path) -> anyhow::Result<PrivateKeyDer<'static>> {
    std::fs::metadata(path).map_err(|e| UsageError(format!("--key {}: {e}", path.display())))?;
    PrivateKeyDer::from_pem_file(path).map_err(|e| {
        let why = match e {
            rustls::pki_types::pem::Error::NoItemsFound
                if std::fs::read_to_string(path)
                    .is_ok_and(|t| t.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----")) =>
            {
                "the key is encrypted (BEGIN ENCRYPTED PRIVATE KEY); metronome reads unencrypted keys: decrypt it with `openssl pkey -in KEY -out PLAIN.key`".to_string()
            }
            rustls::pki_types::pem::Error::NoItemsFound => {
                "no PEM private key (BEGIN PRIVATE KEY, BEGIN RSA PRIVATE KEY or BEGIN EC PRIVATE KEY) in the file".to_string()
            }
            rustls::pki_types::pem::Error::Io(e) => e.to_string(),
            _ => "not a readable PEM file".to_string(),
        };
        UsageError(format!("--key {}: {why}", path.display())).into()
    })
}

/// The system's roots plus `cacert`'s certificates, and `cacert`'s
/// certificates themselves.
fn roots(cacert: Option<&Path>) -> anyhow::Result<(RootCertStore, Vec<CertificateDer<'static>>)> {
    let mut store = RootCertStore::empty();
    // Errors reading some system files are not fatal: the roots that
    // loaded are used, and an empty store is reported below.
    let native = rustls_native_certs::load_native_certs();
    store.add_parsable_certificates(native.certs);
    let mut given = Vec::new();
    if let Some(path) = cacert {
        let certs = read_certs(path, "--cacert")?;
        for cert in certs {
            store.add(cert.clone()).map_err(|_| {
                UsageError(format!(
                    "--cacert {}: a certificate in it is not valid DER X.509",
                    path.display()
                ))
            })?;
            given.push(cert);
        }
    }
    if store.is_empty() {
        return Err(UsageError(
            "no trusted root certificate found on this system: install the CA bundle (ca-certificates), or name one with --cacert FILE (or --insecure to skip the check)".into(),
        )
        .into());
    }
    Ok((store, given))
}

/// Every certificate of a PEM file.
fn read_certs(path: &Path, flag: &str) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    std::fs::metadata(path).map_err(|e| UsageError(format!("{flag} {}: {e}", path.display())))?;
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|_| {
            UsageError(format!(
                "{flag} {}: not a readable PEM file",
                path.display()
            ))
        })?;
    if certs.is_empty() {
        return Err(UsageError(format!(
            "{flag} {}: no PEM certificate (BEGIN CERTIFICATE) in the file",
            path.display()
        ))
        .into());
    }
    Ok(certs)
}

/// A `--cacert` certificate trusted as it is: its DER and validity.
#[derive(Debug)]
struct Pinned {
    der: CertificateDer<'static>,
    not_before: u64,
    not_after: u64,
}

/// The server certificate check: a certificate given with `--cacert` is
/// accepted as the server's own when it is byte for byte the one the
/// server presents (whatever its basic constraints; its name and dates
/// are still checked); everything else goes through webpki's chain
/// validation against the roots. The handshake signatures are verified
/// with the provider's algorithms either way.
#[derive(Debug)]
struct Verifier {
    webpki: Arc<WebPkiServerVerifier>,
    pinned: Vec<Pinned>,
    provider: Arc<CryptoProvider>,
}

impl Verifier {
    fn new(cacert: Option<&Path>) -> anyhow::Result<Verifier> {
        let (store, given) = roots(cacert)?;
        let provider = provider();
        let webpki =
            WebPkiServerVerifier::builder_with_provider(Arc::new(store), Arc::clone(&provider))
                .build()
                .context("cannot build the certificate verifier")?;
        let mut pinned = Vec::new();
        for der in given {
            let (_, x509) = x509_parser::parse_x509_certificate(&der).map_err(|_| {
                UsageError(format!(
                    "--cacert {}: a certificate in it is not valid DER X.509",
                    cacert
                        .map(Path::display)
                        .map(|d| d.to_string())
                        .unwrap_or_default()
                ))
            })?;
            let validity = x509.validity();
            let secs = |t: i64| u64::try_from(t).unwrap_or(0);
            let (not_before, not_after) = (
                secs(validity.not_before.timestamp()),
                secs(validity.not_after.timestamp()),
            );
            pinned.push(Pinned {
                der: der.clone(),
                not_before,
                not_after,
            });
        }
        Ok(Verifier {
            webpki,
            pinned,
            provider,
        })
    }
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Some(p) = self
            .pinned
            .iter()
            .find(|p| p.der.as_ref() == end_entity.as_ref())
        {
            // As webpki checks an end-entity certificate's validity.
            let t = now.as_secs();
            if t < p.not_before {
                return Err(CertificateError::NotValidYetContext {
                    time: now,
                    not_before: UnixTime::since_unix_epoch(std::time::Duration::from_secs(
                        p.not_before,
                    )),
                }
                .into());
            }
            if t > p.not_after {
                return Err(CertificateError::ExpiredContext {
                    time: now,
                    not_after: UnixTime::since_unix_epoch(std::time::Duration::from_secs(
                        p.not_after,
                    )),
                }
                .into());
            }
            let parsed = ParsedCertificate::try_from(end_entity)?;
            rustls::client::verify_server_name(&parsed, server_name)
                .map_err(|e| refine(e, end_entity))?;
            return Ok(ServerCertVerified::assertion());
        }
        self.webpki
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
            .map_err(|e| refine(e, end_entity))
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A refusal as the user should read it: a self-signed certificate nobody
/// trusts is one of unknown issuer, whatever webpki found wrong with it
/// first (a CA certificate as the server's own; a root of the same name
/// that did not sign it); a wrong name lists the certificate's names as
/// written (DNS names and IP addresses of its subjectAltName).
fn refine(e: rustls::Error, end_entity: &CertificateDer<'_>) -> rustls::Error {
    match e {
        rustls::Error::InvalidCertificate(c)
            if (c == CertificateError::BadSignature
                || metronome_core::engine::tls::is_ca_used_as_end_entity(&c))
                && self_signed(end_entity) =>
        {
            CertificateError::UnknownIssuer.into()
        }
        rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext {
            expected,
            ..
        }) => CertificateError::NotValidForNameContext {
            expected,
            presented: names(end_entity),
        }
        .into(),
        e => e,
    }
}

/// The DNS names and IP addresses of a certificate's subjectAltName.
fn names(der: &CertificateDer<'_>) -> Vec<String> {
    use x509_parser::extensions::GeneralName;
    let Ok((_, cert)) = x509_parser::parse_x509_certificate(der) else {
        return Vec::new();
    };
    let Ok(Some(san)) = cert.subject_alternative_name() else {
        return Vec::new();
    };
    san.value
        .general_names
        .iter()
        .filter_map(|n| match n {
            GeneralName::DNSName(d) => Some((*d).to_string()),
            GeneralName::IPAddress(b) => match b.len() {
                4 => <[u8; 4]>::try_from(*b)
                    .ok()
                    .map(|a| std::net::IpAddr::from(a).to_string()),
                16 => <[u8; 16]>::try_from(*b)
                    .ok()
                    .map(|a| std::net::IpAddr::from(a).to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The certificate names itself as its issuer.
fn self_signed(der: &CertificateDer<'_>) -> bool {
    x509_parser::parse_x509_certificate(der)
        .is_ok_and(|(_, c)| c.issuer().as_raw() == c.subject().as_raw())
}

/// `--insecure`: every certificate is accepted; the handshake signatures
/// are still checked (so the peer holds the key of the certificate it sent).
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The server side of `serve --tls`.
#[derive(Clone, Debug)]
pub struct ServerTls {
    /// The server configuration (ALPN `http/1.1`, session resumption on).
    pub config: Arc<ServerConfig>,
    /// The certificate chain, PEM (the first is the server's own).
    pub cert_pem: String,
    /// SHA-256 of the server certificate's DER, as `AB:CD:...`.
    pub fingerprint: String,
}

impl ServerTls {
    /// A fresh self-signed certificate for `localhost`, `127.0.0.1` and `::1`.
    ///
    /// # Errors
    /// Key generation or signing failed.
    ///
    /// # Example
    /// ```
    /// let tls = metronome::tls::ServerTls::self_signed().unwrap();
    /// assert!(tls.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
    /// assert_eq!(tls.fingerprint.len(), 32 * 3 - 1);
    /// ```
    pub fn self_signed() -> anyhow::Result<ServerTls> {
        ServerTls::self_signed_for(None)
    }

    /// [`ServerTls::self_signed`], requiring a client certificate signed
    /// by one of `client_ca`'s certificates (`serve --client-ca FILE`).
    ///
    /// # Errors
    /// Key generation or signing failed, or `client_ca` holds no usable
    /// CA certificate.
    pub fn self_signed_for(client_ca: Option<&Path>) -> anyhow::Result<ServerTls> {
        let names = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
        let certified =
            rcgen::generate_simple_self_signed(names).context("cannot generate a certificate")?;
        let cert_pem = certified.cert.pem();
        let key = PrivateKeyDer::try_from(certified.signing_key.serialize_der())
            .map_err(|e| anyhow::anyhow!("cannot use the generated key: {e}"))?;
        ServerTls::build(vec![certified.cert.der().clone()], key, cert_pem, client_ca)
    }

    /// The certificate chain and key of PEM files (`--cert`, `--key`).
    ///
    /// # Errors
    /// A [`UsageError`] naming the file that cannot be read or used.
    pub fn from_pem_files(
        cert: &Path,
        key: &Path,
        client_ca: Option<&Path>,
    ) -> anyhow::Result<ServerTls> {
        let certs = read_certs(cert, "--cert")?;
        let key_der = PrivateKeyDer::from_pem_file(key)
            .map_err(|e| UsageError(format!("--key {}: {e}", key.display())))?;
        let cert_pem = std::fs::read_to_string(cert)
            .with_context(|| format!("cannot read --cert {}", cert.display()))?;
        ServerTls::build(certs, key_der, cert_pem, client_ca)
    }

    fn build(
        certs: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
        cert_pem: String,
        client_ca: Option<&Path>,
    ) -> anyhow::Result<ServerTls> {
        let fingerprint = fingerprint(&certs[0]);
        let builder = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .context("the TLS provider supports no protocol version")?;
        let builder = match client_ca {
            None => builder.with_no_client_auth(),
            Some(path) => {
                let mut store = RootCertStore::empty();
                for cert in read_certs(path, "--client-ca")? {
                    store.add(cert).map_err(|_| {
                        UsageError(format!(
                            "--client-ca {}: a certificate in it is not valid DER X.509",
                            path.display()
                        ))
                    })?;
                }
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(store), provider())
                        .build()
                        .map_err(|_| {
                            UsageError(format!(
                                "--client-ca {}: no usable CA certificate in it",
                                path.display()
                            ))
                        })?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder
            .with_single_cert(certs, key)
            .map_err(|e| UsageError(format!("the certificate and key do not fit: {e}")))?;
        config.alpn_protocols = vec![ALPN_HTTP11.to_vec()];
        Ok(ServerTls {
            config: Arc::new(config),
            cert_pem,
            fingerprint,
        })
    }
}

/// SHA-256 of a certificate's DER, upper-case hex pairs joined by `:` (as
/// `openssl x509 -fingerprint -sha256` prints it).
///
/// # Example
/// ```
/// use rustls::pki_types::CertificateDer;
/// let f = metronome::tls::fingerprint(&CertificateDer::from(b"abc".to_vec()));
/// assert!(f.starts_with("BA:78:16:BF:8F:01:CF:EA"));
/// ```
pub fn fingerprint(cert: &CertificateDer<'_>) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, cert.as_ref());
    digest
        .as_ref()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}
