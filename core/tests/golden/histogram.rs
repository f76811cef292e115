//! Golden tests for `metronome_core::histogram`: hand-checked numbers and
//! byte-for-byte agreement with the `hdrhistogram` crate.

use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use metronome_core::histogram::{
    bucket_bounds, bucket_index, decode_v2, Bucket, DecodeError, EncodeError, Histogram,
    BUCKET_COUNT, V2_HEADER_LEN, V2_MAX_LEN,
};

type Hdr = hdrhistogram::Histogram<u64>;

/// The crate configured to our layout: 2 significant digits, unit 1, the
/// whole u64 range (sub_bucket_count 256, sub_bucket_half_count 128).
fn hdr_full() -> Hdr {
    Hdr::new_with_bounds(1, u64::MAX, 2).unwrap()
}

/// The crate configured as we write the V2 header (highest trackable 2^63-1).
fn hdr_i64() -> Hdr {
    Hdr::new_with_bounds(1, i64::MAX as u64, 2).unwrap()
}

/// (lower bound, count) of every non-empty bucket, ours.
fn ours_by_value(h: &Histogram) -> Vec<(u64, u64)> {
    h.buckets().map(|b| (b.lower, b.count)).collect()
}

/// (lowest equivalent value, count) of every non-empty bucket, the crate's.
/// (Lower bounds, because the crate's `highest_equivalent` of the top bucket
/// is `u64::MAX - 1`: its `next_non_equivalent` saturates at `u64::MAX`.)
fn hdr_by_value(h: &Hdr) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| {
            (
                h.lowest_equivalent(v.value_iterated_to()),
                v.count_at_value(),
            )
        })
        .collect()
}

fn encode(h: &Histogram) -> Vec<u8> {
    let mut buf = vec![0u8; V2_MAX_LEN];
    let len = h.encode_v2(&mut buf).unwrap();
    assert_eq!(len, h.encoded_len());
    buf.truncate(len);
    buf
}

fn hdr_encode(h: &Hdr) -> Vec<u8> {
    let mut out = Vec::new();
    V2Serializer::new().serialize(h, &mut out).unwrap();
    out
}

fn hdr_decode(bytes: &[u8]) -> Hdr {
    Deserializer::new().deserialize(&mut &bytes[..]).unwrap()
}

/// A deterministic spread of values over the whole range, edges included.
fn spread() -> Vec<u64> {
    let mut v = vec![0, 1, 2, 127, 128, 255, 256, 257, 1000, 1002, 1005, 2000];
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..5000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Log-uniform-ish: a random number of significant bits.
        v.push(x >> (x % 64));
    }
    for e in 0..64 {
        v.push(1u64 << e);
        v.push((1u64 << e) - 1);
    }
    v.push(i64::MAX as u64);
    v.push(u64::MAX);
    v
}

#[test]
fn hand_example_quantiles_and_mean() {
    let mut h = Histogram::new();
    for v in [1000, 1002, 1005, 2000] {
        h.record(v);
    }
    // 1002: floor(log2) = 9, shift = 2, sub = 1002 >> 2 = 250,
    // bucket [250 << 2, (251 << 2) - 1] = [1000, 1003]. Rank ceil(0.5*4) = 2.
    assert_eq!(bucket_bounds(bucket_index(1002)), (1000, 1003));
    assert_eq!(h.quantile(0.5), 1003);
    // 2000: shift 3, sub 250, bucket [2000, 2007], clamped to the max 2000.
    assert_eq!(bucket_bounds(bucket_index(2000)), (2000, 2007));
    assert_eq!(h.quantile(1.0), 2000);
    // 1005 is in [1004, 1007]: rank 3.
    assert_eq!(h.quantile(0.75), 1007);
    assert_eq!(h.quantile(0.0), 1003);
    assert_eq!(h.mean(), 1251.75);
    assert_eq!(h.sum(), 5007);
    assert_eq!((h.count(), h.min(), h.max()), (4, 1000, 2000));
    assert_eq!(
        h.buckets().collect::<Vec<_>>(),
        [
            Bucket {
                lower: 1000,
                upper: 1003,
                count: 2
            },
            Bucket {
                lower: 1004,
                upper: 1007,
                count: 1
            },
            Bucket {
                lower: 2000,
                upper: 2007,
                count: 1
            },
        ]
    );
}

