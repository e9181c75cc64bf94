//! Capture bundles: what `glk capture` writes and every reader (`glk top`, `glk stats`,
//! the analysis engine) finds.
//!
//! A node's capture is a directory of snapshots `KIND.N` (`glocks.0`, `glstats.0`,
//! `sbstats.0`, `glockfd.0`, `dlm_locks.0`, `dlm_waiters.0`, `procs.0` and `locks.0` (the
//! node's tasks and `/proc/locks`, see [`procs`]), `fdlocks.0` (who holds those locks
//! through which open file, see [`fdlocks`]), `time.0` holding the epoch seconds the
//! snapshot started, `gfs2_sysfs.0` the filesystem's sysfs state, see [`health`]) plus
//! trace text (`trace_pipe.txt`, compressed or not), and optionally `node` (its name),
//! `nodeid` (its DLM node id), `mountinfo`, `kernel.log` (the kernel's log buffer) and
//! `cluster.txt` (corosync's and dlm_controld's view). A cluster capture is a
//! directory of node directories; either may be packed as a tarball (`.tar`, `.tar.zst`,
//! `.tar.gz`, `.tar.xz`, `.tar.bz2`). A loose file (a glocks dump, a DLM dump, a trace, a
//! trace-cmd `trace.dat`) is a one-file node named after the file. Other tools'
//! collections are read as nodes too, recognised by content: sos reports ([`sos`]) and
//! gfs2_lockcapture's output ([`lockcapture`]).

#![forbid(unsafe_code)]

pub mod atomic;
pub mod fdlocks;
pub mod filesystems;
pub mod health;
pub mod live;
pub mod lockcapture;
mod loose;
pub mod mounts;
pub mod procs;
pub mod room;
pub mod sos;
mod tarball;
mod unread;

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The kinds of file a snapshot holds, each written `KIND.N`: the one place that knows their
/// names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileKind {
    /// debugfs `glocks`.
    Glocks,
    /// debugfs `glstats`.
    Glstats,
    /// debugfs `sbstats` (`lkstats` on old kernels, read under either name).
    Sbstats,
    /// debugfs `glockfd`.
    Glockfd,
    /// The DLM lockspace's `_locks` dump.
    DlmLocks,
    /// The DLM lockspace's `_waiters` dump.
    DlmWaiters,
    /// The node's tasks ([`procs`] format).
    Procs,
    /// A copy of `/proc/locks`.
    Locks,
    /// The locks the node's processes hold through their open files ([`fdlocks`]).
    FdLocks,
    /// `dlm_tool plocks LOCKSPACE`: the cluster's POSIX (fcntl) locks and their waiters,
    /// as dlm_controld keeps them ([`glockparse::plocks`]).
    Plocks,
    /// The filesystem's sysfs state ([`health::Sysfs`]).
    Sysfs,
    /// Epoch seconds when the snapshot started.
    Time,
}

impl FileKind {
    /// Every kind, in the order a snapshot is written.
    pub const ALL: [FileKind; 12] = [
        FileKind::Time,
        FileKind::Glocks,
        FileKind::Glstats,
        FileKind::Sbstats,
        FileKind::Glockfd,
        FileKind::DlmLocks,
        FileKind::DlmWaiters,
        FileKind::Locks,
        FileKind::Plocks,
        FileKind::Sysfs,
        FileKind::Procs,
        FileKind::FdLocks,
    ];

    /// The kinds a filesystem's debugfs directory holds, each under its own name
    /// (`/sys/kernel/debug/gfs2/TABLE/glocks`).
    pub const DEBUGFS: [FileKind; 4] = [
        FileKind::Glocks,
        FileKind::Glstats,
        FileKind::Sbstats,
        FileKind::Glockfd,
    ];

    /// The `KIND` of its file names (`dlm_locks`).
    pub fn name(self) -> &'static str {
        match self {
            FileKind::Glocks => "glocks",
            FileKind::Glstats => "glstats",
            FileKind::Sbstats => "sbstats",
            FileKind::Glockfd => "glockfd",
            FileKind::DlmLocks => "dlm_locks",
            FileKind::DlmWaiters => "dlm_waiters",
            FileKind::Procs => "procs",
            FileKind::Locks => "locks",
            FileKind::FdLocks => "fdlocks",
            FileKind::Plocks => "plocks",
            FileKind::Sysfs => "gfs2_sysfs",
            FileKind::Time => "time",
        }
    }

    /// Its file in snapshot `n`: `KIND.N`.
    pub fn file_name(self, n: u32) -> String {
        format!("{}.{n}", self.name())
    }

    /// The kind and snapshot of a file name: `KIND.N`, or a bare `KIND` (snapshot 0),
    /// either compressed under its name (`glocks.4.xz`: every reader decompresses by
    /// content).
    pub fn parse(file_name: &str) -> Option<(FileKind, u32)> {
        let file_name = uncompressed_name(file_name);
        let (base, n) = match file_name.rsplit_once('.') {
            Some((b, n)) if !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()) => {
                (b, n.parse().ok()?)
            }
            _ => (file_name, 0),
        };
        let kind = match base {
            "lkstats" => FileKind::Sbstats,
            _ => *FileKind::ALL.iter().find(|k| k.name() == base)?,
        };
        Some((kind, n))
    }
}

/// Where debugfs is mounted by convention.
const DEBUGFS: &str = "/sys/kernel/debug";

/// The command that mounts debugfs where it is by convention, for messages.
pub const MOUNT_DEBUGFS: &str = "mount -t debugfs none /sys/kernel/debug";

/// The suffixes of a file compressed under its name (gzip, xz, zstd, bzip2).
const COMPRESSED: [&str; 4] = [".gz", ".xz", ".zst", ".bz2"];

/// A file's name without the suffix of a compression (`glocks.4` of `glocks.4.xz`).
fn uncompressed_name(name: &str) -> &str {
    COMPRESSED
        .iter()
        .find_map(|c| name.strip_suffix(c))
        .unwrap_or(name)
}

/// The file `name` in `dir`, as named or compressed under its name (`kernel.log.xz`),
/// where there is one: a capture's files may be compressed one by one before they are
/// sent.
pub fn find_named(dir: &Path, name: &str) -> Option<PathBuf> {
    std::iter::once("")
        .chain(COMPRESSED)
        .map(|c| dir.join(format!("{name}{c}")))
        .find(|p| p.is_file())
}

/// The text of a capture's small file (compressed or not: told by content), at most
/// [`TEXT_LIMIT`] bytes of it.
pub fn read_text(path: &Path) -> io::Result<String> {
    let mut text = String::new();
    glockparse::input::open(path)?
        .take(TEXT_LIMIT)
        .read_to_string(&mut text)?;
    Ok(text)
}

