//! Golden tests for `metronome_core::sse::SseDecoder` and for
//! `metronome_core::response::Reader` on event streams: fixed byte streams
//! with the exact events expected.

use metronome_core::response::{ReadEvent, Reader};
use metronome_core::sse::{SseDecoder, SseError, SseEvent, SseKind};

const fn usage(tokens: u32) -> SseEvent {
    SseEvent {
        kind: SseKind::Data,
        content: false,
        usage_tokens: Some(tokens),
    }
}

/// Feeds each slice as the engine would (re-offering what was not consumed)
/// and returns the events and the result of `finish`.
fn decode_all(slices: &[&[u8]]) -> (Vec<SseEvent>, Result<Option<SseEvent>, SseError>) {
    let mut sse = SseDecoder::new();
    let mut buf = Vec::new();
    let mut events = Vec::new();
    for slice in slices {
        buf.extend_from_slice(slice);
        loop {
            let (n, event) = sse.feed(&buf);
            assert!(n <= buf.len());
            buf.drain(..n);
            match event {
                Some(e) => events.push(e),
                None => break,
            }
        }
        assert!(buf.is_empty(), "without an event everything is consumed");
    }
    let finish = sse.finish();
    (events, finish)
}

fn decode(stream: &[u8]) -> (Vec<SseEvent>, Result<Option<SseEvent>, SseError>) {
    decode_all(&[stream])
}

const VLLM_STREAM: &str = concat!(
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",",
    "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
    ": ping\n\n",
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",",
    "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",",
    "\"choices\":[{\"index\":0,\"delta\":{\"content\":\",\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",",
    "\"choices\":[{\"index\":0,\"delta\":{\"content\":\" world\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",",
    "\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\",\"stop_reason\":null}],\"usage\":null}\n\n",
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",",
    "\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3,\"total_tokens\":8}}\n\n",
    "data: [DONE]\n\n",
);

fn vllm_events() -> Vec<SseEvent> {
    vec![
        SseEvent::OTHER,
        SseEvent::COMMENT,
        SseEvent::CONTENT,
        SseEvent::CONTENT,
        SseEvent::CONTENT,
        SseEvent::OTHER,
        usage(3),
        SseEvent::DONE,
    ]
}

#[test]
fn typical_vllm_stream() {
    let (events, finish) = decode(VLLM_STREAM.as_bytes());
    assert_eq!(events, vllm_events());
    assert_eq!(finish, Ok(None));
}

#[test]
fn typical_stream_with_crlf_and_cr_line_endings() {
    for ending in ["\r\n", "\r"] {
        let stream = VLLM_STREAM.replace('\n', ending);
        let (events, finish) = decode(stream.as_bytes());
        assert_eq!(events, vllm_events(), "{ending:?}");
        assert_eq!(finish, Ok(None));
        // A CR at the end of one slice, LF at the start of the next.
        let bytes = stream.as_bytes();
        for cut in 0..bytes.len() {
            if bytes[cut] == b'\n' {
                assert_eq!(
                    decode_all(&[&bytes[..cut], &bytes[cut..]]).0,
                    vllm_events(),
                    "cut {cut}"
                );
            }
        }
    }
}

#[test]
fn exact_consumed_counts() {
    let stream = b": ping\r\n\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\r\n\r\ndata: [DONE]\r\n\r\n";
    let mut sse = SseDecoder::new();
    // The comment is reported at its line end (CR); the LF that follows
    // is consumed by the next call.
    assert_eq!(sse.feed(stream), (7, Some(SseEvent::COMMENT)));
    // LF, blank CRLF, the data line and its CRLF, the blank line's CR.
    assert_eq!(
        sse.feed(&stream[7..]),
        (1 + 2 + 45 + 2 + 1, Some(SseEvent::CONTENT))
    );
    assert_eq!(
        sse.feed(&stream[58..]),
        (1 + 12 + 2 + 1, Some(SseEvent::DONE))
    );
    assert_eq!(sse.feed(&stream[74..]), (1, None));
    assert_eq!(stream.len(), 75);
}

