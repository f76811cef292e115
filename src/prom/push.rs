//! The pusher: one thread that POSTs remote write bodies to one URL.
//!
//! [`Pusher::push`] encodes and compresses a [`WriteRequest`] on the
//! caller's thread (CPU only, kilobytes) and hands the body to a bounded
//! queue; when the queue is full the **oldest** body is dropped and counted.
//! It never waits for the network, so a live run's pacer may call it.
//!
//! The thread sends the bodies in order over plain HTTP/1.1 (one connection
//! per POST, `Connection: close`). A 2xx is done. A 5xx, a 429 or a
//! connection error is retried with exponential backoff (100 ms doubling to
//! 5 s, [`MAX_ATTEMPTS`] attempts); any other 4xx is not retried (the
//! server refused the data: out-of-order or too-old samples, a bad label)
//! and is counted with its message. [`Pusher::finish`] flushes what is
//! queued until a deadline and returns the [`Stats`]; the run reports them
//! as a warning, never as a failed run. The deadline is kept: a POST still
//! under way then (a name that takes long to resolve, a server that holds
//! the connection) is abandoned and counted unsent, and a flush that has
//! to wait says so first, with for how long ([`FLUSH_QUIET`]).
//!
//! A server without native histograms (Prometheus without
//! `--enable-feature=native-histograms` answers `HTTP 500: native
//! histograms are disabled`, and stores nothing of that push, not even its
//! counters) is not retried as if the 500 were transient: the pusher says
//! so once, sends that push and every queued one without its histograms
//! (or, where the caller gave one, its fallback: the same samples with
//! classic summaries), and [`Pusher::native_refused`] tells the callers to
//! build classic summaries from then on, as `--prometheus-summaries` does.
//!
//! Only `http://` URLs: `https://` is refused at parse time (put a local
//! Prometheus or a TLS-terminating proxy in front).

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::proto::{self, WriteRequest};

/// Bodies waiting to be sent before the oldest is dropped.
pub const QUEUE_CAPACITY: usize = 256;
/// Attempts per body (the first and its retries) on 5xx, 429 and
/// connection errors.
pub const MAX_ATTEMPTS: u32 = 6;
/// The first retry's wait; each next one doubles, up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// Connect, read and write timeout of one POST (shortened to what is left
/// before [`Pusher::finish`]'s deadline once that is set).
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// How long [`Pusher::finish`] waits before it says that it is waiting,
/// when the last attempt failed; with no failure seen (a slow server, or
/// one that holds the connection) it says so after [`FLUSH_QUIET_OK`] or
/// half the deadline, whichever is sooner.
pub const FLUSH_QUIET: Duration = Duration::from_millis(200);
/// See [`FLUSH_QUIET`].
pub const FLUSH_QUIET_OK: Duration = Duration::from_secs(1);
/// What Prometheus answers (HTTP 500) to a native histogram when its
/// native histograms are off (`storage.ErrNativeHistogramsDisabled`).
pub const NATIVE_DISABLED: &str = "native histograms are disabled";

/// A parsed `--prometheus-rw` URL: `http://HOST[:PORT][/PATH]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// Host as written (a name, an IPv4 address or a bracketed IPv6 one).
    pub host: String,
    /// Port (80 when absent).
    pub port: u16,
    /// Path and query, `/` when absent.
    pub path: String,
}

impl Endpoint {
    /// Parses `http://HOST[:PORT][/PATH]`; `https://` and other schemes are
    /// refused with the reason.
    ///
    /// ```
    /// use metronome::prom::push::Endpoint;
    /// let e = Endpoint::parse("http://127.0.0.1:9090/api/v1/write").unwrap();
    /// assert_eq!((e.host.as_str(), e.port, e.path.as_str()), ("127.0.0.1", 9090, "/api/v1/write"));
    /// assert!(Endpoint::parse("https://prom:443/api/v1/write").is_err());
    /// ```
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        if url.starts_with("https://") {
            return Err(format!(
                "{url}: https is not supported by --prometheus-rw (plain http only); \
                 push to a local Prometheus or agent, or through a TLS-terminating proxy"
            ));
        }
        let Some(rest) = url.strip_prefix("http://") else {
            return Err(format!("{url}: not an http:// URL"));
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let Some((h, after)) = v6.split_once(']') else {
                return Err(format!("{url}: unclosed [ in the host"));
            };
            (format!("[{h}]"), after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (authority.to_string(), None),
            }
        };
        if host.is_empty() || host == "[]" {
            return Err(format!("{url}: no host"));
        }
        let port = match port {
            None => 80,
            Some(p) => p
                .parse::<u16>()
                .map_err(|_| format!("{url}: port {p:?} is not a number 0-65535"))?,
        };
        Ok(Endpoint {
            host,
            port,
            path: path.to_string(),
        })
    }
}

