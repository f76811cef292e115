//! Request mixes: `--requests FILE` (metronome's JSON Lines) and
//! `--targets FILE` (vegeta's targets, its HTTP or JSON format), read and
//! encoded before the clock starts. Core's [`metronome_core::mix::Mix`]
//! chooses which one each arrival sends; the report counts each by name
//! (`by_request`).
//!
//! `--requests` lines are JSON objects:
//!
//! ```text
//! {"name": "home", "path": "/", "weight": 5}
//! {"name": "search", "method": "GET", "url": "http://127.0.0.1:8080/search?q=a", "weight": 3}
//! {"name": "login", "method": "POST", "path": "/login", "headers": {"Content-Type": "application/json"},
//!  "body": "{\"user\":\"a\"}", "weight": 1}
//! {"name": "upload", "method": "PUT", "path": "/u", "body_file": "blob.bin"}
//! ```
//!
//! `name` defaults to `METHOD path`, `method` to GET (POST with a body),
//! `weight` to 1; `headers` is an object or a list of `"Name: value"`;
//! `body_file` is relative to the file's folder. A `url` must name the
//! run's origin (one connection pool per run). Lines of the same name
//! share one row of the report. `"check"`: `{"status", "header", "body",
//! "regex"}`, the line's own checks over the run's `--check-*`
//! ([`super::check`]).

use std::collections::HashMap;
use std::path::Path;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::Value;

use super::request::{check_header, encode, Target};
use crate::UsageError;

/// One request of a mix, before encoding.
#[derive(Clone, Debug, PartialEq)]
pub struct NamedRequest {
    /// The name its measurements are reported under.
    pub name: String,
    /// The method, in capitals.
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Headers, `Name: value`, after the run's `-H` headers.
    pub headers: Vec<String>,
    /// The body, if any.
    pub body: Option<Vec<u8>>,
    /// Its weight (positive).
    pub weight: f64,
    /// Its own checks (`"check"`), over the run's `--check-*`.
    pub check: Option<super::check::CheckSpec>,
}

/// The most requests a mix may hold.
pub const MAX_REQUESTS: usize = 10_000;

/// Which file format a mix was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `--requests`: metronome's JSON Lines.
    Requests,
    /// `--targets`: vegeta's targets (HTTP or JSON format).
    Targets,
}

impl Format {
    /// The flag the file was given with.
    pub fn flag(self) -> &'static str {
        match self {
            Format::Requests => "--requests",
            Format::Targets => "--targets",
        }
    }
}

/// Reads a mix from `path` against `target`.
///
/// # Errors
/// A [`UsageError`] naming the file and the line.
pub fn load(path: &Path, format: Format, target: &Target) -> Result<Vec<NamedRequest>, UsageError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        UsageError(format!(
            "cannot read {} {}: {e}",
            format.flag(),
            path.display()
        ))
    })?;
    let name = path.display().to_string();
    let dir = path.parent().unwrap_or(Path::new("."));
    match format {
        Format::Requests => parse_requests(&text, &name, dir, target),
        Format::Targets => parse_targets(&text, &name, target),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    name: Option<String>,
    method: Option<String>,
    path: Option<String>,
    url: Option<String>,
    #[serde(default)]
    headers: Option<Value>,
    body: Option<String>,
    body_file: Option<String>,
    weight: Option<f64>,
    check: Option<super::check::CheckSpec>,
}

