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

/// One cycle per strongly connected component of a snapshot's wait-for graph (Tarjan's
/// algorithm, linear in the edges): the shortest cycle through the component's smallest
/// process, found breadth-first inside the component. Every deadlocked set of processes is
/// reported, however large the graph, in time linear in its size.
fn cycles_in(edges: &[&Edge], found: &mut BTreeMap<Vec<(Proc, String)>, BTreeSet<u32>>) {
    let mut procs: BTreeSet<&Proc> = BTreeSet::new();
    for e in edges {
        procs.insert(&e.from);
        procs.insert(&e.to);
    }
    // Processes numbered in their order, so the smallest number is the smallest process.
    let procs: Vec<&Proc> = procs.into_iter().collect();
    let id = |p: &Proc| procs.binary_search(&p).expect("every endpoint is numbered");
    let mut adj: Vec<Vec<&Edge>> = vec![Vec::new(); procs.len()];
    for e in edges {
        adj[id(&e.from)].push(e);
    }
    for out in &mut adj {
        out.sort_by(|a, b| (&a.to, &a.glock).cmp(&(&b.to, &b.glock)));
    }
    let succ: Vec<Vec<usize>> = adj
        .iter()
        .map(|out| out.iter().map(|e| id(&e.to)).collect())
        .collect();
    for comp in strongly_connected(&succ) {
        let start = *comp.iter().min().expect("components are not empty");
        if comp.len() == 1 && !succ[start].contains(&start) {
            continue;
        }
        let inside: BTreeSet<usize> = comp.iter().copied().collect();
        if let Some(path) = shortest_cycle(start, &adj, &succ, &inside) {
            let key: Vec<(Proc, String)> = path
                .iter()
                .map(|e| (e.from.clone(), e.glock.clone()))
                .collect();
            found
                .entry(key)
                .or_default()
                .extend(path.iter().map(|e| e.snapshot));
        }
    }
}

/// The shortest cycle from `start` back to it through processes of `inside` (breadth
/// first, so the edges of the first one found, in edge order).
fn shortest_cycle<'a>(
    start: usize,
    adj: &[Vec<&'a Edge>],
    succ: &[Vec<usize>],
    inside: &BTreeSet<usize>,
) -> Option<Vec<&'a Edge>> {
    let mut came_by: HashMap<usize, (usize, usize)> = HashMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for (k, &w) in succ[v].iter().enumerate() {
            if w == start {
                let mut path = vec![adj[v][k]];
                let mut at = v;
                while at != start {
                    let (from, edge) = came_by[&at];
                    path.push(adj[from][edge]);
                    at = from;
                }
                path.reverse();
                return Some(path);
            }
            if inside.contains(&w) && !came_by.contains_key(&w) {
                came_by.insert(w, (v, k));
                queue.push_back(w);
            }
        }
    }
    None
}

/// Tarjan's strongly connected components, iterative (no recursion depth limit).
fn strongly_connected(succ: &[Vec<usize>]) -> Vec<Vec<usize>> {
    const NONE: usize = usize::MAX;
    let n = succ.len();
    let (mut index, mut low, mut on_stack) = (vec![NONE; n], vec![0; n], vec![false; n]);
    let (mut stack, mut out, mut next) = (Vec::new(), Vec::new(), 0);
    for root in 0..n {
        if index[root] != NONE {
            continue;
        }
        let mut calls: Vec<(usize, usize)> = vec![(root, 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&(v, i)) = calls.last() {
            if let Some(&w) = succ[v].get(i) {
                calls.last_mut().expect("not empty").1 += 1;
                if index[w] == NONE {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    calls.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            calls.pop();
            if let Some(&(u, _)) = calls.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] == index[v] {
                let mut comp = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    comp.push(w);
                    if w == v {
                        break;
                    }
                }
                out.push(comp);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(from: i64, to: i64, glock: &str) -> Edge {
        let p = |pid| Proc {
            node: format!("n{}", pid % 2),
            pid,
        };
        Edge {
            from: p(from),
            to: p(to),
            glock: glock.into(),
            snapshot: 0,
        }
    }

    fn run(edges: &[Edge]) -> Vec<Cycle> {
        cycles(edges)
    }

    #[test]
    fn two_cycles_and_a_self_wait() {
        let e = [
            edge(1, 2, "6/a"),
            edge(2, 1, "6/b"),
            edge(3, 4, "2/c"),
            edge(4, 5, "2/d"),
            edge(5, 3, "2/e"),
            edge(5, 6, "2/f"),
            edge(7, 7, "6/g"),
        ];
        let c = run(&e);
        let mut got: Vec<Vec<(i64, &str)>> = c
            .iter()
            .map(|c| {
                c.steps
                    .iter()
                    .map(|s| (s.pid, s.waits_for.as_str()))
                    .collect()
            })
            .collect();
        got.sort();
        // Each cycle starts at its smallest process, (node, pid): n0 before n1.
        assert_eq!(
            got,
            [
                vec![(2, "6/b"), (1, "6/a")],
                vec![(4, "2/d"), (5, "2/e"), (3, "2/c")],
                vec![(7, "6/g")],
            ]
        );
    }

    #[test]
    fn a_chain_is_no_cycle() {
        let e: Vec<Edge> = (0..50).map(|i| edge(i, i + 1, "2/x")).collect();
        assert!(run(&e).is_empty());
    }

    #[test]
    fn a_dense_graph_is_linear_work_and_one_cycle() {
        // Every process waits for every other: exponentially many elementary cycles, one
        // component, one reported cycle.
        let n = 300;
        let mut e = Vec::new();
        for a in 0..n {
            for b in 0..n {
                if a != b {
                    e.push(edge(a, b, "2/y"));
                }
            }
        }
        let c = run(&e);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].steps.len(), 2);
    }
}
