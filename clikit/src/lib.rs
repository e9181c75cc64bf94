//! What the node tool (`glk`) and the analyst's engine (`glk-engine`) share, so that they
//! present one command line: the arguments of the engine's commands (which `glk` lists in
//! its help, man page and completions, and forwards), text formatting, diagnostics on
//! stderr and in JSON, and color.
//!
//! This crate has no polars and no tracefs: both binaries link it.

pub mod args;
pub mod color;
pub mod diag;
pub mod fmt;

pub use color::{Color, Paint};
