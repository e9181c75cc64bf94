//! The questions people debug GFS2 with, answered from frames: each analysis is a
//! function from frames to a part of [`Report`], which serialises to the documented JSON.

pub mod clock;
pub mod contended;
pub mod cross;
pub mod handoff;
pub mod hold_wait;
pub mod owners;
pub mod rows;
pub mod slow;
pub mod storms;
pub mod stuck;
pub mod timeline;
pub mod trace;

/// A hash map keyed by glock ids, with a fast hash: the trace pass looks up every event's
/// glock several times.
pub type GlockMap<V> =
    std::collections::HashMap<glockparse::GlockId, V, foldhash::fast::RandomState>;

use std::collections::{BTreeMap, HashMap};

use polars::prelude::PolarsResult;
use serde::Serialize;

use crate::build::Frames;
use bundle::Captures;
pub use contended::SortBy;
use hold_wait::{DurationSummary, Times};
pub use storms::StormOptions;

#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    pub sort: SortBy,
    /// Entries per list (0: all).
    pub limit: usize,
    pub storms: StormOptions,
}

#[derive(Debug, Clone, Serialize)]
pub struct NodeInfo {
    pub node: String,
    pub nodeid: Option<u64>,
    pub snapshots: usize,
    pub traces: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct HoldWait {
    pub glock: String,
    #[serde(rename = "type")]
    pub gltype: String,
    pub wait: DurationSummary,
    pub hold: DurationSummary,
    pub demote: DurationSummary,
    pub waiting_at_end: u64,
    pub held_at_end: u64,
    pub failed: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct HoldWaitType {
    #[serde(rename = "type")]
    pub gltype: String,
    pub wait: DurationSummary,
    pub hold: DurationSummary,
    pub demote: DurationSummary,
}

/// What one node's traces gave the analyses.
#[derive(Debug, Clone, Serialize)]
pub struct TraceInput {
    pub node: String,
    pub trace_lines: u64,
    /// Events with a glock, each fed to every trace analysis once.
    pub events: u64,
    /// The node's files were not in time order: its events were sorted in memory.
    pub sorted_in_memory: bool,
}

/// How much input the report was made from.
#[derive(Debug, Clone, Serialize)]
pub struct Input {
    pub traces: Vec<TraceInput>,
    /// Rows of the snapshot frames the joins read.
    pub glock_rows: usize,
    pub holder_rows: usize,
    pub dlm_lock_rows: usize,
    pub glstats_rows: usize,
}

/// Everything `glk analyze` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub nodes: Vec<NodeInfo>,
    pub input: Input,
    pub contended: Vec<contended::Contended>,
    pub demote_storms: Vec<storms::Storm>,
    pub ping_pong: Vec<storms::PingPong>,
    pub slow_dlm: Vec<slow::SlowGlock>,
    pub slow_dlm_types: Vec<slow::SlowType>,
    pub hold_wait: Vec<HoldWait>,
    pub hold_wait_types: Vec<HoldWaitType>,
    pub cross_node: Vec<cross::CrossNode>,
    pub cycles: Vec<cross::Cycle>,
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

fn cut<T>(mut v: Vec<T>, limit: usize) -> Vec<T> {
    if limit > 0 {
        v.truncate(limit);
    }
    v
}

fn hold_wait_rows(
    times: &BTreeMap<String, Times>,
    limit: usize,
) -> (Vec<HoldWait>, Vec<HoldWaitType>) {
    let mut types: BTreeMap<String, Times> = BTreeMap::new();
    let mut rows: Vec<HoldWait> = times
        .iter()
        .map(|(g, t)| {
            let gltype = g
                .parse::<glockparse::GlockId>()
                .map(|x| x.glock_type().name().into_owned())
                .unwrap_or_default();
            let tt = types.entry(gltype.clone()).or_default();
            tt.wait.merge(&t.wait);
            tt.hold.merge(&t.hold);
            tt.demote.merge(&t.demote);
            HoldWait {
                glock: g.clone(),
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

/// Runs every analysis: `f` holds the snapshots (its events frame is not used), `traces`
/// and `folded` the state of every node's traces after one pass ([`trace::read`]).
pub fn analyze(
    f: &Frames,
    traces: &[trace::NodeTrace],
    folded: &trace::Folded,
    caps: &Captures,
    o: &Options,
) -> PolarsResult<Report> {
    let holds = rows::holders(f)?;
    let dlm = rows::dlm(f)?;
    let times = folded.hold_wait.by_name();
    let counts: Vec<contended::NodeCounts> = traces
        .iter()
        .map(|t| contended::NodeCounts {
            node: &t.node,
            counts: &t.counts,
        })
        .collect();
    let contended = contended::analyze(f, &counts, &times, &holds, o.sort)?;
    let (hold_wait, hold_wait_types) = hold_wait_rows(&times, o.limit);
    let node_by_id: HashMap<u64, String> = caps
        .nodes
        .iter()
        .filter_map(|n| Some((n.nodeid?, n.node.clone())))
        .collect();
    let resolver = owners::Resolver::new(caps, &dlm, &node_by_id);
    let (cross_node, cycles) = cross::analyze(&holds, &dlm, &resolver);
    // glstats of each node's last snapshot: largest srttb over nodes.
    let mut glstats: HashMap<String, (i64, i64)> = HashMap::new();
    {
        let df = &f.glstats;
        let node: Vec<Option<&str>> = df.column("node")?.str()?.iter().collect();
        let snap: Vec<Option<u32>> = df.column("snapshot")?.u32()?.iter().collect();
        let mut last: HashMap<&str, u32> = HashMap::new();
        for (n, s) in node.iter().zip(&snap) {
            if let (Some(n), Some(s)) = (n, s) {
                let e = last.entry(n).or_insert(*s);
                *e = (*e).max(*s);
            }
        }
        let glock: Vec<Option<&str>> = df.column("glock")?.str()?.iter().collect();
        let srttb: Vec<Option<i64>> = df.column("srttb_ns")?.i64()?.iter().collect();
        let dcount: Vec<Option<i64>> = df.column("dcount")?.i64()?.iter().collect();
        for i in 0..df.height() {
            let (Some(n), Some(s), Some(g)) = (node[i], snap[i], glock[i]) else {
                continue;
            };
            if last.get(n) == Some(&s) {
                let e = glstats.entry(g.to_string()).or_insert((i64::MIN, 0));
                if srttb[i].unwrap_or(0) > e.0 {
                    *e = (srttb[i].unwrap_or(0), dcount[i].unwrap_or(0));
                }
            }
        }
    }
    let (slow_dlm, slow_dlm_types) = slow::analyze(&folded.lock_times, &glstats);
    // Glock counts per node, snapshot and type.
    let mut glock_counts: BTreeMap<(String, u32), BTreeMap<String, u64>> = BTreeMap::new();
    {
        let df = &f.glocks;
        let node: Vec<Option<&str>> = df.column("node")?.str()?.iter().collect();
        let snap: Vec<Option<u32>> = df.column("snapshot")?.u32()?.iter().collect();
        let t: Vec<Option<&str>> = df.column("type")?.str()?.iter().collect();
        for i in 0..df.height() {
            if let (Some(n), Some(s), Some(t)) = (node[i], snap[i], t[i]) {
                *glock_counts
                    .entry((n.to_string(), s))
                    .or_default()
                    .entry(t.to_string())
                    .or_default() += 1;
            }
        }
    }
    let balances: Vec<_> = traces
        .iter()
        .map(|t| (t.node.as_str(), &t.balance, t.counts.len()))
        .collect();
    let mut stuck_and_leaks = stuck::analyze(&holds, &glock_counts, &balances, &resolver);
    let mut last_dump: HashMap<&str, u32> = HashMap::new();
    for d in &dlm {
        let e = last_dump.entry(d.node.as_str()).or_insert(d.snapshot);
        *e = (*e).max(d.snapshot);
    }
    stuck_and_leaks.dlm_waits = dlm
        .iter()
        .filter(|d| d.status != "granted" && last_dump.get(d.node.as_str()) == Some(&d.snapshot))
        .map(|d| stuck::DlmWait {
            node: d.node.clone(),
            snapshot: d.snapshot,
            glock: d.glock.clone(),
            owner_nodeid: d.owner_nodeid,
            pid: d.pid,
            rqmode: d.rqmode.clone(),
            grmode: d.grmode.clone(),
            age_us: d.age_us,
            line: d.line,
        })
        .collect();
    stuck_and_leaks
        .dlm_waits
        .sort_by(|a, b| b.age_us.cmp(&a.age_us).then(a.node.cmp(&b.node)));
    stuck_and_leaks.dlm_waits = cut(std::mem::take(&mut stuck_and_leaks.dlm_waits), o.limit);
    stuck_and_leaks.unbalanced = cut(stuck_and_leaks.unbalanced, o.limit);
    let demotes: Vec<(&str, &storms::NodeDemotes)> = traces
        .iter()
        .map(|t| (t.node.as_str(), &t.demotes))
        .collect();
    let nodeids: HashMap<&str, u32> = caps
        .nodes
        .iter()
        .filter_map(|n| Some((n.node.as_str(), u32::try_from(n.nodeid?).ok()?)))
        .collect();
    // Masters per node and glock, from the last snapshot's dump that names one.
    let mut masters: HashMap<&str, GlockMap<u32>> = HashMap::new();
    for d in &dlm {
        if let (Ok(g), Ok(m)) = (d.glock.parse(), u32::try_from(d.master_nodeid)) {
            masters.entry(d.node.as_str()).or_default().insert(g, m);
        }
    }
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
    causality.handoffs = cut(causality.handoffs, o.limit);
    causality.handoff_summary = cut(causality.handoff_summary, o.limit);
    causality.demote_causes = cut(causality.demote_causes, o.limit);
    let input = Input {
        traces: traces
            .iter()
            .map(|t| TraceInput {
                node: t.node.clone(),
                trace_lines: t.lines,
                events: t.events,
                sorted_in_memory: t.sorted_in_memory,
            })
            .collect(),
        glock_rows: f.glocks.height(),
        holder_rows: f.holders.height(),
        dlm_lock_rows: f.dlm_locks.height(),
        glstats_rows: f.glstats.height(),
    };
    Ok(Report {
        input,
        nodes: caps
            .nodes
            .iter()
            .map(|n| NodeInfo {
                node: n.node.clone(),
                nodeid: n.nodeid,
                snapshots: n.snapshots.len(),
                traces: n.traces.len(),
            })
            .collect(),
        contended: cut(contended, o.limit),
        demote_storms: cut(storms::storms(&demotes, o.storms), o.limit),
        ping_pong: cut(storms::ping_pong(&demotes, o.storms), o.limit),
        slow_dlm: cut(slow_dlm, o.limit),
        slow_dlm_types,
        hold_wait,
        hold_wait_types,
        cross_node,
        cycles,
        stuck_and_leaks,
        causality,
        matched,
        diagnostics: resolver.diagnostics.clone(),
    })
}