/// Parses `--requests` JSON Lines (see the module docs); `dir` is where
/// `body_file`s are read from.
///
/// # Errors
/// A [`UsageError`] naming the line.
///
/// ```
/// use metronome::run::mix::parse_requests;
/// use metronome::run::request::Target;
/// let t = Target::parse("http://127.0.0.1:8080/").unwrap();
/// let m = parse_requests("{\"path\":\"/a\",\"weight\":2}\n\n{\"name\":\"b\",\"url\":\"http://127.0.0.1:8080/b\",\"body\":\"x\"}\n",
///     "r.jsonl", std::path::Path::new("."), &t).unwrap();
/// assert_eq!((m[0].name.as_str(), m[0].method.as_str(), m[0].weight), ("GET /a", "GET", 2.0));
/// assert_eq!((m[1].name.as_str(), m[1].method.as_str(), m[1].path.as_str()), ("b", "POST", "/b"));
/// ```
pub fn parse_requests(
    text: &str,
    file: &str,
    dir: &Path,
    target: &Target,
) -> Result<Vec<NamedRequest>, UsageError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let at = format!("--requests {file} line {}", i + 1);
        if raw.trim().is_empty() {
            continue;
        }
        let line: Line = serde_json::from_str(raw).map_err(|e| UsageError(format!("{at}: {e}")))?;
        let path = match (&line.path, &line.url) {
            (Some(p), None) if p.starts_with('/') => p.clone(),
            (Some(p), None) => {
                return Err(UsageError(format!(
                    "{at}: \"path\" must start with /, got {p:?}"
                )))
            }
            (None, Some(u)) => {
                same_origin(u, target).map_err(|e| UsageError(format!("{at}: {e}")))?
            }
            (Some(_), Some(_)) => {
                return Err(UsageError(format!(
                    "{at}: give \"path\" or \"url\", not both"
                )))
            }
            (None, None) => {
                return Err(UsageError(format!(
                    "{at}: a request needs \"path\" or \"url\""
                )))
            }
        };
        let mut headers = Vec::new();
        match &line.headers {
            None | Some(Value::Null) => {}
            Some(Value::Object(map)) => {
                for (k, v) in map {
                    let Value::String(v) = v else {
                        return Err(UsageError(format!("{at}: header {k:?} must be a string")));
                    };
                    headers.push(format!("{k}: {v}"));
                }
            }
            Some(Value::Array(list)) => {
                for h in list {
                    let Value::String(h) = h else {
                        return Err(UsageError(format!(
                            "{at}: \"headers\" must be strings \"Name: value\""
                        )));
                    };
                    headers.push(h.clone());
                }
            }
            Some(_) => {
                return Err(UsageError(format!(
                    "{at}: \"headers\" must be an object or a list of \"Name: value\""
                )))
            }
        }
        for h in &headers {
            check_header(h).map_err(|e| UsageError(format!("{at}: {}", e.0)))?;
        }
        let body = match (&line.body, &line.body_file) {
            (Some(b), None) => Some(b.clone().into_bytes()),
            (None, Some(f)) => {
                let p = dir.join(f);
                Some(std::fs::read(&p).map_err(|e| {
                    UsageError(format!("{at}: cannot read body_file {}: {e}", p.display()))
                })?)
            }
            (None, None) => None,
            (Some(_), Some(_)) => {
                return Err(UsageError(format!(
                    "{at}: give \"body\" or \"body_file\", not both"
                )))
            }
        };
        let method = line
            .method
            .unwrap_or_else(|| if body.is_some() { "POST" } else { "GET" }.into());
        check_method(&method).map_err(|e| UsageError(format!("{at}: {e}")))?;
        let weight = line.weight.unwrap_or(1.0);
        if !(weight.is_finite() && weight > 0.0) {
            return Err(UsageError(format!(
                "{at}: \"weight\" must be a positive number"
            )));
        }
        let name = line.name.unwrap_or_else(|| format!("{method} {path}"));
        if name.is_empty() {
            return Err(UsageError(format!("{at}: \"name\" is empty")));
        }
        out.push(NamedRequest {
            name,
            method,
            path,
            headers,
            body,
            weight,
            check: line.check,
        });
        if out.len() > MAX_REQUESTS {
            return Err(UsageError(format!(
                "--requests {file}: more than {MAX_REQUESTS} requests"
            )));
        }
    }
    if out.is_empty() {
        return Err(UsageError(format!("--requests {file} holds no request")));
    }
    Ok(out)
}

