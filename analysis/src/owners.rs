//! Who a holder or a waiter really is, each from the source that knows it, with the source
//! cited:
//! * a glocks holder line that names a process (`p:866 [flock]`) is that process, except
//!   an flock holder whose process has ended (`p:228 [(ended)]` before 6.1, where flock
//!   holders keep the pid of the process that took the lock): the lock is the open file's,
//!   held by the live process that fdinfo shows holding it through that file (`fdlocks.N`);
//! * any other holder whose process had ended (`p:174 [(ended)]`, such as the mount's own
//!   holds) stays that pid, with the command the node's trace saw it queue a holder under
//!   when the trace began early enough (`queued as mount in the trace`);
//! * a GL_NOPID holder (`p:0 [(none)]` on 6.1+, `p:-1` before) of an flock glock (type 6)
//!   belongs to the process fdinfo shows holding the flock through an open file, else to
//!   the process `/proc/locks` shows holding the flock on that inode, else to
//!   the pid of the node's DLM lock on the glock (the DLM records the process that made
//!   the request; kernel threads are not taken), each only while that process is alive
//!   and keeps the glock's file open (an flock belongs to the open file: when the process
//!   that took it ends, its children that inherited the file keep it, and `/proc/locks`
//!   and the DLM still name the dead pid); else to the live process that keeps the file
//!   open (glockfd) and does not wait for it;
//! * a GL_NOPID waiter of an flock glock is the process of the node's waiting DLM request,
//!   else (a wait behind a holder on the same node: no DLM request) the one process that
//!   has the glock's file open (glockfd), is not its holder, waits for no other lock, and
//!   sleeps in a lock wait when the process table says;
//! * other GL_NOPID holders (iopen glocks held by cached inodes, the journal) belong to the
//!   node, not to a process: the DLM lock's pid there is whichever process last asked.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use bundle::fdlocks::FdLock;
use bundle::procs::{self, FileLock, Table};
use bundle::{Captures, FileKind, Snapshot};
use glockparse::input::read_path;
use glockparse::plocks::Plock;
use glockparse::{Diagnostics, GlockId};

use crate::GlockMap;

use crate::snapshots::{Dlm, Hold, Role};
use glockparse::dlm_locks::LockStatus;
use glockparse::quote::plain;

/// A snapshot's glockfd by process: the glocks whose files it has open, each with its line.
type OpenByPid = HashMap<i64, Vec<(GlockId, u64)>>;

/// A snapshot's glockfd by glock: the processes with its file open, each with its first line.
type OpenByGlock = HashMap<GlockId, BTreeMap<i64, u64>>;

/// A snapshot's glockfd lines indexed by process and by glock, with their line numbers.
fn index_glockfd(fds: &[glockparse::glockfd::GlockFd]) -> (OpenByPid, OpenByGlock) {
    let mut by_pid = OpenByPid::new();
    let mut by_glock = OpenByGlock::new();
    for (i, fd) in fds.iter().enumerate() {
        let line = i as u64 + 1;
        by_pid
            .entry(i64::from(fd.pid))
            .or_default()
            .push((fd.glock, line));
        by_glock
            .entry(fd.glock)
            .or_default()
            .entry(i64::from(fd.pid))
            .or_insert(line);
    }
    (by_pid, by_glock)
}

/// One side of a wait: a waiter or a holder.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Party {
    /// The node.
    pub node: String,
    /// `None` when no source names the process.
    pub pid: Option<i64>,
    /// Its command, when known.
    pub comm: Option<String>,
    /// The call site the glocks file printed for it.
    pub caller: Option<String>,
    /// Where the pid comes from: `glocks`, `fdinfo` (`fdlocks.N`), `locks` (`/proc/locks`),
    /// `dlm`, `glockfd`, `plocks` (`dlm_tool plocks`); `node` for a GL_NOPID holder or
    /// waiter of a glock that is not an flock's (an iopen glock of a cached inode, the
    /// journal): the node's, with no process behind it; else `none`.
    pub source: &'static str,
    /// The lines that say so (`NODE/FILE:LINE`).
    pub cites: Vec<String>,
    /// Of a process the glocks file says had ended (`p:174 [(ended)]`), the command the
    /// node's trace saw that pid queue a holder under ([`Queuers`]), when it did.
    pub queued_as: Option<String>,
}

/// A process in words: `pid 866 [flock]`, or `pid 866` when its comm is not known.
pub fn process(pid: i64, comm: Option<&str>) -> String {
    match comm {
        Some(c) => format!("pid {pid} [{c}]"),
        None => format!("pid {pid}"),
    }
}

