//! The OpenAI chunk classifier: a resumable JSON scanner that walks the
//! `data:` bytes of an event as they arrive and keeps only what the
//! metrics need (content, reasoning, tool calls, `finish_reason`, usage,
//! error), and the `[DONE]` matcher. This is where "what counts as a
//! token" lives; the line framing around it is [`super::SseDecoder`]'s.

/// What one data event says beyond [`SseEvent`](super::SseEvent), for the
/// metrics that need it (docs/metrics.md): read with
/// [`SseDecoder::facts`](super::SseDecoder::facts) right after the event was
/// dispatched.
///
/// # Example
/// ```
/// use metronome_core::sse::{ChunkFacts, SseDecoder};
/// let mut sse = SseDecoder::new();
/// sse.feed(b"data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hm\"},\"finish_reason\":null}]}\n\n");
/// assert_eq!(sse.facts(), ChunkFacts { choices: true, output: true, answer: false, finish: false, usage_tokens: None });
/// sse.feed(b"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"completion_tokens\":4}}\n\n");
/// assert_eq!(sse.facts(), ChunkFacts { choices: true, output: false, answer: false, finish: true, usage_tokens: Some(4) });
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkFacts {
    /// `choices` is a non-empty array (vLLM's bench times every such chunk:
    /// role-only, empty and finish-only ones included).
    pub choices: bool,
    /// Output: a non-empty `choices[0].delta.content`, `reasoning_content`,
    /// `reasoning`, a non-empty `tool_calls` array, or `choices[0].text`
    /// (the same as [`SseEvent::content`](super::SseEvent::content)).
    pub output: bool,
    /// Answer: output that is not reasoning (`content`, `text`, `tool_calls`).
    pub answer: bool,
    /// `choices[0].finish_reason` is a non-empty string.
    pub finish: bool,
    /// `usage.completion_tokens`, when the event carries usage.
    pub usage_tokens: Option<u32>,
}

impl ChunkFacts {
    /// A chunk with answer content and nothing else.
    pub const CONTENT: ChunkFacts = ChunkFacts {
        choices: true,
        output: true,
        answer: true,
        finish: false,
        usage_tokens: None,
    };
}

/// A short ASCII accumulator: longer input (or an escape) spoils it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Small<const N: usize> {
    buf: [u8; N],
    /// `usize::MAX` once spoiled.
    len: usize,
}

impl<const N: usize> Small<N> {
    pub(super) const EMPTY: Self = Self {
        buf: [0; N],
        len: 0,
    };

    pub(super) fn clear(&mut self) {
        self.len = 0;
    }

    pub(super) fn spoil(&mut self) {
        self.len = usize::MAX;
    }

    pub(super) fn push(&mut self, bytes: &[u8]) {
        if bytes.is_empty() || self.len == usize::MAX {
            return;
        }
        match self.buf.get_mut(self.len..self.len + bytes.len()) {
            Some(dst) => {
                dst.copy_from_slice(bytes);
                self.len += bytes.len();
            }
            None => self.spoil(),
        }
    }

    pub(super) fn get(&self) -> Option<&[u8]> {
        self.buf.get(..self.len)
    }

    pub(super) fn is(&self, want: &[u8]) -> bool {
        self.get() == Some(want)
    }
}

/// Recognises a data payload of exactly `[DONE]` (surrounding ASCII
/// whitespace allowed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum DoneMatch {
    /// Only whitespace so far; the number of bytes of `[DONE]` matched.
    Matching(u8),
    /// `[DONE]` and then only whitespace.
    Matched,
    /// Anything else.
    Failed,
}

impl DoneMatch {
    const WORD: &'static [u8; 6] = b"[DONE]";

    pub(super) fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            *self = match *self {
                DoneMatch::Failed => return,
                DoneMatch::Matching(0) if b.is_ascii_whitespace() => DoneMatch::Matching(0),
                DoneMatch::Matching(k) => match Self::WORD.get(usize::from(k)) {
                    Some(&w) if w == b => {
                        if k == 5 {
                            DoneMatch::Matched
                        } else {
                            DoneMatch::Matching(k + 1)
                        }
                    }
                    _ => DoneMatch::Failed,
                },
                DoneMatch::Matched if b.is_ascii_whitespace() => DoneMatch::Matched,
                DoneMatch::Matched => DoneMatch::Failed,
            };
        }
    }
}

