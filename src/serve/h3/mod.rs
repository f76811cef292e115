//! HTTP/3 (`serve --http3`): the embedded server also listens on UDP on
//! its TCP port number and serves HTTP/3 over QUIC there, on the same
//! model as HTTP/1.1 and HTTP/2: each request stream is one request,
//! admitted when its FIN arrives (stamped with the time the datagram that
//! completed it was received) into the one [`Fifo`](super::fifo::Fifo)
//! every connection shares ([`admit`](super::admit::admit)), and its
//! answer written when due: service time, the stall, `--error-every`
//! 429s, SSE streams event by event, `/health`, `/v1/models`, 404s.
//!
//! QUIC is `quinn-proto`'s server side, sans-IO: one thread owns the UDP
//! socket, the [`Endpoint`] and every connection; it waits (one `ppoll`
//! with the stop socket) for a datagram, the next QUIC timer
//! (`poll_timeout`) or the next answer due, whichever is first. TLS is
//! `serve --tls`'s configuration with ALPN `h3` (`--http3` requires
//! `--tls`). The HTTP/3 framing and QPACK are core's
//! ([`metronome_core::h3`]); [`conn`] is one connection's HTTP/3 state,
//! [`request`] one request stream's.
//!
//! Per connection: `--max-streams` is QUIC's
//! `initial_max_streams_bidi` (a client cannot open more requests at
//! once); the server's control stream opens with SETTINGS (QPACK table
//! capacity 0, no blocked streams, SETTINGS_MAX_FIELD_SECTION_SIZE 16 KiB),
//! and opens no QPACK stream (RFC 9204 section 4.2 allows it with a zero
//! capacity). The client's SETTINGS are honoured: its field section
//! limit bounds the response heads, and its table capacity is never
//! used (answers use the static table and literals only).
//!
//! Refusals: a malformed request head (RFC 9114 section 4.3.1, checked by
//! core's [`decode_request`](metronome_core::h3::qpack::Decoder::decode_request)),
//! a `content-length` the DATA does not match: `400` at once, and the
//! request side stopped with H3_MESSAGE_ERROR; a head above 16 KiB: `431`;
//! a chat body kept above 1 MiB: `413` (both stopped with H3_NO_ERROR);
//! a stream that ends without a head: reset H3_REQUEST_INCOMPLETE; a cut
//! SSE stream (`--cut-every`): reset H3_INTERNAL_ERROR. A frame or
//! stream that breaks a connection rule closes the connection with its
//! code (H3_FRAME_UNEXPECTED, H3_MISSING_SETTINGS, ...). On stop every
//! connection gets a GOAWAY on the control stream (the first request
//! stream ID not accepted), then a CONNECTION_CLOSE with H3_NO_ERROR.

mod conn;
mod request;

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::unix::io::AsRawFd;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Instant;

use bytes::BytesMut;
use quinn_proto::crypto::rustls::QuicServerConfig;
use quinn_proto::{
    Connection, ConnectionHandle, DatagramEvent, Endpoint, EndpointConfig, ServerConfig, StreamId,
    TransportConfig, VarInt,
};

use metronome_core::h3::qpack::Decoder;
use metronome_core::h3::{ErrorCode, H3Error, PeerStreams};

use super::wait::{wait, Woken};
use super::Shared;
use conn::Uni;
use request::Request;

/// The largest request field section (and HEADERS frame) read; advertised
/// as SETTINGS_MAX_FIELD_SECTION_SIZE.
const SECTION: usize = 16 * 1024;
/// A UDP datagram at most.
const DATAGRAM: usize = 64 * 1024;
/// Datagrams read in one turn before timers and answers get a look.
const BATCH: usize = 64;
/// Unidirectional streams a client may open (control, QPACK encoder and
/// decoder, some reserved ones).
const UNI_STREAMS: u32 = 16;

