//! The one-screen text summary of a report (`--format text`).

use std::fmt::Write as _;

use metronome_core::measure::FramingCause;

use super::{Metric, Model, Report};

/// Renders the one-screen text summary.
pub fn render_text(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "metronome {} -> {}  [{} model, {} engine, {}]",
        r.run_id, r.target, r.model, r.engine, r.arrival.process
    );
    if r.model == Model::Closed {
        let _ = writeln!(
            s,
            "  closed loop, {} workers: {:.1} req/s achieved over {:.2}s (no schedule: a stall silently lowers the rate)",
            r.closed_workers, r.achieved_rps, r.duration_s
        );
    } else {
        let ratio = if r.offered_rps > 0.0 {
            100.0 * r.achieved_rps / r.offered_rps
        } else {
            0.0
        };
        let _ = writeln!(
            s,
            "  offered {:.1} req/s, achieved {:.1} req/s ({ratio:.1}%) over {:.2}s; throughput {:.1} ok/s",
            r.offered_rps, r.achieved_rps, r.duration_s, r.throughput_rps
        );
    }
    let q = &r.requests;
    let _ = writeln!(
        s,
        "  requests: scheduled {}  sent {}  ok {}  errors {}  dropped {}  unsent {}  timeouts {}",
        q.scheduled, q.sent, q.ok, q.errors, q.dropped, q.unsent, q.timeouts
    );
    if r.interrupted {
        let _ = writeln!(
            s,
            "  interrupted: the report covers what was measured until the signal"
        );
    }
    if r.partial {
        let _ = writeln!(
            s,
            "  partial ({}): the figures cover only these shards, not the whole run",
            r.shard
        );
    }
    let _ = writeln!(
        s,
        "  error rate {:.2}%  goodput {:.2}%",
        100.0 * r.error_rate,
        100.0 * r.goodput
    );
    if q.errors > 0 {
        let kinds: Vec<String> = r
            .errors
            .by_kind
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(k, n)| format!("{k} {n}"))
            .chain(
                r.errors
                    .by_status
                    .iter()
                    .map(|(c, n)| format!("HTTP {c}: {n}")),
            )
            .collect();
        let _ = writeln!(s, "  errors by kind: {}", kinds.join(", "));
        // The parser's cause, each once: the fix is often in the URL.
        for cause in FramingCause::ALL {
            let n = r
                .errors
                .bad_framing_by_cause
                .get(cause.name())
                .copied()
                .unwrap_or(0);
            if n > 0 {
                let _ = writeln!(s, "  bad framing ({n}): {}", cause.describe());
            }
        }
    }
    if q.unsent > 0 {
        let reasons: Vec<String> = r
            .errors
            .unsent_by_reason
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let _ = writeln!(s, "  never sent: {}", reasons.join(", "));
    }
    let g = &r.generator;
    if q.retried + g.connections_closed_idle + g.connections_unsolicited > 0 {
        let _ = writeln!(
            s,
            "  connections: {} closed by the server while idle, {} closed for unsolicited bytes; {} requests retried",
            g.connections_closed_idle, g.connections_unsolicited, q.retried
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "  {:<18} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "metric (ms)", "count", "p50", "p90", "p99", "p99.9", "max", "mean"
    );
    let mut rows: Vec<(&str, &Metric)> = vec![
        ("latency", &r.metrics.latency),
        ("service_time", &r.metrics.service_time),
        ("send_lag", &r.metrics.send_lag),
    ];
    if let Some(c) = &r.metrics.latency_corrected {
        rows.push(("latency_corrected", c));
    }
    for (name, m) in [
        ("ttft", &r.metrics.ttft),
        ("itl", &r.metrics.itl),
        ("tpot", &r.metrics.tpot),
    ] {
        if m.count > 0 {
            rows.push((name, m));
        }
    }
    for (name, m) in rows {
        let _ = writeln!(
            s,
            "  {:<18} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            name,
            m.count,
            fmt_ms(m.p50),
            fmt_ms(m.p90),
            fmt_ms(m.p99),
            fmt_ms(m.p999),
            fmt_ms(m.max),
            fmt_ms(m.mean)
        );
    }
    if r.output_tokens_per_s > 0.0 {
        let _ = writeln!(s, "  output tokens/s: {:.1}", r.output_tokens_per_s);
    }
    if let Some(w) = &r.workload {
        let _ = writeln!(
            s,
            "  workload: {} on {} (model from {}), {}, {} distinct requests",
            w.model, w.endpoint, w.model_source, w.prompts, w.distinct_requests
        );
        for (name, d) in [("input", &w.input_tokens), ("output", &w.output_tokens)] {
            let _ = writeln!(
                s,
                "  {name} tokens per request: mean {:.1}  p50 {}  p90 {}  p99 {}  max {}  ({} requests, {} tokens)",
                d.mean, d.p50, d.p90, d.p99, d.max, d.count, d.total
            );
        }
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "  generator: {} threads, CPU {:.3}s ({:.2} us/request; {:.2} us of work, busy-wait {:.3}s excluded), peak {} connections",
        g.threads, g.cpu_s, g.cpu_us_per_request, g.work_us_per_request, g.spin_s, g.peak_connections
    );
    for t in &r.thresholds {
        let _ = writeln!(
            s,
            "  threshold {:<28} {} (measured {})",
            t.expr,
            if t.passed { "ok" } else { "BREACHED" },
            t.value
        );
    }
    for w in &g.warnings {
        let _ = writeln!(s, "  warning: {w}");
    }
    s
}

/// Milliseconds for a table cell: one decimal from 100 ms, two from 1 ms,
/// three below.
fn fmt_ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}
