//! The HTML report (`--html FILE`): one self-contained page that opens
//! offline. The report (or sweep) JSON is embedded verbatim in a
//! `<script type="application/json">` element, and about 1,100 lines of
//! plain JavaScript (`html/page.js`, no charting library) draw hand-made SVG
//! charts from it; the stylesheet is `html/page.css`. A Content-Security-Policy
//! of `default-src 'none'` forbids the page every network request. Without
//! JavaScript the page shows the text summary. docs/html.md says why it is
//! built this way.
//!
//! What only Rust knows goes beside the report in a second JSON element, the
//! page's [`PageMeta`]: the version that drew the page, the command line
//! that produced it (when `run` or `sweep` wrote it), integers too large for
//! a JavaScript number written as strings, and a sweep's knee reasons.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use serde::Serialize;

use crate::report::argv::{shell_quote, shell_words};
use crate::report::sweep::Sweep;
use crate::report::Report;

const CSS: &str = include_str!("html/page.css");
const JS: &str = include_str!("html/page.js");

/// The Content-Security-Policy of every page: inline script and style only,
/// images from `data:` only, nothing fetched, framed, posted or based.
pub const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; \
    style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

/// What the page shows beside the report, computed in Rust.
#[derive(Clone, Debug, Serialize)]
pub struct PageMeta {
    /// `report`, `sweep` or `repeat`.
    pub kind: &'static str,
    /// The metronome version that drew the page.
    pub version: &'static str,
    /// The command line that produced the report, shell-quoted, secrets
    /// redacted: the report's `argv` when it has one (a sweep: the command
    /// of the process that drew the page, else its first step's); null
    /// when the page was drawn from a saved report without one.
    pub command: Option<String>,
    /// The page's reports (one, or a sweep's steps in order), each with the
    /// figures JavaScript cannot hold exactly.
    pub runs: Vec<PageRun>,
    /// Why a sweep's knee step did not keep up ([`crate::report::sweep::fell_behind`]).
    pub knee_reason: Option<String>,
    /// A sweep: the steps where the host took the generator's CPU.
    pub descheduled_steps: Vec<usize>,
}

/// Per-report figures of [`PageMeta`].
#[derive(Clone, Debug, Serialize)]
pub struct PageRun {
    /// The seed, as a decimal string (a u64 may exceed 2^53).
    pub seed: String,
    /// `start_unix_ns` as a decimal string.
    pub start_unix_ns: String,
    /// A command line that re-runs this test, rebuilt from the report
    /// (flags the report does not record, such as headers, are missing):
    /// shown, labelled reconstructed, only when the report has no `argv`.
    pub equivalent: String,
    /// Why this step did not keep up (sweeps; null when it did).
    pub fell_behind: Option<String>,
    /// Merged reports: each shard's start, in the order given.
    pub shards: Vec<ShardRow>,
}

/// One shard of a merged report.
#[derive(Clone, Debug, Serialize)]
pub struct ShardRow {
    /// "K/N".
    pub shard: String,
    /// The shard's schedule zero (RFC 3339, UTC, ns).
    pub start_time: String,
    /// Its `start_unix_ns`, decimal.
    pub start_unix_ns: String,
    /// Its `start_offset_ns`.
    pub start_offset_ns: u64,
    /// How long after the first shard this one began pacing (zero plus
    /// offset), ns.
    pub began_after_first_ns: u64,
}

