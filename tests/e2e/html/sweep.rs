//! Sweep pages (`sweep`, and an automatic sweep of streams) loaded in
//! Chromium: charts, hovers, the knee, the steps table and the shown step's
//! report view equal to the sweep's JSON.

use super::*;

#[test]
fn sweep_page() {
    // A FIFO server of 5 ms serves 200 req/s at most: with 8 connections
    // the 400 req/s step waits for connections (pool_exhausted), the knee
    // (as in e2e_cli's sweep_knee_where_requests_wait_for_connections).
    let srv = server(plain(Duration::from_millis(5)));
    let url = format!("http://{}/", srv.addr());
    let dir = artifacts();
    let page = dir.join("sweep.html");
    let json = dir.join("sweep.json");
    ok(
        &[
            "sweep",
            &url,
            "--rates",
            "50,400",
            "--duration",
            "1s",
            "--connections",
            "8",
            "--max-connections",
            "8",
            "--timeout",
            "10s",
            "--quiet",
            "--engine",
            "std",
            "--out",
            p(&json),
            "--html",
            p(&page),
        ],
        0,
    );
    let text = std::fs::read_to_string(&json).unwrap();
    let sw: Sweep = serde_json::from_str(&text).unwrap();
    check_static(&page, &text);
    let from_json = dir.join("sweep-from-json.html");
    ok(&["report", p(&json), "--html", p(&from_json)], 0);
    check_static(&from_json, &text);
    let Some(exe) = exe_or_skip("the sweep") else {
        return;
    };
    check_sweep_page(&exe, &page, &sw);
}

