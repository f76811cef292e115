//! Simulation tests of [`Exchange`], the per-request state machine both
//! engines drive: recorded byte streams with scripted arrival times, fed
//! the way an engine feeds them (bytes appended to a connection buffer,
//! the consumed count dropped from the front), on a virtual clock.
//!
//! - Every split point of every stream gives the same result as reading
//!   each scripted segment whole: the same finish, TTFT, gaps, `[DONE]`
//!   time, keep-alive and consumed bytes. A read's time is the arrival time
//!   of its bytes, so splits refine the script's segments, never merge them.
//! - End of file in every state (after every prefix of a stream): the
//!   outcome each rule gives, exactly.

use metronome_core::exchange::{Exchange, Feed, Finish, GAP_CAP};
use metronome_core::measure::{slot, ErrorKind, FramingCause, StreamTiming};

const MS: u64 = 1_000_000;
const INTENDED: u64 = MS;
const SENT: u64 = 2 * MS;
const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";

/// How one drive of an exchange ended, owned (for comparisons).
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)] // a test value, compared once
enum End {
    /// Complete: keep-alive, the finish, bytes left in the buffer.
    Complete {
        keep_alive: bool,
        finish: Owned,
        left: usize,
    },
    /// Failed with this kind.
    Fault(ErrorKind),
    /// All bytes fed, no end yet.
    Incomplete,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Owned {
    Ok,
    Status(u16),
    GrpcStatus(u32),
    Error(ErrorKind),
    Framing(FramingCause),
    Check(metronome_core::check::CheckFailure),
    Stream {
        timing: StreamTiming,
        gaps: Vec<u64>,
    },
}

fn own(f: Finish<'_>) -> Owned {
    match f {
        Finish::Ok => Owned::Ok,
        Finish::Status(c) => Owned::Status(c),
        Finish::GrpcStatus(c) => Owned::GrpcStatus(c),
        Finish::Error(k) => Owned::Error(k),
        Finish::Framing(c) => Owned::Framing(c),
        Finish::Check(c) => Owned::Check(c),
        Finish::Stream { timing, gaps } => Owned::Stream {
            timing: *timing,
            gaps: gaps.to_vec(),
        },
    }
}

/// Feeds `reads` (each: arrival time, bytes) as an engine does, then the
/// end of file when `eof`.
fn drive(reads: &[(u64, &[u8])], expect_stream: bool, eof: bool) -> End {
    let mut ex = Exchange::new(expect_stream);
    ex.begin(INTENDED, SENT, REQUEST);
    let mut gaps = vec![0u64; GAP_CAP];
    let mut buf: Vec<u8> = Vec::new();
    let mut last = SENT;
    for &(t, bytes) in reads {
        last = t;
        buf.extend_from_slice(bytes);
        match ex.handle_read(t, &buf, &mut gaps) {
            Err(Finish::Error(kind)) => return End::Fault(kind),
            Err(other) => panic!("unexpected failure {other:?}"),
            Ok(Feed::NeedMore { consumed }) => {
                assert!(consumed <= buf.len());
                buf.drain(..consumed);
            }
            Ok(Feed::Complete {
                consumed,
                keep_alive,
                unsolicited,
            }) => {
                buf.drain(..consumed);
                assert_eq!(unsolicited, !buf.is_empty());
                return End::Complete {
                    keep_alive,
                    finish: own(ex.finish(&gaps)),
                    left: buf.len(),
                };
            }
        }
    }
    if !eof {
        return End::Incomplete;
    }
    match ex.handle_eof(last, &mut gaps) {
        Ok(()) => End::Complete {
            keep_alive: false,
            finish: own(ex.finish(&gaps)),
            left: buf.len(),
        },
        Err(kind) => End::Fault(kind),
    }
}

/// The script's segments as reads, with extra cuts at the flat positions
/// `cuts` (sorted): each cut splits the segment it falls in.
fn reads_with_cuts<'a>(segments: &[(u64, &'a [u8])], cuts: &[usize]) -> Vec<(u64, &'a [u8])> {
    let mut out = Vec::new();
    let mut base = 0;
    for &(t, seg) in segments {
        let mut at = 0;
        for &c in cuts {
            if c > base + at && c < base + seg.len() {
                out.push((t, &seg[at..c - base]));
                at = c - base;
            }
        }
        out.push((t, &seg[at..]));
        base += seg.len();
    }
    out
}

