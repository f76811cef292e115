//! Bad `--openai` input is one line on stderr and an exit code.

use super::*;

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
