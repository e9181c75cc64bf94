//! Parsing one large plain glocks file on several threads: the file is cut at record
//! boundaries (`\nG:`) and each piece gets its own [`GlockReader`]. Line numbers stay
//! true: each piece's numbers are shifted by the lines of the pieces before it.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::align::{front_for, AlignedBuf, READ_ALIGN};
use crate::diagnostics::Diagnostics;
use crate::input::{Compression, Prefetch};
use crate::reader::GlockReader;

/// Files smaller than this are not worth splitting.
pub const MIN_SPLIT_BYTES: u64 = 8 << 20;

/// Byte ranges that cut `path` into up to `parts` pieces at record boundaries. A file
/// that is compressed, small, of unknown size (debugfs) or not in the plain debugfs form
/// (first line `G:`) comes back as one range covering everything.
pub fn split(path: &Path, parts: usize) -> io::Result<Vec<Range<u64>>> {
    let mut f = File::open(path)?;
    let len = f.metadata()?.len();
    let whole = std::iter::once(0..u64::MAX).collect();
    if parts < 2 || len < MIN_SPLIT_BYTES {
        return Ok(whole);
    }
    let mut head = [0u8; 6];
    let n = read_full(&mut f, &mut head)?;
    if Compression::detect(&head[..n]) != Compression::None || !head.starts_with(b"G:") {
        return Ok(whole);
    }
    let mut cuts = vec![0u64];
    const PROBE: usize = 1 << 20;
    let mut buf = AlignedBuf::zeroed(READ_ALIGN + PROBE);
    for k in 1..parts as u64 {
        let at = len / parts as u64 * k;
        if at <= *cuts.last().unwrap_or(&0) {
            continue;
        }
        f.seek(SeekFrom::Start(at))?;
        // Placed as `crate::align` says, like every read of a large file.
        let probe = &mut buf[front_for(0, at)..][..PROBE];
        let n = read_full(&mut f, probe)?;
        match memchr::memmem::find(&probe[..n], b"\nG:") {
            Some(i) => cuts.push(at + i as u64 + 1),
            None => break,
        }
    }
    cuts.dedup();
    let mut ranges: Vec<Range<u64>> = cuts.windows(2).map(|w| w[0]..w[1]).collect();
    ranges.push(*cuts.last().unwrap_or(&0)..u64::MAX);
    Ok(ranges)
}

fn read_full(f: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// One piece's result.
pub struct Piece<T> {
    /// What the piece's line parsed to.
    pub value: T,
    /// Lines in the pieces before this one: add it to line numbers from this piece.
    pub line_offset: u64,
    /// This piece's diagnostics, with line numbers already shifted.
    pub diagnostics: Diagnostics,
}

/// A glocks file opened for [`Opened::for_each_piece`]: cut into pieces, or, when it
/// cannot be cut (a live debugfs file, a compressed or small one), already being read
/// ahead on a thread. Opening early lets the kernel produce a live file while the caller
/// reads other files.
pub struct Opened {
    path: PathBuf,
    ranges: Vec<Range<u64>>,
    ahead: Option<Prefetch>,
}

/// Opens `path` to be read in up to `parts` pieces; a file that is one piece starts being
/// read at once, up to `ahead` blocks of [`Prefetch::BLOCK`] bytes ahead of its parser.
pub fn open(path: &Path, parts: usize, ahead: usize) -> io::Result<Opened> {
    let ranges = split(path, parts)?;
    let ahead = match ranges[..] {
        [ref r] if r.start == 0 && r.end == u64::MAX => {
            Some(Prefetch::with_depth(crate::input::open(path)?, ahead))
        }
        _ => None,
    };
    Ok(Opened {
        path: path.to_path_buf(),
        ranges,
        ahead,
    })
}

impl Opened {
    /// Runs `work` over every piece on its own thread (one piece for a file that cannot be
    /// split, read through [`crate::input::open`] so compression still works); line
    /// numbers in the results are the file's.
    pub fn for_each_piece<T, F>(mut self, work: F) -> io::Result<Vec<Piece<T>>>
    where
        T: Send,
        F: Fn(&mut GlockReader<Box<dyn Read + Send>>) -> T + Sync,
    {
        let source = self.path.display().to_string();
        let path = &self.path;
        let results: Vec<io::Result<(T, Diagnostics)>> = std::thread::scope(|s| {
            let handles: Vec<_> = self
                .ranges
                .iter()
                .map(|r| {
                    let (r, source, work) = (r.clone(), source.clone(), &work);
                    let ahead = self.ahead.take();
                    s.spawn(move || {
                        let (rdr, offset): (Box<dyn Read + Send>, u64) = match ahead {
                            Some(p) => (Box::new(p), 0),
                            None => {
                                let mut f = File::open(path)?;
                                f.seek(SeekFrom::Start(r.start))?;
                                // The reader reads 1 MiB at a time into its own buffer: no
                                // buffering in between.
                                (Box::new(f.take(r.end - r.start)), r.start)
                            }
                        };
                        let mut reader = GlockReader::new(rdr, source).at_offset(offset);
                        let v = work(&mut reader);
                        Ok((v, reader.into_diagnostics()))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(io::Error::other("parser thread panicked")))
                })
                .collect()
        });
        let mut out = Vec::with_capacity(results.len());
        let mut offset = 0;
        for r in results {
            let (value, mut diagnostics) = r?;
            let lines = diagnostics.lines;
            for e in &mut diagnostics.first_errors {
                e.line += offset;
            }
            if let Some(f) = &mut diagnostics.fatal {
                f.push_str(&format!(" (in the piece starting after line {offset})"));
            }
            out.push(Piece {
                value,
                line_offset: offset,
                diagnostics,
            });
            offset += lines;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Glock;

    #[test]
    fn pieces_cover_the_file_exactly_once_with_true_line_numbers() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path();
        let path = dir.join("glocks");
        let mut text = String::new();
        let mut n = 0u64;
        while (text.len() as u64) < MIN_SPLIT_BYTES + 4096 {
            text.push_str(&format!(
                "G:  s:EX n:2/{n:x} f:q t:EX d:EX/0 a:0 v:0 r:3 m:200\n H: s:EX f:H e:0 p:1 [a] f+0x1/0x2\n"
            ));
            n += 1;
        }
        text.push_str("bogus line\n");
        std::fs::write(&path, &text).unwrap();
        assert!(split(&path, 4).unwrap().len() > 1);
        let pieces = open(&path, 4, Prefetch::BLOCKS)
            .unwrap()
            .for_each_piece(|r| {
                let mut g = Glock::default();
                let mut v = Vec::new();
                while r.next_into(&mut g) {
                    v.push((g.id.number, g.line));
                }
                v
            })
            .unwrap();
        let mut all: Vec<(u64, u64)> = Vec::new();
        for p in &pieces {
            all.extend(p.value.iter().map(|(id, l)| (*id, l + p.line_offset)));
        }
        assert_eq!(all.len() as u64, n);
        for (i, (id, line)) in all.iter().enumerate() {
            assert_eq!((*id, *line), (i as u64, 2 * i as u64 + 1));
        }
        let errors: Vec<u64> = pieces
            .iter()
            .flat_map(|p| p.diagnostics.first_errors.iter().map(|e| e.line))
            .collect();
        assert_eq!(errors, vec![2 * n + 1]);
    }
}
