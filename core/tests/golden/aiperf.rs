//! aiperf's (0.13.0) per-request definitions, `Peers::aiperf_*` (and the
//! shared `guidellm_ttft`/`guidellm_tokens`), on hand-made timings: exact
//! numbers. aiperf times its "content responses" (content, reasoning or
//! tool-call text non-empty), from the send: docs/metrics.md, "aiperf".

use metronome_core::measure::{Recorder, Slo, StreamTiming};
use metronome_core::sse::ChunkFacts;

const MS: u64 = 1_000_000;
const SENT: u64 = 2 * MS;

const ROLE: ChunkFacts = ChunkFacts {
    choices: true,
    output: false,
    answer: false,
    finish: false,
    usage_tokens: None,
};
const REASONING: ChunkFacts = ChunkFacts {
    answer: false,
    ..ChunkFacts::CONTENT
};
const FINISH: ChunkFacts = ChunkFacts {
    finish: true,
    ..ROLE
};

/// A usage-only chunk (`choices: []`) with `completion_tokens = n`.
const fn usage(n: u32) -> ChunkFacts {
    ChunkFacts {
        choices: false,
        output: false,
        answer: false,
        finish: false,
        usage_tokens: Some(n),
    }
}

/// Feeds `chunks` (arrival ms, facts) to one stream sent at 2 ms, ends it
/// with `[DONE]` at `done_ms`, and records it into `r`.
fn stream(r: &mut Recorder, chunks: &[(u64, ChunkFacts)], done_ms: u64) {
    let mut t = StreamTiming::new(0, SENT);
    let mut slots = Vec::new();
    for (at, f) in chunks {
        slots.extend(t.on_chunk(at * MS, f));
    }
    t.on_done(done_ms * MS);
    r.record_stream(&t, &slots, &Slo::default()).unwrap();
}

fn one(chunks: &[(u64, ChunkFacts)], done_ms: u64) -> Box<Recorder> {
    let mut r = Box::new(Recorder::new());
    stream(&mut r, chunks, done_ms);
    r
}

/// Role chunk, 2 reasoning chunks, an empty-content chunk, 2 content
/// chunks, the finish chunk, a usage-only chunk (6 tokens), `[DONE]`.
#[test]
fn reasoning_empty_content_and_usage_only_chunks() {
    let r = one(
        &[
            (10, ROLE),
            (50, REASONING),
            (60, REASONING),
            (70, ROLE), // content: "", no usage: not a content response
            (80, ChunkFacts::CONTENT),
            (95, ChunkFacts::CONTENT),
            (105, FINISH),
            (115, usage(6)),
        ],
        125,
    );
    let p = &r.peers;
    // time_to_first_token: the first reasoning chunk - S.
    assert_eq!(p.guidellm_ttft.max(), 48 * MS);
    // time_to_second_token: second content response - first.
    assert_eq!(p.aiperf_ttst.max(), 10 * MS);
    // request_latency: the last content response - S (not the finish,
    // usage or [DONE] chunks).
    assert_eq!(p.aiperf_latency.max(), 93 * MS);
    // inter_token_latency: (95 - 50) / (6 - 1), OSL from usage.
    assert_eq!(p.aiperf_itl.max(), 9 * MS);
    // output_token_throughput_per_user: 1 / 9 ms = 111.111 tokens/s, x1e6.
    assert_eq!(p.aiperf_tps_user.max(), 111_111_111);
    // e2e_output_token_throughput (aiperf/metrics/types/
    // e2e_output_throughput_metric.py, E2EOutputTokenThroughputMetric:
    // OSL / request_latency in seconds): 6 / 93 ms = 64.516129 tokens/s.
    assert_eq!(p.aiperf_e2e_tps.max(), 64_516_129);
    // inter_chunk_latency: 10, 20 (over the empty chunk), 15.
    assert_eq!(p.aiperf_icl.count(), 3);
    assert_eq!((p.aiperf_icl.min(), p.aiperf_icl.max()), (10 * MS, 20 * MS));
    assert_eq!(p.aiperf_icl.mean(), 15.0 * MS as f64);
    assert_eq!(p.guidellm_tokens, 6);
    assert_eq!(p.guidellm_ttft.count(), 1);
}

/// Without usage, OSL is the count of content responses.
#[test]
fn without_usage_osl_is_the_content_chunks() {
    let r = one(
        &[
            (10, ChunkFacts::CONTENT),
            (20, ChunkFacts::CONTENT),
            (40, ChunkFacts::CONTENT),
            (70, ChunkFacts::CONTENT),
            (80, FINISH),
        ],
        90,
    );
    let p = &r.peers;
    assert_eq!(p.guidellm_ttft.max(), 8 * MS);
    assert_eq!(p.aiperf_ttst.max(), 10 * MS);
    assert_eq!(p.aiperf_latency.max(), 68 * MS);
    // (70 - 10) / (4 - 1) = 20 ms: 50 tokens/s.
    assert_eq!(p.aiperf_itl.max(), 20 * MS);
    assert_eq!(p.aiperf_tps_user.max(), 50_000_000);
    // 4 tokens / 68 ms = 58.823529 tokens/s.
    assert_eq!(p.aiperf_e2e_tps.max(), 58_823_529);
    assert_eq!(
        (p.aiperf_icl.count(), p.aiperf_icl.min(), p.aiperf_icl.max()),
        (3, 10 * MS, 30 * MS)
    );
    assert_eq!(p.guidellm_tokens, 4);
}

