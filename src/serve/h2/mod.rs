//! HTTP/2 on one connection (`serve --http2`), the server side of RFC 9113
//! built from core's pieces: [`read_frame`] and [`write_header`] for frames,
//! the HPACK [`Decoder`] for request heads, and the stateless encoder
//! ([`encode_response`], [`encode_fields`]) for response heads and
//! trailers.
//!
//! Each stream is one request. When its END_STREAM arrives (stamped with
//! the time of the read that completed it) it is admitted into the same
//! model as an HTTP/1.1 request ([`admit`], [`admit_grpc`]): FIFO service
//! across every stream of every connection, the stall, `--error-every`
//! 429s, SSE streams with `/health` and `/v1/models`. Its answer is written
//! when due: HEADERS, then DATA as far as the client's windows allow (the
//! rest waits for its WINDOW_UPDATEs), then END_STREAM, gRPC trailers or,
//! for a cut SSE stream, RST_STREAM `INTERNAL_ERROR`.
//!
//! What the server advertises: `MAX_CONCURRENT_STREAMS` (`--max-streams`;
//! a stream beyond it is refused with `REFUSED_STREAM`), a 1 MiB stream
//! window and a 16 MiB connection window, both returned with WINDOW_UPDATE
//! as DATA arrives. The response encoder never indexes, and opens its first
//! block (and the first after any `HEADER_TABLE_SIZE` change) with a table
//! size update to 0.
//!
//! Robustness: a frame or header block that breaks a connection rule ends
//! the connection with GOAWAY and the matching code; a malformed request
//! (missing or repeated pseudo-headers, uppercase or connection-specific
//! names, a wrong `content-length`) is reset with `PROTOCOL_ERROR`. Memory
//! per connection is bounded: one frame of input (16 KiB), header blocks
//! up to 64 KiB, streams up to `--max-streams`, a chat body kept up to
//! 1 MiB per stream and 16 MiB per connection (beyond: `413`), other bodies
//! counted, not kept.

mod answer;
mod conn;
mod head;

use std::collections::BTreeMap;
use std::io;
use std::os::unix::io::AsRawFd;
use std::time::Instant;

use metronome_core::h2::conn::PREFACE;
use metronome_core::h2::frame::{ErrorCode, DEFAULT_MAX_FRAME_SIZE};
use metronome_core::h2::hpack::Decoder;

use super::connection::{linger, End};
use super::job::Job;
use super::transport::Transport;
use super::wait::{wait, Woken};
use super::Shared;

/// `SETTINGS_INITIAL_WINDOW_SIZE` advertised: each stream's receive window.
const RECV_STREAM_WINDOW: u32 = 1 << 20;
/// The connection's receive window (raised from 65 535 at once).
const RECV_CONNECTION_WINDOW: u32 = 16 << 20;
/// The initial connection window of RFC 9113.
const DEFAULT_WINDOW: u32 = 65_535;
/// The HPACK dynamic table the decoder keeps (the protocol's default, so
/// it is not advertised).
const TABLE: usize = 4096;

/// Reads until the connection's first bytes tell HTTP/2 (the 24-byte
/// preface) from anything else. Returns the bytes read, when the last read
/// returned, and whether they open HTTP/2; `None` when the client left
/// before saying, or the server is stopping.
///
/// # Errors
/// Reading or waiting failed.
pub(super) fn sniff(
    shared: &Shared,
    transport: &mut Transport,
) -> io::Result<Option<(Vec<u8>, Instant, bool)>> {
    let wake = shared.wake.as_raw_fd();
    let mut buf = Vec::new();
    let mut scratch = [0u8; 4096];
    let mut at = Instant::now();
    loop {
        let n = buf.len().min(PREFACE.len());
        if buf[..n] != PREFACE[..n] {
            return Ok(Some((buf, at, false)));
        }
        if n == PREFACE.len() {
            return Ok(Some((buf, at, true)));
        }
        match wait(Some(transport.raw_fd()), wake, None)? {
            Woken::Stop => return Ok(None),
            Woken::Timeout => {}
            Woken::Readable => match transport.read_into(&mut buf, &mut scratch) {
                Ok(None) => return Ok(None),
                Ok(Some(0)) => {}
                Ok(Some(_)) => at = Instant::now(),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            },
        }
    }
}

use answer::Finish;
use conn::ConnError;
use head::Head;

