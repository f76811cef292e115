//! The numbers a report derives from its counts, and how counts add up. A
//! run's report ([`build`](super::build)) and a merge of shards
//! ([`merge`](super::merge)) both end in [`Report::derive`]; a merge adds
//! its shards' counters with the `add` methods here ([`Requests::add`],
//! [`Errors::add`], [`Window::add`], [`IntervalReport::add`],
//! [`Generator::add`]), so a new counter is one edit in its type and one
//! here.

use std::collections::BTreeMap;

use super::counts::{Errors, Requests, Window};
use super::generator::{Generator, OutRequests};
use super::hlog;
use super::metric::ms;
use super::rows::IntervalReport;
use super::Report;

/// `part / whole`, 0 when `whole` is 0.
fn ratio(part: u64, whole: u64) -> f64 {
    if whole > 0 {
        part as f64 / whole as f64
    } else {
        0.0
    }
}

/// `seconds` of CPU per request in microseconds, 0 when none was sent.
fn us_per_request(seconds: f64, sent: u64) -> f64 {
    if sent > 0 {
        seconds * 1e6 / sent as f64
    } else {
        0.0
    }
}

impl Report {
    /// Sets every ratio the report derives from its counts: `error_rate`
    /// (errors / (ok + errors)), `goodput` (good / scheduled) and the
    /// generator's `cpu_us_per_request` and `work_us_per_request` (CPU, and
    /// CPU minus busy-wait, per request sent); each is 0 when its
    /// denominator is. A run's report and a merge of shards both call it,
    /// so the two agree on every such number.
    ///
    /// Rates are not derived here: a run divides its counts by its own
    /// durations, and a merge adds its shards' rates (the shards run side
    /// by side, over windows the counts alone do not give).
    ///
    /// # Example
    /// ```
    /// # let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/report.md")).unwrap();
    /// # let mut r: metronome::report::Report =
    /// #     serde_json::from_str(doc.split("```json").nth(1).unwrap().split("```").next().unwrap()).unwrap();
    /// r.requests.sent = 0;
    /// r.generator.cpu_s = 1.5;
    /// r.derive();
    /// assert_eq!(r.generator.cpu_us_per_request, 0.0);
    /// ```
    pub fn derive(&mut self) {
        let q = &self.requests;
        self.error_rate = ratio(q.errors, q.ok + q.errors);
        self.goodput = ratio(q.good, q.scheduled);
        let g = &mut self.generator;
        g.cpu_us_per_request = us_per_request(g.cpu_s, q.sent);
        g.work_us_per_request = us_per_request((g.cpu_s - g.spin_s).max(0.0), q.sent);
    }
}

impl Requests {
    /// Adds another shard's (or interval's) counts to these.
    pub fn add(&mut self, other: &Requests) {
        self.scheduled += other.scheduled;
        self.sent += other.sent;
        self.ok += other.ok;
        self.errors += other.errors;
        self.dropped += other.dropped;
        self.unsent += other.unsent;
        self.retried += other.retried;
        self.timeouts += other.timeouts;
        self.good += other.good;
        self.ok_without_done += other.ok_without_done;
    }
}

impl Errors {
    /// Adds another shard's counts to these, key by key (a key present in
    /// either is present in the sum).
    pub fn add(&mut self, other: &Errors) {
        for (into, from) in [
            (&mut self.by_kind, &other.by_kind),
            (&mut self.by_status, &other.by_status),
            (&mut self.bad_framing_by_cause, &other.bad_framing_by_cause),
            (&mut self.unsent_by_reason, &other.unsent_by_reason),
        ] {
            for (k, v) in from {
                *into.entry(k.clone()).or_default() += v;
            }
        }
        if let Some(from) = &other.by_check {
            let into = self.by_check.get_or_insert_with(BTreeMap::new);
            for (k, v) in from {
                *into.entry(k.clone()).or_default() += v;
            }
        }
        // Present in the sum when present in either (a gRPC shard's).
        if let Some(from) = &other.by_grpc_status {
            let into = self.by_grpc_status.get_or_insert_with(BTreeMap::new);
            for (k, v) in from {
                *into.entry(k.clone()).or_default() += v;
            }
        }
    }
}

impl Window {
    /// Adds another shard's window, run side by side with this one: the
    /// window is the longer of the two, counts and rates add up.
    pub fn add(&mut self, other: &Window) {
        self.window_s = self.window_s.max(other.window_s);
        self.late_ok += other.late_ok;
        self.late_sent += other.late_sent;
        self.late_output_tokens += other.late_output_tokens;
        self.in_schedule_throughput_rps += other.in_schedule_throughput_rps;
        self.in_schedule_output_tokens_per_s += other.in_schedule_output_tokens_per_s;
        self.goodput_rps += other.goodput_rps;
    }
}

