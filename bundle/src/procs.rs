//! A node's processes at the moment of a snapshot, as `glk capture` records them: who
//! descends from whom (to see a lock held through an inherited file), who sleeps where,
//! and the kernel stacks of tasks in uninterruptible sleep. Plus the kernel's `/proc/locks`
//! (which process holds which flock, by inode) and the GFS2 mounts' device numbers.
//!
//! `procs.N` is glk's own text format, one task per line, tab-separated:
//!
//! ```text
//! # glk procs 1: tid tgid ppid pgid sid state wchan comm
//! 870\t870\t866\t866\t1\tD\tgfs2_glock_wait\tflock
//! \t[<0>] gfs2_glock_wait+0x3d/0x90 [gfs2]
//! ```
//!
//! A D-state task's kernel stack follows it, one frame per line, each starting with a tab.
//! `comm` is escaped (`\\`, `\t`, `\n`, `\xNN` for other control bytes); it is the last
//! field, so nothing else needs to be.
//!
//! Other tools' process tables are read as well: sos's `ps axo flags,state,...` output
//! ([`read`]), and gfs2_lockcapture's copy of `/proc/PID/{status,stack}` ([`read_proc_dir`]).

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::path::Path;

use glockparse::lines::{LineReader, Parsed};
use glockparse::{Diagnostics, ParseError};

/// The first line of a `procs.N` file.
pub const HEADER: &str = "# glk procs 1: tid tgid ppid pgid sid state wchan comm";

/// One task (thread) of a node.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Task {
    /// The task's own id: what the glocks file prints as a holder's pid.
    pub tid: i64,
    /// Its process (thread group) id.
    pub tgid: i64,
    /// The parent process.
    pub ppid: i64,
    /// The process group.
    pub pgid: i64,
    /// The session.
    pub sid: i64,
    /// `R`, `S`, `D`, `Z`, ... as `/proc/PID/stat` prints it.
    pub state: char,
    /// Where it sleeps in the kernel (`0` or empty when running).
    pub wchan: String,
    /// The command name.
    pub comm: String,
    /// The kernel stack, for a task in uninterruptible sleep (`D`).
    pub stack: Vec<String>,
    /// The line of the file it was read from.
    pub line: u64,
}

impl Task {
    /// A kernel thread (kworker, kthreadd's children): never a lock's owner for users.
    pub fn is_kernel_thread(&self) -> bool {
        self.ppid == 2 || self.tid == 2
    }

    /// Whether it sleeps waiting for a lock, in GFS2 (`gfs2_glock_wait`: a glock, an flock
    /// among them) or in the DLM's POSIX locks (`dlm_posix_lock`), by its wait channel or
    /// kernel stack.
    pub fn waits_for_a_lock(&self) -> bool {
        const WAITS: [&str; 2] = ["gfs2_glock_wait", "dlm_posix_lock"];
        let at = |s: &str| WAITS.iter().any(|w| s.contains(w));
        matches!(self.state, 'D' | 'S') && (at(&self.wchan) || self.stack.iter().any(|f| at(f)))
    }
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

fn unescape(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next()? {
            '\\' => out.push('\\'),
            't' => out.push('\t'),
            'n' => out.push('\n'),
            'x' => {
                let h: String = it.by_ref().take(2).collect();
                out.push(char::from(u8::from_str_radix(&h, 16).ok()?));
            }
            _ => return None,
        }
    }
    Some(out)
}

/// Every task of this node, read from /proc. Tasks that end while being read are left
/// out; the kernel stack is read for tasks in uninterruptible sleep (root only).
pub fn this_node() -> Vec<Task> {
    let mut out = Vec::new();
    let Ok(all) = procfs::process::all_processes() else {
        return out;
    };
    for p in all.flatten() {
        let Ok(tasks) = p.tasks() else { continue };
        for t in tasks.flatten() {
            let Ok(st) = t.stat() else { continue };
            let dir = format!("/proc/{}/task/{}", t.pid, t.tid);
            let read = |f: &str| std::fs::read_to_string(format!("{dir}/{f}")).unwrap_or_default();
            let stack = if st.state == 'D' {
                read("stack").lines().map(str::to_string).collect()
            } else {
                Vec::new()
            };
            out.push(Task {
                tid: i64::from(t.tid),
                tgid: i64::from(t.pid),
                ppid: i64::from(st.ppid),
                pgid: i64::from(st.pgrp),
                sid: i64::from(st.session),
                state: st.state,
                wchan: read("wchan").trim().to_string(),
                comm: st.comm,
                stack,
                line: 0,
            });
        }
    }
    out
}

