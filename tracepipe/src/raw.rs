//! Reading an instance's ring buffer as raw pages (`per_cpu/cpuN/trace_pipe_raw`), and
//! what turns them into `trace_pipe`'s lines: the events' formats, the page layout, the
//! clock and the saved task names ([`RawSetup`], [`SavedCmdlines`]).
//!
//! A page read from `trace_pipe_raw` is consumed like a line of `trace_pipe`, but the
//! kernel copies it instead of formatting every event on the one `trace_pipe` reader: at
//! a million events a second that is the difference between keeping them all and losing
//! half.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use traceparse::raw::{self, EventFormat, Lines, PageLayout, PageTally, Release};
use traceparse::reader::LineSource;

use crate::error::TraceError;
use crate::instance::Instance;
use crate::tracefs::Tracefs;

/// The per-CPU `trace_pipe_raw` files of an instance, opened non-blocking.
pub struct RawPipes {
    cpus: Vec<(u32, File)>,
    page: usize,
}

/// One page as read, with its CPU.
pub struct RawPage {
    /// The CPU whose buffer it is.
    pub cpu: u32,
    /// The page's bytes (a partial page when the writer was on it).
    pub bytes: Vec<u8>,
}

impl RawPipes {
    /// Opens every CPU's `trace_pipe_raw` of `inst`; `page` is the ring buffer's page
    /// size.
    pub fn open(inst: &Instance, page: usize) -> Result<RawPipes, TraceError> {
        let dir = inst.dir().join("per_cpu");
        let mut cpus = Vec::new();
        let entries = std::fs::read_dir(&dir)
            .map_err(|e| TraceError::Io(format!("listing {}", dir.display()), e))?;
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(cpu) = name
                .to_str()
                .and_then(|n| n.strip_prefix("cpu"))
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let path = e.path().join("trace_pipe_raw");
            let f = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)
                .map_err(|e| TraceError::Io(format!("opening {}", path.display()), e))?;
            cpus.push((cpu, f));
        }
        cpus.sort_by_key(|(c, _)| *c);
        if cpus.is_empty() {
            return Err(TraceError::Io(
                format!("no per-CPU buffers in {}", dir.display()),
                io::Error::from(io::ErrorKind::NotFound),
            ));
        }
        Ok(RawPipes { cpus, page })
    }

    /// Reads the pages now available, CPU by CPU and at most `most` of each, into `out`
    /// (reusing the buffers in `spare`). Returns how many pages were read.
    pub fn read_available(
        &mut self,
        out: &mut Vec<RawPage>,
        spare: &mut Vec<Vec<u8>>,
        most: usize,
    ) -> io::Result<usize> {
        let mut n = 0;
        for (cpu, f) in &mut self.cpus {
            for _ in 0..most {
                let mut buf = spare.pop().unwrap_or_default();
                buf.resize(self.page, 0);
                match f.read(&mut buf) {
                    Ok(0) => {
                        spare.push(buf);
                        break;
                    }
                    Ok(k) => {
                        buf.truncate(k);
                        out.push(RawPage {
                            cpu: *cpu,
                            bytes: buf,
                        });
                        n += 1;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        spare.push(buf);
                        break;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => spare.push(buf),
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(n)
    }
}

/// The task names of traced pids, as `trace_pipe` prints them: the kernel saves a task's
/// name at its next context switch (tracefs `saved_cmdlines`), and formats an event when
/// `trace_pipe` reads it. Pages are read sooner, so a pid is looked up first in
/// `/proc/PID/comm` (a live task's name now), then in `saved_cmdlines` (read again at
/// most every 100 ms; it keeps tasks that have exited, and stale names of reused pids).
/// Names are forgotten every second, for pids reused and tasks that exec; a pid found
/// nowhere is not asked for again within a second, and prints `<...>` as the kernel's
/// does.
pub struct SavedCmdlines {
    path: PathBuf,
    proc: PathBuf,
    names: HashMap<i32, Vec<u8>>,
    missing: HashMap<i32, Instant>,
    read_at: Option<Instant>,
    saved: HashMap<i32, Vec<u8>>,
    calls: u32,
    forgot_at: Instant,
}

impl SavedCmdlines {
    /// The names of this machine's tasks and of tracefs `tfs`' saved ones.
    pub fn new(tfs: &Tracefs) -> SavedCmdlines {
        SavedCmdlines::at(tfs.dir().join("saved_cmdlines"), PathBuf::from("/proc"))
    }

    /// The names in the procfs at `proc`, then in the file `path` (`PID COMM` lines).
    pub fn at(path: PathBuf, proc: PathBuf) -> SavedCmdlines {
        SavedCmdlines {
            path,
            proc,
            names: HashMap::new(),
            missing: HashMap::new(),
            read_at: None,
            saved: HashMap::new(),
            calls: 0,
            forgot_at: Instant::now(),
        }
    }

    /// Reads `saved_cmdlines` again, unless it was read in the last 100 ms.
    fn reload(&mut self) {
        if self
            .read_at
            .is_some_and(|t| t.elapsed() < Duration::from_millis(100))
        {
            return;
        }
        self.read_at = Some(Instant::now());
        let Ok(text) = std::fs::read(&self.path) else {
            return;
        };
        self.saved = raw::saved_cmdlines(&text)
            .map(|(pid, comm)| (pid, comm.to_vec()))
            .collect();
    }

    /// Finds a pid the table does not have.
    fn look_up(&mut self, pid: i32) {
        if self
            .missing
            .get(&pid)
            .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
        {
            return;
        }
        if let Ok(comm) = std::fs::read(self.proc.join(pid.to_string()).join("comm")) {
            self.names.insert(pid, task_comm(&comm));
            return;
        }
        self.reload();
        match self.saved.get(&pid) {
            Some(comm) => {
                self.names.insert(pid, comm.clone());
            }
            None => {
                self.missing.insert(pid, Instant::now());
            }
        }
    }

    /// Forgets the names found, every second (checked every 64 Ki calls).
    fn forget_now_and_then(&mut self) {
        self.calls = self.calls.wrapping_add(1);
        if self.calls % (1 << 16) == 0 && self.forgot_at.elapsed() >= Duration::from_secs(1) {
            self.names.clear();
            self.forgot_at = Instant::now();
        }
    }
}

/// The task's own name (what the kernel saves, at most 15 bytes) from its
/// `/proc/PID/comm`, which adds a workqueue worker's current work to its name
/// (`kworker/0:2-rcu_gp`, `+` while the work runs: fs/proc/array.c, wq_worker_comm).
fn task_comm(proc_comm: &[u8]) -> Vec<u8> {
    let mut comm = proc_comm.strip_suffix(b"\n").unwrap_or(proc_comm);
    if comm.starts_with(b"kworker/") {
        if let Some(cut) = comm.iter().position(|b| matches!(b, b'-' | b'+')) {
            comm = &comm[..cut];
        }
    }
    comm[..comm.len().min(15)].to_vec()
}

impl raw::Comms for SavedCmdlines {
    fn comm(&mut self, pid: i32) -> Option<&[u8]> {
        self.forget_now_and_then();
        if !self.names.contains_key(&pid) {
            self.look_up(pid);
        }
        self.names.get(&pid).map(Vec::as_slice)
    }
}

/// What reading an instance raw needs: the page layout and size, and how each event
/// traced is printed.
pub struct RawSetup {
    /// The pages' layout and size.
    pub layout: PageLayout,
    /// How each event is printed as a `trace_pipe` line.
    pub lines: Lines,
}

impl RawSetup {
    /// Prepares to read `events` ((system, event) pairs; ftrace's `print`, which
    /// `trace_marker` writes, is always added) of tracefs `tfs` raw, with the trace
    /// clock `clock`. An event whose lines glk cannot print from its records is an error
    /// naming it: the caller reads `trace_pipe` instead.
    pub fn new(
        tfs: &Tracefs,
        events: &[(String, String)],
        clock: Option<&str>,
    ) -> Result<RawSetup, String> {
        let header = read_header_page(&tfs.dir().join("events/header_page"))
            .map_err(|e| format!("events/header_page: {e}"))?;
        let layout = PageLayout::from_header_page(&header)
            .ok_or("events/header_page: no commit field of 4 or 8 bytes, or no data field")?;
        let counter = clock.is_some_and(|c| !raw::counts_nanoseconds(c));
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .ok()
            .as_deref()
            .and_then(Release::parse)
            .ok_or("cannot read the kernel release")?;
        let mut lines = Lines::new(release, true, counter);
        let mut all: Vec<(String, String)> = events.to_vec();
        all.push(("ftrace".into(), "print".into()));
        for (system, event) in &all {
            let text = tfs
                .format(system, event)
                .ok_or_else(|| format!("{system}:{event}: no format file"))?;
            let format = EventFormat::parse(&text).map_err(|e| format!("{system}:{event}: {e}"))?;
            lines
                .add(system, &format, &raw::gfs2_symbols)
                .map_err(|e| e.to_string())?;
        }
        Ok(RawSetup { layout, lines })
    }
}

/// Pages read in one pass at most, per CPU, before they are turned into lines.
const PASS_PAGES: usize = 64;

/// An instance's raw pages as `trace_pipe`'s lines, for `BlockReader::live`.
pub struct RawSource {
    pipes: RawPipes,
    setup: RawSetup,
    comms: SavedCmdlines,
    pages: Vec<RawPage>,
    spare: Vec<Vec<u8>>,
    tally: RawTally,
}

impl RawSource {
    /// Reads `pipes` with `setup`, task names from `comms`. What it meets besides
    /// events is counted in the returned tally.
    pub fn new(pipes: RawPipes, setup: RawSetup, comms: SavedCmdlines) -> (RawSource, RawTally) {
        let tally = Arc::new(Mutex::new(PageTally::default()));
        let src = RawSource {
            pipes,
            setup,
            comms,
            pages: Vec::new(),
            spare: Vec::new(),
            tally: Arc::clone(&tally),
        };
        (src, tally)
    }
}

impl LineSource for RawSource {
    fn fill(&mut self, block: &mut Vec<u8>) -> io::Result<usize> {
        let before = block.len();
        if self
            .pipes
            .read_available(&mut self.pages, &mut self.spare, PASS_PAGES)?
            == 0
        {
            return Ok(0);
        }
        let pages: Vec<(u32, &[u8])> = self
            .pages
            .iter()
            .map(|p| (p.cpu, p.bytes.as_slice()))
            .collect();
        let mut tally = self.tally.lock().unwrap_or_else(|e| e.into_inner());
        self.setup.lines.write_pages(
            &pages,
            self.setup.layout,
            &mut self.comms,
            block,
            &mut tally,
        );
        drop(tally);
        self.spare.extend(self.pages.drain(..).map(|p| p.bytes));
        Ok(block.len() - before)
    }
}

/// `events/header_page`, read with a buffer larger than it: the kernel regenerates it on
/// every read and a small first read (std's 32-byte probe) was seen to end it there.
fn read_header_page(path: &Path) -> io::Result<String> {
    let mut f = File::open(path)?;
    let mut buf = vec![0u8; 64 << 10];
    let mut len = 0;
    loop {
        match f.read(&mut buf[len..])? {
            0 => break,
            n => len += n,
        }
        if len == buf.len() {
            break;
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|_| io::Error::from(io::ErrorKind::InvalidData))
}

/// Whether the instance in `inst_dir` has per-CPU `trace_pipe_raw` files.
pub fn has_raw(inst_dir: &Path) -> bool {
    inst_dir.join("per_cpu/cpu0/trace_pipe_raw").exists()
}

/// How a live trace is to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefer {
    /// Raw pages when every event traced can be printed from its records, on an instance
    /// glk made; else `trace_pipe`.
    Auto,
    /// Raw pages, or an error saying why not.
    Raw,
    /// The kernel's `trace_pipe` text.
    Text,
}

/// What counts the raw reader's records that were not events.
pub type RawTally = Arc<Mutex<PageTally>>;

/// A live reader of an instance: blocks of `trace_pipe`'s lines, however read.
pub struct LiveReader {
    /// The lines.
    pub reader: traceparse::BlockReader,
    /// The raw reader's tally, when the pages are read raw.
    pub tally: Option<RawTally>,
    /// What is read, for messages (`.../trace_pipe`, `.../per_cpu/cpu*/trace_pipe_raw`).
    pub source: String,
}

/// Opens a live reader of `inst`, which traces `events`, as `prefer` asks and the events
/// allow. `made_here`: the instance is glk's own, so that it holds no event glk did not
/// enable.
pub fn live_reader(
    tfs: &Tracefs,
    inst: &Instance,
    events: &[(String, String)],
    prefer: Prefer,
    made_here: bool,
) -> Result<LiveReader, TraceError> {
    let raw = match prefer {
        Prefer::Text => Err(String::new()),
        _ if !made_here => {
            Err("--instance: an instance glk did not make may hold events glk does not know".into())
        }
        _ if !has_raw(inst.dir()) => Err("no per_cpu/cpu0/trace_pipe_raw".into()),
        _ => RawSetup::new(tfs, events, inst.trace_clock().as_deref()),
    };
    match raw {
        Ok(setup) => {
            let pipes = RawPipes::open(inst, setup.layout.page_size)?;
            let (src, tally) = RawSource::new(pipes, setup, SavedCmdlines::new(tfs));
            Ok(LiveReader {
                reader: traceparse::BlockReader::live(src),
                tally: Some(tally),
                source: inst
                    .dir()
                    .join("per_cpu/cpu*/trace_pipe_raw")
                    .display()
                    .to_string(),
            })
        }
        Err(why) if prefer == Prefer::Raw => Err(TraceError::NoRaw(why)),
        Err(_) => {
            let path = inst.trace_pipe();
            let reader = traceparse::BlockReader::live_pipe(&path)
                .map_err(|e| TraceError::Io(format!("opening {}", path.display()), e))?;
            Ok(LiveReader {
                reader,
                tally: None,
                source: path.display().to_string(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_names() {
        let (dir, p) = testdata::scratch_file("saved_cmdlines");
        std::fs::write(&p, "12 bash\n7 kworker/0:1\n30 stale\nbad\n").unwrap();
        let proc = dir.path().join("proc");
        std::fs::create_dir_all(proc.join("30")).unwrap();
        // A live task's name wins over a stale saved one.
        std::fs::write(proc.join("30/comm"), "a-long-command-name\n").unwrap();
        // A workqueue worker's /proc name carries its work; the task's name does not.
        std::fs::create_dir_all(proc.join("31")).unwrap();
        std::fs::write(proc.join("31/comm"), "kworker/0:2-rcu_gp\n").unwrap();
        std::fs::create_dir_all(proc.join("32")).unwrap();
        std::fs::write(proc.join("32/comm"), "kworker/u8:3+events_unbound\n").unwrap();
        let mut s = SavedCmdlines::at(p, proc);
        use traceparse::raw::Comms;
        assert_eq!(s.comm(7), Some(&b"kworker/0:1"[..]));
        assert_eq!(s.comm(12), Some(&b"bash"[..]));
        assert_eq!(s.comm(30), Some(&b"a-long-command-"[..]));
        assert_eq!(s.comm(31), Some(&b"kworker/0:2"[..]));
        assert_eq!(s.comm(32), Some(&b"kworker/u8:3"[..]));
        assert_eq!(s.comm(99), None);
    }
}
