//! Typed decoding of saved or streamed ftrace text: the line prefix in every variant, every
//! `gfs2:*` and `dlm:*` tracepoint body, and a block reader that hands out whole lines.
//!
//! This crate never touches tracefs: it builds without libtracefs, so the analysis engine
//! and offline tools can decode traces anywhere. Controlling tracefs (instances, events,
//! filters) lives in `tracepipe`.
//!
//! [`line::parse`] splits an ftrace text line (any prefix variant) and [`event::decode`]
//! turns a gfs2 body into a [`Gfs2Event`], [`dlm::decode`] a dlm body into a [`DlmEvent`];
//! [`decode_line`] does both. [`BlockReader`] reads a
//! stream (a file, a pipe, a live `trace_pipe`) on its own thread, in blocks of whole lines;
//! [`parallel::for_each_line`] decodes one large saved file on several threads.

pub mod dat;
pub mod dlm;
pub mod event;
pub mod format;
pub mod grammar;
pub mod line;
pub mod parallel;
pub mod raw;
pub mod reader;
pub mod sink;

pub use reader::BlockReader;

pub use dlm::{DlmEvent, Resource, DLM_EVENTS};
pub use event::{Dev, DlmMode, Gfs2Event, LockTime, TraceFlags, GFS2_EVENTS};
pub use line::{Line, TraceLine};

/// A decoded line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// A gfs2 event, decoded.
    Gfs2 {
        /// The ftrace prefix and the raw event name and body.
        line: TraceLine<'a>,
        /// The filesystem's device.
        dev: Dev,
        /// The typed event.
        event: Gfs2Event,
    },
    /// A dlm event, decoded.
    Dlm {
        /// The ftrace prefix and the raw event name and body.
        line: TraceLine<'a>,
        /// The typed event.
        event: DlmEvent,
    },
    /// A gfs2 or dlm event whose body matched no known format (kept raw).
    Undecoded(TraceLine<'a>),
    /// Any other event (sched, block, ftrace print, ...), kept raw.
    Other(TraceLine<'a>),
    /// `CPU:N [LOST M EVENTS]`, or `CPU:N [LOST EVENTS]`.
    Lost {
        /// The CPU whose ring buffer overflowed.
        cpu: u32,
        /// How many events it lost; None when the kernel did not know.
        events: Option<u64>,
    },
    /// Headers and blank lines.
    Header,
}

/// Parses a line of trace text and decodes gfs2 and dlm events. Inlined: the decoded
/// line is a few hundred bytes, which a call would copy out.
#[inline]
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
            None => match l.event.strip_prefix(b"dlm_") {
                Some(name) => match dlm::decode(name, l.body) {
                    Some(event) => Decoded::Dlm { line: l, event },
                    None => Decoded::Undecoded(l),
                },
                None => Decoded::Other(l),
            },
        },
        Line::Lost { cpu, events } => Decoded::Lost { cpu, events },
        Line::Header => Decoded::Header,
    })
}

/// The events a trace says were lost: the sum of its `CPU:N [LOST M EVENTS]` lines, and
/// how many `CPU:N [LOST EVENTS]` lines said that events were lost without a count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LostEvents {
    /// Events lost, as counted.
    pub counted: u64,
    /// Losses of unknown size.
    pub uncounted: u64,
}

impl LostEvents {
    /// Adds one lost-events line's count (None: unknown).
    pub fn add(&mut self, events: Option<u64>) {
        match events {
            Some(n) => self.counted += n,
            None => self.uncounted += 1,
        }
    }

    /// Adds another's losses.
    pub fn merge(&mut self, o: LostEvents) {
        self.counted += o.counted;
        self.uncounted += o.uncounted;
    }

    /// Whether any loss was said.
    pub fn any(&self) -> bool {
        self.counted > 0 || self.uncounted > 0
    }
}

impl std::fmt::Display for LostEvents {
    /// How many events were lost: `17`, or `at least 19` when two losses were of unknown
    /// size (each lost one event at least).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.uncounted {
            0 => write!(f, "{}", self.counted),
            u => write!(f, "at least {}", self.counted + u),
        }
    }
}
