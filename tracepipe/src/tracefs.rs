//! Finding tracefs: `/sys/kernel/tracing`, or `tracing/` inside debugfs; mounting it when
//! neither is there and we are root (and unmounting it again when done).

use std::ffi::CString;
use std::path::{Path, PathBuf};

use crate::error::TraceError;

const DEFAULT_MOUNT: &str = "/sys/kernel/tracing";

/// The tracefs mount glk works in.
#[derive(Debug)]
pub struct Tracefs {
    dir: PathBuf,
    /// The path as handed to libtracefs, kept alive as long as it may use it.
    dir_c: CString,
    mounted_by_us: bool,
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

impl Tracefs {
    /// Finds the tracefs mount; mounts it at /sys/kernel/tracing when none is mounted
    /// and `may_mount` and we are root.
    pub fn locate(may_mount: bool) -> Result<Tracefs, TraceError> {
        let m = mounts();
        if let Some((_, dir)) = m.iter().find(|(t, _)| t == "tracefs") {
            return Tracefs::adopt(dir.clone(), false);
        }
        if let Some((_, dir)) = m.iter().find(|(t, _)| t == "debugfs") {
            let t = dir.join("tracing");
            if t.join("instances").is_dir() {
                return Tracefs::adopt(t, false);
            }
        }
        if !may_mount || !is_root() {
            return Err(TraceError::NoTracefs(format!(
                "tracefs is not mounted; as root glk mounts it, or run `mount -t tracefs nodev {DEFAULT_MOUNT}`"
            )));
        }
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
        if rc != 0 {
            return Err(TraceError::NoTracefs(format!(
                "tracefs is not mounted and mounting it at {DEFAULT_MOUNT} failed: {}",
                std::io::Error::last_os_error()
            )));
        }
        Tracefs::adopt(PathBuf::from(DEFAULT_MOUNT), true)
    }

    fn adopt(dir: PathBuf, mounted_by_us: bool) -> Result<Tracefs, TraceError> {
        let dir_c = CString::new(dir.as_os_str().as_encoded_bytes())
            .map_err(|_| TraceError::NoTracefs("tracefs path has a NUL byte".into()))?;
        // SAFETY: dir_c is a valid NUL-terminated string that outlives every use through
        // this Tracefs (libtracefs may copy it or keep the pointer).
        unsafe { libtracefs_sys::tracefs_set_tracing_dir(dir_c.as_ptr() as *mut _) };
        Ok(Tracefs {
            dir,
            dir_c,
            mounted_by_us,
        })
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
        if self.mounted_by_us {
            // SAFETY: dir_c is a valid NUL-terminated path.
            unsafe { libc::umount2(self.dir_c.as_ptr(), libc::MNT_DETACH) };
        }
    }
}
