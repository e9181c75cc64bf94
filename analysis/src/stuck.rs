//! Stuck or slow, and leaks (the statedump method):
//! * a waiter still waiting in the node's last snapshot is stuck once it has waited at least
//!   the threshold ([`is_stuck`]) by the best clock there is: the span of the run of
//!   snapshots through the last that saw it waiting (their `time.N`), or its DLM request's
//!   queue age in the last lock dumps; under the threshold, or with no clock, it is still
//!   waiting; a waiter seen only in snapshots before that run was slow but moved;
//! * glock counts per type that only grow across 3 or more snapshots;
//! * from traces, per glock: holders queued but not dequeued by the end of the trace
//!   (the queue/dequeue balance, as the systemtap ref-leak method), and glocks freed
//!   (`glock_put`) versus seen.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// The default threshold of the stuck rule, in seconds, on every command that judges stuck.
pub const STUCK_AFTER_SECS: f64 = 30.0;

/// The one stuck rule: a waiter that has waited at least `after` seconds is stuck. How long
/// it has waited comes from the best source there is (the DLM lock dump's queue age, else
/// the span of the snapshots or refreshes that saw it waiting); callers say which.
pub fn is_stuck(waited_secs: f64, after: f64) -> bool {
    waited_secs >= after
}

use glockparse::{DlmMode, GlockId, GlockType};

use super::GlockMap;
use traceparse::Gfs2Event;

use serde::Serialize;

use super::owners::{Parties, Queuers, Resolver};
use crate::snapshots::{Hold, Role};

/// A waiter seen in the snapshots.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Wait {
    /// The node.
    pub node: String,
    /// The glock waited for.
    pub glock: String,
    /// The waiting process, resolved as in the cross-node waits (`None`: no source
    /// names it).
    pub pid: Option<i64>,
    /// Its command.
    pub comm: Option<String>,
    /// Where the pid comes from: `glocks`, `locks`, `dlm` or `none`.
    pub pid_source: &'static str,
    /// The call site that queued the wait.
    pub caller: String,
    /// The state asked for.
    pub state: String,
    /// The first snapshot it was seen waiting in.
    pub first_snapshot: u32,
    /// The last.
    pub last_snapshot: u32,
    /// Snapshots it was seen waiting in: for `stuck` and `waiting` those of the run through
    /// the node's last (each of the node's snapshots from `first_snapshot` on); for
    /// `progressed` those before it.
    pub snapshots: usize,
    /// For `stuck` and `waiting`: seconds from `first_snapshot` to `last_snapshot` by the
    /// snapshots' clock (their `time.N`), how long it was seen waiting, at the least. `None`
    /// when it was seen in one snapshot, or a snapshot has no time, and for `progressed`
    /// (its snapshots need not follow one another: two waits may have ended).
    pub span_secs: Option<f64>,
    /// For `stuck` and `waiting`: how long its DLM request has waited, in µs, as the last
    /// dump that has held it longest shows it (the same glock, node id and pid: the asking
    /// node's and the master's dumps both list it). `None`: no dump lists it (a wait behind
    /// a holder on the same node sends no DLM request).
    pub dlm_age_us: Option<u64>,
    /// That dump's line, `NODE/FILE:LINE`.
    pub dlm_cite: Option<String>,
    /// For `stuck`: the clock by which it has waited at least the threshold, the
    /// snapshots' when both have.
    pub judged_by: Option<Clock>,
    /// `stuck`: still waiting in the node's last snapshot, and waited at least the
    /// threshold; `waiting`: still waiting, under the threshold so far or with no clock to
    /// tell; `progressed`: gone before the end.
    pub verdict: &'static str,
}

/// What tells how long a waiter has waited.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Clock {
    /// The span of the snapshots that saw it waiting (their `time.N`).
    Snapshots,
    /// Its DLM request's queue age in a lock dump.
    Dlm,
}

impl Wait {
    /// How long it has waited at the least, by the longer of its two clocks (`None`:
    /// neither tells).
    pub fn waited_secs(&self) -> Option<f64> {
        match (self.span_secs, self.dlm_secs()) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// Its DLM request's age, in seconds.
    fn dlm_secs(&self) -> Option<f64> {
        self.dlm_age_us.map(|us| us as f64 / 1e6)
    }

    /// The one stuck rule applied to a wait still going on at the end: the clock by which
    /// it has waited at least `after` seconds, the snapshots' first.
    fn judge(&self, after: f64) -> Option<Clock> {
        let by = |secs: Option<f64>| secs.is_some_and(|s| is_stuck(s, after));
        if by(self.span_secs) {
            Some(Clock::Snapshots)
        } else if by(self.dlm_secs()) {
            Some(Clock::Dlm)
        } else {
            None
        }
    }
}

/// A glock type whose count only grows on a node.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Growth {
    /// The node.
    pub node: String,
    /// The type's name.
    #[serde(rename = "type")]
    pub gltype: String,
    /// Glock count per snapshot, in snapshot order.
    pub counts: Vec<u64>,
}

