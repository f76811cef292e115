//! End-to-end tests of `metronome serve`: the server runs in-process on
//! 127.0.0.1:0 and plain `TcpStream` clients talk to it. Timing assertions
//! are lower bounds taken from the FIFO model (they hold on a loaded
//! machine), plus generous upper bounds only where a hang must fail.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use metronome::serve::{spawn, ServeConfig, ServerHandle};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Tolerance for timer and clock granularity in lower bounds.
const SLACK: Duration = Duration::from_millis(2);

fn server(config: ServeConfig) -> ServerHandle {
    spawn(ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..config
    })
    .expect("the server starts on a free port")
}

const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: test\r\n\r\n";

fn chat(body: &str) -> Vec<u8> {
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

const CHAT_BODY: &str = r#"{"model":"metronome","stream":true,"messages":[{"role":"user","content":"say three words"}]}"#;

#[derive(Debug)]
struct Head {
    status: u16,
    headers: Vec<(String, String)>,
}

impl Head {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug)]
struct Response {
    head: Head,
    body: Vec<u8>,
    /// When the last byte arrived.
    at: Instant,
}

/// A minimal HTTP/1.1 client over one connection.
struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.set_nodelay(true).unwrap();
        Self {
            stream,
            buf: Vec::new(),
        }
    }

    fn send(&mut self, bytes: &[u8]) -> Instant {
        let at = Instant::now();
        self.stream.write_all(bytes).expect("send");
        at
    }

    /// Reads more bytes; false at EOF (or a reset).
    fn fill(&mut self) -> bool {
        let mut scratch = [0u8; 8192];
        match self.stream.read(&mut scratch) {
            Ok(0) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&scratch[..n]);
                true
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => false,
            Err(e) => panic!("read failed (a hang hits the 10 s timeout): {e}"),
        }
    }

    fn head(&mut self) -> Head {
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut response = httparse::Response::new(&mut headers);
            if let httparse::Status::Complete(n) = response.parse(&self.buf).expect("valid head") {
                let head = Head {
                    status: response.code.unwrap(),
                    headers: response
                        .headers
                        .iter()
                        .map(|h| {
                            (
                                h.name.to_string(),
                                String::from_utf8_lossy(h.value).into_owned(),
                            )
                        })
                        .collect(),
                };
                self.buf.drain(..n);
                return head;
            }
            assert!(self.fill(), "connection closed before a response head");
        }
    }

    /// One response with a Content-Length body.
    fn response(&mut self) -> Response {
        let head = self.head();
        let len: usize = head
            .header("content-length")
            .expect("content-length")
            .parse()
            .unwrap();
        while self.buf.len() < len {
            assert!(self.fill(), "connection closed inside a body");
        }
        let body = self.buf.drain(..len).collect();
        Response {
            head,
            body,
            at: Instant::now(),
        }
    }

    /// The next chunk of a chunked body with its arrival time; an empty
    /// chunk is the terminator; `None` when the connection ends first.
    fn chunk(&mut self) -> Option<(Vec<u8>, Instant)> {
        loop {
            if let Some(line_end) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let size_text = std::str::from_utf8(&self.buf[..line_end]).unwrap();
                let size = usize::from_str_radix(size_text.trim(), 16).expect("chunk size");
                let total = line_end + 2 + size + 2;
                if self.buf.len() >= total {
                    let data = self.buf[line_end + 2..line_end + 2 + size].to_vec();
                    assert_eq!(&self.buf[total - 2..total], b"\r\n");
                    self.buf.drain(..total);
                    return Some((data, Instant::now()));
                }
            }
            if !self.fill() {
                return None;
            }
        }
    }

    /// True when the server closed the connection with nothing left unread.
    fn closed(&mut self) -> bool {
        self.buf.is_empty() && !self.fill()
    }
}

/// A whole SSE stream: the head, the events with their arrival times, and
/// whether the body ended with the terminating chunk.
struct Sse {
    head: Head,
    events: Vec<(String, Instant)>,
    terminated: bool,
}

fn read_sse(client: &mut Client) -> Sse {
    let head = client.head();
    let mut events = Vec::new();
    let terminated = loop {
        match client.chunk() {
            Some((data, _)) if data.is_empty() => break true,
            Some((data, at)) => events.push((String::from_utf8(data).unwrap(), at)),
            None => break false,
        }
    };
    Sse {
        head,
        events,
        terminated,
    }
}

