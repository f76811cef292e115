//! [`Flights`]: the requests in flight on one HTTP/2 connection, and every
//! rule of how each one ends, decided once for both engines (as
//! quinn-proto keeps its `streams/` in the protocol crate).
//!
//! A stream slot holds its request's job, send time, deadline, body
//! position, gap storage index and [`StreamExchange`]. The engine starts a
//! stream with [`Flights::start`] after
//! [`Connection::start_request`](super::Connection::start_request), hands
//! every [`Event`] to [`Flights::on_event`], calls [`Flights::expire`] to
//! time streams out and [`Flights::connection_end`] when the connection
//! dies, and sends bodies with [`Flights::push_bodies`]. Each stream's end
//! comes out through the engine's `sink` as core's [`End`] (the stream
//! vocabulary HTTP/3 shares, [`crate::flight`]):
//!
//! - **answered**: its response is complete (END_STREAM on a head, DATA or
//!   trailers); its exchange's [`Finish`] says how it went;
//! - **retry**: the server did not process it (a first `REFUSED_STREAM`,
//!   or a stream above a GOAWAY's last stream id): the engine sends its job
//!   once more, marked retried ([`FlightJob::retried`]); a retried job
//!   refused again fails as a reset;
//! - **failed**: reset, timed out, or its connection ended.
//!
//! The engine keeps only I/O and its books (the ledger, the pool's service
//! time estimate, the retry queue). Nothing here allocates: the slots are
//! a const-sized array and the gap storage is the caller's.
//!
//! ```
//! use metronome_core::exchange::Finish;
//! use metronome_core::flight::{FlightJob, How};
//! use metronome_core::h2::flights::Flights;
//! use metronome_core::h2::{Config, Connection};
//! use metronome_core::plan::Protocol;
//!
//! #[derive(Clone, Copy, Debug, Default)]
//! struct Job { request: usize, intended_ns: u64, retried: bool }
//! impl FlightJob for Job {
//!     fn request(&self) -> usize { self.request }
//!     fn intended_ns(&self) -> u64 { self.intended_ns }
//!     fn retried(&self) -> bool { self.retried }
//! }
//!
//! let mut conn = Connection::<4>::new(Config::DEFAULT);
//! let mut flights = Flights::<Job, 4>::new(Protocol::Http);
//! let slot = flights.free_slot().unwrap();
//! flights.start(slot, 1, Job::default(), 100, 1_000, None);
//! let mut ended = 0;
//! // Nothing answered by 1_100 ns: the stream times out (and is cancelled).
//! flights.expire(1_100, u64::MAX, &mut conn, &mut |end| {
//!     assert!(matches!(end.how, How::Failed(Finish::Error(_))));
//!     ended += 1;
//! });
//! assert_eq!((ended, flights.open()), (1, 0));
//! ```

use crate::exchange::{Finish, GAP_CAP};
use crate::flight::{End, FlightJob, How};
use crate::measure::ErrorKind;
use crate::plan::Protocol;
use crate::stream::StreamExchange;

use super::conn::{Connection, Event, SendError};
use super::frame::ErrorCode;

/// What an event asks of the engine besides the ends ([`Flights::on_event`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing more.
    None,
    /// The server's first SETTINGS arrived: the connection is usable.
    Ready,
    /// A server window grew: call [`Flights::push_bodies`].
    Unblocked,
}

/// What [`Flights::push_bodies`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pushed {
    /// Bytes of DATA frames written into the output.
    pub written: usize,
    /// A body stopped because the output was full (not a window): push
    /// again once the output has room. A window stop needs no call: it
    /// ends with [`Step::Unblocked`].
    pub buffer_full: bool,
}

/// One stream slot (`stream` 0: free).
#[derive(Clone, Copy, Debug)]
struct Flight<J> {
    stream: u32,
    job: J,
    sent_ns: u64,
    deadline_ns: u64,
    body_at: usize,
    /// A server window stopped its body: it waits for [`Step::Unblocked`].
    stalled: bool,
    gap: Option<u32>,
}

