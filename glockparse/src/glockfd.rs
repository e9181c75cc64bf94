//! The debugfs `glockfd` file (6.1+): one `TGID FD TYPE/HEXNUM` line per open file and
//! glock (the iopen glock, plus the flock glock when the file holds a flock).

use std::io::{self, Read};
use std::path::Path;

use crate::diagnostics::Diagnostics;
use crate::id::GlockId;
use crate::lines::{parse_records, Parsed};
use crate::num::parse_u64;

/// One line of `glockfd`: a process's open file and the glock behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GlockFd {
    /// Thread-group id (the process id).
    pub pid: u32,
    /// The file descriptor.
    pub fd: u32,
    /// The glock of the file's inode.
    pub glock: GlockId,
}

/// Parses one glockfd line.
pub fn parse_line(line: &[u8]) -> Result<GlockFd, String> {
    let mut it = line.split(|&b| b == b' ').filter(|t| !t.is_empty());
    let (Some(pid), Some(fd), Some(gl), None) = (it.next(), it.next(), it.next(), it.next()) else {
        return Err("expected PID FD TYPE/HEXNUM".into());
    };
    let num = |s: &[u8]| parse_u64(s).and_then(|v| u32::try_from(v).ok());
    Ok(GlockFd {
        pid: num(pid).ok_or("bad pid")?,
        fd: num(fd).ok_or("bad fd")?,
        glock: GlockId::parse_hex(gl).ok_or("bad glock id")?,
    })
}

/// The most one read of a live glockfd file is given room for (the kernel gives a page).
const ONE_READ: usize = 1 << 20;

/// A glockfd file as [`read_path`] read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contents {
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// A live file whose one read filled a page: why lines may be missing ([`cut_short`]).
    /// Never for a copy.
    pub cut_short: Option<String>,
}

/// Reads a glockfd file: a live one (debugfs, which reports size 0) with one `read(2)` and
/// never a second, saying when that read filled a page ([`cut_short`]); a copy (a regular
/// file) whole.
///
/// The kernel's glockfd iterator (`gfs2_glockfd_seq_*`, 6.1 to 6.12 at least) has two
/// faults a reader must step around. Its `start` returns nothing past position 0, so the
/// file is what one read returns: at most one page of lines (~150 open files; the rest
/// cannot be read). And its `stop` releases the task and the file it stopped at without
/// forgetting them, so that a second `read(2)` of the same open file, which calls `start`
/// (nothing) and `stop` again, releases them twice: a use-after-free. In the lab (6.12) a
/// reader whose first read took 32 bytes (Rust's `read_to_end` probe) set off a storm of
/// kernel oopses; any reader of a glockfd longer than one read's worth does the same.
pub fn read_path(path: &Path) -> io::Result<Contents> {
    let mut f = std::fs::File::open(path)?;
    if f.metadata()?.len() > 0 {
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes)?;
        return Ok(Contents {
            bytes,
            cut_short: None,
        });
    }
    let mut buf = vec![0u8; ONE_READ];
    let n = loop {
        match f.read(&mut buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => break r?,
        }
    };
    buf.truncate(n);
    Ok(Contents {
        cut_short: cut_short(n),
        bytes: buf,
    })
}

/// The longest line a glockfd holds: `PID FD TYPE/NUMBER`, two 10-digit numbers, a
/// one-digit glock type and a 16-digit hex glock number, with their separators.
const LONGEST_LINE: usize = 10 + 1 + 10 + 1 + 1 + 1 + 16 + 1;

/// The kernel's page size, the size of the seq_file buffer one read of a glockfd fills.
pub fn page_size() -> usize {
    // SAFETY: sysconf only reads a configuration value; it has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}

/// Why what one read of a live glockfd returned ([`read_path`]) may lack lines, when it
/// may: the kernel fills one page and stops at the first line that does not fit, and a
/// second read gives nothing, so a read that came within a line of a page left out the
/// processes past it. `None` when the read was shorter.
pub fn cut_short(len: usize) -> Option<String> {
    let page = page_size();
    (len + LONGEST_LINE > page).then(|| {
        format!(
            "{len} bytes, all the kernel gives in one read (a {page}-byte page): processes \
             past these may also hold GFS2 files open (docs/kernel-formats.md 1.10)"
        )
    })
}

/// Reads a whole glockfd file; malformed lines are counted and reported.
pub fn read_all<R: Read>(rdr: R, source: &str) -> (Vec<GlockFd>, Diagnostics) {
    parse_records(rdr, source, |_, line| match parse_line(line) {
        Ok(r) => Parsed::Record(r),
        Err(m) => Parsed::Bad(m),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_within_a_line_of_a_page_may_be_cut() {
        let page = page_size();
        assert!(page >= 4096 && page.is_power_of_two(), "{page}");
        assert_eq!(cut_short(0), None);
        assert_eq!(cut_short(page - LONGEST_LINE), None);
        let note = cut_short(page - 10).unwrap();
        assert!(note.contains(&format!("{}-byte page", page)), "{note}");
        // The longest line the kernel prints is counted.
        let longest = format!("{} {} 5/{:x}\n", u32::MAX, u32::MAX, u64::MAX);
        assert_eq!(longest.len(), LONGEST_LINE);
    }

    /// A live glockfd (size 0) is read once: what a second read would give is not asked
    /// for. A FIFO stands in: its size is 0 and it gives its writes one read at a time.
    #[test]
    fn a_live_file_is_read_once_and_a_copy_whole() {
        let d = std::env::temp_dir().join(format!("glk-glockfd-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let fifo = d.join("glockfd");
        testdata::fifo_at(&fifo);
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                use std::io::Write;
                let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
                w.write_all(b"860 3 5/806c\n").unwrap();
                w.flush().unwrap();
                std::thread::sleep(std::time::Duration::from_millis(300));
                let _ = w.write_all(b"861 4 5/806d\n");
            })
        };
        assert_eq!(read_path(&fifo).unwrap().bytes, b"860 3 5/806c\n");
        writer.join().unwrap();
        let copy = d.join("glockfd.0");
        let big: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("{i} 3 5/806c\n").into_bytes())
            .collect();
        std::fs::write(&copy, &big).unwrap();
        let c = read_path(&copy).unwrap();
        assert!(c.bytes == big && c.cut_short.is_none());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn pid_comes_first() {
        let r = parse_line(b"4923 9 5/816a").unwrap();
        assert_eq!((r.pid, r.fd, r.glock), (4923, 9, GlockId::new(5, 0x816a)));
        assert!(parse_line(b"1 2").is_err());
        assert!(parse_line(b"1 2 3/4 5").is_err());
        let (v, d) = read_all(&b"1 2 6/a\nbad\n\n"[..], "fd");
        assert_eq!(v.len(), 1);
        assert_eq!((d.errors, d.ignored), (1, 1));
    }
}
