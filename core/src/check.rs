//! Checks on the answer (`--check-status`, `--check-header`, `--check-body`,
//! `--check-regex`): whether a complete response is the right one, not
//! just a 2xx. A response that fails a check is an error of kind
//! [`ErrorKind::Check`](crate::measure::ErrorKind::Check), counted by which
//! check failed ([`CheckFailure`]).
//!
//! Sans-IO and allocation-free. A request's checks ([`Check`]) are built
//! before the clock and borrowed for the whole run (`'static`: the CLI
//! keeps them for the process); each exchange keeps a small
//! [`CheckState`] that the body's bytes flow through as they arrive,
//! de-chunked, read after read and frame after frame, so the body is never
//! copied and a text split across reads, chunks or frames is found:
//!
//! - a substring ([`Substring`]): `memchr::memmem` inside each slice, and
//!   Knuth-Morris-Pratt over at most `needle.len() - 1` bytes at each
//!   boundary (a state of one integer: how much of the needle the bytes so
//!   far end with);
//! - a regular expression ([`BodyMatcher`]): a DFA walked a byte at a time,
//!   its state one integer across slices (the CLI builds it with
//!   `regex-automata`, bounded in size; see docs/requests.md);
//! - the status and a header's value are read from the head.
//!
//! ```
//! use metronome_core::check::{Check, CheckFailure, CheckState, Substring};
//! static TABLE: [u32; 5] = Substring::table_of::<5>(b"hello");
//! let check = Check {
//!     body: Some(Substring::new(b"hello", &TABLE)),
//!     ..Check::NONE
//! };
//! let mut st = CheckState::new();
//! st.body(&check, b"...hel"); // the text straddles two reads
//! st.body(&check, b"lo world");
//! assert_eq!(st.verdict(&check), None);
//! let mut st = CheckState::new();
//! st.body(&check, b"help");
//! assert_eq!(st.verdict(&check), Some(CheckFailure::Body));
//! ```

use core::fmt;

/// Which check a response failed; each has a counter in the report
/// (`errors.check_by_kind`). When several fail, the first in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CheckFailure {
    /// The status was not the one expected (`--check-status`).
    Status,
    /// The header was absent or had another value (`--check-header`).
    Header,
    /// The body did not contain the text (`--check-body`).
    Body,
    /// The body did not match the regular expression (`--check-regex`).
    Regex,
}

impl CheckFailure {
    /// Number of failures.
    pub const COUNT: usize = 4;
    /// Every failure, in [`CheckFailure::index`] order.
    pub const ALL: [CheckFailure; CheckFailure::COUNT] = [
        CheckFailure::Status,
        CheckFailure::Header,
        CheckFailure::Body,
        CheckFailure::Regex,
    ];

    /// The key in reports: `status`, `header`, `body`, `regex`.
    ///
    /// ```
    /// use metronome_core::check::CheckFailure;
    /// let names: Vec<_> = CheckFailure::ALL.iter().map(|c| c.name()).collect();
    /// assert_eq!(names, ["status", "header", "body", "regex"]);
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            CheckFailure::Status => "status",
            CheckFailure::Header => "header",
            CheckFailure::Body => "body",
            CheckFailure::Regex => "regex",
        }
    }

    /// Position in [`CheckFailure::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// A regular expression over the body, as a deterministic automaton walked
/// byte by byte: its whole state between slices is one `u32`. The CLI
/// implements it on a `regex-automata` dense DFA (unanchored: a match
/// anywhere in the body).
pub trait BodyMatcher: Sync + fmt::Debug {
    /// The state before the body's first byte.
    fn start(&self) -> u32;
    /// The state after `bytes`, from `state`; may stop early once the
    /// state is a match (or can never match).
    fn step(&self, state: u32, bytes: &[u8]) -> u32;
    /// Whether the body ending here (after the bytes stepped through)
    /// matched.
    fn matched_at_end(&self, state: u32) -> bool;
    /// Whether a match is already certain, whatever follows (no more
    /// bytes need stepping).
    fn matched(&self, state: u32) -> bool;
}

/// A text the body must contain, with its Knuth-Morris-Pratt failure table
/// ([`Substring::table_of`], [`Substring::fill_table`]).
#[derive(Clone, Debug)]
pub struct Substring {
    needle: &'static [u8],
    table: &'static [u32],
    finder: memchr::memmem::Finder<'static>,
}

