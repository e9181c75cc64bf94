//! A tracefs instance as a guard: everything glk changes goes through it, and dropping it
//! (normal exit, Ctrl-C handled by the caller, or a panic unwinding) puts it all back:
//! events glk enabled are disabled, filters and buffer size restored, and an instance
//! glk created is removed. An instance that existed before is left as it was found.

use std::ffi::{CStr, CString};
use std::fs;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

use libtracefs_sys as sys;

use crate::error::TraceError;
use crate::tracefs::Tracefs;

/// Prefix of the private instances glk creates (`glk-PID`).
pub const PRIVATE_PREFIX: &str = "glk-";

fn cstr(s: &str) -> Result<CString, TraceError> {
    CString::new(s).map_err(|_| TraceError::UnknownEvent(format!("{s:?} has a NUL byte")))
}

/// Takes ownership of a malloc'd C string.
fn owned(p: *mut libc::c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: libtracefs returned a NUL-terminated malloc'd string, freed right after.
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    // SAFETY: p came from malloc in libtracefs and is not used after this.
    unsafe { libc::free(p.cast()) };
    Some(s)
}

/// Ring-buffer losses of an instance, summed over CPUs (`per_cpu/cpuN/stats`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Losses {
    /// Events overwritten because the buffer was full.
    pub overrun: u64,
    /// Events dropped (buffer full in non-overwrite mode).
    pub dropped: u64,
}

impl Losses {
    /// Events lost either way.
    pub fn total(self) -> u64 {
        self.overrun + self.dropped
    }
}

/// A private tracefs instance, made by glk and removed (with everything it changed put
/// back) when dropped.
///
/// It holds the tracefs mount as the [`Tracefs`] it was opened in does, so that it can
/// always be put back: a `Tracefs` let go first cannot unmount tracefs under it (and
/// says that it stays mounted). Close or drop it first all the same, so that a tracefs
/// glk mounted is unmounted: declare the `Tracefs` first, as variables drop last to
/// first.
#[derive(Debug)]
pub struct Instance {
    ptr: NonNull<sys::tracefs_instance>,
    /// The mount held open while the instance lives.
    _mount: OwnedFd,
    /// The handle is freed ([`Instance::close`] ran).
    freed: bool,
    name: String,
    dir: PathBuf,
    created: bool,
    /// (system, event) glk switched on; event "" = the whole system.
    enabled: Vec<(String, String)>,
    /// (system, event, filter before).
    filtered: Vec<(String, String, String)>,
    buffer_kb_before: Option<String>,
    tracing_on_before: Option<bool>,
}

// SAFETY: the libtracefs handle has no thread affinity, and it is only used through
// &mut self or on drop, never from two threads at once.
unsafe impl Send for Instance {}

impl Instance {
    /// Creates the private instance `glk-PID`, after removing the stale ones of glk
    /// processes that are gone (killed with -9), whose names it returns so that the user
    /// can be told.
    pub fn private(tfs: &Tracefs) -> Result<(Instance, Vec<String>), TraceError> {
        let removed = remove_stale(tfs);
        let inst = Instance::open(tfs, &format!("{PRIVATE_PREFIX}{}", std::process::id()))?;
        Ok((inst, removed))
    }

