//! The judge of an open loop: a minimal epoll HTTP/1.1 server that answers
//! every request with a fixed 2-byte `200 OK` and logs when each request
//! arrived, so a load generator's pacing is judged at the server, by code
//! that shares nothing with metronome's engines.
//!
//! One thread, level-triggered epoll over non-blocking sockets; a request is
//! a head ending in `\r\n\r\n` (GET without a body, as every generator in
//! `benches/` sends); each `read` is stamped once with `CLOCK_MONOTONIC` and
//! every request completed in it gets that stamp. After `--window` seconds
//! from the first request it stops counting, keeps answering for `--linger`
//! seconds more (so the generator ends cleanly), prints one JSON line and
//! exits:
//!
//! ```text
//! cargo build --release --bench arrivals
//! taskset -c 1 target/release/deps/arrivals-HASH --listen 127.0.0.1:18095 --rate 30000 --window 5
//! {"requests":150000,"window_s":5.0,"rps":30000.0,"gap_us":33.333,"gap_err_p50_us":1.2,"gap_err_p99_us":38.1,"gap_err_max_us":812.0,"late_p99_us":41.0,...}
//! ```
//!
//! For a constant offered rate R the ideal inter-arrival gap is 1/R: the gap
//! error of arrival i is |t_i - t_(i-1) - 1/R| (`gap_err_*`, exact
//! nearest-rank quantiles over the sorted errors). `lag_*` compares each
//! arrival with the ideal schedule anchored at the first arrival,
//! `t_i - (t_0 + i/R)` clamped at 0 (a generator that falls behind drifts;
//! one that drops requests is early, counted as 0), and `rps` counts
//! arrivals inside the window. Flags: `--listen ADDR` (required to run),
//! `--rate R` (the offered rate to judge against), `--window S` (5),
//! `--linger S` (1), `--busy-poll` (never sleep in epoll_wait: answers carry
//! no wake-up of the server's own), `--max-requests N` (the arrival log's capacity,
//! allocated at start: 20,000,000). Under `cargo bench` without `--listen`
//! it prints a notice and exits 0.

