//! The golden streams of `tests/streams/` (built with the `openai`
//! package's own types, see `tests/streams/make.py`) fed through
//! [`Exchange`] on a virtual clock, and every metric checked against the
//! tables of docs/metrics.md ("Reproduced on recorded streams"): metronome's
//! value, vLLM bench's and guidellm's, exactly (to the microsecond the
//! tables print). The tables are the golden vectors: a definition that
//! changes changes a number there, and this test says which.
//!
//! The clock of every stream: intended send `I` = 0, actual send `S` = 2 ms
//! (2 ms of send lag, which metronome charges and the peers do not), the
//! head and the first event at 10 ms, event k (k >= 1) at 50 + (k - 1) * 10
//! ms: what `metronome serve --sse --shape NAME --ttft 50ms --itl 10ms`
//! sends for a request that arrives at 10 ms.

use metronome_core::exchange::{Exchange, Feed, Finish, GAP_CAP};
use metronome_core::measure::Slo;
use metronome_core::measure::{ErrorKind, Recorder};

const MS: u64 = 1_000_000;
const SENT: u64 = 2 * MS;

/// Every shape, by name, with its body.
const SHAPES: &[(&str, &[u8])] = &[
    (
        "openai",
        include_bytes!("../../../tests/streams/openai.sse"),
    ),
    ("vllm", include_bytes!("../../../tests/streams/vllm.sse")),
    (
        "continuous",
        include_bytes!("../../../tests/streams/continuous.sse"),
    ),
    (
        "llamacpp",
        include_bytes!("../../../tests/streams/llamacpp.sse"),
    ),
    (
        "reasoning",
        include_bytes!("../../../tests/streams/reasoning.sse"),
    ),
    ("tools", include_bytes!("../../../tests/streams/tools.sse")),
    (
        "empty_content",
        include_bytes!("../../../tests/streams/empty_content.sse"),
    ),
    (
        "no_done",
        include_bytes!("../../../tests/streams/no_done.sse"),
    ),
    (
        "completions",
        include_bytes!("../../../tests/streams/completions.sse"),
    ),
    ("error", include_bytes!("../../../tests/streams/error.sse")),
];

/// The events of a body, each with its blank line.
fn events(body: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(i) = rest.windows(2).position(|w| w == b"\n\n") {
        out.push(&rest[..i + 2]);
        rest = &rest[i + 2..];
    }
    assert!(rest.is_empty(), "a body ends with a blank line");
    out
}

/// The arrival time of event k.
fn event_time(k: usize) -> u64 {
    if k == 0 {
        10 * MS
    } else {
        50 * MS + (k as u64 - 1) * 10 * MS
    }
}

fn chunk(payload: &[u8]) -> Vec<u8> {
    let mut v = format!("{:x}\r\n", payload.len()).into_bytes();
    v.extend_from_slice(payload);
    v.extend_from_slice(b"\r\n");
    v
}

/// Feeds a whole response, read by read, into a fresh exchange; records
/// the finish into `r`. Returns the error kind of a failure.
fn drive(reads: &[(u64, Vec<u8>)], r: &mut Recorder) -> Result<(), ErrorKind> {
    let mut gaps = vec![0u64; GAP_CAP];
    let mut ex = Exchange::new(true);
    ex.begin(0, SENT, b"POST /v1/chat/completions HTTP/1.1\r\n\r\n");
    let mut buf: Vec<u8> = Vec::new();
    for (at, bytes) in reads {
        buf.extend_from_slice(bytes);
        match ex.handle_read(*at, &buf, &mut gaps) {
            Ok(Feed::NeedMore { consumed }) => {
                buf.drain(..consumed);
            }
            Ok(Feed::Complete { .. }) => break,
            Err(f) => panic!("{f:?}"),
        }
    }
    match ex.finish(&gaps) {
        Finish::Stream { timing, gaps } => {
            r.record_stream(timing, gaps, &Slo::default()).map(|_| ())
        }
        Finish::Error(k) => {
            r.record_error(k);
            Err(k)
        }
        other => panic!("{other:?}"),
    }
}

