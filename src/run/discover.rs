//! `--model` discovered from the server when not given: one blocking
//! `GET /v1/models` before the run (std sockets, over TLS for https, a
//! short timeout, HTTP/1.1 parsed with httparse), and the first `data[].id`
//! of the OpenAI-shaped list it answers.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::UsageError;

/// How long the discovery may take in all (connect, send, answer).
pub const TIMEOUT: Duration = Duration::from_secs(5);
/// The largest model list read.
const MAX_RESPONSE: usize = 4 << 20;

/// Why the model could not be discovered.
#[derive(Debug)]
pub enum DiscoverError {
    /// No connection, or it failed before a complete answer (exit 1).
    Io(std::io::Error),
    /// The server answered something other than a usable model list (exit 2).
    Answer(String),
}

/// The first model id of `GET path` on `addr` (`host` is the Host header;
/// `headers` are sent too, e.g. `Authorization`), over TLS with `tls`.
///
/// # Errors
/// [`DiscoverError::Io`] when the server cannot be reached or does not
/// answer within [`TIMEOUT`]; [`DiscoverError::Answer`] for a non-200
/// status, a body that is not a model list, or an empty list.
pub fn first_model(
    addr: SocketAddr,
    host: &str,
    path: &str,
    headers: &[String],
    tls: Option<&crate::tls::ClientTls>,
) -> Result<String, DiscoverError> {
    let deadline = Instant::now() + TIMEOUT;
    let sock = TcpStream::connect_timeout(&addr, TIMEOUT).map_err(DiscoverError::Io)?;
    sock.set_write_timeout(Some(TIMEOUT))
        .map_err(DiscoverError::Io)?;
    // The same socket, to set its read timeout under a TLS stream.
    let timeouts = sock.try_clone().map_err(DiscoverError::Io)?;
    let mut conn: Box<dyn ReadWrite> = match tls {
        None => Box::new(sock),
        Some(t) => {
            let session = rustls::ClientConnection::new(t.config.clone(), t.server_name.clone())
                .map_err(|e| DiscoverError::Io(std::io::Error::other(e)))?;
            Box::new(rustls::StreamOwned::new(session, sock))
        }
    };
    let mut request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: metronome/{}\r\nAccept: application/json\r\n",
        env!("CARGO_PKG_VERSION")
    );
    for h in headers {
        let name = h.split_once(':').map_or("", |(n, _)| n.trim());
        if ![
            "host",
            "content-length",
            "content-type",
            "connection",
            "accept",
        ]
        .iter()
        .any(|n| name.eq_ignore_ascii_case(n))
        {
            request.push_str(h.trim());
            request.push_str("\r\n");
        }
    }
    request.push_str("Connection: close\r\n\r\n");
    conn.write_all(request.as_bytes())
        .map_err(DiscoverError::Io)?;
    let mut buf = Vec::with_capacity(4096);
    let mut scratch = [0u8; 8192];
    loop {
        if let Some(answer) = parse_response(&buf, false)? {
            return answer;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(DiscoverError::Io(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no complete answer within {}s", TIMEOUT.as_secs()),
            )));
        }
        timeouts
            .set_read_timeout(Some(left))
            .map_err(DiscoverError::Io)?;
        match conn.read(&mut scratch) {
            Ok(0) => {
                return match parse_response(&buf, true)? {
                    Some(answer) => answer,
                    None => Err(DiscoverError::Io(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the connection closed before a complete answer",
                    ))),
                }
            }
            Ok(n) if buf.len() + n > MAX_RESPONSE => {
                return Err(DiscoverError::Answer(format!(
                    "the answer is larger than {} MiB",
                    MAX_RESPONSE >> 20
                )))
            }
            Ok(n) => buf.extend_from_slice(&scratch[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(DiscoverError::Io(e)),
        }
    }
}

type Answer = Result<String, DiscoverError>;

/// A plain or TLS stream.
trait ReadWrite: Read + Write {}

impl<T: Read + Write> ReadWrite for T {}

/// `Ok(None)` while the response is incomplete (`eof`: the peer closed,
/// so a body without length ends here).
fn parse_response(buf: &[u8], eof: bool) -> Result<Option<Answer>, DiscoverError> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    let head_len = match response.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => {
            return Err(DiscoverError::Answer(format!(
                "not an HTTP/1.1 response ({e})"
            )))
        }
    };
    let status = response.code.unwrap_or(0);
    let header = |name: &str| {
        response
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
    };
    let rest = &buf[head_len..];
    let body: Vec<u8> = if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        match dechunk(rest) {
            Some(b) => b,
            None if eof => {
                return Err(DiscoverError::Answer(
                    "a chunked body cut short".to_string(),
                ))
            }
            None => return Ok(None),
        }
    } else if let Some(len) = header("content-length") {
        let len: usize = len
            .parse()
            .map_err(|_| DiscoverError::Answer(format!("a bad Content-Length '{len}'")))?;
        if rest.len() < len {
            return if eof {
                Err(DiscoverError::Answer("a body cut short".to_string()))
            } else {
                Ok(None)
            };
        }
        rest[..len].to_vec()
    } else if eof {
        rest.to_vec()
    } else {
        return Ok(None);
    };
    if status != 200 {
        return Ok(Some(Err(DiscoverError::Answer(format!(
            "it answered {status} {}",
            response.reason.unwrap_or("")
        )))));
    }
    Ok(Some(first_id(&body).map_err(DiscoverError::Answer)))
}

