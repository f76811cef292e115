//! The io_uring ring and the memory the kernel reads and writes through it
//! (one of the two modules allowed `unsafe`; the other, `sys`, holds the
//! raw socket, affinity and clock calls).
//!
//! The safe API is built on three invariants, each established here:
//!
//! 1. **Kernel-visible memory lives in the ring and outlives every
//!    operation.** The read buffers (one slab, `slots * buf_len` bytes), the
//!    TLS send buffers (one slab, `slots * tx_len` bytes, empty without TLS),
//!    the copies of the requests, the target's socket address and the timer's
//!    timespec are allocated in [`Ring::new`], before the first operation,
//!    and freed in `Drop` only after every operation has completed; if the
//!    drain fails they are leaked, never freed under the kernel.
//! 2. **One operation of a kind per slot.** The slot index is the low 32
//!    bits of `user_data`, the operation kind the next 8 bits; a slot has at
//!    most one recv, one send and one connect in flight (flags in
//!    [`SlotState`]), so a completion names exactly one pending operation and
//!    the read buffer of a slot with a recv in flight is never handed out.
//!    (An `AsyncCancel` of a slot's send touches no memory; its own
//!    completion is not reported.)
//! 3. **A slot's socket is closed only when nothing of it is in flight.**
//!    [`Ring::close`] shuts the socket down (which completes its pending
//!    operations) and drops the descriptor when the last completion arrives,
//!    reported as [`Completion::Closed`], so a descriptor number is never
//!    reused under a pending operation.
//!
//! UDP slots (HTTP/3) follow the same invariants; their message headers
//! are one more slab of the ring (`udp`).
//!
//! Reserved `user_data` tags are named constants ([`TAG_TIMER`]).

use std::io;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use io_uring::{opcode, types, IoUring};

use crate::sys::{shutdown, sockaddr};

use metronome_loop::{Completion, UdpCaps};
use udp::Msgs;

mod udp;

/// `user_data` of the pacing timer (a `Timeout` sqe); never a slot.
pub(crate) const TAG_TIMER: u64 = u64::MAX;
/// The `user_data` of an update of the pacing timer ([`Ring::timer_sooner`]).
pub(crate) const TAG_TIMER_UPDATE: u64 = u64::MAX - 1;
/// Operation kinds, stored in bits 32..40 of `user_data`.
const OP_RECV: u64 = 1;
const OP_SEND: u64 = 2;
const OP_CONNECT: u64 = 3;
/// An `AsyncCancel` of the slot's send; its own completion is not reported.
const OP_CANCEL: u64 = 4;
const OP_SHIFT: u32 = 32;
/// How long `Drop` waits for operations in flight before leaking the memory.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

fn tag(op: u64, slot: usize) -> u64 {
    (op << OP_SHIFT) | slot as u64
}

/// What the ring knows about one slot.
#[derive(Debug, Default)]
struct SlotState {
    fd: Option<OwnedFd>,
    recv: bool,
    send: bool,
    connect: bool,
    closing: bool,
    /// A UDP socket (`ring::udp`): closing it cancels its operations.
    udp: bool,
}

impl SlotState {
    fn busy(&self) -> bool {
        self.recv || self.send || self.connect
    }
}

/// An io_uring instance with the memory its operations use.
pub(crate) struct Ring {
    uring: IoUring,
    slots: Box<[SlotState]>,
    /// The read-buffer slab from `Box::into_raw`; freed in `Drop` (invariant 1).
    bufs: NonNull<u8>,
    buf_len: usize,
    /// The send slab of TLS slots (ciphertext), `slots * tx_len` bytes from
    /// `Box::into_raw` (empty without TLS); freed in `Drop` (invariant 1).
    txs: NonNull<u8>,
    tx_len: usize,
    requests: Box<[Box<[u8]>]>,
    /// The message headers of UDP slots' recvs and sends (invariant 1).
    msgs: Box<[Msgs]>,
    addr: Box<libc::sockaddr_storage>,
    addr_len: libc::socklen_t,
    family: libc::c_int,
    timespec: Box<types::Timespec>,
    timer_pending: bool,
    /// The new expiry of an update of the pending timer, read by the kernel.
    update_timespec: Box<types::Timespec>,
    update_pending: bool,
    in_flight: usize,
}

