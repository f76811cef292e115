//! `include/metronome.h` is what cbindgen generates from `src/lib.rs` today:
//! regenerate it and compare byte for byte. `METRONOME_BLESS=1` rewrites the
//! checked-in header instead of failing.

use std::path::Path;

#[test]
fn checked_in_header_is_generated_from_the_source() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("the header is UTF-8");
    let path = dir.join("include/metronome.h");
    if std::env::var_os("METRONOME_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write include/metronome.h");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "core/capi/include/metronome.h is out of date with src/lib.rs: run \
         `METRONOME_BLESS=1 cargo test -p metronome-capi --test header` and commit it"
    );
}
