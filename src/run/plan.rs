//! Arguments to a core [`Plan`]: check every flag (a bad one is a
//! [`UsageError`] naming it), encode the requests, resolve the target.

use std::time::Duration;

use metronome_core::plan::{Model, Plan, PlanError, Protocol, Slo, Spin, MAX_RATE, READ_BUF_BYTES};
use metronome_core::rng;
use metronome_core::schedule::{Arrival, ScheduleError, Shard};

use super::request::{check_header, encode, openai_body, Target};
use crate::cli::{ArrivalArg, RunArgs, SpinArg, SPIN_AUTO_INITIAL};
use crate::report::threshold::Threshold;
use crate::UsageError;

/// Everything derived from the arguments before anything is sent.
pub(super) struct Prepared {
    pub(super) target: Target,
    pub(super) addr: std::net::SocketAddr,
    pub(super) requests: Vec<Vec<u8>>,
    pub(super) arrival: Arrival,
    pub(super) shard: Shard,
    pub(super) slo: Slo,
    pub(super) thresholds: Vec<Threshold>,
}

/// Checks the arguments and derives everything a run needs before anything
/// is sent: the resolved address, the encoded requests, the arrival process,
/// the shard, the SLO and the thresholds.
///
/// # Errors
/// A [`UsageError`] naming the flag to change.
pub(super) fn prepare(args: &RunArgs) -> Result<Prepared, UsageError> {
    let target = Target::parse(&args.url)?;
    // The numbers a plan is made of are checked by core's
    // `Plan::validate` (see `usage`), once the plan is built.
    let arrival = match args.arrival {
        ArrivalArg::Constant => Arrival::Constant,
        ArrivalArg::Poisson => Arrival::Poisson,
        ArrivalArg::Burst => Arrival::Burst {
            size: args.burst_size,
        },
        ArrivalArg::Gamma => Arrival::Gamma {
            burstiness: args.burstiness,
        },
    };
    let shard = match &args.shard {
        None => Shard::WHOLE,
        Some(s) => parse_shard(s)?,
    };
    for h in &args.headers {
        check_header(h)?;
    }
    let mut slo = Slo::default();
    for s in &args.slos {
        let (name, value) = s.split_once('=').ok_or_else(|| {
            UsageError(format!(
                "bad --slo '{s}': write METRIC=DURATION, e.g. ttft=500ms"
            ))
        })?;
        let d = crate::units::parse_duration(value)
            .map_err(|e| UsageError(format!("bad --slo '{s}': {e}")))?;
        let ns = Some(d.as_nanos() as u64);
        match name.trim() {
            "latency" | "e2e" => slo.latency_ns = ns,
            "ttft" => slo.ttft_ns = ns,
            "itl" => slo.itl_ns = ns,
            "tpot" => slo.tpot_ns = ns,
            other => {
                return Err(UsageError(format!(
                    "bad --slo '{s}': unknown metric '{other}' (latency, ttft, itl, tpot)"
                )))
            }
        }
    }
    let thresholds = args
        .thresholds
        .iter()
        .map(|t| Threshold::parse(t))
        .collect::<Result<Vec<_>, _>>()?;

    let body: Option<Vec<u8>> = match (&args.body, &args.body_file) {
        (Some(b), _) => Some(b.clone().into_bytes()),
        (None, Some(f)) => Some(
            std::fs::read(f)
                .map_err(|e| UsageError(format!("cannot read --body-file {}: {e}", f.display())))?,
        ),
        (None, None) => None,
    };
    let requests = if args.openai {
        let mut target = target.clone();
        if target.path == "/" {
            target.path = "/v1/chat/completions".into();
        }
        let mut headers = vec![
            "Content-Type: application/json".to_string(),
            "Accept: text/event-stream".to_string(),
        ];
        if let Some(k) = &args.api_key {
            headers.push(format!("Authorization: Bearer {k}"));
        }
        headers.extend(args.headers.iter().cloned());
        let mut prompts: Vec<&str> = args.prompts.iter().map(String::as_str).collect();
        if prompts.is_empty() {
            prompts.push("Write a haiku about a metronome.");
        }
        // Requests cycle through the prompts in a seeded order.
        rng::stream(args.seed, rng::PURPOSE_REQUESTS).shuffle(&mut prompts);
        let method = args.method.as_deref().unwrap_or("POST");
        prompts
            .iter()
            .map(|p| {
                let b = openai_body(&args.model, p, args.max_tokens);
                encode(&target, method, &headers, Some(&b))
            })
            .collect()
    } else {
        let method = args
            .method
            .as_deref()
            .unwrap_or(if body.is_some() { "POST" } else { "GET" });
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(UsageError(format!(
                "bad method '{method}': write it in capitals, like GET or POST"
            )));
        }
        vec![encode(&target, method, &args.headers, body.as_deref())]
    };
    let addr = target.resolve()?;
    Ok(Prepared {
        target,
        addr,
        requests,
        arrival,
        shard,
        slo,
        thresholds,
    })
}

