//! The report's `workload` (`--openai` runs): what the requests asked and
//! how long the prompts and answers were, in tokens.

use metronome_core::histogram::Histogram;
use serde::{Deserialize, Serialize};

/// What an `--openai` run sent (docs/report.md, "workload").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// The path requests were posted to, e.g. `/v1/chat/completions`.
    pub endpoint: String,
    /// The `model` sent.
    pub model: String,
    /// Where the model came from: `--model`, `body` (--body/--extra-body) or
    /// `/v1/models` (discovered).
    pub model_source: String,
    /// Where the prompts came from: `built-in prompt`, `--prompt`,
    /// `dataset FILE` or `synthetic, N words each`.
    pub prompts: String,
    /// What counted the input tokens: `words` (the proxy:
    /// whitespace-separated words) or `tokenizer FILE` (`--tokenizer`).
    /// (Absent in reports of older versions: words.)
    #[serde(default = "words")]
    pub tokens_counted_by: String,
    /// Distinct request bodies built before the run (cycled by the schedule).
    pub distinct_requests: u64,
    /// Input tokens (by `tokens_counted_by`) of the requests scheduled in
    /// the measured phase.
    pub input_tokens: TokenDist,
    /// Output tokens per successful stream: `usage.completion_tokens` when
    /// the server sent it, else content chunks.
    pub output_tokens: TokenDist,
}

fn words() -> String {
    "words".into()
}

/// A distribution of token counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenDist {
    /// Requests counted.
    pub count: u64,
    /// Sum of their tokens (exact).
    pub total: u64,
    /// Smallest.
    pub min: u64,
    /// total / count.
    pub mean: f64,
    /// Median (exact below 128 tokens, at most 1/128 above the exact value beyond).
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest.
    pub max: u64,
    /// Non-empty buckets: [upper bound, count], ascending.
    pub buckets: Vec<(u64, u64)>,
}

impl TokenDist {
    /// Summarises a histogram of token counts.
    ///
    /// # Example
    /// ```
    /// use metronome_core::histogram::Histogram;
    /// use metronome::report::workload::TokenDist;
    /// let mut h = Histogram::new();
    /// for v in [10u64, 20, 30, 40] { h.record(v); }
    /// let d = TokenDist::from_histogram(&h);
    /// assert_eq!((d.count, d.total, d.min, d.p50, d.max), (4, 100, 10, 20, 40));
    /// assert_eq!(d.mean, 25.0);
    /// ```
    pub fn from_histogram(h: &Histogram) -> TokenDist {
        let count = h.count();
        TokenDist {
            count,
            total: u64::try_from(h.sum()).unwrap_or(u64::MAX),
            min: h.min(),
            mean: h.mean(),
            p50: h.quantile(0.5),
            p90: h.quantile(0.9),
            p99: h.quantile(0.99),
            max: h.max(),
            buckets: h.buckets().map(|b| (b.upper, b.count)).collect(),
        }
    }

    /// Merges distributions (shards of one run): bucket counts, totals,
    /// min and max combine exactly; quantiles come from the merged buckets.
    pub fn merge(ds: &[&TokenDist]) -> TokenDist {
        let mut h = Histogram::new();
        for d in ds {
            for &(upper, n) in &d.buckets {
                h.record_n(upper.min(d.max).max(d.min), n);
            }
        }
        let mut out = TokenDist::from_histogram(&h);
        out.total = ds.iter().map(|d| d.total).sum();
        if out.count > 0 {
            out.mean = out.total as f64 / out.count as f64;
            out.min = ds
                .iter()
                .filter(|d| d.count > 0)
                .map(|d| d.min)
                .min()
                .unwrap_or(0);
            out.max = ds.iter().map(|d| d.max).max().unwrap_or(0);
            for q in [&mut out.p50, &mut out.p90, &mut out.p99] {
                *q = (*q).min(out.max);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dist(values: &[u64]) -> TokenDist {
        let mut h = Histogram::new();
        for &v in values {
            h.record(v);
        }
        TokenDist::from_histogram(&h)
    }

    #[test]
    fn merge_is_exact_for_counts_totals_and_extremes() {
        let a = dist(&[3, 5, 1000]);
        let b = dist(&[4, 300]);
        let m = TokenDist::merge(&[&a, &b, &TokenDist::default()]);
        let whole = dist(&[3, 5, 1000, 4, 300]);
        assert_eq!((m.count, m.total, m.min, m.max), (5, 1312, 3, 1000));
        assert_eq!(m.mean, 1312.0 / 5.0);
        assert_eq!((m.p50, m.p90, m.p99), (whole.p50, whole.p90, whole.p99));
        assert_eq!(m.buckets, whole.buckets);
        assert_eq!(TokenDist::merge(&[]), TokenDist::default());
    }

    #[test]
    fn round_trips_through_json() {
        // 300 falls in the bucket [300, 301]: quantiles are clamped to the max.
        let d = dist(&[1, 2, 2, 300]);
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(
            json,
            r#"{"count":4,"total":305,"min":1,"mean":76.25,"p50":2,"p90":300,"p99":300,"max":300,"buckets":[[1,1],[2,2],[301,1]]}"#
        );
        assert_eq!(serde_json::from_str::<TokenDist>(&json).unwrap(), d);
    }
}
