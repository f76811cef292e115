//! Shared helpers for the end-to-end tests: start the embedded server
//! in-process on loopback, run the real binary, decode its JSON report.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::process::{Command, Output};
use std::time::Duration;

use metronome::report::Report;
use metronome::serve::{self, ServeConfig, ServerHandle};

// The Python HTTP/3 servers (aioquic) and their certificates.
pub mod quic_peer;
// nginx with the server blocks a test gives, and certificates for names.
pub mod nginx;

/// The engines every end-to-end test runs against. io_uring is skipped
/// visibly when the kernel refuses it.
pub fn engines() -> Vec<&'static str> {
    let mut v = vec!["std"];
    if uring_available() {
        v.push("uring");
    } else {
        eprintln!(
            "SKIP uring: io_uring is not available on this kernel; testing the std engine only"
        );
    }
    v
}

fn uring_available() -> bool {
    metronome::run::engine::uring_available()
}

/// Starts the embedded server on 127.0.0.1 with a free port.
pub fn server(cfg: ServeConfig) -> ServerHandle {
    serve::spawn(ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..cfg
    })
    .expect("start the embedded server")
}

/// A plain config: the given service time, everything else default.
pub fn plain(service: Duration) -> ServeConfig {
    ServeConfig {
        service,
        ..ServeConfig::default()
    }
}

/// Runs the real binary with `args`.
pub fn metronome(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_metronome"))
        .args(args)
        .output()
        .expect("run the metronome binary")
}

/// Runs `metronome run URL --format json --quiet ARGS` on `engine` and
/// decodes the report; panics with stderr when it did not exit with `code`.
pub fn run_json(addr: SocketAddr, path: &str, engine: &str, args: &[&str], code: i32) -> Report {
    run_url_json(&format!("http://{addr}{path}"), engine, args, code)
}

/// [`run_json`] over TLS: `https://ADDR{path}`, trusting the PEM
/// certificate file `cacert` (`--cacert`).
pub fn run_tls_json(
    addr: SocketAddr,
    path: &str,
    engine: &str,
    args: &[&str],
    code: i32,
    cacert: &std::path::Path,
) -> Report {
    let cacert = cacert.to_str().expect("a UTF-8 temporary path");
    let mut all = vec!["--cacert", cacert];
    all.extend_from_slice(args);
    run_url_json(&format!("https://{addr}{path}"), engine, &all, code)
}

/// A fresh self-signed certificate for `serve --tls` and its PEM written
/// to a file of its own under the temporary directory (removed on drop).
pub struct TestCert {
    pub tls: metronome::tls::ServerTls,
    pub path: std::path::PathBuf,
}

