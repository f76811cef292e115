//! Series over time: [`Interval`], one report interval of one engine
//! thread, and [`StageTally`], one stage of a staged run.

use crate::histogram::Histogram;

/// A send this much after its intended time is late (1 ms): counted in
/// [`Counts::late`], the measure of whether an interval kept its schedule.
pub const LATE_NS: u64 = 1_000_000;

/// The counters of one report interval (`--interval`) of one engine
/// thread: everything an interval row holds but its histograms. Kept
/// for every interval of a run (136 bytes each), apart from the histograms,
/// which only the live intervals hold in full (see [`IntervalSink`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Requests sent in the interval.
    pub sent: u64,
    /// Successful requests in the interval.
    pub ok: u64,
    /// Failed requests in the interval.
    pub errors: u64,
    /// Requests never sent, counted in the interval they were given up.
    pub unsent: u64,
    /// Due requests dropped above the in-flight limit, by intended time.
    pub dropped: u64,
    /// Due requests that found no idle connection and waited for one, by
    /// intended time.
    pub waited: u64,
    /// Of `waited`, those that found the pool at its limit
    /// (`max_connections` open or opening): it could not grow for them.
    pub pool_full: u64,
    /// Due requests (scheduled), by intended time.
    pub scheduled: u64,
    /// Requests sent more than [`LATE_NS`] after their intended time, by
    /// intended time (a wait for a connection included).
    pub late: u64,
    /// Of `late`, those whose wait for a connection was the larger part of
    /// their lateness (`Ledger::waited_for`); the rest were late because
    /// the engine itself handled them late.
    pub late_waiting: u64,
    /// CPU time the engine's pacing threads used in the interval (ns),
    /// spin included; sampled about every 50 ms, so a sample straddling a
    /// boundary counts in the interval it was taken in.
    pub cpu_ns: u64,
    /// Of `cpu_ns`, the time spent busy-waiting before sends (ns).
    pub spin_ns: u64,
    /// Output tokens of the streams that succeeded in the interval (by
    /// completion time, as `ok`).
    pub output_tokens: u64,
    /// The service times (completion - actual send, ns) of the interval's
    /// successes added up (by completion time, as `ok`): with `ok`, their
    /// mean, the evidence for a server that answered slower.
    pub service_ns: u64,
    /// Bytes read from the connections in the interval, by the time each
    /// read completed: response heads and bodies as on the wire (over TLS,
    /// after decryption; HTTP/2: frames, headers HPACK-encoded).
    pub bytes_received: u64,
    /// Bytes written to the connections in the interval, by the time each
    /// write completed (as `bytes_received`).
    pub bytes_sent: u64,
    /// Due requests that were settled: sent, dropped or given up unsent,
    /// by intended time. Once it equals `scheduled` (and `scheduled` the
    /// schedule's count) no by-intended-time counter of the interval
    /// (`scheduled`, `dropped`, `waited`, `pool_full`, `late`,
    /// `late_waiting`) can grow any more: the interval is complete for a
    /// live view (docs/live.md, "Provisional rows"). Not in the report.
    pub settled: u64,
}

impl Counts {
    /// No counts.
    pub const fn new() -> Self {
        Self {
            sent: 0,
            ok: 0,
            errors: 0,
            unsent: 0,
            dropped: 0,
            waited: 0,
            pool_full: 0,
            scheduled: 0,
            late: 0,
            late_waiting: 0,
            cpu_ns: 0,
            spin_ns: 0,
            output_tokens: 0,
            service_ns: 0,
            bytes_received: 0,
            bytes_sent: 0,
            settled: 0,
        }
    }