/// The most [`read_text`] reads of a file (a kernel log is a few MiB at most).
pub const TEXT_LIMIT: u64 = 64 << 20;

/// The files of one snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// The `N` of the `KIND.N` file names.
    pub index: u32,
    /// Epoch seconds when the snapshot started (`time.N`).
    pub time_unix: Option<f64>,
    /// Its files, by kind ([`FileKind::Time`] is read into `time_unix`, never kept here).
    files: BTreeMap<FileKind, PathBuf>,
}

impl Snapshot {
    /// Snapshot `index`, with no time and no file yet.
    pub fn new(index: u32) -> Snapshot {
        Snapshot {
            index,
            ..Snapshot::default()
        }
    }

    /// The file of `kind`, when the snapshot has one.
    pub fn path(&self, kind: FileKind) -> Option<&Path> {
        self.files.get(&kind).map(PathBuf::as_path)
    }

    /// Whether the snapshot has a file of `kind`.
    pub fn has(&self, kind: FileKind) -> bool {
        self.files.contains_key(&kind)
    }

    /// Sets the file of `kind` (nothing for [`FileKind::Time`]).
    pub fn set(&mut self, kind: FileKind, path: PathBuf) {
        if kind != FileKind::Time {
            self.files.insert(kind, path);
        }
    }

    /// Forgets the file of `kind`.
    pub fn remove(&mut self, kind: FileKind) {
        self.files.remove(&kind);
    }

    /// Sets the file of `kind` to `path` when that is a file.
    pub fn set_if_file(&mut self, kind: FileKind, path: PathBuf) {
        if path.is_file() {
            self.set(kind, path);
        }
    }
}

/// A file a node directory of a capture holds once, beside its snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeFile {
    /// The node's name (`node`).
    Node,
    /// The node's DLM node id (`nodeid`), when configfs gave it.
    Nodeid,
    /// The kernel release, `/proc/sys/kernel/osrelease` (`kernel.txt`).
    Kernel,
    /// A copy of `/proc/self/mountinfo` (`mountinfo`), to tell GFS2 devices apart.
    Mountinfo,
    /// The kernel's log buffer at the end of the capture (`kernel.log`).
    KernelLog,
    /// The cluster tools' view at the end of the capture (`cluster.txt`,
    /// [`health::Cluster`]).
    Cluster,
    /// The lock table `CLUSTER:FS` of the filesystem whose files the directory holds
    /// (`table`): what tells one filesystem's glocks from another's across nodes
    /// ([`lock_table`]).
    Table,
}

impl NodeFile {
    /// The files a node's capture keeps as files, where the others are read into
    /// [`NodeCapture`]'s fields.
    pub const KEPT: [NodeFile; 3] = [NodeFile::Mountinfo, NodeFile::KernelLog, NodeFile::Cluster];

    /// Its file name.
    pub fn name(self) -> &'static str {
        match self {
            NodeFile::Node => "node",
            NodeFile::Nodeid => "nodeid",
            NodeFile::Kernel => "kernel.txt",
            NodeFile::Mountinfo => "mountinfo",
            NodeFile::KernelLog => "kernel.log",
            NodeFile::Cluster => "cluster.txt",
            NodeFile::Table => "table",
        }
    }

    /// Its path in the node directory `dir`.
    pub fn path_in(self, dir: &Path) -> PathBuf {
        dir.join(self.name())
    }

    /// Its file in the node directory `dir`, as named or compressed ([`find_named`]).
    pub fn find_in(self, dir: &Path) -> Option<PathBuf> {
        find_named(dir, self.name())
    }

    /// The text of its file in the node directory `dir`, where there is one.
    pub fn read_in(self, dir: &Path) -> Option<String> {
        read_text(&self.find_in(dir)?).ok()
    }

    /// Whether it is written when the capture ends (the state the locks were left in),
    /// where the others are written when it starts.
    pub fn at_end(self) -> bool {
        matches!(self, NodeFile::KernelLog | NodeFile::Cluster)
    }
}

/// One node's capture.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeCapture {
    /// The name the capture recorded (`node` file), else the directory or file name.
    pub node: String,
    /// The node's DLM node id: `nodeid` file, else `our_nodeid N` in dlm_controld.log.
    pub nodeid: Option<u64>,
    /// The lock table `CLUSTER:FS` of the filesystem whose snapshots these are, when the
    /// capture says ([`lock_table`], a sos report's or gfs2_lockcapture's debugfs
    /// directory name); a node with several filesystems has a capture of each
    /// ([`filesystems`]).
    pub fs: Option<String>,
    /// The snapshots, by index.
    pub snapshots: Vec<Snapshot>,
    /// Saved trace text files (compressed or not).
    pub traces: Vec<PathBuf>,
    /// The kernel release the node ran (`6.12.117+deb13-amd64`): glk's `kernel.txt`, a sos
    /// report's `uname`, gfs2_lockcapture's `UNAMEA`.
    pub kernel: Option<String>,
    /// The node's files of the kinds in [`NodeFile::KEPT`] that it has, by kind (a kind
    /// may have several: a sos report's cluster state is two commands' outputs).
    pub files: BTreeMap<NodeFile, Vec<PathBuf>>,
    /// Several captures of the node, given side by side, joined into this one
    /// (`NodeCapture::absorb`).
    pub joined: bool,
    /// In a cluster capture (`glk capture --cluster`), where its `cluster.json` bounds the
    /// node's wall clock against the one of the node that gathered the capture.
    pub ssh_clock: Option<SshClock>,
}

/// A node's wall clock minus the gathering node's, as the ssh round trip of a cluster
/// capture bounds it: its agent's hello was written after the agent was started and read
/// before it came back.
#[derive(Debug, Clone, PartialEq)]
pub struct SshClock {
    /// The least it can be, seconds.
    pub min_s: f64,
    /// The most it can be, seconds.
    pub max_s: f64,
    /// The node that gathered the capture.
    pub gathered_by: String,
}

/// The clock bound of node directory `dir` in the `cluster.json` of its parent, or of the
/// directory above for a node with several filesystems (`DIR/FS/NODE`): the entry whose node
/// name is the directory's name, or `node`.
fn ssh_clock(dir: &Path, node: &str) -> Option<SshClock> {
    let text = dir
        .ancestors()
        .skip(1)
        .take(2)
        .find_map(|d| std::fs::read(d.join("cluster.json")).ok())?;
    let doc: serde_json::Value = serde_json::from_slice(&text).ok()?;
    let dir_name = dir.file_name()?.to_string_lossy();
    let entry = doc["nodes"].as_array()?.iter().find(|n| {
        let name = n["node"].as_str().unwrap_or("");
        name == dir_name || name == node
    })?;
    let bound = &entry["clock_offset"];
    Some(SshClock {
        min_s: bound["min_s"].as_f64()?,
        max_s: bound["max_s"].as_f64()?,
        gathered_by: doc["gathered_by"].as_str()?.to_string(),
    })
}