#[test]
fn content_and_usage_in_one_event() {
    let stream = b"data: {\"choices\":[{\"delta\":{\"content\":\"!\"}}],\"usage\":{\"completion_tokens\":17}}\n\ndata: [DONE]\n\n";
    let (events, finish) = decode(stream);
    assert_eq!(
        events,
        [
            SseEvent {
                kind: SseKind::Data,
                content: true,
                usage_tokens: Some(17)
            },
            SseEvent::DONE
        ]
    );
    assert_eq!(finish, Ok(None));
}

#[test]
fn completions_api_and_reasoning() {
    let stream = concat!(
        "data: {\"choices\":[{\"text\":\"Once\",\"index\":0,\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"text\":\"\",\"index\":0,\"finish_reason\":\"length\"}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm\"}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"reasoning\":\"so\",\"content\":null}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"{\\\"content\\\":1}\"}}]}}]}\n\n",
        "data: [DONE]\n\n",
    );
    let (events, _) = decode(stream.as_bytes());
    assert_eq!(
        events,
        [
            SseEvent::CONTENT,
            SseEvent::OTHER,
            SseEvent::CONTENT,
            SseEvent::CONTENT,
            // A tool-call delta is output.
            SseEvent::CONTENT,
            SseEvent::DONE
        ]
    );
}

#[test]
fn error_event_and_error_objects() {
    let stream = concat!(
        "event: error\ndata: {\"message\":\"overloaded\"}\n\n",
        "data: {\"error\":{\"message\":\"the content usage\",\"code\":500}}\n\n",
        "data: {\"object\":\"error\",\"message\":\"bad\",\"type\":\"BadRequestError\",\"code\":400}\n\n",
        "event: error\n\n",
        // The event type resets after each event.
        "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n",
        "event: message\ndata: {\"choices\":[{\"delta\":{\"content\":\"y\"}}]}\n\n",
        "data: {\"error\":null,\"choices\":[{\"delta\":{\"content\":\"z\"}}]}\n\n",
    );
    let (events, finish) = decode(stream.as_bytes());
    assert_eq!(
        events,
        [
            SseEvent::ERROR,
            SseEvent::ERROR,
            SseEvent::ERROR,
            SseEvent::ERROR,
            SseEvent::CONTENT,
            SseEvent::CONTENT,
            SseEvent::CONTENT
        ]
    );
    assert_eq!(finish, Err(SseError::CutBeforeDone));
}

#[test]
fn tricky_strings() {
    let cases: [(&str, SseEvent); 9] = [
        // Key names and JSON inside the content text.
        (
            r#"{"choices":[{"delta":{"content":"the error usage \"usage\":{\"completion_tokens\":9} {[}]"}}]}"#,
            SseEvent::CONTENT,
        ),
        // Escaped backslash right before the closing quote.
        (
            r#"{"choices":[{"delta":{"content":"\\"}}],"usage":{"completion_tokens":2}}"#,
            SseEvent {
                kind: SseKind::Data,
                content: true,
                usage_tokens: Some(2),
            },
        ),
        // A unicode escape is content.
        (
            r#"{"choices":[{"delta":{"content":"\u0022"}}]}"#,
            SseEvent::CONTENT,
        ),
        // Key-like text in other string values does not count.
        (
            r#"{"id":"\"error\":1, \"usage\":{\"completion_tokens\":9}","choices":[{"delta":{"role":"assistant"}}]}"#,
            SseEvent::OTHER,
        ),
        (
            r#"{"model":"content","choices":[{"delta":{"role":"content"}}]}"#,
            SseEvent::OTHER,
        ),
        // Whitespace everywhere.
        (
            "{ \"choices\" : [ { \"delta\" : { \"content\" : \"x\" } } ] }",
            SseEvent::CONTENT,
        ),
        (
            "{\"choices\":\t[{\"delta\":{\"content\":\r\"\"}}]}",
            SseEvent::OTHER,
        ),
        // Content in a later choice, or not under delta, does not count.
        (
            r#"{"choices":[{"index":0,"delta":{}},{"index":1,"delta":{"content":"x"}}]}"#,
            SseEvent::OTHER,
        ),
        (
            r#"{"content":"x","choices":[{"message":{"content":"y"}}]}"#,
            SseEvent::OTHER,
        ),
    ];
    for (json, want) in cases {
        let stream = format!("data: {json}\n\n");
        let (events, _) = decode(stream.as_bytes());
        assert_eq!(events, [want], "{json}");
    }
}

#[test]
fn fields_and_multi_line_data() {
    let stream = concat!(
        "id: 1\nretry: 1000\nevent: message\n",
        "data: {\"choices\":[{\"delta\":\n",
        "data: {\"content\":\"x\"}}]}\n\n",
        "data\n\n",
        "unknown: field\n\n",
        "data:[DONE]\n\n",
    );
    let (events, finish) = decode(stream.as_bytes());
    assert_eq!(events, [SseEvent::CONTENT, SseEvent::OTHER, SseEvent::DONE]);
    assert_eq!(finish, Ok(None));

    // "[DONE]" on two lines is not [DONE].
    let (events, finish) = decode(b"data: [DONE]\ndata: [DONE]\n\n");
    assert_eq!(events, [SseEvent::OTHER]);
    assert_eq!(finish, Err(SseError::CutBeforeDone));
}

#[test]
fn cut_before_done() {
    let stream = b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}";
    let (events, finish) = decode(stream);
    // The second event never got its blank line: discarded.
    assert_eq!(events, [SseEvent::CONTENT]);
    assert_eq!(finish, Err(SseError::CutBeforeDone));
    assert_eq!(decode(b"").1, Err(SseError::CutBeforeDone));
    assert_eq!(
        SseError::CutBeforeDone.to_string(),
        "event stream ended before data: [DONE]"
    );
}

