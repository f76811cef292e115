//! [`H3Client`] against a `quinn-proto` server in the same process, no
//! socket: datagrams are handed across by the test, time is made up. The
//! server side is a few lines of HTTP/3 written here with core's writers;
//! each test scripts what it does (answer, GOAWAY, a second SETTINGS, a
//! stream limit) and asserts exactly how the client's streams end.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use quinn_proto::crypto::rustls::QuicServerConfig;
use quinn_proto::{
    Connection, ConnectionError, ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig,
    Event, ServerConfig, StreamEvent, StreamId, TransportConfig, VarInt,
};

use metronome_core::engine::tls::{ClientCert, Tls};
use metronome_core::exchange::Finish;
use metronome_core::h3::frame::{
    encode_control_stream_start, encode_data_header, encode_goaway, encode_header, encode_settings,
};
use metronome_core::h3::qpack::{encode_request, encode_response};
use metronome_core::measure::{ErrorKind, FramingCause};
use metronome_core::plan::Protocol;
use metronome_quic::{Config, FlightJob, H3Client, How, Refused, Request, State};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Job {
    id: u64,
    retried: bool,
}

impl FlightJob for Job {
    fn request(&self) -> usize {
        0
    }
    fn intended_ns(&self) -> u64 {
        self.id
    }
    fn retried(&self) -> bool {
        self.retried
    }
}

/// How a stream ended, without the borrowed parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ends {
    Ok(u16),
    Retry,
    Failed(Finish<'static>),
}

/// The server's side: one connection, its control stream, the request
/// streams it has read to their end.
struct Server {
    endpoint: Endpoint,
    /// Its SETTINGS_MAX_FIELD_SECTION_SIZE.
    section: u64,
    conn: Option<(ConnectionHandle, Connection)>,
    control: Option<StreamId>,
    requests: Vec<StreamId>,
    lost: Option<ConnectionError>,
}

struct Pair {
    client: H3Client<Job>,
    server: Server,
    now: Instant,
    stamp: u64,
    client_addr: SocketAddr,
    server_addr: SocketAddr,
}

fn configs(max_bidi: u32) -> (Config, Arc<ServerConfig>) {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert = ck.cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(ck.signing_key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key)
        .unwrap();
    server.alpn_protocols = vec![b"h3".to_vec()];
    let mut sc = ServerConfig::with_crypto(Arc::new(QuicServerConfig::try_from(server).unwrap()));
    let mut transport = TransportConfig::default();
    transport.max_concurrent_bidi_streams(VarInt::from_u32(max_bidi));
    sc.transport_config(Arc::new(transport));
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tls = Tls::new(
        Arc::new(client),
        rustls::pki_types::ServerName::try_from("localhost").unwrap(),
        Arc::new(ClientCert::new(None)),
    );
    let addr: SocketAddr = "127.0.0.1:4433".parse().unwrap();
    let cfg = Config::new(&tls, addr, Protocol::Http, 0).unwrap();
    (cfg, Arc::new(sc))
}

impl Pair {
    /// A client connected to a server allowing `max_bidi` request streams
    /// and field sections of `section` bytes.
    fn new(max_bidi: u32, section: u64) -> Pair {
        let (cfg, sc) = configs(max_bidi);
        let now = Instant::now();
        let mut p = Pair {
            client: H3Client::connect(&cfg, now).unwrap(),
            server: Server {
                endpoint: Endpoint::new(Arc::new(EndpointConfig::default()), Some(sc), true, None),
                section,
                conn: None,
                control: None,
                requests: Vec::new(),
                lost: None,
            },
            now,
            stamp: 1_000,
            client_addr: "127.0.0.1:50000".parse().unwrap(),
            server_addr: cfg.remote(),
        };
        p.pump();
        assert_eq!(p.client.state(), State::Live);
        assert!(p.server.control.is_some());
        p
    }

