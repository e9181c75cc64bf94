//! Who a holder or a waiter really is, each from the source that knows it, with the source
//! cited:
//! * a glocks holder line that names a process (`p:866 [flock]`) is that process;
//! * a GL_NOPID holder (`p:0 [(none)]` on 6.1+, `p:-1` before) of an flock glock (type 6)
//!   belongs to the process `/proc/locks` shows holding the flock on that inode, else to
//!   the pid of the node's DLM lock on the glock (the DLM records the process that made
//!   the request; kernel threads are not taken), else to no known process;
//! * other GL_NOPID holders (iopen glocks held by cached inodes, the journal) belong to the
//!   node, not to a process: the DLM lock's pid there is whichever process last asked.

use std::collections::HashMap;
use std::path::Path;

use bundle::procs::{self, FileLock, Table};
use bundle::{Captures, FileKind, Snapshot};
use glockparse::{Diagnostics, GlockId};

use crate::GlockMap;

use crate::snapshots::{Dlm, Hold, Role};
use glockparse::dlm_locks::LockStatus;

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
    /// Where the pid comes from: `glocks`, `locks` (`/proc/locks`), `dlm`, or `none`.
    pub source: &'static str,
    /// The lines that say so (`NODE/FILE:LINE`).
    pub cites: Vec<String>,
}

/// A process in words: `pid 866 [flock]`, or `pid 866` when its comm is not known.
pub fn process(pid: i64, comm: Option<&str>) -> String {
    match comm {
        Some(c) => format!("pid {pid} [{c}]"),
        None => format!("pid {pid}"),
    }
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Process tables, `/proc/locks` and DLM locks of every node and snapshot, to resolve
/// holders and waiters to processes.
pub struct Resolver<'a> {
    /// By node, then snapshot.
    files: HashMap<&'a str, HashMap<u32, &'a Snapshot>>,
    tables: HashMap<&'a str, HashMap<u32, Table>>,
    locks: HashMap<&'a str, HashMap<u32, Vec<FileLock>>>,
    /// glockfd: which process has which glock's file open.
    fds: HashMap<&'a str, HashMap<u32, Vec<glockparse::glockfd::GlockFd>>>,
    gfs2_devices: HashMap<&'a str, Vec<(u32, u32)>>,
    /// snapshot → glock → owner node → the DLM locks seen for it, in any node's dump.
    dlm: HashMap<u32, GlockMap<HashMap<&'a str, Vec<&'a Dlm>>>>,
    node_by_id: &'a HashMap<u64, String>,
    /// Problems reading the process tables and lock lists.
    pub diagnostics: Diagnostics,
}

