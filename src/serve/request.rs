//! Requests: the head the server needs, and what an SSE chat body asks for.

use super::{CHAT_PATH, COMPLETIONS_PATH};

/// The largest request head accepted; a longer one is answered `431`.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// The largest request body accepted; a longer one is answered `413`.
pub(super) const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
/// Headers parsed per request; more is answered `431`.
const MAX_HEADERS: usize = 64;

/// What the server needs from a request head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RequestHead {
    pub(super) head_len: usize,
    pub(super) body_len: usize,
    pub(super) method: Method,
    pub(super) route: Route,
    pub(super) http10: bool,
    pub(super) keep_alive: bool,
    pub(super) expect_continue: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Method {
    Head,
    Get,
    Post,
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Route {
    Chat,
    /// `/v1/completions`, served with the same streams as chat.
    Completions,
    Models,
    /// `/health`: vLLM's health check (guidellm asks it before a run).
    Health,
    Other,
}

impl Method {
    /// The method named `name` (case-sensitive, as HTTP says).
    pub(super) fn of(name: &[u8]) -> Self {
        match name {
            b"GET" => Method::Get,
            b"HEAD" => Method::Head,
            b"POST" => Method::Post,
            _ => Method::Other,
        }
    }
}

impl Route {
    /// The route of a request target (its query ignored).
    pub(super) fn of(target: &[u8]) -> Self {
        let path = target
            .iter()
            .position(|&b| b == b'?')
            .map_or(target, |q| &target[..q]);
        match path {
            p if p == CHAT_PATH.as_bytes() => Route::Chat,
            p if p == COMPLETIONS_PATH.as_bytes() => Route::Completions,
            b"/v1/models" => Route::Models,
            b"/health" => Route::Health,
            _ => Route::Other,
        }
    }
}

/// A request the server refuses, answered with a status and then closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reject {
    /// 400: not HTTP, or a bad Content-Length.
    Malformed,
    /// 411: a chunked (or otherwise encoded) request body.
    Encoded,
    /// 413: body above [`MAX_BODY_BYTES`].
    BodyTooLarge,
    /// 431: head above [`MAX_HEAD_BYTES`] or [`MAX_HEADERS`].
    HeadTooLarge,
}

/// Parses the head at the front of `buf`; `Ok(None)` while incomplete.
pub(super) fn parse_head(buf: &[u8]) -> Result<Option<RequestHead>, Reject> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let head_len = match request.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD_BYTES => {
            return Err(Reject::HeadTooLarge)
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(Reject::HeadTooLarge),
        Err(_) => return Err(Reject::Malformed),
    };
    let http10 = request.version == Some(0);
    let method = Method::of(request.method.unwrap_or("").as_bytes());
    let route = Route::of(request.path.unwrap_or("/").as_bytes());
    let (mut close, mut keep_alive, mut expect_continue) = (false, false, false);
    let mut body_len: Option<usize> = None;
    for header in request.headers.iter() {
        let name = header.name;
        if name.eq_ignore_ascii_case("content-length") {
            let len = std::str::from_utf8(header.value)
                .ok()
                .map(str::trim)
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<usize>().ok())
                .ok_or(Reject::Malformed)?;
            if body_len.is_some_and(|previous| previous != len) {
                return Err(Reject::Malformed);
            }
            body_len = Some(len);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(Reject::Encoded);
        } else if name.eq_ignore_ascii_case("connection") {
            for token in header.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                close |= token.eq_ignore_ascii_case(b"close");
                keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name.eq_ignore_ascii_case("expect") {
            expect_continue |= header
                .value
                .trim_ascii()
                .eq_ignore_ascii_case(b"100-continue");
        }
    }
    let body_len = body_len.unwrap_or(0);
    if body_len > MAX_BODY_BYTES {
        return Err(Reject::BodyTooLarge);
    }
    Ok(Some(RequestHead {
        head_len,
        body_len,
        method,
        route,
        http10,
        keep_alive: !close && (!http10 || keep_alive),
        expect_continue: expect_continue && !http10,
    }))
}

