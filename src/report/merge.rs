//! The reports of the shards of one run (e.g. from several machines)
//! combined into one: the shards checked ([`check_shards`]), counts added
//! and histograms merged exactly ([`merge_reports`]), the start skew
//! warned about ([`skew_warning`]). The command is [`crate::merge`].

use crate::report::{Metric, Metrics, Model, Report, ShardStart};
use crate::UsageError;

/// Which shards of a run a set of reports covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Coverage {
    /// The run's shard count N.
    pub count: u32,
    /// The shards present, ascending.
    pub present: Vec<u32>,
    /// The shards missing, ascending (empty for a complete set).
    pub missing: Vec<u32>,
}

/// The shard `K/N` a report covers.
fn shard_of(file: &str, r: &Report) -> Result<(u32, u32), UsageError> {
    let parsed = r.shard.split_once('/').and_then(|(k, n)| {
        let (k, n) = (k.parse::<u32>().ok()?, n.parse::<u32>().ok()?);
        (k < n).then_some((k, n))
    });
    parsed.ok_or_else(|| {
        if r.shard.starts_with("merged") {
            UsageError(format!(
                "cannot merge {file}: it is already a merged report (shard \"{}\"); \
                 merge the shards' own reports",
                r.shard
            ))
        } else {
            UsageError(format!(
                "cannot merge {file}: its shard \"{}\" is not K/N",
                r.shard
            ))
        }
    })
}

/// The first field in which two shards' plans differ, as (field, a, b).
fn plan_difference(
    a: &Report,
    b: &Report,
    na: u32,
    nb: u32,
) -> Option<(&'static str, String, String)> {
    let model = |r: &Report| match r.model {
        Model::Open => "open".to_string(),
        Model::Closed => format!(
            "closed with {}",
            super::num::counted(r.closed_workers.into(), "worker")
        ),
    };
    let arrival = |r: &Report| {
        let a = &r.arrival;
        match (a.burst_size, a.burstiness) {
            (Some(size), _) => format!("{} (burst size {size})", a.process),
            (_, Some(k)) => format!("{} (burstiness {k})", a.process),
            _ => a.process.clone(),
        }
    };
    // Each shard offers rate / N: the run's rate is that times N.
    let total = |r: &Report, n: u32| r.offered_rps * f64::from(n);
    let (ta, tb) = (total(a, na), total(b, nb));
    let slo = |r: &Report| serde_json::to_string(&r.slo).unwrap_or_default();
    // Reports of older versions name no protocol: not a difference.
    let protocols = match (&a.protocol, &b.protocol) {
        (Some(pa), Some(pb)) if pa != pb => Some((pa.clone(), pb.clone())),
        _ => None,
    };
    if a.target != b.target {
        Some(("target", a.target.clone(), b.target.clone()))
    } else if let Some((pa, pb)) = protocols {
        Some(("protocol", pa, pb))
    } else if a.model != b.model || a.closed_workers != b.closed_workers {
        Some(("model", model(a), model(b)))
    } else if a.arrival != b.arrival {
        Some(("arrival", arrival(a), arrival(b)))
    } else if a.seed != b.seed {
        Some(("seed", a.seed.to_string(), b.seed.to_string()))
    } else if (ta - tb).abs() > 1e-9 * ta.abs().max(tb.abs()) {
        Some(("offered rate", format!("{ta} req/s"), format!("{tb} req/s")))
    } else if a.planned_duration_s != b.planned_duration_s {
        Some((
            "duration",
            format!("{}s", a.planned_duration_s),
            format!("{}s", b.planned_duration_s),
        ))
    } else if a.warmup_s != b.warmup_s {
        Some((
            "warmup",
            format!("{}s", a.warmup_s),
            format!("{}s", b.warmup_s),
        ))
    } else if a.slo != b.slo {
        Some(("slo", slo(a), slo(b)))
    } else if na != nb {
        Some(("shard count", a.shard.clone(), b.shard.clone()))
    } else {
        None
    }
}

