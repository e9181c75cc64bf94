//! What a glocks file alone does not say, read at each refresh from the files beside it:
//! the DLM lock dump (how long each lock has been in its queue, which node masters it,
//! and, on the master, the other nodes' locks), `glstats` (DLM round trips and request
//! counts, turned into rates between refreshes), `glockfd` (which process has which
//! glock's file open) and the cluster's POSIX (fcntl) locks as dlm_controld keeps them
//! (`dlm_tool plocks`, which GFS2 hands them to, outside the glocks file).
//!
//! Beside a live `<debugfs>/gfs2/CLUSTER:FS/glocks` they are `glstats`, `glockfd` and
//! `<debugfs>/dlm/FS_locks`, and `dlm_tool plocks FS` run at each refresh (2 s at most);
//! beside a saved `glocks.N` of a capture, `glstats.N`, `glockfd.N`, `dlm_locks.N` and
//! `plocks.N`. Each is optional: what is missing is simply not shown,
//! and a damaged one is reported, never fatal.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use gfs2stats::glstats::{self, GlStat};
use gfs2stats::metrics::Increase;
use glockparse::dlm_locks::{self, LockStatus, OwnedLock};
use glockparse::plocks::{self, Plock};
use glockparse::quote::plain;
use glockparse::{Diagnostics, DlmMode, GlockFd, GlockId};

use bundle::fdlocks::FdLock;
use bundle::{FileKind, Snapshot};

use super::Input;

/// Where a glocks input's POSIX locks come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlockSource<'a> {
    /// A saved `dlm_tool plocks` output (`plocks.N`).
    Saved(&'a Path),
    /// `dlm_tool plocks LOCKSPACE`, run at each refresh.
    Live(&'a str),
}

/// The kinds of saved file a glocks input's [`Sources`] take.
const COMPANIONS: [FileKind; 6] = [
    FileKind::Glstats,
    FileKind::Glockfd,
    FileKind::DlmLocks,
    FileKind::Plocks,
    FileKind::Procs,
    FileKind::FdLocks,
];

/// The files beside one glocks input.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sources {
    /// The files by kind, of the kinds in `COMPANIONS`, as a capture's snapshot holds
    /// them: `KIND.N` beside a saved `glocks.N`; live, the filesystem's `glstats` and
    /// `glockfd` and its lockspace's DLM dump `<debugfs>/dlm/FS_locks`. A node's tasks
    /// (`procs.N`) are saved only: the commands of processes that the glocks file does
    /// not name (a GL_NOPID flock holder's).
    pub files: Snapshot,
    /// Live: the lockspace whose POSIX locks `dlm_tool plocks` lists at each refresh.
    pub plocks_lockspace: Option<String>,
    /// Live: the filesystem's device, whose locks fdinfo is read for at a refresh where
    /// `/proc/locks` names a process that has ended ([`bundle::fdlocks::orphaned`]).
    pub fdlocks_device: Option<(u32, u32)>,
    /// This node's DLM node id: configfs when live, the capture's `nodeid` (or
    /// `dlm_controld.log`) when saved.
    pub nodeid: Option<u64>,
    /// The lock table (`CLUSTER:FS`) of the filesystem the file belongs to, so that a
    /// glock is looked up on other nodes only in the same one ([`bundle::lock_table`]):
    /// None where the files do not say, which is taken to be any input's filesystem.
    pub fs: Option<String>,
    /// When a saved snapshot was taken (its `time.N`, seconds since the epoch), so that a
    /// node given twice (two captures a minute apart) is looked up in the snapshot nearest
    /// in time; None when live or not recorded.
    pub taken: Option<f64>,
}

impl Sources {
    /// Finds the companions of `input` (only files that exist).
    pub fn find(input: &Input) -> Sources {
        let path = &input.path;
        let Some(dir) = path.parent() else {
            return Sources::default();
        };
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == "glocks" && input.live {
            let fs = bundle::live::Filesystem::of_dir(dir.to_path_buf());
            let mut files = Snapshot::default();
            for kind in [FileKind::Glstats, FileKind::Glockfd] {
                files.set_if_file(kind, dir.join(kind.name()));
            }
            if let Some(debugfs) = dir.parent().and_then(Path::parent) {
                files.set_if_file(FileKind::DlmLocks, fs.dlm_locks(debugfs));
            }
            return Sources {
                files,
                plocks_lockspace: Some(fs.lockspace.clone()),
                fdlocks_device: fs.device(),
                nodeid: bundle::local_nodeid().and_then(|s| s.parse().ok()),
                fs: Some(fs.table),
                taken: None,
            };
        }
        // A saved glocks.N: its snapshot's files, as the capture's node directory holds them.
        let Some((FileKind::Glocks, index)) = FileKind::parse(name) else {
            return Sources::default();
        };
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let Ok(node) = bundle::node_dir(dir) else {
            return Sources::default();
        };
        match node.snapshots.iter().find(|s| s.index == index) {
            Some(s) => Sources::saved(s, &node),
            None => Sources::default(),
        }
    }

