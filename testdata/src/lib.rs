//! Real GFS2 captures and public samples used by glk's tests (copied from the project's
//! shared fixtures; each folder's README says where the data came from).

use std::path::{Path, PathBuf};

/// The fixtures folder.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// A fixture by its path below the fixtures folder, e.g. `real/dlm2-6.1/n1/glocks.3`.
pub fn path(rel: &str) -> PathBuf {
    let p = root().join(rel);
    assert!(p.exists(), "missing fixture {}", p.display());
    p
}

/// Every file below `dir` (relative to the fixtures folder) whose name satisfies `keep`,
/// sorted.
pub fn files(dir: &str, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    fn walk(d: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join(dir), &mut out);
    out.retain(|p| keep(p.file_name().and_then(|n| n.to_str()).unwrap_or("")));
    out.sort();
    out
}
