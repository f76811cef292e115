//! `run --prometheus-rw` while the run goes, against a real Prometheus
//! (the one `prometheus.rs` starts): what each live push carries, queried
//! at each interval's end after the run, and what it carries at the end.
//!
//! - the counters and gauges of each interval, as the report's rows;
//! - latency and send lag: cumulative native histograms whose counts are
//!   the rows' so far;
//! - the whole-run histograms recorded so far (docs/prometheus.md): service
//!   time, ITL and TPOT of a stream run, the mix's per-name histograms:
//!   present in the middle of the run, never going down, never below the
//!   live latency count (every success counted there was recorded before
//!   the copy), and at the end the report's counts exactly.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common;
use crate::prometheus::{assert_within_bound, p99_s, scratch, Prometheus};
use common::{plain, server};
use metronome::prom::native::quantile_range;
use metronome::prom::series::measured_ms;
use metronome::report::Report;
use metronome::serve::ServeConfig;

/// Runs `metronome ARGS` (which must hold `--out FILE`), querying `probe`
/// while it goes; it must exit 0 without a push warning. Returns its report
/// and whether `probe` had a result while the run still went.
fn run_watching(prom: &Prometheus, args: &[&str], probe: &str) -> (Report, bool) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_metronome"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen_during = false;
    while child.try_wait().unwrap().is_none() {
        let found = !prom.query(probe, None).is_empty();
        // Still running after the answer: the sample came before the end.
        if found && child.try_wait().unwrap().is_none() {
            seen_during = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(0), "{args:?}: {stderr}");
    assert!(!stderr.contains("prometheus-rw"), "{args:?}: {stderr}");
    let i = args.iter().position(|a| *a == "--out").unwrap();
    (common::read_report(Path::new(args[i + 1])), seen_during)
}

/// The ends (ms) of the report's intervals that end before the end of the
/// measured phase (pushed live), with each row.
fn live_ends(r: &Report) -> Vec<(i64, &metronome::report::IntervalReport)> {
    let width = r.intervals[1].start_s - r.intervals[0].start_s;
    let end = measured_ms(r, r.duration_s);
    r.intervals
        .iter()
        .map(|iv| (measured_ms(r, iv.start_s + width), iv))
        .take_while(|&(t, _)| t < end)
        .collect()
}

/// `histogram_count(SERIES)` at `t`.
fn count_at(prom: &Prometheus, series: &str, t: i64) -> f64 {
    prom.value(&format!("histogram_count({series})"), Some(t))
}

/// A so-far histogram's count at each live interval's end: present,
/// never going down, at least `floor` (the live latency count there) and
/// at most `total` (the report's).
fn assert_so_far(prom: &Prometheus, series: &str, ends: &[(i64, f64)], total: u64, what: &str) {
    let mut last = 0.0;
    for &(t, floor) in ends {
        let c = count_at(prom, series, t);
        assert!(
            c >= last && c >= floor && c <= total as f64,
            "{what}: {series} count {c} at {t}: last {last}, live latency {floor}, total {total}"
        );
        last = c;
    }
}

