//! The warm start of the pre-opened connections, before the clock starts,
//! written once for both engines over blocking I/O (threads, sleeps,
//! blocking reads): [`warm_start`] checks each connection for bytes before
//! any request and, with `--warm-up request`, sends it the run's first
//! request once ([`warm_up`]); [`Warm`] is what it found. The engine does
//! the I/O behind [`WarmConn`].

use std::time::{Duration, Instant};
use std::vec::Vec;

use super::control::Control;
use crate::exchange::{compact, Exchange, Feed, GAP_CAP};
use crate::plan::Plan;

/// What the warm-up of the pre-opened connections found, before the clock
/// started: never counted as load, reported apart.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Warm {
    /// Warm-up requests sent (one per pre-opened connection).
    pub requests: u64,
    /// Of them, answered with a complete response the connection survived
    /// (any status: the connection is usable).
    pub answered: u64,
    /// Of them, failed (a fault, a timeout, a close): the connection was
    /// opened again, or dropped from the pool.
    pub failed: u64,
    /// Connections on which bytes arrived before any request (or after the
    /// warm-up response): closed, counted here, never matched to a request.
    pub unsolicited: u64,
    /// Connections opened again during the warm-up (after bytes before
    /// any request, a failed warm-up, or a close after its answer); they
    /// count in [`RunOutput::connections_opened`](super::RunOutput::connections_opened).
    pub reopened: u64,
    /// Service time of each answered warm-up request, ns.
    pub service_ns: Vec<u64>,
    /// The server wrote before any request on a connection and again on its
    /// replacement: it writes on accept. No connection of the warm start is
    /// kept, and every connection of the run distrusts its first response
    /// ([`Exchange::distrust_first_responses`]).
    pub writes_first: bool,
}

impl Warm {
    /// Adds another engine thread's warm-up.
    pub fn merge(&mut self, other: &Warm) {
        self.requests += other.requests;
        self.answered += other.answered;
        self.failed += other.failed;
        self.unsolicited += other.unsolicited;
        self.reopened += other.reopened;
        self.service_ns.extend_from_slice(&other.service_ns);
        self.writes_first |= other.writes_first;
    }

    /// The median service time of the answered warm-up requests, ns (the
    /// lower median; `None` when none was answered).
    ///
    /// ```
    /// use metronome_core::engine::Warm;
    /// let w = Warm { service_ns: vec![30, 10, 20, 90], ..Warm::default() };
    /// assert_eq!(w.median_service_ns(), Some(20));
    /// assert_eq!(Warm::default().median_service_ns(), None);
    /// ```
    pub fn median_service_ns(&self) -> Option<u64> {
        self.service_percentile(50)
    }

    /// The fastest answered warm-up request's service time, ns.
    ///
    /// ```
    /// use metronome_core::engine::Warm;
    /// let w = Warm { service_ns: vec![30, 10, 20, 90], ..Warm::default() };
    /// assert_eq!(w.min_service_ns(), Some(10));
    /// ```
    pub fn min_service_ns(&self) -> Option<u64> {
        self.service_ns.iter().copied().min()
    }

    /// The lower `pct`-th percentile of the warm-up service times.
    fn service_percentile(&self, pct: usize) -> Option<u64> {
        let pct = pct.min(100);
        let mut v = self.service_ns.clone();
        v.sort_unstable();
        v.get(v.len().saturating_sub(1) * pct / 100).copied()
    }
}

/// How one warm-up request ended ([`warm_up`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarmReply {
    /// A complete response after `service_ns`; `keep_alive` false when the
    /// server closes the connection after it (open another).
    Answered {
        /// Send to the end of the response, ns.
        service_ns: u64,
        /// The connection stays open for the run.
        keep_alive: bool,
    },
    /// No usable response: a fault, a close, a timeout, bad framing, or
    /// bytes after the response (unsolicited). The connection is not used.
    Failed,
}

/// A pre-opened connection as the warm start ([`warm_start`]) sees it:
/// the engine does the I/O, core decides what to do with the answers.
pub trait WarmConn: Send {
    /// True when bytes (or a close) already wait on the connection, before
    /// any request was sent on it.
    fn early_bytes(&mut self) -> bool;

