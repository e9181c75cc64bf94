//! Raw declarations for the parts of libtracefs (≥ 1.2) that glk uses. Strings returned
//! as `*mut c_char` are owned by the caller and freed with `libc::free` unless noted;
//! string lists are freed with [`tracefs_list_free`]. See `man 3 libtracefs`.
#![allow(non_camel_case_types)]

use libc::{c_char, c_int};

/// Opaque libtracefs instance handle.
#[repr(C)]
pub struct tracefs_instance {
    _private: [u8; 0],
}

extern "C" {
    /// The tracefs mount point (mounting it if it is not mounted). Owned by the library.
    pub fn tracefs_tracing_dir() -> *const c_char;
    /// Makes libtracefs use `dir` as the tracefs mount point.
    pub fn tracefs_set_tracing_dir(dir: *mut c_char) -> c_int;

    /// Creates `instances/NAME` if it does not exist, else opens it.
    pub fn tracefs_instance_create(name: *const c_char) -> *mut tracefs_instance;
    /// Opens an existing instance without creating it.
    pub fn tracefs_instance_alloc(
        tracing_dir: *const c_char,
        name: *const c_char,
    ) -> *mut tracefs_instance;
    /// Removes the instance directory (fails with EBUSY while its trace_pipe is open).
    pub fn tracefs_instance_destroy(instance: *mut tracefs_instance) -> c_int;
    /// Frees the handle (the directory stays).
    pub fn tracefs_instance_free(instance: *mut tracefs_instance);
    /// True when [`tracefs_instance_create`] created the directory.
    pub fn tracefs_instance_is_new(instance: *mut tracefs_instance) -> bool;
    /// Whether `instances/NAME` exists.
    pub fn tracefs_instance_exists(name: *const c_char) -> bool;
    /// Free with [`tracefs_put_tracing_file`].
    pub fn tracefs_instance_get_dir(instance: *mut tracefs_instance) -> *mut c_char;
    /// Frees a path returned by the library.
    pub fn tracefs_put_tracing_file(name: *mut c_char);
    /// Writes `text` to the instance's `file` (truncating it); bytes written, or -1.
    pub fn tracefs_instance_file_write(
        instance: *mut tracefs_instance,
        file: *const c_char,
        text: *const c_char,
    ) -> c_int;
    /// Reads the instance's `file` (its size into `psize` when not NULL); NULL on error.
    pub fn tracefs_instance_file_read(
        instance: *mut tracefs_instance,
        file: *const c_char,
        psize: *mut c_int,
    ) -> *mut c_char;
    /// Instance names matching `regex` (NULL for all).
    pub fn tracefs_instances(regex: *const c_char) -> *mut *mut c_char;

    /// 1 when the instance's `tracing_on` is 1, 0 when it is 0, -1 on error.
    pub fn tracefs_trace_is_on(instance: *mut tracefs_instance) -> c_int;
    /// Sets the instance's `tracing_on` to 1.
    pub fn tracefs_trace_on(instance: *mut tracefs_instance) -> c_int;
    /// Sets the instance's `tracing_on` to 0.
    pub fn tracefs_trace_off(instance: *mut tracefs_instance) -> c_int;

    /// `system` or `event` NULL means all; both are regular expressions.
    pub fn tracefs_event_enable(
        instance: *mut tracefs_instance,
        system: *const c_char,
        event: *const c_char,
    ) -> c_int;
    /// Disables the matching events (NULL: all), as [`tracefs_event_enable`] enables them.
    pub fn tracefs_event_disable(
        instance: *mut tracefs_instance,
        system: *const c_char,
        event: *const c_char,
    ) -> c_int;
    /// Reads a file of an event's directory (`filter`, `enable`, `format`...).
    pub fn tracefs_event_file_read(
        instance: *mut tracefs_instance,
        system: *const c_char,
        event: *const c_char,
        file: *const c_char,
        psize: *mut c_int,
    ) -> *mut c_char;
    /// Writes a file of an event's directory (`filter`: the kernel checks the expression).
    pub fn tracefs_event_file_write(
        instance: *mut tracefs_instance,
        system: *const c_char,
        event: *const c_char,
        file: *const c_char,
        text: *const c_char,
    ) -> c_int;

    /// The event systems of the tracefs at `tracing_dir`; free with [`tracefs_list_free`].
    pub fn tracefs_event_systems(tracing_dir: *const c_char) -> *mut *mut c_char;
    /// The events of `system`; free with [`tracefs_list_free`].
    pub fn tracefs_system_events(
        tracing_dir: *const c_char,
        system: *const c_char,
    ) -> *mut *mut c_char;
    /// Frees a string list returned by the library.
    pub fn tracefs_list_free(list: *mut *mut c_char);

    /// The last line of the tracing `error_log` for this instance.
    pub fn tracefs_error_last(instance: *mut tracefs_instance) -> *mut c_char;
    /// Clears the instance's `error_log`.
    pub fn tracefs_error_clear(instance: *mut tracefs_instance) -> c_int;
}
