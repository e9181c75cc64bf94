//! Who waits for whom, across nodes, and the deadlocks among them:
//! * from glocks snapshots: in snapshot N, a waiter (`W`) for glock G on one node and a
//!   granted holder (`H`) of G on another (or the same) node;
//! * from DLM lock dumps: for G, a waiting or converting lock and a granted lock whose mode
//!   conflicts with the request, each with its owner's node id (the master's dump shows the
//!   other nodes' locks). Where the waiter's node has a glocks snapshot, its waiting holders
//!   are the waiters (none there: no process waits, and no row is made); where it has none,
//!   the DLM lock stands for the waiter.
//!
//! Every row names one waiter and one holder, each resolved by [`Resolver::party`] from the
//! source that knows it, and never merges different processes: rows are keyed by both
//! sides' node and pid.
//!
//! Deadlocks are cycles of a wait-for graph over owners, per snapshot (a cycle needs all its
//! waits at once). An owner is a process together with its ancestors that hold a lock the
//! graph mentions (a lock held through an inherited file: the parent holds, the child
//! waits), or, where no source names the process, the node itself.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::owners::{process, Party, Resolver};
use crate::snapshots::{Dlm, Hold, Role};
use glockparse::dlm_locks::LockStatus;
use glockparse::quote::plain;

/// A waiter joined to the holder it waits for (on another node, or on its own).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CrossNode {
    /// The glock (`posix 2/N` for the POSIX locks of the file whose inode glock is `2/N`).
    pub glock: String,
    /// Its type's name (`posix` for POSIX locks).
    #[serde(rename = "type")]
    pub gltype: String,
    /// The waiter's node.
    pub waiter_node: String,
    /// The waiting process, when a source names it.
    pub waiter_pid: Option<i64>,
    /// Its command.
    pub waiter_comm: Option<String>,
    /// The call site that queued the wait.
    pub waiter_caller: Option<String>,
    /// Where the waiter's pid comes from: `glocks`, `locks`, `dlm`, `glockfd`, `plocks` or
    /// `none`.
    pub waiter_source: &'static str,
    /// The holder's node.
    pub holder_node: String,
    /// The holding process, when a source names it.
    pub holder_pid: Option<i64>,
    /// Its command.
    pub holder_comm: Option<String>,
    /// The call site that queued the hold.
    pub holder_caller: Option<String>,
    /// Where the holder's pid comes from: `glocks`, `locks`, `dlm`, `glockfd`, `plocks` or
    /// `none`.
    pub holder_source: &'static str,
    /// Snapshots in which the wait was seen.
    pub seen_in_snapshots: usize,
    /// Those snapshots.
    pub snapshots: Vec<u32>,
    /// `glocks`, `dlm`, or both.
    pub evidence: Vec<String>,
    /// The lines that show the wait in the first snapshot it was seen in (`NODE/FILE:LINE`),
    /// the waiter's first, each with what it shows.
    pub cites: Vec<Cited>,
}

/// An owner in the wait-for graph.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Owner {
    /// A process of a node.
    Process {
        /// The node.
        node: String,
        /// The process.
        pid: i64,
    },
    /// A node, where no source names the process.
    Node {
        /// The node.
        node: String,
    },
}

impl Owner {
    fn of(p: &Party) -> Owner {
        match p.pid {
            Some(pid) => Owner::Process {
                node: p.node.clone(),
                pid,
            },
            None => Owner::Node {
                node: p.node.clone(),
            },
        }
    }

    fn node(&self) -> &str {
        match self {
            Owner::Process { node, .. } | Owner::Node { node } => node,
        }
    }
}

/// One step of a cycle: `owner` waits for `waits_for`, held by the next step's owner.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Step {
    /// The node.
    pub node: String,
    /// The waiting process (`None`: the node, no process known).
    pub pid: Option<i64>,
    /// Its command.
    pub comm: Option<String>,
    /// Who the owner is, in words: the process, and the ancestors whose locks it holds.
    pub owner: String,
    /// The glock it waits for.
    pub waits_for: String,
    /// Lines that show this wait and who holds the lock, each with what it shows.
    pub evidence: Vec<Cited>,
}

/// A line cited for a wait or a step of a cycle (`NODE/FILE:LINE`), and what it shows:
/// the wait, the hold it waits for, or a lock the waiter holds through an ancestor. Written
/// as its cite alone in JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct Cited {
    /// `NODE/FILE:LINE`.
    pub cite: String,
    /// What the line shows: `pid 395 [flock] on n1 waits for 6/4101d`,
    /// `pid 376 [flock] on n2 holds 6/4101d`.
    pub shows: String,
}

impl Serialize for Cited {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.cite)
    }
}

/// A deadlock cycle of the wait-for graph: each step waits for the next, the last for the first.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Cycle {
    /// The waits, in cycle order.
    pub steps: Vec<Step>,
    /// Snapshots in which every wait of the cycle was seen.
    pub snapshots: Vec<u32>,
    /// `certain` (every step a named process), `likely` (a lock held by an ancestor of
    /// the waiter, through an inherited file), `possible` (a node stands for an unknown
    /// process: the node's other processes' waits are assumed to be its own).
    pub confidence: &'static str,
    /// Why the confidence is what it is.
    pub why: String,
}

