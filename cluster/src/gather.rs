//! What a node's agent sends, written below a directory as it comes ([`NodeDir`], the
//! [`FileSink`] of every cluster command): only into that node's own directory, never so
//! much that less than [`bundle::room::RESERVE_PERCENT`] of the filesystem is left free,
//! and nothing of a batch left behind when it does not end.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use glockparse::quote::quote;

use crate::protocol::Packed;
use crate::session::FileSink;

/// The write buffer of the file being written: every node's batch is written at once,
/// each through one.
const WRITE_BUFFER: usize = 128 << 10;

/// One node's batch, written below `dir` frame by frame.
pub struct NodeDir<'a> {
    dir: &'a Path,
    own: &'a str,
    open: Option<Open>,
    written: Vec<PathBuf>,
}

/// The file being written: its path and its writer.
struct Open {
    path: PathBuf,
    w: BufWriter<File>,
}

impl<'a> NodeDir<'a> {
    /// A batch of the node whose directory is named `own` (`NODE/...` or `FS/NODE/...`
    /// below `dir`).
    pub fn new(dir: &'a Path, own: &'a str) -> NodeDir<'a> {
        NodeDir {
            dir,
            own,
            open: None,
            written: Vec::new(),
        }
    }

    /// Ends a batch that ended: its last file flushed. Returns the files written, relative
    /// to the directory, in the order they came; on an error nothing of them is left.
    pub fn finish(mut self) -> Result<Vec<PathBuf>, String> {
        match self.close() {
            Ok(()) => Ok(std::mem::take(&mut self.written)),
            Err(why) => {
                self.discard();
                Err(why)
            }
        }
    }

    /// Removes what was written of a batch that did not end (its node stopped answering,
    /// or broke the protocol): no half-sent file is read as the node's.
    pub fn discard(mut self) {
        self.open = None;
        for rel in std::mem::take(&mut self.written) {
            let _ = std::fs::remove_file(self.dir.join(&rel));
            // The directories made for it, when nothing else is in them.
            for parent in rel.ancestors().skip(1) {
                if parent.as_os_str().is_empty()
                    || std::fs::remove_dir(self.dir.join(parent)).is_err()
                {
                    break;
                }
            }
        }
    }

    /// Flushes the file being written, if any.
    fn close(&mut self) -> Result<(), String> {
        match self.open.take() {
            Some(mut o) => o.w.flush().map_err(|e| failed(&o.path, e)),
            None => Ok(()),
        }
    }

    /// `rel` as a path this node may write: below its own directory.
    fn check_own(&self, rel: &Path) -> Result<(), String> {
        let mut parts = rel.iter().map(|p| p.to_string_lossy());
        let first = parts.next().unwrap_or_default();
        let second = parts.next().unwrap_or_default();
        if first == self.own || second == self.own {
            return Ok(());
        }
        Err(format!(
            "it sent {}, outside its directory",
            quote(rel.to_string_lossy().as_bytes(), 80)
        ))
    }

    /// Starts the file `rel`, creating its directories.
    fn start(&mut self, rel: &Path) -> Result<(), String> {
        self.close()?;
        let path = self.dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| failed(&path, e))?;
        }
        let f = File::create(&path).map_err(|e| failed(&path, e))?;
        if !self.written.iter().any(|w| w == rel) {
            self.written.push(rel.to_path_buf());
        }
        self.open = Some(Open {
            path,
            w: BufWriter::with_capacity(WRITE_BUFFER, f),
        });
        Ok(())
    }
}

/// Why writing `path` failed, in words.
fn failed(path: &Path, e: io::Error) -> String {
    format!("writing its files: {}: {e}", path.display())
}

impl FileSink for NodeDir<'_> {
    fn frame(&mut self, rel: &Path, data: &Packed, append: bool) -> Result<(), String> {
        self.check_own(rel)?;
        if !append {
            self.start(rel)?;
        }
        let Some(open) = self.open.as_mut() else {
            return Err("a frame continues no file".into());
        };
        let room = open
            .path
            .parent()
            .and_then(bundle::room::left)
            .unwrap_or(u64::MAX);
        // A frame that says it will not fit is refused before a byte of it is written:
        // a node half-way through a file too large would leave the others no room.
        if data.declared_size().is_some_and(|n| n > room) {
            return Err(failed(&open.path, no_room()));
        }
        let mut within = Within {
            w: &mut open.w,
            left: room,
        };
        match data.unpack_to(&mut within) {
            Ok(_) => Ok(()),
            Err(e) => Err(failed(&open.path, e)),
        }
    }
}

