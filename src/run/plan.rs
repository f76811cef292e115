//! Arguments to a core [`Plan`]: check every flag (a bad one is a
//! [`UsageError`] naming it), encode the requests, resolve the target.

use std::collections::BTreeSet;
use std::time::Duration;

use metronome_core::measure::Slo;
use metronome_core::mix::Mix;
use metronome_core::pace::Spin;
use metronome_core::plan::{Model, Plan, PlanError, Protocol, WarmUp, MAX_RATE, READ_BUF_BYTES};
use metronome_core::rng;
use metronome_core::schedule::{Arrival, ScheduleError, Shard};
use metronome_core::turns::Turns;

use super::conversation::{self, Sessions};
use super::lengths::Length;
use super::profile::Load;
use super::request::{
    check_header, complete_path, encode, models_path, openai_body, BodySpec, Endpoint,
    MaxTokensField, Target,
};
use super::tokens::Counter;
use super::workload::{self, Input, Prompt, Synthetic};
use crate::cli::{
    ArrivalArg, EndpointArg, MaxTokensFieldArg, MixArg, RunArgs, SpinArg, WarmUpArg,
    SPIN_AUTO_INITIAL,
};
use crate::report::threshold::Threshold;
use crate::report::workload::{TokenDist, Workload as WorkloadReport};
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
    pub(super) workload: Option<Workload>,
    pub(super) arrival: Arrival,
    /// `--stages` or `--trace`, owned; the plan's rate and duration.
    pub(super) load: Load,
    pub(super) shard: Shard,
    pub(super) slo: Slo,
    pub(super) thresholds: Vec<Threshold>,
    /// Conversations: which request follows which, and the think time.
    pub(super) turns: Option<TurnsPlan>,
}

/// `--http2-prior-knowledge` or `--http2`: each request's HPACK header block, and
/// where its body starts in the HTTP/1.1 encoding, made before the clock.
pub(super) struct H2Plan {
    pub(super) blocks: Vec<Vec<u8>>,
    pub(super) body_at: Vec<usize>,
}

/// Encodes every request for HTTP/2 (`--http2-prior-knowledge`: h2c,
/// scheme `http`; `--http2`: scheme `https`), before the clock.
///
/// # Errors
/// A [`UsageError`] naming the request that cannot go over HTTP/2.
pub(super) fn h2_requests(args: &RunArgs, requests: &[Vec<u8>]) -> anyhow::Result<Option<H2Plan>> {
    if !args.http2_prior_knowledge && !args.http2 {
        if args.max_streams.is_some() {
            return Err(UsageError(
                "--max-streams needs --http2 or --http2-prior-knowledge".into(),
            )
            .into());
        }
        return Ok(None);
    }
    let https = args.url.starts_with("https://");
    if args.http2 && !https {
        return Err(UsageError(
            "--http2 is HTTP/2 over TLS (ALPN h2) for an https:// URL; for http:// use \
             --http2-prior-knowledge (h2c)"
                .into(),
        )
        .into());
    }
    if args.http2_prior_knowledge && https {
        return Err(UsageError(
            "--http2-prior-knowledge is h2c on an http:// URL; for https:// use --http2".into(),
        )
        .into());
    }
    if let Some(n) = args.max_streams {
        if n == 0 || n > metronome_core::plan::H2_MAX_STREAMS {
            return Err(UsageError(format!(
                "--max-streams {n} must be 1 to {}",
                metronome_core::plan::H2_MAX_STREAMS
            ))
            .into());
        }
    }
    let mut blocks = Vec::with_capacity(requests.len());
    let mut body_at = Vec::with_capacity(requests.len());
    for (i, r) in requests.iter().enumerate() {
        let mut out = vec![0u8; r.len() * 2 + 256];
        let scheme: &[u8] = if https { b"https" } else { b"http" };
        let (n, at) = metronome_core::h2::request::from_http1(r, scheme, &mut out)
            .map_err(|e| UsageError(format!("request {} cannot go over HTTP/2: {e}", i + 1)))?;
        out.truncate(n);
        blocks.push(out);
        body_at.push(at);
    }
    Ok(Some(H2Plan { blocks, body_at }))
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
    let load = super::profile::load(args)?;
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
    })
}

