//! Property tests: any split of valid input gives the same events (and the
//! same body bytes) as the whole input, and as an independent oracle (the
//! generator that built the bytes); random bytes never panic and never
//! consume more than they were given.
//!
//! The helpers emulate the engines exactly: bytes arrive in slices, are
//! appended to a connection buffer, the parser is called until it returns
//! `(0, None)`, and the consumed bytes are dropped from the front.

use metronome_core::http::{Event, ParseError, ResponseParser};
use metronome_core::response::{ReadError, ReadEvent, Reader};
use metronome_core::sse::{SseDecoder, SseError, SseEvent, SseKind};
use proptest::prelude::*;
use proptest::sample::Index;

/// Stops a parser that never makes progress from hanging the test.
const MAX_CALLS: usize = 1_000_000;

/// Cuts `wire` at the given (unsorted, possibly repeated) points.
fn split<'a>(wire: &'a [u8], cuts: &[Index]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts.iter().map(|i| i.index(wire.len() + 1)).collect();
    points.sort_unstable();
    let mut out = Vec::new();
    let mut at = 0;
    for p in points {
        out.push(&wire[at..p]);
        at = p;
    }
    out.push(&wire[at..]);
    out
}

// ---------------------------------------------------------------- HTTP

#[derive(Clone, Debug, PartialEq, Eq)]
enum HttpEv {
    Head {
        status: u16,
        keep_alive: bool,
        event_stream: bool,
    },
    /// Consecutive body events merged.
    Body(Vec<u8>),
    End,
    Err(ParseError),
}

fn push_http(out: &mut Vec<HttpEv>, ev: HttpEv) {
    if let (HttpEv::Body(new), Some(HttpEv::Body(last))) = (&ev, out.last_mut()) {
        last.extend_from_slice(new);
        return;
    }
    out.push(ev);
}

/// The engine loop around a `ResponseParser`, with pipelining (reset after
/// each `End`) and EOF after the last slice.
fn http_run(slices: &[&[u8]]) -> Vec<HttpEv> {
    let mut parser = ResponseParser::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut out = Vec::new();
    let mut calls = 0;
    for slice in slices {
        buf.extend_from_slice(slice);
        loop {
            calls += 1;
            assert!(calls < MAX_CALLS, "no progress");
            let (n, ev) = match parser.feed(&buf) {
                Ok((n, ev)) => {
                    assert!(n <= buf.len(), "consumed {n} of {}", buf.len());
                    let owned = ev.map(|e| match e {
                        Event::Head {
                            status,
                            keep_alive,
                            event_stream,
                        } => HttpEv::Head {
                            status,
                            keep_alive,
                            event_stream,
                        },
                        Event::Body(b) => {
                            assert!(!b.is_empty());
                            assert!(
                                std::ptr::eq(b.as_ptr(), buf[n - b.len()..].as_ptr()),
                                "body is the consumed tail"
                            );
                            HttpEv::Body(b.to_vec())
                        }
                        Event::End => HttpEv::End,
                    });
                    (n, owned)
                }
                Err(e) => {
                    out.push(HttpEv::Err(e));
                    return out;
                }
            };
            buf.drain(..n);
            match ev {
                Some(HttpEv::End) => {
                    out.push(HttpEv::End);
                    parser.reset();
                }
                Some(e) => push_http(&mut out, e),
                None if n == 0 => break,
                None => {}
            }
        }
    }
    if !(parser.is_idle() && buf.is_empty()) {
        match parser.finish_eof() {
            Ok(Some(Event::End)) => out.push(HttpEv::End),
            Ok(_) => {}
            Err(e) => out.push(HttpEv::Err(e)),
        }
    }
    out
}

#[derive(Clone, Debug)]
enum Framing {
    Length,
    Chunked {
        sizes: Vec<usize>,
        ext: bool,
        trailers: bool,
    },
    Close,
}

#[derive(Clone, Debug)]
struct Resp {
    http10: bool,
    status: u16,
    /// 0: no Connection header, 1: close, 2: keep-alive.
    connection: u8,
    framing: Framing,
    body: Vec<u8>,
    interim: bool,
    event_stream: bool,
}

