//! The scripted server.
//!
//! Each server binds `127.0.0.1:0`, runs one thread per connection (at most
//! [`MAX_CONNS`]), reads with a short timeout so every thread sees the stop
//! flag and ends by itself (at the latest after [`CONN_LIFE`]), and is
//! stopped and joined at the end of its run.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::common::TestCert;

/// The longest any connection thread lives, whatever the client does.
pub(crate) const CONN_LIFE: Duration = Duration::from_secs(30);
/// The longest a server accepts connections.
pub(crate) const SERVER_LIFE: Duration = Duration::from_secs(60);
/// Connections a server serves; later ones are closed at once.
pub(crate) const MAX_CONNS: u64 = 256;
/// A connection thread's read and write timeout: how often it looks at the
/// stop flag.
pub(crate) const SLICE: Duration = Duration::from_millis(10);

/// What a server saw, over all its connections.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    pub(crate) accepted: AtomicU64,
    /// Connections that carried at least one request.
    pub(crate) used: AtomicU64,
    pub(crate) requests: AtomicU64,
    pub(crate) resets: AtomicU64,
}

/// The counts once the server stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) accepted: u64,
    pub(crate) used: u64,
    pub(crate) requests: u64,
    pub(crate) resets: u64,
}

/// A connection's script: what the server does on it, from accept to close
/// (returning closes the connection).
pub(crate) type Script = Arc<dyn Fn(&mut Peer) + Send + Sync>;

pub(crate) fn script(f: impl Fn(&mut Peer) + Send + Sync + 'static) -> Script {
    Arc::new(f)
}

/// Answers every request of every connection with `bytes`, in one write.
pub(crate) fn answer(bytes: impl Into<Vec<u8>>) -> Script {
    let bytes = bytes.into();
    script(move |p| {
        while p.request().is_some() {
            if !p.send(&bytes) {
                break;
            }
        }
    })
}

/// Reads one request, answers it with `bytes` and closes the connection.
pub(crate) fn answer_once_then_close(bytes: impl Into<Vec<u8>>) -> Script {
    let bytes = bytes.into();
    script(move |p| {
        if p.request().is_some() {
            p.send(&bytes);
        }
    })
}

thread_local! {
    /// Servers started on this thread speak TLS (see [`over_tls`]).
    static OVER_TLS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `test` with every scripted server speaking TLS (a fresh
/// self-signed certificate each, trusted with `--cacert`): the same
/// scripts, the same expected outcomes, over HTTPS.
pub(crate) fn over_tls(test: fn()) {
    OVER_TLS.with(|t| t.set(true));
    test();
    OVER_TLS.with(|t| t.set(false));
}

/// A raw TCP server on 127.0.0.1 running `script` on each connection
/// (over TLS when [`over_tls`] says so).
pub(crate) struct Server {
    pub(crate) addr: SocketAddr,
    /// The certificate, when the server speaks TLS.
    pub(crate) cert: Option<Arc<TestCert>>,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) counts: Arc<Counts>,
    pub(crate) accept: Option<JoinHandle<()>>,
}

impl Server {
    pub(crate) fn start(script: Script) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(Counts::default());
        let cert = OVER_TLS
            .with(|t| t.get())
            .then(|| Arc::new(TestCert::new()));
        let accept = {
            let (stop, counts) = (stop.clone(), counts.clone());
            let tls = cert.as_ref().map(|c| c.tls.config.clone());
            thread::spawn(move || {
                let born = Instant::now();
                let mut conns = Vec::new();
                while !stop.load(Relaxed) && born.elapsed() < SERVER_LIFE {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let index = counts.accepted.fetch_add(1, Relaxed);
                            if index >= MAX_CONNS {
                                continue;
                            }
                            let mut peer = Peer::new(stream, stop.clone(), counts.clone());
                            peer.index = index;
                            if let Some(config) = &tls {
                                peer.secure(config.clone());
                            }
                            let script = script.clone();
                            conns.push(thread::spawn(move || script(&mut peer)));
                        }
                        Err(_) => thread::sleep(Duration::from_millis(1)),
                    }
                }
                drop(listener);
                for c in conns {
                    let _ = c.join();
                }
            })
        };
        Server {
            addr,
            cert,
            stop,
            counts,
            accept: Some(accept),
        }
    }

    /// Stops accepting, ends every connection thread and joins them.
    pub(crate) fn stop(mut self) -> Seen {
        self.halt();
        Seen {
            accepted: self.counts.accepted.load(Relaxed),
            used: self.counts.used.load(Relaxed),
            requests: self.counts.requests.load(Relaxed),
            resets: self.counts.resets.load(Relaxed),
        }
    }

    pub(crate) fn halt(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.halt();
    }
}

/// One request as the server read it.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) method: String,
}

/// A connection's bytes: plain, or through a TLS server session.
pub(crate) enum Io {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ServerConnection, TcpStream>>),
}

impl Io {
    pub(crate) fn socket(&self) -> &TcpStream {
        match self {
            Io::Plain(s) => s,
            Io::Tls(t) => &t.sock,
        }
    }
}

