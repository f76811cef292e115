//! Where an open-loop run fell behind its schedule, and why: the
//! per-interval materiality rule, one cause per interval, and stretches of
//! consecutive intervals with their totals (`generator.behind`;
//! docs/report.md, "Behind schedule").

use metronome_core::plan::Plan;

use super::enough::enough;
use super::num::{count, num, pct, unit};
use super::{Behind, IntervalReport};

/// Work share from which the pacing threads count as saturated.
const SATURATED: f64 = 0.9;

/// The share of an interval's due requests (by intended time) that must
/// have been delayed (dropped, sent more than 1 ms late, or never sent) for
/// the interval to
/// count as behind its schedule: 1%. Fewer moved none of its percentiles
/// up to p99.
const MATERIAL: f64 = 0.01;

/// Fewer delayed requests than this never make a stretch behind, whatever
/// its size: one or two late sends in a 20-request second are a hiccup,
/// not a finding. Counted over the stretch, not each interval, so that a
/// slow run (1 req/s, every send 138 ms late) is behind too.
const MIN_DELAYED: u64 = 3;

/// A server answered slower only when its mean service time in an
/// interval is at least this many times the lowest mean of the intervals
/// before it (the baseline): the evidence `server_slower` needs.
const SLOWER: f64 = 1.5;

/// The stretches of the run in which the open loop could not keep its
/// schedule, and why, from the interval series: an interval is behind when
/// more than 1% of its due requests were dropped, sent more than 1 ms late
/// (core's `LATE_NS`; a wait for a connection included) or never sent;
/// consecutive intervals of the same cause form one stretch, kept when at
/// least 3 requests of it were delayed, and its sentence carries the
/// stretch's totals. `plan` (absent in a merge) puts
/// the limits in the sentences; with a `--max-concurrency` cap (`cap`),
/// waits with every connection busy are the cap's (`concurrency_limit`),
/// as the user asked, not an exhausted pool.
///
/// `end_s` is the measured duration: where the last interval of a series
/// of one ends.
pub fn behind(
    intervals: &[IntervalReport],
    plan: Option<&Plan<'_>>,
    cap: Option<u32>,
    end_s: f64,
) -> Vec<Behind> {
    let width = match intervals {
        [a, b, ..] => b.start_s - a.start_s,
        [a] => (end_s - a.start_s).max(0.0),
        [] => 0.0,
    };
    // Runs of consecutive intervals with one cause: (cause, first, last,
    // the baseline before the first).
    let mut runs: Vec<(&'static str, usize, usize, Option<Baseline>)> = Vec::new();
    // The service time of the intervals so far (a service time runs from
    // the actual send, so a late or waiting send does not inflate it).
    let mut before = Baseline::default();
    for (i, iv) in intervals.iter().enumerate() {
        let base = (before.intervals > 0).then_some(before);
        before.add(iv);
        let Some(cause) = cause(iv, cap.is_some(), base) else {
            continue;
        };
        match runs.last_mut() {
            Some((c, _, last, _)) if *c == cause && *last + 1 == i => *last = i,
            _ => runs.push((cause, i, i, base)),
        }
    }
    runs.into_iter()
        .filter_map(|(cause, first, last, base)| {
            let stretch = &intervals[first..=last];
            let t = total(stretch);
            if t.dropped + t.late + t.unsent < MIN_DELAYED {
                return None;
            }
            let until_s = intervals
                .get(last + 1)
                .map_or(intervals[last].start_s + width, |next| next.start_s);
            Some(Behind {
                from_s: intervals[first].start_s,
                until_s,
                intervals: stretch.len() as u64,
                cause: cause.to_string(),
                detail: detail(cause, &t, base, plan, cap),
            })
        })
        .collect()
}

/// The service time of the intervals before one: the baseline a
/// `server_slower` stretch is measured against, the lowest of their mean
/// service times.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Baseline {
    /// Intervals with a success.
    intervals: u64,
    /// The lowest of their mean service times, ms.
    lowest_ms: f64,
}