impl Substring {
    /// The check for `needle` (not empty), with `table` its failure table
    /// (of the same length).
    ///
    /// # Panics
    /// When `needle` is empty or `table` is not its failure table's length
    /// (a caller's mistake, made before the clock).
    pub fn new(needle: &'static [u8], table: &'static [u32]) -> Substring {
        assert!(
            !needle.is_empty() && table.len() == needle.len(),
            "a substring check needs a non-empty needle and its table"
        );
        Substring {
            needle,
            table,
            finder: memchr::memmem::Finder::new(needle),
        }
    }

    /// The failure table of `needle` in a const context (`N` its length).
    pub const fn table_of<const N: usize>(needle: &[u8; N]) -> [u32; N] {
        let mut t = [0u32; N];
        let mut k = 0usize;
        let mut i = 1usize;
        while i < N {
            while k > 0 && needle[i] != needle[k] {
                k = t[k - 1] as usize;
            }
            if needle[i] == needle[k] {
                k += 1;
            }
            t[i] = k as u32;
            i += 1;
        }
        t
    }

    /// Writes the failure table of `needle` into `table` (its length):
    /// `table[i]` is the length of the longest proper prefix of
    /// `needle[..=i]` that is also its suffix.
    ///
    /// ```
    /// let mut t = [0u32; 7];
    /// metronome_core::check::Substring::fill_table(b"abacaba", &mut t);
    /// assert_eq!(t, [0, 0, 1, 0, 1, 2, 3]);
    /// ```
    pub fn fill_table(needle: &[u8], table: &mut [u32]) {
        let mut k = 0usize;
        if let Some(first) = table.first_mut() {
            *first = 0;
        }
        for i in 1..needle.len().min(table.len()) {
            while k > 0 && needle[i] != needle[k] {
                k = table[k - 1] as usize;
            }
            if needle[i] == needle[k] {
                k += 1;
            }
            table[i] = k as u32;
        }
    }

    /// The needle.
    pub fn needle(&self) -> &'static [u8] {
        self.needle
    }

    /// Knuth-Morris-Pratt from `state` over `bytes`: the needle's prefix
    /// the bytes end with, or the needle's length when it was found.
    fn run(&self, mut state: usize, bytes: &[u8]) -> usize {
        let m = self.needle.len();
        for &b in bytes {
            while state > 0 && self.needle[state] != b {
                state = self.table[state - 1] as usize;
            }
            if self.needle[state] == b {
                state += 1;
                if state == m {
                    return m;
                }
            }
        }
        state
    }
}

/// A response header's expected value (`--check-header`).
#[derive(Clone, Copy, Debug)]
pub struct HeaderCheck {
    /// The field name, compared without regard to case.
    pub name: &'static [u8],
    /// The value it must have (compared exactly, without the surrounding
    /// whitespace); `None`: present with any value. A header sent several
    /// times passes when one of them does.
    pub value: Option<&'static [u8]>,
}

impl HeaderCheck {
    /// Whether the field `name: value` satisfies this check.
    ///
    /// ```
    /// use metronome_core::check::HeaderCheck;
    /// let h = HeaderCheck { name: b"content-type", value: Some(b"application/json") };
    /// assert!(h.accepts(b"Content-Type", b" application/json "));
    /// assert!(!h.accepts(b"Content-Type", b"text/plain"));
    /// assert!(!h.accepts(b"Content-Length", b"application/json"));
    /// ```
    pub fn accepts(&self, name: &[u8], value: &[u8]) -> bool {
        name.eq_ignore_ascii_case(self.name) && self.value.is_none_or_eq(trim(value))
    }
}

/// `Option<&[u8]>`: none, or equal.
trait NoneOrEq {
    fn is_none_or_eq(&self, v: &[u8]) -> bool;
}

impl NoneOrEq for Option<&[u8]> {
    fn is_none_or_eq(&self, v: &[u8]) -> bool {
        match self {
            None => true,
            Some(want) => *want == v,
        }
    }
}

/// `s` without leading and trailing spaces and tabs.
fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// One request's checks; [`Check::NONE`] checks nothing.
#[derive(Clone, Debug)]
pub struct Check {
    /// The statuses accepted, `lo..=hi` (`2xx` is `200..=299`). With it,
    /// a status in the range is not an error of kind `status` even when
    /// it is not 2xx; without it, a non-2xx status is one, as always.
    pub status: Option<(u16, u16)>,
    /// A header and its value.
    pub header: Option<HeaderCheck>,
    /// A text the body must contain.
    pub body: Option<Substring>,
    /// A regular expression the body must match.
    pub regex: Option<&'static dyn BodyMatcher>,
}

