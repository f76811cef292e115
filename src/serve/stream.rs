//! Jobs: what a connection owes the client, in order. A job is one reply
//! written whole when due, or an SSE stream written event by event.

use std::io::Write;
use std::time::Instant;

use super::reply::{push_chunk, Body, ConnectionHeader, Status};
use super::ServeConfig;
use crate::cli::ShapeArg;

/// The stream shape the server sends with `--sse` (`--shape`;
/// docs/metrics.md): generated, or a golden stream replayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Generated: role chunk, content chunks, usage, `data: [DONE]`.
    Default,
    /// OpenAI: role-only first chunk, finish chunk, usage chunk with empty choices.
    Openai,
    /// vLLM: several tokens per chunk, usage last.
    Vllm,
    /// vLLM with continuous_usage_stats: usage on every chunk.
    Continuous,
    /// llama.cpp: no usage, a timings object.
    Llamacpp,
    /// Reasoning deltas before the answer.
    Reasoning,
    /// Tool-call deltas only.
    Tools,
    /// `content: ""` chunks between the tokens.
    EmptyContent,
    /// The openai shape without `data: [DONE]`.
    NoDone,
    /// Two tokens, then an error object.
    Error,
    /// The /v1/completions stream (choices[].text).
    Completions,
    /// A plain JSON answer (application/json), no stream.
    Json,
}

/// The value of `serve --shape`.
impl From<ShapeArg> for Shape {
    fn from(arg: ShapeArg) -> Self {
        match arg {
            ShapeArg::Default => Self::Default,
            ShapeArg::Openai => Self::Openai,
            ShapeArg::Vllm => Self::Vllm,
            ShapeArg::Continuous => Self::Continuous,
            ShapeArg::Llamacpp => Self::Llamacpp,
            ShapeArg::Reasoning => Self::Reasoning,
            ShapeArg::Tools => Self::Tools,
            ShapeArg::EmptyContent => Self::EmptyContent,
            ShapeArg::NoDone => Self::NoDone,
            ShapeArg::Error => Self::Error,
            ShapeArg::Completions => Self::Completions,
            ShapeArg::Json => Self::Json,
        }
    }
}

/// The golden body of a replayed shape (tests/streams/, built with the
/// `openai` package's types by tests/streams/make.py); `None` for the
/// generated default and for `json`.
pub(super) fn replay_body(shape: Shape) -> Option<&'static str> {
    Some(match shape {
        Shape::Default | Shape::Json => return None,
        Shape::Openai => include_str!("../../tests/streams/openai.sse"),
        Shape::Vllm => include_str!("../../tests/streams/vllm.sse"),
        Shape::Continuous => include_str!("../../tests/streams/continuous.sse"),
        Shape::Llamacpp => include_str!("../../tests/streams/llamacpp.sse"),
        Shape::Reasoning => include_str!("../../tests/streams/reasoning.sse"),
        Shape::Tools => include_str!("../../tests/streams/tools.sse"),
        Shape::EmptyContent => include_str!("../../tests/streams/empty_content.sse"),
        Shape::NoDone => include_str!("../../tests/streams/no_done.sse"),
        Shape::Error => include_str!("../../tests/streams/error.sse"),
        Shape::Completions => include_str!("../../tests/streams/completions.sse"),
    })
}

/// The plain JSON completion `--shape json` answers.
pub(super) const JSON_ANSWER: &str = include_str!("../../tests/streams/json.json");

