//! `--grpc SERVICE/METHOD`: unary gRPC over HTTP/2. The call is an ordinary
//! request of the plan, built before the clock: `POST /SERVICE/METHOD` with
//! `content-type: application/grpc` and `te: trailers`, and a body that is
//! the message (`--body-file`, already protobuf-encoded) behind gRPC's
//! 5-byte prefix. HTTP/2 is implied (prior knowledge for http://, ALPN h2
//! for https://). How a call ends is core's rule
//! ([`Finish::for_grpc`](metronome_core::exchange::Finish::for_grpc)).

use crate::cli::RunArgs;
use crate::UsageError;

use super::request::Target;

/// The arguments a `--grpc` run is made of: HTTP/2 as the scheme calls for,
/// the URL's path `/SERVICE/METHOD`, the gRPC headers. Without `--grpc`,
/// `None`.
///
/// # Errors
/// A [`UsageError`] for a bad `SERVICE/METHOD`, a URL with a path, or a
/// header `--grpc` sets itself.
pub(super) fn args(args: &RunArgs) -> Result<Option<RunArgs>, UsageError> {
    let Some(call) = args.grpc.as_deref() else {
        return Ok(None);
    };
    let path = call_path(call)?;
    let target = Target::parse(&args.url)?;
    if target.path != "/" {
        return Err(UsageError(format!(
            "--grpc sends to /SERVICE/METHOD on the server: give the URL without a path \
             (like {}://{}), not '{}'",
            if target.tls { "https" } else { "http" },
            target.authority(),
            args.url
        )));
    }
    let mut headers = Vec::with_capacity(args.headers.len() + 2);
    let mut content_type = false;
    for h in &args.headers {
        let (name, value) = h.split_once(':').unwrap_or((h, ""));
        let name = name.trim();
        if name.eq_ignore_ascii_case("te") {
            return Err(UsageError(
                "--grpc sends 'te: trailers' itself: drop the -H te header".into(),
            ));
        }
        if name.eq_ignore_ascii_case("content-type") {
            if !value.trim().starts_with("application/grpc") {
                return Err(UsageError(format!(
                    "--grpc needs content-type application/grpc (or application/grpc+...), \
                     not '{}'",
                    value.trim()
                )));
            }
            content_type = true;
        }
        headers.push(h.clone());
    }
    if !content_type {
        headers.push("content-type: application/grpc".into());
    }
    headers.push("te: trailers".into());
    let mut a = args.clone();
    a.url = format!(
        "{}://{}{path}",
        if target.tls { "https" } else { "http" },
        target.authority()
    );
    a.headers = headers;
    a.method = Some("POST".into());
    if target.tls {
        a.http2 = true;
    } else {
        a.http2_prior_knowledge = true;
    }
    Ok(Some(a))
}

/// `SERVICE/METHOD` as the request path `/SERVICE/METHOD`: the service a
/// protobuf full name (`package.Service`: letters, digits, `_`, dots
/// between them), the method a name (letters, digits, `_`).
///
/// # Errors
/// A [`UsageError`] saying what is wrong.
fn call_path(call: &str) -> Result<String, UsageError> {
    let bad = |why: &str| {
        UsageError(format!(
            "bad --grpc '{call}': {why}; write SERVICE/METHOD, like grpc.health.v1.Health/Check"
        ))
    };
    let (service, method) = call
        .split_once('/')
        .ok_or_else(|| bad("no '/' between service and method"))?;
    let word = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if service.is_empty() {
        return Err(bad("no service before the '/'"));
    }
    if !service.split('.').all(word) {
        return Err(bad(
            "the service must be a protobuf name (letters, digits, '_', dots between parts)",
        ));
    }
    if method.is_empty() {
        return Err(bad("no method after the '/'"));
    }
    if !word(method) {
        return Err(bad("the method must be a name (letters, digits, '_')"));
    }
    Ok(format!("/{service}/{method}"))
}

/// The request body of a call: `message` (protobuf-encoded, possibly
/// empty) behind the 5-byte prefix of gRPC's length-prefixed message (flag
/// 0, not compressed; the length as a big-endian u32).
///
/// # Errors
/// A [`UsageError`] for a message of 4 GiB or more.
pub(super) fn frame(message: &[u8]) -> Result<Vec<u8>, UsageError> {
    let len = u32::try_from(message.len()).map_err(|_| {
        UsageError(format!(
            "--grpc message of {} bytes: a gRPC message is at most 4 GiB - 1",
            message.len()
        ))
    })?;
    let mut body = Vec::with_capacity(5 + message.len());
    body.push(0);
    body.extend_from_slice(&len.to_be_bytes());
    body.extend_from_slice(message);
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_paths() {
        assert_eq!(
            call_path("grpc.health.v1.Health/Check").unwrap(),
            "/grpc.health.v1.Health/Check"
        );
        assert_eq!(call_path("Echo/Say_2").unwrap(), "/Echo/Say_2");
        for bad in [
            "",
            "Health",
            "/Check",
            "Health/",
            "/Health/Check",
            "a..b/C",
            ".a/C",
            "a./C",
            "a b/C",
            "a/b/c",
            "a/b?x",
            "a/b-c",
            "é/C",
        ] {
            let e = call_path(bad).unwrap_err().0;
            assert!(e.starts_with(&format!("bad --grpc '{bad}': ")), "{e}");
            assert!(e.contains("SERVICE/METHOD"), "{e}");
        }
    }

    #[test]
    fn frames() {
        assert_eq!(frame(b"").unwrap(), [0, 0, 0, 0, 0]);
        assert_eq!(frame(b"\x0a\x01x").unwrap(), [0, 0, 0, 0, 3, 0x0a, 1, b'x']);
        let big = vec![7u8; 300];
        let f = frame(&big).unwrap();
        assert_eq!(&f[..5], [0, 0, 0, 1, 44]);
        assert_eq!(&f[5..], &big[..]);
    }
}
