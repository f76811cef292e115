//! The collector thread's side: per-request [`Fact`]s from the connection
//! threads, recorded through core's [`Ledger`] into one [`RunOutput`].

use std::sync::atomic::Ordering;

use metronome_core::engine::{HandshakeFailure, Progress, RunOutput};
use metronome_core::ledger::Ledger;
use metronome_core::measure::Unsent;
use metronome_core::plan::Plan;

use crate::conn::{Opened, Outcome};

/// One fact about one request, sent by connection threads to the collector.
#[derive(Debug)]
pub(crate) enum Fact {
    /// Request intended at `intended_ns` left at `sent_ns`.
    Sent { intended_ns: u64, sent_ns: u64 },
    /// Request finished (or failed) at `done_ns`.
    Done {
        intended_ns: u64,
        sent_ns: u64,
        done_ns: u64,
        outcome: Outcome,
    },
    /// Request intended at `intended_ns` was never sent, for `reason`.
    Unsent {
        intended_ns: u64,
        at_ns: u64,
        reason: Unsent,
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
    /// A closed-loop completion, also fed to the corrected histogram.
    ClosedDone {
        sent_ns: u64,
        done_ns: u64,
        outcome: Outcome,
        expected_interval_ns: Option<u64>,
    },
}

/// Owns the recorder and intervals of a run; fed [`Fact`]s one at a time.
pub(crate) struct Collector<'p> {
    ledger: Ledger<'p>,
    pub(crate) out: RunOutput,
    published_interval: Option<usize>,
}

impl<'p> Collector<'p> {
    pub(crate) fn new(plan: &'p Plan<'p>) -> Collector<'p> {
        Collector {
            ledger: Ledger::new(plan),
            out: RunOutput::empty(plan),
            published_interval: None,
        }
    }

    pub(crate) fn handle(&mut self, fact: Fact, progress: &Progress) {
        let ledger = self.ledger;
        match fact {
            Fact::Opened(o) => {
                return self
                    .out
                    .setup
                    .opened(o.connect_ns, o.handshake_ns, o.resumed)
            }
            Fact::HandshakeFailed(kind) => return self.out.setup.failed(kind),
            _ => {}
        }
        let tally = &mut self.out.tally();
        let (counter, done_ns) = match fact {
            Fact::Sent {
                intended_ns,
                sent_ns,
            } => {
                let sent = ledger.sent(tally, intended_ns, sent_ns);
                (sent.then_some(&progress.sent), None)
            }
            Fact::Unsent {
                intended_ns,
                at_ns,
                reason,
            } => {
                ledger.unsent(tally, intended_ns, at_ns, reason);
                (None, None)
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
                sent_ns,
                done_ns,
                outcome,
            } => {
                let ok = ledger.done(tally, intended_ns, sent_ns, done_ns, outcome.as_finish());
                (ok.map(|ok| counter(progress, ok)), Some(done_ns))
            }
            Fact::Opened(_) | Fact::HandshakeFailed(_) => (None, None),
            Fact::ClosedDone {
                sent_ns,
                done_ns,
                outcome,
                expected_interval_ns,
            } => {
                let ok = ledger.closed_done(
                    tally,
                    sent_ns,
                    done_ns,
                    outcome.as_finish(),
                    expected_interval_ns,
                );
                (ok.map(|ok| counter(progress, ok)), Some(done_ns))
            }
        };
        if let Some(c) = counter {
            c.fetch_add(1, Ordering::Relaxed);
            if let Some(now) = done_ns {
                progress.publish_interval(
                    &ledger,
                    &self.out.intervals,
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
