//! sos reports (`sos report`, Red Hat's and others' support bundle) read as one node's
//! capture: recognised by content (a directory with `sos_commands/` and `sos_reports/` or
//! `sos_logs/`, or a tarball holding one), whatever the archive is named.
//!
//! What glk reads from one (see sosreport/sos `sos/report/plugins/{gfs2,dlm}.py`), as one
//! capture of the node per GFS2 filesystem it names ([`crate::filesystems`]):
//! - the gfs2 plugin's copy of `/sys/kernel/debug/gfs2/TABLE` (`glocks`, `glstats`,
//!   `sbstats`, `glockfd`) when the report was made with `-k gfs2.lockdump=on`;
//! - the dlm plugin's `dlm_tool lockdebug -svw LOCKSPACE` of the filesystem's lockspace
//!   (`sos_commands/dlm/dlm_locks_LS`, with `-k dlm.lockdump=on`), read as the DLM lock dump
//!   ([`glockparse::dlm_locks::lockdebug`]);
//! - the process plugin's `ps axo flags,state,uid,pid,ppid,...` as the process table (who
//!   descends from whom: a waiter and the ancestor whose flock it inherited);
//! - the node's DLM node id from `dlm_tool dump` (`our_nodeid N`);
//! - the node's name from the report's `hostname`, else `uname -a`'s, else the archive's
//!   name;
//! - the state around the locks, read as `glk capture`'s files of it are: the gfs2
//!   plugin's copy of the filesystem's sysfs `withdraw`, the kernel plugin's `dmesg` (the
//!   kernel log), the corosync plugin's `corosync-quorumtool -s` and the dlm plugin's
//!   `dlm_tool ls` (quorum, and lockspaces stopped for recovery).
//!
//! What a report lacks is said once, with the option that would have collected it
//! ([`Report::lacks`]). sos 4.0 (Debian 12's) declares the gfs2 option `lockdump` but reads
//! it as `gfs2lockdump`, so its reports never hold a glocks dump.

use std::io;
use std::path::{Path, PathBuf};

use crate::{FileKind, NodeCapture, NodeFile, Snapshot};

/// A sos report read as a node's captures.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The node's capture of each GFS2 filesystem the report holds (one, of no
    /// filesystem, where it holds none), each with one snapshot.
    pub nodes: Vec<NodeCapture>,
    /// What the report does not hold that glk reads, each with how to collect it.
    pub lacks: Vec<String>,
}

/// Whether `dir` is the top of a sos report.
pub fn is_report(dir: &Path) -> bool {
    dir.join("sos_commands").is_dir()
        && (dir.join("sos_reports").is_dir() || dir.join("sos_logs").is_dir())
}

/// The node's name: the report's `hostname` (host plugin), else the node name in `uname
/// -a` (kernel plugin), else its directory's name without `sosreport-`, the date and
/// random suffix sos adds, and the `--label` or `--case-id` the report was made with (its
/// manifest's command line, which a report cut short may lack).
fn node_name(dir: &Path) -> String {
    let first_word_of = |files: &[&str], word: usize| {
        files.iter().find_map(|f| {
            let text = std::fs::read_to_string(dir.join(f)).ok()?;
            Some(text.split_whitespace().nth(word)?.to_string())
        })
    };
    let hostname = ["hostname", "sos_commands/host/hostname", "etc/hostname"];
    // `Linux NODENAME RELEASE ...`.
    let uname = ["uname", "sos_commands/kernel/uname_-a"];
    if let Some(name) = first_word_of(&hostname, 0).or_else(|| first_word_of(&uname, 1)) {
        return name;
    }
    let name = dir
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let stem = name.strip_prefix("sosreport-").unwrap_or(&name);
    // NAME-YYYY-MM-DD-RANDOM
    let parts: Vec<&str> = stem.split('-').collect();
    let dated = parts.len() >= 5
        && parts[parts.len() - 4].len() == 4
        && parts[parts.len() - 4].bytes().all(|b| b.is_ascii_digit());
    let mut name = if dated {
        parts[..parts.len() - 4].join("-")
    } else {
        stem.to_string()
    };
    let manifest =
        std::fs::read_to_string(dir.join("sos_reports/manifest.json")).unwrap_or_default();
    for opt in ["--case-id", "--label"] {
        let given = manifest
            .split(&format!("{opt} "))
            .nth(1)
            .or_else(|| manifest.split(&format!("{opt}=")).nth(1))
            .and_then(|v| v.split([' ', '"']).next());
        if let Some(v) = given.filter(|v| !v.is_empty()) {
            if let Some(host) = name.strip_suffix(&format!("-{v}")) {
                name = host.to_string();
            }
        }
    }
    name
}

