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

use glockparse::GlockId;

use super::GlockMap;
use serde::Serialize;
use traceparse::Gfs2Event;

/// One burst on one node.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Storm {
    /// The glock.
    pub glock: String,
    /// Its type's name.
    #[serde(rename = "type")]
    pub gltype: String,
    /// The node whose trace shows the burst (its clock gives start/end).
    pub node: String,
    /// The first demote of the burst (the node's trace clock), ns.
    pub start_ns: u64,
    /// The last, ns.
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
    /// The glock.
    pub glock: String,
    /// Its type's name.
    #[serde(rename = "type")]
    pub gltype: String,
    /// Per node: how often it gave the glock up on a remote request and later got it back.
    pub cycles: BTreeMap<String, u64>,
    /// Modes the glock was re-granted in (EX, PR, ...).
    pub modes: Vec<String>,
}

/// What makes a demote storm.
#[derive(Debug, Clone, Copy)]
pub struct StormOptions {
    /// The window demotes are counted in, ns.
    pub window_ns: u64,
    /// Remote demotes within one window that make a storm.
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

/// Per (glock, node): give-up/regain state after a remote demote.
#[derive(Default)]
struct Cycles {
    demoted: bool,
    lowered: bool,
    cycles: u64,
}

/// One node's remote demotes and ping-pong state, fed its events in time order.
#[derive(Default)]
pub struct NodeDemotes {
    /// Times of remote `demote_rq`, per glock.
    remote: GlockMap<Vec<u64>>,
    cycles: GlockMap<Cycles>,
    /// The modes regained, per glock.
    modes: GlockMap<BTreeSet<&'static str>>,
}

impl NodeDemotes {
    /// The times of the remote demote requests, per glock (the node's trace clock).
    pub fn remote_times(&self) -> &GlockMap<Vec<u64>> {
        &self.remote
    }

    /// Feeds one event of `glock`.
    pub fn add(&mut self, ts_ns: u64, glock: GlockId, e: &Gfs2Event) {
        match *e {
            Gfs2Event::DemoteRq {
                remote: Some(true), ..
            } => {
                self.remote.entry(glock).or_default().push(ts_ns);
                self.cycles.entry(glock).or_default().demoted = true;
            }
            Gfs2Event::GlockStateChange { from, to, .. } => {
                let s = self.cycles.entry(glock).or_default();
                if s.demoted && to.rank() < from.rank() {
                    s.lowered = true;
                    s.demoted = false;
                } else if s.lowered && to.rank() > from.rank() {
                    s.lowered = false;
                    s.cycles += 1;
                    self.modes.entry(glock).or_default().insert(to.as_str());
                }
            }
            _ => {}
        }
    }
}

/// Bursts of remote demotes per glock and node.
pub fn storms(nodes: &[(&str, &NodeDemotes)], o: StormOptions) -> Vec<Storm> {
    let mut by: BTreeMap<(GlockId, &str), Vec<u64>> = BTreeMap::new();
    for (node, d) in nodes {
        for (g, ts) in &d.remote {
            by.entry((*g, node)).or_default().extend(ts);
        }
    }
    let mut out = Vec::new();
    for ((glock, node), mut ts) in by {
        ts.sort_unstable();
        for (s, e, n, peak) in bursts(&ts, o.window_ns, o.min_demotes) {
            out.push(Storm {
                glock: glock.to_string(),
                gltype: glock.glock_type().name().into_owned(),
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
    // Most demotes first, then by glock and node.
    out.sort_by(|a, b| (b.demotes, &a.glock, &a.node).cmp(&(a.demotes, &b.glock, &b.node)));
    out
}

/// Glocks that two or more nodes each gave up and got back `min_cycles` times or more.
pub fn ping_pong(nodes: &[(&str, &NodeDemotes)], o: StormOptions) -> Vec<PingPong> {
    let mut per: BTreeMap<GlockId, BTreeMap<String, u64>> = BTreeMap::new();
    let mut modes: BTreeMap<GlockId, BTreeSet<String>> = BTreeMap::new();
    for (node, d) in nodes {
        for (g, s) in &d.cycles {
            if s.cycles > 0 {
                per.entry(*g)
                    .or_default()
                    .insert(node.to_string(), s.cycles);
            }
        }
        for (g, m) in &d.modes {
            modes
                .entry(*g)
                .or_default()
                .extend(m.iter().map(|x| x.to_string()));
        }
    }
    let mut out: Vec<PingPong> = per
        .into_iter()
        .filter(|(_, c)| c.values().filter(|n| **n >= o.min_cycles).count() >= 2)
        .map(|(g, c)| PingPong {
            glock: g.to_string(),
            gltype: g.glock_type().name().into_owned(),
            cycles: c,
            modes: modes
                .get(&g)
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