impl Read for Io {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Io::Plain(s) => s.read(buf),
            Io::Tls(t) => t.read(buf),
        }
    }
}

impl Write for Io {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            Io::Plain(s) => s.write(bytes),
            // One TLS record per write, sent at once: a split write stays
            // split. Once rustls has taken the `n` bytes they are written:
            // a flush that meets the write timeout (a slow reader) must
            // not fail the write, or the caller would write them again.
            // `Peer::send` flushes the rest.
            Io::Tls(t) => {
                let n = t.write(bytes)?;
                match t.flush() {
                    Err(e) if !transient(&e) => Err(e),
                    _ => Ok(n),
                }
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Io::Plain(s) => s.flush(),
            Io::Tls(t) => t.flush(),
        }
    }
}

/// The server's side of one connection.
pub(crate) struct Peer {
    /// `None` once reset.
    pub(crate) stream: Option<Io>,
    pub(crate) buf: Vec<u8>,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) counts: Arc<Counts>,
    pub(crate) born: Instant,
    /// Reads give up after this (see [`Peer::request_within`]).
    pub(crate) deadline: Option<Instant>,
    /// Requests read on this connection.
    pub(crate) served: u64,
    /// This connection's place in accept order (0 for the first).
    pub(crate) index: u64,
}

impl Peer {
    pub(crate) fn new(stream: TcpStream, stop: Arc<AtomicBool>, counts: Arc<Counts>) -> Peer {
        stream.set_nonblocking(false).unwrap();
        stream.set_nodelay(true).unwrap();
        stream.set_read_timeout(Some(SLICE)).unwrap();
        stream.set_write_timeout(Some(SLICE)).unwrap();
        Peer {
            stream: Some(Io::Plain(stream)),
            buf: Vec::new(),
            stop,
            counts,
            born: Instant::now(),
            deadline: None,
            served: 0,
            index: 0,
        }
    }

    /// Speaks TLS on this connection from now on (the handshake runs
    /// within the first read or write).
    pub(crate) fn secure(&mut self, config: Arc<rustls::ServerConfig>) {
        if let Some(Io::Plain(s)) = self.stream.take() {
            let conn = rustls::ServerConnection::new(config).expect("a TLS server session");
            self.stream = Some(Io::Tls(Box::new(rustls::StreamOwned::new(conn, s))));
        }
    }

    /// The server is stopping, or this connection lived long enough.
    pub(crate) fn over(&self) -> bool {
        self.stop.load(Relaxed)
            || self.born.elapsed() > CONN_LIFE
            || self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// The next request if it arrives within `wait`.
    pub(crate) fn request_within(&mut self, wait: Duration) -> Option<Request> {
        self.deadline = Some(Instant::now() + wait);
        let req = self.request();
        self.deadline = None;
        req
    }

    /// Reads the next request (its head and its Content-Length body);
    /// `None` when the client closed, the connection failed, or the server
    /// is stopping.
    pub(crate) fn request(&mut self) -> Option<Request> {
        loop {
            if let Some((len, method)) = parse_request(&self.buf) {
                if self.buf.len() >= len {
                    self.buf.drain(..len);
                    self.counted();
                    return Some(Request { method });
                }
            }
            if !self.fill() {
                return None;
            }
        }
    }

    /// Reads until a request head has arrived, not its body; false when
    /// the client closed first.
    pub(crate) fn head(&mut self) -> bool {
        while !self.buf.windows(4).any(|w| w == b"\r\n\r\n") {
            if !self.fill() {
                return false;
            }
        }
        self.counted();
        true
    }

    /// Counts a request read on this connection.
    pub(crate) fn counted(&mut self) {
        self.counts.requests.fetch_add(1, Relaxed);
        if self.served == 0 {
            self.counts.used.fetch_add(1, Relaxed);
        }
        self.served += 1;
    }

    /// One read into the buffer: false at the client's close, on an error
    /// or when the server is stopping.
    pub(crate) fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if self.over() {
                return false;
            }
            let Some(stream) = self.stream.as_mut() else {
                return false;
            };
            match stream.read(&mut chunk) {
                Ok(0) => return false,
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return true;
                }
                Err(e) if transient(&e) => {}
                Err(_) => return false,
            }
        }
    }

    /// Writes all of `bytes`; false when the connection failed (the client
    /// went away) or the server is stopping.
    pub(crate) fn send(&mut self, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            if self.over() {
                return false;
            }
            let Some(stream) = self.stream.as_mut() else {
                return false;
            };
            match stream.write(bytes) {
                Ok(0) => return false,
                Ok(n) => bytes = &bytes[n..],
                Err(e) if transient(&e) => {}
                Err(_) => return false,
            }
        }
        // Over TLS, what rustls still holds leaves now (one write, one
        // record, sent at once).
        loop {
            if self.over() {
                return false;
            }
            let Some(stream) = self.stream.as_mut() else {
                return false;
            };
            match stream.flush() {
                Ok(()) => return true,
                Err(e) if transient(&e) => {}
                Err(_) => return false,
            }
        }
    }

    /// Writes `bytes` one byte per write, `gap` apart.
    pub(crate) fn trickle(&mut self, bytes: &[u8], gap: Duration) -> bool {
        for b in bytes {
            if !self.send(std::slice::from_ref(b)) {
                return false;
            }
            thread::sleep(gap);
        }
        true
    }

    pub(crate) fn pause(&self, d: Duration) {
        thread::sleep(d);
    }

    /// Resets the connection: `SO_LINGER` 0, then close, so the kernel
    /// sends a RST (and drops anything unsent).
    pub(crate) fn reset(&mut self) {
        if let Some(stream) = self.stream.take() {
            set_linger_zero(stream.socket());
            drop(stream);
            self.counts.resets.fetch_add(1, Relaxed);
        }
    }

    /// Half-closes: no more bytes from the server; it still reads.
    pub(crate) fn shutdown_write(&mut self) {
        if let Some(s) = self.stream.as_mut() {
            if let Io::Tls(t) = s {
                t.conn.send_close_notify();
                let _ = t.flush();
            }
            let _ = s.socket().shutdown(Shutdown::Write);
        }
    }

    /// Reads and discards until the client closes.
    pub(crate) fn drain(&mut self) {
        while self.fill() {
            self.buf.clear();
        }
    }

    /// Holds the connection without ever reading it, until the server stops.
    pub(crate) fn hold(&self) {
        while !self.over() {
            thread::sleep(SLICE);
        }
    }
}