/// A holder or waiter in words, as every part of the analysis names one: `pid 866 [flock]`,
/// with `(from dlm)` when a source other than the glocks file names it (`source` as in
/// [`Party::source`]); `no process (GL_NOPID)` for a hold of the node's own (source
/// `node`), `pid ?` when no source names the process.
pub fn named(pid: Option<i64>, comm: Option<&str>, source: &str) -> String {
    match (pid, source) {
        (Some(p), "glocks") => process(p, comm),
        (Some(p), s) => format!("{} (from {s})", process(p, comm)),
        (None, "node") => "no process (GL_NOPID)".to_string(),
        (None, _) => "pid ? (no source names the process)".to_string(),
    }
}

/// Who held and who waited for a glock in one glocks snapshot, in words, and the `H:` line
/// of each: the parties of a contended glock, or of one left queued at a trace's end.
#[derive(Debug, Clone, Default, serde::Serialize, PartialEq)]
pub struct Parties {
    /// Who held: `process state caller` ([`named`]), after the node where a list spans
    /// nodes (`n1 pid 866 [flock] EX __do_sys_flock+0x11c/0x1e0`).
    pub holders: Vec<String>,
    /// Who waited, in the same words.
    pub waiters: Vec<String>,
    /// The `H:` line (`NODE/FILE:LINE`) of each of `holders`, then of each of `waiters`.
    pub cites: Vec<String>,
}

impl Parties {
    /// Adds the holder or waiter `h`, named by `res` after `prefix` (a holder queued behind
    /// others, neither granted nor waiting, is left out).
    pub fn add(&mut self, prefix: &str, h: &Hold, res: &Resolver) {
        let holds = match h.role {
            Role::Holder => true,
            Role::Waiter => false,
            Role::Queued => return,
        };
        let mut party = res.party(h);
        // The holder line's own cite, which the party holds first.
        let cite = party.cites.swap_remove(0);
        let who = format!("{prefix}{} {} {}", party.named(), h.state, h.caller);
        if holds {
            self.holders.push(who);
            self.cites.insert(self.holders.len() - 1, cite);
        } else {
            self.waiters.push(who);
            self.cites.push(cite);
        }
    }

    /// Each party in words with its line: `held by pid 866 [flock] EX … (n1/glocks.2:12)`.
    pub fn cited(&self) -> impl Iterator<Item = String> + '_ {
        self.each()
            .map(|(role, who, cite)| format!("{role} {who} ({cite})"))
    }

    /// Each party with its role (`held by`, `waiting`) and its line, holders first.
    pub fn each(&self) -> impl Iterator<Item = (&'static str, &str, &str)> {
        let held = self.holders.iter().map(|w| ("held by", w.as_str()));
        let waiting = self.waiters.iter().map(|w| ("waiting", w.as_str()));
        held.chain(waiting)
            .zip(&self.cites)
            .map(|((role, who), cite)| (role, who, cite.as_str()))
    }
}

impl Party {
    /// In words: see [`named`], then the command an ended process queued under, when the
    /// trace knows it: `pid 174 [(ended)] (queued as mount in the trace)`.
    pub fn named(&self) -> String {
        let who = named(self.pid, self.comm.as_deref(), self.source);
        match &self.queued_as {
            Some(c) => format!("{who} (queued as {c} in the trace)"),
            None => who,
        }
    }
}

/// Process tables, `/proc/locks` and DLM locks of every node and snapshot, to resolve
/// holders and waiters to processes.
pub struct Resolver<'a> {
    /// By node, then snapshot.
    files: HashMap<&'a str, HashMap<u32, &'a Snapshot>>,
    /// The nodes' captures.
    caps: &'a Captures,
    tables: HashMap<&'a str, HashMap<u32, Table>>,
    locks: HashMap<&'a str, HashMap<u32, Vec<FileLock>>>,
    /// The locks processes hold through their open files (`fdlocks.N`), by node and snapshot.
    fdlocks: HashMap<&'a str, HashMap<u32, Vec<FdLock>>>,
    /// glockfd by pid: the glocks whose files each process has open, and their lines.
    fds_by_pid: HashMap<&'a str, HashMap<u32, OpenByPid>>,
    /// glockfd by glock: the processes with its file open and their first line.
    fds_by_glock: HashMap<&'a str, HashMap<u32, OpenByGlock>>,
    /// Each node's DLM requests waiting for flock glocks, by snapshot: (glock, pid).
    flock_waits: HashMap<(&'a str, u32), Vec<(GlockId, i64)>>,
    /// `dlm_tool plocks`: the cluster's POSIX locks, by dumping node and snapshot (in
    /// order: every node's dump shows the same waits, and the first one read is cited).
    plocks: BTreeMap<&'a str, BTreeMap<u32, Vec<Plock>>>,
    gfs2_devices: HashMap<&'a str, Vec<(u32, u32)>>,
    /// snapshot → glock → owner node → the DLM locks seen for it, in any node's dump.
    dlm: HashMap<u32, GlockMap<HashMap<&'a str, Vec<&'a Dlm>>>>,
    node_by_id: &'a HashMap<u64, String>,
    /// The processes that wait for flock glocks behind a holder on their own node
    /// ([`Resolver::with_holds`]): (node, snapshot, glock) → pid and the glockfd line.
    local_waiters: HashMap<(String, u32, GlockId), (i64, String)>,
    /// Where several processes could be that waiter: each of them, with its glockfd line.
    candidates: HashMap<(String, u32, GlockId), Vec<(i64, String)>>,
    /// Each node's traces: the command each pid queued a holder under
    /// ([`Resolver::with_queuers`]).
    queuers: HashMap<&'a str, &'a Queuers>,
    /// Problems reading the process tables and lock lists.
    pub diagnostics: Diagnostics,
}