#[test]
fn p7_and_p55_of_one_to_hundred() {
    let mut h = Histogram::new();
    for v in 1..=100 {
        h.record(v);
    }
    // 0.07 * 100 = 7.000000000000001 in f64: the 1e-9 keeps the rank at 7.
    assert_eq!(h.quantile(0.07), 7);
    assert_eq!(h.quantile(0.55), 55);
    assert_eq!(h.quantile(0.5), 50);
    assert_eq!(h.quantile(0.99), 99);
    assert_eq!(h.quantile(0.999), 100);
    assert_eq!(h.quantile(-1.0), 1);
    assert_eq!(h.quantile(2.0), 100);
    assert_eq!(h.quantile(f64::NAN), 1);
    assert_eq!(h.mean(), 50.5);
}

#[test]
fn empty_zero_and_max_do_not_panic() {
    let empty = Histogram::new();
    assert_eq!(empty.quantile(0.5), 0);
    assert_eq!(empty.quantile(1.0), 0);
    assert_eq!(empty.mean(), 0.0);
    assert_eq!((empty.min(), empty.max(), empty.count()), (0, 0, 0));
    assert_eq!(empty.buckets().count(), 0);
    let bytes = encode(&empty);
    assert_eq!(bytes.len(), V2_HEADER_LEN + 1);
    assert_eq!(bytes, hdr_encode(&hdr_i64()));
    assert_eq!(decode_v2(&bytes).unwrap(), empty);

    let mut h = Histogram::new();
    h.record(0);
    h.record(u64::MAX);
    assert_eq!(h.quantile(0.5), 0);
    assert_eq!(h.quantile(1.0), u64::MAX);
    assert_eq!(h.mean(), (u64::MAX / 2) as f64);
    assert_eq!(
        h.buckets().collect::<Vec<_>>(),
        [
            Bucket {
                lower: 0,
                upper: 0,
                count: 1
            },
            Bucket {
                lower: 255 << 56,
                upper: u64::MAX,
                count: 1
            },
        ]
    );
    let bytes = encode(&h);
    // Above i64::MAX: the header says u64::MAX so the Rust crate still reads it.
    assert_eq!(bytes[24..32], u64::MAX.to_be_bytes());
    assert_eq!(hdr_by_value(&hdr_decode(&bytes)), ours_by_value(&h));
    let back = decode_v2(&bytes).unwrap();
    assert_eq!(ours_by_value(&back), ours_by_value(&h));
    assert_eq!((back.min(), back.max()), (0, u64::MAX));
    let mut full = hdr_full();
    full.record(0).unwrap();
    full.record(u64::MAX).unwrap();
    assert_eq!(hdr_encode(&full), bytes);
}

#[test]
fn layout_equals_hdrhistogram_two_digits_unit_one() {
    let hdr = hdr_full();
    // sub_bucket_count 256 -> 128 counters per half bucket, 57 buckets + 1.
    assert_eq!(hdr.distinct_values(), BUCKET_COUNT);
    for v in spread() {
        let (lo, hi) = bucket_bounds(bucket_index(v));
        assert_eq!(lo, hdr.lowest_equivalent(v), "lowest of {v}");
        if v < 255 << 56 {
            assert_eq!(hi, hdr.highest_equivalent(v), "highest of {v}");
        }
    }
    for i in 0..BUCKET_COUNT {
        let (lo, hi) = bucket_bounds(i);
        assert_eq!(hdr.lowest_equivalent(hi), lo, "bucket {i}");
        if i < BUCKET_COUNT - 1 {
            assert_eq!(hdr.highest_equivalent(lo), hi, "bucket {i}");
        }
    }
    // The crate's one quirk: the top bucket's highest equivalent value
    // saturates one short (next_non_equivalent is capped at u64::MAX).
    assert_eq!(bucket_bounds(BUCKET_COUNT - 1).1, u64::MAX);
    assert_eq!(hdr.highest_equivalent(255 << 56), u64::MAX - 1);
    assert_eq!(hdr.highest_equivalent(u64::MAX), u64::MAX);
}

#[test]
fn counts_and_quantiles_agree_with_hdrhistogram() {
    let mut ours = Histogram::new();
    let mut hdr = hdr_full();
    for v in spread() {
        ours.record(v);
        hdr.record(v).unwrap();
    }
    assert_eq!(ours_by_value(&ours), hdr_by_value(&hdr));
    assert_eq!(ours.count(), hdr.len());
    // The crate ranks with ceil(q*n) and answers the bucket's highest
    // equivalent; ours clamps to the true max, which only matters at the top.
    for q in [0.01, 0.1, 0.25, 0.5, 0.9, 0.99, 0.999] {
        assert_eq!(ours.quantile(q), hdr.value_at_quantile(q), "q = {q}");
    }
}

