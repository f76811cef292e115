//! Parser throughput: a typical small HTTP response, a 64-chunk SSE stream,
//! and the same stream through `response::Reader` inside a chunked body.
//!
//! Run (short): `cargo bench --bench parse -- --warm-up-time 1 --measurement-time 3`
//! Targets: the 200-byte response in < 200 ns; the SSE stream at >= 1 GB/s.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use metronome_core::http::{Event, ResponseParser};
use metronome_core::response::{ReadEvent, Reader};
use metronome_core::sse::{SseDecoder, SseKind};

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\n\
    Date: Mon, 01 Jan 2024 00:00:00 GMT\r\n\
    Server: metronome-serve/0.1.10 (x86_64)\r\n\
    Content-Type: application/json\r\n\
    Content-Length: 27\r\n\
    Connection: keep-alive\r\n\
    \r\n\
    {\"ok\":true,\"id\":1234567890}";

/// 64 OpenAI-style content chunks, a usage chunk and `[DONE]`.
fn sse_stream() -> Vec<u8> {
    let mut s = String::from(
        "data: {\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
    );
    for i in 0..64 {
        s.push_str(&format!(
            "data: {{\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"gpt-4o-mini\",\"system_fingerprint\":\"fp_44709d6fcb\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\" token{i} \\\"q\\\"\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
        ));
    }
    s.push_str("data: {\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"gpt-4o-mini\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":64,\"total_tokens\":76}}\n\n");
    s.push_str("data: [DONE]\n\n");
    s.into_bytes()
}

fn chunked(head: &[u8], body: &[u8], chunk: usize) -> Vec<u8> {
    let mut wire = head.to_vec();
    for c in body.chunks(chunk) {
        wire.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
        wire.extend_from_slice(c);
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(b"0\r\n\r\n");
    wire
}

fn parse_response(c: &mut Criterion) {
    assert_eq!(RESPONSE.len(), 200);
    let mut group = c.benchmark_group("http");
    group.throughput(Throughput::Bytes(RESPONSE.len() as u64));
    group.bench_function("response_200B", |b| {
        let mut parser = ResponseParser::new();
        b.iter(|| {
            parser.reset();
            let input = black_box(RESPONSE);
            let mut at = 0;
            let mut status = 0;
            let mut body = 0;
            loop {
                let (n, event) = parser.feed(&input[at..]).expect("valid response");
                at += n;
                match event {
                    Some(Event::Head { status: s, .. }) => status = s,
                    Some(Event::Body(bytes)) => body += bytes.len(),
                    Some(Event::End) => break,
                    None => unreachable!("the whole response is in the buffer"),
                }
            }
            assert!(status == 200 && body == 27 && at == 200);
        });
    });
    group.finish();
}

fn decode_sse(c: &mut Criterion) {
    let stream = sse_stream();
    let mut group = c.benchmark_group("sse");
    group.throughput(Throughput::Bytes(stream.len() as u64));
    group.bench_function("stream_64_chunks", |b| {
        b.iter(|| {
            let mut sse = SseDecoder::new();
            let mut input = black_box(&stream[..]);
            let (mut content, mut usage, mut done) = (0, 0, 0);
            loop {
                let (n, event) = sse.feed(input);
                input = &input[n..];
                match event {
                    Some(e) if e.kind == SseKind::Done => done += 1,
                    Some(e) => {
                        content += u32::from(e.content);
                        usage += e.usage_tokens.unwrap_or(0);
                    }
                    None => break,
                }
            }
            assert!(content == 64 && usage == 64 && done == 1);
        });
    });
    group.finish();

    let wire = chunked(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
        &stream,
        512,
    );
    let mut group = c.benchmark_group("reader");
    group.throughput(Throughput::Bytes(wire.len() as u64));
    group.bench_function("chunked_stream_64_chunks", |b| {
        b.iter(|| {
            let mut reader = Reader::new(true);
            let mut input = black_box(&wire[..]);
            let (mut content, mut usage) = (0, 0);
            let complete = loop {
                let (n, event) = reader.feed(input).expect("valid response");
                input = &input[n..];
                match event {
                    Some(ReadEvent::Content) => content += 1,
                    Some(ReadEvent::Usage(u)) => usage += u,
                    Some(ReadEvent::Complete { done_seen, .. }) => break done_seen,
                    Some(_) => {}
                    None => unreachable!("the whole response is in the buffer"),
                }
            };
            assert!(content == 64 && usage == 64 && complete && input.is_empty());
        });
    });
    group.finish();
}

criterion_group!(benches, parse_response, decode_sse);
criterion_main!(benches);
