//! Dataset files (`--dataset`): JSON Lines of prompts or messages (with
//! aiperf's and guidellm's field names), and ShareGPT's conversations read
//! as vLLM's bench reads them.

use std::fmt;
use std::path::Path;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::run::tokens::Counter;
use crate::UsageError;

use super::{message_tokens, Input, Prompt};

/// What [`parse_dataset`] read.
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    /// The prompts, in file order.
    pub prompts: Vec<Prompt>,
    /// ShareGPT entries skipped as vLLM's bench skips them: fewer than two
    /// turns, or lengths outside its limits (see [`parse_dataset`]).
    pub skipped: usize,
}

/// vLLM bench's ShareGPT limits (`is_valid_sequence` in
/// vllm/benchmarks/datasets.py), applied with the word proxy: a prompt of
/// at least 4 and at most 1024 tokens, an output of at least 4, at most
/// 2048 together.
const SHAREGPT_MIN_LEN: u32 = 4;
const SHAREGPT_MAX_PROMPT: u32 = 1024;
const SHAREGPT_MAX_TOTAL: u32 = 2048;

/// The output-length fields a dataset line may carry, first found wins:
/// ours, the request's own fields, aiperf's (`output_length`) and
/// guidellm's (`output_tokens_count`, `completion_tokens_count`).
const OUTPUT_FIELDS: [&str; 7] = [
    "output_len",
    "max_tokens",
    "max_completion_tokens",
    "output_tokens",
    "output_length",
    "output_tokens_count",
    "completion_tokens_count",
];

/// The fields that carry a prompt's text: ours and guidellm's (`prompt`),
/// aiperf's single-turn (`text`, or `texts` with one entry).
const TEXT_FIELDS: [&str; 3] = ["prompt", "text", "texts"];

/// aiperf's media fields: metronome sends text only.
const MEDIA_FIELDS: [&str; 6] = ["image", "images", "audio", "audios", "video", "videos"];

/// Reads `--dataset FILE` ([`parse_dataset`]).
///
/// # Errors
/// A [`UsageError`] naming the file: unreadable, not UTF-8, a bad line
/// (with its number), or no usable prompt.
pub fn load_dataset(path: &Path, counter: &Counter) -> Result<Dataset, UsageError> {
    parse_dataset(&read_dataset(path)?, &path.display().to_string(), counter)
}

/// The text of `--dataset FILE`.
///
/// # Errors
/// A [`UsageError`] naming the file: unreadable, or not UTF-8.
pub fn read_dataset(path: &Path) -> Result<String, UsageError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path)
        .map_err(|e| UsageError(format!("cannot read --dataset {name}: {e}")))?;
    String::from_utf8(bytes).map_err(|_| UsageError(format!("--dataset {name} is not UTF-8 text")))
}