impl Resp {
    fn has_body(&self) -> bool {
        self.status != 204 && self.status != 304
    }

    fn keep_alive(&self) -> bool {
        let persistent = match self.connection {
            1 => false,
            2 => true,
            _ => !self.http10,
        };
        persistent && !(self.has_body() && matches!(self.framing, Framing::Close))
    }

    fn encode(&self, wire: &mut Vec<u8>) {
        if self.interim {
            wire.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
        }
        let version = if self.http10 { "1.0" } else { "1.1" };
        wire.extend_from_slice(
            format!(
                "HTTP/{version} {} Whatever\r\nServer: prop\r\n",
                self.status
            )
            .as_bytes(),
        );
        match self.connection {
            1 => wire.extend_from_slice(b"Connection: close\r\n"),
            2 => wire.extend_from_slice(b"Connection: keep-alive\r\n"),
            _ => {}
        }
        if self.event_stream {
            wire.extend_from_slice(b"Content-Type: text/event-stream; charset=utf-8\r\n");
        }
        match &self.framing {
            Framing::Length => wire
                .extend_from_slice(format!("Content-Length: {}\r\n", self.body.len()).as_bytes()),
            Framing::Chunked { .. } => wire.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
            Framing::Close => {}
        }
        wire.extend_from_slice(b"\r\n");
        if !self.has_body() {
            return;
        }
        match &self.framing {
            Framing::Length | Framing::Close => wire.extend_from_slice(&self.body),
            Framing::Chunked {
                sizes,
                ext,
                trailers,
            } => {
                let mut rest = &self.body[..];
                let mut i = 0;
                while !rest.is_empty() {
                    let size = sizes[i % sizes.len()].min(rest.len());
                    i += 1;
                    let ext = if *ext { ";n=\"v;w\"" } else { "" };
                    wire.extend_from_slice(format!("{size:X}{ext}\r\n").as_bytes());
                    wire.extend_from_slice(&rest[..size]);
                    wire.extend_from_slice(b"\r\n");
                    rest = &rest[size..];
                }
                wire.extend_from_slice(b"0\r\n");
                if *trailers {
                    wire.extend_from_slice(b"X-Sum: 1\r\nX-Other: two\r\n");
                }
                wire.extend_from_slice(b"\r\n");
            }
        }
    }

    fn expected(&self, out: &mut Vec<HttpEv>) {
        out.push(HttpEv::Head {
            status: self.status,
            keep_alive: self.keep_alive(),
            event_stream: self.event_stream,
        });
        if self.has_body() && !self.body.is_empty() {
            out.push(HttpEv::Body(self.body.clone()));
        }
        out.push(HttpEv::End);
    }
}

fn framing() -> impl Strategy<Value = Framing> {
    prop_oneof![
        Just(Framing::Length),
        (
            prop::collection::vec(1usize..40, 1..4),
            any::<bool>(),
            any::<bool>()
        )
            .prop_map(|(sizes, ext, trailers)| Framing::Chunked {
                sizes,
                ext,
                trailers
            }),
        Just(Framing::Close),
    ]
}

fn resp() -> impl Strategy<Value = Resp> {
    (
        any::<bool>(),
        prop::sample::select(vec![200u16, 201, 204, 304, 404, 429, 500]),
        0u8..3,
        framing(),
        prop::collection::vec(any::<u8>(), 0..120),
        prop::bool::weighted(0.2),
        any::<bool>(),
    )
        .prop_map(
            |(http10, status, connection, framing, body, interim, event_stream)| Resp {
                http10,
                status,
                connection,
                framing,
                body,
                interim,
                event_stream,
            },
        )
}

/// 1 to 3 pipelined responses; only the last may be delimited by close.
fn pipeline() -> impl Strategy<Value = (Vec<u8>, Vec<HttpEv>)> {
    prop::collection::vec(resp(), 1..4).prop_map(|mut resps| {
        let last = resps.len() - 1;
        for r in &mut resps[..last] {
            if matches!(r.framing, Framing::Close) {
                r.framing = Framing::Length;
            }
        }
        let mut wire = Vec::new();
        let mut expected = Vec::new();
        for r in &resps {
            r.encode(&mut wire);
            r.expected(&mut expected);
        }
        (wire, expected)
    })
}

