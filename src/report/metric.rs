//! [`Metric`]: one histogram summarised in the report (ms), with its
//! lossless `hdr` encoding and, where every sample was kept, its exact
//! percentiles ([`ExactPercentiles`]).

use metronome_core::histogram::Histogram;
use metronome_core::measure::Recorder;
use serde::{Deserialize, Serialize};

use super::hlog;

/// One histogram summarised, in milliseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metric {
    /// Values recorded.
    pub count: u64,
    /// Smallest value.
    pub min: f64,
    /// Exact mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest value.
    pub max: f64,
    /// Non-empty buckets: [upper bound ms, count], ascending.
    pub buckets: Vec<(f64, u64)>,
    /// The histogram itself, values in ns, as HdrHistogram's compressed V2
    /// encoding in base64 (as in `--hlog`); read first when present.
    /// (Absent in reports of older versions.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hdr: Option<String>,
    /// Percentiles of the samples themselves (nearest rank), where the run
    /// kept every sample of this metric (per-request metrics of an open
    /// loop of up to `EXACT_MAX` measured requests per process); absent
    /// otherwise, and after a merge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<ExactPercentiles>,
}

/// Percentiles of every sample of a metric, ms, by `method`: for
/// metronome's own metrics the `ceil(q x n)`-th smallest value (nearest
/// rank); in a `--metrics-compat` view, the peer's own method (numpy's
/// linear interpolation for vLLM and aiperf, guidellm's weighted
/// cumulative share), without the histogram's bucket width.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExactPercentiles {
    /// Samples (the metric's `count`; for guidellm's per-token metrics,
    /// the sum of the requests' weights).
    pub count: u64,
    /// How the percentiles were taken from the samples. (Absent in reports
    /// of older versions: nearest rank.)
    #[serde(default)]
    pub method: Method,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
}

/// How [`ExactPercentiles`] were taken from the samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// The `ceil(q x n)`-th smallest sample
    /// ([`metronome_core::measure::nearest_rank`]).
    #[default]
    NearestRank,
    /// numpy's default `percentile`, interpolating between the two nearest
    /// ranks ([`metronome_core::measure::linear`]): vLLM's bench, aiperf.
    Linear,
    /// The first value whose cumulative share of the weights reaches q
    /// ([`metronome_core::measure::weighted_rank`]): guidellm.
    WeightedRank,
}

impl Method {
    /// The name in the report and the notes.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::NearestRank => "nearest_rank",
            Method::Linear => "linear",
            Method::WeightedRank => "weighted_rank",
        }
    }
}

/// The quantiles every [`ExactPercentiles`] holds.
const QS: [f64; 5] = [0.5, 0.9, 0.95, 0.99, 0.999];

impl ExactPercentiles {
    /// The nearest-rank percentiles of `sorted` (ns, ascending).
    ///
    /// ```
    /// use metronome::report::ExactPercentiles;
    /// let e = ExactPercentiles::of_sorted(&[1_000_000, 2_000_000, 3_000_000]).unwrap();
    /// assert_eq!((e.count, e.p50, e.p99), (3, 2.0, 3.0));
    /// ```
    pub fn of_sorted(sorted: &[u64]) -> Option<ExactPercentiles> {
        Self::by(Method::NearestRank, sorted.len() as u64, |q| {
            metronome_core::measure::nearest_rank(sorted, q).map(|v| v as f64)
        })
    }

    /// numpy's linear percentiles of `sorted` (ns, ascending), as vLLM's
    /// bench and aiperf take them.
    ///
    /// ```
    /// use metronome::report::ExactPercentiles;
    /// let e = ExactPercentiles::linear_of_sorted(&[1_000_000, 2_000_000, 4_000_000]).unwrap();
    /// assert_eq!((e.p50, e.p90), (2.0, 3.6)); // numpy.percentile([1, 2, 4], 90) = 3.6
    /// ```
    pub fn linear_of_sorted(sorted: &[u64]) -> Option<ExactPercentiles> {
        Self::by(Method::Linear, sorted.len() as u64, |q| {
            metronome_core::measure::linear(sorted, q)
        })
    }

    /// guidellm's percentiles of `(value ns, weight)` pairs sorted by value
    /// ([`metronome_core::measure::weighted_rank`]).
    ///
    /// ```
    /// use metronome::report::ExactPercentiles;
    /// let e = ExactPercentiles::weighted_of_sorted(&[(1_000_000, 9), (5_000_000, 1)]).unwrap();
    /// assert_eq!((e.count, e.p50, e.p90, e.p95), (10, 1.0, 1.0, 5.0));
    /// ```
    pub fn weighted_of_sorted(pairs: &[(u64, u64)]) -> Option<ExactPercentiles> {
        let count = pairs.iter().map(|&(_, w)| w).sum();
        Self::by(Method::WeightedRank, count, |q| {
            metronome_core::measure::weighted_rank(pairs, q).map(|v| v as f64)
        })
    }

