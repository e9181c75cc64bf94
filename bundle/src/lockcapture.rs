//! gfs2_lockcapture's output (gfs2-utils: `gfs2_lockcapture -o DIR`, a `.tar.bz2` of
//! `gfs2_lockcapture-DATE/runN/NODE/`) read as one node per node directory and GFS2
//! filesystem ([`crate::filesystems`]), one snapshot per run: each run's
//! `gfs2/TABLE/{glocks,glstats,sbstats,glockfd}` and the filesystem's lockspace's
//! `dlm/LOCKSPACE/LOCKSPACE_locks` (the debugfs DLM dump, else its `_lockdebug`), its copy
//! of every process's `/proc/PID/{status,stack,cmdline}` as the process table
//! ([`crate::procs::read_proc_dir`]), the node's name and DLM node id from
//! `hostinformation.txt` (`HOSTNAME=`, `NODE_ID=`). Recognised by content: a directory
//! whose `run1/*/` holds `hostinformation.txt`.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use crate::{FileKind, NodeCapture, Snapshot};

/// The runs of a capture directory (`runN`), by N.
fn runs(dir: &Path) -> BTreeMap<u32, PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let n = e.file_name().to_str()?.strip_prefix("run")?.parse().ok()?;
                    e.path().is_dir().then(|| (n, e.path()))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The node directories of a run (those with `hostinformation.txt`), sorted.
fn node_dirs(run: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(run)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.join("hostinformation.txt").is_file())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Whether `dir` is gfs2_lockcapture's output directory.
pub fn is_capture(dir: &Path) -> bool {
    runs(dir).values().any(|r| !node_dirs(r).is_empty())
}

