//! The server's certificate against Python's `ssl`: OpenSSL's default
//! self-signed one with `--cacert`, an untrusted one, expired and not yet
//! valid ones naming their dates, a CA certificate as the server's own, and
//! a wrong name listing the certificate's names.

use super::*;

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
