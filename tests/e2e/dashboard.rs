//! `--dashboard` in a real browser (docs/live.md): headless Chromium opens
//! the address the run prints first, while a 5 s run goes; the test reads
//! the page's state over the DevTools protocol (a minimal WebSocket client
//! below) every 100 ms of real time and asserts: the page updated at least
//! once a second while the run went, then became the `--html` page whose
//! embedded report equals the `--out` JSON; no console message; no request
//! outside the dashboard's own address. The dashboard's CPU is in the
//! report apart (`generator.dashboard_cpu_s`).
//!
//! Without Chromium (`$METRONOME_CHROMIUM`, chromium, chromium-browser,
//! google-chrome on PATH) the test skips with a line.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{plain, server};
use serde_json::Value;

fn browser() -> Option<PathBuf> {
    if let Some(b) = std::env::var_os("METRONOME_CHROMIUM") {
        return Some(PathBuf::from(b));
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|n| std::env::split_paths(&path).map(move |d| d.join(n)))
        .find(|p| p.is_file())
}

/// A child killed (by its own id) when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Lines of a child's pipe, as they come.
fn lines(pipe: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// The first line of `rx` containing `needle`, within 30 s.
fn wait_for(rx: &mpsc::Receiver<String>, needle: &str, seen: &mut Vec<String>) -> String {
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(100)) {
            seen.push(l.clone());
            if l.contains(needle) {
                return l;
            }
        }
    }
    panic!("no line with {needle:?} in 30 s: {seen:#?}");
}

/// A GET on loopback: the body (as long as its Content-Length says).
pub(crate) fn get(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&reply).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let len = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())?
                })
                .unwrap_or(usize::MAX);
            if body.len() >= len {
                return body[..len].to_string();
            }
        }
        match s.read(&mut buf) {
            Ok(0) | Err(_) => {
                return text
                    .split_once("\r\n\r\n")
                    .map_or("", |(_, b)| b)
                    .to_string()
            }
            Ok(n) => reply.extend_from_slice(&buf[..n]),
        }
    }
}

/// A WebSocket to the DevTools protocol: just enough of RFC 6455.
struct Ws {
    s: TcpStream,
    next_id: u64,
}

impl Ws {
    fn connect(url: &str) -> Ws {
        let rest = url.strip_prefix("ws://").unwrap();
        let (host, path) = rest.split_once('/').unwrap();
        let mut s = TcpStream::connect(host).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        write!(
            s,
            "GET /{path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .unwrap();
        let mut head = Vec::new();
        let mut b = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            s.read_exact(&mut b).unwrap();
            head.push(b[0]);
        }
        assert!(
            head.starts_with(b"HTTP/1.1 101"),
            "{}",
            String::from_utf8_lossy(&head)
        );
        Ws { s, next_id: 1 }
    }