/// Parses a dataset: JSON Lines, or one JSON array.
///
/// - **JSON Lines**: one object per non-blank line, with the text as
///   `"prompt"` or `"text"` (a string; or aiperf's `"texts"` with one
///   text) or `"messages"` (an array of chat messages, sent as they are),
///   and optionally the output length (a positive integer) as
///   `"output_len"`, `"max_tokens"`, `"max_completion_tokens"`,
///   `"output_tokens"`, aiperf's `"output_length"` or guidellm's
///   `"output_tokens_count"` / `"completion_tokens_count"`.
/// - **ShareGPT**: a JSON array (or JSON Lines) of
///   `{"conversations": [{"from": "human", "value": ...}, {"from": "gpt",
///   "value": ...}, ...]}`. As in vLLM's bench (`ShareGPTDataset`): entries
///   with fewer than two turns are skipped; the first turn's value is the
///   prompt and the second turn's length is the output length; entries whose
///   prompt has fewer than 4 or more than 1024 tokens, whose output has
///   fewer than 4, or whose sum is above 2048 are skipped (counted with the
///   word proxy here, with the model's tokenizer there).
/// - A JSON array may also hold prompt/messages objects.
///
/// # Errors
/// One line naming `name`, the line (or array entry) number and what is
/// wrong; an empty dataset is an error too.
///
/// # Example
/// ```
/// use metronome::run::workload::{parse_dataset, Input};
/// use metronome::run::tokens::Counter;
/// let d = parse_dataset("{\"prompt\":\"a b c\",\"output_len\":5}\n\n{\"prompt\":\"d\"}\n", "f", &Counter::Words).unwrap();
/// assert_eq!(d.prompts.len(), 2);
/// assert_eq!((d.prompts[0].input_tokens, d.prompts[0].output_len), (3, Some(5)));
/// let e = parse_dataset("{\"prompt\":\"a\"}\n{oops\n", "f", &Counter::Words).unwrap_err();
/// assert!(e.0.starts_with("--dataset f line 2: not JSON"), "{e}");
/// ```
pub fn parse_dataset(text: &str, name: &str, counter: &Counter) -> Result<Dataset, UsageError> {
    let mut prompts = Vec::new();
    let mut skipped = 0;
    let mut take = |entry: Option<Prompt>| match entry {
        Some(p) => prompts.push(p),
        None => skipped += 1,
    };
    if text.trim_start().starts_with('[') {
        let entries: Vec<Lean> = serde_json::from_str(text).map_err(|e| {
            UsageError(format!(
                "--dataset {name}: not a JSON array of entries ({e})"
            ))
        })?;
        for (i, entry) in entries.iter().enumerate() {
            let at = format!("--dataset {name} entry {}", i + 1);
            take(entry_prompt(&entry.0, &at, counter)?);
        }
    } else {
        for_each_line(text, name, |entry, at| {
            take(entry_prompt(entry, at, counter)?);
            Ok(())
        })?;
    }
    if prompts.is_empty() {
        return Err(UsageError(if skipped > 0 {
            format!(
                "--dataset {name} has no usable prompt: all {skipped} ShareGPT entries were \
                 skipped (fewer than two turns, or lengths outside vLLM bench's limits)"
            )
        } else {
            format!("--dataset {name} is empty: give at least one prompt")
        }));
    }
    Ok(Dataset { prompts, skipped })
}

/// The output length an entry (or a conversation's turn) asks: the first
/// of [`OUTPUT_FIELDS`] it has, a positive integer.
///
/// # Errors
/// The field is there but not a positive integer (named with `at`).
pub(crate) fn output_len_field(
    obj: &serde_json::Map<String, Value>,
    at: &str,
) -> Result<Option<u32>, UsageError> {
    match OUTPUT_FIELDS
        .iter()
        .find_map(|k| obj.get(*k).map(|v| (k, v)))
    {
        None | Some((_, Value::Null)) => Ok(None),
        Some((key, v)) => v
            .as_u64()
            .filter(|&n| n >= 1)
            .and_then(|n| u32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| UsageError(format!("{at}: \"{key}\" must be a positive integer"))),
    }
}

/// Each non-blank line of a JSON Lines dataset as JSON, with where it is
/// (`--dataset NAME line N`) for errors.
///
/// # Errors
/// A line that is not JSON, named.
pub(crate) fn for_each_line(
    text: &str,
    name: &str,
    mut f: impl FnMut(&Value, &str) -> Result<(), UsageError>,
) -> Result<(), UsageError> {
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("--dataset {name} line {}", i + 1);
        let entry: Value =
            serde_json::from_str(line).map_err(|e| UsageError(format!("{at}: not JSON ({e})")))?;
        f(&entry, &at)?;
    }
    Ok(())
}