    /// Opens instance `name`, creating it if it does not exist. Recording is off until
    /// [`Instance::tracing_on`] (and is restored on drop for an existing instance).
    pub fn open(tfs: &Tracefs, name: &str) -> Result<Instance, TraceError> {
        if name.is_empty() || name.contains('/') || name == "." || name == ".." {
            return Err(TraceError::UnknownEvent(format!(
                "bad instance name {name:?}"
            )));
        }
        let mount = tfs.hold().map_err(|e| {
            TraceError::Io(format!("holding tracefs at {}", tfs.dir().display()), e)
        })?;
        let c = cstr(name)?;
        // SAFETY: c is a valid C string; a NULL result is handled.
        let p = unsafe { sys::tracefs_instance_create(c.as_ptr()) };
        let ptr = NonNull::new(p).ok_or_else(|| {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                TraceError::Permission(format!(
                    "cannot create tracefs instance {name}: {e} (live tracing needs root)"
                ))
            } else {
                TraceError::Io(format!("creating tracefs instance {name}"), e)
            }
        })?;
        // SAFETY: ptr is a live instance.
        let created = unsafe { sys::tracefs_instance_is_new(ptr.as_ptr()) };
        let mut inst = Instance {
            ptr,
            _mount: mount,
            freed: false,
            name: name.to_string(),
            dir: tfs.dir().join("instances").join(name),
            created,
            enabled: Vec::new(),
            filtered: Vec::new(),
            buffer_kb_before: None,
            tracing_on_before: None,
        };
        // A new instance records from the start: keep it quiet while events and filters
        // are set up, so nothing unfiltered lands in the buffer before `tracing_on`.
        inst.tracing_off();
        Ok(inst)
    }

    /// The instance's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its directory in tracefs.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// True when this run created the instance (it is removed on drop).
    pub fn created(&self) -> bool {
        self.created
    }

    fn read(&self, file: &str) -> Option<String> {
        fs::read_to_string(self.dir.join(file)).ok()
    }

    fn write(&self, file: &str, text: &str) -> Result<(), TraceError> {
        let f = cstr(file)?;
        let t = cstr(text)?;
        // SAFETY: valid instance and C strings.
        let rc =
            unsafe { sys::tracefs_instance_file_write(self.ptr.as_ptr(), f.as_ptr(), t.as_ptr()) };
        if rc < 0 {
            return Err(TraceError::Io(
                format!("writing {text:?} to {}/{file}", self.dir.display()),
                std::io::Error::last_os_error(),
            ));
        }
        Ok(())
    }

    fn event_file(&self, system: &str, event: &str, file: &str) -> PathBuf {
        let mut p = self.dir.join("events").join(system);
        if !event.is_empty() {
            p = p.join(event);
        }
        p.join(file)
    }

    /// Enables `system:event` (`event` empty: the whole system) in this instance.
    pub fn enable(&mut self, system: &str, event: &str) -> Result<(), TraceError> {
        let was = fs::read_to_string(self.event_file(system, event, "enable")).unwrap_or_default();
        if was.trim() == "1" {
            return Ok(());
        }
        let e = if event.is_empty() {
            None
        } else {
            Some(cstr(&format!("^{event}$"))?)
        };
        let sys_re = cstr(&format!("^{system}$"))?;
        // SAFETY: valid instance and C strings (event NULL means every event).
        let rc = unsafe {
            sys::tracefs_event_enable(
                self.ptr.as_ptr(),
                sys_re.as_ptr(),
                e.as_ref().map_or(std::ptr::null(), |e| e.as_ptr()),
            )
        };
        if rc < 0 {
            return Err(TraceError::Io(
                format!("enabling {system}:{event}"),
                std::io::Error::last_os_error(),
            ));
        }
        self.enabled.push((system.to_string(), event.to_string()));
        Ok(())
    }

    /// Disables an event glk enabled (used when a filter does not apply to it).
    pub fn disable(&mut self, system: &str, event: &str) {
        let _ = fs::write(self.event_file(system, event, "enable"), "0");
        self.enabled.retain(|(s, e)| !(s == system && e == event));
    }

    /// Sets the kernel event filter of `system:event`. On a bad expression the error holds
    /// the kernel's own message (from the filter file or the error log).
    pub fn set_filter(&mut self, system: &str, event: &str, expr: &str) -> Result<(), TraceError> {
        let path = self.event_file(system, event, "filter");
        let before = fs::read_to_string(&path).unwrap_or_else(|_| "none".into());
        // SAFETY: valid instance.
        unsafe { sys::tracefs_error_clear(self.ptr.as_ptr()) };
        let res = fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|mut f| f.write_all(expr.as_bytes()));
        if let Err(e) = res {
            // SAFETY: valid instance; the result is owned and freed by `owned`.
            let log = owned(unsafe { sys::tracefs_error_last(self.ptr.as_ptr()) })
                .filter(|s| !s.trim().is_empty());
            let file_text = fs::read_to_string(&path).unwrap_or_default();
            let kernel = log
                .or_else(|| {
                    let t = file_text.trim();
                    (t != "none" && !t.is_empty()).then(|| t.to_string())
                })
                .unwrap_or_else(|| e.to_string());
            // A failed write may leave an error marker; put the old filter back.
            let _ = restore_filter(&path, &before);
            return Err(TraceError::BadFilter {
                event: format!("{system}:{event}"),
                kernel: kernel.trim().to_string(),
            });
        }
        self.filtered
            .push((system.to_string(), event.to_string(), before));
        Ok(())
    }

    /// Sets the per-CPU ring-buffer size in KiB.
    pub fn set_buffer_kb(&mut self, kb: u64) -> Result<(), TraceError> {
        if self.buffer_kb_before.is_none() {
            self.buffer_kb_before = self.read("buffer_size_kb").map(|s| s.trim().to_string());
        }
        self.write("buffer_size_kb", &kb.to_string())
    }

    /// Turns recording on in this instance.
    pub fn tracing_on(&mut self) -> Result<(), TraceError> {
        if self.tracing_on_before.is_none() {
            // SAFETY: valid instance.
            self.tracing_on_before =
                Some(unsafe { sys::tracefs_trace_is_on(self.ptr.as_ptr()) } == 1);
        }
        // SAFETY: valid instance.
        if unsafe { sys::tracefs_trace_on(self.ptr.as_ptr()) } < 0 {
            return Err(TraceError::Io(
                "tracing_on".into(),
                std::io::Error::last_os_error(),
            ));
        }
        Ok(())
    }

    /// Stops recording (what is in the buffer can still be read).
    pub fn tracing_off(&mut self) {
        if self.tracing_on_before.is_none() {
            // SAFETY: valid instance.
            self.tracing_on_before =
                Some(unsafe { sys::tracefs_trace_is_on(self.ptr.as_ptr()) } == 1);
        }
        // SAFETY: valid instance.
        unsafe { sys::tracefs_trace_off(self.ptr.as_ptr()) };
    }

    /// Its `trace_pipe`.
    pub fn trace_pipe(&self) -> PathBuf {
        self.dir.join("trace_pipe")
    }

    /// Writes one `print` event into this instance's buffer.
    pub fn write_marker(&self, text: &str) -> std::io::Result<()> {
        fs::OpenOptions::new()
            .write(true)
            .open(self.dir.join("trace_marker"))?
            .write_all(text.as_bytes())
    }

    /// The clock the instance stamps events with (`local`, `global`, `mono`, ...: the
    /// bracketed entry of its `trace_clock` file), when readable.
    pub fn trace_clock(&self) -> Option<String> {
        let text = fs::read_to_string(self.dir.join("trace_clock")).ok()?;
        let open = text.find('[')?;
        let close = text[open..].find(']')? + open;
        Some(text[open + 1..close].to_string())
    }

    /// Losses so far, summed over CPUs.
    pub fn losses(&self) -> Losses {
        let mut l = Losses::default();
        let Ok(rd) = fs::read_dir(self.dir.join("per_cpu")) else {
            return l;
        };
        for cpu in rd.flatten() {
            let text = fs::read_to_string(cpu.path().join("stats")).unwrap_or_default();
            for line in text.lines() {
                let num = |p: &str| {
                    line.strip_prefix(p)
                        .and_then(|v| v.trim().parse::<u64>().ok())
                };
                if let Some(v) = num("overrun:") {
                    l.overrun += v;
                } else if let Some(v) = num("dropped events:") {
                    l.dropped += v;
                }
            }
        }
        l
    }

    /// Puts everything back now, reporting what could not be restored.
    pub fn close(mut self) -> Result<(), TraceError> {
        self.restore()
    }

    /// Puts everything back and frees the handle, once: the drop after `close` does
    /// nothing (but let the mount go).
    fn restore(&mut self) -> Result<(), TraceError> {
        if std::mem::replace(&mut self.freed, true) {
            return Ok(());
        }
        let mut first_err = None;
        for (system, event) in std::mem::take(&mut self.enabled).into_iter().rev() {
            let sys_re = cstr(&format!("^{system}$"))?;
            let ev = if event.is_empty() {
                None
            } else {
                Some(cstr(&format!("^{event}$"))?)
            };
            // SAFETY: valid instance and C strings.
            let rc = unsafe {
                sys::tracefs_event_disable(
                    self.ptr.as_ptr(),
                    sys_re.as_ptr(),
                    ev.as_ref().map_or(std::ptr::null(), |e| e.as_ptr()),
                )
            };
            if rc < 0 && first_err.is_none() {
                first_err = Some(TraceError::Io(
                    format!("disabling {system}:{event}"),
                    std::io::Error::last_os_error(),
                ));
            }
        }
        for (system, event, before) in std::mem::take(&mut self.filtered) {
            let _ = restore_filter(&self.event_file(&system, &event, "filter"), &before);
        }
        if let Some(kb) = self.buffer_kb_before.take() {
            let _ = self.write("buffer_size_kb", &kb);
        }
        if let Some(on) = self.tracing_on_before.take() {
            // SAFETY: valid instance.
            unsafe {
                if on {
                    sys::tracefs_trace_on(self.ptr.as_ptr());
                } else {
                    sys::tracefs_trace_off(self.ptr.as_ptr());
                }
            }
        }
        if self.created {
            // SAFETY: valid instance; freed below and never used again.
            let rc = unsafe { sys::tracefs_instance_destroy(self.ptr.as_ptr()) };
            if rc < 0 && first_err.is_none() {
                first_err = Some(TraceError::Io(
                    format!("removing tracefs instance {}", self.name),
                    std::io::Error::last_os_error(),
                ));
            }
        }
        // SAFETY: the handle is freed exactly once (`freed` is set above).
        unsafe { sys::tracefs_instance_free(self.ptr.as_ptr()) };
        first_err.map_or(Ok(()), Err)
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.restore();
    }
}

/// Writes a previous filter back (`none` means no filter: write `0`).
fn restore_filter(path: &Path, before: &str) -> std::io::Result<()> {
    let b = before.trim();
    if b.is_empty() || b == "none" || b.starts_with("###") {
        fs::write(path, "0")
    } else {
        fs::write(path, b)
    }
}

/// Removes `glk-PID` instances whose process is gone (a glk that was killed -9). Returns
/// the names removed.
pub fn remove_stale(tfs: &Tracefs) -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(rd) = fs::read_dir(tfs.dir().join("instances")) else {
        return removed;
    };
    for e in rd.flatten() {
        let Ok(name) = e.file_name().into_string() else {
            continue;
        };
        let Some(pid) = name.strip_prefix(PRIVATE_PREFIX) else {
            continue;
        };
        if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if Path::new("/proc").join(pid).exists() {
            continue;
        }
        let dir = e.path();
        let _ = fs::write(dir.join("tracing_on"), "0");
        let _ = fs::write(dir.join("events/enable"), "0");
        if fs::remove_dir(&dir).is_ok() {
            removed.push(name);
        }
    }
    removed
}