/// Loads a sweep's page and checks it against the sweep: charts and their
/// points, hovers, the knee, stream charts for stream sweeps, the steps
/// table, and the shown step's report view.
fn check_sweep_page(exe: &Path, page: &Path, sw: &Sweep) {
    let (exe, page) = (exe.to_path_buf(), page.to_path_buf());
    let (check, dom) = load(&exe, &page);
    check_clean(&check, &page);
    assert_eq!(check["kind"], "sweep");
    let stream = sw
        .steps
        .iter()
        .any(|s| s.workload.is_some() || s.metrics.ttft.count > 0);
    if let Some(k) = sw.knee {
        let label = format!("knee: {} req/s", fnum(sw.steps[k].offered_rps));
        let charts = if stream { 5 } else { 2 };
        let page_only = &dom[..dom.find("<pre id=\"selfcheck\"").unwrap()];
        assert_eq!(
            page_only.matches(&label).count(),
            charts,
            "marked on every chart"
        );
    }
    let supported = |m: &Metric, q: f64| metronome::report::enough::enough(m.count, q);
    type Pick = (&'static str, f64, fn(&Metric) -> f64);
    let picks: [Pick; 3] = [
        ("p50", 0.5, |m| m.p50),
        ("p99", 0.99, |m| m.p99),
        ("p99.9", 0.999, |m| m.p999),
    ];
    let steps_of = |q: f64| -> Vec<&Report> {
        sw.steps
            .iter()
            .filter(|s| supported(&s.metrics.latency, q))
            .collect()
    };
    // The sweep's charts, then the shown step's (the knee's, else the last).
    let shown = &sw.steps[sw.knee.unwrap_or(sw.steps.len() - 1)];
    let mut want = vec![
        (
            "sweep-latency".to_string(),
            picks
                .iter()
                .map(|(n, q, _)| (n.to_string(), steps_of(*q).len()))
                .collect::<Series>(),
        ),
        (
            "sweep-rate".to_string(),
            vec![
                ("achieved".to_string(), sw.steps.len()),
                ("throughput (ok/s)".to_string(), sw.steps.len()),
            ],
        ),
    ];
    // Stream sweeps: TTFT and ITL (p50, p99, steps with values) and
    // output tokens/s against the offered rate.
    // The steps whose `k` values are enough for the quantile `q`.
    let with = |k: &str, q: f64| -> Vec<&Report> {
        sw.steps
            .iter()
            .filter(|s| supported(s.metrics.get(k).unwrap(), q))
            .collect()
    };
    if stream {
        for (id, k) in [("sweep-ttft", "ttft"), ("sweep-itl", "itl")] {
            want.push((
                id.to_string(),
                vec![
                    ("p50".to_string(), with(k, 0.5).len()),
                    ("p99".to_string(), with(k, 0.99).len()),
                ],
            ));
        }
        want.push((
            "sweep-tokens".to_string(),
            vec![("output tokens/s".to_string(), sw.steps.len())],
        ));
    }
    want.extend(expected_report_charts(shown));
    assert_eq!(chart_list(&check), want);
    let steps_table: Vec<Vec<String>> = table_rows(&check, "steps-table")
        .into_iter()
        .map(|row| row[..9].to_vec())
        .collect();
    let want_steps: Vec<Vec<String>> = sw
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let m = &s.metrics.latency;
            let knee = if sw.knee == Some(i) { " (knee)" } else { "" };
            vec![
                format!("{}{knee}", fnum(s.offered_rps)),
                fnum(s.achieved_rps),
                fcount(s.requests.errors),
                fcount(s.requests.dropped),
                fq(m.count, 0.5, m.p50),
                fq(m.count, 0.99, m.p99),
                fq(m.count, 0.999, m.p999),
                fq(m.count, 0.0, m.max),
                fq(s.metrics.send_lag.count, 0.99, s.metrics.send_lag.p99),
            ]
        })
        .collect();
    assert_eq!(steps_table, want_steps);
    if let Some(a) = &sw.auto {
        let want = format!(
            "the synchronous probe (one request at a time) sustained {} req/s, the throughput probe ({} worker{}) {} req/s",
            fnum(a.synchronous_rps),
            a.throughput_workers,
            if a.throughput_workers == 1 { "" } else { "s" },
            fnum(a.throughput_rps)
        );
        assert!(
            check["verdict"].as_str().unwrap().contains(&want),
            "'{want}' not in {}",
            check["verdict"]
        );
    }
    check_sections(shown, &check);
    for (chart, si, i, text) in hovers(&check) {
        match chart.as_str() {
            "sweep-latency" => {
                let (name, q, pick) = picks[si];
                let s = steps_of(q)[i];
                assert_eq!(after(&text, "offered "), fnum(s.offered_rps), "{text}");
                assert_eq!(
                    after(&text, &format!("{name} ")),
                    fnum(pick(&s.metrics.latency)),
                    "{text}"
                );
            }
            "sweep-rate" => {
                let s = &sw.steps[i];
                let (label, v) = if si == 0 {
                    ("achieved ", s.achieved_rps)
                } else {
                    ("throughput ", s.throughput_rps)
                };
                assert_eq!(after(&text, label), fnum(v), "{text}");
            }
            "sweep-ttft" | "sweep-itl" => {
                let k = if chart == "sweep-ttft" { "ttft" } else { "itl" };
                let s = with(k, [0.5, 0.99][si])[i];
                let m = s.metrics.get(k).unwrap();
                let (name, v) = if si == 0 {
                    ("p50 ", m.p50)
                } else {
                    ("p99 ", m.p99)
                };
                assert_eq!(after(&text, "offered "), fnum(s.offered_rps), "{text}");
                assert_eq!(after(&text, name), fnum(v), "{text}");
            }
            "sweep-tokens" => {
                let s = &sw.steps[i];
                assert_eq!(
                    after(&text, "output "),
                    fnum(s.output_tokens_per_s),
                    "{text}"
                );
            }
            other => check_report_hover(shown, other, si, i, &text),
        }
    }
    let verdict = check["verdict"].as_str().unwrap();
    match sw.knee {
        Some(k) => {
            let why = metronome::report::sweep::fell_behind(&sw.steps[k]).unwrap();
            assert!(
                verdict.contains(&format!(
                    "Knee at {} req/s (step {} of {}): {why}.",
                    fnum(sw.steps[k].offered_rps),
                    k + 1,
                    sw.steps.len()
                )),
                "{verdict}"
            );
        }
        None => assert!(verdict.contains("Every step kept up with its schedule.")),
    }
    screenshot(&exe, &page, 3000);
}

