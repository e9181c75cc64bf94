//! Contended glocks, ranked. The default measure is remote demote requests summed over
//! nodes, which the GFS2 documentation names as the measure of contention between nodes
//! for an inode or resource group.

use std::collections::HashMap;

use serde::Serialize;
use traceparse::Gfs2Event;

use glockparse::GlockId;

use super::hold_wait::Times;
use super::GlockMap;
use crate::owners::{Parties, Resolver};
use crate::snapshots::{Hold, Snapshots};

/// Ranking of the contended list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortBy {
    /// Remote demote requests, summed over nodes.
    #[default]
    Demotes,
    /// Time spent waiting: queue → promote in traces.
    Wait,
    /// State changes.
    Changes,
    /// Most waiters seen in one snapshot.
    Waiters,
}

/// One contended glock, over all nodes.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Contended {
    /// The glock.
    pub glock: String,
    /// Its type's name.
    #[serde(rename = "type")]
    pub gltype: String,
    /// Remote demote requests (`gfs2_demote_rq remote`), summed over nodes.
    pub remote_demotes: u64,
    /// Local demote requests.
    pub local_demotes: u64,
    /// State changes.
    pub state_changes: u64,
    /// Most waiters in one snapshot.
    pub max_waiters: u64,
    /// Total queue → promote time in traces, all nodes.
    pub wait_ns_total: u128,
    /// Waits measured.
    pub waits: u64,
    /// Nodes with trace events or snapshot entries for it.
    pub nodes: Vec<String>,
    /// The inode or rgrp behind it (`dir, 2048 bytes`), from the glocks snapshots.
    pub object: Option<String>,
    /// Who held and who waited, from the last snapshot that had holders or waiters, each
    /// after its node, named as the cross-node waits name them ([`crate::owners::named`]).
    #[serde(flatten)]
    pub parties: Parties,
}

/// One node's counts of one glock's events.
#[derive(Debug, Clone, Copy, Default)]
pub struct EventCounts {
    /// Remote demote requests.
    pub remote_demotes: u64,
    /// Local demote requests.
    pub local_demotes: u64,
    /// State changes.
    pub state_changes: u64,
}

impl EventCounts {
    /// Counts one event.
    pub fn add(&mut self, e: &Gfs2Event) {
        match *e {
            Gfs2Event::DemoteRq {
                remote: Some(r), ..
            } => {
                if r {
                    self.remote_demotes += 1;
                } else {
                    self.local_demotes += 1;
                }
            }
            Gfs2Event::GlockStateChange { .. } => self.state_changes += 1,
            _ => {}
        }
    }
}

/// One node's trace, as the ranking uses it.
pub struct NodeCounts<'a> {
    /// The node.
    pub node: &'a str,
    /// Its counts per glock.
    pub counts: &'a super::GlockMap<EventCounts>,
}

