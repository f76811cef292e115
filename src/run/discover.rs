//! `--model` discovered from the server when not given: one blocking
//! `GET /v1/models` before the run, in the run's own protocol ([`Wire`]:
//! HTTP/1.1, HTTP/2 with prior knowledge or over TLS with ALPN `h2`, or
//! HTTP/3 through the std engine's one-request driver), with the run's
//! TLS settings and headers and a short timeout, and the first `data[].id`
//! of the OpenAI-shaped list it answers. HTTP/1.1 is framed by core's
//! response parser, HTTP/2 by core's connection, HTTP/3 by the quic
//! crate's, as a run's responses are.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use metronome_core::http::{Event, ParseError, ResponseParser};

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

/// The protocol a run speaks, and so its discovery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// HTTP/1.1 (over TLS for https).
    Http1,
    /// HTTP/2: prior knowledge (h2c) for http, ALPN `h2` only for https.
    Http2,
    /// HTTP/3 over QUIC (https only).
    Http3,
}

/// The first model id of `GET path` on `addr` (`host` is the Host header;
/// `headers` are sent too, e.g. `Authorization`), over TLS with `tls`, in
/// the protocol `wire`.
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
    wire: Wire,
) -> Result<String, DiscoverError> {
    let request = request(host, path, headers);
    if wire == Wire::Http3 {
        let Some(t) = tls else {
            return Err(DiscoverError::Answer("HTTP/3 needs an https:// URL".into()));
        };
        let block = encode(&request, b"https", metronome_core::h3::request::from_http1)?;
        let (status, body) = metronome_std::fetch_h3(addr, &t.engine(), &block, TIMEOUT)
            .map_err(DiscoverError::Io)?;
        return answered(status, body);
    }
    let deadline = Instant::now() + TIMEOUT;
    let sock = TcpStream::connect_timeout(&addr, TIMEOUT).map_err(DiscoverError::Io)?;
    sock.set_write_timeout(Some(TIMEOUT))
        .map_err(DiscoverError::Io)?;
    // The same socket, to set its read timeout under a TLS stream.
    let timeouts = sock.try_clone().map_err(DiscoverError::Io)?;
    let mut conn: Box<dyn ReadWrite> = match tls {
        None => Box::new(sock),
        Some(t) => {
            let mut config = t.config.clone();
            if wire == Wire::Http2 {
                // As the run's connections: h2 only.
                let mut c = (*config).clone();
                c.alpn_protocols = vec![b"h2".to_vec()];
                config = std::sync::Arc::new(c);
            }
            let session = rustls::ClientConnection::new(config, t.server_name.clone())
                .map_err(|e| DiscoverError::Io(std::io::Error::other(e)))?;
            Box::new(rustls::StreamOwned::new(session, sock))
        }
    };
    if wire == Wire::Http2 {
        let scheme: &[u8] = if tls.is_some() { b"https" } else { b"http" };
        let block = encode(&request, scheme, metronome_core::h2::request::from_http1)?;
        let (status, body) = h2_get(&mut *conn, &timeouts, &block, deadline)?;
        return answered(status, body);
    }
    conn.write_all(request.as_bytes())
        .map_err(DiscoverError::Io)?;
    // Core's response parser frames the answer (Content-Length, chunked or
    // read-until-close), as it does every response of a run.
    let mut parser = ResponseParser::new();
    let mut pending: Vec<u8> = Vec::with_capacity(8192);
    let mut answer = Answer::default();
    let mut scratch = [0u8; 8192];
    loop {
        if drive(&mut parser, &mut pending, &mut answer)? {
            return answer.finish();
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timed_out());
        }
        timeouts
            .set_read_timeout(Some(left))
            .map_err(DiscoverError::Io)?;
        match conn.read(&mut scratch) {
            Ok(0) => {
                // A body read until the close ends here; anything else was cut.
                let event = parser.finish_eof().map_err(bad_answer)?;
                return match answer.take(event)? {
                    true => answer.finish(),
                    false => Err(DiscoverError::Io(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the connection closed before a complete answer",
                    ))),
                };
            }
            Ok(n) => pending.extend_from_slice(&scratch[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(DiscoverError::Io(e)),
        }
    }
}

/// No complete answer within [`TIMEOUT`].
fn timed_out() -> DiscoverError {
    DiscoverError::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("no complete answer within {}s", TIMEOUT.as_secs()),
    ))
}

