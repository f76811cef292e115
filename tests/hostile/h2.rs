//! The hostile scenarios that apply to HTTP/2 (h2c with prior knowledge):
//! a server that resets streams, refuses them, says GOAWAY while streams are
//! in flight, never answers, closes mid-answer, stalls, answers 429, limits
//! its streams to one or its header lists (MAX_HEADER_LIST_SIZE), or breaks
//! the framing; and a table of the stream
//! ends run on every engine, which must agree field by field.
//!
//! The server side is written here from RFC 9113 by hand (frame headers and
//! HPACK static-table bytes), not with core's client or serve's code, so a
//! shared misreading of the RFC cannot make both ends agree.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::case::{nonzero, run, with, N, SHORT, SLOW};
use crate::common::engines;
use crate::script::{script, Peer, Script};

/// Frame types (RFC 9113 section 6).
pub(crate) const DATA: u8 = 0;
pub(crate) const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const PING: u8 = 6;
const GOAWAY: u8 = 7;
const WINDOW_UPDATE: u8 = 8;
/// Settings (RFC 9113 section 6.5.2).
const MAX_CONCURRENT_STREAMS: u16 = 0x3;
const MAX_HEADER_LIST_SIZE: u16 = 0x6;
/// Flags.
pub(crate) const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
pub(crate) const END_HEADERS: u8 = 0x4;
/// Error codes (RFC 9113 section 7).
const NO_ERROR: u32 = 0;
const INTERNAL_ERROR: u32 = 2;
const PROTOCOL_ERROR: u32 = 1;
const REFUSED_STREAM: u32 = 7;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// A frame: the 9-byte header and the payload.
pub(crate) fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// `:status 200` is static-table index 8 (RFC 7541 Appendix A).
pub(crate) const STATUS_200: &[u8] = &[0x88];
/// `:status 429`: a literal without indexing, its name static index 8.
const STATUS_429: &[u8] = &[0x08, 3, b'4', b'2', b'9'];
/// `content-type: text/plain`: static name index 31, a literal value.
fn content_type_plain() -> Vec<u8> {
    let mut v = vec![0x0f, 31 - 15, 10];
    v.extend_from_slice(b"text/plain");
    v
}

/// A whole answer on `stream`: HEADERS `status` then DATA "ok" ending it.
fn answer(stream: u32, status: &[u8]) -> Vec<u8> {
    let mut block = status.to_vec();
    block.extend(content_type_plain());
    let mut out = frame(HEADERS, END_HEADERS, stream, &block);
    out.extend(frame(DATA, END_STREAM, stream, b"ok"));
    out
}

/// The server's half of an HTTP/2 connection, over a scripted [`Peer`].
pub(crate) struct H2<'a> {
    peer: &'a mut Peer,
}

impl<'a> H2<'a> {
    /// Reads the client's preface and sends the server's SETTINGS
    /// (`params`: identifier and value of each); `None` when the client
    /// went away first.
    fn accept(peer: &'a mut Peer, params: &[(u16, u32)]) -> Option<H2<'a>> {
        while peer.buf.len() < PREFACE.len() {
            if !peer.fill() {
                return None;
            }
        }
        assert_eq!(&peer.buf[..PREFACE.len()], PREFACE, "the client preface");
        peer.buf.drain(..PREFACE.len());
        let mut settings = Vec::new();
        for (id, value) in params {
            settings.extend_from_slice(&id.to_be_bytes());
            settings.extend_from_slice(&value.to_be_bytes());
        }
        if !peer.send(&frame(SETTINGS, 0, 0, &settings)) {
            return None;
        }
        Some(H2 { peer })
    }

    /// The next frame from the client (kind, flags, stream, payload),
    /// answering its SETTINGS and PINGs on the way; `None` at its close.
    fn frame(&mut self) -> Option<(u8, u8, u32, Vec<u8>)> {
        loop {
            let b = &self.peer.buf;
            if b.len() >= 9 {
                let len = (usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2]);
                if b.len() >= 9 + len {
                    let (kind, flags) = (b[3], b[4]);
                    let stream = u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff;
                    let payload = b[9..9 + len].to_vec();
                    self.peer.buf.drain(..9 + len);
                    match kind {
                        SETTINGS if flags & ACK == 0 => {
                            self.peer.send(&frame(SETTINGS, ACK, 0, &[]));
                        }
                        PING if flags & ACK == 0 => {
                            self.peer.send(&frame(PING, ACK, 0, &payload));
                        }
                        _ => return Some((kind, flags, stream, payload)),
                    }
                    continue;
                }
            }
            if !self.peer.fill() {
                return None;
            }
        }
    }