/// The requests in flight on one connection of up to `N` streams, with
/// the rules of how each ends (see the [module](self)).
#[derive(Clone, Debug)]
pub struct Flights<J, const N: usize> {
    flights: [Option<Flight<J>>; N],
    exchanges: [StreamExchange; N],
    open: usize,
    /// The code of the server's last GOAWAY on this connection.
    goaway: Option<ErrorCode>,
    /// The plan's checks on the answers ([`Flights::for_plan`]).
    checks: &'static [crate::check::Check],
}

impl<J: FlightJob, const N: usize> Flights<J, N> {
    /// No stream in flight; each slot's exchange for `protocol`.
    pub fn new(protocol: Protocol) -> Self {
        Self {
            flights: [None; N],
            exchanges: core::array::from_fn(|_| StreamExchange::for_protocol(protocol)),
            open: 0,
            goaway: None,
            checks: &[],
        }
    }

    /// Slots for `plan`'s requests: its protocol, and the checks on each
    /// answer ([`Plan::check_of`](crate::plan::Plan::check_of)).
    pub fn for_plan(plan: &crate::plan::Plan<'_>) -> Self {
        Self {
            checks: plan.checks,
            ..Self::new(plan.protocol)
        }
    }

    /// A fresh connection: forgets the last one's GOAWAY. Its streams must
    /// have ended ([`connection_end`](Self::connection_end)).
    pub fn reset(&mut self) {
        self.goaway = None;
    }

    /// Streams in flight.
    pub const fn open(&self) -> usize {
        self.open
    }

    /// A free stream slot, if any.
    pub fn free_slot(&self) -> Option<usize> {
        self.flights.iter().position(Option::is_none)
    }

    /// `job` left on `stream` (its HEADERS written) at `sent_ns`, in
    /// `slot` ([`free_slot`](Self::free_slot)); it times out at
    /// `sent_ns + timeout_ns` (or at the run's hard end, whichever is
    /// first: [`expire`](Self::expire)). `gap`: its chunk of the caller's
    /// gap storage ([`GAP_CAP`] `u64`s at `gap * GAP_CAP`), or none.
    /// Returns its deadline. A slot in use is left alone (returns 0).
    pub fn start(
        &mut self,
        slot: usize,
        stream: u32,
        job: J,
        sent_ns: u64,
        timeout_ns: u64,
        gap: Option<u32>,
    ) -> u64 {
        let Some(f @ None) = self.flights.get_mut(slot) else {
            return 0;
        };
        let deadline_ns = sent_ns.saturating_add(timeout_ns);
        *f = Some(Flight {
            stream,
            job,
            sent_ns,
            deadline_ns,
            body_at: 0,
            stalled: false,
            gap,
        });
        self.open += 1;
        self.exchanges[slot].begin(job.intended_ns(), sent_ns);
        let check = crate::plan::check_in(self.checks, job.request());
        self.exchanges[slot].set_check(check);
        deadline_ns
    }

    /// Inter-token gaps dropped (beyond a stream's gap storage) over the
    /// life of these slots.
    pub fn dropped_gaps(&self) -> u64 {
        self.exchanges
            .iter()
            .map(StreamExchange::dropped_gaps)
            .sum()
    }

    fn slot_of(&self, stream: u32) -> Option<usize> {
        if stream == 0 {
            return None;
        }
        self.flights
            .iter()
            .position(|f| f.as_ref().is_some_and(|f| f.stream == stream))
    }

    /// The connection error its streams end with: this client's (the
    /// code of the error `handle_read` returned), else the code of the
    /// server's last GOAWAY, else none (the transport closed or failed).
    ///
    /// Ours first: it is a fact about the bytes this client read. Of the
    /// server's GOAWAYs, the last: a server may send several "if
    /// circumstances change" (RFC 9113 section 6.8), typically a graceful
    /// `NO_ERROR` first and the real cause after it, so the last is its
    /// final word on why the connection ends.
    pub fn connection_error<const S: usize, const T: usize, const B: usize>(
        &self,
        conn: &Connection<S, T, B>,
    ) -> Option<ErrorCode> {
        conn.error().map(|e| e.code()).or(self.goaway)
    }

