//! `--connect-to HOST:PORT:ADDR:PORT` and `--resolve HOST:PORT:ADDR`
//! (issue 41 item 4), spelled as curl and oha spell them: the URL's host
//! goes in `Host`, TLS SNI and the certificate check, the connection to the
//! given loopback address. Against nginx with a name-based virtual host
//! (a server nobody here wrote: the vhost answers 200, the default server
//! 421, its log names the Host and SNI it saw) over http and https, and
//! against `serve`, on both engines.

use std::time::Duration;

use crate::common::nginx::{self, Nginx};
use crate::common::{assert_accounting, engines, metronome, plain, run_url_json, server};

/// The vhost `vhost.test` (200 "vhost") beside a default server (421), on
/// one port, over TLS when `certs` holds a certificate for vhost.test.
fn vhost_nginx(bin: &std::path::Path, certs: Option<&std::path::Path>) -> Nginx {
    let (listen, tls) = match certs {
        None => ("listen 127.0.0.1:{port}", String::new()),
        Some(c) => (
            "listen 127.0.0.1:{port} ssl",
            format!(
                "ssl_certificate {c}/cert.pem; ssl_certificate_key {c}/key.pem;",
                c = c.display()
            ),
        ),
    };
    let servers = format!(
        "server {{ {listen} default_server; {tls} location / {{ return 421 \"default\\n\"; }} }}\n\
         server {{ {listen}; server_name vhost.test; {tls} location / {{ return 200 \"vhost\\n\"; }} }}"
    );
    Nginx::start(bin, "vhost", "$host|$ssl_server_name|$status", &servers)
}

/// http: `--connect-to` and `--resolve` reach the vhost at 127.0.0.1 by
/// the URL's name; without them the name does not resolve (exit 2). Every
/// request nginx logged carried Host vhost.test and got its 200.
#[test]
fn connect_to_and_resolve_reach_an_nginx_vhost() {
    let Some(bin) = nginx::binary("connect_to_and_resolve_reach_an_nginx_vhost") else {
        return;
    };
    for engine in engines() {
        let ngx = vhost_nginx(&bin, None);
        let p = ngx.port;
        let url = "http://vhost.test/";
        let connect = format!("vhost.test:80:127.0.0.1:{p}");
        let r = run_url_json(
            url,
            engine,
            &["--connect-to", &connect, "-n", "50", "--rate", "500"],
            0,
        );
        assert_eq!(r.requests.ok, 50, "{engine}: {:?}", r.errors);
        assert_accounting(&r);
        assert_eq!(r.target, url);
        let url_p = format!("http://vhost.test:{p}/");
        let resolve = format!("vhost.test:{p}:127.0.0.1");
        let r = run_url_json(
            &url_p,
            engine,
            &["--resolve", &resolve, "-n", "50", "--rate", "500"],
            0,
        );
        assert_eq!(r.requests.ok, 50, "{engine}: {:?}", r.errors);
        let log = ngx.log();
        let measured: Vec<&String> = log
            .iter()
            .filter(|l| l.starts_with("vhost.test|"))
            .collect();
        assert!(measured.len() >= 100, "{engine}: {log:?}");
        assert!(
            log.iter()
                .all(|l| l.starts_with("vhost.test|") && l.ends_with("|200")),
            "{engine}: every request to the vhost: {log:?}"
        );
        // The same address by its own name is the default server: 421.
        let r = run_url_json(
            &format!("http://127.0.0.1:{p}/"),
            engine,
            &["-n", "5", "--rate", "100", "--warm-up", "off"],
            1,
        );
        assert_eq!(r.requests.ok, 0, "{engine}");
        assert_eq!(
            r.errors.by_status.get("421").copied(),
            Some(5),
            "{engine}: {:?}",
            r.errors
        );
    }
    // Without a route the name is not resolved: a usage error in one line.
    let out = metronome(&["run", "http://vhost.test/", "-n", "1"]);
    assert_eq!(out.status.code(), Some(2));
}

