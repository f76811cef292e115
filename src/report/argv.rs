//! The command line a report records (its `argv`) and a page shows: the
//! words with their secrets masked ([`masked_argv`], [`this_argv`]), and
//! quoted for a POSIX shell ([`shell_words`], [`command_line`],
//! [`this_command`]). The text summary and the HTML page both print it.

/// The command line of this process, shell-quoted, with the values of
/// `--api-key` and of credential headers (`-H 'Authorization: ...'`)
/// replaced by `REDACTED`.
///
/// # Example
/// ```
/// use metronome::report::argv::command_line;
/// let args = ["metronome", "run", "http://h/", "--api-key", "sk-1", "-H", "Authorization: Bearer x"];
/// assert_eq!(
///     command_line(args.iter().map(|s| s.to_string())),
///     "metronome run http://h/ --api-key REDACTED -H 'Authorization: REDACTED'"
/// );
/// ```
pub fn command_line(args: impl IntoIterator<Item = String>) -> String {
    shell_words(&masked_argv(args))
}

/// A command line word by word, as given, with the secrets in it replaced
/// by `REDACTED`: the value of `--api-key`, the value of a credential
/// header (`-H`/`--header` named `Authorization`, `Proxy-Authorization`,
/// `Cookie`, or with `key`, `token` or `secret` in its name), and the
/// password of a URL (`http://user:REDACTED@host/`).
///
/// # Example
/// ```
/// use metronome::report::argv::masked_argv;
/// let args = ["metronome", "run", "http://u:pw@h/", "-HCookie: a=1", "--header=X-Trace: 7"];
/// assert_eq!(
///     masked_argv(args.iter().map(|s| s.to_string())),
///     ["metronome", "run", "http://u:REDACTED@h/", "-HCookie: REDACTED", "--header=X-Trace: 7"]
/// );
/// ```
pub fn masked_argv(args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut redact_next = false;
    let mut header_next = false;
    for a in args {
        let shown = if redact_next {
            "REDACTED".to_string()
        } else if header_next {
            redact_header(&a)
        } else if a.starts_with("--api-key=") {
            "--api-key=REDACTED".to_string()
        } else if let Some(h) = a.strip_prefix("--header=") {
            format!("--header={}", redact_header(h))
        } else if let Some(h) = a.strip_prefix("-H").filter(|h| !h.is_empty()) {
            format!("-H{}", redact_header(h))
        } else {
            redact_url_password(&a)
        };
        redact_next = a == "--api-key";
        header_next = a == "-H" || a == "--header";
        out.push(shown);
    }
    out
}

/// Words joined into one shell command line, each quoted for a POSIX
/// shell when it needs it.
///
/// ```
/// use metronome::report::argv::shell_words;
/// let w = ["metronome", "run", "-H", "A: b", "it's"].map(String::from);
/// assert_eq!(shell_words(&w), r"metronome run -H 'A: b' 'it'\''s'");
/// ```
pub fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `scheme://user:password@host...` with the password replaced; any other
/// word as it is.
fn redact_url_password(w: &str) -> String {
    let Some((scheme, rest)) = w.split_once("://") else {
        return w.to_string();
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let Some((userinfo, _)) = authority.rsplit_once('@') else {
        return w.to_string();
    };
    let Some((user, _)) = userinfo.split_once(':') else {
        return w.to_string();
    };
    format!("{scheme}://{user}:REDACTED{}", &rest[userinfo.len()..])
}

/// A header with a credential's value replaced.
fn redact_header(h: &str) -> String {
    let Some((name, _)) = h.split_once(':') else {
        return h.to_string();
    };
    let lower = name.trim().to_ascii_lowercase();
    let secret = ["authorization", "proxy-authorization", "cookie"].contains(&lower.as_str())
        || lower.contains("key")
        || lower.contains("token")
        || lower.contains("secret");
    if secret {
        format!("{name}: REDACTED")
    } else {
        h.to_string()
    }
}

/// Quotes a word for a POSIX shell when it needs it.
pub(super) fn shell_quote(w: &str) -> String {
    let plain = !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:=,@%+-".contains(c));
    if plain {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

/// The command line of this process for a page ([`command_line`] of
/// [`this_argv`]).
pub fn this_command() -> String {
    shell_words(&this_argv())
}

/// The words of this process's command line, secrets masked
/// ([`masked_argv`]); a word that is not UTF-8 (a path) is kept with its
/// invalid bytes replaced by U+FFFD rather than refused.
pub fn this_argv() -> Vec<String> {
    masked_argv(std::env::args_os().map(|a| a.to_string_lossy().into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_quotes_and_redacts() {
        let args = [
            "metronome",
            "run",
            "--header=X-Api-Key: k",
            "--api-key=s",
            "it's",
        ];
        assert_eq!(
            command_line(args.iter().map(|s| s.to_string())),
            r"metronome run '--header=X-Api-Key: REDACTED' --api-key=REDACTED 'it'\''s'"
        );
    }
}