impl IntervalReport {
    /// Adds another interval (the same interval of another shard, or the
    /// next one of a stretch): counts add, the mean service time is the
    /// mean of both (weighted by their successes); quantiles cannot be
    /// merged from summaries, so each percentile, the max and the work share are the
    /// larger of the two (an upper bound).
    pub fn add(&mut self, other: &IntervalReport) {
        // The mean service time of both: weighted by their successes.
        self.service_mean_ms = match (self.service_mean_ms, other.service_mean_ms) {
            (Some(a), Some(b)) if self.ok + other.ok > 0 => {
                Some((a * self.ok as f64 + b * other.ok as f64) / (self.ok + other.ok) as f64)
            }
            (a, b) => a.or(b),
        };
        self.sent += other.sent;
        self.ok += other.ok;
        self.errors += other.errors;
        self.unsent += other.unsent;
        self.dropped += other.dropped;
        self.waited += other.waited;
        self.pool_full += other.pool_full;
        self.late += other.late;
        self.late_waiting += other.late_waiting;
        self.scheduled += other.scheduled;
        self.p50 = self.p50.max(other.p50);
        self.p99 = self.p99.max(other.p99);
        self.max = self.max.max(other.max);
        self.send_lag_p99 = self.send_lag_p99.max(other.send_lag_p99);
        self.work_cpu = self.work_cpu.max(other.work_cpu);
        self.in_flight += other.in_flight;
        self.bytes_received += other.bytes_received;
        self.bytes_sent += other.bytes_sent;
        self.output_tokens_per_s = match (self.output_tokens_per_s, other.output_tokens_per_s) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.add_ttft(other);
    }

    /// Adds the other row's TTFT histogram to this one's and sets the
    /// quantiles from the sum: exact, as one histogram of both would give
    /// (the max is the larger max; a quantile is its bucket's upper bound
    /// clamped to it). A row whose `ttft_hdr` does not decode keeps the
    /// larger of each quantile (an upper bound).
    fn add_ttft(&mut self, other: &IntervalReport) {
        let max = match (self.ttft_max_ms, other.ttft_max_ms) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let decode = |r: &IntervalReport| match &r.ttft_hdr {
            None => Ok(None),
            Some(t) => hlog::decode_base64_v2(t).map(Some),
        };
        match (decode(self), decode(other), max) {
            (Ok(a), Ok(b), Some(max)) => {
                let mut h = a.unwrap_or_default();
                if let Some(b) = b {
                    h.merge(&b);
                }
                let max_ns = (max * 1e6).round() as u64;
                let q = |q: f64| ms(h.quantile(q).min(max_ns));
                self.ttft_p50_ms = Some(q(0.5));
                self.ttft_p99_ms = Some(q(0.99));
                self.ttft_max_ms = Some(max);
                self.ttft_hdr = Some(hlog::base64_v2(&h));
            }
            _ => {
                let up = |a: Option<f64>, b: Option<f64>| match (a, b) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
                self.ttft_p50_ms = up(self.ttft_p50_ms, other.ttft_p50_ms);
                self.ttft_p99_ms = up(self.ttft_p99_ms, other.ttft_p99_ms);
                self.ttft_max_ms = max;
                self.ttft_hdr = None;
            }
        }
    }
}

impl Generator {
    /// Adds another shard's generator: threads, CPU times and connection
    /// counts add up, `stopped` holds when either was stopped. The
    /// per-request figures are left to [`Report::derive`]; `warnings` and
    /// `behind` are left to the caller (a merge prefixes each warning with
    /// its shard and finds the stretches again from the merged intervals).
    pub fn add(&mut self, other: &Generator) {
        self.threads += other.threads;
        self.cpu_s += other.cpu_s;
        self.spin_s += other.spin_s;
        self.connections_opened += other.connections_opened;
        self.peak_connections += other.peak_connections;
        self.waited_for_connection += other.waited_for_connection;
        self.connections_closed_idle += other.connections_closed_idle;
        self.connections_unsolicited += other.connections_unsolicited;
        self.stopped |= other.stopped;
        self.pool.add(&other.pool);
        if let Some(b) = other.out_requests {
            let a = self.out_requests.get_or_insert_with(OutRequests::default);
            a.written += b.written;
            a.dropped += b.dropped;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two shards' rows of one interval: the TTFT quantiles of the sum
    /// are those of one histogram of every value (not the larger of the
    /// two: here the p50 of the sum is below shard B's), the max clamps
    /// them; a row whose `ttft_hdr` is unreadable keeps an upper bound.
    #[test]
    fn interval_rows_add_ttft_exactly() {
        use metronome_core::histogram::Histogram;
        let row = |values: &[u64]| {
            let mut h = Histogram::new();
            values.iter().for_each(|&v| h.record(v));
            IntervalReport {
                in_flight: 2,
                bytes_received: 100,
                ttft_p50_ms: Some(ms(h.quantile(0.5))),
                ttft_p99_ms: Some(ms(h.quantile(0.99))),
                ttft_max_ms: Some(ms(h.max())),
                ttft_hdr: Some(hlog::base64_v2(&h)),
                ..IntervalReport::default()
            }
        };
        let (a, b) = (&[10_000_000, 11_000_000, 12_000_000][..], &[50_000_003][..]);
        let mut sum = row(a);
        sum.add(&row(b));
        let all: Vec<u64> = a.iter().chain(b).copied().collect();
        let want = row(&all);
        assert_eq!(
            (sum.ttft_p50_ms, sum.ttft_p99_ms, sum.ttft_max_ms),
            (want.ttft_p50_ms, want.ttft_p99_ms, want.ttft_max_ms)
        );
        // The 2nd of 4 values, 11 ms: its bucket's upper bound.
        assert_eq!(sum.ttft_p50_ms, Some(11.010047));
        assert_eq!(sum.ttft_p99_ms, Some(50.000003));
        assert_eq!((sum.in_flight, sum.bytes_received), (4, 200));
        let mut bad = row(b);
        bad.ttft_hdr = Some("not base64!".into());
        let mut upper = row(a);
        upper.add(&bad);
        assert_eq!(upper.ttft_p50_ms, Some(50.000003));
        assert_eq!(upper.ttft_hdr, None);
    }
}