impl<'a> Resolver<'a> {
    /// Reads the process tables, `/proc/locks` copies and mount tables of `caps`, and
    /// indexes `dlm` by snapshot, glock and owner node (named through `node_by_id`).
    pub fn new(caps: &'a Captures, dlm: &'a [Dlm], node_by_id: &'a HashMap<u64, String>) -> Self {
        let mut r = Resolver {
            files: HashMap::new(),
            caps,
            tables: HashMap::new(),
            locks: HashMap::new(),
            fdlocks: HashMap::new(),
            fds_by_pid: HashMap::new(),
            fds_by_glock: HashMap::new(),
            flock_waits: HashMap::new(),
            plocks: BTreeMap::new(),
            gfs2_devices: HashMap::new(),
            dlm: HashMap::new(),
            node_by_id,
            local_waiters: HashMap::new(),
            candidates: HashMap::new(),
            queuers: HashMap::new(),
            diagnostics: Diagnostics::default(),
        };
        for n in &caps.nodes {
            // The device of the node's filesystem where its captures say which it is, else
            // every GFS2 device: a lock on another filesystem of the node is not on a glock
            // of this one.
            let devices = match caps.fs_ids_of(&n.node).dev {
                Some(dev) => Some(vec![dev]),
                None => n
                    .file(bundle::NodeFile::Mountinfo)
                    .and_then(|p| bundle::read_text(p).ok())
                    .map(|mi| procs::gfs2_devices(&mi)),
            };
            if let Some(devices) = devices {
                r.gfs2_devices.insert(&n.node, devices);
            }
            for s in &n.snapshots {
                r.files.entry(&n.node).or_default().insert(s.index, s);
                if let Some(Ok((tasks, d))) = s.path(FileKind::Procs).map(procs::read_path) {
                    r.diagnostics.merge(&d);
                    r.tables
                        .entry(&n.node)
                        .or_default()
                        .insert(s.index, Table::new(tasks));
                }
                if let Some(Ok((locks, d))) = s
                    .path(FileKind::Locks)
                    .map(|p| read_path(p, procs::read_locks))
                {
                    r.diagnostics.merge(&d);
                    r.locks.entry(&n.node).or_default().insert(s.index, locks);
                }
                if let Some(Ok((locks, d))) = s
                    .path(FileKind::FdLocks)
                    .map(|p| read_path(p, bundle::fdlocks::read))
                {
                    r.diagnostics.merge(&d);
                    r.fdlocks.entry(&n.node).or_default().insert(s.index, locks);
                }
                if let Some(Ok((fds, d))) = s
                    .path(FileKind::Glockfd)
                    .map(|p| read_path(p, glockparse::glockfd::read_all))
                {
                    r.diagnostics.merge(&d);
                    let (by_pid, by_glock) = index_glockfd(&fds);
                    r.fds_by_glock
                        .entry(&n.node)
                        .or_default()
                        .insert(s.index, by_glock);
                    r.fds_by_pid
                        .entry(&n.node)
                        .or_default()
                        .insert(s.index, by_pid);
                }
                if let Some(Ok((locks, d))) = s
                    .path(FileKind::Plocks)
                    .map(|p| read_path(p, glockparse::plocks::read_all))
                {
                    r.diagnostics.merge(&d);
                    r.plocks.entry(&n.node).or_default().insert(s.index, locks);
                }
            }
        }
        for d in dlm {
            if let (Some(owner), Some(glock)) = (r.owner_node(d), d.glock) {
                let pid = i64::try_from(d.pid).ok().filter(|p| *p > 0);
                if let (6, true, Some(pid)) = (glock.gltype, d.status.is_waiting(), pid) {
                    r.flock_waits
                        .entry((owner, d.at.snapshot))
                        .or_default()
                        .push((glock, pid));
                }
                r.dlm
                    .entry(d.at.snapshot)
                    .or_default()
                    .entry(glock)
                    .or_default()
                    .entry(owner)
                    .or_default()
                    .push(d);
            }
        }
        r
    }