    /// The percentiles `at(q)` (ns) gives for each of [`QS`], in ms.
    fn by(method: Method, count: u64, at: impl Fn(f64) -> Option<f64>) -> Option<ExactPercentiles> {
        let [p50, p90, p95, p99, p999] = QS.map(|q| at(q).map(|ns| ns / 1e6));
        Some(ExactPercentiles {
            count,
            method,
            p50: p50?,
            p90: p90?,
            p95: p95?,
            p99: p99?,
            p999: p999?,
        })
    }
}

/// Nanoseconds to milliseconds.
pub fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

impl Metric {
    /// Summarises a histogram of nanoseconds.
    ///
    /// # Example
    /// ```
    /// use metronome_core::histogram::Histogram;
    /// use metronome::report::Metric;
    /// let mut h = Histogram::new();
    /// for v in [1_000_000u64, 2_000_000, 3_000_000] { h.record(v); }
    /// let m = Metric::from_histogram(&h);
    /// assert_eq!(m.count, 3);
    /// assert_eq!(m.mean, 2.0);
    /// assert_eq!(m.max, 3.0);
    /// ```
    pub fn from_histogram(h: &Histogram) -> Metric {
        Metric {
            count: h.count(),
            min: ms(h.min()),
            mean: h.mean() / 1e6,
            p50: ms(h.quantile(0.5)),
            p90: ms(h.quantile(0.9)),
            p95: ms(h.quantile(0.95)),
            p99: ms(h.quantile(0.99)),
            p999: ms(h.quantile(0.999)),
            max: ms(h.max()),
            buckets: h.buckets().map(|b| (ms(b.upper), b.count)).collect(),
            hdr: Some(hlog::base64_v2(h)),
            exact: None,
        }
    }

    /// A metric of no values (for report fields absent in older versions).
    pub fn empty() -> Metric {
        Metric::from_histogram(&Histogram::new())
    }

    /// Rebuilds the histogram: from `hdr` when present (else from the
    /// buckets), exact counts per bucket, with `min` and `max` exact (one
    /// value at each) and the other values at their bucket's upper bound
    /// clamped into [min, max]. The sum is not kept: use [`Metric::mean`].
    ///
    /// # Errors
    /// A `hdr` that does not decode, or disagrees with `count`.
    pub fn try_histogram(&self) -> Result<Histogram, String> {
        let max_ns = (self.max * 1e6).round() as u64;
        let min_ns = (self.min * 1e6).round() as u64;
        let counts: Vec<(u64, u64)> = match &self.hdr {
            Some(text) => {
                let d = hlog::decode_base64_v2(text)?;
                if d.count() != self.count {
                    return Err(format!(
                        "hdr holds {} values, count says {}",
                        d.count(),
                        self.count
                    ));
                }
                d.buckets().map(|b| (b.upper, b.count)).collect()
            }
            None => self
                .buckets
                .iter()
                .map(|&(upper_ms, count)| ((upper_ms * 1e6).round() as u64, count))
                .collect(),
        };
        let mut h = Histogram::new();
        let last = counts.len().saturating_sub(1);
        for (i, &(upper, mut count)) in counts.iter().enumerate() {
            if i == 0 && count > 0 {
                h.record(min_ns);
                count -= 1;
            }
            if i == last && count > 0 {
                h.record(max_ns);
                count -= 1;
            }
            h.record_n(upper.min(max_ns).max(min_ns), count);
        }
        Ok(h)
    }

    /// [`Metric::try_histogram`], or the buckets when `hdr` is unreadable.
    pub fn to_histogram(&self) -> Histogram {
        self.try_histogram().unwrap_or_else(|_| {
            Metric {
                hdr: None,
                ..self.clone()
            }
            .try_histogram()
            .unwrap_or_default()
        })
    }

    /// How many recorded values are at least `ms`, counted by bucket lower
    /// bounds, so never overcounted.
    ///
    /// # Example
    /// ```
    /// use metronome_core::histogram::Histogram;
    /// use metronome::report::Metric;
    /// let mut h = Histogram::new();
    /// for v in [1_000_000u64, 300_000_000, 900_000_000] { h.record(v); }
    /// assert_eq!(Metric::from_histogram(&h).count_at_least(250.0), 2);
    /// ```
    pub fn count_at_least(&self, ms: f64) -> u64 {
        let limit = (ms * 1e6) as u64;
        self.to_histogram()
            .buckets()
            .filter(|b| b.lower >= limit)
            .map(|b| b.count)
            .sum()
    }

