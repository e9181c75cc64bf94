//! Findings people act on: what is wrong, how sure, the evidence, and what to do.
//!
//! Each finding has a stable code (the README's table lists them with their thresholds),
//! a severity, the glocks, nodes and processes involved, the evidence behind it (a file
//! and line, or a trace event's node and time), and a remedy. They read the analysis
//! ([`crate::Report`]) and the state around the locks ([`bundle::health`]).
//! The state comes first: on a withdrawn filesystem, without quorum or while the DLM
//! recovers, every glock waits, and the glock findings say so instead of blaming a glock.

use std::collections::BTreeSet;

use bundle::health::{self, LogKind};
use bundle::{Captures, FileKind, NodeFile};
use glockparse::Diagnostics;
use serde::Serialize;

use crate::trace::NodeTrace;
use crate::Report;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Worth knowing; nothing is wrong by itself.
    Info,
    /// May hurt: look when it persists.
    Warning,
    /// Hurts now: a process or a node waits.
    Error,
    /// The filesystem or the cluster cannot work.
    Critical,
}

impl Severity {
    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
            Severity::Critical => "critical",
        }
    }
}

/// One piece of evidence.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Evidence {
    /// `NODE/FILE` of a capture file, or `NODE trace` for a trace event.
    pub source: String,
    /// The line, for file evidence.
    pub line: Option<u64>,
    /// The event time, for trace evidence (the node's trace clock, `SECS.MICROS`).
    pub time: Option<String>,
    /// What it shows.
    pub shows: String,
}

impl Evidence {
    /// Evidence about a source as a whole (no line, no event time).
    pub fn about(source: String, shows: String) -> Evidence {
        Evidence {
            source,
            line: None,
            time: None,
            shows,
        }
    }

    /// Where it is: `SOURCE:LINE`, `SOURCE @TIME` or `SOURCE`.
    pub fn at(&self) -> String {
        match (self.line, &self.time) {
            (Some(l), _) => format!("{}:{l}", self.source),
            (None, Some(t)) => format!("{} @{t}", self.source),
            (None, None) => self.source.clone(),
        }
    }
}

/// A finding's stable code (`GLK-…`), in the order findings of equal severity are reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FindingCode {
    /// `GLK-WITHDRAWN`: the filesystem withdrew on a node.
    Withdrawn,
    /// `GLK-NO-QUORUM`: the cluster has no quorum.
    NoQuorum,
    /// `GLK-DLM-RECOVERY`: the DLM is recovering.
    DlmRecovery,
    /// `GLK-DEADLOCK`: a wait-for cycle.
    Deadlock,
    /// `GLK-STUCK-WAITER`: a waiter past the stuck threshold.
    StuckWaiter,
    /// `GLK-HOT-GLOCK`: a glock demoted between nodes over and over.
    HotGlock,
    /// `GLK-DEMOTE-STORM`: bursts of remote demotes, or ping-pong between nodes.
    DemoteStorm,
    /// `GLK-SLOW-DLM-MASTER`: slow unblocked DLM requests to one master.
    SlowDlmMaster,
    /// `GLK-SLOW-DLM-GLOCK`: one glock's DLM round trips far slower than its type's.
    SlowDlmGlock,
    /// `GLK-RGRP-CONTENTION`: nodes waiting for the same resource group.
    RgrpContention,
    /// `GLK-GLOCK-BUILDUP`: glock counts that only grow.
    GlockBuildup,
    /// `GLK-LOST-EVENTS`: traces that lost events.
    LostEvents,
    /// `GLK-UNPARSED-INPUT`: input lines that could not be read.
    UnparsedInput,
}

impl FindingCode {
    /// The code as printed and serialised: `GLK-…`.
    pub fn as_str(self) -> &'static str {
        match self {
            FindingCode::Withdrawn => "GLK-WITHDRAWN",
            FindingCode::NoQuorum => "GLK-NO-QUORUM",
            FindingCode::DlmRecovery => "GLK-DLM-RECOVERY",
            FindingCode::Deadlock => "GLK-DEADLOCK",
            FindingCode::StuckWaiter => "GLK-STUCK-WAITER",
            FindingCode::HotGlock => "GLK-HOT-GLOCK",
            FindingCode::DemoteStorm => "GLK-DEMOTE-STORM",
            FindingCode::SlowDlmMaster => "GLK-SLOW-DLM-MASTER",
            FindingCode::SlowDlmGlock => "GLK-SLOW-DLM-GLOCK",
            FindingCode::RgrpContention => "GLK-RGRP-CONTENTION",
            FindingCode::GlockBuildup => "GLK-GLOCK-BUILDUP",
            FindingCode::LostEvents => "GLK-LOST-EVENTS",
            FindingCode::UnparsedInput => "GLK-UNPARSED-INPUT",
        }
    }
}

impl std::fmt::Display for FindingCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for FindingCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl PartialEq<&str> for FindingCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// One finding.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Its stable code.
    pub code: FindingCode,
    /// How bad it is.
    pub severity: Severity,
    /// What is wrong, in one line.
    pub title: String,
    /// The glocks involved.
    pub glocks: Vec<String>,
    /// The nodes involved.
    pub nodes: Vec<String>,
    /// The processes involved.
    pub pids: Vec<i64>,
    /// What shows it.
    pub evidence: Vec<Evidence>,
    /// What to do.
    pub remedy: String,
}

