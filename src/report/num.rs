//! Numbers for people: the one formatter every text, SVG and log line
//! prints through (the HTML page's JavaScript gives the same strings; the
//! golden vectors both check are `tests/data/numbers.json`). The JSON
//! report keeps full precision and never goes through here.
//!
//! - [`num`]: at most 4 significant digits, integer digits never dropped,
//!   from 1000 an integer with thousands separated by `,`; zero as `0`, a
//!   non-finite value as `-`.
//! - [`count`]: an integer, thousands separated.
//! - [`pct`]: a fraction as a percentage, `num(100 x)` then `%`.
//! - [`bytes()`]: a byte count in `B`, `KiB`, `MiB`, `GiB` or `TiB`.
//! - [`unit()`]: a number and its unit (`411.6 ms`).
//! - [`tick`]: an axis tick, [`num`] without trailing zeros.
//!
//! Rounding is to nearest on the exact binary value (Rust's formatter).
//!
//! # Example
//! ```
//! use metronome::report::num::{bytes, count, num, pct, unit};
//! assert_eq!(num(411.60914842493287), "411.6");
//! assert_eq!(num(130412.7), "130,413");
//! assert_eq!(count(5018), "5,018");
//! assert_eq!(pct(0.0123456), "1.235%");
//! assert_eq!(bytes(12345678), "11.77 MiB");
//! assert_eq!(unit(4.99988887, "ms"), "5.000 ms");
//! ```

/// Significant digits [`num`] keeps below 1000.
const SIGNIFICANT: i32 = 4;

/// `value` with at most 4 significant digits; integer digits are never
/// dropped: from 1000 (after rounding) it is an integer with thousands
/// separated by `,`. Zero is `0`, a non-finite value `-`.
///
/// # Example
/// ```
/// use metronome::report::num::num;
/// assert_eq!(num(0.0831234), "0.08312");
/// assert_eq!(num(9.99951), "10.00");
/// assert_eq!(num(999.96), "1,000");
/// assert_eq!(num(-12.3456), "-12.35");
/// assert_eq!(num(0.0), "0");
/// assert_eq!(num(f64::NAN), "-");
/// ```
#[must_use]
pub fn num(value: f64) -> String {
    if !value.is_finite() {
        return "-".to_owned();
    }
    if value == 0.0 {
        return "0".to_owned();
    }
    let magnitude = value.abs();
    // The exponent after rounding to 4 significant digits: `{:.3e}` rounds
    // the exact binary value, so 9.99951 gives "1.000e1".
    let sci = format!("{:.*e}", (SIGNIFICANT - 1) as usize, magnitude);
    let exponent: i32 = sci
        .rsplit('e')
        .next()
        .and_then(|e| e.parse().ok())
        .unwrap_or(0);
    let digits = if exponent >= SIGNIFICANT - 1 {
        separate(&format!("{magnitude:.0}"))
    } else {
        // Rounding at the same digit as `sci` gives the same value.
        format!("{:.*}", (SIGNIFICANT - 1 - exponent) as usize, magnitude)
    };
    if value < 0.0 {
        format!("-{digits}")
    } else {
        digits
    }
}

/// An integer with thousands separated by `,`.
///
/// # Example
/// ```
/// use metronome::report::num::count;
/// assert_eq!(count(999), "999");
/// assert_eq!(count(1234567), "1,234,567");
/// ```
#[must_use]
pub fn count(value: u64) -> String {
    separate(&value.to_string())
}

/// A fraction (1.0 is all) as a percentage: [`num`] of 100 x `fraction`,
/// then `%`; a non-finite fraction is `-`.
///
/// # Example
/// ```
/// use metronome::report::num::pct;
/// assert_eq!(pct(0.5), "50.00%");
/// assert_eq!(pct(0.0), "0%");
/// assert_eq!(pct(0.999999), "100.0%");
/// ```
#[must_use]
pub fn pct(fraction: f64) -> String {
    if !fraction.is_finite() {
        return "-".to_owned();
    }
    format!("{}%", num(fraction * 100.0))
}