/// Checks that `inputs` (file name, report) are distinct shards of one run
/// (same target, protocol, model, arrival process and parameters, seed, offered rate
/// over all shards, duration, warmup, SLO and shard count) and, unless
/// `partial`, all of them.
///
/// # Errors
/// A [`UsageError`], one line naming the two files and the field that
/// differs, the two files that are the same shard, or the shards missing.
pub fn check_shards(inputs: &[(&str, &Report)], partial: bool) -> Result<Coverage, UsageError> {
    let Some(&(first_file, first)) = inputs.first() else {
        return Err(UsageError("merge needs at least one report".into()));
    };
    let (_, count) = shard_of(first_file, first)?;
    let mut owner: Vec<Option<&str>> = vec![None; count as usize];
    for &(file, r) in inputs {
        let (k, n) = shard_of(file, r)?;
        for name in Metrics::NAMES {
            if let Some(Err(e)) = r.metrics.get(name).map(Metric::try_histogram) {
                return Err(UsageError(format!(
                    "cannot merge {file}: metrics.{name}.hdr is unreadable: {e}"
                )));
            }
        }
        if let Some((field, a, b)) = plan_difference(first, r, count, n) {
            return Err(UsageError(format!(
                "cannot merge {first_file} and {file}: not shards of one run, different {field} \
                 ({a} vs {b})"
            )));
        }
        if let Some(other) = owner[k as usize].replace(file) {
            return Err(UsageError(format!(
                "cannot merge {other} and {file}: both are shard {k}/{n}"
            )));
        }
    }
    let (present, missing): (Vec<u32>, Vec<u32>) =
        (0..count).partition(|&k| owner[k as usize].is_some());
    if !missing.is_empty() && !partial {
        let list = |v: &[u32]| {
            v.iter()
                .map(|k| format!("{k}/{count}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(UsageError(format!(
            "cannot merge: shard {} missing (the files hold {}); add its report, or pass \
             --partial to merge an incomplete set",
            list(&missing),
            list(&present)
        )));
    }
    Ok(Coverage {
        count,
        present,
        missing,
    })
}

/// Merges the reports of the shards of one run after [`check_shards`]; a
/// partial set (`partial` and shards missing) is marked `partial`, its
/// `shard` names the shards merged and a warning names the missing ones.
///
/// # Errors
/// A [`UsageError`] from [`check_shards`].
pub fn merge_shards(inputs: &[(&str, &Report)], partial: bool) -> anyhow::Result<Report> {
    let coverage = check_shards(inputs, partial)?;
    let reports: Vec<&Report> = inputs.iter().map(|&(_, r)| r).collect();
    let mut m = merge_reports(&reports)?;
    m.shard_starts = reports
        .iter()
        .map(|r| ShardStart {
            shard: r.shard.clone(),
            start_unix_ns: r.start_unix_ns,
            start_offset_ns: r.start_offset_ns,
            argv: r.argv.clone(),
        })
        .collect();
    if coverage.missing.is_empty() {
        m.shard = format!("merged {}", coverage.count);
    } else {
        let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        m.shard = format!("merged {} of {}", list(&coverage.present), coverage.count);
        m.partial = true;
        m.generator.warnings.push(format!(
            "partial merge: shards {} of {} are missing; counts, rates and latency cover only \
             shards {}",
            list(&coverage.missing),
            coverage.count,
            list(&coverage.present)
        ));
    }
    Ok(m)
}

/// A report and the file it was read from.
pub type Input<'a> = (&'a str, &'a Report);

/// How far apart the shards began pacing, ns, and the first and last to
/// begin (file, report); `None` for fewer than two reports or when one
/// has no start (a report of an older version).
pub fn start_skew<'a>(inputs: &[Input<'a>]) -> Option<(u64, Input<'a>, Input<'a>)> {
    if inputs.len() < 2 || inputs.iter().any(|(_, r)| r.start_unix_ns == 0) {
        return None;
    }
    let began = |r: &Report| r.start_unix_ns.saturating_add(r.start_offset_ns);
    let first = *inputs.iter().min_by_key(|(_, r)| began(r))?;
    let last = *inputs.iter().max_by_key(|(_, r)| began(r))?;
    Some((began(last.1) - began(first.1), first, last))
}

