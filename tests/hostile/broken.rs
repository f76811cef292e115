//! Broken responses.

use crate::case::{run, with, N, SHORT};
use crate::common::engines;
use crate::script::{answer, answer_once_then_close, Script};

/// Responses that cannot be read: each request fails with one kind (and,
/// for bad framing, one cause), and its connection is replaced.
#[test]
pub(crate) fn broken_responses_have_one_kind_and_cause() {
    let big_head = {
        let mut h = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
        h.extend_from_slice(&[b'a'; 40 * 1024]);
        h.extend_from_slice(b"\r\nContent-Length: 2\r\n\r\nok");
        h
    };
    let many_headers = {
        let mut h = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..300 {
            h.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
        }
        h.extend_from_slice(b"Content-Length: 2\r\n\r\nok");
        h
    };
    // An HTTP/2 server's first frame: SETTINGS (type 4) on stream 0 with
    // one setting, MAX_CONCURRENT_STREAMS = 100.
    let settings = b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64".to_vec();
    // A TLS server's fatal alert (protocol_version) to a plaintext hello.
    let tls_alert = b"\x15\x03\x03\x00\x02\x02\x46".to_vec();
    type Row = (
        &'static str,
        Script,
        Vec<&'static str>,
        u64,
        &'static str,
        Option<&'static str>,
    );
    let rows: Vec<Row> = vec![
        (
            "short body then close",
            answer_once_then_close(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort".to_vec()),
            SHORT.to_vec(),
            0,
            "reset",
            None,
        ),
        (
            "bad Content-Length",
            answer(b"HTTP/1.1 200 OK\r\nContent-Length: 12abc\r\n\r\nok".to_vec()),
            SHORT.to_vec(),
            0,
            "bad_framing",
            Some("content_length"),
        ),
        (
            "conflicting Content-Lengths",
            answer(
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!".to_vec(),
            ),
            SHORT.to_vec(),
            0,
            "bad_framing",
            Some("content_length"),
        ),
        (
            "bad chunk size",
            answer(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n"
                    .to_vec(),
            ),
            SHORT.to_vec(),
            0,
            "bad_framing",
            Some("chunk_size"),
        ),
        (
            "TLS alert",
            answer(tls_alert),
            SHORT.to_vec(),
            0,
            "bad_framing",
            Some("tls"),
        ),
        (
            "HTTP/2 SETTINGS",
            answer(settings),
            SHORT.to_vec(),
            0,
            "bad_framing",
            Some("http2"),
        ),
        (
            "40 KiB head",
            answer(big_head.clone()),
            SHORT.to_vec(),
            0,
            "too_large",
            None,
        ),
        (
            "40 KiB head, --max-header-bytes 65536",
            answer(big_head),
            with(SHORT, &["--max-header-bytes", "65536"]),
            N,
            "",
            None,
        ),
        (
            "300 headers",
            answer(many_headers),
            SHORT.to_vec(),
            0,
            "too_large",
            None,
        ),
        ("head of 32 KiB", answer(head_of(32 * 1024)), SHORT.to_vec(), N, "", None),
        (
            "head of 32 KiB + 1",
            answer(head_of(32 * 1024 + 1)),
            SHORT.to_vec(),
            0,
            "too_large",
            None,
        ),
        (
            "101 Switching Protocols",
            answer(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n".to_vec()),
            SHORT.to_vec(),
            0,
            "bad_framing",
            Some("upgrade"),
        ),
        (
            "bad status line",
            answer(b"HTTP/1.1 2OO OK\r\nContent-Length: 2\r\n\r\nok".to_vec()),
            SHORT.to_vec(),
            0,
            "bad_framing",
            Some("head"),
        ),
    ];
    for (case, s, args, ok, kind, cause) in rows {
        for engine in engines() {
            let r = run(engine, &s, "/", &args);
            let failed = N - ok;
            r.expect(case, N, ok, &[(kind, failed)]);
            r.expect_causes(case, &cause.map(|c| vec![(c, failed)]).unwrap_or_default());
            let ctx = r.ctx(case);
            assert_eq!(r.requests().retried, 0, "{ctx}");
            // A failed request's connection is never reused.
            let conns = if ok == N { 1 } else { N };
            r.expect_connections(case, conns);
        }
    }
}

/// A 200 response whose head (status line, headers, blank line) is exactly
/// `len` bytes, with a 2-byte body.
fn head_of(len: usize) -> Vec<u8> {
    let start = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Pad: ";
    let end = b"\r\n\r\n";
    let mut h = start.to_vec();
    h.resize(len - end.len(), b'p');
    h.extend_from_slice(end);
    assert_eq!(h.len(), len);
    h.extend_from_slice(b"ok");
    h
}
