//! Who waits for whom, across nodes:
//! * from glocks snapshots: in snapshot N, a waiter (`W`) for glock G on one node and a
//!   granted holder (`H`) of G on another (or the same) node;
//! * from DLM lock dumps: for G, a waiting or converting lock and a granted lock, each
//!   with its owner's node id and pid (the master's dump shows the other nodes' locks).
//!
//! Joined by (glock, waiter node, holder node). A holder's or waiter's pid from glocks is
//! preferred when it names a process; GL_NOPID holders (`p:0 [(none)]`, flocks on 6.1+)
//! take the DLM dump's pid. Node ids map to node names through the capture's `nodeid`.
//! The edges waiter → holder form a wait-for graph over (node, pid); its cycles are
//! deadlocks.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::rows::{Dlm, Hold};

/// A waiter on one node joined to the holder on another.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CrossNode {
    pub glock: String,
    #[serde(rename = "type")]
    pub gltype: String,
    pub waiter_node: String,
    pub waiter_pid: Option<i64>,
    pub waiter_caller: Option<String>,
    pub holder_node: String,
    pub holder_pid: Option<i64>,
    pub holder_caller: Option<String>,
    /// Snapshots in which the wait was seen.
    pub seen_in_snapshots: usize,
    /// `glocks`, `dlm`, or both.
    pub evidence: Vec<String>,
}

/// A process in the wait-for graph.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Proc {
    pub node: String,
    pub pid: i64,
}

/// One step of a cycle: `proc` waits for `glock`, held by the next step's process.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Step {
    pub node: String,
    pub pid: i64,
    pub waits_for: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Cycle {
    pub steps: Vec<Step>,
    pub snapshots: Vec<u32>,
}

fn gltype(glock: &str) -> String {
    glock
        .parse::<glockparse::GlockId>()
        .map(|g| g.glock_type().name().into_owned())
        .unwrap_or_default()
}

fn meaningful(pid: i64, comm: &str) -> bool {
    pid > 0 && comm != "(none)"
}

#[derive(Default)]
struct Acc {
    snapshots: BTreeSet<u32>,
    waiter_pid: Option<i64>,
    waiter_caller: Option<String>,
    holder_pid: Option<i64>,
    holder_caller: Option<String>,
    evidence: BTreeSet<&'static str>,
}

/// Waiters and granted holders of one glock at one moment.
struct Sides<T> {
    waiting: Vec<T>,
    granted: Vec<T>,
}

impl<T> Default for Sides<T> {
    fn default() -> Self {
        Sides {
            waiting: Vec::new(),
            granted: Vec::new(),
        }
    }
}

/// An edge of the wait-for graph.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Edge {
    from: Proc,
    to: Proc,
    glock: String,
    snapshot: u32,
}

