//! `metronome serve --http2` end to end, in-process on 127.0.0.1:0, driven
//! from both sides: by Python's `h2` package (tests/h2_client.py), an
//! HTTP/2 implementation nobody here wrote, and by core's own client
//! [`Connection`]. Raw frames check the connection errors (GOAWAY) and a
//! thousand mutated byte streams check the server never panics.
//!
//! The Python tests skip visibly when `import h2` fails, except under CI
//! (`CI=true`), where `.ci/run` installs it and a missing package fails.
//! Timing assertions are lower bounds from the FIFO model.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use metronome::serve::{spawn, ServeConfig, ServerHandle, TlsServer};
use metronome_core::h2::conn::{Config, PREFACE};
use metronome_core::h2::frame::{kind, read_frame, ErrorCode, Frame};
use metronome_core::h2::hpack::encode_request;
use metronome_core::h2::{Connection, Event};
use serde_json::{json, Value};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Timer and clock granularity, for lower bounds.
const SLACK_S: f64 = 0.002;

fn server(config: ServeConfig) -> ServerHandle {
    spawn(ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        http2: true,
        ..config
    })
    .expect("the server starts on a free port")
}

/// Python's h2 imports; else a visible skip (a failure under CI).
fn python_h2() -> bool {
    let ok = Command::new("python3")
        .args([
            "-c",
            "import h2, sys; sys.exit(0 if h2.__version__ >= '4' else 1)",
        ])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI must install Python's h2 (pip install h2==4.4.1)"
        );
        eprintln!("SKIP: Python's h2 package is not installed (pip install h2==4.4.1)");
    }
    ok
}

/// Runs tests/h2_client.py against `addr` with `spec`; its JSON result.
fn h2_client(addr: SocketAddr, spec: &Value) -> Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/h2_client.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(addr.port().to_string())
        .arg(spec.to_string())
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "h2_client.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("h2_client.py prints JSON")
}

fn responses(result: &Value) -> &Vec<Value> {
    result["responses"].as_array().expect("responses")
}

fn header<'a>(fields: &'a Value, name: &str) -> Option<&'a str> {
    fields
        .as_array()?
        .iter()
        .find(|f| f[0] == name)
        .and_then(|f| f[1].as_str())
}

#[test]
fn python_concurrent_streams_are_served_in_fifo_order() {
    if !python_h2() {
        return;
    }
    let srv = server(ServeConfig {
        service: ms(20),
        max_streams: 7,
        ..ServeConfig::default()
    });
    let requests: Vec<Value> = (0..6)
        .map(|_| json!({"method": "GET", "path": "/"}))
        .collect();
    let result = h2_client(srv.addr(), &json!({ "requests": requests }));
    assert_eq!(result["max_concurrent_streams"], 7);
    let got = responses(&result);
    assert_eq!(got.len(), 6);
    for (k, r) in got.iter().enumerate() {
        assert_eq!(r["stream_id"], 2 * k + 1);
        assert_eq!(r["status"], 200, "{r}");
        assert_eq!(r["body"], "ok");
        assert_eq!(header(&r["headers"], "content-type"), Some("text/plain"));
        assert_eq!(header(&r["headers"], "content-length"), Some("2"));
        assert_eq!(r["reset"], Value::Null);
        // One FIFO server: each completion is at least one service time
        // after the one before, so the k-th request completes (k+1)
        // service times after the first was sent, at the earliest; the
        // answers come in arrival order.
        let end_at = r["end_at"].as_f64().unwrap();
        let first_sent = got[0]["sent_at"].as_f64().unwrap();
        assert!(
            end_at - first_sent >= 0.020 * (k + 1) as f64 - SLACK_S,
            "stream {k} ended {end_at} s, the first was sent at {first_sent} s"
        );
        if k > 0 {
            let before = got[k - 1]["end_at"].as_f64().unwrap();
            assert!(end_at >= before, "stream {k} ended before stream {}", k - 1);
        }
    }
    assert_eq!(srv.stop(), 6);
}