/// `sweep --auto` of a stream: the probes are named, and the page charts
/// TTFT, ITL and output tokens/s against the offered rate.
#[test]
fn auto_stream_sweep_page() {
    let srv = server(ServeConfig {
        sse: true,
        tokens: 8,
        ttft: Duration::from_millis(10),
        itl: Duration::from_millis(2),
        ..ServeConfig::default()
    });
    let url = format!("http://{}/", srv.addr());
    let dir = artifacts();
    let page = dir.join("sweep-auto.html");
    let json = dir.join("sweep-auto.json");
    ok(
        &[
            "sweep",
            &url,
            "--openai",
            "--auto",
            "--auto-steps",
            "3",
            "--duration",
            "1s",
            "--max-concurrency",
            "4",
            "--quiet",
            "--engine",
            "std",
            "--out",
            p(&json),
            "--html",
            p(&page),
        ],
        0,
    );
    let text = std::fs::read_to_string(&json).unwrap();
    let sw: Sweep = serde_json::from_str(&text).unwrap();
    check_static(&page, &text);
    assert!(sw.auto.is_some() && sw.steps.len() == 3);
    assert!(sw.steps.iter().all(|s| s.metrics.ttft.count > 0));
    if let Some(exe) = exe_or_skip("the auto sweep") {
        check_sweep_page(&exe, &page, &sw);
    }
}

/// `report` reads what `run --repeat N --out F` writes (before: exit 2
/// with a 1,000-character serde message): the text summary (the one the
/// run printed), the JSON byte for byte, and `--html`, a page of the
/// whole document whose tables are the document's summary and runs.
#[test]
fn repeat_document_page() {
    let srv = server(plain(Duration::from_millis(1)));
    let url = format!("http://{}/", srv.addr());
    let dir = artifacts();
    let json = dir.join("repeat.json");
    let page = dir.join("repeat.html");
    let run = metronome(&[
        "run",
        &url,
        "--rate",
        "40",
        "--duration",
        "500ms",
        "--repeat",
        "2",
        "--quiet",
        "--engine",
        "std",
        "--out",
        p(&json),
    ]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = std::fs::read_to_string(&json).unwrap();
    let doc: metronome::report::repeat::Repeat = serde_json::from_str(&text).unwrap();
    assert_eq!(doc.runs.len(), 2);
    let shown = metronome(&["report", p(&json)]);
    assert_eq!(
        shown.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&shown.stdout),
        String::from_utf8_lossy(&run.stdout),
        "the summary the run printed"
    );
    let again = metronome(&["report", p(&json), "--format", "json"]);
    assert_eq!(String::from_utf8_lossy(&again.stdout), text);
    ok(&["report", p(&json), "--html", p(&page)], 0);
    check_static(&page, &text);
    let Some(exe) = exe_or_skip("the --repeat page") else {
        return;
    };
    let (check, _) = load(&exe, &page);
    check_clean(&check, &page);
    assert_eq!(check["kind"], "repeat");
    let rows = |id: &str| -> Vec<Vec<String>> {
        serde_json::from_value(check["tables"][id].clone()).unwrap()
    };
    let runs = rows("repeat-runs");
    assert_eq!(runs.len(), 2);
    for (row, r) in runs.iter().zip(&doc.runs) {
        assert_eq!(row[2], fcount(r.requests.scheduled));
        assert_eq!(row[3], fcount(r.requests.ok));
        let p99 = r
            .metrics
            .latency
            .exact
            .as_ref()
            .map_or(r.metrics.latency.p99, |e| e.p99);
        assert_eq!(row[7], fnum(p99), "the p99 of the text's run line");
    }
    let summary = rows("repeat-summary");
    assert_eq!(summary.len(), doc.summary.len());
    for (row, st) in summary.iter().zip(&doc.summary) {
        assert!(row[0].starts_with(&st.name), "{row:?}");
        assert_eq!((&row[1], &row[2]), (&fnum(st.mean), &fnum(st.ci95)));
    }
    screenshot(&exe, &page, 1200);
}
