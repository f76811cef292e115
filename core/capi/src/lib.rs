//! A C ABI over [`metronome_core::histogram::Histogram`]: the fixed
//! 7424-counter log-linear histogram (HdrHistogram's layout for 2 significant
//! digits and unit 1, every `u64` recordable, no range to configure), for
//! tools written in C, C++, Zig or anything else that links a C library.
//!
//! The header `include/metronome.h` is generated from this file by cbindgen
//! (`tests/header.rs` regenerates it and fails when the checked-in copy
//! differs). `tests/c/histogram.c` is a C program that uses every function;
//! `tests/c_program.rs` compiles it with the system C compiler, links the
//! static library and checks its output against this crate and the
//! `hdrhistogram` crate.
//!
//! # Contract
//!
//! - **Memory.** A histogram lives in caller memory
//!   ([`metronome_histogram_init`] on [`METRONOME_HISTOGRAM_SIZE`] bytes
//!   aligned to [`METRONOME_HISTOGRAM_ALIGN`]; nothing is allocated and there
//!   is nothing to free) or on the heap ([`metronome_histogram_new`] /
//!   [`metronome_histogram_free`]). Recording, merging, quantiles, bucket
//!   iteration and the uncompressed V2 encoding never allocate; the
//!   compressed V2 encode and decode do (zlib state).
//! - **Errors.** Functions that can fail return a status: [`METRONOME_OK`]
//!   (0) or a negative `METRONOME_ERR_*` code, which
//!   [`metronome_strerror`] turns into a sentence. A NULL histogram pointer
//!   is [`METRONOME_ERR_NULL`]; accessors that return a value instead (count,
//!   min, max, mean, quantiles) return 0 for NULL.
//! - **No panics, no unwinding.** Every function is total over its inputs
//!   (the preconditions below aside): no input makes it panic, and since
//!   Rust 1.81 a panic could not unwind into C anyway (`extern "C"` aborts).
//! - **Preconditions** (the C compiler cannot check them, neither can we): a
//!   non-NULL `metronome_histogram *` points to a histogram made by
//!   [`metronome_histogram_init`] or [`metronome_histogram_new`] and not yet
//!   freed or overwritten; a non-NULL buffer pointer with a length points to
//!   that many readable (or, for output, writable) bytes; a histogram is not
//!   used from two threads at once while one of them writes it (it has no
//!   lock; give each thread its own and merge them).
//!
//! # Example (Rust calling the C ABI; C looks the same)
//! ```
//! use metronome_capi::*;
//! let h = metronome_histogram_new();
//! for v in [1000, 1002, 1005, 2000] {
//!     // SAFETY: h came from metronome_histogram_new and is freed below.
//!     assert_eq!(unsafe { metronome_histogram_record(h, v) }, METRONOME_OK);
//! }
//! // SAFETY: as above.
//! unsafe {
//!     assert_eq!(metronome_histogram_quantile(h, 0.5), 1003);
//!     assert_eq!(metronome_histogram_mean(h), 1251.75);
//!     metronome_histogram_free(h);
//! }
//! ```

#![deny(missing_docs)]

use core::ffi::c_char;
use std::alloc::{alloc, dealloc, Layout};

use metronome_core::histogram::{
    bucket_bounds, bucket_index, decode_v2, decode_v2_compressed, DecodeError, EncodeError,
    Histogram, BUCKET_COUNT, V2_HEADER_LEN, V2_INFLATE_LIMIT, V2_MAX_LEN,
};

/// A histogram: opaque to C (its size and alignment are
/// [`METRONOME_HISTOGRAM_SIZE`] and [`METRONOME_HISTOGRAM_ALIGN`]).
#[allow(non_camel_case_types)]
pub struct metronome_histogram {
    inner: Histogram,
}

/// One non-empty bucket, from [`metronome_histogram_next_bucket`].
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct metronome_bucket {
    /// The smallest value the bucket holds.
    pub lower: u64,
    /// The largest value the bucket holds (inclusive).
    pub upper: u64,
    /// How many recorded values fall in `[lower, upper]`.
    pub count: u64,
}

/// Bytes a histogram takes: the size of the memory [`metronome_histogram_init`] needs.
pub const METRONOME_HISTOGRAM_SIZE: usize = 59_440;
/// Alignment, in bytes, of the memory [`metronome_histogram_init`] needs.
pub const METRONOME_HISTOGRAM_ALIGN: usize = 16;
/// Number of counters (buckets) of a histogram: 58 x 128.
pub const METRONOME_BUCKET_COUNT: usize = 7424;
/// Length of an uncompressed V2 header, in bytes.
pub const METRONOME_V2_HEADER_LEN: usize = 40;
/// The largest uncompressed V2 encoding of any histogram, in bytes: a buffer
/// this long always suffices for [`metronome_histogram_encode_v2`].
pub const METRONOME_V2_MAX_LEN: usize = 66_856;
/// The largest input [`metronome_histogram_decode_v2`] inflates a compressed
/// encoding to (64 MiB); longer payloads are refused as [`METRONOME_ERR_ZLIB`].
pub const METRONOME_V2_INFLATE_LIMIT: usize = 64 << 20;

