//! `deploy/ssh/run.sh` (docs/distributed.md, "ssh / pssh") run for real, with
//! stand-ins for `ssh` and `scp` that do what they would on the remote host
//! but on this machine: `ssh -n HOST COMMAND` runs COMMAND with `sh -c` (as
//! sshd hands the joined command line to the user's shell), `scp HOST:PATH
//! DEST` copies PATH. Three "hosts" send shards 0/3, 1/3, 2/3 of one run to
//! the embedded server on 127.0.0.1; the script merges their reports.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use metronome::report::Report;

/// Writes an executable shell script.
fn script(path: &Path, body: &str) {
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn ssh_recipe_runs_three_shards_and_merges_them() {
    let srv = common::server(common::plain(Duration::from_micros(200)));
    let dir = std::env::temp_dir().join(format!("metronome-ssh-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let bin = dir.join("bin");
    let remote = dir.join("remote");
    let out = dir.join("out");
    for d in [&bin, &remote, &out] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_metronome"), bin.join("metronome")).unwrap();
    let log = dir.join("ssh.log");
    script(
        &bin.join("fake-ssh"),
        &format!(
            "#!/bin/sh\n[ \"$1\" = -n ] && shift\nhost=$1; shift\n\
             echo \"$host $*\" >> '{}'\nexec sh -c \"$*\"\n",
            log.display()
        ),
    );
    script(
        &bin.join("fake-scp"),
        "#!/bin/sh\n[ \"$1\" = -q ] && shift\nexec cp \"${1#*:}\" \"$2\"\n",
    );
    let hosts = dir.join("hosts.txt");
    std::fs::write(&hosts, "# generators\ngen-a\n\ngen-b  # rack 2\ngen-c\n").unwrap();

    let url = format!("http://{}/", srv.addr());
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let run = Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/ssh/run.sh"))
        .arg(&hosts)
        .arg("--")
        .args([
            url.as_str(),
            "--rate",
            "300",
            "--duration",
            "500ms",
            "--seed",
            "7",
        ])
        .env("PATH", path)
        .env("SSH", bin.join("fake-ssh"))
        .env("SCP", bin.join("fake-scp"))
        .env("LEAD", "2")
        .env("OUT", &out)
        .env("REMOTE_DIR", &remote)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "deploy/ssh/run.sh: {}\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );

    // Each host ran its own shard, with one start instant for all.
    let log = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 3, "{log}");
    let mut starts = Vec::new();
    for (k, host) in ["gen-a", "gen-b", "gen-c"].iter().enumerate() {
        let line = lines
            .iter()
            .find(|l| l.starts_with(&format!("{host} ")))
            .unwrap_or_else(|| panic!("{host} not called: {log}"));
        assert!(line.contains(&format!("--shard {k}/3 ")), "{line}");
        let words: Vec<&str> = line.split_whitespace().collect();
        let i = words.iter().position(|w| *w == "--start-at").unwrap();
        starts.push(words[i + 1].to_string());
    }
    assert!(starts.iter().all(|s| *s == starts[0]), "{starts:?}");

    let merged: Report =
        serde_json::from_str(&std::fs::read_to_string(out.join("merged.json")).unwrap()).unwrap();
    assert_eq!(merged.shard, "merged 3");
    assert!(!merged.partial);
    // 300/s for 0.5 s, constant arrivals: 150 scheduled over the three shards.
    assert_eq!(merged.requests.scheduled, 150);
    // All three clocks started at the one instant the script chose.
    let shards: Vec<&str> = merged
        .shard_starts
        .iter()
        .map(|s| s.shard.as_str())
        .collect();
    assert_eq!(shards, ["0/3", "1/3", "2/3"]);
    assert!(merged
        .shard_starts
        .iter()
        .all(|s| s.start_unix_ns == merged.shard_starts[0].start_unix_ns
            && s.start_unix_ns % 1_000_000_000 == 0));
    common::assert_accounting(&merged);
    for k in 0..3 {
        assert!(out.join(format!("shard-{k}.json")).exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
