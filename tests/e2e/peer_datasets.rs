//! `--dataset` reads aiperf's and guidellm's own dataset files
//! (`tests/data/peers/`) as those tools read them: `peers.json` holds what
//! aiperf's loaders and guidellm's deserializer and column mapper read from
//! each file (written by `tests/data/peers/peers.py` with aiperf 0.13.0 and
//! guidellm 0.8.1), and metronome must read the same prompts, output
//! lengths, system messages and sessions.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::{metronome, server};
use metronome::run::conversation::{parse_conversations, Conversation};
use metronome::run::tokens::Counter;
use metronome::run::workload::{parse_dataset, Input};
use metronome::serve::ServeConfig;
use serde_json::Value;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/peers")
}

fn read(name: &str) -> String {
    std::fs::read_to_string(dir().join(name)).expect("read a peer file")
}

fn peers() -> Value {
    serde_json::from_str(&read("peers.json")).expect("peers.json is JSON")
}

fn text(input: &Input) -> &str {
    match input {
        Input::Text(t) => t,
        Input::Messages(m) => panic!("a text prompt, got messages {m:?}"),
    }
}

/// A conversation as peers.json writes it.
fn as_json(c: &Conversation) -> Value {
    serde_json::json!({
        "system": c.system,
        "turns": c.turns.iter().map(|t| serde_json::json!({
            "text": text(&t.input),
            "max_tokens": t.output_len,
        })).collect::<Vec<_>>(),
    })
}

/// aiperf's single_turn (with `session_id` grouping, `texts`, `type`) and
/// multi_turn (sessions split over lines, a leading system turn): the same
/// conversations, turns, texts and max tokens as aiperf's own loaders.
#[test]
fn aiperf_files_read_as_aiperf_reads_them() {
    let peers = peers();
    for name in ["aiperf_single_turn.jsonl", "aiperf_multi_turn.jsonl"] {
        let convs = parse_conversations(&read(name), name, &Counter::Words, false)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .unwrap_or_else(|| panic!("{name}: read as conversations"));
        let ours: Vec<Value> = convs.iter().map(as_json).collect();
        assert_eq!(Value::Array(ours), peers[name], "{name}");
    }
}

/// guidellm's JSON Lines and JSON array with `prompt`,
/// `output_tokens_count` and `prompt_tokens_count`: the same prompts and
/// max tokens as guidellm's column mapper gives.
#[test]
fn guidellm_files_read_as_guidellm_reads_them() {
    let peers = peers();
    for name in ["guidellm.jsonl", "guidellm.json"] {
        let text_of = read(name);
        assert_eq!(
            parse_conversations(&text_of, name, &Counter::Words, false).unwrap(),
            None,
            "{name}: single prompts"
        );
        let d = parse_dataset(&text_of, name, &Counter::Words).unwrap();
        assert_eq!(d.skipped, 0);
        let ours: Vec<Value> = d
            .prompts
            .iter()
            .map(|p| serde_json::json!({"text": text(&p.input), "max_tokens": p.output_len}))
            .collect();
        assert_eq!(Value::Array(ours), peers[name], "{name}");
    }
}

/// What metronome cannot take from the peers' files is refused in one
/// line naming the line; the timing fields it does not use are named on
/// stderr, and the run goes on.
#[test]
fn peer_files_end_to_end() {
    let srv = server(ServeConfig {
        sse: true,
        tokens: 4,
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        ..ServeConfig::default()
    });
    let url = format!("http://{}/v1/chat/completions", srv.addr());
    let run = |file: &PathBuf, extra: &[&str]| {
        let mut args = vec![
            "run",
            &url,
            "--openai",
            "--dataset",
            file.to_str().unwrap(),
            "--format",
            "json",
            "--quiet",
            "--engine",
            "std",
        ];
        args.extend_from_slice(extra);
        metronome(&args)
    };
    // Two aiperf conversations (3 and 2 turns) cycled over 4 sessions.
    let out = run(
        &dir().join("aiperf_multi_turn.jsonl"),
        &["--rate", "4", "--duration", "1s"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("aiperf_multi_turn.jsonl: aiperf's \"delay\" field is not used"),
        "{stderr}"
    );
    let r = common::decode_report(&String::from_utf8_lossy(&out.stdout), "multi_turn");
    let rows: Vec<(String, u64, u64)> = r
        .by_request
        .iter()
        .map(|q| (q.name.clone(), q.scheduled, q.ok))
        .collect();
    let row = |n: &str, c: u64| (n.to_string(), c, c);
    assert_eq!(rows, [row("turn-1", 4), row("turn-2", 4), row("turn-3", 2)]);
    assert_eq!(r.requests.ok, 10);
    let out = run(
        &dir().join("aiperf_single_turn.jsonl"),
        &["--rate", "5", "--duration", "1s"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("aiperf's \"timestamp\" and \"delay\" fields are not used"),
        "{stderr}"
    );
    let tmp = std::env::temp_dir().join(format!("metronome-peers-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    for (line, want) in [
        (
            r#"{"text": "What is in the image?", "image": "/tmp/cat.png"}"#,
            "line 2: \"image\" is not supported: metronome sends text prompts only",
        ),
        (
            r#"{"texts": ["Who are you?", "Hello world"]}"#,
            "line 2: \"texts\" holds 2 texts (aiperf's client-side batching), which metronome \
             does not send: give one text per line",
        ),
        (
            r#"{"prompt": "a", "text": "b"}"#,
            "line 2: give \"prompt\" or \"text\", not both",
        ),
        (
            r#"{"text": "a", "output_length": 0}"#,
            "line 2: \"output_length\" must be a positive integer",
        ),
        (
            r#"{"prompt": "a", "output_tokens_count": "5"}"#,
            "line 2: \"output_tokens_count\" must be a positive integer",
        ),
        (
            r#"{"session_id": 7, "text": "a"}"#,
            "line 2: \"session_id\" must be a string",
        ),
        (
            r#"{"session_id": "s", "turns": [{"text": "a", "audio": "x.wav"}]}"#,
            "line 2 turn 1: \"audio\" is not supported",
        ),
        (
            r#"{"instruction": "a"}"#,
            "line 2: no \"prompt\", \"text\", \"messages\" or \"conversations\"",
        ),
    ] {
        let file = tmp.join("bad.jsonl");
        std::fs::write(&file, format!("{{\"text\": \"fine\"}}\n{line}\n")).unwrap();
        let out = run(&file, &["--rate", "5", "--duration", "1s"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{line}: {stderr}");
        assert!(stderr.contains(want), "{line}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{line}: {stderr}");
    }
    srv.stop();
    let _ = std::fs::remove_dir_all(tmp);
}
