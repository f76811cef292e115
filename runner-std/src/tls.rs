//! TLS on a blocking socket: the handshake and its classification are
//! core's (`metronome_core::engine::tls`); this module adds the non-blocking reader
//! and writer the exchange drives rustls with.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

pub use metronome_core::engine::tls::{agreed, client, handshake, Tls, TlsFailure};

/// Reads and writes the socket without blocking (`WouldBlock` when it
/// cannot), for rustls's `read_tls` and `write_tls`.
pub(crate) struct NowIo<'a>(pub(crate) &'a TcpStream);

impl Read for NowIo<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        crate::sys::recv_now(self.0, buf)
    }
}

impl Write for NowIo<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        crate::sys::send_now(self.0, bytes, Duration::from_millis(1), &mut None)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