impl Finding {
    /// Who is involved, in words (`glocks 2/1a; nodes n1 n2; pids 7`), when anyone is.
    pub fn who(&self) -> Option<String> {
        let mut who = Vec::new();
        if !self.glocks.is_empty() {
            who.push(format!("glocks {}", self.glocks.join(" ")));
        }
        if !self.nodes.is_empty() {
            who.push(format!("nodes {}", self.nodes.join(" ")));
        }
        if !self.pids.is_empty() {
            let pids: Vec<String> = self.pids.iter().map(i64::to_string).collect();
            who.push(format!("pids {}", pids.join(" ")));
        }
        (!who.is_empty()).then(|| who.join("; "))
    }
}

/// A finding's code, what it means, its threshold, the evidence it cites and its remedy:
/// the README's table.
pub struct Code {
    /// The code.
    pub code: FindingCode,
    /// The severity its findings have (some are lowered when the evidence is weak).
    pub severity: Severity,
    /// What it means.
    pub means: &'static str,
    /// What makes a finding.
    pub threshold: &'static str,
    /// The evidence cited.
    pub evidence: &'static str,
    /// What to do.
    pub remedy: &'static str,
}

/// Every code, in the order findings are reported.
pub static CODES: [Code; 13] = [
    Code {
        code: FindingCode::Withdrawn,
        severity: Severity::Critical,
        means: "The filesystem withdrew on a node: it stopped using the shared storage after an I/O or consistency error. Its glocks wait forever; they are not the cause.",
        threshold: "sysfs `withdraw` is 1, or the kernel log says it withdrew (not `Some node has withdrawn`, which a node logs when it checks the withdrawn node's journal)",
        evidence: "`gfs2_sysfs.N` line, `kernel.log` lines (a sos report's `withdraw`, `dmesg`)",
        remedy: "Unmount it on that node (or reboot it), find the cause in the kernel log (storage errors, a consistency error), and run fsck.gfs2 from one node with every node unmounted before mounting again.",
    },
    Code {
        code: FindingCode::NoQuorum,
        severity: Severity::Critical,
        means: "The cluster has no quorum: the DLM cannot recover and lock requests that need other nodes wait.",
        threshold: "`corosync-quorumtool -s` says `Quorate: No`",
        evidence: "`cluster.txt` line (a sos report's `corosync-quorumtool_-s`)",
        remedy: "Restore the membership: bring back the missing nodes or fix the corosync links (corosync-cfgtool -s); do not start more load until it is quorate.",
    },
    Code {
        code: FindingCode::DlmRecovery,
        severity: Severity::Critical,
        means: "The DLM is recovering (a node left or failed, and is being fenced): locking is blocked until it ends. Glock waits during it are its consequence.",
        threshold: "sysfs `lock_module/block` is 1, a `dlm_recover` start with no `done` in the kernel log, or `dlm_tool ls` flags with kern_stop/wait",
        evidence: "`gfs2_sysfs.N`, `kernel.log`, `cluster.txt` lines (a sos report's `dmesg`, `dlm_tool_ls`)",
        remedy: "Check fencing: dlm_controld waits for the failed node to be fenced (dlm_tool status, the fence agent's log); recovery ends when fencing succeeds. Journal recovery follows.",
    },
    Code {
        code: FindingCode::Deadlock,
        severity: Severity::Critical,
        means: "A wait-for cycle across processes and nodes: nothing in it can progress by itself.",
        threshold: "any cycle in the wait-for graph (part 6 of glk analyze), over glocks and POSIX (fcntl) locks, with edges across nodes and on one node",
        evidence: "the glocks, DLM, /proc/locks, glockfd, plocks and process-table lines of every step, each saying what it shows: the wait (`pid 257 [flock] on n1 waits for 6/223b`), the hold it waits for (`pid 243 [flock] on n2 holds 6/223b`), or a lock the waiter holds through an ancestor (`pid 229 [flock]: pid 220 [flock], its ancestor, holds 6/223a`)",
        remedy: "End one process of the cycle (the one whose work is cheapest to redo); then fix the lock order: take the locks in one global order (e.g. by inode number) on every node.",
    },
    Code {
        code: FindingCode::StuckWaiter,
        severity: Severity::Error,
        means: "A process has waited for a glock, behind a holder on another node or on its own, for longer than the threshold, and still waits in the last snapshot.",
        threshold: "the snapshots' clock: seen waiting in 2+ consecutive snapshots through the last, spanning at least `--stuck-after` (default 30 s), whatever node holds the glock; or the DLM queue age: its DLM lock waiting that long in one dump (a wait behind a holder on the same node sends no DLM request, so only the snapshots' clock can judge it); the title says which clock",
        evidence: "the waiter's glocks lines in the first and last snapshot; the lines of the wait and of its holder in the last (another node's or its own), each saying which it shows (`pid 238 [flock] on n2 waits for 6/223a`, `pid 244 [flock] on n1 holds 6/223a`); the DLM dump lines of the waiting lock",
        remedy: "Look at who holds the glock (the title names the holder and its node) and why it does not release: a holder in D state (its kernel stack is in procs.N), a holder waiting for another lock (see GLK-DEADLOCK), or a slow node.",
    },
    Code {
        code: FindingCode::HotGlock,
        severity: Severity::Warning,
        means: "A directory or file that several nodes use at once: each use by another node forces a remote demote, a journal flush and a DLM round trip.",
        threshold: "at least `--hot-demotes` (default 20) remote demote requests (summed over the nodes captured: one node's capture is enough, a remote demote is another node's doing)",
        evidence: "the remote demote counts per node and the demote causes from the traces; the glocks lines of its holders and waiters in the last snapshot that had any, each named as in the cross-node waits",
        remedy: "Give each node its own directories (creates and deletes in one shared directory serialise the cluster), keep a file's writers on one node, mount with noatime. The inode number is the glock number; `find MOUNT -inum N` names it.",
    },
    Code {
        code: FindingCode::DemoteStorm,
        severity: Severity::Warning,
        means: "Nodes take a glock from each other as fast as the kernel allows (ping-pong).",
        threshold: "`--storm-min` (5) remote demotes within `--storm-window` (1 s), or 3+ give-up/regain cycles on each of two nodes",
        evidence: "the storm windows (node, trace time) and cycle counts",
        remedy: "A node keeps a glock at least its minimum hold time before honouring a remote demote; raising it (on recent kernels the hold time grows by itself with contention) trades longer waits for the other node against fewer round trips. The lasting cure is to stop sharing: partition the work by node.",
    },
    Code {
        code: FindingCode::SlowDlmMaster,
        severity: Severity::Warning,
        means: "DLM requests to one master node are slow even when nothing blocks them: the network or that node is slow.",
        threshold: "unblocked remotely mastered requests (new locks or up-conversions: down-conversions do not wait for the master) with p50 over `--slow-dlm-ms` (default 10 ms) and over 5x the same kind's locally mastered p50",
        evidence: "the latency by master (dlm_lock_start -> dlm_ast) from the traces",
        remedy: "Check the link to that node (corosync-cfgtool -s, ping times, packet loss) and the node's load; DLM traffic shares the corosync links unless dlm_controld is given its own.",
    },
    Code {
        code: FindingCode::SlowDlmGlock,
        severity: Severity::Info,
        means: "A glock whose DLM round trips are far slower than its type's: it is contended, or its master is slow.",
        threshold: "p99 of gfs2_glock_lock_time tdiff at least 10x the type's median, over 10 replies or more",
        evidence: "the round-trip distribution of the glock",
        remedy: "See the hand-offs of the glock (glk analyze part 8) for the hop that takes the time.",
    },
    Code {
        code: FindingCode::RgrpContention,
        severity: Severity::Warning,
        means: "Nodes contend for resource groups (allocation): when the filesystem is nearly full, every node searches the same few resource groups with free blocks.",
        threshold: "a resource group glock with waiters or remote demotes over `--hot-demotes`, and (when known) the filesystem over 90% full",
        evidence: "the rgrp glocks, the glocks lines of their holders and waiters, and `statfs` in `gfs2_sysfs.N`",
        remedy: "Free space or grow the filesystem (gfs2_grow after growing the device); a filesystem made with more, smaller resource groups (mkfs.gfs2 -r) spreads allocation better.",
    },
    Code {
        code: FindingCode::GlockBuildup,
        severity: Severity::Warning,
        means: "The number of glocks of a type only grows across snapshots: something walks the filesystem and caches every inode (backups, updatedb, find, virus scanners), and each cached inode is a glock other nodes must demote.",
        threshold: "a type's count grows in 3+ consecutive snapshots, by 1000 glocks or more, or doubling by 100 or more (creating files grows counts a little: that is not a build-up)",
        evidence: "the counts per snapshot, and the commands holding the type's glocks in the last snapshot",
        remedy: "Keep crawlers off GFS2 (PRUNEFS=\"gfs2\" in updatedb.conf), run backups from one node, and drop the cached inodes after a walk (echo 2 > /proc/sys/vm/drop_caches).",
    },
    Code {
        code: FindingCode::LostEvents,
        severity: Severity::Warning,
        means: "The trace lost events: counts, pairings and hand-offs near the loss are incomplete.",
        threshold: "any `[LOST N EVENTS]` or `[LOST EVENTS]` line",
        evidence: "the lost counts per node",
        remedy: "Trace fewer events (--events) or with a larger buffer (--buffer-kb); the findings above stand, their counts are lower bounds.",
    },
    Code {
        code: FindingCode::UnparsedInput,
        severity: Severity::Warning,
        means: "Some input could not be read: findings that need it may be missing, and those that pair one input's events with another's (DLM round trips, cross-node waits, hand-offs) may be skewed: a DLM request that another node's unread events would have shown blocked counts as unblocked.",
        threshold: "any malformed line, or an input that could not be read to its end (a file cut short, a damaged trace.dat)",
        evidence: "the first malformed lines (file and line), and what stopped the reading",
        remedy: "Check the files named (truncated copies, another tool's output mixed in); glk read everything else.",
    },
];