fn flat(segments: &[(u64, &[u8])]) -> Vec<u8> {
    segments
        .iter()
        .flat_map(|(_, s)| s.iter().copied())
        .collect()
}

/// Every single split point and every byte-by-byte delivery give the
/// whole-segment result.
fn assert_every_split(segments: &[(u64, &[u8])], expect_stream: bool, eof: bool) -> End {
    let whole = drive(segments, expect_stream, eof);
    let len = flat(segments).len();
    for cut in 0..=len {
        let reads = reads_with_cuts(segments, &[cut]);
        assert_eq!(
            drive(&reads, expect_stream, eof),
            whole,
            "split at byte {cut}"
        );
    }
    let every: Vec<usize> = (1..len).collect();
    let reads = reads_with_cuts(segments, &every);
    assert_eq!(reads.len(), len.max(1));
    assert_eq!(drive(&reads, expect_stream, eof), whole, "byte by byte");
    whole
}

fn data(content: &str) -> String {
    format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{content}\"}}}}]}}\n\n")
}

fn chunk(payload: &str) -> String {
    format!("{:x}\r\n{payload}\r\n", payload.len())
}

/// An OpenAI-style chunked stream: head and a role-only chunk at 5 ms,
/// content at 120, 150 and 190 ms, usage and `[DONE]` at 200 ms.
fn openai_stream() -> Vec<(u64, Vec<u8>)> {
    let head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
    let role = chunk("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n");
    let usage =
        chunk("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":3}}\n\n");
    vec![
        (5 * MS, format!("{head}{role}").into_bytes()),
        (120 * MS, chunk(&data("Hel")).into_bytes()),
        (150 * MS, chunk(&data("lo")).into_bytes()),
        (190 * MS, chunk(&data("!")).into_bytes()),
        (
            200 * MS,
            format!("{usage}{}0\r\n\r\n", chunk("data: [DONE]\n\n")).into_bytes(),
        ),
    ]
}

fn borrow(v: &[(u64, Vec<u8>)]) -> Vec<(u64, &[u8])> {
    v.iter().map(|(t, b)| (*t, b.as_slice())).collect()
}

#[test]
fn openai_stream_every_split_same_timing() {
    let segs = openai_stream();
    let end = assert_every_split(&borrow(&segs), true, false);
    let mut timing = StreamTiming::new(INTENDED, SENT);
    timing.first_content_ns = Some(120 * MS);
    timing.last_content_ns = 190 * MS;
    timing.content_chunks = 3;
    timing.usage_tokens = Some(3);
    timing.done_ns = Some(200 * MS);
    timing.max_itl_ns = 40 * MS;
    timing.first_answer_ns = Some(120 * MS);
    timing.first_choices_ns = Some(5 * MS);
    timing.last_choices_ns = 190 * MS;
    timing.first_output_ns = Some(120 * MS);
    timing.last_output_ns = 190 * MS;
    timing.output_chunks = 3;
    timing.continuous_usage = false;
    timing.end_ns = Some(200 * MS);
    assert_eq!(
        end,
        End::Complete {
            keep_alive: true,
            finish: Owned::Stream {
                timing,
                // One slot per chunk with choices after the role-only one:
                // the first content chunk 115 ms after it (its TTFT in
                // vLLM's terms, no ITL in metronome's), then the two gaps.
                gaps: vec![slot::pack(115 * MS, 0, true, true), 30 * MS, 40 * MS],
            },
            left: 0,
        }
    );
}

