//! Finding tracefs: `/sys/kernel/tracing`, or `tracing/` inside debugfs; mounting it when
//! neither is there and we are root, and unmounting it again when done.
//!
//! glk mounts tracefs under the source name `glk` (`/proc/self/mounts` shows `glk
//! /sys/kernel/tracing tracefs`), so that any glk knows a mount a glk made. Two glk may
//! run at once on a node where tracefs was not mounted (an exporter and a `glk trace`):
//! one mounts it, the other finds it. Each holds the mount open while it works, and
//! unmounts a glk-made mount when done, never lazily: the unmount fails as busy while
//! another user holds it, so the mount is never pulled from under anyone, and the last
//! glk to let it go unmounts it. A mount another program made is left as found.
//!
//! Each glk's hold is also a shared `flock` on tracefs's root. A glk whose unmount fails
//! as busy takes the lock exclusively for a moment to learn who holds the mount: another
//! glk (which unmounts it when done: nothing to say) or a program other than glk (then
//! nobody will, and glk says so).

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use crate::error::TraceError;

const DEFAULT_MOUNT: &str = "/sys/kernel/tracing";

/// The source name of the tracefs mounts glk makes.
pub const MOUNT_SOURCE: &str = "glk";

/// How many times [`Tracefs::locate`] looks again when another program mounts or
/// unmounts tracefs while it looks.
const LOCATE_TRIES: usize = 3;

/// The tracefs mount glk works in.
#[derive(Debug)]
pub struct Tracefs {
    dir: PathBuf,
    /// The path as a C string, for `umount2` (libtracefs keeps its own copy).
    dir_c: CString,
    /// This process mounted it.
    mounted_by_us: bool,
    /// A glk mounted it (this one or another): it is unmounted when let go, if unused.
    glk_made: bool,
    /// The mount point held open (`O_PATH`): while it is, the mount cannot be unmounted
    /// except lazily, by anyone.
    pin: Option<OwnedFd>,
}

/// What [`Tracefs::release`] did with the mount.
#[derive(Debug)]
pub enum Released {
    /// Another program mounted tracefs (or a glk's mount is gone already): it is left
    /// as found.
    NotOurs,
    /// A glk mounted tracefs, and it is unmounted now.
    Unmounted,
    /// A glk mounted tracefs, but another glk (which unmounts it when done) or another
    /// program uses it now: it stays mounted.
    LeftMounted {
        /// The mount point.
        dir: PathBuf,
        /// Why `umount` failed (busy, as a rule).
        error: std::io::Error,
        /// This glk mounted it (and so changed what it found).
        mounted_by_us: bool,
        /// A glk still holds it (another one, or an [`crate::Instance`] of this one),
        /// which unmounts it when done; when false and the mount is busy, a program other
        /// than glk holds it, and no glk is left to unmount it.
        glk_holds: bool,
    },
}

impl Released {
    /// What to tell the user: that a glk-made tracefs stays mounted. The glk that mounted
    /// it always says so; when a program other than glk holds it, any glk that lets it go
    /// last says so, since no glk is left to unmount it.
    pub fn warning(&self) -> Option<String> {
        let Released::LeftMounted {
            dir,
            error,
            mounted_by_us,
            glk_holds,
        } = self
        else {
            return None;
        };
        let dir = dir.display();
        let busy = error.raw_os_error() == Some(libc::EBUSY);
        match (*glk_holds, busy, *mounted_by_us) {
            (true, _, true) => Some(format!(
                "tracefs, mounted by glk at {dir}, stays mounted while another glk uses it \
                 ({error}); the last glk to use it unmounts it"
            )),
            (false, true, _) => Some(format!(
                "tracefs, mounted by glk at {dir}, stays mounted: a program other than glk \
                 uses it ({error}); the next glk unmounts it, or run `umount {dir}` when that \
                 program is done"
            )),
            (false, false, true) => Some(format!(
                "tracefs, mounted by glk at {dir}, stays mounted ({error})"
            )),
            (true, _, false) | (false, false, false) => None,
        }
    }
}

/// A tracefs directory of the mounts now: tracefs itself (and whether a glk mounted it),
/// or `tracing/` in debugfs.
fn mounted_now() -> Option<(PathBuf, bool)> {
    let m = bundle::mounts::of_this_process();
    if let Some(t) = m.iter().find(|m| m.fs_type == "tracefs") {
        return Some((t.mount_point.clone(), glk_made(t)));
    }
    m.iter()
        .filter(|m| m.fs_type == "debugfs")
        .map(|m| m.mount_point.join("tracing"))
        .find(|t| t.join("instances").is_dir())
        .map(|t| (t, false))
}

/// Whether this process may control tracing (effective uid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Whether `m` is a tracefs a glk made (source [`MOUNT_SOURCE`]).
fn glk_made(m: &bundle::mounts::Mount) -> bool {
    m.fs_type == "tracefs" && m.source.as_deref() == Some(MOUNT_SOURCE)
}