    /// Sends the run's first request once and reads its answer (core's
    /// [`warm_up`]); `give_up` turns true once the warm-up's budget is
    /// spent or the run was stopped.
    fn warm(&mut self, plan: &Plan<'_>, give_up: &(dyn Fn() -> bool + Sync)) -> WarmReply;
}

/// The warm start of the pre-opened connections, the same for both engines
/// ([`crate::plan::WarmUp`]), all of it within [`warm_budget_ns`] (the
/// request timeout, at most [`WARM_BUDGET_NS`]) and never past a stop:
///
/// 1. After [`SETTLE_NS`](crate::plan::SETTLE_NS), a connection with bytes
///    (or a close) before any request is closed and replaced once by `open`
///    (counted as unsolicited); the replacement gets the same check. Bytes
///    on the replacement too: the server writes on accept
///    ([`Warm::writes_first`]), and no connection is kept.
/// 2. With [`WarmUp::Request`](crate::plan::WarmUp::Request) every
///    connection then answers the run's first request once, unmeasured, all
///    at once (a thread each), within the first half of the budget. One
///    whose warm-up got no answer (a fault, a timeout, bytes after the
///    answer) or that the server closed after its answer is replaced once,
///    within the rest of the budget, and used unwarmed: a pending answer
///    must never be read as a measured request's.
/// 3. Every connection kept (replacements included) is looked at once more
///    after another settle: bytes there (after a warm-up answer, or before
///    any request on a replacement) leave it out, counted as unsolicited.
///
/// `open(limit)` opens one connection within `limit` (its connect and TLS
/// handshake), or gives `None`. A connection that cannot be replaced in
/// time is left out: the pool opens connections during the run. Returns
/// the connections kept.
pub fn warm_start<C: WarmConn>(
    plan: &Plan<'_>,
    control: &Control,
    conns: Vec<C>,
    mut open: impl FnMut(Duration) -> Option<C>,
    warm: &mut Warm,
) -> Vec<C> {
    let started = Instant::now();
    let budget = Duration::from_nanos(warm_budget_ns(plan));
    let connect_limit = Duration::from_nanos(plan.connect_timeout_ns());
    let settle = Duration::from_nanos(crate::plan::SETTLE_NS);
    // Opens a replacement within what is left of the budget (and of the
    // connect timeout); none once it is spent or the run was stopped.
    let mut reopen = |warm: &mut Warm| {
        let left = budget.saturating_sub(started.elapsed()).min(connect_limit);
        if control.stopped() || left.is_zero() {
            return None;
        }
        let fresh = open(left);
        warm.reopened += u64::from(fresh.is_some());
        fresh
    };
    std::thread::sleep(settle);
    // 1. Bytes before any request: open once more, then look again.
    let mut checked = Vec::with_capacity(conns.len());
    let mut again = false;
    for mut c in conns {
        if !c.early_bytes() {
            checked.push((c, false));
            continue;
        }
        warm.unsolicited += 1;
        drop(c);
        if let Some(fresh) = reopen(warm) {
            checked.push((fresh, true));
            again = true;
        }
    }
    if again {
        std::thread::sleep(settle);
    }
    let mut kept = Vec::with_capacity(checked.len());
    for (mut c, again) in checked {
        if again && c.early_bytes() {
            warm.unsolicited += 1;
            warm.writes_first = true;
        } else {
            kept.push(c);
        }
    }
    if warm.writes_first {
        // A server that writes on accept: bytes may come after any check,
        // so no connection opened before now carries a measured request.
        return Vec::new();
    }
    if plan.warm_up != crate::plan::WarmUp::Request || kept.is_empty() {
        return kept;
    }
    // 2. One request on each, all at once, within half the budget.
    let answer_by = budget / 2;
    let give_up = || control.stopped() || started.elapsed() >= answer_by;
    let replies: Vec<WarmReply> = std::thread::scope(|scope| {
        let handles: Vec<_> = kept
            .iter_mut()
            .map(|c| {
                let give_up = &give_up;
                scope.spawn(move || c.warm(plan, give_up))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(WarmReply::Failed))
            .collect()
    });
    let mut out = Vec::with_capacity(kept.len());
    for (c, reply) in kept.into_iter().zip(replies) {
        warm.requests += 1;
        match reply {
            WarmReply::Answered {
                service_ns,
                keep_alive,
            } => {
                warm.answered += 1;
                warm.service_ns.push(service_ns);
                if keep_alive {
                    out.push(c);
                    continue;
                }
            }
            WarmReply::Failed => warm.failed += 1,
        }
        // Closed by the server after its answer, or no usable answer (its
        // answer may still come): open once more, unwarmed.
        drop(c);
        out.extend(reopen(warm));
    }
    // 3. Bytes after a warm-up answer, or before any request on a
    // replacement: not the run's either.
    std::thread::sleep(settle);
    out.retain_mut(|c| {
        let early = c.early_bytes();
        warm.unsolicited += u64::from(early);
        !early
    });
    out
}

/// The longest the warm start may take (its requests, its replacements),
/// all connections together: [`WARM_BUDGET_NS`], or the request timeout
/// when shorter. Its settles (three times [`SETTLE_NS`](crate::plan::SETTLE_NS)
/// at most) come on top.
///
/// ```
/// # use metronome_core::plan::*;
/// # use metronome_core::engine::warm_budget_ns;
/// let mut plan = example_plan();
/// plan.timeout_ns = 1_000_000_000;
/// assert_eq!(warm_budget_ns(&plan), 1_000_000_000);
/// plan.timeout_ns = 30_000_000_000;
/// assert_eq!(warm_budget_ns(&plan), 2_000_000_000);
/// ```
pub fn warm_budget_ns(plan: &Plan<'_>) -> u64 {
    plan.timeout_ns.min(WARM_BUDGET_NS)
}

/// The most the warm start may take: 2 s ([`warm_budget_ns`]). Its
/// requests get the first half; a connection not answered by then is
/// opened again (within the second half) and used unwarmed.
pub const WARM_BUDGET_NS: u64 = 2_000_000_000;

/// Sends `request` once on a connection before the clock starts and reads
/// its response with core's [`Exchange`] (blocking I/O through `io`, which
/// is the socket or a TLS stream over it, with short read timeouts set:
/// each timeout asks `give_up`, true once the warm-up's budget is spent or
/// the run was stopped). Any status counts as answered: it proves the
/// connection usable.
pub fn warm_up<S: std::io::Read + std::io::Write>(
    io: &mut S,
    exchange: &mut Exchange,
    request: &[u8],
    give_up: impl Fn() -> bool,
) -> WarmReply {
    let started = Instant::now();
    let ns = || started.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
    exchange.reset_connection();
    exchange.begin(0, 0, request);
    let mut written = 0;
    while written < request.len() {
        match io.write(&request[written..]) {
            Ok(0) => return WarmReply::Failed,
            Ok(n) => written += n,
            Err(e) if slice_ended(&e) && !give_up() => {}
            Err(_) => return WarmReply::Failed,
        }
    }
    loop {
        match io.flush() {
            Ok(()) => break,
            Err(e) if slice_ended(&e) && !give_up() => {}
            Err(_) => return WarmReply::Failed,
        }
    }
    let mut buf = std::vec![0u8; crate::plan::READ_BUF_BYTES];
    let mut gaps = std::vec![0u64; GAP_CAP];
    let (mut start, mut end) = (0usize, 0usize);
    let reply = loop {
        let n = match io.read(&mut buf[end..]) {
            Ok(0) => break WarmReply::Failed,
            Ok(n) => n,
            Err(e) if slice_ended(&e) && !give_up() => continue,
            Err(_) => break WarmReply::Failed,
        };
        end += n;
        match exchange.handle_read(ns(), &buf[start..end], &mut gaps) {
            Err(_) => break WarmReply::Failed,
            Ok(Feed::Complete {
                keep_alive,
                unsolicited,
                ..
            }) => {
                break if unsolicited {
                    WarmReply::Failed
                } else {
                    WarmReply::Answered {
                        service_ns: ns(),
                        keep_alive,
                    }
                }
            }
            Ok(Feed::NeedMore { consumed }) => {
                start += consumed;
                // Bytes that never complete a response (a 100 Continue
                // every few ms) must not hold the warm-up past its budget.
                if give_up() || compact(&mut buf, &mut start, &mut end).is_err() {
                    break WarmReply::Failed;
                }
            }
        }
    };
    exchange.reset_connection();
    reply
}

/// A read or write timed out (a slice of the warm-up's wait), or was interrupted.
fn slice_ended(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
    use std::vec;

    /// A stream that answers every read with another `100 Continue` and
    /// takes every write (a server that never sends a final response).
    struct Continues;

    impl std::io::Read for Continues {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let b = b"HTTP/1.1 100 Continue\r\n\r\n";
            buf[..b.len()].copy_from_slice(b);
            Ok(b.len())
        }
    }

    impl std::io::Write for Continues {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Bytes that keep coming and never complete a response do not hold
    /// the warm-up past its budget: it fails once `give_up` is true.
    #[test]
    fn a_warm_up_answered_by_endless_interim_responses_gives_up() {
        let plan = crate::plan::example_plan();
        let mut exchange = Exchange::for_plan(&plan);
        let asked = std::cell::Cell::new(0u32);
        let give_up = || {
            asked.set(asked.get() + 1);
            asked.get() > 50
        };
        let reply = warm_up(&mut Continues, &mut exchange, plan.requests[0], give_up);
        assert_eq!(reply, WarmReply::Failed);
        assert_eq!(asked.get(), 51);
    }

    /// A pre-opened connection for [`warm_start`]: bytes before any request
    /// when `early`, and a warm-up that waits until it is given up on
    /// (`silent`) or is answered at once.
    struct Fake {
        early: bool,
        silent: bool,
    }

    impl WarmConn for Fake {
        fn early_bytes(&mut self) -> bool {
            self.early
        }

        fn warm(&mut self, _: &Plan<'_>, give_up: &(dyn Fn() -> bool + Sync)) -> WarmReply {
            if !self.silent {
                return WarmReply::Answered {
                    service_ns: 1,
                    keep_alive: true,
                };
            }
            while !give_up() {
                std::thread::sleep(Duration::from_millis(1));
            }
            WarmReply::Failed
        }
    }

    /// The warm start of a server that never answers ends within its
    /// budget (the timeout, 200 ms here): the warm-ups are given up after
    /// half of it, each connection is replaced within the rest (the
    /// connect limit given to `open` never exceeds what is left), and the
    /// replacements are kept, unwarmed.
    #[test]
    fn the_warm_start_keeps_to_its_budget() {
        let plan = Plan {
            timeout_ns: 200_000_000,
            warm_up: crate::plan::WarmUp::Request,
            ..crate::plan::example_plan()
        };
        let control = Control::default();
        let conns = (0..4)
            .map(|_| Fake {
                early: false,
                silent: true,
            })
            .collect();
        let mut limits = Vec::new();
        let mut warm = Warm::default();
        let t = Instant::now();
        let open = |limit: Duration| {
            limits.push(limit);
            Some(Fake {
                early: false,
                silent: true,
            })
        };
        let kept = warm_start(&plan, &control, conns, open, &mut warm);
        let took = t.elapsed();
        assert_eq!(kept.len(), 4);
        assert_eq!((warm.requests, warm.failed, warm.reopened), (4, 4, 4));
        assert!(took >= Duration::from_millis(100), "{took:?}");
        assert!(took < Duration::from_millis(200 + 3 * 5 + 100), "{took:?}");
        assert_eq!(limits.len(), 4);
        assert!(
            limits.iter().all(|l| *l <= Duration::from_millis(100)),
            "{limits:?}"
        );
        assert_eq!(warm_budget_ns(&plan), 200_000_000);
    }

    /// A connection whose replacement has bytes before any request too is
    /// left out; so is a replacement (after a failed warm-up) with bytes
    /// at the last look, and a connection that cannot be replaced in time.
    #[test]
    fn replacements_get_the_same_check() {
        let plan = Plan {
            timeout_ns: 100_000_000,
            warm_up: crate::plan::WarmUp::Request,
            ..crate::plan::example_plan()
        };
        let control = Control::default();
        let mut warm = Warm::default();
        let conns = vec![Fake {
            early: true,
            silent: false,
        }];
        let open = |_| {
            Some(Fake {
                early: true,
                silent: false,
            })
        };
        assert!(warm_start(&plan, &control, conns, open, &mut warm).is_empty());
        assert_eq!((warm.unsolicited, warm.reopened, warm.requests), (2, 1, 0));
        assert!(warm.writes_first);
        // One such pair: the other connections are not kept either.
        let mut warm = Warm::default();
        let mut conns = vec![Fake {
            early: true,
            silent: false,
        }];
        conns.extend((0..3).map(|_| Fake {
            early: false,
            silent: false,
        }));
        let open = |_| {
            Some(Fake {
                early: true,
                silent: false,
            })
        };
        assert!(warm_start(&plan, &control, conns, open, &mut warm).is_empty());
        assert_eq!(
            (warm.unsolicited, warm.requests, warm.writes_first),
            (2, 0, true)
        );

        let mut warm = Warm::default();
        let conns = vec![Fake {
            early: false,
            silent: true,
        }];
        let open = |_| {
            Some(Fake {
                early: true,
                silent: false,
            })
        };
        assert!(warm_start(&plan, &control, conns, open, &mut warm).is_empty());
        assert_eq!((warm.failed, warm.reopened, warm.unsolicited), (1, 1, 1));
        assert!(!warm.writes_first);

        // Stopped: nothing is replaced.
        control.stop.store(true, Ordering::Relaxed);
        let mut warm = Warm::default();
        let conns = vec![Fake {
            early: true,
            silent: false,
        }];
        let open = |_| -> Option<Fake> { panic!("opened after a stop") };
        assert!(warm_start(&plan, &control, conns, open, &mut warm).is_empty());
        assert_eq!((warm.unsolicited, warm.reopened), (1, 0));
    }
}
