//! Jobs: what a connection owes the client, in order. A job is one reply
//! written whole when due, or an SSE stream written event by event.

use std::io::Write;
use std::time::Instant;

use super::reply::{push_chunk, Body, ConnectionHeader, Status};
use super::ServeConfig;

/// Every chunk of a stream starts with this (then `"choices":...`).
const CHUNK_PREFIX: &str =
    r#"{"id":"chatcmpl-metronome","object":"chat.completion.chunk","model":"metronome","#;
const ERROR_EVENT: &[u8] =
    b"event: error\ndata: {\"error\":{\"message\":\"injected error\",\"type\":\"server_error\"}}\n\n";

#[derive(Debug)]
pub(super) enum Job {
    /// One response with a body, written whole at `due`.
    Reply {
        due: Instant,
        status: Status,
        body: Body,
        connection: ConnectionHeader,
        head_only: bool,
        /// Counts as served.
        counted: bool,
    },
    /// An SSE stream, written event by event.
    Stream(Stream),
}

impl Job {
    pub(super) fn due(&self, config: &ServeConfig) -> Instant {
        match self {
            Self::Reply { due, .. } => *due,
            Self::Stream(stream) => stream.due(config),
        }
    }

    pub(super) fn closes(&self) -> bool {
        match self {
            Self::Reply { connection, .. } => *connection == ConnectionHeader::Close,
            Self::Stream(stream) => stream.connection == ConnectionHeader::Close,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StreamKind {
    Normal,
    /// Close the connection after half the tokens.
    Cut,
    /// An error event instead of the tokens.
    ErrorEvent,
}

#[derive(Debug)]
pub(super) struct Stream {
    /// When the request arrived: the head and the role chunk go out then.
    pub(super) arrival: Instant,
    /// Service start `t0` (after any stall).
    pub(super) start: Instant,
    pub(super) tokens: u32,
    pub(super) prompt_tokens: u64,
    pub(super) kind: StreamKind,
    pub(super) connection: ConnectionHeader,
    /// Chunked framing (HTTP/1.1) or raw events until close (HTTP/1.0).
    pub(super) chunked: bool,
    /// Steps done: 0 = nothing sent yet; then one per token; then the end.
    pub(super) step: u32,
}

/// What a stream step asks of the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StreamStep {
    More,
    Done,
    Cut,
}

impl Stream {
    fn token_due(&self, config: &ServeConfig, i: u32) -> Instant {
        self.start + config.ttft + config.itl * i
    }

    /// Tokens sent before the end (or the cut).
    fn token_count(&self) -> u32 {
        match self.kind {
            StreamKind::Normal => self.tokens,
            StreamKind::Cut => self.tokens / 2,
            StreamKind::ErrorEvent => 0,
        }
    }

    pub(super) fn due(&self, config: &ServeConfig) -> Instant {
        let sent = self.token_count();
        match self.step {
            0 => self.arrival,
            s if s <= sent => self.token_due(config, s - 1),
            // The end: right after the last token, or when the first token
            // (or the token at the cut) would have been due.
            _ => match self.kind {
                StreamKind::Normal if sent > 0 => self.token_due(config, sent - 1),
                _ => self.token_due(config, sent),
            },
        }
    }

    /// Appends the bytes of the next step to `out`.
    pub(super) fn step(&mut self, out: &mut Vec<u8>, event: &mut Vec<u8>) -> StreamStep {
        let sent = self.token_count();
        event.clear();
        let step = self.step;
        self.step += 1;
        if step == 0 {
            let _ = write!(
                out,
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n{}{}\r\n",
                if self.chunked { "Transfer-Encoding: chunked\r\n" } else { "" },
                self.connection.line()
            );
            let _ = write!(
                event,
                "data: {CHUNK_PREFIX}\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\"}},\"finish_reason\":null}}]}}\n\n"
            );
            push_chunk(out, event, self.chunked);
            return StreamStep::More;
        }
        if step <= sent {
            let i = step - 1;
            let finish = if self.kind == StreamKind::Normal && step == self.tokens {
                "\"stop\""
            } else {
                "null"
            };
            let _ = write!(
                event,
                "data: {CHUNK_PREFIX}\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"tok{i} \"}},\"finish_reason\":{finish}}}]}}\n\n"
            );
            push_chunk(out, event, self.chunked);
            return StreamStep::More;
        }
        match self.kind {
            StreamKind::Cut => return StreamStep::Cut,
            StreamKind::ErrorEvent => push_chunk(out, ERROR_EVENT, self.chunked),
            StreamKind::Normal => {
                let n = u64::from(self.tokens);
                let p = self.prompt_tokens;
                let _ = write!(
                    event,
                    "data: {CHUNK_PREFIX}\"choices\":[],\"usage\":{{\"prompt_tokens\":{p},\"completion_tokens\":{n},\"total_tokens\":{}}}}}\n\n",
                    p + n
                );
                push_chunk(out, event, self.chunked);
                push_chunk(out, b"data: [DONE]\n\n", self.chunked);
            }
        }
        if self.chunked {
            out.extend_from_slice(b"0\r\n\r\n");
        }
        StreamStep::Done
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn stream_steps_and_times() {
        let config = ServeConfig {
            ttft: ms(50),
            itl: ms(10),
            ..ServeConfig::default()
        };
        let t = Instant::now();
        let mut stream = Stream {
            arrival: t,
            start: t + ms(5),
            tokens: 2,
            prompt_tokens: 4,
            kind: StreamKind::Normal,
            connection: ConnectionHeader::None,
            chunked: true,
            step: 0,
        };
        let (mut out, mut event) = (Vec::new(), Vec::new());
        let mut dues = Vec::new();
        let mut text = String::new();
        loop {
            dues.push(stream.due(&config) - t);
            out.clear();
            let step = stream.step(&mut out, &mut event);
            text += std::str::from_utf8(&out).unwrap();
            if step == StreamStep::Done {
                break;
            }
        }
        assert_eq!(dues, [ms(0), ms(55), ms(65), ms(65)]);
        assert!(text.starts_with("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"));
        assert!(text.contains(r#""delta":{"content":"tok0 "},"finish_reason":null"#));
        assert!(text.contains(r#""delta":{"content":"tok1 "},"finish_reason":"stop""#));
        assert!(
            text.contains(r#""usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}"#)
        );
        assert!(text.ends_with("e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"));
    }

    #[test]
    fn cut_stream_stops_when_the_middle_token_is_due() {
        let config = ServeConfig {
            ttft: ms(50),
            itl: ms(10),
            ..ServeConfig::default()
        };
        let t = Instant::now();
        let mut stream = Stream {
            arrival: t,
            start: t,
            tokens: 5,
            prompt_tokens: 0,
            kind: StreamKind::Cut,
            connection: ConnectionHeader::None,
            chunked: true,
            step: 0,
        };
        let (mut out, mut event) = (Vec::new(), Vec::new());
        let mut steps = Vec::new();
        loop {
            let due = stream.due(&config) - t;
            let step = stream.step(&mut out, &mut event);
            steps.push((due, step));
            if step != StreamStep::More {
                break;
            }
        }
        assert_eq!(
            steps,
            [
                (ms(0), StreamStep::More),
                (ms(50), StreamStep::More),
                (ms(60), StreamStep::More),
                (ms(70), StreamStep::Cut),
            ]
        );
    }
}
