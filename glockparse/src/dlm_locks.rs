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

use std::io::Read;

use crate::diagnostics::Diagnostics;
use crate::grammar::{self, whole};
use crate::id::GlockId;
use crate::lines::{parse_records, Parsed};
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
    let resource = String::from_utf8_lossy(name).into_owned();
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

/// Reads a whole lock dump; the header line is skipped, bad lines reported.
pub fn read<R: Read>(rdr: R, source: &str) -> (Vec<DlmLock>, Diagnostics) {
    parse_records(rdr, source, |n, line| {
        if line.starts_with(b"id ") {
            return Parsed::Ignored;
        }
        match parse_line(line) {
            Ok(l) => Parsed::Record(DlmLock { line: n, ..l }),
            Err(m) => Parsed::Bad(m),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
