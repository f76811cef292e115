//! Threads that watch a run (the dashboard, the live-interval streamer, the
//! remote-write pusher) give way to the pacing threads: each lowers its own
//! scheduling priority when it starts, to nice 19 and Linux's `SCHED_IDLE`
//! policy.
//!
//! They are never the pacer, yet they share its cores: under `taskset` or
//! on a small machine, a browser opening the dashboard made its thread work
//! for ~15 ms on the pacer's core at once (`benches/live_overhead.sh`).
//! Under `SCHED_IDLE` a waking pacer preempts them at once; they still run
//! whenever the core is otherwise free, so they are slowed, never starved.
//!
//! Their CPU time is read with [`thread_cpu_ns`] (the report's
//! `generator.dashboard_cpu_s`).

/// The CPUs the pacing threads are pinned to (`--cpus`), which the watching
/// threads keep off when another CPU is allowed ([`keep_off`]).
static PACING_CPUS: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());

/// The pacing threads will be pinned to `cpus` (`--cpus`): threads that
/// give way from now on run on the process's other allowed CPUs, when it
/// has any (with `taskset` to the pacing CPUs alone they stay there, at
/// nice 19). Empty: no preference.
pub fn keep_off(cpus: &[usize]) {
    let mut v = PACING_CPUS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    v.clear();
    v.extend_from_slice(cpus);
}

/// Lowers the calling thread's priority to nice 19 and `SCHED_IDLE`
/// (Linux: both are per thread) and, when the pacing threads are pinned ([`keep_off`]),
/// moves it off their CPUs if another is allowed. Elsewhere, or when
/// refused, nothing changes: the thread runs as before.
pub fn give_way() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: setpriority takes plain integers and touches no memory of
        // ours; `who` 0 with PRIO_PROCESS names the calling thread on Linux
        // (threads do not share a nice value there).
        let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
        // SCHED_IDLE on top (the calling thread only, as pid 0 names it): a
        // waking pacer preempts it at once, where a nice-19 thread may
        // still finish its slice first.
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `param` is a live sched_param; pid 0 is the calling thread.
        let _ = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
        let avoid = PACING_CPUS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if !avoid.is_empty() {
            off_cpus(&avoid);
        }
    }
}

/// CPU time of the calling thread so far, in nanoseconds: POSIX's
/// `CLOCK_THREAD_CPUTIME_ID` (Linux, macOS 10.12 and later, the BSDs);
/// `None` where the clock cannot be read.
pub fn thread_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live, writable timespec on this frame for the whole
    // call; the clock id is a constant libc defines for this platform.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return None;
    }
    Some(u64::try_from(ts.tv_sec).ok()? * 1_000_000_000 + u64::try_from(ts.tv_nsec).ok()?)
}

/// Narrows the calling thread's CPU affinity to its allowed CPUs less
/// `avoid`, unless that leaves none.
#[cfg(target_os = "linux")]
fn off_cpus(avoid: &[usize]) {
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: cpu_set_t is a plain bit array; all zeros is a valid (empty)
    // set, filled by sched_getaffinity for the calling thread (pid 0).
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live cpu_set_t of `size` bytes.
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return;
    }
    let mut narrowed = set;
    for &c in avoid {
        if c < libc::CPU_SETSIZE as usize {
            // SAFETY: `c` is within the set's bits (checked above).
            unsafe { libc::CPU_CLR(c, &mut narrowed) };
        }
    }
    // SAFETY: CPU_COUNT reads the set's bits.
    if unsafe { libc::CPU_COUNT(&narrowed) } == 0 {
        return;
    }
    // SAFETY: `narrowed` is a live cpu_set_t of `size` bytes; pid 0 is the
    // calling thread.
    let _ = unsafe { libc::sched_setaffinity(0, size, &narrowed) };
}

#[cfg(test)]
mod cpu_tests {
    use std::time::{Duration, Instant};

    /// A spinning thread's clock reaches 20 ms of CPU (within 10 s of wall
    /// time, however loaded the machine) and never runs ahead of the wall
    /// clock; a thread that sleeps 30 ms uses far less than that, while
    /// this test binary's other threads may be busy (a process clock would
    /// count theirs).
    #[test]
    fn thread_cpu_time_counts_the_calling_thread_only() {
        const SPIN_NS: u64 = 20_000_000;
        let (used, wall) = std::thread::spawn(|| {
            let cpu = || super::thread_cpu_ns().expect("the thread CPU clock");
            let (before, start) = (cpu(), Instant::now());
            let mut x = 0u64;
            while cpu() - before < SPIN_NS && start.elapsed() < Duration::from_secs(10) {
                for _ in 0..1_000 {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
            (cpu() - before, start.elapsed())
        })
        .join()
        .unwrap();
        assert!(used >= SPIN_NS, "spinning used {used} ns in {wall:?}");
        assert!(
            used <= wall.as_nanos() as u64 + 1_000_000,
            "{used} ns of CPU in {wall:?}"
        );
        let slept = std::thread::spawn(|| {
            let before = super::thread_cpu_ns().expect("the thread CPU clock");
            std::thread::sleep(Duration::from_millis(30));
            super::thread_cpu_ns().expect("the thread CPU clock") - before
        })
        .join()
        .unwrap();
        assert!(slept < 10_000_000, "sleeping used {slept} ns");
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    /// The calling thread alone is lowered: another thread of the process
    /// keeps its nice value.
    #[test]
    fn only_the_calling_thread_gives_way() {
        // SAFETY: getpriority reads a number; errno is not consulted (a
        // nice value of -1 is not expected in tests).
        let nice = || unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        let before = nice();
        let lowered = std::thread::spawn(move || {
            super::give_way();
            // SAFETY: sched_getscheduler reads the calling thread's policy.
            (nice(), unsafe { libc::sched_getscheduler(0) })
        })
        .join()
        .unwrap();
        assert_eq!(lowered, (19, libc::SCHED_IDLE));
        assert_eq!(nice(), before);
        // SAFETY: sched_getscheduler reads the calling thread's policy.
        assert_ne!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_IDLE);
    }

    /// With the pacing CPUs named, a thread that gives way runs on the
    /// others (when the process may use another), and the rest of the
    /// process keeps its affinity.
    #[test]
    fn a_watching_thread_keeps_off_the_pacing_cpus() {
        let allowed = || {
            let size = std::mem::size_of::<libc::cpu_set_t>();
            // SAFETY: as in off_cpus: a zeroed set filled for this thread.
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            // SAFETY: `set` is a live cpu_set_t of `size` bytes.
            assert_eq!(unsafe { libc::sched_getaffinity(0, size, &mut set) }, 0);
            (0..libc::CPU_SETSIZE as usize)
                // SAFETY: `c` is within the set's bits.
                .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
                .collect::<Vec<usize>>()
        };
        let mine = allowed();
        let first = mine[0];
        super::keep_off(&[first]);
        let theirs = std::thread::spawn(move || {
            super::give_way();
            allowed()
        })
        .join()
        .unwrap();
        super::keep_off(&[]);
        if mine.len() > 1 {
            assert!(!theirs.contains(&first), "{theirs:?}");
            assert_eq!(theirs.len(), mine.len() - 1);
        } else {
            assert_eq!(theirs, mine, "one CPU: it stays");
        }
        assert_eq!(allowed(), mine);
    }
}