/// The contended glocks, ranked by `sort`: every glock with demote requests, waiters or
/// waits, from the traces' event counts and wait times and the snapshots; `owners` names
/// who held and who waited.
pub fn analyze(
    f: &Snapshots,
    traces: &[NodeCounts],
    times: &GlockMap<Times>,
    holds: &[Hold],
    owners: &Resolver,
    sort: SortBy,
) -> Vec<Contended> {
    let mut max_waiters: HashMap<GlockId, u64> = HashMap::new();
    for g in &f.glocks {
        let e = max_waiters.entry(g.glock).or_default();
        *e = (*e).max(u64::from(g.waiters));
    }
    let mut rows: GlockMap<Contended> = GlockMap::default();
    let new = |g: GlockId| Contended {
        glock: g.to_string(),
        gltype: g.glock_type().name().into_owned(),
        remote_demotes: 0,
        local_demotes: 0,
        state_changes: 0,
        max_waiters: 0,
        wait_ns_total: 0,
        waits: 0,
        nodes: Vec::new(),
        object: None,
        parties: Parties::default(),
    };
    for t in traces {
        for (g, c) in t.counts {
            let r = rows.entry(*g).or_insert_with(|| new(*g));
            r.remote_demotes += c.remote_demotes;
            r.local_demotes += c.local_demotes;
            r.state_changes += c.state_changes;
        }
    }
    for (g, w) in max_waiters {
        if w > 0 || rows.contains_key(&g) {
            rows.entry(g).or_insert_with(|| new(g)).max_waiters = w;
        }
    }
    for (glock, t) in times {
        if let Some(c) = rows.get_mut(glock) {
            c.wait_ns_total = t.wait.total_ns;
            c.waits = t.wait.samples.len();
        }
    }
    let mut list: Vec<(GlockId, Contended)> = rows
        .into_iter()
        .filter(|(_, c)| c.remote_demotes + c.local_demotes + c.max_waiters + c.waits > 0)
        .collect();
    list.sort_by(|(_, a), (_, b)| {
        let key = |c: &Contended| match sort {
            SortBy::Demotes => (
                u128::from(c.remote_demotes),
                c.wait_ns_total,
                u128::from(c.state_changes),
            ),
            SortBy::Wait => (
                c.wait_ns_total,
                u128::from(c.remote_demotes),
                u128::from(c.max_waiters),
            ),
            SortBy::Changes => (
                u128::from(c.state_changes),
                u128::from(c.remote_demotes),
                c.wait_ns_total,
            ),
            SortBy::Waiters => (
                u128::from(c.max_waiters),
                u128::from(c.remote_demotes),
                c.wait_ns_total,
            ),
        };
        key(b).cmp(&key(a)).then(a.glock.cmp(&b.glock))
    });
    let idx: HashMap<GlockId, usize> = list.iter().enumerate().map(|(i, (g, _))| (*g, i)).collect();
    describe(f, traces, &idx, &mut list);
    name_parties(holds, owners, &idx, &mut list);
    list.into_iter().map(|(_, c)| c).collect()
}

/// Nodes and object of the listed glocks (`idx`: each one's place in `list`).
fn describe(
    f: &Snapshots,
    traces: &[NodeCounts],
    idx: &HashMap<GlockId, usize>,
    list: &mut [(GlockId, Contended)],
) {
    for g in &f.glocks {
        if let Some(&k) = idx.get(&g.glock) {
            let c = &mut list[k].1;
            if !c.nodes.contains(&g.at.node) {
                c.nodes.push(g.at.node.clone());
            }
            if c.object.is_none() {
                if let (Some(t), Some(s)) = (g.file_type, g.inode_size) {
                    c.object = Some(format!("{t}, {s} bytes"));
                }
            }
        }
    }
    for t in traces {
        for g in t.counts.keys() {
            if let Some(&k) = idx.get(g) {
                if !list[k].1.nodes.iter().any(|n| n == t.node) {
                    list[k].1.nodes.push(t.node.to_string());
                }
            }
        }
    }
    for (_, c) in list.iter_mut() {
        c.nodes.sort();
    }
}

/// Holders and waiters of the listed glocks in the last snapshot (per glock) that had any,
/// each named by `owners` and cited.
fn name_parties(
    holds: &[Hold],
    owners: &Resolver,
    idx: &HashMap<GlockId, usize>,
    list: &mut [(GlockId, Contended)],
) {
    let mut last: HashMap<GlockId, u32> = HashMap::new();
    for h in holds.iter().filter(|h| idx.contains_key(&h.glock)) {
        let e = last.entry(h.glock).or_insert(h.at.snapshot);
        *e = (*e).max(h.at.snapshot);
    }
    for h in holds {
        let Some(&k) = idx.get(&h.glock) else {
            continue;
        };
        if last.get(&h.glock) != Some(&h.at.snapshot) {
            continue;
        }
        list[k].1.parties.add(&format!("{} ", h.at.node), h, owners);
    }
}