impl TestCert {
    pub fn new() -> TestCert {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let tls = metronome::tls::ServerTls::self_signed().expect("generate a certificate");
        let path = std::env::temp_dir().join(format!(
            "metronome-test-{}-{}.pem",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&path, &tls.cert_pem).expect("write the certificate");
        TestCert { tls, path }
    }
}

impl Drop for TestCert {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Runs `metronome run URL --format json --quiet ARGS` on `engine`.
pub fn run_url_json(url: &str, engine: &str, args: &[&str], code: i32) -> Report {
    let mut all = vec![
        "run", url, "--format", "json", "--quiet", "--engine", engine,
    ];
    all.extend_from_slice(args);
    let out = metronome(&all);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(code),
        "metronome {all:?} exited {:?}; stderr: {stderr}",
        out.status.code()
    );
    let report = decode_report(
        &String::from_utf8_lossy(&out.stdout),
        &format!("the report of metronome {all:?} (stderr: {stderr})"),
    );
    if code == 1 {
        assert_exit_matches(&report, out.status.code(), &stderr);
    }
    report
}

/// Runs `metronome run URL --format json --quiet ARGS` on `engine`
/// whatever its exit code, and checks the code against the report: 1 with
/// one line naming the dominant error kind when no request succeeded
/// ([`assert_exit_matches`]), else 0.
pub fn run_json_checked(addr: SocketAddr, path: &str, engine: &str, args: &[&str]) -> Report {
    run_url_json_checked(&format!("http://{addr}{path}"), engine, args)
}

/// [`run_json_checked`] over TLS: `https://ADDR{path}`, trusting the PEM
/// certificate file `cacert` (`--cacert`).
pub fn run_tls_json_checked(
    addr: SocketAddr,
    path: &str,
    engine: &str,
    args: &[&str],
    cacert: &std::path::Path,
) -> Report {
    let cacert = cacert.to_str().expect("a UTF-8 temporary path");
    let mut all = vec!["--cacert", cacert];
    all.extend_from_slice(args);
    run_url_json_checked(&format!("https://{addr}{path}"), engine, &all)
}

/// [`run_json_checked`] for any URL.
pub fn run_url_json_checked(url: &str, engine: &str, args: &[&str]) -> Report {
    let mut all = vec![
        "run", url, "--format", "json", "--quiet", "--engine", engine,
    ];
    all.extend_from_slice(args);
    let out = metronome(&all);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report = decode_report(
        &String::from_utf8_lossy(&out.stdout),
        &format!("the report of metronome {all:?} (stderr: {stderr})"),
    );
    assert_exit_matches(&report, out.status.code(), &stderr);
    report
}

/// A run in which no request succeeded exits 1 with exactly one line on
/// stderr naming the dominant error kind (the largest count) and an
/// example; any other run exits 0.
pub fn assert_exit_matches(r: &Report, code: Option<i32>, stderr: &str) {
    let q = &r.requests;
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("metronome: no request succeeded"))
        .collect();
    if q.ok == 0 && q.sent + q.unsent + q.dropped > 0 {
        assert_eq!(
            code,
            Some(1),
            "no request succeeded: exit 1; stderr: {stderr}"
        );
        assert_eq!(lines.len(), 1, "one line; stderr: {stderr}");
        let top = r.errors.by_kind.values().copied().max().unwrap_or(0);
        if top == 0 {
            assert!(lines[0].contains("none was sent"), "{}", lines[0]);
            let by = &r.errors.unsent_by_reason;
            let reason = |k: &str| by.get(k).copied().unwrap_or(0);
            if reason("too_large") > reason("connect") && q.dropped <= q.unsent {
                // Too large for the server's limit, not refused: named so.
                assert!(
                    lines[0].contains("larger than the server's limit")
                        && lines[0].contains("SETTINGS_MAX_HEADER_LIST_SIZE")
                        && !lines[0].contains("refused or unreachable"),
                    "{}",
                    lines[0]
                );
            }
        } else {
            let named = r
                .errors
                .by_kind
                .iter()
                .filter(|(_, &n)| n == top)
                .any(|(k, _)| lines[0].contains(&format!("failed with {k} (e.g. ")));
            assert!(
                named,
                "the dominant kind is named: {} ({:?})",
                lines[0], r.errors.by_kind
            );
        }
    } else {
        assert_eq!(
            code,
            Some(0),
            "a request succeeded: exit 0; stderr: {stderr}"
        );
        assert!(lines.is_empty(), "{stderr}");
    }
}