    /// Moves datagrams both ways and acts on the server's events until
    /// nothing moves (time steps 1 ms each round).
    fn pump(&mut self) {
        for _ in 0..200 {
            let mut moved = false;
            let mut buf = Vec::new();
            while let Some((len, seg)) = self.client.poll_transmit(self.now, 1, &mut buf) {
                for d in buf[..len].chunks(seg) {
                    moved = true;
                    self.server_datagram(d);
                }
            }
            if let Some((_, conn)) = self.server.conn.as_mut() {
                let mut out = Vec::new();
                while let Some(t) = conn.poll_transmit(self.now, 1, &mut out) {
                    moved = true;
                    let d = out[..t.size].to_vec();
                    self.client.datagram(self.now, self.stamp, &d);
                    out.clear();
                }
            }
            self.server_events();
            self.now += Duration::from_millis(1);
            self.stamp += 1_000_000;
            self.client.handle_timeout(self.now, self.stamp);
            if let Some((_, conn)) = self.server.conn.as_mut() {
                if conn.poll_timeout().is_some_and(|t| t <= self.now) {
                    conn.handle_timeout(self.now);
                }
            }
            if !moved && self.client.poll_timeout().map_or(true, |t| t > self.now) {
                let quiet = self.server.conn.as_mut().map_or(true, |(_, c)| {
                    c.poll_timeout().map_or(true, |t| t > self.now)
                });
                if quiet {
                    return;
                }
            }
        }
    }

    fn server_datagram(&mut self, d: &[u8]) {
        let mut resp = Vec::new();
        let ev = self.server.endpoint.handle(
            self.now,
            self.client_addr,
            None,
            None,
            BytesMut::from(d),
            &mut resp,
        );
        match ev {
            Some(DatagramEvent::NewConnection(incoming)) => {
                let (h, c) = self
                    .server
                    .endpoint
                    .accept(incoming, self.now, &mut resp, None)
                    .unwrap();
                self.server.conn = Some((h, c));
            }
            Some(DatagramEvent::ConnectionEvent(_, ev)) => {
                if let Some((_, c)) = self.server.conn.as_mut() {
                    c.handle_event(ev);
                }
            }
            _ => {}
        }
        let _ = self.server_addr;
    }