/// The QUIC server configuration: `tls` with ALPN `h3`, `max_streams`
/// bidirectional streams per connection, 0-RTT accepted (rustls'
/// `max_early_data_size` at QUIC's only non-zero value; its session cache
/// gives the tickets, each good for one resumption).
///
/// # Errors
/// The TLS configuration cannot carry QUIC (no TLS 1.3 suite).
fn server_config(tls: &rustls::ServerConfig, max_streams: u32) -> io::Result<ServerConfig> {
    let mut tls = tls.clone();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    tls.max_early_data_size = u32::MAX;
    let quic = QuicServerConfig::try_from(tls).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the TLS configuration cannot carry QUIC: {e}"),
        )
    })?;
    let mut transport = TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(VarInt::from_u32(max_streams))
        .max_concurrent_uni_streams(VarInt::from_u32(UNI_STREAMS));
    let mut config = ServerConfig::with_crypto(Arc::new(quic));
    config.transport_config(Arc::new(transport));
    Ok(config)
}

/// Binds UDP on `addr` (the TCP listener's address) and starts the
/// HTTP/3 thread; it runs until the server stops.
///
/// # Errors
/// No TLS configuration, one that cannot carry QUIC, the UDP port is
/// taken, or the thread cannot start.
pub(super) fn spawn(shared: &Arc<Shared>, addr: SocketAddr) -> io::Result<JoinHandle<()>> {
    let tls = shared
        .config
        .tls
        .as_ref()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "HTTP/3 needs --tls"))?;
    let config = server_config(&tls.0, shared.config.max_streams)?;
    let sock = UdpSocket::bind(addr)?;
    sock.set_nonblocking(true)?;
    let endpoint = Endpoint::new(
        Arc::new(EndpointConfig::default()),
        Some(Arc::new(config)),
        true,
        None,
    );
    let shared = Arc::clone(shared);
    thread::Builder::new()
        .name("serve-h3".into())
        .spawn(move || {
            Server {
                shared: &shared,
                sock,
                endpoint,
                conns: HashMap::new(),
                tx: Vec::with_capacity(DATAGRAM),
            }
            .run();
        })
}

/// The UDP socket, the endpoint and every connection.
struct Server<'a> {
    shared: &'a Shared,
    sock: UdpSocket,
    endpoint: Endpoint,
    conns: HashMap<ConnectionHandle, H3Conn>,
    /// A datagram being written.
    tx: Vec<u8>,
}