    /// The glocks whose files process `pid` has open on `node` at snapshot `snap`, by
    /// glockfd, each with the line that says so.
    pub fn open_files(&self, node: &str, snap: u32, pid: i64) -> Vec<(GlockId, String)> {
        let fds = self
            .fds_by_pid
            .get(node)
            .and_then(|m| m.get(&snap)?.get(&pid));
        self.cite_fds(node, snap, fds.into_iter().flatten().copied())
    }

    /// Every node's `dlm_tool plocks` dumps: (dumping node, snapshot, its POSIX locks).
    pub fn plock_dumps(&self) -> impl Iterator<Item = (&'a str, u32, &[Plock])> + '_ {
        self.plocks
            .iter()
            .flat_map(|(node, m)| m.iter().map(|(snap, v)| (*node, *snap, v.as_slice())))
    }

    /// A POSIX lock of `dumped_by`'s plocks dump at `snap` as one side of a wait: the
    /// process on the node its DLM node id names (its command from that node's process
    /// table at the same snapshot); `node N` for a node id no capture names (every node's
    /// dlm_controld keeps the whole cluster's POSIX locks, so one node's dump shows the
    /// others' too).
    pub fn plock_party(&self, dumped_by: &str, snap: u32, lock: &Plock) -> Party {
        let node = u64::try_from(lock.nodeid)
            .ok()
            .and_then(|id| self.node_of_id(id))
            .map_or_else(|| format!("node {}", lock.nodeid), str::to_string);
        let mut p = Party {
            node,
            pid: None,
            comm: None,
            caller: None,
            source: "plocks",
            cites: vec![self.cite(dumped_by, snap, FileKind::Plocks, lock.line)],
            queued_as: None,
        };
        self.name(&mut p, snap, i64::from(lock.pid), Vec::new());
        p
    }

    /// The node that owns a DLM lock, by name.
    pub fn owner_node(&self, d: &Dlm) -> Option<&'a str> {
        self.node_of_id(d.owner?)
    }

