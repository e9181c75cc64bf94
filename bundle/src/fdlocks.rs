//! Which processes hold a file lock right now, through which open file: the `lock:` lines
//! of `/proc/PID/fdinfo/FD`, recorded by `glk capture` as `fdlocks.N`.
//!
//! An flock belongs to the open file, not to the process that took it: when that process
//! ends, the children that inherited the file keep the lock. `/proc/locks` and a 5.10
//! glocks file (`p:228 [(ended)]`; RHEL 8's 4.18 prints the same) keep naming the process
//! that took it, and kernels before 6.1 have no `glockfd` to say who still has the file
//! open. The kernel's fdinfo says it exactly: a process's fdinfo for a file shows every
//! flock and OFD lock held through that open file (shared by all the processes that have
//! it), and the POSIX locks the process itself holds on it (`show_fd_locks()` in
//! `fs/locks.c`, since 4.1: RHEL 8's 4.18 has it; read in the lab on 5.10 and 6.12).
//!
//! Reading fdinfo touches no filesystem: it never blocks on a glock, however hung the
//! cluster. The file is glk's own text format, one held lock per line, tab-separated, the
//! lock as fdinfo prints it (the syntax of `/proc/locks`, [`crate::procs::read_locks`]):
//!
//! ```text
//! # glk fdlocks 1: pid fd lock (from /proc/PID/fdinfo/FD)
//! 242\t3\t1: FLOCK  ADVISORY  WRITE 228 fe:00:266268 0 EOF
//! ```

use std::collections::HashSet;
use std::io::{self, Read, Write};
use std::path::Path;

use glockparse::lines::Parsed;
use glockparse::Diagnostics;

use crate::procs::{self, numbered_entries, FileLock};

/// The first line of an `fdlocks.N` file.
pub const HEADER: &str = "# glk fdlocks 1: pid fd lock (from /proc/PID/fdinfo/FD)";

/// A lock held through a process's open file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FdLock {
    /// The process (thread group) whose file table has the file.
    pub pid: i64,
    /// The file descriptor.
    pub fd: u32,
    /// The lock, as fdinfo shows it: its `pid` is the process that took it, which may have
    /// ended; its `line` is the line of the `fdlocks` file.
    pub lock: FileLock,
}

/// Writes, in the `fdlocks.N` format, the locks on `devs` (device numbers: a GFS2
/// filesystem's, [`crate::live::Filesystem::device`]) that this node's processes hold
/// through their open files, in pid and fd order, each lock as fdinfo printed it. Nothing is
/// looked for when `/proc/locks` shows no lock on those devices; only files whose link
/// names a path (not sockets, pipes or anonymous inodes) have their fdinfo read.
/// Processes and files that go away while being read are left out. Returns how many
/// locks were written.
pub fn write_this_node(w: &mut impl Write, devs: &[(u32, u32)]) -> io::Result<usize> {
    writeln!(w, "{HEADER}")?;
    let locked = locked_inodes(devs);
    if locked.is_empty() {
        return Ok(0);
    }
    let mut written = 0;
    for pid in numbered_entries::<u32>(Path::new("/proc")) {
        let dir = format!("/proc/{pid}");
        for fd in numbered_entries::<u32>(Path::new(&format!("{dir}/fd"))) {
            let is_path = std::fs::read_link(format!("{dir}/fd/{fd}"))
                .is_ok_and(|target| target.as_os_str().as_encoded_bytes().starts_with(b"/"));
            if !is_path {
                continue;
            }
            let Ok(info) = std::fs::read(format!("{dir}/fdinfo/{fd}")) else {
                continue;
            };
            for (text, lock) in held_in_fdinfo(&info) {
                if locked.contains(&(lock.dev, lock.ino)) {
                    w.write_all(format!("{pid}\t{fd}\t").as_bytes())?;
                    w.write_all(text)?;
                    w.write_all(b"\n")?;
                    written += 1;
                }
            }
        }
    }
    Ok(written)
}

