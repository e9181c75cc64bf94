//! Cross-node causality: who made whom wait, hop by hop.
//!
//! Per node, in the same one pass over its trace as the other analyses ([`NodeDlm`]):
//! - every DLM request (`dlm_lock_start` → the `dlm_ast` of the same `ls_id`+`lkb_id`),
//!   with the first local gfs2 waiter queued for the glock when it was asked, the
//!   `gfs2_promote` that followed the grant, and where its resource is mastered: a REQUEST
//!   or CONVERT message sent for the lock means a remote master (`dst`, the LOOKUP_REPLY,
//!   or the node that received the message), none on a node that traces messages means
//!   a local one;
//! - every blocking AST (`dlm_bast`): when the holder's local holders let go
//!   (`gfs2_glock_queue` dequeue), when its demote work began (the first log or AIL flush
//!   by the task that then released the lock), and when it released (the convert to a
//!   compatible mode, or the unlock);
//! - the DLM messages sent and received, for the clock alignment and the masters;
//! - without dlm events (kernels before 5.16), gfs2's own view: remote demote requests and
//!   the waits for state changes.
//!
//! Across nodes, on the aligned clock ([`super::clock`]): each granted request that a
//! blocking AST on another node's lock was for (same glock, the bast's mode is the request's,
//! the bast and the holder's release fall between the request and its grant, give or take
//! the alignment's uncertainty) is a hand-off from that holder to the requester.

use std::collections::{BTreeMap, HashMap, HashSet};

use glockparse::{DlmMode, GlockId};
use serde::Serialize;
use traceparse::dlm::{MsgType, LKF_CONVERT};
use traceparse::{DlmEvent, Gfs2Event};

use super::clock::{self, Alignment, Mark, PairBounds};
use super::GlockMap;

/// Where a request's resource is mastered, as seen from the requesting node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Master {
    /// This node masters it.
    Local,
    /// On another node, by DLM node id when known.
    Remote(Option<u32>),
    /// No event or dump says.
    Unknown,
}

/// What a DLM request asks for, relative to what the lock holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Conversion {
    /// A new lock.
    New,
    /// A conversion to a stronger mode (the DLM waits for the master's answer).
    Up,
    /// A conversion to the same or a weaker mode (the DLM completes it without waiting for
    /// a remote master's reply).
    Down,
}

impl Conversion {
    /// `new`, `up` or `down`.
    pub fn as_str(self) -> &'static str {
        match self {
            Conversion::New => "new",
            Conversion::Up => "up",
            Conversion::Down => "down",
        }
    }
}

/// One DLM request of one node.
#[derive(Debug, Clone)]
pub struct Request {
    /// The glock its resource names.
    pub glock: Option<GlockId>,
    /// The lockspace id.
    pub ls_id: u32,
    /// The lock's id on this node.
    pub lkb_id: u32,
    /// The mode requested.
    pub mode: DlmMode,
    /// New, up or down (from the mode the lock was last granted).
    pub conversion: Conversion,
    /// The process that called `dlm_lock()`.
    pub pid: i64,
    /// The first local gfs2 holder still waiting for the glock when the request was made.
    pub queued_ns: Option<u64>,
    /// `dlm_lock_start`.
    pub start_ns: u64,
    /// The completion AST.
    pub granted_ns: Option<u64>,
    /// The completion AST's status (0: granted).
    pub status: i32,
    /// The first `gfs2_promote` of the glock after a successful grant.
    pub promote_ns: Option<u64>,
    /// Where its resource is mastered.
    pub master: Master,
    /// The REQUEST/CONVERT message sent for it (sequence number), for its receiver.
    sent_seq: Option<(u32, MsgType)>,
}

impl Request {
    /// When the wait it serves began: the first local holder's queueing, or the DLM
    /// request itself when that came first or no queued holder was seen.
    pub fn first_ns(&self) -> u64 {
        self.queued_ns.unwrap_or(self.start_ns).min(self.start_ns)
    }
}

/// One blocking AST a node's lock received.
#[derive(Debug, Clone)]
pub struct Bast {
    /// The glock its resource names.
    pub glock: Option<GlockId>,
    /// The lockspace id.
    pub ls_id: u32,
    /// The lock's id on this node.
    pub lkb_id: u32,
    /// The mode the blocked request wants.
    pub mode: DlmMode,
    /// When it arrived.
    pub ts_ns: u64,
    /// The last local dequeue of the glock after the bast, before the release.
    pub dequeue_ns: Option<u64>,
    /// When the demote work began (first log/AIL flush by the releasing task, else the
    /// release itself).
    pub work_ns: Option<u64>,
    /// The convert to a compatible mode, or the unlock.
    pub release_ns: Option<u64>,
}

/// A DLM message one node sent or received.
#[derive(Debug, Clone, Copy)]
pub struct Msg {
    /// When it was sent or received.
    pub ts_ns: u64,
    /// The sender's DLM node id (`h_nodeid`).
    pub from: u32,
    /// The destination node, when the event names it.
    pub dst: Option<u32>,
    /// The sender's sequence number on the connection.
    pub seq: u32,
    /// The message type.
    pub mtype: MsgType,
    /// The lock id it is about (`m_lkid`).
    pub lkid: u32,
}

/// gfs2's view of a wait, for nodes without dlm events: the first waiter queued and the
/// state change that let it in.
#[derive(Debug, Clone, Copy)]
pub struct GfsWait {
    /// The glock.
    pub glock: GlockId,
    /// The first waiter's `gfs2_glock_queue`.
    pub queued_ns: u64,
    /// The `gfs2_glock_state_change` that let it in.
    pub changed_ns: u64,
}

