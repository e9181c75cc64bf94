//! Hold and wait times from traces, per node and glock:
//! * wait: `glock_queue` (queue MODE) → the next `promote` in that mode (FIFO per glock);
//! * hold: `promote` → the `dequeue` in that mode (the same pid first, else the oldest);
//! * demote latency: the first `demote_rq` → the glock's next `glock_state_change`.
//!
//! A dequeue with no granted holder to match ends a waiting one instead (a failed try
//! lock). What is left at the end of the trace is still waiting or still held.

use std::collections::{BTreeMap, HashMap, VecDeque};

use gfs2stats::dist::{Distribution, Recorder};
use serde::Serialize;

use super::rows::Ev;

/// Durations of one kind, with their sum.
#[derive(Debug, Clone, Default)]
pub struct Durations {
    pub samples: Recorder,
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
    #[serde(flatten)]
    pub dist: Distribution,
    pub total_ns: u128,
}

/// Per glock (or type): wait, hold and demote latency.
#[derive(Debug, Clone, Default)]
pub struct Times {
    pub wait: Durations,
    pub hold: Durations,
    pub demote: Durations,
    /// Holders still waiting / still held when the trace ended.
    pub waiting_at_end: u64,
    pub held_at_end: u64,
    /// Dequeues of holders that were never granted (failed try locks).
    pub failed: u64,
}

#[derive(Default)]
struct GlockState {
    waiting: VecDeque<(u64, String, i64)>,
    granted: Vec<(u64, String, i64)>,
    demote_since: Option<u64>,
}

/// Pairs the events of every node. `events` must be in trace order per node.
pub fn pair(events: &[Ev]) -> BTreeMap<String, Times> {
    let mut out: BTreeMap<String, Times> = BTreeMap::new();
    let mut st: HashMap<(&str, &str), GlockState> = HashMap::new();
    for e in events {
        let s = st.entry((e.node.as_str(), e.glock.as_str())).or_default();
        let t = out.entry(e.glock.clone()).or_default();
        match e.event.as_str() {
            "glock_queue" => {
                let mode = e.state.clone().unwrap_or_default();
                if e.queue == Some(true) {
                    s.waiting.push_back((e.ts_ns, mode, e.pid));
                } else if let Some(i) = s
                    .granted
                    .iter()
                    .position(|(_, m, p)| *m == mode && *p == e.pid)
                    .or_else(|| s.granted.iter().position(|(_, m, _)| *m == mode))
                {
                    let (since, _, _) = s.granted.remove(i);
                    t.hold.add(e.ts_ns.saturating_sub(since));
                } else if let Some(i) = s.waiting.iter().position(|(_, m, _)| *m == mode) {
                    s.waiting.remove(i);
                    t.failed += 1;
                }
            }
            "promote" => {
                let mode = e.state.clone().unwrap_or_default();
                if let Some(i) = s.waiting.iter().position(|(_, m, _)| *m == mode) {
                    let (since, m, pid) = s.waiting.remove(i).expect("index from position");
                    t.wait.add(e.ts_ns.saturating_sub(since));
                    s.granted.push((e.ts_ns, m, pid));
                }
            }
            "demote_rq" => {
                s.demote_since.get_or_insert(e.ts_ns);
            }
            "glock_state_change" => {
                if let Some(since) = s.demote_since.take() {
                    t.demote.add(e.ts_ns.saturating_sub(since));
                }
            }
            _ => {}
        }
    }
    for ((_, glock), s) in st {
        let t = out.entry(glock.to_string()).or_default();
        t.waiting_at_end += s.waiting.len() as u64;
        t.held_at_end += s.granted.len() as u64;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ts: u64, event: &str, state: &str, queue: Option<bool>, pid: i64) -> Ev {
        Ev {
            node: "n".into(),
            ts_ns: ts,
            pid,
            event: event.into(),
            glock: "2/1".into(),
            from: None,
            to: None,
            state: Some(state.into()),
            flags: None,
            remote: None,
            queue,
            lock_time: None,
        }
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
