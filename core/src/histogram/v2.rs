//! HdrHistogram's V2 encoding of a [`Histogram`]: [`Histogram::encode_v2`]
//! and [`decode_v2`] for the plain form (cookie `0x1c849313`, no allocation),
//! and, with the `zlib` feature, [`Histogram::encode_v2_compressed`] and
//! [`decode_v2_compressed`] for the zlib-compressed form (cookie `0x1c849314`)
//! that `.hlog` files and HdrHistogram's base64 text carry. One file per
//! encoding, as HdrHistogram_rust keeps its serializers.

use core::fmt;
#[cfg(feature = "zlib")]
use std::io::{Read as _, Write as _};
#[cfg(feature = "zlib")]
use std::vec::Vec;

#[cfg(feature = "zlib")]
use flate2::{read::ZlibDecoder, write::ZlibEncoder, Compression};

use super::{bucket_index, Histogram, BUCKET_COUNT};

/// The largest number of bytes [`Histogram::encode_v2`] can write: the
/// 40-byte header plus at most 9 bytes per counter. A buffer this long always
/// suffices; [`Histogram::encoded_len`] gives the exact length for one histogram.
pub const V2_MAX_LEN: usize = V2_HEADER_LEN + BUCKET_COUNT * 9;

/// Length of the V2 header in bytes.
pub const V2_HEADER_LEN: usize = 40;

/// Cookie of HdrHistogram's uncompressed V2 encoding (as Java and the
/// `hdrhistogram` crate write it).
pub const V2_COOKIE: u32 = 0x1c84_9313;

/// Cookie of HdrHistogram's zlib-compressed V2 encoding. [`decode_v2`]
/// rejects it with [`DecodeError::Compressed`]; `decode_v2_compressed`
/// (feature `zlib`) reads it.
pub const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;

/// Java marks the word size in bits 4..8 of the cookie; readers mask it off.
const COOKIE_WORD_SIZE_MASK: u32 = 0xf0;

impl Histogram {
    /// Exact number of bytes [`Histogram::encode_v2`] writes for this histogram.
    ///
    /// # Example
    /// ```
    /// use metronome_core::histogram::Histogram;
    /// let mut h = Histogram::new();
    /// assert_eq!(h.encoded_len(), 41);
    /// h.record(3); // counts [0, 0, 0, 1]: a run of 3 zeros, then 1
    /// assert_eq!(h.encoded_len(), 42);
    /// ```
    pub fn encoded_len(&self) -> usize {
        let mut len = V2_HEADER_LEN;
        self.for_each_encoded(|zz| {
            len += varint_len(zz);
            Ok(())
        })
        .map_or(V2_MAX_LEN, |()| len)
    }

    /// Calls `f` with each ZigZag-encoded entry of the V2 counts array:
    /// counters `0..=bucket_index(max)` with runs of two or more zeros as
    /// one negative length (as Java and the `hdrhistogram` crate write them).
    fn for_each_encoded(
        &self,
        mut f: impl FnMut(u64) -> Result<(), EncodeError>,
    ) -> Result<(), EncodeError> {
        let last = if self.total == 0 {
            0
        } else {
            bucket_index(self.max)
        };
        let counts = &self.counts[..=last];
        let mut i = 0;
        while i < counts.len() {
            let c = counts[i];
            i += 1;
            let entry: i64 = if c == 0 {
                let mut zeros = 1i64;
                while i < counts.len() && counts[i] == 0 {
                    zeros += 1;
                    i += 1;
                }
                if zeros > 1 {
                    -zeros
                } else {
                    0
                }
            } else {
                i64::try_from(c).map_err(|_| EncodeError::CountTooLarge)?
            };
            f(((entry << 1) ^ (entry >> 63)) as u64)?;
        }
        Ok(())
    }

