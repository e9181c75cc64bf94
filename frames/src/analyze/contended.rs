//! Contended glocks, ranked. The default measure is remote demote requests summed over
//! nodes, which the GFS2 documentation names as the measure of contention between nodes
//! for an inode or resource group.

use std::collections::{BTreeMap, HashMap};

use polars::prelude::*;
use serde::Serialize;
use traceparse::Gfs2Event;

use super::hold_wait::Times;
use super::rows::Hold;
use crate::build::Frames;

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

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Contended {
    pub glock: String,
    #[serde(rename = "type")]
    pub gltype: String,
    pub remote_demotes: u64,
    pub local_demotes: u64,
    pub state_changes: u64,
    pub max_waiters: u64,
    /// Total queue → promote time in traces, all nodes.
    pub wait_ns_total: u128,
    pub waits: u64,
    /// Nodes with trace events or snapshot entries for it.
    pub nodes: Vec<String>,
    /// The inode or rgrp behind it (`dir, 2048 bytes`), from the glocks snapshots.
    pub object: Option<String>,
    /// Who held and who waited, from the last snapshot that had holders: `node pid comm caller`.
    pub holders: Vec<String>,
    pub waiters: Vec<String>,
}

fn u64s(df: &DataFrame, name: &str) -> PolarsResult<Vec<u64>> {
    let c = df.column(name)?.cast(&DataType::UInt64)?;
    Ok(c.u64()?.iter().map(|v| v.unwrap_or(0)).collect())
}

fn strs(df: &DataFrame, name: &str) -> PolarsResult<Vec<String>> {
    Ok(df
        .column(name)?
        .str()?
        .iter()
        .map(|v| v.unwrap_or("").to_string())
        .collect())
}

/// One node's counts of one glock's events.
#[derive(Debug, Clone, Copy, Default)]
pub struct EventCounts {
    pub remote_demotes: u64,
    pub local_demotes: u64,
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
    pub node: &'a str,
    pub counts: &'a super::GlockMap<EventCounts>,
}

pub fn analyze(
    f: &Frames,
    traces: &[NodeCounts],
    times: &BTreeMap<String, Times>,
    holds: &[Hold],
    sort: SortBy,
) -> PolarsResult<Vec<Contended>> {
    let snaps = f
        .glocks
        .clone()
        .lazy()
        .group_by([col("glock")])
        .agg([col("waiters").max().alias("max_waiters")])
        .collect()?;
    let mut rows: BTreeMap<String, Contended> = BTreeMap::new();
    let new = |g: &str| Contended {
        glock: g.to_string(),
        gltype: g
            .parse::<glockparse::GlockId>()
            .map(|x| x.glock_type().name().into_owned())
            .unwrap_or_default(),
        remote_demotes: 0,
        local_demotes: 0,
        state_changes: 0,
        max_waiters: 0,
        wait_ns_total: 0,
        waits: 0,
        nodes: Vec::new(),
        object: None,
        holders: Vec::new(),
        waiters: Vec::new(),
    };
    for t in traces {
        for (g, c) in t.counts {
            let g = g.to_string();
            let r = rows.entry(g.clone()).or_insert_with(|| new(&g));
            r.remote_demotes += c.remote_demotes;
            r.local_demotes += c.local_demotes;
            r.state_changes += c.state_changes;
        }
    }
    let (g, w) = (strs(&snaps, "glock")?, u64s(&snaps, "max_waiters")?);
    for i in 0..g.len() {
        if w[i] > 0 || rows.contains_key(&g[i]) {
            rows.entry(g[i].clone())
                .or_insert_with(|| new(&g[i]))
                .max_waiters = w[i];
        }
    }
    for (glock, t) in times {
        if let Some(c) = rows.get_mut(glock) {
            c.wait_ns_total = t.wait.total_ns;
            c.waits = t.wait.samples.len();
        }
    }
    let mut list: Vec<Contended> = rows
        .into_values()
        .filter(|c| c.remote_demotes + c.local_demotes + c.max_waiters + c.waits > 0)
        .collect();
    list.sort_by(|a, b| {
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
    describe(f, traces, &mut list, holds)?;
    Ok(list)
}

/// Nodes, object, holders and waiters of the listed glocks.
fn describe(
    f: &Frames,
    traces: &[NodeCounts],
    list: &mut [Contended],
    holds: &[Hold],
) -> PolarsResult<()> {
    let idx: HashMap<String, usize> = list
        .iter()
        .enumerate()
        .map(|(i, c)| (c.glock.clone(), i))
        .collect();
    let df = &f.glocks;
    let (g, n) = (strs(df, "glock")?, strs(df, "node")?);
    let ft: Vec<Option<&str>> = df.column("file_type")?.str()?.iter().collect();
    let size: Vec<Option<u64>> = df.column("inode_size")?.u64()?.iter().collect();
    for i in 0..g.len() {
        if let Some(&k) = idx.get(&g[i]) {
            let c = &mut list[k];
            if !c.nodes.contains(&n[i]) {
                c.nodes.push(n[i].clone());
            }
            if c.object.is_none() {
                if let (Some(t), Some(s)) = (ft[i], size[i]) {
                    c.object = Some(format!("{t}, {s} bytes"));
                }
            }
        }
    }
    for t in traces {
        for g in t.counts.keys() {
            if let Some(&k) = idx.get(&g.to_string()) {
                if !list[k].nodes.iter().any(|n| n == t.node) {
                    list[k].nodes.push(t.node.to_string());
                }
            }
        }
    }
    // The last snapshot (per glock) that had any holder or waiter.
    let mut last: HashMap<&str, u32> = HashMap::new();
    for h in holds.iter().filter(|h| idx.contains_key(&h.glock)) {
        let e = last.entry(&h.glock).or_insert(h.snapshot);
        *e = (*e).max(h.snapshot);
    }
    for h in holds {
        let Some(&k) = idx.get(&h.glock) else {
            continue;
        };
        if last.get(h.glock.as_str()) != Some(&h.snapshot) {
            continue;
        }
        let who = format!(
            "{} pid {} {} {} {}",
            h.node, h.pid, h.comm, h.state, h.caller
        );
        match h.role.as_str() {
            "waiter" => list[k].waiters.push(who),
            "holder" => list[k].holders.push(who),
            _ => {}
        }
    }
    for c in list.iter_mut() {
        c.nodes.sort();
    }
    Ok(())
}
