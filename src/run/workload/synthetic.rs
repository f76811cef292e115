//! Synthetic prompts (`--input-len`, `--prefix-len`, `--prefix-share`,
//! `--cache-bust`): words drawn from [`VOCABULARY`] by the seeded
//! generator, the same for the same seed whatever the shard split.

use metronome_core::rng;

use super::{Input, Prompt};
use crate::run::lengths::Length;
use crate::run::tokens::Counter;

/// The words synthetic prompts are made of: 256 short, common English
/// words, each a single token (with its leading space) in the common BPE
/// vocabularies, so N words is close to N tokens.
#[rustfmt::skip]
pub const VOCABULARY: [&str; 256] = [
    "the", "of", "and", "to", "in", "is", "was", "for", "on", "are", "with", "as", "at", "be",
    "by", "this", "had", "not", "but", "from", "or", "have", "an", "they", "which", "one", "you",
    "were", "her", "all", "she", "there", "would", "their", "we", "him", "been", "has", "when",
    "who", "will", "more", "no", "if", "out", "so", "said", "what", "up", "its", "about", "into",
    "than", "them", "can", "only", "other", "new", "some", "could", "time", "these", "two", "may",
    "then", "do", "first", "any", "my", "now", "such", "like", "our", "over", "man", "me", "even",
    "most", "made", "after", "also", "did", "many", "before", "must", "through", "back", "years",
    "where", "much", "your", "way", "well", "down", "should", "because", "each", "just", "those",
    "people", "how", "too", "little", "state", "good", "very", "make", "world", "still", "own",
    "see", "men", "work", "long", "get", "here", "between", "both", "life", "being", "under",
    "never", "day", "same", "another", "know", "while", "last", "might", "us", "great", "old",
    "year", "off", "come", "since", "against", "go", "came", "right", "used", "take", "three",
    "house", "use", "during", "without", "again", "place", "around", "however", "home", "small",
    "found", "thought", "went", "say", "part", "once", "high", "upon", "school", "every", "does",
    "got", "left", "number", "course", "war", "until", "always", "away", "something", "fact",
    "water", "though", "less", "public", "put", "think", "almost", "hand", "enough", "far", "took",
    "head", "yet", "system", "better", "set", "told", "nothing", "night", "end", "why", "called",
    "eyes", "find", "going", "look", "asked", "later", "knew", "point", "next", "city", "business",
    "give", "group", "toward", "young", "days", "let", "room", "side", "given", "present",
    "several", "order", "rather", "second", "face", "per", "among", "form", "often", "things",
    "looked", "early", "white", "case", "become", "large", "big", "need", "four", "within", "felt",
    "along", "children", "saw", "best", "ever", "least", "power", "light", "thing", "seemed",
    "family", "want", "mind", "country", "area", "others", "done", "turned",
];

/// How synthetic prompts are drawn: `--input-len`, `--prefix-len`,
/// `--prefix-share`, `--cache-bust`.
#[derive(Clone, Debug, PartialEq)]
pub struct Synthetic {
    /// Each prompt's own words: fixed, or drawn per prompt from
    /// `stream(seed, PURPOSE_LENGTHS)`.
    pub input: Length,
    /// Words of a prefix shared by a fraction of the prompts (0: none):
    /// the same words, drawn once from `stream(seed, PURPOSE_PREFIX)`,
    /// in front of every prompt that carries it, so a server's prefix
    /// cache can serve them.
    pub prefix_len: u32,
    /// The fraction of prompts that carry the shared prefix, each chosen
    /// by one `next_f64() < share` of the prefix stream after its words.
    pub prefix_share: f64,
    /// A word unique to the prompt and the run in front of every prompt
    /// (`cache_bust` names the run's part), so no prefix cache serves
    /// any part of it. `None`: no such word.
    pub cache_bust: Option<u64>,
}

impl Synthetic {
    /// Fixed-length prompts of `words` words, nothing shared or busted.
    pub fn words(words: u32) -> Synthetic {
        Synthetic {
            input: Length::Fixed(words),
            prefix_len: 0,
            prefix_share: 0.0,
            cache_bust: None,
        }
    }

    /// Words per prompt on average, for sizing storage.
    pub fn mean_words(&self) -> f64 {
        self.input.mean() + f64::from(self.prefix_len) * self.prefix_share
    }
}

/// The word that makes prompt `index` of the run with nonce `nonce` unique
/// (`--cache-bust`): one word, so one token by the proxy.
pub fn bust_word(nonce: u64, index: u64) -> String {
    format!("{nonce:x}-{index}")
}

