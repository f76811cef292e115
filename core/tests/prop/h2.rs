//! Mutations of the Python h2 server's bytes (`tests/data/h2/server.bin`):
//! bytes replaced, removed, inserted, the stream cut short. The client
//! connection never panics, and gives the same events, the same bytes
//! written and the same error whole as split at a random point. Random
//! header blocks never panic the HPACK decoder nor overfill its table. A
//! cheap, deterministic stand-in for the fuzz targets, run with the tests.

use metronome_core::h2::hpack::Decoder;
use metronome_core::h2::{Config, Connection};
use metronome_core::rng::Pcg32;

#[test]
fn mutated_server_bytes_split_anywhere() {
    let base = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/h2/server.bin"
    ))
    .unwrap();
    let mut rng = Pcg32::seeded(23);
    let mut failed = 0;
    for round in 0..1000u32 {
        let mut wire = base.clone();
        if round % 3 == 0 {
            wire.truncate(2000 + rng.below(19_000) as usize);
        }
        for _ in 0..1 + rng.below(6) {
            let i = rng.below(wire.len() as u64) as usize;
            match rng.below(3) {
                0 => wire[i] = rng.next_u32() as u8,
                1 => {
                    wire.remove(i);
                }
                _ => wire.insert(i, rng.next_u32() as u8),
            }
        }
        let run = |cuts: &[usize]| {
            let mut conn = Connection::<16, 4096, 32768>::new(Config::DEFAULT);
            let mut out = [0u8; 256];
            crate::h2_drive::flush(&mut conn, &mut out, &mut Vec::new());
            for _ in 0..5 {
                conn.start_request(b"\x82", true, &mut out).unwrap();
            }
            crate::h2_drive::drive(&mut conn, &wire, cuts)
        };
        let whole = run(&[]);
        failed += usize::from(whole.error.is_some());
        let cut = rng.below(wire.len() as u64) as usize;
        assert_eq!(whole, run(&[cut]), "round {round}, split at {cut}");
    }
    // Most mutations break the connection; some land in payloads.
    assert!(failed > 100 && failed < 1000, "{failed}");
}

#[test]
fn random_header_blocks() {
    let mut rng = Pcg32::seeded(7541);
    let mut dec = Decoder::<256>::new();
    for _ in 0..20_000 {
        let len = rng.below(40) as usize;
        let block: Vec<u8> = (0..len).map(|_| rng.next_u32() as u8).collect();
        if dec
            .decode(&block, |n, v| assert!(n.len() + v.len() <= 256))
            .is_err()
        {
            dec = Decoder::new();
        }
        assert!(dec.table().size() <= dec.table().max_size());
    }
}
