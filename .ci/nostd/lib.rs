//! See Cargo.toml: builds only if metronome-core needs neither std nor an
//! allocator.
#![no_std]

use metronome_core::histogram::Histogram;
use metronome_core::rng::Pcg32;
use metronome_core::sse::SseDecoder;

/// A first PCG32 output, a histogram's count and an SSE event length, so
/// the three are linked in.
#[no_mangle]
pub extern "C" fn metronome_nostd_probe() -> u64 {
    let mut h = Histogram::new();
    h.record(Pcg32::new(42, 54).next_u32().into());
    let (n, _) = SseDecoder::new().feed(b"data: [DONE]\n\n");
    h.count() + n as u64
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
