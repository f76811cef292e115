//! `metronome report` (print a saved report) and `metronome merge` (combine
//! the reports of the shards of one run, e.g. from several machines).

use anyhow::Context;

use crate::cli::{FormatArg, MergeArgs, ReportArgs};
use crate::report::{Metric, Report, SCHEMA};
use crate::UsageError;

/// Reads and checks a JSON report.
///
/// # Errors
/// A [`UsageError`] when the file cannot be read or is not a v1 report.
pub fn load(path: &std::path::Path) -> anyhow::Result<Report> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("cannot read {}: {e}", path.display())))?;
    let r: Report = serde_json::from_str(&text)
        .map_err(|e| UsageError(format!("{} is not a {SCHEMA} report: {e}", path.display())))?;
    if r.schema != SCHEMA {
        return Err(UsageError(format!(
            "{}: schema '{}' is not {SCHEMA}",
            path.display(),
            r.schema
        ))
        .into());
    }
    Ok(r)
}

/// `metronome report FILE`.
///
/// # Errors
/// Bad input (exit 2) or an unwritable output.
pub fn report(args: &ReportArgs) -> anyhow::Result<i32> {
    let r = load(&args.file)?;
    if let Some(path) = &args.hgrm {
        std::fs::write(
            path,
            crate::report::hgrm::render_hgrm(&r.metrics.latency.to_histogram()),
        )
        .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.svg {
        std::fs::write(path, crate::report::svg::render_svg(&r))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    crate::run::print(&r, args.format)?;
    Ok(if r.thresholds.iter().all(|t| t.passed) {
        0
    } else {
        crate::EXIT_THRESHOLD
    })
}

/// `metronome merge FILE...`.
///
/// # Errors
/// Bad input (exit 2) or an unwritable output.
pub fn merge(args: &MergeArgs) -> anyhow::Result<i32> {
    let reports = args
        .files
        .iter()
        .map(|f| load(f))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let merged = merge_reports(&reports)?;
    if let Some(path) = &args.out {
        std::fs::write(path, serde_json::to_string_pretty(&merged)? + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if args.out.is_none() || args.format == FormatArg::Text {
        crate::run::print(&merged, args.format)?;
    }
    Ok(0)
}

/// Merges the metric of several reports: bucket counts add exactly; min,
/// max and the mean are combined exactly; quantiles are recomputed from the
/// merged buckets.
pub fn merge_metrics(ms: &[&Metric]) -> Metric {
    let mut h = metronome_core::histogram::Histogram::new();
    let mut sum = 0.0;
    let mut count = 0u64;
    let mut min = f64::INFINITY;
    let mut max = 0.0f64;
    for m in ms {
        h.merge(&m.to_histogram());
        sum += m.mean * m.count as f64;
        count += m.count;
        if m.count > 0 {
            min = min.min(m.min);
            max = max.max(m.max);
        }
    }
    let mut out = Metric::from_histogram(&h);
    if count > 0 {
        out.mean = sum / count as f64;
        out.min = min;
        out.max = max;
        for q in [
            &mut out.p50,
            &mut out.p90,
            &mut out.p95,
            &mut out.p99,
            &mut out.p999,
        ] {
            *q = q.min(max);
        }
    }
    out
}

/// Merges the reports of the shards of one run.
///
/// # Errors
/// A [`UsageError`] when the reports are not shards of one run (different
/// targets or models) or no report is given.
pub fn merge_reports(reports: &[Report]) -> anyhow::Result<Report> {
    let first = reports
        .first()
        .ok_or_else(|| UsageError("merge needs at least one report".into()))?;
    for r in reports {
        if r.target != first.target || r.model != first.model {
            return Err(UsageError(format!(
                "report {} ({} {}) is not a shard of the same run as {} ({} {})",
                r.run_id, r.model, r.target, first.run_id, first.model, first.target
            ))
            .into());
        }
    }
    let mut m = first.clone();
    m.run_id = reports
        .iter()
        .map(|r| r.run_id.as_str())
        .collect::<Vec<_>>()
        .join("+");
    m.shard = format!("merged {}", reports.len());
    m.offered_rps = reports.iter().map(|r| r.offered_rps).sum();
    m.achieved_rps = reports.iter().map(|r| r.achieved_rps).sum();
    m.throughput_rps = reports.iter().map(|r| r.throughput_rps).sum();
    m.output_tokens_per_s = reports.iter().map(|r| r.output_tokens_per_s).sum();
    m.duration_s = reports.iter().map(|r| r.duration_s).fold(0.0, f64::max);
    let q = &mut m.requests;
    *q = Default::default();
    m.errors = Default::default();
    for r in reports {
        let s = &r.requests;
        q.scheduled += s.scheduled;
        q.sent += s.sent;
        q.ok += s.ok;
        q.errors += s.errors;
        q.dropped += s.dropped;
        q.unsent += s.unsent;
        q.retried += s.retried;
        q.timeouts += s.timeouts;
        q.good += s.good;
        for (into, from) in [
            (&mut m.errors.by_kind, &r.errors.by_kind),
            (&mut m.errors.by_status, &r.errors.by_status),
            (
                &mut m.errors.bad_framing_by_cause,
                &r.errors.bad_framing_by_cause,
            ),
            (&mut m.errors.unsent_by_reason, &r.errors.unsent_by_reason),
        ] {
            for (k, v) in from {
                *into.entry(k.clone()).or_default() += v;
            }
        }
    }
    m.interrupted = reports.iter().any(|r| r.interrupted);
    let completed = m.requests.ok + m.requests.errors;
    m.error_rate = if completed > 0 {
        m.requests.errors as f64 / completed as f64
    } else {
        0.0
    };
    m.goodput = if m.requests.scheduled > 0 {
        m.requests.good as f64 / m.requests.scheduled as f64
    } else {
        0.0
    };
    let pick =
        |f: fn(&Report) -> &Metric| merge_metrics(&reports.iter().map(f).collect::<Vec<_>>());
    m.metrics.latency = pick(|r| &r.metrics.latency);
    m.metrics.service_time = pick(|r| &r.metrics.service_time);
    m.metrics.send_lag = pick(|r| &r.metrics.send_lag);
    m.metrics.ttft = pick(|r| &r.metrics.ttft);
    m.metrics.itl = pick(|r| &r.metrics.itl);
    m.metrics.tpot = pick(|r| &r.metrics.tpot);
    let corrected: Vec<&Metric> = reports
        .iter()
        .filter_map(|r| r.metrics.latency_corrected.as_ref())
        .collect();
    m.metrics.latency_corrected = (!corrected.is_empty()).then(|| merge_metrics(&corrected));
    // Intervals: counts add; quantiles cannot be merged from summaries, so
    // each is the largest of the shards' (an upper bound, documented).
    let n = reports.iter().map(|r| r.intervals.len()).max().unwrap_or(0);
    m.intervals.truncate(0);
    for i in 0..n {
        let mut iv = None::<crate::report::IntervalReport>;
        for r in reports {
            if let Some(x) = r.intervals.get(i) {
                match &mut iv {
                    None => iv = Some(x.clone()),
                    Some(a) => {
                        a.sent += x.sent;
                        a.ok += x.ok;
                        a.errors += x.errors;
                        a.unsent += x.unsent;
                        a.p50 = a.p50.max(x.p50);
                        a.p99 = a.p99.max(x.p99);
                        a.max = a.max.max(x.max);
                        a.send_lag_p99 = a.send_lag_p99.max(x.send_lag_p99);
                    }
                }
            }
        }
        if let Some(iv) = iv {
            m.intervals.push(iv);
        }
    }
    let g = &mut m.generator;
    g.threads = reports.iter().map(|r| r.generator.threads).sum();
    g.cpu_s = reports.iter().map(|r| r.generator.cpu_s).sum();
    g.spin_s = reports.iter().map(|r| r.generator.spin_s).sum();
    let sent = m.requests.sent.max(1) as f64;
    g.cpu_us_per_request = g.cpu_s * 1e6 / sent;
    g.work_us_per_request = (g.cpu_s - g.spin_s).max(0.0) * 1e6 / sent;
    g.connections_opened = reports.iter().map(|r| r.generator.connections_opened).sum();
    g.peak_connections = reports.iter().map(|r| r.generator.peak_connections).sum();
    g.waited_for_connection = reports
        .iter()
        .map(|r| r.generator.waited_for_connection)
        .sum();
    g.connections_closed_idle = reports
        .iter()
        .map(|r| r.generator.connections_closed_idle)
        .sum();
    g.connections_unsolicited = reports
        .iter()
        .map(|r| r.generator.connections_unsolicited)
        .sum();
    g.stopped = reports.iter().any(|r| r.generator.stopped);
    g.warnings = reports
        .iter()
        .flat_map(|r| {
            r.generator
                .warnings
                .iter()
                .map(move |w| format!("[{}] {w}", r.shard))
        })
        .collect();
    m.thresholds = reports.iter().flat_map(|r| r.thresholds.clone()).collect();
    Ok(m)
}
