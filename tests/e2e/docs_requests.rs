//! docs/requests.md's examples are real: every block marked
//! `<!-- file: PATH -->` equals that file, and metronome runs each file
//! against the embedded server with the counts the doc describes.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{decode_report, plain, run_json, server};
use metronome::report::Report;
use metronome::serve::ServeConfig;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `(path, block)` pairs of docs/requests.md: the fenced block after
/// each `<!-- file: PATH -->` line, with its final newline.
fn marked_blocks() -> Vec<(String, String)> {
    let doc = std::fs::read_to_string(root().join("docs/requests.md")).unwrap();
    let mut out = Vec::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        let Some(path) = line
            .strip_prefix("<!-- file: ")
            .and_then(|l| l.strip_suffix(" -->"))
        else {
            continue;
        };
        let fence = lines.next().expect("a block after the marker");
        assert!(
            fence.starts_with("```"),
            "{path}: no fence after the marker"
        );
        let mut block = String::new();
        for l in lines.by_ref() {
            if l == "```" {
                break;
            }
            block.push_str(l);
            block.push('\n');
        }
        out.push((path.to_string(), block));
    }
    out
}

#[test]
fn the_docs_blocks_are_the_test_files() {
    let blocks = marked_blocks();
    let paths: Vec<&str> = blocks.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "tests/data/requests/mix.jsonl",
            "tests/data/requests/checks.jsonl",
            "tests/data/requests/targets.txt",
            "tests/data/requests/trace.jsonl",
            "tests/data/requests/trace-named.jsonl",
            "tests/data/requests/mooncake.jsonl",
        ]
    );
    for (path, block) in &blocks {
        let file = std::fs::read_to_string(root().join(path)).unwrap();
        assert_eq!(*block, file, "docs/requests.md's block of {path}");
    }
}

/// A copy of tests/data/requests in a temporary folder with the docs'
/// origin `127.0.0.1:8080` replaced by the test server's address (the
/// files must name the run's origin).
fn copy_for(addr: std::net::SocketAddr, tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("metronome-docs-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(root().join("tests/data/requests")).unwrap() {
        let e = e.unwrap();
        let bytes = std::fs::read(e.path()).unwrap();
        let bytes = match String::from_utf8(bytes) {
            Ok(t) => t.replace("127.0.0.1:8080", &addr.to_string()).into_bytes(),
            Err(e) => e.into_bytes(),
        };
        std::fs::write(dir.join(e.file_name()), bytes).unwrap();
    }
    dir
}

