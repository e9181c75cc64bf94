//! Turning command-line paths into the kernel files to read: a file as given, the live
//! files of a debugfs directory, the nodes of any other directory or tarball as
//! `glk analyze` finds them ([`bundle::discover`]), or nothing, meaning every GFS2
//! filesystem in debugfs.

use std::io;

use analysis::refresh::companions::Sources;
use bundle::FileKind;
use std::path::{Path, PathBuf};

pub use analysis::refresh::Input;
use bundle::live::is_debugfs;

/// The debugfs mount points listed in this process's mountinfo.
pub fn debugfs_mounts() -> Vec<PathBuf> {
    bundle::mounts::points_of(&bundle::mounts::of_this_process(), "debugfs")
}

/// The debugfs root: the one given, else the first mounted.
pub fn debugfs_root(given: Option<&Path>) -> io::Result<PathBuf> {
    match given {
        Some(d) => Ok(d.to_path_buf()),
        None => debugfs_mounts()
            .into_iter()
            .next()
            .ok_or_else(|| debugfs_unmounted("")),
    }
}

/// The error for a node where debugfs is not mounted, with how to mount it and `or`
/// (another way out).
fn debugfs_unmounted(or: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!(
            "debugfs is not mounted: mount it with `{}`{or}",
            bundle::MOUNT_DEBUGFS
        ),
    )
}

/// GFS2 mount points, for error messages.
fn gfs2_mounts() -> Vec<PathBuf> {
    bundle::mounts::points_of(&bundle::mounts::of_this_process(), "gfs2")
}

/// Every `<debugfs>/gfs2/<table>` directory.
pub fn gfs2_debugfs_dirs() -> io::Result<Vec<PathBuf>> {
    let mounts = debugfs_mounts();
    if mounts.is_empty() {
        return Err(debugfs_unmounted(
            " or give the path of a saved glocks file",
        ));
    }
    let mut dirs = Vec::new();
    for m in &mounts {
        if let Ok(rd) = std::fs::read_dir(m.join("gfs2")) {
            dirs.extend(rd.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
        }
    }
    dirs.sort();
    dirs.dedup();
    if dirs.is_empty() {
        let gfs2 = gfs2_mounts();
        let why = if gfs2.is_empty() {
            "no GFS2 filesystem is mounted".to_string()
        } else {
            format!(
                "GFS2 is mounted at {} but {}/gfs2 has no entries (permission?)",
                gfs2[0].display(),
                mounts[0].display()
            )
        };
        return Err(io::Error::new(io::ErrorKind::NotFound, why));
    }
    Ok(dirs)
}

/// A short name for a file: its directory and file name (`n2/glocks.4`).
pub fn label(p: &Path) -> String {
    let file = p
        .file_name()
        .map(|f| f.to_string_lossy())
        .unwrap_or_default();
    match p.parent().and_then(|d| d.file_name()) {
        Some(d) => format!("{}/{file}", d.to_string_lossy()),
        None => file.into_owned(),
    }
}

/// One thing a path given to `glk top` or `glk stats` stands for.
#[derive(Debug)]
pub enum Given {
    /// A file read as it is: given by its name, or a live kernel file.
    File(Input),
    /// A node of a capture, a sos report or gfs2_lockcapture output, found in a directory
    /// or tarball given by the rules of [`bundle::discover`], which `glk analyze` follows.
    Node(Box<bundle::NodeCapture>),
}

/// What the paths given stand for, in the order given.
#[derive(Debug, Default)]
pub struct Resolved {
    /// Each file and node.
    pub given: Vec<Given>,
    /// The captures the nodes were read from (their extracted tarballs last as long).
    captures: Vec<bundle::Captures>,
    /// Each directory or tarball read as a capture, with the nodes found in it.
    read: Vec<String>,
}

impl Resolved {
    /// The error for inputs without a file of `what` (`glocks dump`), naming what was
    /// read of each directory or tarball.
    pub fn none_of(&self, what: &str) -> io::Error {
        let mut msg = format!("no {what} in these inputs");
        if !self.read.is_empty() {
            msg += &format!(" ({})", self.read.join("; "));
        }
        if self.captures.iter().any(|c| c.notes().next().is_some()) {
            msg += "; see above for what they lack or hold beside what was read";
        }
        io::Error::new(io::ErrorKind::NotFound, msg)
    }
}

/// Resolves paths to what `glk top` (`kinds`: glocks) or `glk stats` (glstats and
/// sbstats) reads: a file as given; in a debugfs directory (a filesystem's, its parent
/// `gfs2/`, or the debugfs root) the live files of `kinds`; any other directory or a
/// tarball as `glk analyze` reads it, saying on standard error what it lacks or holds
/// beside what was read. No paths: every mounted GFS2 filesystem's live files.
///
/// `only` (`--fs`: a lock table or its lockspace) keeps one filesystem's directories,
/// live or captured, and is an error where a directory or tarball holds none of it; a
/// file given by name is read as given.
pub fn resolve(paths: &[PathBuf], kinds: &[FileKind], only: Option<&str>) -> io::Result<Resolved> {
    let mut out = Resolved::default();
    if paths.is_empty() {
        let dirs = gfs2_debugfs_dirs()?;
        for d in of_filesystem(&dirs, only, "mounted here")? {
            out.given
                .extend(live_files(d, kinds).into_iter().map(Given::File));
        }
        return Ok(out);
    }
    for p in paths {
        let meta = std::fs::metadata(p)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
        let live = is_debugfs(p);
        if live && meta.is_dir() {
            out.given
                .extend(live_in(p, kinds, only)?.into_iter().map(Given::File));
        } else if meta.is_file() && !bundle::is_tarball(p) {
            out.given.push(Given::File(Input {
                live,
                path: p.clone(),
            }));
        } else {
            let mut caps = bundle::discover(std::slice::from_ref(p))?;
            if only.is_some() {
                caps.keep_filesystem(only)
                    .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
            }
            for l in caps.notes() {
                eprintln!("glk: {l}");
            }
            let nodes = std::mem::take(&mut caps.nodes);
            let names: Vec<&str> = nodes.iter().map(|n| n.node.as_str()).collect();
            let noun = if names.len() == 1 { "node" } else { "nodes" };
            out.read
                .push(format!("{}: {noun} {}", p.display(), names.join(", ")));
            out.given
                .extend(nodes.into_iter().map(|n| Given::Node(Box::new(n))));
            out.captures.push(caps);
        }
    }
    Ok(out)
}

/// The live files of `kinds` below the debugfs directory `dir`: a filesystem's
/// directory, the `gfs2/` directory of them all, or the debugfs root; of filesystem
/// `only` where given.
fn live_in(dir: &Path, kinds: &[FileKind], only: Option<&str>) -> io::Result<Vec<Input>> {
    let place = format!("in {}", dir.display());
    let here = live_files(dir, kinds);
    let found: Vec<Input> = if here.is_empty() {
        let gfs2 = dir.join("gfs2");
        let fs_dirs = bundle::subdirs(if gfs2.is_dir() { &gfs2 } else { dir })?;
        of_filesystem(&fs_dirs, only, &place)?
            .into_iter()
            .flat_map(|d| live_files(d, kinds))
            .collect()
    } else {
        // A filesystem's own directory: read once, kept when it is the one asked for.
        of_filesystem(&[dir.to_path_buf()], only, &place)?;
        here
    };
    if found.is_empty() {
        let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "{}: no {} file in this directory or the filesystems' directories below it",
                dir.display(),
                names.join(" or ")
            ),
        ));
    }
    Ok(found)
}

