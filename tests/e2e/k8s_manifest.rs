//! The Kubernetes recipe of docs/distributed.md ("Kubernetes"), tested as far
//! as a machine without a cluster allows:
//!
//! - the manifests in `deploy/k8s/` parse, and have what a batch/v1 Job (and
//!   a v1 ConfigMap and PersistentVolumeClaim) must have, in the shape the
//!   recipe needs: Indexed completion, `completions == parallelism == N` of
//!   `--shard K/N`, `restartPolicy: Never`, every ConfigMap key, claim and
//!   volume the pods reference defined;
//! - every pod's command line, expanded as Kubernetes expands `$(VAR)` in
//!   `args`, is what the docs say (pod 2's and the collector's are written
//!   out there), covers shards 0..N exactly once, and is accepted by
//!   metronome's own CLI parser;
//! - the N shard commands and the collector's two commands, run as processes
//!   here against the embedded server on 127.0.0.1 (target, rate, duration
//!   and start instant replaced, `/results` a scratch directory), produce a
//!   complete, non-partial merged report, which the report container prints
//!   as JSON.

use crate::common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Parser as _;
use metronome::cli::{Cli, Command as Sub};
use metronome::report::Report;
use yaml_rust2::{Yaml, YamlLoader};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The one YAML document of `deploy/k8s/NAME`.
fn load(name: &str) -> Yaml {
    let path = root().join("deploy/k8s").join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut docs =
        YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(docs.len(), 1, "{name}: one document");
    docs.remove(0)
}

fn str_at<'a>(y: &'a Yaml, what: &str) -> &'a str {
    y.as_str()
        .unwrap_or_else(|| panic!("{what} must be a string, is {y:?}"))
}

fn list<'a>(y: &'a Yaml, what: &str) -> &'a [Yaml] {
    y.as_vec()
        .unwrap_or_else(|| panic!("{what} must be a list, is {y:?}"))
}

/// An RFC 1123 label (DNS label): what names of Jobs, containers and volumes must be.
fn assert_dns_label(name: &str, what: &str) {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    assert!(ok, "{what} {name:?} is not a DNS label");
}

/// Kubernetes' expansion of `$(VAR)` in `command` and `args`
/// (k8s.io/kubernetes third_party/forked/golang/expansion): `$(NAME)` becomes
/// the variable's value when NAME is defined and stays as written when not;
/// `$$` is one `$`; any other `$` stays.
fn expand(input: &str, env: &HashMap<String, String>) -> String {
    let mut out = String::new();
    let bytes = input.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'$' || i + 1 == bytes.len() {
            let ch = input[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
            continue;
        }
        match bytes[i + 1] {
            b'$' => {
                out.push('$');
                i += 2;
            }
            b'(' => match input[i + 2..].find(')') {
                Some(end) => {
                    let name = &input[i + 2..i + 2 + end];
                    match env.get(name) {
                        Some(v) => out.push_str(v),
                        None => out.push_str(&input[i..i + 3 + end]),
                    }
                    i += 3 + end;
                }
                None => {
                    out.push_str(&input[i..]);
                    i = bytes.len();
                }
            },
            _ => {
                out.push('$');
                i += 1;
            }
        }
    }
    out
}

#[test]
fn expansion_follows_kubernetes_rules() {
    let env = HashMap::from([("A".to_string(), "1".to_string())]);
    assert_eq!(expand("$(A)/4", &env), "1/4");
    assert_eq!(expand("x-$(A).json", &env), "x-1.json");
    assert_eq!(expand("$(B)", &env), "$(B)");
    assert_eq!(expand("$$(A)", &env), "$(A)");
    assert_eq!(expand("$A $", &env), "$A $");
}

/// The data of the ConfigMap in configmap.yaml, checked as a v1 ConfigMap.
fn configmap() -> (String, HashMap<String, String>) {
    let cm = load("configmap.yaml");
    assert_eq!(str_at(&cm["apiVersion"], "apiVersion"), "v1");
    assert_eq!(str_at(&cm["kind"], "kind"), "ConfigMap");
    let name = str_at(&cm["metadata"]["name"], "metadata.name").to_string();
    assert_dns_label(&name, "ConfigMap name");
    let data = cm["data"].as_hash().expect("ConfigMap data");
    let mut out = HashMap::new();
    for (k, v) in data {
        // ConfigMap values must be strings: `rate: 90000` would be refused.
        let key = str_at(k, "data key").to_string();
        let value = str_at(v, &format!("data.{key}")).to_string();
        out.insert(key, value);
    }
    (name, out)
}