#[test]
fn v2_bytes_equal_the_crate_serializer() {
    let mut ours = Histogram::new();
    let mut hdr = hdr_i64();
    for v in spread().into_iter().filter(|&v| v <= i64::MAX as u64) {
        ours.record(v);
        hdr.record(v).unwrap();
        ours.record_n(v % 1000, 3);
        hdr.record_n(v % 1000, 3).unwrap();
    }
    let bytes = encode(&ours);
    assert_eq!(bytes, hdr_encode(&hdr));
    // Header fields, big-endian.
    assert_eq!(bytes[0..4], [0x1c, 0x84, 0x93, 0x13]);
    assert_eq!(
        u32::from_be_bytes(bytes[4..8].try_into().unwrap()) as usize,
        bytes.len() - 40
    );
    assert_eq!(bytes[8..12], [0, 0, 0, 0]);
    assert_eq!(bytes[12..16], [0, 0, 0, 2]);
    assert_eq!(bytes[16..24], 1u64.to_be_bytes());
    assert_eq!(bytes[24..32], (i64::MAX as u64).to_be_bytes());
    assert_eq!(bytes[32..40], 1.0f64.to_be_bytes());
    // The crate reads back every count.
    assert_eq!(hdr_by_value(&hdr_decode(&bytes)), ours_by_value(&ours));
}

#[test]
fn small_encoding_by_hand() {
    let mut h = Histogram::new();
    h.record_n(0, 2);
    h.record(2);
    h.record_n(300, 200);
    let bytes = encode(&h);
    // 300 -> shift 1, sub 150, index 128 + 150 = 278. Counts: [2, 0, 1], then
    // indices 3..=277 are zero (a run of 275), then 200 at index 278.
    assert_eq!(bucket_index(300), 278);
    // zigzag(2) = 4, zigzag(0) = 0, zigzag(1) = 2, zigzag(-275) = 549 =
    // 0b100_0100101 -> [0xa5, 0x04], zigzag(200) = 400 -> [0x90, 0x03].
    assert_eq!(bytes[40..], [4, 0, 2, 0xa5, 0x04, 0x90, 0x03]);
    assert_eq!(bytes[4..8], 7u32.to_be_bytes());
}

#[test]
fn decode_reads_the_crate_output_and_round_trips() {
    let mut ours = Histogram::new();
    let mut hdr = hdr_i64();
    for v in spread().into_iter().filter(|&v| v <= i64::MAX as u64) {
        ours.record(v);
        hdr.record(v).unwrap();
    }
    let from_crate = decode_v2(&hdr_encode(&hdr)).unwrap();
    assert_eq!(ours_by_value(&from_crate), ours_by_value(&ours));
    assert_eq!(from_crate.count(), ours.count());
    // Decoded min and max are bucket bounds, so quantiles are unchanged.
    for q in [0.0, 0.1, 0.5, 0.9, 0.99, 1.0] {
        assert_eq!(from_crate.quantile(q), ours.quantile(q), "q = {q}");
    }
    // A second encode of the decoded histogram gives the same bytes.
    assert_eq!(encode(&from_crate), encode(&ours));

    // Exact round trip (min, max, sum too) when every bucket is one value wide.
    let mut small = Histogram::new();
    for v in [0u64, 3, 3, 100, 200, 255] {
        small.record(v);
    }
    assert_eq!(decode_v2(&encode(&small)).unwrap(), small);
    // Trailing bytes after the payload are ignored.
    let mut longer = encode(&small);
    longer.extend_from_slice(&[0xff; 10]);
    assert_eq!(decode_v2(&longer).unwrap(), small);
}

#[test]
fn decode_rebuckets_finer_layouts_exactly() {
    for digits in [2u8, 3, 4, 5] {
        let mut hdr = Hdr::new_with_bounds(1, 1 << 40, digits).unwrap();
        let mut ours = Histogram::new();
        for v in spread().into_iter().filter(|&v| v <= 1 << 40) {
            hdr.record(v).unwrap();
            ours.record(v);
        }
        let d = decode_v2(&hdr_encode(&hdr)).unwrap();
        assert_eq!(ours_by_value(&d), ours_by_value(&ours), "digits {digits}");
    }
}