    /// The node whose DLM node id is `id`, by the name its capture gives it.
    pub fn node_of_id(&self, id: u64) -> Option<&'a str> {
        self.node_by_id.get(&id).map(String::as_str)
    }

    fn snapshot(&self, node: &str, snap: u32) -> Option<&'a Snapshot> {
        self.files.get(node).and_then(|m| m.get(&snap)).copied()
    }

    /// Whether `node` has a glocks file for snapshot `snap`.
    pub fn has_glocks(&self, node: &str, snap: u32) -> bool {
        self.snapshot(node, snap)
            .is_some_and(|s| s.has(FileKind::Glocks))
    }

    /// The process table of a node at a snapshot (empty when not captured).
    pub fn table(&self, node: &str, snap: u32) -> Option<&Table> {
        self.tables
            .get(node)
            .and_then(|m| m.get(&snap))
            .filter(|t| !t.is_empty())
    }

    /// `NODE/FILE:LINE` for a line of a snapshot's file of `kind` ([`NodeCapture::cite_file`]:
    /// the file's path where the node spans several captures; `KIND.N` when the file's name
    /// is not known).
    fn cite(&self, node: &str, snap: u32, kind: FileKind, line: u64) -> String {
        format!("{}:{line}", self.cite_file(node, snap, kind))
    }

    /// How a node's file of a snapshot is named in citations ([`Captures::cite_file`]).
    fn cite_file(&self, node: &str, snap: u32, kind: FileKind) -> String {
        self.caps.cite_file(node, snap, kind)
    }

    /// `NODE/glocks.N:LINE` of a holder line.
    pub fn cite_hold(&self, h: &Hold) -> String {
        self.cite(&h.at.node, h.at.snapshot, FileKind::Glocks, h.line)
    }

    /// `NODE/dlm_locks.N:LINE` of a DLM lock (the node whose dump it is).
    pub fn cite_dlm(&self, d: &Dlm) -> String {
        self.cite(&d.at.node, d.at.snapshot, FileKind::DlmLocks, d.line)
    }

    /// A task of a node's process table at a snapshot, with the line that shows it (in a
    /// copy of `/proc`, its `PID/status` file's).
    pub fn task(&self, node: &str, snap: u32, pid: i64) -> Option<(&procs::Task, String)> {
        let t = self.table(node, snap)?.get(pid)?;
        let procs = self.files.get(node)?.get(&snap)?.path(FileKind::Procs)?;
        let cite = if procs.is_dir() {
            let dir = self.cite_file(node, snap, FileKind::Procs);
            let status = procs::proc_file(t.tid, "status");
            format!("{dir}/{}:{}", status.display(), t.line)
        } else {
            self.cite(node, snap, FileKind::Procs, t.line)
        };
        Some((t, cite))
    }

    /// The process a DLM lock was requested by, when it can be trusted to be the lock's
    /// owner: only for flock glocks, and never a kernel thread.
    fn dlm_pid(&self, d: &Dlm, node: &str) -> Option<(i64, Option<String>, Vec<String>)> {
        let flock = d.glock.is_some_and(|g| g.gltype == 6);
        let pid = i64::try_from(d.pid).ok().filter(|p| *p > 0 && flock)?;
        let mut cites = vec![self.cite_dlm(d)];
        let mut comm = None;
        if let Some((task, cite)) = self.task(node, d.at.snapshot, pid) {
            if task.is_kernel_thread() {
                return None;
            }
            comm = Some(plain(task.comm.as_bytes()).into_owned());
            cites.push(cite);
        }
        Some((pid, comm, cites))
    }

    /// A DLM lock as one side of a wait, for a node whose glocks file does not show it.
    pub fn dlm_party(&self, d: &Dlm) -> Option<Party> {
        let node = self.owner_node(d)?;
        let (pid, comm, cites, source) = match self.dlm_pid(d, node) {
            Some((p, c, cites)) => (Some(p), c, cites, "dlm"),
            None => (None, None, vec![self.cite_dlm(d)], "none"),
        };
        Some(Party {
            node: node.to_string(),
            pid,
            comm,
            caller: None,
            source,
            cites,
            queued_as: None,
        })
    }

    /// Whether `pid` can be the process behind a lock of `glock` on `node` at `snap`: one
    /// the snapshot's process table shows (when it has one) that has the glock's file open
    /// by glockfd (when it was read).
    fn is_live_opener(&self, node: &str, snap: u32, glock: GlockId, pid: i64) -> bool {
        if self.table(node, snap).is_some_and(|t| t.get(pid).is_none()) {
            return false;
        }
        match self.fds_by_glock.get(node).and_then(|m| m.get(&snap)) {
            Some(by_glock) => by_glock.get(&glock).is_some_and(|o| o.contains_key(&pid)),
            None => true,
        }
    }

    /// The processes that have `glock`'s file open on `node` at `snap` (glockfd), each
    /// once, in pid order, with the first line that says so.
    fn openers(&self, node: &str, snap: u32, glock: GlockId) -> BTreeMap<i64, String> {
        let fds = self
            .fds_by_glock
            .get(node)
            .and_then(|m| m.get(&snap)?.get(&glock));
        let fds = fds.into_iter().flatten().map(|(&pid, &line)| (pid, line));
        self.cite_fds(node, snap, fds)
    }

    /// `(key, line)` pairs of `node`'s glockfd at `snap`, each line cited.
    fn cite_fds<K, C: FromIterator<(K, String)>>(
        &self,
        node: &str,
        snap: u32,
        fds: impl Iterator<Item = (K, u64)>,
    ) -> C {
        fds.map(|(key, line)| (key, self.cite(node, snap, FileKind::Glockfd, line)))
            .collect()
    }

    /// The node's DLM locks on `glock` at `snap`, as any dump shows them.
    fn dlm_locks(&self, node: &str, snap: u32, glock: GlockId) -> &[&'a Dlm] {
        self.dlm
            .get(&snap)
            .and_then(|m| m.get(&glock))
            .and_then(|m| m.get(node))
            .map_or(&[], Vec::as_slice)
    }

    /// Adds each node's trace readings (node, the commands its pids queued holders
    /// under), which name the processes that glocks files show only as `(ended)`.
    pub fn with_queuers(
        mut self,
        traces: impl IntoIterator<Item = (&'a str, &'a Queuers)>,
    ) -> Self {
        self.queuers.extend(traces);
        self
    }

    /// The command `pid` queued a holder under in `node`'s traces
    /// ([`Resolver::with_queuers`]).
    pub fn queued_as(&self, node: &str, pid: i64) -> Option<String> {
        self.queuers.get(node)?.comm(pid)
    }

    /// The live process named as holding an flock glock: by fdinfo ([`Resolver::fd_holder`]),
    /// else by `/proc/locks`, else by its granted DLM lock; with where that comes from and
    /// the lines that say so.
    fn named_holder(
        &self,
        node: &str,
        snap: u32,
        glock: GlockId,
    ) -> Option<(i64, &'static str, Vec<String>)> {
        if let Some((pid, cite)) = self.fd_holder(node, snap, glock) {
            return Some((pid, "fdinfo", vec![cite]));
        }
        let live = |pid: &i64| self.is_live_opener(node, snap, glock, *pid);
        if let Some((pid, cite)) = self
            .flock_owner(node, snap, &glock)
            .filter(|(p, _)| live(p))
        {
            return Some((pid, "locks", vec![cite]));
        }
        let granted = self
            .dlm_locks(node, snap, glock)
            .iter()
            .find(|d| d.status == LockStatus::Granted)?;
        let (pid, _, cites) = self.dlm_pid(granted, node).filter(|(p, ..)| live(p))?;
        Some((pid, "dlm", cites))
    }

    /// The pids of `node`'s DLM requests waiting at `snap` for flock glocks other than
    /// `glock`: processes that wait for something else, so not for it.
    fn waiting_elsewhere(&self, node: &str, snap: u32, glock: GlockId) -> BTreeSet<i64> {
        self.flock_waits
            .get(&(node, snap))
            .into_iter()
            .flatten()
            .filter(|(g, _)| *g != glock)
            .map(|(_, pid)| *pid)
            .collect()
    }

    /// Finds who waits for each flock glock that `holds` show waited for behind a holder on
    /// the same node (a GL_NOPID waiter with no waiting DLM request of its node: none is
    /// sent while the node holds the glock). Of the processes with the glock's file open,
    /// it is the one that is not its named holder, waits for no other lock (a DLM request,
    /// or another such wait already found), and, when the process table says, sleeps in a
    /// lock wait; found only when exactly one is left, in passes until nothing changes.
    /// Where several are left at the end, each is a candidate ([`Resolver::candidates`]).
    pub fn with_holds(mut self, holds: &[Hold]) -> Self {
        let mut open: BTreeSet<(&str, u32, GlockId)> = holds
            .iter()
            .filter(|h| h.role == Role::Waiter && h.glock.gltype == 6)
            .filter(|h| !glockparse::record::names_a_process(h.pid, &h.comm))
            .map(|h| (h.at.node.as_str(), h.at.snapshot, h.glock))
            .filter(|(node, snap, glock)| {
                !self
                    .dlm_locks(node, *snap, *glock)
                    .iter()
                    .any(|d| d.status.is_waiting())
            })
            .collect();
        let mut found: HashMap<(String, u32, GlockId), (i64, String)> = HashMap::new();
        loop {
            let mut more = Vec::new();
            for &(node, snap, glock) in &open {
                let holder = self.named_holder(node, snap, glock).map(|h| h.0);
                let mut elsewhere = self.waiting_elsewhere(node, snap, glock);
                elsewhere.extend(
                    found
                        .iter()
                        .filter(|((n, s, g), _)| n == node && *s == snap && *g != glock)
                        .map(|(_, (pid, _))| *pid),
                );
                let table = self.table(node, snap);
                let left: Vec<(i64, String)> = self
                    .openers(node, snap, glock)
                    .into_iter()
                    .filter(|(pid, _)| {
                        Some(*pid) != holder
                            && !elsewhere.contains(pid)
                            && table.is_none_or(|t| {
                                t.get(*pid).is_some_and(procs::Task::waits_for_a_lock)
                            })
                    })
                    .collect();
                let key = (node.to_string(), snap, glock);
                match <[_; 1]>::try_from(left) {
                    Ok([one]) => more.push(((node, snap, glock), one)),
                    Err(several) if several.len() > 1 => {
                        self.candidates.insert(key, several);
                    }
                    Err(_) => {}
                }
            }
            if more.is_empty() {
                break;
            }
            for (key, who) in more {
                open.remove(&key);
                let key = (key.0.to_string(), key.1, key.2);
                self.candidates.remove(&key);
                found.insert(key, who);
            }
        }
        self.local_waiters = found;
        self
    }

    /// The processes that may be the waiter `h` when no source names it: where several
    /// processes with an flock glock's file open could wait for it behind a holder on
    /// their node (no process table, say), each of them, as a party whose `source` is
    /// `glockfd?`. Empty where one is named or none could be.
    pub fn candidates(&self, h: &Hold) -> Vec<Party> {
        let key = (h.at.node.clone(), h.at.snapshot, h.glock);
        let Some(pids) = self.candidates.get(&key) else {
            return Vec::new();
        };
        pids.iter()
            .map(|(pid, cite)| Party {
                node: h.at.node.clone(),
                pid: Some(*pid),
                comm: None,
                caller: Some(h.caller.to_string()).filter(|c| !c.is_empty()),
                source: "glockfd?",
                cites: vec![self.cite_hold(h), cite.clone()],
                queued_as: None,
            })
            .collect()
    }

    /// The process found waiting for `glock` behind a holder on its own node.
    fn local_waiter(&self, node: &str, snap: u32, glock: GlockId) -> Option<(i64, String)> {
        self.local_waiters
            .get(&(node.to_string(), snap, glock))
            .cloned()
    }

    /// Who keeps an flock glock held when no live process is named for it: the processes
    /// with its file open that do not wait for it (they share the open file its holder
    /// locked); of several, the one none of the others descends from, else the lowest pid.
    fn keeper(&self, node: &str, snap: u32, glock: GlockId) -> Option<(i64, String)> {
        let waiters: BTreeSet<i64> = self
            .dlm_locks(node, snap, glock)
            .iter()
            .filter(|d| d.status.is_waiting())
            .filter_map(|d| i64::try_from(d.pid).ok())
            .chain(self.local_waiter(node, snap, glock).map(|w| w.0))
            .collect();
        let left: BTreeMap<i64, String> = self
            .openers(node, snap, glock)
            .into_iter()
            .filter(|(pid, _)| !waiters.contains(pid))
            .filter(|(pid, _)| self.table(node, snap).is_none_or(|t| t.get(*pid).is_some()))
            .collect();
        let eldest = self.table(node, snap).and_then(|t| {
            left.iter()
                .find(|(pid, _)| !t.ancestors(**pid).iter().any(|a| left.contains_key(a)))
        });
        eldest
            .or_else(|| left.iter().next())
            .map(|(pid, cite)| (*pid, cite.clone()))
    }

    /// The process that holds an flock glock's flock through an open file at `snap`, by the
    /// node's fdinfo (`fdlocks.N`, [`bundle::fdlocks::flock_holder`]), with the line that
    /// says so. Unlike `/proc/locks` and the DLM, which keep naming the process that took
    /// the lock after it ends, fdinfo names only processes alive when it was read.
    fn fd_holder(&self, node: &str, snap: u32, glock: GlockId) -> Option<(i64, String)> {
        let held = self.fdlocks.get(node)?.get(&snap)?;
        let table = self.table(node, snap);
        let ancestors = |pid| table.map_or_else(Vec::new, |t| t.ancestors(pid));
        let l = bundle::fdlocks::flock_holder(held, glock.number, ancestors)?;
        Some((l.pid, self.cite(node, snap, FileKind::FdLocks, l.lock.line)))
    }

    /// Whether the process a holder line names has ended by `snap`: the glocks file says
    /// `(ended)` (before 6.1), or the snapshot's process table does not show it.
    fn has_ended(&self, h: &Hold) -> bool {
        glockparse::record::has_ended(&h.comm)
            || self
                .table(&h.at.node, h.at.snapshot)
                .is_some_and(|t| t.get(h.pid).is_none())
    }

    /// The flock holder `/proc/locks` names for an flock glock on a node.
    fn flock_owner(&self, node: &str, snap: u32, glock: &GlockId) -> Option<(i64, String)> {
        let locks = self.locks.get(node)?.get(&snap)?;
        let devs = self.gfs2_devices.get(node);
        let mut owners = locks.iter().filter(|l| {
            l.kind == "FLOCK"
                && !l.blocked
                && l.ino == glock.number
                && devs.is_none_or(|d| d.is_empty() || d.contains(&l.dev))
        });
        let first = owners.next()?;
        // Shared flocks by several processes: no one owner.
        if owners.any(|l| l.pid != first.pid) {
            return None;
        }
        Some((
            first.pid,
            self.cite(node, snap, FileKind::Locks, first.line),
        ))
    }

    /// Names `pid` as the process of party `p`, with the lines that say so and its command
    /// from the process table.
    fn name(&self, p: &mut Party, snap: u32, pid: i64, cites: Vec<String>) {
        p.pid = Some(pid);
        p.cites.extend(cites);
        if let Some((task, cite)) = self.task(&p.node, snap, pid) {
            p.comm = Some(plain(task.comm.as_bytes()).into_owned());
            if !p.cites.contains(&cite) {
                p.cites.push(cite);
            }
        }
    }

    /// Who a holder line of a glocks snapshot is. Its first cite is that line itself
    /// ([`Resolver::cite_hold`]), the lines that name the process follow.
    pub fn party(&self, h: &Hold) -> Party {
        let mut p = Party {
            node: h.at.node.clone(),
            pid: None,
            comm: None,
            caller: Some(h.caller.to_string()).filter(|c| !c.is_empty()),
            source: "none",
            cites: vec![self.cite_hold(h)],
            queued_as: None,
        };
        if glockparse::record::names_a_process(h.pid, &h.comm) {
            p.pid = Some(h.pid);
            p.comm = Some(h.comm.to_string());
            p.source = "glocks";
            // The flock's taker has ended (before 6.1 the holder keeps its pid): the lock
            // is held by whoever inherited the open file.
            let ended_flock = h.role == Role::Holder && h.glock.gltype == 6 && self.has_ended(h);
            if let Some((pid, cite)) = ended_flock
                .then(|| self.fd_holder(&h.at.node, h.at.snapshot, h.glock))
                .flatten()
            {
                p.comm = None;
                p.source = "fdinfo";
                self.name(&mut p, h.at.snapshot, pid, vec![cite]);
            } else if glockparse::record::has_ended(&h.comm) {
                p.queued_as = self.queued_as(&p.node, h.pid);
            }
            return p;
        }
        let id = h.glock;
        if id.gltype != 6 {
            p.source = "node";
            return p;
        }
        let (node, snap) = (h.at.node.as_str(), h.at.snapshot);
        if h.role == Role::Holder {
            if let Some((pid, source, cites)) = self.named_holder(node, snap, id) {
                p.source = source;
                self.name(&mut p, snap, pid, cites);
            } else if let Some((pid, cite)) = self.keeper(node, snap, id) {
                p.source = "glockfd";
                self.name(&mut p, snap, pid, vec![cite]);
            }
            return p;
        }
        let want_waiting = h.role == Role::Waiter;
        let lock = self
            .dlm_locks(node, snap, id)
            .iter()
            .find(|d| (d.status != LockStatus::Granted) == want_waiting);
        let named = lock
            .and_then(|d| self.dlm_pid(d, node))
            .filter(|(pid, ..)| self.is_live_opener(node, snap, id, *pid));
        if let Some((pid, _, cites)) = named {
            p.source = "dlm";
            self.name(&mut p, snap, pid, cites);
        } else if let Some((pid, cite)) = want_waiting
            .then(|| self.local_waiter(node, snap, id))
            .flatten()
        {
            p.source = "glockfd";
            self.name(&mut p, snap, pid, vec![cite]);
        }
        p
    }
}

