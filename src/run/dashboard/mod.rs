//! `--dashboard [ADDR]` (docs/live.md): a page of the run as it goes,
//! served from a thread of its own on ADDR (127.0.0.1 with a free port by
//! default): `/` is the `--html` report's page in its live view (page.js:
//! the progress, the warnings, and the report's own time-series charts of
//! the interval rows as they close) that polls `/live.json` on the same
//! address four times a second; once the run is over `/` is the `--html`
//! report's page. The thread's CPU
//! is reported apart (`generator.dashboard_cpu_s`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::report::{IntervalReport, Report};

/// The live page's policy: the `--html` page's, and requests to its own
/// address (the polls).
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
    connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'";

/// How long the end of a run waits for an open live page to load the
/// final one.
const LINGER: Duration = Duration::from_secs(3);

/// What the page shows.
#[derive(Default)]
struct Board {
    rows: Vec<IntervalReport>,
    /// The drain's rows (the report's `drain`), once the run is over.
    drain: Vec<IntervalReport>,
    sent: u64,
    ok: u64,
    errors: u64,
    elapsed_s: f64,
    duration_s: f64,
    warnings: Vec<String>,
    /// The live page (page.js's live view).
    live_page: String,
    /// `--max-concurrency` (its waits are the cap's).
    cap: Option<u32>,
    /// The width of an interval, seconds.
    interval_s: f64,
    /// The stretches behind schedule so far, by the report's rule.
    behind: Vec<crate::report::Behind>,
    /// Which run the live page is of (a sweep's or `--repeat`'s runs share
    /// the dashboard; the page reloads when it changes).
    page_id: u64,
    final_page: Option<String>,
    live_served: bool,
    final_served: bool,
}