/// The model of a complete answer: its status and body.
fn answered(status: u16, body: Vec<u8>) -> Result<String, DiscoverError> {
    Answer {
        status: Some(status),
        body,
    }
    .finish()
}

/// Core's `h2::request::from_http1` or `h3::request::from_http1`.
type FromHttp1 =
    fn(
        &[u8],
        &[u8],
        &mut [u8],
    )
        -> Result<metronome_core::h2::request::Encoded, metronome_core::h2::request::RequestError>;

/// The request's HTTP/2 or HTTP/3 field section, by `from_http1` of the
/// protocol (as a run's requests are encoded).
fn encode(request: &str, scheme: &[u8], from_http1: FromHttp1) -> Result<Vec<u8>, DiscoverError> {
    let mut out = vec![0u8; 64 * 1024];
    let e = from_http1(request.as_bytes(), scheme, &mut out)
        .map_err(|e| DiscoverError::Answer(format!("cannot encode GET /v1/models ({e:?})")))?;
    out.truncate(e.len);
    Ok(out)
}

/// One GET over HTTP/2 on `conn` (a new connection, TLS done or h2c):
/// the preface and SETTINGS, the request on stream 1, and its answer.
fn h2_get(
    conn: &mut dyn ReadWrite,
    timeouts: &TcpStream,
    block: &[u8],
    deadline: Instant,
) -> Result<(u16, Vec<u8>), DiscoverError> {
    use metronome_core::h2::{Connection, Event};
    let io = DiscoverError::Io;
    let broken = |e: metronome_core::h2::H2Error| {
        DiscoverError::Answer(format!("not a valid HTTP/2 answer ({e:?})"))
    };
    let mut c: Connection<1> = Connection::new(metronome_core::h2::Config::DEFAULT);
    let mut out = vec![0u8; 64 * 1024];
    let mut input: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut scratch = [0u8; 16 * 1024];
    let mut stream = None;
    let mut status = None;
    let mut body = Vec::new();
    loop {
        while c.wants_transmit() {
            let n = c.poll_transmit(&mut out);
            if n == 0 {
                break;
            }
            conn.write_all(&out[..n]).map_err(io)?;
        }
        if stream.is_none() && c.is_ready() && c.can_start() {
            let (id, n) = c
                .start_request(block, true, &mut out)
                .map_err(|e| DiscoverError::Answer(format!("cannot send the request ({e:?})")))?;
            conn.write_all(&out[..n]).map_err(io)?;
            stream = Some(id);
        }
        conn.flush().map_err(io)?;
        loop {
            let (used, event) = c.handle_read(&input).map_err(broken)?;
            let mut done = false;
            match event {
                Some(Event::Headers {
                    stream: s,
                    status: st,
                    end_stream,
                    ..
                }) if Some(s) == stream => {
                    status = Some(st);
                    done = end_stream;
                }
                Some(Event::Data {
                    stream: s,
                    len,
                    end_stream,
                }) if Some(s) == stream => {
                    body.extend_from_slice(c.data_of(&input[..used], len));
                    done = end_stream;
                }
                Some(Event::Trailers { stream: s, .. }) if Some(s) == stream => done = true,
                Some(Event::StreamReset {
                    stream: s, code, ..
                }) if Some(s) == stream => {
                    return Err(DiscoverError::Answer(format!(
                        "the server reset the request's stream ({code:?})"
                    )));
                }
                Some(Event::GoAway { .. }) if status.is_none() => {
                    return Err(DiscoverError::Io(std::io::Error::other(
                        "the server sent GOAWAY before answering",
                    )));
                }
                _ => {}
            }
            input.drain(..used);
            if done {
                return match status {
                    Some(s) => Ok((s, body)),
                    None => Err(DiscoverError::Answer("it answered no status".into())),
                };
            }
            if used == 0 {
                break;
            }
        }
        if stream.is_none() && c.is_ready() && c.can_start() {
            // The server's SETTINGS came: acknowledge them, send the request.
            continue;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timed_out());
        }
        timeouts.set_read_timeout(Some(left)).map_err(io)?;
        match conn.read(&mut scratch) {
            Ok(0) => {
                return Err(DiscoverError::Io(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the connection closed before a complete answer",
                )))
            }
            Ok(n) => input.extend_from_slice(&scratch[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(DiscoverError::Io(e)),
        }
    }
}

