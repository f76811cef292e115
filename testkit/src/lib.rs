//! Test-only helpers of the metronome workspace (a dev-dependency, never
//! published): the counting global allocator the zero-allocation tests
//! share (`tests/zero_alloc_loop.rs`, `tests/zero_alloc_h2.rs`,
//! `core/tests/samples_alloc.rs`), and on Linux the seccomp filter that
//! refuses io_uring in a child process ([`seccomp`], for the fallback test
//! `tests/e2e/fallback.rs`).
//!
//! Each of those tests is a binary of its own and declares
//! `#[global_allocator] static GLOBAL: Counting = Counting;`: the counter
//! is process-wide, so no other test may share the binary. A thread's
//! allocations count only while it has switched counting on
//! ([`count_on_this_thread`]); the tests switch it on for the threads
//! they measure (an engine's phase hook, or the test's own thread) and
//! read [`ALLOCATIONS`] after.

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
pub mod seccomp;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// The system allocator, counting the allocations (`alloc`,
/// `alloc_zeroed`, `realloc`) of the threads that switched counting on.
/// Deallocations are not counted.
pub struct Counting;

/// Allocations counted so far, by every counting thread. The tests read it
/// with `swap(0, ..)` (one run at a time) or `load`.
pub static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

/// Switches counting on (`true`) or off for the calling thread.
pub fn count_on_this_thread(on: bool) {
    COUNTING.with(|c| c.set(on));
}

/// Whether the calling thread counts (false while its thread-locals are
/// being destroyed).
fn counting() -> bool {
    COUNTING.try_with(Cell::get).unwrap_or(false)
}

// SAFETY: every method forwards to the system allocator unchanged; the
// counter is a plain atomic and the flag a const-initialised thread-local
// (no allocation, no destructor).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counting() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if counting() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counting() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }
}