/// A 1-token response: TTFT and request latency, nothing else.
#[test]
fn one_token_response() {
    let r = one(
        &[
            (10, ROLE),
            (30, ChunkFacts::CONTENT),
            (40, FINISH),
            (50, usage(1)),
        ],
        60,
    );
    let p = &r.peers;
    assert_eq!(p.guidellm_ttft.max(), 28 * MS);
    assert_eq!(p.aiperf_latency.max(), 28 * MS);
    assert!(p.aiperf_ttst.is_empty());
    assert!(p.aiperf_itl.is_empty());
    assert!(p.aiperf_tps_user.is_empty());
    assert!(p.aiperf_icl.is_empty());
    // The E2E throughput needs no second token: 1 / 28 ms.
    assert_eq!(p.aiperf_e2e_tps.max(), 35_714_285);
    assert_eq!(p.guidellm_tokens, 1);
}

/// Several tokens in one content response: ITL = 0 (OSL >= 2, no decode
/// time), so no tokens/s per user (aiperf: "ITL is zero"); no TTST.
#[test]
fn many_tokens_in_one_chunk() {
    let r = one(&[(30, ChunkFacts::CONTENT), (40, usage(5))], 50);
    let p = &r.peers;
    assert_eq!(p.aiperf_latency.max(), 28 * MS);
    assert_eq!((p.aiperf_itl.count(), p.aiperf_itl.max()), (1, 0));
    assert!(p.aiperf_tps_user.is_empty());
    assert!(p.aiperf_ttst.is_empty() && p.aiperf_icl.is_empty());
    // 5 tokens / 28 ms = 178.571428 tokens/s.
    assert_eq!(p.aiperf_e2e_tps.max(), 178_571_428);
}

/// vLLM's continuous usage: a `content: ""` chunk whose count grew is a
/// token for metronome, not a content response for aiperf: its gap joins
/// the next content response's.
#[test]
fn held_back_token_is_not_a_content_response() {
    let u = |n| ChunkFacts {
        usage_tokens: Some(n),
        ..ChunkFacts::CONTENT
    };
    let held = ChunkFacts {
        usage_tokens: Some(2),
        ..ROLE
    };
    let r = one(
        &[
            (
                10,
                ChunkFacts {
                    usage_tokens: Some(0),
                    ..ROLE
                },
            ),
            (20, u(1)),
            (30, held),
            (40, u(3)),
            (50, u(4)),
        ],
        60,
    );
    let p = &r.peers;
    // metronome's per-chunk gaps: 10, 10, 10; aiperf's: 20, 10.
    assert_eq!(r.itl_chunk.count(), 3);
    assert_eq!(
        (p.aiperf_icl.count(), p.aiperf_icl.min(), p.aiperf_icl.max()),
        (2, 10 * MS, 20 * MS)
    );
    assert_eq!(p.aiperf_ttst.max(), 20 * MS);
    // (50 - 20) / (4 - 1).
    assert_eq!(p.aiperf_itl.max(), 10 * MS);
    assert_eq!(p.aiperf_tps_user.max(), 100_000_000);
}

/// Distributions: ITL, TTST, latency and tokens/s per user once per
/// request; the inter-chunk gaps of every request pooled (count = gaps);
/// merged recorders equal one recorder.
#[test]
fn per_request_and_pooled_distributions_merge_exactly() {
    let a = [
        (10, ChunkFacts::CONTENT),
        (20, ChunkFacts::CONTENT),
        (30, ChunkFacts::CONTENT),
    ];
    let b = [
        (12, ChunkFacts::CONTENT),
        (52, ChunkFacts::CONTENT),
        (62, ChunkFacts::CONTENT),
        (72, ChunkFacts::CONTENT),
        (82, ChunkFacts::CONTENT),
    ];
    let mut both = Box::new(Recorder::new());
    stream(&mut both, &a, 40);
    stream(&mut both, &b, 90);
    let mut merged = one(&a, 40);
    merged.merge(&one(&b, 90));
    assert_eq!(merged.peers, both.peers);
    let p = &both.peers;
    assert_eq!(p.aiperf_itl.count(), 2);
    // (30 - 10) / 2 and (82 - 12) / 4.
    assert_eq!(
        (p.aiperf_itl.min(), p.aiperf_itl.max()),
        (10 * MS, 17_500_000)
    );
    assert_eq!(p.aiperf_icl.count(), 2 + 4);
    assert_eq!(
        p.aiperf_icl.mean(),
        (10.0 + 10.0 + 40.0 + 30.0) / 6.0 * MS as f64
    );
    // 100 tokens/s and 57.142857 tokens/s.
    assert_eq!(
        (p.aiperf_tps_user.min(), p.aiperf_tps_user.max()),
        (57_142_857, 100_000_000)
    );
    // 3 / 28 ms and 5 / 80 ms: 107.142857 and 62.5 tokens/s.
    assert_eq!(
        (
            p.aiperf_e2e_tps.count(),
            p.aiperf_e2e_tps.min(),
            p.aiperf_e2e_tps.max()
        ),
        (2, 62_500_000, 107_142_857)
    );
    assert_eq!(p.guidellm_tokens, 8);
}
