//! The state around the locks: whether the filesystem is withdrawn or its locking blocked
//! for recovery (sysfs), what the kernel logged (withdrawals, DLM and journal recovery,
//! members leaving) and whether the cluster is quorate (corosync, dlm_controld). These come
//! before any glock: a glock waits forever on a withdrawn filesystem or while the DLM
//! recovers, and blaming it would send people the wrong way.
//!
//! Files `glk capture` writes:
//! - `gfs2_sysfs.N`: `KEY VALUE` lines from `/sys/fs/gfs2/TABLE/` (`withdraw`, `frozen`,
//!   `lock_module/block`, `lock_module/recover_status`, `lock_module/jid`, ...), then
//!   `mount PATH` and the mount's `statvfs` (`statfs_bsize`, `statfs_blocks`,
//!   `statfs_bfree`, `statfs_files`, `statfs_ffree`);
//! - `kernel.log`: the kernel's log buffer (`dmesg` text, with or without `<N>` priority
//!   prefixes);
//! - `cluster.txt`: the output of `corosync-quorumtool -s` and `dlm_tool ls`, each under a
//!   `## COMMAND` line, where those tools are installed.

use std::io::{self, BufRead};
use std::path::Path;

/// One node's sysfs state of one filesystem.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sysfs {
    /// `(key, value, line)` as written.
    pub values: Vec<(String, String, u64)>,
}

impl Sysfs {
    /// Reads a `gfs2_sysfs.N` file, or a copy of one sysfs attribute file (sos copies
    /// `/sys/fs/gfs2/TABLE/withdraw`): one line of one value, read as `NAME VALUE`.
    pub fn read(path: &Path) -> io::Result<Sysfs> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        let attribute = path.file_name().and_then(|n| n.to_str()).filter(|_| {
            let value = text.trim_end_matches('\n');
            !value.is_empty() && !value.contains([' ', '\n'])
        });
        Ok(match attribute {
            Some(name) => Sysfs::parse(&format!("{name} {text}")),
            None => Sysfs::parse(&text),
        })
    }

    /// Parses `KEY VALUE` lines (other lines are skipped).
    pub fn parse(text: &str) -> Sysfs {
        let values = text
            .lines()
            .zip(1..)
            .filter_map(|(l, n)| {
                let (k, v) = l.trim().split_once(' ')?;
                Some((k.to_string(), v.trim().to_string(), n))
            })
            .collect();
        Sysfs { values }
    }

    /// A value and its line.
    pub fn get(&self, key: &str) -> Option<(&str, u64)> {
        self.values
            .iter()
            .find(|(k, _, _)| k == key)
            .map(|(_, v, n)| (v.as_str(), *n))
    }

    /// `withdraw` is 1: the filesystem has withdrawn (its line).
    pub fn withdrawn(&self) -> Option<u64> {
        self.get("withdraw")
            .filter(|(v, _)| *v == "1")
            .map(|(_, n)| n)
    }

    /// Where the filesystem was mounted.
    pub fn mount(&self) -> Option<&str> {
        self.get("mount").map(|(v, _)| v)
    }

    /// The fraction of blocks in use (`statfs_*`), and the line of `statfs_bfree`; none
    /// unless both counts are whole numbers and no more blocks are free than there are.
    pub fn used_fraction(&self) -> Option<(f64, u64)> {
        let num = |k| {
            self.get(k)
                .and_then(|(v, n)| Some((v.parse::<u64>().ok()?, n)))
        };
        let (blocks, _) = num("statfs_blocks")?;
        let (free, line) = num("statfs_bfree")?;
        (blocks > 0 && free <= blocks).then(|| (1.0 - free as f64 / blocks as f64, line))
    }

    /// `lock_module/block` is 1: lock requests are held while the DLM recovers (its line).
    pub fn locking_blocked(&self) -> Option<u64> {
        self.get("lock_module/block")
            .filter(|(v, _)| *v == "1")
            .map(|(_, n)| n)
    }
}

/// What a kernel log line says about the cluster's health.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogKind {
    /// The filesystem withdrew (or is withdrawing).
    Withdraw,
    /// Another node withdrew: this one checks whether its journal needs recovery
    /// (`Some node has withdrawn; checking for recovery.`), and goes on.
    OtherNodeWithdrew,
    /// A consistency error or assertion (what precedes most withdrawals).
    ConsistencyError,
    /// DLM recovery started (`dlm_recover N`).
    DlmRecoverStart,
    /// DLM recovery finished (`dlm_recover N generation G done`).
    DlmRecoverDone,
    /// GFS2 recovers another node's journal.
    JournalRecovery,
    /// A node left the lockspace (`remove member N`).
    MemberRemoved,
}

