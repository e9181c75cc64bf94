//! The questions people debug GFS2 with, answered without polars: the snapshots are read
//! into typed rows ([`snapshots`]), the traces in one pass ([`trace`]), and each analysis is
//! a function from those to a part of [`Report`], which serialises to the documented JSON.
//! [`findings`] turns a report into findings with stable codes. [`refresh`] is what
//! `glk top` sees at each refresh of live or saved glocks files: the same rules (one stuck
//! threshold, one blocking rule, one DLM lock), read again every few seconds.

#![forbid(unsafe_code)]

pub mod clock;
pub mod contended;
pub mod cross;
pub mod findings;
pub mod handoff;
pub mod hold_wait;
pub mod owners;
pub mod refresh;
pub mod slow;
pub mod snapshots;
pub mod storms;
pub mod stuck;
pub mod timeline;
pub mod trace;

/// A hash map keyed by glock ids, with a fast hash: the trace pass looks up every event's
/// glock several times.
pub type GlockMap<V> =
    std::collections::HashMap<glockparse::GlockId, V, foldhash::fast::RandomState>;

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use bundle::Captures;
pub use contended::SortBy;
use glockparse::dlm_locks::LockStatus;
use hold_wait::{DurationSummary, Times};
pub use snapshots::Snapshots;
pub use storms::StormOptions;

/// What the analyses are asked for.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Ranking of the contended glocks.
    pub sort: SortBy,
    /// Entries per list (0: all).
    pub limit: usize,
    /// What makes a demote storm.
    pub storms: StormOptions,
    /// Seconds of waiting that make a waiter stuck ([`stuck::is_stuck`]).
    pub stuck_after: f64,
}

impl Default for Options {
    /// The commands' defaults: ranked by demotes, every entry, the default storm and
    /// stuck thresholds.
    fn default() -> Options {
        Options {
            sort: SortBy::default(),
            limit: 0,
            storms: StormOptions::default(),
            stuck_after: stuck::STUCK_AFTER_SECS,
        }
    }
}

/// One node of the input.
#[derive(Debug, Clone, Serialize)]
pub struct NodeInfo {
    /// Its name.
    pub node: String,
    /// Its DLM node id, when the capture recorded it.
    pub nodeid: Option<u64>,
    /// Snapshots read.
    pub snapshots: usize,
    /// Trace files read.
    pub traces: usize,
}

impl NodeInfo {
    /// What was read of one node's capture.
    fn of(n: &bundle::NodeCapture) -> NodeInfo {
        NodeInfo {
            node: n.node.clone(),
            nodeid: n.nodeid,
            snapshots: n.snapshots.len(),
            traces: n.traces.len(),
        }
    }
}

/// One glock's hold, wait and demote times from the traces.
#[derive(Debug, Clone, Serialize)]
pub struct HoldWait {
    /// The glock.
    pub glock: String,
    /// Its type's name.
    #[serde(rename = "type")]
    pub gltype: String,
    /// Queue to promote.
    pub wait: DurationSummary,
    /// Promote to dequeue.
    pub hold: DurationSummary,
    /// Demote request to the state change that served it.
    pub demote: DurationSummary,
    /// Holders still waiting when the trace ended.
    pub waiting_at_end: u64,
    /// Holders still holding when the trace ended.
    pub held_at_end: u64,
    /// Requests that ended in an error.
    pub failed: u64,
}

/// The hold, wait and demote times of one glock type.
#[derive(Debug, Clone, Serialize)]
pub struct HoldWaitType {
    /// The type's name.
    #[serde(rename = "type")]
    pub gltype: String,
    /// Queue to promote.
    pub wait: DurationSummary,
    /// Promote to dequeue.
    pub hold: DurationSummary,
    /// Demote request to the state change that served it.
    pub demote: DurationSummary,
}

/// What one node's traces gave the analyses.
#[derive(Debug, Clone, Serialize)]
pub struct TraceInput {
    /// The node.
    pub node: String,
    /// Lines read.
    pub trace_lines: u64,
    /// Events with a glock, each fed to every trace analysis once.
    pub events: u64,
    /// The node's files were not in time order: its events were sorted in memory.
    pub sorted_in_memory: bool,
}

