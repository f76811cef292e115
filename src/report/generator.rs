//! The generator's own cost and health in a report ([`Generator`]): its
//! threads and CPU time, its connections, its warnings, where the open loop
//! fell behind ([`Behind`]) and what the pool's growth rule did
//! ([`PoolReport`], [`KneeReport`]).

use serde::{Deserialize, Serialize};

/// A stretch of the run in which the open loop could not keep its
/// schedule, and why, read from the interval series: intervals where more
/// than 1% of the due requests were dropped, sent over 1 ms late or never
/// sent; consecutive intervals of one cause form one stretch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Behind {
    /// Start of the stretch, seconds after the warmup.
    pub from_s: f64,
    /// End of the stretch (the end of its last interval), seconds.
    pub until_s: f64,
    /// Intervals in the stretch.
    pub intervals: u64,
    /// `in_flight_limit` (requests dropped above `--max-in-flight`),
    /// `pool_exhausted` (every connection busy with the pool at
    /// `--max-connections`: the server is slower than the connections
    /// allow), `server_slower` (requests waited for a connection while the
    /// pool was below its limit, and the mean service time rose at least
    /// 1.5 times over the lowest of the intervals before), `waited`
    /// (the same waits without that evidence: no cause named; the pool
    /// grows only where more connections carry more load, [`PoolReport`]),
    /// `cpu_saturated` (the pacing threads worked at least 90% of the time,
    /// busy-wait excluded) or `descheduled` (they did not, yet sent late:
    /// the host took the CPU).
    pub cause: String,
    /// One sentence with the stretch's totals and what to change.
    pub detail: String,
}

/// The generator's cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Generator {
    /// Threads of the engine.
    pub threads: u32,
    /// CPU time of the engine, seconds (user + system).
    pub cpu_s: f64,
    /// Of which busy-waiting before intended sends, seconds.
    pub spin_s: f64,
    /// cpu_s / sent, microseconds.
    pub cpu_us_per_request: f64,
    /// (cpu_s - spin_s) / sent, microseconds.
    pub work_us_per_request: f64,
    /// Connections opened in all.
    pub connections_opened: u64,
    /// Most connections open at once.
    pub peak_connections: u64,
    /// Requests that waited for a free connection.
    pub waited_for_connection: u64,
    /// Connections the server closed while idle (a close, a half-close or a 408), replaced
    /// before reuse and charged to no request.
    pub connections_closed_idle: u64,
    /// Connections closed because bytes arrived that no request asked for (after a
    /// complete response, or while idle), charged to no request.
    pub connections_unsolicited: u64,
    /// True when the run was stopped early (Ctrl-C).
    pub stopped: bool,
    /// Plain warnings: when the numbers cannot be trusted.
    pub warnings: Vec<String>,
    /// Where and why the open loop fell behind its schedule; empty when it
    /// kept it (and for the closed model).
    #[serde(default)]
    pub behind: Vec<Behind>,
    /// What the connection pool's growth rule did (docs/connections.md).
    #[serde(default)]
    pub pool: PoolReport,
    /// With `--dashboard`: CPU time of the dashboard's thread up to the end
    /// of the run, seconds (not in `cpu_s`: it is not the engine's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dashboard_cpu_s: Option<f64>,
    /// With `--out-requests`: the per-request lines written, and the
    /// records dropped because the writer fell behind (docs/requests-out.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_requests: Option<OutRequests>,
}

/// What `--out-requests` wrote (docs/requests-out.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutRequests {
    /// Request lines written (the header line not counted).
    pub written: u64,
    /// Measured requests with no line: their records did not fit in the
    /// queue (the writer fell behind) or came after a write failed.
    pub dropped: u64,
}

/// What the connection pool's growth rule did: it grows toward what the
/// no-queue service time needs, and beyond only by probes whose
/// connections carried more load (core's `pool` module).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolReport {
    /// Where growth stopped because more connections did not carry more
    /// load (the server, or the generator, was saturated), if it did.
    pub knee: Option<KneeReport>,
    /// Probes whose connections carried more load, and were kept.
    pub probes_kept: u32,
    /// Probes that left completions flat (a knee each), closed again.
    pub probes_refused: u32,
    /// Connections the pool closed between requests: idle for 1 s above the
    /// pre-opened count, or a refused probe's.
    pub closed: u64,
}

/// The knee the pool found: with `connections` open (and requests waiting
/// for them) `completions_per_s` completed; with `probe_connections`,
/// `probe_per_s`: no more.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KneeReport {
    /// Completions per second with `connections` open.
    pub completions_per_s: f64,
    /// The connections open then.
    pub connections: u32,
    /// Completions per second with the probe's connections open.
    pub probe_per_s: f64,
    /// The connections the probe had open.
    pub probe_connections: u32,
    /// When the probe was refused, seconds after the clock's zero.
    pub at_s: f64,
}

impl PoolReport {
    /// The report of core's pool outcome.
    pub fn of(p: &metronome_core::pool::PoolOutcome) -> PoolReport {
        PoolReport {
            knee: p.knee.map(|k| KneeReport {
                completions_per_s: k.completions_per_s,
                connections: k.connections,
                probe_per_s: k.probe_per_s,
                probe_connections: k.probe_connections,
                at_s: k.at_ns as f64 / 1e9,
            }),
            probes_kept: p.probes.kept,
            probes_refused: p.probes.refused,
            closed: p.closed,
        }
    }

    /// Adds another shard's: knees add up (completions and connections),
    /// as do the counts.
    pub fn add(&mut self, other: &PoolReport) {
        self.knee = match (self.knee.take(), other.knee.clone()) {
            (Some(a), Some(b)) => Some(KneeReport {
                completions_per_s: a.completions_per_s + b.completions_per_s,
                connections: a.connections + b.connections,
                probe_per_s: a.probe_per_s + b.probe_per_s,
                probe_connections: a.probe_connections + b.probe_connections,
                at_s: a.at_s.max(b.at_s),
            }),
            (a, b) => a.or(b),
        };
        self.probes_kept += other.probes_kept;
        self.probes_refused += other.probes_refused;
        self.closed += other.closed;
    }
}
