//! The typed glock record: one `G:` line with its holders and attached object.

use std::sync::Arc;

use crate::flags::{GlockFlags, HolderFlags};
use crate::id::{GlockId, GlockType};
use crate::state::LockState;

/// A `key:value` token the parser does not know, kept as printed (newer kernels append
/// fields at the end of lines). A token without `:` has an empty value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The key.
    pub key: Box<str>,
    /// The value.
    pub value: Box<str>,
}

/// One glock record.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Glock {
    /// The glock.
    pub id: GlockId,
    /// `s:` the DLM-granted state.
    pub state: LockState,
    /// `t:` the target of the current or last state change.
    pub target: LockState,
    /// `d:` state before the slash: the demote state requested (`EX` means none).
    pub demote_state: LockState,
    /// `d:` after the slash: microseconds since the first demote request (0 = none).
    pub demote_us: u64,
    /// `f:` its flags.
    pub flags: GlockFlags,
    /// `a:` buffers on the AIL.
    pub ail: i64,
    /// `v:` outstanding revokes.
    pub revokes: i64,
    /// `r:` reference count.
    pub refs: i64,
    /// `m:` minimum hold time in jiffies.
    pub hold_jiffies: i64,
    /// `p:` pages in the metadata address space (≈5.9+).
    pub nrpages: Option<u64>,
    /// `H:` lines in kernel order: granted holders first, then waiters.
    pub holders: Vec<Holder>,
    /// The `I:` line, for inode glocks.
    pub inode: Option<InodeInfo>,
    /// Boxed: rgrp glocks are few, and a small record is cheap to move.
    pub rgrp: Option<Box<RgrpInfo>>,
    /// Tokens of the `G:` line this parser does not know.
    pub extra: Vec<Token>,
    /// File system: the `fsid=` of the kernel-log form, or a glocktop `@` header's name.
    pub fs: Option<Arc<str>>,
    /// Line number of the `G:` line in its source (1-based).
    pub line: u64,
}

impl Glock {
    /// The glock's type.
    pub fn glock_type(&self) -> GlockType {
        self.id.glock_type()
    }

    /// Holders waiting for the glock (`W`).
    pub fn waiters(&self) -> impl Iterator<Item = &Holder> {
        self.holders.iter().filter(|h| h.is_waiting())
    }

    /// Holders that have been granted the glock (`H`).
    pub fn granted(&self) -> impl Iterator<Item = &Holder> {
        self.holders.iter().filter(|h| h.is_granted())
    }

    /// Holders waiting.
    pub fn waiter_count(&self) -> usize {
        self.waiters().count()
    }

    /// Holders granted.
    pub fn granted_count(&self) -> usize {
        self.granted().count()
    }

    /// A demote was requested (`D`), is pending (`d`) or running (`p`), or `d:` shows a
    /// demote state other than the `EX/0` sentinel.
    pub fn demote_requested(&self) -> bool {
        self.flags.demote_activity() || self.demote_us > 0
    }

    /// Resets to the empty record, keeping allocated capacity for reuse.
    /// Field by field: building a default record and moving it in costs two copies of
    /// the whole struct per record.
    pub fn clear(&mut self) {
        let Glock {
            id,
            state,
            target,
            demote_state,
            demote_us,
            flags,
            ail,
            revokes,
            refs,
            hold_jiffies,
            nrpages,
            holders,
            inode,
            rgrp,
            extra,
            fs,
            line,
        } = self;
        *id = GlockId::default();
        *state = LockState::default();
        *target = LockState::default();
        *demote_state = LockState::default();
        *demote_us = 0;
        *flags = GlockFlags::default();
        *ail = 0;
        *revokes = 0;
        *refs = 0;
        *hold_jiffies = 0;
        *nrpages = None;
        holders.clear();
        *inode = None;
        *rgrp = None;
        extra.clear();
        *fs = None;
        *line = 0;
    }
}

/// One ` H:` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// `s:` requested state.
    pub state: LockState,
    /// `f:` its flags.
    pub flags: HolderFlags,
    /// `e:` error (0, 13 for a failed try lock, or a negative errno).
    pub error: i64,
    /// `p:` owner pid; -1 (≤6.0) or 0 with comm `(none)` (6.1+) when there is none.
    pub pid: i64,
    /// Task comm, `(ended)` when the task is gone, `(none)` for GL_NOPID holders.
    pub comm: Arc<str>,
    /// Caller as the kernel printed it: `symbol+0xoff/0xsize [module]`, or with a
    /// `file.c:line` suffix on debug kernels, or a raw address.
    pub caller: Arc<str>,
    /// The line of its input this holder was read from (0 when not read from one).
    pub line: u64,
}

