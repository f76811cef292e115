//! HPACK's indexing tables (RFC 7541 section 2.3): the static table of 61
//! entries and a dynamic table in a fixed buffer.
//!
//! # The dynamic table's cost, and its bound
//! [`DynamicTable<N>`] keeps its entries in one `[u8; N]`, oldest first,
//! each as an 8-byte header (name and value lengths) followed by the name
//! and the value. RFC 7541 charges every entry its name, its value and 32
//! bytes, and keeps the sum at or under the maximum size the decoder
//! allows (the `SETTINGS_HEADER_TABLE_SIZE` the client advertises). Since
//! 8 < 32, any set of entries the RFC allows within a maximum of `N` fits in
//! `N` bytes: the table never needs more memory than `N`, never allocates,
//! and a server cannot make it grow. Inserting evicts the oldest entries
//! first (as the RFC says) and, when the free space is split between both
//! ends of the buffer, moves the live entries to the front once (at most
//! `N` bytes copied). A lookup walks the entries from the oldest: at most
//! `N / 32` steps (128 for the default 4096).

use super::HpackError;

/// RFC 7541 Appendix A, entries 1 to 61 (index 0 here is entry 1).
pub const STATIC_TABLE: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// What RFC 7541 charges an entry beyond its name and value.
pub const ENTRY_OVERHEAD: usize = 32;

/// Bytes this implementation spends per entry beyond its name and value
/// (two `u32` lengths).
const HEADER: usize = 8;

/// The dynamic table in a fixed `[u8; N]`; see the [module docs](self).
/// `N` is both the memory it takes and the largest maximum size a
/// [`Decoder`](super::Decoder) built on it accepts.
///
/// ```
/// use metronome_core::h2::hpack::DynamicTable;
/// let mut t = DynamicTable::<128>::new();
/// t.insert(b"custom-key", b"custom-header");
/// assert_eq!((t.len(), t.size()), (1, 55));
/// t.insert(b"a-much-longer-name", b"and-a-longer-value-too-for-this");
/// // 55 + 81 > 128: the first entry was evicted.
/// assert_eq!((t.len(), t.size()), (1, 81));
/// assert_eq!(t.get(0), Some((&b"a-much-longer-name"[..], &b"and-a-longer-value-too-for-this"[..])));
/// ```
#[derive(Clone, Debug)]
pub struct DynamicTable<const N: usize> {
    buf: [u8; N],
    /// Live entries are `buf[start..end]`, oldest first.
    start: usize,
    end: usize,
    /// Number of entries.
    count: usize,
    /// The RFC size: the sum of name + value + 32 over the entries.
    size: usize,
    /// The current maximum size (at most `N`).
    max_size: usize,
}

impl<const N: usize> Default for DynamicTable<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> DynamicTable<N> {
    /// An empty table whose maximum size is `N`.
    pub const fn new() -> Self {
        Self {
            buf: [0; N],
            start: 0,
            end: 0,
            count: 0,
            size: 0,
            max_size: N,
        }
    }

    /// Number of entries.
    pub const fn len(&self) -> usize {
        self.count
    }

    /// Whether the table holds no entry.
    pub const fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The table's size as RFC 7541 section 4.1 counts it.
    pub const fn size(&self) -> usize {
        self.size
    }

    /// The current maximum size.
    pub const fn max_size(&self) -> usize {
        self.max_size
    }

    /// Sets the maximum size (a dynamic table size update), evicting the
    /// oldest entries until the table fits.
    ///
    /// # Errors
    /// [`HpackError::TableSizeUpdate`] when `max` exceeds `N`.
    pub fn set_max_size(&mut self, max: usize) -> Result<(), HpackError> {
        if max > N {
            return Err(HpackError::TableSizeUpdate);
        }
        self.max_size = max;
        while self.size > max {
            self.evict();
        }
        Ok(())
    }

    fn lengths(&self, at: usize) -> (usize, usize) {
        let b = &self.buf[at..at + HEADER];
        let name = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
        let value = u32::from_le_bytes([b[4], b[5], b[6], b[7]]) as usize;
        (name, value)
    }

    fn evict(&mut self) {
        if self.count == 0 {
            return;
        }
        let (name, value) = self.lengths(self.start);
        self.start += HEADER + name + value;
        self.size -= name + value + ENTRY_OVERHEAD;
        self.count -= 1;
        if self.count == 0 {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Removes every entry (what inserting an entry larger than the
    /// maximum size does).
    pub fn clear(&mut self) {
        while self.count > 0 {
            self.evict();
        }
    }

    /// Adds an entry as the newest, evicting as RFC 7541 section 4.4 says
    /// (an entry larger than the maximum size empties the table and is not
    /// added).
    pub fn insert(&mut self, name: &[u8], value: &[u8]) {
        let charge = name.len() + value.len() + ENTRY_OVERHEAD;
        if charge > self.max_size {
            self.clear();
            return;
        }
        while self.size + charge > self.max_size {
            self.evict();
        }
        let need = HEADER + name.len() + value.len();
        if self.end + need > N {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let at = self.end;
        self.buf[at..at + 4].copy_from_slice(&(name.len() as u32).to_le_bytes());
        self.buf[at + 4..at + 8].copy_from_slice(&(value.len() as u32).to_le_bytes());
        self.buf[at + HEADER..at + HEADER + name.len()].copy_from_slice(name);
        self.buf[at + HEADER + name.len()..at + need].copy_from_slice(value);
        self.end += need;
        self.count += 1;
        self.size += charge;
    }

    /// Entry `i`, the newest being 0 (HPACK index `62 + i`).
    pub fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        if i >= self.count {
            return None;
        }
        let mut at = self.start;
        for _ in 0..self.count - 1 - i {
            let (name, value) = self.lengths(at);
            at += HEADER + name + value;
        }
        let (name, value) = self.lengths(at);
        let n = at + HEADER;
        Some((
            &self.buf[n..n + name],
            &self.buf[n + name..n + name + value],
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_table_ends() {
        assert_eq!(STATIC_TABLE[0].0, b":authority");
        assert_eq!(STATIC_TABLE[60].0, b"www-authenticate");
    }

    #[test]
    fn wraps_by_compaction_and_keeps_order() {
        let mut t = DynamicTable::<100>::new();
        // Each entry charges 2 + 2 + 32 = 36, stores 12: two fit in 100.
        let names: [&[u8]; 6] = [b"aa", b"bb", b"cc", b"dd", b"ee", b"ff"];
        for (k, n) in names.iter().enumerate() {
            t.insert(n, b"vv");
            assert!(t.size() <= 100);
            assert_eq!(t.get(0).unwrap().0, *n);
            if k > 0 {
                assert_eq!(t.get(1).unwrap().0, names[k - 1]);
            }
            assert_eq!(t.len(), (k + 1).min(2));
        }
        assert_eq!(t.get(2), None);
    }

    #[test]
    fn max_size_updates() {
        let mut t = DynamicTable::<256>::new();
        t.insert(b"one", b"1");
        t.insert(b"two", b"2");
        assert_eq!(t.size(), 72);
        t.set_max_size(40).unwrap();
        assert_eq!((t.len(), t.get(0).unwrap().0), (1, &b"two"[..]));
        t.set_max_size(0).unwrap();
        assert!(t.is_empty());
        assert_eq!(t.set_max_size(257), Err(HpackError::TableSizeUpdate));
        t.set_max_size(256).unwrap();
        // An entry larger than the table empties it and is not added.
        t.insert(b"x", b"y");
        t.insert(&[b'n'; 200], &[b'v'; 100]);
        assert!(t.is_empty());
    }
}