/// A glock with holders queued but not dequeued by the end of a node's trace.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Unbalanced {
    /// The node.
    pub node: String,
    /// The glock.
    pub glock: GlockId,
    /// Holders queued.
    pub queued: u64,
    /// Holders dequeued.
    pub dequeued: u64,
    /// queued - dequeued at the end of the trace.
    pub balance: i64,
    /// Pids whose queues were not matched by a dequeue.
    pub pids: Vec<i64>,
    /// The same processes in words, with the command each queued under in the trace
    /// (`pid 426 [mount]`).
    pub queued_by: Vec<String>,
    /// Who held and who waited for it in the node's last glocks snapshot, named as the
    /// contended glocks name theirs (`no process (GL_NOPID) SH gfs2_fill_super+0x811/0xd80
    /// [gfs2]`): with `queued_by`, what tells the filesystem's own holds, taken at mount
    /// for as long as it is mounted, from a process's. Empty when that snapshot shows none.
    #[serde(flatten)]
    pub parties: Parties,
}

impl Unbalanced {
    /// Whether it is an iopen glock, which each cached inode keeps queued from lookup to
    /// eviction: expected at the end of a trace, not a leak.
    pub fn is_iopen(&self) -> bool {
        self.glock.glock_type() == GlockType::Iopen
    }
}

/// A DLM lock waiting (or converting) in a node's last DLM dump, with how long it has
/// been in that queue: the age of a wait, from one snapshot.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DlmWait {
    /// Whose dump shows it.
    pub node: String,
    /// The snapshot.
    pub snapshot: u32,
    /// The glock.
    pub glock: GlockId,
    /// The node that asked (a master's dump lists other nodes' locks).
    pub owner_nodeid: Option<u64>,
    /// The process that made the request.
    pub pid: u64,
    /// The mode requested.
    pub rqmode: Option<DlmMode>,
    /// The mode granted, for a conversion.
    pub grmode: Option<DlmMode>,
    /// Microseconds in the queue.
    pub age_us: u64,
    /// Its line in the dump.
    pub line: u64,
    /// That line, `NODE/FILE:LINE`.
    pub cite: String,
}

/// Stuck and slow waiters, growth and leaks.
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct Report {
    /// The threshold that judged `stuck`, in seconds.
    pub stuck_after_secs: f64,
    /// Waiters still waiting in the node's last snapshot that have waited at least
    /// `stuck_after_secs`.
    pub stuck: Vec<Wait>,
    /// DLM locks waiting in each node's last dump, oldest first.
    pub dlm_waits: Vec<DlmWait>,
    /// Waiters still waiting in the node's last snapshot, under the threshold so far or
    /// with no clock to tell.
    pub waiting: Vec<Wait>,
    /// Waiters gone before the last snapshot: slow, but they moved.
    pub progressed: Vec<Wait>,
    /// Glock types whose count only grows.
    pub growing: Vec<Growth>,
    /// Glocks with holders queued but not dequeued by the end of the trace, the glocks of
    /// other types before the iopen glocks.
    pub unbalanced: Vec<Unbalanced>,
    /// Per node, how many of `unbalanced` are iopen glocks: every inode in a node's cache
    /// keeps its iopen glock queued from lookup to eviction, so these are the inodes looked
    /// up during the trace and still cached at its end, not leaks.
    pub iopen_held: BTreeMap<String, u64>,
    /// Glocks with trace events, and how many of them were freed during the trace.
    pub glocks_seen_in_traces: usize,
    /// Of those, glocks freed (`glock_put`) during the trace.
    pub glocks_put_in_traces: usize,
}

/// The clocks of the stuck rule and its threshold: when each snapshot was taken, and the
/// DLM locks waiting in the last dumps.
pub struct Clocks<'a> {
    /// `time.N` of each (node, snapshot), seconds since the epoch.
    pub snapshot_times: HashMap<(&'a str, u32), f64>,
    /// The DLM locks waiting in each node's last dump.
    pub dlm_waits: &'a [DlmWait],
    /// The threshold, in seconds.
    pub stuck_after: f64,
}

