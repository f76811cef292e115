//! The golden table of what a response head's field means (core's
//! `head::ResponseFields`), one row per field, shared by
//! core/tests/golden/head.rs (the reading itself) and tests/hostile/heads.rs
//! (each row served over HTTP/1.1, HTTP/2 and HTTP/3 on both engines).

/// What a row's field must be read as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reads {
    /// `content-type`: an event stream or not.
    EventStream(bool),
    /// `grpc-status`: the code, or `None` for a value that is not one.
    GrpcStatus(Option<u32>),
    /// `content-length`: the length, or `None` for a refused value.
    ContentLength(Option<u64>),
}

/// One field of a response head and how it must be read.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// The field's name (lowercase, as HTTP/2 and HTTP/3 require).
    pub name: &'static str,
    /// Its value.
    pub value: &'static str,
    /// What it means.
    pub reads: Reads,
}

const fn row(name: &'static str, value: &'static str, reads: Reads) -> Row {
    Row { name, value, reads }
}

/// Every row.
pub const HEADS: &[Row] = &[
    row(
        "content-type",
        "text/event-stream",
        Reads::EventStream(true),
    ),
    row(
        "content-type",
        "Text/Event-Stream",
        Reads::EventStream(true),
    ),
    row(
        "content-type",
        "text/event-stream; charset=utf-8",
        Reads::EventStream(true),
    ),
    row(
        "content-type",
        "text/event-streamx",
        Reads::EventStream(false),
    ),
    row(
        "content-type",
        "application/json",
        Reads::EventStream(false),
    ),
    row("grpc-status", "5", Reads::GrpcStatus(Some(5))),
    row("grpc-status", "+5", Reads::GrpcStatus(None)),
    row("grpc-status", "0012", Reads::GrpcStatus(Some(12))),
    row("grpc-status", "1234567890", Reads::GrpcStatus(None)),
    row("content-length", "0012", Reads::ContentLength(Some(12))),
    row("content-length", "12, 12", Reads::ContentLength(Some(12))),
    row("content-length", "+12", Reads::ContentLength(None)),
];
