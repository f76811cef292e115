//! QUIC variable-length integers (RFC 9000 section 16): the two high bits
//! of the first byte give the length (1, 2, 4 or 8 bytes), the rest is the
//! value, big-endian, up to 2^62 - 1.

/// The largest value a varint can hold.
pub const MAX: u64 = (1 << 62) - 1;

/// The encoded length of `value` (1, 2, 4 or 8), or `None` above [`MAX`].
pub const fn len(value: u64) -> Option<usize> {
    match value {
        0..=63 => Some(1),
        64..=16_383 => Some(2),
        16_384..=1_073_741_823 => Some(4),
        1_073_741_824..=MAX => Some(8),
        _ => None,
    }
}

/// Writes `value` in its shortest form; returns the length, or `None` when
/// `out` is too short or `value` is above [`MAX`].
///
/// ```
/// use metronome_core::h3::varint;
/// let mut out = [0u8; 8];
/// // RFC 9000 appendix A.1's examples.
/// assert_eq!(varint::encode(151_288_809_941_952_652, &mut out), Some(8));
/// assert_eq!(out, [0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c]);
/// assert_eq!(varint::encode(15_293, &mut out), Some(2));
/// assert_eq!(out[..2], [0x7b, 0xbd]);
/// ```
pub fn encode(value: u64, out: &mut [u8]) -> Option<usize> {
    let n = len(value)?;
    let dst = out.get_mut(..n)?;
    // The length's code (0 to 3) in the top two bits of the n-byte form.
    let tag = u64::from(n.trailing_zeros()) << (8 * n - 2);
    dst.copy_from_slice(&(value | tag).to_be_bytes()[8 - n..]);
    Some(n)
}

/// Reads a varint from the front of `input`: its value and length, or
/// `None` when `input` ends inside it.
///
/// ```
/// use metronome_core::h3::varint;
/// assert_eq!(varint::decode(&[0x9d, 0x7f, 0x3e, 0x7d]), Some((494_878_333, 4)));
/// assert_eq!(varint::decode(&[0x40, 0x25]), Some((37, 2))); // not the shortest form: fine
/// assert_eq!(varint::decode(&[0x9d, 0x7f]), None);
/// ```
pub fn decode(input: &[u8]) -> Option<(u64, usize)> {
    let first = *input.first()?;
    let n = 1usize << (first >> 6);
    let bytes = input.get(..n)?;
    let mut v = u64::from(first & 0x3f);
    for &b in &bytes[1..] {
        v = (v << 8) | u64::from(b);
    }
    Some((v, n))
}

/// A varint read across calls: bytes are fed as they arrive, the value
/// comes out once its last byte is in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reader {
    value: u64,
    have: u8,
    need: u8,
}

impl Reader {
    /// A reader at the start of a varint.
    pub const fn new() -> Self {
        Self {
            value: 0,
            have: 0,
            need: 0,
        }
    }

    /// True when some but not all bytes of a varint have been fed.
    pub const fn is_partial(&self) -> bool {
        self.have != 0
    }

    /// Feeds bytes from the front of `input`; returns how many were taken
    /// and the value once complete (the reader is then ready for the next
    /// varint). Takes nothing from an empty `input`.
    ///
    /// ```
    /// use metronome_core::h3::varint::Reader;
    /// let mut r = Reader::new();
    /// assert_eq!(r.feed(&[0x7b]), (1, None));
    /// assert_eq!(r.feed(&[0xbd, 0x25]), (1, Some(15_293)));
    /// assert_eq!(r.feed(&[0x25]), (1, Some(37)));
    /// ```
    pub fn feed(&mut self, input: &[u8]) -> (usize, Option<u64>) {
        let mut taken = 0;
        for &b in input {
            taken += 1;
            if self.have == 0 {
                self.need = 1 << (b >> 6);
                self.value = u64::from(b & 0x3f);
            } else {
                self.value = (self.value << 8) | u64::from(b);
            }
            self.have += 1;
            if self.have == self.need {
                let v = self.value;
                *self = Self::new();
                return (taken, Some(v));
            }
        }
        (taken, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_9000_examples_and_bounds() {
        let mut out = [0u8; 8];
        for (v, bytes) in [
            (
                151_288_809_941_952_652u64,
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c][..],
            ),
            (494_878_333, &[0x9d, 0x7f, 0x3e, 0x7d]),
            (15_293, &[0x7b, 0xbd]),
            (37, &[0x25]),
            (0, &[0x00]),
            (63, &[0x3f]),
            (64, &[0x40, 0x40]),
            (16_383, &[0x7f, 0xff]),
            (16_384, &[0x80, 0x00, 0x40, 0x00]),
            (MAX, &[0xff; 8]),
        ] {
            let n = encode(v, &mut out).unwrap();
            assert_eq!(&out[..n], bytes, "{v}");
            assert_eq!(decode(bytes), Some((v, n)));
            // Split at every byte.
            for cut in 0..n {
                let mut r = Reader::new();
                assert_eq!(r.feed(&bytes[..cut]), (cut, None));
                assert_eq!(r.is_partial(), cut > 0);
                assert_eq!(r.feed(&bytes[cut..]), (n - cut, Some(v)));
                assert!(!r.is_partial());
            }
        }
        assert_eq!(encode(MAX + 1, &mut out), None);
        assert_eq!(encode(16_384, &mut out[..3]), None);
        assert_eq!(decode(&[]), None);
        assert_eq!(decode(&[0xc0, 0, 0, 0, 0, 0, 0]), None);
    }
}
