//! Arguments to a core [`Plan`]: check every flag (a bad one is a
//! [`UsageError`] naming it), encode the requests, resolve the target.

use metronome_core::measure::Slo;
use metronome_core::mix::Mix;
use metronome_core::pace::Spin;
use metronome_core::plan::{Model, Plan, PlanError, Protocol, WarmUp, MAX_RATE, READ_BUF_BYTES};
use metronome_core::schedule::{Arrival, ScheduleError, Shard};
use metronome_core::turns::Turns;

use super::ns;
use super::openai::{openai_requests, OpenAiPlan};
use super::profile::Load;
use super::request::{check_header, encode, Target};
use crate::cli::{ArrivalArg, MixArg, RunArgs, SpinArg, WarmUpArg, SPIN_AUTO_INITIAL};
use crate::report::threshold::Threshold;
use crate::UsageError;

/// Everything derived from the arguments before anything is sent.
pub(super) struct Prepared {
    /// https: the TLS client configuration (trust, SNI, ALPN, sessions).
    pub(super) tls: Option<crate::tls::ClientTls>,
    pub(super) addr: std::net::SocketAddr,
    pub(super) requests: Vec<Vec<u8>>,
    /// `--requests`/`--targets`: the mix's names and weights.
    pub(super) mix: Option<MixPlan>,
    /// `--openai`: what the requests ask (model, endpoint, input tokens).
    pub(super) workload: Option<OpenAiPlan>,
    pub(super) arrival: Arrival,
    /// `--stages` or `--trace`, owned; the plan's rate and duration.
    pub(super) load: Load,
    pub(super) shard: Shard,
    pub(super) slo: Slo,
    pub(super) thresholds: Vec<Threshold>,
    /// Conversations: which request follows which, and the think time.
    pub(super) turns: Option<TurnsPlan>,
    /// Checks on the answer (core's `Plan::checks`), kept for the process.
    pub(super) checks: &'static [metronome_core::check::Check],
}

/// Conversations, laid out before the clock: the plan's first `sessions`
/// requests open a session each; `next` links each request to its
/// session's next turn (core's `Turns`).
pub(super) struct TurnsPlan {
    pub(super) sessions: usize,
    pub(super) next: Vec<u32>,
    pub(super) think_ns: u64,
}

/// A request mix, read and encoded before the clock.
pub(super) struct MixPlan {
    /// The distinct names, in first-seen order.
    pub(super) names: Vec<String>,
    /// The name index of each request.
    pub(super) name_of: Vec<u32>,
    /// The running sums of the weights (core's `Mix::Weighted`), or empty
    /// for round-robin.
    pub(super) cumulative: Vec<f64>,
    /// A trace's request per line (core's `Mix::Table`), or empty.
    pub(super) table: Vec<u32>,
}

/// Refuses, before the run, what the run could not give a meaning to: a
/// threshold on a metric it cannot have ([`Threshold::check_applies`]), an
/// SLO on a stream metric or a `--metrics-compat` view without `--openai`
/// (streams are what they measure), and `--timeout 0s`.
///
/// # Errors
/// A [`UsageError`] naming the flag and what it needs.
fn check_meaning(args: &RunArgs, slo: &Slo, thresholds: &[Threshold]) -> Result<(), UsageError> {
    if args.timeout.is_zero() {
        return Err(UsageError(
            "--timeout 0s would fail every request before its answer: give a duration above 0, \
             like 10s"
                .into(),
        ));
    }
    let streams = args.openai;
    let corrected = args.closed.is_some() && args.expected_interval.is_some();
    for t in thresholds {
        t.check_applies(streams, corrected)?;
    }
    if !streams {
        let stream_slo = [
            ("ttft", slo.ttft_ns),
            ("itl", slo.itl_ns),
            ("tpot", slo.tpot_ns),
        ];
        if let Some((name, _)) = stream_slo.iter().find(|(_, ns)| ns.is_some()) {
            let given = args
                .slos
                .iter()
                .find(|s| s.trim_start().starts_with(name))
                .map_or(*name, String::as_str);
            return Err(UsageError(format!(
                "--slo {given}: {name} is measured only with --openai (streamed responses); \
                 without it, an SLO is on latency (--slo latency=DURATION)"
            )));
        }
        if let Some(peer) = args.metrics_compat.first() {
            return Err(UsageError(format!(
                "--metrics-compat {}: the peers' views are of stream metrics, measured only \
                 with --openai",
                format!("{peer:?}").to_lowercase()
            )));
        }
    }
    Ok(())
}