/// Whether the mount on top at `dir` (the last one listed there) is a tracefs a glk made.
fn glk_mount_at(dir: &Path) -> bool {
    bundle::mounts::of_this_process()
        .into_iter()
        .rev()
        .find(|m| m.mount_point == dir)
        .is_some_and(|m| glk_made(&m))
}

/// Mounts tracefs at [`DEFAULT_MOUNT`]: `Ok(false)` when it is busy there (another
/// program mounted it at the same moment).
fn mount_tracefs() -> Result<bool, TraceError> {
    let target = CString::new(DEFAULT_MOUNT).expect("no NUL");
    let fstype = CString::new("tracefs").expect("no NUL");
    let source = CString::new(MOUNT_SOURCE).expect("no NUL");
    // SAFETY: all pointers are valid NUL-terminated strings; data may be NULL.
    let rc = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EBUSY) {
        return Ok(false);
    }
    Err(TraceError::NoTracefs(format!(
        "tracefs is not mounted and mounting it at {DEFAULT_MOUNT} failed: {e}"
    )))
}

/// `statfs`'s `f_type` of tracefs, and of debugfs (whose `tracing/` is tracing itself on
/// kernels before 4.1, RHEL 7's).
const TRACEFS_MAGIC: i64 = 0x7472_6163;
const DEBUGFS_MAGIC: i64 = 0x6462_6720;

