//! Core's `h2::Flights` on a virtual clock, fed server frames built as in
//! `golden/h2/`: every way a stream ends, exactly (answered, refused and
//! retried once, reset, GOAWAY mid-flight, timed out, the connection's
//! end, a cut SSE body), the connection error the streams get (ours, else
//! the last GOAWAY's), and body pushes stopped by a window or the buffer.

use crate::h2_drive::{flush, frames};
use metronome_core::exchange::{Finish, GAP_CAP};
use metronome_core::flight::{End, FlightJob, How};
use metronome_core::h2::frame::{setting, ErrorCode, Frame, SettingsParams};
use metronome_core::h2::hpack::{encode_field, encode_request};
use metronome_core::h2::{Config, Connection, Flights, Step};
use metronome_core::plan::Protocol;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Job {
    id: usize,
    request: usize,
    intended_ns: u64,
    retried: bool,
}

impl FlightJob for Job {
    fn request(&self) -> usize {
        self.request
    }
    fn intended_ns(&self) -> u64 {
        self.intended_ns
    }
    fn retried(&self) -> bool {
        self.retried
    }
}

const TIMEOUT: u64 = 1_000;
const BODIES: [&[u8]; 2] = [b"", b"hello world"];

/// One connection, its flights, and every end in order, as text.
struct Sim {
    conn: Connection<8>,
    flights: Flights<Job, 8>,
    gaps: Vec<u64>,
    ends: Vec<String>,
    /// Bytes the client wrote since the last look.
    wrote: Vec<u8>,
    failed: bool,
}

fn put(wire: &mut Vec<u8>, f: Frame<'_>) {
    let mut b = [0u8; 1024];
    let n = f.encode(&mut b).unwrap();
    wire.extend_from_slice(&b[..n]);
}

fn show(end: End<'_, Job>) -> String {
    let how = match end.how {
        How::Retry => "retry".to_string(),
        How::Answered(Finish::Stream { timing, gaps }) => format!(
            "answered stream chunks={} done={:?} gaps={:?}",
            timing.content_chunks, timing.done_ns, gaps
        ),
        How::Answered(f) => format!("answered {f:?}"),
        How::Failed(f) => format!("failed {f:?}"),
    };
    format!("#{} sent={} {how}", end.job.id, end.sent_ns)
}

fn settings(params: &[(u16, u32)]) -> Vec<u8> {
    let s: Vec<u8> = params
        .iter()
        .flat_map(|&(id, v)| id.to_be_bytes().into_iter().chain(v.to_be_bytes()))
        .collect();
    let mut w = Vec::new();
    put(
        &mut w,
        Frame::Settings {
            ack: false,
            params: SettingsParams::new(&s).unwrap(),
        },
    );
    w
}

fn head(stream: u32, status: &[u8], event_stream: bool, end_stream: bool) -> Vec<u8> {
    let mut block = [0u8; 64];
    let mut n = encode_field(b":status", status, false, &mut block).unwrap();
    if event_stream {
        n += encode_field(
            b"content-type",
            b"text/event-stream",
            false,
            &mut block[n..],
        )
        .unwrap();
    }
    let mut w = Vec::new();
    put(
        &mut w,
        Frame::Headers {
            stream,
            end_stream,
            end_headers: true,
            priority: None,
            block: &block[..n],
            pad: None,
        },
    );
    w
}

fn data(stream: u32, bytes: &[u8], end_stream: bool) -> Vec<u8> {
    let mut w = Vec::new();
    put(
        &mut w,
        Frame::Data {
            stream,
            end_stream,
            data: bytes,
            pad: None,
        },
    );
    w
}

fn rst(stream: u32, code: ErrorCode) -> Vec<u8> {
    let mut w = Vec::new();
    put(&mut w, Frame::RstStream { stream, code });
    w
}

fn goaway(last_stream: u32, code: ErrorCode) -> Vec<u8> {
    let mut w = Vec::new();
    put(
        &mut w,
        Frame::GoAway {
            last_stream,
            code,
            debug: b"",
        },
    );
    w
}

fn window(stream: u32, increment: u32) -> Vec<u8> {
    let mut w = Vec::new();
    put(&mut w, Frame::WindowUpdate { stream, increment });
    w
}

