//! Which GFS2 filesystem each capture is of, and the inputs cut down to one filesystem.
//!
//! A node with several GFS2 filesystems mounted has a capture of each: `glk capture` writes
//! `DIR/FS/NODE/` (each with its `table`), a sos report and gfs2_lockcapture copy each
//! filesystem's debugfs directory. Glock numbers repeat between filesystems (every one has
//! a `1/2` transaction glock and its own journals and rgrps), so one filesystem's
//! snapshots must never be read as another's next snapshot, nor its trace events as
//! another's: the analyses read one filesystem at a time ([`Captures::keep_filesystem`]),
//! and a node's trace, which holds every filesystem's events, is cut to that filesystem's
//! device and DLM lockspace ([`FsIds`]).

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use traceparse::Decoded;

use crate::{Captures, NodeCapture, NodeFile};

/// The DLM lockspace of lock table `CLUSTER:FS`: its part after the colon.
pub fn lockspace(table: &str) -> &str {
    table.rsplit(':').next().unwrap_or(table)
}

/// The cluster of lock table `CLUSTER:FS`: its part before the colon (None without one).
pub fn cluster(table: &str) -> Option<&str> {
    table.rsplit_once(':').map(|(c, _)| c)
}

/// Whether `name`, as a user gives it (the lock table, or its lockspace), names `table`.
pub fn names(name: &str, table: &str) -> bool {
    name == table || name == lockspace(table)
}

/// What tells one filesystem's trace events and file locks from another's on a node: the
/// device its gfs2 events and `/proc/locks` lines carry, and the lockspace id its dlm
/// events carry. Unknown parts let every event through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FsIds {
    /// The filesystem's device `(major, minor)`.
    pub dev: Option<(u32, u32)>,
    /// Its DLM lockspace's global id (`ls_id` of the dlm events, `h_lockspace` of messages).
    pub ls_id: Option<u32>,
}

impl FsIds {
    /// Whether a decoded trace line is kept: a gfs2 event on this filesystem's device, a
    /// dlm event of its lockspace or of none (lowcomms, POSIX lock requests), and every
    /// other line.
    pub fn keeps(&self, d: &Decoded<'_>) -> bool {
        match d {
            Decoded::Gfs2 { dev, .. } => self.dev.is_none_or(|x| x == (dev.major, dev.minor)),
            Decoded::Dlm { event, .. } => match (self.ls_id, event.ls_id()) {
                (Some(mine), Some(theirs)) => mine == theirs,
                _ => true,
            },
            _ => true,
        }
    }
}

/// The global id dlm_controld gives lockspace `name`, the `ls_id` of its dlm events: the
/// CRC-32 of `dlm:ls:NAME` with its terminating NUL (dlm_controld's `cpgname_to_crc`,
/// the zlib CRC-32), which it writes to the kernel's `/sys/kernel/dlm/NAME/id` and
/// `dlm_tool ls` prints as `id 0x…`.
pub fn lockspace_global_id(name: &str) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(b"dlm:ls:");
    h.update(name.as_bytes());
    h.update(&[0]);
    h.finalize()
}

/// A GFS2 filesystem of a node: its lock table, and the ids its trace events carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedFs {
    /// Its lock table, `CLUSTER:FS`.
    pub table: String,
    /// Its device and lockspace id.
    pub ids: FsIds,
}

