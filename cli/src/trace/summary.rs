//! `glk trace --summary`: counts per event type and per glock.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

use glockparse::GlockId;
use traceparse::{Decoded, Dev, DlmEvent, Gfs2Event, DLM_EVENTS, GFS2_EVENTS};

/// The filesystem a glock's events are of, as they name it: gfs2 events by its device,
/// dlm events by its lockspace; or, once [`Summary::name`] knows them, by its lock table.
/// Glock numbers repeat between filesystems (each has its own root inode `2/…`), so a
/// glock is counted per filesystem. One word, as the per-event glock key is compared and
/// hashed on every event: a device is `major << 32 | minor` (majors have 12 bits), a
/// lockspace has the top bit set, and the next for an id; a named filesystem has only
/// the next, and its index in [`Summary`]'s tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Space(u64);

/// [`Space`]'s bit of a lockspace.
const LOCKSPACE: u64 = 1 << 63;
/// [`Space`]'s bit of a lockspace with an id, and without [`LOCKSPACE`], of a filesystem
/// named by its lock table.
const WITH_ID: u64 = 1 << 62;

impl Space {
    /// A gfs2 event's device.
    fn dev(d: Dev) -> Space {
        Space(u64::from(d.major & 0x3fff_ffff) << 32 | u64::from(d.minor))
    }

    /// A dlm event's lockspace id (`ls_id`; None for an event that names none).
    fn lockspace(id: Option<u32>) -> Space {
        Space(LOCKSPACE | id.map_or(0, |id| WITH_ID | u64::from(id)))
    }

    /// The filesystem of lock table `i` of the summary's tables.
    fn named(i: usize) -> Space {
        Space(WITH_ID | i as u64)
    }

    /// Whether it is a device.
    fn is_dev(self) -> bool {
        self.0 & (LOCKSPACE | WITH_ID) == 0
    }

    /// Its lock table's index, when it is a named filesystem.
    fn table(self) -> Option<usize> {
        (self.0 & (LOCKSPACE | WITH_ID) == WITH_ID).then_some((self.0 & 0xffff_ffff) as usize)
    }
}

impl std::fmt::Display for Space {
    /// `254,1` as gfs2 events print a device, `ls_id=N` as dlm events print a lockspace
    /// (a named filesystem's lock table is the summary's: [`Summary::label`]).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.0 & LOCKSPACE != 0, self.0 & WITH_ID != 0) {
            (false, false) => write!(f, "{},{}", self.0 >> 32, self.0 & 0xffff_ffff),
            (true, true) => write!(f, "ls_id={}", self.0 & 0xffff_ffff),
            (true, false) => f.write_str("-"),
            (false, true) => write!(f, "table #{}", self.0 & 0xffff_ffff),
        }
    }
}

/// One glock of one filesystem.
type Key = (Space, GlockId);

/// Per-glock counts of the locking events.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct GlockCounts {
    /// Every gfs2 and dlm event naming the glock.
    pub events: u64,
    pub queue: u64,
    pub dequeue: u64,
    pub promote: u64,
    pub state_change: u64,
    pub demote_remote: u64,
    pub demote_local: u64,
    pub lock_time: u64,
    pub put: u64,
    /// DLM blocking ASTs (`dlm_bast`: another node wanted the lock).
    pub bast: u64,
}

impl GlockCounts {
    fn merge(&mut self, o: &GlockCounts) {
        self.events += o.events;
        self.queue += o.queue;
        self.dequeue += o.dequeue;
        self.promote += o.promote;
        self.state_change += o.state_change;
        self.demote_remote += o.demote_remote;
        self.demote_local += o.demote_local;
        self.lock_time += o.lock_time;
        self.put += o.put;
        self.bast += o.bast;
    }
}

