//! What the views say about each shown glock beyond its record: how long its waiters
//! have waited and whether that is stuck, who holds the glock (here or on which node),
//! and the table's columns, shared by the text output and the console.

use std::collections::HashMap;

use clikit::fmt;
use glockparse::{Glock, Holder};

use super::context::RequestWait;
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

/// The judgement on one shown glock.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The longest wait known, µs (0 when nothing waits or no age is known yet).
    pub wait_us: u64,
    pub source: Option<AgeSource>,
    /// Waiters known to have waited longer than `--stuck-after`.
    pub stuck: bool,
    /// The glock's DLM request, when it waits in the DLM.
    pub dlm: Option<RequestWait>,
    /// Who the waiters wait for, in words: `node 1 pid 866 EX`, `here pid 12 dd`, ...
    pub blocker: String,
}

/// Judges every shown glock of `snap`.
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
            blocker: "-".into(),
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
    let blocker = match &dlm {
        Some(d) => dlm_blocker(d),
        None => local_blocker(g),
    };
    Verdict {
        wait_us,
        source,
        stuck: source.is_some() && analysis::stuck::is_stuck(wait_us as f64 / 1e6, stuck_after),
        dlm,
        blocker,
    }
}

/// Who a request waiting in the DLM waits for.
fn dlm_blocker(d: &RequestWait) -> String {
    if !d.blockers.is_empty() {
        return d
            .blockers
            .iter()
            .map(|b| {
                let node = b.owner.map_or("node ?".into(), |n| format!("node {n}"));
                format!("{node} pid {} {}", b.pid, b.grmode)
            })
            .collect::<Vec<_>>()
            .join(", ");
    }
    match d.master {
        // The holder is known only to the master, whose dump is not among the inputs.
        Some(m) if !d.master_seen => format!("node {m} (master)"),
        Some(m) => format!("DLM queue on node {m}"),
        None => "DLM queue here".into(),
    }
}

/// The inode or resource group behind a glock, in words, for the text view and the
/// console's detail pane alike.
pub fn objects(g: &Glock) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(i) = &g.inode {
        out.push(format!(
            "inode {} ({}, {} bytes{})",
            i.addr,
            i.file_type(),
            i.size,
            i.nrpages
                .map(|p| format!(", {p} pages cached"))
                .unwrap_or_default()
        ));
    }
    if let Some(r) = &g.rgrp {
        out.push(format!(
            "rgrp {} ({} free blocks, {} dinodes, {} reservations)",
            r.addr,
            r.free,
            r.dinodes,
            r.reservations.len()
        ));
    }
    out
}

/// A holder's part in words: `waiting`, `holds` or `queued`.
pub fn role(h: &Holder) -> &'static str {
    if h.is_waiting() {
        "waiting"
    } else if h.is_granted() {
        "holds"
    } else {
        "queued"
    }
}

/// A holder's pid as shown: `-` when it names no process (GL_NOPID, -1).
pub fn pid(h: &Holder) -> String {
    if h.pid_meaningless() && h.pid <= 0 {
        "-".to_string()
    } else {
        h.pid.to_string()
    }
}

/// Who a waiter whose glock does not wait in the DLM waits for: a holder here, or the
/// glock's own state change.
fn local_blocker(g: &Glock) -> String {
    if let Some(h) = g.granted().next() {
        return format!("here pid {} {}", pid(h), h.comm);
    }
    if g.demote_requested() {
        return format!("here: demote to {}", g.demote_state.as_str());
    }
    if g.flags.locked() {
        return format!("here: state change to {}", g.target.as_str());
    }
    "here".into()
}

/// A column of the glocks table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Field {
    /// The glock id (`TYPE/hexnum`).
    Glock,
    /// The glock type's name.
    Type,
    /// The granted state, and the target when a change is under way (`UN>EX`).
    State,
    /// The demote requested: the state and for how long.
    Demote,
    /// Granted holders.
    Held,
    /// Waiting holders.
    Wait,
    /// The longest known wait (STUCK past --stuck-after).
    Age,
    /// Who the waiters wait for: a node and pid, or a holder here.
    Blocker,
    /// DLM requests per second since the last refresh (glstats).
    Dlm,
    /// The smoothed blocking DLM round trip (glstats srttb).
    Rtt,
    /// Glock flags.
    Flags,
    /// Reference count.
    Refs,
    /// The first holder: pid and comm.
    Holder,
    /// The file the glock comes from.
    Source,
}