impl FindingCode {
    /// What the code means, its threshold, evidence and remedy.
    pub fn info(self) -> &'static Code {
        &CODES[self as usize]
    }
}

/// The thresholds of the findings that have one, but for the stuck threshold: that is the
/// analysis's ([`crate::Options::stuck_after`]), which the report carries
/// ([`crate::stuck::Report::stuck_after_secs`]) so that part 7 and the findings judge
/// by one value.
#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    /// Remote demotes (summed over nodes) that make a glock hot.
    pub hot_demotes: u64,
    /// Unblocked remote DLM requests slower than this (p50, ms) make a master slow.
    pub slow_dlm_ms: f64,
    /// The used fraction of the filesystem above which resource-group contention is a warning.
    pub full_fraction: f64,
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds {
            hot_demotes: 20,
            slow_dlm_ms: 10.0,
            full_fraction: 0.9,
        }
    }
}

impl Thresholds {
    /// The GLK-HOT-GLOCK rule: a glock demoted at least `hot_demotes` times at other
    /// nodes' request.
    pub fn is_hot(&self, remote_demotes: u64) -> bool {
        remote_demotes >= self.hot_demotes
    }

    /// The GLK-RGRP-CONTENTION rule for a resource group glock: hot, or 2+ holders
    /// waiting for it at once.
    pub fn is_rgrp_contended(&self, max_waiters: u64, remote_demotes: u64) -> bool {
        self.is_hot(remote_demotes) || max_waiters >= 2
    }
}

