//! A report's counts: [`Requests`] (`scheduled = sent + dropped + unsent`,
//! `sent = ok + errors`), [`Errors`] by kind, status and gRPC code, the real
//! [`Window`] rates are divided by, the bytes moved ([`Transfer`]) and the
//! SLO bounds ([`SloReport`]). How they add up is in `accounts.rs`.

use std::collections::BTreeMap;

use metronome_core::measure::{ErrorKind, FramingCause, Recorder, Unsent};
use serde::{Deserialize, Serialize};

/// Request counts: `scheduled = sent + dropped + unsent`,
/// `sent = ok + errors` (docs/report.md, "Accounting").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requests {
    /// Intended in the measured phase.
    pub scheduled: u64,
    /// Actually sent.
    pub sent: u64,
    /// Succeeded.
    pub ok: u64,
    /// Sent and failed, each with exactly one kind in `errors.by_kind`.
    pub errors: u64,
    /// Dropped above --max-in-flight (never sent).
    pub dropped: u64,
    /// Never sent otherwise: no connection could be opened, or none was free
    /// before the run's hard end (`errors.unsent_by_reason`).
    pub unsent: u64,
    /// Sent a second time on a fresh connection after the reused one was
    /// found closed before any response byte (each counted once in `sent`).
    pub retried: u64,
    /// Timed out (also counted in errors).
    pub timeouts: u64,
    /// Met every SLO.
    pub good: u64,
    /// Succeeded streams that ended after a `finish_reason` without
    /// `data: [DONE]` (counted in `ok`).
    #[serde(default)]
    pub ok_without_done: u64,
}

/// Errors by kind and status, and why requests were never sent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Errors {
    /// Sent requests that failed, by kind (every kind listed): reset, timeout, status,
    /// bad_framing, too_large, stream_cut, stream_error, no_content, not_event_stream,
    /// grpc_status, check.
    pub by_kind: BTreeMap<String, u64>,
    /// Non-success responses by status code (every code seen, 100..=999); they sum to
    /// `by_kind.status`.
    pub by_status: BTreeMap<String, u64>,
    /// `bad_framing` by cause (every cause listed): head, content_length, chunk_size,
    /// chunk_framing, upgrade, tls, http2, http2_protocol, no_grpc_status,
    /// unsolicited, http3_protocol.
    pub bad_framing_by_cause: BTreeMap<String, u64>,
    /// Requests never sent, by reason (every reason listed): connect, timeout.
    pub unsent_by_reason: BTreeMap<String, u64>,
    /// `--grpc` runs only (absent otherwise): gRPC calls answered HTTP 200 that ended with
    /// a non-zero `grpc-status`, by code ("1" to "16", "other" above); they sum to
    /// `by_kind.grpc_status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_grpc_status: Option<BTreeMap<String, u64>>,
    /// Runs with checks on the answer only (`--check-*`, a `--requests`
    /// line's `check`; absent otherwise): `check` errors by which check
    /// failed (every one listed): status, header, body, regex; they sum to
    /// `by_kind.check`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_check: Option<BTreeMap<String, u64>>,
}

/// SLO bounds in ms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SloReport {
    /// Latency (E2E) bound.
    pub latency_ms: Option<f64>,
    /// Time-to-first-token bound.
    pub ttft_ms: Option<f64>,
    /// Inter-token latency bound (every gap of a request).
    pub itl_ms: Option<f64>,
    /// Time-per-output-token bound.
    pub tpot_ms: Option<f64>,
}

/// The real window of a run and the rates over it (docs/metrics.md,
/// "Throughput").
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Window {
    /// First send to last completion (success or failure) of a measured
    /// request, seconds.
    pub window_s: f64,
    /// Requests sent at or after the end of the schedule (they waited for
    /// a connection or a `--max-concurrency` slot into the drain);
    /// `achieved_rps` counts only the others. (Absent in reports of older
    /// versions: read as 0.)
    #[serde(default)]
    pub late_sent: u64,
    /// Successes that completed after the end of the schedule.
    pub late_ok: u64,
    /// Output tokens of those late successes.
    pub late_output_tokens: u64,
    /// Successes completed within the schedule per second of the measured
    /// duration (`duration_s`).
    pub in_schedule_throughput_rps: f64,
    /// Output tokens of successes completed within the schedule per second
    /// of the measured duration.
    pub in_schedule_output_tokens_per_s: f64,
    /// Good requests (met every SLO) per second of the real window.
    pub goodput_rps: f64,
}