impl Field {
    /// The columns shown when `--fields` is not given.
    pub const DEFAULT: [Field; 11] = [
        Field::Glock,
        Field::Type,
        Field::State,
        Field::Demote,
        Field::Held,
        Field::Wait,
        Field::Age,
        Field::Blocker,
        Field::Dlm,
        Field::Rtt,
        Field::Flags,
    ];

    /// `fields`, or the default columns when empty.
    pub fn chosen(fields: &[Field]) -> Vec<Field> {
        if fields.is_empty() {
            Field::DEFAULT.to_vec()
        } else {
            fields.to_vec()
        }
    }

    /// The column's heading.
    pub fn title(self) -> &'static str {
        match self {
            Field::Glock => "GLOCK",
            Field::Type => "TYPE",
            Field::State => "STATE",
            Field::Demote => "DEMOTE",
            Field::Held => "HELD",
            Field::Wait => "WAIT",
            Field::Age => "AGE",
            Field::Blocker => "WAITS FOR",
            Field::Dlm => "DLM/s",
            Field::Rtt => "RTTB",
            Field::Flags => "FLAGS",
            Field::Refs => "REFS",
            Field::Holder => "HOLDER",
            Field::Source => "SOURCE",
        }
    }

    /// The column's width in characters (the last column may run longer).
    pub fn width(self) -> usize {
        match self {
            Field::Glock => 18,
            Field::Type => 7,
            Field::State => 6,
            Field::Demote => 12,
            Field::Held | Field::Wait => 4,
            Field::Age => 17,
            Field::Blocker => 24,
            Field::Dlm => 7,
            Field::Rtt => 8,
            Field::Flags => 10,
            Field::Refs => 5,
            Field::Holder => 22,
            Field::Source => 16,
        }
    }

    /// Numbers are right-aligned.
    pub fn right(self) -> bool {
        matches!(
            self,
            Field::Held | Field::Wait | Field::Dlm | Field::Rtt | Field::Refs
        )
    }

    /// The cell of this column for one shown glock.
    pub fn cell(self, snap: &Snapshot, s: &Shown, v: &Verdict) -> String {
        let g = &s.glock;
        match self {
            Field::Glock => g.id.to_string(),
            Field::Type => g.glock_type().name().into_owned(),
            Field::State if g.target != g.state => {
                format!("{}>{}", g.state.as_str(), g.target.as_str())
            }
            Field::State => g.state.as_str().to_string(),
            Field::Demote if g.demote_us > 0 => {
                format!("{} {}", g.demote_state.as_str(), fmt::micros(g.demote_us))
            }
            Field::Demote if g.demote_requested() => format!("{} now", g.demote_state.as_str()),
            Field::Demote => "-".into(),
            Field::Held => g.granted_count().to_string(),
            Field::Wait => g.waiter_count().to_string(),
            Field::Age => age(v),
            Field::Blocker => v.blocker.clone(),
            Field::Dlm if s.facts.dlm_per_s > 0.0 => format!("{:.1}", s.facts.dlm_per_s),
            Field::Dlm => "-".into(),
            Field::Rtt if s.facts.srttb_ns > 0 => fmt::nanos(s.facts.srttb_ns),
            Field::Rtt => "-".into(),
            Field::Flags if g.flags.0.is_empty() => "-".into(),
            Field::Flags => g.flags.to_string(),
            Field::Refs => g.refs.to_string(),
            Field::Holder => g
                .holders
                .first()
                .map_or("-".into(), |h| format!("{} {}", h.pid, h.comm)),
            Field::Source => snap.label(s.input),
        }
    }
}

/// The AGE cell: `12.7s dlm`, `STUCK 75s seen`, or `-`.
pub fn age(v: &Verdict) -> String {
    let Some(src) = v.source else {
        return "-".into();
    };
    let src = match src {
        AgeSource::Dlm => "dlm",
        AgeSource::Seen => "seen",
    };
    let t = fmt::micros(v.wait_us);
    if v.stuck {
        format!("STUCK {t} {src}")
    } else {
        format!("{t} {src}")
    }
}

/// Pads or cuts `s` to `w` characters.
pub fn fit(s: &str, w: usize, right: bool) -> String {
    let n = s.chars().count();
    if n > w {
        let mut t: String = s.chars().take(w.saturating_sub(1)).collect();
        t.push('~');
        t
    } else if right {
        format!("{s:>w$}")
    } else {
        format!("{s:<w$}")
    }
}
