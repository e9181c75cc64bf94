//! Decoding of the GFS2 debugfs `glstats` and `sbstats` (lkstats) files, metrics derived
//! from them, and DLM round-trip distributions from `gfs2_glock_lock_time` events.
//!
//! All times are integer nanoseconds, as the kernel keeps them; the "var" fields are
//! smoothed mean absolute deviations (Jacobson/Karels), not variances.

#![forbid(unsafe_code)]

pub mod dist;
pub mod glstats;
pub mod lock_time;
pub mod metrics;
pub mod sbstats;
mod value;

pub use glstats::GlStat;
pub use lock_time::{Distribution, LockTimes};
pub use metrics::{Delta, Derived};
pub use sbstats::{SbStats, Stat, TypeStats};
