//! `--out-requests FILE|-`: one JSON line per measured request
//! (docs/requests-out.md). The engines' recording threads push each
//! request's record ([`metronome_core::record::RequestRecord`], handed over
//! by core's ledger) into a bounded queue reserved before the clock
//! ([`metronome_core::engine::request_queue`]): no allocation, lock or
//! system call per request, a record that does not fit is dropped and
//! counted. A writer thread of its own, at the watching threads' low
//! priority ([`crate::background`]), drains the queue every few
//! milliseconds and writes the lines through a buffer.

use std::io::{self, Write};
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
            out,
            buf: Vec::with_capacity(BUFFER + 4096),
            ends: Vec::with_capacity(BUFFER / 64),
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
    /// and returns the counts (`written`: the lines the file took whole),
    /// with a warning when lines are missing and whether the output failed
    /// (a write error or the writer's end: the run fails, exit 1, as for
    /// `--out`; records the queue dropped are a warning only).
    pub(super) fn finish(self) -> (OutRequests, Option<String>, bool) {
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
        let failed = w.failed.is_some() || panicked.is_some();
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
        (counts, warning, failed)
    }
}

/// The writer thread's state.
struct Writer {
    drain: RequestDrain,
    out: Box<dyn Write + Send>,
    /// Lines made, not yet handed to `out` (at most about [`BUFFER`]).
    buf: Vec<u8>,
    /// Where each line in `buf` ends: a line counts as written only once
    /// `out` took its last byte.
    ends: Vec<usize>,
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
                self.line(&r);
                wrote = true;
                if self.buf.len() >= BUFFER {
                    self.flush(&mut w);
                }
            }
            if last {
                break;
            }
            // Lines reach the file within a poll or two while the run goes.
            if wrote && w.failed.is_none() {
                self.flush(&mut w);
            }
            std::thread::sleep(POLL);
        }
        if w.failed.is_none() {
            self.write_header();
            self.flush(&mut w);
        }
        w
    }

    /// Hands `buf` to `out` and flushes it: the lines `out` took whole
    /// count as written; on an error the others are lost (counted), and
    /// so is every later record.
    fn flush(&mut self, w: &mut Written) {
        let mut done = 0;
        let mut error = None;
        while done < self.buf.len() {
            match self.out.write(&self.buf[done..]) {
                Ok(0) => {
                    error = Some(io::Error::from(io::ErrorKind::WriteZero));
                    break;
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        if error.is_none() {
            error = self.out.flush().err();
        }
        let whole = match error {
            // A flush that failed may have kept any of the bytes.
            Some(_) if done == self.buf.len() => 0,
            Some(_) => self.ends.iter().filter(|&&end| end <= done).count(),
            None => self.ends.len(),
        };
        w.lines += whole as u64;
        w.lost += (self.ends.len() - whole) as u64;
        if error.is_some() {
            w.failed = error;
        }
        self.buf.clear();
        self.ends.clear();
    }

    /// The first line, once: the schema, the run's id (the report's
    /// `run_id`) and the schedule's zero in ns since the Unix epoch (the
    /// report's `start_unix_ns`), the zero of every time in the lines.
    fn write_header(&mut self) {
        if self.header_written {
            return;
        }
        self.header_written = true;
        let origin = self.drain.origin_unix_ns();
        // Into a Vec: cannot fail.
        let _ = writeln!(self.buf, "{},\"start_unix_ns\":{origin}}}", self.header);
    }

    /// One record's line, into `buf`.
    fn line(&mut self, r: &RequestRecord) {
        self.write_header();
        // Writes into a Vec cannot fail.
        let _ = self.record(r);
        self.ends.push(self.buf.len());
    }

    /// One record's line written into `buf`.
    fn record(&mut self, r: &RequestRecord) -> io::Result<()> {
        let o = &mut self.buf;
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
