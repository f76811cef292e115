//! A huge body.

use std::io::{self, Read};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use metronome::report::Report;

use crate::case::Run;
use crate::common::{assert_exit_matches, engines};
use crate::script::{script, Server};

/// A 1 GiB body streamed as fast as loopback goes: the run ends with the
/// request ok, and the client's peak memory stays far below the body (it
/// reads into a fixed buffer). The peak is the child's own high-water
/// mark, `VmHWM` in /proc/PID/status, read every 2 ms until it exits: a
/// mark only rises, so a read misses only the last 2 ms. (`ru_maxrss`
/// from `wait4(2)` was tried: the kernel keeps the replaced image's mark
/// at exec, so it reported this test binary's own 200 MiB whenever the
/// suite's other tests were running; RUSAGE_CHILDREN is worse, the
/// largest of every child reaped.)
#[test]
fn a_1_gib_body_is_read_in_bounded_memory() {
    const GIB: usize = 1 << 30;
    let s = script(|p| {
        while p.request().is_some() {
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {GIB}\r\n\r\n");
            if !p.send(head.as_bytes()) {
                return;
            }
            let block = vec![b'z'; 256 * 1024];
            let mut left = GIB;
            while left > 0 {
                let n = left.min(block.len());
                if !p.send(&block[..n]) {
                    return;
                }
                left -= n;
            }
        }
    });
    for engine in engines() {
        let case = "1 GiB body";
        let server = Server::start(s.clone());
        let args = [
            "--rate",
            "1",
            "--duration",
            "1s",
            "--connections",
            "1",
            "--timeout",
            "60s",
        ];
        let (report, maxrss_kib, elapsed) = run_measured(server.addr, "/", engine, &args);
        let seen = server.stop();
        let r = Run {
            engine,
            report,
            seen,
            elapsed,
        };
        r.expect(case, 1, 1, &[]);
        eprintln!(
            "{case} / {engine}: peak RSS {} MiB, run {:?}",
            maxrss_kib / 1024,
            r.elapsed
        );
        // The process itself (code, the histograms, the buffers) is 8 to
        // 14 MiB here; holding the body would be 1 GiB.
        assert!(
            maxrss_kib < 64 * 1024,
            "peak RSS {maxrss_kib} KiB; {}",
            r.ctx(case)
        );
    }
}

/// Runs the binary like `run_json`, but reaps it with `wait4(2)` to read
/// its own peak resident set: (report, VmHWM in KiB, elapsed).
// The child is reaped by wait4(2), which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn run_measured(
    addr: SocketAddr,
    path: &str,
    engine: &str,
    args: &[&str],
) -> (Report, u64, Duration) {
    let url = format!("http://{addr}{path}");
    let t = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_metronome"))
        .args([
            "run", &url, "--format", "json", "--quiet", "--engine", engine,
        ])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the metronome binary");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut v = Vec::new();
            let _ = pipe.read_to_end(&mut v);
            v
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let pid = child.id() as libc::pid_t;
    // The peak from the child's own VmHWM, read until it exits: wait4's
    // ru_maxrss also counts the test process's resident set at the
    // spawn (the kernel keeps the replaced image's high-water mark at
    // exec), hundreds of MiB while the rest of this binary's tests run.
    let hwm = thread::spawn(move || {
        let path = format!("/proc/{pid}/status");
        let mut peak = 0u64;
        while let Ok(text) = std::fs::read_to_string(&path) {
            match text.lines().find_map(|l| l.strip_prefix("VmHWM:")) {
                Some(v) => {
                    let kib = v.trim().trim_end_matches("kB").trim();
                    peak = peak.max(kib.parse().unwrap_or(0));
                }
                // A zombie has no memory left to read: it has exited.
                None => break,
            }
            thread::sleep(Duration::from_millis(2));
        }
        peak
    });
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is plain integers; all zeros is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not reaped yet (std's `Child` waits
    // only when asked to); both out-pointers are live locals of the right
    // types for the duration of the call.
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(got, pid, "wait4: {}", io::Error::last_os_error());
    let elapsed = t.elapsed();
    let stdout = stdout.join().unwrap();
    let stderr = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
    assert!(
        libc::WIFEXITED(status),
        "metronome exited with status {status:#x}; stderr: {stderr}"
    );
    let report = crate::common::decode_report(
        &String::from_utf8_lossy(&stdout),
        &format!("the report (stderr: {stderr})"),
    );
    assert_exit_matches(&report, Some(libc::WEXITSTATUS(status)), &stderr);
    let peak = hwm.join().unwrap();
    assert!(peak > 0, "no VmHWM read for pid {pid}");
    (report, peak, elapsed)
}