#[cfg(target_os = "linux")]
fn main() {
    std::process::exit(linux::main());
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("arrivals: Linux only (epoll)");
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::HashMap;
    use std::io::{ErrorKind, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::{AsRawFd, RawFd};
    use std::time::Duration;

    const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

    struct Options {
        listen: Option<String>,
        rate: f64,
        window_s: f64,
        linger_s: f64,
        max_requests: usize,
        /// Poll without sleeping (epoll_wait with a 0 timeout): the server
        /// then has no wake-up of its own in its answers.
        busy_poll: bool,
    }

    fn parse() -> Result<Options, String> {
        let mut o = Options {
            listen: None,
            rate: 0.0,
            window_s: 5.0,
            linger_s: 1.0,
            max_requests: 20_000_000,
            busy_poll: false,
        };
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            let mut value = || args.next().ok_or_else(|| format!("{a} needs a value"));
            let num = |v: String| v.parse::<f64>().map_err(|e| format!("{a} {v}: {e}"));
            match a.as_str() {
                "--listen" => o.listen = Some(value()?),
                "--rate" => o.rate = num(value()?)?,
                "--window" => o.window_s = num(value()?)?,
                "--linger" => o.linger_s = num(value()?)?,
                "--busy-poll" => o.busy_poll = true,
                "--max-requests" => o.max_requests = num(value()?)? as usize,
                // `cargo bench` passes --bench.
                "--bench" => {}
                other => return Err(format!("unknown flag {other}")),
            }
        }
        Ok(o)
    }

    fn now_ns() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec for the call.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }

    struct Epoll(RawFd);

    impl Epoll {
        fn new() -> std::io::Result<Epoll> {
            // SAFETY: plain syscall, no pointers.
            let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(Epoll(fd))
        }

        fn add(&self, fd: RawFd) -> std::io::Result<()> {
            let mut ev = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: fd as u64,
            };
            // SAFETY: `ev` is a valid event for the duration of the call.
            let r = unsafe { libc::epoll_ctl(self.0, libc::EPOLL_CTL_ADD, fd, &mut ev) };
            if r < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        }

        fn wait(&self, events: &mut [libc::epoll_event], timeout_ms: i32) -> usize {
            // SAFETY: `events` is a valid writable array of its length.
            let n = unsafe {
                libc::epoll_wait(self.0, events.as_mut_ptr(), events.len() as i32, timeout_ms)
            };
            n.max(0) as usize
        }
    }

    impl Drop for Epoll {
        fn drop(&mut self) {
            // SAFETY: the fd is ours and closed once.
            unsafe { libc::close(self.0) };
        }
    }

    struct Conn {
        stream: TcpStream,
        /// Bytes of a request head seen so far that may end in a partial
        /// `\r\n\r\n` (at most 3 kept).
        tail: Vec<u8>,
    }

    /// Requests completed in `buf` after `tail` (heads ending `\r\n\r\n`).
    fn count_heads(tail: &mut Vec<u8>, buf: &[u8]) -> usize {
        tail.extend_from_slice(buf);
        let n = memchr::memmem::find_iter(tail, b"\r\n\r\n").count();
        let keep = tail.len().min(3);
        let cut = tail.len() - keep;
        tail.drain(..cut);
        // A terminator inside the kept bytes was already counted only if it
        // ended there; the last 3 bytes cannot hold a whole terminator.
        n
    }

    pub fn main() -> i32 {
        let o = match parse() {
            Ok(o) => o,
            Err(e) => {
                eprintln!("arrivals: {e}");
                return 2;
            }
        };
        let Some(listen) = o.listen.clone() else {
            eprintln!("arrivals: give --listen ADDR to run (see the file's doc); nothing to do");
            return 0;
        };
        match serve(&listen, &o) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("arrivals: {e}");
                1
            }
        }
    }

    fn serve(listen: &str, o: &Options) -> Result<(), String> {
        let listener = TcpListener::bind(listen).map_err(|e| format!("bind {listen}: {e}"))?;
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let ep = Epoll::new().map_err(|e| e.to_string())?;
        ep.add(listener.as_raw_fd()).map_err(|e| e.to_string())?;
        let mut conns: HashMap<RawFd, Conn> = HashMap::new();
        let mut log: Vec<u64> = Vec::with_capacity(o.max_requests);
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
        let mut buf = vec![0u8; 64 * 1024];
        let mut out = Vec::with_capacity(64 * RESPONSE.len());
        let window_ns = (o.window_s * 1e9) as u64;
        let linger_ns = (o.linger_s * 1e9) as u64;
        let mut first: Option<u64> = None;
        let mut overflow = 0u64;
        eprintln!("arrivals: listening on {listen}");
        loop {
            if let Some(f) = first {
                if now_ns() > f + window_ns + linger_ns {
                    break;
                }
            }
            let n = ep.wait(&mut events, if o.busy_poll { 0 } else { 50 });
            for ev in &events[..n] {
                let fd = ev.u64 as RawFd;
                if fd == listener.as_raw_fd() {
                    loop {
                        match listener.accept() {
                            Ok((s, _)) => {
                                let _ = s.set_nonblocking(true);
                                let _ = s.set_nodelay(true);
                                let sfd = s.as_raw_fd();
                                if ep.add(sfd).is_ok() {
                                    conns.insert(
                                        sfd,
                                        Conn {
                                            stream: s,
                                            tail: Vec::with_capacity(4096),
                                        },
                                    );
                                }
                            }
                            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                            Err(_) => break,
                        }
                    }
                    continue;
                }
                let mut close = false;
                if let Some(c) = conns.get_mut(&fd) {
                    match c.stream.read(&mut buf) {
                        Ok(0) => close = true,
                        Ok(len) => {
                            let t = now_ns();
                            let k = count_heads(&mut c.tail, &buf[..len]);
                            let f = *first.get_or_insert(t);
                            if t <= f + window_ns {
                                for _ in 0..k {
                                    if log.len() < log.capacity() {
                                        log.push(t);
                                    } else {
                                        overflow += 1;
                                    }
                                }
                            }
                            out.clear();
                            for _ in 0..k {
                                out.extend_from_slice(RESPONSE);
                            }
                            if c.stream.write_all(&out).is_err() {
                                close = true;
                            }
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                        Err(_) => close = true,
                    }
                }
                if close {
                    // Dropping the stream closes it (and removes it from epoll).
                    conns.remove(&fd);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(1));
        println!("{}", summary(&log, o.rate, o.window_s, overflow));
        Ok(())
    }

    /// Nearest-rank quantile of sorted values.
    fn q(sorted: &[u64], p: f64) -> f64 {
        if sorted.is_empty() {
            return 0.0;
        }
        let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1] as f64
    }

    fn summary(log: &[u64], rate: f64, window_s: f64, overflow: u64) -> String {
        let gap_ns = if rate > 0.0 { 1e9 / rate } else { 0.0 };
        let mut gap_err: Vec<u64> = log
            .windows(2)
            .map(|w| ((w[1] - w[0]) as f64 - gap_ns).abs() as u64)
            .collect();
        gap_err.sort_unstable();
        let mut lag: Vec<u64> = log
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                let ideal = log[0] as f64 + i as f64 * gap_ns;
                (t as f64 - ideal).max(0.0) as u64
            })
            .collect();
        lag.sort_unstable();
        let us = |v: f64| (v / 1e3 * 1000.0).round() / 1000.0;
        format!(
            "{{\"requests\":{},\"overflow\":{},\"window_s\":{},\"offered_rps\":{},\"rps\":{:.1},\"gap_us\":{:.3},\"gap_err_p50_us\":{},\"gap_err_p99_us\":{},\"gap_err_p999_us\":{},\"gap_err_max_us\":{},\"lag_p50_us\":{},\"lag_p99_us\":{},\"lag_max_us\":{}}}",
            log.len(),
            overflow,
            window_s,
            rate,
            log.len() as f64 / window_s,
            gap_ns / 1e3,
            us(q(&gap_err, 0.5)),
            us(q(&gap_err, 0.99)),
            us(q(&gap_err, 0.999)),
            us(q(&gap_err, 1.0)),
            us(q(&lag, 0.5)),
            us(q(&lag, 0.99)),
            us(q(&lag, 1.0)),
        )
    }
}
