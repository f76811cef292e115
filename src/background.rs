//! Threads that watch a run (the dashboard, the live-interval streamer, the
//! remote-write pusher) give way to the pacing threads: each lowers its own
//! scheduling priority to the lowest nice value when it starts.
//!
//! They are never the pacer, yet they share its cores: under `taskset` or
//! on a small machine, a browser opening the dashboard made its thread work
//! for ~15 ms on the pacer's core at once (`benches/live_overhead.sh`). At
//! nice 19 a waking pacer preempts them; they still run whenever the core
//! is otherwise free, so they are slowed, never starved.

/// Lowers the calling thread's priority to nice 19 (Linux: the nice value
/// is per thread). Elsewhere, or when refused, nothing changes: the thread
/// runs as before.
pub fn give_way() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: setpriority takes plain integers and touches no memory of
        // ours; `who` 0 with PRIO_PROCESS names the calling thread on Linux
        // (threads do not share a nice value there).
        let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
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
            nice()
        })
        .join()
        .unwrap();
        assert_eq!(lowered, 19);
        assert_eq!(nice(), before);
    }
}
