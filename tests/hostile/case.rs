//! Running a case.
//!
//! Runs are short (`--rate 20 --duration 500ms`, ten requests) and use
//! `--connections 1` where exact counts depend on a single connection's
//! story.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use metronome::report::Report;

use crate::common::{run_json_checked, run_tls_json_checked};
use crate::script::{Script, Seen, Server};

/// The short run most cases use: ten requests 50 ms apart on one connection.
pub(crate) const SHORT: &[&str] = &[
    "--rate",
    "20",
    "--duration",
    "500ms",
    "--connections",
    "1",
    "--timeout",
    "500ms",
];
/// Requests in a [`SHORT`] run.
pub(crate) const N: u64 = 10;
/// Five requests 200 ms apart, a long timeout: for slow answers.
pub(crate) const SLOW: &[&str] = &[
    "--rate",
    "5",
    "--duration",
    "1s",
    "--connections",
    "1",
    "--timeout",
    "3s",
];
/// Ten requests 100 ms apart: room for a server to do something between two.
pub(crate) const SPACED: &[&str] = &[
    "--rate",
    "10",
    "--duration",
    "1s",
    "--connections",
    "1",
    "--timeout",
    "500ms",
];

pub(crate) const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// One run of the binary against a fresh server.
pub(crate) struct Run {
    pub(crate) engine: &'static str,
    pub(crate) report: Report,
    pub(crate) seen: Seen,
    pub(crate) elapsed: Duration,
}

impl Run {
    pub(crate) fn requests(&self) -> &metronome::report::Requests {
        &self.report.requests
    }

    pub(crate) fn generator(&self) -> &metronome::report::Generator {
        &self.report.generator
    }

    /// A one-line account for assertion messages.
    pub(crate) fn ctx(&self, case: &str) -> String {
        let r = &self.report;
        let g = &r.generator;
        format!(
            "[{case} / {}] {:?} kinds {:?} status {:?} causes {:?} unsent {:?} \
             opened {} closed_idle {} unsolicited {} server {:?} in {:?}",
            self.engine,
            r.requests,
            nonzero(&r.errors.by_kind),
            r.errors.by_status,
            nonzero(&r.errors.bad_framing_by_cause),
            nonzero(&r.errors.unsent_by_reason),
            g.connections_opened,
            g.connections_closed_idle,
            g.connections_unsolicited,
            self.seen,
            self.elapsed,
        )
    }

    /// Exactly `n` requests scheduled and sent, `ok` of them ok, and the
    /// failures exactly `kinds` (every other kind zero).
    #[track_caller]
    pub(crate) fn expect(&self, case: &str, n: u64, ok: u64, kinds: &[(&str, u64)]) {
        let ctx = self.ctx(case);
        let q = self.requests();
        assert_eq!(q.scheduled, n, "scheduled; {ctx}");
        assert_eq!(q.sent, n, "sent; {ctx}");
        assert_eq!(q.ok, ok, "ok; {ctx}");
        let want: BTreeMap<&str, u64> = kinds.iter().copied().filter(|&(_, c)| c > 0).collect();
        assert_eq!(nonzero(&self.report.errors.by_kind), want, "kinds; {ctx}");
    }

    /// Exactly `used` connections carried requests. The io_uring engine
    /// replaces a closed connection at once while the schedule runs, so
    /// the server may see one more that no request used (opened as the
    /// last request ended); the std engine opens one only for a request.
    #[track_caller]
    pub(crate) fn expect_connections(&self, case: &str, used: u64) {
        let ctx = self.ctx(case);
        assert_eq!(self.seen.used, used, "connections used; {ctx}");
        assert!(
            (used..=used + 1).contains(&self.seen.accepted),
            "connections accepted; {ctx}"
        );
    }

    /// The bad-framing causes are exactly `causes`.
    #[track_caller]
    pub(crate) fn expect_causes(&self, case: &str, causes: &[(&str, u64)]) {
        let want: BTreeMap<&str, u64> = causes.iter().copied().collect();
        assert_eq!(
            nonzero(&self.report.errors.bad_framing_by_cause),
            want,
            "causes; {}",
            self.ctx(case)
        );
    }
}

/// The non-zero entries of a count map.
pub(crate) fn nonzero(m: &BTreeMap<String, u64>) -> BTreeMap<&str, u64> {
    m.iter()
        .filter(|(_, &c)| c > 0)
        .map(|(k, &c)| (k.as_str(), c))
        .collect()
}

/// Runs `metronome run http://ADDR{path} ARGS` on `engine` against a fresh
/// server running `script`, then stops the server. The scripts count each
/// connection's requests from the run's first, so the warm start's request
/// is left out (`--warm-up off`, unless `args` name another); the warm
/// start is tested in e2e_defaults.rs.
pub(crate) fn run(engine: &'static str, script: &Script, path: &str, args: &[&str]) -> Run {
    let server = Server::start(script.clone());
    let t = Instant::now();
    let mut args = args.to_vec();
    if !args.contains(&"--warm-up") {
        args.extend(["--warm-up", "off"]);
    }
    let args = &args[..];
    let report = match &server.cert {
        Some(cert) => run_tls_json_checked(server.addr, path, engine, args, &cert.path),
        None => run_json_checked(server.addr, path, engine, args),
    };
    let elapsed = t.elapsed();
    let seen = server.stop();
    Run {
        engine,
        report,
        seen,
        elapsed,
    }
}

/// `args` followed by `more`.
pub(crate) fn with<'a>(args: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    let mut v = args.to_vec();
    v.extend_from_slice(more);
    v
}
