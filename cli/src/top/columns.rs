//! The words the views give each shown glock beyond its record, and the columns of the
//! glocks table, shared by the text output and the console.

use analysis::refresh::verdict::{process_pid, AgeSource, Verdict};
use analysis::refresh::{Shown, Snapshot};
use clikit::fmt;
use glockparse::{Glock, Holder};

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
    process_pid(h).map_or_else(|| "-".to_string(), |p| p.to_string())
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
            Field::Blocker => v.blocker.to_string(),
            Field::Dlm if s.facts.dlm_per_s > 0.0 => format!("{:.1}", s.facts.dlm_per_s),
            Field::Dlm => "-".into(),
            Field::Rtt if s.facts.srttb_ns > 0 => fmt::nanos(s.facts.srttb_ns),
            Field::Rtt => "-".into(),
            Field::Flags if g.flags.is_empty() => "-".into(),
            Field::Flags => g.flags.to_string(),
            Field::Refs => g.refs.to_string(),
            Field::Holder => g
                .holders
                .first()
                .map_or("-".into(), |h| format!("{} {}", h.pid, h.comm)),
            Field::Source => super::label(snap, s.input),
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

/// A holder on another node that the waiters wait for, in words:
/// `held on n1 (node 1) by pid 243: EX (none) __do_sys_flock+0x11c/0x1e0 f:EH`.
pub fn held_there(
    snap: &analysis::refresh::Snapshot,
    t: &analysis::refresh::verdict::HolderThere,
) -> String {
    let node = node_name(snap, t.input);
    let id = t.nodeid.map_or(String::new(), |n| format!(" (node {n})"));
    let pid = t.pid.map_or("-".to_string(), |p| p.to_string());
    let h = &t.holder;
    format!(
        "held on {node}{id} by pid {pid}: {} {} {} f:{}",
        h.state.as_str(),
        t.comm.as_deref().unwrap_or(&h.comm),
        &*h.caller,
        h.flags
    )
}

/// The node of input `i`: its directory's name (a capture's or cluster mode's `NODE/`).
pub fn node_name(snap: &analysis::refresh::Snapshot, i: usize) -> String {
    snap.inputs[i]
        .path
        .parent()
        .and_then(|d| d.file_name())
        .map_or_else(
            || super::label(snap, i),
            |d| d.to_string_lossy().into_owned(),
        )
}

/// The same glock as `s` on every other node of its filesystem among the inputs: shown
/// there, or held there with a demote asked ([`FileSnapshot::asked`]); None when
/// neither (nothing waits there and no node asked it to demote).
///
/// [`FileSnapshot::asked`]: analysis::refresh::rank::FileSnapshot::asked
pub fn on_other_nodes<'a>(
    snap: &'a analysis::refresh::Snapshot,
    s: &analysis::refresh::Shown,
) -> Vec<(usize, Option<&'a glockparse::Glock>)> {
    snap.ctx
        .peers(s.input)
        .map(|(j, _)| {
            let shown = snap
                .shown
                .iter()
                .find(|o| o.input == j && o.glock.id == s.glock.id)
                .map(|o| &o.glock);
            let asked = || {
                let a = &snap.files.get(j)?.asked;
                a.binary_search_by_key(&s.glock.id, |g| g.id)
                    .ok()
                    .map(|k| &a[k])
            };
            (j, shown.or_else(asked))
        })
        .collect()
}
