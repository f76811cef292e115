//! The Poisson schedule: [`Poisson`], windows of a Poisson-distributed
//! count of uniform arrivals, and the fixed table it draws the counts from.

use crate::rng::{child_seed, stream, Pcg32, PURPOSE_ARRIVALS};

use super::offset::{offset_ns_of, round_ns, UNIT};

/// Expected arrivals per Poisson window: a window lasts `WINDOW_MEAN / rate`
/// seconds. 4 balances what a shard of `n` pays per offset it keeps: about
/// `n / 4` count draws for the windows it skips, and the positions of one
/// window (about 5 draws, sorted by an 8-value network).
pub(super) const WINDOW_MEAN: f64 = 4.0;

/// `P(N <= j) * 2^53` rounded to the nearest integer for `N ~ Poisson(4)`,
/// computed once to 80 significant digits (Python's `decimal`; the golden
/// tests recompute it in exact integer arithmetic); the last
/// entry is `2^53`, so a 53-bit uniform always finds its count and a window
/// holds at most `POISSON_CDF.len() - 1 = 30` arrivals (the tail beyond has
/// probability below 2^-54). Fixed numbers rather than a run-time `exp`: the
/// schedule cannot change with a math library.
const POISSON_CDF: [u64; 31] = [
    164_972_608_948_712,
    824_863_044_743_558,
    2_144_643_916_333_251,
    3_904_351_745_119_509,
    5_664_059_573_905_766,
    7_071_825_836_934_772,
    8_010_336_678_954_110,
    8_546_628_588_679_445,
    8_814_774_543_542_113,
    8_933_950_523_481_077,
    8_981_620_915_456_662,
    8_998_955_603_447_784,
    9_004_733_832_778_158,
    9_006_511_749_495_196,
    9_007_019_725_700_064,
    9_007_155_186_021_362,
    9_007_189_051_101_687,
    9_007_197_019_355_881,
    9_007_198_790_079_035,
    9_007_199_162_862_857,
    9_007_199_237_419_621,
    9_007_199_251_620_910,
    9_007_199_254_202_962,
    9_007_199_254_652_015,
    9_007_199_254_726_857,
    9_007_199_254_738_832,
    9_007_199_254_740_674,
    9_007_199_254_740_947,
    9_007_199_254_740_986,
    9_007_199_254_740_991,
    1 << 53,
];

/// `GUIDE[b]` is the number of [`POISSON_CDF`] thresholds at or below
/// `b * 2^45`, the smallest 53-bit uniform whose top 8 bits are `b`.
const GUIDE: [u8; 256] = guide();

const fn guide() -> [u8; 256] {
    let mut out = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let u = (b as u64) << 45;
        let mut len = 0;
        while POISSON_CDF[len] <= u {
            len += 1;
        }
        // len <= WINDOW_CAP = 30.
        out[b] = len as u8;
        b += 1;
    }
    out
}

/// Sorts 8 values with a 19-comparator network (Batcher's odd-even merge
/// sort, checked on every 0-1 input by the unit tests), branch-free.
#[inline]
fn sort_8(a: &mut [u64; 8]) {
    macro_rules! cx {
        ($($i:literal $j:literal),*) => {$(
            let (x, y) = (a[$i], a[$j]);
            a[$i] = x.min(y);
            a[$j] = x.max(y);
        )*};
    }
    cx!(0 2, 1 3, 4 6, 5 7, 0 4, 1 5, 2 6, 3 7, 0 1, 2 3);
    cx!(4 5, 6 7, 2 4, 3 5, 1 4, 3 6, 1 2, 3 4, 5 6);
}

/// The most arrivals a Poisson window can hold.
const WINDOW_CAP: usize = POISSON_CDF.len() - 1;

/// The 53-bit integer behind [`Pcg32::next_f64`]: `(x1 >> 5) * 2^26 + (x2 >> 6)`.
#[inline]
fn next_u53(rng: &mut Pcg32) -> u64 {
    let a = u64::from(rng.next_u32() >> 5);
    let b = u64::from(rng.next_u32() >> 6);
    (a << 26) | b
}