// The header carries these as literals; a change in core must show here first.
const _: () = assert!(core::mem::size_of::<metronome_histogram>() == METRONOME_HISTOGRAM_SIZE);
const _: () = assert!(core::mem::align_of::<metronome_histogram>() == METRONOME_HISTOGRAM_ALIGN);
const _: () = assert!(BUCKET_COUNT == METRONOME_BUCKET_COUNT);
const _: () = assert!(V2_HEADER_LEN == METRONOME_V2_HEADER_LEN);
const _: () = assert!(V2_MAX_LEN == METRONOME_V2_MAX_LEN);
const _: () = assert!(V2_INFLATE_LIMIT == METRONOME_V2_INFLATE_LIMIT);

/// What a function that can fail did: [`METRONOME_OK`] (0) or a negative
/// error code; [`metronome_strerror`] describes each.
#[allow(non_camel_case_types)]
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum metronome_status {
    /// Success.
    METRONOME_OK = 0,
    /// A required pointer argument is NULL.
    METRONOME_ERR_NULL = -1,
    /// The output buffer is too short; the needed length was written to `*len_out`.
    METRONOME_ERR_BUFFER_TOO_SMALL = -2,
    /// A length exceeds `PTRDIFF_MAX`, or a bucket index is at or past
    /// [`METRONOME_BUCKET_COUNT`].
    METRONOME_ERR_INVALID = -3,
    /// [`metronome_histogram_merge`] was given the same histogram twice.
    METRONOME_ERR_ALIAS = -4,
    /// A counter exceeds `INT64_MAX`, which V2's signed counts cannot carry.
    METRONOME_ERR_COUNT_TOO_LARGE = -5,
    /// Memory for a compressed encoding could not be allocated.
    METRONOME_ERR_ALLOC = -6,
    /// V2 input ends early (before its header, its declared payload, or inside a count).
    METRONOME_ERR_TRUNCATED = -10,
    /// V2 input does not start with an HdrHistogram V2 cookie (plain `0x1c849313`
    /// or compressed `0x1c849314`).
    METRONOME_ERR_COOKIE = -11,
    /// V2 input is of an unsupported kind: a shifted histogram (normalizing
    /// offset) or a DoubleHistogram (conversion ratio other than 1).
    METRONOME_ERR_UNSUPPORTED = -12,
    /// V2 header parameters describe no valid histogram.
    METRONOME_ERR_PARAMETERS = -13,
    /// V2 input holds values above `UINT64_MAX`.
    METRONOME_ERR_OUT_OF_RANGE = -14,
    /// V2 input is coarser than 2 significant digits with unit 1 and cannot be
    /// re-bucketed exactly.
    METRONOME_ERR_COARSER = -15,
    /// V2 input counts add up to more than `UINT64_MAX`.
    METRONOME_ERR_COUNT_OVERFLOW = -16,
    /// A compressed V2 payload does not inflate (corrupt zlib stream, or more
    /// than [`METRONOME_V2_INFLATE_LIMIT`] bytes).
    METRONOME_ERR_ZLIB = -17,
}

pub use metronome_status::*;

/// The histogram behind `h`, or `None` for NULL.
///
/// # Safety
/// `h` is NULL or points to a live histogram (the crate's precondition) that
/// nothing else accesses for `'a`.
unsafe fn hist<'a>(h: *const metronome_histogram) -> Option<&'a Histogram> {
    // SAFETY: by this function's contract, non-NULL `h` points to a live,
    // initialized histogram not written concurrently.
    unsafe { h.as_ref() }.map(|m| &m.inner)
}

/// Mutable access to the histogram behind `h`, or `None` for NULL.
///
/// # Safety
/// As [`hist`], and nothing else reads or writes it for `'a`.
unsafe fn hist_mut<'a>(h: *mut metronome_histogram) -> Option<&'a mut Histogram> {
    // SAFETY: by this function's contract, non-NULL `h` points to a live,
    // initialized histogram with no other access for 'a.
    unsafe { h.as_mut() }.map(|m| &mut m.inner)
}

/// `len` bytes at `p` as a slice: `Ok(&[])` for `len == 0` (any `p`),
/// `Err(NULL)` for a NULL `p` with `len > 0`, `Err(INVALID)` past `isize::MAX`.
///
/// # Safety
/// Non-NULL `p` points to `len` readable bytes that stay unchanged for `'a`.
unsafe fn in_bytes<'a>(p: *const u8, len: usize) -> Result<&'a [u8], metronome_status> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(METRONOME_ERR_NULL);
    }
    if len > isize::MAX as usize {
        return Err(METRONOME_ERR_INVALID);
    }
    // SAFETY: p is non-NULL, len fits isize, and the caller guarantees len
    // readable bytes at p, unchanged while the slice lives.
    Ok(unsafe { core::slice::from_raw_parts(p, len) })
}

