//! The dashboard's live page (page.js's live view) against a scripted
//! `/live.json` served by the test on loopback: what the page says after
//! each poll is a rendering of the document it got, with nothing left
//! over from an earlier one (issue 38, items 1 and 6).

use super::*;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// The live page's policy (as the dashboard's: fetches to its own address).
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
    connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'";

/// Serves `page` at `/` and `docs` at `/live.json` on 127.0.0.1, the
/// k-th poll getting `docs[k]` (the last one from then on), until the
/// returned flag is set.
fn serve(page: String, docs: Vec<String>) -> (String, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let stop = Arc::new(AtomicBool::new(false));
    let polls = AtomicUsize::new(0);
    let done = Arc::clone(&stop);
    std::thread::spawn(move || {
        while !done.load(Ordering::Relaxed) {
            let Ok((mut s, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            s.set_nonblocking(false).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut head = Vec::new();
            let mut b = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut b) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&b[..n]),
                }
            }
            let head = String::from_utf8_lossy(&head);
            let path = head.split_whitespace().nth(1).unwrap_or("");
            let (kind, body) = match path {
                "/" => ("text/html; charset=utf-8", page.clone()),
                "/live.json" => {
                    let k = polls.fetch_add(1, Ordering::Relaxed);
                    ("application/json", docs[k.min(docs.len() - 1)].clone())
                }
                _ => ("text/plain", String::new()),
            };
            let status = if path == "/" || path == "/live.json" {
                "200 OK"
            } else {
                "204 No Content"
            };
            let _ = write!(
                s,
                "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
                 Cache-Control: no-store\r\nContent-Security-Policy: {CSP}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (format!("http://{addr}/"), stop)
}

/// Chromium's DOM of `url` after the page ran a few virtual seconds
/// (network only to 127.0.0.1).
fn dump(exe: &Path, url: &str) -> String {
    let profile = tempdir("live-page-profile");
    let out = Command::new(exe)
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            "--virtual-time-budget=3000",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("start chromium");
    let _ = std::fs::remove_dir_all(&profile);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The text of the element with `id` in a dumped DOM (tags dropped).
fn text_of(dom: &str, id: &str) -> String {
    let at = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in {dom}"));
    let open = dom[..at].rfind('<').unwrap();
    let tag: String = dom[open + 1..]
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    let start = at + dom[at..].find('>').unwrap() + 1;
    let tag_end = dom[start..].find(&format!("</{tag}>")).unwrap();
    let mut out = String::new();
    let mut in_tag = false;
    for c in dom[start..start + tag_end].chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    unescape(&out)
}

fn row(start_s: f64, late: u64) -> Value {
    serde_json::json!({
        "start_s": start_s, "sent": 100, "ok": 100, "errors": 0, "unsent": 0,
        "p50": 1.0, "p99": 2.0, "max": 3.0, "send_lag_p99": 0.5, "dropped": 0,
        "waited": 0, "pool_full": 0, "scheduled": 100, "late": late,
        "late_waiting": 0, "work_cpu": 0.1, "in_flight": 0,
        "bytes_received": 0, "bytes_sent": 0
    })
}

/// Issue 38, item 6: a stretch behind schedule that grows by a row keeps
/// the count of warnings but changes their words; the page shows the new
/// words with the new shading (before, it kept the old text until the
/// count changed: one row behind). Past the schedule's end the progress
/// says "draining", not "8.097 s of 8.000 s". Item 1: the drain's rows are
/// drawn, shaded as the drain.
#[test]
fn the_live_page_says_what_its_last_poll_says() {
    let Some(exe) = exe_or_skip("the live page") else {
        return;
    };
    let meta = metronome::report::html::LiveMeta {
        kind: "live",
        version: env!("CARGO_PKG_VERSION"),
        target: "http://127.0.0.1:9/".into(),
        offered_rps: 100.0,
        process: "constant".into(),
        engine: "std".into(),
        stream: false,
        label: None,
        interval_s: 1.0,
        samples_needed: Default::default(),
        cap: None,
    };
    let page = metronome::report::html::render_live(&meta, CSP).unwrap();
    let behind = |until: f64, n: u64| {
        serde_json::json!([{ "from_s": 6.0, "until_s": until, "intervals": n,
            "cause": "descheduled", "detail": format!("stretch of {n}") }])
    };
    let rows6: Vec<Value> = (0..7).map(|i| row(f64::from(i), 0)).collect();
    let mut rows8 = rows6.clone();
    rows8.push(row(7.0, 50));
    let mut drain_row = row(8.0, 0);
    drain_row["phase"] = "drain".into();
    drain_row["sent"] = 0.into();
    let first = serde_json::json!({
        "done": false, "page": 1, "elapsed_s": 7.2, "duration_s": 8.0,
        "sent": 700, "ok": 700, "errors": 0,
        "warnings": ["behind schedule from 6.000 s to 7.000 s (descheduled): stretch of 1"],
        "behind": behind(7.0, 1), "rows": rows6, "drain": []
    });
    let second = serde_json::json!({
        "done": false, "page": 1, "elapsed_s": 8.097, "duration_s": 8.0,
        "sent": 800, "ok": 790, "errors": 0,
        "warnings": ["behind schedule from 6.000 s to 8.000 s (descheduled): stretch of 2"],
        "behind": behind(8.0, 2), "rows": rows8, "drain": [drain_row]
    });
    let (url, stop) = serve(page, vec![first.to_string(), second.to_string()]);
    let dom = dump(&exe, &url);
    stop.store(true, Ordering::Relaxed);
    let warnings = text_of(&dom, "live-warnings");
    assert!(
        warnings.contains("6.000 s to 8.000 s") && warnings.contains("stretch of 2"),
        "the warning lags its stretch: {warnings:?}"
    );
    assert!(!warnings.contains("stretch of 1"), "{warnings:?}");
    let progress = text_of(&dom, "live-progress");
    assert!(progress.starts_with("draining"), "{progress:?}");
    assert!(!progress.contains("8.097"), "{progress:?}");
    assert!(
        dom.contains("drain: after the schedule"),
        "the drain is not drawn"
    );
    let check = text_of(&dom, "selfcheck");
    let check: Value = serde_json::from_str(&check).expect("the live self-check");
    assert_eq!(check["ok"], true, "{check}");
    assert_eq!(check["rows"], 8, "{check}");
}
