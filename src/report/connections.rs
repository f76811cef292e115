//! How a run's connections were set up ([`ConnectionsReport`]): connect and
//! TLS handshake times, handshake failures, the TLS versions and ALPN
//! agreed, HTTP/2 streams per connection ([`H2Streams`]), HTTP/3's 0-RTT
//! ([`ZeroRttReport`]) and the warm start before the clock
//! ([`WarmUpReport`]).

use std::collections::BTreeMap;

use metronome_core::histogram::Histogram;
use metronome_core::plan::WarmUp;
use serde::{Deserialize, Serialize};

use super::metric::Metric;

/// How the engine's connections were set up, over every connection it
/// opened (pre-opened ones, before the clock, included).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectionsReport {
    /// The target is `https://`.
    pub tls: bool,
    /// `--insecure`: the server's certificate was not verified.
    pub insecure: bool,
    /// `SSLKEYLOGFILE` was set: the TLS session keys were appended to the
    /// file it names. (Absent in reports of older versions.)
    #[serde(default)]
    pub keylog: bool,
    /// TCP connect time (socket to established), ms.
    pub connect: Option<Metric>,
    /// TLS handshake time (established to handshake done), ms; https only.
    pub tls_handshake: Option<Metric>,
    /// TLS handshakes that resumed an earlier session (over HTTP/3: the
    /// connections whose 0-RTT was accepted; docs/http3.md).
    pub tls_resumed: u64,
    /// TLS handshakes that failed, by kind (every kind listed on https):
    /// certificate, protocol, timeout.
    pub handshake_failures: BTreeMap<String, u64>,
    /// The warm start of the pre-opened connections (`--warm-up`), before
    /// the clock: never counted as load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_up: Option<WarmUpReport>,
    /// Completed TLS handshakes by the version agreed (`TLSv1.2`,
    /// `TLSv1.3`); https only. (Absent in reports of older versions.)
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tls_versions: BTreeMap<String, u64>,
    /// Completed TLS handshakes by the ALPN protocol the server chose
    /// (`http/1.1`, `h2`, or `none`); https only. (Absent in reports of
    /// older versions.)
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub alpn: BTreeMap<String, u64>,
    /// HTTP/2 runs: the streams carried per connection (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h2: Option<H2Streams>,
    /// HTTP/3 runs: what the connections did with 0-RTT (`--http3-0rtt`;
    /// zeros without it). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h3_0rtt: Option<ZeroRttReport>,
}

/// HTTP/3 0-RTT over a run's QUIC connections (exact counts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZeroRttReport {
    /// `--http3-0rtt` was given.
    pub enabled: bool,
    /// Connections opened with a session ticket allowing early data: they
    /// tried 0-RTT.
    pub attempted: u64,
    /// Of them, the server accepted the early data.
    pub accepted: u64,
    /// Of them, the server rejected it.
    pub rejected: u64,
    /// Requests sent in 0-RTT, on accepted and rejected connections.
    pub requests: u64,
    /// Of them, sent again in 1-RTT after a rejection.
    pub resent: u64,
}

impl ZeroRttReport {
    /// The engine's counts; `enabled`: `--http3-0rtt`.
    pub fn new(enabled: bool, z: &metronome_core::engine::ZeroRtt) -> ZeroRttReport {
        ZeroRttReport {
            enabled,
            attempted: z.attempted,
            accepted: z.accepted,
            rejected: z.rejected,
            requests: z.requests,
            resent: z.resent,
        }
    }

    /// The sum of `parts` (`enabled` when any was).
    pub fn merge(parts: &[ZeroRttReport]) -> ZeroRttReport {
        let mut m = ZeroRttReport::default();
        for p in parts {
            m.enabled |= p.enabled;
            m.attempted += p.attempted;
            m.accepted += p.accepted;
            m.rejected += p.rejected;
            m.requests += p.requests;
            m.resent += p.resent;
        }
        m
    }
}

/// How many streams HTTP/2 connections carried at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct H2Streams {
    /// The most streams (requests) open at once on one connection.
    pub peak_streams: u32,
    /// The most the client would open on one (`--max-streams`, else 100).
    pub client_max_streams: u32,
    /// The server's `SETTINGS_MAX_CONCURRENT_STREAMS` (over HTTP/3, its
    /// initial QUIC MAX_STREAMS for requests, `initial_max_streams_bidi`),
    /// the smallest any connection was given; null when the server never
    /// set it (unlimited) or no stream started.
    pub server_max_streams: Option<u32>,
}

/// What the warm start before the clock did (`--warm-up`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WarmUpReport {
    /// `request` or `check`.
    pub mode: String,
    /// Warm-up requests sent, one per pre-opened connection (and one per
    /// connection opened again).
    pub requests: u64,
    /// Of them, answered with a complete response (any status).
    pub answered: u64,
    /// Of them, failed: the connection was opened again or left out.
    pub failed: u64,
    /// Connections that received bytes before any request: closed.
    pub unsolicited: u64,
    /// Median service time of the answered warm-up requests, ms: the
    /// pool's first estimate.
    pub service_p50_ms: Option<f64>,
}

impl WarmUpReport {
    /// The warm-up an engine reported, for a plan's mode; `None` when off.
    pub fn from_warm(warm: &metronome_core::engine::Warm, mode: WarmUp) -> Option<Self> {
        let mode = match mode {
            WarmUp::Off => return None,
            WarmUp::Check => "check",
            WarmUp::Request => "request",
        };
        Some(WarmUpReport {
            mode: mode.to_string(),
            requests: warm.requests,
            answered: warm.answered,
            failed: warm.failed,
            unsolicited: warm.unsolicited,
            service_p50_ms: warm.median_service_ns().map(|ns| ns as f64 / 1e6),
        })
    }
}

impl ConnectionsReport {
    /// The set-up an engine measured, for a plain or TLS target.
    pub fn from_setup(setup: &metronome_core::engine::Setup, tls: bool, insecure: bool) -> Self {
        let metric = |h: &Histogram| (h.count() > 0).then(|| Metric::from_histogram(h));
        let mut tls_versions = BTreeMap::new();
        let mut alpn = BTreeMap::new();
        if tls {
            for (name, n) in ["TLSv1.2", "TLSv1.3"].into_iter().zip(setup.tls_versions) {
                if n > 0 {
                    tls_versions.insert(name.to_string(), n);
                }
            }
            for (name, n) in metronome_core::engine::Setup::ALPN
                .into_iter()
                .zip(setup.alpn)
            {
                if n > 0 {
                    let name = if name.is_empty() { "none" } else { name };
                    alpn.insert(name.to_string(), n);
                }
            }
        }
        ConnectionsReport {
            warm_up: None,
            tls_versions,
            alpn,
            h2: None,
            h3_0rtt: None,
            tls,
            insecure,
            keylog: false,
            connect: metric(&setup.connect),
            tls_handshake: metric(&setup.tls_handshake),
            tls_resumed: setup.resumed,
            handshake_failures: if tls {
                metronome_core::engine::HandshakeFailure::ALL
                    .iter()
                    .map(|k| (k.name().to_string(), setup.handshake_failures[k.index()]))
                    .collect()
            } else {
                BTreeMap::new()
            },
        }
    }
}
