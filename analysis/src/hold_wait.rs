//! Hold and wait times from traces, per node and glock:
//! * wait: `glock_queue` (queue MODE) → the next `promote` in that mode (FIFO per glock);
//! * hold: `promote` → the `dequeue` in that mode (the same pid first, else the oldest);
//! * demote latency: the first `demote_rq` → the glock's next `glock_state_change`.
//!
//! A dequeue with no granted holder to match ends a waiting one instead (a failed try
//! lock). What is left at the end of the trace is still waiting or still held.

use std::collections::VecDeque;

use gfs2stats::dist::{Distribution, Recorder};
use serde::Serialize;

use glockparse::GlockId;

use super::GlockMap;
use traceparse::{DlmMode, Gfs2Event};

/// Durations of one kind, with their sum.
#[derive(Debug, Clone, Default)]
pub struct Durations {
    /// The durations.
    pub samples: Recorder,
    /// Their sum, ns.
    pub total_ns: u128,
}

impl Durations {
    fn add(&mut self, ns: u64) {
        self.samples.record(ns);
        self.total_ns += u128::from(ns);
    }

    /// Adds another's samples and total.
    pub fn merge(&mut self, o: &Durations) {
        self.samples.merge(&o.samples);
        self.total_ns += o.total_ns;
    }

    /// The distribution and the total.
    pub fn summary(&self) -> DurationSummary {
        DurationSummary {
            dist: self.samples.distribution(),
            total_ns: self.total_ns,
        }
    }
}

/// count / p50 / p90 / p99 / max / mean and the total, ns.
#[derive(Debug, Clone, Copy, Serialize, Default, PartialEq)]
pub struct DurationSummary {
    /// The distribution.
    #[serde(flatten)]
    pub dist: Distribution,
    /// The sum, ns.
    pub total_ns: u128,
}

/// Per glock (or type): wait, hold and demote latency.
#[derive(Debug, Clone, Default)]
pub struct Times {
    /// Queue to promote.
    pub wait: Durations,
    /// Promote to dequeue.
    pub hold: Durations,
    /// Demote request to the state change that served it.
    pub demote: Durations,
    /// Holders still waiting / still held when the trace ended.
    pub waiting_at_end: u64,
    /// Holders still held when the trace ended.
    pub held_at_end: u64,
    /// Dequeues of holders that were never granted (failed try locks).
    pub failed: u64,
}

/// What one event ended, by the pairing rules above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// A wait: queue to promote, ns.
    Wait(u64),
    /// A hold: promote to dequeue, ns.
    Hold(u64),
    /// A demote: request to state change, ns.
    Demote(u64),
    /// A dequeue of a holder never granted (a failed try lock).
    Failed,
}

/// One glock's holders waiting and granted, and its pending demote, as its events pair
/// them: the one pairing rule, for a whole trace ([`Pairing`]) or a stream that never ends
/// (`glk exporter --trace`, which keeps a state only while a glock has holders).
#[derive(Debug, Default)]
pub struct GlockState {
    waiting: VecDeque<(u64, DlmMode, i64)>,
    granted: Vec<(u64, DlmMode, i64)>,
    demote_since: Option<u64>,
}

impl GlockState {
    /// Feeds one event of the glock (at `ts_ns`, by `pid`); what it ended, if anything.
    pub fn step(&mut self, ts_ns: u64, pid: i64, e: &Gfs2Event) -> Option<Ended> {
        match *e {
            Gfs2Event::GlockQueue { queue, state, .. } => {
                if queue {
                    self.waiting.push_back((ts_ns, state, pid));
                    None
                } else if let Some(i) = self
                    .granted
                    .iter()
                    .position(|(_, m, p)| *m == state && *p == pid)
                    .or_else(|| self.granted.iter().position(|(_, m, _)| *m == state))
                {
                    let (since, _, _) = self.granted.remove(i);
                    Some(Ended::Hold(ts_ns.saturating_sub(since)))
                } else if let Some(i) = self.waiting.iter().position(|(_, m, _)| *m == state) {
                    self.waiting.remove(i);
                    Some(Ended::Failed)
                } else {
                    None
                }
            }
            Gfs2Event::Promote { state, .. } => {
                let i = self.waiting.iter().position(|(_, m, _)| *m == state)?;
                let (since, m, pid) = self.waiting.remove(i).expect("index from position");
                self.granted.push((ts_ns, m, pid));
                Some(Ended::Wait(ts_ns.saturating_sub(since)))
            }
            Gfs2Event::DemoteRq { .. } => {
                self.demote_since.get_or_insert(ts_ns);
                None
            }
            Gfs2Event::GlockStateChange { .. } => self
                .demote_since
                .take()
                .map(|since| Ended::Demote(ts_ns.saturating_sub(since))),
            _ => None,
        }
    }

