//! The DLM debugfs lock dump of a GFS2 lockspace (`<debugfs>/dlm/FSNAME_locks`):
//!
//! ```text
//! id nodeid remid pid xid exflags flags sts grmode rqmode time_ms r_nodeid r_len r_name
//! 42d 0 0 866 0 0 0 2 5 -1 12826031 0 24 "       6           60af5"
//! ```
//! Ids and flags are hex, the rest decimal. The column headed `time_ms` is in fact
//! microseconds since the lock entered its current queue (`print_format2_lock` in
//! fs/dlm/debug_fs.c computes `ktime_to_us(ktime_get() - lkb_timestamp)`; on the real
//! captures its values match the nodes' uptime in µs, not in ms). A lock whose flags have `0x10000`
//! (DLM_IFL_MSTCPY) is the master node's copy of another node's lock: `nodeid` is the
//! owner's node id and `pid` the owner's process there. Otherwise the lock is this node's
//! own (then `nodeid` is the master's id, 0 when this node masters the resource).
//!
//! [`read`] also reads the same locks as `dlm_tool lockdebug -svw LOCKSPACE` prints them
//! (what sos reports and gfs2_lockcapture keep), recognised by content: see [`lockdebug`].

use std::io::Read;

use crate::diagnostics::Diagnostics;
use crate::grammar::{self, whole};
use crate::id::GlockId;
use crate::lines::{parse_every_line, Parsed};
use crate::mode::DlmMode;

/// DLM_IFL_MSTCPY.
pub const MASTER_COPY: u64 = 0x10000;

/// A DLM lock's status (`sts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockStatus {
    /// In the wait queue.
    Waiting,
    /// Granted.
    Granted,
    /// In the convert queue (granted, asking for another mode).
    Converting,
    /// A status value the dump format does not name.
    Other(i64),
}

impl LockStatus {
    fn from(n: i64) -> LockStatus {
        match n {
            1 => LockStatus::Waiting,
            2 => LockStatus::Granted,
            3 => LockStatus::Converting,
            n => LockStatus::Other(n),
        }
    }

    /// The name frames and reports use (`waiting`, `granted`, `converting`, `statusN`).
    pub fn name(self) -> String {
        match self {
            LockStatus::Waiting => "waiting".into(),
            LockStatus::Granted => "granted".into(),
            LockStatus::Converting => "converting".into(),
            LockStatus::Other(n) => format!("status{n}"),
        }
    }

    /// Waiting for a grant or a conversion.
    pub fn is_waiting(self) -> bool {
        matches!(self, LockStatus::Waiting | LockStatus::Converting)
    }
}

/// One lock of the dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DlmLock {
    /// The lock id (`lkb_id`).
    pub id: u64,
    /// The node id the dump prints: the owner's, for a master copy.
    pub nodeid: u64,
    /// The lock's id on the other node (`remid`).
    pub remid: u64,
    /// The process that made the request (`ownpid`).
    pub pid: u64,
    /// `DLM_LKF_*` flags the request was made with.
    pub exflags: u64,
    /// `DLM_IFL_*` internal flags (see [`MASTER_COPY`]).
    pub flags: u64,
    /// Its queue.
    pub status: LockStatus,
    /// Granted mode, `IV` when none.
    pub grmode: DlmMode,
    /// Requested mode, `IV` when none.
    pub rqmode: DlmMode,
    /// Microseconds since the lock entered its current queue (granted, converting or
    /// waiting): how long a waiting lock has waited. The dump's header says `time_ms`.
    pub age_us: u64,
    /// The resource's master node id (0: this node).
    pub master_nodeid: u64,
    /// The resource name, as printed (glock resources: `TYPE NUMBER` in hex, padded).
    pub resource: String,
    /// The glock the resource name stands for, when it is one.
    pub glock: Option<GlockId>,
    /// The line of the dump this lock was read from (0 when not read from a file).
    pub line: u64,
}