impl Sim {
    /// A ready connection; `server`: the server's SETTINGS parameters.
    fn new(protocol: Protocol, server: &[(u16, u32)]) -> Sim {
        let mut sim = Sim {
            conn: Connection::new(Config::DEFAULT),
            flights: Flights::new(protocol),
            gaps: vec![0; 8 * GAP_CAP],
            ends: Vec::new(),
            wrote: Vec::new(),
            failed: false,
        };
        flush(&mut sim.conn, &mut [0u8; 256], &mut Vec::new());
        assert_eq!(sim.feed(0, &settings(server)), vec![Step::Ready]);
        sim.wrote.clear();
        sim
    }

    /// Starts job `id` (request `request`) at `now`; returns its stream.
    fn start(&mut self, now: u64, id: usize, request: usize, retried: bool) -> u32 {
        let mut block = [0u8; 128];
        let n = encode_request(b"POST", b"http", b"h", b"/", &[], true, &mut block).unwrap();
        let mut out = [0u8; 256];
        let body = BODIES[request];
        let (stream, _) = self
            .conn
            .start_request(&block[..n], body.is_empty(), &mut out)
            .unwrap();
        let slot = self.flights.free_slot().unwrap();
        let job = Job {
            id,
            request,
            intended_ns: now,
            retried,
        };
        let gap = Some(slot as u32);
        assert_eq!(
            self.flights.start(slot, stream, job, now, TIMEOUT, gap),
            now + TIMEOUT
        );
        self.push(&mut [0u8; 256]);
        stream
    }

    /// Pushes bodies into `out`, keeps what was written.
    fn push(&mut self, out: &mut [u8]) -> (usize, bool) {
        let p = self.flights.push_bodies(&mut self.conn, |r| BODIES[r], out);
        self.wrote.extend_from_slice(&out[..p.written]);
        (p.written, p.buffer_full)
    }

    /// The server's bytes at `now`: events to the flights (a connection
    /// error ends every stream); returns the steps.
    fn feed(&mut self, now: u64, wire: &[u8]) -> Vec<Step> {
        let mut steps = Vec::new();
        let mut at = 0;
        loop {
            let (used, event) = match self.conn.handle_read(&wire[at..]) {
                Ok(r) => r,
                Err(_) => {
                    self.failed = true;
                    self.end_connection();
                    break;
                }
            };
            let frame = &wire[at..at + used];
            at += used;
            let Some(event) = event else {
                if used == 0 {
                    break;
                }
                continue;
            };
            let ends = &mut self.ends;
            let step = self.flights.on_event(
                now,
                event,
                frame,
                &mut self.conn,
                &mut self.gaps,
                &mut |e| ends.push(show(e)),
            );
            if step == Step::Unblocked {
                self.push(&mut [0u8; 256]);
            }
            if step != Step::None {
                steps.push(step);
            }
        }
        flush(&mut self.conn, &mut [0u8; 256], &mut self.wrote);
        steps
    }

    fn expire(&mut self, now: u64, hard: u64) -> u64 {
        let ends = &mut self.ends;
        let next = self
            .flights
            .expire(now, hard, &mut self.conn, &mut |e| ends.push(show(e)));
        flush(&mut self.conn, &mut [0u8; 256], &mut self.wrote);
        next
    }

    fn end_connection(&mut self) {
        let ends = &mut self.ends;
        self.flights
            .connection_end(&self.conn, &mut |e| ends.push(show(e)));
    }

    fn took(&mut self) -> Vec<String> {
        std::mem::take(&mut self.ends)
    }

    fn wrote(&mut self) -> Vec<String> {
        frames(&std::mem::take(&mut self.wrote))
    }
}

#[test]
fn answers_end_with_their_exchange() {
    let mut s = Sim::new(Protocol::Http, &[]);
    assert!(!s.flights.drained(&s.conn));
    let a = s.start(10, 0, 0, false);
    let b = s.start(20, 1, 0, false);
    let c = s.start(30, 2, 0, false);
    assert_eq!((a, b, c, s.flights.open()), (1, 3, 5, 3));
    let mut wire = head(a, b"200", false, false);
    wire.extend(data(a, b"ok", true));
    wire.extend(head(b, b"503", false, true));
    s.feed(100, &wire);
    assert_eq!(
        s.took(),
        ["#0 sent=10 answered Ok", "#1 sent=20 answered Status(503)"]
    );
    // Trailers end a stream too.
    let mut wire = head(c, b"204", false, false);
    let mut block = [0u8; 16];
    let n = encode_field(b"x", b"y", false, &mut block).unwrap();
    put(
        &mut wire,
        Frame::Headers {
            stream: c,
            end_stream: true,
            end_headers: true,
            priority: None,
            block: &block[..n],
            pad: None,
        },
    );
    s.feed(200, &wire);
    assert_eq!(s.took(), ["#2 sent=30 answered Ok"]);
    assert_eq!(s.flights.open(), 0);
    assert_eq!(s.flights.free_slot(), Some(0));
}

