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
use crate::report::build::{pacing_threads, Engine, RowMaker};
use crate::report::{IntervalReport, Report};

/// How often the streamer looks for closed intervals.
const POLL: Duration = Duration::from_millis(20);

/// The live outputs of a run and what they wrote so far.
pub(super) struct Live {
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
    pub(super) fn open(args: &RunArgs, plan: &Plan<'_>, engine: Engine) -> anyhow::Result<Live> {
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
        Ok(Live {
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
        self.lines.is_some()
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
                    m.set_pacers(pacing_threads(self.engine, live.mailboxes()));
                    m
                });
                let row = maker.row(i, iv);
                self.rows += 1;
                self.write(&row);
            });
            if last || reader.stalled() {
                return;
            }
            std::thread::sleep(POLL);
        }
    }

    /// Writes the report's rows not streamed live; returns a warning when
    /// a line could not be written.
    pub(super) fn finish(&mut self, report: &Report) -> Option<String> {
        if !self.is_on() {
            return None;
        }
        for row in report.intervals.iter().skip(self.rows) {
            self.write(row);
        }
        self.rows = self.rows.max(report.intervals.len());
        self.failed
            .take()
            .map(|e| format!("--out-intervals: {e}; the report has every interval"))
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