/// `len` writable bytes at `p`, with the rules of [`in_bytes`].
///
/// # Safety
/// Non-NULL `p` points to `len` writable bytes that nothing else accesses for `'a`.
unsafe fn out_bytes<'a>(p: *mut u8, len: usize) -> Result<&'a mut [u8], metronome_status> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(METRONOME_ERR_NULL);
    }
    if len > isize::MAX as usize {
        return Err(METRONOME_ERR_INVALID);
    }
    // SAFETY: p is non-NULL, len fits isize, and the caller guarantees len
    // writable bytes at p with no other access while the slice lives.
    Ok(unsafe { core::slice::from_raw_parts_mut(p, len) })
}

/// The size in bytes of a histogram: [`METRONOME_HISTOGRAM_SIZE`], as a
/// function for bindings that cannot read the header's macros.
#[no_mangle]
pub extern "C" fn metronome_histogram_size() -> usize {
    METRONOME_HISTOGRAM_SIZE
}

/// The alignment in bytes of a histogram: [`METRONOME_HISTOGRAM_ALIGN`].
#[no_mangle]
pub extern "C" fn metronome_histogram_align() -> usize {
    METRONOME_HISTOGRAM_ALIGN
}

/// Makes an empty histogram in the caller's memory `mem` of `len` bytes and
/// returns it (the same address as `mem`), or NULL when `mem` is NULL, not
/// aligned to [`METRONOME_HISTOGRAM_ALIGN`], or `len` is below
/// [`METRONOME_HISTOGRAM_SIZE`]. Nothing is allocated and there is nothing to
/// free: the histogram lives as long as the memory. Calling it again on the
/// same memory empties the histogram.
///
/// # Safety
/// Non-NULL `mem` points to `len` writable bytes that nothing else uses while
/// the histogram lives.
#[no_mangle]
pub unsafe extern "C" fn metronome_histogram_init(
    mem: *mut core::ffi::c_void,
    len: usize,
) -> *mut metronome_histogram {
    let p = mem.cast::<metronome_histogram>();
    if p.is_null() || !p.is_aligned() || len < METRONOME_HISTOGRAM_SIZE {
        return core::ptr::null_mut();
    }
    // SAFETY: p is non-NULL and aligned, and the caller guarantees at least
    // len >= size_of::<metronome_histogram>() writable bytes there; `write`
    // does not read or drop the old contents.
    unsafe {
        p.write(metronome_histogram {
            inner: Histogram::new(),
        })
    };
    p
}

/// Allocates an empty histogram on the heap (about 58 KiB); NULL when the
/// allocation fails. Free it with [`metronome_histogram_free`].
#[no_mangle]
pub extern "C" fn metronome_histogram_new() -> *mut metronome_histogram {
    let layout = Layout::new::<metronome_histogram>();
    // SAFETY: the layout has a non-zero size.
    let p = unsafe { alloc(layout) }.cast::<metronome_histogram>();
    if p.is_null() {
        return p;
    }
    // SAFETY: p is a fresh allocation with the layout of metronome_histogram.
    unsafe {
        p.write(metronome_histogram {
            inner: Histogram::new(),
        })
    };
    p
}

/// Frees a histogram made by [`metronome_histogram_new`]; NULL does nothing.
///
/// # Safety
/// `h` is NULL or came from [`metronome_histogram_new`] and was not freed
/// yet; it is not used afterwards. Never pass a histogram made by
/// [`metronome_histogram_init`] (its memory is the caller's).
#[no_mangle]
pub unsafe extern "C" fn metronome_histogram_free(h: *mut metronome_histogram) {
    if h.is_null() {
        return;
    }
    // SAFETY: by the contract h came from metronome_histogram_new, i.e. from
    // `alloc` with this layout; Histogram has no destructor to run.
    unsafe { dealloc(h.cast::<u8>(), Layout::new::<metronome_histogram>()) };
}

/// Records one value; every `uint64_t`, 0 and `UINT64_MAX` included, is
/// recordable. Counters saturate instead of wrapping.
///
/// Returns [`METRONOME_OK`], or [`METRONOME_ERR_NULL`] for a NULL `h`.
///
/// # Safety
/// `h` is NULL or a live histogram (see the crate's preconditions).
#[no_mangle]
pub unsafe extern "C" fn metronome_histogram_record(
    h: *mut metronome_histogram,
    value: u64,
) -> metronome_status {
    // SAFETY: forwarded from this function's contract.
    match unsafe { hist_mut(h) } {
        Some(h) => {
            h.record(value);
            METRONOME_OK
        }
        None => METRONOME_ERR_NULL,
    }
}

/// Records `count` occurrences of `value`; `count == 0` changes nothing.
///
/// Returns [`METRONOME_OK`], or [`METRONOME_ERR_NULL`] for a NULL `h`.
///
/// # Safety
/// `h` is NULL or a live histogram.
#[no_mangle]
pub unsafe extern "C" fn metronome_histogram_record_n(
    h: *mut metronome_histogram,
    value: u64,
    count: u64,
) -> metronome_status {
    // SAFETY: forwarded from this function's contract.
    match unsafe { hist_mut(h) } {
        Some(h) => {
            h.record_n(value, count);
            METRONOME_OK
        }
        None => METRONOME_ERR_NULL,
    }
}

