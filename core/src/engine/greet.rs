//! The HTTP/2 greeting of a connection opened before it is used (both
//! engines): the client preface and SETTINGS written, the server's SETTINGS
//! read and acknowledged, blocking, within a deadline. Nothing here runs on
//! a hot path: an engine greets its pre-opened connections before the
//! clock (and the std engine each connection it opens).

use std::boxed::Box;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Instant;
use std::vec;
use std::vec::Vec;

use crate::h2::{Config, Connection};

/// A greeted connection: ready for requests (the server's SETTINGS
/// arrived), and the bytes read after them, for the connection's reader.
pub struct Greeted<const S: usize> {
    /// The connection, its SETTINGS exchanged.
    pub conn: Box<Connection<S>>,
    /// Bytes the server sent after its SETTINGS (to feed first).
    pub rest: Vec<u8>,
}

/// Greets the server over `io` (the socket itself, or a TLS session over
/// it): writes what the connection owes, reads until the server's SETTINGS
/// make it ready, by `deadline`. `sock` is the socket under `io`, whose
/// read timeout bounds each read (and is cleared on success).
///
/// # Errors
/// `TimedOut` past the deadline; `UnexpectedEof` when the server closes
/// first; `InvalidData` for a protocol error or SETTINGS that do not fit
/// 32 KiB; the I/O errors of `io` as they are.
pub fn greet_h2<const S: usize>(
    io: &mut impl ReadWrite,
    sock: &TcpStream,
    deadline: Instant,
) -> io::Result<Greeted<S>> {
    let mut conn = Box::new(Connection::<S>::new(Config::DEFAULT));
    let mut out = vec![0u8; 4096];
    let mut buf = vec![0u8; 32 * 1024];
    let (mut start, mut end) = (0, 0);
    loop {
        // What the connection owes: first the preface and SETTINGS, then acks.
        loop {
            let n = conn.poll_transmit(&mut out);
            if n == 0 {
                break;
            }
            io.write_all(&out[..n])?;
        }
        io.flush()?;
        if conn.is_ready() {
            sock.set_read_timeout(None)?;
            return Ok(Greeted {
                conn,
                rest: buf[start..end].to_vec(),
            });
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no HTTP/2 SETTINGS from the server within the connect timeout (is it HTTP/2?)",
            ));
        }
        if end == buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "HTTP/2 SETTINGS too large",
            ));
        }
        sock.set_read_timeout(Some(left))?;
        let n = io.read(&mut buf[end..])?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection before its HTTP/2 SETTINGS (is it HTTP/2?)",
            ));
        }
        end += n;
        loop {
            let (used, _) = conn.handle_read(&buf[start..end]).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    std::format!("HTTP/2 handshake with the server failed: {e}"),
                )
            })?;
            if used == 0 {
                break;
            }
            start += used;
        }
    }
}

/// Both directions of a connection's bytes: what [`greet_h2`] talks over.
pub trait ReadWrite: Read + Write {}

impl<T: Read + Write> ReadWrite for T {}
