//! TLS as users meet it, on both engines, against a TLS stack metronome did
//! not write: Python's `ssl` module (OpenSSL), run by tests/tls_server.py on
//! 127.0.0.1. Certificates come from the `openssl` CLI (the self-signed
//! certificate OpenSSL 3 makes by default is `CA:TRUE`) or from rcgen (exact
//! validity dates). Each failure is checked as the exact one line a user
//! reads. Skipped, visibly, when python3 or openssl is missing.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::{engines, server};
use metronome::report::Report;
use metronome::serve::{ServeConfig, TlsServer};

/// The line every refused handshake starts with.
const FAILED: &str = "metronome: TLS handshake with the target failed: ";

/// python3 and openssl both run; else a visible skip.
fn tools() -> bool {
    for (tool, arg) in [("python3", "--version"), ("openssl", "version")] {
        let ok = Command::new(tool)
            .arg(arg)
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            eprintln!("SKIP: `{tool} {arg}` does not run here; the TLS peer tests need python3 and openssl");
            return false;
        }
    }
    true
}

/// A temporary directory of its own, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d =
            std::env::temp_dir().join(format!("metronome-tls-peer-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temporary path")
}

/// Runs `openssl ARGS`, panicking with its stderr when it fails.
fn openssl(args: &[&str]) {
    let out = Command::new("openssl").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `openssl req -x509 -newkey KIND -nodes -subj SUBJ [-addext EXT]`: a
/// self-signed certificate and its key, as OpenSSL makes them by default
/// (OpenSSL 3: `CA:TRUE`). Returns (certificate, key).
fn self_signed(
    dir: &Dir,
    name: &str,
    newkey: &[&str],
    subj: &str,
    san: Option<&str>,
) -> (PathBuf, PathBuf) {
    let (cert, key) = (
        dir.path(&format!("{name}.pem")),
        dir.path(&format!("{name}.key")),
    );
    let mut args = vec!["req", "-x509", "-newkey"];
    args.extend_from_slice(newkey);
    args.extend_from_slice(&[
        "-nodes",
        "-keyout",
        s(&key),
        "-out",
        s(&cert),
        "-subj",
        subj,
        "-days",
        "30",
    ]);
    let ext;
    if let Some(san) = san {
        ext = format!("subjectAltName={san}");
        args.extend_from_slice(&["-addext", &ext]);
    }
    openssl(&args);
    (cert, key)
}

/// The command: RSA 2048, CN=localhost, IP SAN 127.0.0.1.
fn openssl_default(dir: &Dir, name: &str) -> (PathBuf, PathBuf) {
    self_signed(
        dir,
        name,
        &["rsa:2048"],
        "/CN=localhost",
        Some("IP:127.0.0.1"),
    )
}

/// tests/tls_server.py with `cert` and `key` and `extra` flags; stops when
/// dropped (its stdin closes) or after 60 s by itself.
struct Peer {
    child: Child,
    port: u16,
}

impl Peer {
    fn start(cert: &Path, key: &Path, extra: &[&str]) -> Peer {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tls_server.py");
        let mut child = Command::new("python3")
            .arg(script)
            .args([s(cert), s(key), "--seconds", "60"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("tls_server.py printed {line:?}, not its port"));
        Peer { child, port }
    }

    fn url(&self, host: &str) -> String {
        format!("https://{host}:{}/", self.port)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `metronome run URL` on `engine` (2 requests, 2 connections) with
/// `args`; the environment holds no SSLKEYLOGFILE and, with `roots`, only
/// that file as the system trust store (so no test depends on the
/// machine's CA bundle).
fn run(url: &str, engine: &str, args: &[&str], roots: Option<&Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_metronome"));
    cmd.args([
        "run",
        url,
        "--engine",
        engine,
        "--rate",
        "10",
        "--duration",
        "200ms",
    ])
    .args(["--connections", "2", "--quiet"])
    .args(args)
    .env_remove("SSLKEYLOGFILE")
    .env_remove("SSL_CERT_DIR");
    match roots {
        Some(r) => cmd.env("SSL_CERT_FILE", r),
        None => cmd.env_remove("SSL_CERT_FILE"),
    };
    cmd.output().unwrap()
}

/// [`run`] that must succeed with a JSON report of 2 ok requests over TLS.
fn run_ok(url: &str, engine: &str, args: &[&str]) -> Report {
    let mut all = vec!["--format", "json"];
    all.extend_from_slice(args);
    let out = run(url, engine, &all, None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{engine}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Report = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r.requests.ok, 2, "{engine}: {:?}", r.errors);
    assert!(r.connections.tls, "{engine}");
    assert_eq!(
        r.connections.handshake_failures.values().sum::<u64>(),
        0,
        "{engine}"
    );
    r
}

/// The one line of a run that failed with `code`.
fn one_line(out: &Output, code: i32, engine: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(code), "{engine}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{engine}: {stderr}");
    assert!(out.stdout.is_empty(), "{engine}");
    stderr.trim_end().to_string()
}

/// The self-signed certificate OpenSSL 3 makes by default (`CA:TRUE`),
/// served by Python: trusted with `--cacert` (the server's certificate is
/// one of them byte for byte), whatever its basic constraints.
#[test]
fn openssl_default_self_signed_passes_with_cacert() {
    if !tools() {
        return;
    }
    let dir = Dir::new("default");
    let (cert, key) = openssl_default(&dir, "server");
    let text = Command::new("openssl")
        .args(["x509", "-noout", "-text", "-in", s(&cert)])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("CA:TRUE"),
        "this test is about a CA:TRUE certificate"
    );
    let peer = Peer::start(&cert, &key, &[]);
    for engine in engines() {
        let r = run_ok(&peer.url("127.0.0.1"), engine, &["--cacert", s(&cert)]);
        assert!(!r.connections.insecure, "{engine}");
        assert!(!r.connections.keylog, "{engine}");
    }
}

/// The same certificate without `--cacert`: unknown issuer, exit 1, one
/// line; with a `--cacert` of another certificate of the same name (the
/// server's was regenerated): unknown issuer too.
#[test]
fn untrusted_self_signed_is_unknown_issuer() {
    if !tools() {
        return;
    }
    let dir = Dir::new("unknown");
    let (cert, key) = openssl_default(&dir, "server");
    let (old, _) = openssl_default(&dir, "old");
    // The "system" trust store: one unrelated root.
    let (other, _) = self_signed(&dir, "other", &["rsa:2048"], "/CN=Other Root", None);
    let peer = Peer::start(&cert, &key, &[]);
    let want = format!(
        "{FAILED}the server's certificate has an unknown issuer (no CA this machine trusts signed it): \
         pass the server's certificate or its CA with --cacert FILE (PEM), or skip the check with --insecure"
    );
    for engine in engines() {
        let out = run(&peer.url("127.0.0.1"), engine, &[], Some(&other));
        assert_eq!(one_line(&out, 1, engine), want, "{engine}");
        let out = run(
            &peer.url("127.0.0.1"),
            engine,
            &["--cacert", s(&old)],
            Some(&other),
        );
        assert_eq!(one_line(&out, 1, engine), want, "{engine}: regenerated");
    }
}

/// rcgen certificate parameters for 127.0.0.1 valid from `from` to `to`
/// (year, month, day).
fn params(from: (i32, u8, u8), to: (i32, u8, u8)) -> rcgen::CertificateParams {
    let mut p = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    p.not_before = rcgen::date_time_ymd(from.0, from.1, from.2);
    p.not_after = rcgen::date_time_ymd(to.0, to.1, to.2);
    p
}

/// Writes `cert` and `key` as PEM files named `name`.
fn write_pair(
    dir: &Dir,
    name: &str,
    cert: &rcgen::Certificate,
    key: &rcgen::KeyPair,
) -> (PathBuf, PathBuf) {
    let (c, k) = (
        dir.path(&format!("{name}.pem")),
        dir.path(&format!("{name}.key")),
    );
    std::fs::write(&c, cert.pem()).unwrap();
    std::fs::write(&k, key.serialize_pem()).unwrap();
    (c, k)
}

/// An expired certificate, trusted as it is (`--cacert` of itself) or
/// through its CA: the line names the date it expired. A certificate not
/// valid yet names the date it starts.
#[test]
fn expired_and_not_yet_valid_name_their_dates() {
    if !tools() {
        return;
    }
    let dir = Dir::new("dates");
    let key = rcgen::KeyPair::generate().unwrap();
    let expired = params((2020, 1, 1), (2021, 1, 2))
        .self_signed(&key)
        .unwrap();
    let (cert, key_file) = write_pair(&dir, "expired", &expired, &key);

    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = params((2020, 1, 1), (2040, 1, 1));
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "Test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let (ca_file, _) = write_pair(&dir, "ca", &ca, &ca_key);
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf = params((2020, 1, 1), (2021, 1, 2))
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    let (leaf_file, leaf_key_file) = write_pair(&dir, "leaf", &leaf, &leaf_key);

    let future = params((2099, 1, 1), (2100, 1, 1))
        .self_signed(&key)
        .unwrap();
    let (future_file, _) = write_pair(&dir, "future", &future, &key);

    let expired_line = format!(
        "{FAILED}the server's certificate expired on 2021-01-02 00:00:00 UTC: renew it on the server \
         (or set this machine's clock right), or skip the check with --insecure"
    );
    let peers = [
        (Peer::start(&cert, &key_file, &[]), cert.clone()),
        (
            Peer::start(&leaf_file, &leaf_key_file, &[]),
            ca_file.clone(),
        ),
    ];
    let future_peer = Peer::start(&future_file, &key_file, &[]);
    for engine in engines() {
        for (peer, trust) in &peers {
            let out = run(
                &peer.url("127.0.0.1"),
                engine,
                &["--cacert", s(trust)],
                None,
            );
            assert_eq!(
                one_line(&out, 1, engine),
                expired_line,
                "{engine}: {trust:?}"
            );
        }
        let out = run(
            &future_peer.url("127.0.0.1"),
            engine,
            &["--cacert", s(&future_file)],
            None,
        );
        assert_eq!(
            one_line(&out, 1, engine),
            format!(
                "{FAILED}the server's certificate is not valid before 2099-01-01 00:00:00 UTC: set this \
                 machine's clock right (or wait), or skip the check with --insecure"
            ),
            "{engine}"
        );
    }
}

/// A CA certificate (issued by another CA) as the server's own: through
/// its CA it is refused in one line naming the fix; given itself with
/// `--cacert`, it is trusted as it is.
#[test]
fn ca_certificate_as_the_servers_own() {
    if !tools() {
        return;
    }
    let dir = Dir::new("ca-leaf");
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = params((2020, 1, 1), (2090, 1, 1));
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "Root CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let (ca_file, _) = write_pair(&dir, "ca", &ca, &ca_key);
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let mut leaf_params = params((2020, 1, 1), (2090, 1, 1));
    leaf_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    leaf_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "Intermediate as server");
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf = leaf_params.signed_by(&leaf_key, &issuer).unwrap();
    let (leaf_file, leaf_key_file) = write_pair(&dir, "leaf", &leaf, &leaf_key);
    let peer = Peer::start(&leaf_file, &leaf_key_file, &[]);
    for engine in engines() {
        let out = run(
            &peer.url("127.0.0.1"),
            engine,
            &["--cacert", s(&ca_file)],
            None,
        );
        assert_eq!(
            one_line(&out, 1, engine),
            format!(
                "{FAILED}the server presents a CA certificate (basicConstraints CA:TRUE) as its own: pass \
                 that very certificate with --cacert FILE to trust it as it is, or give the server a \
                 certificate with CA:FALSE"
            ),
            "{engine}"
        );
        run_ok(&peer.url("127.0.0.1"), engine, &["--cacert", s(&leaf_file)]);
    }
}

/// A certificate for other names: the line lists the names it has, and
/// the URL's host.
#[test]
fn wrong_name_lists_the_certificate_names() {
    if !tools() {
        return;
    }
    let dir = Dir::new("name");
    let (cert, key) = self_signed(
        &dir,
        "server",
        &["ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"],
        "/CN=example.com",
        Some("DNS:example.com,DNS:*.example.com,IP:10.0.0.1"),
    );
    let (own, _) = openssl_default(&dir, "own");
    let peer = Peer::start(&cert, &key, &[]);
    let own_peer = Peer::start(&own, &dir.path("own.key"), &[]);
    for engine in engines() {
        let out = run(
            &peer.url("127.0.0.1"),
            engine,
            &["--cacert", s(&cert)],
            None,
        );
        assert_eq!(
            one_line(&out, 1, engine),
            format!(
                "{FAILED}the server's certificate is for example.com, *.example.com, 10.0.0.1, not for \
                 127.0.0.1: use one of its names in the URL, or skip the check with --insecure"
            ),
            "{engine}"
        );
        // The pinned certificate's name is checked too (IP SAN only).
        let out = run(
            &own_peer.url("localhost"),
            engine,
            &["--cacert", s(&own)],
            None,
        );
        assert_eq!(
            one_line(&out, 1, engine),
            format!(
                "{FAILED}the server's certificate is for 127.0.0.1, not for localhost: use one of its \
                 names in the URL, or skip the check with --insecure"
            ),
            "{engine}"
        );
    }
}

/// A client certificate to make: its name, the `openssl req -newkey`
/// arguments, and the `openssl` command that re-encodes its key (if any).
type Client = (
    &'static str,
    &'static [&'static str],
    Option<&'static [&'static str]>,
);

