//! UDP through the ring (HTTP/3's QUIC datagrams): a connected UDP socket
//! per slot, datagrams received with `RecvMsg` into the slot's read buffer
//! (with GRO: several same-size datagrams in one completion, their size in
//! a `UDP_GRO` control message), datagrams sent with `SendMsg` from the
//! slot's send buffer (with GSO: a run of same-size datagrams in one send,
//! split by the kernel after a `UDP_SEGMENT` control message).
//!
//! The message headers, their `iovec`s and control buffers live in the
//! ring's [`Msgs`] slab, one entry per slot, allocated in `Ring::new` and
//! kept until every operation has completed (the ring's invariant 1); a
//! slot has at most one recv and one send in flight (invariant 2), so
//! each header is rewritten only while the kernel does not read it.

use std::io;
use std::net::UdpSocket;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use io_uring::{opcode, types};

use metronome_loop::UdpCaps;

use super::{tag, Ring, OP_RECV, OP_SEND};

/// `SOL_UDP` options (linux/udp.h).
const UDP_SEGMENT: libc::c_int = 103;
const UDP_GRO: libc::c_int = 104;
/// Room for one control message of an `int` (8-byte aligned).
type Cmsg = [u64; 4];

/// One slot's message headers, for its recv and its send.
pub(super) struct Msgs {
    recv: libc::msghdr,
    recv_iov: libc::iovec,
    recv_cmsg: Cmsg,
    send: libc::msghdr,
    send_iov: libc::iovec,
    send_cmsg: Cmsg,
}

impl Msgs {
    /// `n` zeroed entries (no pointer set until an operation is started).
    pub(super) fn slab(n: usize) -> Box<[Msgs]> {
        (0..n)
            .map(|_| {
                // SAFETY: msghdr and iovec are plain C structs: all-zero
                // (null pointers, zero lengths) is a valid value.
                let (recv, send, recv_iov, send_iov) = unsafe {
                    (
                        std::mem::zeroed::<libc::msghdr>(),
                        std::mem::zeroed::<libc::msghdr>(),
                        std::mem::zeroed::<libc::iovec>(),
                        std::mem::zeroed::<libc::iovec>(),
                    )
                };
                Msgs {
                    recv,
                    recv_iov,
                    recv_cmsg: [0; 4],
                    send,
                    send_iov,
                    send_cmsg: [0; 4],
                }
            })
            .collect()
    }
}

/// `setsockopt(fd, SOL_UDP, opt, value)`; whether it succeeded.
fn set_udp_opt(fd: RawFd, opt: libc::c_int, value: libc::c_int) -> bool {
    // SAFETY: `fd` is an open socket borrowed for the call; the option
    // value is a live `c_int` of the length passed.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_UDP,
            opt,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    rc == 0
}

impl Ring {
    /// Takes ownership of a connected UDP socket (see [`metronome_loop::connected_udp`])
    /// for `slot`, switching GRO on where the kernel has it; returns what
    /// the socket can do.
    ///
    /// # Panics
    /// When the slot has a socket.
    pub(crate) fn adopt_udp(&mut self, slot: usize, sock: UdpSocket) -> UdpCaps {
        let fd = sock.as_raw_fd();
        let caps = UdpCaps {
            // Setting a segment size of 0 (none) succeeds where GSO exists.
            gso: set_udp_opt(fd, UDP_SEGMENT, 0),
            gro: set_udp_opt(fd, UDP_GRO, 1),
        };
        let s = &mut self.slots[slot];
        assert!(s.fd.is_none() && !s.busy(), "slot {slot} is in use");
        s.fd = Some(OwnedFd::from(sock));
        s.closing = false;
        s.udp = true;
        caps
    }