/// One entry: `Ok(None)` for a ShareGPT entry skipped as vLLM skips it.
pub(crate) fn entry_prompt(
    entry: &Value,
    at: &str,
    counter: &Counter,
) -> Result<Option<Prompt>, UsageError> {
    let Some(obj) = entry.as_object() else {
        return Err(UsageError(format!(
            "{at}: expected an object with \"prompt\", \"messages\" or \"conversations\""
        )));
    };
    if let Some(conv) = obj.get("conversations") {
        return sharegpt(conv, at, counter);
    }
    let output_len = output_len_field(obj, at)?;
    match (prompt_text(obj, at)?, obj.get("messages")) {
        (Some((_, p)), None) => Ok(Some(Prompt::counted(&p, output_len, counter))),
        (None, Some(Value::Array(m))) if !m.is_empty() => {
            if let Some(bad) = m
                .iter()
                .position(|m| !m.is_object() || !m.get("role").is_some_and(Value::is_string))
            {
                return Err(UsageError(format!(
                    "{at}: message {} must be an object with a \"role\" string",
                    bad + 1
                )));
            }
            Ok(Some(Prompt {
                input_tokens: message_tokens(m, counter),
                input: Input::Messages(m.clone()),
                output_len,
            }))
        }
        (Some((key, _)), Some(_)) => Err(UsageError(format!(
            "{at}: give \"{key}\" or \"messages\", not both"
        ))),
        (None, Some(_)) => Err(UsageError(format!(
            "{at}: \"messages\" must be a non-empty array"
        ))),
        (None, None) => Err(UsageError(format!(
            "{at}: no \"prompt\", \"text\", \"messages\" or \"conversations\""
        ))),
    }
}

/// The prompt text of an entry (or a conversation's turn): `"prompt"`,
/// `"text"` (a string) or aiperf's `"texts"` with one entry (a string, or
/// `{"name": ..., "contents": [one string]}`), with the field it came from;
/// `None` when there is none (a `null` counts as none).
///
/// # Errors
/// More than one of them, one that is not a string, `"texts"` with more
/// than one text (aiperf's client-side batching), or an aiperf media field
/// (`"image"`, `"audio"`, `"video"` and their lists): metronome sends text.
pub(crate) fn prompt_text(
    obj: &serde_json::Map<String, Value>,
    at: &str,
) -> Result<Option<(&'static str, String)>, UsageError> {
    if let Some(media) = MEDIA_FIELDS
        .iter()
        .find(|k| obj.get(**k).is_some_and(|v| !v.is_null()))
    {
        return Err(UsageError(format!(
            "{at}: \"{media}\" is not supported: metronome sends text prompts only"
        )));
    }
    let given: Vec<&'static str> = TEXT_FIELDS
        .iter()
        .copied()
        .filter(|k| obj.get(*k).is_some_and(|v| !v.is_null()))
        .collect();
    let key = match given[..] {
        [] => return Ok(None),
        [key] => key,
        [a, b, ..] => {
            return Err(UsageError(format!(
                "{at}: give \"{a}\" or \"{b}\", not both"
            )))
        }
    };
    let text = match (key, &obj[key]) {
        (_, Value::String(s)) if key != "texts" => s.clone(),
        ("texts", Value::Array(list)) => {
            let one = |v: &Value| -> Option<String> {
                match v {
                    Value::String(s) => Some(s.clone()),
                    Value::Object(o) => match o.get("contents").and_then(Value::as_array) {
                        Some(c) if c.len() == 1 => c[0].as_str().map(str::to_string),
                        _ => None,
                    },
                    _ => None,
                }
            };
            match &list[..] {
                [t] => one(t).ok_or_else(|| {
                    UsageError(format!(
                        "{at}: \"texts\" must hold one text: a string, or {{\"name\", \"contents\": [one string]}}"
                    ))
                })?,
                _ => {
                    return Err(UsageError(format!(
                        "{at}: \"texts\" holds {} texts (aiperf's client-side batching), \
                         which metronome does not send: give one text per line",
                        list.len()
                    )))
                }
            }
        }
        ("texts", _) => {
            return Err(UsageError(format!(
                "{at}: \"texts\" must be a list of one text"
            )))
        }
        _ => return Err(UsageError(format!("{at}: \"{key}\" must be a string"))),
    };
    Ok(Some((key, text)))
}

