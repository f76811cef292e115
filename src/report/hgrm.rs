//! HdrHistogram's percentile distribution (`.hgrm`) of a histogram.

use std::fmt::Write as _;

use metronome_core::histogram::Histogram;

/// Renders a histogram in HdrHistogram's percentile-distribution format
/// (`.hgrm`, as `outputPercentileDistribution(out, 5, 1e6)` prints it:
/// values in milliseconds, 5 ticks per half distance), readable by
/// HdrHistogram's plotter. Values are bucket upper bounds clamped to the
/// true max, as everywhere in metronome.
///
/// # Example
/// ```
/// use metronome_core::histogram::Histogram;
/// let mut h = Histogram::new();
/// for v in 1..=100u64 { h.record(v * 1_000_000); }
/// let text = metronome::report::hgrm::render_hgrm(&h);
/// assert!(text.lines().any(|l| l.trim() == "100.000 1.000000000000        100"));
/// assert!(text.contains("#[Max     =      100.000, Total count    =          100]"));
/// ```
pub fn render_hgrm(h: &Histogram) -> String {
    render_hgrm_with_mean(h, h.mean() / 1e6)
}

/// [`render_hgrm`] with the mean given, in ms: a report's exact `mean` for
/// a histogram rebuilt from it (whose sum is not kept), so `report --hgrm`
/// prints what the run's own `--hgrm` did, byte for byte.
pub fn render_hgrm_with_mean(h: &Histogram, mean_ms: f64) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    let total = h.count();
    let mean = mean_ms * 1e6;
    let mut sumsq = 0.0f64;
    if total > 0 {
        let mut cum = 0u64;
        let mut p = 0.0f64;
        'buckets: for b in h.buckets() {
            let v = b.upper.min(h.max()) as f64;
            sumsq += (v - mean) * (v - mean) * b.count as f64;
            cum += b.count;
            while 100.0 * cum as f64 / total as f64 >= p {
                let _ = writeln!(
                    s,
                    "{:>12.3} {:>14.12} {:>10} {:>14.2}",
                    v / 1e6,
                    p / 100.0,
                    cum,
                    1.0 / (1.0 - p / 100.0)
                );
                // HdrHistogram's PercentileIterator step.
                let halvings = (100.0 / (100.0 - p)).log2().floor() as i32;
                let ticks = 5.0 * 2f64.powi(halvings + 1);
                p += 100.0 / ticks;
                if cum == total {
                    break 'buckets;
                }
            }
        }
        let _ = writeln!(
            s,
            "{:>12.3} {:>14.12} {:>10}",
            h.max() as f64 / 1e6,
            1.0,
            total
        );
    }
    let sd = if total > 0 {
        (sumsq / total as f64).sqrt()
    } else {
        0.0
    };
    let _ = writeln!(
        s,
        "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]",
        mean_ms,
        sd / 1e6
    );
    let _ = writeln!(
        s,
        "#[Max     = {:>12.3}, Total count    = {:>12}]",
        h.max() as f64 / 1e6,
        total
    );
    let _ = writeln!(s, "#[Buckets = {:>12}, SubBuckets     = {:>12}]", 58, 256);
    s
}
