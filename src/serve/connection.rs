//! One connection: read and stamp requests, admit them into the model, and
//! write each reply (or stream event) when it is due.

use std::collections::VecDeque;
use std::io;
use std::net::Shutdown;
use std::os::unix::io::AsRawFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::admit::{admit, Admitted};
use super::reply::{write_reply, Body, ConnectionHeader, Status};
use super::request::{parse_head, Method, RequestHead};
use super::stream::{Framing, Job, Stream, StreamStep};
use super::transport::Transport;
use super::wait::{wait, Woken};
use super::Shared;

/// Pipelined requests queued on one connection before it stops reading.
const MAX_QUEUED: usize = 1024;
/// How long a closing connection drains the client's leftover bytes so the
/// kernel does not answer them with a reset that would destroy our response.
const LINGER: Duration = Duration::from_millis(500);

pub(super) struct Connection<'a> {
    shared: &'a Shared,
    stream: Transport,
    /// Bytes read and not yet consumed as requests.
    buf: Vec<u8>,
    /// New bytes since the last parse.
    fresh: bool,
    /// When the last read returned: the arrival stamp of what it completed.
    last_read: Instant,
    /// The head of the request being received, once complete.
    head: Option<RequestHead>,
    continue_sent: bool,
    /// Still reading requests (false after EOF, `Connection: close` or a
    /// rejection).
    reading: bool,
    jobs: VecDeque<Job>,
    out: Vec<u8>,
    event: Vec<u8>,
}

impl<'a> Connection<'a> {
    pub(super) fn new(shared: &'a Shared, stream: Transport) -> Self {
        Self {
            shared,
            stream,
            buf: Vec::with_capacity(4096),
            fresh: false,
            last_read: Instant::now(),
            head: None,
            continue_sent: false,
            reading: true,
            jobs: VecDeque::new(),
            out: Vec::with_capacity(4096),
            event: Vec::with_capacity(512),
        }
    }

    /// A connection whose first `bytes` were already read (at `read_at`)
    /// while telling HTTP/1.1 from HTTP/2.
    pub(super) fn with_bytes(
        shared: &'a Shared,
        stream: Transport,
        bytes: Vec<u8>,
        read_at: Instant,
    ) -> Self {
        let mut connection = Self::new(shared, stream);
        connection.fresh = !bytes.is_empty();
        connection.buf = bytes;
        connection.last_read = read_at;
        connection
    }

    /// Serves until the client leaves, a response closes, or the server stops.
    pub(super) fn serve(mut self) {
        match self.serve_inner() {
            Ok(End::Graceful) => linger(self.shared, &mut self.stream),
            Ok(End::Abrupt) | Err(_) => {}
        }
        let _ = self.stream.socket().shutdown(Shutdown::Both);
    }