/// Waiters kept per glock (a holder that gives up without a promote stays in the list; the
/// oldest go first).
const MAX_WAITING: usize = 64;
/// Flush starts kept per task between its DLM calls.
const MAX_FLUSHES: usize = 32;

/// One node's requests, blocking ASTs and messages, built in its trace pass.
#[derive(Default)]
pub struct NodeDlm {
    /// The node's clock markers (`glkmark` lines).
    pub marks: Vec<Mark>,
    /// The trace clock the capture recorded (`local`, `global`, `mono`...).
    pub trace_clock: Option<String>,
    /// Its DLM requests, in start order.
    pub requests: Vec<Request>,
    /// The blocking ASTs its locks received.
    pub basts: Vec<Bast>,
    /// Messages it sent.
    pub sent: Vec<Msg>,
    /// Messages it received.
    pub received: Vec<Msg>,
    /// gfs2 remote demote requests (time, glock).
    pub remote_demotes: Vec<(u64, GlockId)>,
    /// gfs2's waits (first waiter queued to state change).
    pub gfs2_waits: Vec<GfsWait>,
    /// gfs2 `tdiff` of each DLM reply, with the request just granted (index).
    pub tdiff: Vec<(usize, i64)>,
    /// Whether the node traced the dlm lock events / the message events.
    pub has_lock_events: bool,
    /// Whether the node traced the message events.
    pub has_messages: bool,
    /// `h_nodeid` of the messages it sent: its own DLM node id.
    nodeid_votes: BTreeMap<u32, u64>,
    open: HashMap<(u32, u32), usize>,
    unlocking: HashSet<(u32, u32)>,
    open_bast: HashMap<(u32, u32), usize>,
    open_bast_glock: GlockMap<usize>,
    /// gfs2 holders queued and not yet promoted, per glock: (time, pid).
    waiting: GlockMap<Vec<(u64, i64)>>,
    awaiting_promote: GlockMap<usize>,
    flushes: HashMap<i64, Vec<u64>>,
    last_grant: GlockMap<usize>,
    /// The mode each lock was last granted.
    granted_mode: HashMap<(u32, u32), DlmMode>,
}

