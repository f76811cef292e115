//! Every stream shape of `tests/streams/` (the golden streams built with the
//! `openai` package's types), served by `metronome serve --sse --shape`
//! over loopback and measured by `metronome run --openai` on both engines:
//! success or the right error kind, and the metrics the shape implies
//! (docs/metrics.md), within bounds that hold on a loaded machine. The
//! exact values on a virtual clock are in core/tests/golden/shapes.rs.

use crate::common;

use std::time::Duration;

use common::{engines, run_json, server};
use metronome::report::Report;
use metronome::serve::ServeConfig;
use metronome::serve::Shape;

/// Server TTFT and ITL: event 0 with the head, event k at 50 + (k-1)*25 ms
/// (gaps wide against the scheduling jitter of a loaded machine).
const TTFT_MS: f64 = 50.0;
const ITL_MS: f64 = 25.0;
/// Slack for a pace or a gap (a difference of two arrival times) on a
/// loaded 2-core machine; the checks read medians of 10 requests, so a few
/// late ones do not decide.
const TOL: f64 = 10.0;
/// How late a time from the send may be (a server thread woken late on a
/// machine with a load average of 10 on 2 cores).
const LATE: f64 = 40.0;
/// Requests per run: 20/s for 0.5 s.
const N: u64 = 10;

fn run_shape(shape: Shape, engine: &str, extra: &[&str], code: i32) -> Report {
    let srv = server(ServeConfig {
        sse: true,
        shape,
        service: Duration::ZERO,
        ttft: Duration::from_millis(TTFT_MS as u64),
        itl: Duration::from_millis(ITL_MS as u64),
        ..ServeConfig::default()
    });
    let mut args = vec!["--openai", "--rate", "20", "--duration", "500ms"];
    args.extend_from_slice(extra);
    let r = run_json(srv.addr(), "/", engine, &args, code);
    srv.stop();
    r
}

/// A pace or a gap: within TOL.
fn near(what: &str, got: f64, want: f64) {
    assert!(
        got >= want - TOL && got <= want + TOL,
        "{what}: {got:.3} ms, want {want:.3} (+-{TOL})"
    );
}

/// A time from the send: never early (the server cannot send before its
/// due time), late by at most LATE.
fn after(what: &str, got: f64, want: f64) {
    assert!(
        got >= want - 1.0 && got <= want + LATE,
        "{what}: {got:.3} ms, want {want:.3} (-1, +{LATE})"
    );
}

/// (shape, tokens per stream, then in ITLs: TPOT, tail, time to first
/// answer after the TTFT) for the shapes that succeed; docs/metrics.md
/// explains each.
const OK_SHAPES: &[(Shape, u64, f64, f64, f64)] = &[
    (Shape::Openai, 5, 1.0, 3.0, 0.0),
    (Shape::Vllm, 8, 3.0 / 7.0, 3.0, 0.0),
    (Shape::Continuous, 6, 0.8, 3.0, 0.0),
    (Shape::Llamacpp, 5, 1.0, 2.0, 0.0),
    (Shape::Reasoning, 5, 1.0, 3.0, 3.0),
    (Shape::Tools, 7, 0.5, 3.0, 0.0),
    (Shape::EmptyContent, 5, 1.0, 3.0, 0.0),
    (Shape::NoDone, 5, 1.0, 2.0, 0.0),
];

#[test]
fn every_stream_shape_succeeds_with_its_metrics() {
    for engine in engines() {
        for &(shape, tokens, tpot, tail, answer) in OK_SHAPES {
            let (tpot, tail, answer) = (tpot * ITL_MS, tail * ITL_MS, answer * ITL_MS);
            let r = run_shape(shape, engine, &[], 0);
            let ctx = format!("{engine} {shape:?}");
            let q = &r.requests;
            assert_eq!((q.sent, q.ok, q.errors), (N, N, 0), "{ctx}: {:?}", r.errors);
            let m = &r.metrics;
            after(&format!("{ctx} ttft"), m.ttft.p50, TTFT_MS);
            after(&format!("{ctx} ttfat"), m.ttfat.p50, TTFT_MS + answer);
            near(
                &format!("{ctx} ttfat - ttft"),
                m.ttfat.p50 - m.ttft.p50,
                answer,
            );
            near(&format!("{ctx} tpot"), m.tpot.p50, tpot);
            near(&format!("{ctx} per-token itl"), m.itl.p50, tpot);
            near(&format!("{ctx} tail"), m.tail.p50, tail);
            let tokens_seen = (r.output_tokens_per_s * r.window.window_s).round() as u64;
            assert_eq!(tokens_seen, N * tokens, "{ctx}");
            let without_done = if shape == Shape::NoDone { N } else { 0 };
            assert_eq!(q.ok_without_done, without_done, "{ctx}");
        }
    }
}

