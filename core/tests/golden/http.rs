//! Golden tests for `metronome_core::http::ResponseParser`: fixed byte
//! streams with the exact events and consumed counts expected.

use metronome_core::http::{Event, ParseError, ResponseParser, DEFAULT_MAX_HEAD, MAX_HEADERS};

/// An owned copy of one `feed` result.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Ev {
    Head {
        status: u16,
        keep_alive: bool,
        event_stream: bool,
    },
    Body(Vec<u8>),
    End,
}

fn own(event: Event<'_>) -> Ev {
    match event {
        Event::Head {
            status,
            keep_alive,
            event_stream,
        } => Ev::Head {
            status,
            keep_alive,
            event_stream,
        },
        Event::Body(b) => Ev::Body(b.to_vec()),
        Event::End => Ev::End,
    }
}

/// Feeds `wire` whole, as the engine does, until `(0, None)`; records every
/// call that returned an event as (consumed, event). Resets after `End`
/// (pipelining). Also checks the zero-copy contract for bodies.
fn drive(parser: &mut ResponseParser, wire: &[u8]) -> (Vec<(usize, Ev)>, usize) {
    let mut at = 0;
    let mut out = Vec::new();
    loop {
        let input = &wire[at..];
        let (n, event) = parser.feed(input).expect("valid response");
        assert!(n <= input.len());
        if let Some(Event::Body(b)) = event {
            // A body is the tail of the consumed prefix, zero-copy.
            assert!(std::ptr::eq(b.as_ptr(), input[n - b.len()..].as_ptr()));
            assert!(!b.is_empty());
        }
        at += n;
        match event {
            Some(Event::End) => {
                out.push((n, Ev::End));
                parser.reset();
            }
            Some(e) => out.push((n, own(e))),
            None if n == 0 => return (out, at),
            None => {}
        }
    }
}

fn head(status: u16, keep_alive: bool) -> Ev {
    Ev::Head {
        status,
        keep_alive,
        event_stream: false,
    }
}

fn body(b: &[u8]) -> Ev {
    Ev::Body(b.to_vec())
}

#[test]
fn content_length() {
    let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nServer: t\r\n\r\nhello world!";
    let (events, used) = drive(&mut ResponseParser::new(), wire);
    assert_eq!(
        events,
        [
            (50, head(200, true)),
            (12, body(b"hello world!")),
            (0, Ev::End)
        ]
    );
    assert_eq!(used, wire.len());
}

#[test]
fn content_length_zero_and_repeated_equal_values() {
    let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    let (events, _) = drive(&mut ResponseParser::new(), wire);
    assert_eq!(events, [(38, head(200, true)), (0, Ev::End)]);

    let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\ncontent-length: 3\r\n\r\nabc";
    let (events, _) = drive(&mut ResponseParser::new(), wire);
    assert_eq!(
        events,
        [(60, head(200, true)), (3, body(b"abc")), (0, Ev::End)]
    );
}

#[test]
fn content_length_errors() {
    for wire in [
        &b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"[..],
        b"HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\nabcd",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
    ] {
        assert_eq!(
            ResponseParser::new().feed(wire),
            Err(ParseError::ContentLength),
            "{:?}",
            String::from_utf8_lossy(wire)
        );
    }
}

#[test]
fn chunked_with_extensions_and_trailers() {
    let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
        4;name=value\r\nWiki\r\n\
        5 ; a=\"q;uoted\"; b\r\npedia\r\n\
        E\r\n in\r\n\r\nchunks.\r\n\
        0;last\r\nExpires: never\r\nX-Checksum: abc\r\n\r\n";
    let (events, used) = drive(&mut ResponseParser::new(), wire);
    assert_eq!(
        events,
        [
            (47, head(200, true)),
            (18, body(b"Wiki")),
            // "\r\n" after the previous data + the size line + the data
            (2 + 20 + 5, body(b"pedia")),
            (2 + 3 + 14, body(b" in\r\n\r\nchunks.")),
            (2 + 8 + 16 + 17 + 2, Ev::End),
        ]
    );
    assert_eq!(used, wire.len());
}

#[test]
fn chunked_wins_over_content_length_and_bare_lf_is_accepted() {
    let wire =
        b"HTTP/1.1 200 OK\nContent-Length: 100\nTransfer-Encoding: gzip, Chunked\n\n3\nabc\n0\n\n";
    let (events, used) = drive(&mut ResponseParser::new(), wire);
    assert_eq!(
        events,
        [(70, head(200, true)), (5, body(b"abc")), (4, Ev::End)]
    );
    assert_eq!(used, wire.len());
}

#[test]
fn transfer_encoding_not_chunked_reads_until_close() {
    let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 2\r\n\r\nabcdef";
    let mut p = ResponseParser::new();
    let (events, _) = drive(&mut p, wire);
    assert_eq!(events, [(63, head(200, false)), (6, body(b"abcdef"))]);
    assert_eq!(p.finish_eof(), Ok(Some(Event::End)));
}