/// Writes tasks in the `procs.N` format.
pub fn write(w: &mut impl Write, tasks: &[Task]) -> io::Result<()> {
    writeln!(w, "{HEADER}")?;
    for t in tasks {
        writeln!(
            w,
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            t.tid,
            t.tgid,
            t.ppid,
            t.pgid,
            t.sid,
            t.state,
            escape(&t.wchan),
            escape(&t.comm)
        )?;
        for f in &t.stack {
            writeln!(w, "\t{}", escape(f))?;
        }
    }
    Ok(())
}

/// A number field of a task line, named `what` in the error.
fn number(field: &str, what: &str) -> Result<i64, String> {
    field.parse().map_err(|_| {
        format!(
            "bad {what} {}",
            glockparse::quote::quote(field.as_bytes(), 30)
        )
    })
}

/// A task's state: one letter (`S`, `D`, ...).
fn state_letter(field: &str) -> Result<char, String> {
    let mut state = field.chars();
    match (state.next(), state.next()) {
        (Some(st), None) => Ok(st),
        _ => Err("the state is not one letter".into()),
    }
}

fn task_line(line: &[u8]) -> Result<Task, String> {
    let text = std::str::from_utf8(line).map_err(|_| "not UTF-8".to_string())?;
    let f: Vec<&str> = text.splitn(8, '\t').collect();
    if f.len() != 8 {
        return Err(format!(
            "expected 8 tab-separated fields, found {}",
            f.len()
        ));
    }
    let num = |i: usize, what: &str| number(f[i], what);
    let st = state_letter(f[5])?;
    Ok(Task {
        tid: num(0, "tid")?,
        tgid: num(1, "tgid")?,
        ppid: num(2, "ppid")?,
        pgid: num(3, "pgid")?,
        sid: num(4, "sid")?,
        state: st,
        wchan: unescape(f[6]).ok_or("bad escape in wchan")?,
        comm: unescape(f[7]).ok_or("bad escape in comm")?,
        stack: Vec::new(),
        line: 0,
    })
}

/// Reads a process table from `path`: a directory is a copy of `/proc`'s per-process files
/// ([`read_proc_dir`]); a file (compressed or not) is read by [`read`].
pub fn read_path(path: &Path) -> io::Result<(Vec<Task>, Diagnostics)> {
    if path.is_dir() {
        Ok(read_proc_dir(path))
    } else {
        glockparse::input::read_path(path, read)
    }
}

/// The entries of `dir` named by a number (the processes of a `/proc`, the descriptors of a
/// process's `fd/`), sorted; none when it cannot be read.
pub(crate) fn numbered_entries<T: std::str::FromStr + Ord>(dir: &Path) -> Vec<T> {
    let mut v: Vec<T> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

/// Reads a copy of `/proc`'s per-process files, as gfs2_lockcapture saves them in its
/// `proc/` (`PID/status`, `PID/stack`, [`proc_file`]): a task per process, its main thread.
/// Each task's `line` is its `PPid:` line in `PID/status` (the file that shows it); a
/// status without its `Pid`, `PPid`, `State` or `Name` is reported with its path and
/// skipped. Its wait channel is not saved: empty.
pub fn read_proc_dir(dir: &Path) -> (Vec<Task>, Diagnostics) {
    let mut d = Diagnostics::default();
    let pids: Vec<i64> = numbered_entries(dir);
    let mut out = Vec::with_capacity(pids.len());
    for pid in pids {
        let path = dir.join(proc_file(pid, "status"));
        let src: std::sync::Arc<str> = path.display().to_string().into();
        let text = match std::fs::read(&path) {
            // A process that ended while /proc was copied.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => {
                d.error(ParseError::new(&src, 0, e.to_string(), b""));
                continue;
            }
            // A task's name is its bytes (`prctl` may set any): kept, not a reason to drop it.
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        };
        d.lines += text.lines().count() as u64;
        match status_task(&text) {
            Ok(mut t) => {
                if t.state == 'D' {
                    t.stack = std::fs::read(dir.join(proc_file(pid, "stack")))
                        .map(|b| {
                            String::from_utf8_lossy(&b)
                                .lines()
                                .map(str::to_string)
                                .collect()
                        })
                        .unwrap_or_default();
                }
                d.records += 1;
                out.push(t);
            }
            Err((line, m)) => d.error(ParseError::new(&src, line, m, b"")),
        }
    }
    (out, d)
}

