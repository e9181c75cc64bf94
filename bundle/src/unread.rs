//! What a directory given to glk holds beside what glk read of it: another collection
//! (a glk capture, a sos report, gfs2_lockcapture output, a tarball) beside the one read,
//! and files that read as kernel dumps or traces under names a capture does not use
//! (`n1/glocks.txt`, trace-cmd's `report.txt` beside its `trace.dat`).
//!
//! glk reads one collection where it finds one and never adds a second found beside it:
//! a support engineer's folder of a node often holds the same moments collected by
//! several tools, which read together would count every demote twice. But nothing given
//! is passed over in silence: each such path is named, with how to read it. The search
//! goes as deep as [`crate::discover`] looks for captures (two levels), and one level into
//! each node directory read; it stays on the directory's filesystem and opens only files
//! with something in them, so that a directory given by mistake (`/`) costs no read of
//! the kernel's own files.

use std::path::{Path, PathBuf};

use crate::{
    is_checksum, is_node_dir, is_tarball, is_trace, lockcapture, same_fs, sniff, sos, subdirs,
    FileKind, NodeFile, Sniffed,
};

/// How deep below a directory given the search goes (as deep as `discover` looks).
const DEPTH: usize = 2;

/// The most paths named one by one in a line; the rest are counted.
const NAMED: usize = 10;

/// Something read of a directory given.
#[derive(Debug, Clone)]
pub(crate) struct Read {
    path: PathBuf,
    /// Another tool's collection, whose reader decides what of it is read: nothing in it
    /// is said to be passed over. A node directory is read by its files' names.
    whole: bool,
}

impl Read {
    /// A node directory, read by its files' names.
    pub(crate) fn node_dir(path: &Path) -> Read {
        Read {
            path: path.to_path_buf(),
            whole: false,
        }
    }

    /// Another tool's collection, read whole by its reader.
    pub(crate) fn collection(path: &Path) -> Read {
        Read {
            path: path.to_path_buf(),
            whole: true,
        }
    }
}

/// A path below a directory given that glk did not read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Unread {
    path: PathBuf,
    what: What,
}

/// What an unread path is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum What {
    /// A collection: `a sos report`...
    Collection(&'static str),
    /// A file that reads as a dump or trace: `a glocks dump`...
    Dump(&'static str),
}

/// How paths below a directory given are named to the user: relative to it (inside an
/// extracted tarball, to the tarball's top), quoted.
pub(crate) struct Shown<'a> {
    /// The directory searched (a tarball's extraction).
    pub root: &'a Path,
    /// The input as given.
    pub given: &'a Path,
}

impl Shown<'_> {
    /// `p` relative to the directory given, quoted: a tarball's member names are its
    /// bytes, which must not write on the terminal.
    fn path(&self, p: &Path) -> String {
        use std::os::unix::ffi::OsStrExt;
        match p.strip_prefix(self.root) {
            Ok(rel) if !rel.as_os_str().is_empty() => {
                glockparse::quote::plain(rel.as_os_str().as_bytes()).into_owned()
            }
            _ => self.given.display().to_string(),
        }
    }
}

