//! A reader thread per source: it reads blocks of whole lines and sends them over a
//! bounded crossbeam channel; the consumer hands the buffers back for reuse, so nothing
//! is allocated per line (or, once warm, per block).

use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, Receiver, Sender};

const BLOCK: usize = 1 << 20;
const IN_FLIGHT: usize = 4;
/// Smallest read worth making into a block's spare room.
const MIN_READ: usize = 64 << 10;

/// What [`BlockReader::next_block_timeout`] found.
#[derive(Debug)]
pub enum Next {
    /// A block of whole lines.
    Block(Vec<u8>),
    /// Nothing arrived within the timeout.
    Idle,
    /// The source is done.
    Done,
}

/// A live source of whole lines for [`BlockReader::live`] (raw ring-buffer pages turned
/// into `trace_pipe`'s lines, say).
pub trait LineSource: Send {
    /// Appends the whole lines available now to `block`; returns how many bytes it
    /// appended (0: nothing right now).
    fn fill(&mut self, block: &mut Vec<u8>) -> io::Result<usize>;
}

/// Blocks of whole lines from one source.
pub struct BlockReader {
    blocks: Option<Receiver<Vec<u8>>>,
    pool: Sender<Vec<u8>>,
    drain: Arc<AtomicBool>,
    handle: Option<JoinHandle<io::Result<u64>>>,
}

/// The block being filled. `buf[..filled]` holds what was read; `buf[filled..]` is room
/// initialised once per block, so that small reads (a pipe, one byte at a time) cost no
/// re-initialisation. The partial last line is carried into the next block.
struct Filler {
    buf: Vec<u8>,
    filled: usize,
    carry: Vec<u8>,
}

impl Filler {
    fn new(pool: &Receiver<Vec<u8>>) -> Filler {
        let mut f = Filler {
            buf: Vec::new(),
            filled: 0,
            carry: Vec::new(),
        };
        f.start(take_buf(pool));
        f
    }

    /// Starts a fresh block with the carried partial line at its front.
    /// A reused block keeps its initialised length: reading into it again needs no zeroing
    /// (only the bytes up to `filled` are ever looked at).
    fn start(&mut self, mut buf: Vec<u8>) {
        let n = self.carry.len();
        if buf.len() < n {
            buf.resize(n, 0);
        }
        buf[..n].copy_from_slice(&self.carry);
        self.filled = n;
        self.carry.clear();
        self.buf = buf;
    }

