//! `--openai` requests end to end: a bare URL against `metronome serve
//! --sse` (model discovered, path completed), the bytes actually sent, the
//! workload report, and the one-line errors of bad input. Every server is
//! started here, on 127.0.0.1.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use common::{engines, metronome, plain, run_json, server};
use metronome::serve::ServeConfig;
use serde_json::{json, Value};

/// `metronome serve ARGS --listen 127.0.0.1:0` as a child process; killed
/// on drop.
struct ServeProcess {
    child: Child,
    addr: SocketAddr,
}

impl ServeProcess {
    fn start(args: &[&str]) -> ServeProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_metronome"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start metronome serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("metronome serve listening on http://")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .parse()
            .unwrap();
        ServeProcess { child, addr }
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The line of the text report that counts requests, as numbers (printed
/// with thousands separated: `1,000`).
fn request_counts(stdout: &str) -> Vec<(String, u64)> {
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("requests:"))
        .unwrap_or_else(|| panic!("no requests line in {stdout}"));
    let words: Vec<&str> = line.split_whitespace().skip(1).collect();
    words
        .chunks(2)
        .map(|kv| (kv[0].to_string(), kv[1].replace(',', "").parse().unwrap()))
        .collect()
}

/// What a new user types: `metronome run http://127.0.0.1:PORT --openai`
/// and nothing else (but the engine), against `metronome serve --sse` with
/// its defaults. The model is discovered, the path completed, and every
/// request of the default run (100 req/s for 10 s) succeeds. Both engines
/// run at once to keep the test at about ten seconds.
#[test]
fn a_bare_url_gives_a_valid_run_on_both_engines() {
    let srv = ServeProcess::start(&["--sse"]);
    let url = format!("http://{}", srv.addr);
    let runs: Vec<_> = engines()
        .into_iter()
        .map(|engine| {
            let url = url.clone();
            thread::spawn(move || {
                (
                    engine,
                    metronome(&["run", &url, "--openai", "--engine", engine]),
                )
            })
        })
        .collect();
    for run in runs {
        let (engine, out) = run.join().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{engine}: {stderr}\n{stdout}");
        assert!(
            stderr.contains("metronome: model: metronome (from /v1/models)\n"),
            "{engine}: {stderr}"
        );
        assert!(
            stderr.contains(&format!(
                "metronome: posting to {url}/v1/chat/completions (the URL's path / completed)\n"
            )),
            "{engine}: {stderr}"
        );
        let counts = request_counts(&stdout);
        let get = |k: &str| counts.iter().find(|(n, _)| n == k).unwrap().1;
        assert_eq!(get("scheduled"), 1000, "{engine}: {stdout}");
        assert_eq!(get("ok"), 1000, "{engine}: {stdout}");
        assert_eq!(get("errors"), 0, "{engine}: {stdout}");
        assert!(
            stdout.contains(
                "  workload: metronome on /v1/chat/completions (model from /v1/models), \
                 built-in prompt, 1 distinct request\n"
            ),
            "{engine}: {stdout}"
        );
        // The built-in prompt has 6 words; serve sends 16 tokens per stream.
        assert!(
            stdout.contains(
                "  input tokens per request: mean 6.000  p50 6  p90 6  p99 6  max 6  \
                 (1,000 requests, 6,000 tokens)\n"
            ),
            "{engine}: {stdout}"
        );
        assert!(
            stdout.contains(
                "  output tokens per request: mean 16.00  p50 16  p90 16  p99 16  max 16  \
                 (1,000 requests, 16,000 tokens)\n"
            ),
            "{engine}: {stdout}"
        );
    }
}

/// The model named with `serve --model` is discovered; synthetic prompts
/// of a pinned length and `--output-len` show in the workload report, on
/// both endpoints and both engines.
#[test]
fn workload_report_synthetic_prompts_and_served_model() {
    let srv = ServeProcess::start(&[
        "--sse",
        "--model",
        "org/Served-1B",
        "--tokens",
        "8",
        "--ttft",
        "5ms",
        "--itl",
        "1ms",
    ]);
    for engine in engines() {
        for (path, endpoint, want_path) in [
            ("/v1", "chat", "/v1/chat/completions"),
            ("/v1/", "completions", "/v1/completions"),
            ("/v1/completions", "", "/v1/completions"),
        ] {
            let mut args = vec![
                "--openai",
                "--input-len",
                "12",
                "--output-len",
                "3",
                "--ignore-eos",
                "--rate",
                "20",
                "--duration",
                "1s",
            ];
            if !endpoint.is_empty() {
                args.extend(["--endpoint", endpoint]);
            }
            let r = run_json(srv.addr, path, engine, &args, 0);
            let ctx = format!("{engine} {path} {endpoint}");
            assert_eq!(r.requests.ok, 20, "{ctx}: {:?}", r.errors);
            let w = r.workload.as_ref().expect("an --openai run has a workload");
            assert_eq!(w.model, "org/Served-1B", "{ctx}");
            assert_eq!(w.model_source, "/v1/models", "{ctx}");
            assert_eq!(w.endpoint, want_path, "{ctx}");
            assert_eq!(w.prompts, "synthetic, 12 words each", "{ctx}");
            // 20 req/s for 1 s: one distinct prompt per request.
            assert_eq!(w.distinct_requests, 20, "{ctx}");
            let i = &w.input_tokens;
            assert_eq!((i.count, i.total, i.min, i.max), (20, 240, 12, 12), "{ctx}");
            // serve caps its 8 tokens at the request's max-tokens field.
            let o = &w.output_tokens;
            assert_eq!((o.count, o.total, o.min, o.max), (20, 60, 3, 3), "{ctx}");
        }
    }
}

/// One request as a raw server saw it.
#[derive(Clone, Debug)]
struct Seen {
    head: String,
    body: Vec<u8>,
}

/// A raw HTTP/1.1 server that records every request: `GET /v1/models`
/// lists `raw-model`, anything else gets a two-token SSE stream.
fn recording_server() -> (SocketAddr, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    thread::spawn(move || {
        for conn in listener.incoming().take(64) {
            let Ok(conn) = conn else { return };
            let log = Arc::clone(&log);
            thread::spawn(move || serve_recording(conn, &log));
        }
    });
    (addr, seen)
}

fn serve_recording(mut conn: TcpStream, log: &Mutex<Vec<Seen>>) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = Vec::new();
    let mut scratch = [0u8; 8192];
    loop {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            match conn.read(&mut scratch) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&scratch[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_string();
        let len: usize = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse().unwrap())
            })
            .unwrap_or(0);
        while buf.len() < end + 4 + len {
            match conn.read(&mut scratch) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&scratch[..n]),
            }
        }
        let body = buf[end + 4..end + 4 + len].to_vec();
        buf.drain(..end + 4 + len);
        let reply = if head.starts_with("GET /v1/models ") {
            let list = r#"{"object":"list","data":[{"id":"raw-model","object":"model"}]}"#;
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{list}",
                list.len()
            )
        } else {
            let events = concat!(
                "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n",
                "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}}]}\n\n",
                "data: [DONE]\n\n"
            );
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n{events}",
                events.len()
            )
        };
        log.lock().unwrap().push(Seen { head, body });
        if conn.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// The bytes on the wire: one model discovery, then bodies with
