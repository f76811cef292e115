//! Checks on the answer: `--check-status`, `--check-header`, `--check-body`,
//! `--check-regex`, and a `--requests` line's own `"check"`, read into
//! core's [`Check`]s before the clock (docs/requests.md, "Checks").
//!
//! The checks are built once and kept for the life of the process (leaked,
//! a few KiB a run), so that core can borrow them as `'static` from every
//! exchange without a lifetime on the engines' connections.
//!
//! A body regular expression is compiled to a `regex-automata` dense DFA,
//! walked one byte at a time across reads (core's [`BodyMatcher`]): no
//! body is copied and no backtracking happens, so a check costs a table
//! lookup per body byte whatever the pattern. The bound on what a regular
//! expression may hold is the size of that DFA: at most
//! [`MAX_REGEX_DFA_BYTES`] (and as much again while it is built); a
//! pattern beyond it (large counted repetitions, big Unicode classes) is
//! refused in one line before the run. Unicode word boundaries (`\b` with
//! Unicode on) cannot be a DFA: write `(?-u:\b)`.

use metronome_core::check::{BodyMatcher, Check, HeaderCheck, Substring};
use regex_automata::dfa::{dense, Automaton};
use regex_automata::util::primitives::StateID;
use regex_automata::util::start;
use regex_automata::Anchored;
use serde::Deserialize;

use crate::UsageError;

/// The largest DFA a `--check-regex` may compile to, bytes.
pub const MAX_REGEX_DFA_BYTES: usize = 4 << 20;

/// The longest `--check-body` text, bytes.
pub const MAX_BODY_TEXT: usize = 64 * 1024;

/// One request's checks as written: on the command line, or in a
/// `--requests` line's `"check"` object (the same four, by name).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckSpec {
    /// `200`, `2xx`, or `200-204`.
    pub status: Option<String>,
    /// `Name: value`, or `Name` (present).
    pub header: Option<String>,
    /// A text the body contains.
    pub body: Option<String>,
    /// A regular expression the body matches.
    pub regex: Option<String>,
}

impl CheckSpec {
    /// Whether no check is given.
    pub fn is_empty(&self) -> bool {
        self == &CheckSpec::default()
    }

    /// This request's own checks over the run's: each one it gives
    /// replaces the run's of the same kind.
    pub fn over(&self, run: &CheckSpec) -> CheckSpec {
        CheckSpec {
            status: self.status.clone().or_else(|| run.status.clone()),
            header: self.header.clone().or_else(|| run.header.clone()),
            body: self.body.clone().or_else(|| run.body.clone()),
            regex: self.regex.clone().or_else(|| run.regex.clone()),
        }
    }
}

/// Parses `--check-status`: `200`, `2xx` (200-299) or `200-204`.
///
/// # Errors
/// A message saying what to write.
///
/// ```
/// use metronome::run::check::parse_status;
/// assert_eq!(parse_status("2xx"), Ok((200, 299)));
/// assert_eq!(parse_status("404"), Ok((404, 404)));
/// assert_eq!(parse_status("200-204"), Ok((200, 204)));
/// assert!(parse_status("7xx").is_err());
/// ```
pub fn parse_status(s: &str) -> Result<(u16, u16), String> {
    let bad = || format!("'{s}' is not a status: write 200, 2xx or 200-204 (100 to 599)");
    let code = |t: &str| -> Result<u16, String> {
        match t.trim().parse::<u16>() {
            Ok(c) if (100..=599).contains(&c) => Ok(c),
            _ => Err(bad()),
        }
    };
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    if let Some(d) = lower.strip_suffix("xx") {
        return match d.parse::<u16>() {
            Ok(c @ 1..=5) if d.len() == 1 => Ok((c * 100, c * 100 + 99)),
            _ => Err(bad()),
        };
    }
    match t.split_once('-') {
        Some((a, b)) => {
            let (a, b) = (code(a)?, code(b)?);
            if a > b {
                return Err(bad());
            }
            Ok((a, b))
        }
        None => code(t).map(|c| (c, c)),
    }
}

/// A `regex-automata` dense DFA as core's [`BodyMatcher`]: unanchored (a
/// match anywhere in the body).
#[derive(Debug)]
struct DfaMatcher {
    dfa: dense::DFA<Vec<u32>>,
    start: StateID,
}

