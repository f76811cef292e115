//! The raw system calls of the engine that are not the ring: socket
//! shutdown and addresses, CPU affinity, the thread CPU clock. Each is a
//! safe function over one `unsafe` call with its `// SAFETY:` reason.

use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;

/// Shuts both directions of `fd` down (pending operations on it complete).
pub(crate) fn shutdown(fd: RawFd) {
    // SAFETY: `fd` is the open descriptor owned by a slot (borrowed for this
    // call); shutdown(2) takes no pointer.
    unsafe {
        libc::shutdown(fd, libc::SHUT_RDWR);
    }
}

/// The C socket address of `addr`, and its length.
pub(crate) fn sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain old data; all-zero is a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe {
                std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin);
            }
            (
                storage,
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe {
                std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin6);
            }
            (
                storage,
                std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
            )
        }
    }
}

/// Pins the calling thread to `cpu`.
///
/// # Errors
/// `sched_setaffinity` refused (e.g. the CPU is outside the allowed set).
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

/// The CPUs this process may run on (empty when unknown).
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

/// CPU time consumed by the calling thread, in nanoseconds
/// (`CLOCK_THREAD_CPUTIME_ID`); 0 if the clock cannot be read.
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec owned by this frame, and
    // CLOCK_THREAD_CPUTIME_ID is a clock id Linux defines.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
