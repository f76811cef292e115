//! A seccomp filter that refuses io_uring, as container runtimes' default
//! profiles do (Docker's and containerd's since 2023: `io_uring_setup`,
//! `io_uring_enter` and `io_uring_register` fail with `EPERM`), for the
//! tests of `--engine auto`'s fallback (`tests/e2e/fallback.rs`).
//!
//! The filter goes into a child process only: [`refuse_io_uring`] arranges
//! for a [`Command`] to install it between `fork` and `exec`, so the test
//! process itself keeps every system call. A filter cannot be removed and
//! is inherited by the child's own children and threads, as a container's
//! is.
//!
//! The program (classic BPF over `struct seccomp_data`):
//!
//! ```text
//! ld  [arch]                  ; seccomp_data.arch (offset 4)
//! jeq AUDIT_ARCH_<this>, +1   ; a foreign ABI (e.g. i386 on x86_64) ...
//! ret KILL_PROCESS            ; ... is killed: its numbers mean other calls
//! ld  [nr]                    ; seccomp_data.nr (offset 0)
//! jeq io_uring_setup,    +3
//! jeq io_uring_enter,    +2
//! jeq io_uring_register, +1
//! ret ALLOW
//! ret ERRNO | EPERM
//! ```
//!
//! Built for x86_64 and aarch64 (whose audit architectures are written
//! below); elsewhere the module is absent.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// `AUDIT_ARCH_X86_64` (linux/audit.h: `EM_X86_64 | __AUDIT_ARCH_64BIT |
/// __AUDIT_ARCH_LE`).
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
/// `AUDIT_ARCH_AARCH64` (linux/audit.h: `EM_AARCH64 | __AUDIT_ARCH_64BIT |
/// __AUDIT_ARCH_LE`).
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// Offset of `nr` in `struct seccomp_data` (linux/seccomp.h).
const DATA_NR: u32 = 0;
/// Offset of `arch` in `struct seccomp_data`.
const DATA_ARCH: u32 = 4;

/// The classic BPF opcodes the program uses (linux/bpf_common.h).
const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

const fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

const fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The number of instructions of [`program`].
const LEN: usize = 9;

/// The filter's program (see the module's doc).
fn program() -> [libc::sock_filter; LEN] {
    let nr = |n: libc::c_long| u32::try_from(n).expect("a small system call number");
    [
        stmt(LD_W_ABS, DATA_ARCH),
        jump(JEQ_K, AUDIT_ARCH, 1, 0),
        stmt(RET_K, libc::SECCOMP_RET_KILL_PROCESS),
        stmt(LD_W_ABS, DATA_NR),
        jump(JEQ_K, nr(libc::SYS_io_uring_setup), 3, 0),
        jump(JEQ_K, nr(libc::SYS_io_uring_enter), 2, 0),
        jump(JEQ_K, nr(libc::SYS_io_uring_register), 1, 0),
        stmt(RET_K, libc::SECCOMP_RET_ALLOW),
        stmt(
            RET_K,
            libc::SECCOMP_RET_ERRNO | (libc::EPERM as u32 & libc::SECCOMP_RET_DATA),
        ),
    ]
}

/// Makes `cmd`'s child install the filter before it runs its program: from
/// then on `io_uring_setup`, `io_uring_enter` and `io_uring_register` fail
/// with `EPERM` in that process and every process it starts. The calling
/// process is not filtered.
///
/// The child first sets `PR_SET_NO_NEW_PRIVS` (required to install a filter
/// without `CAP_SYS_ADMIN`, and what container runtimes set too); if either
/// `prctl` fails, the spawn fails with that error.
pub fn refuse_io_uring(cmd: &mut Command) -> &mut Command {
    // Built here, in the parent: the child, between fork and exec, only
    // makes the two system calls (no allocation, no lock).
    let filter = program();
    // SAFETY: the closure runs in the forked child before exec, where only
    // async-signal-safe calls are allowed: it makes two `prctl` calls and
    // reads errno; it allocates nothing and takes no lock. The `sock_fprog`
    // points into `filter`, which the closure owns and which outlives the
    // call (the kernel copies the program during `prctl`).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            let prog = libc::sock_fprog {
                len: LEN as u16,
                filter: filter.as_ptr().cast_mut(),
            };
            if libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER as libc::c_ulong,
                &prog as *const libc::sock_fprog,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        })
    }
}