// ---------------------------------------------------------------- SSE

/// The engine loop around an `SseDecoder` (fed de-chunked body slices).
fn sse_run(slices: &[&[u8]]) -> (Vec<SseEvent>, Result<Option<SseEvent>, SseError>) {
    let mut sse = SseDecoder::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut out = Vec::new();
    let mut calls = 0;
    for slice in slices {
        buf.extend_from_slice(slice);
        loop {
            calls += 1;
            assert!(calls < MAX_CALLS, "no progress");
            let (n, ev) = sse.feed(&buf);
            assert!(n <= buf.len());
            buf.drain(..n);
            match ev {
                Some(e) => out.push(e),
                None => {
                    assert!(buf.is_empty(), "without an event, everything is consumed");
                    break;
                }
            }
        }
    }
    (out, sse.finish())
}

#[derive(Clone, Debug)]
enum Chunk {
    Content(String),
    Role,
    Usage(u32),
    ContentUsage(String, u32),
    Ping,
    ErrorEvent(String),
    ErrorObject(String),
    MultiLine(String),
    Fields,
}

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl Chunk {
    fn encode(&self, eol: &str) -> String {
        let data = |json: String| format!("data: {json}{eol}{eol}");
        match self {
            Chunk::Content(t) => data(format!(
                "{{\"id\":\"c-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}},\"finish_reason\":null}}]}}",
                json_string(t)
            )),
            Chunk::Role => data("{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}".into()),
            Chunk::Usage(n) => data(format!(
                "{{\"id\":\"c-1\",\"choices\":[],\"usage\":{{\"prompt_tokens\":5,\"completion_tokens\":{n},\"total_tokens\":{}}}}}",
                u64::from(*n) + 5
            )),
            Chunk::ContentUsage(t, n) => data(format!(
                "{{ \"choices\" : [ {{ \"delta\" : {{ \"content\" : {} }} }} ], \"usage\" : {{ \"completion_tokens\" : {n} }} }}",
                json_string(t)
            )),
            Chunk::Ping => format!(": ping{eol}{eol}"),
            Chunk::ErrorEvent(t) => format!("event: error{eol}data: {{\"message\":{}}}{eol}{eol}", json_string(t)),
            Chunk::ErrorObject(t) => data(format!("{{\"error\":{{\"message\":{},\"code\":500}}}}", json_string(t))),
            Chunk::MultiLine(t) => {
                format!("data: {{\"choices\":[{{\"delta\":{eol}data: {{\"content\":{}}}}}]}}{eol}{eol}", json_string(t))
            }
            Chunk::Fields => format!("id: 7{eol}retry: 100{eol}event: message{eol}"),
        }
    }

    /// The event has a non-empty `choices` array.
    fn has_choices(&self) -> bool {
        matches!(
            self,
            Chunk::Content(_) | Chunk::Role | Chunk::ContentUsage(..) | Chunk::MultiLine(_)
        )
    }

    fn expected(&self) -> Option<SseEvent> {
        let data = |content: bool, usage_tokens: Option<u32>| SseEvent {
            kind: SseKind::Data,
            content,
            usage_tokens,
        };
        match self {
            Chunk::Content(t) | Chunk::MultiLine(t) => Some(data(!t.is_empty(), None)),
            Chunk::Role => Some(data(false, None)),
            Chunk::Usage(n) => Some(data(false, Some(*n))),
            Chunk::ContentUsage(t, n) => Some(data(!t.is_empty(), Some(*n))),
            Chunk::Ping => Some(SseEvent::COMMENT),
            Chunk::ErrorEvent(_) | Chunk::ErrorObject(_) => Some(SseEvent::ERROR),
            Chunk::Fields => None,
        }
    }
}

fn text() -> impl Strategy<Value = String> {
    let pieces = vec![
        "a",
        "Hello",
        " ",
        "\"",
        "\\",
        "\\\"",
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        "é",
        "😀",
        "\n",
        "\r",
        "\t",
        "\u{0}",
        "content",
        "usage",
        "error",
        "[DONE]",
        "data: ",
        "\"content\":\"x\"",
        "\"usage\":{\"completion_tokens\":9}",
        "\"error\":{}",
        "\\u0022",
    ];
    prop::collection::vec(prop::sample::select(pieces), 0..8).prop_map(|v| v.concat())
}