impl Clocks<'_> {
    /// Seconds from snapshot `first` of `node` to its snapshot `last`, when they are two
    /// and both have times.
    fn span(&self, node: &str, first: u32, last: u32) -> Option<f64> {
        if first == last {
            return None;
        }
        let t = |i| self.snapshot_times.get(&(node, i)).copied();
        Some(t(last)? - t(first)?)
    }

    /// The DLM request of the wait of `pid` for `glock` on `node`, as the last dump that
    /// has held it longest shows it: the same glock, asked by that node (named by `res`)
    /// and pid.
    fn dlm_wait_of(
        &self,
        res: &Resolver,
        node: &str,
        glock: &str,
        pid: Option<i64>,
    ) -> Option<&DlmWait> {
        let pid = u64::try_from(pid?).ok()?;
        self.dlm_waits
            .iter()
            .filter(|d| {
                d.pid == pid && d.owner_nodeid.and_then(|id| res.node_of_id(id)) == Some(node)
            })
            .filter(|d| d.glock.to_string() == glock)
            .max_by_key(|d| d.age_us)
    }
}

/// Waiters across snapshots (stuck, still waiting or progressed) judged by `clocks`, glock
/// counts that only grow, and the queue/dequeue balance of each traced glock.
pub fn analyze(
    holds: &[Hold],
    glock_types: &BTreeMap<(String, u32), BTreeMap<String, u64>>,
    traces: &[(&str, &NodeBalance, usize)],
    res: &Resolver,
    clocks: &Clocks<'_>,
) -> Report {
    let mut r = Report {
        stuck_after_secs: clocks.stuck_after,
        ..Report::default()
    };
    waits(holds, glock_types, res, clocks, &mut r);
    r.growing = growing(glock_types);
    balance(traces, res, &mut r);
    name_holders(&mut r.unbalanced, holds, glock_types, res);
    r
}

/// The waiters of the snapshots: those waiting in the run of the node's snapshots through
/// its last, stuck or still waiting by `clocks`; those seen in snapshots before that run,
/// progressed.
fn waits(
    holds: &[Hold],
    glock_types: &BTreeMap<(String, u32), BTreeMap<String, u64>>,
    res: &Resolver,
    clocks: &Clocks<'_>,
    r: &mut Report,
) {
    // Snapshots per node.
    let mut snaps: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
    for (n, s) in glock_types.keys() {
        snaps.entry(n.as_str()).or_default().insert(*s);
    }
    // Keyed by the glock's name: the lists are in (node, glock name) order.
    type Key<'a> = (&'a str, String, Option<i64>, &'a str);
    let mut seen: BTreeMap<Key<'_>, (BTreeSet<u32>, &Hold, super::owners::Party)> = BTreeMap::new();
    for h in holds.iter().filter(|h| h.role == Role::Waiter) {
        let who = res.party(h);
        seen.entry((&h.at.node, h.glock.to_string(), who.pid, &h.caller))
            .or_insert_with(|| (BTreeSet::new(), h, who))
            .0
            .insert(h.at.snapshot);
    }
    for ((node, glock, pid, caller), (seen_in, h, who)) in seen {
        let all: Vec<u32> = snaps
            .get(node)
            .map(|x| x.iter().copied().collect())
            .unwrap_or_default();
        let wait = |verdict, snapshots: &[u32]| Wait {
            node: node.to_string(),
            glock: glock.clone(),
            pid,
            comm: who.comm.clone(),
            pid_source: who.source,
            caller: caller.to_string(),
            state: h.state.to_string(),
            first_snapshot: snapshots[0],
            last_snapshot: snapshots[snapshots.len() - 1],
            snapshots: snapshots.len(),
            span_secs: None,
            dlm_age_us: None,
            dlm_cite: None,
            judged_by: None,
            verdict,
        };
        // The run of the node's snapshots through its last in which it waited throughout:
        // the wait going on at the end. Snapshots before that run saw a wait that ended.
        let run = all.iter().rev().take_while(|x| seen_in.contains(x)).count();
        let (before, through_end) = all.split_at(all.len() - run);
        let ended: Vec<u32> = before
            .iter()
            .copied()
            .filter(|x| seen_in.contains(x))
            .collect();
        if !ended.is_empty() {
            r.progressed.push(wait("progressed", &ended));
        }
        if run == 0 {
            continue;
        }
        let mut w = wait("waiting", through_end);
        w.span_secs = clocks.span(node, w.first_snapshot, w.last_snapshot);
        if let Some(d) = clocks.dlm_wait_of(res, node, &glock, pid) {
            w.dlm_age_us = Some(d.age_us);
            w.dlm_cite = Some(d.cite.clone());
        }
        w.judged_by = w.judge(clocks.stuck_after);
        if w.judged_by.is_some() {
            w.verdict = "stuck";
            r.stuck.push(w);
        } else {
            r.waiting.push(w);
        }
    }
}

