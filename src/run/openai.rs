//! The `--openai` requests: the endpoint, the prompts (given, from a file
//! or dataset, synthetic, conversations, a Mooncake trace), the model
//! (discovered when not given) and the bodies, built before the clock.

use std::collections::BTreeSet;

use metronome_core::rng;
use metronome_core::schedule::Shard;

use super::conversation::{self, Sessions};
use super::lengths::Length;
use super::ns;
use super::profile::Load;
use super::request::{
    complete_path, encode, models_path, openai_body, BodySpec, Endpoint, MaxTokensField, Target,
};
use super::tokens::Counter;
use super::workload::{self, Input, Prompt, Synthetic};
use crate::cli::{EndpointArg, MaxTokensFieldArg, RunArgs};
use crate::report::workload::{TokenDist, Workload};
use crate::UsageError;

/// The prompt a run sends when none is given.
const DEFAULT_PROMPT: &str = "Write a haiku about a metronome.";
/// Synthetic prompts are built for every request of the schedule (so none
/// repeats) up to this many, and this many bytes of request in all.
const SYNTHETIC_MAX_PROMPTS: usize = 100_000;
const SYNTHETIC_MAX_BYTES: usize = 256 << 20;

/// What the `--openai` requests ask, for the report.
pub(super) struct OpenAiPlan {
    pub(super) model: String,
    pub(super) model_source: &'static str,
    pub(super) endpoint: String,
    pub(super) source: String,
    /// What counted the input tokens: `words` or `tokenizer FILE`.
    pub(super) counted_by: String,
    /// Proxy input tokens of `requests[i]`.
    pub(super) input_tokens: Vec<u32>,
}

impl OpenAiPlan {
    /// The report's `workload`: input tokens of every measured request
    /// sent (every turn of a conversation; the ledger records them at each
    /// send from [`Plan::input_tokens`], as [`OpenAiPlan::input_tokens`]
    /// gives them), output tokens per successful stream, both from the
    /// recorder.
    pub(super) fn report(&self, rec: &metronome_core::measure::Recorder) -> Workload {
        Workload {
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
pub(super) struct OpenAiRequests {
    pub(super) requests: Vec<Vec<u8>>,
    pub(super) addr: std::net::SocketAddr,
    pub(super) workload: OpenAiPlan,
    /// Conversations: the layout of the requests.
    pub(super) turns: Option<Sessions>,
    /// A Mooncake trace: each line's own request (line `g` sends request `g`).
    pub(super) table: Option<Vec<u32>>,
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
pub(super) fn openai_requests(
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
            // In the run's protocol, with its TLS settings and headers.
            let wire = if args.http3 {
                super::discover::Wire::Http3
            } else if args.http2 || args.http2_prior_knowledge {
                super::discover::Wire::Http2
            } else {
                super::discover::Wire::Http1
            };
            let m = super::discover::discover(addr, &target.authority(), &path, &auth, tls, wire)?;
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
        workload: OpenAiPlan {
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

#[cfg(test)]
mod tests {
    use super::*;

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
