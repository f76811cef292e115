//! A run's numbers as Prometheus series: names, labels, and the samples of
//! each interval and of the totals (docs/prometheus.md lists them).
//!
//! Names take the `metronome_` prefix and Prometheus' conventions: counters
//! end in `_total`, durations are in seconds and end in `_seconds`. Every
//! series carries `job="metronome"`, `run_id`, `shard` and `engine`, then
//! the user's `--prometheus-label`s (which may override those four); series
//! of one request of a mix add `request`, and are named `metronome_mix_*`
//! so that a `sum` over the run's plain series never counts a request twice.

use std::collections::BTreeMap;

use metronome_core::engine::SoFar;
use metronome_core::histogram::Histogram;

use super::native;
use super::proto::{Label, Sample, TimeSeries, WriteRequest};
use crate::report::{IntervalReport, Metric, Report};

/// What to send besides the defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Options {
    /// `--prometheus-label NAME=VALUE`, in the order given.
    pub labels: Vec<(String, String)>,
    /// `--prometheus-summaries`: classic summaries (`quantile` labels,
    /// `_sum`, `_count`) instead of native histograms, for servers without
    /// native histograms.
    pub summaries: bool,
}

/// Reads one percentile (ms) of a [`Metric`].
type Field = fn(&Metric) -> f64;

/// The quantiles of a classic summary, with the [`Metric`] field of each.
const SUMMARY_QUANTILES: [(&str, Field); 5] = [
    ("0.5", |m| m.p50),
    ("0.9", |m| m.p90),
    ("0.95", |m| m.p95),
    ("0.99", |m| m.p99),
    ("0.999", |m| m.p999),
];

/// The run-wide latency metrics sent, with their report names.
const METRICS: [&str; 6] = ["latency", "service_time", "send_lag", "ttft", "itl", "tpot"];

/// Parses `--prometheus-label NAME=VALUE`: a Prometheus label name
/// (`[a-zA-Z_][a-zA-Z0-9_]*`, not `__`-prefixed, not `request`, `quantile`
/// or `kind`, which metronome's own series carry) and any value.
///
/// ```
/// use metronome::prom::series::parse_label;
/// assert_eq!(parse_label("env=staging"), Ok(("env".into(), "staging".into())));
/// assert!(parse_label("9x=1").is_err());
/// assert!(parse_label("env").is_err());
/// ```
pub fn parse_label(text: &str) -> Result<(String, String), String> {
    let Some((name, value)) = text.split_once('=') else {
        return Err(format!("{text:?} is not NAME=VALUE"));
    };
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!(
            "label name {name:?} is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)"
        ));
    }
    if name.starts_with("__") || matches!(name, "request" | "quantile" | "kind") {
        return Err(format!(
            "label name {name:?} is reserved (names starting with __, request, quantile, kind)"
        ));
    }
    Ok((name.to_string(), value.to_string()))
}

/// The `run_id` label of a report: for a shard of a sharded run started
/// with `--start-at` (or their merge), the same for every shard: the
/// report's `run_id` formula applied to the common start instant and seed
/// (the report's own `run_id` holds each shard's own start); else the
/// report's `run_id`.
pub fn run_id_label(r: &Report) -> String {
    let sharded = r.shard.starts_with("merged")
        || r.shard
            .split_once('/')
            .is_some_and(|(_, n)| n.parse::<u32>().is_ok_and(|n| n > 1));
    if sharded && r.start_at.is_some() && r.start_unix_ns > 0 {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(r.start_unix_ns);
        crate::report::build::run_id(at, r.seed)
    } else {
        r.run_id.clone()
    }
}

/// Milliseconds since the Unix epoch of `s` seconds into the measured
/// phase (after the warmup) of `r`.
pub fn measured_ms(r: &Report, s: f64) -> i64 {
    let ns = r.start_unix_ns as i128 + ((r.warmup_s + s) * 1e9).round() as i128;
    // Rounded to the nearest millisecond.
    ((ns + 500_000).div_euclid(1_000_000)) as i64
}

