//! [`H3Client`](metronome_quic::H3Client) against a `quinn-proto` server
//! in the same process (the harness in `common/`): each test scripts what
//! the server does (answer, GOAWAY, a second SETTINGS, a stream limit) and
//! asserts exactly how the client's streams end.

mod common;

use common::*;

#[test]
fn requests_are_answered_and_the_server_limit_is_read() {
    let mut p = Pair::new(3, 16_384);
    assert_eq!(p.client.server_max_streams(), Some(3));
    assert_eq!(p.client.free(), 3);
    p.start(&[1, 2], false);
    assert_eq!(p.client.free(), 1);
    assert_eq!(p.server.requests.len(), 2);
    let ids = p.server.requests.clone();
    for id in ids {
        p.answer(id, 200);
    }
    assert_eq!(p.ends(), vec![(1, Ends::Ok(200)), (2, Ends::Ok(200))]);
    assert_eq!(p.client.in_flight(), 0);
    assert_eq!(p.client.free(), 3);
}

#[test]
fn goaway_retries_the_streams_at_and_above_its_id_once() {
    let mut p = Pair::new(100, 16_384);
    // Streams 0, 4, 8, 12: jobs 1 to 3 first tries, job 4 already retried.
    p.start(&[1, 2, 3], false);
    p.start(&[4], true);
    assert_eq!(p.server.requests.len(), 4);
    p.control(&goaway(4));
    assert_eq!(p.client.state(), State::GoingAway);
    assert_eq!(p.client.free(), 0);
    let job = Job {
        id: 9,
        retried: false,
    };
    let req = Request {
        block: b"\x00\x00\xd1",
        body: &[],
    };
    assert_eq!(p.client.start(job, req, 0), Err(Refused::NoStream(job)));
    assert_eq!(
        p.ends(),
        vec![
            (2, Ends::Retry),
            (3, Ends::Retry),
            (4, Ends::Failed(Finish::Error(ErrorKind::Reset)))
        ]
    );
    // Stream 0 is below the ID: it finishes; then the client closes.
    let first = p.server.requests[0];
    assert_eq!(VarInt::from(first).into_inner(), 0);
    p.answer(first, 200);
    assert_eq!(p.ends(), vec![(1, Ends::Ok(200))]);
    assert_eq!(p.client.state(), State::Closed);
    assert!(p.client.lost().is_none());
    p.pump();
    match &p.server.lost {
        Some(ConnectionError::ApplicationClosed(c)) => {
            assert_eq!(c.error_code.into_inner(), 0x100);
        }
        other => panic!("the server saw {other:?}"),
    }
}

#[test]
fn a_second_settings_closes_with_frame_unexpected() {
    let mut p = Pair::new(100, 16_384);
    p.start(&[1], false);
    let mut second = [0u8; 32];
    let n = encode_settings(100, &mut second).unwrap();
    p.control(&second[..n]);
    assert_eq!(p.client.state(), State::Closed);
    let lost = p.client.lost().unwrap();
    assert_eq!(lost.kind, ErrorKind::BadFraming);
    assert!(
        lost.text.contains("H3_FRAME_UNEXPECTED (0x105)"),
        "{}",
        lost.text
    );
    assert_eq!(
        p.ends(),
        vec![(
            1,
            Ends::Failed(Finish::Framing(FramingCause::Http3Protocol))
        )]
    );
    p.pump();
    match &p.server.lost {
        Some(ConnectionError::ApplicationClosed(c)) => {
            assert_eq!(c.error_code.into_inner(), 0x105);
        }
        other => panic!("the server saw {other:?}"),
    }
}

#[test]
fn the_server_section_limit_is_kept() {
    let mut block = [0u8; 64];
    let n = encode_request(b"GET", b"https", b"localhost", b"/", &[], false, &mut block).unwrap();
    let req = Request {
        block: &block[..n],
        body: &[],
    };
    let job = Job {
        id: 1,
        retried: false,
    };
    // :method GET, :scheme https, :authority localhost, :path /.
    let size = (7 + 3) + (7 + 5) + (10 + 9) + (5 + 1) + 4 * 32;
    let mut p = Pair::new(100, size - 1);
    assert_eq!(p.client.max_field_section(), Some(size - 1));
    assert_eq!(
        p.client.start(job, req, 0),
        Err(Refused::TooLarge {
            job,
            limit: size - 1
        })
    );
    assert_eq!(p.client.in_flight(), 0);
    let mut p = Pair::new(100, size);
    assert_eq!(p.client.start(job, req, 0), Ok(()));
    assert_eq!(p.client.in_flight(), 1);
}

#[test]
fn timeouts_cancel_the_stream() {
    let mut p = Pair::new(100, 16_384);
    p.start(&[1], false);
    let sent = p.stamp;
    let next = p.client.expire(sent + 10, 1_000_000_000, u64::MAX);
    assert!(next > sent + 10);
    assert!(p.ends().is_empty());
    p.client
        .expire(sent + 2_000_000_000, 1_000_000_000, u64::MAX);
    assert_eq!(
        p.ends(),
        vec![(1, Ends::Failed(Finish::Error(ErrorKind::Timeout)))]
    );
    assert_eq!(p.client.in_flight(), 0);
}

