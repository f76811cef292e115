//! `--stages`, `--ramp`, `--trace` and `--trace-speed`: how the offered rate
//! evolves, read and checked before anything is sent. The stages and the
//! trace's offsets are owned here; core's schedule borrows them.

use std::path::Path;

use metronome_core::plan::{Profile, MAX_RATE};
use metronome_core::schedule::{
    Arrival, Ramp, Schedule, ScheduleError, Shard, Stage, Stages, Trace,
};

use crate::cli::{RampArg, RunArgs};
use crate::UsageError;

/// The run's profile, owned: what [`Load::profile`] lends to the plan.
#[derive(Clone, Debug, Default)]
pub(super) struct Load {
    /// `--stages`, parsed (empty without it).
    pub(super) stages: Vec<Stage>,
    /// The rate the first stage starts from.
    pub(super) start_rps: f64,
    pub(super) ramp: Option<Ramp>,
    /// `--trace`'s offsets, ns, sorted (empty without it).
    pub(super) trace: Vec<u64>,
    pub(super) trace_speed: f64,
    /// Whether a trace is replayed.
    pub(super) replay: bool,
    /// The plan's rate: `--rate`, the stages' peak, or the trace's mean.
    pub(super) rate: f64,
    /// The measured duration, ns (after the warmup).
    pub(super) duration_ns: u64,
    /// `-n N`: the plan's count, the arrivals of the warmup plus N
    /// ([`counted`]).
    pub(super) count: Option<u64>,
}

impl Load {
    /// The core profile, borrowing the stages or the offsets.
    pub(super) fn profile(&self) -> Profile<'_> {
        if let Some(ramp) = self.ramp {
            Profile::Stages(Stages {
                start_rps: self.start_rps,
                stages: &self.stages,
                ramp,
            })
        } else if self.replay {
            Profile::Trace(Trace {
                offsets_ns: &self.trace,
                speed: self.trace_speed,
            })
        } else {
            Profile::Steady
        }
    }
}