#[test]
fn python_post_bodies_and_a_tiny_client_window() {
    if !python_h2() {
        return;
    }
    let srv = server(ServeConfig {
        service: ms(0),
        body_bytes: 100,
        error_every: Some(3),
        ..ServeConfig::default()
    });
    // 17 MB is more than the 16 MiB connection window the server opens:
    // it must return DATA with WINDOW_UPDATEs. The client's window of 16 bytes makes
    // the server cut its 100-byte answers into frames of at most 16.
    let spec = json!({
        "window": 16,
        "sequential": true,
        "requests": [
            {"method": "POST", "path": "/upload", "body_len": 17_000_000},
            {"method": "POST", "path": "/small", "body": "hello"},
            {"method": "GET", "path": "/"},
            {"method": "HEAD", "path": "/"},
        ],
    });
    let result = h2_client(srv.addr(), &spec);
    let got = responses(&result);
    let statuses: Vec<_> = got.iter().map(|r| r["status"].as_u64().unwrap()).collect();
    assert_eq!(statuses, [200, 200, 429, 200]);
    for r in &got[..2] {
        assert_eq!(r["body"], "ok".repeat(50));
        let frames: Vec<u64> = r["data_frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_u64().unwrap())
            .collect();
        assert!(frames.iter().all(|&n| n <= 16), "{frames:?}");
        assert_eq!(frames.iter().sum::<u64>(), 100);
    }
    assert_eq!(got[2]["body"], "too many requests\n");
    // HEAD: the length of the body, no body.
    assert_eq!(header(&got[3]["headers"], "content-length"), Some("100"));
    assert_eq!(got[3]["body"], "");
    assert_eq!(srv.stop(), 4);
}

#[test]
fn python_sse_stream_health_and_models() {
    if !python_h2() {
        return;
    }
    let srv = server(ServeConfig {
        sse: true,
        tokens: 3,
        ttft: ms(30),
        itl: ms(10),
        ..ServeConfig::default()
    });
    let chat = r#"{"model":"metronome","stream":true,"max_tokens":2,"messages":[{"role":"user","content":"one two three"}]}"#;
    let spec = json!({
        "requests": [
            {"method": "POST", "path": "/v1/chat/completions", "body": chat,
             "headers": [["content-type", "application/json"]]},
            {"method": "GET", "path": "/health"},
            {"method": "GET", "path": "/v1/models"},
            {"method": "GET", "path": "/nowhere"},
        ],
    });
    let result = h2_client(srv.addr(), &spec);
    let got = responses(&result);
    let sse = &got[0];
    assert_eq!(sse["status"], 200);
    assert_eq!(
        header(&sse["headers"], "content-type"),
        Some("text/event-stream")
    );
    let body = sse["body"].as_str().unwrap();
    let events: Vec<&str> = body.split_inclusive("\n\n").collect();
    assert_eq!(events.len(), 5, "{body}");
    assert!(events[0].contains(r#""delta":{"role":"assistant"}"#));
    assert!(events[1].contains(r#""delta":{"content":"tok0 "},"finish_reason":null"#));
    assert!(events[2].contains(r#""delta":{"content":"tok1 "},"finish_reason":"stop""#));
    assert!(
        events[3].contains(r#""usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}"#)
    );
    assert_eq!(events[4], "data: [DONE]\n\n");
    // Each event is its own DATA frame, sent when due: the role chunk at
    // once, token i at ttft + i * itl, the end with the last token.
    let times: Vec<f64> = sse["data_times"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_f64().unwrap())
        .collect();
    assert!(times.len() >= 3, "{times:?}");
    assert!(times[1] >= 0.030 - SLACK_S, "{times:?}");
    assert!(times[2] >= 0.040 - SLACK_S, "{times:?}");
    assert_eq!(got[1]["status"], 200);
    assert_eq!(got[1]["body"], "");
    assert_eq!(got[2]["status"], 200);
    let models: Value = serde_json::from_str(got[2]["body"].as_str().unwrap()).unwrap();
    assert_eq!(models["data"][0]["id"], "metronome");
    assert_eq!(got[3]["status"], 404);
    // Only the stream counts as served.
    assert_eq!(srv.stop(), 1);
}

#[test]
fn python_cut_stream_is_reset() {
    if !python_h2() {
        return;
    }
    let srv = server(ServeConfig {
        sse: true,
        tokens: 4,
        ttft: ms(5),
        itl: ms(5),
        cut_every: Some(2),
        ..ServeConfig::default()
    });
    let chat = r#"{"stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let request = json!({"method": "POST", "path": "/v1/chat/completions", "body": chat});
    let spec = json!({"sequential": true, "requests": [request, request]});
    let got = h2_client(srv.addr(), &spec)["responses"].clone();
    assert_eq!(got[0]["reset"], Value::Null);
    assert!(got[0]["body"]
        .as_str()
        .unwrap()
        .ends_with("data: [DONE]\n\n"));
    // The cut: half the tokens (role chunk + 2), then RST_STREAM
    // INTERNAL_ERROR; the connection lives on.
    assert_eq!(got[1]["reset"], 2);
    let body = got[1]["body"].as_str().unwrap();
    assert_eq!(body.matches("\n\n").count(), 3, "{body}");
    assert!(!body.contains("[DONE]"));
    assert_eq!(srv.stop(), 1);
}

#[test]
fn python_unary_grpc_trailers_and_injected_status() {
    if !python_h2() {
        return;
    }
    let srv = server(ServeConfig {
        service: ms(1),
        grpc_status_every: Some((3, 14)),
        ..ServeConfig::default()
    });
    let call = json!({"method": "POST", "path": "/grpc.health.v1.Health/Check", "grpc": true});
    let spec = json!({"sequential": true, "requests": [call, call, call, call]});
    let result = h2_client(srv.addr(), &spec);
    let got = responses(&result);
    for (k, r) in got.iter().enumerate() {
        assert_eq!(r["status"], 200, "{r}");
        assert_eq!(
            header(&r["headers"], "content-type"),
            Some("application/grpc")
        );
        if k == 2 {
            // Trailers-only: the status in the one HEADERS, no DATA.
            assert_eq!(header(&r["headers"], "grpc-status"), Some("14"));
            assert_eq!(
                header(&r["headers"], "grpc-message"),
                Some("injected by metronome serve")
            );
            assert_eq!(r["body"], "");
            assert_eq!(r["trailers"], Value::Null);
        } else {
            assert_eq!(r["body"], "\u{0}\u{0}\u{0}\u{0}\u{0}");
            assert_eq!(r["trailers"], json!([["grpc-status", "0"]]));
        }
    }
    assert_eq!(srv.stop(), 4);
}

#[test]
fn python_h2_over_tls_by_alpn() {
    if !python_h2() {
        return;
    }
    let tls = metronome::tls::ServerTls::self_signed().unwrap();
    let srv = server(ServeConfig {
        service: ms(0),
        tls: Some(TlsServer(Arc::clone(&tls.config))),
        ..ServeConfig::default()
    });
    let requests: Vec<Value> = (0..3).map(|_| json!({"path": "/"})).collect();
    let result = h2_client(srv.addr(), &json!({"tls": true, "requests": requests}));
    assert_eq!(result["alpn"], "h2");
    assert!(responses(&result).iter().all(|r| r["status"] == 200));
    assert_eq!(srv.stop(), 3);
}

/// Reads frames until the server closes; returns them as (kind, stream,
/// flags-free summary) for GOAWAY checks.
fn read_all_frames(conn: &mut TcpStream) -> Vec<(u8, u32, Option<ErrorCode>)> {
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut bytes = Vec::new();
    let _ = conn.read_to_end(&mut bytes);
    let mut frames = Vec::new();
    let mut rest = &bytes[..];
    while let Ok(Some((frame, n))) = read_frame(rest, 1 << 24) {
        frames.push(match frame {
            Frame::GoAway { code, .. } => (kind::GOAWAY, 0, Some(code)),
            Frame::RstStream { stream, code } => (kind::RST_STREAM, stream, Some(code)),
            Frame::Headers { stream, .. } => (kind::HEADERS, stream, None),
            Frame::Settings { .. } => (kind::SETTINGS, 0, None),
            _ => (255, 0, None),
        });
        rest = &rest[n..];
    }
    frames
}

fn settings_frame() -> Vec<u8> {
    vec![0, 0, 0, kind::SETTINGS, 0, 0, 0, 0, 0]
}

#[test]
fn connection_errors_end_with_goaway() {
    let srv = server(ServeConfig::default());
    let mut get = [0u8; 64];
    let n = encode_request(b"GET", b"http", b"x", b"/", &[], false, &mut get).unwrap();
    let headers = |stream: u8, block: &[u8]| {
        let mut f = vec![0, 0, block.len() as u8, kind::HEADERS, 0x5, 0, 0, 0, stream];
        f.extend_from_slice(block);
        f
    };
    let cases: Vec<(&str, Vec<u8>, ErrorCode)> = vec![
        (
            "PING first, not SETTINGS",
            vec![0, 0, 8, kind::PING, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8],
            ErrorCode::PROTOCOL_ERROR,
        ),
        (
            "DATA on stream 0",
            [
                settings_frame(),
                vec![0, 0, 1, kind::DATA, 0, 0, 0, 0, 0, b'x'],
            ]
            .concat(),
            ErrorCode::PROTOCOL_ERROR,
        ),
        (
            "frame above 16 KiB",
            [
                settings_frame(),
                vec![0, 0x40, 1, kind::DATA, 0, 0, 0, 0, 1],
            ]
            .concat(),
            ErrorCode::FRAME_SIZE_ERROR,
        ),
        (
            "HPACK index 0",
            [settings_frame(), headers(1, b"\x80")].concat(),
            ErrorCode::COMPRESSION_ERROR,
        ),
        (
            "even stream id",
            [settings_frame(), headers(2, &get[..n])].concat(),
            ErrorCode::PROTOCOL_ERROR,
        ),
        (
            "DATA on an idle stream",
            [
                settings_frame(),
                vec![0, 0, 1, kind::DATA, 1, 0, 0, 0, 9, b'x'],
            ]
            .concat(),
            ErrorCode::PROTOCOL_ERROR,
        ),
        (
            "CONTINUATION alone",
            [
                settings_frame(),
                vec![0, 0, 0, kind::CONTINUATION, 4, 0, 0, 0, 1],
            ]
            .concat(),
            ErrorCode::PROTOCOL_ERROR,
        ),
        (
            "connection WINDOW_UPDATE of 0",
            [
                settings_frame(),
                vec![0, 0, 4, kind::WINDOW_UPDATE, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            ]
            .concat(),
            ErrorCode::PROTOCOL_ERROR,
        ),
        (
            "ENABLE_PUSH 2",
            vec![0, 0, 6, kind::SETTINGS, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 2],
            ErrorCode::PROTOCOL_ERROR,
        ),
        (
            "stream ids going down",
            [
                settings_frame(),
                headers(5, &get[..n]),
                headers(3, &get[..n]),
            ]
            .concat(),
            ErrorCode::PROTOCOL_ERROR,
        ),
    ];
    for (what, bytes, code) in cases {
        let mut conn = TcpStream::connect(srv.addr()).unwrap();
        conn.write_all(PREFACE).unwrap();
        conn.write_all(&bytes).unwrap();
        let frames = read_all_frames(&mut conn);
        assert_eq!(frames.first().map(|f| f.0), Some(kind::SETTINGS), "{what}");
        assert_eq!(
            frames.iter().find(|f| f.0 == kind::GOAWAY),
            Some(&(kind::GOAWAY, 0, Some(code))),
            "{what}: {frames:?}"
        );
    }
    // Stream errors reset the stream only: a malformed request (no :path),
    // then a good one on the same connection.
    let mut bad = [0u8; 64];
    let m = {
        let mut k = 0;
        for (name, value) in [(&b":method"[..], &b"GET"[..]), (b":scheme", b"http")] {
            k +=
                metronome_core::h2::hpack::encode_field(name, value, false, &mut bad[k..]).unwrap();
        }
        k
    };
    let mut conn = TcpStream::connect(srv.addr()).unwrap();
    conn.write_all(
        &[
            PREFACE.as_slice(),
            &settings_frame(),
            &headers(1, &bad[..m]),
            &headers(3, &get[..n]),
        ]
        .concat(),
    )
    .unwrap();
    // GOAWAY from the client after both: the server finishes and closes.
    conn.write_all(&[0, 0, 8, kind::GOAWAY, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0])
        .unwrap();
    let frames = read_all_frames(&mut conn);
    assert!(
        frames.contains(&(kind::RST_STREAM, 1, Some(ErrorCode::PROTOCOL_ERROR))),
        "{frames:?}"
    );
    assert!(frames.contains(&(kind::HEADERS, 3, None)), "{frames:?}");
    assert_eq!(
        frames.last(),
        Some(&(kind::GOAWAY, 0, Some(ErrorCode::NO_ERROR)))
    );
    assert_eq!(srv.stop(), 1);
}

#[test]
fn max_streams_refuses_the_stream_beyond() {
    let srv = server(ServeConfig {
        service: ms(50),
        max_streams: 2,
        ..ServeConfig::default()
    });
    let mut get = [0u8; 64];
    let n = encode_request(b"GET", b"http", b"x", b"/", &[], false, &mut get).unwrap();
    let mut bytes = [PREFACE.as_slice(), &settings_frame()].concat();
    for stream in [1u8, 3, 5] {
        bytes.extend_from_slice(&[0, 0, n as u8, kind::HEADERS, 0x5, 0, 0, 0, stream]);
        bytes.extend_from_slice(&get[..n]);
    }
    bytes.extend_from_slice(&[0, 0, 8, kind::GOAWAY, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0]);
    let mut conn = TcpStream::connect(srv.addr()).unwrap();
    conn.write_all(&bytes).unwrap();
    let frames = read_all_frames(&mut conn);
    assert!(
        frames.contains(&(kind::RST_STREAM, 5, Some(ErrorCode::REFUSED_STREAM))),
        "{frames:?}"
    );
    assert!(frames.contains(&(kind::HEADERS, 1, None)));
    assert!(frames.contains(&(kind::HEADERS, 3, None)));
    assert_eq!(srv.stop(), 2);
}

/// Drives core's client over a socket until `want` streams ended; returns
/// the events.
fn core_client(addr: SocketAddr, requests: &[(&[u8], Option<&[u8]>)]) -> Vec<Event> {
    let mut sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut conn = Connection::<16>::new(Config::DEFAULT);
    let mut out = vec![0u8; 64 * 1024];
    let mut buf = Vec::new();
    let mut scratch = [0u8; 16 * 1024];
    let mut events = Vec::new();
    let mut started = false;
    let mut ended = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    while ended < requests.len() {
        assert!(
            Instant::now() < deadline,
            "core client: deadline; {events:?}"
        );
        let n = conn.poll_transmit(&mut out);
        sock.write_all(&out[..n]).unwrap();
        if !started && conn.can_start() {
            started = true;
            let mut wire = Vec::new();
            for (block, body) in requests {
                let (id, n) = conn.start_request(block, body.is_none(), &mut out).unwrap();
                wire.extend_from_slice(&out[..n]);
                if let Some(body) = body {
                    let sent = conn.send_data(id, body, true, &mut out).unwrap();
                    assert_eq!(sent.consumed, body.len());
                    wire.extend_from_slice(&out[..sent.written]);
                }
            }
            sock.write_all(&wire).unwrap();
        }
        let got = sock.read(&mut scratch).unwrap();
        assert!(got > 0, "the server closed; {events:?}");
        buf.extend_from_slice(&scratch[..got]);
        loop {
            let (used, event) = conn.handle_read(&buf).expect("a valid server");
            buf.drain(..used);
            if let Some(event) = event {
                ended += usize::from(matches!(
                    event,
                    Event::Headers {
                        end_stream: true,
                        ..
                    } | Event::Data {
                        end_stream: true,
                        ..
                    } | Event::Trailers { .. }
                        | Event::StreamReset { .. }
                ));
                events.push(event);
            }
            if used == 0 {
                break;
            }
        }
    }
    events
}

#[test]
fn core_client_gets_plain_post_and_grpc_answers() {
    let srv = server(ServeConfig {
        service: ms(1),
        body_bytes: 40_000,
        ..ServeConfig::default()
    });
    let block = |method: &[u8], path: &[u8], headers: &[(&[u8], &[u8])]| {
        let mut b = [0u8; 256];
        let n = encode_request(method, b"http", b"localhost", path, headers, true, &mut b).unwrap();
        b[..n].to_vec()
    };
    let get = block(b"GET", b"/", &[]);
    let post = block(b"POST", b"/upload", &[(b"content-length", b"5")]);
    let grpc = block(
        b"POST",
        b"/grpc.health.v1.Health/Check",
        &[(b"content-type", b"application/grpc"), (b"te", b"trailers")],
    );
    let events = core_client(
        srv.addr(),
        &[
            (&get, None),
            (&post, Some(b"hello")),
            (&grpc, Some(&[0, 0, 0, 0, 0])),
        ],
    );
    let heads: Vec<_> = events
        .iter()
        .filter_map(|e| match *e {
            Event::Headers {
                stream,
                status,
                grpc_status,
                ..
            } => Some((stream, status, grpc_status)),
            _ => None,
        })
        .collect();
    assert_eq!(heads, [(1, 200, None), (3, 200, None), (5, 200, None)]);
    let data = |s: u32| -> usize {
        events
            .iter()
            .map(|e| match *e {
                Event::Data { stream, len, .. } if stream == s => len,
                _ => 0,
            })
            .sum()
    };
    // 40 000 bytes is beyond the 16 384 frame size: several DATA frames.
    assert_eq!((data(1), data(3), data(5)), (40_000, 40_000, 5));
    assert!(events.contains(&Event::Trailers {
        stream: 5,
        grpc_status: Some(0)
    }));
    assert_eq!(srv.stop(), 3);
}

#[test]
fn core_client_reads_an_sse_stream() {
    let srv = server(ServeConfig {
        sse: true,
        tokens: 2,
        ttft: ms(5),
        itl: ms(5),
        error_every: Some(2),
        ..ServeConfig::default()
    });
    let mut b = [0u8; 256];
    let body = br#"{"stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let length = body.len().to_string();
    let n = encode_request(
        b"POST",
        b"http",
        b"localhost",
        b"/v1/chat/completions",
        &[
            (b"content-type", b"application/json"),
            (b"content-length", length.as_bytes()),
        ],
        true,
        &mut b,
    )
    .unwrap();
    let events = core_client(srv.addr(), &[(&b[..n], Some(body)), (&b[..n], Some(body))]);
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Headers {
            stream: 1,
            status: 200,
            event_stream: true,
            end_stream: false,
            ..
        }
    )));
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Data {
            stream: 1,
            end_stream: true,
            ..
        }
    )));
    // The second stream is the injected 429 (JSON body).
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Headers {
            stream: 3,
            status: 429,
            event_stream: false,
            ..
        }
    )));
    assert_eq!(srv.stop(), 2);
}