/// The prompt a run sends when none is given.
pub(super) const DEFAULT_PROMPT: &str = "Write a haiku about a metronome.";
/// Synthetic prompts are built for every request of the schedule (so none
/// repeats) up to this many, and this many bytes of request in all.
const SYNTHETIC_MAX_PROMPTS: usize = 100_000;
const SYNTHETIC_MAX_BYTES: usize = 256 << 20;

/// What the `--openai` requests ask, for the report.
pub(super) struct Workload {
    model: String,
    model_source: &'static str,
    endpoint: String,
    source: String,
    /// What counted the input tokens: `words` or `tokenizer FILE`.
    counted_by: String,
    /// Proxy input tokens of `requests[i]`.
    input_tokens: Vec<u32>,
}

impl Workload {
    /// The report's `workload`: input tokens of every measured request
    /// sent (every turn of a conversation; the ledger records them at each
    /// send from [`Plan::input_tokens`], as [`Workload::input_tokens`]
    /// gives them), output tokens per successful stream, both from the
    /// recorder.
    pub(super) fn report(&self, rec: &metronome_core::measure::Recorder) -> WorkloadReport {
        WorkloadReport {
            endpoint: self.endpoint.clone(),
            model: self.model.clone(),
            model_source: self.model_source.to_string(),
            prompts: self.source.clone(),
            tokens_counted_by: self.counted_by.clone(),
            distinct_requests: self.input_tokens.len() as u64,
            input_tokens: TokenDist::from_histogram(&rec.input_len),
            output_tokens: TokenDist::from_histogram(&rec.output_len),
        }
    }

    /// The proxy input tokens of each request, for [`Plan::input_tokens`].
    pub(super) fn input_tokens(&self) -> &[u32] {
        &self.input_tokens
    }
}

/// Shard K of N starts its cycle through the prompts K/N of the way in, so
/// shards do not send the same prompt at the same time.
fn rotate_for_shard<T>(prompts: &mut [T], shard: &Shard) {
    let n = prompts.len() as u64;
    let start = u64::from(shard.index) * n / u64::from(shard.count.max(1));
    prompts.rotate_left(start as usize);
}

/// The `--openai` requests, the resolved address and the workload.
struct OpenAiRequests {
    requests: Vec<Vec<u8>>,
    addr: std::net::SocketAddr,
    workload: Workload,
    /// Conversations: the layout of the requests.
    turns: Option<Sessions>,
    /// A Mooncake trace: each line's own request (line `g` sends request `g`).
    table: Option<Vec<u32>>,
}

/// A JSON object given on the command line, to merge into every body.
fn json_object(flag: &str, text: &str) -> Result<serde_json::Value, UsageError> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err(UsageError(format!(
            "{flag} with --openai must be a JSON object to merge into every request body, \
             like '{{\"temperature\":0}}'"
        ))),
        Err(e) => Err(UsageError(format!("{flag} is not JSON ({e})"))),
    }
}

