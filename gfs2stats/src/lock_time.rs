//! DLM round-trip distributions from `gfs2_glock_lock_time` events: per glock and per
//! glock type, an HDR histogram of `tdiff`, split blocking / non-blocking, so slow round
//! trips show as percentiles rather than the kernel's smoothed means (exact while a glock
//! has few samples, an HDR histogram past that: see [`crate::dist`]).
//!
//! Which kind a reply was: the kernel updates either the non-blocking pair (`srtt`) or the
//! blocking pair (`srttb`) with each sample, depending on GLF_BLOCKING. So an event is
//! classified by which pair changed since the glock's previous event. When that cannot
//! tell (a glock's first event, or neither/both changed), the `b` (GLF_BLOCKING) flag of
//! the glock's next `gfs2_glock_state_change` decides, since finish_xmote runs right after
//! the reply with the same bit. Unlock replies (`status -65538`) are non-blocking
//! (gdlm_put_lock clears the bit). What stays undecided counts only in `all`.
//!
//! Both rules follow one glock of one node's filesystem: a trace of several filesystems
//! (their glock numbers overlap) or several nodes' traces are read as [`ByFilesystem`] does,
//! one [`LockTimes`] per trace and device, folded by filesystem when each trace ends.

use std::collections::{btree_map, hash_map, BTreeMap, HashMap};

use glockparse::{GlockId, GlockType};
use traceparse::{Dev, Gfs2Event, LockTime};

/// `-DLM_EUNLOCK`: the reply to an unlock (which never blocks).
pub const DLM_EUNLOCK: i64 = -65538;

pub use crate::dist::{Distribution, Recorder};

/// Whether a DLM request had to wait for other nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// It waited (the blocking statistics moved).
    Blocking,
    /// It did not.
    NonBlocking,
}

/// All, blocking and non-blocking round trips of one glock or type.
#[derive(Debug, Clone, Default)]
pub struct Hists {
    /// Every round trip.
    pub all: Recorder,
    /// Round trips of blocking requests.
    pub blocking: Recorder,
    /// Round trips of non-blocking requests.
    pub nonblocking: Recorder,
}

impl Hists {
    fn record(&mut self, ns: u64, class: Option<Class>) {
        self.all.record(ns);
        match class {
            Some(Class::Blocking) => self.blocking.record(ns),
            Some(Class::NonBlocking) => self.nonblocking.record(ns),
            None => {}
        }
    }

    /// Adds another set's samples.
    pub fn merge(&mut self, o: &Hists) {
        self.all.merge(&o.all);
        self.blocking.merge(&o.blocking);
        self.nonblocking.merge(&o.nonblocking);
    }
}

/// Summarises a recorder.
pub fn distribution(r: &Recorder) -> Distribution {
    r.distribution()
}

/// Collects lock-time distributions from a stream of decoded gfs2 events.
#[derive(Default)]
pub struct LockTimes {
    /// Round trips per glock.
    pub per_glock: HashMap<GlockId, Hists>,
    /// Round trips per glock type.
    pub per_type: BTreeMap<GlockType, Hists>,
    prev: HashMap<GlockId, LockTime>,
    /// The sample waiting for the glock's next state change to be classified: at most one
    /// per glock (each reply is followed by its own state change), so memory stays bounded
    /// by the glocks seen even when state changes are not traced.
    pending: HashMap<GlockId, u64>,
    /// Events with a negative tdiff (a wall-clock step), not recorded.
    pub negative: u64,
    /// Events classified by which stats pair changed / by the next state change's flags /
    /// not at all.
    pub by_stats: u64,
    /// Round trips classified by the event's flags.
    pub by_flags: u64,
    /// Round trips that could not be classified.
    pub unclassified: u64,
}

