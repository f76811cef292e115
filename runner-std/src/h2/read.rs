//! A connection's reader: blocks on the socket, stamps what arrives, feeds
//! it to the connection, hands each event to core's [`Flights`] (which ends
//! streams: answered, refused, reset) and times streams out; ends the
//! streams still in flight when the connection dies.
//!
//! [`Flights`]: metronome_core::h2::Flights

use std::io::{self, Read};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use metronome_core::exchange::compact;
use metronome_core::flight::End;
use metronome_core::h2::Step;
use metronome_core::measure::ErrorKind;
use metronome_core::plan::{Plan, READ_BUF_BYTES};
use metronome_core::pool::{after_goaway, AfterGoaway};

use super::{lock, tls_read, Job, Link, Shared, SLOTS};
use crate::clock::Clock;
use crate::collector::Fact;
use crate::ended::Ended;

/// What a connection does after the server's GOAWAY: core's
/// [`after_goaway`] for a dispatcher with one link and no spare, which is
/// to drain, then be replaced (the only rule this reader implements).
const GOAWAY: AfterGoaway = after_goaway(false);
const _: () = assert!(matches!(GOAWAY, AfterGoaway::DrainThenReplace));

/// The longest a blocking read waits before the reader looks at the
/// deadlines again.
const SLICE: Duration = Duration::from_millis(10);

/// A reader's socket and the bytes read before it started.
pub(super) struct Io {
    pub(super) sock: TcpStream,
    pub(super) rest: Vec<u8>,
    /// The link's TLS session carries the bytes: the socket is only
    /// watched (peeked) here, and read under the link's lock.
    pub(super) tls: bool,
}

/// A connection's reader: reads, stamps and feeds the connection until it
/// fails, the server closes it or the dispatcher leaves.
pub(super) fn read_loop(
    plan: &Plan<'_>,
    origin: &OnceLock<Clock>,
    shared: &Shared,
    link: &Mutex<Link>,
    changed: &Condvar,
    tx: mpsc::Sender<Fact>,
    io: Io,
) {
    let Io { sock, rest, tls } = io;
    let clock = origin.get_or_init(Clock::start);
    let mut buf = vec![0u8; READ_BUF_BYTES].into_boxed_slice();
    let (mut start, mut end) = (0, rest.len());
    buf[..end].copy_from_slice(&rest);
    let _ = sock.set_read_timeout(Some(SLICE));
    let mut after = Ended::new(SLOTS);
    let mut first = end > 0;
    loop {
        let read = if first {
            first = false;
            Ok(0usize)
        } else if tls {
            // Wait for bytes without taking them; rustls reads them below.
            let mut one = [0u8; 1];
            match sock.peek(&mut one) {
                Ok(0) => Err(ErrorKind::Reset),
                Ok(_) => Ok(0),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
                Err(e) if ErrorKind::of_io(&e) == ErrorKind::Timeout => Ok(0),
                Err(_) => Err(ErrorKind::Reset),
            }
        } else {
            match (&sock).read(&mut buf[end..]) {
                Ok(0) => Err(ErrorKind::Reset),
                Ok(n) => Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
                Err(e) if ErrorKind::of_io(&e) == ErrorKind::Timeout => Ok(0),
                Err(_) => Err(ErrorKind::Reset),
            }
        };
        let now = clock.now_ns();
        let mut l = lock(link);
        let read = match (read, l.tls.as_deref_mut()) {
            (Ok(_), Some(conn)) if tls => match tls_read(conn, &sock, &mut buf[end..], false) {
                Ok(0) => Err(ErrorKind::Reset),
                Ok(n) => Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
                Err(_) => Err(ErrorKind::Reset),
            },
            (r, _) => r,
        };
        let mut fault = match read {
            Ok(n) => {
                shared.traffic.received(now, n);
                end += n;
                let input = &buf[start..end];
                let fed = feed(
                    &mut l, plan, shared, &tx, input, now, &mut start, &mut after,
                );
                l.count_written(&shared.traffic, now);
                fed.is_err() || compact(&mut buf, &mut start, &mut end).is_err()
            }
            Err(_) => true,
        };
        // Deadlines: a stream unanswered past its timeout, or the run's end.
        let hard = shared.hard_end_ns.load(Ordering::Relaxed);
        {
            let Link { flights, h2, .. } = &mut *l;
            let sink = &mut |e: End<'_, Job>| after.book(e, shared, &tx, now);
            flights.expire(now, hard, h2, sink);
        }
        if !fault && l.flush().is_err() {
            fault = true;
        } else if fault && l.h2.error().is_some() {
            // Our GOAWAY with the error's code, on a best-effort basis.
            let _ = l.flush();
        }
        // After a GOAWAY the connection kept its place until now, and a
        // fresh one replaces it once drained ([`GOAWAY`]).
        let goaway_drained = l.flights.drained(&l.h2);
        let leaving = l.leaving && l.in_flight() == 0;
        if fault || goaway_drained {
            // The connection is gone: its streams end with it, as core's
            // `Flights::connection_end` says.
            let Link { flights, h2, .. } = &mut *l;
            let sink = &mut |e: End<'_, Job>| after.book(e, shared, &tx, now);
            flights.connection_end(h2, sink);
            l.dead = true;
            if let Some(s) = l.sock.take() {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
        l.sync_idle(shared);
        let dead = l.dead;
        drop(l);
        changed.notify_all();
        after.hand_over(shared);
        if dead || leaving {
            return;
        }
    }
}

/// Hands the buffered frames to the connection, and each event to core's
/// `Flights`. `Err`: the connection failed.
#[allow(clippy::too_many_arguments)]
fn feed(
    l: &mut Link,
    plan: &Plan<'_>,
    shared: &Shared,
    tx: &mpsc::Sender<Fact>,
    input: &[u8],
    now: u64,
    start: &mut usize,
    after: &mut Ended,
) -> Result<(), ()> {
    let mut pos = 0;
    loop {
        let (used, event) = l.h2.handle_read(&input[pos..]).map_err(|_| ())?;
        let frame = &input[pos..pos + used];
        pos += used;
        *start += used;
        let Some(event) = event else {
            if used == 0 {
                return Ok(());
            }
            continue;
        };
        let Link {
            flights, h2, gaps, ..
        } = &mut *l;
        let sink = &mut |e: End<'_, Job>| after.book(e, shared, tx, now);
        if flights.on_event(now, event, frame, h2, gaps, sink) == Step::Unblocked {
            let _ = l.push_bodies(plan);
        }
    }
}
