//! Capture bundles: what `glk capture` writes and every reader (`glk top`, `glk stats`,
//! the analysis engine) finds.
//!
//! A node's capture is a directory of snapshots `KIND.N` (`glocks.0`, `glstats.0`,
//! `sbstats.0`, `glockfd.0`, `dlm_locks.0`, `dlm_waiters.0`, `procs.0` and `locks.0` (the
//! node's tasks and `/proc/locks`, see [`procs`]), `time.0` holding the epoch seconds the
//! snapshot started, `gfs2_sysfs.0` the filesystem's sysfs state, see [`health`]) plus
//! trace text (`trace_pipe.txt`, compressed or not), and optionally `node` (its name),
//! `nodeid` (its DLM node id), `mountinfo`, `kernel.log` (the kernel's log buffer) and
//! `cluster.txt` (corosync's and dlm_controld's view). A cluster capture is a
//! directory of node directories; either may be packed as a tarball (`.tar`, `.tar.zst`,
//! `.tar.gz`, `.tar.xz`). A loose file (a glocks dump, a trace) is a one-file node named
//! after the file.

#![forbid(unsafe_code)]

pub mod atomic;
pub mod health;
pub mod procs;

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The files of one snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// The `N` of the `KIND.N` file names.
    pub index: u32,
    /// Epoch seconds when the snapshot started (`time.N`).
    pub time_unix: Option<f64>,
    /// debugfs `glocks`.
    pub glocks: Option<PathBuf>,
    /// debugfs `glstats`.
    pub glstats: Option<PathBuf>,
    /// debugfs `sbstats` (`lkstats` on old kernels).
    pub sbstats: Option<PathBuf>,
    /// debugfs `glockfd`.
    pub glockfd: Option<PathBuf>,
    /// The DLM lockspace's `_locks` dump.
    pub dlm_locks: Option<PathBuf>,
    /// The DLM lockspace's `_waiters` dump.
    pub dlm_waiters: Option<PathBuf>,
    /// The node's tasks ([`procs`] format).
    pub procs: Option<PathBuf>,
    /// A copy of `/proc/locks`.
    pub locks: Option<PathBuf>,
    /// The filesystem's sysfs state (`gfs2_sysfs.N`, [`health::Sysfs`]).
    pub sysfs: Option<PathBuf>,
}

/// One node's capture.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeCapture {
    /// The name the capture recorded (`node` file), else the directory or file name.
    pub node: String,
    /// The node's DLM node id: `nodeid` file, else `our_nodeid N` in dlm_controld.log.
    pub nodeid: Option<u64>,
    /// The snapshots, by index.
    pub snapshots: Vec<Snapshot>,
    /// Saved trace text files (compressed or not).
    pub traces: Vec<PathBuf>,
    /// A copy of `/proc/self/mountinfo` (`mountinfo`), to tell GFS2 devices apart.
    pub mountinfo: Option<PathBuf>,
    /// The kernel's log buffer at the end of the capture (`kernel.log`).
    pub kernel_log: Option<PathBuf>,
    /// The cluster tools' view (`cluster.txt`, [`health::Cluster`]).
    pub cluster: Option<PathBuf>,
}

impl NodeCapture {
    /// The sysfs state file of the node's last snapshot that has one.
    pub fn last_sysfs(&self) -> Option<&Path> {
        self.snapshots.iter().rev().find_map(|s| s.sysfs.as_deref())
    }
}

/// All nodes found, plus the extracted tarballs (removed on drop).
#[derive(Debug, Default)]
pub struct Captures {
    /// Every node, in the order found.
    pub nodes: Vec<NodeCapture>,
    extracted: Vec<Unpacked>,
}

/// A tarball extracted into a private temporary directory (mode 0700, an unpredictable
/// name, made by `tempfile`), which is removed on drop.
#[derive(Debug)]
pub struct Unpacked {
    dir: tempfile::TempDir,
}

impl Unpacked {
    /// Where the tarball was extracted.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// Extracts a capture tarball (`.tar`, `.tar.zst`, `.tar.gz`, `.tar.xz`).
pub fn unpack(tarball: &Path) -> io::Result<Unpacked> {
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", tarball.display()));
    let dir = tempfile::Builder::new()
        .prefix("glk-capture-")
        .tempdir()
        .map_err(named)?;
    extract(tarball, dir.path()).map_err(named)?;
    Ok(Unpacked { dir })
}

const KINDS: [&str; 11] = [
    "glocks",
    "glstats",
    "sbstats",
    "lkstats",
    "glockfd",
    "dlm_locks",
    "dlm_waiters",
    "procs",
    "locks",
    "gfs2_sysfs",
    "time",
];

/// `KIND` or `KIND.N` → (kind, N).
fn snapshot_file(name: &str) -> Option<(&'static str, u32)> {
    let (base, n) = match name.rsplit_once('.') {
        Some((b, n)) if !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()) => {
            (b, n.parse().ok()?)
        }
        _ => (name, 0),
    };
    KINDS.iter().find(|k| **k == base).map(|k| (*k, n))
}

