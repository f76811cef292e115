//! Checks on the answer (issue 41 item 2): `--check-status`,
//! `--check-header`, `--check-body`, `--check-regex` and a `--requests`
//! line's own `check`. A response that fails one is an error of kind
//! `check`, counted by which check (`errors.by_check`), never a success.
//! Body checks see the whole body across reads, chunks, DATA frames and
//! SSE events: against nginx (a server nobody here wrote) with a chunked
//! body whose expected text straddles a chunk boundary (nginx's SSI sends
//! each part as its own chunk; the test reads the raw bytes once to prove
//! it), an SSE stream read by `--openai`, and HTTP/2; against `serve` over
//! HTTP/1.1, HTTP/2 and HTTP/3. Both engines; exact counts.

use std::io::{Read, Write};
use std::time::Duration;

use crate::common::nginx::{self, Nginx};
use crate::common::{assert_accounting, engines, metronome, run_json, run_url_json, server};
use metronome::report::Report;
use metronome::serve::ServeConfig;

/// The files nginx serves: `/page.html`, whose text "hello world" is cut
/// by the SSI include into two chunks ("... hello wor" | "ld, ..."), and
/// an OpenAI-style stream at `/v1/chat/completions` (POST answered with
/// the file) whose second half is also an include.
fn write_site(dir: &std::path::Path) {
    let html = dir.join("html");
    std::fs::create_dir_all(html.join("v1/chat")).unwrap();
    std::fs::write(
        html.join("page.html"),
        "first part says hello wor<!--# include virtual=\"/tail.txt\" -->",
    )
    .unwrap();
    std::fs::write(html.join("tail.txt"), "ld, and the rest").unwrap();
    std::fs::write(
        html.join("v1/chat/completions"),
        "data: {\"choices\":[{\"delta\":{\"content\":\"hel\"}}]}\n\n\
         data: {\"choices\":[{\"delta\":{\"content\":\"lo wor\"}}]}\n\n\
         <!--# include virtual=\"/sse_tail.txt\" -->",
    )
    .unwrap();
    std::fs::write(
        html.join("sse_tail.txt"),
        "data: {\"choices\":[{\"delta\":{\"content\":\"ld\"}}],\"usage\":{\"completion_tokens\":3}}\n\n\
         data: [DONE]\n\n",
    )
    .unwrap();
}

/// nginx serving [`write_site`] with SSI; `http2`: h2c (prior knowledge).
fn site_nginx(bin: &std::path::Path, tag: &str, http2: bool) -> Nginx {
    let h2 = if http2 { " http2" } else { "" };
    let servers = format!(
        "server {{ listen 127.0.0.1:{{port}}{h2}; root {{dir}}/html;\n\
         location / {{ ssi on; ssi_types *; }}\n\
         location /v1/ {{ default_type text/event-stream; ssi on; ssi_types *; \
         error_page 405 =200 $uri; }} }}"
    );
    // The files go in before the first request: nginx reads them per request.
    let ngx = Nginx::start(bin, tag, "$status", &servers);
    write_site(ngx.dir());
    ngx
}

