//! Checks on the answer (issue 41 item 2): what a body check costs per
//! request, on a 1 KiB body, as core runs it in the engines (the checks
//! built by the CLI's `metronome::run::check::build`).
//!
//! - `substring/1KiB_one_read`: `--check-body` over a 1 KiB body in one
//!   slice, the text near its end (memchr's memmem);
//! - `substring/1KiB_16_slices`: the same body in 16 slices of 64 bytes
//!   (16 reads, chunks or DATA frames), the text across a boundary;
//! - `regex/1KiB_one_read`: `--check-regex` over the same body (the DFA
//!   walked byte by byte);
//! - `response/1KiB_with_substring` and `response/1KiB_unchecked`: a whole
//!   HTTP/1.1 response with a 1 KiB body through `Exchange`, with the
//!   check and without it.
//!
//! Run: `cargo bench --bench check -- --warm-up-time 1 --measurement-time 3`
//! Target: a substring check on a 1 KiB body under 1 us per request
//! (docs/benchmarks.md).

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use metronome::run::check::{build, CheckSpec};
use metronome_core::check::{Check, CheckState};
use metronome_core::exchange::{Exchange, Finish};

/// 1 KiB of JSON-ish text ending with the text the check looks for.
fn body() -> Vec<u8> {
    let mut b = Vec::with_capacity(1024);
    while b.len() < 1024 - 40 {
        b.extend_from_slice(b"{\"id\":12345,\"name\":\"item\",\"ok\":true},");
    }
    b.truncate(1024 - 24);
    b.extend_from_slice(b"\"status\":\"complete\"}]}\n");
    b.resize(1024, b' ');
    b
}

fn one(spec: CheckSpec) -> &'static Check {
    &build(&spec, &[]).expect("a valid check")[0]
}

fn run(check: &Check, parts: &[&[u8]]) -> bool {
    let mut st = CheckState::new();
    for p in parts {
        st.body(check, p);
    }
    st.verdict(check).is_none()
}

fn bench(c: &mut Criterion) {
    let body = body();
    let sub = one(CheckSpec {
        body: Some("\"status\":\"complete\"".into()),
        ..CheckSpec::default()
    });
    let re = one(CheckSpec {
        regex: Some(r#""status":\s*"(complete|done)""#.into()),
        ..CheckSpec::default()
    });
    assert!(run(sub, &[&body]) && run(re, &[&body]));
    let slices: Vec<&[u8]> = body.chunks(64).collect();
    assert!(run(sub, &slices));

    let mut g = c.benchmark_group("check");
    g.bench_function("substring/1KiB_one_read", |b| {
        b.iter(|| run(sub, black_box(&[&body[..]])))
    });
    g.bench_function("substring/1KiB_16_slices", |b| {
        b.iter(|| run(sub, black_box(&slices)))
    });
    g.bench_function("regex/1KiB_one_read", |b| {
        b.iter(|| run(re, black_box(&[&body[..]])))
    });

    let mut wire =
        format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
    wire.extend_from_slice(&body);
    let request = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    for (name, check) in [
        ("response/1KiB_with_substring", Some(sub)),
        ("response/1KiB_unchecked", None),
    ] {
        let mut ex = Exchange::new(false);
        ex.set_check(check);
        g.bench_function(name, |b| {
            b.iter(|| {
                ex.begin(0, 0, request);
                let _ = ex.handle_read(1, black_box(&wire), &mut []);
                assert_eq!(ex.finish(&[]), Finish::Ok);
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