/// What the pusher did, for the end-of-run warning.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Bodies handed to [`Pusher::push`].
    pub queued: u64,
    /// Bodies the server accepted (2xx).
    pub sent: u64,
    /// Bodies dropped because the queue was full (the oldest first).
    pub dropped: u64,
    /// Bodies the server refused (4xx other than 429), or still failing
    /// after [`MAX_ATTEMPTS`] attempts.
    pub failed: u64,
    /// Bodies still queued (or in retry) when [`Pusher::finish`]'s deadline
    /// came.
    pub unsent: u64,
    /// Retries made (attempts after the first).
    pub retries: u64,
    /// The first failure's message, if any.
    pub first_error: Option<String>,
    /// The server refused native histograms ([`NATIVE_DISABLED`]): pushes
    /// went on without them (or with their summaries fallback).
    pub native_refused: bool,
    /// Pushes sent without the native histograms they carried (no
    /// summaries fallback was given for them).
    pub stripped: u64,
}

impl Stats {
    /// The warning to print when anything was not sent, else `None`.
    pub fn warning(&self) -> Option<String> {
        let lost = self.dropped + self.failed + self.unsent;
        if lost == 0 && self.stripped == 0 {
            return None;
        }
        if lost == 0 {
            return Some(format!(
                "--prometheus-rw: the server has no native histograms: {} of {} pushes were \
                 stored without their histograms (their counters and gauges kept), the rest \
                 with classic summaries",
                self.stripped, self.queued
            ));
        }
        let mut w = format!(
            "--prometheus-rw: {lost} of {} pushes not stored ({} dropped from a full queue, \
             {} failed, {} unsent at the deadline)",
            self.queued, self.dropped, self.failed, self.unsent
        );
        if let Some(e) = &self.first_error {
            w.push_str(&format!("; first error: {e}"));
        }
        Some(w)
    }
}

/// One push as queued: its body and, when it carries native histograms,
/// the body to send instead to a server without them.
struct Body {
    body: Vec<u8>,
    /// The fallback, and whether it is a summaries one given by the
    /// caller (else the same push with its histograms left out).
    fallback: Option<(Vec<u8>, bool)>,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Body>,
    stats: Stats,
    /// Set by `finish`: flush until this instant, then stop.
    deadline: Option<Instant>,
    /// A body is being sent (popped from the queue, not yet counted).
    busy: bool,
    /// The thread returned.
    ended: bool,
    /// The last attempt's error, cleared by a success.
    last_error: Option<String>,
}

/// What is known of the server's native histograms.
const NATIVE_UNKNOWN: u8 = 0;
/// It stored a push that carried native histograms.
const NATIVE_OK: u8 = 1;
/// It refused them ([`NATIVE_DISABLED`]).
const NATIVE_OFF: u8 = 2;

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    /// Signalled when the thread returns.
    ended: Condvar,
    native: std::sync::atomic::AtomicU8,
}

/// A running pusher (see the module docs).
pub struct Pusher {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    capacity: usize,
}

impl Pusher {
    /// Starts the thread that pushes to `endpoint`, with a queue of
    /// [`QUEUE_CAPACITY`] bodies.
    pub fn start(endpoint: Endpoint) -> std::io::Result<Pusher> {
        Pusher::with_capacity(endpoint, QUEUE_CAPACITY)
    }

