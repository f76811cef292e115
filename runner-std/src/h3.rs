//! HTTP/3 over QUIC on the std engine (`--http3`): QUIC from `quinn-proto`
//! (sans-IO, rustls underneath with the run's certificate handling), the
//! HTTP/3 framing and QPACK from core ([`metronome_core::h3`]), each
//! stream's response turned into core's `Finish` by the same
//! [`StreamExchange`] HTTP/2 uses. This module moves datagrams, reads the
//! clock and hands facts to the collector: [`quic`] the QUIC connection
//! and its handshake, [`dispatch`] the requests out, [`read`] the
//! responses in; here, the state they share ([`Link`], [`Flight`]). The
//! submodules take this module's imports whole (`use super::*`).
//!
//! Two threads per connection, as for HTTP/2: the *dispatcher*
//! ([`worker`]) takes due requests from the pacer's queue while its
//! connection has a free stream slot and writes each on a new
//! bidirectional stream (HEADERS, DATA, FIN); the *reader* ([`read_loop`])
//! blocks on the UDP socket, stamps each datagram, feeds it to the QUIC
//! connection, reads the response streams and ends them (answered, reset,
//! past their timeout, or with the connection). They share the connection
//! under a mutex. A dead connection (closed by the server, idle timeout)
//! ends its streams and the dispatcher opens a new one.
//!
//! Not here yet: the server's control and QPACK streams are drained
//! unread (its SETTINGS and GOAWAY are not acted on), no 0-RTT, no retry
//! of a request on a fresh connection.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use quinn_proto::crypto::rustls::QuicClientConfig;
use quinn_proto::{
    ClientConfig, Connection, ConnectionError, ConnectionHandle, DatagramEvent, Dir, Endpoint,
    EndpointConfig, Event, ReadError, StreamEvent, StreamId, VarInt,
};

use metronome_core::engine::HandshakeFailure;
use metronome_core::exchange::{Finish, GAP_CAP};
use metronome_core::h2::StreamExchange;
use metronome_core::h3::frame::{encode_control_stream_start, encode_data_header, encode_header};
use metronome_core::h3::qpack::Decoder;
use metronome_core::h3::response::Response;
use metronome_core::h3::{ErrorCode, Frame, FrameReader, H3Error, Role};
use metronome_core::measure::{ErrorKind, FramingCause, ThreadStats, Unsent};
use metronome_core::plan::{Plan, Protocol, H2_MAX_STREAMS};

use crate::clock::{thread_cpu_ns, Clock};
use crate::collector::Fact;
use crate::conn::{Opened, Outcome};
use crate::queue::{Job, Shared};
use crate::tls::{Tls, TlsFailure};

/// Streams per connection at most (the most any plan may ask).
const SLOTS: usize = H2_MAX_STREAMS as usize;
/// The largest response field section accepted (advertised as
/// SETTINGS_MAX_FIELD_SECTION_SIZE).
const SECTION: usize = 16 * 1024;
/// The longest the reader blocks before it looks at deadlines and timers.
const SLICE: Duration = Duration::from_millis(2);
/// A UDP datagram at most.
const DATAGRAM: usize = 64 * 1024;
/// HTTP/3 frame type HEADERS.
const HEADERS: u64 = 0x01;

mod dispatch;
mod quic;
mod read;

pub(crate) use dispatch::worker;
use quic::Quic;
pub(crate) use quic::{open, Opening};
use read::read_loop;

/// One request in flight on one stream.
struct Flight {
    job: Job,
    sent_ns: u64,
    /// The stream's bytes (HEADERS, DATA) and how many are written.
    out: Vec<u8>,
    at: usize,
    reader: FrameReader<SECTION>,
    /// Where the response is in its frames' order.
    response: Response,
    ex: StreamExchange,
    gaps: Vec<u64>,
}

/// One connection's state, shared by its dispatcher and its reader.
struct Link {
    quic: Option<Quic>,
    flights: HashMap<StreamId, Box<Flight>>,
    /// Flights ended, kept for the next streams (no allocation per request
    /// once warm).
    spare: Vec<Box<Flight>>,
    decoder: Box<Decoder<SECTION>>,
    protocol: Protocol,
    dead: bool,
    leaving: bool,
    /// The server's MAX_STREAMS allows no new stream until QUIC says one
    /// is available.
    blocked: bool,
    cap: usize,
    counted: usize,
}

impl Link {
    /// Streams this connection may still open now.
    fn free(&self) -> usize {
        if self.dead || self.leaving || self.blocked || self.quic.is_none() {
            return 0;
        }
        self.cap.saturating_sub(self.flights.len())
    }

    /// Brings this connection's share of the queue's `idle` count to its
    /// free stream slots (as HTTP/2's `Link::sync_idle`).
    fn sync_idle(&mut self, shared: &Shared) {
        let free = self.free();
        if free != self.counted {
            let mut q = lock(&shared.queue);
            q.idle = (q.idle + free).saturating_sub(self.counted);
            self.counted = free;
        }
    }

    fn count_written(&mut self, shared: &Shared, now: u64) {
        if let Some(q) = self.quic.as_mut() {
            shared.traffic.sent(now, std::mem::take(&mut q.written));
        }
    }

    fn flight(&mut self, job: Job, sent_ns: u64) -> Box<Flight> {
        let sse = matches!(self.protocol, Protocol::OpenAiSse);
        let mut f = self.spare.pop().unwrap_or_else(|| {
            Box::new(Flight {
                job,
                sent_ns,
                out: Vec::new(),
                at: 0,
                reader: FrameReader::new(Role::Request),
                response: Response::default(),
                ex: StreamExchange::for_protocol(self.protocol),
                gaps: vec![0; if sse { GAP_CAP } else { 0 }],
            })
        });
        f.job = job;
        f.sent_ns = sent_ns;
        f.out.clear();
        f.at = 0;
        f.reader = FrameReader::new(Role::Request);
        f.response = Response::default();
        f.ex.begin(job.intended_ns, sent_ns);
        f
    }
}

/// Writes what is left of `f`'s bytes on stream `id`, and its FIN once all
/// are written. `Err`: the stream cannot be written (stopped, closed).
fn push(conn: &mut Connection, id: StreamId, f: &mut Flight) -> Result<(), ()> {
    let mut s = conn.send_stream(id);
    while f.at < f.out.len() {
        match s.write(&f.out[f.at..]) {
            Ok(n) => f.at += n,
            Err(quinn_proto::WriteError::Blocked) => return Ok(()),
            Err(_) => return Err(()),
        }
    }
    s.finish().map_err(|_| ())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
