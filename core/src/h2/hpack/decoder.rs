//! The HPACK decoder: one header block in, header fields out through a
//! callback, the dynamic table updated (RFC 7541 sections 3 and 6).

use super::huffman;
use super::table::{DynamicTable, ENTRY_OVERHEAD, STATIC_TABLE};
use super::HpackError;

/// What a decoded block held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Block {
    /// Fields passed to the callback.
    pub fields: usize,
    /// Fields whose name and value together were longer than `N` bytes:
    /// decoded and checked (the table updated as the RFC says) but not
    /// passed to the callback. None of them can be an entry of the table.
    pub oversize: usize,
}

/// An HPACK decoder whose dynamic table and scratch space take `2 * N`
/// bytes, fixed; `N` is the `SETTINGS_HEADER_TABLE_SIZE` to advertise
/// ([`Decoder::MAX_TABLE_SIZE`]), so a server can never make the table
/// outgrow it (see [`table`](super::table) for the layout).
///
/// Each field is materialised in the scratch space (Huffman-decoded, or
/// copied from a table) before the callback sees it, so names and values
/// are plain bytes whatever their representation. A field longer than the
/// scratch space is counted in [`Block::oversize`] instead: it could not
/// have been added to the table anyway (its RFC size exceeds `N`), and the
/// HTTP/2 client needs only short fields (`:status`, `content-type`,
/// `grpc-status`).
///
/// # Example
/// RFC 7541 C.3.1, the first request of the C.3 sequence:
/// ```
/// use metronome_core::h2::hpack::Decoder;
/// let block = b"\x82\x86\x84\x41\x0fwww.example.com";
/// let mut dec = Decoder::<4096>::new();
/// let mut seen = Vec::new();
/// dec.decode(block, |n, v| seen.push((n.to_vec(), v.to_vec()))).unwrap();
/// assert_eq!(seen[0], (b":method".to_vec(), b"GET".to_vec()));
/// assert_eq!(seen[3], (b":authority".to_vec(), b"www.example.com".to_vec()));
/// assert_eq!(dec.table().size(), 57);
/// ```
#[derive(Clone, Debug)]
pub struct Decoder<const N: usize> {
    table: DynamicTable<N>,
    scratch: [u8; N],
}

impl<const N: usize> Default for Decoder<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Decoder<N> {
    /// The largest dynamic table this decoder accepts: advertise it as
    /// `SETTINGS_HEADER_TABLE_SIZE`.
    pub const MAX_TABLE_SIZE: usize = N;

    /// A decoder with an empty table of maximum size `N`.
    pub const fn new() -> Self {
        Self {
            table: DynamicTable::new(),
            scratch: [0; N],
        }
    }

    /// The dynamic table, for inspection.
    pub const fn table(&self) -> &DynamicTable<N> {
        &self.table
    }

