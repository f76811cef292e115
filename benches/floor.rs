//! The physical floor: a minimal closed-loop HTTP/1.1 client on one io_uring.
//!
//! N keep-alive connections (default 64), each with exactly one request in
//! flight: when a recv completes a response, the next send and the next recv
//! are queued at once. One `submit_and_wait(1)` per loop submits everything
//! queued and reaps every completion; there is no pacing, no clock per
//! request, no histogram, no allocation after setup. Its CPU per request at
//! its maximum rate is the best one generator core can do on this kernel, the
//! yardstick `benches/compare.sh` holds metronome's io_uring engine against.
//!
//! ```text
//! cargo build --release --bench floor   # or: cargo bench --bench floor --no-run
//! taskset -c 0 target/release/deps/floor-HASH --target 127.0.0.1:8080 --duration 10
//! {"requests":812345,"seconds":10.000,"rps":81234.5,"cpu_user_s":0.61,"cpu_sys_s":9.28,"cpu_us_per_request":12.17}
//! ```
//!
//! Flags: `--target HOST:PORT` (required to run), `--connections N` (64),
//! `--duration SECONDS` (10; `10s` also accepted), `--path /` (the request
//! path). Under `cargo bench` without `--target` it prints a notice and
//! exits 0, so `cargo bench` over the whole workspace stays green.
//!
//! Response parsing is deliberately minimal (the target is a fixed nginx
//! response): a head ends at `\r\n\r\n`, the body is `Content-Length` bytes.
//! Chunked bodies are not supported and stop the run with an error.

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("floor: Linux only");
}

