//! Where an open-loop run fell behind its schedule, and why: the
//! per-interval materiality rule, one cause per interval, and stretches of
//! consecutive intervals with their totals (`generator.behind`;
//! docs/report.md, "Behind schedule").

use metronome_core::plan::Plan;

use super::num::{count, pct, unit};
use super::{Behind, IntervalReport};

/// Work share from which the pacing threads count as saturated.
const SATURATED: f64 = 0.9;

/// The share of an interval's due requests (by intended time) that must
/// have been delayed (dropped, sent more than 1 ms late, or never sent) for
/// the interval to
/// count as behind its schedule: 1%. Fewer moved none of its percentiles
/// up to p99.
const MATERIAL: f64 = 0.01;

/// Fewer delayed requests than this never make an interval behind,
/// whatever its size: one or two late sends in a 20-request second are a
/// hiccup, not a finding.
const MIN_DELAYED: f64 = 3.0;

/// The stretches of the run in which the open loop could not keep its
/// schedule, and why, from the interval series: an interval is behind when
/// more than 1% of its due requests, and at least 3, were dropped, sent more than 1 ms late
/// (core's `LATE_NS`; a wait for a connection included) or never sent;
/// consecutive intervals of the same cause form one stretch, and its
/// sentence carries the stretch's totals. `plan` (absent in a merge) puts
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
    // Runs of consecutive intervals with one cause: (cause, first, last).
    let mut runs: Vec<(&'static str, usize, usize)> = Vec::new();
    for (i, iv) in intervals.iter().enumerate() {
        let Some(cause) = cause(iv, cap.is_some()) else {
            continue;
        };
        match runs.last_mut() {
            Some((c, _, last)) if *c == cause && *last + 1 == i => *last = i,
            _ => runs.push((cause, i, i)),
        }
    }
    runs.into_iter()
        .map(|(cause, first, last)| {
            let stretch = &intervals[first..=last];
            let until_s = intervals
                .get(last + 1)
                .map_or(intervals[last].start_s + width, |next| next.start_s);
            Behind {
                from_s: intervals[first].start_s,
                until_s,
                intervals: stretch.len() as u64,
                cause: cause.to_string(),
                detail: detail(cause, &total(stretch), plan, cap),
            }
        })
        .collect()
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
/// [`behind`] for the materiality rule).
pub(crate) fn cause(iv: &IntervalReport, capped: bool) -> Option<&'static str> {
    // Reports from before `scheduled` was kept: the sends stand in.
    let due = iv.scheduled.max(iv.sent + iv.dropped) as f64;
    let delayed = (iv.dropped + iv.late + iv.unsent) as f64;
    if due == 0.0 || delayed <= MATERIAL * due || delayed < MIN_DELAYED {
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
    } else if waits_dominate(iv) {
        Some("server_slower")
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

/// The sentence of a stretch, with its totals (`t`, see [`total`]).
fn detail(cause: &str, t: &IntervalReport, plan: Option<&Plan<'_>>, cap: Option<u32>) -> String {
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
             limit ({}{}): the server answered slower than before",
            count(t.waited),
            latency_p50(t),
            if t.sent > 0 {
                format!(", send-lag p99 up to {}", unit(t.send_lag_p99, "ms"))
            } else {
                ", none sent".to_string()
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
         (by intended time; the sends made in it had a send-lag p99 of {})",
        count(t.late),
        count(t.scheduled.max(t.sent)),
        unit(t.send_lag_p99, "ms")
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
        let series = [
            iv(0.0, 1, 0, 0, 0, 0.95),  // 1 of 100 late: not material
            iv(1.0, 3, 0, 0, 0, 0.95),  // late and saturated
            iv(2.0, 30, 0, 0, 0, 0.92), // still saturated: same stretch
            iv(3.0, 5, 0, 0, 0, 0.10),  // late, not working: descheduled
            iv(4.0, 3, 0, 3, 3, 0.10),  // waits at the limit: pool exhausted
            iv(5.0, 0, 3, 9, 9, 0.10),  // drops win over waits
            iv(6.0, 0, 1, 0, 0, 0.99),  // 1 drop of 101: not material
            iv(7.0, 4, 0, 4, 0, 0.93),  // waits of a saturated generator
            iv(8.0, 6, 0, 40, 0, 0.10), // waits below the limit
            iv(9.0, 3, 0, 7, 0, 0.10),  // still: one stretch
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
             ms): the server answered slower than before"
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
             limit (no request succeeded, send-lag p99 up to 1.500 ms): \
             the server answered slower than before"
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
             limit (no request succeeded, none sent): the server \
             answered slower than before"
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
}
