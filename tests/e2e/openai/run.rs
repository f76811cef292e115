//! A bare URL against `metronome serve --sse` gives a valid run on both
//! engines (model discovered, path completed), and the workload report names
//! the synthetic prompts and the served model.

use super::*;

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