impl NodeDlm {
    /// The node's DLM node id, from the messages it sent.
    pub fn nodeid(&self) -> Option<u32> {
        self.nodeid_votes
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(id, _)| *id)
    }

    /// Feeds a `glkmark` marker.
    pub fn mark(&mut self, ts_ns: u64, m: Mark, clock: Option<&[u8]>) {
        self.marks.push(Mark { ts_ns, ..m });
        if let (None, Some(c)) = (&self.trace_clock, clock) {
            self.trace_clock = Some(String::from_utf8_lossy(c).into_owned());
        }
    }

    /// Feeds a gfs2 event.
    pub fn gfs2(&mut self, ts: u64, pid: i64, e: &Gfs2Event) {
        match *e {
            Gfs2Event::GlockQueue {
                glock, queue: true, ..
            } => {
                let w = self.waiting.entry(glock).or_default();
                if w.len() == MAX_WAITING {
                    w.remove(0);
                }
                w.push((ts, pid));
            }
            Gfs2Event::GlockQueue {
                glock,
                queue: false,
                ..
            } => {
                if let Some(&i) = self.open_bast_glock.get(&glock) {
                    self.basts[i].dequeue_ns = Some(ts);
                }
                // A waiter that gives up (a failed try lock) leaves without a promote.
                if let Some(w) = self.waiting.get_mut(&glock) {
                    if let Some(k) = w.iter().position(|&(_, p)| p == pid) {
                        w.remove(k);
                    }
                }
            }
            Gfs2Event::Promote { glock, .. } => {
                if let Some(w) = self.waiting.get_mut(&glock) {
                    if !w.is_empty() {
                        w.remove(0);
                    }
                }
                if let Some(i) = self.awaiting_promote.remove(&glock) {
                    self.requests[i].promote_ns = Some(ts);
                }
            }
            Gfs2Event::GlockStateChange {
                glock, from, to, ..
            } if to.rank() > from.rank() => {
                if let Some(&(q, _)) = self.waiting.get(&glock).and_then(|w| w.first()) {
                    self.gfs2_waits.push(GfsWait {
                        glock,
                        queued_ns: q,
                        changed_ns: ts,
                    });
                }
            }
            Gfs2Event::DemoteRq {
                glock,
                remote: Some(true),
                ..
            } => {
                self.remote_demotes.push((ts, glock));
            }
            Gfs2Event::GlockLockTime(l) => {
                if let Some(i) = self.last_grant.remove(&l.glock) {
                    self.tdiff.push((i, l.tdiff));
                }
            }
            Gfs2Event::LogFlush { start: true, .. } | Gfs2Event::AilFlush { start: true, .. } => {
                let f = self.flushes.entry(pid).or_default();
                if f.len() < MAX_FLUSHES {
                    f.push(ts);
                }
            }
            _ => {}
        }
    }

    /// A lock given up for a bast: the holder's release.
    fn release(&mut self, ts: u64, pid: i64, key: (u32, u32), mode: Option<DlmMode>) {
        let flushes = self.flushes.remove(&pid).unwrap_or_default();
        let Some(&i) = self.open_bast.get(&key) else {
            return;
        };
        let b = &mut self.basts[i];
        if mode.is_some_and(|m| !m.compatible(b.mode)) {
            return;
        }
        let from = b.ts_ns.max(b.dequeue_ns.unwrap_or(0));
        b.work_ns = Some(flushes.into_iter().find(|&f| f >= from).unwrap_or(ts));
        b.release_ns = Some(ts);
        self.open_bast.remove(&key);
        if let Some(g) = b.glock {
            self.open_bast_glock.remove(&g);
        }
    }

    /// Feeds a dlm event.
    pub fn dlm(&mut self, ts: u64, pid: i64, e: &DlmEvent) {
        match *e {
            DlmEvent::LockStart {
                ls_id,
                lkb_id,
                mode,
                flags,
                res,
            } => self.lock_start(ts, pid, (ls_id, lkb_id), mode, flags, res),
            DlmEvent::UnlockStart { ls_id, lkb_id, .. } => {
                self.has_lock_events = true;
                self.granted_mode.remove(&(ls_id, lkb_id));
                self.release(ts, pid, (ls_id, lkb_id), None);
                self.unlocking.insert((ls_id, lkb_id));
            }
            DlmEvent::Ast {
                ls_id,
                lkb_id,
                status,
                ..
            } => self.ast(ts, (ls_id, lkb_id), status),
            DlmEvent::Bast {
                ls_id,
                lkb_id,
                mode,
                res,
            } => self.bast(ts, ls_id, lkb_id, mode, res),
            DlmEvent::SendMessage(m) if !m.rcom => self.sent_message(ts, &m),
            DlmEvent::RecvMessage(m) if !m.rcom => self.received_message(ts, &m),
            DlmEvent::SendRcom(m) => {
                *self.nodeid_votes.entry(m.from).or_default() += 1;
            }
            _ => {}
        }
    }

    /// `dlm_lock_start`: a new request (or conversion) opens; a conversion also releases
    /// what a blocking AST asked for.
    #[inline]
    fn lock_start(
        &mut self,
        ts: u64,
        pid: i64,
        (ls_id, lkb_id): (u32, u32),
        mode: DlmMode,
        flags: u32,
        res: traceparse::Resource,
    ) {
        self.has_lock_events = true;
        self.release(ts, pid, (ls_id, lkb_id), Some(mode));
        let glock = res.glock();
        let queued_ns = glock
            .and_then(|g| self.waiting.get(&g))
            .and_then(|w| w.first().map(|&(t, _)| t));
        let convert = flags & LKF_CONVERT != 0;
        let conversion = match (convert, self.granted_mode.get(&(ls_id, lkb_id))) {
            (false, _) => Conversion::New,
            (true, Some(g)) if mode.rank() <= g.rank() => Conversion::Down,
            (true, _) => Conversion::Up,
        };
        self.open.insert((ls_id, lkb_id), self.requests.len());
        self.requests.push(Request {
            glock,
            ls_id,
            lkb_id,
            mode,
            conversion,
            pid,
            queued_ns,
            start_ns: ts,
            granted_ns: None,
            status: 0,
            promote_ns: None,
            master: Master::Unknown,
            sent_seq: None,
        });
    }

    /// The completion AST: the open request is granted (or failed), an unlock completes.
    #[inline]
    fn ast(&mut self, ts: u64, key: (u32, u32), status: i32) {
        if self.unlocking.remove(&key) {
            return;
        }
        let Some(i) = self.open.remove(&key) else {
            return;
        };
        let has_messages = self.has_messages;
        let r = &mut self.requests[i];
        r.granted_ns = Some(ts);
        r.status = status;
        if status == 0 {
            self.granted_mode.insert(key, r.mode);
        }
        if r.master == Master::Unknown && has_messages {
            r.master = Master::Local;
        }
        if let Some(g) = r.glock {
            self.last_grant.insert(g, i);
            if status == 0 {
                self.awaiting_promote.insert(g, i);
            }
        }
    }

    /// A blocking AST: another node's request wants this lock.
    #[inline]
    fn bast(&mut self, ts: u64, ls_id: u32, lkb_id: u32, mode: DlmMode, res: traceparse::Resource) {
        self.has_lock_events = true;
        let i = self.basts.len();
        self.basts.push(Bast {
            glock: res.glock(),
            ls_id,
            lkb_id,
            mode,
            ts_ns: ts,
            dequeue_ns: None,
            work_ns: None,
            release_ns: None,
        });
        self.open_bast.insert((ls_id, lkb_id), i);
        if let Some(g) = res.glock() {
            self.open_bast_glock.insert(g, i);
        }
    }

    /// A message sent: the node's own id, and a request's sequence number and master.
    #[inline]
    fn sent_message(&mut self, ts: u64, m: &traceparse::dlm::Message) {
        self.has_messages = true;
        *self.nodeid_votes.entry(m.from).or_default() += 1;
        self.sent.push(msg(ts, m));
        if matches!(m.mtype, MsgType::Request | MsgType::Convert) {
            if let Some(&i) = self.open.get(&(m.ls_id, m.lkid)) {
                let r = &mut self.requests[i];
                r.sent_seq = Some((m.seq, m.mtype));
                r.master = Master::Remote(m.dst.or(match r.master {
                    Master::Remote(x) => x,
                    _ => None,
                }));
            }
        }
    }

    /// A message received: a lookup reply names the master of a request.
    #[inline]
    fn received_message(&mut self, ts: u64, m: &traceparse::dlm::Message) {
        self.has_messages = true;
        self.received.push(msg(ts, m));
        // The directory's answer names the master; a later REQUEST goes there.
        if m.mtype == MsgType::LookupReply {
            if let Some(&i) = self.open.get(&(m.ls_id, m.lkid)) {
                let r = &mut self.requests[i];
                if r.master == Master::Unknown && m.dst != Some(m.nodeid) {
                    r.master = Master::Remote(Some(m.nodeid));
                }
            }
        }
    }

    /// Ends the pass: a LOOKUP_REPLY naming a remote master without a REQUEST sent means
    /// the lookup raced a local answer; requests still open stay ungranted.
    pub fn finish(&mut self) {
        let me = self.nodeid();
        for r in &mut self.requests {
            if let (Master::Remote(Some(n)), None) = (r.master, r.sent_seq) {
                if Some(n) == me {
                    r.master = Master::Local;
                }
            }
        }
        self.open.clear();
        self.waiting.clear();
        self.flushes.clear();
    }
}