impl Baseline {
    /// Counts an interval.
    fn add(&mut self, iv: &IntervalReport) {
        if let (Some(mean), true) = (iv.service_mean_ms, iv.ok > 0) {
            self.lowest_ms = if self.intervals == 0 {
                mean
            } else {
                self.lowest_ms.min(mean)
            };
            self.intervals += 1;
        }
    }

    /// The baseline service time, ms.
    fn mean_ms(&self) -> f64 {
        self.lowest_ms
    }

    /// Whether `iv`'s mean service time is at least [`SLOWER`] times it.
    fn rose(&self, iv: &IntervalReport) -> bool {
        iv.service_mean_ms
            .is_some_and(|m| iv.ok > 0 && m >= SLOWER * self.mean_ms())
    }
}

/// The intervals of a stretch as one: counts added, percentiles and the
/// work share their largest.
fn total(stretch: &[IntervalReport]) -> IntervalReport {
    let mut t = stretch[0].clone();
    for x in &stretch[1..] {
        t.add(x);
    }
    t
}

/// Why an interval is behind its schedule, or `None` when it kept it (see
/// [`behind`] for the materiality rule). `base`: the service time of the
/// intervals before it (the lowest mean), the evidence against which a
/// server is said to have answered slower.
pub(crate) fn cause(
    iv: &IntervalReport,
    capped: bool,
    base: Option<Baseline>,
) -> Option<&'static str> {
    // Reports from before `scheduled` was kept: the sends stand in.
    let due = iv.scheduled.max(iv.sent + iv.dropped) as f64;
    let delayed = (iv.dropped + iv.late + iv.unsent) as f64;
    if due == 0.0 || delayed == 0.0 || delayed <= MATERIAL * due {
        None
    } else if iv.work_cpu >= SATURATED {
        // A generator that cannot keep up also reaps late, which fills the
        // pool and the in-flight limit: its saturation is the cause.
        Some("cpu_saturated")
    } else if iv.dropped > 0 {
        Some("in_flight_limit")
    } else if capped && iv.pool_full > 0 {
        // Under a --max-concurrency cap a wait for a slot is the queue the
        // user asked for, whatever else made the interval late.
        Some("concurrency_limit")
    } else if waits_dominate(iv) && iv.pool_full > 0 {
        Some(if capped {
            "concurrency_limit"
        } else {
            "pool_exhausted"
        })
    } else if waits_dominate(iv) && base.is_some_and(|b| b.rose(iv)) {
        // Only where the report's own numbers show it.
        Some("server_slower")
    } else if waits_dominate(iv) {
        Some("waited")
    } else {
        Some("descheduled")
    }
}

/// Whether the interval's late sends were late mostly because they waited
/// for a connection (rather than because the generator handled them late,
/// as after its thread was descheduled). Reports from before `late` was
/// kept: any wait.
fn waits_dominate(iv: &IntervalReport) -> bool {
    if iv.late > 0 {
        2 * iv.late_waiting > iv.late
    } else {
        iv.waited > 0
    }
}