    /// The companions of a saved snapshot's glocks file: its other files, when it was
    /// taken, and the node and filesystem of the capture it is part of (`node`).
    pub fn saved(snapshot: &Snapshot, node: &bundle::NodeCapture) -> Sources {
        let mut files = Snapshot::new(snapshot.index);
        for kind in COMPANIONS {
            if let Some(p) = snapshot.path(kind) {
                files.set(kind, p.to_path_buf());
            }
        }
        Sources {
            files,
            plocks_lockspace: None,
            fdlocks_device: None,
            nodeid: node.nodeid,
            fs: node.fs.clone(),
            taken: snapshot.time_unix,
        }
    }

    /// The companion of `kind`, when there is one.
    pub fn file(&self, kind: FileKind) -> Option<&Path> {
        self.files.path(kind)
    }

    /// Where the POSIX locks come from: the saved `plocks.N`, else live `dlm_tool plocks`.
    pub fn plocks(&self) -> Option<PlockSource<'_>> {
        self.file(FileKind::Plocks)
            .map(PlockSource::Saved)
            .or(self.plocks_lockspace.as_deref().map(PlockSource::Live))
    }
}

/// DLM requests and holder queueing per second between two refreshes (glstats deltas).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Rates {
    /// DLM requests per second.
    pub dlm_per_s: f64,
    /// Holders queued per second.
    pub queued_per_s: f64,
}

/// One glocks input's companions, as read at one refresh.
#[derive(Debug, Default)]
pub struct NodeView {
    /// The files read.
    pub sources: Sources,
    /// Sorted by glock.
    locks: Vec<OwnedLock>,
    stats: ByGlock<GlStat>,
    rates: ByGlock<Rates>,
    /// Sorted by glock.
    fds: Vec<GlockFd>,
    /// The cluster's POSIX locks, as this node's dlm_controld keeps them.
    plocks: Vec<Plock>,
    /// The node's processes' commands, by pid (from `procs.N`).
    comms: HashMap<i64, String>,
    /// The locks the node's processes hold through their open files (fdinfo).
    fdlocks: Vec<FdLock>,
    /// When the glstats were read (for the rates of the next refresh).
    stats_at: Option<Instant>,
    /// How long reading the companions took.
    pub read_time: Duration,
    /// Problems reading the companions, one line each (file and line named).
    pub problems: Vec<String>,
}

/// Whether two inputs are of one filesystem: their lock tables agree, or one of them does
/// not say (a capture older than glk's `table` file is taken to be of the filesystem of
/// the inputs beside it).
fn same_fs(a: &NodeView, b: &NodeView) -> bool {
    match (&a.sources.fs, &b.sources.fs) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    }
}

fn named_problems(path: &Path, d: &Diagnostics, out: &mut Vec<String>) {
    if d.errors > 0 {
        let first = d
            .first_errors
            .first()
            .map(|e| e.to_string())
            .unwrap_or_default();
        out.push(format!(
            "{}: {} unparsed line(s); first: {first}",
            path.display(),
            d.errors
        ));
    }
}

/// What a companion reader gives: its records and problems, or why it could not read.
type Loaded<T> = Result<(T, Vec<String>), String>;

/// The records of a companion that was read, its problems (or why it could not be read)
/// added to `problems`.
fn loaded<T>(r: Option<Loaded<T>>, problems: &mut Vec<String>) -> Option<T> {
    match r? {
        Ok((v, p)) => {
            problems.extend(p);
            Some(v)
        }
        Err(e) => {
            problems.push(e);
            None
        }
    }
}

/// Reads a companion file with its line reader: the records, and its unparsed lines as
/// one problem naming the file.
fn read_companion<T>(
    path: &Path,
    read: impl FnOnce(Box<dyn std::io::Read + Send>, &str) -> (T, Diagnostics),
) -> Loaded<T> {
    loaded_from(path, glockparse::input::read_path(path, read))
}

