//! The connections, the response framing, the ring, the clocks.

use std::io;
use std::net::TcpStream;
use std::time::Duration;

use io_uring::IoUring;

use crate::args::Options;

/// Bytes of receive buffer per connection (the nginx response is ~150).
pub(crate) const RECV_BUF: usize = 4096;
/// `user_data` bit that marks a send; the low 32 bits are the connection.
pub(crate) const TAG_SEND: u64 = 1 << 32;

/// One connection's receive state.
pub(crate) struct Conn {
    pub(crate) stream: TcpStream,
    pub(crate) buf: Box<[u8; RECV_BUF]>,
    /// Bytes of `buf` holding received, unconsumed data.
    pub(crate) filled: usize,
    /// Paced modes: a request is in flight on it.
    pub(crate) busy: bool,
}

/// Outcome of looking at a connection's buffer.
pub(crate) enum Parsed {
    /// The response is not complete yet.
    Partial,
    /// A whole response of this many bytes is at the front of the buffer.
    Complete(usize),
}
/// Minimal response framing: head up to `\r\n\r\n`, body of Content-Length bytes.
pub(crate) fn parse_response(data: &[u8]) -> Result<Parsed, String> {
    let Some(head_end) = data.windows(4).position(|w| w == b"\r\n\r\n") else {
        if data.len() == RECV_BUF {
            return Err("response head larger than the receive buffer".into());
        }
        return Ok(Parsed::Partial);
    };
    let head = &data[..head_end];
    if !head.starts_with(b"HTTP/1.1 2") {
        let line = head.split(|&b| b == b'\r').next().unwrap_or(head);
        return Err(format!(
            "unexpected status line {:?}",
            String::from_utf8_lossy(line)
        ));
    }
    let mut content_length = None;
    for line in head.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (name, value) = line.split_at(colon);
        if name.eq_ignore_ascii_case(b"content-length") {
            let text = String::from_utf8_lossy(&value[1..]);
            content_length = Some(
                text.trim()
                    .parse::<usize>()
                    .map_err(|_| format!("bad Content-Length {text:?}"))?,
            );
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            return Err("chunked responses are not supported by the floor client".into());
        }
    }
    let total = head_end + 4 + content_length.ok_or("response without Content-Length")?;
    if total > RECV_BUF {
        return Err(format!(
            "response of {total} bytes exceeds the receive buffer"
        ));
    }
    Ok(if data.len() >= total {
        Parsed::Complete(total)
    } else {
        Parsed::Partial
    })
}

/// Builds the ring: single issuer with deferred task work where the
/// kernel has it (6.1+), a plain ring otherwise.
pub(crate) fn build_ring(entries: u32) -> io::Result<IoUring> {
    IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_coop_taskrun()
        .build(entries)
        .or_else(|_| IoUring::builder().setup_coop_taskrun().build(entries))
        .or_else(|_| IoUring::new(entries))
}

/// Opens the keep-alive connections (`TCP_NODELAY`).
pub(crate) fn connect_all(options: &Options) -> Result<Vec<Conn>, String> {
    let mut conns: Vec<Conn> = Vec::with_capacity(options.connections);
    for i in 0..options.connections {
        let stream = TcpStream::connect_timeout(&options.target, Duration::from_secs(5))
            .map_err(|e| format!("connect {} (connection {i}): {e}", options.target))?;
        stream
            .set_nodelay(true)
            .map_err(|e| format!("TCP_NODELAY: {e}"))?;
        conns.push(Conn {
            stream,
            buf: Box::new([0u8; RECV_BUF]),
            filled: 0,
            busy: false,
        });
    }
    Ok(conns)
}

/// CLOCK_MONOTONIC in ns: the clock of the ring's absolute timeouts.
pub(crate) fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// (user, system) CPU seconds of this process so far.
pub(crate) fn rusage() -> (f64, f64) {
    // SAFETY: `rusage` is plain old data; all-zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable `rusage` for the call's duration.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return (0.0, 0.0);
    }
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    (secs(usage.ru_utime), secs(usage.ru_stime))
}
