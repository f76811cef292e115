//! Conversations: multi-turn sessions on the open-loop clock.
//!
//! A session's first turn is a request of the schedule, sent at its
//! intended time like any other. Each later turn is due when the previous
//! turn's answer has ended plus the think time: its intended time is
//! `end + think`, and its latency counts from there, so a server that
//! answers slowly delays the conversation (as a user's next question
//! waits for the answer) but never hides its own slowness in the next
//! turn's numbers.
//!
//! [`Turns`] is the plan's description (which request follows which, the
//! first turns the schedule cycles through, the think time); [`Turns::after`]
//! is the one rule for what follows the end of a turn, applied by the
//! [`Ledger`](crate::ledger::Ledger) when it records that end, so both
//! engines follow it. The ledger hands each follow-up to a
//! [`FollowUpSink`], storage the engine reserved before the clock, and
//! counts the sessions in [`Sessions`].

/// No turn follows (in [`Turns::next`]).
pub const NO_TURN: u32 = u32::MAX;

/// The plan's conversations: [`Turns::sessions`] is 0 when the run has none.
///
/// The plan's first `sessions` requests open a session each, in the order
/// the schedule cycles through them (the `j`-th request of the schedule
/// opens a session with request `j % sessions`); the later turns follow
/// them in the request list, linked by [`Turns::next`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Turns<'a> {
    /// How many sessions the plan describes: its first requests.
    pub sessions: usize,
    /// For each of the plan's requests, the request of the next turn of its
    /// session, or [`NO_TURN`] for a last turn.
    pub next: &'a [u32],
    /// Time between the end of an answer and the next turn, ns.
    pub think_ns: u64,
}

/// What follows the end of a turn ([`Turns::after`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// Not a conversation's turn (the run has no conversations).
    Nothing,
    /// The session's last turn ended well: the session is complete.
    Completed,
    /// The turn failed (or was never sent): the session ends here.
    Abandoned,
    /// The next turn would be due at or after the end of the schedule: the
    /// session is cut by the run's end.
    Cut,
    /// The next turn, due at `intended_ns`.
    Next {
        /// The next turn's intended send time, ns on the run's clock.
        intended_ns: u64,
        /// The next turn's request.
        request: usize,
    },
}

