//! The one-screen text summary of a report (`--format text`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use metronome_core::measure::FramingCause;

use super::enough::enough;
use super::num::{bytes, count, counted, num, pct, tick, unit};
use super::{Metric, Model, Report};

/// Renders the one-screen text summary.
pub fn render_text(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "metronome {} -> {}  [{} model, {} engine, {}]",
        r.run_id, r.target, r.model, r.engine, r.arrival.process
    );
    if let Some(line) = protocol_line(r) {
        let _ = writeln!(s, "  protocol: {line}");
    }
    if let Some(argv) = &r.argv {
        // A merged report's is its first shard's.
        let whose = r
            .shard_starts
            .first()
            .map_or_else(String::new, |f| format!(" (shard {}'s)", f.shard));
        let _ = writeln!(s, "  command{whose}: {}", super::argv::shell_words(argv));
    }
    if r.model == Model::Closed {
        let _ = writeln!(
            s,
            "  closed loop, {}: {} achieved over {} (no schedule: a stall silently lowers the rate)",
            counted(r.closed_workers.into(), "worker"), unit(r.achieved_rps, "req/s"), unit(r.duration_s, "s")
        );
    } else if let Some(sess) = r.sessions.filter(|x| x.planned_turns > 0) {
        // Conversations: the schedule offers sessions, the requests are
        // their turns; the ratio is of requests to requests.
        let ratio = if sess.offered_turns_per_s > 0.0 {
            r.achieved_rps / sess.offered_turns_per_s
        } else {
            0.0
        };
        let _ = writeln!(
            s,
            "  offered {} ({} turns planned: {}), achieved {} ({} of the planned turns) over {}; throughput {} over {} ({} within the schedule)",
            unit(r.offered_rps, "sessions/s"), count(sess.planned_turns), unit(sess.offered_turns_per_s, "req/s"),
            unit(r.achieved_rps, "req/s"), pct(ratio), unit(r.duration_s, "s"), unit(r.throughput_rps, "ok/s"),
            unit(r.window.window_s, "s"), unit(r.window.in_schedule_throughput_rps, "ok/s")
        );
    } else {
        let ratio = if r.offered_rps > 0.0 {
            r.achieved_rps / r.offered_rps
        } else {
            0.0
        };
        // Sends that waited into the drain are not the schedule's rate.
        let late = match r.window.late_sent {
            0 => String::new(),
            n => format!(", {} more sent after its end", count(n)),
        };
        let _ = writeln!(
            s,
            "  offered {}, achieved {} ({}) on schedule over {}{late}; throughput {} over {} ({} within the schedule)",
            unit(r.offered_rps, "req/s"), unit(r.achieved_rps, "req/s"), pct(ratio), unit(r.duration_s, "s"),
            unit(r.throughput_rps, "ok/s"), unit(r.window.window_s, "s"),
            unit(r.window.in_schedule_throughput_rps, "ok/s")
        );
    }
    if let Some(n) = r.count {
        let sched = r.requests.scheduled;
        let tail = if r.shard != "0/1" {
            format!(", {} of them in this report", count(sched))
        } else if sched < n {
            format!(", cut by the duration after {}", count(sched))
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "  a count (-n): the schedule's first {}{tail}",
            counted(n, "request")
        );
    }
    let q = &r.requests;
    let _ =
        writeln!(
        s,
        "  requests: scheduled {}  sent {}  ok {}  errors {}  dropped {}  unsent {}  timeouts {}",
        count(q.scheduled), count(q.sent), count(q.ok), count(q.errors), count(q.dropped),
        count(q.unsent), count(q.timeouts)
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
        "  error rate {}  goodput {} ({})",
        pct(r.error_rate),
        pct(r.goodput),
        unit(r.window.goodput_rps, "good/s")
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
            .map(|(k, &n)| format!("{k} {}", count(n)))
            .chain(
                r.errors
                    .by_status
                    .iter()
                    .map(|(c, &n)| format!("HTTP {c}: {}", count(n))),
            )
            .chain(
                grpc_codes(r)
                    .into_iter()
                    .map(|(c, n)| match super::grpc_code_name(&c) {
                        Some(name) => format!("grpc-status {c} {name}: {}", count(n)),
                        None => format!("grpc-status {c}: {}", count(n)),
                    }),
            )
            .collect();
        let _ = writeln!(s, "  errors by kind: {}", kinds.join(", "));
        // Which check the answers failed.
        if let Some(by) = r
            .errors
            .by_check
            .as_ref()
            .filter(|b| b.values().any(|&n| n > 0))
        {
            let which: Vec<String> = by
                .iter()
                .filter(|(_, &n)| n > 0)
                .map(|(k, &n)| format!("{k} {}", count(n)))
                .collect();
            let _ = writeln!(s, "  failed checks: {}", which.join(", "));
        }
        // The parser's cause, each once: the fix is often in the URL.
        for cause in FramingCause::ALL {
            let n = r
                .errors
                .bad_framing_by_cause
                .get(cause.name())
                .copied()
                .unwrap_or(0);
            if n > 0 {
                let _ = writeln!(s, "  bad framing ({}): {}", count(n), cause.describe());
            }
        }
    }
    if q.unsent > 0 {
        let reasons: Vec<String> = r
            .errors
            .unsent_by_reason
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(k, &n)| format!("{k} {}", count(n)))
            .collect();
        let _ = writeln!(s, "  never sent: {}", reasons.join(", "));
    }
    let g = &r.generator;
    if q.retried + g.connections_closed_idle + g.connections_unsolicited > 0 {
        let _ = writeln!(
            s,
            "  connections: {} closed by the server while idle, {} closed for unsolicited bytes; {} requests retried",
            count(g.connections_closed_idle), count(g.connections_unsolicited), count(q.retried)
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "  {:<18} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "metric (ms)", "count", "min", "p50", "p90", "p95", "p99", "p99.9", "max", "mean"
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
            "  {:<18} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            name,
            count(m.count),
            pct_ms(m.count, 0.0, m.min),
            pct_ms(m.count, 0.5, m.p50),
            pct_ms(m.count, 0.9, m.p90),
            pct_ms(m.count, 0.95, m.p95),
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
                "  {:<18} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
                name,
                count(e.count),
                "",
                pct_ms(e.count, 0.5, e.p50),
                pct_ms(e.count, 0.9, e.p90),
                pct_ms(e.count, 0.95, e.p95),
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
                format!("{}-{} s", tick(st.from_s), tick(st.until_s)),
                format!("{} -> {}", tick(st.start_rps), tick(st.target_rps)),
                count(st.scheduled),
                count(st.sent),
                count(st.ok),
                count(st.errors),
                count(st.dropped),
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
                count(q.scheduled),
                count(q.sent),
                count(q.ok),
                count(q.errors),
                count(q.dropped),
                pct_ms(q.latency.count, 0.5, q.latency.p50),
                pct_ms(q.latency.count, 0.99, q.latency.p99),
                pct_ms(q.latency.count, 0.0, q.latency.max),
                ttft_cols
            );
        }
    }
    if let Some(x) = &r.sessions {
        let _ = writeln!(
            s,
            "  sessions: {} started, {} completed, {} abandoned (a turn failed), {} cut by the \
             end, {} unfinished{}; {} later turns; think time {}",
            count(x.started),
            count(x.completed),
            count(x.abandoned),
            count(x.cut),
            count(x.unfinished),
            if x.overflowed > 0 {
                format!(
                    ", {} overflowed (no room was left for their next turn)",
                    count(x.overflowed)
                )
            } else {
                String::new()
            },
            count(x.follow_ups),
            unit(x.think_time_ms, "ms")
        );
    }
    if let Some(t) = &r.arrival.trace {
        let _ = writeln!(
            s,
            "  trace: {} ({} offsets, speed {})",
            t.file,
            count(t.offsets),
            num(t.speed)
        );
    }
    if r.output_tokens_per_s > 0.0 {
        let _ = writeln!(
            s,
            "  output tokens/s: {} over the real window {} (first send to last completion); \
             {} within the schedule",
            num(r.output_tokens_per_s),
            unit(r.window.window_s, "s"),
            num(r.window.in_schedule_output_tokens_per_s)
        );
    }
    for c in &r.compat {
        let _ = writeln!(
            s,
            "  as {} defines them (clock from the actual send; ms{}; docs/metrics.md): {}, {} over {}{}",
            c.peer,
            if c.metrics.contains_key("output_token_throughput_per_user") {
                ", *_throughput* tokens/s"
            } else {
                ""
            },
            unit(c.request_throughput_rps, "req/s"),
            unit(c.output_throughput_tokens_per_s, "output tokens/s"),
            unit(c.window_s, "s"),
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
                count(m.count),
                pct_ms(m.count, 0.0, m.mean),
                p50,
                p99
            );
        }
    }
    if let Some(w) = &r.workload {
        let _ = writeln!(
            s,
            "  workload: {} on {} (model from {}), {}, {}",
            w.model,
            w.endpoint,
            w.model_source,
            w.prompts,
            counted(w.distinct_requests, "distinct request")
        );
        for (name, d) in [("input", &w.input_tokens), ("output", &w.output_tokens)] {
            // Each statistic by the one rule ([`enough`]).
            let q = |q: f64, v: u64| {
                if enough(d.count, q) {
                    count(v)
                } else {
                    "-".to_string()
                }
            };
            let _ = writeln!(
                s,
                "  {name} tokens per request: mean {}  p50 {}  p90 {}  p99 {}  max {}  ({} requests, {} tokens)",
                pct_ms(d.count, 0.0, d.mean), q(0.5, d.p50), q(0.9, d.p90), q(0.99, d.p99), q(0.0, d.max),
                count(d.count), count(d.total)
            );
        }
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "  generator: {}, CPU {} ({}; {} of work, busy-wait {} excluded), peak {}",
        counted(g.threads.into(), "thread"),
        unit(g.cpu_s, "s"),
        unit(g.cpu_us_per_request, "us/request"),
        unit(g.work_us_per_request, "us"),
        unit(g.spin_s, "s"),
        counted(g.peak_connections, "connection")
    );
    let c = &r.connections;
    if let (true, Some(connect), Some(shake)) = (c.tls, &c.connect, &c.tls_handshake) {
        let failed: u64 = c.handshake_failures.values().sum();
        let _ = writeln!(
            s,
            "  tls: {} handshakes ({} resumed, {} failed), handshake p50 {} max {}; connect p50 {}",
            count(shake.count),
            count(c.tls_resumed),
            count(failed),
            unit(shake.p50, "ms"),
            unit(shake.max, "ms"),
            unit(connect.p50, "ms")
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
            format!(" (service p50 {})", unit(ms, "ms"))
        });
        let _ = writeln!(
            s,
            "  warm start ({}): {} of {} warm-up requests answered before the clock{service}, {} failed; {} connections closed for bytes before any request",
            w.mode, count(w.answered), count(w.requests), count(w.failed), count(w.unsolicited)
        );
    }
    for t in &r.thresholds {
        // Reports of older versions: a metric with no samples failed as
        // "no samples", with no reason given.
        let why = t
            .not_evaluated
            .clone()
            .or_else(|| (t.samples == Some(0)).then(|| "no samples".to_string()));
        let (verdict, said) = match why {
            Some(why) => ("NOT EVALUATED", why),
            None => (
                if t.passed { "ok" } else { "BREACHED" },
                format!("measured {}", measured(&t.expr, t.value)),
            ),
        };
        let _ = writeln!(s, "  threshold {:<28} {verdict} ({said})", t.expr);
    }
    for w in &g.warnings {
        let _ = writeln!(s, "  warning: {w}");
    }
    s
}