/// A kernel log line that matters.
#[derive(Debug, Clone, PartialEq)]
pub struct LogEvent {
    /// Its line in the log.
    pub line: u64,
    /// Seconds since boot, when the line has a `[ secs.usecs]` stamp.
    pub uptime_s: Option<f64>,
    /// What it says.
    pub kind: LogKind,
    /// The text after the stamp.
    pub text: String,
}

fn classify(text: &str) -> Option<LogKind> {
    let has = |s: &str| text.contains(s);
    if !(has("gfs2") || has("GFS2") || has("dlm")) {
        return None;
    }
    Some(if has("Some node has withdrawn") {
        LogKind::OtherNodeWithdrew
    } else if has("withdraw") || has("File system withdrawn") {
        LogKind::Withdraw
    } else if has("consistency error") || has("assertion") && has("failed") {
        LogKind::ConsistencyError
    } else if has("dlm_recover") && has(" done") {
        LogKind::DlmRecoverDone
    } else if has("dlm_recover ") {
        LogKind::DlmRecoverStart
    } else if has("jid=") && (has("Trying to acquire journal lock") || has("Looking at journal")) {
        LogKind::JournalRecovery
    } else if has("remove member") {
        LogKind::MemberRemoved
    } else {
        return None;
    })
}

/// The lines of a kernel log that matter, in order.
pub fn kernel_log(path: &Path) -> io::Result<Vec<LogEvent>> {
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let f = glockparse::input::open(path).map_err(named)?;
    let mut out = Vec::new();
    let mut buf = Vec::new();
    let mut r = io::BufReader::new(f);
    let mut n = 0u64;
    loop {
        buf.clear();
        if r.read_until(b'\n', &mut buf).map_err(named)? == 0 {
            break;
        }
        n += 1;
        let line = String::from_utf8_lossy(&buf);
        let line = line.trim_end();
        // `<6>[   12.345678] text` or `[   12.345678] text`.
        let rest = match line.strip_prefix('<') {
            Some(r) => r.split_once('>').map_or(line, |(_, r)| r),
            None => line,
        };
        let (uptime_s, text) = match rest.strip_prefix('[').and_then(|r| r.split_once(']')) {
            Some((t, text)) => (t.trim().parse().ok(), text.trim_start()),
            None => (None, rest),
        };
        if let Some(kind) = classify(text) {
            out.push(LogEvent {
                line: n,
                uptime_s,
                kind,
                // Shown as evidence: quoted, as any line glk did not write.
                text: glockparse::quote::plain(text.as_bytes()).into_owned(),
            });
        }
    }
    Ok(out)
}

/// A DLM recovery started and not (yet) done at the end of the log: the start's event.
pub fn recovery_in_progress(events: &[LogEvent]) -> Option<&LogEvent> {
    let start = events
        .iter()
        .rposition(|e| e.kind == LogKind::DlmRecoverStart)?;
    let done = events
        .iter()
        .rposition(|e| e.kind == LogKind::DlmRecoverDone);
    (done.is_none_or(|d| d < start)).then(|| &events[start])
}

/// The cluster's state as its tools printed it (`cluster.txt`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cluster {
    /// `Quorate: Yes/No` and its line.
    pub quorate: Option<(bool, u64)>,
    /// Lockspaces whose `dlm_tool ls` flags show recovery stopped or waiting (name,
    /// flags text, line).
    pub stopped: Vec<(String, String, u64)>,
}