/// A shape served as `serve --sse --shape` sends it: a chunked
/// event stream, the last event followed by the terminating chunk.
fn stream_reads(body: &[u8]) -> Vec<(u64, Vec<u8>)> {
    let evs = events(body);
    let mut reads = Vec::new();
    for (k, e) in evs.iter().enumerate() {
        let mut bytes = if k == 0 {
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                .to_vec()
        } else {
            Vec::new()
        };
        bytes.extend(chunk(e));
        if k + 1 == evs.len() {
            bytes.extend_from_slice(b"0\r\n\r\n");
        }
        reads.push((event_time(k), bytes));
    }
    reads
}

/// The values of one stream: (metronome, vLLM, guidellm) per metric, as
/// the tables print them. `None` where a tool has no such metric or the
/// request failed.
struct Values {
    rows: Vec<(&'static str, [Option<f64>; 3])>,
}

fn mean_ms(h: &metronome_core::histogram::Histogram) -> Option<f64> {
    (!h.is_empty()).then(|| h.mean() / 1e6)
}

fn measure(body: &[u8]) -> (Result<(), ErrorKind>, Values) {
    let mut r = Box::new(Recorder::new());
    let outcome = drive(&stream_reads(body), &mut r);
    let p = &r.peers;
    let tokens = |n: u64| (r.ok > 0).then_some(n as f64);
    let rows = vec![
        (
            "TTFT",
            [
                mean_ms(&r.ttft),
                mean_ms(&p.vllm_ttft),
                mean_ms(&p.guidellm_ttft),
            ],
        ),
        (
            "Time to first answer token",
            [mean_ms(&r.ttfat), None, mean_ms(&p.guidellm_ttfot)],
        ),
        (
            "ITL",
            [
                mean_ms(&r.itl),
                mean_ms(&p.vllm_itl),
                mean_ms(&p.guidellm_itl),
            ],
        ),
        (
            "ITL per chunk",
            [mean_ms(&r.itl_chunk), mean_ms(&p.vllm_itl), None],
        ),
        (
            "TPOT",
            [
                mean_ms(&r.tpot),
                mean_ms(&p.vllm_tpot),
                mean_ms(&p.guidellm_tpot),
            ],
        ),
        (
            "E2E",
            [
                mean_ms(&r.latency),
                mean_ms(&p.vllm_e2e),
                mean_ms(&r.service_time),
            ],
        ),
        ("Tail", [mean_ms(&r.tail), None, None]),
        (
            "Output tokens",
            [
                tokens(r.output_tokens),
                tokens(r.output_tokens),
                tokens(p.guidellm_tokens),
            ],
        ),
    ];
    (outcome, Values { rows })
}

fn cell(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.3}"))
}

/// The tables of docs/metrics.md: metric -> stream -> the three cells.
fn doc_tables() -> Vec<(String, String, [String; 3])> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/metrics.md"))
        .unwrap();
    let start = doc
        .find("## Reproduced on recorded streams")
        .expect("docs/metrics.md has the section");
    let mut out = Vec::new();
    let mut metric = String::new();
    for line in doc[start..].lines() {
        if let Some(h) = line.strip_prefix("### ") {
            metric = h.trim().to_string();
        } else if line.starts_with("| `") {
            let cells: Vec<String> = line
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect();
            assert_eq!(cells.len(), 4, "{line}");
            let stream = cells[0].trim_matches('`').to_string();
            out.push((
                metric.clone(),
                stream,
                [cells[1].clone(), cells[2].clone(), cells[3].clone()],
            ));
        } else if line.starts_with("## ") && !line.contains("Reproduced") {
            break;
        }
    }
    out
}