    /// One read of at most MIN_READ bytes into the room. Room is initialised MIN_READ at a
    /// time, so a block holding one short line costs no more than that; the allocation
    /// grows only for a line longer than a block, so blocks keep one size and are reused.
    fn read(&mut self, r: &mut dyn Read) -> io::Result<usize> {
        if self.buf.len() - self.filled < MIN_READ {
            if self.buf.capacity() - self.filled < MIN_READ {
                self.buf.reserve(MIN_READ.max(self.filled));
            }
            self.buf.resize(self.filled + MIN_READ, 0);
        }
        loop {
            match r.read(&mut self.buf[self.filled..self.filled + MIN_READ]) {
                Ok(n) => {
                    self.filled += n;
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// The whole lines read so far, as a block to send, keeping the partial last line for
    /// the next block; `None` while no line is complete (a line without newline that has
    /// grown past 4 blocks is sent as it is).
    fn cut(&mut self) -> Option<Vec<u8>> {
        let data = &self.buf[..self.filled];
        let end = match memchr::memrchr(b'\n', data) {
            Some(i) => {
                self.carry.extend_from_slice(&data[i + 1..]);
                i + 1
            }
            None if self.filled >= 4 * BLOCK => self.filled,
            None => return None,
        };
        let mut block = std::mem::take(&mut self.buf);
        block.truncate(end);
        self.filled = 0;
        Some(block)
    }

    /// Sends the whole lines read so far ([`Filler::cut`]), if any, and starts the next
    /// block from the pool. False when the consumer has gone.
    fn send_lines(&mut self, tx: &Sender<Vec<u8>>, pool: &Receiver<Vec<u8>>) -> bool {
        let Some(block) = self.cut() else {
            return true;
        };
        if tx.send(block).is_err() {
            return false;
        }
        self.start(take_buf(pool));
        true
    }

    /// Everything read and not yet sent (at the end of the source).
    fn rest(&mut self) -> Option<Vec<u8>> {
        let mut block = std::mem::take(&mut self.buf);
        block.truncate(self.filled);
        self.filled = 0;
        (!block.is_empty()).then_some(block)
    }
}

fn take_buf(pool: &Receiver<Vec<u8>>) -> Vec<u8> {
    pool.try_recv()
        .unwrap_or_else(|_| Vec::with_capacity(BLOCK + MIN_READ))
}

impl BlockReader {
    /// Reads a whole stream (a file, decompressed or not) on a thread.
    pub fn stream(mut src: Box<dyn Read + Send>) -> BlockReader {
        let (tx, blocks) = bounded(IN_FLIGHT);
        let (pool, pool_rx) = bounded::<Vec<u8>>(IN_FLIGHT + 2);
        let handle = std::thread::spawn(move || -> io::Result<u64> {
            let mut fill = Filler::new(&pool_rx);
            let mut total = 0u64;
            loop {
                let n = fill.read(&mut *src)?;
                total += n as u64;
                if n == 0 {
                    if let Some(rest) = fill.rest() {
                        let _ = tx.send(rest);
                    }
                    return Ok(total);
                }
                // A read that ends inside a line (a pipe, a slow producer, one byte at a
                // time) keeps filling the same block until a newline arrives.
                if !fill.send_lines(&tx, &pool_rx) {
                    return Ok(total);
                }
            }
        });
        BlockReader {
            blocks: Some(blocks),
            pool,
            drain: Arc::new(AtomicBool::new(false)),
            handle: Some(handle),
        }
    }

    /// Follows a live `trace_pipe` until [`BlockReader::drain`] is called, then reads what
    /// is left in the ring buffer and ends.
    pub fn live_pipe(path: &Path) -> io::Result<BlockReader> {
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        let (tx, blocks) = bounded(IN_FLIGHT);
        let (pool, pool_rx) = bounded::<Vec<u8>>(IN_FLIGHT + 2);
        let drain = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&drain);
        let handle = std::thread::spawn(move || -> io::Result<u64> {
            let mut fill = Filler::new(&pool_rx);
            let mut total = 0u64;
            loop {
                let draining = stop.load(Ordering::SeqCst);
                match fill.read(&mut f) {
                    Ok(0) => {}
                    Ok(n) => {
                        total += n as u64;
                        // Send when a block is full, or keep filling.
                        if fill.filled >= BLOCK && !fill.send_lines(&tx, &pool_rx) {
                            return Ok(total);
                        }
                        continue;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                // Nothing to read right now: send the whole lines there are.
                if !fill.send_lines(&tx, &pool_rx) {
                    return Ok(total);
                }
                if draining {
                    // Nothing more after the stop: send what is left, a final line
                    // without its newline included, and end.
                    if let Some(rest) = fill.rest() {
                        let _ = tx.send(rest);
                    }
                    return Ok(total);
                }
                let mut pfd = libc::pollfd {
                    fd: f.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd; a short timeout so drain requests are seen.
                unsafe { libc::poll(&mut pfd, 1, 100) };
            }
        });
        Ok(BlockReader {
            blocks: Some(blocks),
            pool,
            drain,
            handle: Some(handle),
        })
    }

    /// Follows a live [`LineSource`] until [`BlockReader::drain`] is called, then takes
    /// what it still has and ends. The source is polled every 10 ms while it has nothing.
    pub fn live(mut src: impl LineSource + 'static) -> BlockReader {
        let (tx, blocks) = bounded(IN_FLIGHT);
        let (pool, pool_rx) = bounded::<Vec<u8>>(IN_FLIGHT + 2);
        let drain = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&drain);
        let handle = std::thread::spawn(move || -> io::Result<u64> {
            let mut buf = take_buf(&pool_rx);
            buf.clear();
            let mut total = 0u64;
            loop {
                let draining = stop.load(Ordering::SeqCst);
                let n = src.fill(&mut buf)?;
                total += n as u64;
                if buf.len() >= BLOCK || (n == 0 && !buf.is_empty()) {
                    if tx.send(buf).is_err() {
                        return Ok(total);
                    }
                    buf = take_buf(&pool_rx);
                    buf.clear();
                }
                if n == 0 {
                    if draining {
                        return Ok(total);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            }
        });
        BlockReader {
            blocks: Some(blocks),
            pool,
            drain,
            handle: Some(handle),
        }
    }

    /// The next block of whole lines; `None` when the source is done.
    pub fn next_block(&self) -> Option<Vec<u8>> {
        self.blocks.as_ref()?.recv().ok()
    }

    /// Like [`BlockReader::next_block`], waiting at most `timeout`.
    pub fn next_block_timeout(&self, timeout: std::time::Duration) -> Next {
        let Some(blocks) = &self.blocks else {
            return Next::Done;
        };
        match blocks.recv_timeout(timeout) {
            Ok(b) => Next::Block(b),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => Next::Idle,
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => Next::Done,
        }
    }

    /// Gives a block back for reuse.
    pub fn recycle(&self, buf: Vec<u8>) {
        let _ = self.pool.try_send(buf);
    }

    /// Live pipes: read what is left, then end.
    pub fn drain(&self) {
        self.drain.store(true, Ordering::SeqCst);
    }

    /// Waits for the thread; returns the bytes it read, or its I/O error.
    pub fn finish(mut self) -> io::Result<u64> {
        self.stop()
    }

    fn stop(&mut self) -> io::Result<u64> {
        self.drain();
        // Closing the channel makes a sender waiting on it give up.
        drop(self.blocks.take());
        match self.handle.take() {
            Some(h) => h
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("reader thread panicked"))),
            None => Ok(0),
        }
    }
}

impl Drop for BlockReader {
    /// Stops and joins the thread, so a live `trace_pipe` is closed before its instance
    /// is removed, even when the consumer ends early or panics.
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// The lines of a block (blocks hold whole lines; a final line may lack its `\n`). No
/// empty line is made up after a final newline.
pub fn lines(block: &[u8]) -> Lines<'_> {
    Lines {
        rest: (!block.is_empty()).then_some(block),
    }
}

/// The iterator of [`lines`]: each line's end found with one
/// [`glockparse::scan::find_short`].
pub struct Lines<'a> {
    rest: Option<&'a [u8]>,
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.rest?;
        match glockparse::scan::find_short(b'\n', rest) {
            Some(i) => {
                let after = &rest[i + 1..];
                self.rest = (!after.is_empty()).then_some(after);
                Some(&rest[..i])
            }
            None => {
                self.rest = None;
                Some(rest)
            }
        }
    }
}

/// Calls `f` with every line of a saved trace file (compressed or not), read on a thread.
pub fn for_each_line(path: &Path, mut f: impl FnMut(&[u8])) -> io::Result<()> {
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let reader = open_file(path).map_err(named)?;
    while let Some(b) = reader.next_block() {
        lines(&b).for_each(&mut f);
        reader.recycle(b);
    }
    reader.finish().map(drop).map_err(named)
}

/// Decodes every line of a saved trace file (compressed or not): `f` gets each decoded line
/// and says whether to go on; a line that is not trace text goes to `diag` with its number.
/// After `f` says stop, the file is read no further ([`crate::sink::read_file`]). Returns
/// the number of lines read. A file that cannot be read to its end (cut short, damaged)
/// keeps the lines before: what stopped it is `diag`'s fatal error, as for the lock dumps;
/// one of which nothing could be read is an error.
pub fn for_each_decoded(
    path: &Path,
    diag: &mut glockparse::Diagnostics,
    f: impl FnMut(crate::Decoded<'_>) -> bool,
) -> io::Result<u64> {
    /// The closure's sink, with the bad lines going to the diagnostics.
    struct Diagnosed<'d, F> {
        f: F,
        diag: &'d mut glockparse::Diagnostics,
        source: Arc<str>,
        /// The number of the last line pushed.
        last: u64,
    }
    impl<F: FnMut(crate::Decoded<'_>) -> bool> crate::sink::Sink for Diagnosed<'_, F> {
        fn line(&mut self, n: u64, _: &[u8], d: crate::Decoded<'_>) -> io::Result<bool> {
            self.last = n;
            Ok((self.f)(d))
        }
        fn bad_line(&mut self, n: u64, raw: &[u8], why: crate::line::BadLine) -> io::Result<bool> {
            self.last = n;
            let e = glockparse::ParseError::new(&self.source, n, why.0.to_string(), raw);
            self.diag.error(e);
            Ok(true)
        }
    }
    let source: Arc<str> = path.display().to_string().into();
    let mut sink = Diagnosed {
        f,
        diag,
        source,
        last: 0,
    };
    match crate::sink::read_file(path, &mut sink) {
        Err(e) if sink.last > 0 => {
            if sink.diag.fatal.is_none() {
                sink.diag.fatal = Some(format!("{e} (after line {})", sink.last));
            }
            Ok(sink.last)
        }
        read => read,
    }
}

/// Opens a saved trace file (compressed or not, or a trace-cmd trace.dat: [`crate::dat`])
/// as blocks. Its errors do not name the file; [`for_each_line`] and
/// [`crate::sink::read_file`] do.
pub fn open_file(path: &Path) -> io::Result<BlockReader> {
    Ok(BlockReader::stream(crate::dat::open(path)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_a_block() {
        let v = |b: &[u8]| {
            lines(b)
                .map(|l| String::from_utf8_lossy(l).into_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(v(b"a\n\nb\n"), ["a", "", "b"]);
        assert_eq!(v(b"a\nb"), ["a", "b"]);
        assert_eq!(v(b"\n"), [""]);
        assert!(v(b"").is_empty());
    }

    /// A source that hands out its bytes a few at a time, as a pipe with a slow writer does.
    struct Trickle {
        data: Vec<u8>,
        at: usize,
        step: usize,
    }

    impl Read for Trickle {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(out.len()).min(self.data.len() - self.at);
            out[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    #[test]
    fn short_reads_lose_nothing() {
        let mut text = String::new();
        for i in 0..3000 {
            text.push_str(&format!(
                "  <idle>-0 [000] .... {i}.000001: gfs2_promote: line {i}\n"
            ));
        }
        text.push_str("final line without newline");
        for step in [1, 2, 7, 50, 4096] {
            let src = Trickle {
                data: text.clone().into_bytes(),
                at: 0,
                step,
            };
            let r = BlockReader::stream(Box::new(src));
            let mut got = Vec::new();
            while let Some(b) = r.next_block() {
                assert!(b.ends_with(b"\n") || got.len() + b.len() == text.len());
                got.extend_from_slice(&b);
                r.recycle(b);
            }
            assert_eq!(String::from_utf8(got).unwrap(), text, "read size {step}");
        }
    }

    #[test]
    fn blocks_hold_whole_lines_in_order() {
        let mut text = String::new();
        for i in 0..300_000 {
            text.push_str(&format!("line {i} {}\n", "x".repeat(i % 50)));
        }
        text.push_str("last without newline");
        let r = BlockReader::stream(Box::new(io::Cursor::new(text.clone().into_bytes())));
        let mut got = Vec::new();
        let mut blocks = 0;
        while let Some(b) = r.next_block() {
            blocks += 1;
            got.extend_from_slice(&b);
            r.recycle(b);
        }
        assert!(blocks > 2);
        assert_eq!(String::from_utf8(got).unwrap(), text);
        assert_eq!(r.finish().unwrap(), text.len() as u64);
    }
}