/// Checks the arguments and derives everything a run needs before anything
/// is sent: the resolved address, the encoded requests, the arrival process,
/// the shard, the SLO and the thresholds.
///
/// # Errors
/// A [`UsageError`] naming the flag to change.
pub(super) fn prepare(args: &RunArgs) -> anyhow::Result<Prepared> {
    let mut target = Target::parse(&args.url)?;
    for unused in target.route(&args.connect_to, &args.resolve)? {
        eprintln!(
            "metronome: notice: {unused} matches neither the URL's host and port nor the \
             address it connects to; not used"
        );
    }
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
    let mut load = super::profile::load(args)?;
    super::profile::counted(args, arrival, &mut load);
    super::limits::check(args, &load)?;
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
                ))
                .into())
            }
        }
    }
    let thresholds = args
        .thresholds
        .iter()
        .map(|t| Threshold::parse(t))
        .collect::<Result<Vec<_>, _>>()?;
    check_meaning(args, &slo, &thresholds)?;

    let body: Option<Vec<u8>> = match (&args.body, &args.body_file) {
        (Some(b), _) => Some(b.clone().into_bytes()),
        (None, Some(f)) => Some(
            std::fs::read(f)
                .map_err(|e| UsageError(format!("cannot read --body-file {}: {e}", f.display())))?,
        ),
        (None, None) => None,
    };
    // A gRPC call's body is its message behind the 5-byte prefix; no
    // --body-file is an empty message.
    let body = match &args.grpc {
        Some(_) => Some(super::grpc::frame(body.as_deref().unwrap_or_default())?),
        None => body,
    };
    let tls = if target.tls {
        Some(crate::tls::ClientTls::new(
            &target.host,
            &crate::tls::ClientOptions {
                cacert: args.cacert.as_deref(),
                insecure: args.insecure,
                cert: args.cert.as_deref(),
                key: args.key.as_deref(),
            },
        )?)
    } else {
        if args.cacert.is_some() || args.insecure || args.cert.is_some() {
            eprintln!(
                "metronome: notice: --cacert, --insecure, --cert and --key apply to https:// URLs only"
            );
        }
        None
    };
    let mut mix = None;
    let mut turns = None;
    let run_checks = super::check::CheckSpec {
        status: args.check_status.clone(),
        header: args.check_header.clone(),
        body: args.check_body.clone(),
        regex: args.check_regex.clone(),
    };
    let mut checks = super::check::build(&run_checks, &[])?;
    let (requests, addr, workload) = if args.openai {
        let w = openai_requests(args, &target, body.as_deref(), &shard, &load, tls.as_ref())?;
        if let Some(table) = w.table {
            mix = Some(MixPlan {
                names: Vec::new(),
                name_of: Vec::new(),
                cumulative: Vec::new(),
                table,
            });
        }
        if let Some(t) = w.turns {
            mix = Some(MixPlan {
                names: t.names,
                name_of: t.name_of,
                cumulative: Vec::new(),
                table: Vec::new(),
            });
            turns = Some(TurnsPlan {
                sessions: t.sessions,
                next: t.next,
                think_ns: args.think_time.map_or(0, ns),
            });
        }
        (w.requests, w.addr, Some(w.workload))
    } else if let Some((path, format)) = args
        .requests
        .as_ref()
        .map(|p| (p, super::mix::Format::Requests))
        .or_else(|| {
            args.targets
                .as_ref()
                .map(|p| (p, super::mix::Format::Targets))
        })
    {
        let named = super::mix::load(path, format, &target)?;
        let own: Vec<(String, Option<super::check::CheckSpec>)> = named
            .iter()
            .map(|r| (format!("{} '{}'", format.flag(), r.name), r.check.clone()))
            .collect();
        checks = super::check::build(&run_checks, &own)?;
        let e = super::mix::encode_all(&named, &target, &args.headers);
        let weighted = match args.mix {
            Some(MixArg::Weighted) => true,
            Some(MixArg::RoundRobin) => false,
            None => format == super::mix::Format::Requests,
        };
        let mut cumulative = Vec::new();
        if weighted {
            cumulative = vec![0.0; e.weights.len()];
            metronome_core::mix::cumulate(&e.weights, &mut cumulative).map_err(|_| {
                UsageError(format!("{}: the weights must be positive", path.display()))
            })?;
        }
        // A trace whose lines name their request replays each line's.
        let table = match &args.trace {
            Some(t) => {
                let text = std::fs::read_to_string(t)
                    .map_err(|e| UsageError(format!("cannot read --trace {}: {e}", t.display())))?;
                super::mooncake::line_table(&text, &e.names, &e.name_of)
                    .map_err(|m| UsageError(format!("--trace {}: {m}", t.display())))?
                    .unwrap_or_default()
            }
            None => Vec::new(),
        };
        mix = Some(MixPlan {
            names: e.names,
            name_of: e.name_of,
            cumulative,
            table,
        });
        (e.requests, target.resolve()?, None)
    } else {
        let method = args
            .method
            .as_deref()
            .unwrap_or(if body.is_some() { "POST" } else { "GET" });
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(UsageError(format!(
                "bad method '{method}': write it in capitals, like GET or POST"
            ))
            .into());
        }
        let requests = vec![encode(&target, method, &args.headers, body.as_deref())];
        (requests, target.resolve()?, None)
    };
    let http2 = args.http2 || args.http2_prior_knowledge || args.grpc.is_some();
    if http2 && checks.iter().skip(64).any(|c| c.header.is_some()) {
        return Err(UsageError(
            "over HTTP/2, header checks apply to the first 64 requests of a mix only: give the \
             others none, or check the header run-wide with --check-header"
                .into(),
        )
        .into());
    }
    Ok(Prepared {
        tls,
        addr,
        requests,
        mix,
        workload,
        arrival,
        load,
        shard,
        slo,
        thresholds,
        turns,
        checks,
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
            "{} {} is below --connections {}",
            if args.max_concurrency.is_some() {
                "--max-concurrency"
            } else {
                "--max-connections"
            },
            max_connections(args),
            args.connections.unwrap_or(0)
        ),
        PlanError::MaxInFlightZero => "--max-in-flight must be at least 1".into(),
        PlanError::MaxConcurrency => "--max-concurrency must be at least 1".into(),
        PlanError::ZeroDuration => "--duration must be positive".into(),
        PlanError::ZeroInterval => "--interval must be positive".into(),
        PlanError::ClosedWithoutWorkers => "--closed needs at least 1 worker".into(),
        PlanError::RateTooHigh => format!(
            "--rate {} is above the limit of {MAX_RATE} requests per second: no engine can \
             keep such a schedule (split it with --shard over several machines)",
            args.rate()
        ),
        PlanError::MaxHeadBytes => format!(
            "--max-header-bytes {} must be 64 to {READ_BUF_BYTES}",
            args.max_header_bytes
        ),
        PlanError::Schedule(ScheduleError::InvalidRate) => format!(
            "--rate {} must be a positive number of requests per second",
            args.rate()
        ),
        PlanError::Schedule(ScheduleError::InvalidStages | ScheduleError::ZeroExponentialRate) => {
            format!("bad --stages: {e}")
        }
        PlanError::Schedule(ScheduleError::UnsortedTrace | ScheduleError::InvalidTraceSpeed) => {
            format!("bad --trace: {e}")
        }
        PlanError::Schedule(ScheduleError::EmptyBurst) => "--burst-size must be at least 1".into(),
        PlanError::Schedule(ScheduleError::InvalidBurstiness) => {
            "--burstiness must be a positive number".into()
        }
        PlanError::Schedule(ScheduleError::InvalidShard) => {
            "bad --shard: write K/N with 0 <= K < N".into()
        }
        PlanError::Turns => "conversations (--multi-turn, or a --dataset with \"turns\") need \
                             the open loop: drop --closed and --profile synchronous|concurrent"
            .into(),
        PlanError::Http2 => "HTTP/2 runs the open loop only: drop --closed, \
                             --profile synchronous|concurrent, --multi-turn and --warm-up request"
            .into(),
        PlanError::Http3 => "HTTP/3 runs the open loop only: drop --closed, \
                             --profile synchronous|concurrent, --multi-turn and --warm-up request"
            .into(),
        other => format!("invalid run: {other}"),
    })
}