/// Which stats pair a sample updated, if the previous event tells.
pub fn class_by_stats(prev: &LockTime, now: &LockTime) -> Option<Class> {
    let nb = (prev.stats.srtt, prev.stats.srttvar) != (now.stats.srtt, now.stats.srttvar);
    let b = (prev.stats.srttb, prev.stats.srttvarb) != (now.stats.srttb, now.stats.srttvarb);
    match (nb, b) {
        (true, false) => Some(Class::NonBlocking),
        (false, true) => Some(Class::Blocking),
        _ => None,
    }
}

impl LockTimes {
    fn record(&mut self, g: GlockId, ns: u64, class: Option<Class>) {
        self.per_glock.entry(g).or_default().record(ns, class);
        self.per_type
            .entry(g.glock_type())
            .or_default()
            .record(ns, class);
    }

    /// Feeds one event (others than lock_time and state_change are ignored).
    pub fn add(&mut self, ev: &Gfs2Event) {
        match ev {
            Gfs2Event::GlockLockTime(lt) => {
                if lt.tdiff < 0 {
                    self.negative += 1;
                    return;
                }
                let ns = lt.tdiff as u64;
                let class = if lt.status == DLM_EUNLOCK {
                    Some(Class::NonBlocking)
                } else {
                    self.prev.get(&lt.glock).and_then(|p| class_by_stats(p, lt))
                };
                self.prev.insert(lt.glock, *lt);
                match class {
                    Some(c) => {
                        self.by_stats += 1;
                        self.record(lt.glock, ns, Some(c));
                    }
                    None => {
                        // A second reply before any state change: the earlier one's state
                        // change was not traced, so nothing will classify it.
                        if let Some(earlier) = self.pending.insert(lt.glock, ns) {
                            self.unclassified += 1;
                            self.record(lt.glock, earlier, None);
                        }
                    }
                }
            }
            Gfs2Event::GlockStateChange { glock, flags, .. } => {
                if let Some(ns) = self.pending.remove(glock) {
                    let class = if flags.letters.contains('b') {
                        Class::Blocking
                    } else {
                        Class::NonBlocking
                    };
                    self.by_flags += 1;
                    self.record(*glock, ns, Some(class));
                }
            }
            _ => {}
        }
    }

    /// Records the samples no state change came for (in `all` only).
    pub fn finish(&mut self) {
        let pending: Vec<(GlockId, u64)> = self.pending.drain().collect();
        for (g, ns) in pending {
            self.unclassified += 1;
            self.record(g, ns, None);
        }
    }

    /// Samples waiting for a state change (at most one per glock).
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Adds the samples and counts of `o`, another trace's, finished ([`LockTimes::finish`]):
    /// the same glock's samples go into one set.
    pub fn absorb(&mut self, o: LockTimes) {
        for (g, h) in o.per_glock {
            match self.per_glock.entry(g) {
                hash_map::Entry::Occupied(mut mine) => mine.get_mut().merge(&h),
                hash_map::Entry::Vacant(v) => {
                    v.insert(h);
                }
            }
        }
        for (ty, h) in o.per_type {
            match self.per_type.entry(ty) {
                btree_map::Entry::Occupied(mut mine) => mine.get_mut().merge(&h),
                btree_map::Entry::Vacant(v) => {
                    v.insert(h);
                }
            }
        }
        self.negative += o.negative;
        self.by_stats += o.by_stats;
        self.by_flags += o.by_flags;
        self.unclassified += o.unclassified;
    }

    /// Whether it holds nothing: no sample, no negative tdiff.
    pub fn is_empty(&self) -> bool {
        self.per_type.is_empty() && self.negative == 0
    }
}

/// A filesystem as the round trips of several traces are folded by it: its lock table
/// where the node that wrote the trace names its device (device numbers are a node's own:
/// one shared disk may be `253,3` on one node and `253,5` on another), else its device as
/// the events name it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FsKey {
    /// A lock table, `CLUSTER:FS`.
    Table(String),
    /// A device no lock table was known for.
    Dev(Dev),
}

