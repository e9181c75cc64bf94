//! `glk trace --summary`: counts per event type and per glock.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

use glockparse::GlockId;
use traceparse::{Decoded, DlmEvent, Gfs2Event, DLM_EVENTS, GFS2_EVENTS};

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
    pub per_glock: HashMap<GlockId, GlockCounts, foldhash::fast::RandomState>,
    pub lost_reported: u64,
}

impl Summary {
    pub fn add(&mut self, d: &Decoded<'_>) {
        match d {
            Decoded::Gfs2 { event, .. } => {
                self.per_gfs2[event.index()] += 1;
                let Some(g) = event.glock() else { return };
                let c = self.per_glock.entry(g).or_default();
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
                let c = self.per_glock.entry(g).or_default();
                c.events += 1;
                if let DlmEvent::Bast { .. } = event {
                    c.bast += 1;
                }
            }
            Decoded::Undecoded(l) => {
                self.count_other(format!("{} (undecoded)", String::from_utf8_lossy(l.event)))
            }
            Decoded::Other(l) => {
                let name = String::from_utf8_lossy(l.event);
                match self.per_other.get_mut(name.as_ref()) {
                    Some(n) => *n += 1,
                    None => self.count_other(name.into_owned()),
                }
            }
            Decoded::Lost { events, .. } => self.lost_reported += events,
            Decoded::Header => {}
        }
    }

    /// Adds the counts of another part of the same trace (lines decoded elsewhere).
    pub fn merge(&mut self, o: Summary) {
        for (a, b) in self.per_gfs2.iter_mut().zip(o.per_gfs2) {
            *a += b;
        }
        for (a, b) in self.per_dlm.iter_mut().zip(o.per_dlm) {
            *a += b;
        }
        for (name, n) in o.per_other {
            *self.per_other.entry(name).or_default() += n;
        }
        for (g, c) in &o.per_glock {
            self.per_glock.entry(*g).or_default().merge(c);
        }
        self.lost_reported += o.lost_reported;
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

    /// Glocks by number of events, most first (ties by id).
    pub fn top_glocks(&self, n: usize) -> Vec<(GlockId, &GlockCounts)> {
        let mut v: Vec<(GlockId, &GlockCounts)> =
            self.per_glock.iter().map(|(g, c)| (*g, c)).collect();
        v.sort_by(|a, b| b.1.events.cmp(&a.1.events).then(a.0.cmp(&b.0)));
        v.truncate(n);
        v
    }

    pub fn write_text(&self, out: &mut impl Write, top: usize) -> io::Result<()> {
        writeln!(out, "{:<28} {:>10}", "EVENT", "COUNT")?;
        for (e, n) in &self.per_event() {
            writeln!(out, "{e:<28} {n:>10}")?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "{:<18} {:<7} {:>8} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7} {:>5} {:>6}",
            "GLOCK",
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
        for (g, c) in self.top_glocks(top) {
            writeln!(
                out,
                "{:<18} {:<7} {:>8} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7} {:>5} {:>6}",
                g.to_string(),
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
        if self.per_glock.len() > top {
            writeln!(out, "({} glocks in all)", self.per_glock.len())?;
        }
        Ok(())
    }
}