/// One run's series as it goes: the labels every series carries and the
/// cumulative counts and histograms that each interval adds to.
#[derive(Debug)]
pub struct Run {
    labels: Vec<Label>,
    summaries: bool,
    counts: Counts,
    histograms: BTreeMap<&'static str, Box<Histogram>>,
}

/// The counters that intervals carry, cumulative.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Counts {
    scheduled: u64,
    sent: u64,
    ok: u64,
    errors: u64,
    dropped: u64,
    unsent: u64,
}

impl Counts {
    const NAMES: [&'static str; 6] = ["scheduled", "sent", "ok", "errors", "dropped", "unsent"];

    fn values(&self) -> [u64; 6] {
        [
            self.scheduled,
            self.sent,
            self.ok,
            self.errors,
            self.dropped,
            self.unsent,
        ]
    }

    fn add(&mut self, iv: &IntervalReport) {
        self.scheduled += iv.scheduled;
        self.sent += iv.sent;
        self.ok += iv.ok;
        self.errors += iv.errors;
        self.dropped += iv.dropped;
        self.unsent += iv.unsent;
    }
}

/// Collects samples by series, in the order series first appear.
#[derive(Default)]
struct Batch {
    index: BTreeMap<Vec<Label>, usize>,
    series: Vec<TimeSeries>,
}

impl Batch {
    fn entry(&mut self, base: &[Label], name: &str, extra: &[(&str, &str)]) -> &mut TimeSeries {
        let mut labels: Vec<Label> = base.to_vec();
        labels.push(label("__name__", name));
        for (n, v) in extra {
            labels.push(label(n, v));
        }
        labels.sort();
        let next = self.series.len();
        let i = *self.index.entry(labels.clone()).or_insert(next);
        if i == next {
            self.series.push(TimeSeries {
                labels,
                ..Default::default()
            });
        }
        &mut self.series[i]
    }

    fn sample(&mut self, base: &[Label], name: &str, extra: &[(&str, &str)], ts: i64, v: f64) {
        self.entry(base, name, extra).samples.push(Sample {
            value: v,
            timestamp: ts,
        });
    }

    fn finish(self) -> WriteRequest {
        WriteRequest {
            timeseries: self.series,
            metadata: Vec::new(),
        }
    }
}

fn label(name: &str, value: &str) -> Label {
    Label {
        name: name.to_string(),
        value: value.to_string(),
    }
}

impl Run {
    /// The series of a run with `r`'s identity (run id, shard, engine) and
    /// `opts`; counts start at zero.
    pub fn new(r: &Report, opts: &Options) -> Run {
        Run::with_identity(&run_id_label(r), &r.shard, &r.engine, opts)
    }

    /// The series of a run known by its `run_id`, `shard` (`K/N`) and
    /// `engine` labels before any report exists (the live push).
    pub fn with_identity(run_id: &str, shard: &str, engine: &str, opts: &Options) -> Run {
        let mut by_name: BTreeMap<String, String> = BTreeMap::new();
        by_name.insert("job".into(), "metronome".into());
        by_name.insert("run_id".into(), run_id.to_string());
        by_name.insert("shard".into(), shard.to_string());
        by_name.insert("engine".into(), engine.to_string());
        for (n, v) in &opts.labels {
            by_name.insert(n.clone(), v.clone());
        }
        Run {
            labels: by_name.into_iter().map(|(n, v)| label(&n, &v)).collect(),
            summaries: opts.summaries,
            counts: Counts::default(),
            histograms: BTreeMap::new(),
        }
    }

    /// Whether histograms go as classic summaries ([`Options::summaries`]).
    pub fn summaries(&self) -> bool {
        self.summaries
    }

    /// Sends classic summaries from now on (or native histograms again):
    /// the fallback for a server without native histograms.
    pub fn set_summaries(&mut self, on: bool) {
        self.summaries = on;
    }

    /// The labels every series of this run carries, sorted by name.
    pub fn labels(&self) -> &[Label] {
        &self.labels
    }