fn is_trace(name: &str) -> bool {
    name.starts_with("trace_pipe") || name.starts_with("trace.txt") || name == "trace"
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
    [".tar", ".tar.zst", ".tar.gz", ".tgz", ".tar.xz"]
        .iter()
        .any(|e| n.ends_with(e))
}

fn is_node_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten().any(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            e.path().is_file()
                && (snapshot_file(&n).is_some_and(|(k, _)| k != "time") || is_trace(&n))
        })
    })
}

/// A node directory's DLM node id: its `nodeid` file, else `our_nodeid N` in its
/// `dlm_controld.log`.
pub fn read_nodeid(dir: &Path) -> Option<u64> {
    if let Ok(s) = std::fs::read_to_string(dir.join("nodeid")) {
        return s.trim().parse().ok();
    }
    let log = std::fs::read_to_string(dir.join("dlm_controld.log")).ok()?;
    log.lines()
        .find_map(|l| l.split("our_nodeid ").nth(1))
        .and_then(|v| v.trim().split(' ').next()?.parse().ok())
}

/// Reads one node directory.
pub fn node_dir(dir: &Path) -> io::Result<NodeCapture> {
    let name = std::fs::read_to_string(dir.join("node"))
        .ok()
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
        if is_trace(&n) {
            traces.push(p);
            continue;
        }
        let Some((kind, idx)) = snapshot_file(&n) else {
            continue;
        };
        let s = snaps.entry(idx).or_insert_with(|| Snapshot {
            index: idx,
            ..Snapshot::default()
        });
        match kind {
            "glocks" => s.glocks = Some(p),
            "glstats" => s.glstats = Some(p),
            "sbstats" | "lkstats" => s.sbstats = Some(p),
            "glockfd" => s.glockfd = Some(p),
            "dlm_locks" => s.dlm_locks = Some(p),
            "dlm_waiters" => s.dlm_waiters = Some(p),
            "procs" => s.procs = Some(p),
            "locks" => s.locks = Some(p),
            "gfs2_sysfs" => s.sysfs = Some(p),
            _ => {
                s.time_unix = std::fs::read_to_string(&p)
                    .ok()
                    .and_then(|t| t.trim().parse().ok())
            }
        }
    }
    let mountinfo = Some(dir.join("mountinfo")).filter(|p| p.is_file());
    let kernel_log = Some(dir.join("kernel.log")).filter(|p| p.is_file());
    let cluster = Some(dir.join("cluster.txt")).filter(|p| p.is_file());
    Ok(NodeCapture {
        node: name,
        nodeid: read_nodeid(dir),
        snapshots: snaps.into_values().collect(),
        traces,
        mountinfo,
        kernel_log,
        cluster,
    })
}

/// What a loose file holds, from its first line.
fn sniff(path: &Path) -> io::Result<&'static str> {
    let mut head = vec![0u8; 4096];
    let mut r = glockparse::input::open(path)?;
    let mut n = 0;
    while n < head.len() {
        match r.read(&mut head[n..])? {
            0 => break,
            k => n += k,
        }
    }
    let text = String::from_utf8_lossy(&head[..n]);
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    Ok(
        if first.starts_with("G: n:") || first.starts_with("G:  n:") {
            "glstats"
        } else if first.starts_with("type") && first.contains("cpu:") {
            "sbstats"
        } else if first.starts_with("id nodeid") {
            "dlm_locks"
        } else if traceparse::line::parse(first.as_bytes())
            .is_ok_and(|l| matches!(l, traceparse::Line::Event(_)))
            || first.starts_with("# tracer")
        {
            "trace"
        } else {
            "glocks"
        },
    )
}