/// Builds every `--openai` request before the run: the endpoint (and the
/// URL completed to it), the prompts, the model (discovered when not
/// given), the bodies.
fn openai_requests(
    args: &RunArgs,
    target: &Target,
    body: Option<&[u8]>,
    shard: &Shard,
    load: &Load,
    tls: Option<&crate::tls::ClientTls>,
) -> anyhow::Result<OpenAiRequests> {
    let endpoint = match args.endpoint {
        Some(EndpointArg::Chat) => Endpoint::Chat,
        Some(EndpointArg::Completions) => Endpoint::Completions,
        None => Endpoint::of_path(&target.path).unwrap_or(Endpoint::Chat),
    };
    let mut target = target.clone();
    let completed_from =
        complete_path(&target.path, endpoint).map(|path| std::mem::replace(&mut target.path, path));
    let mut patches = Vec::new();
    if let Some(b) = body {
        let flag = if args.body.is_some() {
            "--body"
        } else {
            "--body-file"
        };
        let text = std::str::from_utf8(b)
            .map_err(|_| UsageError(format!("{flag} with --openai is not UTF-8 JSON")))?;
        patches.push(json_object(flag, text)?);
    }
    if let Some(extra) = &args.extra_body {
        patches.push(json_object("--extra-body", extra)?);
    }
    let counter = match &args.tokenizer {
        Some(path) => Counter::load(path)?,
        None => Counter::Words,
    };
    let mut sessions = None;
    let dataset_text = match &args.dataset {
        Some(path) => Some(workload::read_dataset(path)?),
        None => None,
    };
    if let (Some(path), Some(text)) = (&args.dataset, &dataset_text) {
        let unused = workload::timing_fields(text);
        if !unused.is_empty() {
            eprintln!(
                "metronome: --dataset {}: aiperf's {} not used: requests follow the run's \
                 schedule (--rate, --arrival; --think-time between a conversation's turns)",
                path.display(),
                unused
                    .iter()
                    .map(|k| format!("\"{k}\""))
                    .collect::<Vec<_>>()
                    .join(" and ")
                    + if unused.len() > 1 {
                        " fields are"
                    } else {
                        " field is"
                    }
            );
        }
    }
    let conversations = match (&args.dataset, &dataset_text) {
        (Some(path), Some(text))
            if args.multi_turn
                || (!text.trim_start().starts_with('[')
                    && (text.contains("\"turns\"") || text.contains("\"session_id\""))) =>
        {
            conversation::parse_conversations(
                text,
                &path.display().to_string(),
                &counter,
                args.multi_turn,
            )?
        }
        _ => None,
    };
    if conversations.is_none() && args.think_time.is_some() {
        return Err(UsageError(
            "--think-time applies to conversations: a --dataset with \"turns\" lines, or \
             ShareGPT with --multi-turn"
                .into(),
        )
        .into());
    }
    // A trace whose lines carry Mooncake's fields builds one prompt per line.
    let trace_lines = match &args.trace {
        Some(t) => {
            let text = std::fs::read_to_string(t)
                .map_err(|e| UsageError(format!("cannot read --trace {}: {e}", t.display())))?;
            super::mooncake::read_lines(&text)
                .map_err(|m| UsageError(format!("--trace {}: {m}", t.display())))?
        }
        None => None,
    };
    if trace_lines.is_some()
        && (args.dataset.is_some()
            || args.input_len.is_some()
            || !args.prompts.is_empty()
            || args.cache_bust)
    {
        return Err(UsageError(
            "--trace with input_length builds each line's prompt (Mooncake's hash_ids blocks): \
             drop --dataset, --input-len, --prompt and --cache-bust"
                .into(),
        )
        .into());
    }
    let mut table = None;
    let (mut prompts, source): (Vec<Prompt>, String) = if let Some(lines) = &trace_lines {
        let path = args.trace.as_ref().expect("trace lines come from --trace");
        let p = super::mooncake::prompts(lines, args.seed, &counter)?;
        table = Some((0..p.len() as u32).collect());
        let source = format!(
            "trace {}: {} prompts from input_length and hash_ids (blocks of {} words)",
            path.display(),
            p.len(),
            super::mooncake::BLOCK_WORDS
        );
        (p, source)
    } else if let Some(mut convs) = conversations {
        let path = args
            .dataset
            .as_ref()
            .expect("conversations come from --dataset");
        if args.cache_bust {
            return Err(UsageError(
                "--cache-bust does not apply to conversations (their turns share a history \
                 by design)"
                    .into(),
            )
            .into());
        }
        if endpoint != Endpoint::Chat {
            return Err(UsageError(
                "conversations need the chat endpoint (--endpoint chat): each turn sends the \
                 history as messages"
                    .into(),
            )
            .into());
        }
        rng::stream(args.seed, rng::PURPOSE_REQUESTS).shuffle(&mut convs);
        rotate_for_shard(&mut convs, shard);
        let default_output = args.output_len.map_or(args.max_tokens, |l| l.mean() as u32);
        let (p, s) = conversation::lay_out(&convs, default_output, &counter);
        let source = format!(
            "dataset {} as {} conversations, {} turns",
            path.display(),
            s.sessions,
            p.len()
        );
        sessions = Some(s);
        (p, source)
    } else if let (Some(path), Some(text)) = (&args.dataset, &dataset_text) {
        let d = workload::parse_dataset(text, &path.display().to_string(), &counter)?;
        if d.skipped > 0 {
            eprintln!(
                "metronome: --dataset {}: {} prompts, {} ShareGPT entries skipped as vLLM's \
                 bench skips them",
                path.display(),
                d.prompts.len(),
                d.skipped
            );
        }
        let mut p = d.prompts;
        rng::stream(args.seed, rng::PURPOSE_REQUESTS).shuffle(&mut p);
        rotate_for_shard(&mut p, shard);
        (p, format!("dataset {}", path.display()))
    } else if let Some(input_len) = args.input_len {
        let spec = Synthetic {
            input: input_len,
            prefix_len: args.prefix_len.unwrap_or(0),
            prefix_share: args.prefix_share.unwrap_or(1.0),
            cache_bust: args.cache_bust.then(run_nonce),
        };
        let expected = expected_requests(args, load, shard);
        let per_request = spec.mean_words() as usize * 8 + 512;
        let count = (expected.ceil().max(1.0) as usize)
            .min(SYNTHETIC_MAX_PROMPTS)
            .min((SYNTHETIC_MAX_BYTES / per_request).max(1));
        if (count as f64) < expected {
            eprintln!(
                "metronome: notice: {} synthetic prompts for about {} requests: \
                 they repeat (a server's prefix cache may serve repeats faster)",
                crate::report::num::count(count as u64),
                crate::report::num::count(expected.round() as u64)
            );
        }
        let first = shard.index as usize * count;
        let p = workload::synthetic_counted(args.seed, first, count, &spec, None, &counter);
        let unit = match counter {
            Counter::Words => "words",
            Counter::Tokenizer { .. } => "tokens",
        };
        let mut source = match input_len {
            Length::Fixed(n) => format!("synthetic, {n} {unit} each"),
            law => format!("synthetic, {law} {unit}"),
        };
        if spec.prefix_len > 0 {
            source += &format!(
                ", a {}-{} prefix shared by {}%",
                spec.prefix_len,
                &unit[..unit.len() - 1],
                spec.prefix_share * 100.0
            );
        }
        if spec.cache_bust.is_some() {
            source += ", cache-busted";
        }
        (p, source)
    } else {
        let mut texts: Vec<&str> = args.prompts.iter().map(String::as_str).collect();
        if texts.is_empty() {
            texts.push(DEFAULT_PROMPT);
        }
        // Requests cycle through the prompts in a seeded order.
        rng::stream(args.seed, rng::PURPOSE_REQUESTS).shuffle(&mut texts);
        rotate_for_shard(&mut texts, shard);
        let p = texts
            .iter()
            .map(|t| Prompt::counted(t, None, &counter))
            .collect();
        let source = if args.prompts.is_empty() {
            "built-in prompt"
        } else {
            "--prompt"
        };
        (p, source.to_string())
    };
    if let Some(m) = args.output_len {
        // One draw per prompt, this shard's prompts after the others'.
        let mut draws = rng::stream(args.seed, rng::PURPOSE_OUTPUT_LENGTHS);
        if !m.is_fixed() {
            for _ in 0..shard.index as usize * prompts.len() {
                m.draw(&mut draws);
            }
        }
        for p in &mut prompts {
            p.output_len = Some(m.draw(&mut draws));
        }
    }
    if args.cache_bust && args.input_len.is_none() {
        // A dataset's or --prompt's prompts get their unique first word
        // here (synthetic ones have it already).
        // One prompt per request (cycled up to the schedule's count, at
        // most SYNTHETIC_MAX_PROMPTS), each with its own word.
        let want = (expected_requests(args, load, shard).ceil().max(1.0) as usize)
            .min(SYNTHETIC_MAX_PROMPTS)
            .max(prompts.len());
        let mut all = Vec::with_capacity(want);
        while all.len() < want {
            let take = (want - all.len()).min(prompts.len());
            all.extend_from_slice(&prompts[..take]);
        }
        prompts = all;
        let nonce = run_nonce();
        let first = shard.index as u64 * prompts.len() as u64;
        for (i, p) in prompts.iter_mut().enumerate() {
            bust(p, nonce, first + i as u64, &counter);
        }
    }
    let addr = target.resolve()?;
    let mut headers = vec![
        "Content-Type: application/json".to_string(),
        "Accept: text/event-stream".to_string(),
    ];
    if let Some(k) = &args.api_key {
        headers.push(format!("Authorization: Bearer {k}"));
    }
    headers.extend(args.headers.iter().cloned());
    let patched_model = patches
        .iter()
        .rev()
        .find_map(|p| p.get("model").and_then(serde_json::Value::as_str));
    let (model, model_source) = match (&args.model, patched_model) {
        (Some(m), _) => (m.clone(), "--model"),
        (None, Some(m)) => (m.to_string(), "body"),
        (None, None) => {
            let path = models_path(&target.path);
            let auth: Vec<String> = headers[2..].to_vec();
            let m = super::discover::discover(addr, &target.authority(), &path, &auth, tls)?;
            eprint_once(format!("metronome: model: {m} (from {path})"));
            (m, "/v1/models")
        }
    };
    let spec = BodySpec {
        model: model.clone(),
        endpoint,
        max_tokens_field: match args.max_tokens_field {
            MaxTokensFieldArg::MaxCompletionTokens => MaxTokensField::MaxCompletionTokens,
            MaxTokensFieldArg::MaxTokens => MaxTokensField::MaxTokens,
        },
        ignore_eos: args.ignore_eos,
        patches,
    };
    let method = args.method.as_deref().unwrap_or("POST");
    let mut requests = Vec::with_capacity(prompts.len());
    for p in &prompts {
        let b = openai_body(&spec, p, p.output_len.unwrap_or(args.max_tokens))?;
        requests.push(encode(&target, method, &headers, Some(&b)));
    }
    if let Some(from) = completed_from {
        eprint_once(format!(
            "metronome: posting to {}://{}{} (the URL's path {from} completed)",
            if target.tls { "https" } else { "http" },
            target.authority(),
            target.path
        ));
    }
    Ok(OpenAiRequests {
        requests,
        addr,
        workload: Workload {
            model,
            model_source,
            endpoint: target.path.clone(),
            source,
            counted_by: counter.name(),
            input_tokens: prompts.iter().map(|p| p.input_tokens).collect(),
        },
        turns: sessions,
        table,
    })
}

