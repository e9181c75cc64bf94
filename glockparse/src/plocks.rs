//! `dlm_tool plocks LOCKSPACE`: the cluster's POSIX (`fcntl`) locks on a GFS2 filesystem,
//! as dlm_controld keeps them. GFS2 hands POSIX locks to dlm_controld (through
//! `/dev/misc/dlm_plock`), outside the glocks file; every node's dlm_controld holds the
//! whole cluster's locks and waiters. Its `copy_plock_state` (dlm_controld/plock.c) prints
//! one line per lock, waiter and pending request:
//!
//! ```text
//! NUMBER WR|RD START-END nodeid NODEID pid PID owner OWNER rown ROWN[ WAITING| PENDING]
//! NUMBER rown ROWN unused_ms MS
//! ```
//!
//! `NUMBER` is the inode number (decimal), `OWNER` the kernel's lock owner (hex: the
//! `files_struct` of the locking process, the same for its threads), `ROWN` the node that
//! owns the resource when plock ownership is on (0 otherwise). The second form is a
//! resource with no lock left.

use std::io::Read;

use nom::branch::alt;
use nom::bytes::complete::tag;
use nom::character::complete::{char, space0, space1};
use nom::combinator::{all_consuming, map, map_opt, opt, value};
use nom::sequence::{preceded, separated_pair, terminated};
use nom::Parser;

use crate::diagnostics::Diagnostics;
use crate::grammar::{dec, hex, sdec, Input, Res};
use crate::id::GlockId;
use crate::lines::{parse_records, Parsed};

/// Where a POSIX lock stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PlockState {
    /// Granted.
    Held,
    /// Waiting for a conflicting lock to go (`WAITING`).
    Waiting,
    /// Sent to the resource's owner node, not yet answered (`PENDING`, plock ownership).
    Pending,
}

/// One POSIX lock, waiter or pending request of `dlm_tool plocks`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plock {
    /// The inode number.
    pub number: u64,
    /// `WR` (exclusive) rather than `RD`.
    pub exclusive: bool,
    /// The first byte locked.
    pub start: u64,
    /// The last byte locked (`i64::MAX` as printed for a lock to the end of the file).
    pub end: u64,
    /// The DLM node id of the node whose process locks.
    pub nodeid: i64,
    /// That process.
    pub pid: u32,
    /// The kernel's lock owner (one per process's file table).
    pub owner: u64,
    /// The resource's owner node (0 without plock ownership).
    pub rown: i64,
    /// Held, waiting or pending.
    pub state: PlockState,
    /// Its line in the dump.
    pub line: u64,
}

/// The largest end a lock can have: a lock to the end of the file (`OFFSET_MAX`).
pub const TO_EOF: u64 = i64::MAX as u64;

/// The word that starts a POSIX lock resource's name ([`Plock::resource`]): `posix 2/N`
/// beside glock names (`6/N`), and the type the analyses give it.
pub const KIND: &str = "posix";

impl PlockState {
    /// `held`, `waiting` or `pending`.
    pub fn as_str(self) -> &'static str {
        match self {
            PlockState::Held => "held",
            PlockState::Waiting => "waiting",
            PlockState::Pending => "pending",
        }
    }
}

impl Plock {
    /// Whether this lock waits (or is pending) rather than held.
    pub fn is_waiting(&self) -> bool {
        self.state != PlockState::Held
    }

    /// Whether the held lock `held` keeps this request from being granted: the same file,
    /// overlapping ranges, one of them exclusive, and another owner (dlm_controld's
    /// `is_conflict`: a process's own locks never block it).
    pub fn is_blocked_by(&self, held: &Plock) -> bool {
        self.number == held.number
            && !(self.nodeid == held.nodeid && self.owner == held.owner)
            && self.start <= held.end
            && held.start <= self.end
            && (self.exclusive || held.exclusive)
    }

