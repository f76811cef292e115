//! What counts a prompt's tokens: the word proxy (the default), or a
//! model's own tokenizer (`--tokenizer FILE`, a Hugging Face
//! `tokenizer.json` read with the `tokenizers` crate, as guidellm and
//! aiperf count with the same files). Used before the clock only: for
//! synthetic prompt lengths, dataset filtering and the report's input-token
//! counts.

use std::path::Path;

use crate::UsageError;

/// The tokenizer proxy: whitespace-separated words.
///
/// A word of common English is one token in the GPT-2, Llama and Qwen BPE
/// vocabularies more often than not, but punctuation, numbers and rare
/// words split into several, so real token counts of natural text run
/// higher (about 1.3 tokens per word for English prose). The synthetic
/// prompts use only [`VOCABULARY`](super::workload::VOCABULARY), for
/// which the proxy is close.
///
/// # Example
/// ```
/// use metronome::run::tokens::count_tokens;
/// assert_eq!(count_tokens("  Write a\thaiku\nabout time. "), 5);
/// assert_eq!(count_tokens(""), 0);
/// ```
pub fn count_tokens(text: &str) -> u32 {
    u32::try_from(text.split_whitespace().count()).unwrap_or(u32::MAX)
}

/// A token counter.
pub enum Counter {
    /// Whitespace-separated words ([`count_tokens`]).
    Words,
    /// A Hugging Face tokenizer; special tokens are not added (the count
    /// of the text itself, as vLLM's bench and aiperf count prompts).
    Tokenizer {
        /// The file it was read from, for the report.
        path: String,
        /// The tokenizer.
        tokenizer: Box<tokenizers::Tokenizer>,
    },
}

impl Counter {
    /// Reads a `tokenizer.json`.
    ///
    /// # Errors
    /// A [`UsageError`] naming the file when it cannot be read or is not
    /// a tokenizer.
    pub fn load(path: &Path) -> Result<Counter, UsageError> {
        let tokenizer = tokenizers::Tokenizer::from_file(path).map_err(|e| {
            UsageError(format!(
                "--tokenizer {}: not a Hugging Face tokenizer.json ({e})",
                path.display()
            ))
        })?;
        Ok(Counter::Tokenizer {
            path: path.display().to_string(),
            tokenizer: Box::new(tokenizer),
        })
    }

    /// What counts, for the report: `words` or `tokenizer FILE`.
    pub fn name(&self) -> String {
        match self {
            Counter::Words => "words".into(),
            Counter::Tokenizer { path, .. } => format!("tokenizer {path}"),
        }
    }

    /// The tokens of `text`.
    pub fn count(&self, text: &str) -> u32 {
        match self {
            Counter::Words => count_tokens(text),
            Counter::Tokenizer { tokenizer, .. } => tokenizer
                .encode_fast(text, false)
                .map_or(0, |e| u32::try_from(e.len()).unwrap_or(u32::MAX)),
        }
    }

    /// `text` cut to at most `n` tokens, and its count: the words proxy
    /// keeps the first `n` words; a tokenizer keeps the text of the first
    /// `n` token ids, cut again (one id at a time) while its re-encoding is
    /// longer, so the count is exact and at most `n`.
    pub fn fit(&self, text: &str, n: u32) -> (String, u32) {
        match self {
            Counter::Words => {
                let words: Vec<&str> = text.split_whitespace().take(n as usize).collect();
                (words.join(" "), words.len() as u32)
            }
            Counter::Tokenizer { tokenizer, .. } => {
                let Ok(enc) = tokenizer.encode_fast(text, false) else {
                    return (String::new(), 0);
                };
                let ids = enc.get_ids();
                let mut keep = ids.len().min(n as usize);
                loop {
                    let cut = if keep == ids.len() {
                        text.to_string()
                    } else {
                        tokenizer.decode(&ids[..keep], false).unwrap_or_default()
                    };
                    let c = self.count(&cut);
                    if c as usize <= n as usize || keep == 0 {
                        return (cut, c);
                    }
                    keep -= 1;
                }
            }
        }
    }
}

impl std::fmt::Debug for Counter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}