/// A JSON container, as far as classification cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ctx {
    /// The top-level object.
    Root,
    /// `choices`, before its first comma.
    Choices,
    /// `choices`, after its first element.
    ChoicesRest,
    /// `choices[0]`.
    Choice0,
    /// `choices[0].delta`.
    Delta,
    /// The top-level `usage` object.
    Usage,
    /// `choices[0].delta.tool_calls`.
    ToolCalls,
    OtherObj,
    OtherArr,
}

impl Ctx {
    fn is_obj(self) -> bool {
        !matches!(
            self,
            Ctx::Choices | Ctx::ChoicesRest | Ctx::ToolCalls | Ctx::OtherArr
        )
    }
}

/// The keys that matter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Other,
    Choices,
    Usage,
    Error,
    Object,
    Delta,
    Text,
    Content,
    Reasoning,
    ToolCalls,
    FinishReason,
    CompletionTokens,
}

impl Key {
    fn of(name: Option<&[u8]>) -> Key {
        match name {
            Some(b"choices") => Key::Choices,
            Some(b"usage") => Key::Usage,
            Some(b"error") => Key::Error,
            Some(b"object") => Key::Object,
            Some(b"delta") => Key::Delta,
            Some(b"text") => Key::Text,
            Some(b"content") => Key::Content,
            Some(b"reasoning_content" | b"reasoning") => Key::Reasoning,
            Some(b"tool_calls") => Key::ToolCalls,
            Some(b"finish_reason") => Key::FinishReason,
            Some(b"completion_tokens") => Key::CompletionTokens,
            _ => Key::Other,
        }
    }
}

/// What the scalar being read means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Plain,
    Key,
    /// Reasoning text: output, not the answer.
    Content,
    /// Answer text (`content`, `text`): output and answer.
    Answer,
    /// `finish_reason`.
    Finish,
    ObjectName,
    Tokens,
}

/// The lexical state of the JSON scanner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lex {
    Between,
    Str,
    Number,
    Literal,
}

