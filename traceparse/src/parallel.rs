//! Decoding one large saved trace on several threads. The file is cut into fixed-size
//! chunks; a line belongs to the chunk its first byte is in, so every line is seen exactly
//! once whatever the chunk size. Each thread reads its chunks with `pread` into its own
//! buffer (no reader thread, no copy between threads) and keeps its own state; the caller
//! merges the states, since counting work does not depend on the order of lines.
//!
//! Line numbers stay exact: each line is given as a [`LinePos`] (its chunk and its index in
//! the chunk), which the returned [`LineMap`] turns into the 1-based line number.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use glockparse::align::{front_for, AlignedBuf, READ_ALIGN};
use glockparse::input::Compression;

/// Files smaller than this are decoded on one thread.
pub const MIN_SPLIT_BYTES: u64 = 8 << 20;
/// Bytes per chunk: small enough that a chunk is still in cache when it is decoded.
const CHUNK: u64 = 256 << 10;
/// A line running this far past the end of its chunk sends the file back to the
/// sequential reader, which bounds memory for lines without end.
const MAX_OVERRUN: usize = 4 << 20;
/// Bytes read at first while finishing a chunk's last line (doubling while the line goes on).
const STEP: usize = 1 << 10;

/// Where a line is: the chunk it starts in and its 0-based index among that chunk's lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct LinePos {
    /// The chunk.
    pub chunk: u64,
    /// The line's index in it.
    pub index: u64,
}

/// The line count of every chunk, to turn a [`LinePos`] into a line number.
#[derive(Debug, Clone)]
pub struct LineMap {
    /// Lines in the chunks before chunk `k`.
    before: Vec<u64>,
    total: u64,
}

impl LineMap {
    /// The 1-based line number of `pos`.
    pub fn line_number(&self, pos: LinePos) -> u64 {
        let k = usize::try_from(pos.chunk).unwrap_or(usize::MAX);
        self.before.get(k).copied().unwrap_or(self.total) + pos.index + 1
    }

    /// Lines in the whole file.
    pub fn lines(&self) -> u64 {
        self.total
    }
}

/// Whether `path` is worth decoding in parallel: an uncompressed regular file of at
/// least [`MIN_SPLIT_BYTES`].
pub fn splittable(path: &Path) -> io::Result<bool> {
    let mut f = File::open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() || meta.len() < MIN_SPLIT_BYTES {
        return Ok(false);
    }
    let mut head = [0u8; 16];
    let n = f.read(&mut head)?;
    Ok(Compression::detect(&head[..n]) == Compression::None
        && !head[..n].starts_with(crate::dat::MAGIC))
}

/// Calls `work(state, pos, line)` for every line of `path` on `threads` threads, each with
/// its own state made by `init`. Returns the states and the line map, or `None` when the
/// file should be read sequentially instead: it is not [`splittable`], or a line runs more
/// than 4 MiB past the end of its chunk (the states are then dropped unused).
pub fn for_each_line<S, I, W>(
    path: &Path,
    threads: usize,
    init: I,
    work: W,
) -> io::Result<Option<(Vec<S>, LineMap)>>
where
    S: Send,
    I: Fn() -> S + Sync,
    W: Fn(&mut S, LinePos, &[u8]) + Sync,
{
    if threads < 2 || !splittable(path)? {
        return Ok(None);
    }
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    let chunks = len.div_ceil(CHUNK);
    let next = AtomicU64::new(0);
    let overrun = AtomicBool::new(false);
    let counts: Mutex<Vec<u64>> = Mutex::new(vec![0; chunks as usize]);
    let results: Vec<io::Result<S>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| -> io::Result<S> {
                    let mut state = init();
                    let mut buf = AlignedBuf::zeroed(READ_ALIGN + CHUNK as usize + STEP + 1);
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        if k >= chunks || overrun.load(Ordering::Relaxed) {
                            return Ok(state);
                        }
                        let Some(owned) = read_chunk(&file, len, k, &mut buf)? else {
                            overrun.store(true, Ordering::Relaxed);
                            return Ok(state);
                        };
                        let mut index = 0;
                        for line in crate::reader::lines(&buf[owned]) {
                            work(&mut state, LinePos { chunk: k, index }, line);
                            index += 1;
                        }
                        if let Ok(mut c) = counts.lock() {
                            c[k as usize] = index;
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("decoding thread panicked")))
            })
            .collect()
    });
    let states = results.into_iter().collect::<io::Result<Vec<S>>>()?;
    if overrun.load(Ordering::Relaxed) {
        return Ok(None);
    }
    let counts = counts.into_inner().unwrap_or_default();
    let mut before = Vec::with_capacity(counts.len());
    let mut total = 0;
    for c in counts {
        before.push(total);
        total += c;
    }
    Ok(Some((states, LineMap { before, total })))
}