#[test]
fn decode_rejects_coarser_layouts() {
    let mut one_digit = Hdr::new_with_bounds(1, 1 << 20, 1).unwrap();
    one_digit.record(100).unwrap(); // a counter 4 values wide at 100
    assert_eq!(
        decode_v2(&hdr_encode(&one_digit)),
        Err(DecodeError::Coarser)
    );
    // Values whose counters stay one value wide are fine.
    let mut exact = Hdr::new_with_bounds(1, 1 << 20, 1).unwrap();
    exact.record(5).unwrap();
    assert_eq!(decode_v2(&hdr_encode(&exact)).unwrap().quantile(1.0), 5);
    let mut unit_1024 = Hdr::new_with_bounds(1024, 1 << 40, 3).unwrap();
    unit_1024.record(5000).unwrap();
    assert_eq!(
        decode_v2(&hdr_encode(&unit_1024)),
        Err(DecodeError::Coarser)
    );
}

/// A header for hand-made inputs.
fn header(cookie: u32, payload: u32, offset: u32, digits: u32, low: u64, ratio: f64) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&cookie.to_be_bytes());
    b.extend_from_slice(&payload.to_be_bytes());
    b.extend_from_slice(&offset.to_be_bytes());
    b.extend_from_slice(&digits.to_be_bytes());
    b.extend_from_slice(&low.to_be_bytes());
    b.extend_from_slice(&(i64::MAX as u64).to_be_bytes());
    b.extend_from_slice(&ratio.to_be_bytes());
    b
}

