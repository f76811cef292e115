//! A connection's reader: receives and stamps datagrams, drives QUIC's
//! timers, reads the response streams with core's frame reader and QPACK
//! decoder, times streams out, and ends them all when the connection dies.

use super::*;

/// What the reader hands the queue once the link's lock is released.
#[derive(Default)]
struct After {
    /// The last (done, service) times, for the pool's estimate.
    sample: Option<(u64, u64)>,
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
    let mut ended: Vec<(Box<Flight>, Finish<'static>, bool)> = Vec::with_capacity(SLOTS);
    loop {
        let wait = match lock(link).quic.as_mut() {
            Some(q) => q.wait(Instant::now(), SLICE),
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
        let mut lost: Option<String> = None;
        let mut lost_kind = ErrorKind::Reset;
        let Link {
            quic,
            flights,
            decoder,
            spare,
            ..
        } = &mut *l;
        let Some(q) = quic.as_mut() else { return };
        match got {
            Ok(0) => {}
            Ok(n) => {
                shared.traffic.received(now, n);
                q.datagram(instant, &buf[..n]);
            }
            Err(e) => lost = Some(format!("the UDP socket failed: {e}")),
        }
        q.timers(instant);
        while let Some(ev) = q.conn.poll() {
            match ev {
                Event::Stream(StreamEvent::Readable { id }) => {
                    read_stream(q, id, flights, decoder, now, &mut ended);
                }
                Event::Stream(StreamEvent::Writable { id }) => {
                    if let Some(f) = flights.get_mut(&id) {
                        let _ = push(&mut q.conn, id, f);
                    }
                }
                Event::Stream(StreamEvent::Opened { dir }) => {
                    while let Some(id) = q.conn.streams().accept(dir) {
                        read_stream(q, id, flights, decoder, now, &mut ended);
                    }
                }
                Event::ConnectionLost { reason } => {
                    if matches!(reason, ConnectionError::TimedOut) {
                        lost_kind = ErrorKind::Timeout;
                    }
                    lost = Some(describe(&reason));
                }
                _ => {}
            }
        }
        // Deadlines: a stream unanswered past its timeout, or the run's end.
        let hard = shared.hard_end_ns.load(Ordering::Relaxed);
        let late: Vec<StreamId> = flights
            .iter()
            .filter(|(_, f)| now >= f.sent_ns.saturating_add(plan.timeout_ns) || now >= hard)
            .map(|(id, _)| *id)
            .collect();
        for id in late {
            if let Some(f) = flights.remove(&id) {
                let cancel = VarInt::from_u32(ErrorCode::REQUEST_CANCELLED.0 as u32);
                let _ = q.conn.recv_stream(id).stop(cancel);
                let _ = q.conn.send_stream(id).reset(cancel);
                ended.push((f, Finish::Error(ErrorKind::Timeout), false));
            }
        }
        if q.flush(instant).is_err() && lost.is_none() {
            lost = Some("the UDP socket failed".into());
        }
        if let Some(why) = &lost {
            for (_, f) in flights.drain() {
                let kind = if lost_kind == ErrorKind::Timeout {
                    ErrorKind::Timeout
                } else {
                    f.ex.on_reset(metronome_core::h2::ErrorCode::CANCEL)
                };
                ended.push((f, Finish::Error(kind), false));
            }
            let _ = tx.send(Fact::Note(why.clone()));
        }
        for (f, finish, answered) in ended.drain(..) {
            book(&f, finish, answered, shared, &tx, now, &mut after);
            spare.push(f);
        }
        let leaving = l.leaving && l.flights.is_empty();
        if lost.is_some() {
            l.dead = true;
            l.quic = None;
        } else if leaving {
            if let Some(q) = l.quic.as_mut() {
                q.conn
                    .close(Instant::now(), VarInt::from_u32(0x100), bytes::Bytes::new());
                let _ = q.flush(Instant::now());
            }
        }
        l.count_written(shared, now);
        l.sync_idle(shared);
        let dead = l.dead;
        drop(l);
        changed.notify_all();
        if let Some((done, service)) = after.sample.take() {
            lock(&shared.queue).pool.observe(done, service);
        }
        if dead || leaving {
            return;
        }
    }
}

/// The connection's end, in one line for the report's warnings.
fn describe(reason: &ConnectionError) -> String {
    match reason {
        ConnectionError::ApplicationClosed(c) => format!(
            "HTTP/3: the server closed the connection with code {:#x}{}",
            c.error_code.into_inner(),
            reason_text(&c.reason)
        ),
        ConnectionError::ConnectionClosed(c) => format!(
            "HTTP/3: the server closed the connection with QUIC code {}{}",
            c.error_code,
            reason_text(&c.reason)
        ),
        ConnectionError::TimedOut => "HTTP/3: a connection reached its idle timeout".into(),
        ConnectionError::Reset => "HTTP/3: the server reset a connection (stateless reset)".into(),
        other => format!("HTTP/3: a connection ended: {other}"),
    }
}

fn reason_text(reason: &[u8]) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(" ({})", String::from_utf8_lossy(reason))
    }
}