fn msg(ts: u64, m: &traceparse::dlm::Message) -> Msg {
    Msg {
        ts_ns: ts,
        from: m.from,
        dst: m.dst,
        seq: m.seq,
        mtype: m.mtype,
        lkid: m.lkid,
    }
}

/// A distribution of durations, as the JSON gives it: every sample kept (0 included), the
/// percentiles by glk's one rule ([`gfs2stats::dist::nearest_rank`]), as the other
/// sections' recorders give theirs.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Dist {
    /// Durations measured.
    pub count: u64,
    /// Median, ns.
    pub p50_ns: u64,
    /// 90th percentile, ns.
    pub p90_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// Longest, ns.
    pub max_ns: u64,
    /// Counts per power of two of ns (entry `i`: `[2^i, 2^(i+1))`), for histograms.
    #[serde(skip)]
    pub log2_counts: Vec<u64>,
}

impl Dist {
    fn of(mut v: Vec<u64>) -> Dist {
        if v.is_empty() {
            return Dist::default();
        }
        v.sort_unstable();
        let q = |p: f64| gfs2stats::dist::nearest_rank(&v, p);
        let mut log2_counts = vec![0u64; 64];
        for x in &v {
            log2_counts[gfs2stats::dist::log2_bucket(*x)] += 1;
        }
        Dist {
            count: v.len() as u64,
            p50_ns: q(0.5),
            p90_ns: q(0.9),
            p99_ns: q(0.99),
            max_ns: v[v.len() - 1],
            log2_counts,
        }
    }
}

/// DLM latency of one node's requests to masters of one kind.
#[derive(Debug, Clone, Serialize)]
pub struct DlmLatency {
    /// The requesting node.
    pub node: String,
    /// `local`, `remote` or `unknown`.
    pub master: &'static str,
    /// The master's node name (or `node ID` when no capture is that node), when known.
    pub master_node: Option<String>,
    /// `request_to_grant` (dlm_lock_start → dlm_ast) or `gfs2_tdiff` (gfs2's own
    /// round-trip time of the same replies, `gfs2_glock_lock_time`).
    pub measure: &'static str,
    /// `new` locks, conversions `up` to a stronger mode, or `down` (which a remote
    /// master does not answer: they complete locally, fast, wherever the master is).
    pub conversion: &'static str,
    /// Requests that waited for another node to give the lock up (a hand-off), apart
    /// from those that did not: blocking is not the DLM's latency.
    pub blocked: bool,
    /// The latencies.
    #[serde(flatten)]
    pub dist: Dist,
}

/// One hand-off: a holder on one node gave a glock up for a request on another.
#[derive(Debug, Clone, Serialize)]
pub struct Handoff {
    /// The glock.
    pub glock: String,
    /// Its type's name.
    #[serde(rename = "type")]
    pub gltype: String,
    /// The mode requested.
    pub mode: String,
    /// The node that asked.
    pub requester_node: String,
    /// The process that asked.
    pub requester_pid: i64,
    /// The node that gave the glock up.
    pub holder_node: String,
    /// The resource's master, when known.
    pub master_node: Option<String>,
    /// The request's start on the cluster clock (ns since the epoch when markers anchor it).
    pub start_ns: i64,
    /// Requester: first local waiter queued → DLM request.
    pub queue_ns: Option<u64>,
    /// Requester's DLM request → the holder's blocking AST (across nodes: ± uncertainty).
    pub request_to_bast_ns: i64,
    /// Holder: blocking AST → its demote work began (local holders finishing, minimum
    /// hold time).
    pub holder_wait_ns: Option<u64>,
    /// Holder: demote work (log flush, writeback) → its release to the DLM.
    pub holder_work_ns: Option<u64>,
    /// Holder's release → the requester's grant (across nodes: ± uncertainty).
    pub release_to_grant_ns: Option<i64>,
    /// Requester: grant → gfs2 promote.
    pub grant_to_promote_ns: Option<u64>,
    /// Requester: first waiter queued (or DLM request) → promote, on its own clock.
    pub total_ns: Option<u64>,
    /// How far apart the two nodes' clocks may still be (the sum of their uncertainties).
    pub uncertainty_ns: u64,
    /// The raw events: `NODE@TS` of the request, bast, release and grant (trace clocks).
    pub evidence: Vec<String>,
}

/// Hand-offs of one glock from one holder node to one requester node.
#[derive(Debug, Clone, Serialize)]
pub struct HandoffSummary {
    /// The glock.
    pub glock: String,
    /// The node that asked.
    pub requester_node: String,
    /// The node that gave the glock up.
    pub holder_node: String,
    /// Hand-offs.
    pub count: u64,
    /// First local waiter queued → DLM request.
    pub queue: Dist,
    /// DLM request → the holder's blocking AST.
    pub request_to_bast: Dist,
    /// Blocking AST → demote work began.
    pub holder_wait: Dist,
    /// Demote work → release.
    pub holder_work: Dist,
    /// Release → grant.
    pub release_to_grant: Dist,
    /// Grant → promote.
    pub grant_to_promote: Dist,
    /// First waiter queued → promote.
    pub total: Dist,
}