    /// The server sent GOAWAY and every stream it kept has ended: the
    /// connection is done and a fresh one takes its place.
    pub fn drained<const S: usize, const T: usize, const B: usize>(
        &self,
        conn: &Connection<S, T, B>,
    ) -> bool {
        conn.goaway().is_some() && self.open == 0
    }

    /// Handles one event of `conn` at `now`; `frame`: the bytes
    /// `handle_read` took for it (a DATA event's body is in them). Streams
    /// that end go to `sink`, in order.
    pub fn on_event<const S: usize, const T: usize, const B: usize>(
        &mut self,
        now: u64,
        event: Event,
        frame: &[u8],
        conn: &mut Connection<S, T, B>,
        gaps: &mut [u64],
        sink: &mut impl FnMut(End<'_, J>),
    ) -> Step {
        match event {
            Event::Ready => return Step::Ready,
            Event::Unblocked => {
                for f in self.flights.iter_mut().flatten() {
                    f.stalled = false;
                }
                return Step::Unblocked;
            }
            Event::Pong { .. } => {}
            Event::Headers {
                stream,
                status,
                event_stream,
                grpc_status,
                end_stream,
            } => {
                if let Some(i) = self.slot_of(stream) {
                    self.exchanges[i].on_head(now, status, event_stream);
                    self.exchanges[i].on_grpc_status(grpc_status);
                    if let Some(f) = &self.flights[i] {
                        let bit = crate::plan::check_slot(self.checks, f.job.request());
                        if bit.is_some_and(|b| b < 64 && conn.head_fields() >> b & 1 == 1) {
                            self.exchanges[i].header_passed();
                        }
                    }
                    if end_stream {
                        self.answered(i, now, gaps, sink);
                    }
                }
            }
            Event::Data {
                stream,
                len,
                end_stream,
            } => {
                if let Some(i) = self.slot_of(stream) {
                    let data = conn.data_of(frame, len);
                    let g = self.flights[i].as_ref().and_then(|f| f.gap);
                    self.exchanges[i].on_data(now, data, gaps_of(gaps, g));
                    if end_stream {
                        self.answered(i, now, gaps, sink);
                    }
                }
            }
            Event::Trailers {
                stream,
                grpc_status,
            } => {
                if let Some(i) = self.slot_of(stream) {
                    self.exchanges[i].on_grpc_status(grpc_status);
                    self.answered(i, now, gaps, sink);
                }
            }
            Event::StreamReset {
                stream,
                code,
                remote,
            } => {
                if let Some(i) = self.slot_of(stream) {
                    let ex = &self.exchanges[i];
                    let how = match &self.flights[i] {
                        Some(f) if code == ErrorCode::REFUSED_STREAM && !ex.has_head() => {
                            How::refused(&f.job)
                        }
                        _ => How::Failed(ex.on_stream_reset(code, remote)),
                    };
                    self.end(i, how, sink);
                }
            }
            Event::GoAway { code, .. } => {
                self.goaway = Some(code);
                while let Some(stream) = conn.take_refused() {
                    if let Some(i) = self.slot_of(stream) {
                        if let Some(f) = &self.flights[i] {
                            let how = How::refused(&f.job);
                            self.end(i, how, sink);
                        }
                    }
                }
            }
        }
        Step::None
    }

    /// Streams due at `now` (past their deadline, or `now` at or past the
    /// run's `hard_end_ns`) are cancelled on `conn` (`RST_STREAM CANCEL`
    /// on its next transmit) and fail as timeouts. Returns the earliest
    /// deadline left (`u64::MAX`: none).
    pub fn expire<const S: usize, const T: usize, const B: usize>(
        &mut self,
        now: u64,
        hard_end_ns: u64,
        conn: &mut Connection<S, T, B>,
        sink: &mut impl FnMut(End<'_, J>),
    ) -> u64 {
        let mut next = u64::MAX;
        for i in 0..N {
            let Some(f) = self.flights[i].as_ref() else {
                continue;
            };
            let due = f.deadline_ns.min(hard_end_ns);
            if now >= due {
                conn.cancel(f.stream);
                self.end(i, How::Failed(Finish::Error(ErrorKind::Timeout)), sink);
            } else {
                next = next.min(due);
            }
        }
        next
    }

    /// `conn` is gone (failed, closed, or drained after a GOAWAY): every
    /// stream still in flight fails as its exchange says a connection end
    /// does ([`StreamExchange::on_connection_end`]) with
    /// [`connection_error`](Self::connection_error).
    pub fn connection_end<const S: usize, const T: usize, const B: usize>(
        &mut self,
        conn: &Connection<S, T, B>,
        sink: &mut impl FnMut(End<'_, J>),
    ) {
        let error = self.connection_error(conn);
        for i in 0..N {
            if self.flights[i].is_some() {
                let finish = self.exchanges[i].on_connection_end(error);
                self.end(i, How::Failed(finish), sink);
            }
        }
    }

    /// Sends what the server's windows and `out` allow of the bodies still
    /// owed, stream slot by slot; `bodies(request)` is a request's body. A
    /// body a window stopped waits for [`Step::Unblocked`] (it is not tried
    /// again before, so each stop counts once in
    /// [`Connection::blocked_sends`]).
    /// Call it after [`start`](Self::start) for a request with a body,
    /// on [`Step::Unblocked`], and once `out` has room again after
    /// [`Pushed::buffer_full`].
    pub fn push_bodies<'b, const S: usize, const T: usize, const B: usize>(
        &mut self,
        conn: &mut Connection<S, T, B>,
        bodies: impl Fn(usize) -> &'b [u8],
        out: &mut [u8],
    ) -> Pushed {
        let mut pushed = Pushed::default();
        for f in self.flights.iter_mut().flatten() {
            let body = bodies(f.job.request());
            if f.stalled || f.body_at >= body.len() {
                continue;
            }
            let sent = match conn.send_data(
                f.stream,
                &body[f.body_at..],
                true,
                &mut out[pushed.written..],
            ) {
                Ok(sent) => sent,
                Err(SendError::BufferFull) => {
                    pushed.buffer_full = true;
                    continue;
                }
                Err(_) => continue,
            };
            pushed.written += sent.written;
            f.body_at += sent.consumed;
            f.stalled = sent.blocked.is_some();
            if f.body_at < body.len() && !f.stalled {
                pushed.buffer_full = true;
            }
        }
        pushed
    }

    fn answered(
        &mut self,
        i: usize,
        now: u64,
        gaps: &mut [u64],
        sink: &mut impl FnMut(End<'_, J>),
    ) {
        let Some(f) = self.flights[i].take() else {
            return;
        };
        self.open -= 1;
        let g = gaps_of(gaps, f.gap);
        self.exchanges[i].on_end(now, g);
        sink(End {
            job: f.job,
            sent_ns: f.sent_ns,
            gap: f.gap,
            how: How::Answered(self.exchanges[i].finish(g)),
            head: self.exchanges[i].head(),
        });
    }

    fn end(&mut self, i: usize, how: How<'static>, sink: &mut impl FnMut(End<'_, J>)) {
        let Some(f) = self.flights[i].take() else {
            return;
        };
        self.open -= 1;
        sink(End {
            job: f.job,
            sent_ns: f.sent_ns,
            gap: f.gap,
            how,
            head: self.exchanges[i].head(),
        });
    }
}

/// The gap storage of index `gap` in the caller's `gaps` (empty when none,
/// or when `gaps` is too short).
fn gaps_of(gaps: &mut [u64], gap: Option<u32>) -> &mut [u64] {
    let Some(g) = gap else { return &mut [] };
    let at = g as usize * GAP_CAP;
    gaps.get_mut(at..at + GAP_CAP).unwrap_or(&mut [])
}