#[test]
fn docs_tables_match_every_stream() {
    let mut rows = Vec::new();
    let mut computed = String::new();
    for (name, body) in SHAPES {
        let (_, values) = measure(body);
        for (metric, cells) in &values.rows {
            let got = cells.map(cell);
            computed += &format!(
                "{metric} | `{name}` | {} | {} | {} |\n",
                got[0], got[1], got[2]
            );
            rows.push((metric.to_string(), name.to_string(), got));
        }
    }
    println!("{computed}");
    let tables = doc_tables();
    for (metric, stream, want) in &tables {
        let got = rows
            .iter()
            .find(|(m, s, _)| m == metric && s == stream)
            .unwrap_or_else(|| panic!("docs/metrics.md: no stream {stream} for {metric}"));
        assert_eq!(&got.2, want, "{metric} of {stream}");
    }
    assert!(tables.len() >= 40, "only {} rows checked", tables.len());
}

/// Success or the error kind of each shape, and of a plain JSON answer.
#[test]
fn shapes_succeed_or_fail_as_documented() {
    for (name, body) in SHAPES {
        let (outcome, _) = measure(body);
        let want = match *name {
            "error" => Err(ErrorKind::StreamError),
            _ => Ok(()),
        };
        assert_eq!(outcome, want, "{name}");
    }
    // no_done is ok, and noted.
    let mut r = Box::new(Recorder::new());
    drive(&stream_reads(SHAPES[7].1), &mut r).unwrap();
    assert_eq!((r.ok, r.ok_without_done), (1, 1));
    // A plain JSON answer to a stream request.
    let json = include_bytes!("../../../tests/streams/json.json");
    let mut wire = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        json.len()
    )
    .into_bytes();
    wire.extend_from_slice(json);
    let mut r = Box::new(Recorder::new());
    assert_eq!(
        drive(&[(30 * MS, wire)], &mut r),
        Err(ErrorKind::NotEventStream)
    );
    // A body cut before the finish (no finish_reason, no [DONE]) is cut.
    let evs = events(SHAPES[0].1);
    let cut: Vec<u8> = evs[..4].concat();
    let mut reads = stream_reads(&cut);
    let last = reads.last_mut().unwrap();
    last.1.truncate(last.1.len() - 5); // no terminating chunk: then EOF
    let mut r = Box::new(Recorder::new());
    let mut gaps = vec![0u64; GAP_CAP];
    let mut ex = Exchange::new(true);
    ex.begin(0, SENT, b"POST / HTTP/1.1\r\n\r\n");
    let mut buf = Vec::new();
    for (at, bytes) in &reads {
        buf.extend_from_slice(bytes);
        if let Ok(Feed::NeedMore { consumed }) = ex.handle_read(*at, &buf, &mut gaps) {
            buf.drain(..consumed);
        }
    }
    assert_eq!(
        ex.handle_eof(100 * MS, &mut gaps),
        Err(ErrorKind::StreamCut)
    );
    r.record_error(ErrorKind::StreamCut);
    assert_eq!(r.ok, 0);
}

