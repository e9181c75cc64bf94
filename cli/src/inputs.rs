//! Turning command-line paths into the kernel files to read: a file as given, a debugfs
//! filesystem directory, a capture directory (`glocks.N` snapshots), or nothing, meaning
//! every GFS2 filesystem in debugfs.

use std::io;

use analysis::refresh::companions::Sources;
use bundle::FileKind;
use std::path::{Path, PathBuf};

/// debugfs's `statfs` magic number.
const DEBUGFS_MAGIC: i64 = 0x6462_6720;

pub use analysis::refresh::Input;

/// Whether `path` lies on debugfs (a live kernel file rather than a saved copy).
pub fn is_debugfs(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs writes only into the zeroed struct we pass; the path is NUL-terminated.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        libc::statfs(c.as_ptr(), &mut st) == 0 && st.f_type as i64 == DEBUGFS_MAGIC
    }
}

/// The debugfs mount points listed in this process's mountinfo.
pub fn debugfs_mounts() -> Vec<PathBuf> {
    bundle::mounts::points_of(&bundle::mounts::of_this_process(), "debugfs")
}

/// The debugfs root: the one given, else the first mounted.
pub fn debugfs_root(given: Option<&Path>) -> io::Result<PathBuf> {
    match given {
        Some(d) => Ok(d.to_path_buf()),
        None => debugfs_mounts().into_iter().next().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                "debugfs is not mounted: mount it with `mount -t debugfs none /sys/kernel/debug`",
            )
        }),
    }
}

/// GFS2 mount points, for error messages.
fn gfs2_mounts() -> Vec<PathBuf> {
    bundle::mounts::points_of(&bundle::mounts::of_this_process(), "gfs2")
}

/// Every `<debugfs>/gfs2/<table>` directory.
pub fn gfs2_debugfs_dirs() -> io::Result<Vec<PathBuf>> {
    let mounts = debugfs_mounts();
    if mounts.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            "debugfs is not mounted: mount it with `mount -t debugfs none /sys/kernel/debug` \
             or give the path of a saved glocks file",
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

/// Paths with capture tarballs replaced by their extracted directories; the extractions
/// last as long as the returned guards.
pub fn unpack_tarballs(paths: &[PathBuf]) -> io::Result<(Vec<PathBuf>, Vec<bundle::Unpacked>)> {
    let mut out = Vec::with_capacity(paths.len());
    let mut keep = Vec::new();
    for p in paths {
        if p.is_file() && bundle::is_tarball(p) {
            let u = bundle::unpack(p)?;
            if let Some(d) = u.damage() {
                eprintln!("glk: {d}");
            }
            out.push(u.dir().to_path_buf());
            keep.push(u);
        } else {
            out.push(p.clone());
        }
    }
    Ok((out, keep))
}

/// What `glk top` reads of other tools' collections among its paths.
#[derive(Default)]
pub struct OtherTools {
    /// The paths that are not other tools' collections, as they were.
    pub rest: Vec<PathBuf>,
    /// Each node's last snapshot with a glocks dump, with the files beside it as that tool
    /// lays them out.
    pub inputs: Vec<(Input, Sources)>,
    /// What the collections lack.
    pub lacks: Vec<String>,
}

/// The other tools' collections among `paths` (sos reports, gfs2_lockcapture output;
/// `given` are the paths as typed, for the messages).
pub fn other_tools(paths: &[PathBuf], given: &[PathBuf]) -> io::Result<OtherTools> {
    let mut out = OtherTools::default();
    let (rest, found, lacks) = (&mut out.rest, &mut out.inputs, &mut out.lacks);
    for (p, g) in paths.iter().zip(given) {
        let caps = if p.is_dir() {
            bundle::other_tools(p, g)?
        } else {
            None
        };
        let Some(caps) = caps else {
            rest.push(p.clone());
            continue;
        };
        lacks.extend(caps.lacks.iter().cloned());
        for n in &caps.nodes {
            let Some((s, glocks)) = n
                .snapshots
                .iter()
                .rev()
                .find_map(|s| Some((s, s.path(FileKind::Glocks)?.to_path_buf())))
            else {
                continue;
            };
            let fs = glocks
                .parent()
                .and_then(|d| d.file_name())
                .map(|t| t.to_string_lossy().into_owned());
            found.push((
                Input {
                    path: glocks,
                    live: false,
                },
                Sources::saved(s, n.nodeid, fs),
            ));
        }
    }
    Ok(out)
}

/// In a capture directory, the newest `NAME.N` snapshot (largest N); else `NAME` itself.
pub fn newest_in_dir(dir: &Path, name: &str) -> Option<PathBuf> {
    let plain = dir.join(name);
    if plain.is_file() {
        return Some(plain);
    }
    let prefix = format!("{name}.");
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let file = e.file_name().into_string().ok()?;
            let n: u64 = file.strip_prefix(&prefix)?.parse().ok()?;
            Some((n, e.path()))
        })
        .max_by_key(|(n, _)| *n)
        .map(|(_, p)| p)
}

/// Resolves paths to the `name` files to read (`glocks`, `glstats`, ...). With no paths,
/// every mounted GFS2 filesystem's debugfs file.
pub fn resolve(paths: &[PathBuf], name: &str) -> io::Result<Vec<Input>> {
    let dirs;
    let paths = if paths.is_empty() {
        dirs = gfs2_debugfs_dirs()?;
        &dirs[..]
    } else {
        paths
    };
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
        if meta.is_dir() {
            if let Some(f) = newest_in_dir(p, name) {
                out.push(Input {
                    live: is_debugfs(&f),
                    path: f,
                });
                continue;
            }
            // A debugfs gfs2/ directory (or a capture bundle) holding one dir per fs.
            let mut found: Vec<PathBuf> = bundle::subdirs(p)?
                .iter()
                .filter_map(|d| newest_in_dir(d, name))
                .collect();
            if found.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{}: no {name} file in this directory", p.display()),
                ));
            }
            found.sort();
            out.extend(found.into_iter().map(|f| Input {
                live: is_debugfs(&f),
                path: f,
            }));
        } else {
            out.push(Input {
                live: is_debugfs(p),
                path: p.clone(),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_dir_picks_newest_snapshot() {
        let dir = testdata::path("real/dlm2-6.1/n1");
        let r = resolve(std::slice::from_ref(&dir), "glocks").unwrap();
        assert_eq!(r.len(), 1);
        assert!(r[0].path.ends_with("glocks.5"));
        assert!(!r[0].live);
        let both = resolve(&[testdata::path("real/dlm2-6.1")], "glocks").unwrap();
        assert_eq!(both.len(), 2);
    }

    #[test]
    fn missing_paths_are_named() {
        let e = resolve(&[PathBuf::from("/nonexistent/glocks")], "glocks").unwrap_err();
        assert!(e.to_string().contains("/nonexistent/glocks"));
        let e = resolve(&[testdata::path("public/glocktop-manpage")], "glocks").unwrap_err();
        assert!(e.to_string().contains("no glocks file"));
    }
}