    /// [`Pusher::start`] with a queue of `capacity` bodies (at least 1).
    pub fn with_capacity(endpoint: Endpoint, capacity: usize) -> std::io::Result<Pusher> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            ended: Condvar::new(),
            native: std::sync::atomic::AtomicU8::new(NATIVE_UNKNOWN),
        });
        let for_thread = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("prometheus-rw".into())
            .spawn(move || {
                crate::background::give_way();
                run(&endpoint, &for_thread);
                lock(&for_thread).ended = true;
                for_thread.ended.notify_all();
            })?;
        Ok(Pusher {
            shared,
            thread: Some(thread),
            capacity: capacity.max(1),
        })
    }

    /// Whether the server refused native histograms: build classic
    /// summaries from now on (as `--prometheus-summaries` does).
    pub fn native_refused(&self) -> bool {
        self.shared
            .native
            .load(std::sync::atomic::Ordering::Acquire)
            == NATIVE_OFF
    }

    /// Whether it is not yet known that the server takes native
    /// histograms (none was stored yet): a push of native histograms
    /// should come with its summaries ([`Pusher::push_with_summaries`]).
    pub fn native_unproven(&self) -> bool {
        self.shared
            .native
            .load(std::sync::atomic::Ordering::Acquire)
            != NATIVE_OK
    }

    /// Queues `req` (encoded and compressed here); drops the oldest queued
    /// body when the queue is full. Never waits for the network. Until the
    /// server has taken native histograms, a `req` that carries some is
    /// queued with itself less its histograms, sent instead if the server
    /// refuses them.
    pub fn push(&self, req: &WriteRequest) {
        let fallback = (self.native_unproven() && has_histograms(req))
            .then(|| (proto::encode(&without_histograms(req)), false));
        self.queue(proto::encode(req), fallback);
    }

    /// Queues `req`, and `summaries` (the same samples with classic
    /// summaries for native histograms) to send instead to a server
    /// without native histograms; as [`Pusher::push`].
    pub fn push_with_summaries(&self, req: &WriteRequest, summaries: &WriteRequest) {
        let fallback = (self.native_unproven() && has_histograms(req))
            .then(|| (proto::encode(summaries), true));
        self.queue(proto::encode(req), fallback);
    }

    fn queue(&self, body: Vec<u8>, fallback: Option<(Vec<u8>, bool)>) {
        let body = Body { body, fallback };
        let mut s = lock(&self.shared);
        s.stats.queued += 1;
        if s.queue.len() >= self.capacity {
            s.queue.pop_front();
            s.stats.dropped += 1;
        }
        s.queue.push_back(body);
        drop(s);
        self.shared.wake.notify_one();
    }

    /// Pushes one live interval: [`super::series::Run::interval`]'s samples
    /// (cumulative counters and histograms) at `end_ms`.
    pub fn push_interval(
        &self,
        run: &mut super::series::Run,
        iv: &crate::report::IntervalReport,
        end_ms: i64,
        width_s: f64,
        histograms: &[(&'static str, &metronome_core::histogram::Histogram)],
    ) {
        self.push(&run.interval(iv, end_ms, width_s, histograms, None, None));
    }

    /// Sends what is queued until `deadline` from now, then stops the
    /// thread and returns what happened; bodies left are counted `unsent`.
    /// The deadline is kept: a POST still under way then (resolving a
    /// name, connecting, waiting for the reply) is abandoned, its thread
    /// left to end by itself, and counted unsent. When the flush is not
    /// done within [`FLUSH_QUIET`] (see there) it says on stderr that it is waiting,
    /// how much and for how long (the deadline is `--prometheus-timeout`).
    pub fn finish(mut self, deadline: Duration) -> Stats {
        let started = Instant::now();
        let until = started + deadline;
        lock(&self.shared).deadline = Some(until);
        self.shared.wake.notify_all();
        let mut s = lock(&self.shared);
        let mut said = false;
        while !s.ended {
            let now = Instant::now();
            if now >= until {
                break;
            }
            let quiet = started
                + if s.last_error.is_some() {
                    FLUSH_QUIET.min(deadline)
                } else {
                    FLUSH_QUIET_OK.min(deadline / 2)
                };
            if !said && now >= quiet {
                said = true;
                let left = s.queue.len() + usize::from(s.busy);
                let why = s
                    .last_error
                    .as_deref()
                    .map_or_else(String::new, |e| format!(" (the last attempt: {e})"));
                eprintln!(
                    "metronome: --prometheus-rw: waiting up to {} (--prometheus-timeout) to push {left} \
                     pending batch{}{why}",
                    crate::report::num::unit(deadline.as_secs_f64(), "s"),
                    if left == 1 { "" } else { "es" },
                );
            }
            // Woken by the thread's end; a failure since is seen within
            // FLUSH_QUIET.
            let wait = if said {
                until
            } else {
                quiet.min(until).min(now + FLUSH_QUIET)
            };
            s = self
                .shared
                .ended
                .wait_timeout(s, wait.saturating_duration_since(now))
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
        let ended = s.ended;
        let left = s.queue.len() as u64 + u64::from(!ended && s.busy);
        s.queue.clear();
        s.stats.unsent += left;
        if !ended {
            // The thread is in a POST: it stops after it (the deadline is
            // past), counting nothing more that is returned here.
            s.busy = false;
        }
        let stats = s.stats.clone();
        drop(s);
        match self.thread.take() {
            Some(t) if ended => {
                let _ = t.join();
            }
            // Detached: it ends within its I/O timeout.
            _ => {}
        }
        stats
    }
}

/// Whether a push carries native histograms.
fn has_histograms(req: &WriteRequest) -> bool {
    req.timeseries.iter().any(|t| !t.histograms.is_empty())
}

/// `req` without its native histograms (series that had only those left
/// out): its counters and gauges.
fn without_histograms(req: &WriteRequest) -> WriteRequest {
    let mut out = req.clone();
    out.timeseries.retain(|t| t.histograms.is_empty());
    out
}

impl Drop for Pusher {
    /// A pusher dropped without [`Pusher::finish`] stops at once.
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            lock(&self.shared).deadline = Some(Instant::now());
            self.shared.wake.notify_all();
            let _ = t.join();
        }
    }
}

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, State> {
    // A panic on the pusher thread cannot leave the state half-changed
    // (every change is a single push, pop or add), so a poisoned lock is
    // still usable.
    shared.state.lock().unwrap_or_else(|e| e.into_inner())
}

