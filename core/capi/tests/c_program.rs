//! Compiles `tests/c/histogram.c` with the system C compiler (`cc`, or `$CC`)
//! against `include/metronome.h`, links it with this crate's static library,
//! runs it on values made here, and checks what it prints and writes:
//!
//! - its own hand-computed checks and error paths pass (exit 0);
//! - count, min, max, mean, exact sum, quantiles and buckets equal
//!   metronome-core's for the same values;
//! - its plain V2 bytes equal what the `hdrhistogram` crate's `V2Serializer`
//!   writes for the same values, and both its plain and compressed V2 files
//!   decode with the `hdrhistogram` crate to the same counts;
//! - what it decoded back equals core's `decode_v2` of core's own encoding;
//! - its compressed V2 bytes, base64-encoded, decode with Python's HdrHistogram
//!   (`hdrh`, PyPI `hdrhistogram`) to the same buckets and counts.
//!
//! A second test compiles the C example of README.md ("Embedding the
//! histogram") with the command the README gives and checks that it prints
//! what the README says.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use metronome_core::histogram::{bucket_index, decode_v2, Histogram, V2_MAX_LEN};

const QUANTILES: [f64; 10] = [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 1.0];

/// `target/<profile>/deps/`, where cargo writes `libmetronome_capi.a` when it
/// builds the library for this test (it copies it up to `target/<profile>/`
/// only for `cargo build`, so the copy there may be stale): the directory of
/// this test binary.
fn deps_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

/// (value, count) pairs from a fixed xorshift64 stream: values from 0 to
/// about 2^44 (ns to hours), on every scale, and now and then a count above 1.
fn inputs() -> Vec<(u64, u64)> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = vec![(0, 1), (1, 1), (127, 1), (128, 1), (255, 1), (256, 3)];
    for _ in 0..4000 {
        let r = next();
        let bits = (r % 45) as u32; // 0..=44
        let value = next() >> (64 - bits.max(1)) >> u32::from(bits == 0);
        let count = if r % 17 == 0 { 1 + next() % 1000 } else { 1 };
        out.push((value, count));
    }
    out
}

/// A bucket as (lower, upper, count).
type Triple = (u64, u64, u64);

/// `name key=value ...` and `name qX=value` lines into a map, and bucket lines
/// into a list, for one histogram name.
fn parse(stdout: &str, name: &str) -> (HashMap<String, String>, Vec<Triple>) {
    let mut fields = HashMap::new();
    let mut buckets = Vec::new();
    for line in stdout.lines() {
        let mut words = line.split(' ');
        if words.next() != Some(name) {
            continue;
        }
        let rest: Vec<&str> = words.collect();
        if rest.first() == Some(&"bucket") {
            let n: Vec<u64> = rest[1..].iter().map(|w| w.parse().unwrap()).collect();
            buckets.push((n[0], n[1], n[2]));
        } else {
            for w in rest {
                let (k, v) = w.split_once('=').expect("key=value");
                fields.insert(k.to_string(), v.to_string());
            }
        }
    }
    (fields, buckets)
}

/// The C program's view of `h` must equal core's, number for number.
fn assert_same(stdout: &str, name: &str, h: &Histogram) {
    let (f, buckets) = parse(stdout, name);
    let get = |k: &str| {
        f.get(k)
            .unwrap_or_else(|| panic!("{name}: no {k} in\n{stdout}"))
    };
    assert_eq!(get("count"), &h.count().to_string(), "{name} count");
    assert_eq!(get("min"), &h.min().to_string(), "{name} min");
    assert_eq!(get("max"), &h.max().to_string(), "{name} max");
    let mean: f64 = get("mean").parse().unwrap();
    assert_eq!(mean.to_bits(), h.mean().to_bits(), "{name} mean {mean}");
    let sum = h.sum();
    let sum_text = format!("{},{}", (sum >> 64) as u64, sum as u64);
    assert_eq!(get("sum"), &sum_text, "{name} sum");
    for q in QUANTILES {
        let key = format!("q{q:.4}");
        assert_eq!(get(&key), &h.quantile(q).to_string(), "{name} {key}");
    }
    assert_eq!(get("p99.9"), &h.quantile(0.999).to_string(), "{name} p99.9");
    let expect: Vec<Triple> = h.buckets().map(|b| (b.lower, b.upper, b.count)).collect();
    assert_eq!(buckets, expect, "{name} buckets");
}

/// Compiles `src` with `cc` (or `$CC`) as C11 against the header, links the
/// static library, and writes the program to `exe`; panics with the
/// compiler's messages when that fails.
fn compile(src: &Path, exe: &Path, flags: &[&str], libs: &[&str]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = deps_dir().join("libmetronome_capi.a");
    assert!(lib.exists(), "{} was not built", lib.display());
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(&cc)
        .arg("-std=c11")
        .args(flags)
        .arg("-I")
        .arg(dir.join("include"))
        .arg(src)
        .arg(&lib)
        .args(libs)
        .arg("-o")
        .arg(exe)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}"));
    assert!(
        out.status.success(),
        "{cc} failed on {}:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn readme_example_compiles_and_prints_what_the_readme_says() {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let readme = std::fs::read_to_string(readme).unwrap();
    let section = readme
        .split("## Embedding the histogram")
        .nth(1)
        .expect("README.md has a section \"Embedding the histogram\"");
    let code = section
        .split("```c\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the section has a ```c block");
    let shell = section
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the section has a ```sh block");
    // The link line of the README, and its promised output (the `# ` line).
    let libs: Vec<&str> = shell
        .split_whitespace()
        .filter(|w| w.starts_with("-l"))
        .collect();
    assert_eq!(
        libs,
        ["-lpthread", "-ldl", "-lm"],
        "the README's link flags"
    );
    let promised = shell
        .lines()
        .find_map(|l| l.strip_prefix("# "))
        .expect("the README shows the output");

    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("capi-readme");
    std::fs::create_dir_all(&work).unwrap();
    let src = work.join("example.c");
    std::fs::write(&src, code).unwrap();
    let exe = work.join("example");
    compile(&src, &exe, &["-Wall", "-Werror"], &libs);
    let run = Command::new(&exe).output().unwrap();
    assert!(run.status.success(), "{}", run.status);
    assert_eq!(
        String::from_utf8(run.stdout).unwrap(),
        format!("{promised}\n")
    );
}

