//! Conversations from a dataset (`--dataset` with `"turns"` lines, or
//! ShareGPT with `--multi-turn`): each session's turns, and the chat
//! messages each turn sends, its history included.
//!
//! The history of turn `k` is every earlier user turn with the dataset's
//! recorded answer after it (ShareGPT's `gpt` turns, a JSONL turn's
//! `"answer"`); where the dataset has no answer, a stand-in of the answer's
//! length (the turn's output length) made of [`VOCABULARY`] words, so the
//! context grows as it would. Every body is therefore known before the
//! clock starts and encoded once (no allocation per request); the cost is
//! that the server's own answers are not what the next turn carries, so a
//! prefix cache serves a turn's history up to the previous user message,
//! not through the previous answer (see docs/workloads.md).

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::run::tokens::Counter;
use crate::run::workload::{
    for_each_line, message_tokens, output_len_field, prompt_text, Input, Prompt, VOCABULARY,
};
use crate::UsageError;

/// One session: its system message, if any, and its turns in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Conversation {
    /// A leading system message (ShareGPT's `system` turn, JSONL `"system"`).
    pub system: Option<String>,
    /// The user turns, never empty.
    pub turns: Vec<Turn>,
}

/// One user turn.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    /// What the user sends: a text, or chat messages as written.
    pub input: Input,
    /// The recorded answer, when the dataset has one.
    pub answer: Option<String>,
    /// The output length asked (its max-tokens field), when the dataset
    /// gives one, else the recorded answer's length.
    pub output_len: Option<u32>,
}

/// A JSONL line's `"turns"`: each a string (the user's text) or an object
/// with the text as `"content"`, `"text"` or `"prompt"` (or `"messages"`),
/// optionally `"answer"` (the recorded reply) and an output length.
///
/// # Errors
/// One line naming `at` and the turn.
///
/// # Example
/// ```
/// use metronome::run::conversation::parse_turns;
/// use metronome::run::tokens::Counter;
/// let v: serde_json::Value = serde_json::from_str(
///     r#"{"turns": ["hi there", {"text": "and then?", "answer": "a b c", "output_len": 8}]}"#,
/// ).unwrap();
/// let c = parse_turns(&v, "line 1", &Counter::Words).unwrap();
/// assert_eq!(c.turns.len(), 2);
/// assert_eq!((c.turns[0].output_len, c.turns[1].output_len), (None, Some(8)));
/// ```
pub fn parse_turns(entry: &Value, at: &str, counter: &Counter) -> Result<Conversation, UsageError> {
    let Some(list) = entry.get("turns").and_then(Value::as_array) else {
        return Err(UsageError(format!("{at}: \"turns\" must be an array")));
    };
    if list.is_empty() {
        return Err(UsageError(format!("{at}: \"turns\" is empty")));
    }
    let mut system = match entry.get("system") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(UsageError(format!("{at}: \"system\" must be a string"))),
    };
    let mut turns = Vec::with_capacity(list.len());
    for (i, t) in list.iter().enumerate() {
        let at = format!("{at} turn {}", i + 1);
        let turn = match t {
            Value::String(s) => Turn {
                input: Input::Text(s.clone()),
                answer: None,
                output_len: None,
            },
            Value::Object(o) => {
                let text = match o.get("content").filter(|v| !v.is_null()) {
                    Some(Value::String(s)) => Some(Some(s.clone())),
                    Some(_) => Some(None),
                    None => prompt_text(o, &at)?.map(|(_, t)| Some(t)),
                };
                let input = match (text, o.get("messages")) {
                    (Some(Some(s)), None) => Input::Text(s),
                    (None, Some(Value::Array(m))) if !m.is_empty() => {
                        if m.iter()
                            .any(|m| !m.get("role").is_some_and(Value::is_string))
                        {
                            return Err(UsageError(format!(
                                "{at}: every message needs a \"role\" string"
                            )));
                        }
                        Input::Messages(m.clone())
                    }
                    _ => {
                        return Err(UsageError(format!(
                            "{at}: give the user's text as \"content\", \"text\" or \"prompt\" \
                             (a string), \"texts\" (one text) or \"messages\" (a non-empty array)"
                        )))
                    }
                };
                let answer = match ["answer", "assistant", "response"]
                    .iter()
                    .find_map(|k| o.get(*k))
                {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) => Some(s.clone()),
                    Some(_) => {
                        return Err(UsageError(format!("{at}: \"answer\" must be a string")))
                    }
                };
                let output_len = output_len_field(o, &at)?;
                // aiperf's leading text-only system turn is the conversation's
                // system message (its loader hoists it the same way).
                if let (0, true, None, Input::Text(s)) = (
                    i,
                    o.get("role").and_then(Value::as_str) == Some("system") && list.len() > 1,
                    &system,
                    &input,
                ) {
                    system = Some(s.clone());
                    continue;
                }
                Turn {
                    output_len: output_len.or(answer.as_deref().map(|a| counter.count(a))),
                    input,
                    answer,
                }
            }
            _ => return Err(UsageError(format!("{at}: a turn is a string or an object"))),
        };
        turns.push(turn);
    }
    Ok(Conversation { system, turns })
}

