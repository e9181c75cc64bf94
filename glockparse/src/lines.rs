//! A line reader over any `Read` that hands out borrowed lines with their numbers and
//! allocates nothing per line. Memory stays bounded: a "line" longer than
//! [`MAX_LINE`] is cut into pieces (such a line is malformed anyway), which all carry the
//! number of the line they belong to.

use std::io::{self, Read};

use crate::align::{front_for, AlignedBuf, READ_ALIGN};

/// The longest line handed out in one piece.
pub const MAX_LINE: usize = 1 << 20;
const CHUNK: usize = 1 << 20;
/// The most text buffered: a chunk read after the longest line.
const CAP: usize = CHUNK + MAX_LINE;

/// Lines of a reader, with their numbers, over a reused buffer.
pub struct LineReader<R> {
    rdr: R,
    /// The text read and not yet handed out is `buf[start..end]`, at most [`CAP`] bytes;
    /// reads go to `buf[end..]`, which [`LineReader::fill`] places as [`crate::align`]
    /// says.
    buf: AlignedBuf,
    /// Where in its file the next byte read from `rdr` is (as far as the reader knows:
    /// [`LineReader::at_offset`]).
    offset: u64,
    start: usize,
    end: usize,
    eof: bool,
    line_no: u64,
    /// The last piece handed out was cut from a longer line: the next one continues it.
    mid_line: bool,
}

impl<R: Read> LineReader<R> {
    /// Lines of `rdr`.
    pub fn new(rdr: R) -> LineReader<R> {
        LineReader {
            rdr,
            buf: AlignedBuf::zeroed(CAP + READ_ALIGN),
            offset: 0,
            start: 0,
            end: 0,
            eof: false,
            line_no: 0,
            mid_line: false,
        }
    }

    /// Says that `rdr` starts at byte `offset` of its file (a piece of a file read from the
    /// middle), so that reads are placed where the kernel copies them fastest
    /// ([`crate::align`]). Only speed depends on it.
    pub fn at_offset(mut self, offset: u64) -> LineReader<R> {
        self.offset = offset;
        self
    }

    /// Number of the line most recently returned (1-based).
    pub fn line_number(&self) -> u64 {
        self.line_no
    }

    /// The next line with its number (pieces of an overlong line share one number).
    pub fn next_numbered(&mut self) -> io::Result<Option<(u64, &[u8])>> {
        Ok(self
            .next_range()?
            .map(|(s, e)| (self.line_no, &self.buf[s..e])))
    }

    /// The next line without its `\n` (and without a `\r` before it).
    pub fn next_line(&mut self) -> io::Result<Option<&[u8]>> {
        Ok(self.next_range()?.map(|(s, e)| &self.buf[s..e]))
    }

    /// Where the next line lies in the buffer. A line longer than [`MAX_LINE`] is cut
    /// every [`MAX_LINE`] bytes from its start, whether or not its end is buffered yet, so
    /// that where it is cut does not depend on how the input was read.
    fn next_range(&mut self) -> io::Result<Option<(usize, usize)>> {
        loop {
            let nl = memchr::memchr(b'\n', &self.buf[self.start..self.end]);
            match nl {
                Some(0) if self.mid_line => {
                    // An overlong line was cut just before its end: it ends here, with
                    // no empty piece handed out.
                    self.start += 1;
                    self.mid_line = false;
                    continue;
                }
                Some(i) if i <= MAX_LINE => {
                    let (s, e) = (self.start, self.start + i);
                    self.start = e + 1;
                    return Ok(Some(self.finish(s, e, true)));
                }
                _ => {}
            }
            let pending = self.end - self.start;
            if nl.is_some() || self.eof || pending >= MAX_LINE {
                if pending == 0 {
                    return Ok(None);
                }
                let (s, e) = (self.start, self.start + pending.min(MAX_LINE));
                self.start = e;
                let complete = nl.is_none() && self.eof && pending <= MAX_LINE;
                return Ok(Some(self.finish(s, e, complete)));
            }
            self.fill()?;
        }
    }