/// Parses vegeta's targets: its HTTP format (`METHOD URL`, header lines,
/// an optional `@BODYFILE` line, a blank line between targets, `#`
/// comments; body files relative to the working folder, as vegeta reads
/// them) or, when the first non-blank character is `{`, its JSON format
/// (`{"method", "url", "header": {"Name": ["value"]}, "body": base64}` per
/// line). Every target weighs 1 and is named `METHOD path`.
///
/// # Errors
/// A [`UsageError`] naming the line.
///
/// ```
/// use metronome::run::mix::parse_targets;
/// use metronome::run::request::Target;
/// let t = Target::parse("http://127.0.0.1:8080/").unwrap();
/// let m = parse_targets("GET http://127.0.0.1:8080/a\nX-A: 1\n\n# c\nDELETE http://127.0.0.1:8080/b\n", "t", &t).unwrap();
/// assert_eq!(m.len(), 2);
/// assert_eq!((m[0].name.as_str(), m[0].headers[0].as_str()), ("GET /a", "X-A: 1"));
/// assert_eq!(m[1].name, "DELETE /b");
/// ```
pub fn parse_targets(
    text: &str,
    file: &str,
    target: &Target,
) -> Result<Vec<NamedRequest>, UsageError> {
    let mut out: Vec<NamedRequest> = Vec::new();
    if text.trim_start().starts_with('{') {
        for (i, raw) in text.lines().enumerate() {
            if raw.trim().is_empty() {
                continue;
            }
            let at = format!("--targets {file} line {}", i + 1);
            out.push(vegeta_json(raw, target).map_err(|e| UsageError(format!("{at}: {e}")))?);
        }
    } else {
        // The current target: (request, whether its body line was seen).
        let mut open: Option<(NamedRequest, bool)> = None;
        for (i, raw) in text.lines().enumerate() {
            let at = format!("--targets {file} line {}", i + 1);
            let line = raw.trim();
            if line.starts_with('#') {
                continue;
            }
            if line.is_empty() {
                out.extend(open.take().map(|(r, _)| r));
                continue;
            }
            match &mut open {
                None => {
                    let (method, url) = line.split_once(' ').ok_or_else(|| {
                        UsageError(format!(
                            "{at}: a target starts with \"METHOD URL\", got {line:?}"
                        ))
                    })?;
                    check_method(method).map_err(|e| UsageError(format!("{at}: {e}")))?;
                    let path = same_origin(url.trim(), target)
                        .map_err(|e| UsageError(format!("{at}: {e}")))?;
                    open = Some((
                        NamedRequest {
                            name: format!("{method} {path}"),
                            method: method.to_string(),
                            path,
                            headers: Vec::new(),
                            body: None,
                            weight: 1.0,
                            check: None,
                        },
                        false,
                    ));
                }
                Some((r, body_seen)) => {
                    if let Some(f) = line.strip_prefix('@') {
                        if *body_seen {
                            return Err(UsageError(format!("{at}: a second body line")));
                        }
                        r.body = Some(std::fs::read(f).map_err(|e| {
                            UsageError(format!("{at}: cannot read body file {f}: {e}"))
                        })?);
                        *body_seen = true;
                    } else if *body_seen {
                        return Err(UsageError(format!(
                            "{at}: a header after the body line (a blank line ends a target)"
                        )));
                    } else {
                        check_header(line).map_err(|e| UsageError(format!("{at}: {}", e.0)))?;
                        r.headers.push(line.to_string());
                    }
                }
            }
        }
        out.extend(open.map(|(r, _)| r));
    }
    if out.is_empty() {
        return Err(UsageError(format!("--targets {file} holds no target")));
    }
    if out.len() > MAX_REQUESTS {
        return Err(UsageError(format!(
            "--targets {file}: more than {MAX_REQUESTS} targets"
        )));
    }
    Ok(out)
}

/// One line of vegeta's JSON targets format.
fn vegeta_json(raw: &str, target: &Target) -> Result<NamedRequest, String> {
    #[derive(Deserialize)]
    struct J {
        method: String,
        url: String,
        #[serde(default)]
        header: HashMap<String, Vec<String>>,
        #[serde(default)]
        body: Option<String>,
    }
    let j: J = serde_json::from_str(raw).map_err(|e| e.to_string())?;
    check_method(&j.method)?;
    let path = same_origin(&j.url, target)?;
    let mut headers = Vec::new();
    let mut names: Vec<&String> = j.header.keys().collect();
    names.sort();
    for k in names {
        for v in &j.header[k] {
            let h = format!("{k}: {v}");
            check_header(&h).map_err(|e| e.0)?;
            headers.push(h);
        }
    }
    let body = match j.body {
        None => None,
        Some(b) if b.is_empty() => None,
        Some(b) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(b.as_bytes())
                .map_err(|_| "\"body\" is not base64")?,
        ),
    };
    Ok(NamedRequest {
        name: format!("{} {path}", j.method),
        method: j.method,
        path,
        headers,
        body,
        weight: 1.0,
        check: None,
    })
}

fn check_method(method: &str) -> Result<(), String> {
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(format!(
            "bad method {method:?}: write it in capitals, like GET or POST"
        ));
    }
    Ok(())
}

/// The path of `url` when it names the run's origin (scheme, host, port).
fn same_origin(url: &str, target: &Target) -> Result<String, String> {
    let t = Target::parse(url).map_err(|e| e.0)?;
    if (t.tls, t.host.as_str(), t.port) != (target.tls, target.host.as_str(), target.port) {
        return Err(format!(
            "{url} is not the run's origin {}://{} (one origin per run)",
            if target.tls { "https" } else { "http" },
            target.authority()
        ));
    }
    Ok(t.path)
}

/// The encoded requests, the names (deduplicated, in first-seen order),
/// each request's name index and the weights, with the run's `-H`
/// headers first.
pub struct Encoded {
    /// Complete HTTP/1.1 requests.
    pub requests: Vec<Vec<u8>>,
    /// The distinct names.
    pub names: Vec<String>,
    /// `name_of[i]`: the index in `names` of request `i`.
    pub name_of: Vec<u32>,
    /// The weights, one per request.
    pub weights: Vec<f64>,
}

