//! Kernel receive timestamps against the client's own stamp (issue 12,
//! part 1): would `SO_TIMESTAMPING` (software RX) make latency independent
//! of the generator's scheduling, and what does it cost per read?
//!
//! An instant server (one thread per connection, a fixed 2-byte `200`) runs
//! on `--server-cpu`; a paced client on `--client-cpu` spins to each
//! intended send time of a constant schedule, sends on the next idle
//! connection and reads responses with `recvmsg`, taking both the kernel's
//! software receive stamp (`SCM_TIMESTAMPING`, `CLOCK_REALTIME`) and its own
//! `CLOCK_REALTIME` right after the read. Two client loops:
//!
//! - `blind`: responses are read only right after a send (the engine's old
//!   behaviour: a busy-waiting pacer stamps at its next free moment);
//! - `reaping`: responses are read in every spin iteration (`epoll_wait`
//!   with a zero timeout, then `recvmsg` on the ready sockets).
//!
//! For each rate and loop it prints latency p50 and p99 (from the intended
//! send time) by the client's stamp and by the kernel's, the gap between the
//! two stamps, and the time one `recvmsg` call that returned a response
//! took with timestamps on and off (alternate connections carry the option,
//! so both are measured in the same run).
//!
//! Run: `cargo bench --bench rxstamp -- [--rates 500,5000,10000]
//! [--seconds 2] [--connections 16]`. Loopback only; the server is this
//! process's own and stops with it.
//!
//! Linux only (`SO_TIMESTAMPING`, epoll, `sched_setaffinity`): elsewhere
//! it builds to a `main` that says so.

fn main() {
    #[cfg(target_os = "linux")]
    linux::main();
    #[cfg(not(target_os = "linux"))]
    eprintln!("rxstamp measures Linux's SO_TIMESTAMPING: nothing to measure on this system");
}

/// The measurement (every call it makes is Linux's).
#[cfg(target_os = "linux")]
mod linux {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;
    use std::time::Duration;

    const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

    pub(crate) fn main() {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let get = |name: &str, default: &str| -> String {
            args.iter()
                .position(|a| a == name)
                .and_then(|i| args.get(i + 1))
                .cloned()
                .unwrap_or_else(|| default.to_string())
        };
        let rates: Vec<f64> = get("--rates", "500,5000,10000")
            .split(',')
            .filter_map(|r| r.parse().ok())
            .collect();
        let seconds: f64 = get("--seconds", "2").parse().unwrap_or(2.0);
        let conns: usize = get("--connections", "16").parse().unwrap_or(16);
        let client_cpu: usize = get("--client-cpu", "0").parse().unwrap_or(0);
        let server_cpu: usize = get("--server-cpu", "1").parse().unwrap_or(1);

        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        std::thread::spawn(move || serve(listener, server_cpu));
        pin(client_cpu);
        println!(
            "| loop | rate | responses | latency p50 / p99 us (client stamp) | (kernel stamp) | client - kernel p50 / p99 us | recvmsg ns with / without timestamps (p50) |"
        );
        println!("|---|---:|---:|---:|---:|---:|---:|");
        for &rate in &rates {
            for reaping in [false, true] {
                let r = run(addr, rate, seconds, conns, reaping);
                println!(
                    "| {} | {rate:.0} | {} | {:.1} / {:.1} | {:.1} / {:.1} | {:.1} / {:.1} | {} / {} |",
                    if reaping { "reaping" } else { "blind" },
                    r.user.len(),
                    q(&r.user, 0.5),
                    q(&r.user, 0.99),
                    q(&r.kernel, 0.5),
                    q(&r.kernel, 0.99),
                    q(&r.gap, 0.5),
                    q(&r.gap, 0.99),
                    q(&r.cost_on, 0.5) * 1e3,
                    q(&r.cost_off, 0.5) * 1e3,
                );
            }
        }
    }

    /// Quantile of microsecond values (nearest rank); NaN when empty.
    fn q(v: &[f64], p: f64) -> f64 {
        if v.is_empty() {
            return f64::NAN;
        }
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        let rank = ((p * s.len() as f64).ceil() as usize).clamp(1, s.len());
        s[rank - 1]
    }

