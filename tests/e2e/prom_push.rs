//! The pusher (`metronome::prom::push`) against a scripted fake receiver on
//! loopback: the headers and body remote write 1.0 asks for, retries on
//! 5xx with backoff, no retry on 4xx, and a full queue dropping the oldest.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use metronome::prom::proto::{self, Label, Sample, TimeSeries, WriteRequest};
use metronome::prom::push::{Endpoint, Pusher, FIRST_BACKOFF};

/// One request the fake receiver got: its head (lowercased) and body.
struct Got {
    head: String,
    body: Vec<u8>,
    at: Instant,
}

/// Accepts connections one at a time; answers the i-th request with
/// `statuses[i]` (204 past the end). Before answering the first, waits for
/// a message on `hold` when given. Sends each request to the returned channel.
fn receiver(
    statuses: Vec<u16>,
    hold: Option<mpsc::Receiver<()>>,
) -> (Endpoint, mpsc::Receiver<Got>, mpsc::Receiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    let (accepted_tx, accepted) = mpsc::channel();
    std::thread::spawn(move || {
        for (i, conn) in listener.incoming().enumerate() {
            let Ok(mut conn) = conn else { return };
            let _ = accepted_tx.send(());
            let (head, body) = read_request(&mut conn);
            if i == 0 {
                if let Some(h) = &hold {
                    let _ = h.recv();
                }
            }
            // Recorded before the reply, so a test that saw the pusher
            // finish has every request here.
            if tx
                .send(Got {
                    head,
                    body,
                    at: Instant::now(),
                })
                .is_err()
            {
                return;
            }
            let status = statuses.get(i).copied().unwrap_or(204);
            let msg = if status >= 400 {
                "out of order sample"
            } else {
                ""
            };
            let _ = write!(
                conn,
                "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{msg}",
                msg.len()
            );
        }
    });
    let endpoint = Endpoint::parse(&format!("http://127.0.0.1:{port}/api/v1/write")).unwrap();
    (endpoint, rx, accepted)
}

fn read_request(conn: &mut TcpStream) -> (String, Vec<u8>) {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if conn.read(&mut byte).unwrap_or(0) == 0 {
            break;
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).to_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    conn.read_exact(&mut body).unwrap();
    (head, body)
}

/// A request whose one sample has value `v`.
fn request(v: f64) -> WriteRequest {
    WriteRequest {
        timeseries: vec![TimeSeries {
            labels: vec![Label {
                name: "__name__".into(),
                value: "metronome_test".into(),
            }],
            samples: vec![Sample {
                value: v,
                timestamp: 1000,
            }],
            ..Default::default()
        }],
        metadata: vec![],
    }
}

fn value_of(got: &Got) -> f64 {
    proto::decode(&got.body).unwrap().timeseries[0].samples[0].value
}

#[test]
fn headers_and_body_are_remote_write_1_0() {
    let (ep, rx, _) = receiver(vec![], None);
    let p = Pusher::start(ep).unwrap();
    p.push(&request(7.0));
    let stats = p.finish(Duration::from_secs(10));
    assert_eq!(
        (stats.queued, stats.sent, stats.failed, stats.dropped),
        (1, 1, 0, 0)
    );
    assert_eq!(stats.warning(), None);
    let got = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(
        got.head.starts_with("post /api/v1/write http/1.1\r\n"),
        "{}",
        got.head
    );
    for h in [
        "content-encoding: snappy\r\n",
        "content-type: application/x-protobuf\r\n",
        "x-prometheus-remote-write-version: 0.1.0\r\n",
    ] {
        assert!(got.head.contains(h), "{h} missing from {}", got.head);
    }
    assert_eq!(proto::decode(&got.body).unwrap(), request(7.0));
}

#[test]
fn a_5xx_is_retried_with_backoff_and_a_4xx_is_not() {
    // 503, 500, then 204 for the first body; 400 for the second.
    let (ep, rx, _) = receiver(vec![503, 500, 204, 400], None);
    let p = Pusher::start(ep).unwrap();
    p.push(&request(1.0));
    p.push(&request(2.0));
    let stats = p.finish(Duration::from_secs(10));
    assert_eq!(
        (
            stats.queued,
            stats.sent,
            stats.failed,
            stats.retries,
            stats.unsent
        ),
        (2, 1, 1, 2, 0)
    );
    let got: Vec<Got> = rx.try_iter().collect();
    let values: Vec<f64> = got.iter().map(value_of).collect();
    assert_eq!(values, [1.0, 1.0, 1.0, 2.0], "the 400 is not retried");
    // Backoff: 100 ms, then 200 ms between one arrival and the next (the
    // reply's trip and a loaded machine only add to the gap).
    assert!(got[1].at - got[0].at >= FIRST_BACKOFF);
    assert!(got[2].at - got[1].at >= FIRST_BACKOFF * 2);
    let w = stats.warning().unwrap();
    assert!(
        w.contains("1 of 2 pushes not stored") && w.contains("HTTP 400"),
        "{w}"
    );
}

#[test]
fn a_full_queue_drops_the_oldest_and_push_never_waits() {
    let (release, hold) = mpsc::channel();
    let (ep, rx, accepted) = receiver(vec![], Some(hold));
    let p = Pusher::with_capacity(ep, 2).unwrap();
    p.push(&request(1.0));
    // Body 1 is in flight (the receiver holds it); 2..=5 queue behind it.
    accepted.recv_timeout(Duration::from_secs(10)).unwrap();
    let t = Instant::now();
    for v in 2..=5 {
        p.push(&request(f64::from(v)));
    }
    assert!(t.elapsed() < Duration::from_secs(1), "push waited");
    release.send(()).unwrap();
    let stats = p.finish(Duration::from_secs(10));
    assert_eq!((stats.queued, stats.sent, stats.dropped), (5, 3, 2));
    let values: Vec<f64> = rx.try_iter().map(|g| value_of(&g)).collect();
    assert_eq!(values, [1.0, 4.0, 5.0], "2 and 3 were the oldest queued");
    assert!(stats
        .warning()
        .unwrap()
        .contains("2 dropped from a full queue"));
}