#[test]
fn plain_and_status_responses_every_split() {
    let ok: Vec<(u64, &[u8])> = vec![
        (
            3 * MS,
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello",
        ),
        (4 * MS, b" worl"),
    ];
    assert_eq!(
        assert_every_split(&ok, false, false),
        End::Complete {
            keep_alive: true,
            finish: Owned::Ok,
            left: 0
        }
    );
    // A stream request answered 429: a status error, the body skipped, the
    // connection kept.
    let busy: Vec<(u64, &[u8])> = vec![(
        3 * MS,
        b"HTTP/1.1 429 Too Many Requests\r\nContent-Length: 4\r\n\r\nslow",
    )];
    assert_eq!(
        assert_every_split(&busy, true, false),
        End::Complete {
            keep_alive: true,
            finish: Owned::Status(429),
            left: 0
        }
    );
    // `Connection: close` ends keep-alive.
    let close: Vec<(u64, &[u8])> = vec![(
        3 * MS,
        b"HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
    )];
    assert_eq!(
        assert_every_split(&close, false, false),
        End::Complete {
            keep_alive: false,
            finish: Owned::Status(503),
            left: 0
        }
    );
}

#[test]
fn stream_error_event_every_split() {
    let body = format!(
        "{}data: {{\"error\":{{\"message\":\"overloaded\"}}}}\n\ndata: [DONE]\n\n",
        data("a")
    );
    let wire = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let segs: Vec<(u64, &[u8])> = vec![(9 * MS, wire.as_bytes())];
    assert_eq!(
        assert_every_split(&segs, true, false),
        End::Complete {
            keep_alive: true,
            finish: Owned::Error(ErrorKind::StreamError),
            left: 0
        }
    );
}

/// A server that ignores `stream: true` and answers plain JSON: the body is
/// read (the connection stays usable) and the request is `not_event_stream`.
#[test]
fn plain_json_to_a_stream_request_every_split() {
    let body = r#"{"choices":[{"message":{"content":"hi"}}],"usage":{"completion_tokens":1}}"#;
    let wire = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let segs: Vec<(u64, &[u8])> = vec![(9 * MS, wire.as_bytes())];
    assert_eq!(
        assert_every_split(&segs, true, false),
        End::Complete {
            keep_alive: true,
            finish: Owned::Error(ErrorKind::NotEventStream),
            left: 0
        }
    );
}

/// Framing failures carry their cause; a TLS or HTTP/2 server on the port
/// is told apart from a broken HTTP/1.1 one; a head over the limit is
/// `too_large`, not bad framing.
#[test]
fn framing_failures_name_their_cause() {
    let cases: [(&[u8], Owned); 6] = [
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            Owned::Framing(FramingCause::ContentLength),
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            Owned::Framing(FramingCause::ChunkSize),
        ),
        (b"SSH-2.0-OpenSSH_9.2\r\n", Owned::Framing(FramingCause::Head)),
        // A TLS alert (what a TLS server answers to plain HTTP).
        (b"\x15\x03\x01\x00\x02\x02\x32", Owned::Framing(FramingCause::Tls)),
        // An HTTP/2 server's SETTINGS frame, then GOAWAY.
        (
            b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64",
            Owned::Framing(FramingCause::Http2),
        ),
        (
            b"HTTP/1.1 200 OK\r\nX-Big: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n",
            Owned::Error(ErrorKind::TooLarge),
        ),
    ];
    for (wire, expected) in cases {
        let mut ex = Exchange::with_max_head(false, 64);
        ex.begin(0, 0, REQUEST);
        let got = ex.handle_read(1, wire, &mut []).map_err(own);
        assert_eq!(got, Err(expected), "{:?}", String::from_utf8_lossy(wire));
    }
    // More headers than the parser holds is also too large.
    let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..300 {
        many.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    let mut ex = Exchange::with_max_head(false, 1 << 20);
    ex.begin(0, 0, REQUEST);
    assert_eq!(
        ex.handle_read(1, &many, &mut []).map_err(own),
        Err(Owned::Error(ErrorKind::TooLarge))
    );
    // 256 headers are fine.
    let mut ok = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n".to_vec();
    for i in 0..255 {
        ok.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
    }
    ok.extend_from_slice(b"\r\n");
    let mut ex = Exchange::with_max_head(false, 1 << 20);
    ex.begin(0, 0, REQUEST);
    assert!(matches!(
        ex.handle_read(1, &ok, &mut []),
        Ok(Feed::Complete {
            keep_alive: true,
            ..
        })
    ));
}

