//! The pre-open rule, written once for both engines: how the connections
//! opened before the clock starts may fail.

use std::format;
use std::io;
use std::string::String;
use std::vec::Vec;

use super::EngineError;

/// Opens up to `wanted` connections before the clock starts, one `open`
/// call each, and decides what a failure means:
///
/// - a refused handshake (a [`TlsFailure`](crate::engine::tls::TlsFailure),
///   feature `tls`: a refused certificate, a server that does not speak
///   TLS) fails the run: every connection would fail alike;
/// - the first connection failing fails the run ([`EngineError::Connect`]),
///   and so does any failure when `every` connection is needed (the closed
///   model: one per worker);
/// - a later failure stops the opening: the run goes on with those open,
///   and `warnings` says how many could be pre-opened.
///
/// # Errors
/// [`EngineError::Handshake`] or [`EngineError::Connect`], as above.
///
/// ```
/// use std::io;
/// use metronome_core::engine::{pre_open, EngineError};
/// let mut warnings = Vec::new();
/// let mut left = 2;
/// let open = || if left > 0 { left -= 1; Ok(left) } else { Err(io::Error::other("refused")) };
/// assert_eq!(pre_open(4, false, open, &mut warnings).unwrap(), [1, 0]);
/// assert_eq!(warnings, ["only 2 of 4 connections could be pre-opened: refused"]);
///
/// let none = || Err::<u8, _>(io::Error::other("refused"));
/// assert!(matches!(pre_open(4, false, none, &mut warnings), Err(EngineError::Connect(_))));
/// ```
pub fn pre_open<C>(
    wanted: u32,
    every: bool,
    mut open: impl FnMut() -> io::Result<C>,
    warnings: &mut Vec<String>,
) -> Result<Vec<C>, EngineError> {
    let mut opened = Vec::with_capacity(wanted as usize);
    for _ in 0..wanted {
        match open() {
            Ok(c) => opened.push(c),
            Err(e) => {
                let refused = EngineError::connect(e);
                if opened.is_empty() || every || matches!(refused, EngineError::Handshake(..)) {
                    return Err(refused);
                }
                warnings.push(format!(
                    "only {} of {wanted} connections could be pre-opened: {}",
                    opened.len(),
                    match &refused {
                        EngineError::Connect(e) => e,
                        _ => unreachable!("a handshake failure returned above"),
                    }
                ));
                break;
            }
        }
    }
    Ok(opened)
}

impl EngineError {
    /// The error for a connection that could not be opened before the clock
    /// started: [`EngineError::Handshake`] when its handshake was refused
    /// (feature `tls`), else [`EngineError::Connect`].
    pub fn connect(e: io::Error) -> EngineError {
        #[cfg(feature = "tls")]
        if let Some(f) = super::tls::TlsFailure::of(&e) {
            return EngineError::Handshake(f.kind, f.message.clone());
        }
        EngineError::Connect(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;
    use std::vec;

    /// Opens from a list of results; asking past its end panics.
    fn from(results: Vec<io::Result<u32>>) -> impl FnMut() -> io::Result<u32> {
        let mut it = results.into_iter();
        move || it.next().expect("asked once too often")
    }

    #[test]
    fn all_open() {
        let mut w = Vec::new();
        let open = from(vec![Ok(1), Ok(2), Ok(3)]);
        assert_eq!(pre_open(3, true, open, &mut w).unwrap(), [1, 2, 3]);
        assert!(w.is_empty());
    }

    #[test]
    fn a_later_failure_warns_and_stops() {
        let mut w = Vec::new();
        // The fourth result is never asked for: opening stops at a failure.
        let open = from(vec![Ok(1), Err(io::Error::other("reset"))]);
        assert_eq!(pre_open(4, false, open, &mut w).unwrap(), [1]);
        assert_eq!(w, ["only 1 of 4 connections could be pre-opened: reset"]);
    }

    #[test]
    fn the_first_failure_fails() {
        let mut w = Vec::new();
        let open = from(vec![Err(io::Error::other("refused"))]);
        let e = pre_open(2, false, open, &mut w).unwrap_err();
        assert_eq!(e.to_string(), "cannot connect to the target: refused");
        assert!(w.is_empty());
    }

    #[test]
    fn every_needed_fails_on_any() {
        let mut w = Vec::new();
        let open = from(vec![Ok(1), Err(io::Error::other("reset"))]);
        assert!(matches!(
            pre_open(2, true, open, &mut w),
            Err(EngineError::Connect(_))
        ));
        assert!(w.is_empty());
    }

    #[cfg(feature = "tls")]
    #[test]
    fn a_refused_handshake_fails_all() {
        use crate::engine::tls::TlsFailure;
        use crate::engine::HandshakeFailure;
        let mut w = Vec::new();
        let refused = TlsFailure::error(HandshakeFailure::Certificate, "unknown issuer");
        let open = from(vec![Ok(1), Err(refused)]);
        match pre_open(3, false, open, &mut w) {
            Err(EngineError::Handshake(HandshakeFailure::Certificate, m)) => {
                assert_eq!(m, "unknown issuer")
            }
            other => panic!("not a handshake failure: {other:?}"),
        }
        assert!(w.is_empty());
    }
}