/// The claim name of pvc.yaml, checked as a v1 PersistentVolumeClaim.
fn claim() -> String {
    let pvc = load("pvc.yaml");
    assert_eq!(str_at(&pvc["apiVersion"], "apiVersion"), "v1");
    assert_eq!(str_at(&pvc["kind"], "kind"), "PersistentVolumeClaim");
    let modes = list(&pvc["spec"]["accessModes"], "accessModes");
    assert!(
        modes.iter().any(|m| m.as_str() == Some("ReadWriteMany")),
        "the shards and the collector mount the volume at once from several nodes"
    );
    assert!(pvc["spec"]["resources"]["requests"]["storage"]
        .as_str()
        .is_some());
    str_at(&pvc["metadata"]["name"], "metadata.name").to_string()
}

/// One container of a Job's pod template, checked: its environment resolved
/// (ConfigMap keys from `cm`, the completion index as `index`) and its
/// command line expanded.
fn container_command(
    c: &Yaml,
    cm: &(String, HashMap<String, String>),
    index: Option<u32>,
    volumes: &[String],
) -> Vec<String> {
    let name = str_at(&c["name"], "container name");
    assert_dns_label(name, "container name");
    assert!(c["image"].as_str().is_some(), "{name}: image");
    let mut env = HashMap::new();
    if let Some(vars) = c["env"].as_vec() {
        for var in vars {
            let key = str_at(&var["name"], "env name").to_string();
            let from = &var["valueFrom"];
            let value = if let Some(v) = var["value"].as_str() {
                v.to_string()
            } else if !from["configMapKeyRef"].is_badvalue() {
                let r = &from["configMapKeyRef"];
                assert_eq!(str_at(&r["name"], "configMapKeyRef.name"), cm.0, "{key}");
                let k = str_at(&r["key"], "configMapKeyRef.key");
                cm.1.get(k)
                    .unwrap_or_else(|| panic!("{key}: the ConfigMap has no key {k}"))
                    .clone()
            } else {
                let path = str_at(&from["fieldRef"]["fieldPath"], "fieldRef.fieldPath");
                assert_eq!(
                    path, "metadata.annotations['batch.kubernetes.io/job-completion-index']",
                    "{key}: the only field the recipe reads is the completion index"
                );
                assert_eq!(key, "JOB_COMPLETION_INDEX");
                index
                    .expect("the completion index exists in Indexed Jobs only")
                    .to_string()
            };
            env.insert(key, value);
        }
    }
    if index.is_some() {
        // The Job controller adds it when the manifest does not.
        env.entry("JOB_COMPLETION_INDEX".into())
            .or_insert_with(|| index.unwrap().to_string());
    }
    if let Some(mounts) = c["volumeMounts"].as_vec() {
        for m in mounts {
            let v = str_at(&m["name"], "volumeMount name");
            assert!(volumes.iter().any(|x| x == v), "{name}: no volume {v}");
            assert!(str_at(&m["mountPath"], "mountPath").starts_with('/'));
        }
    }
    let mut cmd: Vec<String> = Vec::new();
    for part in ["command", "args"] {
        if let Some(items) = c[part].as_vec() {
            for item in items {
                let s = str_at(item, part);
                cmd.push(expand(s, &env));
            }
        }
    }
    for word in &cmd {
        assert!(
            !word.contains("$("),
            "{name}: {word} has an undefined variable"
        );
    }
    cmd
}

/// The pod spec of a Job manifest, checked as batch/v1; returns (the Job,
/// its volume names).
fn job(name: &str, claim_name: &str) -> (Yaml, Vec<String>) {
    let job = load(name);
    assert_eq!(str_at(&job["apiVersion"], "apiVersion"), "batch/v1");
    assert_eq!(str_at(&job["kind"], "kind"), "Job");
    assert_dns_label(
        str_at(&job["metadata"]["name"], "metadata.name"),
        "Job name",
    );
    let pod = &job["spec"]["template"]["spec"];
    let restart = str_at(&pod["restartPolicy"], "restartPolicy");
    assert_eq!(
        restart, "Never",
        "{name}: a restarted shard would start late"
    );
    assert!(!list(&pod["containers"], "containers").is_empty());
    let mut volumes = Vec::new();
    for v in list(&pod["volumes"], "volumes") {
        let vname = str_at(&v["name"], "volume name").to_string();
        assert_dns_label(&vname, "volume name");
        assert_eq!(
            str_at(&v["persistentVolumeClaim"]["claimName"], "claimName"),
            claim_name
        );
        volumes.push(vname);
    }
    (job, volumes)
}

/// The command line written in docs/distributed.md's Kubernetes section on
/// the line that starts with `prefix`.
fn documented(prefix: &str) -> Vec<String> {
    let doc = std::fs::read_to_string(root().join("docs/distributed.md")).unwrap();
    let section = doc
        .split("\n## Kubernetes\n")
        .nth(1)
        .expect("docs/distributed.md has a Kubernetes section");
    let section = section.split("\n## ").next().unwrap();
    let line = section
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("the Kubernetes section shows `{prefix}...`"));
    line.split_whitespace().map(str::to_string).collect()
}

