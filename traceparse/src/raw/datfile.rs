//! trace-cmd's `trace.dat` read by glk itself (trace-cmd.dat.v6(5), trace-cmd.dat.v7(5)):
//! the events' formats, the saved task names and each CPU's ring-buffer pages, written
//! as `trace_pipe`'s lines by [`Lines`] and merged in time order.
//!
//! Version 6 is a fixed sequence of parts ending in `flyrecord` and each CPU's
//! (offset, size). Version 7 is sections found through options: `HEADER_INFO`,
//! `FTRACE_EVENTS`, `EVENT_FORMATS`, `CMDLINES` and `BUFFER` (each CPU's offset and size),
//! each section maybe compressed (a u32 compressed and a u32 uncompressed size, then the
//! data) and each CPU's pages in compressed chunks (a u32 count; each chunk a u32
//! compressed and a u32 uncompressed size, then its data). zstd and no compression are
//! read; what glk does not read (another compression, a big-endian or 32-bit file, time
//! corrections trace-cmd applies, a clock not counting nanoseconds, a format of a recorded
//! system glk cannot read or print) is [`DatError::Unsupported`], for the caller to hand to
//! `trace-cmd report`. Formats of ftrace's own events glk cannot read are passed over.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::{EventFormat, Lines, PageLayout, PageTally, Record, Release};

/// Why a trace.dat was not read.
#[derive(Debug)]
pub enum DatError {
    /// A file glk does not read itself (say why); `trace-cmd report` may.
    Unsupported(String),
    /// The file is damaged or cut short (where, what).
    Damaged(String),
    /// It could not be read.
    Io(io::Error),
}

impl std::fmt::Display for DatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DatError::Unsupported(m) => write!(f, "not read by glk itself: {m}"),
            DatError::Damaged(m) => write!(f, "damaged: {m}"),
            DatError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl From<io::Error> for DatError {
    fn from(e: io::Error) -> DatError {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            DatError::Damaged("the file ends early".into())
        } else {
            DatError::Io(e)
        }
    }
}

fn damaged<T>(what: impl Into<String>) -> Result<T, DatError> {
    Err(DatError::Damaged(what.into()))
}

fn unsupported<T>(what: impl Into<String>) -> Result<T, DatError> {
    Err(DatError::Unsupported(what.into()))
}

/// A byte cursor over a part of the file held in memory.
struct Cur<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cur<'a> {
    fn new(b: &'a [u8]) -> Cur<'a> {
        Cur { b, at: 0 }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], DatError> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.b.len());
        let Some(end) = end else {
            return damaged(format!(
                "a part ends early (byte {} of {})",
                self.at,
                self.b.len()
            ));
        };
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u16(&mut self) -> Result<u16, DatError> {
        Ok(u16::from_le_bytes(
            self.take(2)?.try_into().expect("2 bytes"),
        ))
    }
    fn u32(&mut self) -> Result<u32, DatError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self) -> Result<u64, DatError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn cstr(&mut self) -> Result<&'a [u8], DatError> {
        let rest = &self.b[self.at..];
        let Some(n) = memchr::memchr(0, rest) else {
            return damaged("a string without its end");
        };
        self.at += n + 1;
        Ok(&rest[..n])
    }
    /// A u64 size, then that many bytes.
    fn sized64(&mut self) -> Result<&'a [u8], DatError> {
        let n = self.u64()?;
        self.take(usize::try_from(n).map_err(|_| DatError::Damaged("a size too large".into()))?)
    }
}

/// How the file's sections and CPU data are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compression {
    None,
    Zstd,
}

/// Where one CPU's pages are.
#[derive(Debug, Clone, Copy)]
struct CpuData {
    cpu: u32,
    offset: u64,
    size: u64,
}

/// What the file says before its pages.
struct Parts {
    header_page: String,
    formats: Vec<(String, String)>,
    cmdlines: Vec<u8>,
    cpus: Vec<CpuData>,
    uname: Option<String>,
    compression: Compression,
    page_size: usize,
    /// A BUFFER option of another instance than the top one was met (left out).
    other_buffers: bool,
}

/// The most a section or chunk may hold once uncompressed (a damaged size is not
/// allocated).
const MOST: usize = 1 << 30;

/// Reads `len` bytes at `offset`.
fn read_at(f: &File, offset: u64, len: usize) -> Result<Vec<u8>, DatError> {
    if len > MOST {
        return damaged(format!("{len} bytes asked for at byte {offset}"));
    }
    let mut v = vec![0u8; len];
    f.read_exact_at(&mut v, offset)?;
    Ok(v)
}

