//! HdrHistogram-compatible outputs built on core's V2 encoding: the
//! compressed V2 form (cookie 0x1c849314, zlib), its base64 text, and the
//! interval log (`.hlog`, format 1.3) that HdrHistogram's
//! HistogramLogProcessor, HistogramLogAnalyzer and the hdrhistogram crate
//! read; [`render_run_hlog`] is the log of a run (`--hlog`).

use std::fmt::Write as _;

use base64::Engine as _;
use metronome_core::engine::Series as IntervalSeries;
use metronome_core::histogram::{decode_v2_compressed, Histogram};
use metronome_core::measure::{NameTally, Recorder};
use metronome_core::plan::Plan;

/// HdrHistogram's compressed V2 encoding: the cookie, the length of the
/// zlib stream (both big-endian i32), then the zlib-compressed V2 bytes
/// (core's [`Histogram::encode_v2_compressed`], the implementation the C
/// API uses too). Empty for a histogram V2 cannot carry (a counter above
/// `i64::MAX`).
///
/// # Example
/// ```
/// use metronome_core::histogram::Histogram;
/// let mut h = Histogram::new();
/// h.record(1_000);
/// let bytes = metronome::report::hlog::compress_v2(&h);
/// assert_eq!(&bytes[..4], &0x1c84_9314u32.to_be_bytes());
/// ```
pub fn compress_v2(h: &Histogram) -> Vec<u8> {
    h.encode_v2_compressed().unwrap_or_default()
}

/// The compressed V2 encoding in standard base64, as HdrHistogram's log
/// and `HistogramLogProcessor` exchange histograms.
pub fn base64_v2(h: &Histogram) -> String {
    base64::engine::general_purpose::STANDARD.encode(compress_v2(h))
}

/// Reads the base64 text of HdrHistogram's compressed V2 encoding (as
/// [`base64_v2`] writes it, and as Java's, Python's `hdrh` and the
/// hdrhistogram crate's encoders do): base64, then core's
/// [`decode_v2_compressed`] (the cookie and length, zlib, the plain V2
/// encoding). Counts are exact; min and max are their buckets' bounds and
/// the mean is approximate (the encoding holds counts only).
///
/// # Errors
/// One line saying which layer is wrong.
///
/// # Example
/// ```
/// use metronome_core::histogram::Histogram;
/// use metronome::report::hlog::{base64_v2, decode_base64_v2};
/// let mut h = Histogram::new();
/// h.record_n(1_500_000, 3);
/// let d = decode_base64_v2(&base64_v2(&h)).unwrap();
/// assert_eq!(d.buckets().collect::<Vec<_>>(), h.buckets().collect::<Vec<_>>());
/// assert!(decode_base64_v2("not base64!").is_err());
/// ```
pub fn decode_base64_v2(text: &str) -> Result<Histogram, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| format!("not base64: {e}"))?;
    decode_v2_compressed(&bytes).map_err(|e| format!("bad compressed V2 encoding: {e}"))
}

/// One series of interval histograms for [`render_hlog`].
pub struct Series<'a> {
    /// `None` for the untagged (main) series.
    pub tag: Option<&'a str>,
    /// (start seconds since the log's start, length in seconds, histogram).
    pub intervals: Vec<(f64, f64, &'a Histogram)>,
}

