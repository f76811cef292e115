//! The loop's system calls, each behind a safe function: pinning a thread
//! to a CPU, the CPUs this process may use, and the thread's CPU time.
//! This is the only module of the crate allowed `unsafe`; every block says
//! why it holds. Each call has a portable fallback where the system lacks
//! it: pinning is Linux's (elsewhere it is refused, and the run says the
//! thread was not pinned), the allowed CPUs are then `0..n` of
//! `available_parallelism`, and the CPU clock is POSIX's
//! `CLOCK_THREAD_CPUTIME_ID` on Unix (0, "unknown", elsewhere).

use std::io;

/// Pins the calling thread to `cpu`.
///
/// # Errors
/// `sched_setaffinity` refused (e.g. the CPU is outside the allowed set).
#[cfg(target_os = "linux")]
pub(crate) fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu < CPU_SETSIZE` (checked above), so CPU_SET stays inside `set`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is this thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Pinning where the system has no portable call for it: refused, so the
/// run warns that the thread was not pinned.
#[cfg(not(target_os = "linux"))]
pub(crate) fn pin_to_cpu(_cpu: usize) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// The CPUs this process may run on (empty when unknown).
#[cfg(target_os = "linux")]
pub(crate) fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable cpu_set_t of the size passed; pid 0 is this thread.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `c < CPU_SETSIZE`, so CPU_ISSET reads inside `set`.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// The CPUs `0..n`, `n` from `available_parallelism` (portable form).
#[cfg(not(target_os = "linux"))]
pub(crate) fn allowed_cpus() -> Vec<usize> {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (0..n).collect()
}

/// CPU time consumed by the calling thread, in nanoseconds
/// (`CLOCK_THREAD_CPUTIME_ID`); 0 if the clock cannot be read.
#[cfg(unix)]
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec owned by this frame, and
    // CLOCK_THREAD_CPUTIME_ID is a clock id libc defines for this platform.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The thread's CPU time where there is no POSIX clock: 0 (unknown; the
/// report then has no work per request).
#[cfg(not(unix))]
pub(crate) fn thread_cpu_ns() -> u64 {
    0
}