/// Opens the directory `dir` (`O_RDONLY`, or `O_PATH`), `None` when it cannot.
fn open_dir(dir: &CString, how: libc::c_int) -> Option<OwnedFd> {
    // SAFETY: dir is a valid NUL-terminated path; the result is checked.
    let fd = unsafe { libc::open(dir.as_ptr(), how | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    // SAFETY: a non-negative fd was just returned by open(2) and is owned by no one else.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// How long a glk waits for the shared lock while another takes it exclusively (which it
/// holds for a moment only): then it works without, rather than wait for a stopped one.
const SHARE_TRIES: usize = 100;

/// Opens `dir`, holding its mount, and takes the shared lock that tells other glk this one
/// uses it; `None` when it holds no tracing filesystem (unmounted since the mount table
/// was read: the bare directory below). Where the directory cannot be read (a user other
/// than root), it is held by an `O_PATH` descriptor, without the lock.
fn pin(dir: &CString) -> Option<OwnedFd> {
    let fd = open_dir(dir, libc::O_RDONLY).or_else(|| open_dir(dir, libc::O_PATH))?;
    // SAFETY: statfs is plain data; all-zero is a valid value to be overwritten.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open (O_PATH descriptors may be given to fstatfs); st is writable.
    if unsafe { libc::fstatfs(fd.as_raw_fd(), &mut st) } != 0 {
        return None;
    }
    #[allow(clippy::unnecessary_cast)] // f_type's width differs between targets.
    let magic = st.f_type as i64;
    if ![TRACEFS_MAGIC, DEBUGFS_MAGIC].contains(&magic) {
        return None;
    }
    for _ in 0..SHARE_TRIES {
        // SAFETY: fd is open; flock has no other preconditions.
        if unsafe { libc::flock(fd.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } == 0
            || std::io::Error::last_os_error().raw_os_error() != Some(libc::EWOULDBLOCK)
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Some(fd)
}

/// Whether a glk holds the tracefs at `dir`: whether its shared lock is held (by another
/// process, or by an [`crate::Instance`] of this one). False when that cannot be learnt.
fn a_glk_holds(dir: &CString) -> bool {
    let Some(probe) = open_dir(dir, libc::O_RDONLY) else {
        return false;
    };
    // SAFETY: probe is open; flock has no other preconditions. The lock, when taken, goes
    // with the descriptor when this returns.
    let taken = unsafe { libc::flock(probe.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    !taken && std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
}

impl Tracefs {
    /// Finds the tracefs mount; mounts it at /sys/kernel/tracing when none is mounted
    /// and `may_mount` and we are root. A mount made or removed by another program while
    /// this looks is looked at again.
    pub fn locate(may_mount: bool) -> Result<Tracefs, TraceError> {
        for _ in 0..LOCATE_TRIES {
            if let Some((dir, glk_made)) = mounted_now() {
                match Tracefs::adopt(dir, false, glk_made)? {
                    Some(t) => return Ok(t),
                    None => continue,
                }
            }
            if !may_mount || !is_root() {
                return Err(TraceError::NoTracefs(format!(
                    "tracefs is not mounted; as root glk mounts it, or run `mount -t tracefs nodev {DEFAULT_MOUNT}`"
                )));
            }
            if mount_tracefs()? {
                if let Some(t) = Tracefs::adopt(PathBuf::from(DEFAULT_MOUNT), true, true)? {
                    return Ok(t);
                }
            }
        }
        Err(TraceError::NoTracefs(format!(
            "tracefs was mounted and unmounted by another program while glk looked for it \
             ({LOCATE_TRIES} times)"
        )))
    }

    /// Works in `dir`, holding it open; `None` when it is no longer there.
    fn adopt(
        dir: PathBuf,
        mounted_by_us: bool,
        glk_made: bool,
    ) -> Result<Option<Tracefs>, TraceError> {
        let dir_c = CString::new(dir.as_os_str().as_encoded_bytes())
            .map_err(|_| TraceError::NoTracefs("tracefs path has a NUL byte".into()))?;
        let Some(pin) = pin(&dir_c) else {
            return Ok(None);
        };
        // SAFETY: dir_c is a valid NUL-terminated string; libtracefs copies it (strdup).
        unsafe { libtracefs_sys::tracefs_set_tracing_dir(dir_c.as_ptr() as *mut _) };
        Ok(Some(Tracefs {
            dir,
            dir_c,
            mounted_by_us,
            glk_made,
            pin: Some(pin),
        }))
    }

    /// Lets the mount go: unmounts tracefs when a glk mounted it (this one or another)
    /// and no other program uses it, never lazily: a detached mount would vanish from
    /// under its other users. Dropping a `Tracefs` does the same without saying what it
    /// did.
    pub fn release(mut self) -> Released {
        self.unmount()
    }

    fn unmount(&mut self) -> Released {
        self.pin = None;
        let mounted_by_us = std::mem::take(&mut self.mounted_by_us);
        // Taken, so that the drop after `release` does nothing. The mount point is looked
        // at again: unmounted meanwhile by another glk, it may hold another program's
        // tracefs now.
        if !std::mem::take(&mut self.glk_made) || !glk_mount_at(&self.dir) {
            return Released::NotOurs;
        }
        let umount = || {
            // SAFETY: dir_c is a valid NUL-terminated path.
            (unsafe { libc::umount2(self.dir_c.as_ptr(), 0) } == 0)
                .then_some(())
                .ok_or_else(std::io::Error::last_os_error)
        };
        let Err(error) = umount() else {
            return Released::Unmounted;
        };
        let busy = error.raw_os_error() == Some(libc::EBUSY);
        let glk_holds = busy && a_glk_holds(&self.dir_c);
        // Busy, and no glk holds it: the one that did may have let it go since the first try.
        let error = if busy && !glk_holds {
            match umount() {
                Ok(()) => return Released::Unmounted,
                Err(again) => again,
            }
        } else {
            error
        };
        Released::LeftMounted {
            dir: self.dir.clone(),
            error,
            mounted_by_us,
            glk_holds,
        }
    }

    /// Another hold on the mount (the pinned mount point, duplicated), for what works in
    /// it longer than this `Tracefs` may live: an [`crate::Instance`].
    pub(crate) fn hold(&self) -> std::io::Result<OwnedFd> {
        match &self.pin {
            Some(fd) => fd.try_clone(),
            None => Err(std::io::Error::from_raw_os_error(libc::ENOENT)),
        }
    }

    /// The tracefs mount point.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// True when this glk mounted tracefs.
    pub fn mounted_by_us(&self) -> bool {
        self.mounted_by_us
    }

    /// True when a glk mounted tracefs, this one or another: it is unmounted when let go
    /// and unused.
    pub fn glk_made(&self) -> bool {
        self.glk_made
    }

    /// Whether `events/SYSTEM/EVENT` (or `events/SYSTEM` with no event) exists.
    pub fn has_event(&self, system: &str, event: Option<&str>) -> bool {
        let mut p = self.dir.join("events").join(system);
        if let Some(e) = event {
            p = p.join(e);
        }
        p.is_dir()
    }

    /// Whether an event can be switched on and off. ftrace's own events (`ftrace:print`,
    /// what `trace_marker` writes, and the other function-tracer records) have no `enable`
    /// file: they are always recorded.
    pub fn can_enable(&self, system: &str, event: &str) -> bool {
        self.dir
            .join("events")
            .join(system)
            .join(event)
            .join("enable")
            .is_file()
    }

    /// The events of a system, sorted.
    pub fn system_events(&self, system: &str) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.dir.join("events").join(system))
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.path().is_dir())
                    .filter_map(|e| e.file_name().into_string().ok())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// The text of an event's `format` file (`traceparse::format::print_fmt` extracts its
    /// `print fmt:` string).
    pub fn format(&self, system: &str, event: &str) -> Option<String> {
        std::fs::read_to_string(
            self.dir
                .join("events")
                .join(system)
                .join(event)
                .join("format"),
        )
        .ok()
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        self.unmount();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory that holds no tracing filesystem (a mount point whose tracefs was
    /// unmounted meanwhile is such a bare directory) is not pinned as tracefs.
    #[test]
    fn only_a_tracing_filesystem_is_pinned() {
        let c = |p: &str| CString::new(p).unwrap();
        assert!(pin(&c("/proc")).is_none());
        assert!(pin(&c(env!("CARGO_MANIFEST_DIR"))).is_none());
        assert!(pin(&c("/nonexistent/glk")).is_none());
        if let Some((dir, _)) = mounted_now() {
            assert!(
                pin(&c(dir.to_str().unwrap())).is_some(),
                "{}",
                dir.display()
            );
        }
    }
}