/// Renders an HdrHistogram interval log (format 1.3) whose StartTime and
/// BaseTime are `start_unix_ns`, written exactly (seconds with nine
/// decimals, from the integer: no float rounds it); each interval's
/// timestamp is seconds after it. Values are nanoseconds; the
/// Interval_Max column is in milliseconds (the Java writer's default
/// ratio of 1e6).
///
/// # Example
/// ```
/// use metronome_core::histogram::Histogram;
/// use metronome::report::hlog::{render_hlog, Series};
/// let mut h = Histogram::new();
/// h.record(2_500_000);
/// let log = render_hlog(1_796_391_860_531_123_457, &[Series { tag: None, intervals: vec![(0.0, 1.0, &h)] }]);
/// assert!(log.starts_with("#[Histogram log format version 1.3]\n"));
/// assert!(log.contains("#[StartTime: 1796391860.531123457 (seconds since epoch)]\n"));
/// assert!(log.contains("#[BaseTime: 1796391860.531123457 (seconds since epoch)]\n"));
/// assert!(log.lines().last().unwrap().starts_with("0.000,1.000,2.500,HISTF"));
/// ```
pub fn render_hlog(start_unix_ns: u64, series: &[Series<'_>]) -> String {
    let rows: Vec<Row> = series
        .iter()
        .flat_map(|se| {
            se.intervals
                .iter()
                .map(move |&(start, len, h)| row(start, se.tag.map(str::to_string), len, h))
        })
        .collect();
    render_rows(start_unix_ns, rows)
}

/// One line of an interval log: start, tag, length, max (ms), histogram.
type Row = (f64, Option<String>, f64, f64, String);

fn row(start: f64, tag: Option<String>, len: f64, h: &Histogram) -> Row {
    (start, tag, len, h.max() as f64 / 1e6, base64_v2(h))
}

fn render_rows(start_unix_ns: u64, mut rows: Vec<Row>) -> String {
    let mut s = String::new();
    let start = format!(
        "{}.{:09}",
        start_unix_ns / 1_000_000_000,
        start_unix_ns % 1_000_000_000
    );
    let _ = writeln!(s, "#[Histogram log format version 1.3]");
    let _ = writeln!(s, "#[StartTime: {start} (seconds since epoch)]");
    let _ = writeln!(s, "#[BaseTime: {start} (seconds since epoch)]");
    let _ = writeln!(
        s,
        "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
    );
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (start, tag, len, max, h) in rows {
        if let Some(t) = tag {
            let _ = write!(s, "Tag={t},");
        }
        let _ = writeln!(s, "{start:.3},{len:.3},{max:.3},{h}");
    }
    s
}

/// The interval log of a run (`--hlog`). StartTime and BaseTime are the
/// schedule's zero (`start_unix_ns`, the report's `start_unix_ns`), so
/// timestamps are seconds on the schedule's clock: the measured phase
/// begins at the warmup. Latency (untagged) and send lag (`Tag=send_lag`)
/// come one histogram per report interval, the first `count` of the
/// series (the report's `intervals`, then its `drain`); service_time, ttft, itl, tpot
/// and latency_corrected (each tagged with its name, those with values
/// only) come as one histogram over the whole measured phase, since the
/// recorder keeps them per run, not per interval. A request mix adds,
/// for each name, `request.NAME.latency`, `request.NAME.service_time` and
/// `request.NAME.send_lag` over the whole measured phase ([`tag_name`]).
#[allow(clippy::too_many_arguments)]
pub fn render_run_hlog(
    start_unix_ns: u64,
    plan: &Plan<'_>,
    intervals: &IntervalSeries,
    count: usize,
    rec: &Recorder,
    measured_ns: u64,
    corrected: bool,
    names: &[(&str, &NameTally)],
) -> String {
    let warmup = plan.warmup_ns as f64 / 1e9;
    let width = plan.interval_ns as f64 / 1e9;
    // One interval decoded at a time: latency, then send lag.
    let mut rows: Vec<Row> = Vec::new();
    intervals.for_each(|i, iv| {
        if i < count {
            let start = warmup + i as f64 * width;
            rows.push(row(start, None, width, &iv.latency));
            rows.push(row(start, Some("send_lag".into()), width, &iv.send_lag));
        }
    });
    let mut all: Vec<Series<'_>> = Vec::new();
    let whole = measured_ns as f64 / 1e9;
    let mut run_wide: Vec<(&str, &Histogram)> = vec![
        ("service_time", &rec.service_time),
        ("ttft", &rec.ttft),
        ("itl", &rec.itl),
        ("tpot", &rec.tpot),
        ("itl_chunk", &rec.itl_chunk),
        ("ttfat", &rec.ttfat),
        ("tail", &rec.tail),
    ];
    if corrected {
        run_wide.push(("latency_corrected", &rec.corrected));
    }
    for (tag, h) in run_wide {
        if h.count() > 0 {
            all.push(Series {
                tag: Some(tag),
                intervals: vec![(warmup, whole, h)],
            });
        }
    }
    let tags: Vec<(String, &Histogram)> = names
        .iter()
        .flat_map(|&(name, t)| {
            let name = tag_name(name);
            [
                (format!("request.{name}.latency"), &t.latency),
                (format!("request.{name}.service_time"), &t.service_time),
                (format!("request.{name}.send_lag"), &t.send_lag),
            ]
        })
        .filter(|(_, h)| h.count() > 0)
        .collect();
    for (tag, h) in &tags {
        all.push(Series {
            tag: Some(tag),
            intervals: vec![(warmup, whole, h)],
        });
    }
    rows.extend(all.iter().flat_map(|se| {
        se.intervals
            .iter()
            .map(move |&(start, len, h)| row(start, se.tag.map(str::to_string), len, h))
    }));
    render_rows(start_unix_ns, rows)
}

/// A request name as an hlog tag: characters other than ASCII letters,
/// digits, `_`, `-`, `.`, `/`, `?`, `=` and `&` become `_` (a tag holds no
/// comma or space).
///
/// ```
/// assert_eq!(metronome::report::hlog::tag_name("GET /a?b=1"), "GET_/a?b=1");
/// ```
pub fn tag_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_-./?=&".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}