/// The Poisson schedule, cut into windows of `WINDOW_MEAN / rate` seconds.
///
/// Window `w` holds `N_w ~ Poisson(WINDOW_MEAN)` arrivals (the `w`-th draw of
/// the counts stream, by inversion of [`POISSON_CDF`]) at `(w + v) * window`
/// for `N_w` uniforms `v` from the window's own stream, taken in increasing
/// order. This is the textbook construction of a Poisson process (the counts
/// of disjoint intervals are independent Poisson variates, and given its
/// count an interval's arrivals are independent uniforms), and it lets a shard
/// number every arrival of the run without placing it: the counts alone give
/// the global index of each window's first arrival, and only the windows that
/// hold one of the shard's arrivals are drawn.
#[derive(Clone, Debug)]
pub(super) struct Poisson {
    /// One draw per window, in order: `stream(seed, PURPOSE_ARRIVALS)`.
    counts: Pcg32,
    /// Window `w`'s positions come from `stream(windows, w)`.
    windows: u64,
    /// The window length in nanoseconds.
    window_ns: f64,
    /// The first window that starts at or after the end (rounded as offsets are).
    end_window: u64,
    /// The current window.
    window: u64,
    /// Its arrival count.
    len: u32,
    /// The rank (0-based, in time order, counted from the current window's
    /// first arrival) of this shard's next arrival: at or past `len` when it
    /// lies in a later window.
    until: u64,
    count: u64,
    /// The current window's positions in increasing order (the first `len`),
    /// filled only when the window holds one of this shard's arrivals.
    sorted: [u64; WINDOW_CAP],
}

