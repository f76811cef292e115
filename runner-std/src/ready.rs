//! The portable engine's [`Ring`]: the event loop's socket operations
//! done when mio (epoll on Linux, kqueue on the BSDs and macOS) reports a
//! socket ready, and reported back as the completions io_uring would give.
//! The loop (`metronome-loop`) is the same for both engines; only this
//! differs: completions there, readiness here.
//!
//! Every socket is non-blocking and registered once, edge-triggered, for
//! both directions. Each slot remembers whether its socket was last seen
//! readable and writable: an operation started on a ready socket is done
//! at once (one `read`, `write`, `recv` or `send`), one started on a socket
//! that is not waits for its readiness event; `WouldBlock` (or a short
//! stream read, which drained the socket, as tokio also assumes) clears the
//! flag. The peer's close (or an error) is remembered apart and never
//! cleared, so an end of file that came with the last bytes is read. A connect completes on the first writable event, with the
//! socket's pending error or 0.
//!
//! The contract of [`Ring`] holds as in the io_uring ring: one operation of
//! a kind per slot, pending until reaped; closing a busy slot drops the
//! socket at once (nothing of the kernel's points at this memory), cuts its
//! operations short and reports [`Completion::Closed`] when their
//! completions have been reaped; every buffer (read and send slabs, the
//! completion queue, mio's event list) is allocated in [`Ring::new`].
//!
//! Sleeping: on Linux a `timerfd` registered beside the sockets wakes the
//! poll at the nanosecond (the poll's own timeout has millisecond steps,
//! rounded up). Elsewhere the poll sleeps whole milliseconds short of the
//! timer and polls without blocking for the last one, so the pacer keeps
//! its schedule at the cost of that millisecond's CPU.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use metronome_loop::{Completion, Ring, UdpCaps};
use mio::{Events, Interest, Poll, Token};

/// The token of the pacing timer (never a slot).
const TIMER: Token = Token(usize::MAX);
/// Readiness events taken per poll.
const EVENTS: usize = 1024;

/// A slot's socket.
#[derive(Debug, Default)]
enum Sock {
    #[default]
    None,
    Tcp(mio::net::TcpStream),
    Udp(mio::net::UdpSocket),
}

/// A slot's receive in progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RecvOp {
    /// Into `buf[filled..]`.
    Stream { filled: usize },
    /// One datagram into the whole buffer.
    Dgram,
}

/// A slot's send in progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SendOp {
    /// `requests[request][offset..]`.
    Request { request: usize, offset: usize },
    /// `tx[from..to]` on a stream.
    Tx { from: usize, to: usize },
    /// `tx[from..to]` as datagrams of `segment` bytes (the last may be shorter).
    Dgrams {
        from: usize,
        to: usize,
        segment: usize,
    },
}

/// One operation of a kind: none, started (waiting for readiness), or
/// done (its completion queued, not reaped yet).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Op<T> {
    #[default]
    Idle,
    Started(T),
    Done,
}

impl<T> Op<T> {
    fn is_idle(&self) -> bool {
        matches!(self, Op::Idle)
    }
}

/// What the ring knows about one slot.
#[derive(Debug, Default)]
struct Slot {
    sock: Sock,
    recv: Op<RecvOp>,
    send: Op<SendOp>,
    connect: Op<()>,
    closing: bool,
    /// Last seen readable (cleared by `WouldBlock` or a short stream read).
    readable: bool,
    /// Last seen writable (cleared by `WouldBlock` or a short write).
    writable: bool,
    /// The peer closed its side, or the socket has an error: readable for
    /// good (a short read does not clear it, so an end of file that came
    /// with the last bytes is still read).
    hup: bool,
}

impl Slot {
    fn busy(&self) -> bool {
        !(self.recv.is_idle() && self.send.is_idle() && self.connect.is_idle())
    }
}

/// The pacing timer: when it is due, and on Linux the `timerfd` that wakes the poll.
#[derive(Debug)]
struct Timer {
    due: Option<Instant>,
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fd: std::os::fd::OwnedFd,
}

/// The slots and their memory: what an operation needs, apart from the poll.
struct Slots {
    slots: Box<[Slot]>,
    bufs: Box<[u8]>,
    buf_len: usize,
    txs: Box<[u8]>,
    tx_len: usize,
    requests: Box<[Box<[u8]>]>,
    done: VecDeque<Completion>,
}

