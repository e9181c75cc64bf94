//! trace-cmd's binary `trace.dat` (trace-cmd.dat(5)). A file is a trace.dat by its magic
//! bytes, whatever its name.
//!
//! glk reads it itself ([`crate::raw::datfile`]): versions 6 and 7, uncompressed or zstd
//! (what trace-cmd 2.x and 3.x write by default), the top instance's pages through the same
//! page decoder and print formats as a live `trace_pipe_raw`, so the lines are the kernel's
//! own (the glock flags as the kernel's letters, where `trace-cmd report` prints hex) and
//! no trace-cmd is needed on the analyst's machine. What glk does not read itself (another
//! compression, a big-endian file, times trace-cmd shifts or converts, an event format it
//! cannot print) goes through `trace-cmd report -i FILE`, which knows every variant; glk
//! says to install trace-cmd when it is missing. libtracecmd was not taken: it would link
//! a library of the analyst's distribution's version into glk for what is, once the pages
//! are read, a few hundred lines.

use std::io::{self, Read};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};

/// How a trace-cmd `trace.dat` begins: three magic bytes, then `tracing`.
pub const MAGIC: &[u8] = b"\x17\x08\x44tracing";

/// Whether `path` is a trace.dat (by its first bytes).
pub fn is_dat(path: &Path) -> io::Result<bool> {
    let mut head = [0u8; 10];
    let mut f = std::fs::File::open(path)?;
    let mut n = 0;
    while n < head.len() {
        match f.read(&mut head[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(head[..n] == *MAGIC)
}

/// `trace-cmd report -i FILE`'s output as it comes. At its end, a trace-cmd that failed is
/// an error with its own first message line; dropped early, the child is killed.
pub struct Report {
    child: Child,
    out: ChildStdout,
    /// Bytes read so far.
    read: u64,
    errors: Option<std::thread::JoinHandle<Vec<u8>>>,
}

/// Starts `trace-cmd report` on the trace.dat `path`. Its errors, like [`open`]'s, do not
/// name the file.
pub fn report(path: &Path) -> io::Result<Report> {
    let mut child = Command::new("trace-cmd")
        .arg("report")
        .arg("-i")
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    "a trace-cmd trace.dat, which glk reads through `trace-cmd report`: \
                     install trace-cmd (apt-get install trace-cmd, dnf install trace-cmd)",
                )
            } else {
                io::Error::new(e.kind(), format!("trace-cmd report: {e}"))
            }
        })?;
    let out = child.stdout.take().expect("stdout is piped");
    let mut err = child.stderr.take().expect("stderr is piped");
    let errors = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    Ok(Report {
        child,
        out,
        read: 0,
        errors: Some(errors),
    })
}

impl Read for Report {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.out.read(buf)?;
        self.read += n as u64;
        if n == 0 && !buf.is_empty() && self.errors.is_some() {
            let status = self.child.wait()?;
            let stderr = self
                .errors
                .take()
                .and_then(|t| t.join().ok())
                .unwrap_or_default();
            if !status.success() {
                let msg = String::from_utf8_lossy(&stderr);
                let first = msg.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                return Err(io::Error::other(format!(
                    "trace-cmd report failed ({status}): {first}"
                )));
            }
            if self.read == 0 {
                // Even an empty trace reports its header: nothing at all is a damaged file.
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "trace-cmd report printed nothing (a damaged or truncated trace.dat?)",
                ));
            }
        }
        Ok(n)
    }
}

impl Drop for Report {
    fn drop(&mut self) {
        if self.errors.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Opens a saved trace: a trace.dat as its lines (read by glk, or through `trace-cmd
/// report` when glk does not read that kind itself), anything else as plain or compressed
/// text ([`glockparse::input::decompress`]). Its errors, and its reader's, do not name the
/// file: the caller names every error of its input.
pub fn open(path: &Path) -> io::Result<Box<dyn Read + Send>> {
    if !is_dat(path)? {
        return glockparse::input::decompress(std::fs::File::open(path)?);
    }
    match crate::raw::datfile::DatLines::open(path) {
        Ok(lines) => Ok(Box::new(lines)),
        Err(crate::raw::datfile::DatError::Unsupported(why)) => report(path)
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("{e} (glk reads this trace.dat only so: {why})"),
                )
            })
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
        Err(e) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a trace.dat, {e}"),
        )),
    }
}