    /// Whether the interval's by-intended-time counters (`scheduled`,
    /// `dropped`, `waited`, `pool_full`, `late`, `late_waiting`) are
    /// final: every due request was handled (`scheduled` is the
    /// schedule's count, `offered`, when that is known) and settled (sent,
    /// dropped or given up). A pacer more than the live grace behind its
    /// schedule leaves the interval incomplete: the one rule every live
    /// view uses to mark a row provisional (docs/live.md).
    ///
    /// ```
    /// use metronome_core::measure::Counts;
    /// let mut c = Counts::new();
    /// (c.scheduled, c.settled) = (90, 90);
    /// assert!(!c.is_complete(Some(100))); // 10 due, not handled yet
    /// assert!(c.is_complete(Some(90)));
    /// c.settled = 80; // 10 still wait for a connection
    /// assert!(!c.is_complete(Some(90)));
    /// assert!(!c.is_complete(None));
    /// ```
    pub fn is_complete(&self, offered: Option<u64>) -> bool {
        let handled = match offered {
            Some(n) => self.scheduled >= n,
            None => true,
        };
        self.settled >= self.scheduled && handled
    }

    /// Adds the other interval's counters (saturating).
    pub fn merge(&mut self, other: &Counts) {
        self.sent = self.sent.saturating_add(other.sent);
        self.ok = self.ok.saturating_add(other.ok);
        self.errors = self.errors.saturating_add(other.errors);
        self.unsent = self.unsent.saturating_add(other.unsent);
        self.dropped = self.dropped.saturating_add(other.dropped);
        self.waited = self.waited.saturating_add(other.waited);
        self.pool_full = self.pool_full.saturating_add(other.pool_full);
        self.scheduled = self.scheduled.saturating_add(other.scheduled);
        self.late = self.late.saturating_add(other.late);
        self.late_waiting = self.late_waiting.saturating_add(other.late_waiting);
        self.cpu_ns = self.cpu_ns.saturating_add(other.cpu_ns);
        self.spin_ns = self.spin_ns.saturating_add(other.spin_ns);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.service_ns = self.service_ns.saturating_add(other.service_ns);
        self.bytes_received = self.bytes_received.saturating_add(other.bytes_received);
        self.bytes_sent = self.bytes_sent.saturating_add(other.bytes_sent);
        self.settled = self.settled.saturating_add(other.settled);
    }
}

/// One report interval (`--interval`) of one engine thread: its
/// [`Counts`] (reached through `Deref`: `iv.sent`) and the three histograms
/// the interval rows need. About 177 KB: engines keep a few live ones per
/// thread, not one per planned interval ([`IntervalSink`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Interval {
    /// The interval's counters.
    pub counts: Counts,
    /// Latency (completion - intended) of the interval's successful requests.
    pub latency: Histogram,
    /// Send lag (send - intended) of the interval's sent requests.
    pub send_lag: Histogram,
    /// Time to first output (first output chunk - intended) of the
    /// successful streams whose first output came in the interval.
    pub ttft: Histogram,
}

impl core::ops::Deref for Interval {
    type Target = Counts;
    fn deref(&self) -> &Counts {
        &self.counts
    }
}

impl core::ops::DerefMut for Interval {
    fn deref_mut(&mut self) -> &mut Counts {
        &mut self.counts
    }
}

impl Interval {
    /// An empty interval.
    ///
    /// # Example
    /// ```
    /// let i = metronome_core::measure::Interval::new();
    /// assert_eq!((i.sent, i.ok, i.errors), (0, 0, 0));
    /// ```
    pub const fn new() -> Self {
        Self {
            counts: Counts::new(),
            latency: Histogram::new(),
            send_lag: Histogram::new(),
            ttft: Histogram::new(),
        }
    }

    /// Adds the other interval's counters and histograms, exactly.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::Interval;
    /// let (mut a, mut b) = (Interval::new(), Interval::new());
    /// a.ok = 1;
    /// a.latency.record(10);
    /// b.ok = 2;
    /// b.errors = 1;
    /// b.latency.record(30);
    /// a.merge(&b);
    /// assert_eq!((a.ok, a.errors, a.latency.count(), a.latency.max()), (3, 1, 2, 30));
    /// ```
    pub fn merge(&mut self, other: &Interval) {
        self.counts.merge(&other.counts);
        self.latency.merge(&other.latency);
        self.send_lag.merge(&other.send_lag);
        self.ttft.merge(&other.ttft);
    }
}

