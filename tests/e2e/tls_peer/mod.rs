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

// The server's certificate: self-signed, untrusted, dated, CA, wrong name.
mod server;
// Client certificates: required, CA-signed v1 and v3, bad files.
mod client;
// SSLKEYLOGFILE, version and cipher mismatch, the agreed version and ALPN.
mod session;

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