/// The outcome of one POST.
enum Outcome {
    Done,
    /// Retry: 5xx, 429, connection error.
    Retry(String),
    /// Give up: any other status.
    Refused(String),
}

fn run(endpoint: &Endpoint, shared: &Shared) {
    use std::sync::atomic::Ordering;
    loop {
        let (mut item, deadline) = {
            let mut s = lock(shared);
            loop {
                // Past the deadline: what is left stays queued, and
                // `finish` counts it unsent.
                if s.deadline.is_some_and(|d| Instant::now() >= d) {
                    return;
                }
                if let Some(item) = s.queue.pop_front() {
                    s.busy = true;
                    break (item, s.deadline);
                }
                if s.deadline.is_some() {
                    return;
                }
                s = shared.wake.wait(s).unwrap_or_else(|e| e.into_inner());
            }
        };
        let mut backoff = FIRST_BACKOFF;
        let mut attempt = 1;
        loop {
            // A server known to refuse native histograms gets the fallback.
            if shared.native.load(Ordering::Acquire) == NATIVE_OFF {
                if let Some((fallback, summaries)) = item.fallback.take() {
                    item.body = fallback;
                    if !summaries {
                        lock(shared).stats.stripped += 1;
                    }
                }
            }
            let outcome = post(endpoint, &item.body, deadline);
            let mut s = lock(shared);
            if !s.busy {
                // `finish` gave up on this body and counted it.
                return;
            }
            let why = match outcome {
                Outcome::Done => {
                    s.stats.sent += 1;
                    s.busy = false;
                    s.last_error = None;
                    if item.fallback.is_some() {
                        shared.native.store(NATIVE_OK, Ordering::Release);
                    }
                    break;
                }
                Outcome::Refused(why) => {
                    s.stats.failed += 1;
                    s.busy = false;
                    s.stats.first_error.get_or_insert(why);
                    break;
                }
                Outcome::Retry(why) if item.fallback.is_some() && why.contains(NATIVE_DISABLED) => {
                    // Not transient: the same push again without its
                    // native histograms, at once.
                    if shared.native.swap(NATIVE_OFF, Ordering::AcqRel) != NATIVE_OFF {
                        s.stats.native_refused = true;
                        eprintln!(
                            "metronome: warning: --prometheus-rw: the server refused native \
                             histograms ({why}); pushing classic summaries from now on, as \
                             --prometheus-summaries does (to keep native histograms, start \
                             Prometheus with --enable-feature=native-histograms)"
                        );
                    }
                    continue;
                }
                Outcome::Retry(why) => why,
            };
            s.last_error = Some(why.clone());
            let past = |d: Option<Instant>| d.is_some_and(|d| Instant::now() + backoff >= d);
            if attempt >= MAX_ATTEMPTS {
                s.stats.failed += 1;
                s.busy = false;
                s.stats.first_error.get_or_insert(why);
                break;
            }
            if past(s.deadline) {
                s.stats.unsent += 1;
                s.busy = false;
                s.stats.first_error.get_or_insert(why);
                break;
            }
            s.stats.retries += 1;
            attempt += 1;
            // Wait out the backoff, waking early only to see a deadline.
            let until = Instant::now() + backoff;
            while Instant::now() < until {
                let left = until.saturating_duration_since(Instant::now());
                s = shared
                    .wake
                    .wait_timeout(s, left)
                    .map(|(g, _)| g)
                    .unwrap_or_else(|e| e.into_inner().0);
                if past(s.deadline) {
                    break;
                }
            }
            drop(s);
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
}

/// One POST of `body`; the I/O timeout shortened to what is left before
/// `deadline`.
fn post(endpoint: &Endpoint, body: &[u8], deadline: Option<Instant>) -> Outcome {
    let timeout = deadline.map_or(IO_TIMEOUT, |d| {
        d.saturating_duration_since(Instant::now())
            .clamp(Duration::from_millis(10), IO_TIMEOUT)
    });
    let target = format!("{}:{}", endpoint.host, endpoint.port);
    let addrs = match target.to_socket_addrs() {
        Ok(a) => a.collect::<Vec<_>>(),
        Err(e) => return Outcome::Retry(format!("cannot resolve {target}: {e}")),
    };
    let mut last = format!("{target}: no address");
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(stream) => return exchange(stream, endpoint, body, timeout),
            Err(e) => last = format!("cannot connect to {addr}: {e}"),
        }
    }
    Outcome::Retry(last)
}