impl DlmLock {
    /// The master's copy of another node's lock.
    pub fn is_master_copy(&self) -> bool {
        self.flags & MASTER_COPY != 0
    }

    /// The resource's master node, None when the node whose dump this is masters it.
    pub fn master(&self) -> Option<u64> {
        (self.master_nodeid != 0).then_some(self.master_nodeid)
    }

    /// The granted mode, None for `IV` (nothing granted).
    pub fn granted(&self) -> Option<DlmMode> {
        (self.grmode != DlmMode::IV).then_some(self.grmode)
    }

    /// The requested mode, None for `IV` (nothing requested).
    pub fn requested(&self) -> Option<DlmMode> {
        (self.rqmode != DlmMode::IV).then_some(self.rqmode)
    }

    /// The node id that owns the lock, given this node's own id when known: the owner's
    /// for a master copy, else `local`.
    pub fn owner_nodeid(&self, local: Option<u64>) -> Option<u64> {
        if self.is_master_copy() {
            Some(self.nodeid)
        } else {
            local
        }
    }
}

/// A DLM lock and the node that owns it: what a dump says of a lock once the id of the node
/// that dumped it is known. It derefs to the lock's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedLock {
    /// The node that owns the lock: for a master copy the dump's `nodeid`; for the dumping
    /// node's own lock, that node (None when its id is unknown). The lock's `pid` is the
    /// owning process on that node (for GFS2, whichever process last asked the DLM for the
    /// lock: a hint, not the holder).
    pub owner: Option<u64>,
    /// The lock.
    pub lock: DlmLock,
}

impl OwnedLock {
    /// `lock`, read from the dump of the node whose id is `local` (when known).
    pub fn new(lock: DlmLock, local: Option<u64>) -> OwnedLock {
        OwnedLock {
            owner: lock.owner_nodeid(local),
            lock,
        }
    }
}

impl std::ops::Deref for OwnedLock {
    type Target = DlmLock;

    fn deref(&self) -> &DlmLock {
        &self.lock
    }
}

/// Parses one lock line.
pub fn parse_line(line: &[u8]) -> Result<DlmLock, String> {
    let (f, name) = crate::grammar::dlm_lock_line(line)?;
    if f.len() != 13 {
        return Err(format!(
            "expected 13 fields before the name, found {}",
            f.len()
        ));
    }
    let hex =
        |i: usize| whole(grammar::hex, f[i]).ok_or_else(|| format!("bad hex field {}", i + 1));
    let dec =
        |i: usize| whole(grammar::dec, f[i]).ok_or_else(|| format!("bad number field {}", i + 1));
    let sdec =
        |i: usize| whole(grammar::sdec, f[i]).ok_or_else(|| format!("bad number field {}", i + 1));
    let mode = |i: usize| {
        DlmMode::from_number(sdec(i)?).ok_or_else(|| format!("bad lock mode in field {}", i + 1))
    };
    // Shown as it is read: quoted where it is not plain (another lockspace's names).
    let resource = crate::quote::plain(name).into_owned();
    Ok(DlmLock {
        id: hex(0)?,
        nodeid: dec(1)?,
        remid: hex(2)?,
        pid: dec(3)?,
        exflags: hex(5)?,
        flags: hex(6)?,
        status: LockStatus::from(sdec(7)?),
        grmode: mode(8)?,
        rqmode: mode(9)?,
        age_us: dec(10)?,
        master_nodeid: dec(11)?,
        glock: GlockId::parse_dlm_resource(&resource),
        resource,
        line: 0,
    })
}

