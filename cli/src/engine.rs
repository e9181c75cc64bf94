//! The polars engine, `glk-engine`: a second binary, which `glk` runs for the commands
//! that need polars (`export`, `fleet`, `trace -o FILE.parquet`). It is looked
//! for next to `glk` first (an installed package, a cargo target directory), then on PATH.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The engine binary's file name.
pub const BINARY: &str = "glk-engine";

/// The `glk-engine` to run, or an error that says how to get one.
pub fn locate() -> io::Result<PathBuf> {
    if let Some(p) = std::env::var_os("GLK_ENGINE").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if is_executable(&p) {
            Ok(p)
        } else {
            Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("GLK_ENGINE={}: not an executable file", p.display()),
            ))
        };
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join(BINARY)));
    let on_path = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(BINARY))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    beside
        .into_iter()
        .chain(on_path)
        .find(|p| is_executable(p))
        .ok_or_else(missing)
}

fn missing() -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!(
            "this command needs glk's polars engine, `{BINARY}`, which is not installed \
             (looked next to glk and on PATH). Install the glk-engine package (.deb or .rpm), \
             or build it with `cargo build --release -p glk-engine` and put {BINARY} next \
             to glk; or copy the capture to a workstation that has it. glk itself does \
             every other command, analyze, doctor and report included."
        ),
    )
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Replaces this process with the engine, given glk's own arguments (without `argv[0]`).
/// Returns only on failure.
pub fn exec(args: impl IntoIterator<Item = OsString>) -> io::Error {
    use std::os::unix::process::CommandExt;
    match locate() {
        Ok(engine) => {
            let e = Command::new(&engine).args(args).exec();
            io::Error::new(e.kind(), format!("{}: {e}", engine.display()))
        }
        Err(e) => e,
    }
}

/// A command that runs the engine with `args`.
pub fn command<I, S>(args: I) -> io::Result<Command>
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let mut c = Command::new(locate()?);
    c.args(args);
    Ok(c)
}
