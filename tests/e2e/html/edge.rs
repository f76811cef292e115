//! Pages no ordinary run produces (a closed run, an empty run, hostile
//! text, a huge seed) are drawn safely and exactly, and a 10-minute run's
//! page stays within its size budget in the browser.

use super::*;

/// The size budget in a browser: a 10-minute run at 1 s intervals, every
/// histogram filled across 17 octaves (far more buckets than a real run
/// fills), stays under 1 MiB and draws every point without an error.
#[test]
fn ten_minute_page_within_budget() {
    use metronome_core::histogram::Histogram;
    let md =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/report.md")).unwrap();
    let example = md
        .split("```json")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let mut r: Report = serde_json::from_str(example).unwrap();
    let mut h = Histogram::new();
    let mut rng = metronome_core::rng::Pcg32::seeded(11);
    for _ in 0..200_000 {
        h.record((50_000.0 * 1e5f64.powf(rng.next_f64())) as u64);
    }
    let full = Metric::from_histogram(&h);
    for m in [
        &mut r.metrics.latency,
        &mut r.metrics.service_time,
        &mut r.metrics.send_lag,
    ] {
        *m = full.clone();
    }
    let one = r.intervals[0].clone();
    r.intervals = (0..600)
        .map(|i| metronome::report::IntervalReport {
            start_s: f64::from(i),
            p99: 10.0 + f64::from(i % 37),
            ..one.clone()
        })
        .collect();
    r.duration_s = 600.0;
    // 40 stretches where the generator fell behind, none a warning: the
    // verdict names three and counts the rest; all are listed and shaded.
    r.generator.warnings.clear();
    r.generator.behind = (0..40)
        .map(|k: u32| metronome::report::Behind {
            from_s: f64::from(k * 15),
            until_s: f64::from(k * 15 + 1 + k % 3),
            intervals: u64::from(1 + k % 3),
            cause: "descheduled".into(),
            detail: format!("stretch {k}: the host took the CPU"),
        })
        .collect();
    let page = artifacts().join("ten-minutes.html");
    let html = metronome::report::html::render_report(&r, None).unwrap();
    std::fs::write(&page, &html).unwrap();
    eprintln!("ten-minute page: {} bytes (budget {})", html.len(), 1 << 20);
    assert!(html.len() < 1 << 20);
    check_static(&page, &serde_json::to_string(&r).unwrap());
    let Some(exe) = exe_or_skip("the ten-minute page") else {
        return;
    };
    let (check, dom) = load(&exe, &page);
    check_clean(&check, &page);
    assert_eq!(chart_list(&check), expected_report_charts(&r));
    check_verdict(&r, check["verdict"].as_str().unwrap());
    check_behind_listed(&r, &dom);
    check_sections(&r, &check);
    assert!(check["verdict"]
        .as_str()
        .unwrap()
        .contains("in 37 more stretches (40 in all, listed under Over time)."));
    for (chart, si, i, text) in hovers(&check) {
        check_report_hover(&r, &chart, si, i, &text);
    }
    check_zoom(&r, &check);
    check_keyboard(&r, &check, &hovers(&check));
    let z = &check["zoom"]["charts"][0]["points"][0];
    assert!(
        (198..=203).contains(&z.as_u64().unwrap()),
        "a third of 600 intervals: {z}"
    );
}

/// Pages of reports no run above produces: a closed run with the corrected
/// histogram; a run where nothing was recorded (no interval, empty
/// histograms); text that tries to end the script element or inject markup
/// (shown as text, never run); a huge seed (beyond 2^53, shown exactly).
#[test]
fn edge_case_pages() {
    let mut closed = example();
    closed.model = metronome::report::Model::Closed;
    closed.closed_workers = 4;
    closed.offered_rps = 0.0;
    closed.metrics.latency_corrected = Some(closed.metrics.latency.clone());
    let mut empty = example();
    empty.intervals.clear();
    for m in [
        &mut empty.metrics.latency,
        &mut empty.metrics.service_time,
        &mut empty.metrics.send_lag,
    ] {
        *m = Metric::empty();
    }
    let mut hostile = example();
    hostile.target = "http://h/</script><script>window.pwned=1</script><!--".into();
    hostile
        .generator
        .warnings
        .push("<img src=x onerror=\"window.pwned=1\"> & \u{2028} done".into());
    hostile.seed = u64::MAX;
    // One worker: "1 worker", never "1 workers".
    let mut closed_one = closed.clone();
    closed_one.closed_workers = 1;
    let pages = [
        ("closed", closed),
        ("closed-one", closed_one),
        ("empty", empty),
        ("hostile", hostile),
    ];
    let exe = exe_or_skip("the edge-case pages");
    for (name, r) in &pages {
        let page = artifacts().join(format!("edge-{name}.html"));
        std::fs::write(
            &page,
            metronome::report::html::render_report(r, None).unwrap(),
        )
        .unwrap();
        check_static(&page, &serde_json::to_string(r).unwrap());
        let Some(exe) = &exe else { continue };
        let (check, dom) = load(exe, &page);
        check_clean(&check, &page);
        assert_eq!(chart_list(&check), expected_report_charts(r), "{name}");
        for (chart, si, i, text) in hovers(&check) {
            check_report_hover(r, &chart, si, i, &text);
        }
        check_verdict(r, check["verdict"].as_str().unwrap());
        check_sections(r, &check);
        if *name == "hostile" {
            assert!(!dom.contains("<img src=x"), "markup injected");
            assert!(dom.contains("&lt;img src=x onerror"), "shown as text");
            assert!(dom.contains("&lt;/script&gt;&lt;script&gt;window.pwned=1"));
            assert!(dom.contains(&u64::MAX.to_string()), "the seed exactly");
        }
        if *name == "closed" {
            assert!(check["verdict"]
                .as_str()
                .unwrap()
                .contains("Closed loop, 4 workers"));
        }
        if *name == "closed-one" {
            let v = check["verdict"].as_str().unwrap();
            assert!(v.contains("Closed loop, 1 worker: "), "{v}");
        }
    }
}
