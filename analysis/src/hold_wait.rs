//! Hold and wait times from traces, per node and glock:
//! * wait: `glock_queue` (queue MODE) → the next `promote` in that mode (FIFO per glock);
//! * hold: `promote` → the `dequeue` in that mode (the same pid first, else the oldest);
//! * demote latency: the first `demote_rq` → the glock's next `glock_state_change`.
//!
//! A dequeue with no granted holder to match ends a waiting one instead (a failed try
//! lock). What is left at the end of the trace is still waiting or still held.

use std::collections::{BTreeMap, VecDeque};

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

#[derive(Default)]
struct GlockState {
    waiting: VecDeque<(u64, DlmMode, i64)>,
    granted: Vec<(u64, DlmMode, i64)>,
    demote_since: Option<u64>,
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
        match *e {
            Gfs2Event::GlockQueue { queue, state, .. } => {
                if queue {
                    s.waiting.push_back((ts_ns, state, pid));
                } else if let Some(i) = s
                    .granted
                    .iter()
                    .position(|(_, m, p)| *m == state && *p == pid)
                    .or_else(|| s.granted.iter().position(|(_, m, _)| *m == state))
                {
                    let (since, _, _) = s.granted.remove(i);
                    t.hold.add(ts_ns.saturating_sub(since));
                } else if let Some(i) = s.waiting.iter().position(|(_, m, _)| *m == state) {
                    s.waiting.remove(i);
                    t.failed += 1;
                }
            }
            Gfs2Event::Promote { state, .. } => {
                if let Some(i) = s.waiting.iter().position(|(_, m, _)| *m == state) {
                    let (since, m, pid) = s.waiting.remove(i).expect("index from position");
                    t.wait.add(ts_ns.saturating_sub(since));
                    s.granted.push((ts_ns, m, pid));
                }
            }
            Gfs2Event::DemoteRq { .. } => {
                s.demote_since.get_or_insert(ts_ns);
            }
            Gfs2Event::GlockStateChange { .. } => {
                if let Some(since) = s.demote_since.take() {
                    t.demote.add(ts_ns.saturating_sub(since));
                }
            }
            _ => {}
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

    /// The times per glock, by its name (`TYPE/hex`).
    pub fn by_name(&self) -> BTreeMap<String, Times> {
        self.times
            .iter()
            .map(|(g, t)| (g.to_string(), t.clone()))
            .collect()
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

    fn pair(evs: &[(u64, i64, Gfs2Event)]) -> BTreeMap<String, Times> {
        let mut p = Pairing::default();
        for (ts, pid, e) in evs {
            p.add(*ts, *pid, e.glock().unwrap(), e);
        }
        p.finish();
        p.by_name()
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
        let t = &pair(&evs)["2/1"];
        assert_eq!(t.wait.summary().dist.count, 2);
        assert_eq!(t.wait.total_ns, 300 + 1350);
        assert_eq!((t.hold.summary().dist.count, t.hold.total_ns), (1, 1000));
        assert_eq!((t.demote.summary().dist.count, t.demote.total_ns), (1, 300));
        assert_eq!((t.failed, t.held_at_end, t.waiting_at_end), (1, 1, 0));
    }
}