    /// The stream of the next whole request (a GET: HEADERS with
    /// END_STREAM), counted as the server's request; `None` at the client's
    /// close.
    pub(crate) fn request(&mut self) -> Option<u32> {
        loop {
            let (kind, flags, stream, _) = self.frame()?;
            if (kind == HEADERS || kind == DATA) && flags & END_STREAM != 0 {
                self.peer.counted();
                return Some(stream);
            }
        }
    }

    /// The next request if it arrives within `wait`.
    fn request_within(&mut self, wait: Duration) -> Option<u32> {
        self.peer.deadline = Some(std::time::Instant::now() + wait);
        let r = self.request();
        self.peer.deadline = None;
        r
    }

    pub(crate) fn send(&mut self, bytes: &[u8]) -> bool {
        self.peer.send(bytes)
    }
}

/// A script that runs `f` on each connection once the HTTP/2 handshake is
/// done (`max_streams`: SETTINGS_MAX_CONCURRENT_STREAMS when given).
pub(crate) fn h2(max_streams: Option<u32>, f: impl Fn(&mut H2) + Send + Sync + 'static) -> Script {
    let params: Vec<(u16, u32)> = max_streams
        .map(|n| (MAX_CONCURRENT_STREAMS, n))
        .into_iter()
        .collect();
    h2_settings(params, f)
}

/// [`h2`] with the server's SETTINGS `params`.
fn h2_settings(params: Vec<(u16, u32)>, f: impl Fn(&mut H2) + Send + Sync + 'static) -> Script {
    script(move |p| {
        if let Some(mut c) = H2::accept(p, &params) {
            f(&mut c);
        }
    })
}

/// A GOAWAY frame.
fn goaway(last: u32, code: u32) -> Vec<u8> {
    let mut p = last.to_be_bytes().to_vec();
    p.extend_from_slice(&code.to_be_bytes());
    frame(GOAWAY, 0, 0, &p)
}

/// A server that opens every window as wide as HTTP/2 allows (2^31-1 per
/// stream and for the connection), then never reads again: a client's
/// large body fills the socket buffers and its writes block.
fn wide_open_then_deaf() -> Script {
    script(|p| {
        let mut pre = vec![0u8; PREFACE.len()];
        while p.buf.len() < PREFACE.len() {
            if !p.fill() {
                return;
            }
        }
        pre.copy_from_slice(&p.buf[..PREFACE.len()]);
        let mut settings = 4u16.to_be_bytes().to_vec();
        settings.extend_from_slice(&0x7fff_ffffu32.to_be_bytes());
        let mut bytes = frame(SETTINGS, 0, 0, &settings);
        bytes.extend(frame(SETTINGS, ACK, 0, &[]));
        bytes.extend(frame(
            WINDOW_UPDATE,
            0,
            0,
            &(0x7fff_ffffu32 - 65_535).to_be_bytes(),
        ));
        if p.send(&bytes) {
            p.hold();
        }
    })
}