    fn send(&mut self, text: &str) {
        let p = text.as_bytes();
        let mut f = vec![0x81u8];
        if p.len() < 126 {
            f.push(0x80 | p.len() as u8);
        } else if p.len() < 65536 {
            f.push(0x80 | 126);
            f.extend((p.len() as u16).to_be_bytes());
        } else {
            f.push(0x80 | 127);
            f.extend((p.len() as u64).to_be_bytes());
        }
        let mask = [0x11u8, 0x22, 0x33, 0x44];
        f.extend(mask);
        f.extend(p.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.s.write_all(&f).unwrap();
    }

    fn recv(&mut self) -> String {
        let mut msg = Vec::new();
        loop {
            let mut h = [0u8; 2];
            self.s.read_exact(&mut h).unwrap();
            let mut len = u64::from(h[1] & 0x7f);
            if len == 126 {
                let mut l = [0u8; 2];
                self.s.read_exact(&mut l).unwrap();
                len = u64::from(u16::from_be_bytes(l));
            } else if len == 127 {
                let mut l = [0u8; 8];
                self.s.read_exact(&mut l).unwrap();
                len = u64::from_be_bytes(l);
            }
            let mut p = vec![0u8; len as usize];
            self.s.read_exact(&mut p).unwrap();
            msg.extend(p);
            if h[0] & 0x80 != 0 {
                return String::from_utf8(msg).unwrap();
            }
        }
    }

    /// `Runtime.evaluate` of `expr` (a string value).
    fn eval(&mut self, expr: &str) -> String {
        let id = self.next_id;
        self.next_id += 1;
        let call = serde_json::json!({
            "id": id, "method": "Runtime.evaluate",
            "params": {"expression": expr, "returnByValue": true}
        });
        self.send(&call.to_string());
        loop {
            let v: Value = serde_json::from_str(&self.recv()).unwrap();
            if v["id"].as_u64() == Some(id) {
                return v["result"]["result"]["value"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
            }
        }
    }
}

/// What the test reads of the page each time.
const STATE: &str = "JSON.stringify({\
    check: (document.getElementById('selfcheck') || {}).textContent || null,\
    report: (document.getElementById('report-data') || {}).textContent || null,\
    urls: performance.getEntriesByType('navigation')\
        .concat(performance.getEntriesByType('resource')).map(e => e.name)\
        .concat([location.href])})";

#[test]
fn the_dashboard_updates_live_and_ends_as_the_html_page() {
    let Some(exe) = browser() else {
        eprintln!("SKIP the dashboard test: no Chromium (set METRONOME_CHROMIUM)");
        return;
    };
    let srv = server(plain(Duration::from_millis(2)));
    let url = format!("http://{}/", srv.addr());
    let out = std::env::temp_dir().join(format!("metronome-dash-{}.json", std::process::id()));
    let mut run = Killed(
        Command::new(env!("CARGO_BIN_EXE_metronome"))
            .args([
                "run",
                &url,
                "--engine",
                "std",
                "--rate",
                "100",
                "--duration",
                "5s",
            ])
            .args(["--interval", "500ms", "--quiet", "--dashboard", "--out"])
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let run_err = lines(run.0.stderr.take().unwrap());
    let mut run_seen = Vec::new();
    let first = wait_for(&run_err, "dashboard on http://", &mut run_seen);
    assert_eq!(
        run_seen.len(),
        1,
        "the address is the first line: {run_seen:?}"
    );
    let page = first.split("on ").nth(1).unwrap().trim().to_string();
    let addr = page
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");

    let profile =
        std::env::temp_dir().join(format!("metronome-dash-profile-{}", std::process::id()));
    let mut chrome = Killed(
        Command::new(exe)
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
                "--remote-debugging-port=0",
                "--enable-logging=stderr",
                "--v=0",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(&page)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let chrome_err = lines(chrome.0.stderr.take().unwrap());
    let mut chrome_seen = Vec::new();
    let devtools = wait_for(&chrome_err, "DevTools listening on ws://", &mut chrome_seen);
    let dt_addr = devtools
        .split("ws://")
        .nth(1)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    // The page's target.
    let started = Instant::now();
    let ws_url = loop {
        let list: Value = serde_json::from_str(&get(&dt_addr, "/json/list")).unwrap_or_default();
        let found = list.as_array().into_iter().flatten().find(|t| {
            t["type"] == "page" && t["url"].as_str().is_some_and(|u| u.starts_with(&page))
        });
        if let Some(t) = found {
            break t["webSocketDebuggerUrl"].as_str().unwrap().to_string();
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no page target: {list}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut ws = Ws::connect(&ws_url);
    // (seconds since the page opened, the live self-check) while live.
    let mut live: Vec<(f64, Value)> = Vec::new();
    let mut urls: Vec<String> = Vec::new();
    let opened = Instant::now();
    let report = loop {
        assert!(
            opened.elapsed() < Duration::from_secs(60),
            "the page never became the report: {live:?}"
        );
        let state: Value = serde_json::from_str(&ws.eval(STATE)).unwrap_or_default();
        urls.extend(
            state["urls"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|u| u.as_str().map(String::from))
                // Chromium's blank page before the first load.
                .filter(|u| !u.is_empty() && u != "about:blank"),
        );
        if let Some(r) = state["report"].as_str() {
            // The --html page's own self-check (docs/html.md) passed.
            let check: Value =
                serde_json::from_str(state["check"].as_str().unwrap_or("{}")).unwrap_or_default();
            assert_eq!(check["ok"], true, "the final page's self-check: {check}");
            break serde_json::from_str::<Value>(r).expect("the embedded report");
        }
        if let Some(c) = state["check"].as_str() {
            if let Ok(v) = serde_json::from_str::<Value>(c) {
                live.push((opened.elapsed().as_secs_f64(), v));
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let status = run.0.wait().unwrap();
    let run_rest: Vec<String> = run_err.try_iter().collect();
    assert_eq!(status.code(), Some(0), "{run_seen:?} {run_rest:?}");
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).expect("the --out report");
    let _ = std::fs::remove_file(&out);

    // Live: updated at least once a second while the run went (samples
    // taken while it was not done yet), with rows arriving.
    let running: Vec<&(f64, Value)> = live.iter().filter(|(_, v)| v["done"] == false).collect();
    assert!(running.len() >= 10, "too few live samples: {live:?}");
    for a in &running {
        for b in &running {
            if b.0 - a.0 >= 1.0 {
                assert!(
                    b.1["updates"].as_u64() > a.1["updates"].as_u64(),
                    "no update from {} s to {} s: {a:?} {b:?}",
                    a.0,
                    b.0
                );
            }
        }
    }
    let most_rows = running.iter().filter_map(|(_, v)| v["rows"].as_u64()).max();
    assert!(most_rows >= Some(3), "rows while live: {live:?}");
    // The live page is the report's: its time series drawn by the same
    // code as the --html page, from the rows so far.
    for (_, v) in running.iter().filter(|(_, v)| v["rows"].as_u64() > Some(0)) {
        assert_eq!(v["ok"], true, "{v}");
        let charts: Vec<&str> = v["charts"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for id in ["ts-latency", "ts-rate", "ts-errors"] {
            assert!(charts.contains(&id), "{id} not drawn live: {v}");
        }
        // The send-lag p99 only of rows with the 100 sends a p99 needs (the
        // one rule): else a sentence.
        let n = v["rows"].as_u64().unwrap() as usize;
        let enough = saved["intervals"].as_array().unwrap()[..n]
            .iter()
            .any(|row| metronome::report::enough::enough(row["sent"].as_u64().unwrap(), 0.99));
        assert_eq!(charts.contains(&"ts-lag"), enough, "{v}");
    }
    // The rows shown live equal the report's.
    for (_, v) in &running {
        if let Some(n) = v["rows"].as_u64().filter(|&n| n > 0) {
            let (shown, row) = (&v["last"], &saved["intervals"][n as usize - 1]);
            for (k, want) in row.as_object().unwrap() {
                // JavaScript prints 0.0 as 0: numbers compare as numbers.
                match want.as_f64() {
                    Some(w) => assert_eq!(shown[k].as_f64(), Some(w), "row {n} {k}"),
                    None => assert_eq!(&shown[k], want, "row {n} {k}"),
                }
            }
        }
    }
    // The end: the --html page of the very report written to --out.
    assert_eq!(report, saved);
    let errors = common::schema_errors(&saved);
    assert!(errors.is_empty(), "{errors:?}");
    let cpu = saved["generator"]["dashboard_cpu_s"]
        .as_f64()
        .expect("dashboard_cpu_s");
    assert!(
        cpu > 0.0 && cpu < saved["duration_s"].as_f64().unwrap(),
        "{cpu}"
    );
    // Nothing but its own address.
    assert!(!urls.is_empty());
    for u in &urls {
        assert!(u.starts_with(&page), "a request outside the dashboard: {u}");
    }
    drop(chrome.0.stdin.take());
    let _ = chrome.0.kill();
    let _ = chrome.0.wait();
    chrome_seen.extend(chrome_err.try_iter());
    let console: Vec<&String> = chrome_seen
        .iter()
        .filter(|l| l.contains(":CONSOLE"))
        .collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    let _ = std::fs::remove_dir_all(&profile);
}

/// `sweep` (and `--repeat`) runs share one dashboard: one address printed
/// once; each step begins a new page (`page` in `/live.json` counts up, the
/// rows start empty again, the page reloads into it) titled by its step;
/// at the end `/` is the sweep's `--html` page. Read over plain HTTP, so
/// it needs no browser.
#[test]
fn a_sweep_shares_one_dashboard_and_ends_as_its_page() {
    let srv = server(plain(Duration::from_millis(2)));
    let url = format!("http://{}/", srv.addr());
    let mut run = Killed(
        Command::new(env!("CARGO_BIN_EXE_metronome"))
            .args(["sweep", &url, "--rates", "50,100", "--duration", "3s"])
            .args(["--engine", "std", "--interval", "500ms", "--dashboard"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let run_err = lines(run.0.stderr.take().unwrap());
    let mut seen = Vec::new();
    let first = wait_for(&run_err, "dashboard on http://", &mut seen);
    let addr = first
        .split("http://")
        .nth(1)
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    // (page, rows, label in the page) as polled every 50 ms.
    let mut polls: Vec<(u64, usize, String)> = Vec::new();
    let until = Instant::now() + Duration::from_secs(60);
    let last_page = loop {
        assert!(Instant::now() < until, "the sweep never ended: {polls:?}");
        let live: Value = serde_json::from_str(&get(&addr, "/live.json")).unwrap_or_default();
        let page = get(&addr, "/");
        if live["done"] == true {
            break page;
        }
        // The page's label is read between two polls of the same page.
        let again: Value = serde_json::from_str(&get(&addr, "/live.json")).unwrap_or_default();
        if again["page"] != live["page"] || !page.contains("\"kind\":\"live\"") {
            // Between two pages, or the run just ended (the sweep's page).
            continue;
        }
        if let Some(p) = live["page"].as_u64() {
            let label = page
                .split("\"label\":\"")
                .nth(1)
                .and_then(|l| l.split('"').next())
                .unwrap_or("")
                .to_string();
            let rows = live["rows"].as_array().map_or(0, Vec::len);
            polls.push((p, rows, label));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let status = run.0.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{seen:?}");
    let rest: Vec<String> = run_err.try_iter().collect();
    assert!(
        !rest.iter().any(|l| l.contains("dashboard on")),
        "one address for the whole sweep: {rest:?}"
    );
    // Each step's page, in order, titled by its step, its rows from empty.
    let step = |p: u64| polls.iter().filter(move |q| q.0 == p);
    let mut pages: Vec<u64> = polls.iter().map(|q| q.0).collect();
    pages.dedup();
    assert_eq!(pages, [1, 2], "{polls:?}");
    for (p, label) in [
        (1, "sweep step 1/2: 50.00 req/s"),
        (2, "sweep step 2/2: 100.0 req/s"),
    ] {
        assert!(step(p).all(|q| q.2 == label), "page {p}: {polls:?}");
        // Rows close a second after their end (core's grace): some show.
        assert!(step(p).any(|q| q.1 >= 1), "rows on page {p}: {polls:?}");
    }
    let first_of_2 = step(2).next().unwrap();
    assert!(first_of_2.1 <= 1, "step 2 starts empty: {polls:?}");
    // The end: the sweep's page.
    assert!(
        last_page.contains("\"kind\":\"sweep\""),
        "{}",
        &last_page[..last_page.len().min(400)]
    );
}
