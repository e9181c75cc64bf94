//! Errors from tracefs control, each a sentence a user can act on.

use std::fmt;
use std::io;

/// Why a live trace could not be set up or run.
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
        /// The event.
        event: String,
        /// What the kernel said.
        kernel: String,
    },
    /// Reading or writing a tracefs file failed (the file, the error).
    Io(String, io::Error),
    /// Raw pages were asked for and cannot be read (why).
    NoRaw(String),
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
                write!(
                    f,
                    "the kernel rejected the filter for {event}:\n{}",
                    clean_log(kernel)
                )
            }
            TraceError::Io(what, e) => write!(f, "{what}: {e}"),
            TraceError::NoRaw(why) => write!(f, "--reader raw: {why}"),
        }
    }
}

impl std::error::Error for TraceError {}

/// The kernel's error-log text without its `[timestamp] ` prefixes, each line indented, so
/// that the caret line still points under the command.
pub fn clean_log(kernel: &str) -> String {
    kernel
        .lines()
        .map(|l| {
            let t = l.trim_start();
            match t.strip_prefix('[').and_then(|r| r.split_once("] ")) {
                Some((stamp, rest))
                    if stamp
                        .trim()
                        .bytes()
                        .all(|b| b.is_ascii_digit() || b == b'.') =>
                {
                    format!("  {rest}")
                }
                _ => format!("  {l}"),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::clean_log;

    #[test]
    fn error_log_without_timestamps() {
        let log = "[ 1234.567890] event filter parse error: error: Field not found\n  Command: pid == x\n                ^";
        assert_eq!(
            clean_log(log),
            "  event filter parse error: error: Field not found\n    Command: pid == x\n                  ^"
        );
    }
}
