//! Trace lines as requests: Mooncake's fields (`input_length`,
//! `output_length`, `hash_ids`) build each line's prompt for `--openai`,
//! and a `name` picks a `--requests` mix's request per line.
//!
//! As aiperf builds Mooncake prompts (`--prompt-input-tokens-block-size`,
//! 512 by default): each hash id stands for one block of
//! [`BLOCK_WORDS`] words, the same words wherever the id appears (drawn
//! from [`VOCABULARY`] by a generator seeded by `--seed` and the id), so
//! lines that share hash ids share those prompt blocks and a server's
//! prefix cache sees the reuse the production trace had. A line's prompt
//! is its blocks in order, the last one cut so the prompt has
//! `input_length` words: `(k - 1) x 512 < input_length <= k x 512` for `k`
//! hash ids. A line without hash ids gets words of its own (seeded by its
//! line number). Words stand in for tokens (the proxy of
//! `docs/openai.md`; each vocabulary word is one token in the common BPE
//! vocabularies).

use std::collections::HashMap;

use metronome_core::rng::{child_seed, Pcg32};
use serde_json::Value;

use crate::run::tokens::Counter;
use crate::run::workload::{Prompt, VOCABULARY};
use crate::UsageError;

/// Words per hash-id block (aiperf's default block size, in tokens).
pub const BLOCK_WORDS: u32 = 512;

/// The purpose of the streams that draw the words of a hash id's block
/// (see `metronome_core::rng`; 8 follows `mix::PURPOSE_MIX`).
pub const PURPOSE_BLOCKS: u64 = 8;

/// The most bytes of prompts a trace may build (its lines' prompts are all
/// encoded before the clock).
const MAX_PROMPT_BYTES: usize = 1 << 30;

/// What one trace line asks for `--openai`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineRequest {
    /// The prompt's length, words.
    pub input_length: u32,
    /// The output length (max tokens), when given.
    pub output_length: Option<u32>,
    /// The shared prompt blocks, in order.
    pub hash_ids: Vec<u64>,
}

/// The fields of each trace line (in the order of the trace's offsets):
/// `Ok(None)` when no line has `input_length` (the trace only times the
/// run).
///
/// # Errors
/// A line (named) whose `input_length` is not a positive integer, whose
/// `output_length` is not one, or whose `hash_ids` is not a list of
/// non-negative integers; or a line without `input_length` in a trace
/// where others have it.
///
/// ```
/// use metronome::run::mooncake::read_lines;
/// let t = "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 20, \"hash_ids\": [7, 9]}\n";
/// let l = read_lines(t).unwrap().unwrap();
/// assert_eq!((l[0].input_length, l[0].output_length, &l[0].hash_ids[..]), (600, Some(20), &[7, 9][..]));
/// assert_eq!(read_lines("{\"timestamp\": 0}\n").unwrap(), None);
/// ```
pub fn read_lines(text: &str) -> Result<Option<Vec<LineRequest>>, String> {
    let mut out = Vec::new();
    let mut any = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let n = i + 1;
        let v: Value =
            serde_json::from_str(line).map_err(|e| format!("line {n} is not JSON ({e})"))?;
        let count = |key: &str| -> Result<Option<u32>, String> {
            match v.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(x) => x
                    .as_u64()
                    .filter(|&k| k >= 1)
                    .and_then(|k| u32::try_from(k).ok())
                    .map(Some)
                    .ok_or_else(|| format!("line {n}: {key} must be a positive integer (got {x})")),
            }
        };
        let input = count("input_length")?;
        let output_length = count("output_length")?;
        let hash_ids = match v.get("hash_ids") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(Value::as_u64)
                .collect::<Option<Vec<u64>>>()
                .ok_or_else(|| format!("line {n}: hash_ids must be a list of integers"))?,
            Some(x) => return Err(format!("line {n}: hash_ids must be a list (got {x})")),
        };
        any |= input.is_some();
        out.push((n, input, output_length, hash_ids));
    }
    if !any {
        return Ok(None);
    }
    out.into_iter()
        .map(|(n, input, output_length, hash_ids)| {
            let input_length = input.ok_or_else(|| {
                format!("line {n} has no input_length (other lines have one: give every line one)")
            })?;
            let k = hash_ids.len() as u64;
            if k > 0
                && !((k - 1) * u64::from(BLOCK_WORDS) < u64::from(input_length)
                    && u64::from(input_length) <= k * u64::from(BLOCK_WORDS))
            {
                return Err(format!(
                    "line {n}: input_length {input_length} does not fit its {k} hash_ids \
                     ({}-{} with blocks of {BLOCK_WORDS})",
                    (k - 1) * u64::from(BLOCK_WORDS) + 1,
                    k * u64::from(BLOCK_WORDS)
                ));
            }
            Ok(LineRequest {
                input_length,
                output_length,
                hash_ids,
            })
        })
        .collect::<Result<Vec<_>, String>>()
        .map(Some)
}