/// Which histogram of an interval a value goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntervalMetric {
    /// [`Interval::latency`].
    Latency,
    /// [`Interval::send_lag`].
    SendLag,
    /// [`Interval::ttft`].
    Ttft,
}

impl Interval {
    /// The histogram of `metric`.
    pub fn histogram_mut(&mut self, metric: IntervalMetric) -> &mut Histogram {
        match metric {
            IntervalMetric::Latency => &mut self.latency,
            IntervalMetric::SendLag => &mut self.send_lag,
            IntervalMetric::Ttft => &mut self.ttft,
        }
    }
}

/// Where a [`crate::ledger::Ledger`] writes the per-interval series: the
/// counters of every interval, and one value at a time into an interval's
/// histograms. A slice-like `[Interval; N]` or `Vec<Interval>` is one (every
/// interval in full, for tests and short runs); the engines use
/// `metronome_core::engine::Series` (feature `std`), whose memory does not
/// grow with the planned duration beyond its counters and each closed
/// interval's non-empty buckets.
///
/// An index at or past [`IntervalSink::len`] is the caller's to clamp.
pub trait IntervalSink: core::fmt::Debug {
    /// Number of intervals in the series.
    fn len(&self) -> usize;
    /// Whether the series has no interval.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The counters of interval `i`.
    fn counts(&mut self, i: usize) -> Option<&mut Counts>;
    /// Records `v` into `metric`'s histogram of interval `i`.
    fn record(&mut self, i: usize, metric: IntervalMetric, v: u64);
    /// The p99 latency and p99 send lag of interval `i`, when it is still
    /// held in full (a progress line's figures).
    fn p99s(&self, i: usize) -> Option<(u64, u64)>;
    /// The samples behind those p99s (latency, send lag), when interval `i`
    /// is still held in full.
    fn samples(&self, i: usize) -> Option<(u64, u64)>;
    /// The counters of interval `i` as they stand, whether or not it is
    /// held in full (a live view's second look at an interval it
    /// published before it was complete); `None` by default.
    fn counts_at(&self, i: usize) -> Option<Counts> {
        self.view(i).map(|(c, _)| *c)
    }
    /// Interval `i` as it stands, to copy: its counters and its latency,
    /// send-lag and TTFT histograms (`None` for one it holds no value of),
    /// when it is still held in full; `None` otherwise.
    fn view(&self, i: usize) -> Option<(&Counts, [Option<&Histogram>; 3])> {
        let _ = i;
        None
    }
    /// Where the sink's compacted records go on from now, when no
    /// interval `from` or later has a record yet: a later
    /// [`IntervalSink::compacted`] of such an interval reads from there.
    /// `None` when some may have one, or the sink keeps no records (it
    /// holds every interval in full: [`IntervalSink::view`] gives them).
    fn records_end(&self, from: usize) -> Option<RecordsAt> {
        let _ = from;
        None
    }
    /// Interval `i` once it is no longer held in full (its
    /// [`IntervalSink::view`] is `None`): calls `f` with each record of its
    /// histograms (the metric, the sparse form) at or after `at`, a place no
    /// record of `i` is before ([`IntervalSink::records_end`]), and returns
    /// its counters and a place no record of a later interval is before.
    /// `None` when the sink holds no interval `i` in records.
    fn compacted(
        &self,
        i: usize,
        at: RecordsAt,
        f: &mut dyn FnMut(IntervalMetric, &[u8]),
    ) -> Option<(&Counts, RecordsAt)> {
        let _ = (i, at, f);
        None
    }
}