/// What a reader of `path` gave: its records, and its unparsed lines as one problem
/// naming the file; or why it could not read.
fn loaded_from<T>(path: &Path, read: std::io::Result<(T, Diagnostics)>) -> Loaded<T> {
    let (records, d) = read.map_err(|e| format!("{}: {e}", path.display()))?;
    let mut problems = Vec::new();
    named_problems(path, &d, &mut problems);
    Ok((records, problems))
}

/// Reads a DLM lock dump: the locks of glocks, sorted by glock.
fn load_locks(path: &Path, me: Option<u64>) -> Loaded<Vec<OwnedLock>> {
    let (locks, problems) = read_companion(path, dlm_locks::read)?;
    // Only the locks of glocks: their resource names one.
    let mut locks: Vec<OwnedLock> = locks
        .into_iter()
        .filter(|l| l.glock.is_some())
        .map(|l| OwnedLock::new(l, me))
        .collect();
    locks.sort_by_key(|l| l.glock);
    Ok((locks, problems))
}

/// glstats by glock, the rates since `prev`'s, and when they were read.
/// Per-glock values, looked up for every held glock of every refresh.
type ByGlock<T> = HashMap<GlockId, T, foldhash::fast::RandomState>;

type Stats = (ByGlock<GlStat>, ByGlock<Rates>, Instant);

/// Reads glstats, with rates against the previous refresh's counts.
fn load_stats(path: &Path, prev: Option<&NodeView>) -> Loaded<Stats> {
    let (stats, problems) = read_companion(path, glstats::read)?;
    let now = Instant::now();
    let elapsed = prev
        .and_then(|p| p.stats_at)
        .map(|t| now.duration_since(t).as_secs_f64())
        .filter(|s| *s > 0.0);
    let stats: ByGlock<GlStat> = stats.into_iter().map(|s| (s.glock, s)).collect();
    let mut rates = ByGlock::default();
    if let (Some(prev), Some(secs)) = (prev, elapsed) {
        for (id, s) in &stats {
            let grew = Increase::between(prev.stats.get(id), s);
            let r = Rates {
                dlm_per_s: grew.dcount.max(0) as f64 / secs,
                queued_per_s: grew.qcount.max(0) as f64 / secs,
            };
            if r != Rates::default() {
                rates.insert(*id, r);
            }
        }
    }
    Ok(((stats, rates, now), problems))
}

/// The POSIX locks: a saved `plocks.N`, or `dlm_tool plocks` run now (2 s at most; none
/// where dlm_tool is not installed).
fn load_plocks(source: PlockSource) -> Loaded<Vec<Plock>> {
    match source {
        PlockSource::Saved(path) => read_companion(path, plocks::read_all),
        PlockSource::Live(lockspace) => {
            let cmd = ["dlm_tool", "plocks", lockspace];
            match bundle::live::run_tool(&cmd, Duration::from_secs(2)) {
                Ok(None) => Ok((Vec::new(), Vec::new())),
                Ok(Some(text)) => {
                    let src = format!("`{}`", cmd.join(" "));
                    let (locks, d) = plocks::read_all(text.as_bytes(), &src);
                    let mut problems = Vec::new();
                    named_problems(Path::new(&src), &d, &mut problems);
                    Ok((locks, problems))
                }
                Err(e) => Err(e.to_string()),
            }
        }
    }
}

/// Reads a task list (a file, or a copy of `/proc`): each process's command (its main
/// thread's).
fn load_comms(path: &Path) -> Loaded<HashMap<i64, String>> {
    let (tasks, problems) = loaded_from(path, bundle::procs::read_path(path))?;
    let comms = tasks
        .into_iter()
        .filter(|t| t.tid == t.tgid)
        .map(|t| (t.tgid, plain(t.comm.as_bytes()).into_owned()))
        .collect();
    Ok((comms, problems))
}

/// Reads who holds which lock through which open file: a saved `fdlocks.N`, or live, the
/// node's fdinfo where `/proc/locks` names a process that has ended (nothing else needs it:
/// the glocks file, the DLM and glockfd name every live taker).
fn load_fdlocks(sources: &Sources) -> Option<Loaded<Vec<FdLock>>> {
    if let Some(path) = sources.file(FileKind::FdLocks) {
        return Some(loaded_from(
            path,
            glockparse::input::read_path(path, bundle::fdlocks::read),
        ));
    }
    let devs = [sources.fdlocks_device?];
    if !bundle::fdlocks::orphaned(&devs) {
        return None;
    }
    let mut text = Vec::new();
    if let Err(e) = bundle::fdlocks::write_this_node(&mut text, &devs) {
        return Some(Err(format!("fdinfo: {e}")));
    }
    let (locks, d) = bundle::fdlocks::read(&text[..], "fdinfo");
    let mut problems = Vec::new();
    named_problems(Path::new("fdinfo"), &d, &mut problems);
    Some(Ok((locks, problems)))
}