/// Glock types whose count only grows, per node, over 3 or more snapshots.
fn growing(glock_types: &BTreeMap<(String, u32), BTreeMap<String, u64>>) -> Vec<Growth> {
    let mut out = Vec::new();
    // Types whose glock count only grows.
    let mut series: BTreeMap<(&str, &str), Vec<u64>> = BTreeMap::new();
    for ((node, _), types) in glock_types {
        let all_types: BTreeSet<&String> = glock_types
            .iter()
            .filter(|((n, _), _)| n == node)
            .flat_map(|(_, t)| t.keys())
            .collect();
        for t in all_types {
            series
                .entry((node.as_str(), t.as_str()))
                .or_default()
                .push(types.get(t).copied().unwrap_or(0));
        }
    }
    for ((node, t), counts) in series {
        if counts.len() >= 3 && counts.windows(2).all(|w| w[1] > w[0]) {
            out.push(Growth {
                node: node.to_string(),
                gltype: t.to_string(),
                counts,
            });
        }
    }
    out
}

/// The queue/dequeue balance of each traced glock, each pid named by the command `res`
/// knows it queued under, and the glocks seen and freed.
fn balance(traces: &[(&str, &NodeBalance, usize)], res: &Resolver, r: &mut Report) {
    // Queue/dequeue balance per node and glock, in (node, glock) order.
    let mut bal: BTreeMap<(&str, GlockId), &Balance> = BTreeMap::new();
    for (node, b, _) in traces {
        for (g, x) in &b.per_glock {
            bal.insert((node, *g), x);
        }
        r.glocks_put_in_traces += b.put.len();
    }
    r.glocks_seen_in_traces = traces.iter().map(|(_, _, seen)| seen).sum();
    for (
        (node, glock),
        Balance {
            queued: q,
            dequeued: d,
            pids,
        },
    ) in bal
    {
        let (q, d) = (*q, *d);
        if q > d {
            let pids: Vec<i64> = pids
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(p, _)| *p)
                .collect();
            let u = Unbalanced {
                node: node.to_string(),
                glock,
                queued: q,
                dequeued: d,
                balance: q as i64 - d as i64,
                queued_by: pids
                    .iter()
                    .map(|p| super::owners::process(*p, res.queued_as(node, *p).as_deref()))
                    .collect(),
                pids,
                parties: Parties::default(),
            };
            if u.is_iopen() {
                *r.iopen_held.entry(u.node.clone()).or_default() += 1;
            }
            r.unbalanced.push(u);
        }
    }
    // Other glocks first, then the largest balance; ties by the glock's text, the order
    // the reports have always had.
    let key = |u: &Unbalanced| {
        (
            u.is_iopen(),
            std::cmp::Reverse(u.balance),
            u.glock.to_string(),
        )
    };
    r.unbalanced.sort_by_cached_key(key);
}

/// The holders and waiters of each unbalanced glock in its node's last snapshot, named by
/// `res` and cited, the holders' lines first.
fn name_holders(
    unbalanced: &mut [Unbalanced],
    holds: &[Hold],
    glock_types: &BTreeMap<(String, u32), BTreeMap<String, u64>>,
    res: &Resolver,
) {
    // Keys in (node, snapshot) order: the last one of each node wins.
    let last: BTreeMap<&str, u32> = glock_types.keys().map(|(n, s)| (n.as_str(), *s)).collect();
    let index: HashMap<(&str, GlockId), usize> = unbalanced
        .iter()
        .enumerate()
        .map(|(i, u)| ((u.node.as_str(), u.glock), i))
        .collect();
    let mut named: Vec<(usize, &Hold)> = Vec::new();
    for h in holds {
        let node = h.at.node.as_str();
        if last.get(node) != Some(&h.at.snapshot) {
            continue;
        }
        if let Some(&i) = index.get(&(node, h.glock)) {
            named.push((i, h));
        }
    }
    for (i, h) in named {
        unbalanced[i].parties.add("", h, res);
    }
}

/// Queues, dequeues, and the balance per pid.
#[derive(Default)]
pub struct Balance {
    queued: u64,
    dequeued: u64,
    pids: BTreeMap<i64, i64>,
}

/// One node's queue/dequeue balance and freed glocks, fed its events.
#[derive(Default)]
pub struct NodeBalance {
    per_glock: GlockMap<Balance>,
    /// Glocks freed (`glock_put`).
    put: HashSet<GlockId>,
    /// The command of each pid that queued a holder.
    pub queuers: Queuers,
}

impl NodeBalance {
    /// Feeds one event of `glock`.
    pub fn add(&mut self, pid: i64, glock: GlockId, e: &Gfs2Event) {
        match *e {
            Gfs2Event::GlockQueue { queue, .. } => {
                let b = self.per_glock.entry(glock).or_default();
                if queue {
                    b.queued += 1;
                    *b.pids.entry(pid).or_default() += 1;
                } else {
                    b.dequeued += 1;
                    *b.pids.entry(pid).or_default() -= 1;
                }
            }
            Gfs2Event::GlockPut { .. } => {
                self.put.insert(glock);
            }
            _ => {}
        }
    }
}