    fn server_events(&mut self) {
        let section = self.server.section;
        let Some((h, conn)) = self.server.conn.as_mut() else {
            return;
        };
        while let Some(ev) = conn.poll_endpoint_events() {
            if let Some(ce) = self.server.endpoint.handle_event(*h, ev) {
                conn.handle_event(ce);
            }
        }
        while let Some(ev) = conn.poll() {
            match ev {
                Event::Connected => {
                    let id = conn.streams().open(Dir::Uni).unwrap();
                    let mut out = [0u8; 64];
                    let n = encode_control_stream_start(section, &mut out).unwrap();
                    conn.send_stream(id).write(&out[..n]).unwrap();
                    self.server.control = Some(id);
                }
                Event::Stream(StreamEvent::Opened { dir: Dir::Bi }) => {
                    while let Some(id) = conn.streams().accept(Dir::Bi) {
                        drain(conn, id, &mut self.server.requests);
                    }
                }
                Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                    while let Some(id) = conn.streams().accept(Dir::Uni) {
                        let mut ignore = Vec::new();
                        drain(conn, id, &mut ignore);
                    }
                }
                Event::Stream(StreamEvent::Readable { id }) => {
                    drain(conn, id, &mut self.server.requests);
                }
                Event::ConnectionLost { reason } => self.server.lost = Some(reason),
                _ => {}
            }
        }
    }

    /// The server answers request stream `id` with `status` and a body.
    fn answer(&mut self, id: StreamId, status: u16) {
        let (_, conn) = self.server.conn.as_mut().unwrap();
        let mut block = [0u8; 64];
        let n = encode_response(status, &[], false, &mut block).unwrap();
        let mut out = vec![0u8; 16];
        let h = encode_header(0x01, n as u64, &mut out).unwrap();
        out.truncate(h);
        out.extend_from_slice(&block[..n]);
        let mut head = [0u8; 16];
        let d = encode_data_header(2, &mut head).unwrap();
        out.extend_from_slice(&head[..d]);
        out.extend_from_slice(b"ok");
        let mut s = conn.send_stream(id);
        s.write(&out).unwrap();
        s.finish().unwrap();
        self.pump();
    }

    /// The server writes `bytes` on its control stream.
    fn control(&mut self, bytes: &[u8]) {
        let (_, conn) = self.server.conn.as_mut().unwrap();
        let id = self.server.control.unwrap();
        conn.send_stream(id).write(bytes).unwrap();
        self.pump();
    }

    /// The server opens a unidirectional stream and writes `bytes` on it
    /// (then its FIN when `fin`).
    fn uni(&mut self, bytes: &[u8], fin: bool) {
        let (_, conn) = self.server.conn.as_mut().unwrap();
        let id = conn.streams().open(Dir::Uni).unwrap();
        let mut s = conn.send_stream(id);
        s.write(bytes).unwrap();
        if fin {
            s.finish().unwrap();
        }
        self.pump();
    }

    /// Starts jobs `ids` (first tries, or retried ones).
    fn start(&mut self, ids: &[u64], retried: bool) {
        let mut block = [0u8; 64];
        let n =
            encode_request(b"GET", b"https", b"localhost", b"/", &[], false, &mut block).unwrap();
        for &id in ids {
            let req = Request {
                block: &block[..n],
                body: &[],
            };
            self.client
                .start(Job { id, retried }, req, self.stamp)
                .unwrap_or_else(|e| panic!("job {id} not started: {e:?}"));
        }
        self.pump();
    }

    /// The ends so far, by job.
    fn ends(&mut self) -> Vec<(u64, Ends)> {
        let mut out = Vec::new();
        while let Some(end) = self.client.poll_end() {
            let how = match end.how {
                How::Answered(Finish::Ok) => Ends::Ok(end.head.status.unwrap_or(0)),
                How::Answered(other) => panic!("answered as {other:?}"),
                How::Retry => Ends::Retry,
                How::Failed(f) => Ends::Failed(f),
            };
            out.push((end.job.id, how));
        }
        out.sort_by_key(|e| e.0);
        out
    }
}

/// Reads stream `id` to its end; a request stream ended is listed.
fn drain(conn: &mut Connection, id: StreamId, done: &mut Vec<StreamId>) {
    let mut rs = conn.recv_stream(id);
    let Ok(mut chunks) = rs.read(true) else {
        return;
    };
    loop {
        match chunks.next(usize::MAX) {
            Ok(Some(_)) => {}
            Ok(None) => {
                if !done.contains(&id) {
                    done.push(id);
                }
                break;
            }
            Err(_) => break,
        }
    }
    let _ = chunks.finalize();
}

fn goaway(id: u64) -> Vec<u8> {
    let mut out = [0u8; 16];
    let n = encode_goaway(id, &mut out).unwrap();
    out[..n].to_vec()
}

#[test]
fn requests_are_answered_and_the_server_limit_is_read() {
    let mut p = Pair::new(3, 16_384);
    assert_eq!(p.client.server_max_streams(), Some(3));
    assert_eq!(p.client.free(), 3);
    p.start(&[1, 2], false);
    assert_eq!(p.client.free(), 1);
    assert_eq!(p.server.requests.len(), 2);
    let ids = p.server.requests.clone();
    for id in ids {
        p.answer(id, 200);
    }
    assert_eq!(p.ends(), vec![(1, Ends::Ok(200)), (2, Ends::Ok(200))]);
    assert_eq!(p.client.in_flight(), 0);
    assert_eq!(p.client.free(), 3);
}