/// Forgets everything recorded.
///
/// Returns [`METRONOME_OK`], or [`METRONOME_ERR_NULL`] for a NULL `h`.
///
/// # Safety
/// `h` is NULL or a live histogram.
#[no_mangle]
pub unsafe extern "C" fn metronome_histogram_reset(
    h: *mut metronome_histogram,
) -> metronome_status {
    // SAFETY: forwarded from this function's contract.
    match unsafe { hist_mut(h) } {
        Some(h) => {
            h.reset();
            METRONOME_OK
        }
        None => METRONOME_ERR_NULL,
    }
}

/// Adds every count of `src` into `dst` (count, min, max and the exact sum
/// too); `src` is unchanged.
///
/// Returns [`METRONOME_OK`], [`METRONOME_ERR_NULL`] when either is NULL, or
/// [`METRONOME_ERR_ALIAS`] when both are the same histogram (copy it first).
///
/// # Safety
/// Each is NULL or a live histogram.
#[no_mangle]
pub unsafe extern "C" fn metronome_histogram_merge(
    dst: *mut metronome_histogram,
    src: *const metronome_histogram,
) -> metronome_status {
    if dst.is_null() || src.is_null() {
        return METRONOME_ERR_NULL;
    }
    if core::ptr::eq(dst, src) {
        return METRONOME_ERR_ALIAS;
    }
    // SAFETY: both are non-NULL live histograms (contract) at different
    // addresses, so the shared and the mutable borrow do not overlap.
    match unsafe { (hist_mut(dst), hist(src)) } {
        (Some(d), Some(s)) => {
            d.merge(s);
            METRONOME_OK
        }
        _ => METRONOME_ERR_NULL,
    }
}

/// Number of recorded values (saturating at `UINT64_MAX`); 0 for NULL.
///
/// # Safety
/// `h` is NULL or a live histogram.
#[no_mangle]
pub unsafe extern "C" fn metronome_histogram_count(h: *const metronome_histogram) -> u64 {
    // SAFETY: forwarded from this function's contract.
    unsafe { hist(h) }.map_or(0, Histogram::count)
}

/// The smallest recorded value, exact; 0 when empty or NULL.
///
/// # Safety
/// `h` is NULL or a live histogram.
#[no_mangle]
pub unsafe extern "C" fn metronome_histogram_min(h: *const metronome_histogram) -> u64 {
    // SAFETY: forwarded from this function's contract.
    unsafe { hist(h) }.map_or(0, Histogram::min)
}

/// The largest recorded value, exact; 0 when empty or NULL.
///
/// # Safety
/// `h` is NULL or a live histogram.
#[no_mangle]
pub unsafe extern "C" fn metronome_histogram_max(h: *const metronome_histogram) -> u64 {
    // SAFETY: forwarded from this function's contract.
    unsafe { hist(h) }.map_or(0, Histogram::max)
}

/// The mean: the exact sum divided by the count, rounded once to `double`;
/// 0.0 when empty or NULL.
///
/// # Safety
/// `h` is NULL or a live histogram.
#[no_mangle]
pub unsafe extern "C" fn metronome_histogram_mean(h: *const metronome_histogram) -> f64 {
    // SAFETY: forwarded from this function's contract.
    unsafe { hist(h) }.map_or(0.0, Histogram::mean)
}

/// The exact sum of the recorded values as two 64-bit halves
/// (`sum = hi * 2^64 + lo`; it saturates at 2^128 - 1).
///
/// Returns [`METRONOME_OK`], or [`METRONOME_ERR_NULL`] when any pointer is NULL.
///
/// # Safety
/// `h` is NULL or a live histogram; `lo` and `hi` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn metronome_histogram_sum(
    h: *const metronome_histogram,
    lo: *mut u64,
    hi: *mut u64,
) -> metronome_status {
    // SAFETY: forwarded from this function's contract.
    let (Some(h), false, false) = (unsafe { hist(h) }, lo.is_null(), hi.is_null()) else {
        return METRONOME_ERR_NULL;
    };
    let sum = h.sum();
    // SAFETY: both are non-NULL and writable (contract); u64 writes.
    unsafe {
        lo.write_unaligned(sum as u64);
        hi.write_unaligned((sum >> 64) as u64);
    }
    METRONOME_OK
}

/// The value at quantile `q` (0.0 to 1.0): with `n` values, the nearest rank
/// `r = ceil(q * n)` clamped to `[1, n]`, and the result is the upper bound
/// of the bucket holding the `r`-th smallest value, clamped to the exact
/// max: never below the exact nearest-rank value, at most 1/128 above it.
/// `q` outside 0..1 (or NaN) behaves as the nearest end; 0 when empty or NULL.
///
/// # Safety
/// `h` is NULL or a live histogram.
#[no_mangle]
pub unsafe extern "C" fn metronome_histogram_quantile(
    h: *const metronome_histogram,
    q: f64,
) -> u64 {
    // SAFETY: forwarded from this function's contract.
    unsafe { hist(h) }.map_or(0, |h| h.quantile(q))
}

