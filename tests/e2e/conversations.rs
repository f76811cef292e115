//! End-to-end tests of conversations (`--dataset` with `"turns"`,
//! `--multi-turn`, `--think-time`) against a recording streaming server on
//! loopback, on every engine: each session's turns reach the server in
//! order, each carrying the history (the earlier turns with the dataset's
//! answers), each sent no sooner than the previous answer's end plus the
//! think time; the report's sessions and per-turn rows hold the exact
//! counts. Also trace lines as requests: Mooncake's `input_length`,
//! `output_length` and `hash_ids` build each line's prompt (shared ids
//! share their blocks, word for word, at the server), and a `name` picks a
//! `--requests` mix's request per line. Real time: the think-time check is
//! a lower bound at the server (with a loopback margin), counts are exact.

use crate::common;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{assert_accounting, assert_valid, engines, metronome, run_url_json};
use serde_json::Value;

/// What the server saw of one request: the chat messages of its body, when
/// its last byte arrived and when the server wrote the last byte of its
/// answer (both from the server's start).
#[derive(Clone, Debug)]
struct Seen {
    path: String,
    body: Value,
    messages: Vec<Value>,
    arrived: Duration,
    answered: Duration,
}

/// A streaming chat server: answers every POST with an SSE stream of
/// `tokens` content chunks `itl` apart, a usage chunk and `[DONE]`, and
/// records each request.
fn recording_server(tokens: usize, itl: Duration) -> (SocketAddr, Arc<Mutex<Vec<Seen>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let t0 = Instant::now();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let log = log.clone();
            std::thread::spawn(move || {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(20)));
                let _ = stream.set_nodelay(true);
                let mut buf = Vec::new();
                let mut chunk = [0u8; 65536];
                loop {
                    // A whole request: the head, then Content-Length bytes.
                    if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                        let len: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .map_or(0, |v| v.trim().parse().unwrap_or(0));
                        if buf.len() >= end + 4 + len {
                            let body: Vec<u8> = buf[end + 4..end + 4 + len].to_vec();
                            buf.drain(..end + 4 + len);
                            let arrived = t0.elapsed();
                            let path = head.split(' ').nth(1).unwrap_or("").to_string();
                            if !head.starts_with("post") {
                                // A plain request: a plain answer, recorded.
                                let r = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                                if stream.write_all(r).is_err() {
                                    return;
                                }
                                log.lock().unwrap().push(Seen {
                                    path,
                                    body: Value::Null,
                                    messages: Vec::new(),
                                    arrived,
                                    answered: t0.elapsed(),
                                });
                                continue;
                            }
                            let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                            let messages = v["messages"].as_array().cloned().unwrap_or_default();
                            if stream
                                .write_all(
                                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                                      Transfer-Encoding: chunked\r\n\r\n",
                                )
                                .is_err()
                            {
                                return;
                            }
                            let send = |s: &mut std::net::TcpStream, data: &str| {
                                let ev = format!("data: {data}\n\n");
                                s.write_all(format!("{:x}\r\n{ev}\r\n", ev.len()).as_bytes())
                            };
                            for i in 0..tokens {
                                std::thread::sleep(itl);
                                let d = format!(
                                    r#"{{"choices":[{{"index":0,"delta":{{"content":"w{i} "}}}}]}}"#
                                );
                                if send(&mut stream, &d).is_err() {
                                    return;
                                }
                            }
                            let usage = format!(
                                r#"{{"choices":[],"usage":{{"prompt_tokens":1,"completion_tokens":{tokens}}}}}"#
                            );
                            if send(&mut stream, &usage).is_err()
                                || send(&mut stream, "[DONE]").is_err()
                                || stream.write_all(b"0\r\n\r\n").is_err()
                            {
                                return;
                            }
                            let answered = t0.elapsed();
                            log.lock().unwrap().push(Seen {
                                path,
                                body: v,
                                messages,
                                arrived,
                                answered,
                            });
                            continue;
                        }
                    }
                    match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    (addr, seen)
}

