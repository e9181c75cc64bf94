//! The judgement on each shown glock beyond its record: how long its waiters have
//! waited and whether that is stuck ([`crate::stuck::is_stuck`]), and whom they wait
//! for, here or on which node.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use glockparse::dlm_locks::{LockStatus, OwnedLock};
use glockparse::record::has_ended;
use glockparse::{Glock, Holder, LockState};

use super::companions::{NodeView, RequestWait};
use super::waits::{WaitAge, WaiterKey};
use super::{Shown, Snapshot};

/// Where a waiter's age comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgeSource {
    /// The DLM lock dump: the glock's request has been in the DLM's queue that long.
    Dlm,
    /// glk has seen the waiter that long (a lower bound).
    Seen,
}

/// Whom a glock's waiters wait for. Its [`fmt::Display`] is the words the views show:
/// `node 1 pid 866 EX`, `here pid 12 dd`, ...
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blocker {
    /// Nothing waits.
    Nothing,
    /// Locks granted on the resource's master in modes that block the request.
    Granted(Vec<GrantedLock>),
    /// The request waits on node `0`, the master, whose dump is not among the inputs.
    Master(u64),
    /// The request waits in the queue of master node `0`, behind no granted lock.
    QueueOn(u64),
    /// The request waits in this node's own DLM queue (it masters the resource).
    QueueHere,
    /// A holder granted here: its pid ([`process_pid`]) and command.
    Holder(Option<i64>, Arc<str>),
    /// The glock's demote to this state, here.
    Demote(LockState),
    /// The glock's state change to this state, here.
    StateChange(LockState),
    /// Something here, not known what.
    Here,
}

/// A lock granted on the master that blocks a request, and the process that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantedLock {
    /// The lock, as the master's dump shows it. Its pid is the process that last asked the
    /// DLM for it on its node: a hint, not the holder (for an flock, the process that took
    /// it, which may have ended while the open file it inherited holds the lock on).
    pub lock: OwnedLock,
    /// The process that holds the glock on the lock's node, where that node's glocks file
    /// is among the inputs and says ([`HolderThere::pid`]): the lock's own pid when it is
    /// one of the holders there, else the first holder. None: only the DLM's pid is known.
    pub holder: Option<i64>,
}

impl GrantedLock {
    /// The DLM's pid, where another process is known to hold the glock.
    pub fn asked_not_holding(&self) -> Option<u64> {
        let holder = self.holder?;
        (self.asked() != Some(holder)).then_some(self.lock.pid)
    }

    /// The DLM's pid as holders' pids are kept (None past `i64::MAX`, which no pid is).
    fn asked(&self) -> Option<i64> {
        i64::try_from(self.lock.pid).ok()
    }
}

impl fmt::Display for Blocker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Blocker::Nothing => f.write_str("-"),
            Blocker::Granted(locks) => {
                for (i, b) in locks.iter().enumerate() {
                    let sep = if i > 0 { ", " } else { "" };
                    // The holder, where known, else the DLM's pid.
                    let pid = b
                        .holder
                        .map_or_else(|| b.lock.pid.to_string(), |h| h.to_string());
                    let mode = b.lock.grmode;
                    match b.lock.owner {
                        Some(n) => write!(f, "{sep}node {n} pid {pid} {mode}")?,
                        None => write!(f, "{sep}node ? pid {pid} {mode}")?,
                    }
                }
                Ok(())
            }
            Blocker::Master(m) => write!(f, "node {m} (master)"),
            Blocker::QueueOn(m) => write!(f, "DLM queue on node {m}"),
            Blocker::QueueHere => f.write_str("DLM queue here"),
            Blocker::Holder(pid, comm) => match pid {
                // A GL_NOPID flock holder named through the DLM: no command is printed.
                Some(p) if &**comm == "(none)" => write!(f, "here pid {p}"),
                Some(p) => write!(f, "here pid {p} {comm}"),
                None => write!(f, "here pid - {comm}"),
            },
            Blocker::Demote(s) => write!(f, "here: demote to {}", s.as_str()),
            Blocker::StateChange(s) => write!(f, "here: state change to {}", s.as_str()),
            Blocker::Here => f.write_str("here"),
        }
    }
}

/// A holder on another node that a waiter here waits for: the same glock, held there
/// with a demote requested (the DLM asked that node to give it up).
#[derive(Debug, Clone, PartialEq)]
pub struct HolderThere {
    /// The input (node) it was read from.
    pub input: usize,
    /// That node's DLM node id, when known.
    pub nodeid: Option<u64>,
    /// The holder: pid, command, state, flags and call site as that node's glocks file
    /// shows them.
    pub holder: Holder,
    /// The holding process: the holder's pid, or for a GL_NOPID flock holder the
    /// process that node's DLM and glockfd name (as [`Blocker::Holder`] does here).
    pub pid: Option<i64>,
    /// That process's command where the holder does not name it (`(none)`) and the
    /// node's task list does.
    pub comm: Option<String>,
}