/// How much input the report was made from.
#[derive(Debug, Clone, Serialize)]
pub struct Input {
    /// Each node's traces.
    pub traces: Vec<TraceInput>,
    /// Rows of the snapshot frames the joins read.
    pub glock_rows: usize,
    /// Holder lines read.
    pub holder_rows: usize,
    /// DLM locks read.
    pub dlm_lock_rows: usize,
    /// glstats lines read.
    pub glstats_rows: usize,
    /// What other tools' collections lack that glk reads ([`Captures::lacks`]), one line
    /// each; left out when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lacks: Vec<String>,
    /// What the inputs held that was passed over ([`Captures::passed_over`]), one line
    /// each; left out when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub passed_over: Vec<String>,
}

/// Everything `glk analyze` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The nodes read.
    pub nodes: Vec<NodeInfo>,
    /// How much input the report was made from.
    pub input: Input,
    /// Contended glocks, ranked.
    pub contended: Vec<contended::Contended>,
    /// Bursts of remote demotes.
    pub demote_storms: Vec<storms::Storm>,
    /// Glocks given up and regained between nodes over and over.
    pub ping_pong: Vec<storms::PingPong>,
    /// Glocks with the slowest DLM round trips.
    pub slow_dlm: Vec<slow::SlowGlock>,
    /// DLM round trips per glock type.
    pub slow_dlm_types: Vec<slow::SlowType>,
    /// Hold, wait and demote times per glock.
    pub hold_wait: Vec<HoldWait>,
    /// Hold, wait and demote times per glock type.
    pub hold_wait_types: Vec<HoldWaitType>,
    /// Waits of a process on one node for a holder on another.
    pub cross_node: Vec<cross::CrossNode>,
    /// Waits of a process for a holder on its own node (both named): a node's part of the
    /// wait-for graph, which no DLM request shows.
    pub local_waits: Vec<cross::CrossNode>,
    /// Deadlock cycles in the wait-for graph.
    pub cycles: Vec<cross::Cycle>,
    /// Stuck and slow waiters, growth and leaks.
    pub stuck_and_leaks: stuck::Report,
    /// Clock alignment, DLM latency by master, hand-offs and demote causes.
    #[serde(flatten)]
    pub causality: handoff::Causality,
    /// The matched hand-offs, for the timeline.
    #[serde(skip)]
    pub matched: Vec<handoff::Matched>,
    /// Problems reading the capture's process tables and `/proc/locks` copies.
    #[serde(skip)]
    pub diagnostics: glockparse::Diagnostics,
}

impl Report {
    /// The node with DLM node id `id`, by the name the inputs give it: `n1`, else `node 3`
    /// (a node no input captured, named in another node's lock dump).
    pub fn node_named(&self, id: u64) -> String {
        self.nodes
            .iter()
            .find(|n| n.nodeid == Some(id))
            .map_or_else(|| format!("node {id}"), |n| n.node.clone())
    }
}

fn cut<T>(mut v: Vec<T>, limit: usize) -> Vec<T> {
    if limit > 0 {
        v.truncate(limit);
    }
    v
}

fn hold_wait_rows(times: &GlockMap<Times>, limit: usize) -> (Vec<HoldWait>, Vec<HoldWaitType>) {
    let mut types: BTreeMap<String, Times> = BTreeMap::new();
    let mut rows: Vec<HoldWait> = times
        .iter()
        .map(|(g, t)| {
            let gltype = g.glock_type().name().into_owned();
            let tt = types.entry(gltype.clone()).or_default();
            tt.wait.merge(&t.wait);
            tt.hold.merge(&t.hold);
            tt.demote.merge(&t.demote);
            HoldWait {
                glock: g.to_string(),
                gltype,
                wait: t.wait.summary(),
                hold: t.hold.summary(),
                demote: t.demote.summary(),
                waiting_at_end: t.waiting_at_end,
                held_at_end: t.held_at_end,
                failed: t.failed,
            }
        })
        .filter(|r| r.wait.dist.count + r.hold.dist.count + r.demote.dist.count > 0)
        .collect();
    rows.sort_by(|a, b| {
        b.wait
            .total_ns
            .cmp(&a.wait.total_ns)
            .then(a.glock.cmp(&b.glock))
    });
    let types = types
        .into_iter()
        .map(|(t, x)| HoldWaitType {
            gltype: t,
            wait: x.wait.summary(),
            hold: x.hold.summary(),
            demote: x.demote.summary(),
        })
        .collect();
    (cut(rows, limit), types)
}