    /// Nothing waits, is held or is being demoted: the state can be dropped.
    pub fn is_idle(&self) -> bool {
        self.waiting.is_empty() && self.granted.is_empty() && self.demote_since.is_none()
    }
}

/// One node's pairing, fed its events in time order.
#[derive(Default)]
pub struct Pairing {
    st: GlockMap<GlockState>,
    /// Per glock (every glock with an event has an entry).
    pub times: GlockMap<Times>,
}

impl Pairing {
    /// Feeds one event of `glock`.
    pub fn add(&mut self, ts_ns: u64, pid: i64, glock: GlockId, e: &Gfs2Event) {
        let s = self.st.entry(glock).or_default();
        let t = self.times.entry(glock).or_default();
        match s.step(ts_ns, pid, e) {
            Some(Ended::Wait(ns)) => t.wait.add(ns),
            Some(Ended::Hold(ns)) => t.hold.add(ns),
            Some(Ended::Demote(ns)) => t.demote.add(ns),
            Some(Ended::Failed) => t.failed += 1,
            None => {}
        }
    }

    /// Counts what is still waiting or held at the end of the trace.
    pub fn finish(&mut self) {
        for (glock, s) in self.st.drain() {
            let t = self.times.entry(glock).or_default();
            t.waiting_at_end += s.waiting.len() as u64;
            t.held_at_end += s.granted.len() as u64;
        }
    }
}

impl Times {
    /// Adds another's samples and counts.
    pub fn merge(&mut self, t: &Times) {
        self.wait.merge(&t.wait);
        self.hold.merge(&t.hold);
        self.demote.merge(&t.demote);
        self.waiting_at_end += t.waiting_at_end;
        self.held_at_end += t.held_at_end;
        self.failed += t.failed;
    }
}

impl Pairing {
    /// Moves a finished node's times into this one (which then holds both).
    pub fn absorb(&mut self, other: &mut Pairing) {
        for (g, t) in other.times.drain() {
            match self.times.get_mut(&g) {
                Some(mine) => mine.merge(&t),
                None => {
                    self.times.insert(g, t);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(
        ts: u64,
        event: &str,
        state: &str,
        queue: Option<bool>,
        pid: i64,
    ) -> (u64, i64, Gfs2Event) {
        let glock = GlockId::new(2, 1);
        let state = DlmMode::parse(state.as_bytes()).unwrap();
        let e = match event {
            "glock_queue" => Gfs2Event::GlockQueue {
                glock,
                queue: queue.unwrap(),
                state,
            },
            "promote" => Gfs2Event::Promote {
                glock,
                state,
                first: None,
            },
            "demote_rq" => Gfs2Event::DemoteRq {
                glock,
                from: state,
                to: DlmMode::NL,
                flags: Default::default(),
                remote: Some(true),
            },
            _ => Gfs2Event::GlockStateChange {
                glock,
                from: state,
                to: DlmMode::NL,
                target: DlmMode::NL,
                demote: DlmMode::NL,
                flags: Default::default(),
            },
        };
        (ts, pid, e)
    }

    fn pair(evs: &[(u64, i64, Gfs2Event)]) -> GlockMap<Times> {
        let mut p = Pairing::default();
        for (ts, pid, e) in evs {
            p.add(*ts, *pid, e.glock().unwrap(), e);
        }
        p.finish();
        p.times
    }

    #[test]
    fn queue_promote_dequeue() {
        let evs = vec![
            ev(100, "glock_queue", "EX", Some(true), 1),
            ev(150, "glock_queue", "EX", Some(true), 2),
            ev(400, "promote", "EX", None, 9),
            ev(1400, "glock_queue", "EX", Some(false), 1),
            ev(1500, "promote", "EX", None, 9),
            ev(1600, "demote_rq", "EX", None, 9),
            ev(1650, "demote_rq", "EX", None, 9),
            ev(1900, "glock_state_change", "EX", None, 9),
            ev(2000, "glock_queue", "PR", Some(true), 3),
            ev(2100, "glock_queue", "PR", Some(false), 3),
        ];
        let t = &pair(&evs)[&"2/1".parse().unwrap()];
        assert_eq!(t.wait.summary().dist.count, 2);
        assert_eq!(t.wait.total_ns, 300 + 1350);
        assert_eq!((t.hold.summary().dist.count, t.hold.total_ns), (1, 1000));
        assert_eq!((t.demote.summary().dist.count, t.demote.total_ns), (1, 300));
        assert_eq!((t.failed, t.held_at_end, t.waiting_at_end), (1, 1, 0));
    }
}
