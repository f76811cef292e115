//! metronome-loop: the event loop both engines run, written once and
//! generic over how bytes move.
//!
//! One thread per core (or [`Options::threads`]), each pinned, each with
//! its own ring of socket operations ([`Ring`]), its own share of the
//! connections, its own shard of the schedule (thread `t` of `T` inside the
//! plan's shard `k` of `n` sends `Shard { index: k + n*t, count: n*T }`)
//! and its own recorder, merged at the end; every buffer allocated before
//! the clock starts, so nothing is allocated per request (HTTP/3 excepted:
//! `quinn-proto` allocates); pacing sleeps in the ring until the busy-wait
//! slice before the next intended send, then spins to it and sends every
//! due request in one batch.
//!
//! The engines differ only in their [`Ring`]: `metronome-uring`'s is
//! io_uring (operations completed by the kernel), `metronome-std`'s does
//! the same operations when mio (epoll, kqueue) reports a socket ready.
//! Every protocol decision is core's (the exchange, the ledger, the pool,
//! the pacing), HTTP/3's is `metronome-quic`'s.
//!
//! Its modules: `threads` sets a run up (pre-opened connections, each
//! thread's share, the start gate, the merge); `worker/` is one thread's
//! event loop, split by concept; `ring` is the trait the engines implement;
//! `clock` reads the monotonic clock; `sys` pins threads and reads their
//! CPU time (the crate's only `unsafe`, each call with a portable fallback).
#![deny(unsafe_code)]
#![deny(
    unsafe_op_in_unsafe_fn,
    clippy::undocumented_unsafe_blocks,
    clippy::missing_safety_doc
)]
#![deny(missing_docs)]

use std::fmt;

use metronome_core::engine::{Control, EngineError, RunOutput};
use metronome_core::plan::Plan;

mod clock;
mod ring;
#[allow(unsafe_code)]
mod sys;
mod threads;
mod worker;

pub use metronome_core::engine::tls::Tls;
pub use ring::{connected_udp, Completion, Ring, UdpCaps, GSO_MAX_SEGMENTS};

/// Where an engine thread is, reported to [`Options::phase_hook`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The clock has started: from here on the thread allocates nothing.
    Measuring,
    /// The schedule is over (or stopped): only replies in flight are awaited.
    Draining,
    /// The event loop is over: the thread builds its output (allocates again).
    Done,
}

/// Options of the event loop beyond the [`Plan`].
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Engine threads; default one per allowed CPU. Never more than the
    /// plan's connections (closed model: workers) or `max_in_flight`, so each
    /// thread gets at least one of each.
    pub threads: Option<u32>,
    /// CPUs to pin the threads to, round-robin (see [`parse_cpus`]); default
    /// the CPUs this process may run on.
    pub cpus: Option<Vec<usize>>,
    /// Test hook: called by each engine thread at each [`Phase`], on that
    /// thread (e.g. to count allocations made between `Measuring` and `Done`).
    pub phase_hook: Option<fn(Phase)>,
    /// Speak TLS to the target (an `https://` URL; HTTP/3 needs it).
    pub tls: Option<Tls>,
}

impl Options {
    /// Checks the options.
    ///
    /// # Errors
    /// [`OptionsError`] naming the option to change.
    ///
    /// ```
    /// use metronome_loop::{Options, OptionsError};
    /// assert_eq!(Options::default().validate(), Ok(()));
    /// let opts = Options { threads: Some(0), ..Options::default() };
    /// assert_eq!(opts.validate(), Err(OptionsError::NoThreads));
    /// ```
    pub fn validate(&self) -> Result<(), OptionsError> {
        if self.threads == Some(0) {
            return Err(OptionsError::NoThreads);
        }
        if self.cpus.as_ref().is_some_and(Vec::is_empty) {
            return Err(OptionsError::NoCpus);
        }
        Ok(())
    }
}

/// Why [`Options`] cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OptionsError {
    /// [`Options::threads`] is 0: give at least one thread, or none
    /// for one per allowed CPU.
    NoThreads,
    /// [`Options::cpus`] is an empty list: name at least one CPU, or
    /// none for the CPUs this process may run on.
    NoCpus,
}

impl fmt::Display for OptionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OptionsError::NoThreads => "the engine needs at least one thread",
            OptionsError::NoCpus => "the CPU list names no CPU",
        })
    }
}

impl std::error::Error for OptionsError {}

/// Parses a CPU list such as `0,2-3` into `[0, 2, 3]` (sorted, deduplicated).
///
/// # Errors
/// A message naming the bad part (empty list, not a number, a reversed range).
///
/// # Example
/// ```
/// assert_eq!(metronome_loop::parse_cpus("0,2-3"), Ok(vec![0, 2, 3]));
/// assert_eq!(metronome_loop::parse_cpus(" 5 , 1 "), Ok(vec![1, 5]));
/// assert!(metronome_loop::parse_cpus("3-1").is_err());
/// assert!(metronome_loop::parse_cpus("").is_err());
/// ```
pub fn parse_cpus(list: &str) -> Result<Vec<usize>, String> {
    const LIMIT: usize = 1 << 16;
    let mut cpus = Vec::new();
    for part in list.split(',').map(str::trim) {
        if part.is_empty() {
            return Err(format!("empty entry in CPU list {list:?}"));
        }
        let num = |s: &str| -> Result<usize, String> {
            s.trim()
                .parse::<usize>()
                .ok()
                .filter(|&c| c < LIMIT)
                .ok_or_else(|| format!("{s:?} is not a CPU number (in {list:?})"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(format!("reversed CPU range {part:?} (write {b}-{a})"));
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(num(part)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Runs `plan` to completion (or until `control.stop` is set) on rings of
/// type `R`, and returns what was measured. `name` names the engine's
/// threads (`{name}-{index}`).
///
/// # Errors
/// [`EngineError::Plan`] for an invalid plan, [`EngineError::Io`] with an
/// [`OptionsError`] inside for invalid options,
/// [`EngineError::Connect`] when no connection can be opened before the
/// clock starts, [`EngineError::Io`] when a ring or thread cannot be set up.
pub fn run<R: Ring>(
    plan: &Plan<'_>,
    control: &Control,
    opts: &Options,
    name: &str,
) -> Result<RunOutput, EngineError> {
    threads::run::<R>(plan, control, opts, name)
}