impl NodeCapture {
    /// The node's first file of `kind`, when it has one.
    pub fn file(&self, kind: NodeFile) -> Option<&Path> {
        self.files_of(kind).next()
    }

    /// The node's files of `kind`.
    pub fn files_of(&self, kind: NodeFile) -> impl Iterator<Item = &Path> {
        self.files
            .get(&kind)
            .into_iter()
            .flatten()
            .map(PathBuf::as_path)
    }

    /// Adds a file of `kind` when `path` is a file.
    pub fn add_if_file(&mut self, kind: NodeFile, path: PathBuf) {
        if path.is_file() {
            self.files.entry(kind).or_default().push(path);
        }
    }

    /// The sysfs state file of the node's last snapshot that has one.
    pub fn last_sysfs(&self) -> Option<&Path> {
        self.snapshots
            .iter()
            .rev()
            .find_map(|s| s.path(FileKind::Sysfs))
    }

    /// How a file of snapshot `index` is named in citations: `NODE/FILE`, or the file's
    /// path where several captures of the node were joined (their file names repeat);
    /// `NODE/KIND.N` when the snapshot has no such file.
    pub fn cite_file(&self, index: u32, kind: FileKind) -> String {
        let path = self
            .snapshots
            .iter()
            .find(|s| s.index == index)
            .and_then(|s| s.path(kind));
        match path {
            Some(p) if self.joined => p.display().to_string(),
            Some(p) => format!(
                "{}/{}",
                self.node,
                p.file_name().map_or_else(
                    || p.display().to_string(),
                    |n| n.to_string_lossy().into_owned()
                )
            ),
            None => format!("{}/{}", self.node, kind.file_name(index)),
        }
    }

    /// Takes in another capture of the same node: the snapshots of both, in time order
    /// when every snapshot has its time (else this capture's first), numbered again from 0;
    /// the traces of both; of the node files, those written when a capture starts from
    /// the earlier capture and those written when it ends from the later one (the later
    /// by the snapshots' times where both have times, else the one given later), each
    /// from the other where only the other has it.
    fn absorb(&mut self, other: NodeCapture) {
        let other_is_later = match (self.last_time(), other.last_time()) {
            (Some(mine), Some(theirs)) => theirs >= mine,
            _ => true,
        };
        self.snapshots.extend(other.snapshots);
        if self.snapshots.iter().all(|s| s.time_unix.is_some()) {
            self.snapshots.sort_by(|a, b| {
                a.time_unix
                    .unwrap_or(0.0)
                    .total_cmp(&b.time_unix.unwrap_or(0.0))
            });
        }
        for (i, s) in self.snapshots.iter_mut().enumerate() {
            s.index = i as u32;
        }
        self.traces.extend(other.traces);
        self.kernel = self.kernel.take().or(other.kernel);
        self.fs = self.fs.take().or(other.fs);
        for (kind, paths) in other.files {
            if kind.at_end() == other_is_later {
                self.files.insert(kind, paths);
            } else {
                self.files.entry(kind).or_insert(paths);
            }
        }
        self.joined = true;
    }

    /// The time of the last snapshot, when every snapshot has its time.
    fn last_time(&self) -> Option<f64> {
        self.snapshots
            .iter()
            .map(|s| s.time_unix)
            .try_fold(f64::MIN, |max, t| Some(max.max(t?)))
            .filter(|_| !self.snapshots.is_empty())
    }
}

/// All nodes found, plus the extracted tarballs (removed on drop).
#[derive(Debug, Default)]
pub struct Captures {
    /// Every node, in the order found.
    pub nodes: Vec<NodeCapture>,
    /// What inputs made by other tools lack that glk reads (a sos report without a glocks
    /// dump...), one line each, naming the input and what would have collected it.
    pub lacks: Vec<String>,
    /// Inputs that are not captures and were passed over (a checksum written beside a
    /// tarball, as sos writes one), the unreadable ends of damaged tarballs, and what a
    /// directory given holds beside what was read of it (another collection, a dump whose
    /// name a capture does not use), one line each, naming the path.
    pub passed_over: Vec<String>,
    extracted: Vec<Unpacked>,
}

impl Captures {
    /// How node `node`'s file of snapshot `index` is named in citations
    /// ([`NodeCapture::cite_file`]; `NODE/KIND.N` for a node not among the inputs).
    pub fn cite_file(&self, node: &str, index: u32, kind: FileKind) -> String {
        match self.nodes.iter().find(|n| n.node == node) {
            Some(n) => n.cite_file(index, kind),
            None => format!("{node}/{}", kind.file_name(index)),
        }
    }

    /// What the inputs lack, then what was passed over: the lines every command says of
    /// its inputs beside what it read of them.
    pub fn notes(&self) -> impl Iterator<Item = &str> {
        self.lacks
            .iter()
            .chain(&self.passed_over)
            .map(String::as_str)
    }
}

/// A tarball extracted into a private temporary directory (mode 0700, an unpredictable
/// name, made by `tempfile`), which is removed on drop.
#[derive(Debug)]
pub struct Unpacked {
    dir: tempfile::TempDir,
    damage: Option<String>,
}

impl Unpacked {
    /// Where the tarball was extracted.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// What of a damaged or truncated tarball could not be read, in words naming the
    /// tarball: the damaged headers skipped (the members after them are extracted), or
    /// where it stopped being readable.
    pub fn damage(&self) -> Option<&str> {
        self.damage.as_deref()
    }
}

/// Extracts a capture tarball (`.tar`, `.tar.zst`, `.tar.gz`, `.tar.xz`). A damaged one
/// gives every member it can, as GNU tar does: a damaged header is skipped to the next
/// whole header, and a tarball cut short (an upload that stopped) gives what it holds
/// before the cut; what could not be read is said ([`Unpacked::damage`]). A tarball of
/// which no member can be read is an error.
pub fn unpack(tarball: &Path) -> io::Result<Unpacked> {
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", tarball.display()));
    let dir = tempfile::Builder::new()
        .prefix("glk-capture-")
        .tempdir()
        .map_err(named)?;
    let input =
        io::BufReader::with_capacity(1 << 16, glockparse::input::open(tarball).map_err(named)?);
    let damage = tarball::extract(input, dir.path())
        .map_err(named)?
        .map(|d| format!("{}: {d}", tarball.display()));
    Ok(Unpacked { dir, damage })
}

fn is_trace(name: &str) -> bool {
    name.starts_with("trace_pipe")
        || name.starts_with("trace.txt")
        || name == "trace"
        || name == "trace.dat"
}