#[test]
fn refused_stream_is_retried_once() {
    let mut s = Sim::new(Protocol::Http, &[]);
    let a = s.start(0, 0, 0, false);
    let b = s.start(0, 1, 0, true);
    let c = s.start(0, 2, 0, false);
    let mut wire = rst(a, ErrorCode::REFUSED_STREAM);
    wire.extend(rst(b, ErrorCode::REFUSED_STREAM));
    wire.extend(rst(c, ErrorCode::INTERNAL_ERROR));
    s.feed(50, &wire);
    assert_eq!(
        s.took(),
        [
            "#0 sent=0 retry",
            "#1 sent=0 failed Error(Reset)",
            "#2 sent=0 failed Error(Reset)",
        ]
    );
    assert_eq!(s.flights.open(), 0);
}

#[test]
fn goaway_mid_flight_retries_the_refused_and_keeps_the_rest() {
    let mut s = Sim::new(Protocol::Http, &[]);
    let a = s.start(0, 0, 0, false);
    let _b = s.start(1, 1, 0, false);
    let _c = s.start(2, 2, 0, true);
    s.feed(10, &goaway(a, ErrorCode::NO_ERROR));
    assert_eq!(
        s.took(),
        ["#1 sent=1 retry", "#2 sent=2 failed Error(Reset)"]
    );
    assert_eq!(s.flights.open(), 1);
    assert_eq!(
        s.flights.connection_error(&s.conn),
        Some(ErrorCode::NO_ERROR)
    );
    assert!(!s.flights.drained(&s.conn));
    // The stream it kept completes: the connection is drained.
    s.feed(20, &head(a, b"200", false, true));
    assert_eq!(s.took(), ["#0 sent=0 answered Ok"]);
    assert!(s.flights.drained(&s.conn));
}

/// The one rule for the error a dead connection's streams get: ours,
/// else the server's last GOAWAY's code, else none.
#[test]
fn connection_end_takes_ours_else_the_last_goaway() {
    // The last GOAWAY names malformed bytes: bad framing, though the
    // first said NO_ERROR.
    let mut s = Sim::new(Protocol::Http, &[]);
    let a = s.start(0, 0, 0, false);
    let mut wire = goaway(a, ErrorCode::NO_ERROR);
    wire.extend(goaway(a, ErrorCode::PROTOCOL_ERROR));
    s.feed(10, &wire);
    s.end_connection();
    assert_eq!(s.took(), ["#0 sent=0 failed Framing(Http2Protocol)"]);
    // The reverse order: a reset.
    let mut s = Sim::new(Protocol::Http, &[]);
    let a = s.start(0, 0, 0, false);
    let mut wire = goaway(a, ErrorCode::PROTOCOL_ERROR);
    wire.extend(goaway(a, ErrorCode::NO_ERROR));
    s.feed(10, &wire);
    s.end_connection();
    assert_eq!(s.took(), ["#0 sent=0 failed Error(Reset)"]);
    // Ours beats the server's: a frame on stream 0 that needs a stream
    // is our PROTOCOL_ERROR after a NO_ERROR GOAWAY.
    let mut s = Sim::new(Protocol::Http, &[]);
    let a = s.start(0, 0, 0, false);
    let mut wire = goaway(a, ErrorCode::NO_ERROR);
    wire.extend([0, 0, 1, 0, 0, 0, 0, 0, 0, b'x']); // DATA on stream 0
    s.feed(10, &wire);
    assert!(s.failed);
    assert_eq!(s.took(), ["#0 sent=0 failed Framing(Http2Protocol)"]);
    // No error at all (the transport closed): a reset.
    let mut s = Sim::new(Protocol::Http, &[]);
    s.start(0, 0, 0, false);
    s.end_connection();
    assert_eq!(s.took(), ["#0 sent=0 failed Error(Reset)"]);
}