impl std::fmt::Display for FsKey {
    /// The lock table, or the device as gfs2 events print it (`254,1`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FsKey::Table(t) => f.write_str(t),
            FsKey::Dev(d) => write!(f, "{d}"),
        }
    }
}

/// The round trips of traces that may hold several filesystems, one [`LockTimes`] per
/// filesystem. Each trace is fed apart, by device as its events name it, and ended
/// ([`ByFilesystem::end_trace`]): a reply is classified by its own glock's previous reply and
/// next state change, in its own trace and filesystem; then the trace's sets join those of
/// the same filesystem ([`FsKey`]).
#[derive(Default)]
pub struct ByFilesystem {
    /// The finished sets, by filesystem: traces of several nodes fold into one where they
    /// name it alike.
    pub filesystems: BTreeMap<FsKey, LockTimes>,
    /// The sets of the trace being read, by device.
    reading: BTreeMap<Dev, LockTimes>,
}

impl ByFilesystem {
    /// Feeds one event of the trace being read, of the filesystem on `dev` (events
    /// [`LockTimes::add`] ignores are ignored here too).
    pub fn add(&mut self, dev: Dev, ev: &Gfs2Event) {
        if matches!(
            ev,
            Gfs2Event::GlockLockTime(_) | Gfs2Event::GlockStateChange { .. }
        ) {
            self.reading.entry(dev).or_default().add(ev);
        }
    }

    /// The `n` glocks with the slowest p99 of all their samples, of every filesystem,
    /// slowest first (ties by glock, then filesystem).
    pub fn slowest(&self, n: usize) -> Vec<(&FsKey, GlockId, &Hists)> {
        let mut v: Vec<(&FsKey, GlockId, &Hists)> = self
            .filesystems
            .iter()
            .flat_map(|(f, lt)| lt.per_glock.iter().map(move |(g, h)| (f, *g, h)))
            .collect();
        v.sort_by_cached_key(|(f, g, h)| (std::cmp::Reverse(h.all.distribution().p99_ns), *g, *f));
        v.truncate(n);
        v
    }

    /// A count summed over the filesystems (`by_stats`, `unclassified`, ...).
    pub fn total(&self, count: fn(&LockTimes) -> u64) -> u64 {
        self.filesystems.values().map(count).sum()
    }