/// Reads glockfd, sorted by glock: a live one in one read ([`glockparse::glockfd::read_path`]),
/// a saved one (compressed or not) as every companion.
fn load_fds(path: &Path) -> Loaded<Vec<GlockFd>> {
    let live = std::fs::metadata(path).is_ok_and(|m| m.len() == 0);
    let (mut fds, problems) = if live {
        let c =
            glockparse::glockfd::read_path(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let (fds, d) = glockparse::glockfd::read_all(&c.bytes[..], &path.display().to_string());
        let mut problems: Vec<String> = c
            .cut_short
            .map(|note| format!("{}: {note}", path.display()))
            .into_iter()
            .collect();
        named_problems(path, &d, &mut problems);
        (fds, problems)
    } else {
        read_companion(path, glockparse::glockfd::read_all)?
    };
    fds.sort_by_key(|f| (f.glock, f.pid, f.fd));
    Ok((fds, problems))
}

impl NodeView {
    /// Reads the companions in `sources`; `prev` (the same input's previous refresh)
    /// turns glstats counts into rates.
    pub fn load(sources: Sources, prev: Option<&NodeView>) -> NodeView {
        let start = Instant::now();
        // The three files are independent: read them side by side (on a big node each
        // holds a line per glock, and parsing them one after the other cost the sum).
        let file = |kind| sources.file(kind);
        let (dlm, stats, fds, plocks, comms, fdlocks) = std::thread::scope(|s| {
            let dlm = s.spawn(|| file(FileKind::DlmLocks).map(|p| load_locks(p, sources.nodeid)));
            let stats = s.spawn(|| file(FileKind::Glstats).map(|p| load_stats(p, prev)));
            let plocks = s.spawn(|| sources.plocks().map(load_plocks));
            let fds = file(FileKind::Glockfd).map(load_fds);
            let comms = file(FileKind::Procs).map(load_comms);
            let fdlocks = load_fdlocks(&sources);
            (
                dlm.join().expect("the DLM dump reader does not panic"),
                stats.join().expect("the glstats reader does not panic"),
                fds,
                plocks.join().expect("the plocks reader does not panic"),
                comms,
                fdlocks,
            )
        });
        let mut v = NodeView {
            sources,
            ..NodeView::default()
        };
        if let Some(locks) = loaded(dlm, &mut v.problems) {
            v.locks = locks;
        }
        if let Some((stats, rates, at)) = loaded(stats, &mut v.problems) {
            (v.stats, v.rates, v.stats_at) = (stats, rates, Some(at));
        }
        if let Some(fds) = loaded(fds, &mut v.problems) {
            v.fds = fds;
        }
        if let Some(plocks) = loaded(plocks, &mut v.problems) {
            v.plocks = plocks;
        }
        if let Some(comms) = loaded(comms, &mut v.problems) {
            v.comms = comms;
        }
        if let Some(fdlocks) = loaded(fdlocks, &mut v.problems) {
            v.fdlocks = fdlocks;
        }
        if v.sources.fdlocks_device.is_some() {
            v.name_fd_holders();
        }
        v.read_time = start.elapsed();
        v
    }

    /// Live: the commands of the processes fdinfo names (the glocks file names the others,
    /// and no task list is read live), from `/proc/PID/comm`.
    fn name_fd_holders(&mut self) {
        for l in &self.fdlocks {
            // A process holds its locks through one line per lock: read its comm once.
            if self.comms.contains_key(&l.pid) {
                continue;
            }
            if let Ok(comm) = std::fs::read(format!("/proc/{}/comm", l.pid)) {
                self.comms
                    .insert(l.pid, plain(comm.trim_ascii_end()).into_owned());
            }
        }
    }

    /// The process that holds the flock of flock glock `glock` through an open file, by
    /// fdinfo ([`bundle::fdlocks::flock_holder`]), when it was read.
    pub fn fd_holder(&self, glock: GlockId) -> Option<i64> {
        let no_table = |_| Vec::new();
        bundle::fdlocks::flock_holder(&self.fdlocks, glock.number, no_table).map(|l| l.pid)
    }

    /// The command of process `pid` on this node, when its task list (`procs.N`) says.
    pub fn comm(&self, pid: i64) -> Option<&str> {
        self.comms.get(&pid).map(String::as_str)
    }

    /// The node's DLM node id, when known.
    pub fn nodeid(&self) -> Option<u64> {
        self.sources.nodeid
    }

    /// Every lock this node's dump shows on `glock` (its own, and on the master the
    /// copies of other nodes' locks).
    pub fn locks(&self, glock: GlockId) -> &[OwnedLock] {
        let lo = self.locks.partition_point(|l| l.glock < Some(glock));
        let hi = self.locks.partition_point(|l| l.glock <= Some(glock));
        &self.locks[lo..hi]
    }

    /// Every lock of a glock in the dump, sorted by glock.
    pub fn all_locks(&self) -> &[OwnedLock] {
        &self.locks
    }

    /// Every glstats line read, in no order.
    pub fn all_stats(&self) -> impl Iterator<Item = &GlStat> {
        self.stats.values()
    }

    /// This node's own DLM lock on `glock`.
    pub fn own_lock(&self, glock: GlockId) -> Option<&OwnedLock> {
        self.locks(glock).iter().find(|l| !l.is_master_copy())
    }

    /// The glock's glstats line and its rates since the previous refresh.
    pub fn stat(&self, glock: GlockId) -> Option<(&GlStat, Option<&Rates>)> {
        self.stats.get(&glock).map(|s| (s, self.rates.get(&glock)))
    }

    /// DLM requests per second since the previous refresh (0 when unknown).
    pub fn dlm_rate(&self, glock: GlockId) -> f64 {
        self.rates.get(&glock).map_or(0.0, |r| r.dlm_per_s)
    }

    /// Whether any glock's glstats counts moved since the previous refresh.
    pub fn has_rates(&self) -> bool {
        !self.rates.is_empty()
    }

    /// Whether the DLM lock dump was read.
    pub fn has_dlm(&self) -> bool {
        self.sources.files.has(FileKind::DlmLocks)
    }

    /// Whether process `pid` has a glockfd line for exactly `glock` (for an flock glock:
    /// a file of it on which an flock was taken or asked for).
    pub fn has_open(&self, glock: GlockId, pid: i64) -> bool {
        let lo = self.fds.partition_point(|f| f.glock < glock);
        self.fds[lo..]
            .iter()
            .take_while(|f| f.glock == glock)
            .any(|f| i64::from(f.pid) == pid)
    }

    /// Open files on the glock's inode: glockfd lists iopen (5) and flock (6) glocks,
    /// which share the inode glock's number.
    pub fn open_files(&self, glock: GlockId) -> Vec<GlockFd> {
        let mut out: Vec<GlockFd> = [5u32, 6]
            .iter()
            .flat_map(|t| {
                let id = GlockId::new(*t, glock.number);
                let lo = self.fds.partition_point(|f| f.glock < id);
                let hi = self.fds.partition_point(|f| f.glock <= id);
                self.fds[lo..hi].iter().copied()
            })
            .collect();
        out.sort_by_key(|f| (f.pid, f.fd));
        out.dedup_by_key(|f| (f.pid, f.fd));
        out
    }
}

/// How this node's DLM request for a glock waits (live, in glk top), with the granted
/// locks that block it; a dump's waiting lock row is [`crate::stuck::DlmWait`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestWait {
    /// Microseconds the node's lock has been waiting or converting.
    pub age_us: u64,
    /// The mode requested.
    pub rqmode: DlmMode,
    /// The mode granted so far (IV when none).
    pub grmode: DlmMode,
    /// The process the node's DLM lock carries (the one that last asked the DLM: for a
    /// flock, GL_NOPID in the glocks file, the process that wants the lock).
    pub pid: u64,
    /// The master node (None: this node).
    pub master: Option<u64>,
    /// Locks granted on the master in a mode incompatible with the request: who holds
    /// the glock elsewhere. Empty when the master's dump is not among the inputs.
    pub blockers: Vec<OwnedLock>,
    /// Whether the master's lock dump was available to look for blockers.
    pub master_seen: bool,
}

