//! The one rule for "enough samples": how many values a statistic of a
//! metric needs before a view shows it or a threshold is evaluated on it
//! (docs/report.md, "Enough samples"). The text, the HTML page (through
//! the report's `samples_needed`), the live dashboard, the progress line,
//! the SVG charts, the stretches' sentences and `--threshold` all ask
//! here.

use serde::{Deserialize, Serialize};

/// The samples a quantile `q` needs to be told apart from the maximum:
/// `1 / (1 - q)`, so 2 for p50, 10 for p90, 20 for p95, 100 for p99, 1000
/// for p99.9; 1 for the minimum, the maximum and the mean (`q` 0).
///
/// ```
/// use metronome::report::enough::samples_for;
/// assert_eq!([0.0, 0.5, 0.9, 0.95, 0.99, 0.999].map(samples_for), [1, 2, 10, 20, 100, 1000]);
/// ```
pub fn samples_for(q: f64) -> u64 {
    if q <= 0.0 {
        1
    } else {
        (1.0 / (1.0 - q)).round() as u64
    }
}

/// Whether `count` values are enough for the quantile `q`
/// ([`samples_for`]). An empty metric has enough for nothing.
///
/// ```
/// use metronome::report::enough::enough;
/// assert!(enough(100, 0.99) && !enough(99, 0.99) && enough(1, 0.0) && !enough(0, 0.0));
/// ```
pub fn enough(count: u64, q: f64) -> bool {
    count >= samples_for(q)
}

/// The quantile of a statistic as a threshold or the report names it
/// (`p50`, `median`, `p99.9`, `p999`, ...; 0 for `min`, `max`, `mean`,
/// `avg`), `None` for a name that is not one.
///
/// ```
/// use metronome::report::enough::quantile_of;
/// assert_eq!(quantile_of("p99.9"), Some(0.999));
/// assert_eq!(quantile_of("median"), Some(0.5));
/// assert_eq!(quantile_of("max"), Some(0.0));
/// assert_eq!(quantile_of("p42"), None);
/// ```
pub fn quantile_of(stat: &str) -> Option<f64> {
    Some(match stat {
        "min" | "max" | "mean" | "avg" => 0.0,
        "p50" | "median" => 0.5,
        "p90" => 0.9,
        "p95" => 0.95,
        "p99" => 0.99,
        "p999" | "p99.9" => 0.999,
        _ => return None,
    })
}

/// The statistics of a metric as the report writes them, with their
/// quantile.
pub const STATS: [(&str, f64); 8] = [
    ("min", 0.0),
    ("mean", 0.0),
    ("p50", 0.5),
    ("p90", 0.9),
    ("p95", 0.95),
    ("p99", 0.99),
    ("p999", 0.999),
    ("max", 0.0),
];

/// The rule as the report carries it (`samples_needed`): each statistic's
/// name and the samples it needs, `{"min": 1, "mean": 1, "p50": 2, ...,
/// "p999": 1000, "max": 1}`, so that every view that reads the JSON (the
/// page, the dashboard, a user's own tooling) applies the same rule to a
/// metric's `count` (an interval row's: `ok` for latency, `sent` for send
/// lag). It is always this rule: reading a report takes nothing from the
/// file's copy (a report of an older version has none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SamplesNeeded;

impl Serialize for SamplesNeeded {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(STATS.len()))?;
        for (name, q) in STATS {
            m.serialize_entry(name, &samples_for(q))?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for SamplesNeeded {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d)?;
        Ok(SamplesNeeded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON form of the rule, exactly.
    #[test]
    fn the_rule_as_the_report_carries_it() {
        assert_eq!(
            serde_json::to_string(&SamplesNeeded).unwrap(),
            r#"{"min":1,"mean":1,"p50":2,"p90":10,"p95":20,"p99":100,"p999":1000,"max":1}"#
        );
        let back: SamplesNeeded = serde_json::from_str(r#"{"p99":3}"#).unwrap();
        assert_eq!(back, SamplesNeeded);
    }
}