/// Whether the file `path`, named `name`, is a saved trace: a trace's name, and something
/// in it. The kernel's own `trace` and `trace_pipe` (tracefs, which says 0 for their size)
/// are never read as one: reading `trace_pipe` would wait for events forever, and take
/// them from whoever traces.
fn is_saved_trace(path: &Path, name: &str) -> bool {
    is_trace(name) && std::fs::metadata(path).is_ok_and(|m| m.len() > 0)
}

/// Whether `path` is on the same filesystem as `dir`: the search for captures below a
/// directory stays on its filesystem (as `find -xdev`), so that `/sys/kernel/debug` given
/// by mistake is not searched into the tracefs mounted on its `tracing`.
fn same_fs(dir: &Path) -> impl Fn(&PathBuf) -> bool {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).map(|m| m.dev()).ok();
    move |p| dev.is_some() && std::fs::metadata(p).map(|m| m.dev()).ok() == dev
}

/// The subdirectories of `dir` that may hold a capture, sorted. Hidden ones are left out:
/// `glk capture` writes a node directory as `.NODE.partial-XXXXXX` and renames it only
/// when complete, so a capture still running, or killed, is never read as a whole one.
pub fn subdirs(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .filter(|d| d.is_dir())
        .collect();
    v.sort();
    Ok(v)
}

/// Whether a path names a tarball, by its extension.
pub fn is_tarball(path: &Path) -> bool {
    let n = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    [
        ".tar", ".tar.zst", ".tar.gz", ".tgz", ".tar.xz", ".tar.bz2", ".tbz2",
    ]
    .iter()
    .any(|e| n.ends_with(e))
}

/// Whether `path` is a checksum written beside another file: named `*.md5`, `*.sha1`,
/// `*.sha256` or `*.sha512`, and holding one line that starts with a digest of that kind
/// (sos's `TARBALL.md5` holds the digest alone; `sha256sum` adds the file's name).
pub fn is_checksum(path: &Path) -> bool {
    let digits = match path.extension().and_then(|e| e.to_str()) {
        Some("md5") => 32,
        Some("sha1") => 40,
        Some("sha256") => 64,
        Some("sha512") => 128,
        _ => return false,
    };
    let small = std::fs::metadata(path).is_ok_and(|m| m.len() <= 4096);
    let Some(text) = small.then(|| std::fs::read(path).ok()).flatten() else {
        return false;
    };
    let text = text.trim_ascii();
    let digest = text
        .split(u8::is_ascii_whitespace)
        .next()
        .unwrap_or_default();
    !text.contains(&b'\n') && digest.len() == digits && digest.iter().all(u8::is_ascii_hexdigit)
}

fn is_node_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten().any(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            e.path().is_file()
                && (FileKind::parse(&n).is_some_and(|(k, _)| k != FileKind::Time)
                    || is_saved_trace(&e.path(), &n))
        })
    })
}