impl Check {
    /// No check at all.
    pub const NONE: Check = Check {
        status: None,
        header: None,
        body: None,
        regex: None,
    };

    /// Whether any check is set.
    pub const fn any(&self) -> bool {
        self.status.is_some()
            || self.header.is_some()
            || self.body.is_some()
            || self.regex.is_some()
    }

    /// Whether the body must be seen (a body or regex check).
    pub const fn reads_body(&self) -> bool {
        self.body.is_some() || self.regex.is_some()
    }
}

/// What one response showed its checks so far: a few integers, reset per
/// response ([`CheckState::new`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckState {
    /// The header check was satisfied by some field.
    header_ok: bool,
    /// The substring was found.
    body_found: bool,
    /// How much of the needle the body so far ends with.
    body_prefix: u32,
    /// The regex automaton's state, once started.
    regex: Option<u32>,
}

impl CheckState {
    /// Nothing seen yet.
    pub const fn new() -> CheckState {
        CheckState {
            header_ok: false,
            body_found: false,
            body_prefix: 0,
            regex: None,
        }
    }

    /// One field of the response head (HTTP/1.1 header, HTTP/2 or HTTP/3
    /// field; trailers too).
    #[inline]
    pub fn field(&mut self, check: &Check, name: &[u8], value: &[u8]) {
        if let Some(h) = &check.header {
            self.header_ok |= h.accepts(name, value);
        }
    }

    /// A field satisfied the header check (the caller compared it with
    /// [`HeaderCheck::accepts`], as the HTTP/1.1 parser does).
    #[inline]
    pub fn header_passed(&mut self) {
        self.header_ok = true;
    }

    /// The next bytes of the body, de-chunked, in order.
    #[inline]
    pub fn body(&mut self, check: &Check, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if let Some(sub) = &check.body {
            if !self.body_found {
                self.body_found = self.substring(sub, bytes);
            }
        }
        if let Some(re) = check.regex {
            let s = self.regex.unwrap_or_else(|| re.start());
            if !re.matched(s) {
                self.regex = Some(re.step(s, bytes));
            } else {
                self.regex = Some(s);
            }
        }
    }

    /// [`CheckState::body`] for a substring: whether it is found now.
    fn substring(&mut self, sub: &Substring, bytes: &[u8]) -> bool {
        let m = sub.needle.len();
        let keep = m - 1;
        let state = self.body_prefix as usize;
        if bytes.len() < keep {
            let s = sub.run(state, bytes);
            self.body_prefix = s as u32;
            return s == m;
        }
        // A match that began in earlier bytes ends in the first m - 1.
        if state > 0 && sub.run(state, &bytes[..keep]) == m {
            return true;
        }
        if sub.finder.find(bytes).is_some() {
            return true;
        }
        // What the bytes end with: at most m - 1 bytes, all in this slice:
        // the longest suffix of the last m - 1 bytes that starts the
        // needle, found from the leftmost place its first byte occurs.
        let tail = &bytes[bytes.len() - keep..];
        self.body_prefix = memchr::memchr_iter(sub.needle[0], tail)
            .map(|p| &tail[p..])
            .find(|rest| sub.needle.starts_with(rest))
            .map_or(0, |rest| rest.len() as u32);
        false
    }

    /// The first check the complete response failed among the header and
    /// body checks (the status is judged by [`judge`]); `None`: passed.
    pub fn verdict(&self, check: &Check) -> Option<CheckFailure> {
        if check.header.is_some() && !self.header_ok {
            return Some(CheckFailure::Header);
        }
        if check.body.is_some() && !self.body_found {
            return Some(CheckFailure::Body);
        }
        if let Some(re) = check.regex {
            let s = self.regex.unwrap_or_else(|| re.start());
            if !re.matched_at_end(s) {
                return Some(CheckFailure::Regex);
            }
        }
        None
    }
}

