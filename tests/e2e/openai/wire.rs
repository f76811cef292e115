//! The `--openai` requests as they are on the wire, recorded by a server
//! started here: the bodies, the cache-bust prefix, the drawn lengths, and
//! prompt token counts equal to the tokenizer's own.

use super::*;

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