/// `max_completion_tokens`, `ignore_eos`, `--body` and `--extra-body`
/// merged (RFC 7396), a dataset line's own output length, and the key.
#[test]
fn the_requests_on_the_wire() {
    let dir = std::env::temp_dir().join(format!("metronome-wire-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dataset = dir.join("d.jsonl");
    std::fs::write(
        &dataset,
        "{\"prompt\":\"count to three\",\"output_len\":3}\n",
    )
    .unwrap();
    for engine in engines() {
        let (addr, seen) = recording_server();
        let r = run_json(
            addr,
            "/v1",
            engine,
            &[
                "--openai",
                "--rate",
                "5",
                "--duration",
                "1s",
                "--dataset",
                dataset.to_str().unwrap(),
                "--ignore-eos",
                "--api-key",
                "sk-test",
                "--body",
                r#"{"temperature":0,"stream_options":{"include_usage":true,"x":1}}"#,
                "--extra-body",
                r#"{"min_tokens":3,"temperature":null,"stream_options":{"x":null}}"#,
            ],
            0,
        );
        assert_eq!(r.requests.ok, 5, "{engine}: {:?}", r.errors);
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 6, "{engine}: one GET then five POSTs");
        assert!(
            seen[0].head.starts_with("GET /v1/models HTTP/1.1\r\n"),
            "{engine}: {}",
            seen[0].head
        );
        assert!(seen[0].head.contains("\r\nAuthorization: Bearer sk-test"));
        for s in &seen[1..] {
            assert!(
                s.head.starts_with("POST /v1/chat/completions HTTP/1.1\r\n"),
                "{engine}: {}",
                s.head
            );
            assert!(s.head.contains("\r\nAuthorization: Bearer sk-test"));
            assert_eq!(
                String::from_utf8_lossy(&s.body),
                r#"{"ignore_eos":true,"max_completion_tokens":3,"messages":[{"content":"count to three","role":"user"}],"min_tokens":3,"model":"raw-model","stream":true,"stream_options":{"include_usage":true}}"#,
                "{engine}"
            );
        }
        // --max-tokens-field max_tokens, --model given: no discovery.
        let (addr, seen) = recording_server();
        run_json(
            addr,
            "/v1/chat/completions",
            engine,
            &[
                "--openai",
                "--rate",
                "2",
                "--duration",
                "1s",
                "--model",
                "mine",
                "--max-tokens-field",
                "max_tokens",
                "--max-tokens",
                "7",
            ],
            0,
        );
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2, "{engine}: no GET /v1/models");
        let body: Value = serde_json::from_slice(&seen[0].body).unwrap();
        assert_eq!(
            body,
            json!({"max_tokens": 7, "model": "mine", "stream": true,
                   "stream_options": {"include_usage": true},
                   "messages": [{"role": "user", "content": "Write a haiku about a metronome."}]})
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bad input: one line naming the problem, exit 2 (unreachable server:
/// exit 1), before anything is sent.
#[test]
fn bad_input_is_one_line_and_an_exit_code() {
    let dir = std::env::temp_dir().join(format!("metronome-ds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"prompt\":\"ok\"}\n\n{\"prompt\": 5}\n").unwrap();
    let empty = dir.join("empty.jsonl");
    std::fs::write(&empty, "\n").unwrap();
    let missing = dir.join("missing.jsonl");
    // A plain server answers "ok" to GET /v1/models: not a model list.
    let plain_srv = server(plain(Duration::ZERO));
    let url = format!("http://{}/", plain_srv.addr());
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let dead = format!("http://{closed}/");
    let cases: Vec<(Vec<String>, i32, String)> = vec![
        (
            vec!["--dataset".into(), bad.display().to_string()],
            2,
            format!(
                "metronome: --dataset {} line 3: \"prompt\" must be a string\n",
                bad.display()
            ),
        ),
        (
            vec!["--dataset".into(), empty.display().to_string()],
            2,
            format!(
                "metronome: --dataset {} is empty: give at least one prompt\n",
                empty.display()
            ),
        ),
        (
            vec!["--dataset".into(), missing.display().to_string()],
            2,
            format!(
                "metronome: cannot read --dataset {}: No such file or directory (os error 2)\n",
                missing.display()
            ),
        ),
        (
            vec!["--extra-body".into(), "[1]".into()],
            2,
            "metronome: --extra-body with --openai must be a JSON object to merge into every \
             request body, like '{\"temperature\":0}'\n"
                .into(),
        ),
        (
            vec!["--body".into(), "{oops".into()],
            2,
            "metronome: --body is not JSON (key must be a string at line 1 column 2)\n".into(),
        ),
        (
            vec![],
            2,
            format!(
                "metronome: cannot discover the model from GET {url}v1/models: its answer is not \
                 JSON (expected value at line 1 column 1): ok; give it with --model\n"
            ),
        ),
    ];
    // Request flags without --openai would be ignored: refused instead.
    for flag in [
        &["--dataset", "d.jsonl"][..],
        &["--ignore-eos"],
        &["--extra-body", "{}"],
        &["--model", "m"],
        &["--input-len", "8"],
    ] {
        let mut args = vec!["run", url.as_str()];
        args.extend_from_slice(flag);
        let out = metronome(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "metronome: the following required arguments were not provided: --openai (see --help)\n",
            "{args:?}"
        );
    }
    for (extra, code, want) in cases {
        let mut args = vec!["run", url.as_str(), "--openai", "--duration", "1s"];
        args.extend(extra.iter().map(String::as_str));
        let out = metronome(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert_eq!(stderr, want, "{args:?}");
    }
    let out = metronome(&["run", &dead, "--openai"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "metronome: cannot discover the model: GET {dead}v1/models failed ("
        )) && stderr.ends_with("); is the server up? or give --model\n"),
        "{stderr}"
    );
    plain_srv.stop();
    let _ = std::fs::remove_dir_all(&dir);
    // The model ServeConfig names is the one discovered.
    let srv = server(ServeConfig {
        sse: true,
        model: "x/y".into(),
        ..ServeConfig::default()
    });
    let r = run_json(
        srv.addr(),
        "/",
        "std",
        &["--openai", "--rate", "5", "--duration", "1s"],
        0,
    );
    assert_eq!(r.workload.unwrap().model, "x/y");
}

/// The prompts on the wire for prefix-cache tests: `--cache-bust` makes
/// every request's prompt unique (and unique to the run), `--prefix-len`
/// puts the same words in front of every synthetic prompt, and drawn
/// output lengths stay in their range.
#[test]
fn cache_bust_prefix_and_drawn_lengths_on_the_wire() {
    let bodies = |args: &[&str]| -> Vec<serde_json::Value> {
        let (addr, seen) = recording_server();
        let mut all = vec![
            "--openai",
            "--rate",
            "20",
            "--duration",
            "1s",
            "--model",
            "m",
        ];
        all.extend_from_slice(args);
        let r = run_json(addr, "/v1/chat/completions", "std", &all, 0);
        assert_eq!(r.requests.ok, 20, "{args:?}");
        let seen = seen.lock().unwrap();
        seen.iter()
            .filter(|s| s.head.starts_with("POST "))
            .map(|s| serde_json::from_slice(&s.body).unwrap())
            .collect()
    };
    let content = |b: &serde_json::Value| b["messages"][0]["content"].as_str().unwrap().to_string();
    // Warm-up requests are not measured but are on the wire: look at all.
    let busted = bodies(&[
        "--prompt",
        "hello there",
        "--cache-bust",
        "--warm-up",
        "off",
    ]);
    assert_eq!(busted.len(), 20);
    let mut texts: Vec<String> = busted.iter().map(content).collect();
    assert!(texts
        .iter()
        .all(|t| t.ends_with(" hello there") && t.split(' ').count() == 3));
    texts.sort();
    texts.dedup();
    assert_eq!(texts.len(), 20, "every prompt unique");
    let again = bodies(&[
        "--prompt",
        "hello there",
        "--cache-bust",
        "--warm-up",
        "off",
    ]);
    assert_ne!(content(&again[0]), content(&busted[0]), "unique to the run");

    let shared = bodies(&[
        "--input-len",
        "uniform:3..6",
        "--prefix-len",
        "5",
        "--output-len",
        "uniform:3..5",
        "--warm-up",
        "off",
    ]);
    let prefix: Vec<String> = content(&shared[0])
        .split(' ')
        .take(5)
        .map(str::to_string)
        .collect();
    let mut lens = std::collections::BTreeSet::new();
    let mut outs = std::collections::BTreeSet::new();
    for b in &shared {
        let c = content(b);
        let words: Vec<&str> = c.split(' ').collect();
        assert_eq!(words[..5], prefix[..], "{c}");
        assert!((8..=11).contains(&words.len()), "{c}");
        lens.insert(words.len());
        let out = b["max_completion_tokens"].as_u64().unwrap();
        assert!((3..=5).contains(&out), "{b}");
        outs.insert(out);
    }
    assert!(lens.len() > 1 && outs.len() > 1, "{lens:?} {outs:?}");
}

/// Token counts of `texts` by Python's Hugging Face `tokenizers` (the
/// package guidellm and aiperf count with) for the tokenizer.json at
/// `path`, without special tokens; `None` when it is not installed (CI
/// installs it, and there its absence fails).
fn python_token_counts(path: &str, texts: &[String]) -> Option<Vec<u32>> {
    use std::process::{Command, Stdio};
    let script = "import json,sys\nfrom tokenizers import Tokenizer\n\
                  t=Tokenizer.from_file(sys.argv[1])\n\
                  print(json.dumps([len(t.encode(s, add_special_tokens=False).ids) \
                  for s in json.load(sys.stdin)]))";
    let mut child = Command::new("python3")
        .args(["-c", script, path])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(texts).unwrap().as_bytes())
        .unwrap();
    let out = child.wait_with_output().ok()?;
    if !out.status.success() {
        assert!(
            std::env::var_os("CI").is_none(),
            "python tokenizers is missing on CI: .ci/run installs it with pip ({})",
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("SKIP: python3 tokenizers is not installed (pip install tokenizers)");
        return None;
    }
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

/// The issue's done-when: with `--tokenizer`, the input-token counts are
/// the tokenizer's for every prompt (checked by Python's `tokenizers` on
/// the prompts seen on the wire), synthetic prompts have exactly
/// `--input-len` tokens, and the report says what counted.
#[test]
fn tokenizer_counts_equal_the_tokenizers_own() {
    let tok = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tokenizer-bpe.json");
    let dir = std::env::temp_dir().join(format!("metronome-tok-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dataset = dir.join("d.jsonl");
    std::fs::write(
        &dataset,
        "{\"prompt\":\"The quick brown fox jumps over the lazy dog.\"}\n\
         {\"prompt\":\"xylophone zebra quokka\"}\n\
         {\"messages\":[{\"role\":\"user\",\"content\":\"a metronome keeps time\"}]}\n",
    )
    .unwrap();
    let runs: [&[&str]; 3] = [
        &["--dataset", dataset.to_str().unwrap()],
        &["--input-len", "12"],
        &[
            "--input-len",
            "uniform:5..20",
            "--prefix-len",
            "7",
            "--prefix-share",
            "0.5",
        ],
    ];
    for extra in runs {
        let (addr, seen) = recording_server();
        let mut args = vec![
            "--openai",
            "--rate",
            "20",
            "--duration",
            "1s",
            "--model",
            "m",
            "--warm-up",
            "off",
            "--tokenizer",
            tok,
        ];
        args.extend_from_slice(extra);
        let r = run_json(addr, "/v1/chat/completions", "std", &args, 0);
        let w = r.workload.as_ref().unwrap();
        assert_eq!(w.tokens_counted_by, format!("tokenizer {tok}"), "{extra:?}");
        let texts: Vec<String> = seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.head.starts_with("POST "))
            .map(|s| {
                let b: serde_json::Value = serde_json::from_slice(&s.body).unwrap();
                b["messages"][0]["content"].as_str().unwrap().to_string()
            })
            .collect();
        assert_eq!(texts.len(), 20, "{extra:?}");
        let Some(counts) = python_token_counts(tok, &texts) else {
            return;
        };
        // The report's distribution is the tokenizer's, prompt for prompt.
        let mut want: std::collections::BTreeMap<u64, u64> = Default::default();
        for c in &counts {
            *want.entry(u64::from(*c)).or_insert(0) += 1;
        }
        let got: std::collections::BTreeMap<u64, u64> =
            w.input_tokens.buckets.iter().copied().collect();
        assert_eq!(got, want, "{extra:?}: {texts:?}");
        if extra[1] == "12" {
            assert!(counts.iter().all(|&c| c == 12), "{counts:?}");
        }
    }
}

/// Exact percentiles beside the histogram's: against streams whose E2E
/// values all fall in one histogram bucket (about 1 s: 50 tokens 20 ms
/// apart), the histogram's p50, p99 and max agree (a bucket's top clamped
/// to the max), while the exact ones are order statistics of the samples:
/// within [min, max], ordered, never above the histogram's, over every
/// success; per-token ITL keeps its histogram only; a merge drops them.
#[test]
fn exact_percentiles_where_every_sample_was_kept() {
    let srv = ServeProcess::start(&["--sse", "--ttft", "5ms", "--itl", "20ms", "--tokens", "50"]);
    for engine in engines() {
        let dir =
            std::env::temp_dir().join(format!("metronome-exact-{}-{engine}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("r.json");
        let r = run_json(
            srv.addr,
            "/v1/chat/completions",
            engine,
            &[
                "--openai",
                "--rate",
                "8",
                "--duration",
                "2s",
                "--out",
                out.to_str().unwrap(),
            ],
            0,
        );
        let m = &r.metrics;
        for (name, metric) in [
            ("latency", &m.latency),
            ("service_time", &m.service_time),
            ("ttft", &m.ttft),
            ("tpot", &m.tpot),
        ] {
            let e = metric
                .exact
                .as_ref()
                .unwrap_or_else(|| panic!("{engine} {name}: no exact"));
            assert_eq!(e.count, metric.count, "{engine} {name}");
            assert_eq!(e.count, r.requests.ok, "{engine} {name}");
            let ordered = [metric.min, e.p50, e.p90, e.p95, e.p99, e.p999, metric.max];
            assert!(
                ordered.windows(2).all(|w| w[0] <= w[1]),
                "{engine} {name}: {ordered:?}"
            );
            assert!(
                e.p50 <= metric.p50 && e.p99 <= metric.p99,
                "{engine} {name}"
            );
        }
        assert!(
            m.itl.exact.is_none(),
            "{engine}: per-token ITL is histogram only"
        );
        // Every E2E in one bucket: the histogram cannot tell p50 from max.
        if m.latency.p50 == m.latency.max {
            let e = m.latency.exact.as_ref().unwrap();
            assert!(e.p50 < m.latency.max, "{engine}: {e:?}");
        }
        let merged = dir.join("m.json");
        let o = metronome(&[
            "merge",
            out.to_str().unwrap(),
            "--out",
            merged.to_str().unwrap(),
        ]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let mr = common::read_report(&merged);
        assert!(mr.metrics.latency.exact.is_none(), "a merge has no samples");
        assert_eq!(mr.metrics.latency.count, m.latency.count);
    }
}

/// `--metrics-compat` on a bounded run: every per-request metric of each
/// view carries the peer's own percentiles over every sample (numpy's
/// linear for vLLM and aiperf, guidellm's cumulative weight share), per-
/// chunk ones none. Checked independently of the samples path: with three
/// requests, the histogram's exact min, max and mean give all three
/// values (the middle one is 3 x mean - min - max), and numpy's
/// `percentile` of three sorted values is x2 + (2q - 1)(x3 - x2) above the
/// median. A merge drops them, and the note says so.
#[test]
fn compat_views_take_the_peers_percentiles_of_every_request() {
    let srv = ServeProcess::start(&["--sse", "--ttft", "5ms", "--itl", "10ms", "--tokens", "4"]);
    for engine in engines() {
        let dir =
            std::env::temp_dir().join(format!("metronome-compat-{}-{engine}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("r.json");
        let r = run_json(
            srv.addr,
            "/v1/chat/completions",
            engine,
            &[
                "--openai",
                "--rate",
                "3",
                "--duration",
                "1s",
                "--metrics-compat",
                "vllm,guidellm,aiperf",
                "--out",
                out.to_str().unwrap(),
            ],
            0,
        );
        assert_eq!(r.requests.ok, 3, "{engine}");
        let linear = |x: [f64; 3], q: f64| {
            let pos = q * 2.0;
            let lo = pos.floor() as usize;
            x[lo] + (pos - lo as f64) * (x[(lo + 1).min(2)] - x[lo])
        };
        let nearest = |x: [f64; 3], q: f64| x[((q * 3.0 - 1e-9).ceil() as usize).clamp(1, 3) - 1];
        for view in &r.compat {
            let per_chunk = ["itl", "inter_chunk_latency"];
            for (name, m) in &view.metrics {
                let ctx = format!("{engine} {}.{name}", view.peer);
                if per_chunk.contains(&name.as_str()) {
                    assert!(m.exact.is_none(), "{ctx}: per chunk, histogram only");
                    continue;
                }
                let e = m
                    .exact
                    .as_ref()
                    .unwrap_or_else(|| panic!("{ctx}: no exact"));
                assert_eq!(e.count, m.count, "{ctx}");
                // guidellm's per-token metrics count each request's tokens
                // (equal here), the others one value per request.
                let weight = m.count / 3;
                assert_eq!(m.count, 3 * weight, "{ctx}");
                let x = [m.min, 3.0 * m.mean - m.min - m.max, m.max];
                let (method, want): (&str, &dyn Fn(f64) -> f64) = match view.peer.as_str() {
                    "guidellm" => ("weighted_rank", &|q| nearest(x, q)),
                    _ => ("linear", &|q| linear(x, q)),
                };
                assert_eq!(e.method.as_str(), method, "{ctx}");
                for (q, got) in [(0.5, e.p50), (0.9, e.p90), (0.99, e.p99), (0.999, e.p999)] {
                    let w = want(q);
                    // The mean is the histogram's sum over 3, ns to ms.
                    assert!(
                        (got - w).abs() < 1e-6 * w.max(1.0),
                        "{ctx} q {q}: {got} vs {w} ({x:?})"
                    );
                }
            }
            let note = view.notes.last().unwrap();
            assert!(note.starts_with("percentiles: "), "{engine} {note}");
        }
        // A merge keeps the histograms, not the samples: the note follows.
        let merged = dir.join("m.json");
        let o = metronome(&[
            "merge",
            out.to_str().unwrap(),
            "--out",
            merged.to_str().unwrap(),
        ]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let mr = common::read_report(&merged);
        for view in &mr.compat {
            assert!(view.metrics.values().all(|m| m.exact.is_none()), "{engine}");
            let note = view.notes.last().unwrap();
            assert!(
                note.starts_with("percentiles are histogram buckets"),
                "{engine} {note}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// `sweep --openai` (issue 31): the table shows each step's TTFT and ITL
/// p50/p99 and output tokens/s against the offered rate, as guidellm's
/// main table does, each cell the document's own number through the
/// shared formatter (`-` where a p99 has under 100 samples); the
/// discovered model is named once for the whole sweep, not per step.
#[test]
fn sweep_of_streams_shows_ttft_itl_and_tokens_per_rate() {
    use metronome::report::num::num;
    let srv = ServeProcess::start(&[
        "--sse",
        "--model",
        "org/Served-1B",
        "--tokens",
        "8",
        "--ttft",
        "5ms",
        "--itl",
        "1ms",
    ]);
    let out_path =
        std::env::temp_dir().join(format!("metronome-sweep-sse-{}.json", std::process::id()));
    let url = format!("http://{}/v1", srv.addr);
    let out = metronome(&[
        "sweep",
        &url,
        "--openai",
        "--output-len",
        "4",
        "--ignore-eos",
        "--rates",
        "25,50",
        "--duration",
        "2s",
        "--out",
        out_path.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr.matches("metronome: model: org/Served-1B").count(),
        1,
        "{stderr}"
    );
    assert_eq!(stderr.matches("sweep step ").count(), 2, "{stderr}");
    let s: metronome::report::sweep::Sweep =
        serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    let _ = std::fs::remove_file(&out_path);
    assert_eq!(s.steps.len(), 2);
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let head = lines
        .iter()
        .position(|l| l.contains("ttft p50"))
        .unwrap_or_else(|| panic!("no stream table: {text}"));
    assert_eq!(
        lines[head].split_whitespace().collect::<Vec<_>>(),
        [
            "offered/s",
            "ttft",
            "p50",
            "ttft",
            "p99",
            "itl",
            "p50",
            "itl",
            "p99",
            "out",
            "tokens/s"
        ],
        "{text}"
    );
    for (i, r) in s.steps.iter().enumerate() {
        let (ttft, itl) = (&r.metrics.ttft, &r.metrics.itl);
        // 25 and 50 req/s for 2 s; 4 tokens each, 3 gaps between them.
        assert_eq!(ttft.count, [50, 100][i], "{text}");
        assert_eq!(itl.count, [150, 300][i], "{text}");
        assert!(
            ttft.p50 >= 5.0,
            "serve waits 5 ms before the first token: {ttft:?}"
        );
        assert!(r.output_tokens_per_s > 0.0, "{r:?}");
        let ms = |v: f64| format!("{} ms", num(v));
        let want: String = [
            num(r.offered_rps),
            ms(ttft.p50),
            // A p99 needs 100 samples: the 25 req/s step's 50 are too few.
            if i == 0 {
                "-".to_string()
            } else {
                ms(ttft.p99)
            },
            ms(itl.p50),
            ms(itl.p99),
            num(r.output_tokens_per_s),
        ]
        .join(" ");
        let want: Vec<&str> = want.split_whitespace().collect();
        assert_eq!(
            lines[head + 1 + i].split_whitespace().collect::<Vec<_>>(),
            want,
            "{text}"
        );
    }
}
