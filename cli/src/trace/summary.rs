//! `glk trace --summary`: counts per event type and per glock.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

use glockparse::GlockId;
use tracepipe::{Decoded, Gfs2Event};

/// Per-glock counts of the locking events.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct GlockCounts {
    pub events: u64,
    pub queue: u64,
    pub dequeue: u64,
    pub promote: u64,
    pub state_change: u64,
    pub demote_remote: u64,
    pub demote_local: u64,
    pub lock_time: u64,
    pub put: u64,
}

#[derive(Debug, Default)]
pub struct Summary {
    pub per_event: BTreeMap<String, u64>,
    pub per_glock: HashMap<GlockId, GlockCounts>,
    pub lost_reported: u64,
}

impl Summary {
    pub fn add(&mut self, d: &Decoded<'_>) {
        match d {
            Decoded::Gfs2 { event, .. } => {
                *self
                    .per_event
                    .entry(format!("gfs2_{}", event.name()))
                    .or_default() += 1;
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
            Decoded::Undecoded(l) => {
                *self
                    .per_event
                    .entry(format!("{} (undecoded)", String::from_utf8_lossy(l.event)))
                    .or_default() += 1;
            }
            Decoded::Other(l) => {
                *self
                    .per_event
                    .entry(String::from_utf8_lossy(l.event).into_owned())
                    .or_default() += 1;
            }
            Decoded::Lost { events, .. } => self.lost_reported += events,
            Decoded::Header => {}
        }
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
        for (e, n) in &self.per_event {
            writeln!(out, "{e:<28} {n:>10}")?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "{:<18} {:<7} {:>8} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7} {:>5}",
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
            "PUT"
        )?;
        for (g, c) in self.top_glocks(top) {
            writeln!(
                out,
                "{:<18} {:<7} {:>8} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7} {:>5}",
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
                c.put
            )?;
        }
        if self.per_glock.len() > top {
            writeln!(out, "({} glocks in all)", self.per_glock.len())?;
        }
        Ok(())
    }
}