/// Remote demotes of one glock on one node, by the node whose request caused them.
#[derive(Debug, Clone, Serialize)]
pub struct DemoteCause {
    /// The glock.
    pub glock: String,
    /// The node demoted.
    pub node: String,
    /// The requesting node (`null`: no request on another node matches).
    pub caused_by_node: Option<String>,
    /// Demotes.
    pub count: u64,
    /// `dlm_bast` (the DLM's blocking AST) or `gfs2_demote_rq` (gfs2's remote demote
    /// request, on kernels without dlm events).
    pub source: &'static str,
}

/// Everything cross-node causality found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Causality {
    /// How each node's trace clock was aligned.
    pub clock_alignment: Vec<Alignment>,
    /// DLM latency by node and master.
    pub dlm_latency: Vec<DlmLatency>,
    /// Each hand-off, longest first.
    pub handoffs: Vec<Handoff>,
    /// Hand-offs per glock and node pair, most first.
    pub handoff_summary: Vec<HandoffSummary>,
    /// Remote demotes by the node that caused them, most first.
    pub demote_causes: Vec<DemoteCause>,
}

/// A node's part, with what the snapshots say.
pub struct NodeInput<'a> {
    /// The node's name.
    pub node: &'a str,
    /// What its trace pass gathered.
    pub dlm: &'a NodeDlm,
    /// The DLM node id the capture recorded.
    pub nodeid: Option<u32>,
    /// Masters per glock from the node's DLM lock dumps (0: this node).
    pub dump_masters: &'a GlockMap<u32>,
}

/// One node's gfs2 waits for one glock, sorted by start, with the latest end so far, to
/// find the waits around a moment in logarithmic time.
#[derive(Default)]
struct Waits {
    spans: Vec<(u64, u64)>,
    latest_end: Vec<u64>,
}

impl Waits {
    fn index(&mut self) {
        self.spans.sort_unstable();
        let mut m = 0;
        self.latest_end = self
            .spans
            .iter()
            .map(|&(_, e)| {
                m = m.max(e);
                m
            })
            .collect();
    }

    /// Whether a wait spans `t` (this node's trace clock) give or take `u`.
    fn covers(&self, t: i64, u: i64) -> bool {
        let upto = self.spans.partition_point(|&(q, _)| q as i64 - u <= t);
        (0..upto)
            .rev()
            .take_while(|&i| self.latest_end[i] as i64 + u >= t)
            .any(|i| self.spans[i].1 as i64 + u >= t)
    }
}

/// A message as both ends see it: sender's node id, sequence number, type, lock id.
type MsgKey = (u32, u32, MsgType, u32);

/// A hand-off before it is written out, with the times the timeline needs.
#[derive(Debug, Clone)]
pub struct Matched {
    /// The requesting node (index).
    pub requester: usize,
    /// Its request (index in its requests).
    pub request: usize,
    /// The node that gave the glock up (index).
    pub holder: usize,
    /// Its blocking AST (index in its basts).
    pub bast: usize,
}

fn ns(v: i64) -> u64 {
    v.max(0) as u64
}