/// The readiness ring of one engine thread (see the module's doc).
pub(crate) struct Ready {
    poll: Poll,
    events: Events,
    io: Slots,
    addr: SocketAddr,
    timer: Timer,
}

/// `-errno` of an I/O error, as a completion carries it.
fn neg_errno(e: &io::Error) -> i32 {
    -e.raw_os_error().unwrap_or(libc::EIO)
}

/// A completion's result from a byte count.
fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

impl Slots {
    /// Does what the slot's started operations can do now, queueing their completions.
    fn progress(&mut self, slot: usize) {
        let s = &mut self.slots[slot];
        if s.connect == Op::Started(()) && s.writable {
            if let Sock::Tcp(t) = &s.sock {
                let res = match t.take_error() {
                    Ok(Some(e)) | Err(e) => Some(neg_errno(&e)),
                    Ok(None) => match t.peer_addr() {
                        Ok(_) => Some(0),
                        Err(e) if e.kind() == io::ErrorKind::NotConnected => None,
                        Err(e) => Some(neg_errno(&e)),
                    },
                };
                match res {
                    Some(res) => {
                        s.connect = Op::Done;
                        // Usable both ways once connected (a readable
                        // event may have come with the writable one).
                        s.readable = true;
                        self.done.push_back(Completion::Connect { slot, res });
                    }
                    None => s.writable = false,
                }
            }
        }
        if !s.connect.is_idle() {
            return;
        }
        if let Op::Started(op) = s.recv {
            if s.readable || s.hup {
                let buf = &mut self.bufs[slot * self.buf_len..(slot + 1) * self.buf_len];
                let got = match (op, &s.sock) {
                    (RecvOp::Stream { filled }, Sock::Tcp(t)) => {
                        let room = buf.len() - filled;
                        let r = (&*t).read(&mut buf[filled..]);
                        if matches!(r, Ok(n) if n > 0 && n < room) {
                            // A short read drained the socket: wait for the next edge.
                            s.readable = false;
                        }
                        r
                    }
                    (RecvOp::Dgram, Sock::Udp(u)) => u.recv(buf),
                    _ => Err(io::Error::from(io::ErrorKind::NotConnected)),
                };
                match got {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => s.readable = false,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    r => {
                        s.recv = Op::Done;
                        let res = r.map_or_else(|e| neg_errno(&e), count);
                        self.done.push_back(Completion::Recv { slot, res });
                    }
                }
            }
        }
        if let Op::Started(op) = s.send {
            if s.writable {
                let tx = &self.txs[slot * self.tx_len..(slot + 1) * self.tx_len];
                let (sent, wanted) = match (op, &s.sock) {
                    (SendOp::Request { request, offset }, Sock::Tcp(t)) => {
                        let bytes = &self.requests[request][offset..];
                        ((&*t).write(bytes), bytes.len())
                    }
                    (SendOp::Tx { from, to }, Sock::Tcp(t)) => {
                        ((&*t).write(&tx[from..to]), to - from)
                    }
                    (SendOp::Dgrams { from, to, segment }, Sock::Udp(u)) => {
                        (send_segments(u, &tx[from..to], segment), to - from)
                    }
                    _ => (Err(io::Error::from(io::ErrorKind::NotConnected)), 0),
                };
                match sent {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => s.writable = false,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    r => {
                        if matches!(r, Ok(n) if n < wanted) {
                            s.writable = false;
                        }
                        s.send = Op::Done;
                        let res = r.map_or_else(|e| neg_errno(&e), count);
                        self.done.push_back(Completion::Send { slot, res });
                    }
                }
            }
        }
    }

    /// Cuts the slot's started operations short: each is done with `-ECANCELED`.
    fn cancel(&mut self, slot: usize) {
        let s = &mut self.slots[slot];
        if let Op::Started(()) = s.connect {
            s.connect = Op::Done;
            self.done.push_back(Completion::Connect {
                slot,
                res: -libc::ECANCELED,
            });
        }
        if let Op::Started(_) = s.recv {
            s.recv = Op::Done;
            self.done.push_back(Completion::Recv {
                slot,
                res: -libc::ECANCELED,
            });
        }
        if let Op::Started(_) = s.send {
            s.send = Op::Done;
            self.done.push_back(Completion::Send {
                slot,
                res: -libc::ECANCELED,
            });
        }
    }
}