fn decompress(c: Compression, data: &[u8], size: usize) -> Result<Vec<u8>, DatError> {
    match c {
        Compression::None => Ok(data.to_vec()),
        Compression::Zstd => {
            if size > MOST {
                return damaged(format!("a chunk of {size} bytes"));
            }
            let out = zstd::bulk::decompress(data, size)
                .map_err(|e| DatError::Damaged(format!("zstd: {e}")))?;
            if out.len() != size {
                return damaged(format!("a chunk of {} bytes, said {size}", out.len()));
            }
            Ok(out)
        }
    }
}

/// The file's version, after its magic bytes.
fn version(f: &File) -> Result<u32, DatError> {
    let head = read_at(f, 0, 64.min(f.metadata()?.len() as usize))?;
    if !head.starts_with(crate::dat::MAGIC) {
        return damaged("no trace.dat magic");
    }
    let mut c = Cur::new(&head);
    c.take(10)?;
    let version = std::str::from_utf8(c.cstr()?)
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .ok_or_else(|| DatError::Damaged("an unreadable version".into()))?;
    Ok(version)
}

impl Parts {
    fn read(f: &File) -> Result<Parts, DatError> {
        let len = f.metadata()?.len();
        match version(f)? {
            6 => Parts::v6(f, len),
            7 => Parts::v7(f),
            v => unsupported(format!("version {v}")),
        }
    }

    /// The file's endianness, long size and page size, after the version string.
    fn basics(c: &mut Cur<'_>) -> Result<usize, DatError> {
        c.take(10)?;
        c.cstr()?;
        let endian = c.take(1)?[0];
        let long = c.take(1)?[0];
        match endian {
            0 => {}
            1 => return unsupported("a big-endian file"),
            n => return damaged(format!("endianness {n}")),
        }
        match long {
            8 => {}
            4 => return unsupported("a 32-bit file (4-byte longs)"),
            n => return damaged(format!("{n}-byte longs")),
        }
        Ok(c.u32()? as usize)
    }

    fn v6(f: &File, len: u64) -> Result<Parts, DatError> {
        // Version 6 keeps its parts in order; they are read whole (kallsyms and printk
        // formats included, skipped), then the CPUs' (offset, size).
        let head_len = len.min(64 << 20) as usize;
        let all = read_at(f, 0, head_len)?;
        let mut c = Cur::new(&all);
        let page_size = Parts::basics(&mut c)?;
        let header_page = header_info(&mut c)?;
        let mut formats = ftrace_formats(&mut c)?;
        formats.extend(event_formats(&mut c)?);
        let kallsyms = c.u32()? as usize;
        c.take(kallsyms)?;
        let printk = c.u32()? as usize;
        c.take(printk)?;
        let cmdlines = c.sized64()?.to_vec();
        let ncpus = c.u32()?;
        let mut uname = None;
        loop {
            let tag = c.take(10)?;
            match tag {
                b"options  \0" => loop {
                    let id = c.u16()?;
                    if id == 0 {
                        break;
                    }
                    let size = c.u32()? as usize;
                    let data = c.take(size)?;
                    option_check(id, data, &mut uname)?;
                },
                b"flyrecord\0" => break,
                b"latency  \0" => return unsupported("a latency trace (text)"),
                _ => return damaged("no flyrecord"),
            }
        }
        let mut cpus = Vec::new();
        for cpu in 0..ncpus {
            let (offset, size) = (c.u64()?, c.u64()?);
            cpus.push(CpuData { cpu, offset, size });
        }
        Ok(Parts {
            header_page,
            formats,
            cmdlines,
            cpus,
            uname,
            compression: Compression::None,
            page_size,
            other_buffers: false,
        })
    }