/// Why a node's file is not written: the filesystem's reserve.
fn no_room() -> io::Error {
    io::Error::other(format!(
        "it would leave less than {}% of the filesystem free",
        bundle::room::RESERVE_PERCENT
    ))
}

/// A writer that refuses to write more than `left` bytes.
struct Within<'w, W> {
    w: &'w mut W,
    left: u64,
}

impl<W: Write> Write for Within<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.len() as u64 > self.left {
            return Err(no_room());
        }
        let n = self.w.write(buf)?;
        self.left -= n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{self, Received};

    /// The frames of `files` as a node sends them, read back.
    fn frames(files: &[(&str, &[u8])]) -> Vec<(PathBuf, Packed, bool)> {
        let mut w = Vec::new();
        for (p, d) in files {
            protocol::write_file(&mut w, p, d).unwrap();
        }
        let mut r = io::Cursor::new(w);
        let mut out = Vec::new();
        while let Some(Received::File(p, d, append)) = protocol::read_frame(&mut r).unwrap() {
            out.push((p, d, append));
        }
        out
    }

    /// Gives `frames` to a node `n1`'s batch below `dir`, then finishes it.
    fn take(dir: &Path, frames: &[(PathBuf, Packed, bool)]) -> Result<Vec<PathBuf>, String> {
        let mut sink = NodeDir::new(dir, "n1");
        for (p, d, append) in frames {
            if let Err(why) = sink.frame(p, d, *append) {
                sink.discard();
                return Err(why);
            }
        }
        sink.finish()
    }

    #[test]
    fn a_node_writes_only_its_own_directory() {
        let d = tempfile::tempdir().unwrap();
        let ok = frames(&[("n1/glocks.0", b"G:"), ("lab_gfs/n1/time.0", b"1\n")]);
        let written = take(d.path(), &ok).unwrap();
        assert_eq!(
            written,
            [Path::new("n1/glocks.0"), Path::new("lab_gfs/n1/time.0")]
        );
        assert_eq!(std::fs::read(d.path().join("n1/glocks.0")).unwrap(), b"G:");
        // Another node's file, even after its own: nothing of the batch is left.
        let bad = frames(&[("n1/glocks.1", b"G:"), ("n2/glocks.0", b"G:")]);
        let e = take(d.path(), &bad).unwrap_err();
        assert!(e.contains("n2/glocks.0"), "{e}");
        assert!(!d.path().join("n1/glocks.1").exists());
        assert!(!d.path().join("n2").exists());
        // What an earlier batch wrote stays.
        assert!(d.path().join("n1/glocks.0").exists());
    }

    #[test]
    fn a_file_in_several_frames_is_written_whole() {
        let d = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..3 * protocol::CHUNK as u32 / 2)
            .map(|i| (i % 251) as u8)
            .collect();
        let mut w = Vec::new();
        protocol::write_file_from(&mut w, "n1/trace_pipe.txt", &data[..]).unwrap();
        let mut r = io::Cursor::new(w);
        let mut got = Vec::new();
        while let Some(Received::File(p, d, append)) = protocol::read_frame(&mut r).unwrap() {
            got.push((p, d, append));
        }
        assert_eq!(got.iter().filter(|f| f.2).count(), 1);
        take(d.path(), &got).unwrap();
        assert_eq!(
            std::fs::read(d.path().join("n1/trace_pipe.txt")).unwrap(),
            data
        );
    }

    #[test]
    fn a_batch_that_does_not_end_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        let mut sink = NodeDir::new(d.path(), "n1");
        for (p, data, append) in frames(&[
            ("lab_gfs/n1/glocks.0", b"G:"),
            ("lab_gfs/n1/glstats.0", b"G:"),
        ]) {
            sink.frame(&p, &data, append).unwrap();
        }
        sink.discard();
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[test]
    fn writing_stops_before_the_reserve() {
        let mut out = Vec::new();
        let mut w = Within {
            w: &mut out,
            left: 4,
        };
        w.write_all(b"abcd").unwrap();
        let e = w.write_all(b"e").unwrap_err();
        assert!(e.to_string().contains("5% of the filesystem free"), "{e}");
        assert_eq!(out, b"abcd");
    }
}