/// The warning `merge` gives when the shards began pacing more than
/// `max_skew_ns` apart: by how much, and which files began first and last.
///
/// # Example
/// ```
/// # let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/report.md")).unwrap();
/// # let mut a: metronome::report::Report =
/// #     serde_json::from_str(text.split("```json").nth(1).unwrap().split("```").next().unwrap()).unwrap();
/// use metronome::report::merge::skew_warning;
/// a.start_unix_ns = 1_796_119_200_000_000_000;
/// a.start_offset_ns = 40_000;
/// let mut b = a.clone();
/// b.start_offset_ns = 2_540_000;
/// let w = skew_warning(&[("a.json", &a), ("b.json", &b)], 1_000_000).unwrap();
/// assert!(w.starts_with("shards began 2.500 ms apart"), "{w}");
/// assert_eq!(skew_warning(&[("a.json", &a), ("b.json", &b)], 3_000_000), None);
/// ```
pub fn skew_warning(inputs: &[(&str, &Report)], max_skew_ns: u64) -> Option<String> {
    let (skew, (first_file, first), (last_file, last)) = start_skew(inputs)?;
    (skew > max_skew_ns).then(|| {
        format!(
            "shards began {} apart, more than --max-skew {}: {last_file} (shard {}) began \
             at {} and {first_file} (shard {}) at {}; the merged figures mix schedules shifted \
             by that much (sync the clocks and give every shard one --start-at: \
             docs/distributed.md)",
            crate::report::num::unit(skew as f64 / 1e6, "ms"),
            crate::units::format_duration(std::time::Duration::from_nanos(max_skew_ns)),
            last.shard,
            crate::units::rfc3339_ns(last.start_unix_ns.saturating_add(last.start_offset_ns)),
            first.shard,
            crate::units::rfc3339_ns(first.start_unix_ns.saturating_add(first.start_offset_ns)),
        )
    })
}

/// The peers' views of shards, merged per peer: a peer's view is kept when
/// every shard has one (rates add up, histograms merge), in the first
/// shard's order.
fn merge_compat(reports: &[&Report]) -> Vec<crate::report::compat::Compat> {
    let Some(first) = reports.first() else {
        return Vec::new();
    };
    first
        .compat
        .iter()
        .filter_map(|view| {
            let all: Vec<&crate::report::compat::Compat> = reports
                .iter()
                .filter_map(|r| r.compat.iter().find(|c| c.peer == view.peer))
                .collect();
            merge_view(&all, reports.len())
        })
        .collect()
}

/// One peer's views of `shards` shards, merged; `None` unless every shard
/// has one.
fn merge_view(
    all: &[&crate::report::compat::Compat],
    shards: usize,
) -> Option<crate::report::compat::Compat> {
    let first = *all.first()?;
    if all.len() != shards {
        return None;
    }
    let mut c = first.clone();
    c.request_throughput_rps = all.iter().map(|c| c.request_throughput_rps).sum();
    c.output_throughput_tokens_per_s = all.iter().map(|c| c.output_throughput_tokens_per_s).sum();
    c.window_s = all.iter().map(|c| c.window_s).fold(0.0, f64::max);
    for (name, metric) in &mut c.metrics {
        let ms: Vec<&Metric> = all.iter().filter_map(|c| c.metrics.get(name)).collect();
        *metric = merge_metrics(&ms);
    }
    Some(c.without_exact())
}