/// The filesystems' debugfs directories (named by their lock tables) of `only`: all of
/// them without it; an error naming those `place` has when none is.
fn of_filesystem<'a>(
    dirs: &'a [PathBuf],
    only: Option<&str>,
    place: &str,
) -> io::Result<Vec<&'a Path>> {
    let table = |d: &Path| d.file_name().map(|n| n.to_string_lossy().into_owned());
    let kept: Vec<&Path> = dirs
        .iter()
        .map(PathBuf::as_path)
        .filter(|d| {
            only.is_none_or(|o| table(d).is_some_and(|t| bundle::filesystems::names(o, &t)))
        })
        .collect();
    match only {
        Some(o) if kept.is_empty() => {
            let there: Vec<String> = dirs.iter().filter_map(|d| table(d)).collect();
            Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "--fs {o:?}: no such GFS2 filesystem {place} (there: {})",
                    if there.is_empty() {
                        "none".into()
                    } else {
                        there.join(", ")
                    }
                ),
            ))
        }
        _ => Ok(kept),
    }
}

/// The files of `kinds` in the debugfs directory of one filesystem, by the names the
/// kernel gives them (`sbstats`, once `lkstats`), which have no `.N`.
fn live_files(dir: &Path, kinds: &[FileKind]) -> Vec<Input> {
    let wanted = |name: &str| {
        !name.contains('.') && FileKind::parse(name).is_some_and(|(k, _)| kinds.contains(&k))
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(wanted))
        .map(|e| e.path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| Input { path, live: true })
        .collect()
}

impl Given {
    /// The file of `kind` it stands for: a file as given (whose kind its reader checks);
    /// of a node, that of its last snapshot that has one.
    pub fn file(&self, kind: FileKind) -> Option<&Path> {
        match self {
            Given::File(i) => Some(&i.path),
            Given::Node(n) => n.snapshots.iter().rev().find_map(|s| s.path(kind)),
        }
    }