    fn v7(f: &File) -> Result<Parts, DatError> {
        let head = read_at(f, 0, 256.min(f.metadata()?.len() as usize))?;
        let mut c = Cur::new(&head);
        let page_size = Parts::basics(&mut c)?;
        let name = c.cstr()?.to_vec();
        c.cstr()?;
        let compression = match name.as_slice() {
            b"none" => Compression::None,
            b"zstd" => Compression::Zstd,
            other => return unsupported(format!("{} compression", String::from_utf8_lossy(other))),
        };
        let mut next = c.u64()?;
        let mut parts = Parts {
            header_page: String::new(),
            formats: Vec::new(),
            cmdlines: Vec::new(),
            cpus: Vec::new(),
            uname: None,
            compression,
            page_size,
            other_buffers: false,
        };
        let mut seen = 0;
        while next != 0 {
            seen += 1;
            if seen > 64 {
                return damaged("options sections in a loop");
            }
            let options = section(f, next, compression, 0)?;
            next = 0;
            let mut c = Cur::new(&options);
            while c.at < options.len() {
                let id = c.u16()?;
                let size = c.u32()? as usize;
                let data = c.take(size)?;
                let offset = || Cur::new(data).u64();
                match id {
                    0 => {
                        next = offset()?;
                        break;
                    }
                    3 => parts.buffer(data)?,
                    16 => {
                        let s = section(f, offset()?, compression, 16)?;
                        parts.header_page = header_info(&mut Cur::new(&s))?;
                    }
                    17 => {
                        let s = section(f, offset()?, compression, 17)?;
                        parts.formats.extend(ftrace_formats(&mut Cur::new(&s))?);
                    }
                    18 => {
                        let s = section(f, offset()?, compression, 18)?;
                        parts.formats.extend(event_formats(&mut Cur::new(&s))?);
                    }
                    21 => {
                        let s = section(f, offset()?, compression, 21)?;
                        parts.cmdlines = Cur::new(&s).sized64()?.to_vec();
                    }
                    22 => return unsupported("a latency trace (text)"),
                    _ => option_check(id, data, &mut parts.uname)?,
                }
            }
        }
        if parts.cpus.is_empty() {
            if parts.other_buffers {
                return unsupported("pages of other instances only (trace-cmd record -B)");
            }
            return damaged("no BUFFER option: no pages");
        }
        Ok(parts)
    }

    /// A BUFFER option: the top instance's CPUs (another instance's buffer is left out).
    fn buffer(&mut self, data: &[u8]) -> Result<(), DatError> {
        let mut c = Cur::new(data);
        c.u64()?;
        let name = c.cstr()?;
        ns_clock(c.cstr()?)?;
        c.u32()?;
        let n = c.u32()?;
        if !name.is_empty() {
            self.other_buffers = true;
            return Ok(());
        }
        for _ in 0..n {
            let (cpu, offset, size) = (c.u32()?, c.u64()?, c.u64()?);
            self.cpus.push(CpuData { cpu, offset, size });
        }
        Ok(())
    }
}

/// Options that change what trace-cmd prints: refused; UNAME kept.
fn option_check(id: u16, data: &[u8], uname: &mut Option<String>) -> Result<(), DatError> {
    match id {
        5 => {
            *uname = Some(
                String::from_utf8_lossy(data.split(|b| *b == 0).next().unwrap_or(data))
                    .into_owned(),
            );
            Ok(())
        }
        // TRACECLOCK: the trace_clock file, the clock in use in brackets.
        4 => {
            let text = String::from_utf8_lossy(data);
            match text.split('[').nth(1).and_then(|r| r.split(']').next()) {
                Some(clock) => ns_clock(clock.as_bytes()),
                None => Ok(()),
            }
        }
        7 => unsupported("an OFFSET option (times trace-cmd shifts)"),
        12 => unsupported("a TIME_SHIFT option (a guest's times)"),
        14 => unsupported("a TSC2NSEC option (TSC times)"),
        _ => Ok(()),
    }
}

/// A trace clock whose times are nanoseconds (kernel/trace/trace.c `in_ns`); the others
/// (`counter`, `uptime`, `x86-tsc`) count other units, left to trace-cmd.
fn ns_clock(clock: &[u8]) -> Result<(), DatError> {
    let clock = String::from_utf8_lossy(clock);
    if super::counts_nanoseconds(&clock) {
        Ok(())
    } else {
        unsupported(format!("the {clock} trace clock (not nanoseconds)"))
    }
}

/// A v7 section at `offset`: its header checked (id `want`), its data uncompressed.
fn section(f: &File, offset: u64, c: Compression, want: u16) -> Result<Vec<u8>, DatError> {
    let head = read_at(f, offset, 16)?;
    let mut h = Cur::new(&head);
    let (id, flags) = (h.u16()?, h.u16()?);
    h.u32()?;
    let size = h.u64()?;
    if id != want {
        return damaged(format!("section {id} at byte {offset}, expected {want}"));
    }
    let data = read_at(f, offset + 16, usize::try_from(size).unwrap_or(usize::MAX))?;
    if flags & 1 == 0 {
        return Ok(data);
    }
    let mut d = Cur::new(&data);
    let (csize, usize_) = (d.u32()? as usize, d.u32()? as usize);
    decompress(c, d.take(csize)?, usize_)
}