/// The bytes a run moved: every read and write on its connections from
/// the end of the warmup to the end of the drain, by the time it
/// completed, response heads and bodies as on the wire (over TLS, the
/// plaintext after decryption; HTTP/2: frames, headers HPACK-encoded).
/// The sum of the interval rows' `bytes_received` and `bytes_sent`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Transfer {
    /// Bytes read.
    pub received_bytes: u64,
    /// Bytes written.
    pub sent_bytes: u64,
    /// `received_bytes` per second of the real window (`window.window_s`).
    pub received_per_s: f64,
    /// `sent_bytes` per second of the real window.
    pub sent_per_s: f64,
}

impl Transfer {
    /// The transfer of `received` and `sent` bytes over `window_s` seconds.
    pub fn new(received: u64, sent: u64, window_s: f64) -> Transfer {
        let per_s = |n: u64| {
            if window_s > 0.0 {
                n as f64 / window_s
            } else {
                0.0
            }
        };
        Transfer {
            received_bytes: received,
            sent_bytes: sent,
            received_per_s: per_s(received),
            sent_per_s: per_s(sent),
        }
    }

    /// Adds another shard's transfer: bytes and rates add up (shards run
    /// side by side).
    pub fn add(&mut self, other: &Transfer) {
        self.received_bytes += other.received_bytes;
        self.sent_bytes += other.sent_bytes;
        self.received_per_s += other.received_per_s;
        self.sent_per_s += other.sent_per_s;
    }
}

impl Errors {
    /// Errors of a recorder by kind (all kinds listed) and status code;
    /// `grpc`: a gRPC run, whose errors also go by `grpc-status`;
    /// `checks`: a run with checks, whose `check` errors go by check.
    pub fn from_recorder(rec: &Recorder, grpc: bool, checks: bool) -> Errors {
        let by_kind = ErrorKind::ALL
            .iter()
            .map(|k| (k.name().to_string(), rec.errors[k.index()]))
            .collect();
        let by_status = rec
            .status
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, &n)| ((i + 100).to_string(), n))
            .collect();
        let bad_framing_by_cause = FramingCause::ALL
            .iter()
            .map(|c| (c.name().to_string(), rec.framing[c.index()]))
            .collect();
        let unsent_by_reason = Unsent::ALL
            .iter()
            .map(|u| (u.name().to_string(), rec.unsent[u.index()]))
            .collect();
        let by_grpc_status = grpc.then(|| {
            rec.grpc
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(i, &n)| (grpc_code_key(i), n))
                .collect()
        });
        let by_check = checks.then(|| {
            metronome_core::check::CheckFailure::ALL
                .iter()
                .map(|c| (c.name().to_string(), rec.checks[c.index()]))
                .collect()
        });
        Errors {
            by_kind,
            by_status,
            bad_framing_by_cause,
            unsent_by_reason,
            by_grpc_status,
            by_check,
        }
    }
}

/// The report key of [`Recorder::grpc`]'s index `i`: the code, or
/// `other` for [`GRPC_OTHER`](metronome_core::measure::GRPC_OTHER).
fn grpc_code_key(i: usize) -> String {
    if i == metronome_core::measure::GRPC_OTHER {
        "other".to_string()
    } else {
        i.to_string()
    }
}

/// The name of gRPC status `code` (as `grpc-status` carries it), or
/// `None` for a code the gRPC spec does not define.
///
/// ```
/// assert_eq!(metronome::report::grpc_code_name("14"), Some("UNAVAILABLE"));
/// assert_eq!(metronome::report::grpc_code_name("other"), None);
/// ```
pub fn grpc_code_name(code: &str) -> Option<&'static str> {
    const NAMES: [&str; 17] = [
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];
    NAMES.get(code.parse::<usize>().ok()?).copied()
}