/// What `dir` holds that glk did not read, given what it read of it; sorted by path.
pub(crate) fn under(dir: &Path, read: &[Read]) -> Vec<Unread> {
    let mut out = Vec::new();
    walk(dir, 0, read, &mut out);
    for r in read.iter().filter(|r| !r.whole) {
        beside_node_files(&r.path, &mut out);
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The entries of `dir` that are not hidden (a capture still being written is hidden,
/// see [`subdirs`]) and on its filesystem (as `find -xdev`: a directory given by mistake,
/// `/`, is not searched into `/proc`, whose `kmsg` would block a read), sorted.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let here = same_fs(dir);
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .map(|e| e.path())
                .filter(|p| here(p))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The unread collections and dumps in `dir` and below, down to [`DEPTH`] below the
/// directory given, outside what was read.
fn walk(dir: &Path, depth: usize, read: &[Read], out: &mut Vec<Unread>) {
    if depth == DEPTH {
        return;
    }
    for e in entries(dir) {
        if read.iter().any(|r| e.starts_with(&r.path)) {
            continue;
        }
        let holds_read = read.iter().any(|r| r.path.starts_with(&e));
        if let Some(w) = collection(&e).filter(|_| !holds_read) {
            out.push(Unread {
                path: e,
                what: What::Collection(w),
            });
        } else if e.is_dir() {
            walk(&e, depth + 1, read, out);
        } else if let Some(w) = dump(&e) {
            out.push(Unread {
                path: e,
                what: What::Dump(w),
            });
        }
    }
}

/// The collections in a node directory read, and its dumps that its reader passes over
/// because of their names.
fn beside_node_files(node_dir: &Path, out: &mut Vec<Unread>) {
    for e in entries(node_dir) {
        let name = e.file_name().map(|n| n.to_string_lossy().into_owned());
        let what = match collection(&e) {
            Some(w) => What::Collection(w),
            None if name.as_deref().is_some_and(read_by_name) => continue,
            None => match dump(&e) {
                Some(w) => What::Dump(w),
                None => continue,
            },
        };
        out.push(Unread { path: e, what });
    }
}

/// Whether a node directory's reader ([`crate::node_dir`]) reads a file of this name.
fn read_by_name(name: &str) -> bool {
    let name = crate::uncompressed_name(name);
    let node_files = [
        NodeFile::Node,
        NodeFile::Nodeid,
        NodeFile::Kernel,
        NodeFile::Table,
    ];
    is_trace(name)
        || FileKind::parse(name).is_some()
        || node_files
            .iter()
            .chain(&NodeFile::KEPT)
            .any(|f| f.name() == name)
        || name == "dlm_controld.log"
}

/// What collection `path` is, if it is one.
fn collection(path: &Path) -> Option<&'static str> {
    if path.is_file() {
        return is_tarball(path).then_some("a tarball");
    }
    if !path.is_dir() {
        None
    } else if sos::is_report(path) {
        Some("a sos report")
    } else if lockcapture::is_capture(path) {
        Some("gfs2_lockcapture output")
    } else if is_node_dir(path) {
        Some("a capture")
    } else {
        let holds = |d: &PathBuf| is_node_dir(d) || sos::is_report(d) || lockcapture::is_capture(d);
        subdirs(path)
            .is_ok_and(|sd| sd.iter().any(holds))
            .then_some("a capture")
    }
}

/// What dump or trace the file `path` reads as, if it reads as one. Only a file with
/// something in it is read: a saved dump has a size, where the kernel's own files (proc,
/// sysfs, debugfs) say 0.
fn dump(path: &Path) -> Option<&'static str> {
    let saved = std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() > 0);
    if !saved || is_checksum(path) {
        return None;
    }
    match sniff(path).ok()?.0 {
        Sniffed::Kind(FileKind::Glocks) => Some("a glocks dump"),
        Sniffed::Kind(FileKind::Glstats) => Some("a glstats dump"),
        Sniffed::Kind(FileKind::Sbstats) => Some("an sbstats table"),
        Sniffed::Kind(FileKind::DlmLocks) => Some("a DLM lock dump"),
        Sniffed::Kind(_) => Some("a capture file"),
        Sniffed::Trace => Some("trace text"),
        Sniffed::TraceDat => Some("a trace-cmd trace.dat"),
        Sniffed::Empty | Sniffed::Unknown => None,
    }
}

impl Unread {
    /// Its path and what it is: `n1/capture (a capture)`.
    fn brief(&self, shown: &Shown) -> String {
        let (What::Collection(w) | What::Dump(w)) = self.what;
        format!("{} ({w})", shown.path(&self.path))
    }
}

/// The lines saying what of a directory given was passed over: one for the collections,
/// one for the files that read as dumps or traces, each naming its paths (at most
/// [`NAMED`], then how many more), why, and how to read them.
pub(crate) fn said(unread: &[Unread], shown: &Shown, read: &[Read]) -> Vec<String> {
    let (collections, dumps): (Vec<&Unread>, Vec<&Unread>) = unread
        .iter()
        .partition(|u| matches!(u.what, What::Collection(_)));
    let given = shown.given.display();
    let mut lines = Vec::new();
    if !collections.is_empty() {
        lines.push(format!(
            "{given}: passed over beside {}: {}. glk reads one collection where it finds \
             one, not a second beside it (both may hold the same moments, which would then \
             count twice); give any of these as an input of its own to read it",
            beside(read, shown),
            named_up_to(collections.iter().map(|u| u.brief(shown)), NAMED),
        ));
    }
    if !dumps.is_empty() {
        lines.push(format!(
            "{given}: passed over: {}. In a directory glk reads a capture's files by their \
             names (glocks.N, dlm_locks.N, trace_pipe.txt, trace.dat...); give any of these \
             as an input of its own to read it",
            named_up_to(dumps.iter().map(|u| u.brief(shown)), NAMED),
        ));
    }
    lines
}

/// What was read of a directory given: `n1, n2`, or `the capture files in it` where it
/// is a node directory itself.
fn beside(read: &[Read], shown: &Shown) -> String {
    match read {
        [r] if r.path == shown.root => "the capture files in it".to_string(),
        _ => named_up_to(read.iter().map(|r| shown.path(&r.path)), 3),
    }
}

/// For a directory of which nothing was read: `; below it, give one of these as an
/// input: PATH (WHAT), ...`, or nothing when there is nothing below.
pub(crate) fn below(unread: &[Unread], shown: &Shown) -> String {
    if unread.is_empty() {
        return String::new();
    }
    format!(
        "; below it, give one of these as an input: {}",
        named_up_to(unread.iter().map(|u| u.brief(shown)), NAMED)
    )
}

/// The first `n` items, then how many more: `a, b, c and 4 more`.
fn named_up_to(items: impl Iterator<Item = String>, n: usize) -> String {
    let all: Vec<String> = items.collect();
    let mut s = all[..all.len().min(n)].join(", ");
    if all.len() > n {
        s += &format!(" and {} more", all.len() - n);
    }
    s
}