/// The sentence of a stretch, with its totals (`t`, see [`total`]) and the
/// baseline before it.
fn detail(
    cause: &str,
    t: &IntervalReport,
    base: Option<Baseline>,
    plan: Option<&Plan<'_>>,
    cap: Option<u32>,
) -> String {
    let service = |b: &Baseline| {
        format!(
            "service time mean {} against {}, the lowest mean of the {} before it",
            unit(t.service_mean_ms.unwrap_or(0.0), "ms"),
            unit(b.mean_ms(), "ms"),
            super::num::counted(b.intervals, "interval")
        )
    };
    match cause {
        "concurrency_limit" => format!(
            "{} requests waited for one of the --max-concurrency {} slots, as asked, while {} \
             responses arrived: their latency (from the intended time) includes the wait, their \
             service time does not",
            count(t.pool_full),
            cap.unwrap_or(0),
            count(t.ok + t.errors)
        ),
        "in_flight_limit" => format!(
            "{} due requests were dropped above --max-in-flight{} ({}): \
             the server answers slower than requests arrive, or the limit is too low",
            count(t.dropped),
            plan.map(|p| format!(" ({})", count(p.max_in_flight as u64)))
                .unwrap_or_default(),
            latency_p50(t)
        ),
        "pool_exhausted" => format!(
            "{} requests found every connection busy with the pool at its limit{} and waited \
             for one, while {} responses arrived: the server is slower than the connections \
             allow (raise --max-connections)",
            count(t.pool_full),
            plan.map(|p| format!(" ({} connections)", count(p.max_connections.into())))
                .unwrap_or_default(),
            count(t.ok + t.errors)
        ),
        "server_slower" => format!(
            "{} requests found every connection busy and waited for one, the pool below its \
             limit ({}, {}): the server answered slower than before ({}: {} times)",
            count(t.waited),
            latency_p50(t),
            send_lag(t),
            base.as_ref().map(service).unwrap_or_default(),
            num(t.service_mean_ms.unwrap_or(0.0) / base.map_or(1.0, |b| b.mean_ms()).max(1e-9))
        ),
        "waited" => format!(
            "{} requests found every connection busy and waited for one, the pool below its \
             limit ({}, {}); {}",
            count(t.waited),
            latency_p50(t),
            send_lag(t),
            match (&base, t.service_mean_ms) {
                (Some(b), Some(_)) => format!("{}: not slower", service(b)),
                (Some(_), None) => "no request succeeded to measure a service time".to_string(),
                (None, _) => "no interval before it to compare its service time with".to_string(),
            }
        ),
        "cpu_saturated" => format!(
            "the pacing threads worked {} of the time (busy-wait excluded; {}): the \
             generator is CPU-bound at this rate (add --threads, or shards on more machines)",
            pct(t.work_cpu),
            lateness(t)
        ),
        _ => format!(
            "the pacing threads worked only {} of the time, yet {}: the host took their \
             CPU (other processes, a VM's steal, interrupts; pin with --cpus to an idle core)",
            pct(t.work_cpu),
            lateness(t)
        ),
    }
}

/// How late a stretch's requests left, in words that cannot read as a
/// contradiction: `late` counts the requests *due* in the stretch (by
/// intended time) that left over 1 ms after it, while the send-lag p99 is
/// of the sends *made* in it (by send time), so a request due at its end
/// and sent after it is late here and lags in the next interval.
fn lateness(t: &IntervalReport) -> String {
    format!(
        "{} of the {} requests due in it left over 1 ms after their intended time \
         (by intended time; the sends made in it had a send-lag {})",
        count(t.late),
        count(t.scheduled.max(t.sent)),
        lag_stat(t).replacen(' ', " of ", 1)
    )
}

/// The stretch's latency p50 in words, never a statistic over zero
/// samples: latency covers successes only, so a stretch without one says so.
fn latency_p50(t: &IntervalReport) -> String {
    if t.ok > 0 {
        format!("latency p50 up to {}", unit(t.p50, "ms"))
    } else {
        "no request succeeded".to_string()
    }
}

/// The stretch's send lag in words: its intervals' p99 (the largest);
/// where the stretch's sends are too few for a p99 by the one rule
/// ([`enough`]), so are each interval's, whose p99 is then its max: "max";
/// "none sent" without a send.
fn send_lag(t: &IntervalReport) -> String {
    if t.sent == 0 {
        "none sent".to_string()
    } else {
        format!("send-lag {}", lag_stat(t).replacen(' ', " up to ", 1))
    }
}

