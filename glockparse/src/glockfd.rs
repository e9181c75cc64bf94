//! The debugfs `glockfd` file (6.1+): one `TGID FD TYPE/HEXNUM` line per open file and
//! glock (the iopen glock, plus the flock glock when the file holds a flock).

use std::io::Read;

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
