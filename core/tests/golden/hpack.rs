//! RFC 7541 Appendix C, every example: C.2 (one representation each), C.3
//! and C.4 (three requests on one table, without and with Huffman), C.5 and
//! C.6 (three responses on a 256-byte table, with evictions), the fields
//! and the dynamic table (entries newest first, and size) after each block.
//! (Header blocks are decoded whole; the connection tests split the frames
//! that carry them at every byte.)

use metronome_core::h2::hpack::{huffman, Decoder, DynamicTable};

fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}

type Fields = Vec<(String, String)>;
/// Table entries, newest first: name, value, RFC size.
type Entries<'a> = &'a [(&'a str, &'a str, usize)];

fn decode<const N: usize>(dec: &mut Decoder<N>, block: &[u8]) -> Fields {
    let mut out = Vec::new();
    let r = dec
        .decode(block, |n, v| {
            out.push((
                String::from_utf8(n.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            ))
        })
        .unwrap();
    assert_eq!(r.oversize, 0);
    assert_eq!(r.fields, out.len());
    out
}

fn table<const N: usize>(t: &DynamicTable<N>) -> Vec<(String, String, usize)> {
    (0..t.len())
        .map(|i| {
            let (n, v) = t.get(i).unwrap();
            (
                String::from_utf8(n.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
                n.len() + v.len() + 32,
            )
        })
        .collect()
}

fn f(list: &[(&str, &str)]) -> Fields {
    list.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

fn t(list: &[(&str, &str, usize)]) -> Vec<(String, String, usize)> {
    list.iter()
        .map(|(n, v, s)| (n.to_string(), v.to_string(), *s))
        .collect()
}

#[test]
fn c2_representations() {
    let cases: [(&str, (&str, &str), Entries); 4] = [
        (
            "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
            ("custom-key", "custom-header"),
            &[("custom-key", "custom-header", 55)],
        ),
        (
            "040c 2f73 616d 706c 652f 7061 7468",
            (":path", "/sample/path"),
            &[],
        ),
        (
            "1008 7061 7373 776f 7264 0673 6563 7265 74",
            ("password", "secret"),
            &[],
        ),
        ("82", (":method", "GET"), &[]),
    ];
    for (block, field, entries) in cases {
        let mut dec = Decoder::<4096>::new();
        assert_eq!(decode(&mut dec, &hex(block)), f(&[field]), "{block}");
        assert_eq!(table(dec.table()), t(entries));
        assert_eq!(
            dec.table().size(),
            entries.iter().map(|e| e.2).sum::<usize>()
        );
    }
}

const REQ1: [(&str, &str); 4] = [
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
];
const REQ2: [(&str, &str); 5] = [
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
    ("cache-control", "no-cache"),
];
const REQ3: [(&str, &str); 5] = [
    (":method", "GET"),
    (":scheme", "https"),
    (":path", "/index.html"),
    (":authority", "www.example.com"),
    ("custom-key", "custom-value"),
];
const REQ_TABLES: [&[(&str, &str, usize)]; 3] = [
    &[(":authority", "www.example.com", 57)],
    &[
        ("cache-control", "no-cache", 53),
        (":authority", "www.example.com", 57),
    ],
    &[
        ("custom-key", "custom-value", 54),
        ("cache-control", "no-cache", 53),
        (":authority", "www.example.com", 57),
    ],
];

const DATE1: &str = "Mon, 21 Oct 2013 20:13:21 GMT";
const DATE2: &str = "Mon, 21 Oct 2013 20:13:22 GMT";
const COOKIE: &str = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";
const RESP1: [(&str, &str); 4] = [
    (":status", "302"),
    ("cache-control", "private"),
    ("date", DATE1),
    ("location", "https://www.example.com"),
];
const RESP2: [(&str, &str); 4] = [
    (":status", "307"),
    ("cache-control", "private"),
    ("date", DATE1),
    ("location", "https://www.example.com"),
];
const RESP3: [(&str, &str); 6] = [
    (":status", "200"),
    ("cache-control", "private"),
    ("date", DATE2),
    ("location", "https://www.example.com"),
    ("content-encoding", "gzip"),
    ("set-cookie", COOKIE),
];
const RESP_TABLES: [&[(&str, &str, usize)]; 3] = [
    &[
        ("location", "https://www.example.com", 63),
        ("date", DATE1, 65),
        ("cache-control", "private", 52),
        (":status", "302", 42),
    ],
    &[
        (":status", "307", 42),
        ("location", "https://www.example.com", 63),
        ("date", DATE1, 65),
        ("cache-control", "private", 52),
    ],
    &[
        ("set-cookie", COOKIE, 98),
        ("content-encoding", "gzip", 52),
        ("date", DATE2, 65),
    ],
];

fn chain<const N: usize>(
    blocks: [&str; 3],
    lists: [&[(&str, &str)]; 3],
    tables: [&[(&str, &str, usize)]; 3],
) {
    let mut dec = Decoder::<N>::new();
    for i in 0..3 {
        assert_eq!(decode(&mut dec, &hex(blocks[i])), f(lists[i]), "block {i}");
        assert_eq!(table(dec.table()), t(tables[i]), "table after block {i}");
        assert_eq!(
            dec.table().size(),
            tables[i].iter().map(|e| e.2).sum::<usize>()
        );
    }
}

#[test]
fn c3_requests_without_huffman() {
    chain::<4096>(
        [
            "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
            "8286 84be 5808 6e6f 2d63 6163 6865",
            "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
        ],
        [&REQ1, &REQ2, &REQ3],
        REQ_TABLES,
    );
}

#[test]
fn c4_requests_with_huffman() {
    chain::<4096>(
        [
            "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
            "8286 84be 5886 a8eb 1064 9cbf",
            "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
        ],
        [&REQ1, &REQ2, &REQ3],
        REQ_TABLES,
    );
}

#[test]
fn c5_responses_without_huffman() {
    // The examples' SETTINGS_HEADER_TABLE_SIZE is 256: a Decoder<256>.
    chain::<256>(
        [
            "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32
             3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
            "4803 3330 37c1 c0bf",
            "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970
             7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61
             6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31",
        ],
        [&RESP1, &RESP2, &RESP3],
        RESP_TABLES,
    );
}

#[test]
fn c6_responses_with_huffman() {
    chain::<256>(
        [
            "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad
             1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
            "4883 640e ffc1 c0bf",
            "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2
             e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
        ],
        [&RESP1, &RESP2, &RESP3],
        RESP_TABLES,
    );
}

#[test]
fn c6_on_a_larger_table_keeps_more() {
    // The same responses on the default 4096-byte table: nothing is
    // evicted, nine entries remain (a decoder's table size is what the
    // client advertised, not what the examples assume).
    let mut dec = Decoder::<4096>::new();
    for b in [
        "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
        "4883 640e ffc1 c0bf",
    ] {
        decode(&mut dec, &hex(b));
    }
    assert_eq!(dec.table().len(), 5);
    assert_eq!(dec.table().size(), 222 + 42);
}

#[test]
fn huffman_strings_of_appendix_c() {
    let cases = [
        ("f1e3 c2e5 f23a 6ba0 ab90 f4ff", "www.example.com"),
        ("a8eb 1064 9cbf", "no-cache"),
        ("25a8 49e9 5ba9 7d7f", "custom-key"),
        ("25a8 49e9 5bb8 e8b4 bf", "custom-value"),
        ("6402", "302"),
        ("aec3 771a 4b", "private"),
        (
            "d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff",
            DATE1,
        ),
        (
            "9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3",
            "https://www.example.com",
        ),
        ("640e ff", "307"),
        ("9bd9 ab", "gzip"),
    ];
    for (coded, plain) in cases {
        let mut out = [0u8; 64];
        let n = huffman::decode(&hex(coded), &mut out).unwrap();
        assert_eq!(&out[..n], plain.as_bytes());
        let mut back = [0u8; 64];
        let m = huffman::encode(plain.as_bytes(), &mut back).unwrap();
        assert_eq!(back[..m], hex(coded)[..]);
    }
}