#[test]
fn http1_still_served_on_the_http2_port() {
    let srv = server(ServeConfig::default());
    let mut conn = TcpStream::connect(srv.addr()).unwrap();
    // "PRI" is where both start: the sniffer must wait past it.
    conn.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    conn.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
    let mut conn = TcpStream::connect(srv.addr()).unwrap();
    conn.write_all(b"PRI / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    conn.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
    assert_eq!(srv.stop(), 2);
}

/// A small PCG-free generator: enough to mutate bytes reproducibly.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A panic hook is process state, and this module shares its binary with
/// the other end-to-end modules: [`ServeConnPanics`] counts panics on the
/// embedded server's connection threads (`serve-conn`) only while the test
/// runs, then puts the previous hook back. While it is installed a panic on
/// any embedded server's connection thread in the binary counts: a bug
/// wherever it happens.
struct ServeConnPanics {
    previous: Arc<PanicHook>,
}

/// A panic hook, as `std::panic::take_hook` returns it.
type PanicHook = dyn Fn(&std::panic::PanicHookInfo<'_>) + Send + Sync;

impl ServeConnPanics {
    /// Installs a hook that adds 1 to `count` for each panic on a thread
    /// named `serve-conn`, then calls the previous hook.
    fn install(count: &'static AtomicUsize) -> ServeConnPanics {
        let previous: Arc<PanicHook> = Arc::from(std::panic::take_hook());
        let chained = Arc::clone(&previous);
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() == Some("serve-conn") {
                count.fetch_add(1, Ordering::SeqCst);
            }
            chained(info);
        }));
        ServeConnPanics { previous }
    }
}