/// The command of each pid that queued a holder, as the last `gfs2_glock_queue … queue`
/// line of that pid names it (the trace line's prefix, `mount-426`): the one source that
/// still names a process that has ended, such as the mount whose holds the filesystem
/// keeps while it is mounted.
#[derive(Default)]
pub struct Queuers {
    comms: HashMap<i64, Box<[u8]>>,
    /// The pid and command last seen, which most lines repeat.
    last: Option<(i64, [u8; 16], u8)>,
}

impl Queuers {
    /// `pid` queued a holder under the command `comm`.
    pub fn saw(&mut self, pid: i64, comm: &[u8]) {
        // `<...>`: the tracer had no command cached for the pid.
        if comm == b"<...>" {
            return;
        }
        if let Some((p, c, n)) = &self.last {
            if *p == pid && c[..usize::from(*n)] == *comm {
                return;
            }
        }
        self.comms.insert(pid, comm.into());
        let mut c = [0u8; 16];
        let n = comm.len().min(16);
        c[..n].copy_from_slice(&comm[..n]);
        // A command longer than the kernel's 16 bytes is never taken for the last one.
        self.last = (comm.len() <= 16).then_some((pid, c, n as u8));
    }

    /// Adds what `later` saw, which read after these lines.
    pub fn merge(&mut self, later: Queuers) {
        self.comms.extend(later.comms);
        self.last = None;
    }

    /// The command `pid` last queued a holder under, quoted for a terminal.
    pub fn comm(&self, pid: i64) -> Option<String> {
        let c = self.comms.get(&pid)?;
        Some(glockparse::quote::plain(c).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::Queuers;

    #[test]
    fn a_queuer_is_named_by_its_last_known_command() {
        let mut q = Queuers::default();
        q.saw(426, b"mount");
        q.saw(426, b"mount");
        // The same pid after an exec, then a line whose command the tracer had not cached.
        q.saw(500, b"sh");
        q.saw(500, b"flock");
        q.saw(500, b"<...>");
        q.saw(7, b"ev\x1b[2Jil");
        assert_eq!(q.comm(426).as_deref(), Some("mount"));
        assert_eq!(q.comm(500).as_deref(), Some("flock"));
        assert_eq!(q.comm(7).as_deref(), Some("ev\\x1b[2Jil"));
        assert_eq!(q.comm(8), None);
        // A later file's lines win over an earlier one's.
        let mut later = Queuers::default();
        later.saw(426, b"umount");
        q.merge(later);
        assert_eq!(q.comm(426).as_deref(), Some("umount"));
        q.saw(426, b"mount");
        assert_eq!(q.comm(426).as_deref(), Some("mount"));
    }
}