/// The DLM node id of this machine, from dlm's configfs (`comms/ID/local` is 1), else
/// from `GLK_NODEID` (for a machine whose configfs is not mounted, or a stand-in node).
pub fn local_nodeid() -> Option<String> {
    let configfs = std::fs::read_dir("/sys/kernel/config/dlm/cluster/comms")
        .ok()
        .and_then(|rd| {
            rd.flatten()
                .find(|e| {
                    std::fs::read_to_string(e.path().join("local")).is_ok_and(|s| s.trim() == "1")
                })
                .map(|e| e.file_name().to_string_lossy().into_owned())
        });
    configfs.or_else(|| {
        std::env::var("GLK_NODEID")
            .ok()
            .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// A node directory's DLM node id: its `nodeid` file, else `our_nodeid N` in its
/// `dlm_controld.log`.
pub fn read_nodeid(dir: &Path) -> Option<u64> {
    if let Some(s) = NodeFile::Nodeid.read_in(dir) {
        return s.trim().parse().ok();
    }
    let log = read_text(&find_named(dir, "dlm_controld.log")?).ok()?;
    log.lines()
        .find_map(|l| l.split("our_nodeid ").nth(1))
        .and_then(|v| v.trim().split(' ').next()?.parse().ok())
}

/// A snapshot's `time.N` (compressed or not): when it was taken, seconds since the epoch.
pub fn read_time(path: &Path) -> Option<f64> {
    read_text(path).ok()?.trim().parse().ok()
}

/// The longest lock table the kernel takes (`GFS2_LOCKNAME_LEN`).
const LOCKNAME_LEN: usize = 64;

/// The lock table (`CLUSTER:FS`) of the filesystem whose files lie in `dir`: the node
/// directory's `table` file (`glk capture` writes one), else the directory's own name
/// where it is one, as debugfs names a filesystem's directory (live, and in the copies
/// that sos reports and gfs2_lockcapture keep). None where `dir` does not say (captures
/// older than the `table` file, lock_nolock filesystems).
pub fn lock_table(dir: &Path) -> Option<String> {
    match NodeFile::Table.read_in(dir) {
        Some(s) => table_named(s.trim()),
        None => table_named(dir.file_name()?.to_str()?),
    }
}

/// `name` as a lock table (`CLUSTER:FS`), where it is one: a `table` file's text, or the
/// name of a filesystem's debugfs directory ([`lock_table`]).
pub(crate) fn table_named(name: &str) -> Option<String> {
    (name.len() <= LOCKNAME_LEN && name.contains(':') && name.bytes().all(|b| b.is_ascii_graphic()))
        .then(|| name.to_string())
}

/// Reads one node directory.
pub fn node_dir(dir: &Path) -> io::Result<NodeCapture> {
    let name = NodeFile::Node
        .read_in(dir)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| {
            dir.file_name().map_or_else(
                || dir.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        });
    let mut snaps: BTreeMap<u32, Snapshot> = BTreeMap::new();
    let mut traces = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    entries.sort();
    for p in entries {
        let n = p
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        if is_saved_trace(&p, &n) {
            traces.push(p);
            continue;
        }
        let Some((kind, idx)) = FileKind::parse(&n) else {
            continue;
        };
        let s = snaps.entry(idx).or_insert_with(|| Snapshot::new(idx));
        match kind {
            FileKind::Time => s.time_unix = read_time(&p),
            k => s.set(k, p),
        }
    }
    let mut node = NodeCapture {
        ssh_clock: ssh_clock(dir, &name),
        node: name,
        nodeid: read_nodeid(dir),
        fs: lock_table(dir),
        snapshots: snaps.into_values().collect(),
        traces,
        kernel: NodeFile::Kernel.find_in(dir).and_then(|p| read_kernel(&p)),
        ..NodeCapture::default()
    };
    for kind in NodeFile::KEPT {
        if let Some(p) = kind.find_in(dir) {
            node.add_if_file(kind, p);
        }
    }
    Ok(node)
}

/// The kernel release in `path`: its first word, where it is one (`kernel.txt` holds
/// `/proc/sys/kernel/osrelease`), or `uname -a`'s third.
pub(crate) fn read_kernel(path: &Path) -> Option<String> {
    traceparse::raw::kernel_release(&read_text(path).ok()?)
}

/// What a file says it is, by its first non-blank line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sniffed {
    /// A snapshot file: `G:` lines (glocks; glstats when the first field is `n:`), an
    /// sbstats table (`type`...), a DLM lock dump (`id nodeid`...).
    Kind(FileKind),
    /// Trace text (an ftrace line, the `# tracer` header, or `trace-cmd report`'s `cpus=N`).
    Trace,
    /// A trace-cmd `trace.dat`: binary ring-buffer pages ([`traceparse::dat`] reads them).
    TraceDat,
    /// Nothing but blank lines.
    Empty,
    /// None of these.
    Unknown,
}

/// A file's first non-blank line (as bytes: a file that is not text is not an error to
/// read) and its line number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// The line, without its newline.
    pub text: Vec<u8>,
    /// Its number (1-based).
    pub line: u64,
}

/// What `path` holds (compressed or not), with the line that says so: the one sniffer of
/// glk's inputs.
pub fn sniff(path: &Path) -> io::Result<(Sniffed, Head)> {
    use std::io::BufRead;
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    // The first 64 KiB say what it is: a file with no newline is not read whole.
    let mut r = io::BufReader::new(glockparse::input::open(path).map_err(named)?.take(1 << 16));
    let mut head = Head {
        text: Vec::new(),
        line: 0,
    };
    if r.fill_buf()
        .map_err(named)?
        .starts_with(traceparse::dat::MAGIC)
    {
        return Ok((Sniffed::TraceDat, head));
    }
    while head.text.iter().all(u8::is_ascii_whitespace) {
        head.text.clear();
        head.line += 1;
        if r.read_until(b'\n', &mut head.text).map_err(named)? == 0 {
            break;
        }
    }
    let trimmed = head.text.trim_ascii().to_vec();
    head.text = trimmed;
    Ok((sniff_line(&head.text), head))
}

/// Whether a line is an event as a trace prints it: with its task and CPU, or, without
/// them (`nocontext-info`), a gfs2 or dlm event. A bare `word: text` line says nothing
/// (`glk: snapshot 0 taken`).
fn is_traced_event(line: &traceparse::Line) -> bool {
    let traceparse::Line::Event(e) = line else {
        return false;
    };
    e.cpu.is_some() || e.event.starts_with(b"gfs2_") || e.event.starts_with(b"dlm_")
}

/// What a file whose first non-blank line is `first` holds.
pub fn sniff_line(first: &[u8]) -> Sniffed {
    if first.is_empty() {
        Sniffed::Empty
    } else if let Some(rest) = first.strip_prefix(b"G:") {
        Sniffed::Kind(if rest.trim_ascii_start().starts_with(b"n:") {
            FileKind::Glstats
        } else {
            FileKind::Glocks
        })
    } else if first.starts_with(b"type") {
        Sniffed::Kind(FileKind::Sbstats)
    } else if first.starts_with(b"id nodeid") || glockparse::dlm_locks::lockdebug::starts(first) {
        Sniffed::Kind(FileKind::DlmLocks)
    } else if first.starts_with(b"# tracer")
        || traceparse::line::is_report_header(first)
        || traceparse::line::parse(first).is_ok_and(|l| is_traced_event(&l))
    {
        Sniffed::Trace
    } else {
        Sniffed::Unknown
    }
}

/// An error when the directory `p` lies on sysfs or procfs: the kernel's own files, not
/// a capture (`/sys/kernel/debug` is sysfs where debugfs is not mounted on it).
fn refuse_kernel_dir(p: &Path) -> io::Result<()> {
    let Some(fs) =
        live::KernelFs::of(p).filter(|f| matches!(f, live::KernelFs::Sysfs | live::KernelFs::Proc))
    else {
        return Ok(());
    };
    let unmounted = fs == live::KernelFs::Sysfs
        && std::fs::canonicalize(p).is_ok_and(|c| c == Path::new(DEBUGFS));
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{}: the kernel's own {} files, not a capture: glk reads a node's live GFS2 \
             files in debugfs (glk top, glk capture), and saved ones in a capture{}",
            p.display(),
            fs.name(),
            if unmounted {
                format!("; debugfs is not mounted here: {MOUNT_DEBUGFS}")
            } else {
                String::new()
            }
        ),
    ))
}

/// Finds the nodes behind `paths` (node directories, cluster directories, tarballs,
/// loose files, sos reports, gfs2_lockcapture output); what other tools' collections lack
/// is in [`Captures::lacks`], and what a directory holds beside what was read of it (a
/// sos report's tarball beside a glk capture...) in [`Captures::passed_over`]. A loose
/// file is a node named by its file name's stem (`host018` of `host018.glocks`), or by its
/// directory where the stem only names what it holds (`n1` of `n1/glocks.4`) or where loose
/// files in several directories share it; a node's second dump of a kind is its next
/// snapshot.
pub fn discover(paths: &[PathBuf]) -> io::Result<Captures> {
    let mut caps = Captures::default();
    let files: Vec<&Path> = paths
        .iter()
        .map(PathBuf::as_path)
        .filter(|p| p.is_file() && !is_tarball(p) && !is_checksum(p))
        .collect();
    let loose_names = loose::node_names(&files);
    let mut seen = std::collections::BTreeSet::new();
    for p in paths {
        let meta = std::fs::metadata(p)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
        if !seen.insert(p) {
            caps.passed_over
                .push(format!("{}: given twice, read once", p.display()));
        } else if meta.is_file() && is_checksum(p) {
            caps.passed_over.push(format!(
                "{}: a checksum of another file, not a capture: passed over",
                p.display()
            ));
        } else if let Some(name) = loose_names.get(p) {
            caps.add_loose(loose::read(p, name.clone())?);
        } else {
            caps.read_dir_or_tarball(p, meta.is_file() && is_tarball(p))?;
        }
    }
    if caps.nodes.is_empty() && !caps.passed_over.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            caps.passed_over.join("; "),
        ));
    }
    caps.join_same_nodes();
    Ok(caps)
}

impl Captures {
    /// Adds a loose file's node to the loose node of the same name, else as a node.
    fn add_loose(&mut self, n: NodeCapture) {
        let same = |x: &&mut NodeCapture| x.node == n.node && x.nodeid.is_none();
        match self.nodes.iter_mut().find(same) {
            Some(existing) => existing.add_loose(n),
            None => self.nodes.push(n),
        }
    }