/// `n` words drawn from [`VOCABULARY`] by `rng`.
fn words(rng: &mut Pcg32, n: u32) -> Vec<&'static str> {
    (0..n)
        .map(|_| VOCABULARY[rng.below(VOCABULARY.len() as u64) as usize])
        .collect()
}

/// Each line's prompt (see the module docs), its tokens counted by
/// `counter`, asking `output_length` (when given).
///
/// # Errors
/// The prompts would take more than 1 GiB.
///
/// ```
/// use metronome::run::mooncake::{prompts, LineRequest};
/// use metronome::run::tokens::Counter;
/// use metronome::run::workload::Input;
/// let l = |n, ids: &[u64]| LineRequest { input_length: n, output_length: None, hash_ids: ids.to_vec() };
/// let p = prompts(&[l(600, &[1, 2]), l(100, &[1]), l(3, &[])], 42, &Counter::Words).unwrap();
/// let text = |i: usize| match &p[i].input { Input::Text(t) => t.clone(), _ => unreachable!() };
/// assert_eq!(p[0].input_tokens, 600);
/// // Line 1 is the first 100 words of block 1, which line 0 starts with.
/// assert!(text(0).starts_with(&text(1)));
/// assert_eq!(p[2].input_tokens, 3);
/// ```
pub fn prompts(
    lines: &[LineRequest],
    seed: u64,
    counter: &Counter,
) -> Result<Vec<Prompt>, UsageError> {
    let base = child_seed(seed, PURPOSE_BLOCKS);
    let mut blocks: HashMap<u64, Vec<&'static str>> = HashMap::new();
    let mut bytes = 0usize;
    let mut out = Vec::with_capacity(lines.len());
    for (i, l) in lines.iter().enumerate() {
        let mut text: Vec<&'static str> = Vec::with_capacity(l.input_length as usize);
        if l.hash_ids.is_empty() {
            // Words of its own: a stream no hash id uses (the high bit set).
            let mut rng = Pcg32::new(base, (1 << 63) | i as u64);
            text = words(&mut rng, l.input_length);
        } else {
            for (j, &h) in l.hash_ids.iter().enumerate() {
                let block = blocks.entry(h).or_insert_with(|| {
                    let mut rng = Pcg32::new(base, h & !(1 << 63));
                    words(&mut rng, BLOCK_WORDS)
                });
                let take = if j + 1 == l.hash_ids.len() {
                    l.input_length as usize - j * BLOCK_WORDS as usize
                } else {
                    BLOCK_WORDS as usize
                };
                text.extend_from_slice(&block[..take]);
            }
        }
        let joined = text.join(" ");
        bytes += joined.len();
        if bytes > MAX_PROMPT_BYTES {
            return Err(UsageError(format!(
                "the trace's prompts pass 1 GiB by line {} (every prompt is built before the \
                 clock): cut the trace, or replay part of it with --duration",
                i + 1
            )));
        }
        out.push(Prompt::counted(&joined, l.output_length, counter));
    }
    Ok(out)
}