/// `HEAD`, `204` and `304` responses have no body, whatever their headers
/// say (RFC 9112 section 6.3); `1xx` interim responses are skipped.
#[test]
fn bodiless_responses_every_split() {
    for (request, wire) in [
        (
            &b"HEAD / HTTP/1.1\r\n\r\n"[..],
            &b"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"[..],
        ),
        (
            b"GET / HTTP/1.1\r\n\r\n",
            b"HTTP/1.1 304 Not Modified\r\nContent-Length: 1234\r\n\r\n",
        ),
        (
            b"GET / HTTP/1.1\r\n\r\n",
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
        ),
    ] {
        for cut in 0..=wire.len() {
            let mut ex = Exchange::new(false);
            ex.begin(0, 0, request);
            let mut buf = wire[..cut].to_vec();
            let first = ex.handle_read(1, &buf, &mut []).unwrap();
            let consumed = match first {
                Feed::NeedMore { consumed } => consumed,
                Feed::Complete { .. } => {
                    assert_eq!(cut, wire.len());
                    continue;
                }
            };
            buf.drain(..consumed);
            buf.extend_from_slice(&wire[cut..]);
            assert_eq!(
                ex.handle_read(2, &buf, &mut []),
                Ok(Feed::Complete {
                    consumed: buf.len(),
                    keep_alive: true,
                    unsolicited: false
                }),
                "cut {cut}"
            );
        }
    }
}

/// HTTP/1.0 read-until-close SSE: the end of file ends it, and the events
/// still carry their own times.
#[test]
fn read_until_close_stream_ends_at_eof_every_split() {
    let segs: Vec<(u64, Vec<u8>)> = vec![
        (
            10 * MS,
            b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n".to_vec(),
        ),
        (20 * MS, data("x").into_bytes()),
        (35 * MS, data("y").into_bytes()),
        (50 * MS, b"data: [DONE]\n\n".to_vec()),
    ];
    let end = assert_every_split(&borrow(&segs), true, true);
    let End::Complete {
        keep_alive: false,
        finish: Owned::Stream { timing, gaps },
        left: 0,
    } = end
    else {
        panic!("{end:?}")
    };
    assert_eq!(timing.first_content_ns, Some(20 * MS));
    assert_eq!(timing.done_ns, Some(50 * MS));
    assert_eq!(gaps, [15 * MS]);
}

/// End of file after every prefix of the OpenAI stream: before the head a
/// reset, after it a cut stream, at the end no EOF is needed.
#[test]
fn eof_in_every_state_of_a_chunked_stream() {
    let segs = openai_stream();
    let wire = flat(&borrow(&segs));
    let head_len = wire.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    for n in 0..=wire.len() {
        let end = drive(&[(7 * MS, &wire[..n])], true, true);
        match n {
            n if n < head_len => assert_eq!(end, End::Fault(ErrorKind::Reset), "prefix {n}"),
            n if n < wire.len() => {
                assert_eq!(end, End::Fault(ErrorKind::StreamCut), "prefix {n}")
            }
            _ => assert!(
                matches!(
                    end,
                    End::Complete {
                        keep_alive: true,
                        ..
                    }
                ),
                "{end:?}"
            ),
        }
    }
}