/// What the engine does before the clock: `--warm-up`, with `auto` a
/// warm-up request only when every request of the run is a safe method
/// (a mix's warm-up request is its first).
fn warm_up(arg: WarmUpArg, requests: &[&[u8]]) -> WarmUp {
    match arg {
        WarmUpArg::Off => WarmUp::Off,
        WarmUpArg::Check => WarmUp::Check,
        WarmUpArg::Request => WarmUp::Request,
        WarmUpArg::Auto => {
            let safe = requests.iter().all(|r| {
                [&b"GET "[..], b"HEAD ", b"OPTIONS "]
                    .iter()
                    .any(|m| r.starts_with(m))
            });
            if safe {
                WarmUp::Request
            } else {
                WarmUp::Check
            }
        }
    }
}

/// The connections to pre-open: `--connections`, or core's default for
/// this machine's share of the rate
/// ([`metronome_core::pool::default_connections`]), at most
/// `--max-connections`; closed model: one per worker (set by the engine).
fn connections(args: &RunArgs, rate: f64, shard: Shard) -> u32 {
    args.connections.unwrap_or_else(|| {
        let rate = rate / f64::from(shard.count.max(1));
        metronome_core::pool::default_connections(rate).min(max_connections(args).max(1))
    })
}

/// `--max-connections`, or the `--max-concurrency` cap (one request per
/// connection at a time, so the connections are the cap).
pub(super) fn max_connections(args: &RunArgs) -> u32 {
    args.max_concurrency.unwrap_or(args.max_connections)
}