impl Cluster {
    /// Parses `cluster.txt`.
    pub fn parse(text: &str) -> Cluster {
        let mut c = Cluster::default();
        let mut ls: Option<String> = None;
        for (l, n) in text.lines().zip(1u64..) {
            let t = l.trim();
            if let Some(v) = t.strip_prefix("Quorate:") {
                c.quorate = Some((v.trim().eq_ignore_ascii_case("yes"), n));
            } else if let Some(name) = t.strip_prefix("name ").or_else(|| t.strip_prefix("ls ")) {
                ls = Some(name.trim().to_string());
            } else if t.starts_with("flags ") && (t.contains("kern_stop") || t.contains("wait")) {
                c.stopped
                    .push((ls.clone().unwrap_or_default(), t.to_string(), n));
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysfs_state() {
        let s = Sysfs::parse("withdraw 0\nfrozen 0\nlock_module/block 1\nlock_module/jid 1\n");
        assert_eq!(s.withdrawn(), None);
        assert_eq!(s.locking_blocked(), Some(3));
        assert_eq!(Sysfs::parse("withdraw 1").withdrawn(), Some(1));
        let f =
            Sysfs::parse("mount /gfs\nstatfs_bsize 4096\nstatfs_blocks 1000\nstatfs_bfree 50\n");
        assert_eq!(f.mount(), Some("/gfs"));
        assert_eq!(f.used_fraction(), Some((0.95, 4)));
        // Damaged counts say nothing (`-inf` and `1e9` are numbers to f64, not to sysfs).
        for damaged in ["-inf", "1e9", "1001", "5O"] {
            let t = format!("statfs_blocks 1000\nstatfs_bfree {damaged}\n");
            assert_eq!(Sysfs::parse(&t).used_fraction(), None, "{damaged}");
        }
    }

    /// sos copies sysfs's `withdraw` itself: one value, named by the file.
    #[test]
    fn one_attribute_file_is_named_by_its_file() {
        let (_dir, p) = testdata::scratch_file("withdraw");
        for (text, withdrawn) in [("1\n", Some(1)), ("0\n", None), ("1", Some(1))] {
            std::fs::write(&p, text).unwrap();
            assert_eq!(Sysfs::read(&p).unwrap().withdrawn(), withdrawn, "{text:?}");
        }
        let (_dir, g) = testdata::scratch_file("gfs2_sysfs.0");
        for text in ["withdraw 1\nfrozen 0\n", "withdraw 1\n", "1\n1\n", ""] {
            std::fs::write(&g, text).unwrap();
            let want = text.starts_with("withdraw").then_some(1);
            assert_eq!(Sysfs::read(&g).unwrap().withdrawn(), want, "{text:?}");
        }
    }

    #[test]
    fn kernel_log_lines() {
        let (_dir, p) = testdata::scratch_file("kernel.log");
        std::fs::write(
            &p,
            "<6>[   12.500000] dlm: gfs: dlm_recover 1\n\
             [   12.600000] dlm: gfs: dlm_recover 1 generation 1 done: 100 ms\n\
             [   20.000000] random line\n\
             <4>[   30.000000] dlm: gfs: remove member 2\n\
             [   30.100000] dlm: gfs: dlm_recover 3\n\
             [   31.000000] gfs2: fsid=lab:gfs.0: jid=1: Trying to acquire journal lock...\n\
             [   35.000000] gfs2: fsid=lab:gfs.0: Some node has withdrawn; checking for recovery.\n\
             [   40.000000] gfs2: fsid=lab:gfs.0: fatal: filesystem consistency error\n\
             [   40.000001] gfs2: fsid=lab:gfs.0: about to withdraw this file system\n",
        )
        .unwrap();
        let ev = kernel_log(&p).unwrap();
        let kinds: Vec<LogKind> = ev.iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            [
                LogKind::DlmRecoverStart,
                LogKind::DlmRecoverDone,
                LogKind::MemberRemoved,
                LogKind::DlmRecoverStart,
                LogKind::JournalRecovery,
                LogKind::OtherNodeWithdrew,
                LogKind::ConsistencyError,
                LogKind::Withdraw
            ]
        );
        assert_eq!(ev[2].line, 4);
        assert_eq!(ev[2].uptime_s, Some(30.0));
        // A line's text is shown as evidence: what is not plain is quoted.
        std::fs::write(&p, "[ 1.0] dlm: g\x1b[2Js: dlm_recover 1\n").unwrap();
        assert_eq!(
            kernel_log(&p).unwrap()[0].text,
            "dlm: g\\x1b[2Js: dlm_recover 1"
        );
        let r = recovery_in_progress(&ev).unwrap();
        assert_eq!(r.line, 5);
        assert!(recovery_in_progress(&ev[..2]).is_none());
    }

    #[test]
    fn cluster_tools() {
        let c = Cluster::parse(
            "## corosync-quorumtool -s\nQuorum information\nQuorate:          No\n\
             ## dlm_tool ls\ndlm lockspaces\nname          gfs\nid            0x3df8322a\n\
             flags         0x00000004 kern_stop\nchange        member 1 joined 0 remove 1 failed 1 seq 2,2\n",
        );
        assert_eq!(c.quorate, Some((false, 3)));
        assert_eq!(c.stopped.len(), 1);
        assert_eq!(c.stopped[0].0, "gfs");
    }
}