/// Reads what stream `id` has: a response stream's frames into its flight
/// (ended ones into `ended`); the server's unidirectional streams (control,
/// QPACK) are drained unread.
fn read_stream(
    q: &mut Quic,
    id: StreamId,
    flights: &mut HashMap<StreamId, Box<Flight>>,
    decoder: &mut Decoder<SECTION>,
    now: u64,
    ended: &mut Vec<(Box<Flight>, Finish<'static>, bool)>,
) {
    let mut rs = q.conn.recv_stream(id);
    let Ok(mut chunks) = rs.read(true) else {
        return;
    };
    let mut end: Option<Result<(), Finish<'static>>> = None;
    loop {
        match chunks.next(usize::MAX) {
            Ok(Some(chunk)) => {
                let Some(f) = flights.get_mut(&id) else {
                    continue;
                };
                if end.is_none() {
                    if let Err(e) = feed(f, &chunk.bytes, decoder, now) {
                        let _ = e;
                        end = Some(Err(Finish::Framing(FramingCause::Http2Protocol)));
                    }
                }
            }
            Ok(None) => {
                end.get_or_insert(Ok(()));
                break;
            }
            Err(ReadError::Blocked) => break,
            Err(ReadError::Reset(_)) => {
                if let Some(f) = flights.get(&id) {
                    let kind = f.ex.on_reset(metronome_core::h2::ErrorCode::CANCEL);
                    end = Some(Err(Finish::Error(kind)));
                }
                break;
            }
        }
    }
    let _ = chunks.finalize();
    let Some(end) = end else { return };
    let Some(mut f) = flights.remove(&id) else {
        return;
    };
    match end {
        Ok(()) => {
            if f.reader.finish().is_err() {
                ended.push((f, Finish::Framing(FramingCause::Http2Protocol), false));
                return;
            }
            let Flight { ex, gaps, .. } = &mut *f;
            ex.on_end(now, gaps);
            let finish = own(ex.finish(gaps));
            ended.push((f, finish, true));
        }
        Err(finish) => {
            let cancel = VarInt::from_u32(ErrorCode::REQUEST_CANCELLED.0 as u32);
            let _ = q.conn.send_stream(id).reset(cancel);
            let _ = q.conn.recv_stream(id).stop(cancel);
            ended.push((f, finish, false));
        }
    }
}

/// A finish that borrows nothing: a stream's timing and gaps are taken
/// again from its flight when it is booked.
fn own(finish: Finish<'_>) -> Finish<'static> {
    match finish {
        Finish::Ok => Finish::Ok,
        Finish::Status(c) => Finish::Status(c),
        Finish::GrpcStatus(c) => Finish::GrpcStatus(c),
        Finish::Error(k) => Finish::Error(k),
        Finish::Framing(c) => Finish::Framing(c),
        // Re-read from the flight in `book`.
        Finish::Stream { .. } => Finish::Ok,
    }
}

/// Feeds a response stream's bytes to its frame reader: the head's
/// `:status` and the body to the exchange.
fn feed(
    f: &mut Flight,
    mut input: &[u8],
    decoder: &mut Decoder<SECTION>,
    now: u64,
) -> Result<(), H3Error> {
    let Flight {
        reader, ex, gaps, ..
    } = f;
    while !input.is_empty() {
        let (n, frame) = reader.read(input)?;
        match frame {
            Some(Frame::Headers(block)) => {
                let mut event_stream = false;
                let mut grpc: Option<u32> = None;
                let section = decoder.decode(block, |name, value| {
                    if name == b"content-type" {
                        event_stream = value.starts_with(b"text/event-stream");
                    } else if name == b"grpc-status" {
                        grpc = core::str::from_utf8(value)
                            .ok()
                            .and_then(|v| v.parse().ok());
                    }
                })?;
                match section.status {
                    Some(status) if status >= 200 && !ex.has_head() => {
                        ex.on_head(now, status, event_stream);
                        ex.on_grpc_status(grpc);
                    }
                    Some(_) => {}
                    None => ex.on_grpc_status(grpc),
                }
            }
            Some(Frame::Data(d)) => ex.on_data(now, d, gaps),
            _ => {}
        }
        input = &input[n..];
    }
    Ok(())
}

/// A stream ended at `now`: a ledger fact, and an answer's service time a
/// sample for the pool.
fn book(
    f: &Flight,
    finish: Finish<'static>,
    answered: bool,
    shared: &Shared,
    tx: &mpsc::Sender<Fact>,
    now: u64,
    after: &mut After,
) {
    let outcome = if answered {
        after.sample = Some((now, now.saturating_sub(f.sent_ns)));
        Outcome::from_finish(f.ex.finish(&f.gaps))
    } else {
        Outcome::from_finish(finish)
    };
    let _ = tx.send(Fact::Done {
        intended_ns: f.job.intended_ns,
        request: f.job.request,
        sent_ns: f.sent_ns,
        done_ns: now,
        outcome,
        head: f.ex.head(),
    });
    shared.in_flight.fetch_sub(1, Ordering::Relaxed);
}
