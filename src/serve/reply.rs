//! Responses: status lines, the `Connection` header, bodies, and the bytes
//! of a reply or of one chunk.

use std::io::Write;

use super::request::{Reject, RequestHead};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Status {
    Ok,
    BadRequest,
    NotFound,
    MethodNotAllowed,
    LengthRequired,
    PayloadTooLarge,
    TooManyRequests,
    HeadersTooLarge,
}

impl Status {
    /// The answer to a request the server refuses.
    pub(super) fn of_reject(r: Reject) -> Status {
        match r {
            Reject::Malformed => Status::BadRequest,
            Reject::Encoded => Status::LengthRequired,
            Reject::BodyTooLarge => Status::PayloadTooLarge,
            Reject::HeadTooLarge => Status::HeadersTooLarge,
        }
    }

    /// The numeric code (HTTP/2's `:status`).
    pub(super) fn code(self) -> u16 {
        match self {
            Self::Ok => 200,
            Self::BadRequest => 400,
            Self::NotFound => 404,
            Self::MethodNotAllowed => 405,
            Self::LengthRequired => 411,
            Self::PayloadTooLarge => 413,
            Self::TooManyRequests => 429,
            Self::HeadersTooLarge => 431,
        }
    }

    pub(super) fn line(self) -> &'static str {
        match self {
            Self::Ok => "200 OK",
            Self::BadRequest => "400 Bad Request",
            Self::NotFound => "404 Not Found",
            Self::MethodNotAllowed => "405 Method Not Allowed",
            Self::LengthRequired => "411 Length Required",
            Self::PayloadTooLarge => "413 Payload Too Large",
            Self::TooManyRequests => "429 Too Many Requests",
            Self::HeadersTooLarge => "431 Request Header Fields Too Large",
        }
    }
}

/// The `Connection` header a response carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ConnectionHeader {
    /// HTTP/1.1 keep-alive: no header.
    None,
    /// The connection closes after this response.
    Close,
    /// HTTP/1.0 keep-alive, echoed.
    KeepAlive,
}

impl ConnectionHeader {
    pub(super) fn for_request(head: &RequestHead, close: bool) -> Self {
        if close || !head.keep_alive {
            Self::Close
        } else if head.http10 {
            Self::KeepAlive
        } else {
            Self::None
        }
    }

    pub(super) fn line(self) -> &'static str {
        match self {
            Self::None => "",
            Self::Close => "Connection: close\r\n",
            Self::KeepAlive => "Connection: keep-alive\r\n",
        }
    }
}

/// A body chosen when the request is admitted, written when due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Body {
    /// The configured plain body.
    Plain,
    Text(&'static str),
    Json(&'static str),
    /// The model list (`GET /v1/models`).
    Models,
}

/// The creation time `GET /v1/models` reports: a fixed instant, so answers
/// are reproducible (2024-01-01T00:00:00Z).
pub(super) const MODEL_CREATED: u64 = 1_704_067_200;

/// OpenAI's model list with the one model `id`.
pub(super) fn models_json(id: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "object": "list",
        "data": [{"id": id, "object": "model", "created": MODEL_CREATED, "owned_by": "metronome"}],
    }))
    .unwrap_or_default()
}
pub(super) const RATE_LIMIT_JSON: &str = r#"{"error":{"message":"injected 429","type":"rate_limit_error","code":"rate_limit_exceeded"}}"#;

/// `ok` repeated and truncated to `len` bytes.
pub(super) fn plain_body(len: usize) -> Vec<u8> {
    b"ok".iter().copied().cycle().take(len).collect()
}

/// Appends a complete response with a `Content-Length` body.
pub(super) fn write_reply(
    out: &mut Vec<u8>,
    status: Status,
    connection: ConnectionHeader,
    content_type: &str,
    body: &[u8],
    head_only: bool,
) {
    // Writing into a Vec cannot fail.
    let _ = write!(
        out,
        "HTTP/1.1 {}\r\nContent-Length: {}\r\nContent-Type: {content_type}\r\n{}\r\n",
        status.line(),
        body.len(),
        connection.line()
    );
    if !head_only {
        out.extend_from_slice(body);
    }
}

/// Appends `event` as one chunk of a chunked body (or raw, for HTTP/1.0).
pub(super) fn push_chunk(out: &mut Vec<u8>, event: &[u8], chunked: bool) {
    if chunked {
        let _ = write!(out, "{:x}\r\n", event.len());
        out.extend_from_slice(event);
        out.extend_from_slice(b"\r\n");
    } else {
        out.extend_from_slice(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_json_is_openai_shaped() {
        assert_eq!(
            String::from_utf8(models_json("org/m \"x\"")).unwrap(),
            r#"{"data":[{"created":1704067200,"id":"org/m \"x\"","object":"model","owned_by":"metronome"}],"object":"list"}"#
        );
    }

    #[test]
    fn plain_body_repeats_ok() {
        assert_eq!(plain_body(0), b"");
        assert_eq!(plain_body(2), b"ok");
        assert_eq!(plain_body(5), b"okoko");
    }

    #[test]
    fn reply_bytes_match_the_contract() {
        let mut out = Vec::new();
        write_reply(
            &mut out,
            Status::Ok,
            ConnectionHeader::None,
            "text/plain",
            b"ok",
            false,
        );
        assert_eq!(
            out,
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"
        );
        out.clear();
        write_reply(
            &mut out,
            Status::TooManyRequests,
            ConnectionHeader::Close,
            "text/plain",
            b"x",
            true,
        );
        assert_eq!(
            out,
            b"HTTP/1.1 429 Too Many Requests\r\nContent-Length: 1\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
        );
    }
}