/// The judgement on one shown glock.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The longest wait known, µs (0 when nothing waits or no age is known yet).
    pub wait_us: u64,
    /// Where that wait comes from (None when no age is known).
    pub source: Option<AgeSource>,
    /// Waiters known to have waited longer than the stuck threshold.
    pub stuck: bool,
    /// The glock's DLM request, when it waits in the DLM.
    pub dlm: Option<RequestWait>,
    /// Whom the waiters wait for.
    pub blocker: Blocker,
    /// The holders on other nodes among the inputs that the waiters wait for: the nodes
    /// whose granted DLM locks block the request, or, when no master's dump says, every
    /// node of the filesystem asked to demote the glock.
    pub elsewhere: Vec<HolderThere>,
}

/// Judges every shown glock of `snap`: `ages` are the waiters' ages across refreshes,
/// `stuck_after` the stuck threshold in seconds.
pub fn judge(
    snap: &Snapshot,
    ages: &HashMap<WaiterKey, WaitAge>,
    stuck_after: f64,
) -> Vec<Verdict> {
    snap.shown
        .iter()
        .map(|s| judge_one(snap, s, ages, stuck_after))
        .collect()
}

/// The verdict on one shown glock.
fn judge_one(
    snap: &Snapshot,
    s: &Shown,
    ages: &HashMap<WaiterKey, WaitAge>,
    stuck_after: f64,
) -> Verdict {
    let g = &s.glock;
    if g.waiter_count() == 0 {
        return Verdict {
            wait_us: 0,
            source: None,
            stuck: false,
            dlm: None,
            blocker: Blocker::Nothing,
            elsewhere: Vec::new(),
        };
    }
    let dlm = snap.ctx.dlm_wait(s.input, g.id);
    let seen = g
        .waiters()
        .filter_map(|h| ages.get(&WaiterKey::of(s.input, g, h)))
        .map(|a| (a.seen_secs * 1e6) as u64)
        .max()
        .unwrap_or(0);
    let (wait_us, source) = match &dlm {
        Some(d) if d.age_us >= seen => (d.age_us, Some(AgeSource::Dlm)),
        _ if seen > 0 => (seen, Some(AgeSource::Seen)),
        _ => (0, None),
    };
    let mut blocker = match &dlm {
        Some(d) => dlm_blocker(d),
        None => local_blocker(g, snap.ctx.node(s.input)),
    };
    let elsewhere = holders_elsewhere(snap, s, &blocker);
    name_holders(&mut blocker, &elsewhere);
    Verdict {
        wait_us,
        source,
        stuck: source.is_some() && crate::stuck::is_stuck(wait_us as f64 / 1e6, stuck_after),
        dlm,
        blocker,
        elsewhere,
    }
}

/// The holders on other nodes that the waiters of `s` wait for ([`Verdict::elsewhere`]):
/// none when they wait for something on their own node.
fn holders_elsewhere(snap: &Snapshot, s: &Shown, blocker: &Blocker) -> Vec<HolderThere> {
    let owners: Option<Vec<u64>> = match blocker {
        Blocker::Granted(locks) => Some(locks.iter().filter_map(|l| l.lock.owner).collect()),
        Blocker::Master(_) | Blocker::QueueOn(_) => None,
        _ => return Vec::new(),
    };
    let mut out = Vec::new();
    for (j, nodeid) in snap.ctx.peers(s.input) {
        if owners
            .as_ref()
            .is_some_and(|o| !nodeid.is_some_and(|n| o.contains(&n)))
        {
            continue;
        }
        let Some(files) = snap.files.get(j) else {
            continue;
        };
        let Ok(at) = files.asked.binary_search_by_key(&s.glock.id, |g| g.id) else {
            continue;
        };
        let there = &files.asked[at];
        let view = snap.ctx.node(j);
        out.extend(there.granted().map(|h| {
            let pid = holding_pid(there, h, view);
            HolderThere {
                input: j,
                nodeid,
                holder: h.clone(),
                pid,
                comm: pid.and_then(|p| view.comm(p)).map(str::to_string),
            }
        }));
    }
    out
}

/// Names the process that holds each granted lock of `blocker` where the holders on its
/// node (`there`) say ([`GrantedLock::holder`]): the DLM names the process that last asked
/// for the lock, which may hold it no longer, or have ended.
fn name_holders(blocker: &mut Blocker, there: &[HolderThere]) {
    let Blocker::Granted(locks) = blocker else {
        return;
    };
    for l in locks {
        let holders: Vec<i64> = there
            .iter()
            .filter(|t| t.nodeid.is_some() && t.nodeid == l.lock.owner)
            .filter_map(|t| t.pid)
            .collect();
        l.holder = match l.asked() {
            Some(p) if holders.contains(&p) => Some(p),
            _ => holders.first().copied(),
        };
    }
}