impl Turns<'_> {
    /// No conversations.
    pub const NONE: Turns<'static> = Turns {
        sessions: 0,
        next: &[],
        think_ns: 0,
    };

    /// Whether the run has conversations.
    pub const fn is_on(&self) -> bool {
        self.sessions > 0
    }

    /// The request opening the session of the schedule's `index`-th
    /// request, cycling through the sessions.
    pub fn first(&self, index: u64) -> usize {
        (index % self.sessions.max(1) as u64) as usize
    }

    /// Whether `request` opens a session.
    pub const fn is_first(&self, request: usize) -> bool {
        request < self.sessions
    }

    /// Requests per session, on average over the sessions (1 without
    /// conversations): how many requests a scheduled one brings.
    ///
    /// ```
    /// use metronome_core::turns::{Turns, NO_TURN};
    /// // Two sessions: requests 0 -> 2 -> 3, and 1.
    /// let t = Turns { sessions: 2, next: &[2, NO_TURN, 3, NO_TURN], think_ns: 0 };
    /// assert_eq!(t.mean_turns(), 2.0);
    /// assert_eq!(Turns::NONE.mean_turns(), 1.0);
    /// ```
    pub fn mean_turns(&self) -> f64 {
        if !self.is_on() {
            return 1.0;
        }
        let total: u64 = (0..self.sessions).map(|f| self.session_turns(f)).sum();
        total as f64 / self.sessions as f64
    }

    /// The turns of the session that `first` opens: 1 and one per later
    /// turn linked by [`Turns::next`] (1 without conversations).
    ///
    /// ```
    /// use metronome_core::turns::{Turns, NO_TURN};
    /// let t = Turns { sessions: 2, next: &[2, NO_TURN, 3, NO_TURN], think_ns: 0 };
    /// assert_eq!((t.session_turns(0), t.session_turns(1)), (3, 1));
    /// ```
    pub fn session_turns(&self, first: usize) -> u64 {
        let mut r = first;
        let mut n = 1u64;
        // A cycle in `next` is refused by `Plan::validate`; the bound
        // keeps this total even before validation.
        while let Some(&nx) = self.next.get(r) {
            if nx == NO_TURN || n > self.next.len() as u64 {
                break;
            }
            r = nx as usize;
            n += 1;
        }
        n
    }

    /// Whether the description is consistent for `requests` requests: every
    /// index in range, one `next` per request, and no session that loops.
    pub fn is_valid(&self, requests: usize) -> bool {
        if !self.is_on() {
            return self.next.is_empty();
        }
        if self.next.len() != requests
            || self.sessions > requests
            || self
                .next
                .iter()
                .any(|&n| n != NO_TURN && n as usize >= requests)
        {
            return false;
        }
        // Each session reaches its last turn within `requests` steps.
        (0..self.sessions).all(|f| {
            let mut r = f;
            for _ in 0..=requests {
                match self.next[r] {
                    NO_TURN => return true,
                    n => r = n as usize,
                }
            }
            false
        })
    }

    /// The rule for what follows the end of turn `request` at `end_ns`:
    /// `ok` when it succeeded; `horizon_ns` is the end of the schedule
    /// (a next turn due at or after it is not sent).
    ///
    /// ```
    /// use metronome_core::turns::{After, Turns, NO_TURN};
    /// let t = Turns { sessions: 1, next: &[1, NO_TURN], think_ns: 500 };
    /// assert_eq!(t.after(0, true, 1_000, 10_000), After::Next { intended_ns: 1_500, request: 1 });
    /// assert_eq!(t.after(0, false, 1_000, 10_000), After::Abandoned);
    /// assert_eq!(t.after(0, true, 9_500, 10_000), After::Cut);
    /// assert_eq!(t.after(1, true, 2_000, 10_000), After::Completed);
    /// assert_eq!(Turns::NONE.after(0, true, 1_000, 10_000), After::Nothing);
    /// ```
    pub fn after(&self, request: usize, ok: bool, end_ns: u64, horizon_ns: u64) -> After {
        let Some(&next) = self.next.get(request).filter(|_| self.is_on()) else {
            return After::Nothing;
        };
        if !ok {
            return After::Abandoned;
        }
        if next == NO_TURN {
            return After::Completed;
        }
        let intended_ns = end_ns.saturating_add(self.think_ns);
        if intended_ns >= horizon_ns {
            return After::Cut;
        }
        After::Next {
            intended_ns,
            request: next as usize,
        }
    }
}

/// What an engine sends next, of the schedule's next request (intended at
/// `schedule_ns`) and the earliest waiting turn (`turn_ns`), by `now_ns`
/// ([`next_due`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Due {
    /// The schedule's next request, intended at this time.
    Schedule(u64),
    /// The earliest waiting turn.
    Turn,
    /// Neither is due yet.
    Nothing,
}