fn exchange(mut stream: TcpStream, endpoint: &Endpoint, body: &[u8], t: Duration) -> Outcome {
    let _ = stream.set_read_timeout(Some(t));
    let _ = stream.set_write_timeout(Some(t));
    let _ = stream.set_nodelay(true);
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {}:{}\r\nUser-Agent: metronome/{}\r\n\
         Content-Encoding: {}\r\nContent-Type: {}\r\nX-Prometheus-Remote-Write-Version: {}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        endpoint.path,
        endpoint.host,
        endpoint.port,
        env!("CARGO_PKG_VERSION"),
        proto::CONTENT_ENCODING,
        proto::CONTENT_TYPE,
        proto::VERSION,
        body.len()
    );
    let sent = stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body));
    if let Err(e) = sent {
        return Outcome::Retry(format!("sending to {}: {e}", endpoint.host));
    }
    // The whole reply (Connection: close), at most 64 KiB of it.
    let mut reply = Vec::new();
    let read = stream.take(64 * 1024).read_to_end(&mut reply);
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut resp = httparse::Response::new(&mut headers);
    let body_at = match resp.parse(&reply) {
        Ok(httparse::Status::Complete(n)) => n,
        _ => {
            let why = match read {
                Err(e) => format!("reading the reply: {e}"),
                Ok(_) => "no complete HTTP reply".to_string(),
            };
            return Outcome::Retry(why);
        }
    };
    let code = resp.code.unwrap_or(0);
    let text = String::from_utf8_lossy(&reply[body_at..]);
    let text = text.trim();
    let why = format!(
        "HTTP {code}: {}",
        text.chars().take(300).collect::<String>()
    );
    match code {
        200..=299 => Outcome::Done,
        429 | 500..=599 => Outcome::Retry(why),
        _ => Outcome::Refused(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_forms() {
        let e = Endpoint::parse("http://[::1]:9090/w").unwrap();
        assert_eq!(
            (e.host.as_str(), e.port, e.path.as_str()),
            ("[::1]", 9090, "/w")
        );
        let e = Endpoint::parse("http://prom").unwrap();
        assert_eq!(
            (e.host.as_str(), e.port, e.path.as_str()),
            ("prom", 80, "/")
        );
        assert!(Endpoint::parse("ftp://x").is_err());
        assert!(Endpoint::parse("http://:9090/").is_err());
        assert!(Endpoint::parse("http://h:99999/").is_err());
        let err = Endpoint::parse("https://h/").unwrap_err();
        assert!(err.contains("https is not supported"), "{err}");
    }
}