/// Encodes a mix for `target`, with `headers` (the run's `-H`) before each
/// request's own.
pub fn encode_all(mix: &[NamedRequest], target: &Target, headers: &[String]) -> Encoded {
    let mut names: Vec<String> = Vec::new();
    let mut name_of = Vec::with_capacity(mix.len());
    let mut requests = Vec::with_capacity(mix.len());
    for r in mix {
        let t = Target {
            path: r.path.clone(),
            ..target.clone()
        };
        let mut all = headers.to_vec();
        all.extend(r.headers.iter().cloned());
        requests.push(encode(&t, &r.method, &all, r.body.as_deref()));
        let idx = names.iter().position(|n| *n == r.name).unwrap_or_else(|| {
            names.push(r.name.clone());
            names.len() - 1
        });
        name_of.push(idx as u32);
    }
    Encoded {
        requests,
        names,
        name_of,
        weights: mix.iter().map(|r| r.weight).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Target {
        Target::parse("http://127.0.0.1:8080/").unwrap()
    }

    fn err(text: &str) -> String {
        parse_requests(text, "r", Path::new("."), &target())
            .unwrap_err()
            .0
    }

    #[test]
    fn requests_errors_name_the_line() {
        assert_eq!(
            err("{\"path\":\"/\"}\nnope\n").split(':').next().unwrap(),
            "--requests r line 2"
        );
        assert_eq!(
            err("{}"),
            "--requests r line 1: a request needs \"path\" or \"url\""
        );
        assert_eq!(
            err("{\"url\":\"http://10.0.0.1/\"}"),
            "--requests r line 1: http://10.0.0.1/ is not the run's origin http://127.0.0.1:8080 \
             (one origin per run)"
        );
        assert_eq!(
            err("{\"path\":\"/\",\"weight\":0}"),
            "--requests r line 1: \"weight\" must be a positive number"
        );
        assert_eq!(
            err("{\"path\":\"/\",\"method\":\"get\"}"),
            "--requests r line 1: bad method \"get\": write it in capitals, like GET or POST"
        );
        assert!(err("{\"path\":\"/\",\"bogus\":1}").contains("unknown field"));
        assert_eq!(err("\n\n"), "--requests r holds no request");
    }

    #[test]
    fn headers_bodies_and_encoding() {
        let m = parse_requests(
            "{\"name\":\"a\",\"path\":\"/a\",\"headers\":{\"X-K\":\"v\"},\"body\":\"hi\"}\n\
             {\"name\":\"a\",\"path\":\"/a2\",\"headers\":[\"X-L: w\"],\"method\":\"PUT\"}\n\
             {\"path\":\"/c?q=1\"}\n",
            "r",
            Path::new("."),
            &target(),
        )
        .unwrap();
        let e = encode_all(&m, &target(), &["X-Run: 1".to_string()]);
        assert_eq!(e.names, ["a", "GET /c?q=1"]);
        assert_eq!(e.name_of, [0, 0, 1]);
        let first = String::from_utf8(e.requests[0].clone()).unwrap();
        assert!(first.starts_with("POST /a HTTP/1.1\r\n"), "{first}");
        assert!(
            first.contains("X-Run: 1\r\n") && first.contains("X-K: v\r\n"),
            "{first}"
        );
        assert!(first.ends_with("\r\n\r\nhi"), "{first}");
        let second = String::from_utf8(e.requests[1].clone()).unwrap();
        assert!(second.starts_with("PUT /a2 HTTP/1.1\r\n") && second.contains("X-L: w\r\n"));
    }

    #[test]
    fn vegeta_http_and_json_formats() {
        let t = target();
        let http =
            "GET http://127.0.0.1:8080/a\nX-A: 1\nX-B: 2\n\nPOST http://127.0.0.1:8080/b\n\n\n";
        let m = parse_targets(http, "t", &t).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].headers, ["X-A: 1", "X-B: 2"]);
        assert_eq!((m[1].method.as_str(), m[1].path.as_str()), ("POST", "/b"));
        let json = "{\"method\":\"POST\",\"url\":\"http://127.0.0.1:8080/j\",\"header\":{\"X-Z\":[\"1\",\"2\"]},\"body\":\"aGVsbG8=\"}\n";
        let m = parse_targets(json, "t", &t).unwrap();
        assert_eq!(m[0].body.as_deref(), Some(&b"hello"[..]));
        assert_eq!(m[0].headers, ["X-Z: 1", "X-Z: 2"]);
        let bad = parse_targets("GET http://127.0.0.1:9/\n", "t", &t)
            .unwrap_err()
            .0;
        assert!(
            bad.starts_with("--targets t line 1: http://127.0.0.1:9/ is not"),
            "{bad}"
        );
        let bad = parse_targets("GET\n", "t", &t).unwrap_err().0;
        assert!(
            bad.starts_with("--targets t line 1: a target starts with"),
            "{bad}"
        );
    }
}
