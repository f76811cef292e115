//! `run --repeat N`: the same test N times, and for each headline number
//! the mean over the runs with a 95% confidence interval (Student's t, N -
//! 1 degrees of freedom), so a difference between two configurations can
//! be told from run-to-run noise.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::num::{count, num, unit};
use super::Report;

/// Always the `schema` of a repeat document.
pub const SCHEMA: &str = "metronome.repeat/v1";

/// The runs and their summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Repeat {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Every run's report, in order (run `i` used seed `--seed + i`).
    pub runs: Vec<Report>,
    /// One row per headline number present in every run.
    pub summary: Vec<Stat>,
}

/// One headline number over the runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stat {
    /// What it is, e.g. `latency.p99` (ms), `achieved_rps`.
    pub name: String,
    /// Its value in each run.
    pub values: Vec<f64>,
    /// Their mean.
    pub mean: f64,
    /// Their sample standard deviation (n - 1); 0 for one run.
    pub sd: f64,
    /// Half the width of the 95% confidence interval of the mean:
    /// `t(0.975, n - 1) x sd / sqrt(n)`; 0 for one run.
    pub ci95: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
}

/// Student's t quantile for a two-sided 95% interval, by degrees of
/// freedom (1..=30); 1.96 (the normal's) above.
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// `t(0.975, df)`.
///
/// ```
/// use metronome::report::repeat::t975;
/// assert_eq!(t975(2), 4.303);
/// assert_eq!(t975(100), 1.96);
/// ```
pub fn t975(df: usize) -> f64 {
    match df {
        0 => 0.0,
        d if d <= T975.len() => T975[d - 1],
        _ => 1.96,
    }
}

impl Stat {
    /// The summary of `values` (at least one).
    ///
    /// ```
    /// use metronome::report::repeat::Stat;
    /// let s = Stat::of("x", vec![1.0, 2.0, 3.0]);
    /// assert_eq!((s.mean, s.sd), (2.0, 1.0));
    /// assert!((s.ci95 - 4.303 / 3f64.sqrt()).abs() < 1e-12);
    /// ```
    pub fn of(name: &str, values: Vec<f64>) -> Stat {
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n.max(1) as f64;
        let sd = if n > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let ci95 = if n > 1 {
            t975(n - 1) * sd / (n as f64).sqrt()
        } else {
            0.0
        };
        Stat {
            name: name.to_string(),
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            values,
            mean,
            sd,
            ci95,
        }
    }
}

/// The headline numbers of a report, by name: rates, error rate and
/// goodput, and the percentiles of latency, service time, send lag and,
/// for streams, TTFT, ITL, TPOT (exact ones where the run kept every
/// sample, else the histogram's), and output tokens per second.
pub fn headline(r: &Report) -> Vec<(String, f64)> {
    let mut out = vec![
        ("achieved_rps".to_string(), r.achieved_rps),
        ("throughput_rps".to_string(), r.throughput_rps),
        ("error_rate".to_string(), r.error_rate),
        ("goodput".to_string(), r.goodput),
    ];
    let m = &r.metrics;
    let mut metric = |name: &str, x: &super::Metric, qs: &[&str]| {
        if x.count == 0 {
            return;
        }
        for q in qs {
            let v = match (q, &x.exact) {
                (&"p50", Some(e)) => e.p50,
                (&"p90", Some(e)) => e.p90,
                (&"p99", Some(e)) => e.p99,
                (&"p50", None) => x.p50,
                (&"p90", None) => x.p90,
                (&"p99", None) => x.p99,
                _ => x.mean,
            };
            out.push((format!("{name}.{q}"), v));
        }
    };
    metric("latency", &m.latency, &["p50", "p90", "p99"]);
    metric("service_time", &m.service_time, &["p50", "p99"]);
    metric("send_lag", &m.send_lag, &["p99"]);
    metric("ttft", &m.ttft, &["p50", "p99"]);
    metric("itl", &m.itl, &["p50", "p99"]);
    metric("tpot", &m.tpot, &["p50", "p99"]);
    if m.ttft.count > 0 {
        out.push(("output_tokens_per_s".to_string(), r.output_tokens_per_s));
    }
    out
}

impl Repeat {
    /// The runs and, for each headline number every run has, its summary.
    pub fn of(runs: Vec<Report>) -> Repeat {
        let names: Vec<String> = runs
            .first()
            .map(|r| headline(r).into_iter().map(|(n, _)| n).collect())
            .unwrap_or_default();
        let per_run: Vec<Vec<(String, f64)>> = runs.iter().map(headline).collect();
        let summary = names
            .iter()
            .filter_map(|name| {
                let values: Option<Vec<f64>> = per_run
                    .iter()
                    .map(|h| h.iter().find(|(n, _)| n == name).map(|&(_, v)| v))
                    .collect();
                values.map(|v| Stat::of(name, v))
            })
            .collect();
        Repeat {
            schema: SCHEMA.to_string(),
            runs,
            summary,
        }
    }
}

/// The summary as a table: one row per number, mean +- the 95% interval,
/// sd, min and max.
pub fn render(r: &Repeat) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "metronome: {} runs of {} (run i with seed --seed + i); mean +- 95% confidence interval",
        r.runs.len(),
        r.runs.first().map_or("", |x| x.target.as_str())
    );
    for (i, run) in r.runs.iter().enumerate() {
        let _ = writeln!(
            s,
            "  run {}: seed {}, achieved {}, ok {} of {}, latency p99 {}",
            i + 1,
            run.seed,
            unit(run.achieved_rps, "req/s"),
            count(run.requests.ok),
            count(run.requests.scheduled),
            unit(
                run.metrics
                    .latency
                    .exact
                    .as_ref()
                    .map_or(run.metrics.latency.p99, |e| e.p99),
                "ms"
            )
        );
    }
    let _ = writeln!(
        s,
        "\n  {:<22} {:>14} {:>12} {:>12} {:>12} {:>12}",
        "number", "mean", "+- 95% CI", "sd", "min", "max"
    );
    for st in &r.summary {
        let _ = writeln!(
            s,
            "  {:<22} {:>14} {:>12} {:>12} {:>12} {:>12}",
            format!("{} ({})", st.name, unit_of(&st.name)),
            num(st.mean),
            num(st.ci95),
            num(st.sd),
            num(st.min),
            num(st.max)
        );
    }
    s
}

/// The unit of a [`headline`] number, by its name.
fn unit_of(name: &str) -> &'static str {
    match name {
        "achieved_rps" => "req/s",
        "throughput_rps" => "ok/s",
        "output_tokens_per_s" => "tokens/s",
        "error_rate" | "goodput" => "fraction",
        _ => "ms",
    }
}