pub(crate) fn transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// A complete request head at the front of `buf`: the length of the head
/// and its Content-Length body, and the method.
pub(crate) fn parse_request(buf: &[u8]) -> Option<(usize, String)> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&buf[..end]);
    let method = head.split(' ').next()?.to_string();
    let body = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    Some((end + body, method))
}

/// `SO_LINGER` with a zero timeout: `close` then sends a RST.
pub(crate) fn set_linger_zero(stream: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: the descriptor is the open socket `stream` owns (borrowed for
    // the call); the option value points at a live `linger` of the size given.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "SO_LINGER: {}", io::Error::last_os_error());
}

/// Sets the socket option `opt` (`SO_SNDBUF`, `SO_RCVBUF`) of `stream` to `bytes`.
fn set_buffer(stream: &TcpStream, opt: libc::c_int, bytes: libc::c_int) {
    use std::os::fd::AsRawFd;
    // SAFETY: the descriptor is the open socket `stream` owns (borrowed for
    // the call); the option value points at a live `c_int` of the size given.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            (&bytes as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "setsockopt: {}", io::Error::last_os_error());
}

/// Over TLS, a write the socket cannot take within the write timeout (a
/// small send buffer, a client that pauses longer than `SLICE`) is still
/// sent exactly once: the client reads the very bytes the script sent, no
/// byte lost or repeated. (A flush that timed out used to fail the write
/// after rustls had taken its bytes; `send` then wrote them again: a
/// 10 MiB chunked response arrived with bytes doubled, `chunk_framing`.)
#[test]
fn over_tls_a_slow_reader_gets_every_byte_once() {
    const BODY: usize = 256 << 10;
    let wire: Vec<u8> = (0..BODY as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let cert = TestCert::new();
    let config = cert.tls.config.clone();
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let addr = listener.local_addr().unwrap();
    let sent = wire.clone();
    let server = thread::spawn(move || {
        let (stream, _) = listener.accept().expect("accept");
        set_buffer(&stream, libc::SO_SNDBUF, 4096);
        let stop = Arc::new(AtomicBool::new(false));
        let mut peer = Peer::new(stream, stop, Arc::new(Counts::default()));
        peer.secure(config);
        peer.request().is_some() && peer.send(&sent)
    });
    let client = metronome::tls::ClientTls::new(
        "localhost",
        &metronome::tls::ClientOptions {
            insecure: true,
            ..Default::default()
        },
    )
    .expect("a TLS client");
    let conn =
        rustls::ClientConnection::new(client.config, client.server_name).expect("a client session");
    let sock = TcpStream::connect(addr).expect("connect");
    set_buffer(&sock, libc::SO_RCVBUF, 4096);
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, sock);
    tls.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .expect("send the request");
    tls.flush().expect("send the request");
    // Slow: a record, then a pause longer than the server's write timeout.
    let mut got = Vec::with_capacity(BODY);
    let mut chunk = vec![0u8; 16 * 1024];
    let born = Instant::now();
    while got.len() <= BODY && born.elapsed() < Duration::from_secs(60) {
        match tls.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            // The server closes without close_notify.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => panic!("read after {} bytes: {e}", got.len()),
        }
        thread::sleep(SLICE + SLICE / 2);
    }
    drop(tls);
    let first = got.iter().zip(&wire).position(|(a, b)| a != b);
    assert_eq!(
        (got.len(), first),
        (wire.len(), None),
        "bytes received, the first that differs"
    );
    assert!(server.join().expect("the server thread"), "the server sent");
}
