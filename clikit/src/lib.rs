//! What the node tool (`glk`) and the polars engine (`glk-engine`) share, so that they
//! present one command line: the arguments of the analysis commands and of `export` (which
//! `glk` lists in its help, man page and completions, and forwards to the engine), text
//! formatting, diagnostics on stderr and in JSON, and color.
//!
//! This crate has no polars and no tracefs: both binaries link it.

#![forbid(unsafe_code)]

pub mod args;
pub mod color;
pub mod diag;
pub mod fmt;

pub use color::{Color, Paint};

/// The exit status of a command's result, its error said on stderr as `glk: …`. A closed
/// pipe (`glk top | head`) is a normal way to stop reading, not an error.
pub fn exit(result: std::io::Result<()>) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("glk: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
