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
    /// `--connect-to`, `--resolve`: the address connected to in place of
    /// the host's ([`Target::route`]); `None`: the host's, by DNS.
    pub connect: Option<SocketAddr>,
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
            connect: None,
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

    /// Applies `--connect-to` (the first that matches the URL's host and
    /// port) then `--resolve` (the first that matches the host and port
    /// connected to) as curl does: [`Target::connect`] becomes the address
    /// connected to, the host stays in Host, SNI and the certificate
    /// check. Returns the flags that matched nothing, for a notice.
    ///
    /// # Errors
    /// A [`UsageError`] when the host to connect to does not resolve.
    ///
    /// ```
    /// use metronome::cli::{parse_connect_to, parse_resolve};
    /// use metronome::run::request::Target;
    /// let mut t = Target::parse("https://vhost.test:8443/").unwrap();
    /// let c = [parse_connect_to("vhost.test:8443:127.0.0.1:9443").unwrap()];
    /// t.route(&c, &[]).unwrap();
    /// assert_eq!(t.connect, Some("127.0.0.1:9443".parse().unwrap()));
    /// assert_eq!(t.authority(), "vhost.test:8443");
    /// let mut t = Target::parse("https://vhost.test/").unwrap();
    /// let r = [parse_resolve("other:443:127.0.0.2").unwrap(), parse_resolve("vhost.test:443:[::1]").unwrap()];
    /// let unused = t.route(&[], &r).unwrap();
    /// assert_eq!(t.connect, Some("[::1]:443".parse().unwrap()));
    /// assert_eq!(unused, ["--resolve other:443:127.0.0.2"]);
    /// ```
    pub fn route(
        &mut self,
        connect_to: &[crate::cli::ConnectTo],
        resolve: &[crate::cli::Resolve],
    ) -> Result<Vec<String>, UsageError> {
        let mut unused = Vec::new();
        let mut host = self.host.clone();
        let mut port = self.port;
        let mut matched = false;
        for c in connect_to {
            let applies = c
                .host
                .as_ref()
                .map_or(true, |h| h.eq_ignore_ascii_case(&self.host))
                && c.port.map_or(true, |p| p == self.port);
            if applies && !matched {
                matched = true;
                host = c.to_host.clone().unwrap_or(host);
                port = c.to_port.unwrap_or(port);
            } else if !applies {
                unused.push(format!(
                    "--connect-to {}:{}:{}:{}",
                    c.host.as_deref().unwrap_or(""),
                    c.port.map_or(String::new(), |p| p.to_string()),
                    c.to_host.as_deref().unwrap_or(""),
                    c.to_port.map_or(String::new(), |p| p.to_string())
                ));
            }
        }
        let mut fixed = None;
        for r in resolve {
            let applies = (r.host == "*" || r.host.eq_ignore_ascii_case(&host)) && r.port == port;
            if applies && fixed.is_none() {
                fixed = Some(SocketAddr::new(r.addr, port));
            } else if !applies {
                unused.push(format!("--resolve {}:{}:{}", r.host, r.port, r.addr));
            }
        }
        self.connect = match fixed {
            Some(a) => Some(a),
            None if matched => Some(
                (host.as_str(), port)
                    .to_socket_addrs()
                    .ok()
                    .and_then(|mut a| a.next())
                    .ok_or_else(|| {
                        UsageError(format!("--connect-to: cannot resolve host '{host}'"))
                    })?,
            ),
            None => None,
        };
        Ok(unused)
    }

    /// The address connected to: [`Target::connect`] when `--connect-to`
    /// or `--resolve` set it, else the host resolved (the first address).
    ///
    /// # Errors
    /// A [`UsageError`] when the name does not resolve.
    pub fn resolve(&self) -> Result<SocketAddr, UsageError> {
        if let Some(a) = self.connect {
            return Ok(a);
        }
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

/// The OpenAI-style endpoint requests go to (`--endpoint`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /v1/chat/completions` with `messages`.
    Chat,
    /// `POST /v1/completions` with `prompt` (the legacy text completions).
    Completions,
}