/// `run --prometheus-rw` pushes each interval as it closes (docs/live.md):
/// a sample is stored while the run still goes, and after it the counters
/// equal the report, at the end and at each pushed interval's end.
#[test]
fn a_run_pushes_its_intervals_while_it_goes() {
    let Some(prom) = Prometheus::start("liverun") else {
        return;
    };
    let srv = server(plain(Duration::from_millis(1)));
    let dir = scratch("liverun");
    let out = dir.join("run.json");
    let url = format!("http://{}/", srv.addr());
    let w = prom.write_url();
    let suite = format!("liverun{}", std::process::id());
    let label = format!("suite={suite}");
    let args = [
        "run",
        &url,
        "--quiet",
        "--engine",
        "std",
        "--rate",
        "200",
        "--duration",
        "3s",
        "--interval",
        "500ms",
        "--out",
        out.to_str().unwrap(),
        "--prometheus-rw",
        &w,
        "--prometheus-label",
        &label,
    ];
    let sel = format!("{{suite=\"{suite}\"}}");
    let (r, seen_during) =
        run_watching(&prom, &args, &format!("metronome_requests_sent_total{sel}"));
    assert!(seen_during, "no sample stored while the run went");
    let q = &r.requests;
    for (name, want) in [
        ("scheduled", q.scheduled),
        ("sent", q.sent),
        ("ok", q.ok),
        ("errors", q.errors),
        ("dropped", q.dropped),
    ] {
        let got = prom.value(&format!("metronome_requests_{name}_total{sel}"), None);
        assert_eq!(got, want as f64, "{name}");
    }
    // Each interval ending before the end of the run: its cumulative count.
    let mut sent = 0;
    for (t, iv) in live_ends(&r) {
        sent += iv.sent;
        let got = prom.value(&format!("metronome_requests_sent_total{sel}"), Some(t));
        assert_eq!(got, sent.min(q.sent) as f64, "at {t}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `run --prometheus-rw --prometheus-interval 1s`: each live push carries
/// the cumulative native histograms (latency, send lag, and service time so
/// far) and the gauges (in flight, connections open, achieved rate,
/// send-lag p99) at each interval's end, so a quantile exists in the middle
/// of the run (before the live push carried histograms, the only one was
/// the end's); at the end the histograms are the report's.
#[test]
fn live_pushes_carry_histograms_and_gauges() {
    let Some(prom) = Prometheus::start("livehist") else {
        return;
    };
    let srv = server(plain(Duration::from_millis(1)));
    let url = format!("http://{}/", srv.addr());
    for engine in common::engines() {
        live_push_of(&prom, &url, engine);
    }
}

/// One engine's run for `live_pushes_carry_histograms_and_gauges`.
fn live_push_of(prom: &Prometheus, url: &str, engine: &str) {
    let dir = scratch(&format!("livehist-{engine}"));
    let out = dir.join("run.json");
    let w = prom.write_url();
    let suite = format!("livehist{}{engine}", std::process::id());
    let label = format!("suite={suite}");
    let args = [
        "run",
        url,
        "--quiet",
        "--engine",
        engine,
        "--rate",
        "200",
        "--duration",
        "4s",
        "--interval",
        "500ms",
        "--prometheus-interval",
        "1s",
        "--out",
        out.to_str().unwrap(),
        "--prometheus-rw",
        &w,
        "--prometheus-label",
        &label,
    ];
    let sel = format!("{{suite=\"{suite}\"}}");
    let lat = format!("metronome_latency_seconds{sel}");
    let service = format!("metronome_service_time_seconds{sel}");
    let (r, seen_during) = run_watching(prom, &args, &format!("histogram_count({service})"));
    // In the middle of the run (2 s in), a native-histogram quantile (on
    // the code before the live push carried histograms: none).
    let mid = measured_ms(&r, 2.0);
    for series in [&lat, &service] {
        let q = prom.query(&format!("histogram_quantile(0.99, {series})"), Some(mid));
        assert_eq!(
            q.len(),
            1,
            "{engine}: no {series} quantile 2 s into the run: {q:?}"
        );
    }
    assert!(
        seen_during,
        "{engine}: no service-time histogram stored while the run went"
    );
    let width = r.intervals[1].start_s - r.intervals[0].start_s;
    assert_eq!(width, 0.5);
    // Each interval ending before the end of the run, as the live rows
    // were (the report's rows: the same rows, made by the same code).
    let (mut ok, mut sent) = (0, 0);
    let (mut max_ms, mut min_p50_ms) = (0.0f64, f64::INFINITY);
    let ends = live_ends(&r);
    let mut floors = Vec::new();
    for &(t, iv) in &ends {
        ok += iv.ok;
        sent += iv.sent;
        max_ms = max_ms.max(iv.max);
        if iv.ok > 0 {
            min_p50_ms = min_p50_ms.min(iv.p50);
        }
        let at = iv.start_s + width;
        let count = count_at(prom, &lat, t);
        assert_eq!(count, ok as f64, "latency count at {at} s");
        floors.push((t, count));
        let lag = count_at(prom, &format!("metronome_send_lag_seconds{sel}"), t);
        assert_eq!(lag, sent as f64, "send-lag count at {at} s");
        // The cumulative p99: between the smallest interval p50 and the
        // largest value so far, within the bound (docs/prometheus.md).
        let p99 = prom.value(&format!("histogram_quantile(0.99, {lat})"), Some(t));
        let (lo, _) = quantile_range(min_p50_ms / 1e3);
        let (_, hi) = quantile_range(max_ms / 1e3);
        assert!(
            lo * (1.0 - 1e-9) < p99 && p99 < hi * (1.0 + 1e-9),
            "p99 {p99} s at {at} s: smallest p50 {min_p50_ms} ms, max {max_ms} ms"
        );
        let in_flight = prom.value(&format!("metronome_in_flight_requests{sel}"), Some(t));
        assert_eq!(in_flight, iv.in_flight as f64, "in flight at {at} s");
        let open = prom.value(&format!("metronome_connections_open{sel}"), Some(t));
        // A sample of its own at the interval's end, not an earlier one's.
        let stamp = prom.value(
            &format!("timestamp(metronome_connections_open{sel})"),
            Some(t),
        );
        assert_eq!(stamp, t as f64 / 1e3, "connections open at {at} s");
        assert!(
            (1.0..=r.generator.peak_connections as f64).contains(&open),
            "{open} connections open at {at} s, peak {}",
            r.generator.peak_connections
        );
        let rate = prom.value(&format!("metronome_interval_sent_per_second{sel}"), Some(t));
        assert_eq!(rate, iv.sent as f64 / width, "rate at {at} s");
        let lag_p99 = prom.value(
            &format!("metronome_interval_send_lag_p99_seconds{sel}"),
            Some(t),
        );
        assert_eq!(lag_p99, iv.send_lag_p99 / 1e3, "send-lag p99 at {at} s");
    }
    // 4 s of 0.5 s intervals: the 7 that end before the run's end.
    assert_eq!(ends.len(), 7);
    // Service time so far: every success the live latency counted, and
    // more (those recorded up to the copy), never going down.
    assert_so_far(prom, &service, &floors, r.requests.ok, engine);
    // A plain run: no stream metrics.
    assert!(prom
        .query(&format!("metronome_itl_seconds{sel}"), None)
        .is_empty());
    // At the end: the report's whole-run histograms (which hold the last
    // live one's values and the last interval's), count exact, p99 in bound.
    let h = r.metrics.latency.to_histogram();
    assert!(
        h.count() > ok && ok >= 300,
        "{} ok in all, {ok} live",
        h.count()
    );
    let end = measured_ms(&r, r.duration_s);
    let count = count_at(prom, &lat, end);
    assert_eq!(count, h.count() as f64);
    assert_eq!(count, r.requests.ok as f64);
    let p99 = prom.value(&format!("histogram_quantile(0.99, {lat})"), Some(end));
    assert_within_bound(p99, p99_s(&r), "p99 at the end");
    let st = r.metrics.service_time.to_histogram();
    assert_eq!(count_at(prom, &service, end), st.count() as f64);
    assert_eq!(st.count(), r.requests.ok);
    let p99 = prom.value(&format!("histogram_quantile(0.99, {service})"), Some(end));
    let ours = st.quantile(0.99) as f64 * 1e-9;
    assert_within_bound(p99, ours, "service-time p99 at the end");
    let _ = std::fs::remove_dir_all(&dir);
}

/// An `--openai` stream run against `metronome serve --sse` (16 tokens
/// 10 ms apart) on each engine: ITL and TPOT so far in the middle of the
/// run, at each interval's end at least one value per success the live
/// latency counted, never going down; at the end the report's counts
/// exactly and the TPOT p99 within the bound.
#[test]
fn live_pushes_carry_stream_histograms_so_far() {
    let Some(prom) = Prometheus::start("livestream") else {
        return;
    };
    let srv = server(ServeConfig {
        sse: true,
        tokens: 16,
        ttft: Duration::from_millis(50),
        itl: Duration::from_millis(10),
        ..ServeConfig::default()
    });
    let url = format!("http://{}/v1/chat/completions", srv.addr());
    for engine in common::engines() {
        let dir = scratch(&format!("livestream-{engine}"));
        let out = dir.join("run.json");
        let w = prom.write_url();
        let suite = format!("livestream{}{engine}", std::process::id());
        let label = format!("suite={suite}");
        let args = [
            "run",
            &url,
            "--quiet",
            "--engine",
            engine,
            "--openai",
            "--model",
            "metronome",
            "--rate",
            "40",
            "--duration",
            "3s",
            "--interval",
            "500ms",
            "--out",
            out.to_str().unwrap(),
            "--prometheus-rw",
            &w,
            "--prometheus-label",
            &label,
        ];
        let sel = format!("{{suite=\"{suite}\"}}");
        let itl = format!("metronome_itl_seconds{sel}");
        let tpot = format!("metronome_tpot_seconds{sel}");
        let (r, seen_during) = run_watching(&prom, &args, &format!("histogram_count({itl})"));
        assert!(
            seen_during,
            "{engine}: no ITL histogram stored while the run went"
        );
        let lat = format!("metronome_latency_seconds{sel}");
        let ends: Vec<(i64, f64)> = live_ends(&r)
            .into_iter()
            .map(|(t, _)| (t, count_at(&prom, &lat, t)))
            .collect();
        assert_eq!(ends.len(), 5, "{engine}");
        let mid = measured_ms(&r, 1.5);
        for series in [&itl, &tpot] {
            assert!(
                count_at(&prom, series, mid) > 0.0,
                "{engine}: {series} at 1.5 s"
            );
        }
        let m = &r.metrics;
        assert_so_far(&prom, &itl, &ends, m.itl.count, engine);
        assert_so_far(&prom, &tpot, &ends, m.tpot.count, engine);
        let end = measured_ms(&r, r.duration_s);
        assert_eq!(count_at(&prom, &itl, end), m.itl.count as f64, "{engine}");
        assert_eq!(count_at(&prom, &tpot, end), m.tpot.count as f64, "{engine}");
        assert_eq!(m.tpot.count, r.requests.ok, "{engine}");
        let p99 = prom.value(&format!("histogram_quantile(0.99, {tpot})"), Some(end));
        let ours = m.tpot.to_histogram().quantile(0.99) as f64 * 1e-9;
        assert_within_bound(p99, ours, "TPOT p99 at the end");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A two-name mix (`--requests`) on each engine: each name's latency,
/// service time and send lag so far in the middle of the run (under its
/// `request` label), the names' latency counts adding up to at least the
/// live latency count at each interval's end, never going down; at the end
/// each name's counts are its report row's.
#[test]
fn live_pushes_carry_the_mix_per_name() {
    let Some(prom) = Prometheus::start("livemix") else {
        return;
    };
    let srv = server(plain(Duration::from_millis(1)));
    let url = format!("http://{}/", srv.addr());
    for engine in common::engines() {
        let dir = scratch(&format!("livemix-{engine}"));
        let mix = dir.join("mix.jsonl");
        std::fs::write(
            &mix,
            "{\"name\": \"a\", \"path\": \"/a\", \"weight\": 3}\n{\"name\": \"b\", \"path\": \"/b\"}\n",
        )
        .unwrap();
        let out = dir.join("run.json");
        let w = prom.write_url();
        let suite = format!("livemix{}{engine}", std::process::id());
        let label = format!("suite={suite}");
        let args = [
            "run",
            &url,
            "--quiet",
            "--engine",
            engine,
            "--requests",
            mix.to_str().unwrap(),
            "--rate",
            "200",
            "--duration",
            "3s",
            "--interval",
            "500ms",
            "--out",
            out.to_str().unwrap(),
            "--prometheus-rw",
            &w,
            "--prometheus-label",
            &label,
        ];
        let name_sel = |metric: &str, name: &str| {
            format!("metronome_mix_{metric}_seconds{{suite=\"{suite}\",request=\"{name}\"}}")
        };
        let (r, seen_during) = run_watching(
            &prom,
            &args,
            &format!("histogram_count({})", name_sel("latency", "b")),
        );
        assert!(
            seen_during,
            "{engine}: no per-name histogram stored while the run went"
        );
        let mid = measured_ms(&r, 1.5);
        for name in ["a", "b"] {
            for metric in ["latency", "service_time", "send_lag"] {
                let c = count_at(&prom, &name_sel(metric, name), mid);
                assert!(c > 0.0, "{engine}: {metric} of {name} at 1.5 s");
            }
        }
        let lat = format!("metronome_latency_seconds{{suite=\"{suite}\"}}");
        let all = format!("sum(metronome_mix_latency_seconds{{suite=\"{suite}\"}})");
        let ends: Vec<(i64, f64)> = live_ends(&r)
            .into_iter()
            .map(|(t, _)| (t, count_at(&prom, &lat, t)))
            .collect();
        assert_eq!(ends.len(), 5, "{engine}");
        assert_so_far(&prom, &all, &ends, r.requests.ok, engine);
        let end = measured_ms(&r, r.duration_s);
        assert_eq!(r.by_request.len(), 2, "{engine}");
        for rq in &r.by_request {
            let n = rq.name.as_str();
            for (metric, want) in [
                ("latency", rq.latency.count),
                ("service_time", rq.service_time.count),
                ("send_lag", rq.send_lag.count),
            ] {
                let got = count_at(&prom, &name_sel(metric, n), end);
                assert_eq!(got, want as f64, "{engine}: {metric} of {n} at the end");
            }
            assert!(
                rq.latency.count > 0 && rq.send_lag.count == rq.sent,
                "{engine}: {n}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Issue 38, item 3: every interval of the schedule has its gauges stored
/// (interval p99, sent/s, send-lag p99, in flight; connections open live),
/// the last one's at the end of the measured phase with the totals: live
/// and from the saved report (`report FILE --prometheus-rw`). Before the
/// fix a 4-interval run stored 3 samples of each, both ways.
#[test]
fn every_interval_has_its_gauges_live_and_saved() {
    let Some(prom) = Prometheus::start("gauges") else {
        return;
    };
    let srv = server(plain(Duration::from_millis(1)));
    let dir = scratch("gauges");
    let out = dir.join("run.json");
    let url = format!("http://{}/", srv.addr());
    let w = prom.write_url();
    let suite = format!("gauges{}", std::process::id());
    let live = format!("suite={suite}-live");
    for engine in common::engines() {
        let args = [
            "run",
            &url,
            "--quiet",
            "--engine",
            engine,
            "--rate",
            "100",
            "--duration",
            "2s",
            "--interval",
            "500ms",
            "--out",
            out.to_str().unwrap(),
            "--prometheus-rw",
            &w,
            "--prometheus-label",
            &live,
            "--prometheus-label",
            &format!("eng={engine}"),
        ];
        let sel = format!("{{suite=\"{suite}-live\",eng=\"{engine}\"}}");
        let (r, _) = run_watching(&prom, &args, &format!("metronome_requests_sent_total{sel}"));
        let saved = format!("suite={suite}-saved-{engine}");
        let pushed = common::metronome(&[
            "report",
            out.to_str().unwrap(),
            "--format",
            "json",
            "--prometheus-rw",
            &w,
            "--prometheus-label",
            &saved,
        ]);
        assert_eq!(pushed.status.code(), Some(0), "{pushed:?}");
        let n = r.intervals.len();
        assert_eq!(n, 4, "{engine}");
        let end = measured_ms(&r, r.duration_s);
        let last = &r.intervals[n - 1];
        let mut gauges = vec![
            ("metronome_interval_sent_per_second", last.sent as f64 / 0.5),
            ("metronome_interval_latency_p99_seconds", last.p99 / 1e3),
            (
                "metronome_interval_send_lag_p99_seconds",
                last.send_lag_p99 / 1e3,
            ),
            ("metronome_in_flight_requests", last.in_flight as f64),
        ];
        for (source, sel) in [
            ("live", sel.clone()),
            ("saved", format!("{{suite=\"{suite}-saved-{engine}\"}}")),
        ] {
            if source == "live" {
                gauges.push(("metronome_connections_open", f64::NAN));
            } else {
                gauges.retain(|(g, _)| *g != "metronome_connections_open");
            }
            for (g, want) in &gauges {
                let stored = prom.value(&format!("count_over_time({g}{sel}[1h])"), Some(end));
                assert_eq!(stored, n as f64, "{engine} {source}: samples of {g}");
                let at_end = prom.value(&format!("{g}{sel}"), Some(end));
                if !want.is_nan() {
                    let close = (at_end - want).abs() <= 1e-9 * want.abs().max(1.0);
                    assert!(
                        close,
                        "{engine} {source}: {g} at the end {at_end}, row {want}"
                    );
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
