//! The one JSON line a run prints.

use crate::args::{Mode, Paced};
use crate::lag::LagHistogram;

/// What the closed run measured.
pub(crate) struct Outcome {
    pub(crate) requests: u64,
    pub(crate) seconds: f64,
    pub(crate) cpu_user_s: f64,
    pub(crate) cpu_sys_s: f64,
}

/// What a paced run measured.
pub(crate) struct PacedOutcome {
    pub(crate) base: Outcome,
    pub(crate) sent: u64,
    pub(crate) waited: u64,
    pub(crate) lag: LagHistogram,
    pub(crate) enters: u64,
    pub(crate) spin_s: f64,
    pub(crate) techniques: String,
}

/// CPU microseconds per completed request.
pub(crate) fn us_per_request(cpu_s: f64, requests: u64) -> f64 {
    if requests == 0 {
        0.0
    } else {
        cpu_s * 1e6 / requests as f64
    }
}

pub(crate) fn closed_line(outcome: &Outcome) -> String {
    let rps = outcome.requests as f64 / outcome.seconds;
    let cpu_s = outcome.cpu_user_s + outcome.cpu_sys_s;
    format!(
        "{{\"requests\":{},\"seconds\":{:.6},\"rps\":{:.1},\"cpu_user_s\":{:.6},\
         \"cpu_sys_s\":{:.6},\"cpu_us_per_request\":{:.4}}}",
        outcome.requests,
        outcome.seconds,
        rps,
        outcome.cpu_user_s,
        outcome.cpu_sys_s,
        us_per_request(cpu_s, outcome.requests)
    )
}

pub(crate) fn paced_line(paced: &Paced, outcome: &PacedOutcome) -> String {
    let base = &outcome.base;
    let rps = base.requests as f64 / base.seconds;
    let cpu_s = base.cpu_user_s + base.cpu_sys_s;
    let us = |ns: u64| ns as f64 / 1e3;
    format!(
        "{{\"mode\":\"{}\",\"offered_rps\":{:.1},\"requests\":{},\"seconds\":{:.6},\
         \"rps\":{:.1},\"sent\":{},\"waited\":{},\"lag_p50_us\":{:.3},\"lag_p99_us\":{:.3},\
         \"lag_max_us\":{:.3},\"enters\":{},\"enters_per_request\":{:.4},\"spin_s\":{:.6},\
         \"cpu_user_s\":{:.6},\"cpu_sys_s\":{:.6},\"cpu_us_per_request\":{:.4},\
         \"work_us_per_request\":{:.4},\"techniques\":\"{}\"}}",
        match paced.mode {
            Mode::Naive => "naive",
            Mode::Best => "best",
        },
        paced.rate,
        base.requests,
        base.seconds,
        rps,
        outcome.sent,
        outcome.waited,
        us(outcome.lag.quantile(0.50)),
        us(outcome.lag.quantile(0.99)),
        us(outcome.lag.max),
        outcome.enters,
        if base.requests == 0 {
            0.0
        } else {
            outcome.enters as f64 / base.requests as f64
        },
        outcome.spin_s,
        base.cpu_user_s,
        base.cpu_sys_s,
        us_per_request(cpu_s, base.requests),
        us_per_request((cpu_s - outcome.spin_s).max(0.0), base.requests),
        outcome.techniques
    )
}