impl Poisson {
    /// The steady schedule at `rate`: windows of `4 / rate` s, in ns, up to
    /// the first window that starts at or after `end_ns` (rounded as
    /// offsets are).
    pub(super) fn steady(seed: u64, rate: f64, end_ns: u64, index: u32, count: u32) -> Poisson {
        let window_ns = WINDOW_MEAN * 1e9 / rate;
        // The first w >= 1 whose start rounds to end_ns or later (offsets of
        // window w are at least its start's); the start is monotone in w.
        let starts_late = |w: u64| round_ns(w as f64 * window_ns) >= end_ns;
        let (mut lo, mut hi) = (1u64, u64::MAX);
        if starts_late(hi) {
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if starts_late(mid) {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
        }
        Poisson::new(seed, window_ns, hi, index, count)
    }

    /// Windows of `window` (in the caller's unit: ns, or arrivals), the
    /// windows from `end_window` on left out.
    pub(super) fn new(
        seed: u64,
        window_ns: f64,
        end_window: u64,
        index: u32,
        count: u32,
    ) -> Poisson {
        let mut p = Poisson {
            counts: stream(seed, PURPOSE_ARRIVALS),
            windows: child_seed(seed, PURPOSE_ARRIVALS),
            window_ns,
            end_window,
            window: 0,
            len: 0,
            until: u64::from(index),
            count: u64::from(count),
            sorted: [0; WINDOW_CAP],
        };
        p.len = p.draw_len();
        if p.until < u64::from(p.len) {
            p.fill();
        }
        p
    }

    /// The next window's arrival count, by inversion: the number of
    /// thresholds at or below a 53-bit uniform `u`. [`GUIDE`] gives that
    /// number at the start of `u`'s 1/256 of the range; at most a step or two
    /// is left.
    #[inline]
    fn draw_len(&mut self) -> u32 {
        let u = next_u53(&mut self.counts);
        // u >> 45 < 256.
        let mut len = usize::from(GUIDE[(u >> 45) as usize]);
        // The last threshold, 2^53, is above every u: the walk stops by
        // WINDOW_CAP.
        while POISSON_CDF[len] <= u {
            len += 1;
        }
        len as u32
    }

    /// Draws the current window's positions into `sorted`, in increasing
    /// order.
    fn fill(&mut self) {
        let mut rng = stream(self.windows, self.window);
        let len = self.len as usize;
        if len <= 8 {
            // Pad to 8 and sort with a branch-free network: a window holds
            // 4 on average, and 95% hold at most 7.
            let mut a = [u64::MAX; 8];
            for slot in &mut a[..len] {
                *slot = next_u53(&mut rng);
            }
            sort_8(&mut a);
            self.sorted[..8].copy_from_slice(&a);
        } else {
            let slots = &mut self.sorted[..len];
            for slot in slots.iter_mut() {
                *slot = next_u53(&mut rng);
            }
            slots.sort_unstable();
        }
    }

    #[inline]
    pub(super) fn next(&mut self, end_ns: u64) -> Option<u64> {
        offset_ns_of(self.next_at()?, end_ns)
    }

    /// The next arrival's position, unrounded (in the window's unit).
    #[inline]
    pub(super) fn next_at(&mut self) -> Option<f64> {
        if self.until >= u64::from(self.len) {
            // Skip windows by their counts alone.
            loop {
                self.until -= u64::from(self.len);
                self.window += 1;
                if self.window >= self.end_window {
                    return None;
                }
                self.len = self.draw_len();
                if self.until < u64::from(self.len) {
                    break;
                }
            }
            self.fill();
        }
        // until < len <= 30.
        let v = self.sorted[self.until as usize];
        self.until += self.count;
        // v < 2^53: exact, and w + v / 2^53 <= w + 1 after rounding, so the
        // offsets never decrease from one window to the next.
        Some((self.window as f64 + v as f64 * UNIT) * self.window_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_8_sorts_every_0_1_input_and_random_ones() {
        // The 0-1 principle: a comparator network that sorts every 0-1
        // input sorts every input.
        for bits in 0u32..256 {
            let mut a: [u64; 8] = core::array::from_fn(|i| u64::from(bits >> i & 1));
            sort_8(&mut a);
            assert!(a.windows(2).all(|w| w[0] <= w[1]), "{bits:08b}");
            assert_eq!(a.iter().sum::<u64>(), u64::from(bits.count_ones()));
        }
        let mut rng = Pcg32::seeded(3);
        for _ in 0..1000 {
            let mut a: [u64; 8] = core::array::from_fn(|_| u64::from(rng.next_u32() % 5));
            let mut want = a;
            want.sort_unstable();
            sort_8(&mut a);
            assert_eq!(a, want);
        }
    }

    #[test]
    fn poisson_table_and_guide_agree() {
        assert!(POISSON_CDF.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(POISSON_CDF[WINDOW_CAP], 1 << 53);
        // P(N = 0) = e^-4 and the mean is 4, to the table's precision.
        let two53 = 9_007_199_254_740_992.0;
        assert!((POISSON_CDF[0] as f64 / two53 - libm::exp(-4.0)).abs() < 1e-15);
        let mean: f64 = (0..WINDOW_CAP)
            .map(|j| 1.0 - POISSON_CDF[j] as f64 / two53)
            .sum();
        assert!((mean - 4.0).abs() < 1e-12, "{mean}");
        for b in 0..256u64 {
            let u = b << 45;
            let want = POISSON_CDF.iter().filter(|&&c| c <= u).count();
            assert_eq!(usize::from(GUIDE[b as usize]), want, "bucket {b}");
        }
        // The inversion at every threshold and either side of it.
        let mut p = Poisson::steady(0, 1.0, u64::MAX, 0, 1);
        for (j, &c) in POISSON_CDF[..WINDOW_CAP].iter().enumerate() {
            for (u, want) in [(c - 1, j), (c, j + 1), (c + 1, j + 1)] {
                if u >= 1 << 53 {
                    continue;
                }
                let mut len = usize::from(GUIDE[(u >> 45) as usize]);
                while POISSON_CDF[len] <= u {
                    len += 1;
                }
                assert_eq!(len, want, "u {u}");
            }
        }
        // draw_len is that inversion of the counts stream's next_f64.
        let mut oracle = p.counts.clone();
        for _ in 0..10_000 {
            let u = (oracle.next_f64() * two53) as u64;
            let want = POISSON_CDF.iter().filter(|&&c| c <= u).count();
            assert_eq!(p.draw_len() as usize, want);
        }
    }
}
