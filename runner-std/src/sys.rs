//! The engine's system calls, each behind a safe function: the non-blocking
//! `send(2)`, `recv(2)` and peek, the `poll(2)` of a blocked send, the
//! CPU-time clocks, and the readiness ring's timer (`timerfd`, Linux). This is the only module of the crate allowed `unsafe`
//! (`lib.rs` denies it everywhere else); every block says why it holds.
//! Where the platform is not Unix, each function has a portable form in
//! safe std code.

use std::io;
use std::net::TcpStream;
use std::time::Duration;

/// Sends what the socket takes now, without blocking: `WouldBlock` when
/// it takes nothing. One `send(MSG_DONTWAIT)` on Unix.
#[cfg(unix)]
pub(crate) fn send_now(
    stream: &TcpStream,
    bytes: &[u8],
    _wait: Duration,
    _timeout: &mut Option<Duration>,
) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let flags = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let flags = libc::MSG_DONTWAIT;
    // SAFETY: `bytes` is a valid, readable buffer of `bytes.len()` bytes
    // for the duration of the call, and the descriptor is the open socket
    // that `stream` owns (borrowed for the call).
    let n = unsafe {
        libc::send(
            stream.as_raw_fd(),
            bytes.as_ptr().cast(),
            bytes.len(),
            flags,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Sends, blocking at most `wait` (portable form): a timeout when the
/// socket took nothing. `timeout` is the socket's current write timeout.
#[cfg(not(unix))]
pub(crate) fn send_now(
    mut stream: &TcpStream,
    bytes: &[u8],
    wait: Duration,
    timeout: &mut Option<Duration>,
) -> io::Result<usize> {
    use std::io::Write;
    if *timeout != Some(wait) {
        stream.set_write_timeout(Some(wait))?;
        *timeout = Some(wait);
    }
    stream.write(bytes)
}

/// Waits at most `wait` until the socket can take more bytes or holds
/// something to read (or was closed); true when it holds something to
/// read, or may (an error, a hang-up). One `poll(2)` on Unix.
#[cfg(unix)]
pub(crate) fn wait_readable_or_writable(stream: &TcpStream, wait: Duration) -> bool {
    use std::os::fd::AsRawFd;
    let mut fds = libc::pollfd {
        fd: stream.as_raw_fd(),
        events: libc::POLLIN | libc::POLLOUT,
        revents: 0,
    };
    let ms = wait.as_micros().div_ceil(1000).clamp(1, i32::MAX as u128) as libc::c_int;
    // SAFETY: `fds` is one valid, writable `pollfd` for the duration of
    // the call, and its descriptor is the open socket `stream` owns.
    let n = unsafe { libc::poll(&mut fds, 1, ms) };
    n > 0 && fds.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0
}

/// The portable form: the send itself waited; look for a response.
#[cfg(not(unix))]
pub(crate) fn wait_readable_or_writable(_stream: &TcpStream, _wait: Duration) -> bool {
    true
}

/// Peeks at what the socket holds without blocking: `WouldBlock` when
/// nothing, `Ok(0)` after the peer's close. One `recv(MSG_PEEK |
/// MSG_DONTWAIT)` on Unix.
#[cfg(unix)]
pub(crate) fn peek_now(stream: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    recv_flags(stream, buf, libc::MSG_PEEK | libc::MSG_DONTWAIT)
}

/// Reads what the socket holds without blocking: `WouldBlock` when
/// nothing, `Ok(0)` after the peer's close. One `recv(MSG_DONTWAIT)` on Unix.
#[cfg(unix)]
pub(crate) fn recv_now(stream: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    recv_flags(stream, buf, libc::MSG_DONTWAIT)
}

/// One `recv(2)` with `flags`.
#[cfg(unix)]
fn recv_flags(stream: &TcpStream, buf: &mut [u8], flags: libc::c_int) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    // SAFETY: `buf` is a valid, writable buffer of `buf.len()` bytes for
    // the duration of the call, and the descriptor is the open socket that
    // `stream` owns (borrowed for the call).
    let n = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            flags,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Peeks at what the socket holds without blocking (portable form).
#[cfg(not(unix))]
pub(crate) fn peek_now(stream: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    stream.set_nonblocking(true)?;
    let seen = stream.peek(buf);
    stream.set_nonblocking(false)?;
    seen
}

/// Reads what the socket holds without blocking (portable form).
#[cfg(not(unix))]
pub(crate) fn recv_now(mut stream: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    use std::io::Read;
    stream.set_nonblocking(true)?;
    let seen = stream.read(buf);
    stream.set_nonblocking(false)?;
    seen
}

#[cfg(unix)]
pub(crate) mod libc_clock {
    pub(crate) const THREAD: libc::clockid_t = libc::CLOCK_THREAD_CPUTIME_ID;
    pub(crate) const PROCESS: libc::clockid_t = libc::CLOCK_PROCESS_CPUTIME_ID;
}

#[cfg(unix)]
pub(crate) fn cpu_clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec owned by this frame, and `id`
    // is one of the two CPU-time clock ids defined by libc for this platform.
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(not(unix))]
pub(crate) mod libc_clock {
    pub(crate) const THREAD: i32 = 0;
    pub(crate) const PROCESS: i32 = 1;
}

#[cfg(not(unix))]
pub(crate) fn cpu_clock_ns(_id: i32) -> u64 {
    0
}

/// A monotonic timer descriptor (`timerfd`, non-blocking) the readiness
/// ring sleeps on: the poll's own timeout has millisecond steps, the timer
/// nanosecond ones. Linux only; elsewhere the ring sleeps in the poll's
/// timeout (see `ready`).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn timer_fd() -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: plain timerfd_create(2) call with constant arguments; no pointer.
    let raw = unsafe {
        libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
        )
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a descriptor timerfd_create just returned and nothing else owns.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) })
}

/// Arms the timer `fd` to expire once, `after_ns` from now (at least 1 ns:
/// 0 would disarm it).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn timer_set(fd: &std::os::fd::OwnedFd, after_ns: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let after_ns = after_ns.max(1);
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: (after_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (after_ns % 1_000_000_000) as libc::c_long,
        },
    };
    // SAFETY: `spec` is a valid itimerspec for the duration of the call, the
    // old value pointer is null (not wanted), and `fd` is an open timerfd.
    let rc = unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reads the timer's expirations away (so that the next expiry is a new
/// readiness edge); nothing when none is pending.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn timer_drain(fd: &std::os::fd::OwnedFd) {
    use std::os::fd::AsRawFd;
    let mut count = 0u64;
    // SAFETY: `count` is a valid, writable 8-byte buffer for the duration
    // of the call, the size a timerfd read needs; `fd` is an open timerfd.
    let _ = unsafe {
        libc::read(
            fd.as_raw_fd(),
            (&mut count as *mut u64).cast(),
            std::mem::size_of::<u64>(),
        )
    };
}