/// Reads chunk `k` into `buf`, with the byte before it and the rest of its last line,
/// placed as [`glockparse::align`] says (from `buf[front_for(0, from)]`, `from` the file
/// offset read from). Returns the range of `buf` holding the lines the chunk owns (empty
/// when it owns none), or `None` when the last line runs on for more than [`MAX_OVERRUN`]
/// bytes. `buf` only grows: its bytes are not cleared before each read (which would cost
/// a pass over every chunk).
fn read_chunk(
    file: &File,
    len: u64,
    k: u64,
    buf: &mut AlignedBuf,
) -> io::Result<Option<std::ops::Range<usize>>> {
    let start = k * CHUNK;
    let end = (start + CHUNK).min(len);
    let from = start.saturating_sub(1);
    let chunk_bytes = (end - from) as usize;
    let lead = front_for(0, from);
    buf.grow(lead + chunk_bytes);
    let got = read_at_full(file, &mut buf[lead..lead + chunk_bytes], from)?;
    let mut have = lead + got;
    // The file shrank while being read: what is there is all there is.
    if got < chunk_bytes {
        return Ok(Some(lead + owned_start(&buf[lead..have], k)..have));
    }
    // Finish the line that runs over the chunk's end.
    let mut at = end;
    let mut step = STEP;
    while at < len && buf[have - 1] != b'\n' {
        if have - lead - chunk_bytes > MAX_OVERRUN {
            return Ok(None);
        }
        buf.grow(have + step);
        let n = read_at_full(file, &mut buf[have..have + step], at)?;
        step = (step * 2).min(1 << 20);
        if n == 0 {
            break;
        }
        if let Some(i) = memchr::memchr(b'\n', &buf[have..have + n]) {
            have += i + 1;
            break;
        }
        have += n;
        at += n as u64;
    }
    let owned = lead + owned_start(&buf[lead..have], k);
    // A chunk with no line start of its own holds only the middle of a longer line.
    Ok(Some(if owned >= lead + chunk_bytes {
        have..have
    } else {
        owned..have
    }))
}

/// Where the first line starting in chunk `k` begins in `buf` (which, after the first
/// chunk, starts with the byte before the chunk).
fn owned_start(buf: &[u8], k: u64) -> usize {
    if k == 0 {
        return 0;
    }
    match memchr::memchr(b'\n', buf) {
        Some(i) => i + 1,
        None => buf.len(),
    }
}

fn read_at_full(file: &File, buf: &mut [u8], mut offset: u64) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], offset) {
            Ok(0) => break,
            Ok(k) => {
                n += k;
                offset += k as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(path: &Path, threads: usize) -> Option<Vec<(u64, String)>> {
        let (states, map) = for_each_line(
            path,
            threads,
            Vec::new,
            |v: &mut Vec<(LinePos, String)>, p, l| {
                v.push((p, String::from_utf8_lossy(l).into_owned()))
            },
        )
        .unwrap()?;
        let mut all: Vec<(u64, String)> = states
            .into_iter()
            .flatten()
            .map(|(p, l)| (map.line_number(p), l))
            .collect();
        all.sort();
        assert_eq!(map.lines(), all.len() as u64);
        Some(all)
    }

    #[test]
    fn every_line_once_with_its_number() {
        let (_dir, path) = testdata::scratch_file("t");
        let mut text = String::new();
        let mut i = 0u64;
        // Lines of many lengths, some far longer than a chunk, and a final line without
        // its newline.
        while (text.len() as u64) < MIN_SPLIT_BYTES + CHUNK * 3 / 2 {
            let n = match i % 1000 {
                7 => 3 * CHUNK as usize,
                8 => 0,
                _ => (i % 97) as usize,
            };
            text.push_str(&format!("{i} {}\n", "x".repeat(n)));
            i += 1;
        }
        text.push_str("last");
        std::fs::write(&path, &text).unwrap();
        let want: Vec<(u64, String)> = text
            .split('\n')
            .enumerate()
            .map(|(n, l)| (n as u64 + 1, l.to_string()))
            .collect();
        for threads in [2, 3, 8] {
            assert_eq!(lines_of(&path, threads).unwrap(), want, "{threads} threads");
        }
        assert!(lines_of(&path, 1).is_none());
    }

    #[test]
    fn endless_lines_and_small_files_go_back_to_sequential() {
        let (dir, long) = testdata::scratch_file("long");
        let mut text = "a\n".repeat(10);
        text.push_str(&"y".repeat(MIN_SPLIT_BYTES as usize));
        std::fs::write(&long, &text).unwrap();
        assert!(lines_of(&long, 2).is_none());
        let small = dir.path().join("small");
        std::fs::write(&small, "a\nb\n").unwrap();
        assert!(lines_of(&small, 2).is_none());
    }
}
