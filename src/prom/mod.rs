//! `--prometheus-rw`: a run's numbers pushed to a Prometheus remote write
//! 1.0 endpoint (docs/prometheus.md).
//!
//! - [`proto`]: the remote write messages and the snappy-compressed body.
//! - [`native`]: a metronome histogram as a native histogram; the schema
//!   and the error bound of its quantiles.
//! - [`series`]: a report as series: counters, gauges, native histograms
//!   (or classic summaries), their names and labels.
//! - [`push`]: the pusher thread: a bounded queue that drops the oldest,
//!   retries with backoff, a final flush with a deadline.

pub mod native;
pub mod proto;
pub mod push;
pub mod series;

use crate::cli::PrometheusArgs;
use crate::report::Report;

/// Pushes a finished (or saved) report as `args` say: each interval, then
/// the totals ([`series::report_requests`]; with their classic summaries
/// as the fallback for a server without native histograms), and waits for
/// the flush up to `args.prometheus_timeout`, saying so when it waits. Returns the warning to print when anything was not
/// stored; `None` without `--prometheus-rw` or when all went through.
pub fn push_report(r: &Report, args: &PrometheusArgs) -> Option<String> {
    let endpoint = args.prometheus_rw.clone()?;
    let opts = series::Options {
        labels: args.prometheus_labels.clone(),
        summaries: args.prometheus_summaries,
    };
    let pusher = match push::Pusher::start(endpoint) {
        Ok(p) => p,
        Err(e) => return Some(format!("--prometheus-rw: cannot start the pusher: {e}")),
    };
    let mut reqs = series::report_requests(r, &opts);
    let totals = reqs.pop();
    for req in &reqs {
        pusher.push(req);
    }
    if let Some(totals) = totals {
        // The totals carry the histograms: with their summaries for a
        // server without native histograms (`push::NATIVE_DISABLED`).
        if opts.summaries {
            pusher.push(&totals);
        } else {
            let summaries = series::Options {
                summaries: true,
                ..opts.clone()
            };
            let fallback =
                series::Run::new(r, &summaries).totals(r, series::measured_ms(r, r.duration_s));
            pusher.push_with_summaries(&totals, &fallback);
        }
    }
    pusher.finish(args.prometheus_timeout).warning()
}