fn gltype(glock: &str) -> String {
    let posix = glockparse::plocks::KIND;
    if glock
        .strip_prefix(posix)
        .is_some_and(|r| r.starts_with(' '))
    {
        return posix.into();
    }
    glock
        .parse::<glockparse::GlockId>()
        .map(|g| g.glock_type().name().into_owned())
        .unwrap_or_default()
}

#[derive(Default)]
struct Acc {
    waiter: Option<Party>,
    holder: Option<Party>,
    snapshots: BTreeSet<u32>,
    evidence: BTreeSet<&'static str>,
    /// The lines that show the wait, per snapshot, each with the side it shows.
    cites: BTreeMap<u32, Vec<(Side, String)>>,
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

/// Picks the waiters or the holders of a glock's snapshot sides.
type Pick = for<'s, 'h> fn(&'s Sides<&'h Hold>) -> &'s Vec<&'h Hold>;

/// Which side of a wait a cited line shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Side {
    Waiter,
    Holder,
}

/// An edge of the wait-for graph: `from` waits for `glock`, held by `to`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Edge {
    from: Owner,
    to: Owner,
    glock: String,
    snapshot: u32,
    from_comm: Option<String>,
    /// The waiter's lines, then the holder's.
    cites: Vec<(Side, String)>,
    /// `from` is one of several processes that may be the waiter ([`Resolver::candidates`]).
    guess: bool,
    /// The holder's command, for the words of its lines.
    to_comm: Option<String>,
}

/// Row key: glock, waiter (node, pid), holder (node, pid).
type RowKey = (String, String, Option<i64>, String, Option<i64>);

struct Builder {
    /// Waits for a holder on another node.
    rows: BTreeMap<RowKey, Acc>,
    /// Waits for a holder on the waiter's own node.
    local: BTreeMap<RowKey, Acc>,
    edges: BTreeSet<Edge>,
}

impl Builder {
    fn wait(&mut self, glock: &str, snap: u32, w: &Party, h: &Party, source: &'static str) {
        if w.node == h.node && (w.pid == h.pid || w.pid.is_none() || h.pid.is_none()) {
            return;
        }
        let sided = |side, p: &Party| -> Vec<(Side, String)> {
            p.cites.iter().map(|c| (side, c.clone())).collect()
        };
        let mut cites = sided(Side::Waiter, w);
        cites.extend(sided(Side::Holder, h));
        unique_by(&mut cites, |(_, c)| c.clone());
        // A candidate waiter makes an edge for the graph, never a row.
        let guess = w.source == "glockfd?";
        if !guess {
            let key = (
                glock.to_string(),
                w.node.clone(),
                w.pid,
                h.node.clone(),
                h.pid,
            );
            let rows = if w.node == h.node {
                &mut self.local
            } else {
                &mut self.rows
            };
            let a = rows.entry(key).or_default();
            a.waiter.get_or_insert_with(|| w.clone());
            a.holder.get_or_insert_with(|| h.clone());
            a.snapshots.insert(snap);
            a.evidence.insert(source);
            let c = a.cites.entry(snap).or_default();
            c.extend(cites.iter().cloned());
            unique_by(c, |(_, cite)| cite.clone());
        }
        self.edges.insert(Edge {
            from: Owner::of(w),
            to: Owner::of(h),
            glock: glock.to_string(),
            snapshot: snap,
            from_comm: w.comm.clone(),
            cites,
            guess,
            to_comm: h.comm.clone(),
        });
    }
}

/// Drops repeats (by `key`), keeping the first of each in order.
fn unique_by<T>(v: &mut Vec<T>, key: impl Fn(&T) -> String) {
    let mut seen = BTreeSet::new();
    v.retain(|x| seen.insert(key(x)));
}

/// Whether granted lock `g` keeps waiting lock `w` waiting ([`glockparse::DlmMode::blocks`]).
fn conflicts(w: &Dlm, g: &Dlm) -> bool {
    g.granted().is_some_and(|gr| gr.blocks(w.requested()))
}

/// Who waits for whom in the snapshots, and the deadlocks among them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Waits {
    /// Waits for a holder on another node.
    pub cross_node: Vec<CrossNode>,
    /// Waits for a holder on the waiter's own node (both processes named).
    pub local: Vec<CrossNode>,
    /// The cycles of the wait-for graph over both.
    pub cycles: Vec<Cycle>,
}