/// `content: ""` chunks: the per-chunk gap is twice the per-token ITL.
#[test]
fn empty_content_chunks_spread_tokens() {
    for engine in engines() {
        let r = run_shape(Shape::EmptyContent, engine, &[], 0);
        let m = &r.metrics;
        near(
            &format!("{engine} itl_chunk"),
            m.itl_chunk.p50,
            2.0 * ITL_MS,
        );
        near(&format!("{engine} itl"), m.itl.p50, ITL_MS);
        assert_eq!((m.itl_chunk.count, m.itl.count), (2 * N, 4 * N), "{engine}");
    }
}

/// The completions stream: the first event is a token, with the head.
#[test]
fn completions_stream_text_is_content() {
    for engine in engines() {
        let r = run_shape(Shape::Completions, engine, &[], 0);
        assert_eq!(r.requests.ok, N, "{engine}: {:?}", r.errors);
        after(&format!("{engine} ttft"), r.metrics.ttft.p50, 0.0);
        // Tokens at 0, TTFT, +1, +2, +3 ITL: (TTFT + 3 ITL) / 4.
        let tpot = (TTFT_MS + 3.0 * ITL_MS) / 4.0;
        near(&format!("{engine} tpot"), r.metrics.tpot.p50, tpot);
    }
}

/// --metrics-compat vllm,guidellm,aiperf: the three peers' views of one
/// run, in the order given, each checked against the server's schedule
/// (the openai shape: the role chunk with the head, token k at
/// TTFT + (k - 1) ITL, then the finish chunk, the usage chunk (5 tokens)
/// and `[DONE]`, one ITL apart) and, where two views share a definition,
/// against each other exactly.
#[test]
fn metrics_compat_reports_the_peers_definitions() {
    for engine in engines() {
        let r = run_shape(
            Shape::Openai,
            engine,
            &["--metrics-compat", "vllm,guidellm,aiperf"],
            0,
        );
        let peers: Vec<&str> = r.compat.iter().map(|c| c.peer.as_str()).collect();
        assert_eq!(peers, ["vllm", "guidellm", "aiperf"], "{engine}");
        let (c, g, a) = (&r.compat[0], &r.compat[1], &r.compat[2]);

        let v = |k: &str| c.metrics[k].p50;
        // vLLM: TTFT at the role chunk (with the head), E2E at the finish
        // chunk (TTFT + 5 ITL), TPOT (E2E - TTFT) / 4, ITL over the 6 gaps
        // between chunks with choices: one of TTFT, five of ITL.
        let finish = TTFT_MS + 5.0 * ITL_MS;
        after(&format!("{engine} vllm ttft"), v("ttft"), 0.0);
        after(&format!("{engine} vllm e2el"), v("e2el"), finish);
        near(&format!("{engine} vllm tpot"), v("tpot"), finish / 4.0);
        near(&format!("{engine} vllm itl p50"), v("itl"), ITL_MS);
        let mean = c.metrics["itl"].mean;
        near(&format!("{engine} vllm itl mean"), mean, finish / 6.0);
        assert_eq!(c.metrics["itl"].count, 6 * N, "{engine}");
        // vLLM stops at the finish chunk, 2 ITL before [DONE]: compared on
        // the least delayed of each (a loaded machine only makes times late).
        let least = r.metrics.latency.min - c.metrics["e2el"].min;
        near(&format!("{engine} e2e - vllm e2el"), least, 2.0 * ITL_MS);
        assert!(c.request_throughput_rps > 0.0);

        let gv = |k: &str| g.metrics[k].p50;
        after(
            &format!("{engine} guidellm ttft"),
            gv("time_to_first_token_ms"),
            TTFT_MS,
        );
        near(
            &format!("{engine} guidellm itl"),
            gv("inter_token_latency_ms"),
            ITL_MS,
        );
        // (last token - send) / tokens = (TTFT + 4 ITL) / 5.
        let tpot = (TTFT_MS + 4.0 * ITL_MS) / 5.0;
        near(
            &format!("{engine} guidellm tpot"),
            gv("time_per_output_token_ms"),
            tpot,
        );
        let e2e = TTFT_MS + 7.0 * ITL_MS;
        after(
            &format!("{engine} guidellm e2e"),
            gv("request_latency"),
            e2e,
        );

        // aiperf: content responses are the 5 tokens (not the role, finish
        // or usage chunks): TTFT at the first token, TTST one ITL, request
        // latency at the last token (TTFT + 4 ITL, not [DONE]), ITL (last -
        // first) / (5 - 1) = ITL, 1000 / ITL tokens/s per user, and 4
        // inter-chunk gaps per request, pooled.
        let m = |k: &str| &a.metrics[k];
        let ctx = |k: &str| format!("{engine} aiperf {k}");
        after(&ctx("ttft"), m("time_to_first_token").p50, TTFT_MS);
        near(&ctx("ttst"), m("time_to_second_token").p50, ITL_MS);
        let last = TTFT_MS + 4.0 * ITL_MS;
        after(&ctx("request_latency"), m("request_latency").p50, last);
        near(&ctx("itl"), m("inter_token_latency").p50, ITL_MS);
        near(&ctx("icl"), m("inter_chunk_latency").p50, ITL_MS);
        let tps = m("output_token_throughput_per_user").p50;
        assert!(
            (tps - 1000.0 / ITL_MS).abs() <= 1000.0 / (ITL_MS - TOL) - 1000.0 / ITL_MS,
            "{engine} aiperf tokens/s/user {tps}"
        );
        for (k, n) in [
            ("time_to_first_token", N),
            ("time_to_second_token", N),
            ("request_latency", N),
            ("inter_token_latency", N),
            ("inter_chunk_latency", 4 * N),
            ("output_token_throughput_per_user", N),
        ] {
            assert_eq!(m(k).count, n, "{engine} aiperf {k} count");
        }
        // Shared definitions, exactly: aiperf's TTFT is guidellm's (first
        // output chunk - send); its per-request ITL is guidellm's (which
        // weighs each request by tokens - 1, equal here); its request
        // latency is guidellm's per-token TPOT times the tokens (each
        // rounded down to the ns: within 5 ns); the inter-chunk gaps of a
        // request add up to its ITL times 4 (within 4 ns).
        let gm = |k: &str| &g.metrics[k];
        // The same samples; each peer takes its own percentiles of them.
        let (at, gt) = (m("time_to_first_token"), gm("time_to_first_token_ms"));
        let histogram = |x: &metronome::report::Metric| metronome::report::Metric {
            exact: None,
            ..x.clone()
        };
        assert_eq!(histogram(at), histogram(gt), "{engine}");
        let (ae, ge) = (at.exact.as_ref().unwrap(), gt.exact.as_ref().unwrap());
        assert_eq!(
            (ae.method.as_str(), ge.method.as_str()),
            ("linear", "weighted_rank")
        );
        assert_eq!(ae.count, ge.count, "{engine}");
        assert_eq!(
            m("inter_token_latency").mean,
            gm("inter_token_latency_ms").mean,
            "{engine}"
        );
        let ns = 1e-6;
        let lat = m("request_latency").mean;
        let by_tpot = 5.0 * gm("time_per_output_token_ms").mean;
        assert!(
            (lat - by_tpot).abs() <= 5.0 * ns + 1e-9,
            "{engine}: {lat} vs {by_tpot}"
        );
        let icl = m("inter_chunk_latency").mean;
        let itl = m("inter_token_latency").mean;
        assert!(
            (icl - itl).abs() <= 1.0 * ns + 1e-9,
            "{engine}: {icl} vs {itl}"
        );
        // vLLM's and guidellm's rates over the real window; aiperf's over
        // its phase window: from one period (1 / 20 s) before the
        // measured zero to the last completion, so 50 ms longer than the
        // real window plus the first send's lag. Every stream is valid,
        // with 5 tokens.
        assert_eq!(c.window_s, r.window.window_s, "{engine}");
        assert_eq!(g.window_s, r.window.window_s, "{engine}");
        assert_eq!(c.request_throughput_rps, r.throughput_rps, "{engine}");
        assert_eq!(
            g.output_throughput_tokens_per_s, r.output_tokens_per_s,
            "{engine}"
        );
        let lead = a.window_s - r.window.window_s;
        assert!(
            (0.05 - 1e-9..0.05 + 0.1).contains(&lead),
            "{engine}: aiperf's window {} - the real window {}",
            a.window_s,
            r.window.window_s
        );
        assert_eq!(
            a.request_throughput_rps,
            r.requests.ok as f64 / a.window_s,
            "{engine}"
        );
        assert_eq!(
            a.output_throughput_tokens_per_s,
            (5 * r.requests.ok) as f64 / a.window_s,
            "{engine}"
        );
        // E2E output token throughput: 5 tokens / request_latency, per
        // request.
        let e2e = &a.metrics["e2e_output_token_throughput"];
        assert_eq!(e2e.count, r.requests.ok, "{engine}");
        let slowest = 5.0 / (m("request_latency").max / 1e3);
        assert!(
            (e2e.min - slowest).abs() <= 1e-3 * slowest,
            "{engine}: {} vs {slowest}",
            e2e.min
        );
    }
    // Repeated, in the order given, each peer once; without the flag: none.
    let r = run_shape(
        Shape::Openai,
        "std",
        &[
            "--metrics-compat",
            "aiperf",
            "--metrics-compat",
            "vllm,aiperf",
        ],
        0,
    );
    let peers: Vec<&str> = r.compat.iter().map(|c| c.peer.as_str()).collect();
    assert_eq!(peers, ["aiperf", "vllm"]);
    let r = run_shape(Shape::Openai, "std", &[], 0);
    assert!(r.compat.is_empty());
}