/// HdrHistogram's `getValueAtPercentile`: [`metronome_histogram_quantile`]
/// at `percentile / 100` (so 99.9 is the 0.999 quantile).
///
/// # Safety
/// `h` is NULL or a live histogram.
#[no_mangle]
pub unsafe extern "C" fn metronome_histogram_value_at_percentile(
    h: *const metronome_histogram,
    percentile: f64,
) -> u64 {
    // SAFETY: forwarded from this function's contract.
    unsafe { metronome_histogram_quantile(h, percentile / 100.0) }
}

/// The counter that holds `value` (HdrHistogram's counts-array index); always
/// below [`METRONOME_BUCKET_COUNT`].
#[no_mangle]
pub extern "C" fn metronome_bucket_index(value: u64) -> usize {
    bucket_index(value)
}

/// The inclusive value range of counter `index`, written to `*lower` and
/// `*upper`.
///
/// Returns [`METRONOME_OK`], [`METRONOME_ERR_NULL`] when a pointer is NULL,
/// or [`METRONOME_ERR_INVALID`] when `index >= METRONOME_BUCKET_COUNT`.
///
/// # Safety
/// `lower` and `upper` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn metronome_bucket_bounds(
    index: usize,
    lower: *mut u64,
    upper: *mut u64,
) -> metronome_status {
    if lower.is_null() || upper.is_null() {
        return METRONOME_ERR_NULL;
    }
    if index >= BUCKET_COUNT {
        return METRONOME_ERR_INVALID;
    }
    let (lo, hi) = bucket_bounds(index);
    // SAFETY: both are non-NULL and writable (contract).
    unsafe {
        lower.write_unaligned(lo);
        upper.write_unaligned(hi);
    }
    METRONOME_OK
}

/// Iterates the non-empty buckets from the lowest values up. Start with
/// `*cursor = 0`; each call writes the next non-empty bucket at or after
/// counter `*cursor` to `*out`, advances `*cursor` past it and returns 1;
/// after the last one it returns 0 (and leaves `*out` alone).
///
/// ```c
/// size_t cursor = 0;
/// metronome_bucket b;
/// while (metronome_histogram_next_bucket(h, &cursor, &b) == 1)
///     printf("[%llu, %llu] %llu\n", b.lower, b.upper, b.count);
/// ```
///
/// Returns 1, 0, or [`METRONOME_ERR_NULL`] (as an `int32_t`) when a pointer is NULL.
///
/// # Safety
/// `h` is NULL or a live histogram; `cursor` and `out` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn metronome_histogram_next_bucket(
    h: *const metronome_histogram,
    cursor: *mut usize,
    out: *mut metronome_bucket,
) -> i32 {
    // SAFETY: forwarded from this function's contract.
    let Some(h) = (unsafe { hist(h) }) else {
        return METRONOME_ERR_NULL as i32;
    };
    if cursor.is_null() || out.is_null() {
        return METRONOME_ERR_NULL as i32;
    }
    // SAFETY: cursor is non-NULL and readable (contract).
    let start = unsafe { cursor.read_unaligned() };
    if h.is_empty() {
        return 0;
    }
    let first = start.max(bucket_index(h.min()));
    let end = bucket_index(h.max()) + 1;
    for i in first..end {
        let count = h.count_at_index(i);
        if count != 0 {
            let (lower, upper) = bucket_bounds(i);
            // SAFETY: both are non-NULL and writable (contract).
            unsafe {
                out.write_unaligned(metronome_bucket {
                    lower,
                    upper,
                    count,
                });
                cursor.write_unaligned(i + 1);
            }
            return 1;
        }
    }
    // SAFETY: as above.
    unsafe { cursor.write_unaligned(end.max(start)) };
    0
}

/// Exact length in bytes of [`metronome_histogram_encode_v2`]'s output for
/// `h`; 0 for NULL.
///
/// # Safety
/// `h` is NULL or a live histogram.
#[no_mangle]
pub unsafe extern "C" fn metronome_histogram_encoded_len(h: *const metronome_histogram) -> usize {
    // SAFETY: forwarded from this function's contract.
    unsafe { hist(h) }.map_or(0, Histogram::encoded_len)
}

/// Maps core's encode error to a status and the needed length.
fn encode_status(e: EncodeError) -> (metronome_status, usize) {
    match e {
        EncodeError::BufferTooSmall { needed } => (METRONOME_ERR_BUFFER_TOO_SMALL, needed),
        EncodeError::CountTooLarge => (METRONOME_ERR_COUNT_TOO_LARGE, 0),
        _ => (METRONOME_ERR_INVALID, 0),
    }
}

