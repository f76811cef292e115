//! What users of other tools type first (issue 41 item 5): `--rps` and
//! `--qps` as `--rate`, and the shell completions and man pages generated
//! from the CLI's own definition.

use std::process::{Command, Stdio};

use crate::common::{metronome, plain, run_json, server};

/// `--rps 40` and `--qps 40` offer 40 requests per second, as `--rate 40`.
#[test]
fn rps_and_qps_are_the_rate() {
    let srv = server(plain(std::time::Duration::ZERO));
    for flag in ["--rps", "--qps", "--rate"] {
        let r = run_json(srv.addr(), "/", "std", &[flag, "40", "-d", "500ms"], 0);
        assert_eq!(r.offered_rps, 40.0, "{flag}");
        assert_eq!(r.requests.scheduled, 20, "{flag}");
    }
    srv.stop();
    let help = metronome(&["run", "--help"]);
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains("--rps") && text.contains("--qps"), "{text}");
}

/// Every shell's script is generated and names the run's flags; bash's
/// parses (`bash -n`); a shell clap does not know is a usage error.
#[test]
fn completions_for_every_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = metronome(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = String::from_utf8(out.stdout).expect("UTF-8");
        for word in ["rps", "count", "serve", "completions"] {
            assert!(script.contains(word), "{shell}: no {word}");
        }
    }
    let script = metronome(&["completions", "bash"]).stdout;
    let mut bash = Command::new("bash")
        .args(["-n", "/dev/stdin"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash");
    std::io::Write::write_all(&mut bash.stdin.take().unwrap(), &script).unwrap();
    let done = bash.wait_with_output().unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let bad = metronome(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
}

/// `metronome man` renders with groff without a warning, and holds the
/// run's flags; `--out-dir` writes one page per command.
#[test]
fn man_pages_render() {
    let page = metronome(&["man"]);
    assert_eq!(page.status.code(), Some(0));
    let text = render(&page.stdout);
    assert!(
        text.contains("metronome") && text.contains("completions"),
        "{text}"
    );
    let dir = std::env::temp_dir().join(format!("metronome-habits-man-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = metronome(&["man", "--out-dir", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let run = std::fs::read(dir.join("metronome-run.1")).expect("metronome-run.1");
    let text = render(&run);
    for flag in ["--rps", "--count", "--rate"] {
        assert!(text.contains(flag), "no {flag} in metronome-run(1)");
    }
    for sub in ["serve", "sweep", "merge", "report", "man"] {
        assert!(dir.join(format!("metronome-{sub}.1")).is_file(), "{sub}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    let bad = metronome(&["man", "--out-dir", "/nonexistent-metronome-dir"]);
    assert_eq!(bad.status.code(), Some(2));
}

/// A roff page as groff typesets it; a groff warning fails the test.
fn render(roff: &[u8]) -> String {
    let mut groff = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-P-cbou"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("groff (apt-get install groff-base; .ci/run does)");
    std::io::Write::write_all(&mut groff.stdin.take().unwrap(), roff).unwrap();
    let out = groff.wait_with_output().unwrap();
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && warnings.trim().is_empty(),
        "groff: {warnings}"
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