/// The GFS2 filesystems that the glk capture a saved trace lies in names for the trace's
/// node: the filesystem of the node directory holding `trace` and, in a capture of several
/// (`DIR/FS/NODE/`, each `FS` its lock table with `_` for `:`, as `glk capture` writes
/// it), the node's directories of the others. None where the trace lies in no capture's
/// node directory that names its filesystem.
pub fn beside_trace(trace: &Path) -> Vec<NamedFs> {
    let Some(own) = trace.parent() else {
        return Vec::new();
    };
    let named = |dir: &Path| {
        let node = crate::node_dir(dir).ok()?;
        let ids = node.fs_ids();
        node.fs.map(|table| NamedFs { table, ids })
    };
    let Some(first) = named(own) else {
        return Vec::new();
    };
    let layout_name = |table: &str| table.replace(':', "_");
    let fs_dir = own
        .parent()
        .filter(|d| d.file_name() == Some(layout_name(&first.table).as_ref()));
    let (Some(root), Some(node)) = (fs_dir.and_then(Path::parent), own.file_name()) else {
        return vec![first];
    };
    let mut out = vec![first];
    for other in crate::subdirs(root).unwrap_or_default() {
        let dir = other.join(node);
        if dir == own || !dir.is_dir() {
            continue;
        }
        match named(&dir) {
            Some(fs) if other.file_name() == Some(layout_name(&fs.table).as_ref()) => out.push(fs),
            _ => {}
        }
    }
    out
}

/// The id of lockspace `name` in `dlm_tool ls` output (`name NAME` then `id 0xHEX`), as
/// `cluster.txt` holds it.
fn lockspace_id(text: &str, name: &str) -> Option<u32> {
    let mut current: Option<&str> = None;
    for l in text.lines() {
        let mut words = l.split_whitespace();
        match (words.next(), words.next()) {
            (Some("name"), v) => current = v,
            (Some("id"), Some(v)) if current == Some(name) => {
                return u32::from_str_radix(v.strip_prefix("0x")?, 16).ok();
            }
            _ => {}
        }
    }
    None
}

impl NodeCapture {
    /// The ids of the filesystem this capture is of (none when it does not say
    /// which it is): the device of its GFS2 mount in the node's `mountinfo` copy (the one
    /// at the mount point its sysfs state names, else the only GFS2 mount), and its
    /// lockspace's id in the node's `dlm_tool ls` output, else as dlm_controld derives it
    /// from the lockspace's name ([`lockspace_global_id`]: every kernel with dlm events,
    /// 5.16 on, has its lockspaces made by a dlm_controld that derives them so).
    pub fn fs_ids(&self) -> FsIds {
        let Some(table) = self.fs.as_deref() else {
            return FsIds::default();
        };
        let mount = self
            .last_sysfs()
            .and_then(|p| crate::health::Sysfs::read(p).ok())
            .and_then(|s| s.mount().map(std::path::PathBuf::from));
        let dev = self.file(NodeFile::Mountinfo).and_then(|p| {
            let text = std::fs::read(p).ok()?;
            let gfs2: Vec<_> = crate::mounts::parse(&text)
                .into_iter()
                .filter(|m| m.fs_type == "gfs2")
                .collect();
            match &mount {
                Some(at) => gfs2.iter().find(|m| &m.mount_point == at)?.dev,
                None if gfs2.len() == 1 => gfs2[0].dev,
                None => None,
            }
        });
        let ls_id = self
            .files_of(NodeFile::Cluster)
            .filter_map(|p| crate::read_text(p).ok())
            .find_map(|text| lockspace_id(&text, lockspace(table)))
            .or_else(|| Some(lockspace_global_id(lockspace(table))));
        FsIds { dev, ls_id }
    }
}