/// Client certificates of the three key types, in the three PEM key
/// encodings.
const CLIENTS: [Client; 3] = [
    ("rsa", &["rsa:2048"], Some(&["rsa", "-traditional"])),
    (
        "ecdsa",
        &["ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"],
        Some(&["ec"]),
    ),
    ("ed25519", &["ed25519"], None),
];

/// Self-signed client certificates (RSA as PKCS#1, ECDSA as SEC1, Ed25519
/// as PKCS#8), `CA:TRUE` as OpenSSL makes them or, with `leaf`, `CA:FALSE`
/// (rustls' client verifier, like webpki's server one, refuses a CA
/// certificate as a client's own); and the file of all three as the
/// server's client CAs.
fn client_certs(dir: &Dir, leaf: bool) -> (Vec<(PathBuf, PathBuf)>, PathBuf) {
    let mut pairs = Vec::new();
    let mut all = String::new();
    for (name, newkey, convert) in CLIENTS {
        let subj = format!("/CN=client-{name}");
        let (cert, key) = if leaf {
            let (cert, key) = (
                dir.path(&format!("{name}.pem")),
                dir.path(&format!("{name}.key")),
            );
            let mut args = vec!["req", "-x509", "-newkey"];
            args.extend_from_slice(newkey);
            args.extend_from_slice(&["-nodes", "-keyout", s(&key), "-out", s(&cert)]);
            args.extend_from_slice(&["-subj", &subj, "-days", "30"]);
            args.extend_from_slice(&["-addext", "basicConstraints=critical,CA:FALSE"]);
            openssl(&args);
            (cert, key)
        } else {
            self_signed(dir, name, newkey, &subj, None)
        };
        if let Some(convert) = convert {
            let converted = dir.path(&format!("{name}-converted.key"));
            let mut args = convert.to_vec();
            args.extend_from_slice(&["-in", s(&key), "-out", s(&converted)]);
            openssl(&args);
            std::fs::rename(&converted, &key).unwrap();
        }
        all.push_str(&std::fs::read_to_string(&cert).unwrap());
        pairs.push((cert, key));
    }
    let ca = dir.path("client-ca.pem");
    std::fs::write(&ca, all).unwrap();
    (pairs, ca)
}

