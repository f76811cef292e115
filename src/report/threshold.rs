//! `--threshold` expressions: `latency.p99<50ms`, `error_rate<0.01`,
//! `send_lag.p99<1ms`, `achieved_ratio>0.99`, `dropped==0`.

use crate::report::{Metrics, Report, ThresholdReport};
use crate::units::parse_duration;
use crate::UsageError;

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

/// One parsed threshold.
#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    /// As written.
    pub expr: String,
    /// Left side: `metric.stat` or a scalar name.
    pub lhs: String,
    /// The operator.
    pub op: Op,
    /// Right side, in ms for durations.
    pub value: f64,
}

/// Scalars a threshold may name.
const SCALARS: &[&str] = &[
    "error_rate",
    "achieved_ratio",
    "achieved_rps",
    "throughput_rps",
    "goodput",
    "dropped",
    "errors",
    "timeouts",
    "ok",
    "sent",
    "scheduled",
    "output_tokens_per_s",
];

impl Threshold {
    /// Parses `LHS OP VALUE`.
    ///
    /// # Errors
    /// A [`UsageError`] naming the expression and what to write.
    ///
    /// # Example
    /// ```
    /// use metronome::report::threshold::{Op, Threshold};
    /// let t = Threshold::parse("latency.p99<50ms").unwrap();
    /// assert_eq!((t.lhs.as_str(), t.op, t.value), ("latency.p99", Op::Lt, 50.0));
    /// let t = Threshold::parse("dropped==0").unwrap();
    /// assert_eq!((t.op, t.value), (Op::Eq, 0.0));
    /// assert!(Threshold::parse("latency.p42<1ms").is_err());
    /// assert!(Threshold::parse("nonsense").is_err());
    /// ```
    pub fn parse(expr: &str) -> Result<Threshold, UsageError> {
        let bad = |why: &str| {
            UsageError(format!(
                "bad --threshold '{expr}': {why} (e.g. 'latency.p99<50ms', 'error_rate<0.01', 'dropped==0')"
            ))
        };
        let ops = [
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("==", Op::Eq),
            ("!=", Op::Ne),
            ("<", Op::Lt),
            (">", Op::Gt),
        ];
        let (pos, text, op) = ops
            .iter()
            .filter_map(|(t, op)| expr.find(t).map(|p| (p, *t, *op)))
            .min_by_key(|(p, t, _)| (*p, std::cmp::Reverse(t.len())))
            .ok_or_else(|| bad("no comparison"))?;
        let lhs = expr[..pos].trim().to_string();
        let rhs = expr[pos + text.len()..].trim();
        let value = if let Some((metric, stat)) = lhs.split_once('.') {
            let stats = [
                "p50", "p90", "p95", "p99", "p999", "p99.9", "max", "min", "mean", "avg", "median",
            ];
            // `e2e` is latency's other name, as `Metrics::get` reads it.
            if !(Metrics::NAMES.contains(&metric) || metric == "e2e") {
                return Err(bad(&format!("unknown metric '{metric}'")));
            }
            if !stats.contains(&stat) {
                return Err(bad(&format!("unknown statistic '{stat}'")));
            }
            let d = parse_duration(rhs).map_err(|e| bad(&e))?;
            d.as_nanos() as f64 / 1e6
        } else {
            if !SCALARS.contains(&lhs.as_str()) {
                return Err(bad(&format!("unknown quantity '{lhs}'")));
            }
            rhs.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| bad("the right side must be a number"))?
        };
        Ok(Threshold {
            expr: expr.to_string(),
            lhs,
            op,
            value,
        })
    }

    /// The measured value of the left side in `r`.
    pub fn measure(&self, r: &Report) -> f64 {
        if let Some((metric, stat)) = self.lhs.split_once('.') {
            return r
                .metrics
                .get(metric)
                .and_then(|m| m.get(stat))
                .unwrap_or(f64::NAN);
        }
        let q = &r.requests;
        match self.lhs.as_str() {
            "error_rate" => r.error_rate,
            "achieved_ratio" => {
                if r.offered_rps > 0.0 {
                    r.achieved_rps / r.offered_rps
                } else {
                    f64::NAN
                }
            }
            "achieved_rps" => r.achieved_rps,
            "throughput_rps" => r.throughput_rps,
            "goodput" => r.goodput,
            "dropped" => q.dropped as f64,
            "errors" => q.errors as f64,
            "timeouts" => q.timeouts as f64,
            "ok" => q.ok as f64,
            "sent" => q.sent as f64,
            "scheduled" => q.scheduled as f64,
            "output_tokens_per_s" => r.output_tokens_per_s,
            _ => f64::NAN,
        }
    }

    /// The metric a threshold names (`latency` of `latency.p99`), `None`
    /// for a scalar such as `error_rate`.
    pub fn metric(&self) -> Option<&str> {
        self.lhs.split_once('.').map(|(m, _)| m)
    }

    /// Checks, before the run, that the run can have the quantity this
    /// threshold names: the stream metrics (ttft, itl, tpot, itl_chunk,
    /// ttfat, tail) and `output_tokens_per_s` exist only with `--openai`
    /// (`streams`), `latency_corrected` only with `--closed` and
    /// `--expected-interval` (`corrected`).
    ///
    /// # Errors
    /// A [`UsageError`] naming the threshold, what it needs, and what the
    /// run has.
    ///
    /// # Example
    /// ```
    /// use metronome::report::threshold::Threshold;
    /// let t = Threshold::parse("ttft.p99<1s").unwrap();
    /// assert!(t.check_applies(true, false).is_ok());
    /// let e = t.check_applies(false, false).unwrap_err();
    /// assert!(e.0.starts_with("--threshold 'ttft.p99<1s': ttft is measured only with --openai"));
    /// assert!(Threshold::parse("latency.p99<1s").unwrap().check_applies(false, false).is_ok());
    /// ```
    pub fn check_applies(&self, streams: bool, corrected: bool) -> Result<(), UsageError> {
        let name = self.metric().unwrap_or(self.lhs.as_str());
        let needs = match name {
            "ttft" | "itl" | "tpot" | "itl_chunk" | "ttfat" | "tail" | "output_tokens_per_s"
                if !streams =>
            {
                "--openai (streamed responses); this run has latency, service_time and send_lag"
            }
            "latency_corrected" if !corrected => {
                "--closed N with --expected-interval (the corrected histogram)"
            }
            _ => return Ok(()),
        };
        Err(UsageError(format!(
            "--threshold '{}': {name} is measured only with {needs}",
            self.expr
        )))
    }

    /// Evaluates against a report (a value that cannot be measured fails).
    /// A statistic whose metric holds too few values for it by the one rule
    /// ([`enough`](super::enough::enough): p99 needs 100, p50 2, the max 1)
    /// is not evaluated, and fails: "no samples" or "too few samples",
    /// never a pass (or a breach) on a value that does not measure it.
    pub fn evaluate(&self, r: &Report) -> ThresholdReport {
        let samples = self
            .metric()
            .and_then(|m| r.metrics.get(m))
            .map(|m| m.count);
        let stat = self.lhs.split_once('.').map(|(_, s)| s);
        let q = stat.and_then(super::enough::quantile_of).unwrap_or(0.0);
        let not_evaluated = samples.and_then(|n| {
            let needs = super::enough::samples_for(q);
            match n {
                0 => Some("no samples".to_string()),
                n if n < needs => Some(format!(
                    "too few samples: {}; a {} needs {}",
                    super::num::count(n),
                    stat.unwrap_or_default(),
                    super::num::count(needs)
                )),
                _ => None,
            }
        });
        let v = self.measure(r);
        let passed = !v.is_nan()
            && not_evaluated.is_none()
            && match self.op {
                Op::Lt => v < self.value,
                Op::Le => v <= self.value,
                Op::Gt => v > self.value,
                Op::Ge => v >= self.value,
                Op::Eq => v == self.value,
                Op::Ne => v != self.value,
            };
        ThresholdReport {
            expr: self.expr.clone(),
            value: v,
            passed,
            samples,
            not_evaluated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example report of docs/report.md.
    fn example() -> Report {
        let doc = include_str!("../../docs/report.md");
        let start = doc.find("```json").unwrap() + 7;
        let end = start + doc[start..].find("```").unwrap();
        serde_json::from_str(&doc[start..end]).unwrap()
    }

    /// The one rule decides whether a threshold is evaluated: on 5 samples
    /// `latency.p99<1us` is "too few samples" (not a breach measured at
    /// the max), `latency.p50` and `latency.max` are evaluated, and on 0
    /// samples nothing is; each not evaluated fails.
    #[test]
    fn too_few_samples_are_not_evaluated() {
        let mut r = example();
        let eval = |r: &Report, e: &str| Threshold::parse(e).unwrap().evaluate(r);
        let t = eval(&r, "latency.p99<1us");
        assert_eq!(
            (t.passed, t.not_evaluated.as_deref()),
            (false, None),
            "{t:?}"
        );
        r.metrics.latency.count = 5;
        let t = eval(&r, "latency.p99<1us");
        assert_eq!(
            (t.passed, t.samples, t.not_evaluated.as_deref()),
            (false, Some(5), Some("too few samples: 5; a p99 needs 100"))
        );
        let t = eval(&r, "latency.p99.9<1s");
        assert_eq!(
            t.not_evaluated.as_deref(),
            Some("too few samples: 5; a p99.9 needs 1,000")
        );
        assert_eq!(
            eval(&r, "latency.p95<1s").not_evaluated.as_deref(),
            Some("too few samples: 5; a p95 needs 20")
        );
        for e in [
            "latency.p50<1s",
            "latency.median<1s",
            "latency.max<1s",
            "latency.mean<1s",
        ] {
            let t = eval(&r, e);
            assert_eq!((t.passed, t.not_evaluated.as_deref()), (true, None), "{e}");
        }
        r.metrics.latency.count = 1;
        assert!(eval(&r, "latency.p50<1s").not_evaluated.is_some());
        r.metrics.latency.count = 0;
        let t = eval(&r, "latency.max<1s");
        assert_eq!(
            (t.passed, t.not_evaluated.as_deref()),
            (false, Some("no samples"))
        );
        // Scalars have no samples to count.
        assert_eq!(eval(&r, "dropped==0").not_evaluated, None);
    }
}