    /// The samples of one interval ending at `end_ms`, `width_s` long:
    /// the counters, cumulative, clamped to `totals` when given (so a
    /// counter never goes down at the run's final sample); the interval's
    /// gauges (the achieved rate, the p99s, the requests in flight at its
    /// end, and `connections_open` when given: the live push samples it);
    /// and, for each `(metric, histogram)` of the interval, the cumulative
    /// native histogram of that metric (`latency`, `send_lag`, `ttft`: the
    /// sum of this and every earlier interval given to this `Run`; a
    /// classic summary of it with [`Options::summaries`]). The live
    /// per-interval push calls this once per interval.
    pub fn interval(
        &mut self,
        iv: &IntervalReport,
        end_ms: i64,
        width_s: f64,
        histograms: &[(&'static str, &Histogram)],
        connections_open: Option<u64>,
        totals: Option<&Report>,
    ) -> WriteRequest {
        self.counts.add(iv);
        let mut b = Batch::default();
        let caps = totals.map(|r| {
            let q = &r.requests;
            [q.scheduled, q.sent, q.ok, q.errors, q.dropped, q.unsent]
        });
        for (i, (name, v)) in Counts::NAMES.iter().zip(self.counts.values()).enumerate() {
            let v = caps.map_or(v, |c| v.min(c[i]));
            let n = format!("metronome_requests_{name}_total");
            b.sample(&self.labels, &n, &[], end_ms, v as f64);
        }
        self.gauges(&mut b, iv, end_ms, width_s, connections_open);
        for &(metric, h) in histograms {
            self.histograms
                .entry(metric)
                .or_insert_with(|| Box::new(Histogram::new()))
                .merge(h);
            let name = format!("metronome_{metric}_seconds");
            self.histogram(&mut b, &name, &[], &self.histograms[metric], end_ms);
        }
        b.finish()
    }

    /// The gauges of one interval ending at `end_ms`, `width_s` long: the
    /// achieved rate, the latency and send-lag p99s, the requests in
    /// flight at its end, and `connections_open` when given.
    fn gauges(
        &self,
        b: &mut Batch,
        iv: &IntervalReport,
        end_ms: i64,
        width_s: f64,
        connections_open: Option<u64>,
    ) {
        let base = &self.labels;
        if width_s > 0.0 {
            let rate = iv.sent as f64 / width_s;
            b.sample(
                base,
                "metronome_interval_sent_per_second",
                &[],
                end_ms,
                rate,
            );
        }
        let p99 = iv.p99 / 1e3;
        b.sample(
            base,
            "metronome_interval_latency_p99_seconds",
            &[],
            end_ms,
            p99,
        );
        let lag = iv.send_lag_p99 / 1e3;
        b.sample(
            base,
            "metronome_interval_send_lag_p99_seconds",
            &[],
            end_ms,
            lag,
        );
        let in_flight = iv.in_flight as f64;
        b.sample(base, "metronome_in_flight_requests", &[], end_ms, in_flight);
        if let Some(open) = connections_open {
            b.sample(base, "metronome_connections_open", &[], end_ms, open as f64);
        }
    }

    /// The run's totals at `end_ms` ([`Run::totals`]) with the gauges of
    /// the schedule's last interval (`last`: the one that ends at or after
    /// the end of the measured phase, so its counters and histograms are
    /// the totals'), at `end_ms` too: every interval of the schedule has
    /// its gauges pushed, the last one's with the totals.
    pub fn totals_with_last(
        &self,
        r: &Report,
        end_ms: i64,
        last: Option<(&IntervalReport, f64, Option<u64>)>,
    ) -> WriteRequest {
        let mut req = self.totals(r, end_ms);
        if let Some((iv, width_s, open)) = last {
            let mut b = Batch::default();
            self.gauges(&mut b, iv, end_ms, width_s, open);
            req.timeseries.extend(b.finish().timeseries);
        }
        req
    }

    /// The whole-run histograms recorded so far that came with a live
    /// interval ([`SoFar`]), at `end_ms`, added to `req`:
    /// `metronome_service_time_seconds`, `metronome_{itl,tpot}_seconds`
    /// once a stream recorded one, and per name of the mix (`names`, the
    /// report's `request` names) `metronome_mix_{latency,service_time,send_lag}_seconds`
    /// and `metronome_mix_ttft_seconds` once one was recorded: the same
    /// series the totals carry (native histograms, or summaries).
    pub fn so_far(&self, req: &mut WriteRequest, so_far: &SoFar, names: &[String], end_ms: i64) {
        let mut b = Batch::default();
        let run = [
            ("service_time", &so_far.service_time),
            ("itl", &so_far.itl),
            ("tpot", &so_far.tpot),
        ];
        for (metric, h) in run {
            if metric == "service_time" || h.count() > 0 {
                let name = format!("metronome_{metric}_seconds");
                self.histogram(&mut b, &name, &[], h, end_ms);
            }
        }
        for (name, n) in names.iter().zip(&so_far.names) {
            let extra = [("request", name.as_str())];
            let metrics = [
                ("latency", &n.latency),
                ("service_time", &n.service_time),
                ("send_lag", &n.send_lag),
                ("ttft", &n.ttft),
            ];
            for (metric, h) in metrics {
                if metric != "ttft" || h.count() > 0 {
                    let series = format!("metronome_mix_{metric}_seconds");
                    self.histogram(&mut b, &series, &extra, h, end_ms);
                }
            }
        }
        req.timeseries.extend(b.finish().timeseries);
    }

    /// One histogram: a native histogram, or a classic summary of it.
    fn histogram(&self, b: &mut Batch, name: &str, extra: &[(&str, &str)], h: &Histogram, ts: i64) {
        if self.summaries {
            let m = Metric::from_histogram(h);
            self.distribution(b, name, extra, &m, ts);
        } else {
            b.entry(&self.labels, name, extra)
                .histograms
                .push(native::to_native(h, ts));
        }
    }

    /// The cumulative histogram of `metric` over the intervals given so
    /// far (`None` before the first that carried it).
    pub fn cumulative(&self, metric: &str) -> Option<&Histogram> {
        self.histograms.get(metric).map(|h| &**h)
    }

    /// The run's totals at `end_ms` (the end of the measured phase): every
    /// counter, gauge and histogram of `r`, the mix's per-request series.
    pub fn totals(&self, r: &Report, end_ms: i64) -> WriteRequest {
        let mut b = Batch::default();
        let base = &self.labels;
        let q = &r.requests;
        let totals = [
            ("scheduled", q.scheduled),
            ("sent", q.sent),
            ("ok", q.ok),
            ("errors", q.errors),
            ("dropped", q.dropped),
            ("unsent", q.unsent),
            ("timeouts", q.timeouts),
            ("retried", q.retried),
        ];
        for (name, v) in totals {
            let n = format!("metronome_requests_{name}_total");
            b.sample(base, &n, &[], end_ms, v as f64);
        }
        for (kind, &v) in &r.errors.by_kind {
            b.sample(
                base,
                "metronome_errors_total",
                &[("kind", kind)],
                end_ms,
                v as f64,
            );
        }
        let g = &r.generator;
        let gauges = [
            ("metronome_offered_requests_per_second", r.offered_rps),
            ("metronome_achieved_requests_per_second", r.achieved_rps),
            ("metronome_connections_peak", g.peak_connections as f64),
            (
                "metronome_connections_opened_total",
                g.connections_opened as f64,
            ),
            ("metronome_duration_seconds", r.duration_s),
        ];
        for (n, v) in gauges {
            b.sample(base, n, &[], end_ms, v);
        }
        for metric in METRICS {
            let Some(m) = r.metrics.get(metric) else {
                continue;
            };
            // The stream metrics only where the run streamed.
            if m.count == 0 && !matches!(metric, "latency" | "service_time" | "send_lag") {
                continue;
            }
            let n = format!("metronome_{metric}_seconds");
            self.distribution(&mut b, &n, &[], m, end_ms);
        }
        for rq in &r.by_request {
            let extra = [("request", rq.name.as_str())];
            let counts = [
                ("scheduled", rq.scheduled),
                ("sent", rq.sent),
                ("ok", rq.ok),
                ("errors", rq.errors),
                ("dropped", rq.dropped),
                ("unsent", rq.unsent),
            ];
            for (name, v) in counts {
                let n = format!("metronome_mix_requests_{name}_total");
                b.sample(base, &n, &extra, end_ms, v as f64);
            }
            let metrics = [
                ("latency", Some(&rq.latency)),
                ("service_time", Some(&rq.service_time)),
                ("send_lag", Some(&rq.send_lag)),
                ("ttft", rq.ttft.as_ref()),
            ];
            for (metric, m) in metrics {
                if let Some(m) = m {
                    let n = format!("metronome_mix_{metric}_seconds");
                    self.distribution(&mut b, &n, &extra, m, end_ms);
                }
            }
        }
        b.finish()
    }

    /// One distribution: a native histogram, or a classic summary.
    fn distribution(&self, b: &mut Batch, name: &str, extra: &[(&str, &str)], m: &Metric, ts: i64) {
        let h = m.to_histogram();
        if !self.summaries {
            b.entry(&self.labels, name, extra)
                .histograms
                .push(native::to_native(&h, ts));
            return;
        }
        for (quantile, field) in SUMMARY_QUANTILES {
            let mut with_q: Vec<(&str, &str)> = extra.to_vec();
            with_q.push(("quantile", quantile));
            let v = if m.count == 0 {
                f64::NAN
            } else {
                field(m) / 1e3
            };
            b.sample(&self.labels, name, &with_q, ts, v);
        }
        let sum = h.sum() as f64 * 1e-9;
        b.sample(&self.labels, &format!("{name}_sum"), extra, ts, sum);
        b.sample(
            &self.labels,
            &format!("{name}_count"),
            extra,
            ts,
            h.count() as f64,
        );
    }
}

/// A saved report as push requests: each measured interval (counters
/// cumulative and clamped to the totals, gauges; timestamped at the
/// interval's end), then the totals at the end of the measured phase. The
/// interval ending at or after that end (the schedule's last) has its
/// gauges pushed with the totals, at that end (its counters are the
/// totals'). The drain's rows are not pushed as intervals: their counts
/// are in the totals.
pub fn report_requests(r: &Report, opts: &Options) -> Vec<WriteRequest> {
    let mut run = Run::new(r, opts);
    let end_ms = measured_ms(r, r.duration_s);
    let width = match r.intervals.as_slice() {
        [a, b, ..] => b.start_s - a.start_s,
        _ => r.duration_s,
    };
    let mut out = Vec::with_capacity(r.intervals.len() + 1);
    let mut last = None;
    for iv in &r.intervals {
        let ts = measured_ms(r, iv.start_s + width);
        if ts >= end_ms {
            last = Some((iv, width, None));
            break;
        }
        out.push(run.interval(iv, ts, width, &[], None, Some(r)));
    }
    out.push(run.totals_with_last(r, end_ms, last));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prom::proto;

    /// The example report of docs/report.md with two intervals of 1 s.
    fn example() -> Report {
        let doc = include_str!("../../docs/report.md");
        let start = doc.find("```json").unwrap() + 7;
        let end = start + doc[start..].find("```").unwrap();
        let mut r: Report = serde_json::from_str(&doc[start..end]).unwrap();
        let mut second = r.intervals[0].clone();
        second.start_s = 1.0;
        r.intervals.push(second);
        r
    }

    fn find<'a>(req: &'a WriteRequest, name: &str) -> Vec<&'a TimeSeries> {
        req.timeseries
            .iter()
            .filter(|t| {
                t.labels
                    .iter()
                    .any(|l| l.name == "__name__" && l.value == name)
            })
            .collect()
    }