/// The waits (across nodes and on one node) and the deadlock cycles of the snapshots'
/// holders, DLM locks and POSIX locks.
pub fn analyze(holds: &[Hold], dlm: &[Dlm], res: &Resolver) -> Waits {
    let mut b = Builder {
        rows: BTreeMap::new(),
        local: BTreeMap::new(),
        edges: BTreeSet::new(),
    };
    // glocks snapshots: (snapshot, glock) → waiters and holders over all nodes.
    // Keyed by the glock's name: edges and rows are found in (snapshot, name) order.
    let mut by: BTreeMap<(u32, String), Sides<&Hold>> = BTreeMap::new();
    for h in holds {
        let e = by.entry((h.at.snapshot, h.glock.to_string())).or_default();
        match h.role {
            Role::Waiter => e.waiting.push(h),
            Role::Holder => e.granted.push(h),
            Role::Queued => {}
        }
    }
    glocks_waits(&by, res, &mut b);
    dlm_waits(&by, dlm, res, &mut b);
    plock_waits(res, &mut b);
    let edges: Vec<Edge> = b.edges.into_iter().collect();
    Waits {
        cross_node: cross_rows(b.rows),
        local: cross_rows(b.local),
        cycles: cycles(&edges, res),
    }
}

/// Each snapshot's glock holders by (snapshot, glock name).
type HoldsBy<'h> = BTreeMap<(u32, String), Sides<&'h Hold>>;

/// Waits from the glocks snapshots: each waiter of a glock and each of its granted holders,
/// over all nodes; a waiter no source names stands as each of its candidates
/// ([`Resolver::candidates`]).
fn glocks_waits(by: &HoldsBy<'_>, res: &Resolver, b: &mut Builder) {
    for ((snap, glock), sides) in by {
        for w in &sides.waiting {
            let wp = res.party(w);
            let candidates = match wp.pid {
                Some(_) => Vec::new(),
                None => res.candidates(w),
            };
            for h in &sides.granted {
                let hp = res.party(h);
                b.wait(glock, *snap, &wp, &hp, "glocks");
                for c in &candidates {
                    b.wait(glock, *snap, c, &hp, "glocks");
                }
            }
        }
    }
}

/// Waits from the DLM dumps: per (dumping node, snapshot, glock), each waiting lock and the
/// granted locks of other nodes whose modes conflict with it, each side the processes its
/// node's glocks snapshot shows (none there: no process), else the DLM lock itself.
fn dlm_waits(by: &HoldsBy<'_>, dlm: &[Dlm], res: &Resolver, b: &mut Builder) {
    let mut dl: BTreeMap<(&str, u32, String), Sides<&Dlm>> = BTreeMap::new();
    for d in dlm {
        let Some(glock) = d.glock else { continue };
        let e = dl
            .entry((d.at.node.as_str(), d.at.snapshot, glock.to_string()))
            .or_default();
        if d.status.is_waiting() {
            e.waiting.push(d);
        } else if d.status == LockStatus::Granted {
            e.granted.push(d);
        }
    }
    let parties = |node: &str, snap: u32, glock: &str, lock: &Dlm, pick: Pick| -> Vec<Party> {
        if !res.has_glocks(node, snap) {
            return res.dlm_party(lock).into_iter().collect();
        }
        by.get(&(snap, glock.to_string()))
            .map_or_else(Vec::new, |s| {
                pick(s)
                    .iter()
                    .filter(|h| h.at.node == node)
                    .map(|h| res.party(h))
                    .collect()
            })
    };
    for ((_, snap, glock), Sides { waiting, granted }) in &dl {
        for w in waiting {
            let Some(wn) = res.owner_node(w) else {
                continue;
            };
            let waiters = parties(wn, *snap, glock, w, |s| &s.waiting);
            for g in granted.iter().filter(|g| conflicts(w, g)) {
                let Some(gn) = res.owner_node(g) else {
                    continue;
                };
                if gn == wn {
                    continue;
                }
                let holders = parties(gn, *snap, glock, g, |s| &s.granted);
                for wp in &waiters {
                    for hp in &holders {
                        let (mut wp, mut hp) = (wp.clone(), hp.clone());
                        wp.cites.push(res.cite_dlm(w));
                        hp.cites.push(res.cite_dlm(g));
                        b.wait(glock, *snap, &wp, &hp, "dlm");
                    }
                }
            }
        }
    }
}

/// POSIX (fcntl) lock waits from each node's `dlm_tool plocks` dump: a waiting or pending
/// request and each held lock that blocks it ([`glockparse::plocks::Plock::is_blocked_by`]),
/// named `posix 2/N` after the file's inode glock. Every node's dlm_controld keeps the whole
/// cluster's locks, so each dump shows every wait; the rows and edges are the same.
fn plock_waits(res: &Resolver, b: &mut Builder) {
    for (node, snap, locks) in res.plock_dumps() {
        let held: Vec<_> = locks.iter().filter(|l| !l.is_waiting()).collect();
        for w in locks.iter().filter(|l| l.is_waiting()) {
            let wp = res.plock_party(node, snap, w);
            for h in held.iter().filter(|h| w.is_blocked_by(h)) {
                let hp = res.plock_party(node, snap, h);
                b.wait(&w.resource(), snap, &wp, &hp, "plocks");
            }
        }
    }
}