/// Reads a whole lock dump, in the debugfs layout or as `dlm_tool lockdebug -svw` prints
/// it (whichever its first line shows); headers are skipped, bad lines reported.
pub fn read<R: Read>(rdr: R, source: &str) -> (Vec<DlmLock>, Diagnostics) {
    let mut layout: Option<lockdebug::Reader> = None;
    let mut table = false;
    // Every line, blank ones too: in lockdebug text a blank line can end a line that one of
    // dlm_tool's complaints cut ([`lockdebug::Reader`]).
    let (records, d) = parse_every_line(rdr, source, |n, line| {
        let blank = line.iter().all(u8::is_ascii_whitespace);
        if !table && layout.is_none() {
            if blank {
                return Parsed::Ignored;
            }
            if lockdebug::starts(line) {
                layout = Some(lockdebug::Reader::default());
            } else {
                table = true;
            }
        }
        if let Some(r) = layout.as_mut() {
            return r.line(n, line);
        }
        if blank || line.starts_with(b"id ") {
            return Parsed::Ignored;
        }
        match parse_line(line) {
            Ok(l) => Parsed::Record((DlmLock { line: n, ..l }, None)),
            Err(m) => Parsed::Bad(m),
        }
    });
    (lockdebug::with_ages(records), d)
}

/// `dlm_tool lockdebug -svw LOCKSPACE` (dlm_tool/main.c, `print_rsb` and `print_lkb`):
/// a resource, its master, then its locks by queue:
///
/// ```text
/// Resource len 24  "       6           4101c"
/// Master           flags 000000c8 first_lkid 0 root 0 recover 0 locks 0
/// Granted
/// 00000037 EX                                    time 0000052607644773 flags 00000000 00000000 bast 5 55172451104 pid 250
/// Waiting
/// 0000003d -- (EX) Remote:   2 0000001f          time 0000055172220472 flags 00000000 00010000 bast -1 0 pid 256
/// ```
///
/// `Master:N` names the master node (`Master` alone: this node); on a lock line `Remote: N
/// REMID` is another node's lock (this node masters it: a master copy) and `Master: N
/// REMID` this node's lock mastered on node N. `time` is the lock's timestamp on the node's
/// monotonic clock, in ns; the text has no "now", so a lock's age is known only as a lower
/// bound: how much older it is than the newest lock of the dump (0 for that one). LVB rows
/// and the summary (`-s`) are skipped, and so are dlm_tool's complaints about the debugfs
/// header lines (`print_rsb error rv 2 line "…` up to a line `"`, on stderr): captured with
/// the output, as sos does, a complaint can land in the middle of a line, whose two parts
/// are joined again, or at its end, before the newline that comes after the complaint as a
/// blank line.
pub mod lockdebug {
    use super::{DlmLock, LockStatus, MASTER_COPY};
    use crate::lines::Parsed;
    use crate::mode::DlmMode;
    use crate::GlockId;

    /// Whether a dump's first line is lockdebug's.
    pub fn starts(line: &[u8]) -> bool {
        line.starts_with(b"Resource len")
            || line.starts_with(b"print_rsb")
            || line.starts_with(b"print_lkb")
    }

    /// The resource being read.
    #[derive(Debug, Default)]
    struct Resource {
        name: String,
        glock: Option<GlockId>,
        /// 0: this node masters it.
        master: u64,
    }

    /// Reads lockdebug lines in order (a lock belongs to the resource and queue above it).
    #[derive(Debug, Default)]
    pub struct Reader {
        resource: Option<Resource>,
        status: Option<LockStatus>,
        /// In an LVB's hex rows.
        lvb: bool,
        /// Inside one of dlm_tool's complaints (until its closing `"` line).
        complaint: bool,
        /// The start of a line a complaint cut, and its line number.
        cut: Option<(u64, String)>,
    }

    /// Where one of dlm_tool's complaints (`print_rsb error rv 2 line "…`) starts in a line.
    fn complaint_at(line: &str) -> Option<usize> {
        let at = line.find("print_")?;
        line[at..]
            .split_whitespace()
            .nth(1)
            .is_some_and(|w| w == "error")
            .then_some(at)
    }