impl Holder {
    /// Waiting for the glock (`W` flag).
    pub fn is_waiting(&self) -> bool {
        self.flags.contains('W')
    }

    /// Granted (`H` flag).
    pub fn is_granted(&self) -> bool {
        self.flags.contains('H')
    }

    /// The caller's function name, without offset, size or module.
    pub fn caller_function(&self) -> &str {
        let first = self.caller.split(' ').next().unwrap_or("");
        first.split('+').next().unwrap_or(first)
    }

    /// Whether the line names a process ([`names_a_process`]).
    pub fn names_a_process(&self) -> bool {
        names_a_process(self.pid, &self.comm)
    }

    /// True when the pid names no live task: no process, or one that has ended (`(ended)`).
    pub fn pid_meaningless(&self) -> bool {
        !self.names_a_process() || has_ended(&self.comm)
    }
}

/// Whether a holder line's pid and comm name a process: not a GL_NOPID holder (`p:0
/// [(none)]` on 6.1+, `p:-1` before). A process that has ended since (`(ended)`) is still
/// the one named. The one rule glk's views and analyses use.
pub fn names_a_process(pid: i64, comm: &str) -> bool {
    pid > 0 && comm != "(none)"
}

/// Whether a holder line's comm says its process has ended (`(ended)`: the glocks file
/// keeps the pid of a holder whose task is gone, which flock holders are before 6.1).
pub fn has_ended(comm: &str) -> bool {
    comm == "(ended)"
}

/// One ` I:` line (inode and, on ≈5.10+, iopen glocks).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InodeInfo {
    /// `n:` before the slash: `i_no_formal_ino`.
    pub formal_ino: u64,
    /// `n:` after the slash: `i_no_addr`, the dinode block (= the glock number).
    pub addr: u64,
    /// `t:` DT_* file type.
    pub dtype: u64,
    /// `f:` in-core GIF_* flags.
    pub iflags: u64,
    /// `d:` on-disk GFS2_DIF_* flags.
    pub diskflags: u64,
    /// `s:` size in bytes.
    pub size: u64,
    /// `p:` page-cache pages (≈5.0+).
    pub nrpages: Option<u64>,
    /// Tokens of the `I:` line this parser does not know.
    pub extra: Vec<Token>,
}

impl InodeInfo {
    /// The file type as a word (`file`, `dir`, `symlink`, ...).
    pub fn file_type(&self) -> &'static str {
        match self.dtype {
            1 => "fifo",
            2 => "chardev",
            4 => "dir",
            6 => "blockdev",
            8 => "file",
            10 => "symlink",
            12 => "socket",
            _ => "unknown",
        }
    }
}

/// One ` R:` line with its optional `  L:` and `  B:` lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RgrpInfo {
    /// `n:` the rgrp header block (= the glock number).
    pub addr: u64,
    /// `f:` rd_flags (high bits in-core, low bits on-disk).
    pub flags: u64,
    /// `b:` free blocks / free blocks in the clone bitmap.
    pub free: u64,
    /// Free blocks in the clone bitmap.
    pub free_clone: u64,
    /// `i:` dinodes.
    pub dinodes: u64,
    /// `q:` blocks requested by reservations (5.11+).
    pub requested: Option<u64>,
    /// `r:` blocks reserved (reservation-tree blocks before 5.11, in-place reserved after).
    pub reserved: Option<u64>,
    /// `e:` extent allocation failure point.
    pub extfail: Option<u64>,
    /// The `L:` line (rgrplvb mounts).
    pub lvb: Option<RgrpLvb>,
    /// The `B:` lines: block reservations.
    pub reservations: Vec<Reservation>,
    /// Tokens of the `R:` line this parser does not know.
    pub extra: Vec<Token>,
}

/// The `  L:` rgrp LVB line (rgrplvb mounts).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RgrpLvb {
    /// The LVB's flags.
    pub flags: u64,
    /// Free blocks.
    pub free: u64,
    /// Dinodes.
    pub dinodes: u64,
}

/// A `  B:` block reservation line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reservation {
    /// `n:` the inode holding the reservation.
    pub inode: u64,
    /// `s:` first block.
    pub start: u64,
    /// `b:` bit offset (before 5.11).
    pub bit_offset: Option<u64>,
    /// `f:` free (before 5.11) or requested (5.11+) blocks.
    pub free: u64,
}