/// One row per (glock, waiter, holder), with its first snapshot's citations.
fn cross_rows(rows: BTreeMap<RowKey, Acc>) -> Vec<CrossNode> {
    rows.into_iter()
        .filter_map(|((glock, ..), a)| {
            let (w, h) = (a.waiter?, a.holder?);
            let (waits, holds) = (
                format!("{} waits for {glock}", in_words(&w.node, w.pid, &w.comm)),
                format!("{} holds {glock}", in_words(&h.node, h.pid, &h.comm)),
            );
            let cites = a.cites.into_values().next().unwrap_or_default();
            let cites = in_words_each(&cites, &waits, &holds);
            Some(CrossNode {
                gltype: gltype(&glock),
                glock,
                waiter_node: w.node,
                waiter_pid: w.pid,
                waiter_comm: w.comm,
                waiter_caller: w.caller,
                waiter_source: w.source,
                holder_node: h.node,
                holder_pid: h.pid,
                holder_comm: h.comm,
                holder_caller: h.caller,
                holder_source: h.source,
                seen_in_snapshots: a.snapshots.len(),
                snapshots: a.snapshots.into_iter().collect(),
                evidence: a.evidence.into_iter().map(str::to_string).collect(),
                cites,
            })
        })
        .collect()
}

/// A found cycle, with the snapshots it was seen in.
struct Found {
    steps: Vec<Step>,
    snapshots: BTreeSet<u32>,
    confidence: &'static str,
    why: String,
}

/// The cycles of each snapshot's wait-for graph over owners, each reported once with the
/// snapshots it was seen in.
fn cycles(edges: &[Edge], res: &Resolver) -> Vec<Cycle> {
    let mut by_snap: BTreeMap<u32, Vec<&Edge>> = BTreeMap::new();
    for e in edges {
        by_snap.entry(e.snapshot).or_default().push(e);
    }
    let mut found = FoundCycles::default();
    for (snap, snap_edges) in &by_snap {
        cycles_in(*snap, snap_edges, res, &mut found);
    }
    found
        .by_owners
        .into_values()
        .map(|f| Cycle {
            steps: f.steps,
            snapshots: f.snapshots.into_iter().collect(),
            confidence: f.confidence,
            why: f.why,
        })
        .collect()
}

/// Union-find over owner numbers.
struct Classes(Vec<usize>);

impl Classes {
    fn find(&mut self, mut v: usize) -> usize {
        while self.0[v] != v {
            self.0[v] = self.0[self.0[v]];
            v = self.0[v];
        }
        v
    }

    /// Joins two classes; the smaller number leads, so the smallest owner names a class.
    fn join(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        let (lo, hi) = (a.min(b), a.max(b));
        self.0[hi] = lo;
    }
}

/// An edge between owner classes: `edge` is the wait it stands for; `assumed` when a node
/// stands for its processes.
struct ClassEdge<'e> {
    to: usize,
    edge: &'e Edge,
    assumed: bool,
}

/// One cycle per strongly connected component of a snapshot's wait-for graph over owner
/// classes (Tarjan's algorithm, linear in the edges): the shortest cycle through the
/// component's smallest owner, found breadth-first inside the component.
fn cycles_in(snap: u32, edges: &[&Edge], res: &Resolver, found: &mut FoundCycles) {
    let mut g = Graph::new(edges);
    g.join_inherited(snap, res);
    g.join_open_files(snap, res);
    let adj = g.class_edges();
    let succ: Vec<Vec<usize>> = adj
        .iter()
        .map(|o| o.iter().map(|e| e.to).collect())
        .collect();
    for comp in strongly_connected(&succ) {
        let start = *comp.iter().min().expect("components are not empty");
        if comp.len() == 1 && !succ[start].contains(&start) {
            continue;
        }
        let inside: BTreeSet<usize> = comp.iter().copied().collect();
        let Some(path) = shortest_cycle(start, &adj, &succ, &inside) else {
            continue;
        };
        let (key, f) = g.describe(&path);
        found.add(key, f, snap);
    }
}

/// A cycle's key: the lead owner and glock of each step.
type CycleKey = Vec<(Owner, String)>;

/// The cycles found so far, keyed by their owners and glocks (first seen first), and
/// which of them each set of waits (node, glock) was first reported as.
#[derive(Default)]
struct FoundCycles {
    by_owners: BTreeMap<CycleKey, Found>,
    by_waits: HashMap<BTreeSet<(String, String)>, CycleKey>,
}