/// The (device, inode) pairs `/proc/locks` shows locked on `devs`.
fn locked_inodes(devs: &[(u32, u32)]) -> HashSet<((u32, u32), u64)> {
    if devs.is_empty() {
        return HashSet::new();
    }
    let Ok(text) = std::fs::read("/proc/locks") else {
        return HashSet::new();
    };
    let (locks, _) = procs::read_locks(&text[..], "/proc/locks");
    locks
        .into_iter()
        .filter(|l| devs.contains(&l.dev))
        .map(|l| (l.dev, l.ino))
        .collect()
}

/// The `lock:` lines of an fdinfo file: each lock's text (`1: FLOCK ...`) and the lock.
fn held_in_fdinfo(info: &[u8]) -> impl Iterator<Item = (&[u8], FileLock)> {
    info.split(|b| *b == b'\n')
        .filter_map(|l| l.strip_prefix(b"lock:"))
        .map(<[u8]>::trim_ascii)
        .filter_map(|text| match procs::lock_line(text) {
            Parsed::Record(lock) => Some((text, lock)),
            _ => None,
        })
}

/// One line of an `fdlocks.N` file.
fn fd_lock_line(line: &[u8]) -> Parsed<FdLock> {
    let mut f = line.splitn(3, |b| *b == b'\t');
    let (Some(pid), Some(fd), Some(lock)) = (f.next(), f.next(), f.next()) else {
        return Parsed::Bad("expected 3 tab-separated fields".into());
    };
    let text = |field: &[u8]| String::from_utf8_lossy(field).into_owned();
    let (Ok(pid), Ok(fd)) = (text(pid).parse::<i64>(), text(fd).parse::<u32>()) else {
        return Parsed::Bad("bad pid or fd".into());
    };
    match procs::lock_line(lock) {
        Parsed::Record(lock) => Parsed::Record(FdLock { pid, fd, lock }),
        Parsed::Flawed(_, m) | Parsed::Bad(m) => Parsed::Bad(m),
        Parsed::Ignored => Parsed::Ignored,
    }
}

/// The process that holds the flock on inode `ino` of `locks` (a filesystem's: `glk
/// capture` writes one `fdlocks.N` per filesystem, with the locks on its device only),
/// with its line: of the processes sharing the open file that holds it, the one that took
/// the lock while it still holds it, else the one none of the others descends from (by
/// `ancestors`, empty where no process table tells), else the lowest pid.
pub fn flock_holder(
    locks: &[FdLock],
    ino: u64,
    ancestors: impl Fn(i64) -> Vec<i64>,
) -> Option<&FdLock> {
    let mut holders: Vec<&FdLock> = locks
        .iter()
        .filter(|l| l.lock.kind == "FLOCK" && !l.lock.blocked && l.lock.ino == ino)
        .collect();
    holders.sort_by_key(|l| (l.pid, l.lock.line));
    holders.dedup_by_key(|l| l.pid);
    let holds = |pid: i64| holders.iter().any(|l| l.pid == pid);
    holders
        .iter()
        .find(|l| l.pid == l.lock.pid)
        .or_else(|| {
            holders
                .iter()
                .find(|l| !ancestors(l.pid).into_iter().any(holds))
        })
        .or(holders.first())
        .copied()
}

/// Whether `/proc/locks` shows a lock on `devs` taken by a process that has ended (or that
/// this process cannot see): one that only fdinfo can tell the holder of.
pub fn orphaned(devs: &[(u32, u32)]) -> bool {
    let Ok(text) = std::fs::read("/proc/locks") else {
        return false;
    };
    let (locks, _) = procs::read_locks(&text[..], "/proc/locks");
    locks
        .iter()
        .filter(|l| devs.contains(&l.dev) && !l.blocked)
        .any(|l| !Path::new(&format!("/proc/{}", l.pid)).exists())
}

