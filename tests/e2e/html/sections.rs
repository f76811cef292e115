//! Checks of a report's page against its JSON: the verdict text, the
//! listed behind-schedule seconds, every section's table, and no number
//! shown with more than 6 significant digits.

use super::*;

/// Every stretch where the generator fell behind is listed under "Over
/// time", with its detail.
pub(super) fn check_behind_listed(r: &Report, dom: &str) {
    let dom = unescape(dom);
    let from = dom.find("id=\"behind-list\"").map_or(dom.len(), |i| i);
    for b in &r.generator.behind {
        let line = format!(
            "{} s to {} s, {} interval{}, {}: {}",
            fnum(b.from_s),
            fnum(b.until_s),
            fcount(b.intervals),
            if b.intervals == 1 { "" } else { "s" },
            b.cause,
            b.detail
        );
        assert!(dom[from..].contains(&line), "'{line}' not listed");
    }
}

/// The verdict box names what the report says.
pub(super) fn check_verdict(r: &Report, verdict: &str) {
    let q = &r.requests;
    let mut want = if r.model == "closed" {
        vec![format!(
            "Closed loop, {} worker{}: achieved {} req/s",
            fcount(u64::from(r.closed_workers)),
            if r.closed_workers == 1 { "" } else { "s" },
            fnum(r.achieved_rps)
        )]
    } else if let Some(s) = r.sessions.filter(|s| s.planned_turns > 0) {
        vec![format!(
            "Offered {} sessions/s ({} turns planned: {} req/s), achieved {} req/s",
            fnum(r.offered_rps),
            fcount(s.planned_turns),
            fnum(s.offered_turns_per_s),
            fnum(r.achieved_rps)
        )]
    } else {
        vec![
            format!("Offered {} req/s", fnum(r.offered_rps)),
            format!("achieved {} req/s", fnum(r.achieved_rps)),
        ]
    };
    if !r.stages.is_empty() {
        let rates = r.stages.iter().flat_map(|s| [s.start_rps, s.target_rps]);
        let lo = rates.clone().fold(f64::INFINITY, f64::min);
        let hi = rates.fold(f64::NEG_INFINITY, f64::max);
        want.push(format!(
            "req/s on average ({} stages, {} to {} req/s), achieved",
            r.stages.len(),
            fnum(lo),
            fnum(hi)
        ));
    }
    want.push(format!(
        "Throughput {} ok/s over the real window of {} s.",
        fnum(r.throughput_rps),
        fnum(r.window.window_s)
    ));
    want.push(format!(
        "ok {}, errors {}, dropped {}, unsent {} (scheduled {}, sent {}",
        fcount(q.ok),
        fcount(q.errors),
        fcount(q.dropped),
        fcount(q.unsent),
        fcount(q.scheduled),
        fcount(q.sent)
    ));
    for want in want {
        assert!(
            verdict.contains(&want),
            "'{want}' not in verdict '{verdict}'"
        );
    }
    // The tiles: latency p50, p99 and max by the one rule (`-` without
    // enough successes), as the text prints them.
    let m = &r.metrics.latency;
    for (k, q, v) in [
        ("p50", 0.5, m.p50),
        ("p99", 0.99, m.p99),
        ("max", 0.0, m.max),
    ] {
        let shown = fq(m.count, q, v);
        let want = if shown == "-" {
            format!("latency {k}-")
        } else {
            format!("latency {k}{shown} ms")
        };
        assert!(
            verdict.contains(&want),
            "'{want}' not in verdict '{verdict}'"
        );
    }
    let failed = r
        .thresholds
        .iter()
        .filter(|t| !t.passed && t.not_evaluated.is_none())
        .count();
    if failed > 0 {
        let head = format!("Thresholds breached: {failed} of {}.", r.thresholds.len());
        assert!(verdict.starts_with(&head), "{verdict}");
    }
    for t in r.thresholds.iter().filter(|t| t.not_evaluated.is_some()) {
        let want = format!(
            "NOT EVALUATED {}: {}",
            t.expr,
            t.not_evaluated.as_ref().unwrap()
        );
        assert!(
            verdict.contains(&want),
            "'{want}' not in verdict '{verdict}'"
        );
    }
    for t in r.thresholds.iter().filter(|t| t.not_evaluated.is_none()) {
        // The value with its unit: ms for a metric's statistic, a
        // percentage for a ratio.
        let lhs = t.expr.split(['<', '>', '=', '!']).next().unwrap();
        let value = if lhs.contains('.') {
            format!("{} ms", fnum(t.value))
        } else if ["error_rate", "achieved_ratio", "goodput"].contains(&lhs) {
            fpct(t.value)
        } else if lhs.ends_with("_rps") {
            format!("{} req/s", fnum(t.value))
        } else if lhs == "output_tokens_per_s" {
            format!("{} tokens/s", fnum(t.value))
        } else {
            let n = t.value as u64;
            format!("{} request{}", fcount(n), if n == 1 { "" } else { "s" })
        };
        let want = format!(
            "{} {}: measured {value}",
            if t.passed { "PASS" } else { "FAIL" },
            t.expr,
        );
        assert!(
            verdict.contains(&want),
            "'{want}' not in verdict '{verdict}'"
        );
    }
    for w in &r.generator.warnings {
        assert!(
            verdict.contains(w.as_str()),
            "warning '{w}' not in '{verdict}'"
        );
    }
    // Each stretch is named in the verdict, by a warning or on its own, up
    // to three of the latter and a count of the rest.
    let others: Vec<_> = r
        .generator
        .behind
        .iter()
        .filter(|b| !r.generator.warnings.iter().any(|w| w.contains(&b.detail)))
        .collect();
    for b in others.iter().take(3) {
        assert!(
            verdict.contains(&b.detail),
            "'{}' not in '{verdict}'",
            b.detail
        );
    }
    if others.len() > 3 {
        let more = format!("in {} more stretches", fcount(others.len() as u64 - 3));
        assert!(verdict.contains(&more), "'{more}' not in '{verdict}'");
    }
    for (k, n) in r.errors.by_kind.iter().filter(|(_, n)| **n > 0) {
        assert!(
            verdict.contains(&format!("{k} {}", fcount(*n))),
            "{verdict}"
        );
    }
}

