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
//! as a warning, never as a failed run.
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
}

impl Stats {
    /// The warning to print when anything was not sent, else `None`.
    pub fn warning(&self) -> Option<String> {
        let lost = self.dropped + self.failed + self.unsent;
        if lost == 0 {
            return None;
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

#[derive(Default)]
struct State {
    queue: VecDeque<Vec<u8>>,
    stats: Stats,
    /// Set by `finish`: flush until this instant, then stop.
    deadline: Option<Instant>,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
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
        });
        let for_thread = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("prometheus-rw".into())
            .spawn(move || {
                crate::background::give_way();
                run(&endpoint, &for_thread)
            })?;
        Ok(Pusher {
            shared,
            thread: Some(thread),
            capacity: capacity.max(1),
        })
    }

    /// Queues `req` (encoded and compressed here); drops the oldest queued
    /// body when the queue is full. Never waits for the network.
    pub fn push(&self, req: &WriteRequest) {
        let body = proto::encode(req);
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
    /// A POST already under way when it is called may take its
    /// [`IO_TIMEOUT`] beyond the deadline.
    pub fn finish(mut self, deadline: Duration) -> Stats {
        {
            let mut s = lock(&self.shared);
            s.deadline = Some(Instant::now() + deadline);
        }
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let mut s = lock(&self.shared);
        let left = s.queue.len() as u64;
        s.queue.clear();
        s.stats.unsent += left;
        s.stats.clone()
    }
}

impl Drop for Pusher {
    /// A pusher dropped without [`Pusher::finish`] stops at once.
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            lock(&self.shared).deadline = Some(Instant::now());
            self.shared.wake.notify_one();
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
    loop {
        let (body, deadline) = {
            let mut s = lock(shared);
            loop {
                // Past the deadline: what is left stays queued, and
                // `finish` counts it unsent.
                if s.deadline.is_some_and(|d| Instant::now() >= d) {
                    return;
                }
                if let Some(body) = s.queue.pop_front() {
                    break (body, s.deadline);
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
            let outcome = post(endpoint, &body, deadline);
            let mut s = lock(shared);
            let why = match outcome {
                Outcome::Done => {
                    s.stats.sent += 1;
                    break;
                }
                Outcome::Refused(why) => {
                    s.stats.failed += 1;
                    s.stats.first_error.get_or_insert(why);
                    break;
                }
                Outcome::Retry(why) => why,
            };
            let past = |d: Option<Instant>| d.is_some_and(|d| Instant::now() + backoff >= d);
            if attempt >= MAX_ATTEMPTS {
                s.stats.failed += 1;
                s.stats.first_error.get_or_insert(why);
                break;
            }
            if past(s.deadline) {
                s.stats.unsent += 1;
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