    /// Starts a receive of one datagram (with GRO, of a run of them) into
    /// the slot's whole read buffer; its completion is a
    /// [`Completion::Recv`](metronome_loop::Completion::Recv) with the byte count,
    /// and [`Ring::gro_segment`] then tells the datagrams' size.
    ///
    /// # Panics
    /// When the slot has no UDP socket or a recv in flight.
    pub(crate) fn recv_dgram(&mut self, slot: usize) -> io::Result<()> {
        let buf_len = self.buf_len;
        let s = &mut self.slots[slot];
        assert!(s.udp, "a datagram recv on slot {slot}, not UDP");
        let fd =
            s.fd.as_ref()
                .expect("recv on a slot without a socket")
                .as_raw_fd();
        assert!(!s.recv, "a recv is already in flight on slot {slot}");
        s.recv = true;
        let m = &mut self.msgs[slot];
        // SAFETY: `slot * buf_len + buf_len <= slab length` (`slot`
        // indexes `slots`, which has one buffer per slot).
        m.recv_iov.iov_base = unsafe { self.bufs.as_ptr().add(slot * buf_len) }.cast();
        m.recv_iov.iov_len = buf_len;
        m.recv_cmsg = [0; 4];
        m.recv.msg_name = std::ptr::null_mut();
        m.recv.msg_namelen = 0;
        m.recv.msg_iov = &mut m.recv_iov;
        m.recv.msg_iovlen = 1;
        m.recv.msg_control = m.recv_cmsg.as_mut_ptr().cast();
        m.recv.msg_controllen = std::mem::size_of::<Cmsg>();
        m.recv.msg_flags = 0;
        let entry = opcode::RecvMsg::new(types::Fd(fd), &mut m.recv)
            .build()
            .user_data(tag(OP_RECV, slot));
        // SAFETY: the header, its iovec and control buffer are the slot's
        // entry of the `msgs` slab and the buffer its range of the read
        // slab, both living until every operation has completed (invariant
        // 1), neither handed out nor rewritten while the recv is in flight
        // (invariant 2); the socket stays open until the completion
        // (invariant 3).
        unsafe { self.push(&entry) }
    }