    /// A lock and its timestamp (ns), before ages are known.
    pub type Stamped = (DlmLock, Option<u64>);

    impl Reader {
        /// One line: a lock, or a line that only sets what the following ones belong to.
        pub fn line(&mut self, n: u64, line: &[u8]) -> Parsed<Stamped> {
            let text = String::from_utf8_lossy(line);
            if self.complaint {
                self.complaint = text.trim() != "\"";
                return Parsed::Ignored;
            }
            if let Some(at) = complaint_at(&text) {
                self.complaint = true;
                if !text[..at].trim().is_empty() {
                    self.cut = Some((n, text[..at].to_string()));
                }
                return Parsed::Ignored;
            }
            let (n, joined) = match self.cut.take() {
                Some((start, head)) => (start, format!("{head}{text}")),
                None => (n, text.into_owned()),
            };
            let t = joined.trim();
            if let Some(rest) = t.strip_prefix("Resource len") {
                self.lvb = false;
                self.status = None;
                return match resource_name(rest) {
                    Some(name) => {
                        self.resource = Some(Resource {
                            glock: GlockId::parse_dlm_resource(&name),
                            name,
                            master: 0,
                        });
                        Parsed::Ignored
                    }
                    None => Parsed::Bad("a Resource line without a name".into()),
                };
            }
            let first = t.split_whitespace().next().unwrap_or("");
            match first {
                "Granted" | "Convert" | "Waiting" | "Lookup" if t == first => {
                    self.lvb = false;
                    self.status = Some(match first {
                        "Granted" => LockStatus::Granted,
                        "Convert" => LockStatus::Converting,
                        _ => LockStatus::Waiting,
                    });
                    return Parsed::Ignored;
                }
                "LVB" => {
                    self.lvb = true;
                    return Parsed::Ignored;
                }
                _ => {}
            }
            if let Some(m) = first.strip_prefix("Master") {
                if let Some(r) = self.resource.as_mut() {
                    r.master = m
                        .strip_prefix(':')
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0);
                }
                return Parsed::Ignored;
            }
            let lock_like = first.len() == 8 && first.bytes().all(|b| b.is_ascii_hexdigit());
            if !lock_like {
                // LVB rows, the -s summary, dlm_tool's complaints, blank lines.
                return Parsed::Ignored;
            }
            // A lock line before its resource or queue is named, never dropped in silence.
            self.lvb = false;
            match self.lock(t, n) {
                Ok(l) => Parsed::Record(l),
                Err(e) => Parsed::Bad(e),
            }
        }