/// The first `"` or `\` in `s`: eight bytes at a time (SWAR, safe code)
/// for the short strings of JSON keys and small values, `memchr2` for the
/// rest of long ones.
#[inline]
fn find_quote_or_backslash(s: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    const QUOTES: u64 = LO * b'"' as u64;
    const BACKSLASHES: u64 = LO * b'\\' as u64;
    const SWAR_BYTES: usize = 64;
    let mut i = 0;
    while i < SWAR_BYTES {
        let Some(word) = s.get(i..i + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()) else {
            return s
                .get(i..)?
                .iter()
                .position(|&b| b == b'"' || b == b'\\')
                .map(|k| k + i);
        };
        let w = u64::from_le_bytes(word);
        let (q, b) = (w ^ QUOTES, w ^ BACKSLASHES);
        // A zero byte in q or b marks a match; the lowest flagged byte is
        // exact (borrows only propagate upwards).
        let found = ((q.wrapping_sub(LO) & !q) | (b.wrapping_sub(LO) & !b)) & HI;
        if found != 0 {
            return Some(i + (found.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    memchr::memchr2(b'"', b'\\', s.get(i..)?).map(|k| k + i)
}

/// Nesting levels whose context is remembered; deeper levels are counted
/// only (they cannot hold anything that matters).
const MAX_DEPTH: usize = 16;

/// A resumable JSON scanner that records content / usage / error facts.
#[derive(Clone, Copy, Debug)]
pub(super) struct JsonScan {
    lex: Lex,
    role: Role,
    escape: bool,
    nonempty: bool,
    expect_key: bool,
    key: Key,
    depth: usize,
    stack: [Ctx; MAX_DEPTH],
    acc: Small<24>,
    number: u64,
    number_ok: bool,
    pub(super) content: bool,
    pub(super) answer: bool,
    pub(super) choices: bool,
    pub(super) finish: bool,
    pub(super) usage: Option<u32>,
    pub(super) error: bool,
}

impl JsonScan {
    pub(super) const NEW: Self = Self {
        lex: Lex::Between,
        role: Role::Plain,
        escape: false,
        nonempty: false,
        expect_key: false,
        key: Key::Other,
        depth: 0,
        stack: [Ctx::OtherObj; MAX_DEPTH],
        acc: Small::EMPTY,
        number: 0,
        number_ok: false,
        content: false,
        answer: false,
        choices: false,
        finish: false,
        usage: None,
        error: false,
    };

    /// The innermost open container, `None` at the top level.
    fn parent(&self) -> Option<Ctx> {
        match self.depth {
            0 => None,
            d => Some(self.stack.get(d - 1).copied().unwrap_or(Ctx::OtherObj)),
        }
    }

    /// Scans the next payload bytes (resuming a token split by an earlier
    /// call).
    pub(super) fn scan(&mut self, bytes: &[u8]) {
        let mut i = match self.lex {
            Lex::Between => 0,
            Lex::Str => self.scan_string(bytes, 0),
            Lex::Number | Lex::Literal => self.scan_scalar(bytes, 0),
        };
        // Structural bytes are handled here; strings and scalars in their
        // own tight loops.
        while let Some(&b) = bytes.get(i) {
            i += 1;
            match b {
                b'"' => {
                    self.begin_string();
                    i = self.scan_string(bytes, i);
                    // Fast path for the usual `"key":` and `"key":"value"`.
                    if bytes.get(i) == Some(&b':') {
                        i += 1;
                        self.expect_key = false;
                        if bytes.get(i) == Some(&b'"') {
                            i += 1;
                            self.begin_string();
                            i = self.scan_string(bytes, i);
                        }
                    }
                }
                b':' => self.expect_key = false,
                b',' => self.comma(),
                b'{' => self.open(true),
                b'[' => self.open(false),
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    self.expect_key = false;
                }
                b'-' | b'0'..=b'9' => {
                    self.begin_number(b);
                    i = self.scan_scalar(bytes, i);
                }
                b'a'..=b'z' | b'A'..=b'Z' => {
                    self.begin_literal(b);
                    i = self.scan_scalar(bytes, i);
                }
                _ => {}
            }
        }
    }

    /// Continues a string from `bytes[i..]`; returns the index after its
    /// closing quote, or `bytes.len()` if it continues in the next call.
    fn scan_string(&mut self, bytes: &[u8], mut i: usize) -> usize {
        if self.escape {
            if i >= bytes.len() {
                return i;
            }
            self.escape = false;
            i += 1;
        }
        loop {
            let Some(rest) = bytes.get(i..) else {
                return bytes.len();
            };
            match find_quote_or_backslash(rest) {
                None => {
                    self.string_bytes(rest);
                    return bytes.len();
                }
                Some(j) if rest[j] == b'"' => {
                    self.end_string(&rest[..j]);
                    return i + j + 1;
                }
                Some(j) => {
                    // An escape: the string is not empty, an accumulated
                    // name cannot match; skip the escaped byte.
                    self.nonempty = true;
                    self.acc.spoil();
                    if i + j + 1 >= bytes.len() {
                        self.escape = true;
                        return bytes.len();
                    }
                    i += j + 2;
                }
            }
        }
    }

    /// Continues a number or literal from `bytes[i..]`; returns the index of
    /// the byte after it, or `bytes.len()` if it continues in the next call.
    fn scan_scalar(&mut self, bytes: &[u8], mut i: usize) -> usize {
        if self.lex == Lex::Number && self.role == Role::Tokens {
            while let Some(&b) = bytes.get(i) {
                if !b.is_ascii_digit() {
                    break;
                }
                self.number = self
                    .number
                    .saturating_mul(10)
                    .saturating_add(u64::from(b - b'0'));
                i += 1;
            }
            match bytes.get(i) {
                None => return i,
                // Only the integer part of a token count is kept.
                Some(b'.' | b'e' | b'E') => self.lex = Lex::Literal,
                Some(b'+' | b'-') => {
                    self.number_ok = false;
                    self.lex = Lex::Literal;
                }
                Some(_) => {
                    self.end_scalar();
                    return i;
                }
            }
        }
        while let Some(&b) = bytes.get(i) {
            if !(b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-')) {
                self.end_scalar();
                return i;
            }
            i += 1;
        }
        i
    }

    /// Ends a number or literal (called on the byte after it, or at the end
    /// of the event).
    fn end_scalar(&mut self) {
        if self.role == Role::Tokens && self.number_ok {
            self.usage = Some(u32::try_from(self.number).unwrap_or(u32::MAX));
        }
        self.lex = Lex::Between;
        self.role = Role::Plain;
    }

    /// The role of a value starting now, from its container and key.
    fn value_role(&mut self) -> Role {
        match (self.parent(), self.key) {
            (Some(Ctx::Delta), Key::Content) | (Some(Ctx::Choice0), Key::Text) => Role::Answer,
            (Some(Ctx::Delta), Key::Reasoning) => Role::Content,
            (Some(Ctx::Choice0), Key::FinishReason) => Role::Finish,
            (Some(Ctx::Root), Key::Object) => Role::ObjectName,
            (Some(Ctx::Usage), Key::CompletionTokens) => Role::Tokens,
            _ => Role::Plain,
        }
    }

    fn is_error_value(&self) -> bool {
        self.parent() == Some(Ctx::Root) && self.key == Key::Error
    }

    fn begin_string(&mut self) {
        self.lex = Lex::Str;
        self.nonempty = false;
        self.escape = false;
        if self.expect_key && self.parent().is_some_and(Ctx::is_obj) {
            self.role = Role::Key;
            self.acc.clear();
        } else {
            self.error |= self.is_error_value();
            self.role = self.value_role();
            self.acc.clear();
        }
    }

    /// String bytes that continue in the next call.
    fn string_bytes(&mut self, bytes: &[u8]) {
        if !bytes.is_empty() {
            self.nonempty = true;
            if matches!(self.role, Role::Key | Role::ObjectName) {
                self.acc.push(bytes);
            }
        }
    }

    /// The string ends after `last` (its bytes since the last call or
    /// escape).
    fn end_string(&mut self, last: &[u8]) {
        self.nonempty |= !last.is_empty();
        if matches!(self.role, Role::Key | Role::ObjectName) {
            // The whole name in one slice (the common case) is matched in
            // place; otherwise it was accumulated.
            let name = if self.acc.len == 0 {
                Some(last)
            } else {
                self.acc.push(last);
                self.acc.get()
            };
            if self.role == Role::Key {
                self.key = Key::of(name);
                self.expect_key = false;
            } else {
                self.error |= name == Some(b"error");
            }
        } else if self.role == Role::Content {
            self.content |= self.nonempty;
        } else if self.role == Role::Answer {
            self.content |= self.nonempty;
            self.answer |= self.nonempty;
        } else if self.role == Role::Finish {
            self.finish |= self.nonempty;
        }
        self.lex = Lex::Between;
        self.role = Role::Plain;
    }

    fn begin_number(&mut self, first: u8) {
        self.error |= self.is_error_value();
        self.role = self.value_role();
        self.lex = Lex::Number;
        self.number_ok = first != b'-';
        self.number = u64::from(first.wrapping_sub(b'0')) * u64::from(self.number_ok);
    }

    fn begin_literal(&mut self, first: u8) {
        // `"error": null` is not an error; true/false/garbage is.
        self.error |= self.is_error_value() && first != b'n';
        self.role = Role::Plain;
        self.lex = Lex::Literal;
    }

    fn open(&mut self, is_obj: bool) {
        let parent = self.parent();
        self.error |= self.is_error_value();
        let child = match (parent, self.key, is_obj) {
            (None, _, true) => Ctx::Root,
            (Some(Ctx::Root), Key::Choices, false) => Ctx::Choices,
            (Some(Ctx::Choices), _, true) => {
                self.choices = true;
                Ctx::Choice0
            }
            (Some(Ctx::Delta), Key::ToolCalls, false) => Ctx::ToolCalls,
            (Some(Ctx::ToolCalls), _, true) => {
                // A tool-call delta is output, and answer (not reasoning).
                self.content = true;
                self.answer = true;
                Ctx::OtherObj
            }
            (Some(Ctx::Choice0), Key::Delta, true) => Ctx::Delta,
            (Some(Ctx::Root), Key::Usage, true) => Ctx::Usage,
            (_, _, true) => Ctx::OtherObj,
            (_, _, false) => Ctx::OtherArr,
        };
        if let Some(slot) = self.stack.get_mut(self.depth) {
            *slot = child;
        }
        self.depth = self.depth.saturating_add(1);
        self.expect_key = is_obj;
        self.key = Key::Other;
    }

    fn comma(&mut self) {
        let d = self.depth;
        if d == 0 {
            return;
        }
        match self.stack.get_mut(d - 1) {
            Some(slot @ Ctx::Choices) => *slot = Ctx::ChoicesRest,
            Some(slot) => self.expect_key = slot.is_obj(),
            None => self.expect_key = true,
        }
    }

    /// Ends the payload: a trailing number counts.
    pub(super) fn finish(&mut self) {
        if matches!(self.lex, Lex::Number | Lex::Literal) {
            self.end_scalar();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (content, usage, error)
    type Facts = (bool, Option<u32>, bool);

    fn scan(json: &str) -> Facts {
        let mut s = JsonScan::NEW;
        s.scan(json.as_bytes());
        s.finish();
        (s.content, s.usage, s.error)
    }

    #[test]
    fn json_facts_table() {
        let table: &[(&str, Facts)] = &[
            (
                r#"{"choices":[{"delta":{"content":"x"}}]}"#,
                (true, None, false),
            ),
            (
                r#"{"choices":[{"delta":{"content":""}}]}"#,
                (false, None, false),
            ),
            (
                r#"{"choices":[{"delta":{"content":null}}]}"#,
                (false, None, false),
            ),
            (
                r#"{"choices":[{"delta":{"role":"assistant"}}]}"#,
                (false, None, false),
            ),
            (
                r#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#,
                (true, None, false),
            ),
            (
                r#"{"choices":[{"text":"t","index":0}]}"#,
                (true, None, false),
            ),
            (r#"{"choices":[{"text":""}]}"#, (false, None, false)),
            // only choices[0] counts
            (
                r#"{"choices":[{"delta":{}},{"delta":{"content":"x"}}]}"#,
                (false, None, false),
            ),
            // content at the wrong nesting
            (
                r#"{"content":"x","delta":{"content":"y"}}"#,
                (false, None, false),
            ),
            (
                r#"{"choices":[{"message":{"content":"x"}}]}"#,
                (false, None, false),
            ),
            (
                r#"{"choices":[{"delta":{"x":{"content":"y"}}}]}"#,
                (false, None, false),
            ),
            // escapes and key-like text inside strings
            (
                r#"{"choices":[{"delta":{"content":"\""}}]}"#,
                (true, None, false),
            ),
            (
                r#"{"choices":[{"delta":{"content":"\\"}}]}"#,
                (true, None, false),
            ),
            (
                r#"{"id":"\"usage\":{\"completion_tokens\":9}","choices":[]}"#,
                (false, None, false),
            ),
            (
                r#"{"choices":[{"delta":{"content":"the error usage {\"error\":1}"}}]}"#,
                (true, None, false),
            ),
            // usage
            (
                r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}"#,
                (false, Some(3), false),
            ),
            (r#"{"usage":null}"#, (false, None, false)),
            (
                r#"{"usage":{"completion_tokens":null}}"#,
                (false, None, false),
            ),
            (
                r#"{"usage":{"completion_tokens":-1}}"#,
                (false, None, false),
            ),
            (
                r#"{"usage":{"completion_tokens":12.0}}"#,
                (false, Some(12), false),
            ),
            (
                r#"{"usage":{"completion_tokens":99999999999}}"#,
                (false, Some(u32::MAX), false),
            ),
            (
                r#"{"usage":{"completion_tokens":7"#,
                (false, Some(7), false),
            ),
            (
                r#"{"x":{"usage":{"completion_tokens":7}}}"#,
                (false, None, false),
            ),
            (
                r#" { "choices" : [ { "delta" : { "content" : "x" } } ] , "usage" : { "completion_tokens" : 4 } } "#,
                (true, Some(4), false),
            ),
            // errors
            (r#"{"error":{"message":"boom"}}"#, (false, None, true)),
            (r#"{"error":"boom"}"#, (false, None, true)),
            (r#"{"error":null,"choices":[]}"#, (false, None, false)),
            (r#"{"object":"error","message":"x"}"#, (false, None, true)),
            (
                r#"{"object":"chat.completion.chunk"}"#,
                (false, None, false),
            ),
            (
                r#"{"x":{"error":"nested is not top-level"}}"#,
                (false, None, false),
            ),
            // garbage never fails
            ("", (false, None, false)),
            ("}}]]", (false, None, false)),
            ("[DONE]", (false, None, false)),
        ];
        for (json, want) in table {
            assert_eq!(scan(json), *want, "{json}");
        }
    }

    /// (choices, output, answer, finish)
    type Flags = (bool, bool, bool, bool);

    fn facts(json: &str) -> Flags {
        let mut s = JsonScan::NEW;
        s.scan(json.as_bytes());
        s.finish();
        (s.choices, s.content, s.answer, s.finish)
    }

    #[test]
    fn chunk_facts_table() {
        let table: &[(&str, Flags)] = &[
            (r#"{"choices":[]}"#, (false, false, false, false)),
            (
                r#"{"choices":[],"usage":{"completion_tokens":3}}"#,
                (false, false, false, false),
            ),
            (
                r#"{"choices":[{"delta":{"role":"assistant"}}]}"#,
                (true, false, false, false),
            ),
            (
                r#"{"choices":[{"delta":{"content":""}}]}"#,
                (true, false, false, false),
            ),
            (
                r#"{"choices":[{"delta":{"content":"x"}}]}"#,
                (true, true, true, false),
            ),
            (
                r#"{"choices":[{"delta":{"reasoning_content":"x"}}]}"#,
                (true, true, false, false),
            ),
            (
                r#"{"choices":[{"delta":{"reasoning":"x","content":null}}]}"#,
                (true, true, false, false),
            ),
            (r#"{"choices":[{"text":"x"}]}"#, (true, true, true, false)),
            (
                r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
                (true, false, false, true),
            ),
            (
                r#"{"choices":[{"delta":{},"finish_reason":null}]}"#,
                (true, false, false, false),
            ),
            (
                r#"{"choices":[{"text":"","finish_reason":"length"}]}"#,
                (true, false, false, true),
            ),
            // tool calls: a non-empty array is output and answer
            (
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"a":1}"}}]}}]}"#,
                (true, true, true, false),
            ),
            (
                r#"{"choices":[{"delta":{"tool_calls":[]}}]}"#,
                (true, false, false, false),
            ),
            (
                r#"{"choices":[{"delta":{"tool_calls":null}}]}"#,
                (true, false, false, false),
            ),
            // at the wrong nesting
            (
                r#"{"tool_calls":[{"a":1}],"finish_reason":"stop"}"#,
                (false, false, false, false),
            ),
            (
                r#"{"choices":[{"delta":{}},{"delta":{"content":"x"},"finish_reason":"stop"}]}"#,
                (true, false, false, false),
            ),
        ];
        for (json, want) in table {
            assert_eq!(facts(json), *want, "{json}");
        }
    }

    #[test]
    fn json_split_anywhere() {
        let json = r#"{"choices":[{"delta":{"content":"a\"b"}}],"usage":{"completion_tokens":42}}"#;
        for cut in 0..=json.len() {
            let mut s = JsonScan::NEW;
            s.scan(&json.as_bytes()[..cut]);
            s.scan(&json.as_bytes()[cut..]);
            s.finish();
            assert_eq!(
                (s.content, s.usage, s.error),
                (true, Some(42), false),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn deep_nesting_is_counted() {
        let mut json = std::string::String::from(r#"{"x":"#);
        for _ in 0..40 {
            json.push_str(r#"{"a":["#);
        }
        for _ in 0..40 {
            json.push_str("]}");
        }
        json.push_str(r#","usage":{"completion_tokens":5}}"#);
        assert_eq!(scan(&json), (false, Some(5), false));
    }

    #[test]
    fn find_quote_or_backslash_matches_naive_oracle() {
        let naive = |s: &[u8]| s.iter().position(|&b| b == b'"' || b == b'\\');
        // Fill bytes include the neighbours of the targets and bytes with
        // the high bit set, which trip naive SWAR tricks.
        let fill: std::vec::Vec<u8> = (0..=255u8).filter(|&b| b != b'"' && b != b'\\').collect();
        for len in 0..=150usize {
            let mut s: std::vec::Vec<u8> = (0..len)
                .map(|k| fill[(k * 37 + len) % fill.len()])
                .collect();
            assert_eq!(find_quote_or_backslash(&s), None, "len {len}");
            for pos in 0..len {
                for target in [b'"', b'\\'] {
                    let saved = s[pos];
                    s[pos] = target;
                    assert_eq!(
                        find_quote_or_backslash(&s),
                        naive(&s),
                        "len {len} pos {pos}"
                    );
                    assert_eq!(find_quote_or_backslash(&s), Some(pos));
                    s[pos] = saved;
                }
            }
        }
        // Two targets: the first wins.
        assert_eq!(find_quote_or_backslash(b"abcdefgh\\ijk\"lmn"), Some(8));
        assert_eq!(find_quote_or_backslash(b"\x01\"\x21\x23\\"), Some(1));
    }

    #[test]
    fn done_matcher() {
        let table: &[(&[u8], bool)] = &[
            (b"[DONE]", true),
            (b"  [DONE] ", true),
            (b"[DONE", false),
            (b"[DONE]x", false),
            (b"[done]", false),
            (b"{}", false),
            (b"", false),
        ];
        for (data, want) in table {
            let mut m = DoneMatch::Matching(0);
            m.feed(data);
            assert_eq!(
                m == DoneMatch::Matched,
                *want,
                "{:?}",
                core::str::from_utf8(data)
            );
        }
    }
}
