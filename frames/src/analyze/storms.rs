//! Demote storms: bursts of remote `demote_rq` on one glock, and ping-pong, where nodes
//! keep taking a glock from each other.
//!
//! Threshold: the kernel lets a node keep a glock it uses for at least the minimum hold
//! time (default HZ/5 = 200 ms, `m:` in glocks) before honouring a remote demote. So at
//! most about 1 s / 200 ms = 5 remote demotes per second is what a contended but healthy
//! glock sees at full speed; `min_demotes` (default 5) or more within `window_ns` (default
//! 1 s) means other nodes take the glock away as fast as the kernel allows: a storm.
//! Each node's trace has its own clock, so a storm's times are in the clock of the node
//! that saw it.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::rows::Ev;

/// One burst on one node.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Storm {
    pub glock: String,
    #[serde(rename = "type")]
    pub gltype: String,
    /// The node whose trace shows the burst (its clock gives start/end).
    pub node: String,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Remote demote requests in the burst.
    pub demotes: u64,
    /// Highest count in any one window.
    pub peak_per_window: u64,
    /// Every node that had a storm on this glock.
    pub nodes: Vec<String>,
}

/// Nodes taking a glock from each other.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PingPong {
    pub glock: String,
    #[serde(rename = "type")]
    pub gltype: String,
    /// Per node: how often it gave the glock up on a remote request and later got it back.
    pub cycles: BTreeMap<String, u64>,
    /// Modes the glock was re-granted in (EX, PR, ...).
    pub modes: Vec<String>,
}

#[derive(Debug, Clone, Copy)]
pub struct StormOptions {
    pub window_ns: u64,
    pub min_demotes: u64,
    /// Give-up-and-regain cycles each of at least two nodes needs for ping-pong.
    pub min_cycles: u64,
}

impl Default for StormOptions {
    fn default() -> Self {
        StormOptions {
            window_ns: 1_000_000_000,
            min_demotes: 5,
            min_cycles: 3,
        }
    }
}

fn gltype(glock: &str) -> String {
    glock
        .parse::<glockparse::GlockId>()
        .map(|g| g.glock_type().name().into_owned())
        .unwrap_or_default()
}

/// Maximal bursts in sorted timestamps: runs where every window of `w` starting at a
/// demote holds at least `min` demotes, merged when they overlap.
fn bursts(ts: &[u64], w: u64, min: u64) -> Vec<(u64, u64, u64, u64)> {
    let mut out: Vec<(u64, u64, u64, u64)> = Vec::new();
    let mut j = 0;
    for i in 0..ts.len() {
        if j < i {
            j = i;
        }
        while j + 1 < ts.len() && ts[j + 1] - ts[i] < w {
            j += 1;
        }
        let n = (j - i + 1) as u64;
        if n >= min {
            let (s, e) = (ts[i], ts[j]);
            match out.last_mut() {
                Some(last) if s <= last.1 => {
                    last.1 = last.1.max(e);
                    last.3 = last.3.max(n);
                }
                _ => out.push((s, e, 0, n)),
            }
        }
    }
    for b in &mut out {
        b.2 = ts.iter().filter(|t| **t >= b.0 && **t <= b.1).count() as u64;
    }
    out
}

pub fn storms(events: &[Ev], o: StormOptions) -> Vec<Storm> {
    let mut by: BTreeMap<(&str, &str), Vec<u64>> = BTreeMap::new();
    for e in events
        .iter()
        .filter(|e| e.event == "demote_rq" && e.remote == Some(true))
    {
        by.entry((e.glock.as_str(), e.node.as_str()))
            .or_default()
            .push(e.ts_ns);
    }
    let mut out = Vec::new();
    for ((glock, node), mut ts) in by {
        ts.sort_unstable();
        for (s, e, n, peak) in bursts(&ts, o.window_ns, o.min_demotes) {
            out.push(Storm {
                glock: glock.to_string(),
                gltype: gltype(glock),
                node: node.to_string(),
                start_ns: s,
                end_ns: e,
                demotes: n,
                peak_per_window: peak,
                nodes: Vec::new(),
            });
        }
    }
    let mut nodes: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for s in &out {
        nodes
            .entry(s.glock.clone())
            .or_default()
            .insert(s.node.clone());
    }
    for s in &mut out {
        s.nodes = nodes[&s.glock].iter().cloned().collect();
    }
    out.sort_by(|a, b| {
        b.demotes
            .cmp(&a.demotes)
            .then(a.glock.cmp(&b.glock))
            .then(a.node.cmp(&b.node))
    });
    out
}

fn rank(mode: &str) -> u8 {
    match mode {
        "EX" => 4,
        "PW" => 3,
        "PR" | "CW" => 2,
        "CR" => 1,
        _ => 0,
    }
}

pub fn ping_pong(events: &[Ev], o: StormOptions) -> Vec<PingPong> {
    // Per (glock, node): after a remote demote, a state change down, then one back up.
    #[derive(Default)]
    struct S {
        demoted: bool,
        lowered: bool,
        cycles: u64,
    }
    let mut st: BTreeMap<(&str, &str), S> = BTreeMap::new();
    let mut modes: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for e in events {
        match e.event.as_str() {
            "demote_rq" if e.remote == Some(true) => {
                st.entry((&e.glock, &e.node)).or_default().demoted = true
            }
            "glock_state_change" => {
                let s = st.entry((&e.glock, &e.node)).or_default();
                let (from, to) = (
                    e.from.as_deref().unwrap_or(""),
                    e.to.as_deref().unwrap_or(""),
                );
                if s.demoted && rank(to) < rank(from) {
                    s.lowered = true;
                    s.demoted = false;
                } else if s.lowered && rank(to) > rank(from) {
                    s.lowered = false;
                    s.cycles += 1;
                    modes.entry(&e.glock).or_default().insert(to.to_string());
                }
            }
            _ => {}
        }
    }
    let mut per: BTreeMap<&str, BTreeMap<String, u64>> = BTreeMap::new();
    for ((g, n), s) in &st {
        if s.cycles > 0 {
            per.entry(g).or_default().insert(n.to_string(), s.cycles);
        }
    }
    let mut out: Vec<PingPong> = per
        .into_iter()
        .filter(|(_, c)| c.values().filter(|n| **n >= o.min_cycles).count() >= 2)
        .map(|(g, c)| PingPong {
            glock: g.to_string(),
            gltype: gltype(g),
            cycles: c,
            modes: modes
                .get(g)
                .map(|m| m.iter().cloned().collect())
                .unwrap_or_default(),
        })
        .collect();
    out.sort_by(|a, b| {
        b.cycles
            .values()
            .sum::<u64>()
            .cmp(&a.cycles.values().sum::<u64>())
            .then(a.glock.cmp(&b.glock))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_merge_overlapping_windows() {
        let s = 1_000_000_000;
        let ts = [0, s / 10, 2 * s / 10, 3 * s / 10, 4 * s / 10, 5 * s, 20 * s];
        let b = bursts(&ts, s, 5);
        assert_eq!(b, vec![(0, 4 * s / 10, 5, 5)]);
        assert!(bursts(&ts, s, 6).is_empty());
        let dense: Vec<u64> = (0..30).map(|i| i * s / 10).collect();
        let b = bursts(&dense, s, 5);
        assert_eq!(b.len(), 1);
        assert_eq!((b[0].0, b[0].1, b[0].2, b[0].3), (0, 29 * s / 10, 30, 10));
    }
}