    /// How much of the buffered text ([`LineReader::pending`]) to read next: from the next
    /// line up to (not including) the last line that starts with `boundary` (which begins
    /// with `\n`), reading more when none is buffered: whole records for a reader that
    /// splits at `boundary`. At the end of input the block is the rest (its last line may
    /// lack `\n`). The `bool` is false when the buffer filled up without a boundary: the
    /// block then ends at the last complete line. `None` when no complete line can be
    /// handed out this way (the end of input, or a line longer than the buffer):
    /// [`LineReader::next_numbered`] takes over. The caller says how many lines it used
    /// with [`LineReader::consume`].
    pub fn next_block(&mut self, boundary: &[u8]) -> io::Result<Option<(usize, bool)>> {
        if self.mid_line {
            return Ok(None);
        }
        loop {
            let data = &self.buf[self.start..self.end];
            if self.eof {
                return Ok((!data.is_empty()).then_some((data.len(), true)));
            }
            if let Some(k) = memchr::memmem::rfind(data, boundary) {
                return Ok(Some((k + 1, true)));
            }
            if data.len() == CAP {
                return Ok(memchr::memrchr(b'\n', data).map(|nl| (nl + 1, false)));
            }
            self.fill()?;
        }
    }

    /// The text read but not yet handed out.
    pub fn pending(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Marks the first `bytes` of the last [`LineReader::next_block`], `lines` lines, as
    /// read.
    pub fn consume(&mut self, bytes: usize, lines: u64) {
        self.start = (self.start + bytes).min(self.end);
        self.line_no += lines;
    }

    fn finish(&mut self, s: usize, mut e: usize, complete: bool) -> (usize, usize) {
        if !self.mid_line {
            self.line_no += 1;
        }
        self.mid_line = !complete;
        if e > s && self.buf[e - 1] == b'\r' {
            e -= 1;
        }
        (s, e)
    }

    /// Reads more after the pending text, which is first moved to the front of the buffer,
    /// placed so that the read goes where the kernel copies fastest ([`front_for`]).
    fn fill(&mut self) -> io::Result<()> {
        let pending = self.end - self.start;
        let front = front_for(pending, self.offset);
        if self.start != front {
            self.buf.copy_within(self.start..self.end, front);
            self.start = front;
            self.end = front + pending;
        }
        let want = (CAP - pending).min(CHUNK);
        loop {
            match self.rdr.read(&mut self.buf[self.end..self.end + want]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    self.offset += n as u64;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

/// What a line-oriented parser made of one line.
pub enum Parsed<T> {
    /// A record parsed from the line.
    Record(T),
    /// A record that is kept, with a problem worth reporting (e.g. a short row).
    Flawed(T, String),
    /// Not a record and not an error (a header).
    Ignored,
    /// Malformed: the message says why.
    Bad(String),
}

/// Runs `parse` on every line of `rdr` (with its 1-based number): blank lines are ignored,
/// records collected, bad lines reported in the diagnostics as `source:line`, and a read
/// error ends the input.
pub fn parse_records<R: Read, T>(
    rdr: R,
    source: &str,
    mut parse: impl FnMut(u64, &[u8]) -> Parsed<T>,
) -> (Vec<T>, crate::Diagnostics) {
    parse_every_line(rdr, source, |n, line| {
        if line.iter().all(u8::is_ascii_whitespace) {
            Parsed::Ignored
        } else {
            parse(n, line)
        }
    })
}

/// [`parse_records`], with the blank lines given to `parse` too: for a layout in which a
/// blank line can carry meaning (dlm_tool's lockdebug text, where one can end a line that
/// a complaint on stderr cut).
pub fn parse_every_line<R: Read, T>(
    rdr: R,
    source: &str,
    mut parse: impl FnMut(u64, &[u8]) -> Parsed<T>,
) -> (Vec<T>, crate::Diagnostics) {
    let src: std::sync::Arc<str> = source.into();
    let mut lines = LineReader::new(rdr);
    let mut d = crate::Diagnostics::default();
    let mut out = Vec::new();
    loop {
        let (n, line) = match lines.next_numbered() {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(e) => {
                let n = lines.line_number() + 1;
                d.fatal = Some(format!("{src}:{n}: read error: {e}"));
                break;
            }
        };
        d.lines += 1;
        match parse(n, line) {
            Parsed::Record(r) => {
                d.records += 1;
                out.push(r);
            }
            Parsed::Flawed(r, m) => {
                d.records += 1;
                d.error(crate::ParseError::new(&src, n, m, line));
                out.push(r);
            }
            Parsed::Ignored => d.ignored += 1,
            Parsed::Bad(m) => d.error(crate::ParseError::new(&src, n, m, line)),
        }
    }
    (out, d)
}

/// The pieces [`LineReader::next_numbered`] hands out for `line` (without its `\n`), each
/// without a `\r` at its end: the line itself, or, when it is longer than [`MAX_LINE`],
/// its cuts. For a reader of whole lines out of a block.
pub fn pieces(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    let empty: &[u8] = &[];
    let whole = line.is_empty().then_some(empty);
    whole
        .into_iter()
        .chain(line.chunks(MAX_LINE))
        .map(|p| p.strip_suffix(b"\r").unwrap_or(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that returns one byte per call, to exercise refills at every position.
    struct Trickle<'a>(&'a [u8]);
    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() || buf.is_empty() {
                return Ok(0);
            }
            buf[0] = self.0[0];
            self.0 = &self.0[1..];
            Ok(1)
        }
    }

    /// Reads at most `.1` bytes at a time.
    struct InSizes<'a>(&'a [u8], usize);
    impl Read for InSizes<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(buf.len()).min(self.1);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn collect<R: Read>(r: R) -> Vec<String> {
        let mut lr = LineReader::new(r);
        let mut out = vec![];
        while let Some(l) = lr.next_line().unwrap() {
            out.push(String::from_utf8(l.to_vec()).unwrap());
        }
        out
    }

    #[test]
    fn splits_lines() {
        let want = vec!["a", "", "b c", "d"];
        assert_eq!(collect(&b"a\n\nb c\r\nd"[..]), want);
        assert_eq!(collect(Trickle(b"a\n\nb c\r\nd\n")), want);
        assert!(collect(&b""[..]).is_empty());
    }

    #[test]
    fn overlong_lines_are_cut_not_buffered_forever() {
        let data = vec![b'x'; MAX_LINE * 2 + 5];
        let lines = collect(&data[..]);
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0].len(), MAX_LINE);
        assert_eq!(lines[2].len(), 5);
    }

    #[test]
    fn overlong_lines_are_cut_in_the_same_places_however_they_are_read() {
        let mut data = b"first\n".to_vec();
        data.extend(vec![b'x'; MAX_LINE + MAX_LINE / 2]);
        data.extend_from_slice(b"\r\n");
        data.extend(vec![b'y'; 2 * MAX_LINE]);
        data.extend_from_slice(b"\nlast\r\n\n");
        // Each line by its length and its bytes (kept short in a failure's message).
        let shape = |lines: Vec<String>| -> Vec<(usize, String)> {
            let mut bytes: Vec<char> = Vec::new();
            lines
                .iter()
                .map(|l| {
                    bytes.clear();
                    bytes.extend(l.chars());
                    bytes.dedup();
                    (l.len(), bytes.iter().collect())
                })
                .collect()
        };
        let want = shape(collect(&data[..]));
        let m = MAX_LINE;
        let x = || "x".to_string();
        let y = || "y".to_string();
        let expected = [
            (5, "first".to_string()),
            (m, x()),
            (m / 2, x()),
            (m, y()),
            (m, y()),
        ];
        assert_eq!(want[..5], expected);
        assert_eq!(want[5..], [(4, "last".to_string()), (0, String::new())]);
        for size in [3, 4096, 65_537, MAX_LINE - 1] {
            let got = shape(collect(InSizes(&data, size)));
            assert_eq!(got, want, "read {size} bytes at a time");
        }
        // A reader of blocks cuts each line as the line reader does.
        let from_blocks: Vec<String> = data
            .split(|&b| b == b'\n')
            .take(5)
            .flat_map(pieces)
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect();
        assert_eq!(shape(from_blocks), want);
    }

    /// Where reads are placed (the file offset the reader is told) changes nothing read.
    #[test]
    fn the_offset_a_reader_is_told_changes_no_line() {
        let mut data = Vec::new();
        for i in 0..40_000 {
            data.extend_from_slice(format!("line {i} {}\n", "x".repeat(i % 97)).as_bytes());
        }
        let want = collect(&data[..]);
        for offset in [1, 31, 63, 64, 116, 4068] {
            for size in [100, 65_537, CHUNK] {
                let mut lr = LineReader::new(InSizes(&data, size)).at_offset(offset);
                let mut got = Vec::new();
                while let Some(l) = lr.next_line().unwrap() {
                    got.push(String::from_utf8(l.to_vec()).unwrap());
                }
                assert_eq!(got, want, "offset {offset}, reads of {size}");
            }
        }
    }

    #[test]
    fn pieces_of_an_overlong_line_keep_its_number() {
        let mut data = b"first\n".to_vec();
        data.extend(vec![b'x'; 3 * MAX_LINE + 10]);
        data.extend_from_slice(b"\nlast\n");
        let mut lr = LineReader::new(&data[..]);
        let mut numbers = Vec::new();
        while let Some((n, _)) = lr.next_numbered().unwrap() {
            numbers.push(n);
        }
        assert!(numbers.len() > 3, "{numbers:?}");
        numbers.dedup();
        assert_eq!(numbers, [1, 2, 3]);
    }
}