/// Whom a request waiting in the DLM waits for.
fn dlm_blocker(d: &RequestWait) -> Blocker {
    if !d.blockers.is_empty() {
        let locks = d.blockers.iter().map(|l| GrantedLock {
            lock: l.clone(),
            holder: None,
        });
        return Blocker::Granted(locks.collect());
    }
    match d.master {
        // The holder is known only to the master, whose dump is not among the inputs.
        Some(m) if !d.master_seen => Blocker::Master(m),
        Some(m) => Blocker::QueueOn(m),
        None => Blocker::QueueHere,
    }
}

/// Whom a waiter whose glock does not wait in the DLM waits for: a holder here, or the
/// glock's own state change.
fn local_blocker(g: &Glock, view: &NodeView) -> Blocker {
    if let Some(h) = g.granted().next() {
        let pid = holding_pid(g, h, view);
        let comm = match (process_pid(h), pid) {
            // The taker has ended: the heir's command, from the task list when saved.
            (Some(took), Some(holds)) if took != holds => {
                view.comm(holds).unwrap_or("(none)").into()
            }
            _ => h.comm.clone(),
        };
        return Blocker::Holder(pid, comm);
    }
    if g.demote_requested() {
        return Blocker::Demote(g.demote_state);
    }
    if g.flags.locked() {
        return Blocker::StateChange(g.target);
    }
    Blocker::Here
}

/// The process that holds what holder `h` of glock `g` holds: the one its line names,
/// except for an flock, whose lock belongs to the open file: where the process that took
/// it has ended (`(ended)`: before 6.1 a flock holder keeps its pid), the one fdinfo shows
/// holding it through that file; for a GL_NOPID holder, the one fdinfo shows, else
/// [`flock_holder`].
fn holding_pid(g: &Glock, h: &Holder, view: &NodeView) -> Option<i64> {
    let flock = g.id.gltype == 6;
    match process_pid(h) {
        Some(pid) if flock && has_ended(&h.comm) => view.fd_holder(g.id).or(Some(pid)),
        Some(pid) => Some(pid),
        None if flock => view.fd_holder(g.id).or_else(|| flock_holder(g, view)),
        None => None,
    }
}

/// The process behind a GL_NOPID flock holder (`p:0`, 6.1+): the one its node's granted
/// DLM lock names, while that process still has the glock's file open (glockfd; an flock
/// belongs to the open file, and the DLM keeps naming a process that has ended), as
/// `glk analyze` names it. None for other glocks or when glockfd does not say so.
fn flock_holder(g: &Glock, view: &NodeView) -> Option<i64> {
    if g.id.gltype != 6 {
        return None;
    }
    let own = view.own_lock(g.id)?;
    let pid = i64::try_from(own.pid).ok().filter(|p| *p > 0)?;
    (own.status == LockStatus::Granted && view.has_open(g.id, pid)).then_some(pid)
}

/// A holder's pid as the views show it, None for a GL_NOPID holder (`p:0` or `p:-1`);
/// an ended process keeps its pid.
pub fn process_pid(h: &Holder) -> Option<i64> {
    (h.pid > 0).then_some(h.pid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use glockparse::dlm_locks::parse_line;
    use glockparse::GlockReader;

    /// A master copy of node 2's lock on flock glock `6/223b`, taken by pid 283, granted PR.
    fn granted_to_node_2() -> OwnedLock {
        let line = br#"1b 2 3c 283 0 0 10000 2 3 -1 49060000 0 24 "       6            223b""#;
        OwnedLock::new(parse_line(line).unwrap(), Some(1))
    }

    /// Node 2's holders of the glock, each with the process holding it.
    fn held_by(pids: &[i64]) -> Vec<HolderThere> {
        let holders =
            " H: s:SH f:H e:0 p:0 [(none)] __do_sys_flock+0x11c/0x1e0\n".repeat(pids.len());
        let dump = format!("G:  s:SH n:6/223b f:q t:SH d:EX/0 a:0 v:0 r:3 m:200 p:0\n{holders}");
        let g = GlockReader::new(dump.as_bytes(), "t").next().unwrap();
        g.holders
            .iter()
            .zip(pids)
            .map(|(h, p)| HolderThere {
                input: 1,
                nodeid: Some(2),
                holder: h.clone(),
                pid: Some(*p),
                comm: None,
            })
            .collect()
    }

    fn shown(there: &[HolderThere]) -> String {
        let mut b = Blocker::Granted(vec![GrantedLock {
            lock: granted_to_node_2(),
            holder: None,
        }]);
        name_holders(&mut b, there);
        b.to_string()
    }

    /// The DLM's pid is kept while it is one of the holders, else the first holder is
    /// named; with no holder known there, the DLM's pid is all there is.
    #[test]
    fn a_granted_lock_names_the_process_that_holds_it_on_its_node() {
        assert_eq!(shown(&held_by(&[300, 283])), "node 2 pid 283 PR");
        assert_eq!(shown(&held_by(&[295, 300])), "node 2 pid 295 PR");
        assert_eq!(shown(&[]), "node 2 pid 283 PR");
        let mut elsewhere = held_by(&[295]);
        elsewhere[0].nodeid = Some(3);
        assert_eq!(
            shown(&elsewhere),
            "node 2 pid 283 PR",
            "another node's holder"
        );
    }
}
