//! The Python HTTP/3 servers the tests run against (tests/h3_server.py,
//! tests/h3_hostile.py, both on aioquic 1.7.2): whether aioquic is there,
//! a self-signed certificate and key as PEM files for them, and a server
//! process ([`PyQuicServer`]) started with its port read from its first
//! line and what it printed at exit read back when it stops.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};

/// aioquic imports; else a visible skip, except under CI (`CI=true`, where
/// `.ci/run` installs it): there a missing aioquic fails the test.
pub fn aioquic() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import aioquic"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI must install aioquic (pip install aioquic==1.7.2)"
        );
        eprintln!("SKIP: aioquic is not installed (pip install aioquic==1.7.2)");
    }
    ok
}

/// A self-signed certificate for 127.0.0.1 and its key, as PEM files;
/// removed on drop.
pub struct QuicCert {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl QuicCert {
    /// A fresh certificate; `tag` keeps the files of concurrent tests apart.
    pub fn new(tag: &str) -> QuicCert {
        let ck = rcgen::generate_simple_self_signed(vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
        ])
        .expect("a self-signed certificate");
        let base = std::env::temp_dir().join(format!("metronome-h3-{}-{tag}", std::process::id()));
        let cert = base.with_extension("cert.pem");
        let key = base.with_extension("key.pem");
        std::fs::write(&cert, ck.cert.pem()).expect("write the certificate");
        std::fs::write(&key, ck.signing_key.serialize_pem()).expect("write the key");
        QuicCert { cert, key }
    }

    /// The certificate's path, for `--cacert`.
    pub fn cacert(&self) -> &str {
        self.cert.to_str().expect("a UTF-8 temporary path")
    }
}

impl Drop for QuicCert {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.cert);
        let _ = std::fs::remove_file(&self.key);
    }
}

/// `python3 tests/SCRIPT CERT KEY ARGS...`, running: it prints its UDP
/// port first. Killed on drop; [`PyQuicServer::events`] closes its stdin
/// (the scripts' signal to print what they saw and exit) and returns what
/// it printed after the port.
pub struct PyQuicServer {
    child: Child,
    stdout: BufReader<ChildStdout>,
    pub port: u16,
}

impl PyQuicServer {
    /// Starts `tests/{script}` with `cert` and `args`; waits for its port.
    pub fn start(script: &str, cert: &QuicCert, args: &[&str]) -> PyQuicServer {
        let path = format!("{}/tests/{script}", env!("CARGO_MANIFEST_DIR"));
        let mut child = Command::new("python3")
            .arg(&path)
            .arg(&cert.cert)
            .arg(&cert.key)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("run python3");
        let mut stdout = BufReader::new(child.stdout.take().expect("a piped stdout"));
        let mut line = String::new();
        stdout
            .read_line(&mut line)
            .expect("the server prints its port");
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{script} printed '{line}', not a port"));
        PyQuicServer {
            child,
            stdout,
            port,
        }
    }

    /// `https://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}/", self.port)
    }

    /// Stops the server (its stdin closed) and returns the lines it
    /// printed after its port, in order, until it exited.
    pub fn events(&mut self) -> Vec<String> {
        drop(self.child.stdin.take());
        let mut rest = String::new();
        let _ = self.stdout.read_to_string(&mut rest);
        let _ = self.child.wait();
        rest.lines().map(str::to_string).collect()
    }
}

impl Drop for PyQuicServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
