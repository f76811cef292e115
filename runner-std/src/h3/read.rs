//! A connection's reader: receives and stamps datagrams, feeds them and
//! QUIC's timers to the connection, times streams out, and books each
//! stream's end (a GOAWAY's refused ones back to the queue for their one
//! retry); marks the connection dead when it closes.

use super::*;
use crate::ended::Ended;

/// A connection's reader: receives, stamps and feeds datagrams until the
/// connection dies or the dispatcher leaves with no stream in flight.
pub(super) fn read_loop(
    plan: &Plan<'_>,
    origin: &OnceLock<Clock>,
    shared: &Shared,
    link: &Mutex<Link>,
    changed: &Condvar,
    tx: mpsc::Sender<Fact>,
    sock: UdpSocket,
) {
    let clock = origin.get_or_init(Clock::start);
    let mut buf = vec![0u8; DATAGRAM].into_boxed_slice();
    let mut after = Ended::new(metronome_core::plan::MAX_STREAMS as usize);
    loop {
        let wait = match lock(link).h3.as_mut() {
            Some(h3) => {
                let now = Instant::now();
                h3.poll_timeout()
                    .map_or(SLICE, |t| t.saturating_duration_since(now).min(SLICE))
                    .max(Duration::from_micros(50))
            }
            None => return,
        };
        let _ = sock.set_read_timeout(Some(wait));
        let got = match sock.recv(&mut buf) {
            Ok(n) => Ok(n),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                Ok(0)
            }
            Err(e) => Err(e),
        };
        let now = clock.now_ns();
        let instant = Instant::now();
        let mut l = lock(link);
        let mut failed: Option<String> = None;
        let leaving = l.leaving;
        let Some(h3) = l.h3.as_mut() else { return };
        match got {
            Ok(0) => {}
            Ok(n) => {
                shared.traffic.received(now, n);
                h3.datagram(instant, now, &buf[..n]);
            }
            Err(e) => failed = Some(format!("the UDP socket failed: {e}")),
        }
        h3.handle_timeout(instant, now);
        // Deadlines: a stream unanswered past its timeout, or the run's end.
        h3.expire(
            now,
            plan.timeout_ns,
            shared.hard_end_ns.load(Ordering::Relaxed),
        );
        if l.flush(instant).is_err() && failed.is_none() {
            failed = Some("the UDP socket failed".into());
        }
        let Some(h3) = l.h3.as_mut() else { return };
        if let Some(why) = &failed {
            let _ = tx.send(Fact::Note(format!("HTTP/3: {why}")));
            h3.close(instant);
        }
        if let Some(lost) = h3.lost() {
            let _ = tx.send(Fact::Note(lost.text.clone()));
        }
        while let Some(end) = h3.poll_end() {
            after.book(end, shared, &tx, now);
        }
        // A 0-RTT connection's handshake completed: its time.
        let shaken = matches!(h3.state(), State::Live | State::GoingAway);
        if let Some(started) = l.shaking.filter(|_| shaken) {
            l.shaking = None;
            let mut setup = Box::<metronome_core::engine::Setup>::default();
            setup
                .tls_handshake
                .record(instant.saturating_duration_since(started).as_nanos() as u64);
            let _ = tx.send(Fact::Setup(setup));
        }
        let Some(h3) = l.h3.as_mut() else { return };
        let closed = h3.state() == State::Closed;
        let leaving = leaving && !closed && h3.in_flight() == 0;
        if leaving {
            h3.close(instant);
            let _ = l.flush(instant);
        }
        if closed {
            l.dead = true;
            if let Some(h3) = l.h3.take() {
                retire(&h3, shared, &tx);
            }
            l.sock = None;
        }
        l.count_written(shared, now);
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
