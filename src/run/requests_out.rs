//! `--out-requests FILE|-`: one JSON line per measured request
//! (docs/requests-out.md). The engines' recording threads push each
//! request's record ([`metronome_core::record::RequestRecord`], handed over
//! by core's ledger) into a bounded queue reserved before the clock
//! ([`metronome_core::engine::request_queue`]): no allocation, lock or
//! system call per request, a record that does not fit is dropped and
//! counted. A writer thread of its own, at the watching threads' low
//! priority ([`crate::background`]), drains the queue every few
//! milliseconds and writes the lines through a buffer.

use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use metronome_core::engine::{request_queue, RequestDrain, RequestFeed, REQUEST_QUEUE_CAPACITY};
use metronome_core::plan::Plan;
use metronome_core::record::{Outcome, RequestRecord};

use crate::cli::RunArgs;
use crate::report::OutRequests;

/// The first line's `schema`.
pub const SCHEMA: &str = "metronome.requests/v1";

/// How often the writer drains the queue: 64 Ki records last 65 ms at
/// 1 M requests/s.
const POLL: Duration = Duration::from_millis(5);

/// The writer's buffer.
const BUFFER: usize = 256 << 10;

/// Whether `--out-requests -` writes the lines to stdout.
pub fn to_stdout(args: &RunArgs) -> bool {
    args.out_requests.as_deref() == Some(Path::new("-"))
}

/// The writer of a run's request lines, started before the run.
pub(super) struct RequestsOut {
    feed: RequestFeed,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Written>,
    /// The file, for a warning.
    path: String,
}

/// What the writer thread did.
struct Written {
    lines: u64,
    /// Records drained after a write failed (not written).
    lost: u64,
    failed: Option<io::Error>,
}

impl RequestsOut {
    /// The writer `args` asks for, its file created now (so a bad path
    /// fails before the run, exit 2) and its queue reserved.
    ///
    /// # Errors
    /// A [`crate::UsageError`] when the file cannot be created.
    pub(super) fn open(
        args: &RunArgs,
        plan: &Plan<'_>,
        names: &[String],
        run_id: &str,
    ) -> anyhow::Result<Option<RequestsOut>> {
        let Some(path) = &args.out_requests else {
            return Ok(None);
        };
        let out: Box<dyn Write + Send> = if to_stdout(args) {
            Box::new(io::stdout())
        } else {
            Box::new(std::fs::File::create(path).map_err(|e| {
                crate::UsageError(format!(
                    "--out-requests: cannot create {}: {e}",
                    path.display()
                ))
            })?)
        };
        // Each request's name, as a JSON string, looked up once.
        let named: Vec<Option<String>> = (0..plan.requests.len())
            .map(|i| {
                let name = names.get(plan.name_of(i)?)?;
                serde_json::to_string(name).ok()
            })
            .collect();
        let (feed, drain) = request_queue(REQUEST_QUEUE_CAPACITY);
        let stop = Arc::new(AtomicBool::new(false));
        let writer = Writer {
            drain,
            out: BufWriter::with_capacity(BUFFER, out),
            named,
            header: format!(
                "{{\"schema\":\"{SCHEMA}\",\"run_id\":{}",
                serde_json::to_string(run_id)?
            ),
            header_written: false,
        };
        let stopped = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("out-requests".into())
            .spawn(move || {
                crate::background::give_way();
                writer.run(&stopped)
            })?;
        Ok(Some(RequestsOut {
            feed,
            stop,
            thread,
            path: path.display().to_string(),
        }))
    }

    /// The engines' end of the queue ([`metronome_core::engine::Control::requests`]).
    pub(super) fn feed(&self) -> RequestFeed {
        self.feed.clone()
    }

    /// Writes what is left once every record is in (the engine returned),
    /// and returns the counts, with a warning when lines are missing.
    pub(super) fn finish(self) -> (OutRequests, Option<String>) {
        self.stop.store(true, Ordering::Release);
        let queue_dropped = {
            let w = self.thread.join();
            match w {
                Ok(w) => (w, None),
                Err(_) => (
                    Written {
                        lines: 0,
                        lost: 0,
                        failed: None,
                    },
                    Some("the writer thread failed".to_string()),
                ),
            }
        };
        let (w, panicked) = queue_dropped;
        let dropped = self.feed.dropped() + w.lost;
        let counts = OutRequests {
            written: w.lines,
            dropped,
        };
        let warning = match (w.failed, panicked) {
            (Some(e), _) => Some(format!(
                "--out-requests: cannot write {}: {e}; {} lines written, {dropped} requests without one",
                self.path, w.lines
            )),
            (None, Some(why)) => Some(format!("--out-requests: {why}")),
            (None, None) if dropped > 0 => Some(format!(
                "--out-requests: {dropped} records dropped (the writer fell behind); {} lines written",
                w.lines
            )),
            (None, None) => None,
        };
        (counts, warning)
    }
}