fn chunk() -> impl Strategy<Value = Chunk> {
    prop_oneof![
        4 => text().prop_map(Chunk::Content),
        1 => Just(Chunk::Role),
        1 => any::<u32>().prop_map(Chunk::Usage),
        1 => (text(), any::<u32>()).prop_map(|(t, n)| Chunk::ContentUsage(t, n)),
        1 => Just(Chunk::Ping),
        1 => text().prop_map(Chunk::ErrorEvent),
        1 => text().prop_map(Chunk::ErrorObject),
        1 => text().prop_map(Chunk::MultiLine),
        1 => Just(Chunk::Fields),
    ]
}

/// An event stream, its events, and whether it ends with `[DONE]`.
fn stream() -> impl Strategy<Value = (Vec<u8>, Vec<SseEvent>, bool, Vec<bool>)> {
    (
        prop::collection::vec(chunk(), 0..12),
        prop::sample::select(vec!["\n", "\r\n", "\r"]),
        prop::bool::weighted(0.8),
    )
        .prop_map(|(chunks, eol, done)| {
            let mut wire = String::new();
            let mut events = Vec::new();
            let mut choices = Vec::new();
            for c in &chunks {
                wire.push_str(&c.encode(eol));
                if let Some(e) = c.expected() {
                    events.push(e);
                    choices.push(c.has_choices());
                }
            }
            if done {
                wire.push_str(&format!("data: [DONE]{eol}{eol}"));
                events.push(SseEvent::DONE);
                choices.push(false);
            }
            (wire.into_bytes(), events, done, choices)
        })
}

// ---------------------------------------------------------------- Reader

#[derive(Clone, Debug, PartialEq, Eq)]
enum ReadEv {
    Ev(ReadEvent),
    Err(ReadError),
}

fn reader_run(slices: &[&[u8]], expect_stream: bool) -> Vec<ReadEv> {
    let mut reader = Reader::new(expect_stream);
    let mut buf: Vec<u8> = Vec::new();
    let mut out = Vec::new();
    let mut calls = 0;
    for slice in slices {
        buf.extend_from_slice(slice);
        loop {
            calls += 1;
            assert!(calls < MAX_CALLS, "no progress");
            match reader.feed(&buf) {
                Ok((n, ev)) => {
                    assert!(n <= buf.len());
                    buf.drain(..n);
                    match ev {
                        Some(e @ ReadEvent::Complete { .. }) => {
                            out.push(ReadEv::Ev(e));
                            reader.reset();
                        }
                        Some(e) => out.push(ReadEv::Ev(e)),
                        None if n == 0 => break,
                        None => {}
                    }
                }
                Err(e) => {
                    out.push(ReadEv::Err(e));
                    return out;
                }
            }
        }
    }
    loop {
        calls += 1;
        assert!(calls < MAX_CALLS, "no progress");
        match reader.finish_eof() {
            Ok(Some(e)) => out.push(ReadEv::Ev(e)),
            Ok(None) => break,
            // EOF between responses is not a failure of the last one.
            Err(ReadError::Http(ParseError::UnexpectedEof))
                if buf.is_empty()
                    && matches!(out.last(), Some(ReadEv::Ev(ReadEvent::Complete { .. }))) =>
            {
                break
            }
            Err(e) => {
                out.push(ReadEv::Err(e));
                break;
            }
        }
    }
    out
}

/// What the Reader must produce for a 200 chunked response carrying a
/// stream with these SSE events.
fn reader_expected(events: &[SseEvent], done: bool, choices: &[bool]) -> Vec<ReadEv> {
    let mut out = vec![ReadEv::Ev(ReadEvent::Head { status: 200 })];
    for (e, &choices) in events.iter().zip(choices) {
        match e.kind {
            SseKind::Data => {
                if e.content {
                    out.push(ReadEv::Ev(ReadEvent::Content));
                } else if choices {
                    out.push(ReadEv::Ev(ReadEvent::Chunk));
                }
                if let Some(n) = e.usage_tokens {
                    out.push(ReadEv::Ev(ReadEvent::Usage(n)));
                }
            }
            SseKind::Done => out.push(ReadEv::Ev(ReadEvent::Done)),
            SseKind::Error => out.push(ReadEv::Ev(ReadEvent::StreamError)),
            SseKind::Comment => {}
        }
    }
    out.push(ReadEv::Ev(ReadEvent::Complete {
        keep_alive: true,
        done_seen: done,
    }));
    out
}