/// Writes HdrHistogram's uncompressed V2 encoding (cookie `0x1c849313`, 2
/// significant digits, unit 1; what Java's `encodeIntoByteBuffer` and the
/// Rust `hdrhistogram` crate write for the same counts) into `buf` of `cap`
/// bytes and its length into `*len_out`. A `cap` of
/// [`METRONOME_V2_MAX_LEN`] always suffices; `buf` may be NULL when `cap` is
/// 0 (a size query). Never allocates.
///
/// Returns [`METRONOME_OK`]; [`METRONOME_ERR_BUFFER_TOO_SMALL`] with the
/// needed length in `*len_out`; [`METRONOME_ERR_NULL`] for a NULL `h` or
/// `len_out` (or NULL `buf` with `cap > 0`); [`METRONOME_ERR_COUNT_TOO_LARGE`]
/// when a counter exceeds `INT64_MAX`; [`METRONOME_ERR_INVALID`] when `cap`
/// exceeds `PTRDIFF_MAX`.
///
/// # Safety
/// `h` is NULL or a live histogram; non-NULL `buf` has `cap` writable bytes;
/// `len_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn metronome_histogram_encode_v2(
    h: *const metronome_histogram,
    buf: *mut u8,
    cap: usize,
    len_out: *mut usize,
) -> metronome_status {
    // SAFETY: forwarded from this function's contract.
    let Some(h) = (unsafe { hist(h) }) else {
        return METRONOME_ERR_NULL;
    };
    if len_out.is_null() {
        return METRONOME_ERR_NULL;
    }
    // SAFETY: forwarded from this function's contract.
    let out = match unsafe { out_bytes(buf, cap) } {
        Ok(out) => out,
        Err(code) => return code,
    };
    let (code, len) = match h.encode_v2(out) {
        Ok(n) => (METRONOME_OK, n),
        Err(e) => encode_status(e),
    };
    // SAFETY: len_out is non-NULL and writable (contract).
    unsafe { len_out.write_unaligned(len) };
    code
}

/// Writes HdrHistogram's **compressed** V2 encoding (cookie `0x1c849314`,
/// zlib; the form in `.hlog` files and base64 exchanges) into `buf` of `cap`
/// bytes and its length into `*len_out`. The length is only known after
/// compressing: call with `cap` 0 (and `buf` NULL) to get it, or pass
/// [`METRONOME_V2_MAX_LEN`] bytes, which always suffice. Allocates (zlib
/// state and a scratch copy).
///
/// Returns as [`metronome_histogram_encode_v2`].
///
/// # Safety
/// As [`metronome_histogram_encode_v2`].
#[no_mangle]
pub unsafe extern "C" fn metronome_histogram_encode_v2_compressed(
    h: *const metronome_histogram,
    buf: *mut u8,
    cap: usize,
    len_out: *mut usize,
) -> metronome_status {
    // SAFETY: forwarded from this function's contract.
    let Some(h) = (unsafe { hist(h) }) else {
        return METRONOME_ERR_NULL;
    };
    if len_out.is_null() {
        return METRONOME_ERR_NULL;
    }
    // SAFETY: forwarded from this function's contract.
    let out = match unsafe { out_bytes(buf, cap) } {
        Ok(out) => out,
        Err(code) => return code,
    };
    let bytes = match h.encode_v2_compressed() {
        Ok(b) => b,
        Err(e) => return encode_status(e).0,
    };
    // SAFETY: len_out is non-NULL and writable (contract).
    unsafe { len_out.write_unaligned(bytes.len()) };
    match out.get_mut(..bytes.len()) {
        Some(dst) => {
            dst.copy_from_slice(&bytes);
            METRONOME_OK
        }
        None => METRONOME_ERR_BUFFER_TOO_SMALL,
    }
}

/// Maps core's decode error to a status.
fn decode_status(e: DecodeError) -> metronome_status {
    match e {
        DecodeError::Truncated => METRONOME_ERR_TRUNCATED,
        DecodeError::Compressed | DecodeError::Cookie(_) => METRONOME_ERR_COOKIE,
        DecodeError::NormalizingOffset | DecodeError::ConversionRatio => METRONOME_ERR_UNSUPPORTED,
        DecodeError::Parameters => METRONOME_ERR_PARAMETERS,
        DecodeError::OutOfRange => METRONOME_ERR_OUT_OF_RANGE,
        DecodeError::Coarser => METRONOME_ERR_COARSER,
        DecodeError::CountOverflow => METRONOME_ERR_COUNT_OVERFLOW,
        DecodeError::Zlib => METRONOME_ERR_ZLIB,
        _ => METRONOME_ERR_INVALID,
    }
}

/// Decodes plain or compressed V2 bytes into a histogram (core's one
/// implementation of each: `decode_v2`, and `decode_v2_compressed` for the
/// compressed cookie).
fn decode(bytes: &[u8]) -> Result<Histogram, metronome_status> {
    match decode_v2(bytes) {
        Err(DecodeError::Compressed) => decode_v2_compressed(bytes),
        plain => plain,
    }
    .map_err(decode_status)
}

