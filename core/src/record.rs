//! One record per measured request, as it ended ([`RequestRecord`]), for
//! anyone who wants every request and not only the histograms (the CLI's
//! `--out-requests`, docs/requests-out.md). The [`Ledger`](crate::ledger::Ledger)
//! hands each measured request's record to a [`RequestSink`] exactly once:
//! when it succeeded or failed, was dropped, or was never sent. Warm-up
//! requests have none.
//!
//! A record is a small `Copy` value: the request's name is its index in the
//! plan (looked up when the record is written), and nothing is borrowed, so
//! a sink can keep it in storage reserved before the clock.
//!
//! The exact records of a hand sequence of ledger calls are tested in
//! `tests/sim/records.rs`.

use crate::measure::{ErrorKind, FramingCause, Unsent};

/// How a measured request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It succeeded (a 2xx response, a gRPC `OK`, a complete stream).
    Ok,
    /// A complete response with this non-success HTTP status
    /// ([`ErrorKind::Status`]).
    Status(u16),
    /// A gRPC call answered `200` that ended with this non-zero
    /// `grpc-status` ([`ErrorKind::GrpcStatus`]).
    GrpcStatus(u32),
    /// A response with bad HTTP framing, by cause ([`ErrorKind::BadFraming`]).
    Framing(FramingCause),
    /// A complete response that failed this check ([`ErrorKind::Check`]).
    Check(crate::check::CheckFailure),
    /// Any other failure of a sent request, by kind.
    Error(ErrorKind),
    /// Dropped when due: too many in flight.
    Dropped,
    /// Never sent, for this reason.
    Unsent(Unsent),
}

impl Outcome {
    /// The outcome's class: `ok`, `error`, `dropped` or `unsent`.
    ///
    /// ```
    /// use metronome_core::record::Outcome;
    /// assert_eq!(Outcome::Status(503).class(), "error");
    /// assert_eq!(Outcome::Dropped.class(), "dropped");
    /// ```
    pub const fn class(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Dropped => "dropped",
            Outcome::Unsent(_) => "unsent",
            _ => "error",
        }
    }

    /// The kind within the class: the [`ErrorKind::name`] of an error
    /// (the report's `errors.by_kind` key), the [`Unsent::name`] of a
    /// request never sent, `""` for a success or a drop.
    ///
    /// ```
    /// use metronome_core::measure::Unsent;
    /// use metronome_core::record::Outcome;
    /// assert_eq!(Outcome::Status(503).kind(), "status");
    /// assert_eq!(Outcome::Unsent(Unsent::Connect).kind(), "connect");
    /// assert_eq!(Outcome::Ok.kind(), "");
    /// ```
    pub const fn kind(self) -> &'static str {
        match self {
            Outcome::Ok | Outcome::Dropped => "",
            Outcome::Status(_) => ErrorKind::Status.name(),
            Outcome::GrpcStatus(_) => ErrorKind::GrpcStatus.name(),
            Outcome::Framing(_) => ErrorKind::BadFraming.name(),
            Outcome::Check(_) => ErrorKind::Check.name(),
            Outcome::Error(kind) => kind.name(),
            Outcome::Unsent(reason) => reason.name(),
        }
    }
}

/// What an engine knows of a response's head when the request ends: when
/// its first byte arrived (HTTP/2: its head) and its HTTP status. Both
/// unknown (`None`) when nothing arrived
/// ([`Exchange::head`](crate::exchange::Exchange::head),
/// [`StreamExchange::head`](crate::stream::StreamExchange::head)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResponseHead {
    /// Arrival of the first byte of the response (run clock, ns).
    pub first_byte_ns: Option<u64>,
    /// The final response's HTTP status, once its head was read.
    pub status: Option<u16>,
}

/// One measured request as it ended. Times are the run clock's (ns from
/// the schedule's zero, the warm-up included), as the ledger gets them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestRecord {
    /// When it was due on the schedule (closed model: its send).
    pub intended_ns: u64,
    /// When it was written (`None`: never sent; a retried request: its
    /// last send).
    pub sent_ns: Option<u64>,
    /// Arrival of the response's first byte, when known ([`ResponseHead`]).
    pub first_byte_ns: Option<u64>,
    /// A successful stream's first output chunk (its TTFT point).
    pub first_token_ns: Option<u64>,
    /// When it ended: completed, failed, or found unsendable. `None` for a
    /// drop (decided when it came due, with no time of its own).
    pub end_ns: Option<u64>,
    /// How it ended.
    pub outcome: Outcome,
    /// The response's HTTP status when one was read (a success's 2xx, or
    /// the code of [`Outcome::Status`]).
    pub status: Option<u16>,
    /// Which of the plan's requests it was (its name's index), or
    /// `usize::MAX` when it had none (a closed-loop worker that found no
    /// connection).
    pub request: usize,
    /// Its prompt's tokens, when the plan knows them.
    pub input_tokens: Option<u32>,
    /// A successful stream's output tokens, as the recorder counted them.
    pub output_tokens: Option<u64>,
}

/// Where the ledger hands each measured request's [`RequestRecord`]. An
/// engine's sink must not block or allocate: it runs on the pacing path.
pub trait RequestSink: core::fmt::Debug {
    /// One measured request ended.
    fn record(&mut self, record: &RequestRecord);
}