/// Three conversations: three turns with answers for the first two (and a
/// system message), one turn, two turns without recorded answers.
const DATASET: &str = r#"{"system": "be brief", "turns": [{"text": "alpha one", "answer": "reply a1", "output_len": 4}, {"text": "alpha two", "answer": "reply a2"}, "alpha three"]}
{"turns": ["beta only"]}
{"turns": [{"text": "gamma one", "output_len": 3}, "gamma two"]}
"#;

/// The session a request belongs to: its first user message.
fn session_of(messages: &[Value]) -> String {
    messages
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string()
}

/// `(role, content)` of each message.
fn shape(messages: &[Value]) -> Vec<(String, String)> {
    messages
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or("").to_string(),
                m["content"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The issue's done-when for conversations: at 2 sessions/s for 2 s (4
/// sessions: the three conversations in the seed's order, then the first
/// again), every turn reaches the server in its session's order with the
/// history, no sooner than the previous answer's end + 100 ms; the report
/// counts 4 sessions, all completed, and one row per turn with its TTFT.
#[test]
fn conversation_turns_arrive_in_order_with_their_history() {
    let dir = std::env::temp_dir().join(format!("metronome-conv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("conv.jsonl");
    std::fs::write(&path, DATASET).unwrap();
    let path = path.to_str().unwrap().to_string();
    let think = Duration::from_millis(100);
    for engine in engines() {
        let (addr, seen) = recording_server(3, Duration::from_millis(2));
        let url = format!("http://{addr}/v1/chat/completions");
        let r = run_url_json(
            &url,
            engine,
            &[
                "--openai",
                "--model",
                "m",
                "--dataset",
                &path,
                "--think-time",
                "100ms",
                "--rate",
                "2",
                "--duration",
                "2s",
                "--warm-up",
                "off",
            ],
            0,
        );
        let ctx = format!("[{engine}] {:?} {:?}", r.requests, r.sessions);
        assert_accounting(&r);
        let s = r
            .sessions
            .expect("a conversational run reports its sessions");
        // 4 sessions of 3, 1, 2 and 3 turns in some seeded order: the
        // first conversation in the cycle comes twice.
        assert_eq!(s.started, 4, "{ctx}");
        assert_eq!(s.completed, 4, "{ctx}");
        assert_eq!(
            (s.abandoned, s.cut, s.overflowed, s.unfinished),
            (0, 0, 0, 0),
            "{ctx}"
        );
        assert_eq!(s.think_time_ms, 100.0, "{ctx}");
        let log = seen.lock().unwrap().clone();
        assert_eq!(log.len() as u64, r.requests.scheduled, "{ctx}");
        assert_eq!(s.follow_ups + 4, r.requests.scheduled, "{ctx}");
        assert_eq!(r.requests.ok, r.requests.scheduled, "{ctx}");
        // Rows per turn: 4 first turns; the second and third as the
        // sessions that have them.
        let names: Vec<&str> = r.by_request.iter().map(|q| q.name.as_str()).collect();
        assert_eq!(names, ["turn-1", "turn-2", "turn-3"], "{ctx}");
        assert_eq!(r.by_request[0].scheduled, 4, "{ctx}");
        let rows: u64 = r.by_request.iter().map(|q| q.scheduled).sum();
        assert_eq!(rows, r.requests.scheduled, "{ctx}");
        // The workload's input tokens: one value per request sent (every
        // turn), each what that turn's messages hold (words, the proxy),
        // as the server received them.
        let w = r.workload.as_ref().expect("an --openai run's workload");
        let words = |m: &Value| {
            m["content"]
                .as_str()
                .map_or(0, |c| c.split_whitespace().count())
        };
        let at_server: Vec<u64> = log
            .iter()
            .map(|x| x.messages.iter().map(words).sum::<usize>() as u64)
            .collect();
        assert_eq!(w.input_tokens.count, r.requests.sent, "{ctx}");
        assert_eq!(w.input_tokens.count, log.len() as u64, "{ctx}");
        assert_eq!(w.input_tokens.total, at_server.iter().sum::<u64>(), "{ctx}");
        assert_eq!(
            w.input_tokens.max,
            *at_server.iter().max().unwrap(),
            "{ctx}"
        );
        assert_eq!(
            w.input_tokens.min,
            *at_server.iter().min().unwrap(),
            "{ctx}"
        );
        // The headline in one unit: the sessions offered bring every turn
        // (none cut here), and those turns are the requests achieved.
        assert_eq!(r.offered_rps, 2.0, "{ctx}");
        assert_eq!(s.planned_turns, r.requests.scheduled, "{ctx}");
        assert_eq!(s.offered_turns_per_s, s.planned_turns as f64 / 2.0, "{ctx}");
        let head = metronome::report::text::render_text(&r);
        let want = format!(
            "offered 2.000 sessions/s ({} turns planned: {} req/s), achieved {} req/s (100.0% of the planned turns)",
            s.planned_turns,
            metronome::report::num::num(s.offered_turns_per_s),
            metronome::report::num::num(r.achieved_rps)
        );
        assert!(head.contains(&want), "{want:?} in {head}");
        for q in &r.by_request {
            let t = q.ttft.as_ref().expect("each turn's TTFT");
            assert_eq!(t.count, q.ok, "{ctx}");
        }
        // At the server: each session's turns in order, each with its
        // history, each after the previous answer's end + the think time.
        let mut by_session: std::collections::BTreeMap<String, Vec<Seen>> = Default::default();
        for x in &log {
            by_session
                .entry(session_of(&x.messages))
                .or_default()
                .push(x.clone());
        }
        let alpha = pairs(&[
            ("system", "be brief"),
            ("user", "alpha one"),
            ("assistant", "reply a1"),
            ("user", "alpha two"),
            ("assistant", "reply a2"),
            ("user", "alpha three"),
        ]);
        // gamma's first turn has no recorded answer: a stand-in of its
        // output length (3 words of the vocabulary).
        let gamma = pairs(&[
            ("user", "gamma one"),
            ("assistant", "the of and"),
            ("user", "gamma two"),
        ]);
        for (first, full) in [
            ("alpha one", &alpha[1..]),
            ("gamma one", &gamma[..]),
            ("beta only", &pairs(&[("user", "beta only")])[..]),
        ] {
            let turns = &by_session[first];
            let users = full.iter().filter(|(r, _)| r == "user").count();
            assert_eq!(turns.len() % users, 0, "{first}: whole sessions; {ctx}");
            // A session's requests alternate turn 1, 2, ... (a repeated
            // session starts after the first has ended: 0.5 s apart).
            for (i, t) in turns.iter().enumerate() {
                let k = i % users;
                let until = full
                    .iter()
                    .enumerate()
                    .filter(|(_, (r, _))| r == "user")
                    .nth(k)
                    .unwrap()
                    .0;
                let mut want = full[..=until].to_vec();
                if first == "alpha one" {
                    want.insert(0, alpha[0].clone());
                }
                assert_eq!(shape(&t.messages), want, "{first} turn {}; {ctx}", k + 1);
                if k > 0 {
                    let prev = &turns[i - 1];
                    // The next turn left no sooner than the previous
                    // answer's end (at the server) + the think time, less
                    // a loopback margin.
                    assert!(
                        t.arrived + Duration::from_millis(5) >= prev.answered + think,
                        "{first} turn {} arrived {:?}, previous answered {:?}; {ctx}",
                        k + 1,
                        t.arrived,
                        prev.answered
                    );
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// ShareGPT with `--multi-turn`: every human turn is a request with the
/// gpt answers as history; without the flag, vLLM's reading (one request
/// per entry, no sessions). Bad conversation files exit 2 with one line.
#[test]
fn sharegpt_multi_turn_and_bad_files() {
    let dir = std::env::temp_dir().join(format!("metronome-sgpt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sgpt = dir.join("sharegpt.json");
    std::fs::write(
        &sgpt,
        r#"[{"conversations": [{"from": "human", "value": "first question here please"},
             {"from": "gpt", "value": "first answer with enough words"},
             {"from": "human", "value": "second question"},
             {"from": "gpt", "value": "second answer words here"}]}]"#,
    )
    .unwrap();
    let sgpt = sgpt.to_str().unwrap().to_string();
    let engine = engines()[0];
    let (addr, seen) = recording_server(2, Duration::from_millis(1));
    let url = format!("http://{addr}/v1/chat/completions");
    let base = [
        "--openai",
        "--model",
        "m",
        "--dataset",
        &sgpt,
        "--rate",
        "2",
        "--duration",
        "1s",
        "--warm-up",
        "off",
    ];
    let mut args = base.to_vec();
    args.push("--multi-turn");
    let r = run_url_json(&url, engine, &args, 0);
    let s = r.sessions.expect("sessions");
    assert_eq!((s.started, s.completed, s.follow_ups), (2, 2, 2), "{s:?}");
    let log = seen.lock().unwrap().clone();
    let seconds: Vec<_> = log.iter().filter(|x| x.messages.len() == 3).collect();
    assert_eq!(seconds.len(), 2);
    assert_eq!(
        shape(&seconds[0].messages),
        pairs(&[
            ("user", "first question here please"),
            ("assistant", "first answer with enough words"),
            ("user", "second question"),
        ])
    );
    // Without --multi-turn: vLLM's reading, no sessions.
    let r = run_url_json(&url, engine, &base, 0);
    assert!(r.sessions.is_none());
    assert!(r.by_request.is_empty());
    assert_eq!(r.requests.scheduled, 2);

    let bad = dir.join("bad.jsonl");
    for (text, extra, want) in [
        (
            "{\"turns\": [\"a\"]}\n{\"turns\": 3}\n",
            None,
            "line 2: \"turns\" must be an array",
        ),
        (
            "{\"turns\": [\"a\", {\"output_len\": 2}]}\n",
            None,
            "line 1 turn 2: give the user's text",
        ),
        (
            "{\"turns\": [\"a\"]}\n",
            Some("--closed"),
            "need the open loop",
        ),
        (
            "{\"prompt\": \"a\"}\n",
            Some("--think-time"),
            "--think-time applies to conversations",
        ),
    ] {
        std::fs::write(&bad, text).unwrap();
        let mut args = vec![
            "run",
            &url,
            "--openai",
            "--model",
            "m",
            "--dataset",
            bad.to_str().unwrap(),
            "--duration",
            "1s",
        ];
        match extra {
            Some("--closed") => args.extend(["--closed", "2"]),
            Some("--think-time") => args.extend(["--think-time", "1s"]),
            _ => {}
        }
        let out = metronome(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        assert!(err.contains(want), "{text}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    // The schema takes a conversational report.
    let out = metronome(&[
        "run",
        &url,
        "--openai",
        "--model",
        "m",
        "--dataset",
        &sgpt,
        "--multi-turn",
        "--rate",
        "2",
        "--duration",
        "1s",
        "--format",
        "json",
        "--quiet",
        "--engine",
        engine,
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_valid(
        &String::from_utf8_lossy(&out.stdout),
        "a conversational report",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Mooncake's fields in a trace: each line's prompt has `input_length`
/// words; lines that share a hash id share that block word for word at the
/// server (block 7 opens every line, block 8 follows it in two); the output
/// length is the request's `max_completion_tokens`; lines go in trace
/// order, on every engine.
#[test]
fn a_mooncake_trace_shares_its_blocks_at_the_server() {
    let dir = std::env::temp_dir().join(format!("metronome-moon-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("trace.jsonl");
    // (input_length, output_length, hash_ids), 80 ms apart.
    let lines: [(u64, u64, &[u64]); 5] = [
        (600, 3, &[7, 8]),
        (100, 4, &[7]),
        (1024, 5, &[7, 8]),
        (513, 6, &[7, 9]),
        (5, 7, &[]),
    ];
    let text: String = lines
        .iter()
        .enumerate()
        .map(|(i, (n, o, ids))| {
            serde_json::json!({"timestamp": i * 80, "input_length": n, "output_length": o,
                               "hash_ids": ids})
            .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(&trace, text).unwrap();
    for engine in engines() {
        let (addr, seen) = recording_server(1, Duration::from_millis(1));
        let url = format!("http://{addr}/v1/chat/completions");
        let r = run_url_json(
            &url,
            engine,
            &[
                "--openai",
                "--model",
                "m",
                "--trace",
                trace.to_str().unwrap(),
            ],
            0,
        );
        assert_eq!(r.requests.ok, 5, "[{engine}]");
        let mut log = seen.lock().unwrap().clone();
        log.sort_by_key(|x| x.arrived);
        let words: Vec<Vec<String>> = log
            .iter()
            .map(|x| {
                x.messages[0]["content"]
                    .as_str()
                    .unwrap()
                    .split(' ')
                    .map(String::from)
                    .collect()
            })
            .collect();
        for (i, (n, o, _)) in lines.iter().enumerate() {
            assert_eq!(words[i].len() as u64, *n, "[{engine}] line {}", i + 1);
            assert_eq!(
                log[i].body["max_completion_tokens"],
                *o,
                "[{engine}] line {}",
                i + 1
            );
        }
        // Block 7: the first 512 words of lines 1, 3, 4 and the whole of line 2.
        let b7 = &words[0][..512];
        assert_eq!(&words[1][..], &b7[..100]);
        assert_eq!(&words[2][..512], b7);
        assert_eq!(&words[3][..512], b7);
        // Block 8 follows in lines 1 and 3; block 9 is another block.
        assert_eq!(&words[0][512..], &words[2][512..600]);
        assert_ne!(words[3][512], words[2][512]);
        assert_eq!(
            r.workload.as_ref().unwrap().distinct_requests,
            5,
            "[{engine}]"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A trace whose lines name their request replays a `--requests` mix line
/// by line: the server sees the named paths in the trace's order.
#[test]
fn a_trace_names_each_lines_request() {
    let dir = std::env::temp_dir().join(format!("metronome-named-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let reqs = dir.join("requests.jsonl");
    std::fs::write(
        &reqs,
        "{\"name\": \"a\", \"path\": \"/a\"}\n{\"name\": \"b\", \"path\": \"/b\"}\n",
    )
    .unwrap();
    let trace = dir.join("trace.jsonl");
    let order = ["b", "a", "b", "b", "a"];
    let text: String = order
        .iter()
        .enumerate()
        .map(|(i, n)| format!("{{\"timestamp\": {}, \"name\": \"{n}\"}}\n", i * 60))
        .collect();
    std::fs::write(&trace, text).unwrap();
    for engine in engines() {
        let (addr, seen) = recording_server(1, Duration::from_millis(1));
        let url = format!("http://{addr}/");
        let r = run_url_json(
            &url,
            engine,
            &[
                "--requests",
                reqs.to_str().unwrap(),
                "--trace",
                trace.to_str().unwrap(),
                // No warm-up requests at the server (GETs would get one each).
                "--warm-up",
                "off",
            ],
            0,
        );
        assert_eq!(r.requests.ok, 5, "[{engine}]");
        let mut log = seen.lock().unwrap().clone();
        log.sort_by_key(|x| x.arrived);
        let paths: Vec<&str> = log.iter().map(|x| x.path.as_str()).collect();
        assert_eq!(paths, ["/b", "/a", "/b", "/b", "/a"], "[{engine}]");
        let counts: Vec<(String, u64)> = r
            .by_request
            .iter()
            .map(|q| (q.name.clone(), q.scheduled))
            .collect();
        assert_eq!(
            counts,
            [("a".to_string(), 2), ("b".to_string(), 3)],
            "[{engine}]"
        );
    }
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"timestamp\": 0, \"name\": \"zzz\"}\n").unwrap();
    let out = metronome(&[
        "run",
        "http://127.0.0.1:9/",
        "--requests",
        reqs.to_str().unwrap(),
        "--trace",
        bad.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("line 1: no request is named 'zzz'"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
