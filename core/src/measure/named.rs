//! [`NameTally`]: one named request of a mix (`--requests`), of one engine
//! thread: its counts, errors by kind and latency histograms, every request
//! counted under the name it sent.

use super::kind::ErrorKind;
use crate::histogram::Histogram;

/// The measurements of one name of a request mix. Like the run's, the
/// counts balance: `scheduled = sent + dropped + unsent` and `sent = ok +
/// errors` (warmup requests not counted), and the histograms hold what
/// the run's hold, for this name's requests. Merges exactly.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NameTally {
    /// Due requests of this name (measured ones).
    pub scheduled: u64,
    /// Of them, sent.
    pub sent: u64,
    /// Of them, dropped above the in-flight limit.
    pub dropped: u64,
    /// Of them, never sent otherwise.
    pub unsent: u64,
    /// Sent and succeeded.
    pub ok: u64,
    /// Sent and failed.
    pub errors: u64,
    /// The failures by [`ErrorKind`] (indexed by [`ErrorKind::index`]).
    pub by_kind: [u64; ErrorKind::COUNT],
    /// Latency (completion - intended) of the successes.
    pub latency: Histogram,
    /// Service time (completion - send) of the successes.
    pub service_time: Histogram,
    /// Send lag (send - intended) of every sent request.
    pub send_lag: Histogram,
    /// Time to first token (first content - intended) of the successful
    /// streams of this name (empty for plain HTTP): with conversations,
    /// each turn's TTFT.
    pub ttft: Histogram,
}

impl NameTally {
    /// An empty row.
    ///
    /// ```
    /// let n = metronome_core::measure::NameTally::new();
    /// assert_eq!((n.scheduled, n.latency.count()), (0, 0));
    /// ```
    pub const fn new() -> Self {
        Self {
            scheduled: 0,
            sent: 0,
            dropped: 0,
            unsent: 0,
            ok: 0,
            errors: 0,
            by_kind: [0; ErrorKind::COUNT],
            latency: Histogram::new(),
            service_time: Histogram::new(),
            send_lag: Histogram::new(),
            ttft: Histogram::new(),
        }
    }

    /// A failure of `kind`.
    pub fn record_error(&mut self, kind: ErrorKind) {
        self.errors = self.errors.saturating_add(1);
        let k = &mut self.by_kind[kind.index()];
        *k = k.saturating_add(1);
    }

    /// Adds the other row's counters and histograms, exactly.
    ///
    /// ```
    /// use metronome_core::measure::{ErrorKind, NameTally};
    /// let (mut a, mut b) = (NameTally::new(), NameTally::new());
    /// a.latency.record(10);
    /// b.latency.record(30);
    /// b.record_error(ErrorKind::Timeout);
    /// a.merge(&b);
    /// assert_eq!((a.errors, a.latency.count(), a.latency.max()), (1, 2, 30));
    /// assert_eq!(a.by_kind[ErrorKind::Timeout.index()], 1);
    /// ```
    pub fn merge(&mut self, other: &NameTally) {
        self.scheduled = self.scheduled.saturating_add(other.scheduled);
        self.sent = self.sent.saturating_add(other.sent);
        self.dropped = self.dropped.saturating_add(other.dropped);
        self.unsent = self.unsent.saturating_add(other.unsent);
        self.ok = self.ok.saturating_add(other.ok);
        self.errors = self.errors.saturating_add(other.errors);
        for (a, b) in self.by_kind.iter_mut().zip(other.by_kind) {
            *a = a.saturating_add(b);
        }
        self.latency.merge(&other.latency);
        self.service_time.merge(&other.service_time);
        self.send_lag.merge(&other.send_lag);
        self.ttft.merge(&other.ttft);
    }
}
