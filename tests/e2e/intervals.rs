//! The per-interval stream series and the bytes of a run (issue 31): each
//! interval row's TTFT (from its own histogram, which `merge` adds
//! exactly), output tokens per second and requests in flight; the bytes
//! received and sent, per row and in the report's `transfer`, checked
//! against curl's count of the same responses from the same server.

use crate::common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use common::{
    assert_accounting, engines, metronome, plain, run_json, run_tls_json, server, TestCert,
};
use metronome::report::hlog::decode_base64_v2;
use metronome::report::{IntervalReport, Report};
use metronome::serve::{ServeConfig, TlsServer};
use metronome_core::histogram::Histogram;

/// Tokens per stream of the server below.
const TOKENS: u64 = 16;

fn sse() -> ServeConfig {
    ServeConfig {
        sse: true,
        tokens: TOKENS as u32,
        ttft: Duration::from_millis(50),
        itl: Duration::from_millis(10),
        ..ServeConfig::default()
    }
}

/// The schedule's rows, then the drain's.
fn rows(r: &Report) -> Vec<&IntervalReport> {
    r.intervals.iter().chain(&r.drain).collect()
}

/// A row's TTFT histogram (empty when the row has none).
fn ttft(row: &IntervalReport) -> Histogram {
    row.ttft_hdr
        .as_deref()
        .map(|t| decode_base64_v2(t).unwrap())
        .unwrap_or_default()
}

/// `curl -s --raw -o FILE -w '%{size_header}' ARGS URL`: the bytes of one
/// response as on the wire (head, then the body with its chunk framing:
/// `--raw` keeps it), or `None` (with a visible notice) without curl.
fn curl_response_bytes(url: &str, args: &[&str], tls: Option<&Path>) -> Option<u64> {
    let body = std::env::temp_dir().join(format!(
        "metronome-intervals-curl-{}-{}",
        std::process::id(),
        url.len() + args.len()
    ));
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "--raw", "-o"])
        .arg(&body)
        .args(["-w", "%{size_header}"]);
    if let Some(ca) = tls {
        cmd.arg("--cacert").arg(ca);
    }
    let out = match cmd.args(args).arg(url).output() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("SKIP the comparison with curl: cannot run curl ({e})");
            return None;
        }
    };
    assert!(out.status.success(), "curl {url}: {out:?}");
    let head: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let body_len = std::fs::metadata(&body).unwrap().len();
    let _ = std::fs::remove_file(&body);
    Some(head + body_len)
}

/// The checks every run's bytes meet: the rows add up to `transfer`, its
/// rates are over the real window, every request went out whole (the same
/// request each time, so the bytes sent are a multiple of the sends) and,
/// when curl ran, every response came in whole: `ok` times curl's count.
fn assert_bytes(r: &Report, per_response: Option<u64>) {
    let t = r.transfer.expect("a new report has transfer");
    let ctx = format!("{}: {t:?} {:?}", r.engine, r.requests);
    let sum = |f: fn(&IntervalReport) -> u64| rows(r).into_iter().map(f).sum::<u64>();
    assert_eq!(sum(|i| i.bytes_received), t.received_bytes, "{ctx}");
    assert_eq!(sum(|i| i.bytes_sent), t.sent_bytes, "{ctx}");
    let w = r.window.window_s;
    assert!(
        (t.received_per_s * w - t.received_bytes as f64).abs() < 1e-6 * t.received_bytes as f64
    );
    assert!(
        t.sent_bytes > 0 && t.sent_bytes % r.requests.sent == 0,
        "{ctx}"
    );
    assert_eq!(r.requests.ok, r.requests.sent, "{ctx}");
    if let Some(n) = per_response {
        assert_eq!(
            t.received_bytes,
            r.requests.ok * n,
            "{ctx}: {n} bytes a response"
        );
    }
}

