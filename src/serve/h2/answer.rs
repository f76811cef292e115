//! The answers: admitting a finished request, running the jobs that are
//! due, and writing HEADERS, DATA as the windows allow, and the trailers.

use std::time::Instant;

use metronome_core::h2::frame::{flag, kind, ErrorCode};
use metronome_core::h2::hpack::{encode_fields, encode_response, encode_table_size_update};

use super::conn::put_frame;
use super::H2Connection;
use crate::serve::admit::{admit, admit_grpc, GrpcAnswer};
use crate::serve::job::{reply_fields, Job, STREAM_FIELDS};
use crate::serve::reply::{Body, Status};
use crate::serve::request::{Method, Route};
use crate::serve::stream::StreamStep;

/// The message of a gRPC call answered with an injected status.
const GRPC_MESSAGE: &[u8] = b"injected by metronome serve";

/// What a stream owes once its queued DATA is out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Finish {
    /// END_STREAM on the last DATA (or an empty one).
    End,
    /// Trailers with this `grpc-status`, END_STREAM.
    Trailers(u32),
    /// RST_STREAM with this code (a cut SSE stream).
    Reset(ErrorCode),
}

impl H2Connection<'_> {
    /// The request on `stream` ended at `self.last_read`: admit it.
    pub(super) fn complete(&mut self, stream: u32) {
        let shared = self.shared;
        let arrival = self.last_read;
        let Some(s) = self.streams.get_mut(&stream) else {
            return;
        };
        s.receiving = false;
        if s.head.content_length.is_some_and(|n| n != s.received) {
            self.reset(stream, ErrorCode::PROTOCOL_ERROR);
            return;
        }
        let method = s.head.method.unwrap_or(Method::Other);
        let route = s.head.route.unwrap_or(Route::Other);
        let reject = |status| Job::Reply {
            due: arrival,
            status,
            body: Body::Text(status.line()),
            head_only: false,
            counted: false,
        };
        let job = if s.oversize {
            reject(Status::HeadersTooLarge)
        } else if s.too_large {
            reject(Status::PayloadTooLarge)
        } else if s.head.grpc {
            let (due, answer) = admit_grpc(shared, arrival);
            Job::Grpc { due, answer }
        } else {
            Job::admitted(admit(shared, arrival, method, route, &s.body), method)
        };
        self.stored -= s.body.len();
        s.body = Vec::new();
        s.job = Some(job);
    }

    pub(super) fn next_due(&self) -> Option<Instant> {
        self.streams
            .values()
            .filter_map(|s| s.job.as_ref())
            .map(|job| job.due(self.shared))
            .min()
    }

    /// Runs every job due at `now`, earliest first.
    pub(super) fn run_due(&mut self, now: Instant) {
        loop {
            let next = self
                .streams
                .iter()
                .filter_map(|(&id, s)| Some((s.job.as_ref()?.due(self.shared), id)))
                .filter(|&(due, _)| due <= now)
                .min();
            let Some((_, id)) = next else {
                return;
            };
            self.run_job(id);
        }
    }

    /// Writes what the job of `stream` owes now: HEADERS at once, DATA into
    /// the outbox, the end as its `finish`.
    fn run_job(&mut self, stream: u32) {
        let shared = self.shared;
        let Some(job) = self.streams.get_mut(&stream).and_then(|s| s.job.take()) else {
            return;
        };
        match job {
            Job::Reply {
                status,
                body,
                head_only,
                counted,
                ..
            } => {
                let (content_type, bytes) = shared.body(body);
                let length = bytes.len().to_string();
                let fields = reply_fields(content_type, &length);
                let end = head_only || bytes.is_empty();
                self.headers(stream, status.code(), &fields, end, counted);
                if !end {
                    self.queue(stream, bytes, Finish::End, counted);
                }
            }
            Job::Grpc {
                answer: GrpcAnswer::Status(0),
                ..
            } => {
                let fields: [(&[u8], &[u8]); 1] = [(b"content-type", b"application/grpc")];
                self.headers(stream, 200, &fields, false, true);
                // One empty message: not compressed, length 0.
                self.queue(stream, &[0; 5], Finish::Trailers(0), true);
            }
            Job::Grpc {
                answer: GrpcAnswer::Status(code),
                ..
            } => {
                let code = code.to_string();
                let fields: [(&[u8], &[u8]); 3] = [
                    (b"content-type", b"application/grpc"),
                    (b"grpc-status", code.as_bytes()),
                    (b"grpc-message", GRPC_MESSAGE),
                ];
                self.headers(stream, 200, &fields, true, true);
            }
            Job::Grpc {
                answer: GrpcAnswer::TooManyRequests,
                ..
            } => {
                let body = b"too many requests\n";
                let length = body.len().to_string();
                let fields: [(&[u8], &[u8]); 2] = [
                    (b"content-type", b"text/plain"),
                    (b"content-length", length.as_bytes()),
                ];
                self.headers(stream, 429, &fields, false, true);
                self.queue(stream, body, Finish::End, true);
            }
            Job::Stream(mut sse) => {
                if sse.step == 0 {
                    self.headers(stream, 200, &STREAM_FIELDS, false, false);
                }
                let mut bytes = Vec::new();
                let step = sse.step(&mut bytes, &mut self.event);
                let Some(s) = self.streams.get_mut(&stream) else {
                    return;
                };
                s.outbox.extend_from_slice(&bytes);
                match step {
                    StreamStep::More => s.job = Some(Job::Stream(sse)),
                    StreamStep::Done => {
                        s.finish = Some(Finish::End);
                        s.counted = true;
                    }
                    StreamStep::Cut => s.finish = Some(Finish::Reset(ErrorCode::INTERNAL_ERROR)),
                }
            }
        }
    }

    /// Queues `bytes` as the last DATA of `stream`, then `finish`.
    fn queue(&mut self, stream: u32, bytes: &[u8], finish: Finish, counted: bool) {
        if let Some(s) = self.streams.get_mut(&stream) {
            s.outbox.extend_from_slice(bytes);
            s.finish = Some(finish);
            s.counted = counted;
        }
    }

    /// Writes a response HEADERS; with `end`, the stream is finished.
    fn headers(
        &mut self,
        stream: u32,
        status: u16,
        fields: &[(&[u8], &[u8])],
        end: bool,
        counted: bool,
    ) {
        let Some(block) = self.block(Some(status), fields) else {
            self.reset(stream, ErrorCode::INTERNAL_ERROR);
            return;
        };
        let flags = flag::END_HEADERS | if end { flag::END_STREAM } else { 0 };
        put_frame(&mut self.out, kind::HEADERS, flags, stream, &block);
        if end {
            if let Some(s) = self.streams.get_mut(&stream) {
                s.counted = counted;
            }
            self.remove(stream, true);
        }
    }

    /// A header block: the table size update when owed, `:status` when
    /// given, then `fields`. `None` only if encoding failed.
    fn block(&mut self, status: Option<u16>, fields: &[(&[u8], &[u8])]) -> Option<Vec<u8>> {
        let room = 16
            + fields
                .iter()
                .map(|(n, v)| n.len() + v.len() + 10)
                .sum::<usize>();
        let mut block = vec![0u8; room];
        let mut n = 0;
        if self.table_update {
            n += encode_table_size_update(0, &mut block)?;
        }
        n += match status {
            Some(status) => encode_response(status, fields, true, &mut block[n..])?,
            None => encode_fields(fields, true, &mut block[n..])?,
        };
        self.table_update = false;
        block.truncate(n);
        Some(block)
    }

    /// Sends queued DATA as far as the windows and the client's frame size
    /// allow; then each stream's end once its DATA is out.
    pub(super) fn send_data(&mut self) {
        let max_frame = self.peer_max_frame as usize;
        let mut done = Vec::new();
        let mut ends = Vec::new();
        for (&id, s) in &mut self.streams {
            while s.sent < s.outbox.len() {
                let left = s.outbox.len() - s.sent;
                let window = s.send_window.min(self.send_window).max(0);
                let n = left
                    .min(max_frame)
                    .min(usize::try_from(window).unwrap_or(0));
                if n == 0 {
                    break;
                }
                let last = n == left && s.job.is_none() && s.finish == Some(Finish::End);
                let flags = if last { flag::END_STREAM } else { 0 };
                put_frame(
                    &mut self.out,
                    kind::DATA,
                    flags,
                    id,
                    &s.outbox[s.sent..s.sent + n],
                );
                s.sent += n;
                s.send_window -= n as i64;
                self.send_window -= n as i64;
                if last {
                    s.finish = None;
                    done.push(id);
                }
            }
            if s.sent < s.outbox.len() {
                continue;
            }
            s.outbox.clear();
            s.sent = 0;
            if s.job.is_some() {
                continue;
            }
            if let Some(finish) = s.finish.take() {
                ends.push((id, finish));
            }
        }
        for (id, finish) in ends {
            match finish {
                Finish::End => {
                    put_frame(&mut self.out, kind::DATA, flag::END_STREAM, id, &[]);
                    done.push(id);
                }
                Finish::Trailers(code) => {
                    let code = code.to_string();
                    let fields: [(&[u8], &[u8]); 1] = [(b"grpc-status", code.as_bytes())];
                    match self.block(None, &fields) {
                        Some(block) => {
                            let flags = flag::END_HEADERS | flag::END_STREAM;
                            put_frame(&mut self.out, kind::HEADERS, flags, id, &block);
                            done.push(id);
                        }
                        None => self.reset(id, ErrorCode::INTERNAL_ERROR),
                    }
                }
                Finish::Reset(code) => self.reset(id, code),
            }
        }
        for id in done {
            self.remove(id, true);
        }
    }
}
