//! What a message head's fields mean, decided once for HTTP/1.1, HTTP/2
//! and HTTP/3: [`ResponseFields`], the client's reading of a response head
//! (an event stream, `grpc-status`, the content length), and
//! [`RequestFields`], the server's rule for a request head's fields (the
//! pseudo-headers and the connection-specific fields HTTP/2 and HTTP/3
//! forbid). Each protocol decodes its own bytes (httparse, HPACK, QPACK)
//! and hands every field to one of them, as httparse's one header routine
//! serves its requests and responses.
//!
//! ```
//! use metronome_core::head::ResponseFields;
//! let mut f = ResponseFields::default();
//! f.field(b"Content-Type", b"Text/Event-Stream; charset=utf-8");
//! f.field(b"grpc-status", b"+5");
//! f.field(b"content-length", b"0012");
//! assert!(f.event_stream);
//! assert_eq!((f.grpc_status, f.content_length, f.bad_length), (None, Some(12), false));
//! ```

/// The fields a request carried over HTTP/1.1 that HTTP/2 and HTTP/3 do
/// not allow (RFC 9113 section 8.2.2, RFC 9114 section 4.2): the
/// encoders drop them, and a server refuses a request that has one of the
/// first five. `host` comes last: it becomes `:authority` (allowed beside
/// it in a request received).
pub const CONNECTION_SPECIFIC: [&[u8]; 6] = [
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"transfer-encoding",
    b"upgrade",
    b"host",
];

/// What a response head says that a client measures by, read field by
/// field ([`ResponseFields::field`]) whatever the protocol. Names are
/// compared without regard to case; a repeated `content-type` or
/// `grpc-status` counts by its last line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResponseFields {
    /// `content-type` names `text/event-stream`: its media type (before
    /// any `;` parameter, blanks trimmed) in any case.
    pub event_stream: bool,
    /// `grpc-status`: 1 to 9 ASCII digits (blanks trimmed); `None` when
    /// absent or anything else (`+5`, `-1`, `x`).
    pub grpc_status: Option<u32>,
    /// `content-length`: a decimal number, or a comma-separated list of
    /// the same one (RFC 9110 section 8.6).
    pub content_length: Option<u64>,
    /// A `content-length` that is not a number, or two that differ.
    pub bad_length: bool,
}

impl ResponseFields {
    /// Reads one field of the head (or of trailers).
    pub fn field(&mut self, name: &[u8], value: &[u8]) {
        if name.eq_ignore_ascii_case(b"content-type") {
            let value = trim(value);
            let media = value.split(|&b| b == b';').next().map_or(value, trim);
            self.event_stream = media.eq_ignore_ascii_case(b"text/event-stream");
        } else if name.eq_ignore_ascii_case(b"grpc-status") {
            let v = trim(value);
            self.grpc_status = (v.len() <= 9)
                .then(|| digits(v))
                .flatten()
                .and_then(|n| u32::try_from(n).ok());
        } else if name.eq_ignore_ascii_case(b"content-length") {
            for item in value.split(|&b| b == b',') {
                match (digits(trim(item)), self.content_length) {
                    (Some(n), Some(seen)) if n != seen => self.bad_length = true,
                    (Some(n), _) => self.content_length = Some(n),
                    (None, _) => self.bad_length = true,
                }
            }
        }
    }
}

/// Strips blanks from both ends: spaces and tabs, and the CR and LF of a
/// folded HTTP/1.1 line (obs-fold, read as spaces).
pub(crate) fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t' | b'\r' | b'\n', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t' | b'\r' | b'\n'] = s {
        s = rest;
    }
    s
}

