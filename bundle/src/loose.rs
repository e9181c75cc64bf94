//! Loose files: a glocks dump, a DLM dump, a trace or a trace-cmd `trace.dat` given by
//! itself, read as a node by what its first line says it is ([`crate::sniff`]).
//!
//! Which node a loose file is of: the stem of its name (`host018` of `host018.glocks`,
//! so that `host018.glocks` and `host018.glstats` are one node), except where the stem
//! only says what the file holds (`glocks.4`, `trace_pipe.txt`, `trace.dat`: the names the
//! kernel, glk and trace-cmd give every node's file) or where loose files in different
//! directories share it: then the name of its directory (`n1` of `n1/glocks.4`). Two
//! nodes' dumps never become one node, and a node's second dump of a kind is its next
//! snapshot, never dropped.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

use crate::{is_saved_trace, is_trace, sniff, FileKind, NodeCapture, Snapshot, Sniffed};

/// The node name of every loose file among `files` (see the module docs).
pub(crate) fn node_names(files: &[&Path]) -> BTreeMap<PathBuf, String> {
    let mut dirs_of_stem: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        dirs_of_stem.entry(stem(f)).or_default().insert(dir_name(f));
    }
    files
        .iter()
        .map(|f| {
            let s = stem(f);
            let name = if names_a_kind(s) || dirs_of_stem[s].len() > 1 {
                dir_name(f)
            } else {
                s.to_string()
            };
            (f.to_path_buf(), name)
        })
        .collect()
}

/// The file name up to its first dot (`host018` of `host018.glocks.xz`).
fn stem(path: &Path) -> &str {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.split('.').next().unwrap_or(name)
}

/// Whether a stem names what a file holds rather than whose it is.
fn names_a_kind(stem: &str) -> bool {
    stem.is_empty() || FileKind::parse(stem).is_some() || is_trace(stem)
}

/// The name of the directory `path` is in (of the current directory for a bare name).
fn dir_name(path: &Path) -> String {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// A loose file read as node `node`: a trace, or one snapshot holding it (its `N` where
/// the file is named `KIND.N`). A trace-named file with nothing in it is an error: it is
/// the kernel's live `trace_pipe` or `trace` (tracefs says 0 for their size), which would
/// be read forever and taken from whoever traces, or an empty file.
pub(crate) fn read(path: &Path, node: String) -> io::Result<NodeCapture> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    if name.is_some_and(|n| is_trace(&n) && !is_saved_trace(path, &n)) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{}: no saved trace (nothing in it: the kernel's live trace, or an empty \
                 file); to trace live, run glk trace or glk capture --trace SECS",
                path.display()
            ),
        ));
    }
    let mut n = NodeCapture {
        node,
        ..NodeCapture::default()
    };
    let index = path
        .file_name()
        .and_then(|f| FileKind::parse(&f.to_string_lossy()))
        .map_or(0, |(_, i)| i);
    let mut s = Snapshot::new(index);
    match sniff(path)?.0 {
        // A trace.dat is read by traceparse::dat.
        Sniffed::Trace | Sniffed::TraceDat => n.traces.push(path.to_path_buf()),
        Sniffed::Kind(k) => s.set(k, path.to_path_buf()),
        // Anything else is read as glocks text: kernel logs with glock dumps in them, or
        // a file the glocks parser reports line by line.
        Sniffed::Empty | Sniffed::Unknown => s.set(FileKind::Glocks, path.to_path_buf()),
    }
    if n.traces.is_empty() {
        n.snapshots.push(s);
    }
    Ok(n)
}

impl NodeCapture {
    /// Takes in a loose file of this node ([`read`]): its trace, or its snapshot's file
    /// into the snapshot of the same `N` that has no file of its kind yet, else into a
    /// snapshot of its own after the others. Where two of the node's files then share a
    /// name, citations name whole paths ([`NodeCapture::cite_file`]).
    pub(crate) fn add_loose(&mut self, other: NodeCapture) {
        let names = |n: &NodeCapture| -> Vec<PathBuf> {
            let files = n.snapshots.iter().flat_map(|s| s.files.values());
            let names = files.chain(&n.traces).filter_map(|p| p.file_name());
            names.map(PathBuf::from).collect()
        };
        let mine = names(self);
        self.joined |= names(&other).iter().any(|n| mine.contains(n));
        self.traces.extend(other.traces);
        for s in other.snapshots {
            self.add_loose_snapshot(s);
        }
    }

    fn add_loose_snapshot(&mut self, s: Snapshot) {
        let free = |into: &Snapshot| s.files.keys().all(|k| !into.has(*k));
        if let Some(same) = self
            .snapshots
            .iter_mut()
            .find(|x| x.index == s.index && free(x))
        {
            same.files.extend(s.files);
            return;
        }
        let taken = self.snapshots.iter().any(|x| x.index == s.index);
        let next = self
            .snapshots
            .iter()
            .map(|x| x.index + 1)
            .max()
            .unwrap_or(0);
        let index = if taken { next.max(s.index) } else { s.index };
        self.snapshots.push(Snapshot { index, ..s });
        self.snapshots.sort_by_key(|x| x.index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stem_that_names_the_kind_gives_the_directory_name() {
        let f = [
            "n1/glocks.4",
            "n2/glocks.4",
            "n1/trace.dat",
            "n2/trace_pipe.txt.xz",
            "host018.glocks",
            "host018.glstats",
            "a/report.txt",
            "b/report.txt",
        ]
        .map(|p| Path::new("/case").join(p));
        let f: Vec<&Path> = f.iter().map(PathBuf::as_path).collect();
        let names = node_names(&f);
        let got: Vec<&str> = f.iter().map(|p| names[*p].as_str()).collect();
        assert_eq!(
            got,
            ["n1", "n2", "n1", "n2", "host018", "host018", "a", "b"]
        );
    }

    fn snap(index: u32, kind: FileKind, path: &str) -> NodeCapture {
        let mut s = Snapshot::new(index);
        s.set(kind, PathBuf::from(path));
        NodeCapture {
            node: "n1".into(),
            snapshots: vec![s],
            ..NodeCapture::default()
        }
    }

    #[test]
    fn a_second_dump_of_a_kind_is_the_next_snapshot() {
        let mut n = snap(0, FileKind::Glocks, "x/glocks");
        n.add_loose(snap(0, FileKind::DlmLocks, "x/dlm_locks"));
        n.add_loose(snap(0, FileKind::Glocks, "y/glocks"));
        n.add_loose(snap(4, FileKind::Glocks, "x/glocks.4"));
        n.add_loose(snap(4, FileKind::Glocks, "y/glocks.4"));
        let got: Vec<(u32, Vec<&Path>)> = n
            .snapshots
            .iter()
            .map(|s| (s.index, s.files.values().map(PathBuf::as_path).collect()))
            .collect();
        let p = Path::new;
        assert_eq!(
            got,
            [
                (0, vec![p("x/glocks"), p("x/dlm_locks")]),
                (1, vec![p("y/glocks")]),
                (4, vec![p("x/glocks.4")]),
                (5, vec![p("y/glocks.4")]),
            ]
        );
        assert!(
            n.joined,
            "two files named glocks: citations need their paths"
        );
    }
}
