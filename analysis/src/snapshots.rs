//! The snapshots of a set of captures as typed rows: every glock, holder line, glstats line,
//! sbstats value and DLM lock, each with the node and snapshot it was read from. The
//! analyses read these; `frames` turns the same rows into DataFrames for Parquet.

use std::io;

use glockparse::dlm_locks::{self, OwnedLock};
use glockparse::{Diagnostics, Glock, GlockId, GlockReader, LockState};

use bundle::{Captures, FileKind, NodeCapture, Snapshot};

/// Where a row was read: the node, which of its snapshots, and when that was taken.
#[derive(Debug, Clone, PartialEq)]
pub struct At {
    /// The node's name.
    pub node: String,
    /// The snapshot's index (`glocks.N`).
    pub snapshot: u32,
    /// When the snapshot was taken, in seconds since the epoch, when the capture says.
    pub time_unix: Option<f64>,
}

impl At {
    fn of(node: &str, s: &Snapshot) -> At {
        At {
            node: node.to_string(),
            snapshot: s.index,
            time_unix: s.time_unix,
        }
    }
}

/// One glock (`G:` line) of a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct GlockRow {
    /// Node and snapshot.
    pub at: At,
    /// The glock.
    pub glock: GlockId,
    /// Its state, target and demote state.
    pub state: LockState,
    /// The state it is moving to.
    pub target: LockState,
    /// The state a demote request asks for.
    pub demote_state: LockState,
    /// Microseconds since the demote request (0: none).
    pub demote_us: u64,
    /// Its flags.
    pub flags: glockparse::GlockFlags,
    /// Its reference count.
    pub refs: i64,
    /// Granted holders.
    pub holders: u32,
    /// Waiting holders.
    pub waiters: u32,
    /// The inode's size, for inode glocks with an `I:` line.
    pub inode_size: Option<u64>,
    /// The inode's file type (`dir`, `file`...), for inode glocks with an `I:` line.
    pub file_type: Option<&'static str>,
}

/// What a holder line is to its glock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Granted.
    Holder,
    /// Waiting for a grant.
    Waiter,
    /// Neither granted nor waiting (queued behind others).
    Queued,
}

impl Role {
    /// The name frames and reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Holder => "holder",
            Role::Waiter => "waiter",
            Role::Queued => "queued",
        }
    }
}

/// One holder line (`H:`) of a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct Hold {
    /// Node and snapshot.
    pub at: At,
    /// Its glock.
    pub glock: GlockId,
    /// Granted, waiting or queued.
    pub role: Role,
    /// The pid the kernel printed (the process that queued the request).
    pub pid: i64,
    /// The command the kernel printed.
    pub comm: std::sync::Arc<str>,
    /// The state it holds or asks for.
    pub state: LockState,
    /// Its flags.
    pub flags: glockparse::HolderFlags,
    /// The call site that queued it.
    pub caller: std::sync::Arc<str>,
    /// The error it got.
    pub error: i64,
    /// Its `H:` line in the glocks file.
    pub line: u64,
}

/// One DLM lock of a snapshot's lock dump: the lock and its owner (the one model of a
/// DLM lock, whose fields it derefs to) and where it was read.
#[derive(Debug, Clone, PartialEq)]
pub struct Dlm {
    /// Node and snapshot.
    pub at: At,
    /// The lock and the node that owns it, when known.
    pub lock: OwnedLock,
}

impl std::ops::Deref for Dlm {
    type Target = OwnedLock;

    fn deref(&self) -> &OwnedLock {
        &self.lock
    }
}

/// One glock's line of a glstats snapshot: the eight DLM statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct GlStatRow {
    /// Node and snapshot.
    pub at: At,
    /// The glock and its statistics.
    pub stat: gfs2stats::GlStat,
}

/// One value of an sbstats snapshot: a statistic of one glock type on one CPU.
#[derive(Debug, Clone, PartialEq)]
pub struct SbStatRow {
    /// Node and snapshot.
    pub at: At,
    /// The glock type.
    pub gltype: glockparse::GlockType,
    /// The CPU.
    pub cpu: u32,
    /// The statistic.
    pub stat: gfs2stats::Stat,
    /// Its value.
    pub value: i64,
}

