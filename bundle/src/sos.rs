//! sos reports (`sos report`, Red Hat's and others' support bundle) read as one node's
//! capture: recognised by content (a directory with `sos_commands/` and `sos_reports/` or
//! `sos_logs/`, or a tarball holding one), whatever the archive is named.
//!
//! What glk reads from one (see sosreport/sos `sos/report/plugins/{gfs2,dlm}.py`):
//! - the gfs2 plugin's copy of `/sys/kernel/debug/gfs2/*` (`glocks`, `glstats`, `sbstats`,
//!   `glockfd`) when the report was made with `-k gfs2.lockdump=on`;
//! - the dlm plugin's `dlm_tool lockdebug -svw LOCKSPACE` (`sos_commands/dlm/dlm_locks_LS`,
//!   with `-k dlm.lockdump=on`), read as the DLM lock dump
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

/// A sos report read as a node.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The node, with one snapshot of what the report holds.
    pub node: NodeCapture,
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
    let mut s = Snapshot::default();
    let mut lacks = Vec::new();
    let at = format!("{name} (sos report {})", given.display());
    // The gfs2 plugin's copy of debugfs: one directory per filesystem.
    let gfs2: Vec<PathBuf> = crate::subdirs(&dir.join("sys/kernel/debug/gfs2")).unwrap_or_default();
    let table = gfs2.first().and_then(|fs| {
        for kind in FileKind::DEBUGFS {
            s.set_if_file(kind, fs.join(kind.name()));
        }
        Some(fs.file_name()?.to_string_lossy().into_owned())
    });
    let lockspace = table
        .as_deref()
        .map(|t| t.rsplit(':').next().unwrap_or(t).to_string());
    // Its copy of sysfs's `withdraw`: the same filesystem's, else the first one's.
    let sysfs = crate::subdirs(&dir.join("sys/fs/gfs2")).unwrap_or_default();
    let fs_sysfs = sysfs
        .iter()
        .find(|d| d.file_name().and_then(|n| n.to_str()) == table.as_deref())
        .or(sysfs.first());
    if let Some(d) = fs_sysfs {
        s.set_if_file(FileKind::Sysfs, d.join("withdraw"));
    }
    if gfs2.len() > 1 {
        lacks.push(format!(
            "{at}: {} GFS2 filesystems; only {} is read",
            gfs2.len(),
            gfs2[0].display()
        ));
    }
    if !s.has(FileKind::Glocks) {
        lacks.push(format!(
            "{at}: no GFS2 glocks dump: sos collects it with `-k gfs2.lockdump=on` (sos 4.0's \
             gfs2 plugin ignores that option; `cat /sys/kernel/debug/gfs2/*/glocks` or \
             `glk capture` collect it)"
        ));
    }
    // The dlm plugin's lockdebug of each lockspace: the filesystem's, else the first.
    let dumps: Vec<PathBuf> = files(&dir.join("sos_commands/dlm"))
        .into_iter()
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("dlm_locks_"))
        })
        .collect();
    let dlm_locks = lockspace
        .and_then(|ls| {
            dumps
                .iter()
                .find(|p| {
                    p.file_name().and_then(|n| n.to_str()) == Some(&format!("dlm_locks_{ls}"))
                })
                .cloned()
        })
        .or_else(|| dumps.first().cloned());
    let procs = files(&dir.join("sos_commands/process"))
        .into_iter()
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("ps_axo_flags_state_uid_pid_ppid_pgid_sid"))
        });
    for (kind, found) in [(FileKind::DlmLocks, dlm_locks), (FileKind::Procs, procs)] {
        if let Some(p) = found {
            s.set(kind, p);
        }
    }
    if !s.has(FileKind::DlmLocks) {
        lacks.push(format!(
            "{at}: no DLM lock dump: sos collects it with `-k dlm.lockdump=on` (dlm_tool \
             lockdebug -svw)"
        ));
    }
    lacks.push(format!(
        "{at}: no gfs2 or dlm trace (sos records none): `glk capture --trace SECS` records one"
    ));
    let mut node = NodeCapture {
        node: name,
        nodeid: nodeid(dir),
        kernel: ["uname", "sos_commands/kernel/uname_-a"]
            .iter()
            .find_map(|f| crate::read_kernel(&dir.join(f))),
        snapshots: vec![s],
        ..NodeCapture::default()
    };
    for (kind, file) in STATE {
        node.add_if_file(kind, dir.join(file));
    }
    Ok(Report { node, lacks })
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
        assert_eq!(
            (rep.node.node.as_str(), rep.node.nodeid),
            ("node-a", Some(3))
        );
        assert_eq!(rep.lacks.len(), 3, "{:?}", rep.lacks);
        assert!(rep.lacks[0].contains("-k gfs2.lockdump=on"));
        assert!(rep.lacks[1].contains("-k dlm.lockdump=on"));
    }
}
