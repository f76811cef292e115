//! The best mode's provided-buffer ring.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::types;

/// Bytes per provided buffer of the best mode's buffer ring.
pub(crate) const PROVIDED_BUF: usize = 2048;
/// Buffer group id of that ring.
pub(crate) const BGID: u16 = 0;

/// A provided-buffer ring (`io_uring_register_buf_ring`): `entries` slots
/// in a page-aligned allocation, and as many buffers of [`PROVIDED_BUF`]
/// bytes. A buffer handed back is written into the slot at the local
/// tail; `publish` makes all of them visible to the kernel in one release
/// store per loop iteration.
pub(crate) struct BufRing {
    pub(crate) ring: *mut types::BufRingEntry,
    pub(crate) ring_layout: Layout,
    pub(crate) bufs: *mut u8,
    pub(crate) bufs_layout: Layout,
    pub(crate) entries: u16,
    /// Slots before it are filled; the kernel sees up to the last publish.
    pub(crate) tail: u16,
}

impl BufRing {
    pub(crate) fn new(entries: u16) -> Result<Self, String> {
        if !entries.is_power_of_two() {
            return Err(format!(
                "buffer ring of {entries} entries: not a power of two"
            ));
        }
        let n = usize::from(entries);
        let ring_layout =
            Layout::from_size_align(n * std::mem::size_of::<types::BufRingEntry>(), 4096)
                .map_err(|e| format!("buffer ring layout: {e}"))?;
        let bufs_layout = Layout::from_size_align(n * PROVIDED_BUF, 64)
            .map_err(|e| format!("buffer layout: {e}"))?;
        let mut this = Self {
            // SAFETY: the layout has a non-zero size (entries >= 1).
            ring: unsafe { alloc_zeroed(ring_layout) }.cast(),
            ring_layout,
            // SAFETY: the layout has a non-zero size (entries >= 1).
            bufs: unsafe { alloc_zeroed(bufs_layout) },
            bufs_layout,
            entries,
            tail: 0,
        };
        if this.ring.is_null() || this.bufs.is_null() {
            return Err("out of memory for the buffer ring".into());
        }
        for bid in 0..entries {
            this.give(bid);
        }
        this.publish();
        Ok(this)
    }

    /// Hands buffer `bid` (back) to the kernel, visible at the next publish.
    pub(crate) fn give(&mut self, bid: u16) {
        let slot = usize::from(self.tail & (self.entries - 1));
        // SAFETY: `slot < entries`, inside the ring allocation. There are
        // exactly `entries` buffers and each is in the ring at most once
        // (it is given back only after the kernel took it), so the slot at
        // the local tail is one the kernel has consumed and does not read.
        // The setters write addr, len and bid only, never the `resv` field
        // that slot 0 shares with the published tail.
        let entry = unsafe { &mut *self.ring.add(slot) };
        entry.set_addr(self.bufs as u64 + u64::from(bid) * PROVIDED_BUF as u64);
        entry.set_len(PROVIDED_BUF as u32);
        entry.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    /// Publishes every slot written by `give` since the last publish.
    pub(crate) fn publish(&self) {
        // SAFETY: `ring` is the first entry of the live ring allocation;
        // `tail` only computes the address of its `resv` field.
        let tail = unsafe { types::BufRingEntry::tail(self.ring) }.cast_mut();
        // SAFETY: that field is a naturally aligned u16 inside the
        // allocation; the kernel only loads it (acquire) and this thread
        // only writes it here, so an atomic view is sound. The release
        // store orders the slot writes before it.
        unsafe { AtomicU16::from_ptr(tail) }.store(self.tail, Ordering::Release);
    }

    /// The first `len` bytes of buffer `bid`, as a completion reported.
    pub(crate) fn buffer(&self, bid: u16, len: usize) -> Option<&[u8]> {
        if bid >= self.entries || len > PROVIDED_BUF {
            return None;
        }
        // SAFETY: in bounds (checked above). The kernel handed buffer
        // `bid` to the completion being handled and does not write it
        // again until `give` returns it, which the caller does only after
        // it has finished with this slice (the borrow of `self` ends first).
        Some(unsafe {
            std::slice::from_raw_parts(self.bufs.add(usize::from(bid) * PROVIDED_BUF), len)
        })
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: each non-null pointer came from `alloc_zeroed` with the
        // layout stored beside it. The owner drops this only after the
        // ring it was registered with is gone and no recv can write a
        // buffer (otherwise it is leaked with `mem::forget`).
        unsafe {
            if !self.ring.is_null() {
                dealloc(self.ring.cast(), self.ring_layout);
            }
            if !self.bufs.is_null() {
                dealloc(self.bufs, self.bufs_layout);
            }
        }
    }
}