/// The text summary prints one block per view, in the order given.
#[test]
fn metrics_compat_text_has_one_block_per_view() {
    let srv = server(ServeConfig {
        sse: true,
        shape: Shape::Reasoning,
        ttft: Duration::from_millis(TTFT_MS as u64),
        itl: Duration::from_millis(ITL_MS as u64),
        ..ServeConfig::default()
    });
    let url = format!("http://{}/", srv.addr());
    let out = common::metronome(&[
        "run",
        &url,
        "--openai",
        "--rate",
        "20",
        "--duration",
        "200ms",
        "--metrics-compat",
        "guidellm,aiperf,vllm",
    ]);
    srv.stop();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let at = |p: &str| {
        text.find(&format!("as {p} defines them"))
            .unwrap_or_else(|| panic!("no {p} block in:\n{text}"))
    };
    assert!(
        at("guidellm") < at("aiperf") && at("aiperf") < at("vllm"),
        "{text}"
    );
    for row in [
        "aiperf.time_to_first_token",
        "aiperf.time_to_second_token",
        "aiperf.request_latency",
        "aiperf.inter_token_latency",
        "aiperf.inter_chunk_latency",
        "aiperf.output_token_throughput_per_user",
    ] {
        assert!(text.contains(row), "no {row} in:\n{text}");
    }
}