/// What the recipe runs: the command of every shard pod (index order) and
/// of the collector's merge and report containers.
struct Recipe {
    shards: Vec<Vec<String>>,
    merge: Vec<String>,
    report: Vec<String>,
}

fn recipe(cm: &(String, HashMap<String, String>)) -> Recipe {
    let claim_name = claim();
    let (shard_job, volumes) = job("job.yaml", &claim_name);
    let spec = &shard_job["spec"];
    assert_eq!(str_at(&spec["completionMode"], "completionMode"), "Indexed");
    let n = spec["completions"].as_i64().expect("completions") as u32;
    assert!(n >= 1);
    assert_eq!(
        spec["parallelism"].as_i64(),
        Some(i64::from(n)),
        "every shard runs at once"
    );
    assert_eq!(spec["backoffLimit"].as_i64(), Some(0));
    let containers = list(&spec["template"]["spec"]["containers"], "containers");
    assert_eq!(containers.len(), 1);
    let shards: Vec<Vec<String>> = (0..n)
        .map(|k| container_command(&containers[0], cm, Some(k), &volumes))
        .collect();

    let (merge_job, volumes) = job("merge-job.yaml", &claim_name);
    let pod = &merge_job["spec"]["template"]["spec"];
    let inits = list(&pod["initContainers"], "initContainers");
    assert_eq!(inits.len(), 1);
    let merge = container_command(&inits[0], cm, None, &volumes);
    let containers = list(&pod["containers"], "containers");
    assert_eq!(containers.len(), 1);
    let report = container_command(&containers[0], cm, None, &volumes);
    Recipe {
        shards,
        merge,
        report,
    }
}

/// The value after `flag` in a command line.
fn flag<'a>(cmd: &'a [String], flag: &str) -> &'a str {
    let i = cmd
        .iter()
        .position(|w| w == flag)
        .unwrap_or_else(|| panic!("{flag} in {cmd:?}"));
    &cmd[i + 1]
}

#[test]
fn manifests_build_the_documented_commands_and_the_cli_accepts_them() {
    let cm = configmap();
    let r = recipe(&cm);
    let n = r.shards.len();
    assert_eq!(n, 4, "the docs describe 4 shards");

    // Pod 2's command and the collector's, word for word as documented.
    assert_eq!(r.shards[2], documented("metronome run "));
    assert_eq!(r.merge, documented("metronome merge "));
    assert_eq!(r.report, documented("metronome report /results"));

    // Shard K/N for K = 0..N, each to its own file; the collector merges
    // exactly those files.
    let mut outs = Vec::new();
    for (k, cmd) in r.shards.iter().enumerate() {
        assert_eq!(flag(cmd, "--shard"), format!("{k}/{n}"));
        assert_eq!(flag(cmd, "--start-at"), cm.1["start_at"]);
        outs.push(flag(cmd, "--out").to_string());
        // Everything but the shard and its file is the same in every pod.
        let common = |c: &[String]| -> Vec<String> {
            let mut c = c.to_vec();
            for f in ["--shard", "--out"] {
                let i = c.iter().position(|w| w == f).unwrap();
                c.drain(i..i + 2);
            }
            c
        };
        assert_eq!(common(cmd), common(&r.shards[0]), "pod {k}");
    }
    let merged_files: Vec<String> = r.merge[2..]
        .iter()
        .take_while(|w| !w.starts_with("--"))
        .cloned()
        .collect();
    assert_eq!(merged_files, outs);
    assert_eq!(r.report[2], flag(&r.merge, "--out"));

    // metronome's own parser accepts every command as the subcommand it is.
    for cmd in &r.shards {
        let cli = Cli::try_parse_from(cmd).unwrap_or_else(|e| panic!("{cmd:?}:\n{e}"));
        let Sub::Run(args) = cli.command else {
            panic!("{cmd:?} is not `run`")
        };
        assert_eq!(args.url, cm.1["target"]);
        assert_eq!(args.shard.as_deref(), Some(flag(cmd, "--shard")));
        assert_eq!(args.out.as_deref(), Some(Path::new(flag(cmd, "--out"))));
        assert_eq!(args.seed.to_string(), cm.1["seed"]);
        assert_eq!(args.rate().to_string(), cm.1["rate"]);
        assert_eq!(args.duration(), Duration::from_secs(60));
        assert!(args.quiet);
    }
    let cli = Cli::try_parse_from(&r.merge).unwrap_or_else(|e| panic!("{:?}:\n{e}", r.merge));
    let Sub::Merge(args) = cli.command else {
        panic!("the collector's init container does not merge")
    };
    assert_eq!(args.files.len(), n);
    assert!(!args.partial);
    let cli = Cli::try_parse_from(&r.report).unwrap_or_else(|e| panic!("{:?}:\n{e}", r.report));
    assert!(matches!(cli.command, Sub::Report(_)));
}

