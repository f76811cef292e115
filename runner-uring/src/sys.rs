//! The raw system calls of the engine that are not the ring: socket
//! shutdown and addresses (CPU affinity and the thread CPU clock are the
//! event loop's, `metronome-loop`). Each is a safe function over one
//! `unsafe` call with its `// SAFETY:` reason.

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