/// A ShareGPT entry as a conversation (`--multi-turn`): every `human`
/// (or `user`) value opens a turn, the `gpt` (`assistant`, `chatgpt`,
/// `bard`, `model`) value after it is its answer and sets its output
/// length; a leading `system` value is the system message. `None` when
/// the entry has no user turn.
///
/// # Errors
/// A turn without a `"value"` string.
pub fn sharegpt_turns(
    conv: &Value,
    at: &str,
    counter: &Counter,
) -> Result<Option<Conversation>, UsageError> {
    let Some(list) = conv.as_array() else {
        return Err(UsageError(format!(
            "{at}: \"conversations\" must be an array"
        )));
    };
    let mut system = None;
    let mut turns: Vec<Turn> = Vec::new();
    for (i, t) in list.iter().enumerate() {
        let value = t.get("value").and_then(Value::as_str).ok_or_else(|| {
            UsageError(format!(
                "{at}: conversation turn {} has no \"value\" string",
                i + 1
            ))
        })?;
        let from = t.get("from").and_then(Value::as_str).unwrap_or("");
        match from {
            "system" if turns.is_empty() => system = Some(value.to_string()),
            "human" | "user" => turns.push(Turn {
                input: Input::Text(value.to_string()),
                answer: None,
                output_len: None,
            }),
            _ => {
                // An answer: to the last user turn still without one.
                if let Some(last) = turns.last_mut().filter(|l| l.answer.is_none()) {
                    last.output_len = Some(counter.count(value).max(1));
                    last.answer = Some(value.to_string());
                }
            }
        }
    }
    Ok((!turns.is_empty()).then_some(Conversation { system, turns }))
}

/// A stand-in answer of `words` words (a dataset turn without a recorded
/// answer), from [`VOCABULARY`] in order.
///
/// ```
/// use metronome::run::conversation::stand_in;
/// assert_eq!(stand_in(3), "the of and");
/// ```
pub fn stand_in(words: u32) -> String {
    let mut s = String::new();
    for i in 0..words as usize {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(VOCABULARY[i % VOCABULARY.len()]);
    }
    s
}

/// The chat messages turn `k` of `conv` sends: the system message, every
/// earlier turn with its answer (recorded, or a stand-in of
/// `default_output` words when the turn has no output length), then turn
/// `k`'s own; as a [`Prompt`] with its tokens counted over every message.
///
/// ```
/// use metronome::run::conversation::{parse_turns, turn_prompt};
/// use metronome::run::tokens::Counter;
/// use metronome::run::workload::Input;
/// let v: serde_json::Value = serde_json::from_str(
///     r#"{"system": "be brief", "turns": [{"text": "hi", "answer": "hello you"}, "bye"]}"#,
/// ).unwrap();
/// let c = parse_turns(&v, "l", &Counter::Words).unwrap();
/// let p = turn_prompt(&c, 1, 16, &Counter::Words);
/// let Input::Messages(m) = &p.input else { panic!() };
/// let roles: Vec<&str> = m.iter().map(|m| m["role"].as_str().unwrap()).collect();
/// assert_eq!(roles, ["system", "user", "assistant", "user"]);
/// assert_eq!(m[2]["content"], "hello you");
/// assert_eq!(p.input_tokens, 2 + 1 + 2 + 1);
/// ```
pub fn turn_prompt(
    conv: &Conversation,
    k: usize,
    default_output: u32,
    counter: &Counter,
) -> Prompt {
    let mut messages = Vec::new();
    if let Some(s) = &conv.system {
        messages.push(json!({"role": "system", "content": s}));
    }
    for (i, t) in conv.turns[..=k].iter().enumerate() {
        match &t.input {
            Input::Text(s) => messages.push(json!({"role": "user", "content": s})),
            Input::Messages(m) => messages.extend(m.iter().cloned()),
        }
        if i < k {
            let answer = t
                .answer
                .clone()
                .unwrap_or_else(|| stand_in(t.output_len.unwrap_or(default_output)));
            messages.push(json!({"role": "assistant", "content": answer}));
        }
    }
    Prompt {
        input_tokens: message_tokens(&messages, counter),
        input: Input::Messages(messages),
        output_len: conv.turns[k].output_len,
    }
}

