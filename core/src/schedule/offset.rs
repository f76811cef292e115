//! From exact or floating-point positions to integer offsets: the 53-bit
//! uniform scale and the rounding every arrival process shares.

/// 2^-53: a 53-bit integer times this is a uniform in `[0, 1)`.
pub(super) const UNIT: f64 = 1.0 / 9_007_199_254_740_992.0;

/// Rounds `ns >= 0` half away from zero (like `f64::round`), saturating at
/// `u64::MAX` (for +inf too).
#[inline]
pub(super) fn round_ns(ns: f64) -> u64 {
    // `as` truncates and saturates. Below 2^53 the fraction `ns - whole` is
    // exact; at or above it ns is an integer and the fraction is 0 (or
    // >= 0.5 only past u64::MAX, where the sum saturates).
    let whole = ns as u64;
    if ns - whole as f64 >= 0.5 {
        whole.saturating_add(1)
    } else {
        whole
    }
}

/// Seconds to nanoseconds, rounded half away from zero; `None` at or after
/// `end_ns`.
#[cfg(test)]
fn offset_ns(t_s: f64, end_ns: u64) -> Option<u64> {
    offset_ns_of(t_s * 1e9, end_ns)
}

/// Nanoseconds rounded half away from zero; `None` at or after `end_ns`, and
/// for NaN.
#[inline]
pub(super) fn offset_ns_of(ns: f64, end_ns: u64) -> Option<u64> {
    let offset = round_ns(ns);
    if ns.is_nan() || offset >= end_ns {
        None
    } else {
        Some(offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_rounding_matches_f64_round() {
        let end = u64::MAX;
        let two52 = (1u64 << 52) as f64;
        let cases = [
            0.0,
            0.4,
            0.5,
            1.5,
            2.5,
            0.5 - f64::EPSILON / 4.0, // the largest f64 below 0.5
            two52 - 0.5,
            two52 + 1.0,
            2.0 * two52 + 2.0,
            1e19,
        ];
        for ns in cases {
            let want = libm::round(ns) as u64;
            // offset_ns rounds t_s * 1e9 exactly as f64::round would.
            assert_eq!(
                offset_ns(ns / 1e9, end),
                Some(libm::round(ns / 1e9 * 1e9) as u64),
                "{ns}"
            );
            assert_eq!(round_ns(ns), want, "{ns}");
        }
        assert_eq!(round_ns(0.5 - f64::EPSILON / 4.0), 0);
        assert_eq!(round_ns(two52 - 0.5), 1 << 52);
        assert_eq!(round_ns(f64::INFINITY), u64::MAX);
        assert_eq!(round_ns(2e19), u64::MAX);
        assert_eq!(offset_ns(f64::INFINITY, end), None);
        assert_eq!(offset_ns(1e300, end), None);
        assert_eq!(offset_ns(1.0, 1_000_000_000), None);
        assert_eq!(offset_ns(0.999_999_999_4, 1_000_000_000), Some(999_999_999));
    }
}
