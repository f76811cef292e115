//! The per-request records of a run on their way out (`--out-requests`):
//! a bounded queue, preallocated before the clock, from the engines'
//! recording threads ([`RequestFeed`], the [`RequestSink`] of their
//! [`Tally`](crate::ledger::Tally)) to one writer ([`RequestDrain`]).
//!
//! Pushing never blocks, never allocates and makes no system call: a full
//! queue (the writer fell behind) drops the record and counts it. The
//! queue is std's bounded channel (`sync_channel`: a fixed array of slots
//! allocated when it is made, written with atomics); the writer polls it
//! ([`RequestDrain::try_next`]) and never blocks in it, so a push never has a
//! sleeping receiver to wake.
//!
//! ```
//! use metronome_core::engine::request_queue;
//! use metronome_core::record::{Outcome, RequestRecord, RequestSink};
//! let (mut feed, drain) = request_queue(2);
//! let r = RequestRecord {
//!     intended_ns: 5,
//!     sent_ns: None,
//!     first_byte_ns: None,
//!     first_token_ns: None,
//!     end_ns: None,
//!     outcome: Outcome::Dropped,
//!     status: None,
//!     request: 0,
//!     input_tokens: None,
//!     output_tokens: None,
//! };
//! for _ in 0..3 {
//!     feed.record(&r);
//! }
//! assert_eq!(drain.try_next(), Some(r));
//! assert_eq!(drain.try_next(), Some(r));
//! assert_eq!(drain.try_next(), None);
//! assert_eq!(drain.dropped(), 1); // the third did not fit
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::Arc;

use crate::record::{RequestRecord, RequestSink};

/// Records the queue holds by default: 64 Ki (about 8 MiB, reserved when
/// it is made), 65 ms of requests at 1 M/s.
pub const REQUEST_QUEUE_CAPACITY: usize = 64 << 10;

/// What the feeds and the drain share.
#[derive(Debug, Default)]
struct Shared {
    /// Records that did not fit.
    dropped: AtomicU64,
    /// The run's origin ([`crate::engine::Origin`]), ns since the Unix
    /// epoch; 0 until set.
    origin_unix_ns: AtomicU64,
}

/// The engines' end of the queue: each recording thread holds a clone
/// (made before its clock starts) in its [`RunOutput`](crate::engine::RunOutput).
#[derive(Clone, Debug)]
pub struct RequestFeed {
    tx: SyncSender<RequestRecord>,
    shared: Arc<Shared>,
}

/// The writer's end of the queue.
#[derive(Debug)]
pub struct RequestDrain {
    rx: Receiver<RequestRecord>,
    shared: Arc<Shared>,
}

/// A queue of `capacity` records (at least 1), its slots allocated now.
pub fn request_queue(capacity: usize) -> (RequestFeed, RequestDrain) {
    let (tx, rx) = std::sync::mpsc::sync_channel(capacity.max(1));
    let shared = Arc::new(Shared::default());
    (
        RequestFeed {
            tx,
            shared: Arc::clone(&shared),
        },
        RequestDrain { rx, shared },
    )
}

impl RequestFeed {
    /// Records dropped so far because the queue was full (or its drain
    /// gone), over every clone of this feed.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Sets the run's origin, ns since the Unix epoch (the engines'
    /// [`Origin::for_run`](crate::engine::Origin::for_run) does).
    pub fn set_origin(&self, unix_ns: u64) {
        self.shared.origin_unix_ns.store(unix_ns, Ordering::Release);
    }
}

impl RequestSink for RequestFeed {
    fn record(&mut self, record: &RequestRecord) {
        match self.tx.try_send(*record) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.shared.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl RequestDrain {
    /// The next record, or `None` when the queue is empty now.
    pub fn try_next(&self) -> Option<RequestRecord> {
        self.rx.try_recv().ok()
    }

    /// Records dropped so far because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// The run's origin, ns since the Unix epoch (0 until the engine set it).
    pub fn origin_unix_ns(&self) -> u64 {
        self.shared.origin_unix_ns.load(Ordering::Acquire)
    }
}