    /// Writes HdrHistogram's uncompressed V2 encoding into `buf` and returns
    /// its length. Header (40 bytes, big-endian): cookie `0x1c849313`, payload
    /// length, normalizing index offset 0, 2 significant digits, lowest
    /// trackable value 1, highest trackable value `2^63 - 1` (so Java readers
    /// accept it), integer-to-double ratio 1.0; then the counters in
    /// HdrHistogram's index order up to the max's bucket as ZigZag LEB128-9
    /// varints, runs of zeros as negative lengths. The bytes equal the
    /// `hdrhistogram` crate's `V2Serializer` output for a
    /// `Histogram::new_with_bounds(1, i64::MAX as u64, 2)` holding the same
    /// values.
    ///
    /// A histogram holding a value above `i64::MAX` (about 292 years of
    /// nanoseconds) is written with highest trackable value `u64::MAX`
    /// instead: the Rust crate and [`decode_v2`] read it, Java cannot hold it.
    ///
    /// # Errors
    /// - [`EncodeError::BufferTooSmall`] when `buf` is shorter than the encoding
    ///   (nothing useful is left in `buf`; [`V2_MAX_LEN`] always suffices).
    /// - [`EncodeError::CountTooLarge`] when a counter exceeds `i64::MAX`.
    ///
    /// # Example
    /// ```
    /// use metronome_core::histogram::{decode_v2, Histogram, V2_MAX_LEN};
    /// let mut h = Histogram::new();
    /// h.record(3);
    /// let mut buf = [0u8; V2_MAX_LEN];
    /// let len = h.encode_v2(&mut buf).unwrap();
    /// assert_eq!(len, 42);
    /// assert_eq!(buf[..8], [0x1c, 0x84, 0x93, 0x13, 0, 0, 0, 2]);
    /// assert_eq!(buf[40..42], [5, 2]); // zigzag(-3) = 5, zigzag(1) = 2
    /// assert_eq!(decode_v2(&buf[..len]).unwrap(), h);
    /// ```
    pub fn encode_v2(&self, buf: &mut [u8]) -> Result<usize, EncodeError> {
        let mut pos = V2_HEADER_LEN;
        self.for_each_encoded(|zz| {
            let mut tmp = [0u8; 9];
            let n = varint_write(zz, &mut tmp);
            if let Some(dst) = buf.get_mut(pos..pos + n) {
                dst.copy_from_slice(&tmp[..n]);
            }
            pos += n;
            Ok(())
        })?;
        if pos > buf.len() {
            return Err(EncodeError::BufferTooSmall { needed: pos });
        }
        let payload = (pos - V2_HEADER_LEN) as u32; // at most 7424 * 9
        let highest: u64 = if self.max > i64::MAX as u64 {
            u64::MAX
        } else {
            i64::MAX as u64
        };
        let header = &mut buf[..V2_HEADER_LEN];
        header[0..4].copy_from_slice(&V2_COOKIE.to_be_bytes());
        header[4..8].copy_from_slice(&payload.to_be_bytes());
        header[8..12].copy_from_slice(&0u32.to_be_bytes());
        header[12..16].copy_from_slice(&2u32.to_be_bytes());
        header[16..24].copy_from_slice(&1u64.to_be_bytes());
        header[24..32].copy_from_slice(&highest.to_be_bytes());
        header[32..40].copy_from_slice(&1.0f64.to_be_bytes());
        Ok(pos)
    }
}

/// Length of the LEB128-9 encoding of `v`.
fn varint_len(v: u64) -> usize {
    let bits = 64 - v.leading_zeros() as usize;
    if bits > 56 {
        9
    } else {
        bits.div_ceil(7).max(1)
    }
}

/// LEB128-9: 7 bits a byte, low first, high bit = more; the 9th byte holds 8 bits.
fn varint_write(mut v: u64, out: &mut [u8; 9]) -> usize {
    for (i, b) in out.iter_mut().enumerate().take(8) {
        if v < 0x80 {
            *b = v as u8;
            return i + 1;
        }
        *b = (v as u8 & 0x7f) | 0x80;
        v >>= 7;
    }
    out[8] = v as u8;
    9
}

/// Why [`Histogram::encode_v2`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// The buffer is shorter than the encoding, which takes `needed` bytes.
    /// Pass a buffer of at least `needed` bytes ([`V2_MAX_LEN`] always fits).
    BufferTooSmall {
        /// The exact length of the encoding.
        needed: usize,
    },
    /// A counter exceeds `i64::MAX`, which HdrHistogram's signed ZigZag counts
    /// cannot carry. Split the data over several histograms (intervals).
    CountTooLarge,
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BufferTooSmall { needed } => write!(
                f,
                "the buffer is too small for the HdrHistogram V2 encoding: {needed} bytes needed"
            ),
            Self::CountTooLarge => f.write_str(
                "a histogram counter exceeds i64::MAX and cannot be written in HdrHistogram V2",
            ),
        }
    }
}

