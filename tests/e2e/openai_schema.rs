//! Every `--openai` request body metronome builds uses only fields of
//! OpenAI's request schema, each with a JSON type the schema admits.
//!
//! The field list (tests/data/openai_request_fields.json) is read from the
//! `openai` package's own TypedDicts by tests/data/openai_request_fields.py;
//! its `source` names the package version. Vendor extensions metronome
//! sends on request are listed in `EXTENSIONS` (docs/report.md, "OpenAI
//! requests"); `--extra-body`/`--body` fields are the user's and are not
//! checked.

use metronome::run::request::{openai_body, BodySpec, Endpoint, MaxTokensField};
use metronome::run::workload::{synthetic, Input, Prompt, Synthetic};
use serde_json::{json, Value};

/// Fields outside OpenAI's schema that a flag adds: `--ignore-eos` sends
/// vLLM's (and SGLang's) `ignore_eos`.
const EXTENSIONS: [(&str, &str); 1] = [("ignore_eos", "boolean")];

fn schema() -> Value {
    serde_json::from_str(include_str!("../data/openai_request_fields.json")).unwrap()
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_u64() || n.is_i64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Checks `obj` against the field list `fields` (name -> admitted types);
/// returns the violations.
fn check(obj: &Value, fields: &Value, extensions: &[(&str, &str)], at: &str) -> Vec<String> {
    let mut bad = Vec::new();
    let Value::Object(map) = obj else {
        return vec![format!("{at}: not an object")];
    };
    for (k, v) in map {
        let t = json_type(v);
        let admitted: Vec<&str> = match fields.get(k) {
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => match extensions.iter().find(|(name, _)| name == k) {
                Some((_, t)) => vec![*t],
                None => {
                    bad.push(format!("{at}.{k}: not a field of the schema"));
                    continue;
                }
            },
        };
        // A JSON number field admits integers too.
        if !(admitted.contains(&t) || (t == "integer" && admitted.contains(&"number"))) {
            bad.push(format!("{at}.{k}: {t}, the schema admits {admitted:?}"));
        }
    }
    bad
}

fn check_body(body: &[u8], endpoint: Endpoint) -> Vec<String> {
    let s = schema();
    let v: Value = serde_json::from_slice(body).unwrap();
    let (key, at) = match endpoint {
        Endpoint::Chat => ("chat_completions", "CreateChatCompletionRequest"),
        Endpoint::Completions => ("completions", "CreateCompletionRequest"),
    };
    let mut bad = check(&v, &s[key], &EXTENSIONS, at);
    for required in ["model", "stream"] {
        if v.get(required).is_none() {
            bad.push(format!("{at}: no {required}"));
        }
    }
    if let Some(so) = v.get("stream_options") {
        bad.extend(check(
            so,
            &s[format!("{key}.stream_options").as_str()],
            &[],
            &format!("{at}.stream_options"),
        ));
    }
    match endpoint {
        Endpoint::Chat => {
            let messages = v["messages"].as_array().cloned().unwrap_or_default();
            if messages.is_empty() {
                bad.push(format!("{at}: no messages"));
            }
            for (i, m) in messages.iter().enumerate() {
                bad.extend(check(
                    m,
                    &s["chat_completions.messages[]"],
                    &[],
                    &format!("{at}.messages[{i}]"),
                ));
            }
        }
        Endpoint::Completions => {
            if v.get("prompt").is_none() {
                bad.push(format!("{at}: no prompt"));
            }
        }
    }
    bad
}

fn prompts() -> Vec<Prompt> {
    let mut p = vec![
        Prompt::text("Write a haiku about a metronome.", None),
        Prompt::text("", Some(1)),
    ];
    p.extend(synthetic(3, 0, 2, &Synthetic::words(40), Some(256)));
    p
}

#[test]
fn the_field_list_is_the_one_checked_in() {
    let s = schema();
    assert!(s["source"].as_str().unwrap().starts_with("openai-python "));
    // The fields this test relies on are there, with the types OpenAI gives.
    let chat = &s["chat_completions"];
    assert_eq!(chat["max_completion_tokens"], json!(["integer", "null"]));
    assert_eq!(chat["max_tokens"], json!(["integer", "null"]));
    assert_eq!(chat["messages"], json!(["array"]));
    assert_eq!(chat["stream"], json!(["boolean"]));
    assert!(
        chat.get("ignore_eos").is_none(),
        "ignore_eos is vLLM's, not OpenAI's"
    );
    assert!(s["completions"].get("max_completion_tokens").is_none());
    assert_eq!(
        s["completions"]["prompt"],
        json!(["array", "null", "string"])
    );
    assert_eq!(
        s["chat_completions.stream_options"]["include_usage"],
        json!(["boolean"])
    );
}

#[test]
fn every_body_uses_known_fields_with_their_types() {
    let mut checked = 0;
    for endpoint in [Endpoint::Chat, Endpoint::Completions] {
        for field in [
            MaxTokensField::MaxCompletionTokens,
            MaxTokensField::MaxTokens,
        ] {
            for ignore_eos in [false, true] {
                let spec = BodySpec {
                    model: "Qwen/Qwen3-0.6B".into(),
                    endpoint,
                    max_tokens_field: field,
                    ignore_eos,
                    patches: vec![],
                };
                for p in prompts() {
                    let body = openai_body(&spec, &p, p.output_len.unwrap_or(128)).unwrap();
                    let bad = check_body(&body, endpoint);
                    assert!(
                        bad.is_empty(),
                        "{bad:?} in {}",
                        String::from_utf8_lossy(&body)
                    );
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 2 * 2 * 2 * 4);
    // Chat messages from a dataset are sent as given; ones in OpenAI's shape pass.
    let spec = BodySpec {
        model: "m".into(),
        endpoint: Endpoint::Chat,
        max_tokens_field: MaxTokensField::MaxCompletionTokens,
        ignore_eos: false,
        patches: vec![],
    };
    let m = Prompt {
        input: Input::Messages(vec![
            json!({"role": "system", "content": "be brief"}),
            json!({"role": "user", "content": [{"type": "text", "text": "hi"}], "name": "u"}),
        ]),
        input_tokens: 3,
        output_len: None,
    };
    let body = openai_body(&spec, &m, 8).unwrap();
    assert_eq!(check_body(&body, Endpoint::Chat), Vec::<String>::new());
}

#[test]
fn the_check_catches_what_a_server_would_reject() {
    // The check itself can fail: an unknown field, a wrong type, a
    // completions-only field on chat, and max_completion_tokens on completions.
    let bad = check_body(
        br#"{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}],"max_completion_tokens":"8","prompt":"x","foo":1}"#,
        Endpoint::Chat,
    );
    assert_eq!(
        bad,
        [
            "CreateChatCompletionRequest.foo: not a field of the schema",
            "CreateChatCompletionRequest.max_completion_tokens: string, the schema admits [\"integer\", \"null\"]",
            "CreateChatCompletionRequest.prompt: not a field of the schema",
        ]
    );
    let bad = check_body(
        br#"{"model":"m","stream":true,"prompt":"x","max_completion_tokens":8,"stream_options":{"usage":true}}"#,
        Endpoint::Completions,
    );
    assert_eq!(
        bad,
        [
            "CreateCompletionRequest.max_completion_tokens: not a field of the schema",
            "CreateCompletionRequest.stream_options.usage: not a field of the schema",
        ]
    );
}