fn chunked_response(body: &[u8], sizes: &[usize]) -> Vec<u8> {
    let mut wire =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            .to_vec();
    let mut rest = body;
    let mut i = 0;
    while !rest.is_empty() {
        let size = sizes[i % sizes.len()].min(rest.len());
        i += 1;
        wire.extend_from_slice(format!("{size:x}\r\n").as_bytes());
        wire.extend_from_slice(&rest[..size]);
        wire.extend_from_slice(b"\r\n");
        rest = &rest[size..];
    }
    wire.extend_from_slice(b"0\r\n\r\n");
    wire
}

// ---------------------------------------------------------------- tests

const SAMPLE_STREAM: &[u8] = b": ping\r\n\r\n\
    data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\r\n\r\n\
    data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a \\\"quoted\\\" {brace}\"}}]}\r\n\r\n\
    event: error\r\ndata: {\"message\":\"content usage\"}\r\n\r\n\
    data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3,\"total_tokens\":8}}\r\n\r\n\
    data: [DONE]\r\n\r\n";

#[test]
fn sse_every_split_point_matches_whole() {
    let whole = sse_run(&[SAMPLE_STREAM]);
    assert_eq!(
        whole.0,
        [
            SseEvent::COMMENT,
            SseEvent::OTHER,
            SseEvent::CONTENT,
            SseEvent::ERROR,
            SseEvent {
                kind: SseKind::Data,
                content: false,
                usage_tokens: Some(3)
            },
            SseEvent::DONE
        ]
    );
    assert_eq!(whole.1, Ok(None));
    for cut in 0..=SAMPLE_STREAM.len() {
        let (a, b) = SAMPLE_STREAM.split_at(cut);
        assert_eq!(sse_run(&[a, b]), whole, "split at byte {cut}");
    }
    // One byte at a time.
    let bytes: Vec<&[u8]> = SAMPLE_STREAM.chunks(1).collect();
    assert_eq!(sse_run(&bytes), whole);
}

#[test]
fn reader_every_split_point_matches_whole() {
    let wire = chunked_response(SAMPLE_STREAM, &[13, 1, 64]);
    let whole = reader_run(&[&wire], true);
    assert_eq!(
        whole,
        [
            ReadEv::Ev(ReadEvent::Head { status: 200 }),
            ReadEv::Ev(ReadEvent::Chunk),
            ReadEv::Ev(ReadEvent::Content),
            ReadEv::Ev(ReadEvent::StreamError),
            ReadEv::Ev(ReadEvent::Usage(3)),
            ReadEv::Ev(ReadEvent::Done),
            ReadEv::Ev(ReadEvent::Complete {
                keep_alive: true,
                done_seen: true
            }),
        ]
    );
    for cut in 0..=wire.len() {
        let (a, b) = wire.split_at(cut);
        assert_eq!(reader_run(&[a, b], true), whole, "split at byte {cut}");
    }
}

