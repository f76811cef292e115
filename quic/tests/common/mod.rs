//! The loopback harness the `metronome-quic` tests share: an
//! [`H3Client`] ([`Pair::client`]) against a `quinn-proto` server in the
//! same process, no socket: datagrams are handed across by [`Pair::pump`],
//! time is made up. The server side is a few lines of HTTP/3 written here
//! with core's writers; a test scripts what it does (answer, GOAWAY, a
//! second SETTINGS, a stream limit). Each test binary uses part of it.
#![allow(dead_code, unused_imports)]

pub use std::net::SocketAddr;
pub use std::sync::Arc;
pub use std::time::{Duration, Instant};

pub use bytes::BytesMut;
pub use quinn_proto::crypto::rustls::QuicServerConfig;
pub use quinn_proto::{
    Connection, ConnectionError, ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig,
    Event, ServerConfig, StreamEvent, StreamId, TransportConfig, VarInt,
};

pub use metronome_core::engine::tls::{ClientCert, Tls};
pub use metronome_core::exchange::Finish;
pub use metronome_core::h3::frame::{
    encode_control_stream_start, encode_data_header, encode_goaway, encode_header, encode_settings,
};
pub use metronome_core::h3::qpack::{encode_request, encode_response};
pub use metronome_core::measure::{ErrorKind, FramingCause};
pub use metronome_core::plan::Protocol;
pub use metronome_quic::{Config, FlightJob, H3Client, How, Refused, Request, State};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Job {
    pub id: u64,
    pub retried: bool,
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
pub enum Ends {
    Ok(u16),
    Retry,
    Failed(Finish<'static>),
}

/// The server's side: one connection, its control stream, the request
/// streams it has read to their end.
pub struct Server {
    pub endpoint: Endpoint,
    /// Its SETTINGS_MAX_FIELD_SECTION_SIZE.
    pub section: u64,
    pub conn: Option<(ConnectionHandle, Connection)>,
    pub control: Option<StreamId>,
    pub requests: Vec<StreamId>,
    pub lost: Option<ConnectionError>,
}

pub struct Pair {
    /// The client's calls in [`Pair::pump`] count their allocations
    /// (`zero_alloc.rs`).
    pub counting: bool,
    pub client: H3Client<Job>,
    pub server: Server,
    pub now: Instant,
    pub stamp: u64,
    pub client_addr: SocketAddr,
    pub server_addr: SocketAddr,
}

pub fn configs(max_bidi: u32) -> (Config, Arc<ServerConfig>) {
    let (cfg, sc, _) = configs_with(max_bidi, false);
    (cfg, sc)
}

/// A self-signed certificate for `localhost`: its DER and its key.
fn certificate() -> (
    rustls::pki_types::CertificateDer<'static>,
    rustls::pki_types::PrivateKeyDer<'static>,
) {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert = ck.cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(ck.signing_key.serialize_der().into());
    (cert, key)
}

/// A server for `cert` allowing `max_bidi` request streams, with a
/// session cache of its own; 0-RTT accepted when `early`.
fn server_config(
    cert: &rustls::pki_types::CertificateDer<'static>,
    key: &rustls::pki_types::PrivateKeyDer<'static>,
    max_bidi: u32,
    early: bool,
) -> Arc<ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut server = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key.clone_key())
        .unwrap();
    server.alpn_protocols = vec![b"h3".to_vec()];
    if early {
        server.max_early_data_size = u32::MAX;
    }
    let mut sc = ServerConfig::with_crypto(Arc::new(QuicServerConfig::try_from(server).unwrap()));
    let mut transport = TransportConfig::default();
    transport.max_concurrent_bidi_streams(VarInt::from_u32(max_bidi));
    sc.transport_config(Arc::new(transport));
    Arc::new(sc)
}

