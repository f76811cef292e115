//! The TLS session itself: `SSLKEYLOGFILE` honoured and reported, version
//! and cipher mismatches as one line, and the version and ALPN the peer
//! agreed in the report.

use super::*;

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