fn parse_shard(s: &str) -> Result<Shard, UsageError> {
    let bad = || UsageError(format!("bad --shard '{s}': write K/N with 0 <= K < N"));
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let index: u32 = k.trim().parse().map_err(|_| bad())?;
    let count: u32 = n.trim().parse().map_err(|_| bad())?;
    if count == 0 || index >= count {
        return Err(bad());
    }
    Ok(Shard { index, count })
}

/// The flag to change for a rule of core's [`Plan::validate`] the
/// arguments broke: one line, exit 2.
pub(super) fn usage(e: PlanError, args: &RunArgs) -> UsageError {
    UsageError(match e {
        PlanError::NoConnections => "--connections must be at least 1".into(),
        PlanError::MaxConnectionsBelowConnections => format!(
            "--max-connections {} is below --connections {}",
            args.max_connections, args.connections
        ),
        PlanError::MaxInFlightZero => "--max-in-flight must be at least 1".into(),
        PlanError::ZeroDuration => "--duration must be positive".into(),
        PlanError::ZeroInterval => "--interval must be positive".into(),
        PlanError::ClosedWithoutWorkers => "--closed needs at least 1 worker".into(),
        PlanError::RateTooHigh => format!(
            "--rate {} is above the limit of {MAX_RATE} requests per second: no engine can \
             keep such a schedule (split it with --shard over several machines)",
            args.rate
        ),
        PlanError::MaxHeadBytes => format!(
            "--max-header-bytes {} must be 64 to {READ_BUF_BYTES}",
            args.max_header_bytes
        ),
        PlanError::Schedule(ScheduleError::InvalidRate) => format!(
            "--rate {} must be a positive number of requests per second",
            args.rate
        ),
        PlanError::Schedule(ScheduleError::EmptyBurst) => "--burst-size must be at least 1".into(),
        PlanError::Schedule(ScheduleError::InvalidBurstiness) => {
            "--burstiness must be a positive number".into()
        }
        PlanError::Schedule(ScheduleError::InvalidShard) => {
            "bad --shard: write K/N with 0 <= K < N".into()
        }
        other => format!("invalid run: {other}"),
    })
}

fn ns(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

/// The core [`Plan`] of a run: the arguments and what [`prepare`] derived
/// from them; `requests` are `p.requests` as slices.
pub(super) fn build<'a>(args: &RunArgs, p: &Prepared, requests: &'a [&'a [u8]]) -> Plan<'a> {
    let model = match args.closed {
        Some(workers) => Model::Closed {
            workers,
            expected_interval_ns: args.expected_interval.map(ns),
        },
        None => Model::Open,
    };
    Plan {
        addr: p.addr,
        requests,
        arrival: p.arrival,
        rate: args.rate,
        seed: args.seed,
        shard: p.shard,
        duration_ns: ns(args.duration),
        warmup_ns: ns(args.warmup),
        connections: args.connections,
        max_connections: args.max_connections,
        max_in_flight: args.max_in_flight,
        timeout_ns: ns(args.timeout),
        protocol: if args.openai {
            Protocol::OpenAiSse
        } else {
            Protocol::Http
        },
        model,
        slo: p.slo,
        spin: match args.spin {
            SpinArg::Auto => Spin::Auto {
                initial_ns: ns(SPIN_AUTO_INITIAL),
            },
            SpinArg::Fixed(d) => Spin::Fixed { ns: ns(d) },
        },
        interval_ns: ns(args.interval),
        max_head_bytes: args.max_header_bytes,
        retry_non_idempotent: args.retry_non_idempotent,
    }
}
