//! Pages of real runs against the embedded server (constant; Poisson with
//! errors and thresholds; an `--openai` stream; stream intervals; a merge
//! of two shards; stages with a stall; a conversation; a trace) loaded in
//! Chromium and equal to their JSON reports; bad `--html` input is a usage
//! error.

use super::*;

#[test]
fn constant_run_page() {
    let srv = server(plain(Duration::from_millis(1)));
    let url = format!("http://{}/", srv.addr());
    let (page, r) = run_page("constant", &url, &["--rate", "200", "--duration", "2s"], 0);
    if let Some(exe) = exe_or_skip("the constant run") {
        check_report_page(&exe, &page, &r);
    }
}

#[test]
fn poisson_run_with_errors_and_thresholds_page() {
    let srv = server(ServeConfig {
        error_every: Some(5),
        ..plain(Duration::from_millis(1))
    });
    let url = format!("http://{}/", srv.addr());
    let (page, r) = run_page(
        "poisson-errors",
        &url,
        &[
            "--rate",
            "200",
            "--duration",
            "2s",
            "--arrival",
            "poisson",
            "--threshold",
            "error_rate<0.01",
            "--threshold",
            "latency.p99<5s",
        ],
        3,
    );
    assert!(r.requests.errors > 0 && r.thresholds.iter().any(|t| !t.passed));
    if let Some(exe) = exe_or_skip("the Poisson run") {
        check_report_page(&exe, &page, &r);
    }
}

/// Few samples (issue 38, item 7): at 5 req/s for 1 s the page shows
/// what the text shows, by the one rule: latency p50 and max, `-` for p90
/// to p99.9 (the tiles' p99 too, not the max), and `latency.p99<1us` is
/// not evaluated ("too few samples: 5; a p99 needs 100", exit 3) rather
/// than breached at the max. A refused target's tiles are all `-`, not
/// "0 ms".
#[test]
fn few_samples_show_the_same_on_the_page_and_in_the_text() {
    let srv = server(plain(Duration::from_millis(1)));
    let url = format!("http://{}/", srv.addr());
    let (page, r) = run_page(
        "few-samples",
        &url,
        &[
            "--rate",
            "5",
            "--duration",
            "1s",
            "--threshold",
            "latency.p99<1us",
        ],
        3,
    );
    assert_eq!(r.metrics.latency.count, 5);
    let t = &r.thresholds[0];
    assert_eq!(
        (t.passed, t.not_evaluated.as_deref()),
        (false, Some("too few samples: 5; a p99 needs 100"))
    );
    let text = metronome::report::text::render_text(&r);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("latency "))
        .unwrap();
    let cells: Vec<&str> = line.split_whitespace().collect();
    // latency, count, min, p50, p90, p95, p99, p99.9, max, mean
    assert_eq!(&cells[4..8], ["-", "-", "-", "-"], "{line}");
    assert!(cells[3] != "-" && cells[8] != "-", "{line}");
    assert!(
        text.contains("NOT EVALUATED (too few samples: 5; a p99 needs 100)"),
        "{text}"
    );
    // The refused target: nothing succeeded.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dead = format!("http://127.0.0.1:{port}/");
    let refused = artifacts().join("refused.html");
    let refused_json = artifacts().join("refused.json");
    ok(
        &[
            "run",
            &dead,
            "--quiet",
            "--engine",
            "std",
            "--rate",
            "5",
            "--duration",
            "1s",
            "--out",
            p(&refused_json),
            "--html",
            p(&refused),
        ],
        1,
    );
    assert_eq!(read(&refused_json).1.metrics.latency.count, 0);
    if let Some(exe) = exe_or_skip("the few-samples runs") {
        let (check, _) = check_report_page(&exe, &page, &r);
        let row = &table_rows(&check, "latency-table")[0];
        // metric, count, min, mean, p50, p90, p95, p99, p99.9, max
        assert_eq!(&row[5..9], ["-", "-", "-", "-"], "{row:?}");
        assert_eq!(row[4], fnum(r.metrics.latency.p50));
        let v = check["verdict"].as_str().unwrap();
        assert!(
            v.contains("latency p99-") && v.contains("NOT EVALUATED"),
            "{v}"
        );
        let (check, _) = load(&exe, &refused);
        let v = check["verdict"].as_str().unwrap();
        for k in ["p50", "p99", "max"] {
            assert!(v.contains(&format!("latency {k}-")), "{v}");
        }
        assert!(!v.contains("0 ms"), "{v}");
    }
}

