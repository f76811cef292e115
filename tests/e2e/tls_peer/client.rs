//! Client certificates against a server that requires one: the refusal
//! without one, CA-signed v1 and v3 certificates accepted, `serve
//! --client-ca` requiring it, and bad certificate files exiting 2.

use super::*;

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
