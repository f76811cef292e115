//! `metronome serve --http3` end to end: driven by aioquic
//! (tests/h3_client.py), an HTTP/3 and QUIC stack nobody here wrote, which
//! trusts the server's certificate as its CA (no insecure mode); and by
//! `metronome run --http3` (std engine), whose report checks the model
//! (FIFO service time, 429 every K, the stall, SSE TTFT and ITL); and the
//! binary's `serve` summary counting the HTTP/3 requests.
//!
//! The aioquic tests skip visibly when python3 lacks aioquic, except under
//! CI (`CI=true`), where a skip is a failure (the helper of `h3.rs`).
//! Real time: exact counts where the answer is exact, generous bounds on
//! times (lower bounds from the model, upper bounds for a loaded machine).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use metronome::serve::{spawn, ServeConfig, ServerHandle, TlsServer};
use serde_json::{json, Value};

use metronome::report::Report;

use crate::common::quic_peer::aioquic;
use crate::common::{metronome, run_url_json};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Timer and clock granularity, for lower bounds (seconds).
const SLACK_S: f64 = 0.002;

/// A server with `--tls --http3` (a fresh self-signed certificate) and
/// the file holding that certificate (PEM), removed on drop.
pub(crate) struct H3Serve {
    srv: Option<ServerHandle>,
    ca: PathBuf,
}

impl H3Serve {
    pub(crate) fn start(tag: &str, config: ServeConfig) -> H3Serve {
        let tls = metronome::tls::ServerTls::self_signed().expect("a certificate");
        let ca = std::env::temp_dir().join(format!(
            "metronome-serve-h3-{}-{tag}.pem",
            std::process::id()
        ));
        std::fs::write(&ca, &tls.cert_pem).expect("write the certificate");
        let srv = spawn(ServeConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            tls: Some(TlsServer(Arc::clone(&tls.config))),
            http3: true,
            ..config
        })
        .expect("the server starts on a free port");
        H3Serve { srv: Some(srv), ca }
    }

    fn addr(&self) -> SocketAddr {
        self.srv.as_ref().unwrap().addr()
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr())
    }

    pub(crate) fn ca(&self) -> &str {
        self.ca.to_str().expect("a UTF-8 temporary path")
    }

    pub(crate) fn stop(&mut self) -> u64 {
        self.srv.take().unwrap().stop()
    }

    /// `metronome run URL --http3 --cacert CA ARGS` (std engine), exit 0.
    pub(crate) fn run(&self, path: &str, args: &[&str]) -> Report {
        self.run_on("std", path, args)
    }

    /// [`H3Serve::run`] on `engine`.
    pub(crate) fn run_on(&self, engine: &str, path: &str, args: &[&str]) -> Report {
        self.run_code(engine, path, args, 0)
    }

    /// [`H3Serve::run_on`], expecting the exit code `code`.
    pub(crate) fn run_code(&self, engine: &str, path: &str, args: &[&str], code: i32) -> Report {
        let mut all = vec!["--http3", "--cacert", self.ca()];
        all.extend_from_slice(args);
        run_url_json(&self.url(path), engine, &all, code)
    }
}

impl Drop for H3Serve {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.ca);
    }
}