#[test]
fn openai_stream_page() {
    let srv = server(ServeConfig {
        sse: true,
        tokens: 16,
        ttft: Duration::from_millis(20),
        itl: Duration::from_millis(5),
        ..ServeConfig::default()
    });
    let url = format!("http://{}/", srv.addr());
    let (page, r) = run_page(
        "stream",
        &url,
        &[
            "--openai",
            "--rate",
            "10",
            "--duration",
            "2s",
            "--slo",
            "ttft=30ms",
            "--slo",
            "tpot=10ms",
            "--metrics-compat",
            "vllm,guidellm,aiperf",
        ],
        0,
    );
    assert!(r.metrics.ttft.count > 0 && r.compat.len() == 3);
    // aiperf's throughput metrics are tokens/s: a chart and table of their
    // own, never on the ms axis.
    let aiperf = r.compat.iter().find(|c| c.peer == "aiperf").unwrap();
    assert!(aiperf.metrics.keys().any(|k| k.contains("throughput")));
    if let Some(exe) = exe_or_skip("the stream run") {
        let (_, dom) = check_report_page(&exe, &page, &r);
        for peer in ["vllm", "guidellm", "aiperf"] {
            assert!(dom.contains(&format!("As {peer} defines them")), "{peer}");
        }
        assert!(dom.contains("The aiperf throughput metrics by percentile (tokens/s)"));
        assert!(dom.contains(&format!("Goodput {}", fpct(r.goodput))));
    }
}

/// A stream run's page draws the interval series of issue 31 (TTFT p50
/// and p99, tokens/s, in flight, bytes), each with a point per interval and
/// the report's exact values on hover, and states the transfer totals.
#[test]
fn stream_interval_series_page() {
    let srv = server(ServeConfig {
        sse: true,
        tokens: 8,
        ttft: Duration::from_millis(30),
        itl: Duration::from_millis(20),
        ..ServeConfig::default()
    });
    let url = format!("http://{}/", srv.addr());
    let (page, r) = run_page(
        "stream-intervals",
        &url,
        &[
            "--openai",
            "--rate",
            "20",
            "--duration",
            "2s",
            "--interval",
            "250ms",
        ],
        0,
    );
    assert_eq!(r.intervals.len(), 8);
    let t = r.transfer.unwrap();
    assert!(t.received_bytes > 0 && t.sent_bytes > 0);
    if let Some(exe) = exe_or_skip("the stream interval series") {
        let (check, dom) = check_report_page(&exe, &page, &r);
        let charts = chart_list(&check);
        // Every row (the drain's too, issue 38); TTFT where one came.
        let rows: Vec<_> = r.intervals.iter().chain(&r.drain).collect();
        let with_ttft = rows.iter().filter(|v| v.ttft_p50_ms.is_some()).count();
        assert!(with_ttft >= 8, "{with_ttft}");
        for (id, series, n) in [
            ("ts-ttft", vec!["TTFT p50", "TTFT p99"], with_ttft),
            ("ts-tokens", vec!["tokens/s"], rows.len()),
            ("ts-inflight", vec!["in flight"], rows.len()),
            ("ts-transfer", vec!["received/s", "sent/s"], rows.len()),
        ] {
            let (_, got) = charts
                .iter()
                .find(|(c, _)| c == id)
                .unwrap_or_else(|| panic!("no chart {id}: {charts:?}"));
            let want: Series = series.iter().map(|s| (s.to_string(), n)).collect();
            assert_eq!(got, &want, "{id}");
        }
        // Bytes by the library's formatter (itself held to the golden
        // vectors the page's is).
        use metronome::report::num::bytes;
        let line = format!(
            "Transfer: received {} ({}/s), sent {} ({}/s) over the real window of {} s.",
            bytes(t.received_bytes),
            bytes(t.received_per_s.round() as u64),
            bytes(t.sent_bytes),
            bytes(t.sent_per_s.round() as u64),
            fnum(r.window.window_s)
        );
        assert!(unescape(&dom).contains(&line), "no line '{line}'");
    }
}