/// Runs every analysis: `f` holds the snapshots, `traces` and `folded` the state of every
/// node's traces after one pass ([`trace::read`]).
pub fn analyze(
    f: &Snapshots,
    traces: &[trace::NodeTrace],
    folded: &trace::Folded,
    caps: &Captures,
    o: &Options,
) -> Report {
    let (holds, dlm) = (&f.holders, &f.dlm);
    let times = &folded.hold_wait.times;
    let counts: Vec<contended::NodeCounts> = traces
        .iter()
        .map(|t| contended::NodeCounts {
            node: &t.node,
            counts: &t.counts,
        })
        .collect();
    let node_by_id: HashMap<u64, String> = caps
        .nodes
        .iter()
        .filter_map(|n| Some((n.nodeid?, n.node.clone())))
        .collect();
    let resolver = owners::Resolver::new(caps, dlm, &node_by_id)
        .with_holds(holds)
        .with_queuers(traces.iter().map(|t| (t.node.as_str(), &t.balance.queuers)));
    let contended = contended::analyze(f, &counts, times, holds, &resolver, o.sort);
    let (hold_wait, hold_wait_types) = hold_wait_rows(times, o.limit);
    let cross::Waits {
        cross_node,
        local: local_waits,
        cycles,
    } = cross::analyze(holds, dlm, &resolver);
    // glstats of each node's last snapshot: largest srttb over nodes.
    let glstats = last_glstats(f);
    let (slow_dlm, slow_dlm_types) = slow::analyze(&folded.lock_times, &glstats);
    // Glock counts per node, snapshot and type.
    let glock_counts = glock_counts(f);
    let balances: Vec<_> = traces
        .iter()
        .map(|t| (t.node.as_str(), &t.balance, t.counts.len()))
        .collect();
    let waits = dlm_waits(dlm, &resolver);
    let clocks = stuck::Clocks {
        snapshot_times: snapshot_times(caps),
        dlm_waits: &waits,
        stuck_after: o.stuck_after,
    };
    let mut stuck_and_leaks = stuck::analyze(holds, &glock_counts, &balances, &resolver, &clocks);
    stuck_and_leaks.dlm_waits = cut(waits, o.limit);
    stuck_and_leaks.unbalanced = cut(stuck_and_leaks.unbalanced, o.limit);
    let demotes: Vec<(&str, &storms::NodeDemotes)> = traces
        .iter()
        .map(|t| (t.node.as_str(), &t.demotes))
        .collect();
    let (causality, matched) = causality(traces, caps, dlm, o.limit);
    let input = input_of(f, traces, caps);
    Report {
        input,
        nodes: caps.nodes.iter().map(NodeInfo::of).collect(),
        contended: cut(contended, o.limit),
        demote_storms: cut(storms::storms(&demotes, o.storms), o.limit),
        ping_pong: cut(storms::ping_pong(&demotes, o.storms), o.limit),
        slow_dlm: cut(slow_dlm, o.limit),
        slow_dlm_types,
        hold_wait,
        hold_wait_types,
        cross_node,
        local_waits,
        cycles,
        stuck_and_leaks,
        causality,
        matched,
        diagnostics: resolver.diagnostics.clone(),
    }
}

/// The hand-offs between nodes from every node's DLM trace, with the lock dumps' masters
/// and the capture's ssh clock bounds, each list cut to `limit`.
fn causality(
    traces: &[trace::NodeTrace],
    caps: &Captures,
    dlm: &[snapshots::Dlm],
    limit: usize,
) -> (handoff::Causality, Vec<handoff::Matched>) {
    let nodeids: HashMap<&str, u32> = caps
        .nodes
        .iter()
        .filter_map(|n| Some((n.node.as_str(), u32::try_from(n.nodeid?).ok()?)))
        .collect();
    let masters = dump_masters(dlm);
    let none = GlockMap::default();
    let parts: Vec<handoff::NodeInput<'_>> = traces
        .iter()
        .map(|t| handoff::NodeInput {
            node: &t.node,
            dlm: &t.dlm,
            nodeid: nodeids.get(t.node.as_str()).copied(),
            dump_masters: masters.get(t.node.as_str()).unwrap_or(&none),
        })
        .collect();
    let (mut causality, matched) = handoff::analyze(&parts);
    for a in &mut causality.clock_alignment {
        let ssh = caps.nodes.iter().find(|n| n.node == a.node);
        if let Some(c) = ssh.and_then(|n| n.ssh_clock.as_ref()) {
            a.ssh_wall_offset_s = Some([c.min_s, c.max_s]);
            a.ssh_reference = Some(c.gathered_by.clone());
        }
    }
    causality.handoffs = cut(causality.handoffs, limit);
    causality.handoff_summary = cut(causality.handoff_summary, limit);
    causality.demote_causes = cut(causality.demote_causes, limit);
    (causality, matched)
}