impl core::error::Error for EncodeError {}

/// Why [`decode_v2`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ends before the 40-byte header, before the payload length it
    /// declares, or inside a count. Pass the whole encoding.
    Truncated,
    /// The cookie is HdrHistogram's compressed V2 cookie `0x1c849314`: read
    /// it with `decode_v2_compressed` (feature `zlib`), which inflates the
    /// zlib payload and decodes the inner bytes.
    Compressed,
    /// The first four bytes are not an HdrHistogram V2 cookie (the value read
    /// is carried). Base64 text must be decoded first; V0/V1 encodings are not
    /// supported.
    Cookie(u32),
    /// The normalizing index offset is not 0 (a shifted histogram); not
    /// supported. Write the histogram unshifted.
    NormalizingOffset,
    /// The integer-to-double conversion ratio is not 1.0 (a `DoubleHistogram`);
    /// only integer histograms are supported.
    ConversionRatio,
    /// The header's parameters describe no valid histogram: lowest trackable
    /// value below 1, more than 5 significant digits, or a layout whose values
    /// would not fit 64 bits.
    Parameters,
    /// A non-empty counter covers values above `u64::MAX`; this histogram
    /// cannot hold them.
    OutOfRange,
    /// A non-empty counter covers values that span more than one of this
    /// histogram's buckets (the source is coarser: fewer than 2 significant
    /// digits or a lowest trackable value above 1), so it cannot be
    /// re-bucketed exactly. Record the source with 2 or more digits and unit 1.
    Coarser,
    /// The counts add up to more than `u64::MAX`.
    CountOverflow,
    /// The zlib stream of a compressed encoding does not inflate: it is
    /// corrupt, or inflates to more than `V2_INFLATE_LIMIT` bytes (feature
    /// `zlib`). Pass the encoding as it was written.
    Zlib,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated => f.write_str("HdrHistogram V2 input is truncated"),
            Self::Compressed => f.write_str(
                "HdrHistogram V2 input is compressed (cookie 0x1c849314): inflate it with zlib first",
            ),
            Self::Cookie(c) => write!(f, "not an HdrHistogram V2 encoding (cookie {c:#010x})"),
            Self::NormalizingOffset => {
                f.write_str("HdrHistogram V2 input has a non-zero normalizing index offset")
            }
            Self::ConversionRatio => f.write_str(
                "HdrHistogram V2 input is a DoubleHistogram (conversion ratio is not 1.0)",
            ),
            Self::Parameters => {
                f.write_str("HdrHistogram V2 header has invalid lowest value or significant digits")
            }
            Self::OutOfRange => f.write_str("HdrHistogram V2 input holds values above u64::MAX"),
            Self::Coarser => f.write_str(
                "HdrHistogram V2 input is coarser than 2 significant digits with unit 1 \
                 and cannot be re-bucketed exactly",
            ),
            Self::CountOverflow => {
                f.write_str("HdrHistogram V2 input counts add up to more than u64::MAX")
            }
            Self::Zlib => f.write_str(
                "the zlib payload of compressed HdrHistogram V2 input does not inflate \
                 (corrupt, or over 64 MiB)",
            ),
        }
    }
}

impl core::error::Error for DecodeError {}

/// Reads a big-endian `u32` at `at`; the caller checked the length.
fn be_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(a)
}

/// Reads a big-endian `u64` at `at`; the caller checked the length.
fn be_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