#[test]
fn merge_page() {
    let srv = server(plain(Duration::from_millis(1)));
    let url = format!("http://{}/", srv.addr());
    let dir = artifacts();
    let mut shards = Vec::new();
    for k in 0..2 {
        let json = dir.join(format!("shard-{k}.json"));
        ok(
            &[
                "run",
                &url,
                "--rate",
                "200",
                "--duration",
                "1s",
                "--shard",
                &format!("{k}/2"),
                "--quiet",
                "--engine",
                "std",
                "--out",
                p(&json),
            ],
            0,
        );
        shards.push(json);
    }
    let merged = dir.join("merged.json");
    ok(
        &["merge", p(&shards[0]), p(&shards[1]), "--out", p(&merged)],
        0,
    );
    let page = dir.join("merged.html");
    ok(
        &["report", p(&merged), "--html", p(&page), "--format", "json"],
        0,
    );
    let (text, r) = read(&merged);
    check_static(&page, &text);
    assert_eq!(r.shard_starts.len(), 2);
    let Some(exe) = exe_or_skip("the merge") else {
        return;
    };
    let (check, _) = check_report_page(&exe, &page, &r);
    let first = r
        .shard_starts
        .iter()
        .map(|s| s.began_unix_ns())
        .min()
        .unwrap();
    let want: Vec<Vec<String>> = r
        .shard_starts
        .iter()
        .map(|s| {
            vec![
                s.shard.clone(),
                metronome::units::rfc3339_ns(s.start_unix_ns),
                s.start_unix_ns.to_string(),
                fnum(s.start_offset_ns as f64 / 1e6),
                fnum((s.began_unix_ns() - first) as f64 / 1e6),
            ]
        })
        .collect();
    assert_eq!(table_rows(&check, "shards-table"), want);
}

