//! Parsing for the GFS2 debugfs `glocks` and `glockfd` files (and the DLM lock dump of a
//! GFS2 lockspace), as every kernel from 3.10
//! to 6.18 writes them, plus the kernel-log form (`gfs2: fsid=...: G: ...`) and glocktop
//! output.
//!
//! ```no_run
//! use glockparse::{Glock, GlockReader};
//! let mut reader = GlockReader::open("glocks".as_ref())?;
//! let mut g = Glock::default();
//! while reader.next_into(&mut g) {
//!     if g.waiter_count() > 0 {
//!         println!("{} has {} waiters", g.id, g.waiter_count());
//!     }
//! }
//! for e in &reader.diagnostics().first_errors {
//!     eprintln!("{e}");
//! }
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! [`GlockId`] is the one glock identity every glk crate uses; it prints as the glocks
//! file does (`2/11c2a`), and a tracepoint's decimal `2:72746` parses to the same id.

pub mod align;
pub mod brief;
pub mod cursor;
pub mod diagnostics;
pub mod dlm_locks;
pub mod flags;
pub mod glockfd;
pub mod grammar;
pub mod id;
pub mod input;
mod intern;
pub mod lines;
pub mod lkstats;
pub mod mode;
pub mod num;
pub mod parallel;
mod parse;
pub mod plocks;
pub mod quote;
mod reader;
pub mod record;
pub mod scan;
pub mod state;
mod window;

pub use brief::Brief;
pub use diagnostics::{Diagnostics, ParseError};
pub use flags::{GlockFlags, HolderFlags};
pub use glockfd::GlockFd;
pub use id::{GlockId, GlockType};
pub use lkstats::LkStats;
pub use mode::DlmMode;
pub use reader::{Entry, GlockReader};
pub use record::{Glock, Holder, InodeInfo, Reservation, RgrpInfo, RgrpLvb, Token};
pub use state::LockState;