/// A non-empty run of ASCII digits that fits in a `u64`.
pub(crate) fn digits(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    s.iter().try_fold(0u64, |n, &b| {
        if b.is_ascii_digit() {
            n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

/// A request head's field that makes the request malformed (RFC 9113
/// section 8.1.1, RFC 9114 section 4.1.2): the server refuses the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed;

/// Pseudo-headers seen, one bit each.
const METHOD: u8 = 1;
const SCHEME: u8 = 2;
const AUTHORITY: u8 = 4;
const PATH: u8 = 8;

/// A server's rule for the fields of a request head or its trailers over
/// HTTP/2 and HTTP/3 (RFC 9113 sections 8.2 and 8.3, RFC 9114 sections
/// 4.2 and 4.3.1), fed field by field ([`RequestFields::field`]). A field
/// is malformed when:
/// - a pseudo-header is not one of `:method`, `:scheme`, `:authority`,
///   `:path`, comes twice or after a regular field, `:path` is empty, or
///   its value holds NUL, CR, LF or a space;
/// - a name is empty or has an uppercase letter, a name or value holds
///   NUL, CR or LF, or a value starts or ends with a space or a tab;
/// - a connection-specific field is there ([`CONNECTION_SPECIFIC`] but
///   `host`), or `te` with a value other than `trailers`;
/// - `content-length` is not digits, or comes twice with two values.
///
/// ```
/// use metronome_core::head::{Malformed, RequestFields};
/// let mut r = RequestFields::default();
/// for (n, v) in [(&b":method"[..], &b"GET"[..]), (b":scheme", b"https"), (b":path", b"/"), (b":authority", b"x")] {
///     r.field(n, v).unwrap();
/// }
/// assert!(r.complete());
/// assert_eq!(r.field(b"connection", b"close"), Err(Malformed));
/// assert_eq!(RequestFields::default().field(b":status", b"200"), Err(Malformed));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequestFields {
    seen: u8,
    regular: bool,
    connect: bool,
    web: bool,
    host: bool,
    content_length: Option<u64>,
}

impl RequestFields {
    /// Checks one field; `Err` when it makes the request malformed.
    ///
    /// # Errors
    /// [`Malformed`], by the rules of the [type](Self).
    pub fn field(&mut self, name: &[u8], value: &[u8]) -> Result<(), Malformed> {
        let bad_byte = |b: &u8| matches!(b, 0 | b'\r' | b'\n');
        if let Some(pseudo) = name.strip_prefix(b":") {
            let bit = match pseudo {
                b"method" => METHOD,
                b"scheme" => SCHEME,
                b"authority" => AUTHORITY,
                b"path" => PATH,
                _ => return Err(Malformed),
            };
            if self.regular
                || self.seen & bit != 0
                || (bit == PATH && value.is_empty())
                || value.iter().any(|b| bad_byte(b) || *b == b' ')
            {
                return Err(Malformed);
            }
            self.seen |= bit;
            match bit {
                METHOD => self.connect = value == b"CONNECT",
                SCHEME => self.web = value == b"http" || value == b"https",
                _ => {}
            }
            return Ok(());
        }
        self.regular = true;
        let padded = matches!(value.first(), Some(b' ' | b'\t'))
            || matches!(value.last(), Some(b' ' | b'\t'));
        if name.is_empty()
            || name.iter().any(|b| bad_byte(b) || b.is_ascii_uppercase())
            || value.iter().any(bad_byte)
            || padded
            || CONNECTION_SPECIFIC[..5].contains(&name)
            || (name == b"te" && value != b"trailers")
        {
            return Err(Malformed);
        }
        self.host |= name == b"host";
        if name == b"content-length" {
            let n = digits(value).ok_or(Malformed)?;
            if self.content_length.replace(n).is_some_and(|m| m != n) {
                return Err(Malformed);
            }
        }
        Ok(())
    }

    /// A pseudo-header was seen (trailers may carry none).
    pub fn pseudo(&self) -> bool {
        self.seen != 0
    }

    /// The method was CONNECT.
    pub fn connect(&self) -> bool {
        self.connect
    }

    /// The `content-length`, when given (the server checks it against the
    /// body received).
    pub fn content_length(&self) -> Option<u64> {
        self.content_length
    }

    /// The head has the pseudo-headers a request needs: `:method`,
    /// `:scheme` and `:path`, and for an `http` or `https` scheme
    /// `:authority` or `host`; a CONNECT needs `:method` and `:authority`
    /// only.
    pub fn complete(&self) -> bool {
        if self.connect {
            self.seen == METHOD | AUTHORITY
        } else {
            self.seen & (METHOD | SCHEME | PATH) == METHOD | SCHEME | PATH
                && (!self.web || self.seen & AUTHORITY != 0 || self.host)
        }
    }
}