/// How a complete response's checks decide its end, for every protocol:
/// `status` is its status, `verdict` its [`CheckState::verdict`], and
/// `unchecked` what it would be without checks. `None` keeps `unchecked`;
/// `Some(Ok(()))` makes it a success (a status outside 2xx that
/// `--check-status` accepts, all else passing); `Some(Err(f))` is a check
/// failure.
///
/// Failures of the exchange itself (a reset, bad framing, a timeout) are
/// not judged: the caller passes only complete responses.
///
/// ```
/// use metronome_core::check::{judge, Check, CheckFailure};
/// let ok_404 = Check { status: Some((404, 404)), ..Check::NONE };
/// assert_eq!(judge(&ok_404, Some(404), None, false), Some(Ok(())));
/// assert_eq!(judge(&ok_404, Some(200), None, true), Some(Err(CheckFailure::Status)));
/// assert_eq!(judge(&Check::NONE, Some(500), Some(CheckFailure::Body), false), None);
/// ```
pub fn judge(
    check: &Check,
    status: Option<u16>,
    verdict: Option<CheckFailure>,
    unchecked_success: bool,
) -> Option<Result<(), CheckFailure>> {
    let accepted = match check.status {
        Some((lo, hi)) => {
            let s = status.unwrap_or(0);
            if !(lo..=hi).contains(&s) {
                return Some(Err(CheckFailure::Status));
            }
            true
        }
        None => false,
    };
    if !(unchecked_success || accepted) {
        return None;
    }
    match verdict {
        Some(f) => Some(Err(f)),
        None if accepted && !unchecked_success => Some(Ok(())),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::boxed::Box;
    use std::vec::Vec;

    fn leak_sub(needle: &[u8]) -> Check {
        let needle: &'static [u8] = Box::leak(needle.to_vec().into_boxed_slice());
        let mut t = std::vec![0u32; needle.len()];
        Substring::fill_table(needle, &mut t);
        let table: &'static [u32] = Box::leak(t.into_boxed_slice());
        Check {
            body: Some(Substring::new(needle, table)),
            ..Check::NONE
        }
    }

    /// Every split of every body into up to three slices gives the same
    /// answer as a search of the whole body, for needles with repeated
    /// prefixes (where a naive carry would miss a match).
    #[test]
    fn substring_across_every_split() {
        let bodies: [&[u8]; 6] = [
            b"aaaaab",
            b"abacabacabad",
            b"xxabacabaxx",
            b"ab",
            b"the quick brown fox",
            b"aabaabaaab",
        ];
        let needles: [&[u8]; 7] = [b"a", b"ab", b"aab", b"abacaba", b"aaab", b"fox", b"zz"];
        for needle in needles {
            let check = leak_sub(needle);
            for body in bodies {
                let want = body.windows(needle.len()).any(|w| w == needle);
                for i in 0..=body.len() {
                    for j in i..=body.len() {
                        let mut st = CheckState::new();
                        for part in [&body[..i], &body[i..j], &body[j..]] {
                            st.body(&check, part);
                        }
                        let got = st.verdict(&check).is_none();
                        assert_eq!(got, want, "{needle:?} in {body:?} split {i} {j}");
                    }
                }
                // Byte by byte.
                let mut st = CheckState::new();
                for b in body.chunks(1) {
                    st.body(&check, b);
                }
                assert_eq!(st.verdict(&check).is_none(), want);
            }
        }
    }

    #[test]
    fn tables_agree() {
        for needle in [&b"abacaba"[..], b"aaaa", b"abcabd", b"a"] {
            let mut t = std::vec![9u32; needle.len()];
            Substring::fill_table(needle, &mut t);
            let mut naive = Vec::new();
            for i in 0..needle.len() {
                let s = &needle[..=i];
                let k = (0..s.len())
                    .rev()
                    .find(|&k| s[..k] == s[s.len() - k..])
                    .unwrap_or(0);
                naive.push(k as u32);
            }
            assert_eq!(t, naive, "{needle:?}");
        }
        assert_eq!(Substring::table_of(b"abacaba"), [0, 0, 1, 0, 1, 2, 3]);
    }

    #[test]
    fn header_and_status_judged() {
        let h = Check {
            header: Some(HeaderCheck {
                name: b"x-a",
                value: Some(b"1"),
            }),
            ..Check::NONE
        };
        let mut st = CheckState::new();
        st.field(&h, b"X-A", b"2");
        assert_eq!(st.verdict(&h), Some(CheckFailure::Header));
        st.field(&h, b"x-a", b" 1");
        assert_eq!(st.verdict(&h), None);
        let two = Check {
            status: Some((200, 299)),
            ..h.clone()
        };
        assert_eq!(
            judge(&two, Some(503), None, false),
            Some(Err(CheckFailure::Status))
        );
        assert_eq!(
            judge(&two, Some(204), Some(CheckFailure::Header), true),
            Some(Err(CheckFailure::Header))
        );
        assert_eq!(judge(&two, Some(204), None, true), None);
        // Without a status check a non-2xx stays a status error.
        assert_eq!(
            judge(&h, Some(503), Some(CheckFailure::Header), false),
            None
        );
    }
}