#[test]
fn http_every_pair_of_split_points_matches_whole() {
    let wire =
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
        3;x=1\r\nabc\r\n1\r\nd\r\n0\r\nT: 1\r\n\r\nHTTP/1.0 404 Nope\r\n\r\nrest";
    let whole = http_run(&[wire]);
    assert_eq!(
        whole,
        [
            HttpEv::Head {
                status: 200,
                keep_alive: true,
                event_stream: false
            },
            HttpEv::Body(b"abcd".to_vec()),
            HttpEv::End,
            HttpEv::Head {
                status: 404,
                keep_alive: false,
                event_stream: false
            },
            HttpEv::Body(b"rest".to_vec()),
            HttpEv::End,
        ]
    );
    for i in 0..=wire.len() {
        for j in i..=wire.len() {
            assert_eq!(
                http_run(&[&wire[..i], &wire[i..j], &wire[j..]]),
                whole,
                "splits at {i}, {j}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn http_any_split_matches_oracle((wire, expected) in pipeline(), cuts in prop::collection::vec(any::<Index>(), 0..8)) {
        let whole = http_run(&[&wire]);
        prop_assert_eq!(&whole, &expected);
        prop_assert_eq!(http_run(&split(&wire, &cuts)), expected);
    }

    #[test]
    fn http_reader_any_split_matches_oracle((wire, expected) in pipeline(), cuts in prop::collection::vec(any::<Index>(), 0..8)) {
        // Without expect_stream, the Reader reports heads and completions.
        let want: Vec<ReadEv> = expected
            .iter()
            .filter_map(|e| match e {
                HttpEv::Head { status, .. } => Some(ReadEv::Ev(ReadEvent::Head { status: *status })),
                _ => None,
            })
            .zip(expected.iter().filter_map(|e| match e {
                HttpEv::Head { keep_alive, .. } => Some(*keep_alive),
                _ => None,
            }))
            .flat_map(|(head, keep_alive)| [head, ReadEv::Ev(ReadEvent::Complete { keep_alive, done_seen: false })])
            .collect();
        prop_assert_eq!(reader_run(&split(&wire, &cuts), false), want);
    }

    #[test]
    fn sse_any_split_matches_oracle((wire, events, done, _) in stream(), cuts in prop::collection::vec(any::<Index>(), 0..10)) {
        let finish = if done { Ok(None) } else { Err(SseError::CutBeforeDone) };
        let whole = sse_run(&[&wire]);
        prop_assert_eq!(&whole, &(events.clone(), finish));
        prop_assert_eq!(sse_run(&split(&wire, &cuts)), whole);
    }

    #[test]
    fn reader_stream_any_split_matches_oracle(
        (body, events, done, choices) in stream(),
        sizes in prop::collection::vec(1usize..50, 1..4),
        cuts in prop::collection::vec(any::<Index>(), 0..10),
    ) {
        let wire = chunked_response(&body, &sizes);
        let want = reader_expected(&events, done, &choices);
        prop_assert_eq!(reader_run(&[&wire], true), want.clone());
        prop_assert_eq!(reader_run(&split(&wire, &cuts), true), want);
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300), cuts in prop::collection::vec(any::<Index>(), 0..6)) {
        // The helpers assert consumed <= input and progress; the same
        // bytes whole or split give the same result.
        let slices = split(&bytes, &cuts);
        prop_assert_eq!(http_run(&[&bytes]), http_run(&slices));
        prop_assert_eq!(sse_run(&[&bytes]), sse_run(&slices));
        prop_assert_eq!(reader_run(&[&bytes], true), reader_run(&slices, true));
        prop_assert_eq!(reader_run(&[&bytes], false), reader_run(&slices, false));
    }

    #[test]
    fn random_bodies_never_panic(
        prefix in prop::sample::select(vec![
            &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n",
            b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n",
            b"HTTP/1.1 100 Continue\r\n\r\n",
        ]),
        pieces in prop::collection::vec(prop::sample::select(vec![
            &b"\r\n"[..], b"\n", b"\r", b"0", b"5", b"ff", b";", b":", b" ", b"data", b"data: ", b"event: error",
            b"[DONE]", b"{", b"}", b"[", b"]", b"\"", b"\\", b"\"content\"", b"\"usage\"", b"\"choices\"",
            b"\"delta\"", b"\"completion_tokens\"", b"123", b"null", b"x", b"HTTP/1.1 200 OK\r\n", b"\xff",
        ]), 0..60),
        cuts in prop::collection::vec(any::<Index>(), 0..6),
    ) {
        let mut bytes = prefix.to_vec();
        for p in pieces {
            bytes.extend_from_slice(p);
        }
        let slices = split(&bytes, &cuts);
        prop_assert_eq!(http_run(&[&bytes]), http_run(&slices));
        prop_assert_eq!(sse_run(&[&bytes]), sse_run(&slices));
        prop_assert_eq!(reader_run(&[&bytes], true), reader_run(&slices, true));
        prop_assert_eq!(reader_run(&[&bytes], false), reader_run(&slices, false));
    }
}