/// aiperf's timing fields (`"timestamp"`, `"delay"`) found in a JSON Lines
/// dataset's entries or their `"turns"`, which `--dataset` does not use:
/// the run's schedule decides when each request leaves. Empty when there
/// are none (and for a JSON array).
///
/// ```
/// use metronome::run::workload::timing_fields;
/// let t = "{\"text\": \"a\", \"timestamp\": 0}\n{\"turns\": [{\"text\": \"b\", \"delay\": 5}]}\n";
/// assert_eq!(timing_fields(t), ["timestamp", "delay"]);
/// assert!(timing_fields("{\"prompt\": \"timestamp\"}\n").is_empty());
/// ```
pub fn timing_fields(text: &str) -> Vec<&'static str> {
    const TIMING: [&str; 2] = ["timestamp", "delay"];
    if !TIMING.iter().any(|k| text.contains(&format!("\"{k}\""))) {
        return Vec::new();
    }
    let mut found = [false; 2];
    let mut look = |v: &Value| {
        let mut objects = vec![v];
        if let Some(turns) = v.get("turns").and_then(Value::as_array) {
            objects.extend(turns);
        }
        for o in objects.iter().filter_map(|o| o.as_object()) {
            for (i, k) in TIMING.iter().enumerate() {
                found[i] |= o.get(*k).is_some_and(|v| !v.is_null());
            }
        }
    };
    // aiperf's files are JSON Lines; a JSON array (ShareGPT, often hundreds
    // of MB) is not parsed a second time.
    if !text.trim_start().starts_with('[') {
        for line in text.lines() {
            if let Ok(v) = serde_json::from_str::<Value>(line) {
                look(&v);
            }
        }
    }
    TIMING
        .iter()
        .zip(found)
        .filter_map(|(k, f)| f.then_some(*k))
        .collect()
}

/// One entry of a JSON-array dataset, read without keeping what is never
/// used: of a ShareGPT `"conversations"` list only the first two turns (a
/// ShareGPT file is mostly later turns).
struct Lean(Value);

impl<'de> Deserialize<'de> for Lean {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entry;
        impl<'de> Visitor<'de> for Entry {
            type Value = Lean;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object with \"prompt\", \"messages\" or \"conversations\"")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Lean, A::Error> {
                let mut out = serde_json::Map::new();
                while let Some(key) = map.next_key::<String>()? {
                    let v = if key == "conversations" {
                        map.next_value::<FirstTwo>()?.0
                    } else {
                        map.next_value::<Value>()?
                    };
                    out.insert(key, v);
                }
                Ok(Lean(Value::Object(out)))
            }
        }
        d.deserialize_map(Entry)
    }
}

/// The first two elements of a list; the rest is read and dropped.
struct FirstTwo(Value);

impl<'de> Deserialize<'de> for FirstTwo {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Turns;
        impl<'de> Visitor<'de> for Turns {
            type Value = FirstTwo;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of conversation turns")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<FirstTwo, A::Error> {
                let mut kept = Vec::with_capacity(2);
                while kept.len() < 2 {
                    match seq.next_element::<Value>()? {
                        Some(turn) => kept.push(turn),
                        None => return Ok(FirstTwo(Value::Array(kept))),
                    }
                }
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(FirstTwo(Value::Array(kept)))
            }
        }
        d.deserialize_seq(Turns)
    }
}