/// The earliest of the schedule's next intended time and the earliest
/// waiting turn's: what an engine paces for.
///
/// ```
/// use metronome_core::turns::earliest;
/// assert_eq!(earliest(Some(5), Some(3)), Some(3));
/// assert_eq!(earliest(None, Some(3)), Some(3));
/// assert_eq!(earliest(Some(5), None), Some(5));
/// ```
pub fn earliest(schedule_ns: Option<u64>, turn_ns: Option<u64>) -> Option<u64> {
    match (schedule_ns, turn_ns) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Which to send now: the one due earlier (the schedule's on a tie), if
/// either is due by `now_ns`. Both engines send a backlog with it.
///
/// ```
/// use metronome_core::turns::{next_due, Due};
/// assert_eq!(next_due(Some(3), Some(3), 10), Due::Schedule(3));
/// assert_eq!(next_due(Some(4), Some(3), 10), Due::Turn);
/// assert_eq!(next_due(Some(11), Some(12), 10), Due::Nothing);
/// assert_eq!(next_due(None, Some(9), 10), Due::Turn);
/// ```
pub fn next_due(schedule_ns: Option<u64>, turn_ns: Option<u64>, now_ns: u64) -> Due {
    match (
        schedule_ns.filter(|&t| t <= now_ns),
        turn_ns.filter(|&t| t <= now_ns),
    ) {
        (None, None) => Due::Nothing,
        (Some(t), f) if f.map_or(true, |f| t <= f) => Due::Schedule(t),
        _ => Due::Turn,
    }
}

/// Where the ledger puts each next turn: storage the engine reserved
/// before the clock. An implementation must not allocate: when its room is
/// full it refuses (`false`), and the session counts as
/// [`Sessions::overflowed`].
pub trait FollowUpSink: core::fmt::Debug {
    /// The next turn `request`, due at `intended_ns`. False when no room is left.
    fn push(&mut self, intended_ns: u64, request: usize) -> bool;
}

/// How the run's sessions went, warm-up included (a session is a unit of
/// the workload, not of measurement: its turns are measured or not by their
/// own intended times). Merges by addition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sessions {
    /// Sessions opened (first turns that came due, sent or not).
    pub started: u64,
    /// Sessions whose every turn succeeded.
    pub completed: u64,
    /// Sessions ended by a failed, dropped or unsent turn.
    pub abandoned: u64,
    /// Sessions whose next turn would have been due after the schedule's end.
    pub cut: u64,
    /// Sessions whose next turn found no room in the engine's storage
    /// (reserved for every session the schedule can open; should stay 0).
    pub overflowed: u64,
    /// Later turns (not first ones) that came due.
    pub follow_ups: u64,
}

impl Sessions {
    /// No session yet.
    pub const fn new() -> Sessions {
        Sessions {
            started: 0,
            completed: 0,
            abandoned: 0,
            cut: 0,
            overflowed: 0,
            follow_ups: 0,
        }
    }

    /// Adds another thread's counts.
    pub fn merge(&mut self, other: &Sessions) {
        self.started += other.started;
        self.completed += other.completed;
        self.abandoned += other.abandoned;
        self.cut += other.cut;
        self.overflowed += other.overflowed;
        self.follow_ups += other.follow_ups;
    }

    /// Sessions still going when the run ended (their next turn in flight
    /// or waiting when the engine stopped): started minus every way a
    /// session ends.
    pub fn unfinished(&self) -> u64 {
        self.started
            .saturating_sub(self.completed + self.abandoned + self.cut + self.overflowed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity() {
        let next = [2, NO_TURN, NO_TURN];
        let ok = Turns {
            sessions: 2,
            next: &next,
            think_ns: 0,
        };
        assert!(ok.is_valid(3));
        assert!(!ok.is_valid(4), "one next per request");
        let looped = Turns {
            sessions: 1,
            next: &[1, 0],
            think_ns: 0,
        };
        assert!(!looped.is_valid(2));
        let out_of_range = Turns {
            sessions: 1,
            next: &[5, NO_TURN],
            think_ns: 0,
        };
        assert!(!out_of_range.is_valid(2));
        assert!(Turns::NONE.is_valid(7));
        assert!(!looped.is_first(1) && looped.is_first(0));
        assert_eq!(ok.first(3), 1);
    }

    #[test]
    fn unfinished_is_what_no_end_took() {
        let mut s = Sessions {
            started: 10,
            completed: 4,
            abandoned: 1,
            cut: 2,
            overflowed: 0,
            follow_ups: 20,
        };
        assert_eq!(s.unfinished(), 3);
        s.merge(&Sessions {
            started: 1,
            ..Sessions::default()
        });
        assert_eq!((s.started, s.unfinished()), (11, 4));
    }
}
