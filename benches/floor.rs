//! The physical floors: minimal HTTP/1.1 clients on one io_uring.
//!
//! **Closed loop** (the default, no `--rate`): N keep-alive connections
//! (default 64), each with exactly one request in flight: when a recv
//! completes a response, the next send and the next recv are queued at once.
//! One `submit_and_wait(1)` per loop submits everything queued and reaps
//! every completion; there is no pacing, no clock per request, no histogram,
//! no allocation after setup. Its CPU per request at its maximum rate is the
//! best one generator core can do on this kernel, the yardstick
//! `benches/compare.sh` holds metronome's io_uring engine against.
//!
//! **Paced** (`--rate R`): the floors for an *open* loop at R req/s. Request
//! i is due at `start + i/R`; every due request is sent (never skipped, never
//! shifted), on an idle connection (one request in flight per connection);
//! when none is idle it waits, oldest first, until a response frees one, and
//! is counted in `waited`. Its send lag (send time minus intended time) goes
//! into a fixed 64 x 16 log-linear counter array. Between sends the loop
//! sleeps until `--spin` (50 us) before the next intended time, then
//! busy-waits the clock to it. Two modes:
//!
//! - `--mode naive`: a plain ring; a recv SQE per request after its send SQE
//!   (both plain fds), every send completion reaped and checked, sleeps as an
//!   absolute timeout SQE with `submit_and_wait(1)` (any completion wakes it).
//! - `--mode best` (the default with `--rate`): every kernel technique that
//!   pays, each falling back with a note on stderr when the kernel declines
//!   it: `SINGLE_ISSUER | DEFER_TASKRUN | TASKRUN_FLAG | NO_SQARRAY` (else
//!   `COOP_TASKRUN | TASKRUN_FLAG`, else plain); one multishot recv per
//!   connection on a provided buffer ring (else a recv per request); sends
//!   with `IOSQE_CQE_SKIP_SUCCESS` (failures still post); a registered file
//!   table (`types::Fixed`); a registered ring fd; and exactly one
//!   `io_uring_enter` per loop iteration that submits and reaps, sleeping in
//!   the enter's own timeout (`EXT_ARG`, absolute with `ABS_TIMER` on 6.12+),
//!   so no timeout SQE is ever queued, and waking on the timer only (a large
//!   `min_complete`: deferred completions are run in one batch at the wake)
//!   unless a request waits for a connection. Inside the spin slice the
//!   enter does not wait at all. `--without LIST` (comma separated: `defer`,
//!   `taskrun`, `multishot`, `skip`, `fixed`, `ringfd`, `enter-timeout`,
//!   `abs`) turns techniques off, to measure what each one pays.
//!
//! ```text
//! cargo build --release --bench floor   # or: cargo bench --bench floor --no-run
//! taskset -c 0 target/release/deps/floor-HASH --target 127.0.0.1:8080 --duration 10
//! {"requests":812345,"seconds":10.000,"rps":81234.5,"cpu_user_s":0.61,"cpu_sys_s":9.28,"cpu_us_per_request":12.17}
//! taskset -c 0 target/release/deps/floor-HASH --target 127.0.0.1:8080 --duration 5 --rate 30000 --mode best
//! {"mode":"best","offered_rps":30000.0,"requests":149999,"seconds":5.000000,"rps":29999.8,"sent":150000,"waited":525,"lag_p50_us":0.167,"lag_p99_us":102.399,"lag_max_us":2027.488,...,"cpu_us_per_request":33.1325,"work_us_per_request":15.7101,...}
//! ```
//!
//! Flags: `--target HOST:PORT` (required to run), `--connections N` (64),
//! `--duration SECONDS` (10; `10s` also accepted), `--path /` (the request
//! path), `--rate R` (req/s; paced), `--mode naive|best` (`best`),
//! `--spin 50us` (the busy-wait slice: `ns`, `us`, `ms`, `s`; a bare number is
//! microseconds), `--without LIST` (best mode). Under `cargo bench` without
//! `--target` it prints a notice and exits 0, so `cargo bench` over the whole
//! workspace stays green.
//!
//! Paced output adds to the closed one: `mode`, `offered_rps`, `sent`,
//! `waited`, `lag_p50_us`/`lag_p99_us` (bucket upper bounds, at most 1/16
//! above the true value), `lag_max_us` (exact), `enters` (io_uring_enter
//! calls during the run) and `enters_per_request`, `spin_s` (time busy-waiting, gaps over 2 us not
//! counted), `work_us_per_request` (CPU minus spin, per response) and
//! `techniques` (what the kernel accepted). `requests` counts the responses
//! completed by the end of the run, `rps` is `requests / seconds`. Above
//! `1 / spin` req/s (20k with the default 50 us) the loop never sleeps, so
//! `cpu_us_per_request` is a whole core divided by the rate; compare engines
//! by `work_us_per_request` there, or at one `--spin`.
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
    use std::alloc::{alloc_zeroed, dealloc, Layout};
    use std::io::{self, Write as _};
    use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
    use std::os::fd::{AsRawFd, RawFd};
    use std::sync::atomic::{AtomicU16, Ordering};
    use std::time::{Duration, Instant};

    use io_uring::{cqueue, opcode, squeue, types, IoUring, SubmissionQueue};

    /// Bytes of receive buffer per connection (the nginx response is ~150).
    const RECV_BUF: usize = 4096;
    /// `user_data` bit that marks a send; the low 32 bits are the connection.
    const TAG_SEND: u64 = 1 << 32;
    /// `user_data` bit that marks a timeout SQE (naive pacing).
    const TAG_TIMEOUT: u64 = 1 << 33;
    /// Bytes per provided buffer of the best mode's buffer ring.
    const PROVIDED_BUF: usize = 2048;
    /// Buffer group id of that ring.
    const BGID: u16 = 0;
    /// Longest gap between two clock reads of a busy-wait still counted as
    /// spinning (core's `SPIN_GAP_NS`): longer, the thread was not running.
    const SPIN_GAP_NS: u64 = 2_000;

    /// Parsed command line.
    struct Options {
        target: SocketAddr,
        host: String,
        connections: usize,
        duration: Duration,
        path: String,
        /// `Some` for the paced floors (`--rate`).
        paced: Option<Paced>,
    }

    /// The paced floors' settings.
    struct Paced {
        rate: f64,
        mode: Mode,
        spin_ns: u64,
        techniques: Techniques,
    }

    /// Which paced floor.
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Mode {
        Naive,
        Best,
    }

    /// How task work is run (ring setup flags), weakest first.
    #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    enum TaskRun {
        /// No setup flags.
        Plain,
        /// `COOP_TASKRUN | TASKRUN_FLAG`.
        Coop,
        /// `SINGLE_ISSUER | DEFER_TASKRUN | TASKRUN_FLAG` (and `NO_SQARRAY`
        /// where the kernel has it).
        Defer,
    }

    /// The kernel techniques of the paced loop: wanted, then (after setup)
    /// what the kernel accepted. Naive has none of them.
    #[derive(Clone, Copy)]
    struct Techniques {
        task_run: TaskRun,
        /// One multishot recv per connection on a provided buffer ring;
        /// else one recv per request into the connection's own buffer.
        multishot: bool,
        /// `IOSQE_CQE_SKIP_SUCCESS` on sends.
        skip_success: bool,
        /// Sockets named by their index in a registered file table.
        fixed_files: bool,
        /// `io_uring_enter` on the registered ring fd.
        ring_fd: bool,
        /// Sleep in the enter's own timeout (`EXT_ARG`), woken by the timer
        /// only unless a request waits for a connection; else a timeout SQE
        /// and any completion wakes the sleep.
        enter_timeout: bool,
        /// That timeout as an absolute time (`ABS_TIMER`), else relative.
        abs_timer: bool,
    }

    impl Techniques {
        const NAIVE: Self = Self {
            task_run: TaskRun::Plain,
            multishot: false,
            skip_success: false,
            fixed_files: false,
            ring_fd: false,
            enter_timeout: false,
            abs_timer: false,
        };
        const BEST: Self = Self {
            task_run: TaskRun::Defer,
            multishot: true,
            skip_success: true,
            fixed_files: true,
            ring_fd: true,
            enter_timeout: true,
            abs_timer: true,
        };

        /// Turns off the techniques named in a `--without` list.
        fn without(mut self, list: &str) -> Result<Self, String> {
            for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                match name {
                    "defer" => self.task_run = self.task_run.min(TaskRun::Coop),
                    "taskrun" => self.task_run = TaskRun::Plain,
                    "multishot" => self.multishot = false,
                    "skip" => self.skip_success = false,
                    "fixed" => self.fixed_files = false,
                    "ringfd" => self.ring_fd = false,
                    "enter-timeout" => {
                        self.enter_timeout = false;
                        self.abs_timer = false;
                    }
                    "abs" => self.abs_timer = false,
                    other => {
                        return Err(format!(
                            "--without {other}: expected defer, taskrun, multishot, skip, \
                             fixed, ringfd, enter-timeout or abs"
                        ))
                    }
                }
            }
            Ok(self)
        }
    }

    /// What the closed run measured.
    struct Outcome {
        requests: u64,
        seconds: f64,
        cpu_user_s: f64,
        cpu_sys_s: f64,
    }

    /// What a paced run measured.
    struct PacedOutcome {
        base: Outcome,
        sent: u64,
        waited: u64,
        lag: LagHistogram,
        enters: u64,
        spin_s: f64,
        techniques: String,
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
        let line = match &options.paced {
            None => run_closed(&options).map(|outcome| closed_line(&outcome)),
            Some(paced) => run_paced(&options, paced).map(|outcome| paced_line(paced, &outcome)),
        };
        match line {
            Ok(line) => {
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

    /// CPU microseconds per completed request.
    fn us_per_request(cpu_s: f64, requests: u64) -> f64 {
        if requests == 0 {
            0.0
        } else {
            cpu_s * 1e6 / requests as f64
        }
    }

    fn closed_line(outcome: &Outcome) -> String {
        let rps = outcome.requests as f64 / outcome.seconds;
        let cpu_s = outcome.cpu_user_s + outcome.cpu_sys_s;
        format!(
            "{{\"requests\":{},\"seconds\":{:.6},\"rps\":{:.1},\"cpu_user_s\":{:.6},\
             \"cpu_sys_s\":{:.6},\"cpu_us_per_request\":{:.4}}}",
            outcome.requests,
            outcome.seconds,
            rps,
            outcome.cpu_user_s,
            outcome.cpu_sys_s,
            us_per_request(cpu_s, outcome.requests)
        )
    }

    fn paced_line(paced: &Paced, outcome: &PacedOutcome) -> String {
        let base = &outcome.base;
        let rps = base.requests as f64 / base.seconds;
        let cpu_s = base.cpu_user_s + base.cpu_sys_s;
        let us = |ns: u64| ns as f64 / 1e3;
        format!(
            "{{\"mode\":\"{}\",\"offered_rps\":{:.1},\"requests\":{},\"seconds\":{:.6},\
             \"rps\":{:.1},\"sent\":{},\"waited\":{},\"lag_p50_us\":{:.3},\"lag_p99_us\":{:.3},\
             \"lag_max_us\":{:.3},\"enters\":{},\"enters_per_request\":{:.4},\"spin_s\":{:.6},\
             \"cpu_user_s\":{:.6},\"cpu_sys_s\":{:.6},\"cpu_us_per_request\":{:.4},\
             \"work_us_per_request\":{:.4},\"techniques\":\"{}\"}}",
            match paced.mode {
                Mode::Naive => "naive",
                Mode::Best => "best",
            },
            paced.rate,
            base.requests,
            base.seconds,
            rps,
            outcome.sent,
            outcome.waited,
            us(outcome.lag.quantile(0.50)),
            us(outcome.lag.quantile(0.99)),
            us(outcome.lag.max),
            outcome.enters,
            if base.requests == 0 {
                0.0
            } else {
                outcome.enters as f64 / base.requests as f64
            },
            outcome.spin_s,
            base.cpu_user_s,
            base.cpu_sys_s,
            us_per_request(cpu_s, base.requests),
            us_per_request((cpu_s - outcome.spin_s).max(0.0), base.requests),
            outcome.techniques
        )
    }

    /// `--spin` value: `ns`, `us`, `ms` or `s` suffix; a bare number is us.
    fn parse_spin(text: &str) -> Option<u64> {
        let (number, scale) = [("ns", 1.0), ("us", 1e3), ("ms", 1e6), ("s", 1e9)]
            .iter()
            .find_map(|&(suffix, scale)| text.strip_suffix(suffix).map(|n| (n, scale)))
            .unwrap_or((text, 1e3));
        let value: f64 = number.parse().ok()?;
        (value.is_finite() && value >= 0.0 && value * scale < 1e12)
            .then_some((value * scale) as u64)
    }

    /// `Ok(None)` when there is no `--target` (the `cargo bench` case).
    fn parse_args(args: &[String]) -> Result<Option<Options>, String> {
        let mut target = None;
        let mut connections = 64usize;
        let mut duration = Duration::from_secs(10);
        let mut path = String::from("/");
        let mut rate: Option<f64> = None;
        let mut mode: Option<Mode> = None;
        let mut spin_ns = 50_000u64;
        let mut without: Option<String> = None;
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
                "--rate" | "-r" => {
                    let v = value("--rate")?;
                    rate = Some(
                        v.parse()
                            .ok()
                            .filter(|r: &f64| r.is_finite() && *r >= 1.0 && *r <= 1e8)
                            .ok_or_else(|| format!("--rate {v}: expected 1..=1e8 req/s"))?,
                    );
                }
                "--mode" => {
                    let v = value("--mode")?;
                    mode = Some(match v.as_str() {
                        "naive" => Mode::Naive,
                        "best" => Mode::Best,
                        _ => return Err(format!("--mode {v}: expected naive or best")),
                    });
                }
                "--spin" => {
                    let v = value("--spin")?;
                    spin_ns = parse_spin(&v)
                        .ok_or_else(|| format!("--spin {v}: expected a duration, e.g. 50us"))?;
                }
                "--without" => without = Some(value("--without")?),
                // Passed by `cargo bench`; a filter may follow it but we ignore both.
                "--bench" => {}
                other if other.starts_with('-') => return Err(format!("unknown flag {other}")),
                _ => {}
            }
        }
        let paced = match (rate, mode) {
            (None, None) if without.is_none() => None,
            (None, _) => return Err("--mode and --without need --rate".into()),
            (Some(rate), mode) => {
                let mode = mode.unwrap_or(Mode::Best);
                let techniques = match (mode, &without) {
                    (Mode::Naive, Some(_)) => {
                        return Err("--without applies to --mode best only".into())
                    }
                    (Mode::Naive, None) => Techniques::NAIVE,
                    (Mode::Best, list) => {
                        Techniques::BEST.without(list.as_deref().unwrap_or(""))?
                    }
                };
                Some(Paced {
                    rate,
                    mode,
                    spin_ns,
                    techniques,
                })
            }
        };
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
            paced,
        }))
    }

    /// One connection's receive state.
    struct Conn {
        stream: TcpStream,
        buf: Box<[u8; RECV_BUF]>,
        /// Bytes of `buf` holding received, unconsumed data.
        filled: usize,
        /// Paced modes: a request is in flight on it.
        busy: bool,
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

    /// Opens the keep-alive connections (`TCP_NODELAY`).
    fn connect_all(options: &Options) -> Result<Vec<Conn>, String> {
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
                busy: false,
            });
        }
        Ok(conns)
    }

    /// The closed loop.
    fn run_closed(options: &Options) -> Result<Outcome, String> {
        let request = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: floor\r\n\r\n",
            options.path, options.host
        )
        .into_bytes();
        let request_len = u32::try_from(request.len()).map_err(|_| "request too long")?;

        // Buffers first, ring second: locals drop in reverse order, so the
        // ring (and with it every operation still in the kernel) goes before
        // the memory those operations point at.
        let mut conns = connect_all(options)?;

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

    // ---- The paced floors -------------------------------------------------

    /// The constant-rate schedule: request i is due at `start + i / rate`.
    struct Schedule {
        start: u64,
        deadline: u64,
        period_ns: f64,
        /// Requests due so far: every one intended at or before the time last
        /// passed to `advance`.
        due: u64,
        /// Intended time of request `due`, `u64::MAX` once that falls at or
        /// after the deadline (no more requests).
        next_at: u64,
    }

    impl Schedule {
        fn new(start: u64, deadline: u64, rate: f64) -> Self {
            Self {
                start,
                deadline,
                period_ns: 1e9 / rate,
                due: 0,
                next_at: start,
            }
        }

        /// Intended send time of request `i`.
        fn at(&self, i: u64) -> u64 {
            self.start + (i as f64 * self.period_ns) as u64
        }

        fn advance(&mut self, now: u64) {
            while self.next_at <= now {
                self.due += 1;
                let next = self.at(self.due);
                self.next_at = if next < self.deadline { next } else { u64::MAX };
            }
        }
    }

    /// Counters of a log-linear histogram: 64 rows (powers of two) of 16
    /// linear buckets.
    const LAG_BUCKETS: usize = 64 * 16;

    /// Send lag in ns: fixed counters, no allocation per record.
    struct LagHistogram {
        counts: Box<[u64; LAG_BUCKETS]>,
        total: u64,
        max: u64,
    }

    impl LagHistogram {
        fn new() -> Self {
            Self {
                counts: Box::new([0; LAG_BUCKETS]),
                total: 0,
                max: 0,
            }
        }

        /// Values below 16 are exact; above, 16 buckets per power of two.
        fn index(value: u64) -> usize {
            if value < 16 {
                return value as usize;
            }
            let exponent = 63 - value.leading_zeros(); // 4..=63
            let sub = (value >> (exponent - 4)) & 15;
            (exponent as usize - 3) * 16 + sub as usize
        }

        /// The largest value that falls in bucket `index`.
        fn upper(index: usize) -> u64 {
            if index < 16 {
                return index as u64;
            }
            let exponent = (index / 16 + 3) as u32;
            let sub = (index % 16) as u128;
            u64::try_from(((16 + sub + 1) << (exponent - 4)) - 1).unwrap_or(u64::MAX)
        }

        fn record(&mut self, value: u64) {
            self.counts[Self::index(value)] += 1;
            self.total += 1;
            self.max = self.max.max(value);
        }

        /// Upper bound of the bucket holding quantile `q` (never above the max).
        fn quantile(&self, q: f64) -> u64 {
            if self.total == 0 {
                return 0;
            }
            let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
            let mut seen = 0;
            for (index, &count) in self.counts.iter().enumerate() {
                seen += count;
                if seen >= rank {
                    return Self::upper(index).min(self.max);
                }
            }
            self.max
        }
    }

    /// A provided-buffer ring (`io_uring_register_buf_ring`): `entries` slots
    /// in a page-aligned allocation, and as many buffers of [`PROVIDED_BUF`]
    /// bytes. A buffer handed back is written into the slot at the local
    /// tail; `publish` makes all of them visible to the kernel in one release
    /// store per loop iteration.
    struct BufRing {
        ring: *mut types::BufRingEntry,
        ring_layout: Layout,
        bufs: *mut u8,
        bufs_layout: Layout,
        entries: u16,
        /// Slots before it are filled; the kernel sees up to the last publish.
        tail: u16,
    }

    impl BufRing {
        fn new(entries: u16) -> Result<Self, String> {
            if !entries.is_power_of_two() {
                return Err(format!(
                    "buffer ring of {entries} entries: not a power of two"
                ));
            }
            let n = usize::from(entries);
            let ring_layout =
                Layout::from_size_align(n * std::mem::size_of::<types::BufRingEntry>(), 4096)
                    .map_err(|e| format!("buffer ring layout: {e}"))?;
            let bufs_layout = Layout::from_size_align(n * PROVIDED_BUF, 64)
                .map_err(|e| format!("buffer layout: {e}"))?;
            let mut this = Self {
                // SAFETY: the layout has a non-zero size (entries >= 1).
                ring: unsafe { alloc_zeroed(ring_layout) }.cast(),
                ring_layout,
                // SAFETY: the layout has a non-zero size (entries >= 1).
                bufs: unsafe { alloc_zeroed(bufs_layout) },
                bufs_layout,
                entries,
                tail: 0,
            };
            if this.ring.is_null() || this.bufs.is_null() {
                return Err("out of memory for the buffer ring".into());
            }
            for bid in 0..entries {
                this.give(bid);
            }
            this.publish();
            Ok(this)
        }

        /// Hands buffer `bid` (back) to the kernel, visible at the next publish.
        fn give(&mut self, bid: u16) {
            let slot = usize::from(self.tail & (self.entries - 1));
            // SAFETY: `slot < entries`, inside the ring allocation. There are
            // exactly `entries` buffers and each is in the ring at most once
            // (it is given back only after the kernel took it), so the slot at
            // the local tail is one the kernel has consumed and does not read.
            // The setters write addr, len and bid only, never the `resv` field
            // that slot 0 shares with the published tail.
            let entry = unsafe { &mut *self.ring.add(slot) };
            entry.set_addr(self.bufs as u64 + u64::from(bid) * PROVIDED_BUF as u64);
            entry.set_len(PROVIDED_BUF as u32);
            entry.set_bid(bid);
            self.tail = self.tail.wrapping_add(1);
        }

        /// Publishes every slot written by `give` since the last publish.
        fn publish(&self) {
            // SAFETY: `ring` is the first entry of the live ring allocation;
            // `tail` only computes the address of its `resv` field.
            let tail = unsafe { types::BufRingEntry::tail(self.ring) }.cast_mut();
            // SAFETY: that field is a naturally aligned u16 inside the
            // allocation; the kernel only loads it (acquire) and this thread
            // only writes it here, so an atomic view is sound. The release
            // store orders the slot writes before it.
            unsafe { AtomicU16::from_ptr(tail) }.store(self.tail, Ordering::Release);
        }

        /// The first `len` bytes of buffer `bid`, as a completion reported.
        fn buffer(&self, bid: u16, len: usize) -> Option<&[u8]> {
            if bid >= self.entries || len > PROVIDED_BUF {
                return None;
            }
            // SAFETY: in bounds (checked above). The kernel handed buffer
            // `bid` to the completion being handled and does not write it
            // again until `give` returns it, which the caller does only after
            // it has finished with this slice (the borrow of `self` ends first).
            Some(unsafe {
                std::slice::from_raw_parts(self.bufs.add(usize::from(bid) * PROVIDED_BUF), len)
            })
        }
    }

    impl Drop for BufRing {
        fn drop(&mut self) {
            // SAFETY: each non-null pointer came from `alloc_zeroed` with the
            // layout stored beside it. The owner drops this only after the
            // ring it was registered with is gone and no recv can write a
            // buffer (otherwise it is leaked with `mem::forget`).
            unsafe {
                if !self.ring.is_null() {
                    dealloc(self.ring.cast(), self.ring_layout);
                }
                if !self.bufs.is_null() {
                    dealloc(self.bufs, self.bufs_layout);
                }
            }
        }
    }

    /// Builds the paced ring with the strongest task-run setup the kernel
    /// accepts, at most `want`. Declined setups are noted on stderr.
    fn build_paced_ring(
        want: TaskRun,
        entries: u32,
    ) -> Result<(IoUring, TaskRun, &'static str), String> {
        let setups: [(TaskRun, &'static str); 4] = [
            (
                TaskRun::Defer,
                "SINGLE_ISSUER|DEFER_TASKRUN|TASKRUN_FLAG|NO_SQARRAY",
            ),
            (TaskRun::Defer, "SINGLE_ISSUER|DEFER_TASKRUN|TASKRUN_FLAG"),
            (TaskRun::Coop, "COOP_TASKRUN|TASKRUN_FLAG"),
            (TaskRun::Plain, "plain"),
        ];
        let mut declined: Option<(&str, io::Error)> = None;
        for (number, (level, name)) in setups.into_iter().enumerate() {
            if level > want {
                continue;
            }
            let mut builder = IoUring::builder();
            match number {
                0 => {
                    builder
                        .setup_single_issuer()
                        .setup_defer_taskrun()
                        .setup_taskrun_flag()
                        .setup_no_sqarray();
                }
                1 => {
                    builder
                        .setup_single_issuer()
                        .setup_defer_taskrun()
                        .setup_taskrun_flag();
                }
                2 => {
                    builder.setup_coop_taskrun().setup_taskrun_flag();
                }
                _ => {}
            }
            if let Some((previous, err)) = declined.take() {
                eprintln!(
                    "floor: the kernel declined ring setup {previous} ({err}); trying {name}"
                );
            }
            match builder.build(entries) {
                Ok(ring) => return Ok((ring, level, name)),
                Err(err) => declined = Some((name, err)),
            }
        }
        let (name, err) = declined.expect("the plain setup is always tried");
        Err(format!("io_uring setup ({name}): {err}"))
    }

    /// Absolute or relative `Timespec` of `ns` nanoseconds.
    fn timespec(ns: u64) -> types::Timespec {
        types::Timespec::new()
            .sec(ns / 1_000_000_000)
            .nsec((ns % 1_000_000_000) as u32)
    }

    /// Errors of `io_uring_enter` that only say the wait ended early or
    /// timed out: the loop reaps and decides again.
    fn benign(err: &io::Error) -> bool {
        matches!(
            err.raw_os_error(),
            Some(libc::ETIME | libc::EINTR | libc::EAGAIN | libc::EBUSY)
        )
    }

    /// Builds the SQEs of the paced modes; owns the request bytes the sends
    /// point at.
    struct Sockets {
        fds: Vec<RawFd>,
        fixed: bool,
        request: Vec<u8>,
        request_len: u32,
        send_flags: squeue::Flags,
    }

    impl Sockets {
        fn send(&self, index: usize) -> squeue::Entry {
            let (ptr, len) = (self.request.as_ptr(), self.request_len);
            let op = if self.fixed {
                // Connection indices are < 65536 (checked by parse_args).
                opcode::Send::new(types::Fixed(index as u32), ptr, len)
            } else {
                opcode::Send::new(types::Fd(self.fds[index]), ptr, len)
            };
            // All or an error: a short send never passes as a success.
            op.flags(libc::MSG_WAITALL)
                .build()
                .flags(self.send_flags)
                .user_data(TAG_SEND | index as u64)
        }

        /// One recv into the free tail of the connection's own buffer.
        fn recv(&self, conn: &mut Conn, index: usize) -> squeue::Entry {
            let free = &mut conn.buf[conn.filled..];
            // At most RECV_BUF, which fits in u32.
            let (ptr, len) = (free.as_mut_ptr(), free.len() as u32);
            if self.fixed {
                opcode::Recv::new(types::Fixed(index as u32), ptr, len)
                    .build()
                    .user_data(index as u64)
            } else {
                opcode::Recv::new(types::Fd(self.fds[index]), ptr, len)
                    .build()
                    .user_data(index as u64)
            }
        }

        /// The connection's multishot recv on the buffer ring.
        fn recv_multi(&self, index: usize) -> squeue::Entry {
            if self.fixed {
                opcode::RecvMulti::new(types::Fixed(index as u32), BGID)
                    .build()
                    .user_data(index as u64)
            } else {
                opcode::RecvMulti::new(types::Fd(self.fds[index]), BGID)
                    .build()
                    .user_data(index as u64)
            }
        }
    }

    /// What completions change in a paced run.
    struct Flow {
        /// Idle connections (a stack; capacity for all of them).
        idle: Vec<u32>,
        /// Responses completed.
        requests: u64,
        failure: Option<String>,
        /// Recvs (single or multishot) the kernel still holds.
        recvs_in_flight: usize,
        /// A timeout SQE is armed (naive pacing).
        timeout_pending: bool,
    }

    /// What a connection's buffer holds after new bytes.
    enum Received {
        /// Its response completed: the connection is idle again.
        Complete,
        /// More bytes are needed.
        Partial,
        /// The run failed (recorded in `flow.failure`).
        Failed,
    }

    /// Frames the response in a connection's buffer after new bytes arrived.
    fn on_bytes(conn: &mut Conn, index: usize, flow: &mut Flow) -> Received {
        match parse_response(&conn.buf[..conn.filled]) {
            Ok(Parsed::Complete(len)) => {
                conn.buf.copy_within(len..conn.filled, 0);
                conn.filled -= len;
                if !conn.busy {
                    flow.failure.get_or_insert_with(|| {
                        "a response arrived with no request in flight".into()
                    });
                    return Received::Failed;
                }
                conn.busy = false;
                flow.requests += 1;
                // At most one push per request sent: never beyond capacity.
                flow.idle.push(index as u32);
                Received::Complete
            }
            Ok(Parsed::Partial) => Received::Partial,
            Err(message) => {
                flow.failure.get_or_insert(message);
                Received::Failed
            }
        }
    }

    /// Handles every completion in the CQ. `draining`: the run is over; only
    /// account for recvs that ended and give buffers back.
    fn reap(
        cq: &mut io_uring::CompletionQueue<'_>,
        sq: &mut SubmissionQueue<'_>,
        conns: &mut [Conn],
        mut bufs: Option<&mut BufRing>,
        sockets: &Sockets,
        flow: &mut Flow,
        draining: bool,
    ) -> Result<(), String> {
        cq.sync();
        for cqe in cq.by_ref() {
            let (user_data, result, flags) = (cqe.user_data(), cqe.result(), cqe.flags());
            if user_data & TAG_TIMEOUT != 0 {
                flow.timeout_pending = false;
                continue;
            }
            let index = (user_data & 0xffff_ffff) as usize;
            if user_data & TAG_SEND != 0 {
                // Only failed sends report when SKIP_SUCCESS is on.
                if result < 0 {
                    flow.failure.get_or_insert_with(|| {
                        format!("send: {}", io::Error::from_raw_os_error(-result))
                    });
                } else if result as u32 != sockets.request_len {
                    flow.failure
                        .get_or_insert_with(|| format!("short send of {result} bytes"));
                }
                continue;
            }
            let conn = &mut conns[index];
            if let Some(ring) = bufs.as_deref_mut() {
                // Multishot: the recv goes on while the MORE flag is set.
                let more = cqueue::more(flags);
                if !more {
                    flow.recvs_in_flight -= 1;
                }
                if result > 0 {
                    let Some(bid) = cqueue::buffer_select(flags) else {
                        flow.failure
                            .get_or_insert_with(|| "recv completion without a buffer".into());
                        continue;
                    };
                    let len = result as usize;
                    let copied = match ring.buffer(bid, len) {
                        Some(data) if !draining && conn.filled + len <= RECV_BUF => {
                            conn.buf[conn.filled..conn.filled + len].copy_from_slice(data);
                            conn.filled += len;
                            true
                        }
                        _ => false,
                    };
                    if bid < ring.entries {
                        ring.give(bid);
                    }
                    if draining {
                        continue;
                    }
                    if !copied {
                        flow.failure.get_or_insert_with(|| {
                            "response larger than the receive buffer".into()
                        });
                        continue;
                    }
                    if let Received::Failed = on_bytes(conn, index, flow) {
                        continue;
                    }
                } else if draining {
                    continue;
                } else if result == 0 {
                    flow.failure
                        .get_or_insert_with(|| "the server closed a connection".into());
                    continue;
                } else if result != -libc::ENOBUFS {
                    flow.failure.get_or_insert_with(|| {
                        format!("recv: {}", io::Error::from_raw_os_error(-result))
                    });
                    continue;
                }
                // Ended (out of buffers, or the kernel stopped it): re-arm.
                if !more && flow.failure.is_none() {
                    // SAFETY: the recv points at no memory of this
                    // function's: it picks buffers from the registered ring,
                    // which outlives the io_uring. The SQ has room for two
                    // entries per connection and a connection queues at most
                    // two between enters.
                    unsafe { sq.push(&sockets.recv_multi(index)) }
                        .map_err(|_| "submission queue full")?;
                    flow.recvs_in_flight += 1;
                }
            } else {
                flow.recvs_in_flight -= 1;
                if draining {
                    continue;
                }
                if result <= 0 {
                    flow.failure.get_or_insert_with(|| {
                        if result == 0 {
                            "the server closed a connection".to_string()
                        } else {
                            format!("recv: {}", io::Error::from_raw_os_error(-result))
                        }
                    });
                    continue;
                }
                conn.filled += result as usize;
                if let Received::Partial = on_bytes(conn, index, flow) {
                    let recv = sockets.recv(conn, index);
                    // SAFETY: the connection buffers are owned by a local
                    // declared before the ring, so they outlive every
                    // operation in it; this connection has no recv in flight
                    // (its completion is the one being handled), so the
                    // kernel gets the only live pointer to the buffer's free
                    // tail. SQ room: as above.
                    unsafe { sq.push(&recv) }.map_err(|_| "submission queue full")?;
                    flow.recvs_in_flight += 1;
                }
            }
        }
        if let Some(ring) = bufs {
            ring.publish();
        }
        sq.sync();
        Ok(())
    }

    /// Busy-waits the clock to `target`; returns the ns spent spinning
    /// (steps longer than [`SPIN_GAP_NS`] are time not running: not counted).
    fn spin_until(target: u64) -> u64 {
        let mut last = now_ns();
        let mut spun = 0;
        while last < target {
            std::hint::spin_loop();
            let now = now_ns();
            if now - last <= SPIN_GAP_NS {
                spun += now - last;
            }
            last = now;
        }
        spun
    }

    /// The paced floors (see the module doc).
    fn run_paced(options: &Options, paced: &Paced) -> Result<PacedOutcome, String> {
        let request = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: floor\r\n\r\n",
            options.path, options.host
        )
        .into_bytes();
        let request_len = u32::try_from(request.len()).map_err(|_| "request too long")?;
        let n = options.connections;
        let mut want = paced.techniques;

        // Everything the kernel may point into first, the ring last: locals
        // drop in reverse order, so the ring (and every operation still in
        // it) goes before that memory.
        let mut conns = connect_all(options)?;
        let buf_entries = u16::try_from((n * 2).next_power_of_two().clamp(8, 32_768))
            .map_err(|_| "buffer ring too large")?;
        let mut bufs = if want.multishot {
            Some(BufRing::new(buf_entries)?)
        } else {
            None
        };
        // The naive sleep's time: the kernel copies it when the timeout SQE
        // is submitted.
        let mut timeout_ts = types::Timespec::new();
        let mut sockets = Sockets {
            fds: conns.iter().map(|c| c.stream.as_raw_fd()).collect(),
            fixed: false,
            request,
            request_len,
            send_flags: squeue::Flags::empty(),
        };

        // Between two enters a connection queues at most two entries, plus
        // one timeout.
        let sq_entries = u32::try_from(n * 2 + 2)
            .map_err(|_| "too many connections")?
            .next_power_of_two();
        let (mut ring, task_run, setup) = build_paced_ring(want.task_run, sq_entries)?;
        want.task_run = task_run;
        let mut used: Vec<String> = vec![setup.to_string()];
        let params = ring.params();
        if want.skip_success && !params.is_feature_skip_cqe_on_success() {
            eprintln!(
                "floor: the kernel lacks IOSQE_CQE_SKIP_SUCCESS; every send posts a completion"
            );
            want.skip_success = false;
        }
        if want.enter_timeout && !params.is_feature_ext_arg() {
            eprintln!("floor: the kernel lacks IORING_FEAT_EXT_ARG; sleeping on a timeout SQE");
            want.enter_timeout = false;
            want.abs_timer = false;
        }
        let (mut submitter, mut sq, mut cq) = ring.split();
        if want.ring_fd {
            if let Err(err) = submitter.register_ring_fd() {
                eprintln!("floor: registering the ring fd failed ({err}); entering by plain fd");
                want.ring_fd = false;
            }
        }
        if want.fixed_files {
            match submitter.register_files(&sockets.fds) {
                Ok(()) => sockets.fixed = true,
                Err(err) => {
                    eprintln!("floor: registering the sockets failed ({err}); using plain fds");
                    want.fixed_files = false;
                }
            }
        }
        if let Some(ring_mem) = &bufs {
            // SAFETY: the ring memory is owned by `bufs`, a local declared
            // before `ring`: it stays valid until the io_uring is gone (or
            // is leaked with the connections when the drain fails).
            let registered = unsafe {
                submitter.register_buf_ring_with_flags(
                    ring_mem.ring as u64,
                    ring_mem.entries,
                    BGID,
                    0,
                )
            };
            if let Err(err) = registered {
                eprintln!(
                    "floor: registering a provided buffer ring failed ({err}); one recv per request"
                );
                want.multishot = false;
            }
        }
        if !want.multishot {
            // Never registered: the kernel holds no pointer into it.
            bufs = None;
        }
        if want.abs_timer {
            // An unknown enter flag fails before anything is submitted.
            let probe = types::SubmitArgs::new().timespec(&timeout_ts);
            if let Err(err) =
                submitter.submit_with_args_and_flags(0, &probe, io_uring::EnterFlags::ABS_TIMER)
            {
                eprintln!("floor: the kernel lacks IORING_ENTER_ABS_TIMER ({err}); relative wait timeouts");
                want.abs_timer = false;
            }
        }
        if want.skip_success {
            sockets.send_flags = squeue::Flags::SKIP_SUCCESS;
        }
        if want.multishot {
            used.push(format!(
                "multishot recv + buf ring {buf_entries}x{PROVIDED_BUF}"
            ));
        } else {
            used.push("recv per request".into());
        }
        if want.skip_success {
            used.push("send SKIP_SUCCESS".into());
        }
        if want.fixed_files {
            used.push("fixed files".into());
        }
        if want.ring_fd {
            used.push("registered ring fd".into());
        }
        used.push(match (want.enter_timeout, want.abs_timer) {
            (true, true) => "enter timeout (absolute), timer-only wake".into(),
            (true, false) => "enter timeout (relative), timer-only wake".into(),
            _ => "timeout SQE, wake on any completion".into(),
        });
        let techniques = used.join(", ");

        let mut flow = Flow {
            idle: (0..n as u32).rev().collect(),
            requests: 0,
            failure: None,
            recvs_in_flight: 0,
            timeout_pending: false,
        };
        if want.multishot {
            for index in 0..n {
                // SAFETY: the multishot recv picks buffers from the registered
                // ring, which outlives the io_uring; the SQ holds at least
                // two entries per connection.
                unsafe { sq.push(&sockets.recv_multi(index)) }
                    .map_err(|_| "submission queue full")?;
                flow.recvs_in_flight += 1;
            }
            sq.sync();
            submitter
                .submit()
                .map_err(|e| format!("io_uring enter: {e}"))?;
            sq.sync();
        }
        // The largest wait: a sleep woken by its timer only.
        let timer_only = cq.capacity();
        let multishot = want.multishot;

        let mut lag = LagHistogram::new();
        let (mut sent, mut waited, mut waited_mark) = (0u64, 0u64, 0u64);
        let (mut enters, mut spun) = (0u64, 0u64);
        let duration_ns = u64::try_from(options.duration.as_nanos()).unwrap_or(u64::MAX / 4);
        let start_usage = rusage();
        let start = now_ns();
        let deadline = start.saturating_add(duration_ns);
        let mut schedule = Schedule::new(start, deadline, paced.rate);
        // An error leaves this block, not the function, so the drain below
        // runs before any memory the kernel may point into is freed.
        let run: Result<(), String> = 'run: loop {
            let now = now_ns();
            if now >= deadline || flow.failure.is_some() {
                break 'run Ok(());
            }
            schedule.advance(now);
            let batch_from = sent;
            while sent < schedule.due {
                let Some(index) = flow.idle.pop() else {
                    break;
                };
                let index = index as usize;
                let conn = &mut conns[index];
                conn.busy = true;
                let pushed = if multishot {
                    // SAFETY: the send reads the request bytes owned by
                    // `sockets`, a local declared before the ring. SQ room:
                    // see `sq_entries`.
                    unsafe { sq.push(&sockets.send(index)) }
                } else {
                    let entries = [sockets.send(index), sockets.recv(conn, index)];
                    // SAFETY: as above; and the connection is idle, so it has
                    // no recv in flight: the kernel gets the only live
                    // pointer to its buffer's free tail, which outlives the
                    // ring like the request bytes.
                    unsafe { sq.push_multiple(&entries) }
                };
                if pushed.is_err() {
                    break 'run Err("submission queue full".into());
                }
                if !multishot {
                    flow.recvs_in_flight += 1;
                }
                sent += 1;
            }
            if sent < schedule.due {
                // These found no idle connection: they wait, oldest first.
                waited += schedule.due - waited_mark.max(sent);
                waited_mark = schedule.due;
            }
            let backlog = sent < schedule.due;
            let target = schedule.next_at.min(deadline);
            let wake = target.saturating_sub(paced.spin_ns);
            let sleep = backlog || wake > now;
            if sleep && !backlog && !want.enter_timeout && !flow.timeout_pending {
                // Wake targets never decrease, so the armed timeout never
                // fires later than the sleep that armed it wanted.
                timeout_ts = timespec(wake);
                let entry = opcode::Timeout::new(&timeout_ts)
                    .flags(types::TimeoutFlags::ABS)
                    .build()
                    .user_data(TAG_TIMEOUT);
                // SAFETY: `timeout_ts` is a local declared before the ring and
                // is not written again before the enter just below submits
                // this entry (the kernel copies the time at submission).
                if unsafe { sq.push(&entry) }.is_err() {
                    break 'run Err("submission queue full".into());
                }
                flow.timeout_pending = true;
            }
            sq.sync();
            if sent > batch_from {
                // Send time: just before the enter that submits the batch.
                let submit_at = now_ns();
                for i in batch_from..sent {
                    lag.record(submit_at - schedule.at(i));
                }
            }
            let entered = if sleep {
                enters += 1;
                if want.enter_timeout {
                    // Woken by the timer only, unless a request waits for a
                    // connection: then by the first completion.
                    let (min, until) = if backlog {
                        (1, deadline)
                    } else {
                        (timer_only, wake)
                    };
                    let ts = if want.abs_timer {
                        timespec(until)
                    } else {
                        timespec(until.saturating_sub(now_ns()))
                    };
                    let args = types::SubmitArgs::new().timespec(&ts);
                    let flags = if want.abs_timer {
                        io_uring::EnterFlags::ABS_TIMER
                    } else {
                        io_uring::EnterFlags::empty()
                    };
                    submitter.submit_with_args_and_flags(min, &args, flags)
                } else {
                    submitter.submit_and_wait(1)
                }
            } else if !sq.is_empty() || sq.taskrun() {
                // Inside the spin slice: submit, and run pending completion
                // work (GETEVENTS when TASKRUN says there is some), no wait.
                enters += 1;
                submitter.submit_and_wait(0)
            } else {
                Ok(0)
            };
            if let Err(err) = entered {
                if !benign(&err) {
                    break 'run Err(format!("io_uring enter: {err}"));
                }
            }
            sq.sync();
            let reaped = reap(
                &mut cq,
                &mut sq,
                &mut conns,
                bufs.as_mut(),
                &sockets,
                &mut flow,
                false,
            );
            if let Err(message) = reaped {
                break 'run Err(message);
            }
            if !sleep {
                spun += spin_until(target);
            }
        };
        // Completions that arrived by now count.
        let run = run.and_then(|()| {
            if sq.taskrun() {
                enters += 1;
                if let Err(err) = submitter.submit_and_wait(0) {
                    if !benign(&err) {
                        return Err(format!("io_uring enter: {err}"));
                    }
                }
            }
            reap(
                &mut cq,
                &mut sq,
                &mut conns,
                bufs.as_mut(),
                &sockets,
                &mut flow,
                false,
            )
        });
        let end = now_ns();
        let end_usage = rusage();

        // Drain: shut every socket so its recv ends, then reap until no recv
        // points into a buffer.
        for conn in &conns {
            let _ = conn.stream.shutdown(std::net::Shutdown::Both);
        }
        let drain_deadline = Instant::now() + Duration::from_secs(5);
        while flow.recvs_in_flight > 0 && Instant::now() < drain_deadline {
            match submitter.submit_and_wait(1) {
                Ok(_) => {}
                Err(err) if benign(&err) => {}
                Err(_) => break,
            }
            if reap(
                &mut cq,
                &mut sq,
                &mut conns,
                bufs.as_mut(),
                &sockets,
                &mut flow,
                true,
            )
            .is_err()
            {
                break;
            }
        }
        if flow.recvs_in_flight > 0 {
            // The kernel may still hold pointers into the buffers: never free them.
            std::mem::forget(conns);
            std::mem::forget(bufs);
        }

        run?;
        if let Some(message) = flow.failure {
            return Err(message);
        }
        Ok(PacedOutcome {
            base: Outcome {
                requests: flow.requests,
                seconds: (end - start) as f64 / 1e9,
                cpu_user_s: end_usage.0 - start_usage.0,
                cpu_sys_s: end_usage.1 - start_usage.1,
            },
            sent,
            waited,
            lag,
            enters,
            spin_s: spun as f64 / 1e9,
            techniques,
        })
    }

    /// CLOCK_MONOTONIC in ns: the clock of the ring's absolute timeouts.
    fn now_ns() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec for the call's duration.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
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
