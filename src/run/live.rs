//! Live intervals while a run goes (docs/live.md): the engines' closed
//! intervals ([`metronome_core::engine::LiveIntervals`]), made into the
//! report's interval rows by the report's own code
//! ([`RowMaker`](crate::report::build::RowMaker)), written as JSON lines
//! (`--out-intervals`). At the end, the rows not streamed live (the last
//! ones, closed after the engine stopped) come from the final report, so
//! the lines are the report's `intervals`, all of them, in order.
//!
//! With `--prometheus-rw`, each row is also pushed as it comes, with the
//! cumulative native histograms of the live intervals, the whole-run
//! histograms recorded so far that came with it (service time, ITL, TPOT,
//! the mix's per name) and the connections open at its end (`PromLive`,
//! docs/prometheus.md).

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use metronome_core::engine::{Control, LiveReader, Series, SoFar};
use metronome_core::histogram::Histogram;
use metronome_core::measure::Interval;
use metronome_core::plan::Plan;

use crate::cli::RunArgs;
use crate::prom::proto::WriteRequest;
use crate::prom::push::Pusher;
use crate::prom::series::{self, Run};
use crate::report::build::RowMaker;
use crate::report::{IntervalReport, Report};
use crate::run::dashboard::Dashboard;
use crate::run::engine::Engine;

/// How often the streamer looks for closed intervals: every 20 ms, or a
/// quarter of an interval when shorter (at least every 2 ms), so that it
/// takes a batch before the engine threads compact the next intervals
/// (their series keep 16 in full, closed after at most 14: a 20 ms
/// interval leaves 40 ms).
fn poll_period(interval_ns: u64) -> Duration {
    Duration::from_nanos((interval_ns / 4).clamp(2_000_000, 20_000_000))
}

/// `--prometheus-rw` while the run goes: each interval's samples (the
/// same as the end-of-run push makes, at the same timestamps), with the
/// cumulative native histograms of latency, send lag and TTFT (the sum of
/// the live intervals' own, accumulated here on the streamer's thread) and
/// the connections open at the interval's end, and the engine threads'
/// whole-run histograms as they were when the threads copied the interval
/// ([`SoFar`]), pushed in groups of `every` intervals; the end pushes only
/// the rest and the totals (whose histograms, the report's, hold every live
/// one's values and more: the drain's, and any that came after their
/// interval was copied live).
struct PromLive {
    pusher: Pusher,
    run: Run,
    /// The mix's request names, in the plan's order (the `request` label).
    names: Vec<String>,
    timeout: Duration,
    /// Intervals per push.
    every: usize,
    /// Requests made, not yet handed to the pusher.
    pending: Vec<WriteRequest>,
    /// Intervals whose samples were made (pushed or pending).
    made: usize,
    warmup_s: f64,
    duration_s: f64,
    width_s: f64,
    /// `Progress::connections_open` sampled as each interval ended: the
    /// interval's index and the count, oldest first, until its row comes.
    open: VecDeque<(usize, u64)>,
    /// The next interval whose end is to be sampled.
    next_sample: usize,
    /// The schedule's intervals (none after them is sampled).
    schedule: usize,
    /// The row that ends at or after the end of the measured phase (the
    /// schedule's last), with the connections open at its end: its gauges
    /// go with the totals.
    last: Option<(IntervalReport, Option<u64>)>,
}

/// Seconds of the measured phase gone by now (0 before it, or before the
/// engine set its origin).
fn measured_s(origin_unix_ns: u64, warmup_ns: u64) -> f64 {
    if origin_unix_ns == 0 {
        return 0.0;
    }
    let now = metronome_core::engine::unix_ns(std::time::SystemTime::now());
    now.saturating_sub(origin_unix_ns.saturating_add(warmup_ns)) as f64 / 1e9
}