#[test]
fn done_without_final_blank_line() {
    assert_eq!(
        decode(b"data: [DONE]\n"),
        (vec![], Ok(Some(SseEvent::DONE)))
    );
    assert_eq!(decode(b"data: [DONE]"), (vec![], Ok(Some(SseEvent::DONE))));
    assert_eq!(
        decode(b"data: [DONE"),
        (vec![], Err(SseError::CutBeforeDone))
    );
}

/// Feeds a whole HTTP response through a `Reader` in slices of `step`
/// bytes, as the engine does, then signals EOF.
fn read_all(wire: &[u8], expect_stream: bool, step: usize) -> Vec<ReadEvent> {
    let mut reader = Reader::new(expect_stream);
    let mut buf = Vec::new();
    let mut events = Vec::new();
    for read in wire.chunks(step) {
        buf.extend_from_slice(read);
        loop {
            let (n, event) = reader.feed(&buf).expect("valid response");
            assert!(n <= buf.len());
            buf.drain(..n);
            match event {
                Some(e) => events.push(e),
                None if n == 0 => break,
                None => {}
            }
        }
    }
    while let Some(e) = reader.finish_eof().expect("complete response") {
        events.push(e);
    }
    events
}

fn chunked(head: &str, body: &[u8], chunk: usize) -> Vec<u8> {
    let mut wire = head.as_bytes().to_vec();
    for c in body.chunks(chunk) {
        wire.extend_from_slice(format!("{:x};ext=1\r\n", c.len()).as_bytes());
        wire.extend_from_slice(c);
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(b"0\r\nX-Trailer: 1\r\n\r\n");
    wire
}

const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

#[test]
fn reader_on_a_chunked_stream() {
    let want = [
        ReadEvent::Head { status: 200 },
        // The role-only chunk, three content chunks, the finish chunk.
        ReadEvent::Chunk,
        ReadEvent::Content,
        ReadEvent::Content,
        ReadEvent::Content,
        ReadEvent::Chunk,
        ReadEvent::Usage(3),
        ReadEvent::Done,
        ReadEvent::Complete {
            keep_alive: true,
            done_seen: true,
        },
    ];
    // Chunks that split events mid-line, and reads that split chunks.
    for chunk in [1, 7, 50, 1000] {
        let wire = chunked(SSE_HEAD, VLLM_STREAM.as_bytes(), chunk);
        for step in [1, 3, 64, wire.len()] {
            assert_eq!(
                read_all(&wire, true, step),
                want,
                "chunk {chunk}, step {step}"
            );
        }
    }
}

#[test]
fn reader_content_and_usage_in_one_event() {
    let body = b"data: {\"choices\":[{\"delta\":{\"content\":\"!\"}}],\"usage\":{\"completion_tokens\":1}}\n\ndata: [DONE]\n\n";
    let wire = chunked(SSE_HEAD, body, 10);
    assert_eq!(
        read_all(&wire, true, 5),
        [
            ReadEvent::Head { status: 200 },
            ReadEvent::Content,
            ReadEvent::Usage(1),
            ReadEvent::Done,
            ReadEvent::Complete {
                keep_alive: true,
                done_seen: true
            },
        ]
    );
}

#[test]
fn reader_stream_cut_and_error() {
    let body = b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\nevent: error\ndata: {\"message\":\"x\"}\n\n";
    let wire = chunked(SSE_HEAD, body, 16);
    assert_eq!(
        read_all(&wire, true, 9),
        [
            ReadEvent::Head { status: 200 },
            ReadEvent::Content,
            ReadEvent::StreamError,
            ReadEvent::Complete {
                keep_alive: true,
                done_seen: false
            },
        ]
    );
}

#[test]
fn reader_read_until_close_stream() {
    let mut wire = b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n".to_vec();
    wire.extend_from_slice(VLLM_STREAM.as_bytes());
    let events = read_all(&wire, true, 33);
    assert_eq!(events.len(), 9);
    assert_eq!(
        events[8],
        ReadEvent::Complete {
            keep_alive: false,
            done_seen: true
        }
    );
}

#[test]
fn reader_non_2xx_body_is_skipped() {
    let body = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\n";
    let wire = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    assert_eq!(
        read_all(wire.as_bytes(), true, 11),
        [
            ReadEvent::Head { status: 503 },
            ReadEvent::Complete {
                keep_alive: true,
                done_seen: false
            }
        ]
    );
}

#[test]
fn reader_two_responses_on_one_connection() {
    let mut wire = chunked(
        SSE_HEAD,
        b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\n",
        20,
    );
    let first_len = wire.len();
    wire.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 14\r\n\r\ndata: [DONE]\n\n");
    let mut reader = Reader::new(true);
    let mut at = 0;
    let mut events = Vec::new();
    loop {
        let (n, event) = reader.feed(&wire[at..]).unwrap();
        at += n;
        match event {
            Some(e @ ReadEvent::Complete { .. }) => {
                events.push(e);
                if events.len() == 4 {
                    assert_eq!(at, first_len);
                }
                reader.reset();
            }
            Some(e) => events.push(e),
            None if n == 0 => break,
            None => {}
        }
    }
    assert_eq!(at, wire.len());
    assert_eq!(
        events,
        [
            ReadEvent::Head { status: 200 },
            ReadEvent::Content,
            ReadEvent::Done,
            ReadEvent::Complete {
                keep_alive: true,
                done_seen: true
            },
            ReadEvent::Head { status: 200 },
            ReadEvent::Done,
            ReadEvent::Complete {
                keep_alive: true,
                done_seen: true
            },
        ]
    );
}