/// The events of a replayed body, each with its blank line.
pub(super) fn replay_events(body: &'static str) -> impl Iterator<Item = &'static str> {
    body.split_inclusive("\n\n")
}

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
    /// A golden body replayed event by event: the first event with the
    /// head, event k when token k - 1 is due, the end right after the last.
    Replay(&'static str),
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
    /// How events are framed on the wire.
    pub(super) framing: Framing,
    /// Steps done: 0 = nothing sent yet; then one per token; then the end.
    pub(super) step: u32,
}

/// How a stream's bytes are framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Framing {
    /// HTTP/1.1: the head with the first step, each event a chunk, the
    /// terminating chunk at the end.
    Chunked,
    /// HTTP/1.0: the head with the first step, raw events, the body ends at
    /// close.
    UntilClose,
    /// HTTP/2: raw events only; the caller sends the head (HEADERS) and
    /// ends the stream (END_STREAM) itself.
    Bare,
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
            StreamKind::Normal | StreamKind::Replay(_) => self.tokens,
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
                StreamKind::Normal | StreamKind::Replay(_) if sent > 0 => {
                    self.token_due(config, sent - 1)
                }
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
        if let StreamKind::Replay(body) = self.kind {
            return self.replay_step(body, step, out);
        }
        if step == 0 {
            self.head(out);
            let _ = write!(
                event,
                "data: {CHUNK_PREFIX}\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\"}},\"finish_reason\":null}}]}}\n\n"
            );
            push_chunk(out, event, self.chunked());
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
            push_chunk(out, event, self.chunked());
            return StreamStep::More;
        }
        match self.kind {
            StreamKind::Cut => return StreamStep::Cut,
            StreamKind::ErrorEvent => push_chunk(out, ERROR_EVENT, self.chunked()),
            // Replayed bodies take `replay_step`.
            StreamKind::Normal | StreamKind::Replay(_) => {
                let n = u64::from(self.tokens);
                let p = self.prompt_tokens;
                let _ = write!(
                    event,
                    "data: {CHUNK_PREFIX}\"choices\":[],\"usage\":{{\"prompt_tokens\":{p},\"completion_tokens\":{n},\"total_tokens\":{}}}}}\n\n",
                    p + n
                );
                push_chunk(out, event, self.chunked());
                push_chunk(out, b"data: [DONE]\n\n", self.chunked());
            }
        }
        if self.chunked() {
            out.extend_from_slice(b"0\r\n\r\n");
        }
        StreamStep::Done
    }
}

impl Stream {
    fn chunked(&self) -> bool {
        self.framing == Framing::Chunked
    }

    /// The HTTP/1.x response head (nothing for [`Framing::Bare`]).
    fn head(&self, out: &mut Vec<u8>) {
        if self.framing == Framing::Bare {
            return;
        }
        let _ = write!(
            out,
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n{}{}\r\n",
            if self.chunked() { "Transfer-Encoding: chunked\r\n" } else { "" },
            self.connection.line()
        );
    }

    /// Step `step` of a replayed body: the head with the first event, then
    /// one event per step, then the end of the body.
    fn replay_step(&mut self, body: &'static str, step: u32, out: &mut Vec<u8>) -> StreamStep {
        if step == 0 {
            self.head(out);
        }
        match replay_events(body).nth(step as usize) {
            Some(event) => {
                push_chunk(out, event.as_bytes(), self.chunked());
                StreamStep::More
            }
            None => {
                if self.chunked() {
                    out.extend_from_slice(b"0\r\n\r\n");
                }
                StreamStep::Done
            }
        }
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
            framing: Framing::Chunked,
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
            framing: Framing::Chunked,
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

    #[test]
    fn replay_sends_each_golden_event_on_time() {
        let config = ServeConfig {
            ttft: ms(50),
            itl: ms(10),
            ..ServeConfig::default()
        };
        let body = replay_body(Shape::Openai).unwrap();
        let events: Vec<&str> = replay_events(body).collect();
        assert_eq!(events.len(), 9);
        assert!(events[8] == "data: [DONE]\n\n");
        let t = Instant::now();
        let mut stream = Stream {
            arrival: t + ms(10),
            start: t + ms(10),
            tokens: 8,
            prompt_tokens: 0,
            kind: StreamKind::Replay(body),
            connection: ConnectionHeader::None,
            framing: Framing::UntilClose,
            step: 0,
        };
        let (mut out, mut event) = (Vec::new(), Vec::new());
        let mut dues = Vec::new();
        loop {
            dues.push(stream.due(&config) - t);
            if stream.step(&mut out, &mut event) == StreamStep::Done {
                break;
            }
        }
        // The head and event 0 at arrival, event k at 10 + 50 + (k-1)*10,
        // the end with the last event.
        let want: Vec<Duration> = [10, 60, 70, 80, 90, 100, 110, 120, 130, 130]
            .into_iter()
            .map(ms)
            .collect();
        assert_eq!(dues, want);
        let text = String::from_utf8(out).unwrap();
        let head =
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n";
        assert_eq!(text, format!("{head}{body}"));
        // json and default are not replayed
        assert_eq!(replay_body(Shape::Json), None);
        assert_eq!(replay_body(Shape::Default), None);
        assert!(JSON_ANSWER.contains("\"chat.completion\""));
    }
}