/// Sends `bytes` as datagrams of `segment` bytes; the bytes sent, or the
/// first datagram's error.
fn send_segments(u: &mio::net::UdpSocket, bytes: &[u8], segment: usize) -> io::Result<usize> {
    let mut sent = 0;
    for d in bytes.chunks(segment.max(1)) {
        match u.send(d) {
            Ok(_) => sent += d.len(),
            Err(e) if sent == 0 => return Err(e),
            Err(_) => break,
        }
    }
    Ok(sent)
}

impl Ready {
    /// Takes the readiness events now (waiting at most `timeout`; `None`:
    /// until one comes) and does what they allow.
    fn poll(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        match self.poll.poll(&mut self.events, timeout) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
            Err(e) => return Err(e),
        }
        for ev in self.events.iter() {
            let slot = ev.token();
            if slot == TIMER {
                #[cfg(any(target_os = "linux", target_os = "android"))]
                crate::sys::timer_drain(&self.timer.fd);
                continue;
            }
            let Some(s) = self.io.slots.get_mut(slot.0) else {
                continue;
            };
            if ev.is_readable() {
                s.readable = true;
            }
            if ev.is_read_closed() || ev.is_error() {
                s.hup = true;
            }
            if ev.is_writable() || ev.is_write_closed() || ev.is_error() {
                s.writable = true;
            }
            self.io.progress(slot.0);
        }
        self.timer_check();
        Ok(())
    }

    /// Queues the timer's completion when it is due.
    fn timer_check(&mut self) {
        if self.timer.due.is_some_and(|due| Instant::now() >= due) {
            self.timer.due = None;
            self.io.done.push_back(Completion::Timer);
        }
    }

    /// Registers the slot's new socket for both directions, ready both ways until seen otherwise.
    fn register(&mut self, slot: usize) -> io::Result<()> {
        let registry = self.poll.registry();
        let both = Interest::READABLE | Interest::WRITABLE;
        let s = &mut self.io.slots[slot];
        match &mut s.sock {
            Sock::Tcp(t) => registry.register(t, Token(slot), both)?,
            Sock::Udp(u) => registry.register(u, Token(slot), both)?,
            Sock::None => {}
        }
        Ok(())
    }

    /// Drops the slot's socket (deregistered first).
    fn drop_sock(&mut self, slot: usize) {
        let registry = self.poll.registry();
        let s = &mut self.io.slots[slot];
        match &mut s.sock {
            Sock::Tcp(t) => {
                let _ = registry.deregister(t);
            }
            Sock::Udp(u) => {
                let _ = registry.deregister(u);
            }
            Sock::None => {}
        }
        s.sock = Sock::None;
        s.readable = false;
        s.writable = false;
        s.hup = false;
    }

    /// The time left to the timer, for a poll's timeout: `None` (until an
    /// event) where the `timerfd` wakes the poll; elsewhere the whole
    /// milliseconds left (the last one is polled without blocking).
    fn wait_for(&self) -> Option<Duration> {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            None
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        {
            let due = self.timer.due?;
            let left = due.saturating_duration_since(Instant::now());
            Some(Duration::from_millis(left.as_millis() as u64))
        }
    }
}