fn h2c(args: &[&'static str]) -> Vec<&'static str> {
    with(args, &["--http2-prior-knowledge"])
}

/// Answers, resets, refusals and GOAWAYs: each request has the outcome the
/// server gave its stream, a refused stream is sent once more, and a GOAWAY
/// loses nothing.
#[test]
fn h2_streams_reset_refused_and_goaway_lose_nothing() {
    let ok = h2(None, |c| {
        while let Some(s) = c.request() {
            if !c.send(&answer(s, STATUS_200)) {
                break;
            }
        }
    });
    let too_many = h2(None, |c| {
        while let Some(s) = c.request() {
            if !c.send(&answer(s, STATUS_429)) {
                break;
            }
        }
    });
    let resets = h2(None, |c| {
        while let Some(s) = c.request() {
            if !c.send(&frame(RST_STREAM, 0, s, &INTERNAL_ERROR.to_be_bytes())) {
                break;
            }
        }
    });
    let refuse_first = refuse_first();
    // Three answers, then GOAWAY NO_ERROR naming the third stream and a
    // close: every connection carries three requests.
    let goaway_after_3 = h2(None, |c| {
        let mut last = 0;
        for _ in 0..3 {
            let Some(s) = c.request() else { return };
            last = s;
            if !c.send(&answer(s, STATUS_200)) {
                return;
            }
        }
        c.send(&goaway(last, NO_ERROR));
        c.peer.pause(Duration::from_millis(20));
    });
    let goaway_in_flight = goaway_in_flight();
    for engine in engines() {
        let r = run(engine, &ok, "/", &h2c(SHORT));
        r.expect("h2 ok", N, N, &[]);
        r.expect_connections("h2 ok", 1);

        let r = run(engine, &too_many, "/", &h2c(SHORT));
        r.expect("h2 429", N, 0, &[("status", N)]);
        assert_eq!(
            r.report.errors.by_status.get("429"),
            Some(&N),
            "{}",
            r.ctx("h2 429")
        );

        let r = run(engine, &resets, "/", &h2c(SHORT));
        r.expect("h2 RST_STREAM", N, 0, &[("reset", N)]);
        r.expect_connections("h2 RST_STREAM", 1);

        let r = run(engine, &refuse_first, "/", &h2c(SHORT));
        r.expect("h2 REFUSED_STREAM", N, N, &[]);
        assert_eq!(r.seen.requests, N + 1, "{}", r.ctx("h2 REFUSED_STREAM"));

        let r = run(engine, &goaway_after_3, "/", &h2c(SHORT));
        r.expect("h2 GOAWAY after 3", N, N, &[]);
        assert_eq!(r.seen.used, N.div_ceil(3), "{}", r.ctx("h2 GOAWAY after 3"));

        let r = run(engine, &goaway_in_flight, "/", &h2c(SHORT));
        r.expect("h2 GOAWAY in flight", N, N, &[]);
        let ctx = r.ctx("h2 GOAWAY in flight");
        assert_eq!(
            r.seen.requests,
            N + 1,
            "the refused stream was sent again: {ctx}"
        );
        assert_eq!(r.requests().retried, 1, "{ctx}");
    }
}

/// A server that never answers gives timeouts; one that closes mid-answer
/// gives resets; one that stalls its first answer for 600 ms does not
/// stall the requests behind it: on one connection they go out on their
/// own streams, on time, while the stalled one's latency counts from its
/// intended send time.
#[test]
fn h2_silence_close_and_stall() {
    let silent = h2(None, |c| while c.request().is_some() {});
    let close_mid = h2(None, |c| {
        if let Some(s) = c.request() {
            let mut block = STATUS_200.to_vec();
            block.extend(content_type_plain());
            c.send(&frame(HEADERS, END_HEADERS, s, &block));
            c.send(&frame(DATA, 0, s, b"partial"));
        }
    });
    let stall_first = h2(None, |c| {
        let Some(first) = c.request() else { return };
        let t = std::time::Instant::now();
        let mut later = Vec::new();
        while t.elapsed() < Duration::from_millis(600) {
            if let Some(s) = c.request_within(Duration::from_millis(600) - t.elapsed()) {
                later.push(s);
            }
        }
        c.send(&answer(first, STATUS_200));
        for s in later {
            c.send(&answer(s, STATUS_200));
        }
        while let Some(s) = c.request() {
            if !c.send(&answer(s, STATUS_200)) {
                break;
            }
        }
    });
    for engine in engines() {
        let r = run(engine, &silent, "/", &h2c(SHORT));
        r.expect("h2 silent", N, 0, &[("timeout", N)]);

        // Each connection carries one request and closes mid-answer.
        let r = run(engine, &close_mid, "/", &h2c(SHORT));
        r.expect("h2 close mid-answer", N, 0, &[("reset", N)]);

        // Five requests 200 ms apart on one connection; the first is held
        // 600 ms, so the second, third and fourth arrive while it waits.
        let args = with(&h2c(SLOW), &["--max-connections", "1"]);
        let r = run(engine, &stall_first, "/", &args);
        let ctx = r.ctx("h2 stall");
        r.expect("h2 stall", 5, 5, &[]);
        r.expect_connections("h2 stall", 1);
        let m = &r.report.metrics;
        assert!(m.send_lag.max < 100.0, "sends waited on the stall: {ctx}");
        assert!(
            m.latency.max >= 590.0,
            "the stalled answer's latency: {ctx}"
        );
    }
}

/// A server that allows one stream per connection: with one connection,
/// requests wait at the client for the stream (counted as send lag, none
/// lost); with room to grow, the pool opens connections instead.
#[test]
fn h2_one_stream_per_connection() {
    let slow_one = h2(Some(1), |c| {
        while let Some(s) = c.request() {
            c.peer.pause(Duration::from_millis(150));
            if !c.send(&answer(s, STATUS_200)) {
                break;
            }
        }
    });
    for engine in engines() {
        // Ten requests 50 ms apart, each served in 150 ms on the one stream.
        const PACED: &[&str] = &["--rate", "20", "--duration", "500ms", "--connections", "1"];
        let args = with(&h2c(PACED), &["--max-connections", "1", "--timeout", "3s"]);
        let r = run(engine, &slow_one, "/", &args);
        let ctx = r.ctx("h2 one stream, one connection");
        r.expect("h2 one stream, one connection", N, N, &[]);
        assert!(
            r.report.metrics.send_lag.max >= 500.0,
            "requests waited for the stream: {ctx}"
        );

        let args = with(&h2c(PACED), &["--max-connections", "8", "--timeout", "3s"]);
        let r = run(engine, &slow_one, "/", &args);
        let ctx = r.ctx("h2 one stream, growing");
        r.expect("h2 one stream, growing", N, N, &[]);
        assert!(r.seen.used >= 3, "the pool grew for streams: {ctx}");
    }
}

/// A server whose SETTINGS say MAX_HEADER_LIST_SIZE 100 (below any
/// request: four pseudo-headers alone count 4 x 32): no request is sent,
/// each is unsent as `too_large`, the warning names the limit, and the
/// run exits 1 saying so (not "refused or unreachable"); each
/// --out-requests line is `unsent`, `too_large`. At 400 a plain
/// GET (about 280) goes and is answered; with a 200-byte header it is
/// above and is not sent.
#[test]
fn h2_max_header_list_size_is_kept() {
    let serve = |limit: u32| {
        h2_settings(vec![(MAX_HEADER_LIST_SIZE, limit)], |c| {
            while let Some(s) = c.request() {
                if !c.send(&answer(s, STATUS_200)) {
                    break;
                }
            }
        })
    };
    let (tiny, small) = (serve(100), serve(400));
    let pad = format!("x-pad: {}", "p".repeat(200));
    let padded = with(&h2c(SHORT), &["-H", &pad]);
    let lines_path = std::env::temp_dir().join(format!(
        "metronome-hostile-h2-list-{}.jsonl",
        std::process::id()
    ));
    let lines_arg = lines_path.to_str().unwrap().to_string();
    let tiny_args = with(&h2c(SHORT), &["--out-requests", &lines_arg]);
    for engine in engines() {
        for (case, server, args, limit) in [
            ("h2 list limit 100", &tiny, tiny_args.clone(), 100),
            ("h2 list limit 400, padded", &small, padded.clone(), 400),
        ] {
            let r = run(engine, server, "/", &args);
            let ctx = r.ctx(case);
            let q = r.requests();
            assert_eq!((q.scheduled, q.sent, q.unsent), (N, 0, N), "{ctx}");
            assert_eq!(
                nonzero(&r.report.errors.unsent_by_reason),
                BTreeMap::from([("too_large", N)]),
                "{ctx}"
            );
            assert_eq!(r.seen.requests, 0, "nothing reached the server: {ctx}");
            let warning = format!("SETTINGS_MAX_HEADER_LIST_SIZE ({limit} bytes): not sent");
            assert_eq!(
                r.generator()
                    .warnings
                    .iter()
                    .filter(|w| w.contains(&warning))
                    .count(),
                1,
                "one warning names the limit: {:?} {ctx}",
                r.generator().warnings
            );
        }
        // Each --out-requests line says why: unsent, too_large.
        let text = std::fs::read_to_string(&lines_path).unwrap();
        let kinds: Vec<(String, String)> = text
            .lines()
            .skip(1)
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                (v["result"].to_string(), v["kind"].to_string())
            })
            .collect();
        let want = ("\"unsent\"".to_string(), "\"too_large\"".to_string());
        assert_eq!(kinds, vec![want; N as usize], "{engine}: {text}");
        let r = run(engine, &small, "/", &h2c(SHORT));
        r.expect("h2 list limit 400, plain", N, N, &[]);
        assert_eq!(
            r.requests().unsent,
            0,
            "{}",
            r.ctx("h2 list limit 400, plain")
        );
    }
    let _ = std::fs::remove_file(&lines_path);
}

