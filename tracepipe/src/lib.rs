//! Safe tracefs control (private instances, events, filters) and typed decoding of the
//! `gfs2:*` tracepoints.
//!
//! Control: [`Tracefs::locate`] finds (or, as root, mounts) tracefs; an [`Instance`] is a
//! guard through which every change is made and which restores everything when dropped.
//! [`BlockReader`] reads a live `trace_pipe` or a saved file on its own thread.
//!
//! Decoding: [`line::parse`] splits an ftrace text line (any prefix variant) and
//! [`event::decode`] turns a gfs2 body into a [`Gfs2Event`]; [`decode_line`] does both.

mod error;
pub mod event;
pub mod format;
pub mod instance;
pub mod line;
pub mod reader;
pub mod stop;
pub mod tracefs;

pub use error::TraceError;
pub use instance::{Instance, Losses};
pub use reader::BlockReader;
pub use tracefs::Tracefs;

pub use event::{Dev, DlmMode, Gfs2Event, LockTime, TraceFlags, GFS2_EVENTS};
pub use line::{Line, TraceLine};

/// A decoded line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// A gfs2 event, decoded.
    Gfs2 {
        line: TraceLine<'a>,
        dev: Dev,
        event: Gfs2Event,
    },
    /// A gfs2 event whose body matched no known format (kept raw).
    Undecoded(TraceLine<'a>),
    /// Any other event (sched, block, ftrace print, ...), kept raw.
    Other(TraceLine<'a>),
    /// `CPU:N [LOST M EVENTS]`.
    Lost { cpu: u32, events: u64 },
    /// Headers and blank lines.
    Header,
}

/// Parses a line of trace text and decodes gfs2 events.
pub fn decode_line(text: &[u8]) -> Result<Decoded<'_>, line::BadLine> {
    Ok(match line::parse(text)? {
        Line::Event(l) => match l.event.strip_prefix(b"gfs2_") {
            Some(name) => match event::decode(name, l.body) {
                Some((dev, event)) => Decoded::Gfs2 {
                    line: l,
                    dev,
                    event,
                },
                None => Decoded::Undecoded(l),
            },
            None => Decoded::Other(l),
        },
        Line::Lost { cpu, events } => Decoded::Lost { cpu, events },
        Line::Header => Decoded::Header,
    })
}