    /// Reads the directory `p`, or the tarball `p` extracted: a node directory, another
    /// tool's collection, or a cluster directory of them (possibly one level down, as a
    /// tarball usually is). What it holds beside what was read is said; a directory with
    /// nothing to read is an error that names what lies below it.
    fn read_dir_or_tarball(&mut self, p: &Path, is_tarball: bool) -> io::Result<()> {
        if !is_tarball {
            refuse_kernel_dir(p)?;
        }
        let (dir, damage) = if is_tarball {
            let u = unpack(p)?;
            let damage = u.damage().map(str::to_string);
            self.passed_over.extend(damage.clone());
            let d = u.dir().to_path_buf();
            self.extracted.push(u);
            (d, damage)
        } else {
            (p.to_path_buf(), None)
        };
        let read = self.read_dir(&dir, p)?;
        let shown = unread::Shown {
            root: &dir,
            given: p,
        };
        let unread = unread::under(&dir, &read);
        if read.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "{}: no capture here (no glocks, glstats or trace files, no sos report or gfs2_lockcapture output){}{}",
                    p.display(),
                    damage.map_or(String::new(), |d| format!("; {d}")),
                    unread::below(&unread, &shown),
                ),
            ));
        }
        self.passed_over
            .extend(unread::said(&unread, &shown, &read));
        Ok(())
    }

    /// Reads `dir` as a node directory, another tool's collection, or a cluster directory
    /// of them (`given`: the input that holds it); what was read.
    fn read_dir(&mut self, dir: &Path, given: &Path) -> io::Result<Vec<unread::Read>> {
        if is_node_dir(dir) {
            self.nodes.push(node_dir(dir)?);
            return Ok(vec![unread::Read::node_dir(dir)]);
        }
        if self.push_other(dir, given)? {
            return Ok(vec![unread::Read::collection(dir)]);
        }
        let mut read = Vec::new();
        let here = same_fs(dir);
        for sd in subdirs(dir)?.iter().filter(|d| here(d)) {
            if self.push_other(sd, if dir == given { sd } else { given })? {
                read.push(unread::Read::collection(sd));
            } else if is_node_dir(sd) {
                self.nodes.push(node_dir(sd)?);
                read.push(unread::Read::node_dir(sd));
            } else if let Ok(inner) = subdirs(sd) {
                for d in inner.iter().filter(|d| here(d) && is_node_dir(d)) {
                    self.nodes.push(node_dir(d)?);
                    read.push(unread::Read::node_dir(d));
                }
            }
        }
        Ok(read)
    }

    /// One node per name, node id and filesystem: several captures of one node (a capture
    /// now and another a minute later, given side by side) become one node whose snapshots
    /// follow each other in time ([`NodeCapture::absorb`]), so that a wait seen in both is
    /// seen across the time between them, and no two snapshots share a number. Captures of
    /// the node's different filesystems stay apart; one that does not say its filesystem
    /// joins the first of the node's.
    fn join_same_nodes(&mut self) {
        let mut out: Vec<NodeCapture> = Vec::with_capacity(self.nodes.len());
        for n in std::mem::take(&mut self.nodes) {
            match out.iter_mut().find(|x| {
                x.node == n.node
                    && x.nodeid == n.nodeid
                    && (x.fs == n.fs || x.fs.is_none() || n.fs.is_none())
            }) {
                Some(x) => x.absorb(n),
                None => out.push(n),
            }
        }
        self.nodes = out;
    }

    /// Adds the nodes of another tool's collection at `dir` (a sos report, gfs2_lockcapture
    /// output; `given` is the input that held it), and what they lack. False when `dir` is
    /// neither.
    fn push_other(&mut self, dir: &Path, given: &Path) -> io::Result<bool> {
        let (nodes, lacks) = if sos::is_report(dir) {
            let r = sos::read(dir, given)?;
            (r.nodes, r.lacks)
        } else if lockcapture::is_capture(dir) {
            lockcapture::read(dir, given)?
        } else {
            return Ok(false);
        };
        self.nodes.extend(nodes);
        self.lacks.extend(lacks);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_capture_bounds_each_node_s_clock_whatever_its_filesystems() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("cluster.json"),
            r#"{"gathered_by": "n1", "nodes": [
                {"node": "n1", "clock_offset": {"min_s": 0.0, "max_s": 0.0}},
                {"node": "n2", "clock_offset": {"min_s": -0.25, "max_s": 0.5}}]}"#,
        )
        .unwrap();
        // One filesystem: DIR/NODE; several: DIR/FS/NODE.
        for dir in ["n2", "lab_gfs/n2", "lab_data/n2"] {
            let n = d.path().join(dir);
            std::fs::create_dir_all(&n).unwrap();
            std::fs::write(n.join("glocks.0"), "").unwrap();
            let got = node_dir(&n).unwrap().ssh_clock;
            let want = SshClock {
                min_s: -0.25,
                max_s: 0.5,
                gathered_by: "n1".into(),
            };
            assert_eq!(got, Some(want), "{dir}");
        }
        // Not three levels up.
        let deep = d.path().join("a/b/n2");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(node_dir(&deep).unwrap().ssh_clock, None);
    }

    #[test]
    fn file_kinds_name_their_files_and_are_read_back() {
        for k in FileKind::ALL {
            assert_eq!(FileKind::parse(&k.file_name(7)), Some((k, 7)));
            assert_eq!(FileKind::parse(k.name()), Some((k, 0)));
        }
        assert_eq!(FileKind::parse("lkstats.2"), Some((FileKind::Sbstats, 2)));
        assert_eq!(FileKind::parse("glocks.4.xz"), Some((FileKind::Glocks, 4)));
        assert_eq!(
            FileKind::parse("dlm_locks.zst"),
            Some((FileKind::DlmLocks, 0))
        );
        assert_eq!(FileKind::parse("glocks.4.xz.part"), None);
        assert_eq!(FileKind::parse("glocks.x"), None);
        assert_eq!(FileKind::parse("trace_pipe.txt"), None);
    }

    #[test]
    fn a_directory_says_its_lock_table_by_file_or_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let n1 = dir.path().join("n1");
        std::fs::create_dir(&n1).unwrap();
        assert_eq!(lock_table(&n1), None);
        std::fs::write(NodeFile::Table.path_in(&n1), "lab:gfs\n").unwrap();
        assert_eq!(lock_table(&n1).as_deref(), Some("lab:gfs"));
        // Not a lock table: refused, not taken for one.
        for bad in ["", "gfs", "lab:g fs", &format!("lab:{}", "x".repeat(64))] {
            std::fs::write(NodeFile::Table.path_in(&n1), bad).unwrap();
            assert_eq!(lock_table(&n1), None, "{bad:?}");
        }
        // debugfs names a filesystem's directory by its lock table.
        let debugfs = dir.path().join("lab:gfs2");
        std::fs::create_dir(&debugfs).unwrap();
        assert_eq!(lock_table(&debugfs).as_deref(), Some("lab:gfs2"));
    }

    #[test]
    fn first_lines_say_what_a_file_is() {
        let k = |l: &str| sniff_line(l.as_bytes());
        assert_eq!(
            k("G:  s:SH n:2/805b f:Iqob t:SH d:EX/0 a:0 v:0 r:3 m:200"),
            Sniffed::Kind(FileKind::Glocks)
        );
        assert_eq!(
            k("G: n:2/805b rtt:0/0 rttb:0/0 irt:0/0 dcnt: 0 qcnt: 1"),
            Sniffed::Kind(FileKind::Glstats)
        );
        assert_eq!(k("type      cpu:0"), Sniffed::Kind(FileKind::Sbstats));
        assert_eq!(k("id nodeid remid pid xid exflags flags sts grmode rqmode time_ms r_nodeid r_len r_name"), Sniffed::Kind(FileKind::DlmLocks));
        assert_eq!(k("# tracer: nop"), Sniffed::Trace);
        // `trace-cmd report`'s first line.
        assert_eq!(k("cpus=2"), Sniffed::Trace);
        assert_eq!(
            k("gfs2_glock_queue: 254,0 glock 2:8760 queue PR"),
            Sniffed::Trace
        );
        assert_eq!(
            k("glk: snapshot 0 taken (1 filesystem(s))"),
            Sniffed::Unknown
        );
        assert_eq!(k("           mkdir-243     [000] ...1.    59.642391: gfs2_glock_queue: 254,0 glock 2:8760 queue PR"), Sniffed::Trace);
        assert_eq!(k(""), Sniffed::Empty);
        assert_eq!(k("[  12.3] gfs2: fsid=x: G:  s:SH"), Sniffed::Unknown);
    }

    #[test]
    fn cluster_directory_and_loose_files() {
        let caps = discover(&[testdata::path("real/dlm2-6.1")]).unwrap();
        assert_eq!(caps.nodes.len(), 2);
        let n1 = &caps.nodes[0];
        assert_eq!((n1.node.as_str(), n1.nodeid), ("n1", Some(1)));
        assert_eq!(n1.snapshots.len(), 6);
        assert!(n1.snapshots.iter().all(|s| s.time_unix.is_some()
            && s.has(FileKind::Glocks)
            && s.has(FileKind::DlmLocks)));
        assert_eq!(n1.traces.len(), 1);
        let caps = discover(&[
            testdata::path("public/cluster-devel-2019-rename-deadlock/deadlock-host018.glocks"),
            testdata::path("public/cluster-devel-2019-rename-deadlock/deadlock-host019.glocks"),
            testdata::path("real/nolock-6.1/trace_pipe.txt.xz"),
        ])
        .unwrap();
        let names: Vec<&str> = caps.nodes.iter().map(|n| n.node.as_str()).collect();
        // `trace_pipe` names what the file holds, not whose it is: its directory does.
        assert_eq!(
            names,
            ["deadlock-host018", "deadlock-host019", "nolock-6.1"]
        );
        assert_eq!(caps.nodes[2].traces.len(), 1);
        assert!(discover(&[testdata::path("public/glocktop-manpage")]).is_err());
    }

    /// Two captures of one node given side by side: one node, the snapshots in time
    /// order, the files written at a capture's start from the first, those written at its
    /// end from the later one.
    /// Each node's files given one by one, as the kernel names them in every node's
    /// directory: one node per directory, each dump in its snapshot (none dropped); a
    /// file given twice is read once.
    #[test]
    fn loose_files_named_as_the_kernel_names_them_are_their_directory_s_node() {
        let f = |n: &str, file: &str| testdata::path(&format!("real/dlm2-6.1/{n}/{file}"));
        let caps = discover(&[
            f("n1", "glocks.4"),
            f("n2", "glocks.4"),
            f("n1", "glocks.5"),
            f("n1", "dlm_locks.5"),
            f("n1", "trace_pipe.txt.xz"),
            f("n1", "glocks.5"),
        ])
        .unwrap();
        // Node, (snapshot, its kinds) and traces.
        type Read<'a> = (&'a str, Vec<(u32, Vec<FileKind>)>, usize);
        let got: Vec<Read> = caps
            .nodes
            .iter()
            .map(|n| {
                let snaps = n
                    .snapshots
                    .iter()
                    .map(|s| (s.index, s.files.keys().copied().collect()));
                (n.node.as_str(), snaps.collect(), n.traces.len())
            })
            .collect();
        let g = FileKind::Glocks;
        assert_eq!(
            got,
            [
                (
                    "n1",
                    vec![(4, vec![g]), (5, vec![g, FileKind::DlmLocks])],
                    1
                ),
                ("n2", vec![(4, vec![g])], 0),
            ]
        );
        let twice = f("n1", "glocks.5").display().to_string();
        assert_eq!(
            caps.passed_over,
            [format!("{twice}: given twice, read once")]
        );
    }

    /// A tarball of a folder holding a capture and, beside it, other tarballs and a dump
    /// under a name no capture uses: each is named as a member of the tarball, quoted (a
    /// member's name is the tarball's bytes).
    #[test]
    fn what_a_tarball_holds_beside_the_capture_read_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let glocks = std::fs::read(testdata::path("real/dlm2-6.1/n1/glocks.4")).unwrap();
        let mut t = tar::Builder::new(Vec::new());
        let mut add = |path: &str, data: &[u8]| {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            t.append_data(&mut h, path, data).unwrap();
        };
        add("case/n1/glocks.0", &glocks);
        add("case/n1/glocks-before-reboot.txt", &glocks);
        add("case/n1/sosreport-n1.tar.xz", b"");
        add("case/notes.txt", b"the customer says it hangs\n");
        add("case/n1/\x1b[2Jold.tar", b"");
        let tarball = dir.path().join("case.tar");
        std::fs::write(&tarball, t.into_inner().unwrap()).unwrap();
        let caps = discover(std::slice::from_ref(&tarball)).unwrap();
        assert_eq!(caps.nodes.len(), 1);
        let t = tarball.display();
        assert_eq!(
            caps.passed_over,
            [
                format!(
                    "{t}: passed over beside case/n1: case/n1/\\x1b[2Jold.tar (a tarball), \
                     case/n1/sosreport-n1.tar.xz (a tarball). \
                     glk reads one collection where it finds one, not a second beside it (both \
                     may hold the same moments, which would then count twice); give any of \
                     these as an input of its own to read it"
                ),
                format!(
                    "{t}: passed over: case/n1/glocks-before-reboot.txt (a glocks dump). In a \
                     directory glk reads a capture's files by their names (glocks.N, \
                     dlm_locks.N, trace_pipe.txt, trace.dat...); give any of these as an input \
                     of its own to read it"
                ),
            ]
        );
    }

    #[test]
    fn captures_of_one_node_join_their_node_files() {
        let (_t, root) = testdata::scratch_file("join");
        let capture = |name: &str, time: &str, files: &[NodeFile]| {
            let d = root.join(name);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(NodeFile::Node.path_in(&d), "n1\n").unwrap();
            std::fs::write(NodeFile::Nodeid.path_in(&d), "1\n").unwrap();
            std::fs::write(d.join("time.0"), time).unwrap();
            std::fs::write(
                d.join("glocks.0"),
                "G:  s:UN n:2/1 f: t:UN d:EX/0 a:0 v:0 r:2 m:200\n",
            )
            .unwrap();
            for f in files {
                std::fs::write(f.path_in(&d), name).unwrap();
            }
            d
        };
        let later = capture(
            "later",
            "200.0\n",
            &[NodeFile::KernelLog, NodeFile::Cluster],
        );
        let first = capture(
            "first",
            "100.0\n",
            &[NodeFile::Mountinfo, NodeFile::KernelLog],
        );
        for given in [[&first, &later], [&later, &first]] {
            let caps = discover(&given.map(|p| p.clone())).unwrap();
            assert_eq!(caps.nodes.len(), 1);
            check_joined(&caps.nodes[0]);
        }
        assert_eq!(node_dir(&first).unwrap().files.len(), 2);
    }

    fn check_joined(n: &NodeCapture) {
        assert!(n.joined);
        let times: Vec<_> = n.snapshots.iter().map(|s| (s.index, s.time_unix)).collect();
        assert_eq!(times, [(0, Some(100.0)), (1, Some(200.0))]);
        let from = |kind| {
            let p = n.file(kind)?;
            Some(p.parent()?.file_name()?.to_str()?.to_string())
        };
        assert_eq!(from(NodeFile::Mountinfo).as_deref(), Some("first"));
        assert_eq!(from(NodeFile::KernelLog).as_deref(), Some("later"));
        assert_eq!(from(NodeFile::Cluster).as_deref(), Some("later"));
        for kind in [NodeFile::Node, NodeFile::Nodeid, NodeFile::Kernel] {
            assert!(
                !kind.at_end() && n.file(kind).is_none(),
                "{kind:?} is read, not kept"
            );
        }
    }

    /// A tarball cut short (an upload that stopped) gives the members before the cut, and
    /// says where it stopped; one cut inside its first member is an error.
    #[test]
    fn a_tarball_cut_short_keeps_what_came_before_the_cut() {
        let node = testdata::path("real/support-withdraw-6.12/n2/capture/n2");
        let mut b = tar::Builder::new(Vec::new());
        let mut ends = Vec::new();
        for name in ["node", "time.0", "glocks.0", "kernel.log", "dlm_locks.0"] {
            b.append_path_with_name(node.join(name), format!("n2/{name}"))
                .unwrap();
            ends.push((name, b.get_ref().len()));
        }
        let whole = b.into_inner().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let tarball = dir.path().join("capture.tar");
        // Cut inside kernel.log: node, time.0 and glocks.0 are whole.
        std::fs::write(&tarball, &whole[..ends[2].1 + 1024]).unwrap();
        let caps = discover(std::slice::from_ref(&tarball)).unwrap();
        assert_eq!(caps.nodes.len(), 1);
        let snapshot = &caps.nodes[0].snapshots[0];
        let glocks = snapshot.path(FileKind::Glocks).unwrap();
        assert_eq!(
            std::fs::read(glocks).unwrap(),
            std::fs::read(node.join("glocks.0")).unwrap()
        );
        assert_eq!(snapshot.path(FileKind::DlmLocks), None);
        let said = caps.passed_over.join("\n");
        assert!(
            said.starts_with(&format!(
                "{}: damaged or cut short in `n2/kernel.log` after 3 whole member(s)",
                tarball.display()
            )),
            "{said}"
        );
        // Cut inside the first member: nothing to read.
        std::fs::write(&tarball, &whole[..700]).unwrap();
        let e = discover(std::slice::from_ref(&tarball)).unwrap_err();
        assert!(
            e.to_string().starts_with(&tarball.display().to_string()),
            "{e}"
        );
    }

    /// sos writes `TARBALL.md5` beside its tarball, and a shell glob gives both: the
    /// checksum is passed over, said, and not made a node of its own.
    #[test]
    fn a_checksum_beside_a_tarball_is_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let sos = testdata::path("real/support-6.12/n2/sosreport-n2-n2-2026-11-25-gtgzarz.tar.gz");
        let tarball = dir.path().join(sos.file_name().unwrap());
        std::fs::copy(&sos, &tarball).unwrap();
        let md5 = PathBuf::from(format!("{}.md5", tarball.display()));
        std::fs::write(&md5, "f5338db50c63f15d6bd3a79c3ac6b96c\n").unwrap();
        let sha = dir.path().join("capture.tar.sha256");
        std::fs::write(&sha, format!("{}  capture.tar\n", "ab".repeat(32))).unwrap();
        let caps = discover(&[tarball, md5.clone(), sha.clone()]).unwrap();
        let names: Vec<&str> = caps.nodes.iter().map(|n| n.node.as_str()).collect();
        assert_eq!(names, ["n2"]);
        assert_eq!(caps.passed_over.len(), 2, "{:?}", caps.passed_over);
        assert!(caps.passed_over[0].starts_with(&md5.display().to_string()));
        // Alone, a checksum is no capture: an error that names it.
        let e = discover(std::slice::from_ref(&sha)).unwrap_err();
        assert!(
            e.to_string().contains("capture.tar.sha256: a checksum"),
            "{e}"
        );
        // A digest of the wrong length, or a second line, is not a checksum.
        for (name, text) in [
            ("x.md5", "abc\n"),
            ("y.md5", "f5338db50c63f15d6bd3a79c3ac6b96c\nG: s:SH\n"),
        ] {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            assert!(!is_checksum(&p), "{name}");
        }
    }

    #[test]
    fn a_capture_still_being_written_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        for node in ["n1", ".n2.partial-abc123"] {
            let d = dir.path().join(node);
            std::fs::create_dir(&d).unwrap();
            std::fs::copy(
                testdata::path("real/dlm2-6.1/n1/glocks.0"),
                d.join("glocks.0"),
            )
            .unwrap();
        }
        let caps = discover(&[dir.path().to_path_buf()]).unwrap();
        let names: Vec<&str> = caps.nodes.iter().map(|n| n.node.as_str()).collect();
        assert_eq!(names, ["n1"]);
    }
}