/// `header_page\0` size data `header_event\0` size data: the header page's text.
fn header_info(c: &mut Cur<'_>) -> Result<String, DatError> {
    if c.take(12)? != b"header_page\0" {
        return damaged("no header_page");
    }
    let page = String::from_utf8_lossy(c.sized64()?).into_owned();
    if c.take(13)? != b"header_event\0" {
        return damaged("no header_event");
    }
    c.sized64()?;
    Ok(page)
}

/// A count, then that many format files: ftrace's own events.
fn ftrace_formats(c: &mut Cur<'_>) -> Result<Vec<(String, String)>, DatError> {
    let n = c.u32()?;
    (0..n)
        .map(|_| {
            Ok((
                "ftrace".to_string(),
                String::from_utf8_lossy(c.sized64()?).into_owned(),
            ))
        })
        .collect()
}

/// A count of systems; each a name, a count, then that many format files.
fn event_formats(c: &mut Cur<'_>) -> Result<Vec<(String, String)>, DatError> {
    let systems = c.u32()?;
    let mut out = Vec::new();
    for _ in 0..systems {
        let system = String::from_utf8_lossy(c.cstr()?).into_owned();
        let n = c.u32()?;
        for _ in 0..n {
            out.push((
                system.clone(),
                String::from_utf8_lossy(c.sized64()?).into_owned(),
            ));
        }
    }
    Ok(out)
}

/// One CPU's pages, read one at a time (a compressed chunk at a time).
struct CpuPages {
    cpu: u32,
    data: CpuData,
    /// Where the next read starts.
    at: u64,
    /// Compressed: the chunks left.
    chunks_left: Option<u32>,
    /// Pages read and not yet handed out.
    buf: Vec<u8>,
    used: usize,
}

impl CpuPages {
    fn new(f: &File, data: CpuData, c: Compression) -> Result<CpuPages, DatError> {
        let (at, chunks_left) = match c {
            Compression::None => (data.offset, None),
            Compression::Zstd if data.size == 0 => (data.offset, Some(0)),
            Compression::Zstd => {
                let n = read_at(f, data.offset, 4)?;
                (
                    data.offset + 4,
                    Some(u32::from_le_bytes(n.try_into().expect("4"))),
                )
            }
        };
        Ok(CpuPages {
            cpu: data.cpu,
            data,
            at,
            chunks_left,
            buf: Vec::new(),
            used: 0,
        })
    }

    /// The next page's bytes, or `None` at the CPU's end.
    fn next_page(
        &mut self,
        f: &File,
        c: Compression,
        page: usize,
    ) -> Result<Option<Vec<u8>>, DatError> {
        if self.used >= self.buf.len() {
            self.buf.clear();
            self.used = 0;
            match &mut self.chunks_left {
                None => {
                    // A damaged size may say any number: past the file, reading fails.
                    let end = self.data.offset.saturating_add(self.data.size);
                    if self.at >= end {
                        return Ok(None);
                    }
                    let n = (end - self.at).min(256 * page as u64) as usize;
                    self.buf = read_at(f, self.at, n)?;
                    self.at += n as u64;
                }
                Some(0) => return Ok(None),
                Some(left) => {
                    *left -= 1;
                    let h = read_at(f, self.at, 8)?;
                    let mut hc = Cur::new(&h);
                    let (csize, usize_) = (hc.u32()? as usize, hc.u32()? as usize);
                    let data = read_at(f, self.at + 8, csize)?;
                    self.at += 8 + csize as u64;
                    self.buf = decompress(c, &data, usize_)?;
                }
            }
        }
        let end = (self.used + page).min(self.buf.len());
        let p = self.buf[self.used..end].to_vec();
        self.used = end;
        Ok(Some(p))
    }
}

/// A page of one CPU and its records: their times and places, and the next to write.
struct LoadedPage {
    bytes: Vec<u8>,
    records: Vec<(u64, usize, usize)>,
    next: usize,
}