/// A server that requires a client certificate: without `--cert/--key`
/// one line names the flags; with them (RSA, ECDSA or Ed25519) the run
/// succeeds; a certificate the server does not trust is one line too.
#[test]
fn server_requiring_a_client_certificate() {
    if !tools() {
        return;
    }
    let dir = Dir::new("mtls");
    let (cert, key) = openssl_default(&dir, "server");
    let (clients, client_ca) = client_certs(&dir, false);
    let (stranger, stranger_key) =
        self_signed(&dir, "stranger", &["ed25519"], "/CN=stranger", None);
    let peer = Peer::start(&cert, &key, &["--client-ca", s(&client_ca)]);
    let url = peer.url("127.0.0.1");
    for engine in engines() {
        let out = run(&url, engine, &["--cacert", s(&cert)], None);
        assert_eq!(
            one_line(&out, 1, engine),
            format!("{FAILED}the server asks for a client certificate: give one with --cert FILE --key FILE (PEM)"),
            "{engine}"
        );
        for (c, k) in &clients {
            run_ok(
                &url,
                engine,
                &["--cacert", s(&cert), "--cert", s(c), "--key", s(k)],
            );
        }
        let out = run(
            &url,
            engine,
            &[
                "--cacert",
                s(&cert),
                "--cert",
                s(&stranger),
                "--key",
                s(&stranger_key),
            ],
            None,
        );
        assert_eq!(
            one_line(&out, 1, engine),
            format!(
                "{FAILED}the server refused the client certificate of --cert (alert unknown_ca): give one \
                 signed by a CA the server trusts"
            ),
            "{engine}"
        );
    }
}