/// Reads one LEB128-9 varint from the front of `b`: (value, bytes used).
fn varint_read(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for i in 0..8 {
        let byte = *b.get(i)?;
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    v |= u64::from(*b.get(8)?) << 56;
    Some((v, 9))
}

/// Decodes HdrHistogram's uncompressed V2 encoding (as written by
/// [`Histogram::encode_v2`], Java's `encodeIntoByteBuffer` or the
/// `hdrhistogram` crate's `V2Serializer`). Bytes after the declared payload
/// are ignored; the highest trackable value in the header is not checked.
///
/// Sources with another layout are **re-bucketed exactly**: every non-empty
/// source counter must cover a value range inside one of this histogram's
/// buckets. That holds for 2 or more significant digits with a lowest
/// trackable value of 1 (a finer or equal layout); coarser sources fail with
/// [`DecodeError::Coarser`] as soon as a non-empty counter straddles buckets.
///
/// The encoding has counts only, so the decoded minimum and maximum are the
/// lower bound of the first and the upper bound of the last non-empty
/// (source) bucket, and the sum counts each value at its bucket's midpoint
/// (HdrHistogram's `medianEquivalentValue`). Quantiles stay never below the
/// exact value; [`Histogram::mean`] is then approximate (exact when every
/// value was below 256).
///
/// # Errors
/// Each [`DecodeError`] variant names its cause: truncated input, a
/// compressed or unknown cookie, an unsupported normalizing offset or
/// conversion ratio, invalid header parameters, values above `u64::MAX`, a
/// coarser layout, or counts that overflow `u64`.
///
/// # Example
/// ```
/// use metronome_core::histogram::{decode_v2, DecodeError, Histogram};
/// let mut h = Histogram::new();
/// h.record(1002);
/// let mut buf = [0u8; 64];
/// let len = h.encode_v2(&mut buf).unwrap();
/// let d = decode_v2(&buf[..len]).unwrap();
/// assert_eq!((d.count(), d.min(), d.max()), (1, 1000, 1003));
/// assert_eq!(d.quantile(0.5), 1003);
/// assert_eq!(decode_v2(&buf[..10]), Err(DecodeError::Truncated));
/// buf[3] = 0x14;
/// assert_eq!(decode_v2(&buf[..len]), Err(DecodeError::Compressed));
/// ```
pub fn decode_v2(bytes: &[u8]) -> Result<Histogram, DecodeError> {
    if bytes.len() < 4 {
        return Err(DecodeError::Truncated);
    }
    let cookie = be_u32(bytes, 0);
    match cookie & !COOKIE_WORD_SIZE_MASK {
        c if c == V2_COOKIE & !COOKIE_WORD_SIZE_MASK => {}
        c if c == V2_COMPRESSED_COOKIE & !COOKIE_WORD_SIZE_MASK => {
            return Err(DecodeError::Compressed)
        }
        _ => return Err(DecodeError::Cookie(cookie)),
    }
    if bytes.len() < V2_HEADER_LEN {
        return Err(DecodeError::Truncated);
    }
    let payload_len = be_u32(bytes, 4) as usize;
    if be_u32(bytes, 8) != 0 {
        return Err(DecodeError::NormalizingOffset);
    }
    let digits = be_u32(bytes, 12);
    let lowest = be_u64(bytes, 16);
    let ratio = f64::from_bits(be_u64(bytes, 32));
    if ratio != 1.0 {
        return Err(DecodeError::ConversionRatio);
    }
    if digits > 5 || lowest == 0 || lowest > i64::MAX as u64 {
        return Err(DecodeError::Parameters);
    }
    let unit = 63 - lowest.leading_zeros(); // floor(log2 lowest)
    let largest = 2 * 10u32.pow(digits); // single-unit resolution up to here
    let sub_magnitude = 32 - (largest - 1).leading_zeros(); // ceil(log2 largest)
    if unit + sub_magnitude > 63 {
        return Err(DecodeError::Parameters);
    }
    let half_magnitude = sub_magnitude - 1;
    let half = 1u64 << half_magnitude;

    let payload = bytes
        .get(V2_HEADER_LEN..V2_HEADER_LEN + payload_len)
        .ok_or(DecodeError::Truncated)?;

    let mut h = Histogram::new();
    let mut first: Option<u64> = None;
    let mut last = 0u64;
    let mut src_index: u64 = 0;
    let mut pos = 0;
    while pos < payload.len() {
        let (zz, used) = varint_read(&payload[pos..]).ok_or(DecodeError::Truncated)?;
        pos += used;
        let entry = ((zz >> 1) as i64) ^ -((zz & 1) as i64);
        if entry < 0 {
            src_index = src_index.saturating_add(entry.unsigned_abs());
            continue;
        }
        let count = entry as u64;
        let index = src_index;
        src_index = src_index.saturating_add(1);
        if count == 0 {
            continue;
        }
        // HdrHistogram's valueFromIndex for the source layout.
        let bucket = (index >> half_magnitude).saturating_sub(1);
        let sub = if index < half << 1 {
            index
        } else {
            (index & (half - 1)) + half
        };
        let shift = bucket + u64::from(unit);
        if shift >= 64 {
            return Err(DecodeError::OutOfRange);
        }
        let lower = u128::from(sub) << shift;
        let upper = lower + (1u128 << shift) - 1;
        let (Ok(lower), Ok(upper)) = (u64::try_from(lower), u64::try_from(upper)) else {
            return Err(DecodeError::OutOfRange);
        };
        let i = bucket_index(lower);
        if bucket_index(upper) != i {
            return Err(DecodeError::Coarser);
        }
        h.counts[i] = h.counts[i]
            .checked_add(count)
            .ok_or(DecodeError::CountOverflow)?;
        h.total = h
            .total
            .checked_add(count)
            .ok_or(DecodeError::CountOverflow)?;
        let mid = lower + ((upper - lower + 1) >> 1);
        h.sum = h.sum.saturating_add(u128::from(mid) * u128::from(count));
        first.get_or_insert(lower);
        last = upper;
    }
    if let Some(min) = first {
        h.min = min;
        h.max = last;
    }
    Ok(h)
}

/// The most bytes [`decode_v2_compressed`] inflates a compressed payload
/// to: 64 MiB. A plain encoding of this crate's layout takes at most
/// [`V2_MAX_LEN`] bytes; finer layouts (more significant digits) take more,
/// and a zlib bomb would take any amount.
#[cfg(feature = "zlib")]
pub const V2_INFLATE_LIMIT: usize = 64 << 20;

#[cfg(feature = "zlib")]
impl Histogram {
    /// HdrHistogram's **compressed** V2 encoding, the form in `.hlog` files
    /// and HdrHistogram's base64 text: the cookie `0x1c849314` and the
    /// length of the zlib stream (both big-endian 32-bit), then
    /// [`Histogram::encode_v2`]'s bytes compressed with zlib at the default
    /// level. Java's and Python's HdrHistogram and the `hdrhistogram` crate
    /// read it. Feature `zlib`; allocates.
    ///
    /// # Errors
    /// [`EncodeError::CountTooLarge`] when a counter exceeds `i64::MAX`.
    ///
    /// # Example
    /// ```
    /// use metronome_core::histogram::{decode_v2_compressed, Histogram};
    /// let mut h = Histogram::new();
    /// h.record(1_000);
    /// let bytes = h.encode_v2_compressed().unwrap();
    /// assert_eq!(bytes[..4], 0x1c84_9314u32.to_be_bytes());
    /// assert_eq!(decode_v2_compressed(&bytes).unwrap().count(), 1);
    /// ```
    pub fn encode_v2_compressed(&self) -> Result<Vec<u8>, EncodeError> {
        let mut plain = std::vec![0u8; self.encoded_len()];
        let n = self.encode_v2(&mut plain)?;
        let mut z = ZlibEncoder::new(Vec::with_capacity(n / 2 + 64), Compression::default());
        // Writing into a Vec cannot fail: both results are always Ok.
        let stream = z
            .write_all(&plain[..n])
            .and_then(|()| z.finish())
            .unwrap_or_default();
        // At most V2_MAX_LEN bytes and zlib's few bytes of overhead.
        let stream_len = stream.len() as u32;
        let mut out = Vec::with_capacity(stream.len() + 8);
        out.extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
        out.extend_from_slice(&stream_len.to_be_bytes());
        out.extend_from_slice(&stream);
        Ok(out)
    }
}

/// Decodes HdrHistogram's **compressed** V2 encoding (cookie `0x1c849314`,
/// as [`Histogram::encode_v2_compressed`], Java's, Python's `hdrh` and the
/// `hdrhistogram` crate write it): the cookie and the stream's length, the
/// zlib stream inflated (to at most [`V2_INFLATE_LIMIT`] bytes), then
/// [`decode_v2`] of the plain encoding inside. Bytes after the declared
/// stream are ignored. Feature `zlib`; allocates.
///
/// # Errors
/// - [`DecodeError::Truncated`] when the input ends before the 8-byte
///   header or the stream's declared length.
/// - [`DecodeError::Cookie`] when the outer cookie is not the compressed
///   one, or the inflated bytes are not a plain V2 encoding (another layer
///   of compression included).
/// - [`DecodeError::Zlib`] when the stream does not inflate, or inflates
///   beyond [`V2_INFLATE_LIMIT`].
/// - Any error of [`decode_v2`] on the inflated bytes.
///
/// # Example
/// ```
/// use metronome_core::histogram::{decode_v2_compressed, DecodeError, Histogram};
/// let mut h = Histogram::new();
/// h.record_n(1_500_000, 3);
/// let mut bytes = h.encode_v2_compressed().unwrap();
/// let d = decode_v2_compressed(&bytes).unwrap();
/// assert_eq!(d.buckets().collect::<Vec<_>>(), h.buckets().collect::<Vec<_>>());
/// assert_eq!(decode_v2_compressed(&bytes[..6]), Err(DecodeError::Truncated));
/// bytes[9] ^= 0xff; // inside the zlib stream
/// assert_eq!(decode_v2_compressed(&bytes), Err(DecodeError::Zlib));
/// ```
#[cfg(feature = "zlib")]
pub fn decode_v2_compressed(bytes: &[u8]) -> Result<Histogram, DecodeError> {
    if bytes.len() < 4 {
        return Err(DecodeError::Truncated);
    }
    let cookie = be_u32(bytes, 0);
    if cookie & !COOKIE_WORD_SIZE_MASK != V2_COMPRESSED_COOKIE & !COOKIE_WORD_SIZE_MASK {
        return Err(DecodeError::Cookie(cookie));
    }
    if bytes.len() < 8 {
        return Err(DecodeError::Truncated);
    }
    let len = be_u32(bytes, 4) as usize;
    let stream = bytes[8..].get(..len).ok_or(DecodeError::Truncated)?;
    let mut plain = Vec::new();
    ZlibDecoder::new(stream)
        .take(V2_INFLATE_LIMIT as u64 + 1)
        .read_to_end(&mut plain)
        .map_err(|_| DecodeError::Zlib)?;
    if plain.len() > V2_INFLATE_LIMIT {
        return Err(DecodeError::Zlib);
    }
    if plain.len() >= 4 {
        let inner = be_u32(&plain, 0);
        if inner & !COOKIE_WORD_SIZE_MASK != V2_COOKIE & !COOKIE_WORD_SIZE_MASK {
            // A compressed payload must hold a plain encoding (not another layer).
            return Err(DecodeError::Cookie(inner));
        }
    }
    decode_v2(&plain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_len_matches_writer() {
        for v in [
            0u64,
            1,
            127,
            128,
            16_383,
            16_384,
            1 << 49,
            1 << 56,
            u64::MAX,
        ] {
            let mut out = [0u8; 9];
            let n = varint_write(v, &mut out);
            assert_eq!(varint_len(v), n, "v = {v}");
            assert_eq!(varint_read(&out[..n]), Some((v, n)));
        }
    }

    /// The compressed form carries exactly the plain one, and its decoder
    /// refuses what is not one layer of zlib around a plain encoding.
    #[cfg(feature = "zlib")]
    #[test]
    fn compressed_wraps_the_plain_encoding_once() {
        let mut h = Histogram::new();
        for v in 0..5000u64 {
            h.record(v * 997);
        }
        let bytes = h.encode_v2_compressed().unwrap();
        assert_eq!(be_u32(&bytes, 4) as usize, bytes.len() - 8);
        let mut plain = Vec::new();
        ZlibDecoder::new(&bytes[8..])
            .read_to_end(&mut plain)
            .unwrap();
        let mut direct = std::vec![0u8; h.encoded_len()];
        let n = h.encode_v2(&mut direct).unwrap();
        assert_eq!(plain, direct[..n]);
        let d = decode_v2_compressed(&bytes).unwrap();
        assert_eq!(
            d.buckets().collect::<Vec<_>>(),
            h.buckets().collect::<Vec<_>>()
        );
        // Plain input, a cut stream, and zlib around a compressed encoding.
        assert_eq!(
            decode_v2_compressed(&direct[..n]),
            Err(DecodeError::Cookie(V2_COOKIE))
        );
        assert_eq!(
            decode_v2_compressed(&bytes[..bytes.len() - 1]),
            Err(DecodeError::Truncated)
        );
        let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
        z.write_all(&bytes).unwrap();
        let stream = z.finish().unwrap();
        let mut twice = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        twice.extend_from_slice(&(stream.len() as u32).to_be_bytes());
        twice.extend_from_slice(&stream);
        assert_eq!(
            decode_v2_compressed(&twice),
            Err(DecodeError::Cookie(V2_COMPRESSED_COOKIE))
        );
    }
}