#[test]
fn decode_errors_are_typed() {
    assert_eq!(decode_v2(&[]), Err(DecodeError::Truncated));
    assert_eq!(
        decode_v2(&[0x1c, 0x84, 0x93, 0x13, 0]),
        Err(DecodeError::Truncated)
    );
    let ok = header(0x1c84_9313, 1, 0, 2, 1, 1.0);
    assert_eq!(decode_v2(&ok), Err(DecodeError::Truncated)); // payload missing
    let mut one = ok.clone();
    one.push(2);
    assert_eq!(decode_v2(&one).unwrap().quantile(0.5), 0);
    // A varint that runs past the payload.
    let mut cut = header(0x1c84_9313, 1, 0, 2, 1, 1.0);
    cut.push(0x80);
    assert_eq!(decode_v2(&cut), Err(DecodeError::Truncated));
    assert_eq!(
        decode_v2(&header(0x1c84_9314, 0, 0, 2, 1, 1.0)),
        Err(DecodeError::Compressed)
    );
    assert_eq!(
        decode_v2(&header(0x1234_5678, 0, 0, 2, 1, 1.0)),
        Err(DecodeError::Cookie(0x1234_5678))
    );
    assert_eq!(
        decode_v2(&header(0x1c84_9313, 0, 5, 2, 1, 1.0)),
        Err(DecodeError::NormalizingOffset)
    );
    assert_eq!(
        decode_v2(&header(0x1c84_9313, 0, 0, 2, 1, 0.5)),
        Err(DecodeError::ConversionRatio)
    );
    assert_eq!(
        decode_v2(&header(0x1c84_9313, 0, 0, 6, 1, 1.0)),
        Err(DecodeError::Parameters)
    );
    assert_eq!(
        decode_v2(&header(0x1c84_9313, 0, 0, 2, 0, 1.0)),
        Err(DecodeError::Parameters)
    );
    // Index 7424 is past u64::MAX in our layout: a run of 7424 zeros, then 1.
    let mut far = header(0x1c84_9313, 3, 0, 2, 1, 1.0);
    far.extend_from_slice(&[0xff, 0x73, 2]); // zigzag(-7424) = 14847
    assert_eq!(decode_v2(&far), Err(DecodeError::OutOfRange));
    // A zero run of i64::MIN length must not overflow.
    let mut huge = header(0x1c84_9313, 11, 0, 2, 1, 1.0);
    huge.extend_from_slice(&[0xff; 8]);
    huge.extend_from_slice(&[0xff, 2, 2]);
    assert_eq!(decode_v2(&huge), Err(DecodeError::OutOfRange));
    // Counts that add past u64::MAX.
    let mut big = header(0x1c84_9313, 27, 0, 2, 1, 1.0);
    for _ in 0..3 {
        big.extend_from_slice(&[0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
    }
    assert_eq!(decode_v2(&big), Err(DecodeError::CountOverflow));
    // Display names the cause.
    assert_eq!(
        DecodeError::Compressed.to_string(),
        "HdrHistogram V2 input is compressed (cookie 0x1c849314): inflate it with zlib first"
    );
    assert_eq!(
        DecodeError::Cookie(0x1234_5678).to_string(),
        "not an HdrHistogram V2 encoding (cookie 0x12345678)"
    );
}

#[test]
fn encode_errors_are_typed() {
    let mut h = Histogram::new();
    h.record(1_000_000);
    let need = h.encoded_len();
    let mut short = vec![0u8; need - 1];
    assert_eq!(
        h.encode_v2(&mut short),
        Err(EncodeError::BufferTooSmall { needed: need })
    );
    let mut tiny = [0u8; 3];
    assert_eq!(
        Histogram::new().encode_v2(&mut tiny),
        Err(EncodeError::BufferTooSmall { needed: 41 })
    );
    let mut huge = Histogram::new();
    huge.record_n(5, u64::MAX);
    assert_eq!(
        huge.encode_v2(&mut vec![0u8; V2_MAX_LEN]),
        Err(EncodeError::CountTooLarge)
    );
    assert_eq!(
        EncodeError::BufferTooSmall { needed: 42 }.to_string(),
        "the buffer is too small for the HdrHistogram V2 encoding: 42 bytes needed"
    );
}

#[test]
fn record_corrected_equals_hdrhistogram() {
    let mut ours = Histogram::new();
    let mut hdr = hdr_full();
    let interval = 1_000;
    let mut x = 12345u64;
    for _ in 0..2000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let v = (x >> 33) % 2_000_000; // up to 2000 intervals
        ours.record_corrected(v, interval);
        hdr.record_correct(v, interval).unwrap();
    }
    for v in [0, 999, 1000, 1001, 1999, 2000, 2001, 3000] {
        ours.record_corrected(v, interval);
        hdr.record_correct(v, interval).unwrap();
    }
    assert_eq!(ours_by_value(&ours), hdr_by_value(&hdr));
    assert_eq!(ours.count(), hdr.len());
    // Hand check: 3500 with interval 1000 adds 2500 and 1500.
    let mut h = Histogram::new();
    h.record_corrected(3500, 1000);
    assert_eq!(
        (h.count(), h.sum(), h.min(), h.max()),
        (3, 7500, 1500, 3500)
    );
    h.record_corrected(5, 0);
    assert_eq!(h.count(), 4);
}

#[test]
fn corrected_copy_equals_hdrhistogram() {
    let mut ours = Histogram::new();
    let mut hdr = hdr_full();
    let mut x = 777u64;
    for _ in 0..3000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let v = (x >> 33) % 500_000;
        ours.record(v);
        hdr.record(v).unwrap();
    }
    // The crate loops once per synthetic value: small intervals on small data.
    let mut small = Histogram::new();
    let mut small_hdr = hdr_full();
    for v in [0u64, 1, 5, 300, 1000, 4099, 4099, 70_000] {
        small.record(v);
        small_hdr.record(v).unwrap();
    }
    for interval in [1u64, 2, 7, 129] {
        let c = small.corrected(interval);
        let hc = small_hdr.clone_correct(interval);
        assert_eq!(ours_by_value(&c), hdr_by_value(&hc), "interval {interval}");
    }
    for interval in [0u64, 1_000, 10_000, 1 << 20] {
        let c = ours.corrected(interval);
        let hc = hdr.clone_correct(interval);
        assert_eq!(ours_by_value(&c), hdr_by_value(&hc), "interval {interval}");
        assert_eq!(c.count(), hc.len(), "interval {interval}");
    }
    // The representative is the bucket's upper bound: 1002 is in [1000, 1003],
    // so the copy adds 1003 - 500 = 503 (and 1002's own count stays put).
    let mut h = Histogram::new();
    h.record(1002);
    let c = h.corrected(500);
    assert_eq!(
        ours_by_value(&c),
        [(502, 1), (1000, 1)] // 503 lies in [502, 503]
    );
    assert_eq!((c.sum(), c.min(), c.max()), (1505, 503, 1002));
}

#[test]
fn merge_is_exact() {
    let mut a = Histogram::new();
    let mut b = Histogram::new();
    let mut all = Histogram::new();
    for (i, v) in spread().into_iter().enumerate() {
        if i % 3 == 0 {
            a.record(v)
        } else {
            b.record(v)
        }
        all.record(v);
    }
    a.merge(&b);
    assert_eq!(a, all);
    let before = a.clone();
    a.merge(&Histogram::new());
    assert_eq!(a, before);
    let mut e = Histogram::new();
    e.merge(&before);
    assert_eq!(e, before);
}

#[test]
fn debug_is_short() {
    let mut h = Histogram::new();
    h.record(1);
    h.record(3);
    assert_eq!(
        format!("{h:?}"),
        "Histogram { count: 2, min: 1, max: 3, mean: 2.0, buckets: 2 }"
    );
    assert_eq!(Histogram::default(), Histogram::new());
}