/// A byte count: below 1000 an integer count of `B`; else in the smallest
/// binary unit (`KiB`, `MiB`, `GiB`, `TiB`) that brings the value under
/// 1000 (`TiB` at most), through [`num`].
///
/// # Example
/// ```
/// use metronome::report::num::bytes;
/// assert_eq!(bytes(999), "999 B");
/// assert_eq!(bytes(1536), "1.500 KiB");
/// assert_eq!(bytes(1048575), "1.000 MiB");
/// ```
#[must_use]
pub fn bytes(value: u64) -> String {
    if value < 1000 {
        return format!("{value} B");
    }
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    let mut scaled = value as f64;
    let mut index = 0;
    scaled /= 1024.0;
    while scaled >= 1000.0 && index + 1 < UNITS.len() {
        scaled /= 1024.0;
        index += 1;
    }
    unit(scaled, UNITS[index])
}

/// [`num`] of `value`, a space, then `unit` (`411.6 ms`, `5,018 req/s`);
/// a non-finite value is `-` alone.
///
/// # Example
/// ```
/// use metronome::report::num::unit;
/// assert_eq!(unit(411.60914842493287, "ms"), "411.6 ms");
/// assert_eq!(unit(130412.7, "req/s"), "130,413 req/s");
/// assert_eq!(unit(f64::INFINITY, "ms"), "-");
/// ```
#[must_use]
pub fn unit(value: f64, unit: &str) -> String {
    if !value.is_finite() {
        return "-".to_owned();
    }
    format!("{} {unit}", num(value))
}

/// An axis tick: [`num`] without the trailing zeros of its fraction
/// (`25`, `18.75`, `0.125`, `1,500`), for the round values ticks are.
///
/// # Example
/// ```
/// use metronome::report::num::tick;
/// assert_eq!(tick(25.0), "25");
/// assert_eq!(tick(18.75), "18.75");
/// assert_eq!(tick(0.125), "0.125");
/// assert_eq!(tick(1500.0), "1,500");
/// assert_eq!(tick(0.0), "0");
/// ```
#[must_use]
pub fn tick(value: f64) -> String {
    let text = num(value);
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

/// Decimal digits with `,` between each group of three from the right.
fn separate(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `n` and a noun, singular for 1: `counted(1, "worker")` is "1 worker",
/// `counted(2, "worker")` "2 workers", `counted(1500, "request")` "1,500 requests".
pub fn counted(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{} {noun}s", count(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every case of `tests/data/numbers.json`, the vectors the HTML page's
    /// formatter checks too.
    #[test]
    fn golden_vectors() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/numbers.json");
        let text = std::fs::read_to_string(path).expect("read numbers.json");
        let doc: serde_json::Value = serde_json::from_str(&text).expect("parse numbers.json");
        let cases = doc["cases"].as_array().expect("cases");
        assert!(cases.len() >= 40, "{} cases", cases.len());
        let mut kinds = std::collections::BTreeSet::new();
        for case in cases {
            let kind = case["kind"].as_str().expect("kind");
            let value = case["value"].as_f64().expect("value");
            let want = case["text"].as_str().expect("text");
            let got = match kind {
                "num" => num(value),
                "pct" => pct(value),
                "count" => count(integer(case)),
                "bytes" => bytes(integer(case)),
                other => panic!("unknown kind {other}"),
            };
            assert_eq!(got, want, "{kind}({value})");
            kinds.insert(kind);
        }
        assert_eq!(kinds.len(), 4, "{kinds:?}");
    }

    /// An integer case's value, written in the JSON as an integer or an
    /// integral float.
    fn integer(case: &serde_json::Value) -> u64 {
        let value = &case["value"];
        value.as_u64().unwrap_or_else(|| {
            let f = value.as_f64().expect("number");
            assert_eq!(f.fract(), 0.0, "{f} is not an integer");
            f as u64
        })
    }

    #[test]
    fn edges() {
        assert_eq!(num(-0.0), "0");
        assert_eq!(num(f64::INFINITY), "-");
        assert_eq!(num(-999.96), "-1,000");
        assert_eq!(num(1e-9), "0.000000001000");
        assert_eq!(num(999.5), "999.5");
        assert_eq!(num(0.99996), "1.000");
        assert_eq!(num(0.099996), "0.1000");
        assert_eq!(pct(f64::NAN), "-");
        assert_eq!(bytes(1000 * 1024), "0.9766 MiB");
        assert_eq!(bytes(u64::MAX), "16,777,216 TiB");
        assert_eq!(count(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(separate("123456"), "123,456");
        assert_eq!(separate("1"), "1");
    }

    /// "1 worker", never "1 workers".
    #[test]
    fn counted_is_singular_for_one() {
        assert_eq!(counted(0, "worker"), "0 workers");
        assert_eq!(counted(1, "worker"), "1 worker");
        assert_eq!(counted(2, "thread"), "2 threads");
    }
}