fn finding(c: FindingCode, title: String) -> Finding {
    let k = c.info();
    Finding {
        code: k.code,
        severity: k.severity,
        title,
        glocks: Vec::new(),
        nodes: Vec::new(),
        pids: Vec::new(),
        evidence: Vec::new(),
        remedy: k.remedy.to_string(),
    }
}

impl Finding {
    /// Names `node` among the finding's nodes (once), with line `line` of its file `path`
    /// as evidence that shows `shows`.
    fn cite_node_file(&mut self, node: &str, path: &std::path::Path, line: u64, shows: String) {
        if !self.nodes.iter().any(|n| n == node) {
            self.nodes.push(node.to_string());
        }
        self.evidence.push(file_evidence(node, path, line, shows));
    }
}

/// Line `line` of node `node`'s file `path`, showing `shows`.
fn file_evidence(node: &str, path: &std::path::Path, line: u64, shows: String) -> Evidence {
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    Evidence {
        source: format!("{node}/{name}"),
        line: Some(line),
        time: None,
        shows,
    }
}

/// `NODE/FILE:LINE` (the analyses' citations) as evidence.
fn cite(c: &str, shows: &str) -> Evidence {
    match c.rsplit_once(':') {
        Some((src, line)) if line.bytes().all(|b| b.is_ascii_digit()) => Evidence {
            source: src.to_string(),
            line: line.parse().ok(),
            time: None,
            shows: shows.to_string(),
        },
        _ => Evidence::about(c.to_string(), shows.to_string()),
    }
}

fn trace_evidence(node: &str, ns: u64, shows: String) -> Evidence {
    Evidence {
        source: format!("{node} trace"),
        line: None,
        time: Some(crate::handoff::fmt_ts(ns)),
        shows,
    }
}

/// The state around the locks, per node: withdrawal, quorum, DLM recovery.
fn health_findings(caps: &Captures, out: &mut Vec<Finding>) {
    let mut h = Health {
        withdrawn: finding(FindingCode::Withdrawn, String::new()),
        quorum: finding(FindingCode::NoQuorum, String::new()),
        recovery: finding(FindingCode::DlmRecovery, String::new()),
    };
    for n in &caps.nodes {
        h.sysfs(n);
        h.kernel_log(n);
        h.cluster(n);
    }
    for (mut f, what) in [
        (h.withdrawn, "the filesystem is withdrawn"),
        (h.quorum, "the cluster has no quorum"),
        (h.recovery, "the DLM is recovering: locking is blocked"),
    ] {
        if !f.nodes.is_empty() {
            f.title = format!("{what} on {}", f.nodes.join(", "));
            out.push(f);
        }
    }
}

/// The three health findings, gathered node by node.
struct Health {
    withdrawn: Finding,
    quorum: Finding,
    recovery: Finding,
}

impl Health {
    /// The node's last sysfs state: withdrawn, or locking blocked for recovery.
    fn sysfs(&mut self, n: &bundle::NodeCapture) {
        let last_sysfs = n.snapshots.iter().rev().find_map(|s| {
            let p = s.path(FileKind::Sysfs)?;
            Some((p, health::Sysfs::read(p).ok()?))
        });
        if let Some((p, s)) = &last_sysfs {
            if let Some(l) = s.withdrawn() {
                self.withdrawn
                    .cite_node_file(&n.node, p, l, "withdraw 1".into());
            }
            if let Some(l) = s.locking_blocked() {
                let shows = "lock_module/block 1: lock requests held for recovery";
                self.recovery.cite_node_file(&n.node, p, l, shows.into());
            }
        }
    }

    /// The node's kernel log: withdraws and consistency errors, a recovery with no end.
    fn kernel_log(&mut self, n: &bundle::NodeCapture) {
        if let Some(p) = n.file(NodeFile::KernelLog) {
            if let Ok(ev) = health::kernel_log(p) {
                for e in ev
                    .iter()
                    .filter(|e| matches!(e.kind, LogKind::Withdraw | LogKind::ConsistencyError))
                {
                    // Consistency errors are cited for a node that withdrew.
                    if e.kind == LogKind::Withdraw || self.withdrawn.nodes.contains(&n.node) {
                        self.withdrawn
                            .cite_node_file(&n.node, p, e.line, e.text.clone());
                    }
                }
                if let Some(e) = health::recovery_in_progress(&ev) {
                    let shows = format!("{} (no `done` after it)", e.text);
                    self.recovery.cite_node_file(&n.node, p, e.line, shows);
                    for m in ev.iter().filter(|m| m.kind == LogKind::MemberRemoved) {
                        self.recovery
                            .cite_node_file(&n.node, p, m.line, m.text.clone());
                    }
                }
            }
        }
    }