impl Captures {
    /// The filesystems the nodes say they are of (lock tables), sorted.
    pub fn filesystems(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.nodes.iter().filter_map(|n| n.fs.as_deref()).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Keeps the nodes of one filesystem, `only` (a lock table or its lockspace), and
    /// those that do not say theirs; without `only`, inputs of several filesystems are an
    /// error that names them. A node's traces, written once beside one of its
    /// filesystems' snapshots, go to the capture of the node that is kept.
    pub fn keep_filesystem(&mut self, only: Option<&str>) -> io::Result<()> {
        let Some(chosen) = self.chosen_filesystem(only)? else {
            return Ok(());
        };
        let (kept, other): (Vec<NodeCapture>, Vec<NodeCapture>) = std::mem::take(&mut self.nodes)
            .into_iter()
            .partition(|n| n.fs.as_deref().is_none_or(|t| t == chosen));
        self.nodes = kept;
        for o in other {
            let same = self
                .nodes
                .iter_mut()
                .find(|n| n.node == o.node && n.nodeid == o.nodeid && n.fs.is_some());
            if let Some(n) = same {
                for t in o.traces {
                    if !n.traces.contains(&t) {
                        n.traces.push(t);
                    }
                }
            }
        }
        Ok(())
    }

    /// The lock table `only` names among the inputs' filesystems; None where there is
    /// nothing to choose (no `only`, and one filesystem or none).
    fn chosen_filesystem(&self, only: Option<&str>) -> io::Result<Option<String>> {
        let fss = self.filesystems();
        if let Some(t) = only.and_then(|o| fss.iter().find(|t| names(o, t))) {
            return Ok(Some(t.to_string()));
        }
        let why = match only {
            None if fss.len() <= 1 => return Ok(None),
            None => format!(
                "these inputs hold {}: give --fs with one of them (its lock table, or the \
                 name after the colon) to read it",
                self.filesystems_named()
            ),
            Some(o) if fss.is_empty() => format!(
                "--fs {o:?}: no input says which GFS2 filesystem it is of (a capture's \
                 `table` file, a debugfs directory named by its lock table)"
            ),
            Some(o) => format!(
                "--fs {o:?}: no such GFS2 filesystem; these inputs hold {}",
                self.filesystems_named()
            ),
        };
        Err(io::Error::new(io::ErrorKind::InvalidInput, why))
    }

    /// The ids of node `node`'s filesystem where its captures that say theirs are all of
    /// one (as after [`Captures::keep_filesystem`]), else none (every event kept).
    pub fn fs_ids_of(&self, node: &str) -> FsIds {
        let mut of_node = self
            .nodes
            .iter()
            .filter(|n| n.node == node && n.fs.is_some());
        match of_node.next() {
            Some(first) if of_node.all(|n| n.fs == first.fs) => first.fs_ids(),
            _ => FsIds::default(),
        }
    }

    /// `2 GFS2 filesystems: lab:a (nodes n1, n2), lab:b (node n1)`.
    fn filesystems_named(&self) -> String {
        let mut by_fs: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for n in &self.nodes {
            if let Some(t) = n.fs.as_deref() {
                by_fs.entry(t).or_default().push(&n.node);
            }
        }
        let parts: Vec<String> = by_fs
            .iter()
            .map(|(t, nodes)| {
                let noun = if nodes.len() == 1 { "node" } else { "nodes" };
                format!("{t} ({noun} {})", nodes.join(", "))
            })
            .collect();
        format!("{} GFS2 filesystems: {}", by_fs.len(), parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lockspace_ids_are_read_from_dlm_tool_ls() {
        let ls = "## dlm_tool ls\ndlm lockspaces\nname          clvmd\nid            \
                  0x00000001\nflags         0x00000000\n\nname          gfs\nid            \
                  0x3df8322a\nflags         0x00000000\n";
        assert_eq!(lockspace_id(ls, "gfs"), Some(0x3df8_322a));
        assert_eq!(lockspace_id(ls, "clvmd"), Some(1));
        assert_eq!(lockspace_id(ls, "data"), None);
        assert!(names("gfs", "lab:gfs") && names("lab:gfs", "lab:gfs"));
        assert!(!names("lab", "lab:gfs"));
        assert_eq!((cluster("lab:gfs"), cluster("gfs")), (Some("lab"), None));
    }

    /// Every lockspace that `dlm_tool ls` lists in the fixtures (ids that dlm_controld gave
    /// on kernels 5.10 to 6.12) has the id derived from its name.
    #[test]
    fn lockspace_ids_are_derived_from_names_as_dlm_controld_does() {
        let mut checked = std::collections::BTreeSet::new();
        for p in testdata::files("real", |n| n == "cluster.txt") {
            let text = std::fs::read_to_string(&p).unwrap();
            let listed = text.lines().filter_map(|l| l.strip_prefix("name "));
            for name in listed.map(str::trim) {
                let id = lockspace_id(&text, name).unwrap_or_else(|| panic!("{p:?}: {name}"));
                assert_eq!(lockspace_global_id(name), id, "{p:?}: {name}");
                checked.insert((name.to_string(), id));
            }
        }
        let names: Vec<&str> = checked.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["data", "gfs"], "{checked:x?}");
        assert_eq!(lockspace_global_id("data"), 2_858_078_307);
    }

    #[test]
    fn a_filesystem_keeps_its_own_events_and_the_others_lines() {
        let fs = FsIds {
            dev: Some((254, 2)),
            ls_id: Some(2_858_078_307),
        };
        let lines = [
            ("gfs2_promote: 254,2 glock 2:4657 promote first EX", true),
            ("gfs2_promote: 254,1 glock 2:4657 promote first EX", false),
            (
                "dlm_bast: ls_id=2858078307 lkb_id=1 mode=PR res_name=2020",
                true,
            ),
            (
                "dlm_bast: ls_id=1039675946 lkb_id=1 mode=PR res_name=2020",
                false,
            ),
            ("dlm_send: nodeid=2 ret=112", true),
            (
                "sched_process_exec: filename=/bin/true pid=7 old_pid=7",
                true,
            ),
        ];
        for (body, kept) in lines {
            let line = format!("           sh-1 [000] ..... 5.000001: {body}");
            let d = traceparse::decode_line(line.as_bytes()).unwrap();
            assert_eq!(fs.keeps(&d), kept, "{body}");
            assert!(FsIds::default().keeps(&d), "{body}");
        }
    }

    fn node(name: &str, fs: Option<&str>, traces: &[&str]) -> NodeCapture {
        NodeCapture {
            node: name.into(),
            fs: fs.map(str::to_string),
            traces: traces.iter().map(Into::into).collect(),
            ..NodeCapture::default()
        }
    }

    #[test]
    fn one_filesystem_is_kept_with_its_nodes_traces() {
        let caps = || Captures {
            nodes: vec![
                node("n1", Some("lab:a"), &["a/n1/trace_pipe.txt"]),
                node("n2", Some("lab:a"), &["a/n2/trace_pipe.txt"]),
                node("n1", Some("lab:b"), &[]),
                node("loose", None, &["x.txt"]),
            ],
            ..Captures::default()
        };
        let err = caps().keep_filesystem(None).unwrap_err().to_string();
        assert!(
            err.contains("2 GFS2 filesystems: lab:a (nodes n1, n2), lab:b (node n1)"),
            "{err}"
        );
        let mut c = caps();
        let err = c.keep_filesystem(Some("lab:c")).unwrap_err().to_string();
        assert!(
            err.contains("no such GFS2 filesystem; these inputs hold 2"),
            "{err}"
        );
        c.keep_filesystem(Some("b")).unwrap();
        let kept: Vec<(&str, usize)> = c
            .nodes
            .iter()
            .map(|n| (n.node.as_str(), n.traces.len()))
            .collect();
        assert_eq!(kept, [("n1", 1), ("loose", 1)]);
        let mut one = Captures {
            nodes: vec![node("n1", Some("lab:a"), &[])],
            ..Captures::default()
        };
        one.keep_filesystem(None).unwrap();
        one.keep_filesystem(Some("a")).unwrap();
        assert_eq!(one.nodes.len(), 1);
        let mut none = Captures {
            nodes: vec![node("n1", None, &[])],
            ..Captures::default()
        };
        none.keep_filesystem(None).unwrap();
        let err = none.keep_filesystem(Some("a")).unwrap_err().to_string();
        assert!(err.contains("no input says"), "{err}");
    }
}