impl Ring for Ready {
    fn new(
        slots: usize,
        buf_len: usize,
        tx_len: usize,
        requests: &[&[u8]],
        addr: SocketAddr,
    ) -> io::Result<Ready> {
        let poll = Poll::new()?;
        let timer = Timer {
            due: None,
            #[cfg(any(target_os = "linux", target_os = "android"))]
            fd: crate::sys::timer_fd()?,
        };
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            use std::os::fd::AsRawFd;
            poll.registry().register(
                &mut mio::unix::SourceFd(&timer.fd.as_raw_fd()),
                TIMER,
                Interest::READABLE,
            )?;
        }
        let n = slots.max(1);
        Ok(Ready {
            poll,
            events: Events::with_capacity(EVENTS),
            io: Slots {
                slots: (0..n).map(|_| Slot::default()).collect(),
                bufs: vec![0u8; n * buf_len].into_boxed_slice(),
                buf_len,
                txs: vec![0u8; n * tx_len].into_boxed_slice(),
                tx_len,
                requests: requests.iter().map(|r| Box::<[u8]>::from(*r)).collect(),
                // At most a recv, a send and a connect per slot, and timers.
                done: VecDeque::with_capacity(4 * n + 16),
            },
            addr,
            timer,
        })
    }

    fn buf(&mut self, slot: usize) -> &mut [u8] {
        assert!(
            self.io.slots[slot].recv.is_idle(),
            "read buffer of slot {slot} has a recv pending"
        );
        let len = self.io.buf_len;
        &mut self.io.bufs[slot * len..(slot + 1) * len]
    }

    fn tx(&mut self, slot: usize) -> &mut [u8] {
        assert!(
            self.io.slots[slot].send.is_idle(),
            "send buffer of slot {slot} has a send pending"
        );
        let len = self.io.tx_len;
        &mut self.io.txs[slot * len..(slot + 1) * len]
    }

    fn send_tx(&mut self, slot: usize, from: usize, to: usize) -> io::Result<()> {
        assert!(
            from < to && to <= self.io.tx_len,
            "bad send range {from}..{to}"
        );
        let s = &mut self.io.slots[slot];
        assert!(s.send.is_idle(), "a send is already pending on slot {slot}");
        s.send = Op::Started(SendOp::Tx { from, to });
        self.io.progress(slot);
        Ok(())
    }

    fn recv_nop(&mut self, slot: usize) -> io::Result<()> {
        let s = &mut self.io.slots[slot];
        assert!(s.recv.is_idle(), "a recv is already pending on slot {slot}");
        s.recv = Op::Done;
        self.io.done.push_back(Completion::Recv { slot, res: 0 });
        Ok(())
    }

    fn adopt(&mut self, slot: usize, stream: TcpStream) {
        let s = &mut self.io.slots[slot];
        assert!(
            matches!(s.sock, Sock::None) && !s.busy(),
            "slot {slot} is in use"
        );
        // A socket that cannot be made non-blocking or registered fails
        // its first operation (a reset), as a broken socket would.
        let _ = stream.set_nonblocking(true);
        s.sock = Sock::Tcp(mio::net::TcpStream::from_std(stream));
        s.closing = false;
        s.readable = true;
        s.writable = true;
        if self.register(slot).is_err() {
            self.drop_sock(slot);
        }
    }

    fn connect(&mut self, slot: usize) -> io::Result<()> {
        {
            let s = &self.io.slots[slot];
            assert!(
                matches!(s.sock, Sock::None) && !s.busy(),
                "slot {slot} is in use"
            );
        }
        let s = &mut self.io.slots[slot];
        s.closing = false;
        s.connect = Op::Started(());
        match mio::net::TcpStream::connect(self.addr) {
            Ok(t) => {
                let _ = t.set_nodelay(true);
                s.sock = Sock::Tcp(t);
                s.readable = false;
                s.writable = false;
                if let Err(e) = self.register(slot) {
                    self.drop_sock(slot);
                    let s = &mut self.io.slots[slot];
                    s.connect = Op::Done;
                    self.io.done.push_back(Completion::Connect {
                        slot,
                        res: neg_errno(&e),
                    });
                }
                Ok(())
            }
            Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)) => {
                s.connect = Op::Idle;
                Err(e)
            }
            Err(e) => {
                s.connect = Op::Done;
                self.io.done.push_back(Completion::Connect {
                    slot,
                    res: neg_errno(&e),
                });
                Ok(())
            }
        }
    }

    fn send_pending(&self, slot: usize) -> bool {
        !self.io.slots[slot].send.is_idle()
    }

    fn recv_pending(&self, slot: usize) -> bool {
        !self.io.slots[slot].recv.is_idle()
    }

    fn recv(&mut self, slot: usize, filled: usize) -> io::Result<()> {
        let s = &mut self.io.slots[slot];
        assert!(s.recv.is_idle(), "a recv is already pending on slot {slot}");
        assert!(
            filled < self.io.buf_len,
            "no room left in the read buffer of slot {slot}"
        );
        s.recv = Op::Started(RecvOp::Stream { filled });
        self.io.progress(slot);
        Ok(())
    }

    fn send(&mut self, slot: usize, request: usize, offset: usize) -> io::Result<()> {
        assert!(offset < self.io.requests[request].len(), "empty send");
        let s = &mut self.io.slots[slot];
        assert!(s.send.is_idle(), "a send is already pending on slot {slot}");
        s.send = Op::Started(SendOp::Request { request, offset });
        self.io.progress(slot);
        Ok(())
    }

    fn cancel_send(&mut self, slot: usize) -> io::Result<()> {
        let s = &mut self.io.slots[slot];
        if let Op::Started(_) = s.send {
            s.send = Op::Done;
            self.io.done.push_back(Completion::Send {
                slot,
                res: -libc::ECANCELED,
            });
        }
        Ok(())
    }

    fn timer(&mut self, after_ns: u64) -> io::Result<bool> {
        if self.timer.due.is_some() {
            return Ok(false);
        }
        self.timer.due = Some(Instant::now() + Duration::from_nanos(after_ns));
        #[cfg(any(target_os = "linux", target_os = "android"))]
        crate::sys::timer_set(&self.timer.fd, after_ns)?;
        Ok(true)
    }

    fn timer_sooner(&mut self, after_ns: u64) -> io::Result<bool> {
        if self.timer.due.is_none() {
            return Ok(false);
        }
        self.timer.due = Some(Instant::now() + Duration::from_nanos(after_ns));
        #[cfg(any(target_os = "linux", target_os = "android"))]
        crate::sys::timer_set(&self.timer.fd, after_ns)?;
        Ok(true)
    }

    fn close(&mut self, slot: usize) -> bool {
        let busy = self.io.slots[slot].busy();
        self.drop_sock(slot);
        let s = &mut self.io.slots[slot];
        if busy {
            s.closing = true;
            self.io.cancel(slot);
            false
        } else {
            s.closing = false;
            true
        }
    }

    fn submit(&mut self) -> io::Result<()> {
        self.poll(Some(Duration::ZERO))
    }

    fn submit_and_wait(&mut self) -> io::Result<()> {
        self.timer_check();
        if !self.io.done.is_empty() {
            return self.submit();
        }
        while self.io.done.is_empty() {
            let wait = self.wait_for();
            self.poll(wait)?;
            if self.timer.due.is_none() && wait.is_some() {
                // Nothing armed (no timer, elsewhere than Linux): one wait is enough.
                break;
            }
        }
        Ok(())
    }

    fn completion_ready(&mut self) -> io::Result<bool> {
        if self.io.done.is_empty() {
            self.poll(Some(Duration::ZERO))?;
        }
        Ok(!self.io.done.is_empty())
    }

    fn reap(&mut self, out: &mut [Completion]) -> usize {
        let mut n = 0;
        while n < out.len() {
            let Some(c) = self.io.done.pop_front() else {
                break;
            };
            let slot = match c {
                Completion::Recv { slot, .. } => {
                    self.io.slots[slot].recv = Op::Idle;
                    slot
                }
                Completion::Send { slot, .. } => {
                    self.io.slots[slot].send = Op::Idle;
                    slot
                }
                Completion::Connect { slot, .. } => {
                    self.io.slots[slot].connect = Op::Idle;
                    slot
                }
                Completion::Timer | Completion::Closed { .. } => {
                    out[n] = c;
                    n += 1;
                    continue;
                }
            };
            let s = &mut self.io.slots[slot];
            if s.closing {
                if s.busy() {
                    continue;
                }
                s.closing = false;
                out[n] = Completion::Closed { slot };
            } else {
                out[n] = c;
            }
            n += 1;
        }
        n
    }

    fn adopt_udp(&mut self, slot: usize, sock: UdpSocket) -> UdpCaps {
        let s = &mut self.io.slots[slot];
        assert!(
            matches!(s.sock, Sock::None) && !s.busy(),
            "slot {slot} is in use"
        );
        let _ = sock.set_nonblocking(true);
        s.sock = Sock::Udp(mio::net::UdpSocket::from_std(sock));
        s.closing = false;
        s.readable = true;
        s.writable = true;
        if self.register(slot).is_err() {
            self.drop_sock(slot);
        }
        // Neither GSO nor GRO: one datagram per send and per receive.
        UdpCaps::default()
    }

    fn recv_dgram(&mut self, slot: usize) -> io::Result<()> {
        let s = &mut self.io.slots[slot];
        assert!(s.recv.is_idle(), "a recv is already pending on slot {slot}");
        s.recv = Op::Started(RecvOp::Dgram);
        self.io.progress(slot);
        Ok(())
    }

    fn gro_segment(&self, _slot: usize) -> Option<usize> {
        None
    }

    fn send_dgrams(
        &mut self,
        slot: usize,
        from: usize,
        to: usize,
        segment: Option<usize>,
    ) -> io::Result<()> {
        assert!(
            from < to && to <= self.io.tx_len,
            "bad send range {from}..{to}"
        );
        let s = &mut self.io.slots[slot];
        assert!(s.send.is_idle(), "a send is already pending on slot {slot}");
        let segment = segment.unwrap_or(to - from);
        s.send = Op::Started(SendOp::Dgrams { from, to, segment });
        self.io.progress(slot);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    /// Waits (at most 2 s) for the next completion that is not the timer.
    fn next(ring: &mut Ready) -> Completion {
        let start = Instant::now();
        let mut out = [Completion::Timer; 1];
        loop {
            assert!(start.elapsed() < Duration::from_secs(2), "no completion");
            let _ = ring.timer(20_000_000).unwrap();
            ring.submit_and_wait().unwrap();
            if ring.reap(&mut out) == 1 && out[0] != Completion::Timer {
                return out[0];
            }
        }
    }

    /// A connect, a send of a request, a recv of the peer's answer, the
    /// peer's close as a 0-byte recv; then a busy slot closed: one
    /// `Closed`, none of its cut operations.
    #[test]
    fn operations_complete_as_a_ring_would_report_them() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut ring = Ready::new(2, 64, 0, &[b"ping"], addr).unwrap();
        ring.connect(0).unwrap();
        let (mut peer, _) = listener.accept().unwrap();
        assert_eq!(next(&mut ring), Completion::Connect { slot: 0, res: 0 });
        ring.send(0, 0, 1).unwrap();
        assert!(ring.send_pending(0));
        assert_eq!(next(&mut ring), Completion::Send { slot: 0, res: 3 });
        assert!(!ring.send_pending(0));
        let mut got = [0u8; 3];
        peer.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"ing");
        ring.recv(0, 0).unwrap();
        peer.write_all(b"pong").unwrap();
        assert_eq!(next(&mut ring), Completion::Recv { slot: 0, res: 4 });
        assert_eq!(&ring.buf(0)[..4], b"pong");
        // The peer's bytes and its close together: both are read.
        peer.write_all(b"!").unwrap();
        drop(peer);
        std::thread::sleep(Duration::from_millis(20));
        ring.recv(0, 4).unwrap();
        assert_eq!(next(&mut ring), Completion::Recv { slot: 0, res: 1 });
        ring.recv(0, 5).unwrap();
        assert_eq!(next(&mut ring), Completion::Recv { slot: 0, res: 0 });
        assert!(ring.close(0), "nothing pending: closed at once");

        // A busy slot: its recv is cut, and only `Closed` is reported.
        ring.connect(1).unwrap();
        let (_peer, _) = listener.accept().unwrap();
        assert_eq!(next(&mut ring), Completion::Connect { slot: 1, res: 0 });
        ring.recv(1, 0).unwrap();
        assert!(!ring.close(1));
        assert_eq!(next(&mut ring), Completion::Closed { slot: 1 });
        assert!(!ring.recv_pending(1));
    }

    /// A refused port completes the connect with `-ECONNREFUSED`.
    #[test]
    fn a_refused_connect_completes_with_its_errno() {
        let addr = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let mut ring = Ready::new(1, 64, 0, &[b"x"], addr).unwrap();
        ring.connect(0).unwrap();
        assert_eq!(
            next(&mut ring),
            Completion::Connect {
                slot: 0,
                res: -libc::ECONNREFUSED
            }
        );
    }
}
