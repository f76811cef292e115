//! Human units on the command line: durations like `250us`, `10ms`, `2s`, `1m`.

use std::time::Duration;

/// Parses a duration written as a number and a unit: `ns`, `us` (or `µs`),
/// `ms`, `s`, `m`, `h`. A bare `0` is accepted. Fractions are allowed
/// (`1.5s`, `0.25ms`).
///
/// # Errors
/// A one-line message naming the bad text and the accepted forms.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use metronome::units::parse_duration;
/// assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
/// assert_eq!(parse_duration("10ms").unwrap(), Duration::from_millis(10));
/// assert_eq!(parse_duration("2s").unwrap(), Duration::from_secs(2));
/// assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
/// assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
/// assert!(parse_duration("10").is_err());
/// assert!(parse_duration("-1s").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| bad_duration(text))?;
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| bad_duration(text))?;
    let scale_ns = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => return Err(bad_duration(text)),
    };
    let ns = value * scale_ns;
    if !ns.is_finite() || ns < 0.0 || ns > u64::MAX as f64 {
        return Err(bad_duration(text));
    }
    Ok(Duration::from_nanos(ns.round() as u64))
}

fn bad_duration(text: &str) -> String {
    format!("invalid duration '{text}': write a number and a unit, like 250us, 10ms, 2s or 1m")
}

/// Formats a duration compactly for humans, choosing the unit: `750ns`,
/// `12.5us`, `3.20ms`, `1.500s`.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use metronome::units::format_duration;
/// assert_eq!(format_duration(Duration::from_micros(250)), "250.0us");
/// assert_eq!(format_duration(Duration::from_millis(1500)), "1.500s");
/// ```
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    if ns < 1e3 {
        format!("{ns:.0}ns")
    } else if ns < 1e6 {
        format!("{:.1}us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.3}s", ns / 1e9)
    }
}