/// `KEY=value` of `hostinformation.txt`.
fn info(node: &Path, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(node.join("hostinformation.txt")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The lock tables of a run's node directory (`gfs2/TABLE/`); one None where it has none.
fn tables(node: &Path) -> Vec<Option<String>> {
    let tables: Vec<Option<String>> = crate::subdirs(&node.join("gfs2"))
        .unwrap_or_default()
        .iter()
        .filter_map(|d| Some(Some(d.file_name()?.to_string_lossy().into_owned())))
        .collect();
    if tables.is_empty() {
        vec![None]
    } else {
        tables
    }
}

/// One run of one node's filesystem of lock table `table` as a snapshot: its debugfs
/// files and its lockspace's DLM dumps (None: the node's first lockspace's).
fn snapshot(index: u32, node: &Path, table: Option<&str>) -> Snapshot {
    let mut s = Snapshot::new(index);
    if let Some(t) = table {
        let fs = node.join("gfs2").join(t);
        for kind in FileKind::DEBUGFS {
            s.set_if_file(kind, fs.join(kind.name()));
        }
    }
    let ls = match table {
        Some(t) => Some(node.join("dlm").join(crate::filesystems::lockspace(t))),
        None => crate::subdirs(&node.join("dlm"))
            .ok()
            .and_then(|v| v.into_iter().next()),
    };
    if let Some(ls) = ls.filter(|d| d.is_dir()) {
        let name = ls
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        // The `_locks` dump, else the `_lockdebug` one.
        let dump = [
            ls.join(format!("{name}_locks")),
            ls.join(format!("{name}_lockdebug")),
        ];
        if let Some(p) = dump.into_iter().find(|p| p.is_file()) {
            s.set(FileKind::DlmLocks, p);
        }
        s.set_if_file(FileKind::DlmWaiters, ls.join(format!("{name}_waiters")));
    }
    // Its copy of every process's `/proc/PID/{status,stack,cmdline}`.
    let procs = node.join("proc");
    if procs.is_dir() {
        s.set(FileKind::Procs, procs);
    }
    s
}

/// Reads gfs2_lockcapture's output at `dir`: its nodes (one per node directory name and
/// filesystem, a snapshot per run) and what it lacks, naming `given` (the input that held
/// it).
pub fn read(dir: &Path, given: &Path) -> io::Result<(Vec<NodeCapture>, Vec<String>)> {
    let mut nodes: BTreeMap<(String, Option<String>), NodeCapture> = BTreeMap::new();
    for (n, run) in runs(dir) {
        for nd in node_dirs(&run) {
            let dir_name = nd
                .file_name()
                .map_or_else(String::new, |x| x.to_string_lossy().into_owned());
            let name = info(&nd, "HOSTNAME").unwrap_or(dir_name);
            for table in tables(&nd) {
                let key = (name.clone(), table.clone());
                let node = nodes.entry(key).or_insert_with(|| NodeCapture {
                    node: name.clone(),
                    nodeid: info(&nd, "NODE_ID").and_then(|v| v.parse().ok()),
                    fs: table.as_deref().and_then(crate::table_named),
                    kernel: info(&nd, "UNAMEA").and_then(|v| traceparse::raw::kernel_release(&v)),
                    ..NodeCapture::default()
                });
                let s = snapshot(n.saturating_sub(1), &nd, table.as_deref());
                node.snapshots.push(s);
            }
        }
    }
    if nodes.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "{}: no node in this gfs2_lockcapture output",
                given.display()
            ),
        ));
    }
    let names: std::collections::BTreeSet<&str> = nodes.keys().map(|(n, _)| n.as_str()).collect();
    let lacks = names
        .iter()
        .map(|n| {
            format!(
                "{n} (gfs2_lockcapture {}): no gfs2 or dlm trace and no /proc/locks \
                 (gfs2_lockcapture records neither): `glk capture --trace SECS` records both",
                given.display()
            )
        })
        .collect();
    Ok((nodes.into_values().collect(), lacks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_snapshots_of_their_nodes() {
        let d = tempfile::tempdir().unwrap();
        for run in [1, 2] {
            let n = d.path().join(format!("run{run}/node-a"));
            std::fs::create_dir_all(n.join("gfs2/lab:gfs")).unwrap();
            std::fs::create_dir_all(n.join("dlm/gfs")).unwrap();
            std::fs::write(
                n.join("hostinformation.txt"),
                "HOSTNAME=a1\nUNAMEA=Linux a1 6.12.117+deb13-amd64 #1 SMP PREEMPT_DYNAMIC \
                 Debian 6.12.117-1 (2026-11-12) x86_64 GNU/Linux\nNODE_ID=3\n",
            )
            .unwrap();
            std::fs::write(n.join("gfs2/lab:gfs/glocks"), "").unwrap();
            std::fs::write(n.join("dlm/gfs/gfs_lockdebug"), "").unwrap();
        }
        assert!(is_capture(d.path()));
        assert!(!is_capture(&d.path().join("run1")));
        let (nodes, lacks) = read(d.path(), Path::new("x.tar.bz2")).unwrap();
        assert_eq!(nodes.len(), 1);
        let n = &nodes[0];
        assert_eq!(
            (n.node.as_str(), n.nodeid, n.snapshots.len()),
            ("a1", Some(3), 2)
        );
        assert_eq!(n.kernel.as_deref(), Some("6.12.117+deb13-amd64"));
        assert_eq!(n.snapshots[1].index, 1);
        assert!(n.snapshots[0].has(FileKind::Glocks));
        assert!(n.snapshots[0]
            .path(FileKind::DlmLocks)
            .unwrap()
            .ends_with("gfs_lockdebug"));
        assert!(lacks[0].contains("a1 (gfs2_lockcapture x.tar.bz2)"));
    }

    #[test]
    fn each_filesystem_is_a_capture_with_its_own_lockspace() {
        let d = tempfile::tempdir().unwrap();
        let n = d.path().join("run1/node-a");
        for (table, ls) in [("lab:data", "data"), ("lab:gfs", "gfs")] {
            std::fs::create_dir_all(n.join("gfs2").join(table)).unwrap();
            std::fs::create_dir_all(n.join("dlm").join(ls)).unwrap();
            std::fs::write(n.join("gfs2").join(table).join("glocks"), "").unwrap();
            std::fs::write(n.join("dlm").join(ls).join(format!("{ls}_locks")), "").unwrap();
        }
        // Another lockspace (lvmlockd's), sorted first, is no filesystem's.
        std::fs::create_dir_all(n.join("dlm/lvm_global")).unwrap();
        std::fs::write(n.join("dlm/lvm_global/lvm_global_locks"), "").unwrap();
        std::fs::write(n.join("hostinformation.txt"), "HOSTNAME=a1\n").unwrap();
        let (nodes, lacks) = read(d.path(), Path::new("x")).unwrap();
        let got: Vec<(Option<&str>, String)> = nodes
            .iter()
            .map(|n| {
                let dump = n.snapshots[0].path(FileKind::DlmLocks).unwrap();
                (
                    n.fs.as_deref(),
                    dump.file_name().unwrap().to_string_lossy().into(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (Some("lab:data"), "data_locks".to_string()),
                (Some("lab:gfs"), "gfs_locks".to_string())
            ]
        );
        assert_eq!(lacks.len(), 1, "{lacks:?}");
    }
}