impl Ring {
    /// A ring for `slots` connections of `buf_len`-byte read buffers, sending
    /// copies of `requests` to `addr`. Everything the kernel will touch is
    /// allocated here.
    ///
    /// # Errors
    /// The ring could not be created (io_uring refused, or out of memory).
    pub(crate) fn new(
        slots: usize,
        buf_len: usize,
        tx_len: usize,
        requests: &[&[u8]],
        addr: SocketAddr,
    ) -> io::Result<Ring> {
        // Every slot has at most a recv and a send (or a connect) in flight,
        // plus the timer: the completion queue (twice the entries) never overflows.
        let entries = (2 * slots + 8).next_power_of_two().clamp(64, 32_768) as u32;
        // Completions are delivered as task work. By default the kernel
        // interrupts this thread with an IPI for each one, which costs more
        // than the completion itself on a busy-waiting pacer; with
        // COOP_TASKRUN the work waits for the thread's next ring entry
        // (every loop submits or waits), so completions are handled in
        // batches. Kernels before 5.19 refuse the flag: fall back to a plain ring.
        // TASKRUN_FLAG makes the kernel flag pending completion work in the
        // submission ring, so the spin loop can see it without a syscall and
        // enter only when there is something to reap.
        let uring = IoUring::builder()
            .setup_coop_taskrun()
            .setup_taskrun_flag()
            .setup_single_issuer()
            .build(entries)
            .or_else(|_| IoUring::new(entries))?;
        let slab = vec![0u8; slots.max(1) * buf_len].into_boxed_slice();
        let bufs = NonNull::new(Box::into_raw(slab).cast::<u8>()).expect("Box is non-null");
        let tx_slab = vec![0u8; slots.max(1) * tx_len].into_boxed_slice();
        let txs = NonNull::new(Box::into_raw(tx_slab).cast::<u8>()).expect("Box is non-null");
        let (storage, addr_len) = sockaddr(addr);
        Ok(Ring {
            uring,
            slots: (0..slots).map(|_| SlotState::default()).collect(),
            bufs,
            buf_len,
            txs,
            tx_len,
            requests: requests.iter().map(|r| Box::<[u8]>::from(*r)).collect(),
            msgs: Msgs::slab(slots),
            addr: Box::new(storage),
            addr_len,
            family: if addr.is_ipv4() {
                libc::AF_INET
            } else {
                libc::AF_INET6
            },
            timespec: Box::new(types::Timespec::new()),
            timer_pending: false,
            update_timespec: Box::new(types::Timespec::new()),
            update_pending: false,
            in_flight: 0,
        })
    }

    /// The slot's read buffer.
    ///
    /// # Panics
    /// When a recv into it is in flight (an engine bug).
    pub(crate) fn buf(&mut self, slot: usize) -> &mut [u8] {
        assert!(
            !self.slots[slot].recv,
            "read buffer of slot {slot} is in use by the kernel"
        );
        assert!(slot < self.slots.len());
        // SAFETY: `bufs` points at a live slab of `slots * buf_len` bytes
        // (invariant 1, allocated in `new`, freed only in `Drop`); the range
        // `slot * buf_len .. +buf_len` is inside it (asserted above); no recv
        // into this range is in flight (asserted above, invariant 2), so the
        // kernel does not write it while the returned borrow of `self` lives
        // (a new recv needs `&mut self`).
        unsafe {
            std::slice::from_raw_parts_mut(
                self.bufs.as_ptr().add(slot * self.buf_len),
                self.buf_len,
            )
        }
    }

    /// The slot's send buffer (TLS ciphertext), to fill before [`Ring::send_tx`].
    ///
    /// # Panics
    /// When a send from it is in flight (an engine bug).
    pub(crate) fn tx(&mut self, slot: usize) -> &mut [u8] {
        assert!(
            !self.slots[slot].send,
            "send buffer of slot {slot} is in use by the kernel"
        );
        assert!(slot < self.slots.len());
        // SAFETY: `txs` points at a live slab of `slots * tx_len` bytes
        // (invariant 1, allocated in `new`, freed only in `Drop`); the range
        // `slot * tx_len .. +tx_len` is inside it (asserted above); no send
        // from it is in flight (asserted above, invariant 2), and a new one
        // needs `&mut self`, so the kernel does not read it while the
        // returned borrow lives.
        unsafe {
            std::slice::from_raw_parts_mut(self.txs.as_ptr().add(slot * self.tx_len), self.tx_len)
        }
    }

