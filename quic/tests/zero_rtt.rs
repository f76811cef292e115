//! 0-RTT over the loopback harness (`common/`): a first connection leaves
//! the client a session ticket; a second one starts requests before its
//! handshake completes. Accepted, they are answered as sent; rejected (a
//! server without the ticket, as one restarted), quinn forgets their
//! streams and numbers streams from 0 again, and the client writes each
//! one again: every request reaches the server once and is answered once.
//! A handshake lost after early requests ends them (none lost). Without
//! early data in the client's configuration, nothing is early.

mod common;

use common::*;
use metronome_core::engine::ZeroRtt;

/// A first connection to `sc`, through its handshake and the server's
/// session ticket, then closed.
fn first(cfg: &Config, sc: &Arc<ServerConfig>) {
    let mut p = Pair::unopened(cfg, Arc::clone(sc), 16_384);
    p.pump();
    assert_eq!(p.client.state(), State::Live);
    assert_eq!(p.client.zero_rtt(), ZeroRtt::default());
    p.client.close(p.now);
    p.pump();
}

/// A second connection to `sc` with jobs 1 to 3 started before anything
/// moved; the server answers every request it read.
fn second(cfg: &Config, sc: &Arc<ServerConfig>) -> Pair {
    let mut p = Pair::unopened(cfg, Arc::clone(sc), 16_384);
    assert_eq!(p.client.state(), State::Handshaking);
    p.start(&[1, 2, 3], false);
    assert_eq!(p.client.state(), State::Live);
    let ids = p.server.requests.clone();
    for id in ids {
        p.answer(id, 200);
    }
    p
}

#[test]
fn early_requests_accepted_are_answered() {
    let (cfg, sc, _) = configs_with(10, true);
    first(&cfg, &sc);
    let mut p = second(&cfg, &sc);
    assert_eq!(p.server.requests.len(), 3);
    let ok = Ends::Ok(200);
    assert_eq!(p.ends(), vec![(1, ok), (2, ok), (3, ok)]);
    assert_eq!(p.client.in_flight(), 0);
    assert_eq!(
        p.client.zero_rtt(),
        ZeroRtt {
            attempted: 1,
            accepted: 1,
            rejected: 0,
            requests: 3,
            resent: 0,
        }
    );
}

#[test]
fn early_requests_rejected_are_sent_again_once() {
    let (cfg, sc, restarted) = configs_with(10, true);
    first(&cfg, &sc);
    let mut p = second(&cfg, &restarted);
    // Streams 0, 4, 8 again, each read to its end once by the server.
    let mut ids: Vec<u64> = p
        .server
        .requests
        .iter()
        .map(|id| VarInt::from(*id).into_inner())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![0, 4, 8]);
    let ok = Ends::Ok(200);
    assert_eq!(p.ends(), vec![(1, ok), (2, ok), (3, ok)]);
    assert_eq!(p.client.in_flight(), 0);
    assert_eq!(
        p.client.zero_rtt(),
        ZeroRtt {
            attempted: 1,
            accepted: 0,
            rejected: 1,
            requests: 3,
            resent: 3,
        }
    );
    // The connection goes on: a fourth request on stream 12.
    p.start(&[4], false);
    let id = *p.server.requests.last().unwrap();
    assert_eq!(VarInt::from(id).into_inner(), 12);
    p.answer(id, 200);
    assert_eq!(p.ends(), vec![(4, ok)]);
}

#[test]
fn without_early_data_nothing_starts_before_the_handshake() {
    let (cfg, sc, _) = configs_with(10, false);
    first(&cfg, &sc);
    let mut p = Pair::unopened(&cfg, Arc::clone(&sc), 16_384);
    assert_eq!(p.client.state(), State::Handshaking);
    assert_eq!(p.client.free(), 0);
    p.pump();
    assert_eq!(p.client.state(), State::Live);
    assert_eq!(p.client.zero_rtt(), ZeroRtt::default());
}

/// A handshake that never completes (the server silent) after requests
/// left in 0-RTT: the connection closes at its idle timeout, the requests
/// end as timeouts (none lost), and it is neither accepted nor rejected.
#[test]
fn early_requests_of_a_lost_handshake_end_as_timeouts() {
    let (cfg, sc, _) = configs_with(10, true);
    first(&cfg, &sc);
    let mut p = Pair::unopened(&cfg, sc, 16_384);
    let mut block = [0u8; 64];
    let n = encode_request(b"GET", b"https", b"localhost", b"/", &[], false, &mut block).unwrap();
    for id in 1..=2 {
        let req = Request {
            block: &block[..n],
            body: &[],
        };
        p.client.start(Job { id, retried: false }, req, 0).unwrap();
    }
    // Nothing reaches the server; time passes until QUIC gives up.
    let mut now = p.now;
    let mut lost = Vec::new();
    for _ in 0..1000 {
        while p.client.poll_transmit(now, 1, &mut lost).is_some() {}
        if p.client.state() == State::Closed {
            break;
        }
        now = p.client.poll_timeout().unwrap_or(now).max(now);
        p.client.handle_timeout(now, 0);
    }
    assert_eq!(p.client.state(), State::Closed);
    let lost = p.client.lost().expect("the loss is said");
    assert_eq!(lost.kind, ErrorKind::Timeout);
    assert!(p.client.handshake_error().is_some());
    let t = Ends::Failed(Finish::Error(ErrorKind::Timeout));
    assert_eq!(p.ends(), vec![(1, t), (2, t)]);
    assert_eq!(
        p.client.zero_rtt(),
        ZeroRtt {
            attempted: 1,
            accepted: 0,
            rejected: 0,
            requests: 2,
            resent: 0,
        }
    );
}
