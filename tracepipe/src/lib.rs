//! Safe tracefs control: locating (or mounting) tracefs, private instances, events, filters
//! and buffer sizes, every change made through a guard that restores it.
//!
//! [`Tracefs::locate`] finds (or, as root, mounts) tracefs; an [`Instance`] is a guard
//! through which every change is made and which restores everything when dropped, on
//! normal exit, on a stop signal ([`stop`]) or on a panic. Decoding what the instance
//! records is `traceparse`'s work; this crate only controls.

pub mod error;
pub mod instance;
pub mod raw;
pub mod stop;
pub mod tracefs;

pub use error::TraceError;
pub use instance::{Instance, Losses};
pub use tracefs::{Released, Tracefs};