/// Replaces the contents of `h` with the histogram encoded in `bytes` (`len`
/// bytes): HdrHistogram V2, plain (`0x1c849313`) or compressed
/// (`0x1c849314`), as written by this library, metronome, Java's
/// HdrHistogram or the Rust `hdrhistogram` crate. Sources recorded with 2 or
/// more significant digits and unit 1 are re-bucketed exactly; coarser ones
/// are refused. The encoding has counts only, so after decoding min and max
/// are bucket bounds and the mean counts each value at its bucket's
/// midpoint; counts and quantiles are exact. On error `h` is unchanged (the
/// new histogram is built aside first: about 120 KiB of stack in a release
/// build). The compressed form allocates.
///
/// Returns [`METRONOME_OK`], [`METRONOME_ERR_NULL`], or a decode error
/// ([`METRONOME_ERR_TRUNCATED`], [`METRONOME_ERR_COOKIE`],
/// [`METRONOME_ERR_UNSUPPORTED`], [`METRONOME_ERR_PARAMETERS`],
/// [`METRONOME_ERR_OUT_OF_RANGE`], [`METRONOME_ERR_COARSER`],
/// [`METRONOME_ERR_COUNT_OVERFLOW`], [`METRONOME_ERR_ZLIB`]).
///
/// # Safety
/// `h` is NULL or a live histogram; non-NULL `bytes` has `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn metronome_histogram_decode_v2(
    h: *mut metronome_histogram,
    bytes: *const u8,
    len: usize,
) -> metronome_status {
    // SAFETY: forwarded from this function's contract.
    let Some(h) = (unsafe { hist_mut(h) }) else {
        return METRONOME_ERR_NULL;
    };
    // SAFETY: forwarded from this function's contract.
    let input = match unsafe { in_bytes(bytes, len) } {
        Ok(input) => input,
        Err(code) => return code,
    };
    match decode(input) {
        Ok(d) => {
            *h = d;
            METRONOME_OK
        }
        Err(code) => code,
    }
}