/// Reconstructs hand-offs, demote causes and latency by master across `nodes`.
pub fn analyze(nodes: &[NodeInput<'_>]) -> (Causality, Vec<Matched>) {
    let c = Cluster::new(nodes);
    let matched = c.match_handoffs();
    let mut handoffs = c.handoffs(&matched);
    let out = Causality {
        clock_alignment: c.align.clone(),
        dlm_latency: c.dlm_latency(&matched),
        handoff_summary: handoff_summary(&handoffs),
        demote_causes: c.demote_causes(&matched),
        handoffs: {
            handoffs.sort_by(|a, b| {
                b.total_ns
                    .cmp(&a.total_ns)
                    .then(a.start_ns.cmp(&b.start_ns))
            });
            handoffs
        },
    };
    (out, matched)
}

/// Who received what each node sent, keyed by (from, seq, type, lkid), in each receiver's
/// time order. A key can repeat (sequence numbers restart with a connection, lock ids are
/// reused): the k-th send of a key to a node pairs with that node's k-th receipt of it, as
/// the DLM delivers a connection's messages in order.
#[derive(Default)]
struct Messages {
    receipts: HashMap<(MsgKey, usize), Vec<u64>>,
    receivers: HashMap<MsgKey, Vec<usize>>,
}

impl Messages {
    fn index(nodes: &[NodeInput<'_>]) -> Messages {
        let mut m = Messages::default();
        for (i, n) in nodes.iter().enumerate() {
            for x in &n.dlm.received {
                let key = (x.from, x.seq, x.mtype, x.lkid);
                let r = m.receipts.entry((key, i)).or_default();
                if r.is_empty() {
                    m.receivers.entry(key).or_default().push(i);
                }
                r.push(x.ts_ns);
            }
        }
        m
    }

    /// The send and receive times of the messages between each pair of nodes (a < b), for
    /// the clock alignment.
    fn pairs(
        &self,
        nodes: &[NodeInput<'_>],
        ids: &[Option<u32>],
    ) -> HashMap<(usize, usize), PairBounds> {
        let mut pairs: HashMap<(usize, usize), PairBounds> = HashMap::new();
        for (a, n) in nodes.iter().enumerate() {
            let mut next: HashMap<(MsgKey, usize), usize> = HashMap::new();
            for m in &n.dlm.sent {
                let key = (m.from, m.seq, m.mtype, m.lkid);
                let Some(bs) = self.receivers.get(&key) else {
                    continue;
                };
                for &b in bs {
                    if b == a || m.dst.is_some_and(|d| ids[b] != Some(d)) {
                        continue;
                    }
                    let k = next.entry((key, b)).or_default();
                    let Some(&recv) = self.receipts[&(key, b)].get(*k) else {
                        continue;
                    };
                    *k += 1;
                    if a < b {
                        pairs.entry((a, b)).or_default().a_to_b(m.ts_ns, recv);
                    } else {
                        pairs.entry((b, a)).or_default().b_to_a(m.ts_ns, recv);
                    }
                }
            }
        }
        pairs
    }
}

/// The nodes with their ids, their messages and their clocks aligned: what every phase
/// of the causality reads.
struct Cluster<'a> {
    nodes: &'a [NodeInput<'a>],
    ids: Vec<Option<u32>>,
    by_id: HashMap<u32, usize>,
    messages: Messages,
    align: Vec<Alignment>,
    /// The largest clock uncertainty of any pair of nodes.
    umax: i64,
}

impl<'a> Cluster<'a> {
    fn new(nodes: &'a [NodeInput<'a>]) -> Cluster<'a> {
        let ids: Vec<Option<u32>> = nodes.iter().map(|n| n.nodeid.or(n.dlm.nodeid())).collect();
        let by_id = ids
            .iter()
            .enumerate()
            .filter_map(|(i, id)| Some(((*id)?, i)))
            .collect();
        let messages = Messages::index(nodes);
        let pairs = messages.pairs(nodes, &ids);
        let clocks: Vec<clock::NodeClock<'_>> = nodes
            .iter()
            .map(|n| clock::NodeClock {
                node: n.node,
                marks: &n.dlm.marks,
                trace_clock: n.dlm.trace_clock.as_deref(),
            })
            .collect();
        let align = clock::align(&clocks, &|a, b| {
            pairs.get(&(a, b)).copied().unwrap_or_default()
        });
        let mut c = Cluster {
            nodes,
            ids,
            by_id,
            messages,
            align,
            umax: 0,
        };
        c.umax = (0..nodes.len())
            .flat_map(|a| (0..nodes.len()).map(move |b| (a, b)))
            .map(|(a, b)| c.unc2(a, b))
            .max()
            .unwrap_or(0);
        c
    }

    /// A node's name, by its DLM node id.
    fn name_of(&self, id: u32) -> String {
        self.by_id
            .get(&id)
            .map_or_else(|| format!("node {id}"), |&i| self.nodes[i].node.to_string())
    }

    /// The clock uncertainty between two nodes, ns.
    fn unc2(&self, a: usize, b: usize) -> i64 {
        self.align[a].between(&self.align[b]) as i64
    }

    /// A node's clock offset (0 when it could not be aligned).
    fn off(&self, i: usize) -> i64 {
        self.align[i].offset_ns.unwrap_or(0)
    }

    /// A request's master, completed from the message's receiver or the lock dumps.
    fn master_of(&self, i: usize, r: &Request) -> (Master, Option<u32>) {
        let me = self.ids[i];
        match r.master {
            Master::Remote(Some(id)) => (Master::Remote(Some(id)), Some(id)),
            Master::Remote(None) => {
                let to = r.sent_seq.and_then(|(seq, t)| {
                    let bs = self.messages.receivers.get(&(me?, seq, t, r.lkb_id))?;
                    bs.iter().find(|&&b| b != i).and_then(|&b| self.ids[b])
                });
                (Master::Remote(to), to)
            }
            Master::Local => (Master::Local, me),
            Master::Unknown => match r.glock.and_then(|g| self.nodes[i].dump_masters.get(&g)) {
                Some(0) => (Master::Local, me),
                Some(&m) => (Master::Remote(Some(m)), Some(m)),
                None => (Master::Unknown, None),
            },
        }
    }

    /// Every blocking AST of each glock, at its aligned time: (time, node, index).
    fn basts_by_glock(&self) -> GlockMap<Vec<(i64, usize, usize)>> {
        let mut basts: GlockMap<Vec<(i64, usize, usize)>> = GlockMap::default();
        for (b, n) in self.nodes.iter().enumerate() {
            let Some(al) = self.align[b].offset_ns else {
                continue;
            };
            for (k, x) in n.dlm.basts.iter().enumerate() {
                if let Some(g) = x.glock {
                    basts
                        .entry(g)
                        .or_default()
                        .push((x.ts_ns as i64 + al, b, k));
                }
            }
        }
        for v in basts.values_mut() {
            v.sort_unstable();
        }
        basts
    }

    /// Granted requests of a glock, in order of their aligned start: (start, node, index).
    fn granted_requests(&self) -> Vec<(i64, usize, usize)> {
        let mut reqs: Vec<(i64, usize, usize)> = Vec::new();
        for (a, n) in self.nodes.iter().enumerate() {
            let Some(al) = self.align[a].offset_ns else {
                continue;
            };
            for (k, r) in n.dlm.requests.iter().enumerate() {
                if r.glock.is_some() && r.status == 0 && r.granted_ns.is_some() {
                    reqs.push((r.start_ns as i64 + al, a, k));
                }
            }
        }
        reqs.sort_unstable();
        reqs
    }

    /// Hand-offs: requests in order of their aligned start; each bast serves one, the
    /// first on another node, of the requested mode, between the request and its grant
    /// (within the pair's clock uncertainty), released before the grant.
    fn match_handoffs(&self) -> Vec<Matched> {
        let basts_by_glock = self.basts_by_glock();
        let mut used: HashSet<(usize, usize)> = HashSet::new();
        let mut matched: Vec<Matched> = Vec::new();
        for (start, a, k) in self.granted_requests() {
            let r = &self.nodes[a].dlm.requests[k];
            let (Some(g), Some(granted)) = (r.glock, r.granted_ns) else {
                continue;
            };
            let granted = granted as i64 + self.off(a);
            let Some(cands) = basts_by_glock.get(&g) else {
                continue;
            };
            // Candidates start where even the least certain pair's window could.
            let first = cands.partition_point(|c| c.0 < start - self.umax);
            for &(at, b, kb) in &cands[first..] {
                if b == a || used.contains(&(b, kb)) {
                    continue;
                }
                let u = self.unc2(a, b);
                if at < start - u {
                    continue;
                }
                if at > granted + u {
                    break;
                }
                let x = &self.nodes[b].dlm.basts[kb];
                if x.mode != r.mode {
                    continue;
                }
                let Some(rel) = x.release_ns else { continue };
                if rel as i64 + self.off(b) > granted + u {
                    continue;
                }
                used.insert((b, kb));
                matched.push(Matched {
                    requester: a,
                    request: k,
                    holder: b,
                    bast: kb,
                });
            }
        }
        matched
    }

    /// DLM latency by master: request to grant and gfs2's tdiff, per node, master, measure,
    /// conversion and whether a hand-off blocked it.
    fn dlm_latency(&self, matched: &[Matched]) -> Vec<DlmLatency> {
        type LatKey = (
            usize,
            &'static str,
            Option<u32>,
            &'static str,
            Conversion,
            bool,
        );
        let mut lat: BTreeMap<LatKey, Vec<u64>> = BTreeMap::new();
        let blocked: HashSet<(usize, usize)> =
            matched.iter().map(|m| (m.requester, m.request)).collect();
        let kind = |m: Master| match m {
            Master::Local => "local",
            Master::Remote(_) => "remote",
            Master::Unknown => "unknown",
        };
        for (i, n) in self.nodes.iter().enumerate() {
            for (k, r) in n.dlm.requests.iter().enumerate() {
                let Some(g) = r.granted_ns else { continue };
                let (m, id) = self.master_of(i, r);
                let b = blocked.contains(&(i, k));
                lat.entry((i, kind(m), id, "request_to_grant", r.conversion, b))
                    .or_default()
                    .push(g - r.start_ns);
            }
            for &(k, t) in &n.dlm.tdiff {
                let r = &n.dlm.requests[k];
                let (m, id) = self.master_of(i, r);
                let b = blocked.contains(&(i, k));
                lat.entry((i, kind(m), id, "gfs2_tdiff", r.conversion, b))
                    .or_default()
                    .push(ns(t));
            }
        }
        lat.into_iter()
            .map(
                |((i, master, id, measure, conversion, blocked), v)| DlmLatency {
                    node: self.nodes[i].node.to_string(),
                    master,
                    master_node: id.map(|id| self.name_of(id)),
                    measure,
                    conversion: conversion.as_str(),
                    blocked,
                    dist: Dist::of(v),
                },
            )
            .collect()
    }

    /// Each matched hand-off with its phases on one time line.
    fn handoffs(&self, matched: &[Matched]) -> Vec<Handoff> {
        matched.iter().map(|m| self.handoff(m)).collect()
    }

    fn handoff(&self, m: &Matched) -> Handoff {
        let nodes = self.nodes;
        let r = &nodes[m.requester].dlm.requests[m.request];
        let x = &nodes[m.holder].dlm.basts[m.bast];
        let (oa, ob) = (self.off(m.requester), self.off(m.holder));
        let g = r.glock.unwrap_or(GlockId::new(0, 0));
        let granted = r.granted_ns.unwrap_or(r.start_ns);
        let (_, master) = self.master_of(m.requester, r);
        let at = |node: usize, ts: u64| format!("{}@{}", nodes[node].node, fmt_ts(ts));
        let mut evidence = vec![at(m.requester, r.start_ns), at(m.holder, x.ts_ns)];
        evidence.extend(x.release_ns.map(|t| at(m.holder, t)));
        evidence.push(at(m.requester, granted));
        Handoff {
            glock: g.to_string(),
            gltype: g.glock_type().name().into_owned(),
            mode: r.mode.as_str().to_string(),
            requester_node: nodes[m.requester].node.to_string(),
            requester_pid: r.pid,
            holder_node: nodes[m.holder].node.to_string(),
            master_node: master.map(|id| self.name_of(id)),
            start_ns: r.start_ns as i64 + oa,
            queue_ns: r.queued_ns.map(|q| r.start_ns.saturating_sub(q)),
            request_to_bast_ns: (x.ts_ns as i64 + ob) - (r.start_ns as i64 + oa),
            holder_wait_ns: x.work_ns.map(|w| w - x.ts_ns),
            holder_work_ns: x.work_ns.zip(x.release_ns).map(|(w, rel)| rel - w),
            release_to_grant_ns: x
                .release_ns
                .map(|rel| (granted as i64 + oa) - (rel as i64 + ob)),
            grant_to_promote_ns: r.promote_ns.map(|p| p - granted),
            total_ns: r.promote_ns.map(|p| p - r.first_ns()),
            uncertainty_ns: self.unc2(m.requester, m.holder) as u64,
            evidence,
        }
    }

    /// Each node's gfs2 waits (queue to state change) by glock, for the demote causes when
    /// some node has no dlm lock events.
    fn gfs2_waits(&self) -> Vec<GlockMap<Waits>> {
        let nodes = self.nodes;
        nodes
            .iter()
            .map(|n| {
                if nodes.iter().all(|m| m.dlm.has_lock_events) {
                    return GlockMap::default();
                }
                let mut m: GlockMap<Waits> = GlockMap::default();
                for w in &n.dlm.gfs2_waits {
                    m.entry(w.glock)
                        .or_default()
                        .spans
                        .push((w.queued_ns, w.changed_ns));
                }
                m.values_mut().for_each(Waits::index);
                m
            })
            .collect()
    }

    /// Demote causes: every bast, by its hand-off's requester; on nodes without dlm lock
    /// events, gfs2's view: the remote demote request, and the other nodes waiting for the
    /// glock's state to change at the time.
    fn demote_causes(&self, matched: &[Matched]) -> Vec<DemoteCause> {
        let nodes = self.nodes;
        let mut causes: BTreeMap<(String, usize, Option<usize>, &'static str), u64> =
            BTreeMap::new();
        let cause_of: HashMap<(usize, usize), usize> = matched
            .iter()
            .map(|m| ((m.holder, m.bast), m.requester))
            .collect();
        let waits = self.gfs2_waits();
        for (b, n) in nodes.iter().enumerate() {
            for (k, x) in n.dlm.basts.iter().enumerate() {
                let Some(g) = x.glock else { continue };
                *causes
                    .entry((g.to_string(), b, cause_of.get(&(b, k)).copied(), "dlm_bast"))
                    .or_default() += 1;
            }
            if n.dlm.has_lock_events {
                continue;
            }
            for &(ts, g) in &n.dlm.remote_demotes {
                let cause = self.align[b].at(ts).and_then(|t| {
                    (0..nodes.len()).filter(|&a| a != b).find(|&a| {
                        let (Some(o), u) = (self.align[a].offset_ns, self.unc2(a, b)) else {
                            return false;
                        };
                        waits[a].get(&g).is_some_and(|w| w.covers(t - o, u))
                    })
                });
                *causes
                    .entry((g.to_string(), b, cause, "gfs2_demote_rq"))
                    .or_default() += 1;
            }
        }
        let mut causes: Vec<DemoteCause> = causes
            .into_iter()
            .map(|((glock, b, by, source), count)| DemoteCause {
                glock,
                node: nodes[b].node.to_string(),
                caused_by_node: by.map(|a| nodes[a].node.to_string()),
                count,
                source,
            })
            .collect();
        causes.sort_by(|a, b| b.count.cmp(&a.count).then(a.glock.cmp(&b.glock)));
        causes
    }
}