pub fn analyze(
    holds: &[Hold],
    dlm: &[Dlm],
    node_by_id: &HashMap<u64, String>,
) -> (Vec<CrossNode>, Vec<Cycle>) {
    let mut acc: BTreeMap<(String, String, String), Acc> = BTreeMap::new();
    let mut edges: BTreeSet<Edge> = BTreeSet::new();
    // glocks snapshots: (snapshot, glock) → waiters and holders over all nodes.
    let mut by: BTreeMap<(u32, &str), Sides<&Hold>> = BTreeMap::new();
    for h in holds {
        let e = by.entry((h.snapshot, h.glock.as_str())).or_default();
        match h.role.as_str() {
            "waiter" => e.waiting.push(h),
            "holder" => e.granted.push(h),
            _ => {}
        }
    }
    for (
        (snap, glock),
        Sides {
            waiting: waiters,
            granted: holders,
        },
    ) in &by
    {
        for w in waiters {
            for h in holders {
                if w.node != h.node {
                    let a = acc
                        .entry((glock.to_string(), w.node.clone(), h.node.clone()))
                        .or_default();
                    a.snapshots.insert(*snap);
                    a.evidence.insert("glocks");
                    if meaningful(w.pid, &w.comm) {
                        a.waiter_pid = Some(w.pid);
                    }
                    a.waiter_caller.get_or_insert_with(|| w.caller.clone());
                    if meaningful(h.pid, &h.comm) {
                        a.holder_pid = Some(h.pid);
                    }
                    a.holder_caller.get_or_insert_with(|| h.caller.clone());
                }
                if meaningful(w.pid, &w.comm)
                    && meaningful(h.pid, &h.comm)
                    && (w.node != h.node || w.pid != h.pid)
                {
                    edges.insert(Edge {
                        from: Proc {
                            node: w.node.clone(),
                            pid: w.pid,
                        },
                        to: Proc {
                            node: h.node.clone(),
                            pid: h.pid,
                        },
                        glock: glock.to_string(),
                        snapshot: *snap,
                    });
                }
            }
        }
    }
    // DLM dumps: per (dumping node, snapshot, glock), waiting vs granted locks by owner.
    let mut dl: BTreeMap<(&str, u32, &str), Sides<&Dlm>> = BTreeMap::new();
    for d in dlm {
        let e = dl
            .entry((d.node.as_str(), d.snapshot, d.glock.as_str()))
            .or_default();
        if d.status == "waiting" || d.status == "converting" {
            e.waiting.push(d);
        } else if d.status == "granted" && d.grmode.as_deref().is_some_and(|m| m != "NL") {
            e.granted.push(d);
        }
    }
    for ((_, snap, glock), Sides { waiting, granted }) in &dl {
        for w in waiting {
            for g in granted {
                let (Some(wn), Some(gn)) = (
                    w.owner_nodeid.and_then(|i| node_by_id.get(&i)),
                    g.owner_nodeid.and_then(|i| node_by_id.get(&i)),
                ) else {
                    continue;
                };
                if wn == gn && w.pid == g.pid {
                    continue;
                }
                if wn != gn {
                    let a = acc
                        .entry((glock.to_string(), wn.clone(), gn.clone()))
                        .or_default();
                    a.snapshots.insert(*snap);
                    a.evidence.insert("dlm");
                    a.waiter_pid.get_or_insert(w.pid as i64);
                    a.holder_pid.get_or_insert(g.pid as i64);
                }
                edges.insert(Edge {
                    from: Proc {
                        node: wn.clone(),
                        pid: w.pid as i64,
                    },
                    to: Proc {
                        node: gn.clone(),
                        pid: g.pid as i64,
                    },
                    glock: glock.to_string(),
                    snapshot: *snap,
                });
            }
        }
    }
    let cross = acc
        .into_iter()
        .map(|((glock, wn, hn), a)| CrossNode {
            gltype: gltype(&glock),
            glock,
            waiter_node: wn,
            waiter_pid: a.waiter_pid,
            waiter_caller: a.waiter_caller,
            holder_node: hn,
            holder_pid: a.holder_pid,
            holder_caller: a.holder_caller,
            seen_in_snapshots: a.snapshots.len(),
            evidence: a.evidence.into_iter().map(str::to_string).collect(),
        })
        .collect();
    (cross, cycles(&edges.into_iter().collect::<Vec<_>>()))
}

/// Elementary cycles of each snapshot's wait-for graph (a cycle needs all its waits at
/// once), each reported once with the snapshots it was seen in.
fn cycles(edges: &[Edge]) -> Vec<Cycle> {
    let mut by_snap: BTreeMap<u32, Vec<&Edge>> = BTreeMap::new();
    for e in edges {
        by_snap.entry(e.snapshot).or_default().push(e);
    }
    let mut found: BTreeMap<Vec<(Proc, String)>, BTreeSet<u32>> = BTreeMap::new();
    for snap_edges in by_snap.values() {
        cycles_in(snap_edges, &mut found);
    }
    found
        .into_iter()
        .map(|(steps, snaps)| Cycle {
            steps: steps
                .into_iter()
                .map(|(p, g)| Step {
                    node: p.node,
                    pid: p.pid,
                    waits_for: g,
                })
                .collect(),
            snapshots: snaps.into_iter().collect(),
        })
        .collect()
}

fn cycles_in(edges: &[&Edge], found: &mut BTreeMap<Vec<(Proc, String)>, BTreeSet<u32>>) {
    let mut adj: BTreeMap<&Proc, Vec<&Edge>> = BTreeMap::new();
    for e in edges {
        adj.entry(&e.from).or_default().push(e);
    }
    const MAX_LEN: usize = 8;
    for start in adj.keys() {
        // Depth-first over paths that only visit processes greater than the start, so each
        // cycle is found from its smallest member.
        let mut stack: Vec<(&Proc, Vec<&Edge>)> = vec![(start, Vec::new())];
        while let Some((at, path)) = stack.pop() {
            for e in adj.get(at).map_or(&[][..], Vec::as_slice) {
                if e.to == **start {
                    let mut p = path.clone();
                    p.push(e);
                    let key: Vec<(Proc, String)> = p
                        .iter()
                        .map(|e| (e.from.clone(), e.glock.clone()))
                        .collect();
                    let snaps = found.entry(key).or_default();
                    snaps.extend(p.iter().map(|e| e.snapshot));
                } else if e.to > **start
                    && path.len() + 1 < MAX_LEN
                    && !path.iter().any(|x| x.from == e.to)
                {
                    let mut p = path.clone();
                    p.push(e);
                    stack.push((&e.to, p));
                }
            }
        }
        if found.len() > 1000 {
            break;
        }
    }
}
