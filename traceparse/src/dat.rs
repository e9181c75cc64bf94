//! trace-cmd's binary `trace.dat` (trace-cmd.dat(5)), read through trace-cmd itself:
//! `trace-cmd report -i FILE` turns it into the text glk decodes, with every version of the
//! format, its compression and its per-CPU buffers merged in time order as trace-cmd knows
//! them. A file is a trace.dat by its magic bytes, whatever its name.
//!
//! Why the producer's own tool and not a reader of our own or libtracecmd: the format has
//! changed across trace-cmd versions (v6, v7 with compressed sections and several buffers),
//! and the files come from the machines that have trace-cmd; libtracecmd would link a
//! library of the same version into glk for files glk only needs as text, and a reader of
//! our own would have to follow each of those changes. The analyst's machine needs
//! trace-cmd (it is in every distribution); glk says so when it is missing.

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
    file: String,
}

/// Starts `trace-cmd report` on the trace.dat `path`.
pub fn report(path: &Path) -> io::Result<Report> {
    let file = path.display().to_string();
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
                    format!(
                        "{file}: a trace-cmd trace.dat, which glk reads through `trace-cmd \
                         report`: install trace-cmd (apt-get install trace-cmd, dnf install \
                         trace-cmd)"
                    ),
                )
            } else {
                io::Error::new(e.kind(), format!("{file}: trace-cmd report: {e}"))
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
        file,
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
                    "{}: trace-cmd report failed ({status}): {first}",
                    self.file
                )));
            }
            if self.read == 0 {
                // Even an empty trace reports its header: nothing at all is a damaged file.
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{}: trace-cmd report printed nothing (a damaged or truncated trace.dat?)",
                        self.file
                    ),
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

/// Opens a saved trace: a trace.dat through `trace-cmd report`, anything else as
/// [`glockparse::input::open`] does (plain or compressed text).
pub fn open(path: &Path) -> io::Result<Box<dyn Read + Send>> {
    if is_dat(path)? {
        return Ok(Box::new(report(path)?));
    }
    glockparse::input::open(path)
}