impl DfaMatcher {
    fn id(state: u32) -> StateID {
        StateID::new_unchecked(state as usize)
    }
}

impl BodyMatcher for DfaMatcher {
    fn start(&self) -> u32 {
        self.start.as_u32()
    }

    fn step(&self, state: u32, bytes: &[u8]) -> u32 {
        let mut s = Self::id(state);
        for &b in bytes {
            s = self.dfa.next_state(s, b);
            if self.dfa.is_special_state(s)
                && (self.dfa.is_match_state(s) || self.dfa.is_dead_state(s))
            {
                break;
            }
        }
        s.as_u32()
    }

    fn matched_at_end(&self, state: u32) -> bool {
        let s = Self::id(state);
        self.dfa.is_match_state(s) || self.dfa.is_match_state(self.dfa.next_eoi_state(s))
    }

    fn matched(&self, state: u32) -> bool {
        let s = Self::id(state);
        self.dfa.is_match_state(s) || self.dfa.is_dead_state(s)
    }
}

/// Compiles `--check-regex`.
///
/// # Errors
/// A one-line message: a bad pattern, or one whose DFA would pass
/// [`MAX_REGEX_DFA_BYTES`].
fn regex(pattern: &str, at: &str) -> Result<&'static dyn BodyMatcher, UsageError> {
    let config = dense::DFA::config()
        .dfa_size_limit(Some(MAX_REGEX_DFA_BYTES))
        .determinize_size_limit(Some(MAX_REGEX_DFA_BYTES))
        .minimize(false);
    let dfa = dense::Builder::new()
        .configure(config)
        .build(pattern)
        .map_err(|e| {
            let why = e.to_string();
            let hint = if why.contains("exceeded") || why.contains("limit") {
                format!(
                    ": its automaton would pass {} MiB (simplify it, or turn Unicode off with \
                     (?-u))",
                    MAX_REGEX_DFA_BYTES >> 20
                )
            } else if why.contains("word boundar") {
                ": a Unicode \\b cannot be checked as the body streams; write (?-u:\\b)".into()
            } else {
                format!(": {}", why.lines().last().unwrap_or(&why).trim())
            };
            UsageError(format!("{at} '{pattern}' cannot be used{hint}"))
        })?;
    let start = dfa
        .start_state(&start::Config::new().anchored(Anchored::No))
        .map_err(|e| UsageError(format!("{at} '{pattern}' cannot be used: {e}")))?;
    Ok(Box::leak(Box::new(DfaMatcher { dfa, start })))
}

/// Builds one [`Check`] from its spec; `at` names where it was written.
///
/// # Errors
/// A [`UsageError`] naming the flag (or the line) and what to write.
fn build_one(spec: &CheckSpec, at: &str) -> Result<Check, UsageError> {
    let status = match &spec.status {
        Some(s) => {
            Some(parse_status(s).map_err(|e| UsageError(format!("{at}--check-status: {e}")))?)
        }
        None => None,
    };
    let header = match &spec.header {
        Some(h) => {
            let (name, value) = match h.split_once(':') {
                Some((n, v)) => (n.trim(), Some(v.trim())),
                None => (h.trim(), None),
            };
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(UsageError(format!(
                    "{at}--check-header '{h}': write NAME: VALUE, or NAME for any value"
                )));
            }
            Some(HeaderCheck {
                name: leak_bytes(name.to_ascii_lowercase().as_bytes()),
                value: value.map(|v| leak_bytes(v.as_bytes())),
            })
        }
        None => None,
    };
    let body = match &spec.body {
        Some(t) if t.is_empty() || t.len() > MAX_BODY_TEXT => {
            return Err(UsageError(format!(
                "{at}--check-body: give a text of 1 to {MAX_BODY_TEXT} bytes"
            )))
        }
        Some(t) => {
            let needle = leak_bytes(t.as_bytes());
            let mut table = vec![0u32; needle.len()];
            Substring::fill_table(needle, &mut table);
            Some(Substring::new(needle, Box::leak(table.into_boxed_slice())))
        }
        None => None,
    };
    let regex = match &spec.regex {
        Some(p) => Some(regex(p, &format!("{at}--check-regex"))?),
        None => None,
    };
    Ok(Check {
        status,
        header,
        body,
        regex,
    })
}