/// For a `--requests`/`--targets` mix replayed by a trace whose lines
/// carry `"name"`: the request each line sends (the first request of that
/// name). `Ok(None)` when no line names one.
///
/// # Errors
/// A line (named) whose name is not a string or names no request; a line
/// without a name in a trace where others have one.
///
/// ```
/// use metronome::run::mooncake::line_table;
/// let names = ["home".to_string(), "search".to_string()];
/// let t = "{\"timestamp\":0,\"name\":\"search\"}\n{\"timestamp\":1,\"name\":\"home\"}\n";
/// assert_eq!(line_table(t, &names, &[0, 1]).unwrap(), Some(vec![1, 0]));
/// assert!(line_table("{\"timestamp\":0,\"name\":\"x\"}\n", &names, &[0, 1]).unwrap_err().contains("line 1"));
/// ```
pub fn line_table(
    text: &str,
    names: &[String],
    name_of: &[u32],
) -> Result<Option<Vec<u32>>, String> {
    let mut out = Vec::new();
    let mut any = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let n = i + 1;
        let v: Value =
            serde_json::from_str(line).map_err(|e| format!("line {n} is not JSON ({e})"))?;
        let name = match v.get("name") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(x) => return Err(format!("line {n}: name must be a string (got {x})")),
        };
        any |= name.is_some();
        out.push((n, name));
    }
    if !any {
        return Ok(None);
    }
    out.into_iter()
        .map(|(n, name)| {
            let name = name.ok_or_else(|| {
                format!("line {n} has no name (other lines have one: give every line one)")
            })?;
            let row = names
                .iter()
                .position(|x| *x == name)
                .ok_or_else(|| format!("line {n}: no request is named '{name}'"))?;
            name_of
                .iter()
                .position(|&r| r as usize == row)
                .map(|i| i as u32)
                .ok_or_else(|| format!("line {n}: no request is named '{name}'"))
        })
        .collect::<Result<Vec<_>, String>>()
        .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks are shared exactly: the same id gives the same words in any
    /// line and position, other ids other words; the seed changes them.
    #[test]
    fn shared_ids_share_their_words() {
        let l = |n, ids: &[u64]| LineRequest {
            input_length: n,
            output_length: Some(5),
            hash_ids: ids.to_vec(),
        };
        let w = &Counter::Words;
        let p = prompts(&[l(1024, &[1, 2]), l(1000, &[3, 2]), l(512, &[2])], 7, w).unwrap();
        let words = |i: usize| -> Vec<String> {
            match &p[i].input {
                crate::run::workload::Input::Text(t) => t.split(' ').map(String::from).collect(),
                _ => unreachable!(),
            }
        };
        let (a, b, c) = (words(0), words(1), words(2));
        assert_eq!((a.len(), b.len(), c.len()), (1024, 1000, 512));
        // Block 2: the second half of line 0, all of line 2, and the start
        // of line 1's second block (cut to 1000 - 512 = 488 words).
        assert_eq!(a[512..], c[..]);
        assert_eq!(b[512..], c[..488]);
        assert_ne!(a[..512], b[..512]);
        assert_eq!(p[0].output_len, Some(5));
        let other = prompts(&[l(512, &[2])], 8, w).unwrap();
        assert_ne!(other[0].input, p[2].input);
    }

    #[test]
    fn lines_are_checked_and_named() {
        let e = read_lines("{\"input_length\": 10}\n{\"timestamp\": 1}\n").unwrap_err();
        assert!(e.starts_with("line 2 has no input_length"), "{e}");
        let e = read_lines("{\"input_length\": 1000, \"hash_ids\": [1]}\n").unwrap_err();
        assert!(e.contains("does not fit its 1 hash_ids (1-512"), "{e}");
        let e = read_lines("{\"input_length\": 0}\n").unwrap_err();
        assert!(e.contains("input_length must be a positive integer"), "{e}");
        let e = read_lines("{\"input_length\": 3, \"hash_ids\": [\"a\"]}\n").unwrap_err();
        assert!(e.contains("hash_ids must be a list of integers"), "{e}");
    }
}