/// The accounting every report promises (docs/report.md, "Accounting"),
/// asserted on every report an end-to-end test decodes.
pub fn assert_accounting(r: &Report) {
    let q = &r.requests;
    let e = &r.errors;
    let sum = |m: &std::collections::BTreeMap<String, u64>| m.values().sum::<u64>();
    let ctx = format!("{}: {:?} {:?}", r.engine, q, e);
    assert_eq!(
        q.scheduled,
        q.sent + q.dropped + q.unsent,
        "scheduled = sent + dropped + unsent; {ctx}"
    );
    assert_eq!(q.sent, q.ok + q.errors, "sent = ok + errors; {ctx}");
    assert_eq!(q.errors, sum(&e.by_kind), "errors = sum(by_kind); {ctx}");
    assert_eq!(
        q.unsent,
        sum(&e.unsent_by_reason),
        "unsent = sum(unsent_by_reason); {ctx}"
    );
    assert_eq!(
        e.by_kind["status"],
        sum(&e.by_status),
        "status = sum(by_status); {ctx}"
    );
    assert_eq!(
        e.by_kind["bad_framing"],
        sum(&e.bad_framing_by_cause),
        "bad_framing = sum(by cause); {ctx}"
    );
    // Reports of older versions have no grpc_status kind; plain runs no
    // by_grpc_status.
    assert_eq!(
        e.by_kind.get("grpc_status").copied().unwrap_or(0),
        e.by_grpc_status.as_ref().map_or(0, sum),
        "grpc_status = sum(by_grpc_status); {ctx}"
    );
    // Runs without checks have no by_check (and no check errors).
    assert_eq!(
        e.by_kind.get("check").copied().unwrap_or(0),
        e.by_check.as_ref().map_or(0, sum),
        "check = sum(by_check); {ctx}"
    );
    assert_eq!(
        q.timeouts, e.by_kind["timeout"],
        "timeouts = by_kind.timeout; {ctx}"
    );
    assert!(q.good <= q.ok, "good <= ok; {ctx}");
    let per_interval =
        |f: fn(&metronome::report::IntervalReport) -> u64| r.intervals.iter().map(f).sum::<u64>();
    assert_eq!(
        q.dropped,
        per_interval(|i| i.dropped),
        "dropped = sum(intervals.dropped); {ctx}"
    );
    assert_eq!(
        r.generator.waited_for_connection,
        per_interval(|i| i.waited),
        "waited_for_connection = sum(intervals.waited); {ctx}"
    );
    // Every send and completion is in one row of the schedule or the drain.
    let rows = |f: fn(&metronome::report::IntervalReport) -> u64| {
        r.intervals.iter().chain(&r.drain).map(f).sum::<u64>()
    };
    assert_eq!(
        q.ok,
        rows(|i| i.ok),
        "ok = sum(intervals.ok, drain.ok); {ctx}"
    );
    assert_eq!(
        q.sent,
        rows(|i| i.sent),
        "sent = sum(intervals.sent, drain.sent); {ctx}"
    );
}

/// How many recorded values of `metric` are at least `at_least_ms`.
pub fn count_at_least(m: &metronome::report::Metric, at_least_ms: f64) -> u64 {
    m.count_at_least(at_least_ms)
}

/// Reads a JSON report written by the binary (`--out`), validates it
/// against docs/report.schema.json, checks its accounting, and decodes it.
pub fn read_report(path: &std::path::Path) -> Report {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    decode_report(&text, &path.display().to_string())
}

/// Validates `text` (a report, `what` names it in a failure) against the
/// schema, decodes it, checks that it re-renders byte for byte (what
/// `metronome report FILE --format json` prints), and checks its accounting.
pub fn decode_report(text: &str, what: &str) -> Report {
    assert_valid(text, what);
    let r: Report =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{what} is not a report ({e})"));
    let again = serde_json::to_string_pretty(&r).unwrap();
    assert!(
        again.trim_end() == text.trim_end(),
        "{what} does not re-render byte for byte"
    );
    assert_accounting(&r);
    r
}

/// Every violation of docs/report.schema.json in `value`, each with its
/// JSON pointer (empty when it validates).
pub fn schema_errors(value: &serde_json::Value) -> Vec<String> {
    schema()
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// docs/report.schema.json, compiled once.
fn schema() -> &'static jsonschema::Validator {
    static SCHEMA: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    SCHEMA.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/report.schema.json");
        let schema: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        jsonschema::draft202012::new(&schema).expect("docs/report.schema.json is a valid schema")
    })
}

/// Asserts that `text` (JSON written by metronome: a report, a merged
/// report or a sweep) validates against docs/report.schema.json; a failure
/// lists every violation with its JSON pointer.
pub fn assert_valid(text: &str, what: &str) {
    let value: serde_json::Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{what} is not JSON ({e})"));
    let errors = schema_errors(&value);
    assert!(
        errors.is_empty(),
        "{what} does not validate against docs/report.schema.json:\n{}",
        errors.join("\n")
    );
}