fn leak_bytes(b: &[u8]) -> &'static [u8] {
    Box::leak(b.to_vec().into_boxed_slice())
}

/// The plan's checks: none when no request has any; one for every request
/// when `per_request` is empty; else one per request (in the plan's
/// order), each its own over the run's.
///
/// # Errors
/// A [`UsageError`] naming the flag or the `--requests` line.
pub fn build(
    run: &CheckSpec,
    per_request: &[(String, Option<CheckSpec>)],
) -> Result<&'static [Check], UsageError> {
    let own = per_request.iter().any(|(_, c)| c.is_some());
    if run.is_empty() && !own {
        return Ok(&[]);
    }
    let checks = if own {
        per_request
            .iter()
            .map(|(at, c)| match c {
                Some(c) => build_one(&c.over(run), &format!("{at}: ")),
                None => build_one(run, ""),
            })
            .collect::<Result<Vec<_>, _>>()?
    } else {
        vec![build_one(run, "")?]
    };
    Ok(Box::leak(checks.into_boxed_slice()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use metronome_core::check::{CheckFailure, CheckState};

    fn body_verdict(check: &Check, parts: &[&[u8]]) -> Option<CheckFailure> {
        let mut st = CheckState::new();
        for p in parts {
            st.body(check, p);
        }
        st.verdict(check)
    }

    #[test]
    fn a_regex_matches_across_slices() {
        let spec = CheckSpec {
            regex: Some(r#""id":\s*[0-9]+,"#.into()),
            ..CheckSpec::default()
        };
        let c = &build(&spec, &[]).unwrap()[0];
        assert_eq!(body_verdict(c, &[b"{\"id\": 12", b"3, \"x\":1}"]), None);
        assert_eq!(
            body_verdict(c, &[b"{\"id\": 12", b"3}"]),
            Some(CheckFailure::Regex)
        );
        // A match at the very end needs the end of the body.
        let end = CheckSpec {
            regex: Some("ok$".into()),
            ..CheckSpec::default()
        };
        let c = &build(&end, &[]).unwrap()[0];
        assert_eq!(body_verdict(c, &[b"it is o", b"k"]), None);
        assert_eq!(body_verdict(c, &[b"ok!"]), Some(CheckFailure::Regex));
    }

    #[test]
    fn bad_checks_are_one_line() {
        for (spec, want) in [
            (
                CheckSpec {
                    status: Some("abc".into()),
                    ..CheckSpec::default()
                },
                "--check-status",
            ),
            (
                CheckSpec {
                    regex: Some("(".into()),
                    ..CheckSpec::default()
                },
                "--check-regex",
            ),
            (
                CheckSpec {
                    regex: Some(r"\w{500}".into()),
                    ..CheckSpec::default()
                },
                "MiB",
            ),
            (
                CheckSpec {
                    regex: Some(r"\bx".into()),
                    ..CheckSpec::default()
                },
                "(?-u:\\b)",
            ),
            (
                CheckSpec {
                    body: Some(String::new()),
                    ..CheckSpec::default()
                },
                "--check-body",
            ),
            (
                CheckSpec {
                    header: Some(": x".into()),
                    ..CheckSpec::default()
                },
                "--check-header",
            ),
        ] {
            let e = build(&spec, &[]).unwrap_err().0;
            assert!(e.contains(want) && !e.contains('\n'), "{spec:?}: {e}");
        }
    }

    #[test]
    fn a_line_overrides_the_run() {
        let run = CheckSpec {
            status: Some("2xx".into()),
            body: Some("a".into()),
            ..CheckSpec::default()
        };
        let own = CheckSpec {
            body: Some("b".into()),
            ..CheckSpec::default()
        };
        let checks = build(&run, &[("x".into(), None), ("y".into(), Some(own))]).unwrap();
        assert_eq!(checks.len(), 2);
        assert_eq!(checks[0].body.as_ref().unwrap().needle(), b"a");
        assert_eq!(checks[1].body.as_ref().unwrap().needle(), b"b");
        assert_eq!(checks[1].status, Some((200, 299)));
        assert!(build(&CheckSpec::default(), &[("x".into(), None)])
            .unwrap()
            .is_empty());
    }
}
