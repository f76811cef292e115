//! The bytes of one connection: plain TCP, or TLS over it (rustls, driven
//! by hand on the blocking socket so the connection's `poll` still sees the
//! socket itself).

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::io::{AsRawFd, RawFd};
use std::sync::Arc;

use rustls::{ServerConfig, ServerConnection};

/// A served connection's transport.
pub(super) enum Transport {
    /// Plain HTTP/1.1.
    Plain(TcpStream),
    /// HTTP/1.1 over TLS; the handshake runs as the first reads and writes.
    Tls(Box<ServerConnection>, TcpStream),
}

impl Transport {
    /// `stream`, plain or wrapped in a fresh TLS server connection.
    pub(super) fn new(stream: TcpStream, tls: Option<&Arc<ServerConfig>>) -> io::Result<Self> {
        Ok(match tls {
            None => Transport::Plain(stream),
            Some(config) => Transport::Tls(
                Box::new(ServerConnection::new(Arc::clone(config)).map_err(io::Error::other)?),
                stream,
            ),
        })
    }

    /// The socket, for `poll`.
    pub(super) fn raw_fd(&self) -> RawFd {
        match self {
            Transport::Plain(s) | Transport::Tls(_, s) => s.as_raw_fd(),
        }
    }

    /// After `poll` said readable: reads once from the socket and appends
    /// the plaintext it yields to `buf`. `Ok(None)`: the peer closed;
    /// `Ok(Some(0))`: bytes arrived but no plaintext yet (a handshake
    /// message, part of a record). A TLS error is sent to the peer as an
    /// alert, then returned.
    pub(super) fn read_into(
        &mut self,
        buf: &mut Vec<u8>,
        scratch: &mut [u8],
    ) -> io::Result<Option<usize>> {
        match self {
            Transport::Plain(s) => match s.read(scratch)? {
                0 => Ok(None),
                n => {
                    buf.extend_from_slice(&scratch[..n]);
                    Ok(Some(n))
                }
            },
            Transport::Tls(conn, s) => {
                let n = conn.read_tls(s)?;
                let state = match conn.process_new_packets() {
                    Ok(state) => state,
                    Err(e) => {
                        // The alert that says why, then the error.
                        let _ = flush(conn, s);
                        return Err(io::Error::new(io::ErrorKind::InvalidData, e));
                    }
                };
                let mut got = 0;
                let want = state.plaintext_bytes_to_read();
                if want > 0 {
                    let start = buf.len();
                    buf.resize(start + want, 0);
                    conn.reader().read_exact(&mut buf[start..])?;
                    got = want;
                }
                // Handshake replies (and alerts) go out at once.
                flush(conn, s)?;
                if got == 0 && (n == 0 || state.peer_has_closed()) {
                    return Ok(None);
                }
                Ok(Some(got))
            }
        }
    }

    /// Writes all of `bytes` (blocking).
    pub(super) fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Transport::Plain(s) => s.write_all(bytes),
            Transport::Tls(conn, s) => {
                conn.writer().write_all(bytes)?;
                flush(conn, s)
            }
        }
    }

    /// Ends the sending direction: a TLS `close_notify`, then FIN.
    pub(super) fn shutdown_write(&mut self) -> io::Result<()> {
        if let Transport::Tls(conn, s) = self {
            conn.send_close_notify();
            let _ = flush(conn, s);
        }
        self.socket().shutdown(Shutdown::Write)
    }

    /// The socket.
    pub(super) fn socket(&self) -> &TcpStream {
        match self {
            Transport::Plain(s) | Transport::Tls(_, s) => s,
        }
    }
}

/// Writes every TLS record rustls has queued (blocking).
fn flush(conn: &mut ServerConnection, mut s: &TcpStream) -> io::Result<()> {
    while conn.wants_write() {
        conn.write_tls(&mut s)?;
    }
    Ok(())
}