#[test]
fn goaway_retries_the_streams_at_and_above_its_id_once() {
    let mut p = Pair::new(100, 16_384);
    // Streams 0, 4, 8, 12: jobs 1 to 3 first tries, job 4 already retried.
    p.start(&[1, 2, 3], false);
    p.start(&[4], true);
    assert_eq!(p.server.requests.len(), 4);
    p.control(&goaway(4));
    assert_eq!(p.client.state(), State::GoingAway);
    assert_eq!(p.client.free(), 0);
    let job = Job {
        id: 9,
        retried: false,
    };
    let req = Request {
        block: b"\x00\x00\xd1",
        body: &[],
    };
    assert_eq!(p.client.start(job, req, 0), Err(Refused::NoStream(job)));
    assert_eq!(
        p.ends(),
        vec![
            (2, Ends::Retry),
            (3, Ends::Retry),
            (4, Ends::Failed(Finish::Error(ErrorKind::Reset)))
        ]
    );
    // Stream 0 is below the ID: it finishes; then the client closes.
    let first = p.server.requests[0];
    assert_eq!(VarInt::from(first).into_inner(), 0);
    p.answer(first, 200);
    assert_eq!(p.ends(), vec![(1, Ends::Ok(200))]);
    assert_eq!(p.client.state(), State::Closed);
    assert!(p.client.lost().is_none());
    p.pump();
    match &p.server.lost {
        Some(ConnectionError::ApplicationClosed(c)) => {
            assert_eq!(c.error_code.into_inner(), 0x100);
        }
        other => panic!("the server saw {other:?}"),
    }
}

#[test]
fn a_second_settings_closes_with_frame_unexpected() {
    let mut p = Pair::new(100, 16_384);
    p.start(&[1], false);
    let mut second = [0u8; 32];
    let n = encode_settings(100, &mut second).unwrap();
    p.control(&second[..n]);
    assert_eq!(p.client.state(), State::Closed);
    let lost = p.client.lost().unwrap();
    assert_eq!(lost.kind, ErrorKind::BadFraming);
    assert!(
        lost.text.contains("H3_FRAME_UNEXPECTED (0x105)"),
        "{}",
        lost.text
    );
    assert_eq!(
        p.ends(),
        vec![(
            1,
            Ends::Failed(Finish::Framing(FramingCause::Http3Protocol))
        )]
    );
    p.pump();
    match &p.server.lost {
        Some(ConnectionError::ApplicationClosed(c)) => {
            assert_eq!(c.error_code.into_inner(), 0x105);
        }
        other => panic!("the server saw {other:?}"),
    }
}

#[test]
fn the_server_section_limit_is_kept() {
    let mut block = [0u8; 64];
    let n = encode_request(b"GET", b"https", b"localhost", b"/", &[], false, &mut block).unwrap();
    let req = Request {
        block: &block[..n],
        body: &[],
    };
    let job = Job {
        id: 1,
        retried: false,
    };
    // :method GET, :scheme https, :authority localhost, :path /.
    let size = (7 + 3) + (7 + 5) + (10 + 9) + (5 + 1) + 4 * 32;
    let mut p = Pair::new(100, size - 1);
    assert_eq!(p.client.max_field_section(), Some(size - 1));
    assert_eq!(
        p.client.start(job, req, 0),
        Err(Refused::TooLarge {
            job,
            limit: size - 1
        })
    );
    assert_eq!(p.client.in_flight(), 0);
    let mut p = Pair::new(100, size);
    assert_eq!(p.client.start(job, req, 0), Ok(()));
    assert_eq!(p.client.in_flight(), 1);
}

#[test]
fn timeouts_cancel_the_stream() {
    let mut p = Pair::new(100, 16_384);
    p.start(&[1], false);
    let sent = p.stamp;
    let next = p.client.expire(sent + 10, 1_000_000_000, u64::MAX);
    assert!(next > sent + 10);
    assert!(p.ends().is_empty());
    p.client
        .expire(sent + 2_000_000_000, 1_000_000_000, u64::MAX);
    assert_eq!(
        p.ends(),
        vec![(1, Ends::Failed(Finish::Error(ErrorKind::Timeout)))]
    );
    assert_eq!(p.client.in_flight(), 0);
}