/// A place in the compacted records of an [`IntervalSink`] (a chunk and a
/// byte in it): where [`IntervalSink::compacted`] reads from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordsAt {
    /// The chunk.
    pub(crate) chunk: usize,
    /// The byte in it.
    pub(crate) at: usize,
}

fn slice_record(ivs: &mut [Interval], i: usize, metric: IntervalMetric, v: u64) {
    if let Some(iv) = ivs.get_mut(i) {
        iv.histogram_mut(metric).record(v);
    }
}

fn slice_p99s(ivs: &[Interval], i: usize) -> Option<(u64, u64)> {
    let iv = ivs.get(i)?;
    Some((iv.latency.quantile(0.99), iv.send_lag.quantile(0.99)))
}

/// Every interval in full: an array, a `Vec` or any other owner of a
/// slice of [`Interval`]s.
impl<T> IntervalSink for T
where
    T: AsRef<[Interval]> + AsMut<[Interval]> + core::fmt::Debug,
{
    fn len(&self) -> usize {
        self.as_ref().len()
    }
    fn counts(&mut self, i: usize) -> Option<&mut Counts> {
        self.as_mut().get_mut(i).map(|iv| &mut iv.counts)
    }
    fn record(&mut self, i: usize, metric: IntervalMetric, v: u64) {
        slice_record(self.as_mut(), i, metric, v);
    }
    fn p99s(&self, i: usize) -> Option<(u64, u64)> {
        slice_p99s(self.as_ref(), i)
    }
    fn samples(&self, i: usize) -> Option<(u64, u64)> {
        let iv = self.as_ref().get(i)?;
        Some((iv.latency.count(), iv.send_lag.count()))
    }
    fn view(&self, i: usize) -> Option<(&Counts, [Option<&Histogram>; 3])> {
        let iv = self.as_ref().get(i)?;
        Some((
            &iv.counts,
            [Some(&iv.latency), Some(&iv.send_lag), Some(&iv.ttft)],
        ))
    }
}

/// One stage of a staged run ([`crate::plan::Profile::Stages`]) of one
/// engine thread: every request counted in the stage of its **intended**
/// time (not its send or completion), so a stage's row holds exactly the
/// requests its part of the schedule offered: `scheduled = sent + dropped +
/// unsent` and `sent = ok + errors`, stage by stage. Merges exactly.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StageTally {
    /// Due requests intended in the stage (measured ones).
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
    /// Latency (completion - intended) of the successes.
    pub latency: Histogram,
}

impl StageTally {
    /// An empty stage.
    ///
    /// # Example
    /// ```
    /// let s = metronome_core::measure::StageTally::new();
    /// assert_eq!((s.scheduled, s.ok, s.latency.count()), (0, 0, 0));
    /// ```
    pub const fn new() -> Self {
        Self {
            scheduled: 0,
            sent: 0,
            dropped: 0,
            unsent: 0,
            ok: 0,
            errors: 0,
            latency: Histogram::new(),
        }
    }

    /// Adds the other stage's counters and histogram, exactly.
    ///
    /// # Example
    /// ```
    /// use metronome_core::measure::StageTally;
    /// let (mut a, mut b) = (StageTally::new(), StageTally::new());
    /// a.ok = 1;
    /// a.latency.record(10);
    /// b.ok = 2;
    /// b.latency.record(30);
    /// a.merge(&b);
    /// assert_eq!((a.ok, a.latency.count(), a.latency.max()), (3, 2, 30));
    /// ```
    pub fn merge(&mut self, other: &StageTally) {
        self.scheduled = self.scheduled.saturating_add(other.scheduled);
        self.sent = self.sent.saturating_add(other.sent);
        self.dropped = self.dropped.saturating_add(other.dropped);
        self.unsent = self.unsent.saturating_add(other.unsent);
        self.ok = self.ok.saturating_add(other.ok);
        self.errors = self.errors.saturating_add(other.errors);
        self.latency.merge(&other.latency);
    }
}