/// What an SSE request body asks for: the token cap and a prompt size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct ChatRequest {
    /// `max_tokens` or `max_completion_tokens`, if present.
    pub(super) max_tokens: Option<u64>,
    /// Whitespace-separated words in the messages' text (or `prompt`),
    /// reported as `usage.prompt_tokens`.
    pub(super) prompt_tokens: u64,
}

/// Reads what it can from a chat request body; anything unreadable is
/// ignored (the stream is served with the defaults).
pub(super) fn parse_chat_request(body: &[u8]) -> ChatRequest {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return ChatRequest::default();
    };
    let max_tokens = ["max_tokens", "max_completion_tokens"]
        .iter()
        .find_map(|key| value.get(key).and_then(serde_json::Value::as_u64));
    let words = |v: &serde_json::Value| -> u64 {
        match v {
            serde_json::Value::String(s) => s.split_whitespace().count() as u64,
            // Content parts: [{"type":"text","text":"..."}].
            serde_json::Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(serde_json::Value::as_str))
                .map(|s| s.split_whitespace().count() as u64)
                .sum(),
            _ => 0,
        }
    };
    let mut prompt_tokens = value.get("prompt").map_or(0, words);
    if let Some(messages) = value.get("messages").and_then(serde_json::Value::as_array) {
        prompt_tokens += messages
            .iter()
            .filter_map(|m| m.get("content"))
            .map(words)
            .sum::<u64>();
    }
    ChatRequest {
        max_tokens,
        prompt_tokens,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_head_reads_length_connection_and_route() {
        let req = b"POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nConnection: Keep-Alive, Close\r\n\r\nhello";
        let head = parse_head(req).unwrap().unwrap();
        assert_eq!(head.head_len, req.len() - 5);
        assert_eq!(head.body_len, 5);
        assert_eq!(head.route, Route::Chat);
        assert_eq!(head.method, Method::Post);
        assert!(!head.keep_alive);
        assert!(!head.http10);
    }

    #[test]
    fn parse_head_http10_keep_alive_only_when_asked() {
        let plain = parse_head(b"GET / HTTP/1.0\r\n\r\n").unwrap().unwrap();
        assert!(plain.http10 && !plain.keep_alive);
        let kept = parse_head(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(kept.http10 && kept.keep_alive);
        let v11 = parse_head(b"GET / HTTP/1.1\r\n\r\n").unwrap().unwrap();
        assert!(!v11.http10 && v11.keep_alive && v11.body_len == 0);
    }

    #[test]
    fn parse_head_partial_and_rejects() {
        assert_eq!(parse_head(b"GET / HTTP/1.1\r\nHost:"), Ok(None));
        assert_eq!(parse_head(b""), Ok(None));
        assert_eq!(parse_head(b"GARBAGE\r\n\r\n"), Err(Reject::Malformed));
        assert_eq!(
            parse_head(b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n"),
            Err(Reject::Malformed)
        );
        assert_eq!(
            parse_head(b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
            Err(Reject::Malformed)
        );
        assert_eq!(
            parse_head(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Err(Reject::Encoded)
        );
        assert_eq!(
            parse_head(b"POST / HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n"),
            Err(Reject::BodyTooLarge)
        );
        let mut huge = b"GET / HTTP/1.1\r\nX: ".to_vec();
        huge.resize(MAX_HEAD_BYTES + 10, b'a');
        assert_eq!(parse_head(&huge), Err(Reject::HeadTooLarge));
    }

    #[test]
    fn chat_request_caps_and_counts_prompt_words() {
        let body = br#"{"model":"m","max_tokens":3,"messages":[{"role":"user","content":"one two three"},{"role":"user","content":[{"type":"text","text":"four five"}]}]}"#;
        assert_eq!(
            parse_chat_request(body),
            ChatRequest {
                max_tokens: Some(3),
                prompt_tokens: 5
            }
        );
        assert_eq!(
            parse_chat_request(br#"{"max_completion_tokens":7,"prompt":"a b"}"#),
            ChatRequest {
                max_tokens: Some(7),
                prompt_tokens: 2
            }
        );
        assert_eq!(parse_chat_request(b"not json"), ChatRequest::default());
    }
}
