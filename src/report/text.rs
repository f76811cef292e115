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
            "  closed loop, {}: {:.1} req/s achieved over {:.2}s (no schedule: a stall silently lowers the rate)",
            super::counted(r.closed_workers.into(), "worker"), r.achieved_rps, r.duration_s
        );
    } else if let Some(sess) = r.sessions.filter(|x| x.planned_turns > 0) {
        // Conversations: the schedule offers sessions, the requests are
        // their turns; the ratio is of requests to requests.
        let ratio = if sess.offered_turns_per_s > 0.0 {
            100.0 * r.achieved_rps / sess.offered_turns_per_s
        } else {
            0.0
        };
        let _ = writeln!(
            s,
            "  offered {:.1} sessions/s ({} turns planned: {:.1} req/s), achieved {:.1} req/s ({ratio:.1}% of the planned turns) over {:.2}s; throughput {:.1} ok/s over {:.2}s ({:.1} ok/s within the schedule)",
            r.offered_rps, sess.planned_turns, sess.offered_turns_per_s, r.achieved_rps, r.duration_s,
            r.throughput_rps, r.window.window_s, r.window.in_schedule_throughput_rps
        );
    } else {
        let ratio = if r.offered_rps > 0.0 {
            100.0 * r.achieved_rps / r.offered_rps
        } else {
            0.0
        };
        // Sends that waited into the drain are not the schedule's rate.
        let late = match r.window.late_sent {
            0 => String::new(),
            n => format!(", {n} more sent after its end"),
        };
        let _ = writeln!(
            s,
            "  offered {:.1} req/s, achieved {:.1} req/s ({ratio:.1}%) on schedule over {:.2}s{late}; throughput {:.1} ok/s over {:.2}s ({:.1} ok/s within the schedule)",
            r.offered_rps, r.achieved_rps, r.duration_s, r.throughput_rps, r.window.window_s,
            r.window.in_schedule_throughput_rps
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
        "  error rate {:.2}%  goodput {:.2}% ({:.1} good/s)",
        100.0 * r.error_rate,
        100.0 * r.goodput,
        r.window.goodput_rps
    );
    // Nothing moved (no connection): the line would say nothing.
    if let Some(t) = r.transfer.filter(|t| t.received_bytes + t.sent_bytes > 0) {
        let _ = writeln!(
            s,
            "  transfer: received {} ({}/s), sent {}",
            bytes(t.received_bytes),
            bytes(t.received_per_s.round() as u64),
            bytes(t.sent_bytes)
        );
    }
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
            .chain(
                grpc_codes(r)
                    .into_iter()
                    .map(|(c, n)| match super::grpc_code_name(&c) {
                        Some(name) => format!("grpc-status {c} {name}: {n}"),
                        None => format!("grpc-status {c}: {n}"),
                    }),
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
        ("ttfat", &r.metrics.ttfat),
        ("itl (per token)", &r.metrics.itl),
        ("itl_chunk", &r.metrics.itl_chunk),
        ("tpot", &r.metrics.tpot),
        ("tail", &r.metrics.tail),
    ] {
        if m.count > 0 {
            rows.push((name, m));
        }
    }
    for (name, m) in &rows {
        let _ = writeln!(
            s,
            "  {:<18} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            name,
            m.count,
            pct_ms(m.count, 0.5, m.p50),
            pct_ms(m.count, 0.9, m.p90),
            pct_ms(m.count, 0.99, m.p99),
            pct_ms(m.count, 0.999, m.p999),
            pct_ms(m.count, 0.0, m.max),
            pct_ms(m.count, 0.0, m.mean)
        );
    }
    // The samples' own percentiles, where every sample was kept.
    let exact: Vec<_> = rows
        .iter()
        .filter_map(|(name, m)| m.exact.as_ref().map(|e| (name, e)))
        .collect();
    if !exact.is_empty() {
        let _ = writeln!(
            s,
            "  exact (every sample, nearest rank; above: the histogram's, within 1/128):"
        );
        for (name, e) in exact {
            let _ = writeln!(
                s,
                "  {:<18} {:>8} {:>9} {:>9} {:>9} {:>9}",
                name,
                e.count,
                pct_ms(e.count, 0.5, e.p50),
                pct_ms(e.count, 0.9, e.p90),
                pct_ms(e.count, 0.99, e.p99),
                pct_ms(e.count, 0.999, e.p999)
            );
        }
    }
    if !r.stages.is_empty() {
        let ramp = r.arrival.ramp.as_deref().unwrap_or("linear");
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "  {:<17} {:>19} {:>9} {:>9} {:>9} {:>7} {:>7} {:>9} {:>9}",
            format!("stage ({ramp})"),
            "req/s",
            "scheduled",
            "sent",
            "ok",
            "errors",
            "dropped",
            "p50 ms",
            "p99 ms"
        );
        for st in &r.stages {
            let _ = writeln!(
                s,
                "  {:<17} {:>19} {:>9} {:>9} {:>9} {:>7} {:>7} {:>9} {:>9}",
                format!("{}s-{}s", trim_s(st.from_s), trim_s(st.until_s)),
                format!("{} -> {}", trim_s(st.start_rps), trim_s(st.target_rps)),
                st.scheduled,
                st.sent,
                st.ok,
                st.errors,
                st.dropped,
                pct_ms(st.ok, 0.5, st.p50),
                pct_ms(st.ok, 0.99, st.p99)
            );
        }
    }
    if !r.by_request.is_empty() {
        let _ = writeln!(s);
        let width = r
            .by_request
            .iter()
            .map(|q| q.name.chars().count())
            .max()
            .unwrap_or(0)
            .clamp(7, 40);
        // Streams: each row's TTFT too (with conversations, each turn's).
        let ttft = r.by_request.iter().any(|q| q.ttft.is_some());
        let _ = writeln!(
            s,
            "  {:<width$} {:>9} {:>9} {:>9} {:>7} {:>7} {:>9} {:>9} {:>9}{}",
            "request",
            "scheduled",
            "sent",
            "ok",
            "errors",
            "dropped",
            "p50 ms",
            "p99 ms",
            "max ms",
            if ttft { "  ttft p50  ttft p99" } else { "" }
        );
        for q in &r.by_request {
            let name: String = q.name.chars().take(40).collect();
            let ttft_cols = match (&q.ttft, ttft) {
                (Some(t), _) => format!(
                    " {:>9} {:>9}",
                    pct_ms(t.count, 0.5, t.p50),
                    pct_ms(t.count, 0.99, t.p99)
                ),
                (None, true) => format!(" {:>9} {:>9}", "-", "-"),
                (None, false) => String::new(),
            };
            let _ = writeln!(
                s,
                "  {:<width$} {:>9} {:>9} {:>9} {:>7} {:>7} {:>9} {:>9} {:>9}{}",
                name,
                q.scheduled,
                q.sent,
                q.ok,
                q.errors,
                q.dropped,
                pct_ms(q.latency.count, 0.5, q.latency.p50),
                pct_ms(q.latency.count, 0.99, q.latency.p99),
                pct_ms(q.latency.count, 0.0, q.latency.max),
                ttft_cols
            );
        }
    }
    if let Some(x) = &r.sessions {
        let _ =
            writeln!(
            s,
            "  sessions: {} started, {} completed, {} abandoned (a turn failed), {} cut by the \
             end, {} unfinished{}; {} later turns; think time {} ms",
            x.started,
            x.completed,
            x.abandoned,
            x.cut,
            x.unfinished,
            if x.overflowed > 0 {
                format!(", {} overflowed (no room was left for their next turn)", x.overflowed)
            } else {
                String::new()
            },
            x.follow_ups,
            x.think_time_ms
        );
    }
    if let Some(t) = &r.arrival.trace {
        let _ = writeln!(
            s,
            "  trace: {} ({} offsets, speed {})",
            t.file, t.offsets, t.speed
        );
    }
    if r.output_tokens_per_s > 0.0 {
        let _ = writeln!(
            s,
            "  output tokens/s: {:.1} over the real window {:.2}s (first send to last completion); \
             {:.1} within the schedule",
            r.output_tokens_per_s, r.window.window_s, r.window.in_schedule_output_tokens_per_s
        );
    }
    for c in &r.compat {
        let _ = writeln!(
            s,
            "  as {} defines them (clock from the actual send; ms{}; docs/metrics.md): {:.2} req/s, {:.1} output tokens/s over {:.2}s{}",
            c.peer,
            if c.metrics.contains_key("output_token_throughput_per_user") {
                ", *_throughput* tokens/s"
            } else {
                ""
            },
            c.request_throughput_rps,
            c.output_throughput_tokens_per_s,
            c.window_s,
            if c.peer == "aiperf" {
                " (aiperf's phase window)"
            } else {
                ""
            }
        );
        let width = c
            .metrics
            .keys()
            .map(|k| k.len() + c.peer.len() + 1)
            .max()
            .unwrap_or(18);
        for (name, m) in &c.metrics {
            // The peer's own percentiles of every sample where kept (`*`),
            // else the histogram's.
            let (p50, p99, mark) = match &m.exact {
                Some(e) => (
                    pct_ms(e.count, 0.5, e.p50),
                    pct_ms(e.count, 0.99, e.p99),
                    format!("  * {}", e.method.as_str()),
                ),
                None => (
                    pct_ms(m.count, 0.5, m.p50),
                    pct_ms(m.count, 0.99, m.p99),
                    String::new(),
                ),
            };
            let _ = writeln!(
                s,
                "  {:<width$} {:>8} mean {:>9} p50 {:>9} p99 {:>9}{mark}",
                format!("{}.{name}", c.peer),
                m.count,
                pct_ms(m.count, 0.0, m.mean),
                p50,
                p99
            );
        }
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
        "  generator: {}, CPU {:.3}s ({:.2} us/request; {:.2} us of work, busy-wait {:.3}s excluded), peak {}",
        super::counted(g.threads.into(), "thread"), g.cpu_s, g.cpu_us_per_request, g.work_us_per_request, g.spin_s,
        super::counted(g.peak_connections, "connection")
    );
    let c = &r.connections;
    if let (true, Some(connect), Some(shake)) = (c.tls, &c.connect, &c.tls_handshake) {
        let failed: u64 = c.handshake_failures.values().sum();
        let _ = writeln!(
            s,
            "  tls: {} handshakes ({} resumed, {failed} failed), handshake p50 {} ms max {} ms; connect p50 {} ms",
            shake.count,
            c.tls_resumed,
            fmt_ms(shake.p50),
            fmt_ms(shake.max),
            fmt_ms(connect.p50)
        );
    }
    // Only a warm start that did something: sent a warm-up request, or
    // found bytes no request asked for and closed the connection.
    if let Some(w) = c
        .warm_up
        .as_ref()
        .filter(|w| w.requests + w.failed + w.unsolicited > 0)
    {
        let service = w.service_p50_ms.map_or_else(String::new, |ms| {
            format!(" (service p50 {} ms)", fmt_ms(ms))
        });
        let _ = writeln!(
            s,
            "  warm start ({}): {} of {} warm-up requests answered before the clock{service}, {} failed; {} connections closed for bytes before any request",
            w.mode, w.answered, w.requests, w.failed, w.unsolicited
        );
    }
    for t in &r.thresholds {
        let measured = if t.samples == Some(0) {
            "no samples".to_string()
        } else {
            format!("measured {}", t.value)
        };
        let _ = writeln!(
            s,
            "  threshold {:<28} {} ({measured})",
            t.expr,
            if t.passed { "ok" } else { "BREACHED" },
        );
    }
    for w in &g.warnings {
        let _ = writeln!(s, "  warning: {w}");
    }
    s
}