/// A one-sentence description of a status code (an `int32_t`, so any value
/// read back from C is accepted): static storage, never NULL, "unknown status
/// code" for codes this library does not return.
#[no_mangle]
pub extern "C" fn metronome_strerror(code: i32) -> *const c_char {
    const ALL: [metronome_status; 15] = [
        METRONOME_OK,
        METRONOME_ERR_NULL,
        METRONOME_ERR_BUFFER_TOO_SMALL,
        METRONOME_ERR_INVALID,
        METRONOME_ERR_ALIAS,
        METRONOME_ERR_COUNT_TOO_LARGE,
        METRONOME_ERR_ALLOC,
        METRONOME_ERR_TRUNCATED,
        METRONOME_ERR_COOKIE,
        METRONOME_ERR_UNSUPPORTED,
        METRONOME_ERR_PARAMETERS,
        METRONOME_ERR_OUT_OF_RANGE,
        METRONOME_ERR_COARSER,
        METRONOME_ERR_COUNT_OVERFLOW,
        METRONOME_ERR_ZLIB,
    ];
    let Some(&status) = ALL.iter().find(|&&s| s as i32 == code) else {
        return c"unknown status code".as_ptr();
    };
    let s: &'static core::ffi::CStr = match status {
        METRONOME_OK => c"success",
        METRONOME_ERR_NULL => c"a required pointer argument is NULL",
        METRONOME_ERR_BUFFER_TOO_SMALL => {
            c"the output buffer is too small: the needed length was written to *len_out"
        }
        METRONOME_ERR_INVALID => {
            c"invalid argument: a length above PTRDIFF_MAX or a bucket index past METRONOME_BUCKET_COUNT"
        }
        METRONOME_ERR_ALIAS => c"cannot merge a histogram into itself: merge a copy",
        METRONOME_ERR_COUNT_TOO_LARGE => {
            c"a counter exceeds INT64_MAX, which HdrHistogram V2 cannot carry"
        }
        METRONOME_ERR_ALLOC => c"memory for the compressed encoding could not be allocated",
        METRONOME_ERR_TRUNCATED => c"HdrHistogram V2 input is truncated",
        METRONOME_ERR_COOKIE => c"not an HdrHistogram V2 encoding (unknown cookie)",
        METRONOME_ERR_UNSUPPORTED => {
            c"unsupported HdrHistogram V2 input: shifted (normalizing offset) or a DoubleHistogram"
        }
        METRONOME_ERR_PARAMETERS => c"HdrHistogram V2 header parameters are invalid",
        METRONOME_ERR_OUT_OF_RANGE => c"HdrHistogram V2 input holds values above UINT64_MAX",
        METRONOME_ERR_COARSER => {
            c"HdrHistogram V2 input is coarser than 2 significant digits with unit 1"
        }
        METRONOME_ERR_COUNT_OVERFLOW => {
            c"HdrHistogram V2 input counts add up to more than UINT64_MAX"
        }
        METRONOME_ERR_ZLIB => {
            c"compressed HdrHistogram V2 payload does not inflate (corrupt or over 64 MiB)"
        }
    };
    s.as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Caller memory with the histogram's alignment.
    #[repr(C, align(16))]
    struct Storage([u8; METRONOME_HISTOGRAM_SIZE]);

    #[test]
    fn init_in_caller_memory_and_iterate_from_any_cursor() {
        let mut mem = Box::new(Storage([0xa5; METRONOME_HISTOGRAM_SIZE]));
        let p = mem.0.as_mut_ptr().cast();
        // SAFETY: mem is aligned, METRONOME_HISTOGRAM_SIZE bytes, and outlives h.
        let h = unsafe { metronome_histogram_init(p, METRONOME_HISTOGRAM_SIZE) };
        assert_eq!(h.cast(), p);
        let mut b = metronome_bucket::default();
        let mut cursor = 0usize;
        // SAFETY: h is live; cursor and b are writable locals.
        unsafe {
            assert_eq!(metronome_histogram_next_bucket(h, &mut cursor, &mut b), 0);
            for v in [3, 3, 1002, 1 << 40] {
                assert_eq!(metronome_histogram_record(h, v), METRONOME_OK);
            }
            assert_eq!(metronome_histogram_next_bucket(h, &mut cursor, &mut b), 1);
            assert_eq!((b.lower, b.upper, b.count, cursor), (3, 3, 2, 4));
            // A cursor past the middle bucket skips it.
            cursor = bucket_index(1003) + 1;
            assert_eq!(metronome_histogram_next_bucket(h, &mut cursor, &mut b), 1);
            assert_eq!((b.lower, b.count), (1 << 40, 1));
            assert_eq!(metronome_histogram_next_bucket(h, &mut cursor, &mut b), 0);
            // A cursor far past the end stays there.
            cursor = usize::MAX;
            assert_eq!(metronome_histogram_next_bucket(h, &mut cursor, &mut b), 0);
            assert_eq!(cursor, usize::MAX);
        }
    }

    #[test]
    fn compressed_round_trip_and_refusals() {
        let h = metronome_histogram_new();
        let d = metronome_histogram_new();
        let mut buf = vec![0u8; METRONOME_V2_MAX_LEN];
        let mut len = 0usize;
        // SAFETY: h and d are live until freed below; buf has buf.len() bytes.
        unsafe {
            for v in 0..5000u64 {
                metronome_histogram_record(h, v * 997);
            }
            assert_eq!(
                metronome_histogram_encode_v2_compressed(h, buf.as_mut_ptr(), buf.len(), &mut len),
                METRONOME_OK
            );
            assert!(len > 8 && len < metronome_histogram_encoded_len(h));
            assert_eq!(
                metronome_histogram_decode_v2(d, buf.as_ptr(), len),
                METRONOME_OK
            );
            assert_eq!(metronome_histogram_count(d), 5000);
            for q in [0.0, 0.5, 0.99] {
                assert_eq!(
                    metronome_histogram_quantile(d, q),
                    metronome_histogram_quantile(h, q)
                );
            }
            // A cut stream, and a length beyond the input.
            assert_eq!(
                metronome_histogram_decode_v2(d, buf.as_ptr(), len - 1),
                METRONOME_ERR_TRUNCATED
            );
            assert_eq!(
                metronome_histogram_decode_v2(d, buf.as_ptr(), 3),
                METRONOME_ERR_TRUNCATED
            );
            // Lengths past PTRDIFF_MAX are refused, not trusted.
            assert_eq!(
                metronome_histogram_encode_v2(h, buf.as_mut_ptr(), usize::MAX, &mut len),
                METRONOME_ERR_INVALID
            );
            assert_eq!(
                metronome_histogram_decode_v2(d, buf.as_ptr(), usize::MAX),
                METRONOME_ERR_INVALID
            );
            assert_eq!(metronome_histogram_count(d), 5000);
            metronome_histogram_free(h);
            metronome_histogram_free(d);
        }
    }

    #[test]
    fn a_compressed_payload_must_hold_a_plain_encoding() {
        use std::io::Write as _;

        use flate2::{write::ZlibEncoder, Compression};
        use metronome_core::histogram::V2_COMPRESSED_COOKIE;

        let inner = Histogram::new().encode_v2_compressed().unwrap();
        let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
        z.write_all(&inner).unwrap();
        let stream = z.finish().unwrap();
        let mut outer = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        outer.extend_from_slice(&(stream.len() as u32).to_be_bytes());
        outer.extend_from_slice(&stream);
        assert_eq!(decode(&outer).unwrap_err(), METRONOME_ERR_COOKIE);
        assert_eq!(decode(&inner).unwrap(), Histogram::new());
    }

    #[test]
    fn every_status_has_its_own_message() {
        let mut seen = std::collections::HashSet::new();
        for code in [
            0, -1, -2, -3, -4, -5, -6, -10, -11, -12, -13, -14, -15, -16, -17,
        ] {
            // SAFETY: metronome_strerror returns a static NUL-terminated string.
            let s = unsafe { core::ffi::CStr::from_ptr(metronome_strerror(code)) };
            assert_ne!(s.to_str().unwrap(), "unknown status code", "{code}");
            assert!(seen.insert(s), "{code}");
        }
    }
}