/// Reads `--dataset` as conversations: JSONL lines with `"turns"`
/// ([`parse_turns`]), ShareGPT entries with `multi_turn`
/// ([`sharegpt_turns`]), and single prompts (`"prompt"`/`"messages"`, or
/// ShareGPT's first turn without `multi_turn`) as one-turn sessions.
/// `Ok(None)` when the file holds no multi-turn entry and `multi_turn` is
/// off: the run is not conversational.
///
/// # Errors
/// A [`UsageError`] naming the file and line (or array entry).
pub fn parse_conversations(
    text: &str,
    name: &str,
    counter: &Counter,
    multi_turn: bool,
) -> Result<Option<Vec<Conversation>>, UsageError> {
    let mut out: Vec<Conversation> = Vec::new();
    let mut any_turns = multi_turn;
    // aiperf's `session_id`: the entries of one session are one conversation,
    // their turns in file order.
    let mut sessions: HashMap<String, usize> = HashMap::new();
    let mut take = |entry: &Value, at: &str| -> Result<(), UsageError> {
        let conv = if entry.get("turns").is_some() {
            any_turns = true;
            parse_turns(entry, at, counter)?
        } else if let (true, Some(conv)) = (multi_turn, entry.get("conversations")) {
            out.extend(sharegpt_turns(conv, at, counter)?);
            return Ok(());
        } else if let Some(p) = crate::run::workload::entry_prompt(entry, at, counter)? {
            Conversation {
                system: None,
                turns: vec![Turn {
                    input: p.input,
                    answer: None,
                    output_len: p.output_len,
                }],
            }
        } else {
            return Ok(());
        };
        let session = match entry.get("session_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(UsageError(format!("{at}: \"session_id\" must be a string"))),
        };
        match session {
            Some(s) => match sessions.get(&s) {
                Some(&i) => {
                    any_turns = true;
                    let c = &mut out[i];
                    if c.system.is_none() {
                        c.system = conv.system;
                    }
                    c.turns.extend(conv.turns);
                }
                None => {
                    sessions.insert(s, out.len());
                    out.push(conv);
                }
            },
            None => out.push(conv),
        }
        Ok(())
    };
    if text.trim_start().starts_with('[') {
        let entries: Vec<Value> = serde_json::from_str(text).map_err(|e| {
            UsageError(format!(
                "--dataset {name}: not a JSON array of entries ({e})"
            ))
        })?;
        for (i, entry) in entries.iter().enumerate() {
            take(entry, &format!("--dataset {name} entry {}", i + 1))?;
        }
    } else {
        for_each_line(text, name, take)?;
    }
    if !any_turns {
        return Ok(None);
    }
    if out.is_empty() {
        return Err(UsageError(format!(
            "--dataset {name} has no conversation with a user turn"
        )));
    }
    Ok(Some(out))
}

/// The requests of conversations: the first `sessions` open one each, the
/// later turns follow (`next`), each named by its turn ("turn-1", ...).
pub struct Sessions {
    /// How many sessions: the first requests.
    pub sessions: usize,
    /// Each request's next turn (core's `NO_TURN` for none).
    pub next: Vec<u32>,
    /// The turns' row names: turn-1, turn-2, ...
    pub names: Vec<String>,
    /// Each request's turn row.
    pub name_of: Vec<u32>,
}