#[test]
fn the_server_stream_limit_stops_new_streams() {
    let mut p = Pair::new(2, 16_384);
    assert_eq!(p.client.server_max_streams(), Some(2));
    p.start(&[1, 2], false);
    assert_eq!(p.client.free(), 0);
    let job = Job {
        id: 3,
        retried: false,
    };
    let req = Request {
        block: b"\x00\x00\xd1",
        body: &[],
    };
    assert_eq!(p.client.start(job, req, 0), Err(Refused::NoStream(job)));
    let ids = p.server.requests.clone();
    for id in ids {
        p.answer(id, 200);
    }
    assert_eq!(p.ends().len(), 2);
    // The server's MAX_STREAMS grew as its streams closed.
    assert_eq!(p.client.free(), 2);
}

#[test]
fn a_server_close_ends_the_streams_as_reset() {
    let mut p = Pair::new(100, 16_384);
    p.start(&[1, 2], false);
    let now = p.now;
    let (_, conn) = p.server.conn.as_mut().unwrap();
    conn.close(
        now,
        VarInt::from_u32(0x102),
        bytes::Bytes::from_static(b"bye"),
    );
    p.pump();
    assert_eq!(p.client.state(), State::Closed);
    let lost = p.client.lost().unwrap();
    assert_eq!(
        (lost.text.as_str(), lost.kind),
        (
            "HTTP/3: the server closed the connection with code 0x102 (bye)",
            ErrorKind::Reset
        )
    );
    assert_eq!(
        p.ends(),
        vec![
            (1, Ends::Failed(Finish::Error(ErrorKind::Reset))),
            (2, Ends::Failed(Finish::Error(ErrorKind::Reset)))
        ]
    );
}

#[test]
fn reserved_streams_are_discarded_and_a_push_stream_is_an_id_error() {
    let mut p = Pair::new(100, 16_384);
    // A reserved type (0x21) with bytes, ended; then QPACK streams as
    // aioquic opens them (the encoder's capacity 0 instruction).
    p.uni(&[0x21, 0xde, 0xad], true);
    p.uni(&[0x02, 0x20], false);
    p.uni(&[0x03], false);
    assert_eq!(p.client.state(), State::Live);
    p.start(&[1], false);
    let id = p.server.requests[0];
    p.answer(id, 200);
    assert_eq!(p.ends(), vec![(1, Ends::Ok(200))]);
    // A push stream: the client allowed none.
    p.start(&[2], false);
    p.uni(&[0x01, 0x00], false);
    assert_eq!(p.client.state(), State::Closed);
    assert!(
        p.client
            .lost()
            .unwrap()
            .text
            .contains("H3_ID_ERROR (0x108)"),
        "{:?}",
        p.client.lost()
    );
    assert_eq!(
        p.ends(),
        vec![(
            2,
            Ends::Failed(Finish::Framing(FramingCause::Http3Protocol))
        )]
    );
    p.pump();
    match &p.server.lost {
        Some(ConnectionError::ApplicationClosed(c)) => {
            assert_eq!(c.error_code.into_inner(), 0x108);
        }
        other => panic!("the server saw {other:?}"),
    }
}

#[test]
fn the_control_stream_ending_is_closed_critical_stream() {
    let mut p = Pair::new(100, 16_384);
    let (_, conn) = p.server.conn.as_mut().unwrap();
    let id = p.server.control.unwrap();
    conn.send_stream(id).finish().unwrap();
    p.pump();
    assert_eq!(p.client.state(), State::Closed);
    match &p.server.lost {
        Some(ConnectionError::ApplicationClosed(c)) => {
            assert_eq!(c.error_code.into_inner(), 0x104);
        }
        other => panic!("the server saw {other:?}"),
    }
}