/// Decodes a complete chunked body; `None` while incomplete.
fn dechunk(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&rest[..line_end]).ok()?;
        let size_text = size_text.split(';').next()?.trim();
        let size = usize::from_str_radix(size_text, 16).ok()?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        if rest.len() < size + 2 {
            return None;
        }
        out.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

/// The first `data[].id` of an OpenAI model list.
///
/// # Errors
/// One line saying what the body lacks.
///
/// # Example
/// ```
/// use metronome::run::discover::first_id;
/// let list = br#"{"object":"list","data":[{"id":"Qwen/Qwen3-0.6B","object":"model"},{"id":"b"}]}"#;
/// assert_eq!(first_id(list).unwrap(), "Qwen/Qwen3-0.6B");
/// assert!(first_id(br#"{"data":[]}"#).is_err());
/// ```
pub fn first_id(body: &[u8]) -> Result<String, String> {
    let v: serde_json::Value = serde_json::from_slice(body).map_err(|e| {
        format!(
            "its answer is not JSON ({e}): {}",
            String::from_utf8_lossy(&body[..body.len().min(80)])
        )
    })?;
    let data = v
        .get("data")
        .and_then(serde_json::Value::as_array)
        .ok_or("its answer has no \"data\" list")?;
    data.iter()
        .find_map(|m| m.get("id").and_then(serde_json::Value::as_str))
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .ok_or_else(|| "it lists no model".to_string())
}

/// Discovery as the run needs it: the model id, or the one-line error
/// naming `--model` (a [`UsageError`], exit 2, when the server answered
/// something unusable; exit 1 when it could not be reached).
///
/// # Errors
/// As described.
pub fn discover(
    addr: SocketAddr,
    host: &str,
    path: &str,
    headers: &[String],
    tls: Option<&crate::tls::ClientTls>,
) -> anyhow::Result<String> {
    let scheme = if tls.is_some() { "https" } else { "http" };
    let url = format!("{scheme}://{host}{path}");
    first_model(addr, host, path, headers, tls).map_err(|e| match e {
        // A refused TLS handshake, in words (as the engines say it).
        DiscoverError::Io(e) if e.get_ref().is_some_and(|i| i.is::<rustls::Error>()) => {
            let why = e
                .get_ref()
                .and_then(|i| i.downcast_ref::<rustls::Error>())
                .map(|r| metronome_core::tls::describe(r, tls.map(|t| &*t.client_cert)).1)
                .unwrap_or_default();
            anyhow::anyhow!("cannot discover the model: GET {url} failed: {why}; or give --model")
        }
        DiscoverError::Io(e) => anyhow::anyhow!(
            "cannot discover the model: GET {url} failed ({e}); is the server up? or give --model"
        ),
        DiscoverError::Answer(why) => UsageError(format!(
            "cannot discover the model from GET {url}: {why}; give it with --model"
        ))
        .into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(bytes: &[u8], eof: bool) -> Option<Result<String, String>> {
        match parse_response(bytes, eof) {
            Ok(Some(Ok(id))) => Some(Ok(id)),
            Ok(Some(Err(DiscoverError::Answer(w)))) | Err(DiscoverError::Answer(w)) => Some(Err(w)),
            Ok(None) => None,
            other => panic!("{other:?}"),
        }
    }

    const LIST: &str = r#"{"object":"list","data":[{"id":"m1","object":"model"}]}"#;

    #[test]
    fn content_length_chunked_and_close_delimited() {
        let cl = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{LIST}",
            LIST.len()
        );
        assert_eq!(answer(cl.as_bytes(), false), Some(Ok("m1".into())));
        assert_eq!(answer(&cl.as_bytes()[..cl.len() - 1], false), None);
        let chunked = format!(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{}\r\n{:x}\r\n{}\r\n0\r\n\r\n",
            &LIST[..5],
            LIST.len() - 5,
            &LIST[5..]
        );
        assert_eq!(answer(chunked.as_bytes(), false), Some(Ok("m1".into())));
        assert_eq!(answer(&chunked.as_bytes()[..40], false), None);
        let close = format!("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{LIST}");
        assert_eq!(answer(close.as_bytes(), false), None);
        assert_eq!(answer(close.as_bytes(), true), Some(Ok("m1".into())));
    }

    #[test]
    fn unusable_answers_say_why() {
        assert_eq!(
            answer(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nnah",
                false
            ),
            Some(Err("it answered 404 Not Found".into()))
        );
        assert_eq!(
            answer(
                b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{\"data\":[]}",
                false
            ),
            Some(Err("it lists no model".into()))
        );
        assert_eq!(
            answer(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", false),
            Some(Err("its answer has no \"data\" list".into()))
        );
        assert!(answer(b"SSH-2.0-OpenSSH\r\n\r\n", false)
            .unwrap()
            .unwrap_err()
            .starts_with("not an HTTP/1.1 response"));
    }
}