/// `measured_ms` of `prom::series` before the report exists: ms since the
/// Unix epoch of `s` seconds into the measured phase of a run whose origin
/// is `start_unix_ns`.
fn measured_ms(start_unix_ns: u64, warmup_s: f64, s: f64) -> i64 {
    let ns = start_unix_ns as i128 + ((warmup_s + s) * 1e9).round() as i128;
    ((ns + 500_000).div_euclid(1_000_000)) as i64
}

impl PromLive {
    /// Samples the connections open at the end of every interval that
    /// ended since the last call (`measured` seconds of the measured phase
    /// gone by): within a poll (20 ms) and the engine's own publishing
    /// period of the end.
    fn sample(&mut self, measured: f64, open: u64) {
        while self.next_sample < self.schedule
            && measured >= (self.next_sample + 1) as f64 * self.width_s
        {
            self.open.push_back((self.next_sample, open));
            self.next_sample += 1;
        }
    }

    /// The samples of row `i` (made of the live interval `iv`) at its end,
    /// when that end is before the end of the measured phase (the later
    /// ones are the totals').
    fn row(
        &mut self,
        origin_unix_ns: u64,
        i: usize,
        row: &IntervalReport,
        iv: &Interval,
        so_far: Option<&SoFar>,
    ) {
        let ts = measured_ms(origin_unix_ns, self.warmup_s, row.start_s + self.width_s);
        let end = measured_ms(origin_unix_ns, self.warmup_s, self.duration_s);
        self.made += 1;
        self.fall_back();
        let open = self.open_at(i);
        if ts < end {
            let mut req = self.samples(row, ts, iv, open, None);
            if let Some(so_far) = so_far {
                self.run.so_far(&mut req, so_far, &self.names, ts);
            }
            self.pending.push(req);
        } else if self.last.is_none() {
            self.last = Some((row.clone(), open));
        }
        if self.pending.len() >= self.every {
            self.flush();
        }
    }

    /// The connections open sampled at the end of interval `i`, if it was;
    /// the samples of the earlier intervals are dropped.
    fn open_at(&mut self, i: usize) -> Option<u64> {
        while self.open.front().is_some_and(|&(k, _)| k < i) {
            self.open.pop_front();
        }
        match self.open.front() {
            Some(&(k, n)) if k == i => Some(n),
            _ => None,
        }
    }

    /// `Run::interval` of `row` at `ts` with `iv`'s histograms: latency
    /// and send lag, and TTFT from a stream's first value on (a plain run
    /// has none).
    fn samples(
        &mut self,
        row: &IntervalReport,
        ts: i64,
        iv: &Interval,
        open: Option<u64>,
        totals: Option<&Report>,
    ) -> WriteRequest {
        let hists: [(&'static str, &Histogram); 3] = [
            ("latency", &iv.latency),
            ("send_lag", &iv.send_lag),
            ("ttft", &iv.ttft),
        ];
        let n = if iv.ttft.is_empty() && self.run.cumulative("ttft").is_none() {
            2
        } else {
            3
        };
        self.run
            .interval(row, ts, self.width_s, &hists[..n], open, totals)
    }

    fn flush(&mut self) {
        for req in self.pending.drain(..) {
            self.pusher.push(&req);
        }
    }

    /// Classic summaries from now on when the server refused native
    /// histograms (the pusher said so, once).
    fn fall_back(&mut self) {
        if self.pusher.native_refused() {
            self.run.set_summaries(true);
        }
    }

    /// The rows not pushed live (with their histograms from the run's
    /// `intervals`, which made the report's rows), the totals, and the
    /// final flush.
    fn finish(mut self, r: &Report, intervals: &Series) -> Option<String> {
        self.flush();
        let end_ms = series::measured_ms(r, r.duration_s);
        let made = self.made;
        let mut ended = false;
        self.fall_back();
        // Decoded only when rows are left (as costly as the report's rows).
        if made < r.intervals.len() {
            intervals.for_each(|i, iv| {
                if i < made || ended {
                    return;
                }
                let Some(row) = r.intervals.get(i) else {
                    ended = true;
                    return;
                };
                let ts = series::measured_ms(r, row.start_s + self.width_s);
                if ts >= end_ms {
                    if self.last.is_none() {
                        self.last = Some((row.clone(), self.open_at(i)));
                    }
                    ended = true;
                    return;
                }
                let open = self.open_at(i);
                let req = self.samples(row, ts, iv, open, Some(r));
                self.pusher.push(&req);
            });
        }
        self.fall_back();
        let last = self
            .last
            .as_ref()
            .map(|(row, open)| (row, self.width_s, *open));
        let totals = self.run.totals_with_last(r, end_ms, last);
        if self.run.summaries() || !self.pusher.native_unproven() {
            self.pusher.push(&totals);
        } else {
            // With their summaries, for a server without native histograms.
            self.run.set_summaries(true);
            let summaries = self.run.totals_with_last(r, end_ms, last);
            self.run.set_summaries(false);
            self.pusher.push_with_summaries(&totals, &summaries);
        }
        self.pusher.finish(self.timeout).warning()
    }
}

/// A run's dashboard: its own, or one several runs share.
enum Dash<'a> {
    Own(Dashboard),
    Shared(&'a Dashboard),
}

impl Dash<'_> {
    fn get(&self) -> &Dashboard {
        match self {
            Dash::Own(d) => d,
            Dash::Shared(d) => d,
        }
    }
}