    /// The glocks file `glk top` reads of it, with the files beside it ([`Sources`]).
    pub fn glocks(&self) -> Option<(Input, Sources)> {
        match self {
            Given::File(i) => Some((i.clone(), Sources::find(i))),
            Given::Node(n) => {
                let s = n.snapshots.iter().rev().find(|s| s.has(FileKind::Glocks))?;
                let path = s.path(FileKind::Glocks)?.to_path_buf();
                Some((Input { path, live: false }, Sources::saved(s, n)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capture_directory_gives_each_node_s_last_snapshot() {
        let dir = testdata::path("real/dlm2-6.1/n1");
        let r = resolve(std::slice::from_ref(&dir), &[FileKind::Glocks], None).unwrap();
        assert_eq!(r.given.len(), 1);
        let (input, sources) = r.given[0].glocks().unwrap();
        assert!(input.path.ends_with("n1/glocks.5"));
        assert!(!input.live);
        assert!(sources
            .file(FileKind::DlmLocks)
            .unwrap()
            .ends_with("n1/dlm_locks.5"));
        assert_eq!(sources.nodeid, Some(1));
        let both = resolve(
            &[testdata::path("real/dlm2-6.1")],
            &[FileKind::Glocks],
            None,
        )
        .unwrap();
        let files: Vec<_> = both
            .given
            .iter()
            .map(|g| g.file(FileKind::Glstats).unwrap().to_path_buf())
            .collect();
        assert_eq!(files.len(), 2);
        assert!(files[1].ends_with("n2/glstats.5"), "{files:?}");
    }

    #[test]
    fn a_file_is_read_as_given() {
        let f = testdata::path("real/dlm2-6.1/n2/glocks.4");
        let r = resolve(std::slice::from_ref(&f), &[FileKind::Glocks], None).unwrap();
        let (input, sources) = r.given[0].glocks().unwrap();
        assert_eq!(input.path, f);
        assert!(sources
            .file(FileKind::DlmLocks)
            .unwrap()
            .ends_with("n2/dlm_locks.4"));
    }

    #[test]
    fn fs_keeps_one_filesystem_s_debugfs_directory() {
        let dirs: Vec<PathBuf> = ["lab:data", "lab:gfs"]
            .iter()
            .map(|t| Path::new("/sys/kernel/debug/gfs2").join(t))
            .collect();
        let kept = |only| of_filesystem(&dirs, only, "mounted here");
        assert_eq!(kept(None).unwrap().len(), 2);
        for name in ["gfs", "lab:gfs"] {
            assert_eq!(kept(Some(name)).unwrap(), [dirs[1].as_path()]);
        }
        let e = kept(Some("lab")).unwrap_err().to_string();
        assert_eq!(
            e,
            "--fs \"lab\": no such GFS2 filesystem mounted here (there: lab:data, lab:gfs)"
        );
        let e = of_filesystem(&[], Some("gfs"), "in /x")
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("in /x (there: none)"), "{e}");
    }

    #[test]
    fn live_files_are_found_from_any_debugfs_level_of_the_filesystem_asked_for() {
        let root = tempfile::tempdir().unwrap();
        for (fs, files) in [
            ("lab:data", &["glocks"][..]),
            ("lab:gfs", &["glocks", "glstats"]),
        ] {
            let d = root.path().join("gfs2").join(fs);
            std::fs::create_dir_all(&d).unwrap();
            for f in files {
                std::fs::write(d.join(f), "").unwrap();
            }
        }
        let found = |dir: &Path, only| {
            live_in(dir, &[FileKind::Glocks], only).map(|v| {
                v.into_iter()
                    .map(|i| {
                        assert!(i.live);
                        i.path.strip_prefix(root.path()).unwrap().to_path_buf()
                    })
                    .collect::<Vec<_>>()
            })
        };
        let gfs = root.path().join("gfs2/lab:gfs");
        for dir in [root.path(), &root.path().join("gfs2")] {
            assert_eq!(
                found(dir, None).unwrap(),
                [
                    Path::new("gfs2/lab:data/glocks"),
                    Path::new("gfs2/lab:gfs/glocks")
                ]
            );
            assert_eq!(
                found(dir, Some("gfs")).unwrap(),
                [Path::new("gfs2/lab:gfs/glocks")]
            );
        }
        for only in [None, Some("gfs"), Some("lab:gfs")] {
            assert_eq!(
                found(&gfs, only).unwrap(),
                [Path::new("gfs2/lab:gfs/glocks")]
            );
        }
        let e = found(&gfs, Some("data")).unwrap_err().to_string();
        assert!(
            e.starts_with("--fs \"data\": no such GFS2 filesystem in "),
            "{e}"
        );
        assert!(e.ends_with("(there: lab:gfs)"), "{e}");
    }

    #[test]
    fn missing_paths_and_empty_directories_are_named() {
        let e = resolve(
            &[PathBuf::from("/nonexistent/glocks")],
            &[FileKind::Glocks],
            None,
        );
        assert!(e.unwrap_err().to_string().contains("/nonexistent/glocks"));
        let dir = testdata::path("public/glocktop-manpage");
        let e = resolve(&[dir], &[FileKind::Glocks], None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("glocktop-manpage: no capture here"), "{e}");
    }
}