/// A number of seconds or requests per second, without trailing zeros.
fn trim_s(v: f64) -> String {
    let t = format!("{v:.3}");
    let t = t.trim_end_matches('0').trim_end_matches('.');
    t.to_string()
}

/// The samples a percentile `q` needs to be told apart from the maximum:
/// 1 / (1 - q), so 2 for p50, 10 for p90, 100 for p99, 1000 for p99.9;
/// 1 for the maximum and the mean (`q` 0).
pub fn samples_for_percentile(q: f64) -> u64 {
    if q <= 0.0 {
        1
    } else {
        (1.0 / (1.0 - q)).round() as u64
    }
}

/// A percentile cell: `-` where `count` samples are too few for `q`
/// ([`samples_for_percentile`]), else [`fmt_ms`].
fn pct_ms(count: u64, q: f64, v: f64) -> String {
    if count < samples_for_percentile(q) {
        "-".to_string()
    } else {
        fmt_ms(v)
    }
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

/// A gRPC run's `by_grpc_status`, in code order (`other` last).
fn grpc_codes(r: &Report) -> Vec<(String, u64)> {
    let mut codes: Vec<(String, u64)> = r
        .errors
        .by_grpc_status
        .iter()
        .flatten()
        .filter(|(_, &n)| n > 0)
        .map(|(c, &n)| (c.clone(), n))
        .collect();
    codes.sort_by_key(|(c, _)| c.parse::<u64>().unwrap_or(u64::MAX));
    codes
}

/// A byte count in binary units (`512 B`, `1.5 KiB`, `12.3 MiB`).
///
/// A private stand-in for `report::num::bytes` (helper `text`'s shared
/// formatter): the lead swaps it in when both are merged.
fn bytes(n: u64) -> String {
    if n < 1000 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    while v >= 1000.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}