/// Bad input: a clear error and exit 2, never a panic.
#[test]
fn bad_input_is_a_usage_error() {
    let dir = tempdir("bad");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"schema\": \"nope\"}").unwrap();
    let out_page = dir.join("x.html");
    for file in [bad.clone(), dir.join("missing.json")] {
        let out = metronome(&["report", p(&file), "--html", p(&out_page)]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.starts_with("metronome: "), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    assert!(!out_page.exists());
    // An unwritable page: refused before anything is done (exit 2), the
    // flag and the path named.
    let (json, _) = {
        let r = dir.join("r.json");
        let md = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/report.md"))
            .unwrap();
        let example = md
            .split("```json")
            .nth(1)
            .unwrap()
            .split("```")
            .next()
            .unwrap();
        std::fs::write(&r, example).unwrap();
        (r, ())
    };
    let nowhere = dir.join("no/such/dir/x.html");
    let out = metronome(&["report", p(&json), "--html", p(&nowhere)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("--html {}: ", p(&nowhere))) && stderr.contains("does not exist"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A request mix over three stages (a linear ramp 0 -> 300, 300 -> 600,
/// then 600 steady) against a server that stalls for half a second: the
/// page's request-name and stage sections equal the JSON, the ramp is
/// drawn as offered against achieved (the offered line follows the
/// stages), and the verdict gives the stages' range beside the mean.
#[test]
fn mix_stages_and_stall_page() {
    let srv = server(ServeConfig {
        service: Duration::from_millis(1),
        stall_at: Some(Duration::from_millis(2200)),
        stall_for: Duration::from_millis(400),
        ..ServeConfig::default()
    });
    let url = format!("http://{}/", srv.addr());
    let mix = artifacts().join("mix.jsonl");
    std::fs::write(
        &mix,
        "{\"name\":\"home\",\"path\":\"/\",\"weight\":3}\n\
         {\"name\":\"search\",\"path\":\"/search?q=x\",\"weight\":1}\n",
    )
    .unwrap();
    let (page, r) = run_page(
        "mix-stages",
        &url,
        &[
            "--stages",
            "1s:300,3s:600,1s:600",
            "--requests",
            p(&mix),
            "--warm-up",
            "off",
        ],
        0,
    );
    assert_eq!(r.stages.len(), 3);
    assert_eq!(r.by_request.len(), 2);
    let offered: Vec<f64> = stage_points(&r).iter().map(|p| p.1).collect();
    assert_eq!(offered, [0.0, 300.0, 300.0, 600.0, 600.0, 600.0]);
    if let Some(exe) = exe_or_skip("the stages run") {
        let (check, _) = check_report_page(&exe, &page, &r);
        // ts-rate's offered series moves with the stages (its first
        // interval offers 150 req/s on average, its last 600).
        let width = r.intervals[1].start_s - r.intervals[0].start_s;
        let first = offered_in_interval(&r, 0, width).unwrap();
        let last = offered_in_interval(&r, r.intervals.len() - 1, width).unwrap();
        assert!(first < last, "{first} {last}");
        let rows = table_rows(&check, "stages-table");
        assert_eq!(rows[1][3], "300.0 → 600.0");
    }
}

/// A conversation run: the sessions section and one row per turn equal
/// the JSON; the verdict offers sessions/s and their planned turns.
#[test]
fn conversation_page() {
    let srv = server(ServeConfig {
        sse: true,
        tokens: 4,
        ttft: Duration::from_millis(5),
        itl: Duration::from_millis(2),
        ..ServeConfig::default()
    });
    let url = format!("http://{}/v1/chat/completions", srv.addr());
    let data = artifacts().join("conv.jsonl");
    std::fs::write(
        &data,
        "{\"turns\": [\"alpha one\", \"alpha two\", \"alpha three\"]}\n\
         {\"turns\": [\"beta only\"]}\n\
         {\"turns\": [\"gamma one\", \"gamma two\"]}\n",
    )
    .unwrap();
    let (page, r) = run_page(
        "conversation",
        &url,
        &[
            "--openai",
            "--model",
            "m",
            "--dataset",
            p(&data),
            "--think-time",
            "50ms",
            "--rate",
            "4",
            "--duration",
            "2s",
            "--warm-up",
            "off",
        ],
        0,
    );
    let s = r.sessions.expect("sessions");
    assert!(s.started > 0 && s.planned_turns > 0, "{s:?}");
    assert!(r.by_request.iter().any(|q| q.name == "turn-1"));
    if let Some(exe) = exe_or_skip("the conversation run") {
        let (_, dom) = check_report_page(&exe, &page, &r);
        assert!(dom.contains("<h2 id=\"sessions\">Sessions</h2>"));
        assert!(dom.contains("<h2 id=\"by-request\">Turns</h2>"));
    }
}

/// A replayed trace whose rate triples after its first second: the offered
/// line of "Requests per second" follows the trace (each interval's due
/// requests per second), not the run's mean.
#[test]
fn trace_page() {
    let srv = server(ServeConfig {
        sse: true,
        tokens: 4,
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        ..ServeConfig::default()
    });
    let url = format!("http://{}/v1/chat/completions", srv.addr());
    // 5 requests in the first second, 15 in the second.
    let stamps: Vec<u64> = (0..5)
        .map(|i| i * 200)
        .chain((0..15).map(|i| 1000 + i * 66))
        .collect();
    let text: String = stamps
        .iter()
        .enumerate()
        .map(|(i, t)| {
            format!("{{\"timestamp\": {t}, \"input_length\": 8, \"output_length\": 4, \"hash_ids\": [{i}]}}\n")
        })
        .collect();
    let trace = artifacts().join("trace.jsonl");
    std::fs::write(&trace, text).unwrap();
    let (page, r) = run_page(
        "trace",
        &url,
        &[
            "--openai",
            "--model",
            "m",
            "--trace",
            p(&trace),
            "--warm-up",
            "off",
        ],
        0,
    );
    assert!(r.arrival.trace.is_some());
    assert_eq!(r.requests.scheduled, 20);
    let width = r.intervals[1].start_s - r.intervals[0].start_s;
    let first = offered_in_interval(&r, 0, width).unwrap();
    let second = offered_in_interval(&r, 1, width).unwrap();
    assert!(first < second, "{first} {second}");
    if let Some(exe) = exe_or_skip("the trace run") {
        check_report_page(&exe, &page, &r);
    }
}
