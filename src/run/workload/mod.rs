//! Prompt workloads for `--openai`: what each request asks, decided before
//! the run.
//!
//! Three sources, all turned into a list of [`Prompt`]s that
//! `run::plan` encodes into request bytes before the clock starts
//! (the engines only ever send pre-built bytes):
//!
//! - `--prompt TEXT` (repeatable), or the built-in prompt;
//! - `--dataset FILE`: JSON Lines (`{"prompt": ...}` or `{"messages": [...]}`
//!   with an optional output length; aiperf's and guidellm's files too), or
//!   ShareGPT's conversation format ([`parse_dataset`]);
//! - `--input-len N` (or a distribution): synthetic prompts of N words
//!   drawn from [`VOCABULARY`] by the seeded generator ([`synthetic`]),
//!   with an optional shared prefix (`--prefix-len`, `--prefix-share`) or
//!   a unique first word (`--cache-bust`) for prefix-cache tests.
//!
//! Token counts are a proxy, not a model's tokenizer: [`count_tokens`](crate::run::tokens::count_tokens)
//! counts whitespace-separated words. docs/report.md says what that means
//! for the report's input-token distribution.

mod dataset;
mod synthetic;

pub(crate) use dataset::{entry_prompt, for_each_line, output_len_field, prompt_text};
pub use dataset::{load_dataset, parse_dataset, read_dataset, timing_fields, Dataset};
pub use synthetic::{bust_word, synthetic, synthetic_counted, Synthetic, VOCABULARY};

use serde_json::Value;

use crate::run::tokens::Counter;

/// What one request asks.
#[derive(Clone, Debug, PartialEq)]
pub struct Prompt {
    /// The prompt text, or chat messages as written in the dataset.
    pub input: Input,
    /// Input tokens by the proxy ([`count_tokens`](crate::run::tokens::count_tokens) over the text, or over
    /// every message's text content).
    pub input_tokens: u32,
    /// The output length this prompt asks for (sent as the max-tokens
    /// field), when the source gives one.
    pub output_len: Option<u32>,
}

/// A prompt's input.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    /// Plain text: one user message for chat, `prompt` for completions.
    Text(String),
    /// Chat messages, sent as they are (chat endpoint only).
    Messages(Vec<Value>),
}

/// Tokens of chat messages: those of every message's `content`, a string
/// or a list of `{"type":"text","text":...}` parts, by `counter`.
pub fn message_tokens(messages: &[Value], counter: &Counter) -> u32 {
    let words = |v: &Value| -> u32 {
        match v {
            Value::String(s) => counter.count(s),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .map(|t| counter.count(t))
                .fold(0u32, u32::saturating_add),
            _ => 0,
        }
    };
    messages
        .iter()
        .filter_map(|m| m.get("content"))
        .map(words)
        .fold(0, u32::saturating_add)
}

impl Prompt {
    /// A plain-text prompt, its tokens counted by the proxy.
    ///
    /// # Example
    /// ```
    /// use metronome::run::workload::Prompt;
    /// let p = Prompt::text("one two three", Some(8));
    /// assert_eq!((p.input_tokens, p.output_len), (3, Some(8)));
    /// ```
    pub fn text(text: &str, output_len: Option<u32>) -> Prompt {
        Prompt::counted(text, output_len, &Counter::Words)
    }

    /// A plain-text prompt, its tokens counted by `counter`.
    pub fn counted(text: &str, output_len: Option<u32>, counter: &Counter) -> Prompt {
        Prompt {
            input_tokens: counter.count(text),
            input: Input::Text(text.to_string()),
            output_len,
        }
    }
}