    fn pin(cpu: usize) {
        // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET and
        // sched_setaffinity only read and write the set we own.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }

    /// One thread per connection: read a request, answer at once.
    fn serve(listener: TcpListener, cpu: usize) {
        pin(cpu);
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            std::thread::spawn(move || {
                pin(cpu);
                let _ = s.set_nodelay(true);
                let mut buf = [0u8; 4096];
                let mut have = 0;
                loop {
                    match s.read(&mut buf[have..]) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => have += n,
                    }
                    while let Some(end) = buf[..have].windows(4).position(|w| w == b"\r\n\r\n") {
                        if s.write_all(RESPONSE).is_err() {
                            return;
                        }
                        buf.copy_within(end + 4..have, 0);
                        have -= end + 4;
                    }
                }
            });
        }
    }

    fn realtime_ns() -> i128 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec we own.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
        i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
    }

    struct Outcome {
        user: Vec<f64>,
        kernel: Vec<f64>,
        gap: Vec<f64>,
        cost_on: Vec<f64>,
        cost_off: Vec<f64>,
    }

    struct Conn {
        stream: TcpStream,
        stamped: bool,
        busy: bool,
        intended: i128,
    }

    fn run(
        addr: std::net::SocketAddr,
        rate: f64,
        seconds: f64,
        n: usize,
        reaping: bool,
    ) -> Outcome {
        let mut conns: Vec<Conn> = (0..n)
            .map(|i| {
                let stream = TcpStream::connect(addr).expect("connect to the bench's own server");
                stream.set_nodelay(true).expect("nodelay");
                stream.set_nonblocking(true).expect("nonblocking");
                let stamped = i % 2 == 0;
                if stamped {
                    let flags: libc::c_int =
                        (libc::SOF_TIMESTAMPING_RX_SOFTWARE | libc::SOF_TIMESTAMPING_SOFTWARE) as _;
                    // SAFETY: setsockopt reads one c_int we own.
                    let rc = unsafe {
                        libc::setsockopt(
                            stream.as_raw_fd(),
                            libc::SOL_SOCKET,
                            libc::SO_TIMESTAMPING,
                            (&flags as *const libc::c_int).cast(),
                            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                        )
                    };
                    assert_eq!(
                        rc,
                        0,
                        "SO_TIMESTAMPING: {}",
                        std::io::Error::last_os_error()
                    );
                }
                Conn {
                    stream,
                    stamped,
                    busy: false,
                    intended: 0,
                }
            })
            .collect();
        // SAFETY: epoll_create1 takes no pointers.
        let ep = unsafe { libc::epoll_create1(0) };
        assert!(ep >= 0);
        for (i, c) in conns.iter().enumerate() {
            let mut ev = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: i as u64,
            };
            // SAFETY: epoll_ctl reads one event we own.
            let rc =
                unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, c.stream.as_raw_fd(), &mut ev) };
            assert_eq!(rc, 0);
        }
        std::thread::sleep(Duration::from_millis(100));
        let gap = 1e9 / rate;
        let total = (rate * seconds) as u64;
        let start = realtime_ns() + 1_000_000;
        let mut out = Outcome {
            user: Vec::new(),
            kernel: Vec::new(),
            gap: Vec::new(),
            cost_on: Vec::new(),
            cost_off: Vec::new(),
        };
        let mut next = 0u64;
        let mut cursor = 0usize;
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; n];
        let mut buf = [0u8; 4096];
        let mut cmsg = [0u64; 16];
        let drain_until = start + (seconds * 1e9) as i128 + 200_000_000;
        loop {
            let now = realtime_ns();
            let due = next < total && now >= start + (next as f64 * gap) as i128;
            if due {
                let intended = start + (next as f64 * gap) as i128;
                // Round robin over idle connections, so that stamped and plain
                // ones take turns.
                let pick = (0..n).map(|k| (cursor + k) % n).find(|&i| !conns[i].busy);
                if let Some(i) = pick {
                    cursor = i + 1;
                    let c = &mut conns[i];
                    c.busy = true;
                    c.intended = intended;
                    let _ = c.stream.write_all(REQUEST);
                }
                next += 1;
            }
            // After the last send both loops read whatever is left.
            if due || reaping || next >= total {
                // SAFETY: epoll_wait writes at most n events into our buffer.
                let ready = unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), n as i32, 0) };
                for ev in &events[..ready.max(0) as usize] {
                    let c = &mut conns[ev.u64 as usize];
                    let mut iov = libc::iovec {
                        iov_base: buf.as_mut_ptr().cast(),
                        iov_len: buf.len(),
                    };
                    // SAFETY: a zeroed msghdr is valid; we point it at our iovec
                    // and control buffer, which outlive the call.
                    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
                    msg.msg_iov = &mut iov;
                    msg.msg_iovlen = 1;
                    msg.msg_control = cmsg.as_mut_ptr().cast();
                    msg.msg_controllen = std::mem::size_of_val(&cmsg) as _;
                    let t0 = realtime_ns();
                    // SAFETY: recvmsg writes into the buffers msg points at.
                    let got = unsafe {
                        libc::recvmsg(c.stream.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT)
                    };
                    let user = realtime_ns();
                    if got <= 0 || !c.busy {
                        continue;
                    }
                    c.busy = false;
                    let cost = (user - t0) as f64 / 1e3;
                    if c.stamped {
                        out.cost_on.push(cost);
                    } else {
                        out.cost_off.push(cost);
                    }
                    out.user.push((user - c.intended) as f64 / 1e3);
                    if let Some(k) = kernel_stamp(&msg) {
                        out.kernel.push((k - c.intended) as f64 / 1e3);
                        out.gap.push((user - k) as f64 / 1e3);
                    }
                }
            }
            if next >= total && (conns.iter().all(|c| !c.busy) || now > drain_until) {
                break;
            }
        }
        // SAFETY: closing the epoll fd we created.
        unsafe { libc::close(ep) };
        out
    }

    /// The software receive stamp of an `SCM_TIMESTAMPING` control message.
    fn kernel_stamp(msg: &libc::msghdr) -> Option<i128> {
        // SAFETY: the CMSG macros walk the control buffer recvmsg filled, within
        // msg_controllen; the payload of SCM_TIMESTAMPING is three timespecs.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPING {
                    let ts = libc::CMSG_DATA(c).cast::<libc::timespec>().read_unaligned();
                    if ts.tv_sec != 0 || ts.tv_nsec != 0 {
                        return Some(
                            i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec),
                        );
                    }
                }
                c = libc::CMSG_NXTHDR(msg, c);
            }
        }
        None
    }
}