/// Process `pid`'s file `name` in a copy of `/proc`, relative to it: `PID/NAME`.
pub fn proc_file(pid: i64, name: &str) -> std::path::PathBuf {
    Path::new(&pid.to_string()).join(name)
}

/// A task from a `/proc/PID/status` text, or the line (0: the file) and what is wrong.
fn status_task(text: &str) -> Result<Task, (u64, String)> {
    let field = |name: &str| {
        text.lines()
            .zip(1u64..)
            .find_map(|(l, n)| Some((l.strip_prefix(name)?.strip_prefix(':')?.trim(), n)))
    };
    let need = |name: &str| field(name).ok_or((0, format!("no {name}: line")));
    let num = |name: &str| -> Result<(i64, u64), (u64, String)> {
        let (v, n) = need(name)?;
        // NSpgid and the like list one id per pid namespace: the first is the outermost.
        let first = v.split_whitespace().next().unwrap_or("");
        Ok((number(first, name).map_err(|m| (n, m))?, n))
    };
    let (state, state_line) = need("State")?;
    let state = state
        .chars()
        .next()
        .ok_or((state_line, "an empty State".into()))?;
    let (ppid, line) = num("PPid")?;
    Ok(Task {
        tid: num("Pid")?.0,
        tgid: num("Tgid")?.0,
        ppid,
        pgid: num("NSpgid").map_or(0, |(v, _)| v),
        sid: num("NSsid").map_or(0, |(v, _)| v),
        state,
        wchan: String::new(),
        comm: need("Name")?.0.to_string(),
        stack: Vec::new(),
        line,
    })
}

/// A line of `ps axo flags,state,uid,pid,ppid,pgid,sid,cls,pri,addr,sz,wchan:20,lstart,tty,time,cmd`
/// (what sos's process plugin keeps, under the header `F S UID PID PPID PGID SID ...`): the
/// start time is five words; the command's first word, without its directory (or a kernel
/// thread's brackets), is the task's name.
fn ps_line(line: &[u8]) -> Result<Task, String> {
    let text = std::str::from_utf8(line).map_err(|_| "not UTF-8".to_string())?;
    let f: Vec<&str> = text.split_whitespace().collect();
    if f.len() < 20 {
        return Err(format!("expected 20 or more columns, found {}", f.len()));
    }
    let num = |i: usize, what: &str| number(f[i], what);
    let st = state_letter(f[1])?;
    let cmd = f[19];
    let comm = match cmd.strip_prefix('[').and_then(|c| c.strip_suffix(']')) {
        Some(kthread) => kthread.to_string(),
        None => cmd.rsplit('/').next().unwrap_or(cmd).to_string(),
    };
    let pid = num(3, "pid")?;
    Ok(Task {
        tid: pid,
        tgid: pid,
        ppid: num(4, "ppid")?,
        pgid: num(5, "pgid")?,
        sid: num(6, "sid")?,
        state: st,
        wchan: if f[11] == "-" {
            String::new()
        } else {
            f[11].to_string()
        },
        comm,
        stack: Vec::new(),
        line: 0,
    })
}