/// The stretch's largest send-lag statistic: `p99 X ms`, or `max X ms`
/// where its sends are too few for a p99 ([`send_lag`]).
fn lag_stat(t: &IntervalReport) -> String {
    let stat = if enough(t.sent, 0.99) { "p99" } else { "max" };
    format!("{stat} {}", unit(t.send_lag_p99, "ms"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An interval of 100 sends; `late` of them over 1 ms late; `full` of
    /// the `waited` with the pool at its limit.
    fn iv(
        start_s: f64,
        late: u64,
        dropped: u64,
        waited: u64,
        full: u64,
        work: f64,
    ) -> IntervalReport {
        IntervalReport {
            start_s,
            sent: 100,
            ok: 70,
            errors: 10,
            unsent: 0,
            p50: 1.0,
            p99: 2.0,
            max: 3.0,
            send_lag_p99: if late > 1 { 1.5 } else { 0.2 },
            dropped,
            waited,
            pool_full: full,
            scheduled: 100 + dropped,
            late,
            late_waiting: if waited > 0 { late } else { 0 },
            work_cpu: work,
            ..IntervalReport::default()
        }
    }

    /// An interval is behind when more than 1% of its due requests were
    /// delayed; it gets one cause (a saturated generator first, then
    /// drops, waits at the pool's limit, other waits, and lateness of a
    /// thread that was not working), and consecutive intervals of one cause
    /// are one stretch whose sentence carries the stretch's totals.
    #[test]
    fn stretches_and_causes_from_the_interval_series() {
        // Service times: 1 ms where the schedule was kept, 3 ms in the
        // waits below the limit (the server answered slower).
        let served = |ms: f64, i: IntervalReport| IntervalReport {
            service_mean_ms: Some(ms),
            ..i
        };
        let series = [
            served(1.0, iv(0.0, 1, 0, 0, 0, 0.95)), // 1 of 100 late: not material
            iv(1.0, 3, 0, 0, 0, 0.95),              // late and saturated
            iv(2.0, 30, 0, 0, 0, 0.92),             // still saturated: same stretch
            iv(3.0, 5, 0, 0, 0, 0.10),              // late, not working: descheduled
            iv(4.0, 3, 0, 3, 3, 0.10),              // waits at the limit: pool exhausted
            iv(5.0, 0, 3, 9, 9, 0.10),              // drops win over waits
            served(1.0, iv(6.0, 0, 1, 0, 0, 0.99)), // 1 drop of 101: not material
            iv(7.0, 4, 0, 4, 0, 0.93),              // waits of a saturated generator
            served(3.0, iv(8.0, 6, 0, 40, 0, 0.10)), // waits below the limit, slower
            served(3.0, iv(9.0, 3, 0, 7, 0, 0.10)), // still: one stretch
        ];
        let got: Vec<_> = behind(&series, None, None, 1.0)
            .into_iter()
            .map(|b| (b.from_s, b.until_s, b.intervals, b.cause))
            .collect();
        let want = [
            (1.0, 3.0, 2, "cpu_saturated"),
            (3.0, 4.0, 1, "descheduled"),
            (4.0, 5.0, 1, "pool_exhausted"),
            (5.0, 6.0, 1, "in_flight_limit"),
            (7.0, 8.0, 1, "cpu_saturated"),
            (8.0, 10.0, 2, "server_slower"),
        ];
        assert_eq!(got.len(), want.len(), "{got:?}");
        for (g, w) in got.iter().zip(want) {
            assert_eq!((g.0, g.1, g.2, g.3.as_str()), w);
        }
        let all = behind(&series, None, None, 1.0);
        assert_eq!(
            all[0].detail,
            "the pacing threads worked 95.00% of the time (busy-wait excluded; 33 of the 200 \
             requests due in it left over 1 ms after their intended time (by intended time; the \
             sends made in it had a send-lag p99 of 1.500 ms)): the generator is CPU-bound at \
             this rate (add --threads, or shards on more machines)"
        );
        // Late by intended time, lag by send time: the words say which, so
        // "150 of 300 late" beside a p99 under 1 ms is no contradiction.
        assert_eq!(
            all[1].detail,
            "the pacing threads worked only 10.00% of the time, yet 5 of the 100 requests due \
             in it left over 1 ms after their intended time (by intended time; the sends made \
             in it had a send-lag p99 of 1.500 ms): the host took their CPU (other processes, \
             a VM's steal, interrupts; pin with --cpus to an idle core)"
        );
        assert_eq!(
            all[2].detail,
            "3 requests found every connection busy with the pool at its limit and waited for \
             one, while 80 responses arrived: the server is slower than the connections allow \
             (raise --max-connections)"
        );
        assert_eq!(
            all[5].detail,
            "47 requests found every connection busy and waited for one, the pool below its \
             limit (latency p50 up to 1.000 ms, send-lag p99 up to 1.500 \
             ms): the server answered slower than before (service time mean 3.000 ms against \
             1.000 ms, the lowest mean of the 2 intervals before it: 3.000 times)"
        );
        // The last interval of a run ends one interval width after its start.
        let tail = behind(
            &[iv(0.0, 0, 0, 0, 0, 0.0), iv(0.5, 5, 0, 0, 0, 0.0)],
            None,
            None,
            1.0,
        );
        assert_eq!((tail[0].from_s, tail[0].until_s), (0.5, 1.0));
        assert!(behind(&[iv(0.0, 1, 0, 0, 0, 0.0)], None, None, 1.0).is_empty());
        // Waits after the generator was descheduled: the sends were late
        // before they waited, so the cause is the host, not the server.
        let caught_up = IntervalReport {
            late_waiting: 1,
            ..iv(0.0, 40, 0, 30, 0, 0.1)
        };
        assert_eq!(
            behind(&[caught_up], None, None, 1.0)[0].cause,
            "descheduled"
        );
        // Two late sends of 20 are over 1% but under 3: a hiccup.
        let small = IntervalReport {
            scheduled: 20,
            sent: 20,
            ..iv(0.0, 2, 0, 0, 0, 0.0)
        };
        assert!(behind(std::slice::from_ref(&small), None, None, 1.0).is_empty());
        assert_eq!(
            behind(&[IntervalReport { late: 3, ..small }], None, None, 1.0).len(),
            1
        );
    }

    /// A stretch with no success (or nothing sent) prints no latency (or
    /// send-lag) statistic: it would be over zero samples.
    #[test]
    fn no_statistic_over_zero_samples() {
        let failed = IntervalReport {
            ok: 0,
            errors: 100,
            p50: 0.0,
            ..iv(0.0, 6, 0, 40, 0, 0.1)
        };
        let b = behind(std::slice::from_ref(&failed), None, None, 1.0);
        assert_eq!(
            b[0].detail,
            "40 requests found every connection busy and waited for one, the pool below its \
             limit (no request succeeded, send-lag p99 up to 1.500 ms); no interval before \
             it to compare its service time with"
        );
        let unsent = IntervalReport {
            sent: 0,
            errors: 0,
            unsent: 100,
            scheduled: 100,
            ..failed
        };
        let b = behind(&[unsent], None, None, 1.0);
        assert_eq!(
            b[0].detail,
            "40 requests found every connection busy and waited for one, the pool below its \
             limit (no request succeeded, none sent); no interval before it to compare its \
             service time with"
        );
        let dropped = IntervalReport {
            ok: 0,
            ..iv(0.0, 0, 3, 9, 9, 0.1)
        };
        assert!(behind(&[dropped], None, None, 1.0)[0].detail.starts_with(
            "3 due requests were dropped above --max-in-flight (no request succeeded)"
        ),);
    }

    /// With `--max-concurrency`, waits with every connection busy are the
    /// cap's, not an exhausted pool; a series of one interval ends at the
    /// measured duration.
    #[test]
    fn waits_under_a_concurrency_cap_are_the_caps() {
        let waits = [iv(0.0, 30, 0, 30, 30, 0.1)];
        let b = behind(&waits, None, Some(4), 0.75);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].cause, "concurrency_limit");
        assert_eq!((b[0].from_s, b[0].until_s), (0.0, 0.75));
        assert!(
            b[0].detail
                .starts_with("30 requests waited for one of the --max-concurrency 4 slots"),
            "{}",
            b[0].detail
        );
        assert_eq!(behind(&waits, None, None, 0.75)[0].cause, "pool_exhausted");
    }

    /// A stretch's sentence counts every interval of it: two intervals
    /// that dropped 347 and 350 say 697.
    #[test]
    fn a_stretch_sentence_carries_its_totals() {
        let series = [iv(0.0, 0, 347, 0, 0, 0.1), iv(1.0, 0, 350, 0, 0, 0.1)];
        let b = behind(&series, None, None, 1.0);
        assert_eq!(b.len(), 1);
        assert!(
            b[0].detail.starts_with("697 due requests were dropped"),
            "{}",
            b[0].detail
        );
    }

    /// Waits below the pool's limit name the server only when its service
    /// time rose against the lowest mean of the intervals before it (an
    /// 820 ms stream every time, while a pool grows, is not "slower"):
    /// flat, the stretch says what was measured (`waited`), with both
    /// means; with no interval before it, that there is nothing to compare.
    #[test]
    fn a_server_is_named_slower_only_on_evidence() {
        let kept = IntervalReport {
            service_mean_ms: Some(820.0),
            ..iv(0.0, 0, 0, 0, 0, 0.1)
        };
        let waits = |ms: f64| IntervalReport {
            service_mean_ms: Some(ms),
            ..iv(1.0, 6, 0, 6, 0, 0.1)
        };
        let flat = behind(&[kept.clone(), waits(821.0)], None, None, 1.0);
        assert_eq!(flat.len(), 1);
        assert_eq!(flat[0].cause, "waited");
        assert_eq!(
            flat[0].detail,
            "6 requests found every connection busy and waited for one, the pool below its \
             limit (latency p50 up to 1.000 ms, send-lag p99 up to 1.500 ms); service time \
             mean 821.0 ms against 820.0 ms, the lowest mean of the 1 interval before it: not \
             slower"
        );
        // Just below 1.5 times: still no evidence; at it: slower.
        assert_eq!(
            behind(&[kept.clone(), waits(1229.9)], None, None, 1.0)[0].cause,
            "waited"
        );
        assert_eq!(
            behind(&[kept.clone(), waits(1230.0)], None, None, 1.0)[0].cause,
            "server_slower"
        );
        // The first interval has nothing before it.
        let first = behind(&[waits(5000.0)], None, None, 1.0);
        assert_eq!(first[0].cause, "waited");
        assert!(first[0]
            .detail
            .ends_with("no interval before it to compare its service time with"));
        // The stall of a server that kept its schedule before: 1 ms, then 40 ms.
        let ms1 = IntervalReport {
            service_mean_ms: Some(1.0),
            ..iv(0.0, 0, 0, 0, 0, 0.1)
        };
        let b = behind(
            &[
                ms1.clone(),
                ms1,
                IntervalReport {
                    start_s: 2.0,
                    ..waits(40.0)
                },
            ],
            None,
            None,
            1.0,
        );
        assert_eq!(b[0].cause, "server_slower");
        assert!(
            b[0].detail.ends_with(
                "the server answered slower than before (service time mean 40.00 ms against 1.000 \
             ms, the lowest mean of the 2 intervals before it: 40.00 times)"
            ),
            "{}",
            b[0].detail
        );
    }

    /// The 3 delayed requests a stretch needs count over the stretch: at 1
    /// req/s every send 138 ms late is behind (10 intervals of one late
    /// send each), while one or two late sends are still a hiccup.
    #[test]
    fn a_slow_run_late_every_second_is_behind() {
        let one = |i: usize, late: u64| IntervalReport {
            start_s: i as f64,
            scheduled: 1,
            sent: 1,
            ok: 1,
            late,
            send_lag_p99: 138.0,
            ..IntervalReport::default()
        };
        let late: Vec<_> = (0..10).map(|i| one(i, 1)).collect();
        let b = behind(&late, None, None, 10.0);
        assert_eq!(b.len(), 1, "{b:?}");
        assert_eq!(
            (
                b[0].from_s,
                b[0].until_s,
                b[0].intervals,
                b[0].cause.as_str()
            ),
            (0.0, 10.0, 10, "descheduled")
        );
        // 10 sends are too few for a p99: each interval's is its max.
        assert!(
            b[0].detail.ends_with(
                "10 of the 10 requests due in it left over 1 ms after their intended time (by \
                 intended time; the sends made in it had a send-lag max of 138.0 ms): the host \
                 took their CPU (other processes, a VM's steal, interrupts; pin with --cpus to \
                 an idle core)"
            ),
            "{}",
            b[0].detail
        );
        let two: Vec<_> = (0..10)
            .map(|i| one(i, u64::from(i == 3 || i == 4)))
            .collect();
        assert!(behind(&two, None, None, 10.0).is_empty());
        let three: Vec<_> = (0..10)
            .map(|i| one(i, u64::from((3..6).contains(&i))))
            .collect();
        assert_eq!(behind(&three, None, None, 10.0).len(), 1);
    }
}