fn json_of(event: &str) -> serde_json::Value {
    let data = event
        .strip_prefix("data: ")
        .and_then(|e| e.strip_suffix("\n\n"))
        .unwrap_or_else(|| panic!("not one data event: {event:?}"));
    serde_json::from_str(data).unwrap_or_else(|e| panic!("bad JSON in {event:?}: {e}"))
}

fn content_of(event: &str) -> Option<String> {
    if event == "data: [DONE]\n\n" || event.starts_with("event: ") {
        return None;
    }
    json_of(event)["choices"][0]["delta"]["content"]
        .as_str()
        .map(str::to_string)
}

#[test]
fn keep_alive_serves_several_requests_on_one_connection() {
    let server = server(ServeConfig::default());
    let mut client = Client::connect(server.addr());
    for _ in 0..5 {
        client.send(GET);
        let response = client.response();
        assert_eq!(response.head.status, 200);
        assert_eq!(response.head.header("content-type"), Some("text/plain"));
        assert_eq!(response.head.header("connection"), None);
        assert_eq!(response.body, b"ok");
    }
    drop(client);
    assert_eq!(server.stop(), 5);
}

#[test]
fn pipelined_requests_are_answered_in_order_at_their_fifo_times() {
    let server = server(ServeConfig {
        service: ms(20),
        body_bytes: 5,
        ..ServeConfig::default()
    });
    let mut client = Client::connect(server.addr());
    let mut three = Vec::new();
    for path in ["/a", "/b", "/c"] {
        three.extend_from_slice(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
    }
    let sent = client.send(&three);
    let times: Vec<_> = (0..3)
        .map(|_| {
            let r = client.response();
            assert_eq!((r.head.status, r.body.as_slice()), (200, &b"okoko"[..]));
            r.at - sent
        })
        .collect();
    for (k, elapsed) in times.iter().enumerate() {
        assert!(
            *elapsed + SLACK >= ms(20) * (k as u32 + 1),
            "response {k} after {elapsed:?}"
        );
    }
    assert_eq!(server.stop(), 3);
}

#[test]
fn fifo_serialises_concurrent_connections() {
    let server = server(ServeConfig {
        service: ms(20),
        ..ServeConfig::default()
    });
    let clients: Vec<_> = (0..5).map(|_| Client::connect(server.addr())).collect();
    let start = Instant::now();
    // Sends 10 ms apart: the server is still busy with earlier ones, so the
    // completions are 20, 40, 60, 80, 100 ms after the first arrival. Each
    // client reads in its own thread, so a response is stamped on arrival.
    let readers: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(k, mut client)| {
            thread::spawn(move || {
                thread::sleep(
                    (start + ms(10) * k as u32).saturating_duration_since(Instant::now()),
                );
                client.send(GET);
                client.response()
            })
        })
        .collect();
    let done: Vec<Duration> = readers
        .into_iter()
        .map(|r| {
            let response = r.join().unwrap();
            assert_eq!(response.head.status, 200);
            response.at - start
        })
        .collect();
    // No response before its FIFO slot: the k-th completion is at least
    // k * 20 ms after the first arrival, itself after `start`.
    let mut sorted = done.clone();
    sorted.sort();
    for (k, at) in sorted.iter().enumerate() {
        assert!(
            *at + SLACK >= ms(20) * (k as u32 + 1),
            "the {}th response came after {at:?}: {done:?}",
            k + 1
        );
    }
    // (Which client gets which slot is not asserted: on a loaded machine a
    // client thread can send late, and the server's order is arrival order.
    // The pipelined test checks order on one connection.)
    assert_eq!(server.stop(), 5);
}

#[test]
fn stall_holds_the_first_request_and_everything_behind_it() {
    let server = server(ServeConfig {
        service: ms(1),
        stall_at: Some(Duration::ZERO),
        stall_for: ms(200),
        ..ServeConfig::default()
    });
    let mut first = Client::connect(server.addr());
    let mut second = Client::connect(server.addr());
    let sent_first = first.send(GET);
    thread::sleep(ms(5));
    let sent_second = second.send(GET);
    let waiter = thread::spawn(move || second.response());
    let r1 = first.response();
    let r2 = waiter.join().unwrap();
    assert_eq!((r1.head.status, r2.head.status), (200, 200));
    assert!(r1.at - sent_first >= ms(200), "{:?}", r1.at - sent_first);
    // The second arrived during the stall: it completes at 202 ms after the
    // first arrival, so it waited the rest of the stall.
    assert!(
        r2.at - sent_first + SLACK >= ms(202),
        "{:?}",
        r2.at - sent_first
    );
    if sent_second - sent_first < ms(20) {
        assert!(r2.at - sent_second >= ms(180), "{:?}", r2.at - sent_second);
    }
    // The stall is spent: the next request is not held another 200 ms
    // (generous bound: only a second stall could take this long).
    let mut third = Client::connect(server.addr());
    let sent_third = third.send(GET);
    assert!(third.response().at - sent_third < ms(190));
    assert_eq!(server.stop(), 3);
}