/// A POSIX lock request that waits, with the held locks that block it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PosixWait {
    /// The waiting (or pending) request.
    pub request: Plock,
    /// The held locks it conflicts with.
    pub blockers: Vec<Plock>,
}

/// The companions of every input, by input index, for one refresh.
#[derive(Debug, Default)]
pub struct Context {
    /// Each input's view, by input index.
    pub nodes: Vec<NodeView>,
}

impl Context {
    /// Reads every input's companions; `prev` is the previous refresh's context.
    pub fn load(sources: &[Sources], prev: Option<&Context>) -> Context {
        Context {
            nodes: sources
                .iter()
                .enumerate()
                .map(|(i, s)| NodeView::load(s.clone(), prev.and_then(|p| p.nodes.get(i))))
                .collect(),
        }
    }

    /// The view of input `i` (an empty one when out of range).
    pub fn node(&self, i: usize) -> &NodeView {
        static EMPTY: std::sync::OnceLock<NodeView> = std::sync::OnceLock::new();
        self.nodes
            .get(i)
            .unwrap_or_else(|| EMPTY.get_or_init(NodeView::default))
    }

    /// The inputs of the other nodes of input `i`'s filesystem, with their node ids
    /// (None when an input does not say its node id): of a node given more than once,
    /// the input taken nearest in time to input `i`.
    pub fn peers(&self, i: usize) -> impl Iterator<Item = (usize, Option<u64>)> + '_ {
        let like = self.node(i);
        self.nodes
            .iter()
            .enumerate()
            .filter(move |(j, n)| {
                *j != i
                    && n.nodeid() != like.nodeid()
                    && n.nodeid()
                        .is_none_or(|id| self.by_nodeid(id, like).is_some_and(|(k, _)| k == *j))
            })
            .map(|(j, n)| (j, n.nodeid()))
    }

    /// The input of node `id` for the same filesystem as `like` (its index and view):
    /// of several, the one taken nearest in time to `like`, else the first.
    fn by_nodeid(&self, id: u64, like: &NodeView) -> Option<(usize, &NodeView)> {
        let apart = |n: &NodeView| match (n.sources.taken, like.sources.taken) {
            (Some(a), Some(b)) => (a - b).abs(),
            _ => f64::INFINITY,
        };
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.nodeid() == Some(id) && same_fs(n, like))
            .min_by(|a, b| apart(a.1).total_cmp(&apart(b.1)))
    }

    /// The view holding the master's copy of the resource of `own`, `node`'s own lock
    /// (`node` itself when it masters it or holds no lock): None when the master is not
    /// among the inputs.
    fn master_view<'a>(
        &'a self,
        node: &'a NodeView,
        own: Option<&OwnedLock>,
    ) -> Option<&'a NodeView> {
        match own.and_then(|l| l.master()) {
            None => Some(node),
            Some(m) => self.by_nodeid(m, node).map(|(_, n)| n),
        }
    }

    /// How input `i`'s DLM request for `glock` waits, when it does (its lock is waiting
    /// or converting), and who holds the glock on other nodes when the master's dump
    /// tells.
    pub fn dlm_wait(&self, i: usize, glock: GlockId) -> Option<RequestWait> {
        let node = self.node(i);
        let own = node.own_lock(glock)?;
        if !own.status.is_waiting() {
            return None;
        }
        let master_view = self.master_view(node, Some(own));
        // A node has one DLM lock per glock, so no lock of its own blocks its request.
        // The master's dump may be of another moment than this node's (another node's
        // files, read a little earlier or later): there this node's lock can show granted
        // already, or still, and is not a blocker.
        let mine = |l: &OwnedLock| l.owner.is_some() && l.owner == node.nodeid();
        let blockers = master_view
            .map(|mv| {
                mv.locks(glock)
                    .iter()
                    .filter(|l| l.status == LockStatus::Granted && l.grmode.blocks(own.requested()))
                    .filter(|l| !mine(l))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        Some(RequestWait {
            age_us: own.age_us,
            rqmode: own.rqmode,
            grmode: own.grmode,
            pid: own.pid,
            master: own.master(),
            blockers,
            master_seen: master_view.is_some_and(NodeView::has_dlm),
        })
    }

    /// The POSIX lock requests that wait, over every input's dump (each node's dlm_controld
    /// keeps the whole cluster's locks: a request is listed once), each with the held
    /// locks that block it ([`Plock::is_blocked_by`]), oldest file first.
    pub fn posix_waits(&self) -> Vec<PosixWait> {
        let key = |l: &Plock| (l.number, l.nodeid, l.pid, l.start, l.end, l.exclusive);
        let mut seen = std::collections::BTreeSet::new();
        let mut out = Vec::new();
        for view in &self.nodes {
            for w in view.plocks.iter().filter(|l| l.is_waiting()) {
                if !seen.insert(key(w)) {
                    continue;
                }
                let blockers = view
                    .plocks
                    .iter()
                    .filter(|h| !h.is_waiting() && w.is_blocked_by(h))
                    .cloned()
                    .collect();
                out.push(PosixWait {
                    request: w.clone(),
                    blockers,
                });
            }
        }
        out.sort_by_key(|p| key(&p.request));
        out
    }

    /// Locks other nodes hold or wait for on `glock`, from its master's dump (or input
    /// `i`'s own when it masters the resource).
    pub fn master_locks(&self, i: usize, glock: GlockId) -> Vec<OwnedLock> {
        let node = self.node(i);
        let view = self.master_view(node, node.own_lock(glock));
        view.map(|v| {
            v.locks(glock)
                .iter()
                .filter(|l| l.owner.is_none() || l.owner != node.nodeid())
                .cloned()
                .collect()
        })
        .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A live glockfd read that fills a page is a problem of the node, the file named. A
    /// FIFO stands in for the debugfs file (size 0, read once).
    #[test]
    fn a_glockfd_that_fills_a_page_is_a_problem() {
        let (_scratch, fifo) = testdata::scratch_file("glockfd");
        testdata::fifo_at(&fifo);
        let lines = testdata::glockfd_lines(4096);
        let (path, text) = (fifo.clone(), lines.clone());
        let writer = std::thread::spawn(move || std::fs::write(path, text).unwrap());
        let (fds, problems) = load_fds(&fifo).unwrap();
        writer.join().unwrap();
        assert_eq!(fds.len(), lines.lines().count());
        let want =
            glockparse::glockfd::cut_short(lines.len()).map(|n| format!("{}: {n}", fifo.display()));
        assert_eq!(problems.first(), want.as_ref(), "{problems:?}");
    }

    fn input(rel: &str) -> Input {
        Input {
            path: testdata::path(rel),
            live: false,
        }
    }

    #[test]
    fn saved_snapshots_find_their_companions() {
        let s = Sources::find(&input("real/dlm2-6.1/n2/glocks.4"));
        for (kind, name) in [
            (FileKind::Glstats, "n2/glstats.4"),
            (FileKind::Glockfd, "n2/glockfd.4"),
            (FileKind::DlmLocks, "n2/dlm_locks.4"),
        ] {
            assert!(s.file(kind).unwrap().ends_with(name), "{kind:?}");
        }
        assert_eq!(s.plocks(), None);
        assert_eq!(s.nodeid, Some(2));
        // A capture older than glk's `table` file does not say its filesystem.
        assert_eq!(s.fs, None);
        assert!((s.taken.unwrap() - 1_795_323_781.267_727).abs() < 1e-3);
        assert_eq!(
            Sources::find(&input("public/glocktop-manpage/glocktop-manpage.txt")),
            Sources::default()
        );
    }

    /// Phase 2 of the real two-node capture: n2's flock request waits on n1, which
    /// masters the resource and holds it EX (pid 866).
    #[test]
    fn a_waiting_request_names_the_node_that_holds_it() {
        let glock = GlockId::new(6, 0x60af5);
        let both = [
            Sources::find(&input("real/dlm2-6.1/n1/glocks.4")),
            Sources::find(&input("real/dlm2-6.1/n2/glocks.4")),
        ];
        let ctx = Context::load(&both, None);
        let w = ctx.dlm_wait(1, glock).expect("n2 waits");
        assert_eq!(
            (w.age_us, w.rqmode, w.master),
            (12_706_292, DlmMode::EX, Some(1))
        );
        assert!(w.master_seen);
        assert_eq!(w.blockers.len(), 1);
        let b = &w.blockers[0];
        assert_eq!(
            (b.owner, b.pid, b.grmode, b.is_master_copy()),
            (Some(1), 866, DlmMode::EX, false)
        );
        // n1 does not wait; its view of the master's queue shows n2's waiting copy.
        assert_eq!(ctx.dlm_wait(0, glock), None);
        let others = ctx.master_locks(0, glock);
        assert_eq!(others.len(), 1);
        assert_eq!((others[0].owner, others[0].pid), (Some(2), 860));
        assert!(others[0].status.is_waiting());
        // Each node's capture in a folder of its own, as support collects them: node 1 is
        // asked when its filesystem is not said or is the same, not when it is another.
        let (_other, dir) = testdata::scratch_file("folders");
        let copy = |node: &str, table: Option<&str>| {
            let to = dir.join(node).join(table.unwrap_or("old")).join(node);
            std::fs::create_dir_all(&to).unwrap();
            for f in ["glocks.4", "dlm_locks.4", "dlm_controld.log", "time.4"] {
                std::fs::copy(
                    testdata::path("real/dlm2-6.1").join(node).join(f),
                    to.join(f),
                )
                .unwrap();
            }
            if let Some(t) = table {
                std::fs::write(to.join("table"), format!("{t}\n")).unwrap();
            }
            Sources::find(&Input {
                path: to.join("glocks.4"),
                live: false,
            })
        };
        let asked = |n1: Option<&str>, n2: Option<&str>| {
            let pair = [copy("n1", n1), copy("n2", n2)];
            assert_eq!((pair[0].nodeid, pair[0].fs.as_deref()), (Some(1), n1));
            let w = Context::load(&pair, None).dlm_wait(1, glock).unwrap();
            (w.master_seen, w.blockers.len())
        };
        assert_eq!(asked(None, None), (true, 1));
        assert_eq!(asked(Some("lab:gfs"), None), (true, 1));
        assert_eq!(asked(Some("lab:gfs"), Some("lab:gfs")), (true, 1));
        assert_eq!(asked(Some("lab:other"), Some("lab:gfs")), (false, 0));
        // n2 alone: the wait and its master are known, the holder is not.
        let alone = Context::load(&both[1..], None);
        let w = alone.dlm_wait(0, glock).unwrap();
        assert_eq!(
            (w.master, w.master_seen, w.blockers.len()),
            (Some(1), false, 0)
        );
        // glockfd: pid 860 has the flocked file open as fd 3.
        let fds = ctx.node(1).open_files(glock);
        assert_eq!(
            fds.iter().map(|f| (f.pid, f.fd)).collect::<Vec<_>>(),
            [(860, 3)]
        );
    }

    /// A node given twice (two snapshots of one capture here) is looked up, for each other
    /// node's input, in the snapshot taken nearest in time to it.
    #[test]
    fn a_node_given_twice_is_asked_at_the_nearest_moment() {
        let load = |files: &[&str]| {
            let s: Vec<Sources> = files
                .iter()
                .map(|f| Sources::find(&input(&format!("real/dlm2-6.1/{f}"))))
                .collect();
            Context::load(&s, None)
        };
        let peers = |ctx: &Context, i| ctx.peers(i).collect::<Vec<_>>();
        let ctx = load(&["n1/glocks.4", "n1/glocks.1", "n2/glocks.1", "n2/glocks.4"]);
        assert_eq!(peers(&ctx, 2), [(1, Some(1))]);
        assert_eq!(peers(&ctx, 3), [(0, Some(1))]);
        assert_eq!(peers(&ctx, 0), [(3, Some(2))]);
        assert_eq!(peers(&ctx, 1), [(2, Some(2))]);
        // n2's wait on node 1 is asked of n1's snapshot of the same moment.
        let glock = GlockId::new(6, 0x60af5);
        assert!(ctx.dlm_wait(3, glock).unwrap().master_seen);
    }

    #[test]
    fn glstats_counts_become_rates_between_refreshes() {
        let (dir, g) = testdata::scratch_file("glocks");
        std::fs::write(&g, "").unwrap();
        let st = dir.path().join("glstats");
        let line = |d: u64, q: u64| {
            format!("G: n:2/1a rtt:100/10 rttb:200/20 irt:300/30 dcnt: {d} qcnt: {q}\n")
        };
        std::fs::write(&st, line(10, 20)).unwrap();
        let inp = Input {
            path: g,
            live: false,
        };
        let first = Context::load(&[Sources::find(&inp)], None);
        assert_eq!(first.node(0).dlm_rate(GlockId::new(2, 0x1a)), 0.0);
        std::thread::sleep(Duration::from_millis(50));
        std::fs::write(&st, line(15, 20)).unwrap();
        let second = Context::load(&[Sources::find(&inp)], Some(&first));
        let r = second.node(0).dlm_rate(GlockId::new(2, 0x1a));
        assert!(r > 0.0 && r < 5.0 / 0.05, "{r}");
        let (s, rates) = second.node(0).stat(GlockId::new(2, 0x1a)).unwrap();
        assert_eq!((s.stats.srttb, rates.unwrap().queued_per_s), (200, 0.0));
        // Freed and made again: its counters start over, and all of them are new (the
        // rule glk stats uses, gfs2stats' Increase), never a negative rate.
        std::thread::sleep(Duration::from_millis(50));
        std::fs::write(&st, line(3, 4)).unwrap();
        let third = Context::load(&[Sources::find(&inp)], Some(&second));
        let (_, rates) = third.node(0).stat(GlockId::new(2, 0x1a)).unwrap();
        let r = rates.unwrap();
        assert!(r.dlm_per_s > 0.0 && r.queued_per_s > r.dlm_per_s, "{r:?}");
    }
}
