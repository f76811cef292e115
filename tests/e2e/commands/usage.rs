//! The command line as a user meets it: absurd sizes are usage errors,
//! `run -h` fits one screen with examples, `--help` groups every flag under
//! its heading, a misspelling gets a did-you-mean, and `serve
//! --grpc-status-every` needs `--http2`.

use super::*;

/// Every size a user can type has a limit, checked before anything is
/// reserved: one line naming the flag and the limit, exit 2, no
/// allocation failure (these aborted with "memory allocation of ...
/// failed" and exit 134 before). The target is never contacted.
#[test]
fn absurd_sizes_are_usage_errors() {
    let url = "http://127.0.0.1:9/";
    let cases: [(&[&str], &str); 9] = [
        (
            &["--duration", "10s", "--interval", "1us"],
            "above the limit of 200000",
        ),
        (
            &["--stages", "100000h:10"],
            "above the limit of 2592000s (30 days)",
        ),
        (
            &["--duration", "800h"],
            "above the limit of 2592000s (30 days)",
        ),
        (
            &["--timeout", "2h"],
            "--timeout 7200s is above the limit of 3600s",
        ),
        (
            &["--max-connections", "10000000"],
            "--max-connections 10000000 is above the limit of 65536",
        ),
        (
            &["--connections", "100000"],
            "--connections 100000 is above the limit of 65536",
        ),
        (
            &["--max-in-flight", "4000000000"],
            "--max-in-flight 4000000000 is above the limit of 1000000",
        ),
        (
            &["--max-concurrency", "70000"],
            "--max-concurrency 70000 is above the limit of 65536",
        ),
        (
            &[
                "--rate",
                "10000000",
                "--duration",
                "700h",
                "--interval",
                "1h",
            ],
            "requests (rate x duration), above the limit",
        ),
    ];
    for (args, want) in cases {
        let mut all = vec!["run", url];
        all.extend_from_slice(args);
        let out = metronome(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("memory allocation"),
            "{err}"
        );
    }
}

/// Runs the binary with `args` and the terminal width `columns` (COLUMNS).
fn help_at(columns: &str, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_metronome"))
        .args(args)
        .env("COLUMNS", columns)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The headings of `run --help`, in the order they print.
const HEADINGS: [&str; 10] = [
    "Target and request:",
    "Rate and schedule:",
    "Workloads:",
    "Connections:",
    "TLS:",
    "HTTP/2 and gRPC:",
    "LLM (OpenAI):",
    "Thresholds:",
    "Outputs:",
    "Engine:",
];

/// `run -h` is a newcomer's page: at most 60 lines of at most 100 columns
/// (also on a wider terminal), the URL and the ten most used flags under
/// their headings, then three examples (issue 31 item 6).
#[test]
fn run_short_help_is_one_screen_with_examples() {
    for columns in ["100", "250"] {
        let help = help_at(columns, &["run", "-h"]);
        let lines: Vec<&str> = help.lines().collect();
        assert!(lines.len() <= 60, "{} lines:\n{help}", lines.len());
        for l in &lines {
            assert!(
                l.chars().count() <= 100,
                "{} columns: {l}",
                l.chars().count()
            );
        }
        let flags = [
            "<URL>",
            "--header",
            "--body ",
            "--body-file",
            "--rate",
            "--duration",
            "--arrival",
            "--connections",
            "--openai",
            "--threshold",
            "--out",
        ];
        let mut at = 0;
        for f in flags {
            let i = help[at..]
                .find(f)
                .unwrap_or_else(|| panic!("{f} not after byte {at}:\n{help}"));
            at += i;
        }
        // Nothing else: the other flags are in --help.
        for hidden in [
            "--stages",
            "--max-connections",
            "--cacert",
            "--grpc",
            "--engine",
        ] {
            assert!(!help.contains(hidden), "{hidden} in -h:\n{help}");
        }
        let examples = help.split("Examples:\n").nth(1).expect("examples");
        assert_eq!(
            examples.matches("  metronome run http").count(),
            3,
            "{examples}"
        );
    }
}

/// `run --help` keeps every flag, grouped under the ten headings in order,
/// wrapped at 100 columns, and says which protocols the URL may speak.
#[test]
fn run_long_help_groups_every_flag_under_headings() {
    let help = help_at("100", &["run", "--help"]);
    let mut at = 0;
    for h in HEADINGS {
        let i = help[at..]
            .lines()
            .position(|l| l == h)
            .unwrap_or_else(|| panic!("heading {h} missing or out of order:\n{help}"));
        at += help[at..]
            .lines()
            .take(i + 1)
            .map(|l| l.len() + 1)
            .sum::<usize>();
    }
    for l in help.lines() {
        assert!(
            l.chars().count() <= 100,
            "{} columns: {l}",
            l.chars().count()
        );
    }
    // Flags of every heading, with their details.
    for f in [
        "--stages <STAGES>",
        "--requests <FILE>",
        "--max-connections",
        "--cacert <FILE>",
        "--grpc <SERVICE/METHOD>",
        "--max-tokens-field",
        "--slo <SLOS>",
        "--hlog <HLOG>",
        "--spin <SPIN>",
        "K counted from 0",
        "SSLKEYLOGFILE",
        "Examples:",
    ] {
        assert!(help.contains(f), "{f} missing:\n{help}");
    }
    for p in [
        "HTTP/1.1",
        "HTTPS",
        "HTTP/2 (h2c, h2)",
        "unary",
        "gRPC",
        "OpenAI-style SSE",
    ] {
        let url = help.split("Options:").next().unwrap();
        assert!(url.contains(p), "the URL help does not name {p}:\n{url}");
    }
    // README's first line names them too.
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let first = readme.split("\n\n").nth(1).unwrap();
    for p in [
        "HTTP/1.1",
        "HTTPS",
        "HTTP/2",
        "h2c",
        "h2",
        "unary gRPC",
        "OpenAI-style SSE",
    ] {
        assert!(
            first.contains(p),
            "README's first paragraph does not name {p}: {first}"
        );
    }
}

/// A misspelled flag or value gets clap's suggestion in its one line
/// (exit 2); so does `sweep`.
#[test]
fn a_misspelling_gets_a_did_you_mean() {
    for (args, want) in [
        (
            vec!["run", "http://127.0.0.1:1/", "--duraton", "3s"],
            "metronome: unexpected argument '--duraton' found; did you mean '--duration'? (see --help)\n",
        ),
        (
            vec!["run", "http://127.0.0.1:1/", "--arrival", "poison"],
            "metronome: invalid value 'poison' for '--arrival <ARRIVAL>'; did you mean 'poisson'? (see --help)\n",
        ),
        (
            vec!["sweep", "http://127.0.0.1:1/", "--rates", "1", "--conections", "4"],
            "metronome: unexpected argument '--conections' found; did you mean '--connections'? (see --help)\n",
        ),
        (
            vec!["run", "http://127.0.0.1:1/", "--connectio", "4"],
            "metronome: unexpected argument '--connectio' found; did you mean '--connections'? (see --help)\n",
        ),
        // Transactions per second: one letter from --qps, the rate.
        (
            vec!["run", "http://127.0.0.1:1/", "--tps", "10"],
            "metronome: unexpected argument '--tps' found; did you mean '--qps'? (see --help)\n",
        ),
        // A far guess is no suggestion (clap offered `--cpus` for these).
        (
            vec!["run", "http://127.0.0.1:1/", "--vus", "10"],
            "metronome: unexpected argument '--vus' found (see --help)\n",
        ),
    ] {
        let out = metronome(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), want, "{args:?}");
    }
}