/// A threshold's measured value with its unit, from the quantity its
/// expression names: ms for a metric's statistic, req/s or tokens/s for a
/// rate, a count for a count, a plain number for a fraction (as the
/// expression writes it, `error_rate<0.01`).
fn measured(expr: &str, value: f64) -> String {
    let lhs = expr
        .split(['<', '>', '=', '!'])
        .next()
        .unwrap_or_default()
        .trim();
    match lhs {
        _ if lhs.contains('.') => unit(value, "ms"),
        "achieved_rps" => unit(value, "req/s"),
        "throughput_rps" => unit(value, "ok/s"),
        "output_tokens_per_s" => unit(value, "tokens/s"),
        "dropped" | "errors" | "timeouts" | "ok" | "sent" | "scheduled" if value >= 0.0 => {
            count(value as u64)
        }
        _ => num(value),
    }
}

/// A percentile cell: `-` where `count` samples are too few for `q`
/// ([`enough`]: the one rule), else the value through [`num`] (the
/// column's header names the unit).
fn pct_ms(samples: u64, q: f64, v: f64) -> String {
    if !enough(samples, q) {
        "-".to_string()
    } else {
        num(v)
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

/// The protocol of a report in one line: the protocol, over TLS its
/// versions and ALPN, over HTTP/2 the streams per connection, over HTTP/3
/// with `--http3-0rtt` its 0-RTT counts; `None` for a
/// report of an older version, which does not say. E.g. `h2; TLS TLSv1.3
/// x2; ALPN h2 x2; at most 7 streams at once on a connection (client cap
/// 100, server's SETTINGS_MAX_CONCURRENT_STREAMS 100)`.
pub fn protocol_line(r: &Report) -> Option<String> {
    let mut line = r.protocol.clone()?;
    let c = &r.connections;
    if !c.tls_versions.is_empty() {
        let list = |m: &BTreeMap<String, u64>| {
            m.iter()
                .map(|(k, n)| format!("{k} x{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        line += &format!("; TLS {}; ALPN {}", list(&c.tls_versions), list(&c.alpn));
    }
    if let (Some(h), Some("h3")) = (c.h2, r.protocol.as_deref()) {
        // The server's limit over QUIC: its initial MAX_STREAMS (docs/http3.md).
        let server = h
            .server_max_streams
            .map_or_else(String::new, |n| format!(", server's MAX_STREAMS {n}"));
        line += &format!(
            "; at most {} at once on a connection (client cap {}{server})",
            counted(h.peak_streams.into(), "stream"),
            h.client_max_streams
        );
    } else if let Some(h) = c.h2 {
        let server = h
            .server_max_streams
            .map_or_else(|| "unlimited".to_string(), |n| n.to_string());
        line += &format!(
            "; at most {} at once on a connection (client cap {}, server's \
             SETTINGS_MAX_CONCURRENT_STREAMS {server})",
            counted(h.peak_streams.into(), "stream"),
            h.client_max_streams
        );
    }
    if let Some(z) = c.h3_0rtt.filter(|z| z.enabled) {
        line += &format!(
            "; 0-RTT on {} ({} accepted, {} rejected), {} in 0-RTT ({} sent again)",
            counted(z.attempted, "connection"),
            count(z.accepted),
            count(z.rejected),
            counted(z.requests, "request"),
            count(z.resent)
        );
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::{measured, protocol_line};
    use crate::report::{Report, ZeroRttReport};

    /// With `--http3-0rtt` the protocol line ends with the 0-RTT counts;
    /// without it (zeros, `enabled` false) it says nothing of 0-RTT.
    #[test]
    fn protocol_line_counts_0rtt_when_on() {
        // The example report of docs/report.md, made an h3 run's.
        let doc = include_str!("../../docs/report.md");
        let start = doc.find("```json").unwrap() + 7;
        let end = start + doc[start..].find("```").unwrap();
        let mut r: Report = serde_json::from_str(&doc[start..end]).unwrap();
        r.protocol = Some("h3".into());
        r.connections.tls_versions.clear();
        r.connections.h2 = None;
        r.connections.h3_0rtt = Some(ZeroRttReport::default());
        assert_eq!(protocol_line(&r).as_deref(), Some("h3"));
        r.connections.h3_0rtt = Some(ZeroRttReport {
            enabled: true,
            attempted: 15,
            accepted: 14,
            rejected: 1,
            requests: 40,
            resent: 3,
        });
        assert_eq!(
            protocol_line(&r).as_deref(),
            Some(
                "h3; 0-RTT on 15 connections (14 accepted, 1 rejected), 40 requests in 0-RTT \
                 (3 sent again)"
            )
        );
    }

    /// A threshold's measured value carries the unit of its quantity.
    #[test]
    fn measured_names_the_unit() {
        assert_eq!(measured("latency.p99<50ms", 411.60914842493287), "411.6 ms");
        assert_eq!(measured("achieved_rps>=100", 99.996), "100.0 req/s");
        assert_eq!(measured("throughput_rps>1", 1234.6), "1,235 ok/s");
        assert_eq!(
            measured("output_tokens_per_s>1", 12.345678),
            "12.35 tokens/s"
        );
        assert_eq!(measured("dropped==0", 5018.0), "5,018");
        assert_eq!(measured("error_rate<0.01", 0.0123456), "0.01235");
    }
}
