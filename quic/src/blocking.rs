//! The one blocking driver of an [`H3Client`]: its handshake over a UDP
//! socket the engine owns, already connected to the server ([`handshake`]),
//! used before the clock by both engines and by the std engine's
//! dispatcher when it reopens a connection; and one request with its
//! whole answer ([`fetch`]: `--openai`'s model discovery, before the run).
//! Everything else in this crate is sans-IO; this only moves datagrams
//! and waits.

use std::io;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

use crate::client::{H3Client, State, DATAGRAM};
use crate::config::{handshake_timeout, Config};
use crate::FlightJob;

/// Runs the QUIC handshake (TLS 1.3, ALPN `h3`) of a new connection over
/// `sock` (connected to `cfg`'s server) within `timeout` (at least 1 ms);
/// returns the live client and how long its handshake took. With `early`,
/// a connection that holds 0-RTT keys (`--http3-0rtt` and a ticket from an
/// earlier connection: [`H3Client::free`] above 0 while handshaking) is
/// returned at once, its first flight sent, with no handshake time: its
/// requests go in 0-RTT while its driver completes the handshake. Without
/// `early` the time is always there. The socket's read timeout is cleared
/// on success.
///
/// # Errors
/// A refused port (ICMP unreachable) as `ConnectionRefused`; a failed or
/// timed-out handshake as a [`TlsFailure`](metronome_core::engine::tls::TlsFailure)
/// of its kind (the same lines on every engine).
pub fn handshake<J: FlightJob>(
    sock: &UdpSocket,
    cfg: &Config,
    timeout: Duration,
    early: bool,
) -> io::Result<(H3Client<J>, Option<Duration>)> {
    let timeout = timeout.max(Duration::from_millis(1));
    let started = Instant::now();
    let deadline = started + timeout;
    let mut h3 = H3Client::connect(cfg, started)?;
    let mut tx = Vec::with_capacity(DATAGRAM);
    let mut buf = vec![0u8; DATAGRAM];
    loop {
        let now = Instant::now();
        h3.handle_timeout(now, 0);
        while let Some((len, segment)) = h3.poll_transmit(now, 1, &mut tx) {
            for d in tx[..len].chunks(segment.max(1)) {
                match sock.send(d) {
                    Ok(_) => {}
                    // A datagram the kernel cannot take is a lost packet:
                    // QUIC sends it again.
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                        ) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        match h3.state() {
            State::Handshaking if early && h3.free() > 0 => {
                sock.set_read_timeout(None)?;
                return Ok((h3, None));
            }
            State::Handshaking => {}
            State::Closed => {
                return Err(h3
                    .handshake_error()
                    .unwrap_or_else(|| io::Error::other("the QUIC connection closed")));
            }
            State::Live | State::GoingAway => {
                sock.set_read_timeout(None)?;
                return Ok((h3, Some(started.elapsed())));
            }
        }
        if now >= deadline {
            return Err(handshake_timeout(cfg.remote(), timeout.as_millis()));
        }
        receive(&mut h3, sock, &mut buf, now, deadline)?;
    }
}

/// The job of [`fetch`]'s one request.
#[derive(Clone, Copy, Debug)]
struct One;

impl FlightJob for One {
    fn request(&self) -> usize {
        0
    }
    fn intended_ns(&self) -> u64 {
        0
    }
    fn retried(&self) -> bool {
        true
    }
}

/// One request over a new connection on `sock` (connected to `cfg`'s
/// server): the handshake, the request (its QPACK field section `block`,
/// no body), and its answer's status and whole body, all within `timeout`;
/// then the connection is closed.
///
/// # Errors
/// As [`handshake`]; the request's stream failed (reset, the connection
/// lost: in words) or no answer came in time (`TimedOut`).
pub fn fetch(
    sock: &UdpSocket,
    cfg: &Config,
    block: &[u8],
    timeout: Duration,
) -> io::Result<(u16, Vec<u8>)> {
    let deadline = Instant::now() + timeout;
    let (mut h3, _) = handshake::<One>(sock, cfg, timeout, false)?;
    h3.keep_bodies();
    h3.start(One, crate::Request { block, body: &[] }, 0)
        .map_err(|_| io::Error::other("HTTP/3: the server allows no request stream"))?;
    let mut tx = Vec::with_capacity(DATAGRAM);
    let mut buf = vec![0u8; DATAGRAM];
    let answer = loop {
        let now = Instant::now();
        h3.handle_timeout(now, 0);
        while let Some((len, segment)) = h3.poll_transmit(now, 1, &mut tx) {
            for d in tx[..len].chunks(segment.max(1)) {
                match sock.send(d) {
                    Ok(_) => {}
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                        ) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        if let Some(end) = h3.poll_end() {
            let status = end.head.status;
            break match (end.how, status) {
                (crate::How::Answered(_), Some(status)) => Ok((status, h3.body().to_vec())),
                _ => Err(io::Error::other(h3.lost().map_or_else(
                    || "HTTP/3: the request's stream ended without a complete answer".to_string(),
                    |l| l.text.clone(),
                ))),
            };
        }
        if h3.state() == State::Closed {
            break Err(io::Error::other(h3.lost().map_or_else(
                || "HTTP/3: the connection closed before the answer".to_string(),
                |l| l.text.clone(),
            )));
        }
        if now >= deadline {
            break Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "no complete HTTP/3 answer within {} ms",
                    timeout.as_millis()
                ),
            ));
        }
        receive(&mut h3, sock, &mut buf, now, deadline)?;
    };
    h3.close(Instant::now());
    let mut tx = Vec::with_capacity(DATAGRAM);
    while let Some((len, segment)) = h3.poll_transmit(Instant::now(), 1, &mut tx) {
        for d in tx[..len].chunks(segment.max(1)) {
            let _ = sock.send(d);
        }
    }
    answer
}

/// Waits on `sock` until the connection's next timer or `deadline`
/// (at least 50 us), and hands a datagram that came to `h3`; a wait that
/// ends with none is no error.
fn receive<J: FlightJob>(
    h3: &mut H3Client<J>,
    sock: &UdpSocket,
    buf: &mut [u8],
    now: Instant,
    deadline: Instant,
) -> io::Result<()> {
    let until = h3.poll_timeout().unwrap_or(deadline).min(deadline);
    let wait = until
        .saturating_duration_since(now)
        .max(Duration::from_micros(50));
    sock.set_read_timeout(Some(wait))?;
    match sock.recv(buf) {
        Ok(n) => h3.datagram(Instant::now(), 0, &buf[..n]),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
            ) => {}
        Err(e) => return Err(e),
    }
    Ok(())
}