/// Reads an `fdlocks.N` file; bad lines are reported with their numbers and skipped.
pub fn read<R: Read>(rdr: R, source: &str) -> (Vec<FdLock>, Diagnostics) {
    glockparse::lines::parse_records(rdr, source, |n, line| {
        if line.starts_with(b"#") {
            return Parsed::Ignored;
        }
        match fd_lock_line(line) {
            Parsed::Record(mut l) => {
                l.lock.line = n;
                Parsed::Record(l)
            }
            other => other,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::{Duration, Instant};

    /// The lock `/proc/locks` shows taken by `pid`, once it does (5 s at most).
    fn taken_by(pid: i64) -> FileLock {
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            let text = std::fs::read("/proc/locks").unwrap();
            let (locks, _) = procs::read_locks(&text[..], "/proc/locks");
            if let Some(l) = locks.into_iter().find(|l| l.pid == pid && !l.blocked) {
                return l;
            }
            assert!(
                Instant::now() < until,
                "/proc/locks never showed pid {pid}'s flock"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The processes fdinfo shows holding a lock on `lock`'s inode, with the pid the lock
    /// names (its taker).
    fn holders(lock: &FileLock) -> Vec<(i64, i64)> {
        let mut out = Vec::new();
        write_this_node(&mut out, &[lock.dev]).unwrap();
        let (read, d) = read(&out[..], "fdlocks");
        assert_eq!(d.errors, 0, "{d:?}");
        read.iter()
            .filter(|l| l.lock.ino == lock.ino)
            .map(|l| (l.pid, l.lock.pid))
            .collect()
    }

    /// A process that is not our child, killed when the test ends however it ends.
    struct KilledPid(i64);
    impl Drop for KilledPid {
        fn drop(&mut self) {
            let _ = Command::new("kill").arg(self.0.to_string()).status();
        }
    }

    #[test]
    fn an_inherited_flock_is_held_by_whoever_keeps_the_open_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        // flock(1) takes the lock on a file it opened, then runs sleep, which inherits it.
        let mut flock = Command::new("flock")
            .arg("-x")
            .arg(&file)
            .args(["sleep", "60"])
            .spawn()
            .expect("util-linux flock");
        let taker = i64::from(flock.id());
        let _flock = KilledPid(taker);
        let lock = taken_by(taker);
        let children = format!("/proc/{taker}/task/{taker}/children");
        let sleep: i64 = std::fs::read_to_string(children)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let _sleep = KilledPid(sleep);
        assert_eq!(holders(&lock), [(taker, taker), (sleep, taker)]);
        // The taker ends: its child keeps the lock, which still names the taker.
        flock.kill().unwrap();
        flock.wait().unwrap();
        assert_eq!(
            taken_by(taker).ino,
            lock.ino,
            "/proc/locks names the taker still"
        );
        assert!(
            orphaned(&[lock.dev]),
            "a lock taken by a process that has ended"
        );
        assert_eq!(holders(&lock), [(sleep, taker)]);
    }

    #[test]
    fn nothing_is_looked_for_without_a_lock_on_the_devices() {
        let mut out = Vec::new();
        assert_eq!(write_this_node(&mut out, &[]).unwrap(), 0);
        assert_eq!(out, format!("{HEADER}\n").as_bytes());
    }

    #[test]
    fn a_bad_line_is_named_and_the_rest_kept() {
        let text = format!(
            "{HEADER}\n242\t3\t1: FLOCK  ADVISORY  WRITE 228 fe:00:266268 0 EOF\n\
             x\t3\t1: FLOCK  ADVISORY  WRITE 228 fe:00:266268 0 EOF\n\
             243\t4\t1: FLOCK  ADVISORY  WRITE 225 fe:00:\x1b[2J 0 EOF\n\
             243\t5\t1: FLOCK  ADVISORY  WRITE 225 fe:00:266270 0 EOF\n"
        );
        let (locks, d) = read(text.as_bytes(), "n1/fdlocks.2");
        let got: Vec<(i64, u32, i64, u64, u64)> = locks
            .iter()
            .map(|l| (l.pid, l.fd, l.lock.pid, l.lock.ino, l.lock.line))
            .collect();
        assert_eq!(got, [(242, 3, 228, 266268, 2), (243, 5, 225, 266270, 5)]);
        assert_eq!(locks[0].lock.dev, (0xfe, 0));
        let errors: Vec<String> = d.first_errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(
            errors[0].starts_with("n1/fdlocks.2:3: bad pid or fd"),
            "{errors:?}"
        );
        assert!(
            errors[1].starts_with("n1/fdlocks.2:4: bad device:inode"),
            "{errors:?}"
        );
        assert!(errors.iter().all(|e| !e.contains('\x1b')), "{errors:?}");
    }
}