    /// A quantile by label: p50, p90, p95, p99, p999, max, min, mean.
    pub fn get(&self, label: &str) -> Option<f64> {
        Some(match label {
            "p50" | "median" => self.p50,
            "p90" => self.p90,
            "p95" => self.p95,
            "p99" => self.p99,
            "p999" | "p99.9" => self.p999,
            "max" => self.max,
            "min" => self.min,
            "mean" | "avg" => self.mean,
            "count" => self.count as f64,
            _ => return None,
        })
    }
}

/// All histograms of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metrics {
    /// completion - intended send (E2E for streams).
    pub latency: Metric,
    /// completion - actual send.
    pub service_time: Metric,
    /// actual send - intended send.
    pub send_lag: Metric,
    /// first content chunk - intended send.
    pub ttft: Metric,
    /// per-token inter-token latency: each token-bearing chunk's gap spread over its tokens.
    pub itl: Metric,
    /// decode pace: (last token-bearing chunk - first) / (tokens - first chunk's tokens).
    pub tpot: Metric,
    /// gaps between consecutive token-bearing chunks, one per chunk.
    #[serde(default = "Metric::empty")]
    pub itl_chunk: Metric,
    /// first answer token (not reasoning) - intended send.
    #[serde(default = "Metric::empty")]
    pub ttfat: Metric,
    /// end of the stream - last token-bearing chunk.
    #[serde(default = "Metric::empty")]
    pub tail: Metric,
    /// Closed model with --expected-interval only: the HdrHistogram-corrected latency.
    pub latency_corrected: Option<Metric>,
}

impl Metrics {
    /// Every metric's name, in the report's order: its key under `metrics`
    /// in the JSON, and what [`Metrics::get`] reads (`latency_corrected`
    /// is null outside the closed model). The one list merge, thresholds
    /// and the tests check against.
    pub const NAMES: [&'static str; 10] = [
        "latency",
        "service_time",
        "send_lag",
        "ttft",
        "itl",
        "tpot",
        "itl_chunk",
        "ttfat",
        "tail",
        "latency_corrected",
    ];

    /// The metric called `name`, one of [`Metrics::NAMES`] (or `e2e`,
    /// latency's other name).
    pub fn get(&self, name: &str) -> Option<&Metric> {
        match name {
            "latency" | "e2e" => Some(&self.latency),
            "service_time" => Some(&self.service_time),
            "send_lag" => Some(&self.send_lag),
            "ttft" => Some(&self.ttft),
            "itl" => Some(&self.itl),
            "tpot" => Some(&self.tpot),
            "itl_chunk" => Some(&self.itl_chunk),
            "ttfat" => Some(&self.ttfat),
            "tail" => Some(&self.tail),
            "latency_corrected" => self.latency_corrected.as_ref(),
            _ => None,
        }
    }

    /// Summarises a recorder; `corrected` adds the closed-loop correction.
    pub fn from_recorder(rec: &Recorder, corrected: bool) -> Metrics {
        Metrics {
            latency: Metric::from_histogram(&rec.latency),
            service_time: Metric::from_histogram(&rec.service_time),
            send_lag: Metric::from_histogram(&rec.send_lag),
            ttft: Metric::from_histogram(&rec.ttft),
            itl: Metric::from_histogram(&rec.itl),
            tpot: Metric::from_histogram(&rec.tpot),
            itl_chunk: Metric::from_histogram(&rec.itl_chunk),
            ttfat: Metric::from_histogram(&rec.ttfat),
            tail: Metric::from_histogram(&rec.tail),
            latency_corrected: corrected.then(|| Metric::from_histogram(&rec.corrected)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Metrics::NAMES` is the report's own list: the JSON keys under
    /// `metrics`, in order, and each one readable by `get`.
    #[test]
    fn metric_names_are_the_report_keys() {
        let mut m = Metrics {
            latency: Metric::empty(),
            service_time: Metric::empty(),
            send_lag: Metric::empty(),
            ttft: Metric::empty(),
            itl: Metric::empty(),
            tpot: Metric::empty(),
            itl_chunk: Metric::empty(),
            ttfat: Metric::empty(),
            tail: Metric::empty(),
            latency_corrected: Some(Metric::empty()),
        };
        let json = serde_json::to_value(&m).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut names = Metrics::NAMES.to_vec();
        names.sort_unstable();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, names);
        assert!(Metrics::NAMES.iter().all(|n| m.get(n).is_some()));
        assert_eq!(m.get("e2e"), Some(&m.latency));
        m.latency_corrected = None;
        assert_eq!(m.get("latency_corrected"), None);
        assert_eq!(m.get("nope"), None);
    }
}
