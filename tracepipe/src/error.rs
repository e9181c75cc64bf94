//! Errors from tracefs control, each a sentence a user can act on.

use std::fmt;
use std::io;

#[derive(Debug)]
pub enum TraceError {
    /// tracefs is not mounted and glk may not mount it.
    NoTracefs(String),
    /// Not root (or no CAP_SYS_ADMIN) for a live trace.
    Permission(String),
    /// The gfs2 event system does not exist in this kernel.
    NoGfs2,
    /// An event named on the command line does not exist.
    UnknownEvent(String),
    /// The kernel rejected an event filter; holds the kernel's own message.
    BadFilter {
        event: String,
        kernel: String,
    },
    Io(String, io::Error),
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::NoTracefs(m) | TraceError::Permission(m) => f.write_str(m),
            TraceError::NoGfs2 => {
                f.write_str("gfs2 events not available: is the gfs2 module loaded? (modprobe gfs2)")
            }
            TraceError::UnknownEvent(e) => write!(f, "no such trace event: {e}"),
            TraceError::BadFilter { event, kernel } => {
                write!(f, "the kernel rejected the filter for {event}: {kernel}")
            }
            TraceError::Io(what, e) => write!(f, "{what}: {e}"),
        }
    }
}

impl std::error::Error for TraceError {}