/// Synthetic prompts `first..first + count` of one endless sequence: each
/// of `spec.input` words (a fixed count, or drawn per prompt by
/// `stream(seed, PURPOSE_LENGTHS)`) drawn uniformly from [`VOCABULARY`] by
/// `stream(seed, PURPOSE_PROMPTS)` (`below(256)` per word, prompt after
/// prompt); with `spec.prefix_len`, the shared prefix in front of the
/// prompts chosen to carry it; with `spec.cache_bust`, a unique word in
/// front of all. Each asks for `output_len` tokens. The same seed gives the
/// same prompts; shard K of N of a run takes its own slice (`first = K *
/// count`), so shards never send the same prompts.
///
/// # Example
/// ```
/// use metronome::run::workload::{synthetic, Synthetic};
/// let spec = Synthetic::words(5);
/// let a = synthetic(7, 0, 3, &spec, Some(16));
/// assert_eq!(a, synthetic(7, 0, 3, &spec, Some(16)));
/// assert_eq!((a[0].input_tokens, a[0].output_len), (5, Some(16)));
/// assert_ne!(a, synthetic(8, 0, 3, &spec, Some(16)));
/// assert_eq!(synthetic(7, 1, 2, &spec, Some(16)), a[1..]);
/// ```
pub fn synthetic(
    seed: u64,
    first: usize,
    count: usize,
    spec: &Synthetic,
    output_len: Option<u32>,
) -> Vec<Prompt> {
    synthetic_counted(seed, first, count, spec, output_len, &Counter::Words)
}

