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

/// Parses a wall-clock instant (`--start-at`): RFC 3339 with `Z` or an
/// offset and any fraction of a second (`2026-12-01T10:00:00Z`,
/// `2026-12-01T11:00:00.250+01:00`), or Unix time in milliseconds (digits
/// only, `1796119200000`). RFC 3339 is read by the `time` crate.
///
/// # Errors
/// A one-line message naming the bad text and the accepted forms.
///
/// # Example
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use metronome::units::parse_instant;
/// let t = UNIX_EPOCH + Duration::from_secs(1_796_119_200);
/// assert_eq!(parse_instant("2026-12-01T10:00:00Z").unwrap(), t);
/// assert_eq!(parse_instant("2026-12-01T11:00:00+01:00").unwrap(), t);
/// assert_eq!(parse_instant("1796119200000").unwrap(), t);
/// assert!(parse_instant("2026-12-01T10:00").is_err());
/// ```
pub fn parse_instant(text: &str) -> Result<std::time::SystemTime, String> {
    use std::time::{Duration, UNIX_EPOCH};
    let t = text.trim();
    let bad = || {
        format!(
            "invalid instant '{text}': write RFC 3339 like 2026-12-01T10:00:00Z or \
             2026-12-01T11:00:00.5+01:00, or Unix milliseconds like 1796119200000"
        )
    };
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        let ms: u64 = t.parse().map_err(|_| bad())?;
        return UNIX_EPOCH
            .checked_add(Duration::from_millis(ms))
            .ok_or_else(bad);
    }
    let dt = time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339)
        .map_err(|_| bad())?;
    let ns = dt.unix_timestamp_nanos();
    let ns = u64::try_from(ns)
        .map_err(|_| format!("invalid instant '{text}': it is before 1970-01-01T00:00:00Z"))?;
    Ok(UNIX_EPOCH + Duration::from_nanos(ns))
}

/// Formats nanoseconds since the Unix epoch as RFC 3339 in UTC with nine
/// fractional digits, e.g. `2026-12-01T10:00:00.000250000Z`.
///
/// # Example
/// ```
/// use metronome::units::rfc3339_ns;
/// assert_eq!(rfc3339_ns(1_796_119_200_000_250_000), "2026-12-01T10:00:00.000250000Z");
/// assert_eq!(rfc3339_ns(0), "1970-01-01T00:00:00.000000000Z");
/// ```
pub fn rfc3339_ns(unix_ns: u64) -> String {
    let secs = (unix_ns / 1_000_000_000) as i64;
    let nanos = (unix_ns % 1_000_000_000) as u32;
    match time::OffsetDateTime::from_unix_timestamp(secs) {
        Ok(dt) => format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{nanos:09}Z",
            dt.year(),
            u8::from(dt.month()),
            dt.day(),
            dt.hour(),
            dt.minute(),
            dt.second()
        ),
        Err(_) => format!("{unix_ns}ns after the Unix epoch"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn ns(text: &str) -> u128 {
        parse_instant(text)
            .unwrap()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    }

    #[test]
    fn instants_parse_exactly() {
        // 2026-12-01T10:00:00Z = 1796119200 s (date -u -d ... +%s).
        assert_eq!(ns("2026-12-01T10:00:00Z"), 1_796_119_200_000_000_000);
        assert_eq!(ns("2026-12-01t10:00:00z"), 1_796_119_200_000_000_000);
        // RFC 3339 section 5.6 lets a space stand for the T.
        assert_eq!(ns("2026-12-01 10:00:00Z"), 1_796_119_200_000_000_000);
        assert_eq!(ns("2026-12-01T10:00:00.5Z"), 1_796_119_200_500_000_000);
        assert_eq!(
            ns("2026-12-01T10:00:00.000000001Z"),
            1_796_119_200_000_000_001
        );
        assert_eq!(ns("2026-12-01T11:30:00+01:30"), 1_796_119_200_000_000_000);
        assert_eq!(
            ns("2026-12-01T05:00:00.25-05:00"),
            1_796_119_200_250_000_000
        );
        assert_eq!(ns("1970-01-01T00:00:00Z"), 0);
        // A leap day.
        assert_eq!(ns("2028-02-29T00:00:00Z"), 1_835_395_200_000_000_000);
        assert_eq!(ns("1796119200000"), 1_796_119_200_000_000_000);
        assert_eq!(ns(" 1796119200123 "), 1_796_119_200_123_000_000);
        assert_eq!(ns("0"), 0);
    }

    #[test]
    fn bad_instants_say_what_to_write() {
        for bad in [
            "",
            "2026-12-01",
            "2026-12-01T10:00:00",
            "2026-13-01T10:00:00Z",
            "2026-02-30T10:00:00Z",
            "2026-12-01T10:00:00+25:00",
            "1796119200.5",
            "-1",
            "now",
        ] {
            let e = parse_instant(bad).unwrap_err();
            assert!(e.contains("RFC 3339") && !e.contains('\n'), "{bad}: {e}");
        }
        let e = parse_instant("1969-12-31T23:59:59Z").unwrap_err();
        assert!(e.contains("before 1970"), "{e}");
    }

    #[test]
    fn rfc3339_round_trips() {
        for n in [
            0u64,
            1,
            1_796_119_200_000_250_000,
            4_102_444_800_999_999_999,
        ] {
            let text = rfc3339_ns(n);
            assert_eq!(ns(&text), u128::from(n), "{text}");
        }
        assert_eq!(
            UNIX_EPOCH + Duration::from_nanos(1_796_119_200_000_000_000),
            parse_instant("2026-12-01T10:00:00Z").unwrap()
        );
    }
}