#[test]
fn streams_time_out_at_their_deadline_or_the_hard_end() {
    let mut s = Sim::new(Protocol::Http, &[]);
    let a = s.start(0, 0, 0, false);
    let b = s.start(300, 1, 0, false);
    assert_eq!(s.expire(999, u64::MAX), 1_000);
    assert!(s.took().is_empty());
    assert_eq!(s.expire(1_000, u64::MAX), 1_300);
    assert_eq!(s.took(), ["#0 sent=0 failed Error(Timeout)"]);
    assert_eq!(
        s.wrote(),
        [format!("RstStream {{ stream: {a}, code: ErrorCode(8) }}")]
    );
    // The run's hard end comes before the second's deadline.
    assert_eq!(s.expire(1_100, 1_100), u64::MAX);
    assert_eq!(s.took(), ["#1 sent=300 failed Error(Timeout)"]);
    assert_eq!(
        s.wrote(),
        [format!("RstStream {{ stream: {b}, code: ErrorCode(8) }}")]
    );
    // An answer after the cancel is for no flight.
    s.feed(1_200, &head(a, b"200", false, true));
    assert!(s.took().is_empty());
}

#[test]
fn a_window_stalls_a_body_until_unblocked() {
    let mut s = Sim::new(Protocol::Http, &[(setting::INITIAL_WINDOW_SIZE, 4)]);
    let a = s.start(0, 0, 1, false);
    // The window lets 4 bytes through.
    assert_eq!(
        s.wrote(),
        [format!(
            "Data {{ stream: {a}, end_stream: false, data: [104, 101, 108, 108], pad: None }}"
        )]
    );
    // Stalled: not tried again before the window grows.
    assert_eq!(s.push(&mut [0u8; 256]), (0, false));
    assert_eq!(s.conn.blocked_sends(), 1);
    assert_eq!(s.feed(10, &window(a, 100)), vec![Step::Unblocked]);
    assert_eq!(
        s.wrote(),
        [format!("Data {{ stream: {a}, end_stream: true, data: [111, 32, 119, 111, 114, 108, 100], pad: None }}")]
    );
    s.feed(20, &head(a, b"200", false, true));
    assert_eq!(s.took(), ["#0 sent=0 answered Ok"]);
}

#[test]
fn a_full_buffer_cuts_a_body_and_says_so() {
    let mut s = Sim::new(Protocol::Http, &[]);
    let mut block = [0u8; 64];
    let n = encode_request(b"POST", b"http", b"h", b"/", &[], true, &mut block).unwrap();
    let (stream, _) = s
        .conn
        .start_request(&block[..n], false, &mut [0u8; 128])
        .unwrap();
    let job = Job {
        id: 7,
        request: 1,
        ..Job::default()
    };
    s.flights.start(0, stream, job, 0, TIMEOUT, None);
    // Room for one frame header and 3 bytes.
    assert_eq!(s.push(&mut [0u8; 12]), (12, true));
    assert_eq!(s.push(&mut [0u8; 9]), (0, true));
    assert_eq!(s.push(&mut [0u8; 64]), (17, false));
    assert_eq!(s.push(&mut [0u8; 64]), (0, false));
    assert_eq!(s.conn.blocked_sends(), 0);
}

#[test]
fn sse_answer_and_cut_body() {
    let mut s = Sim::new(Protocol::OpenAiSse, &[]);
    let a = s.start(0, 0, 0, false);
    let b = s.start(5, 1, 0, false);
    let chunk =
        |c: &str| format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{c}\"}}}}]}}\n\n");
    let mut wire = head(a, b"200", true, false);
    wire.extend(data(a, chunk("x").as_bytes(), false));
    s.feed(100, &wire);
    let mut wire = data(a, chunk("y").as_bytes(), false);
    wire.extend(data(a, b"data: [DONE]\n\n", true));
    wire.extend(head(b, b"200", true, false));
    wire.extend(data(b, chunk("z").as_bytes(), false));
    s.feed(250, &wire);
    assert_eq!(
        s.took(),
        ["#0 sent=0 answered stream chunks=2 done=Some(250) gaps=[150]"]
    );
    // The connection dies mid-body: a cut stream.
    s.end_connection();
    assert_eq!(s.took(), ["#1 sent=5 failed Error(StreamCut)"]);
    assert_eq!(s.flights.dropped_gaps(), 0);
}