impl FoundCycles {
    /// Adds cycle `f` seen in `snap`. The same waits (each node waiting for the same
    /// glock) seen with other owners in a later snapshot are the same deadlock whose
    /// owners changed (the process that took a lock ended, and the children that
    /// inherited its file keep it): one cycle, described as last seen unless that is
    /// less sure, with every snapshot it was seen in.
    fn add(&mut self, key: CycleKey, mut f: Found, snap: u32) {
        let waits: BTreeSet<(String, String)> = f
            .steps
            .iter()
            .map(|s| (s.node.clone(), s.waits_for.clone()))
            .collect();
        let first = self.by_waits.entry(waits).or_insert_with(|| key.clone());
        let Some(old) = self.by_owners.get_mut(first) else {
            f.snapshots.insert(snap);
            self.by_owners.insert(key, f);
            return;
        };
        old.snapshots.insert(snap);
        if *first != key && sureness(f.confidence) >= sureness(old.confidence) {
            f.snapshots = std::mem::take(&mut old.snapshots);
            *old = f;
        }
    }
}

/// How sure a cycle's confidence is: `possible` < `likely` < `certain`.
fn sureness(confidence: &str) -> u8 {
    match confidence {
        "certain" => 2,
        "likely" => 1,
        _ => 0,
    }
}

/// A snapshot's wait-for graph: its owners numbered in order (the smallest number is the
/// smallest owner), grouped into classes (a waiter and the ancestors whose locks it holds
/// are one owner), with what each waiter inherited.
struct Graph<'e> {
    edges: &'e [&'e Edge],
    owners: Vec<&'e Owner>,
    classes: Classes,
    /// Waiter → (ancestor pid, what it holds, the waiter's line in the process table).
    inherited: BTreeMap<usize, Vec<(i64, String, Option<String>)>>,
}