fn loose_file(path: &Path) -> io::Result<NodeCapture> {
    let stem = path
        .file_name()
        .and_then(|n| n.to_str())
        .map(|n| n.split('.').next().unwrap_or(n).to_string())
        .unwrap_or_else(|| path.display().to_string());
    let mut node = NodeCapture {
        node: stem,
        ..NodeCapture::default()
    };
    let mut s = Snapshot::default();
    match sniff(path)? {
        "glstats" => s.glstats = Some(path.to_path_buf()),
        "sbstats" => s.sbstats = Some(path.to_path_buf()),
        "dlm_locks" => s.dlm_locks = Some(path.to_path_buf()),
        "trace" => node.traces.push(path.to_path_buf()),
        _ => s.glocks = Some(path.to_path_buf()),
    }
    if node.traces.is_empty() {
        node.snapshots.push(s);
    }
    Ok(node)
}

fn extract(tarball: &Path, into: &Path) -> io::Result<()> {
    std::fs::create_dir_all(into)?;
    let mut ar = tar::Archive::new(io::BufReader::with_capacity(
        1 << 16,
        glockparse::input::open(tarball)?,
    ));
    for entry in ar.entries()? {
        let mut e = entry?;
        // unpack_in refuses paths that would escape the directory.
        e.unpack_in(into)?;
    }
    Ok(())
}

/// Finds the nodes behind `paths` (node directories, cluster directories, tarballs,
/// loose files). Loose files with the same name stem are one node.
pub fn discover(paths: &[PathBuf]) -> io::Result<Captures> {
    let mut caps = Captures::default();
    for p in paths {
        let meta = std::fs::metadata(p)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
        let dir = if meta.is_file() && is_tarball(p) {
            let u = unpack(p)?;
            let d = u.dir().to_path_buf();
            caps.extracted.push(u);
            d
        } else if meta.is_file() {
            let n = loose_file(p)?;
            match caps
                .nodes
                .iter_mut()
                .find(|x| x.node == n.node && x.nodeid.is_none())
            {
                Some(existing) => {
                    existing.traces.extend(n.traces);
                    for s in n.snapshots {
                        match existing.snapshots.first_mut() {
                            Some(e) => merge(e, s),
                            None => existing.snapshots.push(s),
                        }
                    }
                }
                None => caps.nodes.push(n),
            }
            continue;
        } else {
            p.clone()
        };
        if is_node_dir(&dir) {
            caps.nodes.push(node_dir(&dir)?);
            continue;
        }
        // A cluster directory (possibly one level down, as a tarball usually is).
        let mut found = false;
        for sd in &subdirs(&dir)? {
            if is_node_dir(sd) {
                caps.nodes.push(node_dir(sd)?);
                found = true;
            } else if let Ok(inner) = subdirs(sd) {
                for d in inner.iter().filter(|d| is_node_dir(d)) {
                    caps.nodes.push(node_dir(d)?);
                    found = true;
                }
            }
        }
        if !found {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "{}: no capture here (no glocks, glstats or trace files)",
                    p.display()
                ),
            ));
        }
    }
    Ok(caps)
}

fn merge(into: &mut Snapshot, s: Snapshot) {
    into.glocks = into.glocks.take().or(s.glocks);
    into.glstats = into.glstats.take().or(s.glstats);
    into.sbstats = into.sbstats.take().or(s.sbstats);
    into.dlm_locks = into.dlm_locks.take().or(s.dlm_locks);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_directory_and_loose_files() {
        let caps = discover(&[testdata::path("real/dlm2-6.1")]).unwrap();
        assert_eq!(caps.nodes.len(), 2);
        let n1 = &caps.nodes[0];
        assert_eq!((n1.node.as_str(), n1.nodeid), ("n1", Some(1)));
        assert_eq!(n1.snapshots.len(), 6);
        assert!(n1
            .snapshots
            .iter()
            .all(|s| s.time_unix.is_some() && s.glocks.is_some() && s.dlm_locks.is_some()));
        assert_eq!(n1.traces.len(), 1);
        let caps = discover(&[
            testdata::path("public/cluster-devel-2019-rename-deadlock/deadlock-host018.glocks"),
            testdata::path("public/cluster-devel-2019-rename-deadlock/deadlock-host019.glocks"),
            testdata::path("real/nolock-6.1/trace_pipe.txt.xz"),
        ])
        .unwrap();
        let names: Vec<&str> = caps.nodes.iter().map(|n| n.node.as_str()).collect();
        assert_eq!(
            names,
            ["deadlock-host018", "deadlock-host019", "trace_pipe"]
        );
        assert_eq!(caps.nodes[2].traces.len(), 1);
        assert!(discover(&[testdata::path("public/glocktop-manpage")]).is_err());
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