impl Server<'_> {
    fn run(mut self) {
        let wake = self.shared.wake.as_raw_fd();
        let mut buf = vec![0u8; DATAGRAM].into_boxed_slice();
        loop {
            let now = Instant::now();
            let mut next: Option<Instant> = None;
            for (&handle, c) in &mut self.conns {
                c.drive(self.shared, now);
                flush(&self.sock, &mut self.endpoint, &mut self.tx, handle, c, now);
                next = earliest(next, c.next_wake(self.shared));
            }
            self.conns.retain(|_, c| !c.conn.is_drained());
            match wait(Some(self.sock.as_raw_fd()), wake, next) {
                Ok(Woken::Stop) => break,
                Ok(Woken::Timeout) => {}
                Ok(Woken::Readable) => self.receive(&mut buf),
                Err(e) => {
                    eprintln!("metronome serve: HTTP/3 wait failed: {e}");
                    break;
                }
            }
        }
        self.close_all();
    }

    /// Reads the datagrams waiting (a batch at most), each stamped when
    /// its read returned, and hands each to its connection at once, so a
    /// request it completes is admitted with that stamp.
    fn receive(&mut self, buf: &mut [u8]) {
        for _ in 0..BATCH {
            let (n, from) = match self.sock.recv_from(buf) {
                Ok(got) => got,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // WouldBlock: drained; anything else (an ICMP error
                // reported on the socket) is a datagram lost.
                Err(_) => return,
            };
            let at = Instant::now();
            self.tx.clear();
            let event = self.endpoint.handle(
                at,
                from,
                None,
                None,
                BytesMut::from(&buf[..n]),
                &mut self.tx,
            );
            match event {
                Some(DatagramEvent::ConnectionEvent(handle, event)) => {
                    if let Some(c) = self.conns.get_mut(&handle) {
                        c.conn.handle_event(event);
                        c.events(self.shared, at);
                    }
                }
                Some(DatagramEvent::NewConnection(incoming)) => {
                    self.tx.clear();
                    match self.endpoint.accept(incoming, at, &mut self.tx, None) {
                        Ok((handle, conn)) => {
                            let mut c = H3Conn::new(conn);
                            c.events(self.shared, at);
                            self.conns.insert(handle, c);
                        }
                        Err(e) => {
                            if let Some(t) = e.response {
                                let _ = self.sock.send_to(&self.tx[..t.size], t.destination);
                            }
                        }
                    }
                }
                Some(DatagramEvent::Response(t)) => {
                    let _ = self.sock.send_to(&self.tx[..t.size], t.destination);
                }
                None => {}
            }
        }
    }

    /// The server stops: on every connection a GOAWAY, sent first, then
    /// the CONNECTION_CLOSE with H3_NO_ERROR (RFC 9114 section 5.2).
    fn close_all(&mut self) {
        let now = Instant::now();
        for (&handle, c) in &mut self.conns {
            c.go_away();
            flush(&self.sock, &mut self.endpoint, &mut self.tx, handle, c, now);
            c.close_quietly(now);
            flush(&self.sock, &mut self.endpoint, &mut self.tx, handle, c, now);
        }
        self.conns.clear();
    }
}

/// Sends every datagram `c` owes now and passes its endpoint events on.
fn flush(
    sock: &UdpSocket,
    endpoint: &mut Endpoint,
    tx: &mut Vec<u8>,
    handle: ConnectionHandle,
    c: &mut H3Conn,
    now: Instant,
) {
    loop {
        tx.clear();
        let Some(t) = c.conn.poll_transmit(now, 1, tx) else {
            break;
        };
        // A datagram the kernel refuses is a lost packet: QUIC resends.
        let _ = sock.send_to(&tx[..t.size], t.destination);
    }
    while let Some(event) = c.conn.poll_endpoint_events() {
        if let Some(back) = endpoint.handle_event(handle, event) {
            c.conn.handle_event(back);
        }
    }
}

/// The earlier of two optional instants.
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// An error that closes the connection: its code and why (the
/// CONNECTION_CLOSE's reason phrase).
struct ConnError(ErrorCode, H3Error);

impl From<H3Error> for ConnError {
    fn from(e: H3Error) -> Self {
        ConnError(e.code(), e)
    }
}

/// One connection's HTTP/3 state.
struct H3Conn {
    conn: Connection,
    /// Our control stream, once QUIC let it open.
    control: Option<StreamId>,
    /// What is still to write on it: its opening (type, SETTINGS), a GOAWAY.
    control_owed: Vec<u8>,
    peer: PeerStreams,
    uni: HashMap<StreamId, Uni>,
    requests: HashMap<StreamId, Request>,
    decoder: Box<Decoder<SECTION>>,
    /// The client's SETTINGS_MAX_FIELD_SECTION_SIZE (unlimited until its
    /// SETTINGS arrive).
    peer_max_section: Option<u64>,
    /// Chat bodies kept, in bytes, over all streams.
    stored: usize,
    /// The first request stream ID not accepted yet: the last accepted
    /// one + 4 (0 before any), what a GOAWAY says.
    unaccepted: u64,
    closed: bool,
}

/// An HTTP/3 error code as QUIC's varint.
fn code(c: ErrorCode) -> VarInt {
    VarInt::from_u64(c.0).unwrap_or(VarInt::from_u32(0x102))
}