    /// The cluster tools' view: no quorum, lockspaces stopped.
    fn cluster(&mut self, n: &bundle::NodeCapture) {
        for p in n.files_of(NodeFile::Cluster) {
            if let Ok(text) = bundle::read_text(p) {
                let c = health::Cluster::parse(&text);
                if let Some((false, l)) = c.quorate {
                    self.quorum
                        .cite_node_file(&n.node, p, l, "Quorate: No".into());
                }
                for (ls, flags, l) in c.stopped {
                    let shows = format!("lockspace {ls}: {flags}");
                    self.recovery.cite_node_file(&n.node, p, l, shows);
                }
            }
        }
    }
}

/// Every finding, most severe first (ties in the order of [`CODES`]); a waiter is stuck by
/// the threshold `r` was analysed with.
pub fn findings(
    r: &Report,
    caps: &Captures,
    traces: &[NodeTrace],
    diag: &Diagnostics,
    t: &Thresholds,
) -> Vec<Finding> {
    let mut out = Vec::new();
    health_findings(caps, &mut out);
    let rules = Rules {
        r,
        caps,
        t,
        unhealthy: !out.is_empty(),
    };
    out.extend(rules.deadlocks());
    rules.stuck_waiters(&mut out);
    rules.stuck_dlm_waits(&mut out);
    out.extend(rules.hot_glocks());
    out.extend(rules.demote_storms());
    out.extend(rules.slow_dlm_masters());
    out.extend(rules.slow_dlm_glocks());
    out.extend(rules.buildups());
    out.extend(lost_events(traces));
    out.extend(unparsed_input(diag));
    out.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.code.cmp(&b.code)));
    out
}

/// What the glock rules read: the report, the captures, the thresholds, and whether the
/// cluster was unhealthy (then every glock finding says so).
struct Rules<'a> {
    r: &'a Report,
    caps: &'a Captures,
    t: &'a Thresholds,
    unhealthy: bool,
}

