//! The stream vocabulary HTTP/2 and HTTP/3 share: a job an engine sends on
//! a stream ([`FlightJob`]), how the stream ended ([`How`]) and the end an
//! engine books ([`End`]), and the one rule for a request the server
//! refused without processing it ([`How::refused`]: retried once, then a
//! reset). HTTP/2's [`Flights`](crate::h2::Flights) and the HTTP/3 client
//! (the `quic/` crate) hand their ends out in these words, so both engines
//! book every stream's end in one place whatever carried it (as
//! quinn-proto keeps what its endpoint and connection share in
//! `shared.rs`).
//!
//! ```
//! use metronome_core::exchange::Finish;
//! use metronome_core::flight::{FlightJob, How};
//! use metronome_core::measure::ErrorKind;
//! #[derive(Clone, Copy)]
//! struct Job { retried: bool }
//! impl FlightJob for Job {
//!     fn request(&self) -> usize { 0 }
//!     fn intended_ns(&self) -> u64 { 0 }
//!     fn retried(&self) -> bool { self.retried }
//! }
//! assert_eq!(How::refused(&Job { retried: false }), How::Retry);
//! assert_eq!(How::refused(&Job { retried: true }), How::Failed(Finish::Error(ErrorKind::Reset)));
//! ```

use crate::exchange::Finish;
use crate::measure::ErrorKind;
use crate::record::ResponseHead;

/// What a protocol's streams need to know of an engine's job (its own
/// type: it gets it back in each [`End`]).
pub trait FlightJob: Copy {
    /// Which of the plan's requests it sends (its body).
    fn request(&self) -> usize;
    /// When it was due (run clock ns): its exchange's intended time.
    fn intended_ns(&self) -> u64;
    /// It was refused once already: refused again, it fails.
    fn retried(&self) -> bool;
}

/// How a stream ended ([`End::how`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How<'a> {
    /// The response is complete; its exchange says how it went. Only an
    /// answer says something of the service time (the pool's estimate).
    Answered(Finish<'a>),
    /// Not processed by the server: send the job once more, retried.
    Retry,
    /// Failed as this says (reset, timeout, the connection's end).
    Failed(Finish<'static>),
}

impl How<'_> {
    /// A stream the server did not process (HTTP/2's `REFUSED_STREAM` or
    /// HTTP/3's `H3_REQUEST_REJECTED` before any answer, a stream at or
    /// above a GOAWAY's last one, a 0-RTT request left without a stream):
    /// refused once, `job` is sent once more ([`How::Retry`]); refused
    /// again, it fails as a reset.
    pub fn refused(job: &impl FlightJob) -> How<'static> {
        if job.retried() {
            How::Failed(Finish::Error(ErrorKind::Reset))
        } else {
            How::Retry
        }
    }
}

/// One stream's end, handed to the engine.
#[derive(Clone, Copy, Debug)]
pub struct End<'a, J> {
    /// The job the stream carried.
    pub job: J,
    /// When its request head left.
    pub sent_ns: u64,
    /// Its gap storage index, free again (HTTP/2's, as given to
    /// [`Flights::start`](crate::h2::Flights::start)); `None` for a stream
    /// whose gaps the protocol keeps itself (HTTP/3).
    pub gap: Option<u32>,
    /// How it ended.
    pub how: How<'a>,
    /// What was known of its response's head
    /// ([`StreamExchange::head`](crate::stream::StreamExchange::head)).
    pub head: ResponseHead,
}