/// A Metric's row as the page's percentile tables show it.
fn metric_row(name: &str, m: &Metric) -> Vec<String> {
    let mut row = vec![name.to_string(), fcount(m.count)];
    row.extend(
        [
            (0.0, m.min),
            (0.0, m.mean),
            (0.5, m.p50),
            (0.9, m.p90),
            (0.95, m.p95),
            (0.99, m.p99),
            (0.999, m.p999),
            (0.0, m.max),
        ]
        .into_iter()
        .map(|(q, v)| fq(m.count, q, v)),
    );
    row
}

/// The cells of the table `id` the self-check recorded.
pub(super) fn table_rows(check: &Value, id: &str) -> Vec<Vec<String>> {
    let t = check["tables"][id]
        .as_array()
        .unwrap_or_else(|| panic!("no table #{id} on the page"));
    t.iter()
        .map(|row| {
            row.as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap().to_string())
                .collect()
        })
        .collect()
}

/// Every section's table shows the JSON's numbers by the shared rule:
/// percentiles, requests by name, stages, sessions, stream metrics, token
/// counts and each compat view.
pub(super) fn check_sections(r: &Report, check: &Value) {
    let m = &r.metrics;
    let mut core = vec![
        metric_row("latency", &m.latency),
        metric_row("service time", &m.service_time),
        metric_row("send lag", &m.send_lag),
    ];
    if let Some(c) = &m.latency_corrected {
        core.push(metric_row("latency (CO-corrected)", c));
    }
    assert_eq!(table_rows(check, "latency-table"), core);
    if !r.by_request.is_empty() {
        let ttft = r.by_request.iter().any(|q| q.ttft.is_some());
        let want: Vec<Vec<String>> = r
            .by_request
            .iter()
            .map(|q| {
                let mut row = vec![q.name.clone()];
                row.extend([q.scheduled, q.sent, q.ok, q.errors, q.dropped, q.unsent].map(fcount));
                row.extend([
                    fq(q.latency.count, 0.5, q.latency.p50),
                    fq(q.latency.count, 0.99, q.latency.p99),
                    fq(q.latency.count, 0.0, q.latency.max),
                    fq(q.service_time.count, 0.5, q.service_time.p50),
                    fq(q.send_lag.count, 0.99, q.send_lag.p99),
                ]);
                if ttft {
                    let t = q.ttft.as_ref().unwrap();
                    row.extend([fq(t.count, 0.5, t.p50), fq(t.count, 0.99, t.p99)]);
                }
                let kinds: Vec<String> = q
                    .errors_by_kind
                    .iter()
                    .filter(|(_, n)| **n > 0)
                    .map(|(k, n)| format!("{k} {}", fcount(*n)))
                    .collect();
                row.push(if kinds.is_empty() {
                    "none".into()
                } else {
                    kinds.join(", ")
                });
                row
            })
            .collect();
        assert_eq!(table_rows(check, "by-request-table"), want);
    }
    if !r.stages.is_empty() {
        let want: Vec<Vec<String>> = r
            .stages
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut row = vec![
                    (i + 1).to_string(),
                    fnum(s.from_s),
                    fnum(s.until_s),
                    format!("{} → {}", fnum(s.start_rps), fnum(s.target_rps)),
                    fnum(s.offered),
                ];
                row.extend([s.scheduled, s.sent, s.ok, s.errors, s.dropped, s.unsent].map(fcount));
                row.extend([fq(s.ok, 0.5, s.p50), fq(s.ok, 0.99, s.p99)]);
                row
            })
            .collect();
        assert_eq!(table_rows(check, "stages-table"), want);
    }
    if let Some(s) = &r.sessions {
        let row = |k: &str, v: String| vec![k.to_string(), v];
        let want = vec![
            row("started", fcount(s.started)),
            row("completed", fcount(s.completed)),
            row("abandoned", fcount(s.abandoned)),
            row("cut", fcount(s.cut)),
            row("overflowed", fcount(s.overflowed)),
            row("unfinished", fcount(s.unfinished)),
            row("follow-up turns", fcount(s.follow_ups)),
            row("think time", format!("{} ms", fnum(s.think_time_ms))),
            row("planned turns", fcount(s.planned_turns)),
            row(
                "planned turns per second",
                format!("{} req/s", fnum(s.offered_turns_per_s)),
            ),
        ];
        assert_eq!(table_rows(check, "sessions-table"), want);
    }
    if r.workload.is_some() || m.ttft.count > 0 {
        let want: Vec<Vec<String>> = [
            ("TTFT", &m.ttft),
            ("TTFAT (first answer token)", &m.ttfat),
            ("ITL (per token)", &m.itl),
            ("ITL (per chunk)", &m.itl_chunk),
            ("TPOT", &m.tpot),
            ("tail (last token to end)", &m.tail),
            ("latency", &m.latency),
        ]
        .iter()
        .map(|(n, m)| metric_row(n, m))
        .collect();
        assert_eq!(table_rows(check, "stream-metrics"), want);
    }
    if let Some(w) = &r.workload {
        let want: Vec<Vec<String>> = [("input", &w.input_tokens), ("output", &w.output_tokens)]
            .iter()
            .map(|(n, d)| {
                // Each statistic by the one rule, `-` without enough requests.
                let c = |q: f64, v: u64| {
                    if metronome::report::enough::enough(d.count, q) {
                        fcount(v)
                    } else {
                        "-".to_string()
                    }
                };
                vec![
                    n.to_string(),
                    fcount(d.count),
                    fcount(d.total),
                    c(0.0, d.min),
                    fq(d.count, 0.0, d.mean),
                    c(0.5, d.p50),
                    c(0.9, d.p90),
                    c(0.99, d.p99),
                    c(0.0, d.max),
                ]
            })
            .collect();
        assert_eq!(table_rows(check, "token-counts"), want);
    }
    for c in &r.compat {
        for (suffix, tps) in [("ms", false), ("tps", true)] {
            let want: Vec<Vec<String>> = c
                .metrics
                .iter()
                .filter(|(k, _)| k.contains("throughput") == tps)
                .map(|(k, m)| metric_row(k, m))
                .collect();
            let id = format!("compat-{}-{suffix}", c.peer);
            if want.is_empty() {
                assert!(check["tables"][&id].is_null(), "{id}");
            } else {
                assert_eq!(table_rows(check, &id), want, "{id}");
            }
        }
    }
    check_digits(check);
    let wide = check["overflow"].as_array().unwrap();
    assert!(wide.is_empty(), "tables wider than the page: {wide:?}");
}

/// No number on the page has more than 6 significant digits (the
/// self-check's text leaves out code, seeds, times and ids).
fn check_digits(check: &Value) {
    let text = check["text"].as_str().unwrap();
    let mut word = String::new();
    let mut bad = Vec::new();
    for c in text.chars().chain([' ']) {
        if c.is_ascii_digit() || c == '.' || (c == ',' && !word.is_empty()) {
            word.push(c);
            continue;
        }
        // "1,234" is one number; "a, 2" is not (a ',' then a space).
        let w = word.trim_end_matches([',', '.']);
        let digits: String = w.chars().filter(char::is_ascii_digit).collect();
        let significant = if w.contains('.') {
            digits.trim_start_matches('0').len()
        } else {
            digits.trim_start_matches('0').trim_end_matches('0').len()
        };
        if significant > 6 {
            bad.push(w.to_string());
        }
        word.clear();
    }
    assert!(
        bad.is_empty(),
        "numbers with more than 6 significant digits: {bad:?}"
    );
}