/// Prints `line` on stderr unless this process printed it before: what
/// the model discovery found and how the URL was completed are the same
/// for every step of a sweep (and its `--auto` probes), so they print once.
fn eprint_once(line: String) {
    static PRINTED: std::sync::Mutex<BTreeSet<String>> = std::sync::Mutex::new(BTreeSet::new());
    let mut printed = PRINTED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !printed.contains(&line) {
        eprintln!("{line}");
        printed.insert(line);
    }
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
        other => format!("invalid run: {other}"),
    })
}

/// About how many requests this shard's schedule offers over the whole run
/// (1,024 for a closed loop): how many distinct prompts to build.
fn expected_requests(args: &RunArgs, load: &Load, shard: &Shard) -> f64 {
    match args.closed {
        Some(_) => 1024.0,
        None => {
            // What the schedule offers over the whole run, this shard's part.
            let end = ns(args.warmup).saturating_add(load.duration_ns);
            let whole = match load.profile() {
                metronome_core::plan::Profile::Steady => load.rate * end as f64 / 1e9,
                p => metronome_core::plan::Plan {
                    profile: p,
                    rate: load.rate,
                    warmup_ns: 0,
                    duration_ns: end,
                    ..metronome_core::plan::example_plan()
                }
                .offered_between(0, end),
            };
            whole / f64::from(shard.count)
        }
    }
}