/// A dashboard several runs share (a sweep's steps, `--repeat`'s runs):
/// each run draws on it in turn, its page titled `label`.
pub struct SharedDashboard<'a> {
    /// The dashboard.
    pub dashboard: &'a Dashboard,
    /// Which run of several this is, e.g. `sweep step 2/5: 400 req/s`.
    pub label: String,
}

/// The live outputs of a run and what they wrote so far.
pub(super) struct Live<'a> {
    /// `--dashboard`.
    dashboard: Option<Dash<'a>>,
    warmup_ns: u64,
    /// `--prometheus-rw` (on `run`, always live).
    prom: Option<PromLive>,
    /// `--out-intervals`: where the lines go.
    lines: Option<Box<dyn Write + Send>>,
    /// The first write error; no line is written after it.
    failed: Option<String>,
    /// Rows made so far (streamed live or at the end).
    rows: usize,
    /// Rows that came late: the watcher fell behind ([`LiveReader::late`]).
    late: usize,
    /// The rows published provisional (`"final": false`), oldest first,
    /// each with the schedule's count of its due requests: published again
    /// complete (`"final": true`) once a second look finds them complete
    /// ([`LiveReader::recheck`]), or at the end from the report.
    provisional: Vec<(IntervalReport, Option<u64>)>,
    /// Prometheus gets no live row from the first provisional one on (its
    /// samples cannot be revised, and must come in order).
    prom_held: bool,
    /// How often the streamer polls ([`poll_period`]).
    poll: Duration,
    schedule: usize,
    engine: Engine,
    /// `--http3-0rtt` (the std engine's one pacer there).
    zero_rtt: bool,
    maker: Option<RowMaker>,
    plan_rows: RowMaker,
}