/// When each snapshot of each node was taken, where its `time.N` says.
fn snapshot_times(caps: &Captures) -> HashMap<(&str, u32), f64> {
    caps.nodes
        .iter()
        .flat_map(|n| {
            n.snapshots
                .iter()
                .filter_map(|s| Some(((n.node.as_str(), s.index), s.time_unix?)))
        })
        .collect()
}

/// The DLM locks of each node's last lock dump that wait for a grant or a conversion,
/// longest wait first.
fn dlm_waits(dlm: &[snapshots::Dlm], res: &owners::Resolver) -> Vec<stuck::DlmWait> {
    let mut last_dump: HashMap<&str, u32> = HashMap::new();
    for d in dlm.iter().filter(|d| d.glock.is_some()) {
        let e = last_dump.entry(d.at.node.as_str()).or_insert(d.at.snapshot);
        *e = (*e).max(d.at.snapshot);
    }
    let mut waits: Vec<stuck::DlmWait> = dlm
        .iter()
        .filter(|d| d.status != LockStatus::Granted)
        .filter(|d| last_dump.get(d.at.node.as_str()) == Some(&d.at.snapshot))
        .filter_map(|d| {
            Some(stuck::DlmWait {
                node: d.at.node.clone(),
                snapshot: d.at.snapshot,
                glock: d.glock?,
                owner_nodeid: d.owner,
                pid: d.pid,
                rqmode: d.requested(),
                grmode: d.granted(),
                age_us: d.age_us,
                line: d.line,
                cite: res.cite_dlm(d),
            })
        })
        .collect();
    waits.sort_by(|a, b| b.age_us.cmp(&a.age_us).then(a.node.cmp(&b.node)));
    waits
}

/// The master of each glock's resource, per node, as the lock dumps name it (the last
/// snapshot's dump wins).
fn dump_masters(dlm: &[snapshots::Dlm]) -> HashMap<&str, GlockMap<u32>> {
    let mut masters: HashMap<&str, GlockMap<u32>> = HashMap::new();
    for d in dlm {
        if let (Some(g), Ok(m)) = (d.glock, u32::try_from(d.master_nodeid)) {
            masters.entry(d.at.node.as_str()).or_default().insert(g, m);
        }
    }
    masters
}

/// glstats of each node's last snapshot: per glock, the (srttb, dcount) of the node with the
/// largest srttb.
fn last_glstats(f: &Snapshots) -> HashMap<String, (i64, i64)> {
    let mut last: HashMap<&str, u32> = HashMap::new();
    for r in &f.glstats {
        let e = last.entry(r.at.node.as_str()).or_insert(r.at.snapshot);
        *e = (*e).max(r.at.snapshot);
    }
    let mut glstats: HashMap<String, (i64, i64)> = HashMap::new();
    for r in &f.glstats {
        if last.get(r.at.node.as_str()) == Some(&r.at.snapshot) {
            let e = glstats
                .entry(r.stat.glock.to_string())
                .or_insert((i64::MIN, 0));
            if r.stat.stats.srttb > e.0 {
                *e = (r.stat.stats.srttb, r.stat.stats.dcount);
            }
        }
    }
    glstats
}

/// Glock counts per node, snapshot and type name.
fn glock_counts(f: &Snapshots) -> BTreeMap<(String, u32), BTreeMap<String, u64>> {
    let mut counts: BTreeMap<(String, u32), BTreeMap<String, u64>> = BTreeMap::new();
    for g in &f.glocks {
        *counts
            .entry((g.at.node.clone(), g.at.snapshot))
            .or_default()
            .entry(g.glock.glock_type().name().into_owned())
            .or_default() += 1;
    }
    counts
}

/// How much input the report was made from, and what of it was passed over.
fn input_of(f: &Snapshots, traces: &[trace::NodeTrace], caps: &Captures) -> Input {
    Input {
        traces: traces
            .iter()
            .map(|t| TraceInput {
                node: t.node.clone(),
                trace_lines: t.lines,
                events: t.events,
                sorted_in_memory: t.sorted_in_memory,
            })
            .collect(),
        glock_rows: f.glocks.len(),
        holder_rows: f.holders.len(),
        dlm_lock_rows: f.dlm.len(),
        glstats_rows: f.glstats.len(),
        lacks: caps.lacks.clone(),
        passed_over: caps.passed_over.clone(),
    }
}
