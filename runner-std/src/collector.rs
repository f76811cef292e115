//! The collector thread's side: per-request [`Fact`]s from the connection
//! threads, recorded through core's [`Ledger`] into one [`RunOutput`].

use std::sync::atomic::Ordering;

use metronome_core::engine::{Control, HandshakeFailure, Progress, Published, RunOutput};
use metronome_core::ledger::Ledger;
use metronome_core::measure::Unsent;
use metronome_core::plan::Plan;

use crate::conn::{Opened, Outcome};

/// One fact about one request, sent by connection threads to the collector.
#[derive(Debug)]
pub(crate) enum Fact {
    /// Request intended at `intended_ns` left at `sent_ns`, after waiting
    /// for a connection since `waited_since` if it did.
    Sent {
        intended_ns: u64,
        /// Which of the plan's requests (its name's row).
        request: usize,
        sent_ns: u64,
        waited_since: Option<u64>,
    },
    /// Request finished (or failed) at `done_ns`, recorded as the plan's
    /// model says (closed: the send is the intended time).
    Done {
        intended_ns: u64,
        request: usize,
        sent_ns: u64,
        done_ns: u64,
        outcome: Outcome,
        /// The response's first byte and status, as far as known.
        head: metronome_core::record::ResponseHead,
    },
    /// Request intended at `intended_ns` could not go out at `at_ns`:
    /// never sent for `reason`, or, when `retried`, failed as the reset
    /// that made it retry (core's `Ledger::not_sent`).
    NotSent {
        intended_ns: u64,
        request: usize,
        at_ns: u64,
        reason: Unsent,
        retried: bool,
    },
    /// Request intended at `intended_ns` is sent again on a fresh connection.
    Retried { intended_ns: u64 },
    /// A connection was found closed by the server while idle.
    IdleClosed { at_ns: u64 },
    /// A connection was closed for bytes no request asked for.
    Unsolicited { at_ns: u64 },
    /// A connection was opened during the run.
    Opened(Opened),
    /// A connection's TLS handshake failed during the run.
    HandshakeFailed(HandshakeFailure),
    /// Set-up figures with nothing else counted: an HTTP/2 or HTTP/3
    /// worker's streams, once at its end (the most open at once on its
    /// connection and the server's stream limits); an HTTP/3 connection's
    /// handshake time and 0-RTT counts.
    Setup(Box<metronome_core::engine::Setup>),
    /// A line for the report's warnings (kept once: an HTTP/3 connection
    /// closed by the server with its code).
    Note(String),
}

/// Owns the recorder and intervals of a run; fed [`Fact`]s one at a time.
pub(crate) struct Collector<'p> {
    ledger: Ledger<'p>,
    pub(crate) out: RunOutput,
    published_interval: Published,
}

impl<'p> Collector<'p> {
    /// A collector publishing through `published` (from
    /// `Progress::published`, taken before the clock), its requests'
    /// records to `control`'s queue when it has one.
    pub(crate) fn new(
        plan: &'p Plan<'p>,
        control: &Control,
        published: Published,
    ) -> Collector<'p> {
        Collector {
            ledger: Ledger::new(plan),
            out: RunOutput::recording(plan, control),
            published_interval: published,
        }
    }

    pub(crate) fn handle(&mut self, fact: Fact, progress: &Progress) {
        let ledger = self.ledger;
        match fact {
            Fact::Opened(o) => return o.record(&mut self.out.setup),
            Fact::Setup(s) => return self.out.setup.merge(&s),
            Fact::HandshakeFailed(kind) => return self.out.setup.failed(kind),
            Fact::Note(line) => {
                if !self.out.warnings.contains(&line) {
                    self.out.warnings.push(line);
                }
                return;
            }
            _ => {}
        }
        let tally = &mut self.out.tally();
        let (counter, done_ns) = match fact {
            Fact::Sent {
                intended_ns,
                request,
                sent_ns,
                waited_since,
            } => {
                let sent = ledger.sent(tally, intended_ns, request, sent_ns);
                if let Some(since) = waited_since {
                    ledger.waited_for(tally, intended_ns, since, sent_ns);
                }
                (sent.then_some(&progress.sent), None)
            }
            Fact::NotSent {
                intended_ns,
                request,
                at_ns,
                reason,
                retried,
            } => {
                let ok = ledger.not_sent(tally, intended_ns, request, at_ns, reason, retried);
                (ok.map(|ok| counter(progress, ok)), Some(at_ns))
            }
            Fact::Retried { intended_ns } => {
                ledger.retried(tally, intended_ns);
                (None, None)
            }
            Fact::IdleClosed { at_ns } => {
                ledger.idle_closed(tally, at_ns);
                (None, None)
            }
            Fact::Unsolicited { at_ns } => {
                ledger.unsolicited(tally, at_ns);
                (None, None)
            }
            Fact::Done {
                intended_ns,
                request,
                sent_ns,
                done_ns,
                outcome,
                head,
            } => {
                let ok = ledger.answered(
                    tally,
                    intended_ns,
                    request,
                    sent_ns,
                    done_ns,
                    outcome.as_finish(),
                    head,
                );
                (ok.map(|ok| counter(progress, ok)), Some(done_ns))
            }
            Fact::Opened(_) | Fact::HandshakeFailed(_) | Fact::Setup(_) | Fact::Note(_) => {
                (None, None)
            }
        };
        if let Some(c) = counter {
            c.fetch_add(1, Ordering::Relaxed);
            if let Some(now) = done_ns {
                progress.publish_interval(
                    &ledger,
                    &self.out.intervals,
                    self.out.recorded(),
                    now,
                    &mut self.published_interval,
                );
            }
        }
    }
}

fn counter(progress: &Progress, ok: bool) -> &std::sync::atomic::AtomicU64 {
    if ok {
        &progress.ok
    } else {
        &progress.errors
    }
}