/// A number this run alone uses (`--cache-bust`): the wall clock's ns
/// mixed with the process id, so two runs (and two shards) differ.
fn run_nonce() -> u64 {
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    rng::child_seed(ns, u64::from(std::process::id()))
}

/// Puts prompt `index`'s unique word in front of it (`--cache-bust`): in
/// front of the text, or of the first message's text content (a system
/// message of its own when that content is not text).
fn bust(p: &mut Prompt, nonce: u64, index: u64, counter: &Counter) {
    let word = workload::bust_word(nonce, index);
    match &mut p.input {
        Input::Text(t) => {
            *t = format!("{word} {t}");
            p.input_tokens = counter.count(t);
        }
        Input::Messages(m) => {
            match m.first_mut().and_then(|f| f.get_mut("content")) {
                Some(serde_json::Value::String(c)) => *c = format!("{word} {c}"),
                _ => m.insert(0, serde_json::json!({"role": "system", "content": word})),
            }
            p.input_tokens = workload::message_tokens(m, counter);
        }
    }
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

fn ns(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

/// The core [`Plan`] of a run: the arguments and what [`prepare`] derived
/// from them; `requests` are `p.requests` as slices.
pub(super) fn build<'a>(
    args: &RunArgs,
    p: &'a Prepared,
    requests: &'a [&'a [u8]],
    h2: Option<&'a [metronome_core::plan::H2Request<'a>]>,
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
        input_tokens: p.workload.as_ref().map_or(&[], Workload::input_tokens),
        arrival: p.arrival,
        rate: p.load.rate,
        profile: p.load.profile(),
        seed: args.seed,
        shard: p.shard,
        duration_ns: p.load.duration_ns,
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
        warm_up: if h2.is_some() {
            WarmUp::Check
        } else {
            warm_up(args.warm_up, requests)
        },
        turns: p.turns.as_ref().map_or(Turns::NONE, |t| Turns {
            sessions: t.sessions,
            next: &t.next,
            think_ns: t.think_ns,
        }),
        // Exact samples of the peers' per-request metrics, only for the
        // views asked (a plain run reserves nothing for them).
        http2: h2.map(|requests| metronome_core::plan::Http2 {
            requests,
            max_streams: args.max_streams.unwrap_or(0),
        }),
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

    fn workload(tokens: &[u32]) -> Workload {
        Workload {
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

    #[test]
    fn shards_start_their_prompt_cycle_apart() {
        let rotated = |index, count| {
            let mut p: Vec<u32> = (0..6).collect();
            rotate_for_shard(&mut p, &Shard { index, count });
            p
        };
        assert_eq!(rotated(0, 1), [0, 1, 2, 3, 4, 5]);
        assert_eq!(rotated(1, 2), [3, 4, 5, 0, 1, 2]);
        assert_eq!(rotated(2, 3), [4, 5, 0, 1, 2, 3]);
        let mut one = vec!["only"];
        rotate_for_shard(&mut one, &Shard { index: 3, count: 4 });
        assert_eq!(one, ["only"]);
    }
}
