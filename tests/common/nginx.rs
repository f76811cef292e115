//! nginx as a peer server nobody here wrote, started per test on loopback
//! from a temporary prefix with the `server` blocks a test gives, its
//! access log read back; and a self-signed certificate for given names,
//! made by the `openssl` command. Used by the tests of `--connect-to`,
//! `--resolve` and the response checks (tests/e2e/connect_to.rs,
//! tests/e2e/checks.rs).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// nginx, found on PATH or in /usr/sbin; else a visible skip, except
/// under CI (`CI=true`, where `.ci/run` installs it): there a failure.
pub fn binary(test: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.push("/usr/sbin".into());
    let found = dirs
        .into_iter()
        .map(|d| d.join("nginx"))
        .find(|p| p.is_file());
    if found.is_none() {
        skip_outside_ci(&format!("{test}: nginx is not installed"));
    }
    found
}

/// A visible skip; under CI, where `.ci/run` installs every peer, a
/// failure.
pub fn skip_outside_ci(why: &str) {
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI must install it (apt-get install nginx openssl): {why}"
    );
    eprintln!("SKIP {why}");
}

/// A running nginx, killed (by its own child handle) on drop.
pub struct Nginx {
    child: Child,
    dir: PathBuf,
    /// The loopback port it listens on.
    pub port: u16,
}

impl Nginx {
    /// Starts nginx with `servers`, the `server { ... }` blocks of its
    /// `http` section, in which `{port}` is the free loopback port picked
    /// and `{dir}` its prefix directory. The access log is
    /// `{dir}/access.log` in the format `log_format line` the caller gives
    /// as `log`.
    pub fn start(bin: &Path, tag: &str, log: &str, servers: &str) -> Nginx {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = std::env::temp_dir().join(format!(
            "metronome-nginx-{tag}-{}-{port}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let d = dir.display().to_string();
        let servers = servers
            .replace("{port}", &port.to_string())
            .replace("{dir}", &d);
        let conf = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
             error_log {d}/error.log warn;\nevents {{ worker_connections 256; }}\n\
             http {{\n log_format line '{log}';\n access_log {d}/access.log line;\n\
             client_body_temp_path {d}/body;\n proxy_temp_path {d}/proxy;\n\
             fastcgi_temp_path {d}/fastcgi;\n uwsgi_temp_path {d}/uwsgi;\n\
             scgi_temp_path {d}/scgi;\n{servers}\n}}\n"
        );
        let path = dir.join("nginx.conf");
        std::fs::write(&path, conf).unwrap();
        let child = Command::new(bin)
            .arg("-c")
            .arg(&path)
            .arg("-p")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nginx");
        let until = Instant::now() + Duration::from_secs(5);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < until,
                "nginx did not start: see {d}/error.log"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Nginx { child, dir, port }
    }

    /// The prefix directory (files the servers serve go here).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The access log's lines so far.
    pub fn log(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("access.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A self-signed certificate for the DNS `names` (and no address) with
/// its key, as `cert.pem` and `key.pem` in `dir`; `false` when openssl is
/// missing (a visible skip outside CI).
pub fn certificate(dir: &Path, names: &[&str]) -> bool {
    std::fs::create_dir_all(dir).unwrap();
    let san: Vec<String> = names.iter().map(|n| format!("DNS:{n}")).collect();
    let ok = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN={}", names[0]),
            "-addext",
            &format!("subjectAltName={}", san.join(",")),
        ])
        .arg("-keyout")
        .arg(dir.join("key.pem"))
        .arg("-out")
        .arg(dir.join("cert.pem"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        skip_outside_ci("openssl is not installed");
    }
    ok
}