    /// The inode glock of the locked file (`2/NUMBER` in hex), by which glk names it.
    pub fn inode_glock(&self) -> GlockId {
        GlockId::new(2, self.number)
    }

    /// `WR` (exclusive) or `RD`, as dlm_tool prints the mode.
    pub fn mode(&self) -> &'static str {
        if self.exclusive {
            "WR"
        } else {
            "RD"
        }
    }

    /// The locked range in words: `0-EOF`, `100-199`.
    pub fn range(&self) -> String {
        if self.end >= TO_EOF {
            format!("{}-EOF", self.start)
        } else {
            format!("{}-{}", self.start, self.end)
        }
    }

    /// The resource in words: `posix 2/223a`, the POSIX locks of the file whose inode glock
    /// is `2/223a`.
    pub fn resource(&self) -> String {
        format!("{KIND} {}", self.inode_glock())
    }
}

/// A line of the dump: a lock, or a resource with no lock left.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Line {
    Lock(Plock),
    Unused,
}

/// `WR` or `RD`: whether the lock is exclusive.
fn mode(i: Input) -> Res<bool> {
    alt((value(true, tag("WR")), value(false, tag("RD")))).parse(i)
}

/// ` KEY VALUE` for one of the lock line's named fields.
fn named<'a, T>(
    key: &'static str,
    v: impl Parser<Input<'a>, Output = T, Error = nom::error::Error<Input<'a>>>,
) -> impl Parser<Input<'a>, Output = T, Error = nom::error::Error<Input<'a>>> {
    preceded((space1, tag(key), space1), v)
}

/// The state word at a lock line's end: none (held), `WAITING` or `PENDING`.
fn state(i: Input) -> Res<PlockState> {
    map(
        opt(preceded(
            space1,
            alt((
                value(PlockState::Waiting, tag("WAITING")),
                value(PlockState::Pending, tag("PENDING")),
            )),
        )),
        |s| s.unwrap_or(PlockState::Held),
    )
    .parse(i)
}

/// The rest of a lock line after its number (the number and line are the caller's).
fn lock(i: Input) -> Res<Plock> {
    map(
        (
            preceded(space1, mode),
            preceded(space1, separated_pair(dec, char('-'), dec)),
            named("nodeid", sdec),
            named("pid", map_opt(dec, |p| u32::try_from(p).ok())),
            named("owner", hex),
            named("rown", sdec),
            state,
        ),
        |(exclusive, (start, end), nodeid, pid, owner, rown, state)| Plock {
            number: 0,
            exclusive,
            start,
            end,
            nodeid,
            pid,
            owner,
            rown,
            state,
            line: 0,
        },
    )
    .parse(i)
}

/// One line of the dump: the resource's number, then a lock, or `rown R unused_ms MS` for
/// a resource with no lock left (`None`).
fn line(i: Input) -> Res<(u64, Option<Plock>)> {
    all_consuming(terminated(
        (
            preceded(space0, dec),
            alt((
                map(lock, Some),
                value(None, (named("rown", sdec), named("unused_ms", dec))),
            )),
        ),
        space0,
    ))
    .parse(i)
}

/// Reads one line of `dlm_tool plocks` (line number `n`).
fn parse_line(text: &[u8], n: u64) -> Result<Line, &'static str> {
    let (_, (number, lock)) = line(text).map_err(|_| {
        "expected NUMBER WR|RD START-END nodeid N pid P owner X rown R [WAITING|PENDING]"
    })?;
    Ok(match lock {
        // The kernel refuses such a lock (fs/locks.c): the line is damaged.
        Some(l) if l.start > l.end => return Err("a range that ends before it starts"),
        Some(l) => Line::Lock(Plock {
            number,
            line: n,
            ..l
        }),
        None => Line::Unused,
    })
}

