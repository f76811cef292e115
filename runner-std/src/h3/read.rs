//! A connection's reader: receives and stamps datagrams, feeds them and
//! QUIC's timers to the connection, times streams out, and books each
//! stream's end (a GOAWAY's refused ones back to the queue for their one
//! retry); marks the connection dead when it closes.

use super::*;

/// What the reader hands the queue once the link's lock is released.
#[derive(Default)]
struct After {
    /// The last (done, service) times, for the pool's estimate.
    sample: Option<(u64, u64)>,
    /// Jobs a GOAWAY refused, to send once more on a fresh connection.
    retry: VecDeque<Job>,
}

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
    let mut after = After::default();
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
            book(end, shared, &tx, now, &mut after);
        }
        // A 0-RTT connection's handshake completed: its time.
        let shaken = matches!(h3.state(), State::Live | State::GoingAway);
        if let Some(started) = l.shaking.filter(|_| shaken) {
            l.shaking = None;
            let mut setup = Box::<metronome_core::engine::Setup>::default();
            setup
                .tls_handshake
                .record(instant.saturating_duration_since(started).as_nanos() as u64);
            let _ = tx.send(Fact::H2Streams(setup));
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
        if !after.retry.is_empty() {
            let mut q = lock(&shared.queue);
            while let Some(job) = after.retry.pop_back() {
                q.jobs.push_front(job);
            }
            drop(q);
            shared.ready.notify_all();
        }
        if let Some((done, service)) = after.sample.take() {
            lock(&shared.queue).pool.observe(done, service);
        }
        if dead || leaving {
            return;
        }
    }
}

/// A stream ended at `now` as the connection says: one a GOAWAY refused
/// goes back to the front of the queue (`after.retry`) for one more try
/// on a fresh connection; any other becomes a ledger fact, and an
/// answer's service time a sample for the pool.
fn book(end: End<'_, Job>, shared: &Shared, tx: &mpsc::Sender<Fact>, now: u64, after: &mut After) {
    let finish = match end.how {
        How::Retry => {
            let _ = tx.send(Fact::Retried {
                intended_ns: end.job.intended_ns,
            });
            after.retry.push_back(Job {
                retried: true,
                ..end.job
            });
            return;
        }
        How::Answered(finish) => {
            // A failure is no answer: it says nothing of the service time.
            after.sample = Some((now, now.saturating_sub(end.sent_ns)));
            finish
        }
        How::Failed(finish) => finish,
    };
    let _ = tx.send(Fact::Done {
        intended_ns: end.job.intended_ns,
        request: end.job.request,
        sent_ns: end.sent_ns,
        done_ns: now,
        outcome: Outcome::from_finish(finish),
        head: end.head,
    });
    shared.in_flight.fetch_sub(1, Ordering::Relaxed);
}