impl<'e> Graph<'e> {
    fn new(edges: &'e [&'e Edge]) -> Graph<'e> {
        let mut owners: BTreeSet<&Owner> = BTreeSet::new();
        for e in edges {
            owners.insert(&e.from);
            owners.insert(&e.to);
        }
        let owners: Vec<&Owner> = owners.into_iter().collect();
        Graph {
            edges,
            classes: Classes((0..owners.len()).collect()),
            owners,
            inherited: BTreeMap::new(),
        }
    }

    /// An owner's number.
    fn id(&self, o: &Owner) -> usize {
        self.owners
            .binary_search(&o)
            .expect("every endpoint is numbered")
    }

    /// Joins each waiting process with its ancestors that hold a lock of this graph (a
    /// file inherited across fork holds the parent's flock), noting what it inherited.
    fn join_inherited(&mut self, snap: u32, res: &Resolver) {
        let edges = self.edges;
        let holders: BTreeSet<&Owner> = edges.iter().map(|e| &e.to).collect();
        for e in edges {
            let Owner::Process { node, pid } = &e.from else {
                continue;
            };
            let Some(table) = res.table(node, snap) else {
                continue;
            };
            for a in table.ancestors(*pid) {
                let anc = Owner::Process {
                    node: node.clone(),
                    pid: a,
                };
                if !holders.contains(&anc) {
                    continue;
                }
                let (from, to) = (self.id(&e.from), self.id(&anc));
                self.classes.join(from, to);
                let comm = table.get(a).map(|t| plain(t.comm.as_bytes()));
                let ancestor = process(a, comm.as_deref());
                let held: Vec<&str> = edges
                    .iter()
                    .filter(|x| x.to == anc)
                    .map(|x| x.glock.as_str())
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                let cite = res.task(node, snap, *pid).map(|(_, cite)| cite);
                let v = self.inherited.entry(from).or_default();
                if !v.iter().any(|x| x.0 == a) {
                    let text = format!("{ancestor}, its ancestor, holds {}", held.join(", "));
                    v.push((a, text, cite));
                }
            }
        }
    }

    /// Joins each waiting process with the holders, on its node, of glocks whose files it
    /// has open (glockfd): an flock belongs to the open file, which a child inherits from
    /// the process that locked it. This links a waiter to its ancestor's lock where no
    /// process table was captured (a plain copy of debugfs). The glock
    /// it waits for is left out: a waiter always has that file open.
    fn join_open_files(&mut self, snap: u32, res: &Resolver) {
        let edges = self.edges;
        // (node, glock) → the edges to its holders.
        let mut held: HashMap<(&str, &str), Vec<&Edge>> = HashMap::new();
        for h in edges {
            if let Owner::Process { node, .. } = &h.to {
                held.entry((node, &h.glock)).or_default().push(h);
            }
        }
        for e in edges {
            let Owner::Process { node, pid } = &e.from else {
                continue;
            };
            for (glock, cite) in res.open_files(node, snap, *pid) {
                let glock = glock.to_string();
                if glock == e.glock {
                    continue;
                }
                for h in held
                    .get(&(node.as_str(), glock.as_str()))
                    .into_iter()
                    .flatten()
                {
                    let Owner::Process { pid: holder, .. } = &h.to else {
                        continue;
                    };
                    if holder == pid {
                        continue;
                    }
                    let (from, to) = (self.id(&e.from), self.id(&h.to));
                    self.classes.join(from, to);
                    let v = self.inherited.entry(from).or_default();
                    if !v.iter().any(|x| x.0 == *holder) {
                        let text = format!(
                            "{} holds {}, whose file it has open",
                            process(*holder, None),
                            h.glock
                        );
                        v.push((*holder, text, Some(cite.clone())));
                    }
                }
            }
        }
    }

    /// The edges between owner classes; a node standing for an unknown process waits for
    /// whatever its processes wait for (assumed edges).
    fn class_edges(&mut self) -> Vec<Vec<ClassEdge<'e>>> {
        let edges = self.edges;
        let mut adj: Vec<Vec<ClassEdge>> = (0..self.owners.len()).map(|_| Vec::new()).collect();
        for e in edges {
            let (f, t) = (self.id(&e.from), self.id(&e.to));
            let (f, t) = (self.classes.find(f), self.classes.find(t));
            adj[f].push(ClassEdge {
                to: t,
                edge: e,
                assumed: false,
            });
        }
        for v in 0..self.owners.len() {
            let Owner::Node { node } = self.owners[v] else {
                continue;
            };
            let from = self.classes.find(v);
            for e in edges {
                if e.from.node() == node && e.from != *self.owners[v] {
                    let to = self.id(&e.to);
                    adj[from].push(ClassEdge {
                        to: self.classes.find(to),
                        edge: e,
                        assumed: true,
                    });
                }
            }
        }
        for out in &mut adj {
            out.sort_by(|a, b| {
                (a.to, &a.edge.glock, a.assumed).cmp(&(b.to, &b.edge.glock, b.assumed))
            });
            out.dedup_by(|a, b| a.to == b.to && a.edge.glock == b.edge.glock);
        }
        adj
    }

    /// A cycle in words: its key (lead owner and glock of each step), its steps, how sure
    /// it is and why.
    fn describe(&mut self, path: &[(usize, &ClassEdge<'_>)]) -> (CycleKey, Found) {
        let mut members: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for v in 0..self.owners.len() {
            members.entry(self.classes.find(v)).or_default().push(v);
        }
        let (owners, inherited) = (&self.owners, &self.inherited);
        let mut confidence = "certain";
        let mut why = Vec::new();
        let mut key = Vec::new();
        let mut steps = Vec::new();
        for (from, ce) in path {
            let e = ce.edge;
            let lead = owners[*from];
            key.push((lead.clone(), e.glock.clone()));
            let (waits, holds) = sides_in_words(e);
            let mut evidence = in_words_each(&e.cites, &waits, &holds);
            let owner = match lead {
                Owner::Node { node } => {
                    confidence = "possible";
                    why.push(format!(
                        "no source names the process on {node} that holds a lock of the cycle: \
                         {node} stands for it"
                    ));
                    format!("node {node} (no process known)")
                }
                Owner::Process { .. } => {
                    let who = match (&e.from, &e.from_comm) {
                        (Owner::Process { pid, .. }, comm) => process(*pid, comm.as_deref()),
                        (Owner::Node { node }, _) => format!("node {node}"),
                    };
                    let mut notes = Vec::new();
                    for m in members.get(from).into_iter().flatten() {
                        for (_, text, cite) in inherited.get(m).into_iter().flatten() {
                            notes.push(text.clone());
                            evidence.extend(cite.iter().map(|c| Cited {
                                cite: c.clone(),
                                shows: format!("{who}: {text}"),
                            }));
                            if confidence == "certain" {
                                confidence = "likely";
                            }
                            why.push(format!(
                                "{text} through a file inherited by {who}, counted as its own"
                            ));
                        }
                    }
                    notes.dedup();
                    if notes.is_empty() {
                        who
                    } else {
                        format!("{who} ({})", notes.join("; "))
                    }
                }
            };
            if ce.assumed {
                confidence = "possible";
            }
            if e.guess {
                confidence = "possible";
                why.push(guessed(e));
            }
            unique_by(&mut evidence, |c| c.cite.clone());
            let (pid, comm) = match &e.from {
                Owner::Process { pid, .. } => (Some(*pid), e.from_comm.clone()),
                Owner::Node { .. } => (None, None),
            };
            steps.push(Step {
                node: e.from.node().to_string(),
                pid,
                comm,
                owner,
                waits_for: e.glock.clone(),
                evidence,
            });
        }
        if why.is_empty() {
            why.push("every wait names its process, from the snapshot's own files".into());
        }
        why.dedup();
        let f = Found {
            steps,
            snapshots: BTreeSet::new(),
            confidence,
            why: why.join("; "),
        };
        (key, f)
    }
}

/// An edge's wait and the hold it waits for, in words: `pid 395 [flock] on n1 waits for
/// 6/4101d`, `pid 376 [flock] on n2 holds 6/4101d`.
fn sides_in_words(e: &Edge) -> (String, String) {
    let named = |o: &Owner, comm: &Option<String>| match o {
        Owner::Process { pid, node } => in_words(node, Some(*pid), comm),
        Owner::Node { node } => in_words(node, None, &None),
    };
    (
        format!("{} waits for {}", named(&e.from, &e.from_comm), e.glock),
        format!("{} holds {}", named(&e.to, &e.to_comm), e.glock),
    )
}

/// Each of `cites` with what it shows: `waits` for the waiter's lines, `holds` for the
/// holder's.
fn in_words_each(cites: &[(Side, String)], waits: &str, holds: &str) -> Vec<Cited> {
    cites
        .iter()
        .map(|(side, cite)| Cited {
            cite: cite.clone(),
            shows: match side {
                Side::Waiter => waits,
                Side::Holder => holds,
            }
            .to_string(),
        })
        .collect()
}

/// One side of a wait in words: `pid 395 [flock] on n1`, or `node n1 (no process known)`.
fn in_words(node: &str, pid: Option<i64>, comm: &Option<String>) -> String {
    match pid {
        Some(pid) => format!("{} on {node}", process(pid, comm.as_deref())),
        None => format!("node {node} (no process known)"),
    }
}

/// Why a wait whose waiter is one of several candidates makes a cycle only possible.
fn guessed(e: &Edge) -> String {
    let who = match &e.from {
        Owner::Process { pid, .. } => process(*pid, None),
        Owner::Node { node } => format!("node {node}"),
    };
    format!(
        "no source names the process on {} that waits for {}: {who} is one of the processes \
         with its file open that may (glockfd), and closes the cycle",
        e.from.node(),
        e.glock
    )
}

/// The shortest cycle from `start` back to it through owners of `inside` (breadth first,
/// so the edges of the first one found, in edge order), each edge with the owner it
/// leaves.
fn shortest_cycle<'a, 'e>(
    start: usize,
    adj: &'a [Vec<ClassEdge<'e>>],
    succ: &[Vec<usize>],
    inside: &BTreeSet<usize>,
) -> Option<Vec<(usize, &'a ClassEdge<'e>)>> {
    let mut came_by: HashMap<usize, (usize, usize)> = HashMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for (k, &w) in succ[v].iter().enumerate() {
            if w == start {
                let mut path = vec![(v, &adj[v][k])];
                let mut at = v;
                while at != start {
                    let (from, edge) = came_by[&at];
                    path.push((from, &adj[from][edge]));
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
        let p = |pid| Owner::Process {
            node: format!("n{}", pid % 2),
            pid,
        };
        Edge {
            from: p(from),
            to: p(to),
            glock: glock.into(),
            snapshot: 0,
            from_comm: None,
            cites: Vec::new(),
            guess: false,
            to_comm: None,
        }
    }

    fn run(edges: &[Edge]) -> Vec<Cycle> {
        let caps = bundle::Captures::default();
        let ids = HashMap::new();
        cycles(edges, &Resolver::new(&caps, &[], &ids))
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
                    .map(|s| (s.pid.unwrap_or(-1), s.waits_for.as_str()))
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

    fn at(node: &str, snapshot: u32) -> crate::snapshots::At {
        crate::snapshots::At {
            node: node.into(),
            snapshot,
            time_unix: None,
        }
    }

    fn hold(node: &str, snap: u32, glock: &str, role: &str, pid: i64, caller: &str) -> Hold {
        Hold {
            at: at(node, snap),
            glock: glock.parse().unwrap(),
            role: match role {
                "holder" => Role::Holder,
                "waiter" => Role::Waiter,
                _ => Role::Queued,
            },
            pid,
            comm: format!("c{pid}").into(),
            state: glockparse::LockState::Exclusive,
            flags: glockparse::HolderFlags::default(),
            caller: caller.into(),
            error: 0,
            line: 1,
        }
    }

    use glockparse::DlmMode;

    fn dlm(node: &str, snap: u32, owner: u64, pid: u64, status: &str, gr: &str, rq: &str) -> Dlm {
        let mode = |m: &str| DlmMode::parse(m.as_bytes()).unwrap_or(DlmMode::IV);
        Dlm {
            at: at(node, snap),
            lock: glockparse::dlm_locks::OwnedLock {
                owner: Some(owner),
                lock: glockparse::dlm_locks::DlmLock {
                    id: 0,
                    nodeid: 0,
                    remid: 0,
                    pid,
                    exflags: 0,
                    flags: 0,
                    status: match status {
                        "granted" => LockStatus::Granted,
                        "waiting" => LockStatus::Waiting,
                        "converting" => LockStatus::Converting,
                        _ => LockStatus::Other(0),
                    },
                    grmode: mode(gr),
                    rqmode: mode(rq),
                    age_us: 0,
                    master_nodeid: 0,
                    resource: String::new(),
                    glock: Some("2/99".parse().unwrap()),
                    line: 1,
                },
            },
        }
    }

    /// Captures of n1 and n2 with a glocks file in each of `snaps`.
    fn caps(snaps: &[u32]) -> bundle::Captures {
        let mut c = bundle::Captures::default();
        for (id, n) in [(1, "n1"), (2, "n2")] {
            c.nodes.push(bundle::NodeCapture {
                node: n.into(),
                nodeid: Some(id),
                snapshots: snaps
                    .iter()
                    .map(|i| {
                        let mut s = bundle::Snapshot::new(*i);
                        s.set(bundle::FileKind::Glocks, format!("glocks.{i}").into());
                        s
                    })
                    .collect(),
                ..bundle::NodeCapture::default()
            });
        }
        c
    }

    fn ids() -> HashMap<u64, String> {
        HashMap::from([(1, "n1".to_string()), (2, "n2".to_string())])
    }

    #[test]
    fn two_waiters_are_two_rows_each_with_its_own_call_site() {
        let holds = [
            hold("n1", 0, "2/99", "holder", 5, "h"),
            hold("n2", 0, "2/99", "waiter", 10, "first"),
            hold("n2", 0, "2/99", "waiter", 11, "second"),
        ];
        let (caps, ids) = (caps(&[0]), ids());
        let rows = analyze(&holds, &[], &Resolver::new(&caps, &[], &ids)).cross_node;
        let got: Vec<(Option<i64>, Option<&str>)> = rows
            .iter()
            .map(|r| (r.waiter_pid, r.waiter_caller.as_deref()))
            .collect();
        assert_eq!(got, [(Some(10), Some("first")), (Some(11), Some("second"))]);
    }

    #[test]
    fn a_party_is_a_process_the_node_or_unknown() {
        let (caps, ids) = (caps(&[0]), ids());
        let owners = Resolver::new(&caps, &[], &ids);
        let nopid = |glock: &str| Hold {
            comm: "(none)".into(),
            ..hold("n1", 0, glock, "holder", 0, "gfs2_atomic_open")
        };
        let words = |h: &Hold| {
            let p = owners.party(h);
            (p.source, p.named())
        };
        let process = hold("n1", 0, "2/99", "holder", 5, "h");
        assert_eq!(words(&process), ("glocks", "pid 5 [c5]".into()));
        // A cached inode's iopen hold is the node's (6.1+); a hold with no owner pid
        // shows as `p:-1 [(ended)]` before 6.1.
        let node = ("node", "no process (GL_NOPID)".to_string());
        assert_eq!(words(&nopid("5/99")), node);
        let old = Hold {
            pid: -1,
            comm: "(ended)".into(),
            ..nopid("5/99")
        };
        assert_eq!(words(&old), node);
        // An flock's hold belongs to a process, which no source names here.
        let unknown = ("none", "pid ? (no source names the process)".to_string());
        assert_eq!(words(&nopid("6/99")), unknown);
    }

    #[test]
    fn a_dlm_conversion_with_no_waiting_process_is_no_row() {
        // n2's DLM lock converts while n1 holds EX, but n2's glocks file shows no waiter.
        let locks = [
            dlm("n1", 0, 2, 1255, "converting", "NL", "EX"),
            dlm("n1", 0, 1, 300, "granted", "EX", ""),
        ];
        let holds = [hold("n1", 0, "2/99", "holder", 300, "h")];
        let (c, ids) = (caps(&[0]), ids());
        let rows = analyze(&holds, &locks, &Resolver::new(&c, &locks, &ids)).cross_node;
        assert!(rows.is_empty(), "{rows:?}");
        // Without n2's glocks file the DLM lock stands for the waiter, but its pid (the
        // last process that asked, for an inode glock) is not taken as the waiter's.
        let c = caps(&[]);
        let rows = analyze(&[], &locks, &Resolver::new(&c, &locks, &ids)).cross_node;
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!((rows[0].waiter_pid, rows[0].waiter_source), (None, "none"));
        assert_eq!((rows[0].holder_pid, rows[0].holder_source), (None, "none"));
        let cited: Vec<(&str, &str)> = rows[0]
            .cites
            .iter()
            .map(|c| (c.cite.as_str(), c.shows.as_str()))
            .collect();
        let waits = "node n2 (no process known) waits for 2/99";
        assert_eq!(cited, [("n1/dlm_locks.0:1", waits)]);
    }

    #[test]
    fn a_node_standing_for_an_unknown_process_makes_a_possible_cycle() {
        let node = |n: &str| Owner::Node { node: n.into() };
        let p = |n: &str, pid| Owner::Process {
            node: n.into(),
            pid,
        };
        let e = |from: Owner, to: Owner, g: &str| Edge {
            from,
            to,
            glock: g.into(),
            snapshot: 0,
            from_comm: None,
            cites: Vec::new(),
            guess: false,
            to_comm: None,
        };
        // n1's pid 1 waits for a lock held by no known process on n2; n2's pid 2 waits for
        // pid 1's lock.
        let edges = [
            e(p("n1", 1), node("n2"), "5/a"),
            e(p("n2", 2), p("n1", 1), "2/b"),
        ];
        let c = run(&edges);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].confidence, "possible");
        assert!(c[0].steps.iter().any(|s| s.owner.starts_with("node n2")));
        // Named processes on both sides: certain.
        let edges = [
            e(p("n1", 1), p("n2", 2), "5/a"),
            e(p("n2", 2), p("n1", 1), "2/b"),
        ];
        assert_eq!(run(&edges)[0].confidence, "certain");
    }
}