/// [`synthetic`] with lengths in `counter`'s tokens: with a tokenizer,
/// each part (the prompt's own words, the shared prefix) is cut to exactly
/// its length in tokens ([`Counter::fit`]), padded first when its words
/// make fewer tokens (with words from a stream of the prompt's own,
/// `Pcg32::new(child_seed(seed, PURPOSE_PROMPTS), index)`), and the
/// prompt's count is the tokenizer's count of its whole text.
pub fn synthetic_counted(
    seed: u64,
    first: usize,
    count: usize,
    spec: &Synthetic,
    output_len: Option<u32>,
    counter: &Counter,
) -> Vec<Prompt> {
    let mut lengths = rng::stream(seed, rng::PURPOSE_LENGTHS);
    let mut draw = rng::stream(seed, rng::PURPOSE_PROMPTS);
    let mut shared = rng::stream(seed, rng::PURPOSE_PREFIX);
    let words = VOCABULARY.len() as u64;
    let tokenized = matches!(counter, Counter::Tokenizer { .. });
    // Pads `text` with words of `pad` until it has at least `n` tokens,
    // then cuts it to exactly `n` (a tokenizer only).
    let fit = |text: String, n: u32, pad: &mut rng::Pcg32| -> String {
        if !tokenized {
            return text;
        }
        let mut text = text;
        while counter.count(&text) < n {
            text.push(' ');
            text.push_str(VOCABULARY[pad.below(words) as usize]);
        }
        counter.fit(&text, n).0
    };
    let prefix: Vec<&str> = (0..spec.prefix_len)
        .map(|_| VOCABULARY[shared.below(words) as usize])
        .collect();
    let prefix = fit(
        prefix.join(" "),
        spec.prefix_len,
        &mut rng::Pcg32::new(rng::child_seed(seed, rng::PURPOSE_PREFIX), u64::MAX),
    );
    // Skip what the prompts before `first` drew.
    for _ in 0..first {
        for _ in 0..spec.input.draw(&mut lengths) {
            draw.below(words);
        }
        if spec.prefix_len > 0 {
            shared.next_f64();
        }
    }
    (first..first + count)
        .map(|index| {
            let own = spec.input.draw(&mut lengths);
            let carries = spec.prefix_len > 0 && shared.next_f64() < spec.prefix_share;
            let mut text = String::with_capacity((own as usize + 2) * 7);
            for _ in 0..own {
                text.push_str(VOCABULARY[draw.below(words) as usize]);
                text.push(' ');
            }
            text.pop();
            let mut pad =
                rng::Pcg32::new(rng::child_seed(seed, rng::PURPOSE_PROMPTS), index as u64);
            let mut text = fit(text, own, &mut pad);
            let mut added = 0;
            if carries {
                text = format!("{prefix} {text}");
                added += spec.prefix_len;
            }
            if let Some(n) = spec.cache_bust {
                text = format!("{} {text}", bust_word(n, index as u64));
                added += 1;
            }
            Prompt {
                input_tokens: if tokenized {
                    counter.count(&text)
                } else {
                    own + added
                },
                input: Input::Text(text),
                output_len,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::tokens::count_tokens;

    #[test]
    fn synthetic_prompts_are_golden_for_a_seed() {
        let p = synthetic(42, 0, 2, &Synthetic::words(6), Some(3));
        let texts: Vec<&str> = p
            .iter()
            .map(|p| match &p.input {
                Input::Text(t) => t.as_str(),
                Input::Messages(_) => unreachable!(),
            })
            .collect();
        // Checked against an independent Python PCG32 (pcg32_srandom_r seeding,
        // SplitMix64 child seed, bounded draw) over the same vocabulary.
        assert_eq!(
            texts,
            [
                "put when found found area does",
                "many much its even seemed family"
            ]
        );
        for (p, t) in p.iter().zip(&texts) {
            assert_eq!(count_tokens(t), 6);
            assert_eq!((p.input_tokens, p.output_len), (6, Some(3)));
        }
        // The first word is VOCABULARY[below(256)] of the prompts stream.
        let first = rng::stream(42, rng::PURPOSE_PROMPTS).below(256) as usize;
        assert!(texts[0].starts_with(&format!("{} ", VOCABULARY[first])));
    }

    fn text(p: &Prompt) -> &str {
        match &p.input {
            Input::Text(t) => t,
            Input::Messages(_) => unreachable!(),
        }
    }

    /// Drawn lengths, a shared prefix and busting keep every rule: the
    /// token count is the text's, a shard's slice is the whole's, the
    /// prefix is the same words wherever it is carried, and it is carried
    /// by exactly the prompts the prefix stream chose.
    #[test]
    fn synthetic_lengths_prefix_and_busting() {
        let spec = Synthetic {
            input: "uniform:3..9".parse().unwrap(),
            prefix_len: 4,
            prefix_share: 0.5,
            cache_bust: None,
        };
        let all = synthetic(9, 0, 200, &spec, None);
        assert_eq!(synthetic(9, 37, 50, &spec, None), all[37..87]);
        for p in &all {
            assert_eq!(p.input_tokens, count_tokens(text(p)));
        }
        // The prefix: the prefix stream's first 4 words.
        let mut shared = rng::stream(9, rng::PURPOSE_PREFIX);
        let prefix: Vec<&str> = (0..4)
            .map(|_| VOCABULARY[shared.below(256) as usize])
            .collect();
        let prefix = prefix.join(" ") + " ";
        let chosen: Vec<bool> = (0..200).map(|_| shared.next_f64() < 0.5).collect();
        let mut lengths = rng::stream(9, rng::PURPOSE_LENGTHS);
        for (i, p) in all.iter().enumerate() {
            let own = 3 + lengths.below(7) as u32;
            assert_eq!(text(p).starts_with(&prefix), chosen[i], "prompt {i}");
            assert_eq!(
                p.input_tokens,
                own + if chosen[i] { 4 } else { 0 },
                "prompt {i}"
            );
        }
        let carried = chosen.iter().filter(|c| **c).count();
        assert!((80..=120).contains(&carried), "{carried} of 200");
        // Busting: a unique first word per prompt, one more token.
        let bust = Synthetic {
            cache_bust: Some(0xabc),
            ..Synthetic::words(5)
        };
        let b = synthetic(1, 10, 30, &bust, None);
        let mut firsts: Vec<&str> = b
            .iter()
            .map(|p| text(p).split(' ').next().unwrap())
            .collect();
        assert_eq!(firsts[0], "abc-10");
        firsts.dedup();
        assert_eq!(firsts.len(), 30);
        assert!(b
            .iter()
            .all(|p| p.input_tokens == 6 && count_tokens(text(p)) == 6));
        // Apart from the word, the prompts are the unbusted ones.
        let plain = synthetic(1, 10, 30, &Synthetic::words(5), None);
        for (b, p) in b.iter().zip(&plain) {
            assert_eq!(text(b).split_once(' ').unwrap().1, text(p));
        }
    }

    #[test]
    fn vocabulary_words_are_distinct_single_words() {
        let mut v = VOCABULARY.to_vec();
        v.sort_unstable();
        v.dedup();
        assert_eq!(v.len(), 256);
        assert!(VOCABULARY.iter().all(|w| count_tokens(w) == 1));
    }
}