/// `--dashboard` takes its address only as `--dashboard=ADDR`, parsed as
/// `serve --listen` parses it (a bare port, `localhost:0`), so a URL after
/// the flag is the run's URL; `--dashboard ADDR` with a space is refused
/// in one line saying how to write it. (Before: the URL was taken for the
/// address, "invalid socket address syntax"; a bare port and
/// `localhost:0` were refused.)
#[test]
fn dashboard_takes_its_address_with_an_equals_sign() {
    let srv = server(plain(Duration::from_millis(1)));
    let url = format!("http://{}/", srv.addr());
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let bare = format!("--dashboard={free}");
    let base = [
        "--rate",
        "20",
        "--duration",
        "300ms",
        "--quiet",
        "--engine",
        "std",
    ];
    let mut sent = 0;
    for (first, dash, says) in [
        (
            vec!["--dashboard", url.as_str()],
            None,
            "dashboard on http://127.0.0.1:".to_string(),
        ),
        (
            vec![url.as_str()],
            Some(bare.as_str()),
            format!("dashboard on http://127.0.0.1:{free}/"),
        ),
        (
            vec![url.as_str()],
            Some("--dashboard=localhost:0"),
            "dashboard on http://".to_string(),
        ),
    ] {
        let mut args = vec!["run"];
        args.extend(&first);
        args.extend(dash);
        args.extend(base);
        let out = metronome(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(
            err.starts_with(&format!("metronome: {says}")),
            "{args:?}: {err}"
        );
        sent += 6;
    }
    assert!(srv.stop() >= sent, "each run's requests reached the URL");
    let out = metronome(&["run", "http://127.0.0.1:9/", "--dashboard", "8080"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "metronome: unexpected argument '8080' found; to serve the dashboard on 8080, \
         write --dashboard=8080 (see --help)\n"
    );
}

/// `serve --grpc-status-every` answers gRPC calls over HTTP/2 only: without
/// `--http2` it is a usage error (one line, exit 2), not silently ignored.
#[test]
fn serve_grpc_status_every_needs_http2() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_metronome"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--grpc-status-every",
            "10:14",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve accepted --grpc-status-every without --http2");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--http2"), "{err}");
}