impl Drop for ServeConnPanics {
    fn drop(&mut self) {
        // set_hook panics on a panicking thread: a failed test leaves the
        // counting hook (which still calls the previous one) in place.
        if !std::thread::panicking() {
            let previous = Arc::clone(&self.previous);
            std::panic::set_hook(Box::new(move |info| previous(info)));
        }
    }
}

#[test]
fn mutated_client_bytes_never_panic_the_server() {
    static PANICS: AtomicUsize = AtomicUsize::new(0);
    let _hook = ServeConnPanics::install(&PANICS);
    let srv = server(ServeConfig {
        service: ms(0),
        sse: true,
        tokens: 1,
        ttft: ms(0),
        itl: ms(0),
        ..ServeConfig::default()
    });
    // A valid client stream: SETTINGS, a chat POST with a body, a GET with
    // CONTINUATION, a PING, a WINDOW_UPDATE, a RST_STREAM.
    let mut b = [0u8; 256];
    let n = encode_request(
        b"POST",
        b"http",
        b"x",
        b"/v1/chat/completions",
        &[(b"content-length", b"2")],
        true,
        &mut b,
    )
    .unwrap();
    let mut valid = [
        PREFACE.as_slice(),
        &[0, 0, 6, kind::SETTINGS, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 16],
    ]
    .concat();
    valid.extend_from_slice(&[0, 0, n as u8, kind::HEADERS, 0x4, 0, 0, 0, 1]);
    valid.extend_from_slice(&b[..n]);
    valid.extend_from_slice(&[0, 0, 2, kind::DATA, 1, 0, 0, 0, 1, b'{', b'}']);
    let m = encode_request(
        b"GET",
        b"http",
        b"x",
        b"/health",
        &[(b"accept", b"*/*")],
        false,
        &mut b,
    )
    .unwrap();
    valid.extend_from_slice(&[0, 0, 3, kind::HEADERS, 0x1, 0, 0, 0, 3]);
    valid.extend_from_slice(&b[..3]);
    valid.extend_from_slice(&[0, 0, (m - 3) as u8, kind::CONTINUATION, 0x4, 0, 0, 0, 3]);
    valid.extend_from_slice(&b[3..m]);
    valid.extend_from_slice(&[0, 0, 8, kind::PING, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
    valid.extend_from_slice(&[0, 0, 4, kind::WINDOW_UPDATE, 0, 0, 0, 0, 1, 0, 0, 1, 0]);
    valid.extend_from_slice(&[0, 0, 4, kind::RST_STREAM, 0, 0, 0, 0, 1, 0, 0, 0, 8]);
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    for round in 0..300 {
        let mut bytes = valid.clone();
        for _ in 0..1 + rng.below(4) {
            // Past the preface, so the connection stays HTTP/2.
            let at = PREFACE.len() + rng.below(bytes.len() - PREFACE.len());
            match rng.below(3) {
                0 => bytes[at] = rng.next() as u8,
                1 => {
                    bytes.remove(at);
                }
                _ => bytes.insert(at, rng.next() as u8),
            }
        }
        let mut conn = TcpStream::connect(srv.addr()).unwrap();
        conn.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let _ = conn.write_all(&bytes);
        let _ = conn.shutdown(std::net::Shutdown::Write);
        let mut sink = Vec::new();
        let _ = conn.read_to_end(&mut sink);
        assert_eq!(PANICS.load(Ordering::SeqCst), 0, "round {round}");
    }
    // Still serving.
    let mut conn = TcpStream::connect(srv.addr()).unwrap();
    conn.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    conn.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
    srv.stop();
    assert_eq!(PANICS.load(Ordering::SeqCst), 0);
}
