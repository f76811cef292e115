//! The target URL and the encoded HTTP/1.1 requests of a run.

use std::net::{SocketAddr, ToSocketAddrs};

use crate::UsageError;

/// A parsed `http://` or `https://` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// `https://`: HTTP/1.1 over TLS.
    pub tls: bool,
    /// Host as written (name or address, IPv6 without brackets).
    pub host: String,
    /// Port (80 by default, 443 for https).
    pub port: u16,
    /// Path and query, at least "/".
    pub path: String,
}

impl Target {
    /// Parses `http://host[:port][/path]` or `https://...`.
    ///
    /// # Errors
    /// A [`UsageError`] naming what is wrong (no scheme, no host, bad port).
    ///
    /// # Example
    /// ```
    /// use metronome::run::request::Target;
    /// let t = Target::parse("http://127.0.0.1:8080/v1/x?a=1").unwrap();
    /// assert_eq!((t.host.as_str(), t.port, t.path.as_str()), ("127.0.0.1", 8080, "/v1/x?a=1"));
    /// let t = Target::parse("http://[::1]/").unwrap();
    /// assert_eq!((t.host.as_str(), t.port), ("::1", 80));
    /// let t = Target::parse("https://example.com/v1").unwrap();
    /// assert_eq!((t.tls, t.port, t.authority()), (true, 443, "example.com".to_string()));
    /// assert!(Target::parse("ftp://example.com/").is_err());
    /// assert!(Target::parse("127.0.0.1:80").is_err());
    /// ```
    pub fn parse(url: &str) -> Result<Target, UsageError> {
        let (tls, rest) = if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else {
            return Err(UsageError(format!(
                "'{url}' is not a URL: write http://HOST[:PORT]/PATH or https://..."
            )));
        };
        let default_port = if tls { 443 } else { 80 };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
            Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
            None => (rest, "/".to_string()),
        };
        let bad_port = || {
            UsageError(format!(
                "'{url}': the port must be a number from 1 to 65535"
            ))
        };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let end = v6
                .find(']')
                .ok_or_else(|| UsageError(format!("'{url}': unclosed '[' in the host")))?;
            let port = match &v6[end + 1..] {
                "" => default_port,
                p => p
                    .strip_prefix(':')
                    .and_then(|p| p.parse().ok())
                    .ok_or_else(bad_port)?,
            };
            (v6[..end].to_string(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), p.parse().map_err(|_| bad_port())?),
                None => (authority.to_string(), default_port),
            }
        };
        if host.is_empty() {
            return Err(UsageError(format!("'{url}' has no host")));
        }
        if port == 0 {
            return Err(bad_port());
        }
        Ok(Target {
            tls,
            host,
            port,
            path,
        })
    }

    /// The Host header value.
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == if self.tls { 443 } else { 80 } {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    /// Resolves the host to one socket address (the first).
    ///
    /// # Errors
    /// A [`UsageError`] when the name does not resolve.
    pub fn resolve(&self) -> Result<SocketAddr, UsageError> {
        (self.host.as_str(), self.port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| UsageError(format!("cannot resolve host '{}'", self.host)))
    }
}

/// Encodes one HTTP/1.1 request.
///
/// # Example
/// ```
/// use metronome::run::request::{encode, Target};
/// let t = Target::parse("http://127.0.0.1:8080/x").unwrap();
/// let r = encode(&t, "POST", &["X-A: 1".to_string()], Some(b"hi"));
/// assert_eq!(
///     String::from_utf8(r).unwrap(),
///     "POST /x HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: metronome/0.1.0\r\nX-A: 1\r\nContent-Length: 2\r\n\r\nhi"
/// );
/// ```
pub fn encode(target: &Target, method: &str, headers: &[String], body: Option<&[u8]>) -> Vec<u8> {
    let mut r = format!("{method} {} HTTP/1.1\r\n", target.path);
    let has = |name: &str| {
        headers.iter().any(|h| {
            h.split_once(':')
                .is_some_and(|(n, _)| n.trim().eq_ignore_ascii_case(name))
        })
    };
    if !has("host") {
        r.push_str(&format!("Host: {}\r\n", target.authority()));
    }
    if !has("user-agent") {
        r.push_str(&format!(
            "User-Agent: metronome/{}\r\n",
            env!("CARGO_PKG_VERSION")
        ));
    }
    for h in headers {
        r.push_str(h.trim());
        r.push_str("\r\n");
    }
    if let Some(b) = body {
        if !has("content-length") {
            r.push_str(&format!("Content-Length: {}\r\n", b.len()));
        }
    }
    r.push_str("\r\n");
    let mut bytes = r.into_bytes();
    if let Some(b) = body {
        bytes.extend_from_slice(b);
    }
    bytes
}

/// Checks a header written as "Name: value".
///
/// # Errors
/// A [`UsageError`] naming the header.
pub fn check_header(h: &str) -> Result<(), UsageError> {
    match h.split_once(':') {
        Some((n, _))
            if !n.trim().is_empty()
                && n.trim().bytes().all(|b| b.is_ascii_graphic() && b != b':')
                && !h.contains(['\r', '\n']) =>
        {
            Ok(())
        }
        _ => Err(UsageError(format!(
            "bad header '{h}': write it as \"Name: value\""
        ))),
    }
}

/// The JSON body of an OpenAI-style streaming chat completion.
///
/// # Example
/// ```
/// let b = metronome::run::request::openai_body("m", "hi", 8);
/// let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
/// assert_eq!(v["stream"], true);
/// assert_eq!(v["messages"][0]["content"], "hi");
/// assert_eq!(v["stream_options"]["include_usage"], true);
/// ```
pub fn openai_body(model: &str, prompt: &str, max_tokens: u32) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "stream": true,
        "stream_options": {"include_usage": true},
    }))
    .unwrap_or_default()
}