#[test]
fn the_server_stream_limit_stops_new_streams() {
    let mut p = Pair::new(2, 16_384);
    assert_eq!(p.client.server_max_streams(), Some(2));
    p.start(&[1, 2], false);
    assert_eq!(p.client.free(), 0);
    let job = Job {
        id: 3,
        retried: false,
    };
    let req = Request {
        block: b"\x00\x00\xd1",
        body: &[],
    };
    assert_eq!(p.client.start(job, req, 0), Err(Refused::NoStream(job)));
    let ids = p.server.requests.clone();
    for id in ids {
        p.answer(id, 200);
    }
    assert_eq!(p.ends().len(), 2);
    // The server's MAX_STREAMS grew as its streams closed.
    assert_eq!(p.client.free(), 2);
}

#[test]
fn a_server_close_ends_the_streams_as_reset() {
    let mut p = Pair::new(100, 16_384);
    p.start(&[1, 2], false);
    let now = p.now;
    let (_, conn) = p.server.conn.as_mut().unwrap();
    conn.close(
        now,
        VarInt::from_u32(0x102),
        bytes::Bytes::from_static(b"bye"),
    );
    p.pump();
    assert_eq!(p.client.state(), State::Closed);
    let lost = p.client.lost().unwrap();
    assert_eq!(
        (lost.text.as_str(), lost.kind),
        (
            "HTTP/3: the server closed the connection with code 0x102 (bye)",
            ErrorKind::Reset
        )
    );
    assert_eq!(
        p.ends(),
        vec![
            (1, Ends::Failed(Finish::Error(ErrorKind::Reset))),
            (2, Ends::Failed(Finish::Error(ErrorKind::Reset)))
        ]
    );
}

#[test]
fn reserved_streams_are_discarded_and_a_push_stream_is_an_id_error() {
    let mut p = Pair::new(100, 16_384);
    // A reserved type (0x21) with bytes, ended; then QPACK streams as
    // aioquic opens them (the encoder's capacity 0 instruction).
    p.uni(&[0x21, 0xde, 0xad], true);
    p.uni(&[0x02, 0x20], false);
    p.uni(&[0x03], false);
    assert_eq!(p.client.state(), State::Live);
    p.start(&[1], false);
    let id = p.server.requests[0];
    p.answer(id, 200);
    assert_eq!(p.ends(), vec![(1, Ends::Ok(200))]);
    // A push stream: the client allowed none.
    p.start(&[2], false);
    p.uni(&[0x01, 0x00], false);
    assert_eq!(p.client.state(), State::Closed);
    assert!(
        p.client
            .lost()
            .unwrap()
            .text
            .contains("H3_ID_ERROR (0x108)"),
        "{:?}",
        p.client.lost()
    );
    assert_eq!(
        p.ends(),
        vec![(
            2,
            Ends::Failed(Finish::Framing(FramingCause::Http3Protocol))
        )]
    );
    p.pump();
    match &p.server.lost {
        Some(ConnectionError::ApplicationClosed(c)) => {
            assert_eq!(c.error_code.into_inner(), 0x108);
        }
        other => panic!("the server saw {other:?}"),
    }
}

#[test]
fn the_control_stream_ending_is_closed_critical_stream() {
    let mut p = Pair::new(100, 16_384);
    let (_, conn) = p.server.conn.as_mut().unwrap();
    let id = p.server.control.unwrap();
    conn.send_stream(id).finish().unwrap();
    p.pump();
    assert_eq!(p.client.state(), State::Closed);
    match &p.server.lost {
        Some(ConnectionError::ApplicationClosed(c)) => {
            assert_eq!(c.error_code.into_inner(), 0x104);
        }
        other => panic!("the server saw {other:?}"),
    }
}

#[test]
fn request_rejected_is_retried_once_other_resets_fail() {
    let mut p = Pair::new(100, 16_384);
    // Streams 0, 4, 8: job 1 first try, job 2 already retried, job 3 first.
    p.start(&[1], false);
    p.start(&[2], true);
    p.start(&[3], false);
    let ids = p.server.requests.clone();
    let (_, conn) = p.server.conn.as_mut().unwrap();
    let rejected = VarInt::from_u32(0x10b);
    conn.send_stream(ids[0]).reset(rejected).unwrap();
    conn.send_stream(ids[1]).reset(rejected).unwrap();
    conn.send_stream(ids[2])
        .reset(VarInt::from_u32(0x10c))
        .unwrap();
    p.pump();
    assert_eq!(
        p.ends(),
        vec![
            (1, Ends::Retry),
            (2, Ends::Failed(Finish::Error(ErrorKind::Reset))),
            (3, Ends::Failed(Finish::Error(ErrorKind::Reset)))
        ]
    );
    assert_eq!(p.client.state(), State::Live);
}
