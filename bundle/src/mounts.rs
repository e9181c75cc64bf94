//! The mount table, `/proc/PID/mountinfo`, live or a capture's copy: read with procfs's
//! parser, the one glk uses, and the octal escapes of mount points decoded.

use std::path::PathBuf;

use procfs::process::{MountInfo, MountInfos};
use procfs::FromBufRead;

/// One mount: its device, mount point, filesystem type and source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The device, `(major, minor)`.
    pub dev: Option<(u32, u32)>,
    /// Where it is mounted.
    pub mount_point: PathBuf,
    /// The filesystem type (`gfs2`, `debugfs`, `tracefs`...).
    pub fs_type: String,
    /// The mount's source as given to mount(2) (a device, or a name such as `nodev`).
    pub source: Option<String>,
}

impl Mount {
    fn of(m: MountInfo) -> Mount {
        let dev = m
            .majmin
            .split_once(':')
            .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
        Mount {
            dev,
            mount_point: unescape(&m.mount_point),
            fs_type: m.fs_type,
            source: m.mount_source,
        }
    }
}

/// A path as the kernel prints it in mountinfo, its space, tab, newline and backslash as
/// octal escapes (`\040`), decoded.
fn unescape(path: &std::path::Path) -> PathBuf {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let b = path.as_os_str().as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push(d.iter().fold(0u8, |v, c| v.wrapping_mul(8) + (c - b'0')));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

/// The mounts of a mountinfo text; a text that is not one gives none.
pub fn parse(text: &[u8]) -> Vec<Mount> {
    MountInfos::from_buf_read(text)
        .map(|m| m.0.into_iter().map(Mount::of).collect())
        .unwrap_or_default()
}

/// The mounts this process sees (none when `/proc` cannot be read).
pub fn of_this_process() -> Vec<Mount> {
    std::fs::read("/proc/self/mountinfo")
        .map(|t| parse(&t))
        .unwrap_or_default()
}

/// The mount points of one filesystem type among `mounts`.
pub fn points_of(mounts: &[Mount], fs_type: &str) -> Vec<PathBuf> {
    mounts
        .iter()
        .filter(|m| m.fs_type == fs_type)
        .map(|m| m.mount_point.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_are_read_with_their_escapes() {
        let text = b"36 25 253:16 / /mnt/gfs\\040two rw,relatime shared:1 - gfs2 /dev/vdb rw\n\
                     22 1 0:7 / /sys/kernel/debug rw - debugfs debugfs rw\n";
        let m = parse(text);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].dev, Some((253, 16)));
        assert_eq!(m[0].mount_point, PathBuf::from("/mnt/gfs two"));
        assert_eq!(m[0].fs_type, "gfs2");
        assert_eq!(m[0].source.as_deref(), Some("/dev/vdb"));
        assert_eq!(
            points_of(&m, "debugfs"),
            [PathBuf::from("/sys/kernel/debug")]
        );
        assert!(parse(b"not a mount table\n").is_empty());
        assert!(!of_this_process().is_empty());
    }
}
