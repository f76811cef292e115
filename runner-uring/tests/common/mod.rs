//! A small loopback HTTP/1.1 server for the engine tests: std threads,
//! bounded lifetime, configurable delay, silence, stall and `Connection: close`.
//! Also the workspace's `tests/zero_alloc_loop.rs` uses it (both engines).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use metronome_core::plan::{example_plan, Plan};

/// The request every test sends.
pub const REQ: &[u8] = b"GET / HTTP/1.1\r\nHost: test\r\n\r\n";
/// The request list of every test plan.
pub static REQS: [&[u8]; 1] = [REQ];

/// How the server answers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Behaviour {
    /// Delay before each answer.
    pub delay: Duration,
    /// Never answer.
    pub silent: bool,
    /// Answer with `Connection: close` and close.
    pub close: bool,
    /// Answer nothing during `[start, start + len)` after the server start;
    /// requests arriving then are answered at its end.
    pub stall: Option<(Duration, Duration)>,
}

/// A running server; stops when dropped (or after 20 s).
pub struct Server {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    pub requests: Arc<AtomicU64>,
    handle: Option<JoinHandle<()>>,
}

impl Server {
    pub fn start(b: Behaviour) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicU64::new(0));
        let (stop2, requests2) = (stop.clone(), requests.clone());
        let handle = std::thread::spawn(move || {
            let born = Instant::now();
            let mut conns = Vec::new();
            while !stop2.load(Ordering::Relaxed) && born.elapsed() < Duration::from_secs(20) {
                match listener.accept() {
                    Ok((s, _)) => {
                        let (stop, requests) = (stop2.clone(), requests2.clone());
                        conns.push(std::thread::spawn(move || {
                            serve(s, b, born, stop, requests)
                        }));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            }
            stop2.store(true, Ordering::Relaxed);
            for c in conns {
                let _ = c.join();
            }
        });
        Server {
            addr,
            stop,
            requests,
            handle: Some(handle),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn serve(
    mut s: TcpStream,
    b: Behaviour,
    born: Instant,
    stop: Arc<AtomicBool>,
    requests: Arc<AtomicU64>,
) {
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    while !stop.load(Ordering::Relaxed) {
        match s.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(_) => continue,
        }
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            requests.fetch_add(1, Ordering::Relaxed);
            if b.silent {
                continue;
            }
            let mut at = Instant::now() + b.delay;
            if let Some((start, len)) = b.stall {
                let (from, to) = (born + start, born + start + len);
                if at >= from && at < to {
                    at = to;
                }
            }
            let wait = at.saturating_duration_since(Instant::now());
            if !wait.is_zero() {
                std::thread::sleep(wait);
            }
            let reply: &[u8] = if b.close {
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
            } else {
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
            };
            if s.write_all(reply).is_err() {
                return;
            }
            if b.close {
                return;
            }
        }
    }
}

/// A plan against `addr`: constant `rate` for `duration`, no warmup, 1 s timeout.
pub fn plan(addr: SocketAddr, rate: f64, duration: Duration) -> Plan<'static> {
    let mut p = example_plan();
    p.addr = addr;
    p.requests = &REQS;
    p.rate = rate;
    p.duration_ns = duration.as_nanos() as u64;
    p.warmup_ns = 0;
    p.connections = 4;
    p.max_connections = 64;
    p.timeout_ns = 1_000_000_000;
    p.interval_ns = 250_000_000;
    p
}

/// True when io_uring works here; otherwise says so visibly.
#[cfg(target_os = "linux")]
pub fn uring_available() -> bool {
    match metronome_uring::probe() {
        Ok(()) => true,
        Err(e) => {
            eprintln!("SKIPPED: io_uring is not available here: {e}");
            false
        }
    }
}

/// A loopback HTTPS server (rustls, a fresh self-signed certificate for
/// `localhost`) answering `200 ok` to every request head; stops when
/// dropped (or after 20 s). `client` trusts its certificate.
pub struct TlsServer {
    pub addr: SocketAddr,
    pub client: metronome_core::engine::tls::Tls,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl TlsServer {
    pub fn start() -> TlsServer {
        use rustls::pki_types::{PrivateKeyDer, ServerName};
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let key = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let cert = key.cert.der().clone();
        let server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.clone()],
                PrivateKeyDer::try_from(key.signing_key.serialize_der()).unwrap(),
            )
            .unwrap();
        let server = Arc::new(server);
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).unwrap();
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let handle = std::thread::spawn(move || {
            let born = Instant::now();
            let mut conns = Vec::new();
            while !stop2.load(Ordering::Relaxed) && born.elapsed() < Duration::from_secs(20) {
                match listener.accept() {
                    Ok((s, _)) => {
                        let (stop, config) = (stop2.clone(), server.clone());
                        conns.push(std::thread::spawn(move || serve_tls(s, config, stop)));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            }
            stop2.store(true, Ordering::Relaxed);
            for c in conns {
                let _ = c.join();
            }
        });
        TlsServer {
            addr,
            client: metronome_core::engine::tls::Tls::new(
                Arc::new(client),
                ServerName::try_from("localhost").unwrap(),
                Arc::default(),
            ),
            stop,
            handle: Some(handle),
        }
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn serve_tls(s: TcpStream, config: Arc<rustls::ServerConfig>, stop: Arc<AtomicBool>) {
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
    let Ok(conn) = rustls::ServerConnection::new(config) else {
        return;
    };
    let mut tls = rustls::StreamOwned::new(conn, s);
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    while !stop.load(Ordering::Relaxed) {
        match tls.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(_) => return,
        }
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            if tls
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .is_err()
            {
                return;
            }
        }
    }
}