/// A server that opens its windows wide and then never reads: every POST
/// of 16 MiB is a timeout and the run still ends by its hard end (plus a
/// margin for a loaded machine), on both engines.
#[test]
fn h2_deaf_server_with_open_windows_gives_timeouts_and_the_run_ends() {
    let body =
        std::env::temp_dir().join(format!("metronome-hostile-h2-{}.body", std::process::id()));
    std::fs::write(&body, vec![b'x'; 16 << 20]).unwrap();
    let body_arg = body.to_str().unwrap().to_string();
    let args = with(&h2c(SHORT), &["-X", "POST", "--body-file", &body_arg]);
    let deaf = wide_open_then_deaf();
    let hard_end = Duration::from_millis(500 + 500);
    for engine in engines() {
        let r = run(engine, &deaf, "/", &args);
        let ctx = r.ctx("h2 deaf server");
        assert_eq!(r.requests().ok, 0, "{ctx}");
        assert_eq!(
            r.requests().sent + r.requests().unsent,
            N,
            "every request sent or counted unsent: {ctx}"
        );
        assert!(
            r.elapsed < hard_end + Duration::from_secs(3),
            "the run ended: {ctx}"
        );
    }
    let _ = std::fs::remove_file(&body);
}

/// The first stream of every connection is refused (never processed: the
/// client may send it again), the rest answered.
fn refuse_first() -> Script {
    h2(None, |c| {
        let mut first = true;
        while let Some(s) = c.request() {
            let bytes = if first {
                frame(RST_STREAM, 0, s, &REFUSED_STREAM.to_be_bytes())
            } else {
                answer(s, STATUS_200)
            };
            first = false;
            if !c.send(&bytes) {
                break;
            }
        }
    })
}