/// Reads a whole `dlm_tool plocks` output: its locks, waiters and pending requests (the
/// resources with no lock are read and left out); a malformed line is reported with its
/// number and costs only itself.
pub fn read_all<R: Read>(rdr: R, source: &str) -> (Vec<Plock>, Diagnostics) {
    parse_records(rdr, source, |n, text| match parse_line(text, n) {
        Ok(Line::Lock(p)) => Parsed::Record(p),
        Ok(Line::Unused) => Parsed::Ignored,
        Err(m) => Parsed::Bad(m.into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DUMP: &str = "\
8770 WR 0-9223372036854775807 nodeid 1 pid 431 owner ffff8a0c4e6d2f00 rown 0
8770 WR 0-9223372036854775807 nodeid 2 pid 377 owner ffff9b1d03a1c780 rown 0 WAITING
8771 RD 100-199 nodeid 2 pid 377 owner ffff9b1d03a1c780 rown 0
8772 rown 0 unused_ms 4211
8773 WR 0-0 nodeid 1 pid 5 owner 1 rown 1 PENDING
";

    #[test]
    fn reads_every_form_dlm_controld_prints() {
        let (v, d) = read_all(DUMP.as_bytes(), "plocks.0");
        assert_eq!((d.errors, d.ignored, v.len()), (0, 1, 4));
        let (held, waiting) = (&v[0], &v[1]);
        assert_eq!(
            (
                held.number,
                held.exclusive,
                held.nodeid,
                held.pid,
                held.state
            ),
            (8770, true, 1, 431, PlockState::Held)
        );
        assert_eq!(held.owner, 0xffff_8a0c_4e6d_2f00);
        assert_eq!(
            (held.range(), held.resource()),
            ("0-EOF".into(), "posix 2/2242".into())
        );
        assert_eq!((waiting.state, waiting.line), (PlockState::Waiting, 2));
        assert!(waiting.is_blocked_by(held));
        assert_eq!((v[2].exclusive, v[2].range()), (false, "100-199".into()));
        assert_eq!((v[3].state, v[3].rown), (PlockState::Pending, 1));
    }

    #[test]
    fn conflicts_are_dlm_controlds() {
        let (v, _) = read_all(DUMP.as_bytes(), "p");
        let mut read = v[1].clone();
        read.exclusive = false;
        let mut shared = v[0].clone();
        shared.exclusive = false;
        // Two shared locks never conflict; one exclusive side is enough.
        assert!(!read.is_blocked_by(&shared));
        assert!(read.is_blocked_by(&v[0]));
        // A process's own lock never blocks it, nor a lock on another file or range.
        let mut own = v[0].clone();
        (own.nodeid, own.owner) = (v[1].nodeid, v[1].owner);
        assert!(!v[1].is_blocked_by(&own));
        assert!(!v[1].is_blocked_by(&v[2]));
        let mut apart = v[1].clone();
        (apart.number, apart.start, apart.end) = (8771, 200, 300);
        assert!(!apart.is_blocked_by(&v[2]));
    }

    #[test]
    fn a_bad_line_is_named_and_costs_only_itself() {
        let text = "8770 WR 0-1 nodeid 1 pid 4 owner 1 rown 0\n8770 XX 0-1\n\
                    8770 WR 0-1 nodeid 1 pid 99999999999 owner 1 rown 0\n\
                    8770 RD 0-1 nodeid 1 pid 4 owner 1 rown 0 WAITING trailing\n\
                    8771 WR 0-1 nodeid 2 pid 5 owner 2 rown 0\n\
                    8771 WR 9-1 nodeid 2 pid 5 owner 2 rown 0\n";
        let (v, d) = read_all(text.as_bytes(), "n1/plocks.3");
        assert_eq!((v.len(), d.errors), (2, 4));
        let first = &d.first_errors[0];
        assert!(first.to_string().starts_with("n1/plocks.3:2:"), "{first}");
        let last = d.first_errors[3].to_string();
        assert!(
            last.contains(":6: a range that ends before it starts"),
            "{last}"
        );
    }
}