impl<'a> Live<'a> {
    /// The live outputs `args` asks for (the `--out-intervals` file is
    /// created here, before the run).
    ///
    /// # Errors
    /// The `--out-intervals` file cannot be created.
    pub(super) fn open(
        args: &RunArgs,
        plan: &Plan<'_>,
        names: &[String],
        engine: Engine,
        started: std::time::SystemTime,
        shared: Option<SharedDashboard<'a>>,
    ) -> anyhow::Result<Live<'a>> {
        let lines: Option<Box<dyn Write + Send>> = match &args.out_intervals {
            None => None,
            Some(_) if args.intervals_to_stdout() => Some(Box::new(std::io::stdout())),
            Some(path) => Some(Box::new(std::fs::File::create(path).map_err(|e| {
                crate::UsageError(format!(
                    "--out-intervals: cannot create {}: {e}",
                    path.display()
                ))
            })?)),
        };
        let prom = match &args.prometheus.prometheus_rw {
            None => None,
            Some(endpoint) => {
                let pa = &args.prometheus;
                let opts = series::Options {
                    labels: pa.prometheus_labels.clone(),
                    summaries: pa.prometheus_summaries,
                };
                let shard = format!("{}/{}", plan.shard.index, plan.shard.count);
                // The report's run_id, or (a shard of a run started with
                // --start-at) the one every shard shares: `run_id_label`.
                let at = match args.start_at {
                    Some(at) if plan.shard.count > 1 => at,
                    _ => started,
                };
                let run_id = crate::report::build::run_id(at, args.seed);
                let interval = plan.interval_ns.max(1);
                let every = args.prometheus_interval.map_or(1, |d| {
                    (d.as_nanos() as u64).div_ceil(interval).max(1) as usize
                });
                match Pusher::start(endpoint.clone()) {
                    Ok(pusher) => Some(PromLive {
                        pusher,
                        run: Run::with_identity(&run_id, &shard, engine.as_str(), &opts),
                        names: names.to_vec(),
                        timeout: pa.prometheus_timeout,
                        every,
                        pending: Vec::new(),
                        made: 0,
                        warmup_s: plan.warmup_ns as f64 / 1e9,
                        duration_s: plan.duration_ns as f64 / 1e9,
                        width_s: interval as f64 / 1e9,
                        open: VecDeque::new(),
                        next_sample: 0,
                        schedule: plan.interval_count(),
                        last: None,
                    }),
                    Err(e) => {
                        eprintln!(
                            "metronome: warning: --prometheus-rw: cannot start the pusher: {e}"
                        );
                        None
                    }
                }
            }
        };
        let meta = |label: Option<String>| crate::report::html::LiveMeta {
            kind: "live",
            version: env!("CARGO_PKG_VERSION"),
            target: args.url.clone(),
            offered_rps: plan.rate,
            process: crate::report::build::process_name(plan).to_string(),
            engine: engine.as_str().to_string(),
            stream: matches!(plan.protocol, metronome_core::plan::Protocol::OpenAiSse),
            label,
            cap: args.max_concurrency,
            interval_s: plan.interval_ns as f64 / 1e9,
            samples_needed: Default::default(),
        };
        let duration_s = plan.duration_ns as f64 / 1e9;
        let dashboard = match (shared, args.dashboard) {
            (Some(s), _) => {
                s.dashboard
                    .begin(duration_s, &meta(Some(s.label)))
                    .map_err(|e| anyhow::anyhow!("--dashboard: {e}"))?;
                Some(Dash::Shared(s.dashboard))
            }
            (None, Some(addr)) => {
                let d = Dashboard::start(addr, duration_s, &meta(None)).map_err(|e| {
                    crate::UsageError(format!("--dashboard: cannot serve on {addr}: {e}"))
                })?;
                eprintln!("metronome: dashboard on http://{}/", d.addr());
                Some(Dash::Own(d))
            }
            (None, None) => None,
        };
        Ok(Live {
            dashboard,
            warmup_ns: plan.warmup_ns,
            prom,
            lines,
            failed: None,
            rows: 0,
            late: 0,
            provisional: Vec::new(),
            prom_held: false,
            poll: poll_period(plan.interval_ns),
            schedule: plan.interval_count(),
            engine,
            zero_rtt: args.http3_0rtt,
            maker: None,
            plan_rows: RowMaker::new(plan, 1),
        })
    }

    /// Whether any live output was asked for.
    pub(super) fn is_on(&self) -> bool {
        self.lines.is_some() || self.prom.is_some() || self.dashboard.is_some()
    }

    /// Whether `--prometheus-rw` is pushed from here (then not at the end).
    pub(super) fn pushes_prometheus(&self) -> bool {
        self.prom.is_some()
    }

    /// Streams the closed intervals of `control`'s engine (running
    /// `plan`) until `done`. A row is complete when every request due in it
    /// was handled and settled ([`Counts::is_complete`], against the
    /// schedule's count from [`Plan::interval_offers`]); one that is not (a
    /// pacer more than the grace behind) is published provisional:
    /// `"final": false`, `scheduled` the schedule's, and is published again
    /// complete (`"final": true`) as soon as a second look at its counters
    /// finds it complete, or at the end from the report; Prometheus, whose
    /// samples cannot be revised, gets no row from the first provisional
    /// one on until the end.
    ///
    /// [`Counts::is_complete`]: metronome_core::measure::Counts::is_complete
    pub(super) fn stream(&mut self, control: &Control, plan: &Plan<'_>, done: &AtomicBool) {
        if !self.is_on() {
            return;
        }
        let mut offers = plan.interval_offers();
        let mut reader = LiveReader::default();
        loop {
            // Read `done` first: a last poll after it misses nothing the
            // engine published.
            let last = done.load(Ordering::Acquire);
            let live = &control.progress.live;
            reader.poll(live, |i, iv, so_far| {
                if i >= self.schedule || i != self.rows {
                    return;
                }
                let maker = self.maker.get_or_insert_with(|| {
                    let mut m = self.plan_rows.clone();
                    m.set_pacers(self.engine.pacers(live.mailboxes(), self.zero_rtt));
                    m
                });
                let mut row = maker.row(i, iv);
                let offered = offers.as_mut().and_then(Iterator::next);
                if !iv.counts.is_complete(offered) {
                    row.complete = Some(false);
                    row.scheduled = offered.unwrap_or(row.scheduled).max(row.scheduled);
                    self.provisional.push((row.clone(), offered));
                    self.prom_held = true;
                }
                self.rows += 1;
                self.write(&row);
                if let Some(p) = self.prom.as_mut().filter(|_| !self.prom_held) {
                    p.row(
                        control.progress.origin_unix_ns.load(Ordering::Acquire),
                        i,
                        &row,
                        iv,
                        so_far,
                    );
                }
                if let Some(d) = &self.dashboard {
                    d.get().row(&row);
                }
            });
            self.second_look(&mut reader, live);
            if let Some(prom) = self.prom.as_mut() {
                let p = &control.progress;
                prom.sample(
                    measured_s(p.origin_unix_ns.load(Ordering::Acquire), self.warmup_ns),
                    p.connections_open.load(Ordering::Relaxed),
                );
            }
            if let Some(d) = &self.dashboard {
                let p = &control.progress;
                d.get().progress(
                    p.sent.load(Ordering::Relaxed),
                    p.ok.load(Ordering::Relaxed),
                    p.errors.load(Ordering::Relaxed),
                    measured_s(p.origin_unix_ns.load(Ordering::Acquire), self.warmup_ns),
                );
            }
            if last {
                self.late = reader.late();
                return;
            }
            std::thread::sleep(self.poll);
        }
    }

    /// A second look at the oldest provisional row: once every engine
    /// thread answered with its counters and they make it complete (by the
    /// same rule, [`Counts::is_complete`]), the row with its
    /// by-intended-time counts so completed is published again,
    /// `"final": true`, to the lines and the dashboard. Its by-time counts
    /// and quantiles were complete when it was first published.
    ///
    /// [`Counts::is_complete`]: metronome_core::measure::Counts::is_complete
    fn second_look(
        &mut self,
        reader: &mut LiveReader,
        live: &metronome_core::engine::LiveIntervals,
    ) {
        let Some((row, offered)) = self.provisional.first() else {
            return;
        };
        let i = self.row_index(row);
        let Some(c) = reader.recheck(live, i) else {
            return;
        };
        if !c.is_complete(*offered) {
            return;
        }
        let (mut row, _) = self.provisional.remove(0);
        row.scheduled = c.scheduled;
        row.dropped = c.dropped;
        row.waited = c.waited;
        row.pool_full = c.pool_full;
        row.late = c.late;
        row.late_waiting = c.late_waiting;
        row.complete = Some(true);
        self.write(&row);
        if let Some(d) = &self.dashboard {
            d.get().replace(i, &row);
        }
    }

    /// The interval index of a row of the schedule (its start over the
    /// interval's width).
    fn row_index(&self, row: &IntervalReport) -> usize {
        (row.start_s / self.plan_rows.width_s()).round() as usize
    }

    /// With `--dashboard`: its thread's CPU so far, seconds.
    pub(super) fn dashboard_cpu_s(&self) -> Option<f64> {
        self.dashboard.as_ref().map(|d| d.get().cpu_s())
    }

    /// Writes the report's rows not streamed live and pushes the rest to
    /// Prometheus (the histograms of the intervals not pushed live from
    /// `intervals`, the run's, which made `report`); returns the warnings
    /// (a line not written, a push not stored).
    pub(super) fn finish(&mut self, report: &Report, intervals: &Series) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.late > 0 {
            warnings.push(format!(
                "live intervals: the watcher fell behind; {} of {} intervals came late \
                 (later than their grace, whole: every value up to their copy)",
                self.late,
                report.intervals.len()
            ));
        }
        // The provisional rows again, complete (`"final": true`): the
        // report's, in their place.
        for (row, _) in std::mem::take(&mut self.provisional) {
            let i = self.row_index(&row);
            if let Some(row) = report.intervals.get(i) {
                let row = IntervalReport {
                    complete: Some(true),
                    ..row.clone()
                };
                self.write(&row);
            }
        }
        for row in report.intervals.iter().skip(self.rows) {
            self.write(row);
        }
        self.rows = self.rows.max(report.intervals.len());
        // The drain's rows (`"phase": "drain"`), after the schedule's: the
        // lines hold every row of the report, so they sum to it.
        for row in &report.drain {
            self.write(row);
        }
        if let Some(e) = self.failed.take() {
            warnings.push(format!(
                "--out-intervals: {e}; the report has every interval"
            ));
        }
        if let Some(p) = self.prom.take() {
            warnings.extend(p.finish(report, intervals));
        }
        if let Some(d) = self.dashboard.take() {
            d.get().end_run(report);
            // A shared dashboard ends with the runs that share it.
            if let Dash::Own(d) = d {
                match crate::report::html::render_report(
                    report,
                    Some(crate::report::argv::this_command()),
                ) {
                    Ok(page) => d.finish(page),
                    Err(e) => {
                        warnings.push(format!("--dashboard: cannot render the page: {e:#}"));
                    }
                }
            }
        }
        warnings
    }

    fn write(&mut self, row: &IntervalReport) {
        if self.failed.is_some() {
            return;
        }
        let Some(out) = self.lines.as_mut() else {
            return;
        };
        let r = serde_json::to_string(row)
            .map_err(std::io::Error::other)
            .and_then(|mut line| {
                line.push('\n');
                out.write_all(line.as_bytes())?;
                out.flush()
            });
        if let Err(e) = r {
            self.failed = Some(e.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 20 ms at 80 ms intervals and longer, a quarter of shorter ones,
    /// 2 ms at least.
    #[test]
    fn the_poll_keeps_up_with_short_intervals() {
        let ms = |n: u64| n * 1_000_000;
        assert_eq!(poll_period(ms(1000)), Duration::from_millis(20));
        assert_eq!(poll_period(ms(80)), Duration::from_millis(20));
        assert_eq!(poll_period(ms(20)), Duration::from_millis(5));
        assert_eq!(poll_period(ms(1)), Duration::from_millis(2));
    }
}
