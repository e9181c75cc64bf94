//! How much glk may still write into a directory: what it unpacks (a tarball's members,
//! the files a cluster node sends) always leaves [`RESERVE_PERCENT`] of the filesystem
//! free, since a megabyte of compressed input can unpack to gigabytes.

use std::path::Path;

/// The share of a filesystem, in percent, that glk's writing leaves free.
pub const RESERVE_PERCENT: u64 = 5;

/// The bytes that may still be written at `dir` leaving [`RESERVE_PERCENT`] of its
/// filesystem free (`None` when its filesystem cannot be asked).
pub fn left(dir: &Path) -> Option<u64> {
    let st = rustix::fs::statvfs(dir).ok()?;
    let free = st.f_bavail.saturating_mul(st.f_frsize);
    let reserve = st.f_blocks.saturating_mul(st.f_frsize) / 100 * RESERVE_PERCENT;
    Some(free.saturating_sub(reserve))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The room is the free space less the reserve: less than the free space of the
    /// filesystem the tests run on.
    #[test]
    fn the_room_keeps_the_reserve_free() {
        let dir = tempfile::tempdir().unwrap();
        let st = rustix::fs::statvfs(dir.path()).unwrap();
        let room = left(dir.path()).unwrap();
        assert!(room < st.f_bavail * st.f_frsize, "{room}");
    }
}