#[test]
fn error_every_answers_429_to_every_kth_request() {
    let server = server(ServeConfig {
        error_every: Some(3),
        ..ServeConfig::default()
    });
    let mut client = Client::connect(server.addr());
    let statuses: Vec<u16> = (0..6)
        .map(|_| {
            client.send(GET);
            client.response().head.status
        })
        .collect();
    assert_eq!(statuses, [200, 200, 429, 200, 200, 429]);
    assert_eq!(server.stop(), 6);
}

#[test]
fn service_zero_answers_at_once() {
    let server = server(ServeConfig {
        service: Duration::ZERO,
        ..ServeConfig::default()
    });
    let mut client = Client::connect(server.addr());
    for _ in 0..20 {
        client.send(GET);
        assert_eq!(client.response().body, b"ok");
    }
    assert_eq!(server.stop(), 20);
}

#[test]
fn malformed_request_gets_400_and_close() {
    let server = server(ServeConfig::default());
    let mut client = Client::connect(server.addr());
    client.send(b"THIS IS NOT HTTP\r\n\r\n");
    let response = client.response();
    assert_eq!(response.head.status, 400);
    assert_eq!(response.head.header("connection"), Some("close"));
    assert!(client.closed());
    assert_eq!(server.stop(), 0);
}

#[test]
fn connection_close_and_http10_close_after_the_response() {
    let server = server(ServeConfig::default());
    let mut client = Client::connect(server.addr());
    client.send(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let response = client.response();
    assert_eq!(response.head.status, 200);
    assert_eq!(response.head.header("connection"), Some("close"));
    assert!(client.closed());

    let mut old = Client::connect(server.addr());
    old.send(b"GET / HTTP/1.0\r\n\r\n");
    assert_eq!(old.response().body, b"ok");
    assert!(old.closed());

    // HTTP/1.0 keep-alive is honoured when asked for.
    let mut kept = Client::connect(server.addr());
    for _ in 0..2 {
        kept.send(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        let r = kept.response();
        assert_eq!(r.head.header("connection"), Some("keep-alive"));
    }
    assert_eq!(server.stop(), 4);
}

#[test]
fn request_bodies_are_read_by_content_length() {
    let server = server(ServeConfig::default());
    let mut client = Client::connect(server.addr());
    // The body arrives in two pieces; a second request follows it.
    client.send(b"POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nhello");
    thread::sleep(ms(20));
    client.send(b"world");
    assert_eq!(client.response().head.status, 200);
    client.send(GET);
    assert_eq!(client.response().head.status, 200);
    assert_eq!(server.stop(), 2);
}

#[test]
fn stop_is_prompt_and_returns_the_count() {
    let server = server(ServeConfig {
        stall_at: Some(ms(0)),
        stall_for: ms(60_000),
        error_every: None,
        ..ServeConfig::default()
    });
    // One connection idle in a read, one waiting on a 60 s stall.
    let _idle = Client::connect(server.addr());
    let mut stalled = Client::connect(server.addr());
    stalled.send(GET);
    thread::sleep(ms(50));
    assert_eq!(server.served(), 0);
    let began = Instant::now();
    assert_eq!(server.stop(), 0);
    assert!(
        began.elapsed() < ms(2000),
        "stop took {:?}",
        began.elapsed()
    );
    assert!(stalled.closed(), "the stalled connection is closed");
}

#[test]
fn stop_counts_served_responses() {
    let server = server(ServeConfig::default());
    let mut client = Client::connect(server.addr());
    for _ in 0..3 {
        client.send(GET);
        client.response();
    }
    let began = Instant::now();
    assert_eq!(server.stop(), 3);
    assert!(began.elapsed() < ms(2000));
    assert!(client.closed());
}

fn sse(config: ServeConfig) -> ServerHandle {
    server(ServeConfig {
        sse: true,
        ..config
    })
}

#[test]
fn sse_stream_has_the_exact_event_sequence_and_timing() {
    let (tokens, ttft, itl) = (5u32, ms(50), ms(20));
    let server = sse(ServeConfig {
        tokens,
        ttft,
        itl,
        ..ServeConfig::default()
    });
    let mut client = Client::connect(server.addr());
    let sent = client.send(&chat(CHAT_BODY));
    let stream = read_sse(&mut client);
    assert_eq!(stream.head.status, 200);
    assert_eq!(
        stream.head.header("content-type"),
        Some("text/event-stream")
    );
    assert_eq!(stream.head.header("transfer-encoding"), Some("chunked"));
    assert!(stream.terminated, "the body ends with the 0 chunk");

    let events = &stream.events;
    assert_eq!(events.len(), 1 + tokens as usize + 2, "{events:#?}");
    let role = json_of(&events[0].0);
    assert_eq!(role["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(role["id"], "chatcmpl-metronome");
    assert_eq!(role["object"], "chat.completion.chunk");
    assert_eq!(content_of(&events[0].0), None);
    for i in 0..tokens as usize {
        let (event, at) = &events[1 + i];
        assert_eq!(
            content_of(event).as_deref(),
            Some(format!("tok{i} ").as_str())
        );
        let finish = &json_of(event)["choices"][0]["finish_reason"];
        if i + 1 == tokens as usize {
            assert_eq!(finish, "stop");
        } else {
            assert!(finish.is_null());
        }
        // Token i is due at t0 + ttft + i * itl, and t0 >= the send.
        let due = ttft + itl * i as u32;
        assert!(
            *at - sent + SLACK >= due,
            "token {i} after {:?}",
            *at - sent
        );
    }
    let usage = json_of(&events[1 + tokens as usize].0);
    assert_eq!(usage["choices"].as_array().map(Vec::len), Some(0));
    assert_eq!(usage["usage"]["completion_tokens"], u64::from(tokens));
    assert_eq!(usage["usage"]["prompt_tokens"], 3);
    assert_eq!(usage["usage"]["total_tokens"], u64::from(tokens) + 3);
    assert_eq!(events.last().unwrap().0, "data: [DONE]\n\n");
    // Tokens are paced, not bursted: the last one comes at least
    // (tokens - 1) * itl after the first could have.
    let last = events[tokens as usize].1;
    assert!(last - sent + SLACK >= ttft + itl * (tokens - 1));

    // Keep-alive after a stream: a second one on the same connection.
    client.send(&chat(r#"{"max_tokens":2,"messages":[]}"#));
    let capped = read_sse(&mut client);
    assert!(capped.terminated);
    let contents: Vec<_> = capped
        .events
        .iter()
        .filter_map(|(e, _)| content_of(e))
        .collect();
    assert_eq!(contents, ["tok0 ", "tok1 "], "max_tokens caps --tokens");
    assert_eq!(server.stop(), 2);
}

#[test]
fn sse_cut_every_closes_mid_stream_without_done() {
    let server = sse(ServeConfig {
        tokens: 4,
        ttft: ms(5),
        itl: ms(5),
        cut_every: Some(2),
        ..ServeConfig::default()
    });
    let mut first = Client::connect(server.addr());
    first.send(&chat(CHAT_BODY));
    let whole = read_sse(&mut first);
    assert!(whole.terminated);
    assert_eq!(whole.events.last().unwrap().0, "data: [DONE]\n\n");

    let mut second = Client::connect(server.addr());
    second.send(&chat(CHAT_BODY));
    let cut = read_sse(&mut second);
    assert_eq!(cut.head.status, 200);
    assert!(!cut.terminated, "a cut stream has no terminating chunk");
    let contents: Vec<_> = cut
        .events
        .iter()
        .filter_map(|(e, _)| content_of(e))
        .collect();
    assert_eq!(
        contents,
        ["tok0 ", "tok1 "],
        "half the tokens, then the cut"
    );
    assert!(cut.events.iter().all(|(e, _)| !e.contains("[DONE]")));
    assert_eq!(server.stop(), 1, "a cut stream is not served");
}

#[test]
fn sse_error_event_every_ends_the_body_properly_without_done() {
    let server = sse(ServeConfig {
        tokens: 3,
        ttft: ms(5),
        itl: ms(1),
        error_event_every: Some(2),
        ..ServeConfig::default()
    });
    let mut client = Client::connect(server.addr());
    let mut terminated_with = Vec::new();
    for _ in 0..3 {
        client.send(&chat(CHAT_BODY));
        let stream = read_sse(&mut client);
        assert!(stream.terminated, "the body always ends with the 0 chunk");
        terminated_with.push(stream.events.last().unwrap().0.clone());
        if stream
            .events
            .iter()
            .any(|(e, _)| e.starts_with("event: error"))
        {
            assert_eq!(stream.events.len(), 2, "role chunk, then the error event");
            assert_eq!(
                stream.events[1].0,
                "event: error\ndata: {\"error\":{\"message\":\"injected error\",\"type\":\"server_error\"}}\n\n"
            );
        }
    }
    assert_eq!(terminated_with[0], "data: [DONE]\n\n");
    assert!(terminated_with[1].starts_with("event: error\n"));
    assert_eq!(terminated_with[2], "data: [DONE]\n\n");
    assert_eq!(server.stop(), 3);
}

#[test]
fn sse_stall_delays_the_first_token_of_streams_inside_it() {
    let server = sse(ServeConfig {
        tokens: 1,
        ttft: ms(10),
        itl: ms(1),
        stall_at: Some(Duration::ZERO),
        stall_for: ms(150),
        ..ServeConfig::default()
    });
    let mut first = Client::connect(server.addr());
    let mut second = Client::connect(server.addr());
    let sent = first.send(&chat(CHAT_BODY));
    thread::sleep(ms(5));
    second.send(&chat(CHAT_BODY));
    let waiter = thread::spawn(move || read_sse(&mut second));
    for stream in [read_sse(&mut first), waiter.join().unwrap()] {
        assert!(stream.terminated);
        let first_token = stream.events[1].1;
        assert!(
            first_token - sent + SLACK >= ms(160),
            "{:?}",
            first_token - sent
        );
    }
    assert_eq!(server.stop(), 2);
}

#[test]
fn sse_other_paths_are_404_models_lists_metronome_and_health_is_200() {
    let server = sse(ServeConfig::default());
    let mut client = Client::connect(server.addr());
    client.send(GET);
    assert_eq!(client.response().head.status, 404);
    client.send(b"GET /v1/models HTTP/1.1\r\nHost: t\r\n\r\n");
    let models = client.response();
    assert_eq!(models.head.status, 200);
    let list: serde_json::Value = serde_json::from_slice(&models.body).unwrap();
    assert_eq!(list["data"][0]["id"], "metronome");
    // vLLM's health check (guidellm asks it before a run): 200, no body.
    client.send(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
    let health = client.response();
    assert_eq!(health.head.status, 200);
    assert!(health.body.is_empty());
    client.send(b"POST /health HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(client.response().head.status, 405);
    assert_eq!(server.stop(), 0);
}

#[test]
fn sse_models_list_is_openai_shaped_and_completions_stream() {
    let server = sse(ServeConfig {
        model: "org/Model-7B".into(),
        tokens: 2,
        ttft: ms(1),
        itl: ms(1),
        ..ServeConfig::default()
    });
    let mut client = Client::connect(server.addr());
    client.send(b"GET /v1/models HTTP/1.1\r\nHost: t\r\n\r\n");
    let models = client.response();
    assert_eq!(models.head.status, 200);
    assert_eq!(models.head.header("content-type"), Some("application/json"));
    let list: serde_json::Value = serde_json::from_slice(&models.body).unwrap();
    assert_eq!(
        list,
        serde_json::json!({"object": "list", "data": [{
            "id": "org/Model-7B", "object": "model", "created": 1_704_067_200,
            "owned_by": "metronome"}]})
    );
    let body = r#"{"model":"org/Model-7B","prompt":"a b c","stream":true,"max_tokens":1}"#;
    client.send(
        format!(
            "POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
    let stream = read_sse(&mut client);
    assert!(stream.terminated);
    let events: Vec<&str> = stream.events.iter().map(|(e, _)| e.as_str()).collect();
    assert!(
        events.last().unwrap().starts_with("data: [DONE]"),
        "{events:?}"
    );
    // The usage chunk reports the cap of 1 token and 3 prompt words.
    assert!(
        events
            .iter()
            .any(|e| e.contains(r#""completion_tokens":1"#) && e.contains(r#""prompt_tokens":3"#)),
        "{events:?}"
    );
    client.send(b"GET /v1/completions HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(client.response().head.status, 405);
    assert_eq!(server.stop(), 1);
}

#[test]
fn sse_error_every_answers_429_before_streaming() {
    let server = sse(ServeConfig {
        tokens: 1,
        ttft: ms(1),
        error_every: Some(2),
        ..ServeConfig::default()
    });
    let mut client = Client::connect(server.addr());
    client.send(&chat(CHAT_BODY));
    assert!(read_sse(&mut client).terminated);
    client.send(&chat(CHAT_BODY));
    let limited = client.response();
    assert_eq!(limited.head.status, 429);
    assert_eq!(
        limited.head.header("content-type"),
        Some("application/json")
    );
    assert_eq!(server.stop(), 2);
}
