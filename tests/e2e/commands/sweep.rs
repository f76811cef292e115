//! `sweep` against slow servers: the knee found, stages run as one
//! continuous run, automatic steps placed between the probes; `--repeat`
//! summarises its runs.

use super::*;

/// A sweep (std engine, 1 s steps, JSON) against a FIFO server with a 5 ms
/// service time, which serves at most 200 req/s: the exit code and the
/// sweep, checked against the schema.
fn sweep_slow_server(
    rates: &str,
    extra: &[&str],
) -> (Option<i32>, metronome::report::sweep::Sweep) {
    let srv = server(plain(Duration::from_millis(5)));
    let url = format!("http://{}/", srv.addr());
    let mut args = vec![
        "sweep",
        &url,
        "--rates",
        rates,
        "--duration",
        "1s",
        "--quiet",
        "--engine",
        "std",
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let out = metronome(&args);
    srv.stop();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    common::assert_valid(&text, "the sweep");
    (out.status.code(), serde_json::from_str(&text).unwrap())
}

/// Without a threshold, the knee is where the target stops keeping up even
/// though every request was sent: at 400 req/s requests wait for a free
/// connection (`pool_exhausted`), many past the end of the schedule, so
/// the rate achieved on schedule falls below the offered one (it counted
/// those late sends before issue 30). The 50 req/s step keeps up.
#[test]
fn sweep_knee_where_requests_wait_for_connections() {
    let (code, s) = sweep_slow_server(
        "50,400",
        &[
            "--connections",
            "8",
            "--max-connections",
            "8",
            "--timeout",
            "10s",
        ],
    );
    assert_eq!(code, Some(0));
    let fast = &s.steps[1];
    assert_eq!(fast.requests.dropped, 0);
    assert!(
        fast.generator
            .behind
            .iter()
            .any(|b| b.cause == "pool_exhausted"),
        "{:?}",
        fast.generator.behind
    );
    assert_eq!(s.knee, Some(1), "{:?}", s.steps[0].generator.behind);
    let text = metronome::report::sweep::render(&s);
    assert!(text.contains("<- knee"), "{text}");
    assert!(
        text.contains("At 400.0 req/s the run stopped keeping up: achieved "),
        "{text}"
    );
}

/// `sweep` runs one step per rate and marks the knee: the first step that
/// breached its threshold (at 400 req/s the queue and p99 grow without
/// bound).
#[test]
fn sweep_finds_the_knee() {
    let (code, s) = sweep_slow_server(
        "50,100,400",
        &["--threshold", "latency.p99<100ms", "--timeout", "5s"],
    );
    assert_eq!(code, Some(3));
    assert_eq!(s.steps.len(), 3);
    assert_eq!(
        s.steps
            .iter()
            .map(|r| r.requests.scheduled)
            .collect::<Vec<_>>(),
        vec![50, 100, 400]
    );
    assert_eq!(s.knee, Some(2));
    assert!(s.steps[2].metrics.latency.p99 > 100.0);
    let text = metronome::report::sweep::render(&s);
    assert!(text.contains("<- knee"), "{text}");
}

/// `sweep --stages`: one continuous run whose stages are the steps, with
/// exact scheduled counts per stage (50 and 600 in the two held stages);
/// against a 5 ms FIFO server (200 req/s at most) the knee is the 600 req/s
/// stage, where requests waited while the latency grew. The document
/// validates, and --rates with --stages is refused.
#[test]
fn sweep_stages_is_one_continuous_run() {
    let srv = server(plain(Duration::from_millis(5)));
    let url = format!("http://{}/", srv.addr());
    let out = metronome(&[
        "sweep",
        &url,
        "--stages",
        "0s:50,1s:50,0s:600,1s:600",
        "--warmup",
        "0s",
        "--timeout",
        "5s",
        "--quiet",
        "--format",
        "json",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    common::assert_valid(&text, "a continuous sweep");
    let s: metronome::report::sweep::Sweep = serde_json::from_str(&text).unwrap();
    assert!(s.steps.is_empty());
    let r = s.continuous.as_ref().expect("the continuous run");
    let scheduled: Vec<u64> = r.stages.iter().map(|st| st.scheduled).collect();
    assert_eq!(scheduled, [0, 50, 0, 600]);
    assert_eq!(s.knee, Some(3), "{}", metronome::report::sweep::render(&s));
    let table = metronome::report::sweep::render(&s);
    assert!(table.contains("one continuous run"), "{table}");
    assert_eq!(table.matches("<- knee").count(), 1, "{table}");
    // Two held stages, two rows.
    assert_eq!(
        table
            .lines()
            .filter(|l| {
                let l = l.trim_start();
                l.starts_with("0-1 ") || l.starts_with("1-2 ")
            })
            .count(),
        2,
        "{table}"
    );
    let bad = metronome(&["sweep", &url, "--stages", "1s:10", "--rates", "10"]);
    assert_eq!(bad.status.code(), Some(2));
    srv.stop();
}

/// `run --repeat 3`: three runs with seeds 42, 43, 44, each a valid report
/// whose accounting holds; every summary row is the mean, sample sd and
/// Student-t 95% interval of the runs' own values; per-run files get
/// `-runK`.
#[test]
fn repeat_summarises_the_runs() {
    let srv = server(plain(std::time::Duration::from_millis(1)));
    let dir = std::env::temp_dir().join(format!("metronome-repeat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let hlog = dir.join("r.hlog");
    let url = format!("http://{}/", srv.addr());
    let out = metronome(&[
        "run",
        &url,
        "--rate",
        "100",
        "--duration",
        "500ms",
        "--arrival",
        "poisson",
        "--repeat",
        "3",
        "--format",
        "json",
        "--quiet",
        "--hlog",
        hlog.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: metronome::report::repeat::Repeat = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc.schema, "metronome.repeat/v1");
    assert_eq!(
        doc.runs.iter().map(|r| r.seed).collect::<Vec<_>>(),
        [42, 43, 44]
    );
    for r in &doc.runs {
        common::assert_accounting(r);
        assert_valid(&serde_json::to_string(r).unwrap(), "a repeat run");
    }
    // Poisson with three seeds: three schedules.
    let counts: Vec<u64> = doc.runs.iter().map(|r| r.requests.scheduled).collect();
    assert!(counts.windows(2).any(|w| w[0] != w[1]), "{counts:?}");
    for st in &doc.summary {
        let want: Vec<f64> = doc
            .runs
            .iter()
            .map(|r| {
                metronome::report::repeat::headline(r)
                    .into_iter()
                    .find(|(n, _)| *n == st.name)
                    .unwrap()
                    .1
            })
            .collect();
        assert_eq!(st.values, want, "{}", st.name);
        let mean = want.iter().sum::<f64>() / 3.0;
        let sd = (want.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
        assert!((st.mean - mean).abs() < 1e-9, "{}", st.name);
        assert!((st.sd - sd).abs() < 1e-9, "{}", st.name);
        assert!(
            (st.ci95 - 4.303 * sd / 3f64.sqrt()).abs() < 1e-9,
            "{}",
            st.name
        );
    }
    let names: Vec<&str> = doc.summary.iter().map(|s| s.name.as_str()).collect();
    for n in ["achieved_rps", "latency.p50", "latency.p99", "error_rate"] {
        assert!(names.contains(&n), "{names:?}");
    }
    for k in 1..=3 {
        assert!(
            dir.join(format!("r-run{k}.hlog")).exists(),
            "run {k}'s hlog"
        );
    }
}

/// `sweep --auto`: two probes (synchronous, then throughput with
/// --max-concurrency at a time) place --auto-steps rates evenly from the
/// one's sustained rate to the other's, as guidellm's sweep does.
#[test]
fn sweep_auto_places_its_steps_between_the_probes() {
    let srv = server(plain(std::time::Duration::from_millis(2)));
    let url = format!("http://{}/", srv.addr());
    let out = metronome(&[
        "sweep",
        &url,
        "--auto",
        "--auto-steps",
        "3",
        "--duration",
        "500ms",
        "--max-concurrency",
        "4",
        "--format",
        "json",
        "--quiet",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: metronome::report::sweep::Sweep = serde_json::from_slice(&out.stdout).unwrap();
    let a = s.auto.as_ref().expect("the probes");
    assert_eq!(a.throughput_workers, 4);
    assert!(a.synchronous_rps > 0.0 && a.throughput_rps > 0.0, "{a:?}");
    let hi = a.throughput_rps.max(a.synchronous_rps);
    let want = metronome::report::sweep::auto_rates(a.synchronous_rps, hi, 3);
    let got: Vec<f64> = s.steps.iter().map(|r| r.offered_rps).collect();
    assert_eq!(got, want);
    assert!(s
        .steps
        .iter()
        .all(|r| r.profile.is_none() && r.closed_workers == 0));
}
