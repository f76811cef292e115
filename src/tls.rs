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
//!   the OS use), plus `--cacert FILE`; `--insecure` skips the check (the
//!   handshake signatures are still verified) and the report says so.
//! - Server: a self-signed certificate for `localhost`, `127.0.0.1` and
//!   `::1` generated at start (rcgen), or `--cert/--key` PEM files; its
//!   SHA-256 fingerprint is printed so a client can pin it.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};

use crate::UsageError;

/// The one ALPN protocol offered and served.
pub const ALPN_HTTP11: &[u8] = b"http/1.1";

/// The crypto provider of every TLS connection metronome makes or serves.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
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
}

impl ClientTls {
    /// What both engines take: the configuration and the server name.
    pub fn engine(&self) -> metronome_core::tls::Tls {
        metronome_core::tls::Tls {
            config: Arc::clone(&self.config),
            server_name: self.server_name.clone(),
        }
    }

    /// The client side for `host`: the system trust store plus `cacert`,
    /// or no verification with `insecure`.
    ///
    /// # Errors
    /// A [`UsageError`] when `host` is no valid server name, `cacert`
    /// cannot be read or holds no certificate, or no trusted root was found
    /// at all.
    pub fn new(host: &str, cacert: Option<&Path>, insecure: bool) -> anyhow::Result<ClientTls> {
        let server_name = ServerName::try_from(host.to_string())
            .map_err(|e| UsageError(format!("'{host}' is not a TLS server name: {e}")))?;
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .context("the TLS provider supports no protocol version")?;
        let mut config = if insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerification(provider())))
                .with_no_client_auth()
        } else {
            builder
                .with_root_certificates(roots(cacert)?)
                .with_no_client_auth()
        };
        config.alpn_protocols = vec![ALPN_HTTP11.to_vec()];
        Ok(ClientTls {
            config: Arc::new(config),
            server_name,
            insecure,
        })
    }
}

/// The system's roots plus `cacert`'s certificates.
fn roots(cacert: Option<&Path>) -> anyhow::Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    // Errors reading some system files are not fatal: the roots that
    // loaded are used, and an empty store is reported below.
    let native = rustls_native_certs::load_native_certs();
    store.add_parsable_certificates(native.certs);
    if let Some(path) = cacert {
        let certs = read_certs(path, "--cacert")?;
        for cert in certs {
            store.add(cert).map_err(|e| {
                UsageError(format!(
                    "--cacert {}: not a usable CA certificate: {e}",
                    path.display()
                ))
            })?;
        }
    }
    if store.is_empty() {
        return Err(UsageError(
            "no trusted root certificate found on this system: install the CA bundle (ca-certificates), or name one with --cacert FILE (or --insecure to skip the check)".into(),
        )
        .into());
    }
    Ok(store)
}

/// Every certificate of a PEM file.
fn read_certs(path: &Path, flag: &str) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| UsageError(format!("{flag} {}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(UsageError(format!(
            "{flag} {}: no PEM certificate (BEGIN CERTIFICATE) in the file",
            path.display()
        ))
        .into());
    }
    Ok(certs)
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
        let names = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
        let certified =
            rcgen::generate_simple_self_signed(names).context("cannot generate a certificate")?;
        let cert_pem = certified.cert.pem();
        let key = PrivateKeyDer::try_from(certified.signing_key.serialize_der())
            .map_err(|e| anyhow::anyhow!("cannot use the generated key: {e}"))?;
        ServerTls::build(vec![certified.cert.der().clone()], key, cert_pem)
    }

    /// The certificate chain and key of PEM files (`--cert`, `--key`).
    ///
    /// # Errors
    /// A [`UsageError`] naming the file that cannot be read or used.
    pub fn from_pem_files(cert: &Path, key: &Path) -> anyhow::Result<ServerTls> {
        let certs = read_certs(cert, "--cert")?;
        let key_der = PrivateKeyDer::from_pem_file(key)
            .map_err(|e| UsageError(format!("--key {}: {e}", key.display())))?;
        let cert_pem = std::fs::read_to_string(cert)
            .with_context(|| format!("cannot read --cert {}", cert.display()))?;
        ServerTls::build(certs, key_der, cert_pem)
    }

    fn build(
        certs: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
        cert_pem: String,
    ) -> anyhow::Result<ServerTls> {
        let fingerprint = fingerprint(&certs[0]);
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .context("the TLS provider supports no protocol version")?
            .with_no_client_auth()
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