#[test]
fn connection_close() {
    let wire = b"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 2\r\n\r\nok";
    let (events, _) = drive(&mut ResponseParser::new(), wire);
    assert_eq!(
        events,
        [(69, head(200, false)), (2, body(b"ok")), (0, Ev::End)]
    );
}

#[test]
fn http_1_0_default_close_and_keep_alive() {
    let wire = b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let (events, _) = drive(&mut ResponseParser::new(), wire);
    assert_eq!(
        events,
        [(38, head(200, false)), (2, body(b"ok")), (0, Ev::End)]
    );

    let wire = b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok";
    let (events, _) = drive(&mut ResponseParser::new(), wire);
    assert_eq!(
        events,
        [(62, head(200, true)), (2, body(b"ok")), (0, Ev::End)]
    );
}

#[test]
fn no_body_statuses_and_head_requests() {
    // 204 and 304 have no body whatever the headers say; the next bytes are
    // the next response.
    let wire = b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n\
        HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n";
    let (events, used) = drive(&mut ResponseParser::new(), wire);
    assert_eq!(
        events,
        [
            (46, head(204, true)),
            (0, Ev::End),
            (57, head(304, true)),
            (0, Ev::End)
        ]
    );
    assert_eq!(used, wire.len());

    let mut p = ResponseParser::new();
    p.expect_no_body();
    let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
    assert_eq!(
        p.feed(wire),
        Ok((
            41,
            Some(Event::Head {
                status: 200,
                keep_alive: true,
                event_stream: false
            })
        ))
    );
    assert_eq!(p.feed(&[]), Ok((0, Some(Event::End))));
    p.reset();
    // The flag is cleared by reset.
    assert_eq!(p.feed(wire).map(|(n, _)| n), Ok(41));
    assert_eq!(p.feed(&[]), Ok((0, None)));
}

#[test]
fn read_until_close_with_finish_eof() {
    let mut p = ResponseParser::new();
    assert_eq!(
        p.feed(b"HTTP/1.1 200 OK\r\nServer: x\r\n\r\n"),
        Ok((
            30,
            Some(Event::Head {
                status: 200,
                keep_alive: false,
                event_stream: false
            })
        ))
    );
    assert_eq!(p.feed(b"first"), Ok((5, Some(Event::Body(b"first")))));
    assert_eq!(p.feed(b""), Ok((0, None)));
    assert_eq!(p.feed(b"second"), Ok((6, Some(Event::Body(b"second")))));
    assert_eq!(p.finish_eof(), Ok(Some(Event::End)));
    assert_eq!(p.finish_eof(), Ok(None));
    assert_eq!(p.feed(b"junk"), Ok((0, None)));
}

#[test]
fn unexpected_eof() {
    let cases: [&[u8]; 6] = [
        b"",
        b"HTTP/1.1 200 OK\r\nContent-Le",
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nab",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nTrailer: x\r\n",
    ];
    for wire in cases {
        let mut p = ResponseParser::new();
        drive(&mut p, wire);
        assert_eq!(
            p.finish_eof(),
            Err(ParseError::UnexpectedEof),
            "{:?}",
            String::from_utf8_lossy(wire)
        );
    }
}

#[test]
fn malformed_status_lines() {
    let cases: [(&[u8], httparse::Error); 5] = [
        (b"HTTP/1.1 2x0 OK\r\n\r\n", httparse::Error::Status),
        (b"HTTP/2 200 OK\r\n\r\n", httparse::Error::Version),
        (b"SSH-2.0-OpenSSH_9.6\r\n", httparse::Error::Version),
        (
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
            httparse::Error::Version,
        ),
        (
            b"HTTP/1.1 200 OK\r\nBad Header: x\r\n\r\n",
            httparse::Error::HeaderName,
        ),
    ];
    for (wire, want) in cases {
        let mut p = ResponseParser::new();
        assert_eq!(
            p.feed(wire),
            Err(ParseError::Http(want)),
            "{:?}",
            String::from_utf8_lossy(wire)
        );
        // Sticky until reset.
        assert_eq!(
            p.feed(b"HTTP/1.1 200 OK\r\n\r\n"),
            Err(ParseError::Http(want))
        );
    }
}

