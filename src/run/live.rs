//! Live intervals while a run goes (docs/live.md): the engines' closed
//! intervals ([`metronome_core::engine::LiveIntervals`]), made into the
//! report's interval rows by the report's own code
//! ([`RowMaker`](crate::report::build::RowMaker)), written as JSON lines
//! (`--out-intervals`). At the end, the rows not streamed live (the last
//! ones, closed after the engine stopped) come from the final report, so
//! the lines are the report's `intervals`, all of them, in order.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use metronome_core::engine::{Control, LiveReader};
use metronome_core::plan::Plan;

use crate::cli::RunArgs;
use crate::prom::proto::WriteRequest;
use crate::prom::push::Pusher;
use crate::prom::series::{self, Run};
use crate::report::build::RowMaker;
use crate::report::{IntervalReport, Report};
use crate::run::engine::Engine;

/// How often the streamer looks for closed intervals.
const POLL: Duration = Duration::from_millis(20);

/// `--prometheus-rw` while the run goes: each interval's samples (the
/// same as the end-of-run push makes, at the same timestamps), pushed in
/// groups of `every` intervals; the end pushes only the rest and the totals.
struct PromLive {
    pusher: Pusher,
    run: Run,
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
    /// The samples of row `i` at its end, when that end is before the end
    /// of the measured phase (the later ones are the totals').
    fn row(&mut self, origin_unix_ns: u64, row: &IntervalReport) {
        let ts = measured_ms(origin_unix_ns, self.warmup_s, row.start_s + self.width_s);
        let end = measured_ms(origin_unix_ns, self.warmup_s, self.duration_s);
        self.made += 1;
        if ts < end {
            self.pending
                .push(self.run.interval(row, ts, self.width_s, &[], None));
        }
        if self.pending.len() >= self.every {
            self.flush();
        }
    }

    fn flush(&mut self) {
        for req in self.pending.drain(..) {
            self.pusher.push(&req);
        }
    }

    /// The rows not pushed live, the totals, and the final flush.
    fn finish(mut self, r: &Report) -> Option<String> {
        self.flush();
        let end_ms = series::measured_ms(r, r.duration_s);
        for iv in r.intervals.iter().skip(self.made) {
            let ts = series::measured_ms(r, iv.start_s + self.width_s);
            if ts >= end_ms {
                break;
            }
            self.pusher
                .push(&self.run.interval(iv, ts, self.width_s, &[], Some(r)));
        }
        self.pusher.push(&self.run.totals(r, end_ms));
        self.pusher.finish(self.timeout).warning()
    }
}

/// The live outputs of a run and what they wrote so far.
pub(super) struct Live {
    /// `--dashboard`.
    dashboard: Option<super::dashboard::Dashboard>,
    warmup_ns: u64,
    /// `--prometheus-rw` (on `run`, always live).
    prom: Option<PromLive>,
    /// `--out-intervals`: where the lines go.
    lines: Option<Box<dyn Write + Send>>,
    /// The first write error; no line is written after it.
    failed: Option<String>,
    /// Rows made so far (streamed live or at the end).
    rows: usize,
    schedule: usize,
    engine: Engine,
    maker: Option<RowMaker>,
    plan_rows: RowMaker,
}

impl Live {
    /// The live outputs `args` asks for (the `--out-intervals` file is
    /// created here, before the run).
    ///
    /// # Errors
    /// The `--out-intervals` file cannot be created.
    pub(super) fn open(
        args: &RunArgs,
        plan: &Plan<'_>,
        engine: Engine,
        started: std::time::SystemTime,
    ) -> anyhow::Result<Live> {
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
                        timeout: pa.prometheus_timeout,
                        every,
                        pending: Vec::new(),
                        made: 0,
                        warmup_s: plan.warmup_ns as f64 / 1e9,
                        duration_s: plan.duration_ns as f64 / 1e9,
                        width_s: interval as f64 / 1e9,
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
        let dashboard = match args.dashboard {
            None => None,
            Some(addr) => {
                let d = super::dashboard::Dashboard::start(addr, plan.duration_ns as f64 / 1e9)
                    .map_err(|e| {
                        crate::UsageError(format!("--dashboard: cannot serve on {addr}: {e}"))
                    })?;
                eprintln!("metronome: dashboard on http://{}/", d.addr());
                Some(d)
            }
        };
        Ok(Live {
            dashboard,
            warmup_ns: plan.warmup_ns,
            prom,
            lines,
            failed: None,
            rows: 0,
            schedule: plan.interval_count(),
            engine,
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

    /// Streams the closed intervals of `control`'s engine until `done`.
    pub(super) fn stream(&mut self, control: &Control, done: &AtomicBool) {
        if !self.is_on() {
            return;
        }
        let mut reader = LiveReader::default();
        loop {
            // Read `done` first: a last poll after it misses nothing the
            // engine published.
            let last = done.load(Ordering::Acquire);
            let live = &control.progress.live;
            reader.poll(live, |i, iv| {
                if i >= self.schedule || i != self.rows {
                    return;
                }
                let maker = self.maker.get_or_insert_with(|| {
                    let mut m = self.plan_rows.clone();
                    m.set_pacers(self.engine.pacers(live.mailboxes()));
                    m
                });
                let row = maker.row(i, iv);
                self.rows += 1;
                self.write(&row);
                if let Some(p) = self.prom.as_mut() {
                    p.row(
                        control.progress.origin_unix_ns.load(Ordering::Acquire),
                        &row,
                    );
                }
                if let Some(d) = &self.dashboard {
                    d.row(&row);
                }
            });
            if let Some(d) = &self.dashboard {
                let p = &control.progress;
                d.progress(
                    p.sent.load(Ordering::Relaxed),
                    p.ok.load(Ordering::Relaxed),
                    p.errors.load(Ordering::Relaxed),
                    measured_s(p.origin_unix_ns.load(Ordering::Acquire), self.warmup_ns),
                );
            }
            if last || (reader.stalled() && self.dashboard.is_none()) {
                return;
            }
            std::thread::sleep(POLL);
        }
    }

    /// With `--dashboard`: its thread's CPU so far, seconds.
    pub(super) fn dashboard_cpu_s(&self) -> Option<f64> {
        self.dashboard
            .as_ref()
            .map(super::dashboard::Dashboard::cpu_s)
    }

    /// Writes the report's rows not streamed live and pushes the rest to
    /// Prometheus; returns the warnings (a line not written, a push not
    /// stored).
    pub(super) fn finish(&mut self, report: &Report) -> Vec<String> {
        let mut warnings = Vec::new();
        for row in report.intervals.iter().skip(self.rows) {
            self.write(row);
        }
        self.rows = self.rows.max(report.intervals.len());
        if let Some(e) = self.failed.take() {
            warnings.push(format!(
                "--out-intervals: {e}; the report has every interval"
            ));
        }
        if let Some(p) = self.prom.take() {
            warnings.extend(p.finish(report));
        }
        if let Some(d) = self.dashboard.take() {
            match crate::report::html::render_report(
                report,
                Some(crate::report::argv::this_command()),
            ) {
                Ok(page) => d.finish(report, page),
                Err(e) => warnings.push(format!("--dashboard: cannot render the page: {e:#}")),
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