/// https: the certificate names vhost.test only (no address), so the run
/// to 127.0.0.1 passes its check only under the URL's name, and nginx
/// picks the vhost by SNI: its log shows SNI vhost.test on every request.
/// The same certificate at `https://127.0.0.1` is refused (exit 1).
#[test]
fn connect_to_keeps_sni_and_the_certificate_name() {
    let Some(bin) = nginx::binary("connect_to_keeps_sni_and_the_certificate_name") else {
        return;
    };
    let certs = std::env::temp_dir().join(format!("metronome-connect-to-{}", std::process::id()));
    if !nginx::certificate(&certs, &["vhost.test"]) {
        return;
    }
    let cacert = certs.join("cert.pem");
    let cacert = cacert.to_str().unwrap();
    for engine in engines() {
        let ngx = vhost_nginx(&bin, Some(&certs));
        let p = ngx.port;
        let connect = format!("vhost.test:443:127.0.0.1:{p}");
        let args = [
            "--connect-to",
            &connect,
            "--cacert",
            cacert,
            "-n",
            "40",
            "--rate",
            "400",
        ];
        let r = run_url_json("https://vhost.test/", engine, &args, 0);
        assert_eq!(r.requests.ok, 40, "{engine}: {:?}", r.errors);
        let resolve = format!("vhost.test:{p}:127.0.0.1");
        let args = [
            "--resolve",
            &resolve,
            "--cacert",
            cacert,
            "-n",
            "40",
            "--rate",
            "400",
        ];
        let r = run_url_json(&format!("https://vhost.test:{p}/"), engine, &args, 0);
        assert_eq!(r.requests.ok, 40, "{engine}: {:?}", r.errors);
        let log = ngx.log();
        assert!(log.len() >= 80, "{engine}: {log:?}");
        assert!(
            log.iter().all(|l| l == "vhost.test|vhost.test|200"),
            "{engine}: Host and SNI vhost.test on every request: {log:?}"
        );
        let out = metronome(&[
            "run",
            &format!("https://127.0.0.1:{p}/"),
            "--cacert",
            cacert,
            "-n",
            "3",
            "--engine",
            engine,
            "--quiet",
        ]);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{engine}: the name check must fail"
        );
    }
    let _ = std::fs::remove_dir_all(&certs);
}

/// Against `serve`: wildcards (any host, any port), IPv4 and a route that
/// matches nothing (a one-line notice, then DNS); bad values exit 2.
#[test]
fn connect_to_against_serve_and_bad_values() {
    let srv = server(plain(Duration::ZERO));
    let port = srv.addr().port().to_string();
    for engine in engines() {
        for route in [
            vec!["--connect-to".to_string(), format!("::127.0.0.1:{port}")],
            vec![
                "--connect-to".to_string(),
                format!("api.test::[127.0.0.1]:{port}"),
            ],
            // connect-to first (the port), then resolve (the host), as curl.
            vec![
                "--resolve".to_string(),
                format!("*:{port}:127.0.0.1"),
                "--connect-to".into(),
                format!("api.test:9::{port}"),
            ],
        ] {
            let mut args: Vec<&str> = route.iter().map(String::as_str).collect();
            args.extend(["-n", "20", "--rate", "200"]);
            let r = run_url_json("http://api.test:9/x", engine, &args, 0);
            assert_eq!(r.requests.ok, 20, "{engine} {route:?}: {:?}", r.errors);
        }
    }
    let url = format!("http://127.0.0.1:{port}/");
    let out = metronome(&[
        "run",
        &url,
        "--resolve",
        "other.test:80:127.0.0.1",
        "-n",
        "2",
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--resolve other.test:80:127.0.0.1") && err.contains("not used"),
        "{err}"
    );
    srv.stop();
    for bad in [
        ["--connect-to", "a:1:b"],
        ["--connect-to", "a:x:b:1"],
        ["--resolve", "a:1:nope"],
        ["--resolve", ":1:127.0.0.1"],
    ] {
        let mut args = vec!["run", "http://127.0.0.1:9/"];
        args.extend(bad);
        let out = metronome(&args);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{bad:?}: {err}");
        assert!(err.contains(bad[0]), "{bad:?}: {err}");
    }
}