/// The client's configuration (early data on when `early`: 0-RTT once
/// it holds a ticket) and two servers of one certificate, each with its
/// own session cache, 0-RTT accepted when `early`: the second knows none
/// of the first's tickets (a server restarted).
pub fn configs_with(max_bidi: u32, early: bool) -> (Config, Arc<ServerConfig>, Arc<ServerConfig>) {
    let (cert, key) = certificate();
    let first = server_config(&cert, &key, max_bidi, early);
    let second = server_config(&cert, &key, max_bidi, early);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).unwrap();
    let mut client = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    client.enable_early_data = early;
    let tls = Tls::new(
        Arc::new(client),
        rustls::pki_types::ServerName::try_from("localhost").unwrap(),
        Arc::new(ClientCert::new(None)),
    );
    let addr: SocketAddr = "127.0.0.1:4433".parse().unwrap();
    let cfg = Config::new(&tls, addr, Protocol::Http, 0).unwrap();
    (cfg, first, second)
}

impl Pair {
    /// A client connected to a server allowing `max_bidi` request streams
    /// and field sections of `section` bytes.
    pub fn new(max_bidi: u32, section: u64) -> Pair {
        let (cfg, sc) = configs(max_bidi);
        let mut p = Pair::unopened(&cfg, sc, section);
        p.pump();
        assert_eq!(p.client.state(), State::Live);
        assert!(p.server.control.is_some());
        p
    }

    /// A client of `cfg` whose first flight is ready to go to a server of
    /// `sc` (nothing moved yet: requests started now go in 0-RTT when
    /// the client holds a ticket).
    pub fn unopened(cfg: &Config, sc: Arc<ServerConfig>, section: u64) -> Pair {
        let now = Instant::now();
        Pair {
            counting: false,
            client: H3Client::connect(cfg, now).unwrap(),
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
        }
    }

    /// Moves datagrams both ways and acts on the server's events until
    /// nothing moves (time steps 1 ms each round).
    pub fn pump(&mut self) {
        for _ in 0..200 {
            let mut moved = false;
            let mut buf = Vec::new();
            let (c, now) = (self.counting, self.now);
            while let Some((len, seg)) = counted(c, || self.client.poll_transmit(now, 1, &mut buf))
            {
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
                    let stamp = self.stamp;
                    counted(c, || self.client.datagram(now, stamp, &d));
                    out.clear();
                }
            }
            self.server_events();
            self.now += Duration::from_millis(1);
            self.stamp += 1_000_000;
            let (now, stamp) = (self.now, self.stamp);
            counted(c, || self.client.handle_timeout(now, stamp));
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

    pub fn server_datagram(&mut self, d: &[u8]) {
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

    pub fn server_events(&mut self) {
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
    pub fn answer(&mut self, id: StreamId, status: u16) {
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
    pub fn control(&mut self, bytes: &[u8]) {
        let (_, conn) = self.server.conn.as_mut().unwrap();
        let id = self.server.control.unwrap();
        conn.send_stream(id).write(bytes).unwrap();
        self.pump();
    }

    /// The server opens a unidirectional stream and writes `bytes` on it
    /// (then its FIN when `fin`).
    pub fn uni(&mut self, bytes: &[u8], fin: bool) {
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
    pub fn start(&mut self, ids: &[u64], retried: bool) {
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
    pub fn ends(&mut self) -> Vec<(u64, Ends)> {
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
pub fn drain(conn: &mut Connection, id: StreamId, done: &mut Vec<StreamId>) {
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

pub fn goaway(id: u64) -> Vec<u8> {
    let mut out = [0u8; 16];
    let n = encode_goaway(id, &mut out).unwrap();
    out[..n].to_vec()
}

/// Runs `f`, counting its allocations when `on` (with the counting
/// allocator of `zero_alloc.rs`; elsewhere the switch does nothing).
pub fn counted<T>(on: bool, f: impl FnOnce() -> T) -> T {
    if on {
        metronome_testkit::count_on_this_thread(true);
    }
    let r = f();
    if on {
        metronome_testkit::count_on_this_thread(false);
    }
    r
}