impl<'a> Resolver<'a> {
    /// Reads the process tables, `/proc/locks` copies and mount tables of `caps`, and
    /// indexes `dlm` by snapshot, glock and owner node (named through `node_by_id`).
    pub fn new(caps: &'a Captures, dlm: &'a [Dlm], node_by_id: &'a HashMap<u64, String>) -> Self {
        let mut r = Resolver {
            files: HashMap::new(),
            tables: HashMap::new(),
            locks: HashMap::new(),
            fds: HashMap::new(),
            gfs2_devices: HashMap::new(),
            dlm: HashMap::new(),
            node_by_id,
            diagnostics: Diagnostics::default(),
        };
        for n in &caps.nodes {
            if let Some(mi) = n
                .mountinfo
                .as_ref()
                .and_then(|p| std::fs::read_to_string(p).ok())
            {
                r.gfs2_devices.insert(&n.node, procs::gfs2_devices(&mi));
            }
            for s in &n.snapshots {
                r.files.entry(&n.node).or_default().insert(s.index, s);
                let open =
                    |p: &Path| glockparse::input::open(p).map(|f| (f, p.display().to_string()));
                if let Some(Ok((f, src))) = s.procs.as_deref().map(open) {
                    let (tasks, d) = procs::read(f, &src);
                    r.diagnostics.merge(&d);
                    r.tables
                        .entry(&n.node)
                        .or_default()
                        .insert(s.index, Table::new(tasks));
                }
                if let Some(Ok((f, src))) = s.locks.as_deref().map(open) {
                    let (locks, d) = procs::read_locks(f, &src);
                    r.diagnostics.merge(&d);
                    r.locks.entry(&n.node).or_default().insert(s.index, locks);
                }
                if let Some(Ok((f, src))) = s.glockfd.as_deref().map(open) {
                    let (fds, d) = glockparse::glockfd::read_all(f, &src);
                    r.diagnostics.merge(&d);
                    r.fds.entry(&n.node).or_default().insert(s.index, fds);
                }
            }
        }
        for d in dlm {
            if let (Some(owner), Some(glock)) = (r.owner_node(d), d.glock) {
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

    /// Whether process `pid` has `glock`'s file open on `node` at snapshot `snap`, by
    /// glockfd, with the line that says so.
    pub fn has_open(&self, node: &str, snap: u32, glock: GlockId, pid: i64) -> Option<String> {
        let fds = self.fds.get(node)?.get(&snap)?;
        let i = fds
            .iter()
            .position(|f| f.glock == glock && i64::from(f.pid) == pid)?;
        Some(self.cite(node, snap, FileKind::Glockfd, i as u64 + 1))
    }

    /// The node that owns a DLM lock, by name.
    pub fn owner_node(&self, d: &Dlm) -> Option<&'a str> {
        let id = d.owner_nodeid?;
        self.node_by_id.get(&id).map(String::as_str)
    }

    fn snapshot(&self, node: &str, snap: u32) -> Option<&'a Snapshot> {
        self.files.get(node).and_then(|m| m.get(&snap)).copied()
    }

    /// Whether `node` has a glocks file for snapshot `snap`.
    pub fn has_glocks(&self, node: &str, snap: u32) -> bool {
        self.snapshot(node, snap)
            .is_some_and(|s| s.glocks.is_some())
    }

    /// The process table of a node at a snapshot (empty when not captured).
    pub fn table(&self, node: &str, snap: u32) -> Option<&Table> {
        self.tables
            .get(node)
            .and_then(|m| m.get(&snap))
            .filter(|t| !t.is_empty())
    }

    /// `NODE/FILE:LINE` for a line of a snapshot's file of `kind`; `KIND.N` when the file's
    /// name is not known.
    fn cite(&self, node: &str, snap: u32, kind: FileKind, line: u64) -> String {
        let path = self.snapshot(node, snap).and_then(|s| s.path(kind));
        let file = path.map_or_else(|| kind.file_name(snap), file_name);
        format!("{node}/{file}:{line}")
    }

    /// `NODE/glocks.N:LINE` of a holder line.
    pub fn cite_hold(&self, h: &Hold) -> String {
        self.cite(&h.at.node, h.at.snapshot, FileKind::Glocks, h.line)
    }

    /// `NODE/dlm_locks.N:LINE` of a DLM lock (the node whose dump it is).
    pub fn cite_dlm(&self, d: &Dlm) -> String {
        self.cite(&d.at.node, d.at.snapshot, FileKind::DlmLocks, d.line)
    }

    /// A task of a node's process table at a snapshot, with the line that shows it.
    fn task(&self, node: &str, snap: u32, pid: i64) -> Option<(&procs::Task, String)> {
        let t = self.table(node, snap)?.get(pid)?;
        Some((t, self.cite(node, snap, FileKind::Procs, t.line)))
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
            comm = Some(task.comm.clone());
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
        })
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

    /// Who a holder line of a glocks snapshot is.
    pub fn party(&self, h: &Hold) -> Party {
        let mut p = Party {
            node: h.at.node.clone(),
            pid: None,
            comm: None,
            caller: Some(h.caller.to_string()).filter(|c| !c.is_empty()),
            source: "none",
            cites: vec![self.cite_hold(h)],
        };
        if glockparse::record::names_a_process(h.pid, &h.comm) {
            p.pid = Some(h.pid);
            p.comm = Some(h.comm.to_string());
            p.source = "glocks";
            return p;
        }
        let id = h.glock;
        if id.gltype != 6 {
            return p;
        }
        if h.role == Role::Holder {
            if let Some((pid, cite)) = self.flock_owner(&h.at.node, h.at.snapshot, &id) {
                p.pid = Some(pid);
                p.source = "locks";
                p.cites.push(cite);
                if let Some((task, cite)) = self.task(&h.at.node, h.at.snapshot, pid) {
                    p.comm = Some(task.comm.clone());
                    p.cites.push(cite);
                }
                return p;
            }
        }
        let want_waiting = h.role == Role::Waiter;
        let locks = self
            .dlm
            .get(&h.at.snapshot)
            .and_then(|m| m.get(&h.glock))
            .and_then(|m| m.get(h.at.node.as_str()));
        let lock = locks.and_then(|v| {
            v.iter()
                .find(|d| (d.status != LockStatus::Granted) == want_waiting)
        });
        if let Some((pid, comm, cites)) = lock.and_then(|d| self.dlm_pid(d, &h.at.node)) {
            p.pid = Some(pid);
            p.comm = comm;
            p.source = "dlm";
            p.cites.extend(cites);
        }
        p
    }
}