fn ns(d: std::time::Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

/// Reads `--stages` or `--trace` (or neither) into a [`Load`].
///
/// # Errors
/// A [`UsageError`] naming the flag, the stage or the trace line to fix.
pub(super) fn load(args: &RunArgs) -> Result<Load, UsageError> {
    let warmup_ns = ns(args.warmup);
    if let Some(text) = &args.stages {
        let stages = parse_stages(text)?;
        let ramp = match args.ramp {
            RampArg::Linear => Ramp::Linear,
            RampArg::Exponential => Ramp::Exponential,
        };
        let start_rps = args.rate.unwrap_or(0.0);
        let s = Stages {
            start_rps,
            stages: &stages,
            ramp,
        };
        s.validate().map_err(|e| stages_error(e, text, start_rps))?;
        let total = s.total_ns();
        if warmup_ns >= total {
            return Err(UsageError(format!(
                "--warmup {:?} covers all of --stages ({} s): the warmup is the stages' first \
                 part, so make it shorter",
                args.warmup,
                total as f64 / 1e9
            )));
        }
        let peak = s.peak_rps();
        if peak > MAX_RATE {
            return Err(UsageError(format!(
                "--stages reaches {peak} requests per second, above the limit of {MAX_RATE}: \
                 split it with --shard over several machines"
            )));
        }
        return Ok(Load {
            rate: peak,
            duration_ns: total - warmup_ns,
            ramp: Some(ramp),
            start_rps,
            stages,
            ..Load::default()
        });
    }
    if let Some(path) = &args.trace {
        let speed = args.trace_speed;
        if !(speed.is_finite() && speed > 0.0) {
            return Err(UsageError(format!(
                "--trace-speed {speed} must be a number above 0 (2 replays twice as fast)"
            )));
        }
        let offsets = read_trace(path)?;
        let trace = Trace {
            offsets_ns: &offsets,
            speed,
        };
        let end = match args.duration {
            Some(d) => warmup_ns.saturating_add(ns(d)),
            None => trace.end_ns(),
        };
        if warmup_ns >= end {
            return Err(UsageError(format!(
                "--warmup {:?} covers all of --trace {} (it ends at {} s)",
                args.warmup,
                path.display(),
                end as f64 / 1e9
            )));
        }
        // The mean rate over the replay (at least a second of it): it
        // sizes the connection pool.
        let span_s = (trace.end_ns() as f64 / 1e9).max(1.0);
        let rate = (offsets.len() as f64 / span_s).min(MAX_RATE);
        return Ok(Load {
            trace: offsets,
            trace_speed: speed,
            replay: true,
            rate,
            duration_ns: end - warmup_ns,
            ..Load::default()
        });
    }
    Ok(Load {
        rate: args.rate(),
        duration_ns: ns(args.duration()),
        ..Load::default()
    })
}

/// `-n N`: the plan's count (the warmup's arrivals plus N, so that N are
/// measured) and, without `--duration`, `--stages` or `--trace`, the
/// measured duration, through the N-th measured arrival: `N / rate` when
/// that holds all N (constant arrivals), else 1 ns past the N-th. An
/// invalid schedule is left to the plan's check, which words it.
pub(super) fn counted(args: &RunArgs, arrival: Arrival, load: &mut Load) {
    let Some(n) = args.count else { return };
    let timed = args.duration.is_some() || load.ramp.is_some() || load.replay;
    let (count, duration_ns) = count_and_duration(args, arrival, load, n, timed);
    load.count = Some(count);
    if let Some(d) = duration_ns {
        load.duration_ns = d;
    }
}

/// [`counted`]'s two numbers: the plan's count, and the measured duration
/// when the count sets it (not `timed`).
fn count_and_duration(
    args: &RunArgs,
    arrival: Arrival,
    load: &Load,
    n: u64,
    timed: bool,
) -> (u64, Option<u64>) {
    let warmup_ns = ns(args.warmup);
    // The whole schedule without an end (or up to its own end when timed).
    let end = if timed {
        warmup_ns.saturating_add(load.duration_ns)
    } else {
        u64::MAX
    };
    let whole = match load.profile() {
        Profile::Steady => Schedule::new(arrival, load.rate, args.seed, end, Shard::WHOLE),
        Profile::Stages(s) => Schedule::staged(arrival, s, args.seed, end, Shard::WHOLE),
        Profile::Trace(t) => Schedule::trace(t, end, Shard::WHOLE),
    };
    // An invalid schedule is refused with core's words when the plan is
    // checked.
    let Ok(mut whole) = whole else {
        return (n, None);
    };
    let mut before = 0u64;
    let mut first = None;
    for t in whole.by_ref() {
        if t >= warmup_ns {
            first = Some(t);
            break;
        }
        before += 1;
    }
    let count = before.saturating_add(n);
    if timed {
        return (count, None);
    }
    let last = match (first, n) {
        (Some(first), 1) => Some(first),
        (Some(_), _) => usize::try_from(n - 2).ok().and_then(|k| whole.nth(k)),
        (None, _) => None,
    };
    let Some(last) = last else {
        return (count, None);
    };
    let by_rate = (n as f64 * 1e9 / load.rate).ceil();
    let by_rate = if by_rate < u64::MAX as f64 {
        by_rate as u64
    } else {
        u64::MAX
    };
    (
        count,
        Some(by_rate.max((last + 1).saturating_sub(warmup_ns))),
    )
}

/// The one-line error of invalid stages.
fn stages_error(e: ScheduleError, text: &str, start: f64) -> UsageError {
    UsageError(match e {
        ScheduleError::ZeroExponentialRate if start <= 0.0 => format!(
            "--ramp exponential cannot start from {start} requests per second (a geometric \
             ramp never leaves 0): give the start rate with --rate, e.g. --rate 1"
        ),
        ScheduleError::ZeroExponentialRate => format!(
            "--ramp exponential cannot reach 0 requests per second in --stages '{text}': give \
             every stage a target above 0, or use --ramp linear"
        ),
        _ => format!(
            "bad --stages '{text}': the stages must last more than 0 s in all and reach a \
             rate above 0"
        ),
    })
}

/// The most stages `--stages` takes: each stage keeps a latency histogram
/// (58 KiB) per engine thread, and each request finds its stage by a walk
/// over them (a few ns a stage), a handful of times.
pub(super) const MAX_STAGES: usize = 64;

/// Parses `DURATION:RATE[,DURATION:RATE...]`.
///
/// # Errors
/// A [`UsageError`] naming the stage that does not parse.
pub(super) fn parse_stages(text: &str) -> Result<Vec<Stage>, UsageError> {
    let mut out = Vec::new();
    for (i, part) in text.split(',').enumerate() {
        let bad = |why: String| {
            UsageError(format!(
                "bad --stages '{text}': stage {} '{}' {why}; write DURATION:RATE,..., like \
                 30s:1000,1m:5000",
                i + 1,
                part.trim()
            ))
        };
        let (d, r) = part
            .split_once(':')
            .ok_or_else(|| bad("has no ':'".into()))?;
        let duration = crate::units::parse_duration(d).map_err(bad)?;
        let target: f64 = r
            .trim()
            .parse()
            .map_err(|_| bad(format!("has a rate '{}' that is not a number", r.trim())))?;
        if !(target.is_finite() && target >= 0.0) {
            return Err(bad("needs a rate of 0 or more requests per second".into()));
        }
        out.push(Stage {
            duration_ns: ns(duration),
            target_rps: target,
        });
    }
    if out.len() > MAX_STAGES {
        return Err(UsageError(format!(
            "--stages holds {} stages, more than {MAX_STAGES}: merge some",
            out.len()
        )));
    }
    Ok(out)
}

/// Reads a trace: one JSON object per line with `offset_ns` (integer ns) or
/// `timestamp` (ms, fractions allowed, rounded to the ns), sorted; blank
/// lines are skipped, other fields ignored.
///
/// # Errors
/// A [`UsageError`] naming the file and the line: unreadable, not a JSON
/// object, no (or a bad) offset, both fields, an offset that goes back, or
/// no offset at all.
pub(super) fn read_trace(path: &Path) -> Result<Vec<u64>, UsageError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("cannot read --trace {}: {e}", path.display())))?;
    parse_trace(&text).map_err(|e| UsageError(format!("--trace {}: {e}", path.display())))
}