/// Reads a `procs.N` file, or sos's `ps axo flags,state,...` output (by its header);
/// bad lines are reported with their line numbers and skipped.
pub fn read<R: Read>(rdr: R, source: &str) -> (Vec<Task>, Diagnostics) {
    let mut lines = LineReader::new(rdr);
    let mut d = Diagnostics::default();
    let mut out: Vec<Task> = Vec::new();
    let src: std::sync::Arc<str> = source.into();
    let mut ps = false;
    loop {
        let (n, line) = match lines.next_numbered() {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(e) => {
                d.fatal = Some(format!(
                    "{src}:{}: read error: {e}",
                    lines.line_number() + 1
                ));
                break;
            }
        };
        d.lines += 1;
        if out.is_empty() && line.starts_with(b"F S ") && line.windows(5).any(|w| w == b"WCHAN") {
            ps = true;
            d.ignored += 1;
            continue;
        }
        let parsed = if line.is_empty() || line.starts_with(b"#") {
            Parsed::Ignored
        } else if ps {
            match ps_line(line) {
                Ok(t) => Parsed::Record(Task { line: n, ..t }),
                Err(m) => Parsed::Bad(m),
            }
        } else if let Some(frame) = line.strip_prefix(b"\t") {
            match (out.last_mut(), unescape(&String::from_utf8_lossy(frame))) {
                (Some(t), Some(f)) => {
                    t.stack.push(f);
                    Parsed::Ignored
                }
                (None, _) => Parsed::Bad("a stack frame before any task".into()),
                (_, None) => Parsed::Bad("bad escape in a stack frame".into()),
            }
        } else {
            match task_line(line) {
                Ok(t) => Parsed::Record(Task { line: n, ..t }),
                Err(m) => Parsed::Bad(m),
            }
        };
        match parsed {
            Parsed::Record(t) | Parsed::Flawed(t, _) => {
                d.records += 1;
                out.push(t);
            }
            Parsed::Ignored => d.ignored += 1,
            Parsed::Bad(m) => d.error(ParseError::new(&src, n, m, line)),
        }
    }
    (out, d)
}

/// One entry of `/proc/locks`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileLock {
    /// `FLOCK`, `POSIX`, `OFDLCK`, `LEASE`.
    pub kind: String,
    /// `READ` or `WRITE` (or a lease's mode).
    pub mode: String,
    /// The owner's process id (for an inherited flock, the process that took it).
    pub pid: i64,
    /// The device, `major:minor` in hex as the kernel prints it.
    pub dev: (u32, u32),
    /// The inode.
    pub ino: u64,
    /// A request waiting for this lock (`->` lines), not a held lock.
    pub blocked: bool,
    /// Its line in the `locks` copy.
    pub line: u64,
}

/// One line of `/proc/locks` (the syntax fdinfo's `lock:` lines share), its `line` 0.
pub(crate) fn lock_line(line: &[u8]) -> Parsed<FileLock> {
    let text = String::from_utf8_lossy(line);
    let mut f = text.split_whitespace().peekable();
    if !f.next().is_some_and(|n| n.ends_with(':')) {
        return Parsed::Bad("no lock number".into());
    }
    let blocked = f.next_if_eq(&"->").is_some();
    let (Some(kind), Some(_adv), Some(mode), Some(pid), Some(file)) =
        (f.next(), f.next(), f.next(), f.next(), f.next())
    else {
        return Parsed::Bad("too few fields".into());
    };
    let mut parts = file.split(':');
    let hex = |s: Option<&str>| s.and_then(|s| u32::from_str_radix(s, 16).ok());
    let (Some(maj), Some(min), Some(ino)) = (
        hex(parts.next()),
        hex(parts.next()),
        parts.next().and_then(|s| s.parse::<u64>().ok()),
    ) else {
        return Parsed::Bad(format!(
            "bad device:inode {}",
            glockparse::quote::quote(file.as_bytes(), 40)
        ));
    };
    let Ok(pid) = pid.parse::<i64>() else {
        return Parsed::Bad("bad pid".into());
    };
    Parsed::Record(FileLock {
        kind: kind.to_string(),
        mode: mode.to_string(),
        pid,
        dev: (maj, min),
        ino,
        blocked,
        line: 0,
    })
}

/// Reads a copy of `/proc/locks`.
pub fn read_locks<R: Read>(rdr: R, source: &str) -> (Vec<FileLock>, Diagnostics) {
    glockparse::lines::parse_records(rdr, source, |n, line| match lock_line(line) {
        Parsed::Record(l) => Parsed::Record(FileLock { line: n, ..l }),
        other => other,
    })
}

/// The device numbers of the GFS2 mounts in a copy of `/proc/PID/mountinfo`.
pub fn gfs2_devices(mountinfo: &str) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for m in crate::mounts::parse(mountinfo.as_bytes()) {
        if let (Some(dev), "gfs2") = (m.dev, m.fs_type.as_str()) {
            if !out.contains(&dev) {
                out.push(dev);
            }
        }
    }
    out
}

/// A node's tasks by tid, with the walk up to their ancestors.
#[derive(Debug, Clone, Default)]
pub struct Table {
    by_tid: HashMap<i64, Task>,
}