/// `--max-in-flight` when given; else 10,000, or with `--max-concurrency`
/// room for the whole schedule (its peak rate over its span, plus a
/// tenth and 1,024 for Poisson's spread, at most [`QUEUE_MAX`]), so a
/// capped run queues rather than drops.
fn max_in_flight(args: &RunArgs, load: &super::profile::Load) -> u32 {
    if let Some(n) = args.max_in_flight {
        return n;
    }
    if args.max_concurrency.is_none() {
        return 10_000;
    }
    let span_s = (load.duration_ns as f64 + ns(args.warmup) as f64) * 1e-9;
    let schedule = load.rate * span_s * 1.1 + 1024.0;
    schedule.clamp(10_000.0, f64::from(QUEUE_MAX)) as u32
}

/// The most requests a `--max-concurrency` run holds waiting by default:
/// the engines reserve their queue before the clock (40 bytes a request
/// on the io_uring engine, so 40 MB at most).
pub const QUEUE_MAX: u32 = 1_000_000;

/// The core [`Plan`] of a run: the arguments and what [`prepare`] derived
/// from them; `requests` are `p.requests` as slices.
pub(super) fn build<'a>(
    args: &RunArgs,
    p: &'a Prepared,
    requests: &'a [&'a [u8]],
    encoded: Option<&'a [metronome_core::plan::EncodedRequest<'a>]>,
) -> Plan<'a> {
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
        mix: match &p.mix {
            Some(m) if !m.table.is_empty() => Mix::Table { table: &m.table },
            Some(m) if !m.cumulative.is_empty() => Mix::Weighted {
                cumulative: &m.cumulative,
            },
            _ => Mix::Cycle,
        },
        names: p.mix.as_ref().map_or(&[], |m| &m.name_of),
        input_tokens: p.workload.as_ref().map_or(&[], OpenAiPlan::input_tokens),
        arrival: p.arrival,
        rate: p.load.rate,
        profile: p.load.profile(),
        seed: args.seed,
        shard: p.shard,
        duration_ns: p.load.duration_ns,
        count: p.load.count,
        checks: p.checks,
        warmup_ns: ns(args.warmup),
        connections: connections(args, p.load.rate, p.shard),
        max_connections: max_connections(args),
        max_in_flight: max_in_flight(args, &p.load),
        max_concurrency: args.max_concurrency,
        timeout_ns: ns(args.timeout),
        protocol: if args.openai {
            Protocol::OpenAiSse
        } else if args.grpc.is_some() {
            Protocol::Grpc
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
        // The warm-up request is an HTTP/1.1 exchange: HTTP/2 connections
        // are checked only (and opened with their SETTINGS exchange).
        warm_up: if encoded.is_some() {
            WarmUp::Check
        } else {
            warm_up(args.warm_up, requests)
        },
        turns: p.turns.as_ref().map_or(Turns::NONE, |t| Turns {
            sessions: t.sessions,
            next: &t.next,
            think_ns: t.think_ns,
        }),
        wire: super::encoded::wire(args, encoded),
        // Exact samples of the peers' per-request metrics, only for the
        // views asked (a plain run reserves nothing for them).
        peer_samples: if args.openai {
            crate::report::compat::exact_metrics(&crate::report::compat::peers_once(
                args.metrics_compat.iter().map(|&p| p.into()),
            ))
        } else {
            metronome_core::measure::ExactSet::EMPTY
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(tokens: &[u32]) -> OpenAiPlan {
        OpenAiPlan {
            model: "m".into(),
            model_source: "--model",
            endpoint: "/v1/chat/completions".into(),
            source: "--prompt".into(),
            counted_by: "words".into(),
            input_tokens: tokens.to_vec(),
        }
    }

    #[test]
    fn input_tokens_count_every_request_sent() {
        use metronome_core::ledger::{Ledger, Tally};
        use metronome_core::turns::{Turns, NO_TURN};
        // Two sessions (requests 0 -> 2 and 1 -> 3), 500 ms warmup.
        let w = workload(&[1, 2, 30, 40]);
        let plan = Plan {
            requests: &[b"a", b"b", b"c", b"d"],
            input_tokens: w.input_tokens(),
            turns: Turns {
                sessions: 2,
                next: &[2, 3, NO_TURN, NO_TURN],
                think_ns: 0,
            },
            ..metronome_core::plan::example_plan()
        };
        let ledger = Ledger::new(&plan);
        let mut rec = Box::new(metronome_core::measure::Recorder::new());
        let mut tally = Tally {
            recorder: &mut rec,
            intervals: &mut [],
            stages: &mut [],
            names: &mut [],
            samples: None,
            follow_ups: None,
            requests: None,
        };
        // Warmup sends are not counted; every measured send is, follow-ups
        // (requests 2 and 3) and a first turn sent twice included.
        assert!(!ledger.sent(&mut tally, 100_000_000, 0, 100_000_000));
        for (t, request) in [(600, 0), (610, 1), (700, 2), (710, 3), (800, 0)] {
            assert!(ledger.sent(&mut tally, t * 1_000_000, request, t * 1_000_000));
        }
        let r = w.report(&rec);
        let i = &r.input_tokens;
        assert_eq!(
            (i.count, i.total, i.min, i.max),
            (5, 1 + 2 + 30 + 40 + 1, 1, 40)
        );
        assert_eq!(i.count, rec.sent);
        assert_eq!(r.output_tokens.count, 0);
        assert_eq!(r.distinct_requests, 4);
    }
}