/// aiperf's values of one recorded stream, computed here from the SSE
/// events themselves (serde_json, aiperf's rules: `[DONE]` dropped; a
/// content response has a truthy `reasoning_content`/`reasoning`, tool-call
/// name/arguments text or `content` in `choices[0].delta`, or a truthy
/// `choices[0].text`; OSL = the last usage's `completion_tokens`, else the
/// content responses) and their arrival times `event_time(k)`: (TTFT,
/// TTST, request latency, ITL, tokens/s/user x1e6, ICL gaps, OSL).
#[allow(clippy::type_complexity)]
fn aiperf_expected(
    body: &[u8],
) -> (
    u64,
    Option<u64>,
    u64,
    Option<u64>,
    Option<u64>,
    Vec<u64>,
    u64,
) {
    let truthy = |v: &serde_json::Value| v.as_str().is_some_and(|s| !s.is_empty());
    let mut content = Vec::new();
    let mut osl = None;
    for (k, e) in events(body).iter().enumerate() {
        let line = std::str::from_utf8(e).unwrap().trim();
        let data = line.strip_prefix("data: ").unwrap();
        if data == "[DONE]" {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(data).unwrap();
        if let Some(n) = v["usage"]["completion_tokens"].as_u64() {
            osl = Some(n);
        }
        let c = &v["choices"][0];
        let d = &c["delta"];
        let tool_text = d["tool_calls"].as_array().is_some_and(|calls| {
            calls
                .iter()
                .any(|t| truthy(&t["function"]["name"]) || truthy(&t["function"]["arguments"]))
        });
        if truthy(&d["reasoning_content"])
            || truthy(&d["reasoning"])
            || tool_text
            || truthy(&d["content"])
            || truthy(&c["text"])
        {
            content.push(event_time(k));
        }
    }
    let osl = osl.unwrap_or(content.len() as u64);
    let (first, last) = (content[0], *content.last().unwrap());
    let decode = last - first;
    let itl = (osl >= 2).then(|| decode / (osl - 1));
    let tps = (osl >= 2 && decode > 0)
        .then(|| ((osl - 1) as u128 * 10u128.pow(15) / decode as u128) as u64);
    (
        first - SENT,
        content.get(1).map(|s| s - first),
        last - SENT,
        itl,
        tps,
        content.windows(2).map(|w| w[1] - w[0]).collect(),
        osl,
    )
}

/// `Peers`' aiperf values on every recorded stream equal the ones computed
/// from the events (exact: one request, so min = max = the value), and the
/// table "aiperf on the recorded streams" of docs/metrics.md prints them.
#[test]
fn aiperf_view_of_every_stream() {
    let one = |h: &metronome_core::histogram::Histogram| (!h.is_empty()).then(|| h.max());
    let mut rows = Vec::new();
    for (name, body) in SHAPES {
        if *name == "error" {
            continue;
        }
        let mut r = Box::new(Recorder::new());
        drive(&stream_reads(body), &mut r).unwrap();
        let p = &r.peers;
        let (ttft, ttst, latency, itl, tps, icl, osl) = aiperf_expected(body);
        assert_eq!(one(&p.guidellm_ttft), Some(ttft), "{name} ttft");
        assert_eq!(one(&p.aiperf_ttst), ttst, "{name} ttst");
        assert_eq!(one(&p.aiperf_latency), Some(latency), "{name} latency");
        assert_eq!(one(&p.aiperf_itl), itl, "{name} itl");
        assert_eq!(one(&p.aiperf_tps_user), tps, "{name} tps/user");
        assert_eq!(p.aiperf_icl.count(), icl.len() as u64, "{name} icl count");
        if !icl.is_empty() {
            let sum: u64 = icl.iter().sum();
            assert_eq!(p.aiperf_icl.mean(), sum as f64 / icl.len() as f64, "{name}");
            assert_eq!(p.aiperf_icl.min(), *icl.iter().min().unwrap(), "{name}");
            assert_eq!(p.aiperf_icl.max(), *icl.iter().max().unwrap(), "{name}");
        }
        assert_eq!(p.guidellm_tokens, osl, "{name} osl");
        let ms = |v: Option<u64>| cell(v.map(|v| v as f64 / 1e6));
        let icl_mean =
            (!icl.is_empty()).then(|| icl.iter().sum::<u64>() as f64 / icl.len() as f64 / 1e6);
        rows.push(format!(
            "| `{name}` | {} | {} | {} | {} | {} ({}) | {} | {osl} |",
            ms(Some(ttft)),
            ms(ttst),
            ms(Some(latency)),
            ms(itl),
            cell(icl_mean),
            icl.len(),
            ms(tps),
        ));
    }
    println!("{}", rows.join("\n"));
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/metrics.md"))
        .unwrap();
    let start = doc
        .find("### aiperf on the recorded streams")
        .expect("docs/metrics.md has the table");
    let table: Vec<&str> = doc[start..]
        .lines()
        .skip_while(|l| !l.starts_with("| `"))
        .take_while(|l| l.starts_with("| `"))
        .collect();
    assert_eq!(table, rows);
}