/// A ShareGPT entry, as vLLM's bench reads it.
fn sharegpt(conv: &Value, at: &str, counter: &Counter) -> Result<Option<Prompt>, UsageError> {
    let Some(turns) = conv.as_array() else {
        return Err(UsageError(format!(
            "{at}: \"conversations\" must be an array"
        )));
    };
    if turns.len() < 2 {
        return Ok(None);
    }
    let value = |i: usize| {
        turns[i]
            .get("value")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                UsageError(format!(
                    "{at}: conversation turn {} has no \"value\" string",
                    i + 1
                ))
            })
    };
    let prompt = Prompt::counted(value(0)?, None, counter);
    let output = counter.count(value(1)?);
    let input = prompt.input_tokens;
    if input < SHAREGPT_MIN_LEN
        || output < SHAREGPT_MIN_LEN
        || input > SHAREGPT_MAX_PROMPT
        || input.saturating_add(output) > SHAREGPT_MAX_TOTAL
    {
        return Ok(None);
    }
    Ok(Some(Prompt {
        output_len: Some(output),
        ..prompt
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse_dataset(text, "d.jsonl", &Counter::Words)
            .unwrap_err()
            .0
    }

    #[test]
    fn jsonl_prompts_messages_and_output_fields() {
        let text = concat!(
            "{\"prompt\":\"one two three\",\"max_tokens\":7}\n",
            "\n",
            "{\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},",
            "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a b c\"}]}],",
            "\"output_len\":3}\n",
            "{\"prompt\":\"x\",\"max_completion_tokens\":2}\n",
            "{\"prompt\":\"y\",\"output_tokens\":9,\"extra\":true}\n",
            "{\"prompt\":\"z\",\"output_len\":null}\n",
        );
        let d = parse_dataset(text, "d.jsonl", &Counter::Words).unwrap();
        assert_eq!(d.skipped, 0);
        let got: Vec<(u32, Option<u32>)> = d
            .prompts
            .iter()
            .map(|p| (p.input_tokens, p.output_len))
            .collect();
        assert_eq!(
            got,
            [
                (3, Some(7)),
                (5, Some(3)),
                (1, Some(2)),
                (1, Some(9)),
                (1, None)
            ]
        );
        assert_eq!(d.prompts[0].input, Input::Text("one two three".into()));
        match &d.prompts[1].input {
            Input::Messages(m) => assert_eq!(m.len(), 2),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn jsonl_errors_name_the_line() {
        assert_eq!(
            err("{\"prompt\":\"a\"}\n\n{\"prompt\": 3}\n"),
            "--dataset d.jsonl line 3: \"prompt\" must be a string"
        );
        let e = err("{\"prompt\":\"a\"}\nnot json\n");
        assert!(e.starts_with("--dataset d.jsonl line 2: not JSON ("), "{e}");
        assert_eq!(
            err("{\"question\":\"a\"}\n"),
            "--dataset d.jsonl line 1: no \"prompt\", \"text\", \"messages\" or \"conversations\""
        );
        assert_eq!(
            err("{\"prompt\":\"a\",\"max_tokens\":0}\n"),
            "--dataset d.jsonl line 1: \"max_tokens\" must be a positive integer"
        );
        assert_eq!(
            err("{\"prompt\":\"a\",\"output_len\":\"5\"}\n"),
            "--dataset d.jsonl line 1: \"output_len\" must be a positive integer"
        );
        assert_eq!(
            err("{\"prompt\":\"a\",\"messages\":[]}\n"),
            "--dataset d.jsonl line 1: give \"prompt\" or \"messages\", not both"
        );
        assert_eq!(
            err("{\"messages\":[{\"content\":\"hi\"}]}\n"),
            "--dataset d.jsonl line 1: message 1 must be an object with a \"role\" string"
        );
        assert_eq!(
            err("[1, 2]\n"),
            "--dataset d.jsonl: not a JSON array of entries (invalid type: integer `1`, \
             expected an object with \"prompt\", \"messages\" or \"conversations\" at line 1 column 2)"
        );
        assert_eq!(
            err("\n  \n"),
            "--dataset d.jsonl is empty: give at least one prompt"
        );
        assert!(err("[{\"prompt\":\"a\"},").starts_with("--dataset d.jsonl: not a JSON array"));
    }

    #[test]
    fn sharegpt_as_vllm_reads_it() {
        let text = r#"[
 {"id":"a","conversations":[{"from":"human","value":"tell me a story please now"},{"from":"gpt","value":"once upon a time there"},{"from":"human","value":"more"}]},
 {"id":"b","conversations":[{"from":"human","value":"only one turn here"}]},
 {"id":"c","conversations":[{"from":"human","value":"too short"},{"from":"gpt","value":"a b c d e"}]},
 {"id":"d","conversations":[{"from":"human","value":"four words are enough"},{"from":"gpt","value":"no"}]},
 {"id":"e","conversations":[{"from":"human","value":"four words are enough"},{"from":"gpt","value":"four words back again"}]},
 {"id":"f"}
]"#;
        let err = parse_dataset(text, "s.json", &Counter::Words)
            .unwrap_err()
            .0;
        assert_eq!(
            err,
            "--dataset s.json entry 6: no \"prompt\", \"text\", \"messages\" or \"conversations\""
        );
        let text = text.replace(",\n {\"id\":\"f\"}", "");
        let d = parse_dataset(&text, "s.json", &Counter::Words).unwrap();
        // b: one turn; c: prompt of 2 words; d: output of 1 word.
        assert_eq!(d.skipped, 3);
        let got: Vec<(Input, u32, Option<u32>)> = d
            .prompts
            .into_iter()
            .map(|p| (p.input, p.input_tokens, p.output_len))
            .collect();
        assert_eq!(
            got,
            [
                (Input::Text("tell me a story please now".into()), 6, Some(5)),
                (Input::Text("four words are enough".into()), 4, Some(4)),
            ]
        );
    }

    #[test]
    fn sharegpt_later_turns_are_skipped_unread() {
        let text = r#"[{"conversations":[{"from":"human","value":"one two three four"},
            {"from":"gpt","value":"five six seven eight"},{"from":"human","value":["any", {"x": 1}]},
            7]},{"conversations":{"not":"a list"}}]"#;
        let e = parse_dataset(text, "s", &Counter::Words).unwrap_err().0;
        assert!(
            e.starts_with("--dataset s: not a JSON array of entries (invalid type: map, expected a list of conversation turns at line 3"),
            "{e}"
        );
        let text = text.replace(r#",{"conversations":{"not":"a list"}}"#, "");
        let d = parse_dataset(&text, "s", &Counter::Words).unwrap();
        assert_eq!(d.prompts.len(), 1);
        assert_eq!(
            (d.prompts[0].input_tokens, d.prompts[0].output_len),
            (4, Some(4))
        );
    }

    #[test]
    fn sharegpt_length_limits() {
        let words = |n: usize| vec!["w"; n].join(" ");
        let entry = |p: usize, o: usize| {
            serde_json::json!({"conversations": [
                {"from": "human", "value": words(p)},
                {"from": "gpt", "value": words(o)}]})
            .to_string()
        };
        let kept = |p, o| {
            parse_dataset(
                &format!("{}\n{}\n", entry(4, 4), entry(p, o)),
                "s",
                &Counter::Words,
            )
            .unwrap()
            .prompts
            .len()
                == 2
        };
        assert!(kept(1024, 1024));
        assert!(!kept(1025, 4));
        assert!(!kept(1024, 1025));
        assert!(!kept(3, 100));
        assert!(!kept(100, 3));
        assert_eq!(
            parse_dataset(&format!("{}\n", entry(1, 1)), "s", &Counter::Words)
                .unwrap_err()
                .0,
            "--dataset s has no usable prompt: all 1 ShareGPT entries were skipped (fewer \
             than two turns, or lengths outside vLLM bench's limits)"
        );
        assert_eq!(
            parse_dataset(
                r#"[{"conversations":[{"from":"human"},{"value":"x"}]}]"#,
                "s",
                &Counter::Words
            )
            .unwrap_err()
            .0,
            "--dataset s entry 1: conversation turn 1 has no \"value\" string"
        );
    }
}