impl Endpoint {
    /// The path under the API base: `/chat/completions` or `/completions`.
    pub fn suffix(self) -> &'static str {
        match self {
            Self::Chat => "/chat/completions",
            Self::Completions => "/completions",
        }
    }

    /// The endpoint a path names, when it names one: a path ending in
    /// `/chat/completions` or `/completions` (query ignored).
    ///
    /// # Example
    /// ```
    /// use metronome::run::request::Endpoint;
    /// assert_eq!(Endpoint::of_path("/v1/completions?x"), Some(Endpoint::Completions));
    /// assert_eq!(Endpoint::of_path("/v1/chat/completions"), Some(Endpoint::Chat));
    /// assert_eq!(Endpoint::of_path("/v1"), None);
    /// ```
    pub fn of_path(path: &str) -> Option<Endpoint> {
        let p = path.split_once('?').map_or(path, |(p, _)| p);
        let p = p.trim_end_matches('/');
        if p.ends_with("/chat/completions") {
            Some(Self::Chat)
        } else if p.ends_with("/completions") {
            Some(Self::Completions)
        } else {
            None
        }
    }
}

/// Completes an OpenAI base URL's path to the endpoint: `/` (a bare host)
/// becomes `/v1` + the endpoint, a path ending in `/v1` or `/v1/` gets the
/// endpoint appended; any other path is kept (`None`). The query is kept.
///
/// # Example
/// ```
/// use metronome::run::request::{complete_path, Endpoint::*};
/// assert_eq!(complete_path("/", Chat).as_deref(), Some("/v1/chat/completions"));
/// assert_eq!(complete_path("/v1/", Completions).as_deref(), Some("/v1/completions"));
/// assert_eq!(complete_path("/api/v1?k=1", Chat).as_deref(), Some("/api/v1/chat/completions?k=1"));
/// assert_eq!(complete_path("/v1/chat/completions", Chat), None);
/// ```
pub fn complete_path(path: &str, endpoint: Endpoint) -> Option<String> {
    let (p, query) = match path.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path, None),
    };
    let base = if p.is_empty() || p == "/" {
        "/v1"
    } else if p.ends_with("/v1") || p.ends_with("/v1/") {
        p.trim_end_matches('/')
    } else {
        return None;
    };
    let mut out = format!("{base}{}", endpoint.suffix());
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    Some(out)
}

/// The path of the model list next to an OpenAI endpoint path: the part up
/// to and including the last `/v1` segment, then `/models`; `/v1/models`
/// when the path has no `/v1` segment.
///
/// # Example
/// ```
/// use metronome::run::request::models_path;
/// assert_eq!(models_path("/v1/chat/completions"), "/v1/models");
/// assert_eq!(models_path("/proxy/v1/completions?x=1"), "/proxy/v1/models");
/// assert_eq!(models_path("/generate"), "/v1/models");
/// ```
pub fn models_path(path: &str) -> String {
    let p = path.split_once('?').map_or(path, |(p, _)| p);
    let segments: Vec<&str> = p.split('/').collect();
    match segments.iter().rposition(|s| *s == "v1") {
        Some(i) => format!("{}/models", segments[..=i].join("/")),
        None => "/v1/models".to_string(),
    }
}

/// The field that carries the output-length cap (`--max-tokens-field`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaxTokensField {
    /// `max_completion_tokens`: OpenAI's current field (required by its
    /// reasoning models), the one vLLM's bench sends.
    MaxCompletionTokens,
    /// `max_tokens`: deprecated by OpenAI for chat, what older servers read.
    MaxTokens,
}

/// How every OpenAI request body is built.
#[derive(Clone, Debug, PartialEq)]
pub struct BodySpec {
    /// `model`.
    pub model: String,
    /// Chat (`messages`) or completions (`prompt`).
    pub endpoint: Endpoint,
    /// The field of the output-length cap on the chat endpoint (the
    /// completions endpoint only has `max_tokens`).
    pub max_tokens_field: MaxTokensField,
    /// Send `"ignore_eos": true` (vLLM, SGLang): generate up to the cap.
    pub ignore_eos: bool,
    /// JSON merge patches (RFC 7396) applied in order to every body:
    /// `--body`/`--body-file`, then `--extra-body`.
    pub patches: Vec<serde_json::Value>,
}