#[test]
fn c_program_records_encodes_decodes_and_agrees_with_rust() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("capi-c");
    std::fs::create_dir_all(&work).unwrap();
    let exe = work.join("histogram");
    compile(
        &dir.join("tests/c/histogram.c"),
        &exe,
        &["-Wall", "-Wextra", "-Werror", "-pedantic", "-O1"],
        // What `rustc --print native-static-libs` lists for a std staticlib on Linux.
        &[
            "-lgcc_s",
            "-lutil",
            "-lrt",
            "-lpthread",
            "-lm",
            "-ldl",
            "-lc",
        ],
    );

    let inputs = inputs();
    let values = work.join("values.txt");
    let text: String = inputs.iter().map(|(v, n)| format!("{v} {n}\n")).collect();
    std::fs::write(&values, text).unwrap();
    let run = Command::new(&exe).arg(&values).arg(&work).output().unwrap();
    let stdout = String::from_utf8(run.stdout).unwrap();
    assert!(
        run.status.success(),
        "the C program failed ({}):\n{}{stdout}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );

    // Core on the same values.
    let mut h = Histogram::new();
    let mut hdr = hdrhistogram::Histogram::<u64>::new_with_bounds(1, i64::MAX as u64, 2).unwrap();
    for &(v, n) in &inputs {
        h.record_n(v, n);
        hdr.record_n(v, n).unwrap();
    }
    assert_eq!(
        h.count(),
        6 + 4000 + inputs.iter().map(|p| p.1 - 1).sum::<u64>()
    );
    assert_same(&stdout, "merged", &h);

    // The plain bytes: equal to core's and to the hdrhistogram crate's own.
    let plain = std::fs::read(work.join("plain.v2")).unwrap();
    let mut ours = vec![0u8; V2_MAX_LEN];
    let n = h.encode_v2(&mut ours).unwrap();
    assert_eq!(plain, ours[..n]);
    let mut theirs = Vec::new();
    V2Serializer::new().serialize(&hdr, &mut theirs).unwrap();
    assert_eq!(
        plain, theirs,
        "plain V2 bytes differ from the hdrhistogram crate's"
    );

    // Both files decode with the hdrhistogram crate to the same counts.
    for file in ["plain.v2", "compressed.v2"] {
        let bytes = std::fs::read(work.join(file)).unwrap();
        let d: hdrhistogram::Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .unwrap_or_else(|e| panic!("{file}: {e:?}"));
        assert_eq!(d.len(), h.count(), "{file}");
        for b in h.buckets() {
            assert_eq!(d.count_at(b.lower), b.count, "{file} at {}", b.lower);
        }
        assert_eq!(d, hdr, "{file}");
        for q in [0.1, 0.5, 0.9, 0.99, 0.999] {
            assert_eq!(
                bucket_index(d.value_at_quantile(q)),
                bucket_index(h.quantile(q)),
                "{file} q{q}"
            );
        }
    }

    python_hdrh_reads(&work.join("compressed.v2"), &h);

    // What C decoded from its compressed bytes is what core decodes from its plain ones.
    assert_same(&stdout, "decoded", &decode_v2(&ours[..n]).unwrap());
}

/// Python's HdrHistogram (`hdrh`) decodes the compressed file to `h`'s
/// buckets: every (highest equivalent value, count) pair and the total.
/// `.ci/run` installs it; elsewhere the check says it skipped.
fn python_hdrh_reads(file: &Path, h: &Histogram) {
    const SCRIPT: &str = r#"
import base64, sys
from hdrh.histogram import HdrHistogram
data = open(sys.argv[1], "rb").read()
h = HdrHistogram.decode(base64.b64encode(data))
print("total", h.get_total_count())
for item in h.get_recorded_iterator():
    print(item.value_iterated_to, item.count_added_in_this_iter_step)
"#;
    let probe = Command::new("python3")
        .args(["-c", "import hdrh.histogram"])
        .output();
    if !probe.map(|o| o.status.success()).unwrap_or(false) {
        assert!(
            std::env::var_os("CI").is_none(),
            "Python hdrh is missing on CI: .ci/run installs it with pip (hdrhistogram)"
        );
        eprintln!("SKIP: Python hdrh is not installed (pip install hdrhistogram)");
        return;
    }
    let out = Command::new("python3")
        .args(["-c", SCRIPT])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "hdrh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut expect = format!("total {}\n", h.count());
    for b in h.buckets() {
        expect.push_str(&format!("{} {}\n", b.upper, b.count));
    }
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        expect,
        "Python hdrh"
    );
}