/// Every snapshot row of a set of captures.
#[derive(Debug, Default)]
pub struct Snapshots {
    /// Glocks.
    pub glocks: Vec<GlockRow>,
    /// Holder lines.
    pub holders: Vec<Hold>,
    /// glstats lines.
    pub glstats: Vec<GlStatRow>,
    /// sbstats values.
    pub sbstats: Vec<SbStatRow>,
    /// DLM locks.
    pub dlm: Vec<Dlm>,
    /// What could not be read, and where.
    pub diagnostics: Diagnostics,
}

impl Snapshots {
    /// Rows of every kind.
    pub fn rows(&self) -> usize {
        self.glocks.len()
            + self.holders.len()
            + self.glstats.len()
            + self.sbstats.len()
            + self.dlm.len()
    }

    /// Reads the snapshots of every node.
    pub fn load(caps: &Captures) -> io::Result<Snapshots> {
        let mut s = Snapshots::default();
        for n in &caps.nodes {
            s.load_node(n)?;
        }
        Ok(s)
    }

    fn load_node(&mut self, n: &NodeCapture) -> io::Result<()> {
        for s in &n.snapshots {
            let at = At::of(&n.node, s);
            if let Some(p) = s.path(FileKind::Glocks) {
                self.read_glocks(p, &at)?;
            }
            if let Some(p) = s.path(FileKind::Glstats) {
                self.read_glstats(p, &at)?;
            }
            if let Some(p) = s.path(FileKind::Sbstats) {
                self.read_sbstats(p, &at)?;
            }
            if let Some(p) = s.path(FileKind::DlmLocks) {
                self.read_dlm(p, &at, n.nodeid)?;
            }
        }
        Ok(())
    }

    fn read_glocks(&mut self, p: &std::path::Path, at: &At) -> io::Result<()> {
        let mut r = GlockReader::open(p)?;
        let mut g = Glock::default();
        while r.next_into(&mut g) {
            self.push_glock(at, &g);
        }
        self.diagnostics.merge(r.diagnostics());
        Ok(())
    }

    fn push_glock(&mut self, at: &At, g: &Glock) {
        self.glocks.push(GlockRow {
            at: at.clone(),
            glock: g.id,
            state: g.state,
            target: g.target,
            demote_state: g.demote_state,
            demote_us: g.demote_us,
            flags: g.flags,
            refs: g.refs,
            holders: g.granted_count() as u32,
            waiters: g.waiter_count() as u32,
            inode_size: g.inode.as_ref().map(|i| i.size),
            file_type: g.inode.as_ref().map(|i| i.file_type()),
        });
        for x in &g.holders {
            let role = if x.is_waiting() {
                Role::Waiter
            } else if x.is_granted() {
                Role::Holder
            } else {
                Role::Queued
            };
            self.holders.push(Hold {
                at: at.clone(),
                glock: g.id,
                role,
                pid: x.pid,
                comm: x.comm.clone(),
                state: x.state,
                flags: x.flags,
                caller: x.caller.clone(),
                error: x.error,
                line: x.line,
            });
        }
    }

    fn read_glstats(&mut self, p: &std::path::Path, at: &At) -> io::Result<()> {
        let (v, d) = gfs2stats::glstats::read_path(p)?;
        self.diagnostics.merge(&d);
        self.glstats.extend(v.into_iter().map(|stat| GlStatRow {
            at: at.clone(),
            stat,
        }));
        Ok(())
    }

    fn read_sbstats(&mut self, p: &std::path::Path, at: &At) -> io::Result<()> {
        let (v, d) = gfs2stats::sbstats::read_path(p)?;
        self.diagnostics.merge(&d);
        for (t, ts) in &v.types {
            for stat in gfs2stats::Stat::ALL {
                for (i, val) in ts.get(stat).iter().enumerate() {
                    self.sbstats.push(SbStatRow {
                        at: at.clone(),
                        gltype: *t,
                        cpu: v.cpus.get(i).copied().unwrap_or(i as u32),
                        stat,
                        value: *val,
                    });
                }
            }
        }
        Ok(())
    }

    fn read_dlm(&mut self, p: &std::path::Path, at: &At, local: Option<u64>) -> io::Result<()> {
        let (v, d) = glockparse::input::read_path(p, dlm_locks::read)?;
        self.diagnostics.merge(&d);
        self.dlm.extend(v.into_iter().map(|l| Dlm {
            at: at.clone(),
            lock: OwnedLock::new(l, local),
        }));
        Ok(())
    }
}
