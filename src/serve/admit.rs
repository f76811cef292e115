//! Admission: what the model answers to one complete request, whatever
//! the protocol. HTTP/1.1 (`connection`) and HTTP/2 (`h2`) both stamp a
//! request when the read that completed it returned, ask [`admit`] (or
//! [`admit_grpc`]), and frame the answer their own way, so both serve the
//! same FIFO, stall, 429 and SSE semantics.

use std::time::Instant;

use super::fifo::hits;
use super::reply::{Body, Status, RATE_LIMIT_JSON};
use super::request::{parse_chat_request, Method, Route};
use super::stream::{replay_body, replay_events, Shape, StreamKind, JSON_ANSWER};
use super::Shared;

/// The model's answer to one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Admitted {
    /// One response with a body, written whole at `due`.
    Reply {
        due: Instant,
        status: Status,
        body: Body,
        /// Counts as served.
        counted: bool,
    },
    /// An SSE stream: the head and role chunk at `arrival`, token i at
    /// `start + ttft + i * itl`.
    Stream {
        arrival: Instant,
        start: Instant,
        tokens: u32,
        prompt_tokens: u64,
        kind: StreamKind,
    },
}

/// Decides the answer to a request with `method`, `route` and `body` that
/// arrived (was complete) at `arrival`, admitting it into the FIFO model.
pub(super) fn admit(
    shared: &Shared,
    arrival: Instant,
    method: Method,
    route: Route,
    body: &[u8],
) -> Admitted {
    let config = &shared.config;
    let reply = |due, status, body, counted| Admitted::Reply {
        due,
        status,
        body,
        counted,
    };
    if !config.sse {
        let admission = shared.fifo().admit(shared.since_epoch(arrival));
        let due = shared.epoch + admission.completion;
        return if hits(config.error_every, admission.index) {
            reply(
                due,
                Status::TooManyRequests,
                Body::Text("too many requests\n"),
                true,
            )
        } else {
            reply(due, Status::Ok, Body::Plain, true)
        };
    }
    match (route, method) {
        (Route::Chat | Route::Completions, Method::Post) => {}
        (Route::Models, Method::Get | Method::Head) => {
            return reply(arrival, Status::Ok, Body::Models, false)
        }
        // vLLM's health check, which guidellm asks before a run: 200,
        // no body.
        (Route::Health, Method::Get | Method::Head) => {
            return reply(arrival, Status::Ok, Body::Text(""), false)
        }
        (Route::Chat | Route::Completions | Route::Models | Route::Health, _) => {
            return reply(
                arrival,
                Status::MethodNotAllowed,
                Body::Text("method not allowed\n"),
                false,
            )
        }
        (Route::Other, _) => {
            return reply(arrival, Status::NotFound, Body::Text("not found\n"), false)
        }
    }
    let chat = parse_chat_request(body);
    let admission = shared.fifo().admit_stream(shared.since_epoch(arrival));
    let start = shared.epoch + admission.start;
    if hits(config.error_every, admission.index) {
        return reply(
            start,
            Status::TooManyRequests,
            Body::Json(RATE_LIMIT_JSON),
            true,
        );
    }
    let mut kind = if hits(config.error_event_every, admission.index) {
        StreamKind::ErrorEvent
    } else if hits(config.cut_every, admission.index) {
        StreamKind::Cut
    } else {
        StreamKind::Normal
    };
    let mut tokens = chat.max_tokens.map_or(config.tokens, |cap| {
        config.tokens.min(u32::try_from(cap).unwrap_or(u32::MAX))
    });
    if kind == StreamKind::Normal {
        if config.shape == Shape::Json {
            return reply(
                start + config.ttft,
                Status::Ok,
                Body::Json(JSON_ANSWER),
                true,
            );
        }
        if let Some(body) = replay_body(config.shape) {
            // A golden body: its events after the first are the "tokens".
            let events = replay_events(body).count();
            tokens = u32::try_from(events.saturating_sub(1)).unwrap_or(u32::MAX);
            kind = StreamKind::Replay(body);
        }
    }
    Admitted::Stream {
        arrival,
        start,
        tokens,
        prompt_tokens: chat.prompt_tokens,
        kind,
    }
}

/// The model's answer to a unary gRPC call (HTTP/2 only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum GrpcAnswer {
    /// `:status 200`, one empty message, trailers with this `grpc-status`
    /// (0), or a trailers-only response when it is not 0.
    Status(u32),
    /// `--error-every`: an HTTP `429` (a gateway's rate limit; gRPC
    /// clients read it as `UNAVAILABLE`).
    TooManyRequests,
}

/// Admits a unary gRPC call that arrived at `arrival` into the FIFO model
/// (service time and stall as any plain request, in SSE mode too) and
/// returns when its answer is due and what it is.
pub(super) fn admit_grpc(shared: &Shared, arrival: Instant) -> (Instant, GrpcAnswer) {
    let config = &shared.config;
    let admission = shared.fifo().admit(shared.since_epoch(arrival));
    let due = shared.epoch + admission.completion;
    let answer = if hits(config.error_every, admission.index) {
        GrpcAnswer::TooManyRequests
    } else {
        match config.grpc_status_every {
            Some((every, code)) if hits(Some(every), admission.index) => GrpcAnswer::Status(code),
            _ => GrpcAnswer::Status(0),
        }
    };
    (due, answer)
}