/// The `by_request` rows of several reports as one: rows of the same name
/// add their counts and errors and merge their histograms exactly; names
/// in the order they first appear.
pub fn merge_request_rows(reports: &[&Report]) -> Vec<crate::report::RequestReport> {
    let mut names: Vec<&str> = Vec::new();
    for r in reports {
        for row in &r.by_request {
            if !names.contains(&row.name.as_str()) {
                names.push(&row.name);
            }
        }
    }
    names
        .into_iter()
        .map(|name| {
            let rows: Vec<&crate::report::RequestReport> = reports
                .iter()
                .flat_map(|r| r.by_request.iter().filter(|x| x.name == name))
                .collect();
            let sum = |f: fn(&crate::report::RequestReport) -> u64| rows.iter().map(|x| f(x)).sum();
            let mut errors_by_kind = std::collections::BTreeMap::new();
            for row in &rows {
                for (k, v) in &row.errors_by_kind {
                    *errors_by_kind.entry(k.clone()).or_insert(0) += v;
                }
            }
            let metric = |f: fn(&crate::report::RequestReport) -> &Metric| {
                merge_metrics(&rows.iter().map(|x| f(x)).collect::<Vec<_>>())
            };
            crate::report::RequestReport {
                name: name.to_string(),
                scheduled: sum(|x| x.scheduled),
                sent: sum(|x| x.sent),
                ok: sum(|x| x.ok),
                errors: sum(|x| x.errors),
                dropped: sum(|x| x.dropped),
                unsent: sum(|x| x.unsent),
                errors_by_kind,
                latency: metric(|x| &x.latency),
                service_time: metric(|x| &x.service_time),
                send_lag: metric(|x| &x.send_lag),
                ttft: {
                    let ms: Vec<&Metric> = rows.iter().filter_map(|x| x.ttft.as_ref()).collect();
                    (!ms.is_empty()).then(|| merge_metrics(&ms))
                },
            }
        })
        .collect()
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

/// Combines reports (the shards of one run: [`merge_shards`] checks that
/// first); the `shard` says how many were merged.
///
/// # Errors
/// A [`UsageError`] when no report is given.
pub fn merge_reports(reports: &[&Report]) -> anyhow::Result<Report> {
    let first = *reports
        .first()
        .ok_or_else(|| UsageError("merge needs at least one report".into()))?;
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
    // The earliest zero, and how long after it the last shard began.
    m.start_unix_ns = reports.iter().map(|r| r.start_unix_ns).min().unwrap_or(0);
    m.start_time = crate::units::rfc3339_ns(m.start_unix_ns);
    m.start_offset_ns = reports
        .iter()
        .map(|r| {
            r.start_unix_ns
                .saturating_add(r.start_offset_ns)
                .saturating_sub(m.start_unix_ns)
        })
        .max()
        .unwrap_or(0);
    // Counters add up (shards run side by side: the window is the
    // longest, its rates add up); `derive` below sets the ratios.
    for r in &reports[1..] {
        m.requests.add(&r.requests);
        m.errors.add(&r.errors);
        m.window.add(&r.window);
        m.generator.add(&r.generator);
        m.transfer = match (m.transfer, r.transfer) {
            (Some(mut a), Some(b)) => {
                a.add(&b);
                Some(a)
            }
            (a, b) => a.or(b),
        };
    }
    m.interrupted = reports.iter().any(|r| r.interrupted);
    let pick = |f: fn(&Report) -> &Metric| {
        merge_metrics(&reports.iter().map(|r| f(r)).collect::<Vec<_>>())
    };
    m.metrics.latency = pick(|r| &r.metrics.latency);
    m.metrics.service_time = pick(|r| &r.metrics.service_time);
    m.metrics.send_lag = pick(|r| &r.metrics.send_lag);
    m.metrics.ttft = pick(|r| &r.metrics.ttft);
    m.metrics.itl = pick(|r| &r.metrics.itl);
    m.metrics.tpot = pick(|r| &r.metrics.tpot);
    m.metrics.itl_chunk = pick(|r| &r.metrics.itl_chunk);
    m.metrics.ttfat = pick(|r| &r.metrics.ttfat);
    m.metrics.tail = pick(|r| &r.metrics.tail);
    m.compat = merge_compat(reports);
    let corrected: Vec<&Metric> = reports
        .iter()
        .filter_map(|r| r.metrics.latency_corrected.as_ref())
        .collect();
    m.metrics.latency_corrected = (!corrected.is_empty()).then(|| merge_metrics(&corrected));
    // Intervals: counts add; quantiles cannot be merged from summaries, so
    // each is the largest of the shards' (an upper bound, documented).
    m.intervals = merge_rows(reports, |r| &r.intervals);
    m.drain = merge_rows(reports, |r| &r.drain);
    // Stages: counts add, and the latency histograms merge exactly.
    for (i, st) in m.stages.iter_mut().enumerate() {
        let rows: Vec<&crate::report::StageReport> =
            reports.iter().filter_map(|r| r.stages.get(i)).collect();
        st.offered = rows.iter().map(|x| x.offered).sum();
        st.scheduled = rows.iter().map(|x| x.scheduled).sum();
        st.sent = rows.iter().map(|x| x.sent).sum();
        st.ok = rows.iter().map(|x| x.ok).sum();
        st.errors = rows.iter().map(|x| x.errors).sum();
        st.dropped = rows.iter().map(|x| x.dropped).sum();
        st.unsent = rows.iter().map(|x| x.unsent).sum();
        st.latency = merge_metrics(&rows.iter().map(|x| &x.latency).collect::<Vec<_>>());
        st.p50 = st.latency.p50;
        st.p99 = st.latency.p99;
    }
    // Request names: rows of one name (in any shard) add their counts and
    // merge their histograms exactly, in the order names first appear.
    m.by_request = merge_request_rows(reports);
    m.sessions = crate::report::SessionsReport::merge(
        &reports
            .iter()
            .filter_map(|r| r.sessions.as_ref())
            .collect::<Vec<_>>(),
    );
    m.derive();
    let g = &mut m.generator;
    g.behind = if m.model == crate::report::Model::Open {
        crate::report::behind::behind(&m.intervals, None, m.max_concurrency, m.duration_s)
    } else {
        Vec::new()
    };
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
    let c = &mut m.connections;
    let merged = |f: fn(&Report) -> Option<&Metric>| {
        let ms: Vec<&Metric> = reports.iter().filter_map(|r| f(r)).collect();
        (!ms.is_empty()).then(|| merge_metrics(&ms))
    };
    c.connect = merged(|r| r.connections.connect.as_ref());
    c.tls_handshake = merged(|r| r.connections.tls_handshake.as_ref());
    c.tls_resumed = reports.iter().map(|r| r.connections.tls_resumed).sum();
    c.insecure = reports.iter().any(|r| r.connections.insecure);
    c.keylog = reports.iter().any(|r| r.connections.keylog);
    c.handshake_failures.clear();
    for r in reports {
        for (k, v) in &r.connections.handshake_failures {
            *c.handshake_failures.entry(k.clone()).or_default() += v;
        }
    }
    c.tls_versions.clear();
    c.alpn.clear();
    for r in reports {
        for (k, v) in &r.connections.tls_versions {
            *c.tls_versions.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &r.connections.alpn {
            *c.alpn.entry(k.clone()).or_default() += v;
        }
    }
    let h2s: Vec<_> = reports.iter().filter_map(|r| r.connections.h2).collect();
    c.h2 = (!h2s.is_empty()).then(|| crate::report::H2Streams {
        peak_streams: h2s.iter().map(|h| h.peak_streams).max().unwrap_or(0),
        client_max_streams: h2s.iter().map(|h| h.client_max_streams).max().unwrap_or(0),
        server_max_streams: h2s.iter().filter_map(|h| h.server_max_streams).min(),
    });
    let zero: Vec<_> = reports
        .iter()
        .filter_map(|r| r.connections.h3_0rtt)
        .collect();
    c.h3_0rtt = (!zero.is_empty()).then(|| crate::report::ZeroRttReport::merge(&zero));
    let workloads: Vec<_> = reports.iter().filter_map(|r| r.workload.as_ref()).collect();
    if let Some(w) = &mut m.workload {
        let input: Vec<_> = workloads.iter().map(|w| &w.input_tokens).collect();
        let output: Vec<_> = workloads.iter().map(|w| &w.output_tokens).collect();
        w.input_tokens = super::workload::TokenDist::merge(&input);
        w.output_tokens = super::workload::TokenDist::merge(&output);
    }
    Ok(m)
}

/// The rows of one interval list, shard by shard: row `i` of every report
/// that has one, added ([`crate::report::IntervalReport::add`]).
fn merge_rows(
    reports: &[&Report],
    pick: impl Fn(&Report) -> &Vec<crate::report::IntervalReport>,
) -> Vec<crate::report::IntervalReport> {
    let n = reports.iter().map(|r| pick(r).len()).max().unwrap_or(0);
    let mut rows = Vec::with_capacity(n);
    for i in 0..n {
        let mut iv = None::<crate::report::IntervalReport>;
        for r in reports {
            if let Some(x) = pick(r).get(i) {
                match &mut iv {
                    None => iv = Some(x.clone()),
                    Some(a) => a.add(x),
                }
            }
        }
        rows.extend(iv);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Errors, Requests, Window};

    /// The example report of docs/report.md, its ratios derived from its
    /// counts.
    fn example() -> Report {
        let doc = include_str!("../../docs/report.md");
        let start = doc.find("```json").unwrap() + 7;
        let end = start + doc[start..].find("```").unwrap();
        let mut r: Report = serde_json::from_str(&doc[start..end]).unwrap();
        r.derive();
        r
    }

    /// The fields a merge derives or adds, which must equal the input's
    /// when there is one input.
    fn derived(r: &Report) -> (f64, f64, f64, f64, Requests, Errors, Window) {
        (
            r.error_rate,
            r.goodput,
            r.generator.cpu_us_per_request,
            r.generator.work_us_per_request,
            r.requests,
            r.errors.clone(),
            r.window,
        )
    }

    /// Shards that spoke different protocols are not one run (a report of
    /// an older version, without one, is not refused for it).
    #[test]
    fn shards_of_different_protocols_differ() {
        let mut a = example();
        a.protocol = Some("h2c".into());
        let mut b = a.clone();
        assert_eq!(plan_difference(&a, &b, 2, 2), None);
        b.protocol = Some("http/1.1".into());
        assert_eq!(
            plan_difference(&a, &b, 2, 2),
            Some(("protocol", "h2c".into(), "http/1.1".into()))
        );
        b.protocol = None;
        assert_eq!(plan_difference(&a, &b, 2, 2), None);
        // The same protocol: later fields are still compared.
        b.protocol = a.protocol.clone();
        b.seed = a.seed + 1;
        assert_eq!(plan_difference(&a, &b, 2, 2).map(|d| d.0), Some("seed"));
    }

    /// HTTP/3 0-RTT counts add up across shards (`enabled` when any
    /// shard had the flag); shards without them give none.
    #[test]
    fn zero_rtt_counts_are_summed() {
        use crate::report::ZeroRttReport;
        let mut a = example();
        let mut b = a.clone();
        assert_eq!(merge_reports(&[&a, &b]).unwrap().connections.h3_0rtt, None);
        a.connections.h3_0rtt = Some(ZeroRttReport {
            enabled: true,
            attempted: 5,
            accepted: 4,
            rejected: 1,
            requests: 9,
            resent: 2,
        });
        b.connections.h3_0rtt = Some(ZeroRttReport {
            enabled: false,
            attempted: 3,
            accepted: 3,
            rejected: 0,
            requests: 1,
            resent: 0,
        });
        let m = merge_reports(&[&a, &b]).unwrap();
        assert_eq!(
            m.connections.h3_0rtt,
            Some(ZeroRttReport {
                enabled: true,
                attempted: 8,
                accepted: 7,
                rejected: 1,
                requests: 10,
                resent: 2,
            })
        );
    }

    #[test]
    fn a_merge_of_one_report_keeps_its_derived_numbers() {
        let r = example();
        assert!(r.requests.sent > 0 && r.generator.cpu_s > 0.0);
        let m = merge_reports(&[&r]).unwrap();
        assert_eq!(derived(&m), derived(&r));
        assert_eq!(m.intervals, r.intervals);
        assert_eq!(
            (m.generator.threads, m.generator.cpu_s, m.generator.spin_s),
            (r.generator.threads, r.generator.cpu_s, r.generator.spin_s)
        );
    }

    /// With nothing sent, CPU per request is 0 in a run's report and in a
    /// merge alike (a merge once divided by `max(sent, 1)`).
    #[test]
    fn cpu_per_request_is_zero_when_nothing_was_sent() {
        let mut r = example();
        r.requests.sent = 0;
        r.requests.ok = 0;
        r.requests.errors = 0;
        r.generator.cpu_s = 1.5;
        r.generator.spin_s = 0.5;
        r.derive();
        assert_eq!(r.generator.cpu_us_per_request, 0.0);
        assert_eq!(r.generator.work_us_per_request, 0.0);
        assert_eq!(r.error_rate, 0.0);
        let m = merge_reports(&[&r, &r]).unwrap();
        assert_eq!(m.generator.cpu_s, 3.0);
        assert_eq!(m.generator.cpu_us_per_request, 0.0);
        assert_eq!(m.generator.work_us_per_request, 0.0);
        let one = merge_reports(&[&r]).unwrap();
        assert_eq!(derived(&one), derived(&r));
    }

    /// Views merge per peer, in the first shard's order; a peer missing
    /// from a shard is left out.
    #[test]
    fn compat_views_merge_per_peer() {
        use crate::report::compat::Compat;
        let view = |peer: &str, rps: f64| Compat {
            peer: peer.into(),
            sources: vec![],
            request_throughput_rps: rps,
            output_throughput_tokens_per_s: 10.0 * rps,
            window_s: 1.0,
            metrics: [("ttft".to_string(), Metric::empty())]
                .into_iter()
                .collect(),
            notes: vec![],
        };
        let mut a = example();
        a.compat = vec![
            view("vllm", 1.0),
            view("guidellm", 2.0),
            view("aiperf", 3.0),
        ];
        let mut b = example();
        b.compat = vec![view("aiperf", 30.0), view("vllm", 10.0)];
        let m = merge_reports(&[&a, &b]).unwrap();
        let got: Vec<(&str, f64, f64)> = m
            .compat
            .iter()
            .map(|c| {
                (
                    c.peer.as_str(),
                    c.request_throughput_rps,
                    c.output_throughput_tokens_per_s,
                )
            })
            .collect();
        assert_eq!(got, [("vllm", 11.0, 110.0), ("aiperf", 33.0, 330.0)]);
        b.compat.clear();
        assert!(merge_reports(&[&a, &b]).unwrap().compat.is_empty());
    }

    /// Two shards: counts add up and the ratios come from the sums.
    #[test]
    fn a_merge_derives_its_ratios_from_the_summed_counts() {
        let a = example();
        let mut b = a.clone();
        b.requests.errors += 10;
        b.requests.sent += 10;
        b.generator.cpu_s *= 2.0;
        let m = merge_reports(&[&a, &b]).unwrap();
        let q = m.requests;
        assert_eq!(q.sent, a.requests.sent + b.requests.sent);
        assert_eq!(q.ok_without_done, 2 * a.requests.ok_without_done);
        assert_eq!(m.error_rate, q.errors as f64 / (q.ok + q.errors) as f64);
        assert_eq!(
            m.generator.cpu_us_per_request,
            (a.generator.cpu_s + b.generator.cpu_s) * 1e6 / q.sent as f64
        );
    }
}