/// A command line that re-runs the test a report describes, from what the
/// report records.
pub fn equivalent_command(r: &Report) -> String {
    let mut a: Vec<String> = vec!["metronome".into(), "run".into(), r.target.clone()];
    fn push(a: &mut Vec<String>, k: &str, v: String) {
        a.push(k.to_string());
        a.push(v);
    }
    let shards = r
        .shard
        .split_once('/')
        .and_then(|(_, n)| n.parse::<u32>().ok())
        .unwrap_or(1);
    match r.protocol.as_deref() {
        Some("h2c") => a.push("--http2-prior-knowledge".into()),
        Some("h2") => a.push("--http2".into()),
        Some("h3") => a.push("--http3".into()),
        _ => {}
    }
    let staged = !r.stages.is_empty();
    if let Some(p) = &r.profile {
        push(&mut a, "--profile", p.clone());
    } else if r.closed_workers > 0 {
        push(&mut a, "--closed", r.closed_workers.to_string());
    } else if let Some(t) = &r.arrival.trace {
        // A trace replays its file: no rate, no arrival process.
        push(&mut a, "--trace", t.file.clone());
        if t.speed != 1.0 {
            push(&mut a, "--trace-speed", t.speed.to_string());
        }
    } else {
        let first = r.stages.first().map(|s| s.start_rps);
        push(
            &mut a,
            "--rate",
            first
                .unwrap_or(r.offered_rps * f64::from(shards))
                .to_string(),
        );
        push(&mut a, "--arrival", r.arrival.process.clone());
        if let Some(b) = r.arrival.burst_size {
            push(&mut a, "--burst-size", b.to_string());
        }
        if let Some(b) = r.arrival.burstiness {
            push(&mut a, "--burstiness", b.to_string());
        }
        if staged {
            let stages: Vec<String> = r
                .stages
                .iter()
                .map(|s| format!("{}s:{}", s.until_s - s.from_s, s.target_rps))
                .collect();
            push(&mut a, "--stages", stages.join(","));
            if let Some(ramp) = &r.arrival.ramp {
                push(&mut a, "--ramp", ramp.clone());
            }
        }
    }
    if let Some(n) = r.max_concurrency {
        push(&mut a, "--max-concurrency", n.to_string());
    }
    let dur = if r.planned_duration_s > 0.0 {
        r.planned_duration_s
    } else {
        r.duration_s
    };
    // Stages set the duration (their sum); a trace's is its last offset
    // unless cut, which the report cannot tell apart: it is given.
    if !staged {
        push(&mut a, "--duration", format!("{dur}s"));
    }
    if r.warmup_s > 0.0 {
        push(&mut a, "--warmup", format!("{}s", r.warmup_s));
    }
    push(&mut a, "--seed", r.seed.to_string());
    push(&mut a, "--engine", r.engine.clone());
    if r.shard != "0/1" && !r.shard.starts_with("merged") {
        push(&mut a, "--shard", r.shard.clone());
    }
    if let Some(w) = &r.workload {
        a.push("--openai".into());
        push(&mut a, "--model", w.model.clone());
    }
    for (name, v) in [
        ("latency", r.slo.latency_ms),
        ("ttft", r.slo.ttft_ms),
        ("itl", r.slo.itl_ms),
        ("tpot", r.slo.tpot_ms),
    ] {
        if let Some(ms) = v {
            push(&mut a, "--slo", format!("{name}={ms}ms"));
        }
    }
    for t in &r.thresholds {
        push(&mut a, "--threshold", t.expr.clone());
    }
    if !r.compat.is_empty() {
        let peers: Vec<&str> = r.compat.iter().map(|c| c.peer.as_str()).collect();
        push(&mut a, "--metrics-compat", peers.join(","));
    }
    a.iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

fn page_run(r: &Report, fell_behind: Option<String>) -> PageRun {
    let began = |s: &crate::report::ShardStart| s.began_unix_ns();
    let first = r.shard_starts.iter().map(began).min().unwrap_or(0);
    PageRun {
        seed: r.seed.to_string(),
        start_unix_ns: r.start_unix_ns.to_string(),
        equivalent: equivalent_command(r),
        fell_behind,
        shards: r
            .shard_starts
            .iter()
            .map(|s| ShardRow {
                shard: s.shard.clone(),
                start_time: crate::units::rfc3339_ns(s.start_unix_ns),
                start_unix_ns: s.start_unix_ns.to_string(),
                start_offset_ns: s.start_offset_ns,
                began_after_first_ns: began(s) - first,
            })
            .collect(),
    }
}

/// JSON for a `<script type="application/json">` element: every `<` is
/// written `\u003c`, so no `</script>` (nor `<!--`) can end or bend the
/// element; `JSON.parse` reads the same value.
///
/// # Example
/// ```
/// let t = metronome::report::html::script_json(&"</script><!--").unwrap();
/// assert_eq!(t, r#""\u003c/script>\u003c!--""#);
/// ```
///
/// # Errors
/// The value does not serialise.
pub fn script_json<T: Serialize>(v: &T) -> serde_json::Result<String> {
    Ok(serde_json::to_string(v)?
        .replace('<', "\\u003c")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029"))
}

fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn page(title: &str, fallback: &str, data: &str, meta: &str) -> String {
    page_with(CSP, title, fallback, Some(data), meta)
}

/// [`page`] under the policy `csp`, with the report's JSON when there is
/// one (the live page has none: it polls for its rows).
fn page_with(csp: &str, title: &str, fallback: &str, data: Option<&str>, meta: &str) -> String {
    let data = data.unwrap_or_default();
    let mut s = String::with_capacity(CSS.len() + JS.len() + data.len() + meta.len() + 4096);
    let _ = write!(
        s,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <meta name=\"generator\" content=\"metronome {}\">\n\
         <title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n\
         <main id=\"app\">\n<noscript><p>This page draws its charts with \
         JavaScript, which is off: the text summary follows, and the full JSON report is \
         embedded in the page source (element <code>report-data</code>).</p>\
         <pre>{}</pre></noscript>\n</main>\n",
        env!("CARGO_PKG_VERSION"),
        escape(title),
        escape(fallback),
    );
    if !data.is_empty() {
        let _ = writeln!(
            s,
            "<script type=\"application/json\" id=\"report-data\">{data}</script>"
        );
    }
    let _ = write!(
        s,
        "<script type=\"application/json\" id=\"page-meta\">{meta}</script>\n\
         <script>\n{JS}</script>\n</body>\n</html>\n"
    );
    s
}

/// What the live page knows of its run before any interval closes.
#[derive(Clone, Debug, Serialize)]
pub struct LiveMeta {
    /// `live`.
    pub kind: &'static str,
    /// The metronome version that serves the page.
    pub version: &'static str,
    /// The URL under test.
    pub target: String,
    /// The planned mean rate, req/s.
    pub offered_rps: f64,
    /// The arrival process, as the report names it.
    pub process: String,
    /// The engine.
    pub engine: String,
    /// The responses are OpenAI-style event streams (TTFT and tokens/s
    /// are drawn).
    pub stream: bool,
    /// Which run of several (a sweep's step, `--repeat`'s run), when the
    /// dashboard is shared.
    pub label: Option<String>,
    /// The width of an interval, seconds.
    pub interval_s: f64,
    /// The one rule for enough samples, as a report carries it (the live
    /// page has no report yet).
    pub samples_needed: crate::report::enough::SamplesNeeded,
    /// `--max-concurrency`: waits for a connection are the cap's, as asked
    /// (`report::behind`).
    #[serde(skip)]
    pub cap: Option<u32>,
}

/// The `--dashboard` page while the run goes: page.js's live view (the
/// progress, the warnings and the report's time series from the rows it
/// polls at `/live.json`), under `csp`, which must let it fetch from its
/// own address.
///
/// # Errors
/// The meta does not serialise (a non-finite rate).
pub fn render_live(meta: &LiveMeta, csp: &str) -> anyhow::Result<String> {
    let title = format!("metronome live: {}", meta.target);
    let fallback = "The run is going: this page draws its progress with JavaScript.";
    Ok(page_with(csp, &title, fallback, None, &script_json(meta)?))
}

/// The page of one report (a run's or a merge's).
///
/// `command`: the command line that produced it ([`command_line`](super::argv::command_line)), or
/// `None` when drawn from a saved file.
///
/// # Errors
/// The report does not serialise (a non-finite number).
pub fn render_report(r: &Report, command: Option<String>) -> anyhow::Result<String> {
    let meta = PageMeta {
        kind: "report",
        version: env!("CARGO_PKG_VERSION"),
        command: r.argv.as_deref().map(shell_words).or(command),
        runs: vec![page_run(r, None)],
        knee_reason: None,
        descheduled_steps: Vec::new(),
    };
    let unit = if r.sessions.is_some() {
        "sessions/s"
    } else {
        "req/s"
    };
    let title = format!(
        "metronome report: {} {unit} {} ({})",
        r.offered_rps, r.arrival.process, r.run_id
    );
    Ok(page(
        &title,
        &crate::report::text::render_text(r),
        &script_json(r).context("cannot serialise the report for the HTML page")?,
        &script_json(&meta)?,
    ))
}

/// The page of a sweep: latency and achieved rate against offered rate,
/// the knee, and every step's own report view.
///
/// # Errors
/// The sweep does not serialise (a non-finite number).
pub fn render_sweep(sw: &Sweep, command: Option<String>) -> anyhow::Result<String> {
    let meta = PageMeta {
        kind: "sweep",
        version: env!("CARGO_PKG_VERSION"),
        command: command.or_else(|| {
            sw.steps
                .first()
                .and_then(|r| r.argv.as_deref())
                .map(shell_words)
        }),
        runs: sw
            .steps
            .iter()
            .map(|r| page_run(r, crate::report::sweep::fell_behind(r)))
            .collect(),
        knee_reason: sw
            .knee
            .and_then(|k| sw.steps.get(k))
            .and_then(crate::report::sweep::fell_behind),
        descheduled_steps: sw
            .steps
            .iter()
            .enumerate()
            .filter(|(_, r)| r.generator.behind.iter().any(|b| b.cause == "descheduled"))
            .map(|(i, _)| i)
            .collect(),
    };
    let title = format!("metronome sweep: {} steps", sw.steps.len());
    Ok(page(
        &title,
        &crate::report::sweep::render(sw),
        &script_json(sw).context("cannot serialise the sweep for the HTML page")?,
        &script_json(&meta)?,
    ))
}

/// The page of the runs of `run --repeat N` ([`Repeat`](crate::report::repeat::Repeat)):
/// each headline number's mean and 95% confidence interval, then one row
/// per run; the whole document embedded. Its text fallback is the
/// summary `run --repeat` prints.
///
/// # Errors
/// The document cannot be serialised.
pub fn render_repeat(
    d: &crate::report::repeat::Repeat,
    command: Option<String>,
) -> anyhow::Result<String> {
    let meta = PageMeta {
        kind: "repeat",
        version: env!("CARGO_PKG_VERSION"),
        command: command.or_else(|| {
            d.runs
                .first()
                .and_then(|r| r.argv.as_deref())
                .map(shell_words)
        }),
        runs: d.runs.iter().map(|r| page_run(r, None)).collect(),
        knee_reason: None,
        descheduled_steps: Vec::new(),
    };
    let title = format!("metronome --repeat: {} runs", d.runs.len());
    Ok(page(
        &title,
        &crate::report::repeat::render(d),
        &script_json(d).context("cannot serialise the --repeat document for the HTML page")?,
        &script_json(&meta)?,
    ))
}

/// Writes the page of the runs of `run --repeat N` to `path`.
///
/// # Errors
/// [`render_repeat`] failed, or `path` is not writable.
pub fn write_repeat(
    path: &Path,
    d: &crate::report::repeat::Repeat,
    command: Option<String>,
) -> anyhow::Result<()> {
    std::fs::write(path, render_repeat(d, command)?)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Writes a report's page to `path`.
///
/// # Errors
/// [`render_report`] failed, or `path` is not writable.
pub fn write_report(path: &Path, r: &Report, command: Option<String>) -> anyhow::Result<()> {
    std::fs::write(path, render_report(r, command)?)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Writes a sweep's page to `path`.
///
/// # Errors
/// [`render_sweep`] failed, or `path` is not writable.
pub fn write_sweep(path: &Path, sw: &Sweep, command: Option<String>) -> anyhow::Result<()> {
    std::fs::write(path, render_sweep(sw, command)?)
        .with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Report {
        let md = include_str!("../../docs/report.md");
        let json = md
            .split("```json")
            .nth(1)
            .unwrap()
            .split("```")
            .next()
            .unwrap();
        serde_json::from_str(json).unwrap()
    }

    /// The JSON between `<script type="application/json" id="ID">` and its end.
    fn embedded<'a>(html: &'a str, id: &str) -> &'a str {
        let open = format!("<script type=\"application/json\" id=\"{id}\">");
        let from = html.find(&open).unwrap() + open.len();
        let len = html[from..].find("</script>").unwrap();
        &html[from..from + len]
    }

    #[test]
    fn embeds_the_report_exactly_and_safely() {
        let mut r = sample();
        r.target = "http://h/</script><script>alert(1)</script><!--".into();
        r.generator.warnings.push("a \u{2028} b".into());
        let html = render_report(&r, Some("metronome run x".into())).unwrap();
        let data = embedded(&html, "report-data");
        assert!(!data.contains('<'));
        let back: Report = serde_json::from_str(data).unwrap();
        assert_eq!(back, r);
        assert_eq!(html.matches("</script>").count(), 3);
        let meta: serde_json::Value = serde_json::from_str(embedded(&html, "page-meta")).unwrap();
        // The report's own argv is the command line shown; the one given
        // serves a report without one.
        assert_eq!(meta["command"], shell_words(r.argv.as_ref().unwrap()));
        r.argv = None;
        let html = render_report(&r, Some("metronome run x".into())).unwrap();
        let meta: serde_json::Value = serde_json::from_str(embedded(&html, "page-meta")).unwrap();
        assert_eq!(meta["command"], "metronome run x");
        assert_eq!(meta["runs"][0]["seed"], r.seed.to_string());
        // The title and the fallback are escaped.
        assert!(!html.contains("<script>alert"));
    }

    #[test]
    fn references_nothing_outside_the_page() {
        let html = render_report(&sample(), None).unwrap();
        let mut outside = html.clone();
        for id in ["report-data", "page-meta"] {
            outside = outside.replace(embedded(&html, id), "");
        }
        let start = outside.find("<noscript>").unwrap();
        let end = outside.find("</noscript>").unwrap();
        outside.replace_range(start..end, "");
        // The one request in the script: the dashboard's live view polling
        // its own address (meta kind `live` only; this page's policy has no
        // connect-src, so it could not fetch anyway).
        assert_eq!(outside.matches("fetch(").count(), 1);
        let outside = outside.replace("fetch('/live.json'", "");
        let urls: Vec<&str> = outside
            .match_indices("://")
            .map(|(i, _)| &outside[i.saturating_sub(8)..(i + 24).min(outside.len())])
            .filter(|u| !u.contains("http://www.w3.org/2000/svg"))
            .collect();
        assert!(urls.is_empty(), "{urls:?}");
        for attr in [
            "src=",
            "href=",
            "url(",
            "@import",
            "fetch(",
            "XMLHttpRequest",
        ] {
            assert!(!outside.contains(attr), "the page uses {attr}");
        }
    }

    #[test]
    fn equivalent_command_names_the_recorded_flags() {
        let mut r = sample();
        r.shard = "1/4".into();
        r.offered_rps = 250.0;
        r.thresholds.push(crate::report::ThresholdReport {
            expr: "latency.p99<50ms".into(),
            value: 1.0,
            passed: true,
            samples: Some(10),
            not_evaluated: None,
        });
        let c = equivalent_command(&r);
        assert!(c.contains("--rate 1000 "), "{c}");
        assert!(c.contains("--shard 1/4"), "{c}");
        assert!(c.contains("--threshold 'latency.p99<50ms'"), "{c}");
        assert!(c.contains(&format!("--seed {}", r.seed)), "{c}");

        // A trace: --trace FILE, never `--arrival trace` (the CLI refuses it).
        let mut t = sample();
        t.arrival.process = "trace".into();
        t.arrival.trace = Some(crate::report::TraceReport {
            file: "t.jsonl".into(),
            offsets: 3,
            speed: 2.0,
        });
        t.protocol = Some("h2c".into());
        t.max_concurrency = Some(8);
        let c = equivalent_command(&t);
        assert!(
            c.contains(" --http2-prior-knowledge --trace t.jsonl --trace-speed 2 "),
            "{c}"
        );
        assert!(c.contains(" --max-concurrency 8 "), "{c}");
        assert!(!c.contains("--arrival") && !c.contains("--rate"), "{c}");
    }

    /// The size budget (docs/html.md): a 10-minute stream run at 1 s
    /// intervals, every histogram filled across 17 octaves (2000+ buckets
    /// each, far more than a real run fills), with one compat view (vLLM's
    /// four), stays under 1 MiB; with all three views (fifteen more such
    /// histograms) it stays under 1.25 MiB (docs/html.md).
    #[test]
    fn a_ten_minute_run_stays_under_one_mib() {
        use metronome_core::histogram::Histogram;
        let mut h = Histogram::new();
        let mut rng = metronome_core::rng::Pcg32::seeded(7);
        for _ in 0..200_000 {
            // Log-uniform from 50 us to 5 s.
            let v = (50_000.0 * 1e5f64.powf(rng.next_f64())) as u64;
            h.record(v);
        }
        let full = crate::report::Metric::from_histogram(&h);
        assert!(full.buckets.len() > 2000, "{}", full.buckets.len());
        let mut r = sample();
        for m in [
            &mut r.metrics.latency,
            &mut r.metrics.service_time,
            &mut r.metrics.send_lag,
            &mut r.metrics.ttft,
            &mut r.metrics.itl,
            &mut r.metrics.tpot,
            &mut r.metrics.itl_chunk,
            &mut r.metrics.ttfat,
            &mut r.metrics.tail,
        ] {
            *m = full.clone();
        }
        let one = r.intervals[0].clone();
        r.intervals = (0..600)
            .map(|i| crate::report::IntervalReport {
                start_s: f64::from(i),
                p50: 1.234567 + f64::from(i) * 1e-6,
                p99: 12.345678 + f64::from(i) * 1e-6,
                max: 123.456789 + f64::from(i) * 1e-6,
                work_cpu: 0.0123456789,
                ..one.clone()
            })
            .collect();
        // Every peer's view (`--metrics-compat vllm,guidellm,aiperf`).
        r.compat = [
            ("vllm", &["ttft", "tpot", "itl", "e2el"][..]),
            (
                "guidellm",
                &[
                    "time_to_first_token_ms",
                    "time_to_first_output_token_ms",
                    "inter_token_latency_ms",
                    "time_per_output_token_ms",
                    "request_latency",
                ][..],
            ),
            (
                "aiperf",
                &[
                    "time_to_first_token",
                    "time_to_second_token",
                    "request_latency",
                    "inter_token_latency",
                    "inter_chunk_latency",
                    "output_token_throughput_per_user",
                ][..],
            ),
        ]
        .iter()
        .map(|(peer, keys)| crate::report::compat::Compat {
            peer: peer.to_string(),
            sources: vec![],
            request_throughput_rps: 1.0,
            output_throughput_tokens_per_s: 1.0,
            window_s: 1.0,
            metrics: keys.iter().map(|k| (k.to_string(), full.clone())).collect(),
            notes: vec![],
        })
        .collect();
        let html = render_report(&r, Some("metronome run".into())).unwrap();
        eprintln!(
            "10-minute worst-case page, three compat views: {} bytes",
            html.len()
        );
        assert!(html.len() < 5 << 18, "{} bytes", html.len());
        r.compat.truncate(1);
        let html = render_report(&r, Some("metronome run".into())).unwrap();
        eprintln!(
            "10-minute worst-case page, one compat view: {} bytes",
            html.len()
        );
        assert!(html.len() < 1 << 20, "{} bytes", html.len());
    }
}