    fn get<'a>(t: &'a TimeSeries, name: &str) -> Option<&'a str> {
        t.labels
            .iter()
            .find(|l| l.name == name)
            .map(|l| l.value.as_str())
    }

    #[test]
    fn a_report_is_its_intervals_then_its_totals() {
        let r = example();
        let opts = Options {
            labels: vec![("env".into(), "ci".into()), ("job".into(), "lt".into())],
            summaries: false,
        };
        let reqs = report_requests(&r, &opts);
        // The second interval ends at the run's end: left to the totals.
        assert_eq!(reqs.len(), 2);
        let t0 = ((r.start_unix_ns + 500_000) / 1_000_000) as i64;
        let sent = find(&reqs[0], "metronome_requests_sent_total");
        assert_eq!(sent.len(), 1);
        let s = sent[0];
        assert_eq!(
            s.samples,
            [proto::Sample {
                value: 200.0,
                timestamp: t0 + 1000
            }]
        );
        // Labels sorted by name; the user's job overrides the default.
        let names: Vec<&str> = s.labels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(
            names,
            ["__name__", "engine", "env", "job", "run_id", "shard"]
        );
        assert_eq!(get(s, "job"), Some("lt"));
        assert_eq!(get(s, "run_id"), Some("1796111038-4beb93e2"));
        assert_eq!(get(s, "shard"), Some("0/1"));
        let rate = find(&reqs[0], "metronome_interval_sent_per_second");
        assert_eq!(rate[0].samples[0].value, 200.0);
        // Totals at the end of the measured phase.
        let end = measured_ms(&r, r.duration_s);
        assert_eq!(end, t0 + 2000);
        let ok = find(&reqs[1], "metronome_requests_ok_total");
        assert_eq!(
            ok[0].samples,
            [proto::Sample {
                value: 392.0,
                timestamp: end
            }]
        );
        let lat = find(&reqs[1], "metronome_latency_seconds");
        assert_eq!(lat.len(), 1);
        let h = &lat[0].histograms[0];
        assert_eq!(
            h.count,
            Some(proto::Count::CountInt(r.metrics.latency.count))
        );
        assert_eq!((h.schema, h.timestamp), (8, end));
        // A plain HTTP run: no stream metrics.
        assert!(find(&reqs[1], "metronome_ttft_seconds").is_empty());
    }

    /// Every interval of the schedule has its gauges pushed: the last
    /// one's (ending at the end of the measured phase) with the totals, at
    /// that end, once (issue 38, item 3: a 2-interval report stored one
    /// sample of each gauge).
    #[test]
    fn the_last_interval_has_its_gauges() {
        let mut r = example();
        r.intervals[1].p99 = 7.0;
        r.intervals[1].in_flight = 3;
        let reqs = report_requests(&r, &Options::default());
        let end = measured_ms(&r, r.duration_s);
        let gauges = [
            "metronome_interval_sent_per_second",
            "metronome_interval_latency_p99_seconds",
            "metronome_interval_send_lag_p99_seconds",
            "metronome_in_flight_requests",
        ];
        for g in gauges {
            let samples: Vec<&proto::Sample> = reqs
                .iter()
                .flat_map(|q| find(q, g))
                .flat_map(|t| &t.samples)
                .collect();
            assert_eq!(samples.len(), r.intervals.len(), "{g}");
            assert_eq!(samples[1].timestamp, end, "{g}");
        }
        let p99 = find(&reqs[1], "metronome_interval_latency_p99_seconds");
        assert_eq!(p99[0].samples[0].value, 0.007);
        let in_flight = find(&reqs[1], "metronome_in_flight_requests");
        assert_eq!(in_flight[0].samples[0].value, 3.0);
        // One sample per series and timestamp: nothing Prometheus would
        // refuse as a duplicate.
        let mut seen = std::collections::BTreeSet::new();
        for q in &reqs {
            for t in &q.timeseries {
                for smp in &t.samples {
                    assert!(seen.insert((t.labels.clone(), smp.timestamp)));
                }
            }
        }
    }

    #[test]
    fn interval_counters_never_pass_the_totals() {
        let mut r = example();
        r.intervals[0].sent = 500; // more than the run's 400
        let reqs = report_requests(&r, &Options::default());
        let sent = find(&reqs[0], "metronome_requests_sent_total");
        assert_eq!(sent[0].samples[0].value, 400.0);
    }

    #[test]
    fn summaries_replace_native_histograms() {
        let r = example();
        let opts = Options {
            labels: vec![],
            summaries: true,
        };
        let totals = report_requests(&r, &opts).pop().unwrap();
        let lat = find(&totals, "metronome_latency_seconds");
        assert!(lat.iter().all(|t| t.histograms.is_empty()));
        let qs: Vec<(&str, f64)> = lat
            .iter()
            .map(|t| (get(t, "quantile").unwrap(), t.samples[0].value))
            .collect();
        let m = &r.metrics.latency;
        assert_eq!(
            qs,
            [
                ("0.5", m.p50 / 1e3),
                ("0.9", m.p90 / 1e3),
                ("0.95", m.p95 / 1e3),
                ("0.99", m.p99 / 1e3),
                ("0.999", m.p999 / 1e3)
            ]
        );
        let count = find(&totals, "metronome_latency_seconds_count");
        assert_eq!(count[0].samples[0].value, m.count as f64);
    }

    #[test]
    fn shards_with_one_start_at_share_a_run_id() {
        let mut a = example();
        a.start_at = Some("2026-12-01T10:00:00.000000000Z".into());
        // Unsharded: the report's own run_id, --start-at or not.
        assert_eq!(run_id_label(&a), a.run_id);
        a.shard = "0/2".into();
        let mut b = a.clone();
        b.run_id = "other".into();
        b.shard = "1/2".into();
        let mut m = a.clone();
        m.shard = "merged 2".into();
        assert_eq!(run_id_label(&a), run_id_label(&b));
        assert_eq!(run_id_label(&a), run_id_label(&m));
        assert_ne!(run_id_label(&a), a.run_id);
        // Without --start-at each shard keeps its own.
        b.start_at = None;
        assert_eq!(run_id_label(&b), "other");
    }

    #[test]
    fn a_mix_has_its_own_series_per_request() {
        let mut r = example();
        let mut h = Histogram::new();
        h.record_n(2_000_000, 5);
        let m = Metric::from_histogram(&h);
        r.by_request.push(crate::report::RequestReport {
            name: "login".into(),
            scheduled: 9,
            sent: 8,
            ok: 5,
            errors: 3,
            dropped: 1,
            unsent: 0,
            errors_by_kind: BTreeMap::new(),
            latency: m.clone(),
            service_time: m.clone(),
            send_lag: m,
            ttft: None,
        });
        let totals = report_requests(&r, &Options::default()).pop().unwrap();
        let ok = find(&totals, "metronome_mix_requests_ok_total");
        assert_eq!(ok.len(), 1);
        assert_eq!(
            (get(ok[0], "request"), ok[0].samples[0].value),
            (Some("login"), 5.0)
        );
        let lat = find(&totals, "metronome_mix_latency_seconds");
        assert_eq!(lat[0].histograms[0].count, Some(proto::Count::CountInt(5)));
        assert!(find(&totals, "metronome_mix_ttft_seconds").is_empty());
        // The run's own series carry no request label.
        let run_ok = find(&totals, "metronome_requests_ok_total");
        assert_eq!(get(run_ok[0], "request"), None);
    }

    /// Two intervals with their histograms: each carries the cumulative
    /// one (a native histogram, or a summary of it), the in-flight gauge,
    /// and the connections open when given.
    #[test]
    fn intervals_carry_cumulative_histograms_and_gauges() {
        let r = example();
        let mut a = Histogram::new();
        a.record_n(1_000_000, 3);
        let mut b = Histogram::new();
        b.record_n(4_000_000, 2);
        for summaries in [false, true] {
            let opts = Options {
                labels: vec![],
                summaries,
            };
            let mut run = Run::new(&r, &opts);
            let mut iv = r.intervals[0].clone();
            iv.in_flight = 7;
            let first = run.interval(&iv, 1000, 1.0, &[("latency", &a)], Some(4), None);
            iv.in_flight = 0;
            let second = run.interval(&iv, 2000, 1.0, &[("latency", &b)], None, None);
            let g = find(&first, "metronome_in_flight_requests");
            assert_eq!(g[0].samples[0].value, 7.0);
            let g = find(&second, "metronome_in_flight_requests");
            assert_eq!(
                g[0].samples[0],
                proto::Sample {
                    value: 0.0,
                    timestamp: 2000
                }
            );
            let open = find(&first, "metronome_connections_open");
            assert_eq!(open[0].samples[0].value, 4.0);
            assert!(find(&second, "metronome_connections_open").is_empty());
            assert_eq!(run.cumulative("latency").map(Histogram::count), Some(5));
            let lat = find(&second, "metronome_latency_seconds");
            if summaries {
                let count = find(&second, "metronome_latency_seconds_count");
                assert_eq!(count[0].samples[0].value, 5.0);
                let p99 = lat.iter().find(|t| get(t, "quantile") == Some("0.99"));
                let want = Histogram::quantile(run.cumulative("latency").unwrap(), 0.99);
                assert_eq!(p99.unwrap().samples[0].value, want as f64 / 1e9);
            } else {
                assert_eq!(lat[0].histograms[0].count, Some(proto::Count::CountInt(5)));
                assert_eq!(lat[0].histograms[0].timestamp, 2000);
            }
        }
    }

    /// The whole-run histograms so far: service time always, ITL and
    /// TPOT once recorded, each name's latency, service time and send lag
    /// under its `request` label, its TTFT once recorded; exact counts (a
    /// native histogram, or a summary's `_count`); a mix of more names than
    /// were copied pushes those it has.
    #[test]
    fn so_far_histograms_join_an_interval_push() {
        use metronome_core::engine::{NameSoFar, SoFar};
        let r = example();
        let mut so_far = SoFar::default();
        so_far.service_time.record_n(3_000_000, 4);
        so_far.tpot.record_n(20_000_000, 2);
        let mut n = NameSoFar::default();
        n.latency.record_n(5_000_000, 3);
        n.send_lag.record(1_000);
        so_far.names = vec![n.clone(), NameSoFar::default()];
        so_far.names[1].ttft.record(9_000_000);
        let names = ["login".to_string(), "home".to_string(), "more".to_string()];
        for summaries in [false, true] {
            let opts = Options {
                labels: vec![],
                summaries,
            };
            let mut run = Run::new(&r, &opts);
            let mut req = run.interval(&r.intervals[0], 1000, 1.0, &[], None, None);
            let before = req.timeseries.len();
            run.so_far(&mut req, &so_far, &names, 1000);
            assert!(req.timeseries.len() > before);
            let count = |name: &str, request: Option<&str>| -> Option<u64> {
                let series = find(&req, name);
                let t = series.iter().find(|t| get(t, "request") == request)?;
                if summaries {
                    let c = find(&req, &format!("{name}_count"));
                    let c = c.iter().find(|t| get(t, "request") == request)?;
                    return Some(c.samples[0].value as u64);
                }
                match t.histograms[0].count {
                    Some(proto::Count::CountInt(c)) => Some(c),
                    _ => None,
                }
            };
            assert_eq!(count("metronome_service_time_seconds", None), Some(4));
            assert_eq!(count("metronome_tpot_seconds", None), Some(2));
            assert_eq!(count("metronome_itl_seconds", None), None);
            let mix = |m: &str| format!("metronome_mix_{m}_seconds");
            assert_eq!(count(&mix("latency"), Some("login")), Some(3));
            assert_eq!(count(&mix("service_time"), Some("login")), Some(0));
            assert_eq!(count(&mix("send_lag"), Some("login")), Some(1));
            assert_eq!(count(&mix("ttft"), Some("login")), None);
            assert_eq!(count(&mix("ttft"), Some("home")), Some(1));
            assert_eq!(count(&mix("latency"), Some("home")), Some(0));
            assert_eq!(count(&mix("latency"), Some("more")), None);
            // Timestamped at the interval's end; the run's labels on each.
            let st = &find(&req, "metronome_service_time_seconds")[0];
            assert_eq!(get(st, "run_id"), Some("1796111038-4beb93e2"));
            if !summaries {
                assert_eq!(st.histograms[0].timestamp, 1000);
            }
        }
    }

    #[test]
    fn label_names_are_checked() {
        assert!(parse_label("a_b1=x=y").is_ok_and(|(n, v)| n == "a_b1" && v == "x=y"));
        for bad in [
            "=x",
            "a-b=1",
            "__x=1",
            "request=a",
            "quantile=1",
            "kind=x",
            "é=1",
        ] {
            assert!(parse_label(bad).is_err(), "{bad}");
        }
    }
}