/// tests/h3_client.py against `addr` trusting the PEM file `ca`, with
/// `spec`, started.
fn h3_client_start(addr: SocketAddr, ca: &str, spec: &Value) -> std::process::Child {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/h3_client.py");
    Command::new("python3")
        .arg(script)
        .arg(addr.port().to_string())
        .arg(ca)
        .arg(spec.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python3")
}

/// The JSON result of a finished tests/h3_client.py.
fn h3_client_result(child: std::process::Child) -> Value {
    let out = child.wait_with_output().expect("wait for python3");
    assert!(
        out.status.success(),
        "h3_client.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let json = text.lines().last().unwrap_or_default();
    serde_json::from_str(json).unwrap_or_else(|e| panic!("h3_client.py printed {text:?}: {e}"))
}

/// Runs tests/h3_client.py against `srv` with `spec`; its JSON result.
fn h3_client(srv: &H3Serve, spec: &Value) -> Value {
    h3_client_result(h3_client_start(srv.addr(), srv.ca(), spec))
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

/// aioquic, certificate checked against the served one: six GET / at
/// once on one connection are answered 200 "ok" in FIFO order, each at
/// least one service time after the one before; the server's SETTINGS say
/// QPACK capacity 0; the served count is 6.
#[test]
fn aioquic_concurrent_requests_in_fifo_order() {
    if !aioquic() {
        return;
    }
    let mut srv = H3Serve::start(
        "fifo",
        ServeConfig {
            service: ms(20),
            ..ServeConfig::default()
        },
    );
    let requests: Vec<Value> = (0..6).map(|_| json!({"path": "/"})).collect();
    let result = h3_client(&srv, &json!({ "requests": requests }));
    assert_eq!(result["alpn"], "h3");
    // QPACK_MAX_TABLE_CAPACITY 0, QPACK_BLOCKED_STREAMS 0, MAX_FIELD_SECTION_SIZE 16 KiB.
    assert_eq!(result["settings"], json!({"1": 0, "7": 0, "6": 16384}));
    let got = responses(&result);
    assert_eq!(got.len(), 6);
    let first_sent = got[0]["sent_at"].as_f64().unwrap();
    let mut ends: Vec<f64> = Vec::new();
    for r in got {
        assert_eq!(r["status"], 200, "{r}");
        assert_eq!(r["body"], "ok");
        assert_eq!(header(&r["headers"], "content-type"), Some("text/plain"));
        assert_eq!(header(&r["headers"], "content-length"), Some("2"));
        assert_eq!(r["reset"], Value::Null);
        ends.push(r["end_at"].as_f64().unwrap());
    }
    // One FIFO server: the k-th answer (in completion order) comes k
    // service times after the first request was sent, at the earliest.
    ends.sort_by(f64::total_cmp);
    for (k, end) in ends.iter().enumerate() {
        assert!(
            end - first_sent >= 0.020 * (k + 1) as f64 - SLACK_S,
            "answer {k} at {end} s, the first request sent at {first_sent} s"
        );
    }
    assert_eq!(srv.stop(), 6);
}

/// aioquic in SSE mode: POST /v1/chat/completions streams the role
/// chunk at once, then `max_tokens` (2) content chunks, the first after
/// the TTFT (30 ms) and the next one ITL (10 ms) later, the usage and
/// `[DONE]`; /nowhere is 404 and /health 200, neither counted; stopping
/// the server sends a GOAWAY naming the first stream not accepted, then
/// closes the connection with H3_NO_ERROR (0x100).
#[test]
fn aioquic_sse_stream_404_and_close_on_stop() {
    if !aioquic() {
        return;
    }
    let mut srv = H3Serve::start(
        "sse",
        ServeConfig {
            sse: true,
            tokens: 3,
            ttft: ms(30),
            itl: ms(10),
            ..ServeConfig::default()
        },
    );
    let chat = r#"{"model":"metronome","stream":true,"max_tokens":2,"messages":[{"role":"user","content":"one two three"}]}"#;
    let spec = json!({
        "requests": [
            {"method": "POST", "path": "/v1/chat/completions", "body": chat,
             "headers": [["content-type", "application/json"]]},
            {"path": "/nowhere"},
            {"path": "/health"},
        ],
        "linger": 15,
    });
    let mut child = h3_client_start(srv.addr(), srv.ca(), &spec);
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .expect("h3_client.py says when it is answered");
    assert_eq!(line.trim(), "answered");
    assert_eq!(srv.stop(), 1);
    let result = h3_client_result(child);
    let got = responses(&result);
    let sse = &got[0];
    assert_eq!(sse["status"], 200, "{sse}");
    assert_eq!(
        header(&sse["headers"], "content-type"),
        Some("text/event-stream")
    );
    let body = sse["body"].as_str().unwrap();
    let events: Vec<&str> = body.split_terminator("\n\n").collect();
    assert_eq!(events.len(), 5, "{body}");
    assert!(events[0].contains(r#""delta":{"role":"assistant"}"#));
    assert!(events[1].contains(r#""delta":{"content":"tok0 "}"#));
    assert!(events[2].contains(r#""delta":{"content":"tok1 "},"finish_reason":"stop""#));
    assert!(
        events[3].contains(r#""usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}"#)
    );
    assert_eq!(events[4], "data: [DONE]");
    // The first content chunk is not before the TTFT; the end not before
    // TTFT + ITL (times from when the request was sent).
    let pieces = sse["data"].as_array().unwrap();
    let content_at = pieces
        .iter()
        .scan(0u64, |seen, p| {
            *seen += p["len"].as_u64().unwrap();
            Some((*seen, p["at"].as_f64().unwrap()))
        })
        .find(|&(seen, _)| seen as usize > events[0].len() + 2)
        .map(|(_, at)| at)
        .unwrap();
    assert!(
        content_at >= 0.030 - SLACK_S,
        "first token at {content_at} s"
    );
    let end = sse["end_at"].as_f64().unwrap() - sse["sent_at"].as_f64().unwrap();
    assert!(end >= 0.040 - SLACK_S, "stream ended at {end} s");
    assert!(end < 5.0, "stream ended at {end} s");
    assert_eq!(got[1]["status"], 404);
    assert_eq!(got[1]["body"], "not found\n");
    assert_eq!(got[2]["status"], 200);
    assert_eq!(got[2]["body"], "");
    assert_eq!(result["close"]["code"], 0x100, "{}", result["close"]);
    // Before the close, a GOAWAY (RFC 9114 section 5.2): streams 0, 4 and
    // 8 were accepted, so 12 is the first not processed.
    let goaway = &result["goaway"];
    assert_eq!(goaway["id"], 12, "{result}");
    assert_eq!(goaway["before_close"], true, "{result}");
    assert!(
        goaway["at"].as_f64().unwrap() <= result["close"]["at"].as_f64().unwrap(),
        "{result}"
    );
}

/// `metronome run --http3` against `serve --http3`, on each engine: 1 000
/// requests at 500 req/s all answered 200 over h3; the served count is
/// 1 000 per engine.
#[test]
fn run_h3_every_request_ok() {
    let mut srv = H3Serve::start(
        "ok",
        ServeConfig {
            service: ms(0),
            ..ServeConfig::default()
        },
    );
    let engines = crate::common::engines();
    for engine in &engines {
        let r = srv.run_on(
            engine,
            "/",
            &[
                "--rate",
                "500",
                "--duration",
                "2s",
                "--connections",
                "2",
                "--timeout",
                "5s",
            ],
        );
        assert_eq!(r.protocol.as_deref(), Some("h3"), "{engine}");
        assert_eq!(r.requests.sent, 1000, "{engine}");
        assert_eq!(r.requests.ok, 1000, "{engine}: {:?}", r.errors);
        assert_eq!(r.requests.errors, 0, "{engine}");
        assert_eq!(
            r.connections.alpn.get("h3"),
            Some(&r.generator.connections_opened),
            "{engine}"
        );
    }
    assert_eq!(srv.stop(), 1000 * engines.len() as u64);
}

/// The FIFO model over HTTP/3: service 2 ms at 100 req/s (20% busy):
/// no answer before its service time, the median within a generous
/// bound; `--error-every 10`: exactly 10% 429s; a 300 ms stall at 500 ms
/// shows in the latency maximum.
#[test]
fn run_h3_fifo_429s_and_stall() {
    let mut srv = H3Serve::start(
        "fifo-run",
        ServeConfig {
            service: ms(2),
            error_every: Some(10),
            stall_at: Some(ms(500)),
            stall_for: ms(300),
            ..ServeConfig::default()
        },
    );
    let r = srv.run(
        "/",
        &[
            "--rate",
            "100",
            "--duration",
            "2s",
            "--connections",
            "2",
            "--timeout",
            "5s",
        ],
    );
    assert_eq!(r.requests.sent, 200);
    assert_eq!(r.requests.ok, 180, "{:?}", r.errors);
    assert_eq!(r.errors.by_status.get("429"), Some(&20), "{:?}", r.errors);
    let lat = &r.metrics.latency;
    assert!(lat.min >= 2.0, "latency {lat:?}");
    assert!(lat.p50 >= 2.0 && lat.p50 < 100.0, "latency {lat:?}");
    assert!(lat.max >= 300.0, "the stall is not in the latency: {lat:?}");
    assert_eq!(srv.stop(), 200);
}

/// `--cut-every 4` over HTTP/3: every 4th stream is reset
/// (H3_INTERNAL_ERROR) after half its tokens: `stream_cut` for the client,
/// not counted as served.
#[test]
fn run_h3_cut_streams_are_stream_cut() {
    let mut srv = H3Serve::start(
        "cut",
        ServeConfig {
            sse: true,
            tokens: 4,
            ttft: ms(10),
            itl: ms(5),
            cut_every: Some(4),
            ..ServeConfig::default()
        },
    );
    let r = srv.run(
        "/v1/chat/completions",
        &[
            "--openai",
            "--model",
            "metronome",
            "--max-tokens",
            "4",
            "--rate",
            "20",
            "--duration",
            "1s",
            "--connections",
            "1",
        ],
    );
    assert_eq!(r.requests.sent, 20);
    assert_eq!(r.requests.ok, 15, "{:?}", r.errors);
    assert_eq!(
        r.errors.by_kind.get("stream_cut"),
        Some(&5),
        "{:?}",
        r.errors
    );
    assert_eq!(srv.stop(), 15);
}

/// `--openai` over `serve --http3 --sse`: TTFT and ITL measured from the
/// server's timing (ttft 40 ms, itl 10 ms, 4 tokens: 3 gaps per stream).
#[test]
fn run_h3_sse_ttft_and_itl() {
    let mut srv = H3Serve::start(
        "sse-run",
        ServeConfig {
            sse: true,
            tokens: 4,
            ttft: ms(40),
            itl: ms(10),
            ..ServeConfig::default()
        },
    );
    let r = srv.run(
        "/v1/chat/completions",
        &[
            "--openai",
            "--model",
            "metronome",
            "--max-tokens",
            "4",
            "--rate",
            "20",
            "--duration",
            "1s",
            "--connections",
            "1",
        ],
    );
    assert_eq!(r.requests.ok, 20, "{:?}", r.errors);
    let m = &r.metrics;
    assert_eq!(m.ttft.count, 20);
    assert!(
        m.ttft.min >= 40.0 && m.ttft.p50 < 40.0 + 200.0,
        "ttft {:?}",
        m.ttft
    );
    assert_eq!(m.itl.count, 20 * 3, "3 gaps per 4-token stream");
    assert!(
        m.itl.p50 >= 10.0 - 5.0 && m.itl.p50 < 10.0 + 90.0,
        "itl {:?}",
        m.itl
    );
    assert_eq!(srv.stop(), 20);
}

/// The binary: `serve --tls --http3 --cert-out FILE` serves HTTP/3 on its
/// port; `run --http3 --cacert FILE` is answered; on SIGINT the summary
/// counts the HTTP/3 requests. `--http3` without `--tls` is refused.
#[test]
fn serve_binary_counts_h3_requests() {
    let ca =
        std::env::temp_dir().join(format!("metronome-serve-h3-{}-bin.pem", std::process::id()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_metronome"))
        .args([
            "serve",
            "--tls",
            "--http3",
            "--listen",
            "127.0.0.1:0",
            "--service",
            "0ms",
            "--cert-out",
        ])
        .arg(&ca)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let listening = lines.next().unwrap().unwrap();
    let url = listening
        .strip_prefix("metronome serve listening on ")
        .unwrap_or_else(|| panic!("{listening}"))
        .to_string();
    let out = metronome(&[
        "run",
        &format!("{url}/"),
        "--http3",
        "--cacert",
        ca.to_str().unwrap(),
        "--rate",
        "50",
        "--duration",
        "1s",
        "--format",
        "json",
        "--quiet",
    ]);
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let _ = child.wait();
    let _ = std::fs::remove_file(&ca);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Report = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report.requests.ok, 50);
    assert_eq!(
        rest.last().map(String::as_str),
        Some("served 50 requests"),
        "{rest:?}"
    );

    let refused = metronome(&["serve", "--http3", "--listen", "127.0.0.1:0"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--tls"));
}

/// Malformed requests are stream errors, answered `400` (RFC 9114 section
/// 4.1.2 lets a server answer before closing): no `:scheme`, a
/// connection-specific field, a body shorter than its `content-length`;
/// a reserved unidirectional stream is ignored; the connection goes on (a
/// good request after them is answered) and only that one is counted.
/// Frames and streams that break a connection rule close the connection
/// with their code: DATA before HEADERS (H3_FRAME_UNEXPECTED), a second
/// control stream or a push stream from the client
/// (H3_STREAM_CREATION_ERROR), a QPACK dynamic reference
/// (QPACK_DECOMPRESSION_FAILED), a frame cut by the stream's end
/// (H3_FRAME_ERROR).
#[test]
fn aioquic_malformed_requests_and_connection_errors() {
    if !aioquic() {
        return;
    }
    let mut srv = H3Serve::start(
        "malformed",
        ServeConfig {
            service: ms(0),
            ..ServeConfig::default()
        },
    );
    let closing =
        |request: Value, uni: &[&str]| json!({"requests": [request], "uni": uni, "timeout": 5});
    let spec = json!({"connections": [
        {"requests": [
            {"fields": [[":method", "GET"], [":path", "/"], [":authority", "x"]]},
            {"path": "/", "headers": [["connection", "close"]]},
            {"method": "POST", "path": "/", "headers": [["content-length", "10"]], "body": "abc"},
            {"path": "/"},
        ], "uni": ["21ffff"]},
        closing(json!({"raw": "000178"}), &[]),
        closing(json!({"path": "/"}), &["00"]),
        closing(json!({"path": "/"}), &["01"]),
        closing(json!({"raw": "01020100"}), &[]),
        closing(json!({"raw": "01050000"}), &[]),
    ]});
    let out = h3_client(&srv, &spec);
    let runs = out.as_array().expect("one result per connection");
    let first = responses(&runs[0]);
    for r in &first[..3] {
        assert_eq!(r["status"], 400, "{r}");
        assert_eq!(r["body"], "400 Bad Request");
    }
    assert_eq!(first[3]["status"], 200);
    assert_eq!(runs[0]["close"], Value::Null);
    let codes: Vec<&Value> = runs[1..].iter().map(|r| &r["close"]["code"]).collect();
    assert_eq!(codes, [0x105, 0x103, 0x103, 0x200, 0x106], "{runs:?}");
    assert_eq!(
        runs[1]["close"]["reason"],
        "HTTP/3 frame of type 0x0 not allowed here"
    );
    assert_eq!(srv.stop(), 1);
}

/// Sixty mutations of a valid request stream (HEADERS with a QPACK
/// section, DATA), each on its own connection: whatever the bytes, the
/// server answers, resets or closes with a code, never hangs or dies; a
/// good request afterwards is answered.
#[test]
fn aioquic_mutated_request_streams_never_break_the_server() {
    if !aioquic() {
        return;
    }
    let mut srv = H3Serve::start(
        "mutants",
        ServeConfig {
            service: ms(0),
            ..ServeConfig::default()
        },
    );
    let mut block = [0u8; 128];
    let n = metronome_core::h3::qpack::encode_request(
        b"POST",
        b"https",
        b"localhost",
        b"/",
        &[(b"content-length", b"5")],
        true,
        &mut block,
    )
    .unwrap();
    let mut valid = vec![0x01, n as u8];
    valid.extend_from_slice(&block[..n]);
    valid.extend_from_slice(&[0x00, 0x05]);
    valid.extend_from_slice(b"hello");
    // xorshift64: deterministic mutants.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut connections: Vec<Value> = (0..60)
        .map(|_| {
            let mut bytes = valid.clone();
            for _ in 0..1 + next() % 3 {
                let at = (next() % bytes.len() as u64) as usize;
                match next() % 3 {
                    0 => bytes[at] ^= 1 << (next() % 8),
                    1 => bytes[at] = next() as u8,
                    _ => bytes.truncate(at.max(1)),
                }
            }
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            json!({"requests": [{"raw": hex}], "timeout": 5})
        })
        .collect();
    connections.push(json!({"requests": [{"path": "/"}]}));
    let out = h3_client(&srv, &json!({ "connections": connections }));
    let runs = out.as_array().unwrap();
    assert_eq!(runs.len(), 61);
    for run in &runs[..60] {
        let r = &responses(run)[0];
        let ended = r["end_at"] != Value::Null || run["close"] != Value::Null;
        assert!(ended, "a mutant neither answered nor closed: {run}");
    }
    assert_eq!(responses(&runs[60])[0]["status"], 200);
    let served = srv.stop();
    assert!((1..=61).contains(&served), "{served}");
}

/// `--max-streams` is QUIC's stream limit. A 300 ms stall piles about 30
/// requests up: with the default 100 the client opens more than 2 streams
/// on its connection; with `--max-streams 2` never more than 2 on one
/// (the rest wait or go to other connections), and every request is
/// still answered.
#[test]
fn run_h3_max_streams_is_quics_limit() {
    for max_streams in [100, 2] {
        let mut srv = H3Serve::start(
            "streams",
            ServeConfig {
                service: ms(1),
                stall_at: Some(ms(200)),
                stall_for: ms(300),
                max_streams,
                ..ServeConfig::default()
            },
        );
        let r = srv.run(
            "/",
            &[
                "--rate",
                "100",
                "--duration",
                "1s",
                "--connections",
                "1",
                "--timeout",
                "5s",
            ],
        );
        assert_eq!(r.requests.ok, 100, "{:?}", r.errors);
        let peak = r.connections.h2.expect("stream counts").peak_streams;
        if max_streams == 2 {
            assert!((1..=2).contains(&peak), "{peak} streams open at once");
        } else {
            assert!(peak > 2, "{peak} streams open at once during the stall");
        }
        assert_eq!(srv.stop(), 100);
    }
}