/// The hand-offs per glock and node pair, most first.
fn handoff_summary(handoffs: &[Handoff]) -> Vec<HandoffSummary> {
    let mut groups: BTreeMap<(String, String, String), Vec<&Handoff>> = BTreeMap::new();
    for h in handoffs {
        groups
            .entry((
                h.glock.clone(),
                h.requester_node.clone(),
                h.holder_node.clone(),
            ))
            .or_default()
            .push(h);
    }
    let mut summary: Vec<HandoffSummary> = groups
        .into_iter()
        .map(|((glock, req, hold), v)| {
            let d = |f: &dyn Fn(&Handoff) -> Option<i64>| {
                Dist::of(v.iter().filter_map(|h| f(h)).map(ns).collect())
            };
            HandoffSummary {
                glock,
                requester_node: req,
                holder_node: hold,
                count: v.len() as u64,
                queue: d(&|h| h.queue_ns.map(|x| x as i64)),
                request_to_bast: d(&|h| Some(h.request_to_bast_ns)),
                holder_wait: d(&|h| h.holder_wait_ns.map(|x| x as i64)),
                holder_work: d(&|h| h.holder_work_ns.map(|x| x as i64)),
                release_to_grant: d(&|h| h.release_to_grant_ns),
                grant_to_promote: d(&|h| h.grant_to_promote_ns.map(|x| x as i64)),
                total: d(&|h| h.total_ns.map(|x| x as i64)),
            }
        })
        .collect();
    summary.sort_by(|a, b| b.count.cmp(&a.count).then(a.glock.cmp(&b.glock)));
    summary
}