/// A trace.dat read by glk: `trace_pipe`'s lines, all CPUs merged in time order, as a
/// stream.
pub struct DatLines {
    file: File,
    lines: Lines,
    layout: PageLayout,
    compression: Compression,
    /// The task names the file saved.
    comms: HashMap<i32, Vec<u8>>,
    cpus: Vec<CpuPages>,
    /// Each CPU's current page and its records.
    current: Vec<Option<LoadedPage>>,
    /// Each CPU's losses its pages said, not written yet (how many, when known): written
    /// as `CPU:N [LOST M EVENTS]` just before the CPU's next record, where `trace-cmd
    /// report` writes them (not when the page is loaded, which can be well before its
    /// time), or at the end.
    lost: Vec<Option<Option<u64>>>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    out: Vec<u8>,
    out_at: usize,
    /// What was met besides events.
    pub tally: PageTally,
    /// CPUs whose data the file ends inside of, in words.
    cut: Vec<String>,
    /// The damage that stopped the reading, said after the lines before it.
    failed: Option<DatError>,
    /// Whether the end was reached and the tally's warnings given.
    ended: bool,
}

impl DatLines {
    /// Opens a trace.dat. Every event format in it but ftrace's own must be one glk can
    /// read and print, else [`DatError::Unsupported`] names the first that is not.
    pub fn open(path: &Path) -> Result<DatLines, DatError> {
        let file = File::open(path)?;
        let parts = Parts::read(&file)?;
        let layout = PageLayout::from_header_page(&parts.header_page)
            .ok_or_else(|| DatError::Damaged("an unreadable header_page".into()))?;
        if layout.page_size != parts.page_size {
            return damaged(format!(
                "page size {} in the header, {} in header_page",
                parts.page_size, layout.page_size
            ));
        }
        let release = parts
            .uname
            .as_deref()
            .and_then(super::kernel_release)
            .and_then(|r| Release::parse(&r))
            .unwrap_or(Release(5, 13));
        let mut lines = Lines::new(release, true, false);
        for (system, text) in &parts.formats {
            let added = EventFormat::parse(text)
                .map_err(|e| format!("a {system} format: {e}"))
                .and_then(|f| lines.add(system, &f, &super::gfs2_symbols).map_err(|e| e.0));
            match added {
                Ok(()) => {}
                // ftrace's own events other than print only matter if recorded (a record
                // of one glk cannot read is counted as unknown); the recorded systems'
                // must all print.
                Err(_) if system == "ftrace" => {}
                Err(e) => return unsupported(e),
            }
        }
        let comms = super::saved_cmdlines(&parts.cmdlines)
            .map(|(pid, comm)| (pid, comm.to_vec()))
            .collect();
        let (data, cut) = within_file(
            &parts.cpus,
            file.metadata()?.len(),
            parts.compression,
            layout,
        );
        let cpus = data
            .into_iter()
            .map(|d| CpuPages::new(&file, d, parts.compression))
            .collect::<Result<Vec<_>, _>>()?;
        let mut d = DatLines {
            file,
            lines,
            layout,
            compression: parts.compression,
            comms,
            current: (0..cpus.len()).map(|_| None).collect(),
            lost: vec![None; cpus.len()],
            cpus,
            heap: BinaryHeap::new(),
            out: Vec::new(),
            out_at: 0,
            tally: PageTally::default(),
            cut,
            failed: None,
            ended: false,
        };
        for i in 0..d.cpus.len() {
            d.advance(i)?;
        }
        Ok(d)
    }

    /// Moves CPU `i` to its next record (loading pages as needed) and queues it.
    fn advance(&mut self, i: usize) -> Result<(), DatError> {
        loop {
            if let Some(p) = &self.current[i] {
                if let Some(&(ts, _, _)) = p.records.get(p.next) {
                    self.heap.push(Reverse((ts, i)));
                    return Ok(());
                }
            }
            let Some(page) =
                self.cpus[i].next_page(&self.file, self.compression, self.layout.page_size)?
            else {
                self.current[i] = None;
                return Ok(());
            };
            let cpu = self.cpus[i].cpu;
            let (lost, records) = self.tally.read_page(cpu, &page, self.layout);
            if let Some((_, n)) = lost {
                // Losses of pages without records add up (a damaged page may say any
                // number: the sum saturates); one of unknown size makes the sum unknown.
                let before = self.lost[i].unwrap_or(Some(0));
                self.lost[i] = Some(before.zip(n).map(|(a, b)| a.saturating_add(b)));
            }
            let recs = records
                .iter()
                .map(|r| {
                    let start = r.data.as_ptr() as usize - page.as_ptr() as usize;
                    (r.ts, start, r.data.len())
                })
                .collect();
            self.current[i] = Some(LoadedPage {
                bytes: page,
                records: recs,
                next: 0,
            });
        }
    }