/// The raw response of `GET path` (HTTP/1.1, `Connection: close`).
fn raw_get(port: u16, path: &str) -> String {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// `run URL --quiet --format json --engine E ARGS -n 30 --rate 300`,
/// expecting `code`.
fn run_n(url: &str, engine: &str, args: &[&str], code: i32) -> Report {
    let mut all = args.to_vec();
    all.extend(["-n", "30", "--rate", "300"]);
    let r = run_url_json(url, engine, &all, code);
    assert_accounting(&r);
    assert_check_accounts(&r);
    r
}

/// `by_kind.check = sum(by_check)`, and a check failure is never a status.
fn assert_check_accounts(r: &Report) {
    let kind = r.errors.by_kind.get("check").copied().unwrap_or(0);
    let by: u64 = r.errors.by_check.iter().flatten().map(|(_, n)| n).sum();
    assert_eq!(kind, by, "{:?}", r.errors);
}

fn failed(r: &Report, which: &str) -> u64 {
    r.errors.by_check.as_ref().expect("by_check")[which]
}

/// nginx, HTTP/1.1 chunked: "hello world" is found across the chunk
/// boundary (and "hello there" is not: 30 `body` failures); a regex across
/// it; the status and a header; an SSE stream read by `--openai`, its
/// text across events and chunks.
#[test]
fn nginx_chunked_and_sse_bodies_across_boundaries() {
    let Some(bin) = nginx::binary("nginx_chunked_and_sse_bodies_across_boundaries") else {
        return;
    };
    let ngx = site_nginx(&bin, "checks", false);
    let raw = raw_get(ngx.port, "/page.html");
    assert!(
        raw.contains("Transfer-Encoding: chunked") && raw.contains("hello wor\r\n"),
        "the premise: nginx cuts the text at a chunk boundary: {raw:?}"
    );
    let page = format!("http://127.0.0.1:{}/page.html", ngx.port);
    let sse = format!("http://127.0.0.1:{}/v1/chat/completions", ngx.port);
    for engine in engines() {
        let pass = [
            "--check-body",
            "hello world",
            "--check-regex",
            r"says\s+hello\s+world, and",
            "--check-status",
            "2xx",
            "--check-header",
            "Content-Type: text/html",
        ];
        let r = run_n(&page, engine, &pass, 0);
        assert_eq!(r.requests.ok, 30, "{engine}: {:?}", r.errors);
        assert_eq!(failed(&r, "body"), 0);
        let r = run_n(&page, engine, &["--check-body", "hello there"], 1);
        assert_eq!((r.requests.ok, failed(&r, "body")), (0, 30), "{engine}");
        let r = run_n(&page, engine, &["--check-regex", r"world$"], 1);
        assert_eq!((r.requests.ok, failed(&r, "regex")), (0, 30), "{engine}");
        let r = run_n(
            &page,
            engine,
            &["--check-header", "Content-Type: text/plain"],
            1,
        );
        assert_eq!((r.requests.ok, failed(&r, "header")), (0, 30), "{engine}");
        // The stream: content "hel" + "lo wor" + "ld" over two chunks.
        let openai = ["--openai", "--model", "m"];
        let mut a = openai.to_vec();
        a.extend(["--check-body", r#""usage":{"completion_tokens":3}"#]);
        a.extend(["--check-regex", r#"(?s)"lo wor".*"ld""#]);
        let r = run_n(&sse, engine, &a, 0);
        assert_eq!(r.requests.ok, 30, "{engine}: {:?}", r.errors);
        let mut a = openai.to_vec();
        a.extend(["--check-body", r#""completion_tokens":4"#]);
        let r = run_n(&sse, engine, &a, 1);
        assert_eq!((r.requests.ok, failed(&r, "body")), (0, 30), "{engine}");
    }
    assert!(ngx.log().iter().all(|l| l == "200"), "{:?}", ngx.log());
}

/// nginx over h2c: the checks on DATA frames and HPACK-decoded fields.
#[test]
fn nginx_h2c_checks() {
    let Some(bin) = nginx::binary("nginx_h2c_checks") else {
        return;
    };
    let ngx = site_nginx(&bin, "checks-h2", true);
    let page = format!("http://127.0.0.1:{}/page.html", ngx.port);
    for engine in engines() {
        let h2 = "--http2-prior-knowledge";
        let pass = [
            h2,
            "--check-body",
            "hello world",
            "--check-header",
            "content-type: text/html",
        ];
        let r = run_n(&page, engine, &pass, 0);
        assert_eq!(r.requests.ok, 30, "{engine}: {:?}", r.errors);
        let r = run_n(&page, engine, &[h2, "--check-body", "hello there"], 1);
        assert_eq!(failed(&r, "body"), 30, "{engine}");
        let r = run_n(&page, engine, &[h2, "--check-header", "x-missing"], 1);
        assert_eq!(failed(&r, "header"), 30, "{engine}");
    }
}

/// The four checks, passing and each failing alone, against `serve` over
/// HTTP/1.1 and HTTP/2 (and its SSE streams), on both engines. A status
/// check that accepts a non-2xx answer makes it a success.
#[test]
fn every_check_against_serve() {
    for http2 in [false, true] {
        let srv = server(ServeConfig {
            http2,
            ..crate::common::plain(Duration::ZERO)
        });
        let h2: &[&str] = if http2 {
            &["--http2-prior-knowledge"]
        } else {
            &[]
        };
        let url = format!("http://{}/", srv.addr());
        for engine in engines() {
            fn with<'a>(h2: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
                let mut a = h2.to_vec();
                a.extend_from_slice(extra);
                a
            }
            let pass = with(
                h2,
                &[
                    "--check-status",
                    "200",
                    "--check-header",
                    "Content-Type: text/plain",
                    "--check-body",
                    "ok",
                    "--check-regex",
                    "^ok$",
                ],
            );
            let r = run_n(&url, engine, &pass, 0);
            assert_eq!(r.requests.ok, 30, "{engine} h2 {http2}: {:?}", r.errors);
            for (flag, value, which) in [
                ("--check-status", "201", "status"),
                ("--check-header", "Content-Type: text/html", "header"),
                ("--check-body", "ko", "body"),
                ("--check-regex", "^o$", "regex"),
            ] {
                let r = run_n(&url, engine, &with(h2, &[flag, value]), 1);
                assert_eq!(r.requests.ok, 0, "{engine} {flag}");
                assert_eq!(failed(&r, which), 30, "{engine} h2 {http2} {flag}");
                assert!(r.errors.by_status.is_empty(), "{:?}", r.errors);
            }
        }
        srv.stop();
    }
    // SSE over HTTP/1.1 and HTTP/2: the whole stream is checked.
    for http2 in [false, true] {
        let srv = server(ServeConfig {
            sse: true,
            tokens: 3,
            http2,
            ttft: Duration::from_millis(1),
            itl: Duration::from_millis(1),
            ..ServeConfig::default()
        });
        for engine in engines() {
            let mut a = vec!["--openai", "--model", "metronome"];
            if http2 {
                a.push("--http2-prior-knowledge");
            }
            let url = format!("http://{}/v1/chat/completions", srv.addr());
            let mut pass = a.clone();
            pass.extend([
                "--check-body",
                r#""completion_tokens":3"#,
                "--check-regex",
                "tok0 .*\n(.|\n)*tok2 ",
            ]);
            let r = run_n(&url, engine, &pass, 0);
            assert_eq!(r.requests.ok, 30, "{engine} {http2}: {:?}", r.errors);
            let mut fail = a.clone();
            fail.extend(["--check-body", "tok3 "]);
            let r = run_n(&url, engine, &fail, 1);
            assert_eq!(failed(&r, "body"), 30, "{engine} {http2}");
        }
        srv.stop();
    }
    // A 429 to every request, accepted by --check-status 4xx: successes.
    let srv = server(ServeConfig {
        error_every: Some(1),
        ..crate::common::plain(Duration::ZERO)
    });
    for engine in engines() {
        let r = run_json(
            srv.addr(),
            "/",
            engine,
            &["-n", "20", "--check-status", "4xx"],
            0,
        );
        assert_eq!(r.requests.ok, 20, "{engine}: {:?}", r.errors);
    }
    srv.stop();
}

/// HTTP/3 against `serve --http3`: a body check on QUIC DATA frames, a
/// header on QPACK-decoded fields, both engines.
#[test]
fn checks_over_http3() {
    let mut srv = crate::serve_h3::H3Serve::start("checks", crate::common::plain(Duration::ZERO));
    for engine in engines() {
        let r = srv.run_on(
            engine,
            "/",
            &[
                "-n",
                "30",
                "--check-body",
                "ok",
                "--check-header",
                "content-type: text/plain",
            ],
        );
        assert_eq!(r.requests.ok, 30, "{engine}: {:?}", r.errors);
        let r = srv.run_code(engine, "/", &["-n", "30", "--check-body", "nope"], 1);
        assert_eq!(failed(&r, "body"), 30, "{engine}");
        let r = srv.run_code(engine, "/", &["-n", "30", "--check-header", "x-missing"], 1);
        assert_eq!(failed(&r, "header"), 30, "{engine}");
    }
    srv.stop();
}

/// A mix: each `--requests` line's own `check` over the run's; the report
/// counts the failures under the failing request's name only.
#[test]
fn a_mix_checks_each_request_by_its_own() {
    let dir = std::env::temp_dir().join(format!("metronome-checks-mix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("mix.jsonl");
    std::fs::write(
        &file,
        "{\"name\": \"good\", \"path\": \"/a\"}\n\
         {\"name\": \"bad\", \"path\": \"/b\", \"check\": {\"body\": \"not there\"}}\n",
    )
    .unwrap();
    let srv = server(crate::common::plain(Duration::ZERO));
    for engine in engines() {
        let args = [
            "--requests",
            file.to_str().unwrap(),
            "--mix",
            "round-robin",
            "--check-body",
            "ok",
            "-n",
            "40",
        ];
        let r = run_json(srv.addr(), "/", engine, &args, 0);
        let row = |n: &str| r.by_request.iter().find(|q| q.name == n).unwrap().clone();
        assert_eq!(row("good").ok, 20, "{engine}");
        assert_eq!(row("bad").ok, 0, "{engine}");
        assert_eq!(failed(&r, "body"), 20, "{engine}");
        assert_check_accounts(&r);
    }
    srv.stop();
    // A bad check in a line is named with it.
    std::fs::write(
        &file,
        "{\"path\": \"/\", \"check\": {\"status\": \"9xx\"}}\n",
    )
    .unwrap();
    let out = metronome(&[
        "run",
        "http://127.0.0.1:9/",
        "--requests",
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("GET /") && err.contains("--check-status"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bad checks: one line, exit 2, before any request.
#[test]
fn bad_checks_exit_2() {
    for bad in [
        ["--check-status", "20"],
        ["--check-status", "2xy"],
        ["--check-regex", "(unclosed"],
        ["--check-regex", r"\w{1000}\w{1000}"],
        ["--check-body", ""],
        ["--check-header", ": v"],
    ] {
        let out = metronome(&["run", "http://127.0.0.1:9/", bad[0], bad[1]]);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{bad:?}: {err}");
        assert!(err.contains(bad[0]), "{bad:?}: {err}");
    }
}
