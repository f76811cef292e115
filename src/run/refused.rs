//! The output of a run whose target refused every connection before the
//! clock: no request could be sent, and the report says so with its counts
//! (docs/report.md, "Exit codes": the report is printed in every case).

use metronome_core::engine::{RequestFeed, RunOutput};
use metronome_core::ledger::Ledger;
use metronome_core::measure::Unsent;
use metronome_core::plan::{Model, Plan};

/// What an engine would have recorded had it run `plan` with no connection
/// at all: every request of the schedule (this shard's, warmup excepted)
/// scheduled and never sent for want of a connection (`unsent` by reason
/// `connect`), in its interval, stage and name; a closed loop counts one
/// such request per worker. `start_unix_ns` is the schedule's zero the run
/// would have had; `why` (the engine's error) becomes the output's warning;
/// `requests` (`--out-requests`) gets each request's record.
///
/// # Errors
/// The plan's schedule error, when it has one (a plan that validated has none).
pub fn unconnected(
    plan: &Plan<'_>,
    start_unix_ns: u64,
    why: &str,
    requests: Option<RequestFeed>,
) -> Result<RunOutput, metronome_core::plan::PlanError> {
    let mut out = RunOutput::empty(plan);
    if let Some(feed) = &requests {
        feed.set_origin(start_unix_ns);
    }
    out.requests = requests;
    let ledger = Ledger::new(plan);
    match plan.model {
        Model::Closed { workers, .. } => {
            let mut tally = out.tally();
            for w in 0..u64::from(workers) {
                let request = plan.request_index(w);
                if ledger.scheduled(&mut tally, plan.warmup_ns, request) {
                    ledger.unsent(
                        &mut tally,
                        plan.warmup_ns,
                        request,
                        plan.warmup_ns,
                        Unsent::Connect,
                    );
                }
            }
        }
        Model::Open => {
            let schedule = plan.schedule(plan.shard)?;
            let mut tally = out.tally();
            for (index, t) in (0u64..).zip(schedule) {
                let request = plan.request_index(index);
                if ledger.scheduled(&mut tally, t, request) {
                    ledger.unsent(&mut tally, t, request, t, Unsent::Connect);
                }
            }
        }
    }
    out.measured_ns = plan.measured_ns(None);
    out.start_unix_ns = start_unix_ns;
    out.warnings.push(format!(
        "no connection could be opened before the clock ({why}): no request was sent"
    ));
    out.finalize(plan);
    Ok(out)
}

/// Removes from the report of such a run what only a run that paced can
/// claim: no generator fell behind a schedule it never began (its requests
/// are `unsent`, by reason `connect`, and the warning says why), and no
/// connection was warmed.
pub fn tidy(report: &mut crate::report::Report) {
    report.generator.behind.clear();
    report.generator.warnings.retain(|w| {
        !w.starts_with("behind schedule") && !w.starts_with("the generator fell behind")
    });
    report.connections.warm_up = None;
}
