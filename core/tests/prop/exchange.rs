//! Property test of [`Exchange`], the response reader both engines drive
//! (the fuzz targets in `fuzz/` run the same check coverage-guided): on
//! arbitrary bytes, and on valid responses with random bytes flipped, it
//! never panics, never consumes more than it was given, and gives the same
//! result however the bytes are split into reads.

use crate::split_drive::drive;
use proptest::prelude::*;

/// The head limit of every drive here.
const MAX_HEAD: usize = 512;

const VALID: &[&[u8]] = &[
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n\
      30\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n\r\ne\r\ndata: [DONE]\n\n\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]\n\n",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 429 Busy\r\nContent-Length: 2\r\n\r\nno",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_any_split_same_result(
        wire in prop::collection::vec(any::<u8>(), 0..400),
        cuts in prop::collection::vec(1usize..40, 0..6),
        stream in any::<bool>(),
        head in any::<bool>(),
    ) {
        prop_assert_eq!(
            drive(stream, head, MAX_HEAD, &wire, &[]),
            drive(stream, head, MAX_HEAD, &wire, &cuts)
        );
    }

    #[test]
    fn mutated_responses_any_split_same_result(
        which in 0..VALID.len(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        cuts in prop::collection::vec(1usize..40, 0..6),
        stream in any::<bool>(),
    ) {
        let mut wire = VALID[which].to_vec();
        for (at, byte) in flips {
            let i = at.index(wire.len());
            wire[i] = byte;
        }
        prop_assert_eq!(
            drive(stream, false, MAX_HEAD, &wire, &[]),
            drive(stream, false, MAX_HEAD, &wire, &cuts)
        );
    }
}

/// The inputs the fuzzer found (kept as its seeds): a verdict that depended
/// on how the bytes were split into reads. Each file is the fuzz target's
/// input: a flags byte, a cut count, the cuts, then the response.
#[test]
fn fuzzer_findings_stay_fixed() {
    for input in [
        &include_bytes!("../../../fuzz/seeds/exchange/regression_tls_sniff_split")[..],
        &include_bytes!("../../../fuzz/seeds/exchange/regression_head_limit_split")[..],
    ] {
        let flags = input[0];
        let ncuts = usize::from(input[1] % 8).min(input.len() - 2);
        let (cuts, wire) = input[2..].split_at(ncuts);
        let cuts: Vec<usize> = cuts.iter().map(|&c| usize::from(c)).collect();
        let (stream, head) = (flags & 1 != 0, flags & 2 != 0);
        let max_head = 64 + usize::from(flags >> 2) * 256;
        assert_eq!(
            drive(stream, head, max_head, wire, &[]),
            drive(stream, head, max_head, wire, &cuts),
            "{wire:?}"
        );
    }
}