#[derive(Debug, Default)]
pub struct Summary {
    /// gfs2 events by their index in [`GFS2_EVENTS`].
    per_gfs2: [u64; GFS2_EVENTS.len()],
    /// dlm events by their index in [`DLM_EVENTS`].
    per_dlm: [u64; DLM_EVENTS.len()],
    /// Other events (and undecodable gfs2 bodies) by name.
    per_other: BTreeMap<String, u64>,
    per_glock: HashMap<Key, GlockCounts, foldhash::fast::RandomState>,
    /// Counts of the glock of the latest events, not yet in `per_glock`: three events in
    /// four name the glock of the event before (queue, promote, dequeue...), which then
    /// costs no hash lookup.
    run: Option<(Key, GlockCounts)>,
    /// The lock tables of the named filesystems ([`Summary::name`]), by [`Space::named`]
    /// index.
    tables: Vec<String>,
}

impl Summary {
    pub fn add(&mut self, d: &Decoded<'_>) {
        match d {
            Decoded::Gfs2 { event, dev, .. } => {
                self.per_gfs2[event.index()] += 1;
                let Some(g) = event.glock() else { return };
                let c = self.counts((Space::dev(*dev), g));
                c.events += 1;
                match event {
                    Gfs2Event::GlockQueue { queue: true, .. } => c.queue += 1,
                    Gfs2Event::GlockQueue { queue: false, .. } => c.dequeue += 1,
                    Gfs2Event::Promote { .. } => c.promote += 1,
                    Gfs2Event::GlockStateChange { .. } => c.state_change += 1,
                    Gfs2Event::DemoteRq {
                        remote: Some(true), ..
                    } => c.demote_remote += 1,
                    Gfs2Event::DemoteRq { .. } => c.demote_local += 1,
                    Gfs2Event::GlockLockTime(_) => c.lock_time += 1,
                    Gfs2Event::GlockPut { .. } => c.put += 1,
                    _ => {}
                }
            }
            Decoded::Dlm { event, .. } => {
                self.per_dlm[event.index()] += 1;
                let Some(g) = event.glock() else { return };
                let c = self.counts((Space::lockspace(event.ls_id()), g));
                c.events += 1;
                if let DlmEvent::Bast { .. } = event {
                    c.bast += 1;
                }
            }
            Decoded::Undecoded(l) => self.count_other(format!("{} (undecoded)", l.event_name())),
            Decoded::Other(l) => {
                let name = l.event_name();
                match self.per_other.get_mut(name.as_ref()) {
                    Some(n) => *n += 1,
                    None => self.count_other(name.into_owned()),
                }
            }
            Decoded::Lost { .. } | Decoded::Header => {}
        }
    }

    /// The counts of glock `k`, which becomes the glock of the run.
    #[inline]
    fn counts(&mut self, k: Key) -> &mut GlockCounts {
        if self.run.as_ref().is_none_or(|(id, _)| *id != k) {
            self.settle();
            self.run = Some((k, GlockCounts::default()));
        }
        let (_, c) = self.run.as_mut().expect("the run was just set");
        c
    }

    /// Moves the run's counts into the per-glock map.
    pub fn settle(&mut self) {
        if let Some((g, c)) = self.run.take() {
            self.per_glock.entry(g).or_default().merge(&c);
        }
    }

    /// Counts each glock of a filesystem in `fss` under the filesystem's lock table
    /// instead of the device and lockspace its events name: a glock's gfs2 and dlm events
    /// become one count. `fss` are the filesystems of the node that wrote the trace (device
    /// numbers are a node's own). A filesystem whose device is not known is not named:
    /// naming its dlm events alone would show one filesystem's glock as two.
    pub fn name(&mut self, fss: &[bundle::filesystems::NamedFs]) {
        self.settle();
        let mut to: HashMap<Space, Space> = HashMap::new();
        for f in fss {
            let Some((major, minor)) = f.ids.dev else {
                continue;
            };
            let named = self.table_space(&f.table);
            to.insert(Space::dev(Dev { major, minor }), named);
            if let Some(id) = f.ids.ls_id {
                to.insert(Space::lockspace(Some(id)), named);
            }
        }
        if to.is_empty() {
            return;
        }
        for ((s, g), c) in std::mem::take(&mut self.per_glock) {
            let s = to.get(&s).copied().unwrap_or(s);
            self.per_glock.entry((s, g)).or_default().merge(&c);
        }
    }