/// Client certificates signed by a CA the way most tutorials do it:
/// `openssl x509 -req -CA ... -CAcreateserial` without an extensions file
/// makes an X.509 v1 certificate (OpenSSL 3), with one a v3 one. RSA and
/// ECDSA P-256, v1 and v3: each pair is accepted by `--cert/--key` and by
/// a server requiring a client certificate, on both engines; a key that
/// belongs to another certificate is still the one-line refusal.
#[test]
fn ca_signed_v1_and_v3_client_certificates() {
    if !tools() {
        return;
    }
    let dir = Dir::new("ca-signed");
    let (cert, key) = openssl_default(&dir, "server");
    let (ca, ca_key) = self_signed(&dir, "ca", &["rsa:2048"], "/CN=client-ca", None);
    let ext = dir.path("v3.ext");
    std::fs::write(
        &ext,
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n",
    )
    .unwrap();
    let kinds: [(&str, &[&str]); 2] = [
        ("rsa", &["rsa:2048"]),
        ("p256", &["ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]),
    ];
    let mut pairs = Vec::new();
    for (kind, newkey) in kinds {
        let (csr, ckey) = (
            dir.path(&format!("{kind}.csr")),
            dir.path(&format!("{kind}.key")),
        );
        let mut args = vec!["req", "-new", "-newkey"];
        args.extend_from_slice(newkey);
        args.extend_from_slice(&["-nodes", "-keyout", s(&ckey), "-out", s(&csr)]);
        let subj = format!("/CN=client-{kind}");
        args.extend_from_slice(&["-subj", &subj]);
        openssl(&args);
        for version in ["v1", "v3"] {
            let ccert = dir.path(&format!("{kind}-{version}.pem"));
            let mut args = vec!["x509", "-req", "-in", s(&csr), "-CA", s(&ca)];
            args.extend_from_slice(&["-CAkey", s(&ca_key), "-CAcreateserial"]);
            args.extend_from_slice(&["-out", s(&ccert), "-days", "2"]);
            if version == "v3" {
                args.extend_from_slice(&["-extfile", s(&ext)]);
            }
            openssl(&args);
            let text = Command::new("openssl")
                .args(["x509", "-noout", "-text", "-in", s(&ccert)])
                .output()
                .unwrap();
            let want = if version == "v1" {
                "Version: 1 (0x0)"
            } else {
                "Version: 3 (0x2)"
            };
            assert!(
                String::from_utf8_lossy(&text.stdout).contains(want),
                "{kind} {version}: openssl did not make a {want} certificate"
            );
            pairs.push((ccert, ckey.clone()));
        }
    }
    let peer = Peer::start(&cert, &key, &["--client-ca", s(&ca)]);
    let url = peer.url("127.0.0.1");
    for engine in engines() {
        for (c, k) in &pairs {
            run_ok(
                &url,
                engine,
                &["--cacert", s(&cert), "--cert", s(c), "--key", s(k)],
            );
        }
    }
    // The RSA v1 certificate with the other RSA key of the directory: the
    // keys differ (both of one type, so only the comparison can tell).
    let other = dir.path("other.key");
    openssl(&["genrsa", "-out", s(&other), "2048"]);
    for (c, k) in [(&pairs[0].0, &other), (&pairs[2].0, &pairs[0].1)] {
        let out = run(
            &url,
            "std",
            &["--cacert", s(&cert), "--cert", s(c), "--key", s(k)],
            None,
        );
        assert_eq!(
            one_line(&out, 2, "std"),
            format!(
                "metronome: --key {} does not belong to the certificate of --cert {} (their public keys differ)",
                s(k),
                s(c)
            )
        );
    }
}

/// metronome's own server with `--client-ca` (rustls' client verifier):
/// `run --cert/--key` passes, and without them the run ends in one line.
#[test]
fn serve_client_ca_requires_the_certificate() {
    if !tools() {
        return;
    }
    let dir = Dir::new("serve-mtls");
    let (clients, client_ca) = client_certs(&dir, true);
    let tls = metronome::tls::ServerTls::self_signed_for(Some(&client_ca)).unwrap();
    let server_pem = dir.path("serve.pem");
    std::fs::write(&server_pem, &tls.cert_pem).unwrap();
    let srv = server(ServeConfig {
        service: Duration::ZERO,
        tls: Some(TlsServer(Arc::clone(&tls.config))),
        ..ServeConfig::default()
    });
    let url = format!("https://{}/", srv.addr());
    for engine in engines() {
        for (c, k) in &clients {
            run_ok(
                &url,
                engine,
                &["--cacert", s(&server_pem), "--cert", s(c), "--key", s(k)],
            );
        }
        let out = run(&url, engine, &["--cacert", s(&server_pem)], None);
        assert_eq!(
            one_line(&out, 1, engine),
            format!("{FAILED}the server asks for a client certificate: give one with --cert FILE --key FILE (PEM)"),
            "{engine}"
        );
    }
    srv.stop();
}

/// Unusable `--cert/--key`: exit 2 and one line naming the file.
#[test]
fn bad_client_certificate_files_exit_2() {
    if !tools() {
        return;
    }
    let dir = Dir::new("bad-files");
    let (clients, _) = client_certs(&dir, false);
    let (rsa, rsa_key) = &clients[0];
    let (_, ec_key) = &clients[1];
    let missing = dir.path("missing.pem");
    let url = "https://127.0.0.1:9/";
    let encrypted = dir.path("encrypted.key");
    openssl(&[
        "pkcs8",
        "-topk8",
        "-in",
        s(ec_key),
        "-out",
        s(&encrypted),
        "-passout",
        "pass:x",
    ]);
    let cases: [(&[&str], String); 5] = [
        (
            &["--cert", s(rsa), "--key", s(&encrypted)],
            format!(
                "metronome: --key {}: the key is encrypted (BEGIN ENCRYPTED PRIVATE KEY); metronome reads \
                 unencrypted keys: decrypt it with `openssl pkey -in KEY -out PLAIN.key`",
                s(&encrypted)
            ),
        ),
        (
            &["--cert", s(rsa), "--key", s(ec_key)],
            format!(
                "metronome: --key {} does not belong to the certificate of --cert {} (their public keys differ)",
                s(ec_key),
                s(rsa)
            ),
        ),
        (
            &["--cert", s(&missing), "--key", s(rsa_key)],
            format!("metronome: --cert {}: No such file or directory (os error 2)", s(&missing)),
        ),
        (
            &["--cert", s(rsa), "--key", s(&missing)],
            format!("metronome: --key {}: No such file or directory (os error 2)", s(&missing)),
        ),
        (
            &["--cert", s(rsa), "--key", s(rsa)],
            format!(
                "metronome: --key {}: no PEM private key (BEGIN PRIVATE KEY, BEGIN RSA PRIVATE KEY or BEGIN EC \
                 PRIVATE KEY) in the file",
                s(rsa)
            ),
        ),
    ];
    for (args, want) in &cases {
        let out = run(url, "std", args, None);
        assert_eq!(one_line(&out, 2, "std"), *want);
    }
}

/// `SSLKEYLOGFILE`: the session keys are appended to the file (NSS key
/// log lines), `connections.keylog` is true and a warning says so.
#[test]
fn sslkeylogfile_is_honoured_and_reported() {
    if !tools() {
        return;
    }
    let dir = Dir::new("keylog");
    let (cert, key) = openssl_default(&dir, "server");
    let peer = Peer::start(&cert, &key, &[]);
    for engine in engines() {
        let log = dir.path(&format!("keys-{engine}.log"));
        let out = Command::new(env!("CARGO_BIN_EXE_metronome"))
            .args(["run", &peer.url("127.0.0.1"), "--engine", engine])
            .args(["--rate", "10", "--duration", "200ms", "--connections", "2"])
            .args(["--quiet", "--format", "json", "--cacert", s(&cert)])
            .env("SSLKEYLOGFILE", &log)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{engine}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: Report = serde_json::from_slice(&out.stdout).unwrap();
        assert!(r.connections.keylog, "{engine}");
        assert!(
            r.generator
                .warnings
                .iter()
                .any(|w| w
                    .starts_with("SSLKEYLOGFILE: the TLS session keys of this run were appended")),
            "{engine}: {:?}",
            r.generator.warnings
        );
        let text = std::fs::read_to_string(&log).unwrap();
        // TLS 1.3: five secrets per handshake, one per line.
        let traffic = text
            .lines()
            .filter(|l| l.starts_with("CLIENT_TRAFFIC_SECRET_0 "))
            .count();
        assert_eq!(
            traffic as u64, r.generator.connections_opened,
            "{engine}: {text}"
        );
        assert_eq!(
            text.lines().count() as u64,
            5 * r.generator.connections_opened,
            "{engine}"
        );
    }
    // A file that cannot be opened for appending: exit 2, one line.
    let bad = dir.path("no-such-dir/keys.log");
    let out = Command::new(env!("CARGO_BIN_EXE_metronome"))
        .args([
            "run",
            &peer.url("127.0.0.1"),
            "--cacert",
            s(&cert),
            "--quiet",
        ])
        .env("SSLKEYLOGFILE", &bad)
        .output()
        .unwrap();
    assert_eq!(
        one_line(&out, 2, "std"),
        format!(
            "metronome: SSLKEYLOGFILE={}: cannot open it to append the TLS keys: No such file or directory (os error 2)",
            s(&bad)
        )
    );
}

/// A server that speaks only TLS 1.1, or TLS 1.2 with ciphers metronome
/// lacks: one line each, naming what metronome speaks.
#[test]
fn version_and_cipher_mismatch_are_one_line() {
    if !tools() {
        return;
    }
    let dir = Dir::new("mismatch");
    let (cert, key) = openssl_default(&dir, "server");
    let old = Peer::start(&cert, &key, &["--tls11"]);
    let cbc = Peer::start(&cert, &key, &["--tls12-ciphers", "AES128-SHA"]);
    for engine in engines() {
        let out = run(&old.url("127.0.0.1"), engine, &["--cacert", s(&cert)], None);
        assert_eq!(
            one_line(&out, 1, engine),
            format!(
                "{FAILED}the server and metronome share no TLS version (metronome speaks TLS 1.2 and 1.3): \
                 enable one of them on the server"
            ),
            "{engine}"
        );
        let out = run(&cbc.url("127.0.0.1"), engine, &["--cacert", s(&cert)], None);
        assert_eq!(
            one_line(&out, 1, engine),
            format!(
                "{FAILED}the server refused the handshake: no cipher suite, key exchange group or signature \
                 scheme in common (metronome offers TLS 1.3 and TLS 1.2 ECDHE suites with AES-GCM or \
                 ChaCha20-Poly1305): enable one on the server"
            ),
            "{engine}"
        );
    }
}

/// The report names the TLS version and ALPN protocol as a TLS stack
/// metronome did not write (OpenSSL, by Python's ssl) agreed them: TLS 1.3
/// by default, TLS 1.2 when the server allows no more; no ALPN when the
/// server sets none, `http/1.1` when it offers it. Every handshake counted
/// (2 connections).
#[test]
fn tls_version_and_alpn_as_the_peer_agreed() {
    if !tools() {
        return;
    }
    let dir = Dir::new("agreed");
    let (cert, key) = openssl_default(&dir, "server");
    let plain = Peer::start(&cert, &key, &[]);
    let alpn = Peer::start(&cert, &key, &["--alpn", "http/1.1"]);
    let tls12 = Peer::start(
        &cert,
        &key,
        &["--tls12-ciphers", "ECDHE-RSA-AES128-GCM-SHA256"],
    );
    let map = |pairs: &[(&str, u64)]| -> std::collections::BTreeMap<String, u64> {
        pairs.iter().map(|&(k, n)| (k.to_string(), n)).collect()
    };
    for engine in engines() {
        for (peer, version, chosen) in [
            (&plain, "TLSv1.3", "none"),
            (&alpn, "TLSv1.3", "http/1.1"),
            (&tls12, "TLSv1.2", "none"),
        ] {
            let r = run_ok(&peer.url("127.0.0.1"), engine, &["--cacert", s(&cert)]);
            let shakes = r.connections.tls_handshake.as_ref().map_or(0, |m| m.count);
            assert!(shakes >= 2, "{engine}: {:?}", r.connections);
            assert_eq!(r.protocol.as_deref(), Some("http/1.1"), "{engine}");
            assert_eq!(
                r.connections.tls_versions,
                map(&[(version, shakes)]),
                "{engine}"
            );
            assert_eq!(r.connections.alpn, map(&[(chosen, shakes)]), "{engine}");
        }
    }
}