    /// Writes the next record in time order; false at the end.
    fn next_line(&mut self) -> Result<bool, DatError> {
        let Some(Reverse((ts, i))) = self.heap.pop() else {
            // Losses after a CPU's last record.
            for (i, n) in self.lost.iter_mut().enumerate() {
                if let Some(n) = n.take() {
                    super::write_lost(&mut self.out, self.cpus[i].cpu, n);
                }
            }
            return Ok(false);
        };
        if let Some(p) = &mut self.current[i] {
            if let Some(n) = self.lost[i].take() {
                super::write_lost(&mut self.out, self.cpus[i].cpu, n);
            }
            let (_, start, len) = p.records[p.next];
            p.next += 1;
            let rec = Record {
                ts,
                data: &p.bytes[start..start + len],
            };
            let written = self
                .lines
                .line(self.cpus[i].cpu, &rec, &mut self.comms, &mut self.out);
            self.tally.count(written);
        }
        self.advance(i)?;
        Ok(true)
    }
}

impl DatLines {
    /// Writes the next lines (about 1 MiB) into `out`, stopping at the end or at a damage
    /// (kept in `failed`: the lines before it are given first).
    fn fill(&mut self) {
        self.out.clear();
        self.out_at = 0;
        while self.failed.is_none() && self.out.len() < 1 << 20 {
            match self.next_line() {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => self.failed = Some(e),
            }
        }
    }

    /// What kept the lines from being all the file's events, in words: a damage that
    /// stopped the reading, CPUs the file ends inside of, pages and records not written.
    fn shortfall(&mut self) -> Option<String> {
        let mut said = std::mem::take(&mut self.cut);
        let tally = self.tally.warnings();
        let trace_cmd = !tally.is_empty();
        said.extend(tally);
        if let Some(e) = self.failed.take() {
            said.insert(0, format!("reading stopped: {e}"));
        }
        (!said.is_empty()).then(|| {
            let may = if trace_cmd {
                " (`trace-cmd report -i` may read the rest)"
            } else {
                ""
            };
            format!("a trace.dat read in part: {}{may}", said.join("; "))
        })
    }
}

impl Read for DatLines {
    /// The lines; at the end, what could not be read (records, pages, a damage that
    /// stopped the reading, the file's early end) is an error (the lines before it are
    /// whole), which the caller names with the file.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.out_at >= self.out.len() && !self.ended {
            self.fill();
        }
        if self.out_at >= self.out.len() && !buf.is_empty() && !self.ended {
            self.ended = true;
            if let Some(why) = self.shortfall() {
                return Err(io::Error::new(io::ErrorKind::InvalidData, why));
            }
        }
        let n = buf.len().min(self.out.len() - self.out_at);
        buf[..n].copy_from_slice(&self.out[self.out_at..self.out_at + n]);
        self.out_at += n;
        Ok(n)
    }
}

/// The CPUs' data as far as the file holds it: a file cut short (copied while trace-cmd
/// wrote it, a full disk) keeps its whole pages, and each CPU it ends inside of is said.
/// Compressed data is read chunk by chunk: where the file ends, the reading stops. A CPU
/// whose size (damaged) runs into the next CPU's data is read to where that data begins,
/// and that is said too: its pages are not read twice, once as another CPU's.
fn within_file(
    cpus: &[CpuData],
    len: u64,
    c: Compression,
    layout: PageLayout,
) -> (Vec<CpuData>, Vec<String>) {
    let page = layout.page_size as u64;
    let whole_pages = |bytes: u64| {
        if c == Compression::None {
            bytes / page * page
        } else {
            bytes
        }
    };
    let mut cut = Vec::new();
    let data = cpus
        .iter()
        .map(|d| {
            let mut d = *d;
            let next = cpus.iter().filter(|o| o.offset > d.offset).min_by_key(|o| o.offset);
            if let Some(next) = next.filter(|n| d.size > n.offset - d.offset) {
                cut.push(format!(
                    "CPU {}'s data size, {} bytes, runs into CPU {}'s data: read to where that begins",
                    d.cpu, d.size, next.cpu
                ));
                d.size = whole_pages(next.offset - d.offset);
            }
            let there = len.saturating_sub(d.offset);
            if c != Compression::None || d.size <= there {
                return d;
            }
            let kept = whole_pages(there);
            cut.push(format!(
                "the file ends inside CPU {}'s data: {} of its {} pages read",
                d.cpu,
                kept / page,
                d.size.div_ceil(page)
            ));
            CpuData { size: kept, ..d }
        })
        .collect();
    (data, cut)
}
