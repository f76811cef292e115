//! Waiting: one poll on the connection and the wake-up socket, with a
//! deadline. The only unsafe code of the server: the `poll` system call.

use std::io;
use std::os::unix::io::RawFd;
use std::time::{Duration, Instant};

/// Longest single timer wait: keeps the kernel's timer slack (0.1% of the
/// timeout for `poll`) at tens of microseconds even during a long stall.
const MAX_WAIT_SLICE: Duration = Duration::from_millis(50);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Woken {
    /// The server is stopping.
    Stop,
    /// The watched socket is readable (data, EOF or an error to read).
    Readable,
    /// The deadline (or a slice of it) passed, or a signal interrupted.
    Timeout,
}

/// Waits until `fd` (if any) is readable, the server stops, or `deadline`
/// passes; waits at most [`MAX_WAIT_SLICE`] when there is a deadline.
pub(super) fn wait(fd: Option<RawFd>, wake: RawFd, deadline: Option<Instant>) -> io::Result<Woken> {
    let mut fds = [
        libc::pollfd {
            fd: wake,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            // A negative descriptor is ignored by poll.
            fd: fd.unwrap_or(-1),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let timeout = deadline.map(|d| {
        d.saturating_duration_since(Instant::now())
            .min(MAX_WAIT_SLICE)
    });
    if sys_poll(&mut fds, timeout) < 0 {
        let error = io::Error::last_os_error();
        if error.kind() == io::ErrorKind::Interrupted {
            return Ok(Woken::Timeout);
        }
        return Err(error);
    }
    if fds[0].revents != 0 {
        Ok(Woken::Stop)
    } else if fds[1].revents != 0 {
        Ok(Woken::Readable)
    } else {
        Ok(Woken::Timeout)
    }
}

/// `ppoll` with a nanosecond timeout (`None`: forever).
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
fn sys_poll(fds: &mut [libc::pollfd], timeout: Option<Duration>) -> libc::c_int {
    let spec = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as _,
    });
    let spec_ptr = spec
        .as_ref()
        .map_or(std::ptr::null(), |s| s as *const libc::timespec);
    // SAFETY: `fds` is an exclusively borrowed slice of initialised
    // `pollfd`s that outlives the call, and its exact length is passed;
    // `spec_ptr` is null (wait forever) or points to `spec`, alive on this
    // frame for the whole call; a null sigmask leaves the mask unchanged.
    unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            spec_ptr,
            std::ptr::null(),
        )
    }
}

/// `poll` with the timeout rounded up to whole milliseconds (`None`: forever).
#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
fn sys_poll(fds: &mut [libc::pollfd], timeout: Option<Duration>) -> libc::c_int {
    let ms = timeout.map_or(-1, |d| {
        libc::c_int::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(libc::c_int::MAX)
    });
    // SAFETY: `fds` is an exclusively borrowed slice of initialised
    // `pollfd`s that outlives the call, and its exact length is passed.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) }
}