    /// Decodes one complete header block, calling `emit(name, value)` for
    /// each field in order.
    ///
    /// # Errors
    /// Any [`HpackError`]: the block is malformed, and since the table may
    /// be half-updated the connection must end (a `COMPRESSION_ERROR`).
    pub fn decode<F: FnMut(&[u8], &[u8])>(
        &mut self,
        block: &[u8],
        mut emit: F,
    ) -> Result<Block, HpackError> {
        let mut pos = 0;
        let mut out = Block::default();
        let mut fields_seen = false;
        while pos < block.len() {
            let b = block[pos];
            if b & 0x80 != 0 {
                let index = integer(block, &mut pos, 7)?;
                let (name, value) = lookup(&self.table, index)?;
                let (nl, vl) = (name.len(), value.len());
                let (s_name, s_value) = self.scratch.split_at_mut(nl);
                s_name.copy_from_slice(name);
                s_value[..vl].copy_from_slice(value);
                emit(&self.scratch[..nl], &self.scratch[nl..nl + vl]);
                out.fields += 1;
                fields_seen = true;
            } else if b & 0xe0 == 0x20 {
                // Dynamic table size update: only before the first field
                // (RFC 7541 section 4.2), and within what was advertised.
                let max = integer(block, &mut pos, 5)?;
                if fields_seen {
                    return Err(HpackError::TableSizeUpdate);
                }
                self.table.set_max_size(max)?;
            } else {
                let (prefix, indexing) = if b & 0xc0 == 0x40 {
                    (6, true)
                } else {
                    (4, false)
                };
                let index = integer(block, &mut pos, prefix)?;
                let nl = if index == 0 {
                    string(block, &mut pos, &mut self.scratch)?
                } else {
                    let (name, _) = lookup(&self.table, index)?;
                    let nl = name.len();
                    self.scratch[..nl].copy_from_slice(name);
                    nl
                };
                let vl = {
                    let rest = self.scratch.get_mut(nl..).unwrap_or(&mut []);
                    string(block, &mut pos, rest)?
                };
                fields_seen = true;
                if nl + vl <= N {
                    let (name, value) = self.scratch[..nl + vl].split_at(nl);
                    emit(name, value);
                    out.fields += 1;
                    if indexing {
                        self.table.insert(name, value);
                    }
                } else {
                    out.oversize += 1;
                    if indexing {
                        // Larger than any table of at most N: the RFC
                        // empties the table and adds nothing.
                        debug_assert!(nl + vl + ENTRY_OVERHEAD > self.table.max_size());
                        self.table.clear();
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Entry `index` of the combined index space (1..=61 static, then the
/// dynamic table newest first).
fn lookup<const N: usize>(
    table: &DynamicTable<N>,
    index: usize,
) -> Result<(&[u8], &[u8]), HpackError> {
    match index {
        0 => Err(HpackError::Index),
        1..=61 => Ok(STATIC_TABLE[index - 1]),
        _ => table.get(index - 62).ok_or(HpackError::Index),
    }
}

/// Decodes an HPACK integer with an `n`-bit prefix at `block[*pos..]`
/// (RFC 7541 section 5.1), advancing `pos`. Values above 2^28 are refused
/// (no legitimate index, length or table size comes near).
fn integer(block: &[u8], pos: &mut usize, n: u32) -> Result<usize, HpackError> {
    let mask = ((1u16 << n) - 1) as u8;
    let first = *block.get(*pos).ok_or(HpackError::Truncated)?;
    *pos += 1;
    let mut value = usize::from(first & mask);
    if value < usize::from(mask) {
        return Ok(value);
    }
    let mut shift = 0;
    loop {
        let b = *block.get(*pos).ok_or(HpackError::Truncated)?;
        *pos += 1;
        value += usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return if value > 1 << 28 {
                Err(HpackError::Integer)
            } else {
                Ok(value)
            };
        }
        shift += 7;
        if shift > 21 {
            return Err(HpackError::Integer);
        }
    }
}

/// Decodes a string literal at `block[*pos..]` into `dst` (Huffman or
/// raw), advancing `pos`; returns its decoded length, which may exceed
/// `dst.len()` (then only a prefix was written).
fn string(block: &[u8], pos: &mut usize, dst: &mut [u8]) -> Result<usize, HpackError> {
    let huff = block.get(*pos).ok_or(HpackError::Truncated)? & 0x80 != 0;
    let len = integer(block, pos, 7)?;
    let raw = block.get(*pos..*pos + len).ok_or(HpackError::Truncated)?;
    *pos += len;
    if huff {
        huffman::decode(raw, dst)
    } else {
        let n = len.min(dst.len());
        dst[..n].copy_from_slice(&raw[..n]);
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        // RFC 7541 C.1: 10 with a 5-bit prefix, 1337 with 5, 42 with 8.
        let mut p = 0;
        assert_eq!(integer(&[0x0a], &mut p, 5), Ok(10));
        p = 0;
        assert_eq!(integer(&[0x1f, 0x9a, 0x0a], &mut p, 5), Ok(1337));
        assert_eq!(p, 3);
        p = 0;
        assert_eq!(integer(&[0x2a], &mut p, 8), Ok(42));
        p = 0;
        assert_eq!(
            integer(&[0x1f, 0x9a], &mut p, 5),
            Err(HpackError::Truncated)
        );
        p = 0;
        assert_eq!(
            integer(&[0x1f, 0xff, 0xff, 0xff, 0xff, 0x7f], &mut p, 5),
            Err(HpackError::Integer)
        );
    }

    #[test]
    fn malformed_blocks() {
        let mut d = Decoder::<256>::new();
        let nop = |_: &[u8], _: &[u8]| {};
        assert_eq!(d.decode(&[0x80], nop), Err(HpackError::Index));
        assert_eq!(d.decode(&[0xbe], nop), Err(HpackError::Index)); // 62, empty table
        assert_eq!(
            d.decode(&[0x3f, 0xe2, 0x01], nop),
            Err(HpackError::TableSizeUpdate)
        ); // 257 > 256
        assert_eq!(
            d.decode(&[0x82, 0x20], nop),
            Err(HpackError::TableSizeUpdate)
        ); // after a field
        assert_eq!(
            d.decode(&[0x40, 0x05, b'a'], nop),
            Err(HpackError::Truncated)
        );
        assert_eq!(d.decode(&[0x40], nop), Err(HpackError::Truncated));
        assert_eq!(
            d.decode(&[0x20, 0x3f, 0xe1, 0x01], nop),
            Ok(Block::default())
        );
    }

    #[test]
    fn oversize_field_empties_the_table() {
        let mut d = Decoder::<64>::new();
        let mut n = 0;
        d.decode(b"\x40\x01a\x01b", |_, _| n += 1).unwrap();
        assert_eq!((n, d.table().len()), (1, 1));
        let mut block = [0u8; 80];
        block[..3].copy_from_slice(&[0x40, 0x01, b'x']);
        block[3] = 70; // value of 70 bytes
        let r = d.decode(&block[..74], |_, _| n += 1).unwrap();
        assert_eq!(
            r,
            Block {
                fields: 0,
                oversize: 1
            }
        );
        assert!(d.table().is_empty());
        assert_eq!(d.table().max_size(), 64);
    }
}
