//! The same hostile servers over TLS: every script runs inside a TLS session
//! (each write one record, so splits stay splits), the client trusts the
//! server's fresh certificate with --cacert; the expected outcomes are the
//! same as over plain HTTP. (A silent server that never reads cannot
//! complete a handshake: over TLS that is a handshake timeout before the
//! clock, exit 1, tested in tests/e2e/tls.rs.)

use crate::broken::broken_responses_have_one_kind_and_cause;
use crate::case::{run, N, SHORT};
use crate::common::engines;
use crate::framing::unusual_but_valid_framing;
use crate::lifecycle::{
    cut_before_the_response_on_a_reused_connection, half_close_and_connection_close_are_clean_ends,
    idle_close_by_the_server_is_charged_to_no_request,
};
use crate::openai::openai_streams;
use crate::script::{over_tls, script};
use crate::unsolicited::unsolicited_bytes_close_the_connection;

#[test]
fn over_tls_idle_close_by_the_server_is_charged_to_no_request() {
    over_tls(idle_close_by_the_server_is_charged_to_no_request);
}

#[test]
fn over_tls_half_close_and_connection_close_are_clean_ends() {
    over_tls(half_close_and_connection_close_are_clean_ends);
}

#[test]
fn over_tls_cut_before_the_response_on_a_reused_connection() {
    over_tls(cut_before_the_response_on_a_reused_connection);
}

#[test]
fn over_tls_unusual_but_valid_framing() {
    over_tls(unusual_but_valid_framing);
}

#[test]
fn over_tls_unsolicited_bytes_close_the_connection() {
    over_tls(unsolicited_bytes_close_the_connection);
}

#[test]
fn over_tls_broken_responses_have_one_kind_and_cause() {
    over_tls(broken_responses_have_one_kind_and_cause);
}

#[test]
fn over_tls_openai_streams() {
    over_tls(openai_streams);
}

/// Over TLS, the first connection answers one request and closes
/// (`Connection: close`); every later one is dropped before its handshake.
/// Each request after the first needs a new connection whose handshake
/// fails: it is never sent (`unsent_by_reason.connect`), and the failure is
/// counted as `protocol`; nothing else fails.
#[test]
fn over_tls_handshake_failures_during_the_run_are_counted() {
    over_tls(|| {
        let s = script(|p| {
            if p.index == 0 && p.request().is_some() {
                p.send(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
            }
        });
        for engine in engines() {
            let r = run(engine, &s, "/", SHORT);
            let q = &r.report.requests;
            let c = &r.report.connections;
            assert_eq!(
                (q.scheduled, q.sent, q.ok),
                (N, 1, 1),
                "{}",
                r.ctx("drop at handshake")
            );
            assert_eq!(q.unsent, N - 1, "{}", r.ctx("drop at handshake"));
            assert_eq!(r.report.errors.unsent_by_reason["connect"], N - 1);
            let protocol = c.handshake_failures["protocol"];
            // The io_uring engine also replaces the closed connection at
            // once, before a request needs it: one more failure.
            assert!(
                (N - 1..=N).contains(&protocol),
                "{engine}: {protocol} protocol failures; {c:?}"
            );
            assert_eq!(c.handshake_failures["certificate"], 0, "{engine}");
            assert!(
                r.report
                    .generator
                    .warnings
                    .iter()
                    .any(|w| w.contains("TLS handshakes failed")),
                "{engine}: {:?}",
                r.report.generator.warnings
            );
        }
    });
}