/// A stream run on each engine: every row's TTFT comes from the streams
/// whose first output fell in it (the rows' histograms add up to the
/// run's, bucket for bucket), its tokens per second from the streams that
/// ended in it (adding up to every token), its in-flight count is the sends
/// minus the ends so far (zero after the drain, above zero while 200 ms
/// streams overlap); the bytes are curl's count of the same stream.
#[test]
fn stream_rows_and_bytes_on_both_engines() {
    let srv = server(sse());
    let url = format!("http://{}/v1/chat/completions", srv.addr());
    let per_response = curl_response_bytes(
        &url,
        &[
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "-d",
            r#"{"model":"metronome","messages":[{"role":"user","content":"hi"}],"stream":true}"#,
        ],
        None,
    );
    for engine in engines() {
        let r = run_json(
            srv.addr(),
            "/v1/chat/completions",
            engine,
            &[
                "--openai",
                "--model",
                "metronome",
                "--rate",
                "20",
                "--duration",
                "2s",
                "--interval",
                "500ms",
            ],
            0,
        );
        assert_accounting(&r);
        assert_eq!(r.requests.ok, 40, "{engine}: {:?}", r.errors);
        // TTFT: the rows' histograms are the run's, split by time.
        let mut all = Histogram::new();
        for row in rows(&r) {
            let h = ttft(row);
            all.merge(&h);
            match (row.ttft_p50_ms, row.ttft_p99_ms, row.ttft_max_ms) {
                (Some(p50), Some(p99), Some(max)) => {
                    assert!(h.count() > 0, "{engine}: {row:?}");
                    assert!(p50 >= 50.0 && p50 <= p99 && p99 <= max, "{engine}: {row:?}");
                    assert_eq!(
                        p99,
                        metronome::report::ms(h.quantile(0.99).min((max * 1e6).round() as u64))
                    );
                }
                (None, None, None) => assert!(h.is_empty(), "{engine}: {row:?}"),
                other => panic!("{engine}: partial TTFT {other:?}"),
            }
        }
        let run_ttft = r.metrics.ttft.try_histogram().unwrap();
        assert_eq!(all.count(), 40, "{engine}");
        assert_eq!(
            all.buckets().collect::<Vec<_>>(),
            run_ttft.buckets().collect::<Vec<_>>(),
            "{engine}"
        );
        // Tokens: every stream's, in the row it ended in.
        let tokens: f64 = rows(&r)
            .iter()
            .map(|i| i.output_tokens_per_s.expect("a stream run's rows") * 0.5)
            .sum();
        assert_eq!(tokens.round() as u64, 40 * TOKENS, "{engine}");
        // In flight at each row's end.
        let mut open = 0u64;
        for row in rows(&r) {
            open = open + row.sent - row.ok - row.errors;
            assert_eq!(row.in_flight, open, "{engine}: {row:?}");
        }
        assert_eq!(rows(&r).last().unwrap().in_flight, 0, "{engine}");
        // A send every 50 ms, each stream 200 ms long: the end of the
        // first row finds the streams of its last 200 ms open.
        assert!(
            r.intervals[0].in_flight >= 1,
            "{engine}: {:?}",
            r.intervals[0]
        );
        assert_bytes(&r, per_response);
    }
    srv.stop();
}

/// Plain responses (Content-Length), plain and over TLS (the bytes after
/// decryption), on each engine: `ok` times curl's count of one response.
#[test]
fn plain_and_tls_bytes_match_curl() {
    let srv = server(plain(Duration::ZERO));
    let url = format!("http://{}/", srv.addr());
    let per_response = curl_response_bytes(&url, &[], None);
    let cert = TestCert::new();
    let tls = server(ServeConfig {
        tls: Some(TlsServer(Arc::clone(&cert.tls.config))),
        ..plain(Duration::ZERO)
    });
    let tls_url = format!("https://{}/", tls.addr());
    let tls_per_response = curl_response_bytes(&tls_url, &[], Some(&cert.path));
    let args = ["--rate", "50", "--duration", "1s"];
    for engine in engines() {
        let mut r = run_json(srv.addr(), "/", engine, &args, 0);
        assert_eq!(r.requests.ok, 50, "{engine}");
        assert_bytes(&r, per_response);
        // The text names the bytes; a run that moved none says nothing.
        let line = "\n  transfer: received ";
        assert!(metronome::report::text::render_text(&r).contains(line));
        r.transfer = Some(metronome::report::Transfer::default());
        assert!(!metronome::report::text::render_text(&r).contains(line));
        let r = run_tls_json(tls.addr(), "/", engine, &args, 0, &cert.path);
        assert_eq!(r.requests.ok, 50, "{engine}");
        assert_bytes(&r, tls_per_response);
    }
    srv.stop();
    tls.stop();
}