impl Table {
    /// Indexes tasks by tid.
    pub fn new(tasks: Vec<Task>) -> Table {
        Table {
            by_tid: tasks.into_iter().map(|t| (t.tid, t)).collect(),
        }
    }

    /// The task `tid`.
    pub fn get(&self, tid: i64) -> Option<&Task> {
        self.by_tid.get(&tid)
    }

    /// Whether no task was recorded.
    pub fn is_empty(&self) -> bool {
        self.by_tid.is_empty()
    }

    /// The processes `tid` descends from, its own process (when `tid` is a thread) first,
    /// then its parent, up to (not including) init.
    pub fn ancestors(&self, tid: i64) -> Vec<i64> {
        let mut out = Vec::new();
        let Some(t) = self.get(tid) else {
            return out;
        };
        if t.tgid != t.tid {
            out.push(t.tgid);
        }
        let mut at = self.get(t.tgid).map_or(t.ppid, |p| p.ppid);
        while at > 1 && !out.contains(&at) && out.len() < 64 {
            out.push(at);
            at = self.get(at).map_or(0, |p| p.ppid);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// gfs2_lockcapture's `proc/PID/{status,stack}`: a task per process; a D task's stack;
    /// a status without its PPid reported by its path, the others kept.
    #[test]
    fn a_copy_of_proc_is_a_process_table() {
        let (_t, dir) = testdata::scratch_file("proc");
        let status = |pid: i64, body: &str| {
            std::fs::create_dir_all(dir.join(pid.to_string())).unwrap();
            std::fs::write(dir.join(proc_file(pid, "status")), body).unwrap();
        };
        status(
            276,
            "Name:\tflock\nUmask:\t0022\nState:\tD (disk sleep)\nTgid:\t276\nNgid:\t0\n\
             Pid:\t276\nPPid:\t273\nNSpgid:\t271 1\nNSsid:\t1\n",
        );
        std::fs::write(
            dir.join("276/stack"),
            "[<0>] gfs2_glock_wait+0x43/0xc0 [gfs2]\n[<0>] do_flock+0xed/0x2b0 [gfs2]\n",
        )
        .unwrap();
        status(
            2,
            "Name:\tkthreadd\nState:\tS (sleeping)\nTgid:\t2\nPid:\t2\nPPid:\t0\n",
        );
        status(
            9,
            "Name:\tbroken\nState:\tS (sleeping)\nTgid:\t9\nPid:\t9\n",
        );
        // A name is any bytes (prctl): the task is kept.
        std::fs::create_dir_all(dir.join("300")).unwrap();
        std::fs::write(
            dir.join(proc_file(300, "status")),
            b"Name:\tfl\xffck\nState:\tS (sleeping)\nTgid:\t300\nPid:\t300\nPPid:\t1\n",
        )
        .unwrap();
        std::fs::create_dir_all(dir.join("self")).unwrap();
        let (tasks, d) = read_path(&dir).unwrap();
        let ids: Vec<[i64; 5]> = tasks
            .iter()
            .map(|t| [t.tid, t.tgid, t.ppid, t.pgid, t.sid])
            .collect();
        assert_eq!(
            ids,
            [
                [2, 2, 0, 0, 0],
                [276, 276, 273, 271, 1],
                [300, 300, 1, 0, 0]
            ]
        );
        let what: Vec<(char, &str, u64)> = tasks
            .iter()
            .map(|t| (t.state, t.comm.as_str(), t.line))
            .collect();
        assert_eq!(
            what,
            [
                ('S', "kthreadd", 5),
                ('D', "flock", 7),
                ('S', "fl\u{fffd}ck", 5)
            ]
        );
        assert!(tasks[0].is_kernel_thread() && tasks[0].stack.is_empty());
        assert!(tasks[1].waits_for_a_lock() && tasks[1].stack.len() == 2);
        assert_eq!((d.records, d.errors), (3, 1));
        let e = d.first_errors[0].to_string();
        assert!(e.contains("9/status") && e.contains("no PPid: line"), "{e}");
    }

    #[test]
    fn sos_ps_output_is_a_process_table() {
        let text = "F S   UID   PID  PPID  PGID   SID CLS PRI ADDR    SZ WCHAN                                 STARTED TT           TIME CMD\n\
                    1 S     0     2     0     0     0  TS  19    -     0 kthreadd             Wed Nov 25 16:51:46 2026 ?        00:00:00 [kthreadd]\n\
                    0 S     0   249   162     0     0  TS  19    -   588 do_wait              Wed Nov 25 17:08:10 2026 ?        00:00:00 /usr/bin/flock -x /gfs/shared/A sh -c sleep 4\n\
                    0 D     0   254   252     0     0  TS  19    -   588 gfs2_glock_wait      Wed Nov 25 17:08:14 2026 ?        00:00:00 flock -x /gfs/shared/B true\n\
                    0 R     0   300   162     0     0  TS  19    -   588 -                    Wed Nov 25 17:08:14 2026 ?        00:00:00 ps\n";
        let (tasks, d) = read(text.as_bytes(), "ps");
        assert!(d.is_clean(), "{:?}", d.first_errors);
        let t: Vec<(i64, i64, char, &str, &str, u64)> = tasks
            .iter()
            .map(|t| {
                (
                    t.tgid,
                    t.ppid,
                    t.state,
                    t.wchan.as_str(),
                    t.comm.as_str(),
                    t.line,
                )
            })
            .collect();
        assert_eq!(
            t,
            [
                (2, 0, 'S', "kthreadd", "kthreadd", 2),
                (249, 162, 'S', "do_wait", "flock", 3),
                (254, 252, 'D', "gfs2_glock_wait", "flock", 4),
                (300, 162, 'R', "", "ps", 5),
            ]
        );
        let (_, d) = read(&b"F S UID PID WCHAN\n0 S 0\n"[..], "ps");
        assert_eq!(d.errors, 1);
    }

    #[test]
    fn round_trip_with_stacks_and_odd_comms() {
        let tasks = vec![
            Task {
                tid: 866,
                tgid: 866,
                ppid: 1,
                pgid: 866,
                sid: 866,
                state: 'S',
                wchan: "do_wait".into(),
                comm: "flock".into(),
                ..Task::default()
            },
            Task {
                tid: 870,
                tgid: 870,
                ppid: 866,
                pgid: 866,
                sid: 866,
                state: 'D',
                wchan: "gfs2_glock_wait".into(),
                comm: "a\tb\\c\nd\x01".into(),
                stack: vec!["[<0>] gfs2_glock_wait+0x3d/0x90 [gfs2]".into()],
                ..Task::default()
            },
        ];
        let mut buf = Vec::new();
        write(&mut buf, &tasks).unwrap();
        let (back, d) = read(&buf[..], "procs.0");
        assert!(d.is_clean(), "{d:?}");
        assert_eq!(back.len(), 2);
        assert_eq!(back[1].comm, tasks[1].comm);
        assert_eq!(back[1].stack, tasks[1].stack);
        assert_eq!((back[0].line, back[1].line), (2, 3));
        let t = Table::new(back);
        assert_eq!(t.ancestors(870), vec![866]);
        assert!(t.ancestors(1).is_empty());
    }

    #[test]
    fn bad_lines_are_reported_and_the_rest_kept() {
        let text =
            "\tframe first\n1\t1\t0\t1\t1\tS\t0\tinit\nnope\n2\t2\t0\t0\t0\tS\t0\tkthreadd\n";
        let (v, d) = read(text.as_bytes(), "procs.1");
        assert_eq!(v.len(), 2);
        let lines: Vec<u64> = d.first_errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [1, 3]);
    }

    #[test]
    fn proc_locks_and_gfs2_mounts() {
        let text = "1: FLOCK  ADVISORY  WRITE 866 fd:10:132 0 EOF\n\
                    1: -> FLOCK  ADVISORY  WRITE 901 fd:10:132 0 EOF\n\
                    2: POSIX  ADVISORY  READ 400 00:1a:7 0 EOF\n\
                    garbage\n";
        let (v, d) = read_locks(text.as_bytes(), "locks.0");
        assert_eq!(v.len(), 3);
        assert_eq!(d.errors, 1);
        assert_eq!(
            (v[0].pid, v[0].dev, v[0].ino, v[0].blocked),
            (866, (0xfd, 0x10), 132, false)
        );
        assert!(v[1].blocked);
        let mi = "22 1 253:16 / /gfs rw,relatime shared:1 - gfs2 /dev/vda rw,locktable=lab:gfs\n\
                  23 1 0:21 / /proc rw - proc proc rw\n";
        assert_eq!(gfs2_devices(mi), [(253, 16)]);
    }
}