/// Applies a JSON merge patch (RFC 7396) to `target`: an object patch
/// merges key by key, recursively; `null` removes the key; any other value
/// replaces the target.
///
/// # Example
/// ```
/// use serde_json::json;
/// let mut v = json!({"a": 1, "o": {"x": 1, "y": 2}, "s": [1]});
/// metronome::run::request::merge_patch(&mut v, &json!({"o": {"y": null, "z": 3}, "s": [2], "b": true}));
/// assert_eq!(v, json!({"a": 1, "o": {"x": 1, "z": 3}, "s": [2], "b": true}));
/// ```
pub fn merge_patch(target: &mut serde_json::Value, patch: &serde_json::Value) {
    use serde_json::Value;
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    if let Value::Object(map) = target {
        for (k, v) in patch {
            if v.is_null() {
                map.remove(k);
            } else {
                merge_patch(map.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

/// The JSON body of one streaming request: `model`, the prompt (`messages`
/// for chat, `prompt` for completions), the output cap `max_tokens` (the
/// field [`BodySpec::max_tokens_field`] names on chat), `stream: true`,
/// `stream_options: {include_usage: true}`, `ignore_eos` when asked, then
/// the [`BodySpec::patches`].
///
/// # Errors
/// Chat messages on the completions endpoint (it takes a text prompt).
///
/// # Example
/// ```
/// use metronome::run::request::{openai_body, BodySpec, Endpoint, MaxTokensField};
/// use metronome::run::workload::Prompt;
/// let spec = BodySpec {
///     model: "m".into(),
///     endpoint: Endpoint::Chat,
///     max_tokens_field: MaxTokensField::MaxCompletionTokens,
///     ignore_eos: false,
///     patches: vec![],
/// };
/// let b = openai_body(&spec, &Prompt::text("hi", None), 8).unwrap();
/// assert_eq!(
///     String::from_utf8(b).unwrap(),
///     r#"{"max_completion_tokens":8,"messages":[{"content":"hi","role":"user"}],"model":"m","stream":true,"stream_options":{"include_usage":true}}"#
/// );
/// ```
pub fn openai_body(
    spec: &BodySpec,
    prompt: &crate::run::workload::Prompt,
    max_tokens: u32,
) -> Result<Vec<u8>, UsageError> {
    use crate::run::workload::Input;
    use serde_json::{json, Value};
    let mut body = json!({
        "model": spec.model,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    let field = match (spec.endpoint, spec.max_tokens_field) {
        (Endpoint::Chat, MaxTokensField::MaxCompletionTokens) => "max_completion_tokens",
        _ => "max_tokens",
    };
    body[field] = json!(max_tokens);
    match (spec.endpoint, &prompt.input) {
        (Endpoint::Chat, Input::Text(t)) => {
            body["messages"] = json!([{"role": "user", "content": t}]);
        }
        (Endpoint::Chat, Input::Messages(m)) => body["messages"] = Value::Array(m.clone()),
        (Endpoint::Completions, Input::Text(t)) => body["prompt"] = json!(t),
        (Endpoint::Completions, Input::Messages(_)) => {
            return Err(UsageError(
                "--endpoint completions takes text prompts, and the dataset has chat \
                 \"messages\": use --endpoint chat, or give \"prompt\" lines"
                    .into(),
            ))
        }
    }
    if spec.ignore_eos {
        body["ignore_eos"] = json!(true);
    }
    for patch in &spec.patches {
        merge_patch(&mut body, patch);
    }
    Ok(serde_json::to_vec(&body).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::workload::{Input, Prompt};
    use serde_json::json;

    fn spec(endpoint: Endpoint) -> BodySpec {
        BodySpec {
            model: "llama".into(),
            endpoint,
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
            ignore_eos: false,
            patches: vec![],
        }
    }

    fn body(spec: &BodySpec, prompt: &Prompt, max: u32) -> String {
        String::from_utf8(openai_body(spec, prompt, max).unwrap()).unwrap()
    }

    #[test]
    fn url_completion() {
        use Endpoint::*;
        let cases = [
            ("/", Chat, Some("/v1/chat/completions")),
            ("", Chat, Some("/v1/chat/completions")),
            ("/", Completions, Some("/v1/completions")),
            ("/v1", Chat, Some("/v1/chat/completions")),
            ("/v1/", Chat, Some("/v1/chat/completions")),
            ("/v1", Completions, Some("/v1/completions")),
            ("/openai/v1/", Chat, Some("/openai/v1/chat/completions")),
            (
                "/?api-version=1",
                Chat,
                Some("/v1/chat/completions?api-version=1"),
            ),
            ("/v1?a=b", Completions, Some("/v1/completions?a=b")),
            ("/v1/chat/completions", Chat, None),
            ("/v1/completions", Chat, None),
            ("/v1x", Chat, None),
            ("/generate", Chat, None),
        ];
        for (path, endpoint, want) in cases {
            assert_eq!(
                complete_path(path, endpoint).as_deref(),
                want,
                "{path} {endpoint:?}"
            );
        }
        assert_eq!(Endpoint::of_path("/v1/completions/"), Some(Completions));
        assert_eq!(Endpoint::of_path("/x/chat/completions?q"), Some(Chat));
        assert_eq!(Endpoint::of_path("/"), None);
        assert_eq!(models_path("/"), "/v1/models");
        assert_eq!(models_path("/v1"), "/v1/models");
        assert_eq!(
            models_path("/a/v1/b/v1/chat/completions"),
            "/a/v1/b/v1/models"
        );
    }

    #[test]
    fn chat_body_exact() {
        let p = Prompt::text("Say hi", Some(5));
        assert_eq!(
            body(&spec(Endpoint::Chat), &p, 5),
            r#"{"max_completion_tokens":5,"messages":[{"content":"Say hi","role":"user"}],"model":"llama","stream":true,"stream_options":{"include_usage":true}}"#
        );
        let old = BodySpec {
            max_tokens_field: MaxTokensField::MaxTokens,
            ignore_eos: true,
            ..spec(Endpoint::Chat)
        };
        assert_eq!(
            body(&old, &p, 64),
            r#"{"ignore_eos":true,"max_tokens":64,"messages":[{"content":"Say hi","role":"user"}],"model":"llama","stream":true,"stream_options":{"include_usage":true}}"#
        );
    }

    #[test]
    fn completions_body_exact() {
        let p = Prompt::text("Once upon", None);
        // The completions API has only max_tokens, whatever the field flag.
        assert_eq!(
            body(&spec(Endpoint::Completions), &p, 16),
            r#"{"max_tokens":16,"model":"llama","prompt":"Once upon","stream":true,"stream_options":{"include_usage":true}}"#
        );
        let m = Prompt {
            input: Input::Messages(vec![json!({"role": "user", "content": "x"})]),
            input_tokens: 1,
            output_len: None,
        };
        assert!(openai_body(&spec(Endpoint::Completions), &m, 1)
            .unwrap_err()
            .0
            .starts_with("--endpoint completions takes text prompts"));
    }

    #[test]
    fn messages_are_sent_as_given() {
        let m = Prompt {
            input: Input::Messages(vec![
                json!({"role": "system", "content": "be brief"}),
                json!({"role": "user", "content": "hi"}),
            ]),
            input_tokens: 3,
            output_len: None,
        };
        assert_eq!(
            body(&spec(Endpoint::Chat), &m, 2),
            r#"{"max_completion_tokens":2,"messages":[{"content":"be brief","role":"system"},{"content":"hi","role":"user"}],"model":"llama","stream":true,"stream_options":{"include_usage":true}}"#
        );
    }

    #[test]
    fn patches_merge_in_order() {
        let s = BodySpec {
            patches: vec![
                json!({"temperature": 0, "model": "from-body", "stream_options": {"x": 1}}),
                json!({"min_tokens": 5, "temperature": null, "stream_options": {"include_usage": false}}),
            ],
            ..spec(Endpoint::Chat)
        };
        assert_eq!(
            body(&s, &Prompt::text("q", None), 5),
            r#"{"max_completion_tokens":5,"messages":[{"content":"q","role":"user"}],"min_tokens":5,"model":"from-body","stream":true,"stream_options":{"include_usage":false,"x":1}}"#
        );
    }
}