#[cfg(target_os = "linux")]
fn main() {
    std::process::exit(linux::main());
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io::{self, Write as _};
    use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
    use std::os::fd::AsRawFd;
    use std::time::{Duration, Instant};

    use io_uring::{opcode, squeue, types, IoUring};

    /// Bytes of receive buffer per connection (the nginx response is ~150).
    const RECV_BUF: usize = 4096;
    /// `user_data` bit that marks a send; the low 32 bits are the connection.
    const TAG_SEND: u64 = 1 << 32;

    /// Parsed command line.
    struct Options {
        target: SocketAddr,
        host: String,
        connections: usize,
        duration: Duration,
        path: String,
    }

    /// What the run measured.
    struct Outcome {
        requests: u64,
        seconds: f64,
        cpu_user_s: f64,
        cpu_sys_s: f64,
    }

    pub fn main() -> i32 {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let options = match parse_args(&args) {
            Ok(Some(options)) => options,
            Ok(None) => {
                println!("floor: needs --target HOST:PORT; skipped");
                return 0;
            }
            Err(message) => {
                eprintln!("floor: {message}");
                return 2;
            }
        };
        match run(&options) {
            Ok(outcome) => {
                let rps = outcome.requests as f64 / outcome.seconds;
                let cpu_s = outcome.cpu_user_s + outcome.cpu_sys_s;
                let us_per_request = if outcome.requests == 0 {
                    0.0
                } else {
                    cpu_s * 1e6 / outcome.requests as f64
                };
                let line = format!(
                    "{{\"requests\":{},\"seconds\":{:.6},\"rps\":{:.1},\"cpu_user_s\":{:.6},\
                     \"cpu_sys_s\":{:.6},\"cpu_us_per_request\":{:.4}}}",
                    outcome.requests,
                    outcome.seconds,
                    rps,
                    outcome.cpu_user_s,
                    outcome.cpu_sys_s,
                    us_per_request
                );
                let mut out = io::stdout().lock();
                // A closed stdout is not worth a panic.
                let _ = writeln!(out, "{line}");
                0
            }
            Err(err) => {
                eprintln!("floor: {err}");
                1
            }
        }
    }

    /// `Ok(None)` when there is no `--target` (the `cargo bench` case).
    fn parse_args(args: &[String]) -> Result<Option<Options>, String> {
        let mut target = None;
        let mut connections = 64usize;
        let mut duration = Duration::from_secs(10);
        let mut path = String::from("/");
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let mut value = |name: &str| {
                it.next()
                    .cloned()
                    .ok_or_else(|| format!("{name} needs a value"))
            };
            match arg.as_str() {
                "--target" => target = Some(value("--target")?),
                "--connections" | "-c" => {
                    let v = value("--connections")?;
                    connections = v
                        .parse()
                        .ok()
                        .filter(|&n| (1..=65_536).contains(&n))
                        .ok_or_else(|| format!("--connections {v}: expected 1..=65536"))?;
                }
                "--duration" | "-d" => {
                    let v = value("--duration")?;
                    let secs: f64 = v
                        .strip_suffix('s')
                        .unwrap_or(&v)
                        .parse()
                        .ok()
                        .filter(|s: &f64| s.is_finite() && *s > 0.0)
                        .ok_or_else(|| format!("--duration {v}: expected seconds, e.g. 10"))?;
                    duration = Duration::from_secs_f64(secs);
                }
                "--path" => path = value("--path")?,
                // Passed by `cargo bench`; a filter may follow it but we ignore both.
                "--bench" => {}
                other if other.starts_with('-') => return Err(format!("unknown flag {other}")),
                _ => {}
            }
        }
        let Some(host) = target else {
            return Ok(None);
        };
        let target = host
            .to_socket_addrs()
            .map_err(|e| format!("--target {host}: {e}"))?
            .next()
            .ok_or_else(|| format!("--target {host}: no address"))?;
        Ok(Some(Options {
            target,
            host,
            connections,
            duration,
            path,
        }))
    }

    /// One connection's receive state.
    struct Conn {
        stream: TcpStream,
        buf: Box<[u8; RECV_BUF]>,
        /// Bytes of `buf` holding received, unconsumed data.
        filled: usize,
    }

    /// Outcome of looking at a connection's buffer.
    enum Parsed {
        /// The response is not complete yet.
        Partial,
        /// A whole response of this many bytes is at the front of the buffer.
        Complete(usize),
    }

    /// Minimal response framing: head up to `\r\n\r\n`, body of Content-Length bytes.
    fn parse_response(data: &[u8]) -> Result<Parsed, String> {
        let Some(head_end) = data.windows(4).position(|w| w == b"\r\n\r\n") else {
            if data.len() == RECV_BUF {
                return Err("response head larger than the receive buffer".into());
            }
            return Ok(Parsed::Partial);
        };
        let head = &data[..head_end];
        if !head.starts_with(b"HTTP/1.1 2") {
            let line = head.split(|&b| b == b'\r').next().unwrap_or(head);
            return Err(format!(
                "unexpected status line {:?}",
                String::from_utf8_lossy(line)
            ));
        }
        let mut content_length = None;
        for line in head.split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let Some(colon) = line.iter().position(|&b| b == b':') else {
                continue;
            };
            let (name, value) = line.split_at(colon);
            if name.eq_ignore_ascii_case(b"content-length") {
                let text = String::from_utf8_lossy(&value[1..]);
                content_length = Some(
                    text.trim()
                        .parse::<usize>()
                        .map_err(|_| format!("bad Content-Length {text:?}"))?,
                );
            } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
                return Err("chunked responses are not supported by the floor client".into());
            }
        }
        let total = head_end + 4 + content_length.ok_or("response without Content-Length")?;
        if total > RECV_BUF {
            return Err(format!(
                "response of {total} bytes exceeds the receive buffer"
            ));
        }
        Ok(if data.len() >= total {
            Parsed::Complete(total)
        } else {
            Parsed::Partial
        })
    }

    /// Builds the ring: single issuer with deferred task work where the
    /// kernel has it (6.1+), a plain ring otherwise.
    fn build_ring(entries: u32) -> io::Result<IoUring> {
        IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_coop_taskrun()
            .build(entries)
            .or_else(|_| IoUring::builder().setup_coop_taskrun().build(entries))
            .or_else(|_| IoUring::new(entries))
    }

    fn run(options: &Options) -> Result<Outcome, String> {
        let request = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: floor\r\n\r\n",
            options.path, options.host
        )
        .into_bytes();
        let request_len = u32::try_from(request.len()).map_err(|_| "request too long")?;

        // Buffers first, ring second: locals drop in reverse order, so the
        // ring (and with it every operation still in the kernel) goes before
        // the memory those operations point at.
        let mut conns: Vec<Conn> = Vec::with_capacity(options.connections);
        for i in 0..options.connections {
            let stream = TcpStream::connect_timeout(&options.target, Duration::from_secs(5))
                .map_err(|e| format!("connect {} (connection {i}): {e}", options.target))?;
            stream
                .set_nodelay(true)
                .map_err(|e| format!("TCP_NODELAY: {e}"))?;
            conns.push(Conn {
                stream,
                buf: Box::new([0u8; RECV_BUF]),
                filled: 0,
            });
        }

        let sq_entries = u32::try_from(options.connections * 2)
            .map_err(|_| "too many connections")?
            .next_power_of_two();
        let mut ring = build_ring(sq_entries).map_err(|e| format!("io_uring setup: {e}"))?;
        // Sends whose success nobody needs to hear about post no completion.
        let send_flags = if ring.params().is_feature_skip_cqe_on_success() {
            squeue::Flags::SKIP_SUCCESS
        } else {
            squeue::Flags::empty()
        };
        let (submitter, mut sq, mut cq) = ring.split();

        let recv_entry = |conn: &mut Conn, index: usize| {
            let free = &mut conn.buf[conn.filled..];
            opcode::Recv::new(
                types::Fd(conn.stream.as_raw_fd()),
                free.as_mut_ptr(),
                // At most RECV_BUF, which fits in u32.
                free.len() as u32,
            )
            .build()
            .user_data(index as u64)
        };
        let send_entry = |conn: &Conn, index: usize| {
            opcode::Send::new(
                types::Fd(conn.stream.as_raw_fd()),
                request.as_ptr(),
                request_len,
            )
            // All or an error: a short send never passes as a success.
            .flags(libc::MSG_WAITALL)
            .build()
            .flags(send_flags)
            .user_data(TAG_SEND | index as u64)
        };

        // Recvs in the kernel: each must complete before its buffer may go.
        let mut recvs_in_flight = 0usize;
        for (index, conn) in conns.iter_mut().enumerate() {
            let entries = [send_entry(conn, index), recv_entry(conn, index)];
            // SAFETY: the request bytes and this connection's receive buffer
            // are owned by locals declared before `ring`, so they outlive
            // every operation in it; the buffer is not touched again until
            // this recv completes. The SQ has 2 entries per connection.
            unsafe { sq.push_multiple(&entries) }.map_err(|_| "submission queue full")?;
            recvs_in_flight += 1;
        }
        sq.sync();

        let start_usage = rusage();
        let start = Instant::now();
        let deadline = start + options.duration;
        let mut requests = 0u64;
        let mut failure: Option<String> = None;
        let end = loop {
            submitter
                .submit_and_wait(1)
                .map_err(|e| format!("io_uring enter: {e}"))?;
            let now = Instant::now();
            let running = now < deadline;
            // Learn how far the kernel consumed the SQ, and what completed.
            sq.sync();
            cq.sync();
            for cqe in &mut cq {
                let (user_data, result) = (cqe.user_data(), cqe.result());
                let index = (user_data & 0xffff_ffff) as usize;
                if user_data & TAG_SEND != 0 {
                    // Only failed sends report (all of them without SKIP_SUCCESS).
                    if result < 0 {
                        failure.get_or_insert_with(|| {
                            format!("send: {}", io::Error::from_raw_os_error(-result))
                        });
                    } else if result as u32 != request_len {
                        failure.get_or_insert_with(|| format!("short send of {result} bytes"));
                    }
                    continue;
                }
                recvs_in_flight -= 1;
                if result <= 0 {
                    failure.get_or_insert_with(|| {
                        if result == 0 {
                            "the server closed a connection".to_string()
                        } else {
                            format!("recv: {}", io::Error::from_raw_os_error(-result))
                        }
                    });
                    continue;
                }
                let conn = &mut conns[index];
                conn.filled += result as usize;
                let complete = match parse_response(&conn.buf[..conn.filled]) {
                    Ok(Parsed::Complete(len)) => {
                        conn.buf.copy_within(len..conn.filled, 0);
                        conn.filled -= len;
                        true
                    }
                    Ok(Parsed::Partial) => false,
                    Err(message) => {
                        failure.get_or_insert(message);
                        continue;
                    }
                };
                if complete {
                    if !running {
                        continue;
                    }
                    requests += 1;
                }
                let recv = recv_entry(conn, index);
                // SAFETY: as above, the buffers outlive the ring; this
                // connection has no recv in flight (its completion is the one
                // being handled), so the kernel gets the only live pointer to
                // the free tail of its buffer. The SQ holds 2 entries per
                // connection and a connection queues at most 2 per loop.
                unsafe {
                    if complete {
                        sq.push_multiple(&[send_entry(conn, index), recv])
                    } else {
                        sq.push(&recv)
                    }
                }
                .map_err(|_| "submission queue full")?;
                recvs_in_flight += 1;
            }
            sq.sync();
            if !running || failure.is_some() {
                break now;
            }
        };
        let end_usage = rusage();

        // Drain: shut every socket so its pending recv completes, then reap
        // until no recv points into a buffer.
        for conn in &conns {
            let _ = conn.stream.shutdown(std::net::Shutdown::Both);
        }
        let drain_deadline = Instant::now() + Duration::from_secs(5);
        while recvs_in_flight > 0 && Instant::now() < drain_deadline {
            if submitter.submit_and_wait(1).is_err() {
                break;
            }
            cq.sync();
            for cqe in &mut cq {
                if cqe.user_data() & TAG_SEND == 0 {
                    recvs_in_flight -= 1;
                }
            }
        }
        if recvs_in_flight > 0 {
            // The kernel may still hold pointers into the buffers: never free them.
            std::mem::forget(conns);
        }

        if let Some(message) = failure {
            return Err(message);
        }
        Ok(Outcome {
            requests,
            seconds: end.duration_since(start).as_secs_f64(),
            cpu_user_s: end_usage.0 - start_usage.0,
            cpu_sys_s: end_usage.1 - start_usage.1,
        })
    }

    /// (user, system) CPU seconds of this process so far.
    fn rusage() -> (f64, f64) {
        // SAFETY: `rusage` is plain old data; all-zero is a valid value.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `usage` is a valid, writable `rusage` for the call's duration.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
        if rc != 0 {
            return (0.0, 0.0);
        }
        let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
        (secs(usage.ru_utime), secs(usage.ru_stime))
    }
}