/// One stream: its request as it arrives, then its answer as it leaves.
#[derive(Debug)]
struct H2Stream {
    /// The request has not ended yet (no END_STREAM).
    receiving: bool,
    head: Head,
    /// A field was too long for the decoder's scratch (answered `431`).
    oversize: bool,
    /// Body bytes received.
    received: u64,
    /// The body, kept only for chat requests in SSE mode.
    body: Vec<u8>,
    keep_body: bool,
    /// The body was longer than what is kept (answered `413`).
    too_large: bool,
    recv_window: i64,
    /// Received bytes not yet returned with a WINDOW_UPDATE.
    window_owed: u32,
    send_window: i64,
    job: Option<Job>,
    /// DATA bytes waiting for the windows; `sent` of them are out.
    outbox: Vec<u8>,
    sent: usize,
    finish: Option<Finish>,
    /// Counts as served once finished.
    counted: bool,
}

/// The HTTP/2 side of one connection.
pub(super) struct H2Connection<'a> {
    shared: &'a Shared,
    transport: Transport,
    /// Bytes read and not yet consumed as frames.
    buf: Vec<u8>,
    fresh: bool,
    last_read: Instant,
    reading: bool,
    out: Vec<u8>,
    event: Vec<u8>,
    decoder: Box<Decoder<TABLE>>,
    preface_seen: bool,
    settings_seen: bool,
    /// The client's `SETTINGS_MAX_FRAME_SIZE`.
    peer_max_frame: u32,
    /// The client's `SETTINGS_INITIAL_WINDOW_SIZE`.
    peer_initial_window: i64,
    send_window: i64,
    recv_window: i64,
    window_owed: u32,
    /// Open the next header block with a table size update to 0.
    table_update: bool,
    /// The highest stream id the client opened.
    last_stream: u32,
    /// HEADERS without END_HEADERS: (stream, END_STREAM, block so far).
    continuation: Option<(u32, bool, Vec<u8>)>,
    streams: BTreeMap<u32, H2Stream>,
    /// Chat bodies kept, in bytes, over all streams.
    stored: usize,
    goaway_received: bool,
}

impl<'a> H2Connection<'a> {
    /// A connection whose first `bytes` (the preface, maybe more) were read
    /// at `read_at`.
    pub(super) fn new(
        shared: &'a Shared,
        transport: Transport,
        bytes: Vec<u8>,
        read_at: Instant,
    ) -> Self {
        Self {
            shared,
            transport,
            fresh: !bytes.is_empty(),
            buf: bytes,
            last_read: read_at,
            reading: true,
            out: Vec::with_capacity(16 * 1024),
            event: Vec::with_capacity(512),
            decoder: Box::default(),
            preface_seen: false,
            settings_seen: false,
            peer_max_frame: DEFAULT_MAX_FRAME_SIZE,
            peer_initial_window: i64::from(DEFAULT_WINDOW),
            send_window: i64::from(DEFAULT_WINDOW),
            recv_window: i64::from(RECV_CONNECTION_WINDOW),
            window_owed: 0,
            table_update: true,
            last_stream: 0,
            continuation: None,
            streams: BTreeMap::new(),
            stored: 0,
            goaway_received: false,
        }
    }

    /// Serves until the client leaves, an error ends the connection, or the
    /// server stops.
    pub(super) fn serve(mut self) {
        match self.serve_inner() {
            Ok(End::Graceful) => linger(self.shared, &mut self.transport),
            Ok(End::Abrupt) | Err(_) => {}
        }
        let _ = self.transport.socket().shutdown(std::net::Shutdown::Both);
    }

    fn serve_inner(&mut self) -> io::Result<End> {
        let wake = self.shared.wake.as_raw_fd();
        let mut scratch = [0u8; 16 * 1024];
        self.server_preface();
        self.flush()?;
        loop {
            if self.fresh {
                self.fresh = false;
                if let Err(ConnError(code, why)) = self.read_frames() {
                    self.goaway(code, why.as_bytes());
                    self.flush()?;
                    return Ok(End::Graceful);
                }
            }
            self.run_due(Instant::now());
            self.send_data();
            self.return_windows();
            self.flush()?;
            if self.goaway_received && self.streams.is_empty() {
                self.goaway(ErrorCode::NO_ERROR, b"");
                self.flush()?;
                return Ok(End::Graceful);
            }
            let due = self.next_due();
            if !self.reading && due.is_none() {
                return Ok(End::Graceful);
            }
            let watch = self.reading.then(|| self.transport.raw_fd());
            match wait(watch, wake, due)? {
                Woken::Stop => {
                    self.goaway(ErrorCode::NO_ERROR, b"server stopping");
                    let _ = self.flush();
                    return Ok(End::Abrupt);
                }
                Woken::Timeout => {}
                Woken::Readable => match self.transport.read_into(&mut self.buf, &mut scratch) {
                    Ok(None) => self.reading = false,
                    Ok(Some(0)) => {}
                    Ok(Some(_)) => {
                        self.last_read = Instant::now();
                        self.fresh = true;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                },
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.out.is_empty() {
            self.transport.write_all(&self.out)?;
            self.out.clear();
        }
        Ok(())
    }
}