    /// The [`Space`] of the filesystem of lock table `table`.
    fn table_space(&mut self, table: &str) -> Space {
        let i = match self.tables.iter().position(|t| t == table) {
            Some(i) => i,
            None => {
                self.tables.push(table.to_string());
                self.tables.len() - 1
            }
        };
        Space::named(i)
    }

    /// How a filesystem is shown: its lock table where it is named, else as its events
    /// name it.
    pub fn label(&self, s: Space) -> String {
        match s.table() {
            Some(i) => self.tables[i].clone(),
            None => s.to_string(),
        }
    }

    /// Adds the counts of another part of the same trace (lines decoded elsewhere), or of
    /// another trace.
    pub fn merge(&mut self, mut o: Summary) {
        self.settle();
        o.settle();
        for (a, b) in self.per_gfs2.iter_mut().zip(o.per_gfs2) {
            *a += b;
        }
        for (a, b) in self.per_dlm.iter_mut().zip(o.per_dlm) {
            *a += b;
        }
        for (name, n) in o.per_other {
            *self.per_other.entry(name).or_default() += n;
        }
        for ((s, g), c) in &o.per_glock {
            let s = match s.table() {
                Some(i) => self.table_space(&o.tables[i]),
                None => *s,
            };
            self.per_glock.entry((s, *g)).or_default().merge(c);
        }
    }

    fn count_other(&mut self, name: String) {
        *self.per_other.entry(name).or_default() += 1;
    }

    /// Event counts by name, gfs2 and dlm events with their `gfs2_` / `dlm_` prefix,
    /// sorted by name.
    pub fn per_event(&self) -> BTreeMap<String, u64> {
        let mut m = self.per_other.clone();
        for (i, n) in self.per_gfs2.iter().enumerate().filter(|(_, n)| **n > 0) {
            m.insert(format!("gfs2_{}", GFS2_EVENTS[i]), *n);
        }
        for (i, n) in self.per_dlm.iter().enumerate().filter(|(_, n)| **n > 0) {
            m.insert(format!("dlm_{}", DLM_EVENTS[i]), *n);
        }
        m
    }

    /// The glocks counted, the most events first (ties by id, then filesystem), each with
    /// its filesystem, and whether the trace holds several: where it holds one filesystem
    /// (as a trace mostly does: one named, or one device and one lockspace), a glock's gfs2
    /// and dlm events are one row with no filesystem named. Call [`Summary::settle`] first.
    pub fn glocks(&self) -> (Vec<(Option<Space>, GlockId, GlockCounts)>, bool) {
        let (mut v, several) = self.rows();
        v.sort_by(|a, b| {
            (b.2.events.cmp(&a.2.events))
                .then(a.1.cmp(&b.1))
                .then(a.0.cmp(&b.0))
        });
        (v, several)
    }

    /// [`Summary::glocks`], unsorted.
    fn rows(&self) -> (Vec<(Option<Space>, GlockId, GlockCounts)>, bool) {
        let mut spaces: Vec<Space> = self.per_glock.keys().map(|(s, _)| *s).collect();
        spaces.sort_unstable();
        spaces.dedup();
        let named = spaces.iter().filter(|s| s.table().is_some()).count();
        let devs = spaces.iter().filter(|s| s.is_dev()).count();
        let several = named + devs.max(spaces.len() - devs - named) > 1;
        if several {
            let rows = self.per_glock.iter();
            return (
                rows.map(|((s, g), c)| (Some(*s), *g, c.clone())).collect(),
                true,
            );
        }
        let mut one: HashMap<GlockId, GlockCounts> = HashMap::new();
        for ((_, g), c) in &self.per_glock {
            one.entry(*g).or_default().merge(c);
        }
        (one.into_iter().map(|(g, c)| (None, g, c)).collect(), false)
    }

