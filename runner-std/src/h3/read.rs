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
    let mut ended: Vec<(Box<Flight>, Option<Finish<'static>>)> = Vec::with_capacity(SLOTS);
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
            blocked,
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
                Event::Stream(StreamEvent::Available { dir: Dir::Bi }) => *blocked = false,
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
                ended.push((f, Some(Finish::Error(ErrorKind::Timeout))));
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
                ended.push((f, Some(Finish::Error(kind))));
            }
            let _ = tx.send(Fact::Note(why.clone()));
        }
        for (f, failed) in ended.drain(..) {
            book(&f, failed, shared, &tx, now, &mut after);
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
/// (ended ones into `ended`, with how they failed or `None` when
/// answered); the server's unidirectional streams (control,
/// QPACK) are drained unread.
fn read_stream(
    q: &mut Quic,
    id: StreamId,
    flights: &mut HashMap<StreamId, Box<Flight>>,
    decoder: &mut Decoder<SECTION>,
    now: u64,
    ended: &mut Vec<(Box<Flight>, Option<Finish<'static>>)>,
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
                        end = Some(Err(Finish::Framing(FramingCause::Http3Protocol)));
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
                ended.push((f, Some(Finish::Framing(FramingCause::Http3Protocol))));
                return;
            }
            let Flight { ex, gaps, .. } = &mut *f;
            ex.on_end(now, gaps);
            ended.push((f, None));
        }
        Err(finish) => {
            let cancel = VarInt::from_u32(ErrorCode::REQUEST_CANCELLED.0 as u32);
            let _ = q.conn.send_stream(id).reset(cancel);
            let _ = q.conn.recv_stream(id).stop(cancel);
            ended.push((f, Some(finish)));
        }
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
        reader,
        response,
        ex,
        gaps,
        ..
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
                match response.headers(&section)? {
                    Some(status) if status >= 200 => {
                        ex.on_head(now, status, event_stream);
                        ex.on_grpc_status(grpc);
                    }
                    Some(_) => {}
                    None => ex.on_grpc_status(grpc),
                }
            }
            Some(Frame::Data(d)) => {
                response.data()?;
                ex.on_data(now, d, gaps);
            }
            _ => {}
        }
        input = &input[n..];
    }
    Ok(())
}

/// A stream ended at `now`: a ledger fact, and an answer's service time a
/// sample for the pool. `failed`: how it failed; `None`: it was answered
/// (its exchange says how).
fn book(
    f: &Flight,
    failed: Option<Finish<'static>>,
    shared: &Shared,
    tx: &mpsc::Sender<Fact>,
    now: u64,
    after: &mut After,
) {
    let outcome = match failed {
        Some(finish) => Outcome::from_finish(finish),
        None => {
            after.sample = Some((now, now.saturating_sub(f.sent_ns)));
            Outcome::from_finish(f.ex.finish(&f.gaps))
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use quinn_proto::{ApplicationClose, TransportError, TransportErrorCode};

    #[test]
    fn a_close_is_worded_with_its_code() {
        let close = ConnectionError::ApplicationClosed(ApplicationClose {
            error_code: VarInt::from_u32(0x102),
            reason: bytes::Bytes::from_static(b"close mode"),
        });
        assert_eq!(
            describe(&close),
            "HTTP/3: the server closed the connection with code 0x102 (close mode)"
        );
        let bare = ConnectionError::ApplicationClosed(ApplicationClose {
            error_code: VarInt::from_u32(0x100),
            reason: bytes::Bytes::new(),
        });
        assert_eq!(
            describe(&bare),
            "HTTP/3: the server closed the connection with code 0x100"
        );
        assert_eq!(
            describe(&ConnectionError::TimedOut),
            "HTTP/3: a connection reached its idle timeout"
        );
    }

    #[test]
    fn handshake_failures_are_counted_by_kind() {
        let kind =
            |e: &ConnectionError| crate::handshake_failure(&super::super::quic::handshake_error(e));
        assert_eq!(
            kind(&ConnectionError::TimedOut),
            Some(HandshakeFailure::Timeout)
        );
        let cert = ConnectionError::TransportError(TransportError {
            code: TransportErrorCode::crypto(42),
            frame: None,
            reason: "invalid peer certificate: UnknownIssuer".into(),
        });
        assert_eq!(kind(&cert), Some(HandshakeFailure::Certificate));
        let alpn = ConnectionError::TransportError(TransportError {
            code: TransportErrorCode::crypto(120),
            frame: None,
            reason: "peer doesn't support any known protocol".into(),
        });
        assert_eq!(kind(&alpn), Some(HandshakeFailure::Protocol));
    }
}