fn scratch(test: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("metronome-intervals-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Two shards of one stream run merge into rows whose TTFT histograms are
/// the sum of the shards' (so their quantiles are exact, not the larger
/// of two), whose in-flight counts, bytes and tokens per second add up,
/// and into a `transfer` that adds up.
#[test]
fn merge_adds_the_stream_rows_exactly() {
    let srv = server(sse());
    let dir = scratch("merge");
    let addr: SocketAddr = srv.addr();
    let url = format!("http://{addr}/v1/chat/completions");
    let shard = |k: &str| {
        let path = dir.join(format!("shard{}.json", &k[..1]));
        let out = metronome(&[
            "run",
            &url,
            "--openai",
            "--model",
            "metronome",
            "--rate",
            "40",
            "--duration",
            "1s",
            "--interval",
            "250ms",
            "--shard",
            k,
            "--quiet",
            "--out",
            path.to_str().unwrap(),
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        path
    };
    let (a, b) = (shard("0/2"), shard("1/2"));
    let merged_path = dir.join("merged.json");
    let out = metronome(&[
        "merge",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        merged_path.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (ra, rb) = (common::read_report(&a), common::read_report(&b));
    let m = common::read_report(&merged_path);
    let (ta, tb, tm) = (
        ra.transfer.unwrap(),
        rb.transfer.unwrap(),
        m.transfer.unwrap(),
    );
    assert_eq!(tm.received_bytes, ta.received_bytes + tb.received_bytes);
    assert_eq!(tm.sent_bytes, ta.sent_bytes + tb.sent_bytes);
    let (rows_a, rows_b, rows_m) = (rows(&ra), rows(&rb), rows(&m));
    assert_eq!(rows_m.len(), rows_a.len().max(rows_b.len()));
    let mut exact = 0;
    for (i, row) in rows_m.iter().enumerate() {
        let (x, y) = (rows_a.get(i), rows_b.get(i));
        let both = |f: fn(&IntervalReport) -> u64| x.map_or(0, |r| f(r)) + y.map_or(0, |r| f(r));
        assert_eq!(row.in_flight, both(|r| r.in_flight), "row {i}");
        assert_eq!(row.bytes_received, both(|r| r.bytes_received), "row {i}");
        assert_eq!(row.bytes_sent, both(|r| r.bytes_sent), "row {i}");
        let mut h = x.map(|r| ttft(r)).unwrap_or_default();
        h.merge(&y.map(|r| ttft(r)).unwrap_or_default());
        let mh = ttft(row);
        assert_eq!(
            mh.buckets().collect::<Vec<_>>(),
            h.buckets().collect::<Vec<_>>(),
            "row {i}"
        );
        if let Some(max) = row.ttft_max_ms {
            let max_ns = (max * 1e6).round() as u64;
            let q = |q: f64| metronome::report::ms(h.quantile(q).min(max_ns));
            assert_eq!(row.ttft_p50_ms, Some(q(0.5)), "row {i}");
            assert_eq!(row.ttft_p99_ms, Some(q(0.99)), "row {i}");
            exact += 1;
        }
    }
    assert!(exact >= 4, "{exact} rows with TTFT");
    srv.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