/// On the first connection, two requests in flight: GOAWAY names the
/// first, which is answered; the second was never processed and is sent
/// again on a new connection, where every request is answered.
fn goaway_in_flight() -> Script {
    h2(None, |c| {
        if c.peer.index == 0 {
            let Some(first) = c.request() else { return };
            let Some(second) = c.request_within(Duration::from_millis(500)) else {
                return;
            };
            assert!(second > first);
            c.send(&goaway(first, NO_ERROR));
            c.send(&answer(first, STATUS_200));
            c.peer.pause(Duration::from_millis(20));
            return;
        }
        while let Some(s) = c.request() {
            if !c.send(&answer(s, STATUS_200)) {
                break;
            }
        }
    })
}

/// The body every POST of [`h2_scenarios_agree_across_engines`] carries.
const BODY: &str = "hello world";

/// A server whose stream windows start at 4 bytes: each POST body stalls
/// after 4 bytes until a WINDOW_UPDATE for its stream; the answer is 200
/// when the whole body arrived intact, else 429.
fn window_stall() -> Script {
    script(|p| {
        while p.buf.len() < PREFACE.len() {
            if !p.fill() {
                return;
            }
        }
        p.buf.drain(..PREFACE.len());
        // SETTINGS_INITIAL_WINDOW_SIZE (4) = 4.
        let settings = [0, 4, 0, 0, 0, 4];
        if !p.send(&frame(SETTINGS, 0, 0, &settings)) {
            return;
        }
        let mut c = H2 { peer: p };
        let mut bodies: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
        while let Some((kind, flags, stream, payload)) = c.frame() {
            if kind != DATA {
                continue;
            }
            let body = bodies.entry(stream).or_default();
            body.extend_from_slice(&payload);
            if flags & END_STREAM == 0 {
                if !c.send(&frame(WINDOW_UPDATE, 0, stream, &64u32.to_be_bytes())) {
                    return;
                }
                continue;
            }
            c.peer.counted();
            let status = if body.as_slice() == BODY.as_bytes() {
                STATUS_200
            } else {
                STATUS_429
            };
            if !c.send(&answer(stream, status)) {
                return;
            }
        }
    })
}