    /// Ends the trace being read: its samples still waiting for a state change are
    /// recorded ([`LockTimes::finish`]), and its sets join the finished ones of their
    /// filesystem: the lock table `table` gives a device (the trace's node's), else the
    /// device.
    pub fn end_trace(&mut self, table: impl Fn(Dev) -> Option<String>) {
        for (dev, mut lt) in std::mem::take(&mut self.reading) {
            lt.finish();
            if !lt.is_empty() {
                let key = table(dev).map_or(FsKey::Dev(dev), FsKey::Table);
                self.filesystems.entry(key).or_default().absorb(lt);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock_time(number: u64, tdiff: i64) -> Gfs2Event {
        Gfs2Event::GlockLockTime(LockTime {
            glock: GlockId::new(2, number),
            status: 0,
            tdiff,
            ..LockTime::default()
        })
    }

    #[test]
    fn without_state_changes_pending_stays_one_per_glock() {
        let mut lt = LockTimes::default();
        for i in 0..100_000u64 {
            // The same stats every time: nothing classifies by stats.
            lt.add(&lock_time(i % 10, 1_000 + i as i64));
        }
        assert_eq!(lt.pending(), 10);
        lt.finish();
        assert_eq!(lt.pending(), 0);
        assert_eq!(lt.unclassified, 100_000);
        let all: u64 = lt
            .per_glock
            .values()
            .map(|h| h.all.distribution().count)
            .sum();
        assert_eq!(all, 100_000);
    }

    /// A reply of glock 2/7 with this smoothed non-blocking round trip.
    fn reply(srtt: i64) -> Gfs2Event {
        let mut e = lock_time(7, 1_000);
        if let Gfs2Event::GlockLockTime(lt) = &mut e {
            lt.stats.srtt = srtt;
        }
        e
    }

    const DEV_A: Dev = Dev {
        major: 254,
        minor: 1,
    };
    const DEV_B: Dev = Dev {
        major: 254,
        minor: 2,
    };

    #[test]
    fn one_glock_number_on_two_devices_is_two_glocks() {
        let mut t = ByFilesystem::default();
        t.add(DEV_A, &reply(100));
        // Another filesystem's glock of the same number: its statistics are its own, so
        // the reply is not classified against the first device's.
        t.add(DEV_B, &reply(200));
        t.add(DEV_A, &reply(150));
        t.end_trace(|_| None);
        let a = &t.filesystems[&FsKey::Dev(DEV_A)];
        let b = &t.filesystems[&FsKey::Dev(DEV_B)];
        assert_eq!((a.by_stats, a.unclassified), (1, 1));
        assert_eq!((b.by_stats, b.unclassified), (0, 1));
        assert_eq!(t.total(|l| l.by_stats + l.unclassified), 3);
        let slowest = t.slowest(10);
        let glocks: Vec<(&FsKey, u64)> = slowest
            .iter()
            .map(|(f, _, h)| (*f, h.all.distribution().count))
            .collect();
        assert_eq!(glocks, [(&FsKey::Dev(DEV_A), 2), (&FsKey::Dev(DEV_B), 1)]);
    }

    #[test]
    fn each_trace_is_classified_by_its_own_replies() {
        let mut t = ByFilesystem::default();
        t.add(DEV_A, &reply(100));
        t.end_trace(|_| None);
        // Another node's trace: its first reply of the glock has no previous reply to be
        // compared with (the first trace's is another node's), and waits for a state
        // change that does not come.
        t.add(DEV_A, &reply(150));
        t.end_trace(|_| None);
        let a = &t.filesystems[&FsKey::Dev(DEV_A)];
        assert_eq!((a.by_stats, a.by_flags, a.unclassified), (0, 0, 2));
        assert_eq!(a.per_glock[&GlockId::new(2, 7)].all.distribution().count, 2);
        // Events other than replies and state changes make no set.
        t.add(
            DEV_B,
            &Gfs2Event::GlockPut {
                glock: GlockId::new(2, 7),
                state: glockparse::DlmMode::NL,
                flags: Default::default(),
            },
        );
        t.end_trace(|_| None);
        assert_eq!(t.filesystems.len(), 1);
    }

    /// Two nodes' traces of one filesystem on other devices fold into one set by its lock
    /// table; one device number of two nodes' other filesystems stays two.
    #[test]
    fn traces_fold_by_lock_table_not_device() {
        let mut t = ByFilesystem::default();
        let node = |tables: &'static [(Dev, &'static str)]| {
            move |d: Dev| {
                tables
                    .iter()
                    .find(|(x, _)| *x == d)
                    .map(|(_, t)| t.to_string())
            }
        };
        t.add(DEV_A, &reply(100));
        t.add(DEV_B, &reply(100));
        t.end_trace(node(&[(DEV_A, "lab:gfs"), (DEV_B, "lab:data")]));
        t.add(DEV_B, &reply(100));
        t.add(DEV_A, &reply(100));
        t.end_trace(node(&[(DEV_B, "lab:gfs"), (DEV_A, "lab:other")]));
        let keys: Vec<String> = t.filesystems.keys().map(ToString::to_string).collect();
        assert_eq!(keys, ["lab:data", "lab:gfs", "lab:other"]);
        let count = |k: &str| t.filesystems[&FsKey::Table(k.into())].unclassified;
        assert_eq!(
            (count("lab:gfs"), count("lab:data"), count("lab:other")),
            (2, 1, 1)
        );
    }
}