/// End of file after every prefix of plain responses: a Content-Length
/// body cut short is a reset; a read-until-close body ends at the close.
#[test]
fn eof_in_every_state_of_plain_responses() {
    let sized = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    let head = sized.len() - 5;
    for n in 0..=sized.len() {
        let end = drive(&[(1, &sized[..n])], false, true);
        if n < sized.len() {
            assert_eq!(end, End::Fault(ErrorKind::Reset), "prefix {n}");
        } else {
            assert_eq!(
                end,
                End::Complete {
                    keep_alive: true,
                    finish: Owned::Ok,
                    left: 0
                }
            );
        }
    }
    let until_close = b"HTTP/1.0 200 OK\r\nServer: x\r\n\r\nany length";
    let head2 = until_close.len() - 10;
    for n in 0..=until_close.len() {
        let end = drive(&[(1, &until_close[..n])], false, true);
        if n < head2 {
            assert_eq!(end, End::Fault(ErrorKind::Reset), "prefix {n}");
        } else {
            assert_eq!(
                end,
                End::Complete {
                    keep_alive: false,
                    finish: Owned::Ok,
                    left: 0
                },
                "prefix {n}"
            );
        }
    }
    assert!(head < sized.len());
}

/// The read-until-close SSE stream, cut by the close after every prefix:
/// the exchange completes once the head is in, and the recorded facts are
/// exactly those whose bytes arrived (`[DONE]` only after its blank line).
#[test]
fn eof_in_every_state_of_a_read_until_close_stream() {
    let head = b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n".to_vec();
    let body = format!("{}data: [DONE]\n\n", data("x"));
    let wire = [head.clone(), body.clone().into_bytes()].concat();
    let first_event_end = head.len() + data("x").len();
    for n in 0..=wire.len() {
        let end = drive(&[(4 * MS, &wire[..n])], true, true);
        if n < head.len() {
            assert_eq!(end, End::Fault(ErrorKind::Reset), "prefix {n}");
            continue;
        }
        let End::Complete {
            keep_alive: false,
            finish: Owned::Stream { timing, gaps },
            ..
        } = end
        else {
            panic!("prefix {n}: {end:?}")
        };
        assert!(gaps.is_empty());
        // An event counts at its blank line; only a final `data: [DONE]`
        // is accepted without one (the decoder's end-of-stream rule).
        let content = n >= first_event_end;
        assert_eq!(timing.content_chunks, u32::from(content), "prefix {n}");
        assert_eq!(timing.done_ns.is_some(), n >= wire.len() - 2, "prefix {n}");
    }
}

/// Gaps beyond the caller's slice are counted, not written, and the
/// finish carries exactly the slice's worth.
#[test]
fn gaps_beyond_the_slice_are_counted() {
    let mut wire = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n".to_vec();
    let mut ex = Exchange::new(true);
    ex.begin(0, 0, REQUEST);
    let mut gaps = [0u64; 2];
    assert_eq!(
        ex.handle_read(1, &wire, &mut gaps),
        Ok(Feed::NeedMore {
            consumed: wire.len()
        })
    );
    for (i, t) in [10u64, 20, 40, 70, 110].iter().enumerate() {
        wire = data(&i.to_string()).into_bytes();
        assert_eq!(
            ex.handle_read(*t, &wire, &mut gaps),
            Ok(Feed::NeedMore {
                consumed: wire.len()
            })
        );
    }
    assert_eq!(ex.dropped_gaps(), 2);
    assert_eq!(ex.handle_eof(120, &mut gaps), Ok(()));
    let Finish::Stream { timing, gaps } = ex.finish(&gaps) else {
        panic!()
    };
    assert_eq!(gaps, [10, 20]);
    assert_eq!(timing.max_itl_ns, 40);
}

/// Bytes after a complete response were asked for by no request: they
/// stay in the buffer, unconsumed, and the connection is not kept.
#[test]
fn bytes_after_a_complete_response_are_unsolicited() {
    let two = b"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    let end = drive(&[(5, two)], false, false);
    assert_eq!(
        end,
        End::Complete {
            keep_alive: false,
            finish: Owned::Ok,
            left: two.len() - 27
        }
    );
}