/// A running dashboard.
pub(crate) struct Dashboard {
    addr: SocketAddr,
    board: Arc<Mutex<Board>>,
    stop: Arc<AtomicBool>,
    cpu_ns: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

fn lock(b: &Mutex<Board>) -> std::sync::MutexGuard<'_, Board> {
    b.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Dashboard {
    /// Binds `addr` and starts serving a run of `duration_s`.
    ///
    /// # Errors
    /// The address cannot be bound, or the thread cannot start.
    pub(crate) fn start(
        addr: SocketAddr,
        duration_s: f64,
        meta: &crate::report::html::LiveMeta,
    ) -> std::io::Result<Dashboard> {
        let live_page =
            crate::report::html::render_live(meta, CSP).map_err(std::io::Error::other)?;
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let board = Arc::new(Mutex::new(Board {
            duration_s,
            live_page,
            cap: meta.cap,
            interval_s: meta.interval_s,
            ..Board::default()
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let cpu_ns = Arc::new(AtomicU64::new(0));
        let thread = {
            let (board, stop, cpu_ns) =
                (Arc::clone(&board), Arc::clone(&stop), Arc::clone(&cpu_ns));
            std::thread::Builder::new()
                .name("dashboard".into())
                .spawn(move || {
                    crate::background::give_way();
                    serve(&listener, &board, &stop, &cpu_ns)
                })?
        };
        Ok(Dashboard {
            addr,
            board,
            stop,
            cpu_ns,
            thread: Some(thread),
        })
    }

    /// The address it serves on.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The progress counters at `elapsed_s` into the run.
    pub(super) fn progress(&self, sent: u64, ok: u64, errors: u64, elapsed_s: f64) {
        let mut b = lock(&self.board);
        (b.sent, b.ok, b.errors, b.elapsed_s) = (sent, ok, errors, elapsed_s);
    }

    /// A closed interval's row. The stretches behind schedule are found
    /// again by the report's own rule (`report::behind`: more than 1% of an
    /// interval's due requests, and at least 3, delayed), shaded on the
    /// charts and each one a warning in the report's words, so the page
    /// warns of what the report will, not of every late send.
    pub(super) fn row(&self, row: &IntervalReport) {
        let mut b = lock(&self.board);
        b.rows.push(row.clone());
        let end_s = row.start_s + b.interval_s;
        b.behind = crate::report::behind::behind(&b.rows, None, b.cap, end_s);
        b.warnings = b
            .behind
            .iter()
            .map(crate::report::build::stretch_warning)
            .collect();
    }

    /// Row `i` again, complete (it was published provisional): in its
    /// place, the stretches behind schedule found again.
    pub(super) fn replace(&self, i: usize, row: &IntervalReport) {
        let mut b = lock(&self.board);
        let Some(old) = b.rows.get_mut(i) else {
            return;
        };
        old.clone_from(row);
        let end_s = b.rows.last().map_or(0.0, |r| r.start_s) + b.interval_s;
        b.behind = crate::report::behind::behind(&b.rows, None, b.cap, end_s);
        b.warnings = b
            .behind
            .iter()
            .map(crate::report::build::stretch_warning)
            .collect();
    }

    /// The CPU time of the dashboard's thread so far, seconds.
    pub(super) fn cpu_s(&self) -> f64 {
        self.cpu_ns.load(Ordering::Relaxed) as f64 / 1e9
    }

    /// A new run on a dashboard several runs share (a sweep's steps,
    /// `--repeat`'s runs): its own live page, empty rows; an open page
    /// reloads into it.
    ///
    /// # Errors
    /// The page cannot be drawn (a non-finite rate).
    pub(crate) fn begin(
        &self,
        duration_s: f64,
        meta: &crate::report::html::LiveMeta,
    ) -> std::io::Result<()> {
        let page = crate::report::html::render_live(meta, CSP).map_err(std::io::Error::other)?;
        let mut b = lock(&self.board);
        b.live_page = page;
        b.cap = meta.cap;
        b.interval_s = meta.interval_s;
        b.behind.clear();
        b.page_id += 1;
        b.duration_s = duration_s;
        b.rows.clear();
        b.drain.clear();
        b.warnings.clear();
        (b.sent, b.ok, b.errors, b.elapsed_s) = (0, 0, 0, 0.0);
        Ok(())
    }

    /// A run is over: its page shows the report's rows, warnings and
    /// counts (until the next run begins, or [`Dashboard::finish`]).
    pub(crate) fn end_run(&self, r: &Report) {
        let mut b = lock(&self.board);
        b.rows.clone_from(&r.intervals);
        b.drain.clone_from(&r.drain);
        b.warnings.clone_from(&r.generator.warnings);
        b.behind.clone_from(&r.generator.behind);
        (b.sent, b.ok, b.errors) = (r.requests.sent, r.requests.ok, r.requests.errors);
        b.elapsed_s = b.duration_s;
    }

    /// All is over: `/` becomes `page` (the `--html` page of the run, or of
    /// the sweep); waits up to [`LINGER`] for an open live page to load it,
    /// then stops.
    pub(crate) fn finish(mut self, page: String) {
        let opened = {
            let mut b = lock(&self.board);
            b.final_page = Some(page);
            b.live_served
        };
        if opened {
            let until = Instant::now() + LINGER;
            while Instant::now() < until && !lock(&self.board).final_served {
                std::thread::sleep(Duration::from_millis(20));
            }
            // The page's last request ends before the socket closes.
            std::thread::sleep(Duration::from_millis(200));
        }
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The dashboard the runs of `what` (`sweep`, `--repeat`) share when
/// `args` asks for one: started before the first run, its address printed.
///
/// # Errors
/// The address cannot be bound (a usage error).
pub(crate) fn shared(args: &crate::cli::RunArgs, what: &str) -> anyhow::Result<Option<Dashboard>> {
    let Some(addr) = args.dashboard else {
        return Ok(None);
    };
    let meta = crate::report::html::LiveMeta {
        kind: "live",
        version: env!("CARGO_PKG_VERSION"),
        target: args.url.clone(),
        offered_rps: 0.0,
        process: "-".into(),
        engine: "-".into(),
        stream: false,
        label: Some(format!("{what}: starting")),
        cap: None,
        interval_s: 1.0,
        samples_needed: Default::default(),
    };
    let d = Dashboard::start(addr, 0.0, &meta)
        .map_err(|e| crate::UsageError(format!("--dashboard: cannot serve on {addr}: {e}")))?;
    eprintln!("metronome: dashboard on http://{}/", d.addr());
    Ok(Some(d))
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(listener: &TcpListener, board: &Mutex<Board>, stop: &AtomicBool, cpu_ns_out: &AtomicU64) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((s, _)) => {
                let _ = answer(s, board);
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
        // 0 only where the thread CPU clock cannot be read.
        let cpu_ns = crate::background::thread_cpu_ns().unwrap_or(0);
        cpu_ns_out.store(cpu_ns, Ordering::Relaxed);
    }
}

/// The `/live.json` document.
fn live_json(b: &Board) -> String {
    serde_json::json!({
        "done": b.final_page.is_some(),
        "page": b.page_id,
        "elapsed_s": b.elapsed_s,
        "duration_s": b.duration_s,
        "sent": b.sent,
        "ok": b.ok,
        "errors": b.errors,
        "warnings": b.warnings,
        "behind": b.behind,
        "rows": b.rows,
        "drain": b.drain,
    })
    .to_string()
}

fn answer(mut s: TcpStream, board: &Mutex<Board>) -> std::io::Result<()> {
    s.set_nonblocking(false)?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    s.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut buf = [0u8; 8192];
    let mut len = 0;
    while !buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
        let n = s.read(&mut buf[len..])?;
        if n == 0 || len + n == buf.len() {
            return Ok(());
        }
        len += n;
    }
    let head = String::from_utf8_lossy(&buf[..len]);
    let mut words = head.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, kind, body) = if method != "GET" {
        (
            "405 Method Not Allowed",
            "text/plain",
            "GET only\n".to_string(),
        )
    } else {
        match path {
            "/" => {
                let mut b = lock(board);
                match &b.final_page {
                    Some(page) => {
                        let page = page.clone();
                        b.final_served = true;
                        ("200 OK", "text/html; charset=utf-8", page)
                    }
                    None => {
                        b.live_served = true;
                        ("200 OK", "text/html; charset=utf-8", b.live_page.clone())
                    }
                }
            }
            "/live.json" => ("200 OK", "application/json", live_json(&lock(board))),
            "/favicon.ico" => ("204 No Content", "text/plain", String::new()),
            _ => ("404 Not Found", "text/plain", "not found\n".to_string()),
        }
    };
    let csp = if path == "/" && lock(board).final_served {
        crate::report::html::CSP
    } else {
        CSP
    };
    write!(
        s,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nContent-Security-Policy: {csp}\r\n\
         X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    s.write_all(body.as_bytes())?;
    s.flush()
}