/// [`read_trace`] on text; the error names the line.
pub(super) fn parse_trace(text: &str) -> Result<Vec<u64>, String> {
    let mut out: Vec<u64> = Vec::new();
    let mut last_line = 0;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("line {n} is not JSON ({e})"))?;
        let obj = v
            .as_object()
            .ok_or_else(|| format!("line {n} is not a JSON object"))?;
        let offset = match (obj.get("offset_ns"), obj.get("timestamp")) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "line {n} has both offset_ns and timestamp: give one"
                ))
            }
            (Some(o), None) => o.as_u64().ok_or_else(|| {
                format!("line {n}: offset_ns must be a whole number of ns, 0 or more (got {o})")
            })?,
            (None, Some(t)) => timestamp_ns(t).ok_or_else(|| {
                format!("line {n}: timestamp must be a number of ms, 0 or more (got {t})")
            })?,
            (None, None) => {
                return Err(format!("line {n} has no timestamp (ms) or offset_ns (ns)"))
            }
        };
        if let Some(&prev) = out.last() {
            if offset < prev {
                return Err(format!(
                    "line {n} goes back in time: {offset} ns after {prev} ns on line \
                     {last_line} (sort the trace by time)"
                ));
            }
        }
        out.push(offset);
        last_line = n;
    }
    if out.is_empty() {
        return Err(
            "holds no offset (one JSON object per line, with timestamp or offset_ns)".into(),
        );
    }
    Ok(out)
}

/// A `timestamp` in ms as ns: integers exactly, fractions rounded to the ns.
fn timestamp_ns(t: &serde_json::Value) -> Option<u64> {
    if let Some(ms) = t.as_u64() {
        return ms.checked_mul(1_000_000);
    }
    let ms = t.as_f64()?;
    let ns = (ms * 1e6).round();
    (ns.is_finite() && ns >= 0.0 && ns < u64::MAX as f64).then_some(ns as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_parse_and_name_the_bad_one() {
        let s = parse_stages("30s:1000, 1m:5000,0s:7.5").unwrap();
        assert_eq!(
            s,
            [
                Stage {
                    duration_ns: 30_000_000_000,
                    target_rps: 1000.0
                },
                Stage {
                    duration_ns: 60_000_000_000,
                    target_rps: 5000.0
                },
                Stage {
                    duration_ns: 0,
                    target_rps: 7.5
                },
            ]
        );
        let e = parse_stages("1s:10,2s").unwrap_err().0;
        assert!(e.contains("stage 2 '2s' has no ':'"), "{e}");
        let e = parse_stages("1s:10,2x:5").unwrap_err().0;
        assert!(e.contains("stage 2 '2x:5'"), "{e}");
        let e = parse_stages("1s:-1").unwrap_err().0;
        assert!(e.contains("rate of 0 or more"), "{e}");
        let e = parse_stages("1s:fast").unwrap_err().0;
        assert!(e.contains("'fast' that is not a number"), "{e}");
    }

    #[test]
    fn trace_lines_parse_exactly() {
        let t = "{\"timestamp\": 0}\n\n{\"timestamp\": 1.5, \"name\": \"a\"}\n\
                 {\"offset_ns\": 1500001}\n{\"timestamp\": 2, \"input_length\": 7}\n\
                 {\"timestamp\": 0.0000004}\n";
        let e = parse_trace(t).unwrap_err();
        assert!(
            e.starts_with("line 6 goes back in time: 0 ns after 2000000 ns on line 5"),
            "{e}"
        );
        let t = "{\"timestamp\": 0}\n{\"timestamp\": 1.5}\n{\"offset_ns\": 1500001}\n\
                 {\"timestamp\": 2}\n{\"timestamp\": 2.0000006}\n";
        assert_eq!(
            parse_trace(t).unwrap(),
            [0, 1_500_000, 1_500_001, 2_000_000, 2_000_001]
        );
    }

    #[test]
    fn malformed_trace_lines_are_named() {
        for (text, want) in [
            ("{\"timestamp\": 1}\nnot json\n", "line 2 is not JSON"),
            ("[1]\n", "line 1 is not a JSON object"),
            ("{\"name\": \"x\"}\n", "line 1 has no timestamp"),
            (
                "{\"offset_ns\": 1.5}\n",
                "line 1: offset_ns must be a whole number",
            ),
            (
                "{\"offset_ns\": -3}\n",
                "line 1: offset_ns must be a whole number",
            ),
            (
                "{\"timestamp\": \"3\"}\n",
                "line 1: timestamp must be a number",
            ),
            (
                "{\"timestamp\": -1}\n",
                "line 1: timestamp must be a number",
            ),
            ("{\"timestamp\": 1, \"offset_ns\": 1}\n", "line 1 has both"),
            ("\n\n", "holds no offset"),
        ] {
            let e = parse_trace(text).unwrap_err();
            assert!(e.starts_with(want), "{text:?}: {e}");
        }
    }
}