    fn serve_inner(&mut self) -> io::Result<End> {
        let wake = self.shared.wake.as_raw_fd();
        let mut scratch = [0u8; 16 * 1024];
        loop {
            if self.fresh {
                self.fresh = false;
                self.parse_requests()?;
            }
            let config = &self.shared.config;
            let due = self.jobs.front().map(|job| job.due(config));
            if let Some(due) = due {
                if due <= Instant::now() {
                    match self.run_front()? {
                        Some(end) => return Ok(end),
                        None => continue,
                    }
                }
            } else if !self.reading {
                return Ok(End::Graceful);
            }
            let watch =
                (self.reading && self.jobs.len() < MAX_QUEUED).then(|| self.stream.raw_fd());
            match wait(watch, wake, due)? {
                Woken::Stop => return Ok(End::Abrupt),
                Woken::Timeout => {}
                Woken::Readable => match self.stream.read_into(&mut self.buf, &mut scratch) {
                    Ok(None) => self.reading = false,
                    // A TLS handshake message or part of a record.
                    Ok(Some(0)) => {}
                    Ok(Some(_)) => {
                        self.last_read = Instant::now();
                        self.fresh = true;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                },
            }
        }
    }

    /// Turns every complete request in the buffer into a job, stamped with
    /// the time of the read that completed it.
    fn parse_requests(&mut self) -> io::Result<()> {
        let mut consumed = 0;
        while self.reading {
            let rest = &self.buf[consumed..];
            let head = match self.head {
                Some(head) => head,
                None => match parse_head(rest) {
                    Ok(Some(head)) => {
                        self.head = Some(head);
                        head
                    }
                    Ok(None) => break,
                    Err(reject) => {
                        self.reject(Status::of_reject(reject));
                        break;
                    }
                },
            };
            let total = head.head_len + head.body_len;
            if rest.len() < total {
                if head.expect_continue && !self.continue_sent && self.jobs.is_empty() {
                    self.continue_sent = true;
                    self.stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
                }
                break;
            }
            let job = self.admit(&head, &rest[head.head_len..total]);
            if job.closes() {
                self.reading = false;
            }
            self.jobs.push_back(job);
            self.head = None;
            self.continue_sent = false;
            consumed += total;
        }
        if self.reading {
            self.buf.drain(..consumed);
        } else {
            self.buf.clear();
        }
        Ok(())
    }

    /// Queues a refusal after whatever is already owed, then stops reading.
    fn reject(&mut self, status: Status) {
        self.jobs.push_back(Job::Reply {
            due: self.last_read,
            status,
            body: Body::Text(status.line()),
            connection: ConnectionHeader::Close,
            head_only: false,
            counted: false,
        });
        self.reading = false;
    }

    /// Decides the response to one complete request that arrived at
    /// `self.last_read`.
    fn admit(&self, head: &RequestHead, body: &[u8]) -> Job {
        let connection = ConnectionHeader::for_request(head, false);
        match admit(self.shared, self.last_read, head.method, head.route, body) {
            Admitted::Reply {
                due,
                status,
                body,
                counted,
            } => Job::Reply {
                due,
                status,
                body,
                connection,
                head_only: head.method == Method::Head,
                counted,
            },
            Admitted::Stream {
                arrival,
                start,
                tokens,
                prompt_tokens,
                kind,
            } => Job::Stream(Stream {
                arrival,
                start,
                tokens,
                prompt_tokens,
                kind,
                // HTTP/1.0 has no chunked framing: the body ends at close.
                connection: ConnectionHeader::for_request(head, head.http10),
                framing: if head.http10 {
                    Framing::UntilClose
                } else {
                    Framing::Chunked
                },
                step: 0,
            }),
        }
    }

    /// Writes the front job's next bytes; `Some(end)` when the connection
    /// must end.
    fn run_front(&mut self) -> io::Result<Option<End>> {
        self.out.clear();
        let Some(job) = self.jobs.front_mut() else {
            return Ok(None);
        };
        let (finished, counted, closes) = match job {
            Job::Reply {
                status,
                body,
                connection,
                head_only,
                counted,
                ..
            } => {
                let (content_type, bytes) = self.shared.body(*body);
                write_reply(
                    &mut self.out,
                    *status,
                    *connection,
                    content_type,
                    bytes,
                    *head_only,
                );
                (true, *counted, *connection == ConnectionHeader::Close)
            }
            Job::Stream(stream) => match stream.step(&mut self.out, &mut self.event) {
                StreamStep::More => (false, false, false),
                StreamStep::Done => (true, true, stream.connection == ConnectionHeader::Close),
                StreamStep::Cut => return Ok(Some(End::Abrupt)),
            },
        };
        self.stream.write_all(&self.out)?;
        if finished {
            self.jobs.pop_front();
            if counted {
                self.shared.served.fetch_add(1, Ordering::SeqCst);
            }
            if closes {
                return Ok(Some(End::Graceful));
            }
        }
        Ok(None)
    }
}

/// Sends FIN, then drains what the client still sends for a moment, so
/// unread bytes do not make the kernel reset the connection (which could
/// destroy the response before the client reads it).
pub(super) fn linger(shared: &Shared, stream: &mut Transport) {
    if stream.shutdown_write().is_err() {
        return;
    }
    let wake = shared.wake.as_raw_fd();
    let deadline = Instant::now() + LINGER;
    let mut scratch = [0u8; 4096];
    let mut drained = Vec::new();
    while Instant::now() < deadline {
        match wait(Some(stream.raw_fd()), wake, Some(deadline)) {
            Ok(Woken::Readable) => match stream.read_into(&mut drained, &mut scratch) {
                Ok(None) | Err(_) => return,
                Ok(Some(_)) => drained.clear(),
            },
            Ok(Woken::Timeout) => {}
            Ok(Woken::Stop) | Err(_) => return,
        }
    }
}

/// How a connection ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum End {
    /// Send FIN and drain the client's leftovers.
    Graceful,
    /// Close at once (cut stream, server stopping).
    Abrupt,
}