impl Rules<'_> {
    /// A glock finding's title, with the caveat when the cluster was unhealthy.
    fn caveat(&self, title: String) -> String {
        if self.unhealthy {
            format!("{title} (while the cluster is not healthy: see above)")
        } else {
            title
        }
    }

    /// GLK-DEADLOCK: each wait-for cycle.
    fn deadlocks(&self) -> Vec<Finding> {
        let mut out = Vec::new();
        for c in &self.r.cycles {
            let mut f = finding(FindingCode::Deadlock, String::new());
            let mut glocks = BTreeSet::new();
            for s in &c.steps {
                f.nodes.push(s.node.clone());
                f.pids.extend(s.pid);
                glocks.insert(s.waits_for.clone());
                f.evidence
                    .extend(s.evidence.iter().map(|e| cite(&e.cite, &e.shows)));
            }
            f.glocks = glocks.into_iter().collect();
            f.nodes.dedup();
            f.title = self.caveat(format!(
                "deadlock ({}) across {}: {}",
                c.confidence,
                f.nodes.join(", "),
                c.steps
                    .iter()
                    .map(|s| format!("{} on {} waits for {}", s.owner, s.node, s.waits_for))
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
            out.push(f);
        }
        out
    }

    /// GLK-STUCK-WAITER: the stuck waiters judged by the snapshots' clock (seen waiting in
    /// snapshots spanning the threshold through the last); those judged by the DLM queue
    /// age alone are [`Rules::stuck_dlm_waits`]'.
    fn stuck_waiters(&self, out: &mut Vec<Finding>) {
        for w in &self.r.stuck_and_leaks.stuck {
            let (Some(crate::stuck::Clock::Snapshots), Some(secs)) = (w.judged_by, w.span_secs)
            else {
                continue;
            };
            let mut f = finding(FindingCode::StuckWaiter, String::new());
            f.glocks.push(w.glock.clone());
            f.nodes.push(w.node.clone());
            f.pids.extend(w.pid);
            let who = crate::owners::process(w.pid.unwrap_or(0), w.comm.as_deref());
            let holders = self.holders_of(w);
            let behind = behind(&holders, &w.node);
            f.title = self.caveat(format!(
                "{} on {} has waited for {} ({}){} for at least {secs:.0} s (seen waiting in \
                 snapshots {}..{}: the snapshots' clock)",
                if w.pid.is_some() {
                    who
                } else {
                    "a process".into()
                },
                w.node,
                w.glock,
                w.state,
                behind,
                w.first_snapshot,
                w.last_snapshot
            ));
            let glocks_file = |i: u32| self.caps.cite_file(&w.node, i, FileKind::Glocks);
            f.evidence.push(Evidence::about(
                glocks_file(w.first_snapshot),
                format!("waiting {} at {}", w.state, w.caller),
            ));
            f.evidence.push(Evidence::about(
                glocks_file(w.last_snapshot),
                "still waiting".into(),
            ));
            for x in holders {
                f.evidence
                    .extend(x.cites.iter().map(|c| cite(&c.cite, &c.shows)));
                f.nodes.push(x.holder_node.clone());
                f.pids.extend(x.holder_pid);
            }
            f.nodes.dedup();
            out.push(f);
        }
    }

    /// Whom a stuck waiter waits behind, on another node or on its own (no DLM request
    /// there): the rows of the last snapshot where they name any (an earlier holder may
    /// have ended), else every row of its wait.
    fn holders_of(&self, w: &crate::stuck::Wait) -> Vec<&crate::cross::CrossNode> {
        let mut holders: Vec<&crate::cross::CrossNode> = self
            .r
            .cross_node
            .iter()
            .chain(&self.r.local_waits)
            .filter(|x| x.glock == w.glock && x.waiter_node == w.node)
            .filter(|x| w.pid.is_none() || x.waiter_pid == w.pid)
            .collect();
        if holders
            .iter()
            .any(|x| x.snapshots.contains(&w.last_snapshot))
        {
            holders.retain(|x| x.snapshots.contains(&w.last_snapshot));
        }
        holders
    }

    /// GLK-STUCK-WAITER: DLM locks waiting past the threshold in one dump (the dump's age of
    /// the wait), stuck even when the capture is too short to see it in several snapshots; a
    /// wait already found is one more piece of evidence.
    fn stuck_dlm_waits(&self, out: &mut Vec<Finding>) {
        for w in &self.r.stuck_and_leaks.dlm_waits {
            let secs = w.age_us as f64 / 1e6;
            if !crate::stuck::is_stuck(secs, self.r.stuck_and_leaks.stuck_after_secs) {
                continue;
            }
            let owner = w
                .owner_nodeid
                .map_or_else(|| w.node.clone(), |id| self.r.node_named(id));
            let glock = w.glock.to_string();
            let evidence = cite(&w.cite, &format!("DLM lock waiting {secs:.0} s"));
            // The same wait seen before (in the snapshots, or in another node's dump: the
            // master lists other nodes' locks): one more piece of evidence; the title of a
            // wait found by the snapshots' clock also gives the DLM's, once.
            if let Some(f) = out.iter_mut().find(|f| {
                f.code == FindingCode::StuckWaiter && f.glocks[0] == glock && f.nodes[0] == owner
            }) {
                if f.title.contains("the snapshots' clock") && !f.title.contains("DLM queue age") {
                    f.title = format!(
                        "{}; its DLM request has waited {secs:.0} s (the DLM queue age)",
                        f.title
                    );
                }
                f.evidence.push(evidence);
                continue;
            }
            let mut f = finding(FindingCode::StuckWaiter, String::new());
            f.glocks.push(glock.clone());
            f.nodes.push(owner.clone());
            if w.pid > 0 {
                f.pids.push(w.pid as i64);
            }
            let holders: Vec<&crate::cross::CrossNode> = self
                .r
                .cross_node
                .iter()
                .filter(|x| x.glock == glock && x.waiter_node == owner)
                .collect();
            f.title = self.caveat(format!(
                "a DLM lock of {owner}{} has waited {secs:.0} s for {}{} ({} requested{}; the \
                 DLM queue age)",
                if w.pid > 0 {
                    format!(" (pid {})", w.pid)
                } else {
                    String::new()
                },
                w.glock,
                behind(&holders, &owner),
                w.rqmode.map_or("?", |m| m.as_str()),
                w.grmode
                    .map(|g| format!(", {g} granted"))
                    .unwrap_or_default()
            ));
            f.evidence.push(evidence);
            for x in holders {
                f.evidence
                    .extend(x.cites.iter().map(|c| cite(&c.cite, &c.shows)));
                if !f.nodes.contains(&x.holder_node) {
                    f.nodes.push(x.holder_node.clone());
                }
                f.pids.extend(x.holder_pid);
            }
            out.push(f);
        }
    }

    /// GLK-HOT-GLOCK and GLK-RGRP-CONTENTION: glocks demoted between nodes past the
    /// threshold, and resource groups with waiters (info unless the filesystem is nearly
    /// full).
    fn hot_glocks(&self) -> Vec<Finding> {
        let mut out = Vec::new();
        let full = self.caps.nodes.iter().find_map(|n| {
            let s = n.last_sysfs()?;
            let (u, l) = health::Sysfs::read(s).ok()?.used_fraction()?;
            Some((
                u,
                file_evidence(&n.node, s, l, format!("{:.1}% of blocks in use", u * 100.0)),
            ))
        });
        for c in &self.r.contended {
            let rgrp = c.gltype == "rgrp";
            let shown = if rgrp {
                self.t.is_rgrp_contended(c.max_waiters, c.remote_demotes)
            } else {
                self.t.is_hot(c.remote_demotes)
            };
            if !shown {
                continue;
            }
            let mut f = finding(
                if rgrp {
                    FindingCode::RgrpContention
                } else {
                    FindingCode::HotGlock
                },
                String::new(),
            );
            f.glocks.push(c.glock.clone());
            f.nodes = c.nodes.clone();
            // `(dir, 3864 bytes)` where a glocks file shows the inode.
            let object = c
                .object
                .as_ref()
                .map(|o| format!(" ({o})"))
                .unwrap_or_default();
            f.title = self.caveat(format!(
                "{} {}{object} is shared: {} remote demotes on {}{}",
                c.gltype,
                c.glock,
                c.remote_demotes,
                c.nodes.join(", "),
                if c.max_waiters > 0 {
                    format!(", up to {} waiters in a snapshot", c.max_waiters)
                } else {
                    String::new()
                }
            ));
            for d in self
                .r
                .causality
                .demote_causes
                .iter()
                .filter(|d| d.glock == c.glock)
            {
                f.evidence.push(Evidence::about(
                    format!("{} trace", d.node),
                    format!(
                        "{} demotes ({}) caused by {}",
                        d.count,
                        d.source,
                        d.caused_by_node
                            .as_deref()
                            .unwrap_or("a request not matched on another node")
                    ),
                ));
            }
            for (role, who, at) in c.parties.each().take(6) {
                f.evidence.push(cite(at, &format!("{role} {who}")));
            }
            if rgrp {
                match &full {
                    Some((u, e)) => {
                        f.evidence.push(e.clone());
                        if *u < self.t.full_fraction {
                            f.severity = Severity::Info;
                        }
                    }
                    None => f.severity = Severity::Info,
                }
            }
            out.push(f);
        }
        out
    }

    /// GLK-DEMOTE-STORM: one finding per glock with storms or ping-pong.
    fn demote_storms(&self) -> Vec<Finding> {
        let mut out = Vec::new();
        let mut storm_glocks: Vec<&str> = self
            .r
            .demote_storms
            .iter()
            .map(|s| s.glock.as_str())
            .collect();
        storm_glocks.extend(self.r.ping_pong.iter().map(|p| p.glock.as_str()));
        storm_glocks.sort_unstable();
        storm_glocks.dedup();
        for g in storm_glocks {
            let mut f = finding(FindingCode::DemoteStorm, String::new());
            f.glocks.push(g.to_string());
            let mut demotes = 0;
            for s in self.r.demote_storms.iter().filter(|s| s.glock == g) {
                demotes += s.demotes;
                f.nodes.extend(s.nodes.iter().cloned());
                f.evidence.push(trace_evidence(
                    &s.node,
                    s.start_ns,
                    format!(
                        "{} remote demotes in {:.2} s (peak {}/window)",
                        s.demotes,
                        (s.end_ns - s.start_ns) as f64 / 1e9,
                        s.peak_per_window
                    ),
                ));
            }
            let mut cycles = String::new();
            for p in self.r.ping_pong.iter().filter(|p| p.glock == g) {
                f.nodes.extend(p.cycles.keys().cloned());
                cycles = p
                    .cycles
                    .iter()
                    .map(|(n, c)| format!("{n}: {c}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                f.evidence.push(Evidence::about(
                    "traces".into(),
                    format!(
                        "give-up/regain cycles {cycles}; modes {}",
                        p.modes.join("/")
                    ),
                ));
            }
            f.nodes.sort();
            f.nodes.dedup();
            // A remote demote is another node's doing: one node captured is half the pair.
            let between = match &f.nodes[..] {
                [one] => format!("{one} and a node not captured"),
                all => all.join(", "),
            };
            f.title = self.caveat(format!(
                "demote storm on {g} between {between}{}{}",
                if demotes > 0 {
                    format!(": {demotes} remote demotes in bursts")
                } else {
                    String::new()
                },
                if cycles.is_empty() {
                    String::new()
                } else {
                    format!("; ping-pong cycles {cycles}")
                }
            ));
            out.push(f);
        }
        out
    }

    /// GLK-SLOW-DLM-MASTER: unblocked remote requests to one master, slow in themselves and
    /// against the node's local master.
    fn slow_dlm_masters(&self) -> Vec<Finding> {
        let mut out = Vec::new();
        for l in self.r.causality.dlm_latency.iter().filter(|l| {
            l.master == "remote"
                && !l.blocked
                && l.conversion != "down"
                && l.measure == "request_to_grant"
                && l.dist.count >= 5
        }) {
            let local = self.r.causality.dlm_latency.iter().find(|x| {
                x.node == l.node
                    && x.master == "local"
                    && !x.blocked
                    && x.measure == l.measure
                    && x.conversion == l.conversion
            });
            let p50 = l.dist.p50_ns as f64 / 1e6;
            if p50 < self.t.slow_dlm_ms
                || local.is_some_and(|x| (l.dist.p50_ns as f64) < 5.0 * x.dist.p50_ns as f64)
            {
                continue;
            }
            let mut f = finding(FindingCode::SlowDlmMaster, String::new());
            let master = l
                .master_node
                .clone()
                .unwrap_or_else(|| "an unknown node".into());
            f.nodes = vec![l.node.clone(), master.clone()];
            f.title = self.caveat(format!(
                "DLM requests ({}) from {} to master {master} are slow unblocked: p50 {p50:.1} ms over {} requests{}",
                if l.conversion == "new" { "new locks" } else { "up-conversions" },
                l.node,
                l.dist.count,
                local.map_or(String::new(), |x| format!(" (local master: p50 {:.2} ms)", x.dist.p50_ns as f64 / 1e6))
            ));
            f.evidence.push(Evidence::about(
                format!("{} trace", l.node),
                format!(
                    "dlm_lock_start -> dlm_ast to {master}: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
                    p50,
                    l.dist.p99_ns as f64 / 1e6,
                    l.dist.max_ns as f64 / 1e6
                ),
            ));
            out.push(f);
        }
        out
    }

    /// GLK-SLOW-DLM-GLOCK: glocks whose DLM round trips are outliers of their type.
    fn slow_dlm_glocks(&self) -> Vec<Finding> {
        let mut out = Vec::new();
        for s in self
            .r
            .slow_dlm
            .iter()
            .filter(|s| s.outlier && s.count >= 10)
        {
            let mut f = finding(
                FindingCode::SlowDlmGlock,
                self.caveat(format!(
                    "{} ({}) DLM round trips: p99 {:.1} ms over {} replies",
                    s.glock,
                    s.gltype,
                    s.p99_ns as f64 / 1e6,
                    s.count
                )),
            );
            f.glocks.push(s.glock.clone());
            f.evidence.push(Evidence::about(
                "traces".into(),
                format!(
                    "gfs2_glock_lock_time tdiff p50 {:.2} ms, max {:.1} ms",
                    s.p50_ns as f64 / 1e6,
                    s.max_ns as f64 / 1e6
                ),
            ));
            out.push(f);
        }
        out
    }

    /// GLK-GLOCK-BUILDUP: glock types whose count only grows, by enough to matter.
    fn buildups(&self) -> Vec<Finding> {
        let mut out = Vec::new();
        for g in &self.r.stuck_and_leaks.growing {
            let (first, last) = (g.counts[0], g.counts[g.counts.len() - 1]);
            let grown = last.saturating_sub(first);
            if grown < 1000 && !(last >= 2 * first && grown >= 100) {
                continue;
            }
            let mut f = finding(
                FindingCode::GlockBuildup,
                self.caveat(format!(
                    "{} glocks on {} only grow: {}",
                    g.gltype,
                    g.node,
                    g.counts
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(" -> ")
                )),
            );
            f.nodes.push(g.node.clone());
            f.evidence.push(Evidence::about(
                format!("{}/glocks.N", g.node),
                format!("{} glocks per snapshot: {:?}", g.gltype, g.counts),
            ));
            out.push(f);
        }
        out
    }
}

/// GLK-LOST-EVENTS: the traces that lost events.
fn lost_events(traces: &[NodeTrace]) -> Option<Finding> {
    let lost: Vec<(&str, traceparse::LostEvents)> = traces
        .iter()
        .filter(|x| x.lost.any())
        .map(|x| (x.node.as_str(), x.lost))
        .collect();
    if lost.is_empty() {
        return None;
    }
    let mut f = finding(
        FindingCode::LostEvents,
        format!(
            "the traces lost events: {}",
            lost.iter()
                .map(|(n, l)| format!("{n} {l}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    for (n, l) in lost {
        f.nodes.push(n.to_string());
        f.evidence.push(Evidence::about(
            format!("{n} trace"),
            format!("{l} events lost"),
        ));
    }
    Some(f)
}

/// GLK-UNPARSED-INPUT: input lines that could not be read.
fn unparsed_input(diag: &Diagnostics) -> Option<Finding> {
    if diag.errors == 0 && diag.fatal.is_none() {
        return None;
    }
    let title = match (diag.errors, &diag.fatal) {
        (0, Some(_)) => "an input could not be read to its end".to_string(),
        (n, None) => format!("{n} input lines could not be read"),
        (n, Some(_)) => format!("{n} input lines could not be read, and an input not to its end"),
    };
    let mut f = finding(FindingCode::UnparsedInput, title);
    for e in &diag.first_errors {
        f.evidence.push(Evidence {
            source: e.source.to_string(),
            line: Some(e.line),
            time: None,
            shows: format!("{}: {}", e.message, e.text),
        });
    }
    if let Some(fatal) = &diag.fatal {
        f.evidence
            .push(Evidence::about("input".into(), fatal.clone()));
    }
    Some(f)
}

/// Whom a stuck waiter on `node` waits behind, as its title says it: ` behind pid 284
/// [flock] on n1, ...` (`the same node` for a holder on its own), or nothing when no
/// holder names a process.
fn behind(holders: &[&crate::cross::CrossNode], node: &str) -> String {
    let who: Vec<String> = holders
        .iter()
        .filter_map(|x| {
            let pid = x.holder_pid?;
            let on = if x.holder_node == node {
                "the same node"
            } else {
                x.holder_node.as_str()
            };
            Some(format!(
                "{} on {on}",
                crate::owners::process(pid, x.holder_comm.as_deref())
            ))
        })
        .collect();
    let mut seen = std::collections::HashSet::new();
    let who: Vec<String> = who.into_iter().filter(|w| seen.insert(w.clone())).collect();
    if who.is_empty() {
        String::new()
    } else {
        format!(" behind {}", who.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_finds_its_own_row() {
        for (i, c) in CODES.iter().enumerate() {
            assert_eq!(c.code as usize, i, "{}", c.code);
            assert!(std::ptr::eq(c.code.info(), c));
            assert!(c.code.as_str().starts_with("GLK-"));
            assert_eq!(serde_json::to_value(c.code).unwrap(), c.code.as_str());
        }
    }
}