    /// The summary as text (call [`Summary::settle`] first).
    pub fn write_text(&self, out: &mut impl Write, top: usize) -> io::Result<()> {
        writeln!(out, "{:<28} {:>10}", "EVENT", "COUNT")?;
        for (e, n) in &self.per_event() {
            writeln!(out, "{e:<28} {n:>10}")?;
        }
        writeln!(out)?;
        let (rows, several) = self.glocks();
        let shown = &rows[..rows.len().min(top)];
        let labels: Vec<Option<String>> =
            shown.iter().map(|r| r.0.map(|s| self.label(s))).collect();
        let width = labels
            .iter()
            .flatten()
            .map(String::len)
            .max()
            .unwrap_or(0)
            .max(17);
        let fs = |s: Option<&str>| s.map_or_else(String::new, |s| format!("{s:<width$} "));
        if several {
            let named = rows.iter().filter_map(|r| r.0).any(|s| s.table().is_some());
            let unnamed = rows.iter().filter_map(|r| r.0).any(|s| s.table().is_none());
            let fs_is = match (named, unnamed) {
                (false, _) => {
                    ", as its events name it (FS: gfs2 events by device, dlm events by \
                     lockspace)"
                }
                (true, false) => {
                    " (FS: its lock table, as the capture or sysfs names the devices and \
                     lockspaces of the events)"
                }
                (true, true) => {
                    " (FS: its lock table where the capture or sysfs names it, else as its \
                     events name it: gfs2 events by device, dlm events by lockspace)"
                }
            };
            writeln!(
                out,
                "Several filesystems: each glock is counted per filesystem{fs_is}"
            )?;
        }
        writeln!(
            out,
            "{:<18} {}{:<7} {:>8} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7} {:>5} {:>6}",
            "GLOCK",
            fs(several.then_some("FS")),
            "TYPE",
            "EVENTS",
            "QUEUE",
            "DEQUEUE",
            "PROMOTE",
            "CHANGES",
            "DEM-RMT",
            "DEM-LOC",
            "DLM",
            "PUT",
            "BAST"
        )?;
        for ((_, g, c), label) in shown.iter().zip(&labels) {
            writeln!(
                out,
                "{:<18} {}{:<7} {:>8} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7} {:>5} {:>6}",
                g.to_string(),
                fs(label.as_deref()),
                g.glock_type().name(),
                c.events,
                c.queue,
                c.dequeue,
                c.promote,
                c.state_change,
                c.demote_remote,
                c.demote_local,
                c.lock_time,
                c.put,
                c.bast
            )?;
        }
        if rows.len() > top {
            writeln!(out, "({} glocks in all)", rows.len())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-glock counts, kept in runs and merged from two halves, are those of a plain
    /// count of every decoded line.
    #[test]
    fn runs_and_merges_count_every_glock_event() {
        let text = testdata::text("real/handoff-6.12/n2/trace_pipe.txt.xz");
        let lines: Vec<&[u8]> = text.as_bytes().split(|&b| b == b'\n').collect();
        let mut want: HashMap<GlockId, (u64, u64)> = HashMap::new();
        let (mut a, mut b) = (Summary::default(), Summary::default());
        for (i, l) in lines.iter().enumerate() {
            let Ok(d) = traceparse::decode_line(l) else {
                continue;
            };
            let glock = match &d {
                Decoded::Gfs2 { event, .. } => event.glock(),
                Decoded::Dlm { event, .. } => event.glock(),
                _ => None,
            };
            if let Some(g) = glock {
                let w = want.entry(g).or_default();
                w.0 += 1;
                w.1 += u64::from(matches!(
                    d,
                    Decoded::Dlm {
                        event: DlmEvent::Bast { .. },
                        ..
                    }
                ));
            }
            if i < lines.len() / 2 { &mut a } else { &mut b }.add(&d);
        }
        assert!(want.len() > 10, "{}", want.len());
        a.merge(b);
        a.settle();
        let (rows, several) = a.glocks();
        assert!(!several);
        let got: HashMap<GlockId, (u64, u64)> = rows
            .iter()
            .map(|(s, g, c)| {
                assert_eq!(*s, None);
                (*g, (c.events, c.bast))
            })
            .collect();
        assert_eq!(got, want);
        let busiest = want.values().map(|w| w.0).max().unwrap();
        assert_eq!(rows[0].2.events, busiest);
    }

    /// Halves of a trace named apart, their tables in other orders, merge into the counts
    /// of the whole trace named at once; a filesystem not named keeps its device.
    #[test]
    fn named_halves_merge_by_lock_table() {
        use bundle::filesystems::{FsIds, NamedFs};
        let text = testdata::text("real/two-filesystems-6.12/n1/lab_data/n1/trace_pipe.txt.xz");
        let named = |table: &str, dev, ls_id| NamedFs {
            table: table.into(),
            ids: FsIds {
                dev: Some(dev),
                ls_id: Some(ls_id),
            },
        };
        let gfs = named("lab:gfs", (254, 1), 0x3df8_322a);
        let data = named("lab:data", (254, 2), 0xaa5a_d063);
        let lines: Vec<&str> = text.lines().collect();
        let summarise = |lines: &[&str], fss: &[NamedFs]| {
            let mut s = Summary::default();
            for l in lines {
                if let Ok(d) = traceparse::decode_line(l.as_bytes()) {
                    s.add(&d);
                }
            }
            s.name(fss);
            s
        };
        let labelled = |s: &Summary| -> BTreeMap<(String, GlockId), (u64, u64)> {
            let (rows, several) = s.glocks();
            assert!(several);
            rows.iter()
                .map(|(sp, g, c)| ((s.label(sp.unwrap()), *g), (c.events, c.bast)))
                .collect()
        };
        let whole = summarise(&lines, &[gfs.clone(), data.clone()]);
        let (a, b) = lines.split_at(lines.len() / 2);
        let mut halves = summarise(a, &[gfs.clone(), data.clone()]);
        halves.merge(summarise(b, &[data.clone(), gfs.clone()]));
        halves.settle();
        let want = labelled(&whole);
        assert_eq!(labelled(&halves), want);
        let hot = GlockId::new(2, 0x1231);
        assert_eq!(want[&("lab:gfs".to_string(), hot)].1, 48);
        assert_eq!(want[&("lab:data".to_string(), hot)].1, 46);
        // lab:data not named: its gfs2 and dlm events stay apart.
        let one = labelled(&summarise(&lines, std::slice::from_ref(&gfs)));
        let spaces: Vec<&str> = one
            .keys()
            .filter(|(_, g)| *g == hot)
            .map(|(l, _)| l.as_str())
            .collect();
        assert_eq!(spaces, ["254,2", "lab:gfs", "ls_id=2858078307"]);
    }

    /// A filesystem whose device is not known (a capture without its mount table) is not
    /// named: its one device and one lockspace stay one filesystem, as unnamed.
    #[test]
    fn a_filesystem_without_its_device_is_not_named() {
        use bundle::filesystems::{FsIds, NamedFs};
        let text = testdata::text("real/handoff-6.12/n1/trace_pipe.txt.xz");
        let summarise = |fss: &[NamedFs]| {
            let mut s = Summary::default();
            for l in text.lines() {
                if let Ok(d) = traceparse::decode_line(l.as_bytes()) {
                    s.add(&d);
                }
            }
            s.name(fss);
            let (rows, several) = s.glocks();
            let rows: Vec<(Option<Space>, GlockId, u64)> =
                rows.into_iter().map(|(f, g, c)| (f, g, c.events)).collect();
            (rows, several)
        };
        let without_dev = NamedFs {
            table: "lab:gfs".into(),
            ids: FsIds {
                dev: None,
                ls_id: Some(0x3df8_322a),
            },
        };
        let unnamed = summarise(&[]);
        assert!(!unnamed.1 && unnamed.0.len() > 10);
        assert_eq!(summarise(&[without_dev]), unnamed);
    }
}