/// The HTTP/1.1 text of `GET path` with the run's headers (those that
/// describe a body, the connection or what is accepted left out): sent
/// as it is over HTTP/1.1, encoded as the run's requests are otherwise.
fn request(host: &str, path: &str, headers: &[String]) -> String {
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
    request
}

/// Hands the parser every byte of `pending` it can take (dropping what it
/// consumed); true once the response is complete.
fn drive(
    parser: &mut ResponseParser,
    pending: &mut Vec<u8>,
    answer: &mut Answer,
) -> Result<bool, DiscoverError> {
    loop {
        let (used, event) = parser.feed(pending).map_err(bad_answer)?;
        let done = answer.take(event)?;
        pending.drain(..used);
        if done {
            return Ok(true);
        }
        if used == 0 {
            return Ok(false);
        }
    }
}

/// A framing error of the answer, in words.
fn bad_answer(e: ParseError) -> DiscoverError {
    DiscoverError::Answer(format!("not a valid HTTP/1.1 response ({e})"))
}

/// What the answer to `GET /v1/models` carried so far.
#[derive(Default)]
struct Answer {
    status: Option<u16>,
    body: Vec<u8>,
}

impl Answer {
    /// Takes one parser event; true once the response is complete.
    fn take(&mut self, event: Option<Event<'_>>) -> Result<bool, DiscoverError> {
        match event {
            None => Ok(false),
            Some(Event::Head { status, .. }) => {
                self.status = Some(status);
                Ok(false)
            }
            Some(Event::Body(bytes)) => {
                if self.body.len() + bytes.len() > MAX_RESPONSE {
                    return Err(DiscoverError::Answer(format!(
                        "the answer is larger than {} MiB",
                        MAX_RESPONSE >> 20
                    )));
                }
                self.body.extend_from_slice(bytes);
                Ok(false)
            }
            Some(Event::End) => Ok(true),
        }
    }

    /// The first model of a complete 200 answer.
    fn finish(&self) -> Result<String, DiscoverError> {
        match self.status {
            Some(200) => first_id(&self.body).map_err(DiscoverError::Answer),
            status => Err(DiscoverError::Answer(format!(
                "it answered {}",
                status.map_or_else(|| "nothing".to_string(), |s| s.to_string())
            ))),
        }
    }
}

/// A plain or TLS stream.
trait ReadWrite: Read + Write {}

impl<T: Read + Write> ReadWrite for T {}

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
    wire: Wire,
) -> anyhow::Result<String> {
    let scheme = if tls.is_some() { "https" } else { "http" };
    let over = match wire {
        Wire::Http1 => "",
        Wire::Http2 => " over HTTP/2",
        Wire::Http3 => " over HTTP/3",
    };
    let url = format!("{scheme}://{host}{path}{over}");
    first_model(addr, host, path, headers, tls, wire).map_err(|e| match e {
        // A refused TLS handshake, in words (as the engines say it).
        DiscoverError::Io(e) if e.get_ref().is_some_and(|i| i.is::<rustls::Error>()) => {
            let why = e
                .get_ref()
                .and_then(|i| i.downcast_ref::<rustls::Error>())
                .map(|r| metronome_core::engine::tls::describe(r, tls.map(|t| &*t.client_cert)).1)
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

    /// The model found in `bytes` (`eof`: the server closed after them),
    /// `None` while the answer is incomplete.
    fn answer(bytes: &[u8], eof: bool) -> Option<Result<String, String>> {
        let mut parser = ResponseParser::new();
        let mut pending = bytes.to_vec();
        let mut a = Answer::default();
        let found = (|| {
            if drive(&mut parser, &mut pending, &mut a)? {
                return a.finish().map(Some);
            }
            if eof {
                let event = parser.finish_eof().map_err(bad_answer)?;
                if a.take(event)? {
                    return a.finish().map(Some);
                }
            }
            Ok(None)
        })();
        match found {
            Ok(Some(id)) => Some(Ok(id)),
            Err(DiscoverError::Answer(w)) => Some(Err(w)),
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
            Some(Err("it answered 404".into()))
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
            .starts_with("not a valid HTTP/1.1 response"));
    }
}