/// Shapes that fail: every request with one kind, and the run exits 1 with
/// the line naming it (checked by `run_json`).
#[test]
fn failing_shapes_are_errors_of_one_kind() {
    for engine in engines() {
        for (shape, kind) in [
            (Shape::Error, "stream_error"),
            (Shape::Json, "not_event_stream"),
        ] {
            let r = run_shape(shape, engine, &[], 1);
            assert_eq!(
                (r.requests.ok, r.errors.by_kind[kind]),
                (0, N),
                "{engine} {shape:?}: {:?}",
                r.errors
            );
        }
    }
}

/// Streams that outlast the schedule: output tokens/s is over the real
/// window (first send to last completion), not the schedule, and the late
/// share is warned about. 10 streams of 50 tokens (20 ms TTFT, 10 ms ITL:
/// about 0.51 s each) sent over 0.5 s: the last ends near 0.96 s, every one
/// after the schedule's end.
#[test]
fn throughput_is_over_the_real_window() {
    for engine in engines() {
        let srv = server(ServeConfig {
            sse: true,
            tokens: 50,
            service: Duration::ZERO,
            ttft: Duration::from_millis(20),
            itl: Duration::from_millis(10),
            ..ServeConfig::default()
        });
        let r = run_json(
            srv.addr(),
            "/",
            engine,
            &["--openai", "--rate", "20", "--duration", "500ms"],
            0,
        );
        srv.stop();
        let w = &r.window;
        assert_eq!(r.requests.ok, 10, "{engine}: {:?}", r.errors);
        assert!(
            w.window_s >= 0.95 && w.window_s < 0.95 + LATE / 1e3 * 5.0,
            "{engine}: window {}",
            w.window_s
        );
        let tokens = r.output_tokens_per_s * w.window_s;
        assert!((tokens - 500.0).abs() < 0.5, "{engine}: {tokens}");
        // Over the schedule it would be 1000 tokens/s.
        assert!(
            r.output_tokens_per_s < 530.0,
            "{engine}: {}",
            r.output_tokens_per_s
        );
        assert_eq!((w.late_ok, w.late_output_tokens), (10, 500), "{engine}");
        assert_eq!(w.in_schedule_output_tokens_per_s, 0.0, "{engine}");
        let warned = r.generator.warnings.iter().any(|x| {
            x.contains(
                "100.0% of successes (100.0% of output tokens) completed after the schedule ended",
            )
        });
        assert!(warned, "{engine}: {:?}", r.generator.warnings);
        assert!((w.goodput_rps - 10.0 / w.window_s).abs() < 1e-9, "{engine}");
    }
}