/// A trace timestamp as the trace prints it (`SECS.MICROS`).
pub fn fmt_ts(ts: u64) -> String {
    format!("{}.{:06}", ts / 1_000_000_000, ts % 1_000_000_000 / 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_around_a_moment() {
        let mut w = Waits {
            spans: vec![(50, 60), (10, 100), (200, 210)],
            latest_end: Vec::new(),
        };
        w.index();
        // Inside the long wait only, though a shorter one ended before.
        assert!(w.covers(80, 0));
        assert!(w.covers(205, 0));
        assert!(!w.covers(150, 0));
        assert!(w.covers(150, 50));
        assert!(!w.covers(5, 0));
        assert!(w.covers(5, 5));
        assert!(!w.covers(300, 10));
    }

    #[test]
    fn distributions() {
        let d = Dist::of((1..=100).rev().collect());
        assert_eq!(
            (d.count, d.p50_ns, d.p90_ns, d.p99_ns, d.max_ns),
            (100, 50, 90, 99, 100)
        );
        assert_eq!(Dist::of(Vec::new()), Dist::default());
    }

    /// A hand-off's percentiles are the other sections' (one rule): the same samples give
    /// the same figures as gfs2stats' recorder, for counts where rounding rules part.
    #[test]
    fn distributions_follow_the_recorders_rule() {
        for n in [1u64, 2, 3, 10, 91, 150, 1000] {
            let v: Vec<u64> = (1..=n).map(|i| i * 7919 % 10007 + 1).collect();
            let mut r = gfs2stats::dist::Recorder::default();
            v.iter().for_each(|x| r.record(*x));
            let (d, want) = (Dist::of(v), r.distribution());
            assert_eq!(
                (d.count, d.p50_ns, d.p90_ns, d.p99_ns, d.max_ns),
                (
                    want.count,
                    want.p50_ns,
                    want.p90_ns,
                    want.p99_ns,
                    want.max_ns
                ),
                "{n} samples"
            );
        }
    }
}