        /// A lock line of the current resource and queue.
        fn lock(&self, t: &str, n: u64) -> Result<Stamped, String> {
            let r = self
                .resource
                .as_ref()
                .ok_or("a lock line before any Resource line")?;
            let status = self.status.ok_or("a lock line before its queue")?;
            let mut tok = t.split_whitespace().peekable();
            let id =
                u64::from_str_radix(tok.next().unwrap_or(""), 16).map_err(|_| "bad lock id")?;
            let gr = tok.next().ok_or("no granted mode")?;
            let grmode = match gr {
                "--" | "XX" => DlmMode::IV,
                m => {
                    DlmMode::parse(m.as_bytes()).ok_or_else(|| format!("bad granted mode {m:?}"))?
                }
            };
            let mut rqmode = DlmMode::IV;
            if let Some(rq) = tok.peek().and_then(|s| s.strip_prefix('(')) {
                let rq = rq.strip_suffix(')').ok_or("bad requested mode")?;
                rqmode = DlmMode::parse(rq.as_bytes()).unwrap_or(DlmMode::IV);
                tok.next();
            }
            let (mut nodeid, mut remid, mut remote) = (0u64, 0u64, false);
            if let Some(&w) = tok.peek() {
                if w == "Remote:" || w == "Master:" {
                    remote = w == "Remote:";
                    tok.next();
                    nodeid = tok
                        .next()
                        .and_then(|v| v.parse().ok())
                        .ok_or("bad node id")?;
                    remid = tok
                        .next()
                        .and_then(|v| u64::from_str_radix(v, 16).ok())
                        .ok_or("bad remote id")?;
                }
            }
            let (mut ts, mut exflags, mut flags, mut pid) = (None, 0, None, 0);
            while let Some(w) = tok.next() {
                match w {
                    "time" => ts = tok.next().and_then(|v| v.parse().ok()),
                    "flags" => {
                        exflags = hex(tok.next())?;
                        flags = Some(hex(tok.next())?);
                    }
                    "pid" => pid = tok.next().and_then(|v| v.parse().ok()).ok_or("bad pid")?,
                    _ => {}
                }
            }
            // Without -v there are no flags: a lock of another node here is a master copy.
            let flags = flags.unwrap_or(if remote && r.master == 0 {
                MASTER_COPY
            } else {
                0
            });
            Ok((
                DlmLock {
                    id,
                    nodeid,
                    remid,
                    pid,
                    exflags,
                    flags,
                    status,
                    grmode,
                    rqmode,
                    age_us: 0,
                    master_nodeid: r.master,
                    resource: r.name.clone(),
                    glock: r.glock,
                    line: n,
                },
                ts,
            ))
        }
    }

    fn hex(v: Option<&str>) -> Result<u64, String> {
        v.and_then(|v| u64::from_str_radix(v, 16).ok())
            .ok_or_else(|| "bad flags".to_string())
    }

    /// The name of `len NN  "NAME"` (quoted, spaces kept) or `len NN hex HEX`.
    fn resource_name(rest: &str) -> Option<String> {
        let rest = rest.trim_start();
        let rest = rest
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .trim_start();
        if let Some(q) = rest.strip_prefix('"') {
            let name = q.strip_suffix('"').unwrap_or(q);
            return Some(crate::quote::plain(name.as_bytes()).into_owned());
        }
        // Shown as it is read, like the quoted form: a dump from elsewhere may hold any bytes.
        rest.strip_prefix("hex ")
            .map(|h| crate::quote::plain(h.trim().as_bytes()).into_owned())
    }

    /// The locks with their ages: for lockdebug's, how much older each is than the newest
    /// (a lower bound); the debugfs layout's ages are kept.
    pub fn with_ages(records: Vec<Stamped>) -> Vec<DlmLock> {
        let newest = records.iter().filter_map(|(_, ts)| *ts).max();
        records
            .into_iter()
            .map(|(mut l, ts)| {
                if let (Some(ts), Some(newest)) = (ts, newest) {
                    l.age_us = newest.saturating_sub(ts) / 1000;
                }
                l
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same moment in both layouts (`real/support-6.12`): every lock of the debugfs dump
    /// is the lockdebug lock of the same id, with the same owner, modes, queue, master and
    /// resource; lockdebug's ages are lower bounds of the dump's.
    #[test]
    fn lockdebug_is_the_debugfs_dump_in_another_layout() {
        for node in ["n1", "n2"] {
            let dir = testdata_dir().join(format!("real/support-6.12/{node}"));
            let open = |f: &str| std::fs::File::open(dir.join(f)).unwrap();
            let (table, d1) = read(open("dlm_gfs_locks.txt"), "table");
            let (debug, d2) = read(open("lockdebug-svw.txt"), "lockdebug");
            assert_eq!(
                (d1.errors, d2.errors),
                (0, 0),
                "{node}: {:?}",
                d2.first_errors
            );
            assert!(table.len() > 25, "{node}");
            assert_eq!(table.len(), debug.len(), "{node}");
            for t in &table {
                let l = debug
                    .iter()
                    .find(|l| l.id == t.id)
                    .unwrap_or_else(|| panic!("{node}: no lock {:x}", t.id));
                assert_eq!(
                    (l.nodeid, l.remid, l.pid, l.exflags, l.flags, l.status),
                    (t.nodeid, t.remid, t.pid, t.exflags, t.flags, t.status),
                    "{node} {:x}",
                    t.id
                );
                assert_eq!(
                    (l.grmode, l.rqmode, l.master_nodeid, &l.resource, l.glock),
                    (t.grmode, t.rqmode, t.master_nodeid, &t.resource, t.glock),
                    "{node} {:x}",
                    t.id
                );
                assert_eq!(l.is_master_copy(), t.is_master_copy());
            }
            // n2's flock request waits in node 1's queue, pid 256; on n1 its master copy.
            let w: Vec<&DlmLock> = debug.iter().filter(|l| l.status.is_waiting()).collect();
            assert_eq!(w.len(), 1, "{node}");
            assert_eq!(
                (w[0].glock, w[0].pid, w[0].rqmode),
                (Some(GlockId::new(6, 0x4101c)), 256, DlmMode::EX)
            );
            assert_eq!(w[0].is_master_copy(), node == "n1");
            let newest = debug.iter().map(|l| l.age_us).min();
            assert_eq!(newest, Some(0));
        }
    }

    fn testdata_dir() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/fixtures")
    }

    #[test]
    fn a_resource_named_in_hex_is_quoted_as_the_quoted_form_is() {
        let text = "Resource len 4 hex 0a0b\x1b[2J\n\
                    Master:1         flags 000000c8 first_lkid 0 root 0 recover 0 locks 0\n\
                    Granted\n\
                    0000001e EX Master:   1 0000003c          time 0000051208178134 flags 00000008 00000000 bast -1 0 pid 254\n";
        let (v, d) = read(text.as_bytes(), "x");
        assert_eq!((v.len(), d.errors), (1, 0), "{d:?}");
        assert_eq!(v[0].resource, "0a0b\\x1b[2J");
        let (v, _) = read(text.replace("\x1b[2J", "").as_bytes(), "x");
        assert_eq!(v[0].resource, "0a0b", "a plain hex name is kept as it is");
    }

    #[test]
    fn lockdebug_lines_that_are_not_locks() {
        let text = "print_rsb error rv 2 line \"rsb ptr nodeid len\n\"\n\n\
                    Resource len 24  \"       2           4101c\"\n\
                    Master:1         flags 000000c8 first_lkid 0 root 0 recover 0 locks 0\n\
                    LVB len 32 seq 1\n\
                    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00\n\
                    Convert\n\
                    0000001e PR (EX) Master:   1 0000003c          time 0000051208178134 flags 00000008 00000000 bast -1 0 pid 254\n\
                    00000020 ZZ\n\
                    \n\
                    rsb\n  active        34\n";
        let (v, d) = read(text.as_bytes(), "x");
        assert_eq!(v.len(), 1);
        assert_eq!(
            (
                v[0].status,
                v[0].grmode,
                v[0].rqmode,
                v[0].master(),
                v[0].line
            ),
            (LockStatus::Converting, DlmMode::PR, DlmMode::EX, Some(1), 9)
        );
        assert_eq!(d.errors, 1, "the bad mode is named");
        assert!(d.first_errors[0]
            .to_string()
            .contains("bad granted mode \"ZZ\""));
    }

    /// dlm_tool's complaints go to stderr, unbuffered, while its stdout is flushed in
    /// blocks: captured together (as sos does), a complaint lands where a block ended, in
    /// the middle of a line or at its end, before its newline. The blank line after the
    /// complaint's closing `"` is that newline: what came before it is a line of its own
    /// (sos 4.0's `dlm_locks_gfs` in the lab, exp116: `Grantedprint_rsb_toss error …`). A
    /// lock line that no queue's header comes before is an error, named by its line.
    #[test]
    fn a_complaint_cuts_a_line_where_stdout_was_flushed() {
        let complaint = "print_rsb_toss error rv 2 line \"rsb ptr nodeid len str|hex name\n\"\n";
        let lock = |id: u32| {
            format!("{id:08x} PR      Remote:   2 00000005          time 0000026582774808 flags 00000000 00010000 bast -1 0 pid 232")
        };
        let resource = "Resource len 24  \"       4               0\"\n\
                        Master           flags 000000c8 first_lkid 0 root 0 recover 0 locks 0\n";
        // Each text, and the line each lock is cited by (where its line starts).
        let cases = [
            // After a queue's header, before its newline.
            (
                format!("{resource}Granted{complaint}\n{}\n{}\n", lock(1), lock(2)),
                6,
            ),
            // In the middle of a lock line.
            (
                format!(
                    "{resource}Granted\n{}{complaint}{}\n{}\n",
                    &lock(1)[..20],
                    &lock(1)[20..],
                    lock(2)
                ),
                4,
            ),
            // After a whole lock line, before its newline.
            (
                format!("{resource}Granted\n{}{complaint}\n{}\n", lock(1), lock(2)),
                4,
            ),
        ];
        for (text, first_line) in &cases {
            let (v, d) = read(text.as_bytes(), "x");
            let got: Vec<(u64, LockStatus, u64)> =
                v.iter().map(|l| (l.id, l.status, l.line)).collect();
            assert_eq!(
                got,
                [
                    (1, LockStatus::Granted, *first_line),
                    (2, LockStatus::Granted, 7)
                ],
                "{text}"
            );
            assert_eq!(d.errors, 0, "{text}");
        }
        // A lock line that no queue's header comes before is named, not dropped.
        let (v, d) = read(format!("{resource}{}\n", lock(1)).as_bytes(), "x");
        assert!(v.is_empty());
        assert_eq!(d.errors, 1);
        let e = d.first_errors[0].to_string();
        assert!(e.starts_with("x:3: a lock line before its queue"), "{e}");
    }

    #[test]
    fn master_copy_and_own_locks() {
        let w = parse_line(
            br#"430 2 419 860 0 0 10000 1 -1 5 9562575 0 24 "       6           60af5""#,
        )
        .unwrap();
        assert!(w.is_master_copy());
        assert_eq!(
            (w.owner_nodeid(Some(1)), w.pid, w.status, w.rqmode),
            (Some(2), 860, LockStatus::Waiting, DlmMode::EX)
        );
        assert_eq!(w.glock, Some(GlockId::new(6, 0x60af5)));
        let g = parse_line(br#"42d 0 0 866 0 0 0 2 5 -1 12826031 0 24 "       6           60af5""#)
            .unwrap();
        assert_eq!(
            (g.owner_nodeid(Some(1)), g.grmode, g.id),
            (Some(1), DlmMode::EX, 0x42d)
        );
        assert_eq!((g.rqmode, g.age_us), (DlmMode::IV, 12_826_031));
        assert!(parse_line(b"1 2 3").is_err());
        let (v, d) = read(&b"id nodeid remid pid xid exflags flags sts grmode rqmode time_ms r_nodeid r_len r_name\nbad\n"[..], "x");
        assert!(v.is_empty());
        assert_eq!((d.errors, d.ignored), (1, 1));
        let (v, _) = read(&b"id nodeid remid pid xid exflags flags sts grmode rqmode time_ms r_nodeid r_len r_name\n\n42d 0 0 866 0 0 0 2 5 -1 12826031 0 24 \"       6           60af5\"\n"[..], "x");
        assert_eq!(v[0].line, 3);
        // Another lockspace's resource may be named with any bytes: they are quoted.
        let g = parse_line(b"42d 0 0 866 0 0 0 2 5 -1 12826031 0 5 \"a\x1b[2J\"").unwrap();
        assert_eq!(g.resource, "a\\x1b[2J");
    }
}
