//! Finding tracefs: `/sys/kernel/tracing`, or `tracing/` inside debugfs; mounting it when
//! neither is there and we are root (and unmounting it again when done, unless another
//! program still uses it).
//!
//! Two glk may start at once on a node where tracefs is not mounted (an exporter and a
//! `glk trace`): one mounts it, the other finds it mounted. Each holds the mount open
//! while it works, so the one that mounted it, ending first, does not pull it from under
//! the other: its unmount then fails as busy, and tracefs stays mounted
//! ([`Tracefs::release`] says so).

use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use crate::error::TraceError;

const DEFAULT_MOUNT: &str = "/sys/kernel/tracing";

/// How many times [`Tracefs::locate`] looks again when another program mounts or
/// unmounts tracefs while it looks.
const LOCATE_TRIES: usize = 3;

/// The tracefs mount glk works in.
#[derive(Debug)]
pub struct Tracefs {
    dir: PathBuf,
    /// The path as handed to libtracefs, kept alive as long as it may use it.
    dir_c: CString,
    mounted_by_us: bool,
    /// The mount point held open (`O_PATH`): while it is, the mount cannot be unmounted
    /// except lazily, by anyone.
    pin: Option<OwnedFd>,
}

/// What [`Tracefs::release`] did with the mount.
#[derive(Debug)]
pub enum Released {
    /// Another program had mounted tracefs: it is left as found.
    NotOurs,
    /// glk had mounted tracefs and unmounted it.
    Unmounted,
    /// glk had mounted tracefs but could not unmount it (another program, or a second
    /// glk, uses it now): it stays mounted.
    LeftMounted {
        /// The mount point.
        dir: PathBuf,
        /// Why `umount` failed (busy, as a rule).
        error: std::io::Error,
    },
}

impl Released {
    /// What to tell the user: that tracefs, which glk mounted, stays mounted.
    pub fn warning(&self) -> Option<String> {
        match self {
            Released::LeftMounted { dir, error } => Some(format!(
                "tracefs, which glk mounted at {}, stays mounted: another program uses it ({error})",
                dir.display()
            )),
            Released::NotOurs | Released::Unmounted => None,
        }
    }
}

/// (filesystem type, mount point) of this process's mounts ([`bundle::mounts`], as every
/// mount table glk reads).
fn mounts() -> Vec<(String, PathBuf)> {
    bundle::mounts::of_this_process()
        .into_iter()
        .map(|m| (m.fs_type, m.mount_point))
        .collect()
}

/// Whether this process may control tracing (effective uid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The tracefs directory of the mounts now: tracefs itself, or `tracing/` in debugfs.
fn mounted_now() -> Option<PathBuf> {
    let m = mounts();
    if let Some((_, dir)) = m.iter().find(|(t, _)| t == "tracefs") {
        return Some(dir.clone());
    }
    m.iter()
        .filter(|(t, _)| t == "debugfs")
        .map(|(_, dir)| dir.join("tracing"))
        .find(|t| t.join("instances").is_dir())
}

/// Mounts tracefs at [`DEFAULT_MOUNT`]: `Ok(false)` when it is busy there (another
/// program mounted it at the same moment).
fn mount_tracefs() -> Result<bool, TraceError> {
    let target = CString::new(DEFAULT_MOUNT).expect("no NUL");
    let fstype = CString::new("tracefs").expect("no NUL");
    // SAFETY: all pointers are valid NUL-terminated strings; data may be NULL.
    let rc = unsafe {
        libc::mount(
            fstype.as_ptr(),
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

/// Opens `dir` with `O_PATH`, holding its mount; `None` when it is gone (unmounted since
/// the mount table was read).
fn pin(dir: &CString) -> Option<OwnedFd> {
    // SAFETY: dir is a valid NUL-terminated path; the result is checked.
    let fd = unsafe {
        libc::open(
            dir.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    // SAFETY: a non-negative fd was just returned by open(2) and is owned by no one else.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Tracefs {
    /// Finds the tracefs mount; mounts it at /sys/kernel/tracing when none is mounted
    /// and `may_mount` and we are root. A mount made or removed by another program while
    /// this looks is looked at again.
    pub fn locate(may_mount: bool) -> Result<Tracefs, TraceError> {
        for _ in 0..LOCATE_TRIES {
            if let Some(dir) = mounted_now() {
                match Tracefs::adopt(dir, false)? {
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
                if let Some(t) = Tracefs::adopt(PathBuf::from(DEFAULT_MOUNT), true)? {
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
    fn adopt(dir: PathBuf, mounted_by_us: bool) -> Result<Option<Tracefs>, TraceError> {
        let dir_c = CString::new(dir.as_os_str().as_encoded_bytes())
            .map_err(|_| TraceError::NoTracefs("tracefs path has a NUL byte".into()))?;
        let Some(pin) = pin(&dir_c) else {
            return Ok(None);
        };
        // SAFETY: dir_c is a valid NUL-terminated string that outlives every use through
        // this Tracefs (libtracefs may copy it or keep the pointer).
        unsafe { libtracefs_sys::tracefs_set_tracing_dir(dir_c.as_ptr() as *mut _) };
        Ok(Some(Tracefs {
            dir,
            dir_c,
            mounted_by_us,
            pin: Some(pin),
        }))
    }

    /// Lets the mount go: unmounts tracefs when glk mounted it and no other program uses
    /// it (never lazily: a detached mount would vanish from under its other users).
    /// Dropping a `Tracefs` does the same without saying what it did.
    pub fn release(mut self) -> Released {
        self.unmount()
    }

    fn unmount(&mut self) -> Released {
        self.pin = None;
        if !std::mem::take(&mut self.mounted_by_us) {
            return Released::NotOurs;
        }
        // SAFETY: dir_c is a valid NUL-terminated path.
        if unsafe { libc::umount2(self.dir_c.as_ptr(), 0) } == 0 {
            Released::Unmounted
        } else {
            Released::LeftMounted {
                dir: self.dir.clone(),
                error: std::io::Error::last_os_error(),
            }
        }
    }

    /// The tracefs mount point.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// True when glk mounted tracefs itself (it is unmounted again on drop).
    pub fn mounted_by_us(&self) -> bool {
        self.mounted_by_us
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
