//! The stream metrics of the report: exact percentiles where every sample
//! was kept, the peers' own percentiles of every request
//! (`--metrics-compat`), and `sweep --openai` showing TTFT, ITL and output
//! tokens/s per rate.

use super::*;

/// Exact percentiles beside the histogram's: against streams whose E2E
/// values all fall in one histogram bucket (about 1 s: 50 tokens 20 ms
/// apart), the histogram's p50, p99 and max agree (a bucket's top clamped
/// to the max), while the exact ones are order statistics of the samples:
/// within [min, max], ordered, never above the histogram's, over every
/// success; per-token ITL keeps its histogram only; a merge drops them.
#[test]
fn exact_percentiles_where_every_sample_was_kept() {
    let srv = ServeProcess::start(&["--sse", "--ttft", "5ms", "--itl", "20ms", "--tokens", "50"]);
    for engine in engines() {
        let dir =
            std::env::temp_dir().join(format!("metronome-exact-{}-{engine}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("r.json");
        let r = run_json(
            srv.addr,
            "/v1/chat/completions",
            engine,
            &[
                "--openai",
                "--rate",
                "8",
                "--duration",
                "2s",
                "--out",
                out.to_str().unwrap(),
            ],
            0,
        );
        let m = &r.metrics;
        for (name, metric) in [
            ("latency", &m.latency),
            ("service_time", &m.service_time),
            ("ttft", &m.ttft),
            ("tpot", &m.tpot),
        ] {
            let e = metric
                .exact
                .as_ref()
                .unwrap_or_else(|| panic!("{engine} {name}: no exact"));
            assert_eq!(e.count, metric.count, "{engine} {name}");
            assert_eq!(e.count, r.requests.ok, "{engine} {name}");
            let ordered = [metric.min, e.p50, e.p90, e.p95, e.p99, e.p999, metric.max];
            assert!(
                ordered.windows(2).all(|w| w[0] <= w[1]),
                "{engine} {name}: {ordered:?}"
            );
            assert!(
                e.p50 <= metric.p50 && e.p99 <= metric.p99,
                "{engine} {name}"
            );
        }
        assert!(
            m.itl.exact.is_none(),
            "{engine}: per-token ITL is histogram only"
        );
        // Every E2E in one bucket: the histogram cannot tell p50 from max.
        if m.latency.p50 == m.latency.max {
            let e = m.latency.exact.as_ref().unwrap();
            assert!(e.p50 < m.latency.max, "{engine}: {e:?}");
        }
        let merged = dir.join("m.json");
        let o = metronome(&[
            "merge",
            out.to_str().unwrap(),
            "--out",
            merged.to_str().unwrap(),
        ]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let mr = common::read_report(&merged);
        assert!(mr.metrics.latency.exact.is_none(), "a merge has no samples");
        assert_eq!(mr.metrics.latency.count, m.latency.count);
    }
}

/// `--metrics-compat` on a bounded run: every per-request metric of each
/// view carries the peer's own percentiles over every sample (numpy's
/// linear for vLLM and aiperf, guidellm's cumulative weight share), per-
/// chunk ones none. Checked independently of the samples path: with three
/// requests, the histogram's exact min, max and mean give all three
/// values (the middle one is 3 x mean - min - max), and numpy's
/// `percentile` of three sorted values is x2 + (2q - 1)(x3 - x2) above the
/// median. A merge drops them, and the note says so.
#[test]
fn compat_views_take_the_peers_percentiles_of_every_request() {
    let srv = ServeProcess::start(&["--sse", "--ttft", "5ms", "--itl", "10ms", "--tokens", "4"]);
    for engine in engines() {
        let dir =
            std::env::temp_dir().join(format!("metronome-compat-{}-{engine}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("r.json");
        let r = run_json(
            srv.addr,
            "/v1/chat/completions",
            engine,
            &[
                "--openai",
                "--rate",
                "3",
                "--duration",
                "1s",
                "--metrics-compat",
                "vllm,guidellm,aiperf",
                "--out",
                out.to_str().unwrap(),
            ],
            0,
        );
        assert_eq!(r.requests.ok, 3, "{engine}");
        let linear = |x: [f64; 3], q: f64| {
            let pos = q * 2.0;
            let lo = pos.floor() as usize;
            x[lo] + (pos - lo as f64) * (x[(lo + 1).min(2)] - x[lo])
        };
        let nearest = |x: [f64; 3], q: f64| x[((q * 3.0 - 1e-9).ceil() as usize).clamp(1, 3) - 1];
        for view in &r.compat {
            let per_chunk = ["itl", "inter_chunk_latency"];
            for (name, m) in &view.metrics {
                let ctx = format!("{engine} {}.{name}", view.peer);
                if per_chunk.contains(&name.as_str()) {
                    assert!(m.exact.is_none(), "{ctx}: per chunk, histogram only");
                    continue;
                }
                let e = m
                    .exact
                    .as_ref()
                    .unwrap_or_else(|| panic!("{ctx}: no exact"));
                assert_eq!(e.count, m.count, "{ctx}");
                // guidellm's per-token metrics count each request's tokens
                // (equal here), the others one value per request.
                let weight = m.count / 3;
                assert_eq!(m.count, 3 * weight, "{ctx}");
                let x = [m.min, 3.0 * m.mean - m.min - m.max, m.max];
                let (method, want): (&str, &dyn Fn(f64) -> f64) = match view.peer.as_str() {
                    "guidellm" => ("weighted_rank", &|q| nearest(x, q)),
                    _ => ("linear", &|q| linear(x, q)),
                };
                assert_eq!(e.method.as_str(), method, "{ctx}");
                for (q, got) in [(0.5, e.p50), (0.9, e.p90), (0.99, e.p99), (0.999, e.p999)] {
                    let w = want(q);
                    // The mean is the histogram's sum over 3, ns to ms.
                    assert!(
                        (got - w).abs() < 1e-6 * w.max(1.0),
                        "{ctx} q {q}: {got} vs {w} ({x:?})"
                    );
                }
            }
            let note = view.notes.last().unwrap();
            assert!(note.starts_with("percentiles: "), "{engine} {note}");
        }
        // A merge keeps the histograms, not the samples: the note follows.
        let merged = dir.join("m.json");
        let o = metronome(&[
            "merge",
            out.to_str().unwrap(),
            "--out",
            merged.to_str().unwrap(),
        ]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let mr = common::read_report(&merged);
        for view in &mr.compat {
            assert!(view.metrics.values().all(|m| m.exact.is_none()), "{engine}");
            let note = view.notes.last().unwrap();
            assert!(
                note.starts_with("percentiles are histogram buckets"),
                "{engine} {note}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// `sweep --openai` (issue 31): the table shows each step's TTFT and ITL
/// p50/p99 and output tokens/s against the offered rate, as guidellm's
/// main table does, each cell the document's own number through the
/// shared formatter (`-` where a p99 has under 100 samples); the
/// discovered model is named once for the whole sweep, not per step.
#[test]
fn sweep_of_streams_shows_ttft_itl_and_tokens_per_rate() {
    use metronome::report::num::num;
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
    let out_path =
        std::env::temp_dir().join(format!("metronome-sweep-sse-{}.json", std::process::id()));
    let url = format!("http://{}/v1", srv.addr);
    let out = metronome(&[
        "sweep",
        &url,
        "--openai",
        "--output-len",
        "4",
        "--ignore-eos",
        "--rates",
        "25,50",
        "--duration",
        "2s",
        "--out",
        out_path.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr.matches("metronome: model: org/Served-1B").count(),
        1,
        "{stderr}"
    );
    assert_eq!(stderr.matches("sweep step ").count(), 2, "{stderr}");
    let s: metronome::report::sweep::Sweep =
        serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    let _ = std::fs::remove_file(&out_path);
    assert_eq!(s.steps.len(), 2);
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let head = lines
        .iter()
        .position(|l| l.contains("ttft p50"))
        .unwrap_or_else(|| panic!("no stream table: {text}"));
    assert_eq!(
        lines[head].split_whitespace().collect::<Vec<_>>(),
        [
            "offered/s",
            "ttft",
            "p50",
            "ttft",
            "p99",
            "itl",
            "p50",
            "itl",
            "p99",
            "out",
            "tokens/s"
        ],
        "{text}"
    );
    for (i, r) in s.steps.iter().enumerate() {
        let (ttft, itl) = (&r.metrics.ttft, &r.metrics.itl);
        // 25 and 50 req/s for 2 s; 4 tokens each, 3 gaps between them.
        assert_eq!(ttft.count, [50, 100][i], "{text}");
        assert_eq!(itl.count, [150, 300][i], "{text}");
        assert!(
            ttft.p50 >= 5.0,
            "serve waits 5 ms before the first token: {ttft:?}"
        );
        assert!(r.output_tokens_per_s > 0.0, "{r:?}");
        let ms = |v: f64| format!("{} ms", num(v));
        let want: String = [
            num(r.offered_rps),
            ms(ttft.p50),
            // A p99 needs 100 samples: the 25 req/s step's 50 are too few.
            if i == 0 {
                "-".to_string()
            } else {
                ms(ttft.p99)
            },
            ms(itl.p50),
            ms(itl.p99),
            num(r.output_tokens_per_s),
        ]
        .join(" ");
        let want: Vec<&str> = want.split_whitespace().collect();
        assert_eq!(
            lines[head + 1 + i].split_whitespace().collect::<Vec<_>>(),
            want,
            "{text}"
        );
    }
}