/// What two engines must agree on for one run, field by field.
#[derive(Debug, PartialEq, Eq)]
struct Tally {
    sent: u64,
    ok: u64,
    retried: u64,
    unsent: u64,
    kinds: BTreeMap<String, u64>,
    causes: BTreeMap<String, u64>,
    statuses: BTreeMap<String, u64>,
    /// Requests the server saw whole.
    seen: u64,
}

/// The HTTP/2 stream ends, one table run on every engine: each scenario
/// gives exactly the expected counts and error kinds, and every engine
/// gives the same (the rules are core's `h2::Flights`, decided once).
#[test]
fn h2_scenarios_agree_across_engines() {
    let silent = h2(None, |c| while c.request().is_some() {});
    let resets = h2(None, |c| {
        while let Some(s) = c.request() {
            if !c.send(&frame(RST_STREAM, 0, s, &INTERNAL_ERROR.to_be_bytes())) {
                break;
            }
        }
    });
    let cut_body = h2(None, |c| {
        if let Some(s) = c.request() {
            let mut block = STATUS_200.to_vec();
            block.extend(content_type_plain());
            c.send(&frame(HEADERS, END_HEADERS, s, &block));
            c.send(&frame(DATA, 0, s, b"partial"));
        }
    });
    // A graceful GOAWAY, then a second naming a protocol error, then the
    // close, with the connection's one stream in flight (not refused: the
    // last stream id is the highest): the streams get the last GOAWAY's
    // code, so bad framing (the first's would make them resets).
    let two_goaways = h2(None, |c| {
        if c.request().is_some() {
            let mut bytes = goaway(0x7fff_ffff, NO_ERROR);
            bytes.extend(goaway(0x7fff_ffff, PROTOCOL_ERROR));
            c.send(&bytes);
            c.peer.pause(Duration::from_millis(20));
        }
    });
    let post = with(&h2c(SHORT), &["--method", "POST", "--body", BODY]);
    let kinds = |k: &[(&str, u64)]| k.iter().map(|&(k, n)| (k.to_string(), n)).collect();
    let tally = |sent, ok, retried, k: &[(&str, u64)], seen| Tally {
        sent,
        ok,
        retried,
        unsent: 0,
        kinds: kinds(k),
        causes: BTreeMap::new(),
        statuses: BTreeMap::new(),
        seen,
    };
    let mut bad_framing = tally(N, 0, 0, &[("bad_framing", N)], N);
    bad_framing.causes = kinds(&[("http2_protocol", N)]);
    let table: [(&str, Script, Vec<&'static str>, Tally); 7] = [
        (
            "refused stream",
            refuse_first(),
            h2c(SHORT),
            tally(N, N, 1, &[], N + 1),
        ),
        (
            "GOAWAY mid-flight",
            goaway_in_flight(),
            h2c(SHORT),
            tally(N, N, 1, &[], N + 1),
        ),
        (
            "stream timeout",
            silent,
            h2c(SHORT),
            tally(N, 0, 0, &[("timeout", N)], N),
        ),
        (
            "RST_STREAM",
            resets,
            h2c(SHORT),
            tally(N, 0, 0, &[("reset", N)], N),
        ),
        (
            "flow-control stall",
            window_stall(),
            post,
            tally(N, N, 0, &[], N),
        ),
        (
            "cut body",
            cut_body,
            h2c(SHORT),
            tally(N, 0, 0, &[("reset", N)], N),
        ),
        (
            "two GOAWAYs, then close",
            two_goaways,
            h2c(SHORT),
            bad_framing,
        ),
    ];
    for (case, script, args, want) in &table {
        let mut first: Option<(&str, Tally)> = None;
        for engine in engines() {
            let r = run(engine, script, "/", args);
            let q = r.requests();
            let got = Tally {
                sent: q.sent,
                ok: q.ok,
                retried: q.retried,
                unsent: q.unsent,
                kinds: owned(&r.report.errors.by_kind),
                causes: owned(&r.report.errors.bad_framing_by_cause),
                statuses: owned(&r.report.errors.by_status),
                seen: r.seen.requests,
            };
            assert_eq!(&got, want, "{}", r.ctx(case));
            if let Some((other, theirs)) = &first {
                assert_eq!(&got, theirs, "{case}: {engine} against {other}");
            } else {
                first = Some((engine, got));
            }
        }
    }
}

/// The non-zero entries of a count map, owned.
fn owned(m: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    nonzero(m)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}
