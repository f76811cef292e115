//! The command line: flags, the paced settings, the kernel techniques.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

/// Parsed command line.
pub(crate) struct Options {
    pub(crate) target: SocketAddr,
    pub(crate) host: String,
    pub(crate) connections: usize,
    pub(crate) duration: Duration,
    pub(crate) path: String,
    /// `Some` for the paced floors (`--rate`).
    pub(crate) paced: Option<Paced>,
}

/// The paced floors' settings.
pub(crate) struct Paced {
    pub(crate) rate: f64,
    pub(crate) mode: Mode,
    pub(crate) spin_ns: u64,
    pub(crate) techniques: Techniques,
}

/// Which paced floor.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Naive,
    Best,
}

/// How task work is run (ring setup flags), weakest first.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum TaskRun {
    /// No setup flags.
    Plain,
    /// `COOP_TASKRUN | TASKRUN_FLAG`.
    Coop,
    /// `SINGLE_ISSUER | DEFER_TASKRUN | TASKRUN_FLAG` (and `NO_SQARRAY`
    /// where the kernel has it).
    Defer,
}

/// The kernel techniques of the paced loop: wanted, then (after setup)
/// what the kernel accepted. Naive has none of them.
#[derive(Clone, Copy)]
pub(crate) struct Techniques {
    pub(crate) task_run: TaskRun,
    /// One multishot recv per connection on a provided buffer ring;
    /// else one recv per request into the connection's own buffer.
    pub(crate) multishot: bool,
    /// `IOSQE_CQE_SKIP_SUCCESS` on sends.
    pub(crate) skip_success: bool,
    /// Sockets named by their index in a registered file table.
    pub(crate) fixed_files: bool,
    /// `io_uring_enter` on the registered ring fd.
    pub(crate) ring_fd: bool,
    /// Sleep in the enter's own timeout (`EXT_ARG`), woken by the timer
    /// only unless a request waits for a connection; else a timeout SQE
    /// and any completion wakes the sleep.
    pub(crate) enter_timeout: bool,
    /// That timeout as an absolute time (`ABS_TIMER`), else relative.
    pub(crate) abs_timer: bool,
}

impl Techniques {
    pub(crate) const NAIVE: Self = Self {
        task_run: TaskRun::Plain,
        multishot: false,
        skip_success: false,
        fixed_files: false,
        ring_fd: false,
        enter_timeout: false,
        abs_timer: false,
    };
    pub(crate) const BEST: Self = Self {
        task_run: TaskRun::Defer,
        multishot: true,
        skip_success: true,
        fixed_files: true,
        ring_fd: true,
        enter_timeout: true,
        abs_timer: true,
    };

    /// Turns off the techniques named in a `--without` list.
    pub(crate) fn without(mut self, list: &str) -> Result<Self, String> {
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "defer" => self.task_run = self.task_run.min(TaskRun::Coop),
                "taskrun" => self.task_run = TaskRun::Plain,
                "multishot" => self.multishot = false,
                "skip" => self.skip_success = false,
                "fixed" => self.fixed_files = false,
                "ringfd" => self.ring_fd = false,
                "enter-timeout" => {
                    self.enter_timeout = false;
                    self.abs_timer = false;
                }
                "abs" => self.abs_timer = false,
                other => {
                    return Err(format!(
                        "--without {other}: expected defer, taskrun, multishot, skip, \
                         fixed, ringfd, enter-timeout or abs"
                    ))
                }
            }
        }
        Ok(self)
    }
}

/// `--spin` value: `ns`, `us`, `ms` or `s` suffix; a bare number is us.
pub(crate) fn parse_spin(text: &str) -> Option<u64> {
    let (number, scale) = [("ns", 1.0), ("us", 1e3), ("ms", 1e6), ("s", 1e9)]
        .iter()
        .find_map(|&(suffix, scale)| text.strip_suffix(suffix).map(|n| (n, scale)))
        .unwrap_or((text, 1e3));
    let value: f64 = number.parse().ok()?;
    (value.is_finite() && value >= 0.0 && value * scale < 1e12).then_some((value * scale) as u64)
}

/// `Ok(None)` when there is no `--target` (the `cargo bench` case).
pub(crate) fn parse_args(args: &[String]) -> Result<Option<Options>, String> {
    let mut target = None;
    let mut connections = 64usize;
    let mut duration = Duration::from_secs(10);
    let mut path = String::from("/");
    let mut rate: Option<f64> = None;
    let mut mode: Option<Mode> = None;
    let mut spin_ns = 50_000u64;
    let mut without: Option<String> = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            "--target" => target = Some(value("--target")?),
            "--connections" | "-c" => {
                let v = value("--connections")?;
                connections = v
                    .parse()
                    .ok()
                    .filter(|&n| (1..=65_536).contains(&n))
                    .ok_or_else(|| format!("--connections {v}: expected 1..=65536"))?;
            }
            "--duration" | "-d" => {
                let v = value("--duration")?;
                let secs: f64 = v
                    .strip_suffix('s')
                    .unwrap_or(&v)
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0)
                    .ok_or_else(|| format!("--duration {v}: expected seconds, e.g. 10"))?;
                duration = Duration::from_secs_f64(secs);
            }
            "--path" => path = value("--path")?,
            "--rate" | "-r" => {
                let v = value("--rate")?;
                rate = Some(
                    v.parse()
                        .ok()
                        .filter(|r: &f64| r.is_finite() && *r >= 1.0 && *r <= 1e8)
                        .ok_or_else(|| format!("--rate {v}: expected 1..=1e8 req/s"))?,
                );
            }
            "--mode" => {
                let v = value("--mode")?;
                mode = Some(match v.as_str() {
                    "naive" => Mode::Naive,
                    "best" => Mode::Best,
                    _ => return Err(format!("--mode {v}: expected naive or best")),
                });
            }
            "--spin" => {
                let v = value("--spin")?;
                spin_ns = parse_spin(&v)
                    .ok_or_else(|| format!("--spin {v}: expected a duration, e.g. 50us"))?;
            }
            "--without" => without = Some(value("--without")?),
            // Passed by `cargo bench`; a filter may follow it but we ignore both.
            "--bench" => {}
            other if other.starts_with('-') => return Err(format!("unknown flag {other}")),
            _ => {}
        }
    }
    let paced = match (rate, mode) {
        (None, None) if without.is_none() => None,
        (None, _) => return Err("--mode and --without need --rate".into()),
        (Some(rate), mode) => {
            let mode = mode.unwrap_or(Mode::Best);
            let techniques = match (mode, &without) {
                (Mode::Naive, Some(_)) => {
                    return Err("--without applies to --mode best only".into())
                }
                (Mode::Naive, None) => Techniques::NAIVE,
                (Mode::Best, list) => Techniques::BEST.without(list.as_deref().unwrap_or(""))?,
            };
            Some(Paced {
                rate,
                mode,
                spin_ns,
                techniques,
            })
        }
    };
    let Some(host) = target else {
        return Ok(None);
    };
    let target = host
        .to_socket_addrs()
        .map_err(|e| format!("--target {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("--target {host}: no address"))?;
    Ok(Some(Options {
        target,
        host,
        connections,
        duration,
        path,
        paced,
    }))
}