fn rows(r: &Report) -> Vec<(String, u64, u64)> {
    r.by_request
        .iter()
        .map(|q| (q.name.clone(), q.scheduled, q.ok))
        .collect()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// mix.jsonl: five rows (two lines named `home`), the counts core's
/// weighted choice gives for the seed; with trace-named.jsonl, the lines'
/// names; trace.jsonl alone: five arrivals over 20 ms.
#[test]
fn the_mix_and_the_traces_run_as_documented() {
    let srv = server(plain(Duration::ZERO));
    let dir = copy_for(srv.addr(), "mix");
    let mix = dir.join("mix.jsonl");
    let r = run_json(
        srv.addr(),
        "/",
        "std",
        &[
            "--requests",
            path(&mix),
            "--rate",
            "200",
            "--duration",
            "1s",
            "--seed",
            "7",
        ],
        0,
    );
    let cum = [5.0, 8.0, 9.0, 9.5, 10.5, 12.5];
    let m = metronome_core::mix::Mix::Weighted { cumulative: &cum };
    let mut n = [0u64; 6];
    for g in 0..200 {
        n[m.pick_global(7, g)] += 1;
    }
    let want = [
        ("home", n[0] + n[5]),
        ("search", n[1]),
        ("login", n[2]),
        ("upload", n[3]),
        ("GET /health", n[4]),
    ];
    let want: Vec<(String, u64, u64)> = want
        .iter()
        .map(|(name, c)| (name.to_string(), *c, *c))
        .collect();
    assert_eq!(rows(&r), want);
    assert!(want.iter().all(|(_, c, _)| *c > 0), "{want:?}");
    let r = run_json(
        srv.addr(),
        "/",
        "std",
        &[
            "--requests",
            path(&mix),
            "--trace",
            path(&dir.join("trace-named.jsonl")),
        ],
        0,
    );
    let want: Vec<(String, u64, u64)> = [
        ("home", 2),
        ("search", 1),
        ("login", 1),
        ("upload", 0),
        ("GET /health", 0),
    ]
    .iter()
    .map(|(name, c)| (name.to_string(), *c, *c))
    .collect();
    assert_eq!(rows(&r), want);
    assert_eq!(r.planned_duration_s, 0.025500001);
    let r = run_json(
        srv.addr(),
        "/",
        "std",
        &["--trace", path(&dir.join("trace.jsonl"))],
        0,
    );
    assert_eq!((r.requests.scheduled, r.requests.ok), (5, 5));
    assert_eq!(r.planned_duration_s, 0.020000001);
    srv.stop();
    let _ = std::fs::remove_dir_all(dir);
}

/// checks.jsonl with `--mix round-robin -n 10`, on both engines: `home`
/// passes its checks 5 times, `gone` fails its status check 5 times (serve
/// answers 200 to every path), as docs/requests.md says.
#[test]
fn the_checks_run_as_documented() {
    let srv = server(plain(Duration::ZERO));
    let dir = copy_for(srv.addr(), "checks");
    let file = dir.join("checks.jsonl");
    for engine in common::engines() {
        let args = [
            "--requests",
            path(&file),
            "--mix",
            "round-robin",
            "-n",
            "10",
        ];
        let r = run_json(srv.addr(), "/", engine, &args, 0);
        assert_eq!(
            rows(&r),
            [("home".to_string(), 5, 5), ("gone".to_string(), 5, 0)],
            "{engine}"
        );
        assert_eq!(r.errors.by_check.as_ref().unwrap()["status"], 5);
        assert_eq!(r.errors.by_kind["check"], 5);
    }
    srv.stop();
    let _ = std::fs::remove_dir_all(dir);
}

/// targets.txt, run from its folder (vegeta reads `@FILE` from the working
/// folder): the two targets in turn.
#[test]
fn the_targets_run_in_turn_from_their_folder() {
    let srv = server(plain(Duration::ZERO));
    let dir = copy_for(srv.addr(), "targets");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_metronome"))
        .current_dir(&dir)
        .args([
            "run",
            &format!("http://{}/", srv.addr()),
            "--targets",
            "targets.txt",
            "--rate",
            "20",
            "--duration",
            "1s",
            "--format",
            "json",
            "--quiet",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let r = decode_report(&String::from_utf8_lossy(&out.stdout), "targets");
    assert_eq!(
        rows(&r),
        [
            ("GET /".to_string(), 10, 10),
            ("POST /login".to_string(), 10, 10)
        ]
    );
    srv.stop();
    let _ = std::fs::remove_dir_all(dir);
}

/// mooncake.jsonl with --openai: three prompts of 600, 300 and 40 words.
#[test]
fn the_mooncake_trace_builds_its_prompts() {
    let srv = server(ServeConfig {
        sse: true,
        tokens: 4,
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        ..ServeConfig::default()
    });
    let file = root().join("tests/data/requests/mooncake.jsonl");
    let r = run_json(
        srv.addr(),
        "/",
        "std",
        &["--openai", "--trace", path(&file)],
        0,
    );
    assert_eq!((r.requests.scheduled, r.requests.ok), (3, 3));
    let w = r.workload.expect("a workload");
    assert_eq!((w.input_tokens.count, w.input_tokens.total), (3, 940));
    assert_eq!(w.input_tokens.max, 600);
    srv.stop();
}

/// The first code span of a table cell (` `x` ` or ``` ``x`` ```).
fn first_code(cell: &str) -> Option<&str> {
    let cell = cell.trim();
    if let Some(rest) = cell.strip_prefix("``") {
        return rest.find("``").map(|end| &rest[..end]);
    }
    let rest = &cell[cell.find('`')? + 1..];
    rest.find('`').map(|end| &rest[..end])
}

/// The rows of the error table in the section `heading` of
/// docs/requests.md whose line cell starts with a JSON line in backticks:
/// `(line, error)`, each the first code span of its cell.
fn error_rows(heading: &str) -> Vec<(String, String)> {
    let doc = std::fs::read_to_string(root().join("docs/requests.md")).unwrap();
    let start = doc.find(heading).unwrap();
    let end = doc[start + 1..]
        .find("\n## ")
        .map_or(doc.len(), |e| start + 1 + e);
    let mut out = Vec::new();
    for row in doc[start..end]
        .lines()
        .filter(|l| l.starts_with("| `{") || l.starts_with("| `["))
    {
        let cells: Vec<&str> = row.trim_matches('|').split(" | ").collect();
        let line = first_code(cells[0]).unwrap_or_else(|| panic!("{row}"));
        let error = first_code(cells[1]).unwrap_or_else(|| panic!("{row}"));
        out.push((line.to_string(), error.to_string()));
    }
    out
}

fn requests_error_rows() -> Vec<(String, String)> {
    error_rows("## `--requests FILE`")
}

/// Every error the `--requests` table shows for a line is what metronome
/// says for it: exit 2, one line, `--requests FILE line 1: ERROR`.
#[test]
fn the_requests_error_table_is_what_metronome_says() {
    let rows = requests_error_rows();
    assert_eq!(rows.len(), 13, "{rows:?}");
    let dir = std::env::temp_dir().join(format!("metronome-docs-{}-errors", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("r.jsonl");
    for (line, error) in rows {
        std::fs::write(&file, format!("{line}\n")).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_metronome"))
            .current_dir(&dir)
            .args(["run", "http://127.0.0.1:8080/", "--requests", "r.jsonl"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{line}: {stderr}");
        assert_eq!(
            stderr,
            format!("metronome: --requests r.jsonl line 1: {error}\n"),
            "{line}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Every error the `--trace` table shows for a one-line trace is what
/// metronome says for it (`line N` being line 1): exit 2, one line,
/// before anything is sent. Lines with a `name` run with a mix holding
/// only `a`; lines with `input_length` with `--openai`.
#[test]
fn the_trace_error_table_is_what_metronome_says() {
    let rows = error_rows("## `--trace FILE`");
    assert_eq!(rows.len(), 9, "{rows:?}");
    let dir = std::env::temp_dir().join(format!("metronome-docs-{}-trace", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("m.jsonl"), "{\"name\": \"a\", \"path\": \"/a\"}\n").unwrap();
    for (line, error) in rows {
        std::fs::write(dir.join("t.jsonl"), format!("{line}\n")).unwrap();
        let mut args = vec!["run", "http://127.0.0.1:9/", "--trace", "t.jsonl"];
        if line.contains("\"name\"") {
            args.extend_from_slice(&["--requests", "m.jsonl"]);
        }
        if line.contains("input_length") {
            args.extend_from_slice(&["--openai", "--model", "m"]);
        }
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_metronome"))
            .current_dir(&dir)
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{line}: {stderr}");
        assert_eq!(
            stderr,
            format!(
                "metronome: --trace t.jsonl: {}\n",
                error.replace("line N", "line 1")
            ),
            "{line}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}