/// `our_nodeid N` of the dlm plugin's `dlm_tool dump`.
fn nodeid(dir: &Path) -> Option<u64> {
    let dump = std::fs::read_to_string(dir.join("sos_commands/dlm/dlm_tool_dump")).ok()?;
    dump.lines()
        .find_map(|l| l.split("our_nodeid ").nth(1))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// The files of a directory, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// The commands' outputs that hold the state around the locks, each read as the node file
/// of `glk capture` that holds the same commands' output.
const STATE: [(NodeFile, &str); 3] = [
    (NodeFile::KernelLog, "sos_commands/kernel/dmesg"),
    (
        NodeFile::Cluster,
        "sos_commands/corosync/corosync-quorumtool_-s",
    ),
    (NodeFile::Cluster, "sos_commands/dlm/dlm_tool_ls"),
];

/// Reads the sos report at `dir`; `given` is the input that held it (the tarball, or
/// `dir`), which the lacks name.
pub fn read(dir: &Path, given: &Path) -> io::Result<Report> {
    let name = node_name(dir);
    let at = format!("{name} (sos report {})", given.display());
    let mut lacks = Vec::new();
    // The gfs2 plugin's copies of debugfs and sysfs: a directory per filesystem, named by
    // its lock table; each filesystem is a capture of the node.
    let mut tables: Vec<Option<String>> = ["sys/kernel/debug/gfs2", "sys/fs/gfs2"]
        .iter()
        .flat_map(|d| crate::subdirs(&dir.join(d)).unwrap_or_default())
        .filter_map(|fs| Some(Some(fs.file_name()?.to_string_lossy().into_owned())))
        .collect();
    tables.sort();
    tables.dedup();
    if tables.is_empty() {
        tables.push(None);
    }
    let mut nodes: Vec<NodeCapture> = tables
        .into_iter()
        .map(|table| {
            let mut s = filesystem_snapshot(dir, table.as_deref());
            if let Some(p) = process_table(dir) {
                s.set(FileKind::Procs, p);
            }
            NodeCapture {
                node: name.clone(),
                nodeid: nodeid(dir),
                fs: table.as_deref().and_then(crate::table_named),
                kernel: ["uname", "sos_commands/kernel/uname_-a"]
                    .iter()
                    .find_map(|f| crate::read_kernel(&dir.join(f))),
                snapshots: vec![s],
                ..NodeCapture::default()
            }
        })
        .collect();
    for node in &mut nodes {
        for (kind, file) in STATE {
            node.add_if_file(kind, dir.join(file));
        }
    }
    if !nodes.iter().any(|n| n.snapshots[0].has(FileKind::Glocks)) {
        lacks.push(format!(
            "{at}: no GFS2 glocks dump: sos collects it with `-k gfs2.lockdump=on` (sos 4.0's \
             gfs2 plugin ignores that option; `cat /sys/kernel/debug/gfs2/*/glocks` or \
             `glk capture` collect it)"
        ));
    }
    if !nodes.iter().any(|n| n.snapshots[0].has(FileKind::DlmLocks)) {
        lacks.push(format!(
            "{at}: no DLM lock dump: sos collects it with `-k dlm.lockdump=on` (dlm_tool \
             lockdebug -svw)"
        ));
    }
    lacks.push(format!(
        "{at}: no gfs2 or dlm trace (sos records none): `glk capture --trace SECS` records one"
    ));
    Ok(Report { nodes, lacks })
}

/// The snapshot of the filesystem of lock table `table` (None: the report names no GFS2
/// filesystem): the gfs2 plugin's copy of its debugfs files and of its sysfs
/// `withdraw`, and the dlm plugin's lockdebug of its lockspace (where no filesystem is
/// named, the first lockspace's).
fn filesystem_snapshot(dir: &Path, table: Option<&str>) -> Snapshot {
    let mut s = Snapshot::default();
    if let Some(t) = table {
        let fs = dir.join("sys/kernel/debug/gfs2").join(t);
        for kind in FileKind::DEBUGFS {
            s.set_if_file(kind, fs.join(kind.name()));
        }
        s.set_if_file(
            FileKind::Sysfs,
            dir.join("sys/fs/gfs2").join(t).join("withdraw"),
        );
    }
    let dumps = files(&dir.join("sos_commands/dlm"))
        .into_iter()
        .filter_map(|p| {
            let ls = p
                .file_name()?
                .to_str()?
                .strip_prefix("dlm_locks_")?
                .to_string();
            Some((ls, p))
        });
    let dlm_locks = match table {
        Some(t) => dumps
            .filter(|(ls, _)| ls == crate::filesystems::lockspace(t))
            .map(|(_, p)| p)
            .next(),
        None => dumps.map(|(_, p)| p).next(),
    };
    if let Some(p) = dlm_locks {
        s.set(FileKind::DlmLocks, p);
    }
    s
}

/// The process plugin's `ps axo flags,state,uid,pid,ppid,...`.
fn process_table(dir: &Path) -> Option<PathBuf> {
    files(&dir.join("sos_commands/process"))
        .into_iter()
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("ps_axo_flags_state_uid_pid_ppid_pgid_sid"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_the_report_or_its_directory() {
        let (d, r) = testdata::scratch_file("sosreport-node-a-lab-2026-11-25-gtgzarz");
        std::fs::create_dir_all(r.join("sos_commands/dlm")).unwrap();
        std::fs::create_dir_all(r.join("sos_logs")).unwrap();
        assert!(is_report(&r));
        assert!(!is_report(d.path()));
        assert_eq!(node_name(&r), "node-a-lab");
        std::fs::create_dir_all(r.join("sos_reports")).unwrap();
        std::fs::write(
            r.join("sos_reports/manifest.json"),
            r#"{"version": "4.0", "cmdline": "report --batch --label lab"}"#,
        )
        .unwrap();
        assert_eq!(node_name(&r), "node-a");
        // Without the manifest, `uname -a` names the node; `hostname` comes first.
        std::fs::remove_file(r.join("sos_reports/manifest.json")).unwrap();
        std::fs::write(r.join("uname"), "Linux node-b 6.12.117 #1 SMP x86_64\n").unwrap();
        assert_eq!(node_name(&r), "node-b");
        std::fs::write(r.join("hostname"), "node-a\n").unwrap();
        assert_eq!(node_name(&r), "node-a");
        std::fs::write(
            r.join("sos_commands/dlm/dlm_tool_dump"),
            "4:42 our_nodeid 3\n",
        )
        .unwrap();
        let rep = read(&r, &r).unwrap();
        assert_eq!(rep.nodes.len(), 1);
        assert_eq!(
            (rep.nodes[0].node.as_str(), rep.nodes[0].nodeid),
            ("node-a", Some(3))
        );
        assert_eq!(rep.lacks.len(), 3, "{:?}", rep.lacks);
        assert!(rep.lacks[0].contains("-k gfs2.lockdump=on"));
        assert!(rep.lacks[1].contains("-k dlm.lockdump=on"));
    }

    #[test]
    fn each_filesystem_of_a_report_is_a_capture() {
        let (_d, r) = testdata::scratch_file("sosreport-n1-2026-11-28-abcdefg");
        std::fs::create_dir_all(r.join("sos_commands/dlm")).unwrap();
        std::fs::create_dir_all(r.join("sos_logs")).unwrap();
        for (table, ls) in [("lab:data", "data"), ("lab:gfs", "gfs")] {
            let fs = r.join("sys/kernel/debug/gfs2").join(table);
            std::fs::create_dir_all(&fs).unwrap();
            std::fs::write(fs.join("glocks"), "").unwrap();
            let sysfs = r.join("sys/fs/gfs2").join(table);
            std::fs::create_dir_all(&sysfs).unwrap();
            std::fs::write(sysfs.join("withdraw"), "0\n").unwrap();
            std::fs::write(
                r.join("sos_commands/dlm").join(format!("dlm_locks_{ls}")),
                "",
            )
            .unwrap();
        }
        let rep = read(&r, &r).unwrap();
        let got: Vec<(Option<&str>, Vec<String>)> = rep
            .nodes
            .iter()
            .map(|n| {
                let s = &n.snapshots[0];
                let files = [FileKind::Glocks, FileKind::Sysfs, FileKind::DlmLocks]
                    .iter()
                    .map(|k| {
                        let p = s.path(*k).unwrap();
                        let rel = p.strip_prefix(&r).unwrap();
                        rel.display().to_string()
                    })
                    .collect();
                (n.fs.as_deref(), files)
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    Some("lab:data"),
                    vec![
                        "sys/kernel/debug/gfs2/lab:data/glocks".to_string(),
                        "sys/fs/gfs2/lab:data/withdraw".into(),
                        "sos_commands/dlm/dlm_locks_data".into()
                    ]
                ),
                (
                    Some("lab:gfs"),
                    vec![
                        "sys/kernel/debug/gfs2/lab:gfs/glocks".to_string(),
                        "sys/fs/gfs2/lab:gfs/withdraw".into(),
                        "sos_commands/dlm/dlm_locks_gfs".into()
                    ]
                )
            ]
        );
        // Only the trace is lacking.
        assert_eq!(rep.lacks.len(), 1, "{:?}", rep.lacks);
    }
}