/// The writer thread's state.
struct Writer {
    drain: RequestDrain,
    out: BufWriter<Box<dyn Write + Send>>,
    /// Each request index's name as a JSON string, if it has one.
    named: Vec<Option<String>>,
    /// The first line, without its `start_unix_ns` and closing brace.
    header: String,
    header_written: bool,
}

impl Writer {
    /// Drains the queue until `stop` (then once more), writing each record.
    fn run(mut self, stop: &AtomicBool) -> Written {
        let mut w = Written {
            lines: 0,
            lost: 0,
            failed: None,
        };
        loop {
            // Read `stop` first: a drain after it misses nothing pushed.
            let last = stop.load(Ordering::Acquire);
            let mut wrote = false;
            while let Some(r) = self.drain.try_next() {
                if w.failed.is_some() {
                    w.lost += 1;
                    continue;
                }
                match self.line(&r) {
                    Ok(()) => {
                        w.lines += 1;
                        wrote = true;
                    }
                    Err(e) => {
                        w.failed = Some(e);
                        w.lost += 1;
                    }
                }
            }
            if last {
                break;
            }
            // Lines reach the file within a poll or two while the run goes.
            if wrote && w.failed.is_none() {
                if let Err(e) = self.out.flush() {
                    w.failed = Some(e);
                }
            }
            std::thread::sleep(POLL);
        }
        if w.failed.is_none() {
            let end = self.write_header().and_then(|()| self.out.flush());
            if let Err(e) = end {
                w.failed = Some(e);
            }
        }
        w
    }

    /// The first line, once: the schema, the run's id (the report's
    /// `run_id`) and the schedule's zero in ns since the Unix epoch (the
    /// report's `start_unix_ns`), the zero of every time in the lines.
    fn write_header(&mut self) -> io::Result<()> {
        if self.header_written {
            return Ok(());
        }
        self.header_written = true;
        let origin = self.drain.origin_unix_ns();
        writeln!(self.out, "{},\"start_unix_ns\":{origin}}}", self.header)
    }

    /// One record's line.
    fn line(&mut self, r: &RequestRecord) -> io::Result<()> {
        self.write_header()?;
        let o = &mut self.out;
        write!(o, "{{\"intended_ns\":{}", r.intended_ns)?;
        for (key, v) in [
            ("sent_ns", r.sent_ns),
            ("first_byte_ns", r.first_byte_ns),
            ("end_ns", r.end_ns),
        ] {
            match v {
                Some(v) => write!(o, ",\"{key}\":{v}")?,
                None => write!(o, ",\"{key}\":null")?,
            }
        }
        write!(o, ",\"result\":\"{}\"", r.outcome.class())?;
        let kind = r.outcome.kind();
        if !kind.is_empty() {
            write!(o, ",\"kind\":\"{kind}\"")?;
        }
        if let Some(s) = r.status {
            write!(o, ",\"status\":{s}")?;
        }
        match r.outcome {
            Outcome::GrpcStatus(code) => write!(o, ",\"grpc_status\":{code}")?,
            Outcome::Framing(cause) => write!(o, ",\"framing\":\"{}\"", cause.name())?,
            _ => {}
        }
        if r.request != usize::MAX {
            write!(o, ",\"request\":{}", r.request)?;
            if let Some(Some(name)) = self.named.get(r.request) {
                write!(o, ",\"name\":{name}")?;
            }
        }
        if let Some(t) = r.input_tokens {
            write!(o, ",\"input_tokens\":{t}")?;
        }
        if let Some(t) = r.output_tokens {
            write!(o, ",\"output_tokens\":{t}")?;
        }
        if let Some(t) = r.first_token_ns {
            write!(o, ",\"first_token_ns\":{t}")?;
        }
        o.write_all(b"}\n")
    }
}