/// Lays conversations out as the plan's requests: every session's first
/// turn first (in the sessions' order), then the later turns; each
/// request's prompt (its history included) and turn number.
pub fn lay_out(
    convs: &[Conversation],
    default_output: u32,
    counter: &Counter,
) -> (Vec<Prompt>, Sessions) {
    let sessions = convs.len();
    let mut prompts: Vec<Prompt> = convs
        .iter()
        .map(|c| turn_prompt(c, 0, default_output, counter))
        .collect();
    let mut next = vec![metronome_core::turns::NO_TURN; sessions];
    let mut name_of = vec![0u32; sessions];
    for (i, c) in convs.iter().enumerate() {
        let mut prev = i;
        for k in 1..c.turns.len() {
            let at = prompts.len();
            prompts.push(turn_prompt(c, k, default_output, counter));
            next[prev] = at as u32;
            next.push(metronome_core::turns::NO_TURN);
            name_of.push(k as u32);
            prev = at;
        }
    }
    let most = convs.iter().map(|c| c.turns.len()).max().unwrap_or(1);
    let names = (1..=most).map(|k| format!("turn-{k}")).collect();
    (
        prompts,
        Sessions {
            sessions,
            next,
            names,
            name_of,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sharegpt_turns_pair_answers_with_questions() {
        let v: Value = serde_json::from_str(
            r#"[{"from":"system","value":"sys"},{"from":"human","value":"q1 a"},
                {"from":"gpt","value":"a1 b c d"},{"from":"human","value":"q2"},
                {"from":"gpt","value":"a2"},{"from":"human","value":"q3"}]"#,
        )
        .unwrap();
        let c = sharegpt_turns(&v, "e", &Counter::Words).unwrap().unwrap();
        assert_eq!(c.system.as_deref(), Some("sys"));
        assert_eq!(c.turns.len(), 3);
        assert_eq!(c.turns[0].answer.as_deref(), Some("a1 b c d"));
        assert_eq!(c.turns[0].output_len, Some(4));
        assert_eq!(c.turns[2].answer, None);
        assert_eq!(c.turns[2].output_len, None);
        let p = turn_prompt(&c, 2, 5, &Counter::Words);
        let Input::Messages(m) = &p.input else {
            panic!("messages")
        };
        assert_eq!(m.len(), 1 + 2 + 2 + 1);
        assert_eq!(m[5]["content"], "q3");
        // Only gpt answers: no conversation.
        let none: Value = serde_json::from_str(r#"[{"from":"gpt","value":"x"}]"#).unwrap();
        assert_eq!(sharegpt_turns(&none, "e", &Counter::Words).unwrap(), None);
    }

    #[test]
    fn turns_errors_name_the_turn() {
        let bad = |s: &str| {
            let v: Value = serde_json::from_str(s).unwrap();
            parse_turns(&v, "f line 3", &Counter::Words).unwrap_err().0
        };
        assert_eq!(bad(r#"{"turns": []}"#), "f line 3: \"turns\" is empty");
        assert!(bad(r#"{"turns": ["a", 7]}"#).starts_with("f line 3 turn 2: a turn is"));
        assert!(bad(r#"{"turns": [{"answer": "x"}]}"#).starts_with("f line 3 turn 1: give"));
        assert!(bad(r#"{"turns": [{"text": "a", "output_len": 0}]}"#)
            .contains("\"output_len\" must be a positive integer"));
    }

    #[test]
    fn a_file_is_conversational_when_a_line_has_turns() {
        let w = &Counter::Words;
        assert_eq!(
            parse_conversations("{\"prompt\":\"a\"}\n", "f", w, false).unwrap(),
            None
        );
        let c = parse_conversations(
            "{\"prompt\":\"a b\"}\n{\"turns\":[\"x\",\"y\"]}\n",
            "f",
            w,
            false,
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.iter().map(|c| c.turns.len()).collect::<Vec<_>>(), [1, 2]);
        let e = parse_conversations("{\"turns\":[\"x\"]}\n{bad\n", "f", w, false).unwrap_err();
        assert!(e.0.starts_with("--dataset f line 2: not JSON"), "{e}");
    }

    #[test]
    fn a_missing_answer_stands_in_at_its_length() {
        let v: Value =
            serde_json::from_str(r#"{"turns": [{"text": "a", "output_len": 3}, "b"]}"#).unwrap();
        let c = parse_turns(&v, "l", &Counter::Words).unwrap();
        let p = turn_prompt(&c, 1, 99, &Counter::Words);
        let Input::Messages(m) = &p.input else {
            panic!("messages")
        };
        assert_eq!(m[1]["content"], "the of and");
        assert_eq!(p.input_tokens, 1 + 3 + 1);
    }
}
