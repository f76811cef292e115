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
    std::process::exit(run());
}

#[cfg(target_os = "linux")]
mod args;
#[cfg(target_os = "linux")]
mod bufring;
#[cfg(target_os = "linux")]
mod closed;
#[cfg(target_os = "linux")]
mod conn;
#[cfg(target_os = "linux")]
mod lag;
#[cfg(target_os = "linux")]
mod output;
#[cfg(target_os = "linux")]
mod paced;

#[cfg(target_os = "linux")]
use std::io::{self, Write as _};

/// Parses the arguments, runs the floor they ask for, prints its line; the
/// exit code.
#[cfg(target_os = "linux")]
fn run() -> i32 {
    use args::parse_args;
    use closed::run_closed;
    use output::{closed_line, paced_line};
    use paced::run_paced;

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