#[test]
fn oversized_heads() {
    // Over the byte limit, complete or not.
    let mut big = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
    big.resize(DEFAULT_MAX_HEAD + 10, b'a');
    assert_eq!(
        ResponseParser::new().feed(&big),
        Err(ParseError::HeadTooLarge)
    );
    big.extend_from_slice(b"\r\n\r\n");
    assert_eq!(
        ResponseParser::new().feed(&big),
        Err(ParseError::HeadTooLarge)
    );
    // Under the limit but incomplete: need more bytes.
    assert_eq!(
        ResponseParser::new().feed(&big[..DEFAULT_MAX_HEAD - 1]),
        Ok((0, None))
    );
    // A custom limit.
    let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(
        ResponseParser::with_max_head(37).feed(wire),
        Err(ParseError::HeadTooLarge)
    );
    assert_eq!(
        ResponseParser::with_max_head(38).feed(wire).map(|(n, _)| n),
        Ok(38)
    );
    // Too many headers.
    let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..=MAX_HEADERS {
        many.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    assert_eq!(
        ResponseParser::new().feed(&many),
        Err(ParseError::HeadTooLarge)
    );
    // A huge trailer line.
    let mut p = ResponseParser::with_max_head(64);
    let mut wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: ".to_vec();
    wire.resize(200, b'a');
    let (n, _) = p.feed(&wire).unwrap();
    assert_eq!(p.feed(&wire[n..]), Err(ParseError::HeadTooLarge));
}

#[test]
fn bad_chunks() {
    let cases: [(&[u8], ParseError); 6] = [
        (b"zz\r\n", ParseError::ChunkSize),
        (b"-1\r\n", ParseError::ChunkSize),
        (b"\r\n", ParseError::ChunkSize),
        (b"1 2\r\n", ParseError::ChunkSize),
        (b"11111111111111111\r\n", ParseError::ChunkSize),
        (b"3\r\nabcd\r\n", ParseError::ChunkFraming),
    ];
    for (chunks, want) in cases {
        let mut wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        wire.extend_from_slice(chunks);
        let mut p = ResponseParser::new();
        let mut at = 0;
        let err = loop {
            match p.feed(&wire[at..]) {
                Ok((0, None)) => panic!("no error for {:?}", String::from_utf8_lossy(chunks)),
                Ok((n, _)) => at += n,
                Err(e) => break e,
            }
        };
        assert_eq!(err, want, "{:?}", String::from_utf8_lossy(chunks));
    }
}

#[test]
fn two_pipelined_responses_in_one_buffer() {
    let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none\
        HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\n\
        HTTP/1.1 200 OK\r\nContent-";
    let mut p = ResponseParser::new();
    let (events, used) = drive(&mut p, wire);
    assert_eq!(
        events,
        [
            (38, head(200, true)),
            (3, body(b"one")),
            (0, Ev::End),
            (52, head(201, true)),
            (6, body(b"two")),
            (7, Ev::End),
        ]
    );
    // The third, partial head stays in the buffer.
    assert_eq!(used, 106);
    assert_eq!(&wire[used..], b"HTTP/1.1 200 OK\r\nContent-");
    assert!(p.is_idle());
}

#[test]
fn status_429_with_body() {
    let wire = b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Type: application/json\r\nContent-Length: 26\r\n\r\n{\"error\":\"rate limited\"}\r\n";
    let (events, used) = drive(&mut ResponseParser::new(), wire);
    assert_eq!(
        events,
        [
            (102, head(429, true)),
            (26, body(b"{\"error\":\"rate limited\"}\r\n")),
            (0, Ev::End)
        ]
    );
    assert_eq!(used, wire.len());
}

#[test]
fn interim_responses_are_skipped_and_101_is_refused() {
    let wire = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx";
    let (events, used) = drive(&mut ResponseParser::new(), wire);
    assert_eq!(
        events,
        [
            (25 + 40 + 38, head(200, true)),
            (1, body(b"x")),
            (0, Ev::End)
        ]
    );
    assert_eq!(used, wire.len());

    let wire = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n";
    assert_eq!(ResponseParser::new().feed(wire), Err(ParseError::Upgrade));
}

#[test]
fn event_stream_content_type() {
    let cases: [(&[u8], bool); 5] = [
        (b"text/event-stream", true),
        (b"Text/Event-Stream; charset=utf-8", true),
        (b"text/event-stream ;charset=utf-8", true),
        (b"text/event-streams", false),
        (b"application/json", false),
    ];
    for (ct, want) in cases {
        let mut wire = b"HTTP/1.1 200 OK\r\nContent-Type: ".to_vec();
        wire.extend_from_slice(ct);
        wire.extend_from_slice(b"\r\nContent-Length: 0\r\n\r\n");
        match ResponseParser::new().feed(&wire) {
            Ok((n, Some(Event::Head { event_stream, .. }))) => {
                assert_eq!(n, wire.len());
                assert_eq!(event_stream, want, "{:?}", String::from_utf8_lossy(ct));
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn partial_head_is_not_consumed() {
    let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let mut p = ResponseParser::new();
    for end in 0..38 {
        assert_eq!(p.feed(&wire[..end]), Ok((0, None)), "prefix {end}");
    }
    assert_eq!(p.feed(&wire[..38]).map(|(n, _)| n), Ok(38));
}

#[test]
fn errors_display_one_line() {
    let all = [
        ParseError::Http(httparse::Error::Status),
        ParseError::HeadTooLarge,
        ParseError::ChunkSize,
        ParseError::ChunkFraming,
        ParseError::ContentLength,
        ParseError::UnexpectedEof,
        ParseError::Upgrade,
    ];
    let texts: Vec<String> = all.iter().map(ToString::to_string).collect();
    assert_eq!(
        texts[0],
        "malformed HTTP response head: invalid response status"
    );
    assert_eq!(texts[1], "HTTP response head too large");
    for t in &texts {
        assert!(!t.is_empty() && !t.contains('\n'));
    }
    let e: &dyn std::error::Error = &ParseError::ChunkSize;
    assert_eq!(e.to_string(), "invalid chunk-size line in chunked body");
}