    /// Starts a send of `tx(slot)[from..to]`.
    ///
    /// # Panics
    /// When the slot has no socket or a send in flight, or the range is
    /// empty or outside the buffer.
    pub(crate) fn send_tx(&mut self, slot: usize, from: usize, to: usize) -> io::Result<()> {
        assert!(
            from < to && to <= self.tx_len,
            "bad send range {from}..{to}"
        );
        let s = &mut self.slots[slot];
        let fd =
            s.fd.as_ref()
                .expect("send on a slot without a socket")
                .as_raw_fd();
        assert!(!s.send, "a send is already in flight on slot {slot}");
        s.send = true;
        // SAFETY: `slot * tx_len + from < (slot + 1) * tx_len <= slab
        // length` (asserted above, and `slot` indexes `slots`).
        let ptr = unsafe { self.txs.as_ptr().add(slot * self.tx_len + from) };
        let entry = opcode::Send::new(types::Fd(fd), ptr, (to - from) as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(tag(OP_SEND, slot));
        // SAFETY: the bytes are in the send slab, which lives until every
        // operation has completed (invariant 1) and is not handed out by
        // `tx` while the send is in flight (invariant 2); the socket stays
        // open until the completion (invariant 3).
        unsafe { self.push(&entry) }
    }

    /// Completes a "recv" of the slot at once with 0 bytes, touching no
    /// memory: a `Nop` tagged as the slot's recv (TLS: plaintext rustls
    /// still holds is delivered through it, as a recv would).
    ///
    /// # Panics
    /// When the slot has no socket or a recv in flight.
    pub(crate) fn recv_nop(&mut self, slot: usize) -> io::Result<()> {
        let s = &mut self.slots[slot];
        assert!(s.fd.is_some(), "recv on a slot without a socket");
        assert!(!s.recv, "a recv is already in flight on slot {slot}");
        s.recv = true;
        let entry = opcode::Nop::new().build().user_data(tag(OP_RECV, slot));
        // SAFETY: a `Nop` points to no memory.
        unsafe { self.push(&entry) }
    }

    /// Takes ownership of an already connected socket for `slot`.
    pub(crate) fn adopt(&mut self, slot: usize, stream: TcpStream) {
        let s = &mut self.slots[slot];
        assert!(s.fd.is_none() && !s.busy(), "slot {slot} is in use");
        s.fd = Some(OwnedFd::from(stream));
        s.closing = false;
        s.udp = false;
    }

    /// Opens a non-connected TCP socket (`TCP_NODELAY`) in `slot` and starts
    /// an asynchronous connect to the target.
    ///
    /// # Errors
    /// The socket could not be created (e.g. out of descriptors).
    pub(crate) fn connect(&mut self, slot: usize) -> io::Result<()> {
        assert!(
            self.slots[slot].fd.is_none() && !self.slots[slot].busy(),
            "slot {slot} is in use"
        );
        // SAFETY: plain socket(2) call with constant arguments; no pointer.
        let raw = unsafe {
            libc::socket(
                self.family,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                libc::IPPROTO_TCP,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a descriptor socket(2) just returned and nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let stream = TcpStream::from(fd);
        stream.set_nodelay(true)?;
        let fd = OwnedFd::from(stream);
        let entry = opcode::Connect::new(
            types::Fd(fd.as_raw_fd()),
            (&*self.addr as *const libc::sockaddr_storage).cast::<libc::sockaddr>(),
            self.addr_len,
        )
        .build()
        .user_data(tag(OP_CONNECT, slot));
        let s = &mut self.slots[slot];
        s.fd = Some(fd);
        s.connect = true;
        s.closing = false;
        s.udp = false;
        // SAFETY: the sockaddr lives in `self.addr` (invariant 1) and the
        // socket in the slot, closed only when nothing is in flight (invariant 3).
        unsafe { self.push(&entry) }
    }

    /// True when a send from the slot is in flight.
    pub(crate) fn send_pending(&self, slot: usize) -> bool {
        self.slots[slot].send
    }

    /// True when a recv into the slot's buffer is in flight.
    pub(crate) fn recv_pending(&self, slot: usize) -> bool {
        self.slots[slot].recv
    }

    /// Starts a recv into `buf(slot)[filled..]`.
    ///
    /// # Panics
    /// When the slot has no socket, a recv in flight, or `filled` leaves no room.
    pub(crate) fn recv(&mut self, slot: usize, filled: usize) -> io::Result<()> {
        let buf_len = self.buf_len;
        let s = &mut self.slots[slot];
        let fd =
            s.fd.as_ref()
                .expect("recv on a slot without a socket")
                .as_raw_fd();
        assert!(!s.recv, "a recv is already in flight on slot {slot}");
        assert!(
            filled < buf_len,
            "no room left in the read buffer of slot {slot}"
        );
        s.recv = true;
        // SAFETY: `slot * buf_len + filled < (slot + 1) * buf_len <= slab
        // length`, asserted above; the slab lives until every operation has
        // completed (invariant 1).
        let ptr = unsafe { self.bufs.as_ptr().add(slot * buf_len + filled) };
        let entry = opcode::Recv::new(types::Fd(fd), ptr, (buf_len - filled) as u32)
            .build()
            .user_data(tag(OP_RECV, slot));
        // SAFETY: the destination range belongs to this slot alone and is not
        // handed out by `buf` while the recv is in flight (invariant 2); the
        // socket stays open until the completion (invariant 3).
        unsafe { self.push(&entry) }
    }

    /// Starts a send of `requests[request][offset..]`.
    ///
    /// # Panics
    /// When the slot has no socket or a send in flight, or the range is empty.
    pub(crate) fn send(&mut self, slot: usize, request: usize, offset: usize) -> io::Result<()> {
        let bytes = &self.requests[request][offset..];
        assert!(!bytes.is_empty(), "empty send");
        let s = &mut self.slots[slot];
        let fd =
            s.fd.as_ref()
                .expect("send on a slot without a socket")
                .as_raw_fd();
        assert!(!s.send, "a send is already in flight on slot {slot}");
        s.send = true;
        let entry = opcode::Send::new(types::Fd(fd), bytes.as_ptr(), bytes.len() as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(tag(OP_SEND, slot));
        // SAFETY: the bytes are the ring's own copy of the request, which
        // lives until every operation has completed (invariant 1); the
        // socket stays open until the completion (invariant 3).
        unsafe { self.push(&entry) }
    }

    /// Cuts the slot's send in flight short (`AsyncCancel`, naming the send
    /// by its `user_data`): the send's completion follows, `-ECANCELED`
    /// when it was cut, its own result when it had ended already. Nothing
    /// when no send is in flight. A cancel is processed when it is
    /// submitted, in order, so it never reaches a later send of the slot.
    pub(crate) fn cancel_send(&mut self, slot: usize) -> io::Result<()> {
        if !self.slots[slot].send {
            return Ok(());
        }
        let entry = opcode::AsyncCancel::new(tag(OP_SEND, slot))
            .build()
            .user_data(tag(OP_CANCEL, slot));
        // SAFETY: the entry points to no memory: it names the send by its
        // `user_data`.
        unsafe { self.push(&entry) }
    }

    /// Cancels the slot's recv and send in flight (`AsyncCancel` by
    /// `user_data`); their completions follow, `-ECANCELED` when cut.
    fn cancel_all(&mut self, slot: usize) -> io::Result<()> {
        for (op, pending) in [
            (OP_RECV, self.slots[slot].recv),
            (OP_SEND, self.slots[slot].send),
        ] {
            if pending {
                let entry = opcode::AsyncCancel::new(tag(op, slot))
                    .build()
                    .user_data(tag(OP_CANCEL, slot));
                // SAFETY: the entry points to no memory: it names the
                // operation by its `user_data`.
                unsafe { self.push(&entry) }?;
            }
        }
        Ok(())
    }

    /// Arms the pacing timer to fire in `after_ns`, unless it is already
    /// armed. Returns whether it was armed now.
    pub(crate) fn timer(&mut self, after_ns: u64) -> io::Result<bool> {
        if self.timer_pending {
            return Ok(false);
        }
        *self.timespec = types::Timespec::new()
            .sec(after_ns / 1_000_000_000)
            .nsec((after_ns % 1_000_000_000) as u32);
        let entry = opcode::Timeout::new(&*self.timespec as *const types::Timespec)
            .build()
            .user_data(TAG_TIMER);
        self.timer_pending = true;
        // SAFETY: the timespec lives in `self.timespec` (invariant 1) and is
        // rewritten only when no timer is pending (checked above).
        unsafe { self.push(&entry) }.map(|()| true)
    }

    /// Moves the pending pacing timer to fire in `after_ns` (from now)
    /// instead (a wake that became sooner: a conversation's next turn),
    /// unless no timer is pending or an update is already in flight.
    /// Returns whether the update was pushed. The timer keeps its tag; the
    /// update's own completion is not reported.
    pub(crate) fn timer_sooner(&mut self, after_ns: u64) -> io::Result<bool> {
        if !self.timer_pending || self.update_pending {
            return Ok(false);
        }
        *self.update_timespec = types::Timespec::new()
            .sec(after_ns / 1_000_000_000)
            .nsec((after_ns % 1_000_000_000) as u32);
        let entry =
            opcode::TimeoutUpdate::new(TAG_TIMER, &*self.update_timespec as *const types::Timespec)
                .build()
                .user_data(TAG_TIMER_UPDATE);
        self.update_pending = true;
        // SAFETY: the timespec lives in `self.update_timespec` (invariant
        // 1) and is rewritten only when no update is pending (checked above).
        unsafe { self.push(&entry) }.map(|()| true)
    }

    /// Closes the slot's socket. Returns true when it is closed now; false
    /// when operations are in flight: they are cut short (`shutdown`) and a
    /// [`Completion::Closed`] follows the last one.
    pub(crate) fn close(&mut self, slot: usize) -> bool {
        let s = &mut self.slots[slot];
        if s.busy() {
            if !s.closing {
                s.closing = true;
                if s.udp {
                    // A shutdown does not end a pending UDP recv, and
                    // would fail a send queued but not yet submitted (a
                    // QUIC CONNECTION_CLOSE): cancel, after what is queued.
                    let _ = self.cancel_all(slot);
                } else if let Some(fd) = &s.fd {
                    shutdown(fd.as_raw_fd());
                }
            }
            false
        } else {
            s.fd = None;
            s.closing = false;
            true
        }
    }

    /// Submits every queued sqe without waiting.
    pub(crate) fn submit(&mut self) -> io::Result<()> {
        match self.uring.submit() {
            Ok(_) => Ok(()),
            Err(e) if retryable(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Submits and sleeps until at least one completion is ready.
    pub(crate) fn submit_and_wait(&mut self) -> io::Result<()> {
        if !self.uring.completion().is_empty() {
            return self.submit();
        }
        match self.uring.submit_and_wait(1) {
            Ok(_) => Ok(()),
            Err(e) if retryable(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// True when a completion is ready to reap. When the kernel flags
    /// completion work that has not run yet (cooperative task running), one
    /// non-blocking enter runs it first. Costs two atomic loads otherwise.
    pub(crate) fn completion_ready(&mut self) -> io::Result<bool> {
        if !self.uring.completion().is_empty() {
            return Ok(true);
        }
        if self.uring.submission().taskrun() {
            // submit() enters with GETEVENTS when the flag is set.
            self.submit()?;
            return Ok(!self.uring.completion().is_empty());
        }
        Ok(false)
    }

    /// Takes up to `out.len()` completions without blocking; returns how many.
    pub(crate) fn reap(&mut self, out: &mut [Completion]) -> usize {
        let mut n = 0;
        while n < out.len() {
            let Some(cqe) = self.uring.completion().next() else {
                break;
            };
            if let Some(c) = self.decode(cqe.user_data(), cqe.result()) {
                out[n] = c;
                n += 1;
            }
        }
        n
    }

    fn decode(&mut self, user_data: u64, res: i32) -> Option<Completion> {
        self.in_flight = self.in_flight.saturating_sub(1);
        if user_data == TAG_TIMER {
            self.timer_pending = false;
            return Some(Completion::Timer);
        }
        if user_data == TAG_TIMER_UPDATE {
            // Done (or the timer had fired already): nothing to report.
            self.update_pending = false;
            return None;
        }
        let slot = (user_data & 0xffff_ffff) as usize;
        let op = user_data >> OP_SHIFT;
        let s = self.slots.get_mut(slot)?;
        let c = match op {
            OP_RECV => {
                s.recv = false;
                Completion::Recv { slot, res }
            }
            OP_SEND => {
                s.send = false;
                Completion::Send { slot, res }
            }
            OP_CONNECT => {
                s.connect = false;
                Completion::Connect { slot, res }
            }
            // A cancel's own result: the cancelled send reports its own.
            OP_CANCEL => return None,
            _ => return None,
        };
        if s.closing {
            if s.busy() {
                return None;
            }
            s.closing = false;
            s.fd = None;
            return Some(Completion::Closed { slot });
        }
        Some(c)
    }

    /// Pushes one sqe, submitting first when the queue is full.
    ///
    /// # Safety
    /// Every buffer the entry points to must stay valid until its completion
    /// is reaped (invariant 1), and the flags of its slot must be set (invariant 2).
    unsafe fn push(&mut self, entry: &io_uring::squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: the caller guarantees the entry's buffers outlive the operation.
            let pushed = unsafe { self.uring.submission().push(entry) };
            if pushed.is_ok() {
                self.in_flight += 1;
                return Ok(());
            }
            self.submit()?;
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // Cut every pending socket operation short, then wait for all of
        // them (the timer fires within its own short delay) before the
        // memory they use is freed.
        for slot in 0..self.slots.len() {
            let s = &self.slots[slot];
            if s.busy() {
                if s.udp {
                    let _ = self.cancel_all(slot);
                } else if let Some(fd) = &s.fd {
                    shutdown(fd.as_raw_fd());
                }
            }
        }
        let start = Instant::now();
        let mut scratch = [Completion::Timer; 64];
        while self.in_flight > 0 && start.elapsed() < DRAIN_LIMIT {
            if !self.timer_pending {
                let _ = self.timer(10_000_000);
            }
            if self.submit_and_wait().is_err() {
                break;
            }
            self.reap(&mut scratch);
        }
        let slab = std::ptr::slice_from_raw_parts_mut(
            self.bufs.as_ptr(),
            self.slots.len().max(1) * self.buf_len,
        );
        let tx_slab = std::ptr::slice_from_raw_parts_mut(
            self.txs.as_ptr(),
            self.slots.len().max(1) * self.tx_len,
        );
        if self.in_flight > 0 {
            // The kernel may still touch the memory: leak it rather than free it.
            std::mem::forget(std::mem::take(&mut self.requests));
            std::mem::forget(std::mem::take(&mut self.msgs));
            std::mem::forget(std::mem::replace(
                &mut self.timespec,
                Box::new(types::Timespec::new()),
            ));
            std::mem::forget(std::mem::replace(
                &mut self.update_timespec,
                Box::new(types::Timespec::new()),
            ));
            let copy = Box::new(*self.addr);
            std::mem::forget(std::mem::replace(&mut self.addr, copy));
            return;
        }
        // SAFETY: `slab` is exactly the pointer and length `Box::into_raw`
        // returned in `new` (the slot count never changes), freed only here,
        // and nothing is in flight any more (checked above).
        drop(unsafe { Box::from_raw(slab) });
        // SAFETY: as for `slab`: the pointer and length `Box::into_raw`
        // returned in `new`, freed only here, nothing in flight.
        drop(unsafe { Box::from_raw(tx_slab) });
    }
}

fn retryable(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINTR) | Some(libc::EBUSY) | Some(libc::EAGAIN) | Some(libc::ETIME)
    )
}

/// The event loop's [`metronome_loop::Ring`], each operation one sqe
/// (the inherent methods above, with their invariants).
impl metronome_loop::Ring for Ring {
    fn new(
        slots: usize,
        buf_len: usize,
        tx_len: usize,
        requests: &[&[u8]],
        addr: SocketAddr,
    ) -> io::Result<Ring> {
        Ring::new(slots, buf_len, tx_len, requests, addr)
    }
    fn buf(&mut self, slot: usize) -> &mut [u8] {
        Ring::buf(self, slot)
    }
    fn tx(&mut self, slot: usize) -> &mut [u8] {
        Ring::tx(self, slot)
    }
    fn send_tx(&mut self, slot: usize, from: usize, to: usize) -> io::Result<()> {
        Ring::send_tx(self, slot, from, to)
    }
    fn recv_nop(&mut self, slot: usize) -> io::Result<()> {
        Ring::recv_nop(self, slot)
    }
    fn adopt(&mut self, slot: usize, stream: TcpStream) {
        Ring::adopt(self, slot, stream);
    }
    fn connect(&mut self, slot: usize) -> io::Result<()> {
        Ring::connect(self, slot)
    }
    fn send_pending(&self, slot: usize) -> bool {
        Ring::send_pending(self, slot)
    }
    fn recv_pending(&self, slot: usize) -> bool {
        Ring::recv_pending(self, slot)
    }
    fn recv(&mut self, slot: usize, filled: usize) -> io::Result<()> {
        Ring::recv(self, slot, filled)
    }
    fn send(&mut self, slot: usize, request: usize, offset: usize) -> io::Result<()> {
        Ring::send(self, slot, request, offset)
    }
    fn cancel_send(&mut self, slot: usize) -> io::Result<()> {
        Ring::cancel_send(self, slot)
    }
    fn timer(&mut self, after_ns: u64) -> io::Result<bool> {
        Ring::timer(self, after_ns)
    }
    fn timer_sooner(&mut self, after_ns: u64) -> io::Result<bool> {
        Ring::timer_sooner(self, after_ns)
    }
    fn close(&mut self, slot: usize) -> bool {
        Ring::close(self, slot)
    }
    fn submit(&mut self) -> io::Result<()> {
        Ring::submit(self)
    }
    fn submit_and_wait(&mut self) -> io::Result<()> {
        Ring::submit_and_wait(self)
    }
    fn completion_ready(&mut self) -> io::Result<bool> {
        Ring::completion_ready(self)
    }
    fn reap(&mut self, out: &mut [Completion]) -> usize {
        Ring::reap(self, out)
    }
    fn adopt_udp(&mut self, slot: usize, sock: UdpSocket) -> UdpCaps {
        Ring::adopt_udp(self, slot, sock)
    }
    fn recv_dgram(&mut self, slot: usize) -> io::Result<()> {
        Ring::recv_dgram(self, slot)
    }
    fn gro_segment(&self, slot: usize) -> Option<usize> {
        Ring::gro_segment(self, slot)
    }
    fn send_dgrams(
        &mut self,
        slot: usize,
        from: usize,
        to: usize,
        segment: Option<usize>,
    ) -> io::Result<()> {
        Ring::send_dgrams(self, slot, from, to, segment)
    }
}

/// Whether io_uring works here: a tiny ring, and the opcodes the engine
/// uses. Returns the OS error of the ring setup, or the missing opcode.
pub(crate) fn probe_ring() -> Result<(), Result<io::Error, &'static str>> {
    let ring = IoUring::new(8).map_err(Ok)?;
    let mut probe = io_uring::Probe::new();
    ring.submitter().register_probe(&mut probe).map_err(Ok)?;
    for (code, name) in [
        (opcode::Connect::CODE, "IORING_OP_CONNECT"),
        (opcode::Send::CODE, "IORING_OP_SEND"),
        (opcode::Recv::CODE, "IORING_OP_RECV"),
        (opcode::Timeout::CODE, "IORING_OP_TIMEOUT"),
    ] {
        if !probe.is_supported(code) {
            return Err(Err(name));
        }
    }
    Ok(())
}