/// `t` as RFC 3339 in UTC with whole seconds, the ConfigMap's format.
fn rfc3339(t: SystemTime) -> String {
    let s = t.duration_since(UNIX_EPOCH).unwrap().as_secs();
    let (days, rem) = (s / 86_400, s % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[test]
fn rfc3339_of_known_instants() {
    assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
    let t = UNIX_EPOCH + Duration::from_secs(1_796_115_600); // 2026-12-01T09:00:00Z
    assert_eq!(rfc3339(t), "2026-12-01T09:00:00Z");
    let t = UNIX_EPOCH + Duration::from_secs(951_868_799); // leap day 2000
    assert_eq!(rfc3339(t), "2000-02-29T23:59:59Z");
}

#[test]
fn the_recipe_runs_here_against_loopback_and_merges_complete() {
    let srv = common::server(common::plain(Duration::from_micros(200)));
    let dir = std::env::temp_dir().join(format!("metronome-k8s-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();

    // The ConfigMap, pointed at this machine: a short, slow run starting at
    // the next whole second at least 1.5 s from now.
    let (name, mut data) = configmap();
    data.insert("target".into(), format!("http://{}/", srv.addr()));
    data.insert("rate".into(), "400".into());
    data.insert("duration".into(), "500ms".into());
    let start = SystemTime::now() + Duration::from_millis(2500);
    data.insert("start_at".into(), rfc3339(start));
    let r = recipe(&(name, data));
    let results = dir.to_str().unwrap();
    let local = |cmd: &[String]| -> Vec<String> {
        cmd.iter().map(|w| w.replace("/results", results)).collect()
    };

    // The pods of the Indexed Job, all at once.
    let children: Vec<_> = r
        .shards
        .iter()
        .map(|cmd| {
            let cmd = local(cmd);
            assert_eq!(cmd[0], "metronome");
            Command::new(env!("CARGO_BIN_EXE_metronome"))
                .args(&cmd[1..])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (k, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "shard {k}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // The collector: merge, then the report container's JSON on stdout.
    for (cmd, what) in [(&r.merge, "merge"), (&r.report, "report")] {
        let cmd = local(cmd);
        let out = Command::new(env!("CARGO_BIN_EXE_metronome"))
            .args(&cmd[1..])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if what == "report" {
            let printed: Report = serde_json::from_slice(&out.stdout).unwrap();
            let merged: Report =
                serde_json::from_str(&std::fs::read_to_string(dir.join("merged.json")).unwrap())
                    .unwrap();
            assert_eq!(printed.shard, merged.shard);
            assert_eq!(printed.shard, format!("merged {}", r.shards.len()));
            assert!(!printed.partial);
            // 400/s for 0.5 s, constant arrivals: 200 scheduled over the shards.
            assert_eq!(printed.requests.scheduled, 200);
            // Every shard's clock started at the ConfigMap's instant.
            let zero = start.duration_since(UNIX_EPOCH).unwrap().as_secs() * 1_000_000_000;
            let starts: Vec<(String, u64)> = printed
                .shard_starts
                .iter()
                .map(|s| (s.shard.clone(), s.start_unix_ns))
                .collect();
            let n = r.shards.len();
            let expect: Vec<(String, u64)> = (0..n).map(|k| (format!("{k}/{n}"), zero)).collect();
            assert_eq!(starts, expect);
            common::assert_accounting(&printed);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every manifest validates against the Kubernetes OpenAPI schemas (the
/// ones `kubernetes-validate` ships, for the oldest and the newest version
/// checked), strictly: an unknown or misspelt field is an error. `.ci/run`
/// installs the tool; elsewhere the test says it skipped.
#[test]
fn manifests_validate_against_the_kubernetes_schemas() {
    let probe = Command::new("python3")
        .args(["-m", "kubernetes_validate", "--version"])
        .output();
    if !probe.map(|o| o.status.success()).unwrap_or(false) {
        assert!(
            std::env::var_os("CI").is_none(),
            "kubernetes-validate is missing on CI: .ci/run installs it with pip"
        );
        eprintln!("SKIP: kubernetes-validate is not installed (pip install kubernetes-validate)");
        return;
    }
    let dir = root().join("deploy/k8s");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 4, "{files:?}");
    // The oldest schemas it ships (Indexed Jobs are stable since 1.24) and the newest.
    for version in ["1.25", "1.37"] {
        let out = Command::new("python3")
            .args([
                "-m",
                "kubernetes_validate",
                "--strict",
                "--no-warn",
                "-k",
                version,
            ])
            .args(&files)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "Kubernetes {version}:\n{text}");
        assert_eq!(text.matches(" passed ").count(), files.len(), "{text}");
    }
}