    /// The size of each datagram the last completed recv of `slot` holds
    /// when GRO joined several (the last may be shorter); `None`: one
    /// datagram.
    ///
    /// # Panics
    /// When a recv of the slot is in flight.
    pub(crate) fn gro_segment(&self, slot: usize) -> Option<usize> {
        assert!(
            !self.slots[slot].recv,
            "the header of slot {slot} is in use by the kernel"
        );
        let m = &self.msgs[slot];
        let len = m.recv.msg_controllen.min(std::mem::size_of::<Cmsg>());
        // SAFETY: the header's control pointer and length describe the
        // slot's own control buffer (`len` bounded by its size); no recv
        // writes it now (asserted above). CMSG_FIRSTHDR/CMSG_DATA only do
        // arithmetic inside it, checked against `len`.
        unsafe {
            if len < libc::CMSG_LEN(4) as usize {
                return None;
            }
            let c = libc::CMSG_FIRSTHDR(&m.recv);
            if c.is_null() || (*c).cmsg_level != libc::SOL_UDP || (*c).cmsg_type != UDP_GRO {
                return None;
            }
            let size = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>());
            (size > 0).then_some(size as usize)
        }
    }

    /// Starts a send of `tx(slot)[from..to]`: one datagram, or with
    /// `segment` (GSO) datagrams of `segment` bytes each (the last may be
    /// shorter). Its completion is a
    /// [`Completion::Send`](metronome_loop::Completion::Send) with the bytes sent.
    ///
    /// # Panics
    /// When the slot has no UDP socket or a send in flight, or the range is
    /// empty or outside the buffer.
    pub(crate) fn send_dgrams(
        &mut self,
        slot: usize,
        from: usize,
        to: usize,
        segment: Option<usize>,
    ) -> io::Result<()> {
        assert!(
            from < to && to <= self.tx_len,
            "bad send range {from}..{to}"
        );
        let s = &mut self.slots[slot];
        assert!(s.udp, "a datagram send on slot {slot}, not UDP");
        let fd =
            s.fd.as_ref()
                .expect("send on a slot without a socket")
                .as_raw_fd();
        assert!(!s.send, "a send is already in flight on slot {slot}");
        s.send = true;
        let m = &mut self.msgs[slot];
        // SAFETY: `slot * tx_len + from < (slot + 1) * tx_len <= slab
        // length` (asserted above, and `slot` indexes `slots`).
        m.send_iov.iov_base = unsafe { self.txs.as_ptr().add(slot * self.tx_len + from) }.cast();
        m.send_iov.iov_len = to - from;
        m.send.msg_name = std::ptr::null_mut();
        m.send.msg_namelen = 0;
        m.send.msg_iov = &mut m.send_iov;
        m.send.msg_iovlen = 1;
        m.send.msg_flags = 0;
        match segment.filter(|&seg| seg > 0 && seg < to - from) {
            Some(seg) => {
                m.send_cmsg = [0; 4];
                m.send.msg_control = m.send_cmsg.as_mut_ptr().cast();
                // SAFETY: CMSG_SPACE is arithmetic on a constant.
                m.send.msg_controllen = unsafe { libc::CMSG_SPACE(2) } as usize;
                // SAFETY: the control buffer is the slot's own (32 bytes,
                // 8-byte aligned, more than CMSG_SPACE(2) = 24); the header
                // points at it with that length, so CMSG_FIRSTHDR is
                // inside it and the u16 written at CMSG_DATA too.
                unsafe {
                    let c = libc::CMSG_FIRSTHDR(&m.send);
                    (*c).cmsg_level = libc::SOL_UDP;
                    (*c).cmsg_type = UDP_SEGMENT;
                    (*c).cmsg_len = libc::CMSG_LEN(2) as usize;
                    std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), seg as u16);
                }
            }
            None => {
                m.send.msg_control = std::ptr::null_mut();
                m.send.msg_controllen = 0;
            }
        }
        let entry = opcode::SendMsg::new(types::Fd(fd), &m.send)
            .build()
            .user_data(tag(OP_SEND, slot));
        // SAFETY: the header, iovec and control buffer are the slot's entry
        // of the `msgs` slab and the bytes its range of the send slab, both
        // living until every operation has completed (invariant 1) and not
        // rewritten or handed out (`tx`) while the send is in flight
        // (invariant 2); the socket stays open until the completion
        // (invariant 3).
        unsafe { self.push(&entry) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metronome_loop::{connected_udp, Completion};
    use std::net::SocketAddr;
    use std::time::{Duration, Instant};

    /// Waits for the next completion of a socket operation (at most 2 s).
    fn next(ring: &mut Ring) -> Completion {
        let start = Instant::now();
        let mut out = [Completion::Timer; 1];
        loop {
            assert!(start.elapsed() < Duration::from_secs(2), "no completion");
            let _ = ring.timer(20_000_000);
            ring.submit_and_wait().unwrap();
            if ring.reap(&mut out) == 1 && out[0] != Completion::Timer {
                return out[0];
            }
        }
    }

    fn ring_to(addr: SocketAddr, slots: usize) -> Option<Ring> {
        if crate::ring::probe_ring().is_err() {
            eprintln!("SKIP: no io_uring here");
            return None;
        }
        Some(Ring::new(slots, 64 * 1024, 64 * 1024, &[], addr).unwrap())
    }

    /// A GSO send of 250 bytes in segments of 100 arrives as three
    /// datagrams of 100, 100 and 50 bytes; three datagrams back arrive
    /// whole, in order, through recvs (one each, or joined by GRO with
    /// their size said).
    #[test]
    fn datagrams_go_out_split_and_come_back_whole() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        server
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let Some(mut ring) = ring_to(server.local_addr().unwrap(), 1) else {
            return;
        };
        let sock = connected_udp(server.local_addr().unwrap()).unwrap();
        let client = sock.local_addr().unwrap();
        let caps = ring.adopt_udp(0, sock);
        assert!(caps.gso, "loopback UDP has GSO on Linux 4.18+");
        for (i, b) in ring.tx(0)[..250].iter_mut().enumerate() {
            *b = i as u8;
        }
        ring.send_dgrams(0, 0, 250, Some(100)).unwrap();
        ring.submit().unwrap();
        assert_eq!(next(&mut ring), Completion::Send { slot: 0, res: 250 });
        let mut got = [0u8; 512];
        let mut sizes = Vec::new();
        for _ in 0..3 {
            let (n, from) = server.recv_from(&mut got).unwrap();
            assert_eq!(from, client);
            assert_eq!(got[0], sizes.iter().sum::<usize>() as u8);
            sizes.push(n);
        }
        assert_eq!(sizes, [100, 100, 50]);

        for len in [300usize, 300, 7] {
            server.send_to(&vec![len as u8; len], client).unwrap();
        }
        let mut seen = Vec::new();
        while seen.len() < 607 {
            ring.recv_dgram(0).unwrap();
            ring.submit().unwrap();
            let Completion::Recv { slot: 0, res } = next(&mut ring) else {
                panic!("not a recv");
            };
            assert!(res > 0, "recv failed: {res}");
            let seg = ring.gro_segment(0).unwrap_or(res as usize);
            assert!(seg == 300 || seg == 7, "segment {seg}");
            seen.extend_from_slice(&ring.buf(0)[..res as usize]);
        }
        assert_eq!(seen.len(), 607);
        assert!(seen[..600].iter().all(|&b| b == 44));
        assert!(seen[600..].iter().all(|&b| b == 7));
    }

    /// GSO to a GRO socket on loopback: the kernel keeps the run whole,
    /// so one recv holds all 250 bytes and says their size (100).
    #[test]
    fn a_gso_run_arrives_joined_with_gro() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let Some(mut ring) = ring_to(a.local_addr().unwrap(), 2) else {
            return;
        };
        let b = connected_udp(a.local_addr().unwrap()).unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        let caps = ring.adopt_udp(0, b);
        ring.adopt_udp(1, a);
        ring.recv_dgram(0).unwrap();
        ring.tx(1)[..250].fill(9);
        ring.send_dgrams(1, 0, 250, Some(100)).unwrap();
        ring.submit().unwrap();
        let mut got = [next(&mut ring), next(&mut ring)];
        got.sort_by_key(|c| matches!(c, Completion::Recv { .. }));
        assert_eq!(got[0], Completion::Send { slot: 1, res: 250 });
        let recv = Some(&got[1]);
        if caps.gro {
            assert_eq!(recv, Some(&Completion::Recv { slot: 0, res: 250 }));
            assert_eq!(ring.gro_segment(0), Some(100));
        } else {
            assert_eq!(recv, Some(&Completion::Recv { slot: 0, res: 100 }));
            assert_eq!(ring.gro_segment(0), None);
        }
        assert!(ring.buf(0)[..100].iter().all(|&b| b == 9));
    }

    /// A datagram to a port nobody listens on: the ICMP error reaches the
    /// recv as `-ECONNREFUSED`; closing a slot with a recv in flight ends
    /// in `Closed`.
    #[test]
    fn refused_port_and_close_with_a_recv_pending() {
        let gone = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = gone.local_addr().unwrap();
        drop(gone);
        let Some(mut ring) = ring_to(addr, 1) else {
            return;
        };
        let sock = connected_udp(addr).unwrap();
        ring.adopt_udp(0, sock);
        ring.recv_dgram(0).unwrap();
        ring.tx(0)[..10].fill(1);
        ring.send_dgrams(0, 0, 10, None).unwrap();
        ring.submit().unwrap();
        let mut results = [next(&mut ring), next(&mut ring)];
        results.sort_by_key(|c| matches!(c, Completion::Recv { .. }));
        assert_eq!(results[0], Completion::Send { slot: 0, res: 10 });
        assert_eq!(
            results[1],
            Completion::Recv {
                slot: 0,
                res: -libc::ECONNREFUSED
            }
        );

        ring.recv_dgram(0).unwrap();
        ring.submit().unwrap();
        assert!(!ring.close(0), "a recv is in flight");
        assert_eq!(next(&mut ring), Completion::Closed { slot: 0 });
    }
}
